// voxcast shader, rays: the entry point cast_rays (rays and segments uploaded as GpuRay,
// answered as GpuHit: src/gpu/layout.rs), and what the other entry points share with it: an
// invocation's index, a hit packed for the host (pack_hit), and a ray made in the shader
// (made_ray and prepare_axis, twins of VoxelRay::new and VoxelRay::prepare in src/ray.rs).

// cast_rays' bindings (cast_camera binds the same): rays in, answers out.
@group(0) @binding(6) var<storage, read> rays: array<GpuRay>;
@group(0) @binding(7) var<storage, read_write> hits: array<GpuHit>;

fn unpack_ray(r: GpuRay) -> Ray {
    var ray: Ray;
    ray.voxel = r.voxel;
    ray.flags = r.flags & RAY_FLAG_BITS;
    ray.b = r.b;
    ray.max_distance = r.max_distance;
    ray.inv = r.inv;
    let lo = r.flags >> 12u;
    ray.n = vec3<u32>(lo, (lo >> 17u) | (r.counts_hi << 3u), r.counts_hi >> 14u) & vec3<u32>(COUNT_BITS);
    return ray;
}

// `h` as the host reads it, its voxel relative to `start` (the ray's uploaded start voxel).
fn pack_hit(h: Hit, start: vec3<i32>) -> GpuHit {
    let d = bitcast<vec3<u32>>(h.voxel - start) & vec3<u32>(0x3FFFFu);
    let unit = clamp(vec2<f32>(pin(h.uv.x), pin(h.uv.y)), vec2<f32>(0.0), vec2<f32>(1.0));
    let uv = vec2<u32>(round(unit * 8388607.0));
    var o: GpuHit;
    o.w0 = d.x | (h.id << 18u);
    o.w1 = d.y | ((h.id >> 14u) << 18u) | ((h.status & STATUS_BITS) << 20u);
    o.w2 = d.z | ((uv.y >> 9u) << 18u);
    o.distance = bitcast<u32>(h.distance);
    o.uv = uv.x | (uv.y << 23u);
    return o;
}

fn invocation_index(gid: vec3<u32>, groups: vec3<u32>) -> u32 {
    return gid.x + gid.y * groups.x * 64u;
}

@compute @workgroup_size(64)
fn cast_rays(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = invocation_index(gid, groups);
    if (i >= params.ray_count || i >= arrayLength(&rays)) {
        return;
    }
    let r = rays[i];
    var ray: Ray;
    if ((OPTIONS & FLAG_RAYS_AS_GIVEN) != 0u && r.counts_hi == RAY_SET_UP_IN_SHADER) {
        ray = made_ray(r.voxel, r.b, r.inv, r.max_distance);
    } else {
        ray = unpack_ray(r);
    }
    // Relative to the voxel uploaded, which the host decodes against.
    hits[i] = pack_hit(cast_segment(ray, true), r.voxel);
}

// One axis of VoxelRay::prepare (src/ray.rs): flush a denormal component, apply the start-voxel
// rule and decide whether the axis is enabled. Returns the updated ray.
fn prepare_axis(ray_in: Ray, a: u32, d_raw: f32, sub: f32) -> Ray {
    var ray = ray_in;
    let d = pin(select(d_raw, 0.0, abs(d_raw) < MIN_NORMAL));
    // PreparedRay::plane_axes: the ray lies in a voxel face plane on this axis.
    if (d == 0.0 && sub == 0.0) {
        ray.flags |= 1u << (RAY_PLANE_SHIFT + a);
    }
    if (d < 0.0) {
        ray.flags |= 1u << (RAY_NEGATIVE_SHIFT + a);
        if (sub == 0.0) {
            ray.voxel[a] -= 1;
            ray.b[a] = 1.0;
        } else {
            ray.b[a] = sub;
        }
    } else {
        ray.b[a] = pin(1.0 - sub);
    }
    ray.inv[a] = abs(d);
    if (d != 0.0) {
        let inv = div_rn(1.0, abs(d));
        if (ray.b[a] * inv <= ray.max_distance) {
            ray.flags |= 1u << (RAY_ENABLED_SHIFT + a);
            ray.inv[a] = inv;
        }
    }
    return ray;
}

// A ray made in the shader (a ray uploaded as given, a camera's pixel, a pair's segment, a
// sensor's ray) from its start voxel, the offset in it, its unit direction and its max
// distance, as VoxelRay::new makes it.
fn made_ray(voxel: vec3<i32>, sub: vec3<f32>, dir: vec3<f32>, max_distance: f32) -> Ray {
    var ray: Ray;
    ray.voxel = voxel;
    ray.flags = AXIS_NONE << RAY_ENTRY_SHIFT;
    ray.max_distance = max_distance;
    ray.n = vec3<u32>(0u);
    for (var a = 0u; a < 3u; a += 1u) {
        ray = prepare_axis(ray, a, dir[a], sub[a]);
    }
    return ray;
}
