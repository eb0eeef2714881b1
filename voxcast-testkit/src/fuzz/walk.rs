//! The reference's own walk, voxel by voxel: `VoxelTraversal` checked against the slab test,
//! and the answer a cast must give read off the walk and the model. Skipping empty space,
//! clipping to the world's bounds and the column tops must land on exactly these voxels and
//! distances, so the comparison is bit for bit (but the UV, which the walk does not give).

use voxcast::glam::IVec3;
use voxcast::{
    OriginPolicy, RaycastOptions, RaycastOutcome, TraversalStep, UnloadedPolicy, VoxelRay,
    VoxelRaycastHit, VoxelTraversal, WorldPos,
};

use super::model::Model;
use super::oracle::{Geometry, tol};

/// The first steps of a ray's walk, and whether the walk ended within them.
#[derive(Debug)]
pub struct Walk {
    /// The steps, at most the number asked for.
    pub steps: Vec<TraversalStep>,
    /// Whether the traversal ended after them.
    pub ended: bool,
}

/// The first `most` steps of `ray`'s traversal.
#[must_use]
pub fn walk(ray: &VoxelRay, most: usize) -> Walk {
    let mut it = VoxelTraversal::new(ray);
    let steps: Vec<TraversalStep> = it.by_ref().take(most).collect();
    let ended = it.next().is_none();
    Walk { steps, ended }
}

/// Checks the steps against the slab test: the walk starts in the start voxel at 0, moves to a
/// face neighbour each step, enters each voxel where the ray does (to within the f32 slack),
/// never beyond max distance, and ends only at max distance or the edge of the i128 world.
///
/// # Errors
/// What is wrong with which step.
pub fn check_steps(g: &Geometry, w: &Walk) -> Result<(), String> {
    let r = &g.ray;
    let Some(first) = w.steps.first() else {
        // Nothing only for a ray that starts on the outer face of the world moving out.
        return match g.start_voxel() {
            None => Ok(()),
            Some(s) => Err(format!("the walk is empty, but the ray starts in {s:?}")),
        };
    };
    if Some(first.voxel) != g.start_voxel()
        || first.t_enter != 0.0
        || first.entry_face != IVec3::ZERO
    {
        return Err(format!(
            "first step {first:?}, start voxel {:?}",
            g.start_voxel()
        ));
    }
    for (i, s) in w.steps.iter().enumerate() {
        if !(s.t_enter <= s.t_exit && s.t_exit <= r.max_distance) {
            return Err(format!(
                "step {i} {s:?}: distances out of order or past max"
            ));
        }
        if i > 0 {
            let prev = &w.steps[i - 1];
            let moved: Vec<usize> = (0..3)
                .filter(|&a| s.voxel.axis(a) != prev.voxel.axis(a))
                .collect();
            let [a] = moved[..] else {
                return Err(format!("step {i} {s:?} is no face neighbour of {prev:?}"));
            };
            let delta = s.voxel.axis(a).wrapping_sub(prev.voxel.axis(a));
            let dir = r.direction[a];
            let toward = if dir < 0.0 { -1 } else { 1 };
            if delta != toward
                || dir == 0.0
                || s.entry_face[a] != -toward as i32
                || s.entry_face.abs().element_sum() != 1
                || s.t_enter.to_bits() != prev.t_exit.to_bits()
            {
                return Err(format!("step {i} {s:?} after {prev:?}"));
            }
        }
        let Some(slab) = g.voxel(s.voxel, false) else {
            return Err(format!("step {i} {s:?}: the ray never reaches that voxel"));
        };
        let tn = slab.t_near.max(0.0);
        let (te, tx) = (f64::from(s.t_enter), f64::from(s.t_exit));
        if slab.t_far < tn - tol(tn) || (te - tn).abs() > tol(tn) {
            return Err(format!(
                "step {i} {s:?}: the ray enters that voxel at {tn} ({slab:?})"
            ));
        }
        let exit = slab.t_far.min(f64::from(r.max_distance));
        if (tx - exit).abs() > tol(exit) {
            return Err(format!(
                "step {i} {s:?}: the ray leaves that voxel at {exit} ({slab:?})"
            ));
        }
    }
    if w.ended {
        let last = w.steps.last().unwrap_or(first);
        let at_edge = (0..3).any(|a| {
            let d = r.direction[a];
            d > 0.0 && last.voxel.axis(a) == i128::MAX || d < 0.0 && last.voxel.axis(a) == i128::MIN
        });
        if last.t_exit != r.max_distance && !at_edge {
            return Err(format!("the walk ends at {last:?}, before max distance"));
        }
    }
    Ok(())
}

/// Whether `v`, outside the inclusive box `lo..=hi`, can never come back into it: on some axis
/// it is outside and the ray does not move toward the box.
fn gone(v: WorldPos, lo: WorldPos, hi: WorldPos, ray: &VoxelRay) -> bool {
    (0..3).any(|a| {
        let d = ray.direction[a];
        v.axis(a) < lo.axis(a) && d <= 0.0 || v.axis(a) > hi.axis(a) && d >= 0.0
    })
}

/// The answer of a cast under `opts` (plain, not conservative), read off the walk: the first
/// step that ends the ray. `None` when the steps taken do not decide it.
#[must_use]
pub fn expected(
    model: &Model,
    w: &Walk,
    ray: &VoxelRay,
    opts: &RaycastOptions,
) -> Option<RaycastOutcome> {
    let bounds = model.chunk_range(|_| true).map(|(lo, hi)| {
        (
            lo.origin(),
            WorldPos::from_array(hi.origin().to_array().map(|v| v + 31)),
        )
    });
    let mut air_seen = opts.origin != OriginPolicy::ExitSolid;
    for (i, s) in w.steps.iter().enumerate() {
        let skip = i == 0 && opts.origin == OriginPolicy::SkipOriginVoxel;
        match model.get(s.voxel) {
            None if opts.unloaded == UnloadedPolicy::Stop && !skip => {
                return Some(RaycastOutcome::Unloaded {
                    voxel_pos: s.voxel,
                    distance: s.t_enter,
                });
            }
            None => {
                air_seen = true;
                if opts.unloaded == UnloadedPolicy::Air {
                    match bounds {
                        None => return Some(RaycastOutcome::Miss),
                        Some((lo, hi)) if gone(s.voxel, lo, hi, ray) => {
                            return Some(RaycastOutcome::Miss);
                        }
                        _ => {}
                    }
                }
            }
            Some(id) if opts.blocks.contains(id) => {
                if air_seen && !skip {
                    return Some(RaycastOutcome::Hit(VoxelRaycastHit {
                        voxel_pos: s.voxel,
                        face_normal: s.entry_face,
                        distance: s.t_enter,
                        voxel_type: id,
                        hit_uv: voxcast::glam::Vec2::ZERO,
                    }));
                }
            }
            Some(_) => air_seen = true,
        }
    }
    w.ended.then_some(RaycastOutcome::Miss)
}

/// Whether `got` is `want` but for the UV (which the walk does not give).
#[must_use]
pub fn same_but_uv(got: &RaycastOutcome, want: &RaycastOutcome) -> bool {
    match (got, want) {
        (RaycastOutcome::Hit(g), RaycastOutcome::Hit(w)) => {
            let g = VoxelRaycastHit {
                hit_uv: w.hit_uv,
                ..*g
            };
            super::oracle::identical(&RaycastOutcome::Hit(g), want)
        }
        _ => super::oracle::identical(got, want),
    }
}
