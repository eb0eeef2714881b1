// voxcast shader, box casts: the entry point cast_boxes (src/gpu/boxes.rs). Twin: cast_box is
// `walk` in src/boxcast.rs (the rules in the crate docs, "Box casts").

// One box cast as the host uploads it (BoxCast prepared, window-relative; GpuBox in
// src/gpu/boxes.rs): 80 bytes. Per axis: on a moving axis `lead` and `trail` are the start
// voxels of the leading and the trailing face, `lead_b` and `trail_b` their first crossings and
// `inv` 1 / |d|; on a still axis `lead` and `trail` are the box's highest and lowest voxel and
// `lead_b` and `trail_b` where its high face and low face lie in them (the high face's in
// (0, 1]).
struct GpuBox {
    lead: vec3<i32>,
    flags: u32,             // BOX_* bits, three per field (bit a for axis a), then the ranks
    trail: vec3<i32>,
    max_distance: f32,
    lead_b: vec3<f32>,
    _pad0: u32,
    trail_b: vec3<f32>,
    _pad1: u32,
    inv: vec3<f32>,
    _pad2: u32,
}

// GpuBox.flags
const BOX_MOVING_SHIFT: u32 = 0u;      // bits 0..2: the box moves on the axis
const BOX_NEGATIVE_SHIFT: u32 = 3u;    // bits 3..5: it moves down
const BOX_LEAD_ON_SHIFT: u32 = 6u;     // bits 6..8: the leading face crosses a plane within max distance
const BOX_TRAIL_ON_SHIFT: u32 = 9u;    // bits 9..11: the trailing face does
const BOX_ON_PLANE_SHIFT: u32 = 12u;   // bits 12..14: the leading face starts on a plane
const BOX_RANKS_SHIFT: u32 = 15u;      // bits 15..20: each axis's rank for edges and corners, 2 bits each
const BOX_FLAT_SHIFT: u32 = 21u;       // bits 21..23: the box is flat (half extent 0)

// cast_boxes' bindings: the dispatch's box casts and their answers.
@group(0) @binding(14) var<storage, read> boxes: array<GpuBox>;
@group(0) @binding(15) var<storage, read_write> box_hits: array<GpuHit>;

// What voxel v does to a box: x = 0 nothing, 1 it stops the box (id in y), 2 it counts as
// unloaded (under Stop, or outside the box of chunks a following window holds, whatever the
// policy: the box cannot know what is there).
fn box_voxel(v: vec3<i32>) -> vec2<u32> {
    let stop_unloaded = (OPTIONS & FLAG_STOP_UNLOADED) != 0u;
    let unloaded = vec2<u32>(select(0u, 2u, stop_unloaded), 0u);
    if ((OPTIONS & FLAG_PARTIAL) != 0u && !held(v)) {
        return vec2<u32>(2u, 0u);
    }
    if (!in_window(v)) {
        return unloaded;
    }
    let e = table_entry(v);
    let tag = e & TAG_MASK;
    if (tag == TAG_UNLOADED) {
        return unloaded;
    } else if (tag == TAG_EMPTY) {
        return vec2<u32>(0u);
    }
    var id = e & 0xFFFFu;
    if (tag != TAG_UNIFORM) {
        let l = bitcast<vec3<u32>>(v & vec3<i32>(31));
        if (((occupancy[e * OCC_WORDS + (l.y | (l.z << 5u))] >> l.x) & 1u) == 0u) {
            return vec2<u32>(0u);
        }
        id = slot_id(e, l);
    }
    if (id != 0u && stops(id)) {
        return vec2<u32>(1u, id);
    }
    return vec2<u32>(0u);
}

// Whether voxel v, by rule 6's key (`kind`: how many new layers hold it, 1 a face, 2 an edge,
// 3 a corner; the rank of its face's axis; then x, y, z), comes before the best one so far
// (`best`: its kind and rank; `at`: its voxel; none when `found` is false).
fn box_before(kind: u32, rank: u32, v: vec3<i32>, found: bool, best: vec2<u32>, at: vec3<i32>) -> bool {
    if (!found) {
        return true;
    }
    if (kind != best.x) {
        return kind < best.x;
    }
    if (rank != best.y) {
        return rank < best.y;
    }
    if (v.x != at.x) {
        return v.x < at.x;
    }
    if (v.y != at.y) {
        return v.y < at.y;
    }
    return v.z < at.z;
}

fn box_bit(b: GpuBox, shift: u32, a: u32) -> bool {
    return ((b.flags >> (shift + a)) & 1u) != 0u;
}

fn box_rank(b: GpuBox, a: u32) -> u32 {
    return (b.flags >> (BOX_RANKS_SHIFT + 2u * a)) & 3u;
}

fn box_lead_t(b: GpuBox, a: u32, n: u32) -> f32 {
    if (!box_bit(b, BOX_LEAD_ON_SHIFT, a)) {
        return T_DISABLED;
    }
    return crossing_t(b.lead_b[a], b.inv[a], n);
}

fn box_trail_t(b: GpuBox, a: u32, n: u32) -> f32 {
    if (!box_bit(b, BOX_TRAIL_ON_SHIFT, a)) {
        return T_DISABLED;
    }
    return crossing_t(b.trail_b[a], b.inv[a], n);
}

// The voxels from the trailing face's to the leading face's on axis a, as (lo, hi).
fn box_span(b: GpuBox, a: u32, trail: i32, lead: i32) -> vec2<i32> {
    if (box_bit(b, BOX_NEGATIVE_SHIFT, a)) {
        return vec2<i32>(lead, trail);
    }
    return vec2<i32>(trail, lead);
}

// Whether the box lo..=hi lies outside the window on an axis along which it does not move
// towards it: under Air nothing there stops it (`leaves` in src/boxcast.rs, which asks the
// occupied bounds; the window holds them, and between the two everything is air).
fn box_leaves(b: GpuBox, lo: vec3<i32>, hi: vec3<i32>) -> bool {
    let size = vec3<i32>(params.dims) * 32;
    for (var a = 0u; a < 3u; a++) {
        let moving = box_bit(b, BOX_MOVING_SHIFT, a);
        let down = box_bit(b, BOX_NEGATIVE_SHIFT, a);
        if ((lo[a] >= size[a] && (!moving || !down)) || (hi[a] < 0 && (!moving || down))) {
            return true;
        }
    }
    return false;
}

fn box_step(b: GpuBox, a: u32) -> i32 {
    return select(1, -1, box_bit(b, BOX_NEGATIVE_SHIFT, a));
}

// Lane a of a vector, as a mask: the box walk writes one axis of its vectors with `select`,
// not by a dynamic index.
fn axis_mask(a: u32) -> vec3<bool> {
    return vec3<u32>(0u, 1u, 2u) == vec3<u32>(a);
}

// How a box cast meets the boxes of a shaped voxel it touches as a cube: never, inside one at
// its start, or at a contact (distance t; kind 1 a face, 2 an edge, 3 a corner; the face's axis
// and its rank).
struct BoxTouch {
    state: u32,             // TOUCH_NEVER, TOUCH_INSIDE, TOUCH_AT
    t: f32,
    kind: u32,
    axis: u32,
    rank: u32,
}

const TOUCH_NEVER: u32 = 0u;
const TOUCH_INSIDE: u32 = 1u;
const TOUCH_AT: u32 = 2u;
// Below every crossing distance: a face already past a plane.
const TOUCH_PAST: f32 = -3.0e38;

// box_plane_t for a face's ray that reaches voxel v's plane after m crossings (TOUCH_PAST
// behind it).
fn box_touch_plane(b_face: f32, inv: f32, m: i32, k: u32) -> f32 {
    if (m < 0) {
        return TOUCH_PAST;
    }
    if (m >= (1 << 20u)) {
        return 3.0e38;
    }
    return box_plane_t(b_face, inv, u32(m), k);
}

// Where the moving box first overlaps one of the boxes of the shape with entry `entry` in voxel
// v. Twin of `touch` in src/boxcast/shaped.rs (rule 10 of the box casts).
fn box_shape_touch(b: GpuBox, v: vec3<i32>, entry: u32, ranks: vec3<u32>) -> BoxTouch {
    var best = BoxTouch(TOUCH_NEVER, 0.0, 0u, 0u, 0u);
    let boxes = shape_boxes(entry);
    for (var i = 0u; i < boxes.y; i += 1u) {
        let w = shapes[boxes.x + i];
        var near_t = vec3<f32>(TOUCH_PAST);
        var t_out = 3.0e38;
        var overlaps = true;
        for (var a = 0u; a < 3u; a += 1u) {
            if (!box_bit(b, BOX_MOVING_SHIFT, a)) {
                // The box's bounds from the low face up; the faces' places: the low one in
                // b.trail, the high one in b.lead.
                let up = vec2<f32>(along_travel(w, a, false));
                let f_lo = b.trail_b[a] * 16.0;
                let f_hi = b.lead_b[a] * 16.0;
                if (b.trail[a] == b.lead[a] && b.trail_b[a] == b.lead_b[a]) {
                    overlaps = overlaps && up.x <= f_lo && f_lo < up.y;
                } else {
                    overlaps = overlaps && (v[a] > b.trail[a] || f_lo < up.y)
                        && (v[a] < b.lead[a] || f_hi > up.x);
                }
                continue;
            }
            let s = box_step(b, a);
            let k = along_travel(w, a, s < 0);
            let near = k.x;
            let far = k.y;
            var tn = box_touch_plane(b.lead_b[a], b.inv[a], (v[a] - b.lead[a]) * s, near);
            // A flat box on its near plane is past it (a point lies in what it moves into).
            if (box_bit(b, BOX_FLAT_SHIFT, a) && tn == 0.0) {
                tn = TOUCH_PAST;
            }
            near_t[a] = tn;
            t_out = min(t_out, box_touch_plane(b.trail_b[a], b.inv[a], (v[a] - b.trail[a]) * s, far));
        }
        let t_in = max(max(near_t.x, near_t.y), near_t.z);
        if (!overlaps || !(t_in < t_out && t_out > 0.0)) {
            continue;
        }
        if (t_in < 0.0) {
            return BoxTouch(TOUCH_INSIDE, 0.0, 0u, 0u, 0u);
        }
        if (t_in > b.max_distance) {
            continue;
        }
        let on = near_t == vec3<f32>(t_in);
        let r = select(vec3<u32>(3u), ranks, on);
        let axis = lowest_rank_axis(r);
        let kind = u32(on.x) + u32(on.y) + u32(on.z);
        if (best.state == TOUCH_NEVER || t_in < best.t || (t_in == best.t
                && (kind < best.kind || (kind == best.kind && r[axis] < best.rank)))) {
            best = BoxTouch(TOUCH_AT, t_in, kind, axis, r[axis]);
        }
    }
    return best;
}

// The first contact with a shaped voxel's box found so far (rule 10), later than the walk.
struct BoxLater {
    found: bool,
    t: f32,
    key: vec2<u32>,         // rule 6's kind and rank
    voxel: vec3<i32>,
    id: u32,
    axis: u32,
}

// `p`, or the contact `c` with voxel v of id `id` where that comes first (by distance, then by
// rule 6's key).
fn box_later(p: BoxLater, c: BoxTouch, v: vec3<i32>, id: u32) -> BoxLater {
    if (c.state == TOUCH_AT && (!p.found || c.t < p.t
            || (c.t == p.t && box_before(c.kind, c.rank, v, true, p.key, p.voxel)))) {
        return BoxLater(true, c.t, vec2<u32>(c.kind, c.rank), v, id, c.axis);
    }
    return p;
}

// The axis of the lowest of ranks `r` (3 for an axis left out), written out without a loop:
// every loop iteration counts against llvmpipe's budget (see cast_box).
fn lowest_rank_axis(r: vec3<u32>) -> u32 {
    var axis = 0u;
    if (r.y < r[axis]) {
        axis = 1u;
    }
    if (r.z < r[axis]) {
        axis = 2u;
    }
    return axis;
}

// The shape entry of a stopping id for box casts: 0 for a cube (every id without FLAG_SHAPES).
fn box_shape_entry(id: u32) -> u32 {
    if ((OPTIONS & FLAG_SHAPES) == 0u) {
        return 0u;
    }
    return shape_entry(id);
}

// Loop iterations one box cast may count under FLAG_LOOP_BUDGET: Mesa's llvmpipe (lavapipe) ends
// every loop of a shader once its loops have run 65535 iterations in all for the group of (at
// most 8) invocations it runs together (LP_MAX_TGSI_LOOP_ITERATIONS), which would leave a
// walk half done. A group's count is at most the sum of its invocations' own, each kept below
// an eighth (8191): the count with a step's voxel loops added is checked before they run, and
// what runs before the next check (that loop's own 16 and the trailing faces' few) stays
// within the margin. A cast that needs more ends as STATUS_RUNAWAY, which the host reports as
// GpuError::BoxCastTooLong.
const BOX_LOOP_BUDGET: u32 = 8064u;

// The walk of one box cast. It counts every loop iteration it runs (`iterations`), and spends
// one per voxel it looks at and a few per crossing. It ends without a step limit: every
// crossing lies farther than the last, and the last within max distance.
fn cast_box(b: GpuBox) -> Hit {
    let report = (OPTIONS & FLAG_ORIGIN_MASK) == ORIGIN_REPORT;
    let partial = (OPTIONS & FLAG_PARTIAL) != 0u;
    let ranks = vec3<u32>(box_rank(b, 0u), box_rank(b, 1u), box_rank(b, 2u));
    var lo = b.trail;
    var hi = b.lead;
    var lead = b.lead;
    var n_lead = vec3<u32>(0u);
    var n_trail = vec3<u32>(0u);
    var pending = vec3<bool>(false);
    var t_lead = vec3<f32>(T_DISABLED);
    for (var a = 0u; a < 3u; a++) {
        if (box_bit(b, BOX_MOVING_SHIFT, a)) {
            let m = axis_mask(a);
            let on_plane = box_bit(b, BOX_ON_PLANE_SHIFT, a);
            pending = pending | (m & vec3<bool>(on_plane));
            let l = select(b.lead[a], b.lead[a] - box_step(b, a), on_plane);
            lead = select(lead, vec3<i32>(l), m);
            let s = box_span(b, a, b.trail[a], l);
            lo = select(lo, vec3<i32>(s.x), m);
            hi = select(hi, vec3<i32>(s.y), m);
            t_lead = select(t_lead, vec3<f32>(select(box_lead_t(b, a, 0u), 0.0, on_plane)), m);
        }
    }
    var later = BoxLater(false, 0.0, vec2<u32>(0u), vec3<i32>(0), 0u, 0u);
    // Rule 4: the voxels touched at the start, where they can end the cast: a stopping voxel
    // under Report, an unloaded one under Stop or outside a following window's box; and
    // shaped voxels whose boxes the box meets later.
    var iterations = 0u;
    let stop_unloaded = (OPTIONS & FLAG_STOP_UNLOADED) != 0u;
    let shaped = (OPTIONS & FLAG_SHAPES) != 0u;
    if ((report || stop_unloaded || partial || shaped) && all(lo <= hi)) {
        var s_found = false;
        var s_voxel = vec3<i32>(0);
        var s_id = 0u;
        var u_found = false;
        var u_voxel = vec3<i32>(0);
        for (var z = lo.z; z <= hi.z; z++) {
            iterations += 2u;
            for (var y = lo.y; y <= hi.y; y++) {
                iterations += 2u;
                for (var x = lo.x; x <= hi.x; x++) {
                    iterations++;
                    let v = vec3<i32>(x, y, z);
                    var what = box_voxel(v);
                    let entry = select(0u, box_shape_entry(what.y), what.x == 1u);
                    if (entry != 0u) {
                        iterations += 1u + 4u * (entry & 15u);
                        if ((OPTIONS & FLAG_LOOP_BUDGET) != 0u && iterations > BOX_LOOP_BUDGET) {
                            return make_hit(STATUS_RUNAWAY, vec3<i32>(0), 0.0, 0u, AXIS_NONE, false, vec3<u32>(0u));
                        }
                        let c = box_shape_touch(b, v, entry, ranks);
                        later = box_later(later, c, v, what.y);
                        if (c.state != TOUCH_INSIDE) {
                            what.x = 0u;
                        }
                    }
                    if (what.x == 1u && box_before(0u, 0u, v, s_found, vec2<u32>(0u), s_voxel)) {
                        s_found = true;
                        s_voxel = v;
                        s_id = what.y;
                    } else if (what.x == 2u && box_before(0u, 0u, v, u_found, vec2<u32>(0u), u_voxel)) {
                        u_found = true;
                        u_voxel = v;
                    }
                }
            }
        }
        if ((OPTIONS & FLAG_LOOP_BUDGET) != 0u && iterations > BOX_LOOP_BUDGET) {
            return make_hit(STATUS_RUNAWAY, vec3<i32>(0), 0.0, 0u, AXIS_NONE, false, vec3<u32>(0u));
        }
        if (s_found && report) {
            return make_hit(STATUS_HIT, s_voxel, 0.0, s_id, AXIS_NONE, false, vec3<u32>(0u));
        }
        if (u_found) {
            return make_hit(STATUS_UNLOADED, u_voxel, 0.0, 0u, AXIS_NONE, false, vec3<u32>(0u));
        }
    }
    var result = miss();
    loop {
        // This loop's iteration, the three passes of each loop over the axes below and one
        // more each for the voxel loops' ends.
        iterations += 16u;
        if ((OPTIONS & FLAG_LOOP_BUDGET) != 0u && iterations > BOX_LOOP_BUDGET) {
            result = make_hit(STATUS_RUNAWAY, vec3<i32>(0), 0.0, 0u, AXIS_NONE, false, vec3<u32>(0u));
            break;
        }
        let t = min(min(t_lead.x, t_lead.y), t_lead.z);
        // Rule 10: a shaped voxel's box met before the next layer, or (under Air) before the
        // box leaves what the window holds.
        let leaves = (OPTIONS & FLAG_STOP_UNLOADED) == 0u && !partial && t <= b.max_distance
            && box_leaves(b, lo, hi);
        if (shaped && later.found && (later.t < t || leaves)) {
            result = make_hit(STATUS_HIT, later.voxel, later.t, later.id, later.axis, box_bit(b, BOX_NEGATIVE_SHIFT, later.axis), vec3<u32>(0u));
            break;
        }
        if (t > b.max_distance || leaves) {
            break;
        }
        var entered = 0u;
        var off_world = false;
        for (var a = 0u; a < 3u; a++) {
            if (t_lead[a] == t) {
            entered |= 1u << a;
            let m = axis_mask(a);
            var n = n_lead[a];
            var l = b.lead[a];
            if (!pending[a]) {
                n += 1u;
                l = b.lead[a] + box_step(b, a) * i32(n);
            }
            pending = pending & !m;
            n_lead = select(n_lead, vec3<u32>(n), m);
            lead = select(lead, vec3<i32>(l), m);
            off_world = off_world || beyond_world(select(vec3<i32>(0), vec3<i32>(l), m));
            t_lead = select(t_lead, vec3<f32>(box_lead_t(b, a, n)), m);
            }
        }
        if (off_world) {
            break;
        }
        for (var a = 0u; a < 3u; a++) {
            if (box_bit(b, BOX_MOVING_SHIFT, a)) {
                let m = axis_mask(a);
                var n = n_trail[a];
                while (box_trail_t(b, a, n) <= t) {
                    n += 1u;
                    iterations++;
                }
                n_trail = select(n_trail, vec3<u32>(n), m);
                let s = box_span(b, a, b.trail[a] + box_step(b, a) * i32(n), lead[a]);
                lo = select(lo, vec3<i32>(s.x), m);
                hi = select(hi, vec3<i32>(s.y), m);
            }
        }
        // The iterations the new layers' voxel loops will count (as they count them below).
        var layers = 0u;
        for (var a = 0u; a < 3u; a++) {
            if (((entered >> a) & 1u) != 0u) {
                let span = select(hi, lead, axis_mask(a)) - select(lo, lead, axis_mask(a)) + 1;
                let d = vec3<u32>(max(span, vec3<i32>(0)));
                layers += d.z * 2u + d.z * d.y * 2u + d.z * d.y * d.x;
            }
        }
        if ((OPTIONS & FLAG_LOOP_BUDGET) != 0u && iterations + layers > BOX_LOOP_BUDGET) {
            result = make_hit(STATUS_RUNAWAY, vec3<i32>(0), 0.0, 0u, AXIS_NONE, false, vec3<u32>(0u));
            break;
        }
        // Rules 5 and 6: the voxels of the new layers.
        let in_layer = ((vec3<u32>(entered) >> vec3<u32>(0u, 1u, 2u)) & vec3<u32>(1u)) != vec3<u32>(0u);
        var s_found = shaped && later.found && later.t == t;
        var s_key = later.key;
        var s_voxel = later.voxel;
        var s_id = later.id;
        var s_axis = later.axis;
        var u_found = false;
        var u_key = vec2<u32>(0u);
        var u_voxel = vec3<i32>(0);
        for (var a = 0u; a < 3u; a++) {
            if (((entered >> a) & 1u) != 0u) {
            let slo = select(lo, lead, axis_mask(a));
            let shi = select(hi, lead, axis_mask(a));
            for (var z = slo.z; z <= shi.z; z++) {
                iterations += 2u;
                for (var y = slo.y; y <= shi.y; y++) {
                    iterations += 2u;
                    for (var x = slo.x; x <= shi.x; x++) {
                        iterations++;
                        let v = vec3<i32>(x, y, z);
                        // The axes whose new layer holds v; v was seen with an earlier one's.
                        let mine = in_layer & (v == lead);
                        let earlier = any(mine & (vec3<u32>(0u, 1u, 2u) < vec3<u32>(a)));
                        let kind = u32(mine.x) + u32(mine.y) + u32(mine.z);
                        // The axis of lowest rank among those whose layer holds v.
                        let r = select(vec3<u32>(3u), ranks, mine);
                        let axis = lowest_rank_axis(r);
                        let rank = r[axis];
                        if (!earlier) {
                            var what = box_voxel(v);
                            let entry = select(0u, box_shape_entry(what.y), what.x == 1u);
                            if (entry != 0u) {
                                // A shaped voxel: met where the box first overlaps one of its
                                // boxes, now at the earliest.
                                what.x = 0u;
                                iterations += 1u + 4u * (entry & 15u);
                                if ((OPTIONS & FLAG_LOOP_BUDGET) != 0u && iterations + layers > BOX_LOOP_BUDGET) {
                                    return make_hit(STATUS_RUNAWAY, vec3<i32>(0), 0.0, 0u, AXIS_NONE, false, vec3<u32>(0u));
                                }
                                let c = box_shape_touch(b, v, entry, ranks);
                                if (c.state == TOUCH_AT && c.t == t
                                        && box_before(c.kind, c.rank, v, s_found, s_key, s_voxel)) {
                                    s_found = true;
                                    s_key = vec2<u32>(c.kind, c.rank);
                                    s_voxel = v;
                                    s_id = what.y;
                                    s_axis = c.axis;
                                } else if (c.t > t) {
                                    later = box_later(later, c, v, what.y);
                                }
                            }
                            if (what.x == 1u && box_before(kind, rank, v, s_found, s_key, s_voxel)) {
                                s_found = true;
                                s_key = vec2<u32>(kind, rank);
                                s_voxel = v;
                                s_id = what.y;
                                s_axis = axis;
                            } else if (what.x == 2u && box_before(kind, rank, v, u_found, u_key, u_voxel)) {
                                u_found = true;
                                u_key = vec2<u32>(kind, rank);
                                u_voxel = v;
                            }
                        }
                    }
                }
            }
            }
        }
        if (s_found) {
            result = make_hit(STATUS_HIT, s_voxel, t, s_id, s_axis, box_bit(b, BOX_NEGATIVE_SHIFT, s_axis), vec3<u32>(0u));
            break;
        }
        if (u_found) {
            result = make_hit(STATUS_UNLOADED, u_voxel, t, 0u, AXIS_NONE, false, vec3<u32>(0u));
            break;
        }
    }
    return result;
}

@compute @workgroup_size(64)
fn cast_boxes(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = invocation_index(gid, groups);
    if (i >= params.ray_count || i >= arrayLength(&boxes)) {
        return;
    }
    let b = boxes[i];
    box_hits[i] = pack_hit(cast_box(b), b.lead);
}
