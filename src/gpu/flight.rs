//! A batch in flight: its items (rays, pixels or pairs) split into dispatches of at most a
//! dispatch's worth, each staged into a set of buffers, recorded with the batch's pipeline and
//! world, handed to the courier and read back as it finishes (two in flight at once).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};

use crate::gpu::buffers::{BufferPool, DispatchBuffers, FILTER_AT, FILTER_BYTES, INPUT_AT};
use crate::gpu::device::Device;
use crate::gpu::error::{GpuError, ScopeFuture, device_error, first_error, settled_error};
use crate::gpu::layout::{
    CHUNK_TABLE, Entry, FILTER_BITS, GpuParams, IDS, OCCUPANCY, PARAMS, SHAPES, SLOTS,
    WORKGROUP_SIZE,
};
use crate::gpu::prepare::HostStaging;
use crate::gpu::queue::{Dispatch, Wake, WorldSync};
use crate::gpu::world::GpuWorld;
use crate::ray::RaycastOptions;

/// What a raycaster shares with the batches it submits, which outlive the calls that made
/// them: the device and the buffers kept between batches.
#[derive(Debug)]
pub(super) struct Batches {
    pub(super) device: Arc<Device>,
    /// Dispatch buffers not in use.
    pub(super) buffers: BufferPool,
    /// Host working buffers for ray batches not in use.
    staging: Mutex<Vec<HostStaging>>,
}

impl Drop for Batches {
    fn drop(&mut self) {
        // The dispatch sets go: so do the bind groups that keep their buffers alive (the device
        // lives on while a world uploaded on it does).
        self.device.bind_groups.clear();
    }
}

impl Batches {
    /// Nothing kept yet.
    pub(super) fn new(device: Arc<Device>) -> Self {
        Self {
            device,
            buffers: BufferPool::default(),
            staging: Mutex::new(Vec::new()),
        }
    }

    /// Host working buffers for a batch of rays: a kept set, or a new one.
    pub(super) fn take_staging(&self) -> HostStaging {
        self.staging
            .lock()
            .ok()
            .and_then(|mut s| s.pop())
            .unwrap_or_default()
    }

    /// Keeps `staging` for a later batch. Two sets at most are kept (as many batches as the
    /// blocking calls overlap).
    pub(super) fn return_staging(&self, staging: HostStaging) {
        if let Ok(mut kept) = self.staging.lock()
            && kept.len() < 2
        {
            kept.push(staging);
        }
    }

    /// What is kept between batches.
    pub(super) fn kept_memory(&self) -> KeptMemory {
        KeptMemory {
            gpu_bytes: self.buffers.bytes(),
            host_bytes: self
                .staging
                .lock()
                .map_or(0, |s| s.iter().map(HostStaging::bytes).sum()),
        }
    }

    /// Frees what is kept between batches.
    pub(super) fn release(&self) {
        self.buffers.clear();
        self.device.bind_groups.clear();
        replace_locked(&self.staging, Vec::new());
    }
}

/// What one batch cost: its own, whatever else runs beside it
/// ([`PendingBatch::stats`](crate::gpu::PendingBatch::stats)).
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
    /// it already. The agents' eyes ([`GpuAgents`](crate::gpu::GpuAgents)) are not counted here.
    pub bytes_up: u64,
    /// Bytes read back: 20 per answer, or for agent pairs a bit each (4 bytes per 32) plus 20
    /// each with answers.
    pub bytes_down: u64,
}

impl BatchStats {
    /// Adds `other`'s counts and times to these (the bands of one blocking call); kernel
    /// times add where both have them.
    #[cfg(not(target_arch = "wasm32"))]
    pub(super) fn add(&mut self, other: &BatchStats) {
        self.gpu_rays += other.gpu_rays;
        self.dispatches += other.dispatches;
        self.kernel_seconds = other
            .kernel_seconds
            .map(|k| k + self.kernel_seconds.unwrap_or(0.0));
        self.total_seconds += other.total_seconds;
        self.host_seconds += other.host_seconds;
        self.bytes_up += other.bytes_up;
        self.bytes_down += other.bytes_down;
    }
}

/// What a [`GpuRaycaster`](crate::gpu::GpuRaycaster) keeps allocated between batches
/// ([`GpuRaycaster::kept_memory`](crate::gpu::GpuRaycaster::kept_memory)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeptMemory {
    /// GPU buffers of finished dispatches, kept for later ones: per ray of a dispatch 48 bytes of
    /// ray and 20 of answer, each twice (on the device, and mapped for upload and readback; once
    /// where [`BatchSetup::shares_host_memory`](crate::gpu::BatchSetup::shares_host_memory)),
    /// rounded up to a power of two of bytes, at most
    /// [`MAX_DISPATCH_RAYS`](crate::gpu::MAX_DISPATCH_RAYS) rays (or what
    /// [`GpuRaycaster::set_max_dispatch_rays`](crate::gpu::GpuRaycaster::set_max_dispatch_rays)
    /// set) a dispatch; a set per dispatch that was in flight at once; plus a few KiB each of
    /// parameters and material filter.
    pub gpu_bytes: u64,
    /// Host working buffers of finished ray batches: 60 bytes per ray of the largest batch
    /// (52 where the shader sets rays up and every ray so far went up, [`RaySetup`]) (at most two such
    /// sets, each at most 2^20 rays for blocking calls), plus each set's coherence sort
    /// counters and part ends (at most 128 KiB per thread and 256 KiB).
    ///
    /// [`RaySetup`]: crate::gpu::RaySetup
    pub host_bytes: u64,
}

/// Replaces what `m` guards with `value`, also after a panic poisoned it (the old value, in
/// an unknown state, is dropped).
fn replace_locked<T>(m: &Mutex<T>, value: T) {
    *m.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = value;
    m.clear_poison();
}

/// What a query kind sends up: the items each invocation takes, how many bytes go up and come
/// down for a run of them, and how they are written into a dispatch's mapped upload buffer.
/// The shared stages (this file, `pending`) drive any `Upload` without knowing which kind it
/// is; each kind's file implements it beside the collector that reads its answers.
pub(super) trait Upload: Sized + Send + std::fmt::Debug + 'static {
    /// The entry point that casts these items (and so the bindings it reads).
    const ENTRY: Entry;

    /// How many items (invocations) the batch has.
    fn count(&self) -> u64;

    /// Where the run of items that one dispatch may take from `at` on ends (the end of the
    /// batch unless the kind groups its items).
    fn run_end(&self, _at: u64) -> u64 {
        self.count()
    }

    /// Most items one dispatch takes, given what the raycaster asks for (`asked`, at least 1).
    fn per_dispatch(&self, asked: u32) -> u64 {
        u64::from(asked.max(1))
    }

    /// Input and output bytes of `n` items.
    fn bytes(&self, n: u64) -> (u64, u64);

    /// The input bytes of items `base..base + count`, for a kind whose items go up as they
    /// are (none for a kind whose invocations need no input).
    fn input(&self, _base: u64, _count: u64) -> &[u8] {
        &[]
    }

    /// Writes the input bytes of items `base..base + count` into the mapped `buffer` from
    /// byte `at` on: [`Upload::input`], unless the kind gathers them itself.
    fn write_input(
        &self,
        base: u64,
        count: u64,
        buffer: &wgpu::Buffer,
        at: u64,
    ) -> Result<(), wgpu::MapRangeError> {
        let bytes = self.input(base, count);
        let mut view = buffer
            .slice(at..at + bytes.len() as u64)
            .get_mapped_range_mut()?;
        view.copy_from_slice(bytes);
        Ok(())
    }

    /// A buffer bound besides the world's and the dispatch's own (agents' eyes, a rig).
    fn extra(&self) -> Option<&wgpu::Buffer> {
        None
    }

    /// Bytes at the start of the output cleared before a dispatch of `count` items (bits set
    /// with atomic ORs).
    fn cleared_output(&self, _count: u64) -> u64 {
        0
    }

    /// Hands what the batch kept back to `batches` once it is done (host working buffers).
    fn recycle(self, _batches: &Batches) {}
}

/// The world's buffers and the pipeline a batch binds, kept so that later dispatches of the
/// batch can be made after the call that submitted it has returned.
#[derive(Debug)]
pub(super) struct Binding {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    world: [wgpu::Buffer; 5],
    /// The world's changes, and how many it had when the batch was submitted.
    sync: Arc<WorldSync>,
    version: u64,
    params: GpuParams,
    /// The material filter's words, or `None` where the shader does not read it (every
    /// non-air voxel stops: `FLAG_EVERY_NON_AIR`).
    filter: Option<Vec<u32>>,
    /// The bind group cache's epoch when the batch took its buffers.
    epoch: u64,
}

impl Binding {
    /// What a batch on `world` binds: the pipeline of `entry` for option `flags` (the world's
    /// own added), the world's buffers, the parameters and the material filter of `opts`.
    pub(super) fn new(
        device: &Device,
        world: &GpuWorld,
        entry: Entry,
        flags: u32,
        params: GpuParams,
        opts: &RaycastOptions,
    ) -> Result<Self, GpuError> {
        Ok(Self {
            pipeline: device.pipeline(entry, flags | world.window.flags() | world.shape_flags())?,
            layout: device.layout(entry)?.clone(),
            world: world.buffers(),
            sync: Arc::clone(&world.sync),
            version: world.sync.version(),
            params,
            filter: (!opts.blocks.is_every_non_air()).then(|| opts.blocks.words().to_vec()),
            epoch: device.bind_groups.epoch(),
        })
    }
}

/// A dispatch submitted and not read yet.
struct InFlight {
    set: DispatchBuffers,
    /// Index of its first item in the batch, and how many it has.
    base: u64,
    count: u64,
    /// That the courier has submitted it (or why it could not).
    submitted: Receiver<Result<wgpu::SubmissionIndex, GpuError>>,
    hits_mapped: Receiver<Result<(), wgpu::BufferAsyncError>>,
    timestamps_mapped: Option<Receiver<Result<(), wgpu::BufferAsyncError>>>,
    /// Set by the readback's mapping callback: the dispatch's results can be read.
    done: Arc<AtomicBool>,
    /// Error scopes of its commands whose outcome was not known when it was submitted.
    later: Vec<ScopeFuture>,
}

impl std::fmt::Debug for InFlight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InFlight")
            .field("base", &self.base)
            .field("count", &self.count)
            .field("scopes_to_come", &self.later.len())
            .finish_non_exhaustive()
    }
}

/// What a batch's flights cost: added up as each finishes.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Totals {
    pub(super) kernel_ns: f64,
    pub(super) dispatches: u32,
    /// Bytes written to the device (items, parameters, filter) and read back.
    pub(super) bytes_up: u64,
    pub(super) bytes_down: u64,
    /// Seconds spent waiting for the device (not host work).
    pub(super) waited: f64,
}

/// A batch's items of one kind on their way through the GPU: split into dispatches of at most
/// `per_dispatch` items, two in flight at once; each is read back (and its buffers returned to
/// the pool) as it finishes, and the next submitted. It knows its items only through
/// [`Upload`].
#[derive(Debug)]
pub(super) struct Flight<U: Upload> {
    batches: Arc<Batches>,
    binding: Binding,
    items: Option<U>,
    per_dispatch: u64,
    next: u64,
    in_flight: VecDeque<InFlight>,
    totals: Totals,
    wake: Arc<Wake>,
    /// A dispatch was submitted after its world changed: the batch has no answers.
    stale: bool,
}

/// Dispatches of one batch in flight at once: the GPU runs one while the host reads the last
/// and stages the next.
const IN_FLIGHT: usize = 2;

impl<U: Upload> Flight<U> {
    /// Starts a batch: submits its first dispatches, at most `per_dispatch` items each; the
    /// courier wakes `wake` as each finishes.
    pub(super) fn start(
        batches: &Arc<Batches>,
        binding: Binding,
        items: U,
        per_dispatch: u32,
        wake: &Arc<Wake>,
    ) -> Result<Self, GpuError> {
        batches.device.check_lost()?;
        binding.sync.check()?;
        let mut flight = Self {
            batches: Arc::clone(batches),
            binding,
            per_dispatch: items.per_dispatch(per_dispatch),
            items: Some(items),
            next: 0,
            in_flight: VecDeque::new(),
            totals: Totals::default(),
            wake: Arc::clone(wake),
            stale: false,
        };
        flight.submit_more()?;
        Ok(flight)
    }

    fn items(&self) -> &U {
        self.items
            .as_ref()
            .expect("a flight's items stay until it is dropped")
    }

    /// Whether every dispatch has been read.
    fn finished(&self) -> bool {
        self.in_flight.is_empty() && self.next >= self.items().count()
    }

    /// Submits dispatches until two are in flight or none is left.
    fn submit_more(&mut self) -> Result<(), GpuError> {
        let total = self.items().count();
        while self.in_flight.len() < IN_FLIGHT && self.next < total {
            let count = (self.items().run_end(self.next) - self.next).min(self.per_dispatch);
            let f = self.submit(self.next, count)?;
            self.next += count;
            self.in_flight.push_back(f);
        }
        Ok(())
    }

    /// Stages items `base..base + count` (with the parameters and, where needed, the filter)
    /// in a set's mapped upload buffer, records the dispatch and hands it to the courier.
    fn submit(&mut self, base: u64, count: u64) -> Result<InFlight, GpuError> {
        let batches = Arc::clone(&self.batches);
        let device = &batches.device.wgpu;
        let (input_bytes, output_bytes) = self.items().bytes(count);
        let mut set = batches
            .buffers
            .take(&batches.device, input_bytes, output_bytes);
        let mut params = self.binding.params;
        params.ray_base = base as u32;
        params.ray_count = count as u32;
        let filter = self
            .binding
            .filter
            .as_ref()
            .filter(|f| set.filter_words != **f);
        {
            let mut view = set
                .upload
                .slice(..INPUT_AT)
                .get_mapped_range_mut()
                .map_err(device_error)?;
            view.slice(..size_of::<GpuParams>())
                .copy_from_slice(bytemuck::bytes_of(&params));
            if let Some(f) = filter {
                view.slice(FILTER_AT as usize..INPUT_AT as usize)
                    .copy_from_slice(bytemuck::cast_slice(f));
            }
        }
        if input_bytes > 0 {
            self.items()
                .write_input(base, count, &set.upload, INPUT_AT)
                .map_err(device_error)?;
        }
        set.upload.unmap();
        let mut bytes_up = size_of::<GpuParams>() as u64 + input_bytes;
        // The commands' own errors are caught here, the submission's by the courier.
        let scope_oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let scope_val = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut encoder =
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        encoder.copy_buffer_to_buffer(
            &set.upload,
            0,
            &set.params,
            0,
            size_of::<GpuParams>() as u64,
        );
        if let Some(f) = filter {
            encoder.copy_buffer_to_buffer(&set.upload, FILTER_AT, &set.filter, 0, FILTER_BYTES);
            set.filter_words.clone_from(f);
            bytes_up += FILTER_BYTES;
        }
        if input_bytes > 0 && !set.host_shared {
            encoder.copy_buffer_to_buffer(&set.upload, INPUT_AT, &set.input, 0, input_bytes);
        }
        let cleared = self.items().cleared_output(count);
        if cleared > 0 {
            encoder.clear_buffer(&set.output, 0, Some(cleared));
        }
        let bind_group = self.bind_group(&set);
        // Dispatch: a 2D grid of workgroups when one dimension is not enough.
        let groups = (count as u32).div_ceil(WORKGROUP_SIZE);
        let max_groups = device.limits().max_compute_workgroups_per_dimension;
        let gx = groups.min(max_groups);
        let gy = groups.div_ceil(gx);
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("voxcast"),
                timestamp_writes: set.timer.as_ref().map(|(queries, ..)| {
                    wgpu::ComputePassTimestampWrites {
                        query_set: queries,
                        beginning_of_pass_write_index: Some(0),
                        end_of_pass_write_index: Some(1),
                    }
                }),
            });
            pass.set_pipeline(&self.binding.pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(gx, gy, 1);
        }
        if !set.host_shared {
            encoder.copy_buffer_to_buffer(&set.output, 0, &set.readback, 0, output_bytes);
        }
        if let Some((queries, resolve, readback)) = &set.timer {
            encoder.resolve_query_set(queries, 0..2, resolve, 0);
            encoder.copy_buffer_to_buffer(resolve, 0, readback, 0, 16);
        }
        let commands = encoder.finish();
        let mut later = Vec::new();
        let error = first_error([scope_val, scope_oom], &mut later);
        let done = Arc::new(AtomicBool::new(false));
        let (hits, hits_mapped) = channel();
        let (stamps, timestamps_mapped) = channel();
        let (reply, submitted) = channel();
        let job = Dispatch {
            commands,
            readback: set.readback.clone(),
            output_bytes,
            timestamps: set.timer.as_ref().map(|(_, _, readback)| readback.clone()),
            done: Arc::clone(&done),
            wake: Arc::clone(&self.wake),
            hits,
            stamps,
            reply,
        };
        let sent = match error {
            Some(e) => Err(device_error(e)),
            None => batches.device.courier.submit(job),
        };
        if let Err(e) = sent {
            // Its bind group may be the failure.
            batches.device.bind_groups.forget_set(set.id);
            retire(&batches, set);
            return Err(e);
        }
        // The world's changes are sent to the courier after their version is counted: a
        // version unchanged now means that any later change lands after this dispatch.
        if self.binding.sync.version() != self.binding.version {
            self.stale = true;
        }
        self.totals.dispatches += 1;
        self.totals.bytes_up += bytes_up;
        self.totals.bytes_down += output_bytes;
        Ok(InFlight {
            timestamps_mapped: set.timer.is_some().then_some(timestamps_mapped),
            set,
            base,
            count,
            submitted,
            hits_mapped,
            done,
            later,
        })
    }

    fn bind_group(&self, set: &DispatchBuffers) -> wgpu::BindGroup {
        let [table, occupancy, bricks, ids, shapes] = &self.binding.world;
        fn entry(binding: u32, buffer: &wgpu::Buffer) -> wgpu::BindGroupEntry<'_> {
            wgpu::BindGroupEntry {
                binding,
                resource: buffer.as_entire_binding(),
            }
        }
        let own = U::ENTRY;
        // The input: in the upload buffer after the parameters and filter where it is shared.
        let input = |binding: u32| {
            if set.host_shared {
                wgpu::BindGroupEntry {
                    binding,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: &set.upload,
                        offset: INPUT_AT,
                        size: None,
                    }),
                }
            } else {
                entry(binding, &set.input)
            }
        };
        // The buffers bound besides the set's own: the world's, and the kind's own.
        let extra = self.items().extra();
        let mut bound = vec![table, occupancy, bricks, ids, shapes];
        bound.extend(extra);
        let make = || {
            let mut entries = vec![
                entry(PARAMS.number, &set.params),
                entry(CHUNK_TABLE.number, table),
                entry(OCCUPANCY.number, occupancy),
                entry(SLOTS.number, bricks),
                entry(IDS.number, ids),
                entry(FILTER_BITS.number, &set.filter),
                entry(SHAPES.number, shapes),
            ];
            entries.push(input(own.input.number));
            if let (Some(b), Some(at)) = (extra, own.extra) {
                entries.push(entry(at.number, b));
            }
            entries.push(entry(own.output.number, &set.output));
            self.batches
                .device
                .wgpu
                .create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("voxcast batch"),
                    layout: &self.binding.layout,
                    entries: &entries,
                })
        };
        self.batches.device.bind_groups.get_or_make(
            self.binding.epoch,
            set.id,
            &self.binding.layout,
            &bound,
            make,
        )
    }

    /// Reads back every dispatch that has finished (waiting for the oldest first with `wait`),
    /// hands its results to `sink` (the items, the index of the dispatch's first item, the
    /// items' count and the output bytes read back), and submits the next dispatches.
    /// `Ok(true)` once the whole batch has been read. Without `wait` it never waits: it only
    /// looks at what the courier's polling has completed.
    pub(super) fn advance(
        &mut self,
        wait: bool,
        sink: &mut impl FnMut(&U, u64, u64, &[u8]) -> Result<(), GpuError>,
    ) -> Result<bool, GpuError> {
        let courier = &Arc::clone(&self.batches).device.courier;
        courier.drive(false);
        loop {
            if self.stale {
                return Err(GpuError::WorldChanged);
            }
            let Some(oldest) = self.in_flight.front() else {
                return Ok(self.finished());
            };
            if !wait && !oldest.done.load(Ordering::Acquire) {
                return Ok(false);
            }
            let t = web_time::Instant::now();
            // Where the host drives the device, waiting is polling it until the answers map.
            while wait && !oldest.done.load(Ordering::Acquire) && courier.drives_on_host() {
                courier.drive(true);
            }
            let mut f = self.in_flight.pop_front().expect("checked above");
            // Waits (with `wait`) on the channel the courier's poll completes, not spinning.
            // A mapping that fails on a lost device says why the device was lost, where the
            // device has said so already.
            let mapped = f
                .hits_mapped
                .recv()
                .map_err(|_| GpuError::Device("a readback was abandoned".into()))
                .and_then(|r| {
                    r.map_err(|e| {
                        self.batches
                            .device
                            .check_lost()
                            .err()
                            .unwrap_or_else(|| device_error(e))
                    })
                });
            let stamps = f
                .timestamps_mapped
                .as_ref()
                .is_some_and(|m| settled(m, courier.drives_on_host()));
            self.totals.waited += t.elapsed().as_secs_f64();
            let hits = mapped.is_ok();
            let read = mapped
                .and_then(|()| match settled_error(&mut f.later) {
                    Some(e) => Err(device_error(e)),
                    None => Ok(()),
                })
                .and_then(|()| self.read(&f, stamps, sink));
            self.release(f, Some((hits, stamps)));
            self.totals.kernel_ns += read?;
            self.submit_more()?;
        }
    }

    /// Hands a finished (and mapped) dispatch's results to `sink`; returns its kernel time in
    /// nanoseconds (0 without timestamps, or where they are not mapped: `stamps`).
    fn read(
        &self,
        f: &InFlight,
        stamps: bool,
        sink: &mut impl FnMut(&U, u64, u64, &[u8]) -> Result<(), GpuError>,
    ) -> Result<f64, GpuError> {
        let (_, output_bytes) = self.items().bytes(f.count);
        {
            let view = f
                .set
                .readback
                .slice(..output_bytes)
                .get_mapped_range()
                .map_err(device_error)?;
            sink(self.items(), f.base, f.count, &view)?;
        }
        let mut kernel_ns = 0.0;
        if let Some((_, _, ts)) = &f.set.timer
            && stamps
            && let Ok(view) = ts.slice(..).get_mapped_range()
        {
            let stamps: &[u64] = bytemuck::cast_slice(&view);
            kernel_ns = stamps[1].saturating_sub(stamps[0]) as f64 * self.batches.device.period_ns;
        }
        Ok(kernel_ns)
    }

    /// Unmaps a dispatch's buffers and returns them to the pool, once the courier has submitted
    /// them (so that no later batch uses them before this dispatch is in the queue). `mapped`:
    /// whether the readback and the timestamps are mapped, where the caller has read them;
    /// `None` for a dispatch dropped unread, whose mappings are waited for first: the courier's
    /// poll maps a buffer on its own thread, and an unmap racing it can find the mapping taken
    /// but not yet done, which wgpu reports as an error (a panic under its default handler).
    fn release(&self, f: InFlight, mapped: Option<(bool, bool)>) {
        let asked = f.submitted.recv().is_ok();
        if mapped.is_none() {
            // A dropped dispatch's mappings settle once the device has done its work.
            self.batches.device.courier.settle();
        }
        let host = self.batches.device.courier.drives_on_host();
        let (hits, stamps) = mapped.unwrap_or_else(|| {
            (
                asked && settled(&f.hits_mapped, host),
                asked
                    && f.timestamps_mapped
                        .as_ref()
                        .is_some_and(|m| settled(m, host)),
            )
        });
        if mapped.is_none() && asked && (!hits || (f.set.timer.is_some() && !stamps)) {
            // A mapping still to come (on the web, the page's event loop maps it later): the
            // set cannot be used again before it settles, so it is dropped, not pooled.
            self.batches.device.bind_groups.forget_set(f.set.id);
            return;
        }
        if hits {
            f.set.readback.unmap();
        }
        if let Some((_, _, ts)) = &f.set.timer
            && stamps
        {
            ts.unmap();
        }
        retire(&self.batches, f.set);
    }

    /// Once every dispatch has been read: what the flight cost, its items recycled.
    pub(super) fn close(mut self) -> Totals {
        if let Some(items) = self.items.take() {
            items.recycle(&self.batches);
        }
        self.totals
    }

    /// Seconds waited for the device so far.
    pub(super) fn waited(&self) -> f64 {
        self.totals.waited
    }
}

impl<U: Upload> Drop for Flight<U> {
    fn drop(&mut self) {
        // A batch dropped before it was read: its buffers go back to the pool (its results,
        // if they come, are discarded).
        while let Some(f) = self.in_flight.pop_front() {
            self.release(f, None);
        }
    }
}

/// Hands a set that no dispatch uses any more back to the pool, its upload buffer mapped
/// again for the next. On the web a set serves one dispatch and is dropped instead (its bind
/// group with it): written after a second mapping (`mapAsync`), an upload buffer reached the
/// GPU with the last dispatch's bytes in Chromium, while one mapped at creation never did.
fn retire(batches: &Batches, mut set: DispatchBuffers) {
    if cfg!(target_arch = "wasm32") {
        batches.device.bind_groups.forget_set(set.id);
        return;
    }
    set.remap(&batches.device.courier);
    batches.buffers.give_back(set);
}

/// How long a dropped dispatch's buffers wait for their mappings to settle (a device that never
/// finishes is given up rather than hang the drop).
const SETTLE: std::time::Duration = std::time::Duration::from_secs(10);

/// Whether a mapping's callback has reported the buffer mapped, waiting for it at most
/// [`SETTLE`] where voxcast's thread drives the device, not at all where the host does (its
/// device was polled to the end already: `Courier::settle`); `false` for a failed, abandoned
/// or pending mapping (the buffer is not mapped then).
fn settled(mapped: &Receiver<Result<(), wgpu::BufferAsyncError>>, host: bool) -> bool {
    if host {
        matches!(mapped.try_recv(), Ok(Ok(())))
    } else {
        matches!(mapped.recv_timeout(SETTLE), Ok(Ok(())))
    }
}
