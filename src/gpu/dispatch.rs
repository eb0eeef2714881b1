//! The dispatch machinery: sets of buffers for one dispatch each, kept in a pool and reused
//! between batches; the courier, a thread that submits dispatches and polls the device; and
//! [`Flight`], a batch on its way through the GPU in one or more dispatches (at most two in
//! flight at once), read back as each finishes.
//!
//! A driver may block a queue submit until the work submitted before it has finished (Mesa's
//! lavapipe does), and wgpu holds the device while it submits, so that any other call on the
//! device waits too. Batches must return at once and be taken without waiting, so the
//! caller's thread never submits, polls or writes through the queue: it only fills mapped
//! buffers, records commands and reads flags and channels. The courier does the rest.

use std::collections::VecDeque;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};

use crate::gpu::host::HostStaging;
use crate::gpu::world::WorldSync;
use crate::gpu::{BatchStats, GpuError, GpuHit, GpuParams, GpuRay, WORKGROUP_SIZE, device_error};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Sender, TryRecvError, channel};

/// A dispatch's upload buffer: its parameters (at 0), the material filter and its input.
const FILTER_AT: u64 = 256;
const INPUT_AT: u64 = FILTER_AT + FILTER_BYTES;

/// The material filter's size: one bit per id.
const FILTER_BYTES: u64 = 2048 * 4;

/// The buffers of one dispatch: parameters, material filter, input and output storage, the
/// mapped buffer that stages parameters, filter and input, and the one that reads the output
/// back. Sized in bytes; a batch takes a set at least as large as its dispatch needs.
#[derive(Debug)]
pub(super) struct DispatchBuffers {
    params: wgpu::Buffer,
    filter: wgpu::Buffer,
    input: wgpu::Buffer,
    output: wgpu::Buffer,
    /// Host-writable staging, kept mapped between uses (see `upload_state`).
    upload: wgpu::Buffer,
    readback: wgpu::Buffer,
    /// Whether the shader reads its input from `upload` (from [`INPUT_AT`] on) and the host
    /// reads the output from `output` itself (`input` and `readback` are those buffers).
    host_shared: bool,
    /// Two timestamps around the dispatch, resolved and read back, where the device has
    /// timestamp queries.
    timer: Option<(wgpu::QuerySet, wgpu::Buffer, wgpu::Buffer)>,
    /// The material filter last written to `filter` (not written again while it is the same).
    filter_words: Vec<u32>,
    upload_state: UploadState,
}

/// Where a set's upload buffer stands: mapped for writing between uses, so that staging a
/// dispatch needs no poll of the device.
#[derive(Debug)]
enum UploadState {
    /// Mapped for writing, the whole buffer.
    Mapped,
    /// The courier has asked for the mapping; done once the receiver has the outcome.
    Mapping(Receiver<Result<(), wgpu::BufferAsyncError>>),
}

impl DispatchBuffers {
    /// A set for `input` and `output` bytes. With `host_shared` (a device whose memory is the
    /// host's, with `MAPPABLE_PRIMARY_BUFFERS`) the shader reads the input where the host
    /// stages it and the host maps the output itself: no copies either way.
    fn new(
        device: &wgpu::Device,
        input: u64,
        output: u64,
        timestamps: bool,
        host_shared: bool,
    ) -> Self {
        let buf = |label, size: u64, usage, mapped_at_creation| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: size.max(16),
                usage,
                mapped_at_creation,
            })
        };
        use wgpu::BufferUsages as U;
        let shared_usage = |u: U| if host_shared { u } else { U::empty() };
        let upload = buf(
            "upload",
            INPUT_AT + input,
            U::MAP_WRITE | U::COPY_SRC | shared_usage(U::STORAGE),
            true,
        );
        let output = buf(
            "output",
            output,
            U::STORAGE | U::COPY_SRC | U::COPY_DST | shared_usage(U::MAP_READ),
            false,
        );
        let (input, readback) = if host_shared {
            (upload.clone(), output.clone())
        } else {
            (
                buf("input", input, U::STORAGE | U::COPY_DST, false),
                buf("readback", output.size(), U::MAP_READ | U::COPY_DST, false),
            )
        };
        Self {
            params: buf(
                "params",
                size_of::<GpuParams>() as u64,
                U::UNIFORM | U::COPY_DST,
                false,
            ),
            filter: buf("filter", FILTER_BYTES, U::UNIFORM | U::COPY_DST, false),
            input,
            output,
            upload,
            readback,
            host_shared,
            timer: timestamps.then(|| {
                (
                    device.create_query_set(&wgpu::QuerySetDescriptor {
                        label: Some("kernel time"),
                        ty: wgpu::QueryType::Timestamp,
                        count: 2,
                    }),
                    buf("timestamps", 16, U::QUERY_RESOLVE | U::COPY_SRC, false),
                    buf("timestamps readback", 16, U::MAP_READ | U::COPY_DST, false),
                )
            }),
            filter_words: Vec::new(),
            upload_state: UploadState::Mapped,
        }
    }

    /// Bytes allocated on the device.
    pub(super) fn bytes(&self) -> u64 {
        let mut buffers = vec![&self.params, &self.filter, &self.output, &self.upload];
        if !self.host_shared {
            buffers.extend([&self.input, &self.readback]);
        }
        buffers.iter().map(|b| b.size()).sum::<u64>()
            + self
                .timer
                .as_ref()
                .map_or(0, |(_, r, b)| r.size() + b.size())
    }

    fn fits(&self, input: u64, output: u64) -> bool {
        self.upload.size() >= INPUT_AT + input && self.output.size() >= output
    }

    /// Whether the upload buffer is mapped (checked without waiting).
    fn upload_ready(&mut self) -> bool {
        if let UploadState::Mapping(rx) = &self.upload_state {
            match rx.try_recv() {
                Ok(Ok(())) => self.upload_state = UploadState::Mapped,
                Ok(Err(_)) | Err(TryRecvError::Disconnected) | Err(TryRecvError::Empty) => {
                    return false;
                }
            }
        }
        true
    }
}

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
    /// Whether dispatch buffers are shared with the host (see [`DispatchBuffers::new`]).
    pub(super) host_shared: bool,
    pub(super) period_ns: f64,
    pub(super) stats: Mutex<BatchStats>,
    /// Where dispatches go to be submitted.
    pub(super) courier: Courier,
}

impl Shared {
    /// A set of at least `input` and `output` bytes whose upload buffer is mapped: the
    /// smallest such free one, or a new one sized to the next power of two (a set still being
    /// mapped again stays in the pool rather than be waited for).
    fn take_set(&self, input: u64, output: u64) -> DispatchBuffers {
        let mut pool = self
            .pool
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let best = pool
            .iter_mut()
            .enumerate()
            .filter(|(_, s)| s.fits(input, output))
            .filter_map(|(i, s)| {
                s.upload_ready()
                    .then_some((i, s.upload.size() + s.output.size()))
            })
            .min_by_key(|&(_, size)| size)
            .map(|(i, _)| i);
        match best {
            Some(i) => pool.swap_remove(i),
            None => DispatchBuffers::new(
                &self.device,
                // Whole powers of two of at least 16 bytes keep every size copy-aligned.
                input.max(16).next_power_of_two(),
                output.max(16).next_power_of_two(),
                self.timestamps,
                self.host_shared,
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
}

/// The thread that submits dispatches, polls the device while they run (which completes their
/// readback), maps upload buffers again and writes data ordered before later dispatches. It
/// sleeps in the driver while the GPU is busy and on its channel while it is idle. Dropping
/// the courier (with the last handle of its raycaster, worlds and batches) closes its channel
/// and joins the thread once the device has finished what it was given: nothing of voxcast
/// uses the device after that, so a program can return from `main` at once (the driver may be
/// unloaded by the exit handlers).
#[derive(Debug)]
pub(super) struct Courier {
    jobs: Option<Sender<Job>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Courier {
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take()
            && thread.thread().id() != std::thread::current().id()
        {
            // The thread catches nothing: a panic there has been reported already.
            let _ = thread.join();
        }
    }
}

enum Job {
    /// One dispatch: its commands, the buffers to map once they are submitted, and where to
    /// say so.
    Submit {
        commands: wgpu::CommandBuffer,
        readback: wgpu::Buffer,
        output_bytes: u64,
        timestamps: Option<wgpu::Buffer>,
        done: Arc<AtomicBool>,
        hits: Sender<Result<(), wgpu::BufferAsyncError>>,
        stamps: Sender<Result<(), wgpu::BufferAsyncError>>,
        reply: Sender<Result<wgpu::SubmissionIndex, GpuError>>,
    },
    /// Map a set's upload buffer for writing again.
    Remap {
        upload: wgpu::Buffer,
        mapped: Sender<Result<(), wgpu::BufferAsyncError>>,
    },
    /// Write `data` into `buffer` at `offset`, before any dispatch submitted after this.
    Write {
        buffer: wgpu::Buffer,
        offset: u64,
        data: Vec<u8>,
    },
    /// A world's changes, in one submission before any dispatch submitted after this; where
    /// a sender is given, why it failed (or `None`) goes there once it is submitted.
    Upload(Upload, Option<Sender<Option<String>>>),
}

/// Changes to a world's buffers, sent to the courier in one job so that they land between
/// the dispatches submitted before and after: buffers copied into their larger successors,
/// then ranges of one staging buffer written into place. Where it fails (the device ran out
/// of memory or was lost), `failed` says so, and batches on the world report it.
#[derive(Debug)]
pub(super) struct Upload {
    /// Copies on the device: source, destination, their offsets and the size.
    grow: Vec<(wgpu::Buffer, wgpu::Buffer, u64, u64, u64)>,
    data: Vec<u8>,
    /// Destination, its offset, and the range of `data` written there.
    writes: Vec<(wgpu::Buffer, u64, std::ops::Range<usize>)>,
    failed: Arc<Mutex<Option<String>>>,
}

impl Upload {
    /// No changes yet; a failure will be recorded in `failed`.
    pub(super) fn new(failed: &Arc<Mutex<Option<String>>>) -> Self {
        Self {
            grow: Vec::new(),
            data: Vec::new(),
            writes: Vec::new(),
            failed: Arc::clone(failed),
        }
    }

    /// Copies the whole of `old` into the start of `new` (before every other copy and write).
    pub(super) fn grow(&mut self, old: &wgpu::Buffer, new: &wgpu::Buffer) {
        self.grow.push((old.clone(), new.clone(), 0, 0, old.size()));
    }

    /// Copies `size` bytes of `from` at `at` into `to` at `to_at` (after the copies of
    /// [`Upload::grow`], before every write).
    pub(super) fn copy(
        &mut self,
        from: &wgpu::Buffer,
        at: u64,
        to: &wgpu::Buffer,
        to_at: u64,
        size: u64,
    ) {
        self.grow.push((from.clone(), to.clone(), at, to_at, size));
    }

    /// Records that the world cannot be used any more, and why.
    pub(super) fn fail(&self, why: &str) {
        if let Ok(mut failed) = self.failed.lock() {
            failed.get_or_insert_with(|| format!("{why}: rebuild the GpuWorld"));
        }
    }

    /// Writes `bytes` (a multiple of four) into `buffer` at `offset`; a write that continues
    /// the last one into the same buffer joins it.
    pub(super) fn write(&mut self, buffer: &wgpu::Buffer, offset: u64, bytes: &[u8]) {
        let start = self.data.len();
        self.data.extend_from_slice(bytes);
        if let Some((b, at, range)) = self.writes.last_mut()
            && b == buffer
            && *at + range.len() as u64 == offset
        {
            range.end = self.data.len();
            return;
        }
        self.writes
            .push((buffer.clone(), offset, start..self.data.len()));
    }

    /// Bytes written (the copies of grown buffers, made on the device, not counted).
    pub(super) fn bytes(&self) -> u64 {
        self.data.len() as u64
    }

    /// Whether there is nothing to do.
    pub(super) fn is_empty(&self) -> bool {
        self.grow.is_empty() && self.writes.is_empty()
    }

    /// Records and submits the changes (on the courier's thread). Returns why it failed, if
    /// it did.
    fn submit(self, device: &wgpu::Device, queue: &wgpu::Queue) -> Option<String> {
        let scope_oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let scope_val = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("voxcast world upload"),
        });
        for (from, to, at, to_at, size) in &self.grow {
            encoder.copy_buffer_to_buffer(from, *at, to, *to_at, *size);
        }
        let mut mapping = None;
        if !self.writes.is_empty() {
            let staging = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("voxcast world staging"),
                size: (self.data.len() as u64).next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT),
                usage: wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: true,
            });
            match staging.slice(..).get_mapped_range_mut() {
                Ok(mut view) => view.slice(..self.data.len()).copy_from_slice(&self.data),
                Err(e) => mapping = Some(e.to_string()),
            }
            staging.unmap();
            for (buffer, offset, range) in &self.writes {
                encoder.copy_buffer_to_buffer(
                    &staging,
                    range.start as u64,
                    buffer,
                    *offset,
                    range.len() as u64,
                );
            }
        }
        queue.submit([encoder.finish()]);
        let errors = [
            pollster::block_on(scope_val.pop()),
            pollster::block_on(scope_oom.pop()),
        ];
        let error = errors
            .into_iter()
            .flatten()
            .next()
            .map(|e| e.to_string())
            .or(mapping)?;
        let message = format!("uploading chunks failed: {error}");
        if let Ok(mut failed) = self.failed.lock() {
            failed.get_or_insert_with(|| message.clone());
        }
        Some(message)
    }
}

/// How long the courier waits for the GPU at a time before it looks for new work.
const COURIER_WAIT: std::time::Duration = std::time::Duration::from_millis(1);

impl Courier {
    /// Starts the thread for `device` and `queue`.
    pub(super) fn start(device: &wgpu::Device, queue: &wgpu::Queue) -> Result<Self, GpuError> {
        let (jobs, todo) = channel::<Job>();
        let (device, queue) = (device.clone(), queue.clone());
        let thread = std::thread::Builder::new()
            .name("voxcast courier".into())
            .spawn(move || courier(&device, &queue, &todo))
            .map_err(|e| GpuError::Device(format!("cannot start voxcast's courier thread: {e}")))?;
        Ok(Self {
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    /// Queues a write of `data` into `buffer` at `offset`: done before any dispatch submitted
    /// after this call.
    pub(super) fn write(
        &self,
        buffer: &wgpu::Buffer,
        offset: u64,
        data: Vec<u8>,
    ) -> Result<(), GpuError> {
        self.send(Job::Write {
            buffer: buffer.clone(),
            offset,
            data,
        })
    }

    /// Queues a world's changes: done before any dispatch submitted after this call.
    pub(super) fn upload(&self, upload: Upload) -> Result<(), GpuError> {
        if upload.is_empty() {
            return Ok(());
        }
        self.send(Job::Upload(upload, None))
    }

    /// Submits a world's changes and waits until they are submitted: for a new world, whose
    /// errors are the call's. (Only the courier submits: wgpu's submission bookkeeping does
    /// not expect submits from two threads at once.)
    pub(super) fn upload_now(&self, upload: Upload) -> Result<(), GpuError> {
        let (reply, answer) = channel();
        self.send(Job::Upload(upload, Some(reply)))?;
        match answer.recv() {
            Ok(None) => Ok(()),
            Ok(Some(e)) => Err(GpuError::Device(e)),
            Err(_) => Err(GpuError::Device("voxcast's courier thread ended".into())),
        }
    }

    fn send(&self, job: Job) -> Result<(), GpuError> {
        self.jobs
            .as_ref()
            .and_then(|jobs| jobs.send(job).ok())
            .ok_or_else(|| GpuError::Device("voxcast's courier thread ended".into()))
    }
}

/// The courier's loop. When its channel closes it waits for the device to finish what was
/// submitted, then ends.
fn courier(device: &wgpu::Device, queue: &wgpu::Queue, todo: &Receiver<Job>) {
    let mut running: VecDeque<wgpu::SubmissionIndex> = VecDeque::new();
    loop {
        let job = if running.is_empty() {
            match todo.recv() {
                Ok(job) => Some(job),
                Err(_) => break,
            }
        } else {
            match todo.try_recv() {
                Ok(job) => Some(job),
                Err(TryRecvError::Empty) => None,
                Err(TryRecvError::Disconnected) => break,
            }
        };
        match job {
            Some(Job::Submit {
                commands,
                readback,
                output_bytes,
                timestamps,
                done,
                hits,
                stamps,
                reply,
            }) => {
                // Errors of the submission itself are this thread's to catch.
                let scope_oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
                let scope_val = device.push_error_scope(wgpu::ErrorFilter::Validation);
                let index = queue.submit([commands]);
                readback
                    .slice(..output_bytes)
                    .map_async(wgpu::MapMode::Read, move |r| {
                        done.store(true, Ordering::Release);
                        let _ = hits.send(r);
                    });
                if let Some(ts) = timestamps {
                    ts.slice(..).map_async(wgpu::MapMode::Read, move |r| {
                        let _ = stamps.send(r);
                    });
                }
                let errors = [
                    pollster::block_on(scope_val.pop()),
                    pollster::block_on(scope_oom.pop()),
                ];
                let answer = match errors.into_iter().flatten().next() {
                    Some(e) => Err(device_error(e)),
                    None => {
                        running.push_back(index.clone());
                        Ok(index)
                    }
                };
                let _ = reply.send(answer);
            }
            Some(Job::Remap { upload, mapped }) => {
                upload.slice(..).map_async(wgpu::MapMode::Write, move |r| {
                    let _ = mapped.send(r);
                });
                // An idle buffer: one poll maps it.
                let _ = device.poll(wgpu::PollType::Poll);
            }
            Some(Job::Write {
                buffer,
                offset,
                data,
            }) => queue.write_buffer(&buffer, offset, &data),
            Some(Job::Upload(upload, reply)) => {
                // A failure is recorded in the world's flag, which its batches check.
                let failed = upload.submit(device, queue);
                if let Some(reply) = reply {
                    let _ = reply.send(failed);
                }
            }
            None => {
                let poll = device.poll(wgpu::PollType::Wait {
                    submission_index: running.front().cloned(),
                    timeout: Some(COURIER_WAIT),
                });
                match poll {
                    Ok(_) => {
                        running.pop_front();
                    }
                    Err(wgpu::PollError::Timeout) => {}
                    // A lost device: the mappings fail, and the batches say so.
                    Err(_) => running.clear(),
                }
            }
        }
    }
    // Everything submitted has finished (or the device is lost) before the thread ends.
    let _ = device.poll(wgpu::PollType::wait_indefinitely());
}

/// What a batch's dispatches cast: the items each invocation takes.
#[derive(Debug)]
pub(super) enum Items {
    /// Rays prepared on the host: `staging.upload`, in upload order, and their count.
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

    /// Where the run of items that one dispatch may take from `at` on ends: a part of a
    /// batch of rays ([`HostStaging::part_end`]), or the end.
    fn run_end(&self, at: u64) -> u64 {
        match self {
            Items::Rays(staging, _) => staging.part_end(at),
            _ => self.count(),
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

    /// The input bytes of items `base..base + count`.
    fn input(&self, base: u64, count: u64) -> &[u8] {
        let range = base as usize..(base + count) as usize;
        match self {
            Items::Rays(staging, _) => bytemuck::cast_slice(&staging.upload[range]),
            Items::Camera(_) => &[],
            Items::Pairs { pairs, .. } => bytemuck::cast_slice(&pairs[range]),
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
    /// The world's changes, and how many it had when the batch was submitted.
    pub(super) sync: Arc<WorldSync>,
    pub(super) version: u64,
    pub(super) params: GpuParams,
    /// The material filter's words, or `None` where the shader does not read it (every
    /// non-air voxel stops: `FLAG_EVERY_NON_AIR`).
    pub(super) filter: Option<Vec<u32>>,
}

/// A dispatch submitted and not read yet.
#[derive(Debug)]
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
}

/// Where a batch hands each dispatch's results: the items, the index of the dispatch's first
/// item, the items' count and the output bytes (read from the mapped readback buffer).
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
    /// Bytes written to the device (rays, pairs, parameters, filter) and read back.
    pub(super) bytes_up: u64,
    pub(super) bytes_down: u64,
    /// Seconds spent waiting for the device (not host work).
    pub(super) waited: f64,
    /// A dispatch was submitted after its world changed: the batch has no answers.
    stale: bool,
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
        binding.sync.check()?;
        let mut flight = Self {
            shared,
            binding,
            items,
            per_dispatch: u64::from(per_dispatch.max(1)),
            next: 0,
            in_flight: VecDeque::new(),
            kernel_ns: 0.0,
            dispatches: 0,
            bytes_up: 0,
            bytes_down: 0,
            waited: 0.0,
            stale: false,
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
            let count = (self.items.run_end(self.next) - self.next).min(self.per_dispatch);
            let f = self.submit(self.next, count)?;
            self.next += count;
            self.in_flight.push_back(f);
        }
        Ok(())
    }

    /// Stages items `base..base + count` (with the parameters and, where needed, the filter)
    /// in a set's mapped upload buffer, records the dispatch and hands it to the courier.
    fn submit(&mut self, base: u64, count: u64) -> Result<InFlight, GpuError> {
        let shared = Arc::clone(&self.shared);
        let device = &shared.device;
        let (input_bytes, output_bytes) = self.items.bytes(count);
        let mut set = shared.take_set(input_bytes, output_bytes);
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
                .slice(..INPUT_AT + input_bytes)
                .get_mapped_range_mut()
                .map_err(device_error)?;
            view.slice(..size_of::<GpuParams>())
                .copy_from_slice(bytemuck::bytes_of(&params));
            if let Some(f) = filter {
                view.slice(FILTER_AT as usize..INPUT_AT as usize)
                    .copy_from_slice(bytemuck::cast_slice(f));
            }
            view.slice(INPUT_AT as usize..)
                .copy_from_slice(self.items.input(base, count));
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
        if !set.host_shared {
            encoder.copy_buffer_to_buffer(&set.output, 0, &set.readback, 0, output_bytes);
        }
        if let Some((queries, resolve, readback)) = &set.timer {
            encoder.resolve_query_set(queries, 0..2, resolve, 0);
            encoder.copy_buffer_to_buffer(resolve, 0, readback, 0, 16);
        }
        let commands = encoder.finish();
        let errors = [
            pollster::block_on(scope_val.pop()),
            pollster::block_on(scope_oom.pop()),
        ];
        let done = Arc::new(AtomicBool::new(false));
        let (hits, hits_mapped) = channel();
        let (stamps, timestamps_mapped) = channel();
        let (reply, submitted) = channel();
        let job = Job::Submit {
            commands,
            readback: set.readback.clone(),
            output_bytes,
            timestamps: set.timer.as_ref().map(|(_, _, readback)| readback.clone()),
            done: Arc::clone(&done),
            hits,
            stamps,
            reply,
        };
        let sent = match errors.into_iter().flatten().next() {
            Some(e) => Err(device_error(e)),
            None => shared.courier.send(job),
        };
        if let Err(e) = sent {
            self.remap(&mut set);
            shared.give_back(set);
            return Err(e);
        }
        // The world's changes are sent to the courier after their version is counted: a
        // version unchanged now means that any later change lands after this dispatch.
        if self.binding.sync.version() != self.binding.version {
            self.stale = true;
        }
        self.dispatches += 1;
        self.bytes_up += bytes_up;
        self.bytes_down += output_bytes;
        Ok(InFlight {
            timestamps_mapped: set.timer.is_some().then_some(timestamps_mapped),
            set,
            base,
            count,
            submitted,
            hits_mapped,
            done,
        })
    }

    fn bind_group(&self, set: &DispatchBuffers) -> wgpu::BindGroup {
        let [table, occupancy, bricks, ids] = &self.binding.world;
        fn entry(binding: u32, buffer: &wgpu::Buffer) -> wgpu::BindGroupEntry<'_> {
            wgpu::BindGroupEntry {
                binding,
                resource: buffer.as_entire_binding(),
            }
        }
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
                entries.push(input(6));
                entries.push(entry(7, &set.output));
            }
            Items::Pairs { agents, .. } => {
                entries.push(input(8));
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
    /// batch has been read. Without `wait` it never waits: it only looks at what the courier's
    /// polling has completed.
    pub(super) fn advance(&mut self, wait: bool, sink: &mut Sink<'_>) -> Result<bool, GpuError> {
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
            let f = self.in_flight.pop_front().expect("checked above");
            let t = std::time::Instant::now();
            // Waits (with `wait`) on the channel the courier's poll completes, not spinning.
            let mapped = f
                .hits_mapped
                .recv()
                .map_err(|_| GpuError::Device("a readback was abandoned".into()))
                .and_then(|r| r.map_err(device_error));
            self.waited += t.elapsed().as_secs_f64();
            let read = mapped.and_then(|()| self.read(&f, sink));
            self.release(f);
            self.kernel_ns += read?;
            self.submit_more()?;
        }
    }

    /// Hands a finished (and mapped) dispatch's results to `sink`; returns its kernel time in
    /// nanoseconds (0 without timestamps).
    fn read(&self, f: &InFlight, sink: &mut Sink<'_>) -> Result<f64, GpuError> {
        let (_, output_bytes) = self.items.bytes(f.count);
        {
            let view = f
                .set
                .readback
                .slice(..output_bytes)
                .get_mapped_range()
                .map_err(device_error)?;
            sink(&self.items, f.base, f.count, &view)?;
        }
        let mut kernel_ns = 0.0;
        if let (Some((_, _, ts)), Some(mapped)) = (&f.set.timer, &f.timestamps_mapped)
            && let Ok(Ok(())) = mapped.recv()
            && let Ok(view) = ts.slice(..).get_mapped_range()
        {
            let stamps: &[u64] = bytemuck::cast_slice(&view);
            kernel_ns = stamps[1].saturating_sub(stamps[0]) as f64 * self.shared.period_ns;
        }
        Ok(kernel_ns)
    }

    /// Has the courier map `set`'s upload buffer again for the next dispatch that takes it.
    fn remap(&self, set: &mut DispatchBuffers) {
        let (mapped, rx) = channel();
        if self
            .shared
            .courier
            .send(Job::Remap {
                upload: set.upload.clone(),
                mapped,
            })
            .is_ok()
        {
            set.upload_state = UploadState::Mapping(rx);
        }
    }

    /// Unmaps a dispatch's buffers (a mapping still pending is abandoned) and returns them to
    /// the pool, once the courier has submitted them (so that no later batch uses them before
    /// this dispatch is in the queue).
    fn release(&self, mut f: InFlight) {
        let _ = f.submitted.recv();
        f.set.readback.unmap();
        if let Some((_, _, ts)) = &f.set.timer {
            ts.unmap();
        }
        self.remap(&mut f.set);
        self.shared.give_back(f.set);
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
        // A batch dropped before it was read: its buffers go back to the pool (its results,
        // if they come, are discarded).
        while let Some(f) = self.in_flight.pop_front() {
            self.release(f);
        }
    }
}
