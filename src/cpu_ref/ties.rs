//! Conservative line of sight's tie test: where a ray passes exactly (or within [`NEAR_TIE`])
//! through an edge or corner, the voxels that touch it but that stepping does not visit.
//! Twins in `shaders/ties.wgsl` as named on each.

use glam::IVec3;

use crate::coords::WorldPos;
use crate::cpu_ref::dda::{Dda, face_uv};
use crate::cpu_ref::{NEAR_TIE, next_axis};
use crate::ray::{RaycastOptions, RaycastOutcome, UnloadedPolicy, VoxelRaycastHit};
use crate::world::VoxelId;

/// The axes whose next crossing is at `t` (bit `a` for axis `a`), the first crossing, or
/// near-tied with it (within [`NEAR_TIE`]): a tie group, an edge or corner that the ray passes
/// through, when two or three bits are set. Twin of `tied_axes` in `shaders/ties.wgsl`.
#[inline]
fn tied_axes(t_next: [f32; 3], t: f32) -> u32 {
    let near = t * NEAR_TIE;
    u32::from(t_next[0] <= near)
        | u32::from(t_next[1] <= near) << 1
        | u32::from(t_next[2] <= near) << 2
}

/// Each axis's place (0 first) in the order stepping crosses the tie group `tied`: by crossing
/// distance, equal distances x, then y, then z (as [`next_axis`] picks them). Axes outside the
/// group are not counted. Twin of `tie_ranks` in `shaders/ties.wgsl`.
#[inline]
fn tie_ranks(t: [f32; 3], tied: u32) -> [u32; 3] {
    let g = |a: usize| tied >> a & 1 != 0;
    [
        u32::from(g(1) && t[1] < t[0]) + u32::from(g(2) && t[2] < t[0]),
        u32::from(g(0) && t[0] <= t[1]) + u32::from(g(2) && t[2] < t[1]),
        u32::from(g(0) && t[0] <= t[2]) + u32::from(g(1) && t[1] <= t[2]),
    ]
}

/// Whether `mask` (a subset of the tie group `tied`, whose axes stepping crosses in the order
/// `ranks`) names a voxel that the tie touches but stepping does not visit. Stepping visits the
/// "prefixes" of the group in that order (the first axis, then the first two, ...): a mask is a
/// prefix exactly when its last axis in that order has rank `popcount - 1`. Every other
/// non-empty subset is an extra voxel touching the same edge or corner. Twin of `tie_extra` in
/// `shaders/ties.wgsl`.
#[inline]
fn tie_extra(tied: u32, ranks: [u32; 3], mask: u32) -> bool {
    let m = |a: usize| mask >> a & 1 != 0;
    // One more than the highest rank in the mask (0 for an empty mask).
    let last = [0, 1, 2]
        .map(|a| if m(a) { ranks[a] + 1 } else { 0 })
        .into_iter()
        .max()
        .unwrap_or(0);
    mask & tied == mask && last > mask.count_ones()
}

/// Conservative line of sight from the start voxel `d` of a ray under [`UnloadedPolicy::Stop`]
/// when the voxels beside it are unloaded (nothing is loaded, or on the GPU the ray starts
/// outside the window): `Unloaded` at the first voxel that touches the first crossing's edge or
/// corner but that stepping does not visit, as [`cast_ray`] answers there; `None` when the first
/// crossing is no tie (or beyond max distance), or every such voxel lies beyond the i128 world.
pub(crate) fn unloaded_tie_extra(d: &Dda<'_>, opts: &RaycastOptions) -> Option<RaycastOutcome> {
    next_tie_extras(d, &|_| None, opts, true, &|_| false)
}

/// [`check_tie_extras`] at the next crossing, where that is the first crossing of a tie group
/// (not one the current voxel was entered by) within max distance; `None` elsewhere.
pub(super) fn next_tie_extras(
    d: &Dda<'_>,
    voxel_at: &dyn Fn(&WorldPos) -> Option<VoxelId>,
    opts: &RaycastOptions,
    air_seen: bool,
    stops: &dyn Fn(VoxelId) -> bool,
) -> Option<RaycastOutcome> {
    let t_cross = d.t_next[next_axis(d.t_next)];
    (t_cross > d.t && t_cross <= d.ray.max_distance)
        .then(|| check_tie_extras(d, voxel_at, opts, t_cross, air_seen, stops))
        .flatten()
}

/// Conservative line of sight: at the first crossing of a tie group, test the voxels that
/// touch the crossed edge or corner but that stepping will not visit.
fn check_tie_extras(
    d: &Dda<'_>,
    voxel_at: &dyn Fn(&WorldPos) -> Option<VoxelId>,
    opts: &RaycastOptions,
    t_cross: f32,
    air_seen: bool,
    stops: &dyn Fn(VoxelId) -> bool,
) -> Option<RaycastOutcome> {
    let r = d.ray;
    let base = d.voxel();
    let tied = tied_axes(d.t_next, t_cross);
    if tied.count_ones() < 2 {
        return None;
    }
    let ranks = tie_ranks(d.t_next, tied);
    for mask in (1..8).filter(|&m| tie_extra(tied, ranks, m)) {
        let mut off = IVec3::ZERO;
        let mut n = d.n;
        // The mask's axis crossed last in stepping order: the face the voxel is entered by.
        let (mut last_axis, mut last_rank) = (0, 0);
        for a in 0..3 {
            if mask >> a & 1 != 0 {
                off[a] = i32::from(r.step[a]);
                n[a] += 1;
                if ranks[a] + 1 > last_rank {
                    (last_axis, last_rank) = (a, ranks[a] + 1);
                }
            }
        }
        let Some(p) = base.checked_offset(off) else {
            continue;
        };
        match voxel_at(&p) {
            None if opts.unloaded == UnloadedPolicy::Stop => {
                return Some(RaycastOutcome::Unloaded {
                    voxel_pos: p,
                    distance: t_cross,
                });
            }
            Some(id) if stops(id) && air_seen => {
                let mut normal = IVec3::ZERO;
                normal[last_axis] = -i32::from(r.step[last_axis]);
                return Some(RaycastOutcome::Hit(VoxelRaycastHit {
                    voxel_pos: p,
                    face_normal: normal,
                    distance: t_cross,
                    voxel_type: id,
                    hit_uv: face_uv(r, n, t_cross, last_axis as u32),
                }));
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tie_extras_cover_edge_and_corner() {
        let t = [1.0; 3];
        let extras = |tied| {
            (1..8)
                .filter(|&m| tie_extra(tied, tie_ranks(t, tied), m))
                .collect::<Vec<_>>()
        };
        assert_eq!(tied_axes([1.0, 1.0, 2.0], 1.0), 0b011);
        assert_eq!(extras(0b011), [0b010]);
        assert_eq!(extras(0b101), [0b100]);
        assert_eq!(extras(0b110), [0b100]);
        assert_eq!(extras(0b111), [0b010, 0b100, 0b101, 0b110]);
        assert!(extras(0b001).is_empty());
    }
}
