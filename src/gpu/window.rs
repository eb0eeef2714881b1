//! The window of chunks a `GpuWorld` covers: the i128 ↔ i32 split (everything on the GPU is
//! an i32 voxel relative to the window's lowest voxel), and where each chunk and region of the
//! window has its table entry and record.

use crate::coords::{ChunkPos, VoxelBox, WorldPos};
use crate::cpu_ref::grow_by_a_chunk;
use crate::gpu::layout::{
    FLAG_PARTIAL, FLAG_TOROIDAL, GpuParams, TAG_EMPTY, TAG_MASK, TAG_UNLOADED,
};
use crate::world::REGION_SHIFT;

/// The window of chunks a [`GpuWorld`] covers, and the i128 ↔ i32 split around it.
///
/// A window that follows a center addresses its chunk table toroidally: chunk `c` of the
/// window has table entry `c mod dims` per axis, and region `r` (chunk coordinates
/// `>> REGION_SHIFT`) has region record `r mod region_dims`. A window moved by a chunk then
/// changes only the entries of the chunks that enter it (which take the slots of those that
/// leave); nothing else moves. A window that does not move numbers its entries and records
/// from its anchor, and its batches skip the shader's wrap-around (`FLAG_TOROIDAL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Window {
    pub(super) anchor: ChunkPos,
    pub(super) dims: [u32; 3],
    pub(super) bounds: VoxelBox,
    /// The chunks that may be loaded (inclusive corners): the window less its margin of one
    /// unloaded chunk on every side that is not the i128 world's edge. Rays from outside are
    /// clipped to the window without the conservative tie test at the crossing into it, which
    /// is exact only while the margin holds nothing.
    pub(super) interior: (ChunkPos, ChunkPos),
    /// The region records' grid: room for every region a window of `dims` chunks touches,
    /// wherever it lies.
    region_dims: [u32; 3],
    /// Whether the table is addressed toroidally (a window that follows a center).
    pub(super) toroidal: bool,
}

impl Window {
    /// The window of `dims` chunks from `anchor`, whose chunks may be loaded within
    /// `interior`.
    fn new(
        anchor: ChunkPos,
        dims: [u32; 3],
        interior: (ChunkPos, ChunkPos),
        toroidal: bool,
    ) -> Self {
        let hi = ChunkPos::from_array(std::array::from_fn(|a| {
            anchor.axis(a) + i128::from(dims[a]) - 1
        }));
        Self {
            anchor,
            dims,
            bounds: VoxelBox::from_chunks(anchor, hi),
            interior,
            region_dims: dims.map(|d| d.div_ceil(1 << REGION_SHIFT) + 1),
            toroidal,
        }
    }

    /// The window around the chunks `interior` may hold: grown by a margin of one chunk,
    /// except at the edge of the i128 world. `Err` with the axis's span in chunks where it is
    /// [`MAX_WINDOW_CHUNKS`] or more.
    pub(super) fn around(interior: (ChunkPos, ChunkPos)) -> Result<Self, u128> {
        let (lo, hi) = grow_by_a_chunk(interior.0, interior.1);
        let mut dims = [0; 3];
        for (a, d) in dims.iter_mut().enumerate() {
            // At most 2^128 - 1 (the whole i128 world in chunks), so u128 holds it.
            let span = hi.axis(a).abs_diff(lo.axis(a)) + 1;
            if span >= u128::from(MAX_WINDOW_CHUNKS) {
                return Err(span);
            }
            *d = span as u32;
        }
        Ok(Self::new(lo, dims, interior, false))
    }

    /// The window of `2 · half_extent + 1` chunks a side centered on `center` that may be
    /// loaded, plus its margin: moved inside the i128 world where it would cross its edge
    /// (then the chunks at the edge may be loaded, as the world has no margin there).
    /// `center` must lie in the world and `half_extent` below [`MAX_WINDOW_CHUNKS`] / 2 - 1.
    pub(super) fn following(center: ChunkPos, half_extent: [u32; 3]) -> Self {
        let dims = half_extent.map(|h| 2 * h + 3);
        let mut anchor = [0; 3];
        let mut interior = ([0; 3], [0; 3]);
        for a in 0..3 {
            let span = i128::from(dims[a]) - 1;
            let lo = (center.axis(a) - i128::from(half_extent[a]) - 1)
                .clamp(ChunkPos::MIN_INDEX, ChunkPos::MAX_INDEX - span);
            anchor[a] = lo;
            interior.0[a] = if lo == ChunkPos::MIN_INDEX {
                lo
            } else {
                lo + 1
            };
            interior.1[a] = if lo + span == ChunkPos::MAX_INDEX {
                lo + span
            } else {
                lo + span - 1
            };
        }
        Self::new(
            ChunkPos::from_array(anchor),
            dims,
            (
                ChunkPos::from_array(interior.0),
                ChunkPos::from_array(interior.1),
            ),
            true,
        )
    }

    /// Whether chunk `pos` may be loaded in this window (see `interior`).
    pub(super) fn may_load(&self, pos: ChunkPos) -> bool {
        let (lo, hi) = self.interior;
        (0..3).all(|a| (lo.axis(a)..=hi.axis(a)).contains(&pos.axis(a)))
    }

    /// Whether chunk `pos` lies in the window (its margin included).
    pub(super) fn contains(&self, pos: ChunkPos) -> bool {
        (0..3).all(|a| {
            pos.axis(a)
                .checked_sub(self.anchor.axis(a))
                .is_some_and(|rel| (0..i128::from(self.dims[a])).contains(&rel))
        })
    }

    /// The last chunk of the window (inclusive).
    pub(super) fn last_chunk(&self) -> ChunkPos {
        self.bounds.max.chunk()
    }

    /// For the shader's `beyond_world`: bit `a` set where the window's low face on axis `a` is
    /// the i128 world's edge, bit `3 + a` where its high face is.
    pub(super) fn world_edge(&self) -> u32 {
        let hi = self.last_chunk();
        (0..3).fold(0, |bits, a| {
            bits | u32::from(self.anchor.axis(a) == ChunkPos::MIN_INDEX) << a
                | u32::from(hi.axis(a) == ChunkPos::MAX_INDEX) << (3 + a)
        })
    }

    /// How far the anchor lies into its region, per axis (`0..4`).
    fn region_phase(&self) -> [u32; 3] {
        std::array::from_fn(|a| (self.anchor.axis(a) & ((1 << REGION_SHIFT) - 1)) as u32)
    }

    /// `region_phase` packed for the shader: x in bits 0..2, y in 2..4, z in 4..6.
    pub(super) fn packed_region_phase(&self) -> u32 {
        let [x, y, z] = self.region_phase();
        x | y << 2 | z << 4
    }

    /// The anchor's table entry per axis (`anchor mod dims`, 0 where the table is not
    /// toroidal): for the shader, which finds a window chunk's entry from its window-relative
    /// position.
    pub(super) fn table_phase(&self) -> [u32; 3] {
        if !self.toroidal {
            return [0; 3];
        }
        std::array::from_fn(|a| self.anchor.axis(a).rem_euclid(i128::from(self.dims[a])) as u32)
    }

    /// The region grid's size in records (see `region_dims`).
    pub(super) fn region_dims(&self) -> [u32; 3] {
        self.region_dims
    }

    /// The anchor's region's record per axis (`(anchor >> REGION_SHIFT) mod region_dims`, 0
    /// where the table is not toroidal).
    pub(super) fn region_table_phase(&self) -> [u32; 3] {
        if !self.toroidal {
            return [0; 3];
        }
        std::array::from_fn(|a| {
            (self.anchor.axis(a) >> REGION_SHIFT).rem_euclid(i128::from(self.region_dims[a])) as u32
        })
    }

    /// Number of chunk table entries; the region records follow them.
    pub(super) fn entries(&self) -> usize {
        self.dims.iter().map(|&d| d as usize).product()
    }

    /// Words of the chunk table with its region records, `u64::MAX` for that many or more:
    /// counted without overflow, on any target, before the table is made (a window may span
    /// up to 2^26 chunks an axis, 2^78 in all).
    pub(super) fn table_words(&self) -> u64 {
        let count = |dims: [u32; 3]| dims.iter().map(|&d| u128::from(d)).product::<u128>();
        u64::try_from(count(self.dims) + 4 * count(self.region_dims)).unwrap_or(u64::MAX)
    }

    /// The table entry of chunk `pos`, `None` outside the window.
    pub(super) fn entry_index(&self, pos: ChunkPos) -> Option<usize> {
        self.contains(pos)
            .then(|| self.grid_index(pos.to_array(), self.anchor.to_array(), self.dims))
    }

    /// The index among the region records of region `r` (chunk coordinates `>> REGION_SHIFT`).
    pub(super) fn record_index(&self, r: [i128; 3]) -> usize {
        let first = self.anchor.to_array().map(|c| c >> REGION_SHIFT);
        self.grid_index(r, first, self.region_dims)
    }

    /// Row-major index of `p` in a grid of `dims`: `p mod dims` per axis where the table is
    /// toroidal, else `p - first`.
    fn grid_index(&self, p: [i128; 3], first: [i128; 3], dims: [u32; 3]) -> usize {
        let [x, y, z] = std::array::from_fn::<usize, 3, _>(|a| {
            if self.toroidal {
                p[a].rem_euclid(i128::from(dims[a])) as usize
            } else {
                (p[a] - first[a]) as usize
            }
        });
        x + dims[0] as usize * (y + dims[1] as usize * z)
    }

    /// The shader's `OPTIONS` bits this window decides: `FLAG_TOROIDAL` and `FLAG_PARTIAL`
    /// where it follows a center.
    pub(super) fn flags(&self) -> u32 {
        if self.toroidal {
            FLAG_TOROIDAL | FLAG_PARTIAL
        } else {
            0
        }
    }

    /// Whether the world may hold chunks this window does not (it follows a center): then a
    /// ray that leaves the box of chunks it holds ([`Window::interior`]) ends as unloaded
    /// where it leaves it, under either unloaded policy.
    pub(super) fn partial(&self) -> bool {
        self.toroidal
    }

    /// Whether voxel `p` lies in the box of chunks this window holds (`interior`).
    pub(super) fn holds(&self, p: WorldPos) -> bool {
        self.may_load(p.chunk())
    }

    /// The regions holding at least one chunk of the window (inclusive corners).
    pub(super) fn regions(&self) -> ([i128; 3], [i128; 3]) {
        let hi = self.last_chunk();
        (
            self.anchor.to_array().map(|c| c >> REGION_SHIFT),
            hi.to_array().map(|c| c >> REGION_SHIFT),
        )
    }

    /// The region record of region `r` (see `RegionCache::run` in `cpu_ref.rs` and
    /// `region_run` in `shaders/window.wgsl`): the chunks that block a run of empty chunks under
    /// `UnloadedPolicy::Air` (loaded and not all air), then under `Stop` (also not loaded),
    /// each as two words, read from the chunk entries `table` (what the GPU has, which may
    /// be older than the world for chunks edited but not passed to `update_chunks`). Chunks of
    /// the region outside the window count as not loaded.
    pub(super) fn region_record(&self, table: &[u32], r: [i128; 3]) -> [u32; 4] {
        let (mut loaded, mut occupied) = (0u64, 0u64);
        for bit in 0..64u32 {
            let entry = [bit & 3, bit >> 2 & 3, bit >> 4];
            let pos = ChunkPos::from_array(std::array::from_fn(|a| {
                (r[a] << REGION_SHIFT) + i128::from(entry[a])
            }));
            let tag = match self.entry_index(pos) {
                Some(i) => table[i] & TAG_MASK,
                None => TAG_UNLOADED,
            };
            loaded |= u64::from(tag != TAG_UNLOADED) << bit;
            occupied |= u64::from(tag != TAG_UNLOADED && tag != TAG_EMPTY) << bit;
        }
        let air = occupied;
        let stop = occupied | !loaded;
        [
            air as u32,
            (air >> 32) as u32,
            stop as u32,
            (stop >> 32) as u32,
        ]
    }

    /// The window-relative voxel of a point (voxel `p`, offset `sub` in `[0, 1)`) that the
    /// shader can start a ray made there at: one the window holds, with a voxel to spare below
    /// it on each axis where the point lies on the voxel's low face (a ray going down starts in
    /// the voxel below, `first_voxel`). `None` elsewhere: such rays are made on the host.
    pub(super) fn start_of(&self, p: WorldPos, sub: glam::Vec3) -> Option<[i32; 3]> {
        let fits = (0..3).all(|a| {
            let low = if sub[a] == 0.0 {
                p.axis(a).checked_sub(1)
            } else {
                Some(p.axis(a))
            };
            low.is_some_and(|low| self.bounds.min.axis(a) <= low)
                && p.axis(a) <= self.bounds.max.axis(a)
        });
        if fits { self.relative(p) } else { None }
    }

    /// Voxel `p` relative to the window's lowest voxel; `None` where that does not fit in i32.
    pub(super) fn relative(&self, p: WorldPos) -> Option<[i32; 3]> {
        let mut out = [0; 3];
        for (a, o) in out.iter_mut().enumerate() {
            *o = i32::try_from(p.axis(a).checked_sub(self.bounds.min.axis(a))?).ok()?;
        }
        Some(out)
    }

    /// The world voxel of window-relative `v`; `None` beyond the i128 world.
    pub(super) fn absolute(&self, v: [i32; 3]) -> Option<WorldPos> {
        let mut out = [0; 3];
        for (a, o) in out.iter_mut().enumerate() {
            *o = self.bounds.min.axis(a).checked_add(i128::from(v[a]))?;
        }
        Some(WorldPos::from_array(out))
    }

    /// The parameters every dispatch on this window shares (the others are the dispatch's).
    pub(super) fn params(&self) -> GpuParams {
        GpuParams {
            dims: self.dims,
            region_phase: self.packed_region_phase(),
            table_phase: self.table_phase(),
            world_edge: self.world_edge(),
            region_dims: self.region_dims(),
            region_table_phase: self.region_table_phase(),
            ..GpuParams::default()
        }
    }
}

/// The most chunks a window spans on an axis (exclusive): window-relative voxel coordinates
/// must fit in i32, with room for a run of empty chunks that reaches past the window to the
/// end of its region.
pub(super) const MAX_WINDOW_CHUNKS: u32 = (1 << 26) - (1 << REGION_SHIFT);

/// Calls `f` on every point of the inclusive box `lo..=hi`.
pub(super) fn for_each_in(lo: [i128; 3], hi: [i128; 3], mut f: impl FnMut([i128; 3])) {
    for z in lo[2]..=hi[2] {
        for y in lo[1]..=hi[1] {
            for x in lo[0]..=hi[0] {
                f([x, y, z]);
            }
        }
    }
}
