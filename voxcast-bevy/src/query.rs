//! One-off casts from any system ([`VoxelQuery`]) and rays from a cursor (picking,
//! [`viewport_ray`]).

use bevy_ecs::prelude::*;
use bevy_ecs::system::SystemParam;
use bevy_math::{Mat4, Vec2, Vec3};
use bevy_transform::components::GlobalTransform;
use voxcast::{
    BoxBody, BoxCast, BoxCastError, BoxCastOutcome, LineOfSight, LineOfSightOptions, RayError,
    RaycastOptions, RaycastOutcome, SlideOptions, VoxelRay, VoxelWorld, box_cast,
    collide_and_slide, line_of_sight, voxel_raycast_with,
};

use crate::{BlockTarget, VoxelPosition, Voxels};

/// A system parameter for one-off casts on the app's [`Voxels`], answered at once on the CPU:
/// aim a spell, test a shot, check one line of sight, sweep a box or move a character's box
/// ([`VoxelQuery::slide`]), from any system.
///
/// For many queries a frame, [`SightQueue`](crate::SightQueue) answers them together (on the
/// GPU when the app has one); [`BlockTargeter`](crate::BlockTargeter) keeps a target per
/// entity.
///
/// ```
/// use bevy_ecs::prelude::*;
/// use voxcast_bevy::prelude::*;
///
/// fn shoot(voxels: VoxelQuery, shooters: Query<&VoxelPosition>) {
///     for eye in &shooters {
///         let outcome = voxels.cast(eye, Vec3::NEG_Z, 64.0, &RaycastOptions::default());
///         if let Some(hit) = outcome.hit() {
///             println!("hit {} at {} voxels", hit.voxel_pos, hit.distance);
///         }
///     }
/// }
/// # let mut world = World::new();
/// # world.init_resource::<Voxels>();
/// # world.spawn(VoxelPosition::default());
/// # let _ = world.run_system_cached(shoot);
/// ```
#[derive(SystemParam, Debug)]
pub struct VoxelQuery<'w> {
    voxels: Res<'w, Voxels>,
}

impl VoxelQuery<'_> {
    /// The world the casts read.
    #[must_use]
    pub fn world(&self) -> &VoxelWorld {
        &self.voxels
    }

    /// [`voxel_raycast_with`] on the world: a ray as given (an invalid one is answered
    /// `Invalid`, never a panic).
    #[must_use]
    pub fn raycast(&self, ray: &VoxelRay, options: &RaycastOptions) -> RaycastOutcome {
        voxel_raycast_with(ray, &self.voxels, options)
    }

    /// A ray from `from` along `direction` (normalised when it is not unit length),
    /// `max_distance` voxels far (farther than [`voxcast::MAX_DISTANCE_CAP`], `f32::INFINITY`
    /// included, means the cap): [`VoxelQuery::raycast`] of it.
    #[must_use]
    pub fn cast(
        &self,
        from: &VoxelPosition,
        direction: Vec3,
        max_distance: f32,
        options: &RaycastOptions,
    ) -> RaycastOutcome {
        self.raycast(
            &VoxelRay {
                origin: from.voxel,
                sub_offset: from.offset,
                direction,
                max_distance,
            },
            options,
        )
    }

    /// The block target of a ray from `from` along `direction`, `reach` voxels far: what a
    /// [`BlockTargeter`](crate::BlockTargeter) there would get ([`BlockTarget::cast`]). With
    /// `direction` the entity's `*GlobalTransform::forward()` (the direction a targeter aims
    /// along) and `from` its eye, it is that targeter's [`BlockTarget`] to the last bit.
    #[must_use]
    pub fn target(
        &self,
        from: &VoxelPosition,
        direction: Vec3,
        reach: f32,
        options: &RaycastOptions,
    ) -> BlockTarget {
        BlockTarget::cast(&self.voxels, from, direction, reach, options)
    }

    /// Line of sight between `from` and `to` ([`voxcast::line_of_sight`] of
    /// [`VoxelRay::sight_line`]: one answer for either order, cast from the lower point; two
    /// points that coincide see each other): `Invalid` when they lie more than
    /// [`voxcast::MAX_DISTANCE_CAP`] apart or leave the i128 world.
    #[must_use]
    pub fn line_of_sight(
        &self,
        from: &VoxelPosition,
        to: &VoxelPosition,
        options: &LineOfSightOptions,
    ) -> LineOfSight {
        match VoxelRay::sight_line(from.voxel, from.offset, to.voxel, to.offset) {
            Ok(segment) => line_of_sight(&segment, &self.voxels, options),
            Err(e) => LineOfSight::Invalid(e),
        }
    }
}

impl VoxelQuery<'_> {
    /// [`voxcast::box_cast`] of the box centered at `center` with `half_extents` (voxels, each
    /// `0..=`[`voxcast::MAX_HALF_EXTENT`]) moving along `direction` for `max_distance` voxels:
    /// where it first touches a stopping voxel (an invalid cast is answered `Invalid`).
    #[must_use]
    pub fn box_cast(
        &self,
        center: &VoxelPosition,
        half_extents: Vec3,
        direction: Vec3,
        max_distance: f32,
        options: &RaycastOptions,
    ) -> BoxCastOutcome {
        let cast = BoxCast {
            body: BoxBody {
                center: center.voxel,
                center_offset: center.offset,
                half_extents,
            },
            direction,
            max_distance,
        };
        box_cast(&cast, &self.voxels, options)
    }

    /// Moves the box centered at `center` with `half_extents` by `displacement` voxels as a
    /// character controller does ([`voxcast::collide_and_slide`]): the new center, and which
    /// axes were blocked (`blocked.y` after a fall: on the ground).
    ///
    /// # Errors
    /// [`BoxCastError`] for a bad box or displacement, or a move out of the i128 world.
    pub fn slide(
        &self,
        center: &VoxelPosition,
        half_extents: Vec3,
        displacement: Vec3,
        options: &SlideOptions,
    ) -> Result<(VoxelPosition, voxcast::Slide), BoxCastError> {
        let body = BoxBody {
            center: center.voxel,
            center_offset: center.offset,
            half_extents,
        };
        let s = collide_and_slide(&body, displacement, &self.voxels, options)?;
        Ok((VoxelPosition::new(s.body.center, s.body.center_offset), s))
    }
}

/// The ray through a point of a camera's viewport (picking: the cursor's position): from the
/// near plane through that point, `max_distance` voxels far (farther than
/// [`voxcast::MAX_DISTANCE_CAP`], `f32::INFINITY` included, means the cap), in the i128 world.
///
/// - `cursor`: the point in logical pixels of the viewport, from its top left corner (what
///   Bevy's `Window::cursor_position` gives, minus the viewport's own offset).
/// - `viewport_size`: the viewport's size in the same pixels.
/// - `camera`: the camera's `GlobalTransform`; `eye`: the camera's place in the i128 world
///   (its `VoxelPosition`, or its body's plus the camera's height: the point the
///   `GlobalTransform`'s translation stands for).
/// - `clip_from_view`: the camera's projection matrix, as Bevy's
///   `Projection::get_clip_from_view` (or `Camera::clip_from_view`) gives it, perspective or
///   orthographic, reversed depth (near plane at depth 1) as Bevy makes them.
///
/// It follows Bevy's `Camera::viewport_to_world`: the point is unprojected at the near plane
/// and at a far depth, and the ray runs from the first through the second (so its distances
/// count from the near plane). The `picking` example picks blocks with it, without a window.
///
/// # Errors
/// [`RayError`] when the inputs give no ray: a zero-sized viewport or a singular projection
/// (the direction is NaN or zero), a NaN transform, an eye pushed out of the i128 world, or a
/// bad `max_distance` (NaN, negative, or above the cap other than the "no limit" values).
pub fn viewport_ray(
    cursor: Vec2,
    viewport_size: Vec2,
    camera: &GlobalTransform,
    clip_from_view: Mat4,
    eye: &VoxelPosition,
    max_distance: f32,
) -> Result<VoxelRay, RayError> {
    let ndc = (cursor / viewport_size) * 2.0 - Vec2::ONE;
    let ndc = Vec2::new(ndc.x, -ndc.y);
    let view_from_clip = clip_from_view.inverse();
    let near = view_from_clip.project_point3(ndc.extend(1.0));
    let far = view_from_clip.project_point3(ndc.extend(f32::EPSILON));
    let affine = camera.affine();
    // Both in the world's orientation, relative to the camera's own translation.
    let start = affine.transform_vector3(near);
    let direction = affine.transform_vector3(far - near);
    VoxelRay::new(eye.voxel, eye.offset + start, direction, max_distance)
}
