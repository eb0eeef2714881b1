//! Where the raycaster runs: on the application's own wgpu device, on devices too limited for
//! the shader, and from several threads at once. Runs on lavapipe in CI; see `voxcast_testkit::gpu`.

#![cfg(feature = "gpu")]

use voxcast::gpu::{Rays, Sightlines};
use voxcast_testkit::gpu::*;

use voxcast::gpu::{GpuError, GpuRaycaster, GpuWorld, wgpu};
use voxcast::{RaycastOptions, VoxelWorld, line_of_sight_batch};

#[test]
fn a_raycaster_on_the_applications_device() {
    if gpu().is_none() {
        return;
    }
    // A game's device: default limits, no timestamp queries.
    let (device, queue) = application_device(wgpu::Limits::default());
    let shared = GpuRaycaster::from_device(&device, &queue, voxcast::gpu::GpuConfig::default())
        .expect("a raycaster on that device");
    assert!(shared.device().0 == &device && shared.device().1 == &queue);
    assert_eq!(shared.adapter_info().name, device.adapter_info().name);

    // It casts with the CPU reference's answers, on the terrain and the sparse world.
    let ((t, terrain_world), (s, sparse_world)) = (terrain(), sparse());
    let mut last = voxcast::gpu::BatchStats::default();
    for (what, world, rays) in [
        ("terrain", terrain_world, t.reach_rays(20_000, 3)),
        ("sparse", sparse_world, s.rays(20_000, 4)),
    ] {
        let gw = shared.upload_world(world).expect("upload");
        let what = format!("{what} on the application's device");
        last = check(
            &shared,
            &what,
            world,
            &gw,
            &rays,
            &RaycastOptions::default(),
        );
    }
    // Without TIMESTAMP_QUERY on the device there is no kernel time, as documented.
    assert_eq!(last.kernel_seconds, None);
    assert_eq!(last.gpu_rays, 20_000);

    // The application's own work on the device still runs after voxcast's.
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("application buffer"),
        size: 16,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    queue.write_buffer(&buffer, 0, &[7u8; 16]);
    queue.submit([]);
    buffer
        .slice(..)
        .map_async(wgpu::MapMode::Read, |r| r.expect("mapped"));
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .expect("poll");
    let mapped = buffer.slice(..).get_mapped_range().expect("mapped range");
    assert_eq!(&mapped[..], &[7u8; 16]);
}

#[test]
fn a_device_too_limited_for_the_shader_is_an_error() {
    if gpu().is_none() {
        return;
    }
    // WebGL2's limits: no storage buffers in compute shaders.
    let (device, queue) = application_device(wgpu::Limits::downlevel_webgl2_defaults());
    match GpuRaycaster::from_device(&device, &queue, voxcast::gpu::GpuConfig::default()) {
        Err(e @ GpuError::UnsuitableDevice(_)) => {
            let msg = e.to_string();
            assert!(
                msg.contains("storage buffers per shader stage") && msg.contains("needs 8"),
                "{msg}"
            );
        }
        other => panic!("expected UnsuitableDevice, got {other:?}"),
    }
}

#[test]
fn raycasters_and_worlds_go_to_other_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<GpuRaycaster>();
    send_sync::<GpuWorld>();
    send_sync::<VoxelWorld>();
    fn send<T: Send>() {}
    send::<voxcast::gpu::PendingBatch<Vec<voxcast::RaycastOutcome>>>();
}

/// The documented way to keep a frame loop running while a batch is out: call from worker
/// threads. Three threads cast and test sight at once on one raycaster, each answer checked.
#[test]
fn batches_from_several_threads_at_once() {
    let Some(gpu) = gpu() else { return };
    let (t, world) = terrain();
    let gw = gpu.upload_world(world).expect("upload");
    std::thread::scope(|scope| {
        for seed in 0..3u64 {
            let gw = &gw;
            scope.spawn(move || {
                for round in 0..3 {
                    let rays = t.reach_rays(30_000, seed * 10 + round);
                    let what = format!("thread {seed}, round {round}");
                    check(gpu, &what, world, gw, &rays, &RaycastOptions::default());
                    let segs = t.sight_segments(10_000, 64.0, seed * 10 + round);
                    let opts = voxcast::LineOfSightOptions::default();
                    let g = gpu.cast(Sightlines(&segs), gw, &opts).expect("gpu los");
                    let c = line_of_sight_batch(&segs, world, &opts);
                    assert_eq!(g.len(), c.len(), "{what}");
                    assert!(
                        g.iter().zip(&c).all(|(g, c)| g.matches(c)),
                        "{what}: line of sight differs"
                    );
                }
            });
        }
    });
}

/// On the application's device voxcast must not trigger its uncaptured-error handler (by
/// default a panic): once the device is destroyed, every call returns an error instead.
#[test]
fn a_destroyed_application_device_gives_errors_not_panics() {
    if gpu().is_none() {
        return;
    }
    let (device, queue) = application_device(wgpu::Limits::default());
    let shared = GpuRaycaster::from_device(&device, &queue, voxcast::gpu::GpuConfig::default())
        .expect("a raycaster on that device");
    let (s, world) = sparse();
    let mut gw = shared.upload_world(world).expect("upload");
    let rays = s.rays(1_000, 5);
    device.destroy();
    assert!(matches!(
        shared.upload_world(world),
        Err(GpuError::Device(_))
    ));
    let chunk = world.chunks().next().expect("a chunk").0;
    // Rewriting a stored chunk only queues writes, which a destroyed device drops: `Ok` or an
    // error, but no panic.
    let updated = gw.update_chunks(world, &[chunk]);
    assert!(
        matches!(updated, Ok(()) | Err(GpuError::Device(_))),
        "{updated:?}"
    );
    assert!(matches!(
        shared.cast(Rays(&rays), &gw, &RaycastOptions::default()),
        Err(GpuError::Device(_))
    ));
    shared.release_buffers();
}
