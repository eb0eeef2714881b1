// voxcast shader, the window: which ids stop a ray, whether the window holds a voxel, its
// chunk's entry in the chunk table, the summaries of empty bricks and regions, and a voxel's
// id in its chunk's record (src/gpu/window.rs, src/gpu/store.rs). Twins: empty_block and
// empty_box in src/world/summary.rs; region_run is RegionCache::run in src/cpu_ref.rs.

fn stops(id: u32) -> bool {
    if ((OPTIONS & FLAG_EVERY_NON_AIR) != 0u) {
        return id != 0u;
    }
    return ((filter_bits[id >> 7u][(id >> 5u) & 3u] >> (id & 31u)) & 1u) != 0u;
}

fn in_window(v: vec3<i32>) -> bool {
    let size = vec3<i32>(params.dims) * 32;
    return all(v >= vec3<i32>(0)) && all(v < size);
}

// Whether v lies beyond the i128 world: outside the window across a face that is the world's
// edge (the window has no margin there). The CPU twin is the i128 range itself: `carry_chunk`
// refuses such a step (the ray ends as a miss) and `check_tie_extras` skips such a voxel.
fn beyond_world(v: vec3<i32>) -> bool {
    let size = vec3<i32>(params.dims) * 32;
    let low = (vec3<u32>(params.world_edge) >> vec3<u32>(0u, 1u, 2u)) & vec3<u32>(1u);
    let high = (vec3<u32>(params.world_edge) >> vec3<u32>(3u, 4u, 5u)) & vec3<u32>(1u);
    return any((v < vec3<i32>(0)) & (low != vec3<u32>(0u))) || any((v >= size) & (high != vec3<u32>(0u)));
}

// The lowest and highest voxel (window-relative, inclusive) of the box of chunks a window
// holds: the window less its margin of a chunk on each face that is not the i128 world's edge
// (Window::interior in src/gpu/window.rs).
fn held_lo() -> vec3<i32> {
    let low = (vec3<u32>(params.world_edge) >> vec3<u32>(0u, 1u, 2u)) & vec3<u32>(1u);
    return select(vec3<i32>(32), vec3<i32>(0), low != vec3<u32>(0u));
}

fn held_hi() -> vec3<i32> {
    let high = (vec3<u32>(params.world_edge) >> vec3<u32>(3u, 4u, 5u)) & vec3<u32>(1u);
    return vec3<i32>(params.dims) * 32 - select(vec3<i32>(33), vec3<i32>(1), high != vec3<u32>(0u));
}

// Whether v lies in that box.
fn held(v: vec3<i32>) -> bool {
    return all(v >= held_lo()) && all(v <= held_hi());
}

// (a + b) mod n for a, b in 0..n where the table is toroidal (b is 0 where it is not).
fn wrap_add(a: vec3<u32>, b: vec3<u32>, n: vec3<u32>) -> vec3<u32> {
    if ((OPTIONS & FLAG_TOROIDAL) == 0u) {
        return a;
    }
    let s = a + b;
    return select(s, s - n, s >= n);
}

// The table entry of the chunk holding window voxel v (in the window).
fn table_entry(v: vec3<i32>) -> u32 {
    let c = wrap_add(vec3<u32>(v >> vec3<u32>(5u)), params.table_phase, params.dims);
    return chunk_table[c.x + params.dims.x * (c.y + params.dims.y * c.z)];
}

// The largest empty block of entries around entry b (each in 0..4) of a 4x4x4 summary, given
// as its two words w (bit set = the entry is not empty; entries with z >= 2 in w.y), as
// inclusive entry corners in *lo and *hi; false when entry b is not empty. The first empty one
// of: the half holding b (4x2x4 entries), its layer (4x1x4), its aligned 2x2x2 block, b alone.
// Twin of `empty_block` in src/world/summary.rs: a layer has entries in both words, a 2x2x2
// block only in the word of its own entries.
fn empty_block(w: vec2<u32>, b: vec3<u32>, lo: ptr<function, vec3<u32>>, hi: ptr<function, vec3<u32>>) -> bool {
    let bit = b.x | (b.y << 2u) | (b.z << 4u);
    let word = select(w.x, w.y, bit >= 32u);
    if (((word >> (bit & 31u)) & 1u) != 0u) {
        return false;
    }
    let y2 = b.y & ~1u;
    if (((w.x | w.y) & (HALF_BITS << (4u * y2))) == 0u) {
        *lo = vec3<u32>(0u, y2, 0u);
        *hi = vec3<u32>(3u, y2 + 1u, 3u);
    } else if (((w.x | w.y) & (LAYER_BITS << (4u * b.y))) == 0u) {
        *lo = vec3<u32>(0u, b.y, 0u);
        *hi = vec3<u32>(3u, b.y, 3u);
    } else if (((word >> (bit & 0xAu)) & BLOCK_BITS) == 0u) {
        // bit & 0xA: the block's lowest entry within the word (bit 1 of entry x and of entry y).
        *lo = b & vec3<u32>(~1u);
        *hi = *lo + vec3<u32>(1u);
    } else {
        *lo = b;
        *hi = b;
    }
    return true;
}

// The largest empty box of whole bricks around local voxel l of the dense chunk in `slot`, as inclusive local
// corners in *lo and *hi; false when l's brick is not empty: empty_block over the chunk's
// bricks (32x16x32, 32x8x32, 16^3 or 8^3 voxels). Twin of `empty_box` in
// src/world/summary.rs.
fn empty_box(slot: u32, l: vec3<u32>, lo: ptr<function, vec3<u32>>, hi: ptr<function, vec3<u32>>) -> bool {
    let w = vec2<u32>(slots[slot * SLOT_WORDS], slots[slot * SLOT_WORDS + 1u]);
    var blo: vec3<u32>;
    var bhi: vec3<u32>;
    if (!empty_block(w, l >> vec3<u32>(3u), &blo, &bhi)) {
        return false;
    }
    *lo = blo << vec3<u32>(3u);
    *hi = (bhi << vec3<u32>(3u)) | vec3<u32>(7u);
    return true;
}

// The run of chunks to cross in one step from window chunk c, which holds nothing that stops
// the ray: the largest empty block of its region (4x4x4 chunks) in the region's record, which
// follows the chunk entries in the chunk table (two words for UnloadedPolicy::Air, then two for
// Stop). Writes it as inclusive window-relative voxel corners to *lo and *hi (a run may reach
// past the window), and leaves them (the chunk alone) when c blocks runs. Twin of
// `RegionCache::run` in src/cpu_ref.rs.
fn region_run(c: vec3<i32>, stop_unloaded: bool, lo: ptr<function, vec3<i32>>, hi: ptr<function, vec3<i32>>) {
    let phase = (vec3<u32>(params.region_phase) >> vec3<u32>(0u, 2u, 4u)) & vec3<u32>(3u);
    let rc = vec3<u32>(c) + phase;
    let rdims = params.region_dims;
    let r = wrap_add(rc >> vec3<u32>(2u), params.region_table_phase, rdims);
    let record = params.dims.x * params.dims.y * params.dims.z
        + 4u * (r.x + rdims.x * (r.y + rdims.y * r.z)) + select(0u, 2u, stop_unloaded);
    let w = vec2<u32>(chunk_table[record], chunk_table[record + 1u]);
    let at = rc & vec3<u32>(3u);
    var blo: vec3<u32>;
    var bhi: vec3<u32>;
    if (empty_block(w, at, &blo, &bhi)) {
        *lo = (c + bitcast<vec3<i32>>(blo) - bitcast<vec3<i32>>(at)) * 32;
        *hi = (c + bitcast<vec3<i32>>(bhi) - bitcast<vec3<i32>>(at)) * 32 + vec3<i32>(31);
    }
}

// The id of local voxel l of the chunk in `slot`, from its id record: the brick's own id, or
// its value (through the palette below 16 bits).
fn slot_id(slot: u32, l: vec3<u32>) -> u32 {
    let record = slots[slot * SLOT_WORDS + 2u];
    let bits = slots[slot * SLOT_WORDS + 3u];
    let brick = (l.x >> 3u) | ((l.y >> 3u) << 2u) | ((l.z >> 3u) << 4u);
    let entry = ids[record + brick];
    if ((entry & BRICK_UNIFORM) != 0u) {
        return entry & 0xFFFFu;
    }
    let bit = ((l.x & 7u) | ((l.y & 7u) << 3u) | ((l.z & 7u) << 6u)) * bits;
    let v = (ids[record + entry + (bit >> 5u)] >> (bit & 31u)) & ((1u << bits) - 1u);
    if (bits == 16u) {
        return v;
    }
    return (ids[record + RECORD_BRICKS + (v >> 1u)] >> ((v & 1u) * 16u)) & 0xFFFFu;
}

// Id of voxel v of a stored (dense) chunk.
fn stored_id(v: vec3<i32>) -> u32 {
    return slot_id(table_entry(v), vec3<u32>(v & vec3<i32>(31)));
}

// Id of any voxel, for the conservative corner test. x = 0 loaded, 1 unloaded; y = id.
fn voxel_at(v: vec3<i32>) -> vec2<u32> {
    if (!in_window(v)) {
        return vec2<u32>(1u, 0u);
    }
    let e = table_entry(v);
    let tag = e & TAG_MASK;
    if (tag == TAG_UNLOADED) {
        return vec2<u32>(1u, 0u);
    } else if (tag == TAG_EMPTY) {
        return vec2<u32>(0u, 0u);
    } else if (tag == TAG_UNIFORM) {
        return vec2<u32>(0u, e & 0xFFFFu);
    }
    return vec2<u32>(0u, slot_id(e, vec3<u32>(v & vec3<i32>(31))));
}
