//! Set-up shared by the examples.

use std::time::{Duration, Instant};

use voxcast::VoxelWorld;
use voxcast::gpu::{GpuRaycaster, GpuWorld};

/// The GPU and the world on it, or `None` after one line saying why not.
pub(crate) fn gpu_setup(world: &VoxelWorld) -> Option<(GpuRaycaster, GpuWorld)> {
    let threads = rayon::current_num_threads();
    let started = Instant::now();
    let gpu = match GpuRaycaster::new_blocking() {
        Ok(g) => g,
        Err(e) => {
            println!("adapter: no usable GPU ({e}); using the CPU reference on {threads} threads");
            return None;
        }
    };
    println!(
        "adapter: {} (device and shader ready in {})",
        gpu.adapter_summary(),
        secs(started.elapsed())
    );
    let started = Instant::now();
    match GpuWorld::from_world(&gpu, world) {
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
pub(crate) fn secs(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}
