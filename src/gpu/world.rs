//! `GpuWorld`: a window of a `VoxelWorld` in GPU buffers, and its updates.

use rustc_hash::FxHashMap;

use crate::coords::ChunkPos;
use crate::gpu::window::{Window, window_index};
use crate::gpu::{
    BRICK_WORDS, FLAG_STEP_EMPTY_BRICKS, GpuError, GpuRaycaster, ID_WORDS, TAG_EMPTY, TAG_UNIFORM,
    TAG_UNLOADED, device_error,
};
use crate::world::{ChunkView, DenseChunk, OCCUPANCY_WORDS, REGION_SHIFT, VoxelWorld};

/// A window of a [`VoxelWorld`] uploaded to the GPU: a chunk table plus, per chunk that is not
/// one id throughout, its occupancy bits, brick summary and u16 ids. Uniform chunks (all air,
/// all stone, ...) take one table entry and no storage. After the table's chunk entries comes
/// one 16-byte record per region of `4×4×4` chunks that the window touches (which of its chunks
/// block a run of empty chunks), kept current by [`GpuWorld::update_chunks`]. Its `Debug`
/// output is a summary (anchor, size, stored chunks, bytes), not the table.
pub struct GpuWorld {
    device: wgpu::Device,
    queue: wgpu::Queue,
    pub(super) window: Window,
    slots: FxHashMap<ChunkPos, u32>,
    free_slots: Vec<u32>,
    slot_capacity: u32,
    max_binding: u64,
    /// The `token` of the raycaster that uploaded it.
    pub(super) owner: u64,
    pub(super) table: wgpu::Buffer,
    pub(super) occupancy: wgpu::Buffer,
    pub(super) bricks: wgpu::Buffer,
    pub(super) ids: wgpu::Buffer,
    /// The chunk entries of `table`, as last written (the region records are made from them).
    entries: Vec<u32>,
    /// Per slot: the stored chunk's air voxels, and those of them in bricks that hold only air.
    slot_air: Vec<[u32; 2]>,
    /// Whether much of the stored chunks' air lies in empty bricks, so that long rays skip
    /// them ([`GpuWorld::skips_empty_bricks`]).
    bricks_worth_skipping: bool,
    /// The choice set by [`GpuWorld::set_skip_empty_bricks`]; `None`: made from the chunks.
    skip_bricks_set: Option<bool>,
}

impl std::fmt::Debug for GpuWorld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuWorld")
            .field("anchor", &self.window.anchor)
            .field("dims", &self.window.dims)
            .field("stored_chunks", &self.stored_chunks())
            .field("memory_bytes", &self.memory_bytes())
            .field("skips_empty_bricks", &self.skips_empty_bricks())
            .finish_non_exhaustive()
    }
}

impl GpuWorld {
    /// Uploads every loaded chunk of `world`; the window is the loaded bounds grown by one
    /// unloaded chunk on every side that is not the edge of the i128 world (room for
    /// conservative line of sight, which tests voxels beside the ray). Later edits may load,
    /// change or unload chunks within those loaded bounds ([`GpuWorld::update_chunks`]); the
    /// margin stays unloaded. For an empty world the bounds are chunk `(0, 0, 0)`.
    ///
    /// # Errors
    /// [`GpuError::LimitExceeded`] when the window's chunk table or the stored chunks exceed a
    /// device limit, or the window is wider than about 2^26 chunks on an axis (it is dense
    /// over the box around the loaded chunks, so chunks far apart make it huge: keep far-apart
    /// regions in separate worlds); [`GpuError::Device`] when an allocation fails.
    pub fn from_world(gpu: &GpuRaycaster, world: &VoxelWorld) -> Result<Self, GpuError> {
        // A margin of one unloaded chunk around the loaded ones: conservative line of sight
        // tests voxels beside the ray, so a ray clipped to the window must start one chunk out.
        let origin = ChunkPos::new(0, 0, 0);
        let mut window = Window::around(world.loaded_chunk_bounds().unwrap_or((origin, origin)));
        let (lo, hi) = (window.anchor, window.bounds.max.chunk());
        for a in 0..3 {
            // At most 2^128 - 1 (the whole i128 world in chunks), so u128 holds it.
            let span = hi.axis(a).abs_diff(lo.axis(a)) + 1;
            // Window-relative voxel coordinates must fit in i32, with room for a run of
            // empty chunks that reaches past the window to the end of its region.
            let limit = (i32::MAX as u128 + 1) / 32 - (1 << REGION_SHIFT);
            if span >= limit {
                return Err(GpuError::LimitExceeded {
                    what: "window extent in chunks",
                    needed: u64::try_from(span).unwrap_or(u64::MAX),
                    limit: limit as u64,
                });
            }
            window.dims[a] = span as u32;
        }
        let dims = window.dims;
        let regions: [u64; 3] = std::array::from_fn(|a| {
            (u64::from(dims[a]) + (lo.axis(a) & ((1 << REGION_SHIFT) - 1)) as u64)
                .div_ceil(1 << REGION_SHIFT)
        });
        // Chunk entries, then one four-word record per region.
        let entries = u64::from(dims[0]) * u64::from(dims[1]) * u64::from(dims[2])
            + 4 * regions.iter().product::<u64>();
        let max_binding = gpu
            .limits
            .max_storage_buffer_binding_size
            .min(gpu.limits.max_buffer_size);
        if entries * 4 > max_binding {
            return Err(GpuError::LimitExceeded {
                what: "chunk table (bytes)",
                needed: entries * 4,
                limit: max_binding,
            });
        }
        let mut table = vec![TAG_UNLOADED; window.entries()];
        let mut slots = FxHashMap::default();
        let mut dense = Vec::new();
        for (pos, chunk) in world.chunks() {
            let i = window_index(&window, pos)
                .ok_or_else(|| GpuError::Internal("chunk outside bounds".into()))?;
            table[i] = match chunk.view() {
                ChunkView::Uniform(id) if id.is_air() => TAG_EMPTY,
                ChunkView::Uniform(id) => TAG_UNIFORM | u32::from(id.0),
                ChunkView::Dense(d) => {
                    let slot = slots.len() as u32;
                    slots.insert(pos, slot);
                    dense.push((slot, d));
                    slot
                }
            };
        }
        let rd = window.region_dims();
        let mut records = Vec::new();
        for z in 0..rd[2] {
            for y in 0..rd[1] {
                for x in 0..rd[0] {
                    records.extend(window.region_record(&table, [x, y, z]));
                }
            }
        }
        let slot_capacity = (slots.len() as u32).max(1);
        // Validation errors (a lost or destroyed device) come back as errors instead of going
        // to the device's uncaptured-error handler, which on an application's device is the
        // application's and may panic.
        let validation = gpu
            .shared
            .device
            .push_error_scope(wgpu::ErrorFilter::Validation);
        let mut gw = Self {
            device: gpu.shared.device.clone(),
            owner: gpu.token,
            queue: gpu.shared.queue.clone(),
            window,
            table: create_storage(&gpu.shared.device, "chunk table", entries * 4),
            occupancy: create_storage(&gpu.shared.device, "occupancy", 4),
            bricks: create_storage(&gpu.shared.device, "bricks", 4),
            ids: create_storage(&gpu.shared.device, "ids", 4),
            slots,
            free_slots: Vec::new(),
            slot_capacity: 0,
            max_binding,
            entries: Vec::new(),
            slot_air: Vec::new(),
            bricks_worth_skipping: false,
            skip_bricks_set: None,
        };
        let scope = gw.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        [gw.occupancy, gw.bricks, gw.ids] = gw.slot_buffers(slot_capacity)?;
        gw.slot_capacity = slot_capacity;
        gw.queue
            .write_buffer(&gw.table, 0, bytemuck::cast_slice(&table));
        gw.queue.write_buffer(
            &gw.table,
            (table.len() * 4) as u64,
            bytemuck::cast_slice(&records),
        );
        for (slot, d) in dense {
            gw.write_slot(slot, d);
            gw.note_slot_air(slot, d);
        }
        gw.choose_walk();
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(device_error(e));
        }
        if let Some(e) = pollster::block_on(validation.pop()) {
            return Err(device_error(e));
        }
        gw.entries = table;
        Ok(gw)
    }

    /// Slot buffers (occupancy, brick summaries, ids) for `capacity` stored chunks, or
    /// [`GpuError::LimitExceeded`] before allocating anything.
    fn slot_buffers(&self, capacity: u32) -> Result<[wgpu::Buffer; 3], GpuError> {
        let ids_bytes = u64::from(capacity) * (ID_WORDS * 4) as u64;
        if ids_bytes > self.max_binding {
            return Err(GpuError::LimitExceeded {
                what: "voxel ids of the stored chunks (bytes)",
                needed: ids_bytes,
                limit: self.max_binding,
            });
        }
        let per_slot = [OCCUPANCY_WORDS * 4, BRICK_WORDS * 4, ID_WORDS * 4];
        let labels = ["occupancy", "bricks", "ids"];
        Ok(std::array::from_fn(|i| {
            create_storage(
                &self.device,
                labels[i],
                u64::from(capacity) * per_slot[i] as u64,
            )
        }))
    }

    /// Records the air of dense chunk `d`, stored in `slot`, for [`GpuWorld::skips_empty_bricks`].
    fn note_slot_air(&mut self, slot: u32, d: &DenseChunk) {
        let slot = slot as usize;
        if self.slot_air.len() <= slot {
            self.slot_air.resize(slot + 1, [0, 0]);
        }
        let (air, brick_air) = d.air_and_brick_air();
        self.slot_air[slot] = [air, brick_air];
    }

    /// Decides from the stored chunks as they are now whether long rays skip empty bricks
    /// ([`GpuWorld::skips_empty_bricks`]).
    fn choose_walk(&mut self) {
        let (air, brick_air) = self.slots.values().fold((0u64, 0u64), |(a, b), &s| {
            let [sa, sb] = self.slot_air.get(s as usize).copied().unwrap_or([0, 0]);
            (a + u64::from(sa), b + u64::from(sb))
        });
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

    /// Writes dense chunk `d` into slot `slot` of the slot buffers.
    fn write_slot(&self, slot: u32, d: &DenseChunk) {
        let slot = u64::from(slot);
        self.queue.write_buffer(
            &self.occupancy,
            slot * (OCCUPANCY_WORDS * 4) as u64,
            bytemuck::cast_slice(&d.occupancy[..]),
        );
        let bricks = [d.bricks as u32, (d.bricks >> 32) as u32];
        self.queue.write_buffer(
            &self.bricks,
            slot * (BRICK_WORDS * 4) as u64,
            bytemuck::cast_slice(&bricks),
        );
        let ids: Vec<u32> = (0..ID_WORDS)
            .map(|w| u32::from(d.ids.get(2 * w).0) | u32::from(d.ids.get(2 * w + 1).0) << 16)
            .collect();
        self.queue.write_buffer(
            &self.ids,
            slot * (ID_WORDS * 4) as u64,
            bytemuck::cast_slice(&ids),
        );
    }

    /// Re-uploads the listed chunks from `world` after edits (set, insert or remove). Only
    /// these chunks are written; the GPU keeps what it has of every other chunk, even one
    /// edited in `world` since. [`VoxelWorld::take_changed_chunks`] gives the list of chunks
    /// edited since it was last taken. New stored chunks that outgrow the slot buffers make them grow
    /// (doubling, the old contents copied on the GPU).
    ///
    /// The chunks that may be loaded are those within the world's loaded bounds when the
    /// `GpuWorld` was built: the window adds a margin of one chunk around them that must stay
    /// unloaded (a ray from outside the window is clipped to it, and conservative line of sight
    /// is exact there only while the margin is empty). Listing a margin chunk that is still
    /// unloaded is fine.
    ///
    /// A listed chunk outside the window that `world` does not hold (loaded and unloaded
    /// again, as [`VoxelWorld::take_changed_chunks`] may list it) is skipped: outside the
    /// window everything is unloaded already.
    ///
    /// Nothing changes when an error is returned, but for a device lost while writing: the
    /// update is checked and planned in full before anything is written.
    ///
    /// # Errors
    /// [`GpuError::ChunkOutsideWindow`] for a loaded chunk outside the window or in its
    /// margin (rebuild with [`GpuWorld::from_world`]); [`GpuError::LimitExceeded`] when the
    /// stored chunks outgrow a device limit; [`GpuError::Device`] when growing the slot
    /// buffers runs out of GPU memory, or the device is lost (then rebuild this `GpuWorld` on
    /// a new raycaster).
    pub fn update_chunks(
        &mut self,
        world: &VoxelWorld,
        chunks: &[ChunkPos],
    ) -> Result<(), GpuError> {
        // Plan on copies: new table entries, slot assignments, chunks to write.
        let mut slots = self.slots.clone();
        let mut free_slots = self.free_slots.clone();
        let mut planned = Vec::with_capacity(chunks.len());
        for &pos in chunks {
            let view = world.chunk(pos).map(|c| c.view());
            let Some(i) = window_index(&self.window, pos) else {
                // Outside the window everything is unloaded already: an unloaded chunk there
                // (loaded and unloaded again since the last update) needs nothing.
                if view.is_none() {
                    continue;
                }
                return Err(GpuError::ChunkOutsideWindow(pos));
            };
            if view.is_some() && !self.window.may_load(pos) {
                return Err(GpuError::ChunkOutsideWindow(pos));
            }
            planned.push((i, pos, view));
        }
        // Chunks no longer stored give their slots back before new ones take slots, so that
        // the order of the list does not decide whether the slot buffers grow.
        for &(_, pos, view) in &planned {
            if !matches!(view, Some(ChunkView::Dense(_)))
                && let Some(s) = slots.remove(&pos)
            {
                free_slots.push(s);
            }
        }
        let mut entries = Vec::with_capacity(chunks.len());
        let mut to_write = Vec::new();
        let mut regions = Vec::new();
        for (i, pos, view) in planned {
            let entry = match view {
                None => TAG_UNLOADED,
                Some(ChunkView::Uniform(id)) if id.is_air() => TAG_EMPTY,
                Some(ChunkView::Uniform(id)) => TAG_UNIFORM | u32::from(id.0),
                Some(ChunkView::Dense(d)) => {
                    let slot = match slots.get(&pos) {
                        Some(&s) => s,
                        None => {
                            // Slots in use and free slots are always 0..n.
                            let s = free_slots.pop().unwrap_or(slots.len() as u32);
                            slots.insert(pos, s);
                            s
                        }
                    };
                    to_write.push((slot, d));
                    slot
                }
            };
            entries.push((i, entry));
            regions.push(self.window.region_of_chunk(pos));
        }
        // A chunk listed twice was planned twice: its last plan is the one that counts, and
        // writing a slot twice with the same chunk is harmless.
        let needed = slots.values().max().map_or(0, |&s| s + 1);
        // As in `from_world`: a lost device's validation errors come back as errors.
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let grown = if needed > self.slot_capacity {
            // Doubling, but never past what the device allows (then `slot_buffers` reports
            // the real need).
            let most = u32::try_from(self.max_binding / (ID_WORDS * 4) as u64).unwrap_or(u32::MAX);
            let capacity = needed.next_power_of_two().min(most).max(needed);
            let buffers = self.slot_buffers(capacity)?;
            let mut encoder = self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("voxcast grow slots"),
                });
            for (old, new) in [&self.occupancy, &self.bricks, &self.ids]
                .into_iter()
                .zip(&buffers)
            {
                encoder.copy_buffer_to_buffer(old, 0, new, 0, old.size());
            }
            self.queue.submit([encoder.finish()]);
            Some((capacity, buffers))
        } else {
            None
        };
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(device_error(e));
        }
        // Commit. Writes queued from here run after the copy submitted above.
        if let Some((capacity, [occupancy, bricks, ids])) = grown {
            self.occupancy = occupancy;
            self.bricks = bricks;
            self.ids = ids;
            self.slot_capacity = capacity;
        }
        for (i, entry) in entries {
            self.entries[i] = entry;
            self.queue
                .write_buffer(&self.table, (i * 4) as u64, bytemuck::bytes_of(&entry));
        }
        regions.sort_unstable();
        regions.dedup();
        for r in regions {
            let record = self.window.region_record(&self.entries, r);
            let at = self.window.entries() + 4 * self.window.region_index(r);
            self.queue
                .write_buffer(&self.table, (at * 4) as u64, bytemuck::cast_slice(&record));
        }
        for (slot, d) in to_write {
            self.write_slot(slot, d);
            self.note_slot_air(slot, d);
        }
        self.slots = slots;
        self.free_slots = free_slots;
        self.choose_walk();
        match pollster::block_on(validation.pop()) {
            Some(e) => Err(device_error(e)),
            None => Ok(()),
        }
    }

    /// [`GpuWorld::update_chunks`] for a world that grows: when a listed chunk lies outside
    /// what this `GpuWorld` can hold ([`GpuError::ChunkOutsideWindow`]), the whole of `world`
    /// is uploaded again ([`GpuWorld::from_world`]), around its loaded bounds as they are now.
    /// Returns `true` when it did so. A rebuild uploads every chunk as `world` has it, also
    /// chunks edited but not listed.
    ///
    /// # Errors
    /// As [`GpuWorld::update_chunks`] and [`GpuWorld::from_world`]; when a rebuild fails, this
    /// `GpuWorld` is left as it was. [`GpuError::WorldFromAnotherDevice`] when `gpu` is not the
    /// raycaster that uploaded this world (a rebuild would move it to `gpu` unasked).
    pub fn update_or_rebuild(
        &mut self,
        gpu: &GpuRaycaster,
        world: &VoxelWorld,
        chunks: &[ChunkPos],
    ) -> Result<bool, GpuError> {
        if self.owner != gpu.token {
            return Err(GpuError::WorldFromAnotherDevice);
        }
        match self.update_chunks(world, chunks) {
            Err(GpuError::ChunkOutsideWindow(_)) => {
                let mut rebuilt = Self::from_world(gpu, world)?;
                rebuilt.set_skip_empty_bricks(self.skip_bricks_set);
                *self = rebuilt;
                Ok(true)
            }
            other => other.map(|()| false),
        }
    }

    /// The anchor: the lowest chunk of the window.
    #[must_use]
    pub fn anchor(&self) -> ChunkPos {
        self.window.anchor
    }

    /// The window's size in chunks (x, y, z).
    #[must_use]
    pub fn dims(&self) -> [u32; 3] {
        self.window.dims
    }

    /// Number of chunks stored voxel by voxel (the others are uniform and cost one table entry).
    #[must_use]
    pub fn stored_chunks(&self) -> usize {
        self.slots.len()
    }

    /// Bytes of GPU buffers this world holds: chunk table plus slot buffers (allocated capacity).
    #[must_use]
    pub fn memory_bytes(&self) -> u64 {
        self.table.size() + self.occupancy.size() + self.bricks.size() + self.ids.size()
    }
}

fn create_storage(device: &wgpu::Device, label: &str, size: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: size.max(4).next_multiple_of(4),
        // COPY_SRC: slot buffers are copied into larger ones when they grow.
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })
}
