// voxcast shader, shapes: where a ray meets the boxes of a shaped voxel id (the rule in the
// crate docs' "Shapes"). Twins: box_plane_t, shape_hit and ShapeHit::answer (shape_answer)
// in src/cpu_ref/shapes.rs.
//
// The world's shape table, bound by every entry point and read only where FLAG_SHAPES is set:
// shapes[0] the number E of id entries, shapes[1 + id] an id's entry (0: the cube; else bit 31,
// the index of its first box from bit 4, the count of its boxes in bits 0..4, 0 for an empty
// shape), then from 1 + E one word per box: 5 bits per bound, min x, y, z then max x, y, z.
@group(0) @binding(16) var<storage, read> shapes: array<u32>;

// The entry of id (0: the cube).
fn shape_entry(id: u32) -> u32 {
    if (id >= shapes[0]) {
        return 0u;
    }
    return shapes[1u + id];
}

// Whether id's shape is empty, so that rays pass it as air.
fn shape_is_empty(id: u32) -> bool {
    let e = shape_entry(id);
    return e != 0u && (e & 15u) == 0u;
}

// Where the boxes of the shape with entry `entry` lie in `shapes`: the first one's index and
// their count.
fn shape_boxes(entry: u32) -> vec2<u32> {
    return vec2<u32>(1u + shapes[0] + ((entry & 0x7FFFFFFFu) >> 4u), entry & 15u);
}

// Box word w's bounds on axis a, in sixteenths of the voxel, in the order a travel along a
// meets them (near, far): from the low face up, or with `negative` from the high face down.
// Twin of `along_travel` in src/cpu_ref/shapes.rs.
fn along_travel(w: u32, a: u32, negative: bool) -> vec2<u32> {
    let lo = (w >> (5u * a)) & 31u;
    let hi = (w >> (5u * (a + 3u))) & 31u;
    if (negative) {
        return vec2<u32>(16u - hi, 16u - lo);
    }
    return vec2<u32>(lo, hi);
}

// The plane k sixteenths along the ray's travel through the voxel entered after m crossings:
// the DDA's crossing rule with a fractional count (exact: an integer below 2^24 over 16).
fn box_plane_t(b: f32, inv: f32, m: u32, k: u32) -> f32 {
    let q = pin(f32((i32(m) - 1) * 16 + i32(k)) * 0.0625);
    return (b + q) * inv;
}

struct ShapeHit {
    found: bool,
    t: f32,
    axis: u32,              // AXIS_NONE at distance 0
}

// Where the ray, in the voxel it entered after n crossings, first meets one of the boxes of the
// shape with entry `entry` within max distance.
fn shape_hit(ray: Ray, n: vec3<u32>, entry: u32) -> ShapeHit {
    // The inverse direction where the ray moves (1 / |d| on an axis it crosses no face of:
    // ray.inv holds |d| there), 0 where it does not move.
    var inv = vec3<f32>(0.0);
    for (var a = 0u; a < 3u; a += 1u) {
        if (axis_enabled(ray, a)) {
            inv[a] = ray.inv[a];
        } else if (ray.inv[a] != 0.0) {
            inv[a] = div_rn(1.0, ray.inv[a]);
        }
    }
    var best = ShapeHit(false, 0.0, AXIS_NONE);
    let boxes = shape_boxes(entry);
    for (var i = 0u; i < boxes.y; i += 1u) {
        let w = shapes[boxes.x + i];
        var t_in = -3.0e38;
        var axis_in = AXIS_NONE;
        var t_out = 3.0e38;
        var inside = true;
        for (var a = 0u; a < 3u; a += 1u) {
            if (inv[a] == 0.0) {
                // The offset from the voxel's high face, b, in sixteenths (exact), against
                // the box's bounds counted from that face.
                let b16 = ray.b[a] * 16.0;
                let down = along_travel(w, a, true);
                if (!(f32(down.x) < b16 && b16 <= f32(down.y))) {
                    inside = false;
                }
                continue;
            }
            let k = along_travel(w, a, axis_step(ray, a) < 0);
            let t_near = box_plane_t(ray.b[a], inv[a], n[a], k.x);
            let t_far = box_plane_t(ray.b[a], inv[a], n[a], k.y);
            if (t_near >= t_in) {
                t_in = t_near;
                axis_in = a;
            }
            if (t_far < t_out) {
                t_out = t_far;
            }
        }
        if (!inside || !(t_in <= t_out && t_out > 0.0)) {
            continue;
        }
        var h = ShapeHit(true, t_in, axis_in);
        if (!(t_in > 0.0)) {
            h = ShapeHit(true, 0.0, AXIS_NONE);
        }
        if (h.t <= ray.max_distance && (!best.found || h.t < best.t)) {
            best = h;
        }
    }
    return best;
}

// The hit on d's voxel where the ray meets its shape; twin of `ShapeHit::answer` in
// src/cpu_ref/shapes.rs.
fn shape_answer(ray: Ray, d: Dda, id: u32, h: ShapeHit) -> Hit {
    var normal_positive = false;
    if (h.axis != AXIS_NONE) {
        normal_positive = axis_step(ray, h.axis) < 0;
    }
    return make_hit(STATUS_HIT, d.voxel, h.t, id, h.axis, normal_positive, d.n);
}

// The id of d's voxel in a dense chunk where the walk left it for later (ID_LATER).
fn voxel_id_now(d: Dda, id: u32) -> u32 {
    if (id != ID_LATER) {
        return id;
    }
    return stored_id(d.voxel);
}
