//! Change tracking: `VoxelWorld::take_changed_chunks` names exactly the chunks edits touched,
//! and feeding it to `GpuWorld::update_or_rebuild` keeps the GPU's copy equal to the world.

#![cfg(feature = "gpu")]

use voxcast_testkit::gpu::*;

use voxcast::{Chunk, ChunkPos, RaycastOptions, VoxelId, VoxelWorld, WorldPos};
use voxcast_testkit::scene::SplitMix64;

const STONE: VoxelId = VoxelId(1);
const DIRT: VoxelId = VoxelId(2);

#[test]
fn changed_chunks_name_exactly_the_edited_chunks() {
    // Off by default: nothing is kept.
    let mut world = VoxelWorld::new();
    world.set_voxel(WorldPos::new(5, 5, 5), DIRT);
    assert!(!world.tracks_changes());
    assert!(world.take_changed_chunks().is_empty());
    world.set_track_changes(true);
    assert!(world.take_changed_chunks().is_empty());
    // A new chunk, two edits in another (one id twice), one across a negative chunk edge.
    world.set_voxel(WorldPos::new(5, 5, 5), STONE);
    world.set_voxel(WorldPos::new(40, 0, 0), STONE);
    world.set_voxel(WorldPos::new(41, 0, 0), DIRT);
    world.set_voxel(WorldPos::new(-1, 0, 0), STONE);
    assert_eq!(world.changed_chunk_count(), 3);
    assert_eq!(
        world.take_changed_chunks(),
        vec![
            ChunkPos::new(-1, 0, 0),
            ChunkPos::new(0, 0, 0),
            ChunkPos::new(1, 0, 0)
        ]
    );
    assert!(world.take_changed_chunks().is_empty());
    // Setting a voxel to the id it has changes nothing; changing it back does.
    world.set_voxel(WorldPos::new(40, 0, 0), STONE);
    assert_eq!(world.changed_chunk_count(), 0);
    world.set_voxel(WorldPos::new(40, 0, 0), VoxelId::AIR);
    assert_eq!(world.take_changed_chunks(), vec![ChunkPos::new(1, 0, 0)]);
    // Edits alternating between two chunks still name each once.
    for i in 0..10 {
        world.set_voxel(
            WorldPos::new(i % 2 * 32, 1, 1),
            if i < 5 { DIRT } else { STONE },
        );
    }
    assert_eq!(
        world.take_changed_chunks(),
        vec![ChunkPos::new(0, 0, 0), ChunkPos::new(1, 0, 0)]
    );
    // Loading, replacing and unloading chunks; a rejected insert changes nothing.
    world
        .insert_chunk(ChunkPos::new(7, 7, 7), Chunk::default())
        .expect("in the world");
    world.remove_chunk(ChunkPos::new(-1, 0, 0));
    assert!(world.remove_chunk(ChunkPos::new(99, 0, 0)).is_none());
    assert!(
        world
            .insert_chunk(ChunkPos::new(i128::MAX, 0, 0), Chunk::default())
            .is_err()
    );
    assert_eq!(
        world.take_changed_chunks(),
        vec![ChunkPos::new(-1, 0, 0), ChunkPos::new(7, 7, 7)]
    );
    // The same chunk edited again after a take is named again.
    world.set_voxel(WorldPos::new(5, 5, 5), VoxelId(3));
    assert_eq!(world.take_changed_chunks(), vec![ChunkPos::new(0, 0, 0)]);
    // Stopping drops the list and keeps nothing more.
    world.set_voxel(WorldPos::new(5, 5, 5), DIRT);
    world.set_track_changes(false);
    world.set_voxel(WorldPos::new(6, 5, 5), DIRT);
    assert_eq!(world.changed_chunk_count(), 0);
    assert!(world.take_changed_chunks().is_empty());
}

/// A world edited at random (voxels set, chunks loaded and unloaded, also outside the
/// uploaded window) and brought up to date on the GPU each round from `take_changed_chunks`
/// alone: every round the GPU answers as the CPU does.
#[test]
fn gpu_copy_follows_the_changed_chunks() {
    let Some(gpu) = gpu() else { return };
    let (s, base) = sparse();
    let mut world = base.clone();
    world.set_track_changes(true);
    let mut gw = gpu.upload_world(&world).expect("upload");
    let mut rng = SplitMix64::new(0xED17);
    let mut rebuilds = 0;
    for round in 0..6 {
        for _ in 0..400 {
            let p = WorldPos::new(
                rng.below(160) as i128 - 16,
                rng.below(128) as i128,
                rng.below(128) as i128,
            );
            let id = if rng.below(3) == 0 {
                VoxelId::AIR
            } else {
                STONE
            };
            world.set_voxel(p, id);
        }
        let c = ChunkPos::new(
            rng.below(4) as i128,
            rng.below(4) as i128,
            rng.below(4) as i128,
        );
        if round % 2 == 0 {
            world.remove_chunk(c);
        } else {
            world
                .insert_chunk(c, Chunk::default())
                .expect("in the world");
        }
        let changed = world.take_changed_chunks();
        assert!(!changed.is_empty());
        if gw.update_or_rebuild(&world, &changed).expect("update") {
            rebuilds += 1;
        }
        let rays = s.rays(5_000, round);
        check(
            gpu,
            &format!("after round {round} of edits"),
            &world,
            &gw,
            &rays,
            &RaycastOptions::default(),
        );
    }
    // Voxels at x = -16..-1 lie outside the first window: the first round rebuilt it.
    assert!(rebuilds >= 1);
    // A chunk loaded and unloaded again outside the window between two takes needs nothing:
    // no error, no rebuild.
    let far = WorldPos::new(5000, 0, 0);
    world.set_voxel(far, STONE);
    world.remove_chunk(far.chunk());
    let changed = world.take_changed_chunks();
    assert_eq!(changed, vec![far.chunk()]);
    assert_eq!(gw.update_chunks(&world, &changed), Ok(()));
    assert!(!gw.update_or_rebuild(&world, &changed).expect("update"));
}
