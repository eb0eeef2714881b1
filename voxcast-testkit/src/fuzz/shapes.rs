//! Target `shapes`: a small world built by edits, shapes for a few ids from any bytes, and a
//! few rays with any bits. A shape the table refuses leaves it as it was and gets a clear
//! error; for every accepted ray and origin policy, `voxel_raycast_with` equals
//! [`oracle`] (under `Report`) and gives the same bits with and without empty-space skipping,
//! and line of sight (plain and conservative) never panics and never sees past a raycast's
//! hit. In worlds of single voxels, a box cast from each ray (half extents from its offset's
//! bits) is judged by the box casts' oracle over every box of every voxel.

use arbitrary::Arbitrary;
use voxcast::{
    BlockShape, BoxCast, LineOfSightOptions, OriginPolicy, RaycastOptions, RaycastOutcome,
    ShapeBox, VoxelId, VoxelRay, VoxelTraversal, VoxelWorld, WorldPos, box_cast, line_of_sight,
};

use crate::boxes::{contacts_in_shapes, judge, shape_boxes};

use super::input::{AnchorIn, ORIGIN_POLICIES};
use super::model::{Edit, Model, build};
use super::oracle::{end_distance, identical, skipping_equals_stepping};
use super::raycast::RayIn;

/// Most edits, shapes and rays one input uses.
const EDITS: usize = 24;
const SHAPES: usize = 6;
const RAYS: usize = 4;

/// A shape as a user may write it: any id, and for boxes any bounds.
#[derive(Arbitrary, Debug)]
pub enum ShapeIn {
    /// `BlockShape::Cube`.
    Cube(u8),
    /// `BlockShape::Empty`.
    Empty(u8),
    /// Boxes from raw bounds (sixteenths; may be outside the voxel, inverted, flat, too many).
    Boxes(u8, Vec<([u8; 3], [u8; 3])>),
}

/// One input of the target.
#[derive(Arbitrary, Debug)]
pub struct Input {
    /// Where the world is built.
    pub anchor: [AnchorIn; 3],
    /// How it is built.
    pub edits: Vec<Edit>,
    /// The shapes, set in order.
    pub shapes: Vec<ShapeIn>,
    /// The rays.
    pub rays: Vec<RayIn>,
}

/// The target: decodes `data` and checks every answer; panics on a wrong one.
pub fn run(data: &[u8]) {
    super::input::decode_and_check(data, check);
}

/// Sets the shapes of `input` (small ids, where the edits put their voxels) and checks that a
/// refused one changes nothing.
fn set_shapes(world: &mut VoxelWorld, shapes: &[ShapeIn]) -> Result<(), String> {
    for s in shapes.iter().take(SHAPES) {
        let (id, shape) = match s {
            ShapeIn::Cube(id) => (id, Ok(BlockShape::Cube)),
            ShapeIn::Empty(id) => (id, Ok(BlockShape::Empty)),
            ShapeIn::Boxes(id, b) => (
                id,
                b.iter()
                    .map(|&(lo, hi)| ShapeBox::new(lo, hi))
                    .collect::<Result<Vec<_>, _>>()
                    .map(BlockShape::Boxes),
            ),
        };
        let id = VoxelId(u16::from(id % 8));
        let Ok(shape) = shape else { continue };
        let before = world.shapes().clone();
        match world.set_shape(id, &shape) {
            Ok(()) if world.shape(id) != shape => {
                return Err(format!(
                    "set {shape:?} on {id:?}, got {:?}",
                    world.shape(id)
                ));
            }
            Ok(()) => {}
            Err(e) => {
                if e.to_string().is_empty() || world.shapes() != &before {
                    return Err(format!("refused {shape:?} ({e}) but the table changed"));
                }
            }
        }
    }
    Ok(())
}

/// Checks every cast of `input`.
///
/// # Errors
/// What was wrong, with the ray and options.
pub fn check(input: &Input) -> Result<(), String> {
    let anchor = WorldPos::from_array(input.anchor.map(AnchorIn::get));
    let edits = &input.edits[..input.edits.len().min(EDITS)];
    let (mut world, model) = build(anchor, edits)?;
    set_shapes(&mut world, &input.shapes)?;
    let solids = single_voxels(&model);
    for ray_in in input.rays.iter().take(RAYS) {
        let raw = ray_in.get(anchor);
        let Ok(ray) = VoxelRay::new(raw.origin, raw.sub_offset, raw.direction, raw.max_distance)
        else {
            continue;
        };
        // Long rays through unloaded space walk far: the oracle follows at most this many
        // voxels.
        if VoxelTraversal::new(&ray).nth(4096).is_some() {
            continue;
        }
        check_ray(&world, &ray).map_err(|why| format!("{why}\n  ray {ray:?}"))?;
        if let Some(solids) = &solids {
            check_box_cast(&world, &ray, solids)?;
        }
    }
    Ok(())
}

/// The stopping voxels of `model`, where no chunk is filled whole (the box oracle visits every
/// one).
fn single_voxels(model: &Model) -> Option<Vec<(WorldPos, VoxelId)>> {
    let mut out = Vec::new();
    for c in model.chunks.values() {
        if !c.fill.is_air() {
            return None;
        }
        out.extend(
            c.voxels
                .iter()
                .filter(|(_, id)| !id.is_air())
                .map(|(&p, &id)| (p, id)),
        );
    }
    out.sort();
    Some(out)
}

/// A box cast from `ray`'s start along it, judged by the oracle under `Report` and
/// `SkipOriginVoxel`.
fn check_box_cast(
    world: &VoxelWorld,
    ray: &VoxelRay,
    solids: &[(WorldPos, VoxelId)],
) -> Result<(), String> {
    let half = ray
        .sub_offset
        .map(|v| [0.0, 0.25, 0.5, 0.3][(v.to_bits() % 4) as usize]);
    let Ok(cast) = BoxCast::new(
        ray.origin,
        ray.sub_offset,
        half,
        ray.direction,
        ray.max_distance.min(64.0),
    ) else {
        return Ok(());
    };
    let shape = |id: VoxelId| shape_boxes(world, id);
    let contacts = contacts_in_shapes(&cast, solids, &shape);
    for origin in [OriginPolicy::Report, OriginPolicy::SkipOriginVoxel] {
        let opts = RaycastOptions {
            origin,
            ..RaycastOptions::default()
        };
        let got = box_cast(&cast, world, &opts);
        judge(&cast, &got, &contacts, origin)
            .map_err(|e| format!("box cast {cast:?} under {origin:?}: {got:?}: {e}"))?;
    }
    Ok(())
}

fn check_ray(world: &VoxelWorld, ray: &VoxelRay) -> Result<(), String> {
    let want = oracle(ray, world);
    for origin in ORIGIN_POLICIES {
        let opts = RaycastOptions {
            origin,
            ..RaycastOptions::default()
        };
        let o = skipping_equals_stepping(ray, world, &opts)
            .map_err(|why| format!("{origin:?}: {why}"))?;
        if origin == voxcast::OriginPolicy::Report {
            let got = o.hit().map(|h| {
                (
                    h.voxel_pos,
                    h.face_normal,
                    h.distance.to_bits(),
                    h.voxel_type,
                )
            });
            let want = want.map(|(v, n, t, id)| (v, n, t.to_bits(), id));
            if got != want {
                return Err(format!("{o:?}, the oracle over boxes {want:?}"));
            }
        }
        for conservative in [false, true] {
            let sight = RaycastOutcome::from(line_of_sight(
                ray,
                world,
                &LineOfSightOptions {
                    raycast: opts.clone(),
                    conservative,
                },
            ));
            if !conservative && !identical(&sight, &o) {
                return Err(format!(
                    "{origin:?}: line of sight {sight:?}, raycast {o:?}"
                ));
            }
            if let Some(t) = end_distance(&o)
                && end_distance(&sight).is_none_or(|c| c > t)
            {
                return Err(format!(
                    "{origin:?}: conservative {sight:?} sees past {o:?}"
                ));
            }
        }
    }
    Ok(())
}

/// The oracle over boxes (the crate docs' "Shapes" rule, written again): the first box met
/// along the voxels the ray visits, in order ([`VoxelTraversal`]), each voxel's crossing
/// counts derived from its position, every box of its shape intersected; under the default
/// options (every non-air id stops, `Report`, unloaded space is air). Returns the voxel, the
/// normal, the distance and the id.
#[must_use]
pub fn oracle(
    r: &VoxelRay,
    w: &VoxelWorld,
) -> Option<(WorldPos, voxcast::glam::IVec3, f32, VoxelId)> {
    use voxcast::glam::IVec3;
    let mut start = [0i128; 3];
    let mut step = [1i128; 3];
    let mut b = [0.0f32; 3];
    let mut inv = [0.0f32; 3];
    for a in 0..3 {
        let (o, s, d) = (r.origin.axis(a), r.sub_offset[a], r.direction[a]);
        step[a] = if d < 0.0 { -1 } else { 1 };
        // A ray that starts on the i128 world's outer face moving out meets nothing.
        start[a] = o.checked_sub(i128::from(d < 0.0 && s == 0.0))?;
        b[a] = if d < 0.0 {
            if s == 0.0 { 1.0 } else { s }
        } else {
            1.0 - s
        };
        inv[a] = if d == 0.0 { 0.0 } else { 1.0 / d.abs() };
    }
    for visit in VoxelTraversal::new(r) {
        let Some(id) = w.get_voxel(&visit.voxel).filter(|id| !id.is_air()) else {
            continue;
        };
        let list = match w.shape(id) {
            BlockShape::Cube => {
                return Some((visit.voxel, visit.entry_face, visit.t_enter, id));
            }
            BlockShape::Empty => continue,
            BlockShape::Boxes(list) => list,
        };
        let mut best: Option<(f32, IVec3)> = None;
        'boxes: for bx in list {
            let (mut t_in, mut n_in, mut t_out) = (f32::MIN, IVec3::ZERO, f32::MAX);
            for a in 0..3 {
                let (lo, hi) = (f32::from(bx.min()[a]), f32::from(bx.max()[a]));
                if inv[a] == 0.0 {
                    // The offset from the high face, `b`, in sixteenths.
                    let b16 = b[a] * 16.0;
                    if !(16.0 - hi < b16 && b16 <= 16.0 - lo) {
                        continue 'boxes;
                    }
                    continue;
                }
                let m = (visit.voxel.axis(a) - start[a]) * step[a];
                let (near, far) = if step[a] > 0 {
                    (lo, hi)
                } else {
                    (16.0 - hi, 16.0 - lo)
                };
                let plane = |k: f32| (b[a] + ((m as f32 - 1.0) * 16.0 + k) / 16.0) * inv[a];
                if plane(near) >= t_in {
                    t_in = plane(near);
                    n_in = IVec3::ZERO;
                    n_in[a] = -step[a] as i32;
                }
                t_out = t_out.min(plane(far));
            }
            if t_in <= t_out && t_out > 0.0 {
                let (t, n) = if t_in > 0.0 {
                    (t_in, n_in)
                } else {
                    (0.0, IVec3::ZERO)
                };
                if t <= r.max_distance && best.is_none_or(|(bt, _)| t < bt) {
                    best = Some((t, n));
                }
            }
        }
        if let Some((t, n)) = best {
            return Some((visit.voxel, n, t, id));
        }
    }
    None
}
