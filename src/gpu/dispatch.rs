//! The dispatch machinery of [`GpuRaycaster`]: batch buffers reused between calls, ray
//! staging through mapped upload buffers, dispatches in flight two at a time, readback and
//! kernel timing.

use super::*;

/// Buffers reused between batches, grown on demand.
#[derive(Debug)]
pub(super) struct BatchBuffers {
    capacity: u32,
    params: wgpu::Buffer,
    filter: wgpu::Buffer,
    rays: wgpu::Buffer,
    hits: wgpu::Buffer,
    /// Dispatches alternate between the two: while the GPU runs one, the host stages the next
    /// one's rays and reads the last one's hits.
    slots: [Slot; 2],
}

impl BatchBuffers {
    /// Bytes allocated on the device.
    pub(super) fn bytes(&self) -> u64 {
        let mut total =
            self.params.size() + self.filter.size() + self.rays.size() + self.hits.size();
        for s in &self.slots {
            total += s.upload.size()
                + s.readback.size()
                + s.timestamps.as_ref().map_or(0, wgpu::Buffer::size);
        }
        total
    }
}

/// The host-visible buffers of one dispatch in flight.
#[derive(Debug)]
struct Slot {
    /// Host-writable staging for `rays`, kept between batches: `Queue::write_buffer` would
    /// allocate a fresh staging buffer (and the driver fresh host memory) on every call.
    upload: wgpu::Buffer,
    readback: wgpu::Buffer,
    /// The dispatch's two timestamps, where the adapter has timestamp queries.
    timestamps: Option<wgpu::Buffer>,
    /// The last submission that used these buffers: mapping them waits for it alone.
    last_use: Option<wgpu::SubmissionIndex>,
}

/// A submitted dispatch whose hits have not been read yet.
struct InFlight {
    slot: usize,
    /// Index of its first ray in the batch.
    base: u64,
    /// Bytes of hits it returns.
    bytes: u64,
    submission: wgpu::SubmissionIndex,
    hits_mapped: Receiver<Result<(), wgpu::BufferAsyncError>>,
    timestamps_mapped: Option<Receiver<Result<(), wgpu::BufferAsyncError>>>,
}

/// Timestamp queries around each dispatch, where the adapter supports them.
#[derive(Debug)]
pub(super) struct KernelTimer {
    pub(super) queries: wgpu::QuerySet,
    pub(super) resolve: wgpu::Buffer,
    pub(super) period_ns: f64,
}

/// Where [`GpuRaycaster::run`] hands each dispatch's results: the index of the dispatch's first
/// ray and its hits, read from the mapped readback buffer.
pub(super) type HitSink<'a> = dyn FnMut(usize, &[GpuHit]) -> Result<(), GpuError> + 'a;

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

#[derive(Clone, Copy)]
pub(super) enum Kernel<'a> {
    /// Rays staged at their index in the batch, the order they go to the GPU in (the index of
    /// each as the second field), and whether every one of them has a max distance of at
    /// least [`LONG_RAY`].
    Rays(&'a [GpuRay], &'a [(u64, u32)], bool),
    Camera(&'a Camera, u32),
}

impl GpuRaycaster {
    pub(super) fn batch_buffers(
        device: &wgpu::Device,
        capacity: u32,
        timestamps: bool,
    ) -> BatchBuffers {
        let buf = |label, size: u64, usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation: false,
            })
        };
        use wgpu::BufferUsages as U;
        let cap = u64::from(capacity);
        let ray_bytes = cap * size_of::<GpuRay>() as u64;
        let hit_bytes = cap * size_of::<GpuHit>() as u64;
        BatchBuffers {
            capacity,
            params: buf(
                "params",
                size_of::<GpuParams>() as u64,
                U::UNIFORM | U::COPY_DST,
            ),
            filter: buf("filter", 2048 * 4, U::STORAGE | U::COPY_DST),
            rays: buf("rays", ray_bytes, U::STORAGE | U::COPY_DST),
            hits: buf("hits", hit_bytes, U::STORAGE | U::COPY_SRC),
            slots: [(); 2].map(|()| Slot {
                upload: buf("upload", ray_bytes, U::MAP_WRITE | U::COPY_SRC),
                readback: buf("readback", hit_bytes, U::MAP_READ | U::COPY_DST),
                timestamps: timestamps
                    .then(|| buf("timestamps readback", 16, U::MAP_READ | U::COPY_DST)),
                last_use: None,
            }),
        }
    }

    /// Most rays per dispatch on this device.
    fn dispatch_capacity(&self) -> u32 {
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

    /// Waits for a mapping started with [`map_channel`], which completes when `last_use` (the
    /// last submission that used the buffer) has finished. Waits for that submission alone, so
    /// later ones keep running; with `None` (no submission in flight uses the buffer) only for
    /// callbacks already due, then, should the mapping still be pending, for every submission.
    fn wait_mapped(
        &self,
        mapped: &Receiver<Result<(), wgpu::BufferAsyncError>>,
        last_use: Option<&wgpu::SubmissionIndex>,
    ) -> Result<(), GpuError> {
        let poll = match last_use {
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

    /// Stages and submits the dispatch for rays (or pixels) `range` of a batch in `slot`, and
    /// starts mapping its hits for reading.
    #[expect(
        clippy::too_many_arguments,
        reason = "one dispatch's parts, all borrowed from `run`"
    )]
    fn submit_dispatch(
        &self,
        batch: &mut BatchBuffers,
        kernel: Kernel<'_>,
        pipeline: &wgpu::ComputePipeline,
        bind_group: &wgpu::BindGroup,
        params: &mut GpuParams,
        range: std::ops::Range<u64>,
        slot: usize,
    ) -> Result<InFlight, GpuError> {
        let count = (range.end - range.start) as u32;
        params.ray_base = range.start as u32;
        params.ray_count = count;
        self.queue
            .write_buffer(&batch.params, 0, bytemuck::bytes_of(params));
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        let s = &batch.slots[slot];
        match kernel {
            Kernel::Rays(rays, order, _) => {
                let order = &order[range.start as usize..range.end as usize];
                let len = (order.len() * size_of::<GpuRay>()) as u64;
                let staging = s.upload.slice(..len);
                let mapped = map_channel(&staging, wgpu::MapMode::Write);
                let staged = self
                    .wait_mapped(&mapped, s.last_use.as_ref())
                    .and_then(|()| {
                        // Gathered in upload order straight into the mapped buffer.
                        let mut view = staging.get_mapped_range_mut().map_err(device_error)?;
                        let (dst, _) = view.slice(..).into_chunks::<{ size_of::<GpuRay>() }>();
                        dst.write_iter(
                            order.iter().map(|&(_, i)| bytemuck::cast(rays[i as usize])),
                        );
                        Ok(())
                    });
                s.upload.unmap();
                staged?;
                encoder.copy_buffer_to_buffer(&s.upload, 0, &batch.rays, 0, len);
            }
            Kernel::Camera(..) => {}
        }
        // Dispatch: a 2D grid of workgroups when one dimension is not enough.
        let groups = count.div_ceil(WORKGROUP_SIZE);
        let gx = groups.min(self.limits.max_compute_workgroups_per_dimension);
        let gy = groups.div_ceil(gx);
        let bytes = u64::from(count) * size_of::<GpuHit>() as u64;
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("voxcast dda"),
                timestamp_writes: self
                    .timer
                    .as_ref()
                    .map(|t| wgpu::ComputePassTimestampWrites {
                        query_set: &t.queries,
                        beginning_of_pass_write_index: Some(0),
                        end_of_pass_write_index: Some(1),
                    }),
            });
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, bind_group, &[]);
            pass.dispatch_workgroups(gx, gy, 1);
        }
        encoder.copy_buffer_to_buffer(&batch.hits, 0, &s.readback, 0, bytes);
        if let (Some(t), Some(ts)) = (&self.timer, &s.timestamps) {
            encoder.resolve_query_set(&t.queries, 0..2, &t.resolve, 0);
            encoder.copy_buffer_to_buffer(&t.resolve, 0, ts, 0, 16);
        }
        let submission = self.queue.submit([encoder.finish()]);
        let in_flight = InFlight {
            slot,
            base: range.start,
            bytes,
            submission: submission.clone(),
            hits_mapped: map_channel(&s.readback.slice(..bytes), wgpu::MapMode::Read),
            timestamps_mapped: s
                .timestamps
                .as_ref()
                .map(|ts| map_channel(&ts.slice(..), wgpu::MapMode::Read)),
        };
        batch.slots[slot].last_use = Some(submission);
        Ok(in_flight)
    }

    /// Waits for dispatch `f` in `slot`, hands its hits to `sink` and unmaps the slot.
    /// Returns its kernel time in nanoseconds (0 without timestamps).
    fn read_dispatch(
        &self,
        slot: &Slot,
        f: &InFlight,
        sink: &mut HitSink<'_>,
    ) -> Result<f64, GpuError> {
        let slice = slot.readback.slice(..f.bytes);
        let sunk = self
            .wait_mapped(&f.hits_mapped, Some(&f.submission))
            .and_then(|()| {
                let view = slice.get_mapped_range().map_err(device_error)?;
                sink(f.base as usize, bytemuck::cast_slice(&view))
            });
        slot.readback.unmap();
        let mut kernel_ns = 0.0;
        if let (Some(t), Some(ts), Some(mapped)) =
            (&self.timer, &slot.timestamps, &f.timestamps_mapped)
        {
            if self.wait_mapped(mapped, Some(&f.submission)).is_ok()
                && let Ok(view) = ts.slice(..).get_mapped_range()
            {
                let stamps: &[u64] = bytemuck::cast_slice(&view);
                kernel_ns = stamps[1].saturating_sub(stamps[0]) as f64 * t.period_ns;
            }
            ts.unmap();
        }
        sunk.map(|()| kernel_ns)
    }

    /// Runs `kernel` in as many dispatches as it takes and hands each dispatch's results, read
    /// straight from the mapped readback buffer, to `sink` with the index of its first ray.
    pub(super) fn run(
        &self,
        world: &GpuWorld,
        kernel: Kernel<'_>,
        opts: &RaycastOptions,
        conservative: bool,
        sink: &mut HitSink<'_>,
    ) -> Result<(), GpuError> {
        let total = match kernel {
            Kernel::Rays(_, order, _) => order.len() as u64,
            Kernel::Camera(_, n) => u64::from(n),
        };
        if total == 0 {
            return Ok(());
        }
        self.check_lost()?;
        let per_dispatch = self.dispatch_capacity();
        // A panic while the buffers were held (a bug) leaves them in an unknown state (a
        // mapping may be pending): start again from fresh ones rather than fail every call.
        let (mut batch, poisoned) = match self.batch.lock() {
            Ok(b) => (b, false),
            Err(p) => (p.into_inner(), true),
        };
        if poisoned {
            self.batch.clear_poison();
            *batch = Self::batch_buffers(&self.device, 1, self.timer.is_some());
        }
        // From here every error of the device is returned, none goes to its uncaptured-error
        // handler (on an application's device, the application's, which may panic).
        let scope_oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let scope_val = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let want = total.min(u64::from(per_dispatch)) as u32;
        if batch.capacity < want || batch.capacity > per_dispatch {
            // Grow to the next power of two so repeated batches of similar size reuse buffers
            // (or shrink, after `set_max_dispatch_rays` lowered the dispatch size).
            let cap = want.next_power_of_two().min(per_dispatch);
            *batch = Self::batch_buffers(&self.device, cap, self.timer.is_some());
        }
        let pipeline = self.pipeline(
            matches!(kernel, Kernel::Camera(..)),
            option_flags(opts, conservative)
                | world.walk_flags(match kernel {
                    Kernel::Rays(_, _, long) => long,
                    Kernel::Camera(cam, _) => cam.max_distance >= LONG_RAY,
                }),
        )?;
        let mut params = GpuParams {
            dims: world.window.dims,
            region_offset: world.window.region_offset(),
            world_edge: world.window.world_edge(),
            ..Default::default()
        };
        if let Kernel::Camera(cam, _) = kernel {
            let rel = world
                .window
                .relative(cam.position)
                .ok_or_else(|| GpuError::Internal("camera outside".into()))?;
            params.cam_position = rel;
            params.cam_width = cam.width;
            params.cam_height = cam.height;
            params.cam_sub = cam.sub_offset.to_array();
            params.cam_forward = cam.forward.to_array();
            params.cam_right = cam.right.to_array();
            params.cam_up = cam.up.to_array();
            params.cam_scale_x = cam.scale_x;
            params.cam_scale_y = cam.scale_y;
            params.cam_max_distance = cam.max_distance;
            [params.cam_inv_w, params.cam_inv_h] = cam.pixel_steps();
        }
        self.queue
            .write_buffer(&batch.filter, 0, bytemuck::cast_slice(opts.blocks.words()));

        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("voxcast batch"),
            layout: &self.layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: batch.params.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: world.table.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: world.occupancy.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 3,
                    resource: world.bricks.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 4,
                    resource: world.ids.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 5,
                    resource: batch.filter.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 6,
                    resource: batch.rays.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 7,
                    resource: batch.hits.as_entire_binding(),
                },
            ],
        });
        // Dispatches alternate between the two slots: dispatch k is submitted before the hits
        // of dispatch k - 1 are read, so the GPU runs while the host reads and stages.
        let mut base = 0u64;
        let mut result = Ok(());
        let mut kernel_ns = 0.0;
        let mut dispatches = 0;
        let mut in_flight: Option<InFlight> = None;
        while base < total || in_flight.is_some() {
            let submitted = if base < total {
                let count = (total - base).min(u64::from(batch.capacity)) as u32;
                let slot = (dispatches % 2) as usize;
                let range = base..base + u64::from(count);
                match self.submit_dispatch(
                    &mut batch,
                    kernel,
                    &pipeline,
                    &bind_group,
                    &mut params,
                    range,
                    slot,
                ) {
                    Ok(f) => {
                        dispatches += 1;
                        base += u64::from(count);
                        Some(f)
                    }
                    Err(e) => {
                        result = Err(e);
                        None
                    }
                }
            } else {
                None
            };
            if let Some(f) = in_flight.take() {
                let read = self.read_dispatch(&batch.slots[f.slot], &f, sink);
                match read {
                    Ok(ns) => kernel_ns += ns,
                    Err(e) => {
                        if result.is_ok() {
                            result = Err(e);
                        }
                    }
                }
            }
            in_flight = submitted;
            if result.is_err() {
                // Abandon a mapping still pending, so that the buffers can be mapped again.
                if let Some(f) = in_flight.take() {
                    let slot = &batch.slots[f.slot];
                    slot.readback.unmap();
                    if let Some(ts) = &slot.timestamps {
                        ts.unmap();
                    }
                }
                break;
            }
        }
        if let Some(e) = pollster::block_on(scope_val.pop()) {
            return Err(device_error(e));
        }
        if let Some(e) = pollster::block_on(scope_oom.pop()) {
            return Err(device_error(e));
        }
        self.check_lost()?;
        // Added up over the bands of one call (`begin_call` resets them).
        if let Ok(mut s) = self.stats.lock() {
            s.gpu_rays += total;
            s.dispatches += dispatches;
            if self.timer.is_some() {
                s.kernel_seconds = Some(s.kernel_seconds.unwrap_or(0.0) + kernel_ns * 1e-9);
            }
        }
        result
    }
}
