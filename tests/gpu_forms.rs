//! Every form of every query kind against the CPU reference: `cast`, `cast_into` (reusing
//! answers of another batch), `submit` then `wait`, `submit_into` then `try_take`, and
//! `submit` awaited on an executor written here (not pollster), which fails if the batch is
//! never woken. And batches run on several threads at once each report their own cost.
#![cfg(feature = "gpu")]

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use voxcast::gpu::{
    AgentPairs, BatchStats, BoxCasts, CameraImage, GpuError, GpuRaycaster, GpuWorld, PairsWithin,
    Query, Rays, SensorSweep, Sightlines,
};
use voxcast::{
    LineOfSightOptions, RaycastOptions, RaycastOutcome, SensorRig, VoxelRay, WindowOutcome,
    WindowRay, agent_visibility, box_cast_batch, line_of_sight_batch,
    line_of_sight_window_batch_into, raycast_batch, raycast_camera, raycast_window_batch_into,
    sense, visible_pairs_within,
};
use voxcast_testkit::SplitMix64;
use voxcast_testkit::gpu::*;

/// Wakes the thread that runs [`block_on`] and says that it did.
struct Woken {
    thread: std::thread::Thread,
    flag: AtomicBool,
}

impl Wake for Woken {
    fn wake(self: Arc<Self>) {
        self.flag.store(true, Ordering::SeqCst);
        self.thread.unpark();
    }
}

/// Runs `future` to completion on this thread, polling it again only when its waker is
/// called: a batch whose waker is never called fails here instead of hanging.
fn block_on<F: Future>(future: F) -> F::Output {
    let woken = Arc::new(Woken {
        thread: std::thread::current(),
        flag: AtomicBool::new(false),
    });
    let waker = Waker::from(Arc::clone(&woken));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(v) = future.as_mut().poll(&mut cx) {
            return v;
        }
        let asleep = Instant::now();
        while !woken.flag.swap(false, Ordering::SeqCst) {
            std::thread::park_timeout(Duration::from_secs(1));
            assert!(
                asleep.elapsed() < Duration::from_secs(60),
                "a pending batch was never woken"
            );
        }
    }
}

/// Casts `query` in every form, after `other` (a batch of the same kind) in the reused
/// answers, and hands each form's answers to `check` with the form's name.
fn every_form<Q>(
    gpu: &GpuRaycaster,
    query: Q,
    other: Q,
    world: &GpuWorld,
    opts: &Q::Options,
    check: impl Fn(&str, &Q::Answers),
) where
    Q: Query + Copy,
{
    check("cast", &gpu.cast(query, world, opts).expect("cast"));
    let mut out = gpu.cast(other, world, opts).expect("the other batch");
    gpu.cast_into(query, world, opts, &mut out)
        .expect("cast_into");
    check("cast_into, reusing another batch's answers", &out);
    let waited = gpu.submit(query, world, opts).expect("submit").wait();
    check("submit, wait", &waited.expect("wait"));
    let mut pending = gpu
        .submit_into(query, world, opts, out)
        .expect("submit_into");
    let taken = loop {
        if let Some(answers) = pending.try_take() {
            break answers.expect("try_take");
        }
        std::thread::yield_now();
    };
    check("submit_into, try_take", &taken);
    assert!(matches!(
        pending.try_take(),
        Some(Err(GpuError::AlreadyTaken))
    ));
    assert!(pending.stats().is_some(), "a finished batch has its cost");
    let awaited = block_on(gpu.submit(query, world, opts).expect("submit"));
    check("submit, await", &awaited.expect("await"));
}

#[test]
fn every_kind_in_every_form_equals_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let (t, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload");
    let opts = RaycastOptions::default();
    let sight = LineOfSightOptions::default();
    let mut rays = t.reach_rays(3_000, 1);
    rays.extend(adversarial_rays(
        voxcast::WorldPos::new(100, 40, 90),
        500,
        2,
    ));
    let others = t.reach_rays(700, 3);

    every_form(gpu, Rays(&rays), Rays(&others), &gw, &opts, |form, g| {
        assert_parity(
            &format!("rays, {form}"),
            &rays,
            g,
            &raycast_batch(&rays, tw, &opts),
        );
    });

    let origin = gw.window_origin();
    let window = |rays: &[VoxelRay]| -> Vec<WindowRay> {
        rays.iter()
            .map(|r| WindowRay::from_voxel_ray(r, origin).expect("near the window"))
            .collect()
    };
    let (w_rays, w_others) = (window(&rays), window(&others));
    let mut c = Vec::new();
    raycast_window_batch_into(&w_rays, origin, tw, &opts, &mut c);
    let absolute = |answers: &[WindowOutcome]| -> Vec<RaycastOutcome> {
        answers
            .iter()
            .map(|o| o.to_outcome(origin).expect("answers near the window"))
            .collect()
    };
    every_form(
        gpu,
        Rays(&w_rays),
        Rays(&w_others),
        &gw,
        &opts,
        |form, g| {
            let what = format!("window rays, {form}");
            assert_parity(&what, &rays, &absolute(g), &absolute(&c));
        },
    );

    let segs = t.sight_segments(3_000, 64.0, 4);
    let c = line_of_sight_batch(&segs, tw, &sight);
    every_form(
        gpu,
        Sightlines(&segs),
        Sightlines(&others),
        &gw,
        &sight,
        |form, g| {
            assert_sight_parity(&format!("sight lines, {form}"), &segs, g, &c);
        },
    );

    let w_segs = window(&segs);
    let mut c = Vec::new();
    line_of_sight_window_batch_into(&w_segs, origin, tw, &sight, &mut c);
    every_form(
        gpu,
        Sightlines(&w_segs),
        Sightlines(&w_others),
        &gw,
        &sight,
        |form, g| {
            let what = format!("window sight lines, {form}");
            assert_parity(&what, &segs, &absolute(g), &absolute(&c));
        },
    );

    let (cam, small) = (t.camera(96, 54), t.camera(16, 9));
    let cam_rays = cam.rays().expect("camera rays");
    let c = raycast_camera(&cam, tw, &opts).expect("cpu camera");
    every_form(
        gpu,
        CameraImage(&cam),
        CameraImage(&small),
        &gw,
        &opts,
        |form, g| {
            assert_parity(&format!("camera, {form}"), &cam_rays, g, &c);
        },
    );

    let agents = t.agents(300, 5);
    let on_gpu = gpu.upload_agents(&agents, &gw).expect("agents");
    let mut rng = SplitMix64::new(6);
    let pairs: Vec<[u32; 2]> = (0..2_000)
        .map(|_| [rng.below(300) as u32, rng.below(300) as u32])
        .collect();
    let c = agent_visibility(&agents, &pairs, tw, &sight);
    for outcomes in [false, true] {
        let query = AgentPairs {
            agents: &on_gpu,
            pairs: &pairs,
            outcomes,
        };
        let other = AgentPairs {
            pairs: &pairs[..50],
            outcomes: !outcomes,
            ..query
        };
        every_form(gpu, query, other, &gw, &sight, |form, g| {
            check_visibility(&format!("agent pairs {outcomes}, {form}"), g, &c, &pairs);
        });
    }

    let c = visible_pairs_within(&agents, 24.0, tw, &sight);
    assert!(!c.is_empty(), "some agents see each other");
    let near = PairsWithin {
        agents: &on_gpu,
        radius: 24.0,
    };
    let nearer = PairsWithin {
        radius: 8.0,
        ..near
    };
    every_form(gpu, near, nearer, &gw, &sight, |form, g| {
        assert_eq!(g, &c, "pairs within, {form}");
    });

    let rig = SensorRig::cone(48, 40.0, 32.0).expect("cone");
    let gpu_rig = gpu.upload_rig(&rig).expect("rig");
    let poses = terrain_poses(t, 300, 7);
    for outcomes in [false, true] {
        let c = sense(&rig, &poses, tw, &opts, outcomes);
        let query = SensorSweep {
            rig: &gpu_rig,
            poses: &poses,
            outcomes,
        };
        let other = SensorSweep {
            poses: &poses[..20],
            outcomes: !outcomes,
            ..query
        };
        every_form(gpu, query, other, &gw, &opts, |form, g| {
            check_sensors(&format!("sensors {outcomes}, {form}"), &rig, &poses, g, &c);
        });
    }

    let casts = boxes_of(&rays[..1_500], 8);
    let other_casts = boxes_of(&others, 9);
    let c = box_cast_batch(&casts, tw, &opts);
    every_form(
        gpu,
        BoxCasts(&casts),
        BoxCasts(&other_casts),
        &gw,
        &opts,
        |form, g| {
            assert_eq!(g.len(), c.len(), "box casts, {form}");
            let bad = (0..c.len())
                .filter(|&i| !same_box_answer(&g[i], &c[i]))
                .count();
            assert_eq!(bad, 0, "box casts, {form}: {bad} of {} differ", c.len());
        },
    );
}

/// The cost of a batch on its own: rays, dispatches and bytes each way.
fn cost(s: &BatchStats) -> (u64, u32, u64, u64) {
    (s.gpu_rays, s.dispatches, s.bytes_up, s.bytes_down)
}

/// Batches of different sizes and kinds submitted from several threads at once, again and
/// again, each report the rays, dispatches and bytes they report alone.
#[test]
fn concurrent_batches_report_their_own_stats() {
    let Some(mut gpu) = own_gpu() else { return };
    gpu.set_max_dispatch_rays(1_000);
    let (t, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload");
    let opts = RaycastOptions::default();
    let batches: Vec<Vec<VoxelRay>> = [900, 2_500, 6_200]
        .iter()
        .zip(20..)
        .map(|(&n, seed)| t.reach_rays(n, seed))
        .collect();
    let cam = t.camera(64, 40);
    let alone: Vec<BatchStats> = batches
        .iter()
        .map(|rays| {
            gpu.cast_into(Rays(rays), &gw, &opts, &mut Vec::new())
                .expect("alone")
        })
        .collect();
    let camera_alone = gpu
        .cast_into(CameraImage(&cam), &gw, &opts, &mut Vec::new())
        .expect("camera alone");
    let dispatches: Vec<u32> = alone.iter().map(|s| s.dispatches).collect();
    assert_eq!(dispatches, [1, 3, 7], "the batches differ in dispatches");
    assert_eq!(camera_alone.dispatches, 3);
    std::thread::scope(|scope| {
        for (rays, expected) in batches.iter().zip(&alone) {
            let (gpu, gw, opts) = (&gpu, &gw, &opts);
            scope.spawn(move || {
                for round in 0..6 {
                    let (answers, stats) = gpu
                        .submit(Rays(rays), gw, opts)
                        .expect("submit")
                        .wait_with_stats()
                        .expect("wait");
                    assert_eq!(answers.len(), rays.len());
                    assert_eq!(
                        cost(&stats),
                        cost(expected),
                        "round {round}, {} rays",
                        rays.len()
                    );
                }
            });
        }
        let (gpu, gw, opts, cam) = (&gpu, &gw, &opts, &cam);
        scope.spawn(move || {
            for round in 0..6 {
                let mut pending = gpu.submit(CameraImage(cam), gw, opts).expect("camera");
                let pixels = block_on(&mut pending).expect("await");
                assert_eq!(pixels.len(), 64 * 40);
                let stats = pending.stats().expect("finished");
                assert_eq!(cost(&stats), cost(&camera_alone), "camera round {round}");
            }
        });
    });
}

/// With the device driven by the host (`Driver::Host`: no thread of voxcast's, the
/// application polls the device, as a browser's event loop does), every form of rays and of a
/// camera still equals the CPU, and an awaited batch is woken by the host's polling.
#[test]
fn a_device_driven_by_the_host_answers_every_form() {
    if gpu().is_none() {
        return;
    }
    let gpu = GpuRaycaster::new_blocking(voxcast::gpu::GpuConfig {
        driver: voxcast::gpu::Driver::Host,
        ..voxcast::gpu::GpuConfig::default()
    })
    .expect("a raycaster the host drives");
    let (t, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload");
    let opts = RaycastOptions::default();
    // The host's event loop: polls the device until the test is done.
    let done = Arc::new(AtomicBool::new(false));
    let event_loop = {
        let (device, done) = (gpu.device().0.clone(), Arc::clone(&done));
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                let _ = device.poll(voxcast::gpu::wgpu::PollType::Poll);
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let rays = t.reach_rays(3_000, 31);
    let others = t.reach_rays(500, 32);
    let c = raycast_batch(&rays, tw, &opts);
    every_form(&gpu, Rays(&rays), Rays(&others), &gw, &opts, |form, g| {
        assert_parity(&format!("host-driven rays, {form}"), &rays, g, &c);
    });
    let (cam, small) = (t.camera(80, 45), t.camera(8, 8));
    let cam_rays = cam.rays().expect("camera rays");
    let c = raycast_camera(&cam, tw, &opts).expect("cpu camera");
    every_form(
        &gpu,
        CameraImage(&cam),
        CameraImage(&small),
        &gw,
        &opts,
        |form, g| {
            assert_parity(&format!("host-driven camera, {form}"), &cam_rays, g, &c);
        },
    );
    done.store(true, Ordering::SeqCst);
    event_loop.join().expect("the event loop ends");
    // With nobody polling, the calls whose job is to wait poll the device themselves.
    let c = raycast_batch(&rays, tw, &opts);
    let g = gpu.cast(Rays(&rays), &gw, &opts).expect("cast");
    assert_parity("host-driven rays, cast with nobody polling", &rays, &g, &c);
    let waited = gpu.submit(Rays(&rays), &gw, &opts).expect("submit").wait();
    assert_parity(
        "host-driven rays, wait with nobody polling",
        &rays,
        &waited.expect("wait"),
        &c,
    );
}
