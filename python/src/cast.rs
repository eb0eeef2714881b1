//! The batch calls, written once for both devices: a [`Target`] is the CPU reference over a
//! world, or a GPU raycaster over that world's upload. Inputs arrive as numpy views; answers
//! leave as [`Columns`]. Each call runs without the GIL.

use numpy::ndarray::{ArrayView1, ArrayView2};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use rayon::prelude::*;
use voxcast::gpu::{
    AgentPairs, CameraImage, GpuRaycaster, GpuSensorRig, GpuWorld, PairsWithin, PendingBatch,
    Query, Rays, SensorSweep, Sightlines,
};
use voxcast::{
    Agent, Camera, LidarEffects, LineOfSightOptions, RayError, RaycastOptions, RaycastOutcome,
    SensorPose, SensorReadings, SensorRig, VoxelRay, VoxelWorld, WorldPos,
};

use crate::batch::{self, BadRay, Columns};

/// Rays a task of the CPU's `raycast` casts together: several rows of a camera's pixels or a
/// LiDAR's channels, so that runs of rays from one eye sort into groups of nearby directions.
const SWEPT_BLOCK: usize = 4096;

/// Image rows a task of the CPU's camera casts together: one band of the camera's `8×8` tiles.
const CAMERA_BAND: u32 = 8;

/// Rows whose input was bad, with why, in row order.
type BadRows = Vec<(usize, BadRay)>;

/// The readings of a rig of one or more parts from every pose, looked up by agent and ray of
/// the whole rig.
struct RigReadings<'r> {
    rig: &'r [SensorRig],
    /// Per part, its readings band after band of poses (see [`sense_band`]).
    parts: Vec<Vec<SensorReadings>>,
    /// Poses a band of each part holds (the last band may hold fewer).
    band_poses: Vec<usize>,
    /// Each ray of the rig as its part and its index there.
    place: Vec<(usize, usize)>,
}

impl RigReadings<'_> {
    /// Ray `k`'s outcome from agent `a`.
    fn outcome(&self, a: usize, k: usize) -> RaycastOutcome {
        let (p, r) = self.place[k];
        let band = self.band_poses[p];
        self.parts[p]
            .get(a / band)
            .and_then(SensorReadings::outcomes)
            .and_then(|o| o.get(a % band * self.rig[p].len() + r))
            .copied()
            .unwrap_or(RaycastOutcome::Invalid(RayError::BadRotation))
    }

    /// The agents whose pose a part's sensor call refused, with why (an agent once a part).
    fn errors(&self) -> impl Iterator<Item = (usize, RayError)> + '_ {
        self.parts
            .iter()
            .zip(&self.band_poses)
            .flat_map(|(bands, &n)| {
                bands
                    .iter()
                    .enumerate()
                    .flat_map(move |(b, r)| r.errors().map(move |(a, e)| (b * n + a, e)))
            })
    }

    /// Ray `k` as the sensor call made it from `pose`; `None` for a bad pose.
    fn ray(&self, pose: &SensorPose, k: usize) -> Option<VoxelRay> {
        let (p, r) = self.place[k];
        pose.ray(&self.rig[p], r).ok()
    }
}

/// Beams a task of a LiDAR scan's effects computes.
const LIDAR_BLOCK: usize = 1024;

/// A LiDAR scan's answers, one row a beam, agent after agent (see [`Target::lidar`]).
pub(crate) struct LidarColumns {
    /// `HIT` where a return came back; else `INVALID` (a bad pose), `UNLOADED` (a sub-ray
    /// stopped at unloaded space) or `MISS`.
    pub(crate) status: Vec<u8>,
    pub(crate) ranges: Vec<f32>,
    pub(crate) points: Vec<f64>,
    pub(crate) intensity: Vec<f32>,
    pub(crate) id: Vec<u16>,
    /// The agents whose pose is bad, with why, in order.
    pub(crate) errors: Vec<(usize, String)>,
}

/// The pool the CPU's batches run on where the caller chose a thread count (`set_threads`);
/// rayon's global pool (one thread a core) otherwise.
static POOL: std::sync::RwLock<Option<std::sync::Arc<rayon::ThreadPool>>> =
    std::sync::RwLock::new(None);

/// Runs `f`, a batch of `n` rays, on the chosen pool; a batch of one block runs on the calling
/// thread, which saves waking another for it.
pub(crate) fn on_pool<R: Send>(n: usize, f: impl FnOnce() -> R + Send) -> R {
    if n <= batch::BLOCK {
        return f();
    }
    let pool = POOL.read().ok().and_then(|p| p.clone());
    match pool {
        Some(p) => p.install(f),
        None => f(),
    }
}

/// Ctrl-C's count: a CPU batch stops writing blocks once it moves (see [`interrupted`]).
static INTERRUPTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Rays from which a CPU batch runs on a helper thread while the calling thread watches for
/// Ctrl-C: smaller batches end within a few milliseconds anyway.
const WATCHED: usize = 1 << 16;

/// How often a watched batch's caller looks for Ctrl-C.
const WATCH: std::time::Duration = std::time::Duration::from_millis(20);

/// Ctrl-C's count now, for [`interrupted`].
pub(crate) fn interrupts() -> u64 {
    INTERRUPTS.load(std::sync::atomic::Ordering::Acquire)
}

/// Whether Ctrl-C came since `since` (a count from [`interrupts`]): the batch that took it
/// stops writing blocks, and its call raises `KeyboardInterrupt`.
pub(crate) fn interrupted(since: u64) -> bool {
    interrupts() != since
}

/// Runs `work`, a CPU batch of `n` rays, without the GIL. A large batch runs on a helper
/// thread while this one looks for Ctrl-C every [`WATCH`]: on Ctrl-C the batches casting on
/// the CPU skip their remaining blocks (see [`interrupted`]), this call waits for them to
/// end and raises `KeyboardInterrupt`; a batch from another Python thread stopped so raises it
/// too. Worlds are left as they were (batches only read them).
pub(crate) fn interruptible<R: Send>(
    py: Python<'_>,
    n: usize,
    work: impl FnOnce() -> R + Send,
) -> PyResult<R> {
    let since = interrupts();
    let out = if n < WATCHED {
        py.detach(work)
    } else {
        std::thread::scope(|s| -> PyResult<R> {
            let watcher = std::thread::current();
            let helper = s.spawn(move || {
                let out = work();
                watcher.unpark();
                out
            });
            while !helper.is_finished() {
                py.detach(|| std::thread::park_timeout(WATCH));
                if let Err(e) = py.check_signals() {
                    INTERRUPTS.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
                    // The batch stops at its next block.
                    let _ = py.detach(|| helper.join());
                    return Err(e);
                }
            }
            py.detach(|| helper.join())
                .map_err(|_| PyRuntimeError::new_err("a CPU batch panicked"))
        })?
    };
    if interrupted(since) {
        return Err(stopped());
    }
    Ok(out)
}

/// Rays (or segments, or sensor rays) a CPU call casts between looks for Ctrl-C where it is
/// not written in blocks.
const CPU_BAND: usize = 1 << 16;

/// The error of a CPU call that Ctrl-C stopped (see [`interruptible`]).
fn stopped() -> PyErr {
    pyo3::exceptions::PyKeyboardInterrupt::new_err("the batch was stopped by Ctrl-C")
}

/// `voxcast::agent_visibility` in bands of [`CPU_BAND`] pairs, Ctrl-C heard between them.
fn visibility_in_bands(
    agents: &[Agent],
    pairs: &[[u32; 2]],
    w: &VoxelWorld,
    opts: &LineOfSightOptions,
) -> PyResult<Vec<voxcast::LineOfSight>> {
    let since = interrupts();
    let mut seen = Vec::with_capacity(pairs.len());
    for band in pairs.chunks(CPU_BAND) {
        if interrupted(since) {
            return Err(stopped());
        }
        seen.extend(voxcast::agent_visibility(agents, band, w, opts));
    }
    Ok(seen)
}

/// Rays (or segments) a GPU batch of them sends up at a time/// Rays (or segments) a GPU batch of them sends up at a time: the band `GpuRaycaster::cast`
/// prepares on the host, so that host memory stays bounded.
const GPU_BAND: usize = 1 << 20;

/// Waits for `pending`, without the GIL, while Ctrl-C is looked for every [`WATCH`] (and at
/// once when a dispatch finishes): on Ctrl-C `KeyboardInterrupt` is raised at once and the
/// batch is dropped on a thread of its own (its dispatches in flight finish and their answers
/// are discarded; the raycaster and the world stay usable, later batches queued behind them).
fn wait_gpu<T: Send + 'static>(mut pending: PendingBatch<T>) -> PyResult<T> {
    use std::task::{Context, Poll, Wake, Waker};
    /// Wakes the waiting thread where a dispatch of the batch has finished.
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(answers) = std::pin::Pin::new(&mut pending).poll(&mut cx) {
            return answers.map_err(gpu_error);
        }
        std::thread::park_timeout(WATCH);
        if let Err(e) = Python::attach(|py| py.check_signals()) {
            // Dropping waits for the dispatches in flight: not on the caller's time.
            std::thread::spawn(move || drop(pending));
            return Err(e);
        }
    }
}

/// `query` cast on `g` against `w` and waited for ([`wait_gpu`]): `GpuRaycaster::cast`, with
/// Ctrl-C heard while the GPU runs.
fn gpu_cast<Q: Query<Answers: Send + 'static>>(
    g: &GpuRaycaster,
    query: Q,
    w: &GpuWorld,
    opts: &Q::Options,
) -> PyResult<Q::Answers> {
    wait_gpu(g.submit(query, w, opts).map_err(gpu_error)?)
}

/// `items` cast on `g` against `w` as `query` makes a batch of them, in bands of [`GPU_BAND`]
/// (the next band submitted while the last runs), each waited for as [`wait_gpu`] does.
fn gpu_bands<'a, I, A: Send + 'static, Q: Query<Answers = Vec<A>>>(
    g: &GpuRaycaster,
    items: &'a [I],
    query: impl Fn(&'a [I]) -> Q,
    w: &GpuWorld,
    opts: &Q::Options,
) -> PyResult<Vec<A>> {
    if items.len() <= GPU_BAND {
        return gpu_cast(g, query(items), w, opts);
    }
    let mut out = Vec::with_capacity(items.len());
    let mut last: Option<PendingBatch<Vec<A>>> = None;
    for band in items.chunks(GPU_BAND) {
        let next = g.submit(query(band), w, opts).map_err(gpu_error)?;
        if let Some(done) = last.replace(next) {
            match wait_gpu(done) {
                Ok(answers) => out.extend(answers),
                Err(e) => {
                    // The next band too is dropped on a thread of its own (see `wait_gpu`).
                    std::thread::spawn(move || drop(last));
                    return Err(e);
                }
            }
        }
    }
    if let Some(done) = last {
        out.extend(wait_gpu(done)?);
    }
    Ok(out)
}

/// Makes the CPU's batches run on `threads` threads (0: one a core, rayon's own pool).
pub(crate) fn set_threads(threads: usize) -> PyResult<()> {
    let pool = if threads == 0 {
        None
    } else {
        let p = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("voxcast-{i}"))
            .build()
            .map_err(|e| PyRuntimeError::new_err(format!("threads: {e}")))?;
        Some(std::sync::Arc::new(p))
    };
    *POOL
        .write()
        .map_err(|_| PyRuntimeError::new_err("threads: the pool's lock is poisoned"))? = pool;
    Ok(())
}

/// Where a batch is answered.
pub(crate) enum Target<'a> {
    /// The CPU reference, on every thread of rayon's pool.
    Cpu(&'a VoxelWorld),
    /// A GPU raycaster and the world as uploaded to it; the rigs uploaded there.
    Gpu(&'a GpuRaycaster, &'a GpuWorld),
}

fn gpu_error(e: voxcast::gpu::GpuError) -> PyErr {
    PyRuntimeError::new_err(format!("GPU: {e}"))
}

/// Checks that `a` is `(n, 3)`, naming it `name` in the error.
pub(crate) fn rows3<T>(a: &ArrayView2<'_, T>, name: &str) -> PyResult<usize> {
    if a.ncols() != 3 {
        return Err(PyValueError::new_err(format!(
            "{name}: shape (N, 3), not {:?}",
            a.shape()
        )));
    }
    Ok(a.nrows())
}

fn row3<T: Copy>(a: &ArrayView2<'_, T>, i: usize) -> [T; 3] {
    [a[(i, 0)], a[(i, 1)], a[(i, 2)]]
}

impl Target<'_> {
    fn rays(&self, rays: &[VoxelRay], opts: &RaycastOptions) -> PyResult<Vec<RaycastOutcome>> {
        match self {
            Target::Cpu(w) => Ok(voxcast::raycast_batch(rays, w, opts)),
            Target::Gpu(g, w) => gpu_bands(g, rays, Rays, w, opts),
        }
    }

    /// Raycasts from `origins` along `directions` for `max` voxels each, in `frame`.
    pub(crate) fn raycast(
        &self,
        frame: WorldPos,
        origins: ArrayView2<'_, f64>,
        directions: ArrayView2<'_, f32>,
        max: ArrayView1<'_, f32>,
        opts: &RaycastOptions,
    ) -> PyResult<Columns> {
        let n = rows3(&origins, "origins")?;
        if rows3(&directions, "directions")? != n || max.len() != n {
            return Err(PyValueError::new_err(format!(
                "directions and max_distance: one row per origin ({n}), not {} and {}",
                directions.nrows(),
                max.len()
            )));
        }
        let make = |i| batch::ray(frame, row3(&origins, i), row3(&directions, i), max[i]);
        Ok(match self {
            // A block's rays made, cast together (runs from one eye swept, as
            // `raycast_batch` does) and written: no batch-sized buffer in between. The query
            // checks each ray: a bad one is `Invalid` with `new`'s error.
            Target::Cpu(w) => Columns::filled_blocks(n, frame, SWEPT_BLOCK, |rows, s| {
                s.rays.clear();
                for i in rows.clone() {
                    let (o, d) = (row3(&origins, i), row3(&directions, i));
                    s.rays
                        .push(match batch::ray_for_query(frame, o, d, max[i]) {
                            Ok(ray) => ray,
                            Err(e) => {
                                s.bad.push((i - rows.start, e));
                                batch::stand_in()
                            }
                        });
                }
                voxcast::raycast_batch_serial_into(&s.rays, w, opts, &mut s.outcomes);
            }),
            Target::Gpu(..) => {
                let (rays, bad) = batch::built(n, make);
                Columns::of(frame, &self.rays(&rays, opts)?, &bad)
            }
        })
    }

    /// Every pixel of `camera`, row by row from the top (`raycast_camera`). On the CPU a task
    /// casts a band of 8 rows (the camera's tiles) and writes it in place.
    pub(crate) fn camera(
        &self,
        frame: WorldPos,
        camera: &Camera,
        opts: &RaycastOptions,
    ) -> PyResult<Columns> {
        let n = camera.width as usize * camera.height as usize;
        Ok(match self {
            Target::Cpu(w) => {
                let band = CAMERA_BAND as usize * camera.width as usize;
                Columns::filled_blocks(n, frame, band, |pixels, s| {
                    let y0 = (pixels.start / camera.width as usize) as u32;
                    let rows = y0..(y0 + CAMERA_BAND).min(camera.height);
                    // Errs only for an empty image, which `batch::camera` refuses; a row left
                    // unanswered would read as invalid (`Columns::filled_blocks`).
                    let _ =
                        voxcast::raycast_camera_rows_into(camera, rows, w, opts, &mut s.outcomes);
                })
            }
            Target::Gpu(g, w) => {
                let outcomes = gpu_cast(g, CameraImage(camera), w, opts)?;
                Columns::of(frame, &outcomes, &[])
            }
        })
    }

    /// Line of sight from each point of `a` to the point of `b` in the same row.
    pub(crate) fn line_of_sight(
        &self,
        frame: WorldPos,
        a: ArrayView2<'_, f64>,
        b: ArrayView2<'_, f64>,
        opts: &LineOfSightOptions,
    ) -> PyResult<Columns> {
        let n = rows3(&a, "a")?;
        if rows3(&b, "b")? != n {
            return Err(PyValueError::new_err(format!(
                "b: one row per row of a ({n}), not {}",
                b.nrows()
            )));
        }
        let make = |i| batch::segment(frame, row3(&a, i), row3(&b, i));
        Ok(match self {
            Target::Cpu(w) => Columns::filled(n, frame, |i| match make(i) {
                Ok(ray) => (voxcast::line_of_sight(&ray, w, opts).into(), None),
                Err(e) => (RaycastOutcome::Invalid(RayError::NanDirection), Some(e)),
            }),
            Target::Gpu(g, w) => {
                let (rays, bad) = batch::built(n, make);
                let answers = gpu_bands(g, &rays, Sightlines, w, opts)?;
                let outcomes: Vec<RaycastOutcome> = answers.into_iter().map(Into::into).collect();
                Columns::of(frame, &outcomes, &bad)
            }
        })
    }

    /// The poses of the rows of `poses` (`(A, 7)`: position, quaternion), a bad position
    /// standing in as a pose of zero rotation (its rays invalid), listed with why.
    fn poses(frame: WorldPos, poses: ArrayView2<'_, f64>) -> PyResult<(Vec<SensorPose>, BadRows)> {
        if poses.ncols() != 7 {
            return Err(PyValueError::new_err(format!(
                "poses: shape (A, 7) (x, y, z, qx, qy, qz, qw), not {:?}",
                poses.shape()
            )));
        }
        let mut bad_poses: Vec<(usize, BadRay)> = Vec::new();
        let poses: Vec<SensorPose> = (0..poses.nrows())
            .map(|i| {
                let q = glam::Quat::from_xyzw(
                    poses[(i, 3)] as f32,
                    poses[(i, 4)] as f32,
                    poses[(i, 5)] as f32,
                    poses[(i, 6)] as f32,
                );
                match batch::point(frame, row3(&poses, i)) {
                    Ok((voxel, sub)) => SensorPose::new(voxel, sub, q),
                    Err(e) => {
                        bad_poses.push((i, BadRay::Point(e)));
                        // A rotation of zero length: the agent's rays are invalid.
                        SensorPose::new(
                            WorldPos::ZERO,
                            glam::Vec3::ZERO,
                            glam::Quat::from_xyzw(0.0, 0.0, 0.0, 0.0),
                        )
                    }
                }
            })
            .collect();
        Ok((poses, bad_poses))
    }

    /// The readings, with outcomes, of each part of `rig` from every pose.
    fn readings<'r>(
        &self,
        rig: &'r [SensorRig],
        gpu_rigs: &[GpuSensorRig],
        poses: &[SensorPose],
        opts: &RaycastOptions,
    ) -> PyResult<RigReadings<'r>> {
        let mut parts = Vec::with_capacity(rig.len());
        let mut band_poses = Vec::with_capacity(rig.len());
        let since = interrupts();
        for (k, part) in rig.iter().enumerate() {
            match self {
                Target::Cpu(w) => {
                    // In bands of poses, so that Ctrl-C is heard between them.
                    let band = (CPU_BAND / part.len().max(1)).max(1);
                    let mut bands = Vec::with_capacity(poses.len().div_ceil(band));
                    for some in poses.chunks(band) {
                        if interrupted(since) {
                            return Err(stopped());
                        }
                        bands.push(voxcast::sense(part, some, w, opts, true));
                    }
                    parts.push(bands);
                    band_poses.push(band);
                }
                Target::Gpu(g, w) => {
                    let sweep = SensorSweep {
                        rig: &gpu_rigs[k],
                        poses,
                        outcomes: true,
                    };
                    parts.push(vec![gpu_cast(g, sweep, w, opts)?]);
                    band_poses.push(poses.len().max(1));
                }
            }
        }
        // Each ray of the rig (counted across its parts) as its part and its index there.
        let place = rig
            .iter()
            .enumerate()
            .flat_map(|(p, part)| (0..part.len()).map(move |r| (p, r)))
            .collect();
        Ok(RigReadings {
            rig,
            parts,
            band_poses,
            place,
        })
    }

    /// Every ray of `rig` from every pose: the answers agent after agent, each ray's point where
    /// it hit (NaN where it did not), and the agents whose pose is bad. `gpu_rigs` are the
    /// parts of `rig` uploaded to this target's raycaster (unused on the CPU).
    pub(crate) fn sense(
        &self,
        frame: WorldPos,
        rig: &[SensorRig],
        gpu_rigs: &[GpuSensorRig],
        poses: ArrayView2<'_, f64>,
        opts: &RaycastOptions,
    ) -> PyResult<(Columns, Vec<f64>)> {
        let (poses, bad_poses) = Self::poses(frame, poses)?;
        let agents = poses.len();
        let readings = self.readings(rig, gpu_rigs, &poses, opts)?;
        let per_agent = readings.place.len();
        let bad: rustc_hash::FxHashMap<usize, BadRay> = bad_poses.iter().copied().collect();
        let columns = Columns::filled(agents * per_agent, frame, |row| {
            let (a, k) = (row / per_agent, row % per_agent);
            (readings.outcome(a, k), bad.get(&a).copied())
        });
        let mut points = vec![f64::NAN; agents * per_agent * 3];
        // Where each hit lies, from the ray as the sensor call made it.
        points
            .par_chunks_mut(3 * per_agent)
            .enumerate()
            .for_each(|(a, out)| {
                for k in 0..per_agent {
                    let row = a * per_agent + k;
                    if columns.status[row] == batch::HIT
                        && let Some(ray) = readings.ray(&poses[a], k)
                    {
                        let p = batch::point_at(frame, &ray, columns.distance[row]);
                        out[3 * k..3 * k + 3].copy_from_slice(&p);
                    }
                }
            });
        Ok((columns, points))
    }

    /// A LiDAR's scan: every beam of `sub_rays` consecutive rays of `rig` from every pose,
    /// with `fx` applied (`LidarEffects::beam`, drawn for `step`): per agent and beam the
    /// range, the point (voxels from `frame`, NaN without a return), the intensity and the
    /// id, on all threads. An agent whose pose is bad returns nothing.
    #[expect(clippy::too_many_arguments, reason = "a scan's inputs, each needed")]
    pub(crate) fn lidar(
        &self,
        frame: WorldPos,
        rig: &[SensorRig],
        gpu_rigs: &[GpuSensorRig],
        poses: ArrayView2<'_, f64>,
        opts: &RaycastOptions,
        fx: &LidarEffects,
        sub_rays: usize,
        step: u64,
    ) -> PyResult<LidarColumns> {
        fx.check()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let rays: usize = rig.iter().map(SensorRig::len).sum();
        if sub_rays == 0 || !rays.is_multiple_of(sub_rays) {
            return Err(PyValueError::new_err(format!(
                "sub_rays: at least 1, dividing the rig's {rays} rays, not {sub_rays}"
            )));
        }
        let (poses, bad_poses) = Self::poses(frame, poses)?;
        let readings = self.readings(rig, gpu_rigs, &poses, opts)?;
        let beams = rays / sub_rays;
        let n = poses.len() * beams;
        let mut c = LidarColumns {
            status: vec![batch::MISS; n],
            ranges: vec![f32::INFINITY; n],
            points: vec![f64::NAN; 3 * n],
            intensity: vec![0.0; n],
            id: vec![0; n],
            errors: Vec::new(),
        };
        // Agents whose pose is bad, with why: a position that makes no point, else the
        // rotation the sensor call refused.
        let mut errors: Vec<(usize, String)> =
            bad_poses.iter().map(|&(a, e)| (a, e.message())).collect();
        for (a, e) in readings.errors() {
            if !errors.iter().any(|&(b, _)| b == a) {
                errors.push((a, e.to_string()));
            }
        }
        errors.sort_unstable_by_key(|&(a, _)| a);
        c.status
            .par_chunks_mut(LIDAR_BLOCK)
            .zip(c.ranges.par_chunks_mut(LIDAR_BLOCK))
            .zip(c.points.par_chunks_mut(3 * LIDAR_BLOCK))
            .zip(c.intensity.par_chunks_mut(LIDAR_BLOCK))
            .zip(c.id.par_chunks_mut(LIDAR_BLOCK))
            .enumerate()
            .for_each(|(blk, ((((status, ranges), points), intensity), id))| {
                let mut subs: Vec<(RaycastOutcome, glam::Vec3)> = Vec::with_capacity(sub_rays);
                for j in 0..ranges.len() {
                    let i = blk * LIDAR_BLOCK + j;
                    let (a, b) = (i / beams, i % beams);
                    subs.clear();
                    subs.extend((b * sub_rays..(b + 1) * sub_rays).map(|k| {
                        let o = readings.outcome(a, k);
                        let d = match o {
                            RaycastOutcome::Hit(_) => readings
                                .ray(&poses[a], k)
                                .map_or(glam::Vec3::ZERO, |r| r.direction),
                            _ => glam::Vec3::ZERO,
                        };
                        (o, d)
                    }));
                    let beam = fx.beam(step, a as u64, b as u64, subs.iter().copied());
                    if !beam.returned() {
                        status[j] = if subs
                            .iter()
                            .any(|(o, _)| matches!(o, RaycastOutcome::Invalid(_)))
                        {
                            batch::INVALID
                        } else if subs
                            .iter()
                            .any(|(o, _)| matches!(o, RaycastOutcome::Unloaded { .. }))
                        {
                            batch::UNLOADED
                        } else {
                            batch::MISS
                        };
                        continue;
                    }
                    status[j] = batch::HIT;
                    ranges[j] = beam.range;
                    intensity[j] = beam.intensity;
                    id[j] = beam.id.0;
                    if let Some(r) = readings.ray(&poses[a], b * sub_rays + beam.sub_ray) {
                        let p = batch::point_at(frame, &r, beam.range);
                        points[3 * j..3 * j + 3].copy_from_slice(&p);
                    }
                }
            });
        c.errors = errors;
        Ok(c)
    }

    /// The agents whose eyes are the points of `eyes`, a bad point (not finite, too far)
    /// standing in as an agent whose every pair is invalid, listed with why.
    fn agents(
        frame: WorldPos,
        eyes: ArrayView2<'_, f64>,
    ) -> PyResult<(Vec<Agent>, Vec<Option<BadRay>>)> {
        rows3(&eyes, "eyes")?;
        let mut bad = Vec::with_capacity(eyes.nrows());
        let agents = (0..eyes.nrows())
            .map(|i| match batch::point(frame, row3(&eyes, i)) {
                Ok((voxel, sub)) => {
                    bad.push(None);
                    Agent::new(voxel, sub, 0.0)
                }
                Err(e) => {
                    bad.push(Some(BadRay::Point(e)));
                    Agent::new(WorldPos::ZERO, glam::Vec3::NAN, 0.0)
                }
            })
            .collect();
        Ok((agents, bad))
    }

    /// Line of sight between the eyes of each pair of agents (`pairs`: indices into `eyes`).
    pub(crate) fn agent_visibility(
        &self,
        frame: WorldPos,
        eyes: ArrayView2<'_, f64>,
        pairs: ArrayView2<'_, i64>,
        opts: &LineOfSightOptions,
    ) -> PyResult<Columns> {
        let (agents, bad) = Self::agents(frame, eyes)?;
        if pairs.ncols() != 2 {
            return Err(PyValueError::new_err(format!(
                "pairs: shape (P, 2), not {:?}",
                pairs.shape()
            )));
        }
        let a = agents.len() as i64;
        let pairs: Vec<[u32; 2]> = (0..pairs.nrows())
            .map(|i| {
                let (x, y) = (pairs[(i, 0)], pairs[(i, 1)]);
                if (0..a).contains(&x) && (0..a).contains(&y) {
                    Ok([x as u32, y as u32])
                } else {
                    Err(PyValueError::new_err(format!(
                        "pairs: row {i} ({x}, {y}) names no agent (there are {a})"
                    )))
                }
            })
            .collect::<PyResult<_>>()?;
        let answers = match self {
            Target::Cpu(w) => visibility_in_bands(&agents, &pairs, w, opts)?,
            Target::Gpu(g, w) => {
                let on_gpu = g.upload_agents(&agents, w).map_err(gpu_error)?;
                let query = AgentPairs {
                    agents: &on_gpu,
                    pairs: &pairs,
                    outcomes: true,
                };
                let seen = gpu_cast(g, query, w, opts)?;
                seen.answers()
                    .ok_or_else(|| PyRuntimeError::new_err("agent visibility without answers"))?
                    .to_vec()
            }
        };
        Ok(Columns::filled(pairs.len(), frame, |i| {
            let [x, y] = pairs[i];
            let why = bad[x as usize].or(bad[y as usize]);
            (answers[i].into(), why)
        }))
    }

    /// Every pair of agents whose eyes lie within `radius` voxels of each other and see each
    /// other, sorted.
    pub(crate) fn visible_pairs_within(
        &self,
        frame: WorldPos,
        eyes: ArrayView2<'_, f64>,
        radius: f64,
        opts: &LineOfSightOptions,
    ) -> PyResult<Vec<[u32; 2]>> {
        let (agents, _) = Self::agents(frame, eyes)?;
        match self {
            Target::Cpu(w) => {
                let pairs = voxcast::pairs_within(&agents, radius);
                let seen = visibility_in_bands(&agents, &pairs, w, opts)?;
                Ok(pairs
                    .into_iter()
                    .zip(seen)
                    .filter(|(_, s)| *s == voxcast::LineOfSight::Clear)
                    .map(|(p, _)| p)
                    .collect())
            }
            Target::Gpu(g, w) => {
                let on_gpu = g.upload_agents(&agents, w).map_err(gpu_error)?;
                gpu_cast(
                    g,
                    PairsWithin {
                        agents: &on_gpu,
                        radius,
                    },
                    w,
                    opts,
                )
            }
        }
    }
}
