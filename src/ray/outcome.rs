//! What a cast returns: the hit, the outcome of a raycast and of a line-of-sight test.

use glam::{IVec3, Vec2};

use crate::coords::WorldPos;
use crate::ray::RayError;
use crate::world::VoxelId;

/// The first voxel a ray hits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VoxelRaycastHit {
    /// The voxel that was hit.
    pub voxel_pos: WorldPos,
    /// Outward normal of the face the ray entered through, one of the six unit axis vectors, or
    /// zero when the hit is the origin voxel.
    pub face_normal: IVec3,
    /// Distance from the ray's start point to the entry point, in voxels (0 for the origin voxel).
    pub distance: f32,
    /// The hit voxel's type, its [`VoxelId`]. Everywhere else the crate calls a voxel's type
    /// its id; this field keeps the name block-targeting code reads (`hit.voxel_type`).
    pub voxel_type: VoxelId,
    /// Where the ray entered the face, in `[0, 1]²`: for an x face `(y, z)`, for a y face
    /// `(x, z)`, for a z face `(x, y)`, measured from the voxel's low corner. Zero for the origin
    /// voxel.
    pub hit_uv: Vec2,
}

impl VoxelRaycastHit {
    /// The voxel in front of the hit face, where a block placed against it goes. `None` for a
    /// hit in the origin voxel (no face was crossed), for a `face_normal` that is not one of
    /// the six unit axis vectors (only a hand-built hit has one), or at the edge of the i128
    /// world.
    #[must_use]
    pub fn previous_pos(&self) -> Option<WorldPos> {
        const FACES: [IVec3; 6] = [
            IVec3::X,
            IVec3::NEG_X,
            IVec3::Y,
            IVec3::NEG_Y,
            IVec3::Z,
            IVec3::NEG_Z,
        ];
        if !FACES.contains(&self.face_normal) {
            return None;
        }
        self.voxel_pos.checked_offset(self.face_normal)
    }
}

/// Everything a raycast can answer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RaycastOutcome {
    /// The ray hit a stopping voxel.
    Hit(VoxelRaycastHit),
    /// Nothing stops the ray within its max distance (or before it leaves the occupied bounds,
    /// the chunks that hold anything but air, under [`UnloadedPolicy::Air`](crate::ray::UnloadedPolicy::Air), or the edge of the
    /// i128 world).
    Miss,
    /// Under [`UnloadedPolicy::Stop`](crate::ray::UnloadedPolicy::Stop): the ray entered unloaded space at voxel `voxel_pos`, at
    /// `distance` voxels.
    Unloaded {
        /// The first unloaded voxel on the ray.
        voxel_pos: WorldPos,
        /// Distance to the point where the ray entered it, in voxels.
        distance: f32,
    },
    /// The ray was rejected; nothing was cast.
    Invalid(RayError),
}

/// Largest UV difference the parity contract allows between two engines.
pub const UV_TOLERANCE: f32 = 1e-5;

impl VoxelRaycastHit {
    /// Equal under the parity contract: same voxel, face and id, the same distance bit for bit,
    /// and UV within [`UV_TOLERANCE`] in each component (a NaN component matches nothing).
    #[must_use]
    pub fn matches(&self, other: &Self) -> bool {
        self.voxel_pos == other.voxel_pos
            && self.face_normal == other.face_normal
            && self.voxel_type == other.voxel_type
            && self.distance.to_bits() == other.distance.to_bits()
            && self.hit_uv.abs_diff_eq(other.hit_uv, UV_TOLERANCE)
    }
}

impl RaycastOutcome {
    /// Equal under the parity contract (see [`VoxelRaycastHit::matches`]); distances of
    /// [`RaycastOutcome::Unloaded`] compare bit for bit too. This is how the GPU is checked
    /// against the CPU reference.
    #[must_use]
    pub fn matches(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Hit(a), Self::Hit(b)) => a.matches(b),
            (
                Self::Unloaded {
                    voxel_pos: a,
                    distance: da,
                },
                Self::Unloaded {
                    voxel_pos: b,
                    distance: db,
                },
            ) => a == b && da.to_bits() == db.to_bits(),
            (a, b) => a == b,
        }
    }

    /// The hit, if the ray hit something.
    #[must_use]
    pub fn hit(&self) -> Option<&VoxelRaycastHit> {
        match self {
            Self::Hit(h) => Some(h),
            _ => None,
        }
    }
}

/// The answer of a line-of-sight query.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LineOfSight {
    /// Nothing stops the segment.
    Clear,
    /// The first stopping voxel on the segment.
    Blocked(VoxelRaycastHit),
    /// Under [`UnloadedPolicy::Stop`](crate::ray::UnloadedPolicy::Stop), unloaded space lies on the segment before any blocker:
    /// whether the end can be seen is unknown until that space is loaded. As
    /// [`RaycastOutcome::Unloaded`].
    Unknown {
        /// The first unloaded voxel the segment reaches (under conservative line of sight
        /// possibly one beside it, across an edge, corner or face plane it passes): the chunk
        /// to load to know more is `voxel_pos.chunk()`.
        voxel_pos: WorldPos,
        /// Distance from the segment's start to the point where it entered `voxel_pos`, in voxels.
        distance: f32,
    },
    /// The segment was rejected.
    Invalid(RayError),
}

impl LineOfSight {
    /// Equal under the parity contract (see [`VoxelRaycastHit::matches`]); distances of
    /// [`LineOfSight::Unknown`] compare bit for bit too.
    #[must_use]
    pub fn matches(&self, other: &Self) -> bool {
        RaycastOutcome::from(*self).matches(&RaycastOutcome::from(*other))
    }
}

impl From<RaycastOutcome> for LineOfSight {
    fn from(o: RaycastOutcome) -> Self {
        match o {
            RaycastOutcome::Hit(h) => Self::Blocked(h),
            RaycastOutcome::Miss => Self::Clear,
            RaycastOutcome::Unloaded {
                voxel_pos: at,
                distance,
            } => Self::Unknown {
                voxel_pos: at,
                distance,
            },
            RaycastOutcome::Invalid(e) => Self::Invalid(e),
        }
    }
}

/// The raycast outcome a line-of-sight answer stands for: `Blocked` is a hit, `Clear` a miss,
/// `Unknown` unloaded space.
impl From<LineOfSight> for RaycastOutcome {
    fn from(l: LineOfSight) -> Self {
        match l {
            LineOfSight::Clear => Self::Miss,
            LineOfSight::Blocked(h) => Self::Hit(h),
            LineOfSight::Unknown {
                voxel_pos: at,
                distance,
            } => Self::Unloaded {
                voxel_pos: at,
                distance,
            },
            LineOfSight::Invalid(e) => Self::Invalid(e),
        }
    }
}
