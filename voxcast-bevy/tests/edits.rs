//! Mining and placement through messages: applied in the order written with `break_block` /
//! `place_block` when they still fit the world, refused with the reason when not, each answer
//! naming its request, and published as changed chunks.

use voxcast_testkit::common;
mod support;

use bevy_app::App;
use bevy_ecs::message::MessageCursor;
use bevy_ecs::prelude::*;
use common::world_with;
use support::{app_with, check_targets, read, spawn_targeter, voxels};
use voxcast::glam::{IVec3, Vec2, Vec3};
use voxcast::{
    CHUNK_VOLUME, ChunkPos, LocalPos, VoxelId, VoxelRaycastHit, VoxelWorld, WorldPos, break_block,
    place_block,
};
use voxcast_bevy::{
    BlockEdit, BlockEdited, BlockTarget, BlockTargeter, ChunksChanged, EditAction, EditBlock,
    EditError, VoxelPosition, Voxels,
};
use voxcast_testkit::scene::{SplitMix64, Terrain};

const STONE: VoxelId = VoxelId(1);
const DIRT: VoxelId = VoxelId(2);
const PLANK: VoxelId = VoxelId(9);

fn hit(voxel_pos: WorldPos, face_normal: IVec3, voxel_type: VoxelId) -> VoxelRaycastHit {
    VoxelRaycastHit {
        voxel_pos,
        face_normal,
        distance: 2.0,
        voxel_type,
        hit_uv: Vec2::splat(0.5),
    }
}

/// Every message's result, in order.
fn results(
    app: &App,
    cursor: &mut MessageCursor<BlockEdited>,
) -> Vec<Result<BlockEdit, EditError>> {
    read(app, cursor).into_iter().map(|m| m.result).collect()
}

/// Each refusal, with the world left as it was.
#[test]
fn stale_or_impossible_edits_change_nothing_and_say_why() {
    let stone = WorldPos::new(4, 0, 0);
    let dirt = WorldPos::new(4, 1, 0);
    let edge = WorldPos::new(i128::MAX, 0, 0);
    let mut app = app_with(world_with(&[(stone, STONE), (dirt, DIRT), (edge, STONE)]));
    let player = app.world_mut().spawn_empty().id();
    let mut edited = app.world().resource::<Messages<BlockEdited>>().get_cursor();
    app.update();
    let before = voxels(&app).clone();
    let unloaded = WorldPos::new(-100, 0, 0);
    let cases: Vec<(EditBlock, EditError)> = vec![
        // The block to build against is not what the player saw.
        (
            EditBlock::place(player, hit(stone, IVec3::NEG_X, DIRT), PLANK),
            EditError::TargetChanged {
                voxel: stone,
                expected: DIRT,
                found: Some(STONE),
            },
        ),
        (
            EditBlock::place(player, hit(unloaded, IVec3::NEG_X, DIRT), PLANK),
            EditError::TargetChanged {
                voxel: unloaded,
                expected: DIRT,
                found: None,
            },
        ),
        (
            EditBlock::place(player, hit(stone, IVec3::NEG_X, STONE), VoxelId::AIR),
            EditError::PlaceAir,
        ),
        // The ray started inside the block: no face.
        (
            EditBlock::place(player, hit(stone, IVec3::ZERO, STONE), PLANK),
            EditError::NoFace(stone),
        ),
        // In front of the +x face of the block at the edge of the i128 world: outside it.
        (
            EditBlock::place(player, hit(edge, IVec3::X, STONE), PLANK),
            EditError::NoFace(edge),
        ),
        // Above the stone is the dirt.
        (
            EditBlock::place(player, hit(stone, IVec3::Y, STONE), PLANK),
            EditError::Occupied {
                voxel: dirt,
                found: DIRT,
            },
        ),
        (
            EditBlock::place(
                player,
                hit(WorldPos::new(9, 0, 0), IVec3::Y, VoxelId::AIR),
                PLANK,
            ),
            EditError::AimedAtAir(WorldPos::new(9, 0, 0)),
        ),
    ];
    // Mines first, written before the places: answered in that order.
    let mines = [
        (
            hit(dirt, IVec3::NEG_X, STONE),
            EditError::TargetChanged {
                voxel: dirt,
                expected: STONE,
                found: Some(DIRT),
            },
        ),
        (
            hit(unloaded, IVec3::NEG_X, STONE),
            EditError::TargetChanged {
                voxel: unloaded,
                expected: STONE,
                found: None,
            },
        ),
        (
            hit(dirt, IVec3::NEG_X, VoxelId::AIR),
            EditError::AimedAtAir(dirt),
        ),
    ];
    let mut want = Vec::new();
    for (aimed, e) in mines {
        app.world_mut()
            .write_message(EditBlock::mine(player, aimed));
        want.push(Err(e));
    }
    for (request, e) in &cases {
        app.world_mut().write_message(*request);
        want.push(Err(*e));
    }
    app.update();
    assert_eq!(results(&app, &mut edited), want);
    // Nothing changed: every loaded voxel as before, and no chunk published.
    assert_same_world(voxels(&app), &before);
    let mut published = app
        .world()
        .resource::<Messages<ChunksChanged>>()
        .get_cursor_current();
    app.update();
    assert!(read(&app, &mut published).is_empty());
}

/// Edits are applied in the order written, each against the world as the earlier ones left
/// it, and each answer names its request (the id `write` returned, and the request itself):
/// two players mine the same block in one frame with a placement written between the two
/// mines. The placement (against the block already mined) and the second mine find air.
#[test]
fn edits_are_applied_in_the_order_written_and_answer_their_request() {
    let block = WorldPos::new(3, 0, 0);
    let other = WorldPos::new(3, 0, 5);
    let mut app = app_with(world_with(&[(block, STONE), (other, DIRT)]));
    let (a, b) = (
        app.world_mut().spawn_empty().id(),
        app.world_mut().spawn_empty().id(),
    );
    let mut edited = app.world().resource::<Messages<BlockEdited>>().get_cursor();
    let aimed = hit(block, IVec3::NEG_X, STONE);
    let requests = [
        EditBlock::mine(a, aimed),
        EditBlock::place(b, aimed, PLANK),
        EditBlock::mine(b, aimed),
        EditBlock::place(a, hit(other, IVec3::Y, DIRT), PLANK),
    ];
    let ids: Vec<_> = requests
        .iter()
        .map(|r| app.world_mut().write_message(*r).expect("written"))
        .collect();
    app.update();
    let got = read(&app, &mut edited);
    let stale = Err(EditError::TargetChanged {
        voxel: block,
        expected: STONE,
        found: Some(VoxelId::AIR),
    });
    let results = [
        Ok(BlockEdit::Mined {
            voxel: block,
            id: STONE,
        }),
        stale,
        stale,
        Ok(BlockEdit::Placed {
            voxel: WorldPos::new(3, 1, 5),
            id: PLANK,
        }),
    ];
    let want: Vec<BlockEdited> = (0..4)
        .map(|i| BlockEdited {
            request: ids[i],
            edit: requests[i],
            result: results[i],
        })
        .collect();
    assert_eq!(got, want);
    // Matched to its request by id, whatever order a reader keeps them in.
    let placement = got.iter().find(|m| m.request == ids[1]).expect("answered");
    assert_eq!(placement.edit.action, EditAction::Place(PLANK));
    assert_eq!(placement.edit.entity, b);
    assert_eq!(voxels(&app).get_voxel(&block), Some(VoxelId::AIR));
    assert_eq!(
        voxels(&app).get_voxel(&WorldPos::new(2, 0, 0)),
        Some(VoxelId::AIR)
    );
}

/// Players on the terrain mine and build at what they target, frame after frame. The app's
/// world stays equal to a copy edited with the core crate's `break_block` / `place_block` at
/// the same targets, every target matches `voxel_raycast_with` on it, and `ChunksChanged`
/// names exactly the chunks of the edits.
#[test]
fn mining_and_building_at_targets_match_the_core_crate() {
    let terrain = Terrain {
        size: [64, 48, 64],
        seed: 3,
    };
    let world = terrain.build();
    let mut copy = world.clone();
    let mut app = app_with(world);
    let eyes = terrain.reach_rays(64, 9);
    let players: Vec<Entity> = eyes
        .iter()
        .take(12)
        .map(|eye| {
            // Down-facing aims, so that most players have a block in reach.
            let aim = Vec3::new(
                eye.direction.x,
                -eye.direction.y.abs() - 0.3,
                eye.direction.z,
            );
            spawn_targeter(
                &mut app,
                VoxelPosition::new(eye.origin, eye.sub_offset),
                aim,
                BlockTargeter::default(),
            )
        })
        .collect();
    let mut edited = app.world().resource::<Messages<BlockEdited>>().get_cursor();
    let mut published = app
        .world()
        .resource::<Messages<ChunksChanged>>()
        .get_cursor();
    let mut rng = SplitMix64::new(77);
    app.update();
    read(&app, &mut published);
    let (mut mined, mut placed) = (0, 0);
    for _ in 0..10 {
        check_targets(&mut app);
        let mut want = Vec::new();
        let mut chunks = Vec::new();
        // Mines and places mixed, applied in the order written: the copy is edited in the
        // same order with the core crate's calls.
        let mut requests = Vec::new();
        for &player in &players {
            let Some(&aimed) = app.world().get::<BlockTarget>(player).and_then(|t| t.hit()) else {
                continue;
            };
            requests.push(if rng.below(2) == 0 {
                EditBlock::mine(player, aimed)
            } else {
                EditBlock::place(player, aimed, PLANK)
            });
        }
        for r in &requests {
            let result = match r.action {
                EditAction::Mine => break_block(&mut copy, &r.aimed).map(|id| {
                    chunks.push(r.aimed.voxel_pos.chunk());
                    BlockEdit::Mined {
                        voxel: r.aimed.voxel_pos,
                        id,
                    }
                }),
                EditAction::Place(id) => place_block(&mut copy, &r.aimed, id).map(|voxel| {
                    chunks.push(voxel.chunk());
                    BlockEdit::Placed { voxel, id }
                }),
            };
            let request = app.world_mut().write_message(*r).expect("written");
            want.push(BlockEdited {
                request,
                edit: *r,
                result,
            });
        }
        app.update();
        let got = read(&app, &mut edited);
        assert_eq!(got, want);
        mined += got
            .iter()
            .filter(|m| matches!(m.result, Ok(BlockEdit::Mined { .. })))
            .count();
        placed += got
            .iter()
            .filter(|m| matches!(m.result, Ok(BlockEdit::Placed { .. })))
            .count();
        chunks.sort_unstable();
        chunks.dedup();
        let changes = read(&app, &mut published);
        if chunks.is_empty() {
            assert!(changes.is_empty(), "{changes:?}");
        } else {
            assert_eq!(
                changes,
                vec![ChunksChanged {
                    chunks,
                    replaced: false
                }]
            );
        }
        assert_same_world(voxels(&app), &copy);
    }
    assert!(
        mined >= 10 && placed >= 10,
        "{mined} mined, {placed} placed"
    );
}

/// Whether two worlds have the same chunks loaded, holding the same ids voxel by voxel.
#[track_caller]
fn assert_same_world(got: &VoxelWorld, want: &VoxelWorld) {
    assert_eq!(got.chunk_count(), want.chunk_count());
    for (pos, chunk) in want.chunks() {
        let other = got
            .chunk(pos)
            .unwrap_or_else(|| panic!("chunk {pos:?} not loaded"));
        for i in 0..CHUNK_VOLUME {
            let local = LocalPos::new((i & 31) as u8, (i >> 5 & 31) as u8, (i >> 10) as u8);
            assert_eq!(
                other.get(local),
                chunk.get(local),
                "chunk {pos:?}, voxel {local:?}"
            );
        }
    }
}

/// A block placed across a chunk border into an unloaded chunk loads that chunk, and the
/// message names it; a new `Voxels` resource is published as `replaced`.
#[test]
fn placing_into_unloaded_space_and_replacing_the_world() {
    let block = WorldPos::new(31, 0, 0);
    let mut app = app_with(world_with(&[(block, STONE)]));
    let player = app.world_mut().spawn_empty().id();
    let mut published = app
        .world()
        .resource::<Messages<ChunksChanged>>()
        .get_cursor();
    app.update();
    assert_eq!(
        read(&app, &mut published),
        vec![ChunksChanged {
            chunks: vec![],
            replaced: true
        }]
    );
    app.world_mut()
        .write_message(EditBlock::place(player, hit(block, IVec3::X, STONE), PLANK));
    app.update();
    assert_eq!(
        voxels(&app).get_voxel(&WorldPos::new(32, 0, 0)),
        Some(PLANK)
    );
    assert_eq!(
        read(&app, &mut published),
        vec![ChunksChanged {
            chunks: vec![ChunkPos::new(1, 0, 0)],
            replaced: false
        }]
    );

    // A world edited before it became the resource, with tracking on: its list is published
    // with the replacement.
    let mut next = VoxelWorld::new();
    next.set_track_changes(true);
    next.set_voxel(WorldPos::new(-1, 0, 0), DIRT);
    app.insert_resource(Voxels::new(next));
    app.update();
    assert_eq!(
        read(&app, &mut published),
        vec![ChunksChanged {
            chunks: vec![ChunkPos::new(-1, 0, 0)],
            replaced: true
        }]
    );
    assert_eq!(voxels(&app).get_voxel(&WorldPos::new(32, 0, 0)), None);
}
