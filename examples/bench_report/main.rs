//! Benchmark report: runs the standard workloads W1-W7 and W9 on every engine in one process and
//! prints rays/s, voxel steps/s, the ratio to voxcast's one-thread CPU reference and how often
//! each engine agrees with it on the voxel hit.
//!
//! ```text
//! cargo run --release --example bench_report                 # full: 1M rays, 1920x1080 camera
//! cargo run --release --example bench_report -- --quick      # about 7 s on 2 cores
//! cargo run --release --example bench_report -- --workload w1,w3 --rays 200000 --json
//! cargo run --release --example bench_report -- --crossover  # GPU against CPU by batch size
//! cargo run --release --example bench_report -- --streaming  # GPU memory, a moving window
//! ```
//!
//! Engines: voxcast CPU one thread (`voxel_raycast_with` / `line_of_sight` in a loop), for W3
//! also `raycast_camera` on one thread, voxcast CPU batch (`raycast_batch` /
//! `line_of_sight_batch`, rayon), for W6 also `sense` (the rays made from each pose, rayon),
//! voxcast GPU (when available; for W5 and W6 also the agent and sensor calls),
//! parry3d's `Voxels` shape and the `voxel-traversal` crate (both one thread). See
//! `voxcast-testkit/src/peers.rs` for the adapters and `BENCHMARKS.md` for results.
//!
//! Definitions:
//! - One-thread engines run on an evenly spread sample of the rays: every k-th ray, or for the
//!   camera (W3) every k-th 8×8 tile of pixels, whole, since a camera's rays are cast image by
//!   image and neighbours share cache lines. Their rays/s is measured on that sample, which is
//!   said in the output. Batch engines, and `raycast_camera` on one thread (W3), run on all
//!   rays.
//! - Voxel steps per ray: voxels visited by voxcast's `VoxelTraversal` (the reference walk)
//!   from the ray's start up to and including the voxel hit, or for a miss up to max distance
//!   or until the ray leaves the loaded box. Measured once per workload on the sample and used
//!   for every engine: steps/s = rays/s × mean steps per ray. It is a property of the rays, not
//!   of how an engine skips empty space.
//! - Agreement: the share of sampled rays whose answer (voxel hit, or miss) equals voxcast's
//!   one-thread answer.
//! - Timing: one untimed warm-up run on a tenth of the rays, then `--repeats` timed runs; the
//!   best is reported. World building (and parry's `Voxels` build, the occupancy grid, the GPU
//!   upload) is timed separately and not part of rays/s.

mod boxes;
mod output;
mod streaming;

use voxcast_testkit::peers;

use std::time::{Duration, Instant};

use clap::Parser;
use rayon::prelude::*;
use serde::Serialize;
use voxcast::{VoxelRay, VoxelTraversal, WorldPos};

use output::{print_json, print_table};
use peers::gpu::{GpuEngine, GpuScene};
use peers::{Answer, Bounds, OccupancyGrid, ParryScene, Workload, WorkloadId};

/// Command line.
#[derive(Debug, Parser)]
#[command(
    about = "voxcast benchmark report: the standard workloads on every engine.\n\
        Workloads: W1 reach (8-voxel rays), W2 line of sight (segments up to 64), W3 camera \
        (a ray per pixel, max 1024), W4 sparse world (rays of 512), W5 agents (pairs within \
        64), W6 sensors (a 64-ray cone per agent), W7 a real Minecraft region (reach, sight, \
        camera), W9 the same region with its blocks' shapes; --help says more.",
    long_about = "voxcast benchmark report: the standard workloads on every engine, in one process.\n\n\
        W1 reach: rays of 8 voxels from eye height on the standard terrain (block targeting).\n\
        W2 line of sight: segments up to 64 voxels between eye points on the terrain.\n\
        W3 camera: one ray per pixel of a 16:9 camera over the terrain, max distance 1024.\n\
        W4 sparse: rays of 512 voxels through a 256^3 cube with 0.5% solid voxels.\n\
        W5 agents: 2,000 agents on the terrain, line of sight for every pair within 64 voxels.\n\
        W6 sensors: 2,000 agents on the terrain, each a 64-ray vision cone of 32 voxels.\n\
        W7 (w7, w7s, w7c, w7l): fastanvil's 1.19.4 Minecraft region: reach rays of 5 voxels from \
        eye height, sight segments up to 64 voxels between points above the ground, a camera, a \
        64-channel LiDAR of 120 voxels from robots above the ground (rays as a plain batch).\n\
        W9 (w9, w9s, w9c): W7's rays on the same region with its blocks' shapes (slabs, stairs, \
        fences, plants...; voxcast_import::shapes); the peers answer it as cubes, for reference."
)]
struct Args {
    /// Print JSON instead of a table (progress still goes to stderr).
    #[arg(long)]
    json: bool,
    /// Where the GPU calls' uploaded rays are set up: auto (the device's default), host
    /// (set up and sorted on the host) or shader (uploaded as given, in the caller's order).
    #[arg(long, default_value = "auto", value_parser = ["auto", "host", "shader"])]
    ray_setup: String,
    /// Reduced run: 1/20 of the rays, a 480x270 camera, smaller samples (about 7 s on 2 cores).
    #[arg(long)]
    quick: bool,
    /// Rays per workload for W1, W2 and W4; for W3 a 16:9 camera with about this many pixels
    /// (1 to 4,000,000).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=4_000_000))]
    rays: Option<u64>,
    /// Comma-separated workloads to run (w1,w2,w3,w4,w5,w6,w7,w7s,w7c,w7l,w9,w9s,w9c; see --help for what
    /// each is).
    #[arg(long, value_delimiter = ',')]
    workload: Vec<String>,
    /// Timed runs per engine (the best is reported; 1 to 100); default 5, 3 with --quick.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100))]
    repeats: Option<u64>,
    /// Sample size for the one-thread engines (voxcast CPU 1T and voxel-traversal; 1 to
    /// 4,000,000); parry gets a fifth of it. Default 100000, 20000 with --quick.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=4_000_000))]
    sample: Option<u64>,
    /// Print up to this many disagreeing rays per engine and workload to stderr.
    #[arg(long, default_value_t = 0)]
    show_disagreements: usize,
    /// Instead of the workloads: time one GPU call against the CPU batch on the first 64,
    /// 1,024, 16,384 and 262,144 W2 segments, to see from which batch size the GPU pays off.
    #[arg(long)]
    crossover: bool,
    /// Instead of the workloads: GPU memory per stored chunk of the standard worlds, and a
    /// window that follows a player through about 100,000 loaded chunks (bytes and time per
    /// one-chunk move, and of a jump that fills the window anew).
    #[arg(long)]
    streaming: bool,
    /// Instead of the workloads: W8 alone, box casts of player-sized boxes on the terrain
    /// (voxcast's box casts against parry3d's `cast_shapes`). A full run without --workload
    /// ends with it.
    #[arg(long)]
    boxes: bool,
}

/// Run sizes after flags.
#[derive(Debug, Serialize)]
struct Config {
    rays: usize,
    camera: (u32, u32),
    repeats: usize,
    sample: usize,
    parry_sample: usize,
    #[serde(skip)]
    show: usize,
    mode: &'static str,
}

impl Config {
    fn from_args(a: &Args) -> Self {
        let (rays, camera, repeats, sample) = if a.quick {
            (50_000, (480, 270), 3, 20_000)
        } else {
            (1_000_000, (1920, 1080), 5, 100_000)
        };
        // The flags' ranges (clap) keep these small: at most 4,000,000 rays, so the camera is
        // at most 2667x1500.
        let rays = a.rays.map_or(rays, |n| n as usize);
        let camera = match a.rays {
            Some(n) => {
                let w = ((n as f64 * 16.0 / 9.0).sqrt().round() as u32).max(16);
                (w, (w * 9 / 16).max(9))
            }
            None => camera,
        };
        let sample = a.sample.map_or(sample, |n| n as usize);
        Self {
            rays,
            camera,
            repeats: a.repeats.map_or(repeats, |n| n as usize),
            sample,
            parry_sample: (sample / 5).max(1),
            show: a.show_disagreements,
            mode: if a.quick { "quick" } else { "full" },
        }
    }
}

/// One engine's result on one workload.
#[derive(Debug)]
struct Row {
    engine: String,
    /// Rays per timed run.
    rays_timed: usize,
    /// `None` when the engine did not run (the note says why).
    rays_per_s: Option<f64>,
    steps_per_s: Option<f64>,
    ratio: Option<f64>,
    /// Share of sampled rays agreeing with voxcast CPU 1T, and how many were compared.
    agreement: Option<(f64, usize)>,
    note: String,
    /// For a GPU call: what the best run cost.
    gpu_call: Option<GpuCall>,
}

/// What a GPU call cost, for the GPU-calls table: per query the host's time (staging and
/// decoding, not waiting), the bytes each way, and the kernel alone.
#[derive(Clone, Copy, Debug, Serialize)]
struct GpuCall {
    queries: usize,
    total_s: f64,
    kernel_s: Option<f64>,
    host_s: f64,
    bytes_up: u64,
    bytes_down: u64,
}

impl GpuCall {
    /// From a batch's statistics, with `extra_host_s` of host work outside the call (building
    /// segments, uploading agents) and `extra_up` bytes it uploaded. The time is the call's
    /// own (`BatchStats::total_seconds`) plus that work: not the report's conversion of the
    /// answers for its comparisons.
    fn of(queries: usize, s: voxcast::gpu::BatchStats, extra_host_s: f64, extra_up: u64) -> Self {
        Self {
            queries,
            total_s: s.total_seconds + extra_host_s,
            kernel_s: s.kernel_seconds,
            host_s: s.host_seconds + extra_host_s,
            bytes_up: s.bytes_up + extra_up,
            bytes_down: s.bytes_down,
        }
    }
}

impl Row {
    /// A row for an engine that did not run; `note` says why.
    fn not_run(engine: &str, note: String) -> Self {
        Self {
            engine: engine.into(),
            rays_timed: 0,
            rays_per_s: None,
            steps_per_s: None,
            ratio: None,
            agreement: None,
            note,
            gpu_call: None,
        }
    }
}

/// One workload's results.
#[derive(Debug)]
struct WorkloadReport {
    id: WorkloadId,
    rays: usize,
    mean_steps: f64,
    hit_rate: f64,
    prep: Vec<(String, f64)>,
    rows: Vec<Row>,
}

/// Runs `f` once untimed on `warm` and then `repeats` times on `all`; returns the last answers
/// and the best time.
fn time_best<'a>(
    repeats: usize,
    warm: &'a [VoxelRay],
    all: &'a [VoxelRay],
    mut f: impl FnMut(&'a [VoxelRay]) -> Vec<Answer>,
) -> (Vec<Answer>, Duration) {
    std::hint::black_box(f(warm));
    let mut best = Duration::MAX;
    let mut answers = Vec::new();
    for _ in 0..repeats {
        let t = Instant::now();
        answers = std::hint::black_box(f(all));
        best = best.min(t.elapsed());
    }
    (answers, best)
}

/// The rays the one-thread engines time: `idx` indexes the workload's rays, in groups that are
/// timed whole (single rays, or a camera's tiles of pixels).
struct Sample {
    idx: Vec<usize>,
    rays: Vec<VoxelRay>,
    /// Ranges of positions in `idx`.
    groups: Vec<std::ops::Range<usize>>,
    /// How the sample was taken, for the output.
    how: String,
}

/// Edge of the camera tiles sampled, in pixels (that of `raycast_camera`'s tiles).
const TILE: u32 = 8;

impl Sample {
    /// About `n` of `w`'s rays: every k-th ray, or for a camera every k-th tile of pixels.
    fn of(w: &Workload, n: usize) -> Self {
        let groups: Vec<Vec<usize>> = match &w.camera {
            Some(cam) => {
                let (width, height) = (cam.width, cam.height);
                let tiles_x = width.div_ceil(TILE);
                (0..tiles_x * height.div_ceil(TILE))
                    .map(|t| {
                        let (x0, y0) = (t % tiles_x * TILE, t / tiles_x * TILE);
                        (y0..(y0 + TILE).min(height))
                            .flat_map(|y| {
                                (x0..(x0 + TILE).min(width)).map(move |x| (y * width + x) as usize)
                            })
                            .collect()
                    })
                    .collect()
            }
            None => (0..w.rays.len()).map(|i| vec![i]).collect(),
        };
        let per_group = w.rays.len() as f64 / groups.len().max(1) as f64;
        let mut sample = Self::every_kth(&groups, n, per_group, &w.rays);
        sample.describe(w.rays.len(), w.camera.is_some());
        sample
    }

    /// Every k-th of `groups` (indices into `rays`), k chosen to give about `n` rays; `how`
    /// left for the caller.
    fn every_kth(groups: &[Vec<usize>], n: usize, per_group: f64, rays: &[VoxelRay]) -> Self {
        let stride = ((groups.len() as f64 * per_group / n.max(1) as f64).ceil() as usize).max(1);
        let mut sample = Self {
            idx: Vec::new(),
            rays: Vec::new(),
            groups: Vec::new(),
            how: String::new(),
        };
        for g in groups.iter().step_by(stride) {
            let from = sample.idx.len();
            sample.idx.extend(g);
            sample.rays.extend(g.iter().map(|&i| rays[i]));
            sample.groups.push(from..sample.idx.len());
        }
        sample
    }

    /// Says in `how` what this sample is, taken from `total` rays, in tiles or not.
    fn describe(&mut self, total: usize, tiles: bool) {
        let k = self.idx.len();
        let one_in = (total as f64 / k.max(1) as f64).round();
        self.how = if k == total {
            format!("all {k} rays, 1 thread")
        } else if tiles {
            format!("sample: {k} rays (whole {TILE}x{TILE} tiles, 1 ray in {one_in}), 1 thread")
        } else {
            format!("sample: {k} rays (stride {one_in}), 1 thread")
        };
    }

    /// About `n` rays of this sample, whole groups: positions in this sample, and the sample
    /// (its indices into `whole`, the workload's rays).
    fn sub(&self, n: usize, whole: &[VoxelRay], tiles: bool) -> (Vec<usize>, Self) {
        let groups: Vec<Vec<usize>> = self.groups.iter().map(|g| g.clone().collect()).collect();
        let per_group = self.idx.len() as f64 / groups.len().max(1) as f64;
        let mut sub = Self::every_kth(&groups, n, per_group, &self.rays);
        let positions = std::mem::take(&mut sub.idx);
        sub.idx = positions.iter().map(|&p| self.idx[p]).collect();
        sub.describe(whole.len(), tiles);
        (positions, sub)
    }

    /// `answers` to all the workload's rays, taken at this sample's rays.
    fn pick(&self, answers: &[Answer]) -> Vec<Answer> {
        self.idx.iter().map(|&i| answers[i]).collect()
    }
}

fn i32_voxel(p: WorldPos) -> [i32; 3] {
    let c = |v: i128| i32::try_from(v).unwrap_or(i32::MAX);
    [c(p.x), c(p.y), c(p.z)]
}

/// Voxels visited by the reference walk up to the answer (see the module docs).
fn reference_steps(ray: &VoxelRay, answer: Answer, bounds: &Bounds) -> u64 {
    let step = [ray.direction.x, ray.direction.y, ray.direction.z].map(|c| {
        if c > 0.0 {
            1
        } else if c < 0.0 {
            -1
        } else {
            0
        }
    });
    let mut n = 0;
    for s in VoxelTraversal::new(ray) {
        let v = i32_voxel(s.voxel);
        if bounds.left_for_good(v, step) {
            break;
        }
        n += 1;
        if answer == Some(v) {
            break;
        }
    }
    n
}

/// Share of `answers` (to the same rays) equal to `reference`.
/// Prints the first `show` disagreements (ray, voxcast's answer, the engine's) to stderr.
fn agreement(
    reference: &[Answer],
    answers: &[Answer],
    rays: &[VoxelRay],
    engine: &str,
    show: usize,
) -> (f64, usize) {
    let mut same = 0;
    let mut shown = 0;
    for ((want, got), ray) in reference.iter().zip(answers).zip(rays) {
        if want == got {
            same += 1;
        } else if shown < show {
            shown += 1;
            eprintln!(
                "[bench_report] {engine} disagrees: voxcast {want:?}, {engine} {got:?}, ray {ray:?}"
            );
        }
    }
    (same as f64 / reference.len().max(1) as f64, reference.len())
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn progress(msg: &str) {
    eprintln!("[bench_report] {msg}");
}

fn run_workload(id: WorkloadId, cfg: &Config, gpu: Option<&GpuEngine>) -> WorkloadReport {
    let t = Instant::now();
    let w = Workload::new(id, cfg.rays, cfg.camera);
    let build_s = secs(t.elapsed());
    let n = w.rays.len();
    progress(&format!(
        "{}: world and {n} rays built in {build_s:.2} s",
        id.label()
    ));
    let mut prep = vec![("world + rays".to_owned(), build_s)];

    let sampled = Sample::of(&w, cfg.sample);
    let sample = &sampled.rays;
    let (parry_at, parry_sample) = sampled.sub(cfg.parry_sample, &w.rays, w.camera.is_some());
    let warm = |s: &[VoxelRay]| s.len().div_ceil(10);

    // a. voxcast CPU, one thread: the reference answers for the agreement column.
    let (reference, d) = time_best(cfg.repeats, &sample[..warm(sample)], sample, |r| {
        peers::voxcast_one_thread(&w, r)
    });
    let base = sample.len() as f64 / secs(d);
    progress(&format!(
        "{}: voxcast cpu 1T {:.0} rays/s",
        id.label(),
        base
    ));

    let bounds = Bounds::of(&w.world);
    let steps: Vec<u64> = sample
        .par_iter()
        .zip(reference.par_iter())
        .map(|(r, a)| reference_steps(r, *a, &bounds))
        .collect();
    let mean_steps = steps.iter().sum::<u64>() as f64 / steps.len().max(1) as f64;
    let hit_rate =
        reference.iter().filter(|a| a.is_some()).count() as f64 / reference.len().max(1) as f64;

    let row =
        |engine: String, rays_timed: usize, d: Duration, agreement: (f64, usize), note: String| {
            let rps = rays_timed as f64 / secs(d);
            Row {
                engine,
                rays_timed,
                rays_per_s: Some(rps),
                steps_per_s: Some(rps * mean_steps),
                ratio: Some(rps / base),
                agreement: Some(agreement),
                note,
                gpu_call: None,
            }
        };
    let mut rows = vec![row(
        "voxcast cpu 1T".into(),
        sample.len(),
        d,
        (1.0, reference.len()),
        sampled.how.clone(),
    )];

    // b. voxcast CPU batch on all threads, all rays.
    let (answers, d) = time_best(cfg.repeats, &w.rays[..warm(&w.rays)], &w.rays, |r| {
        peers::voxcast_batch(&w, r)
    });
    let threads = rayon::current_num_threads();
    rows.push(row(
        format!("voxcast cpu batch ({threads} thr)"),
        n,
        d,
        agreement(
            &reference,
            &sampled.pick(&answers),
            sample,
            "cpu batch",
            cfg.show,
        ),
        format!("all {n} rays, rayon"),
    ));
    progress(&format!(
        "{}: voxcast cpu batch {:.0} rays/s",
        id.label(),
        n as f64 / secs(d)
    ));
    drop(answers);

    // b″. W6: voxcast's `sense`, the rays made from each pose, all threads.
    if w.id == WorkloadId::W6 {
        let rig = peers::w6_rig();
        let opts = voxcast::RaycastOptions::default();
        let sense = || voxcast::sense(&rig, &w.poses, &w.world, &opts, false);
        std::hint::black_box(sense());
        let (mut readings, mut d) = (Default::default(), Duration::MAX);
        for _ in 0..cfg.repeats {
            let t = Instant::now();
            readings = std::hint::black_box(sense());
            d = d.min(t.elapsed());
        }
        let readings: voxcast::SensorReadings = readings;
        let words = readings.distances();
        let judge = Judge {
            reference: &reference,
            sampled: &sampled,
            base,
            mean_steps,
        };
        let mut r = judge.row(
            &format!("voxcast cpu sense ({threads} thr)"),
            n,
            d,
            |i| !words[i].is_finite(),
            format!("all {n} rays made from {} poses, rayon", w.poses.len()),
            GpuCall::of(0, voxcast::gpu::BatchStats::default(), 0.0, 0),
        );
        r.gpu_call = None;
        rows.push(r);
        progress(&format!(
            "{}: voxcast cpu sense {:.0} rays/s",
            id.label(),
            n as f64 / secs(d)
        ));
    }

    // b′. W3: voxcast's `raycast_camera` on one thread, the whole image.
    if let Some(cam) = &w.camera {
        let (answers, d) = time_best(cfg.repeats, &[], &[], |_| {
            peers::voxcast_camera_one_thread(&w, cam)
        });
        rows.push(row(
            "voxcast cpu camera 1T".into(),
            n,
            d,
            agreement(
                &reference,
                &sampled.pick(&answers),
                sample,
                "cpu camera",
                cfg.show,
            ),
            format!("all {n} rays, raycast_camera, 1 thread"),
        ));
        progress(&format!(
            "{}: voxcast cpu camera 1T {:.0} rays/s",
            id.label(),
            n as f64 / secs(d)
        ));
    }

    // c. voxcast GPU, all rays, end to end (ray upload, dispatch, readback); world upload apart.
    match gpu {
        None => rows.push(Row::not_run("voxcast gpu", "no adapter".into())),
        Some(g) => {
            let t = Instant::now();
            let uploaded = g.upload(&w);
            prep.push(("gpu world upload".into(), secs(t.elapsed())));
            let result = uploaded.and_then(|scene| {
                g.run(&scene, &w, &w.rays[..warm(&w.rays)])?;
                let mut best = Duration::MAX;
                let mut answers = Vec::new();
                let mut stats = None;
                for _ in 0..cfg.repeats {
                    let t = Instant::now();
                    answers = g.run(&scene, &w, &w.rays)?;
                    let took = t.elapsed();
                    if took < best {
                        best = took;
                        stats = Some(g.last_stats());
                    }
                }
                let judge = Judge {
                    reference: &reference,
                    sampled: &sampled,
                    base,
                    mean_steps,
                };
                let extra = match w.id {
                    WorkloadId::W5 => gpu_agent_rows(g, &scene, &w, cfg, &judge)?,
                    WorkloadId::W6 => gpu_sensor_rows(g, &scene, &w, cfg, &judge)?,
                    WorkloadId::W1 | WorkloadId::W2 | WorkloadId::W4 => {
                        vec![gpu_window_row(g, &scene, &w, cfg, &judge)?]
                    }
                    _ => Vec::new(),
                };
                Ok((answers, best, stats, extra))
            });
            match result {
                Ok((answers, d, stats, extra)) => {
                    let kernel = stats
                        .and_then(|s| s.kernel_seconds)
                        .map_or(String::new(), |k| {
                            format!(
                                "; kernel alone {:.2} M rays/s",
                                n as f64 / k.max(1e-12) / 1e6
                            )
                        });
                    let how = if w.camera.is_some() {
                        "rays made in the shader"
                    } else {
                        "rays uploaded"
                    };
                    let mut r = row(
                        "voxcast gpu".into(),
                        n,
                        d,
                        agreement(&reference, &sampled.pick(&answers), sample, "gpu", cfg.show),
                        format!("all {n} rays, {how}, incl. readback{kernel}"),
                    );
                    r.gpu_call = stats.map(|s| GpuCall::of(n, s, 0.0, 0));
                    rows.push(r);
                    rows.extend(extra);
                }
                Err(e) => rows.push(Row::not_run("voxcast gpu", format!("failed: {e}"))),
            }
        }
    }

    // d. parry3d Voxels.
    let t = Instant::now();
    let parry = ParryScene::new(&w.world);
    let parry_build = secs(t.elapsed());
    prep.push((
        format!("parry Voxels::new ({} voxels)", parry.solid_count),
        parry_build,
    ));
    progress(&format!(
        "{}: parry Voxels built in {parry_build:.2} s",
        id.label()
    ));
    let parry_ref: Vec<Answer> = parry_at.iter().map(|&p| reference[p]).collect();
    let (answers, d) = time_best(
        cfg.repeats,
        &parry_sample.rays[..warm(&parry_sample.rays)],
        &parry_sample.rays,
        |r| parry.cast_all(r),
    );
    rows.push(row(
        "parry3d Voxels".into(),
        parry_sample.rays.len(),
        d,
        agreement(&parry_ref, &answers, &parry_sample.rays, "parry", cfg.show),
        parry_sample.how.clone(),
    ));
    drop(parry);

    // e. voxel-traversal over a flat occupancy bitmap.
    let t = Instant::now();
    let grid = OccupancyGrid::new(&w.world);
    prep.push(("occupancy bitmap".into(), secs(t.elapsed())));
    let (answers, d) = time_best(cfg.repeats, &sample[..warm(sample)], sample, |r| {
        grid.cast_all(r)
    });
    rows.push(row(
        "voxel-traversal".into(),
        sample.len(),
        d,
        agreement(&reference, &answers, sample, "voxel-traversal", cfg.show),
        sampled.how.clone(),
    ));

    WorkloadReport {
        id: w.id,
        rays: n,
        mean_steps,
        hit_rate,
        prep,
        rows,
    }
}

/// What a row of extra engines is judged against: the one-thread reference's answers on its
/// sample, and its rate and steps per ray.
struct Judge<'a> {
    reference: &'a [Answer],
    sampled: &'a Sample,
    base: f64,
    mean_steps: f64,
}

impl Judge<'_> {
    /// A row for `engine` that answered all `n` queries in `d`; `visible` gives, per query,
    /// whether the engine found it clear (compared with the reference on its sample).
    fn row(
        &self,
        engine: &str,
        n: usize,
        d: Duration,
        visible: impl Fn(usize) -> bool,
        note: String,
        call: GpuCall,
    ) -> Row {
        let same = self
            .sampled
            .idx
            .iter()
            .zip(self.reference)
            .filter(|&(&i, r)| visible(i) == r.is_none())
            .count();
        let agreement = (
            same as f64 / self.reference.len().max(1) as f64,
            self.reference.len(),
        );
        self.row_agreeing(engine, n, d, agreement, note, call)
    }

    /// [`Judge::row`] with its agreement given (the share of the sample that agrees, and the
    /// sample's size).
    fn row_agreeing(
        &self,
        engine: &str,
        n: usize,
        d: Duration,
        agreement: (f64, usize),
        note: String,
        call: GpuCall,
    ) -> Row {
        let rps = n as f64 / secs(d);
        Row {
            engine: engine.into(),
            rays_timed: n,
            rays_per_s: Some(rps),
            steps_per_s: Some(rps * self.mean_steps),
            ratio: Some(rps / self.base),
            agreement: Some(agreement),
            note,
            gpu_call: Some(call),
        }
    }
}

/// W5's GPU rows besides the plain line-of-sight batch of prebuilt segments: the agent call
/// (eyes uploaded, a bit per pair), the plain batch counting the segments its user builds on
/// the host, and the visible pairs within the radius (pairs found on the host). Agreement is
/// on whether each sampled pair sees: the bits say nothing of what blocks.
fn gpu_agent_rows(
    g: &GpuEngine,
    scene: &GpuScene,
    w: &Workload,
    cfg: &Config,
    judge: &Judge<'_>,
) -> Result<Vec<Row>, String> {
    let n = w.pairs.len();
    let mut rows = Vec::new();
    let best_of = |f: &mut dyn FnMut() -> Result<f64, String>| best_call(g, cfg.repeats, f);
    let mut answers = Vec::new();
    let (d, upload, stats) = best_of(&mut || {
        let (a, upload) = g.agents(scene, w)?;
        answers = a;
        Ok(upload)
    })?;
    let eyes_up = (w.agents.len() * 32) as u64;
    rows.push(judge.row(
        "voxcast gpu agents",
        n,
        d,
        |i| answers[i].is_none(),
        format!(
            "{} agents' eyes uploaded, then all {n} pairs in one call, a bit each",
            w.agents.len()
        ),
        GpuCall::of(n, stats, upload, eyes_up),
    ));
    let mut answers = Vec::new();
    let (d, built, stats) = best_of(&mut || {
        let (a, built) = g.segments_then_sight(scene, w)?;
        answers = a;
        Ok(built)
    })?;
    rows.push(judge.row(
        "voxcast gpu sight+between",
        n,
        d,
        |i| answers[i].is_none(),
        format!("all {n} pairs: VoxelRay::between on the host, then line_of_sight_into"),
        GpuCall::of(n, stats, built, 0),
    ));
    let mut visible = Vec::new();
    let (d, upload, stats) = best_of(&mut || {
        let (v, upload) = g.visible_pairs(scene, w)?;
        visible = v;
        Ok(upload)
    })?;
    let set: std::collections::HashSet<[u32; 2]> = visible.iter().copied().collect();
    rows.push(judge.row(
        "voxcast gpu pairs within",
        n,
        d,
        |i| set.contains(&w.pairs[i]),
        format!(
            "visible_pairs_within: pairs found on the host, eyes uploaded, {} visible",
            visible.len()
        ),
        GpuCall::of(n, stats, upload, eyes_up),
    ));
    Ok(rows)
}

/// The best of `repeats` timed runs of `f` after one untimed run, with the statistics of the
/// best and what `f` returned then (seconds of host work outside the call).
fn best_call(
    g: &GpuEngine,
    repeats: usize,
    f: &mut dyn FnMut() -> Result<f64, String>,
) -> Result<(Duration, f64, voxcast::gpu::BatchStats), String> {
    f()?;
    let mut best = (Duration::MAX, 0.0, voxcast::gpu::BatchStats::default());
    for _ in 0..repeats {
        let t = Instant::now();
        let extra = f()?;
        let took = t.elapsed();
        if took < best.0 {
            best = (took, extra, g.last_stats());
        }
    }
    Ok(best)
}

/// The plain batch with the workload's rays given relative to the window (`WindowRay`,
/// converted once before timing, as a caller that keeps positions that way has them) and
/// answered relative to it.
fn gpu_window_row(
    g: &GpuEngine,
    scene: &GpuScene,
    w: &Workload,
    cfg: &Config,
    judge: &Judge<'_>,
) -> Result<Row, String> {
    let n = w.rays.len();
    let rays = g.window_rays(scene, &w.rays);
    let mut answers = Vec::new();
    let (d, _, stats) = best_call(g, cfg.repeats, &mut || {
        answers = g.run_window(scene, w, &rays)?;
        Ok(0.0)
    })?;
    let engine = "voxcast gpu window rays";
    let agreement = agreement(
        judge.reference,
        &judge.sampled.pick(&answers),
        &judge.sampled.rays,
        engine,
        cfg.show,
    );
    Ok(judge.row_agreeing(
        engine,
        n,
        d,
        agreement,
        format!("all {n} rays relative to the window: WindowRay in, WindowOutcome out"),
        GpuCall::of(n, stats, 0.0, 0),
    ))
}

/// W6's GPU rows besides the plain batch of the workload's prebuilt rays: the sensor call (the
/// rig uploaded once, 32 bytes up a pose, a word down a ray) and the plain batch counting the
/// rays its user builds on the host. Agreement is on whether each sampled ray hits.
fn gpu_sensor_rows(
    g: &GpuEngine,
    scene: &GpuScene,
    w: &Workload,
    cfg: &Config,
    judge: &Judge<'_>,
) -> Result<Vec<Row>, String> {
    let n = w.rays.len();
    let mut answers = Vec::new();
    let (d, _, stats) = best_call(g, cfg.repeats, &mut || {
        answers = g.sensors(scene, w)?;
        Ok(0.0)
    })?;
    let mut rows = vec![judge.row(
        "voxcast gpu sensors",
        n,
        d,
        |i| answers[i].is_none(),
        format!(
            "{} poses, a {}-ray rig uploaded once: every ray made in the shader, a word each",
            w.poses.len(),
            peers::w6_rig().len()
        ),
        GpuCall::of(n, stats, 0.0, 0),
    )];
    let mut answers = Vec::new();
    let (d, built, stats) = best_call(g, cfg.repeats, &mut || {
        let (a, built) = g.rays_then_raycast(scene, w)?;
        answers = a;
        Ok(built)
    })?;
    rows.push(judge.row(
        "voxcast gpu rays+raycast",
        n,
        d,
        |i| answers[i].is_none(),
        format!("all {n} rays: SensorPose::ray on the host, then raycast_into"),
        GpuCall::of(n, stats, built, 0),
    ));
    Ok(rows)
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

/// Batch sizes of `--crossover`.
const CROSSOVER_BATCHES: [usize; 4] = [64, 1 << 10, 1 << 14, 1 << 18];

/// `--crossover`: per batch size, the best time of one GPU call (upload, dispatch, readback
/// and decoding included) and of one CPU batch call on all threads, with the same W2 segments.
/// Small batches get more timed runs, their times being short and noisy.
fn print_crossover(machine: &[(&str, String)], repeats: usize, gpu: Option<&GpuEngine>) {
    let largest = CROSSOVER_BATCHES[CROSSOVER_BATCHES.len() - 1];
    let w = Workload::new(WorkloadId::W2, largest, (16, 9));
    let scene = gpu.map(|g| g.upload(&w));
    for (k, v) in machine {
        println!("{k:<10} {v}");
    }
    println!(
        "mode       crossover on W2 line-of-sight segments (best of the timed runs, after a warm-up)"
    );
    println!();
    println!("| batch | GPU call | CPU batch | GPU / CPU |");
    println!("|------:|---------:|----------:|----------:|");
    for n in CROSSOVER_BATCHES {
        let rays = &w.rays[..n];
        let runs = (repeats * largest / n).clamp(repeats, 200);
        let (_, cpu) = time_best(runs, rays, rays, |r| peers::voxcast_batch(&w, r));
        let gpu_time = match (gpu, &scene) {
            (Some(g), Some(Ok(sc))) => {
                let mut failed = None;
                let (_, t) = time_best(runs, rays, rays, |r| {
                    g.run(sc, &w, r).unwrap_or_else(|e| {
                        failed = Some(e);
                        Vec::new()
                    })
                });
                failed.map_or(Ok(t), Err)
            }
            (Some(_), Some(Err(e))) => Err(format!("upload failed: {e}")),
            _ => Err("no GPU".into()),
        };
        let ms = |d: Duration| format!("{:.2} ms", secs(d) * 1e3);
        match gpu_time {
            Ok(t) => println!(
                "| {n} | {} | {} | {:.2}x |",
                ms(t),
                ms(cpu),
                secs(cpu) / secs(t)
            ),
            Err(e) => println!("| {n} | {e} | {} | - |", ms(cpu)),
        }
    }
    println!();
    println!("GPU / CPU above 1 means the GPU call answered the batch faster.");
}

fn main() {
    let args = Args::parse();
    let cfg = Config::from_args(&args);
    let mut workloads: Vec<WorkloadId> = Vec::new();
    for s in &args.workload {
        let Some(id) = WorkloadId::parse(s) else {
            eprintln!("unknown workload {s:?}; expected w1, w2, w3, w4, w5 or w6");
            std::process::exit(2)
        };
        // Each named workload once, in the order given.
        if !workloads.contains(&id) {
            workloads.push(id);
        }
    }
    if workloads.is_empty() {
        workloads = WorkloadId::ALL.to_vec();
    }

    let ray_setup = match args.ray_setup.as_str() {
        "host" => voxcast::gpu::RaySetup::Host,
        "shader" => voxcast::gpu::RaySetup::Shader,
        _ => voxcast::gpu::RaySetup::Auto,
    };
    let gpu = match GpuEngine::with_ray_setup(ray_setup) {
        Ok(g) => Ok(g),
        Err(e) => {
            progress(&format!("gpu: {e}"));
            Err(e)
        }
    };
    let machine = vec![
        ("cpu", cpu_model()),
        (
            "cores",
            std::thread::available_parallelism().map_or("unknown".into(), |n| n.get().to_string()),
        ),
        ("threads", rayon::current_num_threads().to_string()),
        (
            "gpu",
            gpu.as_ref().map_or_else(|e| e.clone(), GpuEngine::adapter),
        ),
        (
            "build",
            if cfg!(debug_assertions) {
                "debug (numbers are meaningless)".into()
            } else {
                "release".into()
            },
        ),
    ];

    if args.crossover {
        print_crossover(&machine, cfg.repeats, gpu.as_ref().ok());
        return;
    }
    if args.streaming {
        streaming::print_streaming(&machine, gpu.as_ref().ok().map(GpuEngine::raycaster));
        return;
    }
    let w8_casts = if cfg.mode == "quick" { 20_000 } else { 100_000 };
    let w8 = || {
        boxes::print_boxes(
            &machine,
            w8_casts,
            cfg.repeats,
            gpu.as_ref().ok().map(GpuEngine::raycaster),
            cfg.show,
        );
    };
    if args.boxes {
        w8();
        return;
    }
    let with_w8 = args.workload.is_empty();
    // W7 and W9 need fastanvil's region: from Cargo, or named by VOXCAST_W7_REGION (the GPU
    // bundle).
    let region = WorkloadId::ON_REGION;
    if workloads.iter().any(|w| region.contains(w)) && peers::region_path().is_none() {
        progress(&format!(
            "W7 and W9 skipped: their region file is not found (run with Cargo, or set {})",
            peers::REGION_VAR
        ));
        workloads.retain(|w| !region.contains(w));
    }
    let started = Instant::now();
    let reports: Vec<WorkloadReport> = workloads
        .iter()
        .map(|&id| run_workload(id, &cfg, gpu.as_ref().ok()))
        .collect();
    progress(&format!("done in {:.1} s", started.elapsed().as_secs_f64()));

    if args.json {
        print_json(&machine, &cfg, &reports);
    } else {
        print_table(&machine, &cfg, &reports);
        if with_w8 {
            println!();
            w8();
        }
    }
}
