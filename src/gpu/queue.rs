//! The queue: one thread, the courier, submits every command buffer voxcast records (world
//! writes and dispatches, in the order they were sent), polls the device while dispatches run
//! (which completes their readback) and maps upload buffers again. Worlds and batches both
//! send it work; it knows neither.
//!
//! A driver may block a queue submit until the work submitted before it has finished (Mesa's
//! lavapipe does), and wgpu holds the device while it submits, so that any other call on the
//! device waits too. Batches must return at once and be taken without waiting, so the
//! caller's thread never submits, polls or writes through the queue: it only fills mapped
//! buffers, records commands and reads flags and channels. The courier does the rest.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::sync::{Arc, Mutex};

use crate::gpu::error::{GpuError, device_error};

/// The thread that submits dispatches and world writes, polls the device while dispatches run
/// (which completes their readback) and maps upload buffers again. It
/// sleeps in the driver while the GPU is busy and on its channel while it is idle. Dropping
/// the courier (with the last handle of its raycaster, worlds and batches) closes its channel
/// and joins the thread once the device has finished what it was given (or after
/// [`FINAL_WAIT`] for a device that never does): nothing of voxcast
/// uses the device after that, so a program can return from `main` at once (the driver may be
/// unloaded by the exit handlers).
///
/// Where the host drives the device ([`Driver::Host`](crate::gpu::Driver::Host)) there is no
/// thread: each job runs on the thread that sends it, one at a time, and the device is polled
/// by the host (its event loop, or a frame's `wgpu::Device::poll`), by [`Courier::drive`] when
/// a batch is polled, or, where a call's job is to wait, until the work is done.
#[derive(Debug)]
pub(super) struct Courier {
    jobs: Option<Sender<Job>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The device and queue, and the lock that keeps submissions one at a time, where the
    /// host drives the device.
    host: Option<(wgpu::Device, wgpu::Queue, Mutex<()>)>,
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
        // As the thread does before it ends: what was submitted finishes first.
        self.settle();
    }
}

enum Job {
    /// One dispatch.
    Submit(Dispatch),
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
    World(WorldWrite, Option<Sender<Option<String>>>),
}

/// Where a batch's waker waits: the courier wakes it when a dispatch's answers are mapped,
/// so that an executor awaiting the batch polls it again.
#[derive(Debug, Default)]
pub(super) struct Wake(Mutex<Option<std::task::Waker>>);

impl Wake {
    /// Remembers `waker` (the latest poll's).
    pub(super) fn set(&self, waker: &std::task::Waker) {
        if let Ok(mut w) = self.0.lock() {
            match &mut *w {
                Some(old) if old.will_wake(waker) => {}
                slot => *slot = Some(waker.clone()),
            }
        }
    }

    /// Wakes the waker, if any.
    pub(super) fn wake(&self) {
        if let Some(w) = self.0.lock().ok().and_then(|mut w| w.take()) {
            w.wake();
        }
    }
}

/// One dispatch for the courier to submit: its commands, the buffers to map for reading once
/// they are submitted, and where to say so.
#[derive(Debug)]
pub(super) struct Dispatch {
    pub(super) commands: wgpu::CommandBuffer,
    /// Mapped up to `output_bytes`; `done` is set and the outcome sent on `hits` when mapped.
    pub(super) readback: wgpu::Buffer,
    pub(super) output_bytes: u64,
    pub(super) done: Arc<AtomicBool>,
    /// Woken once `done` is set.
    pub(super) wake: Arc<Wake>,
    pub(super) hits: Sender<Result<(), wgpu::BufferAsyncError>>,
    /// Mapped whole, its outcome sent on `stamps`.
    pub(super) timestamps: Option<wgpu::Buffer>,
    pub(super) stamps: Sender<Result<(), wgpu::BufferAsyncError>>,
    /// The submission's index, or why it failed.
    pub(super) reply: Sender<Result<wgpu::SubmissionIndex, GpuError>>,
}

/// Changes to a world's buffers, sent to the courier in one job so that they land between
/// the dispatches submitted before and after: buffers copied into their larger successors,
/// then ranges of one staging buffer written into place. Where it fails (the device ran out
/// of memory or was lost), `failed` says so, and batches on the world report it.
#[derive(Debug)]
pub(super) struct WorldWrite {
    /// Copies on the device: source, destination, their offsets and the size.
    grow: Vec<(wgpu::Buffer, wgpu::Buffer, u64, u64, u64)>,
    data: Vec<u8>,
    /// Destination, its offset, and the range of `data` written there.
    writes: Vec<(wgpu::Buffer, u64, std::ops::Range<usize>)>,
    failed: Arc<Mutex<Option<String>>>,
}

impl WorldWrite {
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
    /// [`WorldWrite::grow`], before every write).
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
            crate::gpu::error::error_now(scope_val),
            crate::gpu::error::error_now(scope_oom),
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
    /// The courier of `device` and `queue` where the host drives the device: no thread.
    pub(super) fn on_host(device: &wgpu::Device, queue: &wgpu::Queue) -> Self {
        Self {
            jobs: None,
            thread: None,
            host: Some((device.clone(), queue.clone(), Mutex::new(()))),
        }
    }

    /// Polls the device where the host drives it (nothing where voxcast's thread does):
    /// without waiting, or with `wait` for at most [`COURIER_WAIT`], so that a caller waiting
    /// for a mapping can poll again until it is done.
    pub(super) fn drive(&self, wait: bool) {
        if let Some((device, ..)) = &self.host {
            let _ = device.poll(if wait {
                wgpu::PollType::Wait {
                    submission_index: None,
                    timeout: Some(COURIER_WAIT),
                }
            } else {
                wgpu::PollType::Poll
            });
        }
    }

    /// Whether the host drives the device ([`Courier::on_host`]).
    pub(super) fn drives_on_host(&self) -> bool {
        self.host.is_some()
    }

    /// Where the host drives the device, waits (at most [`FINAL_WAIT`]) until it has done
    /// everything submitted, so that every mapping asked for has settled.
    pub(super) fn settle(&self) {
        if let Some((device, ..)) = &self.host {
            let _ = device.poll(wgpu::PollType::Wait {
                submission_index: None,
                timeout: Some(FINAL_WAIT),
            });
        }
    }

    /// Starts the thread for `device` and `queue`.
    pub(super) fn start(device: &wgpu::Device, queue: &wgpu::Queue) -> Result<Self, GpuError> {
        if cfg!(target_arch = "wasm32") {
            return Err(GpuError::Device(
                "the web has no threads for voxcast's courier: drive the device from the page \
                 (gpu::Driver::Host, the default there)"
                    .into(),
            ));
        }
        let (jobs, todo) = channel::<Job>();
        let (device, queue) = (device.clone(), queue.clone());
        let thread = std::thread::Builder::new()
            .name("voxcast courier".into())
            .spawn(move || courier(&device, &queue, &todo))
            .map_err(|e| GpuError::Device(format!("cannot start voxcast's courier thread: {e}")))?;
        Ok(Self {
            jobs: Some(jobs),
            thread: Some(thread),
            host: None,
        })
    }

    /// Queues a dispatch: submitted after everything sent before it.
    pub(super) fn submit(&self, dispatch: Dispatch) -> Result<(), GpuError> {
        self.send(Job::Submit(dispatch))
    }

    /// Queues mapping `upload` for writing again; the outcome comes on the receiver. `None`
    /// when the courier has ended.
    pub(super) fn remap(
        &self,
        upload: &wgpu::Buffer,
    ) -> Option<Receiver<Result<(), wgpu::BufferAsyncError>>> {
        let (mapped, rx) = channel();
        self.send(Job::Remap {
            upload: upload.clone(),
            mapped,
        })
        .ok()
        .map(|()| rx)
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
    pub(super) fn upload(&self, upload: WorldWrite) -> Result<(), GpuError> {
        if upload.is_empty() {
            return Ok(());
        }
        self.send(Job::World(upload, None))
    }

    /// Submits a world's changes and waits until they are submitted: for a new world, whose
    /// errors are the call's. (Only the courier submits: wgpu's submission bookkeeping does
    /// not expect submits from two threads at once.)
    pub(super) fn upload_now(&self, upload: WorldWrite) -> Result<(), GpuError> {
        // Where the host drives the device, `send` runs the job at once and the reply is in.
        let (reply, answer) = channel();
        self.send(Job::World(upload, Some(reply)))?;
        match answer.recv() {
            Ok(None) => Ok(()),
            Ok(Some(e)) => Err(GpuError::Device(e)),
            Err(_) => Err(GpuError::Device("voxcast's courier thread ended".into())),
        }
    }

    fn send(&self, job: Job) -> Result<(), GpuError> {
        if let Some((device, queue, lock)) = &self.host {
            let _one_at_a_time = lock
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            run(device, queue, job);
            return Ok(());
        }
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
            Some(job) => {
                if let Some(index) = run(device, queue, job) {
                    running.push_back(index);
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
    // Everything submitted has finished (or the device is lost) before the thread ends; a
    // device that never finishes is given up after a while rather than hang its user's drop.
    let _ = device.poll(wgpu::PollType::Wait {
        submission_index: None,
        timeout: Some(FINAL_WAIT),
    });
}

/// Runs one job on this thread: a dispatch submitted (its readback mapped once it is done;
/// returns its submission index), an upload buffer mapped again, a write, a world's changes.
fn run(device: &wgpu::Device, queue: &wgpu::Queue, job: Job) -> Option<wgpu::SubmissionIndex> {
    match job {
        Job::Submit(Dispatch {
            commands,
            readback,
            output_bytes,
            done,
            wake,
            hits,
            timestamps,
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
                    wake.wake();
                });
            if let Some(ts) = timestamps {
                ts.slice(..).map_async(wgpu::MapMode::Read, move |r| {
                    let _ = stamps.send(r);
                });
            }
            let errors = [
                crate::gpu::error::error_now(scope_val),
                crate::gpu::error::error_now(scope_oom),
            ];
            let answer = match errors.into_iter().flatten().next() {
                Some(e) => Err(device_error(e)),
                None => Ok(index.clone()),
            };
            let submitted = answer.is_ok();
            let _ = reply.send(answer);
            return submitted.then_some(index);
        }
        Job::Remap { upload, mapped } => {
            upload.slice(..).map_async(wgpu::MapMode::Write, move |r| {
                let _ = mapped.send(r);
            });
            // An idle buffer: one poll maps it.
            let _ = device.poll(wgpu::PollType::Poll);
        }
        Job::Write {
            buffer,
            offset,
            data,
        } => queue.write_buffer(&buffer, offset, &data),
        Job::World(upload, reply) => {
            // A failure is recorded in the world's flag, which its batches check.
            let failed = upload.submit(device, queue);
            if let Some(reply) = reply {
                let _ = reply.send(failed);
            }
        }
    }
    None
}

/// How long the courier waits, when its raycaster is dropped, for the device to finish the work
/// it was given.
const FINAL_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// What a world shares with the batches cast against it: how many times it has changed
/// (a batch whose later dispatches would see a change fails instead of mixing two worlds)
/// and why an upload failed, if one did.
#[derive(Debug, Default)]
pub(super) struct WorldSync {
    version: AtomicU64,
    pub(super) failed: Arc<Mutex<Option<String>>>,
}

impl WorldSync {
    /// The number of changes so far.
    pub(super) fn version(&self) -> u64 {
        self.version.load(Ordering::SeqCst)
    }

    /// Counts a change, before it is sent to the courier: a batch that reads the version
    /// unchanged after submitting a dispatch knows that the change lands after it.
    pub(super) fn count_change(&self) {
        self.version.fetch_add(1, Ordering::SeqCst);
    }

    /// The error of a failed upload, if one failed.
    pub(super) fn check(&self) -> Result<(), GpuError> {
        match self.failed.lock().map(|f| f.clone()) {
            Ok(None) => Ok(()),
            Ok(Some(msg)) => Err(GpuError::Device(msg)),
            Err(_) => Err(GpuError::Internal("upload-failure flag poisoned".into())),
        }
    }
}
