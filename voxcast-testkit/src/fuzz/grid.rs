//! Target `grid`: `GridTraversal2D` and `GridTraversal3D` with any f64 endpoints and cell
//! sizes either refuse the input with the error its docs name, or walk from the cell holding
//! the start to the cell holding the end (the floor of coordinate over cell size, with the face
//! rule moving down), one face neighbour per step, with entry and exit fractions in order in
//! `[0, 1]`, as many cells as its size hint says; and the walk ends.

use arbitrary::Arbitrary;
use voxcast::{GridError, GridTraversal};

/// Cells a walk is followed for; longer walks are checked over this many first cells.
const CELLS: usize = 4096;

/// Edge values for f64 fields.
const F64_EDGES: [f64; 16] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    f64::MIN_POSITIVE,
    5e-324,
    f64::MAX,
    f64::MIN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    9.0e18,
    -9.0e18,
    1e-300,
    16.0,
];

/// An f64: an edge value, `n / (d + 1)` scaled by a power of two, or any bits.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum F64In {
    /// One of the edge values.
    Edge(u8),
    /// `n / (d + 1) · 2^e`.
    Scaled(i16, u8, i8),
    /// Any bit pattern.
    Bits(u64),
}

impl F64In {
    /// The value.
    #[must_use]
    pub fn get(self) -> f64 {
        match self {
            Self::Edge(i) => F64_EDGES[usize::from(i) % F64_EDGES.len()],
            Self::Scaled(n, d, e) => f64::from(n) / (f64::from(d) + 1.0) * 2f64.powi(i32::from(e)),
            Self::Bits(b) => f64::from_bits(b),
        }
    }
}

/// One input: a 2D or a 3D segment and cell size.
#[derive(Arbitrary, Debug)]
pub enum Input {
    /// `GridTraversal2D`.
    Plane([F64In; 2], [F64In; 2], [F64In; 2]),
    /// `GridTraversal3D`.
    Space([F64In; 3], [F64In; 3], [F64In; 3]),
}

/// The target: decodes `data` and checks the traversal; panics on a wrong one.
pub fn run(data: &[u8]) {
    super::input::decode_and_check(data, |input: &Input| match input {
        Input::Plane(a, b, c) => check(a.map(F64In::get), b.map(F64In::get), c.map(F64In::get)),
        Input::Space(a, b, c) => check(a.map(F64In::get), b.map(F64In::get), c.map(F64In::get)),
    });
}

/// The cell holding coordinate `p` (in cell units) at one end of a segment moving by `d`:
/// its floor, or the cell below where `p` lies on a face and the segment moves down.
fn end_cell(p: f64, d: f64) -> i128 {
    let f = p.floor();
    f as i128 - i128::from(d < 0.0 && f == p)
}

/// Checks one traversal.
///
/// # Errors
/// What is wrong.
pub fn check<const D: usize>(a: [f64; D], b: [f64; D], size: [f64; D]) -> Result<(), String> {
    let what = format!("a {a:?} b {b:?} cell size {size:?}");
    let result = GridTraversal::new(a, b, size);
    let finite = a.iter().chain(&b).all(|v| v.is_finite());
    let sizes_ok = size.iter().all(|s| s.is_finite() && *s > 0.0);
    let scaled = |p: [f64; D]| -> [f64; D] { std::array::from_fn(|k| p[k] / size[k]) };
    let (pa, pb) = (scaled(a), scaled(b));
    let fits = |v: f64| v.abs() < 9.0e18;
    let in_range = (0..D).all(|k| fits(pa[k]) && fits(pb[k]));
    let short = (0..D).all(|k| (b[k] - a[k]).is_finite());
    let walk = match result {
        Err(e) => {
            let named = match e {
                GridError::NonFiniteEndpoint => !finite,
                GridError::BadCellSize => !sizes_ok,
                GridError::OutOfRange => finite && sizes_ok && !in_range,
                GridError::TooLong => finite && sizes_ok && !short,
            };
            return if named {
                Ok(())
            } else {
                Err(format!("{what}: refused with {e:?}"))
            };
        }
        Ok(w) if finite && sizes_ok && in_range && short => w,
        Ok(_) => return Err(format!("{what}: accepted")),
    };
    let d: [f64; D] = std::array::from_fn(|k| b[k] - a[k]);
    let start: [i128; D] = std::array::from_fn(|k| end_cell(pa[k], d[k]));
    let end: [i128; D] = std::array::from_fn(|k| end_cell(pb[k], d[k]));
    let cells = 1 + (0..D).map(|k| start[k].abs_diff(end[k])).sum::<u128>();
    let hint = walk.size_hint();
    let hinted = usize::try_from(cells).map_or((usize::MAX, None), |n| (n, Some(n)));
    if hint != hinted {
        return Err(format!(
            "{what}: size hint {hint:?}, {cells} cells from {start:?} to {end:?}"
        ));
    }
    let mut walk = walk;
    let mut prev: Option<voxcast::GridCell<D>> = None;
    let mut count = 0u128;
    for c in walk.by_ref().take(CELLS) {
        count += 1;
        if !(0.0 <= c.t_enter && c.t_enter <= c.t_exit && c.t_exit <= 1.0) {
            return Err(format!("{what}: cell {c:?}: fractions out of order"));
        }
        let cell: [i128; D] = c.cell.map(i128::from);
        match prev {
            None => {
                if cell != start || c.t_enter != 0.0 || c.entry_axis.is_some() {
                    return Err(format!("{what}: first cell {c:?}, start {start:?}"));
                }
            }
            Some(p) => {
                let moved: Vec<usize> = (0..D).filter(|&k| c.cell[k] != p.cell[k]).collect();
                let [k] = moved[..] else {
                    return Err(format!("{what}: {c:?} is no face neighbour of {p:?}"));
                };
                let step = if d[k] < 0.0 { -1 } else { 1 };
                if cell[k] - i128::from(p.cell[k]) != step
                    || c.entry_axis != Some(k)
                    || c.t_enter.to_bits() != p.t_exit.to_bits()
                {
                    return Err(format!("{what}: {c:?} after {p:?}"));
                }
            }
        }
        prev = Some(c);
    }
    if count == cells {
        let last = prev.map(|c| c.cell.map(i128::from));
        if last != Some(end) || walk.next().is_some() || walk.next().is_some() {
            return Err(format!(
                "{what}: the walk ends in {last:?}, not {end:?}, or goes on"
            ));
        }
    } else if count != CELLS as u128 {
        return Err(format!("{what}: {count} cells, {cells} expected"));
    }
    Ok(())
}
