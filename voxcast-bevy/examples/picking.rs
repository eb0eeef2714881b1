//! Picking without a window: the block under a cursor, through `viewport_ray`.
//!
//! A windowed app reads three things from Bevy each frame: the cursor's position
//! (`Window::cursor_position`, in logical pixels from the top left), the viewport's size, and
//! the camera's projection matrix (`Projection::get_clip_from_view`). Here they are a resource
//! set by hand, with the matrix Bevy's default `PerspectiveProjection` makes (vertical field of
//! view π/4, near plane 0.1, reversed depth), so that the example needs no window and no
//! renderer. A system in `PostUpdate` (after the transforms are propagated) turns the cursor
//! into a ray with `viewport_ray` and casts it with `VoxelQuery`; the camera also carries a
//! `BlockTargeter`, and the block under the center of the view is the block it targets.
//!
//! ```text
//! cargo run --release -p voxcast-bevy --example picking
//! ```
//!
//! It prints the block under each of a few cursor positions, with its distance along the ray:
//! `viewport_ray` starts the ray on the near plane, so that distance is counted from there (0.1
//! voxels ahead of the eye at the center of the view). Exit status 0, or 1 when the block
//! picked at the center is not the one the camera's targeter aims at.

use std::process::ExitCode;

use bevy_app::{App, PostUpdate};
use bevy_ecs::prelude::*;
use bevy_math::Mat4;
use bevy_transform::TransformPlugin;
use voxcast_bevy::prelude::*;

const STONE: VoxelId = VoxelId(1);
const GOLD: VoxelId = VoxelId(2);
const GLASS: VoxelId = VoxelId(3);

/// A stone floor at y = 0 over x, z in -16..16; a stone wall at z = -8 (x in -6..6, y in
/// 1..5) with a gold block set into it at (2, 2, -8); a glass block standing on the floor at
/// (-3, 1, -3).
fn world() -> VoxelWorld {
    let mut world = VoxelWorld::new();
    for x in -16..16 {
        for z in -16..16 {
            world.set_voxel(WorldPos::new(x, 0, z), STONE);
        }
    }
    for x in -6..6 {
        for y in 1..5 {
            world.set_voxel(WorldPos::new(x, y, -8), STONE);
        }
    }
    world.set_voxel(WorldPos::new(2, 2, -8), GOLD);
    world.set_voxel(WorldPos::new(-3, 1, -3), GLASS);
    world
}

fn material(id: VoxelId) -> &'static str {
    match id {
        STONE => "stone",
        GOLD => "gold",
        GLASS => "glass",
        _ => "unknown",
    }
}

/// What a windowed app gets from Bevy: the cursor, the viewport's size and the camera's
/// projection.
#[derive(Resource, Clone, Copy, Debug)]
struct Pointer {
    /// Logical pixels from the viewport's top left corner.
    cursor: Vec2,
    /// The viewport's size in logical pixels.
    viewport: Vec2,
    /// The camera's `clip_from_view` matrix.
    clip_from_view: Mat4,
}

/// Marks the camera that picks.
#[derive(Component)]
struct PickingCamera;

/// The last pick: the ray's outcome.
#[derive(Resource, Default, Debug)]
struct Picked(Option<RaycastOutcome>);

/// The picking system: the ray under the cursor, from the camera's transform, projection and
/// place in the i128 world, cast 64 voxels far.
fn pick(
    pointer: Res<Pointer>,
    cameras: Query<(&GlobalTransform, &VoxelPosition), With<PickingCamera>>,
    voxels: VoxelQuery,
    mut picked: ResMut<Picked>,
) {
    for (transform, eye) in &cameras {
        let outcome = match viewport_ray(
            pointer.cursor,
            pointer.viewport,
            transform,
            pointer.clip_from_view,
            eye,
            64.0,
        ) {
            Ok(ray) => voxels.raycast(&ray, &RaycastOptions::default()),
            // A zero-sized viewport, a singular projection, a NaN transform: no ray.
            Err(e) => RaycastOutcome::Invalid(e),
        };
        picked.0 = Some(outcome);
    }
}

fn describe(outcome: &RaycastOutcome) -> String {
    match outcome {
        RaycastOutcome::Hit(hit) => format!(
            "{} at ({}, {}, {}), face {}, {:.2} voxels along the ray",
            material(hit.voxel_type),
            hit.voxel_pos.x,
            hit.voxel_pos.y,
            hit.voxel_pos.z,
            hit.face_normal,
            hit.distance,
        ),
        RaycastOutcome::Miss => "nothing within 64 voxels".to_owned(),
        other => format!("{other:?}"),
    }
}

fn main() -> ExitCode {
    let viewport = Vec2::new(1280.0, 720.0);
    // Bevy's default `PerspectiveProjection`: what `Projection::get_clip_from_view` returns.
    let clip_from_view = bevy_math::proj::perspective_infinite_reverse(
        std::f32::consts::FRAC_PI_4,
        viewport.x / viewport.y,
        0.1,
    );
    let mut app = App::new();
    app.add_plugins((TransformPlugin, VoxcastPlugin))
        .insert_resource(Voxels::new(world()))
        .insert_resource(Pointer {
            cursor: viewport / 2.0,
            viewport,
            clip_from_view,
        })
        .init_resource::<Picked>()
        .add_systems(PostUpdate, pick.after(VoxcastSystems::Target));
    // The camera: eye 1.6 voxels above the floor at (0.5, 1, 6.5), looking at the gold block.
    // Its `VoxelPosition` is where it is; its `Transform` only turns it (the translation a
    // renderer would use is relative to a floating origin, see `VoxelPosition`).
    let eye = VoxelPosition::new(WorldPos::new(0, 2, 6), Vec3::new(0.5, 0.6, 0.5));
    let gold_center = Vec3::new(2.5, 2.5, -7.5);
    let look = gold_center - Vec3::new(0.5, 2.6, 6.5);
    let camera = app
        .world_mut()
        .spawn((
            PickingCamera,
            eye,
            Transform::default().looking_to(look, Vec3::Y),
            BlockTargeter {
                reach: 64.0,
                ..BlockTargeter::default()
            },
        ))
        .id();

    let mut center = None;
    for (name, cursor) in [
        ("center", viewport / 2.0),
        ("left of center", Vec2::new(400.0, 360.0)),
        ("lower left", Vec2::new(200.0, 450.0)),
        ("bottom", Vec2::new(640.0, 700.0)),
        ("top right corner", Vec2::new(1279.0, 0.0)),
    ] {
        app.world_mut().resource_mut::<Pointer>().cursor = cursor;
        app.update();
        let picked = app.world().resource::<Picked>().0.expect("the system ran");
        println!("cursor {name} {cursor}: {}", describe(&picked));
        center.get_or_insert(picked);
    }

    let target = *app
        .world()
        .get::<BlockTarget>(camera)
        .expect("a targeter has a target");
    println!("the camera's targeter: {}", describe(&target.outcome));
    let voxel = |o: &RaycastOutcome| o.hit().map(|h| (h.voxel_pos, h.face_normal));
    let center = center.expect("picked at the center");
    if voxel(&center) != voxel(&target.outcome) || voxel(&center).is_none() {
        eprintln!("picking: the center of the view is not the targeted block");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
