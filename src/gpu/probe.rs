//! The self-check a [`GpuRaycaster`] runs on its device when it is created: a few thousand rays
//! and a small camera image, each answer compared with the CPU reference.

use crate::camera::Camera;
use crate::coords::WorldPos;
use crate::cpu_ref::voxel_raycast_with;
use crate::gpu::{GpuError, GpuRaycaster, GpuWorld};
use crate::ray::{RaycastOptions, RaycastOutcome, VoxelRay};
use crate::scene::{SplitMix64, Terrain};

/// Whether a [`GpuRaycaster`] may be created on a device whose self-check differs from the CPU
/// reference (see [`GpuRaycaster::self_check`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SelfCheck {
    /// Creation fails with [`GpuError::SelfCheckFailed`] (the default).
    #[default]
    Required,
    /// Creation succeeds: the raycaster's answers may differ from the CPU reference's.
    /// [`GpuRaycaster::self_check`] and [`GpuRaycaster::adapter_summary`] say how.
    AllowUnverified,
}

/// How a [`GpuRaycaster`] is created ([`GpuRaycaster::new_with`],
/// [`GpuRaycaster::from_device_with`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuConfig {
    /// What a failed self-check does.
    pub self_check: SelfCheck,
    /// Where batches stage their rays and answers.
    pub dispatch_memory: DispatchMemory,
}

/// Where a batch's rays and answers live on their way to and from the shader.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum DispatchMemory {
    /// Shared with the host on a device that is the CPU itself (lavapipe, WARP, SwiftShader)
    /// and offers `wgpu::Features::MAPPABLE_PRIMARY_BUFFERS`: the shader reads the rays from
    /// the buffer the host writes them into and the host reads the answers from the buffer the
    /// shader writes, with no copies between them. Elsewhere as [`DispatchMemory::Staged`].
    #[default]
    Auto,
    /// Written into mapped buffers and copied into the device's storage buffers, and back:
    /// what a GPU with its own memory needs.
    Staged,
}

/// What the self-check at creation found ([`GpuRaycaster::self_check`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SelfCheckReport {
    /// Rays cast (uploaded from the host), each compared with the CPU reference.
    pub rays: usize,
    /// Pixels of the camera image made in the shader, each compared likewise.
    pub pixels: usize,
    /// Wall time of the check, in seconds: world upload, both batches and the CPU reference.
    pub seconds: f64,
    /// The first answer that differs from the CPU reference (the query and both answers), or
    /// `None` when every answer matches under the parity contract.
    pub difference: Option<String>,
}

impl SelfCheckReport {
    /// Whether every answer matched the CPU reference.
    #[must_use]
    pub fn passed(&self) -> bool {
        self.difference.is_none()
    }
}

impl std::fmt::Display for SelfCheckReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = format!("{} rays and {} camera pixels", self.rays, self.pixels);
        match &self.difference {
            None => write!(f, "exact: {what} match the CPU reference"),
            Some(d) => write!(f, "NOT EXACT: of {what}, {d}"),
        }
    }
}

/// The probe's world: a small terrain (caves, water, ore) of 2 × 1 × 2 chunks.
const PROBE_TERRAIN: Terrain = Terrain {
    size: [64, 32, 64],
    seed: 0x5E1F_C4EC,
};
/// Rays uploaded from the host.
const PROBE_RAYS: usize = 3000;
/// The camera image made in the shader.
const PROBE_IMAGE: (u32, u32) = (48, 27);

/// Casts the probe's rays and camera on `gpu` and compares every answer with the CPU
/// reference. The rays start anywhere in the terrain (on voxel faces and edges too) in every
/// direction, also along axes and diagonals; the camera looks down across the terrain at an
/// odd angle and field of view, so that its pixels' directions (made in the shader with
/// divisions and a root) are rarely round numbers.
pub(super) fn run(gpu: &GpuRaycaster) -> Result<SelfCheckReport, GpuError> {
    let started = std::time::Instant::now();
    let world = PROBE_TERRAIN.build();
    let on_gpu = GpuWorld::from_world(gpu, &world)?;
    let opts = RaycastOptions::default();
    let mut rng = SplitMix64::new(0x9E37_79B9);
    let [sx, sy, sz] = PROBE_TERRAIN.size.map(u64::from);
    let offsets = [0.0, 0.5, 0.25];
    let rays: Vec<VoxelRay> = (0..PROBE_RAYS)
        .filter_map(|i| {
            let origin = WorldPos::new(
                rng.below(sx).into(),
                rng.below(sy).into(),
                rng.below(sz).into(),
            );
            // Every fourth ray starts on a face, edge or corner, every eighth goes along an
            // axis or a diagonal.
            let sub = if i % 4 == 0 {
                glam::Vec3::from_array([0, 1, 2].map(|_| offsets[rng.below(3) as usize]))
            } else {
                glam::Vec3::new(rng.next_f32(), rng.next_f32(), rng.next_f32())
            };
            let dir = if i % 8 == 1 {
                glam::Vec3::from_array([0, 1, 2].map(|_| rng.below(3) as f32 - 1.0))
            } else {
                rng.unit_vector()
            };
            let dir = if dir == glam::Vec3::ZERO {
                glam::Vec3::Y
            } else {
                dir
            };
            VoxelRay::new(origin, sub, dir, 4.0 + rng.next_f32() * 60.0).ok()
        })
        .collect();
    let answers = gpu.raycast(&on_gpu, &rays, &opts)?;
    let mut difference = None;
    for (ray, got) in rays.iter().zip(&answers) {
        let want = voxel_raycast_with(ray, &world, &opts);
        if !want.matches(got) {
            difference = Some(format!(
                "ray {ray:?}: the CPU gives {want:?}, the GPU {got:?}"
            ));
            break;
        }
    }
    let (w, h) = PROBE_IMAGE;
    let camera = Camera::with_up(
        WorldPos::new(19, 28, 7),
        glam::Vec3::new(0.3, 0.7, 0.1),
        glam::Vec3::new(0.31, -0.47, 0.83),
        glam::Vec3::new(0.05, 1.0, -0.02),
        71.3,
        w,
        h,
        96.0,
    )
    .map_err(|e| GpuError::Internal(format!("the self-check's camera: {e}")))?;
    let pixels = gpu.raycast_camera(&on_gpu, &camera, &opts)?;
    if difference.is_none() {
        for (i, got) in pixels.iter().enumerate() {
            let (px, py) = (i as u32 % w, i as u32 / w);
            let want = camera
                .ray(px, py)
                .map_or_else(RaycastOutcome::Invalid, |r| {
                    voxel_raycast_with(&r, &world, &opts)
                });
            if !want.matches(got) {
                difference = Some(format!(
                    "camera pixel ({px}, {py}) of {camera:?}: the CPU gives {want:?}, the GPU {got:?}"
                ));
                break;
            }
        }
    }
    Ok(SelfCheckReport {
        rays: rays.len(),
        pixels: pixels.len(),
        seconds: started.elapsed().as_secs_f64(),
        difference,
    })
}
