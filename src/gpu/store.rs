//! The stored chunks of a `GpuWorld`: a pool of slots, each with the chunk's occupancy bits
//! (read at every step of the walk) and a slot record, and a heap of id records of any size
//! (read only on a hit), allocated with `offset-allocator`.
//!
//! An id record is what `slot_id` in `shaders/window.wgsl` decodes: one entry per `8³` brick,
//! then the chunk's palette, then the packed values of the bricks that are not one id
//! throughout. A brick of one id (all air, all stone) is that id in its entry and takes no
//! values; the others take `512 · bits` bits, where `bits` (1, 2, 4, 8, or 16 for raw ids)
//! is the narrowest width that numbers the chunk's palette.

use offset_allocator::{Allocation, Allocator};
use rayon::prelude::{IntoParallelRefIterator, ParallelIterator};
use rustc_hash::FxHashMap;

use crate::coords::ChunkPos;
use crate::gpu::error::GpuError;
use crate::gpu::layout::{
    BRICK_UNIFORM, RECORD_BRICKS, SLOT_WORDS, TAG_EMPTY, TAG_UNIFORM, TAG_UNLOADED,
};
use crate::gpu::queue::WorldWrite;
use crate::world::{BRICK_EDGE, ChunkView, DenseChunk, OCCUPANCY_WORDS};

/// Voxels in a brick.
const BRICK_VOXELS: usize = BRICK_EDGE * BRICK_EDGE * BRICK_EDGE;

/// Words of an empty id heap, and what it grows from: 64 KiB.
const MIN_HEAP_WORDS: u64 = 1 << 14;

/// A chunk's table entry (a tag, or 0 to be replaced by its slot), and its storage where it is
/// stored voxel by voxel.
pub(super) fn entry_of(view: Option<ChunkView<'_>>) -> (u32, Option<&DenseChunk>) {
    match view {
        None => (TAG_UNLOADED, None),
        Some(ChunkView::Uniform(id)) if id.is_air() => (TAG_EMPTY, None),
        Some(ChunkView::Uniform(id)) => (TAG_UNIFORM | u32::from(id.0), None),
        Some(ChunkView::Dense(d)) => (0, Some(d)),
    }
}

/// A dense chunk's ids as the GPU stores them (see the module docs) and its width.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct IdRecord {
    pub(super) words: Vec<u32>,
    /// Bits per value: 1, 2, 4 or 8 through the palette, 16 for raw ids.
    pub(super) bits: u32,
}

impl IdRecord {
    /// The record of `d`'s ids.
    pub(super) fn encode(d: &DenseChunk) -> Self {
        // The ids brick by brick, each in its own order: x, then y, then z within the brick.
        let mut bricks = vec![[0u16; BRICK_VOXELS]; RECORD_BRICKS];
        for row in 0..OCCUPANCY_WORDS as u32 {
            let (y, z) = (row & 31, row >> 5);
            let ids = d.ids.row(row);
            for (x, id) in (0u32..).zip(ids) {
                let brick = (x >> 3) | (y >> 3) << 2 | (z >> 3) << 4;
                let i = (x & 7) | (y & 7) << 3 | (z & 7) << 6;
                bricks[brick as usize][i as usize] = id.0;
            }
        }
        let uniform: Vec<bool> = bricks
            .iter()
            .map(|b| b.iter().all(|&id| id == b[0]))
            .collect();
        // The palette: the ids of the bricks that store values, in order of first use.
        let mut palette: Vec<u16> = Vec::new();
        let mut index: FxHashMap<u16, u32> = FxHashMap::default();
        for (b, _) in bricks.iter().zip(&uniform).filter(|(_, u)| !**u) {
            for &id in b {
                index.entry(id).or_insert_with(|| {
                    palette.push(id);
                    (palette.len() - 1) as u32
                });
            }
        }
        let bits = match palette.len() {
            0..=2 => 1,
            3..=4 => 2,
            5..=16 => 4,
            17..=256 => 8,
            _ => 16,
        };
        let palette_words = if bits < 16 {
            palette.len().div_ceil(2)
        } else {
            0
        };
        let brick_words = BRICK_VOXELS * bits as usize / 32;
        let stored = uniform.iter().filter(|u| !**u).count();
        let mut words = vec![0u32; RECORD_BRICKS + palette_words + stored * brick_words];
        if bits < 16 {
            for (k, &id) in palette.iter().enumerate() {
                words[RECORD_BRICKS + k / 2] |= u32::from(id) << (16 * (k % 2));
            }
        }
        let mut at = RECORD_BRICKS + palette_words;
        for (b, (ids, &one)) in bricks.iter().zip(&uniform).enumerate() {
            if one {
                words[b] = BRICK_UNIFORM | u32::from(ids[0]);
                continue;
            }
            words[b] = at as u32;
            for (i, &id) in ids.iter().enumerate() {
                let v = if bits < 16 { index[&id] } else { u32::from(id) };
                let bit = i * bits as usize;
                words[at + bit / 32] |= v << (bit % 32);
            }
            at += brick_words;
        }
        Self { words, bits }
    }

    /// The id of voxel `(x, y, z)` of the chunk, read as the shader's `slot_id` reads it.
    #[cfg(test)]
    fn id(&self, x: u32, y: u32, z: u32) -> u16 {
        let brick = (x >> 3) | (y >> 3) << 2 | (z >> 3) << 4;
        let e = self.words[brick as usize];
        if e & BRICK_UNIFORM != 0 {
            return e as u16;
        }
        let i = (x & 7) | (y & 7) << 3 | (z & 7) << 6;
        let bit = i * self.bits;
        let v = (self.words[(e + (bit >> 5)) as usize] >> (bit & 31)) & ((1 << self.bits) - 1);
        if self.bits == 16 {
            return v as u16;
        }
        (self.words[RECORD_BRICKS + (v >> 1) as usize] >> ((v & 1) * 16)) as u16
    }
}

/// Bytes of GPU memory a dense chunk takes when stored: its occupancy bits, its slot record
/// and its id record.
pub(super) fn stored_bytes(record: &IdRecord) -> u64 {
    ((OCCUPANCY_WORDS + SLOT_WORDS + record.words.len()) * 4) as u64
}

/// A stored chunk: its slot and where its id record lies in the heap.
#[derive(Clone, Copy)]
struct Stored {
    slot: u32,
    record: Allocation,
    words: u32,
}

/// The slots and the id heap of a `GpuWorld`, and the buffers that hold them.
pub(super) struct ChunkStore {
    device: wgpu::Device,
    /// Per slot the chunk's `32³` occupancy bits (`OCC_WORDS` words).
    pub(super) occupancy: wgpu::Buffer,
    /// Per slot its record (`SLOT_WORDS` words): brick summary (two words), where the id
    /// record starts in the heap, and the id record's bits per value.
    pub(super) slots: wgpu::Buffer,
    /// The id records.
    pub(super) ids: wgpu::Buffer,
    stored: FxHashMap<ChunkPos, Stored>,
    /// Slots not in use below the highest in use; slots in use and free ones are `0..n`.
    free_slots: Vec<u32>,
    slot_capacity: u32,
    heap: Allocator,
    /// Words of the heap in use by records.
    heap_used: u64,
    /// The most a storage binding (and a buffer) may hold, in bytes.
    max_binding: u64,
    /// Per slot: the stored chunk's air voxels, and those of them in bricks that hold only air.
    slot_air: Vec<[u32; 2]>,
    /// How many times the heap was packed anew.
    pub(super) packs: u32,
}

/// What one call changes in the store: chunks stored anew or again (with their records,
/// already encoded) and chunks no longer stored.
pub(super) struct StoreChanges<'a> {
    pub(super) store: Vec<(ChunkPos, &'a DenseChunk, IdRecord)>,
    pub(super) drop: Vec<ChunkPos>,
}

impl<'a> StoreChanges<'a> {
    /// Changes that store `chunks` (encoded in parallel) and drop the chunks of `drop`.
    pub(super) fn new(chunks: Vec<(ChunkPos, &'a DenseChunk)>, drop: Vec<ChunkPos>) -> Self {
        let store = chunks
            .par_iter()
            .map(|&(pos, d)| (pos, d, IdRecord::encode(d)))
            .collect();
        Self { store, drop }
    }
}

impl ChunkStore {
    /// An empty store with room for `slots` chunks and `heap_words` words of id records, on
    /// `device`, whose storage bindings hold at most `max_binding` bytes.
    pub(super) fn new(
        device: &wgpu::Device,
        max_binding: u64,
        slots: u32,
        heap_words: u64,
    ) -> Result<Self, GpuError> {
        let slot_capacity = slots.max(1);
        check_slots(slot_capacity, max_binding)?;
        let heap_words = heap_capacity(heap_words, max_binding);
        // The heap's address range is all a binding can hold; the buffer covers what is used.
        let range = u32::try_from(max_binding / 4).unwrap_or(u32::MAX);
        let [occupancy, slots_buffer] = slot_buffers(device, slot_capacity);
        Ok(Self {
            device: device.clone(),
            occupancy,
            slots: slots_buffer,
            ids: create_storage(device, "ids", heap_words * 4),
            stored: FxHashMap::default(),
            free_slots: Vec::new(),
            slot_capacity,
            heap: Allocator::with_max_allocs(range, max_records(max_binding)),
            heap_used: 0,
            max_binding,
            slot_air: Vec::new(),
            packs: 0,
        })
    }

    /// Number of chunks stored.
    pub(super) fn len(&self) -> usize {
        self.stored.len()
    }

    /// The chunks stored.
    pub(super) fn positions(&self) -> impl Iterator<Item = ChunkPos> + '_ {
        self.stored.keys().copied()
    }

    /// The slot of chunk `pos`, where it is stored.
    pub(super) fn slot(&self, pos: ChunkPos) -> Option<u32> {
        self.stored.get(&pos).map(|s| s.slot)
    }

    /// Bytes of GPU buffers held (allocated capacity).
    pub(super) fn buffer_bytes(&self) -> u64 {
        self.occupancy.size() + self.slots.size() + self.ids.size()
    }

    /// Bytes the stored chunks use: occupancy, slot records and id records.
    pub(super) fn used_bytes(&self) -> u64 {
        self.stored.len() as u64 * ((OCCUPANCY_WORDS + SLOT_WORDS) * 4) as u64 + self.heap_used * 4
    }

    /// Air voxels of the stored chunks, and those of them in empty bricks.
    pub(super) fn air(&self) -> (u64, u64) {
        self.stored.values().fold((0, 0), |(a, b), s| {
            let [sa, sb] = self
                .slot_air
                .get(s.slot as usize)
                .copied()
                .unwrap_or([0, 0]);
            (a + u64::from(sa), b + u64::from(sb))
        })
    }

    /// Applies `changes`: every chunk of `changes.store` gets a slot (its own, where it is
    /// stored already) and a new id record, every chunk of `changes.drop` gives its slot and
    /// record back, and what changed is written through `upload` (buffers that grow are
    /// copied into their larger successors first). Returns the bytes of chunk data written.
    ///
    /// Nothing changes when a limit would be exceeded or a buffer cannot grow: both are
    /// checked before anything is freed. Records are freed before new ones are placed, so a
    /// window filled anew needs no room for both; where the heap is too fragmented for a new
    /// record, the records in use are packed anew into a fresh heap, copied on the GPU (if
    /// that heap cannot be allocated, the world is left unusable and says so).
    pub(super) fn apply(
        &mut self,
        changes: StoreChanges<'_>,
        upload: &mut WorldWrite,
    ) -> Result<u64, GpuError> {
        // Slots: those no longer stored are given back before new chunks take one, so that
        // the order of the changes does not decide whether the slot buffers grow.
        let mut slot_of: FxHashMap<ChunkPos, u32> =
            self.stored.iter().map(|(&p, s)| (p, s.slot)).collect();
        let mut free_slots = self.free_slots.clone();
        for pos in &changes.drop {
            if let Some(s) = slot_of.remove(pos) {
                free_slots.push(s);
            }
        }
        let mut slots = Vec::with_capacity(changes.store.len());
        for (pos, _, _) in &changes.store {
            let s = match slot_of.get(pos) {
                Some(&s) => s,
                None => {
                    let s = free_slots.pop().unwrap_or(slot_of.len() as u32);
                    slot_of.insert(*pos, s);
                    s
                }
            };
            slots.push(s);
        }
        let needed = slot_of.values().max().map_or(0, |&s| s + 1);
        // Records: what the heap holds afterwards must fit its range.
        let leaving: rustc_hash::FxHashSet<ChunkPos> = changes
            .drop
            .iter()
            .chain(changes.store.iter().map(|(p, _, _)| p))
            .copied()
            .filter(|p| self.stored.contains_key(p))
            .collect();
        let freed: u64 = leaving
            .iter()
            .map(|p| u64::from(self.stored[p].words))
            .sum();
        let added: u64 = changes
            .store
            .iter()
            .map(|(_, _, r)| r.words.len() as u64)
            .sum();
        let after = self.heap_used - freed + added;
        if after > self.heap_range() {
            return Err(GpuError::LimitExceeded {
                what: "voxel ids of the stored chunks (bytes)",
                needed: after * 4,
                limit: self.max_binding,
            });
        }
        // Where new records can end at worst: above every record that stays.
        let top = self
            .stored
            .iter()
            .filter(|(p, _)| !leaving.contains(p))
            .map(|(_, s)| u64::from(s.record.offset) + u64::from(s.words))
            .max()
            .unwrap_or(0);
        let heap_end = (top + added).min(self.heap_range());
        let (slot_buffers, ids) = self.grow(needed, heap_end)?;
        // Commit.
        if let Some((capacity, [occupancy, slots_buffer])) = slot_buffers {
            upload.grow(&self.occupancy, &occupancy);
            upload.grow(&self.slots, &slots_buffer);
            self.occupancy = occupancy;
            self.slots = slots_buffer;
            self.slot_capacity = capacity;
        }
        if let Some(ids) = ids {
            upload.grow(&self.ids, &ids);
            self.ids = ids;
        }
        for pos in &leaving {
            if let Some(old) = self.stored.remove(pos) {
                self.heap.free(old.record);
                self.heap_used -= u64::from(old.words);
            }
        }
        let mut records = Vec::with_capacity(changes.store.len());
        let mut packed = false;
        loop {
            records.clear();
            for (_, _, record) in &changes.store {
                match self.heap.allocate(record.words.len() as u32) {
                    Some(a) => records.push(a),
                    None => break,
                }
            }
            if records.len() == changes.store.len() {
                break;
            }
            // Too fragmented: pack the records in use into a fresh heap (this call's partial
            // placements go with the old one) and place the new ones again.
            if packed {
                return Err(GpuError::Internal(
                    "no room for the records after packing the heap".into(),
                ));
            }
            self.compact(upload, added)?;
            packed = true;
        }
        self.heap_used += added;
        let mut bytes = 0;
        for (((pos, d, record), slot), alloc) in changes.store.iter().zip(slots).zip(records) {
            self.stored.insert(
                *pos,
                Stored {
                    slot,
                    record: alloc,
                    words: record.words.len() as u32,
                },
            );
            let slot64 = u64::from(slot);
            upload.write(
                &self.occupancy,
                slot64 * (OCCUPANCY_WORDS * 4) as u64,
                bytemuck::cast_slice(&d.occupancy[..]),
            );
            let slot_record = [
                d.bricks as u32,
                (d.bricks >> 32) as u32,
                alloc.offset,
                record.bits,
            ];
            upload.write(
                &self.slots,
                slot64 * (SLOT_WORDS * 4) as u64,
                bytemuck::cast_slice(&slot_record),
            );
            upload.write(
                &self.ids,
                u64::from(alloc.offset) * 4,
                bytemuck::cast_slice(&record.words),
            );
            bytes += stored_bytes(record);
            let s = slot as usize;
            if self.slot_air.len() <= s {
                self.slot_air.resize(s + 1, [0, 0]);
            }
            let (air, brick_air) = d.air_and_brick_air();
            self.slot_air[s] = [air, brick_air];
        }
        self.free_slots = free_slots;
        debug_assert_eq!(self.stored.len(), slot_of.len());
        Ok(bytes)
    }

    /// Words of id records the heap can address: what a binding holds.
    fn heap_range(&self) -> u64 {
        self.max_binding / 4
    }

    /// Packs every record in use anew, in order, into a fresh heap with room for `more` words and
    /// to spare (its records copied there on the GPU, their slot records pointed at them), for a
    /// heap too fragmented to place a record. An allocation failure leaves the world unusable: its
    /// batches then fail with the error.
    fn compact(&mut self, upload: &mut WorldWrite, more: u64) -> Result<(), GpuError> {
        let range = u32::try_from(self.heap_range()).unwrap_or(u32::MAX);
        let mut heap = Allocator::with_max_allocs(range, max_records(self.max_binding));
        let words = heap_capacity(
            (2 * self.heap_used).max(self.heap_used + more),
            self.max_binding,
        );
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let ids = create_storage(&self.device, "ids", words * 4);
        if let Some(e) = crate::gpu::error::error_now(scope) {
            let e = crate::gpu::error::device_error(e);
            upload.fail(&e.to_string());
            return Err(e);
        }
        let mut order: Vec<ChunkPos> = self.stored.keys().copied().collect();
        order.sort_by_key(|p| self.stored[p].record.offset);
        for pos in order {
            let s = self.stored[&pos];
            let placed = heap.allocate(s.words).ok_or_else(|| {
                GpuError::Internal("records in use do not fit a fresh heap".into())
            })?;
            upload.copy(
                &self.ids,
                u64::from(s.record.offset) * 4,
                &ids,
                u64::from(placed.offset) * 4,
                u64::from(s.words) * 4,
            );
            upload.write(
                &self.slots,
                (u64::from(s.slot) * SLOT_WORDS as u64 + 2) * 4,
                bytemuck::bytes_of(&placed.offset),
            );
            if let Some(st) = self.stored.get_mut(&pos) {
                st.record = placed;
            }
        }
        self.heap = heap;
        self.ids = ids;
        self.packs += 1;
        Ok(())
    }

    /// Larger slot buffers where `slots` slots do not fit (doubling, never past what the
    /// device allows), and a larger id heap where `heap_end` words do not fit; made inside an
    /// out-of-memory scope. `None` where a buffer is large enough.
    #[expect(
        clippy::type_complexity,
        reason = "a private step of `apply`: the new buffers or none, each"
    )]
    fn grow(
        &self,
        slots: u32,
        heap_end: u64,
    ) -> Result<(Option<(u32, [wgpu::Buffer; 2])>, Option<wgpu::Buffer>), GpuError> {
        let capacity = if slots > self.slot_capacity {
            let most =
                u32::try_from(self.max_binding / (OCCUPANCY_WORDS * 4) as u64).unwrap_or(u32::MAX);
            let capacity = slots.next_power_of_two().min(most).max(slots);
            check_slots(capacity, self.max_binding)?;
            Some(capacity)
        } else {
            None
        };
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let slot_buffers = capacity.map(|c| (c, slot_buffers(&self.device, c)));
        let ids = (heap_end * 4 > self.ids.size()).then(|| {
            let words = heap_capacity(heap_end.max(self.ids.size() / 4 * 2), self.max_binding);
            create_storage(&self.device, "ids", words * 4)
        });
        match crate::gpu::error::error_now(scope) {
            Some(e) => Err(crate::gpu::error::device_error(e)),
            None => Ok((slot_buffers, ids)),
        }
    }
}

/// `LimitExceeded` where `slots` chunks' occupancy bits exceed a binding.
fn check_slots(slots: u32, max_binding: u64) -> Result<(), GpuError> {
    let bytes = u64::from(slots) * (OCCUPANCY_WORDS * 4) as u64;
    if bytes > max_binding {
        return Err(GpuError::LimitExceeded {
            what: "occupancy of the stored chunks (bytes)",
            needed: bytes,
            limit: max_binding,
        });
    }
    Ok(())
}

/// Words of an id heap that holds `words`: a multiple of 64 KiB, at least [`MIN_HEAP_WORDS`],
/// at most what a binding holds.
fn heap_capacity(words: u64, max_binding: u64) -> u64 {
    words
        .max(MIN_HEAP_WORDS)
        .next_multiple_of(MIN_HEAP_WORDS)
        .min(max_binding / 4)
}

/// Most records the heap's allocator keeps track of: one per chunk whose occupancy a binding
/// holds, and as many free ranges between them.
fn max_records(max_binding: u64) -> u32 {
    let chunks = max_binding / (OCCUPANCY_WORDS * 4) as u64;
    u32::try_from(2 * chunks + 16)
        .unwrap_or(u32::MAX)
        .min(1 << 20)
}

fn slot_buffers(device: &wgpu::Device, capacity: u32) -> [wgpu::Buffer; 2] {
    let capacity = u64::from(capacity);
    [
        create_storage(device, "occupancy", capacity * (OCCUPANCY_WORDS * 4) as u64),
        create_storage(device, "slots", capacity * (SLOT_WORDS * 4) as u64),
    ]
}

pub(super) fn create_storage(device: &wgpu::Device, label: &str, size: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: size.max(4).next_multiple_of(4),
        // COPY_SRC: buffers are copied into larger ones when they grow.
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coords::{LocalPos, WorldPos};
    use crate::world::{ChunkView, VoxelId, VoxelWorld};
    use voxcast_testkit::SplitMix64;

    /// Chunks of 1 to 300 distinct ids, in bricks of one id and of many: every voxel's id
    /// read back from its record as the shader reads it.
    #[test]
    fn records_give_back_every_id() {
        let mut rng = SplitMix64::new(5);
        for distinct in [1u64, 2, 3, 4, 5, 16, 17, 256, 257, 300] {
            let mut world = VoxelWorld::new();
            for i in 0..6000 {
                let p = WorldPos::new(
                    rng.below(32) as i128,
                    rng.below(16) as i128,
                    rng.below(32) as i128,
                );
                // The first ids in order, so that every one of them occurs.
                let id = if i < distinct { i } else { rng.below(distinct) };
                world.set_voxel(p, VoxelId(id as u16 * 3 + 1));
            }
            let chunk = world.chunk(ChunkPos::new(0, 0, 0)).expect("loaded");
            let ChunkView::Dense(d) = chunk.view() else {
                panic!("{distinct} ids: a dense chunk")
            };
            let record = IdRecord::encode(d);
            for i in 0..crate::coords::CHUNK_VOLUME {
                let l = LocalPos::from_index(i);
                assert_eq!(
                    record.id(l.x.into(), l.y.into(), l.z.into()),
                    chunk.get(l).0,
                    "{distinct} ids, voxel {l:?}, {} bits",
                    record.bits
                );
            }
            // The upper half holds only air: bricks of one id, no values.
            let air_bricks = (0..64).filter(|&b| (b >> 2) & 3 >= 2).count();
            let tags = record.words[..RECORD_BRICKS]
                .iter()
                .filter(|&&e| e == BRICK_UNIFORM)
                .count();
            assert!(tags >= air_bricks, "{distinct} ids: {tags} air bricks");
        }
    }
}
