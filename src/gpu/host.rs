//! The host's share of a batch: validating and splitting rays, answering those the GPU need
//! not see, sorting the rest for coherence; which cameras the shader reproduces exactly.

use bytemuck::Zeroable;
use rayon::iter::{
    IndexedParallelIterator, IntoParallelRefIterator, IntoParallelRefMutIterator, ParallelIterator,
};
use rayon::prelude::ParallelSliceMut;

use crate::camera::Camera;
use crate::cpu_ref::LONG_RAY;
use crate::gpu::window::Upload;
use crate::gpu::{GpuRay, GpuRaycaster, GpuWorld, RAY_NEGATIVE_SHIFT};
use crate::ray::{RaycastOptions, RaycastOutcome, VoxelRay};

impl GpuRaycaster {
    /// The host's share of a batch of rays, on all threads: validation, the i128 split and
    /// clipping. Rays answered here go straight to `out` (as `convert` of their outcome); the
    /// others are staged at their index, and sorted for coherence (neighbouring invocations
    /// then get rays from the same chunk going the same way, so they walk the same chunks and
    /// branch alike). Returns the staging (upload order first: the `uploaded` rays that go to
    /// the GPU), how many those are, and whether every one of them is at least
    /// [`LONG_RAY`] long (for the choice of walk).
    pub(super) fn prepare_rays<T: Send>(
        &self,
        world: &GpuWorld,
        rays: &[VoxelRay],
        opts: &RaycastOptions,
        conservative: bool,
        out: &mut [T],
        convert: fn(RaycastOutcome) -> T,
    ) -> (HostStaging, usize, bool) {
        let mut staging = self.shared.take_staging();
        let n = rays.len();
        if staging.rays.len() < n {
            staging.rays.resize(n, GpuRay::zeroed());
        }
        staging.order.clear();
        staging.order.resize(n, (NOT_UPLOADED, 0));
        let sort = n >= SORT_MIN_RAYS;
        let short: usize = out
            .par_iter_mut()
            .zip(rays.par_iter())
            .zip(
                staging.rays[..n]
                    .par_iter_mut()
                    .zip(staging.order.par_iter_mut()),
            )
            .enumerate()
            .with_min_len(4096)
            .map(|(i, ((o, ray), (g, key)))| match ray.prepare() {
                Err(e) => {
                    *o = convert(RaycastOutcome::Invalid(e));
                    0
                }
                Ok(None) => {
                    *o = convert(RaycastOutcome::Miss);
                    0
                }
                Ok(Some(p)) => match world.window.upload_ray(&p, opts, conservative) {
                    Upload::Gpu(r) => {
                        *g = r;
                        *key = (if sort { coherence_key(&r) } else { i as u64 }, i as u32);
                        usize::from(r.max_distance < LONG_RAY)
                    }
                    Upload::Answered(a) => {
                        *o = convert(a);
                        0
                    }
                },
            })
            .sum();
        // Rays answered on the host sort last (their key is `NOT_UPLOADED`).
        staging.order.par_sort_unstable_by_key(|&(key, _)| key);
        let uploaded = staging
            .order
            .partition_point(|&(key, _)| key != NOT_UPLOADED);
        // Where each ray went in the upload order: the answers are decoded in the caller's
        // order (written one after another, on all threads) from it.
        staging.position.clear();
        staging.position.resize(n, NOT_UPLOADED_AT);
        for (j, &(_, i)) in staging.order[..uploaded].iter().enumerate() {
            staging.position[i as usize] = j as u32;
        }
        // The rays in upload order, gathered on all threads (copied whole into the mapped
        // upload buffers later).
        let HostStaging {
            rays: staged,
            order,
            upload,
            ..
        } = &mut staging;
        upload.clear();
        order[..uploaded]
            .par_iter()
            .with_min_len(4096)
            .map(|&(_, i)| staged[i as usize])
            .collect_into_vec(upload);
        (staging, uploaded, short == 0)
    }
}

/// `camera` as the shader gets it (the eye and max distance as [`VoxelRay::new`] stores them),
/// when the shader's ray for every pixel (`cast_camera` in `shaders/dda.wgsl`) is exactly
/// [`Camera::ray`] of that pixel on every conforming GPU: for every camera [`Camera::new`] makes
/// with a field of view from about 0.0001° up to about 179.99° at 16:9 and no vector component
/// below 2^-56 other than 0. `None` for others, and for a camera edited into one where that
/// may fail: an eye offset outside `[0, 1)`, an invalid max distance, or vectors that could
/// make a pixel direction zero, non-finite or not unit.
pub(super) fn shader_camera(c: &Camera) -> Option<Camera> {
    let probe = VoxelRay::new(c.position, c.sub_offset, glam::Vec3::X, c.max_distance).ok()?;
    if probe.origin != c.position || probe.sub_offset != c.sub_offset {
        return None;
    }
    // A pixel's direction before normalising is `forward + right·sx + up·sy` with
    // `|sx| < |scale_x|` and `|sy| < |scale_y|`, computed in f32 with four roundings per
    // component, each off by at most 2^-24·(1 + spread): under 0.05 in all for a spread up to
    // 1e5 (a field of view up to about 179.99° at 16:9). So the vector is finite, its squared
    // length too, and at least 0.999 - 0.25 - 0.05 > 0.7 long along `forward`, and `pixel_dir`
    // makes it unit to within a few ulps, which `VoxelRay::new` keeps as it is.
    let finite = [c.forward, c.right, c.up].iter().all(|v| v.is_finite())
        && c.scale_x.is_finite()
        && c.scale_y.is_finite();
    // In f64, where the squares of f32 values neither overflow nor underflow.
    let [f, r, u] = [c.forward, c.right, c.up].map(|v| v.as_dvec3());
    let [sx, sy] = [c.scale_x, c.scale_y].map(|s| f64::from(s).abs());
    let off_axis = sx * f.dot(r).abs() + sy * f.dot(u).abs();
    let spread = sx * r.length() + sy * u.length();
    (finite
        && no_subnormal_steps(c)
        && (c.forward.length_squared() - 1.0).abs() <= 1e-3
        && off_axis <= 0.25
        && spread <= 1e5)
        .then_some(Camera {
            sub_offset: probe.sub_offset,
            max_distance: probe.max_distance,
            ..*c
        })
}

/// Whether no f32 value `camera_dir` computes can be subnormal (a GPU may flush those to
/// zero, the CPU keeps them) except squares too small to change the squared length, and
/// pixel indices convert to f32 exactly. With `px < 2^24`, `(px + 0.5) · 2/width - 1` is 0 or
/// at least 2^-24 in size, so `sx` and `sy` are 0 or at least 2^-44 for scales of at least
/// 2^-20; with every vector component 0 or at least 2^-56, each product is 0 or at least
/// 2^-100 and every sum a multiple of 2^-123, so 0 or normal. A subnormal square is absorbed
/// by the squared length (at least 0.49, `shader_camera`), and a subnormal unit component is
/// flushed to 0 on both sides (`VoxelRay::new`, `prepare_axis`).
fn no_subnormal_steps(c: &Camera) -> bool {
    const MIN_COMPONENT: f32 = 1.0 / (1u64 << 56) as f32;
    const SCALE: std::ops::RangeInclusive<f32> = 1.0 / (1 << 20) as f32..=(1 << 20) as f32;
    let component_ok = |x: f32| x == 0.0 || x.abs() >= MIN_COMPONENT;
    [c.forward, c.right, c.up]
        .iter()
        .all(|v| v.to_array().into_iter().all(component_ok))
        && SCALE.contains(&c.scale_x.abs())
        && SCALE.contains(&c.scale_y.abs())
        && c.width <= 1 << 24
        && c.height <= 1 << 24
}

/// Rays (or host-built camera pixels) a blocking call prepares at a time: larger batches are
/// cast in bands of this many, so that the host's working buffers (116 bytes a ray,
/// `HostStaging`, for two bands at once) stay near 250 MB however large the batch.
pub(super) const HOST_BAND: usize = 1 << 20;

/// Batches at least this large are sorted for coherence before upload.
const SORT_MIN_RAYS: usize = 4096;

/// The sort key of a ray answered on the host (no [`coherence_key`] is this large).
const NOT_UPLOADED: u64 = u64::MAX;

/// The upload position of a ray answered on the host.
pub(super) const NOT_UPLOADED_AT: u32 = u32::MAX;

/// The host's working buffers for a batch of rays ([`GpuRaycaster::prepare_rays`]), kept in
/// the raycaster's pool between batches: each prepared ray at its index, and the upload order
/// with sort keys.
#[derive(Debug, Default)]
pub(super) struct HostStaging {
    pub(super) rays: Vec<GpuRay>,
    pub(super) order: Vec<(u64, u32)>,
    /// Per ray, its place in the upload order, or [`NOT_UPLOADED_AT`].
    pub(super) position: Vec<u32>,
    /// The uploaded rays in upload order.
    pub(super) upload: Vec<GpuRay>,
}

impl HostStaging {
    /// Bytes allocated.
    pub(super) fn bytes(&self) -> u64 {
        (self.rays.capacity() * size_of::<GpuRay>()
            + self.order.capacity() * size_of::<(u64, u32)>()
            + self.position.capacity() * size_of::<u32>()
            + self.upload.capacity() * size_of::<GpuRay>()) as u64
    }
}

/// Sort key: direction octant, then the start chunk in Morton order.
fn coherence_key(r: &GpuRay) -> u64 {
    let octant = u64::from((r.flags >> RAY_NEGATIVE_SHIFT) & 7);
    let spread = |v: i32| {
        // 17 bits of the chunk coordinate, each followed by two zero bits.
        let mut x = u64::from((v >> 5) as u32 & 0x1_FFFF);
        x = (x | x << 32) & 0x001F_0000_0000_FFFF;
        x = (x | x << 16) & 0x001F_0000_FF00_00FF;
        x = (x | x << 8) & 0x100F_00F0_0F00_F00F;
        x = (x | x << 4) & 0x10C3_0C30_C30C_30C3;
        (x | x << 2) & 0x1249_2492_4924_9249
    };
    octant << 61 | spread(r.voxel[0]) | spread(r.voxel[1]) << 1 | spread(r.voxel[2]) << 2
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coords::WorldPos;

    #[test]
    fn coherence_key_interleaves_chunk_coordinates() {
        let key = |voxel: [i32; 3], negative: u32| {
            coherence_key(&GpuRay {
                voxel,
                flags: negative << RAY_NEGATIVE_SHIFT,
                ..GpuRay::zeroed()
            })
        };
        assert_eq!(key([0, 0, 0], 0), 0);
        // Chunk x bit k is key bit 3k, y's 3k + 1, z's 3k + 2; the octant the top three bits.
        assert_eq!(key([32, 0, 0], 0), 1);
        assert_eq!(key([0, 64, 0], 0), 1 << 4);
        assert_eq!(key([0, 0, 32 << 16], 0), 1 << 50);
        assert_eq!(key([31, 31, 31], 7), 7 << 61);
        // Only 17 bits of each chunk coordinate count: -1 is 0x1FFFF.
        assert_eq!(key([-1, 0, 0], 0), 0x1249_2492_4924_9249 & ((1 << 51) - 1));
    }

    /// Cameras made by `Camera::new` and `Camera::with_up` go to the shader (`raycast_camera`
    /// would otherwise build every pixel's ray on the host, with the same outcomes, so the
    /// parity tests alone cannot tell); cameras edited into ones the shader may not reproduce
    /// stay on the host.
    #[test]
    fn shader_camera_takes_made_cameras_and_refuses_edited_ones() {
        let eye = WorldPos::new(-5, i128::MAX - 40, 1 << 100);
        let mut made = Vec::new();
        for fov in [0.01, 1.0, 60.0, 120.0, 179.0, 179.99] {
            // What the docs promise: up to about 179.99° at 16:9; wider images at narrower
            // fields of view.
            let sizes: &[(u32, u32)] = if fov <= 120.0 {
                &[(1, 1), (16, 9), (1920, 1080), (9, 16), (4000, 1)]
            } else {
                &[(1, 1), (16, 9), (1920, 1080), (9, 16)]
            };
            for &(w, h) in sizes {
                for (forward, up) in [
                    (glam::Vec3::new(0.15, -0.28, 1.0), glam::Vec3::Y),
                    (glam::Vec3::NEG_Y, glam::Vec3::Z),
                    (
                        glam::Vec3::new(-3.0, 1e-3, 2.0),
                        glam::Vec3::new(0.3, 1.0, -0.2),
                    ),
                ] {
                    let sub = glam::Vec3::new(0.0, 0.999_999_9, 0.5);
                    made.push(Camera::with_up(eye, sub, forward, up, fov, w, h, 1024.0));
                }
            }
        }
        made.push(Camera::new(
            eye,
            glam::Vec3::splat(7.25),
            glam::Vec3::X,
            60.0,
            8,
            8,
            0.0,
        ));
        for cam in made {
            let cam = cam.expect("a valid camera");
            let shader = shader_camera(&cam);
            assert_eq!(
                shader,
                Some(cam),
                "fov scale {} x {}",
                cam.scale_x,
                cam.scale_y
            );
        }
        let good = Camera::new(
            eye,
            glam::Vec3::splat(0.5),
            glam::Vec3::Z,
            60.0,
            64,
            36,
            256.0,
        )
        .expect("a valid camera");
        type Edit = (&'static str, fn(&mut Camera));
        let edits: [Edit; 6] = [
            ("eye offset outside [0, 1)", |c| c.sub_offset.x = 1.5),
            ("negative max distance", |c| c.max_distance = -1.0),
            ("NaN forward", |c| c.forward.y = f32::NAN),
            ("forward not unit", |c| c.forward *= 2.0),
            ("spread too wide", |c| c.scale_x = 1e6),
            ("right along forward", |c| c.right = c.forward),
        ];
        for (what, edit) in edits {
            let mut cam = good;
            edit(&mut cam);
            assert_eq!(shader_camera(&cam), None, "{what}");
        }
    }
}
