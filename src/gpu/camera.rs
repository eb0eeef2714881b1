//! [`CameraImage`]: a camera's image on the GPU, the twin of
//! [`raycast_camera`](crate::raycast_camera). Each pixel's ray is made in the shader
//! (`cast_camera` in `shaders/`) from the camera's parameters, exactly as [`Camera::ray`] makes
//! it, so nothing goes up a pixel and 20 bytes come down; a camera the shader cannot reproduce
//! exactly is cast from rays built on the host (`rays.rs`).

use crate::camera::{Camera, CameraError};
use crate::gpu::decode::decode;
use crate::gpu::error::GpuError;
use crate::gpu::flight::Upload;
use crate::gpu::layout::{Entry, GpuHit, GpuParams, option_flags};
use crate::gpu::pending::{Collect, Launch, Leg, PendingBatch};
use crate::gpu::query::{Query, sealed::Sealed};
use crate::gpu::rays::{self, submit_rays};
use crate::gpu::window::Window;
use crate::ray::{RaycastOptions, RaycastOutcome, VoxelRay};

/// `cast_camera`: a camera's pixels, rays made in the shader (`shaders/camera.wgsl`). It binds
/// `cast_rays`'s bindings, so that the two share one layout: its input is bound, unread.
pub(super) const ENTRY: Entry = Entry {
    name: "cast_camera",
    reads_input: false,
    reads_shapes: true,
    ..rays::ENTRY
};

/// A camera's image cast on the GPU: one ray a pixel, row by row from the top. Pixel
/// `(px, py)` gets the outcome of casting [`Camera::ray`]`(px, py)` on the CPU
/// ([`raycast_camera`](crate::raycast_camera)): [`RaycastOutcome::Invalid`] where that ray is
/// invalid (only a camera edited by hand has such pixels). On a window that follows a center a
/// pixel whose ray leaves it is `Unloaded` where it leaves
/// ([`GpuRaycaster::upload_window`](crate::gpu::GpuRaycaster::upload_window));
/// [`Rays::complete`](crate::gpu::Rays::complete) with [`Camera::rays`] completes those pixels
/// on the CPU. A camera whose eye is outside the window, whose field of view is wider than
/// about 179.99°, or that was edited into one the shader cannot reproduce exactly, is rendered
/// from rays built on the host (same outcomes, slower).
///
/// Submitting it fails with [`GpuError::Camera`] for a width or height of 0,
/// [`GpuError::BatchTooLarge`] for more than `u32::MAX` pixels, and
/// [`GpuError::OutputTooLarge`] when the outcomes do not fit in host memory.
#[derive(Clone, Copy, Debug)]
pub struct CameraImage<'a>(pub &'a Camera);

impl Sealed for CameraImage<'_> {}

impl Query for CameraImage<'_> {
    type Answers = Vec<RaycastOutcome>;
    type Options = RaycastOptions;

    fn start(
        self,
        launch: Launch<'_>,
        opts: &RaycastOptions,
        out: Vec<RaycastOutcome>,
    ) -> Result<PendingBatch<Vec<RaycastOutcome>>, GpuError> {
        start_rows(launch, self.0, 0..self.0.height, opts, out)
    }
}

/// The image rows `rows` of a camera cast on the GPU (row 0 at the top; rows past the image's
/// height continue the image plane, as [`Camera::pixel_dir`] does): `rows.len() × width`
/// outcomes, row by row, each that pixel's outcome in [`CameraImage`] of the whole image. The
/// twin of [`raycast_camera_rows_into`](crate::raycast_camera_rows_into). For images drawn in
/// bands, whose answers then take memory for one band at a time. An empty range gives no
/// outcomes; rows from `2^24` on are cast from rays built on the host.
///
/// Submitting it fails as [`CameraImage`] does.
#[derive(Clone, Debug)]
pub struct CameraRows<'a> {
    /// The camera.
    pub camera: &'a Camera,
    /// The image rows to cast.
    pub rows: std::ops::Range<u32>,
}

impl Sealed for CameraRows<'_> {}

impl Query for CameraRows<'_> {
    type Answers = Vec<RaycastOutcome>;
    type Options = RaycastOptions;

    fn start(
        self,
        launch: Launch<'_>,
        opts: &RaycastOptions,
        out: Vec<RaycastOutcome>,
    ) -> Result<PendingBatch<Vec<RaycastOutcome>>, GpuError> {
        start_rows(launch, self.camera, self.rows, opts, out)
    }
}

/// Rows `rows` of `camera` submitted (see [`CameraRows`]).
fn start_rows(
    launch: Launch<'_>,
    camera: &Camera,
    rows: std::ops::Range<u32>,
    opts: &RaycastOptions,
    mut out: Vec<RaycastOutcome>,
) -> Result<PendingBatch<Vec<RaycastOutcome>>, GpuError> {
    if camera.width == 0 || camera.height == 0 {
        return Err(GpuError::Camera(CameraError::EmptyImage));
    }
    let pixels = u64::from(camera.width) * u64::from(rows.end.saturating_sub(rows.start));
    if pixels > u64::from(u32::MAX) {
        return Err(GpuError::BatchTooLarge(
            usize::try_from(pixels).unwrap_or(usize::MAX),
        ));
    }
    out.clear();
    out.try_reserve(pixels as usize)
        .map_err(|_| GpuError::OutputTooLarge(pixels))?;
    let world = launch.world;
    let shader = shader_camera_in(&world.window, camera).filter(|_| rows.end <= MAX_ROWS);
    let Some((camera, eye)) = shader else {
        // From host-built rays: a pixel whose ray is invalid gets its error in its place.
        let rays = camera_rays(camera, rows)?;
        return submit_rays(launch, &rays, opts, false, out);
    };
    let mut params = camera_params(world.params(), &camera, eye);
    params.cam_row0 = rows.start;
    let flags = option_flags(opts, false)
        | world.walk_flags(camera.max_distance >= crate::cpu_ref::LONG_RAY);
    let binding = launch.binding(ENTRY, flags, params, opts)?;
    let flight = launch.flight(binding, Pixels(pixels as u32))?;
    let collector = CameraAnswers {
        out,
        eye,
        window: world.window,
    };
    Ok(launch.pending(Leg::new(Some(flight), collector), pixels))
}

/// Rows the shader makes pixels' rays for: row indices below `2^24` convert to f32 exactly.
const MAX_ROWS: u32 = 1 << 24;

/// A camera's pixels, each made in the shader: nothing goes up.
#[derive(Debug)]
pub(super) struct Pixels(u32);

impl Upload for Pixels {
    const ENTRY: Entry = self::ENTRY;

    fn count(&self) -> u64 {
        u64::from(self.0)
    }

    fn bytes(&self, n: u64) -> (u64, u64) {
        (0, n * size_of::<GpuHit>() as u64)
    }
}

/// A camera's pixels in order, relative to the eye's voxel.
#[derive(Debug)]
pub(super) struct CameraAnswers {
    out: Vec<RaycastOutcome>,
    eye: [i32; 3],
    window: Window,
}

impl Collect<Pixels> for CameraAnswers {
    type Output = Vec<RaycastOutcome>;

    fn collect(
        &mut self,
        _items: &Pixels,
        _base: u64,
        count: u64,
        bytes: &[u8],
    ) -> Result<(), GpuError> {
        let hits: &[GpuHit] = bytemuck::cast_slice(bytes);
        for h in &hits[..count as usize] {
            self.out.push(decode(&self.window, h, self.eye)?);
        }
        Ok(())
    }

    fn finish(self) -> Vec<RaycastOutcome> {
        self.out
    }
}

/// `camera` as the shader gets it (the eye and max distance as [`VoxelRay::new`] stores them),
/// when the shader's ray for every pixel (`cast_camera` in `shaders/camera.wgsl`) is exactly
/// [`Camera::ray`] of that pixel on every conforming GPU: for every camera [`Camera::new`] makes
/// with a field of view from about 0.0001° up to about 179.99° at 16:9 and no vector component
/// below 2^-56 other than 0. `None` for others, and for a camera edited into one where that
/// may fail: an eye offset outside `[0, 1)`, an invalid max distance, or vectors that could
/// make a pixel direction zero, non-finite or not unit.
fn shader_camera(c: &Camera) -> Option<Camera> {
    let probe = VoxelRay::new(c.position, c.sub_offset, glam::Vec3::X, c.max_distance).ok()?;
    if probe.origin != c.position || probe.sub_offset != c.sub_offset {
        return None;
    }
    // A pixel's direction before normalising is `forward + right·sx + up·sy` with
    // `|sx| < |scale_x|` and `|sy| < |scale_y|`, computed in f32 with four roundings per
    // component, each off by at most 2^-24·(1 + spread): under 0.05 in all for a spread up to
    // 1e5 (a field of view up to about 179.99° at 16:9). So the vector is finite, its squared
    // length too, and at least 0.999 - 0.25 - 0.05 > 0.7 long along `forward`, and `pixel_dir`
    // makes it unit to within a few ulps, which `VoxelRay::new` keeps as it is.
    let finite = [c.forward, c.right, c.up].iter().all(|v| v.is_finite())
        && c.scale_x.is_finite()
        && c.scale_y.is_finite();
    // In f64, where the squares of f32 values neither overflow nor underflow.
    let [f, r, u] = [c.forward, c.right, c.up].map(|v| v.as_dvec3());
    let [sx, sy] = [c.scale_x, c.scale_y].map(|s| f64::from(s).abs());
    let off_axis = sx * f.dot(r).abs() + sy * f.dot(u).abs();
    let spread = sx * r.length() + sy * u.length();
    (finite
        && no_subnormal_steps(c)
        && (c.forward.length_squared() - 1.0).abs() <= 1e-3
        && off_axis <= 0.25
        && spread <= 1e5)
        .then_some(Camera {
            sub_offset: probe.sub_offset,
            max_distance: probe.max_distance,
            ..*c
        })
}

/// `camera` as the shader gets it ([`shader_camera`]) with its eye relative to `window`, where
/// the shader can make every pixel's ray exactly and the eye's start voxel (the one below on an
/// axis where the eye lies on a voxel face) is in the window; `None` otherwise: its pixels'
/// rays are then built on the host ([`camera_rays`]).
pub(super) fn shader_camera_in(window: &Window, camera: &Camera) -> Option<(Camera, [i32; 3])> {
    let c = shader_camera(camera)?;
    let eye = window.start_of(c.position, c.sub_offset)?;
    Some((c, eye))
}

/// The dispatch parameters of a camera made by [`shader_camera_in`] with its eye at `eye`:
/// `params` (the window's) with the camera's fields set.
pub(super) fn camera_params(mut params: GpuParams, camera: &Camera, eye: [i32; 3]) -> GpuParams {
    params.cam_position = eye;
    params.cam_width = camera.width;
    params.cam_height = camera.height;
    params.cam_sub = camera.sub_offset.to_array();
    params.cam_forward = camera.forward.to_array();
    params.cam_right = camera.right.to_array();
    params.cam_up = camera.up.to_array();
    params.cam_scale_x = camera.scale_x;
    params.cam_scale_y = camera.scale_y;
    params.cam_max_distance = camera.max_distance;
    [params.cam_inv_w, params.cam_inv_h] = camera.pixel_steps();
    params
}

/// The ray of every pixel of `camera`'s image rows `rows`, row by row, as [`Camera::ray`] makes
/// it but unchecked: a pixel whose ray is invalid keeps its fields, and the batch answers it
/// with the error `Camera::ray` gives.
pub(super) fn camera_rays(
    camera: &Camera,
    rows: std::ops::Range<u32>,
) -> Result<Vec<VoxelRay>, GpuError> {
    let pixels = u64::from(camera.width) * u64::from(rows.end.saturating_sub(rows.start));
    let mut rays = Vec::new();
    rays.try_reserve(pixels as usize)
        .map_err(|_| GpuError::OutputTooLarge(pixels))?;
    for py in rows {
        rays.extend((0..camera.width).map(|px| VoxelRay {
            origin: camera.position,
            sub_offset: camera.sub_offset,
            direction: camera.pixel_dir(px, py),
            max_distance: camera.max_distance,
        }));
    }
    Ok(rays)
}

/// Whether no f32 value `camera_dir` computes can be subnormal (a GPU may flush those to
/// zero, the CPU keeps them) except squares too small to change the squared length, and
/// pixel indices convert to f32 exactly. With `px < 2^24`, `(px + 0.5) · 2/width - 1` is 0 or
/// at least 2^-24 in size, so `sx` and `sy` are 0 or at least 2^-44 for scales of at least
/// 2^-20; with every vector component 0 or at least 2^-56, each product is 0 or at least
/// 2^-100 and every sum a multiple of 2^-123, so 0 or normal. A subnormal square is absorbed
/// by the squared length (at least 0.49, `shader_camera`), and a subnormal unit component is
/// flushed to 0 on both sides (`VoxelRay::new`, `prepare_axis`).
fn no_subnormal_steps(c: &Camera) -> bool {
    const MIN_COMPONENT: f32 = 1.0 / (1u64 << 56) as f32;
    const SCALE: std::ops::RangeInclusive<f32> = 1.0 / (1 << 20) as f32..=(1 << 20) as f32;
    let component_ok = |x: f32| x == 0.0 || x.abs() >= MIN_COMPONENT;
    [c.forward, c.right, c.up]
        .iter()
        .all(|v| v.to_array().into_iter().all(component_ok))
        && SCALE.contains(&c.scale_x.abs())
        && SCALE.contains(&c.scale_y.abs())
        && c.width <= 1 << 24
        && c.height <= 1 << 24
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coords::WorldPos;

    /// Cameras made by `Camera::new` and `Camera::with_up` go to the shader (`raycast_camera`
    /// would otherwise build every pixel's ray on the host, with the same outcomes, so the
    /// parity tests alone cannot tell); cameras edited into ones the shader may not reproduce
    /// stay on the host.
    #[test]
    fn shader_camera_takes_made_cameras_and_refuses_edited_ones() {
        let eye = WorldPos::new(-5, i128::MAX - 40, 1 << 100);
        let mut made = Vec::new();
        for fov in [0.01, 1.0, 60.0, 120.0, 179.0, 179.99] {
            // What the docs promise: up to about 179.99° at 16:9; wider images at narrower
            // fields of view.
            let sizes: &[(u32, u32)] = if fov <= 120.0 {
                &[(1, 1), (16, 9), (1920, 1080), (9, 16), (4000, 1)]
            } else {
                &[(1, 1), (16, 9), (1920, 1080), (9, 16)]
            };
            for &(w, h) in sizes {
                for (forward, up) in [
                    (glam::Vec3::new(0.15, -0.28, 1.0), glam::Vec3::Y),
                    (glam::Vec3::NEG_Y, glam::Vec3::Z),
                    (
                        glam::Vec3::new(-3.0, 1e-3, 2.0),
                        glam::Vec3::new(0.3, 1.0, -0.2),
                    ),
                ] {
                    let sub = glam::Vec3::new(0.0, 0.999_999_9, 0.5);
                    made.push(Camera::with_up(eye, sub, forward, up, fov, w, h, 1024.0));
                }
            }
        }
        made.push(Camera::new(
            eye,
            glam::Vec3::splat(7.25),
            glam::Vec3::X,
            60.0,
            8,
            8,
            0.0,
        ));
        for cam in made {
            let cam = cam.expect("a valid camera");
            let shader = shader_camera(&cam);
            assert_eq!(
                shader,
                Some(cam),
                "fov scale {} x {}",
                cam.scale_x,
                cam.scale_y
            );
        }
        let good = Camera::new(
            eye,
            glam::Vec3::splat(0.5),
            glam::Vec3::Z,
            60.0,
            64,
            36,
            256.0,
        )
        .expect("a valid camera");
        type Edit = (&'static str, fn(&mut Camera));
        let edits: [Edit; 6] = [
            ("eye offset outside [0, 1)", |c| c.sub_offset.x = 1.5),
            ("negative max distance", |c| c.max_distance = -1.0),
            ("NaN forward", |c| c.forward.y = f32::NAN),
            ("forward not unit", |c| c.forward *= 2.0),
            ("spread too wide", |c| c.scale_x = 1e6),
            ("right along forward", |c| c.right = c.forward),
        ];
        for (what, edit) in edits {
            let mut cam = good;
            edit(&mut cam);
            assert_eq!(shader_camera(&cam), None, "{what}");
        }
    }
}
