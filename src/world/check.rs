//! A testing aid: every summary a [`VoxelWorld`] keeps, recounted from its chunks' ids.

use rustc_hash::FxHashMap;

use crate::coords::{CHUNK_VOLUME, LocalPos};
use crate::world::chunk::ChunkView;
use crate::world::summary::{OCCUPANCY_WORDS, brick_index, chunk_in_region, region_of};
use crate::world::{Region, VoxelWorld, grow};

/// Test hooks: compiled only for voxcast's own unit tests and with the `test-hooks` feature
/// (the testkit turns it on, for voxcast's tests and fuzz targets). They are no part of the
/// stable API and may change in any release.
impl VoxelWorld {
    /// Test hook (`test-hooks` feature): recounts, from the ids of every loaded chunk, each
    /// summary the world keeps current on every edit, and compares. The summaries: each stored
    /// chunk's occupancy bits (also those beside its packed ids), brick bits and non-air count,
    /// and that it holds more than one id; the region summaries (loaded and occupied chunks)
    /// and column tops; the air counts that choose brick skipping; the loaded and occupied
    /// chunk ranges; and that no changed chunk is listed while tracking is off. Reads every
    /// voxel of every stored chunk.
    ///
    /// # Errors
    /// The first summary that differs from its recount, in words.
    pub fn check_summaries(&self) -> Result<(), String> {
        let mut regions: FxHashMap<(i128, i128, i128), Region> = FxHashMap::default();
        let mut air = (0u64, 0u64);
        let (mut loaded, mut occupied) = (None, None);
        for (&pos, chunk) in &self.chunks {
            if !pos.is_in_world() {
                return Err(format!("chunk {pos:?} outside the world is loaded"));
            }
            // A chunk of one id: its summaries follow from the id.
            let first = chunk.get(LocalPos::from_index(0));
            let (mut occupancy, mut tops, mut bricks) = ([0u32; OCCUPANCY_WORDS], [0u8; 16], 0u64);
            let mut non_air = 0u32;
            let mut one_id = true;
            let view = chunk.view();
            match view {
                ChunkView::Uniform(id) if !id.is_air() => {
                    (occupancy, tops, bricks, non_air) = (
                        [u32::MAX; OCCUPANCY_WORDS],
                        [32; 16],
                        u64::MAX,
                        CHUNK_VOLUME as u32,
                    );
                }
                ChunkView::Uniform(_) => {}
                ChunkView::Dense(d) => {
                    for row in 0..OCCUPANCY_WORDS as u32 {
                        let (y, z) = (row & 31, row >> 5);
                        for (x, id) in (0u32..).zip(d.ids.row(row)) {
                            one_id &= id == first;
                            if !id.is_air() {
                                non_air += 1;
                                occupancy[row as usize] |= 1 << x;
                                let column = (x >> 3) as usize + 4 * (z >> 3) as usize;
                                tops[column] = tops[column].max(y as u8 + 1);
                                bricks |= 1 << brick_index(x, y, z);
                            }
                        }
                    }
                }
            }
            if chunk.non_air_count() != non_air {
                return Err(format!(
                    "chunk {pos:?}: {} non-air voxels kept, {non_air} counted",
                    chunk.non_air_count()
                ));
            }
            if let ChunkView::Dense(d) = view {
                if one_id {
                    return Err(format!(
                        "chunk {pos:?} is stored voxel by voxel but holds one id"
                    ));
                }
                if d.occupancy[..] != occupancy[..] {
                    return Err(format!("chunk {pos:?}: occupancy bits differ from its ids"));
                }
                let words = d.ids.words();
                let shift = d.ids.record_shift();
                if d.ids.has_occupancy()
                    && (0..OCCUPANCY_WORDS).any(|row| words[row << shift] != occupancy[row])
                {
                    return Err(format!(
                        "chunk {pos:?}: the packed ids' occupancy words differ"
                    ));
                }
                if d.bricks != bricks {
                    return Err(format!(
                        "chunk {pos:?}: brick bits {:#x}, recount {bricks:#x}",
                        d.bricks
                    ));
                }
            }
            let (a, b) = chunk.air_and_brick_air();
            air = (air.0 + a, air.1 + b);
            let (region, bit) = region_of([pos.x, pos.y, pos.z]);
            let r = regions
                .entry((region[0], region[1], region[2]))
                .or_default();
            r.summary.loaded |= bit;
            if non_air > 0 {
                r.summary.occupied |= bit;
                occupied = Some(grow(occupied, pos));
            }
            r.tops
                .set_chunk(chunk_in_region([pos.x, pos.y, pos.z]), tops);
            loaded = Some(grow(loaded, pos));
        }
        // Voxel column tops: the highest non-air voxel of each column over a region's layers.
        for (&pos, chunk) in &self.chunks {
            let (region, _) = region_of([pos.x, pos.y, pos.z]);
            let [cx, cy, cz] = chunk_in_region([pos.x, pos.y, pos.z]);
            let Some(r) = regions.get_mut(&(region[0], region[1], region[2])) else {
                continue;
            };
            for z in 0..32u8 {
                for x in 0..32u8 {
                    let top = (0..32u8)
                        .rev()
                        .find(|&y| !chunk.get(LocalPos::new(x, y, z)).is_air())
                        .map_or(0, |y| cy as u8 * 32 + y + 1);
                    let (vx, vz) = (cx << 5 | u32::from(x), cz << 5 | u32::from(z));
                    if top > r.tops.voxel_top(vx, vz) {
                        r.tops.set_voxel_top(vx, vz, top);
                    }
                }
            }
        }
        if regions.len() != self.regions.len() {
            return Err(format!(
                "{} regions kept, {} with loaded chunks",
                self.regions.len(),
                regions.len()
            ));
        }
        for (key, want) in &regions {
            let Some(kept) = self.regions.get(key) else {
                return Err(format!("region {key:?} has loaded chunks but no summary"));
            };
            if kept.summary != want.summary {
                return Err(format!(
                    "region {key:?}: summary {:?}, recount {:?}",
                    kept.summary, want.summary
                ));
            }
            if kept.tops != want.tops {
                return Err(format!("region {key:?}: column tops differ from a recount"));
            }
        }
        if self.air != air {
            return Err(format!("air counts {:?}, recount {air:?}", self.air));
        }
        if self.loaded != loaded || self.occupied != occupied {
            return Err(format!(
                "loaded range {:?} and occupied range {:?}, recount {loaded:?} and {occupied:?}",
                self.loaded, self.occupied
            ));
        }
        if !self.track_changes && !self.changed.is_empty() {
            return Err("changed chunks listed while tracking is off".into());
        }
        Ok(())
    }
}
