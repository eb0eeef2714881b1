//! The GPU after world edits: `update_chunks` (slots freed and grown, margin chunks refused,
//! nothing changed on an error), `update_or_rebuild` for a world that grew, and parity with the
//! CPU reference after each kind of edit (voxels, region runs, occupied bounds). Runs on
//! lavapipe in CI; see `voxcast_testkit::gpu`.

#![cfg(feature = "gpu")]

use voxcast::gpu::Rays;
use voxcast_testkit::common;

use voxcast_testkit::gpu::*;

use voxcast::gpu::{GpuError, GpuWorld};
use voxcast::{
    ChunkPos, RaycastOptions, UnloadedPolicy, VoxelId, VoxelWorld, WorldPos, raycast_batch,
};
use voxcast_testkit::scene::SplitMix64;

#[test]
fn parity_after_edit_and_update_chunks() {
    let Some(gpu) = gpu() else { return };
    let (s, sw) = sparse();
    let mut world = sw.clone();
    // A uniform chunk on the GPU, made dense below.
    let was_uniform = ChunkPos::new(3, 0, 3);
    world
        .insert_chunk(was_uniform, voxcast::Chunk::filled(VoxelId(2)))
        .expect("in the world");
    let mut gw = gpu.upload_world(&world).expect("upload");
    let mut rng = SplitMix64::new(40);
    let mut touched = vec![was_uniform];
    // Its top layer cleared: rays from above now hit a voxel lower.
    for (x, z) in (96..128).flat_map(|x| (96..128).map(move |z| (x, z))) {
        world.set_voxel(WorldPos::new(x, 31, z), VoxelId::AIR);
    }
    for _ in 0..2000 {
        let p = WorldPos::new(
            rng.below(128) as i128,
            rng.below(128) as i128,
            rng.below(128) as i128,
        );
        world.set_voxel(p, VoxelId(rng.below(4) as u16));
        touched.push(p.chunk());
    }
    // A chunk becoming uniform, one becoming dense from uniform, one unloaded.
    world
        .insert_chunk(ChunkPos::new(1, 1, 1), voxcast::Chunk::filled(VoxelId(3)))
        .expect("in the world");
    world.remove_chunk(ChunkPos::new(2, 2, 2));
    touched.extend([ChunkPos::new(1, 1, 1), ChunkPos::new(2, 2, 2)]);
    touched.sort();
    touched.dedup();
    gw.update_chunks(&world, &touched).expect("update");
    let rays = s.rays(100_000, 41);
    check(
        gpu,
        "after edits",
        &world,
        &gw,
        &rays,
        &RaycastOptions::default(),
    );
    check(
        gpu,
        "after edits, stop",
        &world,
        &gw,
        &rays,
        &RaycastOptions {
            unloaded: UnloadedPolicy::Stop,
            ..Default::default()
        },
    );
    // A chunk outside the window: skipped while unloaded, refused once loaded.
    let far = ChunkPos::new(100, 0, 0);
    assert_eq!(gw.update_chunks(&world, &[far]), Ok(()));
    world.set_voxel(far.origin(), VoxelId(1));
    assert_eq!(
        gw.update_chunks(&world, &[far]),
        Err(GpuError::ChunkOutsideWindow(far))
    );
}

/// Runs of empty chunks (whole regions of `4×4×4` chunks, halves, layers, `2×2×2` blocks) on
/// the GPU: a world of many regions with holes, near the origin and far out with a window that
/// does not start at a region boundary, under both unloaded policies, every origin policy and
/// per-voxel stepping; then edits that block runs (a voxel in an empty chunk, a new hole) or
/// open them (a chunk emptied), re-uploaded with `update_chunks`.
#[test]
fn parity_region_runs_and_their_updates() {
    let Some(gpu) = gpu() else { return };
    for (base, seed) in [
        ([0, 0, 0], 21u64),
        ([(1 << 100) + 1, -(1 << 90) - 3, 2], 22),
    ] {
        let mut world = common::region_world(base, seed);
        let mut gw = gpu.upload_world(&world).expect("upload");
        let rays = common::region_rays(base, seed, 40_000);
        let compare = |world: &VoxelWorld, gw: &GpuWorld, when: &str| {
            for unloaded in [UnloadedPolicy::Air, UnloadedPolicy::Stop] {
                for origin in common::ORIGIN_POLICIES {
                    let opts = RaycastOptions {
                        origin,
                        unloaded,
                        ..Default::default()
                    };
                    let what = format!("regions {base:?} {when} {unloaded:?} {origin:?}");
                    check(gpu, &what, world, gw, &rays, &opts);
                }
                let walk = RaycastOptions {
                    unloaded,
                    per_voxel: true,
                    ..Default::default()
                };
                let slow = gpu.cast(Rays(&rays), gw, &walk).expect("per voxel");
                let fast = raycast_batch(
                    &rays,
                    world,
                    &RaycastOptions {
                        unloaded,
                        ..Default::default()
                    },
                );
                assert_parity(
                    &format!("regions {base:?} {when} {unloaded:?}: GPU per-voxel vs CPU"),
                    &rays,
                    &slow,
                    &fast,
                );
            }
        };
        compare(&world, &gw, "as built");
        // Edits: walls, holes, solid chunks and emptied chunks.
        let mut rng = SplitMix64::new(seed ^ 7);
        let mut touched = Vec::new();
        for _ in 0..40 {
            let c = ChunkPos::new(
                base[0] - 6 + rng.below(12) as i128,
                base[1] - 3 + rng.below(8) as i128,
                base[2] - 6 + rng.below(12) as i128,
            );
            match rng.below(4) {
                0 => {
                    // A wall of 32×32 voxels through the chunk: a dense chunk.
                    let o = c.origin();
                    for i in 0..32 {
                        for j in 0..32 {
                            world.set_voxel(WorldPos::new(o.x + i, o.y + j, o.z + 17), VoxelId(3));
                        }
                    }
                }
                1 => {
                    world.remove_chunk(c);
                }
                2 => {
                    world
                        .insert_chunk(c, voxcast::Chunk::filled(VoxelId(1)))
                        .expect("in the world");
                }
                _ => {
                    world
                        .insert_chunk(c, voxcast::Chunk::default())
                        .expect("in the world");
                }
            }
            touched.push(c);
        }
        gw.update_chunks(&world, &touched).expect("update");
        compare(&world, &gw, "after edits");
    }
}

/// Under `Air` the CPU reference ends a ray as a miss where it leaves the chunks holding
/// anything but air; the GPU walks on to the window's edge. Here those chunks are a small part
/// of the window, and edits outside them (pushed with `update_chunks`) move them.
#[test]
fn parity_occupied_bounds_grow_with_updates() {
    let Some(gpu) = gpu() else { return };
    let base = [-(1i128 << 80) + 5, 3, 1 << 70];
    let mut world = VoxelWorld::new();
    for cz in -6i128..6 {
        for cy in -3i128..5 {
            for cx in -6i128..6 {
                let pos = ChunkPos::new(base[0] + cx, base[1] + cy, base[2] + cz);
                world
                    .insert_chunk(pos, voxcast::Chunk::default())
                    .expect("in the world");
            }
        }
    }
    let middle = ChunkPos::new(base[0], base[1], base[2]).origin();
    world.set_voxel(common::offset(middle, [3, 30, 17]), VoxelId(2));
    let mut gw = gpu.upload_world(&world).expect("upload");
    let rays = common::region_rays(base, 31, 40_000);
    let opts = RaycastOptions::default();
    check(gpu, "one occupied chunk", &world, &gw, &rays, &opts);
    // Walls in chunks at the window's corners, far outside the occupied chunk.
    let mut touched = Vec::new();
    for (i, corner) in [[-6, -3, -6], [5, 4, 5], [-6, 4, 5]]
        .into_iter()
        .enumerate()
    {
        let c = ChunkPos::new(
            base[0] + corner[0],
            base[1] + corner[1],
            base[2] + corner[2],
        );
        let o = c.origin();
        for u in 0..32 {
            for v in 0..32 {
                let p = [[u, v, 9], [u, 20, v], [31, u, v]][i];
                world.set_voxel(common::offset(o, p), VoxelId(1));
            }
        }
        touched.push(c);
    }
    gw.update_chunks(&world, &touched).expect("update");
    check(gpu, "after walls at the corners", &world, &gw, &rays, &opts);
    // Emptying the middle chunk again shrinks the CPU's bounds.
    world.set_voxel(common::offset(middle, [3, 30, 17]), VoxelId::AIR);
    gw.update_chunks(&world, &[middle.chunk()]).expect("update");
    check(gpu, "after emptying the middle", &world, &gw, &rays, &opts);
    let walk = RaycastOptions {
        per_voxel: true,
        ..Default::default()
    };
    check(gpu, "per voxel after the edits", &world, &gw, &rays, &walk);
}

/// The window's margin must stay unloaded (rays from outside are clipped to the window without
/// the conservative tie test at that crossing): `update_chunks` refuses a loaded margin chunk,
/// and a refused update changes nothing, even when the list also holds good chunks.
#[test]
fn update_chunks_refuses_margin_chunks_and_changes_nothing_on_error() {
    let Some(gpu) = gpu() else { return };
    let mut world = VoxelWorld::new();
    world.set_voxel(WorldPos::new(5, 5, 5), VoxelId(1));
    world.set_voxel(WorldPos::new(40, 5, 5), VoxelId(2));
    let before = world.clone();
    let mut gw = gpu.upload_world(&world).expect("upload");
    assert_eq!(gw.anchor(), ChunkPos::new(-1, -1, -1));
    assert_eq!(gw.dims(), [4, 3, 3]);
    // Rays through chunks (0,0,0), (1,0,0) and the margins around them, from inside and outside.
    let rays = adversarial_rays(WorldPos::new(30, 10, 10), 4000, 60);
    let stays_as_before = |gw: &GpuWorld, when: &str| {
        for opts in [
            RaycastOptions::default(),
            RaycastOptions {
                unloaded: UnloadedPolicy::Stop,
                ..Default::default()
            },
        ] {
            check(gpu, &format!("{when} {opts:?}"), &before, gw, &rays, &opts);
            sight_parity_with(gpu, gw, &before, &rays, when, &opts);
        }
    };
    // A margin chunk loaded in the world: refused, and the GpuWorld is untouched.
    world.set_voxel(WorldPos::new(70, 5, 5), VoxelId(3));
    let margin = ChunkPos::new(2, 0, 0);
    assert_eq!(
        gw.update_chunks(&world, &[ChunkPos::new(0, 0, 0), margin]),
        Err(GpuError::ChunkOutsideWindow(margin))
    );
    // Good chunks (one removed, one edited) before a loaded one outside the window: nothing
    // of the list is applied. (An unloaded chunk outside the window is skipped.)
    world.remove_chunk(ChunkPos::new(1, 0, 0));
    world.set_voxel(WorldPos::new(10, 10, 10), VoxelId(3));
    let outside = ChunkPos::new(9, 0, 0);
    world.set_voxel(outside.origin(), VoxelId(3));
    assert_eq!(
        gw.update_chunks(
            &world,
            &[ChunkPos::new(1, 0, 0), ChunkPos::new(0, 0, 0), outside]
        ),
        Err(GpuError::ChunkOutsideWindow(outside))
    );
    world.remove_chunk(outside);
    stays_as_before(&gw, "after refused updates");
    // A margin chunk that is still unloaded may be listed.
    world.remove_chunk(margin);
    gw.update_chunks(
        &world,
        &[ChunkPos::new(1, 0, 0), ChunkPos::new(0, 0, 0), margin],
    )
    .expect("unloaded margin chunk");
    check_every_option(gpu, "after the update", &world, &gw, &rays);
}

/// `update_chunks` writes only the chunks it is given: when new stored chunks make the slot
/// buffers grow, the GPU keeps what it had of every other chunk (copied on the GPU), even of
/// a chunk edited in the world but not listed; listing it later brings it up to date.
#[test]
fn update_chunks_keeps_unlisted_chunks_when_slots_grow() {
    let Some(gpu) = gpu() else { return };
    let mut world = VoxelWorld::new();
    world.set_voxel(WorldPos::new(5, 5, 5), VoxelId(1));
    world.set_voxel(WorldPos::new(40, 5, 5), VoxelId(2));
    // Chunk (-1,0,0) is loaded (all air), so it is no margin chunk and may become dense.
    world
        .insert_chunk(ChunkPos::new(-1, 0, 0), voxcast::Chunk::default())
        .expect("in the world");
    let mut gw = gpu.upload_world(&world).expect("upload");
    assert_eq!(gw.stored_chunks(), 2);
    let as_uploaded = world.clone();
    // Chunk (0,0,0) edited but not listed; chunk (-1,0,0) gets dense, so the slots grow.
    world
        .insert_chunk(ChunkPos::new(0, 0, 0), voxcast::Chunk::filled(VoxelId(4)))
        .expect("in the world");
    world.set_voxel(WorldPos::new(-5, 5, 5), VoxelId(1));
    for x in -32..0 {
        world.set_voxel(WorldPos::new(x, 9, 9), VoxelId(3));
    }
    gw.update_chunks(&world, &[ChunkPos::new(-1, 0, 0)])
        .expect("update");
    assert_eq!(gw.stored_chunks(), 3);
    // What the GPU should hold: the world as uploaded, with chunk (-1,0,0) as it is now.
    let mut expected = as_uploaded.clone();
    expected
        .insert_chunk(
            ChunkPos::new(-1, 0, 0),
            world
                .chunk(ChunkPos::new(-1, 0, 0))
                .expect("loaded")
                .clone(),
        )
        .expect("in the world");
    let rays = adversarial_rays(WorldPos::new(5, 10, 10), 4000, 61);
    for opts in [
        RaycastOptions::default(),
        RaycastOptions {
            unloaded: UnloadedPolicy::Stop,
            ..Default::default()
        },
    ] {
        check(gpu, "unlisted chunk kept", &expected, &gw, &rays, &opts);
    }
    gw.update_chunks(&world, &[ChunkPos::new(0, 0, 0)])
        .expect("update");
    check_every_option(gpu, "all listed", &world, &gw, &rays);
}

/// Chunks that stop being stored give their slots back before new ones take slots, whatever
/// the order of the list: swapping a stored chunk for another does not grow the buffers.
#[test]
fn update_chunks_frees_slots_before_taking_new_ones() {
    let Some(gpu) = gpu() else { return };
    let mut world = VoxelWorld::new();
    for x in 0..4 {
        world
            .insert_chunk(ChunkPos::new(x, 0, 0), voxcast::Chunk::default())
            .expect("in the world");
    }
    for x in 0..3 {
        world.set_voxel(WorldPos::new(32 * x + 5, 5, 5), VoxelId(1));
    }
    let mut gw = gpu.upload_world(&world).expect("upload");
    let memory = gw.memory_bytes();
    let rays = adversarial_rays(WorldPos::new(60, 10, 10), 3000, 62);
    for (step, (new, gone)) in [(3, 0), (0, 1), (1, 2)].into_iter().enumerate() {
        world.set_voxel(WorldPos::new(32 * new + 9, 9, 9), VoxelId(2));
        world.remove_chunk(ChunkPos::new(gone, 0, 0));
        // The new stored chunk first in the list, the removed one after it.
        gw.update_chunks(
            &world,
            &[ChunkPos::new(new, 0, 0), ChunkPos::new(gone, 0, 0)],
        )
        .expect("update");
        assert_eq!(gw.stored_chunks(), 3, "step {step}");
        assert_eq!(
            gw.memory_bytes(),
            memory,
            "step {step}: the slot buffers grew"
        );
        check(
            gpu,
            &format!("swap {step}"),
            &world,
            &gw,
            &rays,
            &RaycastOptions::default(),
        );
        world
            .insert_chunk(ChunkPos::new(gone, 0, 0), voxcast::Chunk::default())
            .expect("in the world");
        gw.update_chunks(&world, &[ChunkPos::new(gone, 0, 0)])
            .expect("update");
    }
}

/// A world that grows past what its `GpuWorld` can hold: `update_or_rebuild` uploads it again,
/// and the answers follow the world (chunks streamed in around a moving player).
#[test]
fn a_growing_world_is_uploaded_again() {
    let Some(gpu) = gpu() else { return };
    let mut world = VoxelWorld::new();
    world.set_voxel(WorldPos::new(5, 5, 5), VoxelId(1));
    let mut gw = gpu.upload_world(&world).expect("upload");
    let rays = adversarial_rays(WorldPos::new(40, 10, 10), 3000, 90);
    // Inside the loaded bounds: an update.
    world.set_voxel(WorldPos::new(9, 9, 9), VoxelId(2));
    assert_eq!(
        gw.update_or_rebuild(&world, &[ChunkPos::new(0, 0, 0)]),
        Ok(false)
    );
    check_every_option(gpu, "updated", &world, &gw, &rays);
    // Streaming east, one chunk at a time: the margin chunk, then one past the window.
    for (x, rebuilt) in [(1, true), (2, true), (3, true)] {
        let chunk = ChunkPos::new(x, 0, 0);
        world.set_voxel(WorldPos::new(32 * x + 3, 4, 4), VoxelId(3));
        assert_eq!(
            gw.update_or_rebuild(&world, &[chunk]),
            Ok(rebuilt),
            "chunk {chunk:?}"
        );
        assert_eq!(gw.dims()[0], x as u32 + 3);
        check_every_option(gpu, &format!("streamed to x = {x}"), &world, &gw, &rays);
    }
    // A rebuild that fails (a chunk 2^100 voxels away makes the window too large) leaves the
    // GpuWorld as it was.
    let before = world.clone();
    let far = WorldPos::new(1 << 100, 4, 4);
    world.set_voxel(far, VoxelId(1));
    assert!(matches!(
        gw.update_or_rebuild(&world, &[far.chunk()]),
        Err(GpuError::LimitExceeded { .. })
    ));
    check_every_option(gpu, "after a failed rebuild", &before, &gw, &rays);
}
