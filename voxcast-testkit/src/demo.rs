//! Set-up shared by the examples.

use std::time::{Duration, Instant};

use voxcast::VoxelWorld;
use voxcast::gpu::{CameraImage, GpuConfig, GpuError, GpuRaycaster, GpuWorld, SHADER_SOURCE};
use voxcast::spec_variants::{Freedom, variant};

/// Says why there is no GPU and that the CPU reference answers instead; with
/// `VOXCAST_REQUIRE_GPU=1` (as `scripts/test.sh` sets it) ends the program with status 1
/// instead: a check of the GPU cannot pass on the CPU.
pub fn no_gpu(why: &GpuError) {
    if std::env::var("VOXCAST_REQUIRE_GPU").is_ok_and(|v| v == "1") {
        eprintln!("VOXCAST_REQUIRE_GPU=1 but no GPU is usable: {why}");
        std::process::exit(1);
    }
    println!(
        "adapter: no usable GPU; answering with the CPU reference on {} threads",
        rayon::current_num_threads()
    );
    println!("  why: {why}");
}

/// A raycaster whose shader takes `freedom` of the WGSL spec (`voxcast::spec_variants`), to
/// show that the answers do not change.
pub fn variant_raycaster(freedom: Freedom) -> Result<GpuRaycaster, GpuError> {
    let v = variant(SHADER_SOURCE, freedom).unwrap_or_else(|e| panic!("variant {freedom}: {e}"));
    println!(
        "shader: the spec variant {freedom} ({} operations rewritten)",
        v.sites
    );
    GpuRaycaster::with_shader_blocking(v.source, GpuConfig::default())
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
