//! Batches that return at once: the `submit_*` calls of [`GpuRaycaster`] and the
//! [`PendingBatch`] handle they return. The blocking calls are a submit and a wait.

use rayon::iter::{IndexedParallelIterator, ParallelIterator};
use rayon::slice::{ParallelSlice, ParallelSliceMut};
use std::sync::Arc;
use std::time::Instant;

use crate::camera::{Camera, CameraError};
use crate::cpu_ref::LONG_RAY;
use crate::gpu::device::{Entry, option_flags};
use crate::gpu::host::shader_camera;
use crate::gpu::window::Window;
use crate::gpu::{
    BatchStats, GpuError, GpuHit, GpuParams, GpuRay, GpuRaycaster, GpuWorld, WORKGROUP_SIZE,
};
use crate::ray::{LineOfSight, LineOfSightOptions, RaycastOptions, RaycastOutcome, VoxelRay};

use super::dispatch::{Binding, Flight, Items, Shared};

/// A batch submitted to the GPU whose answers (a `T`: the outcomes in the caller's order, or
/// agent visibility) have not been taken yet (see [`GpuRaycaster::submit_raycast`]). It owns
/// everything it needs, so it can be kept across frames, moved to another thread (it is
/// `Send`) or dropped (the GPU's work is then discarded).
///
/// Nothing waits unless asked to: [`PendingBatch::is_ready`] and [`PendingBatch::try_take`]
/// poll the device without blocking (`wgpu::PollType::Poll`), read whatever dispatches have
/// finished and submit the batch's next ones; [`PendingBatch::wait`] blocks the thread until
/// the GPU is done, sleeping in the driver rather than spinning. On a device created by
/// [`GpuRaycaster::from_device`] the application's own polling of the device (once per frame,
/// say) also completes the readback, and these calls then find the answers ready.
///
/// A batch larger than one dispatch ([`GpuRaycaster::set_max_dispatch_rays`]) has at most two
/// dispatches in flight: its later ones are submitted as the earlier ones are read, so it
/// advances only when polled (`is_ready`, `try_take`) or waited for.
#[derive(Debug)]
pub struct PendingBatch<T> {
    /// The batch's flights: one, or for agent pairs also one of host-built segments.
    flights: Vec<Flight>,
    shared: Arc<Shared>,
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
        shared: &Arc<Shared>,
        flights: Vec<Flight>,
        collector: Box<dyn Collector<T>>,
        gpu_items: u64,
        started: Instant,
    ) -> Self {
        let batch = Self {
            flights,
            shared: Arc::clone(shared),
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

    /// Whether the answers are ready to take. Polls the device without blocking and reads the
    /// dispatches that have finished (so it may take as long as decoding them).
    pub fn is_ready(&mut self) -> bool {
        self.progress(false);
        !self.taken && (self.flights.is_empty() || self.error.is_some())
    }

    /// The answers, if the GPU has finished the batch; `None` while it has not (or after the
    /// answers were taken). Never blocks: polls the device, reads what has finished and
    /// returns.
    ///
    /// # Errors
    /// `Some(Err(_))` with a [`GpuError`] when the device failed (validation, out of memory,
    /// lost) or a result could not be decoded.
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
    /// As [`PendingBatch::try_take`]; also when the answers were taken already.
    pub fn wait(mut self) -> Result<T, GpuError> {
        if self.taken {
            return Err(GpuError::Internal("the answers were taken already".into()));
        }
        self.progress(true);
        self.take()
    }

    fn take(&mut self) -> Result<T, GpuError> {
        self.taken = true;
        self.flights.clear();
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(self.collector.finish()),
        }
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
                    self.shared.return_staging(staging);
                }
            }
            done.kernel_seconds = self.shared.timestamps.then_some(kernel_ns * 1e-9);
            self.finish_stats(done);
        }
    }

    /// Records the batch's statistics: those of its flights in `done`, with its own.
    fn finish_stats(&self, done: BatchStats) {
        if let Ok(mut s) = self.shared.stats.lock() {
            *s = BatchStats {
                gpu_rays: self.gpu_items,
                total_seconds: self.started.elapsed().as_secs_f64(),
                host_seconds: self.host_seconds,
                ..done
            };
        }
    }
}

/// Rays decoded together: their hits (20 bytes each) gathered into a block that stays in the
/// cache while it is decoded.
const DECODE_BLOCK: usize = 1024;

/// The answers of rays prepared on the host: each result belongs to the ray at its place in
/// the upload order, relative to that ray's start voxel.
#[derive(Debug)]
pub(super) struct RayAnswers<T> {
    pub(super) out: Vec<T>,
    pub(super) convert: fn(RaycastOutcome) -> T,
    pub(super) window: Window,
}

impl<T: Send + std::fmt::Debug> Collector<Vec<T>> for RayAnswers<T> {
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
        let (first, end) = (base as u32, (base + count) as u32);
        let (window, convert) = (self.window, self.convert);
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
                        *o = convert(window.decode(h, ray.voxel)?);
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
struct CameraAnswers {
    out: Vec<RaycastOutcome>,
    eye: [i32; 3],
    window: Window,
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
            self.out.push(self.window.decode(h, self.eye)?);
        }
        Ok(())
    }

    fn finish(&mut self) -> Vec<RaycastOutcome> {
        std::mem::take(&mut self.out)
    }
}

impl GpuRaycaster {
    /// Submits `rays` against `world` and returns at once: the answers, exactly as
    /// [`GpuRaycaster::raycast`] gives them, come from the [`PendingBatch`] (without blocking
    /// with [`PendingBatch::try_take`], or [`PendingBatch::wait`]). The host's share
    /// (validation, the i128 split, rays that cannot reach the window) is done before this
    /// returns. Several batches may be in flight at once. The batch keeps about 104 bytes
    /// per ray of host memory until its answers are taken.
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast`].
    pub fn submit_raycast(
        &self,
        world: &GpuWorld,
        rays: &[VoxelRay],
        opts: &RaycastOptions,
    ) -> Result<PendingBatch<Vec<RaycastOutcome>>, GpuError> {
        self.submit_rays(world, rays, opts, false, Vec::new(), |o| o)
    }

    /// [`GpuRaycaster::submit_raycast`] filling `out` (cleared first): its allocation is
    /// reused, so a frame loop that hands back the last batch's answers allocates nothing.
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast`].
    pub fn submit_raycast_into(
        &self,
        world: &GpuWorld,
        rays: &[VoxelRay],
        opts: &RaycastOptions,
        out: Vec<RaycastOutcome>,
    ) -> Result<PendingBatch<Vec<RaycastOutcome>>, GpuError> {
        self.submit_rays(world, rays, opts, false, out, |o| o)
    }

    /// Line of sight for every segment (see [`crate::line_of_sight`]), submitted: returns at
    /// once, as [`GpuRaycaster::submit_raycast`].
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast`].
    pub fn submit_line_of_sight(
        &self,
        world: &GpuWorld,
        segments: &[VoxelRay],
        opts: &LineOfSightOptions,
    ) -> Result<PendingBatch<Vec<LineOfSight>>, GpuError> {
        self.submit_line_of_sight_into(world, segments, opts, Vec::new())
    }

    /// [`GpuRaycaster::submit_line_of_sight`] filling `out` (cleared first), its allocation
    /// reused.
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast`].
    pub fn submit_line_of_sight_into(
        &self,
        world: &GpuWorld,
        segments: &[VoxelRay],
        opts: &LineOfSightOptions,
        out: Vec<LineOfSight>,
    ) -> Result<PendingBatch<Vec<LineOfSight>>, GpuError> {
        self.submit_rays(
            world,
            segments,
            &opts.raycast,
            opts.conservative,
            out,
            LineOfSight::from,
        )
    }

    /// A camera's image, submitted: returns at once; the pixels, row by row from the top, are
    /// [`GpuRaycaster::raycast_camera`]'s. A camera the shader cannot reproduce exactly (see
    /// `raycast_camera`) is cast from host-built rays, also submitted.
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast_camera`].
    pub fn submit_camera(
        &self,
        world: &GpuWorld,
        camera: &Camera,
        opts: &RaycastOptions,
    ) -> Result<PendingBatch<Vec<RaycastOutcome>>, GpuError> {
        self.submit_camera_into(world, camera, opts, Vec::new())
    }

    /// [`GpuRaycaster::submit_camera`] filling `out` (cleared first), its allocation reused.
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast_camera`].
    pub fn submit_camera_into(
        &self,
        world: &GpuWorld,
        camera: &Camera,
        opts: &RaycastOptions,
        mut out: Vec<RaycastOutcome>,
    ) -> Result<PendingBatch<Vec<RaycastOutcome>>, GpuError> {
        if camera.width == 0 || camera.height == 0 {
            return Err(GpuError::Camera(CameraError::EmptyImage));
        }
        let started = self.begin_call(world)?;
        let w = &world.window;
        let pixels = u64::from(camera.width) * u64::from(camera.height);
        if pixels > u64::from(u32::MAX) {
            return Err(GpuError::BatchTooLarge(
                usize::try_from(pixels).unwrap_or(usize::MAX),
            ));
        }
        out.clear();
        out.try_reserve(pixels as usize)
            .map_err(|_| GpuError::OutputTooLarge(pixels))?;
        let shader = shader_camera(camera).filter(|c| {
            (0..3).all(|a| {
                let eye = c.position.axis(a);
                let lo = if c.sub_offset[a] == 0.0 {
                    eye.checked_sub(1)
                } else {
                    Some(eye)
                };
                lo.is_some_and(|lo| w.bounds.min.axis(a) <= lo) && eye <= w.bounds.max.axis(a)
            })
        });
        let Some(camera) = shader else {
            // From host-built rays: a pixel whose ray is invalid gets its error in its place.
            let rays = camera_rays(camera)?;
            let mut pending = self.submit_rays(world, &rays, opts, false, out, |o| o)?;
            pending.started = started;
            return Ok(pending);
        };
        let eye = w
            .relative(camera.position)
            .ok_or_else(|| GpuError::Internal("camera outside the window".into()))?;
        let mut params = self.params_of(world);
        params.cam_position = eye;
        params.cam_width = camera.width;
        params.cam_height = camera.height;
        params.cam_sub = camera.sub_offset.to_array();
        params.cam_forward = camera.forward.to_array();
        params.cam_right = camera.right.to_array();
        params.cam_up = camera.up.to_array();
        params.cam_scale_x = camera.scale_x;
        params.cam_scale_y = camera.scale_y;
        params.cam_max_distance = camera.max_distance;
        [params.cam_inv_w, params.cam_inv_h] = camera.pixel_steps();
        let flags = option_flags(opts, false) | world.walk_flags(camera.max_distance >= LONG_RAY);
        let binding = self.binding(world, Entry::Camera, flags, params, opts)?;
        let flight = Flight::start(
            Arc::clone(&self.shared),
            binding,
            Items::Camera(pixels as u32),
            self.dispatch_capacity(),
        )?;
        let collector = CameraAnswers {
            out,
            eye,
            window: *w,
        };
        Ok(PendingBatch::new(
            &self.shared,
            vec![flight],
            Box::new(collector),
            pixels,
            started,
        ))
    }

    /// Prepares `rays` on the host and submits those that reach the window.
    fn submit_rays<T: Clone + Send + Sync + std::fmt::Debug + 'static>(
        &self,
        world: &GpuWorld,
        rays: &[VoxelRay],
        opts: &RaycastOptions,
        conservative: bool,
        out: Vec<T>,
        convert: fn(RaycastOutcome) -> T,
    ) -> Result<PendingBatch<Vec<T>>, GpuError> {
        let started = self.begin_call(world)?;
        let (flight, collector, uploaded) =
            self.ray_flight(world, rays, opts, conservative, out, convert)?;
        Ok(PendingBatch::new(
            &self.shared,
            flight.into_iter().collect(),
            Box::new(collector),
            uploaded,
            started,
        ))
    }

    /// The host's share of a batch of rays, and the flight of those that reach the window
    /// (`None` when none does: the answers are all in the collector already).
    pub(super) fn ray_flight<T: Clone + Send>(
        &self,
        world: &GpuWorld,
        rays: &[VoxelRay],
        opts: &RaycastOptions,
        conservative: bool,
        mut out: Vec<T>,
        convert: fn(RaycastOutcome) -> T,
    ) -> Result<(Option<Flight>, RayAnswers<T>, u64), GpuError> {
        // Every answer is written once, on the host or from the GPU: an `out` of the right
        // length (the last frame's) is not filled first.
        if out.len() != rays.len() {
            out.clear();
            out.try_reserve(rays.len())
                .map_err(|_| GpuError::OutputTooLarge(rays.len() as u64))?;
            out.resize(rays.len(), convert(RaycastOutcome::Miss));
        }
        let (staging, long) = self.prepare_rays(world, rays, opts, conservative, &mut out, convert);
        let uploaded = staging.upload.len();
        let collector = RayAnswers {
            out,
            convert,
            window: world.window,
        };
        if uploaded == 0 {
            self.shared.return_staging(staging);
            return Ok((None, collector, 0));
        }
        let flags = option_flags(opts, conservative) | world.walk_flags(long);
        let binding = self.binding(world, Entry::Rays, flags, self.params_of(world), opts)?;
        let flight = Flight::start(
            Arc::clone(&self.shared),
            binding,
            Items::Rays(staging, uploaded),
            self.dispatch_capacity(),
        )?;
        Ok((Some(flight), collector, uploaded as u64))
    }

    /// The parameters every dispatch on `world` shares.
    pub(super) fn params_of(&self, world: &GpuWorld) -> GpuParams {
        let w = &world.window;
        GpuParams {
            dims: w.dims,
            region_phase: w.packed_region_phase(),
            table_phase: w.table_phase(),
            world_edge: w.world_edge(),
            region_dims: w.region_dims(),
            region_table_phase: w.region_table_phase(),
            ..Default::default()
        }
    }

    /// What a batch on `world` binds: the pipeline of `entry` for option `flags`, the world's
    /// buffers, the parameters and the material filter.
    pub(super) fn binding(
        &self,
        world: &GpuWorld,
        entry: Entry,
        flags: u32,
        params: GpuParams,
        opts: &RaycastOptions,
    ) -> Result<Binding, GpuError> {
        Ok(Binding {
            pipeline: self.pipeline(entry, flags | world.window.flags())?,
            layout: self.layout(entry).clone(),
            world: [
                world.table.clone(),
                world.store.occupancy.clone(),
                world.store.slots.clone(),
                world.store.ids.clone(),
            ],
            sync: Arc::clone(&world.sync),
            version: world.sync.version(),
            params,
            filter: (!opts.blocks.is_every_non_air()).then(|| opts.blocks.words().to_vec()),
        })
    }

    /// Most items per dispatch on this device: what one storage binding holds, at most
    /// [`GpuRaycaster::set_max_dispatch_rays`].
    pub(super) fn dispatch_capacity(&self) -> u32 {
        let by_binding = self.limits.max_storage_buffer_binding_size / size_of::<GpuRay>() as u64;
        let by_buffer = self.limits.max_buffer_size / size_of::<GpuRay>() as u64;
        let by_groups = u64::from(self.limits.max_compute_workgroups_per_dimension).pow(2)
            * u64::from(WORKGROUP_SIZE);
        u64::from(self.max_dispatch_rays)
            .min(by_binding)
            .min(by_buffer)
            .min(by_groups)
            .max(1) as u32
    }
}

/// Every pixel's ray of `camera`, row by row, as [`Camera::ray`] makes it but unchecked: a
/// pixel whose ray is invalid keeps its fields, and the batch answers it with the error
/// `Camera::ray` gives.
fn camera_rays(camera: &Camera) -> Result<Vec<VoxelRay>, GpuError> {
    let pixels = u64::from(camera.width) * u64::from(camera.height);
    let mut rays = Vec::new();
    rays.try_reserve(pixels as usize)
        .map_err(|_| GpuError::OutputTooLarge(pixels))?;
    for py in 0..camera.height {
        rays.extend((0..camera.width).map(|px| VoxelRay {
            origin: camera.position,
            sub_offset: camera.sub_offset,
            direction: camera.pixel_dir(px, py),
            max_distance: camera.max_distance,
        }));
    }
    Ok(rays)
}
