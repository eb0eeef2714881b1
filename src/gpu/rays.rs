//! [`Rays`]: a batch of rays on the GPU, the twin of [`raycast_batch`](crate::raycast_batch)
//! (and of [`raycast_window_batch_into`](crate::raycast_window_batch_into) for rays given
//! relative to the window). Each ray is prepared on the host (`prepare`), goes up as 48 bytes
//! (`cast_rays` in `shaders/`), and its answer (20 bytes) is decoded in the caller's order.
//! Line of sight (`sightlines.rs`), cameras the shader cannot reproduce, and the host's share
//! of agent pairs and sensor sweeps cast rays through the same leg ([`ray_leg`]).

use rayon::iter::{
    IndexedParallelIterator, IntoParallelRefIterator, IntoParallelRefMutIterator, ParallelIterator,
};
use rayon::slice::{ParallelSlice, ParallelSliceMut};
#[cfg(not(target_arch = "wasm32"))]
use web_time::Instant;

use crate::gpu::decode::{HostAnswer, undecodable};
use crate::gpu::error::GpuError;
#[cfg(not(target_arch = "wasm32"))]
use crate::gpu::flight::BatchStats;
use crate::gpu::flight::{Batches, Upload};
use crate::gpu::layout::{Access, Entry, FLAG_RAYS_AS_GIVEN, GpuHit, GpuRay, bind, option_flags};
use crate::gpu::pending::{Collect, Launch, Leg, PendingBatch};
#[cfg(not(target_arch = "wasm32"))]
use crate::gpu::prepare::HOST_BAND;
use crate::gpu::prepare::{HostRay, HostStaging, prepare_rays};
use crate::gpu::query::{Query, sealed::Sealed};
use crate::gpu::window::Window;
use crate::gpu::world::GpuWorld;
use crate::ray::{RaycastOptions, RaycastOutcome, VoxelRay, WindowOutcome, WindowRay};
use crate::world::VoxelWorld;

/// `cast_rays`: rays prepared on the host in (`shaders/rays.wgsl`), answers out.
pub(super) const ENTRY: Entry = Entry {
    name: "cast_rays",
    input: bind(6, "rays", Access::Read),
    extra: None,
    output: bind(7, "hits", Access::ReadWrite),
    reads_input: true,
    reads_shapes: true,
    structs: &[],
    constants: &[],
    shader_only: &[],
};

/// Rays to cast on the GPU: each ray's answer is exactly what the CPU reference gives
/// ([`voxel_raycast_with`](crate::voxel_raycast_with)), in input order.
///
/// - `Rays<VoxelRay>`: answers [`RaycastOutcome`]s, as [`raycast_batch`](crate::raycast_batch)
///   does. The host's share (validation, the i128 split, stepping rays that start outside the
///   window to it, answering rays that cannot reach it) is done before a submit returns; a
///   batch keeps about 60 bytes a ray of host memory (52 where the shader sets rays up) until
///   its answers are taken.
/// - `Rays<WindowRay>`: rays relative to the world's window
///   ([`GpuWorld::window_origin`]), answered relative to it ([`WindowOutcome`]): what a caller
///   that keeps positions near the window gets without converting to and from i128 (40 bytes a
///   ray in, 44 out, against 80 and 96). Ray `i`'s answer is exactly
///   [`WindowOutcome::from_outcome`] of the `VoxelRay` answer for
///   `rays[i].to_voxel_ray(world.window_origin())`
///   ([`raycast_window_batch_into`](crate::raycast_window_batch_into) on the CPU); a ray whose
///   voxel plus the window's origin leaves the i128 world is [`WindowOutcome::Invalid`] with
///   [`RayError::OriginOutOfRange`](crate::RayError::OriginOutOfRange). Rays and answers are
///   relative to the origin the window has when the batch is submitted.
///
/// On a window that follows a center
/// ([`GpuRaycaster::upload_window`](crate::gpu::GpuRaycaster::upload_window)), a ray that
/// leaves it is `Unloaded` where it leaves: [`Rays::complete`] answers those on the CPU.
/// A blocking cast of more than 2^20 rays goes in bands of that many, the next band prepared
/// while the GPU runs the last, so that the host's working memory stays bounded.
///
/// ```no_run
/// # use voxcast::gpu::{GpuConfig, GpuRaycaster, Rays};
/// # use voxcast::{RaycastOptions, VoxelRay, VoxelWorld};
/// # async fn f(gpu: &GpuRaycaster, world: &VoxelWorld, rays: &[VoxelRay]) -> Result<(), voxcast::gpu::GpuError> {
/// let on_gpu = gpu.upload_world(world)?;
/// let outcomes = gpu.submit(Rays(rays), &on_gpu, &RaycastOptions::default())?.await?;
/// assert_eq!(outcomes.len(), rays.len());
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Rays<'a, R = VoxelRay>(pub &'a [R]);

impl<R> Sealed for Rays<'_, R> {}

impl Query for Rays<'_, VoxelRay> {
    type Answers = Vec<RaycastOutcome>;
    type Options = RaycastOptions;

    fn start(
        self,
        launch: Launch<'_>,
        opts: &RaycastOptions,
        reuse: Vec<RaycastOutcome>,
    ) -> Result<PendingBatch<Vec<RaycastOutcome>>, GpuError> {
        submit_rays(launch, self.0, opts, false, reuse)
    }

    #[cfg(not(target_arch = "wasm32"))]
    fn cast_into(
        self,
        launch: Launch<'_>,
        opts: &RaycastOptions,
        out: &mut Vec<RaycastOutcome>,
    ) -> Result<BatchStats, GpuError> {
        cast_in_bands(launch, self.0, opts, false, out)
    }
}

impl Query for Rays<'_, WindowRay> {
    type Answers = Vec<WindowOutcome>;
    type Options = RaycastOptions;

    fn start(
        self,
        launch: Launch<'_>,
        opts: &RaycastOptions,
        reuse: Vec<WindowOutcome>,
    ) -> Result<PendingBatch<Vec<WindowOutcome>>, GpuError> {
        submit_rays(launch, self.0, opts, false, reuse)
    }

    #[cfg(not(target_arch = "wasm32"))]
    fn cast_into(
        self,
        launch: Launch<'_>,
        opts: &RaycastOptions,
        out: &mut Vec<WindowOutcome>,
    ) -> Result<BatchStats, GpuError> {
        cast_in_bands(launch, self.0, opts, false, out)
    }
}

impl Rays<'_, VoxelRay> {
    /// Completes the GPU's answers on the CPU: every outcome of `outcomes` that left the
    /// window ([`GpuWorld::left_window`], on the world `world` the batch was cast against) is
    /// replaced by [`voxel_raycast_with`](crate::voxel_raycast_with) of its ray on `cpu`, the
    /// [`VoxelWorld`] the window was uploaded from, in parallel; the others stay. Then every
    /// answer is the CPU reference's on `cpu`. On a world uploaded whole nothing is completed.
    /// Rays and outcomes go in the same order; past the shorter of the two nothing is read or
    /// changed. Returns how many outcomes were completed. Call it before the window moves
    /// ([`GpuWorld::recenter`]).
    pub fn complete(
        &self,
        world: &GpuWorld,
        cpu: &VoxelWorld,
        opts: &RaycastOptions,
        outcomes: &mut [RaycastOutcome],
    ) -> usize {
        outcomes
            .par_iter_mut()
            .zip(self.0.par_iter())
            .filter(|(o, _)| world.left_window(o))
            .map(|(o, ray)| *o = crate::cpu_ref::voxel_raycast_with(ray, cpu, opts))
            .count()
    }
}

/// The rays of a batch prepared on the host ([`prepare_rays`]): `uploaded` of them go up,
/// gathered from `staging` in upload order as they go.
#[derive(Debug)]
pub(super) struct RayUpload {
    staging: HostStaging,
    uploaded: usize,
}

impl Upload for RayUpload {
    const ENTRY: Entry = self::ENTRY;

    fn count(&self) -> u64 {
        self.uploaded as u64
    }

    /// A dispatch takes rays of one part of the caller's order ([`HostStaging::part_end`]).
    fn run_end(&self, at: u64) -> u64 {
        self.staging.part_end(at)
    }

    fn bytes(&self, n: u64) -> (u64, u64) {
        (
            n * size_of::<GpuRay>() as u64,
            n * size_of::<GpuHit>() as u64,
        )
    }

    fn write_input(
        &self,
        base: u64,
        count: u64,
        buffer: &wgpu::Buffer,
        at: u64,
    ) -> Result<(), wgpu::MapRangeError> {
        self.staging
            .gather(base as usize, count as usize, buffer, at)
    }

    fn recycle(self, batches: &Batches) {
        batches.return_staging(self.staging);
    }
}

/// Rays decoded together: their hits (20 bytes each) gathered into a block that stays in the
/// cache while it is decoded.
const DECODE_BLOCK: usize = 1024;

/// The answers of uploaded rays: each result belongs to the ray at its place in the upload
/// order, relative to the voxel uploaded with it.
#[derive(Debug)]
pub(super) struct RayAnswers<T> {
    out: Vec<T>,
    window: Window,
}

impl<T: HostAnswer + std::fmt::Debug + 'static> Collect<RayUpload> for RayAnswers<T> {
    type Output = Vec<T>;

    fn collect(
        &mut self,
        items: &RayUpload,
        base: u64,
        count: u64,
        bytes: &[u8],
    ) -> Result<(), GpuError> {
        let staging = &items.staging;
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

    fn finish(self) -> Vec<T> {
        self.out
    }
}

/// The leg of a batch of rays (conservative line of sight with `conservative`): the host's
/// share ([`prepare_rays`]) done, and those that reach the window in flight (no flight when
/// none does: the answers are all in the collector already). Returns how many went to the
/// GPU too.
pub(super) fn ray_leg<R: HostRay, T: HostAnswer + Clone + std::fmt::Debug + 'static>(
    launch: &Launch<'_>,
    rays: &[R],
    opts: &RaycastOptions,
    conservative: bool,
    mut out: Vec<T>,
) -> Result<(Leg<RayUpload, RayAnswers<T>>, u64), GpuError> {
    let (batches, world) = (launch.batches, launch.world);
    // Every answer is written once, on the host or from the GPU: an `out` of the right
    // length (the last frame's) is not filled first.
    if out.len() != rays.len() {
        out.clear();
        out.try_reserve(rays.len())
            .map_err(|_| GpuError::OutputTooLarge(rays.len() as u64))?;
        out.resize(rays.len(), T::answered(RaycastOutcome::Miss, &world.window));
    }
    let in_shader = batches.device.rays_set_up_in_shader;
    let (staging, long, uploaded) = prepare_rays(
        batches.take_staging(),
        &world.window,
        (launch.per_dispatch, in_shader),
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
        return Ok((Leg::new(None, collector), 0));
    }
    let as_given = if in_shader { FLAG_RAYS_AS_GIVEN } else { 0 };
    let flags = option_flags(opts, conservative) | world.walk_flags(long) | as_given;
    let binding = launch.binding(ENTRY, flags, world.params(), opts)?;
    let flight = launch.flight(binding, RayUpload { staging, uploaded })?;
    Ok((Leg::new(Some(flight), collector), uploaded as u64))
}

/// A batch of rays, submitted.
pub(super) fn submit_rays<R: HostRay, T: HostAnswer + Clone + std::fmt::Debug + 'static>(
    launch: Launch<'_>,
    rays: &[R],
    opts: &RaycastOptions,
    conservative: bool,
    out: Vec<T>,
) -> Result<PendingBatch<Vec<T>>, GpuError> {
    let (leg, uploaded) = ray_leg(&launch, rays, opts, conservative, out)?;
    Ok(launch.pending(leg, uploaded))
}

/// A batch of rays cast and waited for, into `out`: in bands of at most [`HOST_BAND`] rays,
/// the next band prepared while the GPU runs the last. Returns what all the bands cost.
#[cfg(not(target_arch = "wasm32"))]
pub(super) fn cast_in_bands<R: HostRay, T: HostAnswer + Clone + std::fmt::Debug + 'static>(
    launch: Launch<'_>,
    rays: &[R],
    opts: &RaycastOptions,
    conservative: bool,
    out: &mut Vec<T>,
) -> Result<BatchStats, GpuError> {
    if rays.len() <= HOST_BAND {
        let pending = submit_rays(launch, rays, opts, conservative, std::mem::take(out))?;
        let (answers, stats) = pending.wait_with_stats()?;
        *out = answers;
        return Ok(stats);
    }
    out.clear();
    out.try_reserve(rays.len())
        .map_err(|_| GpuError::OutputTooLarge(rays.len() as u64))?;
    let started = Instant::now();
    let mut total = BatchStats::default();
    let mut last: Option<PendingBatch<Vec<T>>> = None;
    for band in rays.chunks(HOST_BAND) {
        let next = submit_rays(launch.again(), band, opts, conservative, Vec::new())?;
        if let Some(done) = last.replace(next) {
            let (answers, stats) = done.wait_with_stats()?;
            out.extend(answers);
            total.add(&stats);
        }
    }
    if let Some(done) = last {
        let (answers, stats) = done.wait_with_stats()?;
        out.extend(answers);
        total.add(&stats);
    }
    total.total_seconds = started.elapsed().as_secs_f64();
    Ok(total)
}
