//! [`GpuRaycaster`]: the device, its uploads, and one way to cast any query ([`Query`]):
//! submitted (a [`PendingBatch`]) or cast and waited for, each with answers reused or not.

use std::sync::Arc;
use web_time::Instant;

use crate::agents::Agent;
use crate::coords::ChunkPos;
use crate::gpu::agents::GpuAgents;
use crate::gpu::camera::CameraImage;
use crate::gpu::device::{Device, GpuConfig, SelfCheck};
use crate::gpu::error::GpuError;
#[cfg(not(target_arch = "wasm32"))]
use crate::gpu::flight::BatchStats;
use crate::gpu::flight::{Batches, KeptMemory};
use crate::gpu::layout::{
    FLAG_RAYS_AS_GIVEN, FLAG_STEP_EMPTY_BRICKS, MAX_DISPATCH_RAYS, option_flags,
};
use crate::gpu::pending::{Launch, PendingBatch};
use crate::gpu::probe::{Probe, SelfCheckReport};
use crate::gpu::query::Query;
use crate::gpu::rays::Rays;
use crate::gpu::sensors::GpuSensorRig;
use crate::gpu::world::GpuWorld;
use crate::gpu::{ENTRIES, SHADER_SOURCE, camera, rays};
use crate::ray::RaycastOptions;
use crate::sensors::SensorRig;
use crate::world::VoxelWorld;

/// How a raycaster's batches go on its device: what [`GpuConfig`]'s `Auto` choices chose
/// ([`GpuRaycaster::setup`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchSetup {
    /// Whether batches share their buffers with the host
    /// ([`DispatchMemory::Auto`](crate::gpu::DispatchMemory::Auto) on a device that is the
    /// CPU): the shader reads rays where the host writes them and the host reads answers where
    /// the shader writes them. `false` where they are staged and copied.
    pub shares_host_memory: bool,
    /// Whether uploaded rays are set up by the shader and go up in the caller's order
    /// ([`RaySetup::Shader`](crate::gpu::RaySetup::Shader), the default on a device that is
    /// not the CPU), rather than set up and sorted on the host.
    pub rays_set_up_in_shader: bool,
}

/// A wgpu device with the raycasting pipelines: its own ([`GpuRaycaster::new`]) or the
/// application's ([`GpuRaycaster::from_device`]). Create one and reuse it: creation compiles the
/// shader for the default options, with both walks through empty bricks, and checks the device
/// against the CPU reference ([`GpuRaycaster::self_check`]). The shader is specialised per
/// combination of options (origin policy, unloaded policy, whether the material filter is the
/// default, conservative line of sight, per-voxel mode) and walk (skipping empty bricks or
/// stepping through them, see [`GpuWorld::skips_empty_bricks`]): the first batch with another
/// combination compiles it once more (about 20 ms on lavapipe), and later batches reuse it.
///
/// Worlds, agents and sensor rigs are uploaded through it ([`GpuRaycaster::upload_world`],
/// [`GpuRaycaster::upload_window`], [`GpuRaycaster::upload_agents`],
/// [`GpuRaycaster::upload_rig`]) and cast against with the raycaster that uploaded them. Every
/// query kind ([`Query`]: rays, line of sight, a camera, agent pairs, sensor sweeps, box casts)
/// is cast the same ways, with its arguments in the CPU reference's order (the query, the
/// world, the options):
///
/// | form | returns |
/// | --- | --- |
/// | [`submit`](GpuRaycaster::submit) | a [`PendingBatch`] at once: `.await` it, take it without blocking next frame, or wait |
/// | [`submit_into`](GpuRaycaster::submit_into) | the same, filling answers handed back (no allocation) |
#[cfg_attr(
    not(target_arch = "wasm32"),
    doc = "| [`cast`](GpuRaycaster::cast) | the answers, once the GPU is done (blocks; not on wasm32) |"
)]
#[cfg_attr(
    not(target_arch = "wasm32"),
    doc = "| [`cast_into`](GpuRaycaster::cast_into) | the same into answers handed back, and the batch's `BatchStats` |"
)]
///
/// Several batches may be in flight at once, from one thread or several: a raycaster (and a
/// [`GpuWorld`]) is `Send + Sync`, and each batch measures its own cost.
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
    /// [`GpuRaycaster::self_check`]). `GpuConfig::default()` suits most uses.
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
    pub async fn new(config: GpuConfig) -> Result<Self, GpuError> {
        Self::checked(
            Device::open(config, SHADER_SOURCE.into(), &ENTRIES).await?,
            config,
        )
        .await
    }

    /// [`GpuRaycaster::new`], blocking on the future with pollster: for a native program
    /// that may block its thread.
    ///
    /// # Errors
    /// As [`GpuRaycaster::new`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new_blocking(config: GpuConfig) -> Result<Self, GpuError> {
        pollster::block_on(Self::new(config))
    }

    /// A test hook (the `test-hooks` feature, not part of the API): a raycaster whose shader
    /// is `wgsl` instead of [`SHADER_SOURCE`], for testing the parity contract against a
    /// variant of the shader ([`spec_variants::variant`](crate::spec_variants::variant)). The
    /// self-check runs as for [`GpuRaycaster::new`]. `wgsl` must keep the shader's entry
    /// points, bindings and structs.
    ///
    /// # Errors
    /// As [`GpuRaycaster::new`]; [`GpuError::Device`] when the device rejects `wgsl`.
    #[cfg(all(feature = "test-hooks", not(target_arch = "wasm32")))]
    pub fn with_shader_blocking(wgsl: String, config: GpuConfig) -> Result<Self, GpuError> {
        let device = pollster::block_on(Device::open(config, wgsl.into(), &ENTRIES))?;
        pollster::block_on(Self::checked(device, config))
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
    /// [`GpuError::SelfCheckFailed`] when the device's answers differ from the CPU reference
    /// (unless `config` allows that).
    ///
    /// On the web (`wasm32`) it is an `async fn`: the self-check awaits the device there.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn from_device(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        config: GpuConfig,
    ) -> Result<Self, GpuError> {
        // The self-check waits for its batches inside, so this future is ready when polled.
        pollster::block_on(Self::on_device(device, queue, config))
    }

    /// [`GpuRaycaster::from_device`] on the web, where the self-check awaits the device.
    ///
    /// # Errors
    /// As [`GpuRaycaster::from_device`] on native targets.
    #[cfg(target_arch = "wasm32")]
    pub async fn from_device(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        config: GpuConfig,
    ) -> Result<Self, GpuError> {
        Self::on_device(device, queue, config).await
    }

    async fn on_device(
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
            &ENTRIES,
            config,
        )?;
        Self::checked(device, config).await
    }

    /// The raycaster on `device`, once the self-check has run on it: refused when the check
    /// fails and `config` requires it. Its batches are waited for on native targets (so the
    /// future is ready when first polled) and awaited on the web.
    async fn checked(device: Device, config: GpuConfig) -> Result<Self, GpuError> {
        // The pipelines of rays and the camera for the default options, with either walk, now:
        // the shader's errors show here, and a first batch with those options does not wait
        // for a compilation.
        let defaults = option_flags(&RaycastOptions::default(), false);
        let setup = if device.rays_set_up_in_shader {
            FLAG_RAYS_AS_GIVEN
        } else {
            0
        };
        for (entry, flags) in [(rays::ENTRY, defaults | setup), (camera::ENTRY, defaults)] {
            for walk in [0, FLAG_STEP_EMPTY_BRICKS] {
                device.pipeline(entry, flags | walk)?;
            }
        }
        let mut gpu = Self {
            batches: Arc::new(Batches::new(Arc::new(device))),
            max_dispatch_rays: MAX_DISPATCH_RAYS,
            self_check: SelfCheckReport::default(),
        };
        let started = Instant::now();
        let probe = Probe::new()?;
        let world = gpu.upload_world(&probe.world)?;
        let answers = gpu.submit(Rays(&probe.rays), &world, &probe.opts)?;
        let answers = answers_of(answers).await?;
        let pixels = gpu.submit(CameraImage(&probe.camera), &world, &probe.opts)?;
        let pixels = answers_of(pixels).await?;
        let report = probe.report(&answers, &pixels, started.elapsed().as_secs_f64());
        if let Some(difference) = &report.difference
            && config.self_check == SelfCheck::Required
        {
            return Err(GpuError::SelfCheckFailed(difference.clone()));
        }
        gpu.self_check = report;
        // A new raycaster keeps no buffers for batches it has not been asked to cast.
        gpu.release_buffers();
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

    /// Whether the adapter says it runs on the CPU (wgpu's `DeviceType::Cpu`): Mesa's lavapipe
    /// and llvmpipe, SwiftShader, and in a browser an adapter that WebGPU marks as a fallback
    /// adapter. On such an adapter the CPU reference on the same cores is usually faster (see
    /// `BENCHMARKS.md`), so a caller choosing an engine should prefer the CPU there. A browser that does not mark its software adapter (Chromium's
    /// SwiftShader, unless the page asked for a fallback adapter) gives `false`; a page can
    /// also read the adapter's `info.architecture` (`"swiftshader"`).
    #[must_use]
    pub fn is_software(&self) -> bool {
        self.adapter_info().device_type == wgpu::DeviceType::Cpu
    }

    /// A one-line description of the adapter and of the self-check's outcome, e.g.
    /// `llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan, llvmpipe Mesa 22.3.6), software; exact:
    /// 3000 rays and 1296 camera pixels match the CPU reference`. An adapter without a name (a
    /// browser may keep it private) is called `an unnamed adapter`.
    #[must_use]
    pub fn adapter_summary(&self) -> String {
        let info = self.adapter_info();
        let name = if info.name.is_empty() {
            "an unnamed adapter"
        } else {
            info.name.as_str()
        };
        let driver = format!("{} {}", info.driver, info.driver_info);
        let driver = driver.trim();
        format!(
            "{name} ({:?}{}{}){}; {}",
            info.backend,
            if driver.is_empty() { "" } else { ", " },
            driver,
            if self.is_software() { ", software" } else { "" },
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

    /// How this raycaster's batches go: what [`GpuConfig`]'s `Auto` choices chose on this
    /// device.
    #[must_use]
    pub fn setup(&self) -> BatchSetup {
        let d = &self.batches.device;
        BatchSetup {
            shares_host_memory: d.host_shared,
            rays_set_up_in_shader: d.rays_set_up_in_shader,
        }
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

    /// Uploads the chunks of `world` within `half_extent` chunks of `center` on each axis
    /// (`2 · half_extent + 1` chunks a side), in a window that follows the center as
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
    /// answers from true ones, and [`Rays::complete`] answers those rays on the CPU.
    ///
    /// The GPU memory it takes is a table entry per chunk of the window (4 bytes) and the
    /// stored chunks inside it: plan `half_extent` from the chunks the player should see.
    ///
    /// # Errors
    /// [`GpuError::CenterOutsideWorld`] when `center` is no chunk of the i128 world;
    /// [`GpuError::LimitExceeded`] when the window (`2 · half_extent + 3` chunks a side, with
    /// its margin) is wider than about 2^26 chunks, its table exceeds a storage binding, or
    /// the stored chunks exceed a device limit; [`GpuError::Device`] when an allocation fails.
    pub fn upload_window(
        &self,
        world: &VoxelWorld,
        center: ChunkPos,
        half_extent: [u32; 3],
    ) -> Result<GpuWorld, GpuError> {
        GpuWorld::with_window(&self.batches.device, world, center, half_extent)
    }

    /// Uploads the eyes of `agents` for visibility batches on `world`
    /// ([`AgentPairs`](crate::gpu::AgentPairs)); [`GpuAgents::update`] replaces them when the
    /// agents (or the world's window) move.
    ///
    /// # Errors
    /// [`GpuError::WorldFromAnotherDevice`] for a world of another raycaster;
    /// [`GpuError::LimitExceeded`] for more agents than a storage binding holds;
    /// [`GpuError::Device`] when the upload fails.
    pub fn upload_agents(&self, agents: &[Agent], world: &GpuWorld) -> Result<GpuAgents, GpuError> {
        GpuAgents::new(&self.batches.device, world, agents)
    }

    /// Uploads `rig` for the sensor calls ([`SensorSweep`](crate::gpu::SensorSweep)) on any world of this
    /// raycaster: 20 bytes a ray, once.
    ///
    /// # Errors
    /// [`GpuError::Device`] when the upload fails.
    pub fn upload_rig(&self, rig: &SensorRig) -> Result<GpuSensorRig, GpuError> {
        GpuSensorRig::new(&self.batches.device, rig)
    }

    /// Submits `query` against `world` and returns at once: its answers come from the
    /// [`PendingBatch`] (awaited, or taken without blocking with [`PendingBatch::try_take`]; off
    /// the web also waited for with `PendingBatch::wait`), each exactly the CPU reference's answer (see
    /// each kind: [`Rays`](crate::gpu::Rays), [`Sightlines`](crate::gpu::Sightlines),
    /// [`CameraImage`](crate::gpu::CameraImage), [`AgentPairs`](crate::gpu::AgentPairs),
    /// [`PairsWithin`](crate::gpu::PairsWithin), [`SensorSweep`](crate::gpu::SensorSweep),
    /// [`BoxCasts`](crate::gpu::BoxCasts)). The host's share (validation, the i128 split,
    /// queries that cannot reach the window) is done before this returns. A bad query gets its
    /// error in its place in the answers and the others are still answered. Several batches may
    /// be in flight at once, from one thread or several. The first batch with a combination of
    /// options not used before compiles the shader for it (see [`GpuRaycaster`]).
    ///
    /// # Errors
    /// [`GpuError`] when the device fails (validation, out of memory, lost);
    /// [`GpuError::OutputTooLarge`] when the answers do not fit in host memory;
    /// [`GpuError::WorldFromAnotherDevice`] for a world uploaded with another raycaster; and
    /// what each kind says of its own input.
    pub fn submit<Q: Query>(
        &self,
        query: Q,
        world: &GpuWorld,
        opts: &Q::Options,
    ) -> Result<PendingBatch<Q::Answers>, GpuError> {
        self.submit_into(query, world, opts, Q::Answers::default())
    }

    /// [`GpuRaycaster::submit`] filling `reuse` (cleared first): its allocations are kept, so a
    /// frame loop that hands back the last batch's answers allocates nothing for them.
    ///
    /// # Errors
    /// As [`GpuRaycaster::submit`].
    pub fn submit_into<Q: Query>(
        &self,
        query: Q,
        world: &GpuWorld,
        opts: &Q::Options,
        reuse: Q::Answers,
    ) -> Result<PendingBatch<Q::Answers>, GpuError> {
        query.start(self.launch(world)?, opts, reuse)
    }

    /// [`GpuRaycaster::submit`] and wait: blocks the thread until the answers are in. Any
    /// batch size: large batches of rays are prepared on the host in bands of about a million
    /// (bounded host memory besides the answers), and split into several dispatches.
    ///
    /// # Errors
    /// As [`GpuRaycaster::submit`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn cast<Q: Query>(
        &self,
        query: Q,
        world: &GpuWorld,
        opts: &Q::Options,
    ) -> Result<Q::Answers, GpuError> {
        let mut out = Q::Answers::default();
        self.cast_into(query, world, opts, &mut out)?;
        Ok(out)
    }

    /// [`GpuRaycaster::cast`] into `out`, cleared and refilled in input order, its allocations
    /// reused: a caller that keeps `out` between frames saves allocating (and the operating
    /// system zeroing) the answers on every call. Returns what the batch cost (for a batch cast
    /// in bands, all of them).
    ///
    /// # Errors
    /// As [`GpuRaycaster::submit`]; `out`'s contents are then unspecified.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn cast_into<Q: Query>(
        &self,
        query: Q,
        world: &GpuWorld,
        opts: &Q::Options,
        out: &mut Q::Answers,
    ) -> Result<BatchStats, GpuError> {
        query.cast_into(self.launch(world)?, opts, out)
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

    /// Starts a batch on `world`: checks that it was uploaded with this raycaster and that
    /// the device is not lost.
    fn launch<'a>(&'a self, world: &'a GpuWorld) -> Result<Launch<'a>, GpuError> {
        if !world.is_on(&self.batches.device) {
            return Err(GpuError::WorldFromAnotherDevice);
        }
        self.batches.device.check_lost()?;
        Ok(Launch {
            batches: &self.batches,
            world,
            per_dispatch: self
                .batches
                .device
                .dispatch_capacity(self.max_dispatch_rays),
            wake: Arc::default(),
            started: Instant::now(),
        })
    }
}

/// A batch's answers for the raycaster's own self-check: waited for on native targets (the
/// host-driven device polled meanwhile), awaited on the web, where nothing may block.
async fn answers_of<T>(batch: PendingBatch<T>) -> Result<T, GpuError> {
    #[cfg(not(target_arch = "wasm32"))]
    return batch.wait();
    #[cfg(target_arch = "wasm32")]
    return batch.await;
}
