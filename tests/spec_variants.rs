//! The parity contract under the WGSL spec's floating-point latitude (`voxcast::spec_variants`):
//! the parity battery against shader variants that take each freedom the spec gives a GPU
//! (divisions and roots off by ulps, fused multiply-adds, regrouped sums and products, flushed
//! subnormals), the exact division and root from any hardware hint, and proof that the
//! variants and the self-check catch a shader that relies on what the spec does not promise.
//! Runs on lavapipe, which takes none of these freedoms itself.

#![cfg(feature = "gpu")]

use voxcast::gpu::CameraImage;
use voxcast_testkit::gpu::*;

use voxcast::gpu::{GpuConfig, GpuRaycaster, RaySetup, SHADER_SOURCE, SelfCheck, wgpu};
use voxcast::spec_variants::{Freedom, variant};
use voxcast::{RaycastOptions, WorldPos, raycast_camera};
use voxcast_testkit::scene::SplitMix64;

/// A raycaster on `shader` rewritten for `freedom`; `None` where the GPU tests skip.
fn variant_gpu(shader: &str, freedom: Freedom, config: GpuConfig) -> Option<GpuRaycaster> {
    gpu()?;
    let v = variant(shader, freedom).unwrap_or_else(|e| panic!("{freedom}: {e}"));
    Some(
        GpuRaycaster::with_shader_blocking(v.source, config)
            .unwrap_or_else(|e| panic!("{freedom}: {e}")),
    )
}

/// The whole parity battery on the shader rewritten for `freedom`: over a million rays on the
/// terrain and the sparse world, every option with rays clipped into the window, line of sight
/// through edges and corners, camera images (made by `Camera::new`, `with_up` and by hand),
/// agent visibility (segments made in the shader), sensor rigs (rays turned in the shader),
/// box casts, every query on worlds with shapes, and raycasts and both kinds of line of sight
/// under every option; then the same rays set up the other way ([`RaySetup`]: on the host or
/// in the shader) under three option sets that take every value of each option between them
/// (`gpu_parity` runs the other setup on the unchanged shader under every combination of
/// origin, unloaded and filter choices). The self-check at creation must pass too.
fn battery(freedom: Freedom) {
    let Some(gpu) = variant_gpu(SHADER_SOURCE, freedom, GpuConfig::default()) else {
        return;
    };
    assert!(gpu.self_check().passed(), "{freedom}: {}", gpu.self_check());
    million_rays(&gpu);
    every_option_with_clipped_rays(&gpu);
    sight_through_ties_and_clipping(&gpu);
    camera_images(&gpu);
    agent_pairs(&gpu);
    sensor_parity(&gpu);
    box_parity(&gpu);
    shape_parity(&gpu, false);
    let (t, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload terrain");
    let mut rays = t.reach_rays(1_000, 40);
    rays.extend(adversarial_rays(WorldPos::new(100, 40, 90), 1_000, 41));
    rays.extend(adversarial_rays(WorldPos::new(-40, 120, -40), 500, 42));
    check_every_option(&gpu, &format!("{freedom}"), tw, &gw, &rays);
    // The same rays set up the other way (in the shader where the default sets them up on
    // the host, as on lavapipe, and the other way round).
    let ray_setup = if gpu.setup().rays_set_up_in_shader {
        RaySetup::Host
    } else {
        RaySetup::Shader
    };
    let config = GpuConfig {
        ray_setup,
        ..GpuConfig::default()
    };
    let Some(other) = variant_gpu(SHADER_SOURCE, freedom, config) else {
        return;
    };
    let og = other.upload_world(tw).expect("upload terrain");
    let what = format!("{freedom}, rays set up the other way");
    check_options(&other, &what, tw, &og, &rays, &few_options());
}

#[test]
fn parity_holds_with_divisions_and_roots_an_ulp_off() {
    battery(Freedom::InexactUp(1));
    battery(Freedom::InexactDown(1));
}

#[test]
fn parity_holds_with_divisions_and_roots_three_ulps_off() {
    battery(Freedom::InexactUp(3));
    battery(Freedom::InexactDown(3));
}

#[test]
fn parity_holds_with_products_fused_into_sums() {
    battery(Freedom::Fused);
}

#[test]
fn parity_holds_with_sums_and_products_regrouped() {
    battery(Freedom::Reassociated);
}

#[test]
fn parity_holds_with_subnormals_flushed() {
    battery(Freedom::FlushSubnormals);
}

/// The shader without its `pin` calls (see `shaders/exact.wgsl`).
fn unpinned() -> String {
    SHADER_SOURCE
        .replace("fn pin(", "fn unused_p(")
        .replace("fn pin3(", "fn unused_p3(")
        .replace("pin3(", "(")
        .replace("pin(", "(")
}

/// The shader with the hardware's division and root in place of the exact ones.
fn hardware_division() -> String {
    let exact_div = "return div_from_hint(x, y, div_hint(x, y));";
    let exact_sqrt = "return sqrt_from_hint(x, sqrt_hint(x));";
    assert!(SHADER_SOURCE.contains(exact_div) && SHADER_SOURCE.contains(exact_sqrt));
    SHADER_SOURCE
        .replace(exact_div, "return div_hint(x, y);")
        .replace(exact_sqrt, "return sqrt_hint(x);")
}

/// Pixels of the terrain camera that differ from the CPU on `gpu`.
fn camera_differences(gpu: &GpuRaycaster) -> usize {
    let (t, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload");
    let cam = t.camera(320, 180);
    let opts = RaycastOptions::default();
    let g = gpu.cast(CameraImage(&cam), &gw, &opts).expect("render");
    let c = raycast_camera(&cam, tw, &opts).expect("cpu camera");
    g.iter().zip(&c).filter(|(a, b)| !a.matches(b)).count()
}

/// A shader that relies on lavapipe not fusing, not regrouping and dividing exactly passes on
/// lavapipe, but not under the variants, and a device that takes those freedoms fails the
/// self-check: the battery above and the self-check can fail, and the exact arithmetic is what
/// passes them.
#[test]
fn the_variants_and_the_self_check_catch_inexact_arithmetic() {
    let allow = GpuConfig {
        self_check: SelfCheck::AllowUnverified,
        ..GpuConfig::default()
    };
    for (what, shader, freedom) in [
        ("no pins, fused", unpinned(), Freedom::Fused),
        ("no pins, regrouped", unpinned(), Freedom::Reassociated),
        (
            "hardware division, an ulp up",
            hardware_division(),
            Freedom::InexactUp(1),
        ),
        (
            "hardware division, an ulp down",
            hardware_division(),
            Freedom::InexactDown(1),
        ),
    ] {
        let Some(plain) = variant_gpu(&shader, Freedom::FlushSubnormals, allow) else {
            return;
        };
        // Lavapipe itself neither fuses, regroups, nor divides inexactly.
        assert!(
            plain.self_check().passed(),
            "{what}: {}",
            plain.self_check()
        );
        assert_eq!(camera_differences(&plain), 0, "{what} on lavapipe");
        let taken = variant_gpu(&shader, freedom, allow).expect("a raycaster");
        let differ = camera_differences(&taken);
        assert!(
            differ > 1_000,
            "{what}: only {differ} of 57600 pixels differ"
        );
        assert!(
            !taken.self_check().passed(),
            "{what}: the self-check passed"
        );
        assert!(
            taken.adapter_summary().contains("NOT EXACT"),
            "{what}: {}",
            taken.adapter_summary()
        );
        // Required (the default), the same device refuses to make a raycaster.
        let v = variant(&shader, freedom).expect("a variant");
        let refused = GpuRaycaster::with_shader_blocking(v.source, GpuConfig::default());
        assert!(
            matches!(refused, Err(voxcast::gpu::GpuError::SelfCheckFailed(_))),
            "{what}: {:?}",
            refused.err()
        );
    }
}

/// Runs entry point `main` of `source` over `count` invocations with binding 0 `input`
/// (`array<u32>`, read), binding 1 the output (`words` u32 per invocation), binding 2 a
/// uniform `Launch { stride, count, mode, zero }` (`stride`: invocations per row of the 2D
/// dispatch); returns the output.
fn run_kernel(
    gpu: &GpuRaycaster,
    source: &str,
    mode: u32,
    input: &[u32],
    count: u32,
    words: u32,
) -> Vec<u32> {
    use wgpu::util::DeviceExt;
    let (device, queue) = gpu.device();
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("test kernel"),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: None,
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let input_buf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: bytemuck::cast_slice(if input.is_empty() { &[0u32] } else { input }),
        usage: wgpu::BufferUsages::STORAGE,
    });
    let bytes = u64::from(count) * u64::from(words) * 4;
    let output = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: bytes,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: bytes,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let groups = count.div_ceil(64);
    let gx = groups.min(32_768);
    let gy = groups.div_ceil(gx);
    let launch = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: bytemuck::cast_slice(&[gx * 64, count, mode, 0]),
        usage: wgpu::BufferUsages::UNIFORM,
    });
    let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: input_buf.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: output.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 2,
                resource: launch.as_entire_binding(),
            },
        ],
    });
    let mut encoder =
        device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
    {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind, &[]);
        pass.dispatch_workgroups(gx, gy, 1);
    }
    encoder.copy_buffer_to_buffer(&output, 0, &readback, 0, bytes);
    queue.submit([encoder.finish()]);
    let slice = readback.slice(..);
    slice.map_async(wgpu::MapMode::Read, |r| r.expect("map"));
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .expect("poll");
    let view = slice.get_mapped_range().expect("mapped");
    bytemuck::cast_slice(&view).to_vec()
}

const KERNEL_HEADER: &str = "
@group(0) @binding(0) var<storage, read> input: array<u32>;
@group(0) @binding(1) var<storage, read_write> output: array<u32>;
struct Launch { stride: u32, count: u32, mode: u32, zero: u32 }
@group(0) @binding(2) var<uniform> launch: Launch;
fn opaque_zero() -> u32 { return launch.zero; }
";

/// `div_rn` and `sqrt_rn` give IEEE's correctly rounded bits from any hint: for every
/// significand of a reciprocal (the camera's `1 / len` and `1 / |d|`) and of a root over
/// `[1, 4)` (which covers every root: the exponent only shifts it), with hints up to 4 ulps
/// off; and for random quotients and roots across the exponent range with hints up to 40 ulps
/// off (the bisection), or no use at all (zero, NaN, infinity, negative).
#[test]
fn exact_division_and_root_from_any_hint() {
    let Some(gpu) = gpu() else { return };
    let source = format!(
        "{}{KERNEL_HEADER}{}",
        include_str!("../shaders/exact.wgsl"),
        "
// A hint k ulps off, or no use at all for some i.
fn hint_for(exact: f32, i: u32) -> f32 {
    let z = launch.zero;
    switch (i % 13u) {
        case 0u: { return bitcast<f32>(z); }
        case 1u: { return bitcast<f32>(0x7FC00000u | z); }
        case 2u: { return bitcast<f32>(0x7F800000u | z); }
        case 3u: { return -exact; }
        default: { return bitcast<f32>(bitcast<u32>(exact) + (i % 9u) - 4u); }
    }
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * launch.stride;
    if (i >= launch.count) {
        return;
    }
    if (launch.mode == 0u) {
        let y = bitcast<f32>(0x3F800000u | i);
        output[i] = bitcast<u32>(div_from_hint(1.0, y, hint_for(1.0 / y, i)));
    } else if (launch.mode == 1u) {
        let x = bitcast<f32>(0x3F800000u + i);
        output[i] = bitcast<u32>(sqrt_from_hint(x, hint_for(sqrt(x), i)));
    } else {
        let x = bitcast<f32>(input[4u * i]);
        let y = bitcast<f32>(input[4u * i + 1u]);
        output[2u * i] = bitcast<u32>(div_from_hint(x, y, bitcast<f32>(input[4u * i + 2u])));
        output[2u * i + 1u] = bitcast<u32>(sqrt_from_hint(x, bitcast<f32>(input[4u * i + 3u])));
    }
}
"
    );
    let report = |what: &str, wrong: Vec<String>| {
        assert!(
            wrong.is_empty(),
            "{what}: {} wrong, first: {:?}",
            wrong.len(),
            &wrong[..wrong.len().min(5)]
        );
    };
    let recips = run_kernel(gpu, &source, 0, &[], 1 << 23, 1);
    let wrong = (0..1u32 << 23)
        .filter_map(|i| {
            let y = f32::from_bits(0x3F80_0000 | i);
            let want = (1.0 / y).to_bits();
            (recips[i as usize] != want)
                .then(|| format!("1 / {y:e}: {:#x}, not {want:#x}", recips[i as usize]))
        })
        .collect();
    report("reciprocals", wrong);
    let roots = run_kernel(gpu, &source, 1, &[], 1 << 24, 1);
    let wrong = (0..1u32 << 24)
        .filter_map(|i| {
            let x = f32::from_bits(0x3F80_0000 + i);
            let want = x.sqrt().to_bits();
            (roots[i as usize] != want)
                .then(|| format!("sqrt {x:e}: {:#x}, not {want:#x}", roots[i as usize]))
        })
        .collect();
    report("roots", wrong);
    // Random operands with quotients and roots in the normal range, hints anywhere from exact
    // to 40 ulps off, or unusable.
    let mut rng = SplitMix64::new(77);
    let n = 1 << 20;
    let mut input = Vec::with_capacity(4 * n);
    let mut cases = Vec::with_capacity(n);
    let positive = |rng: &mut SplitMix64, e: i64| {
        f32::from_bits((((127 + e) as u32) << 23) | (rng.next_u64() as u32 & 0x7F_FFFF))
    };
    let nudge = |rng: &mut SplitMix64, v: f32| match rng.below(10) {
        0 => 0.0,
        1 => f32::NAN,
        2 => -v,
        _ => f32::from_bits((v.to_bits() as i64 + rng.below(81) as i64 - 40) as u32),
    };
    for _ in 0..n {
        let (ex, ey) = (rng.below(241) as i64 - 120, rng.below(121) as i64 - 60);
        let x = positive(&mut rng, ex);
        let y = positive(&mut rng, ey);
        let (q, r) = (x / y, x.sqrt());
        let (hq, hr) = (nudge(&mut rng, q), nudge(&mut rng, r));
        input.extend([x.to_bits(), y.to_bits(), hq.to_bits(), hr.to_bits()]);
        cases.push((x, y, q, r));
    }
    let got = run_kernel(gpu, &source, 2, &input, n as u32, 2);
    let wrong = cases
        .iter()
        .enumerate()
        .filter(|&(i, &(_, _, q, r))| {
            (q.is_normal() && got[2 * i] != q.to_bits()) || got[2 * i + 1] != r.to_bits()
        })
        .map(|(i, &(x, y, q, r))| {
            format!(
                "{x:e} / {y:e} = {q:e}: {:#x}; sqrt: {r:e}: {:#x}",
                got[2 * i],
                got[2 * i + 1]
            )
        })
        .collect();
    report("random quotients and roots", wrong);
}

/// The fused variant's multiply-add rounds once, as IEEE's fusedMultiplyAdd (`f32::mul_add`,
/// subnormal results flushed to zero): over random operands, products that cancel the addend
/// exactly and nearly, and addends from far below the product's last bit to far above it.
#[test]
fn the_fused_variants_multiply_add_rounds_once() {
    let Some(gpu) = gpu() else { return };
    let source = format!(
        "{}{}{KERNEL_HEADER}{}",
        include_str!("../shaders/exact.wgsl"),
        include_str!("../src/spec_variants/prelude.wgsl"),
        "
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * launch.stride;
    if (i >= launch.count) {
        return;
    }
    let a = bitcast<f32>(input[3u * i]);
    let b = bitcast<f32>(input[3u * i + 1u]);
    let c = bitcast<f32>(input[3u * i + 2u]);
    output[i] = bitcast<u32>(spec_variant_fma(a, b, c));
}
"
    );
    let mut rng = SplitMix64::new(78);
    let any = |rng: &mut SplitMix64, lo: i64, span: u64| {
        let e = lo + rng.below(span) as i64;
        let sign = (rng.below(2) as u32) << 31;
        f32::from_bits(sign | (((127 + e) as u32) << 23) | (rng.next_u64() as u32 & 0x7F_FFFF))
    };
    let n = 1 << 20;
    let mut input = Vec::with_capacity(3 * n);
    let mut cases = Vec::with_capacity(n);
    for i in 0..n {
        let a = any(&mut rng, -30, 61);
        let b = any(&mut rng, -30, 61);
        let p = a * b;
        let c = match i % 5 {
            0 => any(&mut rng, -70, 141),
            1 => -p,
            2 => f32::from_bits(
                (-p).to_bits()
                    .wrapping_add(rng.below(5) as u32)
                    .wrapping_sub(2),
            ),
            3 => p * f32::from_bits((((127 + rng.below(61) as i64 - 30) as u32) << 23) | 0x40_0000),
            _ => 0.0,
        };
        input.extend([a.to_bits(), b.to_bits(), c.to_bits()]);
        cases.push((a, b, c));
    }
    let got = run_kernel(gpu, &source, 0, &input, n as u32, 1);
    let wrong: Vec<String> = cases
        .iter()
        .zip(&got)
        .filter_map(|(&(a, b, c), &g)| {
            let f = a.mul_add(b, c);
            let want = if f.is_subnormal() {
                f32::from_bits(f.to_bits() & 0x8000_0000)
            } else {
                f
            };
            (g != want.to_bits()).then(|| {
                format!(
                    "{a:e} * {b:e} + {c:e} = {want:e}, got {:e}",
                    f32::from_bits(g)
                )
            })
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{} wrong, first: {:?}",
        wrong.len(),
        &wrong[..wrong.len().min(5)]
    );
}
