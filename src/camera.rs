//! A pinhole camera that turns pixels into rays, identically on the host and in the shader.

use glam::Vec3;

use crate::coords::WorldPos;
use crate::ray::{RayError, VoxelRay, difference};

/// Why a [`Camera`] could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CameraError {
    /// The eye, view direction or max distance is not a valid ray.
    #[error("{0}")]
    Ray(#[from] RayError),
    /// The view direction is parallel to the camera's up vector: vertical, for [`Camera::new`]
    /// and [`Camera::look_at`], which keep +Y up. [`Camera::with_up`] takes another up vector
    /// (the player's facing, say) for a camera that looks straight up or down.
    #[error(
        "the view direction is parallel to the camera's up vector (+Y unless given): to look \
         straight up or down, build the camera with Camera::with_up and another up vector"
    )]
    VerticalView,
    /// The up vector given to [`Camera::with_up`] is zero, NaN or infinite.
    #[error("the camera's up vector must be finite and non-zero")]
    InvalidUp,
    /// The field of view is not in `(0, 180)` degrees.
    #[error("the vertical field of view must be in (0, 180) degrees")]
    FieldOfView,
    /// Width or height is zero.
    #[error("the image must be at least 1x1 pixels")]
    EmptyImage,
    /// `look_at` was given the eye itself as the target.
    #[error("the look-at target is the eye")]
    TargetIsEye,
    /// The outcomes of the image's pixels (the number given) do not fit in host memory, for
    /// [`crate::raycast_camera`].
    #[error("the outcomes of {0} pixels do not fit in host memory")]
    ImageTooLarge(u64),
}

/// A pinhole camera at an i128 position. Pixel `(px, py)` looks through its center; `py = 0`
/// is the top row. The pixel-to-direction arithmetic is plain f32 in a fixed order, mirrored
/// by `camera_dir` in `shaders/camera.wgsl`, so rays made in the shader equal [`Camera::ray`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    /// The voxel holding the eye.
    pub position: WorldPos,
    /// The eye inside `position`, in `[0, 1)³`.
    pub sub_offset: Vec3,
    /// Unit view direction.
    pub forward: Vec3,
    /// Unit vector to the right of the image.
    pub right: Vec3,
    /// Unit vector to the top of the image.
    pub up: Vec3,
    /// Image width in pixels (at least 1).
    pub width: u32,
    /// Image height in pixels (at least 1).
    pub height: u32,
    /// `tan(fov_y / 2) · width / height`: half the image width at distance 1.
    pub scale_x: f32,
    /// `tan(fov_y / 2)`: half the image height at distance 1.
    pub scale_y: f32,
    /// Max distance of every ray, in voxels (farther than [`crate::MAX_DISTANCE_CAP`],
    /// `f32::INFINITY` included, means the cap, as for a ray).
    pub max_distance: f32,
}

impl Camera {
    /// A camera at `position + sub_offset` looking along `forward`, with +Y as the world's up:
    /// [`Camera::with_up`] with `up = Vec3::Y`.
    ///
    /// # Arguments
    /// * `fov_y_degrees` - vertical field of view, in `(0, 180)` degrees.
    /// * `width`, `height` - image size in pixels, each at least 1.
    ///
    /// # Errors
    /// [`CameraError::Ray`] when `forward`, `sub_offset` or `max_distance` would make a bad ray
    /// (see [`VoxelRay::new`]); [`CameraError::VerticalView`] when `forward` is vertical;
    /// [`CameraError::FieldOfView`] and [`CameraError::EmptyImage`] as their names say.
    pub fn new(
        position: WorldPos,
        sub_offset: Vec3,
        forward: Vec3,
        fov_y_degrees: f32,
        width: u32,
        height: u32,
        max_distance: f32,
    ) -> Result<Self, CameraError> {
        Self::with_up(
            position,
            sub_offset,
            forward,
            Vec3::Y,
            fov_y_degrees,
            width,
            height,
            max_distance,
        )
    }

    /// A camera at `position + sub_offset` looking along `forward`, rolled so that `up` points
    /// to the top of the image as nearly as it can: the image's up is the part of `up`
    /// perpendicular to `forward`. Any finite non-zero `up` not parallel to `forward` works, so
    /// a camera can look straight down at the block under the player with `up` set to the
    /// player's horizontal facing. `up` need not be unit length.
    ///
    /// # Errors
    /// As [`Camera::new`], with [`CameraError::VerticalView`] when `forward` is parallel to
    /// `up` (within about 1e-6 rad), and [`CameraError::InvalidUp`] when `up` is zero, NaN or
    /// infinite.
    #[expect(
        clippy::too_many_arguments,
        reason = "a camera has this many independent parameters"
    )]
    pub fn with_up(
        position: WorldPos,
        sub_offset: Vec3,
        forward: Vec3,
        up: Vec3,
        fov_y_degrees: f32,
        width: u32,
        height: u32,
        max_distance: f32,
    ) -> Result<Self, CameraError> {
        let probe = VoxelRay::new(position, sub_offset, forward, max_distance)?;
        let forward = probe.direction;
        if !(fov_y_degrees > 0.0 && fov_y_degrees < 180.0) {
            return Err(CameraError::FieldOfView);
        }
        if width == 0 || height == 0 {
            return Err(CameraError::EmptyImage);
        }
        // Normalised in f64, so that any finite length works (f32 squares overflow from 1e19).
        let up = up.as_dvec3();
        let len = up.length();
        if !(len.is_finite() && len > 0.0) {
            return Err(CameraError::InvalidUp);
        }
        let right = forward.cross((up / len).as_vec3());
        if right.length_squared() < 1e-12 {
            return Err(CameraError::VerticalView);
        }
        let right = right.normalize();
        let up = right.cross(forward).normalize();
        let scale_y = (fov_y_degrees.to_radians() * 0.5).tan();
        Ok(Self {
            position: probe.origin,
            sub_offset: probe.sub_offset,
            forward,
            right,
            up,
            width,
            height,
            scale_x: scale_y * width as f32 / height as f32,
            scale_y,
            max_distance: probe.max_distance,
        })
    }

    /// A camera at `position + sub_offset` looking at `target + target_sub`.
    ///
    /// The target may be any distance away, across the whole i128 world: it sets the
    /// direction only, and `max_distance` alone limits the rays.
    ///
    /// # Errors
    /// As [`Camera::new`]; [`CameraError::TargetIsEye`] when the target is the eye;
    /// [`CameraError::Ray`] with [`RayError::NonFiniteSubOffset`] for a NaN or infinite
    /// `target_sub`.
    #[expect(
        clippy::too_many_arguments,
        reason = "a camera has this many independent parameters"
    )]
    pub fn look_at(
        position: WorldPos,
        sub_offset: Vec3,
        target: WorldPos,
        target_sub: Vec3,
        fov_y_degrees: f32,
        width: u32,
        height: u32,
        max_distance: f32,
    ) -> Result<Self, CameraError> {
        // The direction only: the target may lie beyond any max distance.
        let diff =
            difference(position, sub_offset, target, target_sub).map_err(CameraError::Ray)?;
        let len = diff.length();
        if len == 0.0 {
            return Err(CameraError::TargetIsEye);
        }
        Self::new(
            position,
            sub_offset,
            (diff / len).as_vec3(),
            fov_y_degrees,
            width,
            height,
            max_distance,
        )
    }

    /// The unit direction through the center of pixel `(px, py)`, counted from the top left.
    /// A pixel outside the image (`px >= width` or `py >= height`) continues the image plane
    /// past its edge (for guard bands); far outside, the direction tends to `right` or `-up`.
    /// Twin of `camera_dir` in `shaders/camera.wgsl`: same operations, same order.
    #[must_use]
    pub fn pixel_dir(&self, px: u32, py: u32) -> Vec3 {
        let [inv_w, inv_h] = self.pixel_steps();
        let sx = ((px as f32 + 0.5) * inv_w - 1.0) * self.scale_x;
        let sy = (1.0 - (py as f32 + 0.5) * inv_h) * self.scale_y;
        let v = Vec3::new(
            (self.forward.x + self.right.x * sx) + self.up.x * sy,
            (self.forward.y + self.right.y * sx) + self.up.y * sy,
            (self.forward.z + self.right.z * sx) + self.up.z * sy,
        );
        let len = ((v.x * v.x + v.y * v.y) + v.z * v.z).sqrt();
        let r = 1.0 / len;
        Vec3::new(v.x * r, v.y * r, v.z * r)
    }

    /// `2 / width` and `2 / height` in f32: the width and height of one pixel on the image
    /// plane at distance 1, in units of `scale_x` and `scale_y` (what [`Camera::pixel_dir`]
    /// steps by; the GPU receives them from the host). Infinite for a hand-edited camera of
    /// width or height 0.
    #[must_use]
    pub fn pixel_steps(&self) -> [f32; 2] {
        [2.0 / self.width as f32, 2.0 / self.height as f32]
    }

    /// The ray through the center of pixel `(px, py)` (see [`Camera::pixel_dir`], also for
    /// pixels outside the image).
    ///
    /// # Errors
    /// Never for a camera built by [`Camera::new`]; a hand-edited camera may yield a
    /// [`RayError`].
    pub fn ray(&self, px: u32, py: u32) -> Result<VoxelRay, RayError> {
        VoxelRay::new(
            self.position,
            self.sub_offset,
            self.pixel_dir(px, py),
            self.max_distance,
        )
    }

    /// Every pixel's ray, row by row from the top, in one `Vec` of `width × height` rays
    /// (`size_of::<VoxelRay>()`, 80 bytes, each): for a very large image, call [`Camera::ray`]
    /// per pixel or per band of rows instead.
    ///
    /// # Errors
    /// As [`Camera::ray`].
    pub fn rays(&self) -> Result<Vec<VoxelRay>, RayError> {
        (0..self.height)
            .flat_map(|y| (0..self.width).map(move |x| (x, y)))
            .map(|(x, y)| self.ray(x, y))
            .collect()
    }
}

/// A camera's parameters by name, for code that reads better than seven positional arguments:
/// fill the fields you need, take the rest from [`CameraSpec::default`], and [`CameraSpec::build`].
///
/// ```
/// use voxcast::{CameraSpec, WorldPos, glam::Vec3};
/// let camera = CameraSpec {
///     position: WorldPos::new(10, 64, -3),
///     forward: Vec3::new(1.0, -0.2, 0.0),
///     width: 640,
///     height: 360,
///     ..CameraSpec::default()
/// }
/// .build()?;
/// assert_eq!((camera.width, camera.height), (640, 360));
/// # Ok::<(), voxcast::CameraError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CameraSpec {
    /// The voxel the eye is in.
    pub position: WorldPos,
    /// The eye's offset inside that voxel, each component in `[0, 1)` (as [`VoxelRay::new`]
    /// takes it). Default: the voxel's center, `(0.5, 0.5, 0.5)`.
    pub sub_offset: Vec3,
    /// The view direction, any length but not zero. Default: `+Z`.
    pub forward: Vec3,
    /// The direction that points to the top of the image as nearly as it can
    /// ([`Camera::with_up`]). Default: `+Y`.
    pub up: Vec3,
    /// Vertical field of view, in `(0, 180)` degrees. Default: 60.
    pub fov_y_degrees: f32,
    /// Image width in pixels, at least 1. Default: 1280.
    pub width: u32,
    /// Image height in pixels, at least 1. Default: 720.
    pub height: u32,
    /// Max distance of every ray, in voxels (farther than [`crate::MAX_DISTANCE_CAP`],
    /// `f32::INFINITY` included, means the cap). Default: 1024.
    pub max_distance: f32,
}

impl Default for CameraSpec {
    fn default() -> Self {
        Self {
            position: WorldPos::ZERO,
            sub_offset: Vec3::splat(0.5),
            forward: Vec3::Z,
            up: Vec3::Y,
            fov_y_degrees: 60.0,
            width: 1280,
            height: 720,
            max_distance: 1024.0,
        }
    }
}

impl CameraSpec {
    /// The camera, as [`Camera::with_up`] builds it from these fields.
    ///
    /// # Errors
    /// Those of [`Camera::with_up`].
    pub fn build(&self) -> Result<Camera, CameraError> {
        Camera::with_up(
            self.position,
            self.sub_offset,
            self.forward,
            self.up,
            self.fov_y_degrees,
            self.width,
            self.height,
            self.max_distance,
        )
    }
}
