//! The voxel ids of a chunk stored voxel by voxel, packed row by row with each row's occupancy
//! word, so that a short ray finds the id of the voxel it hits in the cache line it read the
//! voxel's occupancy bit from.

use bytemuck::{Pod, Zeroable};

use crate::world::VoxelId;
use crate::world::summary::OCCUPANCY_WORDS;

/// Sixteen words on a cache line of their own: the records' storage, so that a record of 16,
/// 32 or 64 bytes never straddles two lines.
#[repr(C, align(64))]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Line([u32; 16]);

/// A chunk's `32³` ids, one record per x-row of 32 voxels (row `y + 32·z`, as the occupancy
/// words are numbered).
///
/// A record is the row's occupancy word (bit `x` set where voxel `x` is not air) followed by
/// the row's 32 values of 2, 4 or 8 bits each: 16, 32 or 64 bytes, a power of two, stored on
/// 64-byte aligned lines so that no record straddles a cache line. While every id in the chunk
/// fits the width, the values are the ids themselves; otherwise they index a palette of the
/// chunk's ids (at most 256 entries). Beyond that the ids are stored raw, 16 bits each, in
/// 64-byte records without an occupancy word.
///
/// A palette only grows as ids are set. When a new id does not fit, the ids are repacked: with
/// a palette of the ids in use in the narrowest width that leaves at least half of it free (so
/// that at least as many new ids fit before the next repack as were in use), or without one
/// where the ids in use fit a width no wider than that; more than 128 distinct ids in use
/// (and not all below 256) go raw, and an edit never repacks raw ids. Widths change only at a
/// repack, so a chunk keeps the width of its busiest past until then (or until
/// [`PackedIds::shrink_to_fit`] packs the ids in use now): sizes are 16, 32 or
/// 64 KiB of records, typically 32 KiB for the standard terrain (ids 0-6) and 16 KiB for the
/// sparse world (ids 0-3), against 64 KiB as plain `u16` ids.
#[derive(Clone)]
pub(crate) struct PackedIds {
    lines: Box<[Line]>,
    /// Bits per voxel: 2, 4, 8, or 16 (raw ids).
    bits: u32,
    /// log2 of the words per record.
    shift: u32,
    /// Value to id; empty when the values are the ids.
    palette: Vec<VoxelId>,
    /// Repacks so far (tests bound how often they happen).
    #[cfg(test)]
    repacks: u32,
}

impl PackedIds {
    /// Every voxel `id`.
    pub(crate) fn filled(id: VoxelId) -> Self {
        let (palette, value) = if id.0 < 4 {
            (Vec::new(), u32::from(id.0))
        } else {
            (vec![id], 0)
        };
        let mut p = Self::empty(2, palette);
        // The value in every 2-bit field of a word.
        let values = value * 0x5555_5555;
        let occupancy = if id.is_air() { 0 } else { u32::MAX };
        let record_words = 1 << p.shift;
        for record in p.words_mut().chunks_exact_mut(record_words) {
            record[0] = occupancy;
            record[1] = values;
            record[2] = values;
        }
        p
    }

    /// All values 0 and every occupancy word 0, `bits` per voxel.
    fn empty(bits: u32, palette: Vec<VoxelId>) -> Self {
        // Occupancy word plus 32 · bits / 32 words of values, rounded up to a power of two;
        // raw ids have no occupancy word.
        let shift = match bits {
            2 => 2,
            4 => 3,
            _ => 4,
        };
        Self {
            lines: vec![Line::zeroed(); (OCCUPANCY_WORDS << shift) / 16].into_boxed_slice(),
            bits,
            shift,
            palette,
            #[cfg(test)]
            repacks: 0,
        }
    }

    /// Whether each record starts with its row's occupancy word.
    #[inline(always)]
    pub(crate) fn has_occupancy(&self) -> bool {
        self.bits < 16
    }

    /// The records, `1 << record_shift()` words each; the occupancy word of row `r` is
    /// `words()[r << record_shift()]` where [`PackedIds::has_occupancy`].
    #[inline(always)]
    pub(crate) fn words(&self) -> &[u32] {
        bytemuck::cast_slice(&self.lines)
    }

    fn words_mut(&mut self) -> &mut [u32] {
        bytemuck::cast_slice_mut(&mut self.lines)
    }

    /// log2 of the words per record.
    #[inline(always)]
    pub(crate) fn record_shift(&self) -> u32 {
        self.shift
    }

    /// The id of voxel `x` of row `row` (`y + 32·z`).
    #[inline(always)]
    pub(crate) fn id_in_row(&self, row: u32, x: u32) -> VoxelId {
        let bit = x * self.bits;
        let first = u32::from(self.has_occupancy());
        let word = self.words()[((row << self.shift) + first + (bit >> 5)) as usize];
        let v = word >> (bit & 31) & (u32::MAX >> (32 - self.bits));
        if self.palette.is_empty() {
            VoxelId(v as u16)
        } else {
            self.palette[v as usize]
        }
    }

    /// The id of voxel `i` (`x + 32·y + 1024·z`).
    #[inline]
    pub(crate) fn get(&self, i: usize) -> VoxelId {
        self.id_in_row((i >> 5) as u32, (i & 31) as u32)
    }

    /// Every id in voxel order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = VoxelId> + '_ {
        (0..OCCUPANCY_WORDS as u32).flat_map(move |row| self.row(row))
    }

    /// The 32 ids of row `row` (`y + 32·z`), by `x`.
    #[inline]
    pub(crate) fn row(&self, row: u32) -> [VoxelId; 32] {
        let (bits, per_word) = (self.bits as usize, 32 / self.bits as usize);
        let first = ((row << self.shift) + u32::from(self.has_occupancy())) as usize;
        let mask = u32::MAX >> (32 - self.bits);
        let mut out = [VoxelId::AIR; 32];
        // A row's 32 values fill `bits` words, `per_word` values to a word from bit 0 up.
        for (w, &word) in self.words()[first..first + bits].iter().enumerate() {
            for (k, o) in out[w * per_word..(w + 1) * per_word].iter_mut().enumerate() {
                let v = word >> (k * bits) & mask;
                *o = if self.palette.is_empty() {
                    VoxelId(v as u16)
                } else {
                    self.palette[v as usize]
                };
            }
        }
        out
    }

    /// Sets voxel `i` to `id` and returns its old id; keeps the occupancy words current.
    pub(crate) fn set(&mut self, i: usize, id: VoxelId) -> VoxelId {
        let old = self.get(i);
        if old == id {
            return old;
        }
        let v = match self.index_of(id) {
            Some(v) => v,
            None => {
                self.repack(Some(id));
                self.index_of(id)
                    .unwrap_or_else(|| unreachable!("a repack makes room for the new id"))
            }
        };
        self.write(i, v, !id.is_air());
        old
    }

    /// Stores the 32 values of row `row` (palette indices, or raw ids; by `x`) and its
    /// occupancy word `occupied` (bit `x` set where voxel `x` is not air).
    fn write_row(&mut self, row: u32, values: [u32; 32], occupied: u32) {
        let (bits, per_word) = (self.bits as usize, 32 / self.bits as usize);
        let rec = (row << self.shift) as usize;
        let first = rec + usize::from(self.has_occupancy());
        let has_occupancy = self.has_occupancy();
        let words = self.words_mut();
        for (w, word) in words[first..first + bits].iter_mut().enumerate() {
            *word = values[w * per_word..(w + 1) * per_word]
                .iter()
                .enumerate()
                .fold(0, |acc, (k, &v)| acc | v << (k * bits));
        }
        if has_occupancy {
            words[rec] = occupied;
        }
    }

    /// Stores value `v` (a palette index, or the raw id) for voxel `i` and its occupancy bit.
    fn write(&mut self, i: usize, v: u32, occupied: bool) {
        let (row, x) = ((i >> 5) as u32, (i & 31) as u32);
        let rec = (row << self.shift) as usize;
        let bit = x * self.bits;
        let w = rec + usize::from(self.has_occupancy()) + (bit >> 5) as usize;
        let mask = (u32::MAX >> (32 - self.bits)) << (bit & 31);
        let has_occupancy = self.has_occupancy();
        let words = self.words_mut();
        words[w] = words[w] & !mask | v << (bit & 31);
        if has_occupancy {
            if occupied {
                words[rec] |= 1 << x;
            } else {
                words[rec] &= !(1 << x);
            }
        }
    }

    /// The stored value for `id`, adding it to the palette when there is room; `None` when it
    /// does not fit.
    fn index_of(&mut self, id: VoxelId) -> Option<u32> {
        if self.palette.is_empty() {
            let v = u32::from(id.0);
            return (v >> self.bits == 0).then_some(v);
        }
        if let Some(v) = self.palette.iter().position(|&p| p == id) {
            return Some(v as u32);
        }
        (self.palette.len() < 1 << self.bits).then(|| {
            self.palette.push(id);
            (self.palette.len() - 1) as u32
        })
    }

    /// Heap bytes held: the records and the palette.
    pub(crate) fn heap_bytes(&self) -> usize {
        size_of_val::<[Line]>(&self.lines) + self.palette.capacity() * size_of::<VoxelId>()
    }

    /// Packs the ids in use again, as a repack does, where that takes less memory: for a chunk
    /// whose ids were many once (raw, or a wide palette) and are few now.
    pub(crate) fn shrink_to_fit(&mut self) {
        if self.bits == 2 {
            return; // Already the narrowest packing.
        }
        let mut packed = self.clone();
        packed.repack(None);
        if packed.heap_bytes() < self.heap_bytes() {
            *self = packed;
        }
    }

    /// An empty packing for the ids `in_use` (sorted, distinct): a palette of them in the
    /// narrowest width that leaves at least half of it free, unless the ids themselves fit a
    /// width no wider (raw ids where neither fits in 8 bits).
    fn packing_for(in_use: &[VoxelId]) -> Self {
        let largest = u32::from(in_use.last().map_or(0, |id| id.0));
        let direct = [2, 4, 8]
            .into_iter()
            .find(|b| largest >> b == 0)
            .unwrap_or(16);
        let palette = [2, 4, 8].into_iter().find(|b| 1 << b >= 2 * in_use.len());
        match palette {
            Some(bits) if bits < direct => Self::empty(bits, in_use.to_vec()),
            _ => Self::empty(direct, Vec::new()),
        }
    }

    /// The ids of a whole chunk, `ids[i]` for voxel `i` (`x + 32·y + 1024·z`; `ids` holds
    /// `CHUNK_VOLUME` of them), packed as a repack packs the ids in use: one pass to find them,
    /// one to write the records.
    pub(crate) fn from_ids(ids: &[VoxelId]) -> Self {
        let mut used = [0u64; 1024];
        for id in ids {
            used[usize::from(id.0 >> 6)] |= 1 << (id.0 & 63);
        }
        let in_use: Vec<VoxelId> = used
            .iter()
            .enumerate()
            .flat_map(|(w, &bits)| {
                (0..64)
                    .filter(move |b| bits >> b & 1 == 1)
                    .map(move |b| VoxelId((w * 64 + b) as u16))
            })
            .collect();
        let mut p = Self::packing_for(&in_use);
        let palette = p.palette.clone();
        let value = |id: VoxelId| -> u32 {
            if palette.is_empty() {
                u32::from(id.0)
            } else {
                palette.binary_search(&id).unwrap_or_default() as u32
            }
        };
        for (row, r) in ids.chunks_exact(32).enumerate() {
            let mut values = [0u32; 32];
            let mut occupied = 0u32;
            for (x, &id) in r.iter().enumerate() {
                values[x] = value(id);
                occupied |= u32::from(!id.is_air()) << x;
            }
            p.write_row(row as u32, values, occupied);
        }
        p
    }

    /// Packs the ids again to make room for `new`: with a palette of the ids in use, in the
    /// narrowest width that leaves at least half of it free, unless the ids themselves fit a
    /// width no wider (raw ids where neither fits in 8 bits).
    fn repack(&mut self, new: Option<VoxelId>) {
        #[cfg(test)]
        let repacks = self.repacks + 1;
        let mut used = vec![false; 1 << 16];
        for id in self.iter().chain(new) {
            used[usize::from(id.0)] = true;
        }
        let in_use: Vec<VoxelId> = (0..=u16::MAX)
            .filter(|&v| used[usize::from(v)])
            .map(VoxelId)
            .collect();
        let old = std::mem::replace(self, Self::packing_for(&in_use));
        // Each id's new value, looked up once per id in use rather than once per voxel.
        let mut value = vec![0u32; 1 << 16];
        for &id in &in_use {
            value[usize::from(id.0)] = self
                .index_of(id)
                .unwrap_or_else(|| unreachable!("the new packing holds every id in use"));
        }
        for row in 0..OCCUPANCY_WORDS as u32 {
            let ids = old.row(row);
            let occupied = (0..32).fold(0u32, |o, x| o | u32::from(!ids[x].is_air()) << x);
            self.write_row(row, ids.map(|id| value[usize::from(id.0)]), occupied);
        }
        #[cfg(test)]
        {
            self.repacks = repacks;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coords::CHUNK_VOLUME;

    fn occupancy_matches(p: &PackedIds) {
        if !p.has_occupancy() {
            return;
        }
        for row in 0..OCCUPANCY_WORDS as u32 {
            let want = (0..32).fold(0u32, |w, x| {
                w | u32::from(!p.id_in_row(row, x).is_air()) << x
            });
            assert_eq!(
                p.words()[(row << p.record_shift()) as usize],
                want,
                "row {row}"
            );
        }
    }

    /// Fills a chunk with ids `0, step, 2·step, ...` (`n` of them) spread over the voxels.
    fn spread(n: usize, step: usize) -> (PackedIds, Vec<VoxelId>) {
        let mut p = PackedIds::filled(VoxelId::AIR);
        let plain: Vec<VoxelId> = (0..CHUNK_VOLUME)
            .map(|i| VoxelId(((i * 7919 + 1) % n * step) as u16))
            .collect();
        for (i, &v) in plain.iter().enumerate() {
            p.set(i, v);
        }
        (p, plain)
    }

    #[test]
    fn widths_follow_the_ids_and_every_id_reads_back() {
        // (distinct ids, spacing, bits, with a palette)
        for (n, step, bits, palette) in [
            (4, 1, 2, false),
            (7, 1, 4, false),
            (16, 1, 4, false),
            (256, 1, 8, false),
            (4, 1000, 2, true),
            (5, 1000, 4, true),
            (200, 300, 8, true),
            (257, 200, 16, false),
        ] {
            let (p, plain) = spread(n, step);
            let what = format!("{n} ids {step} apart");
            assert_eq!((p.bits, !p.palette.is_empty()), (bits, palette), "{what}");
            assert!(p.iter().eq(plain.iter().copied()), "{what}");
            occupancy_matches(&p);
        }
    }

    #[test]
    fn repacks_drop_unused_entries_and_keep_the_ids() {
        // Ten ids in turn over the whole chunk: each pass leaves one id in use, so the palette
        // never needs more than a few entries.
        let mut p = PackedIds::filled(VoxelId(1));
        for pass in 0..10u16 {
            for i in 0..CHUNK_VOLUME {
                p.set(i, VoxelId(100 + pass));
            }
            assert!(p.iter().all(|v| v == VoxelId(100 + pass)));
            assert!(p.bits <= 4, "pass {pass}: {} bits", p.bits);
        }
        // Raw ids (300 distinct), then all but two replaced: they stay raw and read back,
        // until `shrink_to_fit` packs the two in the narrowest width.
        let (mut q, mut plain) = spread(300, 3);
        assert_eq!(q.bits, 16);
        for (i, v) in plain.iter_mut().enumerate() {
            *v = VoxelId(u16::from(i % 5 == 0) * 9);
            q.set(i, *v);
        }
        assert!(q.iter().eq(plain.iter().copied()));
        occupancy_matches(&q);
        assert_eq!(q.bits, 16);
        q.shrink_to_fit();
        assert!(q.iter().eq(plain.iter().copied()));
        occupancy_matches(&q);
        assert_eq!((q.bits, q.words().len() * 4), (2, 16 * 1024));
        // Already narrowest: nothing changes.
        let before = q.repacks;
        q.shrink_to_fit();
        assert_eq!((q.bits, q.repacks), (2, before));
    }

    /// Edits that bring new ids again and again repack rarely: a palette keeps at least half
    /// of its entries free after a repack, and many ids at once go raw (until `shrink_to_fit`).
    #[test]
    fn new_ids_again_and_again_repack_rarely() {
        // One voxel animated through 1,000 new ids in a chunk of three.
        let (mut p, mut plain) = spread(3, 1);
        for k in 0..1000u16 {
            let id = VoxelId(5000 + k);
            p.set(77, id);
            plain[77] = id;
        }
        assert!(p.iter().eq(plain.iter().copied()));
        assert!(
            p.bits <= 4 && p.repacks <= 1000 / 8,
            "{} bits, {} repacks",
            p.bits,
            p.repacks
        );
        // 255 large ids, then each replaced by a new one: raw after one repack at most.
        let mut q = PackedIds::filled(VoxelId::AIR);
        for k in 0..255 {
            q.set(k, VoxelId(2000 + k as u16));
        }
        let before = q.repacks;
        for k in 0..255 {
            q.set(k, VoxelId(5000 + k as u16));
        }
        assert!(q.repacks - before <= 1, "{} repacks", q.repacks - before);
        assert!((0..255).all(|k| q.get(k) == VoxelId(5000 + k as u16)));
    }

    #[test]
    fn filled_chunks_and_sizes() {
        for id in [0, 1, 3, 4, 999] {
            let p = PackedIds::filled(VoxelId(id));
            assert!(p.iter().all(|v| v == VoxelId(id)), "{id}");
            occupancy_matches(&p);
            assert_eq!(p.words().len() * 4, 16 * 1024);
        }
        let mut p = PackedIds::filled(VoxelId(4));
        for (i, id) in [1u16, 2, 3, 5, 6].into_iter().enumerate() {
            p.set(i, VoxelId(id));
        }
        assert_eq!((p.bits, p.words().len() * 4), (4, 32 * 1024));
        assert!(p.iter().skip(5).all(|v| v == VoxelId(4)));
    }
}
