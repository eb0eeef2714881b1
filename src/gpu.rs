//! GPU batch raycasting on wgpu: one DDA per compute invocation, exactly the CPU reference's
//! answers (see the parity contract in the crate docs).
//!
//! The plumbing follows wgpu's `hello_compute`: instance, adapter, device, buffers (input
//! `STORAGE`, output `STORAGE | COPY_SRC`, readback `MAP_READ | COPY_DST`), pipeline, bind
//! group, dispatch, copy, map, read. On a device that is the CPU the copies are left out: the
//! shader reads the mapped upload buffer and writes a buffer the host maps ([`DispatchMemory`]).
//!
//! The i128 world is split on the host: a [`GpuWorld`] covers a window of chunks from an
//! anchor [`ChunkPos`], and everything on the GPU is an i32 voxel relative to the window's
//! lowest voxel. Rays that start outside the window are clipped to it on the host, with the
//! same exact stepping as the CPU reference, or answered on the host when they cannot reach it.

use std::sync::{Arc, Mutex};

use bytemuck::{Pod, Zeroable};

use rustc_hash::FxHashMap;

use crate::camera::{Camera, CameraError};
use crate::coords::ChunkPos;
use crate::ray::{LineOfSight, LineOfSightOptions, RaycastOptions, RaycastOutcome, VoxelRay};
use crate::world::OCCUPANCY_WORDS;

/// The wgpu this crate is built on, for [`GpuRaycaster::from_device`]: a device must come from
/// this same version of wgpu.
pub use wgpu;
pub use wgpu::AdapterInfo;

mod agents;
mod device;
mod dispatch;
mod follow;
mod host;
mod pending;
mod probe;
mod store;
mod window;
mod world;

pub use agents::{GpuAgents, Visibility};
use device::Entry;
use dispatch::{DispatchBuffers, Shared};
use host::HostStaging;
pub use pending::PendingBatch;
pub use probe::{DispatchMemory, GpuConfig, SelfCheck, SelfCheckReport};
pub use world::{GpuWorld, WindowMove};

/// The WGSL source of the compute shader: `shaders/dda.wgsl` followed by `shaders/exact.wgsl`
/// (the exact arithmetic it uses), joined in that order so that naga's line numbers in
/// `dda.wgsl` are its own.
pub const SHADER_SOURCE: &str = concat!(
    include_str!("../shaders/dda.wgsl"),
    include_str!("../shaders/exact.wgsl")
);

const WORKGROUP_SIZE: u32 = 64;
/// Default for the most rays in one dispatch (and so the size the batch buffers grow to); see
/// [`GpuRaycaster::set_max_dispatch_rays`].
pub const MAX_DISPATCH_RAYS: u32 = 1 << 19;
const TAG_MASK: u32 = 0xC000_0000;
const TAG_EMPTY: u32 = 0x4000_0000;
const TAG_UNLOADED: u32 = 0x8000_0000;
const TAG_UNIFORM: u32 = 0xC000_0000;
/// Words of a stored chunk's slot record: its brick summary (two words), where its id record
/// starts in the id heap, and the id record's bits per value.
const SLOT_WORDS: usize = 4;
/// An id record's first words: one entry per `8³` brick of the chunk.
const RECORD_BRICKS: usize = 64;
/// In a brick's entry of an id record: the brick is this one id throughout (the low 16 bits),
/// with no values stored.
const BRICK_UNIFORM: u32 = 0x8000_0000;
/// The most bytes of GPU memory a stored chunk can take: occupancy bits, slot record and an id
/// record of raw 16-bit ids in every brick.
#[deprecated(
    since = "0.1.0",
    note = "stored chunks are packed: GpuWorld::stored_chunk_bytes gives a chunk's size, \
            GpuWorld::stored_bytes the total"
)]
pub const BYTES_PER_STORED_CHUNK: u64 =
    ((OCCUPANCY_WORDS + SLOT_WORDS + RECORD_BRICKS + crate::coords::CHUNK_VOLUME / 2) * 4) as u64;

// The shader's OPTIONS bits and the other constants both sides write: twins of the same-named
// constants of shaders/dda.wgsl (the test `shader_constants_equal_their_rust_twins` compares).
const ORIGIN_REPORT: u32 = 0;
const ORIGIN_SKIP: u32 = 1;
const ORIGIN_EXIT_SOLID: u32 = 2;
const FLAG_STOP_UNLOADED: u32 = 4;
const FLAG_EVERY_NON_AIR: u32 = 8;
const FLAG_CONSERVATIVE: u32 = 16;
const FLAG_PER_VOXEL: u32 = 32;
const FLAG_STEP_EMPTY_BRICKS: u32 = 64;
const FLAG_TOROIDAL: u32 = 128;
const RAY_NEGATIVE_SHIFT: u32 = 3;
const RAY_ENTRY_SHIFT: u32 = 6;
const RAY_CLIPPED: u32 = 256;
const RAY_PLANE_SHIFT: u32 = 9;
/// Where the packed crossing counts start in `GpuRay::flags`.
const RAY_COUNTS_SHIFT: u32 = 12;
/// The largest crossing count a ray can reach: one past [`crate::MAX_DISTANCE_CAP`], in the
/// shader's 17 bits per axis.
const COUNT_MAX: u32 = (1 << 17) - 1;
const STATUS_MISS: u32 = 0;
const STATUS_HIT: u32 = 1;
const STATUS_UNLOADED: u32 = 2;
/// A pair's eyes are too close for a segment (`cast_pairs`).
const STATUS_ZERO_LENGTH: u32 = 4;
/// A pair's eyes are farther apart than [`crate::MAX_DISTANCE_CAP`].
const STATUS_TOO_LONG: u32 = 5;

/// What can go wrong on the GPU path. Each message says what happened and, where the caller
/// can do something about it, what.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GpuError {
    /// No adapter was found.
    #[error(
        "no GPU adapter found. To get one, install a Vulkan driver (Debian or Ubuntu, software: \
         `apt-get install mesa-vulkan-drivers`) or choose one with WGPU_BACKEND or \
         WGPU_ADAPTER_NAME. wgpu says: {0}"
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
    /// The device given to [`GpuRaycaster::from_device`] cannot run the shader: one of its
    /// limits (named in the message) is below what the shader needs.
    #[error(
        "the wgpu device cannot run voxcast's compute shader ({0}): create it with at least \
         wgpu::Limits::default(), or let GpuRaycaster::new create a device"
    )]
    UnsuitableDevice(String),
    /// The world needs more than a device limit allows, or a window wider than voxcast's
    /// i32 window-relative coordinates hold. The window is dense: from
    /// [`GpuWorld::from_world`] it spans the box around every loaded chunk, so chunks far
    /// apart make it huge even when few are loaded; from [`GpuWorld::with_window`] it is the
    /// box its half extent gives.
    #[error(
        "{what} needs {} but the limit is {limit}: a GpuWorld holds a whole box of chunks \
         (from_world: the box around the loaded chunks, so unload chunks far from the rest or \
         keep far-apart regions in separate VoxelWorlds; with_window: its half extent, so \
         choose a smaller one); a device given to GpuRaycaster::from_device has the limits it \
         was created with, so request it with the adapter's own (adapter.limits())",
        needed_text(*.needed)
    )]
    LimitExceeded {
        /// Which resource.
        what: &'static str,
        /// How much it needs; `u64::MAX` stands for that much or more (a window across most
        /// of the i128 world spans up to 2^123 chunks).
        needed: u64,
        /// The limit: the device's, or for the window extent voxcast's own.
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
    /// window's margin, of a world made by [`GpuWorld::from_world`] (see
    /// [`GpuWorld::update_chunks`]).
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
    /// [`GpuWorld::with_window`] or [`GpuWorld::recenter`] was given a centre that is no chunk
    /// of the i128 world (an index outside [`ChunkPos::MIN_INDEX`]`..=`[`ChunkPos::MAX_INDEX`]).
    #[error(
        "centre {0:?} is no chunk of the i128 world: chunk indices lie in \
         ChunkPos::MIN_INDEX..=ChunkPos::MAX_INDEX (the chunk of a voxel: WorldPos::chunk)"
    )]
    CentreOutsideWorld(ChunkPos),
    /// [`GpuWorld::recenter`] on a world made by [`GpuWorld::from_world`], whose window is the
    /// box around the loaded chunks and does not move.
    #[error(
        "this GpuWorld covers the loaded chunks' box (GpuWorld::from_world) and cannot move: \
         create it with GpuWorld::with_window to follow a centre"
    )]
    WindowCannotMove,
    /// A batch still in flight would have seen an update or move of its world in a later
    /// dispatch (a batch of more than two dispatches, see
    /// [`GpuRaycaster::set_max_dispatch_rays`]): its answers would mix two worlds, so it has
    /// none. Take a large batch before changing its world, or cast it again.
    #[error(
        "the GpuWorld changed while this batch was in flight, between its dispatches: take \
         large batches before updating or moving their world, or cast the batch again"
    )]
    WorldChanged,
    /// The [`GpuAgents`] were uploaded for the window the world had before it moved
    /// ([`GpuWorld::recenter`]): their eyes are relative to the window.
    #[error(
        "these GpuAgents were uploaded before their GpuWorld moved (GpuWorld::recenter): \
         upload them again with GpuAgents::update"
    )]
    AgentsForAnotherWindow,
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
    /// The device's answers to the self-check at creation differ from the CPU reference (the
    /// first difference is given): voxcast's answers on it would not be exact.
    #[error(
        "this GPU's answers differ from the CPU reference, so voxcast's would not be exact on it: \
         {0}. Please report it with the adapter (GpuRaycaster::adapter_info); to use the GPU \
         anyway, create the raycaster with GpuConfig {{ self_check: SelfCheck::AllowUnverified, \
         ..GpuConfig::default() }}"
    )]
    SelfCheckFailed(String),
    /// The camera cannot give an image (a hand-edited one: [`Camera::new`] refuses the same).
    #[error("bad camera: {0}")]
    Camera(CameraError),
    /// The GPU returned a result the host cannot decode (a bug: please report it).
    #[error("internal GPU error (a bug in voxcast: please report it): {0}")]
    Internal(String),
}

/// One ray as the shader reads it (`GpuRay` in `shaders/dda.wgsl`): 48 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct GpuRay {
    /// Start voxel, window-relative.
    voxel: [i32; 3],
    /// Bits 0..11 the ray's flags (`RAY_*`), bits 12..31 the low 20 bits of the packed counts.
    flags: u32,
    b: [f32; 3],
    max_distance: f32,
    /// `1 / |d|` on an enabled axis, `|d|` on a disabled one.
    inv: [f32; 3],
    /// Bits 20..50 of the packed crossing counts (`x | y << 17 | z << 34`).
    counts_hi: u32,
}

/// One answer as the shader writes it (`GpuHit` in `shaders/dda.wgsl`): 20 bytes, the voxel
/// relative to the ray's start voxel (see `Window::decode`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct GpuHit {
    w0: u32,
    w1: u32,
    w2: u32,
    distance: u32,
    uv: u32,
}

/// Per-dispatch parameters (`Params` in `shaders/dda.wgsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct GpuParams {
    dims: [u32; 3],
    region_phase: u32,
    table_phase: [u32; 3],
    world_edge: u32,
    region_dims: [u32; 3],
    ray_base: u32,
    region_table_phase: [u32; 3],
    ray_count: u32,
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
    cam_inv_w: f32,
    cam_inv_h: f32,
    /// Always 0: the shader's `pin` hides values behind it (see `shaders/exact.wgsl`).
    zero: u32,
    /// `cast_pairs`: 1 to write each pair's answer besides its bit.
    details: u32,
}

/// A wgpu device with the raycasting pipelines: its own ([`GpuRaycaster::new`]) or the
/// application's ([`GpuRaycaster::from_device`]). Create one and reuse it: creation compiles the
/// shader for the default options, with both walks through empty bricks, and checks the device
/// against the CPU reference ([`GpuRaycaster::self_check`]). The shader is
/// specialised per combination of options (origin policy, unloaded policy, whether the
/// material filter is the default, conservative line of sight, per-voxel mode) and walk
/// (skipping empty bricks or stepping through them, see [`GpuWorld::skips_empty_bricks`]): the
/// first batch with another combination compiles it once more (about 20 ms on lavapipe), and
/// later batches reuse it.
///
/// Each kind of batch comes in two forms: `submit_*` returns a [`PendingBatch`] at once,
/// whose answers are taken later without blocking (for a frame loop: submit this frame, take
/// next frame); the plain calls (`raycast`, `line_of_sight`, `raycast_camera`, ...) submit and
/// wait. Several batches may be in flight at once, from one thread or several: a raycaster
/// (and a [`GpuWorld`]) is `Send + Sync`.
///
/// It keeps the buffers of finished dispatches for later batches, in GPU and host memory:
/// [`GpuRaycaster::kept_memory`] tells how much, [`GpuRaycaster::release_buffers`] frees them.
#[derive(Debug)]
pub struct GpuRaycaster {
    shared: Arc<Shared>,
    info: wgpu::AdapterInfo,
    limits: wgpu::Limits,
    /// The bind group and pipeline layouts of the ray entry points and of `cast_pairs`.
    layouts: [(wgpu::BindGroupLayout, wgpu::PipelineLayout); 2],
    module: wgpu::ShaderModule,
    /// The pipelines made so far, by entry point and option flags.
    pipelines: Mutex<FxHashMap<(Entry, u32), wgpu::ComputePipeline>>,
    /// Most rays per dispatch asked for; the device's limits may lower it.
    max_dispatch_rays: u32,
    /// Tells this raycaster's [`GpuWorld`]s from those of another: `wgpu::Device`s of separate
    /// instances can compare equal (their ids are per instance).
    token: u64,
    self_check: SelfCheckReport,
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
    /// Wall time from the submit to the answers being ready, in seconds (for a blocking
    /// call: the whole call).
    pub total_seconds: f64,
    /// Of that, the time spent on the host, in seconds: preparing and staging the rays,
    /// submitting, reading back and decoding the answers; not waiting for the GPU.
    pub host_seconds: f64,
    /// Bytes written to the device for the batch: rays (48 each) or agent pairs (8 each),
    /// parameters, and the material filter when the shader reads it and the buffers do not hold
    /// it already. The agents' eyes ([`GpuAgents`]) are not counted here.
    pub bytes_up: u64,
    /// Bytes read back: 20 per answer, or for agent pairs a bit each (4 bytes per 32) plus 20
    /// each with answers.
    pub bytes_down: u64,
}

/// What a [`GpuRaycaster`] keeps allocated between batches ([`GpuRaycaster::kept_memory`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeptMemory {
    /// GPU buffers of finished dispatches, kept for later ones: per ray of a dispatch 48 bytes
    /// of ray and 20 of answer, each twice (on the device, and mapped for upload and
    /// readback; once where [`GpuRaycaster::shares_host_memory`]), rounded up to a power of
    /// two of bytes, at most [`MAX_DISPATCH_RAYS`] rays
    /// (or what [`GpuRaycaster::set_max_dispatch_rays`] set) a dispatch; a set per dispatch
    /// that was in flight at once; plus a few KiB each of parameters and material filter.
    pub gpu_bytes: u64,
    /// Host working buffers of finished ray batches: 104 bytes per ray of the largest batch
    /// (at most two such sets, each at most 2^20 rays for blocking calls), plus each set's
    /// coherence sort counters and part ends (at most 128 KiB per thread and 256 KiB).
    pub host_bytes: u64,
}

/// Replaces what `m` guards with `value`, also after a panic poisoned it (the old value, in
/// an unknown state, is dropped).
fn replace_locked<T>(m: &Mutex<T>, value: T) {
    *m.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = value;
    m.clear_poison();
}

/// [`GpuError::LimitExceeded`]'s `needed` as its message says it.
fn needed_text(needed: u64) -> String {
    if needed == u64::MAX {
        format!("{needed} or more")
    } else {
        needed.to_string()
    }
}

fn device_error(e: impl std::fmt::Display) -> GpuError {
    GpuError::Device(e.to_string())
}

impl GpuRaycaster {
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

    /// A one-line description of the adapter and of the self-check's outcome, e.g.
    /// `llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan, llvmpipe Mesa 22.3.6); exact: 2998 rays and
    /// 1296 camera pixels match the CPU reference`.
    #[must_use]
    pub fn adapter_summary(&self) -> String {
        format!(
            "{} ({:?}, {} {}); {}",
            self.info.name,
            self.info.backend,
            self.info.driver,
            self.info.driver_info,
            self.self_check
        )
    }

    /// What the self-check found when this raycaster was created: a few thousand rays and a
    /// small camera image cast on the device over a small terrain, every answer compared with
    /// the CPU reference. The shader's arithmetic is exact on every GPU whose f32 `+ - *`
    /// round to nearest even (see the crate docs); the check catches a device or driver where
    /// that does not hold. A raycaster exists with a failed check only where
    /// [`SelfCheck::AllowUnverified`] allowed it.
    #[must_use]
    pub fn self_check(&self) -> &SelfCheckReport {
        &self.self_check
    }

    /// Whether batches share their buffers with the host ([`DispatchMemory::Auto`] on a device
    /// that is the CPU): the shader reads rays where the host writes them and the host reads
    /// answers where the shader writes them. `false` where they are staged and copied.
    #[must_use]
    pub fn shares_host_memory(&self) -> bool {
        self.shared.host_shared
    }

    /// Sets the most rays (or pixels) one dispatch takes; larger batches are split into several
    /// dispatches, which run one after another while the host stages the next and reads the
    /// last. Smaller dispatches keep each GPU submission short (watchdogs, frame pacing) and
    /// the batch buffers small: 336 bytes of buffers per ray of this size (rays, hits, and two
    /// sets of upload and readback buffers; half that where they are shared with the host).
    /// Clamped to `1..=` what the device's limits allow; the default is [`MAX_DISPATCH_RAYS`].
    /// Results do not depend on it.
    pub fn set_max_dispatch_rays(&mut self, rays: u32) {
        self.max_dispatch_rays = rays.max(1);
    }

    /// Memory this raycaster keeps between batches, in bytes: see [`KeptMemory`]. Both parts
    /// grow with the largest batch so far and stay until [`GpuRaycaster::release_buffers`].
    #[must_use]
    pub fn kept_memory(&self) -> KeptMemory {
        let gpu = self
            .shared
            .pool
            .lock()
            .map_or(0, |p| p.iter().map(DispatchBuffers::bytes).sum());
        let host = self
            .shared
            .staging
            .lock()
            .map_or(0, |s| s.iter().map(HostStaging::bytes).sum());
        KeptMemory {
            gpu_bytes: gpu,
            host_bytes: host,
        }
    }

    /// Frees the buffers kept between batches ([`GpuRaycaster::kept_memory`]). The next batch
    /// allocates what it needs again. Worth calling after a rare large batch (a
    /// screenshot-sized camera, say) whose buffers should not stay held. Batches in flight keep
    /// theirs until they finish (then they are kept again); results never depend on it.
    /// Created pipelines and uploaded [`GpuWorld`]s are kept.
    pub fn release_buffers(&self) {
        replace_locked(&self.shared.pool, Vec::new());
        replace_locked(&self.shared.staging, Vec::new());
    }

    /// Timing of the last batch (raycast, line of sight, camera or visibility) on this
    /// raycaster to finish; for a blocking call of more than 2^20 rays, of all its bands.
    #[must_use]
    pub fn last_batch_stats(&self) -> BatchStats {
        self.shared.stats.lock().map(|s| *s).unwrap_or_default()
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
        self.blocking(rays, out, |band, v| {
            self.submit_raycast_into(world, band, opts, v)
        })
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
        self.blocking(rays, out, |band, v| {
            self.submit_line_of_sight_into(world, band, opts, v)
        })
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
    /// As [`GpuRaycaster::raycast`]; [`GpuError::Camera`] for a width or height of 0,
    /// [`GpuError::BatchTooLarge`] for more than `u32::MAX` pixels,
    /// [`GpuError::OutputTooLarge`] when the outcomes do not fit in host memory.
    pub fn raycast_camera(
        &self,
        world: &GpuWorld,
        camera: &Camera,
        opts: &RaycastOptions,
    ) -> Result<Vec<RaycastOutcome>, GpuError> {
        let mut out = Vec::new();
        self.raycast_camera_into(world, camera, opts, &mut out)?;
        Ok(out)
    }

    /// [`GpuRaycaster::raycast_camera`] into `out`, cleared and refilled row by row, its
    /// allocation reused (see [`GpuRaycaster::raycast_into`]): for a camera rendered every frame.
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast_into`].
    pub fn raycast_camera_into(
        &self,
        world: &GpuWorld,
        camera: &Camera,
        opts: &RaycastOptions,
        out: &mut Vec<RaycastOutcome>,
    ) -> Result<(), GpuError> {
        let pending = self.submit_camera_into(world, camera, opts, std::mem::take(out))?;
        *out = pending.wait()?;
        Ok(())
    }

    /// The former name of [`GpuRaycaster::raycast_camera`].
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast_camera`].
    #[deprecated(
        note = "renamed to GpuRaycaster::raycast_camera, the CPU's name for the same call"
    )]
    pub fn render_camera(
        &self,
        world: &GpuWorld,
        camera: &Camera,
        opts: &RaycastOptions,
    ) -> Result<Vec<RaycastOutcome>, GpuError> {
        self.raycast_camera(world, camera, opts)
    }

    /// The former name of [`GpuRaycaster::raycast_camera_into`].
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast_camera_into`].
    #[deprecated(
        note = "renamed to GpuRaycaster::raycast_camera_into, the CPU's name for the same call"
    )]
    pub fn render_camera_into(
        &self,
        world: &GpuWorld,
        camera: &Camera,
        opts: &RaycastOptions,
        out: &mut Vec<RaycastOutcome>,
    ) -> Result<(), GpuError> {
        self.raycast_camera_into(world, camera, opts, out)
    }

    /// A blocking call: `submit` of `rays` in bands of at most [`HOST_BAND`](host::HOST_BAND)
    /// rays, the next band prepared while the GPU runs the last, answers appended to `out`.
    fn blocking<T: Send>(
        &self,
        rays: &[VoxelRay],
        out: &mut Vec<T>,
        submit: impl Fn(&[VoxelRay], Vec<T>) -> Result<PendingBatch<Vec<T>>, GpuError>,
    ) -> Result<(), GpuError> {
        if rays.len() <= host::HOST_BAND {
            *out = submit(rays, std::mem::take(out))?.wait()?;
            return Ok(());
        }
        out.clear();
        out.try_reserve(rays.len())
            .map_err(|_| GpuError::OutputTooLarge(rays.len() as u64))?;
        let mut total = BatchStats::default();
        let mut add = |s: BatchStats| {
            total.gpu_rays += s.gpu_rays;
            total.dispatches += s.dispatches;
            total.kernel_seconds = s
                .kernel_seconds
                .map(|k| k + total.kernel_seconds.unwrap_or(0.0));
            total.host_seconds += s.host_seconds;
            total.bytes_up += s.bytes_up;
            total.bytes_down += s.bytes_down;
        };
        let started = std::time::Instant::now();
        let mut last: Option<PendingBatch<Vec<T>>> = None;
        for band in rays.chunks(host::HOST_BAND) {
            let next = submit(band, Vec::new())?;
            if let Some(done) = last.replace(next) {
                out.extend(done.wait()?);
                add(self.last_batch_stats());
            }
        }
        if let Some(done) = last {
            out.extend(done.wait()?);
            add(self.last_batch_stats());
        }
        total.total_seconds = started.elapsed().as_secs_f64();
        replace_locked(&self.shared.stats, total);
        Ok(())
    }

    /// Starts a batch call: checks that `world` belongs to this raycaster's device. Returns
    /// the call's start time.
    fn begin_call(&self, world: &GpuWorld) -> Result<std::time::Instant, GpuError> {
        if world.owner != self.token {
            return Err(GpuError::WorldFromAnotherDevice);
        }
        self.shared.check_lost()?;
        Ok(std::time::Instant::now())
    }
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

    /// A scalar constant's value, as both sides write it.
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Value {
        U(u32),
        I(i32),
        F(f32),
    }

    #[test]
    fn shader_constants_equal_their_rust_twins() {
        use Value::{F, I, U};
        let twins: &[(&str, Value)] = &[
            ("AXIS_NONE", U(crate::cpu_ref::AXIS_NONE)),
            ("T_DISABLED", F(crate::cpu_ref::T_DISABLED)),
            ("NEAR_TIE", F(crate::cpu_ref::NEAR_TIE)),
            ("MIN_NORMAL", F(f32::MIN_POSITIVE)),
            ("TAG_MASK", U(TAG_MASK)),
            ("TAG_EMPTY", U(TAG_EMPTY)),
            ("TAG_UNLOADED", U(TAG_UNLOADED)),
            ("TAG_UNIFORM", U(TAG_UNIFORM)),
            ("OCC_WORDS", U(OCCUPANCY_WORDS as u32)),
            ("SLOT_WORDS", U(SLOT_WORDS as u32)),
            ("RECORD_BRICKS", U(RECORD_BRICKS as u32)),
            ("BRICK_UNIFORM", U(BRICK_UNIFORM)),
            ("BRICK_EDGE", I(crate::world::BRICK_EDGE as i32)),
            ("ORIGIN_REPORT", U(ORIGIN_REPORT)),
            ("ORIGIN_SKIP", U(ORIGIN_SKIP)),
            ("ORIGIN_EXIT_SOLID", U(ORIGIN_EXIT_SOLID)),
            ("FLAG_STOP_UNLOADED", U(FLAG_STOP_UNLOADED)),
            ("FLAG_EVERY_NON_AIR", U(FLAG_EVERY_NON_AIR)),
            ("FLAG_CONSERVATIVE", U(FLAG_CONSERVATIVE)),
            ("FLAG_PER_VOXEL", U(FLAG_PER_VOXEL)),
            ("FLAG_STEP_EMPTY_BRICKS", U(FLAG_STEP_EMPTY_BRICKS)),
            ("FLAG_TOROIDAL", U(FLAG_TOROIDAL)),
            ("RAY_NEGATIVE_SHIFT", U(RAY_NEGATIVE_SHIFT)),
            ("RAY_ENTRY_SHIFT", U(RAY_ENTRY_SHIFT)),
            ("RAY_CLIPPED", U(RAY_CLIPPED)),
            ("RAY_PLANE_SHIFT", U(RAY_PLANE_SHIFT)),
            ("RAY_FLAG_BITS", U((1 << RAY_COUNTS_SHIFT) - 1)),
            ("COUNT_BITS", U(COUNT_MAX)),
            ("STATUS_MISS", U(STATUS_MISS)),
            ("STATUS_HIT", U(STATUS_HIT)),
            ("STATUS_UNLOADED", U(STATUS_UNLOADED)),
            ("STATUS_ZERO_LENGTH", U(STATUS_ZERO_LENGTH)),
            ("STATUS_TOO_LONG", U(STATUS_TOO_LONG)),
            ("MAX_DISTANCE_CAP", F(crate::MAX_DISTANCE_CAP)),
            ("MIN_SQUARED_LENGTH", F(crate::ray::MIN_SQUARED_LENGTH)),
        ];
        // Constants the host never writes or reads: internal to the shader.
        let shader_only = [
            "BLOCK_BITS",
            "LAYER_BITS",
            "HALF_BITS",
            "FLAG_ORIGIN_MASK",
            "RAY_ENABLED_SHIFT",
            "STATUS_BITS",
            "STATUS_RUNAWAY",
            "MAX_ITERATIONS",
            "WALK_HIT",
            "WALK_EMPTY_BRICK",
            "WALK_LEFT_CHUNK",
            "WALK_MISS",
            "ID_LATER",
        ];
        let m = module();
        let mut seen = Vec::new();
        for (_, c) in m.constants.iter() {
            let name = c.name.clone().unwrap_or_default();
            let value = match m.global_expressions[c.init] {
                naga::Expression::Literal(naga::Literal::U32(v)) => U(v),
                naga::Expression::Literal(naga::Literal::I32(v)) => I(v),
                naga::Expression::Literal(naga::Literal::F32(v)) => F(v),
                ref other => panic!("shader constant {name} is not a scalar literal: {other:?}"),
            };
            match twins.iter().find(|(n, _)| *n == name) {
                Some(&(_, rust)) => assert_eq!(value, rust, "{name}: shader against Rust"),
                None => assert!(
                    shader_only.contains(&name.as_str()),
                    "shader constant {name} is neither a twin of a Rust constant nor listed as \
                     shader-only"
                ),
            }
            seen.push(name);
        }
        for (name, _) in twins {
            assert!(
                seen.iter().any(|s| s == name),
                "{name} is not in the shader"
            );
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
