//! Sensors: rays in fixed directions of an agent's own frame (a vision cone, steering whiskers,
//! a LiDAR-like sweep), cast from each agent's pose every frame. The CPU reference of the GPU's
//! sensor call, which makes every ray in the shader exactly as [`SensorPose::ray`] makes it.
//!
//! A rig's directions and a pose's rotation are quantized when they are made (directions to
//! multiples of `2^-22`, a rotation to 20 bits for each of its three smallest components), so
//! that every value the rotation computes is 0 or far above the subnormal range and any GPU
//! that rounds `+ - *` to nearest computes the same bits: the rays are those of the quantized
//! rig and rotation, within about `1e-6` radians of the given ones.

use glam::{DQuat, DVec3, Quat, Vec3};
use rayon::prelude::*;

use crate::coords::WorldPos;
use crate::cpu_ref::Cast;
use crate::cpu_ref::sweep::{SweepOrder, sweeps};
use crate::ray::{
    RayError, RaycastOptions, RaycastOutcome, SharedStart, VoxelRay, normalised_point,
};
use crate::world::VoxelWorld;

/// Most rays a [`SensorRig`] holds.
pub const MAX_RIG_RAYS: usize = 1 << 16;

/// A rig direction's components are multiples of this: `2^-22`.
const DIRECTION_STEP: f64 = 1.0 / (1u64 << 22) as f64;

/// A packed rotation's three smallest components are multiples of this: `2^-19`.
pub(crate) const ROTATION_STEP: f32 = 1.0 / (1u32 << 19) as f32;

/// A packed component's bits: 20, two's complement.
const COMPONENT_BITS: u32 = 20;

/// Why a [`SensorRig`] could not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SensorRigError {
    /// Ray `index` has a direction or max distance that no ray may have.
    #[error("sensor ray {index}: {error}")]
    Ray {
        /// The ray's index in the rig.
        index: usize,
        /// What is wrong with it.
        error: RayError,
    },
    /// The rig has more than [`MAX_RIG_RAYS`] rays (the count is given).
    #[error("a sensor rig holds at most {MAX_RIG_RAYS} rays, this one has {0}")]
    TooManyRays(usize),
}

/// Directions in an agent's own frame, each with its max distance: the rays of a sensor, cast
/// from every agent's [`SensorPose`] with [`sense`] (or the GPU's sensor call, which uploads
/// the rig once). The agent's frame has `-Z` forward, `+Y` up and `+X` to the right (Bevy's
/// and glTF's convention).
///
/// Directions are normalised and quantized when the rig is made (see the module docs); max
/// distances are checked as [`VoxelRay::new`] checks them.
#[derive(Clone, Debug, PartialEq)]
pub struct SensorRig {
    /// Per ray: the quantized unit direction (x, y, z) and the max distance, as the GPU reads
    /// them.
    rays: Vec<[f32; 4]>,
    /// The rays in groups of nearby directions, cast together from each pose.
    order: SweepOrder,
}

impl SensorRig {
    /// A rig of the given rays: (direction in the agent's frame, max distance in voxels, at
    /// most [`MAX_DISTANCE_CAP`](crate::MAX_DISTANCE_CAP): farther, `f32::INFINITY` included,
    /// means the cap). Any finite non-zero direction is normalised.
    ///
    /// # Errors
    /// [`SensorRigError::Ray`] for a zero or non-finite direction or a max distance that is
    /// NaN or negative; [`SensorRigError::TooManyRays`] above
    /// [`MAX_RIG_RAYS`].
    pub fn new(rays: &[(Vec3, f32)]) -> Result<Self, SensorRigError> {
        if rays.len() > MAX_RIG_RAYS {
            return Err(SensorRigError::TooManyRays(rays.len()));
        }
        let quantized = rays
            .iter()
            .enumerate()
            .map(|(index, &(direction, max_distance))| {
                quantize_ray(direction, max_distance)
                    .map_err(|error| SensorRigError::Ray { index, error })
            })
            .collect::<Result<Vec<[f32; 4]>, _>>()?;
        let dirs: Vec<Vec3> = quantized
            .iter()
            .map(|&[x, y, z, _]| Vec3::new(x, y, z))
            .collect();
        Ok(Self {
            order: SweepOrder::of(&dirs),
            rays: quantized,
        })
    }

    /// A vision cone: `rays` directions spread evenly over the cone of half angle
    /// `half_angle_degrees` (0 to 180) around forward (`-Z`), on a golden-angle spiral from
    /// the center out, each `max_distance` voxels long.
    ///
    /// Where the rays lie, for `n = rays` and half angle `h`: ray `i` (from 0) is `θᵢ` off
    /// forward, with `cos θᵢ = 1 − (i + ½) / n · (1 − cos h)` (each ray the center of an equal
    /// share of the cone's solid angle), turned `i · 137.5…°` (the golden angle,
    /// `180° · (3 − √5)`) about forward from `+X` towards `+Y`: its direction is
    /// `(sin θᵢ cos φᵢ, sin θᵢ sin φᵢ, −cos θᵢ)` with `φᵢ = i · 137.5…°`. So the first ray is
    /// not straight ahead: it lies a little to the right (`+X`, no `Y`), `θ₀` off forward with
    /// `cos θ₀ = 1 − (1 − cos h) / (2n)` (2.62° for 64 rays in 30°), and the last lies just
    /// inside the cone's edge; for a half angle above 0 no ray points exactly along `-Z` or
    /// along the edge.
    ///
    /// # Errors
    /// As [`SensorRig::new`]; a NaN half angle gives NaN directions.
    pub fn cone(
        rays: usize,
        half_angle_degrees: f32,
        max_distance: f32,
    ) -> Result<Self, SensorRigError> {
        let cos_edge = f64::from(half_angle_degrees.clamp(0.0, 180.0))
            .to_radians()
            .cos();
        let golden = std::f64::consts::PI * (3.0 - 5f64.sqrt());
        let dirs: Vec<(Vec3, f32)> = (0..rays)
            .map(|i| {
                let along = 1.0 - (i as f64 + 0.5) / rays as f64 * (1.0 - cos_edge);
                let across = (1.0 - along * along).max(0.0).sqrt();
                let turn = golden * i as f64;
                let d = DVec3::new(across * turn.cos(), across * turn.sin(), -along);
                (d.as_vec3(), max_distance)
            })
            .collect();
        Self::new(&dirs)
    }

    /// Steering whiskers: `count` horizontal rays (no `Y` component) spread evenly across
    /// `spread_degrees` around forward (`-Z`), each `length` voxels long.
    ///
    /// Whisker `i` (from 0) lies `aᵢ = spread · (i / (count − 1) − ½)` to the left of forward,
    /// its direction `(−sin aᵢ, 0, −cos aᵢ)`: the first is `spread / 2` to the right (`+X`),
    /// the last `spread / 2` to the left (`-X`), the whiskers `spread / (count − 1)` apart
    /// from right to left. Only an odd count has a whisker straight ahead (the middle one,
    /// `i = (count − 1) / 2`); an even count has none, its two middle whiskers
    /// `spread / (2 (count − 1))` either side of forward (±6.43° for 8 across 90°). A single
    /// whisker points straight ahead.
    ///
    /// ```
    /// use voxcast::SensorRig;
    ///
    /// let rig = SensorRig::whiskers(8, 90.0, 4.0)?;
    /// let (first, length) = rig.ray(0).expect("8 whiskers");
    /// assert!(first.x > 0.0 && first.y == 0.0, "45° to the right: {first}");
    /// assert!((first.x - 45f32.to_radians().sin()).abs() < 1e-6);
    /// assert_eq!(length, 4.0);
    /// assert!(rig.ray(7).expect("8 whiskers").0.x < 0.0, "the last to the left");
    /// // An even count: no whisker straight ahead.
    /// assert!((0..8).all(|i| rig.ray(i).expect("8 whiskers").0.x != 0.0));
    /// # Ok::<(), voxcast::SensorRigError>(())
    /// ```
    ///
    /// # Errors
    /// As [`SensorRig::new`].
    pub fn whiskers(
        count: usize,
        spread_degrees: f32,
        length: f32,
    ) -> Result<Self, SensorRigError> {
        let spread = f64::from(spread_degrees).to_radians();
        let dirs: Vec<(Vec3, f32)> = (0..count)
            .map(|i| {
                let a = if count > 1 {
                    spread * (i as f64 / (count - 1) as f64 - 0.5)
                } else {
                    0.0
                };
                (DVec3::new(-a.sin(), 0.0, -a.cos()).as_vec3(), length)
            })
            .collect();
        Self::new(&dirs)
    }

    /// A LiDAR-like sweep: `rows` elevations spread evenly across `vertical_fov_degrees`
    /// (centered on the horizon, the top row first), each swept through `columns` headings
    /// evenly around the full circle (the first straight ahead, `-Z`, then turning left), row
    /// after row, each `max_distance` voxels long.
    ///
    /// Where the rays lie, for field of view `v`: the rows are the centers of `rows` equal
    /// bands of `v`, row `r` (from 0, the top) at elevation `eᵣ = v · (½ − (r + ½) / rows)`.
    /// So the top row is `v / 2 − v / (2 · rows)` above the horizon, not `v / 2` (14.0625° for
    /// 16 rows over 30°, the rows 1.875° apart), the bottom row as far below it, and an even
    /// number of rows has none on the horizon. Column `c` (from 0) is at heading
    /// `h_c = 360° · c / columns` to the left of forward (about `+Y`), and ray
    /// `r · columns + c` has the direction `(−cos eᵣ sin h_c, sin eᵣ, −cos eᵣ cos h_c)`.
    ///
    /// # Errors
    /// As [`SensorRig::new`].
    pub fn lidar(
        rows: usize,
        columns: usize,
        vertical_fov_degrees: f32,
        max_distance: f32,
    ) -> Result<Self, SensorRigError> {
        let fov = f64::from(vertical_fov_degrees).to_radians();
        let mut dirs = Vec::with_capacity(rows.saturating_mul(columns).min(MAX_RIG_RAYS + 1));
        'all: for r in 0..rows {
            let pitch = fov * (0.5 - (r as f64 + 0.5) / rows as f64);
            for c in 0..columns {
                if dirs.len() > MAX_RIG_RAYS {
                    break 'all;
                }
                let yaw = std::f64::consts::TAU * c as f64 / columns as f64;
                let d = DVec3::new(
                    -pitch.cos() * yaw.sin(),
                    pitch.sin(),
                    -pitch.cos() * yaw.cos(),
                );
                dirs.push((d.as_vec3(), max_distance));
            }
        }
        if rows.saturating_mul(columns) > MAX_RIG_RAYS {
            return Err(SensorRigError::TooManyRays(rows.saturating_mul(columns)));
        }
        Self::new(&dirs)
    }

    /// How many rays there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.rays.len()
    }

    /// Whether there are no rays.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.rays.is_empty()
    }

    /// Ray `k`'s direction in the agent's frame (unit, quantized) and max distance; `None`
    /// past the end.
    #[must_use]
    pub fn ray(&self, k: usize) -> Option<(Vec3, f32)> {
        self.rays
            .get(k)
            .map(|&[x, y, z, max]| (Vec3::new(x, y, z), max))
    }

    /// The rays as the GPU reads them: direction x, y, z and max distance.
    #[cfg(feature = "gpu")]
    pub(crate) fn words(&self) -> &[[f32; 4]] {
        &self.rays
    }
}

/// A rig ray's direction normalised (in f64) and quantized to multiples of `2^-22`, and its max
/// distance checked (`+0.0` for `-0.0`, subnormals flushed).
fn quantize_ray(direction: Vec3, max_distance: f32) -> Result<[f32; 4], RayError> {
    // A ray of the rig from the origin: VoxelRay::new's checks of direction and max distance.
    let ray = VoxelRay::new(WorldPos::ZERO, Vec3::ZERO, direction, max_distance)?;
    let d = direction.as_dvec3().normalize();
    let q = (d / DIRECTION_STEP).round() * DIRECTION_STEP;
    if q == DVec3::ZERO {
        return Err(RayError::ZeroDirection);
    }
    let max = if ray.max_distance < f32::MIN_POSITIVE {
        0.0
    } else {
        ray.max_distance
    };
    Ok([q.x as f32, q.y as f32, q.z as f32, max])
}

/// Where an agent's sensors are and which way they face: the voxel `position` plus `offset`
/// inside it (any finite offset, normalised as [`VoxelRay::new`] normalises a ray's), and the
/// `rotation` from the agent's frame (`-Z` forward, `+Y` up) to the world's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SensorPose {
    /// The voxel holding the sensors' origin.
    pub position: WorldPos,
    /// The origin inside `position`, in voxels.
    pub offset: Vec3,
    /// Unit quaternion from the agent's frame to the world's. One whose squared length is more
    /// than `1e-3` from 1 (or not finite) is no rotation: the agent's rays are
    /// [`RayError::BadRotation`].
    pub rotation: Quat,
}

impl SensorPose {
    /// A pose at `position + offset` turned by `rotation`.
    #[must_use]
    pub fn new(position: WorldPos, offset: Vec3, rotation: Quat) -> Self {
        Self {
            position,
            offset,
            rotation,
        }
    }

    /// A pose at `position + offset` that looks `yaw` radians to the left of `-Z` (about
    /// `+Y`) and `pitch` radians up (about the agent's `+X`, after the yaw).
    #[must_use]
    pub fn from_yaw_pitch(position: WorldPos, offset: Vec3, yaw: f32, pitch: f32) -> Self {
        Self::new(
            position,
            offset,
            Quat::from_rotation_y(yaw) * Quat::from_rotation_x(pitch),
        )
    }

    /// Ray `k` of `rig` from this pose, exactly as the GPU's sensor call makes it: the rig's
    /// direction turned by the pose's quantized rotation (f32 `+ - *`, in the order of
    /// `sensor_dir` in `shaders/sensors.wgsl`) and cast from the pose's normalised origin with the
    /// rig's max distance.
    ///
    /// # Errors
    /// [`RayError::BadRotation`] for a rotation that is not a unit quaternion,
    /// [`RayError::NonFiniteSubOffset`] or [`RayError::OriginOutOfRange`] for a bad position;
    /// [`RayError::NoSuchAgent`] when `k` is past the end of the rig.
    pub fn ray(&self, rig: &SensorRig, k: usize) -> Result<VoxelRay, RayError> {
        let prepared = self.prepare()?;
        let &[x, y, z, max] = rig.rays.get(k).ok_or(RayError::NoSuchAgent)?;
        Ok(prepared.ray(Vec3::new(x, y, z), max))
    }

    /// The pose's origin normalised and its rotation packed, as the GPU reads them.
    pub(crate) fn pack(&self) -> Result<(WorldPos, Vec3, [u32; 2]), RayError> {
        // As VoxelRay::new normalises a ray's origin.
        let (origin, sub) = normalised_point(self.position, self.offset)?;
        let rotation = pack_rotation(self.rotation)?;
        Ok((origin, sub, rotation))
    }

    /// The pose's origin normalised and its rotation packed and decoded.
    pub(crate) fn prepare(&self) -> Result<PreparedPose, RayError> {
        let (origin, sub, packed) = self.pack()?;
        Ok(PreparedPose {
            origin,
            sub,
            packed,
            matrix: rotation_matrix(packed),
        })
    }
}

/// A pose ready to make rays: its normalised origin and its rotation, packed as the GPU reads
/// it and decoded into a matrix.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PreparedPose {
    pub(crate) origin: WorldPos,
    pub(crate) sub: Vec3,
    pub(crate) packed: [u32; 2],
    matrix: [[f32; 3]; 3],
}

impl PreparedPose {
    /// The ray in rig direction `d` (quantized, unit) with max distance `max`.
    pub(crate) fn ray(&self, d: Vec3, max: f32) -> VoxelRay {
        VoxelRay {
            origin: self.origin,
            sub_offset: self.sub,
            direction: self.direction(d),
            max_distance: max,
        }
    }

    /// Rig direction `d` turned by the pose.
    #[inline]
    pub(crate) fn direction(&self, d: Vec3) -> Vec3 {
        flush(sensor_dir(&self.matrix, d))
    }

    /// The pose's origin as the start point of its rays.
    pub(crate) fn start(&self) -> SharedStart {
        SharedStart {
            origin: self.origin,
            sub: self.sub,
        }
    }
}

/// Flushes subnormal components to zero, as [`VoxelRay::new`] and the shader's `prepare_axis`
/// do (a turned direction has none, but the rule is the ray's).
fn flush(d: Vec3) -> Vec3 {
    d.to_array()
        .map(|c| if c.abs() < f32::MIN_POSITIVE { 0.0 } else { c })
        .into()
}

/// `rotation` normalised (in f64) and packed in 62 bits: the index of its largest component
/// (made positive: `q` and `-q` are one rotation) in bits 0..2, then its other three
/// components in order as 20-bit two's complement multiples of `2^-19`. Twin of the decoding
/// in [`rotation_matrix`] and `rotation_matrix` in `shaders/sensors.wgsl`.
///
/// # Errors
/// [`RayError::BadRotation`] for a non-finite rotation or one whose squared length is more
/// than `1e-3` from 1.
fn pack_rotation(rotation: Quat) -> Result<[u32; 2], RayError> {
    let q = rotation.as_dquat();
    let len2 = q.length_squared();
    if !q.is_finite() || (len2 - 1.0).abs() > 1e-3 {
        return Err(RayError::BadRotation);
    }
    // One division, then products: the components' 20 bits do not see the difference.
    let q: DQuat = q * len2.sqrt().recip();
    let c = q.to_array();
    // The last of the largest magnitudes (as `max_by` picks it); they are finite here.
    let mut largest = 0;
    for i in 1..4 {
        if c[i].abs() >= c[largest].abs() {
            largest = i;
        }
    }
    let sign = if c[largest] < 0.0 { -1.0 } else { 1.0 };
    let limit = (1i64 << (COMPONENT_BITS - 1)) - 1;
    let mut bits = largest as u64;
    let mut shift = 2;
    for (i, &v) in c.iter().enumerate() {
        if i == largest {
            continue;
        }
        // Rounded half away from zero (without a libm call on targets without SSE4.1).
        let scaled = sign * v * f64::from(ROTATION_STEP.recip());
        let fixed = (scaled + 0.5f64.copysign(scaled)) as i64;
        let fixed = fixed.clamp(-limit, limit);
        bits |= (fixed as u64 & ((1 << COMPONENT_BITS) - 1)) << shift;
        shift += COMPONENT_BITS;
    }
    Ok([bits as u32, (bits >> 32) as u32])
}

/// The rotation matrix (rows) of a packed rotation ([`pack_rotation`]). Twin of
/// `rotation_matrix` in `shaders/sensors.wgsl`: the three stored components are exact f32 values
/// (multiples of `2^-19`), the largest is the root of one less their squares (at least 1/2),
/// and each entry is made with the operations below in this order, each rounded once.
fn rotation_matrix(packed: [u32; 2]) -> [[f32; 3]; 3] {
    let bits = u64::from(packed[0]) | u64::from(packed[1]) << 32;
    let largest = (bits & 3) as usize;
    let component = |shift: u32| {
        let raw = ((bits >> shift) & ((1 << COMPONENT_BITS) - 1)) as u32;
        let signed = ((raw << (32 - COMPONENT_BITS)) as i32) >> (32 - COMPONENT_BITS);
        signed as f32 * ROTATION_STEP
    };
    let stored = [component(2), component(22), component(42)];
    let squares = (stored[0] * stored[0] + stored[1] * stored[1]) + stored[2] * stored[2];
    let big = (1.0 - squares).sqrt();
    let mut q = [0.0f32; 4];
    let mut next = stored.iter();
    for (i, c) in q.iter_mut().enumerate() {
        *c = if i == largest {
            big
        } else {
            *next.next().unwrap_or(&0.0)
        };
    }
    let [x, y, z, w] = q;
    let (xx, yy, zz) = (x * x, y * y, z * z);
    let (xy, xz, yz) = (x * y, x * z, y * z);
    let (wx, wy, wz) = (w * x, w * y, w * z);
    [
        [1.0 - 2.0 * (yy + zz), 2.0 * (xy - wz), 2.0 * (xz + wy)],
        [2.0 * (xy + wz), 1.0 - 2.0 * (xx + zz), 2.0 * (yz - wx)],
        [2.0 * (xz - wy), 2.0 * (yz + wx), 1.0 - 2.0 * (xx + yy)],
    ]
}

/// Rig direction `d` turned by matrix `m`. Twin of `sensor_dir` in `shaders/sensors.wgsl`: per
/// component `(m0 · d.x + m1 · d.y) + m2 · d.z`, each operation rounded once. A unit `d` turned
/// by a decoded rotation is unit to within about `3e-6` in squared length, so
/// [`VoxelRay::new`] keeps it as it is.
fn sensor_dir(m: &[[f32; 3]; 3], d: Vec3) -> Vec3 {
    let row = |r: &[f32; 3]| (r[0] * d.x + r[1] * d.y) + r[2] * d.z;
    Vec3::new(row(&m[0]), row(&m[1]), row(&m[2]))
}

/// What one sensor ray found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SensorReading {
    /// A stopping voxel at this distance, in voxels.
    Hit(f32),
    /// Nothing within the ray's max distance.
    Miss,
    /// Under [`UnloadedPolicy::Stop`](crate::UnloadedPolicy::Stop): unloaded space at this
    /// distance.
    Unloaded(f32),
    /// The agent's pose is bad (its error), so the ray was not cast.
    Invalid(RayError),
}

/// The answers of a sensor call: for every agent (in the order of the poses) every ray of the
/// rig (in the rig's order), as one word a ray, and on request each ray's whole outcome (the
/// hit voxel, its face, id and UV).
///
/// The word of a ray ([`SensorReadings::distances`]) is its distance: `d >= 0` (`+0.0` and
/// up) for a hit at `d`, `f32::INFINITY` for a miss, `-d` (`-0.0` and down) for unloaded space
/// at `d`, NaN for an agent whose pose is bad.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SensorReadings {
    agents: usize,
    rays_per_agent: usize,
    distances: Vec<f32>,
    outcomes: Option<Vec<RaycastOutcome>>,
    /// Agents whose pose is bad, in order, with their error.
    errors: Vec<(usize, RayError)>,
}

impl SensorReadings {
    /// Makes these the readings of `agents` agents with `rays_per_agent` rays each, with room
    /// for outcomes where `outcomes`, reusing the allocations. Values kept from earlier readings
    /// are not cleared: every caller writes every ray (an answer, or its agent's error).
    pub(crate) fn reset(&mut self, agents: usize, rays_per_agent: usize, outcomes: bool) {
        let n = agents * rays_per_agent;
        self.agents = agents;
        self.rays_per_agent = rays_per_agent;
        self.distances.resize(n, f32::INFINITY);
        match (&mut self.outcomes, outcomes) {
            (Some(o), true) => o.resize(n, RaycastOutcome::Miss),
            (o, true) => *o = Some(vec![RaycastOutcome::Miss; n]),
            (o, false) => *o = None,
        }
        self.errors.clear();
    }

    /// How many agents there are.
    #[must_use]
    pub fn agents(&self) -> usize {
        self.agents
    }

    /// Rays per agent: the rig's.
    #[must_use]
    pub fn rays_per_agent(&self) -> usize {
        self.rays_per_agent
    }

    /// What ray `k` of agent `a` found; `None` past the end.
    #[must_use]
    pub fn get(&self, a: usize, k: usize) -> Option<SensorReading> {
        if k >= self.rays_per_agent {
            return None;
        }
        let word = *self.distances.get(a * self.rays_per_agent + k)?;
        Some(if word.is_nan() {
            let error = self
                .errors
                .iter()
                .find(|(i, _)| *i == a)
                .map_or(RayError::BadRotation, |&(_, e)| e);
            SensorReading::Invalid(error)
        } else if word == f32::INFINITY {
            SensorReading::Miss
        } else if word.is_sign_negative() {
            SensorReading::Unloaded(-word)
        } else {
            SensorReading::Hit(word)
        })
    }

    /// Agent `a`'s words (see the type's docs), one per ray of the rig; empty past the end.
    #[must_use]
    pub fn agent(&self, a: usize) -> &[f32] {
        let n = self.rays_per_agent;
        self.distances.get(a * n..(a + 1) * n).unwrap_or_default()
    }

    /// Every ray's word (see the type's docs), agent after agent.
    #[must_use]
    pub fn distances(&self) -> &[f32] {
        &self.distances
    }

    /// Every ray's whole outcome, agent after agent, where the call asked for them.
    #[must_use]
    pub fn outcomes(&self) -> Option<&[RaycastOutcome]> {
        self.outcomes.as_deref()
    }

    /// The agents whose pose is bad, with why.
    pub fn errors(&self) -> impl Iterator<Item = (usize, RayError)> + '_ {
        self.errors.iter().copied()
    }

    /// Equal under the parity contract: the same words bit for bit, and outcomes that
    /// [`RaycastOutcome::matches`] pairwise.
    #[must_use]
    pub fn matches(&self, other: &Self) -> bool {
        self.agents == other.agents
            && self.rays_per_agent == other.rays_per_agent
            && self.errors == other.errors
            && self.distances.len() == other.distances.len()
            && self
                .distances
                .iter()
                .zip(&other.distances)
                .all(|(a, b)| a.to_bits() == b.to_bits())
            && match (&self.outcomes, &other.outcomes) {
                (None, None) => true,
                (Some(a), Some(b)) => {
                    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.matches(y))
                }
                _ => false,
            }
    }

    /// Records ray `i`'s (counted over all agents) outcome.
    #[cfg(feature = "gpu")]
    pub(crate) fn set(&mut self, i: usize, outcome: RaycastOutcome) {
        self.distances[i] = word(&outcome);
        if let Some(o) = &mut self.outcomes {
            o[i] = outcome;
        }
    }

    /// Marks agent `a`'s pose as bad: every ray of it gets `error`.
    pub(crate) fn set_invalid(&mut self, a: usize, error: RayError) {
        let n = self.rays_per_agent;
        self.distances[a * n..(a + 1) * n].fill(f32::NAN);
        if let Some(o) = &mut self.outcomes {
            o[a * n..(a + 1) * n].fill(RaycastOutcome::Invalid(error));
        }
        self.errors.push((a, error));
    }

    /// The words of every ray, to fill in place.
    #[cfg(feature = "gpu")]
    pub(crate) fn words_mut(&mut self) -> &mut [f32] {
        &mut self.distances
    }

    /// Errors in agent order (where they were recorded out of order).
    #[cfg(feature = "gpu")]
    pub(crate) fn sort_errors(&mut self) {
        self.errors.sort_unstable_by_key(|&(a, _)| a);
    }
}

/// A ray's word in [`SensorReadings`].
pub(crate) fn word(outcome: &RaycastOutcome) -> f32 {
    match outcome {
        RaycastOutcome::Hit(h) => h.distance,
        RaycastOutcome::Miss => f32::INFINITY,
        RaycastOutcome::Unloaded { distance, .. } => -distance,
        RaycastOutcome::Invalid(_) => f32::NAN,
    }
}

/// Casts every ray of `rig` from every pose against `world`, on all threads: the CPU reference
/// of the GPU's sensor call, and its fallback. Ray `k` of agent `a` is
/// [`SensorPose::ray`]`(rig, k)` of `poses[a]`, cast with
/// [`voxel_raycast_with`](crate::voxel_raycast_with); with `outcomes` the readings keep each
/// ray's outcome too. An agent whose pose is bad gets its error on every
/// ray, and the others are answered. Each agent's rays are cast as a sweep (as
/// [`raycast_batch`](crate::raycast_batch) casts runs from one point), in groups of nearby
/// directions that the rig orders once when it is made; the answers are the same.
#[must_use]
pub fn sense(
    rig: &SensorRig,
    poses: &[SensorPose],
    world: &VoxelWorld,
    opts: &RaycastOptions,
    outcomes: bool,
) -> SensorReadings {
    let mut readings = SensorReadings::default();
    sense_into(rig, poses, world, opts, outcomes, &mut readings);
    readings
}

/// [`sense`] into `readings`, whose allocations are reused: for sensors read every frame.
pub fn sense_into(
    rig: &SensorRig,
    poses: &[SensorPose],
    world: &VoxelWorld,
    opts: &RaycastOptions,
    outcomes: bool,
    readings: &mut SensorReadings,
) {
    let n = rig.len();
    readings.reset(poses.len(), n, outcomes);
    if n == 0 {
        for (a, p) in poses.iter().enumerate() {
            if let Err(e) = p.prepare() {
                readings.set_invalid(a, e);
            }
        }
        return;
    }
    let prepared: Vec<_> = poses.par_iter().map(SensorPose::prepare).collect();
    let outcomes = readings.outcomes.take();
    Cast::for_batch(world, opts, n * poses.len(), |swept| {
        let cast = |p: &PreparedPose, &[x, y, z, max]: &[f32; 4]| {
            swept.unprepared(&p.ray(Vec3::new(x, y, z), max))
        };
        // One agent's answers into `out` (and their words into `words`): swept in the rig's
        // groups where the options allow, else ray by ray.
        let agent = |p: &PreparedPose, out: &mut [RaycastOutcome], words: &mut [f32]| {
            if sweeps(opts) {
                let from = p.start();
                rig.order.cast_into(out, |group, answers, base, shared| {
                    let rays = group.iter().map(|&r| {
                        let [x, y, z, max] = rig.rays[r as usize];
                        (r as usize - base, p.direction(Vec3::new(x, y, z)), max)
                    });
                    shared.cast_group(&from, rays, swept, |k, o| answers[k] = o);
                });
            } else {
                out.par_iter_mut()
                    .zip(&rig.rays)
                    .with_min_len(256)
                    .for_each(|(o, r)| *o = cast(p, r));
            }
            for (w, o) in words.iter_mut().zip(out.iter()) {
                *w = word(o);
            }
        };
        match outcomes {
            Some(mut outcomes) => {
                outcomes
                    .par_chunks_mut(n)
                    .zip(readings.distances.par_chunks_mut(n))
                    .zip(&prepared)
                    .for_each(|((out, words), p)| {
                        if let Ok(p) = p {
                            agent(p, out, words);
                        }
                    });
                readings.outcomes = Some(outcomes);
            }
            None => {
                readings
                    .distances
                    .par_chunks_mut(n)
                    .zip(&prepared)
                    .for_each_init(Vec::new, |out, (words, p)| {
                        if let Ok(p) = p {
                            out.resize(n, RaycastOutcome::Miss);
                            agent(p, out, words);
                        }
                    });
            }
        }
    });
    for (a, p) in prepared.iter().enumerate() {
        if let Err(e) = p {
            readings.set_invalid(a, *e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use voxcast_testkit::SplitMix64;

    /// The angle of `d` off forward (`-Z`), in degrees.
    fn off_forward(d: Vec3) -> f64 {
        f64::from(-d.z).acos().to_degrees()
    }

    /// Whiskers lie as their docs say: the first `spread / 2` to the right (`+X`), the last as
    /// far to the left, evenly spaced in between, all horizontal; an even count has no whisker
    /// straight ahead, an odd count has its middle one there.
    #[test]
    fn whiskers_lie_where_their_docs_say() {
        for (count, spread) in [(8usize, 90.0f32), (5, 60.0), (16, 90.0), (2, 30.0)] {
            let rig = SensorRig::whiskers(count, spread, 4.0).expect("a valid rig");
            assert_eq!(rig.len(), count);
            for i in 0..count {
                let (d, length) = rig.ray(i).expect("in the rig");
                assert_eq!((d.y, length), (0.0, 4.0));
                // Degrees to the left of forward.
                let left = f64::from(-d.x).atan2(f64::from(-d.z)).to_degrees();
                let want = f64::from(spread) * (i as f64 / (count - 1) as f64 - 0.5);
                assert!(
                    (left - want).abs() < 1e-4,
                    "{count} whiskers, {i}: {left} against {want}"
                );
            }
            let first = rig.ray(0).expect("in the rig").0;
            assert!(first.x > 0.0, "the first whisker to the right: {first}");
            let ahead = (0..count).filter(|&i| rig.ray(i).expect("in the rig").0.x == 0.0);
            if count % 2 == 0 {
                assert_eq!(ahead.count(), 0, "{count} whiskers: none straight ahead");
            } else {
                assert_eq!(ahead.collect::<Vec<_>>(), vec![(count - 1) / 2]);
                assert_eq!(rig.ray((count - 1) / 2).expect("in the rig").0, Vec3::NEG_Z);
            }
        }
        let one = SensorRig::whiskers(1, 90.0, 4.0).expect("a valid rig");
        assert_eq!(one.ray(0), Some((Vec3::NEG_Z, 4.0)));
    }

    /// A LiDAR's rows are the centers of equal bands of its field of view (the top row of 16
    /// over 30 degrees at 14.0625, not 15), top row first; each row's first ray is straight
    /// ahead and the next turns left.
    #[test]
    fn lidar_rows_lie_at_band_centers() {
        let (rows, columns) = (16, 8);
        let rig = SensorRig::lidar(rows, columns, 30.0, 100.0).expect("a valid rig");
        assert_eq!(rig.len(), rows * columns);
        for r in 0..rows {
            let want = 30.0 * (0.5 - (r as f64 + 0.5) / rows as f64);
            for c in 0..columns {
                let d = rig.ray(r * columns + c).expect("in the rig").0;
                let elevation = f64::from(d.y).asin().to_degrees();
                assert!(
                    (elevation - want).abs() < 1e-4,
                    "row {r}: {elevation} against {want}"
                );
            }
        }
        let top = rig.ray(0).expect("in the rig").0;
        assert!(
            (f64::from(top.y).asin().to_degrees() - 14.0625).abs() < 1e-4,
            "{top}"
        );
        assert!(top.x == 0.0 && top.z < 0.0, "straight ahead: {top}");
        let next = rig.ray(1).expect("in the rig").0;
        assert!(next.x < 0.0, "turning left: {next}");
        let bottom = rig.ray((rows - 1) * columns).expect("in the rig").0;
        assert!((f64::from(bottom.y).asin().to_degrees() + 14.0625).abs() < 1e-4);
    }

    /// A cone's first ray lies a little right of forward (`+X`, no `Y`) at the angle its docs
    /// give, every ray at its own angle off forward, the spiral turning by the golden angle.
    #[test]
    fn cone_rays_lie_where_their_docs_say() {
        let (n, half) = (64usize, 30.0f32);
        let rig = SensorRig::cone(n, half, 10.0).expect("a valid rig");
        let cos_h = f64::from(half).to_radians().cos();
        let golden = 180.0 * (3.0 - 5f64.sqrt());
        for i in 0..n {
            let d = rig.ray(i).expect("in the rig").0;
            let want = (1.0 - (i as f64 + 0.5) / n as f64 * (1.0 - cos_h))
                .acos()
                .to_degrees();
            assert!((off_forward(d) - want).abs() < 1e-3, "ray {i}: {d}");
            assert!(off_forward(d) > 0.0 && off_forward(d) < f64::from(half));
            if i > 0 {
                let turn = f64::from(d.y).atan2(f64::from(d.x)).to_degrees();
                let want = (golden * i as f64 + 180.0).rem_euclid(360.0) - 180.0;
                assert!(
                    (turn - want).abs() < 1e-2,
                    "ray {i}: turned {turn}, want {want}"
                );
            }
        }
        let first = rig.ray(0).expect("in the rig").0;
        assert!(first.x > 0.0 && first.y == 0.0, "{first}");
        assert!(
            (off_forward(first) - 2.62169).abs() < 1e-3,
            "{}",
            off_forward(first)
        );
    }

    /// Every direction a rotation makes from a rig direction is unit to within `1e-5` in
    /// squared length (so `VoxelRay::new` keeps it bit for bit, as the shader does), and within
    /// `1e-5` of the exact rotation of the given direction.
    #[test]
    fn turned_directions_are_unit_and_close() {
        let mut rng = SplitMix64::new(41);
        let mut worst = 0.0f64;
        for i in 0..200_000 {
            let q = if i % 7 == 0 {
                // Near the packing's component boundaries and sign flips.
                Quat::from_xyzw(
                    rng.below(3) as f32 - 1.0,
                    rng.below(3) as f32 - 1.0,
                    rng.below(3) as f32 - 1.0,
                    rng.below(3) as f32 - 1.0,
                )
            } else {
                Quat::from_xyzw(
                    rng.next_f32() - 0.5,
                    rng.next_f32() - 0.5,
                    rng.next_f32() - 0.5,
                    rng.next_f32() - 0.5,
                )
            };
            if q.length_squared() < 1e-6 {
                continue;
            }
            let q = q.normalize();
            let d = rng.unit_vector();
            let [x, y, z, _] = quantize_ray(d, 1.0).expect("a unit direction");
            let dq = Vec3::new(x, y, z);
            let pose = SensorPose::new(WorldPos::ZERO, Vec3::splat(0.5), q);
            let p = pose.prepare().expect("a unit rotation");
            let turned = sensor_dir(&p.matrix, dq);
            let len2 = f64::from(turned.length_squared());
            assert!((len2 - 1.0).abs() <= 1e-5, "{q:?} {d:?}: {len2}");
            let ray = p.ray(dq, 1.0);
            assert_eq!(
                VoxelRay::new(ray.origin, ray.sub_offset, ray.direction, 1.0).map(|r| r.direction),
                Ok(ray.direction),
                "kept as it is"
            );
            let exact = q.as_dquat() * d.as_dvec3();
            worst = worst.max((exact - turned.as_dvec3()).length());
        }
        assert!(worst < 1e-5, "{worst}");
    }

    /// The example rigs have the sizes and shapes their docs give.
    #[test]
    fn example_rigs() {
        let cone = SensorRig::cone(64, 30.0, 32.0).expect("a cone");
        assert_eq!(cone.len(), 64);
        for k in 0..64 {
            let (d, max) = cone.ray(k).expect("a ray");
            assert!(
                d.dot(Vec3::NEG_Z) >= 30f32.to_radians().cos() - 1e-5,
                "{k}: {d:?}"
            );
            assert_eq!(max, 32.0);
        }
        let whiskers = SensorRig::whiskers(8, 120.0, 6.0).expect("whiskers");
        assert_eq!(whiskers.len(), 8);
        assert!((0..8).all(|k| whiskers.ray(k).is_some_and(|(d, _)| d.y == 0.0)));
        let lidar = SensorRig::lidar(32, 360, 30.0, 100.0).expect("a sweep");
        assert_eq!(lidar.len(), 32 * 360);
        assert_eq!(lidar.ray(0).map(|(d, _)| d.x), Some(0.0));
        assert!(matches!(
            SensorRig::lidar(300, 300, 30.0, 100.0),
            Err(SensorRigError::TooManyRays(90_000))
        ));
        assert_eq!(
            SensorRig::new(&[(Vec3::X, 1.0), (Vec3::ZERO, 1.0)]),
            Err(SensorRigError::Ray {
                index: 1,
                error: RayError::ZeroDirection
            })
        );
    }

    /// A bad pose gets its error on every ray; the other agents are answered.
    #[test]
    fn bad_poses_are_errors_alone() {
        let mut world = VoxelWorld::new();
        world.set_voxel(WorldPos::new(0, 0, -5), crate::world::VoxelId(1));
        let rig = SensorRig::whiskers(3, 10.0, 16.0).expect("whiskers");
        let good = SensorPose::new(WorldPos::ZERO, Vec3::splat(0.5), Quat::IDENTITY);
        let poses = [
            SensorPose {
                rotation: Quat::from_xyzw(0.0, 0.0, 0.0, 2.0),
                ..good
            },
            good,
            SensorPose {
                offset: Vec3::NAN,
                ..good
            },
            SensorPose {
                position: WorldPos::new(i128::MAX, 0, 0),
                offset: Vec3::new(3.0, 0.5, 0.5),
                ..good
            },
        ];
        let r = sense(&rig, &poses, &world, &RaycastOptions::default(), true);
        assert_eq!(r.agents(), 4);
        assert_eq!(
            r.get(0, 0),
            Some(SensorReading::Invalid(RayError::BadRotation))
        );
        assert_eq!(r.get(1, 1), Some(SensorReading::Hit(4.5)));
        assert_eq!(
            r.get(2, 2),
            Some(SensorReading::Invalid(RayError::NonFiniteSubOffset))
        );
        assert_eq!(
            r.get(3, 0),
            Some(SensorReading::Invalid(RayError::OriginOutOfRange))
        );
        assert_eq!(r.errors().count(), 3);
        assert!(r.agent(0).iter().all(|w| w.is_nan()));
        assert_eq!(r.get(1, 3), None);
    }
}
