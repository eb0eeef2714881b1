//! The wire format of a ray's answer read back: a [`GpuHit`] decoded relative to the window
//! ([`decode_window`]) or into an i128 outcome ([`decode`]), and how each kind of batch answer
//! is made from a hit or from an outcome found on the host ([`HostAnswer`]).

use glam::{IVec3, Vec2};

use crate::cpu_ref::AXIS_NONE;
use crate::gpu::error::GpuError;
use crate::gpu::layout::{GpuHit, STATUS_HIT, STATUS_MISS, STATUS_TOO_LONG, STATUS_UNLOADED};
use crate::gpu::window::Window;
use crate::ray::{RayError, RaycastOutcome, WindowHit, WindowOutcome};
use crate::world::VoxelId;

/// UV in the shader's hits: `[0, 1]` in 23-bit fixed point.
const UV_STEPS: f32 = 8_388_607.0;

/// The outcome `h` stands for, window-relative, for a ray uploaded with voxel `start`
/// (window-relative: its start voxel, or where the shader sets it up the voxel before the
/// start-voxel rule): the shader gives the voxel as an 18-bit offset from it. `None`
/// for a ray that ran past the step limit (see [`undecodable`]).
#[inline]
pub(super) fn decode_window(h: &GpuHit, start: [i32; 3]) -> Option<WindowOutcome> {
    let status_word = h.w1 >> 20;
    let status = status_word & 15;
    match status {
        STATUS_MISS => return Some(WindowOutcome::Miss),
        STATUS_TOO_LONG => return Some(WindowOutcome::Invalid(RayError::MaxDistanceTooLarge)),
        _ => {}
    }
    let offset = |w: u32| ((w << 14) as i32) >> 14;
    let voxel = IVec3::new(
        start[0].wrapping_add(offset(h.w0)),
        start[1].wrapping_add(offset(h.w1)),
        start[2].wrapping_add(offset(h.w2)),
    );
    let distance = f32::from_bits(h.distance);
    match status {
        STATUS_UNLOADED => Some(WindowOutcome::Unloaded {
            voxel_pos: voxel,
            distance,
        }),
        STATUS_HIT => {
            let axis = (status_word >> 4) & 3;
            let mut face_normal = IVec3::ZERO;
            if axis != AXIS_NONE {
                face_normal[axis as usize] = if status_word & 64 != 0 { 1 } else { -1 };
            }
            let id = (h.w0 >> 18) | (h.w1 >> 18 & 3) << 14;
            // 23-bit fixed point: within 2e-7 of the shader's UV.
            let v = (h.uv >> 23) | (h.w2 >> 18) << 9;
            let unit = |q: u32| q as f32 * (1.0 / UV_STEPS);
            Some(WindowOutcome::Hit(WindowHit {
                voxel_pos: voxel,
                face_normal,
                distance,
                voxel_type: VoxelId(id as u16),
                hit_uv: Vec2::new(unit(h.uv & 0x7F_FFFF), unit(v)),
            }))
        }
        _ => None,
    }
}

/// The i128 outcome `h` stands for on window `w` ([`decode_window`]); `None` where it has
/// none (see [`undecodable`]).
#[inline]
fn decode_absolute(w: &Window, h: &GpuHit, start: [i32; 3]) -> Option<RaycastOutcome> {
    // The shader ends a ray that steps beyond the i128 world as a miss (`beyond_world`).
    decode_window(h, start)?.to_outcome(w.bounds.min)
}

/// The i128 outcome `h` stands for on window `w` ([`decode_window`]).
#[inline]
pub(super) fn decode(w: &Window, h: &GpuHit, start: [i32; 3]) -> Result<RaycastOutcome, GpuError> {
    decode_absolute(w, h, start).ok_or_else(|| undecodable(h, start))
}

/// Why hit `h` of a ray uploaded at `start` has no answer: the walk ran past its step limit
/// (a box cast past its loop budget), or the answer lies beyond the i128 world (neither
/// happens to a shader that follows the CPU reference).
#[cold]
pub(super) fn undecodable(h: &GpuHit, start: [i32; 3]) -> GpuError {
    let status = (h.w1 >> 20) & 15;
    GpuError::Internal(match decode_window(h, start) {
        None => format!("a ray ran past the step limit (status {status})"),
        Some(o) => format!("a result beyond the i128 world ({o:?}, start {start:?})"),
    })
}

/// An answer of a batch of rays: made from the hit the GPU wrote, or from the outcome the
/// host found for a ray that never went up.
pub(super) trait HostAnswer: Send + Sized {
    /// The answer for `o`, found on the host, on window `w`.
    fn answered(o: RaycastOutcome, w: &Window) -> Self;
    /// The answer for hit `h` of a ray uploaded at window-relative `start` on `w`; `None`
    /// where it has none ([`undecodable`] says why).
    fn decoded(w: &Window, h: &GpuHit, start: [i32; 3]) -> Option<Self>;
}

impl<T: From<RaycastOutcome> + Send> HostAnswer for T {
    #[inline]
    fn answered(o: RaycastOutcome, _: &Window) -> Self {
        T::from(o)
    }

    #[inline]
    fn decoded(w: &Window, h: &GpuHit, start: [i32; 3]) -> Option<Self> {
        decode_absolute(w, h, start).map(T::from)
    }
}

impl HostAnswer for WindowOutcome {
    #[inline]
    fn answered(o: RaycastOutcome, w: &Window) -> Self {
        WindowOutcome::from_outcome(&o, w.bounds.min)
    }

    #[inline]
    fn decoded(w: &Window, h: &GpuHit, start: [i32; 3]) -> Option<Self> {
        let o = decode_window(h, start)?;
        // What the i128 form checks, with debug assertions (a shader that follows the CPU
        // reference never answers beyond the i128 world).
        debug_assert!(
            o.to_outcome(w.bounds.min).is_some(),
            "{o:?} beyond the world"
        );
        Some(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coords::ChunkPos;
    use crate::gpu::layout::STATUS_RUNAWAY;

    /// A hit as the shader packs it: the voxel as 18-bit offsets from the start, the id in 16
    /// bits, the status word, UV in 23-bit fixed point.
    fn packed(offset: [i32; 3], id: u16, status_word: u32, t: f32, uv: [u32; 2]) -> GpuHit {
        let o = offset.map(|o| (o as u32) & 0x3_FFFF);
        let id = u32::from(id);
        GpuHit {
            w0: o[0] | (id & 0x3FFF) << 18,
            w1: o[1] | (id >> 14) << 18 | status_word << 20,
            w2: o[2] | (uv[1] >> 9) << 18,
            distance: t.to_bits(),
            uv: uv[0] | (uv[1] & 0x1FF) << 23,
        }
    }

    /// Every status decodes to its outcome, relative to the window and in i128 alike, and the
    /// two agree for both kinds of batch answer; a walk past the step limit and an answer
    /// beyond the i128 world are errors that say which.
    #[test]
    fn hits_decode_alike_relative_and_absolute() {
        let w = Window::around((ChunkPos::new(-3, 0, 2), ChunkPos::new(1, 2, 4))).unwrap();
        let start = [40, 17, 3];
        let hit = packed(
            [-5, 131_071, -131_072],
            0xBEEF,
            STATUS_HIT | 2 << 4 | 64,
            7.25,
            [0, 8_388_607],
        );
        let Some(WindowOutcome::Hit(h)) = decode_window(&hit, start) else {
            panic!("a hit");
        };
        assert_eq!(h.voxel_pos, IVec3::new(35, 17 + 131_071, 3 - 131_072));
        assert_eq!((h.face_normal, h.voxel_type), (IVec3::Z, VoxelId(0xBEEF)));
        assert_eq!((h.distance, h.hit_uv), (7.25, Vec2::new(0.0, 1.0)));
        let below = packed([0; 3], 1, STATUS_HIT | AXIS_NONE << 4, 0.0, [0, 0]);
        let Some(WindowOutcome::Hit(o)) = decode_window(&below, start) else {
            panic!("a hit");
        };
        assert_eq!(o.face_normal, IVec3::ZERO);
        let cases = [
            (hit, "hit"),
            (below, "origin hit"),
            (
                packed([1, 2, 3], 0, STATUS_UNLOADED, 2.5, [0, 0]),
                "unloaded",
            ),
            (packed([0; 3], 0, STATUS_MISS, 0.0, [0, 0]), "miss"),
            (packed([0; 3], 0, STATUS_TOO_LONG, 0.0, [0, 0]), "too long"),
        ];
        for (h, what) in cases {
            let rel = decode_window(&h, start).expect(what);
            let abs = decode(&w, &h, start).expect(what);
            assert_eq!(rel.to_outcome(w.bounds.min), Some(abs), "{what}");
            assert_eq!(WindowOutcome::decoded(&w, &h, start), Some(rel), "{what}");
            assert_eq!(RaycastOutcome::decoded(&w, &h, start), Some(abs), "{what}");
            assert_eq!(WindowOutcome::answered(abs, &w), rel, "{what}");
        }
        assert!(matches!(
            decode_window(&packed([0; 3], 0, STATUS_UNLOADED, 1.0, [0, 0]), [0; 3]),
            Some(WindowOutcome::Unloaded { .. })
        ));
        let runaway = packed([0; 3], 0, STATUS_RUNAWAY, 0.0, [0, 0]);
        assert_eq!(decode_window(&runaway, start), None);
        let e = decode(&w, &runaway, start).unwrap_err().to_string();
        assert!(e.contains("step limit"), "{e}");
        // A window at the i128 edge: an answer past it has no i128 form.
        let edge = Window::around((
            ChunkPos::new(ChunkPos::MAX_INDEX - 1, 0, 0),
            ChunkPos::new(ChunkPos::MAX_INDEX, 0, 0),
        ))
        .unwrap();
        let last = edge.relative(edge.bounds.max).unwrap();
        let past = packed([1, 0, 0], 0, STATUS_UNLOADED, 1.0, [0, 0]);
        assert_eq!(edge.absolute(last).map(|p| p.x), Some(i128::MAX));
        let e = decode(&edge, &past, last).unwrap_err().to_string();
        assert!(e.contains("beyond the i128 world"), "{e}");
    }
}
