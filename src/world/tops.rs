//! Column tops: how high the non-air voxels of each column of bricks, and of each column of
//! voxels, reach inside a region. Above a column's top, up to the region's top, there is only
//! air (or unloaded space): an empty box the DDA crosses in one skip. Rays over terrain (a
//! camera's, sight lines) cross whole chunk columns this way instead of walking the air above
//! the ground brick by brick, and a sweep's air search (`air_before`) follows the ground down to
//! the voxel.

use super::summary::BRICK_SHIFT;

/// Columns of bricks along a region's edge (`128 / 8`).
const COLUMNS_PER_EDGE: u32 = 16;
/// Region-local y of a region's highest voxel.
const REGION_TOP: u32 = 127;
/// Voxel columns along a region's edge.
const VOXELS_PER_EDGE: u32 = 128;

/// Index of the voxel column at region-local `(x, z)` (each in `0..128`).
#[inline]
const fn voxel_column(x: u32, z: u32) -> usize {
    (x + VOXELS_PER_EDGE * z) as usize
}

/// Index of the brick column at region-local voxel column `(x, z)` (each in `0..128`).
#[inline]
const fn column_index(x: u32, z: u32) -> usize {
    ((x >> BRICK_SHIFT) + COLUMNS_PER_EDGE * (z >> BRICK_SHIFT)) as usize
}

/// Index of brick column `(bx, bz)` (each in `0..4`) of the chunk at region-local chunk
/// position `c`.
#[inline]
const fn brick_column(c: [u32; 3], bx: u32, bz: u32) -> usize {
    column_index(
        (c[0] * 4 + bx) << BRICK_SHIFT,
        (c[2] * 4 + bz) << BRICK_SHIFT,
    )
}

/// Column tops of one region (`4×4×4` chunks, `128³` voxels). Every value is one more than the
/// highest y holding a non-air voxel in its footprint (0 when it holds none), so that the
/// voxels from the value up to the top are air.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ColumnTops {
    /// Per chunk layer of the region, per brick column ([`column_index`]): the top inside that
    /// layer's chunk, in chunk-local y (`0..=32`).
    layers: [[u8; 256]; 4],
    /// Per brick column: the top over the four layers, in region-local y (`0..=128`).
    bricks: [u8; 256],
    /// Per chunk column (`cx + 4·cz`): the highest of its 16 brick columns.
    chunks: [u8; 16],
    /// The highest of the region.
    all: u8,
    /// Per voxel column ([`voxel_column`]): the top over the four layers, in region-local y
    /// (`0..=128`). Kept by the world, which reads the chunks of a column's four layers.
    voxels: [u8; 16384],
}

impl Default for ColumnTops {
    fn default() -> Self {
        Self {
            layers: [[0; 256]; 4],
            bricks: [0; 256],
            chunks: [0; 16],
            all: 0,
            voxels: [0; 16384],
        }
    }
}

impl ColumnTops {
    /// The top of brick column `(bx, bz)` (each in `0..4`) recorded for the chunk at
    /// region-local chunk position `c`, chunk-local.
    #[inline]
    pub(crate) fn top(&self, c: [u32; 3], bx: u32, bz: u32) -> u8 {
        self.layers[c[1] as usize][brick_column(c, bx, bz)]
    }

    /// The top of voxel column `(x, z)` (region-local, each in `0..128`), region-local.
    #[inline]
    pub(crate) fn voxel_top(&self, x: u32, z: u32) -> u8 {
        self.voxels[voxel_column(x, z)]
    }

    /// Sets the top of voxel column `(x, z)` (region-local, each in `0..128`) to `top`
    /// (region-local, `0..=128`).
    #[inline]
    pub(crate) fn set_voxel_top(&mut self, x: u32, z: u32, top: u8) {
        self.voxels[voxel_column(x, z)] = top;
    }

    /// Sets the tops of the `32×32` voxel columns of chunk column `(cx, cz)` (each in `0..4`)
    /// to `tops` (index `x + 32·z`, chunk-column local; region-local tops).
    pub(crate) fn set_voxel_tops(&mut self, cx: u32, cz: u32, tops: &[u8; 1024]) {
        for z in 0..32 {
            let from = voxel_column(cx << 5, cz << 5 | z);
            self.voxels[from..from + 32]
                .copy_from_slice(&tops[(32 * z) as usize..(32 * z + 32) as usize]);
        }
    }

    /// Records `tops` (as [`Chunk::column_tops`](super::Chunk) gives them) for the chunk at
    /// region-local chunk position `c` (each in `0..4`), and updates the maxima over them.
    pub(crate) fn set_chunk(&mut self, c: [u32; 3], tops: [u8; 16]) {
        for (i, &top) in tops.iter().enumerate() {
            self.record(c, i as u32 & 3, i as u32 >> 2, top);
        }
        self.update_maxima(c);
    }

    /// Records the top of one brick column `(bx, bz)` of the chunk at `c`, and updates the
    /// maxima over it.
    pub(crate) fn set_top(&mut self, c: [u32; 3], bx: u32, bz: u32, top: u8) {
        self.record(c, bx, bz, top);
        self.update_maxima(c);
    }

    /// Records one brick column's top in its layer and takes the highest over the layers.
    fn record(&mut self, c: [u32; 3], bx: u32, bz: u32, top: u8) {
        let col = brick_column(c, bx, bz);
        self.layers[c[1] as usize][col] = top;
        self.bricks[col] = (0..4)
            .rev()
            .find(|&l| self.layers[l][col] != 0)
            .map_or(0, |l| l as u8 * 32 + self.layers[l][col]);
    }

    /// The maxima over the chunk column of chunk `c` and over the region.
    fn update_maxima(&mut self, c: [u32; 3]) {
        let [cx, _, cz] = c;
        self.chunks[(cx + 4 * cz) as usize] = (0..16)
            .map(|i| self.bricks[brick_column(c, i & 3, i >> 2)])
            .max()
            .unwrap_or(0);
        self.all = self.chunks.iter().copied().max().unwrap_or(0);
    }

    /// The largest empty box above the tops that holds region-local voxel `(x, y, z)` (each in
    /// `0..128`): the region's, its chunk column's or its brick column's footprint, from that
    /// footprint's top up to the region's top, as inclusive region-local corners. `None` when
    /// `y` is below the top of its brick column.
    #[inline]
    pub(crate) fn box_above(&self, x: u32, y: u32, z: u32) -> Option<([u32; 3], [u32; 3])> {
        let all = u32::from(self.all);
        if all <= y {
            return Some(([0, all, 0], [REGION_TOP; 3]));
        }
        let c = u32::from(self.chunks[((x >> 5) + 4 * (z >> 5)) as usize]);
        if c <= y {
            let (x0, z0) = (x & !31, z & !31);
            return Some(([x0, c, z0], [x0 + 31, REGION_TOP, z0 + 31]));
        }
        let b = u32::from(self.bricks[column_index(x, z)]);
        if b <= y {
            let (x0, z0) = (x & !7, z & !7);
            return Some(([x0, b, z0], [x0 + 7, REGION_TOP, z0 + 7]));
        }
        None
    }
}

impl ColumnTops {
    /// Whether every voxel of the region-local box `x0..=x1`, `y0..`, `z0..=z1` (each in
    /// `0..128`) lies at or above its voxel column's top: air, or not loaded. Looks at the
    /// region's top, then the chunk columns', the brick columns' and the voxel columns' only
    /// where needed.
    pub(crate) fn air_above(&self, [x0, x1]: [u32; 2], y0: u32, [z0, z1]: [u32; 2]) -> bool {
        if u32::from(self.all) <= y0 {
            return true;
        }
        for cz in z0 >> 5..=z1 >> 5 {
            for cx in x0 >> 5..=x1 >> 5 {
                if u32::from(self.chunks[(cx + 4 * cz) as usize]) <= y0 {
                    continue;
                }
                let (bx0, bx1) = (
                    x0.max(cx << 5) >> BRICK_SHIFT,
                    x1.min(cx << 5 | 31) >> BRICK_SHIFT,
                );
                let (bz0, bz1) = (
                    z0.max(cz << 5) >> BRICK_SHIFT,
                    z1.min(cz << 5 | 31) >> BRICK_SHIFT,
                );
                for bz in bz0..=bz1 {
                    for bx in bx0..=bx1 {
                        if u32::from(self.bricks[(bx + COLUMNS_PER_EDGE * bz) as usize]) <= y0 {
                            continue;
                        }
                        // The brick column reaches above `y0`: its voxel columns in the box.
                        let (vx0, vx1) = (x0.max(bx << BRICK_SHIFT), x1.min(bx << BRICK_SHIFT | 7));
                        let (vz0, vz1) = (z0.max(bz << BRICK_SHIFT), z1.min(bz << BRICK_SHIFT | 7));
                        for z in vz0..=vz1 {
                            let row = &self.voxels[voxel_column(vx0, z)..=voxel_column(vx1, z)];
                            if row.iter().any(|&top| u32::from(top) > y0) {
                                return false;
                            }
                        }
                    }
                }
            }
        }
        true
    }
}

impl super::VoxelWorld {
    /// Whether every voxel of the inclusive box `lo..=hi` (world voxel coordinates) lies above
    /// the column tops of its region: air, or not loaded (so air under
    /// `UnloadedPolicy::Air`). Conservative: `false` can also mean that the brick columns the
    /// box touches hold a non-air voxel somewhere above its bottom. Costs a region lookup per
    /// region the box touches, so keep boxes small.
    pub(crate) fn air_above_tops(&self, lo: [i128; 3], hi: [i128; 3]) -> bool {
        const SHIFT: u32 = crate::coords::CHUNK_SHIFT + super::summary::REGION_SHIFT;
        const MASK: i128 = (1 << SHIFT) - 1;
        let (r_lo, r_hi) = (lo.map(|v| v >> SHIFT), hi.map(|v| v >> SHIFT));
        // Within a region, the box's extent in region-local voxels.
        let local = |r: i128, a: usize| -> [u32; 2] {
            let from = if r == r_lo[a] {
                (lo[a] & MASK) as u32
            } else {
                0
            };
            let to = if r == r_hi[a] {
                (hi[a] & MASK) as u32
            } else {
                MASK as u32
            };
            [from, to]
        };
        let mut ry = r_lo[1];
        loop {
            let y0 = local(ry, 1)[0];
            let mut rz = r_lo[2];
            loop {
                let mut rx = r_lo[0];
                loop {
                    if let Some(r) = self.regions.get(&(rx, ry, rz))
                        && !r.tops.air_above(local(rx, 0), y0, local(rz, 2))
                    {
                        return false;
                    }
                    if rx == r_hi[0] {
                        break;
                    }
                    rx += 1;
                }
                if rz == r_hi[2] {
                    break;
                }
                rz += 1;
            }
            if ry == r_hi[1] {
                break;
            }
            ry += 1;
        }
        true
    }
}

/// The top (chunk-local y + 1, 0 when empty) of brick column `(bx, bz)` (each in `0..4`) of
/// the occupancy bits of a chunk (word `y + 32·z`, bit `x`), looking at rows `y < below` only.
pub(crate) fn column_top(occupancy: &[u32; 1024], bx: u32, bz: u32, below: u32) -> u8 {
    let byte = 0xFF << (bx << BRICK_SHIFT);
    (0..below.min(32))
        .rev()
        .find(|&y| {
            (bz << BRICK_SHIFT..(bz + 1) << BRICK_SHIFT)
                .any(|z| occupancy[(y + 32 * z) as usize] & byte != 0)
        })
        .map_or(0, |y| y as u8 + 1)
}

/// The top (chunk-local y + 1, 0 when empty) of voxel column `(x, z)` of the occupancy bits of
/// a chunk (word `y + 32·z`, bit `x`), looking at rows `y < below` only.
pub(crate) fn voxel_top(occupancy: &[u32; 1024], x: u32, z: u32, below: u32) -> u8 {
    (0..below.min(32))
        .rev()
        .find(|&y| occupancy[(y + 32 * z) as usize] >> x & 1 != 0)
        .map_or(0, |y| y as u8 + 1)
}

/// The tops of all 1024 voxel columns of a chunk's occupancy bits (index `x + 32·z`).
pub(crate) fn voxel_tops(occupancy: &[u32; 1024]) -> [u8; 1024] {
    let mut tops = [0u8; 1024];
    for z in 0..32u32 {
        // The columns whose top is not found yet, one bit each.
        let mut open = u32::MAX;
        for y in (0..32u32).rev() {
            let mut found = occupancy[(y + 32 * z) as usize] & open;
            open &= !found;
            while found != 0 {
                tops[(found.trailing_zeros() + 32 * z) as usize] = y as u8 + 1;
                found &= found - 1;
            }
            if open == 0 {
                break;
            }
        }
    }
    tops
}

/// The tops of all 16 brick columns of a chunk's occupancy bits (index `bx + 4·bz`).
pub(crate) fn column_tops(occupancy: &[u32; 1024]) -> [u8; 16] {
    let mut tops = [0u8; 16];
    let mut open = 16;
    for y in (0..32u32).rev() {
        for bz in 0..4u32 {
            let rows = (bz << BRICK_SHIFT..(bz + 1) << BRICK_SHIFT)
                .fold(0, |w, z| w | occupancy[(y + 32 * z) as usize]);
            for bx in 0..4u32 {
                let top = &mut tops[(bx + 4 * bz) as usize];
                if *top == 0 && rows >> (bx << BRICK_SHIFT) & 0xFF != 0 {
                    *top = y as u8 + 1;
                    open -= 1;
                }
            }
        }
        if open == 0 {
            break;
        }
    }
    tops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tops_and_cells() {
        let mut occ = [0u32; 1024];
        // Voxel (9, 5, 2): brick column (1, 0); voxel (31, 20, 31): brick column (3, 3).
        occ[5 + 32 * 2] |= 1 << 9;
        occ[20 + 32 * 31] |= 1 << 31;
        let tops = column_tops(&occ);
        assert_eq!(tops[1], 6);
        assert_eq!(tops[15], 21);
        assert_eq!(tops.iter().filter(|&&t| t != 0).count(), 2);
        assert_eq!(column_top(&occ, 3, 3, 32), 21);
        assert_eq!(column_top(&occ, 3, 3, 20), 0);
        let mut t = ColumnTops::default();
        // The chunk sits at region-local chunk (1, 2, 0): y 64..96, x 32..64.
        t.set_chunk([1, 2, 0], tops);
        assert_eq!(t.top([1, 2, 0], 1, 0), 6);
        assert_eq!(t.top([1, 2, 0], 3, 3), 21);
        assert_eq!(t.all, 64 + 21);
        // Above everything: the whole region above its top.
        assert_eq!(t.box_above(0, 100, 0), Some(([0, 85, 0], [127, 127, 127])));
        // Below the region's top but above the chunk column's (another chunk column).
        assert_eq!(t.box_above(0, 0, 0), Some(([0, 0, 0], [31, 127, 31])));
        // In the chunk column, above brick column (1, 0)'s top but below (3, 3)'s.
        assert_eq!(
            t.box_above(32 + 9, 71, 2),
            Some(([40, 70, 0], [47, 127, 7]))
        );
        assert_eq!(t.box_above(32 + 9, 69, 2), None);
        // One column lowered, then the chunk removed: its columns cleared.
        t.set_top([1, 2, 0], 3, 3, 2);
        assert_eq!(t.all, 64 + 6);
        assert_eq!(
            t.box_above(32 + 31, 80, 31),
            Some(([0, 70, 0], [127, 127, 127]))
        );
        t.set_chunk([1, 2, 0], [0; 16]);
        assert_eq!(t, ColumnTops::default());
    }

    /// The air search looks past a brick column's top to its voxel columns: a box beside the
    /// one tall voxel of a brick column is air above the rest of that column.
    #[test]
    fn air_above_follows_voxel_columns() {
        let mut occ = [0u32; 1024];
        // Chunk-local voxel (9, 5, 2) (brick column (1, 0)) and a ground layer at y = 0.
        occ[5 + 32 * 2] |= 1 << 9;
        for z in 0..32 {
            occ[32 * z] = u32::MAX;
        }
        let voxels = voxel_tops(&occ);
        assert_eq!(voxels[9 + 32 * 2], 6);
        assert_eq!(voxels[10 + 32 * 2], 1);
        assert_eq!(voxel_top(&occ, 9, 2, 5), 1);
        assert_eq!(voxel_top(&occ, 9, 2, 32), 6);
        let mut t = ColumnTops::default();
        t.set_chunk([0, 0, 0], column_tops(&occ));
        t.set_voxel_tops(0, 0, &voxels);
        // Above the ground, in brick column (1, 0) but beside the tall voxel.
        assert!(t.air_above([10, 15], 1, [0, 7]));
        assert!(t.air_above([8, 15], 1, [3, 7]));
        // Over the tall voxel, below its top; at its top.
        assert!(!t.air_above([8, 9], 5, [2, 2]));
        assert!(t.air_above([8, 9], 6, [2, 2]));
        // Into the ground.
        assert!(!t.air_above([20, 21], 0, [20, 21]));
    }
}
