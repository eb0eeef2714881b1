//! A first-person block-targeting demo without a window: a player stands on the terrain (yaw on
//! the body, pitch on a child camera at eye height, the usual rig) with a crosshair in the
//! middle of the view, `VoxcastPlugin` finds the block the camera targets (reach 8),
//! and the view is rendered as `depth_image` renders `shaded.png`, with the targeted block
//! outlined as a wireframe and the crosshair drawn on top, into `targeting.png`. The target's
//! type, position and face are printed; then the player mines it (an `EditBlock` message) and
//! the next target, the block behind it, is printed too.
//!
//! ```text
//! cargo run --release -p voxcast-bevy --example targeting
//! cargo run --release -p voxcast-bevy --example targeting -- --width 480 --height 270 --out-dir docs
//! ```
//!
//! The view is rendered on the CPU (`raycast_camera`, all threads): no GPU is needed. Exit
//! status: 0 when the picture was written, 1 when not, 2 for bad arguments.

use voxcast_testkit::shading;

use std::path::PathBuf;
use std::process::ExitCode;

use bevy_app::App;
use bevy_ecs::hierarchy::ChildOf;
use bevy_ecs::message::Messages;
use bevy_math::Quat;
use bevy_transform::components::Transform;
use clap::Parser;
use voxcast::glam::{IVec3, Vec3};
use voxcast::{
    Camera, RaycastOptions, RaycastOutcome, VoxelId, VoxelRaycastHit, WorldPos, raycast_camera,
};
use voxcast_bevy::{
    BlockEdited, BlockTarget, BlockTargeter, EditBlock, VoxcastPlugin, VoxelPosition, Voxels,
};
use voxcast_testkit::scene::{DIRT, GRASS, ORE, SAND, STONE, Terrain, WATER};

/// Command line.
#[derive(Debug, Parser)]
#[command(about = "Render the block-targeting view: crosshair, targeted block outlined")]
struct Args {
    /// Image width in pixels (16 to 4096).
    #[arg(long, default_value_t = 640, value_parser = clap::value_parser!(u32).range(16..=4096))]
    width: u32,
    /// Image height in pixels (16 to 4096).
    #[arg(long, default_value_t = 360, value_parser = clap::value_parser!(u32).range(16..=4096))]
    height: u32,
    /// Folder for targeting.png (created if missing).
    #[arg(long, default_value = ".")]
    out_dir: PathBuf,
}

/// Where the player stands (a column of the terrain) and where it looks.
const COLUMN: (i64, i64) = (62, 20);
const LOOK: Vec3 = Vec3::new(1.0, -0.45, 0.4);
/// Vertical field of view in degrees, and how far the view reaches (voxels).
const FOV: f32 = 70.0;
const VIEW_DISTANCE: f32 = 160.0;

fn main() -> ExitCode {
    let args = Args::parse();
    let terrain = Terrain {
        size: [192, 96, 192],
        ..Terrain::STANDARD
    };
    let mut app = App::new();
    app.add_plugins((bevy_transform::TransformPlugin, VoxcastPlugin))
        .insert_resource(Voxels::new(terrain.build()));

    // The player's feet on the ground, its eye 1.6 voxels above them. Bevy's forward is -Z:
    // the body turns (yaw) and the camera, its child at eye height, tilts (pitch).
    let (x, z) = COLUMN;
    let feet = VoxelPosition::new(
        WorldPos::new(
            x.into(),
            i128::from(terrain.eye_voxel_y(x, z)) - 1,
            z.into(),
        ),
        Vec3::new(0.5, 0.0, 0.5),
    );
    let look = LOOK.normalize();
    let yaw = Quat::from_rotation_y((-look.x).atan2(-look.z));
    let pitch = Quat::from_rotation_x(look.y.asin());
    let rotation = yaw * pitch;
    let player = app
        .world_mut()
        .spawn((feet, Transform::from_rotation(yaw)))
        .id();
    let camera_entity = app
        .world_mut()
        .spawn((
            BlockTargeter::default(),
            Transform::from_xyz(0.0, 1.6, 0.0).with_rotation(pitch),
            ChildOf(player),
        ))
        .id();
    // Where the targeter's eye is: the feet moved by the camera's height (in f32, the same
    // point as the voxel above with offset 0.6).
    let eye = VoxelPosition::new(
        WorldPos::new(x.into(), terrain.eye_voxel_y(x, z).into(), z.into()),
        Vec3::new(0.5, 0.6, 0.5),
    );
    app.update();

    let Some(target) = app.world().get::<BlockTarget>(camera_entity).copied() else {
        eprintln!("targeting: the player has no BlockTarget");
        return ExitCode::FAILURE;
    };
    println!(
        "player: eye at {}, looking {:.3?}, reach {}",
        show_point(eye.voxel, eye.offset),
        LOOK.normalize().to_array(),
        BlockTargeter::DEFAULT_REACH
    );
    println!("target: {}", describe(&target));

    // The crosshair's view: the camera looks exactly where the targeter does.
    let forward = rotation * Vec3::NEG_Z;
    let camera = match Camera::new(
        eye.voxel,
        eye.offset,
        forward,
        FOV,
        args.width,
        args.height,
        VIEW_DISTANCE,
    ) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("targeting: bad camera: {e}");
            return ExitCode::from(2);
        }
    };
    let view = match raycast_camera(
        &camera,
        app.world().resource::<Voxels>(),
        &RaycastOptions::default(),
    ) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("targeting: cannot render: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut pixels: Vec<[u8; 3]> = view
        .iter()
        .map(|o| shading::shade(o, VIEW_DISTANCE))
        .collect();
    if let Some(hit) = target.hit() {
        outline(&camera, &view, hit.voxel_pos, &mut pixels);
    }
    crosshair(&camera, &mut pixels);

    let path = args.out_dir.join("targeting.png");
    let written = std::fs::create_dir_all(&args.out_dir)
        .map_err(|e| format!("cannot create {}: {e}", args.out_dir.display()))
        .and_then(|()| {
            shading::write_png(
                &path,
                args.width,
                args.height,
                png::ColorType::Rgb,
                png::BitDepth::Eight,
                pixels.as_flattened(),
            )
        });
    if let Err(e) = written {
        eprintln!("targeting: {e}");
        return ExitCode::FAILURE;
    }
    println!("wrote {}", path.display());

    // Mine the block: the message is applied in the next frame, which then targets anew.
    if let Some(&aimed) = target.hit() {
        app.world_mut()
            .write_message(EditBlock::mine(camera_entity, aimed));
        app.update();
        let edits = app.world().resource::<Messages<BlockEdited>>();
        for edited in edits.iter_current_update_messages() {
            println!("mined: {:?}", edited.result);
        }
        if let Some(next) = app.world().get::<BlockTarget>(camera_entity) {
            println!("next target: {}", describe(next));
        }
    }
    ExitCode::SUCCESS
}

/// The target in one line: type, position, face, distance, where a block would go.
fn describe(target: &BlockTarget) -> String {
    match target.outcome {
        RaycastOutcome::Hit(VoxelRaycastHit {
            voxel_pos,
            face_normal,
            distance,
            voxel_type,
            ..
        }) => format!(
            "{} (id {}) at ({}, {}, {}), {} face, {distance:.2} voxels away; a placed block goes to {}",
            material(voxel_type),
            voxel_type.0,
            voxel_pos.x,
            voxel_pos.y,
            voxel_pos.z,
            face(face_normal),
            target.place_at.map_or_else(
                || "nowhere".to_owned(),
                |p| format!("({}, {}, {})", p.x, p.y, p.z)
            ),
        ),
        RaycastOutcome::Miss => "nothing in reach".to_owned(),
        RaycastOutcome::Unloaded { voxel_pos: at, .. } => format!("unloaded space at {at:?}"),
        RaycastOutcome::Invalid(e) => format!("none: {e}"),
    }
}

fn material(id: VoxelId) -> &'static str {
    match id {
        GRASS => "grass",
        DIRT => "dirt",
        STONE => "stone",
        SAND => "sand",
        WATER => "water",
        ORE => "ore",
        _ => "unknown",
    }
}

fn face(normal: IVec3) -> &'static str {
    match normal.to_array() {
        [0, 1, 0] => "top (+y)",
        [0, -1, 0] => "bottom (-y)",
        [1, 0, 0] => "+x",
        [-1, 0, 0] => "-x",
        [0, 0, 1] => "+z",
        [0, 0, -1] => "-z",
        _ => "no (the eye is inside it)",
    }
}

fn show_point(p: WorldPos, sub: Vec3) -> String {
    format!(
        "({} + {}, {} + {}, {} + {})",
        p.x, sub.x, p.y, sub.y, p.z, sub.z
    )
}

/// `p` relative to the camera's eye, in voxels (small numbers: the block is in reach).
fn relative(camera: &Camera, p: WorldPos, corner: Vec3) -> Vec3 {
    let d = |a: i128, b: i128| (a - b) as f32;
    Vec3::new(
        d(p.x, camera.position.x),
        d(p.y, camera.position.y),
        d(p.z, camera.position.z),
    ) + corner
        - camera.sub_offset
}

/// Where a point `rel` (relative to the eye) lands in the image, in pixels from the top left
/// (pixel centers at `.5`), and how far it is; `None` behind the eye.
fn project(camera: &Camera, rel: Vec3) -> Option<(f32, f32, f32)> {
    let depth = rel.dot(camera.forward);
    if depth < 0.05 {
        return None;
    }
    let sx = rel.dot(camera.right) / depth / camera.scale_x;
    let sy = rel.dot(camera.up) / depth / camera.scale_y;
    Some((
        (sx + 1.0) * 0.5 * camera.width as f32,
        (1.0 - sy) * 0.5 * camera.height as f32,
        rel.length(),
    ))
}

/// Draws the twelve edges of voxel `p`: two pixels wide and dark where nothing of the view
/// lies in front of them, one pixel wide and faint where something does (a wireframe that
/// shows the whole block).
fn outline(camera: &Camera, view: &[RaycastOutcome], p: WorldPos, pixels: &mut [[u8; 3]]) {
    const INK: [u8; 3] = [16, 16, 16];
    let corner = |i: u32| Vec3::new((i & 1) as f32, (i >> 1 & 1) as f32, (i >> 2 & 1) as f32);
    let (w, h) = (camera.width as i64, camera.height as i64);
    let faint = |c: [u8; 3]| c.map(|v| (u16::from(v) * 11 / 20 + u16::from(INK[0]) * 9 / 20) as u8);
    for a in 0..8u32 {
        for bit in [1, 2, 4] {
            if a & bit != 0 {
                continue;
            }
            let (from, to) = (
                relative(camera, p, corner(a)),
                relative(camera, p, corner(a | bit)),
            );
            let steps = 4 * (w + h);
            let mut done = std::collections::HashSet::new();
            for s in 0..=steps {
                let point = from.lerp(to, s as f32 / steps as f32);
                let Some((x, y, distance)) = project(camera, point) else {
                    continue;
                };
                let (px, py) = (x.floor() as i64, y.floor() as i64);
                let i = (py * w + px) as usize;
                // Behind a surface nearer than the edge (a little slack for the faces that
                // meet at it)?
                let hidden = (0..w).contains(&px)
                    && (0..h).contains(&py)
                    && view[i]
                        .hit()
                        .is_some_and(|hit| hit.distance < distance - 0.08);
                let pen: &[(i64, i64)] = if hidden {
                    &[(0, 0)]
                } else {
                    &[(0, 0), (1, 0), (0, 1)]
                };
                for &(dx, dy) in pen {
                    let (qx, qy) = (px + dx, py + dy);
                    if (0..w).contains(&qx) && (0..h).contains(&qy) && done.insert((qx, qy)) {
                        let q = (qy * w + qx) as usize;
                        pixels[q] = if hidden { faint(pixels[q]) } else { INK };
                    }
                }
            }
        }
    }
}

/// A white cross with a dark rim in the middle of the image.
fn crosshair(camera: &Camera, pixels: &mut [[u8; 3]]) {
    let (w, h) = (camera.width as i64, camera.height as i64);
    let (cx, cy) = (w / 2, h / 2);
    let arm = (h / 40).max(4);
    let mut paint = |x: i64, y: i64, c: [u8; 3]| {
        if (0..w).contains(&x) && (0..h).contains(&y) {
            pixels[(y * w + x) as usize] = c;
        }
    };
    for pass in [([30, 30, 30], 1), ([255, 255, 255], 0)] {
        let (colour, rim) = pass;
        for d in -arm - rim..=arm + rim {
            for t in -rim..=rim {
                paint(cx + d, cy + t, colour);
                paint(cx + t, cy + d, colour);
            }
        }
    }
}
