//! The box casts' brute-force oracle: the ray of the box's center against every stopping voxel
//! grown by the half extents, in f64, knowing nothing of crossing counts; and the judge that
//! accepts an answer where the exact one is a tie within the f32 arithmetic's reach.

use voxcast::glam::{DVec3, IVec3};
use voxcast::{BlockShape, BoxCast, BoxCastOutcome, OriginPolicy, VoxelId, VoxelWorld, WorldPos};

/// Where the moving box overlaps one voxel (the open box against the open voxel): from `entry`
/// to `exit` along its path, in voxels (`entry` below 0 when it overlaps at the start), and the
/// axes whose slab it enters last (within the judge's tolerance: several for an edge or corner).
#[derive(Clone, Copy, Debug)]
pub struct Contact {
    /// The voxel.
    pub voxel: WorldPos,
    /// Its id.
    pub id: VoxelId,
    /// Distance at which the overlap begins (`-inf` on no moving axis).
    pub entry: f64,
    /// Distance at which it ends.
    pub exit: f64,
    /// Entry distance per axis (`-inf` where the axis does not move).
    pub per_axis: [f64; 3],
}

/// The tolerance of a distance `t`: the faces are rounded to f32 once (rule 1) and every
/// crossing is an f32 product, a few ulps at most.
#[must_use]
pub fn tolerance(t: f64) -> f64 {
    2e-5 * (1.0 + t.abs())
}

/// Every voxel of `solids` (the stopping ones of a world) that the box of `cast` overlaps
/// somewhere along its path, from a distance below its max distance plus the tolerance.
#[must_use]
pub fn contacts(cast: &BoxCast, solids: &[(WorldPos, VoxelId)]) -> Vec<Contact> {
    contacts_in_shapes(cast, solids, &|_| vec![[DVec3::ZERO, DVec3::ONE]])
}

/// The boxes of id `id`'s shape in `world`, each its low and high corner in the voxel in voxels
/// (the unit cube for a cube, none for an empty shape): what [`contacts_in_shapes`] takes.
#[must_use]
pub fn shape_boxes(world: &VoxelWorld, id: VoxelId) -> Vec<[DVec3; 2]> {
    match world.shape(id) {
        BlockShape::Cube => vec![[DVec3::ZERO, DVec3::ONE]],
        BlockShape::Empty => Vec::new(),
        BlockShape::Boxes(b) => b
            .iter()
            .map(|b| [b.min(), b.max()].map(|m| DVec3::from_array(m.map(|v| f64::from(v) / 16.0))))
            .collect(),
    }
}

/// [`contacts`] where a voxel of id `id` is the boxes `shape(id)` (each its low and high
/// corner in the voxel, in voxels; none for an empty shape): a voxel's contact is where the
/// box first overlaps one of them (the open box against the open box).
#[must_use]
pub fn contacts_in_shapes(
    cast: &BoxCast,
    solids: &[(WorldPos, VoxelId)],
    shape: &dyn Fn(VoxelId) -> Vec<[DVec3; 2]>,
) -> Vec<Contact> {
    let c = cast.body.center;
    let off = cast.body.center_offset.as_dvec3();
    let h = cast.body.half_extents.as_dvec3();
    let d = cast.direction.as_dvec3();
    let max = f64::from(cast.max_distance);
    let mut out = Vec::new();
    for &(v, id) in solids {
        // Voxels 2^100 away cannot be touched within the cap; their difference may not fit.
        let gap = |a: usize| {
            v.axis(a)
                .checked_sub(c.axis(a))
                .filter(|g| g.unsigned_abs() < 1 << 100)
        };
        let (Some(gx), Some(gy), Some(gz)) = (gap(0), gap(1), gap(2)) else {
            continue;
        };
        let rel = DVec3::new(gx as f64, gy as f64, gz as f64) - off;
        let mut first: Option<Contact> = None;
        'boxes: for [b_lo, b_hi] in shape(id) {
            let (mut entry, mut exit) = (f64::NEG_INFINITY, f64::INFINITY);
            let mut per_axis = [f64::NEG_INFINITY; 3];
            for a in 0..3 {
                let (near, far) = (rel[a] + b_lo[a], rel[a] + b_hi[a]);
                let (lo, hi) = (near - h[a], far + h[a]);
                if d[a] == 0.0 {
                    // Still: the open box overlaps the voxel's box or not; a flat box holds
                    // it where its center lies in it, low face included.
                    let inside = if h[a] == 0.0 {
                        near <= 0.0 && 0.0 < far
                    } else {
                        lo < 0.0 && 0.0 < hi
                    };
                    if !inside {
                        continue 'boxes;
                    }
                    continue;
                }
                let (t0, t1) = if d[a] > 0.0 {
                    (lo / d[a], hi / d[a])
                } else {
                    (hi / d[a], lo / d[a])
                };
                per_axis[a] = t0;
                entry = entry.max(t0);
                exit = exit.min(t1);
            }
            if !(entry < exit && exit > 0.0 && entry <= max + tolerance(max)) {
                continue;
            }
            match &mut first {
                // Two boxes met at one distance (within the tolerance) through different
                // faces: either face is right, so the judge sees the axes of both as last.
                Some(f) if (entry - f.entry).abs() <= tolerance(entry) => {
                    for (mine, other) in f.per_axis.iter_mut().zip(per_axis) {
                        *mine = mine.max(other);
                    }
                    (f.entry, f.exit) = (f.entry.min(entry), f.exit.max(exit));
                }
                Some(f) if entry > f.entry => {}
                _ => {
                    first = Some(Contact {
                        voxel: v,
                        id,
                        entry,
                        exit,
                        per_axis,
                    });
                }
            }
        }
        out.extend(first);
    }
    out.sort_by(|a, b| a.entry.total_cmp(&b.entry));
    out
}

/// Where the box's leading face would leave the i128 world (rule 8: the cast ends there as a
/// miss), in voxels along its path; infinite when it stays within reach.
fn world_exit(cast: &BoxCast) -> f64 {
    let c = cast.body.center;
    let off = cast.body.center_offset.as_dvec3();
    let h = cast.body.half_extents.as_dvec3();
    let d = cast.direction.as_dvec3();
    (0..3)
        .filter(|&a| d[a] != 0.0)
        .map(|a| {
            let gap = if d[a] > 0.0 {
                i128::MAX.abs_diff(c.axis(a)) as f64 + 1.0 - (off[a] + h[a])
            } else {
                c.axis(a).abs_diff(i128::MIN) as f64 + (off[a] - h[a])
            };
            gap / d[a].abs()
        })
        .fold(f64::INFINITY, f64::min)
}

/// Judges `got` for `cast` against the `contacts` of its stopping voxels, under `origin`. `Ok`
/// with whether a tie within the tolerance had to be allowed; `Err` with what is wrong.
///
/// # Errors
/// A description of the disagreement.
pub fn judge(
    cast: &BoxCast,
    got: &BoxCastOutcome,
    contacts: &[Contact],
    origin: OriginPolicy,
) -> Result<bool, String> {
    let max = f64::from(cast.max_distance);
    // Under the policies that ignore the start, voxels overlapped at the start never stop it.
    let ignored = |c: &Contact| origin != OriginPolicy::Report && c.entry < 0.0;
    let live: Vec<&Contact> = contacts.iter().filter(|c| !ignored(c)).collect();
    let near_start = |c: &Contact| c.entry.abs() <= tolerance(0.0);
    let ambiguous_start = contacts
        .iter()
        .any(|c| origin != OriginPolicy::Report && near_start(c));
    // The first overlap the cast must find: one lasting longer than the tolerance from the
    // start on (a box that grazes an edge, or leaves a voxel it overlaps by a hair at the
    // start, overlaps for an instant: a tie the f32 faces may call either way).
    let first = live
        .iter()
        .find(|c| c.exit - c.entry.max(0.0) > tolerance(c.entry.max(0.0)))
        .map(|c| c.entry.max(0.0));
    match *got {
        BoxCastOutcome::StartsInside {
            voxel_pos,
            voxel_type,
        } => {
            if origin != OriginPolicy::Report {
                return Err("StartsInside under a policy that ignores the start".into());
            }
            let c = live
                .iter()
                .find(|c| c.voxel == voxel_pos)
                .ok_or("StartsInside in a voxel the box never overlaps")?;
            if c.id != voxel_type {
                return Err(format!("id {voxel_type:?}, the voxel holds {:?}", c.id));
            }
            if c.entry < -tolerance(0.0) {
                Ok(false)
            } else if near_start(c) {
                Ok(true)
            } else {
                Err(format!(
                    "StartsInside, but the overlap begins at {}",
                    c.entry
                ))
            }
        }
        BoxCastOutcome::Hit(hit) => {
            let t = f64::from(hit.distance);
            let tol = tolerance(t);
            let c = contacts
                .iter()
                .find(|c| c.voxel == hit.voxel_pos)
                .ok_or_else(|| format!("hit {} never overlapped", hit.voxel_pos))?;
            if c.id != hit.voxel_type {
                return Err(format!(
                    "id {:?}, the voxel holds {:?}",
                    hit.voxel_type, c.id
                ));
            }
            let mut tie = ambiguous_start;
            if (c.entry.max(0.0) - t).abs() > tol {
                if ignored(c) && near_start(c) {
                    tie = true;
                } else {
                    return Err(format!("hit at {t}, the overlap begins at {}", c.entry));
                }
            }
            if let Some(f) = first {
                if f < t - tol {
                    if !ambiguous_start {
                        return Err(format!("hit at {t}, but an overlap begins at {f}"));
                    }
                    tie = true;
                } else if f < t {
                    tie = true;
                }
            }
            if t > max {
                return Err(format!("hit at {t} beyond max distance {max}"));
            }
            // The face: the axis whose slab the box enters last.
            let a = (0..3)
                .max_by(|&a, &b| c.per_axis[a].total_cmp(&c.per_axis[b]))
                .unwrap_or(0);
            let close = (0..3)
                .filter(|&b| (c.per_axis[b] - c.per_axis[a]).abs() <= tol)
                .count();
            let mut want = IVec3::ZERO;
            want[a] = if cast.direction[a] > 0.0 { -1 } else { 1 };
            if close == 1 && c.entry >= -tol && hit.face_normal != want {
                return Err(format!(
                    "face {}, the box enters the voxel through {want}",
                    hit.face_normal
                ));
            }
            Ok(tie || close > 1)
        }
        BoxCastOutcome::Miss => match first {
            Some(f)
                if f <= max - tolerance(max)
                    && f < world_exit(cast) - tolerance(f)
                    && !ambiguous_start =>
            {
                Err(format!("miss, but an overlap begins at {f}"))
            }
            Some(_) => Ok(true),
            None => Ok(false),
        },
        BoxCastOutcome::Unloaded { .. } => Err("Unloaded in a world the oracle knows".into()),
        BoxCastOutcome::Invalid(e) => Err(format!("a valid cast rejected: {e}")),
    }
}
