//! The answers of a batch: [`PendingBatch`], the handle a submit returns, which drives its
//! flights as it is polled or waited for; what turns each dispatch's read-back hits into
//! answers in the caller's order (decoding the wire format back into i128 outcomes); and the
//! start of a batch of rays, prepared and in flight.

use rayon::iter::{IndexedParallelIterator, ParallelIterator};
use rayon::slice::{ParallelSlice, ParallelSliceMut};
use std::sync::Arc;
use std::time::Instant;

use crate::gpu::decode::{HostAnswer, decode, undecodable};
use crate::gpu::error::GpuError;
use crate::gpu::flight::{BatchStats, Batches, Binding, Flight, Items};
use crate::gpu::layout::{Entry, FLAG_RAYS_AS_GIVEN, GpuHit, option_flags};
use crate::gpu::prepare::{HostRay, prepare_rays};
use crate::gpu::window::Window;
use crate::gpu::world::GpuWorld;
use crate::ray::{RaycastOptions, RaycastOutcome};

/// A batch submitted to the GPU whose answers (a `T`: the outcomes in the caller's order, or agent
/// visibility) have not been taken yet (see
/// [`GpuRaycaster::submit_raycast`](crate::gpu::GpuRaycaster::submit_raycast)). It owns everything
/// it needs, so it can be kept across frames, moved to another thread (it is `Send`) or dropped
/// (the GPU's work is then discarded).
///
/// Nothing waits unless asked to: voxcast's own thread polls the device while batches are in
/// flight; [`PendingBatch::is_ready`] and [`PendingBatch::try_take`] never block: they read
/// whatever dispatches that thread has seen finish and submit the batch's next ones;
/// [`PendingBatch::wait`] blocks the calling thread until the GPU is done, sleeping rather than
/// spinning. On a device given to
/// [`GpuRaycaster::from_device`](crate::gpu::GpuRaycaster::from_device) the application's own
/// polling of the device (once per frame, say) completes readbacks too.
///
/// A batch larger than one dispatch
/// ([`GpuRaycaster::set_max_dispatch_rays`](crate::gpu::GpuRaycaster::set_max_dispatch_rays)) has
/// at most two dispatches in flight: its later ones are submitted as the earlier ones are read, so
/// it advances only when polled (`is_ready`, `try_take`) or waited for.
#[derive(Debug)]
pub struct PendingBatch<T> {
    /// The batch's flights: one, or for agent pairs also one of host-built segments.
    flights: Vec<Flight>,
    batches: Arc<Batches>,
    collector: Box<dyn Collector<T>>,
    /// Items sent to the GPU.
    gpu_items: u64,
    started: Instant,
    /// Time spent in calls (preparing, staging, decoding), not waiting for the GPU.
    host_seconds: f64,
    error: Option<GpuError>,
    taken: bool,
}

/// What turns a batch's GPU results into its answers.
pub(super) trait Collector<T>: Send + std::fmt::Debug {
    /// The results of items `base..base + count` of flight `flight` (`bytes`: the dispatch's
    /// output, read back).
    fn collect(
        &mut self,
        flight: usize,
        items: &Items,
        base: u64,
        count: u64,
        bytes: &[u8],
    ) -> Result<(), GpuError>;

    /// The answers, once every flight has been read.
    fn finish(&mut self) -> T;
}

impl<T> PendingBatch<T> {
    /// A batch of `flights` whose results `collector` turns into answers.
    pub(super) fn new(
        batches: &Arc<Batches>,
        flights: Vec<Flight>,
        collector: Box<dyn Collector<T>>,
        gpu_items: u64,
        started: Instant,
    ) -> Self {
        let batch = Self {
            flights,
            batches: Arc::clone(batches),
            collector,
            gpu_items,
            started,
            host_seconds: started.elapsed().as_secs_f64(),
            error: None,
            taken: false,
        };
        if batch.flights.is_empty() {
            batch.finish_stats(BatchStats::default());
        }
        batch
    }

    /// Whether [`PendingBatch::try_take`] would answer now: the GPU has finished the batch
    /// (or failed), or its answers were taken already. Never blocks: reads the dispatches that
    /// have finished (so it may take as long as decoding them).
    pub fn is_ready(&mut self) -> bool {
        self.progress(false);
        self.taken || self.flights.is_empty() || self.error.is_some()
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
        if self.taken {
            Some(Err(self.after_take()))
        } else if self.is_ready() {
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
    pub fn wait(mut self) -> Result<T, GpuError> {
        if self.taken {
            return Err(self.after_take());
        }
        self.progress(true);
        self.take()
    }

    fn take(&mut self) -> Result<T, GpuError> {
        self.taken = true;
        self.flights.clear();
        match &self.error {
            Some(e) => Err(e.clone()),
            None => Ok(self.collector.finish()),
        }
    }

    /// What a batch says once taken: the device's error again where it failed (no answers
    /// were handed out), else that its answers were taken.
    fn after_take(&self) -> GpuError {
        self.error.clone().unwrap_or(GpuError::AlreadyTaken)
    }

    /// Reads what has finished (everything, with `wait`), submits what comes next and, when
    /// the batch is done, records its statistics.
    fn progress(&mut self, wait: bool) {
        if self.flights.is_empty() || self.error.is_some() {
            return;
        }
        let t = Instant::now();
        let waited_before: f64 = self.flights.iter().map(|f| f.waited).sum();
        let mut all_done = true;
        for (index, flight) in self.flights.iter_mut().enumerate() {
            let collector = &mut self.collector;
            let mut sink = |items: &Items, base: u64, count: u64, bytes: &[u8]| {
                collector.collect(index, items, base, count, bytes)
            };
            let result = if wait {
                flight.finish(&mut sink).map(|()| true)
            } else {
                flight.advance(false, &mut sink)
            };
            match result {
                Ok(done) => all_done &= done,
                Err(e) => {
                    self.error = Some(e);
                    break;
                }
            }
        }
        let waited: f64 = self.flights.iter().map(|f| f.waited).sum::<f64>() - waited_before;
        self.host_seconds += (t.elapsed().as_secs_f64() - waited).max(0.0);
        if all_done || self.error.is_some() {
            let mut done = BatchStats::default();
            let mut kernel_ns = 0.0;
            for mut flight in self.flights.drain(..) {
                kernel_ns += flight.kernel_ns;
                done.dispatches += flight.dispatches;
                done.bytes_up += flight.bytes_up;
                done.bytes_down += flight.bytes_down;
                if let Items::Rays(staging, _) = flight.take_items() {
                    self.batches.return_staging(staging);
                }
            }
            done.kernel_seconds = self.batches.device.timestamps.then_some(kernel_ns * 1e-9);
            self.finish_stats(done);
        }
    }

    /// Records the batch's statistics: those of its flights in `done`, with its own.
    fn finish_stats(&self, done: BatchStats) {
        self.batches.set_stats(BatchStats {
            gpu_rays: self.gpu_items,
            total_seconds: self.started.elapsed().as_secs_f64(),
            host_seconds: self.host_seconds,
            ..done
        });
    }
}

/// Rays decoded together: their hits (20 bytes each) gathered into a block that stays in the
/// cache while it is decoded.
const DECODE_BLOCK: usize = 1024;

/// The answers of uploaded rays: each result belongs to the ray at its place in the upload
/// order, relative to the voxel uploaded with it.
#[derive(Debug)]
pub(super) struct RayAnswers<T> {
    pub(super) out: Vec<T>,
    pub(super) window: Window,
}

impl<T: HostAnswer + std::fmt::Debug> Collector<Vec<T>> for RayAnswers<T> {
    fn collect(
        &mut self,
        _flight: usize,
        items: &Items,
        base: u64,
        count: u64,
        bytes: &[u8],
    ) -> Result<(), GpuError> {
        let Items::Rays(staging, _) = items else {
            return Err(GpuError::Internal("ray answers of another batch".into()));
        };
        let hits: &[GpuHit] = bytemuck::cast_slice(bytes);
        let window = self.window;
        if staging.caller_order {
            // Upload position i is ray i: decoded in order.
            let range = base as usize..(base + count) as usize;
            return self.out[range.clone()]
                .par_chunks_mut(DECODE_BLOCK)
                .zip(staging.rays[range].par_chunks(DECODE_BLOCK))
                .zip(hits[..count as usize].par_chunks(DECODE_BLOCK))
                .try_for_each(|((out, rays), hits)| {
                    for ((o, ray), h) in out.iter_mut().zip(rays).zip(hits) {
                        *o = T::decoded(&window, h, ray.voxel)
                            .ok_or_else(|| undecodable(h, ray.voxel))?;
                    }
                    Ok(())
                });
        }
        let (first, end) = (base as u32, (base + count) as u32);
        // The dispatch's rays are those of one part of the caller's order. Decoded in that
        // order, on all threads, a block of rays at a time: first the block's hits gathered
        // from their upload positions (a loop of independent loads, which the processor
        // overlaps where the reads miss the caches), then each decoded in place.
        let (part, _) = staging.part_of(base);
        self.out[part.clone()]
            .par_chunks_mut(DECODE_BLOCK)
            .zip(staging.position[part.clone()].par_chunks(DECODE_BLOCK))
            .zip(staging.rays[part].par_chunks(DECODE_BLOCK))
            .try_for_each(|((out, positions), rays)| {
                let mut block = [GpuHit::default(); DECODE_BLOCK];
                for (h, &j) in block.iter_mut().zip(positions) {
                    if (first..end).contains(&j) {
                        *h = hits[(j - first) as usize];
                    }
                }
                for (((o, &j), ray), h) in out.iter_mut().zip(positions).zip(rays).zip(&block) {
                    if (first..end).contains(&j) {
                        *o = T::decoded(&window, h, ray.voxel)
                            .ok_or_else(|| undecodable(h, ray.voxel))?;
                    }
                }
                Ok(())
            })
    }

    fn finish(&mut self) -> Vec<T> {
        std::mem::take(&mut self.out)
    }
}

/// A camera's pixels in order, relative to the eye's voxel.
#[derive(Debug)]
pub(super) struct CameraAnswers {
    pub(super) out: Vec<RaycastOutcome>,
    pub(super) eye: [i32; 3],
    pub(super) window: Window,
}

impl Collector<Vec<RaycastOutcome>> for CameraAnswers {
    fn collect(
        &mut self,
        _flight: usize,
        _items: &Items,
        _base: u64,
        count: u64,
        bytes: &[u8],
    ) -> Result<(), GpuError> {
        let hits: &[GpuHit] = bytemuck::cast_slice(bytes);
        for h in &hits[..count as usize] {
            self.out.push(decode(&self.window, h, self.eye)?);
        }
        Ok(())
    }

    fn finish(&mut self) -> Vec<RaycastOutcome> {
        std::mem::take(&mut self.out)
    }
}

/// The host's share of a batch of rays ([`prepare_rays`]) and the flight of those that reach
/// the window (`None` when none does: the answers are all in the collector already), on
/// `world`, dispatched `per_dispatch` at a time. Returns the rays' collector and how many
/// went to the GPU.
pub(super) fn ray_flight<R: HostRay, T: HostAnswer + Clone>(
    batches: &Arc<Batches>,
    world: &GpuWorld,
    per_dispatch: u32,
    rays: &[R],
    opts: &RaycastOptions,
    conservative: bool,
    mut out: Vec<T>,
) -> Result<(Option<Flight>, RayAnswers<T>, u64), GpuError> {
    // Every answer is written once, on the host or from the GPU: an `out` of the right
    // length (the last frame's) is not filled first.
    if out.len() != rays.len() {
        out.clear();
        out.try_reserve(rays.len())
            .map_err(|_| GpuError::OutputTooLarge(rays.len() as u64))?;
        out.resize(rays.len(), T::answered(RaycastOutcome::Miss, &world.window));
    }
    let (staging, long, uploaded) = prepare_rays(
        batches.take_staging(),
        &world.window,
        (per_dispatch, batches.device.rays_set_up_in_shader),
        rays,
        opts,
        conservative,
        &mut out,
    );
    let collector = RayAnswers {
        out,
        window: world.window,
    };
    if uploaded == 0 {
        batches.return_staging(staging);
        return Ok((None, collector, 0));
    }
    let as_given = if batches.device.rays_set_up_in_shader {
        FLAG_RAYS_AS_GIVEN
    } else {
        0
    };
    let flags = option_flags(opts, conservative) | world.walk_flags(long) | as_given;
    let binding = Binding::new(
        &batches.device,
        world,
        Entry::Rays,
        flags,
        world.params(),
        opts,
    )?;
    let flight = Flight::start(
        batches,
        binding,
        Items::Rays(staging, uploaded),
        per_dispatch,
    )?;
    Ok((Some(flight), collector, uploaded as u64))
}

/// Adds flight `f`, if any, to a batch's `flights` and returns its place there, by which
/// the collector tells it from the others; `usize::MAX` for none.
pub(super) fn push_flight(flights: &mut Vec<Flight>, f: Option<Flight>) -> usize {
    f.map_or(usize::MAX, |f| {
        flights.push(f);
        flights.len() - 1
    })
}
