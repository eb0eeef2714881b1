// voxcast shader, cameras: the entry point cast_camera, one ray per pixel made in the shader.
// Twin: camera_dir is Camera::pixel_dir in src/camera.rs.

// The unit direction through the center of pixel (px, py); twin of `Camera::pixel_dir` in
// src/camera.rs: same operations in the same order, each rounded once (`pin` keeps products
// from being fused into the sums they feed and sums from being regrouped; `div_rn` and
// `sqrt_rn` round as the CPU does). px and py are below 2^24, so f32(px) is exact.
fn camera_dir(px: u32, py: u32) -> vec3<f32> {
    let sx = pin(pin(pin(f32(px) + 0.5) * params.cam_inv_w) - 1.0) * params.cam_scale_x;
    let sy = pin(1.0 - pin(pin(f32(py) + 0.5) * params.cam_inv_h)) * params.cam_scale_y;
    let f = params.cam_forward;
    let r = params.cam_right;
    let u = params.cam_up;
    let across = pin3(r * pin(sx));
    let down = pin3(u * pin(sy));
    let v = pin3(f + across) + down;
    let squares = pin3(v * v);
    let len = sqrt_rn(pin(squares.x + squares.y) + squares.z);
    let rl = div_rn(1.0, len);
    return v * rl;
}

@compute @workgroup_size(64)
fn cast_camera(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = invocation_index(gid, groups);
    if (i >= params.ray_count || i >= arrayLength(&hits)) {
        return;
    }
    let pixel = params.ray_base + i;
    let px = pixel % params.cam_width;
    let py = params.cam_row0 + pixel / params.cam_width;
    let dir = camera_dir(px, py);
    let ray = made_ray(params.cam_position, params.cam_sub, dir, params.cam_max_distance);
    hits[i] = pack_hit(finished(ray, cast_ray(ray)), params.cam_position);
}
