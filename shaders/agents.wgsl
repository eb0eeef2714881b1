// voxcast shader, agent pairs: the entry point cast_pairs, line of sight between two agents'
// eyes (src/gpu/agents.rs). Twin: segment in src/ray.rs.

// One agent's eye as the host uploads it (Agent::eye, window-relative; GpuAgent in
// src/gpu/agents.rs): 32 bytes. The host answers the pairs of an agent that is not usable (an
// invalid eye, or one the window does not hold with a voxel to spare below it), so those never
// reach the shader.
struct GpuAgent {
    voxel: vec3<i32>,
    usable: u32,
    sub: vec3<f32>,
    _pad: u32,
}

// cast_pairs' bindings: pairs of agent indices, the agents' eyes, and per pair a visibility
// bit (the dispatch's first ceil(count / 32) words), then with Params.details its answer (5
// words).
@group(0) @binding(8) var<storage, read> pairs: array<vec2<u32>>;
@group(0) @binding(9) var<storage, read> agents: array<GpuAgent>;
@group(0) @binding(10) var<storage, read_write> pair_out: array<atomic<u32>>;

// Status of a pair's answer besides those of Hit.status: the eyes are too far apart
// (RayError::MaxDistanceTooLarge).
const STATUS_TOO_LONG: u32 = 5u;
const MAX_DISTANCE_CAP: f32 = 65536.0;
const MIN_SQUARED_LENGTH: f32 = 0x1p-60f;

// The unit direction (xyz) and length (w) of a segment whose difference vector is d; a length
// of 0 where the points are too close, -1 where too far apart. Twin of `segment` in
// src/ray.rs: every operation correctly rounded, so every GPU gives its bits.
fn segment(d: vec3<f32>) -> vec4<f32> {
    let sq = pin3(d * d);
    let squared = pin(sq.x + sq.y) + sq.z;
    if (!(squared >= MIN_SQUARED_LENGTH)) {
        return vec4<f32>(0.0);
    }
    let length = sqrt_rn(squared);
    if (length > MAX_DISTANCE_CAP) {
        return vec4<f32>(0.0, 0.0, 0.0, -1.0);
    }
    let r = div_rn(1.0, length);
    return vec4<f32>(d * r, length);
}

// Line of sight between the eyes of a pair of agents: the segment from agent a's eye to agent
// b's (the host orders each pair's eyes, lower first, as VoxelRay::sight_line does), built as
// VoxelRay::between builds it, or of length 0 along +x where the eyes are too close; cast as
// cast_rays casts a segment; sets the pair's bit where nothing blocks it, and writes its
// answer with Params.details.
@compute @workgroup_size(64)
fn cast_pairs(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = invocation_index(gid, groups);
    if (i >= params.ray_count || i >= arrayLength(&pairs)) {
        return;
    }
    let pair = pairs[i];
    let a = agents[pair.x];
    let b = agents[pair.y];
    // VoxelRay::between: the voxel difference (exact) plus the offsets' difference.
    let seg = segment(vec3<f32>(b.voxel - a.voxel) + pin3(b.sub - a.sub));
    var h = miss();
    if (seg.w < 0.0) {
        h = make_hit(STATUS_TOO_LONG, a.voxel, 0.0, 0u, AXIS_NONE, false, vec3<u32>(0u));
    } else {
        // One call of cast_segment (drivers inline it whole): eyes too close for a direction
        // give the segment of length 0 along +x.
        let dir = select(seg.xyz, vec3<f32>(1.0, 0.0, 0.0), seg.w == 0.0);
        h = cast_segment(made_ray(a.voxel, a.sub, dir, seg.w), params.details != 0u);
    }
    if ((h.status & 15u) == STATUS_MISS) {
        atomicOr(&pair_out[i >> 5u], 1u << (i & 31u));
    }
    if (params.details != 0u) {
        let o = pack_hit(h, a.voxel);
        let at = (params.ray_count + 31u) / 32u + 5u * i;
        atomicStore(&pair_out[at], o.w0);
        atomicStore(&pair_out[at + 1u], o.w1);
        atomicStore(&pair_out[at + 2u], o.w2);
        atomicStore(&pair_out[at + 3u], o.distance);
        atomicStore(&pair_out[at + 4u], o.uv);
    }
}
