//! Block placement and breaking against a raycast hit: what a game does with the block it
//! targets.

use crate::coords::WorldPos;
use crate::ray::VoxelRaycastHit;
use crate::world::{VoxelId, VoxelWorld};

/// Places `id` in the voxel in front of the hit face ([`VoxelRaycastHit::previous_pos`]) and
/// returns that position, or `None` (changing nothing) when `id` is [`VoxelId::AIR`] (placing
/// air is not placing a block: use [`break_block`]), the hit has no face (the ray started
/// inside the block), the position leaves the i128 world, or that voxel is not air. Creates the
/// chunk if it is not loaded.
pub fn place_block(world: &mut VoxelWorld, hit: &VoxelRaycastHit, id: VoxelId) -> Option<WorldPos> {
    if id.is_air() {
        return None;
    }
    let pos = hit.previous_pos()?;
    if world.get_voxel(&pos).is_some_and(|v| !v.is_air()) {
        return None;
    }
    world.set_voxel(pos, id);
    Some(pos)
}

/// Sets the hit voxel to air and returns the id it had, or `None` when its chunk is not loaded.
pub fn break_block(world: &mut VoxelWorld, hit: &VoxelRaycastHit) -> Option<VoxelId> {
    world.get_voxel(&hit.voxel_pos)?;
    Some(world.set_voxel(hit.voxel_pos, VoxelId::AIR))
}
