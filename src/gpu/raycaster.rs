//! [`GpuRaycaster`]: every public call of the GPU side, blocking and submit forms side by side.
//! Each call checks its input, has the stages below do the work (prepare, flight, answers)
//! and returns the answers, or a [`PendingBatch`] that yields them later.

use std::sync::Arc;
use std::time::Instant;

use crate::agents::Agent;
use crate::boxcast::{BoxCast, BoxCastOutcome};
use crate::camera::{Camera, CameraError};
use crate::coords::ChunkPos;
use crate::gpu::agents::{GpuAgents, Visibility, VisiblePairs, pair_flights};
use crate::gpu::answers::{CameraAnswers, Collector, PendingBatch, ray_flight};
use crate::gpu::boxes::box_flight;
use crate::gpu::decode::HostAnswer;
use crate::gpu::device::{Device, GpuConfig, SelfCheck};
use crate::gpu::error::GpuError;
use crate::gpu::flight::{BatchStats, Batches, Binding, Flight, Items, KeptMemory};
use crate::gpu::layout::{Entry, MAX_DISPATCH_RAYS, SHADER_SOURCE, option_flags};
use crate::gpu::prepare::{HOST_BAND, HostRay, camera_params, camera_rays, shader_camera_in};
use crate::gpu::probe::{Probe, SelfCheckReport};
use crate::gpu::sensors::{GpuSensorRig, sensor_flights};
use crate::gpu::world::GpuWorld;
use crate::ray::{
    LineOfSight, LineOfSightOptions, RaycastOptions, RaycastOutcome, VoxelRay, WindowOutcome,
    WindowRay,
};
use crate::sensors::{SensorPose, SensorReadings, SensorRig};
use crate::world::VoxelWorld;

/// A wgpu device with the raycasting pipelines: its own ([`GpuRaycaster::new`]) or the
/// application's ([`GpuRaycaster::from_device`]). Create one and reuse it: creation compiles the
/// shader for the default options, with both walks through empty bricks, and checks the device
/// against the CPU reference ([`GpuRaycaster::self_check`]). The shader is specialised per
/// combination of options (origin policy, unloaded policy, whether the material filter is the
/// default, conservative line of sight, per-voxel mode) and walk (skipping empty bricks or
/// stepping through them, see [`GpuWorld::skips_empty_bricks`]): the first batch with another
/// combination compiles it once more (about 20 ms on lavapipe), and later batches reuse it.
///
/// Worlds and agents are uploaded through it ([`GpuRaycaster::upload_world`],
/// [`GpuRaycaster::upload_window`], [`GpuRaycaster::upload_agents`]) and cast against with the
/// raycaster that uploaded them. Every query takes its arguments as the CPU reference does:
/// the query, the world, the options.
///
/// Each kind of batch comes in two forms: `submit_*` returns a [`PendingBatch`] at once,
/// whose answers are taken later without blocking (for a frame loop: submit this frame, take
/// next frame); the plain calls (`raycast`, `line_of_sight`, `raycast_camera`, ...) submit and
/// wait. Several batches may be in flight at once, from one thread or several: a raycaster
/// (and a [`GpuWorld`]) is `Send + Sync`.
///
/// It keeps the buffers of finished dispatches for later batches, in GPU and host memory:
/// [`GpuRaycaster::kept_memory`] tells how much, [`GpuRaycaster::release_buffers`] frees them.
/// Dropping the raycaster with its worlds, agents and batches ends voxcast's use of the device:
/// the thread that submits to it is joined once the device has finished its work.
#[derive(Debug)]
pub struct GpuRaycaster {
    batches: Arc<Batches>,
    /// Most rays per dispatch asked for; the device's limits may lower it.
    max_dispatch_rays: u32,
    self_check: SelfCheckReport,
}

impl GpuRaycaster {
    /// Picks an adapter, creates the device and pipelines, and runs the self-check (see
    /// [`GpuRaycaster::self_check`]): [`GpuRaycaster::new_with`] with the default
    /// [`GpuConfig`].
    ///
    /// # Errors
    /// As [`GpuRaycaster::new_with`].
    pub async fn new() -> Result<Self, GpuError> {
        Self::new_with(GpuConfig::default()).await
    }

    /// Picks an adapter, creates the device and pipelines, and runs the self-check.
    ///
    /// The adapter honours `WGPU_BACKEND` (default: the primary backends, Vulkan, Metal and
    /// DX12), `WGPU_ADAPTER_NAME` (a case-insensitive substring of the adapter name, such as
    /// `llvmpipe` for lavapipe) and `WGPU_POWER_PREF`. The device gets the adapter's own limits.
    ///
    /// # Errors
    /// [`GpuError::NoAdapter`] when no adapter exists, [`GpuError::AdapterNotFound`] when
    /// `WGPU_ADAPTER_NAME` matches none, [`GpuError::RequestDevice`] when the device fails,
    /// [`GpuError::SelfCheckFailed`] when the device's answers differ from the CPU reference
    /// (unless `config` allows that).
    pub async fn new_with(config: GpuConfig) -> Result<Self, GpuError> {
        Self::checked(Device::open(config, SHADER_SOURCE.into()).await?, config)
    }

    /// [`GpuRaycaster::new`], blocking on the future with pollster.
    ///
    /// # Errors
    /// As [`GpuRaycaster::new`].
    pub fn new_blocking() -> Result<Self, GpuError> {
        pollster::block_on(Self::new())
    }

    /// [`GpuRaycaster::new_with`], blocking on the future with pollster.
    ///
    /// # Errors
    /// As [`GpuRaycaster::new_with`].
    pub fn new_blocking_with(config: GpuConfig) -> Result<Self, GpuError> {
        pollster::block_on(Self::new_with(config))
    }

    /// A raycaster whose shader is `wgsl` instead of [`SHADER_SOURCE`]: for testing the
    /// parity contract against a variant of the shader
    /// ([`spec_variants::variant`](crate::spec_variants::variant)). The self-check runs as for
    /// [`GpuRaycaster::new`]. `wgsl` must keep the shader's entry points, bindings and structs.
    ///
    /// # Errors
    /// As [`GpuRaycaster::new`]; [`GpuError::Device`] when the device rejects `wgsl`.
    #[cfg(feature = "spec-variants")]
    pub fn new_blocking_with_shader(wgsl: String, config: GpuConfig) -> Result<Self, GpuError> {
        let device = pollster::block_on(Device::open(config, wgsl.into()))?;
        Self::checked(device, config)
    }

    /// A raycaster on a device the application already has (a game engine's own wgpu device),
    /// so that [`GpuWorld`]s and batches share its memory and queue instead of a second
    /// device. Both handles are cloned (wgpu handles are shared references). The device's own
    /// limits and features apply. With [`wgpu::Limits::default()`] (128 MiB storage bindings)
    /// up to 32,768 chunks stored voxel by voxel fit (their occupancy bits fill a binding),
    /// fewer where their packed ids fill theirs first (about 20,000 of terrain like the
    /// standard 512×128×512 terrain, whose 604 stored chunks take 10 KiB each:
    /// [`GpuWorld::stored_chunk_bytes`]), and batches of the default dispatch size; a world
    /// that needs more gets [`GpuError::LimitExceeded`], so a game with a large view distance
    /// requests its device with the adapter's own limits (`adapter.limits()`), as
    /// [`GpuRaycaster::new`] does. Kernel times (`BatchStats::kernel_seconds`) need the device
    /// to have been created with [`wgpu::Features::TIMESTAMP_QUERY`]; without it they are
    /// `None`.
    ///
    /// voxcast submits its own command buffers to `queue` and waits for them with
    /// [`wgpu::Device::poll`], which also waits for work the application submitted before.
    /// It leaves the device's lost callback alone (it belongs to the application): on a lost
    /// device voxcast's calls fail with [`GpuError::Device`].
    ///
    /// Creation runs the self-check (see [`GpuRaycaster::self_check`]) on the device: it
    /// uploads a small world and casts a few thousand rays (a few milliseconds of GPU time).
    ///
    /// # Errors
    /// [`GpuError::UnsuitableDevice`] when the device's limits are below what the shader needs
    /// (downlevel devices such as WebGL2 have no storage buffers in compute shaders),
    /// [`GpuError::Device`] when the device rejects the shader,
    /// [`GpuError::SelfCheckFailed`] when the device's answers differ from the CPU reference.
    pub fn from_device(device: &wgpu::Device, queue: &wgpu::Queue) -> Result<Self, GpuError> {
        Self::from_device_with(device, queue, GpuConfig::default())
    }

    /// [`GpuRaycaster::from_device`] with a [`GpuConfig`] (to allow a failed self-check).
    ///
    /// # Errors
    /// As [`GpuRaycaster::from_device`]; a failed self-check only where `config` requires it.
    pub fn from_device_with(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        config: GpuConfig,
    ) -> Result<Self, GpuError> {
        let lost = Arc::default();
        let device = Device::on(
            device.clone(),
            queue.clone(),
            lost,
            SHADER_SOURCE.into(),
            config,
        )?;
        Self::checked(device, config)
    }

    /// The raycaster on `device`, once the self-check has run on it: refused when the check
    /// fails and `config` requires it.
    fn checked(device: Device, config: GpuConfig) -> Result<Self, GpuError> {
        let mut gpu = Self {
            batches: Arc::new(Batches::new(Arc::new(device))),
            max_dispatch_rays: MAX_DISPATCH_RAYS,
            self_check: SelfCheckReport::default(),
        };
        let started = Instant::now();
        let probe = Probe::new()?;
        let world = gpu.upload_world(&probe.world)?;
        let answers = gpu.raycast(&probe.rays, &world, &probe.opts)?;
        let pixels = gpu.raycast_camera(&probe.camera, &world, &probe.opts)?;
        let report = probe.report(&answers, &pixels, started.elapsed().as_secs_f64());
        if let Some(difference) = &report.difference
            && config.self_check == SelfCheck::Required
        {
            return Err(GpuError::SelfCheckFailed(difference.clone()));
        }
        gpu.self_check = report;
        // A new raycaster keeps no buffers for batches it has not been asked to cast.
        gpu.release_buffers();
        gpu.batches.set_stats(BatchStats::default());
        Ok(gpu)
    }

    /// The device and queue this raycaster submits to: the ones given to
    /// [`GpuRaycaster::from_device`], or the ones [`GpuRaycaster::new`] created, for an
    /// application that wants to render or compute with the same device.
    #[must_use]
    pub fn device(&self) -> (&wgpu::Device, &wgpu::Queue) {
        let d = &self.batches.device;
        (&d.wgpu, &d.queue)
    }

    /// The adapter in use: name, backend, driver.
    #[must_use]
    pub fn adapter_info(&self) -> &wgpu::AdapterInfo {
        &self.batches.device.info
    }

    /// A one-line description of the adapter and of the self-check's outcome, e.g.
    /// `llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan, llvmpipe Mesa 22.3.6); exact: 3000 rays and
    /// 1296 camera pixels match the CPU reference`.
    #[must_use]
    pub fn adapter_summary(&self) -> String {
        let info = self.adapter_info();
        format!(
            "{} ({:?}, {} {}); {}",
            info.name, info.backend, info.driver, info.driver_info, self.self_check
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

    /// Whether batches share their buffers with the host
    /// ([`DispatchMemory::Auto`](crate::gpu::DispatchMemory::Auto) on a device that is the CPU):
    /// the shader reads rays where the host writes them and the host reads answers where the
    /// shader writes them. `false` where they are staged and copied.
    #[must_use]
    pub fn shares_host_memory(&self) -> bool {
        self.batches.device.host_shared
    }

    /// Whether uploaded rays are set up by the shader and go up in the caller's order
    /// ([`RaySetup::Shader`](crate::gpu::RaySetup::Shader), the default on a device that is not
    /// the CPU), rather than set up and sorted on the host.
    #[must_use]
    pub fn sets_up_rays_in_shader(&self) -> bool {
        self.batches.device.rays_set_up_in_shader
    }

    /// Uploads every loaded chunk of `world`; the window is the loaded bounds grown by one
    /// unloaded chunk on every side that is not the edge of the i128 world (room for
    /// conservative line of sight, which tests voxels beside the ray). Later edits may load,
    /// change or unload chunks within those loaded bounds ([`GpuWorld::update_chunks`]); the
    /// margin stays unloaded. For an empty world the bounds are chunk `(0, 0, 0)`.
    ///
    /// # Errors
    /// [`GpuError::LimitExceeded`] when the window's chunk table or the stored chunks exceed a
    /// device limit, or the window is wider than about 2^26 chunks on an axis (it is dense
    /// over the box around the loaded chunks, so chunks far apart make it huge: keep far-apart
    /// regions in separate worlds, or use [`GpuRaycaster::upload_window`]);
    /// [`GpuError::Device`] when an allocation fails.
    pub fn upload_world(&self, world: &VoxelWorld) -> Result<GpuWorld, GpuError> {
        GpuWorld::from_world(&self.batches.device, world)
    }

    /// Uploads the chunks of `world` within `half_extent` chunks of `centre` on each axis
    /// (`2 · half_extent + 1` chunks a side), in a window that follows the centre as
    /// [`GpuWorld::recenter`] moves it. Near the edge of the i128 world the box is moved inward
    /// to stay in it (and then reaches the edge).
    ///
    /// What the GPU answers on it: the CPU reference's answer on the whole `world` for a ray
    /// that stays in the box; for a ray that leaves the box before anything in it stops the
    /// ray, `Unloaded` at the first voxel outside the box, at the distance where it enters that
    /// voxel, under either [`UnloadedPolicy`](crate::UnloadedPolicy) (the GPU knows nothing
    /// there; line of sight answers `Unknown`, a sensor's word is the negated distance); for a
    /// ray that starts outside the box, `Unloaded` at its start voxel, distance 0. A step
    /// beyond the i128 world is a miss, as everywhere. [`GpuWorld::left_window`] tells such
    /// answers from true ones, and [`GpuRaycaster::raycast_completed`] (or
    /// [`GpuWorld::complete_raycasts`] after any call) answers those rays on the CPU.
    ///
    /// The GPU memory it takes is a table entry per chunk of the window (4 bytes) and the
    /// stored chunks inside it: plan `half_extent` from the chunks the player should see.
    ///
    /// # Errors
    /// [`GpuError::CentreOutsideWorld`] when `centre` is no chunk of the i128 world;
    /// [`GpuError::LimitExceeded`] when the window (`2 · half_extent + 3` chunks a side, with
    /// its margin) is wider than about 2^26 chunks, its table exceeds a storage binding, or
    /// the stored chunks exceed a device limit; [`GpuError::Device`] when an allocation fails.
    pub fn upload_window(
        &self,
        world: &VoxelWorld,
        centre: ChunkPos,
        half_extent: [u32; 3],
    ) -> Result<GpuWorld, GpuError> {
        GpuWorld::with_window(&self.batches.device, world, centre, half_extent)
    }

    /// Uploads the eyes of `agents` for visibility batches on `world`
    /// ([`GpuRaycaster::agent_visibility`]); [`GpuAgents::update`] replaces them when the
    /// agents (or the world's window) move.
    ///
    /// # Errors
    /// [`GpuError::WorldFromAnotherDevice`] for a world of another raycaster;
    /// [`GpuError::LimitExceeded`] for more agents than a storage binding holds;
    /// [`GpuError::Device`] when the upload fails.
    pub fn upload_agents(&self, agents: &[Agent], world: &GpuWorld) -> Result<GpuAgents, GpuError> {
        GpuAgents::new(&self.batches.device, world, agents)
    }

    /// Uploads `rig` for the sensor calls ([`GpuRaycaster::sense`]) on any world of this
    /// raycaster: 20 bytes a ray, once.
    ///
    /// # Errors
    /// [`GpuError::Device`] when the upload fails.
    pub fn upload_rig(&self, rig: &SensorRig) -> Result<GpuSensorRig, GpuError> {
        GpuSensorRig::new(&self.batches.device, rig)
    }

    /// Casts every ray against `world` and returns the outcomes in input order, exactly as
    /// [`raycast_batch`](crate::raycast_batch) would (on a window that follows a centre, for
    /// every ray that stays in it: one that leaves is answered `Unloaded` where it leaves, see
    /// [`GpuRaycaster::upload_window`] and [`GpuRaycaster::raycast_completed`]). A bad ray gets
    /// [`RaycastOutcome::Invalid`] and the others are still answered. Any batch size: large
    /// batches are prepared on the host in bands of about a million rays (bounded host memory
    /// besides the outcomes) and split into several dispatches. The first batch with a
    /// combination of options not used before compiles the shader for it (see
    /// [`GpuRaycaster`]).
    ///
    /// # Errors
    /// [`GpuError`] when the device fails (validation, out of memory, lost);
    /// [`GpuError::OutputTooLarge`] when the outcomes do not fit in host memory;
    /// [`GpuError::WorldFromAnotherDevice`] for a world uploaded with another raycaster.
    pub fn raycast(
        &self,
        rays: &[VoxelRay],
        world: &GpuWorld,
        opts: &RaycastOptions,
    ) -> Result<Vec<RaycastOutcome>, GpuError> {
        let mut out = Vec::new();
        self.raycast_into(rays, world, opts, &mut out)?;
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
        rays: &[VoxelRay],
        world: &GpuWorld,
        opts: &RaycastOptions,
        out: &mut Vec<RaycastOutcome>,
    ) -> Result<(), GpuError> {
        self.blocking(rays, out, |band, v| {
            self.submit_raycast_into(band, world, opts, v)
        })
    }

    /// Submits `rays` against `world` and returns at once: the answers, exactly as
    /// [`GpuRaycaster::raycast`] gives them, come from the [`PendingBatch`] (without blocking
    /// with [`PendingBatch::try_take`], or [`PendingBatch::wait`]). The host's share
    /// (validation, the i128 split, rays that cannot reach the window) is done before this
    /// returns. Several batches may be in flight at once. The batch keeps about 60 bytes
    /// per ray of host memory (52 where the shader sets rays up) until its answers are taken.
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast`].
    pub fn submit_raycast(
        &self,
        rays: &[VoxelRay],
        world: &GpuWorld,
        opts: &RaycastOptions,
    ) -> Result<PendingBatch<Vec<RaycastOutcome>>, GpuError> {
        self.submit_raycast_into(rays, world, opts, Vec::new())
    }

    /// [`GpuRaycaster::submit_raycast`] filling `out` (cleared first): its allocation is
    /// reused, so a frame loop that hands back the last batch's answers allocates nothing.
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast`].
    pub fn submit_raycast_into(
        &self,
        rays: &[VoxelRay],
        world: &GpuWorld,
        opts: &RaycastOptions,
        out: Vec<RaycastOutcome>,
    ) -> Result<PendingBatch<Vec<RaycastOutcome>>, GpuError> {
        let started = self.begin_call(world)?;
        self.submit_rays(started, rays, world, opts, false, out)
    }

    /// Line of sight for every segment (see [`line_of_sight`](crate::line_of_sight)), in input
    /// order, exactly as [`line_of_sight_batch`](crate::line_of_sight_batch) would.
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast`].
    pub fn line_of_sight(
        &self,
        segments: &[VoxelRay],
        world: &GpuWorld,
        opts: &LineOfSightOptions,
    ) -> Result<Vec<LineOfSight>, GpuError> {
        let mut out = Vec::new();
        self.line_of_sight_into(segments, world, opts, &mut out)?;
        Ok(out)
    }

    /// [`GpuRaycaster::raycast`] completed on the CPU: on a window that follows a centre
    /// ([`GpuRaycaster::upload_window`]), the rays that leave what it holds
    /// ([`GpuWorld::left_window`]) are cast again on `world`, the [`VoxelWorld`] it was
    /// uploaded from, in the same call and in order ([`GpuWorld::complete_raycasts`]), so that
    /// every answer is the CPU reference's. On a world uploaded whole nothing is completed.
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast`].
    pub fn raycast_completed(
        &self,
        rays: &[VoxelRay],
        gpu_world: &GpuWorld,
        world: &VoxelWorld,
        opts: &RaycastOptions,
    ) -> Result<Vec<RaycastOutcome>, GpuError> {
        let mut out = self.raycast(rays, gpu_world, opts)?;
        gpu_world.complete_raycasts(world, rays, opts, &mut out);
        Ok(out)
    }

    /// [`GpuRaycaster::line_of_sight`] completed on the CPU as
    /// [`GpuRaycaster::raycast_completed`] completes rays
    /// ([`GpuWorld::complete_line_of_sight`]).
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast`].
    pub fn line_of_sight_completed(
        &self,
        segments: &[VoxelRay],
        gpu_world: &GpuWorld,
        world: &VoxelWorld,
        opts: &LineOfSightOptions,
    ) -> Result<Vec<LineOfSight>, GpuError> {
        let mut out = self.line_of_sight(segments, gpu_world, opts)?;
        gpu_world.complete_line_of_sight(world, segments, opts, &mut out);
        Ok(out)
    }

    /// [`GpuRaycaster::line_of_sight`] into `out`, cleared and refilled in input order, its
    /// allocation reused (see [`GpuRaycaster::raycast_into`]).
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast_into`].
    pub fn line_of_sight_into(
        &self,
        segments: &[VoxelRay],
        world: &GpuWorld,
        opts: &LineOfSightOptions,
        out: &mut Vec<LineOfSight>,
    ) -> Result<(), GpuError> {
        self.blocking(segments, out, |band, v| {
            self.submit_line_of_sight_into(band, world, opts, v)
        })
    }

    /// Line of sight for every segment, submitted: returns at once, as
    /// [`GpuRaycaster::submit_raycast`].
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast`].
    pub fn submit_line_of_sight(
        &self,
        segments: &[VoxelRay],
        world: &GpuWorld,
        opts: &LineOfSightOptions,
    ) -> Result<PendingBatch<Vec<LineOfSight>>, GpuError> {
        self.submit_line_of_sight_into(segments, world, opts, Vec::new())
    }

    /// [`GpuRaycaster::submit_line_of_sight`] filling `out` (cleared first), its allocation
    /// reused.
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast`].
    pub fn submit_line_of_sight_into(
        &self,
        segments: &[VoxelRay],
        world: &GpuWorld,
        opts: &LineOfSightOptions,
        out: Vec<LineOfSight>,
    ) -> Result<PendingBatch<Vec<LineOfSight>>, GpuError> {
        let started = self.begin_call(world)?;
        self.submit_rays(
            started,
            segments,
            world,
            &opts.raycast,
            opts.conservative,
            out,
        )
    }

    /// [`GpuRaycaster::raycast_into`] for rays given relative to `world`'s window
    /// ([`WindowRay`], relative to [`GpuWorld::window_origin`]), answered relative to it
    /// ([`WindowOutcome`]), in input order: what a caller that keeps positions near the window
    /// gets without converting to and from i128 (40 bytes a ray in, 44 out, against 80 and 96).
    /// Ray `i`'s answer is exactly [`WindowOutcome::from_outcome`] of what
    /// [`GpuRaycaster::raycast`] answers for `rays[i].to_voxel_ray(world.window_origin())`
    /// ([`raycast_window_batch_into`](crate::raycast_window_batch_into) on the CPU); a ray
    /// whose voxel plus the window's origin leaves the i128 world is
    /// [`WindowOutcome::Invalid`] with [`RayError::OriginOutOfRange`](crate::RayError::OriginOutOfRange).
    /// Rays and answers are relative to the origin the window has when the batch is
    /// submitted: after [`GpuWorld::recenter`], read the answers of a batch submitted before it
    /// with the origin it had then. On a window that follows a centre, a ray that leaves it is
    /// `Unloaded` where it leaves, as [`GpuRaycaster::raycast`] answers: to complete such
    /// answers on the CPU, convert them with [`WindowOutcome::to_outcome`] and use
    /// [`GpuWorld::left_window`] and [`GpuWorld::complete_raycasts`].
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast`]; `out`'s contents are then unspecified.
    pub fn raycast_window_into(
        &self,
        rays: &[WindowRay],
        world: &GpuWorld,
        opts: &RaycastOptions,
        out: &mut Vec<WindowOutcome>,
    ) -> Result<(), GpuError> {
        self.blocking(rays, out, |band, v| {
            self.submit_raycast_window_into(band, world, opts, v)
        })
    }

    /// [`GpuRaycaster::raycast_window_into`] submitted: returns at once, as
    /// [`GpuRaycaster::submit_raycast_into`], filling `out` (cleared first).
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast`].
    pub fn submit_raycast_window_into(
        &self,
        rays: &[WindowRay],
        world: &GpuWorld,
        opts: &RaycastOptions,
        out: Vec<WindowOutcome>,
    ) -> Result<PendingBatch<Vec<WindowOutcome>>, GpuError> {
        let started = self.begin_call(world)?;
        self.submit_rays(started, rays, world, opts, false, out)
    }

    /// [`GpuRaycaster::line_of_sight_into`] for segments given relative to `world`'s window, as
    /// [`GpuRaycaster::raycast_window_into`] takes rays: [`WindowOutcome::Miss`] for a clear
    /// segment, [`WindowOutcome::Hit`] for a blocked one, [`WindowOutcome::Unloaded`] for one
    /// whose end cannot be known ([`WindowOutcome::to_line_of_sight`] gives the
    /// [`LineOfSight`]; [`line_of_sight_window_batch_into`](crate::line_of_sight_window_batch_into)
    /// on the CPU).
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast`]; `out`'s contents are then unspecified.
    pub fn line_of_sight_window_into(
        &self,
        segments: &[WindowRay],
        world: &GpuWorld,
        opts: &LineOfSightOptions,
        out: &mut Vec<WindowOutcome>,
    ) -> Result<(), GpuError> {
        self.blocking(segments, out, |band, v| {
            self.submit_line_of_sight_window_into(band, world, opts, v)
        })
    }

    /// [`GpuRaycaster::line_of_sight_window_into`] submitted: returns at once, as
    /// [`GpuRaycaster::submit_raycast_into`], filling `out` (cleared first).
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast`].
    pub fn submit_line_of_sight_window_into(
        &self,
        segments: &[WindowRay],
        world: &GpuWorld,
        opts: &LineOfSightOptions,
        out: Vec<WindowOutcome>,
    ) -> Result<PendingBatch<Vec<WindowOutcome>>, GpuError> {
        let started = self.begin_call(world)?;
        self.submit_rays(
            started,
            segments,
            world,
            &opts.raycast,
            opts.conservative,
            out,
        )
    }

    /// Renders `camera` against `world`: one ray per pixel, row by row from the top, made in the
    /// shader from the camera parameters (no ray upload). Pixel `(px, py)` gets the outcome of
    /// casting [`Camera::ray`]`(px, py)` with [`GpuRaycaster::raycast`] or the CPU reference
    /// ([`raycast_camera`](crate::raycast_camera)): [`RaycastOutcome::Invalid`] where that ray
    /// is invalid (only a camera edited by hand has such pixels). On a window that follows a
    /// centre a pixel whose ray leaves it is `Unloaded` where it leaves
    /// ([`GpuRaycaster::upload_window`]); [`GpuWorld::complete_raycasts`] with
    /// [`Camera::rays`] completes those pixels on the CPU. A camera whose eye is outside
    /// the window, whose field of view is wider than about 179.99°, or that was edited into one
    /// the shader cannot reproduce exactly, is rendered from rays built on the host (same
    /// outcomes, slower).
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast`]; [`GpuError::Camera`] for a width or height of 0,
    /// [`GpuError::BatchTooLarge`] for more than `u32::MAX` pixels,
    /// [`GpuError::OutputTooLarge`] when the outcomes do not fit in host memory.
    pub fn raycast_camera(
        &self,
        camera: &Camera,
        world: &GpuWorld,
        opts: &RaycastOptions,
    ) -> Result<Vec<RaycastOutcome>, GpuError> {
        let mut out = Vec::new();
        self.raycast_camera_into(camera, world, opts, &mut out)?;
        Ok(out)
    }

    /// [`GpuRaycaster::raycast_camera`] into `out`, cleared and refilled row by row, its
    /// allocation reused (see [`GpuRaycaster::raycast_into`]): for a camera rendered every frame.
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast_camera`].
    pub fn raycast_camera_into(
        &self,
        camera: &Camera,
        world: &GpuWorld,
        opts: &RaycastOptions,
        out: &mut Vec<RaycastOutcome>,
    ) -> Result<(), GpuError> {
        let pending = self.submit_raycast_camera_into(camera, world, opts, std::mem::take(out))?;
        *out = pending.wait()?;
        Ok(())
    }

    /// A camera's image, submitted: returns at once; the pixels, row by row from the top, are
    /// [`GpuRaycaster::raycast_camera`]'s. A camera the shader cannot reproduce exactly (see
    /// `raycast_camera`) is cast from host-built rays, also submitted.
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast_camera`].
    pub fn submit_raycast_camera(
        &self,
        camera: &Camera,
        world: &GpuWorld,
        opts: &RaycastOptions,
    ) -> Result<PendingBatch<Vec<RaycastOutcome>>, GpuError> {
        self.submit_raycast_camera_into(camera, world, opts, Vec::new())
    }

    /// [`GpuRaycaster::submit_raycast_camera`] filling `out` (cleared first), its allocation
    /// reused.
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast_camera`].
    pub fn submit_raycast_camera_into(
        &self,
        camera: &Camera,
        world: &GpuWorld,
        opts: &RaycastOptions,
        mut out: Vec<RaycastOutcome>,
    ) -> Result<PendingBatch<Vec<RaycastOutcome>>, GpuError> {
        if camera.width == 0 || camera.height == 0 {
            return Err(GpuError::Camera(CameraError::EmptyImage));
        }
        let started = self.begin_call(world)?;
        let pixels = u64::from(camera.width) * u64::from(camera.height);
        if pixels > u64::from(u32::MAX) {
            return Err(GpuError::BatchTooLarge(
                usize::try_from(pixels).unwrap_or(usize::MAX),
            ));
        }
        out.clear();
        out.try_reserve(pixels as usize)
            .map_err(|_| GpuError::OutputTooLarge(pixels))?;
        let Some((camera, eye)) = shader_camera_in(&world.window, camera) else {
            // From host-built rays: a pixel whose ray is invalid gets its error in its place.
            let rays = camera_rays(camera)?;
            return self.submit_rays(started, &rays, world, opts, false, out);
        };
        let params = camera_params(world.params(), &camera, eye);
        let flags = option_flags(opts, false)
            | world.walk_flags(camera.max_distance >= crate::cpu_ref::LONG_RAY);
        let binding = Binding::new(
            &self.batches.device,
            world,
            Entry::Camera,
            flags,
            params,
            opts,
        )?;
        let flight = Flight::start(
            &self.batches,
            binding,
            Items::Camera(pixels as u32),
            self.per_dispatch(),
        )?;
        let collector = CameraAnswers {
            out,
            eye,
            window: world.window,
        };
        Ok(PendingBatch::new(
            &self.batches,
            vec![flight],
            Box::new(collector),
            pixels,
            started,
        ))
    }

    /// Line of sight between the eyes of each pair of agents (indices into `agents`), one bit
    /// per pair, and with `answers` each pair's [`LineOfSight`] too (what blocks it): the
    /// answers of [`agent_visibility`](crate::agent_visibility) bit for bit. Each pair's
    /// segment, from agent `a`'s eye to agent `b`'s, is built in the shader exactly as
    /// [`VoxelRay::between`] builds it: 8 bytes up a pair (its two indices) and one bit down
    /// (20 bytes with `answers`). Every option of line of sight works, conservative too.
    ///
    /// A pair with an invalid agent ([`GpuAgents::errors`]) or an index past the end gets
    /// `LineOfSight::Invalid` (and is not visible); a pair with an agent outside the window is
    /// cast from a segment built on the host, as a ray batch. On a window that follows a
    /// centre, a pair whose segment leaves it is `LineOfSight::Unknown` where it leaves
    /// ([`GpuRaycaster::upload_window`]) and not visible: ask for `answers` to tell those
    /// pairs ([`GpuWorld::left_window`]) and complete them on the CPU
    /// ([`GpuWorld::complete_line_of_sight`] with [`agent_segment`](crate::agent_segment)).
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast`]; [`GpuError::WorldFromAnotherDevice`] also when `agents`
    /// were uploaded with another raycaster, [`GpuError::AgentsForAnotherWindow`] when they
    /// were uploaded before `world` moved.
    pub fn agent_visibility(
        &self,
        agents: &GpuAgents,
        pairs: &[[u32; 2]],
        world: &GpuWorld,
        opts: &LineOfSightOptions,
        answers: bool,
    ) -> Result<Visibility, GpuError> {
        self.submit_agent_visibility(agents, pairs, world, opts, answers)?
            .wait()
    }

    /// [`GpuRaycaster::agent_visibility`], submitted: returns at once, the answers come from
    /// the [`PendingBatch`].
    ///
    /// # Errors
    /// As [`GpuRaycaster::agent_visibility`].
    pub fn submit_agent_visibility(
        &self,
        agents: &GpuAgents,
        pairs: &[[u32; 2]],
        world: &GpuWorld,
        opts: &LineOfSightOptions,
        answers: bool,
    ) -> Result<PendingBatch<Visibility>, GpuError> {
        let started = self.begin_call(world)?;
        let (flights, collector, items) = pair_flights(
            &self.batches,
            world,
            self.per_dispatch(),
            agents,
            pairs,
            opts,
            answers,
        )?;
        Ok(PendingBatch::new(
            &self.batches,
            flights,
            Box::new(collector),
            items,
            started,
        ))
    }

    /// Every pair of agents whose eyes are at most `radius` voxels apart
    /// ([`pairs_within`](crate::pairs_within), found on the host) that see each other, as the
    /// list of pairs `[a, b]` (`a < b`, sorted): what
    /// [`visible_pairs_within`](crate::visible_pairs_within) gives on the CPU.
    ///
    /// # Errors
    /// As [`GpuRaycaster::agent_visibility`].
    pub fn visible_pairs_within(
        &self,
        agents: &GpuAgents,
        radius: f64,
        world: &GpuWorld,
        opts: &LineOfSightOptions,
    ) -> Result<Vec<[u32; 2]>, GpuError> {
        self.submit_visible_pairs_within(agents, radius, world, opts)?
            .wait()
    }

    /// [`GpuRaycaster::visible_pairs_within`], submitted: returns at once, the answers come
    /// from the [`PendingBatch`].
    ///
    /// # Errors
    /// As [`GpuRaycaster::agent_visibility`].
    pub fn submit_visible_pairs_within(
        &self,
        agents: &GpuAgents,
        radius: f64,
        world: &GpuWorld,
        opts: &LineOfSightOptions,
    ) -> Result<PendingBatch<Vec<[u32; 2]>>, GpuError> {
        let started = self.begin_call(world)?;
        let pairs = crate::agents::pairs_among(&agents.eyes, radius);
        let (flights, inner, items) = pair_flights(
            &self.batches,
            world,
            self.per_dispatch(),
            agents,
            &pairs,
            opts,
            false,
        )?;
        let collector = VisiblePairs { pairs, inner };
        Ok(PendingBatch::new(
            &self.batches,
            flights,
            Box::new(collector),
            items,
            started,
        ))
    }

    /// Every ray of `rig` from every pose, against `world`: the readings of
    /// [`sense`](crate::sense) bit for bit (on a window that follows a centre, a ray that
    /// leaves it reads as unloaded where it leaves, a negated distance, see
    /// [`GpuRaycaster::upload_window`]; with `hits`, its outcome tells it apart,
    /// [`GpuWorld::left_window`]). The shader makes each ray from the agent's pose
    /// (32 bytes up an agent, the rig uploaded once) exactly as [`SensorPose::ray`] makes it,
    /// and sends back one word a ray (4 bytes: the distance, see [`SensorReadings`]), or with
    /// `hits` each ray's whole answer (20 bytes: the hit voxel, face, id and UV too). An agent
    /// whose pose is bad gets its error on every ray and the others are answered; an agent
    /// whose pose lies outside the window is cast from rays built on the host.
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast`]; [`GpuError::WorldFromAnotherDevice`] also for a rig
    /// uploaded with another raycaster.
    pub fn sense(
        &self,
        rig: &GpuSensorRig,
        poses: &[SensorPose],
        world: &GpuWorld,
        opts: &RaycastOptions,
        hits: bool,
    ) -> Result<SensorReadings, GpuError> {
        self.submit_sense(rig, poses, world, opts, hits)?.wait()
    }

    /// [`GpuRaycaster::sense`] into `readings`, whose allocations are reused (see
    /// [`GpuRaycaster::raycast_into`]): for sensors read every frame.
    ///
    /// # Errors
    /// As [`GpuRaycaster::sense`]; `readings` is then unspecified.
    pub fn sense_into(
        &self,
        rig: &GpuSensorRig,
        poses: &[SensorPose],
        world: &GpuWorld,
        opts: &RaycastOptions,
        hits: bool,
        readings: &mut SensorReadings,
    ) -> Result<(), GpuError> {
        let pending =
            self.submit_sense_into(rig, poses, world, opts, hits, std::mem::take(readings))?;
        *readings = pending.wait()?;
        Ok(())
    }

    /// [`GpuRaycaster::sense`], submitted: returns at once (the poses checked and packed), the
    /// readings come from the [`PendingBatch`].
    ///
    /// # Errors
    /// As [`GpuRaycaster::sense`].
    pub fn submit_sense(
        &self,
        rig: &GpuSensorRig,
        poses: &[SensorPose],
        world: &GpuWorld,
        opts: &RaycastOptions,
        hits: bool,
    ) -> Result<PendingBatch<SensorReadings>, GpuError> {
        self.submit_sense_into(rig, poses, world, opts, hits, SensorReadings::default())
    }

    /// [`GpuRaycaster::submit_sense`] filling `readings` (its allocations reused).
    ///
    /// # Errors
    /// As [`GpuRaycaster::sense`].
    pub fn submit_sense_into(
        &self,
        rig: &GpuSensorRig,
        poses: &[SensorPose],
        world: &GpuWorld,
        opts: &RaycastOptions,
        hits: bool,
        readings: SensorReadings,
    ) -> Result<PendingBatch<SensorReadings>, GpuError> {
        let started = self.begin_call(world)?;
        let (flights, collector, items) = sensor_flights(
            &self.batches,
            world,
            self.per_dispatch(),
            rig,
            poses,
            opts,
            hits,
            readings,
        )?;
        Ok(PendingBatch::new(
            &self.batches,
            flights,
            Box::new(collector),
            items,
            started,
        ))
    }

    /// Casts every box (see [`box_cast`](crate::box_cast) and the box cast rules in the crate
    /// docs) against `world` and returns the outcomes in input order, exactly as
    /// [`box_cast_batch`](crate::box_cast_batch) gives them on the world uploaded: the same
    /// outcome, voxel, face and id, and the same distance bit for bit. A bad cast gets
    /// [`BoxCastOutcome::Invalid`] and the others are still answered. On a window that follows
    /// a centre, a box that touches a voxel outside the box of chunks the window holds is
    /// answered `Unloaded` there, under either unloaded policy (as rays that leave it are).
    /// 80 bytes go up a cast and 20 come down.
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast`].
    pub fn box_cast(
        &self,
        casts: &[BoxCast],
        world: &GpuWorld,
        opts: &RaycastOptions,
    ) -> Result<Vec<BoxCastOutcome>, GpuError> {
        self.submit_box_cast(casts, world, opts)?.wait()
    }

    /// [`GpuRaycaster::box_cast`], submitted: returns at once (the casts checked and prepared
    /// on the host), the answers come from the [`PendingBatch`].
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast`].
    pub fn submit_box_cast(
        &self,
        casts: &[BoxCast],
        world: &GpuWorld,
        opts: &RaycastOptions,
    ) -> Result<PendingBatch<Vec<BoxCastOutcome>>, GpuError> {
        let started = self.begin_call(world)?;
        let (flight, collector, uploaded) =
            box_flight(&self.batches, world, self.per_dispatch(), casts, opts)?;
        Ok(self.pending(flight, Box::new(collector), uploaded, started))
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
        self.batches.kept_memory()
    }

    /// Frees the buffers kept between batches ([`GpuRaycaster::kept_memory`]). The next batch
    /// allocates what it needs again. Worth calling after a rare large batch (a
    /// screenshot-sized camera, say) whose buffers should not stay held. Batches in flight keep
    /// theirs until they finish (then they are kept again); results never depend on it.
    /// Created pipelines and uploaded [`GpuWorld`]s are kept.
    pub fn release_buffers(&self) {
        self.batches.release();
    }

    /// Timing of the last batch (raycast, line of sight, camera or visibility) on this
    /// raycaster to finish; for a blocking call of more than 2^20 rays, of all its bands.
    #[must_use]
    pub fn last_batch_stats(&self) -> BatchStats {
        self.batches.stats.lock().map(|s| *s).unwrap_or_default()
    }

    /// A blocking call: `submit` of `rays` in bands of at most [`HOST_BAND`] rays, the next
    /// band prepared while the GPU runs the last, answers appended to `out`.
    fn blocking<R, T: Send>(
        &self,
        rays: &[R],
        out: &mut Vec<T>,
        submit: impl Fn(&[R], Vec<T>) -> Result<PendingBatch<Vec<T>>, GpuError>,
    ) -> Result<(), GpuError> {
        if rays.len() <= HOST_BAND {
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
        let started = Instant::now();
        let mut last: Option<PendingBatch<Vec<T>>> = None;
        for band in rays.chunks(HOST_BAND) {
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
        self.batches.set_stats(total);
        Ok(())
    }

    /// Starts a batch call: checks that `world` was uploaded with this raycaster and that the
    /// device is not lost. Returns the call's start time.
    fn begin_call(&self, world: &GpuWorld) -> Result<Instant, GpuError> {
        if !world.is_on(&self.batches.device) {
            return Err(GpuError::WorldFromAnotherDevice);
        }
        self.batches.device.check_lost()?;
        Ok(Instant::now())
    }

    /// Prepares `rays` on the host and submits those that reach the window; the call started
    /// at `started`.
    fn submit_rays<R: HostRay, T: HostAnswer + Clone + Sync + std::fmt::Debug + 'static>(
        &self,
        started: Instant,
        rays: &[R],
        world: &GpuWorld,
        opts: &RaycastOptions,
        conservative: bool,
        out: Vec<T>,
    ) -> Result<PendingBatch<Vec<T>>, GpuError> {
        let (flight, collector, uploaded) = ray_flight(
            &self.batches,
            world,
            self.per_dispatch(),
            rays,
            opts,
            conservative,
            out,
        )?;
        Ok(self.pending(flight, Box::new(collector), uploaded, started))
    }

    /// The batch of one flight (none when the host answered every query), `uploaded` of its
    /// queries on the GPU, the call started at `started`.
    fn pending<T>(
        &self,
        flight: Option<Flight>,
        collector: Box<dyn Collector<T>>,
        uploaded: u64,
        started: Instant,
    ) -> PendingBatch<T> {
        PendingBatch::new(
            &self.batches,
            flight.into_iter().collect(),
            collector,
            uploaded,
            started,
        )
    }

    /// Most items per dispatch: [`GpuRaycaster::set_max_dispatch_rays`] within what the
    /// device's limits allow.
    fn per_dispatch(&self) -> u32 {
        self.batches
            .device
            .dispatch_capacity(self.max_dispatch_rays)
    }
}
