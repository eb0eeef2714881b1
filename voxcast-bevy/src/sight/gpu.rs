//! The GPU side of sight batches (the `gpu` feature): the app's raycaster as a resource, and
//! the plugin's own copy of the world on it, kept current from the world's change list.

use std::sync::Mutex;
use voxcast::gpu::Sightlines;

use bevy_ecs::prelude::*;
use voxcast::gpu::{GpuError, GpuRaycaster, GpuWorld, PendingBatch};
use voxcast::{ChunkPos, LineOfSight, VoxelWorld};

/// The app's [`GpuRaycaster`], as a resource: while it exists, sight batches run on it (see
/// [`SightStatus`](crate::SightStatus) for how that went). Without it, the CPU answers; the
/// answers are the same either way.
///
/// The plugin uploads [`Voxels`](crate::Voxels) to it on the first batch and then re-uploads
/// only the chunks that changed. Inserting another `VoxelGpu` uploads the world again.
///
/// # A world streamed around the player
/// [`VoxelGpu::new`] uploads the box around every loaded chunk, and uploads it whole again
/// when a chunk is loaded outside it: right for a world of fixed size. For a world streamed
/// around a player, [`VoxelGpu::with_window`] keeps a box of a fixed size on the GPU that
/// follows the entity with a [`GpuWindowFocus`] ([`GpuRaycaster::upload_window`]): a move uploads
/// the chunks that enter the box and nothing else. A segment that leaves the box is completed
/// on the CPU when the batch is collected
/// ([`Sightlines::complete`](voxcast::gpu::Sightlines::complete)), so
/// every answer is still the CPU reference's ([`SightStatus::outside_window`](crate::SightStatus)
/// counts them).
///
/// # Sharing Bevy's device
/// An app that renders with Bevy gives the raycaster Bevy's own wgpu device and queue, so
/// that the world and the batches live beside the renderer's buffers instead of on a second
/// device. Bevy 0.20 renders with wgpu 30, the wgpu of voxcast, and puts both handles in the
/// main world as resources when its `RenderPlugin` finishes, so a `Startup` system can
/// make the raycaster:
///
/// ```ignore
/// // Not compiled here: this crate builds with Rust 1.95 (Bevy 0.20's ECS crates need no
/// // more), while `bevy_render` 0.20 and the `bevy` crate pull in crates that need Rust
/// // 1.97.1, so neither can be a dependency here, not even of a doctest.
/// use bevy::prelude::*;
/// use bevy::render::renderer::{RenderDevice, RenderQueue};
/// use voxcast::gpu::GpuRaycaster;
/// use voxcast_bevy::VoxelGpu;
///
/// fn share_bevys_device(
///     mut commands: Commands,
///     device: Res<RenderDevice>,
///     queue: Res<RenderQueue>,
/// ) {
///     // `RenderQueue` derefs to `wgpu::Queue`.
///     match GpuRaycaster::from_device(device.wgpu_device(), &queue, GpuConfig::default()) {
///         Ok(gpu) => commands.insert_resource(VoxelGpu::new(gpu)),
///         Err(e) => warn!("line of sight stays on the CPU: {e}"),
///     }
/// }
///
/// App::new()
///     .add_plugins((DefaultPlugins, voxcast_bevy::VoxcastPlugin))
///     .add_systems(Startup, share_bevys_device)
///     .run();
/// ```
///
/// On the web (`wasm32`) `from_device` is `async`, as nothing may block there: spawn it
/// (`wasm_bindgen_futures::spawn_local`) with clones of the two handles, put the raycaster it
/// makes into a shared slot, and insert `VoxelGpu` from a system once it is there (the
/// `web_sight` example of this crate); sight batches run on the CPU until then.
///
/// The device keeps the limits Bevy requested for it (`WgpuSettings::limits`); with wgpu's
/// defaults about 20,000 terrain chunks stored voxel by voxel fit (see
/// [`GpuRaycaster::from_device`]), and a larger world gets
/// [`GpuError::LimitExceeded`] in [`SightStatus::gpu_error`](crate::SightStatus) while the
/// CPU answers.
#[derive(Resource, Debug)]
pub struct VoxelGpu {
    raycaster: GpuRaycaster,
    /// The half extent of a window that follows the [`GpuWindowFocus`], in chunks.
    window: Option<[u32; 3]>,
    /// No sight batch has seen it yet: the world must be uploaded to it. A flag of the value
    /// rather than Bevy's "added" tick, which a resource inserted over another keeps.
    new: bool,
}

impl VoxelGpu {
    /// Sight batches on `raycaster` from the next one on.
    #[must_use]
    pub fn new(raycaster: GpuRaycaster) -> Self {
        Self {
            raycaster,
            window: None,
            new: true,
        }
    }

    /// Sight batches on `raycaster` from the next one on, against a box of chunks within
    /// `half_extent` chunks on each axis of the [`GpuWindowFocus`] entity's chunk (see
    /// [`GpuRaycaster::upload_window`]), which follows it from batch to batch. Without a focus the
    /// box stays where it is (around chunk `(0, 0, 0)` at first).
    #[must_use]
    pub fn with_window(raycaster: GpuRaycaster, half_extent: [u32; 3]) -> Self {
        Self {
            window: Some(half_extent),
            ..Self::new(raycaster)
        }
    }

    /// The half extent given to [`VoxelGpu::with_window`]; `None` for [`VoxelGpu::new`].
    #[must_use]
    pub fn window(&self) -> Option<[u32; 3]> {
        self.window
    }

    /// Gives the raycaster back.
    #[must_use]
    pub fn into_inner(self) -> GpuRaycaster {
        self.raycaster
    }

    /// Whether the raycaster is new to the plugin (and forgets it).
    pub(crate) fn take_new(&mut self) -> bool {
        std::mem::take(&mut self.new)
    }
}

impl std::ops::Deref for VoxelGpu {
    type Target = GpuRaycaster;

    fn deref(&self) -> &GpuRaycaster {
        &self.raycaster
    }
}

/// For the raycaster's settings (`set_max_dispatch_rays`); the plugin keeps its upload.
impl std::ops::DerefMut for VoxelGpu {
    fn deref_mut(&mut self) -> &mut GpuRaycaster {
        &mut self.raycaster
    }
}

/// The entity whose position the GPU window of [`VoxelGpu::with_window`] follows (the player,
/// the camera): the window centers on the chunk of its [`VoxelPosition`](crate::VoxelPosition)
/// at each sight batch. With several, one of them; with none, the window stays.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuWindowFocus;

/// A submitted batch: the GPU's work, the requests it answers, and the upload it was cast on
/// where that is no longer the current one (kept to complete the segments that left its
/// window).
type InFlight = (
    PendingBatch<Vec<LineOfSight>>,
    super::Batch,
    Option<GpuWorld>,
);

/// The world as uploaded to the [`VoxelGpu`], with the chunks changed since.
#[derive(Resource, Debug, Default)]
pub(crate) struct GpuSightWorld {
    /// The upload; `None` before the first GPU batch and after a failure or a new world.
    world: Option<GpuWorld>,
    /// Chunks changed since `world` was last brought up to date.
    pending: Vec<ChunkPos>,
    /// The last failure: the GPU is not asked again until the world or the raycaster changes.
    failed: Option<GpuError>,
    /// The batch submitted in the last `Sight` and not answered yet (in a `Mutex` only to
    /// be `Sync`, as a resource must: it is reached through `&mut self` alone).
    in_flight: Mutex<Option<InFlight>>,
}

impl GpuSightWorld {
    /// Forgets the upload (the world resource or the raycaster was replaced): the next batch
    /// uploads the world whole.
    /// A batch in flight is kept: the GPU answers it as the world was when it was submitted,
    /// and its segments that left a window are completed on the CPU with the world as it is
    /// when the batch is collected.
    pub(crate) fn reset(&mut self) {
        let old = self.world.take();
        let in_flight = self
            .take_in_flight()
            .map(|(pending, batch, kept)| (pending, batch, kept.or(old)));
        *self = Self {
            in_flight: Mutex::new(in_flight),
            ..Self::default()
        };
    }

    /// The current upload, if there is one.
    pub(crate) fn upload(&self) -> Option<&GpuWorld> {
        self.world.as_ref()
    }

    /// Keeps `pending`, the GPU's work on `batch`, until it is collected.
    pub(super) fn set_in_flight(
        &mut self,
        pending: PendingBatch<Vec<LineOfSight>>,
        batch: super::Batch,
    ) {
        *self.in_flight() = Some((pending, batch, None));
    }

    /// Puts back a batch taken from flight that the GPU has not finished.
    #[cfg(target_arch = "wasm32")]
    pub(super) fn put_back(&mut self, in_flight: InFlight) {
        *self.in_flight() = Some(in_flight);
    }

    /// The batch in flight, taken.
    pub(super) fn take_in_flight(&mut self) -> Option<InFlight> {
        self.in_flight().take()
    }

    fn in_flight(&mut self) -> &mut Option<InFlight> {
        self.in_flight
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The GPU failed on a batch: the upload is dropped and the GPU not asked again until the
    /// world or the raycaster changes.
    pub(super) fn failed(&mut self, e: GpuError) {
        self.reset();
        self.failed = Some(e);
    }

    /// `chunks` changed in the world (from its change list, which only the plugin takes).
    pub(crate) fn chunks_changed(&mut self, chunks: &[ChunkPos]) {
        if chunks.is_empty() {
            return;
        }
        // Without an upload there is nothing to update: the next upload takes the world whole.
        if self.world.is_some() {
            self.pending.extend_from_slice(chunks);
        }
        self.failed = None;
    }

    /// Line of sight for `batch`'s segments on `gpu`, submitted after bringing the upload up
    /// to date (and, for a window, moving it to `focus`): returns at once, the GPU's work
    /// pending. Segments that leave the window are completed on the CPU when the batch is
    /// collected.
    ///
    /// # Errors
    /// The upload's or the submission's [`GpuError`], or the last one again while neither the
    /// world nor the raycaster changed since.
    pub(crate) fn submit(
        &mut self,
        gpu: &VoxelGpu,
        world: &VoxelWorld,
        batch: &mut super::Batch,
        focus: Option<ChunkPos>,
    ) -> Result<PendingBatch<Vec<LineOfSight>>, GpuError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let result = self.synced(gpu, world, focus).and_then(|gpu_world| {
            if gpu_world.center().is_some() {
                batch.set_window(gpu_world.loadable_chunks());
            }
            gpu.submit(Sightlines(batch.gpu_rays()), gpu_world, &batch.options)
        });
        if let Err(e) = &result {
            self.failed(e.clone());
        }
        result
    }

    /// The upload, made or brought up to date with the pending chunks, and for a window moved
    /// to `focus`.
    fn synced(
        &mut self,
        gpu: &VoxelGpu,
        world: &VoxelWorld,
        focus: Option<ChunkPos>,
    ) -> Result<&GpuWorld, GpuError> {
        let gpu_world = match self.world.take() {
            Some(mut gpu_world) => {
                if !self.pending.is_empty() {
                    self.pending.sort_unstable();
                    self.pending.dedup();
                    // A chunk loaded outside the uploaded box makes this a whole upload; a
                    // window leaves it to the moves.
                    gpu_world.update_or_rebuild(world, &self.pending)?;
                    self.pending.clear();
                }
                if let Some(center) = focus.filter(|_| gpu_world.center().is_some()) {
                    gpu_world.recenter(world, center)?;
                }
                gpu_world
            }
            None => {
                self.pending.clear();
                match gpu.window {
                    Some(half) => {
                        let center = focus.unwrap_or(ChunkPos::new(0, 0, 0));
                        gpu.upload_window(world, center, half)?
                    }
                    None => gpu.upload_world(world)?,
                }
            }
        };
        Ok(self.world.insert(gpu_world))
    }
}
