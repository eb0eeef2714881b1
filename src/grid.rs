//! Cell-by-cell traversal of a 2D or 3D grid of any cell size along a segment: the broad phase
//! of a spatial hash (which buckets does the segment from A to B touch?).

/// Why a [`GridTraversal`] could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GridError {
    /// An endpoint coordinate is NaN or infinite.
    #[error("segment endpoint is not finite")]
    NonFiniteEndpoint,
    /// A cell size is not a finite positive number.
    #[error("cell size must be finite and positive")]
    BadCellSize,
    /// An endpoint's cell index does not fit in i64.
    #[error("segment endpoint lies outside the i64 cell range")]
    OutOfRange,
}

/// One cell visited by a [`GridTraversal`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GridCell<const D: usize> {
    /// Cell index per axis: `floor(coordinate / cell_size)`.
    pub cell: [i64; D],
    /// Fraction of the segment (`0` at A, `1` at B) where it enters the cell.
    pub t_enter: f64,
    /// Fraction of the segment where it leaves the cell, at most `1`.
    pub t_exit: f64,
    /// Axis whose boundary the segment crossed to enter the cell; `None` for the first cell.
    pub entry_axis: Option<usize>,
}

/// Every cell of a `D`-dimensional grid (`D` = 2 or 3) that the segment from `a` to `b`
/// passes through, in order from `a`, ending with the last cell entered at or before `b`: the
/// cell that holds `b`, except that a `b` lying exactly on a face crossed moving down ends in the
/// cell below that face (the same face rule as at the start). The walk is the same
/// DDA as the voxel raycaster (crossing distances computed from counts, ties in axis order,
/// a start point on a cell face moving down starts in the lower cell), in f64.
///
/// Stop early by breaking out of the loop, the iterator's equivalent of a callback returning
/// "stop".
///
/// # Example
/// ```
/// use voxcast::GridTraversal;
/// let cells: Vec<[i64; 2]> = GridTraversal::new([1.0, 1.0], [25.0, 12.0], [10.0, 10.0])?
///     .map(|c| c.cell)
///     .collect();
/// assert_eq!(cells, [[0, 0], [1, 0], [2, 0], [2, 1]]);
/// # Ok::<(), voxcast::GridError>(())
/// ```
#[derive(Clone, Debug)]
pub struct GridTraversal<const D: usize> {
    cell: [i64; D],
    step: [i64; D],
    b: [f64; D],
    inv: [f64; D],
    enabled: [bool; D],
    n: [u64; D],
    t: f64,
    entry_axis: Option<usize>,
    done: bool,
}

/// A traversal of a 2D grid.
pub type GridTraversal2D = GridTraversal<2>;
/// A traversal of a 3D grid.
pub type GridTraversal3D = GridTraversal<3>;

impl<const D: usize> GridTraversal<D> {
    /// Starts a traversal of the segment `a → b` through cells of size `cell_size` (per axis).
    /// A segment of length zero visits the one cell holding `a`.
    ///
    /// # Errors
    /// [`GridError`] for non-finite endpoints, a cell size that is not finite and positive, or
    /// an endpoint whose cell index leaves i64.
    pub fn new(a: [f64; D], b: [f64; D], cell_size: [f64; D]) -> Result<Self, GridError> {
        if a.iter().chain(&b).any(|v| !v.is_finite()) {
            return Err(GridError::NonFiniteEndpoint);
        }
        if cell_size.iter().any(|s| !(s.is_finite() && *s > 0.0)) {
            return Err(GridError::BadCellSize);
        }
        let mut it = Self {
            cell: [0; D],
            step: [1; D],
            b: [1.0; D],
            inv: [1.0; D],
            enabled: [false; D],
            n: [0; D],
            t: 0.0,
            entry_axis: None,
            done: false,
        };
        const LIMIT: f64 = 9.0e18;
        for k in 0..D {
            let pa = a[k] / cell_size[k];
            let pb = b[k] / cell_size[k];
            if pa.abs() >= LIMIT || pb.abs() >= LIMIT {
                return Err(GridError::OutOfRange);
            }
            let d = b[k] - a[k];
            let whole = pa.floor();
            let frac = pa - whole;
            it.cell[k] = whole as i64;
            if d < 0.0 {
                it.step[k] = -1;
                if frac == 0.0 {
                    it.cell[k] -= 1;
                    it.b[k] = 1.0;
                } else {
                    it.b[k] = frac;
                }
            } else {
                it.b[k] = 1.0 - frac;
            }
            if d != 0.0 {
                let inv = cell_size[k] / d.abs();
                if inv.is_finite() {
                    it.enabled[k] = true;
                    it.inv[k] = inv;
                }
            }
        }
        Ok(it)
    }

    fn crossing(&self, k: usize) -> f64 {
        if self.enabled[k] {
            (self.b[k] + self.n[k] as f64) * self.inv[k]
        } else {
            f64::INFINITY
        }
    }
}

impl<const D: usize> Iterator for GridTraversal<D> {
    type Item = GridCell<D>;

    fn next(&mut self) -> Option<GridCell<D>> {
        if self.done {
            return None;
        }
        let mut axis = 0;
        let mut t_next = f64::INFINITY;
        for k in 0..D {
            let t = self.crossing(k);
            if t < t_next {
                t_next = t;
                axis = k;
            }
        }
        let item = GridCell {
            cell: self.cell,
            t_enter: self.t,
            t_exit: t_next.min(1.0),
            entry_axis: self.entry_axis,
        };
        match self.cell[axis].checked_add(self.step[axis]) {
            Some(c) if t_next <= 1.0 => {
                self.cell[axis] = c;
                self.n[axis] += 1;
                self.t = t_next;
                self.entry_axis = Some(axis);
            }
            _ => self.done = true,
        }
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visits_every_cell_without_diagonal_jumps() {
        let cells: Vec<_> = GridTraversal::new([0.5, 0.5], [2.5, 2.5], [1.0, 1.0])
            .expect("valid")
            .collect();
        for w in cells.windows(2) {
            let diff: i64 = (0..2).map(|k| (w[1].cell[k] - w[0].cell[k]).abs()).sum();
            assert_eq!(diff, 1, "{w:?}");
        }
        assert_eq!(cells.first().map(|c| c.cell), Some([0, 0]));
        assert_eq!(cells.last().map(|c| c.cell), Some([2, 2]));
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(
            GridTraversal::new([f64::NAN, 0.0], [1.0, 1.0], [1.0, 1.0]).err(),
            Some(GridError::NonFiniteEndpoint)
        );
        assert_eq!(
            GridTraversal::new([0.0, 0.0], [1.0, 1.0], [0.0, 1.0]).err(),
            Some(GridError::BadCellSize)
        );
        assert_eq!(
            GridTraversal::new([1e300, 0.0], [1.0, 1.0], [1.0, 1.0]).err(),
            Some(GridError::OutOfRange)
        );
    }

    #[test]
    fn zero_length_segment_visits_one_cell() {
        assert_eq!(
            GridTraversal::new([3.5, -2.5, 7.0], [3.5, -2.5, 7.0], [2.0; 3])
                .expect("valid")
                .count(),
            1
        );
    }
}
