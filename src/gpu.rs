//! GPU batch raycasting on wgpu: one DDA per compute invocation, exactly the CPU reference's
//! answers (see the parity contract in the crate docs).
//!
//! The i128 world is split on the host: a [`GpuWorld`] covers a window of chunks from an
//! anchor [`ChunkPos`](crate::ChunkPos), and everything on the GPU is an i32 voxel relative to
//! the window's lowest voxel. Rays that start outside the window of a world uploaded whole are
//! clipped to it on the host, with the same exact stepping as the CPU reference, or answered on
//! the host when they cannot reach it; on a window that follows a center they are answered
//! `Unloaded` at their start (the GPU knows nothing there), and a ray that leaves such a window
//! is answered `Unloaded` where it leaves it ([`GpuRaycaster::upload_window`]).
//!
//! # Casting
//! One [`GpuRaycaster`] casts every kind of query ([`Query`]): [`Rays`], [`Sightlines`],
//! [`CameraImage`], [`AgentPairs`], [`PairsWithin`], [`SensorSweep`] and [`BoxCasts`], each
//! the twin of a CPU call. [`GpuRaycaster::submit`] returns a [`PendingBatch`], a
//! [`std::future::Future`] that any executor can await, and that a frame loop can also
//! take without blocking ([`PendingBatch::try_take`])
#![cfg_attr(
    not(target_arch = "wasm32"),
    doc = "or wait for ([`PendingBatch::wait`]); [`GpuRaycaster::cast`] submits and waits."
)]
#![cfg_attr(
    target_arch = "wasm32",
    doc = "(in a browser nothing may block: batches are awaited)."
)]
//! The `_into` forms reuse the answers' allocations, and each batch reports its own cost
//! ([`BatchStats`], from [`PendingBatch::stats`] once it is done: await the batch through
//! `&mut` to keep it).
//!
//! ```no_run
//! use voxcast::gpu::{GpuConfig, GpuRaycaster, Rays, Sightlines};
//! use voxcast::{LineOfSightOptions, RaycastOptions, VoxelRay, VoxelWorld};
//!
//! # async fn frame(world: &VoxelWorld, rays: &[VoxelRay]) -> Result<(), voxcast::gpu::GpuError> {
//! let gpu = GpuRaycaster::new(GpuConfig::default()).await?;
//! let on_gpu = gpu.upload_world(world)?;
//! // Awaited: the library never blocks the executor's thread.
//! let hits = gpu.submit(Rays(rays), &on_gpu, &RaycastOptions::default())?.await?;
//! // Filling last frame's answers (here a new list), awaited through `&mut` to read its cost.
//! let last: Vec<voxcast::LineOfSight> = Vec::new();
//! let mut pending = gpu.submit_into(Sightlines(rays), &on_gpu, &LineOfSightOptions::default(), last)?;
//! let sight = (&mut pending).await?;
//! let stats = pending.stats().unwrap_or_default();
//! println!("{} answers, {} on the GPU, {:.2} ms", hits.len() + sight.len(), stats.gpu_rays, stats.total_seconds * 1e3);
//! # Ok(()) }
//! ```
//!
//! # The path of a batch
//! [`GpuRaycaster::submit`] checks that the world is its own and hands the query a `Launch`
//! (`pending`); the query's file (`rays`, `sightlines`, `camera`, `agents`, `pairs_within`,
//! `sensors`, `boxes`) checks and prepares its items on the host: rays are validated, split
//! into the window's i32 voxel, stepped to the window where they start outside and encoded in
//! the wire format (`prepare`, `layout`), or on a GPU left for the shader to set up in the
//! caller's order ([`RaySetup`]); camera pixels and sensor rays are made in the shader; agent
//! pairs go up as two indices, box casts as 80 bytes. Each kind starts a `Flight` of its upload
//! (`flight`), which cuts it into dispatches, stages each into a set of `buffers`, records it
//! with the world's buffers (`world`, over `window` and `store`) and hands it to the courier
//! thread (`queue`), which submits it to the `device` and polls until its answers are mapped,
//! then wakes the batch. The batch (`pending`) reads each dispatch back as it finishes, through
//! the kind's collector, which decodes the answers (`decode`) into i128 outcomes in the
//! caller's order. The plumbing follows wgpu's `hello_compute`: buffers (input `STORAGE`,
//! output `STORAGE | COPY_SRC`, readback `MAP_READ | COPY_DST`), pipeline, bind group,
//! dispatch, copy, map, read; on a device that is the CPU the copies are left out
//! ([`DispatchMemory`]).
//!
#![cfg_attr(
    not(target_arch = "wasm32"),
    doc = "Only the calls whose job is to wait block ([`PendingBatch::wait`], [`GpuRaycaster::cast`], [`GpuRaycaster::new_blocking`])."
)]
#![cfg_attr(target_arch = "wasm32", doc = "No call blocks.")]
//! Error scopes are popped without
//! waiting (a scope whose answer is still to come is read with the batch). Who drives the
//! device is a choice ([`Driver`]): voxcast's courier thread, the one place that waits on the
//! device, or the host, with no thread at all: each job runs on the thread that sends it and
//! the host's own polling of the device (a browser's event loop, a game's frame) maps the
//! answers and wakes the batches. (Adding a query kind: `src/gpu/query.rs`; the kinds are
//! registered at the end of this file.)
//!
//! # On the web
//! On `wasm32-unknown-unknown` (a browser's WebGPU) voxcast starts no thread and nothing
//! blocks: the host drives the device ([`Driver::Host`] is the default there) and a batch is
//! awaited, `gpu.submit(query, &world, &opts)?.await`. The waiting calls (`cast`, `cast_into`,
//! `new_blocking`, `PendingBatch::wait`) do not exist there, and `from_device` is `async`.
//! The CPU reference runs on the page's one thread (its batch calls are rayon loops, which run
//! on the calling thread where there are no worker threads). Each dispatch there writes a set
//! of buffers of its own instead of one taken from the pool. `web/` holds a page that shows it
//! and its test (`scripts/web.sh`).
//!
//! The modules, each importing only those before it: `layout` and `error`; `queue`
//! (submissions and world writes, in order); `device`; `window`, `store`, `follow` and `world`
//! (the GPU worlds); `prepare` and `decode`; `buffers` and `flight`; `pending`; `query`; the
//! kinds (`rays`, `sightlines`, `camera`, `agents`, `pairs_within`, `sensors`, `boxes`);
//! `probe` (the self-check at creation); `raycaster`.

mod agents;
mod boxes;
mod buffers;
mod camera;
mod decode;
mod device;
mod error;
mod flight;
mod follow;
mod layout;
mod pairs_within;
mod pending;
mod prepare;
mod probe;
mod query;
mod queue;
mod raycaster;
mod rays;
mod sensors;
mod sightlines;
mod store;
mod window;
mod world;

/// The wgpu this crate is built on, for [`GpuRaycaster::from_device`]: a device must come from
/// this same version of wgpu.
pub use wgpu;

pub use agents::{AgentPairs, GpuAgents, Visibility};
pub use boxes::BoxCasts;
pub use camera::{CameraImage, CameraRows};
pub use device::{DispatchMemory, Driver, GpuConfig, RaySetup, SelfCheck};
pub use error::GpuError;
pub use flight::{BatchStats, KeptMemory};
pub use follow::WindowMove;
pub use layout::MAX_DISPATCH_RAYS;
#[cfg(test)]
pub(crate) use layout::shader_place;
pub use pairs_within::PairsWithin;
pub use pending::PendingBatch;
pub use probe::SelfCheckReport;
pub use query::Query;
pub use raycaster::{BatchSetup, GpuRaycaster};
pub use rays::Rays;
pub use sensors::{GpuSensorRig, SensorSweep};
pub use sightlines::Sightlines;
pub use world::GpuWorld;

// The registration of the query kinds: each kind's module is declared above, its public types
// are re-exported above, its entry point is listed in `ENTRIES` and its WGSL file in the
// shader's stages below. Nothing else names the kinds.

/// Every compute entry point, each declared by its kind's file with its own bindings: the
/// device makes a bind group layout for each, and the layout tests check each against the
/// shader.
const ENTRIES: [layout::Entry; 5] = [
    rays::ENTRY,
    camera::ENTRY,
    agents::ENTRY,
    sensors::ENTRY,
    boxes::ENTRY,
];

/// Declares `SHADER_SOURCE`, the stage files joined in the order given, and `SHADER_STAGES`,
/// their names, from one list.
macro_rules! shader_stages {
    ($($stage:literal),+ $(,)?) => {
        /// The WGSL source of the compute shader: the stage files of `shaders/` joined into one
        /// module, in the order that `src/gpu/layout.rs` gives with its reason.
        pub const SHADER_SOURCE: &str =
            concat!($(include_str!(concat!("../shaders/", $stage, ".wgsl"))),+);

        /// The stage files of [`SHADER_SOURCE`], in its order (`shaders/<stage>.wgsl`).
        #[cfg(test)]
        const SHADER_STAGES: &[&str] = &[$($stage),+];
    };
}

// The shared stages first (`layout` to `cast`), then one file per query kind.
shader_stages!(
    "layout", "exact", "window", "dda", "shapes", "ties", "cast", "rays", "camera", "agents",
    "sensors", "boxes",
);
