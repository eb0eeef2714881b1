//! The standard workloads W1-W6 and one adapter per engine, shared by the bench report
//! (`examples/bench_report`) and the criterion benches (`benches/raycast.rs`).
//!
//! Every engine answers the same question for the same rays in the same world: which voxel
//! does the ray hit first (an [`Answer`]), where every non-air voxel stops the ray (the default
//! [`RaycastOptions`]: water and ore stop it too), the origin voxel counts (t = 0), and nothing
//! outside the loaded box is solid. Preparation (building a peer's world, flattening the
//! occupancy) happens once, outside any timing.

use crate::scene::{Sparse, SplitMix64, Terrain};
use parry3d::math::Pose;
use parry3d::math::{IVector, Vector};
use parry3d::query::{Ray, RayCast, ShapeCastOptions, cast_shapes};
use parry3d::shape::{Cuboid, Voxels};
use voxcast::agent_segment;
use voxcast::glam::Vec3;
use voxcast::{
    Agent, Camera, LineOfSight, LineOfSightOptions, LocalPos, RaycastOptions, RaycastOutcome,
    SensorPose, SensorRig, VoxelRay, VoxelWorld, WorldPos, line_of_sight, line_of_sight_batch_into,
    pairs_within, raycast_batch_into, raycast_camera_into, voxel_raycast_with,
};

/// Seed of the W1 reach rays.
const SEED_W1: u64 = 0x5731;
/// Seed of the W2 sight segments.
const SEED_W2: u64 = 0x5732;
/// Seed of the W4 sparse rays.
const SEED_W4: u64 = 0x5734;
/// Seed of the W5 agents.
const SEED_W5: u64 = 0x5735;
/// W5: how many agents, and the radius within which every pair's line of sight is asked.
pub const W5_AGENTS: usize = 2_000;
/// W5: pairs of agents at most this far apart, in voxels, are asked.
pub const W5_RADIUS: f64 = 64.0;
/// Seed of the W6 agents and their headings.
const SEED_W6: u64 = 0x5736;
/// Seed of W7's points and directions.
const SEED_W7: u64 = 0x5737;
/// Seed of W8's boxes and moves.
const SEED_W8: u64 = 0x5738;
/// W8: the player's box, half extents in voxels.
pub const W8_HALF: Vec3 = Vec3::new(0.3, 0.9, 0.3);
/// W6: how many agents sense.
pub const W6_AGENTS: usize = 2_000;

/// W6's rig: a vision cone of 64 rays, 30° around forward, 32 voxels long.
pub fn w6_rig() -> SensorRig {
    SensorRig::cone(64, 30.0, 32.0).unwrap_or_else(|e| unreachable!("a valid cone: {e}"))
}

/// One of the standard workloads of [`crate::scene`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadId {
    /// Reach: terrain, rays from eye height in random directions, max distance 8.
    W1,
    /// Line of sight: terrain, segments between eye points up to 64 voxels apart.
    W2,
    /// Camera: terrain, one ray per pixel, max distance 1024.
    W3,
    /// Sparse: a 256³ cube with 0.5% solid voxels, max distance 512.
    W4,
    /// Agents: terrain, 2,000 agents, line of sight for every pair within 64 voxels.
    W5,
    /// Sensors: terrain, 2,000 agents, each a 64-ray vision cone of 32 voxels from its eye.
    W6,
    /// A real world, reach: fastanvil's 1.19.4 Minecraft region, rays of 5 voxels from eye
    /// height (1.62) above the ground in random directions.
    W7,
    /// The region, line of sight: segments up to 64 voxels between points 2 voxels above the
    /// ground.
    W7Sight,
    /// The region, camera: a ray per pixel from above one corner across the region, max
    /// distance 700.
    W7Camera,
    /// The region, a LiDAR: 64 channels (-24.9 to +2 degrees) x 1,800 azimuths (0.2 degrees)
    /// of 120 voxels from robots 2.5 voxels above the ground, each robot's rays in channel
    /// order (a plain batch, as a LiDAR's rays built by hand come).
    W7Lidar,
    /// W7's reach rays on the same region with its blocks' shapes (block states imported with
    /// their properties, `voxcast_import::shapes::block_shape`): the cost of shapes against W7.
    /// The peers answer the region as cubes, for reference.
    W9,
    /// W7's sight segments on the region with its shapes.
    W9Sight,
    /// W7's camera on the region with its shapes.
    W9Camera,
}

impl WorkloadId {
    /// Every workload, in order.
    pub const ALL: [Self; 13] = [
        Self::W1,
        Self::W2,
        Self::W3,
        Self::W4,
        Self::W5,
        Self::W6,
        Self::W7,
        Self::W7Sight,
        Self::W7Camera,
        Self::W7Lidar,
        Self::W9,
        Self::W9Sight,
        Self::W9Camera,
    ];

    /// The workloads on fastanvil's region (W7 and W9), which need its file.
    pub const ON_REGION: [Self; 7] = [
        Self::W7,
        Self::W7Sight,
        Self::W7Camera,
        Self::W7Lidar,
        Self::W9,
        Self::W9Sight,
        Self::W9Camera,
    ];

    /// Short name used on the command line and in JSON (`w1` ... `w7c`).
    pub fn key(self) -> &'static str {
        match self {
            Self::W1 => "w1",
            Self::W2 => "w2",
            Self::W3 => "w3",
            Self::W4 => "w4",
            Self::W5 => "w5",
            Self::W6 => "w6",
            Self::W7 => "w7",
            Self::W7Sight => "w7s",
            Self::W7Camera => "w7c",
            Self::W7Lidar => "w7l",
            Self::W9 => "w9",
            Self::W9Sight => "w9s",
            Self::W9Camera => "w9c",
        }
    }

    /// Name for tables and criterion groups.
    pub fn label(self) -> &'static str {
        match self {
            Self::W1 => "W1 reach",
            Self::W2 => "W2 line of sight",
            Self::W3 => "W3 camera",
            Self::W4 => "W4 sparse",
            Self::W5 => "W5 agents",
            Self::W6 => "W6 sensors",
            Self::W7 => "W7 region reach",
            Self::W7Sight => "W7 region sight",
            Self::W7Camera => "W7 region camera",
            Self::W7Lidar => "W7 region LiDAR",
            Self::W9 => "W9 shaped region reach",
            Self::W9Sight => "W9 shaped region sight",
            Self::W9Camera => "W9 shaped region camera",
        }
    }

    /// Parses `w1` ... `w6`, `w7`, `w7s`, `w7c`, `w7l`, `w9`, `w9s`, `w9c` (any case).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|w| w.key().eq_ignore_ascii_case(s.trim()))
    }
}

/// Which query a workload asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Query {
    /// `voxel_raycast_with` / `raycast_batch` with the default options.
    Raycast,
    /// `line_of_sight` / `line_of_sight_batch` with the default options.
    LineOfSight,
}

/// A workload: its world, its rays and the loaded box.
#[derive(Debug)]
pub struct Workload {
    /// Which workload.
    pub id: WorkloadId,
    /// The voxcast world.
    pub world: VoxelWorld,
    /// The rays (for W3, the camera's rays row by row from the top).
    pub rays: Vec<VoxelRay>,
    /// W3's camera (the GPU makes the rays itself from it).
    pub camera: Option<Camera>,
    /// Raycast or line of sight.
    pub query: Query,
    /// W5's agents and the pairs asked (`rays[i]` is pair `i`'s segment); empty otherwise.
    pub agents: Vec<Agent>,
    /// W5's pairs of agents (indices into `agents`); empty otherwise.
    pub pairs: Vec<[u32; 2]>,
    /// W6's poses (`rays[a * 64 + k]` is ray `k` of pose `a`); empty otherwise.
    pub poses: Vec<SensorPose>,
}

impl Workload {
    /// Builds workload `id` with `n` rays (W1, W2, W4) or a `camera.0 × camera.1` camera
    /// (W3); W5 and W6 have their own size (2,000 agents).
    pub fn new(id: WorkloadId, n: usize, camera: (u32, u32)) -> Self {
        let (mut agents, mut pairs, mut poses) = (Vec::new(), Vec::new(), Vec::new());
        let (world, rays, cam, query) = match id {
            WorkloadId::W1 => {
                let t = Terrain::STANDARD;
                (t.build(), t.reach_rays(n, SEED_W1), None, Query::Raycast)
            }
            WorkloadId::W2 => {
                let t = Terrain::STANDARD;
                (
                    t.build(),
                    t.sight_segments(n, 64.0, SEED_W2),
                    None,
                    Query::LineOfSight,
                )
            }
            WorkloadId::W3 => {
                let t = Terrain::STANDARD;
                let cam = t.camera(camera.0, camera.1);
                let rays = cam
                    .rays()
                    .unwrap_or_else(|e| panic!("standard camera rays are valid: {e}"));
                (t.build(), rays, Some(cam), Query::Raycast)
            }
            WorkloadId::W4 => {
                let s = Sparse::STANDARD;
                (s.build(), s.rays(n, SEED_W4), None, Query::Raycast)
            }
            WorkloadId::W5 => {
                let t = Terrain::STANDARD;
                agents = t.agents(W5_AGENTS, SEED_W5);
                // Pairs with a segment (not two agents on the same spot).
                let segs: Vec<([u32; 2], VoxelRay)> = pairs_within(&agents, W5_RADIUS)
                    .into_iter()
                    .filter_map(|p| agent_segment(&agents, p).ok().map(|s| (p, s)))
                    .collect();
                pairs = segs.iter().map(|(p, _)| *p).collect();
                let rays = segs.into_iter().map(|(_, s)| s).collect();
                (t.build(), rays, None, Query::LineOfSight)
            }
            WorkloadId::W6 => {
                let t = Terrain::STANDARD;
                let mut rng = SplitMix64::new(SEED_W6);
                poses = t
                    .agents(W6_AGENTS, SEED_W6)
                    .iter()
                    .map(|a| {
                        let (p, sub) = a.eye().unwrap_or_else(|e| unreachable!("an eye: {e}"));
                        let (yaw, pitch) = (
                            rng.next_f32() * std::f32::consts::TAU,
                            -0.3 * rng.next_f32(),
                        );
                        SensorPose::from_yaw_pitch(p, sub, yaw, pitch)
                    })
                    .collect();
                let rig = w6_rig();
                let rays = poses
                    .iter()
                    .flat_map(|p| (0..rig.len()).map(move |k| (p, k)))
                    .map(|(p, k)| {
                        p.ray(&rig, k)
                            .unwrap_or_else(|e| unreachable!("a valid pose: {e}"))
                    })
                    .collect();
                (t.build(), rays, None, Query::Raycast)
            }
            WorkloadId::W7
            | WorkloadId::W7Sight
            | WorkloadId::W7Camera
            | WorkloadId::W7Lidar
            | WorkloadId::W9
            | WorkloadId::W9Sight
            | WorkloadId::W9Camera => {
                let (cubes, eyes, (eye, target)) = region_world();
                let shaped = matches!(
                    id,
                    WorkloadId::W9 | WorkloadId::W9Sight | WorkloadId::W9Camera
                );
                let world = if shaped { shaped_region() } else { cubes };
                let mut rng = SplitMix64::new(SEED_W7);
                let (rays, cam, query) = match id {
                    WorkloadId::W7 | WorkloadId::W9 => (
                        eyes.iter()
                            .take(n)
                            .filter_map(|&p| {
                                VoxelRay::new(p, Vec3::new(0.5, 0.62, 0.5), rng.unit_vector(), 5.0)
                                    .ok()
                            })
                            .collect(),
                        None,
                        Query::Raycast,
                    ),
                    WorkloadId::W7Lidar => (lidar_rays(&eyes, n), None, Query::Raycast),
                    WorkloadId::W7Sight | WorkloadId::W9Sight => {
                        let mut segs = Vec::new();
                        let lift = Vec3::new(0.5, 1.0, 0.5);
                        for (k, &a) in eyes.iter().enumerate() {
                            if segs.len() >= n {
                                break;
                            }
                            // The next eyes within 64 voxels of this one.
                            for &b in eyes[k + 1..].iter().take(64) {
                                if let Ok(s) = VoxelRay::between(a, lift, b, lift)
                                    && s.max_distance <= 64.0
                                {
                                    segs.push(s);
                                    break;
                                }
                            }
                        }
                        (segs, None, Query::LineOfSight)
                    }
                    _ => {
                        let cam = Camera::look_at(
                            eye,
                            Vec3::splat(0.5),
                            target,
                            Vec3::splat(0.5),
                            60.0,
                            camera.0,
                            camera.1,
                            700.0,
                        )
                        .unwrap_or_else(|e| panic!("the region's camera: {e}"));
                        let rays = cam
                            .rays()
                            .unwrap_or_else(|e| panic!("camera rays are valid: {e}"));
                        (rays, Some(cam), Query::Raycast)
                    }
                };
                (world, rays, cam, query)
            }
        };
        Self {
            id,
            world,
            rays,
            camera: cam,
            query,
            agents,
            pairs,
            poses,
        }
    }
}

/// W7's LiDAR rays: about `n` (whole robots of 115,200 rays, 1 to 8 robots) from the first
/// eyes, lifted one voxel (2.5 voxels above the ground), channel by channel.
fn lidar_rays(eyes: &[WorldPos], n: usize) -> Vec<VoxelRay> {
    let (channels, azimuths) = (64, 1_800);
    let dirs: Vec<Vec3> = (0..channels)
        .flat_map(|c| (0..azimuths).map(move |a| (c, a)))
        .map(|(c, a)| {
            let e = (-24.9 + 26.9 * f64::from(c) / 63.0_f64).to_radians();
            let h = (f64::from(a) * 0.2).to_radians();
            Vec3::new(
                (-e.cos() * h.sin()) as f32,
                e.sin() as f32,
                (-e.cos() * h.cos()) as f32,
            )
        })
        .collect();
    let robots = (n / dirs.len()).clamp(1, 8);
    eyes.iter()
        .take(robots)
        .flat_map(|&p| {
            let eye = WorldPos::new(p.x, p.y + 1, p.z);
            dirs.iter().map(move |&d| {
                VoxelRay::new(eye, Vec3::splat(0.5), d, 120.0)
                    .unwrap_or_else(|e| panic!("a LiDAR ray: {e}"))
            })
        })
        .collect()
}

/// The variable that names W7's region file where Cargo is not at hand (a machine that runs
/// the GPU bundle): fastanvil's `resources/1.19.4.mca`.
pub const REGION_VAR: &str = "VOXCAST_W7_REGION";

/// W7's region file: [`REGION_VAR`] where it is set, else fastanvil's package's
/// `resources/1.19.4.mca` as `cargo metadata` finds it; `None` where neither is there.
#[must_use]
pub fn region_path() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os(REGION_VAR) {
        return Some(p.into());
    }
    let ran = std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ran {
        return None;
    }
    let path = crate::common::package_dir(env!("CARGO_MANIFEST_DIR"), "fastanvil")
        .join("resources/1.19.4.mca");
    path.is_file().then_some(path)
}

/// W7's world: fastanvil's 1.19.4 region at the origin (block names to ids, every non-air
/// block stops rays), eye voxels on the ground of random columns (the voxel above the first
/// stopping voxel straight down; 40,000 of them, in a fixed order), and the camera's eye and
/// target (above one corner, looking at the center's ground).
///
/// # Panics
/// When fastanvil's package or its region cannot be read.
pub fn region_world() -> (VoxelWorld, Vec<WorldPos>, (WorldPos, WorldPos)) {
    use voxcast_import::{Palette, anvil};
    let path = region_path().unwrap_or_else(|| {
        panic!("W7's region: set {REGION_VAR} or run with Cargo (fastanvil's package)")
    });
    let bytes =
        std::fs::read(&path).unwrap_or_else(|e| panic!("W7's region {}: {e}", path.display()));
    let world = anvil::region(
        &bytes,
        WorldPos::ZERO,
        &mut Palette::new(),
        anvil::Names::Plain,
    )
    .unwrap_or_else(|e| panic!("the 1.19.4 region imports: {e}"));
    let (lo, hi) = world
        .loaded_chunk_bounds()
        .unwrap_or_else(|| panic!("the region holds chunks"));
    let (x0, z0) = (lo.x * 32, lo.z * 32);
    let (w, d) = ((hi.x - lo.x + 1) * 32, (hi.z - lo.z + 1) * 32);
    let top = hi.y * 32 + 31;
    let ground = |x: i128, z: i128| {
        VoxelRay::new(
            WorldPos::new(x, top, z),
            Vec3::splat(0.5),
            Vec3::NEG_Y,
            600.0,
        )
        .ok()
        .and_then(|r| voxcast::voxel_raycast(&r, &world))
        .map(|h| h.voxel_pos.y)
    };
    let mut rng = SplitMix64::new(SEED_W7);
    let mut eyes = Vec::new();
    while eyes.len() < 40_000 {
        let x = x0 + i128::from(rng.below(w as u64));
        let z = z0 + i128::from(rng.below(d as u64));
        if let Some(y) = ground(x, z) {
            eyes.push(WorldPos::new(x, y + 1, z));
        }
    }
    let center = (x0 + w / 2, z0 + d / 2);
    let cy = ground(center.0, center.1).unwrap_or(64);
    let camera = (
        WorldPos::new(x0 + 20, cy + 70, z0 + 20),
        WorldPos::new(center.0, cy, center.1),
    );
    (world, eyes, camera)
}

/// W9's world: [`region_world`]'s region with its block states' properties, each with its
/// shape (`voxcast_import::shapes::block_shape`); every non-air block stops rays, as in W7.
///
/// # Panics
/// As [`region_world`].
pub fn shaped_region() -> VoxelWorld {
    use voxcast_import::{Palette, anvil, shapes::block_shape};
    let path = region_path().unwrap_or_else(|| {
        panic!("W9's region: set {REGION_VAR} or run with Cargo (fastanvil's package)")
    });
    let bytes =
        std::fs::read(&path).unwrap_or_else(|e| panic!("W9's region {}: {e}", path.display()));
    let mut palette = Palette::new();
    let mut world = anvil::region(
        &bytes,
        WorldPos::ZERO,
        &mut palette,
        anvil::Names::WithProperties,
    )
    .unwrap_or_else(|e| panic!("the 1.19.4 region imports: {e}"));
    palette
        .apply_shapes(&mut world, block_shape)
        .unwrap_or_else(|e| panic!("the preset's shapes are valid: {e}"));
    world
}

/// The loaded box of a world near the origin, in i32 voxels, `min..max` (max exclusive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Lowest voxel on each axis.
    pub min: [i32; 3],
    /// One past the highest voxel on each axis.
    pub max: [i32; 3],
}

impl Bounds {
    /// The loaded box of `world` (which must be loaded and lie within i32).
    pub fn of(world: &VoxelWorld) -> Self {
        let b = world
            .loaded_bounds()
            .unwrap_or_else(|| panic!("the workload world is not empty"));
        let c = |v: i128| {
            i32::try_from(v).unwrap_or_else(|_| panic!("workload worlds lie near the origin"))
        };
        Self {
            min: [c(b.min.x), c(b.min.y), c(b.min.z)],
            max: [c(b.max.x) + 1, c(b.max.y) + 1, c(b.max.z) + 1],
        }
    }

    /// The box's size in voxels.
    fn dims(&self) -> [i32; 3] {
        [0, 1, 2].map(|a| self.max[a] - self.min[a])
    }

    /// Whether a ray stepping by `step` (per axis -1, 0 or +1) from voxel `v` can never come
    /// (back) into the box: `v` lies outside on an axis along which the ray does not move
    /// towards the box. A straight ray that has left a box never returns, so a walk may stop.
    #[inline]
    pub fn left_for_good(&self, v: [i32; 3], step: [i32; 3]) -> bool {
        (0..3)
            .any(|a| (v[a] < self.min[a] && step[a] <= 0) || (v[a] >= self.max[a] && step[a] >= 0))
    }
}

/// What an engine says a ray hits: the voxel, or `None` for a miss (line of sight: clear).
pub type Answer = Option<[i32; 3]>;

/// A voxel near the origin as i32 coordinates.
#[inline]
fn voxel_i32(p: WorldPos) -> [i32; 3] {
    let c = |v: i128| i32::try_from(v).unwrap_or(i32::MAX);
    [c(p.x), c(p.y), c(p.z)]
}

/// The [`Answer`] of a voxcast raycast.
#[inline]
pub fn answer_of_outcome(o: &RaycastOutcome) -> Answer {
    o.hit().map(|h| voxel_i32(h.voxel_pos))
}

/// The [`Answer`] of a voxcast line of sight query.
#[inline]
pub fn answer_of_sight(o: &LineOfSight) -> Answer {
    match o {
        LineOfSight::Blocked(h) => Some(voxel_i32(h.voxel_pos)),
        LineOfSight::Clear | LineOfSight::Unknown { .. } | LineOfSight::Invalid(_) => None,
    }
}

/// Engine a: voxcast's CPU reference on one thread, one call per ray in a plain loop.
pub fn voxcast_one_thread(w: &Workload, rays: &[VoxelRay]) -> Vec<Answer> {
    match w.query {
        Query::Raycast => {
            let opts = RaycastOptions::default();
            rays.iter()
                .map(|r| answer_of_outcome(&voxel_raycast_with(r, &w.world, &opts)))
                .collect()
        }
        Query::LineOfSight => {
            let opts = LineOfSightOptions::default();
            rays.iter()
                .map(|r| answer_of_sight(&line_of_sight(r, &w.world, &opts)))
                .collect()
        }
    }
}

thread_local! {
    /// Engine b's output buffers, kept from one batch to the next as an engine calling every
    /// frame would keep them.
    static BATCH_OUT: std::cell::RefCell<(Vec<RaycastOutcome>, Vec<LineOfSight>)> =
        std::cell::RefCell::default();
}

/// Engine b: voxcast's CPU batch on all threads (rayon).
pub fn voxcast_batch(w: &Workload, rays: &[VoxelRay]) -> Vec<Answer> {
    BATCH_OUT.with_borrow_mut(|(outcomes, sights)| match w.query {
        Query::Raycast => {
            raycast_batch_into(rays, &w.world, &RaycastOptions::default(), outcomes);
            outcomes.iter().map(answer_of_outcome).collect()
        }
        Query::LineOfSight => {
            line_of_sight_batch_into(rays, &w.world, &LineOfSightOptions::default(), sights);
            sights.iter().map(answer_of_sight).collect()
        }
    })
}

/// Engine a′ (W3 only): voxcast's `raycast_camera` on one thread (a rayon pool of one), the
/// whole image of `camera`, into a buffer kept from one image to the next.
pub fn voxcast_camera_one_thread(w: &Workload, camera: &Camera) -> Vec<Answer> {
    thread_local! {
        static POOL: rayon::ThreadPool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap_or_else(|e| panic!("a one-thread rayon pool: {e}"));
    }
    POOL.with(|pool| {
        BATCH_OUT.with_borrow_mut(|(outcomes, _)| {
            pool.install(|| {
                raycast_camera_into(camera, &w.world, &RaycastOptions::default(), outcomes)
                    .unwrap_or_else(|e| panic!("the standard camera's image fits: {e}"));
            });
            outcomes.iter().map(answer_of_outcome).collect()
        })
    })
}

/// Calls `visit` with every non-air voxel of `world`, in chunk order.
fn for_each_solid(world: &VoxelWorld, mut visit: impl FnMut([i32; 3])) {
    for (cp, chunk) in world.chunks() {
        if chunk.is_empty() {
            continue;
        }
        let base = voxel_i32(WorldPos::new(cp.x * 32, cp.y * 32, cp.z * 32));
        for z in 0..32u8 {
            for y in 0..32u8 {
                for x in 0..32u8 {
                    if !chunk.get(LocalPos::new(x, y, z)).is_air() {
                        visit([
                            base[0] + i32::from(x),
                            base[1] + i32::from(y),
                            base[2] + i32::from(z),
                        ]);
                    }
                }
            }
        }
    }
}

/// The start point of a ray as an absolute f32 position, as the float peers need it. Exact
/// for the workloads' integer parts (< 2^24); the sum rounds like any f32 position does.
#[inline]
fn start_f32(r: &VoxelRay) -> [f32; 3] {
    [
        r.origin.x as f32 + r.sub_offset.x,
        r.origin.y as f32 + r.sub_offset.y,
        r.origin.z as f32 + r.sub_offset.z,
    ]
}

/// W8: `n` player-sized boxes ([`W8_HALF`]) standing on the standard terrain (their bottom
/// face flush on the ground or water, clear of the terrain around them), each moving 0.5 to 4
/// voxels in a random direction: three in four mostly horizontal (a walk or a jump), one in
/// four downwards (a fall).
#[must_use]
pub fn w8_casts(n: usize) -> (VoxelWorld, Vec<voxcast::BoxCast>) {
    let t = Terrain::STANDARD;
    let world = t.build();
    let mut rng = SplitMix64::new(SEED_W8);
    let clear = |a: &Agent| {
        let sub = Vec3::new(a.offset.x, W8_HALF.y, a.offset.z);
        voxcast::BoxCast::new(a.position, sub, W8_HALF, Vec3::Y, 0.0).is_ok_and(|c| {
            !matches!(
                voxcast::box_cast(&c, &world, &RaycastOptions::default()),
                voxcast::BoxCastOutcome::StartsInside { .. }
            )
        })
    };
    let casts = t
        .agents(2 * n, SEED_W8)
        .iter()
        .filter(|a| clear(a))
        .take(n)
        .enumerate()
        .filter_map(|(i, a)| {
            let yaw = rng.next_f32() * std::f32::consts::TAU;
            let y = if i % 4 == 3 {
                -0.3 - rng.next_f32()
            } else {
                rng.next_f32() * 0.8 - 0.3
            };
            let dir = Vec3::new(yaw.cos(), y, yaw.sin());
            let len = 0.5 + 3.5 * rng.next_f32();
            let sub = Vec3::new(a.offset.x, W8_HALF.y, a.offset.z);
            voxcast::BoxCast::new(a.position, sub, W8_HALF, dir, len).ok()
        })
        .collect();
    (world, casts)
}

/// The stopping voxels (non-air) of `world` that the box of `cast` can touch: those in the
/// box swept over its whole max distance, grown by a voxel. For the box oracle
/// ([`crate::boxes::contacts`]).
#[must_use]
pub fn box_solids_near(
    world: &VoxelWorld,
    cast: &voxcast::BoxCast,
) -> Vec<(WorldPos, voxcast::VoxelId)> {
    let reach = cast.body.half_extents + cast.direction.abs() * cast.max_distance + 2.0;
    let lo = |a: usize| cast.body.center.axis(a) - reach[a].ceil() as i128;
    let hi = |a: usize| cast.body.center.axis(a) + reach[a].ceil() as i128;
    let mut out = Vec::new();
    for z in lo(2)..=hi(2) {
        for y in lo(1)..=hi(1) {
            for x in lo(0)..=hi(0) {
                let p = WorldPos::new(x, y, z);
                if let Some(id) = world
                    .get_voxel(&p)
                    .filter(|id| *id != voxcast::VoxelId::AIR)
                {
                    out.push((p, id));
                }
            }
        }
    }
    out
}

/// Engine d: parry3d's `Voxels` shape holding the world's non-air voxels (voxel size 1).
pub struct ParryScene {
    voxels: Voxels,
    /// How many voxels it holds.
    pub solid_count: usize,
}

impl std::fmt::Debug for ParryScene {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParryScene")
            .field("solid_count", &self.solid_count)
            .finish_non_exhaustive()
    }
}

impl ParryScene {
    /// Builds `Voxels::new(Vector::splat(1.0), &coords)` from every non-air voxel of `world`.
    pub fn new(world: &VoxelWorld) -> Self {
        let mut coords = Vec::new();
        for_each_solid(world, |v| coords.push(IVector::new(v[0], v[1], v[2])));
        Self {
            voxels: Voxels::new(Vector::splat(1.0), &coords),
            solid_count: coords.len(),
        }
    }

    /// Casts one ray: solid, max time of impact = max distance (the direction is unit length,
    /// so time of impact is distance). The hit voxel comes from the intersection's `subshape`.
    #[inline]
    pub fn cast(&self, r: &VoxelRay) -> Answer {
        let o = start_f32(r);
        let ray = Ray::new(
            Vector::new(o[0], o[1], o[2]),
            Vector::new(r.direction.x, r.direction.y, r.direction.z),
        );
        let hit = self
            .voxels
            .cast_local_ray_and_get_normal(&ray, r.max_distance, true)?;
        let key = self.voxels.voxel_at_flat_id(hit.subshape)?;
        Some([key.x, key.y, key.z])
    }

    /// Casts every ray in a plain loop (one thread).
    pub fn cast_all(&self, rays: &[VoxelRay]) -> Vec<Answer> {
        rays.iter().map(|r| self.cast(r)).collect()
    }

    /// Casts one box with `cast_shapes`: a `Cuboid` of the box's half extents at its center
    /// (in f32), moving along its direction against the `Voxels` at rest, max time of impact =
    /// max distance (a unit direction, so time of impact is distance). The time of impact, or
    /// `None` for no impact.
    #[inline]
    pub fn box_cast(&self, c: &voxcast::BoxCast) -> Option<f32> {
        let center = Vector::new(
            c.body.center.x as f32 + c.body.center_offset.x,
            c.body.center.y as f32 + c.body.center_offset.y,
            c.body.center.z as f32 + c.body.center_offset.z,
        );
        let h = c.body.half_extents;
        let cuboid = Cuboid::new(Vector::new(h.x, h.y, h.z));
        let d = c.direction;
        let hit = cast_shapes(
            &Pose::IDENTITY,
            Vector::ZERO,
            &self.voxels,
            &Pose::from_translation(center),
            Vector::new(d.x, d.y, d.z),
            &cuboid,
            ShapeCastOptions::with_max_time_of_impact(c.max_distance),
        )
        .ok()
        .flatten()?;
        Some(hit.time_of_impact)
    }
}

/// Engine e's world: one occupancy bit per voxel of the loaded box (x fastest, then y, then
/// z); everything outside the box is air.
#[derive(Debug)]
pub struct OccupancyGrid {
    bounds: Bounds,
    dims: [i32; 3],
    bits: Vec<u64>,
}

impl OccupancyGrid {
    /// Flattens `world`'s non-air voxels into bits.
    pub fn new(world: &VoxelWorld) -> Self {
        let bounds = Bounds::of(world);
        let dims = bounds.dims();
        let len = dims.iter().map(|&d| d as usize).product::<usize>();
        let mut grid = Self {
            bounds,
            dims,
            bits: vec![0; len.div_ceil(64)],
        };
        for_each_solid(world, |v| {
            let i = grid
                .index(v)
                .unwrap_or_else(|| unreachable!("a loaded voxel lies in the loaded box"));
            grid.bits[i / 64] |= 1 << (i % 64);
        });
        grid
    }

    #[inline]
    fn index(&self, v: [i32; 3]) -> Option<usize> {
        let l = [0, 1, 2].map(|a| v[a].wrapping_sub(self.bounds.min[a]));
        if (0..3).any(|a| l[a] < 0 || l[a] >= self.dims[a]) {
            return None;
        }
        Some(
            l[0] as usize
                + self.dims[0] as usize * (l[1] as usize + self.dims[1] as usize * l[2] as usize),
        )
    }

    /// Whether voxel `v` is solid (outside the box: no).
    #[inline]
    pub fn is_solid(&self, v: [i32; 3]) -> bool {
        self.index(v)
            .is_some_and(|i| self.bits[i / 64] >> (i % 64) & 1 != 0)
    }

    /// Engine e: walks `voxel_traversal::VoxelRaycast` from the ray's start to
    /// `start + direction · max_distance` and stops at the first solid voxel. The walk also
    /// stops when it has left the box for good (voxcast clips to the loaded box too), and after
    /// the number of voxels a 6-connected walk between the end voxels has, because the crate's
    /// iterator only ends when it lands exactly on the end voxel and float drift could make it
    /// walk past.
    #[inline]
    pub fn cast(&self, r: &VoxelRay) -> Answer {
        let s = start_f32(r);
        let d = r.direction;
        let e = [
            s[0] + d.x * r.max_distance,
            s[1] + d.y * r.max_distance,
            s[2] + d.z * r.max_distance,
        ];
        let step = [d.x, d.y, d.z].map(|c| {
            if c > 0.0 {
                1
            } else if c < 0.0 {
                -1
            } else {
                0
            }
        });
        let cap = (0..3)
            .map(|a| (e[a].floor() - s[a].floor()).abs() as usize)
            .sum::<usize>()
            + 1;
        for ((x, y, z), _normal) in voxel_traversal::VoxelRaycast::new(s, e).take(cap) {
            let v = [x, y, z];
            if self.is_solid(v) {
                return Some(v);
            }
            if self.bounds.left_for_good(v, step) {
                return None;
            }
        }
        None
    }

    /// Casts every ray in a plain loop (one thread).
    pub fn cast_all(&self, rays: &[VoxelRay]) -> Vec<Answer> {
        rays.iter().map(|r| self.cast(r)).collect()
    }
}

/// Engine c: voxcast's GPU batch (`voxcast::gpu`), on the adapter the environment picks.
#[cfg(feature = "gpu")]
pub mod gpu {
    use super::{Answer, Query, Workload, answer_of_outcome, answer_of_sight};
    use std::cell::{Cell, RefCell};
    use voxcast::agent_segment;
    use voxcast::gpu::{
        AgentPairs, BatchStats, CameraImage, GpuAgents, GpuRaycaster, GpuSensorRig, GpuWorld,
        PairsWithin, Rays, SensorSweep, Sightlines, Visibility,
    };
    use voxcast::{
        LineOfSight, LineOfSightOptions, RaycastOptions, RaycastOutcome, SensorReadings, VoxelRay,
        WindowOutcome, WindowRay,
    };

    /// A GPU device shared by every workload, with output buffers kept from one batch to the
    /// next as an engine calling every frame would keep them.
    pub struct GpuEngine {
        gpu: GpuRaycaster,
        outcomes: RefCell<Vec<RaycastOutcome>>,
        sights: RefCell<Vec<LineOfSight>>,
        windowed: RefCell<Vec<WindowOutcome>>,
        /// W5's agents on the GPU, updated on every call as a game does every frame.
        agents: RefCell<Option<GpuAgents>>,
        /// W6's rig on the GPU, uploaded once.
        rig: RefCell<Option<GpuSensorRig>>,
        readings: RefCell<SensorReadings>,
        visibility: RefCell<Visibility>,
        visible: RefCell<Vec<[u32; 2]>>,
        /// What the last batch cost.
        stats: Cell<BatchStats>,
    }

    /// The answer standing for "blocked" where a batch's bits do not say by what.
    pub const BLOCKED: [i32; 3] = [i32::MIN; 3];

    impl std::fmt::Debug for GpuEngine {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("GpuEngine").finish_non_exhaustive()
        }
    }

    /// A workload's world uploaded to the GPU.
    #[derive(Debug)]
    pub struct GpuScene {
        world: GpuWorld,
    }

    impl GpuEngine {
        /// Opens the adapter chosen by the environment (`WGPU_BACKEND`, `WGPU_ADAPTER_NAME`).
        /// The error says why there is none.
        pub fn new() -> Result<Self, String> {
            Self::with_ray_setup(voxcast::gpu::RaySetup::Auto)
        }

        /// [`GpuEngine::new`] with uploaded rays set up where `ray_setup` says.
        pub fn with_ray_setup(ray_setup: voxcast::gpu::RaySetup) -> Result<Self, String> {
            GpuRaycaster::new_blocking(voxcast::gpu::GpuConfig {
                ray_setup,
                ..Default::default()
            })
            .map(|gpu| Self {
                gpu,
                outcomes: RefCell::default(),
                sights: RefCell::default(),
                windowed: RefCell::default(),
                agents: RefCell::default(),
                rig: RefCell::default(),
                readings: RefCell::default(),
                visibility: RefCell::default(),
                visible: RefCell::default(),
                stats: Cell::default(),
            })
            .map_err(|e| format!("no adapter: {e}"))
        }

        /// The raycaster itself.
        pub fn raycaster(&self) -> &GpuRaycaster {
            &self.gpu
        }

        /// The adapter, for the report.
        pub fn adapter(&self) -> String {
            let info = self.gpu.adapter_info();
            let setup = if self.gpu.setup().rays_set_up_in_shader {
                "in the shader"
            } else {
                "on the host"
            };
            format!(
                "{} [{:?}], uploaded rays set up {setup}",
                self.gpu.adapter_summary(),
                info.device_type
            )
        }

        /// What the last batch cost (kernel time, host time, bytes each way).
        pub fn last_stats(&self) -> voxcast::gpu::BatchStats {
            self.stats.get()
        }

        /// W5 through the agent call: the agents' eyes uploaded, then one visibility batch
        /// for every pair (a bit each); the answer of a visible pair is `None` (clear), of the
        /// others `Some` of an unknown voxel (the bits do not say what blocks).
        /// Also returns the seconds the eyes' upload took.
        pub fn agents(&self, scene: &GpuScene, w: &Workload) -> Result<(Vec<Answer>, f64), String> {
            let err = |e: voxcast::gpu::GpuError| e.to_string();
            let t = std::time::Instant::now();
            let mut agents = self.agents.borrow_mut();
            match agents.as_mut() {
                Some(a) => a.update(&w.agents, &scene.world).map_err(err)?,
                None => {
                    *agents = Some(
                        self.gpu
                            .upload_agents(&w.agents, &scene.world)
                            .map_err(err)?,
                    );
                }
            }
            let on_gpu = agents.as_ref().expect("uploaded above");
            let upload = t.elapsed().as_secs_f64();
            let query = AgentPairs {
                agents: on_gpu,
                pairs: &w.pairs,
                outcomes: false,
            };
            let mut v = self.visibility.borrow_mut();
            let stats = self
                .gpu
                .cast_into(query, &scene.world, &LineOfSightOptions::default(), &mut v)
                .map_err(err)?;
            self.stats.set(stats);
            let answers = (0..v.len())
                .map(|i| if v.visible(i) { None } else { Some(BLOCKED) })
                .collect();
            Ok((answers, upload))
        }

        /// W6 through the sensor call: the rig uploaded once (not timed), then every ray of it
        /// from every pose in one call, a word each (the distance). The answer of a hit is
        /// `Some` of an unknown voxel (the words do not say which), of a miss `None`.
        pub fn sensors(&self, scene: &GpuScene, w: &Workload) -> Result<Vec<Answer>, String> {
            let err = |e: voxcast::gpu::GpuError| e.to_string();
            let mut rig = self.rig.borrow_mut();
            if rig.is_none() {
                *rig = Some(self.gpu.upload_rig(&super::w6_rig()).map_err(err)?);
            }
            let on_gpu = rig.as_ref().expect("uploaded above");
            let mut readings = self.readings.borrow_mut();
            let query = SensorSweep {
                rig: on_gpu,
                poses: &w.poses,
                outcomes: false,
            };
            let stats = self
                .gpu
                .cast_into(
                    query,
                    &scene.world,
                    &RaycastOptions::default(),
                    &mut readings,
                )
                .map_err(err)?;
            self.stats.set(stats);
            Ok(readings
                .distances()
                .iter()
                .map(|d| d.is_finite().then_some(BLOCKED))
                .collect())
        }

        /// W6 through the plain batch, with what its user does first: every ray of every pose
        /// built on the host (`SensorPose::ray`). Also returns the seconds spent building them.
        pub fn rays_then_raycast(
            &self,
            scene: &GpuScene,
            w: &Workload,
        ) -> Result<(Vec<Answer>, f64), String> {
            let t = std::time::Instant::now();
            let rig = super::w6_rig();
            let rays: Vec<VoxelRay> = w
                .poses
                .iter()
                .flat_map(|p| (0..rig.len()).map(move |k| (p, k)))
                .map(|(p, k)| p.ray(&rig, k).map_err(|e| e.to_string()))
                .collect::<Result<_, _>>()?;
            let built = t.elapsed().as_secs_f64();
            Ok((self.run(scene, w, &rays)?, built))
        }

        /// W5 through the plain line-of-sight batch, with what its user does first: each
        /// pair's segment built on the host (`VoxelRay::between`, through `agent_segment`).
        /// Also returns the seconds spent building the segments.
        pub fn segments_then_sight(
            &self,
            scene: &GpuScene,
            w: &Workload,
        ) -> Result<(Vec<Answer>, f64), String> {
            let t = std::time::Instant::now();
            let segs: Vec<VoxelRay> = w
                .pairs
                .iter()
                .map(|&p| agent_segment(&w.agents, p).map_err(|e| e.to_string()))
                .collect::<Result<_, _>>()?;
            let built = t.elapsed().as_secs_f64();
            Ok((self.run(scene, w, &segs)?, built))
        }

        /// W5 through `visible_pairs_within`: the pairs found on the host, then one agent
        /// call; the agents' eyes uploaded first. Returns the visible pairs and the seconds
        /// the eyes' upload took.
        pub fn visible_pairs(
            &self,
            scene: &GpuScene,
            w: &Workload,
        ) -> Result<(Vec<[u32; 2]>, f64), String> {
            let err = |e: voxcast::gpu::GpuError| e.to_string();
            let t = std::time::Instant::now();
            let agents = self
                .gpu
                .upload_agents(&w.agents, &scene.world)
                .map_err(err)?;
            let upload = t.elapsed().as_secs_f64();
            let query = PairsWithin {
                agents: &agents,
                radius: super::W5_RADIUS,
            };
            let mut visible = self.visible.borrow_mut();
            let stats = self
                .gpu
                .cast_into(
                    query,
                    &scene.world,
                    &LineOfSightOptions::default(),
                    &mut visible,
                )
                .map_err(err)?;
            self.stats.set(stats);
            Ok((visible.clone(), upload))
        }

        /// `rays` relative to the scene's window, as a caller that keeps positions that way
        /// has them (for [`GpuEngine::run_window`]).
        pub fn window_rays(&self, scene: &GpuScene, rays: &[VoxelRay]) -> Vec<WindowRay> {
            let origin = scene.world.window_origin();
            rays.iter()
                .map(|r| WindowRay::from_voxel_ray(r, origin).expect("rays near the window"))
                .collect()
        }

        /// [`GpuEngine::run`] with rays given relative to the window (`Rays` and `Sightlines` of
        /// window rays), answered relative to it.
        pub fn run_window(
            &self,
            scene: &GpuScene,
            w: &Workload,
            rays: &[WindowRay],
        ) -> Result<Vec<Answer>, String> {
            let err = |e: voxcast::gpu::GpuError| e.to_string();
            let world = &scene.world;
            let mut out = self.windowed.borrow_mut();
            let stats = match w.query {
                Query::LineOfSight => {
                    let los = LineOfSightOptions::default();
                    self.gpu.cast_into(Sightlines(rays), world, &los, &mut out)
                }
                Query::Raycast => {
                    self.gpu
                        .cast_into(Rays(rays), world, &RaycastOptions::default(), &mut out)
                }
            }
            .map_err(err)?;
            self.stats.set(stats);
            let origin = world.window_origin();
            Ok(out
                .iter()
                .map(|o| {
                    o.to_outcome(origin)
                        .as_ref()
                        .and_then(super::answer_of_outcome)
                })
                .collect())
        }

        /// Uploads a workload's world.
        pub fn upload(&self, w: &Workload) -> Result<GpuScene, String> {
            self.gpu
                .upload_world(&w.world)
                .map(|world| GpuScene { world })
                .map_err(|e| e.to_string())
        }

        /// Answers every ray of `rays` (read back to the host). For W3 with all of the
        /// workload's rays, the shader makes the camera rays itself (`raycast_camera`).
        pub fn run(
            &self,
            scene: &GpuScene,
            w: &Workload,
            rays: &[VoxelRay],
        ) -> Result<Vec<Answer>, String> {
            let err = |e: voxcast::gpu::GpuError| e.to_string();
            let (world, opts) = (&scene.world, RaycastOptions::default());
            let mut outcomes = self.outcomes.borrow_mut();
            let stats = match (w.query, &w.camera) {
                (Query::LineOfSight, _) => {
                    let mut sights = self.sights.borrow_mut();
                    let los = LineOfSightOptions::default();
                    let stats = self
                        .gpu
                        .cast_into(Sightlines(rays), world, &los, &mut sights)
                        .map_err(err)?;
                    self.stats.set(stats);
                    return Ok(sights.iter().map(answer_of_sight).collect());
                }
                (Query::Raycast, Some(cam)) if rays.len() == w.rays.len() => {
                    self.gpu
                        .cast_into(CameraImage(cam), world, &opts, &mut outcomes)
                }
                (Query::Raycast, _) => self.gpu.cast_into(Rays(rays), world, &opts, &mut outcomes),
            }
            .map_err(err)?;
            self.stats.set(stats);
            Ok(outcomes.iter().map(answer_of_outcome).collect())
        }
    }
}
