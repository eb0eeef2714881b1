//! AI sight on the CPU: requests queued by systems, answered in one batch, every answer
//! checked against `line_of_sight` on the same world; bad requests answered with their error
//! beside good ones; answers arrive in the frame's `PostUpdate`, or the next one's.

use voxcast_testkit::common;
mod support;

use bevy_app::{App, Last, Update};
use bevy_ecs::message::MessageCursor;
use bevy_ecs::prelude::*;
use support::{app_with, check_answers, read, voxels};
use voxcast::glam::Vec3;
use voxcast::{
    LineOfSight, LineOfSightOptions, MaterialFilter, RayError, RaycastOptions, VoxelId, WorldPos,
};
use voxcast_bevy::{
    EditBlock, SightAnswer, SightEngine, SightError, SightId, SightQueue, SightRequest,
    SightStatus, VoxelPosition,
};
use voxcast_testkit::scene::{SplitMix64, Terrain};

fn terrain() -> (Terrain, voxcast::VoxelWorld) {
    support::pillared_terrain(12)
}

/// NPCs at eye height on the terrain.
fn spawn_npcs(app: &mut App, terrain: &Terrain, n: usize, seed: u64) -> Vec<Entity> {
    terrain
        .reach_rays(n, seed)
        .iter()
        .map(|eye| {
            app.world_mut()
                .spawn(VoxelPosition::new(eye.origin, eye.sub_offset))
                .id()
        })
        .collect()
}

fn answers(app: &App, cursor: &mut MessageCursor<SightAnswer>) -> Vec<SightAnswer> {
    read(app, cursor)
}

/// Pairs of NPCs and segments between eyes, over several frames in which NPCs move and blocks
/// are mined: every answer equals `line_of_sight` on the world of its frame.
#[test]
fn sight_answers_match_line_of_sight_as_npcs_move_and_blocks_break() {
    let (terrain, world) = terrain();
    let mut app = app_with(world);
    let npcs = spawn_npcs(&mut app, &terrain, 48, 1);
    let segments = terrain.sight_segments(200, 64.0, 2);
    let mut cursor = app.world().resource::<Messages<SightAnswer>>().get_cursor();
    let mut rng = SplitMix64::new(3);
    let (mut total, mut blocked) = (0, 0);
    for frame in 0..6 {
        let mut ids = Vec::new();
        {
            let mut queue = app.world_mut().resource_mut::<SightQueue>();
            for i in 0..60 {
                let from = npcs[rng.below(npcs.len() as u64) as usize];
                let to = npcs[(i * 7 + frame) % npcs.len()];
                if from != to {
                    ids.push(queue.push_entities(from, to));
                }
            }
            ids.extend(support::queue_segments(
                &mut queue,
                segments.iter().skip(frame * 30).take(30),
            ));
        }
        app.update();
        let got = answers(&app, &mut cursor);
        assert_eq!(
            got.iter().map(|a| a.id).collect::<Vec<_>>(),
            ids,
            "one answer per request, in order"
        );
        let world = voxels(&app).clone();
        blocked += check_answers(&mut app, &world, &got, &LineOfSightOptions::default());
        total += got.len();
        let status = app.world().resource::<SightStatus>();
        assert_eq!(
            (status.engine, status.answered),
            (Some(SightEngine::Cpu), got.len())
        );

        // Move some NPCs to other eyes, and mine what blocked the first blocked answer.
        for (i, &npc) in npcs.iter().enumerate().filter(|(i, _)| i % 3 == frame % 3) {
            let eye = terrain.reach_rays(1, 100 + (frame * 48 + i) as u64)[0];
            *app.world_mut()
                .get_mut::<VoxelPosition>(npc)
                .expect("spawned with one") = VoxelPosition::new(eye.origin, eye.sub_offset);
        }
        if let Some(aimed) = got.iter().find_map(|a| match a.result {
            Ok(LineOfSight::Blocked(hit)) => Some(hit),
            _ => None,
        }) {
            app.world_mut()
                .write_message(EditBlock::mine(npcs[0], aimed));
        }
    }
    assert!(
        blocked >= total / 10 && total - blocked >= total / 10,
        "{blocked} of {total} blocked"
    );
}

/// Bad requests get their error, the good ones around them their answer.
#[test]
fn one_bad_request_never_spoils_the_batch() {
    let (terrain, world) = terrain();
    let mut app = app_with(world);
    let npcs = spawn_npcs(&mut app, &terrain, 4, 7);
    let gone = app.world_mut().spawn(VoxelPosition::default()).id();
    app.world_mut().despawn(gone);
    let nowhere = app.world_mut().spawn_empty().id();
    let eye = *app
        .world()
        .get::<VoxelPosition>(npcs[0])
        .expect("spawned with one");
    let nan = VoxelPosition::new(eye.voxel, Vec3::new(f32::NAN, 0.5, 0.5));
    let far = VoxelPosition::new(
        WorldPos::new(eye.voxel.x + 100_000, eye.voxel.y, eye.voxel.z),
        eye.offset,
    );
    let edge = VoxelPosition::new(WorldPos::new(i128::MAX, 0, 0), Vec3::new(2.0, 0.0, 0.0));
    let mut cursor = app.world().resource::<Messages<SightAnswer>>().get_cursor();
    let requests = [
        (
            SightRequest::Entities {
                from: npcs[0],
                to: npcs[1],
            },
            None,
        ),
        (
            SightRequest::Entities {
                from: npcs[0],
                to: gone,
            },
            Some(Err(SightError::NoPosition(gone))),
        ),
        (
            SightRequest::Entities {
                from: nowhere,
                to: npcs[1],
            },
            Some(Err(SightError::NoPosition(nowhere))),
        ),
        (
            SightRequest::Segment { from: eye, to: eye },
            Some(Ok(LineOfSight::Clear)),
        ),
        (
            SightRequest::Segment { from: nan, to: eye },
            Some(Ok(LineOfSight::Invalid(RayError::NonFiniteSubOffset))),
        ),
        (
            SightRequest::Segment { from: eye, to: far },
            Some(Ok(LineOfSight::Invalid(RayError::MaxDistanceTooLarge))),
        ),
        (
            SightRequest::Segment {
                from: edge,
                to: eye,
            },
            Some(Ok(LineOfSight::Invalid(RayError::OriginOutOfRange))),
        ),
        (
            SightRequest::Entities {
                from: npcs[2],
                to: npcs[3],
            },
            None,
        ),
        (
            SightRequest::Entities {
                from: npcs[1],
                to: npcs[0],
            },
            None,
        ),
    ];
    for (request, _) in &requests {
        app.world_mut().resource_mut::<SightQueue>().push(*request);
    }
    app.update();
    let got = answers(&app, &mut cursor);
    assert_eq!(got.len(), requests.len());
    let world = voxels(&app).clone();
    check_answers(&mut app, &world, &got, &LineOfSightOptions::default());
    // One answer for either order of a pair (the first request and the last).
    assert_eq!(got[0].result, got[requests.len() - 1].result);
    for (answer, (request, want)) in got.iter().zip(&requests) {
        // As text: a request with a NaN offset is not equal to itself.
        assert_eq!(format!("{:?}", answer.request), format!("{request:?}"));
        if let Some(want) = want {
            assert_eq!(answer.result, *want, "{request:?}");
        } else {
            assert!(
                matches!(
                    answer.result,
                    Ok(LineOfSight::Clear | LineOfSight::Blocked(_))
                ),
                "{answer:?}"
            );
        }
    }
}

/// The queue's options are the batch's: glass is transparent to this sight, and under the
/// conservative rule a segment through a voxel edge is blocked by a solid voxel at that edge.
#[test]
fn the_queues_options_answer_the_batch() {
    const GLASS: VoxelId = VoxelId(7);
    let world = common::world_with(&[
        (WorldPos::new(3, 0, 0), GLASS),
        // Beside the edge a diagonal segment passes through, but not on its walk.
        (WorldPos::new(0, 1, 5), VoxelId(1)),
    ]);
    let mut app = app_with(world);
    let at = |x, y, z, o: f32| VoxelPosition::new(WorldPos::new(x, y, z), Vec3::new(o, o, 0.5));
    let through_glass = (at(0, 0, 0, 0.5), at(6, 0, 0, 0.5));
    let past_edge = (at(0, 0, 5, 0.5), at(1, 1, 5, 0.5));
    let mut cursor = app.world().resource::<Messages<SightAnswer>>().get_cursor();
    let options = [
        LineOfSightOptions::default(),
        LineOfSightOptions {
            raycast: RaycastOptions {
                blocks: MaterialFilter::every_non_air().without(GLASS),
                ..RaycastOptions::default()
            },
            conservative: true,
        },
    ];
    let mut seen = Vec::new();
    for opts in &options {
        let mut queue = app.world_mut().resource_mut::<SightQueue>();
        queue.options = opts.clone();
        queue.push_segment(through_glass.0, through_glass.1);
        queue.push_segment(past_edge.0, past_edge.1);
        app.update();
        let got = answers(&app, &mut cursor);
        let world = voxels(&app).clone();
        check_answers(&mut app, &world, &got, opts);
        seen.push(
            got.iter()
                .map(|a| matches!(a.result, Ok(LineOfSight::Clear)))
                .collect::<Vec<_>>(),
        );
    }
    // Default: glass blocks, the edge lets sight past; the other options: the reverse.
    assert_eq!(seen, vec![vec![false, true], vec![true, false]]);
}

/// Requests queued in `Update` are answered in that frame's `PostUpdate`; requests queued after
/// the batch (in `Last`) wait for the next frame's.
#[test]
fn answers_arrive_this_frame_or_the_next() {
    #[derive(Resource, Default)]
    struct Pushed(Vec<(&'static str, SightId)>);
    fn push(when: &'static str) -> impl FnMut(ResMut<SightQueue>, ResMut<Pushed>) {
        move |mut queue, mut pushed| {
            let from = VoxelPosition::new(WorldPos::ZERO, Vec3::splat(0.5));
            let to = VoxelPosition::new(WorldPos::new(9, 0, 0), Vec3::splat(0.5));
            let id = queue.push_segment(from, to);
            pushed.0.push((when, id));
        }
    }
    let mut app = app_with(common::world_with(&[(WorldPos::new(4, 0, 0), VoxelId(1))]));
    app.init_resource::<Pushed>()
        .add_systems(Update, push("update"))
        .add_systems(Last, push("last"));
    let mut cursor = app.world().resource::<Messages<SightAnswer>>().get_cursor();
    let mut answered = Vec::new();
    for _ in 0..3 {
        app.update();
        answered.push(
            answers(&app, &mut cursor)
                .iter()
                .map(|a| a.id)
                .collect::<Vec<_>>(),
        );
    }
    let pushed = &app.world().resource::<Pushed>().0;
    let id = |when: &str, frame: usize| {
        pushed
            .iter()
            .filter(|(w, _)| *w == when)
            .nth(frame)
            .map(|(_, id)| *id)
            .expect("pushed every frame")
    };
    for (frame, ids) in answered.iter().enumerate() {
        let mut want = vec![id("update", frame)];
        if frame > 0 {
            want.insert(0, id("last", frame - 1));
        }
        assert_eq!(*ids, want, "frame {frame}");
    }
    assert_eq!(
        app.world().resource::<SightQueue>().len(),
        1,
        "the last frame's `Last` request waits"
    );
}
