//! Block placement and breaking against a raycast hit: what a game does with the block it
//! targets. Both check the hit against the world first, so a stale hit (the block broken or
//! replaced since the ray was cast) changes nothing and says why.

use crate::coords::WorldPos;
use crate::ray::VoxelRaycastHit;
use crate::world::{VoxelId, VoxelWorld};

/// Why [`place_block`] or [`break_block`] changed nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// The hit voxel no longer holds the hit's id (`found`: what it holds, `None` when its
    /// chunk is not loaded): the hit is stale; cast again.
    #[error(
        "the block at {voxel} changed since it was hit: {expected:?} expected, {found:?} found"
    )]
    TargetChanged {
        /// The hit voxel.
        voxel: WorldPos,
        /// The id the hit reported there.
        expected: VoxelId,
        /// What the world holds there now.
        found: Option<VoxelId>,
    },
    /// The hit names air (only a hand-made hit, or one under a filter that stops air, can):
    /// there is no block to break or to build against.
    #[error("the hit voxel {0} is air: there is no block there")]
    AimedAtAir(WorldPos),
    /// [`place_block`] with [`VoxelId::AIR`]: to remove a block, break it.
    #[error("placing air is not placing a block: break the block instead")]
    PlaceAir,
    /// The hit has no face to build against: the ray started inside the block, the face
    /// normal is not a unit axis vector, or the voxel in front of the face lies outside the
    /// i128 world.
    #[error("the block at {0} has no face in front of which a block can go")]
    NoFace(WorldPos),
    /// The voxel in front of the face is not air.
    #[error("{voxel} already holds {found:?}")]
    Occupied {
        /// The voxel the block would have gone into.
        voxel: WorldPos,
        /// What it holds.
        found: VoxelId,
    },
}

/// Checks that the world still holds, in the hit voxel, the block the hit reports.
fn still_there(world: &VoxelWorld, hit: &VoxelRaycastHit) -> Result<(), EditError> {
    if hit.voxel_type.is_air() {
        return Err(EditError::AimedAtAir(hit.voxel_pos));
    }
    let found = world.get_voxel(&hit.voxel_pos);
    if found == Some(hit.voxel_type) {
        Ok(())
    } else {
        Err(EditError::TargetChanged {
            voxel: hit.voxel_pos,
            expected: hit.voxel_type,
            found,
        })
    }
}

/// Places `id` in the voxel in front of the hit face ([`VoxelRaycastHit::previous_pos`]) and
/// returns that position. Creates the chunk there if it is not loaded.
///
/// # Errors
/// Changing nothing: [`EditError::PlaceAir`] for [`VoxelId::AIR`];
/// [`EditError::AimedAtAir`] or [`EditError::TargetChanged`] when the hit voxel does not hold
/// the hit's block now (a stale hit would place a block floating in the air);
/// [`EditError::NoFace`] for a hit without a face (the ray started inside the block) or at the
/// edge of the i128 world; [`EditError::Occupied`] when the voxel in front is not air.
pub fn place_block(
    world: &mut VoxelWorld,
    hit: &VoxelRaycastHit,
    id: VoxelId,
) -> Result<WorldPos, EditError> {
    if id.is_air() {
        return Err(EditError::PlaceAir);
    }
    still_there(world, hit)?;
    let voxel = hit.previous_pos().ok_or(EditError::NoFace(hit.voxel_pos))?;
    match world.get_voxel(&voxel) {
        Some(found) if !found.is_air() => Err(EditError::Occupied { voxel, found }),
        _ => {
            world.set_voxel(voxel, id);
            Ok(voxel)
        }
    }
}

/// Sets the hit voxel to air and returns the id it had.
///
/// # Errors
/// Changing nothing: [`EditError::AimedAtAir`] for a hit that names air (there is nothing to
/// break), [`EditError::TargetChanged`] when the voxel does not hold the hit's id now (broken
/// or replaced since the hit, or its chunk unloaded).
pub fn break_block(world: &mut VoxelWorld, hit: &VoxelRaycastHit) -> Result<VoxelId, EditError> {
    still_there(world, hit)?;
    Ok(world.set_voxel(hit.voxel_pos, VoxelId::AIR))
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{IVec3, Vec2};

    const STONE: VoxelId = VoxelId(1);
    const PLANK: VoxelId = VoxelId(2);

    fn hit(voxel: WorldPos, face: IVec3, id: VoxelId) -> VoxelRaycastHit {
        VoxelRaycastHit {
            voxel_pos: voxel,
            face_normal: face,
            distance: 1.0,
            voxel_type: id,
            hit_uv: Vec2::ZERO,
        }
    }

    #[test]
    fn a_stale_hit_changes_nothing_and_says_why() {
        let mut world = VoxelWorld::new();
        let at = WorldPos::new(3, 0, 0);
        world.set_voxel(at, STONE);
        let h = hit(at, IVec3::NEG_X, STONE);
        assert_eq!(break_block(&mut world, &h), Ok(STONE));
        // The block is gone: placing against it, or breaking it again, is refused.
        let stale = EditError::TargetChanged {
            voxel: at,
            expected: STONE,
            found: Some(VoxelId::AIR),
        };
        assert_eq!(place_block(&mut world, &h, PLANK), Err(stale));
        assert_eq!(break_block(&mut world, &h), Err(stale));
        assert_eq!(world.get_voxel(&WorldPos::new(2, 0, 0)), Some(VoxelId::AIR));
        // Replaced by another block: also stale.
        world.set_voxel(at, PLANK);
        assert_eq!(
            break_block(&mut world, &h),
            Err(EditError::TargetChanged {
                voxel: at,
                expected: STONE,
                found: Some(PLANK),
            })
        );
        // Unloaded.
        let far = hit(WorldPos::new(1000, 0, 0), IVec3::X, STONE);
        assert!(matches!(
            break_block(&mut world, &far),
            Err(EditError::TargetChanged { found: None, .. })
        ));
    }

    #[test]
    fn air_faces_and_occupied_voxels_are_refused() {
        let mut world = VoxelWorld::new();
        let at = WorldPos::new(0, 0, 0);
        world.set_voxel(at, STONE);
        world.set_voxel(WorldPos::new(0, 1, 0), PLANK);
        let air = hit(WorldPos::new(5, 0, 0), IVec3::X, VoxelId::AIR);
        assert_eq!(
            break_block(&mut world, &air),
            Err(EditError::AimedAtAir(air.voxel_pos))
        );
        let up = hit(at, IVec3::Y, STONE);
        assert_eq!(
            place_block(&mut world, &up, VoxelId::AIR),
            Err(EditError::PlaceAir)
        );
        assert_eq!(
            place_block(&mut world, &up, PLANK),
            Err(EditError::Occupied {
                voxel: WorldPos::new(0, 1, 0),
                found: PLANK,
            })
        );
        let inside = hit(at, IVec3::ZERO, STONE);
        assert_eq!(
            place_block(&mut world, &inside, PLANK),
            Err(EditError::NoFace(at))
        );
        let side = hit(at, IVec3::NEG_Z, STONE);
        assert_eq!(
            place_block(&mut world, &side, PLANK),
            Ok(WorldPos::new(0, 0, -1))
        );
        assert_eq!(world.get_voxel(&WorldPos::new(0, 0, -1)), Some(PLANK));
        let edge = WorldPos::new(i128::MAX, 0, 0);
        world.set_voxel(edge, STONE);
        assert_eq!(
            place_block(&mut world, &hit(edge, IVec3::X, STONE), PLANK),
            Err(EditError::NoFace(edge))
        );
    }
}
