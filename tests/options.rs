//! The ray's options at their edges: max distance (zero, and a hit exactly at it), unloaded
//! space under `UnloadedPolicy::Stop` (the first unloaded voxel and its distance) and material
//! filters (rays through glass).

use voxcast_testkit::common;

use common::{
    describe, dir_component, expect_hit, opts, random_solids, ray_at, sub_of_kind, world_with,
};
use voxcast::glam::{IVec3, Vec3};
use voxcast::{
    ChunkPos, LineOfSight, LineOfSightOptions, MaterialFilter, OriginPolicy, RaycastOptions,
    RaycastOutcome, UnloadedPolicy, VoxelId, VoxelRay, VoxelTraversal, VoxelWorld, WorldPos,
    line_of_sight, voxel_raycast, voxel_raycast_with,
};
use voxcast_testkit::scene::SplitMix64;

const STONE: VoxelId = VoxelId(1);
const GLASS: VoxelId = VoxelId(7);

#[test]
fn max_distance_zero() {
    let o = RaycastOptions::default();
    // Only the start voxel can be hit.
    let world = world_with(&[(WorldPos::ZERO, STONE)]);
    let r = ray_at([0, 0, 0], [0.5; 3], [1.0, 0.0, 0.0], 0.0);
    assert_eq!(expect_hit(&r, &world, &o).distance, 0.0);
    let world = world_with(&[(WorldPos::new(1, 0, 0), STONE)]);
    let r = ray_at([0, 0, 0], [0.999, 0.5, 0.5], [1.0, 0.0, 0.0], 0.0);
    assert_eq!(
        voxel_raycast_with(&r, &world, &o),
        RaycastOutcome::Miss,
        "{}",
        describe(&r)
    );
    // On a face moving down, the start voxel is the one below: it is hit at 0, the origin
    // voxel is not.
    let r = ray_at([0, 0, 0], [0.0, 0.5, 0.5], [-1.0, 0.0, 0.0], 0.0);
    let world = world_with(&[(WorldPos::new(-1, 0, 0), STONE)]);
    let h = expect_hit(&r, &world, &o);
    assert_eq!(
        (h.voxel_pos, h.distance, h.face_normal),
        (WorldPos::new(-1, 0, 0), 0.0, IVec3::ZERO)
    );
    let world = world_with(&[(WorldPos::ZERO, STONE)]);
    assert_eq!(
        voxel_raycast_with(&r, &world, &o),
        RaycastOutcome::Miss,
        "{}",
        describe(&r)
    );
    // A zero-length walk is one voxel.
    assert_eq!(VoxelTraversal::new(&r).count(), 1);
}

#[test]
fn hit_exactly_at_max_distance_counts() {
    let solids = random_solids(0x3A11, WorldPos::new(-8, -8, -8), 16, 0.08, 3);
    let world = world_with(&solids);
    let mut rng = SplitMix64::new(0xE4AC);
    let mut checked = 0;
    while checked < 2000 {
        let origin = [0, 1, 2].map(|_| rng.below(16) as i128 - 8);
        let sub = [0, 1, 2].map(|_| sub_of_kind(rng.below(3) as u8, rng.next_f32()));
        let dir = [0, 1, 2].map(|_| dir_component(rng.below(6) as u8, rng.next_f32()));
        if dir.iter().all(|&c| c == 0.0) {
            continue;
        }
        let r = ray_at(origin, sub, dir, 40.0);
        let o = RaycastOptions::default();
        let Some(h) = voxel_raycast_with(&r, &world, &o).hit().copied() else {
            continue;
        };
        if h.distance == 0.0 {
            continue;
        }
        let exact = VoxelRay {
            max_distance: h.distance,
            ..r
        };
        assert_eq!(
            voxel_raycast_with(&exact, &world, &o),
            RaycastOutcome::Hit(h),
            "max = hit distance: {}",
            describe(&exact)
        );
        let short = VoxelRay {
            max_distance: h.distance.next_down(),
            ..r
        };
        assert_eq!(
            voxel_raycast_with(&short, &world, &o),
            RaycastOutcome::Miss,
            "max just short: {}",
            describe(&short)
        );
        let los = line_of_sight(&exact, &world, &LineOfSightOptions::default());
        assert_eq!(
            los,
            LineOfSight::Blocked(h),
            "segment ending on the face: {}",
            describe(&exact)
        );
        checked += 1;
    }
}

#[test]
fn unloaded_stop_reports_the_first_unloaded_voxel() {
    let stop = opts(OriginPolicy::Report, UnloadedPolicy::Stop);
    let skip_stop = opts(OriginPolicy::SkipOriginVoxel, UnloadedPolicy::Stop);
    let air = RaycastOptions::default();
    // Only chunk (0,0,0) is loaded.
    let mut world = world_with(&[(WorldPos::new(20, 20, 20), STONE)]);

    let r = ray_at([5, 5, 5], [0.5; 3], [1.0, 0.0, 0.0], 100.0);
    assert_eq!(
        voxel_raycast_with(&r, &world, &stop),
        RaycastOutcome::Unloaded {
            voxel_pos: WorldPos::new(32, 5, 5),
            distance: 26.5
        }
    );
    assert_eq!(voxel_raycast_with(&r, &world, &air), RaycastOutcome::Miss);
    assert_eq!(
        voxel_raycast_with(
            &VoxelRay {
                max_distance: 26.0,
                ..r
            },
            &world,
            &stop
        ),
        RaycastOutcome::Miss
    );
    let r = ray_at([5, 5, 5], [0.5; 3], [-1.0, 0.0, 0.0], 100.0);
    assert_eq!(
        voxel_raycast_with(&r, &world, &stop),
        RaycastOutcome::Unloaded {
            voxel_pos: WorldPos::new(-1, 5, 5),
            distance: 5.5
        }
    );
    // Oblique, through the y = 32 face.
    let r = ray_at([5, 5, 5], [0.5; 3], [0.0, 1.0, 1.0], 100.0);
    match voxel_raycast_with(&r, &world, &stop) {
        RaycastOutcome::Unloaded {
            voxel_pos: at,
            distance,
        } => {
            assert_eq!(at, WorldPos::new(5, 32, 31), "{}", describe(&r));
            assert!(
                (f64::from(distance) - 26.5 * 2f64.sqrt()).abs() < 1e-4,
                "{distance}"
            );
        }
        other => panic!("{other:?} for {}", describe(&r)),
    }

    // A solid before the edge is hit first.
    world.set_voxel(WorldPos::new(10, 5, 5), STONE);
    let r = ray_at([5, 5, 5], [0.5; 3], [1.0, 0.0, 0.0], 100.0);
    assert_eq!(
        expect_hit(&r, &world, &stop).voxel_pos,
        WorldPos::new(10, 5, 5)
    );

    // On the chunk face at x = 32 (sub 0): moving down starts in loaded voxel 31, moving up
    // starts in unloaded voxel 32.
    let down = ray_at([32, 7, 7], [0.0, 0.5, 0.5], [-1.0, 0.0, 0.0], 100.0);
    assert_eq!(
        voxel_raycast_with(&down, &world, &stop),
        RaycastOutcome::Unloaded {
            voxel_pos: WorldPos::new(-1, 7, 7),
            distance: 32.0
        }
    );
    let up = ray_at([32, 7, 7], [0.0, 0.5, 0.5], [1.0, 0.0, 0.0], 100.0);
    assert_eq!(
        voxel_raycast_with(&up, &world, &stop),
        RaycastOutcome::Unloaded {
            voxel_pos: WorldPos::new(32, 7, 7),
            distance: 0.0
        }
    );

    // Starting in unloaded space: reported at once, or, skipping the origin voxel, at the next.
    let r = ray_at([40, 7, 7], [0.5; 3], [-1.0, 0.0, 0.0], 100.0);
    assert_eq!(
        voxel_raycast_with(&r, &world, &stop),
        RaycastOutcome::Unloaded {
            voxel_pos: WorldPos::new(40, 7, 7),
            distance: 0.0
        }
    );
    assert_eq!(
        voxel_raycast_with(&r, &world, &skip_stop),
        RaycastOutcome::Unloaded {
            voxel_pos: WorldPos::new(39, 7, 7),
            distance: 0.5
        }
    );
    let r = ray_at([32, 7, 7], [0.5; 3], [-1.0, 0.0, 0.0], 100.0);
    assert_eq!(
        voxel_raycast_with(&r, &world, &skip_stop),
        RaycastOutcome::Unloaded {
            voxel_pos: WorldPos::new(-1, 7, 7),
            distance: 32.5
        }
    );

    // Nothing loaded at all.
    let empty = VoxelWorld::new();
    assert_eq!(
        voxel_raycast_with(&r, &empty, &stop),
        RaycastOutcome::Unloaded {
            voxel_pos: WorldPos::new(32, 7, 7),
            distance: 0.0
        }
    );
    assert_eq!(
        voxel_raycast_with(&r, &empty, &skip_stop),
        RaycastOutcome::Unloaded {
            voxel_pos: WorldPos::new(31, 7, 7),
            distance: 0.5
        }
    );
    assert_eq!(voxel_raycast_with(&r, &empty, &air), RaycastOutcome::Miss);

    // A hole in the middle of the loaded region.
    let mut world = VoxelWorld::new();
    for x in 0..3 {
        world
            .insert_chunk(ChunkPos::new(x, 0, 0), voxcast::Chunk::default())
            .expect("in the world");
    }
    world.remove_chunk(ChunkPos::new(1, 0, 0));
    let r = ray_at([3, 3, 3], [0.5; 3], [1.0, 0.0, 0.0], 200.0);
    assert_eq!(
        voxel_raycast_with(&r, &world, &stop),
        RaycastOutcome::Unloaded {
            voxel_pos: WorldPos::new(32, 3, 3),
            distance: 28.5
        }
    );
    assert_eq!(voxel_raycast_with(&r, &world, &air), RaycastOutcome::Miss);
}

#[test]
fn material_filter_lets_rays_through_glass() {
    let world = world_with(&[
        (WorldPos::new(3, 0, 0), GLASS),
        (WorldPos::new(6, 0, 0), STONE),
    ]);
    let r = ray_at([0, 0, 0], [0.5; 3], [1.0, 0.0, 0.0], 20.0);
    assert_eq!(
        voxel_raycast(&r, &world).map(|h| (h.voxel_pos, h.voxel_type)),
        Some((WorldPos::new(3, 0, 0), GLASS))
    );
    let see_through = RaycastOptions {
        blocks: MaterialFilter::every_non_air().without(GLASS),
        ..RaycastOptions::default()
    };
    let h = expect_hit(&r, &world, &see_through);
    assert_eq!(
        (h.voxel_pos, h.voxel_type, h.distance),
        (WorldPos::new(6, 0, 0), STONE, 5.5)
    );
    let only_glass = RaycastOptions {
        blocks: MaterialFilter::only(&[GLASS]),
        ..RaycastOptions::default()
    };
    assert_eq!(
        expect_hit(
            &ray_at([4, 0, 0], [0.5; 3], [-1.0, 0.0, 0.0], 20.0),
            &world,
            &only_glass
        )
        .voxel_pos,
        WorldPos::new(3, 0, 0)
    );
    assert_eq!(
        voxel_raycast_with(
            &ray_at([4, 0, 0], [0.5; 3], [1.0, 0.0, 0.0], 20.0),
            &world,
            &only_glass
        ),
        RaycastOutcome::Miss
    );
    let nothing = RaycastOptions {
        blocks: MaterialFilter::none(),
        ..RaycastOptions::default()
    };
    assert_eq!(
        voxel_raycast_with(&r, &world, &nothing),
        RaycastOutcome::Miss
    );
    // Line of sight through a window, blocked by the wall behind it.
    let seg = VoxelRay::between(
        WorldPos::ZERO,
        Vec3::splat(0.5),
        WorldPos::new(5, 0, 0),
        Vec3::splat(0.5),
    )
    .expect("valid");
    let los = LineOfSightOptions {
        raycast: see_through.clone(),
        conservative: true,
    };
    assert_eq!(line_of_sight(&seg, &world, &los), LineOfSight::Clear);
    assert!(matches!(
        line_of_sight(&seg, &world, &LineOfSightOptions::default()),
        LineOfSight::Blocked(_)
    ));
    // Starting inside glass that does not stop the ray is starting in air: ExitSolid reports
    // the stone.
    let inside = ray_at([3, 0, 0], [0.5; 3], [1.0, 0.0, 0.0], 20.0);
    let exit = RaycastOptions {
        origin: OriginPolicy::ExitSolid,
        ..see_through
    };
    assert_eq!(
        expect_hit(&inside, &world, &exit).voxel_pos,
        WorldPos::new(6, 0, 0)
    );
}

/// The default filter is `MaterialFilter::every_non_air`, and says so.
#[test]
fn the_default_filter_is_every_non_air() {
    assert!(MaterialFilter::default() == MaterialFilter::every_non_air());
    assert!(MaterialFilter::every_non_air().is_every_non_air());
    assert!(!MaterialFilter::none().is_every_non_air());
}
