//! The shaded picture of `depth_image` and of voxcast-bevy's `targeting` example: a colour per
//! outcome, and PNG output.

use std::path::Path;

use crate::scene::{DIRT, GRASS, ORE, SAND, STONE, WATER};
use voxcast::glam::{IVec3, Vec3};
use voxcast::{RaycastOutcome, VoxelId};

/// The sky's colour: misses, and the fog that distance fades hits into.
pub const SKY: Vec3 = Vec3::new(0.62, 0.78, 0.95);

/// One pixel of the shaded image of the standard terrain.
pub fn shade(outcome: &RaycastOutcome, max: f32) -> [u8; 3] {
    shade_with(outcome, max, |id| match id {
        GRASS => Vec3::new(0.36, 0.62, 0.24),
        DIRT => Vec3::new(0.52, 0.37, 0.24),
        STONE => Vec3::new(0.55, 0.55, 0.57),
        SAND => Vec3::new(0.86, 0.80, 0.56),
        WATER => Vec3::new(0.16, 0.38, 0.78),
        ORE => Vec3::new(0.80, 0.55, 0.20),
        _ => Vec3::new(1.0, 0.0, 1.0),
    })
}

/// One pixel of a shaded image whose materials have the colours `base` gives: lit by the face
/// the ray entered, block edges traced up close, fog towards the sky with distance (`max`:
/// the camera's max distance); misses are sky.
pub fn shade_with(outcome: &RaycastOutcome, max: f32, base: impl Fn(VoxelId) -> Vec3) -> [u8; 3] {
    let Some(hit) = outcome.hit() else {
        return to_rgb(SKY);
    };
    let base = base(hit.voxel_type);
    let light = match hit.face_normal {
        IVec3 { y: 1, .. } | IVec3::ZERO => 1.0,
        IVec3 { x: 1 | -1, .. } => 0.8,
        IVec3 { z: 1 | -1, .. } => 0.65,
        _ => 0.5,
    };
    // Block outlines up close, fading out before they would alias into noise.
    let edge = hit.hit_uv.min(1.0 - hit.hit_uv).min_element();
    let outline = if edge < 0.05 && hit.face_normal != IVec3::ZERO {
        1.0 - 0.25 * (1.0 - hit.distance / 96.0).max(0.0)
    } else {
        1.0
    };
    let fog = 1.0 - (-2.5 * hit.distance / max).exp();
    to_rgb((base * light * outline).lerp(SKY, fog))
}

/// A colour with components in `[0, 1]` (clamped) as 8-bit RGB.
pub fn to_rgb(c: Vec3) -> [u8; 3] {
    let c = (c.clamp(Vec3::ZERO, Vec3::ONE) * 255.0).round();
    [c.x as u8, c.y as u8, c.z as u8]
}

/// Writes `data` (rows from the top) as a PNG of `width × height` pixels of `color` and
/// `depth`, best compression.
pub fn write_png(
    path: &Path,
    width: u32,
    height: u32,
    color: png::ColorType,
    depth: png::BitDepth,
    data: &[u8],
) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| format!("cannot write {}: {e}", path.display());
    let file = std::fs::File::create(path).map_err(|e| fail(&e))?;
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), width, height);
    encoder.set_color(color);
    encoder.set_depth(depth);
    encoder.set_compression(png::Compression::High);
    let mut writer = encoder.write_header().map_err(|e| fail(&e))?;
    writer.write_image_data(data).map_err(|e| fail(&e))?;
    writer.finish().map_err(|e| fail(&e))
}

/// The depth picture's pixel: 16-bit grey, `1 + 65534 · (1 - sqrt(d / max))` for a hit at `d`
/// (near is bright; every hit at least 1), 0 for anything else.
#[must_use]
pub fn depth_value(outcome: &RaycastOutcome, max: f32) -> u16 {
    outcome.hit().map_or(0, |h| {
        (1.0 + 65534.0 * (1.0 - (h.distance / max).clamp(0.0, 1.0).sqrt())).round() as u16
    })
}

/// Writes `<prefix>-shaded.png` (RGB, [`shade_with`] of `base`, fog over `fog_distance`) and
/// `<prefix>-depth.png` (16-bit, [`depth_value`] over `max`) of `image`, `width × height`
/// pixels row by row from the top, into `dir` (made if missing); prints each path.
pub fn write_pictures(
    dir: &Path,
    prefix: &str,
    (width, height): (u32, u32),
    image: &[RaycastOutcome],
    (fog_distance, max): (f32, f32),
    base: impl Fn(VoxelId) -> Vec3,
) -> Result<(), String> {
    let shaded: Vec<u8> = image
        .iter()
        .flat_map(|o| shade_with(o, fog_distance, &base))
        .collect();
    let depth: Vec<u8> = image
        .iter()
        .flat_map(|o| depth_value(o, max).to_be_bytes())
        .collect();
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for (name, colour, bits, data) in [
        ("shaded", png::ColorType::Rgb, png::BitDepth::Eight, &shaded),
        (
            "depth",
            png::ColorType::Grayscale,
            png::BitDepth::Sixteen,
            &depth,
        ),
    ] {
        let out = dir.join(format!("{prefix}-{name}.png"));
        write_png(&out, width, height, colour, bits, data)?;
        println!("wrote {}", out.display());
    }
    Ok(())
}
