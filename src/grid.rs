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
    /// The segment is longer than f64 can hold (`b - a` overflows on an axis).
    #[error("segment length overflows f64")]
    TooLong,
}

/// One cell visited by a [`GridTraversal`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GridCell<const D: usize> {
    /// Cell index per axis: cell `i` covers `[i * cell_size, (i + 1) * cell_size)`. At the
    /// segment's two ends a point exactly on a cell face belongs to the cell the face rule of
    /// [`GridTraversal`] gives, which is the cell below the face when the segment moves down.
    pub cell: [i64; D],
    /// Fraction of the segment (`0` at A, `1` at B) where it enters the cell.
    pub t_enter: f64,
    /// Fraction of the segment where it leaves the cell, at most `1`.
    pub t_exit: f64,
    /// Axis whose boundary the segment crossed to enter the cell; `None` for the first cell.
    pub entry_axis: Option<usize>,
}

/// Every cell of a `D`-dimensional grid (`D` = 2 or 3) that the segment from `a` to `b`
/// passes through, in order from `a`, from the cell that holds `a` to the cell that holds `b`.
/// "Holds" is `floor(coordinate / cell_size)` per axis, computed in f64 as a caller computing
/// hash keys would, with one face rule at both ends: a point lying exactly on a cell face,
/// with the segment moving down on that axis, belongs to the cell below the face (the segment
/// starts into it, or ended by crossing into it).
///
/// Each step goes to a face neighbour, and the walk takes exactly as many steps per axis as
/// the two end cells are apart, so it always ends in `b`'s cell however the crossing
/// distances round. The order of the steps is the same DDA as the voxel raycaster's
/// (crossing distances computed from counts, ties in axis order), in f64; a crossing that
/// rounds past `b` is reported at `t = 1`.
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
    /// Crossings left per axis before the cell that holds `b`.
    left: [u64; D],
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
    /// [`GridError`] for non-finite endpoints, a cell size that is not finite and positive, an
    /// endpoint whose cell index leaves i64, or a segment whose length overflows f64.
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
            left: [0; D],
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
            if !d.is_finite() {
                return Err(GridError::TooLong);
            }
            // A point in cell units: its floor cell and the fraction into it (the face rule
            // moving down is applied below, at both ends).
            let cell_of = |p: f64| {
                let whole = p.floor();
                (whole as i64, p - whole)
            };
            let (start, frac) = cell_of(pa);
            let (mut end, end_frac) = cell_of(pb);
            it.cell[k] = start;
            if d < 0.0 {
                it.step[k] = -1;
                if frac == 0.0 {
                    it.cell[k] -= 1;
                    it.b[k] = 1.0;
                } else {
                    it.b[k] = frac;
                }
                if end_frac == 0.0 {
                    end -= 1;
                }
            } else {
                // `(floor + 1) - p` rather than `1 - frac`: just below a face `frac` rounds to 1
                // (at `p = -1e-300`, say) and `1 - frac` would cancel to 0.
                it.b[k] = (start as f64 + 1.0) - pa;
            }
            if d != 0.0 {
                // Infinite when |d| is tiny next to the cell: the crossing is then reported
                // at t = 1.
                it.inv[k] = cell_size[k] / d.abs();
                // Cells up to ±9e18 apart: their distance fits u64, not i64.
                it.left[k] = end.abs_diff(it.cell[k]);
            }
        }
        Ok(it)
    }

    /// Fraction of the segment at axis `k`'s next crossing, at most 1.
    fn crossing(&self, k: usize) -> f64 {
        ((self.b[k] + self.n[k] as f64) * self.inv[k]).min(1.0)
    }
}

impl<const D: usize> Iterator for GridTraversal<D> {
    type Item = GridCell<D>;

    fn next(&mut self) -> Option<GridCell<D>> {
        if self.done {
            return None;
        }
        let mut next: Option<(usize, f64)> = None;
        for k in 0..D {
            if self.left[k] > 0 {
                let t = self.crossing(k);
                if next.is_none_or(|(_, t_best)| t < t_best) {
                    next = Some((k, t));
                }
            }
        }
        let item = GridCell {
            cell: self.cell,
            t_enter: self.t,
            t_exit: next.map_or(1.0, |(_, t)| t),
            entry_axis: self.entry_axis,
        };
        match next {
            Some((k, t)) => {
                // Stays within the end cells, which lie in i64.
                self.cell[k] += self.step[k];
                self.n[k] += 1;
                self.left[k] -= 1;
                self.t = t;
                self.entry_axis = Some(k);
            }
            None => self.done = true,
        }
        Some(item)
    }

    /// Exact: one cell per crossing left, then the cell that holds `b`. A segment across
    /// more than `usize::MAX` cells (up to about `1.8e19` per axis) gives `(usize::MAX, None)`.
    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.done {
            return (0, Some(0));
        }
        let cells = self
            .left
            .iter()
            .try_fold(1u64, |sum, &l| sum.checked_add(l))
            .and_then(|n| usize::try_from(n).ok());
        match cells {
            Some(n) => (n, Some(n)),
            None => (usize::MAX, None),
        }
    }
}

/// Once it has returned `None` it keeps doing so.
impl<const D: usize> std::iter::FusedIterator for GridTraversal<D> {}

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
