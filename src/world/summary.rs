//! The occupancy summaries the DDA skips empty space with: `8³` bricks inside a chunk, chunks
//! inside a region of `4×4×4` chunks, both as 4×4×4 bit masks read by [`empty_block`].

use crate::coords::CHUNK_VOLUME;

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
    summary_bit(x >> BRICK_SHIFT, y >> BRICK_SHIFT, z >> BRICK_SHIFT)
}

/// Bit of entry `(x, y, z)` (each in `0..4`) in a 4×4×4 summary mask: a chunk's brick summary
/// (entries are `8³` bricks) and a region's chunk summary (entries are chunks) share this layout.
#[inline]
#[must_use]
const fn summary_bit(x: u32, y: u32, z: u32) -> u32 {
    x | y << 2 | z << 4
}

/// Bits of the eight entries of the `2×2×2` block whose lowest entry is entry 0, in the layout
/// of [`summary_bit`]: shifted by a block's lowest entry's bit it selects that block's entries.
const BLOCK_BITS: u64 = 0x0033_0033;
/// Bits of the 16 entries of the lowest layer (entries with y = 0); shifted by `4 · y` it selects
/// layer y.
const LAYER_BITS: u64 = 0x000F_000F_000F_000F;

/// The largest empty block of entries around entry `(x, y, z)` (each in `0..4`) of a 4×4×4
/// summary `mask` (bit [`summary_bit`] set = the entry is not empty), as inclusive entry corners
/// `(lo, hi)`; `None` when that entry is not empty. The first empty one of: the lower or upper
/// half (4×2×4 entries, as above a terrain's surface), the entry's layer (4×1×4), its aligned
/// `2×2×2` block, the entry alone.
#[inline(always)]
pub(crate) const fn empty_block(mask: u64, x: u32, y: u32, z: u32) -> Option<([u32; 3], [u32; 3])> {
    if mask >> summary_bit(x, y, z) & 1 != 0 {
        return None;
    }
    let y2 = y & !1;
    if mask & (LAYER_BITS * 0x11) << (4 * y2) == 0 {
        return Some(([0, y2, 0], [3, y2 + 1, 3]));
    }
    if mask & LAYER_BITS << (4 * y) == 0 {
        return Some(([0, y, 0], [3, y, 3]));
    }
    let lo = [x & !1, y2, z & !1];
    if mask >> summary_bit(lo[0], lo[1], lo[2]) & BLOCK_BITS == 0 {
        return Some((lo, [lo[0] + 1, lo[1] + 1, lo[2] + 1]));
    }
    Some(([x, y, z], [x, y, z]))
}

/// The largest empty box of whole bricks around local voxel `(x, y, z)` (each in `0..32`), given the chunk's
/// brick summary `bricks` (bit set = brick holds a non-air voxel), as inclusive local corners
/// `(lo, hi)`; `None` when the voxel's brick is not empty. [`empty_block`] over bricks: the
/// lower or upper half of the chunk (32×16×32), the layer of bricks the voxel is in (32×8×32),
/// its aligned 16³ block (2×2×2 bricks), its brick (8³). Twin of `empty_box` in
/// `shaders/window.wgsl`.
#[inline(always)]
pub(crate) const fn empty_box(bricks: u64, x: u32, y: u32, z: u32) -> Option<([u32; 3], [u32; 3])> {
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
/// chunk at [`summary_bit`] of the chunk's position inside the region. Kept current by every
/// edit of [`VoxelWorld`](super::VoxelWorld); the DDA crosses runs of empty chunks in one step with it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RegionSummary {
    /// Bit set: the chunk is loaded.
    pub(crate) loaded: u64,
    /// Bit set: the chunk is loaded and holds a voxel that is not air.
    pub(crate) occupied: u64,
}

/// The position of chunk `c` inside its region, each coordinate in `0..4`.
#[inline]
pub(crate) fn chunk_in_region(c: [i128; 3]) -> [u32; 3] {
    let m = (1 << REGION_SHIFT) - 1;
    c.map(|v| (v & m) as u32)
}

/// The region holding chunk `c` (`c >> REGION_SHIFT` per axis) and the chunk's bit in its
/// [`RegionSummary`].
#[inline]
pub(crate) fn region_of(c: [i128; 3]) -> ([i128; 3], u64) {
    let [x, y, z] = chunk_in_region(c);
    (c.map(|v| v >> REGION_SHIFT), 1 << summary_bit(x, y, z))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_box_levels() {
        let cube = |lo: [u32; 3], edge: u32| Some((lo, lo.map(|v| v + edge - 1)));
        // Nothing stored: the half of the chunk holding the voxel.
        assert_eq!(empty_box(0, 5, 20, 31), Some(([0, 16, 0], [31, 31, 31])));
        // One solid voxel at (9, 1, 2): its brick is not empty. Above it the upper half is
        // empty, and so is the second brick layer; beside it, in the lowest layer, the other
        // bricks of its 16³ block are empty but the block is not; the next block along x is.
        let bricks = 1u64 << brick_index(9, 1, 2);
        assert_eq!(empty_box(bricks, 9, 1, 2), None);
        assert_eq!(
            empty_box(bricks, 0, 16, 0),
            Some(([0, 16, 0], [31, 31, 31]))
        );
        assert_eq!(
            empty_box(bricks, 15, 15, 15),
            Some(([0, 8, 0], [31, 15, 31]))
        );
        assert_eq!(empty_box(bricks, 3, 7, 7), cube([0, 0, 0], 8));
        assert_eq!(empty_box(bricks, 7, 0, 15), cube([0, 0, 8], 8));
        assert_eq!(empty_box(bricks, 16, 0, 0), cube([16, 0, 0], 16));
        // Solid voxels in every brick layer: only 16³ blocks and bricks are left.
        let bricks = (0..4).fold(0u64, |b, k| b | 1 << brick_index(31, 8 * k, 31));
        assert_eq!(empty_box(bricks, 0, 0, 0), cube([0, 0, 0], 16));
        assert_eq!(empty_box(bricks, 16, 16, 16), cube([16, 16, 16], 8));
        assert_eq!(empty_box(bricks, 31, 9, 31), None);
    }
}
