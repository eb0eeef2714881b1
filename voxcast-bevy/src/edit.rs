//! Mining and placement as messages, checked against the world when they are applied.

use bevy_ecs::prelude::*;
use voxcast::{VoxelId, VoxelRaycastHit, WorldPos};

use crate::Voxels;

/// Break the block an entity aimed at: write it with a `MessageWriter<MineBlock>`.
///
/// `aimed` is the hit the entity saw (from its [`BlockTarget`](crate::BlockTarget)). When
/// the message is applied, the block is broken only if the world still holds `aimed`'s id
/// in `aimed`'s voxel; otherwise nothing changes (another player broke it first, say). Either
/// way a [`BlockEdited`] message reports what happened.
#[derive(Message, Clone, Copy, Debug, PartialEq)]
pub struct MineBlock {
    /// Who mines: not checked, only echoed in [`BlockEdited`].
    pub entity: Entity,
    /// The block as the entity saw it.
    pub aimed: VoxelRaycastHit,
}

/// Place a block against the face an entity aimed at: write it with a
/// `MessageWriter<PlaceBlock>`.
///
/// When the message is applied, the block is placed in the voxel in front of `aimed`'s face
/// ([`VoxelRaycastHit::previous_pos`]) only if the world still holds `aimed`'s id in
/// `aimed`'s voxel (the block to build against is still there) and the voxel in front is
/// air or unloaded (an unloaded chunk is loaded, as air, to hold it); otherwise nothing
/// changes. A [`BlockEdited`] message reports what happened. Whether the new block may
/// overlap the placing entity is the game's rule, not checked here.
#[derive(Message, Clone, Copy, Debug, PartialEq)]
pub struct PlaceBlock {
    /// Who places: not checked, only echoed in [`BlockEdited`].
    pub entity: Entity,
    /// The block as the entity saw it, whose hit face the new block goes against.
    pub aimed: VoxelRaycastHit,
    /// The block to place; not [`VoxelId::AIR`].
    pub id: VoxelId,
}

/// What a [`MineBlock`] or [`PlaceBlock`] did, one message per request, in the order they
/// were applied. Written by [`VoxcastSystems::Edit`](crate::VoxcastSystems::Edit).
#[derive(Message, Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockEdited {
    /// The request's entity.
    pub entity: Entity,
    /// The change made, or why none was.
    pub result: Result<BlockEdit, EditError>,
}

/// A change [`VoxcastSystems::Edit`](crate::VoxcastSystems::Edit) made to the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockEdit {
    /// The block at `voxel`, of id `id`, is now air.
    Mined {
        /// The voxel that was broken.
        voxel: WorldPos,
        /// The id it had.
        id: VoxelId,
    },
    /// A block of id `id` now fills `voxel`.
    Placed {
        /// The voxel the block went into.
        voxel: WorldPos,
        /// The id placed.
        id: VoxelId,
    },
}

/// Why a [`MineBlock`] or [`PlaceBlock`] changed nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// The aimed voxel no longer holds the aimed id (`found`: what it holds, `None` when its
    /// chunk is unloaded).
    #[error(
        "the block at {voxel:?} changed since it was aimed at: {expected:?} expected, {found:?} found"
    )]
    TargetChanged {
        /// The aimed voxel.
        voxel: WorldPos,
        /// The id the entity saw there.
        expected: VoxelId,
        /// What the world holds there now.
        found: Option<VoxelId>,
    },
    /// The aimed hit names air (only a hand-made hit can): there is no block to mine or to
    /// build against.
    #[error("the aimed voxel {0:?} is air: there is no block there")]
    AimedAtAir(WorldPos),
    /// [`PlaceBlock`] with [`VoxelId::AIR`]: to remove a block, mine it.
    #[error("placing air is not placing a block: use MineBlock")]
    PlaceAir,
    /// The aimed hit has no face to build against: the ray started inside the block, or the
    /// voxel in front of the face lies outside the i128 world.
    #[error("the aimed block at {0:?} has no face in front of which a block can go")]
    NoFace(WorldPos),
    /// The voxel in front of the face is not air.
    #[error("{voxel:?} already holds {found:?}")]
    Occupied {
        /// The voxel the block would have gone into.
        voxel: WorldPos,
        /// What it holds.
        found: VoxelId,
    },
}

/// Checks that the world still holds what the entity aimed at.
fn still_there(voxels: &Voxels, aimed: &VoxelRaycastHit) -> Result<(), EditError> {
    if aimed.voxel_type.is_air() {
        return Err(EditError::AimedAtAir(aimed.voxel_pos));
    }
    let found = voxels.get_voxel(&aimed.voxel_pos);
    if found == Some(aimed.voxel_type) {
        Ok(())
    } else {
        Err(EditError::TargetChanged {
            voxel: aimed.voxel_pos,
            expected: aimed.voxel_type,
            found,
        })
    }
}

fn mine(voxels: &mut Voxels, request: &MineBlock) -> Result<BlockEdit, EditError> {
    still_there(voxels, &request.aimed)?;
    let voxel = request.aimed.voxel_pos;
    // The voxel's chunk is loaded (it holds the aimed id), so `break_block` breaks it.
    let id = voxels
        .break_block(&request.aimed)
        .ok_or(EditError::TargetChanged {
            voxel,
            expected: request.aimed.voxel_type,
            found: None,
        })?;
    Ok(BlockEdit::Mined { voxel, id })
}

fn place(voxels: &mut Voxels, request: &PlaceBlock) -> Result<BlockEdit, EditError> {
    still_there(voxels, &request.aimed)?;
    if let Some(voxel) = voxels.place_block(&request.aimed, request.id) {
        return Ok(BlockEdit::Placed {
            voxel,
            id: request.id,
        });
    }
    // `place_block` refused: say why.
    if request.id.is_air() {
        return Err(EditError::PlaceAir);
    }
    let voxel = request
        .aimed
        .previous_pos()
        .ok_or(EditError::NoFace(request.aimed.voxel_pos))?;
    let found = voxels.get_voxel(&voxel).unwrap_or_default();
    Err(EditError::Occupied { voxel, found })
}

/// Applies this frame's [`MineBlock`] and then [`PlaceBlock`] messages, each checked against
/// the world as the ones before it left it, and reports each in a [`BlockEdited`].
pub(crate) fn apply_block_edits(
    mut voxels: ResMut<Voxels>,
    mut mining: MessageReader<MineBlock>,
    mut placing: MessageReader<PlaceBlock>,
    mut edited: MessageWriter<BlockEdited>,
) {
    for request in mining.read() {
        let result = mine(&mut voxels, request);
        edited.write(BlockEdited {
            entity: request.entity,
            result,
        });
    }
    for request in placing.read() {
        let result = place(&mut voxels, request);
        edited.write(BlockEdited {
            entity: request.entity,
            result,
        });
    }
}
