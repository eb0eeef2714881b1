//! The world as a resource, and the one place its list of changed chunks is taken from.

use bevy_ecs::prelude::*;
use voxcast::{
    Chunk, ChunkPos, EditError, VoxelId, VoxelRaycastHit, VoxelWorld, WorldError, WorldPos,
    break_block, place_block,
};

#[cfg(feature = "gpu")]
use crate::sight::GpuSightWorld;

/// The game's [`VoxelWorld`] as a Bevy resource: the world itself, moved in, never copied.
///
/// Reading goes through `Deref` (every query of the core crate takes `&VoxelWorld`:
/// `voxel_raycast_with(&ray, &voxels, &opts)`). Editing goes through the methods below, which
/// forward to the world's own. There is no `DerefMut`, on purpose: the world keeps its list
/// of changed chunks ([`VoxelWorld::set_track_changes`] is on from [`Voxels::new`]), and
/// [`VoxcastPlugin`](crate::VoxcastPlugin) is its only taker. It takes the list once a frame
/// (in [`VoxcastSystems::PublishChanges`](crate::VoxcastSystems::PublishChanges)), brings the
/// GPU copy of the world up to date with it when there is one, and publishes it as a
/// [`ChunksChanged`] message for everyone else (a mesher, a network sync). So no consumer can
/// take the list away from another, and none can turn tracking off.
///
/// Replace the whole world by inserting a new `Voxels` resource: the next [`ChunksChanged`]
/// says `replaced`, and the GPU copy is uploaded again.
#[derive(Resource, Debug)]
pub struct Voxels {
    world: VoxelWorld,
    /// Not yet published: the next [`ChunksChanged`] says `replaced`. A flag of the value
    /// rather than Bevy's "added" tick, which a resource inserted over another keeps.
    new: bool,
}

impl Default for Voxels {
    /// An empty world (nothing loaded).
    fn default() -> Self {
        Self::new(VoxelWorld::new())
    }
}

impl From<VoxelWorld> for Voxels {
    fn from(world: VoxelWorld) -> Self {
        Self::new(world)
    }
}

impl std::ops::Deref for Voxels {
    type Target = VoxelWorld;

    fn deref(&self) -> &VoxelWorld {
        &self.world
    }
}

impl Voxels {
    /// Takes `world` over and turns its change tracking on. A world that tracks already keeps
    /// its list (those chunks are published too); one that did not starts with an empty list,
    /// which is enough: a new resource is published as a whole new world (`replaced`).
    #[must_use]
    pub fn new(mut world: VoxelWorld) -> Self {
        if !world.tracks_changes() {
            world.set_track_changes(true);
        }
        Self { world, new: true }
    }

    /// Gives the world back (with tracking on and any changes not yet published in its list).
    #[must_use]
    pub fn into_inner(self) -> VoxelWorld {
        self.world
    }

    /// [`VoxelWorld::set_voxel`]: sets the voxel at `pos` to `id`, loading its chunk (as air)
    /// if needed, and returns the id it had.
    pub fn set_voxel(&mut self, pos: WorldPos, id: VoxelId) -> VoxelId {
        self.world.set_voxel(pos, id)
    }

    /// [`VoxelWorld::insert_chunk`]: loads `chunk` at `pos` and returns the chunk it replaces.
    ///
    /// # Errors
    /// [`WorldError::ChunkOutsideWorld`] (nothing changes) when `pos` names no chunk of the
    /// i128 world.
    pub fn insert_chunk(
        &mut self,
        pos: ChunkPos,
        chunk: Chunk,
    ) -> Result<Option<Chunk>, WorldError> {
        self.world.insert_chunk(pos, chunk)
    }

    /// [`VoxelWorld::remove_chunk`]: unloads the chunk at `pos` and returns it (`None` when it
    /// was not loaded).
    pub fn remove_chunk(&mut self, pos: ChunkPos) -> Option<Chunk> {
        self.world.remove_chunk(pos)
    }

    /// [`voxcast::break_block`]: sets the hit voxel to air and returns the id it had.
    ///
    /// # Errors
    /// As [`voxcast::break_block`]: a hit the world no longer matches changes nothing.
    pub fn break_block(&mut self, hit: &VoxelRaycastHit) -> Result<VoxelId, EditError> {
        break_block(&mut self.world, hit)
    }

    /// [`voxcast::place_block`]: puts `id` in the voxel in front of the hit face and returns
    /// where.
    ///
    /// # Errors
    /// As [`voxcast::place_block`]: air, a stale hit, a hit without a face, the edge of the
    /// i128 world or a voxel there that is not air change nothing.
    pub fn place_block(
        &mut self,
        hit: &VoxelRaycastHit,
        id: VoxelId,
    ) -> Result<WorldPos, EditError> {
        place_block(&mut self.world, hit, id)
    }

    /// [`VoxelWorld::set_skip_empty_bricks`] (a speed setting; answers do not change).
    pub fn set_skip_empty_bricks(&mut self, skip: Option<bool>) {
        self.world.set_skip_empty_bricks(skip);
    }

    /// [`VoxelWorld::shrink_to_fit`] (memory only; answers do not change).
    pub fn shrink_to_fit(&mut self) {
        self.world.shrink_to_fit();
    }
}

/// The chunks of [`Voxels`] that changed since the last such message: loaded, edited or
/// unloaded (see [`VoxelWorld::take_changed_chunks`]), in ascending order, with no repeats.
/// Written once a frame, in `PostUpdate`, when something changed; read it with a
/// `MessageReader<ChunksChanged>` (it can be read until the end of the next frame).
#[derive(Message, Clone, Debug, PartialEq, Eq)]
pub struct ChunksChanged {
    /// The changed chunks. Some may no longer be loaded.
    pub chunks: Vec<ChunkPos>,
    /// The [`Voxels`] resource was inserted (or replaced) since the last message: treat every
    /// chunk as changed. `chunks` then lists only the changes made since the insertion.
    pub replaced: bool,
}

/// Takes the world's list of changed chunks (the only system that does), hands it to the GPU
/// copy of the world (with the `gpu` feature) and publishes it as [`ChunksChanged`].
pub(crate) fn publish_changed_chunks(
    mut voxels: ResMut<Voxels>,
    #[cfg(feature = "gpu")] mut gpu_world: ResMut<GpuSightWorld>,
    mut published: MessageWriter<ChunksChanged>,
) {
    // Through `bypass_change_detection`, so that a frame without edits does not mark the
    // resource changed.
    let voxels = voxels.bypass_change_detection();
    let replaced = std::mem::take(&mut voxels.new);
    let world = &mut voxels.world;
    let chunks = if world.changed_chunk_count() > 0 {
        world.take_changed_chunks()
    } else {
        Vec::new()
    };
    #[cfg(feature = "gpu")]
    if replaced {
        gpu_world.reset();
    } else {
        gpu_world.chunks_changed(&chunks);
    }
    if replaced || !chunks.is_empty() {
        published.write(ChunksChanged { chunks, replaced });
    }
}
