//! Edge cases of coordinates: negative coordinates, start points on faces, edges and corners,
//! signed zeros, translation far from the origin and the edges of the i128 world. Max distance,
//! unloaded space and material filters are in `options.rs`; line of sight and bad input have
//! test files of their own.

use voxcast_testkit::common;

use common::{
    describe, dir_component, expect_hit, offset, opts, random_solids, ray, ray_at, sub_of_kind,
    world_with,
};
use voxcast::glam::{IVec3, Vec3};
use voxcast::{
    ChunkPos, LineOfSight, LineOfSightOptions, OriginPolicy, RaycastOptions, RaycastOutcome,
    UnloadedPolicy, VoxelId, VoxelRay, VoxelRaycastHit, VoxelTraversal, VoxelWorld, WorldPos,
    line_of_sight, voxel_raycast_with,
};
use voxcast_testkit::scene::SplitMix64;

const STONE: VoxelId = VoxelId(1);

#[test]
fn negative_coordinates() {
    // Chunk -2, local 31: the face x = -32 is 37.5 from x = 5.5.
    let world = world_with(&[(WorldPos::new(-33, 0, 0), STONE)]);
    let r = ray_at([5, 0, 0], [0.5; 3], [-1.0, 0.0, 0.0], 100.0);
    let h = expect_hit(&r, &world, &RaycastOptions::default());
    assert_eq!(
        (h.voxel_pos, h.face_normal, h.distance),
        (WorldPos::new(-33, 0, 0), IVec3::X, 37.5),
        "{}",
        describe(&r)
    );
    // And from the other side, crossing chunks -3 .. -2 upwards.
    let r = ray_at([-70, 0, 0], [0.5; 3], [1.0, 0.0, 0.0], 100.0);
    let h = expect_hit(&r, &world, &RaycastOptions::default());
    assert_eq!(
        (h.voxel_pos, h.face_normal, h.distance),
        (WorldPos::new(-33, 0, 0), IVec3::NEG_X, 36.5),
        "{}",
        describe(&r)
    );

    // Down the main diagonal through the corners (3,3,3) .. (0,0,0) into voxel (-1,-1,-1),
    // entered through its +z face (ties go x, y, z) at 3.5·√3.
    let world = world_with(&[(WorldPos::new(-1, -1, -1), STONE)]);
    let r = ray_at([3, 3, 3], [0.5; 3], [-1.0, -1.0, -1.0], 20.0);
    let h = expect_hit(&r, &world, &RaycastOptions::default());
    assert_eq!(
        (h.voxel_pos, h.face_normal),
        (WorldPos::new(-1, -1, -1), IVec3::Z),
        "{}",
        describe(&r)
    );
    assert!(
        (f64::from(h.distance) - 3.5 * 3f64.sqrt()).abs() < 1e-4,
        "{h:?}"
    );

    // Every voxel of a negative block, aimed at through its center from far away.
    let mut rng = SplitMix64::new(0xBAD);
    for _ in 0..500 {
        let target = WorldPos::new(
            -(rng.below(100) as i128) - 1,
            -(rng.below(100) as i128) - 1,
            -(rng.below(100) as i128) - 1,
        );
        let from = WorldPos::new(
            rng.below(40) as i128,
            rng.below(40) as i128,
            rng.below(40) as i128,
        );
        let world = world_with(&[(target, STONE)]);
        let r = VoxelRay::between(from, Vec3::splat(0.5), target, Vec3::splat(0.5))
            .expect("valid segment");
        let h = expect_hit(&r, &world, &RaycastOptions::default());
        assert_eq!(h.voxel_pos, target, "{}", describe(&r));
        assert!(
            h.face_normal.cmpge(IVec3::ZERO).all() && h.face_normal != IVec3::ZERO,
            "{h:?}"
        );
    }
}

/// Start points exactly on faces, edges and corners, in all eight sign combinations of the
/// origin and every combination of ±1 and ±0.0 directions: the start voxel is the origin,
/// minus one on each axis where the start point is on the low face and the direction is
/// negative (`-0.0` is not negative).
#[test]
fn start_voxel_on_faces_edges_and_corners() {
    let mut checked = 0;
    for signs in 0..8 {
        let origin = WorldPos::new(
            if signs & 1 == 0 { 5 } else { -5 },
            if signs & 2 == 0 { 6 } else { -38 },
            if signs & 4 == 0 { 7 } else { -33 },
        );
        for on in 1..=3usize {
            // on = 1: a face (x), 2: an edge (x, y), 3: a corner.
            let sub = Vec3::from_array(std::array::from_fn(|a| if a < on { 0.0 } else { 0.5 }));
            let choices = |a: usize| -> Vec<f32> {
                if a < on {
                    vec![1.0, -1.0, 0.0, -0.0]
                } else {
                    vec![1.0, -1.0, 0.0]
                }
            };
            for &dx in &choices(0) {
                for &dy in &choices(1) {
                    for &dz in &choices(2) {
                        let dir = Vec3::new(dx, dy, dz);
                        if dir == Vec3::ZERO {
                            continue;
                        }
                        check_start_voxel(origin, sub, dir, on);
                        checked += 1;
                    }
                }
            }
        }
    }
    // Per sign combination: 4·3·3, 4·4·3 and 4·4·4 directions, less the all-zero ones (2, 4, 8).
    assert_eq!(checked, 8 * ((36 - 2) + (48 - 4) + (64 - 8)));
}

fn check_start_voxel(origin: WorldPos, sub: Vec3, dir: Vec3, on: usize) {
    let r = ray(origin, sub, dir, 10.0);
    let ctx = describe(&r);
    let expected = WorldPos::from_array(std::array::from_fn(|a| {
        origin.axis(a) - i128::from(a < on && dir[a] < 0.0)
    }));
    let first = VoxelTraversal::new(&r)
        .next()
        .unwrap_or_else(|| panic!("empty walk: {ctx}"));
    assert_eq!(first.voxel, expected, "walk start: {ctx}");

    // A solid in the start voxel is hit at once.
    let world = world_with(&[(expected, STONE)]);
    let h = expect_hit(&r, &world, &RaycastOptions::default());
    assert_eq!(
        (h.voxel_pos, h.distance, h.face_normal),
        (expected, 0.0, IVec3::ZERO),
        "{ctx}"
    );

    // Every other voxel touching the start point is never entered: the ray starts on their
    // face and moves away from them or along it.
    let touching: Vec<WorldPos> = (0..1 << on)
        .map(|m: usize| {
            WorldPos::from_array(std::array::from_fn(|a| {
                origin.axis(a) - i128::from(a < on && m >> a & 1 == 1)
            }))
        })
        .collect();
    assert!(touching.contains(&expected));
    let others: Vec<(WorldPos, VoxelId)> = touching
        .iter()
        .filter(|&&p| p != expected)
        .map(|&p| (p, STONE))
        .collect();
    let world = world_with(&others);
    let o = voxel_raycast_with(&r, &world, &RaycastOptions::default());
    assert_eq!(
        o,
        RaycastOutcome::Miss,
        "a neighbour of the start voxel was hit: {ctx}"
    );
    // All of them solid, start voxel included: skipping the origin voxel leaves nothing to hit.
    let all: Vec<(WorldPos, VoxelId)> = touching.iter().map(|&p| (p, STONE)).collect();
    let world = world_with(&all);
    let o = voxel_raycast_with(
        &r,
        &world,
        &opts(OriginPolicy::SkipOriginVoxel, UnloadedPolicy::Air),
    );
    assert_eq!(o, RaycastOutcome::Miss, "SkipOriginVoxel: {ctx}");
}

fn flip_zero_signs(d: Vec3) -> Vec3 {
    Vec3::from_array(d.to_array().map(|c| if c == 0.0 { -c } else { c }))
}

#[test]
fn signed_zero_directions_agree() {
    let solids = random_solids(0x5160, WorldPos::new(-6, -6, -6), 12, 0.12, 3);
    let mut world = world_with(&solids);
    world.remove_chunk(ChunkPos::new(-1, 0, -1));
    let mut rng = SplitMix64::new(0x2E80);
    let mut compared = 0;
    while compared < 3000 {
        let origin = [0, 1, 2].map(|_| rng.below(16) as i128 - 8);
        let sub = [0, 1, 2].map(|_| sub_of_kind(rng.below(3) as u8, rng.next_f32()));
        let dir = [0, 1, 2].map(|_| dir_component(rng.below(6) as u8, rng.next_f32()));
        if dir.iter().all(|&c| c == 0.0) || dir.iter().all(|&c| c != 0.0) {
            continue;
        }
        let r = ray_at(origin, sub, dir, 30.0);
        let flipped = VoxelRay {
            direction: flip_zero_signs(r.direction),
            ..r
        };
        assert_ne!(
            r.direction.to_array().map(f32::to_bits),
            flipped.direction.to_array().map(f32::to_bits)
        );
        for unloaded in [UnloadedPolicy::Air, UnloadedPolicy::Stop] {
            for policy in [
                OriginPolicy::Report,
                OriginPolicy::SkipOriginVoxel,
                OriginPolicy::ExitSolid,
            ] {
                let o = opts(policy, unloaded);
                assert_eq!(
                    voxel_raycast_with(&r, &world, &o),
                    voxel_raycast_with(&flipped, &world, &o),
                    "{} vs {}",
                    describe(&r),
                    describe(&flipped)
                );
            }
        }
        let a: Vec<_> = VoxelTraversal::new(&r).collect();
        let b: Vec<_> = VoxelTraversal::new(&flipped).collect();
        assert_eq!(a, b, "{}", describe(&r));
        compared += 1;
    }
}

/// A world moved by (2^100, -2^90, 2^120) answers every ray exactly as at the origin: the
/// voxel moves, nothing else changes by a single bit.
#[test]
fn translation_changes_nothing() {
    let shift = [1i128 << 100, -(1i128 << 90), 1i128 << 120];
    let solids = random_solids(0x7A45, WorldPos::new(-8, -8, -8), 16, 0.1, 3);
    let near = world_with(&solids);
    let moved: Vec<(WorldPos, VoxelId)> = solids
        .iter()
        .map(|&(p, id)| (offset(p, shift), id))
        .collect();
    let far = world_with(&moved);
    let mut rng = SplitMix64::new(0xF42);
    let mut hits = 0;
    for i in 0..3000 {
        let origin = [0, 1, 2].map(|_| rng.below(24) as i128 - 12);
        let sub = [0, 1, 2].map(|_| sub_of_kind(rng.below(3) as u8, rng.next_f32()));
        let dir = [0, 1, 2].map(|_| dir_component(rng.below(6) as u8, rng.next_f32()));
        if dir.iter().all(|&c| c == 0.0) {
            continue;
        }
        let r = ray_at(origin, sub, dir, rng.next_f32() * 40.0);
        let rf = VoxelRay {
            origin: offset(r.origin, shift),
            ..r
        };
        let policy = [
            OriginPolicy::Report,
            OriginPolicy::SkipOriginVoxel,
            OriginPolicy::ExitSolid,
        ][i % 3];
        let unloaded = if i % 2 == 0 {
            UnloadedPolicy::Air
        } else {
            UnloadedPolicy::Stop
        };
        let o = opts(policy, unloaded);
        let a = voxel_raycast_with(&r, &near, &o);
        let b = voxel_raycast_with(&rf, &far, &o);
        let moved_a = match a {
            RaycastOutcome::Hit(h) => {
                hits += 1;
                RaycastOutcome::Hit(VoxelRaycastHit {
                    voxel_pos: offset(h.voxel_pos, shift),
                    ..h
                })
            }
            RaycastOutcome::Unloaded {
                voxel_pos: at,
                distance,
            } => RaycastOutcome::Unloaded {
                voxel_pos: offset(at, shift),
                distance,
            },
            other => other,
        };
        // PartialEq on f32 would let -0.0 equal 0.0: compare the distance bits too.
        assert_eq!(
            moved_a,
            b,
            "{} moved by {shift:?}, {policy:?} {unloaded:?}",
            describe(&r)
        );
        let bits = |o: &RaycastOutcome| match o {
            RaycastOutcome::Hit(h) => Some((
                h.distance.to_bits(),
                h.hit_uv.x.to_bits(),
                h.hit_uv.y.to_bits(),
            )),
            RaycastOutcome::Unloaded { distance, .. } => Some((distance.to_bits(), 0, 0)),
            _ => None,
        };
        assert_eq!(bits(&a), bits(&b), "{}", describe(&r));
    }
    assert!(hits > 300, "only {hits} hits: the comparison proves little");
}

#[test]
fn edges_of_the_i128_world() {
    for unloaded in [UnloadedPolicy::Air, UnloadedPolicy::Stop] {
        let o = opts(OriginPolicy::Report, unloaded);
        for axis in 0..3 {
            let at = |v: i128| {
                WorldPos::from_array(std::array::from_fn(|a| if a == axis { v } else { 0 }))
            };
            let dir =
                |s: f32| Vec3::from_array(std::array::from_fn(|a| if a == axis { s } else { 0.0 }));

            // Towards i128::MAX: the last voxel is hit 2.5 away; without it the ray misses.
            let r = ray(at(i128::MAX - 3), Vec3::splat(0.5), dir(1.0), 10.0);
            let world = world_with(&[(at(i128::MAX), STONE)]);
            let h = expect_hit(&r, &world, &o);
            assert_eq!(
                (h.voxel_pos, h.distance),
                (at(i128::MAX), 2.5),
                "{}",
                describe(&r)
            );
            assert_eq!(h.previous_pos(), Some(at(i128::MAX - 1)));
            let loaded_empty = world_with(&[(at(i128::MAX - 20), STONE)]);
            assert_eq!(
                voxel_raycast_with(&r, &loaded_empty, &o),
                RaycastOutcome::Miss,
                "{} {unloaded:?}",
                describe(&r)
            );
            let walk: Vec<i128> = VoxelTraversal::new(&r)
                .map(|s| s.voxel.axis(axis))
                .collect();
            assert_eq!(
                walk,
                [i128::MAX - 3, i128::MAX - 2, i128::MAX - 1, i128::MAX],
                "{}",
                describe(&r)
            );
            // From far outside the loaded chunk (clipped to it under Air).
            let r = ray(at(i128::MAX - 1000), Vec3::splat(0.5), dir(1.0), 2000.0);
            let o_out = voxel_raycast_with(&r, &world, &o);
            match unloaded {
                UnloadedPolicy::Air => {
                    let h = o_out
                        .hit()
                        .unwrap_or_else(|| panic!("{o_out:?} for {}", describe(&r)));
                    assert_eq!(
                        (h.voxel_pos, h.distance),
                        (at(i128::MAX), 999.5),
                        "{}",
                        describe(&r)
                    );
                }
                UnloadedPolicy::Stop => {
                    assert_eq!(
                        o_out,
                        RaycastOutcome::Unloaded {
                            voxel_pos: at(i128::MAX - 1000),
                            distance: 0.0
                        },
                        "{}",
                        describe(&r)
                    );
                }
            }

            // Towards i128::MIN.
            let r = ray(at(i128::MIN + 3), Vec3::splat(0.5), dir(-1.0), 10.0);
            let world = world_with(&[(at(i128::MIN), STONE)]);
            let h = expect_hit(&r, &world, &o);
            assert_eq!(
                (h.voxel_pos, h.distance),
                (at(i128::MIN), 2.5),
                "{}",
                describe(&r)
            );
            let loaded_empty = world_with(&[(at(i128::MIN + 20), STONE)]);
            assert_eq!(
                voxel_raycast_with(&r, &loaded_empty, &o),
                RaycastOutcome::Miss,
                "{} {unloaded:?}",
                describe(&r)
            );
            // Starting on the outer face of the world, moving out: nothing to walk, a miss.
            let r = ray(at(i128::MIN), Vec3::ZERO, dir(-1.0), 10.0);
            assert_eq!(VoxelTraversal::new(&r).count(), 0, "{}", describe(&r));
            assert_eq!(
                voxel_raycast_with(&r, &world, &o),
                RaycastOutcome::Miss,
                "{}",
                describe(&r)
            );
        }
        // The far corner, diagonally: through the corners into (MAX, MAX, MAX), then out.
        let m = i128::MAX;
        let r = ray(
            WorldPos::new(m - 2, m - 2, m - 2),
            Vec3::splat(0.5),
            Vec3::ONE,
            100.0,
        );
        let world = world_with(&[(WorldPos::new(m, m, m), STONE)]);
        let h = expect_hit(&r, &world, &o);
        assert_eq!(
            (h.voxel_pos, h.face_normal),
            (WorldPos::new(m, m, m), IVec3::NEG_Z),
            "{}",
            describe(&r)
        );
        let world = world_with(&[(WorldPos::new(m - 30, m - 30, m - 30), STONE)]);
        assert_eq!(
            voxel_raycast_with(&r, &world, &o),
            RaycastOutcome::Miss,
            "{}",
            describe(&r)
        );
        for conservative in [false, true] {
            let los = line_of_sight(
                &r,
                &world,
                &LineOfSightOptions {
                    raycast: o.clone(),
                    conservative,
                },
            );
            assert_eq!(los, LineOfSight::Clear, "{}", describe(&r));
        }
    }
}

/// Every integer overflow here would panic under the test profile (overflow checks on) and
/// wrap silently in a plain release build.
#[test]
fn world_and_ray_2_to_the_127_apart() {
    let mut far_world = VoxelWorld::new();
    far_world.set_voxel(WorldPos::new(1 << 126, 0, 0), STONE);
    let near_world = world_with(&[(WorldPos::ZERO, STONE)]);
    let from_min = WorldPos::new(i128::MIN, 0, 0);
    let from_far_low = WorldPos::new(-(1 << 126), 0, 0);
    for (world, origin) in [
        (&near_world, from_min),
        (&far_world, from_far_low),
        (&far_world, from_min),
    ] {
        for dir in [Vec3::X, Vec3::NEG_X, Vec3::new(1.0, 0.5, -0.25)] {
            let r = ray(origin, Vec3::splat(0.5), dir, 10.0);
            for unloaded in [UnloadedPolicy::Air, UnloadedPolicy::Stop] {
                for origin_policy in [OriginPolicy::Report, OriginPolicy::SkipOriginVoxel] {
                    let o = opts(origin_policy, unloaded);
                    let out = voxel_raycast_with(&r, world, &o);
                    // Under `Stop` the origin voxel's chunk is unloaded; skipping the origin
                    // voxel, an axis-parallel ray stops at the next voxel, or leaves the world.
                    let step = dir.signum().as_ivec3() * IVec3::X;
                    let expected = match (unloaded, origin_policy) {
                        (UnloadedPolicy::Air, _) => RaycastOutcome::Miss,
                        (UnloadedPolicy::Stop, OriginPolicy::Report) => RaycastOutcome::Unloaded {
                            voxel_pos: r.origin,
                            distance: 0.0,
                        },
                        _ => match r.origin.checked_offset(step) {
                            Some(at) => RaycastOutcome::Unloaded {
                                voxel_pos: at,
                                distance: 0.5,
                            },
                            None => RaycastOutcome::Miss,
                        },
                    };
                    // Skipping the origin voxel under `Stop`, an oblique ray's next voxel is
                    // not computed here; every other case is checked.
                    let oblique = dir != Vec3::X && dir != Vec3::NEG_X;
                    let steps_first = unloaded == UnloadedPolicy::Stop
                        && origin_policy == OriginPolicy::SkipOriginVoxel;
                    if !(oblique && steps_first) {
                        assert_eq!(out, expected, "{} under {o:?}", describe(&r));
                    }
                }
            }
            for conservative in [false, true] {
                let los = line_of_sight(
                    &r,
                    world,
                    &LineOfSightOptions {
                        conservative,
                        ..LineOfSightOptions::default()
                    },
                );
                assert_eq!(los, LineOfSight::Clear, "{}", describe(&r));
            }
        }
    }
}
