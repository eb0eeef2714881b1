//! [`Sightlines`]: line of sight for a batch of segments on the GPU, the twin of
//! [`line_of_sight_batch`](crate::line_of_sight_batch) (and of
//! [`line_of_sight_window_batch_into`](crate::line_of_sight_window_batch_into) for segments
//! given relative to the window). Segments are rays whose max distance is their length, cast
//! through the rays' leg (`rays.rs`) with the conservative mode's flag where asked.

use crate::gpu::error::GpuError;
#[cfg(not(target_arch = "wasm32"))]
use crate::gpu::flight::BatchStats;
use crate::gpu::pending::{Launch, PendingBatch};
use crate::gpu::query::{Query, sealed::Sealed};
#[cfg(not(target_arch = "wasm32"))]
use crate::gpu::rays::cast_in_bands;
use crate::gpu::rays::submit_rays;
use crate::gpu::world::GpuWorld;
use crate::ray::{LineOfSight, LineOfSightOptions, VoxelRay, WindowOutcome, WindowRay};
use crate::world::VoxelWorld;

/// Segments whose line of sight the GPU answers (see [`line_of_sight`](crate::line_of_sight)),
/// in input order, exactly as the CPU reference does; both modes, plain and conservative
/// ([`LineOfSightOptions::conservative`]).
///
/// - `Sightlines<VoxelRay>`: answers [`LineOfSight`]s, as
///   [`line_of_sight_batch`](crate::line_of_sight_batch) does.
/// - `Sightlines<WindowRay>`: segments relative to the world's window, as
///   [`Rays`](crate::gpu::Rays) takes rays: [`WindowOutcome::Miss`] for a clear segment,
///   [`WindowOutcome::Hit`] for a blocked one, [`WindowOutcome::Unloaded`] for one whose end
///   cannot be known ([`WindowOutcome::to_line_of_sight`] gives the [`LineOfSight`]).
///
/// On a window that follows a center, a segment that leaves it is `Unknown` where it leaves:
/// [`Sightlines::complete`] answers those on the CPU.
#[derive(Clone, Copy, Debug)]
pub struct Sightlines<'a, R = VoxelRay>(pub &'a [R]);

impl<R> Sealed for Sightlines<'_, R> {}

impl Query for Sightlines<'_, VoxelRay> {
    type Answers = Vec<LineOfSight>;
    type Options = LineOfSightOptions;

    fn start(
        self,
        launch: Launch<'_>,
        opts: &LineOfSightOptions,
        reuse: Vec<LineOfSight>,
    ) -> Result<PendingBatch<Vec<LineOfSight>>, GpuError> {
        submit_rays(launch, self.0, &opts.raycast, opts.conservative, reuse)
    }

    #[cfg(not(target_arch = "wasm32"))]
    fn cast_into(
        self,
        launch: Launch<'_>,
        opts: &LineOfSightOptions,
        out: &mut Vec<LineOfSight>,
    ) -> Result<BatchStats, GpuError> {
        cast_in_bands(launch, self.0, &opts.raycast, opts.conservative, out)
    }
}

impl Query for Sightlines<'_, WindowRay> {
    type Answers = Vec<WindowOutcome>;
    type Options = LineOfSightOptions;

    fn start(
        self,
        launch: Launch<'_>,
        opts: &LineOfSightOptions,
        reuse: Vec<WindowOutcome>,
    ) -> Result<PendingBatch<Vec<WindowOutcome>>, GpuError> {
        submit_rays(launch, self.0, &opts.raycast, opts.conservative, reuse)
    }

    #[cfg(not(target_arch = "wasm32"))]
    fn cast_into(
        self,
        launch: Launch<'_>,
        opts: &LineOfSightOptions,
        out: &mut Vec<WindowOutcome>,
    ) -> Result<BatchStats, GpuError> {
        cast_in_bands(launch, self.0, &opts.raycast, opts.conservative, out)
    }
}

impl Sightlines<'_, VoxelRay> {
    /// [`Rays::complete`](crate::gpu::Rays::complete) for line of sight: every `Unknown`
    /// answer at a voxel outside the window's box is replaced by
    /// [`line_of_sight`](crate::line_of_sight) of its segment on `cpu`. Returns how many
    /// answers were completed; slices as for `Rays::complete`.
    pub fn complete(
        &self,
        world: &GpuWorld,
        cpu: &VoxelWorld,
        opts: &LineOfSightOptions,
        answers: &mut [LineOfSight],
    ) -> usize {
        use rayon::prelude::*;
        answers
            .par_iter_mut()
            .zip(self.0.par_iter())
            .filter(|(a, _)| world.left_window(&crate::ray::RaycastOutcome::from(**a)))
            .map(|(a, segment)| *a = crate::cpu_ref::line_of_sight(segment, cpu, opts))
            .count()
    }
}
