//! A game team's first day, as one headless app: Bevy's own vector types straight into
//! voxcast's calls, a first-person rig (yaw on the body, pitch on a child camera) aiming
//! through the camera, picking from a cursor position, a one-off cast from a system, and edits
//! written in mixed order, each answer matched to its request.

use bevy_app::App;
use bevy_ecs::message::MessageId;
use bevy_ecs::prelude::*;
use bevy_math::{Vec2, Vec3};
use bevy_transform::TransformPlugin;
use voxcast_bevy::prelude::*;

const STONE: VoxelId = VoxelId(1);
const PLANK: VoxelId = VoxelId(9);

/// A stone floor at y = 0 over x, z in -16..16, and a stone wall at z = -6 (x in -4..4,
/// y in 1..5).
fn arena() -> VoxelWorld {
    let mut world = VoxelWorld::new();
    for x in -16..16 {
        for z in -16..16 {
            world.set_voxel(WorldPos::new(x, 0, z), STONE);
        }
    }
    for x in -4..4 {
        for y in 1..5 {
            world.set_voxel(WorldPos::new(x, y, -6), STONE);
        }
    }
    world
}

/// The player: feet on the floor at (0.5, 1, 0.5), a body turned by `yaw` and a camera 1.6
/// voxels up tilted by `pitch`, the camera carrying the targeter.
fn spawn_player(app: &mut App, yaw: f32, pitch: f32) -> (Entity, Entity) {
    let body = app
        .world_mut()
        .spawn((
            VoxelPosition::new(WorldPos::new(0, 1, 0), Vec3::new(0.5, 0.0, 0.5)),
            Transform::from_rotation(Quat::from_rotation_y(yaw)),
        ))
        .id();
    let camera = app
        .world_mut()
        .spawn((
            BlockTargeter::default(),
            Transform::from_xyz(0.0, 1.6, 0.0).with_rotation(Quat::from_rotation_x(pitch)),
            ChildOf(body),
        ))
        .id();
    (body, camera)
}

fn app() -> App {
    let mut app = App::new();
    app.add_plugins((TransformPlugin, VoxcastPlugin))
        .insert_resource(Voxels::new(arena()));
    app
}

/// The eye of the rig: the body's position moved up by the camera's height.
fn eye() -> VoxelPosition {
    VoxelPosition::new(WorldPos::new(0, 1, 0), Vec3::new(0.5, 1.6, 0.5))
}

/// Bevy's `Transform` and `Vec3` with voxcast's own calls, no conversion anywhere.
#[test]
fn bevy_vectors_are_voxcast_vectors() {
    let t = Transform::from_rotation(Quat::from_rotation_y(0.3));
    let mut pos = eye();
    pos.offset += *t.forward() * 0.5;
    let ray = VoxelRay::new(pos.voxel, pos.offset, *t.forward(), 20.0).expect("a ray");
    let hit = voxel_raycast(&ray, &arena()).expect("the wall ahead");
    assert_eq!(hit.voxel_pos.z, -6);
    assert_eq!(hit.face_normal, IVec3::Z);
}

/// The camera, a child of the turned body, aims with its global rotation (yaw then pitch) from
/// the body's position raised by its own height: its target is the core crate's answer for
/// that ray, and moving the body moves the eye.
#[test]
fn a_first_person_rig_aims_through_its_child_camera() {
    let mut app = app();
    // Turned 30 degrees left, looking 8 degrees down: at the wall, left of center.
    let (yaw, pitch) = (30f32.to_radians(), -8f32.to_radians());
    let (body, camera) = spawn_player(&mut app, yaw, pitch);
    app.update();
    let forward = Quat::from_rotation_y(yaw) * Quat::from_rotation_x(pitch) * Vec3::NEG_Z;
    let world = arena();
    let want = voxel_raycast_with(
        &VoxelRay::new(eye().voxel, eye().offset, forward, 8.0).expect("ray"),
        &world,
        &RaycastOptions::default(),
    );
    let target = *app.world().get::<BlockTarget>(camera).expect("required");
    let (got, want) = (target.hit().expect("a hit"), want.hit().expect("a hit"));
    assert_eq!(
        (got.voxel_pos, got.face_normal),
        (want.voxel_pos, want.face_normal)
    );
    assert!(
        (got.distance - want.distance).abs() < 1e-4,
        "{got:?} against {want:?}"
    );
    assert_eq!(
        got.voxel_pos.z, -6,
        "the wall, through the rotated camera: {got:?}"
    );
    // Aiming with the body's rotation alone (level) would hit the wall higher up: the
    // child's pitch is what brings the target down.
    let level = voxel_raycast(
        &VoxelRay::new(
            eye().voxel,
            eye().offset,
            Quat::from_rotation_y(yaw) * Vec3::NEG_Z,
            8.0,
        )
        .expect("ray"),
        &world,
    )
    .expect("the wall");
    assert!(
        level.voxel_pos.y > got.voxel_pos.y,
        "{level:?} against {got:?}"
    );

    // Step back two voxels: the eye moves with the body.
    app.world_mut()
        .get_mut::<VoxelPosition>(body)
        .expect("spawned with one")
        .voxel += IVec3::new(0, 0, 2);
    app.update();
    let moved = *app.world().get::<BlockTarget>(camera).expect("required");
    let want_moved = voxel_raycast(
        &VoxelRay::new(
            eye().voxel + IVec3::new(0, 0, 2),
            eye().offset,
            forward,
            8.0,
        )
        .expect("ray"),
        &world,
    );
    assert_eq!(
        moved.hit().map(|h| (h.voxel_pos, h.face_normal)),
        want_moved.map(|h| (h.voxel_pos, h.face_normal))
    );
}

/// The obvious Bevy call agrees with the targeter to the last bit: a cast along the camera's
/// `GlobalTransform::forward()` from the targeter's eye (the body's position moved by the
/// camera's global translation less the body's) is the camera's `BlockTarget`, distance
/// included, for any yaw and pitch, also through a scaled body.
#[test]
fn a_cast_along_forward_is_the_targeters_answer_bit_for_bit() {
    let world = arena();
    let mut hits = 0;
    for (i, (yaw, pitch)) in [
        (0.0f32, 0.0f32),
        (30.0, -8.0),
        (-47.0, -20.0),
        (12.5, -33.3),
        (90.0, -5.0),
        (171.0, -41.0),
        (-3.7, 2.9),
    ]
    .into_iter()
    .enumerate()
    {
        let mut app = app();
        let (body, camera) = spawn_player(&mut app, yaw.to_radians(), pitch.to_radians());
        if i % 2 == 1 {
            // A scaled body: the direction is still unit, as `forward()` is.
            app.world_mut()
                .get_mut::<Transform>(body)
                .expect("spawned with one")
                .scale = Vec3::new(1.0, 1.25, 0.5);
        }
        app.update();
        let global = |e: Entity| *app.world().get::<GlobalTransform>(e).expect("required");
        let (body_global, camera_global) = (global(body), global(camera));
        let body_at = *app.world().get::<VoxelPosition>(body).expect("spawned");
        let eye = VoxelPosition::new(
            body_at.voxel,
            body_at.offset + (camera_global.translation() - body_global.translation()),
        );
        let targeter = *app.world().get::<BlockTarget>(camera).expect("required");
        let direction = *camera_global.forward();
        let want = BlockTarget::cast(
            &world,
            &eye,
            direction,
            BlockTargeter::DEFAULT_REACH,
            &RaycastOptions::default(),
        );
        assert_eq!(targeter, want, "yaw {yaw}, pitch {pitch}");
        let ray = VoxelRay::new(
            eye.voxel,
            eye.offset,
            direction,
            BlockTargeter::DEFAULT_REACH,
        )
        .expect("a ray");
        assert_eq!(
            targeter.outcome,
            voxel_raycast_with(&ray, &world, &RaycastOptions::default()),
            "yaw {yaw}, pitch {pitch}"
        );
        hits += usize::from(targeter.hit().is_some());
    }
    assert!(
        hits >= 5,
        "most of these aim at the floor or the wall: {hits}"
    );
}

/// The ray under the cursor of a perspective camera (Bevy's reversed-depth projection): through
/// the center it is the camera's forward direction; through any other pixel it is the
/// direction the pixel's point on the image plane gives, and it picks the block seen there.
#[test]
fn picking_from_a_cursor_position() {
    let (fov, size) = (60f32.to_radians(), Vec2::new(800.0, 600.0));
    let clip_from_view = bevy_math::proj::perspective_infinite_reverse(fov, size.x / size.y, 0.1);
    let mut app = app();
    let (_, camera) = spawn_player(&mut app, 0.0, 0.0);
    app.update();
    let global = *app
        .world()
        .get::<GlobalTransform>(camera)
        .expect("required");
    let center =
        viewport_ray(size / 2.0, size, &global, clip_from_view, &eye(), 20.0).expect("a ray");
    assert!(
        center.direction.abs_diff_eq(Vec3::NEG_Z, 1e-6),
        "{center:?}"
    );
    for cursor in [
        Vec2::new(100.0, 450.0),
        Vec2::new(700.0, 120.0),
        Vec2::new(410.0, 500.0),
    ] {
        let ray = viewport_ray(cursor, size, &global, clip_from_view, &eye(), 20.0).expect("a ray");
        // The pixel's point on the image plane at distance 1, from the camera's field of view.
        let half = (fov / 2.0).tan();
        let ndc = Vec2::new(cursor.x / size.x * 2.0 - 1.0, 1.0 - cursor.y / size.y * 2.0);
        let want = Vec3::new(ndc.x * half * size.x / size.y, ndc.y * half, -1.0).normalize();
        assert!(
            ray.direction.abs_diff_eq(want, 1e-5),
            "{cursor}: {ray:?}, want {want}"
        );
        let picked = voxel_raycast(&ray, &arena());
        let from_eye = voxel_raycast(
            &VoxelRay::new(eye().voxel, eye().offset, want, 20.0).expect("ray"),
            &arena(),
        );
        assert_eq!(
            picked.map(|h| h.voxel_pos),
            from_eye.map(|h| h.voxel_pos),
            "{cursor}"
        );
    }
    // A zero-sized viewport gives an error, not a panic.
    assert!(
        viewport_ray(
            Vec2::ZERO,
            Vec2::ZERO,
            &global,
            clip_from_view,
            &eye(),
            20.0
        )
        .is_err()
    );
}

#[derive(Resource, Default)]
struct Seen(Vec<RaycastOutcome>, Vec<LineOfSight>);

/// A one-off cast and line of sight from any system, through the `VoxelQuery` parameter.
#[test]
fn one_off_casts_from_any_system() {
    fn look(voxels: VoxelQuery, mut seen: ResMut<Seen>) {
        let from = eye();
        seen.0.push(voxels.cast(
            &from,
            Vec3::NEG_Z,
            f32::INFINITY,
            &RaycastOptions::default(),
        ));
        let behind_wall = VoxelPosition::new(WorldPos::new(0, 2, -10), Vec3::splat(0.5));
        let beside = VoxelPosition::new(WorldPos::new(8, 2, 0), Vec3::splat(0.5));
        let opts = LineOfSightOptions::default();
        seen.1
            .push(voxels.line_of_sight(&from, &behind_wall, &opts));
        seen.1.push(voxels.line_of_sight(&from, &beside, &opts));
        seen.1.push(voxels.line_of_sight(&from, &from, &opts));
    }
    let mut app = app();
    app.init_resource::<Seen>()
        .add_systems(bevy_app::Update, look);
    app.update();
    let seen = app.world().resource::<Seen>();
    let hit = seen.0[0].hit().expect("the wall");
    assert_eq!(
        (hit.voxel_pos, hit.distance),
        (WorldPos::new(0, 2, -6), 5.5)
    );
    assert!(matches!(seen.1[0], LineOfSight::Blocked(h) if h.voxel_pos.z == -6));
    assert_eq!(seen.1[1], LineOfSight::Clear);
    // A point sees itself.
    assert_eq!(seen.1[2], LineOfSight::Clear);
}

#[derive(Resource, Default)]
struct Written(Vec<(MessageId<EditBlock>, EditBlock)>);

/// Input that writes a place, a mine and a place in one frame through a `MessageWriter`:
/// applied in that order, every answer found by the id `write` returned.
#[test]
fn mixed_edits_answer_their_requests() {
    fn input(
        targets: Query<(Entity, &BlockTarget)>,
        mut edits: MessageWriter<EditBlock>,
        mut written: ResMut<Written>,
    ) {
        if !written.0.is_empty() {
            return;
        }
        for (entity, target) in &targets {
            let Some(&aimed) = target.hit() else { continue };
            for edit in [
                EditBlock::place(entity, aimed, PLANK),
                EditBlock::mine(entity, aimed),
                EditBlock::place(entity, aimed, PLANK),
            ] {
                written.0.push((edits.write(edit), edit));
            }
        }
    }
    let mut app = app();
    app.init_resource::<Written>()
        .add_systems(bevy_app::Update, input.before(VoxcastSystems::Edit));
    let (_, camera) = spawn_player(&mut app, 0.0, -20f32.to_radians());
    let mut cursor = app.world().resource::<Messages<BlockEdited>>().get_cursor();
    app.update(); // targets
    app.update(); // edits
    let answers: Vec<BlockEdited> = cursor
        .read(app.world().resource::<Messages<BlockEdited>>())
        .copied()
        .collect();
    let written = &app.world().resource::<Written>().0;
    assert_eq!(written.len(), 3);
    let aimed = written[0].1.aimed;
    let front = aimed.previous_pos().expect("a face");
    for (id, edit) in written {
        let answer = answers.iter().find(|a| a.request == *id).expect("answered");
        assert_eq!(answer.edit, *edit);
        assert_eq!(answer.edit.entity, camera);
    }
    let by_id = |i: usize| {
        answers
            .iter()
            .find(|a| a.request == written[i].0)
            .expect("answered")
    };
    assert_eq!(
        by_id(0).result,
        Ok(BlockEdit::Placed {
            voxel: front,
            id: PLANK
        })
    );
    assert_eq!(
        by_id(1).result,
        Ok(BlockEdit::Mined {
            voxel: aimed.voxel_pos,
            id: STONE
        })
    );
    // The block to build against was mined by the request before.
    assert_eq!(
        by_id(2).result,
        Err(EditError::TargetChanged {
            voxel: aimed.voxel_pos,
            expected: STONE,
            found: Some(VoxelId::AIR),
        })
    );
}

/// A player's box moved every frame by a system: it falls, lands flush on the floor (feet
/// exactly on y = 1) and then walks into the wall, where it stops with its front face on the
/// wall's plane and slides along it.
#[test]
fn a_player_box_falls_lands_and_slides_along_the_wall() {
    #[derive(Component)]
    struct Player {
        velocity: Vec3,
        grounded: bool,
    }
    const HALF: Vec3 = Vec3::new(0.3, 0.9, 0.3);
    fn move_players(voxels: VoxelQuery, mut players: Query<(&mut VoxelPosition, &mut Player)>) {
        for (mut pos, mut player) in &mut players {
            let step = player.velocity / 20.0;
            let (moved, slide) = voxels
                .slide(&pos, HALF, step, &SlideOptions::default())
                .expect("a valid move");
            *pos = moved;
            player.grounded = slide.blocked.y && player.velocity.y < 0.0;
        }
    }
    let mut app = app();
    app.add_systems(bevy_app::Update, move_players);
    let player = app
        .world_mut()
        .spawn((
            VoxelPosition::new(WorldPos::new(0, 4, 0), Vec3::new(0.5, 0.5, 0.5)),
            Player {
                velocity: Vec3::new(0.0, -10.0, 0.0),
                grounded: false,
            },
        ))
        .id();
    for _ in 0..20 {
        app.update();
    }
    let feet = |app: &App| {
        let p = app.world().get::<VoxelPosition>(player).expect("placed");
        (
            p.voxel.y as f32 + p.offset.y - HALF.y,
            p.voxel.z as f32 + p.offset.z - HALF.z,
            p.voxel.x as f32 + p.offset.x,
        )
    };
    assert!(app.world().get::<Player>(player).expect("player").grounded);
    assert!(
        (feet(&app).0 - 1.0).abs() < 1e-6,
        "feet at {}",
        feet(&app).0
    );
    // Walk towards the wall (z = -6, its face at z = -5) and sideways at once.
    app.world_mut()
        .get_mut::<Player>(player)
        .expect("player")
        .velocity = Vec3::new(2.0, -1.0, -20.0);
    for _ in 0..20 {
        app.update();
    }
    let (y, front, x) = feet(&app);
    assert!((y - 1.0).abs() < 1e-6, "still on the floor: {y}");
    assert!(
        (front - (-5.0)).abs() < 1e-5,
        "the box's front (-z) face on the wall's plane: {front}"
    );
    assert!(x > 2.0, "slid along the wall to x = {x}");
}

/// Blocks that are not cubes: with the world's shapes set, the crosshair picks a torch and a
/// flower where their boxes are (the face of the box, not of the voxel), and passes beside
/// them, through their voxels, to the block behind.
#[test]
fn the_crosshair_picks_a_torch_and_a_flower_by_their_shapes() {
    const TORCH: VoxelId = VoxelId(20);
    const FLOWER: VoxelId = VoxelId(21);
    let mut world = arena();
    world.set_voxel(WorldPos::new(0, 1, -3), TORCH);
    world.set_voxel(WorldPos::new(-2, 1, -3), FLOWER);
    let shape = |lo, hi| BlockShape::Boxes(vec![ShapeBox::new(lo, hi).expect("a valid box")]);
    world
        .set_shape(TORCH, &shape([6, 0, 6], [10, 10, 10]))
        .expect("torch");
    world
        .set_shape(FLOWER, &shape([5, 0, 5], [11, 10, 11]))
        .expect("flower");
    // Aim from the eye (0.5, 2.6, 0.5) at a point: the targeter's answer there.
    let aim = |x: f32, y: f32, z: f32| {
        let mut app = App::new();
        app.add_plugins((TransformPlugin, VoxcastPlugin))
            .insert_resource(Voxels::new(world.clone()));
        let d = Vec3::new(x - 0.5, y - 2.6, z - 0.5);
        let yaw = (-d.x).atan2(-d.z);
        let pitch = d.y.atan2(d.x.hypot(d.z));
        let (_, camera) = spawn_player(&mut app, yaw, pitch);
        app.update();
        *app.world().get::<BlockTarget>(camera).expect("required")
    };
    // The torch's box, 10/16 high, met on its south face (z = -3 + 10/16).
    let t = aim(0.5, 1.3, -2.5);
    let hit = t.hit().expect("the torch");
    assert_eq!(
        (hit.voxel_pos, hit.voxel_type),
        (WorldPos::new(0, 1, -3), TORCH)
    );
    assert_eq!(hit.face_normal, IVec3::Z);
    assert!((hit.distance - Vec3::new(0.0, -1.3, -3.0).length() * (2.875 / 3.0)).abs() < 1e-4);
    // Beside the torch (x = 0.2 inside its voxel, outside its box): the wall behind.
    let t = aim(0.2, 1.3, -2.5);
    assert_eq!(t.hit().map(|h| h.voxel_type), Some(STONE), "{t:?}");
    // The flower's box, and beside it through the flower's voxel.
    let t = aim(-1.5, 1.3, -2.5);
    assert_eq!(
        t.hit().map(|h| (h.voxel_pos, h.voxel_type)),
        Some((WorldPos::new(-2, 1, -3), FLOWER))
    );
    let t = aim(-1.9, 1.3, -2.5);
    assert_eq!(t.hit().map(|h| h.voxel_type), Some(STONE), "{t:?}");
}

/// Blocks that are not cubes, for a character: a player walking into a row of bottom slabs
/// through `VoxelQuery::slide` with a half-voxel `step_up` climbs onto them and stands on their
/// top (feet at y = 1.5), the face of the slab's box, not of its voxel.
#[test]
fn a_player_steps_up_onto_bottom_slabs() {
    const SLAB: VoxelId = VoxelId(22);
    const HALF: Vec3 = Vec3::new(0.3, 0.9, 0.3);
    #[derive(Component)]
    struct Walker;
    fn walk(voxels: VoxelQuery, mut walkers: Query<&mut VoxelPosition, With<Walker>>) {
        let opts = SlideOptions {
            step_up: 0.5,
            ..SlideOptions::default()
        };
        for mut pos in &mut walkers {
            // A step forward (-z) and gravity, each frame.
            let (moved, _) = voxels
                .slide(&pos, HALF, Vec3::new(0.0, -0.5, -0.1), &opts)
                .expect("a valid move");
            *pos = moved;
        }
    }
    let mut world = arena();
    for x in -2..=2 {
        world.set_voxel(WorldPos::new(x, 1, -3), SLAB);
    }
    let slab = ShapeBox::new([0, 0, 0], [16, 8, 16]).expect("a valid box");
    world
        .set_shape(SLAB, &BlockShape::Boxes(vec![slab]))
        .expect("slab");
    let mut app = App::new();
    app.add_plugins((TransformPlugin, VoxcastPlugin))
        .insert_resource(Voxels::new(world));
    app.add_systems(bevy_app::Update, walk);
    let player = app
        .world_mut()
        .spawn((
            VoxelPosition::new(WorldPos::new(0, 1, 0), Vec3::new(0.5, 0.9, 0.5)),
            Walker,
        ))
        .id();
    for _ in 0..30 {
        app.update();
    }
    let p = app.world().get::<VoxelPosition>(player).expect("placed");
    let feet = p.voxel.y as f32 + p.offset.y - HALF.y;
    let z = p.voxel.z as f32 + p.offset.z;
    assert!(
        (z - (-2.5)).abs() < 1e-4,
        "walked 3 voxels to z = -2.5: {z}"
    );
    assert!((feet - 1.5).abs() < 1e-5, "feet on the slabs' top: {feet}");
}
