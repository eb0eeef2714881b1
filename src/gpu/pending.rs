//! Batches that return at once: the `submit_*` calls of [`GpuRaycaster`] and the
//! [`PendingBatch`] handle they return. The blocking calls are a submit and a wait.

use std::time::Instant;

use super::dispatch::{Binding, Flight, Items, Shared};
use super::*;

/// A batch submitted to the GPU whose answers have not been taken yet (see
/// [`GpuRaycaster::submit_raycast`]). It owns everything it needs, so it can be kept across
/// frames, moved to another thread (it is `Send`) or dropped (the GPU's work is then
/// discarded). Answers come in the caller's order.
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
    flight: Option<Flight>,
    shared: Arc<Shared>,
    window: Window,
    /// The answers, in the caller's order: those answered on the host already, the GPU's as
    /// they are read.
    out: Vec<T>,
    decode: Decode,
    convert: fn(RaycastOutcome) -> T,
    /// Items sent to the GPU.
    gpu_items: u64,
    started: Instant,
    /// Time spent in calls (preparing, staging, decoding), not waiting for the GPU.
    host_seconds: f64,
    error: Option<GpuError>,
    taken: bool,
}

/// How a batch's GPU results become answers.
#[derive(Clone, Copy, Debug)]
enum Decode {
    /// Rays prepared on the host: each result belongs to the ray at its place in the upload
    /// order, and is relative to that ray's start voxel.
    Rays,
    /// Camera pixels in order, relative to the eye's voxel.
    Camera([i32; 3]),
}

impl<T: Send> PendingBatch<T> {
    /// Whether the answers are ready to take. Polls the device without blocking and reads the
    /// dispatches that have finished (so it may take as long as decoding them).
    pub fn is_ready(&mut self) -> bool {
        self.progress(false);
        !self.taken && (self.flight.is_none() || self.error.is_some())
    }

    /// The answers in the caller's order, if the GPU has finished the batch; `None` while it
    /// has not (or after the answers were taken). Never blocks: polls the device, reads what
    /// has finished and returns.
    ///
    /// # Errors
    /// `Some(Err(_))` with a [`GpuError`] when the device failed (validation, out of memory,
    /// lost) or a result could not be decoded.
    pub fn try_take(&mut self) -> Option<Result<Vec<T>, GpuError>> {
        if self.is_ready() {
            Some(self.take())
        } else {
            None
        }
    }

    /// The answers in the caller's order, once the GPU has finished: blocks the thread until
    /// then (waiting on the device, without spinning).
    ///
    /// # Errors
    /// As [`PendingBatch::try_take`]; also when the answers were taken already.
    pub fn wait(mut self) -> Result<Vec<T>, GpuError> {
        if self.taken {
            return Err(GpuError::Internal("the answers were taken already".into()));
        }
        self.progress(true);
        self.take()
    }

    fn take(&mut self) -> Result<Vec<T>, GpuError> {
        self.taken = true;
        if let Some(e) = self.error.take() {
            self.flight = None;
            return Err(e);
        }
        Ok(std::mem::take(&mut self.out))
    }

    /// Reads what has finished (everything, with `wait`), submits what comes next and, when
    /// the batch is done, records its statistics.
    fn progress(&mut self, wait: bool) {
        let Some(flight) = self.flight.as_mut() else {
            return;
        };
        let t = Instant::now();
        let (window, decode, convert) = (self.window, self.decode, self.convert);
        let out = &mut self.out;
        let mut sink =
            |items: &Items, base: u64, count: u64, bytes: &[u8]| -> Result<(), GpuError> {
                let hits: &[GpuHit] = bytemuck::cast_slice(bytes);
                let hits = &hits[..count as usize];
                match (decode, items) {
                    (Decode::Rays, Items::Rays(staging, _)) => {
                        let order = &staging.order[base as usize..(base + count) as usize];
                        for (h, &(_, i)) in hits.iter().zip(order) {
                            let start = staging.rays[i as usize].voxel;
                            out[i as usize] = convert(window.decode(h, start)?);
                        }
                    }
                    (Decode::Camera(eye), _) => {
                        for h in hits {
                            out.push(convert(window.decode(h, eye)?));
                        }
                    }
                    _ => {
                        return Err(GpuError::Internal(
                            "results of another kind of batch".into(),
                        ));
                    }
                }
                Ok(())
            };
        let result = if wait {
            flight.finish(&mut sink).map(|()| true)
        } else {
            flight.advance(false, &mut sink)
        };
        self.host_seconds += t.elapsed().as_secs_f64();
        match result {
            Ok(false) => {}
            Ok(true) | Err(_) => {
                if let Err(e) = result {
                    self.error = Some(e);
                }
                let mut done = self.flight.take().expect("checked above");
                self.finish_stats(&done);
                if let Items::Rays(staging, _) = done.take_items() {
                    self.shared.return_staging(staging);
                }
            }
        }
    }

    fn finish_stats(&self, flight: &Flight) {
        if let Ok(mut s) = self.shared.stats.lock() {
            *s = BatchStats {
                gpu_rays: self.gpu_items,
                dispatches: flight.dispatches,
                kernel_seconds: self.shared.timestamps.then_some(flight.kernel_ns * 1e-9),
                total_seconds: self.started.elapsed().as_secs_f64(),
                host_seconds: self.host_seconds,
            };
        }
    }
}

/// A batch answered entirely on the host (no ray reaches the GPU's window) or not started:
/// its answers are ready at once.
fn ready<T>(
    shared: &Arc<Shared>,
    window: Window,
    out: Vec<T>,
    convert: fn(RaycastOutcome) -> T,
    started: Instant,
) -> PendingBatch<T> {
    if let Ok(mut s) = shared.stats.lock() {
        let seconds = started.elapsed().as_secs_f64();
        *s = BatchStats {
            total_seconds: seconds,
            host_seconds: seconds,
            ..BatchStats::default()
        };
    }
    PendingBatch {
        flight: None,
        shared: Arc::clone(shared),
        window,
        out,
        decode: Decode::Rays,
        convert,
        gpu_items: 0,
        started,
        host_seconds: started.elapsed().as_secs_f64(),
        error: None,
        taken: false,
    }
}

impl GpuRaycaster {
    /// Submits `rays` against `world` and returns at once: the answers, exactly as
    /// [`GpuRaycaster::raycast`] gives them, come from the [`PendingBatch`] (without blocking
    /// with [`PendingBatch::try_take`], or [`PendingBatch::wait`]). The host's share
    /// (validation, the i128 split, rays that cannot reach the window) is done before this
    /// returns. Several batches may be in flight at once. The batch keeps about 64 bytes per
    /// ray of host memory until its answers are taken.
    ///
    /// # Errors
    /// As [`GpuRaycaster::raycast`].
    pub fn submit_raycast(
        &self,
        world: &GpuWorld,
        rays: &[VoxelRay],
        opts: &RaycastOptions,
    ) -> Result<PendingBatch<RaycastOutcome>, GpuError> {
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
    ) -> Result<PendingBatch<RaycastOutcome>, GpuError> {
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
    ) -> Result<PendingBatch<LineOfSight>, GpuError> {
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
    ) -> Result<PendingBatch<LineOfSight>, GpuError> {
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
    /// [`GpuRaycaster::render_camera`]'s. A camera the shader cannot reproduce exactly (see
    /// `render_camera`) is cast from host-built rays, also submitted.
    ///
    /// # Errors
    /// As [`GpuRaycaster::render_camera`].
    pub fn submit_camera(
        &self,
        world: &GpuWorld,
        camera: &Camera,
        opts: &RaycastOptions,
    ) -> Result<PendingBatch<RaycastOutcome>, GpuError> {
        self.submit_camera_into(world, camera, opts, Vec::new())
    }

    /// [`GpuRaycaster::submit_camera`] filling `out` (cleared first), its allocation reused.
    ///
    /// # Errors
    /// As [`GpuRaycaster::render_camera`].
    pub fn submit_camera_into(
        &self,
        world: &GpuWorld,
        camera: &Camera,
        opts: &RaycastOptions,
        mut out: Vec<RaycastOutcome>,
    ) -> Result<PendingBatch<RaycastOutcome>, GpuError> {
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
        let binding = self.binding(world, true, flags, params, opts)?;
        let flight = Flight::start(
            Arc::clone(&self.shared),
            binding,
            Items::Camera(pixels as u32),
            self.dispatch_capacity(),
        )?;
        Ok(PendingBatch {
            flight: Some(flight),
            shared: Arc::clone(&self.shared),
            window: *w,
            out,
            decode: Decode::Camera(eye),
            convert: |o| o,
            gpu_items: pixels,
            started,
            host_seconds: started.elapsed().as_secs_f64(),
            error: None,
            taken: false,
        })
    }

    /// Prepares `rays` on the host and submits those that reach the window.
    fn submit_rays<T: Clone + Send + Sync>(
        &self,
        world: &GpuWorld,
        rays: &[VoxelRay],
        opts: &RaycastOptions,
        conservative: bool,
        mut out: Vec<T>,
        convert: fn(RaycastOutcome) -> T,
    ) -> Result<PendingBatch<T>, GpuError> {
        let started = self.begin_call(world)?;
        out.clear();
        out.try_reserve(rays.len())
            .map_err(|_| GpuError::OutputTooLarge(rays.len() as u64))?;
        out.resize(rays.len(), convert(RaycastOutcome::Miss));
        let (staging, uploaded, long) =
            self.prepare_rays(world, rays, opts, conservative, &mut out, convert);
        if uploaded == 0 {
            self.shared.return_staging(staging);
            return Ok(ready(&self.shared, world.window, out, convert, started));
        }
        let flags = option_flags(opts, conservative) | world.walk_flags(long);
        let binding = self.binding(world, false, flags, self.params_of(world), opts)?;
        let flight = Flight::start(
            Arc::clone(&self.shared),
            binding,
            Items::Rays(staging, uploaded),
            self.dispatch_capacity(),
        )?;
        Ok(PendingBatch {
            flight: Some(flight),
            shared: Arc::clone(&self.shared),
            window: world.window,
            out,
            decode: Decode::Rays,
            convert,
            gpu_items: uploaded as u64,
            started,
            host_seconds: started.elapsed().as_secs_f64(),
            error: None,
            taken: false,
        })
    }

    /// The parameters every dispatch on `world` shares.
    fn params_of(&self, world: &GpuWorld) -> GpuParams {
        GpuParams {
            dims: world.window.dims,
            region_offset: world.window.region_offset(),
            world_edge: world.window.world_edge(),
            ..Default::default()
        }
    }

    /// What a batch on `world` binds: the pipeline of the entry point (`camera` or rays) for
    /// option `flags`, the world's buffers, the parameters and the material filter.
    fn binding(
        &self,
        world: &GpuWorld,
        camera: bool,
        flags: u32,
        params: GpuParams,
        opts: &RaycastOptions,
    ) -> Result<Binding, GpuError> {
        Ok(Binding {
            pipeline: self.pipeline(camera, flags)?,
            layout: self.layout.clone(),
            world: [
                world.table.clone(),
                world.occupancy.clone(),
                world.bricks.clone(),
                world.ids.clone(),
            ],
            params,
            filter: opts.blocks.words().to_vec(),
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
