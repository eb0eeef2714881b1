//! AI sight: line-of-sight requests queued by any system during a frame and answered together,
//! in one batch, on the CPU on all threads or (with the `gpu` feature) on the GPU.

use bevy_ecs::prelude::*;
#[cfg(feature = "gpu")]
use voxcast::WorldPos;
#[cfg(feature = "gpu")]
use voxcast::gpu::GpuError;
use voxcast::{ChunkPos, LineOfSight, LineOfSightOptions, VoxelRay, line_of_sight_batch_into};

use crate::{VoxelPosition, Voxels};

#[cfg(feature = "gpu")]
mod gpu;

#[cfg(feature = "gpu")]
pub(crate) use gpu::GpuSightWorld;
#[cfg(feature = "gpu")]
pub use gpu::{GpuWindowFocus, VoxelGpu};

/// Names one sight request: [`SightQueue`] hands it out, and the [`SightAnswer`] carries it.
/// Ids count up from 0 over the life of the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SightId(pub u64);

/// One line-of-sight question.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SightRequest {
    /// Can `from` see `to`: the segment between their [`VoxelPosition`]s (eye to eye), as the
    /// positions are when the batch is answered ([`VoxelRay::sight_line`]: one answer for
    /// either order, and two entities at one point see each other).
    Entities {
        /// The looking entity.
        from: Entity,
        /// The entity looked at.
        to: Entity,
    },
    /// Is the segment between two points clear ([`VoxelRay::sight_line`]: cast from the lower
    /// point, so one answer for either order; what blocks it is seen from there).
    Segment {
        /// One end point.
        from: VoxelPosition,
        /// The other end point.
        to: VoxelPosition,
    },
}

/// Why a sight request got no [`LineOfSight`] at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SightError {
    /// The entity does not exist (any more) or has no [`VoxelPosition`].
    #[error("entity {0} has no VoxelPosition (despawned, or never given one)")]
    NoPosition(Entity),
}

/// The answer to one [`SightRequest`], written as a message: on the CPU by
/// [`VoxcastSystems::Sight`](crate::VoxcastSystems::Sight) in `PostUpdate` of the frame that
/// answers the request (the one it was queued in, if before that system ran, else the next);
/// on the GPU by [`VoxcastSystems::CollectSight`](crate::VoxcastSystems::CollectSight) in
/// `PreUpdate` of the frame after that. Either way a `MessageReader<SightAnswer>` in `Update`
/// has it in the next frame at the latest, and answers come in the order of their requests.
#[derive(Message, Clone, Copy, Debug, PartialEq)]
pub struct SightAnswer {
    /// The id [`SightQueue`] returned for the request.
    pub id: SightId,
    /// The request.
    pub request: SightRequest,
    /// `Ok` with what [`voxcast::line_of_sight`] answers for the segment (with the queue's
    /// [`SightQueue::options`]), or `Err` when an entity has no position. A segment that
    /// cannot be cast (its points lie more than [`voxcast::MAX_DISTANCE_CAP`] apart, or one
    /// is not finite) is `Ok(LineOfSight::Invalid(_))`, as the core crate answers it; two
    /// points at one place see each other. One bad request never keeps the others from their
    /// answers.
    pub result: Result<LineOfSight, SightError>,
}

/// The frame's line-of-sight requests. Any system pushes with `ResMut<SightQueue>`; the
/// queue is emptied and answered in one batch by
/// [`VoxcastSystems::Sight`](crate::VoxcastSystems::Sight).
#[derive(Resource, Debug, Default)]
pub struct SightQueue {
    /// The options every request of the queue is answered with (which voxels block sight,
    /// glass not, say; conservative corners). Change them between frames: the batch uses the
    /// options set when it is answered.
    pub options: LineOfSightOptions,
    requests: Vec<(SightId, SightRequest)>,
    next_id: u64,
}

impl SightQueue {
    /// Queues `request` and returns the id its answer will carry.
    pub fn push(&mut self, request: SightRequest) -> SightId {
        let id = SightId(self.next_id);
        self.next_id += 1;
        self.requests.push((id, request));
        id
    }

    /// Queues "can `from` see `to`" ([`SightRequest::Entities`]).
    pub fn push_entities(&mut self, from: Entity, to: Entity) -> SightId {
        self.push(SightRequest::Entities { from, to })
    }

    /// Queues "is the segment from `from` to `to` clear" ([`SightRequest::Segment`]).
    pub fn push_segment(&mut self, from: VoxelPosition, to: VoxelPosition) -> SightId {
        self.push(SightRequest::Segment { from, to })
    }

    /// Requests waiting for the next batch.
    #[must_use]
    pub fn len(&self) -> usize {
        self.requests.len()
    }

    /// Whether no request waits.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }
}

/// Which engine answered a sight batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SightEngine {
    /// The CPU reference on all threads ([`voxcast::line_of_sight_batch`]).
    Cpu,
    /// The GPU, through the `VoxelGpu` resource (the `gpu` feature; without it no batch is
    /// answered here).
    Gpu,
}

/// How the last sight batch went: read it to know whether the GPU is in use.
///
/// Non-exhaustive: the plugin writes it, apps read it; its `gpu_error` field exists only with
/// the `gpu` feature.
#[derive(Resource, Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct SightStatus {
    /// The engine of the last batch that had segments to cast; `None` before the first.
    pub engine: Option<SightEngine>,
    /// Requests answered in the last batch.
    pub answered: usize,
    /// Of the last GPU batch's segments, those that left the GPU window of a
    /// [`VoxelGpu::with_window`] and were completed on the CPU
    /// ([`Sightlines::complete`](voxcast::gpu::Sightlines::complete));
    /// 0 for [`VoxelGpu::new`].
    pub outside_window: usize,
    /// The chunks the GPU window held for the last GPU batch (inclusive corners, see
    /// [`GpuWorld::loadable_chunks`](voxcast::gpu::GpuWorld::loadable_chunks)); `None`
    /// before the first and for [`VoxelGpu::new`].
    pub window: Option<(ChunkPos, ChunkPos)>,
    /// The last GPU failure (upload or batch), when the GPU was asked and failed: that batch
    /// was answered on the CPU instead, with the same answers. Cleared by the next GPU batch
    /// that succeeds. After a failure the GPU is not asked again until the world or the
    /// [`VoxelGpu`] changes; until then the CPU answers and this error stays. Only with the
    /// `gpu` feature.
    #[cfg(feature = "gpu")]
    pub gpu_error: Option<GpuError>,
}

/// The segment of `request`, or its answer when it has none.
fn segment(
    request: &SightRequest,
    positions: &Query<&VoxelPosition>,
) -> Result<VoxelRay, Result<LineOfSight, SightError>> {
    let (from, to) = match *request {
        SightRequest::Segment { from, to } => (from, to),
        SightRequest::Entities { from, to } => {
            let at = |e: Entity| {
                positions
                    .get(e)
                    .copied()
                    .map_err(|_| Err(SightError::NoPosition(e)))
            };
            (at(from)?, at(to)?)
        }
    };
    VoxelRay::sight_line(from.voxel, from.offset, to.voxel, to.offset)
        .map_err(|e| Ok(LineOfSight::Invalid(e)))
}

/// The voxel holding `p`: its offset's whole units carried into its voxel, as a ray does
/// (the voxel as given where the offset is not finite).
#[cfg(feature = "gpu")]
fn voxel_of(p: &VoxelPosition) -> WorldPos {
    VoxelRay::new(p.voxel, p.offset, voxcast::glam::Vec3::X, 0.0).map_or(p.voxel, |r| r.origin)
}

/// Per request of a batch: `Ok(i)` for the `i`-th segment cast, or `Err` with its answer.
type Slots = Vec<Result<usize, Result<LineOfSight, SightError>>>;

/// A batch's requests, with where each one's answer is.
#[derive(Debug)]
pub(crate) struct Batch {
    requests: Vec<(SightId, SightRequest)>,
    slots: Slots,
    /// The segments cast and the options they are cast with.
    rays: Vec<VoxelRay>,
    options: LineOfSightOptions,
    /// The chunks the GPU window held, for a window.
    #[cfg(feature = "gpu")]
    window: Option<(ChunkPos, ChunkPos)>,
}

impl Batch {
    /// The segments the GPU casts: all of them.
    #[cfg(feature = "gpu")]
    pub(crate) fn gpu_rays(&self) -> &[VoxelRay] {
        &self.rays
    }

    /// Records the window the batch is cast on.
    #[cfg(feature = "gpu")]
    pub(crate) fn set_window(&mut self, window: (ChunkPos, ChunkPos)) {
        self.window = Some(window);
    }

    /// Writes one [`SightAnswer`] per request, the cast ones from `outcomes` (one per segment,
    /// in order), and records in `status` how many were answered.
    fn answer(
        self,
        outcomes: &[LineOfSight],
        status: &mut SightStatus,
        answers: &mut MessageWriter<SightAnswer>,
    ) {
        status.answered = self.requests.len();
        answers.write_batch(self.requests.into_iter().zip(self.slots).map(
            |((id, request), slot)| SightAnswer {
                id,
                request,
                result: slot.map_or_else(|answer| answer, |i| Ok(outcomes[i])),
            },
        ));
    }

    /// Answers the batch on the CPU, on all threads, with the world as it is now.
    fn answer_on_cpu(
        self,
        voxels: &Voxels,
        status: &mut SightStatus,
        answers: &mut MessageWriter<SightAnswer>,
    ) {
        let mut outcomes = Vec::new();
        line_of_sight_batch_into(&self.rays, voxels, &self.options, &mut outcomes);
        if !self.rays.is_empty() {
            status.engine = Some(SightEngine::Cpu);
        }
        status.outside_window = 0;
        self.answer(&outcomes, status, answers);
    }
}

/// Answers the GPU batch submitted in the last frame's
/// [`VoxcastSystems::Sight`](crate::VoxcastSystems::Sight), waiting for the GPU only if it
/// has not finished yet (it had a frame); on a GPU failure the CPU answers it instead. On the
/// web (`wasm32`), where nothing may block, a batch the GPU has not finished stays in flight
/// until a later frame, and new requests wait in the queue until then (answers keep the
/// order of their requests).
#[cfg(feature = "gpu")]
pub(crate) fn collect_gpu_answers(
    voxels: Res<Voxels>,
    mut gpu_world: ResMut<GpuSightWorld>,
    mut status: ResMut<SightStatus>,
    mut answers: MessageWriter<SightAnswer>,
) {
    collect(&voxels, &mut gpu_world, &mut status, &mut answers);
}

/// Answers the GPU batch in flight, if one is; `false` when it stays in flight (on the web, not
/// finished yet).
#[cfg(feature = "gpu")]
fn collect(
    voxels: &Voxels,
    gpu_world: &mut GpuSightWorld,
    status: &mut SightStatus,
    answers: &mut MessageWriter<SightAnswer>,
) -> bool {
    let Some((pending, batch, upload)) = gpu_world.take_in_flight() else {
        return true;
    };
    #[cfg(not(target_arch = "wasm32"))]
    let result = pending.wait();
    #[cfg(target_arch = "wasm32")]
    let mut pending = pending;
    #[cfg(target_arch = "wasm32")]
    let Some(result) = pending.try_take() else {
        gpu_world.put_back((pending, batch, upload));
        return false;
    };
    let result = result.and_then(|mut outcomes| {
        if outcomes.len() != batch.rays.len() {
            return Err(GpuError::Internal(format!(
                "{} answers for {} segments",
                outcomes.len(),
                batch.rays.len()
            )));
        }
        // Segments that left the window, completed on the CPU with the world as it is now.
        let completed = upload.as_ref().or(gpu_world.upload()).map_or(0, |gw| {
            voxcast::gpu::Sightlines(&batch.rays).complete(
                gw,
                voxels,
                &batch.options,
                &mut outcomes,
            )
        });
        Ok((outcomes, completed))
    });
    match result {
        Ok((outcomes, completed)) => {
            status.engine = Some(SightEngine::Gpu);
            status.gpu_error = None;
            status.outside_window = completed;
            status.window = batch.window;
            batch.answer(&outcomes, status, answers);
        }
        Err(e) => {
            gpu_world.failed(e.clone());
            status.gpu_error = Some(e);
            batch.answer_on_cpu(voxels, status, answers);
        }
    }
    true
}

/// Answers every queued request in one batch: on the GPU when a `VoxelGpu` resource exists
/// and works (submitted now, answered by `collect_gpu_answers` at the start of the next
/// frame), else on the CPU on all threads, now.
#[cfg_attr(
    feature = "gpu",
    expect(
        clippy::too_many_arguments,
        reason = "a Bevy system: each argument is a resource or query it reads"
    )
)]
pub(crate) fn answer_sight_requests(
    voxels: Res<Voxels>,
    mut queue: ResMut<SightQueue>,
    positions: Query<&VoxelPosition>,
    #[cfg(feature = "gpu")] focus: Query<&VoxelPosition, With<GpuWindowFocus>>,
    #[cfg(feature = "gpu")] mut gpu: Option<ResMut<VoxelGpu>>,
    #[cfg(feature = "gpu")] mut gpu_world: ResMut<GpuSightWorld>,
    mut status: ResMut<SightStatus>,
    mut answers: MessageWriter<SightAnswer>,
) {
    #[cfg(feature = "gpu")]
    {
        // Before anything else, so that no frame misses it: a new raycaster needs a new upload.
        if let Some(gpu) = &mut gpu
            && gpu.bypass_change_detection().take_new()
        {
            gpu_world.reset();
        }
        // A batch still in flight (`collect_gpu_answers` did not run since): answered first, so
        // that answers keep the order of their requests; on the web, where it may not be done
        // yet, the requests wait in the queue for a later frame.
        if !collect(&voxels, &mut gpu_world, &mut status, &mut answers) {
            return;
        }
    }
    if queue.is_empty() {
        return;
    }
    let requests = std::mem::take(&mut queue.requests);
    let mut rays = Vec::new();
    let slots: Slots = requests
        .iter()
        .map(|(_, request)| {
            segment(request, &positions).map(|ray| {
                rays.push(ray);
                rays.len() - 1
            })
        })
        .collect();
    let batch = Batch {
        requests,
        slots,
        rays,
        options: queue.options.clone(),
        #[cfg(feature = "gpu")]
        window: None,
    };
    #[cfg(feature = "gpu")]
    let Some(batch) = submit_to_gpu(
        batch,
        &voxels,
        &focus,
        gpu.as_deref(),
        &mut gpu_world,
        &mut status,
    ) else {
        return;
    };
    batch.answer_on_cpu(&voxels, &mut status, &mut answers);
}

/// Submits `batch` to the GPU (its answers collected by [`collect`]) and returns `None`, or
/// gives it back for the CPU to answer: without a [`VoxelGpu`], without segments to cast, when chunks were edited
/// after [`VoxcastSystems::PublishChanges`](crate::VoxcastSystems::PublishChanges) (not on the
/// GPU yet: the CPU sees the world as it is), and when the GPU fails (the error in `status`).
#[cfg(feature = "gpu")]
fn submit_to_gpu(
    mut batch: Batch,
    voxels: &Voxels,
    focus: &Query<&VoxelPosition, With<GpuWindowFocus>>,
    gpu: Option<&VoxelGpu>,
    gpu_world: &mut GpuSightWorld,
    status: &mut SightStatus,
) -> Option<Batch> {
    let gpu = gpu.filter(|_| voxels.changed_chunk_count() == 0 && !batch.rays.is_empty());
    let Some(gpu) = gpu else {
        return Some(batch);
    };
    // The window's center: the focus's chunk, its offset carried into its voxel.
    let center = focus.iter().next().map(|p| voxel_of(p).chunk());
    match gpu_world.submit(gpu, voxels, &mut batch, center) {
        Ok(pending) => {
            gpu_world.set_in_flight(pending, batch);
            None
        }
        Err(e) => {
            status.gpu_error = Some(e);
            Some(batch)
        }
    }
}
