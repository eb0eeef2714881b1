//! Voxel ids, chunks and the sparse world of chunks.

use rustc_hash::FxHashMap;

use crate::coords::{CHUNK_VOLUME, ChunkPos, LocalPos, VoxelBox, WorldPos};
use crate::packed_ids::PackedIds;
use crate::ray::VoxelRaycastHit;

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

/// Edge of an occupancy brick in voxels: the summary level below a chunk that the DDA skips
/// in one step when the brick holds only air (and an aligned 16³ block of eight empty bricks
/// in one step too).
pub const BRICK_EDGE: usize = 8;
pub(crate) const BRICK_SHIFT: u32 = 3;
/// Bricks per chunk edge.
pub(crate) const BRICKS_PER_EDGE: usize = 32 / BRICK_EDGE;
/// Bricks per chunk; their summary bits fit one `u64` (two `u32` words on the GPU).
pub(crate) const BRICKS_PER_CHUNK: usize = BRICKS_PER_EDGE * BRICKS_PER_EDGE * BRICKS_PER_EDGE;
/// Occupancy words (`u32`, one per x-row of 32 voxels) per chunk.
pub(crate) const OCCUPANCY_WORDS: usize = CHUNK_VOLUME / 32;

/// Index of the brick that holds local voxel `(x, y, z)` (each in `0..32`).
#[inline]
#[must_use]
pub(crate) const fn brick_index(x: u32, y: u32, z: u32) -> u32 {
    cell_index(x >> BRICK_SHIFT, y >> BRICK_SHIFT, z >> BRICK_SHIFT)
}

/// Index of cell `(x, y, z)` (each in `0..4`) in a 4×4×4 summary mask: a chunk's brick summary
/// (cells are `8³` bricks) and a region's chunk summary (cells are chunks) share this layout.
#[inline]
#[must_use]
const fn cell_index(x: u32, y: u32, z: u32) -> u32 {
    x | y << 2 | z << 4
}

/// Bits of the eight cells of the `2×2×2` block whose lowest cell is cell 0, in the layout of
/// [`cell_index`]: shifted by a block's lowest cell index it selects that block's cells.
const BLOCK_CELLS: u64 = 0x0033_0033;
/// Bits of the 16 cells of the lowest layer (cells with y = 0); shifted by `4 · y` it selects
/// layer y.
const LAYER_CELLS: u64 = 0x000F_000F_000F_000F;

/// The largest empty block of cells around cell `(x, y, z)` (each in `0..4`) of a 4×4×4
/// summary `mask` (bit [`cell_index`] set = the cell is not empty), as inclusive cell corners
/// `(lo, hi)`; `None` when that cell is not empty. The first empty one of: the lower or upper
/// half (4×2×4 cells, as above a terrain's surface), the layer of the cell (4×1×4), its aligned
/// `2×2×2` block, the cell alone.
#[inline(always)]
pub(crate) const fn empty_block(mask: u64, x: u32, y: u32, z: u32) -> Option<([u32; 3], [u32; 3])> {
    if mask >> cell_index(x, y, z) & 1 != 0 {
        return None;
    }
    let y2 = y & !1;
    if mask & (LAYER_CELLS * 0x11) << (4 * y2) == 0 {
        return Some(([0, y2, 0], [3, y2 + 1, 3]));
    }
    if mask & LAYER_CELLS << (4 * y) == 0 {
        return Some(([0, y, 0], [3, y, 3]));
    }
    let lo = [x & !1, y2, z & !1];
    if mask >> cell_index(lo[0], lo[1], lo[2]) & BLOCK_CELLS == 0 {
        return Some((lo, [lo[0] + 1, lo[1] + 1, lo[2] + 1]));
    }
    Some(([x, y, z], [x, y, z]))
}

/// The largest empty cell around local voxel `(x, y, z)` (each in `0..32`), given the chunk's
/// brick summary `bricks` (bit set = brick holds a non-air voxel), as inclusive local corners
/// `(lo, hi)`; `None` when the voxel's brick is not empty. [`empty_block`] over bricks: the
/// lower or upper half of the chunk (32×16×32), the layer of bricks the voxel is in (32×8×32),
/// its aligned 16³ block (2×2×2 bricks), its brick (8³). Twin of `empty_cell` in
/// `shaders/dda.wgsl`.
#[inline(always)]
pub(crate) const fn empty_cell(
    bricks: u64,
    x: u32,
    y: u32,
    z: u32,
) -> Option<([u32; 3], [u32; 3])> {
    let s = BRICK_SHIFT;
    match empty_block(bricks, x >> s, y >> s, z >> s) {
        Some((lo, hi)) => Some((
            [lo[0] << s, lo[1] << s, lo[2] << s],
            [(hi[0] << s) | 7, (hi[1] << s) | 7, (hi[2] << s) | 7],
        )),
        None => None,
    }
}

/// log2 of a region's edge in chunks: a region is `4×4×4` chunks (`128³` voxels), summarised
/// in one [`RegionSummary`].
pub(crate) const REGION_SHIFT: u32 = 2;

/// Which chunks of one region are loaded and which are loaded but not all air, one bit per
/// chunk at [`cell_index`] of the chunk's position inside the region. Kept current by every
/// edit of [`VoxelWorld`]; the DDA crosses runs of empty chunks in one step with it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RegionSummary {
    /// Bit set: the chunk is loaded.
    pub(crate) loaded: u64,
    /// Bit set: the chunk is loaded and holds a voxel that is not air.
    pub(crate) occupied: u64,
}

/// The region holding chunk `c` (`c >> REGION_SHIFT` per axis) and the chunk's bit in its
/// [`RegionSummary`].
#[inline]
pub(crate) fn region_of(c: [i128; 3]) -> ([i128; 3], u64) {
    let m = (1 << REGION_SHIFT) - 1;
    let [x, y, z] = c.map(|v| (v & m) as u32);
    (c.map(|v| v >> REGION_SHIFT), 1 << cell_index(x, y, z))
}

/// A chunk stored voxel by voxel, with its occupancy summaries kept current on every edit.
#[derive(Clone)]
pub(crate) struct DenseChunk {
    /// The ids, row by row with each row's occupancy word (read by short rays).
    pub(crate) ids: PackedIds,
    /// One bit per voxel, set where the voxel is not air. Word `y + 32·z`, bit `x`.
    pub(crate) occupancy: Box<[u32; OCCUPANCY_WORDS]>,
    /// Non-air voxels per brick.
    brick_counts: [u16; BRICKS_PER_CHUNK],
    /// Bit `b` set where brick `b` holds a non-air voxel.
    pub(crate) bricks: u64,
    non_air: u32,
}

impl DenseChunk {
    /// Air voxels in the chunk, and how many of them lie in bricks that hold only air.
    pub(crate) fn air_and_brick_air(&self) -> (u32, u32) {
        let empty_bricks = BRICKS_PER_CHUNK as u32 - self.bricks.count_ones();
        (
            CHUNK_VOLUME as u32 - self.non_air,
            empty_bricks * (BRICK_EDGE * BRICK_EDGE * BRICK_EDGE) as u32,
        )
    }

    fn filled(id: VoxelId) -> Self {
        let full = !id.is_air();
        Self {
            ids: PackedIds::filled(id),
            occupancy: Box::new([if full { u32::MAX } else { 0 }; OCCUPANCY_WORDS]),
            brick_counts: [if full {
                (BRICK_EDGE * BRICK_EDGE * BRICK_EDGE) as u16
            } else {
                0
            }; BRICKS_PER_CHUNK],
            bricks: if full { u64::MAX } else { 0 },
            non_air: if full { CHUNK_VOLUME as u32 } else { 0 },
        }
    }

    fn set(&mut self, local: LocalPos, id: VoxelId) -> VoxelId {
        let local = local.wrapped();
        let i = local.index();
        let old = self.ids.set(i, id);
        if old.is_air() != id.is_air() {
            let word = i >> 5;
            let bit = 1u32 << local.x;
            let brick = brick_index(local.x.into(), local.y.into(), local.z.into()) as usize;
            if id.is_air() {
                self.occupancy[word] &= !bit;
                self.brick_counts[brick] -= 1;
                self.non_air -= 1;
                if self.brick_counts[brick] == 0 {
                    self.bricks &= !(1 << brick);
                }
            } else {
                self.occupancy[word] |= bit;
                self.brick_counts[brick] += 1;
                self.non_air += 1;
                self.bricks |= 1 << brick;
            }
        }
        old
    }

    /// The single id of the chunk if every voxel has it.
    fn uniform_id(&self) -> Option<VoxelId> {
        let first = self.ids.get(0);
        let possible = if first.is_air() {
            self.non_air == 0
        } else {
            self.non_air == CHUNK_VOLUME as u32
        };
        (possible && self.ids.iter().all(|v| v == first)).then_some(first)
    }
}

/// One chunk of `32³` voxels. A chunk whose voxels all share one id is stored as that id alone;
/// any other chunk is stored voxel by voxel: a one-bit-per-voxel occupancy mask, a
/// one-bit-per-`8³`-brick summary, and the ids packed in 2, 4, 8 or 16 bits a voxel as the
/// chunk's ids need (through a per-chunk palette where that is narrower), all kept current on
/// every edit. A stored chunk takes 4 KiB of occupancy bits plus 16, 32 or 64 KiB of packed
/// ids, typically 32 KiB where its ids lie in 0-15 and 16 KiB where they lie in 0-3; one that
/// has held more than 128 distinct ids at once may take 64 KiB for good (the standard
/// terrain's 604 stored chunks: 31.6 KiB on average, tables included;
/// [`VoxelWorld::memory_bytes`]).
#[derive(Clone)]
pub struct Chunk {
    repr: ChunkRepr,
}

#[derive(Clone)]
enum ChunkRepr {
    Uniform(VoxelId),
    Dense(Box<DenseChunk>),
}

/// How the DDA sees a chunk: one id for the whole chunk, or per-voxel storage.
#[derive(Clone, Copy)]
pub(crate) enum ChunkView<'a> {
    Uniform(VoxelId),
    Dense(&'a DenseChunk),
}

impl std::fmt::Debug for Chunk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.repr {
            ChunkRepr::Uniform(id) => f.debug_tuple("Chunk::Uniform").field(id).finish(),
            ChunkRepr::Dense(d) => f
                .debug_struct("Chunk::Dense")
                .field("non_air", &d.non_air)
                .finish(),
        }
    }
}

impl Default for Chunk {
    fn default() -> Self {
        Self::filled(VoxelId::AIR)
    }
}

impl Chunk {
    /// A chunk whose every voxel is `id` (no per-voxel storage is allocated).
    #[must_use]
    pub const fn filled(id: VoxelId) -> Self {
        Self {
            repr: ChunkRepr::Uniform(id),
        }
    }

    /// The id at `local`.
    #[inline]
    #[must_use]
    pub fn get(&self, local: LocalPos) -> VoxelId {
        match &self.repr {
            ChunkRepr::Uniform(id) => *id,
            ChunkRepr::Dense(d) => d.ids.get(local.index()),
        }
    }

    /// Sets the voxel at `local` to `id` and returns the id it had. A chunk that becomes one id
    /// throughout drops its per-voxel storage.
    pub fn set(&mut self, local: LocalPos, id: VoxelId) -> VoxelId {
        let old = match &mut self.repr {
            ChunkRepr::Uniform(u) if *u == id => return id,
            ChunkRepr::Uniform(u) => {
                let mut dense = Box::new(DenseChunk::filled(*u));
                let old = dense.set(local, id);
                self.repr = ChunkRepr::Dense(dense);
                old
            }
            ChunkRepr::Dense(d) => d.set(local, id),
        };
        if let ChunkRepr::Dense(d) = &self.repr {
            // Only a set that could complete a uniform chunk pays for the scan, which stops at
            // the first voxel that differs.
            if (d.non_air == 0 || d.non_air == CHUNK_VOLUME as u32)
                && d.ids.get(0) == id
                && let Some(u) = d.uniform_id()
            {
                self.repr = ChunkRepr::Uniform(u);
            }
        }
        old
    }

    /// Heap bytes of the chunk's per-voxel storage (0 for a chunk of one id).
    fn heap_bytes(&self) -> usize {
        match &self.repr {
            ChunkRepr::Uniform(_) => 0,
            ChunkRepr::Dense(d) => {
                size_of::<DenseChunk>() + OCCUPANCY_WORDS * 4 + d.ids.heap_bytes()
            }
        }
    }

    /// Air voxels of a chunk stored voxel by voxel, and those of them in bricks that hold
    /// only air; `(0, 0)` for a chunk of one id.
    pub(crate) fn air_and_brick_air(&self) -> (u64, u64) {
        match &self.repr {
            ChunkRepr::Uniform(_) => (0, 0),
            ChunkRepr::Dense(d) => {
                let (air, brick_air) = d.air_and_brick_air();
                (u64::from(air), u64::from(brick_air))
            }
        }
    }

    /// `Some(id)` when every voxel of the chunk is `id`.
    #[inline]
    #[must_use]
    pub fn uniform_id(&self) -> Option<VoxelId> {
        match &self.repr {
            ChunkRepr::Uniform(id) => Some(*id),
            ChunkRepr::Dense(_) => None,
        }
    }

    /// Whether every voxel of the chunk is air.
    #[inline]
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.uniform_id() == Some(VoxelId::AIR)
    }

    /// Number of voxels that are not air, `0..=32768`.
    #[must_use]
    pub fn non_air_count(&self) -> u32 {
        match &self.repr {
            ChunkRepr::Uniform(id) if id.is_air() => 0,
            ChunkRepr::Uniform(_) => CHUNK_VOLUME as u32,
            ChunkRepr::Dense(d) => d.non_air,
        }
    }

    #[inline]
    pub(crate) fn view(&self) -> ChunkView<'_> {
        match &self.repr {
            ChunkRepr::Uniform(id) => ChunkView::Uniform(*id),
            ChunkRepr::Dense(d) => ChunkView::Dense(d),
        }
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
}

/// A sparse world of chunks addressed by i128 coordinates. Chunks not inserted are *unloaded*:
/// raycasts treat them as air or stop at them (see [`crate::UnloadedPolicy`]).
#[derive(Clone, Debug, Default)]
pub struct VoxelWorld {
    chunks: FxHashMap<ChunkPos, Chunk>,
    /// Summary of every region (`4×4×4` chunks) with a loaded chunk; absent regions have
    /// nothing loaded.
    /// Keyed by a tuple, not an array: `==` on `[i128; 3]` calls `memcmp`.
    regions: FxHashMap<(i128, i128, i128), RegionSummary>,
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
        if !self.chunks.contains_key(&cp) {
            // The chunk of a voxel is always in the world.
            self.summarise(cp, true, false);
            self.chunks.insert(cp, Chunk::default());
        }
        let Some(chunk) = self.chunks.get_mut(&cp) else {
            return VoxelId::AIR;
        };
        let before = chunk.air_and_brick_air();
        let old = chunk.set(pos.local(), id);
        let after = chunk.air_and_brick_air();
        self.air = (
            self.air.0 - before.0 + after.0,
            self.air.1 - before.1 + after.1,
        );
        let occupied = !chunk.is_empty();
        self.summarise(cp, true, occupied);
        old
    }

    /// Records in the region summary whether chunk `pos` is loaded and whether it is occupied
    /// (loaded and not all air); drops a region once nothing in it is loaded.
    /// Also keeps the loaded and occupied chunk ranges current: they grow at once, and are
    /// recomputed from the region summaries when a chunk on their edge leaves them.
    fn summarise(&mut self, pos: ChunkPos, loaded: bool, occupied: bool) {
        let (region, bit) = region_of([pos.x, pos.y, pos.z]);
        let key = (region[0], region[1], region[2]);
        let s = self.regions.entry(key).or_default();
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
        for (&(rx, ry, rz), s) in &self.regions {
            let mut bits = pick(s);
            while bits != 0 {
                let i = bits.trailing_zeros();
                bits &= bits - 1;
                let cell = |shift: u32| i128::from(i >> shift & 3);
                range = Some(grow(
                    range,
                    ChunkPos::new(
                        (rx << REGION_SHIFT) + cell(0),
                        (ry << REGION_SHIFT) + cell(2),
                        (rz << REGION_SHIFT) + cell(4),
                    ),
                ));
            }
        }
        range
    }

    /// The summary of region `region` (chunk coordinates `>> REGION_SHIFT`): all zero when
    /// nothing in it is loaded.
    #[inline]
    pub(crate) fn region(&self, region: [i128; 3]) -> RegionSummary {
        self.regions
            .get(&(region[0], region[1], region[2]))
            .copied()
            .unwrap_or_default()
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
        self.count_air(&chunk, true);
        let old = self.chunks.insert(pos, chunk);
        if let Some(c) = &old {
            self.count_air(c, false);
        }
        Ok(old)
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
    /// per batch, with a setting of its own ([`crate::gpu::GpuWorld::skips_empty_bricks`]).
    ///
    /// Skipping costs a brick test on every air voxel a ray steps through, and pays where rays
    /// cross much air in empty bricks. Unless set, long rays skip when at least a quarter of
    /// the air of the chunks stored voxel by voxel lies in empty bricks (kept current by every
    /// edit). Measured on one CPU thread on the standard terrain (54% of that air in empty
    /// bricks): sight segments between points near the ground ran 0-10% faster stepping, at
    /// every length from 64 to 512 voxels, while the standard camera's rays (40 voxels above
    /// the ground) ran 20-30% faster skipping at every max distance from 64 to 1024. Max
    /// distance is only a proxy for how much open air a ray crosses.
    /// Among scattered voxels (0.5% solid: 7.5% of the air in empty bricks) stepping is faster.
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

    /// Whether a ray of max distance `max_distance` skips empty bricks whole
    /// ([`VoxelWorld::skips_empty_bricks`]).
    #[inline]
    pub(crate) fn skip_bricks_for(&self, max_distance: f32) -> bool {
        self.skip_bricks_set.unwrap_or_else(|| {
            max_distance >= crate::cpu_ref::LONG_RAY
                && bricks_worth_skipping(self.air.0, self.air.1)
        })
    }

    /// Unloads the chunk at `pos` and returns it. Costs a pass over the region summaries when
    /// the removed chunk was on the edge of the loaded or occupied bounds.
    pub fn remove_chunk(&mut self, pos: ChunkPos) -> Option<Chunk> {
        let removed = self.chunks.remove(&pos)?;
        self.summarise(pos, false, false);
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
    /// plus the tables of chunks and region summaries (at their allocated capacity). A chunk
    /// of one id costs only its table entry.
    #[must_use]
    pub fn memory_bytes(&self) -> u64 {
        let chunks: usize = self.chunks.values().map(Chunk::heap_bytes).sum();
        // hashbrown: one control byte per bucket besides the entry.
        let table = |cap: usize, entry: usize| cap * (entry + 1);
        let tables = table(self.chunks.capacity(), size_of::<(ChunkPos, Chunk)>())
            + table(
                self.regions.capacity(),
                size_of::<((i128, i128, i128), RegionSummary)>(),
            );
        (size_of::<Self>() + chunks + tables) as u64
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

/// Places `id` in the voxel in front of the hit face ([`VoxelRaycastHit::previous_pos`]) and
/// returns that position, or `None` (changing nothing) when `id` is [`VoxelId::AIR`] (placing
/// air is not placing a block: use [`break_block`]), the hit has no face (the ray started
/// inside the block), the position leaves the i128 world, or that voxel is not air. Creates the
/// chunk if it is not loaded.
pub fn place_block(world: &mut VoxelWorld, hit: &VoxelRaycastHit, id: VoxelId) -> Option<WorldPos> {
    if id.is_air() {
        return None;
    }
    let pos = hit.previous_pos()?;
    if world.get_voxel(&pos).is_some_and(|v| !v.is_air()) {
        return None;
    }
    world.set_voxel(pos, id);
    Some(pos)
}

/// Sets the hit voxel to air and returns the id it had, or `None` when its chunk is not loaded.
pub fn break_block(world: &mut VoxelWorld, hit: &VoxelRaycastHit) -> Option<VoxelId> {
    world.get_voxel(&hit.voxel_pos)?;
    Some(world.set_voxel(hit.voxel_pos, VoxelId::AIR))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_cell_levels() {
        let cube = |lo: [u32; 3], edge: u32| Some((lo, lo.map(|v| v + edge - 1)));
        // Nothing stored: the half of the chunk holding the voxel.
        assert_eq!(empty_cell(0, 5, 20, 31), Some(([0, 16, 0], [31, 31, 31])));
        // One solid voxel at (9, 1, 2): its brick is not empty. Above it the upper half is
        // empty, and so is the second brick layer; beside it, in the lowest layer, the other
        // bricks of its 16³ block are empty but the block is not; the next block along x is.
        let bricks = 1u64 << brick_index(9, 1, 2);
        assert_eq!(empty_cell(bricks, 9, 1, 2), None);
        assert_eq!(
            empty_cell(bricks, 0, 16, 0),
            Some(([0, 16, 0], [31, 31, 31]))
        );
        assert_eq!(
            empty_cell(bricks, 15, 15, 15),
            Some(([0, 8, 0], [31, 15, 31]))
        );
        assert_eq!(empty_cell(bricks, 3, 7, 7), cube([0, 0, 0], 8));
        assert_eq!(empty_cell(bricks, 7, 0, 15), cube([0, 0, 8], 8));
        assert_eq!(empty_cell(bricks, 16, 0, 0), cube([16, 0, 0], 16));
        // Solid voxels in every brick layer: only 16³ blocks and bricks are left.
        let bricks = (0..4).fold(0u64, |b, k| b | 1 << brick_index(31, 8 * k, 31));
        assert_eq!(empty_cell(bricks, 0, 0, 0), cube([0, 0, 0], 16));
        assert_eq!(empty_cell(bricks, 16, 16, 16), cube([16, 16, 16], 8));
        assert_eq!(empty_cell(bricks, 31, 9, 31), None);
    }

    #[test]
    fn region_summaries_track_edits() {
        let mut w = VoxelWorld::new();
        // Chunk (-1, 4, 5) is cell (3, 0, 1) of region (-1, 1, 1).
        let c = ChunkPos::new(-1, 4, 5);
        let (region, bit) = region_of([c.x, c.y, c.z]);
        assert_eq!(region, [-1, 1, 1]);
        assert_eq!(bit, 1 << (3 | 1 << 4));
        let summary = |w: &VoxelWorld| w.region(region);
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

    /// `tests/oracle.rs`'s `skipping_is_exact` relies on these worlds taking both walks: the
    /// terrain's long rays skip empty bricks, its short ones and the sparse world's step.
    #[test]
    fn terrain_skips_empty_bricks_and_scattered_voxels_do_not() {
        let terrain = crate::scene::Terrain {
            size: [128, 64, 128],
            seed: 0x5EED,
        };
        assert!(terrain.build().skips_empty_bricks());
        let sparse = crate::scene::Sparse {
            size: 96,
            density: 0.01,
            seed: 0x5BA5,
        };
        let mut sparse = sparse.build();
        assert!(!sparse.skips_empty_bricks());
        assert!(!sparse.skip_bricks_for(1e4));
        sparse.set_skip_empty_bricks(Some(true));
        assert!(sparse.skips_empty_bricks() && sparse.skip_bricks_for(1.0));
        let mut terrain = terrain.build();
        assert!(terrain.skip_bricks_for(256.0) && !terrain.skip_bricks_for(255.0));
        // Ids 0-6 in at most 4 bits: 4 KiB of occupancy and at most 32 KiB of records per
        // stored chunk (16 KiB where a chunk's ids are all below 4), against 68 KiB as u16 ids.
        let dense = terrain
            .chunks()
            .filter(|(_, c)| c.uniform_id().is_none())
            .count() as u64;
        let per_chunk = terrain.memory_bytes() / dense;
        assert!((20 << 10..37 << 10).contains(&per_chunk), "{per_chunk}");
        terrain.set_skip_empty_bricks(Some(false));
        assert!(!terrain.skips_empty_bricks() && !terrain.skip_bricks_for(1e4));
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
}
