//! The GPU API beyond parity: kept buffers and `_into` forms, bad rays in a batch, dispatch and
//! host band limits, cameras, batch statistics, worlds from another raycaster and windows too
//! large (`update_chunks` and its errors are in `gpu_updates.rs`). Runs on lavapipe in CI; see
//! `voxcast_testkit::gpu`.

#![cfg(feature = "gpu")]

use voxcast::gpu::{AgentPairs, CameraImage, Rays, SensorSweep, Sightlines};
use voxcast_testkit::common;

use voxcast_testkit::gpu::*;

use voxcast::gpu::{DispatchMemory, GpuConfig, GpuError, GpuRaycaster, MAX_DISPATCH_RAYS, wgpu};
use voxcast::{
    Camera, CameraError, ChunkPos, LineOfSight, LineOfSightOptions, RaycastOptions, RaycastOutcome,
    VoxelId, VoxelRay, VoxelWorld, WorldPos, glam::Vec3, line_of_sight_batch, raycast_batch,
};

#[test]
fn into_forms_refill_kept_buffers() {
    let Some(gpu) = gpu() else { return };
    let (t, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload");
    let opts = RaycastOptions::default();
    let rays = t.reach_rays(20_000, 40);
    let cpu = raycast_batch(&rays, tw, &opts);
    // A kept buffer longer than the batch, then shorter: the batch's outcomes and nothing else.
    let mut kept = vec![RaycastOutcome::Invalid(voxcast::RayError::ZeroDirection); 30_000];
    gpu.cast_into(Rays(&rays), &gw, &opts, &mut kept)
        .expect("raycast_into");
    assert_parity("raycast_into, longer buffer", &rays, &kept, &cpu);
    let cam = t.camera(64, 48);
    let cam_rays = cam.rays().expect("camera rays");
    gpu.cast_into(CameraImage(&cam), &gw, &opts, &mut kept)
        .expect("raycast_camera_into");
    let cam_cpu = raycast_batch(&cam_rays, tw, &opts);
    assert_parity(
        "raycast_camera_into, kept buffer",
        &cam_rays,
        &kept,
        &cam_cpu,
    );
    let los_opts = LineOfSightOptions::default();
    let segs = t.sight_segments(5_000, 64.0, 41);
    let mut kept_los = vec![LineOfSight::Clear; 3];
    gpu.cast_into(Sightlines(&segs), &gw, &los_opts, &mut kept_los)
        .expect("line_of_sight_into");
    assert_sight_parity(
        "line_of_sight_into, kept buffer",
        &segs,
        &kept_los,
        &line_of_sight_batch(&segs, tw, &los_opts),
    );
}

#[test]
fn bad_rays_in_a_batch_get_their_own_error() {
    let Some(gpu) = gpu() else { return };
    let (_, sw) = sparse();
    let gw = gpu.upload_world(sw).expect("upload");
    let good = VoxelRay::new(
        WorldPos::new(10, 10, 10),
        Vec3::splat(0.5),
        Vec3::new(1.0, 0.3, 0.2),
        200.0,
    )
    .expect("ray");
    let bad = VoxelRay {
        direction: Vec3::new(f32::NAN, 0.0, 0.0),
        ..good
    };
    let worse = VoxelRay {
        max_distance: -1.0,
        ..good
    };
    let rays = [good, bad, good, worse];
    let g = gpu
        .cast(Rays(&rays), &gw, &RaycastOptions::default())
        .expect("batch");
    assert!(
        matches!(
            g[1],
            RaycastOutcome::Invalid(voxcast::RayError::NanDirection)
        ),
        "{:?}",
        g[1]
    );
    assert!(
        matches!(
            g[3],
            RaycastOutcome::Invalid(voxcast::RayError::NegativeMaxDistance)
        ),
        "{:?}",
        g[3]
    );
    assert_parity(
        "good rays around bad ones",
        &rays,
        &g,
        &raycast_batch(&rays, sw, &RaycastOptions::default()),
    );
}

#[test]
fn batch_larger_than_one_dispatch() {
    let Some(gpu) = gpu() else { return };
    let (s, sw) = sparse();
    let gw = gpu.upload_world(sw).expect("upload");
    // More than two dispatches of the default size: both sets of dispatch buffers are used,
    // and one twice.
    let rays = s.rays(2 * MAX_DISPATCH_RAYS as usize + 12_345, 50);
    check(
        gpu,
        "three dispatches",
        sw,
        &gw,
        &rays,
        &RaycastOptions::default(),
    );
}

/// Many small dispatches: each is submitted before the last one's hits are read, alternating
/// between two sets of buffers, so this runs each set several times, with partial workgroups,
/// for rays, line of sight and a camera; then the buffers shrink and grow again.
#[test]
fn many_small_dispatches_in_flight() {
    let Some(mut gpu) = own_gpu() else { return };
    gpu.set_max_dispatch_rays(1000);
    let (s, sw) = sparse();
    let (t, tw) = terrain();
    let sg = gpu.upload_world(sw).expect("upload sparse");
    let tg = gpu.upload_world(tw).expect("upload terrain");
    let rays = s.rays(10_500, 70);
    let stats = check(
        &gpu,
        "1000-ray dispatches",
        sw,
        &sg,
        &rays,
        &RaycastOptions::default(),
    );
    assert_eq!(
        u64::from(stats.dispatches),
        stats.gpu_rays.div_ceil(1000),
        "{stats:?}"
    );
    assert!(stats.dispatches >= 10, "{stats:?}");
    let segments = t.sight_segments(7_777, 64.0, 71);
    sight_parity_with(
        &gpu,
        &tg,
        tw,
        &segments,
        "1000-ray sight dispatches",
        &RaycastOptions::default(),
    );
    let cam = t.camera(160, 90);
    let mut g = Vec::new();
    let stats = gpu
        .cast_into(CameraImage(&cam), &tg, &RaycastOptions::default(), &mut g)
        .expect("render");
    let cam_rays = cam.rays().expect("camera rays");
    let c = raycast_batch(&cam_rays, tw, &RaycastOptions::default());
    assert_parity("1000-pixel camera dispatches", &cam_rays, &g, &c);
    assert_eq!(stats.dispatches, 15);
    // Back to one dispatch: the buffers grow again.
    gpu.set_max_dispatch_rays(u32::MAX);
    let stats = check(
        &gpu,
        "one dispatch again",
        sw,
        &sg,
        &rays,
        &RaycastOptions::default(),
    );
    assert_eq!(stats.dispatches, 1);
}

/// On a CPU device batches share their buffers with the host (CI's lavapipe tests that path);
/// staged buffers, the path of GPUs with their own memory, give the same answers: rays over
/// several dispatches, sight segments, a camera made in the shader and agent pairs.
#[test]
fn staged_and_shared_dispatch_memory_give_the_same_answers() {
    let Some(gpu) = gpu() else { return };
    if gpu.adapter_info().device_type == wgpu::DeviceType::Cpu {
        assert!(gpu.setup().shares_host_memory, "{}", gpu.adapter_summary());
    }
    let mut staged = GpuRaycaster::new_blocking(GpuConfig {
        dispatch_memory: DispatchMemory::Staged,
        ..GpuConfig::default()
    })
    .expect("a staged raycaster");
    assert!(!staged.setup().shares_host_memory);
    staged.set_max_dispatch_rays(3000);
    let (t, tw) = terrain();
    let tg = staged.upload_world(tw).expect("upload");
    let opts = RaycastOptions::default();
    let stats = check(
        &staged,
        "staged rays",
        tw,
        &tg,
        &t.reach_rays(10_000, 81),
        &opts,
    );
    assert_eq!(stats.dispatches, 4);
    let segments = t.sight_segments(5_000, 64.0, 82);
    sight_parity_with(&staged, &tg, tw, &segments, "staged sight", &opts);
    let cam = t.camera(64, 36);
    let g = staged.cast(CameraImage(&cam), &tg, &opts).expect("render");
    let cam_rays = cam.rays().expect("camera rays");
    assert_parity(
        "staged camera",
        &cam_rays,
        &g,
        &raycast_batch(&cam_rays, tw, &opts),
    );
    let agents = t.agents(200, 83);
    let on_gpu = staged.upload_agents(&agents, &tg).expect("agents");
    let pairs = voxcast::pairs_within(&agents, 48.0);
    let los = LineOfSightOptions::default();
    let cpu = voxcast::agent_visibility(&agents, &pairs, tw, &los);
    let v = staged
        .cast(
            AgentPairs {
                agents: &on_gpu,
                pairs: &pairs,
                outcomes: true,
            },
            &tg,
            &los,
        )
        .expect("visibility");
    assert!(v.answers().is_some());
    check_visibility("staged pairs", &v, &cpu, &pairs);
}

/// A `GpuWorld` belongs to the raycaster (device) that uploaded it: another one refuses it
/// with an error, and both go on working.
#[test]
fn a_world_from_another_raycaster_is_an_error() {
    let Some(gpu) = gpu() else { return };
    let Some(other) = own_gpu() else { return };
    let world = common::world_with(&[(WorldPos::new(5, 5, 5), VoxelId(1))]);
    let mut gw = gpu.upload_world(&world).expect("upload");
    let ray = common::ray(WorldPos::new(0, 5, 5), Vec3::splat(0.5), Vec3::X, 40.0);
    let opts = RaycastOptions::default();
    assert_eq!(
        other.cast(Rays(&[ray]), &gw, &opts),
        Err(GpuError::WorldFromAnotherDevice)
    );
    // A rebuild stays with the raycaster that uploaded the world.
    let mut grown = world.clone();
    grown.set_voxel(WorldPos::new(500, 5, 5), VoxelId(2));
    assert_eq!(
        gw.update_or_rebuild(&grown, &[WorldPos::new(500, 5, 5).chunk()]),
        Ok(true)
    );
    assert_eq!(
        other.cast(Rays(&[ray]), &gw, &opts),
        Err(GpuError::WorldFromAnotherDevice)
    );
    check(gpu, "own device, rebuilt", &grown, &gw, &[ray], &opts);
    let cam = Camera::new(
        WorldPos::new(0, 5, 5),
        Vec3::splat(0.5),
        Vec3::X,
        60.0,
        8,
        6,
        40.0,
    )
    .expect("camera");
    assert_eq!(
        other.cast(CameraImage(&cam), &gw, &opts).err(),
        Some(GpuError::WorldFromAnotherDevice)
    );
    check(gpu, "own device", &world, &gw, &[ray], &opts);
    let own = other.upload_world(&world).expect("upload");
    check(
        &other,
        "other device, own world",
        &world,
        &own,
        &[ray],
        &opts,
    );
}

/// `raycast_camera` gives pixel (px, py) the outcome of `Camera::ray(px, py)`, also for a
/// camera whose public fields were edited by hand: `Invalid` where that ray is invalid, and
/// exactly the CPU's answer where it is not (the shader cannot take every such camera; those
/// are rendered from host-built rays).
#[test]
fn hand_edited_cameras_give_each_pixel_its_rays_outcome() {
    let Some(gpu) = &own_gpu() else { return };
    let (_, sw) = sparse();
    let gw = gpu.upload_world(sw).expect("upload");
    let opts = RaycastOptions::default();
    let good = sparse_camera();
    type Edit = (&'static str, fn(&mut Camera));
    let edits: [Edit; 13] = [
        ("as made", |_| {}),
        ("NaN max distance", |c| c.max_distance = f32::NAN),
        ("negative max distance", |c| c.max_distance = -1.0),
        ("max distance over the cap", |c| c.max_distance = 1e6),
        ("NaN eye offset", |c| c.sub_offset.x = f32::NAN),
        ("eye offset 1.5", |c| c.sub_offset.y = 1.5),
        ("eye offset -0.25", |c| c.sub_offset.z = -0.25),
        ("NaN forward", |c| c.forward.x = f32::NAN),
        ("zero forward", |c| c.forward = Vec3::ZERO),
        ("infinite scale", |c| c.scale_x = f32::INFINITY),
        ("right along forward", |c| c.right = c.forward),
        // Pixel (0, 0) has sx = -sy: right·sx + up·sy cancels, and in f32 forward is lost
        // in rounding first, so the direction is zero (the review's case).
        ("huge scales, right equal to up", |c| {
            (c.width, c.height) = (3, 3);
            c.forward = Vec3::new(0.6, 0.8, 0.0);
            c.right = Vec3::new(0.8, -0.6, 0.0);
            c.up = c.right;
            (c.scale_x, c.scale_y) = (1e8, 1e8);
        }),
        // The same with right and up so short that their f32 length underflows to zero, and
        // the scales as much larger (the second review's case).
        ("tiny right equal to up, huge scales", |c| {
            let k = 2f32.powi(-90);
            (c.width, c.height) = (3, 3);
            c.forward = Vec3::new(0.6, 0.8, 0.0);
            c.right = Vec3::new(0.8 * k, -0.6 * k, 0.0);
            c.up = c.right;
            (c.scale_x, c.scale_y) = (1e8 / k, 1e8 / k);
        }),
    ];
    for (what, edit) in edits {
        let mut cam = good;
        edit(&mut cam);
        let expected: Vec<RaycastOutcome> = (0..cam.height)
            .flat_map(|py| (0..cam.width).map(move |px| (px, py)))
            .map(|(px, py)| match cam.ray(px, py) {
                Ok(r) => voxcast::voxel_raycast_with(&r, sw, &opts),
                Err(e) => RaycastOutcome::Invalid(e),
            })
            .collect();
        let mut got = Vec::new();
        let stats = gpu
            .cast_into(CameraImage(&cam), &gw, &opts, &mut got)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let rays = vec![common::ray(WorldPos::ZERO, Vec3::ZERO, Vec3::X, 0.0); got.len()];
        assert_parity(
            &format!("hand-edited camera: {what}"),
            &rays,
            &got,
            &expected,
        );
        if what == "as made" {
            assert_eq!(
                stats.gpu_rays,
                u64::from(cam.width * cam.height),
                "a camera made by Camera::new is rendered by the shader"
            );
        }
    }
    // An empty image is the error `Camera::new` gives, and the raycaster stays usable.
    for (w, h) in [(0, 16), (24, 0)] {
        let empty = Camera {
            width: w,
            height: h,
            ..good
        };
        assert_eq!(
            gpu.cast(CameraImage(&empty), &gw, &opts),
            Err(GpuError::Camera(CameraError::EmptyImage))
        );
    }
    assert!(gpu.cast(CameraImage(&good), &gw, &opts).is_ok());
}

/// A camera whose outcomes cannot be allocated is an error, not an aborted process. Only run
/// where the kernel refuses an allocation larger than memory (overcommit mode 0 or 2), so that
/// the test cannot start rendering 4.3 billion pixels.
#[test]
fn a_camera_too_large_for_host_memory_is_an_error() {
    let Some(gpu) = gpu() else { return };
    let mode = std::fs::read_to_string("/proc/sys/vm/overcommit_memory").unwrap_or_default();
    let (w, h) = (65_535_u32, 65_535_u32);
    let bytes = u64::from(w) * u64::from(h) * std::mem::size_of::<RaycastOutcome>() as u64;
    let memory_kib: u64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("MemTotal:") || l.starts_with("SwapTotal:"))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum();
    if !(mode.trim() == "0" || mode.trim() == "2") || memory_kib == 0 || memory_kib * 1024 >= bytes
    {
        eprintln!("skipping: this machine might grant {bytes} bytes (overcommit mode {mode:?})");
        return;
    }
    let world = common::world_with(&[(WorldPos::new(5, 5, 5), VoxelId(1))]);
    let gw = gpu.upload_world(&world).expect("upload");
    let cam = Camera::new(
        WorldPos::new(1, 1, 1),
        Vec3::splat(0.5),
        Vec3::X,
        60.0,
        w,
        h,
        8.0,
    )
    .expect("camera");
    assert_eq!(
        gpu.cast(CameraImage(&cam), &gw, &RaycastOptions::default())
            .err(),
        Some(GpuError::OutputTooLarge(u64::from(w) * u64::from(h)))
    );
}

/// A batch's stats describe that batch, also one answered on the host alone.
#[test]
fn batch_stats_describe_their_batch() {
    let Some(gpu) = &own_gpu() else { return };
    let world = common::world_with(&[(WorldPos::new(5, 5, 5), VoxelId(1))]);
    let gw = gpu.upload_world(&world).expect("upload");
    let near = vec![common::ray(WorldPos::new(0, 5, 5), Vec3::splat(0.5), Vec3::X, 40.0); 100];
    let stats = gpu
        .cast_into(
            Rays(&near),
            &gw,
            &RaycastOptions::default(),
            &mut Vec::new(),
        )
        .expect("cast");
    assert_eq!((stats.gpu_rays, stats.dispatches), (100, 1));
    let far = vec![
        common::ray(
            WorldPos::new(1 << 100, 0, 0),
            Vec3::splat(0.5),
            Vec3::X,
            40.0
        );
        10
    ];
    let stats = gpu
        .cast_into(Rays(&far), &gw, &RaycastOptions::default(), &mut Vec::new())
        .expect("cast");
    assert_eq!((stats.gpu_rays, stats.dispatches), (0, 0));
    let stats = gpu
        .cast_into(
            Rays::<VoxelRay>(&[]),
            &gw,
            &RaycastOptions::default(),
            &mut Vec::new(),
        )
        .expect("cast");
    assert_eq!(stats.gpu_rays, 0);
}

/// A finished batch leaves its buffers for the next (a set per dispatch: 48 bytes of ray and
/// 20 of answer per ray, each on the device and mapped (once where they are shared), rounded
/// up to powers of two; 60 host bytes per ray and the coherence sort's counters, or 52 where
/// the shader sets rays up), `release_buffers` frees them, and batches after it allocate again
/// and still match the CPU; with rays set up either way.
#[test]
fn release_buffers_frees_kept_memory() {
    let Some(gpu) = own_gpu() else { return };
    let Some(other) = other_setup_gpu() else {
        return;
    };
    for gpu in [&gpu, &other] {
        kept_memory_is_freed(gpu);
    }
}

fn kept_memory_is_freed(gpu: &GpuRaycaster) {
    let (t, world) = terrain();
    let gw = gpu.upload_world(world).expect("upload");
    let opts = RaycastOptions::default();
    // A new raycaster keeps nothing.
    assert_eq!(gpu.kept_memory(), voxcast::gpu::KeptMemory::default());
    let copies = if gpu.setup().shares_host_memory { 1 } else { 2 };
    let set =
        |rays: u64| copies * ((rays * 48).next_power_of_two() + (rays * 20).next_power_of_two());
    let rays = t.reach_rays(20_000, 0x4B45_5054);
    check(gpu, "before release", world, &gw, &rays, &opts);
    let grown = gpu.kept_memory();
    // Besides the rays' buffers, parameters, material filter (8 KiB), their staging space in
    // the upload buffer (the same again) and timestamps.
    let fixed = grown.gpu_bytes - set(20_000);
    assert!(fixed < 20 << 10, "{grown:?}");
    // Set up on the host: 60 bytes a ray, the sort's counters (4 bytes for each of at most
    // 2^15 buckets, one thread at this size) and the part ends (8 bytes a part, one part
    // here). Set up in the shader, every ray going up: 52 bytes a ray (the ray and its part)
    // and the part ends' vector (a few words).
    let (per_ray, counters) = if gpu.setup().rays_set_up_in_shader {
        (52, 64)
    } else {
        (60, (4 << 15) + 8)
    };
    let sorted =
        |rays: u64, host: u64| (per_ray * rays..=per_ray * rays + counters).contains(&host);
    assert!(sorted(20_000, grown.host_bytes), "{grown:?}");
    gpu.release_buffers();
    assert_eq!(gpu.kept_memory(), voxcast::gpu::KeptMemory::default());
    check(gpu, "after release", world, &gw, &rays[..5_000], &opts);
    let regrown = gpu.kept_memory();
    assert_eq!(regrown.gpu_bytes, set(5_000) + fixed, "{regrown:?}");
    assert!(sorted(5_000, regrown.host_bytes), "{regrown:?}");
}

/// A window wider than the window limit (i32 window-relative coordinates) is refused with the
/// size it needs (saturated, not truncated, and said to be so).
#[test]
fn a_window_across_the_whole_world_names_its_size() {
    let Some(gpu) = gpu() else { return };
    let mut world = VoxelWorld::new();
    for x in [ChunkPos::MIN_INDEX, ChunkPos::MAX_INDEX] {
        world
            .insert_chunk(ChunkPos::new(x, 0, 0), voxcast::Chunk::filled(VoxelId(1)))
            .expect("in the world");
    }
    match gpu.upload_world(&world) {
        Err(e @ GpuError::LimitExceeded { needed, limit, .. }) => {
            assert_eq!(needed, u64::MAX);
            assert!(needed > limit);
            let text = e.to_string();
            assert!(
                text.contains("needs 18446744073709551615 or more"),
                "{text}"
            );
        }
        other => panic!("expected LimitExceeded, got {other:?}"),
    }
}

/// Batches of more than a million rays are prepared on the host in bands (bounded working
/// memory): rays, line of sight and a camera rendered from host-built rays (eye outside the
/// window), each over more than one band, ray by ray against the CPU.
#[test]
fn batches_larger_than_a_host_band() {
    let Some(gpu) = &own_gpu() else { return };
    let (t, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload");
    let n = (1 << 20) + 40_000;
    let rays = t.reach_rays(n, 80);
    let stats = check(
        gpu,
        "reach rays over two bands",
        tw,
        &gw,
        &rays,
        &RaycastOptions::default(),
    );
    assert!(stats.gpu_rays > 1 << 20);
    sight_parity(gpu, &gw, tw, &rays, "reach segments over two bands");
    // The eye above the window: every pixel's ray is clipped to the window on the host.
    let cam = Camera::look_at(
        WorldPos::new(128, 200, -40),
        Vec3::splat(0.5),
        WorldPos::new(128, 40, 128),
        Vec3::ZERO,
        70.0,
        1100,
        960,
        260.0,
    )
    .expect("camera");
    let mut g = Vec::new();
    let stats = gpu
        .cast_into(CameraImage(&cam), &gw, &RaycastOptions::default(), &mut g)
        .expect("render");
    let cam_rays = cam.rays().expect("camera rays");
    let c = raycast_batch(&cam_rays, tw, &RaycastOptions::default());
    assert_parity("camera from host rays over two bands", &cam_rays, &g, &c);
    assert!(stats.gpu_rays > 0 && stats.total_seconds > 0.0, "{stats:?}");
}

/// `{:?}` of a `GpuWorld` is a summary, not its chunk table (megabytes for a large window).
#[test]
fn gpu_world_debug_is_a_summary() {
    let Some(gpu) = gpu() else { return };
    let world = common::world_with(&[
        (WorldPos::new(0, 0, 0), VoxelId(1)),
        (WorldPos::new(3000, 0, 0), VoxelId(1)),
    ]);
    let gw = gpu.upload_world(&world).expect("upload");
    let text = format!("{gw:?}");
    assert!(
        text.contains("stored_chunks: 2") && text.len() < 300,
        "{} bytes: {text}",
        text.len()
    );
}

/// A 24x16 camera inside the sparse world, looking down and across it.
fn sparse_camera() -> Camera {
    Camera::new(
        WorldPos::new(100, 100, 100),
        Vec3::splat(0.5),
        Vec3::new(1.0, -0.3, 0.6),
        70.0,
        24,
        16,
        300.0,
    )
    .expect("camera")
}

/// A max distance beyond `MAX_DISTANCE_CAP` (`f32::INFINITY` and `f32::MAX` included) means
/// the cap on every call, on both engines: a hand-filled ray, a camera and a sensor rig all
/// reach a block 40,000 voxels away, as far as a ray built with the cap reaches.
#[test]
fn no_limit_means_the_cap_on_every_call() {
    use voxcast::{MAX_DISTANCE_CAP, SensorPose, SensorReading, SensorRig, glam::Quat, sense};
    let Some(gpu) = gpu() else { return };
    let mut world = VoxelWorld::new();
    world.set_voxel(WorldPos::new(40_000, 0, 0), VoxelId(5));
    world.set_voxel(WorldPos::new(0, 3, 0), VoxelId(5));
    let gw = gpu.upload_world(&world).expect("upload");
    let opts = RaycastOptions::default();
    let capped = VoxelRay::new(WorldPos::ZERO, Vec3::splat(0.5), Vec3::X, MAX_DISTANCE_CAP)
        .expect("capped ray");
    let mut rays = vec![capped];
    for unbounded in [f32::INFINITY, f32::MAX, 1e6, MAX_DISTANCE_CAP.next_up()] {
        rays.push(VoxelRay {
            max_distance: unbounded,
            ..capped
        });
        rays.push(
            VoxelRay::new(WorldPos::ZERO, Vec3::splat(0.5), Vec3::X, unbounded)
                .expect("unbounded ray"),
        );
    }
    let cpu = raycast_batch(&rays, &world, &opts);
    for (i, o) in cpu.iter().enumerate() {
        let hit = o.hit().unwrap_or_else(|| panic!("ray {i}: {o:?}"));
        assert_eq!(hit.voxel_pos, WorldPos::new(40_000, 0, 0), "ray {i}");
        assert_eq!(hit.distance, 39_999.5, "ray {i}");
    }
    let on_gpu = gpu.cast(Rays(&rays), &gw, &opts).expect("raycast");
    assert_parity("unbounded rays", &rays, &on_gpu, &cpu);

    let cam = Camera::new(
        WorldPos::ZERO,
        Vec3::splat(0.5),
        Vec3::X,
        1.0,
        3,
        3,
        f32::INFINITY,
    )
    .expect("camera");
    assert_eq!(cam.max_distance, MAX_DISTANCE_CAP);
    let cam_rays = cam.rays().expect("camera rays");
    let cam_gpu = gpu.cast(CameraImage(&cam), &gw, &opts).expect("camera");
    assert_parity(
        "unbounded camera",
        &cam_rays,
        &cam_gpu,
        &raycast_batch(&cam_rays, &world, &opts),
    );
    assert!(
        cam_gpu[4].hit().is_some(),
        "the center pixel reaches the far block"
    );

    let rig = SensorRig::new(&[(Vec3::NEG_Z, f32::MAX), (Vec3::Y, f32::INFINITY)]).expect("rig");
    let poses = [SensorPose::new(
        WorldPos::ZERO,
        Vec3::splat(0.5),
        Quat::from_rotation_y(-std::f32::consts::FRAC_PI_2),
    )];
    let cpu_s = sense(&rig, &poses, &world, &opts, true);
    let gpu_rig = gpu.upload_rig(&rig).expect("rig upload");
    let gpu_s = gpu
        .cast(
            SensorSweep {
                rig: &gpu_rig,
                poses: &poses,
                outcomes: true,
            },
            &gw,
            &opts,
        )
        .expect("sense");
    assert!(gpu_s.matches(&cpu_s), "{gpu_s:?} against {cpu_s:?}");
    // The rotation of the pose leaves the direction a few ulps off +X.
    assert!(
        matches!(cpu_s.get(0, 0), Some(SensorReading::Hit(d)) if (d - 39_999.5).abs() < 0.1),
        "{:?}",
        cpu_s.get(0, 0)
    );
    assert_eq!(cpu_s.get(0, 1), Some(SensorReading::Hit(2.5)));
}

/// A software adapter says so: lavapipe and llvmpipe (what CI runs) are CPU devices, and the
/// summary names every adapter and marks a software one.
#[test]
fn software_adapters_say_so() {
    let Some(gpu) = gpu() else { return };
    let info = gpu.adapter_info();
    let cpu = info.device_type == wgpu::DeviceType::Cpu;
    assert_eq!(gpu.is_software(), cpu);
    if info.name.contains("llvmpipe") || info.name.contains("lavapipe") {
        assert!(gpu.is_software(), "{info:?}");
    }
    let summary = gpu.adapter_summary();
    assert_eq!(summary.contains(", software"), cpu, "{summary}");
    assert!(!summary.starts_with(" ("), "{summary}");
}
