//! `GpuWorld`: a window of a `VoxelWorld` in GPU buffers (its chunk table and stored chunks),
//! and its updates and moves.

use std::sync::Arc;

use crate::coords::{ChunkPos, VoxelBox, WorldPos};
use crate::gpu::device::Device;
use crate::gpu::error::{GpuError, device_error};
use crate::gpu::follow::{self, WindowMove};
use crate::gpu::layout::{FLAG_SHAPES, FLAG_STEP_EMPTY_BRICKS, GpuParams, TAG_UNLOADED};
use crate::gpu::queue::{WorldSync, WorldWrite};
use crate::gpu::store::{ChunkStore, StoreChanges, create_storage, entry_of};
use crate::gpu::window::{MAX_WINDOW_CHUNKS, Window, for_each_in};
use crate::ray::RaycastOutcome;
use crate::world::{ChunkView, ShapeTable, VoxelWorld};

/// A window of a [`VoxelWorld`] uploaded to the GPU: a chunk table plus, per chunk that is not
/// one id throughout, its occupancy bits, brick summary and packed ids. Uniform chunks (all
/// air, all stone, ...) take one table entry and no storage. After the table's chunk entries
/// comes one 16-byte record per region of `4×4×4` chunks that the window touches (which of its
/// chunks block a run of empty chunks), kept current by every update.
///
/// Two kinds of window:
/// - [`GpuRaycaster::upload_world`](crate::gpu::GpuRaycaster::upload_world): the box around every
///   loaded chunk, for a world that stays within it (edits and loads inside it go through
///   [`GpuWorld::update_chunks`]);
/// - [`GpuRaycaster::upload_window`](crate::gpu::GpuRaycaster::upload_window): a box of a fixed
///   size around a center that the caller moves ([`GpuWorld::recenter`]), for a world streamed
///   around a player. A move uploads only the chunks that enter the window.
///
/// A stored chunk takes its `32³` occupancy bits (4 KiB), a 16-byte slot record and its ids
/// packed as narrowly as its ids allow, with `8³` bricks of one id stored as that id alone
/// ([`GpuWorld::stored_bytes`] has the total). Its `Debug` output is a summary (anchor,
/// size, stored chunks, bytes), not the table.
pub struct GpuWorld {
    /// The device of the raycaster that uploaded it.
    device: Arc<Device>,
    pub(super) window: Window,
    /// The window's half extent in chunks and its center as last given, where it follows a
    /// center (`GpuRaycaster::upload_window`).
    following: Option<([u32; 3], ChunkPos)>,
    table: wgpu::Buffer,
    store: ChunkStore,
    /// The table as last written: chunk entries, then region records.
    host_table: Vec<u32>,
    pub(super) sync: Arc<WorldSync>,
    /// Whether much of the stored chunks' air lies in empty bricks, so that long rays skip
    /// them ([`GpuWorld::skips_empty_bricks`]).
    bricks_worth_skipping: bool,
    /// The choice set by [`GpuWorld::set_skip_empty_bricks`]; `None`: made from the chunks.
    skip_bricks_set: Option<bool>,
    /// Bytes written to the device since the world was built.
    uploaded: u64,
    /// The shape table as the shader reads it (`shaders/shapes.wgsl`), and the table it was
    /// made from.
    shapes: wgpu::Buffer,
    host_shapes: ShapeTable,
}

impl Drop for GpuWorld {
    fn drop(&mut self) {
        // Cached bind groups would keep the world's buffers alive.
        let buffers = self.buffers();
        self.device.bind_groups.forget(&buffers.each_ref());
    }
}

impl std::fmt::Debug for GpuWorld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuWorld")
            .field("anchor", &self.window.anchor)
            .field("dims", &self.window.dims)
            .field("following", &self.following)
            .field("stored_chunks", &self.stored_chunks())
            .field("memory_bytes", &self.memory_bytes())
            .field("skips_empty_bricks", &self.skips_empty_bricks())
            .finish_non_exhaustive()
    }
}

impl GpuWorld {
    /// The world of [`GpuRaycaster::upload_world`](crate::gpu::GpuRaycaster::upload_world):
    /// the window around `world`'s loaded chunks.
    pub(super) fn from_world(device: &Arc<Device>, world: &VoxelWorld) -> Result<Self, GpuError> {
        let origin = ChunkPos::new(0, 0, 0);
        let window = Window::around(world.loaded_chunk_bounds().unwrap_or((origin, origin)))
            .map_err(|span| GpuError::LimitExceeded {
                what: "window extent in chunks",
                needed: u64::try_from(span).unwrap_or(u64::MAX),
                limit: u64::from(MAX_WINDOW_CHUNKS),
            })?;
        Self::build(device, world, window, None)
    }

    /// The world of [`GpuRaycaster::upload_window`](crate::gpu::GpuRaycaster::upload_window):
    /// the window of `half_extent` chunks around `center`, which follows it.
    pub(super) fn with_window(
        device: &Arc<Device>,
        world: &VoxelWorld,
        center: ChunkPos,
        half_extent: [u32; 3],
    ) -> Result<Self, GpuError> {
        if !center.is_in_world() {
            return Err(GpuError::CenterOutsideWorld(center));
        }
        for &h in &half_extent {
            let span = 2 * u64::from(h) + 3;
            if span >= u64::from(MAX_WINDOW_CHUNKS) {
                return Err(GpuError::LimitExceeded {
                    what: "window extent in chunks",
                    needed: span,
                    limit: u64::from(MAX_WINDOW_CHUNKS),
                });
            }
        }
        Self::build(
            device,
            world,
            Window::following(center, half_extent),
            Some((half_extent, center)),
        )
    }

    /// Uploads the chunks of `world` that `window` may hold.
    fn build(
        device: &Arc<Device>,
        world: &VoxelWorld,
        window: Window,
        following: Option<([u32; 3], ChunkPos)>,
    ) -> Result<Self, GpuError> {
        let max_binding = device.max_binding();
        // Chunk entries, then one four-word record per region.
        let words = window.table_words();
        let bytes = words.saturating_mul(4);
        if bytes > max_binding {
            return Err(GpuError::LimitExceeded {
                what: "chunk table (bytes)",
                needed: bytes,
                limit: max_binding,
            });
        }
        let mut host_table = Vec::new();
        host_table
            .try_reserve_exact(words as usize)
            .map_err(|_| GpuError::OutputTooLarge(words))?;
        host_table.resize(words as usize, TAG_UNLOADED);
        let mut dense = Vec::new();
        for (pos, chunk) in world.chunks() {
            if !window.may_load(pos) {
                continue;
            }
            let i = window
                .entry_index(pos)
                .ok_or_else(|| GpuError::Internal("chunk outside the window".into()))?;
            let (entry, d) = entry_of(Some(chunk.view()));
            host_table[i] = entry;
            if let Some(d) = d {
                dense.push((pos, d));
            }
        }
        let changes = StoreChanges::new(dense, Vec::new());
        let heap_words: u64 = changes
            .store
            .iter()
            .map(|(_, _, r)| r.words.len() as u64)
            .sum();
        let wgpu_device = &device.wgpu;
        // Validation errors (a lost or destroyed device) come back as errors instead of going
        // to the device's uncaptured-error handler, which on an application's device is the
        // application's and may panic.
        let validation = wgpu_device.push_error_scope(wgpu::ErrorFilter::Validation);
        let scope = wgpu_device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let made = ChunkStore::new(
            wgpu_device,
            max_binding,
            changes.store.len() as u32,
            heap_words + heap_words / 8,
        )
        .map(|store| (store, create_storage(wgpu_device, "chunk table", words * 4)));
        let shape_words = shape_words(world.shapes());
        let shapes = create_storage(wgpu_device, "shapes", 4 * shape_words.len() as u64);
        let errors = [
            crate::gpu::error::error_now(scope),
            crate::gpu::error::error_now(validation),
        ];
        let (store, table) = made?;
        if let Some(e) = errors.into_iter().flatten().next() {
            return Err(device_error(e));
        }
        let sync = Arc::new(WorldSync::default());
        let mut gw = Self {
            device: Arc::clone(device),
            window,
            following,
            table,
            store,
            host_table,
            sync,
            bricks_worth_skipping: false,
            skip_bricks_set: None,
            uploaded: 0,
            shapes,
            host_shapes: world.shapes().clone(),
        };
        let mut upload = WorldWrite::new(&gw.sync.failed);
        upload.write(&gw.shapes, 0, bytemuck::cast_slice(&shape_words));
        let positions: Vec<ChunkPos> = changes.store.iter().map(|(p, _, _)| *p).collect();
        gw.store.apply(changes, &mut upload)?;
        for pos in positions {
            gw.set_entry(pos, gw.stored_entry(pos)?);
        }
        let (lo, hi) = gw.window.regions();
        for_each_in(lo, hi, |r| gw.refresh_record(r));
        upload.write(&gw.table, 0, bytemuck::cast_slice(&gw.host_table));
        gw.choose_walk();
        // Waited for, so that its errors are this call's.
        gw.uploaded += upload.bytes();
        gw.device.courier.upload_now(upload)?;
        Ok(gw)
    }

    /// The entry of stored chunk `pos`: its slot.
    fn stored_entry(&self, pos: ChunkPos) -> Result<u32, GpuError> {
        self.store
            .slot(pos)
            .ok_or_else(|| GpuError::Internal(format!("chunk {pos:?} has no slot")))
    }

    /// Sets the host table's entry of window chunk `pos`.
    fn set_entry(&mut self, pos: ChunkPos, entry: u32) {
        if let Some(i) = self.window.entry_index(pos) {
            self.host_table[i] = entry;
        }
    }

    /// Makes the host table's record of region `r` from its chunk entries.
    fn refresh_record(&mut self, r: [i128; 3]) {
        let entries = self.window.entries();
        let record = self.window.region_record(&self.host_table[..entries], r);
        let at = entries + 4 * self.window.record_index(r);
        self.host_table[at..at + 4].copy_from_slice(&record);
    }

    /// Sends `upload` to the device (ordered after every batch submitted before) and counts
    /// its bytes. An upload that changes nothing leaves batches in flight alone.
    fn send(&mut self, upload: WorldWrite) -> Result<(), GpuError> {
        if upload.is_empty() {
            return Ok(());
        }
        self.uploaded += upload.bytes();
        self.sync.count_change();
        self.device.courier.upload(upload)
    }

    /// Writes the words of the host table at `changed` (indices, any order) in runs.
    fn write_table(&self, mut changed: Vec<usize>, upload: &mut WorldWrite) -> u64 {
        changed.sort_unstable();
        changed.dedup();
        for &i in &changed {
            upload.write(
                &self.table,
                (i * 4) as u64,
                bytemuck::bytes_of(&self.host_table[i]),
            );
        }
        changed.len() as u64 * 4
    }

    /// Takes `world`'s shapes ([`VoxelWorld::set_shape`]) where they differ from those this
    /// world has: every later batch answers with them. [`GpuWorld::update_chunks`] and
    /// [`GpuWorld::recenter`] call it, so a world followed through its edits follows its shapes
    /// too. Ordered as an update is: batches submitted before it keep the old shapes (a batch
    /// that would see the change in a later dispatch fails with [`GpuError::WorldChanged`]).
    ///
    /// # Errors
    /// [`GpuError::Device`] when the device is lost (then rebuild this `GpuWorld` on a new
    /// raycaster).
    pub fn update_shapes(&mut self, world: &VoxelWorld) -> Result<(), GpuError> {
        if world.shapes() == &self.host_shapes {
            return Ok(());
        }
        // A new buffer, so that batches in flight keep reading the old one.
        let words = shape_words(world.shapes());
        let buffer = create_storage(&self.device.wgpu, "shapes", 4 * words.len() as u64);
        let mut upload = WorldWrite::new(&self.sync.failed);
        upload.write(&buffer, 0, bytemuck::cast_slice(&words));
        let old = std::mem::replace(&mut self.shapes, buffer);
        self.device.bind_groups.forget(&[&old]);
        self.host_shapes = world.shapes().clone();
        self.send(upload)
    }

    /// The shader's `OPTIONS` bit of this world's shapes: set where some id is not a cube.
    pub(super) fn shape_flags(&self) -> u32 {
        if self.host_shapes.is_empty() {
            0
        } else {
            FLAG_SHAPES
        }
    }

    /// Decides from the stored chunks as they are now whether long rays skip empty bricks
    /// ([`GpuWorld::skips_empty_bricks`]).
    fn choose_walk(&mut self) {
        let (air, brick_air) = self.store.air();
        self.bricks_worth_skipping = crate::world::bricks_worth_skipping(air, brick_air);
    }

    /// Whether a batch of long rays skips the empty `8³` bricks of stored chunks whole on the
    /// GPU (`true`) or steps through them voxel by voxel. Long: every ray the GPU casts has a
    /// max distance of at least 256 voxels, or a camera reaches that far.
    /// Shorter batches step through them unless [`GpuWorld::set_skip_empty_bricks`] says
    /// otherwise. Both walks give the same answers; only the speed differs.
    ///
    /// Skipping costs a brick test on every air voxel a ray steps through, and pays where rays
    /// cross much air in empty bricks (BENCHMARKS.md, "Design choices", has the measurements
    /// behind the rule). Unless set, long rays skip when at least a quarter of the
    /// stored chunks' air lies in empty bricks, decided on upload and on every update.
    #[must_use]
    pub fn skips_empty_bricks(&self) -> bool {
        self.skip_bricks_set.unwrap_or(self.bricks_worth_skipping)
    }

    /// Sets whether every batch skips empty bricks (`Some(true)`) or steps through them
    /// (`Some(false)`), from the next batch on; `None` (the default) lets the length of the
    /// rays and the stored chunks decide ([`GpuWorld::skips_empty_bricks`]). For a world whose
    /// rays you know better. A `GpuWorld` that [`GpuWorld::update_or_rebuild`] uploads again
    /// keeps the setting.
    pub fn set_skip_empty_bricks(&mut self, skip: Option<bool>) {
        self.skip_bricks_set = skip;
    }

    /// The shader's `OPTIONS` bits that this world decides for a batch of `long` rays or not
    /// ([`GpuWorld::skips_empty_bricks`]).
    pub(super) fn walk_flags(&self, long: bool) -> u32 {
        let skip = self
            .skip_bricks_set
            .unwrap_or(long && self.bricks_worth_skipping);
        if skip { 0 } else { FLAG_STEP_EMPTY_BRICKS }
    }

    /// Re-uploads the listed chunks from `world` after edits (set, insert or remove). Only
    /// these chunks are written; the GPU keeps what it has of every other chunk, even one
    /// edited in `world` since. [`VoxelWorld::take_changed_chunks`] gives the list of chunks
    /// edited since it was last taken. New stored chunks that outgrow the GPU buffers make
    /// them grow (doubling, the old contents copied on the GPU).
    ///
    /// From [`GpuRaycaster::upload_world`](crate::gpu::GpuRaycaster::upload_world), the chunks that
    /// may be loaded are those within the world's loaded bounds when the `GpuWorld` was built: the
    /// window adds a margin of one chunk around them that must stay unloaded (a ray from outside
    /// the window is clipped to it, and conservative line of sight is exact there only while the
    /// margin is empty). Listing a margin chunk that is still unloaded is fine, and so is listing a
    /// chunk outside the window that `world` does not hold (loaded and unloaded again, as
    /// [`VoxelWorld::take_changed_chunks`] may list it). From
    /// [`GpuRaycaster::upload_window`](crate::gpu::GpuRaycaster::upload_window), a listed chunk
    /// outside the box of chunks the window may load is skipped: it answers as unloaded until a
    /// move brings it in.
    ///
    /// The update is ordered after every batch submitted before it: those batches see the
    /// world as it was (a batch that would see the update in a later dispatch fails with
    /// [`GpuError::WorldChanged`] instead).
    ///
    /// Nothing changes when an error is returned, but for a device lost while writing: the
    /// update is checked and planned in full before anything is written.
    ///
    /// # Errors
    /// [`GpuError::ChunkOutsideWindow`] (from
    /// [`GpuRaycaster::upload_world`](crate::gpu::GpuRaycaster::upload_world) only) for a loaded
    /// chunk outside the window or in its margin (rebuild with
    /// [`GpuRaycaster::upload_world`](crate::gpu::GpuRaycaster::upload_world));
    /// [`GpuError::LimitExceeded`] when the stored chunks outgrow a device limit;
    /// [`GpuError::Device`] when growing a buffer runs out of GPU memory, or the device is lost
    /// (then rebuild this `GpuWorld` on a new raycaster).
    pub fn update_chunks(
        &mut self,
        world: &VoxelWorld,
        chunks: &[ChunkPos],
    ) -> Result<(), GpuError> {
        self.update_shapes(world)?;
        // Each chunk once (a chunk listed twice has one state in `world`).
        let mut seen = rustc_hash::FxHashSet::default();
        let mut planned = Vec::with_capacity(chunks.len());
        for &pos in chunks {
            if !seen.insert(pos) {
                continue;
            }
            let view = world.chunk(pos).map(|c| c.view());
            if !self.window.may_load(pos) {
                // Outside what the window may load everything is unloaded already; a fixed
                // window cannot hold a loaded chunk there.
                if view.is_none() || self.following.is_some() {
                    continue;
                }
                return Err(GpuError::ChunkOutsideWindow(pos));
            }
            planned.push((pos, view));
        }
        let mut store = Vec::new();
        let mut drop = Vec::new();
        let mut entries = Vec::with_capacity(planned.len());
        for (pos, view) in planned {
            let (entry, d) = entry_of(view);
            match d {
                Some(d) => store.push((pos, d)),
                None if self.store.slot(pos).is_some() => drop.push(pos),
                None => {}
            }
            entries.push((pos, entry));
        }
        let mut upload = WorldWrite::new(&self.sync.failed);
        self.apply(
            StoreChanges::new(store, drop),
            entries,
            Vec::new(),
            &mut upload,
        )?;
        self.choose_walk();
        self.send(upload)
    }

    /// Applies `changes` to the store, then sets the listed chunks' entries (a stored chunk's
    /// to its slot) and writes what changed of the table: those entries and the records of
    /// their regions and of `regions` (those of the window's). Returns the chunk bytes and
    /// the table bytes written.
    fn apply(
        &mut self,
        changes: StoreChanges<'_>,
        entries: Vec<(ChunkPos, u32)>,
        mut regions: Vec<[i128; 3]>,
        upload: &mut WorldWrite,
    ) -> Result<(u64, u64), GpuError> {
        let stored: rustc_hash::FxHashSet<ChunkPos> =
            changes.store.iter().map(|(p, _, _)| *p).collect();
        let before = self.buffers();
        // Buffers may be replaced even where the update then fails.
        let applied = self.store.apply(changes, upload);
        let after = self.buffers();
        let replaced: Vec<&wgpu::Buffer> = before.iter().filter(|b| !after.contains(b)).collect();
        if !replaced.is_empty() {
            self.device.bind_groups.forget(&replaced);
        }
        let chunk_bytes = applied?;
        let mut changed = Vec::new();
        for (pos, entry) in entries {
            let entry = if stored.contains(&pos) {
                self.stored_entry(pos)?
            } else {
                entry
            };
            let Some(i) = self.window.entry_index(pos) else {
                continue;
            };
            if self.host_table[i] != entry {
                self.host_table[i] = entry;
                changed.push(i);
                regions.push(pos.to_array().map(|c| c >> crate::world::REGION_SHIFT));
            }
        }
        let (lo, hi) = self.window.regions();
        regions.retain(|r| (0..3).all(|a| (lo[a]..=hi[a]).contains(&r[a])));
        regions.sort_unstable();
        regions.dedup();
        let entries = self.window.entries();
        for r in regions {
            let at = entries + 4 * self.window.record_index(r);
            let before: [u32; 4] = std::array::from_fn(|k| self.host_table[at + k]);
            self.refresh_record(r);
            changed.extend(
                (0..4)
                    .filter(|&k| self.host_table[at + k] != before[k])
                    .map(|k| at + k),
            );
        }
        let table_bytes = self.write_table(changed, upload);
        Ok((chunk_bytes, table_bytes))
    }

    /// [`GpuWorld::update_chunks`] for a world that grows: when a listed chunk lies outside
    /// what this `GpuWorld` can hold ([`GpuError::ChunkOutsideWindow`]), the whole of `world`
    /// is uploaded again ([`GpuRaycaster::upload_world`](crate::gpu::GpuRaycaster::upload_world)),
    /// around its loaded bounds as they are now, on the same raycaster. Returns `true` when it
    /// did so. A rebuild uploads every chunk as `world` has it, also chunks edited but not
    /// listed, and keeps [`GpuWorld::set_skip_empty_bricks`]. A window that follows a center
    /// ([`GpuRaycaster::upload_window`](crate::gpu::GpuRaycaster::upload_window)) is never
    /// rebuilt: chunks outside it wait for a move.
    ///
    /// # Errors
    /// As [`GpuWorld::update_chunks`] and
    /// [`GpuRaycaster::upload_world`](crate::gpu::GpuRaycaster::upload_world); when a rebuild
    /// fails, this `GpuWorld` is left as it was.
    pub fn update_or_rebuild(
        &mut self,
        world: &VoxelWorld,
        chunks: &[ChunkPos],
    ) -> Result<bool, GpuError> {
        match self.update_chunks(world, chunks) {
            Err(GpuError::ChunkOutsideWindow(_)) => {
                let mut rebuilt = Self::from_world(&self.device, world)?;
                rebuilt.set_skip_empty_bricks(self.skip_bricks_set);
                *self = rebuilt;
                Ok(true)
            }
            other => other.map(|()| false),
        }
    }

    /// Moves a window made by
    /// [`GpuRaycaster::upload_window`](crate::gpu::GpuRaycaster::upload_window) so that it
    /// centers on `center`, with the same half extent. The chunks of `world` that enter the box
    /// the window may load are uploaded as `world` has them now; those that leave it answer as
    /// unloaded from now on and give their GPU memory back; every other chunk stays as it is
    /// on the GPU (edited chunks still go through [`GpuWorld::update_chunks`]). A move of one
    /// chunk along an axis uploads one slab of chunks; a move farther than the window's size
    /// fills it anew. The same center again does nothing.
    ///
    /// Works anywhere in the i128 world: the shader's coordinates are relative to the window,
    /// whatever its distance from the origin. The move is ordered after every batch submitted
    /// before it, as an update is ([`GpuWorld::update_chunks`]); agents uploaded for the old
    /// window ([`GpuAgents`](crate::gpu::GpuAgents)) must be uploaded again.
    ///
    /// # Errors
    /// [`GpuError::WindowCannotMove`] for a `GpuWorld` made by
    /// [`GpuRaycaster::upload_world`](crate::gpu::GpuRaycaster::upload_world);
    /// [`GpuError::CenterOutsideWorld`] when `center` is no chunk of the i128 world;
    /// [`GpuError::LimitExceeded`] when the stored chunks outgrow a device limit;
    /// [`GpuError::Device`] when growing a buffer runs out of GPU memory. The window is left
    /// where it was when an error is returned.
    pub fn recenter(
        &mut self,
        world: &VoxelWorld,
        center: ChunkPos,
    ) -> Result<WindowMove, GpuError> {
        let Some((half, old_center)) = self.following else {
            return Err(GpuError::WindowCannotMove);
        };
        if !center.is_in_world() {
            return Err(GpuError::CenterOutsideWorld(center));
        }
        self.update_shapes(world)?;
        let old = self.window;
        let new = Window::following(center, half);
        self.following = Some((half, center));
        if new == old {
            return Ok(WindowMove::default());
        }
        let plan = follow::plan(&old, &new, world);
        let drop = self
            .store
            .positions()
            .filter(|&p| !new.may_load(p))
            .collect();
        let mut upload = WorldWrite::new(&self.sync.failed);
        self.window = new;
        let mut moved = plan.moved;
        match self.apply(
            StoreChanges::new(plan.store, drop),
            plan.entries,
            plan.regions,
            &mut upload,
        ) {
            Ok((chunk_bytes, table_bytes)) => {
                moved.chunk_bytes = chunk_bytes;
                moved.table_bytes = table_bytes;
            }
            Err(e) => {
                self.window = old;
                self.following = Some((half, old_center));
                return Err(e);
            }
        }
        self.choose_walk();
        self.send(upload)?;
        Ok(moved)
    }

    /// The center a window made by
    /// [`GpuRaycaster::upload_window`](crate::gpu::GpuRaycaster::upload_window) was last given;
    /// `None` for one made by
    /// [`GpuRaycaster::upload_world`](crate::gpu::GpuRaycaster::upload_world). Near the edge of
    /// the i128 world the window lies inward of it ([`GpuWorld::loadable_chunks`]).
    #[must_use]
    pub fn center(&self) -> Option<ChunkPos> {
        self.following.map(|(_, center)| center)
    }

    /// Whether line of sight between voxels `a` and `b` (a segment from a point in `a` to a
    /// point in `b`, conservative or not) examines only voxels of the chunks this world may
    /// hold loaded ([`GpuWorld::loadable_chunks`]): both lie inside them with a voxel to spare
    /// on every side. Then the GPU's answer on this world is the CPU's on the whole
    /// `VoxelWorld` it was uploaded from (as far as its chunks are up to date); a segment that
    /// reaches further may leave a window that follows a center, which its answer then says
    /// ([`GpuWorld::left_window`]).
    #[must_use]
    pub fn holds_segment(&self, a: WorldPos, b: WorldPos) -> bool {
        let (lo, hi) = self.window.interior;
        let inside = VoxelBox::from_chunks(lo, hi);
        let spare = |p: &WorldPos, k: usize| {
            p.axis(k)
                .checked_sub(1)
                .is_some_and(|v| v >= inside.min.axis(k))
                && p.axis(k)
                    .checked_add(1)
                    .is_some_and(|v| v <= inside.max.axis(k))
        };
        [a, b].iter().all(|p| (0..3).all(|k| spare(p, k)))
    }

    /// Whether this world was uploaded on `device`.
    pub(super) fn is_on(&self, device: &Arc<Device>) -> bool {
        Arc::ptr_eq(&self.device, device)
    }

    /// The buffers the shader reads the world from: chunk table (with the region records),
    /// occupancy bits, slot records, id records and the shape table.
    pub(super) fn buffers(&self) -> [wgpu::Buffer; 5] {
        [
            self.table.clone(),
            self.store.occupancy.clone(),
            self.store.slots.clone(),
            self.store.ids.clone(),
            self.shapes.clone(),
        ]
    }

    /// The parameters every dispatch on this world shares.
    pub(super) fn params(&self) -> GpuParams {
        self.window.params()
    }

    /// The anchor: the lowest chunk of the window (its margin included).
    #[must_use]
    pub fn anchor(&self) -> ChunkPos {
        self.window.anchor
    }

    /// The window's first voxel (the low corner of its [`GpuWorld::anchor`] chunk): the origin
    /// that [`WindowRay`](crate::WindowRay)s and [`WindowOutcome`](crate::WindowOutcome)s on
    /// this world are relative to. It moves with the window
    /// ([`GpuWorld::recenter`]): a batch takes its rays, and gives its answers, relative to
    /// the origin the window had when the batch was submitted.
    #[must_use]
    pub fn window_origin(&self) -> WorldPos {
        self.window.bounds.min
    }

    /// The window's size in chunks (x, y, z), its margin included.
    #[must_use]
    pub fn dims(&self) -> [u32; 3] {
        self.window.dims
    }

    /// The chunks the window may hold loaded (inclusive corners): the window less its margin (see
    /// [`GpuRaycaster::upload_world`](crate::gpu::GpuRaycaster::upload_world) and
    /// [`GpuRaycaster::upload_window`](crate::gpu::GpuRaycaster::upload_window)). Rays see every
    /// other chunk as unloaded.
    #[must_use]
    pub fn loadable_chunks(&self) -> (ChunkPos, ChunkPos) {
        self.window.interior
    }

    /// Whether this world holds voxel `at`: it lies in [`GpuWorld::loadable_chunks`]. A window
    /// that follows a center ([`GpuRaycaster::upload_window`](crate::gpu::GpuRaycaster::upload_window))
    /// knows nothing outside them: its answer for a ray that leaves them is
    /// `Unloaded` at the first voxel outside, with `holds(at) == false`
    /// ([`GpuWorld::left_window`]).
    #[must_use]
    pub fn holds(&self, at: WorldPos) -> bool {
        self.window.holds(at)
    }

    /// Whether `outcome`, a GPU answer on this world, says the ray left what the world holds
    /// rather than answering it: `Unloaded` at a voxel outside the box of a window that follows
    /// a center. Never for a world uploaded whole
    /// ([`GpuRaycaster::upload_world`](crate::gpu::GpuRaycaster::upload_world)), whose answers
    /// are the CPU's. It reads the window as it is now: ask it (and complete) before
    /// [`GpuWorld::recenter`] moves the window under answers cast before the move.
    ///
    /// It is meant for the GPU's answers before they are completed
    /// ([`Rays::complete`](crate::gpu::Rays::complete),
    /// [`Sightlines::complete`](crate::gpu::Sightlines::complete)). It looks at the
    /// outcome alone, so it cannot tell a completed answer from a GPU one: under
    /// [`UnloadedPolicy::Stop`](crate::UnloadedPolicy::Stop) the CPU's own answer for a ray
    /// that reaches unloaded space outside [`GpuWorld::loadable_chunks`] (just past the
    /// window's edge, or further on) is `Unloaded` there as well, and `left_window` says `true`
    /// for it although it is final (completing it again casts it again, to the same answer).
    /// To count the answers completed, use the number the completing call returns.
    #[must_use]
    pub fn left_window(&self, outcome: &RaycastOutcome) -> bool {
        self.window.partial()
            && matches!(outcome, RaycastOutcome::Unloaded { voxel_pos: at, .. } if !self.holds(*at))
    }

    /// Number of chunks stored voxel by voxel (the others are uniform and cost one table entry).
    #[must_use]
    pub fn stored_chunks(&self) -> usize {
        self.store.len()
    }

    /// Bytes of GPU buffers this world holds: chunk table plus the stored chunks' buffers
    /// (allocated capacity, which grows by doubling).
    #[must_use]
    pub fn memory_bytes(&self) -> u64 {
        self.table.size() + self.store.buffer_bytes()
    }

    /// Bytes the stored chunks take of [`GpuWorld::memory_bytes`]: the sum of
    /// [`GpuWorld::stored_chunk_bytes`] over them.
    #[must_use]
    pub fn stored_bytes(&self) -> u64 {
        self.store.used_bytes()
    }

    /// Bytes written to the device since this world was built, the build included: chunk
    /// data, table entries and region records (copies made on the device when a buffer grows
    /// are not counted).
    #[must_use]
    pub fn uploaded_bytes(&self) -> u64 {
        self.uploaded
    }

    /// Bytes of GPU memory `chunk` takes when a `GpuWorld` stores it: 0 for a chunk of one id
    /// (a table entry), else its `32³` occupancy bits (4 KiB), a 16-byte slot record and its
    /// packed ids: per `8³` brick a 4-byte entry, the chunk's palette (2 bytes an id, for up
    /// to 256 distinct ids), and for each brick not of one id its 512 values in 1, 2, 4, 8 or
    /// 16 bits (the narrowest that numbers the palette; 16: raw ids).
    #[must_use]
    pub fn stored_chunk_bytes(chunk: &crate::world::Chunk) -> u64 {
        match chunk.view() {
            ChunkView::Uniform(_) => 0,
            ChunkView::Dense(d) => {
                crate::gpu::store::stored_bytes(&crate::gpu::store::IdRecord::encode(d))
            }
        }
    }
}

/// Test hooks: consistency checks for voxcast's own tests and fuzz targets, compiled only with
/// the `test-hooks` feature (the testkit turns it on). They are no part of the stable API and
/// may change in any release.
#[cfg(feature = "test-hooks")]
impl GpuWorld {
    /// Test hook (`test-hooks` feature): how many times the id heap was packed anew because it
    /// was too fragmented for a record.
    #[must_use]
    pub fn heap_packs(&self) -> u32 {
        self.store.packs
    }

    /// Test hook (`test-hooks` feature): compares what this world has written to its chunk
    /// table with what `world` holds, as if every change had been passed to
    /// [`GpuWorld::update_chunks`]: each chunk of the window (unloaded outside the loadable
    /// box, its slot where it is stored), every region record of the window against a recount,
    /// and the number of stored chunks.
    ///
    /// # Errors
    /// The first difference, in words.
    pub fn check_table(&self, world: &VoxelWorld) -> Result<(), String> {
        let w = &self.window;
        let mut dense = 0;
        let (lo, hi) = (w.anchor.to_array(), w.last_chunk().to_array());
        let mut result = Ok(());
        for_each_in(lo, hi, |p| {
            let pos = ChunkPos::from_array(p);
            let view = if w.may_load(pos) {
                world.chunk(pos).map(|c| c.view())
            } else {
                None
            };
            let (entry, d) = entry_of(view);
            let expected = if d.is_some() {
                dense += 1;
                self.store.slot(pos)
            } else {
                Some(entry)
            };
            let at = w.entry_index(pos).map(|i| self.host_table[i]);
            if result.is_ok() && (expected.is_none() || at != expected) {
                result = Err(format!(
                    "chunk {pos:?}: entry {at:?}, expected {expected:?}"
                ));
            }
        });
        result?;
        if dense != self.store.len() {
            return Err(format!(
                "{} chunks stored, {dense} expected",
                self.store.len()
            ));
        }
        let entries = w.entries();
        let (rlo, rhi) = w.regions();
        let mut result = Ok(());
        for_each_in(rlo, rhi, |r| {
            let at = entries + 4 * w.record_index(r);
            let expected = w.region_record(&self.host_table[..entries], r);
            if result.is_ok() && self.host_table[at..at + 4] != expected {
                result = Err(format!(
                    "region {r:?}: record {:?}, expected {expected:?}",
                    &self.host_table[at..at + 4]
                ));
            }
        });
        result
    }
}

/// The shape table as `shaders/shapes.wgsl` reads it: the number of id entries, the entries,
/// the boxes.
fn shape_words(table: &ShapeTable) -> Vec<u32> {
    let (entries, boxes) = (table.entry_words(), table.box_words());
    let mut words = Vec::with_capacity(1 + entries.len() + boxes.len());
    words.push(entries.len() as u32);
    words.extend_from_slice(entries);
    words.extend_from_slice(boxes);
    words
}
