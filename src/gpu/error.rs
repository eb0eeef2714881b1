//! What can go wrong on the GPU path: [`GpuError`], whose messages say what happened and
//! what to do.

use crate::camera::CameraError;
use crate::coords::ChunkPos;

/// How to get an adapter, natively.
#[cfg(not(target_arch = "wasm32"))]
const NO_ADAPTER_ADVICE: &str = "To get one, install a Vulkan driver (Debian or Ubuntu, software: \
     `apt-get install mesa-vulkan-drivers`) or choose one with WGPU_BACKEND or WGPU_ADAPTER_NAME.";
/// How to get an adapter in a browser.
#[cfg(target_arch = "wasm32")]
const NO_ADAPTER_ADVICE: &str = "This browser offers no WebGPU adapter: use one with WebGPU \
     enabled (Chrome and Edge from 113, Safari from 26, Firefox from 141 on Windows; Chromium on \
     Linux with --enable-unsafe-webgpu), on a page served over https or from localhost.";

/// What can go wrong on the GPU path. Each message says what happened and, where the caller
/// can do something about it, what.
///
/// Non-exhaustive: a later release may add variants, so a `match` on it needs a wildcard arm.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GpuError {
    /// No adapter was found. The message says how to get one where voxcast runs (natively: a
    /// Vulkan driver, `WGPU_BACKEND`; in a browser: one with WebGPU enabled).
    #[error("no GPU adapter found. {advice} wgpu says: {0}", advice = NO_ADAPTER_ADVICE)]
    NoAdapter(String),
    /// `WGPU_ADAPTER_NAME` names no available adapter.
    #[error("WGPU_ADAPTER_NAME={wanted:?} matches no adapter; available: {available}")]
    AdapterNotFound {
        /// The requested name.
        wanted: String,
        /// The adapters that were found.
        available: String,
    },
    /// The device could not be created.
    #[error(
        "could not create a GPU device: {0}. Choose another adapter with WGPU_BACKEND / \
         WGPU_ADAPTER_NAME, or use the CPU reference (`raycast_batch`)"
    )]
    RequestDevice(String),
    /// The device given to [`GpuRaycaster::from_device`](crate::gpu::GpuRaycaster::from_device)
    /// cannot run the shader: one of its limits (named in the message) is below what the shader
    /// needs.
    #[error(
        "the wgpu device cannot run voxcast's compute shader ({0}): create it with at least \
         wgpu::Limits::default(), or let GpuRaycaster::new create a device"
    )]
    UnsuitableDevice(String),
    /// The world needs more than a device limit allows, or a window wider than voxcast's i32
    /// window-relative coordinates hold. The window is dense: from
    /// [`GpuRaycaster::upload_world`](crate::gpu::GpuRaycaster::upload_world) it spans the box
    /// around every loaded chunk, so chunks far apart make it huge even when few are loaded; from
    /// [`GpuRaycaster::upload_window`](crate::gpu::GpuRaycaster::upload_window) it is the box its
    /// half extent gives.
    #[error(
        "{what} needs {} but the limit is {limit}: a GpuWorld holds a whole box of chunks \
         (upload_world: the box around the loaded chunks, so unload chunks far from the rest or \
         keep far-apart regions in separate VoxelWorlds; upload_window: its half extent, so \
         choose a smaller one); a device given to GpuRaycaster::from_device has the limits it \
         was created with, so request it with the adapter's own (adapter.limits())",
        needed_text(*.needed)
    )]
    LimitExceeded {
        /// Which resource.
        what: &'static str,
        /// How much it needs; `u64::MAX` stands for that much or more (a window across most
        /// of the i128 world spans up to 2^123 chunks).
        needed: u64,
        /// The limit: the device's, or for the window extent voxcast's own.
        limit: u64,
    },
    /// A camera of more than `u32::MAX` pixels (the count is given): pixel indices travel as
    /// u32 in the shader.
    #[error(
        "a GPU camera renders at most 4294967295 (u32::MAX) pixels, this one has {0}: render \
         the image in parts"
    )]
    BatchTooLarge(usize),
    /// `update_chunks` named a chunk outside the uploaded window, or a loaded chunk in the window's
    /// margin, of a world made by
    /// [`GpuRaycaster::upload_world`](crate::gpu::GpuRaycaster::upload_world) (see
    /// [`GpuWorld::update_chunks`](crate::gpu::GpuWorld::update_chunks)).
    #[error(
        "chunk {0:?} lies outside the chunks this GpuWorld can hold (the world's loaded bounds \
         when it was built): upload it again with GpuRaycaster::upload_world"
    )]
    ChunkOutsideWindow(ChunkPos),
    /// The [`GpuWorld`](crate::gpu::GpuWorld) was uploaded with another
    /// [`GpuRaycaster`](crate::gpu::GpuRaycaster) (another device); a world is used with the
    /// raycaster that built it.
    #[error(
        "this GpuWorld was uploaded with another GpuRaycaster: upload the world with the \
         raycaster that casts against it (gpu.upload_world(&world))"
    )]
    WorldFromAnotherDevice,
    /// [`GpuRaycaster::upload_window`](crate::gpu::GpuRaycaster::upload_window) or
    /// [`GpuWorld::recenter`](crate::gpu::GpuWorld::recenter) was given a center that is no chunk
    /// of the i128 world (an index outside [`ChunkPos::MIN_INDEX`]`..=`[`ChunkPos::MAX_INDEX`]).
    #[error(
        "center {0:?} is no chunk of the i128 world: chunk indices lie in \
         ChunkPos::MIN_INDEX..=ChunkPos::MAX_INDEX (the chunk of a voxel: WorldPos::chunk)"
    )]
    CenterOutsideWorld(ChunkPos),
    /// [`GpuWorld::recenter`](crate::gpu::GpuWorld::recenter) on a world made by
    /// [`GpuRaycaster::upload_world`](crate::gpu::GpuRaycaster::upload_world), whose window is the
    /// box around the loaded chunks and does not move.
    #[error(
        "this GpuWorld covers the loaded chunks' box (GpuRaycaster::upload_world) and cannot \
         move: upload it with GpuRaycaster::upload_window to follow a center"
    )]
    WindowCannotMove,
    /// A batch still in flight would have seen an update or move of its world in a later dispatch
    /// (a batch of more than two dispatches, see
    /// [`GpuRaycaster::set_max_dispatch_rays`](crate::gpu::GpuRaycaster::set_max_dispatch_rays)):
    /// its answers would mix two worlds, so it has none. Take a large batch before changing its
    /// world, or cast it again.
    #[error(
        "the GpuWorld changed while this batch was in flight, between its dispatches: take \
         large batches before updating or moving their world, or cast the batch again"
    )]
    WorldChanged,
    /// The [`GpuAgents`](crate::gpu::GpuAgents) were uploaded for the window the world had before
    /// it moved ([`GpuWorld::recenter`](crate::gpu::GpuWorld::recenter)): their eyes are relative
    /// to the window.
    #[error(
        "these GpuAgents were uploaded before their GpuWorld moved (GpuWorld::recenter): \
         upload them again with GpuAgents::update"
    )]
    AgentsForAnotherWindow,
    /// The results of one call (the count of outcomes is given) do not fit in host memory.
    #[error(
        "the results of {0} rays (or pixels) could not be allocated in host memory: split the \
         batch or render the image in parts"
    )]
    OutputTooLarge(u64),
    /// The device reported a validation error, ran out of memory, or was lost.
    #[error(
        "GPU error: {0} (out of memory: cast smaller dispatches with \
         GpuRaycaster::set_max_dispatch_rays or upload fewer chunks; device lost: create a new \
         GpuRaycaster)"
    )]
    Device(String),
    /// The device's answers to the self-check at creation differ from the CPU reference (the
    /// first difference is given): voxcast's answers on it would not be exact.
    #[error(
        "this GPU's answers differ from the CPU reference, so voxcast's would not be exact on it: \
         {0}. Please report it with the adapter (GpuRaycaster::adapter_info); to use the GPU \
         anyway, create the raycaster with GpuConfig {{ self_check: SelfCheck::AllowUnverified, \
         ..GpuConfig::default() }}"
    )]
    SelfCheckFailed(String),
    /// The camera cannot give an image (a hand-edited one: [`Camera::new`](crate::Camera::new)
    /// refuses the same).
    #[error("bad camera: {0}")]
    Camera(CameraError),
    /// A [`PendingBatch`](crate::gpu::PendingBatch)'s answers were asked for again after
    /// [`PendingBatch::try_take`](crate::gpu::PendingBatch::try_take) had returned them.
    #[error(
        "this batch's answers were taken already (try_take returned them): keep what it \
         returned, and submit a new batch for new answers"
    )]
    AlreadyTaken,
    /// A box cast needs more loop iterations than a software driver lets a shader run: Mesa's
    /// llvmpipe (lavapipe) ends a shader's loops after 65535 iterations for each group of
    /// invocations it runs together, so on such a device (`wgpu::DeviceType::Cpu`) a cast
    /// may look at about 8,000 voxels (its start box, then every layer it enters; a shaped
    /// voxel counts as `2 + 4·n` voxels, `n` the boxes of its shape) before the batch fails
    /// with this error instead of answering wrongly.
    #[error(
        "a box cast looks at more voxels than this software GPU lets a shader loop over \
         (Mesa's llvmpipe: 65535 loop iterations per group of invocations): cast long sweeps \
         of large boxes on the CPU (box_cast_batch), or on a hardware GPU"
    )]
    BoxCastTooLong,
    /// The GPU returned a result the host cannot decode (a bug: please report it).
    #[error("internal GPU error (a bug in voxcast: please report it): {0}")]
    Internal(String),
}

/// [`GpuError::LimitExceeded`]'s `needed` as its message says it.
fn needed_text(needed: u64) -> String {
    if needed == u64::MAX {
        format!("{needed} or more")
    } else {
        needed.to_string()
    }
}

/// A device's error (validation, out of memory, a failed mapping) as a [`GpuError::Device`].
pub(super) fn device_error(e: impl std::fmt::Display) -> GpuError {
    GpuError::Device(e.to_string())
}

/// An error scope's outcome still to come (on the web a scope answers through the browser's
/// event loop).
pub(super) type ScopeFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Option<wgpu::Error>> + Send>>;

/// A popped error scope: its outcome where the device has it at once (every native backend),
/// else the future that will tell.
pub(super) enum Popped {
    /// The scope's error, or `None` for none.
    Now(Option<wgpu::Error>),
    /// Not known yet.
    Later(ScopeFuture),
}

/// Pops an error scope without blocking: its future polled once.
pub(super) fn pop_now(scope: wgpu::ErrorScopeGuard) -> Popped {
    let mut future: ScopeFuture = Box::pin(scope.pop());
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(e) => Popped::Now(e),
        std::task::Poll::Pending => Popped::Later(future),
    }
}

/// The first error of `scopes` known now; scopes whose outcome is still to come are kept in
/// `later`.
pub(super) fn first_error(
    scopes: impl IntoIterator<Item = wgpu::ErrorScopeGuard>,
    later: &mut Vec<ScopeFuture>,
) -> Option<wgpu::Error> {
    let mut first = None;
    for scope in scopes {
        match pop_now(scope) {
            Popped::Now(e) => first = first.or(e),
            Popped::Later(f) => later.push(f),
        }
    }
    first
}

/// The first error among `later` that has come by now; those still to come stay.
pub(super) fn settled_error(later: &mut Vec<ScopeFuture>) -> Option<wgpu::Error> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let mut first = None;
    later.retain_mut(|f| match f.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(e) => {
            first = first.take().or(e);
            false
        }
        std::task::Poll::Pending => true,
    });
    first
}

/// A creation call's error scope, popped without blocking: its error where the device knows it
/// at once (every native backend). Where it is still to come (the web), `None`: a buffer or
/// pipeline that failed is invalid, and the first batch that binds it fails with the device's
/// error, which that batch's own scopes catch.
pub(super) fn error_now(scope: wgpu::ErrorScopeGuard) -> Option<wgpu::Error> {
    match pop_now(scope) {
        Popped::Now(e) => e,
        Popped::Later(_) => None,
    }
}
