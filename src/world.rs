//! Voxel ids, chunks and the sparse world of chunks.

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::coords::{ChunkPos, LocalPos, VoxelBox, WorldPos};

#[cfg(any(test, feature = "test-hooks"))]
mod check;
mod chunk;
mod packed_ids;
mod shapes;
mod summary;
mod tops;

pub use chunk::Chunk;
pub(crate) use chunk::{ChunkView, DenseChunk};
pub use shapes::{BlockShape, MAX_SHAPE_BOXES, SHAPE_GRID, ShapeBox, ShapeError, ShapeTable};
pub use summary::BRICK_EDGE;
#[cfg(feature = "gpu")]
pub(crate) use summary::OCCUPANCY_WORDS;
pub(crate) use summary::{
    REGION_SHIFT, RegionSummary, chunk_in_region, empty_block, empty_box, region_of,
};
pub(crate) use tops::ColumnTops;

/// The type of a voxel. `VoxelId(0)` is [`VoxelId::AIR`]; every other id is a material whose
/// meaning belongs to the application (stone, glass, water, ...).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VoxelId(pub u16);

impl VoxelId {
    /// Empty space. Rays pass through air under every [`crate::MaterialFilter`].
    pub const AIR: Self = Self(0);

    /// Whether this is [`VoxelId::AIR`].
    #[inline]
    #[must_use]
    pub const fn is_air(self) -> bool {
        self.0 == 0
    }
}

/// Why an edit of a [`VoxelWorld`] was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WorldError {
    /// A chunk index lies outside `ChunkPos::MIN_INDEX..=ChunkPos::MAX_INDEX`: no voxel of the
    /// i128 world is in that chunk.
    #[error(
        "chunk {0:?} is outside the i128 world (chunk indices lie in i128::MIN >> 5 ..= i128::MAX >> 5)"
    )]
    ChunkOutsideWorld(ChunkPos),
    /// [`Chunk::from_ids`] with a slice of this many ids, not [`CHUNK_VOLUME`](crate::CHUNK_VOLUME).
    #[error("a chunk holds 32768 ids, not {0}")]
    ChunkLength(usize),
}

/// A sparse world of chunks addressed by i128 coordinates. Chunks not inserted are *unloaded*:
/// raycasts treat them as air or stop at them (see [`crate::UnloadedPolicy`]).
#[derive(Clone, Debug, Default)]
pub struct VoxelWorld {
    chunks: FxHashMap<ChunkPos, Chunk>,
    /// Summary and column tops of every region (`4×4×4` chunks) with a loaded chunk; absent
    /// regions have nothing loaded.
    /// Keyed by a tuple, not an array: `==` on `[i128; 3]` calls `memcmp`.
    regions: FxHashMap<(i128, i128, i128), Region>,
    /// Inclusive chunk range covering every loaded chunk; kept current by every edit.
    loaded: Option<ChunkRange>,
    /// Inclusive chunk range covering every occupied chunk (loaded and not all air); kept
    /// current by every edit.
    occupied: Option<ChunkRange>,
    /// Air voxels of the chunks stored voxel by voxel, and those of them in empty bricks
    /// ([`bricks_worth_skipping`]); kept current by every edit.
    air: (u64, u64),
    /// [`VoxelWorld::set_skip_empty_bricks`]: `None` lets ray length and `air` decide.
    skip_bricks_set: Option<bool>,
    /// [`VoxelWorld::set_track_changes`].
    track_changes: bool,
    /// Chunks changed since the last [`VoxelWorld::take_changed_chunks`], while tracking.
    changed: FxHashSet<ChunkPos>,
    /// The chunk last put in `changed`, so that a run of edits in one chunk hashes it once.
    last_changed: Option<ChunkPos>,
    /// Shapes of the ids that are not cubes ([`VoxelWorld::set_shape`]).
    shapes: ShapeTable,
}

/// What the world keeps of one region: which chunks are loaded and occupied, and how high
/// their non-air voxels reach in each column.
#[derive(Clone, Debug, Default)]
pub(crate) struct Region {
    pub(crate) summary: RegionSummary,
    pub(crate) tops: Box<ColumnTops>,
}

/// Whether long rays should skip empty bricks whole in chunks whose air voxels number `air`,
/// `brick_air` of them in bricks that hold only air: when at least a quarter of the air lies
/// in empty bricks. Otherwise the brick test that every air voxel stepped through costs more
/// than the skips save (the CPU and the GPU both measured so).
pub(crate) const fn bricks_worth_skipping(air: u64, brick_air: u64) -> bool {
    brick_air * 4 >= air
}

/// An inclusive range of chunks, `(lowest, highest)`.
type ChunkRange = (ChunkPos, ChunkPos);

/// `range` grown to cover `pos`.
fn grow(range: Option<ChunkRange>, pos: ChunkPos) -> ChunkRange {
    match range {
        None => (pos, pos),
        Some((lo, hi)) => (
            ChunkPos::new(lo.x.min(pos.x), lo.y.min(pos.y), lo.z.min(pos.z)),
            ChunkPos::new(hi.x.max(pos.x), hi.y.max(pos.y), hi.z.max(pos.z)),
        ),
    }
}

impl VoxelWorld {
    /// An empty world with no chunk loaded.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the shape of voxel id `id` for every query on this world (the rule is the crate
    /// docs' "Shapes" section); [`BlockShape::Cube`] makes it a full voxel again.
    /// A world whose ids are all cubes answers as fast as before any shape was set.
    ///
    /// # Errors
    /// As [`ShapeTable::set`]; the world is unchanged then.
    pub fn set_shape(&mut self, id: VoxelId, shape: &BlockShape) -> Result<(), ShapeError> {
        self.shapes.set(id, shape)
    }

    /// The shape of voxel id `id` ([`BlockShape::Cube`] unless set).
    #[must_use]
    pub fn shape(&self, id: VoxelId) -> BlockShape {
        self.shapes.get(id)
    }

    /// The shapes of every id.
    #[must_use]
    pub fn shapes(&self) -> &ShapeTable {
        &self.shapes
    }

    /// The id of the voxel at `pos`, or `None` when its chunk is not loaded.
    #[inline]
    #[must_use]
    pub fn get_voxel(&self, pos: &WorldPos) -> Option<VoxelId> {
        self.chunks.get(&pos.chunk()).map(|c| c.get(pos.local()))
    }

    /// Sets the voxel at `pos` to `id` and returns its previous id. An unloaded chunk is created
    /// first, filled with air (so the previous id is then [`VoxelId::AIR`]).
    pub fn set_voxel(&mut self, pos: WorldPos, id: VoxelId) -> VoxelId {
        let cp = pos.chunk();
        let created = !self.chunks.contains_key(&cp);
        if created {
            // The chunk of a voxel is always in the world.
            self.summarise(cp, true, false);
            self.chunks.insert(cp, Chunk::default());
        }
        let Some(chunk) = self.chunks.get_mut(&cp) else {
            return VoxelId::AIR;
        };
        let before = chunk.air_and_brick_air();
        let local = pos.local();
        let old = chunk.set(local, id);
        let after = chunk.air_and_brick_air();
        // The voxel's brick column: its top rises to a non-air voxel above it, and is looked
        // for again below when its top voxel becomes air.
        if old.is_air() != id.is_air()
            && let (region, _) = region_of([cp.x, cp.y, cp.z])
            && let Some(r) = self.regions.get_mut(&(region[0], region[1], region[2]))
        {
            let at = chunk_in_region([cp.x, cp.y, cp.z]);
            let (bx, bz, y) = (
                u32::from(local.x) >> 3,
                u32::from(local.z) >> 3,
                u32::from(local.y),
            );
            let top = r.tops.top(at, bx, bz);
            let new = if id.is_air() {
                if u32::from(top) == y + 1 {
                    chunk.column_top(bx, bz, y + 1)
                } else {
                    top
                }
            } else {
                top.max(y as u8 + 1)
            };
            if new != top {
                r.tops.set_top(at, bx, bz, new);
            }
        }
        let occupied = !chunk.is_empty();
        if old.is_air() != id.is_air() {
            self.update_voxel_top(cp, local, id.is_air());
        }
        self.air = (
            self.air.0 - before.0 + after.0,
            self.air.1 - before.1 + after.1,
        );
        self.summarise(cp, true, occupied);
        if old != id || created {
            self.mark_changed(cp);
        }
        old
    }

    /// Notes that chunk `pos` changed (see [`VoxelWorld::take_changed_chunks`]).
    #[inline]
    fn mark_changed(&mut self, pos: ChunkPos) {
        if self.track_changes && self.last_changed != Some(pos) {
            self.changed.insert(pos);
            self.last_changed = Some(pos);
        }
    }

    /// Starts (`true`) or stops keeping the list of changed chunks that
    /// [`VoxelWorld::take_changed_chunks`] returns. Off by default, so that a world nobody
    /// takes the list from does not grow it. Starting begins with an empty list (changes
    /// before it are not known: upload the whole world then); stopping drops the list.
    pub fn set_track_changes(&mut self, on: bool) {
        self.track_changes = on;
        self.changed = FxHashSet::default();
        self.last_changed = None;
    }

    /// Whether the world keeps the list of changed chunks ([`VoxelWorld::set_track_changes`]).
    #[must_use]
    pub fn tracks_changes(&self) -> bool {
        self.track_changes
    }

    /// The chunks changed since tracking started or the list was last taken, in ascending
    /// order, and forgets them: what to pass to `gpu::GpuWorld::update_chunks` (or
    /// `update_or_rebuild`) to bring an uploaded copy up to date, or to re-mesh. Always empty
    /// unless [`VoxelWorld::set_track_changes`] turned tracking on. A chunk counts
    /// as changed when [`VoxelWorld::set_voxel`] gave one of its voxels another id or created
    /// it, when [`VoxelWorld::insert_chunk`] loaded or replaced it, or when
    /// [`VoxelWorld::remove_chunk`] unloaded it (so the list may name chunks no longer
    /// loaded). Setting a voxel to the id it has changes nothing. One list serves one
    /// consumer: with several (two `GpuWorld`s, a mesher), hand each its copy. Should the
    /// update fail, pass the same list again; nothing is kept here. A clone of the world gets
    /// a copy of the list and of the tracking setting.
    pub fn take_changed_chunks(&mut self) -> Vec<ChunkPos> {
        let mut changed: Vec<ChunkPos> = self.changed.drain().collect();
        changed.sort_unstable();
        self.last_changed = None;
        changed
    }

    /// How many chunks [`VoxelWorld::take_changed_chunks`] would return now.
    #[must_use]
    pub fn changed_chunk_count(&self) -> usize {
        self.changed.len()
    }

    /// Records in the region summary whether chunk `pos` is loaded and whether it is occupied
    /// (loaded and not all air); drops a region once nothing in it is loaded.
    /// Also keeps the loaded and occupied chunk ranges current: they grow at once, and are
    /// recomputed from the region summaries when a chunk on their edge leaves them.
    fn summarise(&mut self, pos: ChunkPos, loaded: bool, occupied: bool) {
        let (region, bit) = region_of([pos.x, pos.y, pos.z]);
        let key = (region[0], region[1], region[2]);
        let s = &mut self.regions.entry(key).or_default().summary;
        let (was_loaded, was_occupied) = (s.loaded & bit != 0, s.occupied & bit != 0);
        s.loaded = if loaded {
            s.loaded | bit
        } else {
            s.loaded & !bit
        };
        s.occupied = if occupied {
            s.occupied | bit
        } else {
            s.occupied & !bit
        };
        if s.loaded == 0 {
            self.regions.remove(&key);
        }
        self.loaded = self.track(self.loaded, pos, was_loaded, loaded, |s| s.loaded);
        self.occupied = self.track(self.occupied, pos, was_occupied, occupied, |s| s.occupied);
    }

    /// `range` after chunk `pos` went from being in the set (`was`) to `now`, where `pick`
    /// selects the set's bits from a region summary.
    fn track(
        &self,
        range: Option<ChunkRange>,
        pos: ChunkPos,
        was: bool,
        now: bool,
        pick: fn(&RegionSummary) -> u64,
    ) -> Option<ChunkRange> {
        match (range, was, now) {
            (_, _, true) => Some(grow(range, pos)),
            (Some((lo, hi)), true, false)
                if (0..3).any(|a| pos.axis(a) == lo.axis(a) || pos.axis(a) == hi.axis(a)) =>
            {
                self.region_range(pick)
            }
            _ => range,
        }
    }

    /// The chunk range covering every chunk whose bit `pick` sets, from the region summaries.
    fn region_range(&self, pick: fn(&RegionSummary) -> u64) -> Option<ChunkRange> {
        let mut range = None;
        for (&(rx, ry, rz), r) in &self.regions {
            let mut bits = pick(&r.summary);
            while bits != 0 {
                let i = bits.trailing_zeros();
                bits &= bits - 1;
                let entry = |shift: u32| i128::from(i >> shift & 3);
                range = Some(grow(
                    range,
                    ChunkPos::new(
                        (rx << REGION_SHIFT) + entry(0),
                        (ry << REGION_SHIFT) + entry(2),
                        (rz << REGION_SHIFT) + entry(4),
                    ),
                ));
            }
        }
        range
    }

    /// What the world keeps of region `region` (chunk coordinates `>> REGION_SHIFT`); `None`
    /// when nothing in it is loaded.
    #[inline]
    pub(crate) fn region_entry(&self, region: [i128; 3]) -> Option<&Region> {
        self.regions.get(&(region[0], region[1], region[2]))
    }

    /// Records the column tops of the loaded chunk at `pos`.
    fn set_tops(&mut self, pos: ChunkPos, tops: [u8; 16]) {
        let (region, _) = region_of([pos.x, pos.y, pos.z]);
        if let Some(r) = self.regions.get_mut(&(region[0], region[1], region[2])) {
            r.tops
                .set_chunk(chunk_in_region([pos.x, pos.y, pos.z]), tops);
        }
    }

    /// Recomputes the voxel column tops of the chunk column holding chunk `pos` in its region
    /// from the chunks loaded in its four layers.
    fn refresh_voxel_tops(&mut self, pos: ChunkPos) {
        let (region, _) = region_of([pos.x, pos.y, pos.z]);
        let Some(r) = self.regions.get_mut(&(region[0], region[1], region[2])) else {
            return;
        };
        let at = chunk_in_region([pos.x, pos.y, pos.z]);
        let mut tops = [0u8; 1024];
        // From the highest layer down: a column's top is in the highest layer that has one.
        for layer in (0..4u32).rev() {
            let y = pos.y - i128::from(at[1]) + i128::from(layer);
            if let Some(c) = self.chunks.get(&ChunkPos::new(pos.x, y, pos.z)) {
                for (top, t) in tops.iter_mut().zip(c.voxel_tops()) {
                    if *top == 0 && t != 0 {
                        *top = layer as u8 * 32 + t;
                    }
                }
            }
        }
        r.tops.set_voxel_tops(at[0], at[2], &tops);
    }

    /// Follows an edit at `local` of chunk `cp` that made the voxel air (`now_air`) or not air
    /// in its voxel column's top: the top rises to a non-air voxel above it, and is looked for
    /// again below (in this chunk, then the layers beneath) when its top voxel becomes air.
    fn update_voxel_top(&mut self, cp: ChunkPos, local: LocalPos, now_air: bool) {
        let (region, _) = region_of([cp.x, cp.y, cp.z]);
        let Some(r) = self.regions.get_mut(&(region[0], region[1], region[2])) else {
            return;
        };
        let at = chunk_in_region([cp.x, cp.y, cp.z]);
        let (lx, ly, lz) = (u32::from(local.x), u32::from(local.y), u32::from(local.z));
        let (x, z) = (at[0] << 5 | lx, at[2] << 5 | lz);
        let y = at[1] << 5 | ly;
        let top = r.tops.voxel_top(x, z);
        let new = if !now_air {
            top.max(y as u8 + 1)
        } else if u32::from(top) == y + 1 {
            (0..=at[1])
                .rev()
                .find_map(|layer| {
                    let p = ChunkPos::new(cp.x, cp.y - i128::from(at[1] - layer), cp.z);
                    let below = if layer == at[1] { ly } else { 32 };
                    let t = self.chunks.get(&p)?.voxel_top(lx, lz, below);
                    (t != 0).then(|| layer as u8 * 32 + t)
                })
                .unwrap_or(0)
        } else {
            top
        };
        r.tops.set_voxel_top(x, z, new);
    }

    /// Loads `chunk` at `pos`, returning the chunk it replaces, if any.
    ///
    /// # Errors
    /// [`WorldError::ChunkOutsideWorld`] (and nothing changes) when `pos` names no chunk of
    /// the i128 world (see [`ChunkPos::is_in_world`]).
    pub fn insert_chunk(
        &mut self,
        pos: ChunkPos,
        chunk: Chunk,
    ) -> Result<Option<Chunk>, WorldError> {
        if !pos.is_in_world() {
            return Err(WorldError::ChunkOutsideWorld(pos));
        }
        self.summarise(pos, true, !chunk.is_empty());
        self.set_tops(pos, chunk.column_tops());
        self.mark_changed(pos);
        self.count_air(&chunk, true);
        let old = self.chunks.insert(pos, chunk);
        self.refresh_voxel_tops(pos);
        if let Some(c) = &old {
            self.count_air(c, false);
        }
        Ok(old)
    }

    /// Loads every chunk of `chunks` ([`VoxelWorld::insert_chunk`] of each, in order: a later
    /// chunk at the same position replaces an earlier one) and returns how many loaded chunks
    /// were replaced. Each chunk's summaries are computed once, as it is inserted.
    ///
    /// # Errors
    /// [`WorldError::ChunkOutsideWorld`] for the first position outside the i128 world; then
    /// nothing is inserted.
    pub fn insert_chunks(
        &mut self,
        chunks: impl IntoIterator<Item = (ChunkPos, Chunk)>,
    ) -> Result<usize, WorldError> {
        let chunks: Vec<(ChunkPos, Chunk)> = chunks.into_iter().collect();
        if let Some((pos, _)) = chunks.iter().find(|(p, _)| !p.is_in_world()) {
            return Err(WorldError::ChunkOutsideWorld(*pos));
        }
        self.chunks.reserve(chunks.len());
        let mut replaced = 0;
        for (pos, chunk) in chunks {
            replaced += usize::from(self.insert_chunk(pos, chunk)?.is_some());
        }
        Ok(replaced)
    }

    /// Adds `chunk`'s air to the world's counts (or takes it away).
    fn count_air(&mut self, chunk: &Chunk, add: bool) {
        let (air, brick_air) = chunk.air_and_brick_air();
        self.air = if add {
            (self.air.0 + air, self.air.1 + brick_air)
        } else {
            (self.air.0 - air, self.air.1 - brick_air)
        };
    }

    /// Whether rays of max distance 256 voxels or more (long rays) skip the empty `8³` bricks
    /// of dense chunks whole on the CPU (`true`) or step through them voxel by voxel. Shorter
    /// rays step through them unless [`VoxelWorld::set_skip_empty_bricks`] says otherwise.
    /// Both walks give the same answers; only the speed differs. The GPU makes the same choice
    /// per batch, with a setting of its own (`gpu::GpuWorld::skips_empty_bricks`).
    ///
    /// Skipping costs a brick test on every air voxel a ray steps through, and pays where rays
    /// cross much air in empty bricks. Unless set, long rays skip when at least a quarter of
    /// the air of the chunks stored voxel by voxel lies in empty bricks (kept current by every
    /// edit). Max distance is only a proxy for how much open air a ray crosses: rays that
    /// hug the ground gain from stepping at any length, rays through open air from skipping.
    /// BENCHMARKS.md ("Design choices") has the measurements behind the rule.
    #[inline]
    #[must_use]
    pub fn skips_empty_bricks(&self) -> bool {
        self.skip_bricks_set
            .unwrap_or_else(|| bricks_worth_skipping(self.air.0, self.air.1))
    }

    /// Sets whether every ray skips empty bricks (`Some(true)`) or steps through them
    /// (`Some(false)`), whatever its max distance; `None` (the default) lets the ray's max
    /// distance and the world's air decide ([`VoxelWorld::skips_empty_bricks`]). For a world
    /// whose rays you know better: a camera high above terrain gains from `Some(true)` even for
    /// short rays. Answers do not change. Clones of the world keep the setting.
    pub fn set_skip_empty_bricks(&mut self, skip: Option<bool>) {
        self.skip_bricks_set = skip;
    }

    /// Whether a ray skips empty bricks whole ([`VoxelWorld::skips_empty_bricks`]), `long`
    /// saying whether it is a long ray (the caller's measure of length).
    #[inline]
    pub(crate) fn skip_bricks_for(&self, long: bool) -> bool {
        self.skip_bricks_set
            .unwrap_or_else(|| long && bricks_worth_skipping(self.air.0, self.air.1))
    }

    /// Unloads the chunk at `pos` and returns it. Costs a pass over the region summaries when
    /// the removed chunk was on the edge of the loaded or occupied bounds.
    pub fn remove_chunk(&mut self, pos: ChunkPos) -> Option<Chunk> {
        let removed = self.chunks.remove(&pos)?;
        self.set_tops(pos, [0; 16]);
        self.refresh_voxel_tops(pos);
        self.summarise(pos, false, false);
        self.mark_changed(pos);
        self.count_air(&removed, false);
        Some(removed)
    }

    /// Whether the chunk at `pos` is loaded.
    #[inline]
    #[must_use]
    pub fn is_loaded(&self, pos: ChunkPos) -> bool {
        self.chunks.contains_key(&pos)
    }

    /// The loaded chunk at `pos`.
    #[inline]
    #[must_use]
    pub fn chunk(&self, pos: ChunkPos) -> Option<&Chunk> {
        self.chunks.get(&pos)
    }

    /// Every loaded chunk with its position, in no particular order.
    pub fn chunks(&self) -> impl Iterator<Item = (ChunkPos, &Chunk)> + '_ {
        self.chunks.iter().map(|(p, c)| (*p, c))
    }

    /// Approximate bytes of memory the world holds, in bytes: the chunks' per-voxel storage
    /// plus the tables of chunks, region summaries (with their column tops, about 17.3 KiB a
    /// region of `4×4×4` chunks) and changed chunks (at their allocated capacity). A chunk of
    /// one id costs only its table entry.
    #[must_use]
    pub fn memory_bytes(&self) -> u64 {
        let chunks: usize = self.chunks.values().map(Chunk::heap_bytes).sum();
        // hashbrown: one control byte per bucket besides the entry.
        let table = |cap: usize, entry: usize| cap * (entry + 1);
        let tables = table(self.chunks.capacity(), size_of::<(ChunkPos, Chunk)>())
            + table(
                self.regions.capacity(),
                size_of::<((i128, i128, i128), Region)>(),
            )
            + self.regions.len() * size_of::<ColumnTops>()
            + table(self.changed.capacity(), size_of::<ChunkPos>());
        (size_of::<Self>() + chunks + tables) as u64
    }

    /// Packs every chunk's ids as narrowly as the ids in use now allow
    /// ([`Chunk::shrink_to_fit`]) and shrinks the world's tables to their contents: for a world
    /// after edits that removed most ids or chunks. Nothing a query sees changes. Costs a pass
    /// over every stored chunk packed wider than 2 bits a voxel, on all threads (rayon): about
    /// 0.2 ms per such chunk on one thread.
    pub fn shrink_to_fit(&mut self) {
        let mut chunks: Vec<&mut Chunk> = self.chunks.values_mut().collect();
        chunks.par_iter_mut().for_each(|c| c.shrink_to_fit());
        self.chunks.shrink_to_fit();
        self.regions.shrink_to_fit();
        self.changed.shrink_to_fit();
    }

    /// Number of loaded chunks.
    #[must_use]
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// The inclusive voxel box covering every loaded chunk, or `None` when nothing is loaded.
    /// Everything outside it is unloaded.
    #[must_use]
    pub fn loaded_bounds(&self) -> Option<VoxelBox> {
        self.loaded.map(|(lo, hi)| VoxelBox::from_chunks(lo, hi))
    }

    /// The inclusive chunk range covering every loaded chunk.
    #[must_use]
    pub fn loaded_chunk_bounds(&self) -> Option<(ChunkPos, ChunkPos)> {
        self.loaded
    }

    /// The inclusive voxel box covering every occupied chunk (loaded, with a voxel that is not
    /// air), or `None` when every loaded chunk is all air. Outside it every voxel is air or
    /// unloaded; a chunk emptied by [`VoxelWorld::set_voxel`] leaves it at once.
    #[must_use]
    pub fn occupied_bounds(&self) -> Option<VoxelBox> {
        self.occupied.map(|(lo, hi)| VoxelBox::from_chunks(lo, hi))
    }

    /// The inclusive chunk range covering every occupied chunk (see
    /// [`VoxelWorld::occupied_bounds`]).
    #[must_use]
    pub fn occupied_chunk_bounds(&self) -> Option<(ChunkPos, ChunkPos)> {
        self.occupied
    }
}

/// A world holding the voxels `visit` hands its callback (position, id), for unit tests that
/// build the testkit's scenes (whose own `build` makes the testkit's `VoxelWorld`).
#[cfg(test)]
pub(crate) fn world_of(visit: impl FnOnce(&mut dyn FnMut([i64; 3], u16))) -> VoxelWorld {
    let mut world = VoxelWorld::new();
    visit(&mut |[x, y, z], id| {
        world.set_voxel(WorldPos::new(x.into(), y.into(), z.into()), VoxelId(id));
    });
    world
}

#[cfg(test)]
mod tests;
