// voxcast shader, edges and corners: for conservative line of sight, the voxels touching a
// crossed edge or corner that stepping does not visit. Twins: tied_axes, tie_ranks, tie_extra
// and check_tie_extras in src/cpu_ref/ties.rs.

// The axes whose next crossing is t (the first) or near-tied with it: an edge or corner when
// two or three bits are set.
fn tied_axes(t_next: vec3<f32>, t: f32) -> u32 {
    let near = pin(t) * NEAR_TIE;
    return select(0u, 1u, t_next.x <= near) | select(0u, 2u, t_next.y <= near) | select(0u, 4u, t_next.z <= near);
}

// Each axis's place in the order stepping crosses the tie group: by distance, then x, y, z.
fn tie_ranks(t: vec3<f32>, tied: u32) -> vec3<u32> {
    let g = vec3<bool>((tied & 1u) != 0u, (tied & 2u) != 0u, (tied & 4u) != 0u);
    return vec3<u32>(
        select(0u, 1u, g.y && t.y < t.x) + select(0u, 1u, g.z && t.z < t.x),
        select(0u, 1u, g.x && t.x <= t.y) + select(0u, 1u, g.z && t.z < t.y),
        select(0u, 1u, g.x && t.x <= t.z) + select(0u, 1u, g.y && t.y <= t.z));
}

// Whether mask names a voxel touching the tie that stepping does not visit: not a prefix of
// the group in stepping order (its last axis ranks at or above its size).
fn tie_extra(tied: u32, ranks: vec3<u32>, mask: u32) -> bool {
    let m = vec3<bool>((mask & 1u) != 0u, (mask & 2u) != 0u, (mask & 4u) != 0u);
    let ranked = select(vec3<u32>(0u), ranks + vec3<u32>(1u), m);
    let last = max(max(ranked.x, ranked.y), ranked.z);
    return (mask & tied) == mask && last > countOneBits(mask);
}

// Conservative line of sight: test the voxels touching a crossed edge or corner that stepping
// will not visit. Returns a hit with status MISS when none stops the ray.
fn check_tie_extras(ray: Ray, d: Dda, t_cross: f32, air_seen: bool) -> Hit {
    let tied = tied_axes(d.t_next, t_cross);
    if (countOneBits(tied) < 2u) {
        return miss();
    }
    let ranks = tie_ranks(d.t_next, tied);
    for (var mask = 1u; mask < 8u; mask += 1u) {
        if (!tie_extra(tied, ranks, mask)) {
            continue;
        }
        var p = d.voxel;
        var n = d.n;
        // The mask's axis crossed last in stepping order: the face the voxel is entered by.
        var last_axis = 0u;
        var last_rank = 0u;
        for (var a = 0u; a < 3u; a += 1u) {
            if (((mask >> a) & 1u) != 0u) {
                p[a] += axis_step(ray, a);
                n[a] += 1u;
                if (ranks[a] + 1u > last_rank) {
                    last_axis = a;
                    last_rank = ranks[a] + 1u;
                }
            }
        }
        if (beyond_world(p)) {
            continue;
        }
        if ((OPTIONS & FLAG_PARTIAL) != 0u && !held(p)) {
            return make_hit(STATUS_UNLOADED, p, t_cross, 0u, AXIS_NONE, false, vec3<u32>(0u));
        }
        let at = voxel_at(p);
        if (at.x == 1u && (OPTIONS & FLAG_STOP_UNLOADED) != 0u) {
            return make_hit(STATUS_UNLOADED, p, t_cross, 0u, AXIS_NONE, false, vec3<u32>(0u));
        }
        // An empty shape is air (FLAG_SHAPES); other shapes count as their whole voxel here.
        let empty = (OPTIONS & FLAG_SHAPES) != 0u && shape_is_empty(at.y);
        if (at.x == 0u && stops(at.y) && !empty && air_seen) {
            return make_hit(STATUS_HIT, p, t_cross, at.y, last_axis, axis_step(ray, last_axis) < 0, n);
        }
    }
    return miss();
}
