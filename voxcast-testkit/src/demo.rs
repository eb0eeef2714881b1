//! Set-up shared by the examples.

use std::time::{Duration, Instant};
use voxcast::gpu::CameraImage;

use voxcast::VoxelWorld;
use voxcast::gpu::{GpuConfig, GpuRaycaster, GpuWorld, SHADER_SOURCE};
use voxcast::spec_variants::{Freedom, variant};

/// The GPU and the world on it, or `None` after one line saying why not. With `freedom`, the
/// raycaster runs the shader rewritten to take that freedom of the WGSL spec
/// (`voxcast::spec_variants`). With `VOXCAST_REQUIRE_GPU=1` (as `scripts/test.sh` sets it) a
/// missing GPU ends the program with status 1 instead: a check of the GPU cannot pass on the
/// CPU.
pub fn gpu_setup(world: &VoxelWorld, freedom: Option<Freedom>) -> Option<(GpuRaycaster, GpuWorld)> {
    let threads = rayon::current_num_threads();
    let started = Instant::now();
    let made = match freedom {
        None => GpuRaycaster::new_blocking(GpuConfig::default()),
        Some(f) => {
            let v = variant(SHADER_SOURCE, f).unwrap_or_else(|e| panic!("variant {f}: {e}"));
            println!(
                "shader: the spec variant {f} ({} operations rewritten)",
                v.sites
            );
            GpuRaycaster::with_shader_blocking(v.source, GpuConfig::default())
        }
    };
    let gpu = match made {
        Ok(g) => g,
        Err(e) => {
            if std::env::var("VOXCAST_REQUIRE_GPU").is_ok_and(|v| v == "1") {
                eprintln!("VOXCAST_REQUIRE_GPU=1 but no GPU is usable: {e}");
                std::process::exit(1);
            }
            println!(
                "adapter: no usable GPU; rendering with the CPU reference on {threads} threads"
            );
            println!("  why: {e}");
            return None;
        }
    };
    println!(
        "adapter: {} (device and shader ready in {})",
        gpu.adapter_summary(),
        secs(started.elapsed())
    );
    println!(
        "self-check: {} ({})",
        gpu.self_check(),
        secs(Duration::from_secs_f64(gpu.self_check().seconds))
    );
    let started = Instant::now();
    match gpu.upload_world(world) {
        Ok(gw) => {
            println!(
                "upload: {} chunks stored voxel by voxel, {:.1} MiB of GPU buffers, in {}",
                gw.stored_chunks(),
                gw.memory_bytes() as f64 / (1024.0 * 1024.0),
                secs(started.elapsed())
            );
            Some((gpu, gw))
        }
        Err(e) => {
            println!(
                "adapter: cannot upload the world ({e}); using the CPU reference on {threads} threads"
            );
            None
        }
    }
}

/// A duration as seconds with three decimals.
pub fn secs(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}

/// `camera` rendered on the GPU of `gpu` when there is one, every pixel checked against the
/// CPU reference (the parity contract), else on the CPU: the outcomes, and how many pixels
/// differ (0 on the CPU). Prints what it did.
pub fn render_checked(
    gpu: Option<&(GpuRaycaster, GpuWorld)>,
    world: &VoxelWorld,
    camera: &voxcast::Camera,
    opts: &voxcast::RaycastOptions,
) -> Result<(Vec<voxcast::RaycastOutcome>, usize), String> {
    let started = Instant::now();
    let cpu = voxcast::raycast_camera(camera, world, opts).map_err(|e| e.to_string())?;
    let cpu_time = started.elapsed();
    let Some((gpu, gw)) = gpu else {
        println!(
            "camera: {} pixels on the CPU in {}",
            cpu.len(),
            secs(cpu_time)
        );
        return Ok((cpu, 0));
    };
    let started = Instant::now();
    let image = gpu
        .cast(CameraImage(camera), gw, opts)
        .map_err(|e| e.to_string())?;
    let differ = image
        .iter()
        .zip(&cpu)
        .filter(|(g, c)| !g.matches(c))
        .count();
    println!(
        "camera: {} pixels on the GPU in {} (CPU {}), {differ} differing from the CPU reference",
        image.len(),
        secs(started.elapsed()),
        secs(cpu_time)
    );
    Ok((image, differ))
}
