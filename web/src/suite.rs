//! The parity suite the page runs: every query kind on the standard terrain and on worlds at
//! i128 offsets (2^64, 2^120, and both edges of the i128 world), each GPU answer compared
//! with the CPU reference compiled into the same program, and a digest of the answers that
//! the native build computes too (`cargo run -p voxcast-web --example digest`): equal digests
//! say the CPU reference answers the same in the browser as natively, and equal answers say
//! the browser's GPU answers as the CPU does.

use glam::{Quat, Vec3};
use voxcast::gpu::{
    AgentPairs, BoxCasts, CameraImage, GpuError, GpuRaycaster, PendingBatch, Rays, SensorSweep,
    Sightlines,
};
use voxcast::{
    Agent, BoxCast, BoxCastOutcome, Camera, LineOfSight, LineOfSightOptions, RaycastOptions,
    RaycastOutcome, SensorPose, SensorReadings, SensorRig, UnloadedPolicy, VoxelRay, VoxelWorld,
    agent_visibility, box_cast_batch, line_of_sight_batch, pairs_within, raycast_batch,
    raycast_camera, sense,
};
use voxcast_testkit::SplitMix64;
use voxcast_testkit::common::{region_rays, region_world};
use voxcast_testkit::scene::Terrain;

/// One query kind on one world: how many answers it compared and how many differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// The world and the kind, e.g. `terrain: rays`.
    pub name: String,
    /// Answers compared (0 where no GPU took part).
    pub compared: usize,
    /// GPU answers that differ from the CPU reference.
    pub differ: usize,
    /// The first difference, described.
    pub first: Option<String>,
}

/// What the suite found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// One check per world and kind, in the suite's order.
    pub checks: Vec<Check>,
    /// FNV-1a digest of the CPU reference's answers, in the suite's order: equal on every
    /// target voxcast builds for.
    pub cpu_digest: u64,
    /// The digest of the same answers without their UV (held within a tolerance by the
    /// parity contract, bit for bit in everything else).
    pub cpu_exact_digest: u64,
    /// That digest of the GPU's answers: equal to `cpu_exact_digest` (`None` without a GPU).
    pub gpu_exact_digest: Option<u64>,
    /// The digest of the suite's inputs (every ray, camera, agent, pair, rig and pose): equal
    /// on every target, or the answers' digests cannot be.
    pub inputs_digest: u64,
    /// Answers the CPU reference gave.
    pub answers: usize,
}

impl Report {
    /// GPU answers that differ from the CPU reference, over every check.
    #[must_use]
    pub fn differ(&self) -> usize {
        self.checks.iter().map(|c| c.differ).sum()
    }

    /// The report as JSON (what the page hands to its tests).
    #[must_use]
    pub fn to_json(&self) -> String {
        let checks: Vec<String> = self
            .checks
            .iter()
            .map(|c| {
                format!(
                    "{{\"name\":{},\"compared\":{},\"differ\":{},\"first\":{}}}",
                    json_string(&c.name),
                    c.compared,
                    c.differ,
                    c.first.as_deref().map_or("null".into(), json_string)
                )
            })
            .collect();
        format!(
            "{{\"inputs_digest\":\"{:016x}\",\"cpu_digest\":\"{:016x}\",\"cpu_exact_digest\":\"{:016x}\",\"gpu_exact_digest\":{},\"answers\":{},\"differ\":{},\"checks\":[{}]}}",
            self.inputs_digest,
            self.cpu_digest,
            self.cpu_exact_digest,
            self.gpu_exact_digest
                .map_or("null".into(), |d| format!("\"{d:016x}\"")),
            self.answers,
            self.differ(),
            checks.join(",")
        )
    }
}

/// `s` as a JSON string.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// FNV-1a over the answers' `Debug` text, which names every field and writes each f32 in the
/// shortest form that reads back to the same bits: `full` over whole answers, `exact` over
/// what the parity contract holds bit for bit (the UV on the face, which it holds within
/// [`UV_TOLERANCE`](voxcast::UV_TOLERANCE), written as zero).
#[derive(Clone, Copy, Debug)]
struct Digest {
    full: u64,
    exact: u64,
}

/// An answer the suite digests.
trait Answer: std::fmt::Debug {
    /// The answer without what the parity contract holds only within a tolerance.
    fn exact(&self) -> String {
        format!("{self:?}")
    }
}

/// A raycast outcome with its hit's UV written as zero.
fn without_uv(o: RaycastOutcome) -> RaycastOutcome {
    match o {
        RaycastOutcome::Hit(mut h) => {
            h.hit_uv = glam::Vec2::ZERO;
            RaycastOutcome::Hit(h)
        }
        o => o,
    }
}

impl Answer for RaycastOutcome {
    fn exact(&self) -> String {
        format!("{:?}", without_uv(*self))
    }
}

impl Answer for LineOfSight {
    fn exact(&self) -> String {
        format!("{:?}", without_uv(RaycastOutcome::from(*self)))
    }
}

impl Answer for BoxCastOutcome {}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

fn fnv(mut h: u64, text: &str) -> u64 {
    for b in text.bytes().chain([b'\n']) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl Digest {
    const fn new() -> Self {
        Self {
            full: FNV_OFFSET,
            exact: FNV_OFFSET,
        }
    }

    fn add(&mut self, answer: &impl Answer) {
        self.full = fnv(self.full, &format!("{answer:?}"));
        self.exact = fnv(self.exact, &answer.exact());
    }
}

/// The inputs of every kind on one world.
struct Case {
    name: String,
    rays: Vec<VoxelRay>,
    segments: Vec<VoxelRay>,
    camera: Camera,
    agents: Vec<Agent>,
    pairs: Vec<[u32; 2]>,
    rig: SensorRig,
    poses: Vec<SensorPose>,
    boxes: Vec<BoxCast>,
}

/// Turned poses at the agents' eyes: random rotations and quarter turns about +Y. Made with
/// `+ - * / sqrt` alone, whose f32 and f64 results are the same on every target (the libm
/// behind `sin` and `cos` is not), so that the native build and the page cast the same rays.
fn poses_of(agents: &[Agent], seed: u64) -> Vec<SensorPose> {
    const QUARTER: f32 = std::f32::consts::FRAC_1_SQRT_2;
    let turns = [
        Quat::IDENTITY,
        Quat::from_xyzw(0.0, QUARTER, 0.0, QUARTER),
        Quat::from_xyzw(0.0, 1.0, 0.0, 0.0),
        Quat::from_xyzw(0.0, -QUARTER, 0.0, QUARTER),
    ];
    let mut rng = SplitMix64::new(seed);
    agents
        .iter()
        .enumerate()
        .filter_map(|(i, a)| {
            let (position, offset) = a.eye().ok()?;
            let rotation = if i % 2 == 0 {
                let q = [0; 4].map(|_| f64::from(rng.next_f32()) - 0.5);
                let n = q.iter().map(|c| c * c).sum::<f64>().sqrt().max(1e-3);
                Quat::from_xyzw(
                    (q[0] / n) as f32,
                    (q[1] / n) as f32,
                    (q[2] / n) as f32,
                    (q[3] / n) as f32,
                )
            } else {
                turns[rng.below(4) as usize]
            };
            Some(SensorPose::new(position, offset, rotation))
        })
        .collect()
}

/// A rig of `n` rays in random directions (`unit_vector`: `sqrt` alone), `max_distance` long.
fn rig_of(n: usize, max_distance: f32, seed: u64) -> SensorRig {
    let mut rng = SplitMix64::new(seed);
    let rays: Vec<(Vec3, f32)> = (0..n).map(|_| (rng.unit_vector(), max_distance)).collect();
    SensorRig::new(&rays).expect("a valid rig")
}

/// A camera at `eye` looking along `forward` with a vertical field of view of about 60
/// degrees: its scales written as constants (`Camera::new` takes them from `tan`).
fn camera_at(eye: &VoxelRay, forward: Vec3, width: u32, height: u32, max: f32) -> Camera {
    let mut c = Camera::new(
        eye.origin,
        eye.sub_offset,
        forward,
        60.0,
        width,
        height,
        max,
    )
    .expect("a valid camera");
    c.scale_y = 0.577_35;
    c.scale_x = c.scale_y * width as f32 / height as f32;
    c
}

/// The segments line of sight casts between the eyes of `pairs` of `agents`.
fn segments_of(agents: &[Agent], pairs: &[[u32; 2]]) -> Vec<VoxelRay> {
    pairs
        .iter()
        .filter_map(|&[a, b]| {
            let (pa, sa) = agents[a as usize].eye().ok()?;
            let (pb, sb) = agents[b as usize].eye().ok()?;
            VoxelRay::sight_line(pa, sa, pb, sb).ok()
        })
        .collect()
}

/// Box casts along `rays` (boxes of three sizes, the rays' max distance capped at 16).
fn boxes_along(rays: &[VoxelRay]) -> Vec<BoxCast> {
    const HALVES: [Vec3; 3] = [Vec3::ZERO, Vec3::new(0.3, 0.9, 0.3), Vec3::splat(1.5)];
    rays.iter()
        .enumerate()
        .filter_map(|(i, r)| {
            BoxCast::new(
                r.origin,
                r.sub_offset,
                HALVES[i % HALVES.len()],
                r.direction,
                r.max_distance.min(16.0),
            )
            .ok()
        })
        .collect()
}

/// The standard terrain's case.
fn terrain_case() -> Case {
    let t = Terrain::STANDARD;
    let agents = t.agents(160, 31);
    let mut pairs = pairs_within(&agents, 64.0);
    // Each pair in both orders (one answer for either), and random ones (some of an agent
    // with itself: a segment of length 0).
    let reversed: Vec<[u32; 2]> = pairs.iter().map(|&[a, b]| [b, a]).collect();
    pairs.extend(reversed);
    let mut rng = SplitMix64::new(32);
    pairs.extend((0..500).map(|_| [rng.below(160) as u32, rng.below(160) as u32]));
    let rays = t.reach_rays(1500, 33);
    let standard = t.camera(8, 8);
    let eye = VoxelRay::new(standard.position, standard.sub_offset, Vec3::X, 0.0)
        .expect("the standard camera's eye");
    Case {
        name: "terrain".into(),
        boxes: boxes_along(&rays),
        segments: segments_of(&agents, &pairs),
        rays,
        camera: camera_at(&eye, Vec3::new(0.15, -0.28, 1.0), 192, 108, 1024.0),
        poses: poses_of(&agents, 35),
        agents,
        pairs,
        rig: rig_of(32, 32.0, 36),
    }
}

/// The case of a region world at chunk `base`: its rays, segments between their origins,
/// a camera at the first origin, agents standing at the origins.
fn region_case(name: &str, base: [i128; 3], seed: u64) -> Case {
    let rays = region_rays(base, seed, 600);
    let segments: Vec<VoxelRay> = rays
        .windows(2)
        .filter_map(|w| {
            VoxelRay::between(w[0].origin, w[0].sub_offset, w[1].origin, w[1].sub_offset).ok()
        })
        .collect();
    let agents: Vec<Agent> = rays
        .iter()
        .take(120)
        .map(|r| Agent::new(r.origin, r.sub_offset, 0.5))
        .collect();
    let mut pairs = pairs_within(&agents, 200.0);
    pairs.truncate(2000);
    let first = rays.first().expect("region rays");
    Case {
        name: name.into(),
        boxes: boxes_along(&rays),
        camera: camera_at(first, Vec3::new(0.3, -0.2, 1.0), 96, 64, 700.0),
        segments,
        poses: poses_of(&agents, seed + 1),
        agents,
        pairs,
        rig: rig_of(180, 300.0, seed + 2),
        rays,
    }
}

/// The worlds of the suite besides the terrain: a region world at 2^64, at 2^120, and against
/// the top and the bottom edge of the i128 world (bases in chunks of 32 voxels).
#[must_use]
pub fn offset_worlds() -> Vec<(&'static str, [i128; 3])> {
    let top = (i128::MAX >> 5) - 8;
    let bottom = (i128::MIN >> 5) + 8;
    vec![
        ("2^64", [1 << 59, 1 << 59, -(1 << 59)]),
        ("2^120", [-(1 << 115), 1 << 115, 1 << 115]),
        ("top edge", [top, top, top]),
        ("bottom edge", [bottom, bottom, bottom]),
    ]
}

/// A batch's answers, or the error it failed with.
async fn answers<T>(batch: Result<PendingBatch<T>, GpuError>) -> Result<T, GpuError> {
    batch?.await
}

/// The check of a batch that failed: every answer counted as differing.
fn failed(name: String, queries: usize, e: &GpuError) -> Check {
    Check {
        name,
        compared: queries,
        differ: queries,
        first: Some(format!("the batch failed: {e}")),
    }
}

/// Compares `gpu` (or the error the batch failed with) with `cpu` answer by answer with
/// `same`.
fn compare<T: std::fmt::Debug>(
    name: String,
    gpu: &Result<Vec<T>, GpuError>,
    cpu: &[T],
    same: impl Fn(&T, &T) -> bool,
) -> Check {
    let gpu = match gpu {
        Ok(g) => g,
        Err(e) => return failed(name, cpu.len(), e),
    };
    let mut check = Check {
        name,
        compared: cpu.len(),
        differ: 0,
        first: None,
    };
    if gpu.len() != cpu.len() {
        check.differ = cpu.len().max(gpu.len());
        check.first = Some(format!(
            "{} GPU answers for {} queries",
            gpu.len(),
            cpu.len()
        ));
        return check;
    }
    for (i, (g, c)) in gpu.iter().zip(cpu).enumerate() {
        if !same(g, c) {
            check.differ += 1;
            check
                .first
                .get_or_insert_with(|| format!("answer {i}: gpu {g:?}, cpu {c:?}"));
        }
    }
    check
}

/// Runs the suite: every kind on the terrain (`terrain`, the world of
/// [`Terrain::STANDARD`]) and on the offset worlds, on the CPU reference and, with `gpu`, on
/// the GPU, awaiting each batch.
///
/// # Errors
/// The GPU's error where a batch failed outright (the answers that did come are not
/// reported then).
pub async fn run(gpu: Option<&GpuRaycaster>, terrain: &VoxelWorld) -> Result<Report, GpuError> {
    let mut report = Report::default();
    let mut worlds = vec![(terrain_case(), None)];
    for (i, (name, base)) in offset_worlds().into_iter().enumerate() {
        let seed = 40 + i as u64;
        worlds.push((
            region_case(name, base, seed),
            Some(region_world(base, seed)),
        ));
    }
    let mut inputs = FNV_OFFSET;
    for (case, _) in &worlds {
        let c = case;
        for text in [
            format!("{:?}", c.rays),
            format!("{:?}", c.segments),
            format!("{:?}", c.camera),
            format!("{:?}", c.agents),
            format!("{:?}", c.pairs),
            format!("{:?}", c.rig),
            format!("{:?}", c.poses),
            format!("{:?}", c.boxes),
        ] {
            inputs = fnv(inputs, &text);
        }
    }
    report.inputs_digest = inputs;
    let mut tally = Tally {
        report: &mut report,
        cpu: Digest::new(),
        gpu: Digest::new(),
    };
    for (case, own) in &worlds {
        let world = own.as_ref().unwrap_or(terrain);
        run_case(gpu, case, world, &mut tally).await?;
    }
    let (cpu, gpu_digest) = (tally.cpu, tally.gpu);
    report.cpu_digest = cpu.full;
    report.cpu_exact_digest = cpu.exact;
    report.gpu_exact_digest = gpu.map(|_| gpu_digest.exact);
    Ok(report)
}

/// The report and the digests a run adds to.
struct Tally<'a> {
    report: &'a mut Report,
    cpu: Digest,
    gpu: Digest,
}

impl Tally<'_> {
    /// One kind's answers: the CPU's into the CPU digest; where the GPU was asked, its
    /// answers compared with the CPU's by `same` and added to the GPU digest.
    fn list<T: Answer>(
        &mut self,
        name: String,
        cpu: &[T],
        gpu: Option<Result<Vec<T>, GpuError>>,
        same: impl Fn(&T, &T) -> bool,
    ) {
        self.report.answers += cpu.len();
        cpu.iter().for_each(|a| self.cpu.add(a));
        if let Some(gpu) = gpu {
            self.report.checks.push(compare(name, &gpu, cpu, same));
            gpu.iter().flatten().for_each(|a| self.gpu.add(a));
        }
    }
}

/// A sensor ray's answer: its word (the distance's bits) and its whole outcome.
type Sensed = (u32, Option<RaycastOutcome>);

impl Answer for Sensed {
    fn exact(&self) -> String {
        format!("{:?}", (self.0, self.1.map(without_uv)))
    }
}

/// Each ray's answer of `r`, in order.
fn sensed(r: &SensorReadings) -> Vec<Sensed> {
    r.distances()
        .iter()
        .enumerate()
        .map(|(i, d)| (d.to_bits(), r.outcomes().map(|o| o[i])))
        .collect()
}

/// Every kind of `case` on `world`.
async fn run_case(
    gpu: Option<&GpuRaycaster>,
    case: &Case,
    world: &VoxelWorld,
    tally: &mut Tally<'_>,
) -> Result<(), GpuError> {
    let opts = RaycastOptions::default();
    let stop = RaycastOptions {
        unloaded: UnloadedPolicy::Stop,
        ..RaycastOptions::default()
    };
    let on_gpu = match gpu {
        Some(g) => Some((g, g.upload_world(world)?)),
        None => None,
    };
    let name = |kind: &str| format!("{}: {kind}", case.name);

    for (label, o) in [("rays", &opts), ("rays, unloaded stop", &stop)] {
        let got = match &on_gpu {
            Some((g, w)) => Some(answers(g.submit(Rays(&case.rays), w, o)).await),
            None => None,
        };
        let cpu = raycast_batch(&case.rays, world, o);
        tally.list(name(label), &cpu, got, RaycastOutcome::matches);
    }
    for (label, conservative) in [
        ("line of sight", false),
        ("line of sight, conservative", true),
    ] {
        let o = LineOfSightOptions {
            conservative,
            ..LineOfSightOptions::default()
        };
        let got = match &on_gpu {
            Some((g, w)) => Some(answers(g.submit(Sightlines(&case.segments), w, &o)).await),
            None => None,
        };
        let cpu = line_of_sight_batch(&case.segments, world, &o);
        tally.list(name(label), &cpu, got, LineOfSight::matches);
    }
    let got = match &on_gpu {
        Some((g, w)) => Some(answers(g.submit(CameraImage(&case.camera), w, &opts)).await),
        None => None,
    };
    let cpu = raycast_camera(&case.camera, world, &opts).unwrap_or_default();
    tally.list(name("camera"), &cpu, got, RaycastOutcome::matches);

    let got = match &on_gpu {
        Some((g, w)) => {
            let rig = g.upload_rig(&case.rig)?;
            let query = SensorSweep {
                rig: &rig,
                poses: &case.poses,
                outcomes: true,
            };
            Some(answers(g.submit(query, w, &opts)).await.map(|r| sensed(&r)))
        }
        None => None,
    };
    let cpu = sensed(&sense(&case.rig, &case.poses, world, &opts, true));
    tally.list(name("sensors"), &cpu, got, |a, b| {
        a.0 == b.0
            && match (&a.1, &b.1) {
                (Some(x), Some(y)) => x.matches(y),
                (x, y) => x.is_none() && y.is_none(),
            }
    });

    let o = LineOfSightOptions::default();
    let got = match &on_gpu {
        Some((g, w)) => {
            let agents = g.upload_agents(&case.agents, w)?;
            let query = AgentPairs {
                agents: &agents,
                pairs: &case.pairs,
                outcomes: true,
            };
            let v = answers(g.submit(query, w, &o)).await;
            Some(v.map(|v| v.answers().map(<[_]>::to_vec).unwrap_or_default()))
        }
        None => None,
    };
    let cpu = agent_visibility(&case.agents, &case.pairs, world, &o);
    tally.list(name("agent pairs"), &cpu, got, LineOfSight::matches);

    let got = match &on_gpu {
        Some((g, w)) => Some(answers(g.submit(BoxCasts(&case.boxes), w, &opts)).await),
        None => None,
    };
    let cpu = box_cast_batch(&case.boxes, world, &opts);
    tally.list(name("box casts"), &cpu, got, |a, b| a == b);
    Ok(())
}
