//! GPU vs CPU reference, ray by ray (the parity contract in the crate docs). Runs on lavapipe in
//! CI. With `VOXCAST_REQUIRE_GPU=1` a missing adapter fails every test here; without it they
//! skip with a loud message.

mod common;

use std::sync::OnceLock;

use voxcast::gpu::{GpuError, GpuRaycaster, GpuWorld, MAX_DISPATCH_RAYS};
use voxcast::scene::{Sparse, SplitMix64, Terrain, WATER};
use voxcast::{
    Camera, ChunkPos, LineOfSight, LineOfSightOptions, MaterialFilter, RaycastOptions,
    RaycastOutcome, UnloadedPolicy, VoxelId, VoxelRay, VoxelWorld, WorldPos, glam::Vec3,
    line_of_sight_batch, raycast_batch,
};

fn gpu() -> Option<&'static GpuRaycaster> {
    static GPU: OnceLock<Option<GpuRaycaster>> = OnceLock::new();
    GPU.get_or_init(|| match GpuRaycaster::new_blocking() {
        Ok(g) => {
            eprintln!("GPU parity tests on: {}", g.adapter_summary());
            Some(g)
        }
        Err(e) => {
            if std::env::var("VOXCAST_REQUIRE_GPU").is_ok_and(|v| v == "1") {
                panic!("VOXCAST_REQUIRE_GPU=1 but no GPU is usable: {e}");
            }
            eprintln!("\n!!!!! SKIPPING GPU PARITY TESTS: {e} !!!!!\n");
            None
        }
    })
    .as_ref()
}

/// A raycaster of the test's own, for tests that read `last_batch_stats` or change settings:
/// tests run in parallel and share [`gpu`]. `None` where [`gpu`] skips.
fn own_gpu() -> Option<GpuRaycaster> {
    gpu()?;
    Some(GpuRaycaster::new_blocking().expect("a second raycaster on the same adapter"))
}

/// Compares outcomes ray by ray: the parity contract. Prints the first mismatches with the ray
/// and how to rerun just that ray.
fn assert_parity(what: &str, rays: &[VoxelRay], gpu: &[RaycastOutcome], cpu: &[RaycastOutcome]) {
    assert_eq!(gpu.len(), cpu.len(), "{what}: result count");
    let bad: Vec<usize> = (0..gpu.len())
        .filter(|&i| !gpu[i].matches(&cpu[i]))
        .collect();
    if !bad.is_empty() {
        let mut msg = format!(
            "{what}: {} of {} rays differ between GPU and CPU\n",
            bad.len(),
            rays.len()
        );
        for &i in bad.iter().take(5) {
            msg += &format!(
                "  ray #{i}: {:?}\n    gpu: {:?}\n    cpu: {:?}\n    rerun: voxel_raycast_with(&{:?}, ..) vs GpuRaycaster::raycast(.., &[that ray], ..)\n",
                rays[i], gpu[i], cpu[i], rays[i]
            );
        }
        panic!("{msg}");
    }
}

fn check(
    gpu: &GpuRaycaster,
    what: &str,
    world: &VoxelWorld,
    gw: &GpuWorld,
    rays: &[VoxelRay],
    opts: &RaycastOptions,
) {
    let g = gpu
        .raycast(gw, rays, opts)
        .unwrap_or_else(|e| panic!("{what}: GPU error: {e}"));
    let c = raycast_batch(rays, world, opts);
    assert_parity(what, rays, &g, &c);
}

fn terrain() -> &'static (Terrain, VoxelWorld) {
    static T: OnceLock<(Terrain, VoxelWorld)> = OnceLock::new();
    T.get_or_init(|| {
        let t = Terrain {
            size: [256, 96, 256],
            seed: 7,
        };
        let w = t.build();
        (t, w)
    })
}

fn sparse() -> &'static (Sparse, VoxelWorld) {
    static S: OnceLock<(Sparse, VoxelWorld)> = OnceLock::new();
    S.get_or_init(|| {
        let s = Sparse {
            size: 128,
            density: 0.01,
            seed: 11,
        };
        let w = s.build();
        (s, w)
    })
}

/// Integer and half-integer origins, axis-aligned and 45 degree directions, zero components of
/// both signs, rays along chunk faces, negative coordinates, max distance 0, origins in solid.
fn adversarial_rays(center: WorldPos, n_random: usize, seed: u64) -> Vec<VoxelRay> {
    let mut rng = SplitMix64::new(seed);
    let subs = [0.0, 0.5, 0.25, 0.999_999_9];
    let comps = [-1.0, -0.0, 0.0, 1.0, 0.5, -0.5];
    let mut dirs = Vec::new();
    for &x in &comps {
        for &y in &comps {
            for &z in &comps {
                let d = Vec3::new(x, y, z);
                if d != Vec3::ZERO && d.length() > 0.0 {
                    dirs.push(d);
                }
            }
        }
    }
    let mut out = Vec::new();
    for i in 0..n_random {
        let off = |r: &mut SplitMix64| r.below(64) as i128 - 32;
        let origin = WorldPos::new(
            center.x.saturating_add(off(&mut rng)),
            center.y.saturating_add(off(&mut rng)),
            center.z.saturating_add(off(&mut rng)),
        );
        // Chunk faces: snap some origins to multiples of 32.
        let origin = if i % 7 == 0 {
            WorldPos::new(origin.x & !31, origin.y, origin.z & !31)
        } else {
            origin
        };
        let sub = Vec3::new(
            subs[rng.below(4) as usize],
            subs[rng.below(4) as usize],
            subs[rng.below(4) as usize],
        );
        let dir = dirs[rng.below(dirs.len() as u64) as usize];
        let max = [0.0, 1.0, 8.0, 64.0, 300.0][rng.below(5) as usize];
        if let Ok(r) = VoxelRay::new(origin, sub, dir, max) {
            out.push(r);
        }
    }
    out
}

#[test]
fn parity_terrain_and_sparse_million_rays() {
    let Some(gpu) = gpu() else { return };
    let (t, tw) = terrain();
    let gw = GpuWorld::from_world(gpu, tw).expect("upload terrain");
    let opts = RaycastOptions::default();
    check(
        gpu,
        "terrain reach",
        tw,
        &gw,
        &t.reach_rays(300_000, 1),
        &opts,
    );
    let mut rng = SplitMix64::new(2);
    let long: Vec<VoxelRay> = t
        .reach_rays(200_000, 3)
        .into_iter()
        .map(|r| VoxelRay {
            max_distance: 32.0 + rng.next_f32() * 400.0,
            ..r
        })
        .collect();
    check(gpu, "terrain long rays", tw, &gw, &long, &opts);
    let (s, sw) = sparse();
    let sg = GpuWorld::from_world(gpu, sw).expect("upload sparse");
    check(gpu, "sparse", sw, &sg, &s.rays(400_000, 4), &opts);
    check(
        gpu,
        "sparse per-voxel",
        sw,
        &sg,
        &s.rays(100_000, 5),
        &RaycastOptions {
            per_voxel: true,
            ..opts.clone()
        },
    );
    check(
        gpu,
        "terrain adversarial",
        tw,
        &gw,
        &adversarial_rays(WorldPos::new(128, 48, 128), 60_000, 6),
        &opts,
    );
}

#[test]
fn parity_every_option() {
    let Some(gpu) = gpu() else { return };
    let (t, tw) = terrain();
    let gw = GpuWorld::from_world(gpu, tw).expect("upload terrain");
    let mut rays = t.reach_rays(20_000, 10);
    rays.extend(adversarial_rays(WorldPos::new(100, 40, 90), 20_000, 11));
    // Rays from outside the window (clipped on the host) and from far away.
    rays.extend(adversarial_rays(WorldPos::new(-40, 120, -40), 5_000, 12));
    rays.extend(adversarial_rays(
        WorldPos::new(1 << 100, 0, -(1 << 90)),
        500,
        13,
    ));
    for origin in common::ORIGIN_POLICIES {
        for unloaded in [UnloadedPolicy::Air, UnloadedPolicy::Stop] {
            for blocks in [
                MaterialFilter::default(),
                MaterialFilter::all_solid().without(WATER),
                MaterialFilter::only(&[VoxelId(1)]),
            ] {
                let opts = RaycastOptions {
                    origin,
                    unloaded,
                    blocks,
                    per_voxel: false,
                };
                check(gpu, &format!("{opts:?}"), tw, &gw, &rays, &opts);
            }
        }
    }
}

#[test]
fn parity_line_of_sight_both_modes() {
    let Some(gpu) = gpu() else { return };
    let (t, tw) = terrain();
    let gw = GpuWorld::from_world(gpu, tw).expect("upload terrain");
    let mut segs = t.sight_segments(100_000, 64.0, 20);
    // Segments through edges and corners: axis-aligned and 45 degree from integer points.
    segs.extend(adversarial_rays(WorldPos::new(128, 40, 128), 20_000, 21));
    sight_parity(gpu, &gw, tw, &segs, "terrain");
    // Diagonals from outside the loaded chunk, clipped to the window, often inside a tie
    // group or touching the chunk only at an edge.
    let base = [-(1i128 << 100), 7, 3];
    let (edge_world, mut edge_segs) = common::tie_entry_world(base, false);
    // Diagonals from just outside the window (the loaded chunk and a margin of one chunk) whose
    // first crossing is a tie: under `Stop` the voxel beside the first step is unloaded.
    let o = ChunkPos::new(base[0], base[1], base[2]).origin();
    for y in 0..32 {
        for z in 0..32 {
            for dir in [[1.0, -1.0, 0.0], [1.0, -1.0, 1.0], [1.0, 1.0, -1.0]] {
                let start = common::offset(o, [-33, y, z]);
                edge_segs.push(common::ray(
                    start,
                    Vec3::splat(0.5),
                    Vec3::from_array(dir),
                    80.0,
                ));
            }
        }
    }
    let edge_gw = GpuWorld::from_world(gpu, &edge_world).expect("upload");
    for origin in common::ORIGIN_POLICIES {
        for unloaded in [UnloadedPolicy::Air, UnloadedPolicy::Stop] {
            let raycast = RaycastOptions {
                origin,
                unloaded,
                ..Default::default()
            };
            sight_parity_with(
                gpu,
                &edge_gw,
                &edge_world,
                &edge_segs,
                &format!("clipped diagonals, {origin:?}, {unloaded:?}"),
                &raycast,
            );
        }
    }
}

/// Line of sight on the GPU against the CPU, plain and conservative.
fn sight_parity(
    gpu: &GpuRaycaster,
    gw: &GpuWorld,
    world: &VoxelWorld,
    segs: &[VoxelRay],
    what: &str,
) {
    sight_parity_with(gpu, gw, world, segs, what, &RaycastOptions::default());
}

/// [`sight_parity`] with the given raycast options. `Unknown` answers compare equal whatever
/// their voxel, since `LineOfSight::Unknown` does not report one.
fn sight_parity_with(
    gpu: &GpuRaycaster,
    gw: &GpuWorld,
    world: &VoxelWorld,
    segs: &[VoxelRay],
    what: &str,
    raycast: &RaycastOptions,
) {
    for conservative in [false, true] {
        let opts = LineOfSightOptions {
            conservative,
            raycast: raycast.clone(),
        };
        let g = gpu.line_of_sight(gw, segs, &opts).expect("gpu los");
        let c = line_of_sight_batch(segs, world, &opts);
        let to_outcome = |l: &LineOfSight| match *l {
            LineOfSight::Clear => RaycastOutcome::Miss,
            LineOfSight::Blocked(h) => RaycastOutcome::Hit(h),
            LineOfSight::Unknown => RaycastOutcome::Unloaded {
                at: WorldPos::ZERO,
                distance: 0.0,
            },
            LineOfSight::Invalid(e) => RaycastOutcome::Invalid(e),
        };
        let g: Vec<_> = g.iter().map(to_outcome).collect();
        let c: Vec<_> = c.iter().map(to_outcome).collect();
        assert_parity(
            &format!("{what}: line of sight conservative={conservative}"),
            segs,
            &g,
            &c,
        );
    }
}

#[test]
fn parity_near_i128_edges_and_negative_coordinates() {
    let Some(gpu) = gpu() else { return };
    for base in [
        WorldPos::new(-(1 << 126), 1 << 126, -5000),
        WorldPos::new(i128::MAX - 200, i128::MIN + 100, 0),
    ] {
        let mut world = VoxelWorld::new();
        let mut rng = SplitMix64::new(30);
        let base_chunk = base.chunk();
        for _ in 0..3000 {
            let p = WorldPos::new(
                base.x.saturating_add(rng.below(96) as i128 - 48),
                base.y.saturating_add(rng.below(96) as i128 - 48),
                base.z + rng.below(96) as i128 - 48,
            );
            world.set_voxel(p, VoxelId(1 + rng.below(3) as u16));
        }
        world
            .insert_chunk(
                ChunkPos::new(base_chunk.x, base_chunk.y, base_chunk.z + 3),
                voxcast::Chunk::filled(VoxelId(2)),
            )
            .expect("in the world");
        let gw = GpuWorld::from_world(gpu, &world).expect("upload");
        let rays = adversarial_rays(base, 30_000, 31);
        for unloaded in [UnloadedPolicy::Air, UnloadedPolicy::Stop] {
            check(
                gpu,
                &format!("edges {base:?} {unloaded:?}"),
                &world,
                &gw,
                &rays,
                &RaycastOptions {
                    unloaded,
                    ..Default::default()
                },
            );
        }
    }
}

#[test]
fn parity_after_edit_and_update_chunks() {
    let Some(gpu) = gpu() else { return };
    let (s, sw) = sparse();
    let mut world = sw.clone();
    let mut gw = GpuWorld::from_world(gpu, &world).expect("upload");
    let mut rng = SplitMix64::new(40);
    let mut touched = Vec::new();
    for _ in 0..2000 {
        let p = WorldPos::new(
            rng.below(128) as i128,
            rng.below(128) as i128,
            rng.below(128) as i128,
        );
        world.set_voxel(p, VoxelId(rng.below(4) as u16));
        touched.push(p.chunk());
    }
    // A chunk becoming uniform, one becoming dense from uniform, one unloaded.
    world
        .insert_chunk(ChunkPos::new(1, 1, 1), voxcast::Chunk::filled(VoxelId(3)))
        .expect("in the world");
    world.remove_chunk(ChunkPos::new(2, 2, 2));
    touched.extend([ChunkPos::new(1, 1, 1), ChunkPos::new(2, 2, 2)]);
    touched.sort();
    touched.dedup();
    gw.update_chunks(&world, &touched).expect("update");
    let rays = s.rays(100_000, 41);
    check(
        gpu,
        "after edits",
        &world,
        &gw,
        &rays,
        &RaycastOptions::default(),
    );
    check(
        gpu,
        "after edits, stop",
        &world,
        &gw,
        &rays,
        &RaycastOptions {
            unloaded: UnloadedPolicy::Stop,
            ..Default::default()
        },
    );
    assert!(matches!(
        gw.update_chunks(&world, &[ChunkPos::new(100, 0, 0)]),
        Err(voxcast::gpu::GpuError::ChunkOutsideWindow(_))
    ));
}

#[test]
fn parity_camera_rays_made_in_the_shader() {
    let Some(gpu) = gpu() else { return };
    let (t, tw) = terrain();
    let gw = GpuWorld::from_world(gpu, tw).expect("upload");
    let cam = t.camera(320, 180);
    let rays = cam.rays().expect("camera rays");
    let from_shader = gpu
        .render_camera(&gw, &cam, &RaycastOptions::default())
        .expect("render");
    let cpu = raycast_batch(&rays, tw, &RaycastOptions::default());
    assert_parity("camera (shader-made rays)", &rays, &from_shader, &cpu);
    // More pixels than one batch holds: a clear error before anything is allocated, and the
    // raycaster goes on working (the camera below).
    let (w, h) = (65_536_u32, 65_537_u32);
    let huge = Camera::new(
        WorldPos::new(100, 100, 100),
        Vec3::splat(0.5),
        Vec3::new(1.0, -0.5, 1.0),
        70.0,
        w,
        h,
        64.0,
    )
    .expect("camera");
    let pixels = w as usize * h as usize;
    assert_eq!(
        gpu.render_camera(&gw, &huge, &RaycastOptions::default())
            .err(),
        Some(GpuError::BatchTooLarge(pixels))
    );
    // A camera outside the window falls back to host rays and still matches.
    let far = Camera::new(
        WorldPos::new(-50, 200, -50),
        Vec3::splat(0.5),
        Vec3::new(1.0, -0.5, 1.0),
        70.0,
        64,
        48,
        1024.0,
    )
    .expect("camera");
    let g = gpu
        .render_camera(&gw, &far, &RaycastOptions::default())
        .expect("render");
    assert_parity(
        "camera outside window",
        &far.rays().expect("rays"),
        &g,
        &raycast_batch(&far.rays().expect("rays"), tw, &RaycastOptions::default()),
    );
}

#[test]
fn into_forms_refill_kept_buffers() {
    let Some(gpu) = gpu() else { return };
    let (t, tw) = terrain();
    let gw = GpuWorld::from_world(gpu, tw).expect("upload");
    let opts = RaycastOptions::default();
    let rays = t.reach_rays(20_000, 40);
    let cpu = raycast_batch(&rays, tw, &opts);
    // A kept buffer longer than the batch, then shorter: the batch's outcomes and nothing else.
    let mut kept = vec![RaycastOutcome::Invalid(voxcast::RayError::ZeroDirection); 30_000];
    gpu.raycast_into(&gw, &rays, &opts, &mut kept)
        .expect("raycast_into");
    assert_parity("raycast_into, longer buffer", &rays, &kept, &cpu);
    let cam = t.camera(64, 48);
    let cam_rays = cam.rays().expect("camera rays");
    gpu.render_camera_into(&gw, &cam, &opts, &mut kept)
        .expect("render_camera_into");
    let cam_cpu = raycast_batch(&cam_rays, tw, &opts);
    assert_parity(
        "render_camera_into, kept buffer",
        &cam_rays,
        &kept,
        &cam_cpu,
    );
    let los_opts = LineOfSightOptions::default();
    let segs = t.sight_segments(5_000, 64.0, 41);
    let mut kept_los = vec![LineOfSight::Unknown; 3];
    gpu.line_of_sight_into(&gw, &segs, &los_opts, &mut kept_los)
        .expect("line_of_sight_into");
    assert_eq!(kept_los, line_of_sight_batch(&segs, tw, &los_opts));
}

#[test]
fn bad_rays_in_a_batch_get_their_own_error() {
    let Some(gpu) = gpu() else { return };
    let (_, sw) = sparse();
    let gw = GpuWorld::from_world(gpu, sw).expect("upload");
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
        .raycast(&gw, &rays, &RaycastOptions::default())
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
    let gw = GpuWorld::from_world(gpu, sw).expect("upload");
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
    let sg = GpuWorld::from_world(&gpu, sw).expect("upload sparse");
    let tg = GpuWorld::from_world(&gpu, tw).expect("upload terrain");
    let rays = s.rays(10_500, 70);
    check(
        &gpu,
        "1000-ray dispatches",
        sw,
        &sg,
        &rays,
        &RaycastOptions::default(),
    );
    let stats = gpu.last_batch_stats();
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
    let g = gpu
        .render_camera(&tg, &cam, &RaycastOptions::default())
        .expect("render");
    let cam_rays = cam.rays().expect("camera rays");
    let c = raycast_batch(&cam_rays, tw, &RaycastOptions::default());
    assert_parity("1000-pixel camera dispatches", &cam_rays, &g, &c);
    assert_eq!(gpu.last_batch_stats().dispatches, 15);
    // Back to one dispatch: the buffers grow again.
    gpu.set_max_dispatch_rays(u32::MAX);
    check(
        &gpu,
        "one dispatch again",
        sw,
        &sg,
        &rays,
        &RaycastOptions::default(),
    );
    assert_eq!(gpu.last_batch_stats().dispatches, 1);
}

/// Issue 5's exactness claim on the GPU: skipping empty chunks and bricks lands on exactly the
/// state voxel-by-voxel stepping reaches, over more than a million rays from every workload and
/// the adversarial set. (The CPU side of the same claim is in tests/oracle.rs.)
#[test]
fn gpu_skipping_equals_per_voxel_stepping() {
    let Some(gpu) = gpu() else { return };
    let (t, tw) = terrain();
    let (s, sw) = sparse();
    let tg = GpuWorld::from_world(gpu, tw).expect("upload terrain");
    let sg = GpuWorld::from_world(gpu, sw).expect("upload sparse");
    let skip = RaycastOptions::default();
    let walk = RaycastOptions {
        per_voxel: true,
        ..Default::default()
    };
    let cam = t.camera(480, 270).rays().expect("camera");
    let sets: [(&str, &VoxelWorld, &GpuWorld, Vec<VoxelRay>); 5] = [
        ("reach", tw, &tg, t.reach_rays(300_000, 60)),
        ("sight", tw, &tg, t.sight_segments(200_000, 64.0, 61)),
        ("camera", tw, &tg, cam),
        ("sparse", sw, &sg, s.rays(350_000, 62)),
        (
            "adversarial",
            tw,
            &tg,
            adversarial_rays(WorldPos::new(128, 48, 128), 60_000, 63),
        ),
    ];
    let mut total = 0;
    for (name, world, gw, rays) in &sets {
        let fast = gpu.raycast(gw, rays, &skip).expect("skipping");
        let slow = gpu.raycast(gw, rays, &walk).expect("per voxel");
        assert_parity(
            &format!("{name}: GPU skipping vs GPU per-voxel"),
            rays,
            &fast,
            &slow,
        );
        // And both equal the CPU reference (which skips by default).
        let cpu = raycast_batch(rays, world, &skip);
        assert_parity(&format!("{name}: GPU per-voxel vs CPU"), rays, &slow, &cpu);
        total += rays.len();
    }
    assert!(total >= 1_000_000, "only {total} rays");
}

/// Runs of empty chunks (whole regions of `4×4×4` chunks, halves, layers, `2×2×2` blocks) on
/// the GPU: a world of many regions with holes, near the origin and far out with a window that
/// does not start at a region boundary, under both unloaded policies, every origin policy and
/// per-voxel stepping; then edits that block runs (a voxel in an empty chunk, a new hole) or
/// open them (a chunk emptied), re-uploaded with `update_chunks`.
#[test]
fn parity_region_runs_and_their_updates() {
    let Some(gpu) = gpu() else { return };
    for (base, seed) in [
        ([0, 0, 0], 21u64),
        ([(1 << 100) + 1, -(1 << 90) - 3, 2], 22),
    ] {
        let mut world = common::region_world(base, seed);
        let mut gw = GpuWorld::from_world(gpu, &world).expect("upload");
        let rays = common::region_rays(base, seed, 40_000);
        let compare = |world: &VoxelWorld, gw: &GpuWorld, when: &str| {
            for unloaded in [UnloadedPolicy::Air, UnloadedPolicy::Stop] {
                for origin in common::ORIGIN_POLICIES {
                    let opts = RaycastOptions {
                        origin,
                        unloaded,
                        ..Default::default()
                    };
                    let what = format!("regions {base:?} {when} {unloaded:?} {origin:?}");
                    check(gpu, &what, world, gw, &rays, &opts);
                }
                let walk = RaycastOptions {
                    unloaded,
                    per_voxel: true,
                    ..Default::default()
                };
                let slow = gpu.raycast(gw, &rays, &walk).expect("per voxel");
                let fast = raycast_batch(
                    &rays,
                    world,
                    &RaycastOptions {
                        unloaded,
                        ..Default::default()
                    },
                );
                assert_parity(
                    &format!("regions {base:?} {when} {unloaded:?}: GPU per-voxel vs CPU"),
                    &rays,
                    &slow,
                    &fast,
                );
            }
        };
        compare(&world, &gw, "as built");
        // Edits: walls, holes, solid chunks and emptied chunks.
        let mut rng = SplitMix64::new(seed ^ 7);
        let mut touched = Vec::new();
        for _ in 0..40 {
            let c = ChunkPos::new(
                base[0] - 6 + rng.below(12) as i128,
                base[1] - 3 + rng.below(8) as i128,
                base[2] - 6 + rng.below(12) as i128,
            );
            match rng.below(4) {
                0 => {
                    // A wall of 32×32 voxels through the chunk: a dense chunk.
                    let o = c.origin();
                    for i in 0..32 {
                        for j in 0..32 {
                            world.set_voxel(WorldPos::new(o.x + i, o.y + j, o.z + 17), VoxelId(3));
                        }
                    }
                }
                1 => {
                    world.remove_chunk(c);
                }
                2 => {
                    world
                        .insert_chunk(c, voxcast::Chunk::filled(VoxelId(1)))
                        .expect("in the world");
                }
                _ => {
                    world
                        .insert_chunk(c, voxcast::Chunk::default())
                        .expect("in the world");
                }
            }
            touched.push(c);
        }
        gw.update_chunks(&world, &touched).expect("update");
        compare(&world, &gw, "after edits");
    }
}

/// Under `Air` the CPU reference ends a ray as a miss where it leaves the chunks holding
/// anything but air; the GPU walks on to the window's edge. Here those chunks are a small part
/// of the window, and edits outside them (pushed with `update_chunks`) move them.
#[test]
fn parity_occupied_bounds_grow_with_updates() {
    let Some(gpu) = gpu() else { return };
    let base = [-(1i128 << 80) + 5, 3, 1 << 70];
    let mut world = VoxelWorld::new();
    for cz in -6i128..6 {
        for cy in -3i128..5 {
            for cx in -6i128..6 {
                let pos = ChunkPos::new(base[0] + cx, base[1] + cy, base[2] + cz);
                world
                    .insert_chunk(pos, voxcast::Chunk::default())
                    .expect("in the world");
            }
        }
    }
    let middle = ChunkPos::new(base[0], base[1], base[2]).origin();
    world.set_voxel(common::offset(middle, [3, 30, 17]), VoxelId(2));
    let mut gw = GpuWorld::from_world(gpu, &world).expect("upload");
    let rays = common::region_rays(base, 31, 40_000);
    let opts = RaycastOptions::default();
    check(gpu, "one occupied chunk", &world, &gw, &rays, &opts);
    // Walls in chunks at the window's corners, far outside the occupied chunk.
    let mut touched = Vec::new();
    for (i, corner) in [[-6, -3, -6], [5, 4, 5], [-6, 4, 5]]
        .into_iter()
        .enumerate()
    {
        let c = ChunkPos::new(
            base[0] + corner[0],
            base[1] + corner[1],
            base[2] + corner[2],
        );
        let o = c.origin();
        for u in 0..32 {
            for v in 0..32 {
                let p = [[u, v, 9], [u, 20, v], [31, u, v]][i];
                world.set_voxel(common::offset(o, p), VoxelId(1));
            }
        }
        touched.push(c);
    }
    gw.update_chunks(&world, &touched).expect("update");
    check(gpu, "after walls at the corners", &world, &gw, &rays, &opts);
    // Emptying the middle chunk again shrinks the CPU's bounds.
    world.set_voxel(common::offset(middle, [3, 30, 17]), VoxelId::AIR);
    gw.update_chunks(&world, &[middle.chunk()]).expect("update");
    check(gpu, "after emptying the middle", &world, &gw, &rays, &opts);
    let walk = RaycastOptions {
        per_voxel: true,
        ..Default::default()
    };
    check(gpu, "per voxel after the edits", &world, &gw, &rays, &walk);
}

/// Every option (origin policy, unloaded policy, material filter, per-voxel mode) as raycast
/// options: what the robustness tests below sweep.
fn every_option() -> Vec<RaycastOptions> {
    let mut all = Vec::new();
    for origin in common::ORIGIN_POLICIES {
        for unloaded in [UnloadedPolicy::Air, UnloadedPolicy::Stop] {
            for blocks in [
                MaterialFilter::all_solid(),
                MaterialFilter::all_solid().without(VoxelId(2)),
                MaterialFilter::none(),
            ] {
                for per_voxel in [false, true] {
                    all.push(RaycastOptions {
                        origin,
                        blocks: blocks.clone(),
                        unloaded,
                        per_voxel,
                    });
                }
            }
        }
    }
    all
}

/// Raycasts and both kinds of line of sight, under every option, ray by ray against the CPU.
fn check_every_option(
    gpu: &GpuRaycaster,
    what: &str,
    world: &VoxelWorld,
    gw: &GpuWorld,
    rays: &[VoxelRay],
) {
    for opts in every_option() {
        let what = format!("{what} {opts:?}");
        check(gpu, &what, world, gw, rays, &opts);
        sight_parity_with(gpu, gw, world, rays, &what, &opts);
    }
}

/// A window that reaches the edge of the i128 world has no margin there: rays that step off
/// the world end as a miss on the GPU as on the CPU, under `Stop` too, and conservative line of
/// sight skips the voxels beyond the edge, with no overflow or wrapped position anywhere.
#[test]
fn parity_where_the_window_reaches_the_i128_edge() {
    let Some(gpu) = gpu() else { return };
    for (i, base) in [
        WorldPos::new(i128::MAX - 40, i128::MAX - 40, i128::MAX - 40),
        WorldPos::new(i128::MIN, i128::MIN, i128::MIN),
        WorldPos::new(i128::MIN, i128::MAX - 40, 0),
    ]
    .into_iter()
    .enumerate()
    {
        let mut world = VoxelWorld::new();
        let mut rng = SplitMix64::new(50 + i as u64);
        for _ in 0..600 {
            let p = [base.x, base.y, base.z].map(|b| b.saturating_add(rng.below(40) as i128));
            world.set_voxel(WorldPos::from_array(p), VoxelId(1 + rng.below(3) as u16));
        }
        let gw = GpuWorld::from_world(gpu, &world).expect("upload");
        let center = WorldPos::from_array([base.x, base.y, base.z].map(|b| b.saturating_add(20)));
        let mut rays = adversarial_rays(center, 1500, 51 + i as u64);
        // The review's case: along +x (or -x) off the world's edge beside a solid voxel.
        for dir in [
            Vec3::X,
            Vec3::NEG_X,
            Vec3::new(1.0, 1.0, 0.0),
            Vec3::new(-1.0, -1.0, 0.0),
        ] {
            rays.push(common::ray(center, Vec3::splat(0.5), dir, 100.0));
            rays.push(common::ray(center, Vec3::new(0.0, 0.0, 0.5), dir, 100.0));
        }
        check_every_option(gpu, &format!("edge {base:?}"), &world, &gw, &rays);
    }
}

/// Segments between voxel centres and between voxel corners that pass through voxel edges and
/// corners in exact arithmetic (found with integers by `lattice_ties`; about a quarter of such
/// crossings are 1-3 ulps apart in f32): conservative line of sight tests the same voxels beside
/// them on the GPU as on the CPU. First in a world where one voxel in 25 is solid, then in
/// worlds of a single solid voxel beside many segments' edges and corners, where every segment
/// must be blocked by it and the walk reaches it by skips through empty bricks and unloaded
/// chunks (which must end before a near-tied crossing).
#[test]
fn parity_of_sight_through_lattice_edges() {
    let Some(gpu) = gpu() else { return };
    let stop = RaycastOptions {
        origin: voxcast::OriginPolicy::SkipOriginVoxel,
        unloaded: UnloadedPolicy::Stop,
        ..RaycastOptions::default()
    };
    let conservative = LineOfSightOptions {
        conservative: true,
        ..LineOfSightOptions::default()
    };

    let mut world = VoxelWorld::new();
    for (p, id) in common::random_solids(77, WorldPos::new(-52, -16, -8), 96, 0.04, 3) {
        world.set_voxel(p, id);
    }
    let gw = GpuWorld::from_world(gpu, &world).expect("upload");
    for from in [WorldPos::new(29, -3, 6), WorldPos::new(-40, 17, 31)] {
        let segs: Vec<VoxelRay> = common::lattice_segments(from, 9)
            .into_iter()
            .map(|(s, _)| s)
            .collect();
        let what = format!("lattice edges from {from:?}");
        sight_parity(gpu, &gw, &world, &segs, &what);
        sight_parity_with(gpu, &gw, &world, &segs, &format!("{what}, Stop"), &stop);
        // The conservative rule must matter on this set, or the comparison shows little.
        let plain = line_of_sight_batch(&segs, &world, &LineOfSightOptions::default());
        let cons = line_of_sight_batch(&segs, &world, &conservative);
        let differ = plain.iter().zip(&cons).filter(|(p, c)| p != c).count();
        assert!(
            differ * 20 > segs.len(),
            "{what}: only {differ} of {} segments answer differently when conservative",
            segs.len()
        );
    }

    let from = WorldPos::new(29, -3, 6);
    let all = common::lattice_segments(from, 9);
    for v in [
        [3, 2, 1],
        [-2, -3, 4],
        [-4, 4, 4],
        [2, 3, 3],
        [2, 2, 2],
        [1, 2, 3],
        [-1, 1, 1],
        [3, -3, 0],
        [4, 2, 2],
        [-3, -3, -3],
    ] {
        let p = from.checked_offset(voxcast::glam::IVec3::from_array(v));
        let p = p.expect("near 0");
        let segs: Vec<VoxelRay> = all
            .iter()
            .filter(|(_, touching)| touching.iter().any(|&(_, t, _)| t == v.map(i64::from)))
            .map(|&(s, _)| s)
            .collect();
        assert!(
            segs.len() >= 30,
            "only {} segments beside {v:?}",
            segs.len()
        );
        let world = common::world_with(&[(p, VoxelId(1))]);
        let gw = GpuWorld::from_world(gpu, &world).expect("upload");
        let what = format!("one solid voxel at {v:?} from {from:?}");
        sight_parity(gpu, &gw, &world, &segs, &what);
        let got = gpu
            .line_of_sight(&gw, &segs, &conservative)
            .expect("gpu los");
        for (seg, g) in segs.iter().zip(&got) {
            assert!(
                matches!(g, LineOfSight::Blocked(h) if h.voxel_pos == p),
                "{what}: {} gives {g:?}",
                common::describe(seg)
            );
        }
    }
}

/// Segments that lie in voxel face planes or along edge lines: conservative line of sight walks
/// the layers on both sides of each plane on the GPU as on the CPU, under every option. First
/// in a world where one voxel in 25 is solid: lattice segments from two voxel corners (one a
/// chunk corner), and long segments from outside the loaded chunks along planes at the faces of
/// the loaded chunks and of the window, where a shifted layer lies in the window's margin or
/// outside it. Then in worlds of one solid voxel, which every segment touching it beyond its
/// start point (found in exact arithmetic) must come back blocked by.
#[test]
fn parity_of_sight_along_face_planes() {
    let Some(gpu) = gpu() else { return };
    let mut world = VoxelWorld::new();
    for (p, id) in common::random_solids(78, WorldPos::new(-52, -16, -8), 96, 0.04, 3) {
        world.set_voxel(p, id);
    }
    let gw = GpuWorld::from_world(gpu, &world).expect("upload");
    let mut segs = Vec::new();
    for from in [WorldPos::new(32, -32, 0), WorldPos::new(-40, 17, 31)] {
        segs.extend(
            common::face_plane_segments(from, 9)
                .into_iter()
                .map(|(s, _)| s),
        );
    }
    // The loaded chunks span y and z -32..=95; the window -64..=127.
    let planes = [-64, -32, -31, 40, 96, 127, 128];
    for y in planes {
        for z in planes {
            segs.push(common::ray_at(
                [-200, y, z],
                [0.5, 0.0, 0.0],
                [1.0, 0.0, 0.0],
                400.0,
            ));
            segs.push(common::ray_at(
                [200, y, z],
                [0.5, 0.0, 0.0],
                [-1.0, 0.0, 0.0],
                400.0,
            ));
        }
        segs.push(common::ray_at(
            [-200, y, 10],
            [0.5, 0.0, 0.5],
            [1.0, 0.0, 0.3],
            400.0,
        ));
        segs.push(common::ray_at(
            [10, 200, y],
            [0.5, 0.5, 0.0],
            [0.2, -1.0, 0.0],
            400.0,
        ));
    }
    check_every_option(gpu, "face planes", &world, &gw, &segs);

    let conservative = LineOfSightOptions {
        conservative: true,
        ..LineOfSightOptions::default()
    };
    let from = WorldPos::new(32, -32, 0);
    let all = common::face_plane_segments(from, 6);
    for v in [
        [2, -1, 0],
        [-1, -1, 3],
        [0, -1, -1],
        [-3, 2, -1],
        [1, 1, -1],
        [-1, 2, -1],
        [-1, -1, -1],
    ] {
        let p = from
            .checked_offset(voxcast::glam::IVec3::from_array(v.map(|c| c as i32)))
            .expect("near 0");
        let segs: Vec<VoxelRay> = all
            .iter()
            .filter(|(_, d)| {
                common::closed_touching(*d)
                    .iter()
                    .any(|&(t, s)| t == v && s < 1.0)
            })
            .map(|&(s, _)| s)
            .collect();
        assert!(
            segs.len() >= 10,
            "only {} segments beside {v:?}",
            segs.len()
        );
        let world = common::world_with(&[(p, VoxelId(1))]);
        let gw = GpuWorld::from_world(gpu, &world).expect("upload");
        let what = format!("one solid voxel at {v:?} from {from:?}");
        sight_parity(gpu, &gw, &world, &segs, &what);
        let got = gpu
            .line_of_sight(&gw, &segs, &conservative)
            .expect("gpu los");
        for (seg, g) in segs.iter().zip(&got) {
            assert!(
                matches!(g, LineOfSight::Blocked(h) if h.voxel_pos == p),
                "{what}: {} gives {g:?}",
                common::describe(seg)
            );
        }
    }
}

/// Segments from voxel centres that end exactly on a corner of the one solid voxel: the edge
/// crossings there round to either side of max distance. The GPU's conservative answers equal
/// the CPU's walking voxel by voxel, not only the CPU's with skips.
#[test]
fn parity_of_conservative_sight_ending_on_a_corner() {
    let Some(gpu) = gpu() else { return };
    let solid = WorldPos::new(-9, -2, -4);
    let world = common::world_with(&[(solid, VoxelId(1))]);
    let gw = GpuWorld::from_world(gpu, &world).expect("upload");
    let mut segs = Vec::new();
    for corner in 0..8 {
        let to = solid
            .checked_offset(voxcast::glam::IVec3::new(
                corner & 1,
                corner >> 1 & 1,
                corner >> 2 & 1,
            ))
            .expect("near 0");
        for d in common::cube(7).filter(|&d| d != voxcast::glam::IVec3::ZERO) {
            let from = solid.checked_offset(d).expect("near 0");
            let seg = VoxelRay::between(from, Vec3::splat(0.5), to, Vec3::ZERO);
            segs.push(seg.expect("valid"));
        }
    }
    let opts = |per_voxel| LineOfSightOptions {
        conservative: true,
        raycast: RaycastOptions {
            per_voxel,
            ..RaycastOptions::default()
        },
    };
    let walked = line_of_sight_batch(&segs, &world, &opts(true));
    for per_voxel in [false, true] {
        let g = gpu
            .line_of_sight(&gw, &segs, &opts(per_voxel))
            .expect("gpu los");
        let differ: Vec<usize> = (0..segs.len()).filter(|&i| g[i] != walked[i]).collect();
        assert!(
            differ.is_empty(),
            "per_voxel {per_voxel}: {} of {} segments differ from the CPU walking voxel by voxel; first: {} gpu {:?} cpu {:?}",
            differ.len(),
            segs.len(),
            common::describe(&segs[differ[0]]),
            g[differ[0]],
            walked[differ[0]]
        );
    }
    let blocked = walked
        .iter()
        .filter(|l| matches!(l, LineOfSight::Blocked(h) if h.voxel_pos == solid))
        .count();
    assert!(
        blocked * 2 > segs.len(),
        "only {blocked} of {} segments blocked at their end",
        segs.len()
    );
}

/// A segment from outside the window under `Stop` with the origin voxel skipped is answered on
/// the host; conservative line of sight there first tests the voxels beside a tie at its first
/// crossing, as the CPU does (here the step itself leaves the i128 world, and the voxel beside
/// it across z alone is unloaded: `Unknown`, once `Clear`).
#[test]
fn conservative_sight_from_outside_the_window_tests_the_first_tie() {
    let Some(gpu) = gpu() else { return };
    let mut world = VoxelWorld::new();
    world.set_voxel(WorldPos::new(5000, 5000, 5000), VoxelId(1));
    let gw = GpuWorld::from_world(gpu, &world).expect("upload");
    let r = common::ray_at(
        [i128::MIN, 0, 0],
        [0.25, 0.5, 0.75],
        [-1.0, -1.0, 1.0],
        10.0,
    );
    let mut segs = vec![r];
    // And the same kind of first tie away from the edge, stepping on into unloaded space.
    segs.push(common::ray_at(
        [-70, 3, 9],
        [0.25, 0.5, 0.75],
        [-1.0, -1.0, 1.0],
        10.0,
    ));
    for conservative in [false, true] {
        let opts = LineOfSightOptions {
            raycast: RaycastOptions {
                origin: voxcast::OriginPolicy::SkipOriginVoxel,
                unloaded: UnloadedPolicy::Stop,
                ..RaycastOptions::default()
            },
            conservative,
        };
        let g = gpu.line_of_sight(&gw, &segs, &opts).expect("gpu los");
        let c = line_of_sight_batch(&segs, &world, &opts);
        assert_eq!(g, c, "conservative {conservative}");
        let edge = if conservative {
            LineOfSight::Unknown
        } else {
            LineOfSight::Clear
        };
        assert_eq!(
            (g[0], g[1]),
            (edge, LineOfSight::Unknown),
            "conservative {conservative}"
        );
    }
}

/// The window's margin must stay unloaded (rays from outside are clipped to the window without
/// the conservative tie test at that crossing): `update_chunks` refuses a loaded margin chunk,
/// and a refused update changes nothing, even when the list also holds good chunks.
#[test]
fn update_chunks_refuses_margin_chunks_and_changes_nothing_on_error() {
    let Some(gpu) = gpu() else { return };
    let mut world = VoxelWorld::new();
    world.set_voxel(WorldPos::new(5, 5, 5), VoxelId(1));
    world.set_voxel(WorldPos::new(40, 5, 5), VoxelId(2));
    let before = world.clone();
    let mut gw = GpuWorld::from_world(gpu, &world).expect("upload");
    assert_eq!(gw.anchor(), ChunkPos::new(-1, -1, -1));
    assert_eq!(gw.dims(), [4, 3, 3]);
    // Rays through chunks (0,0,0), (1,0,0) and the margins around them, from inside and outside.
    let rays = adversarial_rays(WorldPos::new(30, 10, 10), 4000, 60);
    let stays_as_before = |gw: &GpuWorld, when: &str| {
        for opts in [
            RaycastOptions::default(),
            RaycastOptions {
                unloaded: UnloadedPolicy::Stop,
                ..Default::default()
            },
        ] {
            check(gpu, &format!("{when} {opts:?}"), &before, gw, &rays, &opts);
            sight_parity_with(gpu, gw, &before, &rays, when, &opts);
        }
    };
    // A margin chunk loaded in the world: refused, and the GpuWorld is untouched.
    world.set_voxel(WorldPos::new(70, 5, 5), VoxelId(3));
    let margin = ChunkPos::new(2, 0, 0);
    assert_eq!(
        gw.update_chunks(&world, &[ChunkPos::new(0, 0, 0), margin]),
        Err(GpuError::ChunkOutsideWindow(margin))
    );
    // Good chunks (one removed, one edited) before one outside the window: nothing of the
    // list is applied.
    world.remove_chunk(ChunkPos::new(1, 0, 0));
    world.set_voxel(WorldPos::new(10, 10, 10), VoxelId(3));
    let outside = ChunkPos::new(9, 0, 0);
    assert_eq!(
        gw.update_chunks(
            &world,
            &[ChunkPos::new(1, 0, 0), ChunkPos::new(0, 0, 0), outside]
        ),
        Err(GpuError::ChunkOutsideWindow(outside))
    );
    stays_as_before(&gw, "after refused updates");
    // A margin chunk that is still unloaded may be listed.
    world.remove_chunk(margin);
    gw.update_chunks(
        &world,
        &[ChunkPos::new(1, 0, 0), ChunkPos::new(0, 0, 0), margin],
    )
    .expect("unloaded margin chunk");
    check_every_option(gpu, "after the update", &world, &gw, &rays);
}

/// `update_chunks` writes only the chunks it is given: when new stored chunks make the slot
/// buffers grow, the GPU keeps what it had of every other chunk (copied on the GPU), even of
/// a chunk edited in the world but not listed; listing it later brings it up to date.
#[test]
fn update_chunks_keeps_unlisted_chunks_when_slots_grow() {
    let Some(gpu) = gpu() else { return };
    let mut world = VoxelWorld::new();
    world.set_voxel(WorldPos::new(5, 5, 5), VoxelId(1));
    world.set_voxel(WorldPos::new(40, 5, 5), VoxelId(2));
    // Chunk (-1,0,0) is loaded (all air), so it is no margin chunk and may become dense.
    world
        .insert_chunk(ChunkPos::new(-1, 0, 0), voxcast::Chunk::default())
        .expect("in the world");
    let mut gw = GpuWorld::from_world(gpu, &world).expect("upload");
    assert_eq!(gw.stored_chunks(), 2);
    let as_uploaded = world.clone();
    // Chunk (0,0,0) edited but not listed; chunk (-1,0,0) gets dense, so the slots grow.
    world
        .insert_chunk(ChunkPos::new(0, 0, 0), voxcast::Chunk::filled(VoxelId(4)))
        .expect("in the world");
    world.set_voxel(WorldPos::new(-5, 5, 5), VoxelId(1));
    for x in -32..0 {
        world.set_voxel(WorldPos::new(x, 9, 9), VoxelId(3));
    }
    gw.update_chunks(&world, &[ChunkPos::new(-1, 0, 0)])
        .expect("update");
    assert_eq!(gw.stored_chunks(), 3);
    // What the GPU should hold: the world as uploaded, with chunk (-1,0,0) as it is now.
    let mut expected = as_uploaded.clone();
    expected
        .insert_chunk(
            ChunkPos::new(-1, 0, 0),
            world
                .chunk(ChunkPos::new(-1, 0, 0))
                .expect("loaded")
                .clone(),
        )
        .expect("in the world");
    let rays = adversarial_rays(WorldPos::new(5, 10, 10), 4000, 61);
    for opts in [
        RaycastOptions::default(),
        RaycastOptions {
            unloaded: UnloadedPolicy::Stop,
            ..Default::default()
        },
    ] {
        check(gpu, "unlisted chunk kept", &expected, &gw, &rays, &opts);
    }
    gw.update_chunks(&world, &[ChunkPos::new(0, 0, 0)])
        .expect("update");
    check_every_option(gpu, "all listed", &world, &gw, &rays);
}

/// A `GpuWorld` belongs to the raycaster (device) that uploaded it: another one refuses it
/// with an error, and both go on working.
#[test]
fn a_world_from_another_raycaster_is_an_error() {
    let Some(gpu) = gpu() else { return };
    let Some(other) = own_gpu() else { return };
    let world = common::world_with(&[(WorldPos::new(5, 5, 5), VoxelId(1))]);
    let gw = GpuWorld::from_world(gpu, &world).expect("upload");
    let ray = common::ray(WorldPos::new(0, 5, 5), Vec3::splat(0.5), Vec3::X, 40.0);
    let opts = RaycastOptions::default();
    assert_eq!(
        other.raycast(&gw, &[ray], &opts),
        Err(GpuError::WorldFromAnotherDevice)
    );
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
        other.render_camera(&gw, &cam, &opts).err(),
        Some(GpuError::WorldFromAnotherDevice)
    );
    check(gpu, "own device", &world, &gw, &[ray], &opts);
    let own = GpuWorld::from_world(&other, &world).expect("upload");
    check(
        &other,
        "other device, own world",
        &world,
        &own,
        &[ray],
        &opts,
    );
}

/// `render_camera` gives pixel (px, py) the outcome of `Camera::ray(px, py)`, also for a
/// camera whose public fields were edited by hand: `Invalid` where that ray is invalid, and
/// exactly the CPU's answer where it is not (the shader cannot take every such camera; those
/// are rendered from host-built rays).
#[test]
fn hand_edited_cameras_give_each_pixel_its_rays_outcome() {
    let Some(gpu) = &own_gpu() else { return };
    let (_, sw) = sparse();
    let gw = GpuWorld::from_world(gpu, sw).expect("upload");
    let opts = RaycastOptions::default();
    let good = Camera::new(
        WorldPos::new(100, 100, 100),
        Vec3::splat(0.5),
        Vec3::new(1.0, -0.3, 0.6),
        70.0,
        24,
        16,
        300.0,
    )
    .expect("camera");
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
        let got = gpu
            .render_camera(&gw, &cam, &opts)
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
                gpu.last_batch_stats().gpu_rays,
                u64::from(cam.width * cam.height),
                "a camera made by Camera::new is rendered by the shader"
            );
        }
    }
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
    let gw = GpuWorld::from_world(gpu, &world).expect("upload");
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
        gpu.render_camera(&gw, &cam, &RaycastOptions::default())
            .err(),
        Some(GpuError::OutputTooLarge(u64::from(w) * u64::from(h)))
    );
}

/// `last_batch_stats` describes the last call, also one answered on the host alone.
#[test]
fn batch_stats_describe_the_last_call() {
    let Some(gpu) = &own_gpu() else { return };
    let world = common::world_with(&[(WorldPos::new(5, 5, 5), VoxelId(1))]);
    let gw = GpuWorld::from_world(gpu, &world).expect("upload");
    let near = vec![common::ray(WorldPos::new(0, 5, 5), Vec3::splat(0.5), Vec3::X, 40.0); 100];
    gpu.raycast(&gw, &near, &RaycastOptions::default())
        .expect("cast");
    let stats = gpu.last_batch_stats();
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
    gpu.raycast(&gw, &far, &RaycastOptions::default())
        .expect("cast");
    let stats = gpu.last_batch_stats();
    assert_eq!((stats.gpu_rays, stats.dispatches), (0, 0));
    gpu.raycast(&gw, &[], &RaycastOptions::default())
        .expect("cast");
    assert_eq!(gpu.last_batch_stats().gpu_rays, 0);
}

/// Kept buffers grow with the largest batch, `release_buffers` frees them, and batches after
/// it grow them again and still match the CPU.
#[test]
fn release_buffers_frees_kept_memory() {
    let Some(gpu) = &own_gpu() else { return };
    let (t, world) = terrain();
    let gw = GpuWorld::from_world(gpu, world).expect("upload");
    let opts = RaycastOptions::default();
    let small = gpu.kept_memory();
    let rays = t.reach_rays(20_000, 0x4B45_5054);
    check(gpu, "before release", world, &gw, &rays, &opts);
    let grown = gpu.kept_memory();
    // 336 GPU bytes per ray of the dispatch (20,000 rounded up to 32,768), 96 host bytes per ray.
    assert_eq!(
        grown.gpu_bytes - small.gpu_bytes,
        336 * (32_768 - 1),
        "{grown:?}"
    );
    assert!(grown.host_bytes >= 96 * 20_000, "{grown:?}");
    gpu.release_buffers();
    assert_eq!(
        gpu.kept_memory(),
        voxcast::gpu::KeptMemory {
            host_bytes: 0,
            ..small
        }
    );
    check(gpu, "after release", world, &gw, &rays[..5_000], &opts);
    let regrown = gpu.kept_memory();
    assert_eq!(
        regrown.gpu_bytes - small.gpu_bytes,
        336 * (8_192 - 1),
        "{regrown:?}"
    );
    assert!(regrown.host_bytes >= 96 * 5_000 && regrown.host_bytes < grown.host_bytes);
}

/// A window wider than a device limit is refused with the size it needs (saturated, not
/// truncated).
#[test]
fn a_window_across_the_whole_world_names_its_size() {
    let Some(gpu) = gpu() else { return };
    let mut world = VoxelWorld::new();
    for x in [ChunkPos::MIN_INDEX, ChunkPos::MAX_INDEX] {
        world
            .insert_chunk(ChunkPos::new(x, 0, 0), voxcast::Chunk::filled(VoxelId(1)))
            .expect("in the world");
    }
    match GpuWorld::from_world(gpu, &world) {
        Err(GpuError::LimitExceeded { needed, limit, .. }) => {
            assert_eq!(needed, u64::MAX);
            assert!(needed > limit);
        }
        other => panic!("expected LimitExceeded, got {other:?}"),
    }
}

/// Chunks that stop being stored give their slots back before new ones take slots, whatever
/// the order of the list: swapping a stored chunk for another does not grow the buffers.
#[test]
fn update_chunks_frees_slots_before_taking_new_ones() {
    let Some(gpu) = gpu() else { return };
    let mut world = VoxelWorld::new();
    for x in 0..4 {
        world
            .insert_chunk(ChunkPos::new(x, 0, 0), voxcast::Chunk::default())
            .expect("in the world");
    }
    for x in 0..3 {
        world.set_voxel(WorldPos::new(32 * x + 5, 5, 5), VoxelId(1));
    }
    let mut gw = GpuWorld::from_world(gpu, &world).expect("upload");
    let memory = gw.memory_bytes();
    let rays = adversarial_rays(WorldPos::new(60, 10, 10), 3000, 62);
    for (step, (new, gone)) in [(3, 0), (0, 1), (1, 2)].into_iter().enumerate() {
        world.set_voxel(WorldPos::new(32 * new + 9, 9, 9), VoxelId(2));
        world.remove_chunk(ChunkPos::new(gone, 0, 0));
        // The new stored chunk first in the list, the removed one after it.
        gw.update_chunks(
            &world,
            &[ChunkPos::new(new, 0, 0), ChunkPos::new(gone, 0, 0)],
        )
        .expect("update");
        assert_eq!(gw.stored_chunks(), 3, "step {step}");
        assert_eq!(
            gw.memory_bytes(),
            memory,
            "step {step}: the slot buffers grew"
        );
        check(
            gpu,
            &format!("swap {step}"),
            &world,
            &gw,
            &rays,
            &RaycastOptions::default(),
        );
        world
            .insert_chunk(ChunkPos::new(gone, 0, 0), voxcast::Chunk::default())
            .expect("in the world");
        gw.update_chunks(&world, &[ChunkPos::new(gone, 0, 0)])
            .expect("update");
    }
}

/// Batches of more than a million rays are prepared on the host in bands (bounded working
/// memory): rays, line of sight and a camera rendered from host-built rays (eye outside the
/// window), each over more than one band, ray by ray against the CPU.
#[test]
fn batches_larger_than_a_host_band() {
    let Some(gpu) = &own_gpu() else { return };
    let (t, tw) = terrain();
    let gw = GpuWorld::from_world(gpu, tw).expect("upload");
    let n = (1 << 20) + 40_000;
    let rays = t.reach_rays(n, 80);
    check(
        gpu,
        "reach rays over two bands",
        tw,
        &gw,
        &rays,
        &RaycastOptions::default(),
    );
    assert!(gpu.last_batch_stats().gpu_rays > 1 << 20);
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
    let g = gpu
        .render_camera(&gw, &cam, &RaycastOptions::default())
        .expect("render");
    let cam_rays = cam.rays().expect("camera rays");
    let c = raycast_batch(&cam_rays, tw, &RaycastOptions::default());
    assert_parity("camera from host rays over two bands", &cam_rays, &g, &c);
    let stats = gpu.last_batch_stats();
    assert!(stats.gpu_rays > 0 && stats.total_seconds > 0.0, "{stats:?}");
}

/// A world that grows past what its `GpuWorld` can hold: `update_or_rebuild` uploads it again,
/// and the answers follow the world (chunks streamed in around a moving player).
#[test]
fn a_growing_world_is_uploaded_again() {
    let Some(gpu) = gpu() else { return };
    let mut world = VoxelWorld::new();
    world.set_voxel(WorldPos::new(5, 5, 5), VoxelId(1));
    let mut gw = GpuWorld::from_world(gpu, &world).expect("upload");
    let rays = adversarial_rays(WorldPos::new(40, 10, 10), 3000, 90);
    // Inside the loaded bounds: an update.
    world.set_voxel(WorldPos::new(9, 9, 9), VoxelId(2));
    assert_eq!(
        gw.update_or_rebuild(gpu, &world, &[ChunkPos::new(0, 0, 0)]),
        Ok(false)
    );
    check_every_option(gpu, "updated", &world, &gw, &rays);
    // Streaming east, one chunk at a time: the margin chunk, then one past the window.
    for (x, rebuilt) in [(1, true), (2, true), (3, true)] {
        let chunk = ChunkPos::new(x, 0, 0);
        world.set_voxel(WorldPos::new(32 * x + 3, 4, 4), VoxelId(3));
        assert_eq!(
            gw.update_or_rebuild(gpu, &world, &[chunk]),
            Ok(rebuilt),
            "chunk {chunk:?}"
        );
        assert_eq!(gw.dims()[0], x as u32 + 3);
        check_every_option(gpu, &format!("streamed to x = {x}"), &world, &gw, &rays);
    }
    // A rebuild that fails (a chunk 2^100 voxels away makes the window too large) leaves the
    // GpuWorld as it was.
    let before = world.clone();
    let far = WorldPos::new(1 << 100, 4, 4);
    world.set_voxel(far, VoxelId(1));
    assert!(matches!(
        gw.update_or_rebuild(gpu, &world, &[far.chunk()]),
        Err(GpuError::LimitExceeded { .. })
    ));
    check_every_option(gpu, "after a failed rebuild", &before, &gw, &rays);
}

/// Skipping empty bricks whole or stepping through them gives the same answers: each world
/// under both walks, against the CPU, and the choice made from the stored chunks follows their
/// share of air in empty bricks, also after updates and a rebuild.
#[test]
fn both_walks_through_empty_bricks_agree_with_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let (t, tw) = terrain();
    let (s, sw) = sparse();
    let mut tg = GpuWorld::from_world(gpu, tw).expect("upload terrain");
    let mut sg = GpuWorld::from_world(gpu, sw).expect("upload sparse");
    // Terrain keeps much of its air in empty bricks; 1% random solid voxels almost none.
    assert!(tg.skips_empty_bricks(), "terrain: skip empty bricks");
    assert!(!sg.skips_empty_bricks(), "sparse: step through them");
    let mut rng = SplitMix64::new(95);
    let terrain_rays: Vec<VoxelRay> = t
        .reach_rays(20_000, 96)
        .into_iter()
        .map(|r| VoxelRay {
            max_distance: 300.0 * rng.next_f32(),
            ..r
        })
        .collect();
    let sparse_rays = s.rays(20_000, 97);
    for skip in [false, true] {
        tg.set_skip_empty_bricks(Some(skip));
        sg.set_skip_empty_bricks(Some(skip));
        assert_eq!(tg.skips_empty_bricks(), skip);
        assert_eq!(sg.skips_empty_bricks(), skip);
        for opts in every_option() {
            let what = format!("skip empty bricks {skip}, {opts:?}");
            check(
                gpu,
                &format!("terrain, {what}"),
                tw,
                &tg,
                &terrain_rays,
                &opts,
            );
            check(
                gpu,
                &format!("sparse, {what}"),
                sw,
                &sg,
                &sparse_rays,
                &opts,
            );
        }
        let camera = Camera::new(
            WorldPos::new(40, 70, 40),
            Vec3::splat(0.5),
            Vec3::new(1.0, -0.4, 0.8),
            70.0,
            160,
            90,
            400.0,
        )
        .expect("camera");
        let opts = RaycastOptions::default();
        let g = gpu
            .render_camera(&tg, &camera, &opts)
            .expect("camera on the GPU");
        let rays: Vec<VoxelRay> = (0..90)
            .flat_map(|y| (0..160).map(move |x| (x, y)))
            .map(|(x, y)| camera.ray(x, y).expect("pixel ray"))
            .collect();
        assert_parity(
            &format!("terrain camera, skip empty bricks {skip}"),
            &rays,
            &g,
            &raycast_batch(&rays, tw, &opts),
        );
    }
    // Back to the choice made from the chunks; an update that empties the terrain's upper
    // chunks' solid voxels into scattered ones changes it.
    tg.set_skip_empty_bricks(None);
    assert!(tg.skips_empty_bricks());
    let mut world = tw.clone();
    let mut changed = Vec::new();
    for (pos, chunk) in tw.chunks() {
        if chunk.uniform_id().is_none() {
            let mut c = voxcast::Chunk::filled(VoxelId::AIR);
            let mut r = SplitMix64::new(pos.x as u64 ^ (pos.z as u64) << 20);
            for _ in 0..300 {
                let v = r.next_u64();
                c.set(
                    voxcast::LocalPos::new(
                        (v & 31) as u8,
                        (v >> 5 & 31) as u8,
                        (v >> 10 & 31) as u8,
                    ),
                    VoxelId(1),
                );
            }
            world.insert_chunk(pos, c).expect("chunk in the world");
            changed.push(pos);
        }
    }
    tg.update_chunks(&world, &changed).expect("update");
    assert!(
        !tg.skips_empty_bricks(),
        "scattered voxels after the update"
    );
    check(
        gpu,
        "terrain scattered",
        &world,
        &tg,
        &terrain_rays,
        &RaycastOptions::default(),
    );
    // A setting survives a rebuild.
    tg.set_skip_empty_bricks(Some(true));
    let mut grown = world.clone();
    let far = WorldPos::new(-40, 3, 3);
    grown.set_voxel(far, VoxelId(1));
    assert_eq!(tg.update_or_rebuild(gpu, &grown, &[far.chunk()]), Ok(true));
    assert!(tg.skips_empty_bricks(), "the setting survives a rebuild");
    check(
        gpu,
        "rebuilt",
        &grown,
        &tg,
        &terrain_rays,
        &RaycastOptions::default(),
    );
}
