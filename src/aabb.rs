//! The ray/AABB slab test.

use glam::{DVec3, Vec3};

/// Where the ray `origin + t·dir` crosses the box `min..=max`: `Some((t_near, t_far))` with
/// `t_near <= t_far` and `t_far >= 0`, or `None` when the ray misses the box or the box lies
/// entirely behind the origin.
///
/// `t` is in units of `dir` (voxels for a unit direction). When the origin is inside the box,
/// `t_near` is negative and `t_far` is where the ray leaves; the first hit in front of the
/// origin is `t_near.max(0.0)`. Touching the box (grazing an edge or face) counts as a hit.
///
/// Edges: a `dir` component of `+0.0` or `-0.0` means the ray is parallel to that slab and
/// hits only if its origin lies within it (bounds inclusive); no NaN is produced for an origin
/// on the slab plane. A NaN anywhere in the input gives `None`, and so do an infinite `origin`
/// or `dir` component, an empty box (`min > max` on some axis) and a box the ray could only
/// reach at infinity. Infinite bounds are allowed (a slab or half-space). A zero `dir` whose
/// origin lies in the box gives `Some((-inf, inf))`: every `t` is inside. The test runs in
/// f64; a `t` beyond the f32 range comes back as infinity (a `far` only: a `near` that large
/// is `None`).
///
/// # Example
/// ```
/// use voxcast::{ray_aabb, glam::Vec3};
/// let (near, far) = ray_aabb(Vec3::splat(-2.0), Vec3::splat(1.0), Vec3::splat(0.5), Vec3::splat(2.0)).unwrap();
/// assert_eq!((near, far), (2.5, 4.0));
/// assert_eq!(ray_aabb(Vec3::ZERO, Vec3::Y, Vec3::splat(0.5), Vec3::splat(2.0)), None);
/// let inside = ray_aabb(Vec3::ONE, Vec3::ZERO, Vec3::ZERO, Vec3::splat(2.0));
/// assert_eq!(inside, Some((f32::NEG_INFINITY, f32::INFINITY)));
/// ```
#[must_use]
pub fn ray_aabb(origin: Vec3, dir: Vec3, min: Vec3, max: Vec3) -> Option<(f32, f32)> {
    ray_aabb_f64(
        origin.as_dvec3(),
        dir.as_dvec3(),
        min.as_dvec3(),
        max.as_dvec3(),
    )
    .and_then(|(n, f)| {
        let near = n as f32;
        (near != f32::INFINITY).then_some((near, f as f32))
    })
}

/// [`ray_aabb`] in f64, used to reject rays that cannot reach the loaded world before any
/// stepping.
#[must_use]
pub fn ray_aabb_f64(origin: DVec3, dir: DVec3, min: DVec3, max: DVec3) -> Option<(f64, f64)> {
    let mut t_near = f64::NEG_INFINITY;
    let mut t_far = f64::INFINITY;
    for a in 0..3 {
        let (o, d, lo, hi) = (origin[a], dir[a], min[a], max[a]);
        if !o.is_finite() || !d.is_finite() || lo.is_nan() || hi.is_nan() || lo > hi {
            return None;
        }
        if d == 0.0 {
            if o < lo || o > hi {
                return None;
            }
            continue;
        }
        let t1 = (lo - o) / d;
        let t2 = (hi - o) / d;
        t_near = t_near.max(t1.min(t2));
        t_far = t_far.min(t1.max(t2));
    }
    (t_near <= t_far && t_far >= 0.0 && t_near != f64::INFINITY).then_some((t_near, t_far))
}
