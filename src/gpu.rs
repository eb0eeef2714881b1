//! GPU batch raycasting on wgpu: one DDA per compute invocation, exactly the CPU reference's
//! answers (see the parity contract in the crate docs).
//!
//! The i128 world is split on the host: a [`GpuWorld`] covers a window of chunks from an
//! anchor [`ChunkPos`](crate::ChunkPos), and everything on the GPU is an i32 voxel relative to
//! the window's lowest voxel. Rays that start outside the window of a world uploaded whole are
//! clipped to it on the host, with the same exact stepping as the CPU reference, or answered on
//! the host when they cannot reach it; on a window that follows a centre they are answered
//! `Unloaded` at their start (the GPU knows nothing there), and a ray that leaves such a window
//! is answered `Unloaded` where it leaves it ([`GpuRaycaster::upload_window`]).
//!
//! # The path of a batch
//! A call of [`GpuRaycaster`] (`raycaster.rs`, every public call) checks its input; `prepare`
//! validates each ray, splits it into the window's i32 voxel, steps it to the window where it
//! starts outside, encodes it in the wire format (`layout`) and orders the uploaded rays for
//! coherence, or on a GPU leaves rays that start in the window for the shader to set up, in
//! the caller's order ([`RaySetup`]); `flight` cuts the batch into dispatches, stages each into a set of `buffers`,
//! records it with the world's buffers (`world`, over `window` and `store`) and hands it to the
//! courier thread (`queue`), which submits it to the `device` and polls until its answers are
//! mapped; `answers` reads each dispatch back as it finishes and decodes its hits into i128
//! outcomes in the caller's order, which the [`PendingBatch`] returns. Camera pixels skip the
//! ray upload (the shader makes them); agent pairs (`agents`) upload two indices a pair, and
//! sensor rigs (`sensors`) a pose of 32 bytes an agent; box casts (`boxes`) go up prepared,
//! 80 bytes a cast. The
//! plumbing follows wgpu's `hello_compute`: buffers (input `STORAGE`, output `STORAGE |
//! COPY_SRC`, readback `MAP_READ | COPY_DST`), pipeline, bind group, dispatch, copy, map, read;
//! on a device that is the CPU the copies are left out ([`DispatchMemory`]).
//!
//! The modules, each importing only those before it: `layout` and `error`; `queue`
//! (submissions and world writes, in order); `device`; `window`, `store`, `follow` and `world`
//! (the GPU worlds); `prepare`; `buffers` and `flight`; `answers`; `agents`, `sensors` and `boxes`;
//! `probe` (the self-check at creation); `raycaster`.

mod agents;
mod answers;
mod boxes;
mod buffers;
mod decode;
mod device;
mod error;
mod flight;
mod follow;
mod layout;
mod prepare;
mod probe;
mod queue;
mod raycaster;
mod sensors;
mod store;
mod window;
mod world;

/// The wgpu this crate is built on, for [`GpuRaycaster::from_device`]: a device must come from
/// this same version of wgpu.
pub use wgpu;

pub use agents::{GpuAgents, Visibility};
pub use answers::PendingBatch;
pub use device::{DispatchMemory, GpuConfig, RaySetup, SelfCheck};
pub use error::GpuError;
pub use flight::{BatchStats, KeptMemory};
pub use follow::WindowMove;
#[cfg(test)]
pub(crate) use layout::shader_place;
pub use layout::{MAX_DISPATCH_RAYS, SHADER_SOURCE};
pub use probe::SelfCheckReport;
pub use raycaster::GpuRaycaster;
pub use sensors::GpuSensorRig;
pub use world::GpuWorld;
