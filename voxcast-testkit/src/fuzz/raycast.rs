//! Target `raycast`: a small world built by edits, a few rays with any bits, and a material
//! filter. For every origin and unloaded policy: `voxel_raycast_with`, `line_of_sight` (plain
//! and conservative) and `VoxelTraversal` never panic; a rejected ray gets its error everywhere;
//! an accepted ray's answers pass the oracle, equal the answer read off the reference's own
//! walk, and are the same bit for bit with and without empty-space skipping.

use arbitrary::Arbitrary;
use voxcast::{
    LineOfSight, LineOfSightOptions, RaycastOptions, RaycastOutcome, VoxelRay, VoxelTraversal,
    VoxelWorld, WorldPos, line_of_sight, voxel_raycast_with,
};

use super::input::{AnchorIn, CoordIn, F32In, FilterIn, ORIGIN_POLICIES, UNLOADED_POLICIES, vec3};
use super::model::{Edit, Model, build};
use super::oracle::{Geometry, end_distance, identical, judge};
use super::{validate, walk};

/// Most edits and rays one input uses, so that the oracle stays cheap.
const EDITS: usize = 24;
const RAYS: usize = 4;
/// Most steps of a ray's walk that are checked and read for the expected answer.
const WALK_STEPS: usize = 1024;

/// A ray as the user may fill its fields.
#[derive(Arbitrary, Debug, Clone)]
pub struct RayIn {
    /// Origin, near the world's anchor or anywhere.
    pub origin: [CoordIn; 3],
    /// Any sub offset.
    pub sub: [F32In; 3],
    /// Any direction.
    pub dir: [F32In; 3],
    /// Any max distance.
    pub max: F32In,
}

impl RayIn {
    /// The ray, fields as given (not validated).
    #[must_use]
    pub fn get(&self, anchor: WorldPos) -> VoxelRay {
        VoxelRay {
            origin: WorldPos::from_array(std::array::from_fn(|a| {
                self.origin[a].get(anchor.axis(a))
            })),
            sub_offset: vec3(self.sub),
            direction: vec3(self.dir),
            max_distance: self.max.get(),
        }
    }
}

/// One input of the target.
#[derive(Arbitrary, Debug)]
pub struct Input {
    /// Where the world is built.
    pub anchor: [AnchorIn; 3],
    /// How it is built.
    pub edits: Vec<Edit>,
    /// Which ids stop the rays.
    pub filter: FilterIn,
    /// The rays.
    pub rays: Vec<RayIn>,
    /// `VoxelWorld::set_skip_empty_bricks` (answers must not change).
    pub skip_bricks: Option<bool>,
}

/// The target: decodes `data` and checks every answer; panics on a wrong one.
pub fn run(data: &[u8]) {
    super::input::decode_and_check(data, check);
}

/// Checks every cast of `input`.
///
/// # Errors
/// What was wrong, with the ray and options.
pub fn check(input: &Input) -> Result<(), String> {
    let anchor = WorldPos::from_array(input.anchor.map(AnchorIn::get));
    let edits = &input.edits[..input.edits.len().min(EDITS)];
    let (mut world, model) = build(anchor, edits)?;
    world.set_skip_empty_bricks(input.skip_bricks);
    let filter = input.filter.get();
    for ray_in in input.rays.iter().take(RAYS) {
        let raw = ray_in.get(anchor);
        check_ray(&world, &model, &filter, &raw)
            .map_err(|why| format!("{why}\n  raw ray {raw:?}"))?;
    }
    Ok(())
}

/// Every cast of one ray.
fn check_ray(
    world: &VoxelWorld,
    model: &Model,
    filter: &voxcast::MaterialFilter,
    raw: &VoxelRay,
) -> Result<(), String> {
    let built = VoxelRay::new(raw.origin, raw.sub_offset, raw.direction, raw.max_distance);
    validate::check(raw, &built)?;
    let ray = match built {
        Err(e) => return check_rejected(world, raw, e),
        Ok(r) => r,
    };
    // The raw ray is the normalised one: the same voxels at the same distances.
    let raw_steps: Vec<_> = VoxelTraversal::new(raw).take(WALK_STEPS).collect();
    let steps: Vec<_> = VoxelTraversal::new(&ray).take(WALK_STEPS).collect();
    if raw_steps != steps {
        return Err(format!("the raw ray walks differently from {ray:?}"));
    }
    let g = Geometry::new(&ray);
    let steps = walk::walk(&ray, WALK_STEPS);
    walk::check_steps(&g, &steps).map_err(|why| format!("traversal: {why}"))?;
    for unloaded in UNLOADED_POLICIES {
        for origin in ORIGIN_POLICIES {
            let opts = RaycastOptions {
                origin,
                blocks: filter.clone(),
                unloaded,
                per_voxel: false,
            };
            let per_voxel = RaycastOptions {
                per_voxel: true,
                ..opts.clone()
            };
            let what = format!("{origin:?} {unloaded:?}");
            let o = voxel_raycast_with(raw, world, &opts);
            let stepped = voxel_raycast_with(raw, world, &per_voxel);
            if !identical(&o, &stepped) {
                return Err(format!(
                    "{what}: skipping gives {o:?}, stepping {stepped:?}"
                ));
            }
            judge(model, &ray, &opts, false, &o).map_err(|why| format!("{what}: {o:?}: {why}"))?;
            if let Some(want) = walk::expected(model, &steps, &ray, &opts)
                && !walk::same_but_uv(&o, &want)
            {
                return Err(format!("{what}: {o:?}, but the walk gives {want:?}"));
            }
            let sight = |raycast: RaycastOptions, conservative: bool| {
                RaycastOutcome::from(line_of_sight(
                    raw,
                    world,
                    &LineOfSightOptions {
                        raycast,
                        conservative,
                    },
                ))
            };
            let plain = sight(opts.clone(), false);
            if !identical(&plain, &o) {
                return Err(format!("{what}: line of sight {plain:?}, raycast {o:?}"));
            }
            let cons = sight(opts.clone(), true);
            let cons_stepped = sight(per_voxel, true);
            if !identical(&cons, &cons_stepped) {
                return Err(format!(
                    "{what}: conservative line of sight skipping {cons:?}, stepping {cons_stepped:?}"
                ));
            }
            judge(model, &ray, &opts, true, &cons)
                .map_err(|why| format!("{what}: conservative {cons:?}: {why}"))?;
            if let Some(t) = end_distance(&o)
                && end_distance(&cons).is_none_or(|c| c > t)
            {
                return Err(format!(
                    "{what}: conservative {cons:?} sees past plain {o:?}"
                ));
            }
        }
    }
    Ok(())
}

/// A rejected ray: `Invalid` with its error from every query, nothing from the traversal.
fn check_rejected(world: &VoxelWorld, raw: &VoxelRay, e: voxcast::RayError) -> Result<(), String> {
    if let Some(step) = VoxelTraversal::new(raw).next() {
        return Err(format!(
            "rejected with {e:?}, the traversal yields {step:?}"
        ));
    }
    let o = voxel_raycast_with(raw, world, &RaycastOptions::default());
    if o != RaycastOutcome::Invalid(e) {
        return Err(format!("rejected with {e:?}, cast gives {o:?}"));
    }
    for conservative in [false, true] {
        let l = line_of_sight(
            raw,
            world,
            &LineOfSightOptions {
                conservative,
                ..Default::default()
            },
        );
        if l != LineOfSight::Invalid(e) {
            return Err(format!("rejected with {e:?}, line of sight gives {l:?}"));
        }
    }
    if VoxelTraversal::new(raw).next().is_some() {
        return Err(format!("rejected with {e:?}, but the traversal walks"));
    }
    Ok(())
}
