//! The non-blocking GPU calls: `submit_*` returns a `PendingBatch` at once; its answers, taken
//! later, equal the CPU reference's ray by ray. A frame loop takes each batch two frames after
//! submitting it, several batches are in flight at once and taken in any order, dropped
//! batches cost nothing, and on an application's own device the application's polling
//! completes them.

#![cfg(feature = "gpu")]

use voxcast::gpu::{CameraImage, Rays, Sightlines};
use voxcast_testkit::common;

use std::collections::VecDeque;

use voxcast::gpu::{GpuError, GpuRaycaster, PendingBatch, wgpu};
use voxcast::{
    LineOfSightOptions, RaycastOptions, RaycastOutcome, line_of_sight_batch, raycast_batch,
    raycast_camera,
};
use voxcast_testkit::gpu::*;

/// The answers of `pending`: taken without waiting when it says it is ready (a ready batch is
/// taken on the first try), waited for otherwise.
fn take<T>(mut pending: PendingBatch<T>) -> T {
    if pending.is_ready() {
        pending
            .try_take()
            .expect("a batch that is ready is taken on the first try")
            .expect("no GPU error")
    } else {
        pending.wait().expect("no GPU error")
    }
}

/// A frame loop: every frame submits a raycast batch, a conservative line-of-sight batch and a
/// camera image, and takes the ones submitted two frames before; every answer is checked
/// against the CPU. The output `Vec`s of taken batches are handed to the next submits, so the
/// loop reuses its allocations.
#[test]
fn a_frame_loop_takes_each_batch_two_frames_later() {
    let Some(gpu) = gpu() else { return };
    let (t, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload");
    let opts = RaycastOptions::default();
    let sight = LineOfSightOptions {
        conservative: true,
        ..Default::default()
    };
    let mut casts = VecDeque::new();
    let mut sights = VecDeque::new();
    let mut cameras = VecDeque::new();
    let (mut spare_casts, mut spare_sights, mut spare_pixels) =
        (Vec::new(), Vec::new(), Vec::new());
    for frame in 0..10u64 {
        let rays = t.reach_rays(4_000 + 500 * frame as usize, frame);
        let segs = t.sight_segments(3_000, 64.0, 100 + frame);
        let mut cam = t.camera(64, 36);
        cam.forward = voxcast::glam::Vec3::new(0.1 * frame as f32, -0.3, 1.0).normalize();
        let batch = gpu
            .submit_into(Rays(&rays), &gw, &opts, std::mem::take(&mut spare_casts))
            .expect("submit raycast");
        casts.push_back((rays, batch));
        let batch = gpu
            .submit_into(
                Sightlines(&segs),
                &gw,
                &sight,
                std::mem::take(&mut spare_sights),
            )
            .expect("submit sight");
        sights.push_back((segs, batch));
        let batch = gpu
            .submit_into(
                CameraImage(&cam),
                &gw,
                &opts,
                std::mem::take(&mut spare_pixels),
            )
            .expect("submit camera");
        cameras.push_back((cam, batch));
        if casts.len() > 2 {
            let (rays, batch) = casts.pop_front().expect("in flight");
            let got = take(batch);
            assert_parity(
                &format!("frame {frame} raycast"),
                &rays,
                &got,
                &raycast_batch(&rays, tw, &opts),
            );
            spare_casts = got;
            let (segs, batch) = sights.pop_front().expect("in flight");
            let got = take(batch);
            assert_sight_parity(
                &format!("frame {frame} line of sight"),
                &segs,
                &got,
                &line_of_sight_batch(&segs, tw, &sight),
            );
            spare_sights = got;
            let (cam, batch) = cameras.pop_front().expect("in flight");
            let got = take(batch);
            let cpu = raycast_camera(&cam, tw, &opts).expect("cpu camera");
            assert_parity(
                &format!("frame {frame} camera"),
                &cam.rays().expect("rays"),
                &got,
                &cpu,
            );
            spare_pixels = got;
        }
    }
    // The last two frames' batches, after the loop.
    for (rays, batch) in casts {
        assert_parity(
            "last raycasts",
            &rays,
            &take(batch),
            &raycast_batch(&rays, tw, &opts),
        );
    }
}

/// Batches in flight at once are independent: taken in the reverse order of their submission,
/// one dropped untaken, each answer still matches the CPU; a batch answered entirely on the host
/// (every ray invalid or outside the window) is ready at once.
#[test]
fn batches_in_flight_are_taken_in_any_order() {
    let Some(gpu) = gpu() else { return };
    let (t, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload");
    let opts = RaycastOptions::default();
    let sets: Vec<_> = (0..5).map(|i| t.reach_rays(20_000, 50 + i)).collect();
    let mut batches: Vec<(usize, PendingBatch<Vec<RaycastOutcome>>)> = sets
        .iter()
        .enumerate()
        .map(|(i, rays)| (i, gpu.submit(Rays(rays), &gw, &opts).expect("submit")))
        .collect();
    // One dropped before it was read: its buffers go back to the raycaster.
    drop(batches.remove(2));
    while let Some((i, batch)) = batches.pop() {
        assert_parity(
            &format!("batch {i}"),
            &sets[i],
            &batch.wait().expect("answers"),
            &raycast_batch(&sets[i], tw, &opts),
        );
    }
    let far: Vec<_> = common::ORIGIN_POLICIES
        .iter()
        .map(|_| {
            voxcast::VoxelRay::new(
                voxcast::WorldPos::new(1 << 100, 0, 0),
                voxcast::glam::Vec3::splat(0.5),
                voxcast::glam::Vec3::X,
                10.0,
            )
            .expect("a ray")
        })
        .collect();
    let mut host_only = gpu.submit(Rays(&far), &gw, &opts).expect("submit");
    assert!(host_only.is_ready());
    let answers = host_only.try_take().expect("ready").expect("no error");
    assert_eq!(answers, vec![RaycastOutcome::Miss; far.len()]);
    // Taken once: after that the batch says so, to `try_take` and to `wait`, and is ready
    // (a polling loop ends).
    assert!(host_only.is_ready());
    assert_eq!(
        host_only.try_take().map(|r| r.err()),
        Some(Some(GpuError::AlreadyTaken)),
        "a second try_take"
    );
    let err = host_only.wait().expect_err("wait after try_take");
    assert_eq!(err, GpuError::AlreadyTaken);
    assert!(err.to_string().contains("taken already"), "{err}");
}

/// On an application's own device (`from_device`), the application polling its device (as a
/// renderer does every frame) completes a batch: within a few frames of its submission, the
/// batch says it is ready and is taken without waiting.
#[test]
fn the_applications_polling_completes_a_batch() {
    let Some(gpu) = gpu() else { return };
    let (device, queue) = gpu.device();
    let app = GpuRaycaster::from_device(device, queue, voxcast::gpu::GpuConfig::default())
        .expect("raycaster on the device");
    let (t, tw) = terrain();
    let gw = app.upload_world(tw).expect("upload");
    let opts = RaycastOptions::default();
    let rays = t.reach_rays(30_000, 70);
    let mut batch = app.submit(Rays(&rays), &gw, &opts).expect("submit");
    let mut frames = 0;
    while !batch.is_ready() {
        // The application's frame: it waits for its own work, which includes voxcast's once
        // voxcast's submitting thread has handed it to the queue.
        device
            .poll(wgpu::PollType::wait_indefinitely())
            .expect("poll");
        std::thread::sleep(std::time::Duration::from_millis(1));
        frames += 1;
        assert!(frames < 10_000, "not ready after {frames} frames");
    }
    let got = batch.try_take().expect("ready").expect("no error");
    assert_parity(
        "application's device",
        &rays,
        &got,
        &raycast_batch(&rays, tw, &opts),
    );
}
