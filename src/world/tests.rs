//! Unit tests of `VoxelWorld`: the region summaries, bricks, column tops and air counts
//! against recounts over random edits, and the bounds.

use super::*;
use crate::coords::{CHUNK_VOLUME, LocalPos};
use crate::world::summary::brick_index;

#[test]
fn region_summaries_track_edits() {
    let mut w = VoxelWorld::new();
    // Chunk (-1, 4, 5) is entry (3, 0, 1) of region (-1, 1, 1).
    let c = ChunkPos::new(-1, 4, 5);
    let (region, bit) = region_of([c.x, c.y, c.z]);
    assert_eq!(region, [-1, 1, 1]);
    assert_eq!(bit, 1 << (3 | 1 << 4));
    let summary = |w: &VoxelWorld| {
        w.region_entry(region)
            .map_or_else(RegionSummary::default, |r| r.summary)
    };
    assert_eq!(summary(&w), RegionSummary::default());
    w.insert_chunk(c, Chunk::default()).expect("in the world");
    assert_eq!(
        summary(&w),
        RegionSummary {
            loaded: bit,
            occupied: 0
        }
    );
    let p = WorldPos::new(-31, 130, 161);
    assert_eq!(p.chunk(), c);
    w.set_voxel(p, VoxelId(7));
    assert_eq!(
        summary(&w),
        RegionSummary {
            loaded: bit,
            occupied: bit
        }
    );
    w.set_voxel(p, VoxelId::AIR);
    assert_eq!(
        summary(&w),
        RegionSummary {
            loaded: bit,
            occupied: 0
        }
    );
    w.insert_chunk(c, Chunk::filled(VoxelId(3)))
        .expect("in the world");
    assert_eq!(
        summary(&w),
        RegionSummary {
            loaded: bit,
            occupied: bit
        }
    );
    // A neighbour in the same region, created by an edit.
    let q = WorldPos::new(-64, 130, 161);
    w.set_voxel(q, VoxelId(1));
    let bit_q = region_of([-2, 4, 5]).1;
    assert_eq!(summary(&w).occupied, bit | bit_q);
    w.remove_chunk(c);
    assert_eq!(
        summary(&w),
        RegionSummary {
            loaded: bit_q,
            occupied: bit_q
        }
    );
    w.remove_chunk(q.chunk());
    assert_eq!(summary(&w), RegionSummary::default());
    assert!(w.regions.is_empty());
}

#[test]
fn set_get_and_uniform_collapse() {
    let mut w = VoxelWorld::new();
    let p = WorldPos::new(-1, 5, 40);
    assert_eq!(w.get_voxel(&p), None);
    assert_eq!(w.set_voxel(p, VoxelId(3)), VoxelId::AIR);
    assert_eq!(w.get_voxel(&p), Some(VoxelId(3)));
    let c = w.chunk(p.chunk()).expect("loaded");
    assert_eq!(c.non_air_count(), 1);
    assert_eq!(w.set_voxel(p, VoxelId::AIR), VoxelId(3));
    assert!(w.chunk(p.chunk()).expect("loaded").is_empty());
}

#[test]
fn bricks_track_edits() {
    let mut c = Chunk::default();
    c.set(LocalPos::new(9, 0, 17), VoxelId(1));
    let ChunkView::Dense(d) = c.view() else {
        panic!("dense expected")
    };
    assert_eq!(d.bricks, 1 << brick_index(9, 0, 17));
    assert_eq!(d.occupancy[17 * 32], 1 << 9);
    c.set(LocalPos::new(9, 0, 17), VoxelId::AIR);
    assert!(c.is_empty());
}

/// The world's air counts, recomputed from its chunks.
/// The column tops of every region (brick and voxel columns), recomputed voxel by voxel from
/// the chunks.
fn brute_tops(w: &VoxelWorld) -> FxHashMap<(i128, i128, i128), ColumnTops> {
    let mut out: FxHashMap<_, ColumnTops> = FxHashMap::default();
    for (pos, chunk) in w.chunks() {
        let tops: [u8; 16] = std::array::from_fn(|i| {
            let (bx, bz) = (i as u8 & 3, i as u8 >> 2);
            (0..32u8)
                .rev()
                .find(|&y| {
                    (0..64u8).any(|k| {
                        let l = LocalPos::new(bx * 8 + k % 8, y, bz * 8 + k / 8);
                        !chunk.get(l).is_air()
                    })
                })
                .map_or(0, |y| y + 1)
        });
        let (r, _) = region_of([pos.x, pos.y, pos.z]);
        let at = chunk_in_region([pos.x, pos.y, pos.z]);
        let region = out.entry((r[0], r[1], r[2])).or_default();
        region.set_chunk(at, tops);
        for z in 0..32u8 {
            for x in 0..32u8 {
                if let Some(y) = (0..32u8)
                    .rev()
                    .find(|&y| !chunk.get(LocalPos::new(x, y, z)).is_air())
                {
                    let (vx, vz) = (at[0] << 5 | u32::from(x), at[2] << 5 | u32::from(z));
                    let top = at[1] as u8 * 32 + y + 1;
                    if top > region.voxel_top(vx, vz) {
                        region.set_voxel_top(vx, vz, top);
                    }
                }
            }
        }
    }
    out
}

#[test]
fn column_tops_follow_every_edit() {
    let check = |w: &VoxelWorld| {
        let stored: FxHashMap<_, _> = w
            .regions
            .iter()
            .map(|(k, r)| (*k, (*r.tops).clone()))
            .collect();
        assert_eq!(stored, brute_tops(w));
    };
    let mut w = VoxelWorld::new();
    let mut rng = voxcast_testkit::SplitMix64::new(7);
    // Voxels in two chunk columns across a region edge (x -1 and 0), y over two regions.
    let pos = |rng: &mut voxcast_testkit::SplitMix64| {
        WorldPos::new(
            rng.below(48) as i128 - 24,
            rng.below(160) as i128 - 16,
            rng.below(20) as i128,
        )
    };
    for round in 0..40 {
        for _ in 0..60 {
            let p = pos(&mut rng);
            let id = VoxelId(rng.below(3) as u16);
            w.set_voxel(p, id);
            // Stacks built and torn down from the top: tops found again below.
            if round % 3 == 0 {
                for dy in 0..5 {
                    let q = WorldPos::new(p.x, p.y - dy, p.z);
                    w.set_voxel(
                        q,
                        if round % 2 == 0 {
                            VoxelId(1)
                        } else {
                            VoxelId::AIR
                        },
                    );
                }
            }
        }
        match round % 5 {
            1 => {
                let c = pos(&mut rng).chunk();
                w.insert_chunk(c, Chunk::filled(VoxelId(2)))
                    .expect("in the world");
            }
            2 => {
                let c = pos(&mut rng).chunk();
                w.remove_chunk(c);
            }
            3 => {
                let mut dense = Chunk::default();
                dense.set(LocalPos::new(3, 30, 17), VoxelId(1));
                w.insert_chunk(pos(&mut rng).chunk(), dense)
                    .expect("in the world");
            }
            _ => {}
        }
        check(&w);
    }
    // Everything torn down again.
    let loaded: Vec<_> = w.chunks().map(|(p, _)| p).collect();
    for p in loaded {
        w.remove_chunk(p);
    }
    assert!(w.regions.is_empty());
}

fn recount(w: &VoxelWorld) -> (u64, u64) {
    w.chunks().fold((0, 0), |(a, b), (_, c)| {
        let (ca, cb) = c.air_and_brick_air();
        (a + ca, b + cb)
    })
}

#[test]
fn air_counts_follow_every_edit() {
    let mut w = VoxelWorld::new();
    assert_eq!(w.air, (0, 0));
    // One solid voxel: a dense chunk with 63 empty bricks.
    w.set_voxel(WorldPos::new(1, 2, 3), VoxelId(1));
    assert_eq!(w.air, (32767, 63 * 512));
    assert!(w.skips_empty_bricks());
    // One voxel in every brick: no empty brick left.
    for b in 0..64 {
        let (x, y, z) = (b % 4 * 8, b / 4 % 4 * 8, b / 16 * 8);
        w.set_voxel(WorldPos::new(x + 4, y + 4, z + 4), VoxelId(2));
    }
    assert_eq!(w.air, recount(&w));
    assert_eq!(w.air.1, 0);
    assert!(!w.skips_empty_bricks());
    // A uniform chunk has no per-voxel air; replacing and removing chunks.
    w.insert_chunk(ChunkPos::new(5, 0, 0), Chunk::filled(VoxelId(1)))
        .expect("in the world");
    let mut half = Chunk::default();
    half.set(LocalPos::new(0, 0, 0), VoxelId(3));
    w.insert_chunk(ChunkPos::new(-1, 0, 0), half.clone())
        .expect("in the world");
    assert_eq!(w.air, recount(&w));
    w.insert_chunk(ChunkPos::new(-1, 0, 0), Chunk::default())
        .expect("in the world");
    assert_eq!(w.air, recount(&w));
    w.insert_chunk(ChunkPos::new(0, 0, 0), half)
        .expect("in the world");
    assert_eq!(w.air, recount(&w));
    w.remove_chunk(ChunkPos::new(0, 0, 0));
    assert_eq!(w.air, (0, 0));
    // A chunk set back to one id throughout stores no voxels.
    w.set_voxel(WorldPos::new(40, 0, 0), VoxelId(1));
    w.set_voxel(WorldPos::new(40, 0, 0), VoxelId::AIR);
    assert_eq!(w.air, (0, 0));
    assert_eq!(w.air, recount(&w));
}

/// `tests/skipping.rs`'s `skipping_is_exact` relies on these worlds taking both walks: the
/// terrain's long rays skip empty bricks, its short ones and the sparse world's step.
#[test]
fn terrain_skips_empty_bricks_and_scattered_voxels_do_not() {
    let terrain = voxcast_testkit::scene::Terrain {
        size: [128, 64, 128],
        seed: 0x5EED,
    };
    let build_terrain = || world_of(|f| terrain.for_each_voxel(f));
    assert!(build_terrain().skips_empty_bricks());
    let sparse = voxcast_testkit::scene::Sparse {
        size: 96,
        density: 0.01,
        seed: 0x5BA5,
    };
    let mut sparse = world_of(|f| sparse.for_each_voxel(f));
    assert!(!sparse.skips_empty_bricks());
    assert!(!sparse.skip_bricks_for(true));
    sparse.set_skip_empty_bricks(Some(true));
    assert!(sparse.skips_empty_bricks() && sparse.skip_bricks_for(false));
    let mut terrain = build_terrain();
    assert!(terrain.skip_bricks_for(true) && !terrain.skip_bricks_for(false));
    // Ids 0-6 in at most 4 bits: 4 KiB of occupancy and at most 32 KiB of records per
    // stored chunk (16 KiB where a chunk's ids are all below 4), against 68 KiB as u16 ids.
    let dense = terrain
        .chunks()
        .filter(|(_, c)| c.uniform_id().is_none())
        .count() as u64;
    let per_chunk = terrain.memory_bytes() / dense;
    assert!((20 << 10..37 << 10).contains(&per_chunk), "{per_chunk}");
    terrain.set_skip_empty_bricks(Some(false));
    assert!(!terrain.skips_empty_bricks() && !terrain.skip_bricks_for(true));
    terrain.set_skip_empty_bricks(None);
    assert!(terrain.skips_empty_bricks());
}

#[test]
fn bounds_shrink_on_remove() {
    let mut w = VoxelWorld::new();
    w.insert_chunk(ChunkPos::new(0, 0, 0), Chunk::default())
        .expect("in the world");
    w.insert_chunk(ChunkPos::new(3, -2, 1), Chunk::default())
        .expect("in the world");
    assert_eq!(
        w.loaded_chunk_bounds(),
        Some((ChunkPos::new(0, -2, 0), ChunkPos::new(3, 0, 1)))
    );
    w.remove_chunk(ChunkPos::new(3, -2, 1));
    assert_eq!(
        w.loaded_chunk_bounds(),
        Some((ChunkPos::new(0, 0, 0), ChunkPos::new(0, 0, 0)))
    );
    w.remove_chunk(ChunkPos::new(0, 0, 0));
    assert_eq!(w.loaded_bounds(), None);
}

#[test]
fn occupied_bounds_follow_edits() {
    let mut w = VoxelWorld::new();
    // Loaded but all air: nothing is occupied.
    w.insert_chunk(ChunkPos::new(-9, 0, 0), Chunk::default())
        .expect("in the world");
    assert_eq!(w.occupied_chunk_bounds(), None);
    // Two regions apart, negative coordinates included.
    let a = WorldPos::new(-1, 5, 40);
    let b = WorldPos::new(300, -70, 2);
    w.set_voxel(a, VoxelId(1));
    w.insert_chunk(b.chunk(), Chunk::filled(VoxelId(2)))
        .expect("in the world");
    let both = Some((ChunkPos::new(-1, -3, 0), ChunkPos::new(9, 0, 1)));
    assert_eq!(w.occupied_chunk_bounds(), both);
    assert_eq!(
        w.loaded_chunk_bounds(),
        Some((ChunkPos::new(-9, -3, 0), ChunkPos::new(9, 0, 1)))
    );
    // Emptying a chunk by an edit leaves the occupied bounds, not the loaded ones.
    w.set_voxel(a, VoxelId::AIR);
    assert_eq!(w.occupied_chunk_bounds(), Some((b.chunk(), b.chunk())));
    assert_eq!(
        w.occupied_bounds(),
        Some(VoxelBox::from_chunks(b.chunk(), b.chunk()))
    );
    w.set_voxel(a, VoxelId(3));
    assert_eq!(w.occupied_chunk_bounds(), both);
    w.insert_chunk(b.chunk(), Chunk::default())
        .expect("in the world");
    assert_eq!(w.occupied_chunk_bounds(), Some((a.chunk(), a.chunk())));
    w.remove_chunk(a.chunk());
    assert_eq!(w.occupied_chunk_bounds(), None);
    assert_eq!(
        w.loaded_chunk_bounds(),
        Some((ChunkPos::new(-9, -3, 0), ChunkPos::new(9, 0, 0)))
    );
}

/// The recount behind `check_summaries` passes on worlds kept by edits, and finds a summary
/// that no longer matches the chunks.
#[test]
fn check_summaries_finds_a_stale_summary() {
    let mut w = VoxelWorld::new();
    w.set_voxel(WorldPos::new(-1, 130, 161), VoxelId(7));
    w.insert_chunk(ChunkPos::new(5, 0, 0), Chunk::filled(VoxelId(2)))
        .expect("in the world");
    w.insert_chunk(ChunkPos::new(6, 0, 0), Chunk::default())
        .expect("in the world");
    assert_eq!(w.check_summaries(), Ok(()));
    let kept = w.clone();
    w.air.1 += 1;
    assert!(w.check_summaries().is_err());
    let mut w = kept.clone();
    w.occupied = w.loaded;
    assert!(w.check_summaries().is_err());
    let mut w = kept.clone();
    let region = region_of([5, 0, 0]).0;
    let r = w
        .regions
        .get_mut(&(region[0], region[1], region[2]))
        .expect("loaded");
    r.tops.set_top(chunk_in_region([5, 0, 0]), 0, 0, 3);
    assert!(w.check_summaries().is_err());
    let mut w = kept;
    w.track_changes = false;
    w.changed.insert(ChunkPos::new(5, 0, 0));
    assert!(w.check_summaries().is_err());
}

/// A chunk built from its ids at once equals one built voxel by voxel: the same ids, the same
/// summaries (the world's recount agrees), the same packing width; a slice of one id is a
/// chunk of that id; a slice of the wrong length is an error.
#[test]
fn chunks_from_ids_equal_chunks_set_voxel_by_voxel() {
    let mut rng = 0x9E37_79B9_7F4A_7C15_u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let cases: Vec<Box<dyn Fn(usize, u64) -> VoxelId>> = vec![
        Box::new(|i, _| VoxelId(u16::from(i % 7 == 0))),
        Box::new(|i, r| VoxelId(if i < 20_000 { (r % 4) as u16 } else { 0 })),
        Box::new(|_, r| VoxelId((r % 200) as u16)),
        Box::new(|_, r| VoxelId((r % 5000) as u16 + 1)),
        Box::new(|i, _| VoxelId(if (i >> 10) < 8 { 3 } else { 0 })),
    ];
    let mut world = VoxelWorld::new();
    for (k, case) in cases.iter().enumerate() {
        let ids: Vec<VoxelId> = (0..CHUNK_VOLUME).map(|i| case(i, next())).collect();
        let bulk = Chunk::from_ids(&ids).expect("32768 ids");
        let mut slow = Chunk::default();
        for (i, &id) in ids.iter().enumerate() {
            slow.set(LocalPos::from_index(i), id);
        }
        for (i, &id) in ids.iter().enumerate() {
            assert_eq!(bulk.get(LocalPos::from_index(i)), id, "case {k}, voxel {i}");
        }
        assert_eq!(bulk.non_air_count(), slow.non_air_count(), "case {k}");
        assert_eq!(
            bulk.air_and_brick_air(),
            slow.air_and_brick_air(),
            "case {k}"
        );
        assert_eq!(bulk.column_tops(), slow.column_tops(), "case {k}");
        let from_fn = Chunk::from_fn(|l| ids[l.index()]);
        assert_eq!(from_fn.non_air_count(), bulk.non_air_count());
        world
            .insert_chunks([(ChunkPos::new(k as i128, 0, 0), bulk)])
            .expect("in the world");
    }
    world
        .check_summaries()
        .expect("the summaries of bulk chunks recount");
    assert_eq!(
        Chunk::from_ids(&vec![VoxelId(9); CHUNK_VOLUME])
            .expect("ids")
            .uniform_id(),
        Some(VoxelId(9))
    );
    assert_eq!(
        Chunk::from_ids(&[VoxelId(1); 100]).map(|c| c.non_air_count()),
        Err(WorldError::ChunkLength(100))
    );
    let outside = ChunkPos::new(ChunkPos::MAX_INDEX + 1, 0, 0);
    let before = world.chunk_count();
    assert_eq!(
        world.insert_chunks([
            (ChunkPos::new(99, 0, 0), Chunk::default()),
            (outside, Chunk::default())
        ]),
        Err(WorldError::ChunkOutsideWorld(outside))
    );
    assert_eq!(world.chunk_count(), before, "nothing inserted");
}
