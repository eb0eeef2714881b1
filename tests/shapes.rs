//! Blocks that are not cubes (`voxcast::BlockShape`): the table's checks, the rule of the
//! crate's `shapes` docs against an oracle over boxes, and the full box against the cube.
//!
//! The oracle (`voxcast_testkit::fuzz::shapes::oracle`, the fuzz target's) knows nothing of the
//! DDA's stepping, skipping or shape lookups: it takes the voxels a ray visits, in order, from
//! `VoxelTraversal` (itself tested against a geometric oracle in `oracle.rs`), derives each
//! voxel's crossing counts from its position, and intersects every box of the voxel's shape by
//! the documented rule. A second check measures
//! the hit point in f64 and asks that it lies on the reported box face.

use proptest::prelude::*;
use voxcast::glam::{IVec3, Vec3};
use voxcast::{
    BlockShape, LineOfSight, LineOfSightOptions, MAX_SHAPE_BOXES, MaterialFilter, OriginPolicy,
    RaycastOptions, RaycastOutcome, ShapeBox, ShapeError, VoxelId, VoxelRay, VoxelWorld, WorldPos,
    line_of_sight, voxel_raycast_with,
};
use voxcast_testkit::common::{dir_component, offset, random_shape, random_solids, sub_of_kind};
use voxcast_testkit::fuzz::shapes::oracle;
use voxcast_testkit::scene::SplitMix64;

fn bx(min: [u8; 3], max: [u8; 3]) -> ShapeBox {
    ShapeBox::new(min, max).expect("a valid box")
}

fn boxes(b: &[([u8; 3], [u8; 3])]) -> BlockShape {
    BlockShape::Boxes(b.iter().map(|&(lo, hi)| bx(lo, hi)).collect())
}

const SLAB: VoxelId = VoxelId(1);
const FLOWER: VoxelId = VoxelId(2);
const FENCE: VoxelId = VoxelId(3);
const STONE: VoxelId = VoxelId(4);

/// A bottom slab, a flower (a small box in the middle), a fence post with its east and west
/// arms (a gap north and south of the post), and stone.
fn shaped_world() -> VoxelWorld {
    let mut w = VoxelWorld::new();
    w.set_shape(SLAB, &boxes(&[([0, 0, 0], [16, 8, 16])]))
        .unwrap();
    w.set_shape(FLOWER, &boxes(&[([5, 0, 5], [11, 10, 11])]))
        .unwrap();
    w.set_shape(
        FENCE,
        &boxes(&[
            ([6, 0, 6], [10, 16, 10]),
            ([0, 6, 7], [6, 15, 9]),
            ([10, 6, 7], [16, 15, 9]),
        ]),
    )
    .unwrap();
    w
}

fn ray(origin: WorldPos, sub: Vec3, dir: Vec3, max: f32) -> VoxelRay {
    VoxelRay::new(origin, sub, dir, max).expect("a valid ray")
}

fn hit(o: RaycastOutcome) -> voxcast::VoxelRaycastHit {
    match o {
        RaycastOutcome::Hit(h) => h,
        other => panic!("expected a hit, got {other:?}"),
    }
}

#[test]
fn the_table_refuses_bad_shapes_and_keeps_good_ones() {
    assert_eq!(
        ShapeBox::new([0, 0, 0], [17, 8, 16]),
        Err(ShapeError::OutsideVoxel {
            min: [0, 0, 0],
            max: [17, 8, 16]
        })
    );
    assert!(matches!(
        ShapeBox::new([4, 0, 0], [4, 8, 16]),
        Err(ShapeError::Degenerate { .. })
    ));
    assert!(matches!(
        ShapeBox::new([8, 0, 0], [4, 8, 16]),
        Err(ShapeError::Degenerate { .. })
    ));
    assert!(matches!(
        ShapeBox::from_voxels([0.0, 0.0, 0.0], [1.0, 0.3, 1.0]),
        Err(ShapeError::OffGrid { .. })
    ));
    assert!(matches!(
        ShapeBox::from_voxels([0.0, 0.0, f32::NAN], [1.0, 0.5, 1.0]),
        Err(ShapeError::OffGrid { .. })
    ));
    assert_eq!(
        ShapeBox::from_voxels([0.0, 0.0, 0.0], [1.0, 0.5, 1.0]),
        ShapeBox::new([0, 0, 0], [16, 8, 16])
    );
    let mut w = VoxelWorld::new();
    let many = BlockShape::Boxes(vec![ShapeBox::FULL; MAX_SHAPE_BOXES + 1]);
    assert_eq!(
        w.set_shape(VoxelId(5), &many),
        Err(ShapeError::TooManyBoxes {
            count: MAX_SHAPE_BOXES + 1
        })
    );
    assert_eq!(
        w.set_shape(VoxelId(5), &BlockShape::Boxes(vec![])),
        Err(ShapeError::NoBoxes)
    );
    assert_eq!(
        w.set_shape(VoxelId::AIR, &BlockShape::Empty),
        Err(ShapeError::Air)
    );
    assert!(
        w.shapes().is_empty(),
        "refused shapes leave the table as it was"
    );
    let stairs = boxes(&[([0, 0, 0], [16, 8, 16]), ([0, 8, 8], [16, 16, 16])]);
    w.set_shape(VoxelId(7), &stairs).unwrap();
    w.set_shape(VoxelId(9), &BlockShape::Empty).unwrap();
    w.set_shape(VoxelId(7), &boxes(&[([0, 0, 0], [16, 8, 16])]))
        .unwrap();
    w.set_shape(VoxelId(7), &stairs).unwrap();
    assert_eq!(w.shape(VoxelId(7)), stairs);
    assert_eq!(w.shape(VoxelId(9)), BlockShape::Empty);
    assert_eq!(w.shape(VoxelId(8)), BlockShape::Cube);
    w.set_shape(VoxelId(7), &BlockShape::Cube).unwrap();
    w.set_shape(VoxelId(9), &BlockShape::Cube).unwrap();
    assert!(
        w.shapes().is_empty(),
        "cubes again: nothing left to look up"
    );
}

#[test]
fn rays_pass_over_slabs_and_through_fence_gaps_and_hit_flowers() {
    let mut w = shaped_world();
    let at = WorldPos::new(1 << 100, -(1 << 90), 7);
    w.set_voxel(at, SLAB);
    w.set_voxel(offset(at, [2, 0, 0]), FLOWER);
    w.set_voxel(offset(at, [4, 0, 0]), FENCE);
    w.set_voxel(offset(at, [6, 0, 0]), STONE);
    let opts = RaycastOptions::default();
    let east = Vec3::X;

    // Over the slab (y = 0.75) the ray passes it and the flower (10/16 high), and meets the
    // fence's arm (6/16..15/16 high) on its west face.
    let h = hit(voxel_raycast_with(
        &ray(
            offset(at, [-1, 0, 0]),
            Vec3::new(0.5, 0.75, 0.5),
            east,
            20.0,
        ),
        &w,
        &opts,
    ));
    assert_eq!(
        (h.voxel_pos, h.face_normal, h.distance, h.voxel_type),
        (offset(at, [4, 0, 0]), IVec3::NEG_X, 4.5, FENCE)
    );
    assert_eq!(h.hit_uv, voxcast::glam::Vec2::new(0.75, 0.5));

    // Low (y = 0.25) it meets the slab's west face.
    let h = hit(voxel_raycast_with(
        &ray(
            offset(at, [-1, 0, 0]),
            Vec3::new(0.5, 0.25, 0.5),
            east,
            20.0,
        ),
        &w,
        &opts,
    ));
    assert_eq!(
        (h.voxel_pos, h.face_normal, h.distance),
        (at, IVec3::NEG_X, 0.5)
    );

    // Down onto the slab: its top face, half a voxel into the voxel.
    let h = hit(voxel_raycast_with(
        &ray(
            offset(at, [0, 3, 0]),
            Vec3::new(0.5, 0.5, 0.5),
            Vec3::NEG_Y,
            20.0,
        ),
        &w,
        &opts,
    ));
    assert_eq!(
        (h.voxel_pos, h.face_normal, h.distance),
        (at, IVec3::Y, 3.0)
    );

    // Down onto the flower, off its box (x = 0.2): through to the ground below (nothing: a
    // miss); on it: its top at 10/16.
    let flower = offset(at, [2, 0, 0]);
    let down = |sub: Vec3| {
        voxel_raycast_with(
            &ray(offset(flower, [0, 2, 0]), sub, Vec3::NEG_Y, 20.0),
            &w,
            &opts,
        )
    };
    assert_eq!(down(Vec3::new(0.2, 0.5, 0.5)), RaycastOutcome::Miss);
    let h = hit(down(Vec3::new(0.5, 0.5, 0.5)));
    assert_eq!(
        (h.voxel_pos, h.face_normal, h.distance),
        (flower, IVec3::Y, 1.5 + 6.0 / 16.0)
    );

    // North to south through the fence voxel beside its post (x = 0.2, under its arms at
    // y = 0.2): the gap; at the post (x = 0.5) its north face.
    let fence = offset(at, [4, 0, 0]);
    let south = |sub: Vec3| {
        voxel_raycast_with(
            &ray(offset(fence, [0, 0, -2]), sub, Vec3::Z, 20.0),
            &w,
            &opts,
        )
    };
    assert_eq!(
        south(Vec3::new(0.5, 0.2, 0.5)).hit().unwrap().distance,
        1.5 + 6.0 / 16.0
    );
    assert_eq!(
        south(Vec3::new(0.2, 0.2, 0.5)).hit().map(|h| h.face_normal),
        None
    );
    // At arm height the arm (z 7..9) is met.
    let h = hit(south(Vec3::new(0.2, 0.5, 0.5)));
    assert_eq!(
        (h.face_normal, h.distance),
        (IVec3::NEG_Z, 1.5 + 7.0 / 16.0)
    );
}

#[test]
fn origin_policies_keep_their_meaning_inside_a_shape() {
    let mut w = shaped_world();
    let at = WorldPos::new(-5, 3, 1 << 120);
    w.set_voxel(at, SLAB);
    w.set_voxel(offset(at, [3, 0, 0]), SLAB);
    let inside = Vec3::new(0.5, 0.25, 0.5);
    let above = Vec3::new(0.5, 0.75, 0.5);
    let cast = |sub: Vec3, origin: OriginPolicy| {
        voxel_raycast_with(
            &ray(at, sub, Vec3::X, 20.0),
            &w,
            &RaycastOptions {
                origin,
                ..RaycastOptions::default()
            },
        )
    };
    // Inside the slab's box: reported at 0 under `Report`.
    let h = hit(cast(inside, OriginPolicy::Report));
    assert_eq!(
        (h.voxel_pos, h.distance, h.face_normal),
        (at, 0.0, IVec3::ZERO)
    );
    // Above it, in the slab's voxel: in air, so the next slab is hit under every policy.
    for p in [
        OriginPolicy::Report,
        OriginPolicy::SkipOriginVoxel,
        OriginPolicy::ExitSolid,
    ] {
        assert_eq!(
            cast(above, p),
            RaycastOutcome::Miss,
            "{p:?}: over both slabs"
        );
    }
    // Inside, skipping or exiting: the slab three voxels on, at its west face.
    for p in [OriginPolicy::SkipOriginVoxel, OriginPolicy::ExitSolid] {
        let h = hit(cast(inside, p));
        assert_eq!(
            (h.voxel_pos, h.distance),
            (offset(at, [3, 0, 0]), 2.5),
            "{p:?}"
        );
    }
    // Starting in the slab's voxel above its box, moving down: the top face is met under
    // `ExitSolid` too (the ray starts in air).
    let down = voxel_raycast_with(
        &ray(at, above, Vec3::NEG_Y, 20.0),
        &w,
        &RaycastOptions {
            origin: OriginPolicy::ExitSolid,
            ..RaycastOptions::default()
        },
    );
    assert_eq!(hit(down).distance, 0.25);
}

#[test]
fn an_empty_shape_is_air_and_filters_still_choose() {
    let mut w = VoxelWorld::new();
    let at = WorldPos::new(10, 10, 10);
    w.set_voxel(at, VoxelId(6));
    w.set_voxel(offset(at, [2, 0, 0]), SLAB);
    w.set_shape(VoxelId(6), &BlockShape::Empty).unwrap();
    w.set_shape(SLAB, &boxes(&[([0, 0, 0], [16, 8, 16])]))
        .unwrap();
    let r = ray(
        offset(at, [-1, 0, 0]),
        Vec3::new(0.5, 0.25, 0.5),
        Vec3::X,
        10.0,
    );
    let h = hit(voxel_raycast_with(&r, &w, &RaycastOptions::default()));
    assert_eq!(h.voxel_pos, offset(at, [2, 0, 0]));
    // A filter that lets slabs through: a miss.
    let opts = RaycastOptions {
        blocks: MaterialFilter::only(&[VoxelId(6)]),
        ..RaycastOptions::default()
    };
    assert_eq!(voxel_raycast_with(&r, &w, &opts), RaycastOutcome::Miss);
    // Line of sight over the slab is clear, through it blocked.
    let eye = |y: f32| (offset(at, [-1, 0, 0]), Vec3::new(0.5, y, 0.5));
    let to = |y: f32| (offset(at, [4, 0, 0]), Vec3::new(0.5, y, 0.5));
    for conservative in [false, true] {
        let o = LineOfSightOptions {
            conservative,
            ..LineOfSightOptions::default()
        };
        let seg = |y: f32| VoxelRay::between(eye(y).0, eye(y).1, to(y).0, to(y).1).unwrap();
        assert_eq!(
            line_of_sight(&seg(0.75), &w, &o),
            LineOfSight::Clear,
            "conservative {conservative}"
        );
        assert!(matches!(
            line_of_sight(&seg(0.25), &w, &o),
            LineOfSight::Blocked(_)
        ));
    }
}

fn shaped_random_world(seed: u64, min: WorldPos) -> VoxelWorld {
    let mut w = VoxelWorld::new();
    for (p, id) in random_solids(seed, min, 12, 0.2, 5) {
        w.set_voxel(p, id);
    }
    let mut rng = SplitMix64::new(seed ^ 0x9E37_79B9_7F4A_7C15);
    for id in 1..=5 {
        w.set_shape(VoxelId(id), &random_shape(&mut rng)).unwrap();
    }
    w
}

fn random_ray(
    min: WorldPos,
    at: [u8; 3],
    sub: [(u8, f32); 3],
    dir: [(u8, f32); 3],
    max: f32,
) -> Option<VoxelRay> {
    // Sub offsets on the 1/16 grid too, where box faces lie.
    let s = |(k, v): (u8, f32)| {
        if k % 4 == 3 {
            (v * 16.0).floor() / 16.0
        } else {
            sub_of_kind(k, v)
        }
    };
    let d = Vec3::new(
        dir_component(dir[0].0, dir[0].1),
        dir_component(dir[1].0, dir[1].1),
        dir_component(dir[2].0, dir[2].1),
    );
    let origin = offset(min, at.map(|v| i128::from(v % 14) - 1));
    VoxelRay::new(origin, Vec3::new(s(sub[0]), s(sub[1]), s(sub[2])), d, max).ok()
}

const OFFSETS: [WorldPos; 4] = [
    WorldPos::new(0, 0, 0),
    WorldPos::new(-(1 << 64), 1 << 64, 5),
    WorldPos::new(1 << 120, -(1 << 120), -(1 << 100)),
    WorldPos::new(i128::MAX - 40, i128::MIN + 20, 0),
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// The reference equals the oracle on voxel, face, distance (bit for bit) and id, and the
    /// UV is the hit point's on that face.
    #[test]
    fn reference_equals_the_oracle_over_boxes(
        seed in any::<u64>(),
        where_ in 0usize..4,
        rays in proptest::collection::vec(
            (any::<[u8; 3]>(), any::<[(u8, f32); 3]>(), any::<[(u8, f32); 3]>(), 0.0f32..30.0),
            32,
        ),
    ) {
        let min = OFFSETS[where_];
        let w = shaped_random_world(seed, min);
        for (at, sub, dir, max) in rays {
            let sub = sub.map(|(k, v)| (k, v.abs().fract()));
            let dir = dir.map(|(k, v)| (k, v.abs().fract()));
            // Some rays long enough to take the DDA's long-ray paths (empty bricks skipped).
            let max = if at[1] % 4 == 0 { max * 12.0 } else { max };
            let Some(r) = random_ray(min, at, sub, dir, max) else { continue };
            let got = voxel_raycast_with(&r, &w, &RaycastOptions::default());
            let want = oracle(&r, &w);
            let got_key = got.hit().map(|h| (h.voxel_pos, h.face_normal, h.distance.to_bits(), h.voxel_type));
            let want_key = want.map(|(v, n, t, id)| (v, n, t.to_bits(), id));
            prop_assert_eq!(got_key, want_key, "{:?}", r);
            if let Some(h) = got.hit() {
                // The UV: the hit point's offsets in the voxel on the face's two other axes.
                if h.face_normal != IVec3::ZERO {
                    let face = (0..3).find(|&a| h.face_normal[a] != 0).unwrap();
                    let others: Vec<usize> = (0..3).filter(|&a| a != face).collect();
                    for (k, &a) in others.iter().enumerate() {
                        let p = f64::from(r.sub_offset[a]) + f64::from(r.direction[a]) * f64::from(h.distance)
                            - (h.voxel_pos.axis(a) - r.origin.axis(a)) as f64;
                        prop_assert!((f64::from(h.hit_uv[k]) - p.clamp(0.0, 1.0)).abs() < 1e-4, "{:?} {:?}", r, h);
                    }
                }
            }
        }
    }

    /// A shape of the full box answers exactly as the cube, under every origin policy and for
    /// line of sight in both modes.
    #[test]
    fn the_full_box_is_the_cube(
        seed in any::<u64>(),
        where_ in 0usize..4,
        rays in proptest::collection::vec(
            (any::<[u8; 3]>(), any::<[(u8, f32); 3]>(), any::<[(u8, f32); 3]>(), 0.0f32..30.0),
            24,
        ),
    ) {
        let min = OFFSETS[where_];
        let mut cubes = VoxelWorld::new();
        for (p, id) in random_solids(seed, min, 12, 0.25, 3) {
            cubes.set_voxel(p, id);
        }
        let mut full = cubes.clone();
        for id in 1..=3 {
            full.set_shape(VoxelId(id), &BlockShape::Boxes(vec![ShapeBox::FULL])).unwrap();
        }
        for (at, sub, dir, max) in rays {
            let sub = sub.map(|(k, v)| (k, v.abs().fract()));
            let dir = dir.map(|(k, v)| (k, v.abs().fract()));
            let Some(r) = random_ray(min, at, sub, dir, max) else { continue };
            for origin in [OriginPolicy::Report, OriginPolicy::SkipOriginVoxel, OriginPolicy::ExitSolid] {
                let opts = RaycastOptions { origin, ..RaycastOptions::default() };
                let (a, b) = (voxel_raycast_with(&r, &cubes, &opts), voxel_raycast_with(&r, &full, &opts));
                prop_assert_eq!(format!("{a:?}"), format!("{b:?}"), "{:?} {:?}", r, origin);
            }
            let to = r.origin;
            for conservative in [false, true] {
                let o = LineOfSightOptions { conservative, ..LineOfSightOptions::default() };
                let from = offset(min, at.map(|v| i128::from(v % 7) + 2));
                if let Ok(seg) = VoxelRay::between(from, Vec3::splat(0.5), to, r.sub_offset) {
                    prop_assert_eq!(
                        format!("{:?}", line_of_sight(&seg, &cubes, &o)),
                        format!("{:?}", line_of_sight(&seg, &full, &o))
                    );
                }
            }
        }
    }
}

/// A ray on the i128 world's low face moving out of it meets nothing (the fuzz target's
/// oracle once overflowed computing its start voxel: `fuzz/regressions/shapes/`).
#[test]
fn a_ray_leaving_the_world_from_its_face_meets_nothing() {
    let mut w = shaped_world();
    let at = WorldPos::new(i128::MIN, 0, 0);
    w.set_voxel(at, SLAB);
    let r = ray(
        offset(at, [0, 0, 0]),
        Vec3::new(0.0, 0.5, 0.5),
        Vec3::new(-1.0, 0.1, 0.0),
        10.0,
    );
    assert_eq!(oracle(&r, &w), None);
    assert_eq!(
        voxel_raycast_with(&r, &w, &RaycastOptions::default()),
        RaycastOutcome::Miss
    );
}
