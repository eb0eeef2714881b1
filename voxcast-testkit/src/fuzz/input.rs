//! Fuzz bytes as voxcast inputs: values at the edges (zeros of both signs, denormals, the
//! distance cap and its neighbours, the ends of i128) come up far more often than uniform
//! bytes would give them, and raw bits cover everything else.

use arbitrary::{Arbitrary, Unstructured};
use voxcast::glam::Vec3;
use voxcast::{MAX_DISTANCE_CAP, MaterialFilter, OriginPolicy, UnloadedPolicy, VoxelId, WorldPos};

/// Edge values for any f32 field.
const F32_EDGES: [f32; 32] = [
    0.0,
    -0.0,
    0.5,
    1.0,
    -1.0,
    0.25,
    f32::MIN_POSITIVE,
    -f32::MIN_POSITIVE,
    1e-40,
    -1e-40,
    1.0e-45,
    1.0 - f32::EPSILON / 2.0,
    -f32::EPSILON / 4.0,
    f32::EPSILON,
    1e-30,
    1e30,
    f32::MAX,
    f32::MIN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    MAX_DISTANCE_CAP,
    65_536.01,
    65_535.996,
    16_777_216.0,
    1.701_411_8e38,
    0.1,
    std::f32::consts::FRAC_1_SQRT_2,
    -0.5,
    2.0,
    32.0,
    1e-7,
];

/// An f32: an edge value, a small fraction `n / (d + 1)`, or any bits (NaN payloads too).
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum F32In {
    /// One of the edge values, by index.
    Edge(u8),
    /// `n / (d + 1)`: halves, thirds, small integers, on both sides of zero.
    Fraction(i8, u8),
    /// Any bit pattern.
    Bits(u32),
}

impl F32In {
    /// The value.
    #[must_use]
    pub fn get(self) -> f32 {
        match self {
            Self::Edge(i) => F32_EDGES[usize::from(i) % F32_EDGES.len()],
            Self::Fraction(n, d) => f32::from(n) / (f32::from(d) + 1.0),
            Self::Bits(b) => f32::from_bits(b),
        }
    }
}

/// Three f32 values.
#[must_use]
pub fn vec3(v: [F32In; 3]) -> Vec3 {
    Vec3::new(v[0].get(), v[1].get(), v[2].get())
}

/// Where on one axis a world is built: near 0, near a large power of two, at the ends of i128,
/// or anywhere.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum AnchorIn {
    /// `0` plus a small offset.
    Zero(i8),
    /// `±2^k` plus a small offset (`k` up to 126).
    Power(u8, bool, i8),
    /// `i128::MAX - k`.
    NearMax(u8),
    /// `i128::MIN + k`.
    NearMin(u8),
    /// Any value.
    Raw(i128),
}

impl AnchorIn {
    /// The coordinate.
    #[must_use]
    pub fn get(self) -> i128 {
        match self {
            Self::Zero(k) => i128::from(k),
            Self::Power(k, neg, off) => {
                let p = 1i128 << (k % 127);
                let p = if neg { -p } else { p };
                p.saturating_add(i128::from(off))
            }
            Self::NearMax(k) => i128::MAX - i128::from(k),
            Self::NearMin(k) => i128::MIN + i128::from(k),
            Self::Raw(v) => v,
        }
    }
}

/// The voxel at `anchor + off`, saturating at the ends of i128.
#[must_use]
pub fn near(anchor: WorldPos, off: [i32; 3]) -> WorldPos {
    WorldPos::from_array(std::array::from_fn(|a| {
        anchor.axis(a).saturating_add(i128::from(off[a]))
    }))
}

/// One coordinate of a ray's origin: near the world's anchor (most of the time), or anywhere.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum CoordIn {
    /// `anchor + v`.
    Near(i8),
    /// `anchor + v`, farther out.
    Far(i16),
    /// Any value.
    Raw(i128),
}

impl CoordIn {
    /// The coordinate, relative to `anchor`.
    #[must_use]
    pub fn get(self, anchor: i128) -> i128 {
        match self {
            Self::Near(v) => anchor.saturating_add(i128::from(v)),
            Self::Far(v) => anchor.saturating_add(i128::from(v)),
            Self::Raw(v) => v,
        }
    }
}

/// A voxel id: one of a few (so that rays meet the same ids the filters name), or any.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum IdIn {
    /// `k % 4`: air and three materials.
    Few(u8),
    /// Any id.
    Any(u16),
}

impl IdIn {
    /// The id.
    #[must_use]
    pub fn get(self) -> VoxelId {
        match self {
            Self::Few(k) => VoxelId(u16::from(k % 4)),
            Self::Any(v) => VoxelId(v),
        }
    }

    /// The id among the first four (air and three materials): for worlds that rays cross on the
    /// CPU, where what matters is which ids stop a ray. A chunk stores ids below 4 directly in
    /// 2 bits; every other id repacks the whole chunk once it comes (32768 ids), which would
    /// slow the target tenfold. The `edits` and `gpu` targets use every id.
    #[must_use]
    pub fn material(self) -> VoxelId {
        VoxelId(self.get().0 & 3)
    }
}

/// Which ids stop a ray.
#[derive(Arbitrary, Debug, Clone)]
pub enum FilterIn {
    /// Every id but air (the default).
    AllSolid,
    /// Every id but air and one.
    Without(IdIn),
    /// Only the listed ids.
    Only(Vec<IdIn>),
    /// Nothing stops the ray.
    Nothing,
}

impl FilterIn {
    /// The filter.
    #[must_use]
    pub fn get(&self) -> MaterialFilter {
        match self {
            Self::AllSolid => MaterialFilter::every_non_air(),
            Self::Without(id) => MaterialFilter::every_non_air().without(id.material()),
            Self::Only(ids) => {
                let ids: Vec<VoxelId> = ids.iter().take(8).map(|i| i.material()).collect();
                MaterialFilter::only(&ids)
            }
            Self::Nothing => MaterialFilter::none(),
        }
    }
}

/// Every origin policy.
pub const ORIGIN_POLICIES: [OriginPolicy; 3] = [
    OriginPolicy::Report,
    OriginPolicy::SkipOriginVoxel,
    OriginPolicy::ExitSolid,
];

/// Both unloaded policies.
pub const UNLOADED_POLICIES: [UnloadedPolicy; 2] = [UnloadedPolicy::Air, UnloadedPolicy::Stop];

/// The body of every target: decodes `data` as an `I` (bytes that do not decode are skipped)
/// and runs `check` on it, panicking with its message and the input when it fails.
pub fn decode_and_check<I>(data: &[u8], check: impl FnOnce(&I) -> Result<(), String>)
where
    I: for<'a> Arbitrary<'a> + std::fmt::Debug,
{
    let Ok(input) = I::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    if let Err(why) = check(&input) {
        panic!("{why}\ninput: {input:#?}");
    }
}
