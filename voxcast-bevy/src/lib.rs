//! # voxcast-bevy
//!
//! [voxcast]'s exact voxel raycasts as Bevy ECS systems: block targeting, mining and
//! placement, and line of sight for AI in batches. Built on Bevy 0.20's `bevy_app`,
//! `bevy_ecs` and `bevy_transform`, so it works in any Bevy app, headless or rendering.
//!
//! ```
//! use bevy_app::App;
//! use bevy_ecs::prelude::*;
//! use bevy_math::{Quat, Vec3 as BevyVec3};
//! use bevy_transform::components::Transform;
//! use voxcast::glam::{IVec3, Vec3};
//! use voxcast::{VoxelId, VoxelWorld, WorldPos};
//! use voxcast_bevy::{BlockTarget, BlockTargeter, MineBlock, Voxels, VoxcastPlugin, VoxelPosition};
//!
//! let mut world = VoxelWorld::new();
//! world.set_voxel(WorldPos::new(3, 0, 0), VoxelId(1));
//! world.set_voxel(WorldPos::new(4, 0, 0), VoxelId(2));
//!
//! let mut app = App::new();
//! app.add_plugins(VoxcastPlugin).insert_resource(Voxels::new(world));
//! // A player at the centre of voxel (0, 0, 0), looking along +x (Bevy looks along -Z).
//! let player = app
//!     .world_mut()
//!     .spawn((
//!         BlockTargeter::default(), // reach 8
//!         VoxelPosition::new(WorldPos::ZERO, Vec3::splat(0.5)),
//!         Transform::from_rotation(Quat::from_rotation_arc(BevyVec3::NEG_Z, BevyVec3::X)),
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
//! app.world_mut().write_message(MineBlock { entity: player, aimed: hit });
//! app.update();
//! let target = app.world().get::<BlockTarget>(player).expect("a targeter has a target");
//! assert_eq!(target.hit().map(|h| h.voxel_pos), Some(WorldPos::new(4, 0, 0)));
//! ```
//!
//! ## What the plugin adds
//! - [`Voxels`]: the [`VoxelWorld`](voxcast::VoxelWorld) as a resource (an empty one unless
//!   the app inserts its own). Read it through `Deref`; edit it through its methods.
//! - [`BlockTargeter`] on an entity (with its [`VoxelPosition`] and `Transform`): each frame
//!   its [`BlockTarget`] component gets what it aims at within its reach (8 by default).
//! - Messages [`MineBlock`] and [`PlaceBlock`], applied to the world and answered with
//!   [`BlockEdited`].
//! - [`SightQueue`]: line-of-sight requests from any system, answered together as
//!   [`SightAnswer`] messages, on the GPU when the app inserted a [`VoxelGpu`], else on the
//!   CPU on all threads. [`SightStatus`] says which. For a world streamed around the player,
//!   [`VoxelGpu::with_window`] keeps only a box of chunks around the [`GpuWindowFocus`]
//!   entity on the GPU, moved as it moves.
//! - [`ChunksChanged`]: the chunks of the world that changed, once a frame.
//!
//! ## One frame
//! | schedule | set | what |
//! | --- | --- | --- |
//! | `PreUpdate` | [`VoxcastSystems::CollectSight`] | writes the [`SightAnswer`]s of the batch the last frame submitted to the GPU (waiting only if the GPU has not finished it) |
//! | `Update` | [`VoxcastSystems::Edit`] | applies the [`MineBlock`]s, then the [`PlaceBlock`]s, written so far; writes [`BlockEdited`] |
//! | `Update` | [`VoxcastSystems::Target`] | writes every [`BlockTarget`] against the world as edited |
//! | `PostUpdate` | [`VoxcastSystems::PublishChanges`] | takes the world's changed chunks, updates the GPU copy's list, writes [`ChunksChanged`] |
//! | `PostUpdate` | [`VoxcastSystems::Sight`] | answers every queued sight request in one batch on the CPU and writes [`SightAnswer`]s, or submits the batch to the GPU without waiting |
//!
//! Order your systems against these sets: movement and aiming `.before(VoxcastSystems::Target)`
//! so that targets follow them in the same frame, input that writes [`MineBlock`] or
//! [`PlaceBlock`] `.before(VoxcastSystems::Edit)` to apply it in the same frame (later, it is
//! applied in the next one). Sight requests queued anywhere in `Update` are answered at the
//! end of the frame on the CPU, or at the start of the next on the GPU (the frame between is
//! the GPU's: nothing waits for it); either way a reader in `Update` sees the answers in the
//! next frame.
//!
//! ## Positions: i128 beside Bevy's f32
//! A [`VoxelPosition`] is where an entity is in the i128 world; Bevy's `Transform` gives only
//! the direction it looks (its rotation). Keep the two in step by rendering relative to a
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
mod sight;
mod target;
mod world;

use bevy_app::{App, Plugin, PostUpdate, PreUpdate, Update};
use bevy_ecs::prelude::*;

pub use edit::{BlockEdit, BlockEdited, EditError, MineBlock, PlaceBlock};
pub use sight::{
    GpuWindowFocus, SightAnswer, SightEngine, SightError, SightId, SightQueue, SightRequest,
    SightStatus, VoxelGpu,
};
pub use target::{BlockTarget, BlockTargeter, VoxelPosition};
pub use world::{ChunksChanged, Voxels};

/// The plugin: adds the resources, messages and systems of this crate (see the crate docs for
/// what runs when). Keeps a [`Voxels`] resource the app inserted before or after adding it;
/// without one, the world starts empty.
#[derive(Clone, Copy, Debug, Default)]
pub struct VoxcastPlugin;

/// The plugin's system sets, to order the app's systems against.
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VoxcastSystems {
    /// `Update`: applies [`MineBlock`] and [`PlaceBlock`] messages.
    Edit,
    /// `Update`, after `Edit`: writes every [`BlockTarget`].
    Target,
    /// `PostUpdate`: takes the world's changed chunks and writes [`ChunksChanged`].
    PublishChanges,
    /// `PostUpdate`, after `PublishChanges`: answers the [`SightQueue`] on the CPU, or
    /// submits it to the GPU.
    Sight,
    /// `PreUpdate`: answers the batch the last frame's `Sight` submitted to the GPU.
    CollectSight,
}

impl Plugin for VoxcastPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<Voxels>()
            .init_resource::<SightQueue>()
            .init_resource::<SightStatus>()
            .init_resource::<sight::GpuSightWorld>()
            .add_message::<MineBlock>()
            .add_message::<PlaceBlock>()
            .add_message::<BlockEdited>()
            .add_message::<ChunksChanged>()
            .add_message::<SightAnswer>()
            .configure_sets(
                Update,
                (VoxcastSystems::Edit, VoxcastSystems::Target).chain(),
            )
            .configure_sets(
                PostUpdate,
                (VoxcastSystems::PublishChanges, VoxcastSystems::Sight).chain(),
            )
            .add_systems(
                PreUpdate,
                sight::collect_gpu_answers.in_set(VoxcastSystems::CollectSight),
            )
            .add_systems(
                Update,
                (
                    edit::apply_block_edits.in_set(VoxcastSystems::Edit),
                    target::update_block_targets.in_set(VoxcastSystems::Target),
                ),
            )
            .add_systems(
                PostUpdate,
                (
                    world::publish_changed_chunks.in_set(VoxcastSystems::PublishChanges),
                    sight::answer_sight_requests.in_set(VoxcastSystems::Sight),
                ),
            );
    }
}
