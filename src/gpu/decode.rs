//! The wire format of a ray's answer read back: a [`GpuHit`] decoded relative to the window
//! ([`decode_window`]) or into an i128 outcome ([`decode`]), and how each kind of batch answer
//! is made from a hit or from an outcome found on the host ([`HostAnswer`]).

use glam::{IVec3, Vec2};

use crate::cpu_ref::AXIS_NONE;
use crate::gpu::error::GpuError;
use crate::gpu::layout::{
    GpuHit, STATUS_HIT, STATUS_MISS, STATUS_TOO_LONG, STATUS_UNLOADED, STATUS_ZERO_LENGTH,
};
use crate::gpu::window::Window;
use crate::ray::{RayError, RaycastOutcome, WindowHit, WindowOutcome};
use crate::world::VoxelId;

/// UV in the shader's hits: `[0, 1]` in 23-bit fixed point.
const UV_STEPS: f32 = 8_388_607.0;

/// The outcome `h` stands for, window-relative, for a ray whose uploaded start voxel is
/// `start` (window-relative): the shader gives the voxel as an 18-bit offset from it. `None`
/// for a ray that ran past the step limit (see [`undecodable`]).
#[inline]
pub(super) fn decode_window(h: &GpuHit, start: [i32; 3]) -> Option<WindowOutcome> {
    let status_word = h.w1 >> 20;
    let status = status_word & 15;
    match status {
        STATUS_MISS => return Some(WindowOutcome::Miss),
        STATUS_ZERO_LENGTH => return Some(WindowOutcome::Invalid(RayError::ZeroDirection)),
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
        STATUS_UNLOADED => Some(WindowOutcome::Unloaded { voxel, distance }),
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
                voxel,
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
