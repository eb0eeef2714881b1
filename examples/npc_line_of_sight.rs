//! NPC perception on the GPU: who can see whom, and what each NPC's eyes run into.
//!
//! N NPCs stand on random dry surface points of the standard terrain, eyes 1.6 voxels above
//! the ground, each facing a random direction. Then, in two GPU batches:
//!
//! 1. line of sight for every pair of NPCs whose eyes are at most 64 voxels apart, all pairs in
//!    one batch (`GpuRaycaster::line_of_sight`);
//! 2. a vision fan per NPC: 32 horizontal rays across 90 degrees around its facing direction,
//!    max distance 32, all fans in one batch (`GpuRaycaster::raycast`).
//!
//! Both batches are checked answer by answer against the CPU reference (`line_of_sight_batch`,
//! `raycast_batch`); any difference is a bug and gives exit status 1. Without a GPU adapter
//! the example says so in one line and runs both batches on the CPU reference.
//!
//! ```text
//! cargo run --release --example npc_line_of_sight
//! cargo run --release --example npc_line_of_sight -- --npcs 5000 --conservative
//! ```

mod common;
use common::secs;

use std::f32::consts::{FRAC_PI_4, TAU};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use voxcast::glam::Vec3;

use voxcast::scene::{DIRT, GRASS, ORE, SAND, STONE, SplitMix64, Terrain, WATER};
use voxcast::{
    LineOfSight, LineOfSightOptions, RaycastOptions, RaycastOutcome, VoxelRay, VoxelRaycastHit,
    WorldPos, line_of_sight_batch, raycast_batch,
};

/// Pairs farther apart than this (eye to eye, in voxels) are not tested.
const SIGHT_RANGE: f32 = 64.0;
/// Rays per vision fan.
const FAN_RAYS: usize = 32;
/// Max distance of a fan ray, in voxels.
const FAN_RANGE: f32 = 32.0;

/// Command line.
#[derive(Debug, Parser)]
#[command(about = "NPC line of sight and vision fans on the voxcast terrain, GPU vs CPU reference")]
struct Args {
    /// Number of NPCs (pairs within sight range grow with its square: 10,000 NPCs make about
    /// 2.5 million segments, some 700 MB of rays and answers).
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u32).range(1..=20_000))]
    npcs: u32,
    /// Seed for NPC positions and facing directions.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Conservative line of sight: a segment through a voxel edge or corner is blocked if any
    /// voxel touching it is solid (no peeking through diagonal cracks).
    #[arg(long)]
    conservative: bool,
    /// Use the CPU reference even when a GPU is available.
    #[arg(long)]
    cpu: bool,
}

/// One NPC: its eye point and the way it faces (radians around +Y, 0 = +X).
#[derive(Clone, Copy, Debug)]
struct Npc {
    eye: WorldPos,
    eye_sub: Vec3,
    facing: f32,
}

impl Npc {
    fn eye_point(&self) -> Vec3 {
        // The terrain spans a few hundred voxels, so the eye fits an f32 exactly enough for
        // choosing pairs; the rays themselves keep the i128 voxel and the offset.
        Vec3::new(self.eye.x as f32, self.eye.y as f32, self.eye.z as f32) + self.eye_sub
    }
}

/// NPCs on random dry ground: the eye is 1.6 above the top face of the column's top voxel.
fn place_npcs(terrain: &Terrain, n: usize, seed: u64) -> Vec<Npc> {
    let mut rng = SplitMix64::new(seed);
    let mut npcs = Vec::with_capacity(n);
    while npcs.len() < n {
        let x = rng.below(u64::from(terrain.size[0])) as i64;
        let z = rng.below(u64::from(terrain.size[2])) as i64;
        let (sx, sz, facing) = (rng.next_f32(), rng.next_f32(), rng.next_f32() * TAU);
        let ground = terrain.height(x, z);
        if ground < terrain.sea_level() {
            continue; // under water
        }
        // The ground voxel's top face is at ground + 1; 1.6 above it is voxel ground + 2, 0.6 in.
        npcs.push(Npc {
            eye: WorldPos::new(x.into(), (ground + 2).into(), z.into()),
            eye_sub: Vec3::new(sx, 0.6, sz),
            facing,
        });
    }
    npcs
}

/// Every pair `(i, j)`, `i < j`, whose eyes are at most [`SIGHT_RANGE`] apart, with its segment.
fn sight_pairs(npcs: &[Npc]) -> (Vec<(u32, u32)>, Vec<VoxelRay>) {
    let eyes: Vec<Vec3> = npcs.iter().map(Npc::eye_point).collect();
    let mut pairs = Vec::new();
    let mut segments = Vec::new();
    for (i, a) in npcs.iter().enumerate() {
        for (j, b) in npcs.iter().enumerate().skip(i + 1) {
            if eyes[i].distance_squared(eyes[j]) > SIGHT_RANGE * SIGHT_RANGE {
                continue;
            }
            // Two NPCs with the same eye point have no segment between them.
            if let Ok(seg) = VoxelRay::between(a.eye, a.eye_sub, b.eye, b.eye_sub) {
                pairs.push((i as u32, j as u32));
                segments.push(seg);
            }
        }
    }
    (pairs, segments)
}

/// [`FAN_RAYS`] horizontal rays per NPC, evenly spread over 90 degrees around its facing.
fn vision_fans(npcs: &[Npc]) -> Vec<VoxelRay> {
    let mut rays = Vec::with_capacity(npcs.len() * FAN_RAYS);
    for npc in npcs {
        for k in 0..FAN_RAYS {
            let spread = (k as f32 / (FAN_RAYS - 1) as f32) * 2.0 - 1.0;
            let angle = npc.facing + spread * FRAC_PI_4;
            let dir = Vec3::new(angle.cos(), 0.0, angle.sin());
            match VoxelRay::new(npc.eye, npc.eye_sub, dir, FAN_RANGE) {
                Ok(ray) => rays.push(ray),
                Err(e) => unreachable!("a unit horizontal direction is valid: {e}"),
            }
        }
    }
    rays
}

fn main() -> ExitCode {
    let args = Args::parse();
    let terrain = Terrain::STANDARD;
    let started = Instant::now();
    let world = terrain.build();
    println!(
        "terrain: {}x{}x{} voxels, {} chunks, built in {}",
        terrain.size[0],
        terrain.size[1],
        terrain.size[2],
        world.chunk_count(),
        secs(started.elapsed())
    );

    let npcs = place_npcs(&terrain, args.npcs as usize, args.seed);
    let (pairs, segments) = sight_pairs(&npcs);
    let fans = vision_fans(&npcs);
    println!(
        "npcs: {} on dry ground (seed {}), eyes 1.6 above it; {} pairs within {SIGHT_RANGE} voxels; \
         {FAN_RAYS}-ray vision fans over 90 degrees, range {FAN_RANGE}",
        npcs.len(),
        args.seed,
        pairs.len()
    );

    let gpu = if args.cpu {
        println!("adapter: none (--cpu): using the CPU reference");
        None
    } else {
        common::gpu_setup(&world, None)
    };
    let threads = rayon::current_num_threads();
    let los_opts = LineOfSightOptions {
        conservative: args.conservative,
        ..LineOfSightOptions::default()
    };
    let ray_opts = RaycastOptions::default();

    // Reference answers, timed.
    let started = Instant::now();
    let cpu_sight = line_of_sight_batch(&segments, &world, &los_opts);
    let cpu_sight_time = started.elapsed();
    let started = Instant::now();
    let cpu_fans = raycast_batch(&fans, &world, &ray_opts);
    let cpu_fans_time = started.elapsed();

    let mut failed = false;
    let (sight, fan_hits) = match &gpu {
        None => {
            println!(
                "line of sight (CPU reference, {threads} threads): {} segments in {} = {}",
                segments.len(),
                secs(cpu_sight_time),
                rate(segments.len(), cpu_sight_time)
            );
            println!(
                "vision fans (CPU reference, {threads} threads): {} rays in {} = {}",
                fans.len(),
                secs(cpu_fans_time),
                rate(fans.len(), cpu_fans_time)
            );
            (cpu_sight, cpu_fans)
        }
        Some((gpu, gw)) => {
            let started = Instant::now();
            let sight = match gpu.line_of_sight(gw, &segments, &los_opts) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("npc_line_of_sight: GPU line of sight failed: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let took = started.elapsed();
            let differ = sight
                .iter()
                .zip(&cpu_sight)
                .filter(|(g, c)| !LineOfSight::matches(g, c))
                .count();
            println!(
                "line of sight (GPU, one batch): {} segments in {} = {} | CPU reference ({threads} \
                 threads): {} = {} | differing answers: {differ}",
                segments.len(),
                secs(took),
                rate(segments.len(), took),
                secs(cpu_sight_time),
                rate(segments.len(), cpu_sight_time),
            );
            failed |= differ > 0;

            let started = Instant::now();
            let fan_hits = match gpu.raycast(gw, &fans, &ray_opts) {
                Ok(f) => f,
                Err(e) => {
                    eprintln!("npc_line_of_sight: GPU vision fans failed: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let took = started.elapsed();
            let differ = fan_hits
                .iter()
                .zip(&cpu_fans)
                .filter(|(g, c)| !RaycastOutcome::matches(g, c))
                .count();
            println!(
                "vision fans (GPU, one batch): {} rays in {} = {} | CPU reference ({threads} \
                 threads): {} = {} | differing answers: {differ}",
                fans.len(),
                secs(took),
                rate(fans.len(), took),
                secs(cpu_fans_time),
                rate(fans.len(), cpu_fans_time),
            );
            failed |= differ > 0;
            (sight, fan_hits)
        }
    };

    // What the NPCs perceive.
    let mut sees = vec![0u32; npcs.len()];
    let (mut visible, mut blocked, mut other) = (0usize, 0usize, 0usize);
    for (&(i, j), answer) in pairs.iter().zip(&sight) {
        match answer {
            LineOfSight::Clear => {
                visible += 1;
                sees[i as usize] += 1;
                sees[j as usize] += 1;
            }
            LineOfSight::Blocked(_) => blocked += 1,
            LineOfSight::Unknown { .. } | LineOfSight::Invalid(_) => other += 1,
        }
    }
    let seeing = sees.iter().filter(|&&s| s > 0).count();
    println!(
        "visible pairs: {visible} of {} ({:.1}%), blocked {blocked}{}; {seeing} of {} NPCs see \
         at least one other, {:.1} on average",
        pairs.len(),
        100.0 * visible as f64 / pairs.len().max(1) as f64,
        if other > 0 {
            format!(", other {other}")
        } else {
            String::new()
        },
        npcs.len(),
        2.0 * visible as f64 / npcs.len() as f64,
    );

    let hits: Vec<&VoxelRaycastHit> = fan_hits.iter().filter_map(RaycastOutcome::hit).collect();
    let mean = hits.iter().map(|h| f64::from(h.distance)).sum::<f64>() / hits.len().max(1) as f64;
    let materials = [
        ("grass", GRASS),
        ("dirt", DIRT),
        ("stone", STONE),
        ("sand", SAND),
        ("water", WATER),
        ("ore", ORE),
    ]
    .iter()
    .map(|(name, id)| {
        let n = hits.iter().filter(|h| h.voxel_type == *id).count();
        format!("{name} {n}")
    })
    .collect::<Vec<_>>()
    .join(", ");
    println!(
        "fan hits: {} of {} rays hit within {FAN_RANGE} voxels (mean distance {mean:.2}): {materials}",
        hits.len(),
        fan_hits.len()
    );

    if failed {
        eprintln!("npc_line_of_sight: the GPU disagrees with the CPU reference: this is a bug");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

fn rate(rays: usize, d: Duration) -> String {
    format!(
        "{:.2} M rays/s",
        rays as f64 / d.as_secs_f64().max(1e-9) / 1e6
    )
}
