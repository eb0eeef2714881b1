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

/// The WGSL source of the compute shader (`shaders/dda.wgsl`).
pub const SHADER_SOURCE: &str = include_str!("../shaders/dda.wgsl");

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

/// Buffers reused between batches, grown on demand.
#[derive(Debug)]
struct BatchBuffers {
    capacity: u32,
    params: wgpu::Buffer,
    filter: wgpu::Buffer,
    rays: wgpu::Buffer,
    hits: wgpu::Buffer,
    /// Dispatches alternate between the two: while the GPU runs one, the host stages the next
    /// one's rays and reads the last one's hits.
    slots: [Slot; 2],
}

impl BatchBuffers {
    /// Bytes allocated on the device.
    fn bytes(&self) -> u64 {
        let mut total =
            self.params.size() + self.filter.size() + self.rays.size() + self.hits.size();
        for s in &self.slots {
            total += s.upload.size()
                + s.readback.size()
                + s.timestamps.as_ref().map_or(0, wgpu::Buffer::size);
        }
        total
    }
}

/// The host-visible buffers of one dispatch in flight.
#[derive(Debug)]
struct Slot {
    /// Host-writable staging for `rays`, kept between batches: `Queue::write_buffer` would
    /// allocate a fresh staging buffer (and the driver fresh host memory) on every call.
    upload: wgpu::Buffer,
    readback: wgpu::Buffer,
    /// The dispatch's two timestamps, where the adapter has timestamp queries.
    timestamps: Option<wgpu::Buffer>,
    /// The last submission that used these buffers: mapping them waits for it alone.
    last_use: Option<wgpu::SubmissionIndex>,
}

/// A submitted dispatch whose hits have not been read yet.
struct InFlight {
    slot: usize,
    /// Index of its first ray in the batch.
    base: u64,
    /// Bytes of hits it returns.
    bytes: u64,
    submission: wgpu::SubmissionIndex,
    hits_mapped: Receiver<Result<(), wgpu::BufferAsyncError>>,
    timestamps_mapped: Option<Receiver<Result<(), wgpu::BufferAsyncError>>>,
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

/// Timestamp queries around each dispatch, where the adapter supports them.
#[derive(Debug)]
struct KernelTimer {
    queries: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    period_ns: f64,
}

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

    fn batch_buffers(device: &wgpu::Device, capacity: u32, timestamps: bool) -> BatchBuffers {
        let buf = |label, size: u64, usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation: false,
            })
        };
        use wgpu::BufferUsages as U;
        let cap = u64::from(capacity);
        let ray_bytes = cap * size_of::<GpuRay>() as u64;
        let hit_bytes = cap * size_of::<GpuHit>() as u64;
        BatchBuffers {
            capacity,
            params: buf(
                "params",
                size_of::<GpuParams>() as u64,
                U::UNIFORM | U::COPY_DST,
            ),
            filter: buf("filter", 2048 * 4, U::STORAGE | U::COPY_DST),
            rays: buf("rays", ray_bytes, U::STORAGE | U::COPY_DST),
            hits: buf("hits", hit_bytes, U::STORAGE | U::COPY_SRC),
            slots: [(); 2].map(|()| Slot {
                upload: buf("upload", ray_bytes, U::MAP_WRITE | U::COPY_SRC),
                readback: buf("readback", hit_bytes, U::MAP_READ | U::COPY_DST),
                timestamps: timestamps
                    .then(|| buf("timestamps readback", 16, U::MAP_READ | U::COPY_DST)),
                last_use: None,
            }),
        }
    }

    /// Most rays per dispatch on this device.
    fn dispatch_capacity(&self) -> u32 {
        let by_binding = self.limits.max_storage_buffer_binding_size / size_of::<GpuRay>() as u64;
        let by_buffer = self.limits.max_buffer_size / size_of::<GpuRay>() as u64;
        let by_groups = u64::from(self.limits.max_compute_workgroups_per_dimension).pow(2)
            * u64::from(WORKGROUP_SIZE);
        u64::from(self.max_dispatch_rays)
            .min(by_binding)
            .min(by_buffer)
            .min(by_groups)
            .max(1) as u32
    }

    /// Waits for a mapping started with [`map_channel`], which completes when `last_use` (the
    /// last submission that used the buffer) has finished. Waits for that submission alone, so
    /// later ones keep running; with `None` (no submission in flight uses the buffer) only for
    /// callbacks already due, then, should the mapping still be pending, for every submission.
    fn wait_mapped(
        &self,
        mapped: &Receiver<Result<(), wgpu::BufferAsyncError>>,
        last_use: Option<&wgpu::SubmissionIndex>,
    ) -> Result<(), GpuError> {
        let poll = match last_use {
            Some(index) => wgpu::PollType::Wait {
                submission_index: Some(index.clone()),
                timeout: None,
            },
            None => wgpu::PollType::Poll,
        };
        self.device.poll(poll).map_err(device_error)?;
        let result = match mapped.try_recv() {
            Ok(r) => r,
            Err(_) => {
                self.device
                    .poll(wgpu::PollType::wait_indefinitely())
                    .map_err(device_error)?;
                mapped.recv().map_err(device_error)?
            }
        };
        result.map_err(device_error)
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
        let mut made = match self.pipelines.lock() {
            Ok(m) => m,
            // A map of finished pipelines is sound whatever panicked while it was held.
            Err(p) => p.into_inner(),
        };
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

    /// Stages and submits the dispatch for rays (or pixels) `range` of a batch in `slot`, and
    /// starts mapping its hits for reading.
    #[expect(
        clippy::too_many_arguments,
        reason = "one dispatch's parts, all borrowed from `run`"
    )]
    fn submit_dispatch(
        &self,
        batch: &mut BatchBuffers,
        kernel: Kernel<'_>,
        pipeline: &wgpu::ComputePipeline,
        bind_group: &wgpu::BindGroup,
        params: &mut GpuParams,
        range: std::ops::Range<u64>,
        slot: usize,
    ) -> Result<InFlight, GpuError> {
        let count = (range.end - range.start) as u32;
        params.ray_base = range.start as u32;
        params.ray_count = count;
        self.queue
            .write_buffer(&batch.params, 0, bytemuck::bytes_of(params));
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        let s = &batch.slots[slot];
        match kernel {
            Kernel::Rays(rays, order, _) => {
                let order = &order[range.start as usize..range.end as usize];
                let len = (order.len() * size_of::<GpuRay>()) as u64;
                let staging = s.upload.slice(..len);
                let mapped = map_channel(&staging, wgpu::MapMode::Write);
                let staged = self
                    .wait_mapped(&mapped, s.last_use.as_ref())
                    .and_then(|()| {
                        // Gathered in upload order straight into the mapped buffer.
                        let mut view = staging.get_mapped_range_mut().map_err(device_error)?;
                        let (dst, _) = view.slice(..).into_chunks::<{ size_of::<GpuRay>() }>();
                        dst.write_iter(
                            order.iter().map(|&(_, i)| bytemuck::cast(rays[i as usize])),
                        );
                        Ok(())
                    });
                s.upload.unmap();
                staged?;
                encoder.copy_buffer_to_buffer(&s.upload, 0, &batch.rays, 0, len);
            }
            Kernel::Camera(..) => {}
        }
        // Dispatch: a 2D grid of workgroups when one dimension is not enough.
        let groups = count.div_ceil(WORKGROUP_SIZE);
        let gx = groups.min(self.limits.max_compute_workgroups_per_dimension);
        let gy = groups.div_ceil(gx);
        let bytes = u64::from(count) * size_of::<GpuHit>() as u64;
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("voxcast dda"),
                timestamp_writes: self
                    .timer
                    .as_ref()
                    .map(|t| wgpu::ComputePassTimestampWrites {
                        query_set: &t.queries,
                        beginning_of_pass_write_index: Some(0),
                        end_of_pass_write_index: Some(1),
                    }),
            });
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, bind_group, &[]);
            pass.dispatch_workgroups(gx, gy, 1);
        }
        encoder.copy_buffer_to_buffer(&batch.hits, 0, &s.readback, 0, bytes);
        if let (Some(t), Some(ts)) = (&self.timer, &s.timestamps) {
            encoder.resolve_query_set(&t.queries, 0..2, &t.resolve, 0);
            encoder.copy_buffer_to_buffer(&t.resolve, 0, ts, 0, 16);
        }
        let submission = self.queue.submit([encoder.finish()]);
        let in_flight = InFlight {
            slot,
            base: range.start,
            bytes,
            submission: submission.clone(),
            hits_mapped: map_channel(&s.readback.slice(..bytes), wgpu::MapMode::Read),
            timestamps_mapped: s
                .timestamps
                .as_ref()
                .map(|ts| map_channel(&ts.slice(..), wgpu::MapMode::Read)),
        };
        batch.slots[slot].last_use = Some(submission);
        Ok(in_flight)
    }

    /// Waits for dispatch `f` in `slot`, hands its hits to `sink` and unmaps the slot.
    /// Returns its kernel time in nanoseconds (0 without timestamps).
    fn read_dispatch(
        &self,
        slot: &Slot,
        f: &InFlight,
        sink: &mut HitSink<'_>,
    ) -> Result<f64, GpuError> {
        let slice = slot.readback.slice(..f.bytes);
        let sunk = self
            .wait_mapped(&f.hits_mapped, Some(&f.submission))
            .and_then(|()| {
                let view = slice.get_mapped_range().map_err(device_error)?;
                sink(f.base as usize, bytemuck::cast_slice(&view))
            });
        slot.readback.unmap();
        let mut kernel_ns = 0.0;
        if let (Some(t), Some(ts), Some(mapped)) =
            (&self.timer, &slot.timestamps, &f.timestamps_mapped)
        {
            if self.wait_mapped(mapped, Some(&f.submission)).is_ok()
                && let Ok(view) = ts.slice(..).get_mapped_range()
            {
                let stamps: &[u64] = bytemuck::cast_slice(&view);
                kernel_ns = stamps[1].saturating_sub(stamps[0]) as f64 * t.period_ns;
            }
            ts.unmap();
        }
        sunk.map(|()| kernel_ns)
    }

    /// Runs `kernel` in as many dispatches as it takes and hands each dispatch's results, read
    /// straight from the mapped readback buffer, to `sink` with the index of its first ray.
    fn run(
        &self,
        world: &GpuWorld,
        kernel: Kernel<'_>,
        opts: &RaycastOptions,
        conservative: bool,
        sink: &mut HitSink<'_>,
    ) -> Result<(), GpuError> {
        let total = match kernel {
            Kernel::Rays(_, order, _) => order.len() as u64,
            Kernel::Camera(_, n) => u64::from(n),
        };
        if total == 0 {
            return Ok(());
        }
        self.check_lost()?;
        let per_dispatch = self.dispatch_capacity();
        // A panic while the buffers were held (a bug) leaves them in an unknown state (a
        // mapping may be pending): start again from fresh ones rather than fail every call.
        let (mut batch, poisoned) = match self.batch.lock() {
            Ok(b) => (b, false),
            Err(p) => (p.into_inner(), true),
        };
        if poisoned {
            self.batch.clear_poison();
            *batch = Self::batch_buffers(&self.device, 1, self.timer.is_some());
        }
        let want = total.min(u64::from(per_dispatch)) as u32;
        if batch.capacity < want || batch.capacity > per_dispatch {
            // Grow to the next power of two so repeated batches of similar size reuse buffers
            // (or shrink, after `set_max_dispatch_rays` lowered the dispatch size).
            let cap = want.next_power_of_two().min(per_dispatch);
            *batch = Self::batch_buffers(&self.device, cap, self.timer.is_some());
        }
        let pipeline = self.pipeline(
            matches!(kernel, Kernel::Camera(..)),
            option_flags(opts, conservative)
                | world.walk_flags(match kernel {
                    Kernel::Rays(_, _, long) => long,
                    Kernel::Camera(cam, _) => cam.max_distance >= LONG_RAY,
                }),
        )?;
        let mut params = GpuParams {
            dims: world.window.dims,
            region_offset: world.window.region_offset(),
            world_edge: world.window.world_edge(),
            ..Default::default()
        };
        if let Kernel::Camera(cam, _) = kernel {
            let rel = world
                .window
                .relative(cam.position)
                .ok_or_else(|| GpuError::Internal("camera outside".into()))?;
            params.cam_position = rel;
            params.cam_width = cam.width;
            params.cam_height = cam.height;
            params.cam_sub = cam.sub_offset.to_array();
            params.cam_forward = cam.forward.to_array();
            params.cam_right = cam.right.to_array();
            params.cam_up = cam.up.to_array();
            params.cam_scale_x = cam.scale_x;
            params.cam_scale_y = cam.scale_y;
            params.cam_max_distance = cam.max_distance;
        }
        self.queue
            .write_buffer(&batch.filter, 0, bytemuck::cast_slice(opts.blocks.words()));

        let scope_oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let scope_val = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("voxcast batch"),
            layout: &self.layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: batch.params.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: world.table.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: world.occupancy.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 3,
                    resource: world.bricks.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 4,
                    resource: world.ids.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 5,
                    resource: batch.filter.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 6,
                    resource: batch.rays.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 7,
                    resource: batch.hits.as_entire_binding(),
                },
            ],
        });
        // Dispatches alternate between the two slots: dispatch k is submitted before the hits
        // of dispatch k - 1 are read, so the GPU runs while the host reads and stages.
        let mut base = 0u64;
        let mut result = Ok(());
        let mut kernel_ns = 0.0;
        let mut dispatches = 0;
        let mut in_flight: Option<InFlight> = None;
        while base < total || in_flight.is_some() {
            let submitted = if base < total {
                let count = (total - base).min(u64::from(batch.capacity)) as u32;
                let slot = (dispatches % 2) as usize;
                let range = base..base + u64::from(count);
                match self.submit_dispatch(
                    &mut batch,
                    kernel,
                    &pipeline,
                    &bind_group,
                    &mut params,
                    range,
                    slot,
                ) {
                    Ok(f) => {
                        dispatches += 1;
                        base += u64::from(count);
                        Some(f)
                    }
                    Err(e) => {
                        result = Err(e);
                        None
                    }
                }
            } else {
                None
            };
            if let Some(f) = in_flight.take() {
                let read = self.read_dispatch(&batch.slots[f.slot], &f, sink);
                match read {
                    Ok(ns) => kernel_ns += ns,
                    Err(e) => {
                        if result.is_ok() {
                            result = Err(e);
                        }
                    }
                }
            }
            in_flight = submitted;
            if result.is_err() {
                // Abandon a mapping still pending, so that the buffers can be mapped again.
                if let Some(f) = in_flight.take() {
                    let slot = &batch.slots[f.slot];
                    slot.readback.unmap();
                    if let Some(ts) = &slot.timestamps {
                        ts.unmap();
                    }
                }
                break;
            }
        }
        if let Some(e) = pollster::block_on(scope_val.pop()) {
            return Err(device_error(e));
        }
        if let Some(e) = pollster::block_on(scope_oom.pop()) {
            return Err(device_error(e));
        }
        self.check_lost()?;
        // Added up over the bands of one call (`begin_call` resets them).
        if let Ok(mut s) = self.stats.lock() {
            s.gpu_rays += total;
            s.dispatches += dispatches;
            if self.timer.is_some() {
                s.kernel_seconds = Some(s.kernel_seconds.unwrap_or(0.0) + kernel_ns * 1e-9);
            }
        }
        result
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

/// Where [`GpuRaycaster::run`] hands each dispatch's results: the index of the dispatch's first
/// ray and its hits, read from the mapped readback buffer.
type HitSink<'a> = dyn FnMut(usize, &[GpuHit]) -> Result<(), GpuError> + 'a;

/// Starts mapping `slice` for `mode`; the receiver gets the outcome once a poll of the device
/// has run the callback.
fn map_channel(
    slice: &wgpu::BufferSlice<'_>,
    mode: wgpu::MapMode,
) -> Receiver<Result<(), wgpu::BufferAsyncError>> {
    let (tx, rx) = std::sync::mpsc::channel();
    slice.map_async(mode, move |r| {
        let _ = tx.send(r);
    });
    rx
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

#[derive(Clone, Copy)]
enum Kernel<'a> {
    /// Rays staged at their index in the batch, the order they go to the GPU in (the index of
    /// each as the second field), and whether every one of them has a max distance of at
    /// least [`LONG_RAY`].
    Rays(&'a [GpuRay], &'a [(u64, u32)], bool),
    Camera(&'a Camera, u32),
}

/// How a prepared ray goes to the GPU.
enum Upload {
    Gpu(GpuRay),
    Answered(RaycastOutcome),
}

/// The window of chunks a [`GpuWorld`] covers, and the i128 ↔ i32 split around it.
#[derive(Clone, Copy, Debug)]
struct Window {
    anchor: ChunkPos,
    dims: [u32; 3],
    bounds: VoxelBox,
    /// The chunks that may be loaded (inclusive corners): the window less its margin of one
    /// unloaded chunk on every side that is not the i128 world's edge. Rays from outside are
    /// clipped to the window without the conservative tie test at the crossing into it, which
    /// is exact only while the margin holds nothing.
    interior: (ChunkPos, ChunkPos),
}

impl Window {
    /// The window around the chunks `interior` may hold: grown by a margin of one chunk,
    /// except at the edge of the i128 world.
    fn around(interior: (ChunkPos, ChunkPos)) -> Self {
        let (lo, hi) = grow_by_a_chunk(interior.0, interior.1);
        Self {
            anchor: lo,
            dims: [0; 3],
            bounds: VoxelBox::from_chunks(lo, hi),
            interior,
        }
    }

    /// Whether chunk `pos` may be loaded in this window (see `interior`).
    fn may_load(&self, pos: ChunkPos) -> bool {
        let (lo, hi) = self.interior;
        (0..3).all(|a| (lo.axis(a)..=hi.axis(a)).contains(&pos.axis(a)))
    }

    /// For the shader's `beyond_world`: bit `a` set where the window's low face on axis `a` is
    /// the i128 world's edge, bit `3 + a` where its high face is.
    fn world_edge(&self) -> u32 {
        let hi = self.bounds.max.chunk();
        (0..3).fold(0, |bits, a| {
            bits | u32::from(self.anchor.axis(a) == ChunkPos::MIN_INDEX) << a
                | u32::from(hi.axis(a) == ChunkPos::MAX_INDEX) << (3 + a)
        })
    }

    /// How far the anchor lies into its region, per axis (`0..4`).
    fn region_phase(&self) -> [u32; 3] {
        std::array::from_fn(|a| (self.anchor.axis(a) & ((1 << REGION_SHIFT) - 1)) as u32)
    }

    /// `region_phase` packed for the shader: x in bits 0..2, y in 2..4, z in 4..6.
    fn region_offset(&self) -> u32 {
        let [x, y, z] = self.region_phase();
        x | y << 2 | z << 4
    }

    /// The window's size in regions: those holding at least one of its chunks.
    fn region_dims(&self) -> [u32; 3] {
        let phase = self.region_phase();
        std::array::from_fn(|a| (self.dims[a] + phase[a]).div_ceil(1 << REGION_SHIFT))
    }

    /// Number of chunk table entries; the region records follow them.
    fn entries(&self) -> usize {
        self.dims.iter().map(|&d| d as usize).product()
    }

    /// The region record of window region `r` (see `RegionCache::run` in `cpu_ref.rs` and
    /// `region_run` in `shaders/dda.wgsl`): the chunks that block a run of empty chunks under
    /// `UnloadedPolicy::Air` (loaded and not all air), then under `Stop` (also not loaded),
    /// each as two words, read from the chunk entries `table` (what the GPU has, which may
    /// be older than the world for chunks edited but not passed to `update_chunks`). Chunks of
    /// the region outside the window count as not loaded.
    fn region_record(&self, table: &[u32], r: [u32; 3]) -> [u32; 4] {
        let phase = self.region_phase();
        let (mut loaded, mut occupied) = (0u64, 0u64);
        for bit in 0..64u32 {
            let cell = [bit & 3, bit >> 2 & 3, bit >> 4];
            let mut index = 0;
            let mut inside = true;
            for a in (0..3).rev() {
                let rel = i64::from((r[a] << REGION_SHIFT) + cell[a]) - i64::from(phase[a]);
                inside &= (0..i64::from(self.dims[a])).contains(&rel);
                index = index * self.dims[a] as usize + rel.max(0) as usize;
            }
            let tag = if inside {
                table[index] & TAG_MASK
            } else {
                TAG_UNLOADED
            };
            loaded |= u64::from(tag != TAG_UNLOADED) << bit;
            occupied |= u64::from(tag != TAG_UNLOADED && tag != TAG_EMPTY) << bit;
        }
        let air = occupied;
        let stop = occupied | !loaded;
        [
            air as u32,
            (air >> 32) as u32,
            stop as u32,
            (stop >> 32) as u32,
        ]
    }

    /// Index of window region `r` among the region records.
    fn region_index(&self, r: [u32; 3]) -> usize {
        let d = self.region_dims();
        r[0] as usize + d[0] as usize * (r[1] as usize + d[1] as usize * r[2] as usize)
    }

    /// The window region holding window chunk `pos`.
    fn region_of_chunk(&self, pos: ChunkPos) -> [u32; 3] {
        let phase = self.region_phase();
        std::array::from_fn(|a| {
            ((pos.axis(a) - self.anchor.axis(a)) as u32 + phase[a]) >> REGION_SHIFT
        })
    }

    fn relative(&self, p: WorldPos) -> Option<[i32; 3]> {
        let mut out = [0; 3];
        for (a, o) in out.iter_mut().enumerate() {
            *o = i32::try_from(p.axis(a).checked_sub(self.bounds.min.axis(a))?).ok()?;
        }
        Some(out)
    }

    /// The world voxel of window-relative `v`; `None` beyond the i128 world.
    fn absolute(&self, v: [i32; 3]) -> Option<WorldPos> {
        let mut out = [0; 3];
        for (a, o) in out.iter_mut().enumerate() {
            *o = self.bounds.min.axis(a).checked_add(i128::from(v[a]))?;
        }
        Some(WorldPos::from_array(out))
    }

    fn gpu_ray(&self, d: &Dda<'_>, clipped: bool) -> Option<GpuRay> {
        let r = d.ray;
        let mut flags = d.entry_axis << RAY_ENTRY_SHIFT;
        for a in 0..3 {
            flags |= u32::from(r.enabled[a]) << a;
            flags |= u32::from(r.step[a] < 0) << (RAY_NEGATIVE_SHIFT + a as u32);
        }
        if clipped {
            flags |= RAY_CLIPPED;
        }
        Some(GpuRay {
            voxel: self.relative(d.voxel())?,
            flags,
            dir: r.dir.to_array(),
            max_distance: r.max_distance,
            b: r.b,
            inv: r.inv,
            n: d.n,
            ..Default::default()
        })
    }

    /// The host's share of the work: the state the GPU starts from, or the whole answer when
    /// the ray never gets into the window.
    fn upload_ray(&self, r: &PreparedRay, opts: &RaycastOptions) -> Upload {
        let mut d = Dda::new(r);
        if self.bounds.contains(r.start) {
            return self
                .gpu_ray(&d, false)
                .map_or(Upload::Answered(RaycastOutcome::Miss), Upload::Gpu);
        }
        match opts.unloaded {
            // Outside the window nothing is loaded: air. Clip exactly as the CPU reference does.
            UnloadedPolicy::Air => {
                if d.enter_box(&self.bounds) {
                    self.gpu_ray(&d, true)
                        .map_or(Upload::Answered(RaycastOutcome::Miss), Upload::Gpu)
                } else {
                    Upload::Answered(RaycastOutcome::Miss)
                }
            }
            UnloadedPolicy::Stop if opts.origin == OriginPolicy::SkipOriginVoxel => {
                // The origin voxel is skipped; the ray stops at the next voxel unless that is
                // inside the window, where the GPU takes over.
                if d.dda_step().is_err() {
                    return Upload::Answered(RaycastOutcome::Miss);
                }
                if self.bounds.contains(d.voxel()) {
                    self.gpu_ray(&d, true)
                        .map_or(Upload::Answered(RaycastOutcome::Miss), Upload::Gpu)
                } else {
                    Upload::Answered(RaycastOutcome::Unloaded {
                        at: d.voxel(),
                        distance: d.t,
                    })
                }
            }
            UnloadedPolicy::Stop => Upload::Answered(RaycastOutcome::Unloaded {
                at: r.start,
                distance: 0.0,
            }),
        }
    }

    fn decode(&self, h: &GpuHit) -> Result<RaycastOutcome, GpuError> {
        let status = h.status & 15;
        if status == STATUS_MISS {
            return Ok(RaycastOutcome::Miss);
        }
        // The shader ends a ray that steps beyond the i128 world as a miss (`beyond_world`).
        let at = self.absolute(h.voxel).ok_or_else(|| {
            GpuError::Internal(format!("a result beyond the i128 world ({:?})", h.voxel))
        })?;
        match status {
            STATUS_UNLOADED => Ok(RaycastOutcome::Unloaded {
                at,
                distance: h.distance,
            }),
            STATUS_HIT => {
                let axis = (h.status >> 4) & 3;
                let mut face_normal = IVec3::ZERO;
                if axis != AXIS_NONE {
                    face_normal[axis as usize] = if h.status & 64 != 0 { 1 } else { -1 };
                }
                Ok(RaycastOutcome::Hit(VoxelRaycastHit {
                    voxel_pos: at,
                    face_normal,
                    distance: h.distance,
                    voxel_type: VoxelId(h.id as u16),
                    hit_uv: Vec2::from_array(h.uv),
                }))
            }
            s => Err(GpuError::Internal(format!(
                "ray ran past the step limit (status {s})"
            ))),
        }
    }
}

/// A window of a [`VoxelWorld`] uploaded to the GPU: a chunk table plus, per chunk that is not
/// one id throughout, its occupancy bits, brick summary and u16 ids. Uniform chunks (all air,
/// all stone, ...) take one table entry and no storage. After the table's chunk entries comes
/// one 16-byte record per region of `4×4×4` chunks that the window touches (which of its chunks
/// block a run of empty chunks), kept current by [`GpuWorld::update_chunks`].
#[derive(Debug)]
pub struct GpuWorld {
    device: wgpu::Device,
    queue: wgpu::Queue,
    window: Window,
    slots: FxHashMap<ChunkPos, u32>,
    free_slots: Vec<u32>,
    slot_capacity: u32,
    max_binding: u64,
    /// The `token` of the raycaster that uploaded it.
    owner: u64,
    table: wgpu::Buffer,
    occupancy: wgpu::Buffer,
    bricks: wgpu::Buffer,
    ids: wgpu::Buffer,
    /// The chunk entries of `table`, as last written (the region records are made from them).
    entries: Vec<u32>,
    /// Per slot: the stored chunk's air voxels, and those of them in bricks that hold only air.
    slot_air: Vec<[u32; 2]>,
    /// Whether much of the stored chunks' air lies in empty bricks, so that long rays skip
    /// them ([`GpuWorld::skips_empty_bricks`]).
    bricks_worth_skipping: bool,
    /// The choice set by [`GpuWorld::set_skip_empty_bricks`]; `None`: made from the chunks.
    skip_bricks_set: Option<bool>,
}

impl GpuWorld {
    /// Uploads every loaded chunk of `world`; the window is the loaded bounds grown by one
    /// unloaded chunk on every side that is not the edge of the i128 world (room for
    /// conservative line of sight, which tests voxels beside the ray). Later edits may load,
    /// change or unload chunks within those loaded bounds ([`GpuWorld::update_chunks`]); the
    /// margin stays unloaded. For an empty world the bounds are chunk `(0, 0, 0)`.
    ///
    /// # Errors
    /// [`GpuError::LimitExceeded`] when the window's chunk table or the stored chunks exceed a
    /// device limit (a world whose loaded chunks are far apart has a huge window: upload it in
    /// parts); [`GpuError::Device`] when an allocation fails.
    pub fn from_world(gpu: &GpuRaycaster, world: &VoxelWorld) -> Result<Self, GpuError> {
        // A margin of one unloaded chunk around the loaded ones: conservative line of sight
        // tests voxels beside the ray, so a ray clipped to the window must start one chunk out.
        let origin = ChunkPos::new(0, 0, 0);
        let mut window = Window::around(world.loaded_chunk_bounds().unwrap_or((origin, origin)));
        let (lo, hi) = (window.anchor, window.bounds.max.chunk());
        for a in 0..3 {
            // At most 2^128 - 1 (the whole i128 world in chunks), so u128 holds it.
            let span = hi.axis(a).abs_diff(lo.axis(a)) + 1;
            // Window-relative voxel coordinates must fit in i32, with room for a run of
            // empty chunks that reaches past the window to the end of its region.
            let limit = (i32::MAX as u128 + 1) / 32 - (1 << REGION_SHIFT);
            if span >= limit {
                return Err(GpuError::LimitExceeded {
                    what: "window extent in chunks",
                    needed: u64::try_from(span).unwrap_or(u64::MAX),
                    limit: limit as u64,
                });
            }
            window.dims[a] = span as u32;
        }
        let dims = window.dims;
        let regions: [u64; 3] = std::array::from_fn(|a| {
            (u64::from(dims[a]) + (lo.axis(a) & ((1 << REGION_SHIFT) - 1)) as u64)
                .div_ceil(1 << REGION_SHIFT)
        });
        // Chunk entries, then one four-word record per region.
        let entries = u64::from(dims[0]) * u64::from(dims[1]) * u64::from(dims[2])
            + 4 * regions.iter().product::<u64>();
        let max_binding = gpu
            .limits
            .max_storage_buffer_binding_size
            .min(gpu.limits.max_buffer_size);
        if entries * 4 > max_binding {
            return Err(GpuError::LimitExceeded {
                what: "chunk table (bytes)",
                needed: entries * 4,
                limit: max_binding,
            });
        }
        let mut table = vec![TAG_UNLOADED; window.entries()];
        let mut slots = FxHashMap::default();
        let mut dense = Vec::new();
        for (pos, chunk) in world.chunks() {
            let i = window_index(&window, pos)
                .ok_or_else(|| GpuError::Internal("chunk outside bounds".into()))?;
            table[i] = match chunk.view() {
                ChunkView::Uniform(id) if id.is_air() => TAG_EMPTY,
                ChunkView::Uniform(id) => TAG_UNIFORM | u32::from(id.0),
                ChunkView::Dense(d) => {
                    let slot = slots.len() as u32;
                    slots.insert(pos, slot);
                    dense.push((slot, d));
                    slot
                }
            };
        }
        let rd = window.region_dims();
        let mut records = Vec::new();
        for z in 0..rd[2] {
            for y in 0..rd[1] {
                for x in 0..rd[0] {
                    records.extend(window.region_record(&table, [x, y, z]));
                }
            }
        }
        let slot_capacity = (slots.len() as u32).max(1);
        let mut gw = Self {
            device: gpu.device.clone(),
            owner: gpu.token,
            queue: gpu.queue.clone(),
            window,
            table: create_storage(&gpu.device, "chunk table", entries * 4),
            occupancy: create_storage(&gpu.device, "occupancy", 4),
            bricks: create_storage(&gpu.device, "bricks", 4),
            ids: create_storage(&gpu.device, "ids", 4),
            slots,
            free_slots: Vec::new(),
            slot_capacity: 0,
            max_binding,
            entries: Vec::new(),
            slot_air: Vec::new(),
            bricks_worth_skipping: false,
            skip_bricks_set: None,
        };
        let scope = gw.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        [gw.occupancy, gw.bricks, gw.ids] = gw.slot_buffers(slot_capacity)?;
        gw.slot_capacity = slot_capacity;
        gw.queue
            .write_buffer(&gw.table, 0, bytemuck::cast_slice(&table));
        gw.queue.write_buffer(
            &gw.table,
            (table.len() * 4) as u64,
            bytemuck::cast_slice(&records),
        );
        for (slot, d) in dense {
            gw.write_slot(slot, d);
            gw.note_slot_air(slot, d);
        }
        gw.choose_walk();
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(device_error(e));
        }
        gw.entries = table;
        Ok(gw)
    }

    /// Slot buffers (occupancy, brick summaries, ids) for `capacity` stored chunks, or
    /// [`GpuError::LimitExceeded`] before allocating anything.
    fn slot_buffers(&self, capacity: u32) -> Result<[wgpu::Buffer; 3], GpuError> {
        let ids_bytes = u64::from(capacity) * (ID_WORDS * 4) as u64;
        if ids_bytes > self.max_binding {
            return Err(GpuError::LimitExceeded {
                what: "voxel ids of the stored chunks (bytes)",
                needed: ids_bytes,
                limit: self.max_binding,
            });
        }
        let per_slot = [OCCUPANCY_WORDS * 4, BRICK_WORDS * 4, ID_WORDS * 4];
        let labels = ["occupancy", "bricks", "ids"];
        Ok(std::array::from_fn(|i| {
            create_storage(
                &self.device,
                labels[i],
                u64::from(capacity) * per_slot[i] as u64,
            )
        }))
    }

    /// Records the air of dense chunk `d`, stored in `slot`, for [`GpuWorld::skips_empty_bricks`].
    fn note_slot_air(&mut self, slot: u32, d: &DenseChunk) {
        let slot = slot as usize;
        if self.slot_air.len() <= slot {
            self.slot_air.resize(slot + 1, [0, 0]);
        }
        let (air, brick_air) = d.air_and_brick_air();
        self.slot_air[slot] = [air, brick_air];
    }

    /// Decides from the stored chunks as they are now whether long rays skip empty bricks
    /// ([`GpuWorld::skips_empty_bricks`]).
    fn choose_walk(&mut self) {
        let (air, brick_air) = self.slots.values().fold((0u64, 0u64), |(a, b), &s| {
            let [sa, sb] = self.slot_air.get(s as usize).copied().unwrap_or([0, 0]);
            (a + u64::from(sa), b + u64::from(sb))
        });
        self.bricks_worth_skipping = crate::world::bricks_worth_skipping(air, brick_air);
    }

    /// Whether a batch of long rays skips the empty `8³` bricks of stored chunks whole on the
    /// GPU (`true`) or steps through them voxel by voxel. Long: every ray the GPU casts has a
    /// max distance of at least 256 voxels, or a camera reaches that far.
    /// Shorter batches step through them unless [`GpuWorld::set_skip_empty_bricks`] says
    /// otherwise. Both walks give the same answers; only the speed differs.
    ///
    /// Skipping costs a brick test on every air voxel a ray steps through, and pays where rays
    /// cross much air in empty bricks. Measured on lavapipe: on terrain (54% of its stored
    /// chunks' air in empty bricks) camera rays (max 1024) ran 17% faster skipping, but reach
    /// rays (max 8) 5-25% and sight segments (up to 64) 25% faster stepping; among scattered
    /// solid voxels (0.5% of voxels solid: 7.5% of the air in empty bricks) rays of max 512
    /// ran 20% faster stepping. Unless set, long rays skip when at least a quarter of the
    /// stored chunks' air lies in empty bricks, decided on upload and on every update.
    #[must_use]
    pub fn skips_empty_bricks(&self) -> bool {
        self.skip_bricks_set.unwrap_or(self.bricks_worth_skipping)
    }

    /// Sets whether every batch skips empty bricks (`Some(true)`) or steps through them
    /// (`Some(false)`), from the next batch on; `None` (the default) lets the length of the
    /// rays and the stored chunks decide ([`GpuWorld::skips_empty_bricks`]). For a world whose
    /// rays you know better. A `GpuWorld` that [`GpuWorld::update_or_rebuild`] uploads again
    /// keeps the setting.
    pub fn set_skip_empty_bricks(&mut self, skip: Option<bool>) {
        self.skip_bricks_set = skip;
    }

    /// The shader's `OPTIONS` bits that this world decides for a batch of `long` rays or not
    /// ([`GpuWorld::skips_empty_bricks`]).
    fn walk_flags(&self, long: bool) -> u32 {
        let skip = self
            .skip_bricks_set
            .unwrap_or(long && self.bricks_worth_skipping);
        if skip { 0 } else { FLAG_STEP_EMPTY_BRICKS }
    }

    /// Writes dense chunk `d` into slot `slot` of the slot buffers.
    fn write_slot(&self, slot: u32, d: &DenseChunk) {
        let slot = u64::from(slot);
        self.queue.write_buffer(
            &self.occupancy,
            slot * (OCCUPANCY_WORDS * 4) as u64,
            bytemuck::cast_slice(&d.occupancy[..]),
        );
        let bricks = [d.bricks as u32, (d.bricks >> 32) as u32];
        self.queue.write_buffer(
            &self.bricks,
            slot * (BRICK_WORDS * 4) as u64,
            bytemuck::cast_slice(&bricks),
        );
        let ids: Vec<u32> = (0..ID_WORDS)
            .map(|w| u32::from(d.ids.get(2 * w).0) | u32::from(d.ids.get(2 * w + 1).0) << 16)
            .collect();
        self.queue.write_buffer(
            &self.ids,
            slot * (ID_WORDS * 4) as u64,
            bytemuck::cast_slice(&ids),
        );
    }

    /// Re-uploads the listed chunks from `world` after edits (set, insert or remove). Only
    /// these chunks are written; the GPU keeps what it has of every other chunk, even one
    /// edited in `world` since. New stored chunks that outgrow the slot buffers make them grow
    /// (doubling, the old contents copied on the GPU).
    ///
    /// The chunks that may be loaded are those within the world's loaded bounds when the
    /// `GpuWorld` was built: the window adds a margin of one chunk around them that must stay
    /// unloaded (a ray from outside the window is clipped to it, and conservative line of sight
    /// is exact there only while the margin is empty). Listing a margin chunk that is still
    /// unloaded is fine.
    ///
    /// Nothing changes when an error is returned: the update is checked and planned in full
    /// before anything is written.
    ///
    /// # Errors
    /// [`GpuError::ChunkOutsideWindow`] for a chunk outside the window, or a loaded chunk in its
    /// margin (rebuild with [`GpuWorld::from_world`]); [`GpuError::LimitExceeded`] when the
    /// stored chunks outgrow a device limit; [`GpuError::Device`] when growing the slot
    /// buffers runs out of GPU memory.
    pub fn update_chunks(
        &mut self,
        world: &VoxelWorld,
        chunks: &[ChunkPos],
    ) -> Result<(), GpuError> {
        // Plan on copies: new table entries, slot assignments, chunks to write.
        let mut slots = self.slots.clone();
        let mut free_slots = self.free_slots.clone();
        let mut planned = Vec::with_capacity(chunks.len());
        for &pos in chunks {
            let i = window_index(&self.window, pos).ok_or(GpuError::ChunkOutsideWindow(pos))?;
            let view = world.chunk(pos).map(|c| c.view());
            if view.is_some() && !self.window.may_load(pos) {
                return Err(GpuError::ChunkOutsideWindow(pos));
            }
            planned.push((i, pos, view));
        }
        // Chunks no longer stored give their slots back before new ones take slots, so that
        // the order of the list does not decide whether the slot buffers grow.
        for &(_, pos, view) in &planned {
            if !matches!(view, Some(ChunkView::Dense(_)))
                && let Some(s) = slots.remove(&pos)
            {
                free_slots.push(s);
            }
        }
        let mut entries = Vec::with_capacity(chunks.len());
        let mut to_write = Vec::new();
        let mut regions = Vec::new();
        for (i, pos, view) in planned {
            let entry = match view {
                None => TAG_UNLOADED,
                Some(ChunkView::Uniform(id)) if id.is_air() => TAG_EMPTY,
                Some(ChunkView::Uniform(id)) => TAG_UNIFORM | u32::from(id.0),
                Some(ChunkView::Dense(d)) => {
                    let slot = match slots.get(&pos) {
                        Some(&s) => s,
                        None => {
                            // Slots in use and free slots are always 0..n.
                            let s = free_slots.pop().unwrap_or(slots.len() as u32);
                            slots.insert(pos, s);
                            s
                        }
                    };
                    to_write.push((slot, d));
                    slot
                }
            };
            entries.push((i, entry));
            regions.push(self.window.region_of_chunk(pos));
        }
        // A chunk listed twice was planned twice: its last plan is the one that counts, and
        // writing a slot twice with the same chunk is harmless.
        let needed = slots.values().max().map_or(0, |&s| s + 1);
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let grown = if needed > self.slot_capacity {
            // Doubling, but never past what the device allows (then `slot_buffers` reports
            // the real need).
            let most = u32::try_from(self.max_binding / (ID_WORDS * 4) as u64).unwrap_or(u32::MAX);
            let capacity = needed.next_power_of_two().min(most).max(needed);
            let buffers = self.slot_buffers(capacity)?;
            let mut encoder = self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("voxcast grow slots"),
                });
            for (old, new) in [&self.occupancy, &self.bricks, &self.ids]
                .into_iter()
                .zip(&buffers)
            {
                encoder.copy_buffer_to_buffer(old, 0, new, 0, old.size());
            }
            self.queue.submit([encoder.finish()]);
            Some((capacity, buffers))
        } else {
            None
        };
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(device_error(e));
        }
        // Commit. Writes queued from here run after the copy submitted above.
        if let Some((capacity, [occupancy, bricks, ids])) = grown {
            self.occupancy = occupancy;
            self.bricks = bricks;
            self.ids = ids;
            self.slot_capacity = capacity;
        }
        for (i, entry) in entries {
            self.entries[i] = entry;
            self.queue
                .write_buffer(&self.table, (i * 4) as u64, bytemuck::bytes_of(&entry));
        }
        regions.sort_unstable();
        regions.dedup();
        for r in regions {
            let record = self.window.region_record(&self.entries, r);
            let at = self.window.entries() + 4 * self.window.region_index(r);
            self.queue
                .write_buffer(&self.table, (at * 4) as u64, bytemuck::cast_slice(&record));
        }
        for (slot, d) in to_write {
            self.write_slot(slot, d);
            self.note_slot_air(slot, d);
        }
        self.slots = slots;
        self.free_slots = free_slots;
        self.choose_walk();
        Ok(())
    }

    /// [`GpuWorld::update_chunks`] for a world that grows: when a listed chunk lies outside
    /// what this `GpuWorld` can hold ([`GpuError::ChunkOutsideWindow`]), the whole of `world`
    /// is uploaded again ([`GpuWorld::from_world`]), around its loaded bounds as they are now.
    /// Returns `true` when it did so. A rebuild uploads every chunk as `world` has it, also
    /// chunks edited but not listed.
    ///
    /// # Errors
    /// As [`GpuWorld::update_chunks`] and [`GpuWorld::from_world`]; when a rebuild fails, this
    /// `GpuWorld` is left as it was.
    pub fn update_or_rebuild(
        &mut self,
        gpu: &GpuRaycaster,
        world: &VoxelWorld,
        chunks: &[ChunkPos],
    ) -> Result<bool, GpuError> {
        match self.update_chunks(world, chunks) {
            Err(GpuError::ChunkOutsideWindow(_)) => {
                let mut rebuilt = Self::from_world(gpu, world)?;
                rebuilt.set_skip_empty_bricks(self.skip_bricks_set);
                *self = rebuilt;
                Ok(true)
            }
            other => other.map(|()| false),
        }
    }

    /// The anchor: the lowest chunk of the window.
    #[must_use]
    pub fn anchor(&self) -> ChunkPos {
        self.window.anchor
    }

    /// The window's size in chunks (x, y, z).
    #[must_use]
    pub fn dims(&self) -> [u32; 3] {
        self.window.dims
    }

    /// Number of chunks stored voxel by voxel (the others are uniform and cost one table entry).
    #[must_use]
    pub fn stored_chunks(&self) -> usize {
        self.slots.len()
    }

    /// Bytes of GPU buffers this world holds: chunk table plus slot buffers (allocated capacity).
    #[must_use]
    pub fn memory_bytes(&self) -> u64 {
        self.table.size() + self.occupancy.size() + self.bricks.size() + self.ids.size()
    }
}

fn window_index(w: &Window, pos: ChunkPos) -> Option<usize> {
    let mut idx = [0usize; 3];
    for (a, i) in idx.iter_mut().enumerate() {
        let rel = pos.axis(a).checked_sub(w.anchor.axis(a))?;
        if !(0..i128::from(w.dims[a])).contains(&rel) {
            return None;
        }
        *i = rel as usize;
    }
    Some(idx[0] + w.dims[0] as usize * (idx[1] + w.dims[1] as usize * idx[2]))
}

fn create_storage(device: &wgpu::Device, label: &str, size: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: size.max(4).next_multiple_of(4),
        // COPY_SRC: slot buffers are copied into larger ones when they grow.
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })
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
