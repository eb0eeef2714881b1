//! [`Query`]: what every kind of batch query is to the raycaster. Each kind is one type in a
//! file of its own, named beside its CPU twin:
//!
//! | query | file | CPU twin |
//! | --- | --- | --- |
//! | [`Rays`](crate::gpu::Rays) of [`VoxelRay`](crate::VoxelRay) or [`WindowRay`](crate::WindowRay) | `rays.rs` | [`raycast_batch`](crate::raycast_batch), [`raycast_window_batch_into`](crate::raycast_window_batch_into) |
//! | [`Sightlines`](crate::gpu::Sightlines) | `sightlines.rs` | [`line_of_sight_batch`](crate::line_of_sight_batch), [`line_of_sight_window_batch_into`](crate::line_of_sight_window_batch_into) |
//! | [`CameraImage`](crate::gpu::CameraImage) | `camera.rs` | [`raycast_camera`](crate::raycast_camera) |
//! | [`AgentPairs`](crate::gpu::AgentPairs) | `agents.rs` | [`agent_visibility`](crate::agent_visibility) |
//! | [`PairsWithin`](crate::gpu::PairsWithin) | `pairs_within.rs` | [`visible_pairs_within`](crate::visible_pairs_within) |
//! | [`SensorSweep`](crate::gpu::SensorSweep) | `sensors.rs` | [`sense`](crate::sense) |
//! | [`BoxCasts`](crate::gpu::BoxCasts) | `boxes.rs` | [`box_cast_batch`](crate::box_cast_batch) |
//!
//! Every kind has every form, because the forms belong to the raycaster and the pending
//! batch, not to the kind: [`GpuRaycaster::submit`](crate::gpu::GpuRaycaster::submit) and
//! [`GpuRaycaster::submit_into`](crate::gpu::GpuRaycaster::submit_into) return a
//! [`PendingBatch`] (taken without blocking, awaited, or waited for),
//! [`GpuRaycaster::cast`](crate::gpu::GpuRaycaster::cast) and
//! [`GpuRaycaster::cast_into`](crate::gpu::GpuRaycaster::cast_into) block, and the `_into`
//! forms reuse the allocation of the answers they are given.
//!
//! # Adding a query kind
//! A kind takes three files:
//! 1. its Rust file in `src/gpu/`: the query type, its [`Query`] impl (`start`: check and
//!    prepare on the host, then start a flight with [`Launch`]), its entry point and that
//!    entry point's own bindings (`ENTRY`, a `layout::Entry`), its upload (the items each
//!    invocation takes: `flight::Upload`, which names its entry point) and the collector that
//!    reads its answers (`pending::Collect` over that upload type: a collector of another
//!    kind's items does not compile);
//! 2. its WGSL file in `shaders/`, with its bindings and its entry point;
//! 3. its registration in `src/gpu.rs`: its `mod` and `pub use` lines, its `ENTRY` in
//!    `ENTRIES` (the device makes a bind group layout for each, and the layout tests check
//!    each binding's number, name and access, and which bindings each entry point uses,
//!    against the shader through naga) and its WGSL file in the shader's stages.
//!
//! A kind whose items need a wire struct or constants of their own declares them in its two
//! files (the Rust twin beside its `ENTRY`, the WGSL one at the top of its shader file) and
//! lists them in its `ENTRY` (`structs`, `constants`, and `shader_only` for constants the host
//! never uses): the layout tests compare each listed struct's size and each constant's value
//! with the shader's through naga, and fail on a shader constant that no list names.
//!
//! The shared stages know nothing of the kinds: `flight` stages, dispatches and reads back any
//! upload, `pending` drives any collector and measures any batch.

use crate::gpu::error::GpuError;
#[cfg(not(target_arch = "wasm32"))]
use crate::gpu::flight::BatchStats;
use crate::gpu::pending::{Launch, PendingBatch};

/// Keeps [`Query`] to voxcast's own kinds: the raycaster relies on how they stage their batches.
pub(super) mod sealed {
    /// Implemented by voxcast's query kinds only.
    pub trait Sealed {}
}

/// A kind of batch query the GPU answers: rays, line-of-sight segments, a camera's pixels,
/// agent pairs, sensor sweeps or box casts (see the table in `src/gpu/query.rs`, and
/// [`GpuRaycaster::submit`](crate::gpu::GpuRaycaster::submit) for how to cast one). A query
/// borrows its inputs for the call that submits it; its answers own everything.
pub trait Query: sealed::Sealed + Sized {
    /// The batch's answers, in the order of the queries.
    type Answers: Default + Send + 'static;
    /// The options it is cast with: [`RaycastOptions`](crate::RaycastOptions), or
    /// [`LineOfSightOptions`](crate::LineOfSightOptions) for line of sight.
    type Options: ?Sized + Sync;

    /// Checks and prepares the queries on the host and starts their batch, filling `reuse`
    /// (cleared first, its allocation kept). Called by
    /// [`GpuRaycaster::submit_into`](crate::gpu::GpuRaycaster::submit_into), which alone makes
    /// the `Launch` it needs (voxcast's own: a query cannot be started any other way).
    ///
    /// # Errors
    /// As [`GpuRaycaster::submit`](crate::gpu::GpuRaycaster::submit).
    fn start(
        self,
        launch: Launch<'_>,
        opts: &Self::Options,
        reuse: Self::Answers,
    ) -> Result<PendingBatch<Self::Answers>, GpuError>;

    /// Casts the queries and waits for the answers, written into `out` (its allocation kept);
    /// returns the batch's cost. Called by
    /// [`GpuRaycaster::cast_into`](crate::gpu::GpuRaycaster::cast_into). A kind may cast a
    /// large batch in bands, preparing the next while the GPU runs the last.
    ///
    /// # Errors
    /// As [`GpuRaycaster::submit`](crate::gpu::GpuRaycaster::submit); `out` is then
    /// unspecified.
    #[cfg(not(target_arch = "wasm32"))]
    fn cast_into(
        self,
        launch: Launch<'_>,
        opts: &Self::Options,
        out: &mut Self::Answers,
    ) -> Result<BatchStats, GpuError> {
        let (answers, stats) = self
            .start(launch, opts, std::mem::take(out))?
            .wait_with_stats()?;
        *out = answers;
        Ok(stats)
    }
}
