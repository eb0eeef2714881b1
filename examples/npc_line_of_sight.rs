//! NPC perception in a game loop: who can see whom, every frame, without waiting for the GPU.
//!
//! N NPCs walk on the standard terrain (eyes 1.6 voxels above the ground, each walking its own
//! way and turning at the terrain's edges). Every frame:
//!
//! 1. the NPCs move, and their eyes go to the GPU (`GpuAgents::update`, 32 bytes an NPC);
//! 2. one agent call asks line of sight for every pair whose eyes are at most 64 voxels apart
//!    (`gpu.submit(PairsWithin { .. })`: pairs found on the host, segments built in the shader,
//!    a bit per pair back) and one sensor call casts each NPC's vision fan (a rig of 16
//!    whiskers over 90 degrees ahead, 32 voxels, uploaded once; a 32-byte pose an NPC up, a
//!    distance a ray back, every ray made in the shader; `gpu.submit(SensorSweep { .. })`); both return at once;
//! 3. the batches submitted the frame before are taken: without waiting if they are ready
//!    (the frame's own work gave the GPU that time), else waited for.
//!
//! Every answer is checked against the CPU reference (`agent_visibility`, `sense`);
//! any difference is a bug and gives exit status 1. Each frame prints its cost on the game's
//! thread: submitting, taking, and whether the answers were ready. Without a GPU the example
//! says so in one line and answers on the CPU reference.
//!
//! ```text
//! cargo run --release --example npc_line_of_sight
//! cargo run --release --example npc_line_of_sight -- --npcs 5000 --frames 10 --conservative
//! ```

use common::secs;
use voxcast_testkit::demo as common;

use std::f32::consts::{FRAC_PI_2, TAU};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use voxcast::glam::Vec3;
use voxcast::gpu::{GpuConfig, GpuRaycaster, GpuWorld, PairsWithin, PendingBatch, SensorSweep};
use voxcast::{
    Agent, LineOfSight, LineOfSightOptions, RaycastOptions, SensorPose, SensorReadings, SensorRig,
    VoxelWorld, WorldPos, agent_visibility, pairs_within, sense,
};
use voxcast_testkit::scene::{SplitMix64, Terrain};

/// Pairs farther apart than this (eye to eye, in voxels) are not asked.
const SIGHT_RANGE: f64 = 64.0;
/// Rays per vision fan, spread across 90 degrees ahead.
const FAN_RAYS: usize = 16;
/// Max distance of a fan ray, in voxels.
const FAN_RANGE: f32 = 32.0;
/// How far an NPC walks per frame, in voxels.
const STEP: f32 = 0.25;

/// Command line.
#[derive(Debug, Parser)]
#[command(
    about = "NPC perception every frame on the voxcast terrain, GPU against the CPU reference"
)]
struct Args {
    /// Number of NPCs (the pairs within sight range grow with its square: 2,000 NPCs make
    /// about 100,000 pairs on the standard terrain).
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u32).range(1..=20_000))]
    npcs: u32,
    /// Frames to simulate.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    frames: u32,
    /// Seed for the NPCs' places and ways.
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

/// The NPCs: where they stand and which way they walk (radians around +Y, 0 = +X).
struct Crowd {
    terrain: Terrain,
    agents: Vec<Agent>,
    heading: Vec<f32>,
}

impl Crowd {
    fn new(terrain: Terrain, n: usize, seed: u64) -> Self {
        let agents = terrain.agents(n, seed);
        let mut rng = SplitMix64::new(seed ^ 0xFACE);
        let heading = (0..n).map(|_| rng.next_f32() * TAU).collect();
        Self {
            terrain,
            agents,
            heading,
        }
    }

    /// Every NPC walks a step its way, standing on the ground (or water) of the column it walks
    /// into, and turns around at the terrain's edge.
    fn walk(&mut self) {
        let [sx, _, sz] = self.terrain.size.map(|s| s as f32);
        for (a, h) in self.agents.iter_mut().zip(&mut self.heading) {
            let x = a.position.x as f32 + a.offset.x + STEP * h.cos();
            let z = a.position.z as f32 + a.offset.z + STEP * h.sin();
            if !(0.5..sx - 0.5).contains(&x) || !(0.5..sz - 0.5).contains(&z) {
                *h += std::f32::consts::PI;
                continue;
            }
            let (cx, cz) = (x.floor() as i64, z.floor() as i64);
            let feet = self.terrain.height(cx, cz).max(self.terrain.sea_level()) + 1;
            a.position = WorldPos::new(cx.into(), feet.into(), cz.into());
            a.offset = Vec3::new(x - cx as f32, 0.0, z - cz as f32);
        }
    }

    /// Each NPC's sensor pose: at its eye, facing its heading. The rig's forward is `-Z`
    /// and a yaw turns it left about `+Y`, so heading `h` (direction `(cos h, 0, sin h)`) is
    /// yaw `-(h + π/2)`.
    fn poses(&self) -> Vec<SensorPose> {
        self.agents
            .iter()
            .zip(&self.heading)
            .map(|(a, h)| {
                let (eye, sub) = a.eye().unwrap_or((a.position, a.offset));
                SensorPose::from_yaw_pitch(eye, sub, -(h + FRAC_PI_2), 0.0)
            })
            .collect()
    }
}

/// The vision fan: FAN_RAYS horizontal whiskers across 90 degrees around forward.
fn fan_rig() -> SensorRig {
    SensorRig::whiskers(FAN_RAYS, 90.0, FAN_RANGE).expect("a valid rig")
}

/// Fan rays that hit something.
fn fan_hits(r: &SensorReadings) -> usize {
    // A word `d >= 0` is a hit (`-d` is unloaded space, infinity a miss, NaN a bad pose).
    r.distances()
        .iter()
        .filter(|d| d.is_finite() && d.is_sign_positive())
        .count()
}

/// One frame's questions, kept until the answers are checked.
struct Asked {
    frame: u32,
    agents: Vec<Agent>,
    poses: Vec<SensorPose>,
}

/// One frame's batches in flight.
struct InFlight {
    asked: Asked,
    pairs: PendingBatch<Vec<[u32; 2]>>,
    fans: PendingBatch<SensorReadings>,
}

/// The CPU reference's answers to `asked`: the visible pairs within sight range, and the fans.
fn reference(
    world: &VoxelWorld,
    rig: &SensorRig,
    asked: &Asked,
    opts: &LineOfSightOptions,
) -> (Vec<[u32; 2]>, SensorReadings) {
    let near = pairs_within(&asked.agents, SIGHT_RANGE);
    let sight = agent_visibility(&asked.agents, &near, world, opts);
    let visible = near
        .into_iter()
        .zip(sight)
        .filter(|(_, s)| *s == LineOfSight::Clear)
        .map(|(p, _)| p)
        .collect();
    (
        visible,
        sense(rig, &asked.poses, world, &RaycastOptions::default(), false),
    )
}

fn main() -> ExitCode {
    let args = Args::parse();
    let terrain = Terrain::STANDARD;
    let world = terrain.build();
    let mut crowd = Crowd::new(terrain, args.npcs as usize, args.seed);
    let opts = LineOfSightOptions {
        conservative: args.conservative,
        ..Default::default()
    };
    println!(
        "{} NPCs on the {}x{}x{} terrain; every frame: line of sight for every pair within \
         {SIGHT_RANGE} voxels{}, and {FAN_RAYS}-ray vision fans of {FAN_RANGE} voxels",
        args.npcs,
        terrain.size[0],
        terrain.size[1],
        terrain.size[2],
        if args.conservative {
            " (conservative)"
        } else {
            ""
        }
    );
    let gpu = if args.cpu {
        println!("adapter: none (--cpu): answering with the CPU reference");
        None
    } else {
        gpu_setup(&world)
    };
    let failed = match &gpu {
        Some((gpu, gw)) => run_on_gpu(gpu, gw, &world, &mut crowd, &args, &opts),
        None => run_on_cpu(&world, &mut crowd, &args, &opts),
    };
    if failed {
        eprintln!("npc_line_of_sight: answers differ from the CPU reference: this is a bug");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// The frame loop on the GPU: submit this frame's batches, take last frame's.
fn run_on_gpu(
    gpu: &GpuRaycaster,
    gw: &GpuWorld,
    world: &VoxelWorld,
    crowd: &mut Crowd,
    args: &Args,
    opts: &LineOfSightOptions,
) -> bool {
    let rig = fan_rig();
    let gpu_rig = match gpu.upload_rig(&rig) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("npc_line_of_sight: cannot upload the vision rig: {e}");
            return true;
        }
    };
    let mut agents = match gpu.upload_agents(&crowd.agents, gw) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("npc_line_of_sight: cannot upload the NPCs: {e}");
            return true;
        }
    };
    let mut last: Option<InFlight> = None;
    let (mut submit_total, mut take_total, mut ready_count) = (Duration::ZERO, Duration::ZERO, 0);
    let mut failed = false;
    for frame in 0..=args.frames {
        // The last frame only takes what the one before it submitted.
        let submitted = if frame < args.frames {
            crowd.walk();
            let t = Instant::now();
            let asked = Asked {
                frame,
                agents: crowd.agents.clone(),
                poses: crowd.poses(),
            };
            let batches = agents
                .update(&asked.agents, gw)
                .and_then(|()| {
                    gpu.submit(
                        PairsWithin {
                            agents: &agents,
                            radius: SIGHT_RANGE,
                        },
                        gw,
                        opts,
                    )
                })
                .and_then(|pairs| {
                    let fans = gpu.submit(
                        SensorSweep {
                            rig: &gpu_rig,
                            poses: &asked.poses,
                            outcomes: false,
                        },
                        gw,
                        &RaycastOptions::default(),
                    )?;
                    Ok((pairs, fans))
                });
            let took = t.elapsed();
            submit_total += took;
            match batches {
                Ok((pairs, fans)) => Some((InFlight { asked, pairs, fans }, took)),
                Err(e) => {
                    eprintln!("npc_line_of_sight: frame {frame}: GPU error: {e}");
                    return true;
                }
            }
        } else {
            None
        };
        if let Some(mut done) = last.take() {
            let t = Instant::now();
            let ready = done.pairs.is_ready() && done.fans.is_ready();
            let answers = done
                .pairs
                .wait()
                .and_then(|pairs| Ok((pairs, done.fans.wait()?)));
            let took = t.elapsed();
            take_total += took;
            ready_count += usize::from(ready);
            let (visible, fans) = match answers {
                Ok(a) => a,
                Err(e) => {
                    eprintln!(
                        "npc_line_of_sight: frame {}: GPU error: {e}",
                        done.asked.frame
                    );
                    return true;
                }
            };
            let (want_visible, want_fans) = reference(world, &rig, &done.asked, opts);
            let fan_differ = fans
                .distances()
                .iter()
                .zip(want_fans.distances())
                .filter(|(a, b)| a.to_bits() != b.to_bits())
                .count();
            let ok = visible == want_visible && fan_differ == 0;
            failed |= !ok;
            let submit = submitted
                .as_ref()
                .map_or(String::from("-"), |(_, d)| secs(*d));
            println!(
                "frame {:>3}: {} visible pairs, {} fan hits; submitted in {submit}, frame {} \
                 taken in {} ({}); {}",
                frame,
                visible.len(),
                fan_hits(&fans),
                done.asked.frame,
                secs(took),
                if ready { "ready" } else { "waited for" },
                if ok {
                    "equal to the CPU".into()
                } else {
                    format!(
                        "DIFFERENT: {} visible pairs on the CPU, {fan_differ} fan rays differ",
                        want_visible.len()
                    )
                }
            );
        }
        last = submitted.map(|(f, _)| f);
    }
    let frames = args.frames.max(1);
    println!(
        "per frame on the game's thread: submit {}, take {}; answers ready when taken in {ready_count} of {frames} frames",
        secs(submit_total / frames),
        secs(take_total / frames)
    );
    failed
}

/// The same frames on the CPU reference (all threads), for a machine without a GPU.
fn run_on_cpu(
    world: &VoxelWorld,
    crowd: &mut Crowd,
    args: &Args,
    opts: &LineOfSightOptions,
) -> bool {
    let rig = fan_rig();
    let mut total = Duration::ZERO;
    for frame in 0..args.frames {
        crowd.walk();
        let asked = Asked {
            frame,
            agents: crowd.agents.clone(),
            poses: crowd.poses(),
        };
        let t = Instant::now();
        let (visible, fans) = reference(world, &rig, &asked, opts);
        let took = t.elapsed();
        total += took;
        println!(
            "frame {frame:>3}: {} visible pairs, {} fan hits, answered in {}",
            visible.len(),
            fan_hits(&fans),
            secs(took)
        );
    }
    println!("per frame: {}", secs(total / args.frames.max(1)));
    false
}

/// The GPU and the world on it, or `None` after saying why (the CPU reference answers then).
fn gpu_setup(world: &VoxelWorld) -> Option<(GpuRaycaster, GpuWorld)> {
    // One raycaster for the program: it picks the adapter (`WGPU_BACKEND`,
    // `WGPU_ADAPTER_NAME`) and checks it against the CPU reference before it is returned.
    let gpu = GpuRaycaster::new_blocking(GpuConfig::default())
        .inspect_err(common::no_gpu)
        .ok()?;
    println!("adapter: {}", gpu.adapter_summary());
    // The world's chunks, uploaded once; later edits go up as lists of changed chunks.
    let gpu_world = gpu.upload_world(world).inspect_err(common::no_gpu).ok()?;
    Some((gpu, gpu_world))
}
