//! Box casts against shaped voxels (the crate docs' "Box casts", rule 10): where the moving box
//! first overlaps one of a voxel's boxes. Twin: `box_shape_touch` in `shaders/boxes.wgsl`.

use crate::boxcast::{Axis, Prepared};
use crate::coords::WorldPos;
use crate::cpu_ref::shapes::{along_travel, box_plane_t};
use crate::world::ShapeBox;

/// What the moving box does with the boxes of one shaped voxel it touches as a cube.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Touch {
    /// It overlaps one of them at its start.
    Inside,
    /// It first overlaps one at this contact.
    At(Contact),
    /// It overlaps none within max distance.
    Never,
}

/// Where the box first overlaps a shaped voxel's box.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Contact {
    /// The distance: the last of the box faces' crossings of that box's near planes.
    pub(crate) t: f32,
    /// How many axes cross their near plane at `t` (1 a face, 2 an edge, 3 a corner).
    pub(crate) kind: u32,
    /// The axis of the face met: of those crossing at `t`, the lowest rank (rule 6).
    pub(crate) axis: usize,
    /// The near plane on that axis, in sixteenths of the voxel along the box's travel.
    pub(crate) k: u32,
}

impl Contact {
    /// The contact's plane on its axis, as a voxel and a fraction in `[0, 1)` (for a slide to
    /// put the box flush against it); `None` past the i128 world.
    pub(crate) fn plane(&self, v: WorldPos, step: i8) -> Option<(i128, f32)> {
        let at = v.axis(self.axis);
        let k = if step > 0 { self.k } else { 16 - self.k };
        if k == 16 {
            at.checked_add(1).map(|w| (w, 0.0))
        } else {
            Some((at, k as f32 / 16.0))
        }
    }
}

/// Below every crossing distance: a face already past a plane.
const PAST: f32 = f32::MIN;

/// How the moving box of `p` meets the boxes (packed, [`ShapeBox::packed`]) of the voxel `v`,
/// which it touches as a cube. Per box: on an axis the box moves on, its leading face crosses
/// the box's near plane and its trailing face the far plane at the shape rule's distances
/// (`box_plane_t`, counted from each face's own first voxel); on a still axis the faces'
/// positions are compared with the box's exactly. The box overlaps it from the last near
/// crossing to the first far crossing (open: touching faces do not overlap).
pub(crate) fn touch(p: &Prepared, v: WorldPos, boxes: &[u32], ranks: [u8; 3]) -> Touch {
    let mut best: Option<Contact> = None;
    'boxes: for &w in boxes {
        let bx = ShapeBox::unpacked(w);
        let mut near_t = [PAST; 3];
        let mut near_k = [0u32; 3];
        let mut t_out = f32::MAX;
        for a in 0..3 {
            let ax = &p.axes[a];
            let at = v.axis(a);
            if !ax.moving {
                if !still_overlaps(ax, at, along_travel(&bx, a, 1)) {
                    continue 'boxes;
                }
                continue;
            }
            let (near, far) = along_travel(&bx, a, ax.step);
            // Voxels entered after m crossings of each face's ray: below 0, behind it.
            let m_lead = crossings_to(ax.lead0, at, ax.step) - i128::from(ax.exits);
            let m_trail = crossings_to(ax.trail0, at, ax.step);
            near_k[a] = near;
            near_t[a] = match plane_t(ax.lead_b, ax.inv, m_lead, near) {
                // A flat box on its near plane is past it: a point on a plane lies in what it
                // moves into, as a ray's start voxel does.
                t if ax.flat && t == 0.0 => PAST,
                t => t,
            };
            t_out = t_out.min(plane_t(ax.trail_b, ax.inv, m_trail, far));
        }
        let t_in = near_t[0].max(near_t[1]).max(near_t[2]);
        if !(t_in < t_out && t_out > 0.0) {
            continue;
        }
        if t_in < 0.0 {
            return Touch::Inside;
        }
        if t_in > p.max_distance {
            continue;
        }
        let on = (0..3).filter(|&a| near_t[a] == t_in);
        let kind = on.clone().count() as u32;
        let Some(axis) = on.min_by_key(|&a| ranks[a]) else {
            continue;
        };
        let c = Contact {
            t: t_in,
            kind,
            axis,
            k: near_k[axis],
        };
        let key = |c: &Contact| (c.t, c.kind, ranks[c.axis]);
        if best.is_none_or(|b| key(&c) < key(&b)) {
            best = Some(c);
        }
    }
    best.map_or(Touch::Never, Touch::At)
}

/// Crossings a face's ray makes from its first voxel `first` to voxel `at` (negative behind).
fn crossings_to(first: i128, at: i128, step: i8) -> i128 {
    let d = at.saturating_sub(first);
    if step > 0 { d } else { d.saturating_neg() }
}

/// [`box_plane_t`] for a count that may lie behind the face ([`PAST`]) or beyond any reach.
fn plane_t(b: f32, inv: f32, m: i128, k: u32) -> f32 {
    match u32::try_from(m) {
        Ok(m) if m < 1 << 20 => box_plane_t(b, inv, m, k),
        Ok(_) => f32::MAX,
        Err(_) => PAST,
    }
}

/// On an axis the box does not move on: whether it overlaps `(lo, hi)` sixteenths of voxel
/// `at` (open against open; a box whose two faces lie at one point holds `lo ≤ 16·f < hi`, as a
/// flat box holds the voxel its center is in).
fn still_overlaps(ax: &Axis, at: i128, (lo, hi): (u32, u32)) -> bool {
    let (lo, hi) = (lo as f32, hi as f32);
    if ax.start_lo == ax.start_hi && ax.face_lo == ax.face_hi {
        let f16 = ax.face_lo * 16.0;
        return lo <= f16 && f16 < hi;
    }
    (at > ax.start_lo || ax.face_lo * 16.0 < hi) && (at < ax.start_hi || ax.face_hi * 16.0 > lo)
}
