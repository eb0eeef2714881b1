//! What `VoxelRay::new` must do with a user's ray, decided without its code: reject exactly the
//! inputs the docs name (each with its own error), and otherwise keep the start point (to
//! within f32 rounding), the direction (normalised unless already of unit length) and the max
//! distance (the cap for anything farther, `f32::INFINITY` included).

use voxcast::glam::Vec3;
use voxcast::{MAX_DISTANCE_CAP, RayError, VoxelRay};

/// Whether `origin + sub` (exactly, in real numbers) lies in the i128 world.
fn point_in_world(origin: i128, sub: f32) -> bool {
    if !sub.is_finite() {
        return false;
    }
    if sub >= 0.0 {
        // Below `MAX + 1` exactly when the whole part does not pass `MAX`.
        (sub.floor() as u128) <= i128::MAX.abs_diff(origin)
    } else {
        (-sub).ceil() as u128 <= origin.abs_diff(i128::MIN)
    }
}

/// Why `raw` must be rejected, as the docs of `RayError` name the reasons; empty for a valid
/// ray.
#[must_use]
pub fn reasons(raw: &VoxelRay) -> Vec<RayError> {
    let mut out = Vec::new();
    let m = raw.max_distance;
    if m.is_nan() {
        out.push(RayError::NanMaxDistance);
    } else if m < 0.0 {
        out.push(RayError::NegativeMaxDistance);
    }
    let d = raw.direction;
    if d.is_nan() {
        out.push(RayError::NanDirection);
    } else if !d.is_finite() {
        out.push(RayError::InfiniteDirection);
    } else if d == Vec3::ZERO {
        out.push(RayError::ZeroDirection);
    }
    if !raw.sub_offset.is_finite() {
        out.push(RayError::NonFiniteSubOffset);
    }
    let finite_outside = |a: usize| {
        raw.sub_offset[a].is_finite() && !point_in_world(raw.origin.axis(a), raw.sub_offset[a])
    };
    if (0..3).any(finite_outside) {
        out.push(RayError::OriginOutOfRange);
    }
    out
}

/// `VoxelRay::new`'s answer for `raw` against [`reasons`], and a valid ray against `raw`.
///
/// # Errors
/// What is wrong with the answer.
pub fn check(raw: &VoxelRay, built: &Result<VoxelRay, RayError>) -> Result<(), String> {
    let why = reasons(raw);
    let r = match built {
        Err(e) if why.contains(e) => return Ok(()),
        Err(e) => return Err(format!("rejected with {e:?}, but the reasons are {why:?}")),
        Ok(_) if !why.is_empty() => return Err(format!("accepted, but {why:?}")),
        Ok(r) => r,
    };
    // Farther than the cap means the cap.
    let want_max = raw.max_distance.min(MAX_DISTANCE_CAP) + 0.0;
    if r.max_distance.to_bits() != want_max.to_bits() {
        return Err(format!(
            "max distance {} from {}",
            r.max_distance, raw.max_distance
        ));
    }
    let flush = |v: f32| if v.abs() < f32::MIN_POSITIVE { 0.0 } else { v };
    let d = raw.direction;
    if (d.length_squared() - 1.0).abs() <= 1e-5 {
        if r.direction != Vec3::new(flush(d.x), flush(d.y), flush(d.z)) {
            return Err(format!("unit direction {d} changed to {}", r.direction));
        }
    } else {
        let unit = d.as_dvec3() / d.as_dvec3().length();
        if (0..3).any(|a| (f64::from(r.direction[a]) - unit[a]).abs() > 1e-6) {
            return Err(format!("direction {d} normalised to {}", r.direction));
        }
    }
    for a in 0..3 {
        let (sub, raw_sub) = (r.sub_offset[a], raw.sub_offset[a]);
        if !(0.0..1.0).contains(&sub) || (sub != 0.0 && sub.abs() < f32::MIN_POSITIVE) {
            return Err(format!("sub offset {sub} outside [0, 1) or denormal"));
        }
        let moved = r.origin.axis(a).checked_sub(raw.origin.axis(a));
        let ok = match moved {
            // A whole-numbered sub offset moves the origin by exactly that much.
            Some(m) if raw_sub.abs() >= 16_777_216.0 => sub == 0.0 && m == raw_sub as i128,
            Some(m) => (m as f64 + f64::from(sub) - f64::from(raw_sub)).abs() <= 1.0 / 16_777_216.0,
            // Moved by 2^127 or more: only a sub offset that large does that.
            None => raw_sub.abs() >= 1.7e38,
        };
        if !ok {
            return Err(format!(
                "axis {a}: origin {} + {raw_sub} became {} + {sub}",
                raw.origin.axis(a),
                r.origin.axis(a)
            ));
        }
    }
    Ok(())
}
