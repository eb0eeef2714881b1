//! What every query kind's batch shares once it is staged: [`PendingBatch`], the handle a
//! submit returns, which drives its flights as it is polled, awaited or waited for; a batch's
//! jobs (a flight of one kind with the collector that reads its answers, or two such joined);
//! and [`Launch`], what a query kind is handed to start its batch.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use web_time::Instant;

use crate::gpu::error::GpuError;
use crate::gpu::flight::{BatchStats, Batches, Binding, Flight, Totals, Upload};
use crate::gpu::layout::{Entry, GpuParams};
use crate::gpu::queue::Wake;
use crate::gpu::world::GpuWorld;
use crate::ray::RaycastOptions;

/// What reads one kind's answers: each dispatch's output bytes as it is read back, then the
/// answers once every dispatch has been. Its items' type is the flight's, so a collector
/// cannot be handed another kind's items.
pub(super) trait Collect<U>: Send + std::fmt::Debug + 'static {
    /// What it makes of the results.
    type Output;

    /// The results of items `base..base + count` (`bytes`: the dispatch's output, read back).
    fn collect(&mut self, items: &U, base: u64, count: u64, bytes: &[u8]) -> Result<(), GpuError>;

    /// The answers, once every dispatch has been read.
    fn finish(self) -> Self::Output;
}

/// A batch's work: one or more flights and what collects their answers.
pub(super) trait Job: Send + std::fmt::Debug {
    /// The batch's answers.
    type Output;

    /// Reads what has finished (everything, with `wait`) and submits what comes next; adds
    /// what it cost to `totals`. `Ok(true)` once every flight has been read.
    fn advance(&mut self, wait: bool, totals: &mut Totals) -> Result<bool, GpuError>;

    /// The answers, once `advance` has said it is done.
    fn finish(self: Box<Self>) -> Self::Output;
}

/// The flight of one kind (none where the host answered every query) and its collector.
#[derive(Debug)]
pub(super) struct Leg<U: Upload, C> {
    flight: Option<Flight<U>>,
    collector: C,
}

impl<U: Upload, C: Collect<U>> Leg<U, C> {
    /// `flight`'s answers read by `collector`.
    pub(super) fn new(flight: Option<Flight<U>>, collector: C) -> Self {
        Self { flight, collector }
    }
}

impl<U: Upload, C: Collect<U>> Job for Leg<U, C> {
    type Output = C::Output;

    fn advance(&mut self, wait: bool, totals: &mut Totals) -> Result<bool, GpuError> {
        let Some(flight) = &mut self.flight else {
            return Ok(true);
        };
        let before = flight.waited();
        let collector = &mut self.collector;
        let read = flight.advance(wait, &mut |items, base, count, bytes| {
            collector.collect(items, base, count, bytes)
        });
        totals.waited += flight.waited() - before;
        if !read? {
            return Ok(false);
        }
        if let Some(flight) = self.flight.take() {
            let t = flight.close();
            totals.kernel_ns += t.kernel_ns;
            totals.dispatches += t.dispatches;
            totals.bytes_up += t.bytes_up;
            totals.bytes_down += t.bytes_down;
        }
        Ok(true)
    }

    fn finish(self: Box<Self>) -> C::Output {
        self.collector.finish()
    }
}

/// Two jobs of one batch (queries the shader takes, and those cast from rays built on the
/// host), their answers joined by `join`.
pub(super) struct Joined<A: Job, B: Job, T> {
    pub(super) a: A,
    pub(super) b: B,
    pub(super) join: fn(A::Output, B::Output) -> T,
}

impl<A: Job, B: Job, T> std::fmt::Debug for Joined<A, B, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Joined")
            .field("a", &self.a)
            .field("b", &self.b)
            .finish_non_exhaustive()
    }
}

impl<A: Job, B: Job, T> Job for Joined<A, B, T> {
    type Output = T;

    fn advance(&mut self, wait: bool, totals: &mut Totals) -> Result<bool, GpuError> {
        let a = self.a.advance(wait, totals)?;
        let b = self.b.advance(wait, totals)?;
        Ok(a && b)
    }

    fn finish(self: Box<Self>) -> T {
        let Self { a, b, join } = *self;
        join(Box::new(a).finish(), Box::new(b).finish())
    }
}

/// A job whose answers are made into the batch's by `then`, with what the kind kept
/// (`state`).
pub(super) struct Then<J: Job, S, T> {
    pub(super) job: J,
    pub(super) state: S,
    pub(super) then: fn(J::Output, S) -> T,
}

impl<J: Job, S, T> std::fmt::Debug for Then<J, S, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Then")
            .field("job", &self.job)
            .finish_non_exhaustive()
    }
}

impl<J: Job, S: Send, T> Job for Then<J, S, T> {
    type Output = T;

    fn advance(&mut self, wait: bool, totals: &mut Totals) -> Result<bool, GpuError> {
        self.job.advance(wait, totals)
    }

    fn finish(self: Box<Self>) -> T {
        let Self { job, state, then } = *self;
        then(Box::new(job).finish(), state)
    }
}

/// What a query kind is handed to start its batch: the raycaster's device and buffers, the
/// world it casts against, the dispatch size, and where the batch's waker waits. Only the
/// raycaster makes one ([`GpuRaycaster::submit`](crate::gpu::GpuRaycaster::submit)).
#[derive(Debug)]
pub struct Launch<'a> {
    pub(super) batches: &'a Arc<Batches>,
    pub(super) world: &'a GpuWorld,
    /// Most items a dispatch takes (the device's limits applied).
    pub(super) per_dispatch: u32,
    pub(super) wake: Arc<Wake>,
    pub(super) started: Instant,
}

impl<'a> Launch<'a> {
    /// A launch of another batch on the same world (a band of a blocking call), started now.
    #[cfg(not(target_arch = "wasm32"))]
    pub(super) fn again(&self) -> Launch<'a> {
        Launch {
            batches: self.batches,
            world: self.world,
            per_dispatch: self.per_dispatch,
            wake: Arc::default(),
            started: Instant::now(),
        }
    }

    /// What a batch of `entry` on this launch's world binds (see [`Binding::new`]).
    pub(super) fn binding(
        &self,
        entry: Entry,
        flags: u32,
        params: GpuParams,
        opts: &RaycastOptions,
    ) -> Result<Binding, GpuError> {
        Binding::new(&self.batches.device, self.world, entry, flags, params, opts)
    }

    /// Starts `items` in flight with `binding`, dispatched `per_dispatch` at a time.
    pub(super) fn flight<U: Upload>(
        &self,
        binding: Binding,
        items: U,
    ) -> Result<Flight<U>, GpuError> {
        self.flight_of(binding, items, self.per_dispatch)
    }

    /// [`Launch::flight`] with `per_dispatch` items a dispatch.
    pub(super) fn flight_of<U: Upload>(
        &self,
        binding: Binding,
        items: U,
        per_dispatch: u32,
    ) -> Result<Flight<U>, GpuError> {
        Flight::start(self.batches, binding, items, per_dispatch, &self.wake)
    }

    /// The batch of `job`, `gpu_items` of its queries sent to the GPU.
    pub(super) fn pending<J: Job + 'static>(
        self,
        job: J,
        gpu_items: u64,
    ) -> PendingBatch<J::Output> {
        PendingBatch {
            job: Some(Box::new(job)),
            wake: self.wake,
            timestamps: self.batches.device.timestamps,
            gpu_items,
            host_seconds: self.started.elapsed().as_secs_f64(),
            started: self.started,
            totals: Totals::default(),
            stats: None,
            ready: None,
            error: None,
            taken: false,
        }
    }
}

/// A batch submitted to the GPU whose answers (a `T`: the outcomes in the caller's order, or
/// agent visibility) have not been taken yet (see
/// [`GpuRaycaster::submit`](crate::gpu::GpuRaycaster::submit)). It owns everything it needs,
/// so it can be kept across frames, moved to another thread (it is `Send`) or dropped (the
/// GPU's work is then discarded).
///
/// Three ways to take the answers, none of which blocks unless its job is to wait:
/// - `.await` it: it is a [`Future`], on any executor. It is woken when a dispatch's answers
///   are mapped (on native devices voxcast's own thread polls the device while batches are in
///   flight).
/// - [`PendingBatch::try_take`] (and [`PendingBatch::is_ready`]) never block: they read what
///   has finished and submit the batch's next dispatches; for a frame loop, submit this frame
///   and take next frame.
#[cfg_attr(
    not(target_arch = "wasm32"),
    doc = "- [`PendingBatch::wait`] blocks the calling thread until the GPU is done, sleeping rather than spinning."
)]
///
/// On a device given to [`GpuRaycaster::from_device`](crate::gpu::GpuRaycaster::from_device)
/// the application's own polling of the device (once per frame, say) completes readbacks too.
/// A batch larger than one dispatch
/// ([`GpuRaycaster::set_max_dispatch_rays`](crate::gpu::GpuRaycaster::set_max_dispatch_rays))
/// has at most two dispatches in flight: its later ones are submitted as the earlier ones are
/// read, so it advances only when polled, awaited or waited for.
///
/// Its cost is its own ([`PendingBatch::stats`]), whatever other batches run beside it.
#[derive(Debug)]
pub struct PendingBatch<T> {
    job: Option<Box<dyn Job<Output = T>>>,
    wake: Arc<Wake>,
    /// Whether kernel times are measured.
    timestamps: bool,
    /// Items sent to the GPU.
    gpu_items: u64,
    started: Instant,
    /// Time spent in calls (preparing, staging, decoding), not waiting for the GPU.
    host_seconds: f64,
    totals: Totals,
    stats: Option<BatchStats>,
    /// The answers, once every flight is read and until they are taken.
    ready: Option<T>,
    error: Option<GpuError>,
    taken: bool,
}

// Nothing in a batch is pinned: its future polls the same state `try_take` reads.
impl<T> Unpin for PendingBatch<T> {}

impl<T> PendingBatch<T> {
    /// Whether [`PendingBatch::try_take`] would answer now: the GPU has finished the batch
    /// (or failed), or its answers were taken already. Never blocks: reads the dispatches that
    /// have finished (so it may take as long as decoding them).
    pub fn is_ready(&mut self) -> bool {
        self.progress(false);
        self.job.is_none()
    }

    /// The answers, if the GPU has finished the batch; `None` only while it has not. Never
    /// blocks: reads what has finished and returns. The answers are handed out once.
    ///
    /// # Errors
    /// `Some(Err(_))` with a [`GpuError`] when the device failed (validation, out of memory,
    /// lost) or a result could not be decoded (again on every later call), and
    /// [`GpuError::AlreadyTaken`] on every call after the one that returned the answers (so a
    /// polling loop ends either way).
    pub fn try_take(&mut self) -> Option<Result<T, GpuError>> {
        if self.is_ready() {
            Some(self.take())
        } else {
            None
        }
    }

    /// The answers, once the GPU has finished: blocks the thread until then (waiting on the
    /// device, without spinning).
    ///
    /// # Errors
    /// As [`PendingBatch::try_take`]: the device's errors, and [`GpuError::AlreadyTaken`]
    /// when `try_take` returned the answers already.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn wait(self) -> Result<T, GpuError> {
        self.wait_with_stats().map(|(answers, _)| answers)
    }

    /// [`PendingBatch::wait`], with what the batch cost.
    ///
    /// # Errors
    /// As [`PendingBatch::wait`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn wait_with_stats(mut self) -> Result<(T, BatchStats), GpuError> {
        self.progress(true);
        let answers = self.take()?;
        Ok((answers, self.stats.unwrap_or_default()))
    }

    /// What this batch cost, once the GPU has finished it (`None` before; after a failure,
    /// what it had cost until then). An awaited batch is read after awaiting it through `&mut`:
    /// `let answers = (&mut pending).await?; let cost = pending.stats();`.
    #[cfg_attr(
        not(target_arch = "wasm32"),
        doc = "A blocking call (`GpuRaycaster::cast_into`) returns its batch's cost itself."
    )]
    #[must_use]
    pub fn stats(&self) -> Option<BatchStats> {
        self.stats
    }

    fn take(&mut self) -> Result<T, GpuError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        if self.taken {
            return Err(GpuError::AlreadyTaken);
        }
        self.taken = true;
        self.ready.take().ok_or(GpuError::AlreadyTaken)
    }

    /// Reads what has finished (everything, with `wait`), submits what comes next and, when
    /// the batch is done, records its statistics and makes its answers.
    fn progress(&mut self, wait: bool) {
        let Some(job) = &mut self.job else {
            return;
        };
        let t = Instant::now();
        let waited_before = self.totals.waited;
        let result = job.advance(wait, &mut self.totals);
        let waited = self.totals.waited - waited_before;
        let done = match result {
            Ok(done) => done,
            Err(e) => {
                self.error = Some(e);
                true
            }
        };
        if done && let Some(job) = self.job.take() {
            if self.error.is_none() {
                self.ready = Some(job.finish());
            }
            self.host_seconds += (t.elapsed().as_secs_f64() - waited).max(0.0);
            let t = &self.totals;
            self.stats = Some(BatchStats {
                gpu_rays: self.gpu_items,
                dispatches: t.dispatches,
                kernel_seconds: self.timestamps.then_some(t.kernel_ns * 1e-9),
                total_seconds: self.started.elapsed().as_secs_f64(),
                host_seconds: self.host_seconds,
                bytes_up: t.bytes_up,
                bytes_down: t.bytes_down,
            });
        } else {
            self.host_seconds += (t.elapsed().as_secs_f64() - waited).max(0.0);
        }
    }
}

impl<T> Future for PendingBatch<T> {
    type Output = Result<T, GpuError>;

    /// Reads what has finished without blocking; registers the waker first, so that a
    /// dispatch mapped while this poll reads is not missed.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let batch = self.get_mut();
        batch.wake.set(cx.waker());
        match batch.try_take() {
            Some(answers) => Poll::Ready(answers),
            None => Poll::Pending,
        }
    }
}
