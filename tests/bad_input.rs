//! Bad input and the edges of what is representable: invalid rays (each with its own error,
//! and alone in a batch), chunks beyond the i128 world, huge offsets, degenerate boxes and
//! cameras, all without a panic.

use voxcast_testkit::common;

use common::{describe, random_solids, ray, world_with};
use voxcast::glam::Vec3;
use voxcast::{
    ChunkPos, LineOfSight, LineOfSightOptions, MAX_DISTANCE_CAP, RayError, RaycastOptions,
    RaycastOutcome, VoxelId, VoxelRay, VoxelTraversal, VoxelWorld, WorldPos, line_of_sight,
    line_of_sight_batch, raycast_batch, voxel_raycast, voxel_raycast_with,
};
use voxcast_testkit::scene::SplitMix64;

const STONE: VoxelId = VoxelId(1);
const GLASS: VoxelId = VoxelId(7);

#[test]
fn batch_with_one_invalid_ray() {
    let solids = random_solids(0xBA7C, WorldPos::new(-8, -8, -8), 16, 0.1, 3);
    let world = world_with(&solids);
    let mut rng = SplitMix64::new(7);
    let mut rays: Vec<VoxelRay> = (0..2000)
        .map(|_| {
            let o = WorldPos::new(
                rng.below(16) as i128 - 8,
                rng.below(16) as i128 - 8,
                rng.below(16) as i128 - 8,
            );
            ray(
                o,
                Vec3::new(rng.next_f32(), rng.next_f32(), rng.next_f32()),
                rng.unit_vector(),
                30.0,
            )
        })
        .collect();
    let bad_at = 1234;
    rays[bad_at].direction = Vec3::new(f32::NAN, 0.0, 1.0);
    let o = RaycastOptions::default();
    let out = raycast_batch(&rays, &world, &o);
    assert_eq!(out.len(), rays.len());
    assert_eq!(out[bad_at], RaycastOutcome::Invalid(RayError::NanDirection));
    let mut hits = 0;
    for (i, (r, got)) in rays.iter().zip(&out).enumerate() {
        assert_eq!(
            *got,
            voxel_raycast_with(r, &world, &o),
            "ray {i}: {}",
            describe(r)
        );
        hits += usize::from(got.hit().is_some());
    }
    assert!(hits > 100, "{hits}");
    let los = line_of_sight_batch(&rays, &world, &LineOfSightOptions::default());
    assert_eq!(los[bad_at], LineOfSight::Invalid(RayError::NanDirection));
    for (i, (r, got)) in rays.iter().zip(&los).enumerate() {
        assert_eq!(
            *got,
            line_of_sight(r, &world, &LineOfSightOptions::default()),
            "segment {i}"
        );
    }
    // The `_into` forms refill a kept buffer: longer or shorter than the batch, the result is
    // the batch's outcomes and nothing else.
    let mut kept = vec![RaycastOutcome::Miss; rays.len() + 77];
    voxcast::raycast_batch_into(&rays, &world, &o, &mut kept);
    assert_eq!(kept, out);
    voxcast::raycast_batch_into(&rays[..100], &world, &o, &mut kept);
    assert_eq!(kept, out[..100]);
    let mut kept_los = vec![LineOfSight::Clear; 5];
    voxcast::line_of_sight_batch_into(&rays, &world, &LineOfSightOptions::default(), &mut kept_los);
    assert_eq!(kept_los, los);
}

#[test]
fn bad_input_is_rejected() {
    let o = WorldPos::ZERO;
    let s = Vec3::splat(0.5);
    let cases: Vec<(WorldPos, Vec3, Vec3, f32, RayError)> = vec![
        (o, s, Vec3::ZERO, 1.0, RayError::ZeroDirection),
        (
            o,
            s,
            Vec3::new(-0.0, 0.0, -0.0),
            1.0,
            RayError::ZeroDirection,
        ),
        (
            o,
            s,
            Vec3::new(f32::NAN, 0.0, 1.0),
            1.0,
            RayError::NanDirection,
        ),
        (
            o,
            s,
            Vec3::new(0.0, f32::NAN, 1.0),
            1.0,
            RayError::NanDirection,
        ),
        (
            o,
            s,
            Vec3::new(1.0, 0.0, f32::NAN),
            1.0,
            RayError::NanDirection,
        ),
        (
            o,
            s,
            Vec3::new(f32::INFINITY, 0.0, 1.0),
            1.0,
            RayError::InfiniteDirection,
        ),
        (
            o,
            s,
            Vec3::new(0.0, f32::NEG_INFINITY, 0.0),
            1.0,
            RayError::InfiniteDirection,
        ),
        (o, s, Vec3::X, f32::NAN, RayError::NanMaxDistance),
        (o, s, Vec3::X, -1.0, RayError::NegativeMaxDistance),
        (
            o,
            s,
            Vec3::X,
            -f32::MIN_POSITIVE,
            RayError::NegativeMaxDistance,
        ),
        (
            o,
            s,
            Vec3::X,
            f32::NEG_INFINITY,
            RayError::NegativeMaxDistance,
        ),
        (
            o,
            Vec3::new(f32::NAN, 0.0, 0.0),
            Vec3::X,
            1.0,
            RayError::NonFiniteSubOffset,
        ),
        (
            o,
            Vec3::new(0.0, f32::INFINITY, 0.0),
            Vec3::X,
            1.0,
            RayError::NonFiniteSubOffset,
        ),
        (
            o,
            Vec3::new(0.0, 0.0, f32::NEG_INFINITY),
            Vec3::X,
            1.0,
            RayError::NonFiniteSubOffset,
        ),
        (
            WorldPos::new(i128::MAX, 0, 0),
            Vec3::new(1.5, 0.0, 0.0),
            Vec3::X,
            1.0,
            RayError::OriginOutOfRange,
        ),
        (
            WorldPos::new(0, i128::MIN, 0),
            Vec3::new(0.0, -0.5, 0.0),
            Vec3::X,
            1.0,
            RayError::OriginOutOfRange,
        ),
        (
            WorldPos::new(0, 0, i128::MAX),
            Vec3::new(0.0, 0.0, 1e30),
            Vec3::X,
            1.0,
            RayError::OriginOutOfRange,
        ),
    ];
    let world = world_with(&[(WorldPos::ZERO, STONE)]);
    for (origin, sub, dir, max, err) in cases {
        assert_eq!(
            VoxelRay::new(origin, sub, dir, max),
            Err(err),
            "{origin:?} {sub:?} {dir:?} {max}"
        );
        // Filled in by hand, the same ray is answered Invalid, never cast, and walks nowhere.
        let raw = VoxelRay {
            origin,
            sub_offset: sub,
            direction: dir,
            max_distance: max,
        };
        assert_eq!(
            voxel_raycast_with(&raw, &world, &RaycastOptions::default()),
            RaycastOutcome::Invalid(err)
        );
        assert_eq!(voxel_raycast(&raw, &world), None);
        assert_eq!(VoxelTraversal::new(&raw).count(), 0);
    }
    // The edges of the accepted range are accepted.
    assert!(VoxelRay::new(o, s, Vec3::X, 0.0).is_ok());
    assert!(VoxelRay::new(o, s, Vec3::X, -0.0).is_ok());
    assert!(VoxelRay::new(o, s, Vec3::X, MAX_DISTANCE_CAP).is_ok());
    // A ray asked to look farther than the cap looks as far as the cap, on every path: a wall
    // just inside the cap is hit, one just beyond it is not.
    let mut walls = VoxelWorld::new();
    walls.set_voxel(WorldPos::new(65_535, 0, 0), VoxelId(1));
    walls.set_voxel(WorldPos::new(-65_538, 0, 0), VoxelId(1));
    for far in [
        MAX_DISTANCE_CAP.next_up(),
        1e6,
        f32::MAX.next_down(),
        f32::INFINITY,
    ] {
        let ahead = VoxelRay::new(o, Vec3::ZERO, Vec3::X, far).expect("a far ray is valid");
        let capped = VoxelRay::new(o, Vec3::ZERO, Vec3::X, MAX_DISTANCE_CAP).unwrap();
        assert_eq!(ahead, capped, "{far}");
        // As given, unchecked: the query caps it too.
        let raw = VoxelRay {
            max_distance: far,
            ..ahead
        };
        let behind = VoxelRay {
            direction: Vec3::NEG_X,
            ..raw
        };
        let opts = RaycastOptions::default();
        let got = raycast_batch(&[raw, behind], &walls, &opts);
        assert_eq!(got[0].hit().map(|h| h.distance), Some(65_535.0), "{far}");
        assert_eq!(
            got[1],
            RaycastOutcome::Miss,
            "{far}: the wall 65,537 away is past the cap"
        );
    }
    assert!(
        VoxelRay::new(
            WorldPos::new(i128::MAX, 0, 0),
            Vec3::new(0.999, 0.0, 0.0),
            Vec3::X,
            1.0
        )
        .is_ok()
    );
    // Segments.
    assert_eq!(VoxelRay::between(o, s, o, s), Err(RayError::ZeroDirection));
    assert_eq!(
        VoxelRay::between(o, s, WorldPos::new(70_000, 0, 0), s),
        Err(RayError::MaxDistanceTooLarge)
    );
    assert_eq!(
        VoxelRay::between(o, s, WorldPos::new(i128::MAX, 0, 0), s),
        Err(RayError::MaxDistanceTooLarge)
    );
    assert_eq!(
        VoxelRay::between(
            WorldPos::new(i128::MIN, 0, 0),
            s,
            WorldPos::new(i128::MAX, 0, 0),
            s
        ),
        Err(RayError::MaxDistanceTooLarge)
    );
    assert_eq!(
        VoxelRay::between(o, Vec3::new(f32::NAN, 0.0, 0.0), WorldPos::new(1, 0, 0), s),
        Err(RayError::NonFiniteSubOffset)
    );
    assert_eq!(
        VoxelRay::between(o, s, WorldPos::new(1, 0, 0), Vec3::splat(f32::INFINITY)),
        Err(RayError::NonFiniteSubOffset)
    );
}

#[test]
fn chunks_outside_the_i128_world_are_refused() {
    let mut world = world_with(&[(WorldPos::ZERO, STONE)]);
    let before = (world.loaded_bounds(), world.chunk_count());
    for pos in [
        ChunkPos::new(i128::MAX, 0, 0),
        ChunkPos::new(0, ChunkPos::MIN_INDEX - 1, 0),
        ChunkPos::new(0, 0, ChunkPos::MAX_INDEX + 1),
    ] {
        assert!(!pos.is_in_world());
        assert!(matches!(
            world.insert_chunk(pos, voxcast::Chunk::filled(STONE)),
            Err(voxcast::WorldError::ChunkOutsideWorld(p)) if p == pos
        ));
        assert!(!world.is_loaded(pos));
    }
    assert_eq!((world.loaded_bounds(), world.chunk_count()), before);
    // The extreme chunks themselves are in the world, and loading them works.
    let top = ChunkPos::new(ChunkPos::MAX_INDEX, ChunkPos::MIN_INDEX, 0);
    assert!(top.is_in_world());
    assert!(
        world
            .insert_chunk(top, voxcast::Chunk::filled(STONE))
            .is_ok()
    );
    assert_eq!(
        world.get_voxel(&WorldPos::new(i128::MAX, i128::MIN, 0)),
        Some(STONE)
    );
    // Conservative sight grows the loaded box by a chunk: clamped at the edge, no overflow.
    let r = ray(WorldPos::new(0, 5, 0), Vec3::splat(0.5), Vec3::Y, 20.0);
    let sight = line_of_sight(
        &r,
        &world,
        &LineOfSightOptions {
            conservative: true,
            ..LineOfSightOptions::default()
        },
    );
    assert_eq!(sight, LineOfSight::Clear);
}

#[test]
fn local_positions_out_of_range_wrap_instead_of_panicking() {
    let big = voxcast::LocalPos {
        x: 255,
        y: 40,
        z: 33,
    };
    let wrapped = voxcast::LocalPos::new(31, 8, 1);
    assert_eq!(big.wrapped(), wrapped);
    assert_eq!(big.index(), wrapped.index());
    for mut chunk in [voxcast::Chunk::default(), voxcast::Chunk::filled(STONE)] {
        let old = chunk.get(wrapped);
        assert_eq!(chunk.set(big, GLASS), old);
        assert_eq!(chunk.get(wrapped), GLASS);
        assert_eq!(chunk.get(big), GLASS);
    }
    let c = ChunkPos::new(-1, 2, 0);
    assert_eq!(c.world(big), c.world(wrapped));
    assert_eq!(c.world(big), WorldPos::new(-1, 72, 1));
}

#[test]
fn huge_sub_offsets_move_the_origin_exactly() {
    let two_127 = 2f32.powi(127);
    let max_whole = f32::MAX; // 2^128 - 2^104
    // From i128::MIN, f32::MAX = 2^128 - 2^104 lands exactly at 2^127 - 2^104.
    let r = VoxelRay::new(
        WorldPos::new(i128::MIN, 0, 0),
        Vec3::new(max_whole, 0.0, 0.0),
        Vec3::X,
        1.0,
    )
    .expect("in range");
    assert_eq!(r.origin.x, i128::MAX - (1i128 << 104) + 1);
    let r = VoxelRay::new(
        WorldPos::new(i128::MIN, 0, 0),
        Vec3::new(two_127, 0.0, 0.0),
        Vec3::X,
        1.0,
    )
    .expect("in range");
    assert_eq!(r.origin.x, 0);
    assert_eq!(
        VoxelRay::new(WorldPos::ZERO, Vec3::new(max_whole, 0.0, 0.0), Vec3::X, 1.0),
        Err(RayError::OriginOutOfRange)
    );
    assert_eq!(
        VoxelRay::new(
            WorldPos::ZERO,
            Vec3::new(-max_whole, 0.0, 0.0),
            Vec3::X,
            1.0
        ),
        Err(RayError::OriginOutOfRange)
    );
    // point_at uses the same exact addition, and refuses a NaN or infinite distance.
    let r = VoxelRay {
        origin: WorldPos::new(i128::MIN, 0, 0),
        sub_offset: Vec3::ZERO,
        direction: Vec3::X,
        max_distance: 1.0,
    };
    assert_eq!(
        r.point_at(max_whole).map(|(p, _)| p.x),
        Some(i128::MAX - (1i128 << 104) + 1)
    );
    assert_eq!(r.point_at(f32::NAN), None);
    assert_eq!(r.point_at(f32::INFINITY), None);
    assert_eq!(r.point_at(f32::NEG_INFINITY), None);
    // -0.0 max distance is stored as +0.0.
    let r = VoxelRay::new(WorldPos::ZERO, Vec3::ZERO, Vec3::X, -0.0).expect("valid");
    assert_eq!(r.max_distance.to_bits(), 0.0f32.to_bits());
}

/// A huge sub-offset is the same point as its normalised form (whole units moved into the
/// voxel), also for `between` and `look_at`, whose difference of two points once lost the
/// fractions next to a sub-offset of 2^60 (a zero direction, or a wrong one, without error).
#[test]
fn between_and_look_at_normalise_huge_offsets() {
    let big = 2f32.powi(60);
    let to = WorldPos::new(1 << 60, 0, 0);
    let from_huge = (WorldPos::ZERO, Vec3::new(big, 0.5, 0.5));
    let from_norm = (WorldPos::new(1 << 60, 0, 0), Vec3::new(0.0, 0.5, 0.5));
    for to_sub in [Vec3::new(0.5, 0.5, 0.5), Vec3::new(0.5, 0.75, 0.5)] {
        let huge = VoxelRay::between(from_huge.0, from_huge.1, to, to_sub);
        let norm = VoxelRay::between(from_norm.0, from_norm.1, to, to_sub);
        assert!(norm.is_ok(), "{norm:?}");
        assert_eq!(huge, norm, "to_sub {to_sub}");
        // Swapped: the huge offset on the far end.
        let back_huge = VoxelRay::between(to, to_sub, from_huge.0, from_huge.1);
        let back_norm = VoxelRay::between(to, to_sub, from_norm.0, from_norm.1);
        assert!(back_norm.is_ok(), "{back_norm:?}");
        assert_eq!(back_huge, back_norm, "to_sub {to_sub}");
    }
    let r = VoxelRay::between(from_huge.0, from_huge.1, to, Vec3::new(0.5, 0.75, 0.5))
        .expect("valid segment");
    assert!((r.direction - Vec3::new(2.0, 1.0, 0.0).normalize()).length() < 1e-6);
    assert!((r.max_distance - 0.3125f32.sqrt()).abs() < 1e-6);
    for target_sub in [Vec3::new(0.5, 0.5, 0.5), Vec3::new(0.5, 0.5, 3.0)] {
        let cam = |(eye, sub): (WorldPos, Vec3)| {
            voxcast::Camera::look_at(eye, sub, to, target_sub, 60.0, 4, 4, 10.0)
        };
        let (huge, norm) = (cam(from_huge), cam(from_norm));
        assert!(norm.is_ok(), "{norm:?}");
        let (huge, norm) = (huge.expect("same eye"), norm.expect("checked"));
        for (px, py) in [(0, 0), (1, 2), (3, 3)] {
            assert_eq!(huge.ray(px, py), norm.ray(px, py), "pixel ({px}, {py})");
        }
    }
    // An offset that moves the point out of the i128 world is an error, not a wrap.
    assert_eq!(
        VoxelRay::between(
            WorldPos::new(i128::MAX, 0, 0),
            Vec3::new(big, 0.5, 0.5),
            to,
            Vec3::ZERO
        ),
        Err(RayError::OriginOutOfRange)
    );
}

#[test]
fn slab_test_degenerate_boxes() {
    let v = Vec3::new;
    // An empty (inverted) box is missed by every ray.
    for dir in [v(1.0, 1.0, 1.0), v(1.0, 0.0, 0.0)] {
        assert_eq!(
            voxcast::ray_aabb(Vec3::ZERO, dir, Vec3::splat(2.0), Vec3::splat(1.0)),
            None
        );
    }
    // A box at infinity cannot be reached.
    assert_eq!(
        voxcast::ray_aabb(
            Vec3::ZERO,
            Vec3::X,
            Vec3::splat(f32::INFINITY),
            Vec3::splat(f32::INFINITY)
        ),
        None
    );
    // Infinite bounds make a half-space: reached at its plane.
    assert_eq!(
        voxcast::ray_aabb(
            Vec3::ZERO,
            Vec3::X,
            v(3.0, f32::NEG_INFINITY, f32::NEG_INFINITY),
            Vec3::INFINITY
        ),
        Some((3.0, f32::INFINITY))
    );
    // An infinite origin or direction is no ray: `None`, never a box behind the origin or a
    // NaN dropped by min/max (both once came back as hits).
    let behind = (v(-5.0, -1.0, -1.0), v(-1.0, 1.0, 1.0));
    assert_eq!(
        voxcast::ray_aabb(Vec3::ZERO, v(f32::INFINITY, 0.0, 0.0), behind.0, behind.1),
        None
    );
    assert_eq!(
        voxcast::ray_aabb(
            v(f32::INFINITY, 0.0, 0.0),
            Vec3::X,
            v(f32::INFINITY, -1.0, -1.0),
            v(f32::INFINITY, 1.0, 1.0)
        ),
        None
    );
}

#[test]
fn camera_looks_at_a_target_beyond_any_max_distance() {
    let eye = WorldPos::new(0, 10, 0);
    for target in [
        WorldPos::new(70_000, 10, 0),
        WorldPos::new(i128::MAX, 10, 0),
        WorldPos::new(i128::MIN, i128::MIN, 0),
    ] {
        let cam = voxcast::Camera::look_at(eye, Vec3::ZERO, target, Vec3::ZERO, 60.0, 4, 4, 10.0)
            .unwrap_or_else(|e| panic!("look_at {target:?}: {e}"));
        let sign = |a: i128, b: i128| a.cmp(&b) as i8 as f32;
        let toward = Vec3::new(sign(target.x, eye.x), sign(target.y, eye.y), 0.0).normalize();
        let center = (cam.pixel_dir(1, 1) + cam.pixel_dir(2, 2)).normalize();
        assert!(center.dot(toward) > 0.99, "{target:?}: {center}");
    }
    assert!(matches!(
        voxcast::Camera::look_at(eye, Vec3::ZERO, eye, Vec3::ZERO, 60.0, 4, 4, 10.0),
        Err(voxcast::CameraError::TargetIsEye)
    ));
}

#[test]
fn camera_with_another_up_looks_straight_down() {
    use voxcast::{Camera, CameraError};
    let eye = WorldPos::new(3, 10, -4);
    let sub = Vec3::splat(0.5);
    // Camera::new keeps +Y up, so it cannot look straight down; with_up can, with the image's
    // top towards +Z: the center pixel looks straight down, the top row leans to +Z and
    // (right = forward × up = -X) the right column to -X.
    assert!(matches!(
        Camera::new(eye, sub, Vec3::NEG_Y, 90.0, 5, 5, 64.0),
        Err(CameraError::VerticalView)
    ));
    let cam = Camera::with_up(eye, sub, Vec3::NEG_Y, Vec3::Z, 90.0, 5, 5, 64.0)
        .expect("looking down with +Z up");
    assert_eq!(cam.pixel_dir(2, 2), Vec3::NEG_Y);
    assert!(cam.pixel_dir(2, 0).z > 0.3 && cam.pixel_dir(2, 4).z < -0.3);
    assert!(cam.pixel_dir(4, 2).x < -0.3 && cam.pixel_dir(0, 2).x > 0.3);
    // The block under the eye is hit on its top face by the center pixel.
    let below = WorldPos::new(3, 2, -4);
    let world = world_with(&[(below, STONE)]);
    let hit = voxel_raycast(&cam.ray(2, 2).expect("ray"), &world).expect("the block below");
    assert_eq!(
        (hit.voxel_pos, hit.face_normal),
        (below, voxcast::glam::IVec3::Y)
    );
    assert!((hit.distance - 7.5).abs() < 1e-5, "{}", hit.distance);

    // Camera::new is with_up with +Y, bit for bit; the length of up does not matter.
    let forward = Vec3::new(1.0, -0.3, 0.6);
    let plain = Camera::new(eye, sub, forward, 60.0, 8, 6, 100.0).expect("camera");
    for up in [Vec3::Y, Vec3::Y * 1e-30, Vec3::Y * 3e38] {
        let cam = Camera::with_up(eye, sub, forward, up, 60.0, 8, 6, 100.0).expect("camera");
        assert_eq!(cam, plain, "up {up}");
    }
    // Rolled: up +X with forward +Z puts +X at the top of the image.
    let rolled = Camera::with_up(eye, sub, Vec3::Z, Vec3::X, 60.0, 8, 6, 100.0).expect("camera");
    assert_eq!((rolled.up, rolled.right), (Vec3::X, Vec3::Y));

    // Up parallel to forward (either way round) or not a direction at all.
    for (up, forward) in [(Vec3::Y * 5.0, Vec3::NEG_Y), (Vec3::X, Vec3::X)] {
        assert!(matches!(
            Camera::with_up(eye, sub, forward, up, 60.0, 8, 6, 100.0),
            Err(CameraError::VerticalView)
        ));
    }
    for up in [
        Vec3::ZERO,
        Vec3::new(f32::NAN, 1.0, 0.0),
        Vec3::new(0.0, f32::INFINITY, 0.0),
    ] {
        let e = Camera::with_up(eye, sub, Vec3::Z, up, 60.0, 8, 6, 100.0);
        assert!(matches!(e, Err(CameraError::InvalidUp)), "{up}: {e:?}");
    }
    let msg = CameraError::VerticalView.to_string();
    assert!(msg.contains("Camera::with_up"), "{msg}");
}

#[test]
fn rays_from_float_points() {
    use voxcast::glam::DVec3;
    // The voxel is the floor (negative coordinates too), the offset the fraction.
    let r = VoxelRay::from_point(DVec3::new(-0.25, 64.5, 3.0), Vec3::NEG_Y, 8.0).expect("ray");
    let expected = VoxelRay::new(
        WorldPos::new(-1, 64, 3),
        Vec3::new(0.75, 0.5, 0.0),
        Vec3::NEG_Y,
        8.0,
    )
    .expect("ray");
    assert_eq!(r, expected);
    // A fraction that rounds to 1 in f32 puts the point on the next voxel's face.
    let r = VoxelRay::from_point(DVec3::new(5.0 - 1e-12, 0.0, 0.0), Vec3::X, 1.0).expect("ray");
    assert_eq!(
        (r.origin, r.sub_offset),
        (WorldPos::new(5, 0, 0), Vec3::ZERO)
    );
    // Far out: 2^100 exactly, and the low edge of the i128 world.
    let big = 2f64.powi(100);
    let r =
        VoxelRay::from_point(DVec3::new(big, -big, -2f64.powi(127)), Vec3::X, 1.0).expect("ray");
    assert_eq!(r.origin, WorldPos::new(1 << 100, -(1 << 100), i128::MIN));
    // Outside the world or not a number: an error, never a panic.
    for (p, e) in [
        (
            DVec3::new(2f64.powi(127), 0.0, 0.0),
            RayError::OriginOutOfRange,
        ),
        (
            DVec3::new(0.0, -2f64.powi(128), 0.0),
            RayError::OriginOutOfRange,
        ),
        (DVec3::new(0.0, 0.0, f64::NAN), RayError::NonFinitePoint),
        (
            DVec3::new(f64::INFINITY, 0.0, 0.0),
            RayError::NonFinitePoint,
        ),
    ] {
        assert_eq!(VoxelRay::from_point(p, Vec3::X, 1.0), Err(e), "{p}");
        assert_eq!(VoxelRay::between_points(DVec3::ZERO, p), Err(e), "{p}");
    }
    // A segment between two eye points is the one `between` makes, and line of sight uses it.
    let (from, to) = (DVec3::new(0.5, 2.5, 0.5), DVec3::new(10.5, 2.5, -3.5));
    let seg = VoxelRay::between_points(from, to).expect("segment");
    let same = VoxelRay::between(
        WorldPos::new(0, 2, 0),
        Vec3::new(0.5, 0.5, 0.5),
        WorldPos::new(10, 2, -4),
        Vec3::new(0.5, 0.5, 0.5),
    )
    .expect("segment");
    assert_eq!(seg, same);
    let wall = WorldPos::new(5, 2, -2);
    let world = world_with(&[(wall, STONE)]);
    let blocked = line_of_sight(&seg, &world, &LineOfSightOptions::default());
    assert!(
        matches!(blocked, LineOfSight::Blocked(h) if h.voxel_pos == wall),
        "{blocked:?}"
    );
    assert_eq!(
        VoxelRay::between_points(from, from),
        Err(RayError::ZeroDirection)
    );
}
