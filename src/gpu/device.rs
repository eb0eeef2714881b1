//! Creating a [`GpuRaycaster`]: adapter, device, shader module and the pipelines, one per
//! entry point and combination of options, compiled on first use.

use rustc_hash::FxHashMap;
use std::sync::{Arc, Mutex};

use crate::gpu::dispatch::{Courier, Shared};
use crate::gpu::{
    BatchStats, DispatchMemory, FLAG_CONSERVATIVE, FLAG_EVERY_NON_AIR, FLAG_PER_VOXEL,
    FLAG_STEP_EMPTY_BRICKS, FLAG_STOP_UNLOADED, GpuConfig, GpuError, GpuRaycaster,
    MAX_DISPATCH_RAYS, NEXT_TOKEN, ORIGIN_EXIT_SOLID, ORIGIN_REPORT, ORIGIN_SKIP, SHADER_SOURCE,
    SelfCheck, SelfCheckReport, WORKGROUP_SIZE, probe, replace_locked,
};
use crate::ray::{OriginPolicy, RaycastOptions, UnloadedPolicy};

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

    /// [`GpuRaycaster::new_with`], blocking on the future with pollster.
    ///
    /// # Errors
    /// As [`GpuRaycaster::new_with`].
    pub fn new_blocking_with(config: GpuConfig) -> Result<Self, GpuError> {
        pollster::block_on(Self::new_with(config))
    }

    /// A raycaster whose shader is `wgsl` instead of [`SHADER_SOURCE`]: for testing the
    /// parity contract against a variant of the shader ([`crate::spec_variants::variant`]).
    /// The self-check runs as for [`GpuRaycaster::new`]. `wgsl` must keep the shader's entry
    /// points, bindings and structs.
    ///
    /// # Errors
    /// As [`GpuRaycaster::new`]; [`GpuError::Device`] when the device rejects `wgsl`.
    #[cfg(feature = "spec-variants")]
    pub fn new_blocking_with_shader(wgsl: String, config: GpuConfig) -> Result<Self, GpuError> {
        pollster::block_on(Self::create(config, wgsl.into()))
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
        Self::create(config, SHADER_SOURCE.into()).await
    }

    async fn create(
        config: GpuConfig,
        shader: std::borrow::Cow<'static, str>,
    ) -> Result<Self, GpuError> {
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
        let limits = adapter.limits();
        // Timestamps where the adapter has them; buffers shared with the host on a CPU device.
        let mut wanted = wgpu::Features::TIMESTAMP_QUERY;
        if shares_host_memory(&config, adapter.get_info().device_type) {
            wanted |= wgpu::Features::MAPPABLE_PRIMARY_BUFFERS;
        }

        // Device with the adapter's own limits.
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("voxcast"),
                required_features: adapter.features() & wanted,
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
        Self::on_device(device, queue, lost, shader, config)
    }

    /// A raycaster on a device the application already has (a game engine's own wgpu device),
    /// so that [`GpuWorld`](crate::gpu::GpuWorld)s and batches share its memory and queue instead of a second device.
    /// Both handles are cloned (wgpu handles are shared references). The device's own limits
    /// and features apply. With [`wgpu::Limits::default()`] (128 MiB storage bindings) up to
    /// 32,768 chunks stored voxel by voxel fit (their occupancy bits fill a binding), fewer
    /// where their packed ids fill theirs first (about 20,000 of terrain like the standard
    /// 512×128×512 terrain, whose 604 stored chunks take 10 KiB each:
    /// [`GpuWorld::stored_chunk_bytes`](crate::gpu::GpuWorld::stored_chunk_bytes)), and
    /// batches of the default dispatch size; a world that needs more gets
    /// [`GpuError::LimitExceeded`], so a game with a large view distance requests its device
    /// with the adapter's own limits (`adapter.limits()`), as [`GpuRaycaster::new`] does.
    /// Kernel times (`BatchStats::kernel_seconds`) need the
    /// device to have been created with [`wgpu::Features::TIMESTAMP_QUERY`]; without it they
    /// are `None`.
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
        Self::on_device(
            device.clone(),
            queue.clone(),
            Arc::new(Mutex::new(None)),
            SHADER_SOURCE.into(),
            config,
        )
    }

    /// The device and queue this raycaster submits to: the ones given to
    /// [`GpuRaycaster::from_device`], or the ones [`GpuRaycaster::new`] created, for an
    /// application that wants to render or compute with the same device.
    #[must_use]
    pub fn device(&self) -> (&wgpu::Device, &wgpu::Queue) {
        (&self.shared.device, &self.shared.queue)
    }

    /// Checks the device, compiles `shader` and the default pipelines, makes the raycaster and
    /// runs the self-check. `lost` is set by the device-lost callback, if voxcast owns one.
    fn on_device(
        device: wgpu::Device,
        queue: wgpu::Queue,
        lost: Arc<Mutex<Option<String>>>,
        shader: std::borrow::Cow<'static, str>,
        config: GpuConfig,
    ) -> Result<Self, GpuError> {
        let info = device.adapter_info();
        let limits = device.limits();
        let timestamps = device.features().contains(wgpu::Features::TIMESTAMP_QUERY);
        let host_shared = shares_host_memory(&config, info.device_type)
            && device
                .features()
                .contains(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS);
        check_limits(&limits)?;

        // Shader and pipelines, validated inside an error scope.
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("dda.wgsl"),
            source: wgpu::ShaderSource::Wgsl(shader),
        });
        let buffer = |binding: u32, ty| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let uniform = wgpu::BufferBindingType::Uniform;
        let read = wgpu::BufferBindingType::Storage { read_only: true };
        let write = wgpu::BufferBindingType::Storage { read_only: false };
        // The world's and the dispatch's parameters (bindings 0 to 5), then per entry point
        // its input and output: rays and hits (6, 7) for cast_rays and cast_camera; pairs,
        // agents and the pairs' bits and answers (8, 9, 10) for cast_pairs.
        let shared = [
            buffer(0, uniform),
            buffer(1, read),
            buffer(2, read),
            buffer(3, read),
            buffer(4, read),
            buffer(5, uniform),
        ];
        let make_layout = |label, own: &[wgpu::BindGroupLayoutEntry]| {
            let entries: Vec<_> = shared.iter().chain(own).copied().collect();
            let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some(label),
                entries: &entries,
            });
            let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(label),
                bind_group_layouts: &[Some(&layout)],
                immediate_size: 0,
            });
            (layout, pipeline_layout)
        };
        let rays = make_layout("voxcast rays", &[buffer(6, read), buffer(7, write)]);
        let pairs = make_layout(
            "voxcast pairs",
            &[buffer(8, read), buffer(9, read), buffer(10, write)],
        );
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Device(format!("shader rejected: {e}")));
        }
        // The pipelines for the default options, with either walk, now: the shader's errors
        // show here, and a first batch with those options does not wait for a compilation.
        let default_flags = option_flags(&RaycastOptions::default(), false);
        let mut pipelines = FxHashMap::default();
        for entry in [Entry::Rays, Entry::Camera] {
            for flags in [default_flags, default_flags | FLAG_STEP_EMPTY_BRICKS] {
                let p = make_pipeline(&device, &module, &rays.1, entry, flags)?;
                pipelines.insert((entry, flags), p);
            }
        }
        let period_ns = f64::from(queue.get_timestamp_period());
        let courier = Courier::start(&device, &queue)?;
        let shared = Arc::new(Shared {
            device,
            queue,
            pool: Mutex::new(Vec::new()),
            staging: Mutex::new(Vec::new()),
            lost,
            timestamps,
            host_shared,
            period_ns,
            stats: Mutex::new(BatchStats::default()),
            courier,
        });
        let mut raycaster = Self {
            shared,
            info,
            limits,
            layouts: [rays, pairs],
            module,
            pipelines: Mutex::new(pipelines),
            max_dispatch_rays: MAX_DISPATCH_RAYS,
            token: NEXT_TOKEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            self_check: SelfCheckReport::default(),
        };
        let report = probe::run(&raycaster)?;
        if let Some(difference) = &report.difference
            && config.self_check == SelfCheck::Required
        {
            return Err(GpuError::SelfCheckFailed(difference.clone()));
        }
        raycaster.self_check = report;
        // A new raycaster keeps no buffers for batches it has not been asked to cast.
        raycaster.release_buffers();
        replace_locked(&raycaster.shared.stats, BatchStats::default());
        Ok(raycaster)
    }

    /// The pipeline of `entry` specialised for option `flags` (the shader's `OPTIONS`),
    /// compiled on first use and kept: each combination of options in use pays one
    /// compilation (the default options' rays and camera are made by [`GpuRaycaster::new`]).
    pub(super) fn pipeline(
        &self,
        entry: Entry,
        flags: u32,
    ) -> Result<wgpu::ComputePipeline, GpuError> {
        // A map of finished pipelines is sound whatever panicked while it was held.
        let mut made = self
            .pipelines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(p) = made.get(&(entry, flags)) {
            return Ok(p.clone());
        }
        let layout = &self.layouts[usize::from(entry == Entry::Pairs)].1;
        let p = make_pipeline(&self.shared.device, &self.module, layout, entry, flags)?;
        made.insert((entry, flags), p.clone());
        Ok(p)
    }

    /// The bind group layout of `entry`'s pipelines.
    pub(super) fn layout(&self, entry: Entry) -> &wgpu::BindGroupLayout {
        &self.layouts[usize::from(entry == Entry::Pairs)].0
    }
}

/// A compute entry point of the shader.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Entry {
    /// `cast_rays`: rays prepared on the host.
    Rays,
    /// `cast_camera`: a camera's pixels, rays made in the shader.
    Camera,
    /// `cast_pairs`: line of sight between pairs of agents.
    Pairs,
}

impl Entry {
    fn name(self) -> &'static str {
        match self {
            Entry::Rays => "cast_rays",
            Entry::Camera => "cast_camera",
            Entry::Pairs => "cast_pairs",
        }
    }
}

/// Storage buffers an entry point of the shader binds at most: chunk table, occupancy, bricks
/// and ids, and for `cast_pairs` pairs, agents and their output (`shaders/dda.wgsl`).
const STORAGE_BUFFERS: u32 = 7;

/// The limits below which the shader cannot run, checked so that such a device gets a clear
/// error instead of a pipeline validation message.
fn check_limits(limits: &wgpu::Limits) -> Result<(), GpuError> {
    let needs = [
        (
            "storage buffers per shader stage",
            limits.max_storage_buffers_per_shader_stage,
            STORAGE_BUFFERS,
        ),
        (
            "compute workgroup size x",
            limits.max_compute_workgroup_size_x,
            WORKGROUP_SIZE,
        ),
        (
            "compute invocations per workgroup",
            limits.max_compute_invocations_per_workgroup,
            WORKGROUP_SIZE,
        ),
        (
            "compute workgroups per dimension",
            limits.max_compute_workgroups_per_dimension,
            1,
        ),
        (
            "bindings per bind group",
            limits.max_bindings_per_bind_group,
            STORAGE_BUFFERS + 1,
        ),
        (
            "uniform buffers per shader stage",
            limits.max_uniform_buffers_per_shader_stage,
            1,
        ),
    ];
    match needs.iter().find(|(_, has, needs)| has < needs) {
        Some((what, has, needs)) => Err(GpuError::UnsuitableDevice(format!(
            "{what}: the device allows {has}, the shader needs {needs}"
        ))),
        None => Ok(()),
    }
}

/// The shader's `OPTIONS` for `opts` (and conservative line of sight): the `FLAG_*` bits of
/// `shaders/dda.wgsl`.
pub(super) fn option_flags(opts: &RaycastOptions, conservative: bool) -> u32 {
    let mut flags = match opts.origin {
        OriginPolicy::Report => ORIGIN_REPORT,
        OriginPolicy::SkipOriginVoxel => ORIGIN_SKIP,
        OriginPolicy::ExitSolid => ORIGIN_EXIT_SOLID,
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
    entry: Entry,
    flags: u32,
) -> Result<wgpu::ComputePipeline, GpuError> {
    let entry = entry.name();
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

/// Whether batches under `config` share their buffers with the host on a device of `kind`
/// (where it has `MAPPABLE_PRIMARY_BUFFERS`): [`DispatchMemory::Auto`] on a CPU device.
fn shares_host_memory(config: &GpuConfig, kind: wgpu::DeviceType) -> bool {
    config.dispatch_memory == DispatchMemory::Auto && kind == wgpu::DeviceType::Cpu
}
