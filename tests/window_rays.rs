//! Rays and answers relative to an origin voxel (`WindowRay`, `WindowOutcome`): what they stand
//! for in i128, the CPU twins against the plain batches ray by ray, and the edges where a
//! voxel is out of reach of i32 or of the i128 world.

use voxcast::glam::{DVec3, IVec3, Vec2, Vec3};
use voxcast::{
    LineOfSightOptions, RayError, RaycastOptions, RaycastOutcome, UnloadedPolicy, VoxelId,
    VoxelRay, VoxelRaycastHit, WindowHit, WindowOutcome, WindowRay, WorldPos, line_of_sight_batch,
    line_of_sight_window_batch_into, raycast_batch, raycast_window_batch_into,
};
use voxcast_testkit::scene::Terrain;

#[test]
fn a_window_ray_stands_for_its_voxel_ray() {
    let origin = WorldPos::new(-(1 << 100), 64, i128::MAX - 10);
    let ray = VoxelRay {
        origin: WorldPos::new(-(1 << 100) + 5, 60, i128::MAX - 3),
        sub_offset: Vec3::new(0.25, 0.0, 0.5),
        direction: Vec3::new(0.0, -1.0, -0.0),
        max_distance: f32::NAN,
    };
    let w = WindowRay::from_voxel_ray(&ray, origin).expect("near");
    assert_eq!(w.voxel, IVec3::new(5, -4, 7));
    let back = w.to_voxel_ray(origin).expect("in the world");
    assert_eq!(
        format!("{back:?}"),
        format!("{ray:?}"),
        "fields copied bit for bit"
    );
    // Out of reach of i32 from the origin, and past the i128 world.
    let far = VoxelRay {
        origin: WorldPos::new(1 << 40, 0, 0),
        ..ray
    };
    assert_eq!(WindowRay::from_voxel_ray(&far, WorldPos::ZERO), None);
    let past = WindowRay {
        voxel: IVec3::new(0, 0, 11),
        ..w
    };
    assert_eq!(past.to_voxel_ray(origin), None);
}

#[test]
fn outcomes_convert_both_ways_and_refuse_what_does_not_fit() {
    let origin = WorldPos::new(1000, -(1 << 90), 0);
    let hit = VoxelRaycastHit {
        voxel_pos: WorldPos::new(1003, -(1 << 90) - 2, 7),
        face_normal: IVec3::NEG_Y,
        distance: 2.5,
        voxel_type: VoxelId(9),
        hit_uv: Vec2::new(0.25, 0.75),
    };
    let o = WindowOutcome::from_outcome(&RaycastOutcome::Hit(hit), origin);
    assert_eq!(
        o,
        WindowOutcome::Hit(WindowHit {
            voxel_pos: IVec3::new(3, -2, 7),
            face_normal: IVec3::NEG_Y,
            distance: 2.5,
            voxel_type: VoxelId(9),
            hit_uv: Vec2::new(0.25, 0.75),
        })
    );
    assert_eq!(o.to_outcome(origin), Some(RaycastOutcome::Hit(hit)));
    assert!(o.matches(&o) && !o.matches(&WindowOutcome::Miss));
    let unloaded = RaycastOutcome::Unloaded {
        voxel_pos: WorldPos::new(1000 + (1 << 31), 0, 0),
        distance: 1.0,
    };
    assert_eq!(
        WindowOutcome::from_outcome(&unloaded, origin),
        WindowOutcome::Invalid(RayError::OriginOutOfRange)
    );
    for plain in [
        RaycastOutcome::Miss,
        RaycastOutcome::Invalid(RayError::NanDirection),
    ] {
        let w = WindowOutcome::from_outcome(&plain, origin);
        assert_eq!(w.to_outcome(origin), Some(plain));
    }
    let edge = WindowOutcome::Unloaded {
        voxel_pos: IVec3::new(0, 0, 1),
        distance: 0.0,
    };
    assert_eq!(edge.to_outcome(WorldPos::new(0, 0, i128::MAX)), None);
}

/// The CPU twins answer ray by ray what the plain batches answer for the rays they stand
/// for, converted; rays whose voxel leaves the i128 world are `OriginOutOfRange`.
#[test]
fn cpu_twins_equal_the_plain_batches() {
    let terrain = Terrain::STANDARD;
    let world = terrain.build();
    let origin = WorldPos::new(-32, -32, -32);
    let mut rays: Vec<WindowRay> = terrain
        .reach_rays(5_000, 3)
        .iter()
        .chain(&terrain.sight_segments(5_000, 64.0, 4))
        .map(|r| WindowRay::from_voxel_ray(r, origin).expect("near"))
        .collect();
    rays.push(WindowRay {
        voxel: IVec3::new(5, 40, 5),
        sub_offset: Vec3::splat(0.5),
        direction: Vec3::new(0.0, 0.0, 0.0),
        max_distance: 10.0,
    });
    let origin_at_edge = WorldPos::new(i128::MAX - 4, 0, 0);
    for opts in [
        RaycastOptions::default(),
        RaycastOptions {
            unloaded: UnloadedPolicy::Stop,
            ..Default::default()
        },
    ] {
        let mut got = Vec::new();
        raycast_window_batch_into(&rays, origin, &world, &opts, &mut got);
        let plain: Vec<VoxelRay> = rays
            .iter()
            .map(|r| r.to_voxel_ray(origin).unwrap())
            .collect();
        let want = raycast_batch(&plain, &world, &opts);
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(*g, WindowOutcome::from_outcome(w, origin), "ray {i}");
        }
        assert!(got.iter().any(|o| o.hit().is_some()));
        assert!(got.contains(&WindowOutcome::Miss));
        assert_eq!(
            *got.last().unwrap(),
            WindowOutcome::Invalid(RayError::ZeroDirection)
        );
        for conservative in [false, true] {
            let sight = LineOfSightOptions {
                conservative,
                raycast: opts.clone(),
            };
            line_of_sight_window_batch_into(&rays, origin, &world, &sight, &mut got);
            let want = line_of_sight_batch(&plain, &world, &sight);
            assert_eq!(got.len(), want.len());
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                let w = WindowOutcome::from_outcome(&RaycastOutcome::from(*w), origin);
                assert_eq!(*g, w, "segment {i}");
            }
        }
        // Voxels past the i128 world's edge from this origin.
        raycast_window_batch_into(&rays[..50], origin_at_edge, &world, &opts, &mut got);
        let out = got
            .iter()
            .filter(|o| **o == WindowOutcome::Invalid(RayError::OriginOutOfRange))
            .count();
        let past = rays[..50].iter().filter(|r| r.voxel.x > 4).count();
        assert!(
            past > 0 && out == past,
            "{out} refused, {past} past the edge"
        );
    }
}

/// Rays from f64 points relative to the origin are the `VoxelRay`s of the same points at the
/// world's origin, moved to the origin given: the same voxel, offset, direction and length.
#[test]
fn rays_from_points_relative_to_the_origin() {
    let origin = WorldPos::new(1 << 80, -7, -(1 << 100));
    let eye = DVec3::new(12.25, 40.6, -3.75);
    let dir = Vec3::new(0.3, -0.9, 0.1);
    let w = WindowRay::from_point(eye, dir, 8.0).expect("valid");
    let at_zero = VoxelRay::from_point(eye, dir, 8.0).expect("valid");
    assert_eq!(w.voxel, IVec3::new(12, 40, -4));
    assert_eq!(w.sub_offset, at_zero.sub_offset);
    assert_eq!(w.direction, at_zero.direction);
    let moved = w.to_voxel_ray(origin).expect("in the world");
    assert_eq!(
        moved.origin,
        origin.checked_add([12, 40, -4]).expect("in the world")
    );
    let seg = WindowRay::between_points(eye, DVec3::new(30.5, 38.0, 2.0)).expect("valid");
    let seg0 = VoxelRay::between_points(eye, DVec3::new(30.5, 38.0, 2.0)).expect("valid");
    assert_eq!(
        (seg.voxel, seg.sub_offset, seg.direction, seg.max_distance),
        (
            IVec3::new(12, 40, -4),
            seg0.sub_offset,
            seg0.direction,
            seg0.max_distance
        )
    );
    assert_eq!(seg0.origin, WorldPos::new(12, 40, -4));
    assert_eq!(
        WindowRay::from_point(DVec3::new(3e9, 0.0, 0.0), dir, 8.0),
        Err(RayError::OriginOutOfRange)
    );
    assert_eq!(
        WindowRay::from_point(DVec3::new(f64::NAN, 0.0, 0.0), dir, 8.0),
        Err(RayError::NonFinitePoint)
    );
}

/// The sizes the docs state: what a ray costs to hand over and an answer to take back.
#[test]
fn window_rays_and_answers_are_compact() {
    assert_eq!(std::mem::size_of::<WindowRay>(), 40);
    assert_eq!(std::mem::size_of::<WindowOutcome>(), 44);
    assert_eq!(std::mem::size_of::<VoxelRay>(), 80);
    assert_eq!(std::mem::size_of::<RaycastOutcome>(), 96);
}
