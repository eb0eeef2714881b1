//! Sensors on the GPU: a rig uploaded once ([`GpuSensorRig`]), then every ray of it from every
//! agent's pose in one batch, each ray made in the shader exactly as [`SensorPose::ray`] makes
//! it (32 bytes up an agent, a word or a whole answer down a ray); agents whose pose lies
//! outside the window are cast from rays built on the host; and what collects the answers.

use std::sync::Arc;

use bytemuck::{Pod, Zeroable};

use rayon::prelude::*;

use crate::cpu_ref::LONG_RAY;
use crate::gpu::decode::decode;
use crate::gpu::device::Device;
use crate::gpu::error::{GpuError, device_error};
use crate::gpu::flight::Upload;
use crate::gpu::layout::{Access, Entry, GpuHit, bind, option_flags, wire};
use crate::gpu::pending::{Collect, Joined, Launch, Leg, PendingBatch};
use crate::gpu::query::{Query, sealed::Sealed};
use crate::gpu::rays::{RayAnswers, RayUpload, ray_leg};
use crate::gpu::window::Window;
use crate::ray::{RaycastOptions, RaycastOutcome, VoxelRay};
use crate::sensors::{SensorPose, SensorReadings, SensorRig};

/// `cast_sensors`: the rays of a sensor rig from agents' poses (`shaders/sensors.wgsl`): the
/// poses and the rig in, the rays' words or answers out.
pub(super) const ENTRY: Entry = Entry {
    name: "cast_sensors",
    input: bind(11, "poses", Access::Read),
    extra: Some(bind(12, "rig", Access::Read)),
    output: bind(13, "sensed", Access::ReadWrite),
    reads_input: true,
    reads_shapes: true,
    structs: &[wire::<GpuPose>("GpuPose")],
    constants: &[],
    shader_only: &[],
};

/// One agent's sensor pose as the shader reads it (`GpuPose` in `shaders/sensors.wgsl`): 32
/// bytes, the voxel window-relative, the rotation packed (`src/sensors.rs`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(super) struct GpuPose {
    pub(super) voxel: [i32; 3],
    pub(super) rotation_lo: u32,
    pub(super) sub: [f32; 3],
    pub(super) rotation_hi: u32,
}

/// A [`SensorRig`] in GPU memory (20 bytes a ray, uploaded once by
/// [`GpuRaycaster::upload_rig`](crate::gpu::GpuRaycaster::upload_rig)), for the sensor calls
/// of the raycaster that uploaded it, on any of its worlds.
#[derive(Debug)]
pub struct GpuSensorRig {
    buffer: wgpu::Buffer,
    /// The rig's rays, as the host makes them for agents outside the window.
    rig: SensorRig,
    device: Arc<Device>,
}

impl Drop for GpuSensorRig {
    fn drop(&mut self) {
        // Cached bind groups would keep the buffer alive.
        self.device.bind_groups.forget(&[&self.buffer]);
    }
}

impl GpuSensorRig {
    /// `rig` uploaded on `device`: its rays in the order [`coherent_order`] gives (`[x, y, z,
    /// max]`, 16 bytes each), then each one's index in the rig (4 bytes each), so that
    /// neighbouring invocations of an agent walk in neighbouring directions.
    pub(super) fn new(device: &Arc<Device>, rig: &SensorRig) -> Result<Self, GpuError> {
        let rays = rig.words();
        let order = coherent_order(rays);
        let mut words: Vec<u32> = order
            .iter()
            .flat_map(|&k| rays[k as usize].map(f32::to_bits))
            .collect();
        words.extend(&order);
        let bytes = size_of_val(&words[..]).next_multiple_of(16).max(16) as u64;
        let wgpu_device = &device.wgpu;
        let scope = wgpu_device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let buffer = wgpu_device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("sensor rig"),
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        if let Some(e) = crate::gpu::error::error_now(scope) {
            return Err(device_error(e));
        }
        if !words.is_empty() {
            words.resize(bytes as usize / 4, 0);
            // Through the courier: before the next batch.
            device
                .courier
                .write(&buffer, 0, bytemuck::cast_slice(&words).to_vec())?;
        }
        Ok(Self {
            buffer,
            rig: rig.clone(),
            device: Arc::clone(device),
        })
    }

    /// How many rays the rig has.
    #[must_use]
    pub fn len(&self) -> usize {
        self.rig.len()
    }

    /// Whether the rig has no rays.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.rig.is_empty()
    }

    /// The rig it holds.
    #[must_use]
    pub fn rig(&self) -> &SensorRig {
        &self.rig
    }
}

/// The rig's ray indices in an order where neighbours point in neighbouring directions: by
/// the Morton code of their directions on a grid of 1024 steps a component (ties in rig order).
/// A SIMD group of invocations then steps alike, where the rig's own order (a cone's spiral)
/// may send neighbours far apart.
fn coherent_order(rays: &[[f32; 4]]) -> Vec<u32> {
    // The component's bits spread to every third place.
    fn spread(c: f32) -> u64 {
        let q = ((c.clamp(-1.0, 1.0) + 1.0) * 511.5) as u64;
        (0..10).fold(0, |out, b| out | ((q >> b) & 1) << (3 * b))
    }
    let mut order: Vec<u32> = (0..rays.len() as u32).collect();
    order.sort_by_key(|&k| {
        let [x, y, z, _] = rays[k as usize];
        spread(x) | spread(y) << 1 | spread(z) << 2
    });
    order
}

/// The poses of a sensor batch that the shader takes, and the rig's buffer (`rays` a pose);
/// `details`: whether each ray's full answer is written instead of its word. Dispatches take
/// whole poses.
#[derive(Debug)]
pub(super) struct PoseUpload {
    poses: Vec<GpuPose>,
    rig: wgpu::Buffer,
    rays: u32,
    details: bool,
}

impl Upload for PoseUpload {
    const ENTRY: Entry = self::ENTRY;

    fn count(&self) -> u64 {
        self.poses.len() as u64 * u64::from(self.rays)
    }

    /// Whole poses: a multiple of the rig's rays, at least one pose.
    fn per_dispatch(&self, asked: u32) -> u64 {
        let (p, r) = (u64::from(asked), u64::from(self.rays.max(1)));
        (p - p % r).max(r)
    }

    fn bytes(&self, n: u64) -> (u64, u64) {
        let per_ray = if self.details {
            size_of::<GpuHit>() as u64
        } else {
            4
        };
        let poses = n / u64::from(self.rays.max(1));
        (poses * size_of::<GpuPose>() as u64, n * per_ray)
    }

    /// Whole poses: a dispatch's rays start and end at a pose's.
    fn input(&self, base: u64, count: u64) -> &[u8] {
        let r = u64::from(self.rays.max(1));
        bytemuck::cast_slice(&self.poses[(base / r) as usize..((base + count) / r) as usize])
    }

    fn extra(&self) -> Option<&wgpu::Buffer> {
        Some(&self.rig)
    }
}

/// The answers of a sensor batch's poses that the shader takes (`gpu[j]` is the caller's agent
/// of its pose `j`, `starts[j]` the pose's voxel); the rays of agents outside the window are
/// built on the host and [`SensorAnswers::join`] puts their answers in (`host[j]` likewise,
/// their rays in order).
#[derive(Debug)]
pub(super) struct SensorAnswers {
    readings: SensorReadings,
    gpu: Vec<u32>,
    starts: Vec<[i32; 3]>,
    host: Vec<u32>,
    window: Window,
    details: bool,
}

impl Collect<PoseUpload> for SensorAnswers {
    type Output = Self;

    fn collect(
        &mut self,
        _items: &PoseUpload,
        base: u64,
        count: u64,
        bytes: &[u8],
    ) -> Result<(), GpuError> {
        let n = self.readings.rays_per_agent();
        let words: &[u32] = bytemuck::cast_slice(bytes);
        let first = base as usize / n;
        let poses = &self.gpu[first..(base + count) as usize / n];
        if self.details {
            for (j, &a) in poses.iter().enumerate() {
                for k in 0..n {
                    let at = 5 * (j * n + k);
                    let h: &GpuHit = bytemuck::from_bytes(bytemuck::cast_slice(&words[at..at + 5]));
                    let outcome = decode(&self.window, h, self.starts[first + j])?;
                    self.readings.set(a as usize * n + k, outcome);
                }
            }
            return Ok(());
        }
        let all = self.readings.words_mut();
        // Copied and checked in one pass (a NaN: a walk past the step limit).
        let mut nan = false;
        for (j, &a) in poses.iter().enumerate() {
            let a = a as usize;
            let got = &words[j * n..(j + 1) * n];
            for (to, &w) in all[a * n..(a + 1) * n].iter_mut().zip(got) {
                *to = f32::from_bits(w);
                nan |= (w & 0x7FFF_FFFF) > 0x7F80_0000;
            }
        }
        if nan {
            return Err(GpuError::Internal(
                "a sensor ray ran past the step limit".into(),
            ));
        }
        Ok(())
    }

    fn finish(self) -> Self {
        self
    }
}

impl SensorAnswers {
    /// Every agent's readings: the shader's, with `host` (the answers of the rays built on the
    /// host, agent after agent) put in.
    fn join(self, host: Vec<RaycastOutcome>) -> SensorReadings {
        let mut readings = self.readings;
        let n = readings.rays_per_agent();
        for (j, &a) in self.host.iter().enumerate() {
            for (k, &outcome) in host[j * n..(j + 1) * n].iter().enumerate() {
                readings.set(a as usize * n + k, outcome);
            }
        }
        readings.sort_errors();
        readings
    }
}

/// Every ray of a sensor rig from every agent's pose on the GPU, the twin of
/// [`sense`](crate::sense): its readings bit for bit (on a window that follows a center, a ray
/// that leaves it reads as unloaded where it leaves, a negated distance, see
/// [`GpuRaycaster::upload_window`](crate::gpu::GpuRaycaster::upload_window); with `outcomes`,
/// its outcome tells it apart, [`GpuWorld::left_window`](crate::gpu::GpuWorld::left_window)).
/// The shader makes each ray from the agent's pose (32 bytes up an agent, the rig uploaded
/// once) exactly as [`SensorPose::ray`] makes it, and sends back one word a ray (4 bytes: the distance, see [`SensorReadings`]), or
/// with `outcomes` each ray's whole answer (20 bytes: the hit voxel, face, id and UV too). An
/// agent whose pose is bad gets its error on every ray and the others are answered; an agent
/// whose pose lies outside the window is cast from rays built on the host.
///
/// Submitting it fails with [`GpuError::WorldFromAnotherDevice`] also for a rig uploaded with
/// another raycaster.
#[derive(Clone, Copy, Debug)]
pub struct SensorSweep<'a> {
    /// The rig ([`GpuRaycaster::upload_rig`](crate::gpu::GpuRaycaster::upload_rig)).
    pub rig: &'a GpuSensorRig,
    /// Each agent's pose.
    pub poses: &'a [SensorPose],
    /// Whether each ray's whole outcome comes back, not only its distance
    /// ([`SensorReadings::outcomes`]).
    pub outcomes: bool,
}

impl Sealed for SensorSweep<'_> {}

impl Query for SensorSweep<'_> {
    type Answers = SensorReadings;
    type Options = RaycastOptions;

    fn start(
        self,
        launch: Launch<'_>,
        opts: &RaycastOptions,
        reuse: SensorReadings,
    ) -> Result<PendingBatch<SensorReadings>, GpuError> {
        let (job, uploaded) = sensor_job(&launch, self, opts, reuse)?;
        Ok(launch.pending(job, uploaded))
    }
}

/// The job of a sensor batch on the launch's world: the poses the shader takes, and rays built
/// on the host for agents whose pose lies outside the window, their answers joined into
/// `readings` (its allocations kept). Also returns how many rays went to the GPU.
fn sensor_job(
    launch: &Launch<'_>,
    query: SensorSweep<'_>,
    opts: &RaycastOptions,
    mut readings: SensorReadings,
) -> Result<(SensorJob, u64), GpuError> {
    let SensorSweep {
        rig,
        poses,
        outcomes: details,
    } = query;
    let (batches, world) = (launch.batches, launch.world);
    if !Arc::ptr_eq(&rig.device, &batches.device) {
        return Err(GpuError::WorldFromAnotherDevice);
    }
    let w = &world.window;
    let n = rig.len();
    readings.reset(poses.len(), n, details);
    // Tens of nanoseconds a pose: a few thousand poses take less than waking rayon's threads.
    let packed: Vec<_> = poses
        .par_iter()
        .with_min_len(4096)
        .map(|p| {
            let (origin, sub, rotation) = p.pack()?;
            Ok((w.start_of(origin, sub), sub, rotation))
        })
        .collect();
    let mut gpu_poses = Vec::new();
    let (mut gpu, mut starts, mut host) = (Vec::new(), Vec::new(), Vec::new());
    let mut host_rays: Vec<VoxelRay> = Vec::new();
    gpu_poses.reserve(poses.len());
    gpu.reserve(poses.len());
    for (a, p) in packed.iter().enumerate() {
        match *p {
            Err(e) => readings.set_invalid(a, e),
            Ok(_) if n == 0 => {}
            Ok((Some(voxel), sub, rotation)) => {
                gpu_poses.push(GpuPose {
                    voxel,
                    rotation_lo: rotation[0],
                    sub: sub.to_array(),
                    rotation_hi: rotation[1],
                });
                gpu.push(a as u32);
                if details {
                    starts.push(voxel);
                }
            }
            Ok((None, ..)) => {
                // Packed once already: preparing again cannot fail.
                let p = poses[a]
                    .prepare()
                    .map_err(|e| GpuError::Internal(format!("a packed pose: {e}")))?;
                host_rays.extend(
                    rig.rig
                        .words()
                        .iter()
                        .map(|&[x, y, z, max]| p.ray(glam::Vec3::new(x, y, z), max)),
                );
                host.push(a as u32);
            }
        }
    }
    let gpu_rays = (gpu_poses.len() * n) as u64;
    let mut flight = None;
    if !gpu_poses.is_empty() {
        let long = rig.rig.words().iter().all(|r| r[3] >= LONG_RAY);
        let mut params = world.params();
        params.details = u32::from(details);
        params.sensor_rays = n as u32;
        let binding = launch.binding(
            ENTRY,
            option_flags(opts, false) | world.walk_flags(long),
            params,
            opts,
        )?;
        flight = Some(launch.flight(
            binding,
            PoseUpload {
                poses: gpu_poses,
                rig: rig.buffer.clone(),
                rays: n as u32,
                details,
            },
        )?);
    }
    let (host_leg, host_count) = ray_leg(
        launch,
        &host_rays,
        opts,
        false,
        Vec::<RaycastOutcome>::new(),
    )?;
    let answers = SensorAnswers {
        readings,
        gpu,
        starts,
        host,
        window: *w,
        details,
    };
    let job = Joined {
        a: Leg::new(flight, answers),
        b: host_leg,
        join: SensorAnswers::join,
    };
    Ok((job, gpu_rays + host_count))
}

/// A sensor batch's job: the shader's poses, and the host's rays.
type SensorJob = Joined<
    Leg<PoseUpload, SensorAnswers>,
    Leg<RayUpload, RayAnswers<RaycastOutcome>>,
    SensorReadings,
>;
