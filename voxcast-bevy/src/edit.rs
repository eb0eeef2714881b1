//! Mining and placement as messages, checked against the world when they are applied, in the
//! order they were written.

use bevy_ecs::message::MessageId;
use bevy_ecs::prelude::*;
use voxcast::{EditError, VoxelId, VoxelRaycastHit, WorldPos};

use crate::Voxels;

/// What an [`EditBlock`] asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EditAction {
    /// Break the aimed block (it becomes air).
    Mine,
    /// Place a block of this id against the aimed face, in the voxel in front of it.
    Place(VoxelId),
}

/// Mine or place a block where an entity aimed: write it with a `MessageWriter<EditBlock>`
/// (or `World::write_message`), and keep the [`MessageId`] that `write` returns to find its
/// answer: the [`BlockEdited`] with that `request`.
///
/// `aimed` is the hit the entity saw (from its [`BlockTarget`](crate::BlockTarget)). When the
/// message is applied ([`VoxcastSystems::Edit`](crate::VoxcastSystems::Edit)), with the edits
/// written before it applied first, [`voxcast::break_block`] or [`voxcast::place_block`] checks
/// it against the world as it is then: a block broken or replaced since it was aimed at (by
/// another player, or by an earlier edit of the same frame) changes nothing and is answered
/// with [`EditError::TargetChanged`]. A placed block goes into the voxel in front of `aimed`'s
/// face ([`VoxelRaycastHit::previous_pos`]) when that voxel is air or unloaded (an unloaded
/// chunk is loaded, as air, to hold it). Whether the new block may overlap the placing entity
/// is the game's rule, not checked here.
#[derive(Message, Clone, Copy, Debug, PartialEq)]
pub struct EditBlock {
    /// Who edits: not checked, only echoed in [`BlockEdited`].
    pub entity: Entity,
    /// The block as the entity saw it.
    pub aimed: VoxelRaycastHit,
    /// Mine it, or place a block against it.
    pub action: EditAction,
}

impl EditBlock {
    /// Mine the block `entity` aimed at.
    #[must_use]
    pub const fn mine(entity: Entity, aimed: VoxelRaycastHit) -> Self {
        Self {
            entity,
            aimed,
            action: EditAction::Mine,
        }
    }

    /// Place a block of `id` against the face `entity` aimed at.
    #[must_use]
    pub const fn place(entity: Entity, aimed: VoxelRaycastHit, id: VoxelId) -> Self {
        Self {
            entity,
            aimed,
            action: EditAction::Place(id),
        }
    }
}

/// What an [`EditBlock`] did: one message per request, in the order they were written and
/// applied. Written by [`VoxcastSystems::Edit`](crate::VoxcastSystems::Edit).
#[derive(Message, Clone, Copy, Debug, PartialEq)]
pub struct BlockEdited {
    /// The request's id, as `MessageWriter::write` returned it.
    pub request: MessageId<EditBlock>,
    /// The request itself (its entity, the aimed hit and the action).
    pub edit: EditBlock,
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

/// Applies one request to the world.
fn apply(voxels: &mut Voxels, edit: &EditBlock) -> Result<BlockEdit, EditError> {
    match edit.action {
        EditAction::Mine => voxels.break_block(&edit.aimed).map(|id| BlockEdit::Mined {
            voxel: edit.aimed.voxel_pos,
            id,
        }),
        EditAction::Place(id) => voxels
            .place_block(&edit.aimed, id)
            .map(|voxel| BlockEdit::Placed { voxel, id }),
    }
}

/// Applies the [`EditBlock`] messages written since the last run, in the order written, each
/// checked against the world as the ones before it left it, and answers each in a
/// [`BlockEdited`].
pub(crate) fn apply_block_edits(
    mut voxels: ResMut<Voxels>,
    mut requests: MessageReader<EditBlock>,
    mut edited: MessageWriter<BlockEdited>,
) {
    for (edit, request) in requests.read_with_id() {
        let result = apply(&mut voxels, edit);
        edited.write(BlockEdited {
            request,
            edit: *edit,
            result,
        });
    }
}
