//! [`VoxelTraversal`]: the reference walk as an iterator, voxel by voxel, without a world.

use glam::IVec3;

use crate::coords::WorldPos;
use crate::cpu_ref::{AXIS_NONE, T_DISABLED, crossing_t, next_axis};
use crate::ray::{PreparedRay, VoxelRay};

/// One voxel visited by a [`VoxelTraversal`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraversalStep {
    /// The voxel.
    pub voxel: WorldPos,
    /// Distance at which the ray enters it (0 for the first voxel).
    pub t_enter: f32,
    /// Distance at which the ray leaves it, capped at the max distance.
    pub t_exit: f32,
    /// Outward normal of the face it was entered through (zero for the first voxel).
    pub entry_face: IVec3,
}

/// Every voxel a ray passes through, in order, with entry and exit distances; the same walk
/// and the same distances as [`voxel_raycast_with`](crate::cpu_ref::voxel_raycast_with), without a world. Ends after the last voxel
/// entered at or before the max distance, or at the edge of the i128 world. Stop early by
/// dropping it.
#[derive(Clone, Debug)]
pub struct VoxelTraversal {
    ray: Option<PreparedRay>,
    n: [u32; 3],
    voxel: WorldPos,
    t: f32,
    entry_axis: u32,
    done: bool,
}

impl VoxelTraversal {
    /// Starts a traversal. An invalid ray yields nothing; build it with [`VoxelRay::new`] (which
    /// says what is wrong with it) if that matters.
    #[must_use]
    pub fn new(ray: &VoxelRay) -> Self {
        let prepared = ray.prepare().ok().flatten();
        Self {
            voxel: prepared.map_or(WorldPos::ZERO, |p| p.start),
            done: prepared.is_none(),
            ray: prepared,
            n: [0; 3],
            t: 0.0,
            entry_axis: AXIS_NONE,
        }
    }
}

impl Iterator for VoxelTraversal {
    type Item = TraversalStep;

    fn next(&mut self) -> Option<TraversalStep> {
        if self.done {
            return None;
        }
        let r = self.ray.as_ref()?;
        let t_next: [f32; 3] = std::array::from_fn(|a| {
            if r.enabled[a] {
                crossing_t(r.b[a], r.inv[a], self.n[a])
            } else {
                T_DISABLED
            }
        });
        let a = next_axis(t_next);
        let mut entry_face = IVec3::ZERO;
        if self.entry_axis != AXIS_NONE {
            let e = self.entry_axis as usize;
            entry_face[e] = -i32::from(r.step[e]);
        }
        let item = TraversalStep {
            voxel: self.voxel,
            t_enter: self.t,
            t_exit: t_next[a].min(r.max_distance),
            entry_face,
        };
        // Advance for the next call.
        let mut off = IVec3::ZERO;
        off[a] = i32::from(r.step[a]);
        match self.voxel.checked_offset(off) {
            Some(v) if t_next[a] <= r.max_distance => {
                self.voxel = v;
                self.n[a] += 1;
                self.t = t_next[a];
                self.entry_axis = a as u32;
            }
            _ => self.done = true,
        }
        Some(item)
    }
}
