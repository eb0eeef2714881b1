//! Skipping empty space changes no bit of any answer: every skip (runs of empty chunks in a
//! region, empty bricks, the air above the column tops) is compared ray by ray with stepping
//! voxel by voxel (`RaycastOptions::per_voxel`), and hits report the ids that were set.

use voxcast_testkit::common;

use common::{describe, dir_component, region_rays, region_world, sub_of_kind};
use voxcast::glam::Vec3;
use voxcast::{
    ChunkPos, LineOfSightOptions, MaterialFilter, OriginPolicy, RaycastOptions, RaycastOutcome,
    UnloadedPolicy, VoxelId, VoxelRay, VoxelWorld, WorldPos, line_of_sight_batch, raycast_batch,
};
use voxcast_testkit::scene::{self, SplitMix64};

fn compare_skip_vs_per_voxel(
    name: &str,
    world: &VoxelWorld,
    rays: &[VoxelRay],
    opts: &RaycastOptions,
) -> usize {
    let per_voxel = RaycastOptions {
        per_voxel: true,
        ..opts.clone()
    };
    let fast = raycast_batch(rays, world, opts);
    let slow = raycast_batch(rays, world, &per_voxel);
    let mut hits = 0;
    for (i, (f, s)) in fast.iter().zip(&slow).enumerate() {
        assert!(
            f == s,
            "{name}: ray {i} {}\n  skipping: {f:?}\n  per voxel: {s:?}\n  options {opts:?}",
            describe(&rays[i])
        );
        assert!(
            !matches!(f, RaycastOutcome::Invalid(_)),
            "{name}: ray {i} invalid"
        );
        hits += usize::from(matches!(f, RaycastOutcome::Hit(_)));
    }
    // A scene where nothing is hit would prove nothing about skipping.
    assert!(hits > 0, "{name}: no ray hit anything");
    rays.len()
}

fn compare_los(
    name: &str,
    world: &VoxelWorld,
    rays: &[VoxelRay],
    opts: &LineOfSightOptions,
) -> usize {
    let per_voxel = LineOfSightOptions {
        raycast: RaycastOptions {
            per_voxel: true,
            ..opts.raycast.clone()
        },
        ..opts.clone()
    };
    let fast = line_of_sight_batch(rays, world, opts);
    let slow = line_of_sight_batch(rays, world, &per_voxel);
    for (i, (f, s)) in fast.iter().zip(&slow).enumerate() {
        assert!(
            f == s,
            "{name}: segment {i} {}\n  skipping: {f:?}\n  per voxel: {s:?}",
            describe(&rays[i])
        );
    }
    rays.len()
}

#[test]
fn skipping_is_exact() {
    let terrain = scene::Terrain {
        size: [128, 64, 128],
        seed: 0x5EED,
    };
    let mut tworld = terrain.build();
    let sparse = scene::Sparse {
        size: 96,
        density: 0.01,
        seed: 0x5BA5,
    };
    let mut sworld = sparse.build();

    let mut terrain_rays = terrain.reach_rays(20_000, 1);
    terrain_rays.extend(terrain.sight_segments(12_000, 64.0, 2));
    terrain_rays.extend(terrain.camera(80, 60).rays().expect("camera rays"));
    // Rays along chunk faces and through chunk edges: integer and half-integer origins with
    // axis-aligned and 45-degree directions.
    let mut rng = SplitMix64::new(3);
    for _ in 0..4_000 {
        let o = [rng.below(128), 20 + rng.below(44), rng.below(128)]
            .map(|v| i128::from((v as u32 & !31) | ((v as u32 & 1) * 31)));
        let sub = [0, 1, 2].map(|_| sub_of_kind(rng.below(2) as u8, 0.0));
        let dir = [0, 1, 2].map(|_| dir_component(rng.below(4) as u8, 0.0));
        if dir.iter().any(|&c| c != 0.0) {
            terrain_rays.push(common::ray_at(o, sub, dir, 200.0));
        }
    }
    let mut sparse_rays = sparse.rays(12_000, 4);
    sparse_rays.extend(terrain.reach_rays(2_000, 5).into_iter().map(|r| VoxelRay {
        max_distance: 300.0,
        ..r
    }));

    let mut total = 0;
    let filter = MaterialFilter::every_non_air().without(scene::WATER);
    for (name, world, rays) in [
        ("terrain", &tworld, &terrain_rays),
        ("sparse", &sworld, &sparse_rays),
    ] {
        for policy in common::ORIGIN_POLICIES {
            let opts = RaycastOptions {
                origin: policy,
                ..RaycastOptions::default()
            };
            total += compare_skip_vs_per_voxel(&format!("{name} {policy:?}"), world, rays, &opts);
        }
        let opts = RaycastOptions {
            blocks: filter.clone(),
            ..RaycastOptions::default()
        };
        total += compare_skip_vs_per_voxel(&format!("{name} without water"), world, rays, &opts);
        let los = LineOfSightOptions {
            raycast: opts,
            conservative: true,
        };
        total += compare_los(&format!("{name} conservative"), world, rays, &los);
    }

    // Each walk forced on both worlds: skipping for short rays and among scattered voxels,
    // stepping for the terrain's long rays.
    for skip in [true, false] {
        for (name, world, rays) in [
            ("terrain", &tworld, &terrain_rays),
            ("sparse", &sworld, &sparse_rays),
        ] {
            let mut forced = world.clone();
            forced.set_skip_empty_bricks(Some(skip));
            total += compare_skip_vs_per_voxel(
                &format!("{name} skip_empty_bricks={skip}"),
                &forced,
                rays,
                &RaycastOptions::default(),
            );
        }
    }

    // Unloaded chunks that stop the ray: remove a few, inside and on the edge of the bounds.
    for c in [
        ChunkPos::new(1, 0, 1),
        ChunkPos::new(2, 1, 2),
        ChunkPos::new(0, 1, 3),
        ChunkPos::new(3, 0, 0),
    ] {
        assert!(tworld.remove_chunk(c).is_some(), "terrain chunk {c:?}");
    }
    for c in [
        ChunkPos::new(1, 1, 1),
        ChunkPos::new(0, 2, 1),
        ChunkPos::new(2, 2, 2),
    ] {
        assert!(sworld.remove_chunk(c).is_some(), "sparse chunk {c:?}");
    }
    for (name, world, rays) in [
        ("terrain", &tworld, &terrain_rays),
        ("sparse", &sworld, &sparse_rays),
    ] {
        for policy in [OriginPolicy::Report, OriginPolicy::SkipOriginVoxel] {
            let opts = RaycastOptions {
                origin: policy,
                unloaded: UnloadedPolicy::Stop,
                ..RaycastOptions::default()
            };
            let outcomes = raycast_batch(rays, world, &opts);
            assert!(
                outcomes
                    .iter()
                    .any(|o| matches!(o, RaycastOutcome::Unloaded { .. })),
                "{name}: nothing unloaded"
            );
            total +=
                compare_skip_vs_per_voxel(&format!("{name} stop {policy:?}"), world, rays, &opts);
        }
        let opts = RaycastOptions {
            unloaded: UnloadedPolicy::Air,
            ..RaycastOptions::default()
        };
        total += compare_skip_vs_per_voxel(&format!("{name} holes as air"), world, rays, &opts);
    }
    println!("skip vs per-voxel: {total} ray comparisons");
    assert!(total >= 200_000, "only {total} rays compared");
}

/// The skips above the column tops (the air over the highest non-air voxel of each column of
/// bricks, per region of 4x4x4 chunks) on a terrain that fills one region: under both unloaded
/// policies (`Stop` uses them only in fully loaded regions), after edits that raise and lower
/// the tops, and with a chunk of the region unloaded.
#[test]
fn column_skips_are_exact() {
    let terrain = scene::Terrain {
        size: [128, 128, 128],
        seed: 0xC01,
    };
    let mut world = terrain.build();
    let mut rays = terrain.camera(96, 54).rays().expect("camera rays");
    rays.extend(terrain.sight_segments(6_000, 128.0, 1));
    rays.extend(terrain.reach_rays(6_000, 2).into_iter().map(|r| VoxelRay {
        max_distance: 300.0,
        ..r
    }));
    let mut total = 0;
    let mut compare = |name: &str, world: &VoxelWorld| {
        for unloaded in [UnloadedPolicy::Air, UnloadedPolicy::Stop] {
            for origin in common::ORIGIN_POLICIES {
                let opts = RaycastOptions {
                    origin,
                    unloaded,
                    ..RaycastOptions::default()
                };
                total += compare_skip_vs_per_voxel(
                    &format!("{name} {unloaded:?} {origin:?}"),
                    world,
                    &rays,
                    &opts,
                );
            }
        }
    };
    compare("terrain", &world);
    // Towers that raise column tops, then torn down to below where they started.
    let mut rng = SplitMix64::new(9);
    for _ in 0..40 {
        let (x, z) = (rng.below(128) as i128, rng.below(128) as i128);
        for y in 60..110 {
            world.set_voxel(WorldPos::new(x, y, z), VoxelId(1));
        }
    }
    compare("towers", &world);
    for x in 0..128 {
        for z in (0..128).step_by(3) {
            for y in (50..110).rev() {
                world.set_voxel(WorldPos::new(x, y, z), VoxelId::AIR);
            }
        }
    }
    compare("torn down", &world);
    // One in the air above the ground, which the boxes above the tops span (`Stop` must not
    // skip it), and one below.
    for c in [ChunkPos::new(1, 3, 2), ChunkPos::new(2, 1, 1)] {
        assert!(world.remove_chunk(c).is_some());
    }
    compare("chunks unloaded", &world);
    assert!(total >= 200_000, "only {total} rays compared");
}

#[test]
fn region_runs_are_exact() {
    let mut total = 0;
    // Near the origin, and far out with regions that do not start at a multiple of 4 of the
    // base.
    for (base, seed) in [
        ([0, 0, 0], 11u64),
        ([(1 << 100) + 1, -(1 << 90) - 3, 2], 12),
    ] {
        let world = region_world(base, seed);
        let rays = region_rays(base, seed ^ 0xABC, 24_000);
        let filter = MaterialFilter::every_non_air().without(VoxelId(2));
        for unloaded in [UnloadedPolicy::Air, UnloadedPolicy::Stop] {
            for policy in common::ORIGIN_POLICIES {
                let opts = RaycastOptions {
                    origin: policy,
                    unloaded,
                    ..RaycastOptions::default()
                };
                let name = format!("regions {base:?} {unloaded:?} {policy:?}");
                total += compare_skip_vs_per_voxel(&name, &world, &rays, &opts);
            }
            let opts = RaycastOptions {
                blocks: filter.clone(),
                unloaded,
                ..RaycastOptions::default()
            };
            let name = format!("regions {base:?} {unloaded:?} without id 2");
            total += compare_skip_vs_per_voxel(&name, &world, &rays, &opts);
            let los = LineOfSightOptions {
                raycast: opts,
                conservative: true,
            };
            total += compare_los(
                &format!("regions {base:?} {unloaded:?} conservative"),
                &world,
                &rays,
                &los,
            );
        }
    }
    println!("region runs: {total} ray comparisons");
}

/// Chunks with few distinct ids (packed in 2, 4 or 8 bits a voxel) and many (stored raw),
/// edited after they were filled: every hit of every walk (short rays reading ids beside the
/// occupancy bits, long rays, per-voxel stepping) reports the id the test set, checked against
/// the test's own copy.
#[test]
fn hit_ids_match_what_was_set_at_every_id_width() {
    let mut rng = SplitMix64::new(0x1D5);
    let mut world = VoxelWorld::new();
    let mut truth = std::collections::HashMap::new();
    let random_voxel = |rng: &mut SplitMix64, cx: i128| {
        WorldPos::new(
            cx * 32 + i128::from(rng.below(32)),
            i128::from(rng.below(32)),
            i128::from(rng.below(32)),
        )
    };
    // Chunks 0..4 along x with ids drawn from 3, 12, 200 and 1,000 kinds.
    let kinds = [3u64, 12, 200, 1000];
    for round in 0..2 {
        for (cx, &k) in kinds.iter().enumerate() {
            for _ in 0..1500 {
                let p = random_voxel(&mut rng, cx as i128);
                // The second round also clears voxels.
                let id = if round == 1 && rng.below(3) == 0 {
                    VoxelId::AIR
                } else {
                    VoxelId(1 + rng.below(k) as u16)
                };
                world.set_voxel(p, id);
                truth.insert(p, id);
            }
        }
    }
    for (p, id) in &truth {
        assert_eq!(world.get_voxel(p), Some(*id), "{p:?}");
    }
    let rays: Vec<VoxelRay> = (0..30_000)
        .map(|i| {
            let cx = i128::from(rng.below(4));
            let p = random_voxel(&mut rng, cx);
            let sub = Vec3::new(rng.next_f32(), rng.next_f32(), rng.next_f32());
            let max = [8.0, 64.0, 300.0][i % 3];
            common::ray(p, sub, rng.unit_vector(), max)
        })
        .collect();
    for per_voxel in [false, true] {
        let opts = RaycastOptions {
            per_voxel,
            ..RaycastOptions::default()
        };
        let mut hits_per_chunk = [0; 4];
        for (i, out) in raycast_batch(&rays, &world, &opts).iter().enumerate() {
            if let RaycastOutcome::Hit(h) = out {
                let set = truth.get(&h.voxel_pos).copied().unwrap_or(VoxelId::AIR);
                assert_eq!(
                    h.voxel_type,
                    set,
                    "per_voxel {per_voxel}: ray {i} {} hit {:?}",
                    describe(&rays[i]),
                    h.voxel_pos
                );
                hits_per_chunk[(h.voxel_pos.x >> 5) as usize] += 1;
            }
        }
        assert!(
            hits_per_chunk.iter().all(|&n| n > 1000),
            "per_voxel {per_voxel}: hits per chunk {hits_per_chunk:?}"
        );
    }
    // Every id above 3 cleared in the chunks of 200 and 1,000 kinds: they keep their wide
    // packing (64 KiB of records each) until `shrink_to_fit`, which changes no answer.
    for (p, id) in &mut truth {
        if p.x >= 64 && id.0 > 3 {
            *id = VoxelId::AIR;
            world.set_voxel(*p, VoxelId::AIR);
        }
    }
    let opts = RaycastOptions::default();
    let before = raycast_batch(&rays, &world, &opts);
    let bytes = world.memory_bytes();
    world.shrink_to_fit();
    let saved = bytes.saturating_sub(world.memory_bytes());
    assert!(saved >= 2 * 48 * 1024, "shrink_to_fit saved {saved} bytes");
    assert_eq!(raycast_batch(&rays, &world, &opts), before);
    for (p, id) in &truth {
        assert_eq!(world.get_voxel(p), Some(*id), "{p:?}");
    }
}
