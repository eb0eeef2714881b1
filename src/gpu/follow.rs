//! Moving a `GpuWorld`'s window: which chunks enter the part of the window that may be loaded
//! (to upload), which leave it (to give their storage back), and which table entries and
//! region records change; nothing else moves, because the table is addressed toroidally (see
//! `Window`). [`plan`] works it out; `GpuWorld::recenter` applies it.

use crate::coords::ChunkPos;
use crate::gpu::layout::TAG_UNLOADED;
use crate::gpu::store::entry_of;
use crate::gpu::window::{Window, for_each_in};
use crate::world::{DenseChunk, REGION_SHIFT, VoxelWorld};

/// An inclusive box of chunk coordinates.
type ChunkBox = ([i128; 3], [i128; 3]);

/// What [`GpuWorld::recenter`](crate::gpu::GpuWorld::recenter) did: which chunks entered and
/// left the part of the window that may be loaded, and what it uploaded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WindowMove {
    /// Chunks that entered the part of the window that may be loaded (loaded or not).
    pub entered: u64,
    /// Chunks that left it.
    pub left: u64,
    /// Of the chunks that entered, those stored voxel by voxel (the others are a table entry).
    pub stored: u64,
    /// Bytes of the stored chunks that entered: occupancy bits, slot records and id records,
    /// as [`GpuWorld::stored_chunk_bytes`](crate::gpu::GpuWorld::stored_chunk_bytes) counts
    /// them.
    pub chunk_bytes: u64,
    /// Bytes of chunk table entries and region records written (only those that changed).
    pub table_bytes: u64,
}

/// The changes a move from window `old` to window `new` makes.
pub(super) struct MovePlan<'a> {
    /// Chunks that enter what may be loaded and are stored voxel by voxel.
    pub(super) store: Vec<(ChunkPos, &'a DenseChunk)>,
    /// Table entries to set: the entering chunks' (a stored one's is replaced by its slot),
    /// and `TAG_UNLOADED` for margin chunks new to the window or no longer loadable.
    pub(super) entries: Vec<(ChunkPos, u32)>,
    /// Regions whose records must be made anew: those with chunks new to the window (whose
    /// records held other regions) or chunks that left it.
    pub(super) regions: Vec<[i128; 3]>,
    /// The counts of the move (its bytes are filled in when it is applied).
    pub(super) moved: WindowMove,
}

/// The changes a move from `old` to `new` makes, with the chunks that enter taken from
/// `world` as it is now.
pub(super) fn plan<'a>(old: &Window, new: &Window, world: &'a VoxelWorld) -> MovePlan<'a> {
    let (old_in, new_in) = (interior(old), interior(new));
    let (old_all, new_all) = (whole(old), whole(new));
    let kept = intersect(old_in, new_in).map_or(0, volume);
    let mut moved = WindowMove {
        entered: saturate(volume(new_in) - kept),
        left: saturate(volume(old_in) - kept),
        ..WindowMove::default()
    };
    // Chunks that enter what may be loaded: uploaded as the world has them.
    let mut store = Vec::new();
    let mut entries = Vec::new();
    for b in minus(new_in, old_in) {
        for_each_in(b.0, b.1, |p| {
            let pos = ChunkPos::from_array(p);
            let (entry, d) = entry_of(world.chunk(pos).map(|c| c.view()));
            if let Some(d) = d {
                store.push((pos, d));
            }
            entries.push((pos, entry));
        });
    }
    moved.stored = store.len() as u64;
    // Margin chunks new to the window, and chunks that were loadable and are margin now.
    let mut unloaded = minus(new_all, old_all);
    if let Some(both) = intersect(old_in, new_all) {
        unloaded.extend(minus(both, new_in));
    }
    for b in unloaded {
        for_each_in(b.0, b.1, |p| {
            let pos = ChunkPos::from_array(p);
            if !new.may_load(pos) {
                entries.push((pos, TAG_UNLOADED));
            }
        });
    }
    let mut regions = Vec::new();
    for b in minus(new_all, old_all)
        .into_iter()
        .chain(minus(old_all, new_all))
    {
        let (lo, hi) = (
            b.0.map(|c| c >> REGION_SHIFT),
            b.1.map(|c| c >> REGION_SHIFT),
        );
        for_each_in(lo, hi, |r| regions.push(r));
    }
    MovePlan {
        store,
        entries,
        regions,
        moved,
    }
}

fn interior(w: &Window) -> ChunkBox {
    (w.interior.0.to_array(), w.interior.1.to_array())
}

fn whole(w: &Window) -> ChunkBox {
    (w.anchor.to_array(), w.last_chunk().to_array())
}

fn intersect(a: ChunkBox, b: ChunkBox) -> Option<ChunkBox> {
    let lo: [i128; 3] = std::array::from_fn(|k| a.0[k].max(b.0[k]));
    let hi: [i128; 3] = std::array::from_fn(|k| a.1[k].min(b.1[k]));
    (0..3).all(|k| lo[k] <= hi[k]).then_some((lo, hi))
}

/// `a` less `b`, as at most six disjoint boxes.
fn minus(a: ChunkBox, b: ChunkBox) -> Vec<ChunkBox> {
    let Some(cut) = intersect(a, b) else {
        return vec![a];
    };
    let mut out = Vec::new();
    let mut rest = a;
    for k in 0..3 {
        if rest.0[k] < cut.0[k] {
            let mut below = rest;
            below.1[k] = cut.0[k] - 1;
            out.push(below);
        }
        if cut.1[k] < rest.1[k] {
            let mut above = rest;
            above.0[k] = cut.1[k] + 1;
            out.push(above);
        }
        rest.0[k] = cut.0[k];
        rest.1[k] = cut.1[k];
    }
    out
}

/// Chunks in `b` (windows are below 2^26 chunks a side, so this fits).
fn volume(b: ChunkBox) -> u128 {
    (0..3).map(|k| b.0[k].abs_diff(b.1[k]) + 1).product()
}

fn saturate(v: u128) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn box_difference_covers_exactly_once() {
        let a = ([0, 0, 0], [4, 3, 5]);
        for b in [
            ([2, 1, 1], [3, 2, 4]),
            ([-3, -3, -3], [1, 9, 9]),
            ([10, 10, 10], [11, 11, 11]),
            ([0, 0, 0], [4, 3, 5]),
        ] {
            let parts = minus(a, b);
            for_each_in(a.0, a.1, |p| {
                let in_b = (0..3).all(|k| (b.0[k]..=b.1[k]).contains(&p[k]));
                let n = parts
                    .iter()
                    .filter(|q| (0..3).all(|k| (q.0[k]..=q.1[k]).contains(&p[k])))
                    .count();
                assert_eq!(n, usize::from(!in_b), "{p:?} of {a:?} less {b:?}");
            });
        }
    }
}
