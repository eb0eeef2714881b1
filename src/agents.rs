//! Agents that see: their eyes, line of sight between pairs of them on the CPU (the reference
//! of the GPU's agent visibility, `gpu::AgentPairs`), and the pairs within a
//! radius.

use glam::{DVec3, Vec3};
use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::coords::WorldPos;
use crate::cpu_ref::line_of_sight;
use crate::ray::{LineOfSight, LineOfSightOptions, RayError, VoxelRay, difference};
use crate::world::VoxelWorld;

/// An agent (an NPC, a sensor, a player): where it stands and how high its eyes are. Its eye
/// is `position + offset + (0, eye_height, 0)` ([`Agent::eye`]); line of sight between two
/// agents is the segment between their eyes ([`VoxelRay::sight_line`]), one answer for
/// either order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Agent {
    /// The voxel the agent stands in.
    pub position: WorldPos,
    /// Where in that voxel, in voxels (any finite value: whole units move into the voxel, as
    /// for a ray's sub offset).
    pub offset: Vec3,
    /// The eye's height above `position + offset`, in voxels (any finite value).
    pub eye_height: f32,
}

impl Agent {
    /// An agent at `position + offset` with eyes `eye_height` voxels above that.
    #[must_use]
    pub fn new(position: WorldPos, offset: Vec3, eye_height: f32) -> Self {
        Self {
            position,
            offset,
            eye_height,
        }
    }

    /// The eye as a voxel and the offset inside it in `[0, 1)` (denormal offsets flushed), as
    /// [`VoxelRay::new`] normalises an origin: the y offset is `offset.y + eye_height`,
    /// rounded to f32 once.
    ///
    /// # Errors
    /// [`RayError::NonFiniteSubOffset`] for a NaN or infinite offset or eye height,
    /// [`RayError::OriginOutOfRange`] for an eye outside the i128 world.
    pub fn eye(&self) -> Result<(WorldPos, Vec3), RayError> {
        let sub = Vec3::new(
            self.offset.x,
            self.offset.y + self.eye_height,
            self.offset.z,
        );
        if !self.eye_height.is_finite() || !sub.is_finite() {
            return Err(RayError::NonFiniteSubOffset);
        }
        // A ray from the eye normalises it; the direction is irrelevant.
        let r = VoxelRay::new(self.position, sub, Vec3::X, 0.0)?;
        Ok((r.origin, r.sub_offset))
    }
}

/// The segment line of sight between the eyes of agents `pair[0]` and `pair[1]` casts
/// ([`VoxelRay::sight_line`]: from the lower eye to the higher, so that the pair's answer does
/// not depend on its order; eyes at one point give a segment of length 0), or why there is
/// none: an agent's error ([`Agent::eye`]), [`RayError::NoSuchAgent`] for an index past the
/// end of `agents`, or [`RayError::MaxDistanceTooLarge`] for eyes more than
/// `MAX_DISTANCE_CAP` apart.
///
/// # Errors
/// As said above.
pub fn agent_segment(agents: &[Agent], pair: [u32; 2]) -> Result<VoxelRay, RayError> {
    let eye = |i: u32| agents.get(i as usize).ok_or(RayError::NoSuchAgent)?.eye();
    let (a, a_sub) = eye(pair[0])?;
    let (b, b_sub) = eye(pair[1])?;
    VoxelRay::sight_line(a, a_sub, b, b_sub)
}

/// Line of sight between the eyes of each pair of agents (indices into `agents`), on all
/// threads: [`line_of_sight`] of [`agent_segment`], or `LineOfSight::Invalid` with its error.
/// The CPU reference of the GPU's agent visibility: the GPU gives these answers bit for bit.
#[must_use]
pub fn agent_visibility(
    agents: &[Agent],
    pairs: &[[u32; 2]],
    world: &VoxelWorld,
    opts: &LineOfSightOptions,
) -> Vec<LineOfSight> {
    pairs
        .par_iter()
        .with_min_len(256)
        .map(|&p| match agent_segment(agents, p) {
            Ok(seg) => line_of_sight(&seg, world, opts),
            Err(e) => LineOfSight::Invalid(e),
        })
        .collect()
}

/// Every pair of agents whose eyes are at most `radius` voxels apart ([`pairs_within`]) that
/// see each other ([`agent_visibility`] is `Clear`), as index pairs `[a, b]` with `a < b`,
/// sorted. The CPU reference of the GPU's call of the same name.
#[must_use]
pub fn visible_pairs_within(
    agents: &[Agent],
    radius: f64,
    world: &VoxelWorld,
    opts: &LineOfSightOptions,
) -> Vec<[u32; 2]> {
    let pairs = pairs_within(agents, radius);
    let seen = agent_visibility(agents, &pairs, world, opts);
    pairs
        .into_iter()
        .zip(seen)
        .filter(|(_, s)| *s == LineOfSight::Clear)
        .map(|(p, _)| p)
        .collect()
}

/// Every pair of agents whose eyes are at most `radius` voxels apart, as index pairs `[a, b]`
/// with `a < b`, sorted. Distances are measured from the exact voxel difference (i128) plus
/// the offsets' difference in f64. Agents with an invalid eye ([`Agent::eye`]) are in no pair.
/// A grid of cells `radius` wide finds them: the cost grows with the agents and the pairs,
/// not with the square of the agents.
///
/// `f64::INFINITY` and `f64::MAX` mean no limit of the caller's own:
/// [`MAX_DISTANCE_CAP`](crate::MAX_DISTANCE_CAP), the longest segment line of sight casts (as
/// for a ray's max distance). A NaN or negative `radius` finds no pairs.
#[must_use]
pub fn pairs_within(agents: &[Agent], radius: f64) -> Vec<[u32; 2]> {
    let eyes: Vec<_> = agents.iter().map(Agent::eye).collect();
    pairs_among(&eyes, radius)
}

/// [`pairs_within`] of agents given by their eyes ([`Agent::eye`]).
pub(crate) fn pairs_among(
    eyes: &[Result<(WorldPos, Vec3), RayError>],
    radius: f64,
) -> Vec<[u32; 2]> {
    let radius = if radius == f64::INFINITY || radius == f64::MAX {
        f64::from(crate::ray::MAX_DISTANCE_CAP)
    } else {
        radius
    };
    if !(radius >= 0.0 && radius.is_finite()) {
        return Vec::new();
    }
    // Cells of at least `radius` voxels (a power of two): a pair lies in neighbouring cells.
    let shift = (radius.max(1.0).log2().ceil() as u32).min(100);
    let cell = |p: WorldPos| [p.x >> shift, p.y >> shift, p.z >> shift];
    let mut grid: FxHashMap<[i128; 3], Vec<u32>> = FxHashMap::default();
    for (i, e) in eyes.iter().enumerate() {
        if let Ok((p, _)) = e {
            grid.entry(cell(*p)).or_default().push(i as u32);
        }
    }
    let r2 = radius * radius;
    let mut pairs: Vec<[u32; 2]> = eyes
        .par_iter()
        .enumerate()
        .flat_map_iter(|(a, e)| {
            let mut near = Vec::new();
            if let Ok((p, sub)) = e {
                let c = cell(*p);
                for dz in -1..=1 {
                    for dy in -1..=1 {
                        for dx in -1..=1 {
                            let key = [
                                c[0].saturating_add(dx),
                                c[1].saturating_add(dy),
                                c[2].saturating_add(dz),
                            ];
                            for &b in grid.get(&key).map_or(&[][..], Vec::as_slice) {
                                if (b as usize) <= a {
                                    continue;
                                }
                                let Ok((q, q_sub)) = eyes[b as usize] else {
                                    continue;
                                };
                                let d = difference(*p, *sub, q, q_sub).unwrap_or(DVec3::INFINITY);
                                if d.length_squared() <= r2 {
                                    near.push([a as u32, b]);
                                }
                            }
                        }
                    }
                }
            }
            near
        })
        .collect();
    pairs.par_sort_unstable();
    pairs.dedup();
    pairs
}
