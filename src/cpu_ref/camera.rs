//! Camera images on the CPU, tile by tile: before its rays are cast, a tile of pixels finds how
//! far all of its rays certainly travel through air (`air_before`), and each ray then starts
//! there in one exact move instead of skipping the air above the ground box by box. The
//! answers are those of [`voxel_raycast_with`] for each pixel's ray, bit for bit.

use rayon::iter::{IndexedParallelIterator, ParallelIterator};
use rayon::prelude::ParallelSliceMut;

use crate::camera::{Camera, CameraError};
use crate::cpu_ref::Cast;
use crate::cpu_ref::sweep::Shared;
use crate::ray::{PreparedRay, RaycastOptions, RaycastOutcome, SharedStart};
use crate::world::VoxelWorld;

/// Tile edge in pixels: the rays of an `8×8` tile stay within a few voxels of each other for
/// hundreds of voxels with any usual field of view.
const TILE: u32 = 8;

/// Casts the ray of every pixel of `camera` (see [`Camera::ray`]), row by row from the top:
/// `width × height` outcomes, each exactly what [`voxel_raycast_with`](crate::cpu_ref::voxel_raycast_with) answers for that pixel's
/// ray, on rayon's threads. Faster than casting [`Camera::rays`] one by one where rays cross
/// open air before they reach anything (a camera over terrain; `BENCHMARKS.md` has the
/// numbers): the rays of each `8×8` tile of pixels first cross
/// the air above the ground's column tops together (under [`UnloadedPolicy::Air`](crate::UnloadedPolicy::Air); under
/// `Stop`, and for `per_voxel`, each ray walks alone). A pixel whose ray is invalid (only
/// possible for a hand-edited camera) gets [`RaycastOutcome::Invalid`]; the others are
/// unaffected.
///
/// # Errors
/// [`CameraError::EmptyImage`] for a width or height of 0, and
/// [`CameraError::ImageTooLarge`] when `width × height` outcomes do not fit in host memory
/// (both only possible for a hand-edited camera; nothing is cast then).
pub fn raycast_camera(
    camera: &Camera,
    world: &VoxelWorld,
    opts: &RaycastOptions,
) -> Result<Vec<RaycastOutcome>, CameraError> {
    let mut out = Vec::new();
    raycast_camera_rows_into(camera, 0..camera.height, world, opts, &mut out)?;
    Ok(out)
}

/// [`raycast_camera`] into `out`, which is cleared and refilled (its capacity reused from one
/// frame to the next).
///
/// # Errors
/// As [`raycast_camera`]; `out` is left empty.
pub fn raycast_camera_into(
    camera: &Camera,
    world: &VoxelWorld,
    opts: &RaycastOptions,
    out: &mut Vec<RaycastOutcome>,
) -> Result<(), CameraError> {
    raycast_camera_rows_into(camera, 0..camera.height, world, opts, out)
}

/// [`raycast_camera`] for the image rows `rows` only (row 0 at the top; rows past the image's
/// height continue the image plane, as [`Camera::pixel_dir`] does): `rows.len() × width`
/// outcomes into `out`, cleared first. For rendering in bands (a progress bar, a frame budget).
/// Tiles start at `rows.start`, so bands whose heights are multiples of 8 rows cast as fast as
/// the whole image; an empty range gives no outcomes.
///
/// # Errors
/// As [`raycast_camera`]; `out` is left empty.
pub fn raycast_camera_rows_into(
    camera: &Camera,
    rows: std::ops::Range<u32>,
    world: &VoxelWorld,
    opts: &RaycastOptions,
    out: &mut Vec<RaycastOutcome>,
) -> Result<(), CameraError> {
    out.clear();
    if camera.width == 0 || camera.height == 0 {
        return Err(CameraError::EmptyImage);
    }
    let width = camera.width as usize;
    let pixels = u64::from(camera.width) * u64::from(rows.end.saturating_sub(rows.start));
    let len = usize::try_from(pixels).map_err(|_| CameraError::ImageTooLarge(pixels))?;
    out.try_reserve(len)
        .map_err(|_| CameraError::ImageTooLarge(pixels))?;
    out.resize(len, RaycastOutcome::Miss);
    if len == 0 {
        return Ok(());
    }
    // A hand-edited camera whose eye is bad: each pixel's ray reports its own first error.
    let from = SharedStart::new(camera.position, camera.sub_offset).ok();
    Cast::for_batch(world, opts, len, |cast| {
        out.par_chunks_mut(width * TILE as usize)
            .enumerate()
            .for_each(|(band, band_rows)| {
                let y0 = rows.start + band as u32 * TILE;
                let Some(from) = &from else {
                    for (i, o) in band_rows.iter_mut().enumerate() {
                        let (px, dy) = ((i % width) as u32, (i / width) as u32);
                        *o = match camera.ray(px, y0 + dy) {
                            Ok(ray) => cast.unprepared(&ray),
                            Err(e) => RaycastOutcome::Invalid(e),
                        };
                    }
                    return;
                };
                let mut shared = Shared::default();
                for x0 in (0..camera.width).step_by(TILE as usize) {
                    cast_tile(camera, from, cast, [x0, y0], band_rows, &mut shared);
                }
            });
    });
    Ok(())
}

/// Casts the tile of pixels from `corner` (at most `TILE × TILE`, cut at the image's edges)
/// into `rows`, the image rows from the tile's first.
fn cast_tile(
    camera: &Camera,
    from: &SharedStart,
    cast: &Cast<'_>,
    corner: [u32; 2],
    rows: &mut [RaycastOutcome],
    shared: &mut Shared,
) {
    let width = camera.width as usize;
    let w = TILE.min(camera.width - corner[0]);
    let h = (rows.len() / width) as u32;
    let mut rays: Vec<(usize, PreparedRay)> = Vec::with_capacity((TILE * TILE) as usize);
    for dy in 0..h {
        for dx in 0..w {
            let i = dy as usize * width + (corner[0] + dx) as usize;
            let direction = camera.pixel_dir(corner[0] + dx, corner[1] + dy);
            match from.prepare(direction, camera.max_distance) {
                Err(e) => rows[i] = RaycastOutcome::Invalid(e),
                Ok(None) => rows[i] = RaycastOutcome::Miss,
                Ok(Some(p)) => rays.push((i, p)),
            }
        }
    }
    shared.cast_prepared(from, &rays, cast, |i, o| rows[i] = o);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu_ref::cast_ray;
    use crate::cpu_ref::sweep::air_before;
    use crate::world::VoxelId;
    use voxcast_testkit::scene::Terrain;

    /// The tiles must actually find air to cross, or `raycast_camera` would be correct but no
    /// faster than casting ray by ray (the parity tests could not tell).
    #[test]
    fn tiles_over_terrain_cross_air_together() {
        let t = Terrain {
            size: [256, 128, 256],
            seed: 7,
        };
        let world = crate::world::world_of(|f| t.for_each_voxel(f));
        // The testkit's camera, as this crate's type.
        let c = t.camera(64, 36);
        let cam = Camera {
            position: crate::coords::WorldPos::new(c.position.x, c.position.y, c.position.z),
            sub_offset: c.sub_offset,
            forward: c.forward,
            right: c.right,
            up: c.up,
            width: c.width,
            height: c.height,
            scale_x: c.scale_x,
            scale_y: c.scale_y,
            max_distance: c.max_distance,
        };
        let tile = |x: u32, y: u32| -> Vec<PreparedRay> {
            (y..y + TILE)
                .flat_map(|py| (x..x + TILE).map(move |px| (px, py)))
                .filter_map(|(px, py)| cam.ray(px, py).ok()?.prepare().ok()?)
                .collect()
        };
        let eye = SharedStart::new(cam.position, cam.sub_offset).expect("a valid eye");
        // The center tile looks at the ground tens of voxels away.
        let center = tile(28, 16);
        let t_air = air_before(&world, &eye, center.iter());
        let nearest = center
            .iter()
            .filter_map(|r| {
                let o = cast_ray(r, &world, &RaycastOptions::default(), false, 0.0);
                o.hit().map(|h| h.distance)
            })
            .fold(f32::INFINITY, f32::min);
        assert!(nearest.is_finite(), "the center tile sees the ground");
        assert!(
            t_air > 20.0 && t_air <= nearest,
            "air crossed together up to {t_air}, nearest hit {nearest}"
        );
        // A tile in a solid voxel has no air.
        let mut buried = world.clone();
        buried.set_voxel(cam.position, VoxelId(1));
        assert_eq!(air_before(&buried, &eye, center.iter()), 0.0);
        assert_eq!(air_before(&world, &eye, [].iter()), 0.0);
    }
}
