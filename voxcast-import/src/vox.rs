//! MagicaVoxel models and scenes (`.vox`) into a [`VoxelWorld`].
//!
//! MagicaVoxel is z-up; voxcast's worlds are y-up by convention. Voxel `(x, y, z)` of the
//! scene becomes voxel `offset + (x, z, -y - 1)` (a rotation about the x axis: right-handed
//! both, and the voxel that covered `[y, y + 1)` covers `(-y - 1, -y]` after it). Palette index
//! `i` (0-based, as `dot_vox` gives it) becomes id `i + 1`, so that id 0 stays air.
//!
//! The scene graph places each model: a transform node's translation (`_t`) and rotation (`_r`,
//! a signed permutation of the axes) apply to its subtree, as MagicaVoxel applies them. A model
//! of size `s` has its centre at the translation: its voxel `v` lands on voxel
//! `T + floor(R · (2v + 1 - s) / 2)`, per axis. A file without a scene graph places every
//! model with its low corner at the origin.
//!
//! Limits: the scene graph is followed at most [`MAX_DEPTH`] nodes deep and through at most
//! [`MAX_VISITS`] nodes, and it may place at most [`MAX_VOXELS`] voxels in all (instances of
//! one model count once each).

use std::collections::HashMap;

use dot_vox::{DotVoxData, SceneNode};
use voxcast::{ChunkPos, VoxelId, VoxelWorld, WorldPos};

use crate::{ImportError, assemble};

/// The deepest the scene graph is followed.
pub const MAX_DEPTH: usize = 64;
/// The most voxels a scene may place, instances included.
pub const MAX_VOXELS: usize = 1 << 28;
/// The most scene-graph nodes visited (a node reached twice counts twice).
pub const MAX_VISITS: usize = 1 << 20;

/// A `.vox` file's bytes into a world, voxel `(x, y, z)` of the scene at
/// `offset + (x, z, -y - 1)`.
///
/// # Errors
/// [`ImportError::Corrupt`] for bytes `dot_vox` cannot read or a scene graph that names
/// nodes or models it does not have, or holds a rotation that is no signed permutation;
/// [`ImportError::TooLarge`] past [`MAX_DEPTH`], [`MAX_VISITS`] or [`MAX_VOXELS`];
/// [`ImportError::OutsideWorld`] when the offset puts a voxel outside the i128 world.
pub fn model(bytes: &[u8], offset: WorldPos) -> Result<VoxelWorld, ImportError> {
    let data = dot_vox::load_bytes(bytes).map_err(|e| ImportError::Corrupt(e.to_owned()))?;
    let placed = place(&data)?;
    build_world(&data, &placed, offset)
}

/// A placement of one model: rotation (rows, signed permutation) and translation.
#[derive(Clone, Copy)]
struct Placement {
    rotation: [[i64; 3]; 3],
    translation: [i64; 3],
}

const IDENTITY: Placement = Placement {
    rotation: [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
    translation: [0; 3],
};

impl Placement {
    /// `self` applied after `inner` (the parent's transform around the child's).
    fn then(&self, inner: &Placement) -> Placement {
        let mut rotation = [[0; 3]; 3];
        let mut translation = self.translation;
        for (r, row) in rotation.iter_mut().enumerate() {
            for (c, v) in row.iter_mut().enumerate() {
                *v = (0..3)
                    .map(|k| self.rotation[r][k] * inner.rotation[k][c])
                    .sum();
            }
            translation[r] += (0..3)
                .map(|k| self.rotation[r][k] * inner.translation[k])
                .sum::<i64>();
        }
        Placement {
            rotation,
            translation,
        }
    }
}

/// Every model instance of the scene: model index and placement.
fn place(data: &DotVoxData) -> Result<Vec<(usize, Placement)>, ImportError> {
    let mut out = Vec::new();
    if data.scenes.is_empty() {
        // No scene graph: each model at the origin, its low corner there.
        for (m, model) in data.models.iter().enumerate() {
            let s = [model.size.x, model.size.y, model.size.z].map(i64::from);
            // Undo the centring `voxel_at` applies, so voxel v lands on v.
            let translation = s.map(|c| c.div_euclid(2));
            out.push((
                m,
                Placement {
                    translation,
                    ..IDENTITY
                },
            ));
        }
        return Ok(out);
    }
    let mut budget = Budget::default();
    walk(data, 0, IDENTITY, 0, &mut out, &mut budget)?;
    Ok(out)
}

/// What a walk of the scene graph has spent of its limits.
#[derive(Default)]
struct Budget {
    visits: usize,
    voxels: usize,
}

/// Places the models under `node`, which sits at `at`.
fn walk(
    data: &DotVoxData,
    node: u32,
    at: Placement,
    depth: usize,
    out: &mut Vec<(usize, Placement)>,
    budget: &mut Budget,
) -> Result<(), ImportError> {
    budget.visits += 1;
    if budget.visits > MAX_VISITS {
        return Err(ImportError::TooLarge(format!(
            "a scene graph of more than {MAX_VISITS} node visits"
        )));
    }
    if depth > MAX_DEPTH {
        return Err(ImportError::TooLarge(format!(
            "a scene graph deeper than {MAX_DEPTH} nodes"
        )));
    }
    let n = data
        .scenes
        .get(node as usize)
        .ok_or_else(|| ImportError::Corrupt(format!("the scene graph names node {node}")))?;
    match n {
        SceneNode::Transform { frames, child, .. } => {
            let local = frames.first().map_or(Ok(IDENTITY), frame_placement)?;
            walk(data, *child, at.then(&local), depth + 1, out, budget)
        }
        SceneNode::Group { children, .. } => {
            for &c in children {
                walk(data, c, at, depth + 1, out, budget)?;
            }
            Ok(())
        }
        SceneNode::Shape { models, .. } => {
            for m in models {
                let model = data.models.get(m.model_id as usize).ok_or_else(|| {
                    ImportError::Corrupt(format!("the scene names model {}", m.model_id))
                })?;
                budget.voxels += model.voxels.len();
                if budget.voxels > MAX_VOXELS {
                    return Err(ImportError::TooLarge(format!(
                        "a scene placing more than {MAX_VOXELS} voxels"
                    )));
                }
                out.push((m.model_id as usize, at));
            }
            Ok(())
        }
    }
}

/// A transform frame's translation (`_t`, "x y z") and rotation (`_r`, a byte: bits 0-1 the
/// column of row 0's non-zero entry, bits 2-3 row 1's, bits 4-6 the signs of rows 0-2).
fn frame_placement(frame: &dot_vox::Frame) -> Result<Placement, ImportError> {
    let mut p = IDENTITY;
    if let Some(t) = frame.attributes.get("_t") {
        let parts: Vec<i64> = t
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .map_err(|_| ImportError::Corrupt(format!("translation {t:?}")))?;
        let [x, y, z] = parts[..] else {
            return Err(ImportError::Corrupt(format!("translation {t:?}")));
        };
        p.translation = [x, y, z];
    }
    if let Some(r) = frame.attributes.get("_r") {
        let byte: u8 = r
            .trim()
            .parse()
            .map_err(|_| ImportError::Corrupt(format!("rotation {r:?}")))?;
        let (c0, c1) = (usize::from(byte & 3), usize::from(byte >> 2 & 3));
        if c0 > 2 || c1 > 2 || c0 == c1 {
            return Err(ImportError::Corrupt(format!(
                "rotation {byte} is no permutation"
            )));
        }
        let c2 = 3 - c0 - c1;
        let sign = |bit: u8| if byte >> bit & 1 == 1 { -1 } else { 1 };
        p.rotation = [[0; 3]; 3];
        p.rotation[0][c0] = sign(4);
        p.rotation[1][c1] = sign(5);
        p.rotation[2][c2] = sign(6);
    }
    Ok(p)
}

/// The world of the placed models, scene voxel `(x, y, z)` at `offset + (x, z, -y - 1)`; where
/// models overlap, the later one's voxel wins.
fn build_world(
    data: &DotVoxData,
    placed: &[(usize, Placement)],
    offset: WorldPos,
) -> Result<VoxelWorld, ImportError> {
    let mut chunks: HashMap<ChunkPos, Vec<(usize, VoxelId)>> = HashMap::new();
    for &(m, p) in placed {
        let model = &data.models[m];
        let size = [model.size.x, model.size.y, model.size.z].map(i64::from);
        for v in &model.voxels {
            let c2 = [
                2 * i64::from(v.x) + 1 - size[0],
                2 * i64::from(v.y) + 1 - size[1],
                2 * i64::from(v.z) + 1 - size[2],
            ];
            let scene: [i64; 3] = std::array::from_fn(|r| {
                p.translation[r]
                    + (0..3)
                        .map(|k| p.rotation[r][k] * c2[k])
                        .sum::<i64>()
                        .div_euclid(2)
            });
            let at = assemble::offset(
                offset,
                [
                    i128::from(scene[0]),
                    i128::from(scene[2]),
                    -i128::from(scene[1]) - 1,
                ],
            )?;
            chunks
                .entry(at.chunk())
                .or_default()
                .push((at.local().index(), VoxelId(u16::from(v.i) + 1)));
        }
    }
    let positions: Vec<ChunkPos> = chunks.keys().copied().collect();
    assemble::world(positions, |pos, ids| {
        for &(i, id) in &chunks[&pos] {
            ids[i] = id;
        }
    })
}
