//! Helpers shared by the GPU test files: the shared raycaster with the CI switch (with
//! `VOXCAST_REQUIRE_GPU=1` a missing adapter fails every GPU test; without it they skip with a
//! loud message), ray-by-ray parity checks that print the ray and how to rerun it, and the
//! scenes and ray sets they run on.

use std::sync::OnceLock;
use voxcast::gpu::{AgentPairs, BoxCasts, CameraImage, Rays, SensorSweep, Sightlines};

use crate::common;
use crate::scene::{Sparse, SplitMix64, Terrain, WATER};
use voxcast::glam::Quat;
use voxcast::gpu::{GpuConfig, GpuError, GpuRaycaster, GpuWorld, RaySetup, Visibility, wgpu};
use voxcast::{BoxCast, BoxCastOutcome, box_cast_batch};
use voxcast::{
    Camera, ChunkPos, LineOfSight, LineOfSightOptions, MaterialFilter, RaycastOptions,
    RaycastOutcome, UnloadedPolicy, VoxelId, VoxelRay, VoxelWorld, WorldPos, glam::Vec3,
    line_of_sight_batch, raycast_batch, raycast_camera,
};
use voxcast::{SensorPose, SensorReadings, SensorRig, sense};

/// The raycaster the tests share, created once. `None` (after a loud message) where no GPU is
/// usable, unless `VOXCAST_REQUIRE_GPU=1`, where that fails the test.
pub fn gpu() -> Option<&'static GpuRaycaster> {
    static GPU: OnceLock<Option<GpuRaycaster>> = OnceLock::new();
    GPU.get_or_init(|| match GpuRaycaster::new_blocking(GpuConfig::default()) {
        Ok(g) => {
            eprintln!("GPU parity tests on: {}", g.adapter_summary());
            Some(g)
        }
        Err(e) => {
            skip_without_gpu(&e);
            None
        }
    })
    .as_ref()
}

/// What a GPU test does where no GPU is usable (`e` says why): with `VOXCAST_REQUIRE_GPU=1`
/// (as `scripts/test.sh` sets it) it fails, else it says loudly that it skips.
fn skip_without_gpu(e: &GpuError) {
    if std::env::var("VOXCAST_REQUIRE_GPU").is_ok_and(|v| v == "1") {
        panic!("VOXCAST_REQUIRE_GPU=1 but no GPU is usable: {e}");
    }
    eprintln!("\n!!!!! SKIPPING GPU TESTS: {e} !!!!!\n");
}

/// A device on the adapter the shared raycaster uses, with the given limits and no optional
/// features, as an application would create its own.
pub fn application_device(limits: wgpu::Limits) -> (wgpu::Device, wgpu::Queue) {
    let name = gpu()
        .expect("gpu() was checked")
        .adapter_info()
        .name
        .clone();
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::PRIMARY;
    let instance = wgpu::Instance::new(desc.with_env());
    let adapter = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()))
        .into_iter()
        .find(|a| a.get_info().name == name)
        .expect("the shared raycaster's adapter is listed");
    pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("application"),
        required_limits: limits,
        ..Default::default()
    }))
    .expect("a device with these limits")
}

/// A raycaster of the test's own, for tests that change its settings:
/// tests run in parallel and share [`gpu`]. `None` where [`gpu`] skips.
pub fn own_gpu() -> Option<GpuRaycaster> {
    gpu()?;
    Some(
        GpuRaycaster::new_blocking(GpuConfig::default())
            .expect("a second raycaster on the same adapter"),
    )
}

/// A raycaster of the test's own that sets up uploaded rays the other way from [`gpu`]
/// ([`RaySetup`]): on the host where the shared one leaves it to the shader, and the other way
/// round, so that both paths meet the CPU reference on every device. `None` where [`gpu`]
/// skips.
pub fn other_setup_gpu() -> Option<GpuRaycaster> {
    let shared = gpu()?;
    let ray_setup = if shared.setup().rays_set_up_in_shader {
        RaySetup::Host
    } else {
        RaySetup::Shader
    };
    let g = GpuRaycaster::new_blocking(GpuConfig {
        ray_setup,
        ..GpuConfig::default()
    })
    .expect("a raycaster with the other ray setup");
    assert_ne!(
        g.setup().rays_set_up_in_shader,
        shared.setup().rays_set_up_in_shader
    );
    Some(g)
}

/// Compares outcomes ray by ray: the parity contract. Prints the first mismatches with the ray
/// and how to rerun just that ray.
pub fn assert_parity(
    what: &str,
    rays: &[VoxelRay],
    gpu: &[RaycastOutcome],
    cpu: &[RaycastOutcome],
) {
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
                "  ray #{i}: {:?}\n    gpu: {:?}\n    cpu: {:?}\n    rerun: voxel_raycast_with(&{:?}, ..) vs GpuRaycaster::cast(Rays(&[that ray]), ..)\n",
                rays[i], gpu[i], cpu[i], rays[i]
            );
        }
        panic!("{msg}");
    }
}

/// `rays` cast on the GPU and the CPU, compared ray by ray ([`assert_parity`]).
pub fn check(
    gpu: &GpuRaycaster,
    what: &str,
    world: &VoxelWorld,
    gw: &GpuWorld,
    rays: &[VoxelRay],
    opts: &RaycastOptions,
) -> voxcast::gpu::BatchStats {
    let mut g = Vec::new();
    let stats = gpu
        .cast_into(Rays(rays), gw, opts, &mut g)
        .unwrap_or_else(|e| panic!("{what}: GPU error: {e}"));
    let c = raycast_batch(rays, world, opts);
    assert_parity(what, rays, &g, &c);
    stats
}

/// The tests' terrain (256 × 96 × 256 voxels) and its world, built once.
pub fn terrain() -> &'static (Terrain, VoxelWorld) {
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

/// The tests' sparse world (128³ voxels, 1% solid) and its world, built once.
pub fn sparse() -> &'static (Sparse, VoxelWorld) {
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
pub fn adversarial_rays(center: WorldPos, n_random: usize, seed: u64) -> Vec<VoxelRay> {
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

/// Line of sight on the GPU against the CPU, plain and conservative.
pub fn sight_parity(
    gpu: &GpuRaycaster,
    gw: &GpuWorld,
    world: &VoxelWorld,
    segs: &[VoxelRay],
    what: &str,
) {
    sight_parity_with(gpu, gw, world, segs, what, &RaycastOptions::default());
}

/// [`sight_parity`] with the given raycast options, for plain and conservative line of sight.
pub fn sight_parity_with(
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
        let g = gpu.cast(Sightlines(segs), gw, &opts).expect("gpu los");
        let c = line_of_sight_batch(segs, world, &opts);
        assert_sight_parity(
            &format!("{what}: line of sight conservative={conservative}"),
            segs,
            &g,
            &c,
        );
    }
}

/// [`assert_parity`] for line of sight: the blocking hit or the unloaded location compared as
/// the parity contract compares outcomes.
pub fn assert_sight_parity(
    what: &str,
    segs: &[VoxelRay],
    gpu: &[LineOfSight],
    cpu: &[LineOfSight],
) {
    let to_outcome = |l: &LineOfSight| RaycastOutcome::from(*l);
    let g: Vec<_> = gpu.iter().map(to_outcome).collect();
    let c: Vec<_> = cpu.iter().map(to_outcome).collect();
    assert_parity(what, segs, &g, &c);
}

/// Every option (origin policy, unloaded policy, material filter, per-voxel mode) as raycast
/// options: what the robustness tests below sweep.
pub fn every_option() -> Vec<RaycastOptions> {
    let mut all = Vec::new();
    for origin in common::ORIGIN_POLICIES {
        for unloaded in [UnloadedPolicy::Air, UnloadedPolicy::Stop] {
            for blocks in [
                MaterialFilter::every_non_air(),
                MaterialFilter::every_non_air().without(VoxelId(2)),
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

/// Three option sets that between them take every origin policy, both unloaded policies, a
/// filter and the per-voxel walk.
pub fn few_options() -> Vec<RaycastOptions> {
    vec![
        RaycastOptions::default(),
        RaycastOptions {
            origin: voxcast::OriginPolicy::ExitSolid,
            unloaded: UnloadedPolicy::Stop,
            ..RaycastOptions::default()
        },
        RaycastOptions {
            origin: voxcast::OriginPolicy::SkipOriginVoxel,
            blocks: MaterialFilter::every_non_air().without(VoxelId(2)),
            per_voxel: true,
            ..RaycastOptions::default()
        },
    ]
}

/// Raycasts and both kinds of line of sight, under every option, ray by ray against the CPU.
pub fn check_every_option(
    gpu: &GpuRaycaster,
    what: &str,
    world: &VoxelWorld,
    gw: &GpuWorld,
    rays: &[VoxelRay],
) {
    check_options(gpu, what, world, gw, rays, &every_option());
}

/// Raycasts and both kinds of line of sight, under each of `options`, ray by ray against the
/// CPU.
pub fn check_options(
    gpu: &GpuRaycaster,
    what: &str,
    world: &VoxelWorld,
    gw: &GpuWorld,
    rays: &[VoxelRay],
    options: &[RaycastOptions],
) {
    for opts in options {
        let what = format!("{what} {opts:?}");
        check(gpu, &what, world, gw, rays, opts);
        sight_parity_with(gpu, gw, world, rays, &what, opts);
    }
}

// The parity battery: `tests/gpu_parity.rs` runs it on the shared raycaster, and
// `tests/spec_variants.rs` on every spec variant of the shader.

/// Over a million rays on the terrain and the sparse world: reach, long, per-voxel and
/// adversarial rays.
pub fn million_rays(gpu: &GpuRaycaster) {
    let (t, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload terrain");
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
    let sg = gpu.upload_world(sw).expect("upload sparse");
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

/// Raycasts under every origin policy, unloaded policy and material filter, with rays clipped
/// into the window from outside it and from far away.
pub fn every_option_with_clipped_rays(gpu: &GpuRaycaster) {
    let (t, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload terrain");
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
                MaterialFilter::every_non_air().without(WATER),
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

/// Line of sight, plain and conservative, on terrain segments and through edges and corners,
/// also of diagonals clipped into the window, under every origin and unloaded policy.
pub fn sight_through_ties_and_clipping(gpu: &GpuRaycaster) {
    let (t, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload terrain");
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
    let edge_gw = gpu.upload_world(&edge_world).expect("upload");
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

/// Camera images against the CPU pixel by pixel: the terrain camera, cameras looking straight
/// down and rolled (`Camera::with_up`), and cameras edited by hand, some of them still made in
/// the shader (a forward vector a little off unit length, odd scales, a mirrored basis, another
/// size: pixel directions that are far from round numbers), some answered from host rays (an
/// eye offset outside `[0, 1)`, a NaN forward: invalid pixels).
pub fn camera_images(gpu: &GpuRaycaster) {
    let (t, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload");
    let opts = RaycastOptions::default();
    let render = |what: &str, cam: &Camera| {
        let g = gpu
            .cast(CameraImage(cam), &gw, &opts)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let rays: Vec<VoxelRay> = (0..cam.width * cam.height)
            .filter_map(|i| cam.ray(i % cam.width, i / cam.width).ok())
            .collect();
        let cpu = raycast_camera(cam, tw, &opts).expect("cpu camera");
        if rays.len() == g.len() {
            assert_parity(what, &rays, &g, &cpu);
        } else {
            // Invalid pixels: compared as outcomes, without their rays.
            let bad = g.iter().zip(&cpu).filter(|(a, b)| !a.matches(b)).count();
            assert_eq!(bad, 0, "{what}: {bad} pixels differ");
        }
        cpu
    };
    let cam = t.camera(320, 180);
    render("camera (shader-made rays)", &cam);
    for (forward, up) in [(Vec3::NEG_Y, Vec3::Z), (Vec3::new(0.3, -0.2, 1.0), Vec3::X)] {
        let cam = Camera::with_up(
            t.camera(8, 8).position,
            Vec3::splat(0.25),
            forward,
            up,
            80.0,
            96,
            64,
            512.0,
        )
        .expect("camera");
        let cpu = render("camera with another up", &cam);
        assert!(cpu.iter().filter(|o| o.hit().is_some()).count() > cpu.len() / 4);
    }
    let base = t.camera(120, 68);
    type Edit = (&'static str, fn(&mut Camera));
    let edits: [Edit; 6] = [
        ("forward 0.04% long", |c| c.forward *= 1.0004),
        ("odd scales", |c| {
            c.scale_x = 0.777_7;
            c.scale_y = 0.313_1;
        }),
        ("mirrored basis", |c| {
            c.right = -c.right;
            c.up = -c.up;
        }),
        ("another size", |c| {
            c.width = 77;
            c.height = 33;
        }),
        ("eye offset outside [0, 1)", |c| c.sub_offset.x = 1.5),
        ("NaN forward", |c| c.forward.y = f32::NAN),
    ];
    for (what, edit) in edits {
        let mut cam = base;
        edit(&mut cam);
        render(what, &cam);
    }
}

/// Agent visibility (segments built in the shader) against the CPU pair by pair, with each
/// pair's answer: terrain agents, some on voxel corners, pairs within 48 voxels and random ones,
/// plain and conservative.
pub fn agent_pairs(gpu: &GpuRaycaster) {
    let (t, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload");
    let agents = t.agents(400, 21);
    let on_gpu = gpu.upload_agents(&agents, &gw).expect("agents");
    let mut pairs = voxcast::pairs_within(&agents, 48.0);
    let mut rng = SplitMix64::new(22);
    pairs.extend((0..4_000).map(|_| [rng.below(400) as u32, rng.below(400) as u32]));
    for conservative in [false, true] {
        let opts = LineOfSightOptions {
            conservative,
            ..Default::default()
        };
        let cpu = voxcast::agent_visibility(&agents, &pairs, tw, &opts);
        let got = gpu
            .cast(
                AgentPairs {
                    agents: &on_gpu,
                    pairs: &pairs,
                    outcomes: true,
                },
                &gw,
                &opts,
            )
            .expect("visibility");
        assert!(got.answers().is_some());
        let what = format!("agent pairs, conservative={conservative}");
        check_visibility(&what, &got, &cpu, &pairs);
    }
}

/// The GPU's answers equal the CPU's pair by pair, and the bits are exactly the `Clear` ones.
pub fn check_visibility(what: &str, gpu: &Visibility, cpu: &[LineOfSight], pairs: &[[u32; 2]]) {
    assert_eq!(gpu.len(), cpu.len(), "{what}: pair count");
    if let Some(answers) = gpu.answers() {
        let bad: Vec<usize> = (0..cpu.len())
            .filter(|&i| !answers[i].matches(&cpu[i]))
            .collect();
        assert!(
            bad.is_empty(),
            "{what}: {} of {} pairs differ; first: pair {:?}: gpu {:?}, cpu {:?}",
            bad.len(),
            cpu.len(),
            pairs[bad[0]],
            answers[bad[0]],
            cpu[bad[0]]
        );
    }
    for (i, c) in cpu.iter().enumerate() {
        assert_eq!(
            gpu.visible(i),
            *c == LineOfSight::Clear,
            "{what}: bit of pair {i} {:?}: cpu {c:?}",
            pairs[i]
        );
    }
    assert_eq!(
        gpu.count_visible(),
        cpu.iter().filter(|c| **c == LineOfSight::Clear).count()
    );
}

/// Sensor readings of the GPU against the CPU's, ray by ray: the same words bit for bit and
/// (where both have them) outcomes that match. Prints the first differences with the agent's
/// pose and the ray.
pub fn check_sensors(
    what: &str,
    rig: &SensorRig,
    poses: &[SensorPose],
    gpu: &SensorReadings,
    cpu: &SensorReadings,
) {
    assert_eq!(
        (gpu.agents(), gpu.rays_per_agent()),
        (cpu.agents(), cpu.rays_per_agent()),
        "{what}: agents and rays"
    );
    assert_eq!(
        gpu.errors().collect::<Vec<_>>(),
        cpu.errors().collect::<Vec<_>>(),
        "{what}: bad poses"
    );
    let n = cpu.rays_per_agent();
    let word_differs = |i: usize| gpu.distances()[i].to_bits() != cpu.distances()[i].to_bits();
    let outcome_differs = |i: usize| match (gpu.outcomes(), cpu.outcomes()) {
        (Some(g), Some(c)) => !g[i].matches(&c[i]),
        (None, None) => false,
        _ => true,
    };
    let bad: Vec<usize> = (0..cpu.distances().len())
        .filter(|&i| word_differs(i) || outcome_differs(i))
        .collect();
    if let Some(&i) = bad.first() {
        let (a, k) = (i / n, i % n);
        panic!(
            "{what}: {} of {} sensor rays differ; first: agent {a} ray {k}: gpu {:?} ({:?}), \
             cpu {:?} ({:?}); pose {:?}, ray {:?}",
            bad.len(),
            cpu.distances().len(),
            gpu.get(a, k),
            gpu.outcomes().map(|o| o[i]),
            cpu.get(a, k),
            cpu.outcomes().map(|o| o[i]),
            poses[a],
            poses[a].ray(rig, k)
        );
    }
    assert!(gpu.matches(cpu), "{what}: readings");
}

/// Poses on the terrain: at `n` agents' eyes (some on voxel corners), turned by random yaw and
/// pitch, by random quaternions, and along the axes (quarter turns).
pub fn terrain_poses(t: &Terrain, n: usize, seed: u64) -> Vec<SensorPose> {
    let mut rng = SplitMix64::new(seed);
    t.agents(n, seed)
        .iter()
        .enumerate()
        .map(|(i, agent)| {
            let (position, offset) = agent.eye().expect("a valid eye");
            let rotation = match i % 3 {
                0 => {
                    Quat::from_rotation_y(rng.next_f32() * std::f32::consts::TAU)
                        * Quat::from_rotation_x(rng.next_f32() - 0.5)
                }
                1 => Quat::from_xyzw(
                    rng.next_f32() - 0.5,
                    rng.next_f32() - 0.5,
                    rng.next_f32() - 0.5,
                    rng.next_f32() - 0.5,
                )
                .normalize(),
                _ => Quat::from_rotation_y(std::f32::consts::FRAC_PI_2 * rng.below(4) as f32),
            };
            SensorPose::new(position, offset, rotation)
        })
        .collect()
}

/// Sensors on the terrain against the CPU: a 64-ray cone, 8 whiskers and a small LiDAR sweep
/// from 300 poses (also turned along the axes), words alone and whole answers, under the
/// default options and those of conservative sight's neighbour, `Stop` for unloaded space.
pub fn sensor_parity(gpu: &GpuRaycaster) {
    let (t, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload");
    let poses = terrain_poses(t, 300, 77);
    let rigs = [
        ("cone", SensorRig::cone(64, 30.0, 32.0).expect("cone")),
        (
            "whiskers",
            SensorRig::whiskers(8, 120.0, 6.0).expect("whiskers"),
        ),
        ("lidar", SensorRig::lidar(4, 90, 40.0, 60.0).expect("lidar")),
    ];
    let stop = RaycastOptions {
        unloaded: UnloadedPolicy::Stop,
        ..RaycastOptions::default()
    };
    for (name, rig) in &rigs {
        let on_gpu = gpu.upload_rig(rig).expect("rig");
        for opts in [RaycastOptions::default(), stop.clone()] {
            for hits in [false, true] {
                let what = format!("{name}, {:?}, hits {hits}", opts.unloaded);
                let g = gpu
                    .cast(
                        SensorSweep {
                            rig: &on_gpu,
                            poses: &poses,
                            outcomes: hits,
                        },
                        &gw,
                        &opts,
                    )
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                let c = sense(rig, &poses, tw, &opts, hits);
                check_sensors(&what, rig, &poses, &g, &c);
                // A check that could not fail otherwise: the rays both hit and miss.
                let hit = c.distances().iter().filter(|d| **d >= 0.0 && d.is_finite());
                let (hits_seen, all) = (hit.count(), c.distances().len());
                assert!(
                    0 < hits_seen && hits_seen < all,
                    "{what}: {hits_seen} of {all} hit"
                );
            }
        }
    }
}

/// The parent and child of a test that a GPU program ends cleanly: with
/// `VOXCAST_EXIT_CHILD=1` in the environment it runs `program` and returns (the test binary's
/// `main` returns right after, as a user's program would); otherwise it runs the same binary
/// as a child process `runs` times, two at a time (a thread still using the device at exit
/// crashes some of such runs), and panics unless every run exits with status 0 within two
/// minutes. Where no GPU is usable it skips loudly, or fails with `VOXCAST_REQUIRE_GPU=1`.
/// Asked to list its tests (`--list`) it names one, `exits_cleanly`; given a filter that does
/// not match that name it runs nothing.
pub fn exits_cleanly(runs: usize, program: fn()) {
    use std::process::{Child, Command, ExitStatus, Stdio};
    use std::time::{Duration, Instant};

    const AT_ONCE: usize = 2;
    const CHILD_LIMIT: Duration = Duration::from_secs(120);

    if std::env::var_os("VOXCAST_EXIT_CHILD").is_some() {
        program();
        return;
    }
    // The test harness's command line, as far as a harness of one test needs it.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        println!("exits_cleanly: test");
        return;
    }
    if let Some(filter) = args.iter().find(|a| !a.starts_with('-'))
        && !"exits_cleanly".contains(filter.as_str())
    {
        return;
    }
    // A raycaster of the parent's own, dropped: the parent ends cleanly too.
    if let Err(e) = GpuRaycaster::new_blocking(GpuConfig::default()) {
        skip_without_gpu(&e);
        return;
    }
    // A child, and a thread that drains its stderr (a child blocked on a full pipe would look
    // hung).
    let spawn = || -> (Child, std::thread::JoinHandle<String>) {
        let exe = std::env::current_exe().expect("the test binary's path");
        let mut child = Command::new(exe)
            .env("VOXCAST_EXIT_CHILD", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the child starts");
        let mut stderr = child.stderr.take().expect("piped");
        let drain = std::thread::spawn(move || {
            let mut err = String::new();
            let _ = std::io::Read::read_to_string(&mut stderr, &mut err);
            err
        });
        (child, drain)
    };
    // The child's status, or `None` when it ran past the limit (it is killed), and its stderr.
    let finish = |(mut c, drain): (Child, std::thread::JoinHandle<String>),
                  started: Instant|
     -> (Option<ExitStatus>, String) {
        let status = loop {
            match c.try_wait().expect("the child can be waited for") {
                Some(s) => break Some(s),
                None if started.elapsed() > CHILD_LIMIT => {
                    let _ = c.kill();
                    let _ = c.wait();
                    break None;
                }
                None => std::thread::sleep(Duration::from_millis(5)),
            }
        };
        (status, drain.join().unwrap_or_default())
    };
    let mut failures = Vec::new();
    let mut running: Vec<(usize, (Child, std::thread::JoinHandle<String>), Instant)> = Vec::new();
    let mut next = 0;
    while next < runs || !running.is_empty() {
        while running.len() < AT_ONCE && next < runs {
            running.push((next, spawn(), Instant::now()));
            next += 1;
        }
        let (run, c, started) = running.remove(0);
        let (status, err) = finish(c, started);
        if !status.is_some_and(|s| s.success()) {
            let last = err.lines().rev().take(5).collect::<Vec<_>>().join(" | ");
            failures.push(format!("run {run}: {status:?} ({last})"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {runs} runs did not end cleanly:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!("{runs} runs of a GPU program, every one ended with status 0");
}

/// What `gw`, a window that follows a center, holds of `world`: the chunks in its box
/// ([`GpuWorld::loadable_chunks`]), with every chunk of the box that `world` does not load
/// loaded as air. Under [`UnloadedPolicy::Stop`] a CPU ray on it stops as unloaded exactly
/// where it leaves the box (the first voxel outside, at the distance it enters it): what the
/// GPU answers on the window under [`UnloadedPolicy::Air`].
#[must_use]
pub fn held_world(gw: &GpuWorld, world: &VoxelWorld) -> VoxelWorld {
    let (lo, hi) = gw.loadable_chunks();
    let mut out = VoxelWorld::new();
    for x in lo.x..=hi.x {
        for y in lo.y..=hi.y {
            for z in lo.z..=hi.z {
                let p = ChunkPos::new(x, y, z);
                let chunk = world.chunk(p).cloned().unwrap_or_default();
                out.insert_chunk(p, chunk).expect("in the world");
            }
        }
    }
    out
}

/// Whether `p` lies in the box of chunks `gw` holds.
fn in_box(gw: &GpuWorld, p: WorldPos) -> bool {
    let (lo, hi) = gw.loadable_chunks();
    (0..3).all(|a| (lo.axis(a)..=hi.axis(a)).contains(&p.chunk().axis(a)))
}

/// GPU answers on a window against the CPU's, for rays that may leave it:
/// - each answer is the CPU's on the whole `world`, or says it left the window
///   ([`GpuWorld::left_window`]); a ray that starts outside the box is answered `Unloaded`
///   at its start, distance 0;
/// - for a ray that starts in the box, the answer is exactly the CPU's on [`held_world`]
///   under [`UnloadedPolicy::Stop`] where the options say `Air` (where they say `Stop`, on the
///   box's chunks alone): where it left the box, bit for bit.
///
/// `gpu_answers` are the GPU's answers for `rays` (a raycast, or line of sight as outcomes);
/// `cpu(world, held)` casts the batch on `world` with the options (`held`: on the held world
/// made for the options' unloaded policy, as above). Returns how many answers left the window.
pub fn check_window_edge(
    what: &str,
    gw: &GpuWorld,
    world: &VoxelWorld,
    rays: &[VoxelRay],
    gpu_answers: &[RaycastOutcome],
    cpu: impl Fn(&VoxelWorld, bool) -> Vec<RaycastOutcome>,
) -> usize {
    let whole = cpu(world, false);
    let held = cpu(&held_world(gw, world), true);
    let mut left = 0;
    for (i, (g, c)) in gpu_answers.iter().zip(&whole).enumerate() {
        // The start voxel as the DDA has it (the one below on an axis where the start lies on
        // a voxel face and the ray goes down).
        let start = voxcast::VoxelTraversal::new(&rays[i])
            .next()
            .map(|step| step.voxel)
            .ok_or(());
        if gw.left_window(g) {
            left += 1;
        } else {
            assert!(
                g.matches(c),
                "{what}: ray {i} {:?}: gpu {g:?}, cpu {c:?}, and it did not leave the window",
                rays[i]
            );
        }
        match start {
            Ok(s) if in_box(gw, s) => assert!(
                g.matches(&held[i]),
                "{what}: ray {i} {:?}: gpu {g:?}, cpu on the window's chunks {:?}",
                rays[i],
                held[i]
            ),
            Ok(s) if !matches!(g, RaycastOutcome::Invalid(_)) => assert!(
                matches!(g, RaycastOutcome::Unloaded { voxel_pos: at, distance } if *at == s && *distance == 0.0),
                "{what}: ray {i} {:?} starts outside the window: gpu {g:?}",
                rays[i]
            ),
            _ => {}
        }
    }
    left
}

/// The world and options the CPU casts with for [`check_window_edge`]'s `cpu(w, held)`: `w`
/// and `opts` as given, or for `held`, [`held_world`] (which `w` is then) under `Stop` where
/// `opts` say `Air`, and the box's chunks alone ([`seen_world`] of `whole`) where they say
/// `Stop`.
#[must_use]
pub fn window_cpu<'a>(
    gw: &GpuWorld,
    w: &'a VoxelWorld,
    whole: &VoxelWorld,
    held: bool,
    opts: &RaycastOptions,
) -> (std::borrow::Cow<'a, VoxelWorld>, RaycastOptions) {
    if !held {
        (std::borrow::Cow::Borrowed(w), opts.clone())
    } else if opts.unloaded == UnloadedPolicy::Air {
        let o = RaycastOptions {
            unloaded: UnloadedPolicy::Stop,
            ..opts.clone()
        };
        (std::borrow::Cow::Borrowed(w), o)
    } else {
        (std::borrow::Cow::Owned(seen_world(gw, whole)), opts.clone())
    }
}

/// [`check_window_edge`] for rays, under `opts`, with the completing forms checked too.
pub fn check_window_rays(
    gpu: &GpuRaycaster,
    what: &str,
    gw: &GpuWorld,
    world: &VoxelWorld,
    rays: &[VoxelRay],
    opts: &RaycastOptions,
) -> usize {
    let g = gpu.cast(Rays(rays), gw, opts).expect("raycast");
    let left = check_window_edge(what, gw, world, rays, &g, |w, held| {
        let (w, o) = window_cpu(gw, w, world, held, opts);
        raycast_batch(rays, &w, &o)
    });
    let whole = raycast_batch(rays, world, opts);
    let mut done = g;
    assert_eq!(
        Rays(rays).complete(gw, world, opts, &mut done),
        left,
        "{what}"
    );
    assert_parity(&format!("{what}, completed"), rays, &done, &whole);
    // The completed form of a submitted batch: the same answers.
    let mut submitted = gpu
        .submit(Rays(rays), gw, opts)
        .and_then(voxcast::gpu::PendingBatch::wait)
        .expect("submitted window rays");
    Rays(rays).complete(gw, world, opts, &mut submitted);
    assert_parity(
        &format!("{what}, submitted and completed"),
        rays,
        &submitted,
        &whole,
    );
    left
}

/// [`check_window_rays`] for line of sight, plain and conservative.
pub fn check_window_sight(
    gpu: &GpuRaycaster,
    what: &str,
    gw: &GpuWorld,
    world: &VoxelWorld,
    segs: &[VoxelRay],
    raycast: &RaycastOptions,
) -> usize {
    let mut left = 0;
    for conservative in [false, true] {
        let opts = LineOfSightOptions {
            conservative,
            raycast: raycast.clone(),
        };
        let what = format!("{what}, line of sight conservative={conservative}");
        let g = gpu
            .cast(Sightlines(segs), gw, &opts)
            .expect("line of sight");
        let as_outcomes: Vec<RaycastOutcome> = g.iter().map(|l| RaycastOutcome::from(*l)).collect();
        left += check_window_edge(&what, gw, world, segs, &as_outcomes, |w, held| {
            let (w, raycast) = window_cpu(gw, w, world, held, raycast);
            let o = LineOfSightOptions {
                conservative,
                raycast,
            };
            line_of_sight_batch(segs, &w, &o)
                .iter()
                .map(|l| RaycastOutcome::from(*l))
                .collect()
        });
        let whole = line_of_sight_batch(segs, world, &opts);
        let mut done = g;
        Sightlines(segs).complete(gw, world, &opts, &mut done);
        assert_sight_parity(&format!("{what}, completed"), segs, &done, &whole);
    }
    left
}

/// The chunks of `world` in the box of `gw`, and nothing else: what the window sees.
#[must_use]
pub fn seen_world(gw: &GpuWorld, world: &VoxelWorld) -> VoxelWorld {
    let mut out = VoxelWorld::new();
    for (p, c) in world.chunks() {
        let o = p.origin();
        if in_box(gw, o) {
            out.insert_chunk(p, c.clone()).expect("in the world");
        }
    }
    out
}

/// Box casts made from `rays` (same start, direction and max distance), with half extents
/// that vary by cast: 0 (a ray), 0.3, 0.5 (a voxel wide, faces on the grid from a half
/// offset), 0.9, 1, 2.5 and the cap, 8, per axis. Max distances are cut to what a cast of
/// that size may sweep on llvmpipe (`GpuError::BoxCastTooLong`): 100 voxels for boxes up to 2
/// wide, 40 up to 5 wide, 1 for the largest.
#[must_use]
pub fn boxes_of(rays: &[VoxelRay], seed: u64) -> Vec<BoxCast> {
    let mut rng = SplitMix64::new(seed);
    let halves = [0.0, 0.3, 0.5, 0.9, 1.0, 2.5, voxcast::MAX_HALF_EXTENT];
    rays.iter()
        .filter_map(|r| {
            let mut pick = || halves[rng.below(halves.len() as u64 - 1) as usize];
            let mut h = Vec3::new(pick(), pick(), pick());
            // One cast in 16 the largest box.
            if rng.below(16) == 0 {
                h = Vec3::splat(voxcast::MAX_HALF_EXTENT);
            }
            let reach = match h.max_element() {
                m if m <= 1.0 => 100.0,
                m if m <= 2.5 => 40.0,
                _ => 1.0,
            };
            let max = r.max_distance.min(reach);
            BoxCast::new(r.origin, r.sub_offset, h, r.direction, max).ok()
        })
        .collect()
}

/// [`boxes_of`] up to 5 voxels wide: every voxel of a shape costs llvmpipe's loop budget a few
/// iterations a box, and the widest boxes' sweeps through shaped voxels pass it.
fn shaped_boxes_of(rays: &[VoxelRay]) -> Vec<BoxCast> {
    let mut casts = boxes_of(rays, 99);
    casts.retain(|c| c.body.half_extents.max_element() <= 2.5);
    casts
}

/// Whether two box answers are equal under the parity contract: the same outcome, voxel, face
/// and id, and the same distance bit for bit.
#[must_use]
pub fn same_box_answer(a: &BoxCastOutcome, b: &BoxCastOutcome) -> bool {
    let bits = |o: &BoxCastOutcome| match o {
        BoxCastOutcome::Hit(h) => Some(h.distance.to_bits()),
        BoxCastOutcome::Unloaded { distance, .. } => Some(distance.to_bits()),
        _ => None,
    };
    a == b && bits(a) == bits(b)
}

/// Box casts on the GPU against [`box_cast_batch`] on `world`, cast by cast, under `opts`.
pub fn check_boxes(
    gpu: &GpuRaycaster,
    what: &str,
    world: &VoxelWorld,
    gw: &GpuWorld,
    casts: &[BoxCast],
    opts: &RaycastOptions,
) {
    let g = gpu
        .cast(BoxCasts(casts), gw, opts)
        .unwrap_or_else(|e| panic!("{what}: GPU error: {e}"));
    let c = box_cast_batch(casts, world, opts);
    assert_eq!(g.len(), c.len(), "{what}: answer count");
    let bad: Vec<usize> = (0..g.len())
        .filter(|&i| !same_box_answer(&g[i], &c[i]))
        .collect();
    if !bad.is_empty() {
        let mut msg = format!(
            "{what}: {} of {} box casts differ\n",
            bad.len(),
            casts.len()
        );
        for &i in bad.iter().take(5) {
            msg += &format!(
                "  cast #{i}: {:?}\n    gpu: {:?}\n    cpu: {:?}\n",
                casts[i], g[i], c[i]
            );
        }
        panic!("{msg}");
    }
}

/// Box casts, GPU against CPU: player boxes on the terrain and adversarial casts (grid-aligned
/// starts and extents, axis-aligned and 45° moves, zero components, chunk faces, negative
/// coordinates) under every option; boxes in worlds at the top and the bottom of i128.
pub fn box_parity(gpu: &GpuRaycaster) {
    let (t, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload terrain");
    let mut rays = t.reach_rays(2_000, 70);
    rays.extend(adversarial_rays(WorldPos::new(100, 40, 90), 1_500, 71));
    rays.extend(adversarial_rays(WorldPos::new(-40, 120, -40), 500, 72));
    let casts = boxes_of(&rays, 73);
    for opts in every_option() {
        check_boxes(
            gpu,
            &format!("boxes on the terrain {opts:?}"),
            tw,
            &gw,
            &casts,
            &opts,
        );
    }
    // At the top of the i128 world: the window's high faces are its edge.
    let top = i128::MAX - 40;
    let mut w = VoxelWorld::new();
    for (p, id) in
        common::random_solids(74, WorldPos::new(top - 20, top - 20, top - 20), 40, 0.05, 3)
    {
        w.set_voxel(p, id);
    }
    let gw = gpu.upload_world(&w).expect("upload the edge world");
    let rays = adversarial_rays(WorldPos::new(top, top, top), 2_000, 75);
    let casts = boxes_of(&rays, 76);
    for opts in every_option().into_iter().step_by(2) {
        check_boxes(
            gpu,
            &format!("boxes at the i128 edge {opts:?}"),
            &w,
            &gw,
            &casts,
            &opts,
        );
    }
    // At the bottom: boxes on its faces moving down leave the world at once.
    let bottom = i128::MIN;
    let mut w = VoxelWorld::new();
    for (p, id) in common::random_solids(77, WorldPos::new(bottom, bottom, bottom), 40, 0.05, 3) {
        w.set_voxel(p, id);
    }
    let gw = gpu.upload_world(&w).expect("upload the bottom world");
    let near = |d: i128| WorldPos::new(bottom + d, bottom + d, bottom + d);
    let mut casts = boxes_of(&adversarial_rays(near(20), 2_000, 78), 79);
    casts.extend(boxes_of(&adversarial_rays(near(0), 500, 80), 81));
    for opts in every_option().into_iter().step_by(2) {
        let what = format!("boxes at the i128 bottom {opts:?}");
        check_boxes(gpu, &what, &w, &gw, &casts, &opts);
    }
}

/// Rays given relative to the window ([`voxcast::WindowRay`]) against the CPU twin
/// ([`voxcast::raycast_window_batch_into`]) ray by ray, under every option, blocking and
/// submitted, and line of sight in both modes: terrain rays, rays through edges and corners,
/// rays from outside the window (clipped on the host), directions not quite unit, bad values
/// and voxels at the ends of i32. Rays that start in the window are answered by the shader.
pub fn window_ray_parity(gpu: &GpuRaycaster) {
    use voxcast::{
        WindowOutcome, WindowRay, line_of_sight_window_batch_into, raycast_window_batch_into,
    };
    let (t, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload terrain");
    let origin = gw.window_origin();
    let local = |rays: Vec<VoxelRay>| -> Vec<WindowRay> {
        rays.iter()
            .map(|r| WindowRay::from_voxel_ray(r, origin).expect("near the window"))
            .collect()
    };
    let mut inside = local(t.reach_rays(20_000, 30));
    inside.extend(local(adversarial_rays(
        WorldPos::new(100, 40, 90),
        10_000,
        31,
    )));
    let mut rays = inside.clone();
    rays.extend(local(adversarial_rays(
        WorldPos::new(-40, 120, -40),
        3_000,
        32,
    )));
    let mut rng = SplitMix64::new(33);
    for _ in 0..300 {
        let u = rng.unit_vector();
        let big = [i32::MIN, i32::MAX, i32::MIN + 1, i32::MAX - 1];
        rays.push(WindowRay {
            voxel: voxcast::glam::IVec3::from_array(std::array::from_fn(|_| {
                big[rng.below(4) as usize]
            })),
            sub_offset: Vec3::new(
                rng.next_f32(),
                0.0,
                [0.5, f32::NAN][usize::from(rng.below(8) == 0)],
            ),
            direction: u * [1.0, 2.0][rng.below(2) as usize],
            max_distance: 40.0,
        });
    }
    let seg_rays = local(t.sight_segments(10_000, 64.0, 34));
    let what_of = |i: usize, r: &[WindowRay], g: &[WindowOutcome], c: &[WindowOutcome]| {
        format!("ray #{i}: {:?}\n  gpu: {:?}\n  cpu: {:?}", r[i], g[i], c[i])
    };
    let compare = |what: &str, r: &[WindowRay], g: &[WindowOutcome], c: &[WindowOutcome]| {
        assert_eq!(g.len(), c.len(), "{what}");
        let bad: Vec<usize> = (0..g.len()).filter(|&i| !g[i].matches(&c[i])).collect();
        assert!(
            bad.is_empty(),
            "{what}: {} of {} differ, first {}",
            bad.len(),
            g.len(),
            what_of(bad[0], r, g, c)
        );
    };
    let (mut g, mut c) = (Vec::new(), Vec::new());
    for opts in every_option() {
        let what = format!("window rays {opts:?}");
        let stats = gpu
            .cast_into(Rays(&inside), &gw, &opts, &mut g)
            .expect("gpu window rays");
        assert_eq!(stats.gpu_rays, inside.len() as u64, "{what}");
        gpu.cast_into(Rays(&rays), &gw, &opts, &mut g)
            .expect("gpu window rays");
        raycast_window_batch_into(&rays, origin, tw, &opts, &mut c);
        compare(&what, &rays, &g, &c);
        // The same rays in i128, through the plain call, answer the same.
        let plain: Vec<VoxelRay> = rays
            .iter()
            .map(|r| r.to_voxel_ray(origin).expect("near the window"))
            .collect();
        let p = gpu.cast(Rays(&plain), &gw, &opts).expect("gpu rays");
        let p: Vec<WindowOutcome> = p
            .iter()
            .map(|o| WindowOutcome::from_outcome(o, origin))
            .collect();
        compare(&format!("{what}, plain call"), &rays, &g, &p);
    }
    let opts = RaycastOptions::default();
    let pending = gpu
        .submit_into(Rays(&rays), &gw, &opts, std::mem::take(&mut g))
        .expect("submit");
    let g = pending.wait().expect("wait");
    raycast_window_batch_into(&rays, origin, tw, &opts, &mut c);
    compare("window rays submitted", &rays, &g, &c);
    // Segments from inside and from outside the window, under every origin and unloaded
    // policy, plain and conservative, blocking and submitted.
    let mut segs = seg_rays.clone();
    segs.extend(local(adversarial_rays(
        WorldPos::new(-40, 120, -40),
        2_000,
        35,
    )));
    for origin_policy in common::ORIGIN_POLICIES {
        for unloaded in [UnloadedPolicy::Air, UnloadedPolicy::Stop] {
            for conservative in [false, true] {
                let sight = LineOfSightOptions {
                    conservative,
                    raycast: RaycastOptions {
                        origin: origin_policy,
                        unloaded,
                        ..Default::default()
                    },
                };
                let what = format!("window segments {sight:?}");
                let mut g = Vec::new();
                gpu.cast_into(Sightlines(&segs), &gw, &sight, &mut g)
                    .expect("gpu window sight");
                line_of_sight_window_batch_into(&segs, origin, tw, &sight, &mut c);
                compare(&what, &segs, &g, &c);
                let clear = g.iter().filter(|o| **o == WindowOutcome::Miss).count();
                assert!(
                    clear > 100 && clear < g.len() - 100,
                    "{what}: {clear} clear"
                );
                let g = gpu
                    .submit_into(Sightlines(&segs), &gw, &sight, g)
                    .expect("submit")
                    .wait()
                    .expect("wait");
                compare(&format!("{what}, submitted"), &segs, &g, &c);
            }
        }
    }
    // A window that follows a center, moved between batches: each batch's rays and answers
    // are relative to the origin it had, and equal the plain call's (itself checked against
    // the CPU by the window tests) ray by ray.
    let mut follow = gpu
        .upload_window(tw, ChunkPos::new(3, 1, 3), [2, 1, 2])
        .expect("window");
    for center in [ChunkPos::new(3, 1, 3), ChunkPos::new(4, 1, 2)] {
        follow.recenter(tw, center).expect("recenter");
        let origin = follow.window_origin();
        let plain: Vec<VoxelRay> = t
            .reach_rays(5_000, 36)
            .into_iter()
            .chain(t.sight_segments(5_000, 64.0, 37))
            .collect();
        let rays: Vec<WindowRay> = plain
            .iter()
            .map(|r| WindowRay::from_voxel_ray(r, origin).expect("near the window"))
            .collect();
        let opts = RaycastOptions::default();
        let mut g = Vec::new();
        gpu.cast_into(Rays(&rays), &follow, &opts, &mut g)
            .expect("gpu window rays");
        let p = gpu.cast(Rays(&plain), &follow, &opts).expect("gpu rays");
        let p: Vec<WindowOutcome> = p
            .iter()
            .map(|o| WindowOutcome::from_outcome(o, origin))
            .collect();
        compare(&format!("following window at {center:?}"), &rays, &g, &p);
        let left = p
            .iter()
            .filter(|o| matches!(o, WindowOutcome::Unloaded { .. }))
            .count();
        assert!(
            left > 100,
            "{left} rays leave the window: the edge is exercised"
        );
    }
}

/// Shapes for the ids of the tests' scenes (`voxcast::BlockShape`): grass a bottom slab, dirt a
/// flower-sized box, sand stairs, water empty, ore a fence post with two arms; stone stays a
/// cube.
pub fn scene_shapes(world: &mut VoxelWorld) {
    use crate::scene::{DIRT, GRASS, ORE, SAND};
    use voxcast::{BlockShape, ShapeBox};
    let boxes = |b: &[([u8; 3], [u8; 3])]| {
        BlockShape::Boxes(
            b.iter()
                .map(|&(lo, hi)| ShapeBox::new(lo, hi).expect("a valid box"))
                .collect(),
        )
    };
    let shapes = [
        (GRASS, boxes(&[([0, 0, 0], [16, 8, 16])])),
        (DIRT, boxes(&[([5, 0, 5], [11, 10, 11])])),
        (
            SAND,
            boxes(&[([0, 0, 0], [16, 8, 16]), ([0, 8, 8], [16, 16, 16])]),
        ),
        (WATER, BlockShape::Empty),
        (
            ORE,
            boxes(&[
                ([6, 0, 6], [10, 16, 10]),
                ([0, 6, 7], [6, 15, 9]),
                ([10, 6, 7], [16, 15, 9]),
            ]),
        ),
    ];
    for (id, shape) in shapes {
        world.set_shape(id, &shape).expect("a valid shape");
    }
}

/// Every query on worlds with shapes against the CPU, answer by answer: the terrain with
/// [`scene_shapes`] (rays and both kinds of line of sight under every option, a camera image,
/// agent pairs in both modes, a sensor rig), and small worlds of shaped voxels at i128
/// offsets; then the same `GpuWorld` after its shapes change (`GpuWorld::update_chunks`
/// follows them). With `every` false, three option sets instead of every one ([`few_options`]:
/// what the spec-variant battery runs, whose freedoms change arithmetic, not options).
pub fn shape_parity(gpu: &GpuRaycaster, every: bool) {
    let options = if every { every_option() } else { few_options() };
    let check_options = |what: &str, world: &VoxelWorld, gw: &GpuWorld, rays: &[VoxelRay]| {
        let casts = shaped_boxes_of(rays);
        for opts in &options {
            let what = format!("{what} {opts:?}");
            check(gpu, &what, world, gw, rays, opts);
            sight_parity_with(gpu, gw, world, rays, &what, opts);
            // Box casts ignore `per_voxel`: under every option, half the sets would repeat.
            if !every || !opts.per_voxel {
                check_boxes(gpu, &format!("box casts, {what}"), world, gw, &casts, opts);
            }
        }
    };
    let (t, tw) = terrain();
    let mut world = tw.clone();
    scene_shapes(&mut world);
    let mut gw = gpu.upload_world(&world).expect("upload shaped terrain");
    let mut rays = t.reach_rays(3_000, 90);
    rays.extend(adversarial_rays(WorldPos::new(100, 40, 90), 1_000, 91));
    rays.extend(adversarial_rays(WorldPos::new(-40, 120, -40), 300, 92));
    check_options("shaped terrain", &world, &gw, &rays);
    // The shapes must matter on these rays, or the comparison shows little.
    let cubes = raycast_batch(&rays, tw, &RaycastOptions::default());
    let shaped = raycast_batch(&rays, &world, &RaycastOptions::default());
    let differ = cubes.iter().zip(&shaped).filter(|(a, b)| a != b).count();
    assert!(
        differ * 10 > rays.len(),
        "only {differ} of {} rays answer differently with shapes",
        rays.len()
    );
    let casts = shaped_boxes_of(&rays);
    let cubes = box_cast_batch(&casts, tw, &RaycastOptions::default());
    let shaped = box_cast_batch(&casts, &world, &RaycastOptions::default());
    let differ = cubes.iter().zip(&shaped).filter(|(a, b)| a != b).count();
    assert!(
        differ * 20 > casts.len(),
        "only {differ} of {} box casts answer differently with shapes",
        casts.len()
    );

    let opts = RaycastOptions::default();
    let cam = t.camera(160, 90);
    let g = gpu
        .cast(CameraImage(&cam), &gw, &opts)
        .expect("shaped camera");
    let c = raycast_camera(&cam, &world, &opts).expect("cpu camera");
    let bad = g.iter().zip(&c).filter(|(a, b)| !a.matches(b)).count();
    assert_eq!(bad, 0, "shaped camera: {bad} pixels differ");

    let agents = t.agents(200, 93);
    let on_gpu = gpu.upload_agents(&agents, &gw).expect("agents");
    let pairs = voxcast::pairs_within(&agents, 48.0);
    for conservative in [false, true] {
        let sight = LineOfSightOptions {
            conservative,
            ..Default::default()
        };
        let cpu = voxcast::agent_visibility(&agents, &pairs, &world, &sight);
        let got = gpu
            .cast(
                AgentPairs {
                    agents: &on_gpu,
                    pairs: &pairs,
                    outcomes: true,
                },
                &gw,
                &sight,
            )
            .expect("visibility");
        check_visibility(
            &format!("shaped agent pairs, conservative={conservative}"),
            &got,
            &cpu,
            &pairs,
        );
    }

    let rig = SensorRig::lidar(4, 90, 40.0, 60.0).expect("lidar");
    let on_rig = gpu.upload_rig(&rig).expect("rig");
    let poses = terrain_poses(t, 100, 94);
    let g = gpu
        .cast(
            SensorSweep {
                rig: &on_rig,
                poses: &poses,
                outcomes: true,
            },
            &gw,
            &opts,
        )
        .expect("shaped sensors");
    let c = sense(&rig, &poses, &world, &opts, true);
    check_sensors("shaped lidar", &rig, &poses, &g, &c);

    // The shapes change: the same GpuWorld follows them.
    world
        .set_shape(crate::scene::GRASS, &voxcast::BlockShape::Cube)
        .expect("cube");
    world
        .set_shape(
            crate::scene::STONE,
            &voxcast::BlockShape::Boxes(vec![
                voxcast::ShapeBox::new([0, 0, 0], [16, 16, 4]).expect("box"),
            ]),
        )
        .expect("shape");
    gw.update_chunks(&world, &[]).expect("update shapes");
    check(
        gpu,
        "shaped terrain, shapes changed",
        &world,
        &gw,
        &rays,
        &opts,
    );

    // Small worlds of shaped voxels (ids with random boxes on the 1/16 grid) at i128 offsets.
    for (k, min) in [
        WorldPos::new(0, 0, 0),
        WorldPos::new(-(1 << 64), 1 << 64, 5),
        WorldPos::new(1 << 120, -(1 << 120), -(1 << 100)),
        WorldPos::new(i128::MAX - 40, i128::MIN + 20, 0),
    ]
    .into_iter()
    .enumerate()
    {
        let mut w = VoxelWorld::new();
        for (p, id) in common::random_solids(95 + k as u64, min, 24, 0.2, 8) {
            w.set_voxel(p, id);
        }
        let mut rng = SplitMix64::new(96 + k as u64);
        for id in 1..=8u16 {
            w.set_shape(VoxelId(id), &common::random_shape(&mut rng))
                .expect("a valid shape");
        }
        let gw = gpu.upload_world(&w).expect("upload shaped world");
        let center = common::offset(min, [12, 12, 12]);
        let rays = adversarial_rays(center, 3_000, 97 + k as u64);
        check_options(&format!("shaped voxels at {min:?}"), &w, &gw, &rays);
    }
}
