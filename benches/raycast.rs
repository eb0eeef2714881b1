//! Criterion benches of the standard workloads W1-W4, one group per workload, one bench per
//! engine, each iteration answering the same ~20k rays:
//!
//! - `cpu_1t`: voxcast's CPU reference in a plain loop (`voxel_raycast_with`, W2 `line_of_sight`)
//! - `cpu_batch`: voxcast's CPU batch on all threads (`raycast_batch` / `line_of_sight_batch`)
//! - `gpu`: voxcast's GPU batch, end to end (timed with `iter_custom`; only when an adapter is
//!   available); `gpu_kernel`: the compute passes alone, from timestamp queries
//! - `parry`: parry3d's `Voxels` shape
//! - `voxel_traversal`: the `voxel-traversal` crate over a flat occupancy bitmap
//!
//! Throughput is in rays (`Throughput::Elements`). The adapters are shared with
//! `examples/bench_report.rs`, which prints the whole comparison (with voxel steps/s and
//! agreement) in one run.
//!
//! ```text
//! cargo bench --bench raycast -- --quick
//! VOXCAST_BENCH_WORKLOADS=w1,w4 cargo bench --bench raycast -- parry
//! ```

use voxcast_testkit::peers;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

use peers::gpu::GpuEngine;
use peers::{OccupancyGrid, ParryScene, Workload, WorkloadId};

/// Rays per iteration for W1, W2 and W4.
const RAYS: usize = 20_000;
/// W3's camera: 192 × 108 = 20,736 rays per iteration.
const CAMERA: (u32, u32) = (192, 108);

/// The workloads to run: all, or those named in `VOXCAST_BENCH_WORKLOADS` (e.g. `w1,w4`).
/// Criterion's own name filter only skips timing, not building the worlds.
fn selected_workloads() -> Vec<WorkloadId> {
    match std::env::var("VOXCAST_BENCH_WORKLOADS") {
        Ok(list) => list
            .split(',')
            .map(|s| {
                WorkloadId::parse(s)
                    .unwrap_or_else(|| panic!("unknown workload {s:?} in VOXCAST_BENCH_WORKLOADS"))
            })
            .collect(),
        Err(_) => WorkloadId::ALL.to_vec(),
    }
}

fn bench_workload(c: &mut Criterion, w: &Workload, gpu: Option<&GpuEngine>) {
    let parry = ParryScene::new(&w.world);
    let grid = OccupancyGrid::new(&w.world);
    let rays = &w.rays[..];

    let mut group = c.benchmark_group(w.id.label().to_lowercase().replace(' ', "_"));
    group.throughput(Throughput::Elements(rays.len() as u64));
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));

    group.bench_function("cpu_1t", |b| {
        b.iter(|| peers::voxcast_one_thread(w, black_box(rays)))
    });
    group.bench_function("cpu_batch", |b| {
        b.iter(|| peers::voxcast_batch(w, black_box(rays)))
    });
    if let Some(cam) = &w.camera {
        group.bench_function("cpu_camera_1t", |b| {
            b.iter(|| peers::voxcast_camera_one_thread(w, black_box(cam)))
        });
    }
    if let Some(gpu) = gpu {
        match gpu.upload(w) {
            Ok(scene) => {
                group.bench_function("gpu", |b| {
                    b.iter_custom(|iters| {
                        let t = Instant::now();
                        for _ in 0..iters {
                            let answers = gpu
                                .run(&scene, w, black_box(rays))
                                .unwrap_or_else(|e| panic!("gpu batch: {e}"));
                            black_box(answers);
                        }
                        t.elapsed()
                    });
                });
                // The compute passes alone, from timestamp queries, where the adapter has them.
                if gpu.last_stats().kernel_seconds.is_some() {
                    group.bench_function("gpu_kernel", |b| {
                        b.iter_custom(|iters| {
                            let mut kernel = 0.0;
                            for _ in 0..iters {
                                black_box(
                                    gpu.run(&scene, w, black_box(rays))
                                        .unwrap_or_else(|e| panic!("gpu batch: {e}")),
                                );
                                kernel += gpu.last_stats().kernel_seconds.unwrap_or(0.0);
                            }
                            Duration::from_secs_f64(kernel)
                        });
                    });
                }
            }
            Err(e) => eprintln!("{}: gpu upload failed, skipping: {e}", w.id.label()),
        }
    }
    group.bench_function("parry", |b| b.iter(|| parry.cast_all(black_box(rays))));
    group.bench_function("voxel_traversal", |b| {
        b.iter(|| grid.cast_all(black_box(rays)))
    });
    group.finish();
}

fn raycast(c: &mut Criterion) {
    let gpu = GpuEngine::new()
        .inspect_err(|e| eprintln!("gpu benches skipped: {e}"))
        .ok();
    if let Some(g) = &gpu {
        eprintln!("gpu adapter: {}", g.adapter());
    }
    for id in selected_workloads() {
        let w = Workload::new(id, RAYS, CAMERA);
        bench_workload(c, &w, gpu.as_ref());
    }
}

criterion_group!(benches, raycast);
criterion_main!(benches);
