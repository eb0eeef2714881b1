//! What a cast does at its edges: the origin, material and unloaded policies and the options
//! that bundle them.

use crate::world::VoxelId;

/// What to do when the ray starts inside a voxel that stops it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OriginPolicy {
    /// Report the origin voxel as the hit, at distance 0 with a zero face normal (for example
    /// to detect suffocation). The default.
    ///
    /// The origin voxel is the voxel the ray starts in: the voxel of `origin`, except on an
    /// axis where the start point lies exactly on that voxel's low face and the ray moves down,
    /// where it is the voxel below (see the crate docs). So a ray cast straight down from a
    /// point exactly on top of a block starts in that block: under `Report` it is hit at
    /// distance 0 with a zero normal ([`VoxelRaycastHit::previous_pos`](crate::ray::VoxelRaycastHit::previous_pos) is `None`). Cast from a
    /// point above the surface (an eye) to get the top face and a place to put a block.
    #[default]
    Report,
    /// Never report the origin voxel; start testing at the next voxel (for escaping).
    SkipOriginVoxel,
    /// Pass through solid voxels until the ray has been in a non-stopping voxel, then report the
    /// next stopping voxel (for getting out of a wall).
    ExitSolid,
}

/// What unloaded chunks do to a ray.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum UnloadedPolicy {
    /// Unloaded space is air. The default.
    #[default]
    Air,
    /// The ray stops where it enters unloaded space: [`RaycastOutcome::Unloaded`](crate::ray::RaycastOutcome::Unloaded).
    Stop,
}

/// The set of voxel ids that stop a ray, as 65,536 bits. [`VoxelId::AIR`] never stops a ray.
#[derive(Clone, PartialEq, Eq)]
pub struct MaterialFilter {
    words: Box<[u32; 2048]>,
    every_non_air: bool,
}

impl std::fmt::Debug for MaterialFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count: u32 = self.words.iter().map(|w| w.count_ones()).sum();
        f.debug_struct("MaterialFilter")
            .field("blocking_ids", &count)
            .finish()
    }
}

impl Default for MaterialFilter {
    fn default() -> Self {
        Self::every_non_air()
    }
}

impl MaterialFilter {
    /// Every id except air stops the ray (the default); see
    /// [`MaterialFilter::is_every_non_air`].
    #[must_use]
    pub fn every_non_air() -> Self {
        let mut words = Box::new([u32::MAX; 2048]);
        words[0] &= !1;
        Self {
            words,
            every_non_air: true,
        }
    }

    /// No id stops the ray (useful as a start for [`MaterialFilter::with`]).
    #[must_use]
    pub fn none() -> Self {
        Self {
            words: Box::new([0; 2048]),
            every_non_air: false,
        }
    }

    /// Only the listed ids stop the ray. Air in the list is ignored.
    #[must_use]
    pub fn only(ids: &[VoxelId]) -> Self {
        ids.iter().fold(Self::none(), |f, &id| f.with(id))
    }

    /// This filter with `id` stopping the ray too (air is ignored).
    #[must_use]
    pub fn with(mut self, id: VoxelId) -> Self {
        if !id.is_air() {
            self.words[usize::from(id.0 >> 5)] |= 1 << (id.0 & 31);
        }
        self.every_non_air = self.words[0] == !1 && self.words[1..].iter().all(|&w| w == u32::MAX);
        self
    }

    /// This filter with `id` no longer stopping the ray (glass for sight, water for bullets).
    #[must_use]
    pub fn without(mut self, id: VoxelId) -> Self {
        self.words[usize::from(id.0 >> 5)] &= !(1 << (id.0 & 31));
        self.every_non_air = false;
        self
    }

    /// Whether `id` stops the ray.
    #[inline]
    #[must_use]
    pub fn contains(&self, id: VoxelId) -> bool {
        self.words[usize::from(id.0 >> 5)] & (1 << (id.0 & 31)) != 0
    }

    /// Whether this is the default set (every id but air): the DDA then decides from the
    /// occupancy bit alone.
    #[inline]
    #[must_use]
    pub fn is_every_non_air(&self) -> bool {
        self.every_non_air
    }

    /// The 65,536 bits as 2,048 little-endian words: bit `id & 31` of word `id >> 5`. This is the
    /// layout the GPU reads.
    #[must_use]
    pub fn words(&self) -> &[u32; 2048] {
        &self.words
    }
}

/// How a raycast treats the origin voxel, materials and unloaded chunks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RaycastOptions {
    /// What to do when the ray starts in a stopping voxel.
    pub origin: OriginPolicy,
    /// Which voxel ids stop the ray.
    pub blocks: MaterialFilter,
    /// Whether unloaded chunks are air or stop the ray.
    pub unloaded: UnloadedPolicy,
    /// Walk every voxel instead of skipping empty chunks and bricks in one step, and under
    /// [`UnloadedPolicy::Air`] walk on to the edge of the loaded chunks rather than stopping
    /// where the chunks that hold anything but air end. Results are identical bit for bit
    /// either way; this exists to test that claim.
    pub per_voxel: bool,
}

/// Options for line of sight: the raycast options plus the conservative corner rule.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineOfSightOptions {
    /// Origin policy, stopping materials and unloaded policy, as for a raycast.
    pub raycast: RaycastOptions,
    /// When the segment passes through a voxel edge or corner, it is blocked if any voxel
    /// touching that edge or corner stops it (no seeing through diagonal cracks). The touching
    /// voxels that the walk does not visit are tested when the segment reaches the edge, before
    /// the walk steps on, so when several voxels at that one distance stop it, the one reported
    /// can differ from the non-conservative answer (same distance, another voxel). It is the
    /// first stopping one in a fixed order of the axes stepped to reach it from the voxel before
    /// the edge (x, y, x and y, z, x and z, ...), reported at the distance of the edge's first
    /// crossing and as entered through the face of the axis the walk crosses last.
    ///
    /// "Through an edge" is decided on the DDA's f32 crossing distances (see the crate docs):
    /// two or three axes are crossed at one edge or corner when their next crossings lie
    /// within a factor of `1 + 2⁻²⁰` (about 16 ulps, one part in a million) of each other.
    /// Exact edge passes, such as segments between voxel centers or voxel corners through a
    /// lattice edge, come out of f32 arithmetic with crossings up to 3 ulps apart, so all of
    /// them are caught; a segment that passes within about a millionth of its distance of an
    /// edge counts as passing through it.
    ///
    /// A segment that lies in a voxel face plane (a direction component of zero, or a
    /// denormal, which counts as zero, with the start point on a voxel boundary on that axis)
    /// touches the voxels on both sides of the plane along its whole length; along an edge
    /// line (two such axes) those of four layers. Each layer is walked as the segment moved
    /// one voxel down on those axes would be, with the same options (so
    /// [`OriginPolicy::SkipOriginVoxel`] skips every voxel holding the start point in its
    /// layer), and the nearest answer wins; at equal distances the segment's own layer comes
    /// first, then the layers moved down on x, on y, on x and y, on z, and so on. A layer
    /// beyond the edge of the i128 world holds nothing. Under [`OriginPolicy::Report`] such a
    /// segment is therefore blocked by every voxel whose closed box it touches beyond its start
    /// point (a diagonal crack along an edge line is closed), at the distance where it first
    /// touches it; under [`OriginPolicy::ExitSolid`] each layer first leaves the solid voxels
    /// it starts in. A voxel of another layer that holds the start point is reported as the
    /// origin voxel is (distance 0, zero normal); any other hit there has its UV measured on
    /// the real segment, which lies on the voxel's high face on the moved axes (UV 1 there).
    pub conservative: bool,
}
