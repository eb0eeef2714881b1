//! The first things a game asks of a raycast: a hit, a miss, the face and its normal, max
//! distance, a ray from inside a solid, a diagonal, the voxel's type, the UV on every face, and
//! placing and breaking a block against a hit.

use voxcast_testkit::common;

use common::{describe, ray, ray_at, world_with};
use voxcast::glam::{IVec3, Vec2, Vec3};
use voxcast::{
    EditError, OriginPolicy, RaycastOptions, RaycastOutcome, VoxelId, VoxelRaycastHit,
    VoxelTraversal, VoxelWorld, WorldPos, break_block, place_block, voxel_raycast,
    voxel_raycast_with,
};

const STONE: VoxelId = VoxelId(1);
const DIRT: VoxelId = VoxelId(2);

fn with_origin(policy: OriginPolicy) -> RaycastOptions {
    RaycastOptions {
        origin: policy,
        ..RaycastOptions::default()
    }
}

#[test]
fn test_ray_hits_solid_voxel() {
    let target = WorldPos::new(5, 0, 0);
    let world = world_with(&[(target, STONE)]);

    // Start point (0, 0.5, 0.5): the -x face of voxel 5 is exactly 5 voxels away.
    let r = ray_at([0, 0, 0], [0.0, 0.5, 0.5], [1.0, 0.0, 0.0], 10.0);
    let hit = voxel_raycast(&r, &world).unwrap_or_else(|| panic!("no hit for {}", describe(&r)));
    assert_eq!(hit.voxel_pos, target, "{}", describe(&r));
    assert_eq!(hit.distance, 5.0, "{}", describe(&r));
    assert_eq!(hit.face_normal, IVec3::NEG_X, "{}", describe(&r));
    assert_eq!(hit.voxel_type, STONE, "{}", describe(&r));

    // The start point at the voxel's corner, as in the source material's WorldPos(0, 0, 0).
    let r = ray_at([0, 0, 0], [0.0; 3], [1.0, 0.0, 0.0], 10.0);
    let hit = voxel_raycast(&r, &world).unwrap_or_else(|| panic!("no hit for {}", describe(&r)));
    assert_eq!(hit.voxel_pos, target, "{}", describe(&r));
    assert!(
        (hit.distance - 5.0).abs() < 1e-6,
        "distance {} for {}",
        hit.distance,
        describe(&r)
    );

    // From the center of voxel 0 the face is 4.5 away.
    let r = ray_at([0, 0, 0], [0.5; 3], [1.0, 0.0, 0.0], 10.0);
    let hit = voxel_raycast(&r, &world).unwrap_or_else(|| panic!("no hit for {}", describe(&r)));
    assert_eq!(
        (hit.voxel_pos, hit.distance),
        (target, 4.5),
        "{}",
        describe(&r)
    );
}

#[test]
fn test_ray_misses_empty_space() {
    // Nothing loaded at all.
    let r = ray_at([0, 0, 0], [0.5; 3], [1.0, 0.0, 0.0], 100.0);
    assert_eq!(
        voxel_raycast(&r, &VoxelWorld::new()),
        None,
        "{}",
        describe(&r)
    );
    assert_eq!(
        voxel_raycast_with(&r, &VoxelWorld::new(), &RaycastOptions::default()),
        RaycastOutcome::Miss
    );

    // Loaded, with solids next to the ray but not on it, and behind it.
    let world = world_with(&[
        (WorldPos::new(5, 1, 0), STONE),
        (WorldPos::new(5, 0, 1), STONE),
        (WorldPos::new(5, -1, 0), STONE),
        (WorldPos::new(-3, 0, 0), STONE),
        (WorldPos::new(60, 0, 1), STONE),
    ]);
    assert_eq!(
        voxel_raycast_with(&r, &world, &RaycastOptions::default()),
        RaycastOutcome::Miss,
        "{}",
        describe(&r)
    );
    // Sanity: the same world does stop a ray aimed at one of them.
    let aimed = ray_at([0, 0, 0], [0.5; 3], [-1.0, 0.0, 0.0], 100.0);
    assert_eq!(
        voxel_raycast(&aimed, &world).map(|h| h.voxel_pos),
        Some(WorldPos::new(-3, 0, 0))
    );
}

#[test]
fn test_hit_face_normal_correct() {
    let target = WorldPos::new(5, 0, 0);
    let world = world_with(&[(target, STONE)]);
    // (start voxel, direction, outward normal of the face the ray enters through)
    let cases = [
        ([0, 0, 0], [1.0, 0.0, 0.0], IVec3::NEG_X),
        ([10, 0, 0], [-1.0, 0.0, 0.0], IVec3::X),
        ([5, -5, 0], [0.0, 1.0, 0.0], IVec3::NEG_Y),
        ([5, 5, 0], [0.0, -1.0, 0.0], IVec3::Y),
        ([5, 0, -5], [0.0, 0.0, 1.0], IVec3::NEG_Z),
        ([5, 0, 5], [0.0, 0.0, -1.0], IVec3::Z),
    ];
    for (origin, dir, normal) in cases {
        let r = ray_at(origin, [0.5; 3], dir, 10.0);
        let hit =
            voxel_raycast(&r, &world).unwrap_or_else(|| panic!("no hit for {}", describe(&r)));
        assert_eq!(hit.voxel_pos, target, "{}", describe(&r));
        assert_eq!(hit.face_normal, normal, "{}", describe(&r));
        assert_eq!(hit.distance, 4.5, "{}", describe(&r));
        // The normal faces the ray: it points against the direction.
        assert!(
            hit.face_normal.as_vec3().dot(r.direction) < 0.0,
            "{}",
            describe(&r)
        );
        assert_eq!(
            hit.previous_pos(),
            Some(WorldPos::new(
                5 + i128::from(normal.x),
                normal.y.into(),
                normal.z.into()
            ))
        );
        assert_eq!(
            hit.hit_uv,
            Vec2::splat(0.5),
            "center of the face for {}",
            describe(&r)
        );
    }
}

#[test]
fn test_max_distance_limits_search() {
    let world = world_with(&[(WorldPos::new(20, 0, 0), STONE)]);
    let cast = |max: f32| {
        let r = ray_at([0, 0, 0], [0.0, 0.5, 0.5], [1.0, 0.0, 0.0], max);
        (voxel_raycast(&r, &world), r)
    };
    let (h, r) = cast(10.0);
    assert_eq!(h, None, "{}", describe(&r));
    let (h, r) = cast(25.0);
    let h = h.unwrap_or_else(|| panic!("no hit for {}", describe(&r)));
    assert_eq!(
        (h.voxel_pos, h.distance),
        (WorldPos::new(20, 0, 0), 20.0),
        "{}",
        describe(&r)
    );
    // The face is at exactly 20: a hit at max distance counts, a hair less misses.
    let (h, r) = cast(20.0);
    assert!(
        h.is_some(),
        "hit at exactly max distance must count: {}",
        describe(&r)
    );
    let (h, r) = cast(20.0_f32.next_down());
    assert_eq!(h, None, "{}", describe(&r));
}

#[test]
fn test_ray_from_inside_solid_escapes() {
    let mut voxels = Vec::new();
    for x in -1..=1 {
        for y in -1..=1 {
            for z in -1..=1 {
                voxels.push((WorldPos::new(x, y, z), STONE));
            }
        }
    }
    let in_cube = |p: WorldPos| p.to_array().iter().all(|c| (-1..=1).contains(c));
    let mut world = world_with(&voxels);
    let r = ray_at([0, 0, 0], [0.5; 3], [1.0, 0.0, 0.0], 10.0);

    let skip = voxel_raycast_with(&r, &world, &with_origin(OriginPolicy::SkipOriginVoxel));
    let hit = skip
        .hit()
        .unwrap_or_else(|| panic!("{skip:?} for {}", describe(&r)));
    assert_eq!(hit.voxel_pos, WorldPos::new(1, 0, 0), "{}", describe(&r));
    assert_eq!(
        (hit.distance, hit.face_normal),
        (0.5, IVec3::NEG_X),
        "{}",
        describe(&r)
    );

    // Every one of the 26 directions escapes the origin voxel into the cube, at a distance > 0.
    for dx in -1..=1 {
        for dy in -1..=1 {
            for dz in -1..=1 {
                if (dx, dy, dz) == (0, 0, 0) {
                    continue;
                }
                let r = ray_at([0, 0, 0], [0.5; 3], [dx as f32, dy as f32, dz as f32], 10.0);
                let o = voxel_raycast_with(&r, &world, &with_origin(OriginPolicy::SkipOriginVoxel));
                let h = o
                    .hit()
                    .unwrap_or_else(|| panic!("{o:?} for {}", describe(&r)));
                assert!(
                    h.distance > 0.0 && h.voxel_pos != WorldPos::ZERO && in_cube(h.voxel_pos),
                    "{h:?} for {}",
                    describe(&r)
                );
                assert_ne!(h.face_normal, IVec3::ZERO, "{}", describe(&r));
            }
        }
    }

    let report = voxel_raycast_with(&r, &world, &with_origin(OriginPolicy::Report));
    let expected = VoxelRaycastHit {
        voxel_pos: WorldPos::ZERO,
        face_normal: IVec3::ZERO,
        distance: 0.0,
        voxel_type: STONE,
        hit_uv: Vec2::ZERO,
    };
    assert_eq!(report, RaycastOutcome::Hit(expected), "{}", describe(&r));
    assert_eq!(
        voxel_raycast(&r, &world),
        Some(expected),
        "Report is the default: {}",
        describe(&r)
    );
    assert_eq!(expected.previous_pos(), None);

    // ExitSolid: nothing after the cube is a miss; a solid further on is the answer.
    assert_eq!(
        voxel_raycast_with(&r, &world, &with_origin(OriginPolicy::ExitSolid)),
        RaycastOutcome::Miss
    );
    world.set_voxel(WorldPos::new(5, 0, 0), DIRT);
    let exit = voxel_raycast_with(&r, &world, &with_origin(OriginPolicy::ExitSolid));
    let h = exit
        .hit()
        .unwrap_or_else(|| panic!("{exit:?} for {}", describe(&r)));
    assert_eq!(
        (h.voxel_pos, h.distance, h.voxel_type),
        (WorldPos::new(5, 0, 0), 4.5, DIRT),
        "{}",
        describe(&r)
    );
    assert_eq!(h.face_normal, IVec3::NEG_X);
    // SkipOriginVoxel still stops at the cube, not at the far solid.
    let skip = voxel_raycast_with(&r, &world, &with_origin(OriginPolicy::SkipOriginVoxel));
    assert_eq!(
        skip.hit().map(|h| h.voxel_pos),
        Some(WorldPos::new(1, 0, 0))
    );
}

#[test]
fn test_diagonal_ray_crosses_voxels_correctly() {
    let target = WorldPos::new(3, 3, 0);
    let world = world_with(&[(target, STONE)]);

    // From the center of voxel 0 the ray passes exactly through the edges (1,1), (2,2), (3,3):
    // it enters voxel (3,3,0) at the point (3, 3), 2.5·√2 away. At the edge x and y cross at the
    // same distance; ties go to x first, so the last crossing, through which (3,3,0) is
    // entered, is the y crossing: the face normal is -y.
    let r = ray_at([0, 0, 0], [0.5; 3], [1.0, 1.0, 0.0], 10.0);
    let hit = voxel_raycast(&r, &world).unwrap_or_else(|| panic!("no hit for {}", describe(&r)));
    assert_eq!(hit.voxel_pos, target, "{}", describe(&r));
    let exact = 2.5 * std::f64::consts::SQRT_2;
    assert!(
        (f64::from(hit.distance) - exact).abs() < 1e-4,
        "distance {} != {exact} for {}",
        hit.distance,
        describe(&r)
    );
    assert_eq!(hit.face_normal, IVec3::NEG_Y, "{}", describe(&r));
    assert!(
        hit.hit_uv.abs_diff_eq(Vec2::new(0.0, 0.5), 1e-5),
        "uv {:?}",
        hit.hit_uv
    );

    // The walk: one axis per step, x first in every tie.
    let walk: Vec<[i128; 3]> = VoxelTraversal::new(&r)
        .take(7)
        .map(|s| s.voxel.to_array())
        .collect();
    assert_eq!(
        walk,
        [
            [0, 0, 0],
            [1, 0, 0],
            [1, 1, 0],
            [2, 1, 0],
            [2, 2, 0],
            [3, 2, 0],
            [3, 3, 0]
        ],
        "{}",
        describe(&r)
    );
    // A solid beside the diagonal that the walk does not enter does not stop it.
    let beside = world_with(&[
        (WorldPos::new(0, 1, 0), STONE),
        (WorldPos::new(2, 3, 0), STONE),
        (target, STONE),
    ]);
    assert_eq!(
        voxel_raycast(&r, &beside).map(|h| h.voxel_pos),
        Some(target),
        "{}",
        describe(&r)
    );

    // From the corner (0, 0) the distance to the edge (3, 3) is exactly 3·√2.
    let r = ray_at([0, 0, 0], [0.0, 0.0, 0.5], [1.0, 1.0, 0.0], 10.0);
    let hit = voxel_raycast(&r, &world).unwrap_or_else(|| panic!("no hit for {}", describe(&r)));
    assert_eq!(
        (hit.voxel_pos, hit.face_normal),
        (target, IVec3::NEG_Y),
        "{}",
        describe(&r)
    );
    let exact = 3.0 * std::f64::consts::SQRT_2;
    assert!(
        (f64::from(hit.distance) - exact).abs() < 1e-4,
        "distance {} != {exact} for {}",
        hit.distance,
        describe(&r)
    );
}

#[test]
fn test_ray_returns_correct_voxel_type() {
    let mut world = world_with(&[
        (WorldPos::new(5, 0, 0), STONE),
        (WorldPos::new(10, 0, 0), DIRT),
    ]);
    let r = ray_at([0, 0, 0], [0.5; 3], [1.0, 0.0, 0.0], 20.0);
    let h = voxel_raycast(&r, &world).unwrap_or_else(|| panic!("no hit for {}", describe(&r)));
    assert_eq!(
        (h.voxel_pos, h.voxel_type),
        (WorldPos::new(5, 0, 0), STONE),
        "{}",
        describe(&r)
    );

    let past = ray_at([6, 0, 0], [0.5; 3], [1.0, 0.0, 0.0], 20.0);
    let h =
        voxel_raycast(&past, &world).unwrap_or_else(|| panic!("no hit for {}", describe(&past)));
    assert_eq!(
        (h.voxel_pos, h.voxel_type, h.distance),
        (WorldPos::new(10, 0, 0), DIRT, 3.5),
        "{}",
        describe(&past)
    );

    // Breaking the stone uncovers the dirt for the first ray too.
    let first = voxel_raycast(&r, &world).expect("hit");
    assert_eq!(break_block(&mut world, &first), Ok(STONE));
    let h = voxel_raycast(&r, &world).unwrap_or_else(|| panic!("no hit for {}", describe(&r)));
    assert_eq!(
        (h.voxel_pos, h.voxel_type),
        (WorldPos::new(10, 0, 0), DIRT),
        "{}",
        describe(&r)
    );
}

#[test]
fn place_and_break_through_a_hit() {
    const PLANK: VoxelId = VoxelId(9);
    let mut world = world_with(&[(WorldPos::new(5, 0, 0), STONE)]);
    let r = ray_at([0, 0, 0], [0.5; 3], [1.0, 0.0, 0.0], 20.0);
    let hit = voxel_raycast(&r, &world).expect("hits the stone");
    assert_eq!(hit.previous_pos(), Some(WorldPos::new(4, 0, 0)));

    assert_eq!(
        place_block(&mut world, &hit, PLANK),
        Ok(WorldPos::new(4, 0, 0))
    );
    assert_eq!(world.get_voxel(&WorldPos::new(4, 0, 0)), Some(PLANK));
    // The place is taken now: a second placement changes nothing.
    assert_eq!(
        place_block(&mut world, &hit, DIRT),
        Err(EditError::Occupied {
            voxel: WorldPos::new(4, 0, 0),
            found: PLANK
        })
    );
    assert_eq!(world.get_voxel(&WorldPos::new(4, 0, 0)), Some(PLANK));

    let plank_hit = voxel_raycast(&r, &world).expect("hits the plank");
    assert_eq!(
        (
            plank_hit.voxel_pos,
            plank_hit.distance,
            plank_hit.voxel_type
        ),
        (WorldPos::new(4, 0, 0), 3.5, PLANK)
    );
    assert_eq!(break_block(&mut world, &plank_hit), Ok(PLANK));
    // Broken already: the same hit again is stale, and so is a placement against it.
    let stale = Err(EditError::TargetChanged {
        voxel: WorldPos::new(4, 0, 0),
        expected: PLANK,
        found: Some(VoxelId::AIR),
    });
    assert_eq!(break_block(&mut world, &plank_hit), stale);
    assert_eq!(
        place_block(&mut world, &plank_hit, DIRT),
        stale.map(|_| WorldPos::ZERO)
    );
    assert_eq!(world.get_voxel(&WorldPos::new(3, 0, 0)), Some(VoxelId::AIR));
    assert_eq!(world.get_voxel(&WorldPos::new(4, 0, 0)), Some(VoxelId::AIR));
    assert_eq!(
        voxel_raycast(&r, &world).map(|h| h.voxel_pos),
        Some(WorldPos::new(5, 0, 0))
    );

    // A hit in the origin voxel has no face to place against.
    let inside = ray_at([5, 0, 0], [0.5; 3], [1.0, 0.0, 0.0], 20.0);
    let origin_hit = voxel_raycast(&inside, &world).expect("origin voxel");
    assert_eq!(origin_hit.face_normal, IVec3::ZERO);
    assert_eq!(
        place_block(&mut world, &origin_hit, PLANK),
        Err(EditError::NoFace(WorldPos::new(5, 0, 0)))
    );

    // Placing into an unloaded chunk loads it; breaking in an unloaded chunk does nothing.
    world.set_voxel(WorldPos::ZERO, STONE);
    let edge_hit = VoxelRaycastHit {
        voxel_pos: WorldPos::ZERO,
        face_normal: IVec3::NEG_X,
        ..hit
    };
    assert!(!world.is_loaded(WorldPos::new(-1, 0, 0).chunk()));
    // Placing air is not placing a block: nothing changes, no chunk is loaded.
    assert_eq!(
        place_block(&mut world, &edge_hit, VoxelId::AIR),
        Err(EditError::PlaceAir)
    );
    assert!(!world.is_loaded(WorldPos::new(-1, 0, 0).chunk()));
    assert_eq!(
        place_block(&mut world, &hit, VoxelId::AIR),
        Err(EditError::PlaceAir)
    );
    assert_eq!(
        place_block(&mut world, &edge_hit, PLANK),
        Ok(WorldPos::new(-1, 0, 0))
    );
    assert_eq!(world.get_voxel(&WorldPos::new(-1, 0, 0)), Some(PLANK));
    let far = VoxelRaycastHit {
        voxel_pos: WorldPos::new(1000, 0, 0),
        ..hit
    };
    assert_eq!(
        break_block(&mut world, &far),
        Err(EditError::TargetChanged {
            voxel: far.voxel_pos,
            expected: STONE,
            found: None
        })
    );
    assert!(!world.is_loaded(far.voxel_pos.chunk()));

    // At the edge of the i128 world there is no voxel in front of the face.
    let rim = VoxelRaycastHit {
        voxel_pos: WorldPos::new(i128::MAX, 0, 0),
        face_normal: IVec3::X,
        ..hit
    };
    assert_eq!(rim.previous_pos(), None);
    world.set_voxel(rim.voxel_pos, STONE);
    assert_eq!(
        place_block(&mut world, &rim, PLANK),
        Err(EditError::NoFace(rim.voxel_pos))
    );
    let rim = VoxelRaycastHit {
        voxel_pos: WorldPos::new(0, i128::MIN, 0),
        face_normal: IVec3::NEG_Y,
        ..hit
    };
    assert_eq!(rim.previous_pos(), None);
}

#[test]
fn hit_uv_on_every_face() {
    let target = WorldPos::new(5, 0, 0);
    let world = world_with(&[(target, STONE)]);
    // Distinct u and v (0.25, 0.75) so that a swapped or mirrored axis shows.
    let cases = [
        ([0, 0, 0], [0.5, 0.25, 0.75], [1.0, 0.0, 0.0]),
        ([10, 0, 0], [0.5, 0.25, 0.75], [-1.0, 0.0, 0.0]),
        ([5, -5, 0], [0.25, 0.5, 0.75], [0.0, 1.0, 0.0]),
        ([5, 5, 0], [0.25, 0.5, 0.75], [0.0, -1.0, 0.0]),
        ([5, 0, -5], [0.25, 0.75, 0.5], [0.0, 0.0, 1.0]),
        ([5, 0, 5], [0.25, 0.75, 0.5], [0.0, 0.0, -1.0]),
    ];
    for (origin, sub, dir) in cases {
        let r = ray_at(origin, sub, dir, 10.0);
        let hit =
            voxel_raycast(&r, &world).unwrap_or_else(|| panic!("no hit for {}", describe(&r)));
        assert_eq!(hit.voxel_pos, target, "{}", describe(&r));
        assert_eq!(hit.hit_uv, Vec2::new(0.25, 0.75), "{}", describe(&r));
    }
    // An oblique ray: the uv is where the line meets the face.
    let r = ray(
        WorldPos::ZERO,
        Vec3::new(0.5, 0.5, 0.5),
        Vec3::new(4.5, 0.2, -0.1),
        10.0,
    );
    let hit = voxel_raycast(&r, &world).unwrap_or_else(|| panic!("no hit for {}", describe(&r)));
    assert_eq!(
        (hit.voxel_pos, hit.face_normal),
        (target, IVec3::NEG_X),
        "{}",
        describe(&r)
    );
    assert!(
        hit.hit_uv.abs_diff_eq(Vec2::new(0.7, 0.4), 1e-5),
        "uv {:?} for {}",
        hit.hit_uv,
        describe(&r)
    );
}
