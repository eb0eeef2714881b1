//! AI sight: line-of-sight requests queued by any system during a frame and answered together,
//! in one batch, on the CPU on all threads or on the GPU.

use bevy_ecs::prelude::*;
use voxcast::gpu::GpuError;
use voxcast::{LineOfSight, LineOfSightOptions, VoxelRay, line_of_sight_batch_into};

use crate::{VoxelPosition, Voxels};

mod gpu;

pub(crate) use gpu::GpuSightWorld;
pub use gpu::VoxelGpu;

/// Names one sight request: [`SightQueue`] hands it out, and the [`SightAnswer`] carries it.
/// Ids count up from 0 over the life of the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SightId(pub u64);

/// One line-of-sight question.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SightRequest {
    /// Can `from` see `to`: the segment between their [`VoxelPosition`]s (eye to eye), as the
    /// positions are when the batch is answered.
    Entities {
        /// The looking entity.
        from: Entity,
        /// The entity looked at.
        to: Entity,
    },
    /// Is the segment between two points clear.
    Segment {
        /// Start point.
        from: VoxelPosition,
        /// End point (its voxel is tested too: see [`VoxelRay::between`]).
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

/// The answer to one [`SightRequest`], written as a message by
/// [`VoxcastSystems::Sight`](crate::VoxcastSystems::Sight) in `PostUpdate` of the frame the
/// request was queued in (before that system ran) or else of the next frame. Read it with a
/// `MessageReader<SightAnswer>` in `Update` of the next frame at the latest.
#[derive(Message, Clone, Copy, Debug, PartialEq)]
pub struct SightAnswer {
    /// The id [`SightQueue`] returned for the request.
    pub id: SightId,
    /// The request.
    pub request: SightRequest,
    /// `Ok` with what [`voxcast::line_of_sight`] answers for the segment (with the queue's
    /// [`SightQueue::options`]), or `Err` when an entity has no position. A segment that
    /// cannot be cast (its points coincide, lie more than [`voxcast::MAX_DISTANCE_CAP`]
    /// apart, or one is not finite) is `Ok(LineOfSight::Invalid(_))`, as the core crate
    /// answers it. One bad request never keeps the others from their answers.
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
    /// The GPU, through the [`VoxelGpu`] resource.
    Gpu,
}

/// How the last sight batch went: read it to know whether the GPU is in use.
#[derive(Resource, Clone, Debug, Default, PartialEq)]
pub struct SightStatus {
    /// The engine of the last batch that had segments to cast; `None` before the first.
    pub engine: Option<SightEngine>,
    /// Requests answered in the last batch.
    pub answered: usize,
    /// The last GPU failure (upload or batch), when the GPU was asked and failed: that batch
    /// was answered on the CPU instead, with the same answers. Cleared by the next GPU batch
    /// that succeeds. After a failure the GPU is not asked again until the world or the
    /// [`VoxelGpu`] changes; until then the CPU answers and this error stays.
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
    VoxelRay::between(from.voxel, from.offset, to.voxel, to.offset)
        .map_err(|e| Ok(LineOfSight::Invalid(e)))
}

/// Answers every queued request in one batch: the GPU's when a [`VoxelGpu`] resource exists
/// and works, else the CPU's on all threads.
#[expect(
    clippy::too_many_arguments,
    reason = "a system's parameters are what it reads and writes"
)]
pub(crate) fn answer_sight_requests(
    voxels: Res<Voxels>,
    mut queue: ResMut<SightQueue>,
    positions: Query<&VoxelPosition>,
    mut gpu: Option<ResMut<VoxelGpu>>,
    mut gpu_world: ResMut<GpuSightWorld>,
    mut status: ResMut<SightStatus>,
    mut answers: MessageWriter<SightAnswer>,
    mut scratch: Local<(Vec<VoxelRay>, Vec<LineOfSight>)>,
) {
    // Before anything else, so that no frame misses it: a new raycaster needs a new upload.
    if let Some(gpu) = &mut gpu
        && gpu.bypass_change_detection().take_new()
    {
        gpu_world.reset();
    }
    if queue.is_empty() {
        return;
    }
    let requests = std::mem::take(&mut queue.requests);
    let (rays, outcomes) = &mut *scratch;
    rays.clear();
    // Per request: `Ok(i)` for the `i`-th segment of the batch, or `Err` with its answer.
    let slots: Vec<Result<usize, Result<LineOfSight, SightError>>> = requests
        .iter()
        .map(|(_, request)| {
            segment(request, &positions).map(|ray| {
                rays.push(ray);
                rays.len() - 1
            })
        })
        .collect();
    if !rays.is_empty() {
        // Chunks edited after `VoxcastSystems::PublishChanges` are not on the GPU yet: such a
        // batch is answered on the CPU, which sees the world as it is.
        let gpu = gpu.filter(|_| voxels.changed_chunk_count() == 0);
        let on_gpu = gpu.is_some_and(|gpu| {
            match gpu_world.line_of_sight(&gpu, &voxels, rays, &queue.options, outcomes) {
                Ok(()) => {
                    status.gpu_error = None;
                    true
                }
                Err(e) => {
                    status.gpu_error = Some(e);
                    false
                }
            }
        });
        if !on_gpu {
            line_of_sight_batch_into(rays, &voxels, &queue.options, outcomes);
        }
        status.engine = Some(if on_gpu {
            SightEngine::Gpu
        } else {
            SightEngine::Cpu
        });
    }
    status.answered = requests.len();
    // Both batches answer one outcome per segment, in order.
    answers.write_batch(
        requests
            .into_iter()
            .zip(slots)
            .map(|((id, request), slot)| SightAnswer {
                id,
                request,
                result: slot.map_or_else(|answer| answer, |i| Ok(outcomes[i])),
            }),
    );
}
