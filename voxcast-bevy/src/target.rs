//! Block targeting: the i128 position of an entity, what it aims with, and what it aims at.

use bevy_ecs::prelude::*;
use bevy_transform::components::{GlobalTransform, Transform};
use voxcast::glam::Vec3;
use voxcast::{
    RayError, RaycastOptions, RaycastOutcome, VoxelRay, VoxelRaycastHit, WorldPos,
    voxel_raycast_with,
};

use crate::Voxels;

/// Where an entity is in the i128 world: the voxel that holds it and the point inside that
/// voxel, as a ray's `origin` and `sub_offset` ([`VoxelRay`]). For a [`BlockTargeter`] this is
/// the eye: rays start here.
///
/// Bevy's [`Transform`] is f32, which holds a position to a voxel only within about 2^24
/// voxels of the origin, so the game keeps positions here and uses `Transform` for rendering
/// and rotation: render relative to a floating origin (the camera's voxel), with an entity's
/// `Transform::translation` set to `(voxel - origin_voxel) + offset` each frame (small
/// numbers near the camera, exact wherever the camera is), and its rotation shared by both.
/// Movement changes `offset` (and carries whole voxels into `voxel` when it likes; any finite
/// `offset` is accepted, and rays move its whole units into the voxel exactly).
#[derive(Component, Clone, Copy, Debug, Default, PartialEq)]
pub struct VoxelPosition {
    /// The voxel holding the point.
    pub voxel: WorldPos,
    /// The point inside `voxel`, in voxels, normally in `[0, 1)` per axis. Other finite values
    /// are moved into `voxel` when a ray is built; a NaN or infinite one, or one that moves
    /// the point out of the i128 world, makes that ray invalid (a [`RayError`] in
    /// [`BlockTarget`] or in a sight answer, never a panic).
    pub offset: Vec3,
}

impl VoxelPosition {
    /// The point `voxel + offset`.
    #[must_use]
    pub const fn new(voxel: WorldPos, offset: Vec3) -> Self {
        Self { voxel, offset }
    }
}

/// Makes an entity target blocks: each frame [`VoxcastSystems::Target`](crate::VoxcastSystems)
/// casts a ray from the entity's eye along its forward direction, `reach` voxels far, with
/// `options`, and writes the answer to its [`BlockTarget`]. Adding it adds `Transform` (and so
/// `GlobalTransform`) and `BlockTarget` where the entity lacks them.
///
/// - **Direction**: the entity's `GlobalTransform::forward()` (`-Z` through its global
///   rotation and scale, made unit), bit for bit, so a first-person rig works as built (yaw on
///   the body, pitch on a child camera that carries the targeter), and a cast along
///   `*global.forward()` from the same eye ([`VoxelQuery::target`](crate::VoxelQuery::target),
///   [`BlockTarget::cast`]) gets the same answer to the last bit. A transform with no forward
///   direction (a NaN rotation, a zero scale) gives the entity no target, and
///   [`BlockTarget::error`] says why (where `forward()` itself would give NaN, and panic in a
///   debug build).
///   `GlobalTransform` is computed by Bevy's `TransformPlugin` (part of `DefaultPlugins`;
///   a headless app adds it itself); the targets are written after it runs, in `PostUpdate`.
/// - **Eye**: the [`VoxelPosition`] of the entity itself or, when it has none, of its nearest
///   ancestor that has one, moved by the difference of the two entities' global translations
///   (the camera's height above the body, say: small numbers, exact enough in f32). Without a
///   `VoxelPosition` on the entity or any of its nearest 256 ancestors, the eye is at the i128
///   origin plus the entity's global translation.
#[derive(Component, Clone, Debug, PartialEq)]
#[require(Transform, BlockTarget)]
pub struct BlockTargeter {
    /// How far the entity reaches, in voxels; farther than [`voxcast::MAX_DISTANCE_CAP`]
    /// (`f32::INFINITY` included: no limit of its own) means the cap. A block whose face lies
    /// exactly at `reach` is in reach. NaN or negative values give the entity no target and an
    /// error in [`BlockTarget`].
    pub reach: f32,
    /// Which voxels stop the ray, what happens when it starts in one, and what unloaded
    /// chunks do.
    pub options: RaycastOptions,
}

impl BlockTargeter {
    /// The default reach, in voxels.
    pub const DEFAULT_REACH: f32 = 8.0;
}

impl Default for BlockTargeter {
    /// [`BlockTargeter::DEFAULT_REACH`] and the default [`RaycastOptions`].
    fn default() -> Self {
        Self {
            reach: Self::DEFAULT_REACH,
            options: RaycastOptions::default(),
        }
    }
}

/// What a [`BlockTargeter`] aims at, as of the last run of
/// [`VoxcastSystems::Target`](crate::VoxcastSystems::Target).
///
/// It is only written when the answer changes, so `Changed<BlockTarget>` finds the entities
/// whose target changed. Before the first run it is a miss.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct BlockTarget {
    /// The answer of [`voxel_raycast_with`] for the entity's ray: a hit (voxel, entry face,
    /// distance in voxels, id, UV); a miss (nothing within reach); under
    /// [`voxcast::UnloadedPolicy::Stop`] the unloaded voxel the ray reached first; or
    /// [`RaycastOutcome::Invalid`] with the reason the ray could not be cast (a NaN or zero
    /// rotation, a position outside the i128 world, a bad reach).
    pub outcome: RaycastOutcome,
    /// Where a block placed against the hit face would go now: the voxel in front of that
    /// face ([`VoxelRaycastHit::previous_pos`]), when it is air or unloaded. `None` without
    /// a hit, for a hit in the voxel the ray starts in (no face), at the edge of the i128
    /// world, and when that voxel holds something (a material the options let the ray pass).
    pub place_at: Option<WorldPos>,
}

impl Default for BlockTarget {
    /// No target: a miss.
    fn default() -> Self {
        Self {
            outcome: RaycastOutcome::Miss,
            place_at: None,
        }
    }
}

impl BlockTarget {
    /// The targeted block, if there is one.
    #[must_use]
    pub fn hit(&self) -> Option<&VoxelRaycastHit> {
        self.outcome.hit()
    }

    /// Why the entity has no target, when its ray could not be cast.
    #[must_use]
    pub fn error(&self) -> Option<RayError> {
        match self.outcome {
            RaycastOutcome::Invalid(e) => Some(e),
            _ => None,
        }
    }

    /// The target of a ray from `position` along `direction`, `reach` voxels far: the
    /// [`BlockTarget`] that [`VoxcastSystems::Target`](crate::VoxcastSystems::Target) writes.
    #[must_use]
    pub fn cast(
        world: &voxcast::VoxelWorld,
        position: &VoxelPosition,
        direction: Vec3,
        reach: f32,
        options: &RaycastOptions,
    ) -> Self {
        // The fields as given: `voxel_raycast_with` validates and normalises them, and answers
        // a bad one with `Invalid`.
        let ray = VoxelRay {
            origin: position.voxel,
            sub_offset: position.offset,
            direction,
            max_distance: reach,
        };
        let outcome = voxel_raycast_with(&ray, world, options);
        let place_at = outcome
            .hit()
            .and_then(VoxelRaycastHit::previous_pos)
            .filter(|p| world.get_voxel(p).is_none_or(|id| id.is_air()));
        Self { outcome, place_at }
    }
}

/// The direction a [`BlockTargeter`] with global transform `global` aims along: bit for bit
/// Bevy's `GlobalTransform::forward()` (`-Z` through the transform's rotation and scale, made
/// unit), so that a cast along `*global.forward()` from the same eye gets the same answer to
/// the last bit. Where the transform has no forward direction, the vector before it is made
/// unit (zero for a zero scale, NaN for a NaN rotation), which the ray rejects with an error
/// where `forward()` would give NaN (and panic in a debug build).
#[must_use]
pub(crate) fn forward(global: &GlobalTransform) -> Vec3 {
    // `GlobalTransform::forward()` is `-(matrix3 · Z).normalize()`: the same operations here.
    let back = global.affine().matrix3 * Vec3::Z;
    if back == Vec3::ZERO || !back.is_finite() {
        return -back;
    }
    -back.normalize()
}

/// The eye of `entity` (global transform `global`): its own [`VoxelPosition`], or its nearest
/// ancestor's moved by the difference of their global translations.
pub(crate) fn eye_of(
    entity: Entity,
    global: &GlobalTransform,
    positions: &Query<(&VoxelPosition, Option<&GlobalTransform>)>,
    parents: &Query<&ChildOf>,
) -> VoxelPosition {
    let mut at = entity;
    // At most this many ancestors: a hierarchy built into a cycle ends the walk too.
    for _ in 0..MAX_ANCESTORS {
        if let Ok((position, holder)) = positions.get(at) {
            let delta = holder.map_or(Vec3::ZERO, |h| global.translation() - h.translation());
            return VoxelPosition::new(position.voxel, position.offset + delta);
        }
        match parents.get(at) {
            Ok(parent) => at = parent.parent(),
            Err(_) => break,
        }
    }
    VoxelPosition::new(voxcast::WorldPos::ZERO, global.translation())
}

/// The most ancestors [`eye_of`] looks through for a [`VoxelPosition`].
const MAX_ANCESTORS: usize = 256;

/// Writes every [`BlockTargeter`]'s [`BlockTarget`].
pub(crate) fn update_block_targets(
    voxels: Res<Voxels>,
    mut targeters: Query<(Entity, &GlobalTransform, &BlockTargeter, &mut BlockTarget)>,
    positions: Query<(&VoxelPosition, Option<&GlobalTransform>)>,
    parents: Query<&ChildOf>,
) {
    for (entity, global, targeter, mut target) in &mut targeters {
        let eye = eye_of(entity, global, &positions, &parents);
        let new = BlockTarget::cast(
            &voxels,
            &eye,
            forward(global),
            targeter.reach,
            &targeter.options,
        );
        target.set_if_neq(new);
    }
}
