//! Collide and slide: a box moved by a displacement, stopping at contact, dropping the blocked
//! component and going on with the rest, as character controllers move.

use glam::{BVec3, DVec3, Vec3};

use crate::boxcast::{BoxBody, BoxCast, BoxCastError, BoxCastOutcome, End, walk};
use crate::coords::WorldPos;
use crate::ray::{
    OriginPolicy, RaycastOptions, add_whole, difference, flush_denormal, set_axis, split_sub,
};
use crate::world::VoxelWorld;

/// How [`collide_and_slide`] moves a box.
#[derive(Clone, Debug, PartialEq)]
pub struct SlideOptions {
    /// Which voxels stop the box and what unloaded chunks do. The origin policy says what a box
    /// that starts touching stopping voxels does: under [`OriginPolicy::Report`] it does not
    /// move ([`Slide::stuck`]); under the others those voxels are ignored, so it can walk out of
    /// a block placed on it. The default ignores them.
    pub cast: RaycastOptions,
    /// Height in voxels of a ledge the box climbs when a horizontal move (x or z) is blocked:
    /// the box is lifted by up to this much, moved on horizontally, and put down again, when
    /// that gets it farther. 0 (the default) never climbs; 1 climbs one-voxel ledges (a little
    /// more, say 1.01, also climbs them from a box resting a hair above the ground).
    pub step_up: f32,
}

impl Default for SlideOptions {
    fn default() -> Self {
        Self {
            cast: RaycastOptions {
                origin: OriginPolicy::SkipOriginVoxel,
                ..RaycastOptions::default()
            },
            step_up: 0.0,
        }
    }
}

/// Where [`collide_and_slide`] left the box.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Slide {
    /// The box where it stopped: the box given, moved (its center's offset in `[0, 1)` on
    /// each axis). Give it to the next call to go on from there.
    pub body: BoxBody,
    /// How far the box moved on each axis, in voxels (f64, exact to f64 precision).
    pub moved: DVec3,
    /// The axes on which a contact stopped the box (a wall on x or z, a floor or ceiling on y).
    pub blocked: BVec3,
    /// Whether the box climbed a ledge ([`SlideOptions::step_up`]).
    pub stepped_up: bool,
    /// Whether the box started touching a stopping voxel under [`OriginPolicy::Report`] (or an
    /// unloaded one under [`UnloadedPolicy::Stop`](crate::ray::UnloadedPolicy::Stop)) and so
    /// did not move from there.
    pub stuck: bool,
}

/// The most casts one slide makes: one per axis it can be blocked on.
const PASSES: usize = 3;

/// Moves `body` by `displacement` (voxels) through `world`: a box cast along the displacement,
/// the box stopped at the contact (flush with the touched face, never overlapping a stopping
/// voxel), the blocked component dropped and the rest cast again, at most three passes (see
/// the box cast rules in the crate docs). Under [`UnloadedPolicy::Stop`](crate::ray::UnloadedPolicy::Stop) unloaded voxels
/// block as walls do. A zero displacement returns the box where it is.
///
/// # Errors
/// [`BoxCastError`] for a bad center, half extents or displacement (a non-finite component),
/// or one that moves the box out of the i128 world or farther than
/// [`MAX_DISTANCE_CAP`](crate::ray::MAX_DISTANCE_CAP).
pub fn collide_and_slide(
    body: &BoxBody,
    displacement: Vec3,
    world: &VoxelWorld,
    opts: &SlideOptions,
) -> Result<Slide, BoxCastError> {
    crate::ray::check_direction(displacement)?;
    // Checks the box; the center's normalised form; subnormal half extents as 0 (rule 1).
    let probe = BoxBody::new(body.center, body.center_offset, body.half_extents)?;
    let half_extents = body.half_extents.map(flush_denormal);
    let start = (probe.center, probe.center_offset);
    let mut pos = start;
    let mut slide = Slide {
        body: probe,
        moved: DVec3::ZERO,
        blocked: BVec3::FALSE,
        stepped_up: false,
        stuck: false,
    };
    let mut rest = displacement.as_dvec3();
    let mut tried_step = false;
    for _ in 0..PASSES {
        match slide_pass(pos, half_extents, rest, world, &opts.cast)? {
            Pass::Free(p) => {
                pos = p;
                break;
            }
            Pass::Stuck => {
                slide.stuck = true;
                break;
            }
            Pass::Blocked { at, axis, left } => {
                pos = at;
                rest = left;
                if axis != 1 && opts.step_up > 0.0 && !tried_step {
                    tried_step = true;
                    if let Some((p, r)) = step_up(pos, half_extents, rest, world, opts)? {
                        (pos, rest) = (p, r);
                        slide.stepped_up = true;
                        continue;
                    }
                }
                slide.blocked.set(axis, true);
                rest[axis] = 0.0;
            }
        }
    }
    slide.body.center = pos.0;
    slide.body.center_offset = pos.1;
    slide.moved = difference(start.0, start.1, pos.0, pos.1)?;
    Ok(slide)
}

/// A box's center: its voxel and the offset in it.
type Place = (WorldPos, Vec3);

/// What one cast of a slide did.
enum Pass {
    /// Moved the whole displacement to here.
    Free((WorldPos, Vec3)),
    /// Started touching a stopping voxel under `Report`: no move.
    Stuck,
    /// Stopped at `at` by a contact on `axis`, with `left` of the displacement not done.
    Blocked {
        at: (WorldPos, Vec3),
        axis: usize,
        left: DVec3,
    },
}

/// One cast along `rest` from `pos`, and the box placed where it stops.
fn slide_pass(
    pos: (WorldPos, Vec3),
    h: Vec3,
    rest: DVec3,
    world: &VoxelWorld,
    opts: &RaycastOptions,
) -> Result<Pass, BoxCastError> {
    let len = rest.length();
    if len == 0.0 {
        return Ok(Pass::Free(pos));
    }
    // A move must be checked to its end: a cast would stop looking at the cap.
    if len > f64::from(crate::ray::MAX_DISTANCE_CAP) {
        return Err(BoxCastError::Ray(crate::ray::RayError::MaxDistanceTooLarge));
    }
    let dir = (rest / len).as_vec3();
    let cast = BoxCast::new(pos.0, pos.1, h, dir, len as f32)?;
    let prepared = cast.prepare()?;
    if prepared.misses {
        // A flat box on the bottom face of the i128 world, moving out of it.
        return Err(BoxCastError::OutOfWorld);
    }
    let (outcome, end) = walk(&prepared, world, opts);
    let t = match outcome {
        BoxCastOutcome::Miss => {
            // The whole move, kept out of layers the cast did not enter.
            let at = advance((cast.body.center, cast.body.center_offset), rest)
                .ok_or(BoxCastError::OutOfWorld)?;
            let at = if end.left_bounds {
                at
            } else {
                place_at_contact(at, h, &prepared.axes, &end)
            };
            return Ok(Pass::Free(inside(at, h)?));
        }
        BoxCastOutcome::StartsInside { .. } => return Ok(Pass::Stuck),
        BoxCastOutcome::Unloaded { .. } if end.axis > 2 => return Ok(Pass::Stuck),
        BoxCastOutcome::Invalid(e) => return Err(e),
        BoxCastOutcome::Hit(hit) => hit.distance,
        BoxCastOutcome::Unloaded { distance, .. } => distance,
    };
    // The cast's own (normalised) direction and start, so that the move is the cast's, and
    // on no axis more than asked.
    let moved = within(cast.direction.as_dvec3() * f64::from(t), rest);
    let at = advance((cast.body.center, cast.body.center_offset), moved)
        .ok_or(BoxCastError::OutOfWorld)?;
    let at = inside(place_at_contact(at, h, &prepared.axes, &end), h)?;
    let done = difference(pos.0, pos.1, at.0, at.1)?;
    Ok(Pass::Blocked {
        at,
        axis: end.axis,
        left: rest - done,
    })
}

/// Tries to climb a ledge at a blocked horizontal move: lift by up to `step_up`, move the
/// horizontal part of `rest` from there, put the box down again. `Some` (the new position and
/// what is left of `rest`) when that moved the box horizontally at all.
fn step_up(
    pos: (WorldPos, Vec3),
    h: Vec3,
    rest: DVec3,
    world: &VoxelWorld,
    opts: &SlideOptions,
) -> Result<Option<(Place, DVec3)>, BoxCastError> {
    let horizontal = DVec3::new(rest.x, 0.0, rest.z);
    let lift = DVec3::new(0.0, f64::from(opts.step_up), 0.0);
    let up = match slide_pass(pos, h, lift, world, &opts.cast)? {
        Pass::Free(p) | Pass::Blocked { at: p, .. } => p,
        Pass::Stuck => return Ok(None),
    };
    let raised = difference(pos.0, pos.1, up.0, up.1)?.y;
    let across = match slide_pass(up, h, horizontal, world, &opts.cast)? {
        Pass::Free(p) | Pass::Blocked { at: p, .. } => p,
        Pass::Stuck => return Ok(None),
    };
    let gone = difference(up.0, up.1, across.0, across.1)?;
    if gone.x == 0.0 && gone.z == 0.0 {
        return Ok(None);
    }
    let down = match slide_pass(across, h, DVec3::new(0.0, -raised, 0.0), world, &opts.cast)? {
        Pass::Free(p) | Pass::Blocked { at: p, .. } => p,
        Pass::Stuck => return Ok(None),
    };
    let left = DVec3::new(rest.x - gone.x, rest.y, rest.z - gone.z);
    Ok(Some((down, left)))
}

/// `moved`, each component cut to lie between 0 and `rest`'s.
fn within(moved: DVec3, rest: DVec3) -> DVec3 {
    DVec3::from_array(std::array::from_fn(|a| {
        let (lo, hi) = if rest[a] < 0.0 {
            (rest[a], 0.0)
        } else {
            (0.0, rest[a])
        };
        moved[a].clamp(lo, hi)
    }))
}

/// `pos`, when the box there lies inside the i128 world.
fn inside(pos: Place, h: Vec3) -> Result<Place, BoxCastError> {
    BoxCast::new(pos.0, pos.1, h, Vec3::X, 0.0).map(|_| pos)
}

/// `pos` moved by `delta` voxels, each axis's offset rounded towards `pos` (so the box never
/// goes farther than asked); `None` outside the i128 world.
fn advance(pos: (WorldPos, Vec3), delta: DVec3) -> Option<(WorldPos, Vec3)> {
    let mut p = pos.0;
    let mut sub = pos.1;
    for a in 0..3 {
        if delta[a] == 0.0 {
            continue;
        }
        let x = f64::from(pos.1[a]) + delta[a];
        let whole = x.floor();
        let frac = x - whole;
        let mut f = frac as f32;
        if delta[a] > 0.0 && f64::from(f) > frac {
            f = f.next_down();
        } else if delta[a] < 0.0 && f64::from(f) < frac {
            f = f.next_up();
        }
        let (w, s) = split_sub(add_whole(pos.0.axis(a), whole)?, f).ok()?;
        set_axis(&mut p, a, w);
        sub[a] = s;
    }
    Some((p, sub))
}

/// `at` (the box moved by the contact's distance) placed so that it overlaps no voxel the cast
/// had not reached: on each moving axis its leading face no farther than the plane the cast
/// reached (the near face of a layer entered at the contact, else the far face of the
/// leading layer), and on the contact's axis flush against the touched face (a shaped voxel's
/// box's face where the contact is one).
fn place_at_contact(
    at: (WorldPos, Vec3),
    h: Vec3,
    axes: &[crate::boxcast::Axis; 3],
    end: &End,
) -> (WorldPos, Vec3) {
    let mut pos = at;
    for a in 0..3 {
        let ax = &axes[a];
        if !ax.moving {
            continue;
        }
        let entered = end.entered >> a & 1 != 0;
        // A plane past the i128 world cannot be reached: nothing to keep the box from.
        let plane = match (ax.step > 0, entered) {
            (true, true) => Some(end.hi[a]),
            (true, false) => end.hi[a].checked_add(1),
            (false, true) => end.lo[a].checked_add(1),
            (false, false) => Some(end.lo[a]),
        };
        let plane = match end.plane {
            Some(p) if a == end.axis => Some(p),
            _ => plane.map(|p| (p, 0.0)),
        };
        let Some(plane) = plane else {
            continue;
        };
        let face = lead_face(pos.0.axis(a), pos.1[a], h[a], ax.step);
        // A flat box on the plane covers the voxel beyond it (rule 2): that is past it too.
        let past = match (ax.step > 0, h[a] == 0.0) {
            (true, false) => face > plane,
            (true, true) => face >= plane,
            (false, false) => face < plane,
            (false, true) => face <= plane,
        };
        if (past || a == end.axis)
            && let Some((w, s)) = flush_at(plane, h[a], ax.step)
        {
            set_axis(&mut pos.0, a, w);
            pos.1[a] = s;
        }
    }
    pos
}

/// The leading face of a box on one axis, by rule 1: the offset plus or minus the half extent,
/// rounded to f32 once, split into a voxel and a fraction (`(origin, 0.0)` if that fails, which
/// a checked box cannot).
fn lead_face(origin: i128, sub: f32, h: f32, step: i8) -> (i128, f32) {
    let v = if step > 0 { sub + h } else { sub - h };
    split_sub(origin, v).unwrap_or((origin, 0.0))
}

/// A center on one axis whose leading face (rule 1) lies on `plane` (a voxel and a fraction in
/// `[0, 1)`) or, where f32 cannot put it there, as close behind it as f32 allows; `None` when
/// that center is outside the i128 world. A flat box (`h` 0) on the plane would cover what lies
/// beyond it (rule 2), so its center goes a step of f32 behind the plane instead.
fn flush_at(plane: (i128, f32), h: f32, step: i8) -> Option<(i128, f32)> {
    let (at, frac) = plane;
    if h == 0.0 {
        return match (step > 0, frac > 0.0) {
            (true, true) => Some((at, frac.next_down())),
            (true, false) => Some((at.checked_sub(1)?, 1.0f32.next_down())),
            (false, true) => Some((at, frac.next_up())),
            (false, false) => Some((at, f32::EPSILON)),
        };
    }
    // The center lies `h` behind the plane: whole voxels in the i128 part, the rest in f32.
    let back = f64::from(frac) - f64::from(step) * f64::from(h);
    let whole = back.floor();
    let base = at.checked_add(whole as i128)?;
    let mut sub = (back - whole) as f32;
    if sub >= 1.0 {
        sub = 1.0f32.next_down();
    }
    for _ in 0..8 {
        let face = lead_face(base, sub, h, step);
        let ok = if step > 0 {
            face <= plane
        } else {
            face >= plane
        };
        if ok {
            break;
        }
        sub = if step > 0 {
            sub.next_down()
        } else {
            sub.next_up()
        };
    }
    split_sub(base, sub).ok()
}
