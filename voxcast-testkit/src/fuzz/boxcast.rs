//! Target `boxcast`: box casts with any input, in a small world anywhere in i128. A cast that
//! `BoxCast::new` refuses is `Invalid` with the same error when cast as given; under
//! `UnloadedPolicy::Air` every answer is judged by the brute-force oracle
//! (`crate::boxes`); under `Stop` an answer other than `Unloaded` is the `Air` answer, and an
//! `Unloaded` one comes no later than it; the batch gives each cast's own answer; and a slide
//! along the cast never ends overlapping a stopping voxel when it started clear of them.

use arbitrary::Arbitrary;
use voxcast::glam::Vec3;
use voxcast::{
    BoxBody, BoxCast, BoxCastOutcome, OriginPolicy, RaycastOptions, SlideOptions, UnloadedPolicy,
    VoxelId, VoxelWorld, WorldPos, box_cast, box_cast_batch, collide_and_slide,
};

use crate::boxes::{contacts, judge};
use crate::fuzz::input::{
    AnchorIn, CoordIn, F32In, IdIn, ORIGIN_POLICIES, decode_and_check, near, vec3,
};

/// One cast.
#[derive(Arbitrary, Debug)]
pub struct CastIn {
    center: [CoordIn; 3],
    sub: [F32In; 3],
    half: [F32In; 3],
    dir: [F32In; 3],
    max: F32In,
    origin: u8,
    slide: bool,
}

/// A world of up to a few hundred voxels near an anchor, and casts in it.
#[derive(Arbitrary, Debug)]
pub struct Input {
    anchor: [AnchorIn; 3],
    solids: Vec<([i8; 3], IdIn)>,
    casts: Vec<CastIn>,
}

/// The target's body.
pub fn run(data: &[u8]) {
    decode_and_check(data, check);
}

fn check(input: &Input) -> Result<(), String> {
    let anchor = WorldPos::from_array(input.anchor.map(AnchorIn::get));
    let mut world = VoxelWorld::new();
    for (off, id) in input.solids.iter().take(400) {
        world.set_voxel(near(anchor, off.map(i32::from)), id.get());
    }
    // The stopping voxels, as the world holds them (a later write wins).
    let solids: Vec<(WorldPos, VoxelId)> = input
        .solids
        .iter()
        .take(400)
        .map(|(off, _)| near(anchor, off.map(i32::from)))
        .filter_map(|p| {
            world
                .get_voxel(&p)
                .filter(|id| *id != VoxelId::AIR)
                .map(|id| (p, id))
        })
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_iter()
        .collect();
    let casts: Vec<(BoxCast, OriginPolicy, bool)> = input
        .casts
        .iter()
        .take(16)
        .map(|c| {
            let cast = BoxCast {
                body: BoxBody {
                    center: WorldPos::from_array(std::array::from_fn(|a| {
                        c.center[a].get(anchor.axis(a))
                    })),
                    center_offset: vec3(c.sub),
                    half_extents: vec3(c.half),
                },
                direction: vec3(c.dir),
                max_distance: c.max.get(),
            };
            let origin = ORIGIN_POLICIES[usize::from(c.origin) % ORIGIN_POLICIES.len()];
            (cast, origin, c.slide)
        })
        .collect();
    for &(raw, origin, slide) in &casts {
        let air = RaycastOptions {
            origin,
            ..RaycastOptions::default()
        };
        let stop = RaycastOptions {
            unloaded: UnloadedPolicy::Stop,
            ..air.clone()
        };
        let got = box_cast(&raw, &world, &air);
        let cast = match BoxCast::new(
            raw.body.center,
            raw.body.center_offset,
            raw.body.half_extents,
            raw.direction,
            raw.max_distance,
        ) {
            Err(e) => {
                if got != BoxCastOutcome::Invalid(e) {
                    return Err(format!("{raw:?}: refused with {e}, cast as given: {got:?}"));
                }
                continue;
            }
            Ok(c) => c,
        };
        let c = contacts(&cast, &solids);
        judge(&cast, &got, &c, origin).map_err(|e| format!("{cast:?} {origin:?}: {got:?}: {e}"))?;
        let under_stop = box_cast(&raw, &world, &stop);
        match under_stop {
            BoxCastOutcome::Unloaded { distance, .. }
                if got.distance().is_some_and(|d| d < distance) =>
            {
                return Err(format!("{cast:?}: Unloaded at {distance} after {got:?}"));
            }
            BoxCastOutcome::Unloaded { .. } => {}
            o if o != got => return Err(format!("{cast:?}: {o:?} under Stop, {got:?} under Air")),
            _ => {}
        }
        if slide && origin != OriginPolicy::Report {
            let d = cast.direction * cast.max_distance.min(64.0);
            let clear = |c: WorldPos, s: Vec3| {
                let probe = BoxCast::new(c, s, cast.body.half_extents, Vec3::Y, 0.0);
                probe.is_ok_and(|p| {
                    !matches!(
                        box_cast(&p, &world, &RaycastOptions::default()),
                        BoxCastOutcome::StartsInside { .. }
                    )
                })
            };
            let opts = SlideOptions {
                cast: air.clone(),
                step_up: 1.0,
            };
            if clear(cast.body.center, cast.body.center_offset)
                && let Ok(s) = collide_and_slide(&cast.body, d, &world, &opts)
                && !clear(s.body.center, s.body.center_offset)
            {
                return Err(format!(
                    "{cast:?}: the slide by {d} ends overlapping: {s:?}"
                ));
            }
        }
    }
    for policy in [OriginPolicy::Report, OriginPolicy::ExitSolid] {
        let opts = RaycastOptions {
            origin: policy,
            ..RaycastOptions::default()
        };
        let raws: Vec<BoxCast> = casts.iter().map(|c| c.0).collect();
        let batch = box_cast_batch(&raws, &world, &opts);
        for (r, b) in raws.iter().zip(&batch) {
            let one = box_cast(r, &world, &opts);
            if one != *b {
                return Err(format!("{r:?}: batch {b:?}, alone {one:?}"));
            }
        }
    }
    Ok(())
}
