//! Moving a `GpuWorld`'s window ([`GpuWorld::recenter`]): the chunks that enter the part of
//! the window that may be loaded are uploaded, those that leave it give their storage back,
//! and the table entries and region records that change are written; nothing else moves,
//! because the table is addressed toroidally (see `Window`).

use crate::coords::ChunkPos;
use crate::gpu::dispatch::Upload;
use crate::gpu::store::StoreChanges;
use crate::gpu::window::Window;
use crate::gpu::world::{GpuWorld, WindowMove, entry_of, for_each_in};
use crate::gpu::{GpuError, TAG_UNLOADED};
use crate::world::{REGION_SHIFT, VoxelWorld};

/// An inclusive box of chunk coordinates.
type ChunkBox = ([i128; 3], [i128; 3]);

impl GpuWorld {
    /// Moves a window made by [`GpuWorld::with_window`] so that it centres on `centre`, with
    /// the same half extent. The chunks of `world` that enter the box the window may load are
    /// uploaded as `world` has them now; those that leave it answer as unloaded from now on
    /// and give their GPU memory back; every other chunk stays as it is on the GPU (edited
    /// chunks still go through [`GpuWorld::update_chunks`]). A move of one chunk along an axis
    /// uploads one slab of chunks; a move farther than the window's size fills it anew. The
    /// same centre again does nothing.
    ///
    /// Works anywhere in the i128 world: the shader's coordinates are relative to the window,
    /// whatever its distance from the origin. The move is ordered after every batch submitted
    /// before it, as an update is ([`GpuWorld::update_chunks`]); agents uploaded for the old
    /// window ([`GpuAgents`](crate::gpu::GpuAgents)) must be uploaded again.
    ///
    /// # Errors
    /// [`GpuError::WindowCannotMove`] for a `GpuWorld` made by [`GpuWorld::from_world`];
    /// [`GpuError::CentreOutsideWorld`] when `centre` is no chunk of the i128 world;
    /// [`GpuError::LimitExceeded`] when the stored chunks outgrow a device limit;
    /// [`GpuError::Device`] when growing a buffer runs out of GPU memory. The window is left
    /// where it was when an error is returned.
    pub fn recenter(
        &mut self,
        world: &VoxelWorld,
        centre: ChunkPos,
    ) -> Result<WindowMove, GpuError> {
        let Some((half, old_centre)) = self.following else {
            return Err(GpuError::WindowCannotMove);
        };
        if !centre.is_in_world() {
            return Err(GpuError::CentreOutsideWorld(centre));
        }
        let old = self.window;
        let new = Window::following(centre, half);
        self.following = Some((half, centre));
        if new == old {
            return Ok(WindowMove::default());
        }
        let (old_in, new_in) = (interior(&old), interior(&new));
        let (old_all, new_all) = (whole(&old), whole(&new));
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
        // Records of regions with chunks new to the window (whose slots held other regions)
        // or chunks that left it (now outside: unloaded).
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
        let drop = self
            .store
            .positions()
            .filter(|&p| !new.may_load(p))
            .collect();
        let mut upload = Upload::new(&self.sync.failed);
        self.window = new;
        match self.apply(
            StoreChanges::new(store, drop),
            entries,
            regions,
            &mut upload,
        ) {
            Ok((chunk_bytes, table_bytes)) => {
                moved.chunk_bytes = chunk_bytes;
                moved.table_bytes = table_bytes;
            }
            Err(e) => {
                self.window = old;
                self.following = Some((half, old_centre));
                return Err(e);
            }
        }
        self.choose_walk();
        self.send(upload)?;
        Ok(moved)
    }

    /// The centre a window made by [`GpuWorld::with_window`] was last given; `None` for one
    /// made by [`GpuWorld::from_world`]. Near the edge of the i128 world the window lies
    /// inward of it ([`GpuWorld::loadable_chunks`]).
    #[must_use]
    pub fn centre(&self) -> Option<ChunkPos> {
        self.following.map(|(_, centre)| centre)
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
