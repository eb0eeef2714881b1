//! Box casts: where an axis-aligned box moving along a straight line first touches a stopping
//! voxel, computed from crossing counts as the ray DDA is; and collide-and-slide built on them
//! (`slide`).
//!
//! The rules are numbered in the crate docs ("Box casts"), and `tests/README.md` names their
//! tests.

use glam::{DVec3, IVec3, Vec3};
use rayon::prelude::*;

use crate::coords::{ChunkPos, VoxelBox, WorldPos};
use crate::cpu_ref::{T_DISABLED, crossing_t};
use crate::ray::{
    OriginPolicy, RayError, RaycastOptions, UnloadedPolicy, VoxelRay, first_crossing, first_voxel,
    flush_denormal, split_sub,
};
use crate::world::{Chunk, VoxelId, VoxelWorld};

mod shaped;
mod slide;

use shaped::{Contact, Touch, touch};

pub use slide::{Slide, SlideOptions, collide_and_slide};

/// The largest half extent a box cast accepts, in voxels: a box up to 16 voxels wide.
pub const MAX_HALF_EXTENT: f32 = 8.0;

/// Face fractions between 0 and this count as this (rule 1): `2^-64`.
const TINY_FRACTION: f32 = 1.0 / 18_446_744_073_709_551_616.0;

/// An axis-aligned box standing in the i128 world: where its center is and how large it is.
/// A player's or an NPC's collision box; [`BoxBody::cast`] moves it along a line
/// ([`box_cast`]) and [`collide_and_slide`] moves it by a displacement.
///
/// Build it with [`BoxBody::new`] or [`BoxBody::from_point`]; the fields are public so that
/// engines can fill them directly, and every cast and slide checks them again.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoxBody {
    /// The voxel holding the box's center.
    pub center: WorldPos,
    /// The center inside `center`, in voxels; any finite value (whole units move into `center`).
    pub center_offset: Vec3,
    /// Half the box's size on each axis, in voxels, each in `0..=MAX_HALF_EXTENT`.
    pub half_extents: Vec3,
}

impl BoxBody {
    /// Validates and builds a box: the center's whole units moved into `center`, so that
    /// `center_offset` lies in `[0, 1)` on each axis.
    ///
    /// # Errors
    /// [`BoxCastError::Ray`] for a center [`VoxelRay::new`] refuses as an origin;
    /// [`BoxCastError::HalfExtents`] for a half extent that is not a number in
    /// `0..=MAX_HALF_EXTENT`; [`BoxCastError::OutOfWorld`] when a face lies outside the i128
    /// world.
    ///
    /// # Example
    /// ```
    /// use voxcast::{BoxBody, WorldPos, glam::Vec3};
    /// // A player-sized box, its feet on the top face of voxel y = 63.
    /// let player = BoxBody::new(
    ///     WorldPos::new(0, 64, 0),
    ///     Vec3::new(0.5, 0.9, 0.5),
    ///     Vec3::new(0.3, 0.9, 0.3),
    /// )?;
    /// # Ok::<(), voxcast::BoxCastError>(())
    /// ```
    pub fn new(
        center: WorldPos,
        center_offset: Vec3,
        half_extents: Vec3,
    ) -> Result<Self, BoxCastError> {
        BoxCast::new(center, center_offset, half_extents, Vec3::X, 0.0).map(|c| c.body)
    }

    /// [`BoxBody::new`] with the center given as a point in f64 voxel coordinates (split as
    /// [`VoxelRay::from_point`] splits it).
    ///
    /// # Errors
    /// Those of [`VoxelRay::from_point`] and [`BoxBody::new`].
    pub fn from_point(center: DVec3, half_extents: Vec3) -> Result<Self, BoxCastError> {
        BoxCast::from_point(center, half_extents, Vec3::X, 0.0).map(|c| c.body)
    }

    /// This box moving along `direction` (normalised unless within `1e-5` of unit length) for
    /// up to `max_distance` voxels: the cast [`box_cast`] answers.
    ///
    /// # Errors
    /// As [`BoxCast::new`].
    pub fn cast(self, direction: Vec3, max_distance: f32) -> Result<BoxCast, BoxCastError> {
        BoxCast::new(
            self.center,
            self.center_offset,
            self.half_extents,
            direction,
            max_distance,
        )
    }
}

/// An axis-aligned box moving along a straight line: what [`box_cast`] casts.
///
/// Build it with [`BoxBody::cast`], [`BoxCast::new`] or [`BoxCast::from_point`]; the fields
/// are public so that engines can fill them directly, and every cast checks them again.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoxCast {
    /// The box at its start.
    pub body: BoxBody,
    /// Direction of motion, as a ray's (normalised unless within `1e-5` of unit length).
    pub direction: Vec3,
    /// How far the box moves, in voxels, as a ray's max distance (farther than
    /// [`MAX_DISTANCE_CAP`](crate::ray::MAX_DISTANCE_CAP), `f32::INFINITY` included, means the
    /// cap).
    pub max_distance: f32,
}

/// Why a box cast was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BoxCastError {
    /// The center, direction or max distance is bad, as it would be for a ray.
    #[error("{0}")]
    Ray(#[from] RayError),
    /// A half extent is NaN, negative, infinite or above [`MAX_HALF_EXTENT`].
    #[error("box half extents must be finite and within 0..=8 voxels")]
    HalfExtents,
    /// A face of the box lies outside the i128 world (or its high face exactly on the world's
    /// top face, which is no voxel coordinate).
    #[error("the box reaches past the edge of the i128 world")]
    OutOfWorld,
}

/// Where a moving box first touches a stopping voxel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoxHit {
    /// The voxel touched (rule 6 of the crate docs' box casts when several are touched at once).
    pub voxel_pos: WorldPos,
    /// Outward normal of the touched voxel's face that the box meets: the axis of contact,
    /// pointing back against the motion.
    pub face_normal: IVec3,
    /// Distance the box moved before touching, in voxels (0 when it starts flush against the
    /// voxel and moves into it).
    pub distance: f32,
    /// The touched voxel's id.
    pub voxel_type: VoxelId,
}

/// The answer to a box cast.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BoxCastOutcome {
    /// The box touches a stopping voxel after moving `distance`.
    Hit(BoxHit),
    /// Under [`OriginPolicy::Report`]: the box already touches a stopping voxel at its start
    /// (the lowest such voxel, x then y then z).
    StartsInside {
        /// A stopping voxel the box touches at its start.
        voxel_pos: WorldPos,
        /// Its id.
        voxel_type: VoxelId,
    },
    /// Nothing stops the box within its max distance.
    Miss,
    /// Under [`UnloadedPolicy::Stop`]: the box touches unloaded voxel `voxel_pos` after moving
    /// `distance`.
    Unloaded {
        /// The unloaded voxel.
        voxel_pos: WorldPos,
        /// Distance moved, in voxels.
        distance: f32,
    },
    /// The cast was rejected; nothing was cast.
    Invalid(BoxCastError),
}

impl BoxCastOutcome {
    /// The hit, if the box touched a stopping voxel while moving.
    #[must_use]
    pub fn hit(&self) -> Option<&BoxHit> {
        match self {
            Self::Hit(h) => Some(h),
            _ => None,
        }
    }

    /// How far the box moves freely: the hit's or unloaded contact's distance, 0 when it starts
    /// inside, `None` for a miss (the whole max distance) or an invalid cast.
    #[must_use]
    pub fn distance(&self) -> Option<f32> {
        match *self {
            Self::Hit(h) => Some(h.distance),
            Self::Unloaded { distance, .. } => Some(distance),
            Self::StartsInside { .. } => Some(0.0),
            Self::Miss | Self::Invalid(_) => None,
        }
    }
}

impl BoxCast {
    /// Validates and builds a box cast.
    ///
    /// # Errors
    /// [`BoxCastError::Ray`] for what [`VoxelRay::new`] refuses in the center, direction and
    /// max distance; [`BoxCastError::HalfExtents`] for a half extent that is not a number in
    /// `0..=MAX_HALF_EXTENT`; [`BoxCastError::OutOfWorld`] when a face lies outside the i128
    /// world.
    ///
    /// # Example
    /// ```
    /// use voxcast::{BoxCast, WorldPos, glam::Vec3};
    /// // A player-sized box falling from 3 voxels above the ground.
    /// let fall = BoxCast::new(
    ///     WorldPos::new(0, 67, 0),
    ///     Vec3::new(0.5, 0.9, 0.5),
    ///     Vec3::new(0.3, 0.9, 0.3),
    ///     Vec3::NEG_Y,
    ///     4.0,
    /// )?;
    /// # Ok::<(), voxcast::BoxCastError>(())
    /// ```
    pub fn new(
        center: WorldPos,
        center_offset: Vec3,
        half_extents: Vec3,
        direction: Vec3,
        max_distance: f32,
    ) -> Result<Self, BoxCastError> {
        let ray = VoxelRay::new(center, center_offset, direction, max_distance)?;
        let cast = Self {
            body: BoxBody {
                center: ray.origin,
                center_offset: ray.sub_offset,
                half_extents,
            },
            direction: ray.direction,
            max_distance: ray.max_distance,
        };
        cast.prepare()?;
        Ok(cast)
    }

    /// [`BoxCast::new`] with the center given as a point in f64 voxel coordinates (split as
    /// [`VoxelRay::from_point`] splits it).
    ///
    /// # Errors
    /// Those of [`VoxelRay::from_point`] and [`BoxCast::new`].
    pub fn from_point(
        center: DVec3,
        half_extents: Vec3,
        direction: Vec3,
        max_distance: f32,
    ) -> Result<Self, BoxCastError> {
        let ray = VoxelRay::from_point(center, direction, max_distance)?;
        Self::new(
            ray.origin,
            ray.sub_offset,
            half_extents,
            ray.direction,
            ray.max_distance,
        )
    }

    /// The box's center's ray: the same center, direction and max distance.
    ///
    /// # Errors
    /// As [`VoxelRay::new`].
    pub fn center_ray(&self) -> Result<VoxelRay, RayError> {
        VoxelRay::new(
            self.body.center,
            self.body.center_offset,
            self.direction,
            self.max_distance,
        )
    }

    /// Checks the cast and makes the per-axis state of rules 1 to 3.
    pub(crate) fn prepare(&self) -> Result<Prepared, BoxCastError> {
        let ray = self.center_ray()?;
        let mut axes = [Axis::default(); 3];
        let mut misses = false;
        for (a, axis) in axes.iter_mut().enumerate() {
            let h = self.body.half_extents[a];
            if !(0.0..=MAX_HALF_EXTENT).contains(&h) {
                return Err(BoxCastError::HalfExtents);
            }
            match Axis::new(
                ray.origin.axis(a),
                ray.sub_offset[a],
                flush_denormal(h),
                ray.direction[a],
                ray.max_distance,
            )? {
                Some(x) => *axis = x,
                None => misses = true,
            }
        }
        Ok(Prepared {
            axes,
            dir: ray.direction,
            max_distance: ray.max_distance,
            misses,
        })
    }
}

/// One axis of a prepared box cast (rules 1 to 3).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Axis {
    /// Voxel step of the motion: `+1` or `-1` (`+1` on a still axis).
    pub(crate) step: i8,
    /// Whether the box moves on this axis (a non-zero direction component).
    pub(crate) moving: bool,
    /// `1 / |d|` in f32 (1 on a still axis).
    pub(crate) inv: f32,
    /// First crossing of the leading and the trailing face, in units of `inv`.
    pub(crate) lead_b: f32,
    pub(crate) trail_b: f32,
    /// Whether each face crosses a plane within max distance.
    pub(crate) lead_on: bool,
    pub(crate) trail_on: bool,
    /// Voxel of each face just after the start (the DDA's start voxel of that face's ray).
    pub(crate) lead0: i128,
    pub(crate) trail0: i128,
    /// The leading face starts exactly on a plane, with a positive half extent: it enters
    /// `lead0` at distance 0 (rule 3).
    pub(crate) on_plane: bool,
    /// That plane is the bottom face of the i128 world and the box moves down: its first
    /// crossing leaves the world (`lead0` is then the box's own lowest voxel).
    pub(crate) exits: bool,
    /// The layer of the leading face just after the start: `lead0`, or with `on_plane` the
    /// box's own voxel behind the plane.
    pub(crate) lead_init: i128,
    /// The box's voxels on this axis at its start (rule 2), `lo > hi` when none.
    pub(crate) start_lo: i128,
    pub(crate) start_hi: i128,
    /// On an axis the box does not move on, where its faces lie: the low face at
    /// `start_lo + face_lo`, the high face at `start_hi + face_hi` (`face_hi` is 1 where the
    /// face lies on the plane above `start_hi`). Shaped voxels' boxes are tested against them.
    pub(crate) face_lo: f32,
    pub(crate) face_hi: f32,
    /// The half extent is 0: the box's two faces are one, a point on this axis.
    pub(crate) flat: bool,
}

impl Axis {
    /// `Ok(None)` when the cast can only miss (a flat box on the bottom face of the i128 world
    /// moving down).
    fn new(origin: i128, sub: f32, h: f32, d: f32, max: f32) -> Result<Option<Self>, BoxCastError> {
        // A fraction between 0 and 2^-64 counts as 2^-64: no crossing distance is then
        // subnormal (which a GPU may flush), even for directions a little longer than 1, and
        // the faces keep their order.
        let face = |v: f32| {
            split_sub(origin, v)
                .map(|(w, f)| (w, if f > 0.0 { f.max(TINY_FRACTION) } else { f }))
                .map_err(|_| BoxCastError::OutOfWorld)
        };
        let (lo_w, lo_f) = face(sub - h)?;
        let (hi_w, hi_f) = face(sub + h)?;
        // The voxels the open box overlaps at rest: from the low face's voxel to the high face's,
        // less that one when the high face lies on its plane; a flat box, the center's voxel
        // (moving axes replace this below).
        let start_lo = lo_w;
        let start_hi = if h > 0.0 && hi_f == 0.0 {
            hi_w - 1
        } else {
            hi_w
        };
        let mut ax = Self {
            step: 1,
            inv: 1.0,
            lead_b: 1.0,
            trail_b: 1.0,
            start_lo,
            start_hi,
            face_lo: lo_f,
            face_hi: if start_hi == hi_w { hi_f } else { 1.0 },
            flat: h == 0.0,
            ..Self::default()
        };
        if d == 0.0 {
            return Ok(Some(ax));
        }
        let up = d > 0.0;
        let ((lw, lf), (tw, tf)) = if up {
            ((hi_w, hi_f), (lo_w, lo_f))
        } else {
            ((lo_w, lo_f), (hi_w, hi_f))
        };
        ax.step = if up { 1 } else { -1 };
        ax.moving = true;
        ax.on_plane = h > 0.0 && lf == 0.0;
        // A face exactly on the bottom of the i128 world moving down has no voxel below it: a
        // flat box there is a ray that can only miss; a box leaves the world at its first
        // crossing (rule 8).
        let (Some(trail0), lead0) = (first_voxel(tw, tf, d), first_voxel(lw, lf, d)) else {
            return Ok(None);
        };
        ax.trail0 = trail0;
        match lead0 {
            Some(v) => ax.lead0 = v,
            None if ax.on_plane => {
                ax.exits = true;
                ax.lead0 = lw;
            }
            None => return Ok(None),
        }
        // The box's voxels just after the start (rule 3): a leading face on its plane has not
        // entered `lead0` yet (its own voxel is the one behind the plane); on a flat axis this
        // is the center ray's start voxel.
        ax.lead_init = match (ax.on_plane, up) {
            (false, _) => ax.lead0,
            (true, true) => lw - 1,
            (true, false) => lw,
        };
        (ax.start_lo, ax.start_hi) = ax.span(ax.trail0, ax.lead_init);
        ax.lead_b = first_crossing(lf, d);
        ax.trail_b = first_crossing(tf, d);
        let inv = 1.0 / d.abs();
        if inv.is_finite() {
            ax.inv = inv;
            ax.lead_on = ax.lead_b * inv <= max;
            ax.trail_on = ax.trail_b * inv <= max;
        }
        Ok(Some(ax))
    }

    /// The voxels from the trailing face's `trail` to the leading face's `lead`, as `(lo, hi)`
    /// (`lo > hi` when the leading face has not passed the trailing one's voxel).
    #[inline]
    pub(crate) fn span(&self, trail: i128, lead: i128) -> (i128, i128) {
        if self.step > 0 {
            (trail, lead)
        } else {
            (lead, trail)
        }
    }

    /// Distance of the leading face's `n`-th crossing, or [`T_DISABLED`].
    #[inline]
    fn lead_t(&self, n: u32) -> f32 {
        if self.lead_on {
            crossing_t(self.lead_b, self.inv, n)
        } else {
            T_DISABLED
        }
    }

    #[inline]
    fn trail_t(&self, n: u32) -> f32 {
        if self.trail_on {
            crossing_t(self.trail_b, self.inv, n)
        } else {
            T_DISABLED
        }
    }
}

/// A checked box cast: per-axis state, direction and max distance.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Prepared {
    pub(crate) axes: [Axis; 3],
    pub(crate) dir: Vec3,
    pub(crate) max_distance: f32,
    /// The cast can only miss: a flat box on the bottom face of the i128 world moving down,
    /// as a ray there.
    pub(crate) misses: bool,
}

impl Prepared {
    /// Each axis's place in rule 6's order for edges and corners: fastest first, ties z, y, x.
    pub(crate) fn ranks(&self) -> [u8; 3] {
        let d = self.dir.abs();
        let before = |b: usize, a: usize| d[b] > d[a] || (d[b] == d[a] && b > a);
        std::array::from_fn(|a| (0..3).filter(|&b| b != a && before(b, a)).count() as u8)
    }
}

/// The ids of voxels by position, keeping the last chunk looked at.
struct Voxels<'w> {
    world: &'w VoxelWorld,
    last: Option<(ChunkPos, Option<&'w Chunk>)>,
}

impl<'w> Voxels<'w> {
    fn new(world: &'w VoxelWorld) -> Self {
        Self { world, last: None }
    }

    /// The id at `p`, `None` when its chunk is not loaded.
    #[inline]
    fn get(&mut self, p: WorldPos) -> Option<VoxelId> {
        let c = p.chunk();
        let chunk = match self.last {
            Some((at, chunk)) if at == c => chunk,
            _ => {
                let chunk = self.world.chunk(c);
                self.last = Some((c, chunk));
                chunk
            }
        };
        chunk.map(|k| k.get(p.local()))
    }
}

/// What a set of touched voxels holds: the best stopping voxel and the best unloaded one, by
/// rule 6's key.
#[derive(Default)]
struct Best {
    hit: Option<Stop>,
    unloaded: Option<(Key, WorldPos, usize)>,
}

/// A stopping voxel met: its key, voxel, id, the axis of its face, and for a shaped voxel's
/// box the plane of that face.
#[derive(Clone, Copy)]
struct Stop {
    key: Key,
    at: WorldPos,
    id: VoxelId,
    axis: usize,
    plane: Option<(i128, f32)>,
}

/// Rule 6's order: faces before edges before corners, then the axis's rank, then x, y, z.
type Key = (u32, u8, i128, i128, i128);

impl Best {
    fn offer(
        &mut self,
        key: Key,
        p: WorldPos,
        id: Option<VoxelId>,
        axis: usize,
        opts: &RaycastOptions,
    ) {
        match id {
            Some(id) if stops(id, opts) && self.hit.is_none_or(|h| key < h.key) => {
                self.hit = Some(Stop {
                    key,
                    at: p,
                    id,
                    axis,
                    plane: None,
                });
            }
            None if opts.unloaded == UnloadedPolicy::Stop
                && self.unloaded.is_none_or(|(k, ..)| key < k) =>
            {
                self.unloaded = Some((key, p, axis));
            }
            _ => {}
        }
    }

    fn offer_stop(&mut self, s: Stop) {
        if self.hit.is_none_or(|h| s.key < h.key) {
            self.hit = Some(s);
        }
    }
}

/// Whether `id` stops a box: air never does, whatever the filter (as for rays).
fn stops(id: VoxelId, opts: &RaycastOptions) -> bool {
    id != VoxelId::AIR && opts.blocks.contains(id)
}

/// The first contact with a shaped voxel's box found so far, later than the walk's distance
/// (rule 10): its distance and what it stops with.
#[derive(Default)]
struct Later(Option<(f32, Stop)>);

impl Later {
    fn offer(&mut self, t: f32, s: Stop) {
        if self.0.is_none_or(|(tl, l)| (t, s.key) < (tl, l.key)) {
            self.0 = Some((t, s));
        }
    }
}

impl Stop {
    /// The stop at contact `c` with the shaped voxel `v` of id `id`.
    fn shaped(c: &Contact, v: WorldPos, id: VoxelId, p: &Prepared, ranks: [u8; 3]) -> Self {
        Self {
            key: (c.kind, ranks[c.axis], v.x, v.y, v.z),
            at: v,
            id,
            axis: c.axis,
            plane: c.plane(v, p.axes[c.axis].step),
        }
    }
}

/// Casts `cast` through `world` under `opts` (its origin policy, material filter and unloaded
/// policy; the rules are in the crate docs, "Box casts"): the first stopping voxel the moving
/// box touches.
#[must_use]
pub fn box_cast(cast: &BoxCast, world: &VoxelWorld, opts: &RaycastOptions) -> BoxCastOutcome {
    match cast.prepare() {
        Ok(p) if p.misses => BoxCastOutcome::Miss,
        Ok(p) => walk(&p, world, opts).0,
        Err(e) => BoxCastOutcome::Invalid(e),
    }
}

/// [`box_cast`] for many casts on all threads, in input order; a bad cast is
/// [`BoxCastOutcome::Invalid`] and the others are answered.
#[must_use]
pub fn box_cast_batch(
    casts: &[BoxCast],
    world: &VoxelWorld,
    opts: &RaycastOptions,
) -> Vec<BoxCastOutcome> {
    casts
        .par_iter()
        .with_min_len(64)
        .map(|c| box_cast(c, world, opts))
        .collect()
}

/// The box's voxel range on each axis where a cast ended, `(lo, hi)` inclusive, the axes
/// whose leading face entered a new layer at the end (bit `a` for axis `a`) and the axis of the
/// contact (3 for none): what a slide needs to place the box at the contact without overlapping
/// anything.
#[derive(Clone, Copy, Debug)]
pub(crate) struct End {
    pub(crate) lo: [i128; 3],
    pub(crate) hi: [i128; 3],
    pub(crate) entered: u32,
    pub(crate) axis: usize,
    /// The plane of the face met on `axis` where it is a shaped voxel's box's (a voxel and a
    /// fraction), not a voxel's face.
    pub(crate) plane: Option<(i128, f32)>,
    /// The cast ended as a miss because the box left the occupied bounds (rule 8), not at
    /// its max distance: `lo`, `hi` are where it left them.
    pub(crate) left_bounds: bool,
}

/// The walk of rules 2 to 8 and 10.
pub(crate) fn walk(
    p: &Prepared,
    world: &VoxelWorld,
    opts: &RaycastOptions,
) -> (BoxCastOutcome, End) {
    // A world without shapes walks code without rule 10's checks.
    if world.shapes().is_empty() {
        walk_in::<false>(p, world, opts)
    } else {
        walk_in::<true>(p, world, opts)
    }
}

/// [`walk`] in a world with shapes (`SHAPED`) or without.
fn walk_in<const SHAPED: bool>(
    p: &Prepared,
    world: &VoxelWorld,
    opts: &RaycastOptions,
) -> (BoxCastOutcome, End) {
    let ax = &p.axes;
    let ranks = p.ranks();
    let mut voxels = Voxels::new(world);
    let table = world.shapes();
    // The boxes of a stopping voxel's shape (empty for an empty shape), `None` for a cube.
    let shape = |id: VoxelId| if SHAPED { table.boxes_of(id) } else { None };
    let mut lo: [i128; 3] = std::array::from_fn(|a| ax[a].start_lo);
    let mut hi: [i128; 3] = std::array::from_fn(|a| ax[a].start_hi);
    let end = |lo: [i128; 3], hi: [i128; 3], entered, axis| End {
        lo,
        hi,
        entered,
        axis,
        plane: None,
        left_bounds: false,
    };
    let hit = |s: Stop, t: f32, lo, hi, entered| {
        let mut face_normal = IVec3::ZERO;
        face_normal[s.axis] = -i32::from(ax[s.axis].step);
        let h = BoxHit {
            voxel_pos: s.at,
            face_normal,
            distance: t,
            voxel_type: s.id,
        };
        let e = End {
            plane: s.plane,
            ..end(lo, hi, entered, s.axis)
        };
        (BoxCastOutcome::Hit(h), e)
    };
    let mut later = Later::default();
    // Rule 4: the voxels touched at the start, where they can end the cast (a stopping voxel
    // under Report, an unloaded one under Stop); rule 10: shaped voxels' boxes met later.
    let start_matters =
        opts.origin == OriginPolicy::Report || opts.unloaded == UnloadedPolicy::Stop;
    if (start_matters || SHAPED) && lo.iter().zip(&hi).all(|(l, h)| l <= h) {
        let mut best = Best::default();
        for_each_in(lo, hi, |v| {
            let id = voxels.get(v);
            if SHAPED
                && let Some(i) = id.filter(|&i| stops(i, opts))
                && let Some(boxes) = shape(i)
            {
                match touch(p, v, boxes, ranks) {
                    Touch::Inside => best.offer((0, 0, v.x, v.y, v.z), v, id, 0, opts),
                    Touch::At(c) => later.offer(c.t, Stop::shaped(&c, v, i, p, ranks)),
                    Touch::Never => {}
                }
            } else if start_matters {
                best.offer((0, 0, v.x, v.y, v.z), v, id, 0, opts);
            }
        });
        if let Some(s) = best.hit
            && opts.origin == OriginPolicy::Report
        {
            let o = BoxCastOutcome::StartsInside {
                voxel_pos: s.at,
                voxel_type: s.id,
            };
            return (o, end(lo, hi, 0, 3));
        }
        if let Some((_, at, _)) = best.unloaded {
            let o = BoxCastOutcome::Unloaded {
                voxel_pos: at,
                distance: 0.0,
            };
            return (o, end(lo, hi, 0, 3));
        }
    }
    // The box's voxels just after the start on moving axes: trailing face to leading face.
    let mut lead = [0i128; 3];
    let mut n_lead = [0u32; 3];
    let mut n_trail = [0u32; 3];
    let mut pending = [false; 3];
    let mut t_lead = [T_DISABLED; 3];
    for a in 0..3 {
        if ax[a].moving {
            pending[a] = ax[a].on_plane;
            lead[a] = ax[a].lead_init;
            t_lead[a] = if pending[a] { 0.0 } else { ax[a].lead_t(0) };
        }
    }
    let bounds = world.occupied_bounds();
    loop {
        let t = t_lead[0].min(t_lead[1]).min(t_lead[2]);
        // Rule 10: a shaped voxel's box met before the next layer.
        if SHAPED
            && let Some((tc, s)) = later.0
            && tc < t
        {
            return hit(s, tc, lo, hi, 0);
        }
        if t > p.max_distance {
            return (BoxCastOutcome::Miss, end(lo, hi, 0, 3));
        }
        // Rule 8: under Air nothing beyond the occupied bounds stops the box, but a shaped
        // voxel's box it already touches.
        if opts.unloaded == UnloadedPolicy::Air && leaves(bounds.as_ref(), lo, hi, p.dir) {
            if SHAPED && let Some((tc, s)) = later.0 {
                return hit(s, tc, lo, hi, 0);
            }
            let e = End {
                left_bounds: true,
                ..end(lo, hi, 0, 3)
            };
            return (BoxCastOutcome::Miss, e);
        }
        let mut entered = 0u32;
        for a in 0..3 {
            if t_lead[a] != t {
                continue;
            }
            entered |= 1 << a;
            let s = i128::from(ax[a].step);
            if pending[a] {
                if ax[a].exits {
                    return (BoxCastOutcome::Miss, end(lo, hi, 0, 3));
                }
                pending[a] = false;
                lead[a] = ax[a].lead0;
            } else {
                n_lead[a] += 1;
                let Some(l) = ax[a].lead0.checked_add(s * i128::from(n_lead[a])) else {
                    return (BoxCastOutcome::Miss, end(lo, hi, 0, 3));
                };
                lead[a] = l;
            }
            t_lead[a] = ax[a].lead_t(n_lead[a]);
        }
        for a in 0..3 {
            if ax[a].moving {
                while ax[a].trail_t(n_trail[a]) <= t {
                    n_trail[a] += 1;
                }
                // Behind the leading face, which is inside the world.
                let trail = ax[a].trail0 + i128::from(ax[a].step) * i128::from(n_trail[a]);
                (lo[a], hi[a]) = ax[a].span(trail, lead[a]);
            }
        }
        // Rule 5 and 6: the voxels of the new layers.
        let mut best = Best::default();
        if SHAPED
            && let Some((tc, s)) = later.0
            && tc == t
        {
            best.offer_stop(s);
        }
        let skip = opts.unloaded == UnloadedPolicy::Air;
        for a in (0..3).filter(|&a| entered >> a & 1 != 0) {
            let (mut slo, mut shi) = (lo, hi);
            (slo[a], shi[a]) = (lead[a], lead[a]);
            if skip && bounds.as_ref().is_none_or(|b| !overlaps(b, slo, shi)) {
                continue;
            }
            for_each_in(slo, shi, |v| {
                // Visited already as part of an earlier axis's layer.
                if (0..a).any(|b| entered >> b & 1 != 0 && v.axis(b) == lead[b]) {
                    return;
                }
                let m = (0..3).filter(|&b| entered >> b & 1 != 0 && v.axis(b) == lead[b]);
                let class = m.clone().count() as u32;
                let Some(axis) = m.min_by_key(|&b| ranks[b]) else {
                    return;
                };
                let id = voxels.get(v);
                let shaped = match id {
                    Some(i) if SHAPED && stops(i, opts) => shape(i).map(|b| (i, b)),
                    _ => None,
                };
                let Some((i, boxes)) = shaped else {
                    best.offer((class, ranks[axis], v.x, v.y, v.z), v, id, axis, opts);
                    return;
                };
                // A shaped voxel: met where the box first overlaps one of its boxes, now at
                // the earliest (a voxel entered after the start never holds the box then).
                if let Touch::At(c) = touch(p, v, boxes, ranks) {
                    let s = Stop::shaped(&c, v, i, p, ranks);
                    if c.t == t {
                        best.offer_stop(s);
                    } else {
                        later.offer(c.t, s);
                    }
                }
            });
        }
        if let Some(s) = best.hit {
            return hit(s, t, lo, hi, entered);
        }
        if let Some((_, at, a)) = best.unloaded {
            let o = BoxCastOutcome::Unloaded {
                voxel_pos: at,
                distance: t,
            };
            return (o, end(lo, hi, entered, a));
        }
    }
}

/// Calls `f` for every voxel of the inclusive box `lo..=hi`.
#[inline]
fn for_each_in(lo: [i128; 3], hi: [i128; 3], mut f: impl FnMut(WorldPos)) {
    for z in lo[2]..=hi[2] {
        for y in lo[1]..=hi[1] {
            for x in lo[0]..=hi[0] {
                f(WorldPos::new(x, y, z));
            }
        }
    }
}

fn overlaps(b: &VoxelBox, lo: [i128; 3], hi: [i128; 3]) -> bool {
    (0..3).all(|a| lo[a] <= b.max.axis(a) && b.min.axis(a) <= hi[a])
}

/// Whether the box `lo..=hi` lies outside `bounds` on an axis along which it does not move
/// towards them (so it never touches them again); `true` without bounds.
fn leaves(bounds: Option<&VoxelBox>, lo: [i128; 3], hi: [i128; 3], d: Vec3) -> bool {
    let Some(b) = bounds else {
        return true;
    };
    (0..3).any(|a| (lo[a] > b.max.axis(a) && d[a] >= 0.0) || (hi[a] < b.min.axis(a) && d[a] <= 0.0))
}
