// voxcast shader, the DDA core: the walk's state and its steps, skips of empty boxes, the
// dense walk through one chunk, the UV of a hit's face, and hits. Twins: crossing_t,
// next_axis and tie_scaled in src/cpu_ref.rs (same names); refresh_axis, dda_step, skip_box,
// walk_dense, hit (Dda::hit) and face_uv in src/cpu_ref/dda.rs (Dda's methods;
// crossings_before, src/cpu_ref.rs, is written out inside skip_box).

// Per-invocation DDA state; twin of `Dda` in src/cpu_ref/dda.rs.
struct Dda {
    voxel: vec3<i32>,
    step: vec3<i32>,        // +1 or -1 per axis, from the ray's flags
    n: vec3<u32>,
    t_next: vec3<f32>,
    t: f32,
    entry_axis: u32,
}

// (b + n) * inv: the n-th crossing on one axis, from the count, never accumulated.
fn crossing_t(b: f32, inv: f32, n: u32) -> f32 {
    return (b + f32(n)) * inv;
}

// The axis whose next crossing comes first; ties go to x, then y, then z.
fn next_axis(t: vec3<f32>) -> u32 {
    if (t.x <= t.y && t.x <= t.z) {
        return 0u;
    } else if (t.y <= t.z) {
        return 1u;
    }
    return 2u;
}

fn axis_enabled(ray: Ray, a: u32) -> bool {
    return ((ray.flags >> (RAY_ENABLED_SHIFT + a)) & 1u) != 0u;
}

fn axis_step(ray: Ray, a: u32) -> i32 {
    return select(1, -1, ((ray.flags >> (RAY_NEGATIVE_SHIFT + a)) & 1u) != 0u);
}

fn refresh_axis(ray: Ray, d: ptr<function, Dda>, a: u32) {
    if (axis_enabled(ray, a)) {
        (*d).t_next[a] = crossing_t(ray.b[a], ray.inv[a], (*d).n[a]);
    } else {
        (*d).t_next[a] = T_DISABLED;
    }
}

// The axis whose next crossing comes first, as a one-hot mask: `next_axis` (same comparisons,
// ties x, then y, then z) without branches. `&` and `|`, not `&&` and `||`: no short-circuit.
fn next_axis_mask(t: vec3<f32>) -> vec3<bool> {
    let is_x = (t.x <= t.y) & (t.x <= t.z);
    let is_y = !is_x & (t.y <= t.z);
    return vec3<bool>(is_x, is_y, !(is_x | is_y));
}

// One DDA step. Returns false beyond max distance. Written with selects on the mask of
// next_axis_mask instead of branches and dynamic vector indexing, which are slow on some
// drivers (lanes of a SIMD group step together); the stepped axis's crossing still comes from
// its count, so the bits are those of the Rust twin. The chosen axis is always enabled: a
// disabled axis sits at T_DISABLED, beyond every max distance.
fn dda_step(ray: Ray, d: ptr<function, Dda>) -> bool {
    let t = (*d).t_next;
    let m = next_axis_mask(t);
    let t_step = select(select(t.z, t.y, m.y), t.x, m.x);
    if (t_step > ray.max_distance) {
        return false;
    }
    let n = (*d).n + select(vec3<u32>(0u), vec3<u32>(1u), m);
    (*d).n = n;
    (*d).t_next = select(t, (ray.b + vec3<f32>(n)) * ray.inv, m);
    (*d).voxel += select(vec3<i32>(0), (*d).step, m);
    (*d).t = t_step;
    (*d).entry_axis = select(select(2u, 1u, m.y), 0u, m.x);
    return true;
}

// Skip to the last voxel inside the box lo..=hi (window-relative, inclusive), before the
// first crossing that leaves it and before any crossing tied with that one (for conservative
// line of sight also near-tied: crossings are compared scaled by NEAR_TIE). Returns false when
// that crossing lies beyond max distance.
fn skip_box(ray: Ray, d: ptr<function, Dda>, lo: vec3<i32>, hi: vec3<i32>) -> bool {
    let conservative = (OPTIONS & FLAG_CONSERVATIVE) != 0u;
    // Written per lane with vectors and selects (same arithmetic as the Rust twin's per-axis
    // loops) because dynamic vector indexing and branches are slow on some drivers.
    let enabled = vec3<bool>(axis_enabled(ray, 0u), axis_enabled(ray, 1u), axis_enabled(ray, 2u));
    let n = (*d).n;
    let k = bitcast<vec3<u32>>(select((*d).voxel - lo, hi - (*d).voxel, (*d).step > vec3<i32>(0)));
    let t_exit = select(vec3<f32>(T_DISABLED), (ray.b + vec3<f32>(n + k)) * ray.inv, enabled);
    let exit_x = (t_exit.x <= t_exit.y) & (t_exit.x <= t_exit.z);
    let exit_y = !exit_x & (t_exit.y <= t_exit.z);
    let exit_mask = vec3<bool>(exit_x, exit_y, !(exit_x | exit_y));
    let t_end = select(select(t_exit.z, t_exit.y, exit_y), t_exit.x, exit_x);
    // Conservative: a crossing within max distance can form an edge with an exit beyond it, so
    // land first and end once the next crossing lies beyond.
    if (!conservative && t_end > ray.max_distance) {
        return false;
    }
    // crossings_before (src/cpu_ref.rs) on the other enabled axes, all lanes at once.
    let counting = enabled & !exit_mask;
    // Start from an estimate just below the count, kept only where its crossing lies before
    // t_end (then so do all earlier ones), so the count stays exact whatever the estimate;
    // long (chunk) skips then take a step or two instead of up to 32.
    var c = crossings_hint(ray, t_end, n, k);
    c = select(vec3<u32>(0u), c, counting & (tie_scaled((ray.b + vec3<f32>(n + c)) * ray.inv) < vec3<f32>(t_end)));
    loop {
        let more = counting & (tie_scaled((ray.b + vec3<f32>(n + c)) * ray.inv) < vec3<f32>(t_end));
        if (!any(more)) {
            break;
        }
        c += select(vec3<u32>(0u), vec3<u32>(1u), more);
    }
    c = select(c, k, exit_mask);
    (*d).n = n + c;
    (*d).voxel += (*d).step * bitcast<vec3<i32>>(c);
    (*d).t_next = select(vec3<f32>(T_DISABLED), (ray.b + vec3<f32>((*d).n)) * ray.inv, enabled);
    let t_next = (*d).t_next;
    if (conservative && min(min(t_next.x, t_next.y), t_next.z) > ray.max_distance) {
        return false;
    }
    return true;
}

// Crossings as skip_box compares them with the one that leaves the box: for conservative
// line of sight scaled by NEAR_TIE, so that a skip also stops before every crossing near-tied
// with that exit. Twin of `tie_scaled` in src/cpu_ref.rs.
fn tie_scaled(t: vec3<f32>) -> vec3<f32> {
    if ((OPTIONS & FLAG_CONSERVATIVE) != 0u) {
        return pin3(t) * NEAR_TIE;
    }
    return t;
}

// An estimate from below of the crossings before t_end on each axis, at most k: where
// skip_box's exact count starts (it checks the estimate, so any value gives the same count).
fn crossings_hint(ray: Ray, t_end: f32, n: vec3<u32>, k: vec3<u32>) -> vec3<u32> {
    let estimate = vec3<f32>(t_end) / ray.inv - ray.b - vec3<f32>(n) - vec3<f32>(1.0);
    return vec3<u32>(clamp(estimate, vec3<f32>(0.0), vec3<f32>(k)));
}

// How walk_dense left its loop.
const WALK_HIT: u32 = 0u;
const WALK_EMPTY_BRICK: u32 = 1u;
const WALK_LEFT_CHUNK: u32 = 2u;
const WALK_MISS: u32 = 3u;

// The hot loop for the dense chunk in `slot`, with the state in locals: examine the current
// voxel and step (exactly as dda_step) until a voxel stops the ray (WALK_HIT, its id in
// *hit_id), the current voxel lies in an empty brick (WALK_EMPTY_BRICK, for the caller to
// skip; never under FLAG_STEP_EMPTY_BRICKS, set for batches of short rays and in worlds with
// little air in empty bricks, where the brick test on every air voxel costs more than the
// skips save; `Dda::walk_dense::<true, _>` is its twin), the ray enters another chunk
// (WALK_LEFT_CHUNK) or it ends (WALK_MISS). Only where the origin policy no longer matters
// and without the conservative tie test. Twin of `Dda::walk_dense` in src/cpu_ref/dda.rs,
// which skips empty bricks itself: here the caller skips, because every lane of a SIMD group
// would carry the skip code. Where every non-air voxel stops the ray (the default), the
// occupancy bit alone decides and the id is read once after the loop, and the time and entry
// axis are made from the last step's axis mask after the loop (the same bits): work after the
// loop runs once, work in it once per step. The Rust twin reads the id and sets those in the
// loop, with the same result. At most 96 steps: each one moves one voxel through the chunk.
fn walk_dense(ray: Ray, d: ptr<function, Dda>, slot: u32, hit_id: ptr<function, u32>) -> u32 {
    let occ_base = slot * OCC_WORDS;
    let brick_bits = vec2<u32>(slots[slot * SLOT_WORDS], slots[slot * SLOT_WORDS + 1u]);
    let base = (*d).voxel & vec3<i32>(~31);
    // The state in separate locals rather than a Dda copy, which the loop would carry whole.
    // Local coordinates in 0..32; a step out of the chunk wraps to 32 or 0xFFFFFFFF.
    var l = bitcast<vec3<u32>>((*d).voxel - base);
    let step = bitcast<vec3<u32>>((*d).step);
    var n = (*d).n;
    var t_next = (*d).t_next;
    // The axis of the last step; its time and the entry axis are made from it after the loop.
    var last = vec3<bool>(false);
    var word = occupancy[occ_base + (l.y | (l.z << 5u))];
    var result = WALK_MISS;
    loop {
        if (((word >> l.x) & 1u) != 0u) {
            // Every non-air voxel stops the ray: the id is read once, after the loop.
            if ((OPTIONS & FLAG_EVERY_NON_AIR) != 0u) {
                result = WALK_HIT;
                break;
            }
            let id = slot_id(slot, l);
            if (stops(id)) {
                *hit_id = id;
                result = WALK_HIT;
                break;
            }
        } else if ((OPTIONS & FLAG_STEP_EMPTY_BRICKS) == 0u) {
            let brick = (l.x >> 3u) | ((l.y >> 3u) << 2u) | ((l.z >> 3u) << 4u);
            let bits = select(brick_bits.x, brick_bits.y, brick >= 32u);
            if (((bits >> (brick & 31u)) & 1u) == 0u) {
                result = WALK_EMPTY_BRICK;
                break;
            }
        }
        // dda_step on the locals.
        let m = next_axis_mask(t_next);
        let t_step = select(select(t_next.z, t_next.y, m.y), t_next.x, m.x);
        if (t_step > ray.max_distance) {
            result = WALK_MISS;
            break;
        }
        last = m;
        n += select(vec3<u32>(0u), vec3<u32>(1u), m);
        t_next = select(t_next, (ray.b + vec3<f32>(n)) * ray.inv, m);
        l += select(vec3<u32>(0u), step, m);
        if (any(l >= vec3<u32>(32u))) {
            result = WALK_LEFT_CHUNK;
            break;
        }
        word = occupancy[occ_base + (l.y | (l.z << 5u))];
    }
    if (result == WALK_HIT && (OPTIONS & FLAG_EVERY_NON_AIR) != 0u) {
        *hit_id = ID_LATER;
    }
    if (any(last)) {
        // The last step's crossing, (b + n - 1) * inv on its axis: the bits of its t_step.
        let crossed = (ray.b + vec3<f32>(n - vec3<u32>(1u))) * ray.inv;
        (*d).t = select(select(crossed.z, crossed.y, last.y), crossed.x, last.x);
        (*d).entry_axis = select(select(2u, 1u, last.y), 0u, last.x);
    }
    (*d).voxel = base + bitcast<vec3<i32>>(l);
    (*d).n = n;
    (*d).t_next = t_next;
    return result;
}

// UV of the entry point on the face crossed on face_axis.
fn face_uv(ray: Ray, n: vec3<u32>, t: f32, face_axis: u32) -> vec2<f32> {
    if (face_axis == AXIS_NONE) {
        return vec2<f32>(0.0);
    }
    var u = 0u;
    var v = 1u;
    if (face_axis == 0u) {
        u = 1u;
        v = 2u;
    } else if (face_axis == 1u) {
        v = 2u;
    }
    return vec2<f32>(face_frac(ray, n, t, u), face_frac(ray, n, t, v));
}

// The direction's component on axis a: 1 / inv on an enabled axis (within 2e-7 of the host's,
// relative: only UV uses it), |d| as uploaded on a disabled one, with the step's sign.
fn ray_dir(ray: Ray, a: u32) -> f32 {
    var m = ray.inv[a];
    if (axis_enabled(ray, a)) {
        m = recip_near(m);
    }
    return select(m, -m, axis_step(ray, a) < 0);
}

// 1 / m for a positive normal m below 2^124, within two ulps: three Newton steps from the
// exponent-flipping first guess (relative error 0.12, then 0.015, 2e-4, 4e-8), each pinned so
// that every GPU computes the same bits. For UV only (1e-5 tolerance), where div_rn's exact
// search would cost more than the rest of a hit.
fn recip_near(m: f32) -> f32 {
    var r = bitcast<f32>(0x7EF311C3u - bitcast<u32>(m));
    for (var k = 0u; k < 3u; k += 1u) {
        r = pin(r * (2.0 - pin(m * r)));
    }
    return r;
}

fn face_frac(ray: Ray, n: vec3<u32>, t: f32, b: u32) -> f32 {
    var f: f32;
    if (n[b] == 0u) {
        var start = ray.b[b];
        if (axis_step(ray, b) > 0) {
            start = pin(1.0 - ray.b[b]);
        }
        f = start + pin(ray_dir(ray, b) * pin(t));
    } else {
        let along = abs(ray_dir(ray, b)) * (pin(t) - pin(crossing_t(ray.b[b], ray.inv[b], n[b] - 1u)));
        f = select(1.0 - pin(along), along, axis_step(ray, b) > 0);
    }
    return clamp(f, 0.0, 1.0);
}

fn make_hit(status: u32, voxel: vec3<i32>, t: f32, id: u32, face_axis: u32, normal_positive: bool, n: vec3<u32>) -> Hit {
    var h: Hit;
    h.voxel = voxel;
    h.status = status | (face_axis << 4u) | select(0u, 64u, normal_positive);
    h.distance = t;
    h.id = id;
    h.uv = vec2<f32>(0.0);
    h.n = n;
    return h;
}

fn miss() -> Hit {
    return make_hit(STATUS_MISS, vec3<i32>(0), 0.0, 0u, AXIS_NONE, false, vec3<u32>(0u));
}

// The hit on the current voxel of d; twin of `Dda::hit` in src/cpu_ref/dda.rs.
fn hit(ray: Ray, d: Dda, id: u32) -> Hit {
    var normal_positive = false;
    if (d.entry_axis != AXIS_NONE) {
        normal_positive = axis_step(ray, d.entry_axis) < 0;
    }
    return make_hit(STATUS_HIT, d.voxel, d.t, id, d.entry_axis, normal_positive, d.n);
}
