//! GPU batch raycasting on wgpu: one DDA per compute invocation, exactly the CPU reference's
//! answers (see the parity contract in the crate docs).
//!
//! The plumbing follows wgpu's `hello_compute`: instance, adapter, device, buffers (input
//! `STORAGE`, output `STORAGE | COPY_SRC`, readback `MAP_READ | COPY_DST`), pipeline, bind
//! group, dispatch, copy, map, read.
//!
//! The i128 world is split on the host: a [`GpuWorld`] covers a window of chunks from an
//! anchor [`ChunkPos`], and everything on the GPU is an i32 voxel relative to the window's
//! lowest voxel. Rays that start outside the window are clipped to it on the host, with the
//! same exact stepping as the CPU reference, or answered on the host when they cannot reach it.

use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};

use bytemuck::{Pod, Zeroable};
use glam::{IVec3, Vec2};
use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::camera::Camera;
use crate::coords::{ChunkPos, VoxelBox, WorldPos};
use crate::cpu_ref::LONG_RAY;
use crate::cpu_ref::{AXIS_NONE, Dda, grow_by_a_chunk};
use crate::ray::{
    LineOfSight, LineOfSightOptions, OriginPolicy, PreparedRay, RaycastOptions, RaycastOutcome,
    UnloadedPolicy, VoxelRay, VoxelRaycastHit,
};
use crate::world::{ChunkView, DenseChunk, OCCUPANCY_WORDS, REGION_SHIFT, VoxelId, VoxelWorld};

pub use wgpu::AdapterInfo;

mod dispatch;
mod window;
mod world;

use dispatch::{BatchBuffers, Kernel, KernelTimer};
use window::{Upload, Window, window_index};
pub use world::GpuWorld;

/// The WGSL source of the compute shader (`shaders/dda.wgsl`).
pub const SHADER_SOURCE: &str = include_str!("../../shaders/dda.wgsl");

const WORKGROUP_SIZE: u32 = 64;
/// Default for the most rays in one dispatch (and so the size the batch buffers grow to); see
/// [`GpuRaycaster::set_max_dispatch_rays`].
pub const MAX_DISPATCH_RAYS: u32 = 1 << 19;
const TAG_MASK: u32 = 0xC000_0000;
const TAG_EMPTY: u32 = 0x4000_0000;
const TAG_UNLOADED: u32 = 0x8000_0000;
const TAG_UNIFORM: u32 = 0xC000_0000;
const ID_WORDS: usize = crate::coords::CHUNK_VOLUME / 2;
const BRICK_WORDS: usize = 2;
/// Bytes of GPU memory per stored (non-uniform) chunk: occupancy, brick summary and ids.
pub const BYTES_PER_STORED_CHUNK: u64 = ((OCCUPANCY_WORDS + BRICK_WORDS + ID_WORDS) * 4) as u64;

const FLAG_STOP_UNLOADED: u32 = 4;
const FLAG_EVERY_NON_AIR: u32 = 8;
const FLAG_CONSERVATIVE: u32 = 16;
const FLAG_PER_VOXEL: u32 = 32;
const FLAG_STEP_EMPTY_BRICKS: u32 = 64;
const RAY_NEGATIVE_SHIFT: u32 = 3;
const RAY_ENTRY_SHIFT: u32 = 6;
const RAY_CLIPPED: u32 = 256;
const STATUS_MISS: u32 = 0;
const STATUS_HIT: u32 = 1;
const STATUS_UNLOADED: u32 = 2;

/// What can go wrong on the GPU path. Each message says what happened and, where the caller
/// can do something about it, what.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GpuError {
    /// No adapter was found.
    #[error(
        "no GPU adapter found ({0}). Install a Vulkan driver (for a software adapter on Debian or \
         Ubuntu: `apt-get install mesa-vulkan-drivers`, which provides lavapipe), or choose one \
         with WGPU_BACKEND / WGPU_ADAPTER_NAME; the CPU reference (`raycast_batch`) works without one"
    )]
    NoAdapter(String),
    /// `WGPU_ADAPTER_NAME` names no available adapter.
    #[error("WGPU_ADAPTER_NAME={wanted:?} matches no adapter; available: {available}")]
    AdapterNotFound {
        /// The requested name.
        wanted: String,
        /// The adapters that were found.
        available: String,
    },
    /// The device could not be created.
    #[error(
        "could not create a GPU device: {0}. Choose another adapter with WGPU_BACKEND / \
         WGPU_ADAPTER_NAME, or use the CPU reference (`raycast_batch`)"
    )]
    RequestDevice(String),
    /// The world (or batch) needs more than a device limit allows.
    #[error(
        "{what} needs {needed} but the device limit is {limit}: upload a smaller window of chunks"
    )]
    LimitExceeded {
        /// Which resource.
        what: &'static str,
        /// How much it needs.
        needed: u64,
        /// The device's limit.
        limit: u64,
    },
    /// A camera of more than `u32::MAX` pixels (the count is given): pixel indices travel as
    /// u32 in the shader.
    #[error(
        "a GPU camera renders at most 4294967295 (u32::MAX) pixels, this one has {0}: render \
         the image in parts"
    )]
    BatchTooLarge(usize),
    /// `update_chunks` named a chunk outside the uploaded window, or a loaded chunk in the
    /// window's margin (see [`GpuWorld::update_chunks`]).
    #[error(
        "chunk {0:?} lies outside the chunks this GpuWorld can hold (the world's loaded bounds \
         when it was built): rebuild it with GpuWorld::from_world"
    )]
    ChunkOutsideWindow(ChunkPos),
    /// The [`GpuWorld`] was uploaded with another [`GpuRaycaster`] (another device); a world
    /// is used with the raycaster that built it.
    #[error(
        "this GpuWorld was uploaded with another GpuRaycaster: upload the world with the \
         raycaster that casts against it (GpuWorld::from_world(&gpu, &world))"
    )]
    WorldFromAnotherDevice,
    /// The results of one call (the count of outcomes is given) do not fit in host memory.
    #[error(
        "the results of {0} rays (or pixels) could not be allocated in host memory: split the \
         batch or render the image in parts"
    )]
    OutputTooLarge(u64),
    /// The device reported a validation error, ran out of memory, or was lost.
    #[error(
        "GPU error: {0} (out of memory: cast smaller dispatches with \
         GpuRaycaster::set_max_dispatch_rays or upload fewer chunks; device lost: create a new \
         GpuRaycaster)"
    )]
    Device(String),
    /// The GPU returned a result the host cannot decode (a bug: please report it).
    #[error("internal GPU error (a bug in voxcast: please report it): {0}")]
    Internal(String),
}

/// One ray as the shader reads it (`GpuRay` in `shaders/dda.wgsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct GpuRay {
    voxel: [i32; 3],
    flags: u32,
    dir: [f32; 3],
    max_distance: f32,
    b: [f32; 3],
    _pad0: u32,
    inv: [f32; 3],
    _pad1: u32,
    n: [u32; 3],
    _pad2: u32,
}

/// One answer as the shader writes it (`GpuHit` in `shaders/dda.wgsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct GpuHit {
    voxel: [i32; 3],
    status: u32,
    distance: f32,
    id: u32,
    uv: [f32; 2],
}

/// Per-dispatch parameters (`Params` in `shaders/dda.wgsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct GpuParams {
    dims: [u32; 3],
    _pad0: u32,
    ray_base: u32,
    ray_count: u32,
    region_offset: u32,
    world_edge: u32,
    cam_position: [i32; 3],
    cam_width: u32,
    cam_sub: [f32; 3],
    cam_height: u32,
    cam_forward: [f32; 3],
    cam_scale_x: f32,
    cam_right: [f32; 3],
    cam_scale_y: f32,
    cam_up: [f32; 3],
    cam_max_distance: f32,
}

/// A wgpu device with the raycasting pipelines. Create one and reuse it: creation compiles the
/// shader for the default options, with both walks through empty bricks. The shader is
/// specialised per combination of options (origin policy, unloaded policy, whether the
/// material filter is the default, conservative line of sight, per-voxel mode) and walk
/// (skipping empty bricks or stepping through them, see [`GpuWorld::skips_empty_bricks`]): the
/// first batch with another combination compiles it once more (about 20 ms on lavapipe), and
/// later batches reuse it. Besides its GPU buffers, it
/// keeps host working buffers for ray batches: 96 bytes per ray of the largest band cast so far
/// (batches are prepared in bands of at most 2^20 rays, so at most about 100 MB).
/// [`GpuRaycaster::kept_memory`] tells how much is kept; [`GpuRaycaster::release_buffers`]
/// frees it.
#[derive(Debug)]
pub struct GpuRaycaster {
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    limits: wgpu::Limits,
    layout: wgpu::BindGroupLayout,
    module: wgpu::ShaderModule,
    pipeline_layout: wgpu::PipelineLayout,
    /// The pipelines made so far, by entry point (`true`: `cast_camera`) and option flags.
    pipelines: Mutex<FxHashMap<(bool, u32), wgpu::ComputePipeline>>,
    batch: Mutex<BatchBuffers>,
    /// Host working buffers for ray batches, kept from call to call (96 bytes a ray of the
    /// largest band, at most [`HOST_BAND`] rays).
    staging: Mutex<HostStaging>,
    lost: Arc<Mutex<Option<String>>>,
    timer: Option<KernelTimer>,
    stats: Mutex<BatchStats>,
    /// Most rays per dispatch asked for; the device's limits may lower it.
    max_dispatch_rays: u32,
    /// Tells this raycaster's [`GpuWorld`]s from those of another: `wgpu::Device`s of separate
    /// instances can compare equal (their ids are per instance).
    token: u64,
}

/// The next [`GpuRaycaster`]'s `token`.
static NEXT_TOKEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// What the last batch cost, for benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BatchStats {
    /// Rays (or pixels) sent to the GPU; rays answered on the host are not counted.
    pub gpu_rays: u64,
    /// Dispatches the batch was split into.
    pub dispatches: u32,
    /// Time the compute passes took on the GPU, in seconds, from timestamp queries; `None`
    /// where the adapter has no timestamp queries.
    pub kernel_seconds: Option<f64>,
    /// Wall time of the whole call (preparation, upload, dispatch, readback), in seconds.
    pub total_seconds: f64,
}

/// What a [`GpuRaycaster`] keeps allocated between batches ([`GpuRaycaster::kept_memory`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeptMemory {
    /// GPU buffers for one dispatch: 336 bytes per ray of the largest dispatch so far (rays,
    /// hits and two sets of upload and readback buffers), rounded up to a power of two of rays
    /// and at most [`MAX_DISPATCH_RAYS`] rays (or what [`GpuRaycaster::set_max_dispatch_rays`]
    /// set), plus a few KiB of parameters and material filter.
    pub gpu_bytes: u64,
    /// Host working buffers: 96 bytes per ray of the largest band so far (batches are prepared
    /// in bands of at most 2^20 rays, so at most about 100 MB).
    pub host_bytes: u64,
}

/// Replaces what `m` guards with `value`, also after a panic poisoned it (the old value, in
/// an unknown state, is dropped).
fn replace_locked<T>(m: &Mutex<T>, value: T) {
    *m.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = value;
    m.clear_poison();
}

fn device_error(e: impl std::fmt::Display) -> GpuError {
    GpuError::Device(e.to_string())
}

impl GpuRaycaster {
    /// Picks an adapter and creates the device and pipelines.
    ///
    /// The adapter honours `WGPU_BACKEND` (default: the primary backends, Vulkan, Metal and
    /// DX12), `WGPU_ADAPTER_NAME` (a case-insensitive substring of the adapter name, such as
    /// `llvmpipe` for lavapipe) and `WGPU_POWER_PREF`. The device gets the adapter's own limits.
    ///
    /// # Errors
    /// [`GpuError::NoAdapter`] when no adapter exists, [`GpuError::AdapterNotFound`] when
    /// `WGPU_ADAPTER_NAME` matches none, [`GpuError::RequestDevice`] when the device fails.
    pub async fn new() -> Result<Self, GpuError> {
        // Instance: primary backends unless WGPU_BACKEND says otherwise.
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
        desc.backends = wgpu::Backends::PRIMARY;
        let instance = wgpu::Instance::new(desc.with_env());

        // Adapter: by name when WGPU_ADAPTER_NAME is set, else the default choice.
        let adapter = match std::env::var("WGPU_ADAPTER_NAME") {
            Ok(wanted) if !wanted.is_empty() => {
                let adapters = instance.enumerate_adapters(wgpu::Backends::all()).await;
                let names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
                let lower = wanted.to_lowercase();
                adapters
                    .into_iter()
                    .find(|a| a.get_info().name.to_lowercase().contains(&lower))
                    .ok_or_else(|| {
                        if names.is_empty() {
                            GpuError::NoAdapter(format!(
                                "WGPU_ADAPTER_NAME={wanted:?} and no adapter at all"
                            ))
                        } else {
                            GpuError::AdapterNotFound {
                                wanted: wanted.clone(),
                                available: names.join(", "),
                            }
                        }
                    })?
            }
            _ => instance
                .request_adapter(&wgpu::RequestAdapterOptions {
                    power_preference: wgpu::PowerPreference::from_env()
                        .unwrap_or(wgpu::PowerPreference::HighPerformance),
                    ..Default::default()
                })
                .await
                .map_err(|e| GpuError::NoAdapter(e.to_string()))?,
        };
        let info = adapter.get_info();
        let limits = adapter.limits();
        let timestamps = adapter.features().contains(wgpu::Features::TIMESTAMP_QUERY);

        // Device with the adapter's own limits.
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("voxcast"),
                required_features: if timestamps {
                    wgpu::Features::TIMESTAMP_QUERY
                } else {
                    wgpu::Features::empty()
                },
                required_limits: limits.clone(),
                ..Default::default()
            })
            .await
            .map_err(|e| GpuError::RequestDevice(e.to_string()))?;
        let lost = Arc::new(Mutex::new(None));
        let lost_flag = Arc::clone(&lost);
        device.set_device_lost_callback(move |reason, message| {
            if let Ok(mut l) = lost_flag.lock() {
                *l = Some(format!("device lost ({reason:?}): {message}"));
            }
        });

        // Shader and pipelines, validated inside an error scope.
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("dda.wgsl"),
            source: wgpu::ShaderSource::Wgsl(SHADER_SOURCE.into()),
        });
        let storage = |binding: u32, read_only: bool| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("voxcast"),
            entries: &[
                wgpu::BindGroupLayoutEntry {
                    binding: 0,
                    visibility: wgpu::ShaderStages::COMPUTE,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                },
                storage(1, true),
                storage(2, true),
                storage(3, true),
                storage(4, true),
                storage(5, true),
                storage(6, true),
                storage(7, false),
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("voxcast"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Device(format!("shader rejected: {e}")));
        }
        // The pipelines for the default options, with either walk, now: the shader's errors
        // show here, and a first batch with those options does not wait for a compilation.
        let default_flags = option_flags(&RaycastOptions::default(), false);
        let mut pipelines = FxHashMap::default();
        for camera in [false, true] {
            for flags in [default_flags, default_flags | FLAG_STEP_EMPTY_BRICKS] {
                let p = make_pipeline(&device, &module, &pipeline_layout, camera, flags)?;
                pipelines.insert((camera, flags), p);
            }
        }
        let batch = Mutex::new(Self::batch_buffers(&device, 1, timestamps));
        let timer = timestamps.then(|| KernelTimer {
            queries: device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("kernel time"),
                ty: wgpu::QueryType::Timestamp,
                count: 2,
            }),
            resolve: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("timestamps"),
                size: 16,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }),
            period_ns: f64::from(queue.get_timestamp_period()),
        });
        Ok(Self {
            device,
            queue,
            info,
            limits,
            layout,
            module,
            pipeline_layout,
            pipelines: Mutex::new(pipelines),
            batch,
            staging: Mutex::new(HostStaging::default()),
            lost,
            timer,
            max_dispatch_rays: MAX_DISPATCH_RAYS,
            token: NEXT_TOKEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            stats: Mutex::new(BatchStats::default()),
        })
    }

    /// [`GpuRaycaster::new`], blocking on the future with pollster.
    ///
    /// # Errors
    /// As [`GpuRaycaster::new`].
    pub fn new_blocking() -> Result<Self, GpuError> {
        pollster::block_on(Self::new())
    }

    /// The adapter in use: name, backend, driver.
    #[must_use]
    pub fn adapter_info(&self) -> &wgpu::AdapterInfo {
        &self.info
    }

    /// A one-line description of the adapter, e.g. `llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan, Mesa 22.3.6)`.
    #[must_use]
    pub fn adapter_summary(&self) -> String {
        format!(
            "{} ({:?}, {} {})",
            self.info.name, self.info.backend, self.info.driver, self.info.driver_info
        )
    }

    /// Sets the most rays (or pixels) one dispatch takes; larger batches are split into several
    /// dispatches, which run one after another while the host stages the next and reads the
    /// last. Smaller dispatches keep each GPU submission short (watchdogs, frame pacing) and
    /// the batch buffers small: 336 bytes of buffers per ray of this size (rays, hits, and two
    /// sets of upload and readback buffers). Clamped to `1..=` what the device's limits allow;
    /// the default is [`MAX_DISPATCH_RAYS`]. Results do not depend on it.
    pub fn set_max_dispatch_rays(&mut self, rays: u32) {
        self.max_dispatch_rays = rays.max(1);
    }

    /// Memory this raycaster keeps between batches, in bytes: see [`KeptMemory`]. Both parts
    /// grow with the largest batch so far and stay until [`GpuRaycaster::release_buffers`].
    #[must_use]
    pub fn kept_memory(&self) -> KeptMemory {
        let gpu = self.batch.lock().map_or(0, |b| b.bytes());
        let host = self.staging.lock().map_or(0, |s| s.bytes());
        KeptMemory {
            gpu_bytes: gpu,
            host_bytes: host,
        }
    }

    /// Frees the buffers kept between batches (GPU batch buffers and host working buffers,
    /// [`GpuRaycaster::kept_memory`]) down to their size for one ray. The next batch grows them
    /// again to its own size, which costs that batch the allocations. Worth calling after a
    /// rare large batch (a screenshot-sized camera, say) whose buffers should not stay held.
    /// A batch running on another thread is waited for; results never depend on it. Created
    /// pipelines and uploaded [`GpuWorld`]s are kept.
    pub fn release_buffers(&self) {
        let fresh = Self::batch_buffers(&self.device, 1, self.timer.is_some());
        replace_locked(&self.batch, fresh);
        replace_locked(&self.staging, HostStaging::default());
    }

    /// Timing of the last batch (raycast, line of sight or camera) on this raycaster.
    #[must_use]
    pub fn last_batch_stats(&self) -> BatchStats {
        self.stats.lock().map(|s| *s).unwrap_or_default()
    }

    fn check_lost(&self) -> Result<(), GpuError> {
        match self.lost.lock().map(|l| l.clone()) {
            Ok(Some(msg)) => Err(GpuError::Device(msg)),
            Ok(None) => Ok(()),
            Err(_) => Err(GpuError::Internal("device-lost flag poisoned".into())),
        }
    }

    /// Casts every ray against `world` and returns the outcomes in input order, exactly as
    /// [`crate::raycast_batch`] would. A bad ray gets [`RaycastOutcome::Invalid`] and the others
    /// are still answered. Any batch size: large batches are prepared on the host in bands of
    /// about a million rays (bounded host memory besides the outcomes) and split into several
    /// dispatches. The first batch with a combination of options not used before compiles the
    /// shader for it (see [`GpuRaycaster`]).
    ///
    /// # Errors
    /// [`GpuError`] when the device fails (validation, out of memory, lost);
    /// [`GpuError::OutputTooLarge`] when the outcomes do not fit in host memory;
    /// [`GpuError::WorldFromAnotherDevice`] for a world uploaded with another raycaster.
    pub fn raycast(
        &self,
        world: &GpuWorld,
        rays: &[VoxelRay],
        opts: &RaycastOptions,
    ) -> Result<Vec<RaycastOutcome>, GpuError> {
        let mut out = Vec::new();
        self.raycast_into(world, rays, opts, &mut out)?;
        Ok(out)
    }

    /// [`GpuRaycaster::raycast`] into `out`, which is cleared and refilled in input order. Its
    /// allocation is reused: a caller that keeps `out` between frames saves allocating (and the
    /// operating system zeroing) `size_of::<RaycastOutcome>()` bytes per ray on every call.
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast`]; `out`'s contents are then unspecified.
    pub fn raycast_into(
        &self,
        world: &GpuWorld,
        rays: &[VoxelRay],
        opts: &RaycastOptions,
        out: &mut Vec<RaycastOutcome>,
    ) -> Result<(), GpuError> {
        self.cast(world, rays, opts, false, out, |o| o)
    }

    /// Line of sight for every segment (see [`crate::line_of_sight`]), in input order.
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast`].
    pub fn line_of_sight(
        &self,
        world: &GpuWorld,
        rays: &[VoxelRay],
        opts: &LineOfSightOptions,
    ) -> Result<Vec<LineOfSight>, GpuError> {
        let mut out = Vec::new();
        self.line_of_sight_into(world, rays, opts, &mut out)?;
        Ok(out)
    }

    /// [`GpuRaycaster::line_of_sight`] into `out`, cleared and refilled in input order, its
    /// allocation reused (see [`GpuRaycaster::raycast_into`]).
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast_into`].
    pub fn line_of_sight_into(
        &self,
        world: &GpuWorld,
        rays: &[VoxelRay],
        opts: &LineOfSightOptions,
        out: &mut Vec<LineOfSight>,
    ) -> Result<(), GpuError> {
        self.cast(
            world,
            rays,
            &opts.raycast,
            opts.conservative,
            out,
            LineOfSight::from,
        )
    }

    /// Casts `rays` and writes `convert(outcome)` of ray `i` to `out[i]`, `out` cleared and
    /// refilled, in bands of [`HOST_BAND`] rays so that the host's working buffers stay bounded
    /// whatever the batch size.
    fn cast<T: Clone + Send + Sync>(
        &self,
        world: &GpuWorld,
        rays: &[VoxelRay],
        opts: &RaycastOptions,
        conservative: bool,
        out: &mut Vec<T>,
        convert: impl Fn(RaycastOutcome) -> T + Sync,
    ) -> Result<(), GpuError> {
        let started = self.begin_call(world)?;
        out.clear();
        out.try_reserve(rays.len())
            .map_err(|_| GpuError::OutputTooLarge(rays.len() as u64))?;
        out.resize(rays.len(), convert(RaycastOutcome::Miss));
        for (band, slots) in rays.chunks(HOST_BAND).zip(out.chunks_mut(HOST_BAND)) {
            self.cast_band(world, band, opts, conservative, slots, &convert)?;
        }
        self.note_total(started);
        Ok(())
    }

    /// One band of [`GpuRaycaster::cast`] (at most [`HOST_BAND`] rays, so indices fit in u32):
    /// rays answered on the host first, then the GPU's, decoded straight from the mapped
    /// readback buffer.
    fn cast_band<T: Send>(
        &self,
        world: &GpuWorld,
        rays: &[VoxelRay],
        opts: &RaycastOptions,
        conservative: bool,
        out: &mut [T],
        convert: &(impl Fn(RaycastOutcome) -> T + Sync),
    ) -> Result<(), GpuError> {
        // Working buffers kept from call to call (fresh ones when another call holds them):
        // allocating some 100 bytes a ray afresh each call cost page faults worth about 15%
        // of a W4 batch on lavapipe.
        let mut kept = self.staging.try_lock().ok();
        let mut own = HostStaging::default();
        let staging = kept.as_deref_mut().unwrap_or(&mut own);
        let n = rays.len();
        if staging.rays.len() < n {
            staging.rays.resize(n, GpuRay::zeroed());
        }
        staging.order.clear();
        staging.order.resize(n, (NOT_UPLOADED, 0));
        let (staged, order) = (&mut staging.rays[..n], &mut staging.order[..]);
        // The host's share (validation, the i128 split, clipping) on all threads: rays answered
        // here go straight to `out`; the others are staged at their index, with a sort key.
        // Coherence: neighbouring invocations get rays from the same chunk going the same way,
        // so they walk the same chunks and branch alike. Results go back in the caller's order.
        // Also counts the uploaded rays shorter than `LONG_RAY`, for the choice of walk.
        let sort = n >= SORT_MIN_RAYS;
        let short: usize = out
            .par_iter_mut()
            .zip(rays.par_iter())
            .zip(staged.par_iter_mut().zip(order.par_iter_mut()))
            .enumerate()
            .with_min_len(4096)
            .map(|(i, ((o, ray), (g, key)))| match ray.prepare() {
                Err(e) => {
                    *o = convert(RaycastOutcome::Invalid(e));
                    0
                }
                Ok(None) => 0,
                Ok(Some(p)) => match world.window.upload_ray(&p, opts) {
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
        order.par_sort_unstable_by_key(|&(key, _)| key);
        let uploaded = order.partition_point(|&(key, _)| key != NOT_UPLOADED);
        let order = &order[..uploaded];
        let long = short == 0;
        self.run(
            world,
            Kernel::Rays(staged, order, long),
            opts,
            conservative,
            &mut |base, hits| {
                for (h, &(_, i)) in hits.iter().zip(&order[base..]) {
                    out[i as usize] = convert(world.window.decode(h)?);
                }
                Ok(())
            },
        )
    }

    /// Renders `camera` against `world`: one ray per pixel, row by row from the top, made in the
    /// shader from the camera parameters (no ray upload). Pixel `(px, py)` gets the outcome of
    /// casting [`Camera::ray`]`(px, py)` with [`GpuRaycaster::raycast`] or the CPU reference:
    /// [`RaycastOutcome::Invalid`] where that ray is invalid (only a camera edited by hand has
    /// such pixels). A camera whose eye is outside the window, whose field of view is wider than
    /// about 179.99°, or that was edited into one the shader cannot reproduce exactly, is
    /// rendered from rays built on the host (same outcomes, slower).
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast`]; [`GpuError::BatchTooLarge`] for more than `u32::MAX`
    /// pixels, [`GpuError::OutputTooLarge`] when the outcomes do not fit in host memory.
    pub fn render_camera(
        &self,
        world: &GpuWorld,
        camera: &Camera,
        opts: &RaycastOptions,
    ) -> Result<Vec<RaycastOutcome>, GpuError> {
        let mut out = Vec::new();
        self.render_camera_into(world, camera, opts, &mut out)?;
        Ok(out)
    }

    /// [`GpuRaycaster::render_camera`] into `out`, cleared and refilled row by row, its
    /// allocation reused (see [`GpuRaycaster::raycast_into`]): for a camera rendered every frame.
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast_into`].
    pub fn render_camera_into(
        &self,
        world: &GpuWorld,
        camera: &Camera,
        opts: &RaycastOptions,
        out: &mut Vec<RaycastOutcome>,
    ) -> Result<(), GpuError> {
        let started = self.begin_call(world)?;
        let w = &world.window;
        let pixels = u64::from(camera.width) * u64::from(camera.height);
        if pixels > u64::from(u32::MAX) {
            return Err(GpuError::BatchTooLarge(
                usize::try_from(pixels).unwrap_or(usize::MAX),
            ));
        }
        out.clear();
        out.try_reserve(pixels as usize)
            .map_err(|_| GpuError::OutputTooLarge(pixels))?;
        let Some(camera) = shader_camera(camera) else {
            self.camera_on_host(world, camera, opts, out)?;
            self.note_total(started);
            return Ok(());
        };
        let eye = camera.position;
        let inside = (0..3).all(|a| {
            let lo = if camera.sub_offset[a] == 0.0 {
                eye.axis(a).checked_sub(1)
            } else {
                Some(eye.axis(a))
            };
            lo.is_some_and(|lo| w.bounds.min.axis(a) <= lo) && eye.axis(a) <= w.bounds.max.axis(a)
        });
        if !inside {
            self.camera_on_host(world, &camera, opts, out)?;
            self.note_total(started);
            return Ok(());
        }
        self.run(
            world,
            Kernel::Camera(&camera, pixels as u32),
            opts,
            false,
            &mut |_, hits| {
                for h in hits {
                    out.push(w.decode(h)?);
                }
                Ok(())
            },
        )?;
        self.note_total(started);
        Ok(())
    }

    /// [`GpuRaycaster::render_camera_into`] from rays built on the host: each pixel's
    /// [`Camera::ray`], cast as [`GpuRaycaster::raycast`] casts it, or its error. `out` has
    /// room for every pixel. Works in bands of [`HOST_BAND`] pixels.
    fn camera_on_host(
        &self,
        world: &GpuWorld,
        camera: &Camera,
        opts: &RaycastOptions,
        out: &mut Vec<RaycastOutcome>,
    ) -> Result<(), GpuError> {
        let pixels = u64::from(camera.width) * u64::from(camera.height);
        let width = u64::from(camera.width);
        let mut rays = Vec::new();
        let mut index = Vec::new();
        let mut answers = Vec::new();
        out.clear();
        for first in (0..pixels).step_by(HOST_BAND) {
            rays.clear();
            index.clear();
            for p in first..pixels.min(first + HOST_BAND as u64) {
                // Both below u32::MAX: the caller checked the pixel count.
                let (px, py) = ((p % width) as u32, (p / width) as u32);
                match camera.ray(px, py) {
                    Ok(r) => {
                        rays.push(r);
                        index.push(out.len());
                        out.push(RaycastOutcome::Miss);
                    }
                    Err(e) => out.push(RaycastOutcome::Invalid(e)),
                }
            }
            answers.clear();
            answers.resize(rays.len(), RaycastOutcome::Miss);
            self.cast_band(world, &rays, opts, false, &mut answers, &|o| o)?;
            for (&i, &a) in index.iter().zip(&answers) {
                out[i] = a;
            }
        }
        Ok(())
    }

    /// The pipeline of the rays (`camera == false`) or camera entry point specialised for
    /// option `flags` (the shader's `OPTIONS`), compiled on first use and kept: each
    /// combination of options in use pays one compilation (the default options' are made by
    /// [`GpuRaycaster::new`]).
    fn pipeline(&self, camera: bool, flags: u32) -> Result<wgpu::ComputePipeline, GpuError> {
        // A map of finished pipelines is sound whatever panicked while it was held.
        let mut made = self
            .pipelines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(p) = made.get(&(camera, flags)) {
            return Ok(p.clone());
        }
        let p = make_pipeline(
            &self.device,
            &self.module,
            &self.pipeline_layout,
            camera,
            flags,
        )?;
        made.insert((camera, flags), p.clone());
        Ok(p)
    }

    /// Starts a batch call: checks that `world` belongs to this raycaster's device and resets
    /// [`GpuRaycaster::last_batch_stats`] (a batch answered on the host alone reports zero GPU
    /// rays). Returns the call's start time.
    fn begin_call(&self, world: &GpuWorld) -> Result<std::time::Instant, GpuError> {
        if let Ok(mut s) = self.stats.lock() {
            *s = BatchStats::default();
        }
        if world.owner != self.token {
            return Err(GpuError::WorldFromAnotherDevice);
        }
        Ok(std::time::Instant::now())
    }

    fn note_total(&self, started: std::time::Instant) {
        if let Ok(mut s) = self.stats.lock() {
            s.total_seconds = started.elapsed().as_secs_f64();
        }
    }
}

/// `camera` as the shader gets it (the eye and max distance as [`VoxelRay::new`] stores them),
/// when the shader's ray for every pixel (`cast_camera` in `shaders/dda.wgsl`) is exactly
/// [`Camera::ray`] of that pixel: for every camera [`Camera::new`] makes with a field of view
/// up to about 179.99° at 16:9. `None` for a wider one, and for a camera edited into one where
/// that may fail: an eye offset outside `[0, 1)`, an invalid max distance, or vectors that
/// could make a pixel direction zero, non-finite or not unit.
fn shader_camera(c: &Camera) -> Option<Camera> {
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
        && (c.forward.length_squared() - 1.0).abs() <= 1e-3
        && off_axis <= 0.25
        && spread <= 1e5)
        .then_some(Camera {
            sub_offset: probe.sub_offset,
            max_distance: probe.max_distance,
            ..*c
        })
}

/// The shader's `OPTIONS` for `opts` (and conservative line of sight): the `FLAG_*` bits of
/// `shaders/dda.wgsl`.
fn option_flags(opts: &RaycastOptions, conservative: bool) -> u32 {
    let mut flags = match opts.origin {
        OriginPolicy::Report => 0,
        OriginPolicy::SkipOriginVoxel => 1,
        OriginPolicy::ExitSolid => 2,
    };
    if opts.unloaded == UnloadedPolicy::Stop {
        flags |= FLAG_STOP_UNLOADED;
    }
    if opts.blocks.is_every_non_air() {
        flags |= FLAG_EVERY_NON_AIR;
    }
    if conservative {
        flags |= FLAG_CONSERVATIVE;
    }
    if opts.per_voxel {
        flags |= FLAG_PER_VOXEL;
    }
    flags
}

/// The compute pipeline of `cast_camera` (or `cast_rays`) with the shader's `OPTIONS` set to
/// `flags`, checked inside a validation error scope.
fn make_pipeline(
    device: &wgpu::Device,
    module: &wgpu::ShaderModule,
    layout: &wgpu::PipelineLayout,
    camera: bool,
    flags: u32,
) -> Result<wgpu::ComputePipeline, GpuError> {
    let entry = if camera { "cast_camera" } else { "cast_rays" };
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(entry),
        layout: Some(layout),
        module,
        entry_point: Some(entry),
        compilation_options: wgpu::PipelineCompilationOptions {
            constants: &[("OPTIONS", f64::from(flags))],
            ..Default::default()
        },
        cache: None,
    });
    match pollster::block_on(scope.pop()) {
        Some(e) => Err(GpuError::Device(format!("pipeline {entry} rejected: {e}"))),
        None => Ok(pipeline),
    }
}

/// Rays (or host-built camera pixels) prepared on the host at a time: a batch is cast in
/// bands of this many, so that the host's working buffers (96 bytes a ray, `HostStaging`)
/// stay near 100 MB however large the batch.
const HOST_BAND: usize = 1 << 20;

/// Batches at least this large are sorted for coherence before upload.
const SORT_MIN_RAYS: usize = 4096;

/// The sort key of a ray answered on the host (no [`coherence_key`] is this large).
const NOT_UPLOADED: u64 = u64::MAX;

/// The host's working buffers for a band of rays ([`GpuRaycaster::cast_band`]), kept by the
/// raycaster: each prepared ray at its index, and the upload order with sort keys.
#[derive(Debug, Default)]
struct HostStaging {
    rays: Vec<GpuRay>,
    order: Vec<(u64, u32)>,
}

impl HostStaging {
    /// Bytes allocated.
    fn bytes(&self) -> u64 {
        (self.rays.capacity() * size_of::<GpuRay>()
            + self.order.capacity() * size_of::<(u64, u32)>()) as u64
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

    fn module() -> naga::Module {
        match naga::front::wgsl::parse_str(SHADER_SOURCE) {
            Ok(m) => m,
            Err(e) => panic!(
                "dda.wgsl does not parse:\n{}",
                e.emit_to_string(SHADER_SOURCE)
            ),
        }
    }

    #[test]
    fn shader_parses_and_validates() {
        let m = module();
        let mut v = naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::empty(),
        );
        if let Err(e) = v.validate(&m) {
            panic!(
                "dda.wgsl does not validate:\n{}",
                e.emit_to_string(SHADER_SOURCE)
            );
        }
    }

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

    #[test]
    fn shared_struct_sizes_match_wgsl() {
        let m = module();
        let size_of_wgsl = |name: &str| -> u32 {
            let (_, ty) = m
                .types
                .iter()
                .find(|(_, t)| t.name.as_deref() == Some(name))
                .unwrap_or_else(|| panic!("no struct {name}"));
            ty.inner.size(m.to_ctx())
        };
        assert_eq!(
            size_of_wgsl("GpuRay") as usize,
            size_of::<GpuRay>(),
            "GpuRay"
        );
        assert_eq!(
            size_of_wgsl("GpuHit") as usize,
            size_of::<GpuHit>(),
            "GpuHit"
        );
        assert_eq!(
            size_of_wgsl("Params") as usize,
            size_of::<GpuParams>(),
            "Params"
        );
    }
}
