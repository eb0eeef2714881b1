//! Rays, options, hits and outcomes, and the validation that turns a user's ray into the exact
//! per-axis parameters both the CPU reference and the GPU step with.

use glam::{DVec3, Vec3, Vec3A};

use crate::coords::WorldPos;

mod options;
mod outcome;
mod window;

pub use options::{
    LineOfSightOptions, MaterialFilter, OriginPolicy, RaycastOptions, UnloadedPolicy,
};
pub use outcome::{LineOfSight, RaycastOutcome, UV_TOLERANCE, VoxelRaycastHit};
pub use window::{WindowHit, WindowOutcome, WindowRay};

/// The farthest a ray looks, in voxels: a ray asked to look farther (any larger max distance,
/// `f32::INFINITY` and `f32::MAX` included) looks this far, on every call and engine (rays,
/// cameras, sensor rigs, box casts). A segment ([`VoxelRay::between`]) must reach its end, so
/// a longer one is refused ([`RayError::MaxDistanceTooLarge`]). Far beyond sight distances, and small
/// enough that every crossing count stays exact in f32 (`n < 2^24`), so that every path to a
/// crossing (stepping, skipping, the GPU) computes its distance with the same bits. Distances
/// are f32 values all the same: near the cap they lie up to about 0.01 voxel from those of the
/// exact line (the voxels visited follow the f32 values where the line passes that close to an
/// edge).
pub const MAX_DISTANCE_CAP: f32 = 65_536.0;

/// A ray through the voxel world: an i128 voxel `origin` plus a `sub_offset` inside it, a
/// direction, and how far to search.
///
/// Build it with [`VoxelRay::new`] (which validates and normalises) or [`VoxelRay::between`].
/// The fields are public so that engines can fill them directly; raycasts validate them again
/// and answer an invalid ray with [`RaycastOutcome::Invalid`], never a panic.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VoxelRay {
    /// The voxel holding the ray's start point.
    pub origin: WorldPos,
    /// Start point inside `origin`, each component in `[0, 1)` voxels.
    pub sub_offset: Vec3,
    /// Unit direction. A direction whose squared length is not within `1e-5` of 1 is
    /// normalised (in f64) when the ray is built or cast; one within that tolerance is used as
    /// given, bit for bit, so distances are in units of its length: voxels to within `5e-6`
    /// relative.
    pub direction: Vec3,
    /// Search distance in voxels, `0..=MAX_DISTANCE_CAP`. A hit at exactly this distance counts.
    /// `f32::INFINITY` and `f32::MAX` mean no limit of the caller's own: the cast searches
    /// [`MAX_DISTANCE_CAP`] voxels ([`VoxelRay::new`] stores the cap).
    pub max_distance: f32,
}

/// Why a ray was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RayError {
    /// The direction is zero (every component +0.0 or -0.0). Any other finite direction,
    /// however short, is normalised (in f64, so that it cannot underflow).
    #[error("ray direction is zero: give a non-zero direction")]
    ZeroDirection,
    /// A direction component is NaN.
    #[error("ray direction has a NaN component")]
    NanDirection,
    /// A direction component is infinite.
    #[error("ray direction has an infinite component")]
    InfiniteDirection,
    /// `max_distance` is NaN.
    #[error("max distance is NaN")]
    NanMaxDistance,
    /// `max_distance` is negative.
    #[error("max distance is negative")]
    NegativeMaxDistance,
    /// A segment ([`VoxelRay::between`], line of sight between agents) longer than
    /// [`MAX_DISTANCE_CAP`], which no cast reaches the end of. (A ray's max distance above the
    /// cap is not an error: the ray looks as far as the cap.)
    #[error("segment longer than the cap of {MAX_DISTANCE_CAP} voxels")]
    MaxDistanceTooLarge,
    /// A `sub_offset` component is NaN or infinite.
    #[error("sub offset is not finite")]
    NonFiniteSubOffset,
    /// A component of a point given in f64 ([`VoxelRay::from_point`],
    /// [`VoxelRay::between_points`]) is NaN or infinite.
    #[error("point is not finite")]
    NonFinitePoint,
    /// Moving whole units of `sub_offset` into `origin` would leave the i128 world.
    #[error("origin plus sub offset leaves the i128 world")]
    OriginOutOfRange,
    /// A pair of agents names an index past the end of the agent list
    /// ([`agent_segment`](crate::agent_segment)).
    #[error("a pair names an agent index past the end of the agent list")]
    NoSuchAgent,
    /// A sensor pose's rotation ([`SensorPose::rotation`](crate::SensorPose::rotation)) has a
    /// NaN or infinite component, or a squared length more than `1e-3` from 1: it is no
    /// rotation.
    #[error("sensor pose rotation is not a unit quaternion")]
    BadRotation,
}

#[inline]
pub(crate) fn flush_denormal(v: f32) -> f32 {
    if v.abs() < f32::MIN_POSITIVE { 0.0 } else { v }
}

/// Splits one coordinate's sub offset into whole units (added to the origin) and a fraction in
/// `[0, 1)`, flushing a denormal fraction to zero.
pub(crate) fn split_sub(origin: i128, sub: f32) -> Result<(i128, f32), RayError> {
    if !sub.is_finite() {
        return Err(RayError::NonFiniteSubOffset);
    }
    if (0.0..1.0).contains(&sub) {
        return Ok((origin, flush_denormal(sub)));
    }
    let whole = floor(sub);
    let mut frac = sub - whole;
    let mut origin = add_whole(origin, f64::from(whole)).ok_or(RayError::OriginOutOfRange)?;
    if frac >= 1.0 {
        // A tiny negative sub rounds to 1.0 here; the point is on the next face.
        frac = 0.0;
        origin = origin.checked_add(1).ok_or(RayError::OriginOutOfRange)?;
    }
    Ok((origin, flush_denormal(frac)))
}

/// `x.floor()` for a finite `x`, without the library call that `floor` is on x86-64 without
/// SSE4.1: below `2^23` in magnitude through an integer, above it `x` is whole already.
fn floor(x: f32) -> f32 {
    if x.abs() < 8_388_608.0 {
        let t = x as i32 as f32;
        if t == x {
            x
        } else if t > x {
            t - 1.0
        } else {
            t
        }
    } else {
        x
    }
}

/// `x.floor()` as an integer, for `|x|` below `2^62` (exact there: a value that truncates to
/// `t` is `t` or lies within `2^53` of 0, and so does `t`), without the library call that
/// `floor` is on x86-64 without SSE4.1.
#[inline]
pub(crate) fn floor_i64(x: f64) -> i64 {
    let t = x as i64;
    t - i64::from(t as f64 > x)
}

/// `origin + whole` exactly, for a whole-numbered `whole`; `None` when the sum leaves i128 or
/// `whole` is not finite. `whole as i128` alone saturates from `2^127` on, and a finite f32
/// reaches `2^128`: such a `whole` is added in two exact halves.
pub(crate) fn add_whole(origin: i128, whole: f64) -> Option<i128> {
    const TWO_127: f64 = 1.7014118346046923e38;
    const TWO_63: f64 = (1u64 << 63) as f64;
    if !whole.is_finite() {
        None
    } else if whole.abs() < TWO_63 {
        // One conversion instruction, where `as i128` calls a library routine.
        origin.checked_add(i128::from(whole as i64))
    } else if whole.abs() < TWO_127 {
        origin.checked_add(whole as i128)
    } else if whole.abs() < 2.0 * TWO_127 {
        // Whole-numbered and at least 2^127, so its half is whole-numbered and below 2^127.
        let half = (whole * 0.5) as i128;
        origin.checked_add(half)?.checked_add(half)
    } else {
        // |origin + whole| > 2^128 - 2^127: outside i128 whatever the origin.
        None
    }
}

/// The smallest squared length [`segment`] accepts: `2^-60` (twin of the shader's).
pub(crate) const MIN_SQUARED_LENGTH: f32 = 1.0 / (1u64 << 60) as f32;

/// The unit direction and length of a segment whose difference vector (end minus start, in
/// voxels) is `d`, as [`VoxelRay::between`] and the GPU's agent visibility make them (twin of
/// `segment` in `shaders/agents.wgsl`): the squared length `(x² + y²) + z²`, its root, the
/// reciprocal of that and the three products, each a correctly rounded f32 operation, so that
/// any GPU computes the same bits. The direction is unit to within about `1e-6` (well inside
/// the `1e-5` that [`VoxelRay::new`] keeps as given).
///
/// # Errors
/// [`RayError::ZeroDirection`] when the squared length is below `2^-60` (points within about
/// `1e-9` voxels): below that, squares a GPU may flush to zero (subnormals) could change it;
/// [`RayError::MaxDistanceTooLarge`] when the length exceeds [`MAX_DISTANCE_CAP`].
pub(crate) fn segment(d: [f32; 3]) -> Result<(Vec3, f32), RayError> {
    let squared = (d[0] * d[0] + d[1] * d[1]) + d[2] * d[2];
    // NaN compares false: it is refused with the too-short lengths.
    if squared
        .partial_cmp(&MIN_SQUARED_LENGTH)
        .is_none_or(std::cmp::Ordering::is_lt)
    {
        return Err(RayError::ZeroDirection);
    }
    let length = squared.sqrt();
    if length > MAX_DISTANCE_CAP {
        return Err(RayError::MaxDistanceTooLarge);
    }
    let r = 1.0 / length;
    Ok((Vec3::new(d[0] * r, d[1] * r, d[2] * r), length))
}

/// A point as its voxel and an offset in `[0, 1)`, normalised as [`VoxelRay::new`] does.
#[inline(always)]
pub(crate) fn normalised_point(p: WorldPos, sub: Vec3) -> Result<(WorldPos, Vec3), RayError> {
    let (x, sx) = split_sub(p.x, sub.x)?;
    let (y, sy) = split_sub(p.y, sub.y)?;
    let (z, sz) = split_sub(p.z, sub.z)?;
    Ok((WorldPos::new(x, y, z), Vec3::new(sx, sy, sz)))
}

/// The order of normalised points in which [`VoxelRay::sight_line`] casts from the lower: by
/// voxel x, y, z, then offset x, y, z in IEEE total order (equal only for equal bits).
pub(crate) fn point_order(a: (WorldPos, Vec3), b: (WorldPos, Vec3)) -> std::cmp::Ordering {
    (a.0.x, a.0.y, a.0.z)
        .cmp(&(b.0.x, b.0.y, b.0.z))
        .then_with(|| a.1.x.total_cmp(&b.1.x))
        .then_with(|| a.1.y.total_cmp(&b.1.y))
        .then_with(|| a.1.z.total_cmp(&b.1.z))
}

/// A point in f64 voxel coordinates as its voxel (the floor) and the f64 fraction rounded to
/// f32 (possibly to 1.0, which [`split_sub`] then carries into the next voxel).
fn split_point(p: DVec3) -> Result<(WorldPos, Vec3), RayError> {
    if !p.is_finite() {
        return Err(RayError::NonFinitePoint);
    }
    let whole = p.floor();
    let axis = |w: f64| add_whole(0, w).ok_or(RayError::OriginOutOfRange);
    Ok((
        WorldPos::new(axis(whole.x)?, axis(whole.y)?, axis(whole.z)?),
        (p - whole).as_vec3(),
    ))
}

/// `d`'s components are finite: [`RayError::NanDirection`] or [`RayError::InfiniteDirection`]
/// otherwise.
pub(crate) fn check_direction(d: Vec3) -> Result<(), RayError> {
    if d.is_nan() {
        Err(RayError::NanDirection)
    } else if !d.is_finite() {
        Err(RayError::InfiniteDirection)
    } else {
        Ok(())
    }
}

/// The max distance a cast searches for `m`: `m` itself (`+0.0` for `-0.0`), at most
/// [`MAX_DISTANCE_CAP`] (so `f32::INFINITY` and `f32::MAX` mean the cap).
fn checked_max_distance(m: f32) -> Result<f32, RayError> {
    if m.is_nan() {
        Err(RayError::NanMaxDistance)
    } else if m < 0.0 {
        Err(RayError::NegativeMaxDistance)
    } else {
        Ok(m.min(MAX_DISTANCE_CAP) + 0.0)
    }
}

/// The vector from point `from` (voxel plus offset) to point `to`, in voxels. Both points are
/// first normalised as [`VoxelRay::new`] does (whole units of each offset moved into its
/// voxel), so that a huge offset cannot swamp the fractions; then the voxel difference is
/// taken exactly in i128 and the fractions added in f64 (exact while the voxels are less than
/// `2^53` apart; farther apart, where the i128 difference may not even fit, to f64 precision).
/// `Err(NonFiniteSubOffset)` for a NaN or infinite offset, `Err(OriginOutOfRange)` when an
/// offset moves its point out of the i128 world.
pub(crate) fn difference(
    from: WorldPos,
    from_sub: Vec3,
    to: WorldPos,
    to_sub: Vec3,
) -> Result<DVec3, RayError> {
    if !from_sub.is_finite() || !to_sub.is_finite() {
        return Err(RayError::NonFiniteSubOffset);
    }
    let axis = |a: usize| -> Result<f64, RayError> {
        let (from, from_sub) = split_sub(from.axis(a), from_sub[a])?;
        let (to, to_sub) = split_sub(to.axis(a), to_sub[a])?;
        let sub = f64::from(to_sub) - f64::from(from_sub);
        Ok(match to.checked_sub(from) {
            Some(whole) => whole as f64 + sub,
            None => to as f64 - from as f64 + sub,
        })
    };
    Ok(DVec3::new(axis(0)?, axis(1)?, axis(2)?))
}

/// Normalises in f64 and flushes denormal components, so that every enabled axis has a normal
/// `1/|d|`.
fn unit_direction(d: Vec3) -> Result<Vec3, RayError> {
    check_direction(d)?;
    let len2 = d.length_squared();
    let d = if (len2 - 1.0).abs() <= 1e-5 {
        d
    } else {
        let dd = d.as_dvec3();
        let len = dd.length();
        if len == 0.0 {
            return Err(RayError::ZeroDirection);
        }
        (dd / len).as_vec3()
    };
    let d = Vec3::new(
        flush_denormal(d.x),
        flush_denormal(d.y),
        flush_denormal(d.z),
    );
    if d == Vec3::ZERO {
        return Err(RayError::ZeroDirection);
    }
    Ok(d)
}

impl VoxelRay {
    /// Validates and builds a ray.
    ///
    /// # Arguments
    /// * `origin` - the voxel holding the start point.
    /// * `sub_offset` - the start point inside `origin`, in voxels; any finite value is accepted
    ///   and whole units are moved into `origin` (so `(-0.25, 0, 0)` becomes origin `x - 1`,
    ///   sub `0.75`). Denormal components become zero.
    /// * `direction` - any finite non-zero vector; it is normalised (in f64) unless its squared
    ///   length is already within `1e-5` of 1 (see [`VoxelRay::direction`]).
    /// * `max_distance` - search distance in voxels, `0..=MAX_DISTANCE_CAP`, or `f32::INFINITY`
    ///   or `f32::MAX` for no limit of the caller's own (stored as `MAX_DISTANCE_CAP`).
    ///
    /// # Errors
    /// One [`RayError`] variant per kind of bad input: zero, NaN or infinite direction; NaN,
    /// negative or too large max distance; non-finite sub offset; an origin pushed out of i128.
    ///
    /// # Example
    /// ```
    /// use voxcast::{VoxelRay, WorldPos, glam::Vec3};
    /// let ray = VoxelRay::new(WorldPos::new(0, 64, 0), Vec3::new(0.5, 1.6, 0.5), Vec3::NEG_Y, 8.0)?;
    /// assert_eq!(ray.origin, WorldPos::new(0, 65, 0));
    /// # Ok::<(), voxcast::RayError>(())
    /// ```
    pub fn new(
        origin: WorldPos,
        sub_offset: Vec3,
        direction: Vec3,
        max_distance: f32,
    ) -> Result<Self, RayError> {
        Self::validated(origin, sub_offset, direction, max_distance)
    }

    /// [`VoxelRay::new`], inlined into [`VoxelRay::prepare`] so that the checked ray stays in
    /// registers there instead of being returned through memory.
    #[inline(always)]
    fn validated(
        origin: WorldPos,
        sub_offset: Vec3,
        direction: Vec3,
        max_distance: f32,
    ) -> Result<Self, RayError> {
        // `-0.0` is stored as `+0.0`, so equal rays have equal bits.
        let max_distance = checked_max_distance(max_distance)?;
        let direction = unit_direction(direction)?;
        let (origin, sub_offset) = normalised_point(origin, sub_offset)?;
        Ok(Self {
            origin,
            sub_offset,
            direction,
            max_distance,
        })
    }

    /// The segment from point `from` (voxel plus offset) to point `to`: direction `to - from`,
    /// max distance its length.
    ///
    /// Both points are first normalised as [`VoxelRay::new`] does (whole units of each offset
    /// moved into its voxel, denormal offsets flushed). Per axis the voxel difference is exact
    /// (in i128) and the offsets' difference is added to it in f32; then the direction and
    /// length are made from that difference with correctly rounded f32 operations: the
    /// squared length `(x² + y²) + z²`, its root, the reciprocal of that and the three
    /// products. The GPU's agent visibility
    /// builds its segments with the same operations (`segment` in `shaders/agents.wgsl`), so the
    /// parity contract covers them.
    ///
    /// The voxel that `to` lies in is tested too (a hit at exactly max distance counts), so
    /// line of sight to a point inside a solid voxel is blocked by it. A `to` exactly on a
    /// voxel face is a knife edge: the face's crossing, computed in f32 as every crossing is,
    /// lands within an ulp of the f32 length, on either side, so the voxel behind the face is
    /// tested for some segments and not for others. To ask "can this point be seen" aim at a
    /// point off the face, on the seen side (for feet on the ground, a little above them).
    ///
    /// # Errors
    /// The errors of [`VoxelRay::new`]; [`RayError::ZeroDirection`] when the points coincide
    /// or lie within about `1e-9` voxels of each other (a squared length below `2^-60`, whose
    /// squares a GPU may flush to zero);
    /// [`RayError::MaxDistanceTooLarge`] when they are more than [`MAX_DISTANCE_CAP`] apart.
    pub fn between(
        from: WorldPos,
        from_sub: Vec3,
        to: WorldPos,
        to_sub: Vec3,
    ) -> Result<Self, RayError> {
        let mut d = [0.0; 3];
        for (a, d) in d.iter_mut().enumerate() {
            let (f, fs) = split_sub(from.axis(a), from_sub[a])?;
            let (t, ts) = split_sub(to.axis(a), to_sub[a])?;
            // Farther apart than this on one axis, the points are farther than the cap.
            let whole = t
                .checked_sub(f)
                .filter(|w| w.unsigned_abs() <= 1 << 17)
                .ok_or(RayError::MaxDistanceTooLarge)?;
            *d = whole as f32 + (ts - fs);
        }
        let (direction, length) = segment(d)?;
        Self::new(from, from_sub, direction, length)
    }

    /// The segment that line of sight between points `a` and `b` casts: [`VoxelRay::between`]
    /// from the lower of the two points to the higher, so that line of sight between them has
    /// one answer whichever is given first (`sight_line(a, b)` equals `sight_line(b, a)`, in
    /// both modes, on every engine). Points are normalised as [`VoxelRay::new`] does, then
    /// ordered by voxel x, y, z, then by offset x, y, z (IEEE total order). A blocked answer's
    /// distance and face are those seen from the lower point; under
    /// [`OriginPolicy::SkipOriginVoxel`] the voxel holding the lower point is skipped and the
    /// one holding the higher point is tested.
    ///
    /// Points that coincide, or lie within about `1e-9` voxels of each other (where `between`
    /// answers [`RayError::ZeroDirection`]), give the segment of length 0 from the lower point
    /// along +x: line of sight then examines only the voxel holding it, under the origin policy
    /// (clear under the default `SkipOriginVoxel`: two eyes at one point see each other).
    ///
    /// # Errors
    /// The errors of [`VoxelRay::new`] for either point's offset or voxel;
    /// [`RayError::MaxDistanceTooLarge`] when the points are more than [`MAX_DISTANCE_CAP`]
    /// apart.
    pub fn sight_line(
        a: WorldPos,
        a_sub: Vec3,
        b: WorldPos,
        b_sub: Vec3,
    ) -> Result<Self, RayError> {
        let a = normalised_point(a, a_sub)?;
        let b = normalised_point(b, b_sub)?;
        let (lo, hi) = if point_order(a, b).is_le() {
            (a, b)
        } else {
            (b, a)
        };
        match Self::between(lo.0, lo.1, hi.0, hi.1) {
            Err(RayError::ZeroDirection) => Self::new(lo.0, lo.1, Vec3::X, 0.0),
            segment => segment,
        }
    }

    /// [`VoxelRay::sight_line`] between two points in f64 voxel coordinates (see
    /// [`VoxelRay::from_point`]).
    ///
    /// # Errors
    /// Those of [`VoxelRay::from_point`] for either point, then those of
    /// [`VoxelRay::sight_line`].
    pub fn sight_line_points(a: DVec3, b: DVec3) -> Result<Self, RayError> {
        let (a, a_sub) = split_point(a)?;
        let (b, b_sub) = split_point(b)?;
        Self::sight_line(a, a_sub, b, b_sub)
    }

    /// [`VoxelRay::new`] from a point in f64 voxel coordinates, for engines that keep
    /// positions as floats near the world's origin (an f32 position converts with
    /// `as_dvec3()`). The origin voxel is the point's floor on each axis (so `-0.25` lies in
    /// voxel `-1`) and the offset its f64 fraction rounded to f32; a fraction that rounds up
    /// to 1 moves the point onto the next voxel's face, as in [`VoxelRay::new`].
    ///
    /// # Errors
    /// [`RayError::NonFinitePoint`] for a NaN or infinite point component,
    /// [`RayError::OriginOutOfRange`] for one outside the i128 world; otherwise those of
    /// [`VoxelRay::new`].
    pub fn from_point(point: DVec3, direction: Vec3, max_distance: f32) -> Result<Self, RayError> {
        let (origin, sub) = split_point(point)?;
        Self::new(origin, sub, direction, max_distance)
    }

    /// [`VoxelRay::between`] for two points in f64 voxel coordinates (see
    /// [`VoxelRay::from_point`]): the segment a line-of-sight test checks, from an eye to a
    /// target.
    ///
    /// # Errors
    /// Those of [`VoxelRay::from_point`] for either point, then those of
    /// [`VoxelRay::between`].
    pub fn between_points(from: DVec3, to: DVec3) -> Result<Self, RayError> {
        let (from, from_sub) = split_point(from)?;
        let (to, to_sub) = split_point(to)?;
        Self::between(from, from_sub, to, to_sub)
    }

    /// The point at distance `t` (voxels along the direction) as a voxel and an offset in
    /// `[0, 1)` (computed in f64 relative to the origin voxel, so it is exact to f64 precision
    /// anywhere in the i128 world). Returns `None` when the point leaves the i128 world or `t`
    /// is NaN or infinite.
    #[must_use]
    pub fn point_at(&self, t: f32) -> Option<(WorldPos, Vec3)> {
        if !t.is_finite() {
            return None;
        }
        let rel = self.sub_offset.as_dvec3() + self.direction.as_dvec3() * f64::from(t);
        let whole = rel.floor();
        let frac = (rel - whole)
            .as_vec3()
            .min(Vec3::splat(1.0 - f32::EPSILON / 2.0));
        let p = WorldPos::new(
            add_whole(self.origin.x, whole.x)?,
            add_whole(self.origin.y, whole.y)?,
            add_whole(self.origin.z, whole.z)?,
        );
        Some((p, frac))
    }

    /// Checks the ray as [`VoxelRay::new`] would, and returns the per-axis parameters the DDA
    /// steps with. `Ok(None)` means the ray starts on the outer face of the i128 world moving
    /// out of it, and can only miss.
    ///
    /// # Errors
    /// As [`VoxelRay::new`].
    // Inlined so that the prepared ray is built in its caller's frame, not returned through memory.
    #[inline(always)]
    pub(crate) fn prepare(&self) -> Result<Option<PreparedRay>, RayError> {
        Self::validated(
            self.origin,
            self.sub_offset,
            self.direction,
            self.max_distance,
        )?
        .prepare_valid()
    }

    /// [`VoxelRay::prepare`] for a ray already checked (as [`VoxelRay::new`] makes them).
    #[inline(always)]
    fn prepare_valid(&self) -> Result<Option<PreparedRay>, RayError> {
        let r = self;
        // The three axes at once (`first_crossing`, `first_voxel` and the enable test of
        // each, the same operations lane by lane, so the same bits).
        let d = Vec3A::from(r.direction);
        let sub = Vec3A::from(r.sub_offset);
        let down = d.cmplt(Vec3A::ZERO);
        let on_low_face = sub.cmpeq(Vec3A::ZERO);
        let b = Vec3A::select(
            down,
            Vec3A::select(on_low_face, Vec3A::ONE, sub),
            Vec3A::ONE - sub,
        );
        let inv = Vec3A::ONE / d.abs();
        // Disable an axis that never crosses within max distance: no infinity, NaN or
        // denormal ever reaches the stepping arithmetic (the GPU may assume they don't occur).
        let enabled = d.cmpne(Vec3A::ZERO)
            & inv.is_finite_mask()
            & (b * inv).cmple(Vec3A::splat(r.max_distance));
        let inv = Vec3A::select(enabled, inv, Vec3A::ONE);
        let (down, enabled) = (down.bitmask(), enabled.bitmask());
        let mut start = r.origin;
        // The start voxel moves down on an axis where the start point lies on the low face
        // and the ray moves down (`first_voxel`).
        let moved = down & on_low_face.bitmask();
        if moved != 0 {
            for a in 0..3 {
                match first_voxel(r.origin.axis(a), r.sub_offset[a], r.direction[a]) {
                    Some(v) => set_axis(&mut start, a, v),
                    None => return Ok(None),
                }
            }
        }
        let p = PreparedRay {
            start,
            sub: r.sub_offset,
            dir: r.direction,
            max_distance: r.max_distance,
            b: b.to_array(),
            inv: inv.to_array(),
            step: std::array::from_fn(|a| 1 - 2 * (down >> a & 1) as i8),
            enabled: std::array::from_fn(|a| enabled >> a & 1 != 0),
        };
        Ok(Some(p))
    }
}

/// A start point checked and normalised once for many rays: a camera's eye, a sensor's pose,
/// a run of a batch's rays from one point. Rays prepared from it equal those that
/// [`VoxelRay::prepare`] makes of the same rays, bit for bit and error for error.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SharedStart {
    /// The normalised origin voxel and sub-offset (see [`normalised_point`]).
    pub(crate) origin: WorldPos,
    pub(crate) sub: Vec3,
}

impl SharedStart {
    /// The start point `origin + sub`, normalised.
    ///
    /// # Errors
    /// As [`normalised_point`]. Its rays' own errors may take precedence (a NaN max distance is
    /// reported before a bad origin): a caller whose start fails prepares its rays one by one.
    pub(crate) fn new(origin: WorldPos, sub: Vec3) -> Result<Self, RayError> {
        let (origin, sub) = normalised_point(origin, sub)?;
        Ok(Self { origin, sub })
    }

    /// The ray from this start in `direction` (any length, normalised as [`VoxelRay::new`]
    /// does), prepared: what [`VoxelRay::prepare`] gives for it.
    ///
    /// # Errors
    /// As [`VoxelRay::new`] for the direction and the max distance.
    #[inline(always)]
    pub(crate) fn prepare(
        &self,
        direction: Vec3,
        max_distance: f32,
    ) -> Result<Option<PreparedRay>, RayError> {
        let max_distance = checked_max_distance(max_distance)?;
        let direction = unit_direction(direction)?;
        VoxelRay {
            origin: self.origin,
            sub_offset: self.sub,
            direction,
            max_distance,
        }
        .prepare_valid()
    }
}

#[inline]
pub(crate) fn set_axis(p: &mut WorldPos, a: usize, v: i128) {
    match a {
        0 => p.x = v,
        1 => p.y = v,
        _ => p.z = v,
    }
}

/// The start voxel on one axis: the voxel that holds `p(t)` for small `t > 0`. That is the
/// origin voxel, except when the start point lies exactly on its low face (`sub == 0`) and the
/// ray moves down (`d < 0`; `-0.0` is not below zero): then it is `origin - 1`. `None` when that
/// leaves the i128 world. Mirrored inside `prepare_axis` in `shaders/rays.wgsl` (which works
/// relative to the window anchor).
#[inline]
#[must_use]
pub(crate) fn first_voxel(origin: i128, sub: f32, d: f32) -> Option<i128> {
    if d < 0.0 && sub == 0.0 {
        origin.checked_sub(1)
    } else {
        Some(origin)
    }
}

/// Distance, in units of `1/|d|`, from the start point to the first crossing on one axis:
/// `1 - sub` moving up, `sub` moving down, and a whole voxel (`1`) when the start point lies on
/// the face the ray moves away from. Mirrored inside `prepare_axis` in `shaders/rays.wgsl`.
#[inline]
#[must_use]
pub(crate) fn first_crossing(sub: f32, d: f32) -> f32 {
    if d < 0.0 {
        if sub == 0.0 { 1.0 } else { sub }
    } else {
        1.0 - sub
    }
}

/// A validated ray with the per-axis DDA parameters, computed once on the host and shared by
/// the CPU reference and the GPU upload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PreparedRay {
    /// The voxel that holds the ray just after its start point (see [`first_voxel`]).
    pub(crate) start: WorldPos,
    /// Sub offset in `[0, 1)`, denormals flushed.
    pub(crate) sub: Vec3,
    /// Unit direction, denormals flushed.
    pub(crate) dir: Vec3,
    /// Max distance in voxels.
    pub(crate) max_distance: f32,
    /// Per axis, the first crossing's distance in units of `inv` (see [`first_crossing`]).
    pub(crate) b: [f32; 3],
    /// Per axis `1 / |d|` in f32 (1.0 on a disabled axis, never read there).
    pub(crate) inv: [f32; 3],
    /// Per axis, the voxel step: `+1` or `-1`.
    pub(crate) step: [i8; 3],
    /// Per axis, whether the ray crosses a boundary on it within max distance.
    pub(crate) enabled: [bool; 3],
}

impl PreparedRay {
    /// The (normalised) origin voxel: `start`, moved back up by one on each axis where
    /// [`first_voxel`] moved it down.
    #[must_use]
    pub(crate) fn origin(&self) -> WorldPos {
        WorldPos::from_array(std::array::from_fn(|a| {
            let s = self.start.axis(a);
            if self.dir[a] < 0.0 && self.sub[a] == 0.0 {
                s + 1
            } else {
                s
            }
        }))
    }

    /// Offset of the start point inside the start voxel on each axis: `sub`, or `1.0` on an
    /// axis where [`first_voxel`] moved the start voxel down by one.
    #[inline]
    #[must_use]
    pub(crate) fn start_offset(&self) -> Vec3 {
        Vec3::from_array(std::array::from_fn(|a| {
            if self.dir[a] < 0.0 && self.sub[a] == 0.0 {
                1.0
            } else {
                self.sub[a]
            }
        }))
    }

    /// The axes (bit `a` for axis `a`) on which the ray lies in a voxel face plane: a zero
    /// direction component (after the denormal flush) with the start point on the start
    /// voxel's low face. Along such an axis the ray touches the voxels on both sides of the
    /// plane for its whole length; conservative line of sight walks both layers.
    #[inline]
    #[must_use]
    pub(crate) fn plane_axes(&self) -> u32 {
        (0..3)
            .filter(|&a| self.dir[a] == 0.0 && self.sub[a] == 0.0)
            .fold(0, |m, a| m | 1 << a)
    }

    /// The same ray moved one voxel down on the axes of `mask` (a subset of
    /// [`PreparedRay::plane_axes`], where that changes no crossing), or `None` where that
    /// leaves the i128 world.
    pub(crate) fn shifted_down(&self, mask: u32) -> Option<Self> {
        let mut out = *self;
        for a in (0..3).filter(|&a| mask >> a & 1 != 0) {
            set_axis(&mut out.start, a, self.start.axis(a).checked_sub(1)?);
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::VoxelId;
    use glam::{IVec3, Vec2};

    /// The integer floor equals `f32::floor` across the range where it converts, at its
    /// edges and beyond; `add_whole`'s one-instruction path equals the wide conversion.
    #[test]
    fn floor_and_add_whole_equal_the_library() {
        let mut xs = vec![
            -0.0f32,
            0.0,
            0.5,
            -0.5,
            1.0,
            -1.0,
            1.5,
            -1.5,
            8_388_607.5,
            -8_388_607.5,
            8_388_608.0,
            -8_388_608.0,
            1e30,
            -1e30,
            f32::MAX,
            f32::MIN,
            1e-40,
            -1e-40,
        ];
        let mut rng = voxcast_testkit::SplitMix64::new(3);
        for _ in 0..100_000 {
            xs.push(f32::from_bits(rng.next_u64() as u32));
        }
        for x in xs.into_iter().filter(|x| x.is_finite()) {
            assert_eq!(floor(x).to_bits(), x.floor().to_bits(), "floor({x:e})");
            let w = f64::from(x.floor());
            let wide = if w.abs() < 1.7e38 {
                5i128.checked_add(w as i128)
            } else {
                None
            };
            if w.abs() < 1.7e38 {
                assert_eq!(add_whole(5, w), wide, "add_whole(5, {w:e})");
            }
        }
    }

    /// `prepare` takes the three axes at once: each axis gets what the per-axis definitions
    /// give it (`first_voxel`, `first_crossing`, `1 / |d|` and the enable test), bit for bit,
    /// over directions with zero, denormal, tiny and huge components of both signs, start
    /// points on faces and offsets to be normalised, short and long max distances, and origins
    /// at the i128 edges; and a ray prepared from a shared start equals it.
    #[test]
    fn prepare_equals_the_per_axis_definitions() {
        let mut rng = voxcast_testkit::SplitMix64::new(64);
        let pick = |r: &mut voxcast_testkit::SplitMix64, from: &[f32]| {
            from[r.below(from.len() as u64) as usize]
        };
        let comps = [
            0.0, -0.0, 1e-39, -1e-39, 1e-30, -1e-30, 1.0, -1.0, 0.3, -0.7,
        ];
        let subs = [
            0.0,
            0.5,
            1e-39,
            0.999_999_94,
            0.25,
            1.0,
            -0.25,
            2.75,
            f32::NAN,
        ];
        let maxes = [0.0, 1e-3, 0.5, 1.0, 7.5, 1e4, f32::INFINITY];
        let origins = [0, -5, i128::MIN, i128::MAX, i128::MIN + 1];
        for i in 0..100_000 {
            let d = Vec3::from_array(std::array::from_fn(|_| {
                if rng.below(3) == 0 {
                    pick(&mut rng, &comps)
                } else {
                    rng.next_f32() * 2.0 - 1.0
                }
            }));
            let sub = Vec3::from_array(std::array::from_fn(|_| pick(&mut rng, &subs)));
            let origin = WorldPos::from_array(std::array::from_fn(|_| {
                let o = origins[rng.below(origins.len() as u64) as usize];
                if i % 2 == 0 { o } else { o / 2 }
            }));
            let ray = VoxelRay {
                origin,
                sub_offset: sub,
                direction: d,
                max_distance: pick(&mut rng, &maxes),
            };
            // From a shared start that is good: the same prepared ray, or the same error.
            if let Ok(from) = SharedStart::new(ray.origin, ray.sub_offset) {
                assert_eq!(
                    from.prepare(ray.direction, ray.max_distance),
                    ray.prepare(),
                    "{ray:?}"
                );
            }
            let Ok(r) =
                VoxelRay::validated(ray.origin, ray.sub_offset, ray.direction, ray.max_distance)
            else {
                assert!(ray.prepare().is_err());
                continue;
            };
            let mut start = r.origin;
            let mut none = false;
            for a in 0..3 {
                match first_voxel(r.origin.axis(a), r.sub_offset[a], r.direction[a]) {
                    Some(v) => set_axis(&mut start, a, v),
                    None => none = true,
                }
            }
            let p = ray.prepare().expect("valid");
            if none {
                assert_eq!(p, None, "{ray:?}");
                continue;
            }
            let p = p.expect("prepared");
            assert_eq!(p.start, start, "{ray:?}");
            for a in 0..3 {
                let (dv, sv) = (r.direction[a], r.sub_offset[a]);
                let b = first_crossing(sv, dv);
                let inv = 1.0 / dv.abs();
                let enabled = dv != 0.0 && inv.is_finite() && b * inv <= r.max_distance;
                assert_eq!(p.step[a], if dv < 0.0 { -1 } else { 1 }, "{ray:?} axis {a}");
                assert_eq!(p.b[a].to_bits(), b.to_bits(), "{ray:?} axis {a}");
                assert_eq!(p.enabled[a], enabled, "{ray:?} axis {a}");
                let want = if enabled { inv } else { 1.0 };
                assert_eq!(p.inv[a].to_bits(), want.to_bits(), "{ray:?} axis {a}");
            }
        }
    }

    /// `segment`'s direction is unit to well within the `1e-5` that `VoxelRay::new` keeps as
    /// given, so a segment's ray has `segment`'s bits (what the GPU computes): over difference
    /// vectors from `2^-30` to the cap on every axis, of every sign.
    #[test]
    fn segment_directions_are_kept_as_given() {
        let mut rng = voxcast_testkit::SplitMix64::new(31);
        let mut tried = 0;
        while tried < 200_000 {
            let magnitude = |r: &mut voxcast_testkit::SplitMix64| {
                let e = r.below(48) as i32 - 30;
                let sign = if r.below(2) == 0 { 1.0 } else { -1.0 };
                let zero = r.below(5) == 0;
                if zero {
                    0.0
                } else {
                    sign * (1.0 + r.next_f32()) * 2f32.powi(e)
                }
            };
            let d = [
                magnitude(&mut rng),
                magnitude(&mut rng),
                magnitude(&mut rng),
            ];
            let Ok((dir, len)) = segment(d) else {
                continue;
            };
            tried += 1;
            let r = VoxelRay::new(WorldPos::ZERO, Vec3::splat(0.5), dir, len).expect("a ray");
            let kept = Vec3::new(
                flush_denormal(dir.x),
                flush_denormal(dir.y),
                flush_denormal(dir.z),
            );
            assert_eq!(r.direction, kept, "d {d:?}");
            assert!(
                (dir.length_squared() - 1.0).abs() < 2e-6,
                "d {d:?}: {dir:?}"
            );
        }
    }

    /// The parity contract's comparison: UV within the tolerance in each component, a NaN
    /// in either component a mismatch, distances bit for bit (so -0.0 is not 0.0).
    #[test]
    fn matches_follows_the_parity_contract() {
        let hit = VoxelRaycastHit {
            voxel_pos: WorldPos::new(1, 2, 3),
            face_normal: IVec3::NEG_X,
            distance: 0.0,
            voxel_type: VoxelId(1),
            hit_uv: Vec2::new(0.25, 0.75),
        };
        let with_uv = |u: f32, v: f32| VoxelRaycastHit {
            hit_uv: Vec2::new(u, v),
            ..hit
        };
        assert!(hit.matches(&hit));
        assert!(hit.matches(&with_uv(
            0.25 + UV_TOLERANCE / 2.0,
            0.75 - UV_TOLERANCE / 2.0
        )));
        for other in [
            with_uv(f32::NAN, 0.75),
            with_uv(0.25, f32::NAN),
            with_uv(0.25 + 4.0 * UV_TOLERANCE, 0.75),
            with_uv(0.25, 0.75 - 4.0 * UV_TOLERANCE),
            VoxelRaycastHit {
                distance: -0.0,
                ..hit
            },
            VoxelRaycastHit {
                voxel_type: VoxelId(2),
                ..hit
            },
        ] {
            assert!(!hit.matches(&other), "{hit:?} matched {other:?}");
            assert!(!other.matches(&hit), "{other:?} matched {hit:?}");
            assert!(!RaycastOutcome::Hit(hit).matches(&RaycastOutcome::Hit(other)));
        }
    }

    /// `previous_pos` (and so `place_block`) only moves through one of the six faces.
    #[test]
    fn previous_pos_needs_a_unit_face_normal() {
        let at = |face_normal: IVec3| VoxelRaycastHit {
            voxel_pos: WorldPos::new(-1, 5, i128::MAX),
            face_normal,
            distance: 1.0,
            voxel_type: VoxelId(1),
            hit_uv: Vec2::ZERO,
        };
        assert_eq!(
            at(IVec3::NEG_X).previous_pos(),
            Some(WorldPos::new(-2, 5, i128::MAX))
        );
        assert_eq!(
            at(IVec3::Y).previous_pos(),
            Some(WorldPos::new(-1, 6, i128::MAX))
        );
        for bad in [
            IVec3::ZERO,
            IVec3::Z,
            IVec3::new(i32::MAX, 0, 0),
            IVec3::new(i32::MIN, 0, 0),
            IVec3::new(1, 1, 0),
            IVec3::new(2, 0, 0),
        ] {
            assert_eq!(at(bad).previous_pos(), None, "{bad}");
        }
    }

    /// `Camera::rays` documents its memory as 80 bytes a ray.
    #[test]
    fn voxel_ray_is_80_bytes() {
        assert_eq!(size_of::<VoxelRay>(), 80);
    }

    #[test]
    fn new_rejects_each_bad_input() {
        let o = WorldPos::ZERO;
        let s = Vec3::ZERO;
        assert_eq!(
            VoxelRay::new(o, s, Vec3::ZERO, 1.0),
            Err(RayError::ZeroDirection)
        );
        assert_eq!(
            VoxelRay::new(o, s, Vec3::new(f32::NAN, 0.0, 1.0), 1.0),
            Err(RayError::NanDirection)
        );
        assert_eq!(
            VoxelRay::new(o, s, Vec3::new(f32::INFINITY, 0.0, 1.0), 1.0),
            Err(RayError::InfiniteDirection)
        );
        assert_eq!(
            VoxelRay::new(o, s, Vec3::X, f32::NAN),
            Err(RayError::NanMaxDistance)
        );
        assert_eq!(
            VoxelRay::new(o, s, Vec3::X, -1.0),
            Err(RayError::NegativeMaxDistance)
        );
        for unbounded in [f32::INFINITY, f32::MAX] {
            let r = VoxelRay::new(o, s, Vec3::X, unbounded).expect("no limit is a valid ray");
            assert_eq!(r.max_distance.to_bits(), MAX_DISTANCE_CAP.to_bits());
        }
        // Farther than the cap: the ray looks as far as the cap.
        for far in [MAX_DISTANCE_CAP.next_up(), MAX_DISTANCE_CAP * 2.0, 1e30] {
            let r = VoxelRay::new(o, s, Vec3::X, far).expect("a far ray is a valid ray");
            assert_eq!(r.max_distance.to_bits(), MAX_DISTANCE_CAP.to_bits());
        }
        assert_eq!(
            VoxelRay::new(o, s, Vec3::X, f32::NEG_INFINITY),
            Err(RayError::NegativeMaxDistance)
        );
        assert_eq!(
            VoxelRay::new(o, Vec3::new(0.0, f32::NAN, 0.0), Vec3::X, 1.0),
            Err(RayError::NonFiniteSubOffset)
        );
        assert_eq!(
            VoxelRay::new(
                WorldPos::new(i128::MAX, 0, 0),
                Vec3::new(2.0, 0.0, 0.0),
                Vec3::X,
                1.0
            ),
            Err(RayError::OriginOutOfRange)
        );
        // A tiny direction is still a direction: it is normalised in f64 before any flushing.
        let tiny = VoxelRay::new(o, s, Vec3::new(1e-40, 0.0, -1e-40), 1.0).expect("tiny but valid");
        assert!((tiny.direction.length() - 1.0).abs() < 1e-6);
    }

    #[test]
    fn sub_offset_is_normalised() {
        let r = VoxelRay::new(WorldPos::ZERO, Vec3::new(-0.25, 2.5, -1e-9), Vec3::X, 1.0)
            .expect("valid");
        assert_eq!(r.origin, WorldPos::new(-1, 2, 0));
        assert_eq!(r.sub_offset, Vec3::new(0.75, 0.5, 0.0));
        let r =
            VoxelRay::new(WorldPos::ZERO, Vec3::new(1e-40, 0.0, 0.0), Vec3::X, 1.0).expect("valid");
        assert_eq!(r.sub_offset.x, 0.0);
    }

    #[test]
    fn face_start_rule() {
        assert_eq!(first_voxel(5, 0.0, -1.0), Some(4));
        assert_eq!(first_voxel(5, 0.0, -0.0), Some(5));
        assert_eq!(first_voxel(5, 0.0, 1.0), Some(5));
        assert_eq!(first_voxel(i128::MIN, 0.0, -1.0), None);
        assert_eq!(first_crossing(0.0, -1.0), 1.0);
        assert_eq!(first_crossing(0.25, -1.0), 0.25);
        assert_eq!(first_crossing(0.25, 1.0), 0.75);
    }

    #[test]
    fn filter_sets() {
        let f = MaterialFilter::default();
        assert!(f.is_every_non_air() && !f.contains(VoxelId::AIR) && f.contains(VoxelId(65535)));
        let f = f.without(VoxelId(7));
        assert!(!f.is_every_non_air() && !f.contains(VoxelId(7)));
        assert!(f.with(VoxelId(7)).is_every_non_air());
        assert!(!MaterialFilter::only(&[VoxelId::AIR]).contains(VoxelId::AIR));
    }
}
