//! Where a ray meets the boxes of a shaped voxel (the crate docs' "Shapes" rule). Twins:
//! `box_plane_t` and `shape_hit` in `shaders/shapes.wgsl`.

use glam::{IVec3, Vec2};

use crate::cpu_ref::AXIS_NONE;
use crate::cpu_ref::dda::{Dda, face_uv};
use crate::ray::{PreparedRay, VoxelRaycastHit};
use crate::world::{ShapeBox, VoxelId};

/// Where a ray meets a shape in the voxel it is in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ShapeHit {
    /// Distance along the ray, `max(t_in, 0)`.
    pub(crate) t: f32,
    /// The axis of the face met, or [`AXIS_NONE`] at distance 0.
    pub(crate) axis: u32,
}

impl ShapeHit {
    /// The outward normal of the face met (zero at distance 0).
    pub(crate) fn normal(&self, r: &PreparedRay) -> IVec3 {
        let mut v = IVec3::ZERO;
        if self.axis != AXIS_NONE {
            let a = self.axis as usize;
            v[a] = -i32::from(r.step[a]);
        }
        v
    }

    /// The hit point's UV on that face, in the voxel's face coordinates.
    pub(crate) fn uv(&self, r: &PreparedRay, n: [u32; 3]) -> Vec2 {
        face_uv(r, n, self.t, self.axis)
    }

    /// The answer for the ray of `d` meeting this box face in `d`'s voxel, of id `id`. Twin
    /// of `shape_answer` in `shaders/shapes.wgsl`.
    pub(crate) fn answer(&self, d: &Dda<'_>, id: VoxelId) -> VoxelRaycastHit {
        VoxelRaycastHit {
            voxel_pos: d.voxel(),
            face_normal: self.normal(d.ray),
            distance: self.t,
            voxel_type: id,
            hit_uv: self.uv(d.ray, d.n),
        }
    }
}

/// The distance of the plane `k` sixteenths along the ray's travel through the voxel entered
/// after `m` crossings (see the module's rule). Twin of `box_plane_t` in `shaders/shapes.wgsl`.
#[inline]
pub(crate) fn box_plane_t(b: f32, inv: f32, m: u32, k: u32) -> f32 {
    let q = ((m as i32 - 1) * 16 + k as i32) as f32 * (1.0 / 16.0);
    (b + q) * inv
}

/// `bx`'s bounds on axis `a`, in sixteenths of the voxel, in the order a travel along `a`
/// meets them (near, far): from the low face up, or with a negative `step` from the high face
/// down. Twin of `along_travel` in `shaders/shapes.wgsl`.
#[inline]
pub(crate) fn along_travel(bx: &ShapeBox, a: usize, step: i8) -> (u32, u32) {
    let (lo, hi) = (u32::from(bx.min()[a]), u32::from(bx.max()[a]));
    if step < 0 {
        (16 - hi, 16 - lo)
    } else {
        (lo, hi)
    }
}

/// Where the ray, in the voxel it entered after `n` crossings, first meets one of `boxes`
/// (packed, see [`ShapeBox::packed`]) within max distance. Twin of `shape_hit` in
/// `shaders/shapes.wgsl`.
pub(crate) fn shape_hit(r: &PreparedRay, n: [u32; 3], boxes: &[u32]) -> Option<ShapeHit> {
    // Per axis: the inverse direction where the ray moves (the DDA's, or `1/|d|` on an axis
    // it crosses no face of within max distance); 0 where it does not move.
    let inv: [f32; 3] = std::array::from_fn(|a| {
        if r.enabled[a] {
            r.inv[a]
        } else if r.dir[a] != 0.0 {
            1.0 / r.dir[a].abs()
        } else {
            0.0
        }
    });
    let mut best: Option<ShapeHit> = None;
    'boxes: for &w in boxes {
        let bx = ShapeBox::unpacked(w);
        let (mut t_in, mut axis_in, mut t_out) = (f32::MIN, AXIS_NONE, f32::MAX);
        for a in 0..3 {
            if inv[a] == 0.0 {
                // The offset from the voxel's high face, in sixteenths (exact), against the
                // box's bounds counted from that face.
                let b16 = r.b[a] * 16.0;
                let (from, to) = along_travel(&bx, a, -1);
                if !((from as f32) < b16 && b16 <= to as f32) {
                    continue 'boxes;
                }
                continue;
            }
            let (near, far) = along_travel(&bx, a, r.step[a]);
            let t_near = box_plane_t(r.b[a], inv[a], n[a], near);
            let t_far = box_plane_t(r.b[a], inv[a], n[a], far);
            if t_near >= t_in {
                (t_in, axis_in) = (t_near, a as u32);
            }
            if t_far < t_out {
                t_out = t_far;
            }
        }
        if !(t_in <= t_out && t_out > 0.0) {
            continue;
        }
        let hit = if t_in > 0.0 {
            ShapeHit {
                t: t_in,
                axis: axis_in,
            }
        } else {
            ShapeHit {
                t: 0.0,
                axis: AXIS_NONE,
            }
        };
        if hit.t <= r.max_distance && best.is_none_or(|b| hit.t < b.t) {
            best = Some(hit);
        }
    }
    best
}
