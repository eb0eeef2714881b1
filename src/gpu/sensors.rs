//! Sensors on the GPU: a rig uploaded once ([`GpuSensorRig`]), then every ray of it from every
//! agent's pose in one batch, each ray made in the shader exactly as [`SensorPose::ray`] makes
//! it (32 bytes up an agent, a word or a whole answer down a ray); agents whose pose lies
//! outside the window are cast from rays built on the host; and what collects the answers.

use std::sync::Arc;

use rayon::prelude::*;

use crate::cpu_ref::LONG_RAY;
use crate::gpu::answers::{Collector, RayAnswers, push_flight, ray_flight};
use crate::gpu::decode::decode;
use crate::gpu::device::Device;
use crate::gpu::error::{GpuError, device_error};
use crate::gpu::flight::{Batches, Binding, Flight, Items};
use crate::gpu::layout::{Entry, GpuHit, GpuPose, option_flags};
use crate::gpu::window::Window;
use crate::gpu::world::GpuWorld;
use crate::ray::{RaycastOptions, RaycastOutcome, VoxelRay};
use crate::sensors::{SensorPose, SensorReadings, SensorRig};

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
        if let Some(e) = pollster::block_on(scope.pop()) {
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

/// The answers of a sensor batch: one flight casts the poses the shader takes (`gpu[j]` is the
/// caller's agent of its pose `j`, `starts[j]` the pose's voxel), flight `host_flight` the rays
/// of the agents outside the window, built on the host (`host[j]` likewise, their rays in
/// order).
#[derive(Debug)]
pub(super) struct SensorAnswers {
    readings: SensorReadings,
    gpu: Vec<u32>,
    starts: Vec<[i32; 3]>,
    host: Vec<u32>,
    host_flight: usize,
    host_answers: RayAnswers<RaycastOutcome>,
    window: Window,
    details: bool,
}

impl Collector<SensorReadings> for SensorAnswers {
    fn collect(
        &mut self,
        flight: usize,
        items: &Items,
        base: u64,
        count: u64,
        bytes: &[u8],
    ) -> Result<(), GpuError> {
        if flight == self.host_flight {
            return self.host_answers.collect(flight, items, base, count, bytes);
        }
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

    fn finish(&mut self) -> SensorReadings {
        let n = self.readings.rays_per_agent();
        let host = self.host_answers.finish();
        for (j, &a) in self.host.iter().enumerate() {
            for (k, &outcome) in host[j * n..(j + 1) * n].iter().enumerate() {
                self.readings.set(a as usize * n + k, outcome);
            }
        }
        self.readings.sort_errors();
        std::mem::take(&mut self.readings)
    }
}

/// The flights of a sensor batch on `world`, dispatched about `per_dispatch` rays at a time
/// (whole poses), and what collects their answers: the poses the shader takes, and rays built
/// on the host for agents whose pose lies outside the window. Also returns how many rays went
/// to the GPU.
#[expect(
    clippy::too_many_arguments,
    reason = "a batch's queries, where they go, and how"
)]
pub(super) fn sensor_flights(
    batches: &Arc<Batches>,
    world: &GpuWorld,
    per_dispatch: u32,
    rig: &GpuSensorRig,
    poses: &[SensorPose],
    opts: &RaycastOptions,
    details: bool,
    mut readings: SensorReadings,
) -> Result<(Vec<Flight>, SensorAnswers, u64), GpuError> {
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
    let mut flights = Vec::new();
    let gpu_rays = (gpu_poses.len() * n) as u64;
    if !gpu_poses.is_empty() {
        let long = rig.rig.words().iter().all(|r| r[3] >= LONG_RAY);
        let mut params = world.params();
        params.details = u32::from(details);
        params.sensor_rays = n as u32;
        let binding = Binding::new(
            &batches.device,
            world,
            Entry::Sensors,
            option_flags(opts, false) | world.walk_flags(long),
            params,
            opts,
        )?;
        flights.push(Flight::start(
            batches,
            binding,
            Items::Sensors {
                poses: gpu_poses,
                rig: rig.buffer.clone(),
                rays: n as u32,
                details,
            },
            per_dispatch,
        )?);
    }
    let (host_flight, host_answers, host_count) = ray_flight(
        batches,
        world,
        per_dispatch,
        &host_rays,
        opts,
        false,
        Vec::<RaycastOutcome>::new(),
    )?;
    let host_flight = push_flight(&mut flights, host_flight);
    let answers = SensorAnswers {
        readings,
        gpu,
        starts,
        host,
        host_flight,
        host_answers,
        window: *w,
        details,
    };
    Ok((flights, answers, gpu_rays + host_count))
}
