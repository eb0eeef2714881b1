//! The dispatch machinery: sets of buffers for one dispatch each, kept in a pool and reused
//! between batches, and [`Flight`], a batch on its way through the GPU in one or more
//! dispatches (at most two in flight at once), read back as each finishes.

use std::collections::VecDeque;

use super::*;

/// The buffers of one dispatch: parameters, material filter, input and output storage, and
/// the mapped buffers that stage the input and read the output back. Sized in bytes; a batch
/// takes a set at least as large as its dispatch needs.
#[derive(Debug)]
pub(super) struct DispatchBuffers {
    params: wgpu::Buffer,
    filter: wgpu::Buffer,
    input: wgpu::Buffer,
    output: wgpu::Buffer,
    /// Host-writable staging for `input`, kept with the set: `Queue::write_buffer` would
    /// allocate fresh staging memory on every call.
    upload: wgpu::Buffer,
    readback: wgpu::Buffer,
    /// Two timestamps around the dispatch, resolved and read back, where the device has
    /// timestamp queries.
    timer: Option<(wgpu::QuerySet, wgpu::Buffer, wgpu::Buffer)>,
}

impl DispatchBuffers {
    fn new(device: &wgpu::Device, input: u64, output: u64, timestamps: bool) -> Self {
        let buf = |label, size: u64, usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: size.max(16),
                usage,
                mapped_at_creation: false,
            })
        };
        use wgpu::BufferUsages as U;
        Self {
            params: buf(
                "params",
                size_of::<GpuParams>() as u64,
                U::UNIFORM | U::COPY_DST,
            ),
            filter: buf("filter", FILTER_BYTES, U::UNIFORM | U::COPY_DST),
            input: buf("input", input, U::STORAGE | U::COPY_DST),
            output: buf("output", output, U::STORAGE | U::COPY_SRC | U::COPY_DST),
            upload: buf("upload", input, U::MAP_WRITE | U::COPY_SRC),
            readback: buf("readback", output, U::MAP_READ | U::COPY_DST),
            timer: timestamps.then(|| {
                (
                    device.create_query_set(&wgpu::QuerySetDescriptor {
                        label: Some("kernel time"),
                        ty: wgpu::QueryType::Timestamp,
                        count: 2,
                    }),
                    buf("timestamps", 16, U::QUERY_RESOLVE | U::COPY_SRC),
                    buf("timestamps readback", 16, U::MAP_READ | U::COPY_DST),
                )
            }),
        }
    }

    /// Bytes allocated on the device.
    pub(super) fn bytes(&self) -> u64 {
        [
            &self.params,
            &self.filter,
            &self.input,
            &self.output,
            &self.upload,
            &self.readback,
        ]
        .iter()
        .map(|b| b.size())
        .sum::<u64>()
            + self
                .timer
                .as_ref()
                .map_or(0, |(_, r, b)| r.size() + b.size())
    }

    fn fits(&self, input: u64, output: u64) -> bool {
        self.input.size() >= input && self.output.size() >= output
    }
}

/// The material filter's size: one bit per id.
const FILTER_BYTES: u64 = 2048 * 4;

/// What a [`GpuRaycaster`] shares with the batches it submits, which outlive the calls that
/// made them.
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) device: wgpu::Device,
    pub(super) queue: wgpu::Queue,
    /// Sets of dispatch buffers not in use.
    pub(super) pool: Mutex<Vec<DispatchBuffers>>,
    /// Host working buffers for ray batches not in use.
    pub(super) staging: Mutex<Vec<HostStaging>>,
    pub(super) lost: Arc<Mutex<Option<String>>>,
    pub(super) timestamps: bool,
    pub(super) period_ns: f64,
    pub(super) stats: Mutex<BatchStats>,
}

impl Shared {
    /// A set of at least `input` and `output` bytes: the smallest free one that fits, or a
    /// new one sized to the next power of two.
    fn take_set(&self, input: u64, output: u64) -> DispatchBuffers {
        let mut pool = self
            .pool
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let best = pool
            .iter()
            .enumerate()
            .filter(|(_, s)| s.fits(input, output))
            .min_by_key(|(_, s)| s.input.size() + s.output.size())
            .map(|(i, _)| i);
        match best {
            Some(i) => pool.swap_remove(i),
            None => DispatchBuffers::new(
                &self.device,
                input.next_power_of_two(),
                output.next_power_of_two(),
                self.timestamps,
            ),
        }
    }

    fn give_back(&self, set: DispatchBuffers) {
        self.pool
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(set);
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

    pub(super) fn check_lost(&self) -> Result<(), GpuError> {
        match self.lost.lock().map(|l| l.clone()) {
            Ok(Some(msg)) => Err(GpuError::Device(msg)),
            Ok(None) => Ok(()),
            Err(_) => Err(GpuError::Internal("device-lost flag poisoned".into())),
        }
    }

    /// Waits for `mapped` (a mapping started with [`map_channel`]), which completes once
    /// `submission` has finished: for that submission alone, so that later ones keep running
    /// (with `None`, the buffer is idle and one poll completes it).
    fn wait_mapped(
        &self,
        mapped: &Receiver<Result<(), wgpu::BufferAsyncError>>,
        submission: Option<&wgpu::SubmissionIndex>,
    ) -> Result<(), GpuError> {
        let poll = match submission {
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
}

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

/// What a batch's dispatches cast: the items each invocation takes.
#[derive(Debug)]
pub(super) enum Items {
    /// Rays prepared on the host: `staging.rays` in the caller's order, uploaded in the order
    /// of `staging.order[..count]`.
    Rays(HostStaging, usize),
    /// Pixels of a camera, made in the shader.
    Camera(u32),
    /// Agent pairs (two u32 indices each) and the agent buffer; `details`: whether each
    /// pair's full answer is written besides its visibility bit.
    Pairs {
        pairs: Vec<[u32; 2]>,
        agents: wgpu::Buffer,
        details: bool,
    },
}

impl Items {
    fn count(&self) -> u64 {
        match self {
            Items::Rays(_, n) => *n as u64,
            Items::Camera(n) => u64::from(*n),
            Items::Pairs { pairs, .. } => pairs.len() as u64,
        }
    }

    /// Input and output bytes of `n` items. Pairs write their visibility bits (a word per 32
    /// pairs) first, then with details their answers.
    fn bytes(&self, n: u64) -> (u64, u64) {
        match self {
            Items::Rays(..) => (
                n * size_of::<GpuRay>() as u64,
                n * size_of::<GpuHit>() as u64,
            ),
            Items::Camera(_) => (0, n * size_of::<GpuHit>() as u64),
            Items::Pairs { details, .. } => {
                let answers = if *details {
                    n * size_of::<GpuHit>() as u64
                } else {
                    0
                };
                (n * 8, bit_words(n) * 4 + answers)
            }
        }
    }
}

/// Words of visibility bits for `n` pairs: a pair dispatch's output starts with them, and its
/// answers (with details) follow.
pub(super) fn bit_words(n: u64) -> u64 {
    n.div_ceil(32)
}

/// The world's buffers and the pipeline a batch binds, kept so that later dispatches of the
/// batch can be made after the call that submitted it has returned.
#[derive(Debug)]
pub(super) struct Binding {
    pub(super) pipeline: wgpu::ComputePipeline,
    pub(super) layout: wgpu::BindGroupLayout,
    pub(super) world: [wgpu::Buffer; 4],
    pub(super) params: GpuParams,
    pub(super) filter: Vec<u32>,
}

/// A dispatch submitted and not read yet.
#[derive(Debug)]
struct InFlight {
    set: DispatchBuffers,
    /// Index of its first item in the batch, and how many it has.
    base: u64,
    count: u64,
    submission: wgpu::SubmissionIndex,
    hits_mapped: Receiver<Result<(), wgpu::BufferAsyncError>>,
    timestamps_mapped: Option<Receiver<Result<(), wgpu::BufferAsyncError>>>,
    /// Set by the readback's mapping callback: the dispatch's results can be read.
    done: Arc<std::sync::atomic::AtomicBool>,
}

/// Where a batch hands each dispatch's results: the index of its first item, the items'
/// count and the output bytes (read from the mapped readback buffer).
pub(super) type Sink<'a> = dyn FnMut(&Items, u64, u64, &[u8]) -> Result<(), GpuError> + 'a;

/// A batch on its way through the GPU: split into dispatches of at most `per_dispatch` items,
/// two in flight at once; each is read back (and its buffers returned to the pool) as it
/// finishes, and the next submitted.
#[derive(Debug)]
pub(super) struct Flight {
    shared: Arc<Shared>,
    binding: Binding,
    pub(super) items: Items,
    per_dispatch: u64,
    next: u64,
    in_flight: VecDeque<InFlight>,
    pub(super) kernel_ns: f64,
    pub(super) dispatches: u32,
}

/// Dispatches of one batch in flight at once: the GPU runs one while the host reads the last
/// and stages the next.
const IN_FLIGHT: usize = 2;

impl Flight {
    /// Starts a batch: submits its first dispatches.
    pub(super) fn start(
        shared: Arc<Shared>,
        binding: Binding,
        items: Items,
        per_dispatch: u32,
    ) -> Result<Self, GpuError> {
        shared.check_lost()?;
        let mut flight = Self {
            shared,
            binding,
            items,
            per_dispatch: u64::from(per_dispatch.max(1)),
            next: 0,
            in_flight: VecDeque::new(),
            kernel_ns: 0.0,
            dispatches: 0,
        };
        flight.submit_more()?;
        Ok(flight)
    }

    /// Whether every dispatch has been read.
    pub(super) fn finished(&self) -> bool {
        self.in_flight.is_empty() && self.next >= self.items.count()
    }

    /// Submits dispatches until two are in flight or none is left.
    fn submit_more(&mut self) -> Result<(), GpuError> {
        let total = self.items.count();
        while self.in_flight.len() < IN_FLIGHT && self.next < total {
            let count = (total - self.next).min(self.per_dispatch);
            let f = self.submit(self.next, count)?;
            self.next += count;
            self.in_flight.push_back(f);
        }
        Ok(())
    }

    /// Stages and submits items `base..base + count`, and starts mapping their results.
    fn submit(&mut self, base: u64, count: u64) -> Result<InFlight, GpuError> {
        let shared = Arc::clone(&self.shared);
        let device = &shared.device;
        let (input_bytes, output_bytes) = self.items.bytes(count);
        let set = shared.take_set(input_bytes, output_bytes);
        // From here every error of the device is returned, none goes to its uncaptured-error
        // handler (on an application's device, the application's, which may panic).
        let scope_oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let scope_val = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut params = self.binding.params;
        params.ray_base = base as u32;
        params.ray_count = count as u32;
        shared
            .queue
            .write_buffer(&set.params, 0, bytemuck::bytes_of(&params));
        shared
            .queue
            .write_buffer(&set.filter, 0, bytemuck::cast_slice(&self.binding.filter));
        let mut encoder =
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        let staged = match &self.items {
            Items::Camera(_) => Ok(()),
            Items::Rays(staging, _) => {
                let order = &staging.order[base as usize..(base + count) as usize];
                self.stage(&set, input_bytes, |view| {
                    let (dst, _) = view.into_chunks::<{ size_of::<GpuRay>() }>();
                    dst.write_iter(
                        order
                            .iter()
                            .map(|&(_, i)| bytemuck::cast(staging.rays[i as usize])),
                    );
                })
            }
            Items::Pairs { pairs, .. } => {
                let pairs = &pairs[base as usize..(base + count) as usize];
                self.stage(&set, input_bytes, |mut view| {
                    view.copy_from_slice(bytemuck::cast_slice(pairs));
                })
            }
        };
        if let Err(e) = staged {
            shared.give_back(set);
            drop(pollster::block_on(scope_val.pop()));
            drop(pollster::block_on(scope_oom.pop()));
            return Err(e);
        }
        if input_bytes > 0 {
            encoder.copy_buffer_to_buffer(&set.upload, 0, &set.input, 0, input_bytes);
        }
        if let Items::Pairs { .. } = self.items {
            // The bits are set with atomic ORs.
            encoder.clear_buffer(&set.output, 0, Some(bit_words(count) * 4));
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
        encoder.copy_buffer_to_buffer(&set.output, 0, &set.readback, 0, output_bytes);
        if let Some((queries, resolve, readback)) = &set.timer {
            encoder.resolve_query_set(queries, 0..2, resolve, 0);
            encoder.copy_buffer_to_buffer(resolve, 0, readback, 0, 16);
        }
        let submission = shared.queue.submit([encoder.finish()]);
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (tx, hits_mapped) = std::sync::mpsc::channel();
        let flag = Arc::clone(&done);
        set.readback
            .slice(..output_bytes)
            .map_async(wgpu::MapMode::Read, move |r| {
                flag.store(true, std::sync::atomic::Ordering::Release);
                let _ = tx.send(r);
            });
        let timestamps_mapped = set
            .timer
            .as_ref()
            .map(|(_, _, readback)| map_channel(&readback.slice(..), wgpu::MapMode::Read));
        let errors = [
            pollster::block_on(scope_val.pop()),
            pollster::block_on(scope_oom.pop()),
        ];
        let flight = InFlight {
            set,
            base,
            count,
            submission,
            hits_mapped,
            timestamps_mapped,
            done,
        };
        if let Some(e) = errors.into_iter().flatten().next() {
            self.abandon(flight);
            return Err(device_error(e));
        }
        self.dispatches += 1;
        Ok(flight)
    }

    /// Maps `set`'s upload buffer (idle: one poll completes the mapping), lets `write` fill
    /// its first `bytes`, and unmaps it.
    fn stage(
        &self,
        set: &DispatchBuffers,
        bytes: u64,
        write: impl FnOnce(wgpu::WriteOnly<'_, [u8]>),
    ) -> Result<(), GpuError> {
        let slice = set.upload.slice(..bytes);
        let mapped = map_channel(&slice, wgpu::MapMode::Write);
        let staged = self.shared.wait_mapped(&mapped, None).and_then(|()| {
            let mut view = slice.get_mapped_range_mut().map_err(device_error)?;
            write(view.slice(..));
            Ok(())
        });
        set.upload.unmap();
        staged
    }

    fn bind_group(&self, set: &DispatchBuffers) -> wgpu::BindGroup {
        let [table, occupancy, bricks, ids] = &self.binding.world;
        fn entry(binding: u32, buffer: &wgpu::Buffer) -> wgpu::BindGroupEntry<'_> {
            wgpu::BindGroupEntry {
                binding,
                resource: buffer.as_entire_binding(),
            }
        }
        let mut entries = vec![
            entry(0, &set.params),
            entry(1, table),
            entry(2, occupancy),
            entry(3, bricks),
            entry(4, ids),
            entry(5, &set.filter),
        ];
        match &self.items {
            Items::Rays(..) | Items::Camera(_) => {
                entries.push(entry(6, &set.input));
                entries.push(entry(7, &set.output));
            }
            Items::Pairs { agents, .. } => {
                entries.push(entry(8, &set.input));
                entries.push(entry(9, agents));
                entries.push(entry(10, &set.output));
            }
        }
        self.shared
            .device
            .create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("voxcast batch"),
                layout: &self.binding.layout,
                entries: &entries,
            })
    }

    /// Reads back every dispatch that has finished (waiting for the oldest first with `wait`),
    /// hands its results to `sink`, and submits the next dispatches. `Ok(true)` once the whole
    /// batch has been read. Without `wait` it never blocks: the device is polled, not waited
    /// for.
    pub(super) fn advance(&mut self, wait: bool, sink: &mut Sink<'_>) -> Result<bool, GpuError> {
        loop {
            let Some(oldest) = self.in_flight.front() else {
                return Ok(self.finished());
            };
            if wait {
                let index = oldest.submission.clone();
                self.shared
                    .device
                    .poll(wgpu::PollType::Wait {
                        submission_index: Some(index),
                        timeout: None,
                    })
                    .map_err(device_error)?;
            } else if !oldest.done.load(std::sync::atomic::Ordering::Acquire) {
                self.shared
                    .device
                    .poll(wgpu::PollType::Poll)
                    .map_err(device_error)?;
                if !oldest.done.load(std::sync::atomic::Ordering::Acquire) {
                    return Ok(false);
                }
            }
            let f = self.in_flight.pop_front().expect("checked above");
            let read = self.read(&f, sink);
            self.release(f);
            self.kernel_ns += read?;
            self.submit_more()?;
        }
    }

    /// Hands a finished dispatch's results to `sink`; returns its kernel time in nanoseconds
    /// (0 without timestamps).
    fn read(&self, f: &InFlight, sink: &mut Sink<'_>) -> Result<f64, GpuError> {
        let (_, output_bytes) = self.items.bytes(f.count);
        let slice = f.set.readback.slice(..output_bytes);
        self.shared
            .wait_mapped(&f.hits_mapped, Some(&f.submission))?;
        {
            let view = slice.get_mapped_range().map_err(device_error)?;
            sink(&self.items, f.base, f.count, &view)?;
        }
        let mut kernel_ns = 0.0;
        if let (Some((_, _, ts)), Some(mapped)) = (&f.set.timer, &f.timestamps_mapped)
            && self.shared.wait_mapped(mapped, Some(&f.submission)).is_ok()
            && let Ok(view) = ts.slice(..).get_mapped_range()
        {
            let stamps: &[u64] = bytemuck::cast_slice(&view);
            kernel_ns = stamps[1].saturating_sub(stamps[0]) as f64 * self.shared.period_ns;
        }
        Ok(kernel_ns)
    }

    /// Unmaps a dispatch's buffers (a mapping still pending is abandoned) and returns them to
    /// the pool.
    fn release(&self, f: InFlight) {
        f.set.readback.unmap();
        if let Some((_, _, ts)) = &f.set.timer {
            ts.unmap();
        }
        self.shared.give_back(f.set);
    }

    fn abandon(&self, f: InFlight) {
        self.release(f);
    }

    /// The items, taken out once the batch is done (their buffers go back to a pool).
    pub(super) fn take_items(&mut self) -> Items {
        std::mem::replace(&mut self.items, Items::Camera(0))
    }

    /// Every result: waits for the dispatches still in flight.
    pub(super) fn finish(&mut self, sink: &mut Sink<'_>) -> Result<(), GpuError> {
        self.advance(true, sink)?;
        self.shared.check_lost()
    }
}

impl Drop for Flight {
    fn drop(&mut self) {
        // A batch dropped before it was read: its buffers go back to the pool once mapped
        // again, which unmapping here allows.
        while let Some(f) = self.in_flight.pop_front() {
            self.release(f);
        }
    }
}
