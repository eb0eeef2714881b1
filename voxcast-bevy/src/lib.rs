//! # voxcast-bevy
//!
//! [voxcast]'s exact voxel raycasts as Bevy ECS systems: block targeting, mining and
//! placement, and line of sight for AI in batches. Built on Bevy 0.20's `bevy_app`,
//! `bevy_ecs` and `bevy_transform`, so it works in any Bevy app, headless or rendering.
//!
//! ```
//! use bevy_app::App;
//! use bevy_transform::TransformPlugin;
//! use voxcast_bevy::prelude::*;
//!
//! let mut world = VoxelWorld::new();
//! world.set_voxel(WorldPos::new(3, 0, 0), VoxelId(1));
//! world.set_voxel(WorldPos::new(4, 0, 0), VoxelId(2));
//!
//! let mut app = App::new();
//! // `TransformPlugin` (in `DefaultPlugins`) computes the `GlobalTransform` targeters aim with.
//! app.add_plugins((TransformPlugin, VoxcastPlugin))
//!     .insert_resource(Voxels::new(world));
//! // A player at the center of voxel (0, 0, 0), looking along +x (Bevy looks along -Z).
//! let player = app
//!     .world_mut()
//!     .spawn((
//!         BlockTargeter::default(), // reach 8
//!         VoxelPosition::new(WorldPos::ZERO, Vec3::splat(0.5)),
//!         Transform::from_rotation(Quat::from_rotation_arc(Vec3::NEG_Z, Vec3::X)),
//!     ))
//!     .id();
//! app.update();
//!
//! let target = *app.world().get::<BlockTarget>(player).expect("a targeter has a target");
//! let hit = *target.hit().expect("the block at x = 3 is in reach");
//! assert_eq!((hit.voxel_pos, hit.face_normal), (WorldPos::new(3, 0, 0), IVec3::NEG_X));
//! assert_eq!(target.place_at, Some(WorldPos::new(2, 0, 0)));
//!
//! // Mine it: the next frame applies the message and targets the block behind.
//! let request = app.world_mut().write_message(EditBlock::mine(player, hit));
//! app.update();
//! let target = app.world().get::<BlockTarget>(player).expect("a targeter has a target");
//! assert_eq!(target.hit().map(|h| h.voxel_pos), Some(WorldPos::new(4, 0, 0)));
//! # let _ = request;
//! ```
//!
//! ## What the plugin adds
//! - [`Voxels`]: the [`VoxelWorld`](voxcast::VoxelWorld) as a resource (an empty one unless
//!   the app inserts its own). Read it through `Deref`; edit it through its methods.
//! - [`BlockTargeter`] on an entity (with a [`VoxelPosition`] on it or an ancestor, and a
//!   `Transform`): each frame its [`BlockTarget`] component gets what it aims at within its
//!   reach (8 by default), along its `GlobalTransform`'s forward direction.
//! - The message [`EditBlock`] (mine, or place a block), applied to the world in the order
//!   written and answered with a [`BlockEdited`] that names its request.
//! - [`VoxelQuery`], a system parameter for one-off casts and line of sight from any system,
//!   and [`viewport_ray`], the ray under a cursor (picking).
//! - [`SightQueue`]: line-of-sight requests from any system, answered together as
//!   [`SightAnswer`] messages, on the GPU when the app inserted a [`VoxelGpu`] (the `gpu`
//!   feature), else on the CPU on all threads. [`SightStatus`] says which. For a world streamed
//!   around the player, [`VoxelGpu::with_window`] keeps only a box of chunks around the
//!   [`GpuWindowFocus`] entity on the GPU, moved as it moves.
//! - [`ChunksChanged`]: the chunks of the world that changed, once a frame.
//!
//! ## Features
//! - `gpu` (on by default): line of sight in batches on the GPU, through voxcast's own `gpu`
//!   feature (wgpu): [`VoxelGpu`], [`GpuWindowFocus`], [`SightStatus::gpu_error`] and the
//!   system in [`VoxcastSystems::CollectSight`] that collects the GPU's answers. Without it (`default-features = false`) neither
//!   this crate nor voxcast builds wgpu or naga, and the [`SightQueue`] is answered on the CPU
//!   on all threads, with the same answers; everything else is the same. The Bevy crates this
//!   one depends on (`bevy_app`, `bevy_ecs`, `bevy_transform`, `bevy_math`) bring no wgpu
//!   either way.
//!
//! ```toml
//! [dependencies]
//! # Not on crates.io: a path (or `git = "…"`) to a checkout of voxcast's workspace.
//! voxcast-bevy = { path = "../voxcast/voxcast-bevy", default-features = false } # no wgpu
//! ```
//!
//! ## One frame
//! | schedule | set | what |
//! | --- | --- | --- |
//! | `PreUpdate` | [`VoxcastSystems::CollectSight`] | writes the [`SightAnswer`]s of the batch the last frame submitted to the GPU (waiting only if the GPU has not finished it) |
//! | `Update` | [`VoxcastSystems::Edit`] | applies the [`EditBlock`]s written so far, in the order written; writes a [`BlockEdited`] for each |
//! | `PostUpdate` | [`VoxcastSystems::Target`], after Bevy's `TransformSystems::Propagate` | writes every [`BlockTarget`] against the world as edited, aiming with the `GlobalTransform` just computed |
//! | `PostUpdate` | [`VoxcastSystems::PublishChanges`] | takes the world's changed chunks, updates the GPU copy's list, writes [`ChunksChanged`] |
//! | `PostUpdate` | [`VoxcastSystems::Sight`] | answers every queued sight request in one batch on the CPU and writes [`SightAnswer`]s, or submits the batch to the GPU without waiting |
//!
//! Order your systems against these sets: movement and aiming anywhere in `Update` (targets
//! follow them in the same frame), input that writes [`EditBlock`] `.before(VoxcastSystems::Edit)`
//! to apply it in the same frame (later, it is applied in the next one). Sight requests queued anywhere in `Update` are answered at the
//! end of the frame on the CPU, or at the start of the next on the GPU (the frame between is
//! the GPU's: nothing waits for it); either way a reader in `Update` sees the answers in the
//! next frame.
//!
//! ## Positions: i128 beside Bevy's f32
//! A [`VoxelPosition`] is where an entity is in the i128 world; Bevy's `GlobalTransform` gives
//! the direction it looks, and for a child without a `VoxelPosition` of its own (a camera on a
//! body), its offset from the ancestor that has one. Keep the two in step by rendering relative to a
//! floating origin: see [`VoxelPosition`].
//!
//! ## Errors
//! Nothing here panics on bad data. A targeter whose ray cannot be cast (a NaN or zero
//! rotation, a position pushed out of the i128 world, a NaN or negative reach) has no target,
//! and its [`BlockTarget::error`] says why (a [`RayError`](voxcast::RayError)). A mining or
//! placement request that no longer fits the world changes nothing and gets an
//! [`EditError`]. A sight request between entities without a position gets a
//! [`SightError`], and a segment that cannot be cast gets `LineOfSight::Invalid`; the other
//! requests of the batch are answered all the same. A GPU failure is kept in
//! [`SightStatus::gpu_error`] and the CPU answers that batch instead.

mod edit;
mod query;
mod sight;
mod target;
mod world;

#[cfg(feature = "gpu")]
use bevy_app::PreUpdate;
use bevy_app::{App, Plugin, PostUpdate, Update};
use bevy_ecs::prelude::*;
use bevy_transform::TransformSystems;

/// The core crate, for its every item (`voxcast_bevy::voxcast::VoxelWorld`): one dependency
/// gives both, in the same version.
pub use voxcast;

pub use edit::{BlockEdit, BlockEdited, EditAction, EditBlock};
pub use query::{VoxelQuery, viewport_ray};
#[cfg(feature = "gpu")]
pub use sight::{GpuWindowFocus, VoxelGpu};
pub use sight::{
    SightAnswer, SightEngine, SightError, SightId, SightQueue, SightRequest, SightStatus,
};
pub use target::{BlockTarget, BlockTargeter, VoxelPosition};
pub use voxcast::EditError;
pub use world::{ChunksChanged, Voxels};

/// The plugin: adds the resources, messages and systems of this crate (see the crate docs for
/// what runs when). Keeps a [`Voxels`] resource the app inserted before or after adding it;
/// without one, the world starts empty.
#[derive(Clone, Copy, Debug, Default)]
pub struct VoxcastPlugin;

/// The plugin's system sets, to order the app's systems against.
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VoxcastSystems {
    /// `Update`: applies [`EditBlock`] messages.
    Edit,
    /// `PostUpdate`, after Bevy's `TransformSystems::Propagate`: writes every
    /// [`BlockTarget`].
    Target,
    /// `PostUpdate`: takes the world's changed chunks and writes [`ChunksChanged`].
    PublishChanges,
    /// `PostUpdate`, after `PublishChanges`: answers the [`SightQueue`] on the CPU, or
    /// submits it to the GPU.
    Sight,
    /// `PreUpdate`: answers the batch the last frame's `Sight` submitted to the GPU (with the
    /// `gpu` feature; without it the set stays empty).
    CollectSight,
}

impl Plugin for VoxcastPlugin {
    fn build(&self, app: &mut App) {
        #[cfg(feature = "gpu")]
        app.init_resource::<sight::GpuSightWorld>().add_systems(
            PreUpdate,
            sight::collect_gpu_answers.in_set(VoxcastSystems::CollectSight),
        );
        app.init_resource::<Voxels>()
            .init_resource::<SightQueue>()
            .init_resource::<SightStatus>()
            .add_message::<EditBlock>()
            .add_message::<BlockEdited>()
            .add_message::<ChunksChanged>()
            .add_message::<SightAnswer>()
            .configure_sets(
                PostUpdate,
                VoxcastSystems::Target.after(TransformSystems::Propagate),
            )
            .configure_sets(
                PostUpdate,
                (VoxcastSystems::PublishChanges, VoxcastSystems::Sight).chain(),
            )
            .add_systems(Update, edit::apply_block_edits.in_set(VoxcastSystems::Edit))
            .add_systems(
                PostUpdate,
                (
                    target::update_block_targets.in_set(VoxcastSystems::Target),
                    world::publish_changed_chunks.in_set(VoxcastSystems::PublishChanges),
                    sight::answer_sight_requests.in_set(VoxcastSystems::Sight),
                ),
            );
    }
}

/// What a Bevy app using voxcast usually needs: this crate's items, voxcast's usual ones and
/// Bevy's vector and transform types (the same types: voxcast uses Bevy's glam), so that
/// `use voxcast_bevy::prelude::*;` beside `use bevy::prelude::*;` is enough. voxcast's
/// `Camera` is left out (Bevy's prelude has a `Camera` of its own): name it
/// `voxcast::Camera`.
pub mod prelude {
    pub use crate::{
        BlockEdit, BlockEdited, BlockTarget, BlockTargeter, ChunksChanged, EditAction, EditBlock,
        SightAnswer, SightId, SightQueue, SightRequest, SightStatus, VoxcastPlugin, VoxcastSystems,
        VoxelPosition, VoxelQuery, Voxels, viewport_ray,
    };
    #[cfg(feature = "gpu")]
    pub use crate::{GpuWindowFocus, VoxelGpu};
    pub use bevy_math::{IVec3, Quat, Vec2, Vec3};
    pub use bevy_transform::components::{GlobalTransform, Transform};
    pub use voxcast::{
        Agent, BlockShape, BoxCast, BoxCastError, BoxCastOutcome, BoxHit, ChunkPos, EditError,
        LineOfSight, LineOfSightOptions, LocalPos, MAX_DISTANCE_CAP, MaterialFilter, OriginPolicy,
        RayError, RaycastOptions, RaycastOutcome, SensorPose, SensorReading, SensorRig, ShapeBox,
        Slide, SlideOptions, UnloadedPolicy, VoxelId, VoxelRay, VoxelRaycastHit, VoxelWorld,
        WorldPos, box_cast, break_block, collide_and_slide, line_of_sight, line_of_sight_batch,
        place_block, raycast_batch, sense, voxel_raycast, voxel_raycast_with,
    };
}
