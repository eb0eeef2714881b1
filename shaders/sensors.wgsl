// voxcast shader, sensors: the entry point cast_sensors, a rig's rays from agents' poses
// (src/gpu/sensors.rs). Twins: rotation_matrix, sensor_dir and sense_word (`word`) in
// src/sensors.rs.

// One agent's sensor pose as the host uploads it (SensorPose, window-relative; GpuPose in
// src/gpu/sensors.rs): 32 bytes. The voxel and offset as VoxelRay::new normalises them, and
// the rotation packed in 62 bits (src/sensors.rs, pack_rotation): rotation_lo bits 0..2 the
// largest component's index, then the other three as 20-bit two's complement multiples of
// 2^-19, continued in rotation_hi. The host answers agents whose pose is bad or outside the
// window, so those never reach the shader.
struct GpuPose {
    voxel: vec3<i32>,
    rotation_lo: u32,
    sub: vec3<f32>,
    rotation_hi: u32,
}

// cast_sensors' bindings: the dispatch's agents' poses, the rig, and per ray its word
// (sense_word), or with Params.details its answer (5 words). The rig (src/gpu/sensors.rs,
// GpuSensorRig::new): its rays in a coherent order (the bits of a unit direction xyz in the
// agent's frame, max distance w), then each one's index in the rig, four to an element.
@group(0) @binding(11) var<storage, read> poses: array<GpuPose>;
@group(0) @binding(12) var<storage, read> rig: array<vec4<u32>>;
@group(0) @binding(13) var<storage, read_write> sensed: array<u32>;

// A packed rotation's stored components are multiples of this.
const ROTATION_STEP: f32 = 0x1p-19f;

// The rotation matrix (rows) of a packed rotation; twin of `rotation_matrix` in
// src/sensors.rs. The stored components convert exactly (20-bit integers times a power of
// two); the largest is the root of one less their squares, at least 1/2, so every value here is
// 0 or far above the subnormal range (the rig's directions are multiples of 2^-22).
fn rotation_matrix(lo: u32, hi: u32) -> array<vec3<f32>, 3> {
    let largest = lo & 3u;
    let raw = vec3<u32>(lo >> 2u, (lo >> 22u) | (hi << 10u), hi >> 10u) & vec3<u32>(0xFFFFFu);
    let stored = pin3(vec3<f32>(bitcast<vec3<i32>>(raw << vec3<u32>(12u)) >> vec3<u32>(12u)) * ROTATION_STEP);
    let sq = pin3(stored * stored);
    let big = sqrt_rn(pin(1.0 - pin(pin(sq.x + sq.y) + sq.z)));
    var q = vec4<f32>(0.0);
    var next = 0u;
    for (var i = 0u; i < 4u; i += 1u) {
        if (i == largest) {
            q[i] = big;
        } else {
            q[i] = stored[next];
            next += 1u;
        }
    }
    let x = q.x;
    let y = q.y;
    let z = q.z;
    let w = q.w;
    let xx = pin(x * x);
    let yy = pin(y * y);
    let zz = pin(z * z);
    let xy = pin(x * y);
    let xz = pin(x * z);
    let yz = pin(y * z);
    let wx = pin(w * x);
    let wy = pin(w * y);
    let wz = pin(w * z);
    return array<vec3<f32>, 3>(
        pin3(vec3<f32>(1.0 - pin(2.0 * pin(yy + zz)), 2.0 * pin(xy - wz), 2.0 * pin(xz + wy))),
        pin3(vec3<f32>(2.0 * pin(xy + wz), 1.0 - pin(2.0 * pin(xx + zz)), 2.0 * pin(yz - wx))),
        pin3(vec3<f32>(2.0 * pin(xz - wy), 2.0 * pin(yz + wx), 1.0 - pin(2.0 * pin(xx + yy)))),
    );
}

// Rig direction d turned by the rows m; twin of `sensor_dir` in src/sensors.rs:
// (m0 * d.x + m1 * d.y) + m2 * d.z per component, each operation rounded once.
fn sensor_dir(m: array<vec3<f32>, 3>, d: vec3<f32>) -> vec3<f32> {
    let r0 = pin3(m[0] * d);
    let r1 = pin3(m[1] * d);
    let r2 = pin3(m[2] * d);
    return vec3<f32>(pin(r0.x + r0.y) + r0.z, pin(r1.x + r1.y) + r1.z, pin(r2.x + r2.y) + r2.z);
}

// A sensor ray's word (src/sensors.rs, `word`): the distance of a hit, +infinity for a miss,
// the negated distance for unloaded space (the sign bit set, also at 0).
fn sense_word(h: Hit) -> u32 {
    let status = h.status & 15u;
    if (status == STATUS_HIT) {
        return bitcast<u32>(h.distance);
    } else if (status == STATUS_UNLOADED) {
        return bitcast<u32>(h.distance) | 0x80000000u;
    } else if (status == STATUS_MISS) {
        return 0x7F800000u;
    }
    // A walk past the step limit: NaN, which the host reports as an internal error.
    return 0x7FC00000u | status;
}

// Ray k of the rig from the pose of agent a (of the dispatch), made as SensorPose::ray makes
// it and cast as a camera's pixel is.
@compute @workgroup_size(64)
fn cast_sensors(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = invocation_index(gid, groups);
    if (i >= params.ray_count || params.sensor_rays == 0u) {
        return;
    }
    let n = params.sensor_rays;
    let a = i / n;
    let k = i % n;
    if (a >= arrayLength(&poses) || n + k / 4u >= arrayLength(&rig)) {
        return;
    }
    // The rig's ray k in its coherent order, answered at its place in the rig.
    let index = rig[n + k / 4u][k % 4u];
    if (index >= n) {
        return;
    }
    let out = a * n + index;
    let pose = poses[a];
    let r = bitcast<vec4<f32>>(rig[k]);
    let dir = sensor_dir(rotation_matrix(pose.rotation_lo, pose.rotation_hi), r.xyz);
    let ray = made_ray(pose.voxel, pose.sub, dir, r.w);
    // A word needs the status and distance alone: the id and UV only with details.
    let h = finished_if(ray, cast_ray(ray), params.details != 0u);
    if (params.details != 0u) {
        let o = pack_hit(h, pose.voxel);
        sensed[5u * out] = o.w0;
        sensed[5u * out + 1u] = o.w1;
        sensed[5u * out + 2u] = o.w2;
        sensed[5u * out + 3u] = o.distance;
        sensed[5u * out + 4u] = o.uv;
    } else {
        sensed[out] = sense_word(h);
    }
}
