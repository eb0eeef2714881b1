//! A model of a voxel world that the oracle reads instead of the `VoxelWorld` under test: per
//! loaded chunk, the id it was filled with and the voxels set to another id. Edits decoded from
//! the fuzz input go to both, so that the model is the truth the world is checked against.

use rustc_hash::FxHashMap as HashMap;

use arbitrary::Arbitrary;

use super::input::IdIn;
use voxcast::{Chunk, ChunkPos, LocalPos, VoxelId, VoxelWorld, WorldError, WorldPos};

/// One loaded chunk of the model.
#[derive(Clone, Debug, Default)]
pub struct ModelChunk {
    /// The id of every voxel not in `voxels`.
    pub fill: VoxelId,
    /// The voxels whose id is not `fill`.
    pub voxels: HashMap<WorldPos, VoxelId>,
}

/// The loaded chunks of a world, kept as simply as possible.
#[derive(Clone, Debug, Default)]
pub struct Model {
    /// Every loaded chunk.
    pub chunks: HashMap<ChunkPos, ModelChunk>,
    /// Chunks changed since tracking started or the list was last taken (see
    /// `VoxelWorld::take_changed_chunks`), while `tracking`.
    pub changed: std::collections::BTreeSet<ChunkPos>,
    /// Whether changes are tracked.
    pub tracking: bool,
}

impl Model {
    /// The id at `p`, `None` where its chunk is not loaded.
    #[must_use]
    pub fn get(&self, p: WorldPos) -> Option<VoxelId> {
        let c = self.chunks.get(&p.chunk())?;
        Some(c.voxels.get(&p).copied().unwrap_or(c.fill))
    }

    /// Sets voxel `p` (loading its chunk, all air, first) and returns the id it had.
    pub fn set_voxel(&mut self, p: WorldPos, id: VoxelId) -> VoxelId {
        let created = !self.chunks.contains_key(&p.chunk());
        let c = self.chunks.entry(p.chunk()).or_default();
        let old = c.voxels.get(&p).copied().unwrap_or(c.fill);
        if id == c.fill {
            c.voxels.remove(&p);
        } else {
            c.voxels.insert(p, id);
        }
        if (created || old != id) && self.tracking {
            self.changed.insert(p.chunk());
        }
        old
    }

    /// Loads chunk `pos`, replacing what was there.
    pub fn insert_chunk(&mut self, pos: ChunkPos, chunk: ModelChunk) {
        self.chunks.insert(pos, chunk);
        if self.tracking {
            self.changed.insert(pos);
        }
    }

    /// Unloads chunk `pos`; whether it was loaded.
    pub fn remove_chunk(&mut self, pos: ChunkPos) -> bool {
        let was = self.chunks.remove(&pos).is_some();
        if was && self.tracking {
            self.changed.insert(pos);
        }
        was
    }

    /// Whether chunk `pos` holds a voxel that is not air.
    #[must_use]
    pub fn occupied(&self, pos: ChunkPos) -> bool {
        self.chunks.get(&pos).is_some_and(|c| {
            !c.fill.is_air() && c.voxels.len() < voxcast::CHUNK_VOLUME
                || c.voxels.values().any(|id| !id.is_air())
        })
    }

    /// Number of non-air voxels in chunk `pos` (0 when not loaded).
    #[must_use]
    pub fn non_air(&self, pos: ChunkPos) -> u32 {
        self.chunks.get(&pos).map_or(0, |c| {
            let overrides = c.voxels.values().filter(|id| !id.is_air()).count() as u32;
            if c.fill.is_air() {
                overrides
            } else {
                voxcast::CHUNK_VOLUME as u32 - c.voxels.len() as u32 + overrides
            }
        })
    }

    /// The inclusive range covering the chunks that `keep` selects.
    #[must_use]
    pub fn chunk_range(&self, keep: impl Fn(ChunkPos) -> bool) -> Option<(ChunkPos, ChunkPos)> {
        let mut range: Option<(ChunkPos, ChunkPos)> = None;
        for &p in self.chunks.keys().filter(|&&p| keep(p)) {
            range = Some(match range {
                None => (p, p),
                Some((lo, hi)) => (
                    ChunkPos::new(lo.x.min(p.x), lo.y.min(p.y), lo.z.min(p.z)),
                    ChunkPos::new(hi.x.max(p.x), hi.y.max(p.y), hi.z.max(p.z)),
                ),
            });
        }
        range
    }
}

/// One edit of a world near its anchor.
#[derive(Arbitrary, Debug, Clone)]
pub enum Edit {
    /// `set_voxel(anchor + at, id)`.
    Set([i8; 3], IdIn),
    /// A box of up to `4×4×4` voxels set to one id: walls, stacks and holes in few bytes.
    Block([i8; 3], [u8; 3], IdIn),
    /// `insert_chunk` of a chunk filled with one id, near the anchor's chunk.
    Fill([i8; 3], IdIn),
    /// `insert_chunk` of a chunk filled with one id and then edited voxel by voxel (as
    /// `Chunk::set` does, before it is inserted).
    Dense([i8; 3], IdIn, Vec<([u8; 3], IdIn)>),
    /// `remove_chunk` near the anchor's chunk.
    Remove([i8; 3]),
}

/// The chunk `anchor.chunk() + off` (each offset taken into `-3..=3`), `None` where it leaves
/// i128.
fn chunk_near(anchor: WorldPos, off: [i8; 3]) -> Option<ChunkPos> {
    let c = anchor.chunk();
    let v: [Option<i128>; 3] =
        std::array::from_fn(|a| c.axis(a).checked_add(i128::from(off[a] % 4)));
    Some(ChunkPos::new(v[0]?, v[1]?, v[2]?))
}

/// Most voxels one `Dense` edit sets, so that a model stays small for the oracle.
const DENSE_VOXELS: usize = 48;

/// Applies `edit` to `world` and `model` alike (ids as `ids` makes them), checking what the world returns against the
/// model. `Err` names the disagreement.
///
/// # Errors
/// A description of the first answer of `world` that the model contradicts.
pub fn apply(
    world: &mut VoxelWorld,
    model: &mut Model,
    anchor: WorldPos,
    edit: &Edit,
    ids: fn(IdIn) -> VoxelId,
) -> Result<(), String> {
    let near = |off: [i8; 3]| super::input::near(anchor, off.map(i32::from));
    match edit {
        Edit::Set(at, id) => {
            let p = near(*at);
            let (old, want) = (world.set_voxel(p, ids(*id)), model.set_voxel(p, ids(*id)));
            if old != want {
                return Err(format!("set_voxel({p:?}) returned {old:?}, model {want:?}"));
            }
        }
        Edit::Block(at, size, id) => {
            let base = near(*at);
            for dz in 0..i32::from(size[2] % 4) + 1 {
                for dy in 0..i32::from(size[1] % 4) + 1 {
                    for dx in 0..i32::from(size[0] % 4) + 1 {
                        let p = super::input::near(base, [dx, dy, dz]);
                        let (old, want) =
                            (world.set_voxel(p, ids(*id)), model.set_voxel(p, ids(*id)));
                        if old != want {
                            return Err(format!(
                                "set_voxel({p:?}) returned {old:?}, model {want:?}"
                            ));
                        }
                    }
                }
            }
        }
        Edit::Fill(off, id) => {
            if let Some(pos) = chunk_near(anchor, *off) {
                let chunk = ModelChunk {
                    fill: ids(*id),
                    voxels: HashMap::default(),
                };
                insert(world, model, pos, Chunk::filled(ids(*id)), chunk)?;
            }
        }
        Edit::Dense(off, fill, voxels) => {
            if let Some(pos) = chunk_near(anchor, *off) {
                let mut chunk = Chunk::filled(ids(*fill));
                let mut m = ModelChunk {
                    fill: ids(*fill),
                    voxels: HashMap::default(),
                };
                for (l, id) in voxels.iter().take(DENSE_VOXELS) {
                    let local = LocalPos::new(l[0], l[1], l[2]);
                    let old = chunk.set(local, ids(*id));
                    let p = pos.world(local);
                    let want = m.voxels.get(&p).copied().unwrap_or(m.fill);
                    if old != want {
                        return Err(format!(
                            "Chunk::set({local:?}) returned {old:?}, model {want:?}"
                        ));
                    }
                    if ids(*id) == m.fill {
                        m.voxels.remove(&p);
                    } else {
                        m.voxels.insert(p, ids(*id));
                    }
                }
                insert(world, model, pos, chunk, m)?;
            }
        }
        Edit::Remove(off) => {
            if let Some(pos) = chunk_near(anchor, *off) {
                let removed = world.remove_chunk(pos).is_some();
                if removed != model.remove_chunk(pos) {
                    return Err(format!("remove_chunk({pos:?}) removed: {removed}"));
                }
            }
        }
    }
    Ok(())
}

/// `insert_chunk` on both; a chunk outside the i128 world must be refused and change nothing.
fn insert(
    world: &mut VoxelWorld,
    model: &mut Model,
    pos: ChunkPos,
    chunk: Chunk,
    m: ModelChunk,
) -> Result<(), String> {
    let count = world.chunk_count();
    match world.insert_chunk(pos, chunk) {
        Ok(old) => {
            if !pos.is_in_world() {
                return Err(format!(
                    "insert_chunk({pos:?}) outside the world was accepted"
                ));
            }
            if old.is_some() != model.chunks.contains_key(&pos) {
                return Err(format!("insert_chunk({pos:?}) replaced: {}", old.is_some()));
            }
            model.insert_chunk(pos, m);
        }
        Err(WorldError::ChunkOutsideWorld(p)) => {
            if pos.is_in_world() || p != pos || world.chunk_count() != count {
                return Err(format!(
                    "insert_chunk({pos:?}) refused as outside the world ({p:?})"
                ));
            }
        }
        Err(e) => return Err(format!("insert_chunk({pos:?}): {e}")),
    }
    Ok(())
}

/// Builds a world (and its model) from `edits` at `anchor`, with ids among the first 64
/// ([`IdIn::material`]).
///
/// # Errors
/// As [`apply`].
pub fn build(anchor: WorldPos, edits: &[Edit]) -> Result<(VoxelWorld, Model), String> {
    let mut world = VoxelWorld::new();
    let mut model = Model::default();
    for e in edits {
        apply(&mut world, &mut model, anchor, e, IdIn::material)?;
    }
    Ok((world, model))
}
