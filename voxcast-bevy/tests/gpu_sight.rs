//! AI sight on the GPU through the `VoxelGpu` resource: every answer checked against
//! `line_of_sight` on the same world, through edits by messages, edits the upload cannot hold,
//! a replaced world and raycaster, and a failing upload (answered on the CPU). With
//! `VOXCAST_REQUIRE_GPU=1` a missing adapter fails these tests; without it they skip loudly.
//! Only with the `gpu` feature.

#![cfg(feature = "gpu")]

use voxcast_testkit::common;
mod support;

use bevy_app::{App, PostUpdate};
use bevy_ecs::message::MessageCursor;
use bevy_ecs::prelude::*;
use support::{app_with, check_answers, read, voxels};
use voxcast::glam::{IVec3, Vec3};
use voxcast::gpu::GpuError;
use voxcast::{LineOfSight, VoxelId, VoxelWorld, WorldPos};
use voxcast_bevy::{
    EditBlock, GpuWindowFocus, SightAnswer, SightEngine, SightQueue, SightStatus, VoxcastSystems,
    VoxelGpu, VoxelPosition, Voxels,
};

const STONE: VoxelId = VoxelId(1);
const PLANK: VoxelId = VoxelId(9);

/// An app with the plugin, `world`, and a raycaster of its own; `None` where GPU tests skip.
fn gpu_app(world: VoxelWorld) -> Option<App> {
    let gpu = voxcast_testkit::gpu::own_gpu()?;
    let mut app = app_with(world);
    app.insert_resource(VoxelGpu::new(gpu));
    Some(app)
}

fn eye(x: i128, y: i128, z: i128) -> VoxelPosition {
    VoxelPosition::new(WorldPos::new(x, y, z), Vec3::new(0.5, 0.6, 0.5))
}

/// Answers the queued requests: the CPU in the frame they were queued in, the GPU at the start
/// of the next (none before); checks each answer against the CPU reference on the world as it
/// is then, and that `engine` answered. Returns the answers.
#[track_caller]
fn answer(
    app: &mut App,
    cursor: &mut MessageCursor<SightAnswer>,
    engine: SightEngine,
) -> Vec<SightAnswer> {
    let queued = app.world().resource::<SightQueue>().len();
    app.update();
    let mut got = read(app, cursor);
    if engine == SightEngine::Gpu {
        assert!(
            got.is_empty(),
            "submitted this frame, answered in the next: {got:?}"
        );
        app.update();
        got = read(app, cursor);
    }
    assert_eq!(got.len(), queued);
    let world = voxels(app).clone();
    let opts = app.world().resource::<SightQueue>().options.clone();
    check_answers(app, &world, &got, &opts);
    let status = app.world().resource::<SightStatus>().clone();
    assert_eq!(status.engine, Some(engine), "{status:?}");
    if engine == SightEngine::Gpu {
        assert_eq!(status.gpu_error, None);
    }
    got
}

/// NPCs on terrain with pillars, segments and pairs over frames of mining and building by
/// message, plus a block set outside the uploaded window (the upload is rebuilt): the GPU's
/// answers equal the CPU reference's on each frame's world.
#[test]
fn gpu_sight_matches_line_of_sight_through_edits() {
    let (terrain, world) = support::pillared_terrain(4);
    let Some(mut app) = gpu_app(world) else {
        return;
    };
    let npcs: Vec<Entity> = terrain
        .reach_rays(40, 8)
        .iter()
        .map(|e| {
            app.world_mut()
                .spawn(VoxelPosition::new(e.origin, e.sub_offset))
                .id()
        })
        .collect();
    let segments = terrain.sight_segments(240, 64.0, 9);
    let mut cursor = app.world().resource::<Messages<SightAnswer>>().get_cursor();
    let (mut total, mut blocked) = (0, 0);
    for frame in 0..6 {
        {
            let mut queue = app.world_mut().resource_mut::<SightQueue>();
            for i in 0..40 {
                queue.push_entities(npcs[i], npcs[(i * 11 + frame + 1) % npcs.len()]);
            }
            support::queue_segments(&mut queue, segments.iter().skip(frame * 40).take(40));
        }
        let got = answer(&mut app, &mut cursor, SightEngine::Gpu);
        total += got.len();
        let hits: Vec<_> = got
            .iter()
            .filter_map(|a| match a.result {
                Ok(LineOfSight::Blocked(hit)) => Some(hit),
                _ => None,
            })
            .collect();
        blocked += hits.len();
        // Break a few blockers and build against others, by message.
        for hit in hits.iter().take(5) {
            app.world_mut()
                .write_message(EditBlock::mine(npcs[0], *hit));
        }
        for hit in hits
            .iter()
            .skip(5)
            .take(5)
            .filter(|h| h.face_normal != IVec3::ZERO)
        {
            app.world_mut()
                .write_message(EditBlock::place(npcs[1], *hit, PLANK));
        }
        if frame == 3 {
            // Outside the loaded bounds the upload was made for: the next batch rebuilds it.
            app.world_mut()
                .resource_mut::<Voxels>()
                .set_voxel(WorldPos::new(200, 10, 40), STONE);
        }
    }
    assert!(
        blocked >= total / 10 && total - blocked >= total / 10,
        "{blocked} of {total} blocked"
    );
}

/// `VoxelGpu::with_window`: a box of 3 × 3 × 3 chunks on the GPU follows the focus entity as
/// it walks across the terrain while blocks are mined and set, also outside the box; segments
/// the box does not hold are answered on the CPU in the same batch, and every answer is the
/// CPU reference's, in the order of the requests.
#[test]
fn a_gpu_window_follows_the_focus() {
    let (terrain, world) = support::pillared_terrain(5);
    let Some(gpu) = voxcast_testkit::gpu::own_gpu() else {
        return;
    };
    let mut app = app_with(world);
    app.insert_resource(VoxelGpu::with_window(gpu, [1, 1, 1]));
    let player = app
        .world_mut()
        .spawn((GpuWindowFocus, eye(10, 40, 10)))
        .id();
    let segments = terrain.sight_segments(400, 64.0, 10);
    let mut cursor = app.world().resource::<Messages<SightAnswer>>().get_cursor();
    let (mut outside, mut total) = (0, 0);
    for frame in 0..8_usize {
        // The player walks diagonally across the terrain, a chunk every frame or two.
        let step = (frame * 20) as i128;
        *app.world_mut()
            .get_mut::<VoxelPosition>(player)
            .expect("the player") = eye(10 + step, 40, 10 + step / 2);
        {
            let mut queue = app.world_mut().resource_mut::<SightQueue>();
            support::queue_segments(&mut queue, segments.iter().skip(frame * 50).take(50));
        }
        let got = answer(&mut app, &mut cursor, SightEngine::Gpu);
        let ids: Vec<u64> = got.iter().map(|a| a.id.0).collect();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "answers in order: {ids:?}"
        );
        let status = app.world().resource::<SightStatus>().clone();
        outside += status.outside_window;
        let (lo, hi) = status.window.expect("a window");
        let at = WorldPos::new(10 + step, 40, 10 + step / 2).chunk();
        assert!(
            (0..3).all(|a| lo.axis(a) + 1 == at.axis(a) && at.axis(a) + 1 == hi.axis(a)),
            "frame {frame}: the window {lo:?}..={hi:?} is not centered on the player's chunk {at:?}"
        );
        total += got.len();
        // Edits by message near the player, and a block set far outside the box.
        if let Some(hit) = got.iter().find_map(|a| match a.result {
            Ok(LineOfSight::Blocked(hit)) => Some(hit),
            _ => None,
        }) {
            app.world_mut().write_message(EditBlock::mine(player, hit));
        }
        app.world_mut()
            .resource_mut::<Voxels>()
            .set_voxel(WorldPos::new(300 + step, 10, 40), STONE);
    }
    assert!(
        outside > 0 && outside < total,
        "{outside} of {total} segments answered outside the window"
    );
}

/// A segment blocked by one block: mined by message, the next frame's GPU answer is clear;
/// a block set in `PostUpdate` after the changes were published is not on the GPU yet, so
/// that frame is answered on the CPU (blocked), and the next one on the GPU (still blocked).
#[test]
fn the_gpu_sees_every_edit() {
    let wall = WorldPos::new(5, 0, 0);
    let Some(mut app) = gpu_app(common::world_with(&[
        (wall, STONE),
        (WorldPos::new(0, -1, 0), STONE),
    ])) else {
        return;
    };
    let (from, to) = (eye(0, 0, 0), eye(9, 0, 0));
    let mut cursor = app.world().resource::<Messages<SightAnswer>>().get_cursor();
    let ask = |app: &mut App| {
        app.world_mut()
            .resource_mut::<SightQueue>()
            .push_segment(from, to);
    };
    ask(&mut app);
    let got = answer(&mut app, &mut cursor, SightEngine::Gpu);
    let Ok(LineOfSight::Blocked(hit)) = got[0].result else {
        panic!("the wall blocks: {got:?}");
    };
    assert_eq!(hit.voxel_pos, wall);

    let player = app.world_mut().spawn_empty().id();
    app.world_mut().write_message(EditBlock::mine(player, hit));
    ask(&mut app);
    let got = answer(&mut app, &mut cursor, SightEngine::Gpu);
    assert_eq!(got[0].result, Ok(LineOfSight::Clear));

    #[derive(Resource)]
    struct Late(bool);
    fn late_edit(mut late: ResMut<Late>, mut voxels: ResMut<Voxels>) {
        if std::mem::take(&mut late.0) {
            voxels.set_voxel(WorldPos::new(7, 0, 0), STONE);
        }
    }
    app.insert_resource(Late(true)).add_systems(
        PostUpdate,
        late_edit
            .after(VoxcastSystems::PublishChanges)
            .before(VoxcastSystems::Sight),
    );
    ask(&mut app);
    let got = answer(&mut app, &mut cursor, SightEngine::Cpu);
    assert!(
        matches!(got[0].result, Ok(LineOfSight::Blocked(h)) if h.voxel_pos == WorldPos::new(7, 0, 0))
    );
    ask(&mut app);
    let got = answer(&mut app, &mut cursor, SightEngine::Gpu);
    assert!(
        matches!(got[0].result, Ok(LineOfSight::Blocked(h)) if h.voxel_pos == WorldPos::new(7, 0, 0))
    );
}

/// A new world, and a new raycaster, are uploaded whole.
#[test]
fn a_replaced_world_or_raycaster_is_uploaded_again() {
    let Some(mut app) = gpu_app(common::world_with(&[(WorldPos::new(5, 0, 0), STONE)])) else {
        return;
    };
    let (from, to) = (eye(0, 0, 0), eye(9, 0, 0));
    let mut cursor = app.world().resource::<Messages<SightAnswer>>().get_cursor();
    let mut blocker = |app: &mut App, engine| {
        app.world_mut()
            .resource_mut::<SightQueue>()
            .push_segment(from, to);
        match answer(app, &mut cursor, engine)[0].result {
            Ok(LineOfSight::Blocked(h)) => Some(h.voxel_pos.x),
            _ => None,
        }
    };
    assert_eq!(blocker(&mut app, SightEngine::Gpu), Some(5));
    app.insert_resource(Voxels::new(common::world_with(&[(
        WorldPos::new(3, 0, 0),
        STONE,
    )])));
    assert_eq!(blocker(&mut app, SightEngine::Gpu), Some(3));
    let gpu = voxcast_testkit::gpu::own_gpu().expect("a GPU, as above");
    app.insert_resource(VoxelGpu::new(gpu));
    assert_eq!(blocker(&mut app, SightEngine::Gpu), Some(3));
    app.world_mut()
        .resource_mut::<Voxels>()
        .set_voxel(WorldPos::new(2, 0, 0), STONE);
    assert_eq!(blocker(&mut app, SightEngine::Gpu), Some(2));
}

/// A world the GPU cannot hold (two chunks 2^100 voxels apart make a window too wide): the
/// error is reported and the CPU answers, frame after frame; once the far chunk is gone the
/// GPU answers again.
#[test]
fn a_failing_upload_is_answered_on_the_cpu() {
    let far = WorldPos::new(1 << 100, 0, 0);
    let Some(mut app) = gpu_app(common::world_with(&[
        (WorldPos::new(5, 0, 0), STONE),
        (far, STONE),
    ])) else {
        return;
    };
    let (from, to) = (eye(0, 0, 0), eye(9, 0, 0));
    let mut cursor = app.world().resource::<Messages<SightAnswer>>().get_cursor();
    for _ in 0..2 {
        app.world_mut()
            .resource_mut::<SightQueue>()
            .push_segment(from, to);
        let got = answer(&mut app, &mut cursor, SightEngine::Cpu);
        assert!(matches!(got[0].result, Ok(LineOfSight::Blocked(_))));
        let status = app.world().resource::<SightStatus>();
        assert!(
            matches!(status.gpu_error, Some(GpuError::LimitExceeded { .. })),
            "{status:?}"
        );
    }
    app.world_mut()
        .resource_mut::<Voxels>()
        .remove_chunk(far.chunk());
    app.world_mut()
        .resource_mut::<SightQueue>()
        .push_segment(from, to);
    let got = answer(&mut app, &mut cursor, SightEngine::Gpu);
    assert!(matches!(got[0].result, Ok(LineOfSight::Blocked(_))));
}

/// A batch in flight when the world is replaced is answered as the world was when it was
/// submitted, and nothing waits for the GPU in the frame that submits it.
#[test]
fn a_batch_in_flight_outlives_a_replaced_world() {
    let Some(mut app) = gpu_app(common::world_with(&[(WorldPos::new(5, 0, 0), STONE)])) else {
        return;
    };
    let (from, to) = (eye(0, 0, 0), eye(9, 0, 0));
    let mut cursor = app.world().resource::<Messages<SightAnswer>>().get_cursor();
    app.world_mut()
        .resource_mut::<SightQueue>()
        .push_segment(from, to);
    app.update();
    assert!(read(&app, &mut cursor).is_empty());
    app.insert_resource(Voxels::new(common::world_with(&[(
        WorldPos::new(3, 0, 0),
        STONE,
    )])));
    app.update();
    let got = read(&app, &mut cursor);
    assert_eq!(got.len(), 1);
    assert!(
        matches!(got[0].result, Ok(LineOfSight::Blocked(h)) if h.voxel_pos == WorldPos::new(5, 0, 0)),
        "{got:?}"
    );
    assert_eq!(
        app.world().resource::<SightStatus>().engine,
        Some(SightEngine::Gpu)
    );
}
