//! [`Chunk`]: `32³` voxels, stored as one id or voxel by voxel with occupancy summaries.

use crate::coords::{CHUNK_VOLUME, LocalPos};
use crate::world::packed_ids::PackedIds;
use crate::world::summary::{BRICK_EDGE, BRICKS_PER_CHUNK, OCCUPANCY_WORDS, brick_index};
use crate::world::{VoxelId, WorldError};

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

    /// A chunk of `ids` (local order, `CHUNK_VOLUME` of them): the ids packed and every
    /// summary counted in one pass over them.
    fn from_ids(ids: &[VoxelId]) -> Self {
        let packed = PackedIds::from_ids(ids);
        let mut occupancy = Box::new([0u32; OCCUPANCY_WORDS]);
        let mut brick_counts = [0u16; BRICKS_PER_CHUNK];
        let mut non_air = 0;
        for (row, r) in ids.chunks_exact(32).enumerate() {
            let word = r
                .iter()
                .enumerate()
                .fold(0u32, |o, (x, id)| o | u32::from(!id.is_air()) << x);
            occupancy[row] = word;
            non_air += word.count_ones();
            let (y, z) = ((row & 31) as u32, (row >> 5) as u32);
            for bx in 0..4u32 {
                let n = (word >> (8 * bx) & 0xFF).count_ones();
                brick_counts[brick_index(8 * bx, y, z) as usize] += n as u16;
            }
        }
        let bricks = brick_counts
            .iter()
            .enumerate()
            .fold(0u64, |b, (i, &n)| b | u64::from(n > 0) << i);
        Self {
            ids: packed,
            occupancy,
            brick_counts,
            bricks,
            non_air,
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
/// has held more than 128 distinct ids at once takes 64 KiB until [`Chunk::shrink_to_fit`]
/// (the standard terrain's 604 stored chunks: 31.6 KiB on average, tables included;
/// [`VoxelWorld::memory_bytes`](crate::world::VoxelWorld::memory_bytes)).
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

    /// A chunk from its `32³` ids at once, `ids[i]` for the voxel at [`LocalPos::from_index`]`(i)`
    /// (`x + 32·y + 1024·z`): packed and summarised in one pass over them, without the
    /// per-voxel bookkeeping of [`Chunk::set`]. It reads back the same ids and answers every
    /// ray as a chunk filled voxel by voxel would (its packing of the ids may differ). A slice
    /// of one id gives a chunk of that id alone.
    ///
    /// # Errors
    /// [`WorldError::ChunkLength`](WorldError::ChunkLength) when `ids` does not hold
    /// [`CHUNK_VOLUME`](crate::CHUNK_VOLUME) ids.
    pub fn from_ids(ids: &[VoxelId]) -> Result<Self, WorldError> {
        if ids.len() != CHUNK_VOLUME {
            return Err(WorldError::ChunkLength(ids.len()));
        }
        let first = ids[0];
        if ids.iter().all(|&id| id == first) {
            return Ok(Self::filled(first));
        }
        Ok(Self {
            repr: ChunkRepr::Dense(Box::new(DenseChunk::from_ids(ids))),
        })
    }

    /// A chunk whose voxel at each local position is `id_at` of it, asked in local order
    /// (`x` fastest, then `y`, then `z`): [`Chunk::from_ids`] of those ids.
    #[must_use]
    pub fn from_fn(mut id_at: impl FnMut(LocalPos) -> VoxelId) -> Self {
        let ids: Vec<VoxelId> = (0..CHUNK_VOLUME)
            .map(|i| id_at(LocalPos::from_index(i)))
            .collect();
        Self::from_ids(&ids).unwrap_or_else(|_| unreachable!("CHUNK_VOLUME ids"))
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

    /// Packs the chunk's ids in the narrowest width that the ids in use now allow, where that
    /// takes less memory. Edits only ever widen the packing (a chunk that once held more than
    /// 128 distinct ids keeps 16-bit ids), so call this after edits that removed most of a
    /// chunk's ids. Ids and raycast answers do not change; costs one pass over the chunk.
    pub fn shrink_to_fit(&mut self) {
        if let ChunkRepr::Dense(d) = &mut self.repr {
            d.ids.shrink_to_fit();
        }
    }

    /// Heap bytes of the chunk's per-voxel storage (0 for a chunk of one id).
    pub(super) fn heap_bytes(&self) -> usize {
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

    /// One more than the highest local y holding a non-air voxel in each column of `8×8`
    /// bricks (index `bx + 4·bz`), 0 where the column is all air.
    pub(crate) fn column_tops(&self) -> [u8; 16] {
        match &self.repr {
            ChunkRepr::Uniform(id) => [if id.is_air() { 0 } else { 32 }; 16],
            ChunkRepr::Dense(d) => super::tops::column_tops(&d.occupancy),
        }
    }

    /// [`Chunk::column_tops`] of brick column `(bx, bz)` alone, counting rows `y < below` only.
    pub(crate) fn column_top(&self, bx: u32, bz: u32, below: u32) -> u8 {
        match &self.repr {
            ChunkRepr::Uniform(id) => uniform_top(*id, below),
            ChunkRepr::Dense(d) => super::tops::column_top(&d.occupancy, bx, bz, below),
        }
    }

    /// One more than the highest local y holding a non-air voxel in each column of voxels
    /// (index `x + 32·z`), 0 where the column is all air.
    pub(crate) fn voxel_tops(&self) -> [u8; 1024] {
        match &self.repr {
            ChunkRepr::Uniform(id) => [if id.is_air() { 0 } else { 32 }; 1024],
            ChunkRepr::Dense(d) => super::tops::voxel_tops(&d.occupancy),
        }
    }

    /// [`Chunk::voxel_tops`] of voxel column `(x, z)` alone, counting rows `y < below` only.
    pub(crate) fn voxel_top(&self, x: u32, z: u32, below: u32) -> u8 {
        match &self.repr {
            ChunkRepr::Uniform(id) => uniform_top(*id, below),
            ChunkRepr::Dense(d) => super::tops::voxel_top(&d.occupancy, x, z, below),
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

/// The top of any column of a chunk of one id, counting rows `y < below` only: `below` (at
/// most 32) where the id is not air, else 0.
fn uniform_top(id: VoxelId, below: u32) -> u8 {
    if id.is_air() { 0 } else { below.min(32) as u8 }
}
