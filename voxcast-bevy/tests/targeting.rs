//! Block targeting through the plugin: every target checked against `voxel_raycast_with` on
//! the same world as entities move, turn and change reach; bad positions give an error, not a
//! panic; and the seed's scenario (crosshair, reach 8, break the block, target the one behind).

use voxcast_testkit::common;
mod support;

use bevy_app::{App, Update};
use bevy_ecs::prelude::*;
use bevy_math::Quat;
use bevy_transform::components::Transform;
use support::{app_with, check_targets, expected_target, looking, read, spawn_targeter, voxels};
use voxcast::glam::{IVec3, Vec3};
use voxcast::{
    MaterialFilter, OriginPolicy, RayError, RaycastOptions, RaycastOutcome, UnloadedPolicy,
    VoxelId, VoxelWorld, WorldPos,
};
use voxcast_bevy::{
    BlockEdit, BlockEdited, BlockTarget, BlockTargeter, ChunksChanged, EditBlock, VoxcastSystems,
    VoxelPosition, Voxels,
};
use voxcast_testkit::scene::{SplitMix64, Terrain};

const STONE: VoxelId = VoxelId(1);
const DIRT: VoxelId = VoxelId(2);
const GLASS: VoxelId = VoxelId(7);

fn small_terrain() -> (Terrain, VoxelWorld) {
    let terrain = Terrain {
        size: [96, 64, 96],
        seed: 31,
    };
    let world = terrain.build();
    (terrain, world)
}

/// Targeters at random eyes on the terrain, turned, moved and given other reaches frame after
/// frame: each frame every target equals the core crate's answer.
#[test]
fn targets_follow_moving_entities() {
    let (terrain, world) = small_terrain();
    let mut app = app_with(world);
    let mut rng = SplitMix64::new(0xB1);
    let eyes = terrain.reach_rays(200, 5);
    let reaches = [8.0, 8.0, 3.5, 0.0, 20.0];
    let entities: Vec<Entity> = eyes
        .iter()
        .take(40)
        .enumerate()
        .map(|(i, eye)| {
            spawn_targeter(
                &mut app,
                VoxelPosition::new(eye.origin, eye.sub_offset),
                eye.direction,
                BlockTargeter {
                    reach: reaches[i % reaches.len()],
                    ..BlockTargeter::default()
                },
            )
        })
        .collect();
    let mut hits = 0;
    for frame in 0..8 {
        app.update();
        hits += check_targets(&mut app);
        // Move every entity to another eye, turn it, and change some reaches.
        for (i, &e) in entities.iter().enumerate() {
            let eye = eyes[(frame * 40 + i * 3 + 7) % eyes.len()];
            let mut entity = app.world_mut().entity_mut(e);
            *entity.get_mut::<VoxelPosition>().expect("spawned with one") =
                VoxelPosition::new(eye.origin, eye.sub_offset);
            *entity.get_mut::<Transform>().expect("spawned with one") = looking(rng.unit_vector());
            if i % 4 == 0 {
                entity
                    .get_mut::<BlockTargeter>()
                    .expect("spawned with one")
                    .reach = reaches[(frame + i) % reaches.len()];
            }
        }
    }
    app.update();
    hits += check_targets(&mut app);
    // Random directions from eyes near the ground: both answers are common (a test that saw
    // only misses would prove little).
    let total = 9 * 40;
    assert!(
        hits >= total / 6 && total - hits >= total / 6,
        "{hits} of {total} targets hit"
    );
}

/// The targeter's options reach the cast: glass let through, unloaded space reported, the
/// origin voxel skipped.
#[test]
fn targets_use_the_targeters_options() {
    let mut world = VoxelWorld::new();
    world.set_voxel(WorldPos::new(2, 0, 0), GLASS);
    world.set_voxel(WorldPos::new(5, 0, 0), STONE);
    world.set_voxel(WorldPos::new(0, 0, 0), DIRT);
    let mut app = app_with(world);
    let eye = VoxelPosition::new(WorldPos::ZERO, Vec3::splat(0.5));
    let options = [
        RaycastOptions::default(),
        RaycastOptions {
            blocks: MaterialFilter::every_non_air().without(GLASS),
            ..RaycastOptions::default()
        },
        RaycastOptions {
            origin: OriginPolicy::SkipOriginVoxel,
            ..RaycastOptions::default()
        },
        RaycastOptions {
            origin: OriginPolicy::SkipOriginVoxel,
            unloaded: UnloadedPolicy::Stop,
            blocks: MaterialFilter::none(),
            ..RaycastOptions::default()
        },
    ];
    let spawned: Vec<Entity> = options
        .iter()
        .map(|o| {
            spawn_targeter(
                &mut app,
                eye,
                Vec3::X,
                BlockTargeter {
                    reach: 40.0,
                    options: o.clone(),
                },
            )
        })
        .collect();
    app.update();
    check_targets(&mut app);
    let target = |i: usize| {
        *app.world()
            .get::<BlockTarget>(spawned[i])
            .expect("required")
    };
    // Each option gives a different answer, so a targeter that ignored its options would fail.
    let voxel = |i: usize| target(i).hit().map(|h| h.voxel_pos);
    assert_eq!(voxel(0), Some(WorldPos::ZERO), "origin voxel reported");
    assert_eq!(voxel(1), Some(WorldPos::ZERO));
    assert_eq!(
        voxel(2),
        Some(WorldPos::new(2, 0, 0)),
        "glass after the skipped origin"
    );
    assert!(
        matches!(target(3).outcome, RaycastOutcome::Unloaded { voxel_pos: at, .. } if at == WorldPos::new(32, 0, 0)),
        "{:?}",
        target(3)
    );
    // The origin voxel has no face to build on.
    assert_eq!(target(0).place_at, None);
    assert_eq!(target(2).place_at, Some(WorldPos::new(1, 0, 0)));

    // Seen through glass, the stone's face has the glass in front: no place for a block.
    app.world_mut()
        .resource_mut::<Voxels>()
        .set_voxel(WorldPos::new(4, 2, 0), GLASS);
    app.world_mut()
        .resource_mut::<Voxels>()
        .set_voxel(WorldPos::new(5, 2, 0), STONE);
    let through_glass = spawn_targeter(
        &mut app,
        VoxelPosition::new(WorldPos::new(0, 2, 0), Vec3::splat(0.5)),
        Vec3::X,
        BlockTargeter {
            reach: 8.0,
            options: options[1].clone(),
        },
    );
    app.update();
    check_targets(&mut app);
    let target = app
        .world()
        .get::<BlockTarget>(through_glass)
        .expect("required");
    assert_eq!(
        target.hit().map(|h| h.voxel_pos),
        Some(WorldPos::new(5, 2, 0))
    );
    assert_eq!(target.place_at, None);
}

/// Targets work the same far from the origin: positions are i128, never floats.
#[test]
fn targets_far_out_in_the_i128_world() {
    let base = (1_i128 << 120) + 17;
    let mut world = VoxelWorld::new();
    for d in 0..6 {
        world.set_voxel(WorldPos::new(base + 4, -3 + d, -base), STONE);
    }
    let mut app = app_with(world);
    let e = spawn_targeter(
        &mut app,
        VoxelPosition::new(WorldPos::new(base, 0, -base), Vec3::new(0.25, 0.5, 0.5)),
        Vec3::new(1.0, -0.1, 0.0),
        BlockTargeter::default(),
    );
    app.update();
    assert_eq!(check_targets(&mut app), 1);
    let hit = *app
        .world()
        .get::<BlockTarget>(e)
        .and_then(|t| t.hit())
        .expect("a hit");
    // Entering x = base + 4 after 3.75 voxels, 0.375 lower: at y = 0.125.
    assert_eq!(hit.voxel_pos, WorldPos::new(base + 4, 0, -base));
    assert_eq!(hit.face_normal, IVec3::NEG_X);
}

/// NaN, zero and scaled rotations, positions pushed out of the i128 world, NaN offsets and bad
/// reaches: no panic, no target, the reason in `BlockTarget::error`; a good targeter in the
/// same frame keeps its target, and a fixed one gets a target again.
#[test]
fn bad_positions_give_an_error_not_a_panic() {
    let mut world = VoxelWorld::new();
    world.set_voxel(WorldPos::new(3, 0, 0), STONE);
    world.set_voxel(WorldPos::new(i128::MAX, 0, 0), STONE);
    let mut app = app_with(world);
    let eye = VoxelPosition::new(WorldPos::ZERO, Vec3::splat(0.5));
    let nan = Transform::from_rotation(Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0));
    // A zero scale: the global transform maps the forward direction to zero.
    let zero = Transform::from_scale(bevy_math::Vec3::ZERO);
    let edge = VoxelPosition::new(WorldPos::new(i128::MAX, 0, 0), Vec3::new(1.5, 0.5, 0.5));
    let cases: Vec<(VoxelPosition, Transform, f32, RayError)> = vec![
        (eye, nan, 8.0, RayError::NanDirection),
        (eye, zero, 8.0, RayError::ZeroDirection),
        (edge, looking(Vec3::X), 8.0, RayError::OriginOutOfRange),
        (
            VoxelPosition::new(WorldPos::ZERO, Vec3::new(f32::NAN, 0.5, 0.5)),
            looking(Vec3::X),
            8.0,
            RayError::NonFiniteSubOffset,
        ),
        (eye, looking(Vec3::X), f32::NAN, RayError::NanMaxDistance),
        (eye, looking(Vec3::X), -1.0, RayError::NegativeMaxDistance),
    ];
    let bad: Vec<Entity> = cases
        .iter()
        .map(|&(position, transform, reach, _)| {
            app.world_mut()
                .spawn((
                    BlockTargeter {
                        reach,
                        ..BlockTargeter::default()
                    },
                    position,
                    transform,
                ))
                .id()
        })
        .collect();
    // A rotation and a scale along the way: the forward direction of the global transform,
    // made unit by the ray.
    let scaled = Transform::from_rotation(Quat::from_rotation_arc(
        bevy_math::Vec3::NEG_Z,
        bevy_math::Vec3::X,
    ))
    .with_scale(bevy_math::Vec3::new(1.0, 3.0, 2.0));
    let good = app
        .world_mut()
        .spawn((BlockTargeter::default(), eye, scaled))
        .id();
    app.update();
    for (&e, &(_, _, _, error)) in bad.iter().zip(&cases) {
        let target = app.world().get::<BlockTarget>(e).expect("required");
        assert_eq!(target.error(), Some(error), "{target:?}");
        assert_eq!((target.hit(), target.place_at), (None, None));
    }
    let target = app.world().get::<BlockTarget>(good).expect("required");
    assert_eq!(
        target.hit().map(|h| h.voxel_pos),
        Some(WorldPos::new(3, 0, 0))
    );
    assert_eq!(target.error(), None);

    // The entity at the edge of the i128 world, moved back into it, looks at the block there.
    app.world_mut()
        .get_mut::<VoxelPosition>(bad[2])
        .expect("spawned with one")
        .offset = Vec3::new(0.5, 0.5, 0.5);
    *app.world_mut()
        .get_mut::<Transform>(bad[0])
        .expect("spawned with one") = looking(Vec3::X);
    app.update();
    let edge_target = *app.world().get::<BlockTarget>(bad[2]).expect("required");
    assert_eq!(edge_target.error(), None);
    assert_eq!(
        edge_target.hit().map(|h| h.voxel_pos),
        Some(WorldPos::new(i128::MAX, 0, 0)),
        "the ray starts in the block"
    );
    let fixed = *app.world().get::<BlockTarget>(bad[0]).expect("required");
    let want = expected_target(
        voxels(&app),
        &eye,
        &looking(Vec3::X),
        8.0,
        &RaycastOptions::default(),
    );
    assert_eq!(fixed, want);
    assert!(fixed.hit().is_some());
}

/// `BlockTarget` is written only when the answer changes, so `Changed<BlockTarget>` finds the
/// entities whose target changed.
#[test]
fn target_is_marked_changed_only_when_it_changes() {
    #[derive(Resource, Default)]
    struct ChangedCount(usize);
    fn count(mut n: ResMut<ChangedCount>, changed: Query<(), Changed<BlockTarget>>) {
        n.0 = changed.iter().count();
    }
    let mut app = app_with(common::world_with(&[(WorldPos::new(4, 0, 0), STONE)]));
    app.init_resource::<ChangedCount>()
        .add_systems(bevy_app::PostUpdate, count.after(VoxcastSystems::Target));
    let eye = VoxelPosition::new(WorldPos::ZERO, Vec3::splat(0.5));
    let e = spawn_targeter(&mut app, eye, Vec3::X, BlockTargeter::default());
    let changed = |app: &App| app.world().resource::<ChangedCount>().0;
    app.update();
    assert_eq!(changed(&app), 1, "added");
    app.update();
    assert_eq!(changed(&app), 0, "nothing moved");
    app.world_mut()
        .get_mut::<VoxelPosition>(e)
        .expect("spawned with one")
        .offset
        .x = 0.75;
    app.update();
    assert_eq!(changed(&app), 1, "moved closer: another distance");
    app.update();
    assert_eq!(changed(&app), 0);
}

/// The seed's demo as a test: the crosshair's ray with reach 8 targets the first block, the
/// player breaks it, and the next frame targets the block behind it; a block beyond reach is
/// never targeted. The mined chunk goes through the world's change list, which the plugin
/// takes in `PostUpdate` and publishes.
#[test]
fn seed_crosshair_reach_8_mine_then_target_the_block_behind() {
    // Eye 1.6 above the floor at y = 0, looking along +x and a little down, at a column of
    // blocks: dirt at x = 4, stone at x = 5 behind it, and stone at x = 12, out of reach.
    let mut world = VoxelWorld::new();
    for x in -2..16 {
        for z in -2..3 {
            world.set_voxel(WorldPos::new(x, 0, z), STONE);
        }
    }
    world.set_voxel(WorldPos::new(4, 1, 0), DIRT);
    world.set_voxel(WorldPos::new(5, 1, 0), STONE);
    world.set_voxel(WorldPos::new(12, 1, 0), STONE);
    let mut app = app_with(world);
    let eye = VoxelPosition::new(WorldPos::new(0, 1, 0), Vec3::new(0.5, 0.6, 0.5));
    let forward = Vec3::new(1.0, -0.1, 0.0);
    let player = spawn_targeter(&mut app, eye, forward, BlockTargeter::default());
    let mut edited = app.world().resource::<Messages<BlockEdited>>().get_cursor();
    let mut published = app
        .world()
        .resource::<Messages<ChunksChanged>>()
        .get_cursor();

    app.update();
    check_targets(&mut app);
    let target = *app.world().get::<BlockTarget>(player).expect("required");
    let first = *target.hit().expect("the dirt is in reach");
    assert_eq!(
        (first.voxel_pos, first.face_normal, first.voxel_type),
        (WorldPos::new(4, 1, 0), IVec3::NEG_X, DIRT)
    );
    assert_eq!(target.place_at, Some(WorldPos::new(3, 1, 0)));
    assert!(first.distance <= BlockTargeter::DEFAULT_REACH);
    let first_frame = read(&app, &mut published);
    assert_eq!(first_frame.len(), 1);
    assert!(first_frame[0].replaced, "the world is new to the app");

    // Mine it. Running `Update` alone shows the edit in the world's change list, where the
    // plugin's `PostUpdate` takes it from and publishes it.
    let request = app
        .world_mut()
        .write_message(EditBlock::mine(player, first))
        .expect("written");
    app.world_mut().run_schedule(Update);
    assert_eq!(voxels(&app).get_voxel(&first.voxel_pos), Some(VoxelId::AIR));
    assert_eq!(voxels(&app).changed_chunk_count(), 1);
    app.world_mut().run_schedule(bevy_app::PostUpdate);
    assert_eq!(voxels(&app).changed_chunk_count(), 0);
    let published = read(&app, &mut published);
    assert_eq!(
        published,
        vec![ChunksChanged {
            chunks: vec![first.voxel_pos.chunk()],
            replaced: false
        }]
    );
    assert_eq!(
        read(&app, &mut edited),
        vec![BlockEdited {
            request,
            edit: EditBlock::mine(player, first),
            result: Ok(BlockEdit::Mined {
                voxel: first.voxel_pos,
                id: DIRT
            })
        }]
    );
    check_targets(&mut app);
    let behind = *app
        .world()
        .get::<BlockTarget>(player)
        .and_then(|t| t.hit())
        .expect("the stone behind is in reach");
    assert_eq!(
        (behind.voxel_pos, behind.face_normal, behind.voxel_type),
        (WorldPos::new(5, 1, 0), IVec3::NEG_X, STONE)
    );

    // Mine that too: the next block on the ray is beyond reach 8, so the crosshair lands on
    // the floor, and the far stone is never the target.
    app.world_mut()
        .write_message(EditBlock::mine(player, behind));
    app.update();
    check_targets(&mut app);
    let next = app.world().get::<BlockTarget>(player).expect("required");
    assert_ne!(
        next.hit().map(|h| h.voxel_pos),
        Some(WorldPos::new(12, 1, 0))
    );
    let along_x = |reach: f32| {
        let target = expected_target(
            voxels(&app),
            &eye,
            &looking(Vec3::X),
            reach,
            &RaycastOptions::default(),
        );
        target.hit().map(|h| h.voxel_pos)
    };
    assert_eq!(along_x(30.0), Some(WorldPos::new(12, 1, 0)));
    assert_eq!(
        along_x(BlockTargeter::DEFAULT_REACH),
        None,
        "reach 8 stops short of x = 12"
    );
}
