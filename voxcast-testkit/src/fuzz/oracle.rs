//! The brute-force oracle: what a ray must answer, from the slab test against every voxel and
//! chunk box of a [`Model`], in f64, knowing nothing of the DDA.
//!
//! A voxel is the box `[p, p + 1)` on each axis. On an axis where the direction is zero the ray
//! stays on one side of each boundary (the box is half-open there; under conservative line of
//! sight, closed); on the others boundaries are crossed at an instant and do not matter. The
//! reference steps in f32, so near ties it may take either side: where the exact ray passes
//! within [`tol`] of an edge or corner it may visit a voxel the exact ray only grazes, and it
//! may report a distance that far from the exact one. [`tol`] is relative: each crossing
//! distance `(b + n) · inv` is rounded three times (a few parts in 2^24), so `2^-20` of the
//! distance covers it with room to spare (near [`voxcast::MAX_DISTANCE_CAP`] that is 0.06
//! voxel, against the crate's "about 0.01 voxel"). Conservative line of sight counts crossings
//! within a factor of `1 + 2^-20` as one edge; its slack is `2^-18` of the distance, and it
//! must block where the exact segment passes within `2^-22` of the distance of an edge.
//!
//! The judge ([`judge`]) accepts an answer when it names a voxel the ray reaches (a stopping
//! one for a hit, an unloaded one for `Unloaded`), at that voxel's entry distance, through one
//! of its entry faces, with the UV of its entry point, and no later than the first voxel that
//! the ray certainly meets and that must end it under the options. A miss is accepted when no
//! such voxel lies within max distance.

use voxcast::glam::{DVec3, IVec3, Vec2};
use voxcast::{
    ChunkPos, OriginPolicy, RaycastOptions, RaycastOutcome, UnloadedPolicy, VoxelRay, WorldPos,
};

use super::model::Model;

/// Slack on "the same distance" for plain raycasts, at distance `t` (see the module docs).
#[must_use]
pub fn tol(t: f64) -> f64 {
    1e-6 + t.abs() * (1.0 / 1_048_576.0)
}

/// Slack for conservative line of sight's near edges, at distance `t`.
#[must_use]
pub fn tol_conservative(t: f64) -> f64 {
    1e-6 + t.abs() * (1.0 / 262_144.0)
}

/// How far from an edge the exact segment must pass for conservative line of sight to be
/// certain to count it, at distance `t`.
fn edge_certain(t: f64) -> f64 {
    t.abs() * (1.0 / 4_194_304.0)
}

/// Slack on a reported UV at distance `t`: `u = |d| · (t - t_crossing)`, two rounded distances.
fn tol_uv(t: f64) -> f64 {
    1e-4 + t.abs() * (1.0 / 131_072.0)
}

/// Where the ray meets a box.
#[derive(Clone, Copy, Debug)]
pub struct Slab {
    /// Entry distance (the largest of the per-axis entries; may be negative: the box holds the
    /// start point).
    pub t_near: f64,
    /// Exit distance.
    pub t_far: f64,
    /// Per axis, where the ray enters the box's slab (`-inf` on an axis with zero direction).
    pub enter: [f64; 3],
}

/// The ray as the oracle sees it: its start point relative to its origin voxel, in f64.
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    /// The (normalised) ray.
    pub ray: VoxelRay,
    o: DVec3,
    d: DVec3,
    max: f64,
    /// Farthest the ray gets from its origin voxel on any axis, in voxels.
    reach: f64,
}

impl Geometry {
    /// The geometry of a ray as `VoxelRay::new` returned it.
    #[must_use]
    pub fn new(ray: &VoxelRay) -> Self {
        let max = f64::from(ray.max_distance);
        Self {
            ray: *ray,
            o: ray.sub_offset.as_dvec3(),
            d: ray.direction.as_dvec3(),
            max,
            reach: max * 1.001 + 40.0,
        }
    }

    /// `p - origin` in f64, or `None` when `p` lies beyond the ray's reach on some axis.
    #[must_use]
    pub fn rel(&self, p: WorldPos) -> Option<DVec3> {
        let mut out = DVec3::ZERO;
        for a in 0..3 {
            let v = p.axis(a).checked_sub(self.ray.origin.axis(a))?;
            if (v.unsigned_abs() as f64) > self.reach {
                return None;
            }
            out[a] = v as f64;
        }
        Some(out)
    }

    /// The slab test of the box `[lo, lo + size)` (relative to the origin voxel); `None` where a
    /// zero-direction axis keeps the ray outside it. `closed`: the box includes its high faces on
    /// zero-direction axes.
    #[must_use]
    pub fn slab(&self, lo: DVec3, size: f64, closed: bool) -> Option<Slab> {
        let mut s = Slab {
            t_near: f64::NEG_INFINITY,
            t_far: f64::INFINITY,
            enter: [f64::NEG_INFINITY; 3],
        };
        for a in 0..3 {
            let hi = lo[a] + size;
            if self.d[a] == 0.0 {
                let inside = lo[a] <= self.o[a] && (self.o[a] < hi || closed && self.o[a] <= hi);
                if !inside {
                    return None;
                }
                continue;
            }
            let t1 = (lo[a] - self.o[a]) / self.d[a];
            let t2 = (hi - self.o[a]) / self.d[a];
            s.enter[a] = t1.min(t2);
            s.t_near = s.t_near.max(s.enter[a]);
            s.t_far = s.t_far.min(t1.max(t2));
        }
        Some(s)
    }

    /// The slab test of voxel `p`.
    #[must_use]
    pub fn voxel(&self, p: WorldPos, closed: bool) -> Option<Slab> {
        self.slab(self.rel(p)?, 1.0, closed)
    }

    /// The slab test of chunk `c`'s box.
    #[must_use]
    pub fn chunk(&self, c: ChunkPos) -> Option<Slab> {
        if !c.is_in_world() {
            return None;
        }
        self.slab(self.rel(c.origin())?, 32.0, false)
    }

    /// The distance at which the ray leaves the i128 world (infinite when that is beyond
    /// any max distance).
    #[must_use]
    pub fn world_exit(&self) -> f64 {
        let mut t = f64::INFINITY;
        for a in 0..3 {
            let origin = self.ray.origin.axis(a);
            let room = if self.d[a] > 0.0 {
                i128::MAX.checked_sub(origin).map(|r| r as f64 + 1.0)
            } else if self.d[a] < 0.0 {
                origin.checked_sub(i128::MIN).map(|r| r as f64)
            } else {
                None
            };
            if let Some(r) = room {
                let t_a = if self.d[a] > 0.0 {
                    (r - self.o[a]) / self.d[a]
                } else {
                    (r + self.o[a]) / -self.d[a]
                };
                t = t.min(t_a);
            }
        }
        t
    }

    /// The voxel the ray starts in: the origin voxel, moved down on each axis where the start
    /// point lies on the voxel's low face and the ray moves down.
    #[must_use]
    pub fn start_voxel(&self) -> Option<WorldPos> {
        let r = &self.ray;
        let v: [Option<i128>; 3] = std::array::from_fn(|a| {
            if r.direction[a] < 0.0 && r.sub_offset[a] == 0.0 {
                r.origin.axis(a).checked_sub(1)
            } else {
                Some(r.origin.axis(a))
            }
        });
        Some(WorldPos::new(v[0]?, v[1]?, v[2]?))
    }

    /// The axes on which the ray lies in a voxel face plane (zero direction, start point on the
    /// voxel's low face), as a bit mask.
    #[must_use]
    pub fn plane_axes(&self) -> u32 {
        (0..3)
            .filter(|&a| self.d[a] == 0.0 && self.o[a] == 0.0)
            .fold(0, |m, a| m | 1 << a)
    }

    /// The voxels a cast skips under `OriginPolicy::SkipOriginVoxel`: the start voxel and,
    /// under conservative line of sight, its copies moved down on the face-plane axes.
    #[must_use]
    pub fn skipped(&self, conservative: bool) -> Vec<WorldPos> {
        let Some(start) = self.start_voxel() else {
            return Vec::new();
        };
        let planes = if conservative { self.plane_axes() } else { 0 };
        (0..8u32)
            .filter(|&m| m & planes == m)
            .filter_map(|m| {
                let v: [Option<i128>; 3] =
                    std::array::from_fn(|a| start.axis(a).checked_sub(i128::from(m >> a & 1)));
                Some(WorldPos::new(v[0]?, v[1]?, v[2]?))
            })
            .collect()
    }
}

/// The start of the first stretch of `[from, to]` longer than `min_len` that no interval of
/// `iv` covers.
fn first_gap(iv: &mut [(f64, f64)], from: f64, to: f64, min_len: f64) -> Option<f64> {
    iv.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut cur = from;
    for &(s, e) in iv.iter() {
        if e <= cur {
            continue;
        }
        if s > cur && s.min(to) - cur > min_len {
            return Some(cur);
        }
        if s >= to {
            break;
        }
        cur = cur.max(e);
    }
    (to - cur > min_len).then_some(cur)
}

/// `[from, to]` less the intervals of `holes`: the stretches left, in order.
fn subtract(from: f64, to: f64, holes: &mut [(f64, f64)]) -> Vec<(f64, f64)> {
    holes.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out = Vec::new();
    let mut cur = from;
    for &(s, e) in holes.iter() {
        if s > cur {
            out.push((cur, s.min(to)));
        }
        cur = cur.max(e);
        if cur >= to {
            return out;
        }
    }
    if cur < to {
        out.push((cur, to));
    }
    out
}

/// A stretch of ray that certainly lies in one kind of voxel is at least `5 · tol` long: in any
/// window shorter than a voxel each axis is crossed at most once, so such a stretch holds a
/// voxel the ray runs through for longer than `tol`, entered at most `4 · tol` after the
/// stretch begins.
const GAP_WINDOW: f64 = 5.0;
const GAP_ENTRY: f64 = 4.0;

/// A chunk box filled with a stopping id: where the ray is inside it, and where it is inside
/// the box's voxels that do not stop it (holes).
struct StoppingBox {
    t0: f64,
    t1: f64,
    holes: Vec<(f64, f64)>,
}

/// What the oracle knows of one ray under one set of options.
struct Facts {
    /// The first distance by which the ray certainly meets a voxel that must end it.
    t_end: f64,
}

/// Computes [`Facts`] for the ray of `g` under `opts`.
fn facts(g: &Geometry, model: &Model, opts: &RaycastOptions, conservative: bool) -> Facts {
    let max = g.max;
    let limit = max.min(g.world_exit());
    let stops = |id: voxcast::VoxelId| opts.blocks.contains(id);
    let skipped = if opts.origin == OriginPolicy::SkipOriginVoxel {
        g.skipped(conservative)
    } else {
        Vec::new()
    };
    let start_exit = g
        .start_voxel()
        .and_then(|s| g.voxel(s, false))
        .map_or(0.0, |s| s.t_far.max(0.0));
    // Stretches of the ray inside stopping voxels, and where each stopping voxel or box is
    // certainly entered (for ExitSolid: only after the ray has certainly been in air).
    let mut stopping: Vec<(f64, f64)> = Vec::new();
    let mut certain: Vec<f64> = Vec::new();
    let mut boxes: Vec<StoppingBox> = Vec::new();
    for (&cp, c) in &model.chunks {
        for (&p, &id) in &c.voxels {
            if !stops(id) || skipped.contains(&p) {
                continue;
            }
            let Some(s) = g.voxel(p, conservative) else {
                continue;
            };
            let tn = s.t_near.max(0.0);
            if s.t_far >= tn {
                stopping.push((tn, s.t_far));
            }
            let sure = if conservative {
                s.t_far - tn >= -edge_certain(tn) && s.t_far > tol(0.0)
            } else {
                s.t_far - tn > tol(s.t_far)
            };
            if sure && tn <= max - tol_conservative(max) {
                certain.push(tn);
            }
        }
        if stops(c.fill)
            && let Some(s) = g.chunk(cp)
            && s.t_far >= s.t_near.max(0.0)
        {
            let t0 = s.t_near.max(0.0);
            let mut holes: Vec<(f64, f64)> = c
                .voxels
                .iter()
                .filter(|&(p, id)| !stops(*id) || skipped.contains(p))
                .filter_map(|(p, _)| g.voxel(*p, false))
                .map(|h| (h.t_near, h.t_far))
                .collect();
            holes.extend(
                skipped
                    .iter()
                    .filter(|p| p.chunk() == cp && !c.voxels.contains_key(p))
                    .filter_map(|p| g.voxel(*p, false))
                    .map(|h| (h.t_near, h.t_far)),
            );
            stopping.extend(subtract(t0, s.t_far, &mut holes));
            boxes.push(StoppingBox {
                t0,
                t1: s.t_far,
                holes,
            });
        }
    }
    let box_entry = |from: f64, boxes: &mut [StoppingBox]| {
        boxes
            .iter_mut()
            .filter_map(|b| {
                let to = b.t1.min(limit);
                let w = GAP_WINDOW * tol(to);
                first_gap(&mut b.holes, b.t0.max(from), to, w).map(|g| g + GAP_ENTRY * tol(to))
            })
            .filter(|&t| t <= max - tol(max))
            .fold(f64::INFINITY, f64::min)
    };
    let t_stop = if opts.origin == OriginPolicy::ExitSolid {
        // Certainly in air by `t_air`; then the next stopping voxel certainly entered.
        let w = GAP_WINDOW * tol(limit);
        match first_gap(&mut stopping, 0.0, limit, w) {
            Some(gap) if !conservative => {
                let t_air = gap + w;
                let voxels = certain
                    .iter()
                    .copied()
                    .filter(|&t| t >= t_air)
                    .fold(f64::INFINITY, f64::min);
                voxels.min(box_entry(t_air, &mut boxes))
            }
            _ => f64::INFINITY,
        }
    } else {
        let voxels = certain.iter().copied().fold(f64::INFINITY, f64::min);
        voxels.min(box_entry(0.0, &mut boxes))
    };
    // Unloaded space certainly entered: a stretch that no loaded chunk covers.
    let t_unloaded = if opts.unloaded == UnloadedPolicy::Stop {
        let mut loaded: Vec<(f64, f64)> = model
            .chunks
            .keys()
            .filter_map(|&c| g.chunk(c))
            .map(|s| (s.t_near, s.t_far))
            .collect();
        let from = if opts.origin == OriginPolicy::SkipOriginVoxel {
            start_exit
        } else {
            0.0
        };
        let w = GAP_WINDOW * tol(limit);
        first_gap(&mut loaded, from, limit, w)
            .map(|gap| gap + GAP_ENTRY * tol(limit))
            .filter(|&t| t <= max - tol(max))
            .unwrap_or(f64::INFINITY)
    } else {
        f64::INFINITY
    };
    Facts {
        t_end: t_stop.min(t_unloaded),
    }
}

/// Checks one answer of a cast of `ray` (as `VoxelRay::new` returned it) through the world of
/// `model` under `opts`; `conservative` for conservative line of sight. `Err` says why the
/// answer is wrong.
///
/// # Errors
/// A description of what the oracle expected instead.
pub fn judge(
    model: &Model,
    ray: &VoxelRay,
    opts: &RaycastOptions,
    conservative: bool,
    outcome: &RaycastOutcome,
) -> Result<(), String> {
    let g = Geometry::new(ray);
    let f = facts(&g, model, opts, conservative);
    let slack = |t: f64| {
        if conservative {
            tol_conservative(t)
        } else {
            tol(t)
        }
    };
    let skipped = if opts.origin == OriginPolicy::SkipOriginVoxel {
        g.skipped(conservative)
    } else {
        Vec::new()
    };
    // The voxel named by a hit or `Unloaded`: reached, at its entry distance, not after the
    // ray must have ended.
    let reached = |v: WorldPos, distance: f32| -> Result<Slab, String> {
        if !(distance >= 0.0 && distance <= ray.max_distance) {
            return Err(format!("distance {distance} outside [0, max distance]"));
        }
        if skipped.contains(&v) {
            return Err(format!(
                "{v:?} holds the start point, which SkipOriginVoxel skips"
            ));
        }
        let s = g
            .voxel(v, conservative)
            .ok_or_else(|| format!("the ray never reaches {v:?}"))?;
        let tn = s.t_near.max(0.0);
        if s.t_far < tn - slack(tn) {
            return Err(format!("the ray passes {v:?} by: {s:?}"));
        }
        let t = f64::from(distance);
        if (t - tn).abs() > slack(tn) {
            return Err(format!(
                "distance {distance}, but the ray enters {v:?} at {tn}"
            ));
        }
        if t > f.t_end + slack(f.t_end) {
            return Err(format!(
                "{v:?} at {distance} lies beyond {}, where the ray certainly ends",
                f.t_end
            ));
        }
        Ok(s)
    };
    match outcome {
        RaycastOutcome::Invalid(e) => Err(format!("a valid ray answered Invalid({e})")),
        RaycastOutcome::Miss => {
            if f.t_end <= g.max {
                return Err(format!("a miss, but the ray certainly ends at {}", f.t_end));
            }
            Ok(())
        }
        RaycastOutcome::Unloaded {
            voxel_pos: at,
            distance,
        } => {
            if opts.unloaded != UnloadedPolicy::Stop {
                return Err("Unloaded under UnloadedPolicy::Air".into());
            }
            if model.chunks.contains_key(&at.chunk()) {
                return Err(format!("Unloaded at {at:?}, whose chunk is loaded"));
            }
            let s = reached(*at, *distance)?;
            if s.t_near < -slack(0.0) && *distance != 0.0 {
                return Err(format!(
                    "Unloaded in the start voxel {at:?} at {distance}, not 0"
                ));
            }
            Ok(())
        }
        RaycastOutcome::Hit(h) => {
            let id = model.get(h.voxel_pos);
            if id != Some(h.voxel_type) || !opts.blocks.contains(h.voxel_type) {
                return Err(format!("hit {h:?}, but the voxel holds {id:?}"));
            }
            let s = reached(h.voxel_pos, h.distance)?;
            // ExitSolid: a ray that starts in a stopping voxel sees air only after leaving it.
            if opts.origin == OriginPolicy::ExitSolid
                && let Some(start) = g.start_voxel()
                && model.get(start).is_some_and(|id| opts.blocks.contains(id))
                && let Some(first) = g.voxel(start, false)
                && f64::from(h.distance) < first.t_far - slack(first.t_far)
            {
                return Err(format!(
                    "hit {h:?} under ExitSolid before the ray leaves the stopping start voxel {start:?}"
                ));
            }
            if h.face_normal == IVec3::ZERO {
                if h.distance != 0.0 || h.hit_uv != Vec2::ZERO || s.t_near > slack(0.0) {
                    return Err(format!(
                        "hit {h:?} has no face but is not the start voxel at distance 0 ({s:?})"
                    ));
                }
                return Ok(());
            }
            let Some(a) = (0..3).find(|&a| h.face_normal[a] != 0) else {
                unreachable!("a non-zero normal has a non-zero component")
            };
            let unit = h.face_normal.abs().element_sum() == 1;
            let d = g.ray.direction[a];
            if !unit || d == 0.0 || h.face_normal[a] != if d < 0.0 { 1 } else { -1 } {
                return Err(format!(
                    "hit {h:?}: face against direction {}",
                    g.ray.direction
                ));
            }
            if h.distance == 0.0 || s.enter[a] < s.t_near - slack(s.t_near) {
                return Err(format!("hit {h:?}: not entered through that face ({s:?})"));
            }
            let (u, v) = match a {
                0 => (1, 2),
                1 => (0, 2),
                _ => (0, 1),
            };
            let lo = g.rel(h.voxel_pos).unwrap_or(DVec3::ZERO);
            let entry = g.o + g.d * f64::from(h.distance) - lo;
            let want = [entry[u].clamp(0.0, 1.0), entry[v].clamp(0.0, 1.0)];
            let got = [f64::from(h.hit_uv.x), f64::from(h.hit_uv.y)];
            let tu = tol_uv(f64::from(h.distance));
            if (got[0] - want[0]).abs() > tu || (got[1] - want[1]).abs() > tu || got[0].is_nan() {
                return Err(format!("hit {h:?}: uv, but the entry point gives {want:?}"));
            }
            Ok(())
        }
    }
}

/// `ray` cast under `opts` with empty-space skipping and stepping voxel by voxel
/// (`per_voxel`): the answer, when both give it bit for bit.
///
/// # Errors
/// Both answers, where they differ.
pub fn skipping_equals_stepping(
    ray: &voxcast::VoxelRay,
    world: &voxcast::VoxelWorld,
    opts: &voxcast::RaycastOptions,
) -> Result<RaycastOutcome, String> {
    let o = voxcast::voxel_raycast_with(ray, world, opts);
    let per_voxel = voxcast::RaycastOptions {
        per_voxel: true,
        ..opts.clone()
    };
    let stepped = voxcast::voxel_raycast_with(ray, world, &per_voxel);
    if identical(&o, &stepped) {
        Ok(o)
    } else {
        Err(format!("skipping gives {o:?}, stepping {stepped:?}"))
    }
}

/// Whether two outcomes are the same bit for bit (distances and UVs compared as bits, so
/// `-0.0` is not `0.0`).
#[must_use]
pub fn identical(a: &RaycastOutcome, b: &RaycastOutcome) -> bool {
    use RaycastOutcome::{Hit, Unloaded};
    match (a, b) {
        (Hit(x), Hit(y)) => {
            x.voxel_pos == y.voxel_pos
                && x.face_normal == y.face_normal
                && x.voxel_type == y.voxel_type
                && x.distance.to_bits() == y.distance.to_bits()
                && x.hit_uv.x.to_bits() == y.hit_uv.x.to_bits()
                && x.hit_uv.y.to_bits() == y.hit_uv.y.to_bits()
        }
        (
            Unloaded {
                voxel_pos: p,
                distance: s,
            },
            Unloaded {
                voxel_pos: q,
                distance: t,
            },
        ) => p == q && s.to_bits() == t.to_bits(),
        (a, b) => a == b,
    }
}

/// The distance of an outcome that ends the ray (a hit or unloaded space), `None` for a miss
/// or an invalid ray.
#[must_use]
pub fn end_distance(o: &RaycastOutcome) -> Option<f32> {
    match o {
        RaycastOutcome::Hit(h) => Some(h.distance),
        RaycastOutcome::Unloaded { distance, .. } => Some(*distance),
        RaycastOutcome::Miss | RaycastOutcome::Invalid(_) => None,
    }
}
