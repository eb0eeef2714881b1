//! The device: adapter, device and queue (or the application's own), the shader module and its
//! pipelines, one per entry point and combination of options, compiled on first use. A
//! [`Device`] owns the courier that submits to its queue.

use rustc_hash::FxHashMap;
use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use crate::gpu::error::GpuError;
use crate::gpu::layout::{Access, Entry, GpuRay, WORKGROUP_SIZE};
use crate::gpu::queue::Courier;

/// Whether a [`GpuRaycaster`](crate::gpu::GpuRaycaster) may be created on a device whose self-check
/// differs from the CPU reference (see
/// [`GpuRaycaster::self_check`](crate::gpu::GpuRaycaster::self_check)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SelfCheck {
    /// Creation fails with [`GpuError::SelfCheckFailed`] (the default).
    #[default]
    Required,
    /// Creation succeeds: the raycaster's answers may differ from the CPU reference's.
    /// [`GpuRaycaster::self_check`](crate::gpu::GpuRaycaster::self_check) and
    /// [`GpuRaycaster::adapter_summary`](crate::gpu::GpuRaycaster::adapter_summary) say how.
    AllowUnverified,
}

/// How a [`GpuRaycaster`](crate::gpu::GpuRaycaster) is created
/// ([`GpuRaycaster::new`](crate::gpu::GpuRaycaster::new),
/// [`GpuRaycaster::from_device`](crate::gpu::GpuRaycaster::from_device)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuConfig {
    /// What a failed self-check does.
    pub self_check: SelfCheck,
    /// Where batches stage their rays and answers.
    pub dispatch_memory: DispatchMemory,
    /// Where uploaded rays are set up for the walk, and in which order they go up.
    pub ray_setup: RaySetup,
    /// Who submits to the device and polls it while batches are in flight.
    pub driver: Driver,
}

/// Who drives the device: submits voxcast's work to its queue and polls it so that batches'
/// answers are mapped. Either gives the same answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Driver {
    /// A thread of voxcast's own (joined when the raycaster, its worlds and batches are
    /// dropped): it submits and polls while batches are in flight, and wakes each batch as its
    /// answers come, so the caller's thread never waits on a driver. For a native program;
    /// the default there. On the web (`wasm32`), which has no threads, opening a device with
    /// it fails with [`GpuError::Device`](crate::gpu::GpuError::Device).
    #[cfg_attr(not(target_arch = "wasm32"), default)]
    Thread,
    /// The host: voxcast starts no thread, submits from the calling thread (one submission at
    /// a time), and the device is polled by whoever drives it: a browser's event loop, or the
    /// application's own `wgpu::Device::poll` (once a frame, say), and a pending batch polls it
    /// without waiting each time it is polled. A batch awaited is woken when a poll maps its
    /// answers; the calls whose job is to wait (`PendingBatch::wait`, `GpuRaycaster::cast`)
    /// poll the device themselves until then. The default on the web (`wasm32`), where the
    /// browser drives the device and the waiting calls do not exist.
    #[cfg_attr(target_arch = "wasm32", default)]
    Host,
}

/// Where uploaded rays are set up for the walk (each axis's first crossing and inverse
/// direction), and in which order they go up: the rays of `raycast`, `line_of_sight`, their
/// window forms, and the segments and sensor rays that agent and sensor calls cast from the
/// host. Either gives the same answers, bit for bit: the shader's division is the exact one of
/// `shaders/exact.wgsl`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RaySetup {
    /// [`RaySetup::Host`] on a device that is the CPU itself (lavapipe, llvmpipe, WARP,
    /// SwiftShader), where the shader's work and the host's share the same cores;
    /// [`RaySetup::Shader`] on every other device, where the kernel runs beside the host and
    /// the host's work per ray is expected to bound a batch (measured on lavapipe only so
    /// far; `BENCHMARKS.md`, "Rays set up in the shader").
    #[default]
    Auto,
    /// Set up on the host (three divisions a ray) and sorted into a coherent order
    /// (neighbouring invocations then walk the same chunks the same way): the least work
    /// for the shader, the most for the host.
    Host,
    /// Uploaded in the caller's order, and set up by the shader (the exact division) where
    /// they are valid as given and start in the window: the least work for the host. Others
    /// are set up on the host (rays that start outside the window are stepped to it there),
    /// and rays the host answers take no slot.
    Shader,
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

/// A wgpu device made ready for the shader, shared by a raycaster, its worlds and its batches
/// (the last of them to go drops it, and its courier thread ends then).
#[derive(Debug)]
pub(super) struct Device {
    /// First, so that it ends (and stops using the device) before the handles below go.
    pub(super) courier: Courier,
    /// The wgpu device and its queue.
    pub(super) wgpu: wgpu::Device,
    pub(super) queue: wgpu::Queue,
    pub(super) info: wgpu::AdapterInfo,
    pub(super) limits: wgpu::Limits,
    /// Whether dispatches are timed with timestamp queries.
    pub(super) timestamps: bool,
    /// Nanoseconds per timestamp tick.
    pub(super) period_ns: f64,
    /// Whether dispatch buffers are shared with the host (see [`DispatchMemory::Auto`]).
    pub(super) host_shared: bool,
    /// Whether uploaded rays are set up by the shader (see [`RaySetup`]).
    pub(super) rays_set_up_in_shader: bool,
    /// Whether the device is a software rasteriser (`DeviceType::Cpu`), whose shaders may run
    /// their loops a limited number of times (see [`GpuError::BoxCastTooLong`]).
    pub(super) loop_budget: bool,
    /// Why the device was lost, once it was (set by the lost callback, where voxcast owns it).
    lost: Arc<Mutex<Option<String>>>,
    /// Each entry point of the shader with its bind group and pipeline layouts.
    layouts: Vec<(Entry, wgpu::BindGroupLayout, wgpu::PipelineLayout)>,
    module: wgpu::ShaderModule,
    /// The pipelines made so far, by entry point and option flags.
    pipelines: Mutex<FxHashMap<(Entry, u32), wgpu::ComputePipeline>>,
    /// Bind groups of recent dispatches, reused by later ones that bind the same buffers.
    pub(super) bind_groups: BindGroupCache,
}

/// The bind groups of the last few dispatches, each with what it binds: a dispatch binding
/// the same layout, set of dispatch buffers and buffers of world, rig or agents takes it again
/// instead of making one (tens of microseconds each). A bind group keeps its buffers alive, so
/// whoever drops or replaces a buffer that may be bound calls [`BindGroupCache::forget`].
/// A batch still in flight may bind such a buffer after that: only batches begun since the
/// last `forget` ([`BindGroupCache::epoch`]) add to the cache.
#[derive(Debug, Default)]
pub(super) struct BindGroupCache {
    /// The groups, and how many times buffers were forgotten.
    groups: Mutex<(Vec<CachedBindGroup>, u64)>,
}

/// One cached bind group: the dispatch set it binds (by its number), its layout and the other
/// buffers it binds.
#[derive(Debug)]
struct CachedBindGroup {
    set: u64,
    layout: wgpu::BindGroupLayout,
    buffers: Vec<wgpu::Buffer>,
    group: wgpu::BindGroup,
}

/// Bind groups kept: a few per dispatch set in use (two in flight, a few entry points).
const CACHED_BIND_GROUPS: usize = 8;

impl BindGroupCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, (Vec<CachedBindGroup>, u64)> {
        self.groups
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How many times buffers were forgotten: a batch records it when it takes its buffers.
    pub(super) fn epoch(&self) -> u64 {
        self.lock().1
    }

    /// The bind group of set `set` with `layout` and `buffers`: the cached one, or the one
    /// `make` makes, cached (the oldest dropped beyond [`CACHED_BIND_GROUPS`]) where no buffer
    /// was forgotten since `epoch` (one of `buffers` may be gone since).
    pub(super) fn get_or_make(
        &self,
        epoch: u64,
        set: u64,
        layout: &wgpu::BindGroupLayout,
        buffers: &[&wgpu::Buffer],
        make: impl FnOnce() -> wgpu::BindGroup,
    ) -> wgpu::BindGroup {
        let mut guard = self.lock();
        let (groups, forgotten) = &mut *guard;
        let same = |c: &CachedBindGroup| {
            c.set == set
                && c.layout == *layout
                && c.buffers.len() == buffers.len()
                && c.buffers.iter().zip(buffers).all(|(a, b)| a == *b)
        };
        if let Some(c) = groups.iter().find(|c| same(c)) {
            return c.group.clone();
        }
        let group = make();
        if *forgotten != epoch {
            return group;
        }
        if groups.len() >= CACHED_BIND_GROUPS {
            groups.remove(0);
        }
        groups.push(CachedBindGroup {
            set,
            layout: layout.clone(),
            buffers: buffers.iter().map(|&b| b.clone()).collect(),
            group: group.clone(),
        });
        group
    }

    /// Drops the bind groups that bind any of `buffers`, so that their memory can go.
    pub(super) fn forget(&self, buffers: &[&wgpu::Buffer]) {
        let mut guard = self.lock();
        guard
            .0
            .retain(|c| !c.buffers.iter().any(|b| buffers.contains(&b)));
        guard.1 += 1;
    }

    /// Drops the bind groups of dispatch set `set` (one may have failed to be made).
    pub(super) fn forget_set(&self, set: u64) {
        self.lock().0.retain(|c| c.set != set);
    }

    /// Drops every bind group.
    pub(super) fn clear(&self) {
        let mut guard = self.lock();
        guard.0.clear();
        guard.1 += 1;
    }
}

impl Device {
    /// Picks an adapter (honouring `WGPU_BACKEND`, `WGPU_ADAPTER_NAME` and `WGPU_POWER_PREF`),
    /// creates a device with the adapter's own limits, and readies `shader` with its entry
    /// points `entries` on it.
    pub(super) async fn open(
        config: GpuConfig,
        shader: Cow<'static, str>,
        entries: &[Entry],
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
        Self::on(device, queue, lost, shader, entries, config)
    }

    /// Readies `shader` on `device`: checks its limits against the bindings of its entry points
    /// `entries`, compiles the module, makes each entry point's layouts, and starts the
    /// courier. `lost` is set by the device-lost callback, if voxcast owns one.
    pub(super) fn on(
        device: wgpu::Device,
        queue: wgpu::Queue,
        lost: Arc<Mutex<Option<String>>>,
        shader: Cow<'static, str>,
        entries: &[Entry],
        config: GpuConfig,
    ) -> Result<Self, GpuError> {
        let info = device.adapter_info();
        let loop_budget = info.device_type == wgpu::DeviceType::Cpu;
        let limits = device.limits();
        let timestamps = device.features().contains(wgpu::Features::TIMESTAMP_QUERY);
        let host_shared = shares_host_memory(&config, info.device_type)
            && device
                .features()
                .contains(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS);
        check_limits(&limits, entries)?;

        // Shader and pipelines, validated inside an error scope.
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("voxcast shader"),
            source: wgpu::ShaderSource::Wgsl(shader),
        });
        // Each layout holds the bindings of its entry point (`Entry::bindings`).
        let make_layout = |&entry: &Entry| {
            let label = entry.name;
            let entries: Vec<_> = entry
                .bindings()
                .map(|b| wgpu::BindGroupLayoutEntry {
                    binding: b.number,
                    visibility: wgpu::ShaderStages::COMPUTE,
                    ty: wgpu::BindingType::Buffer {
                        ty: match b.access {
                            Access::Uniform => wgpu::BufferBindingType::Uniform,
                            Access::Read => wgpu::BufferBindingType::Storage { read_only: true },
                            Access::ReadWrite => {
                                wgpu::BufferBindingType::Storage { read_only: false }
                            }
                        },
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                })
                .collect();
            let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some(label),
                entries: &entries,
            });
            let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(label),
                bind_group_layouts: &[Some(&layout)],
                immediate_size: 0,
            });
            (entry, layout, pipeline_layout)
        };
        let layouts = entries.iter().map(make_layout).collect();
        if let Some(e) = crate::gpu::error::error_now(scope) {
            return Err(GpuError::Device(format!("shader rejected: {e}")));
        }
        let rays_set_up_in_shader = match config.ray_setup {
            RaySetup::Auto => !loop_budget,
            RaySetup::Host => false,
            RaySetup::Shader => true,
        };
        Ok(Self {
            courier: match config.driver {
                Driver::Thread => Courier::start(&device, &queue)?,
                Driver::Host => Courier::on_host(&device, &queue),
            },
            period_ns: f64::from(queue.get_timestamp_period()),
            wgpu: device,
            queue,
            info,
            limits,
            timestamps,
            host_shared,
            rays_set_up_in_shader,
            loop_budget,
            lost,
            layouts,
            module,
            pipelines: Mutex::default(),
            bind_groups: BindGroupCache::default(),
        })
    }

    /// The pipeline of `entry` specialised for option `flags` (the shader's `OPTIONS`),
    /// compiled on first use and kept: each combination of options in use pays one
    /// compilation (the raycaster makes the default options' rays and camera at creation).
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
        let layout = &self.layouts_of(entry)?.2;
        let p = make_pipeline(&self.wgpu, &self.module, layout, entry, flags)?;
        made.insert((entry, flags), p.clone());
        Ok(p)
    }

    /// The bind group layout of `entry`'s pipelines.
    pub(super) fn layout(&self, entry: Entry) -> Result<&wgpu::BindGroupLayout, GpuError> {
        Ok(&self.layouts_of(entry)?.1)
    }

    /// `entry` with its layouts: each entry point the device was opened with has its own,
    /// made from its bindings, so that a new entry point needs nothing here.
    fn layouts_of(
        &self,
        entry: Entry,
    ) -> Result<&(Entry, wgpu::BindGroupLayout, wgpu::PipelineLayout), GpuError> {
        self.layouts.iter().find(|l| l.0 == entry).ok_or_else(|| {
            GpuError::Internal(format!("entry point {} is not registered", entry.name))
        })
    }

    /// `Err` once the device is lost.
    pub(super) fn check_lost(&self) -> Result<(), GpuError> {
        match self.lost.lock().map(|l| l.clone()) {
            Ok(Some(msg)) => Err(GpuError::Device(msg)),
            Ok(None) => Ok(()),
            Err(_) => Err(GpuError::Internal("device-lost flag poisoned".into())),
        }
    }

    /// The largest buffer a binding may take, in bytes.
    pub(super) fn max_binding(&self) -> u64 {
        self.limits
            .max_storage_buffer_binding_size
            .min(self.limits.max_buffer_size)
    }

    /// Most items per dispatch on this device: what one storage binding holds, at most `asked`.
    pub(super) fn dispatch_capacity(&self, asked: u32) -> u32 {
        let by_binding = self.limits.max_storage_buffer_binding_size / size_of::<GpuRay>() as u64;
        let by_buffer = self.limits.max_buffer_size / size_of::<GpuRay>() as u64;
        let by_groups = u64::from(self.limits.max_compute_workgroups_per_dimension).pow(2)
            * u64::from(WORKGROUP_SIZE);
        u64::from(asked)
            .min(by_binding)
            .min(by_buffer)
            .min(by_groups)
            .max(1) as u32
    }
}

/// The most buffers of `access` that one of `entries` binds (`Entry::bindings`).
fn most_bound(entries: &[Entry], access: &[Access]) -> u32 {
    entries
        .iter()
        .map(|e| e.bindings().filter(|b| access.contains(&b.access)).count() as u32)
        .max()
        .unwrap_or(0)
}

/// The limits below which the shader cannot run, checked so that such a device gets a clear
/// error instead of a pipeline validation message.
fn check_limits(limits: &wgpu::Limits, entries: &[Entry]) -> Result<(), GpuError> {
    let storage = most_bound(entries, &[Access::Read, Access::ReadWrite]);
    // A bind group layout's binding numbers must lie below this limit.
    let binding_numbers = entries
        .iter()
        .flat_map(|e| e.bindings())
        .map(|b| b.number + 1)
        .max()
        .unwrap_or(0);
    let needs = [
        (
            "storage buffers per shader stage",
            limits.max_storage_buffers_per_shader_stage,
            storage,
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
            binding_numbers,
        ),
        (
            "uniform buffers per shader stage",
            limits.max_uniform_buffers_per_shader_stage,
            most_bound(entries, &[Access::Uniform]),
        ),
    ];
    match needs.iter().find(|(_, has, needs)| has < needs) {
        Some((what, has, needs)) => Err(GpuError::UnsuitableDevice(format!(
            "{what}: the device allows {has}, the shader needs {needs}"
        ))),
        None => Ok(()),
    }
}

/// The compute pipeline of `entry` with the shader's `OPTIONS` set to
/// `flags`, checked inside a validation error scope.
fn make_pipeline(
    device: &wgpu::Device,
    module: &wgpu::ShaderModule,
    layout: &wgpu::PipelineLayout,
    entry: Entry,
    flags: u32,
) -> Result<wgpu::ComputePipeline, GpuError> {
    let entry = entry.name;
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
    match crate::gpu::error::error_now(scope) {
        Some(e) => Err(GpuError::Device(format!("pipeline {entry} rejected: {e}"))),
        None => Ok(pipeline),
    }
}

/// Whether batches under `config` share their buffers with the host on a device of `kind`
/// (where it has `MAPPABLE_PRIMARY_BUFFERS`): [`DispatchMemory::Auto`] on a CPU device.
fn shares_host_memory(config: &GpuConfig, kind: wgpu::DeviceType) -> bool {
    config.dispatch_memory == DispatchMemory::Auto && kind == wgpu::DeviceType::Cpu
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The limits checked are those the entry points' bindings need: WebGPU's defaults
    /// suffice, one binding number or storage buffer less does not.
    #[test]
    fn the_limits_follow_the_bindings() {
        let entries = &crate::gpu::ENTRIES;
        let defaults = wgpu::Limits::default();
        assert!(check_limits(&defaults, entries).is_ok());
        let highest = entries
            .iter()
            .flat_map(|e| e.bindings())
            .map(|b| b.number)
            .max()
            .unwrap_or(0);
        let mut fewer = defaults.clone();
        fewer.max_bindings_per_bind_group = highest;
        assert!(check_limits(&fewer, entries).is_err());
        let mut fewer = defaults;
        fewer.max_storage_buffers_per_shader_stage =
            most_bound(entries, &[Access::Read, Access::ReadWrite]) - 1;
        assert!(check_limits(&fewer, entries).is_err());
    }
}
