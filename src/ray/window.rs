//! Rays and answers in coordinates relative to an origin voxel: the compact form for callers
//! that keep positions near a point of their own (a GPU world's window, a player's region).

use glam::{DVec3, IVec3, Vec2, Vec3};

use crate::coords::WorldPos;
use crate::ray::outcome::{LineOfSight, RaycastOutcome, VoxelRaycastHit};
use crate::ray::{RayError, VoxelRay};
use crate::world::VoxelId;

/// A ray whose origin voxel is given relative to an origin voxel `O` (for a GPU world, its
/// window's first voxel, [`GpuWorld::window_origin`](crate::gpu::GpuWorld::window_origin)):
/// 40 bytes instead of [`VoxelRay`]'s 80, with no i128 arithmetic to prepare it.
///
/// It stands for the [`VoxelRay`] [`WindowRay::to_voxel_ray`]`(O)` and every cast answers
/// exactly what that ray answers, as a [`WindowOutcome`] relative to the same `O`
/// ([`WindowOutcome::from_outcome`]: an answer more than `i32` voxels from `O` cannot be
/// given that way and is [`WindowOutcome::Invalid`]). Its fields
/// are read as [`VoxelRay`]'s: a direction within `1e-5` of unit length is used as given, a
/// `sub_offset` outside `[0, 1)` moves whole voxels into `voxel`, and bad values make the ray
/// [`WindowOutcome::Invalid`].
///
/// # Example
/// ```
/// use voxcast::glam::{DVec3, IVec3, Vec3};
/// use voxcast::{RaycastOptions, VoxelId, VoxelWorld, WindowRay, WorldPos};
/// let origin = WorldPos::new(1 << 100, 0, 0);
/// let mut world = VoxelWorld::new();
/// world.set_voxel(origin.checked_add([5, 0, 0]).unwrap(), VoxelId(1));
/// // A position kept relative to `origin`, in f64 voxels.
/// let ray = WindowRay::from_point(DVec3::new(0.5, 0.5, 0.5), Vec3::X, 10.0)?;
/// let mut out = Vec::new();
/// let opts = RaycastOptions::default();
/// voxcast::raycast_window_batch_into(&[ray], origin, &world, &opts, &mut out);
/// let hit = out[0].hit().expect("hit");
/// assert_eq!((hit.voxel_pos, hit.distance), (IVec3::new(5, 0, 0), 4.5));
/// # Ok::<(), voxcast::RayError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindowRay {
    /// The voxel holding the start point, relative to `O`.
    pub voxel: IVec3,
    /// Start point inside `voxel`, each component in `[0, 1)` voxels.
    pub sub_offset: Vec3,
    /// Unit direction (see [`VoxelRay::direction`]).
    pub direction: Vec3,
    /// Search distance in voxels (see [`VoxelRay::max_distance`]).
    pub max_distance: f32,
}

impl WindowRay {
    /// `ray` relative to origin voxel `origin`, its fields copied as they are; `None` where its
    /// origin lies more than `i32` voxels from `origin` on an axis.
    #[must_use]
    pub fn from_voxel_ray(ray: &VoxelRay, origin: WorldPos) -> Option<Self> {
        Some(Self {
            voxel: relative(ray.origin, origin)?,
            sub_offset: ray.sub_offset,
            direction: ray.direction,
            max_distance: ray.max_distance,
        })
    }

    /// [`VoxelRay::from_point`] for a point in f64 voxel coordinates relative to the origin
    /// voxel (for a GPU world, a position kept relative to its window's origin): the same
    /// ray, relative to the origin.
    ///
    /// # Errors
    /// Those of [`VoxelRay::from_point`]; [`RayError::OriginOutOfRange`] for a point more than
    /// `i32` voxels from the origin.
    pub fn from_point(point: DVec3, direction: Vec3, max_distance: f32) -> Result<Self, RayError> {
        let ray = VoxelRay::from_point(point, direction, max_distance)?;
        Self::from_voxel_ray(&ray, WorldPos::ZERO).ok_or(RayError::OriginOutOfRange)
    }

    /// [`VoxelRay::between_points`] for two points relative to the origin voxel (see
    /// [`WindowRay::from_point`]): the segment a line-of-sight test checks.
    ///
    /// # Errors
    /// Those of [`VoxelRay::between_points`]; [`RayError::OriginOutOfRange`] for a start more
    /// than `i32` voxels from the origin.
    pub fn between_points(from: DVec3, to: DVec3) -> Result<Self, RayError> {
        let ray = VoxelRay::between_points(from, to)?;
        Self::from_voxel_ray(&ray, WorldPos::ZERO).ok_or(RayError::OriginOutOfRange)
    }

    /// The [`VoxelRay`] this ray stands for: its voxel added to `origin`, the other fields
    /// copied as they are (validated when it is cast). `None` where the voxel lies beyond the
    /// i128 world.
    #[must_use]
    pub fn to_voxel_ray(&self, origin: WorldPos) -> Option<VoxelRay> {
        Some(VoxelRay {
            origin: origin.checked_offset(self.voxel)?,
            sub_offset: self.sub_offset,
            direction: self.direction,
            max_distance: self.max_distance,
        })
    }
}

/// [`VoxelRaycastHit`] with its voxel relative to an origin voxel (see [`WindowRay`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindowHit {
    /// The voxel that was hit, relative to the origin voxel.
    pub voxel_pos: IVec3,
    /// As [`VoxelRaycastHit::face_normal`].
    pub face_normal: IVec3,
    /// As [`VoxelRaycastHit::distance`], in voxels.
    pub distance: f32,
    /// As [`VoxelRaycastHit::voxel_type`].
    pub voxel_type: VoxelId,
    /// As [`VoxelRaycastHit::hit_uv`].
    pub hit_uv: Vec2,
}

/// [`RaycastOutcome`] with its voxels relative to an origin voxel (see [`WindowRay`]). For a
/// line-of-sight query, [`WindowOutcome::Miss`] means clear ([`LineOfSight::Clear`]),
/// [`WindowOutcome::Hit`] blocked and [`WindowOutcome::Unloaded`] unknown.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WindowOutcome {
    /// As [`RaycastOutcome::Hit`].
    Hit(WindowHit),
    /// As [`RaycastOutcome::Miss`].
    Miss,
    /// As [`RaycastOutcome::Unloaded`].
    Unloaded {
        /// The first unloaded voxel on the ray, relative to the origin voxel.
        voxel_pos: IVec3,
        /// Distance to the point where the ray entered it, in voxels.
        distance: f32,
    },
    /// As [`RaycastOutcome::Invalid`]. Also [`RayError::OriginOutOfRange`] where the ray's
    /// voxel plus the origin leaves the i128 world ([`WindowRay::to_voxel_ray`]) or where the
    /// answer's voxel lies more than `i32` voxels from the origin (a far hit or unloaded voxel
    /// then reads as this error: keep rays within `i32` voxels of the origin, or cast
    /// [`VoxelRay`]s).
    Invalid(RayError),
}

impl WindowOutcome {
    /// `outcome` relative to origin voxel `origin`; [`WindowOutcome::Invalid`] with
    /// [`RayError::OriginOutOfRange`] where its voxel lies more than `i32` voxels away.
    #[inline]
    #[must_use]
    pub fn from_outcome(outcome: &RaycastOutcome, origin: WorldPos) -> Self {
        let rel = |p: WorldPos| relative(p, origin);
        let far = Self::Invalid(RayError::OriginOutOfRange);
        match *outcome {
            RaycastOutcome::Hit(h) => rel(h.voxel_pos).map_or(far, |voxel| {
                Self::Hit(WindowHit {
                    voxel_pos: voxel,
                    face_normal: h.face_normal,
                    distance: h.distance,
                    voxel_type: h.voxel_type,
                    hit_uv: h.hit_uv,
                })
            }),
            RaycastOutcome::Miss => Self::Miss,
            RaycastOutcome::Unloaded {
                voxel_pos: at,
                distance,
            } => rel(at).map_or(far, |voxel| Self::Unloaded {
                voxel_pos: voxel,
                distance,
            }),
            RaycastOutcome::Invalid(e) => Self::Invalid(e),
        }
    }

    /// The [`RaycastOutcome`] this stands for, its voxels added to `origin`; `None` where one
    /// lies beyond the i128 world.
    #[inline]
    #[must_use]
    pub fn to_outcome(&self, origin: WorldPos) -> Option<RaycastOutcome> {
        let abs = |v: IVec3| origin.checked_offset(v);
        Some(match *self {
            Self::Hit(h) => RaycastOutcome::Hit(VoxelRaycastHit {
                voxel_pos: abs(h.voxel_pos)?,
                face_normal: h.face_normal,
                distance: h.distance,
                voxel_type: h.voxel_type,
                hit_uv: h.hit_uv,
            }),
            Self::Miss => RaycastOutcome::Miss,
            Self::Unloaded {
                voxel_pos: voxel,
                distance,
            } => RaycastOutcome::Unloaded {
                voxel_pos: abs(voxel)?,
                distance,
            },
            Self::Invalid(e) => RaycastOutcome::Invalid(e),
        })
    }

    /// [`WindowOutcome::to_outcome`] as the answer of a line-of-sight query.
    #[must_use]
    pub fn to_line_of_sight(&self, origin: WorldPos) -> Option<LineOfSight> {
        self.to_outcome(origin).map(LineOfSight::from)
    }

    /// Equal under the parity contract (see [`VoxelRaycastHit::matches`]).
    #[must_use]
    pub fn matches(&self, other: &Self) -> bool {
        let origin = WorldPos::new(0, 0, 0);
        match (self.to_outcome(origin), other.to_outcome(origin)) {
            (Some(a), Some(b)) => a.matches(&b),
            _ => false,
        }
    }

    /// The hit, if the ray hit something.
    #[must_use]
    pub fn hit(&self) -> Option<&WindowHit> {
        match self {
            Self::Hit(h) => Some(h),
            _ => None,
        }
    }
}

/// `p` relative to `origin`; `None` more than `i32` voxels away on an axis.
fn relative(p: WorldPos, origin: WorldPos) -> Option<IVec3> {
    let d = p.checked_sub(origin)?.map(i32::try_from);
    Some(IVec3::new(d[0].ok()?, d[1].ok()?, d[2].ok()?))
}
