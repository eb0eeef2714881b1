//! Helpers shared by the GPU test files: the shared raycaster with the CI switch (with
//! `VOXCAST_REQUIRE_GPU=1` a missing adapter fails every GPU test; without it they skip with a
//! loud message), ray-by-ray parity checks that print the ray and how to rerun it, and the
//! scenes and ray sets they run on.

#![allow(
    dead_code,
    reason = "each test crate uses a different subset of these helpers"
)]

use std::sync::OnceLock;

use crate::common;
use voxcast::gpu::{GpuRaycaster, GpuWorld};
use voxcast::scene::{Sparse, SplitMix64, Terrain};
use voxcast::{
    LineOfSight, LineOfSightOptions, MaterialFilter, RaycastOptions, RaycastOutcome,
    UnloadedPolicy, VoxelId, VoxelRay, VoxelWorld, WorldPos, glam::Vec3, line_of_sight_batch,
    raycast_batch,
};

pub(crate) fn gpu() -> Option<&'static GpuRaycaster> {
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
pub(crate) fn own_gpu() -> Option<GpuRaycaster> {
    gpu()?;
    Some(GpuRaycaster::new_blocking().expect("a second raycaster on the same adapter"))
}

/// Compares outcomes ray by ray: the parity contract. Prints the first mismatches with the ray
/// and how to rerun just that ray.
pub(crate) fn assert_parity(
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
                "  ray #{i}: {:?}\n    gpu: {:?}\n    cpu: {:?}\n    rerun: voxel_raycast_with(&{:?}, ..) vs GpuRaycaster::raycast(.., &[that ray], ..)\n",
                rays[i], gpu[i], cpu[i], rays[i]
            );
        }
        panic!("{msg}");
    }
}

pub(crate) fn check(
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

pub(crate) fn terrain() -> &'static (Terrain, VoxelWorld) {
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

pub(crate) fn sparse() -> &'static (Sparse, VoxelWorld) {
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
pub(crate) fn adversarial_rays(center: WorldPos, n_random: usize, seed: u64) -> Vec<VoxelRay> {
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
pub(crate) fn sight_parity(
    gpu: &GpuRaycaster,
    gw: &GpuWorld,
    world: &VoxelWorld,
    segs: &[VoxelRay],
    what: &str,
) {
    sight_parity_with(gpu, gw, world, segs, what, &RaycastOptions::default());
}

/// [`sight_parity`] with the given raycast options, for plain and conservative line of sight.
pub(crate) fn sight_parity_with(
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
pub(crate) fn assert_sight_parity(
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
pub(crate) fn every_option() -> Vec<RaycastOptions> {
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
pub(crate) fn check_every_option(
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
