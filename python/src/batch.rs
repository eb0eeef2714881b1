//! Between numpy and voxcast: frames (an i128 origin given as Python ints), points as float64
//! offsets from a frame, rays built from them, and outcomes written into flat arrays.

use glam::{DVec3, Vec3};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use voxcast::{
    Camera, MaterialFilter, OriginPolicy, RayError, RaycastOptions, RaycastOutcome, UnloadedPolicy,
    VoxelId, VoxelRay, WorldPos,
};

/// A ray's status: nothing within its max distance.
pub(crate) const MISS: u8 = 0;
/// A ray's status: a stopping voxel.
pub(crate) const HIT: u8 = 1;
/// A ray's status: it stopped where unloaded space begins (`unloaded="stop"`).
pub(crate) const UNLOADED: u8 = 2;
/// A ray's status: the ray is invalid (its error is in the answers' `errors`).
pub(crate) const INVALID: u8 = 3;

/// The largest offset from a frame, per axis, that a point may have: voxels then come back
/// as int64 with room to spare.
pub(crate) const MAX_OFFSET: f64 = 4_611_686_018_427_387_904.0; // 2^62

/// `origin`, three Python ints, as a voxel of the i128 world; `name` names the argument in the
/// error.
pub(crate) fn frame_of(origin: &Bound<'_, PyAny>, name: &str) -> PyResult<WorldPos> {
    let parts: Vec<Bound<'_, PyAny>> = origin
        .try_iter()
        .and_then(|it| it.collect::<PyResult<Vec<_>>>())
        .map_err(|_| PyValueError::new_err(format!("{name}: three ints, (x, y, z)")))?;
    if parts.len() != 3 {
        return Err(PyValueError::new_err(format!(
            "{name}: three ints, (x, y, z), not {}",
            parts.len()
        )));
    }
    let mut c = [0i128; 3];
    for (a, p) in parts.iter().enumerate() {
        c[a] = p.extract::<i128>().map_err(|_| {
            PyValueError::new_err(format!(
                "{name}: component {a} is not an int within the i128 world (|v| < 2**127)"
            ))
        })?;
    }
    Ok(WorldPos::new(c[0], c[1], c[2]))
}

/// Why a point cannot start a ray.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PointError {
    /// A component is NaN or infinite.
    NotFinite,
    /// A component is `2^62` or more from the frame.
    TooFar,
    /// The voxel lies outside the i128 world.
    OutsideWorld,
}

impl PointError {
    pub(crate) fn message(self) -> &'static str {
        match self {
            PointError::NotFinite => "point is not finite",
            PointError::TooFar => "point is 2**62 voxels or more from the frame",
            PointError::OutsideWorld => "point lies outside the i128 world",
        }
    }
}

/// Point `p` (voxels from `frame`) as its voxel and the offset inside it. The offset is the
/// exact f64 remainder rounded to f32 (a start point moves by at most 2^-25 voxels).
pub(crate) fn point(frame: WorldPos, p: [f64; 3]) -> Result<(WorldPos, Vec3), PointError> {
    if p.iter().any(|v| !v.is_finite()) {
        return Err(PointError::NotFinite);
    }
    if p.iter().any(|v| v.abs() >= MAX_OFFSET) {
        return Err(PointError::TooFar);
    }
    // Below 2^62 the floor through i64 is exact (a value that truncates to `i` is `i` or lies
    // within 2^53 of 0, and so does `i`), and it costs no library call, as `f64::floor` and a
    // conversion to i128 do on x86-64.
    let f = p.map(|v| {
        let i = v as i64;
        i - i64::from(i as f64 > v)
    });
    let voxel = frame
        .checked_add(f.map(i128::from))
        .ok_or(PointError::OutsideWorld)?;
    let sub = Vec3::new(
        (p[0] - f[0] as f64) as f32,
        (p[1] - f[1] as f64) as f32,
        (p[2] - f[2] as f64) as f32,
    );
    Ok((voxel, sub))
}

/// Why a ray could not be built: its point, or the ray itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BadRay {
    Point(PointError),
    Ray(RayError),
}

impl BadRay {
    pub(crate) fn message(self) -> String {
        match self {
            BadRay::Point(e) => e.message().to_owned(),
            BadRay::Ray(e) => e.to_string(),
        }
    }
}

/// A ray that every cast answers `Invalid` at once: what stands in for a bad ray in a batch, so
/// that the batch keeps its order and the other rays are answered.
pub(crate) fn stand_in() -> VoxelRay {
    VoxelRay {
        origin: WorldPos::ZERO,
        sub_offset: Vec3::ZERO,
        direction: Vec3::NAN,
        max_distance: 0.0,
    }
}

/// The ray from point `o` along `d` for `max` voxels ([`VoxelRay::new`]).
pub(crate) fn ray(frame: WorldPos, o: [f64; 3], d: [f32; 3], max: f32) -> Result<VoxelRay, BadRay> {
    let r = ray_for_query(frame, o, d, max)?;
    VoxelRay::new(r.origin, r.sub_offset, r.direction, r.max_distance).map_err(BadRay::Ray)
}

/// [`ray`] without [`VoxelRay::new`]'s checks, for a query that makes them itself: every
/// query of the crate validates its ray as `new` does (to the same [`RayError`]) before it
/// casts, and `new`'s normalising is idempotent, so the answer is the same and the ray is
/// checked once instead of twice.
pub(crate) fn ray_for_query(
    frame: WorldPos,
    o: [f64; 3],
    d: [f32; 3],
    max: f32,
) -> Result<VoxelRay, BadRay> {
    let (origin, sub_offset) = point(frame, o).map_err(BadRay::Point)?;
    Ok(VoxelRay {
        origin,
        sub_offset,
        direction: Vec3::from_array(d),
        max_distance: max,
    })
}

/// The most pixels a camera answers (2^30): its answers take about 40 bytes a pixel.
pub(crate) const MAX_PIXELS: u64 = 1 << 30;

/// The camera at `eye + sub` ([`Camera::with_up`]) of `size` (width, height) pixels;
/// `ValueError` for a bad camera or more than [`MAX_PIXELS`] pixels.
pub(crate) fn camera(
    eye: WorldPos,
    sub: Vec3,
    forward: [f32; 3],
    up: [f32; 3],
    fov_y_degrees: f32,
    size: [u32; 2],
    max_distance: f32,
) -> PyResult<Camera> {
    let n = u64::from(size[0]) * u64::from(size[1]);
    if n > MAX_PIXELS {
        return Err(PyValueError::new_err(format!(
            "camera: width x height is {n} pixels, more than {MAX_PIXELS}"
        )));
    }
    Camera::with_up(
        eye,
        sub,
        Vec3::from_array(forward),
        Vec3::from_array(up),
        fov_y_degrees,
        size[0],
        size[1],
        max_distance,
    )
    .map_err(|e| PyValueError::new_err(format!("camera: {e}")))
}

/// The segment line of sight between points `a` and `b` casts ([`VoxelRay::sight_line`]:
/// from the lower point, so one answer for either order).
pub(crate) fn segment(frame: WorldPos, a: [f64; 3], b: [f64; 3]) -> Result<VoxelRay, BadRay> {
    let (va, sa) = point(frame, a).map_err(BadRay::Point)?;
    let (vb, sb) = point(frame, b).map_err(BadRay::Point)?;
    VoxelRay::sight_line(va, sa, vb, sb).map_err(BadRay::Ray)
}

/// Rays built one per row, bad ones replaced by [`stand_in`] and listed with their index.
pub(crate) fn built(
    n: usize,
    make: impl Fn(usize) -> Result<VoxelRay, BadRay> + Send + Sync,
) -> (Vec<VoxelRay>, Vec<(usize, BadRay)>) {
    use rayon::prelude::*;
    let made: Vec<Result<VoxelRay, BadRay>> = (0..n)
        .into_par_iter()
        .with_min_len(BLOCK)
        .map(make)
        .collect();
    let mut bad = Vec::new();
    let rays = made
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            r.unwrap_or_else(|e| {
                bad.push((i, e));
                stand_in()
            })
        })
        .collect();
    (rays, bad)
}

/// The options of a cast: `origin` is `"report"`, `"skip"` or `"exit"`, `unloaded` is `"air"`
/// or `"stop"`, `solid` the ids that stop a ray (`None`: every id but air).
pub(crate) fn options(
    origin: &str,
    unloaded: &str,
    solid: Option<Vec<u16>>,
) -> PyResult<RaycastOptions> {
    let origin = match origin {
        "report" => OriginPolicy::Report,
        "skip" => OriginPolicy::SkipOriginVoxel,
        "exit" => OriginPolicy::ExitSolid,
        other => {
            return Err(PyValueError::new_err(format!(
                "origin_policy: \"report\", \"skip\" or \"exit\", not {other:?}"
            )));
        }
    };
    let unloaded = match unloaded {
        "air" => UnloadedPolicy::Air,
        "stop" => UnloadedPolicy::Stop,
        other => {
            return Err(PyValueError::new_err(format!(
                "unloaded: \"air\" or \"stop\", not {other:?}"
            )));
        }
    };
    let blocks = match solid {
        None => MaterialFilter::every_non_air(),
        Some(ids) => {
            let ids: Vec<VoxelId> = ids.into_iter().map(VoxelId).collect();
            MaterialFilter::only(&ids)
        }
    };
    Ok(RaycastOptions {
        origin,
        blocks,
        unloaded,
        ..RaycastOptions::default()
    })
}

/// Outcomes as flat arrays, row `i` for outcome `i`: what the Python side turns into numpy
/// arrays without another copy.
#[derive(Debug, Default)]
pub(crate) struct Columns {
    pub(crate) status: Vec<u8>,
    /// The hit voxel (or where unloaded space began), relative to the frame; 0 otherwise.
    pub(crate) voxel: Vec<i64>,
    pub(crate) normal: Vec<i8>,
    /// Hit or unloaded: the distance; miss: infinity; invalid: NaN.
    pub(crate) distance: Vec<f32>,
    pub(crate) id: Vec<u16>,
    pub(crate) uv: Vec<f32>,
    /// Invalid rows with why, in row order.
    pub(crate) errors: Vec<(usize, String)>,
}

/// Rows written by one task of [`Columns::filled`].
pub(crate) const BLOCK: usize = 1024;

/// One block's slices of the columns (status, voxel, normal, distance, id, uv), as rayon's
/// zips nest them.
type BlockColumns<'a> = (
    (
        (((&'a mut [u8], &'a mut [i64]), &'a mut [i8]), &'a mut [f32]),
        &'a mut [u16],
    ),
    &'a mut [f32],
);

/// One row of [`Columns`].
struct Row {
    status: u8,
    voxel: [i64; 3],
    normal: [i8; 3],
    distance: f32,
    id: u16,
    uv: [f32; 2],
}

/// Outcome `o` as a row, its voxel made relative to `frame`.
fn row(frame: WorldPos, o: &RaycastOutcome) -> Row {
    let relative = |v: WorldPos| -> [i64; 3] {
        // A voxel within 2^62 + 2^17 of the frame: always fits in i64.
        v.checked_sub(frame).map_or([0; 3], |d| d.map(|c| c as i64))
    };
    let empty = |status, distance| Row {
        status,
        voxel: [0; 3],
        normal: [0; 3],
        distance,
        id: 0,
        uv: [0.0; 2],
    };
    match o {
        RaycastOutcome::Hit(h) => Row {
            status: HIT,
            voxel: relative(h.voxel_pos),
            normal: h.face_normal.to_array().map(|c| c as i8),
            distance: h.distance,
            id: h.voxel_type.0,
            uv: h.hit_uv.to_array(),
        },
        RaycastOutcome::Miss => empty(MISS, f32::INFINITY),
        RaycastOutcome::Unloaded {
            voxel_pos,
            distance,
        } => Row {
            voxel: relative(*voxel_pos),
            ..empty(UNLOADED, *distance)
        },
        RaycastOutcome::Invalid(_) => empty(INVALID, f32::NAN),
    }
}

/// What one task of [`Columns::filled_blocks`] keeps from block to block, so that its buffers
/// are allocated once.
#[derive(Default)]
pub(crate) struct Scratch {
    /// The block's rays, a bad one replaced by [`stand_in`].
    pub(crate) rays: Vec<VoxelRay>,
    /// The block's rows whose ray could not be built (index within the block), in order.
    pub(crate) bad: Vec<(usize, BadRay)>,
    /// The block's outcomes, one a row.
    pub(crate) outcomes: Vec<RaycastOutcome>,
}

/// Writes the rows of one block (from row `base`) into its slices of the columns, row `k`
/// being `answer(k)`; returns its invalid rows with why.
fn write_block(
    frame: WorldPos,
    base: usize,
    (((((status, voxel), normal), distance), id), uv): BlockColumns<'_>,
    mut answer: impl FnMut(usize) -> (RaycastOutcome, Option<BadRay>),
) -> Vec<(usize, String)> {
    let mut errors = Vec::new();
    for k in 0..status.len() {
        let (outcome, bad) = answer(k);
        let r = row(frame, &outcome);
        if let RaycastOutcome::Invalid(e) = outcome {
            errors.push((base + k, bad.map_or_else(|| e.to_string(), BadRay::message)));
        }
        status[k] = r.status;
        voxel[3 * k..3 * k + 3].copy_from_slice(&r.voxel);
        normal[3 * k..3 * k + 3].copy_from_slice(&r.normal);
        distance[k] = r.distance;
        id[k] = r.id;
        uv[2 * k..2 * k + 2].copy_from_slice(&r.uv);
    }
    errors
}

impl Columns {
    /// The columns of `n` rows in blocks of `len`, each block written by `block(scratch, b,
    /// columns)` (its rows from `b * len`), a task's blocks sharing one `scratch`. Blocks are
    /// written in parallel, straight into the arrays the caller receives.
    fn in_blocks<S: Default>(
        n: usize,
        len: usize,
        block: impl Fn(&mut S, usize, BlockColumns<'_>) -> Vec<(usize, String)> + Sync,
    ) -> Self {
        use rayon::prelude::*;
        // After Ctrl-C the remaining blocks are left unwritten: the call raises instead.
        let since = crate::cast::interrupts();
        let block = |s: &mut S, b: usize, cols: BlockColumns<'_>| {
            if crate::cast::interrupted(since) {
                return Vec::new();
            }
            block(s, b, cols)
        };
        let mut c = Self {
            status: vec![0; n],
            voxel: vec![0; 3 * n],
            normal: vec![0; 3 * n],
            distance: vec![0.0; n],
            id: vec![0; n],
            uv: vec![0.0; 2 * n],
            errors: Vec::new(),
        };
        let errors: Vec<Vec<(usize, String)>> = if n <= len {
            // One block, on this thread: handing it to rayon's pool would cost more than it.
            let all = (
                (
                    (
                        (
                            (c.status.as_mut_slice(), c.voxel.as_mut_slice()),
                            c.normal.as_mut_slice(),
                        ),
                        c.distance.as_mut_slice(),
                    ),
                    c.id.as_mut_slice(),
                ),
                c.uv.as_mut_slice(),
            );
            vec![block(&mut S::default(), 0, all)]
        } else {
            c.status
                .par_chunks_mut(len)
                .zip(c.voxel.par_chunks_mut(3 * len))
                .zip(c.normal.par_chunks_mut(3 * len))
                .zip(c.distance.par_chunks_mut(len))
                .zip(c.id.par_chunks_mut(len))
                .zip(c.uv.par_chunks_mut(2 * len))
                .enumerate()
                .map_init(S::default, |s, (b, cols)| block(s, b, cols))
                .collect()
        };
        c.errors = errors.into_iter().flatten().collect();
        c
    }

    /// The columns of `n` outcomes, outcome `i` being `answer(i)`: the outcome and, for a row
    /// whose ray could not be built, why (said instead of the outcome's own error). Rows are
    /// made and written in parallel blocks of [`BLOCK`].
    pub(crate) fn filled(
        n: usize,
        frame: WorldPos,
        answer: impl Fn(usize) -> (RaycastOutcome, Option<BadRay>) + Sync,
    ) -> Self {
        Self::in_blocks(n, BLOCK, |_: &mut (), b, cols| {
            write_block(frame, b * BLOCK, cols, |k| answer(b * BLOCK + k))
        })
    }

    /// The columns of `n` outcomes answered a block of `len` rows at a time:
    /// `answer(rows, scratch)` puts the outcomes of `rows` into `scratch.outcomes` and the
    /// rows whose ray could not be built into `scratch.bad` (both found empty). For answers
    /// that come from a block of rays cast together.
    pub(crate) fn filled_blocks(
        n: usize,
        frame: WorldPos,
        len: usize,
        answer: impl Fn(std::ops::Range<usize>, &mut Scratch) + Sync,
    ) -> Self {
        Self::in_blocks(n, len, |s: &mut Scratch, b, cols| {
            let rows = b * len..((b + 1) * len).min(n);
            s.outcomes.clear();
            s.bad.clear();
            answer(rows, s);
            let mut bad = s.bad.iter().peekable();
            write_block(frame, b * len, cols, |k| {
                let why = bad.next_if(|(i, _)| *i == k).map(|(_, e)| *e);
                (
                    s.outcomes
                        .get(k)
                        .copied()
                        .unwrap_or(RaycastOutcome::Invalid(RayError::NanDirection)),
                    why,
                )
            })
        })
    }

    /// The columns of `outcomes`, the rows of `bad` saying why their ray could not be built.
    pub(crate) fn of(
        frame: WorldPos,
        outcomes: &[RaycastOutcome],
        bad: &[(usize, BadRay)],
    ) -> Self {
        let why: rustc_hash::FxHashMap<usize, BadRay> = bad.iter().copied().collect();
        Self::filled(outcomes.len(), frame, |i| {
            (outcomes[i], why.get(&i).copied())
        })
    }
}

/// Where a ray's point at distance `t` lies, in voxels from `frame` (f64).
pub(crate) fn point_at(frame: WorldPos, ray: &VoxelRay, t: f32) -> [f64; 3] {
    let base = ray
        .origin
        .checked_sub(frame)
        .map_or([f64::NAN; 3], |d| d.map(|c| c as f64));
    let p = DVec3::from_array(base)
        + ray.sub_offset.as_dvec3()
        + ray.direction.as_dvec3() * f64::from(t);
    p.to_array()
}
