//! Target `edits`: sequences of edits with any ids (voxels, whole chunks, removals, blocks
//! placed against hits and broken, change tracking, shrinking), after which the world must
//! hold what a model of it holds, list the chunks the model changed, keep every summary equal
//! to a recount (`VoxelWorld::check_summaries`), and cast rays to the same voxels with and
//! without empty-space skipping.

use arbitrary::Arbitrary;
use voxcast::glam::{IVec3, Vec2};
use voxcast::{
    EditError, LocalPos, RaycastOptions, VoxelId, VoxelRay, VoxelRaycastHit, VoxelWorld, WorldPos,
    break_block, place_block,
};

use super::input::{AnchorIn, IdIn, ORIGIN_POLICIES, UNLOADED_POLICIES};
use super::model::{Edit, Model, apply};
use super::oracle::skipping_equals_stepping;
use super::raycast::RayIn;
use super::walk;

/// Most operations and full recounts one input makes.
const OPS: usize = 32;
const RECOUNTS: usize = 1;

/// One operation on the world.
#[derive(Arbitrary, Debug, Clone)]
pub enum Op {
    /// An edit with any ids.
    Edit(Edit),
    /// `set_track_changes`.
    Track(bool),
    /// `take_changed_chunks`, compared with the model's list.
    Take,
    /// `VoxelWorld::shrink_to_fit`.
    Shrink,
    /// `set_skip_empty_bricks`.
    SkipBricks(Option<bool>),
    /// `place_block` against a hand-made hit (any face normal).
    Place([i8; 3], [i8; 3], IdIn),
    /// `break_block` of a hand-made hit.
    Break([i8; 3]),
    /// A full recount of the summaries here (the first few only; one always runs at the end).
    Recount,
}

/// One input of the target.
#[derive(Arbitrary, Debug)]
pub struct Input {
    /// Where the edits happen.
    pub anchor: [AnchorIn; 3],
    /// What happens.
    pub ops: Vec<Op>,
    /// Rays cast at the end.
    pub rays: Vec<RayIn>,
}

/// The target: decodes `data` and checks the world after every operation; panics on a
/// disagreement.
pub fn run(data: &[u8]) {
    super::input::decode_and_check(data, check);
}

/// A hit at `anchor + at` with face normal `face`, as an engine might build one by hand.
/// A hit of the voxel near `anchor` through `face`, reporting the block the model holds there
/// (id 1 where it holds air or nothing, so those hits are stale).
fn hit_at(anchor: WorldPos, at: [i8; 3], face: IVec3, model: &Model) -> VoxelRaycastHit {
    let voxel_pos = super::input::near(anchor, at.map(i32::from));
    VoxelRaycastHit {
        voxel_pos,
        face_normal: face,
        distance: 1.0,
        voxel_type: model
            .get(voxel_pos)
            .filter(|id| !id.is_air())
            .unwrap_or(VoxelId(1)),
        hit_uv: Vec2::ZERO,
    }
}

/// Runs every operation of `input`, checking the world against the model after each.
///
/// # Errors
/// What the world got wrong, and after which operation.
pub fn check(input: &Input) -> Result<(), String> {
    let anchor = WorldPos::from_array(input.anchor.map(AnchorIn::get));
    let mut world = VoxelWorld::new();
    let mut model = Model::default();
    let mut recounts = 0;
    for (i, op) in input.ops.iter().take(OPS).enumerate() {
        let at = |why: String| format!("after op {i} {op:?}: {why}");
        match op {
            Op::Edit(e) => apply(&mut world, &mut model, anchor, e, IdIn::get).map_err(at)?,
            Op::Track(on) => {
                world.set_track_changes(*on);
                model.tracking = *on;
                model.changed.clear();
            }
            Op::Take => {
                let got = world.take_changed_chunks();
                let want: Vec<_> = std::mem::take(&mut model.changed).into_iter().collect();
                if got != want {
                    return Err(at(format!("changed chunks {got:?}, model {want:?}")));
                }
            }
            Op::Shrink => world.shrink_to_fit(),
            Op::SkipBricks(s) => world.set_skip_empty_bricks(*s),
            Op::Place(voxel, face, id) => {
                let hit = hit_at(
                    anchor,
                    *voxel,
                    IVec3::from_array(face.map(i32::from)),
                    &model,
                );
                let got = place_block(&mut world, &hit, id.get());
                // The model's rule: a block, against a hit voxel holding the hit's id, through
                // a face into a voxel of the world that holds air or is unloaded.
                let want = if id.get().is_air() {
                    Err(EditError::PlaceAir)
                } else if model.get(hit.voxel_pos) != Some(hit.voxel_type) {
                    Err(EditError::TargetChanged {
                        voxel: hit.voxel_pos,
                        expected: hit.voxel_type,
                        found: model.get(hit.voxel_pos),
                    })
                } else {
                    match hit.previous_pos() {
                        None => Err(EditError::NoFace(hit.voxel_pos)),
                        Some(p) => match model.get(p) {
                            Some(found) if !found.is_air() => {
                                Err(EditError::Occupied { voxel: p, found })
                            }
                            _ => Ok(p),
                        },
                    }
                };
                if let Ok(p) = want {
                    model.set_voxel(p, id.get());
                }
                if got != want {
                    return Err(at(format!("place_block gave {got:?}, model {want:?}")));
                }
            }
            Op::Break(voxel) => {
                let hit = hit_at(anchor, *voxel, IVec3::X, &model);
                let got = break_block(&mut world, &hit);
                let found = model.get(hit.voxel_pos);
                let want = if found == Some(hit.voxel_type) {
                    model.set_voxel(hit.voxel_pos, VoxelId::AIR);
                    Ok(hit.voxel_type)
                } else {
                    Err(EditError::TargetChanged {
                        voxel: hit.voxel_pos,
                        expected: hit.voxel_type,
                        found,
                    })
                };
                if got != want {
                    return Err(at(format!("break_block gave {got:?}, model {want:?}")));
                }
            }
            Op::Recount => {
                if recounts < RECOUNTS {
                    recounts += 1;
                    world.check_summaries().map_err(at)?;
                }
            }
        }
        compare(&world, &model).map_err(at)?;
    }
    world.check_summaries()?;
    for ray_in in input.rays.iter().take(2) {
        let raw = ray_in.get(anchor);
        if let Ok(ray) = VoxelRay::new(raw.origin, raw.sub_offset, raw.direction, raw.max_distance)
        {
            cast(&world, &model, &ray).map_err(|why| format!("{why}\n  ray {ray:?}"))?;
        }
    }
    Ok(())
}

/// The world's public answers against the model: chunks, voxels, counts, bounds.
fn compare(world: &VoxelWorld, model: &Model) -> Result<(), String> {
    if world.chunk_count() != model.chunks.len() {
        return Err(format!(
            "{} chunks loaded, model {}",
            world.chunk_count(),
            model.chunks.len()
        ));
    }
    if world.changed_chunk_count() != model.changed.len() {
        return Err(format!(
            "{} changed chunks, model {}",
            world.changed_chunk_count(),
            model.changed.len()
        ));
    }
    for (&pos, c) in &model.chunks {
        let Some(chunk) = world.chunk(pos) else {
            return Err(format!("chunk {pos:?} not loaded"));
        };
        if chunk.non_air_count() != model.non_air(pos) {
            return Err(format!(
                "chunk {pos:?}: {} non-air voxels, model {}",
                chunk.non_air_count(),
                model.non_air(pos)
            ));
        }
        let uniform = if c.voxels.is_empty() {
            Some(c.fill)
        } else {
            None
        };
        if chunk.uniform_id() != uniform && c.voxels.len() < voxcast::CHUNK_VOLUME {
            return Err(format!(
                "chunk {pos:?}: uniform id {:?}, model {uniform:?}",
                chunk.uniform_id()
            ));
        }
        if chunk.is_empty() != (chunk.uniform_id() == Some(VoxelId::AIR)) {
            return Err(format!("chunk {pos:?}: is_empty disagrees with uniform_id"));
        }
        for (p, &id) in &c.voxels {
            if world.get_voxel(p) != Some(id) {
                return Err(format!(
                    "voxel {p:?} holds {:?}, model {id:?}",
                    world.get_voxel(p)
                ));
            }
        }
        for l in [
            LocalPos::new(0, 0, 0),
            LocalPos::new(31, 31, 31),
            LocalPos::new(7, 8, 9),
        ] {
            let p = pos.world(l);
            let want = model.get(p);
            if world.get_voxel(&p) != want {
                return Err(format!(
                    "voxel {p:?} holds {:?}, model {want:?}",
                    world.get_voxel(&p)
                ));
            }
        }
    }
    let loaded = model.chunk_range(|_| true);
    let occupied = model.chunk_range(|p| model.occupied(p));
    if world.loaded_chunk_bounds() != loaded || world.occupied_chunk_bounds() != occupied {
        return Err(format!(
            "bounds {:?} and {:?}, model {loaded:?} and {occupied:?}",
            world.loaded_chunk_bounds(),
            world.occupied_chunk_bounds()
        ));
    }
    std::hint::black_box((world.memory_bytes(), world.skips_empty_bricks()));
    Ok(())
}

/// A ray through the edited world: the same answer with and without skipping, and the answer
/// of its own walk.
fn cast(world: &VoxelWorld, model: &Model, ray: &VoxelRay) -> Result<(), String> {
    let steps = walk::walk(ray, 512);
    for unloaded in UNLOADED_POLICIES {
        for origin in ORIGIN_POLICIES {
            let opts = RaycastOptions {
                origin,
                unloaded,
                ..RaycastOptions::default()
            };
            let o = skipping_equals_stepping(ray, world, &opts)
                .map_err(|why| format!("{origin:?} {unloaded:?}: {why}"))?;
            if let Some(want) = walk::expected(model, &steps, ray, &opts)
                && !walk::same_but_uv(&o, &want)
            {
                return Err(format!(
                    "{origin:?} {unloaded:?}: {o:?}, but the walk gives {want:?}"
                ));
            }
        }
    }
    Ok(())
}
