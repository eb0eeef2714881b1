//! MagicaVoxel models and scenes (`.vox`) into a [`VoxelWorld`].
//!
//! MagicaVoxel is z-up; voxcast's worlds are y-up by convention. Voxel `(x, y, z)` of the
//! scene becomes voxel `offset + (x, z, -y - 1)` (a rotation about the x axis: right-handed
//! both, and the voxel that covered `[y, y + 1)` covers `(-y - 1, -y]` after it). Palette index
//! `i` (0-based, as `dot_vox` gives it) becomes id `i + 1`, so that id 0 stays air (dot_vox
//! reads the file's colour indices 1-255 as 0-254, and the unused file index 0 as 0 too).
//!
//! The scene graph places each model: a transform node's translation (`_t`) and rotation (`_r`,
//! a signed permutation of the axes) apply to its subtree, as MagicaVoxel applies them. A model
//! of size `s` has its center at the translation: its voxel `v` lands on voxel
//! `T + floor(R · (2v + 1 - s) / 2)`, per axis. A file without a scene graph places every
//! model with its low corner at the origin.
//!
//! Limits, so that a file cannot make the importer allocate what its size does not justify:
//! the file's chunks must lie flat in its `MAIN` chunk (as MagicaVoxel writes them), the scene
//! graph is followed at most [`MAX_DEPTH`] nodes deep and through at most [`MAX_VISITS`] nodes,
//! and it may place at most [`max_voxels`] voxels (instances of one model count once each) in at
//! most [`max_chunks`] voxcast chunks. Translations are MagicaVoxel's i32.

use std::collections::HashMap;

use dot_vox::{DotVoxData, SceneNode};
use voxcast::{ChunkPos, VoxelId, VoxelWorld, WorldPos};

use crate::{ImportError, assemble};

/// The deepest the scene graph is followed.
pub const MAX_DEPTH: usize = 64;
/// The most scene-graph nodes visited (a node reached twice counts twice).
pub const MAX_VISITS: usize = 1 << 20;

/// The most voxels a file of `len` bytes may place, instances included: 2^20 plus 64 per byte
/// of the file (a model's voxel takes 4 bytes of it).
#[must_use]
pub const fn max_voxels(len: usize) -> usize {
    (1 << 20) + len.saturating_mul(64)
}

/// The most voxcast chunks a file of `len` bytes may fill: 256 plus one per 16 bytes of the
/// file.
#[must_use]
pub const fn max_chunks(len: usize) -> usize {
    256 + len / 16
}

/// A `.vox` file's bytes into a world, voxel `(x, y, z)` of the scene at
/// `offset + (x, z, -y - 1)`.
///
/// # Errors
/// [`ImportError::Corrupt`] for bytes that are no MagicaVoxel file (or whose chunks are
/// nested, cut short, or that `dot_vox` cannot read whole), or a scene graph that names nodes or
/// models it does not have, or holds a rotation that is no signed permutation or a translation
/// that is not three i32;
/// [`ImportError::TooLarge`] past [`MAX_DEPTH`], [`MAX_VISITS`], [`max_voxels`] or
/// [`max_chunks`];
/// [`ImportError::OutsideWorld`] when the offset puts a voxel outside the i128 world.
pub fn model(bytes: &[u8], offset: WorldPos) -> Result<VoxelWorld, ImportError> {
    let layout = check_layout(bytes)?;
    let data = dot_vox::load_bytes(bytes).map_err(|e| ImportError::Corrupt(e.to_owned()))?;
    if data.models.len() != layout.models || data.scenes.len() != layout.nodes {
        return Err(ImportError::Corrupt(format!(
            "{} of {} models and {} of {} scene nodes could be read",
            data.models.len(),
            layout.models,
            data.scenes.len(),
            layout.nodes
        )));
    }
    let placed = place(&data, max_voxels(bytes.len()))?;
    build_world(&data, &placed, offset, max_chunks(bytes.len()))
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

/// What a file's chunk layout holds: its models (`XYZI` chunks) and scene nodes.
struct Layout {
    models: usize,
    nodes: usize,
}

/// Checks the chunks of a `.vox` file before dot_vox reads them (it recurses once a level of
/// nested chunks and drops chunks it cannot read without saying so): `VOX ` and a version,
/// then a `MAIN` chunk whose children lie flat within it (none has children of its own) and
/// within the file.
fn check_layout(b: &[u8]) -> Result<Layout, ImportError> {
    let corrupt = |m: &str| ImportError::Corrupt(m.to_owned());
    if b.len() < 20 || &b[0..4] != b"VOX " {
        return Err(corrupt("not a MagicaVoxel file"));
    }
    let word = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]) as usize;
    if &b[8..12] != b"MAIN" {
        return Err(corrupt("the root chunk is not MAIN"));
    }
    let start = 20usize
        .checked_add(word(12))
        .ok_or_else(|| corrupt("a chunk too long"))?;
    let end = start
        .checked_add(word(16))
        .filter(|&e| e <= b.len())
        .ok_or_else(|| ImportError::Truncated("MAIN ends past the end".into()))?;
    let mut layout = Layout {
        models: 0,
        nodes: 0,
    };
    let mut at = start;
    while at < end {
        if end - at < 12 {
            return Err(corrupt("a chunk header cut short"));
        }
        let id = &b[at..at + 4];
        if word(at + 8) != 0 {
            return Err(corrupt("a chunk nested below MAIN"));
        }
        at = (at + 12)
            .checked_add(word(at + 4))
            .filter(|&e| e <= end)
            .ok_or_else(|| ImportError::Truncated("a chunk ends past MAIN".into()))?;
        match id {
            b"XYZI" => layout.models += 1,
            b"nTRN" | b"nGRP" | b"nSHP" => layout.nodes += 1,
            _ => {}
        }
    }
    Ok(layout)
}

/// Every model instance of the scene: model index and placement, at most `max_voxels` voxels
/// in all.
fn place(data: &DotVoxData, max_voxels: usize) -> Result<Vec<(usize, Placement)>, ImportError> {
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
    let mut budget = Budget {
        visits: 0,
        voxels: 0,
        max_voxels,
    };
    walk(data, 0, IDENTITY, 0, &mut out, &mut budget)?;
    Ok(out)
}

/// What a walk of the scene graph has spent of its limits.
struct Budget {
    visits: usize,
    voxels: usize,
    max_voxels: usize,
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
    if depth >= MAX_DEPTH {
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
                if budget.voxels > budget.max_voxels {
                    return Err(ImportError::TooLarge(format!(
                        "a scene placing more than {} voxels",
                        budget.max_voxels
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
            .map(|v| v.parse::<i32>().map(i64::from))
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
    max_chunks: usize,
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
            let chunk = at.chunk();
            if chunks.len() >= max_chunks && !chunks.contains_key(&chunk) {
                return Err(ImportError::TooLarge(format!(
                    "a scene filling more than {max_chunks} chunks"
                )));
            }
            chunks
                .entry(chunk)
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
