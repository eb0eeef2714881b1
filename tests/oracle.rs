//! The CPU reference against an independent oracle, and random inputs that must never panic.
//! That empty-space skipping changes no bit of any answer is tested in `skipping.rs`.
//!
//! The oracle knows nothing of the DDA: for every stopping voxel it intersects the ray with the
//! voxel's unit box (the slab test, in f64, relative to the ray's origin voxel) and takes the
//! nearest entry. On an axis with a zero direction component the voxel is half-open,
//! `[p, p + 1)`, as the definition says; otherwise boundaries are crossed instantly and do not
//! matter. Where the exact answer is a tie (the ray passes within 1e-4 of an edge or corner, two
//! voxels are entered within 1e-4 of each other, or the entry lies within 1e-4 of max
//! distance) the reference may pick any of the tied candidates; everywhere else it must give
//! the oracle's voxel, face, id and distance (within 1e-3) and uv (within 1e-3).

mod common;

use common::{describe, dir_component, offset, random_solids, rel, sub_of_kind};
use proptest::prelude::*;
use voxcast::glam::{DVec3, IVec3, Vec2, Vec3};
use voxcast::{
    Chunk, ChunkPos, LineOfSight, LineOfSightOptions, MAX_DISTANCE_CAP, MaterialFilter,
    OriginPolicy, RaycastOptions, RaycastOutcome, UnloadedPolicy, VoxelId, VoxelRay,
    VoxelTraversal, VoxelWorld, WorldPos, line_of_sight, voxel_raycast_with,
};

/// Slack for "the same distance" in exact arithmetic: the reference steps in f32.
const TIE: f64 = 1e-4;

/// One stopping voxel the ray touches, as the oracle sees it.
#[derive(Debug, Clone)]
struct Candidate {
    voxel: WorldPos,
    id: VoxelId,
    /// Entry distance, clamped to 0 for a voxel the ray starts in.
    t_near: f64,
    /// Whether the ray runs through the voxel for more than `TIE` (rather than grazing it).
    strict: bool,
    /// The acceptable entry-face normals.
    faces: Vec<IVec3>,
    /// Where the ray enters, relative to the voxel's low corner.
    entry: DVec3,
}

/// The start voxel, from the definition (origin, one lower on an axis where the start point is
/// on the low face and the ray moves down).
fn start_voxel(r: &VoxelRay) -> WorldPos {
    WorldPos::from_array(std::array::from_fn(|a| {
        r.origin.axis(a) - i128::from(r.direction[a] < 0.0 && r.sub_offset[a] == 0.0)
    }))
}

fn oracle(
    r: &VoxelRay,
    solids: &[(WorldPos, VoxelId)],
    stops: &dyn Fn(VoxelId) -> bool,
    skip: Option<WorldPos>,
) -> Vec<Candidate> {
    let o = r.sub_offset.as_dvec3();
    let d = r.direction.as_dvec3();
    let max = f64::from(r.max_distance);
    let mut out = Vec::new();
    'voxels: for &(v, id) in solids {
        if !stops(id) || Some(v) == skip {
            continue;
        }
        let lo = rel(v, r.origin);
        let mut t_near = f64::NEG_INFINITY;
        let mut t_far = f64::INFINITY;
        let mut enter = [f64::NEG_INFINITY; 3];
        for a in 0..3 {
            if d[a] == 0.0 {
                if !(lo[a] <= o[a] && o[a] < lo[a] + 1.0) {
                    continue 'voxels;
                }
                continue;
            }
            let t1 = (lo[a] - o[a]) / d[a];
            let t2 = (lo[a] + 1.0 - o[a]) / d[a];
            enter[a] = t1.min(t2);
            t_near = t_near.max(enter[a]);
            t_far = t_far.min(t1.max(t2));
        }
        let tn = t_near.max(0.0);
        if t_far < -TIE || tn > t_far + TIE || tn > max + TIE {
            continue;
        }
        let strict = t_far - tn > TIE;
        let faces = if t_near <= 0.0 {
            vec![IVec3::ZERO]
        } else {
            (0..3)
                .filter(|&a| d[a] != 0.0 && enter[a] >= t_near - TIE)
                .map(|a| {
                    let mut n = IVec3::ZERO;
                    n[a] = if d[a] < 0.0 { 1 } else { -1 };
                    n
                })
                .collect()
        };
        out.push(Candidate {
            voxel: v,
            id,
            t_near: tn,
            strict,
            faces,
            entry: o + d * tn - lo,
        });
    }
    out
}

/// Checks the reference's outcome against the oracle's candidates; `Err` says why not.
fn judge(r: &VoxelRay, outcome: &RaycastOutcome, cands: &[Candidate]) -> Result<(), String> {
    let max = f64::from(r.max_distance);
    let best = cands
        .iter()
        .filter(|c| c.strict)
        .map(|c| c.t_near)
        .fold(f64::INFINITY, f64::min);
    match outcome {
        RaycastOutcome::Miss => {
            if best < max - TIE {
                let c = cands.iter().find(|c| c.strict && c.t_near == best);
                return Err(format!("miss, but the oracle hits {c:?}"));
            }
            Ok(())
        }
        RaycastOutcome::Hit(h) => {
            let Some(c) = cands.iter().find(|c| c.voxel == h.voxel_pos) else {
                return Err(format!("hit {h:?} is not a stopping voxel on the ray"));
            };
            let dist = f64::from(h.distance);
            if (dist - c.t_near).abs() > 1e-3 {
                return Err(format!(
                    "distance {} but the oracle enters {c:?} at {}",
                    h.distance, c.t_near
                ));
            }
            if h.distance > r.max_distance || h.distance < 0.0 {
                return Err(format!("hit {h:?} outside [0, max distance]"));
            }
            if c.t_near > best + TIE {
                let b = cands.iter().find(|c| c.strict && c.t_near == best);
                return Err(format!(
                    "hit {h:?} lies behind the oracle's nearest hit {b:?}"
                ));
            }
            if h.voxel_type != c.id {
                return Err(format!(
                    "hit {h:?} has the wrong id; voxel holds {:?}",
                    c.id
                ));
            }
            if c.strict && !c.faces.contains(&h.face_normal) {
                return Err(format!(
                    "hit {h:?} has face {:?}, oracle allows {:?}",
                    h.face_normal, c.faces
                ));
            }
            // The uv of an unambiguous face: the entry point on the two other axes.
            if c.strict && c.faces.len() == 1 && c.faces[0] != IVec3::ZERO {
                let a = (0..3)
                    .find(|&a| c.faces[0][a] != 0)
                    .unwrap_or_else(|| unreachable!());
                let (u, v) = match a {
                    0 => (1, 2),
                    1 => (0, 2),
                    _ => (0, 1),
                };
                let uv = Vec2::new(c.entry[u] as f32, c.entry[v] as f32);
                if !h.hit_uv.abs_diff_eq(uv, 1e-3) {
                    return Err(format!("hit {h:?} has uv {:?}, oracle {uv:?}", h.hit_uv));
                }
            }
            if c.faces == [IVec3::ZERO]
                && c.strict
                && (h.face_normal != IVec3::ZERO || h.hit_uv != Vec2::ZERO)
            {
                return Err(format!(
                    "hit {h:?} in the start voxel must have zero normal and uv"
                ));
            }
            Ok(())
        }
        other => Err(format!("unexpected outcome {other:?}")),
    }
}

/// A random small world: a 12³ region at `min` with ~10% solids (ids 1..=3), plus, by `extra`,
/// nothing (0), a shell of loaded empty chunks around it (1), or a uniformly solid chunk next
/// to it (2).
fn small_world(seed: u64, min: WorldPos, extra: u8) -> (VoxelWorld, Vec<(WorldPos, VoxelId)>) {
    let mut solids = random_solids(seed, min, 12, 0.1, 3);
    let mut world = VoxelWorld::new();
    match extra % 3 {
        1 => {
            let c = min.chunk();
            for dz in -1..=1 {
                for dy in -1..=1 {
                    for dx in -1..=1 {
                        world
                            .insert_chunk(
                                ChunkPos::new(c.x + dx, c.y + dy, c.z + dz),
                                Chunk::default(),
                            )
                            .expect("in the world");
                    }
                }
            }
        }
        2 => {
            let c = min.chunk();
            let pos = ChunkPos::new(c.x - 1, c.y, c.z);
            let id = VoxelId(1 + (seed % 3) as u16);
            world
                .insert_chunk(pos, Chunk::filled(id))
                .expect("in the world");
            let o = pos.origin();
            for z in 0..32 {
                for y in 0..32 {
                    for x in 0..32 {
                        solids.push((offset(o, [x, y, z]), id));
                    }
                }
            }
        }
        _ => {}
    }
    for &(p, id) in &solids {
        world.set_voxel(p, id);
    }
    (world, solids)
}

fn filter_of(kind: u8) -> (MaterialFilter, String) {
    match kind % 4 {
        0 | 1 => (MaterialFilter::default(), "default".into()),
        2 => (
            MaterialFilter::all_solid().without(VoxelId(2)),
            "without 2".into(),
        ),
        _ => (MaterialFilter::only(&[VoxelId(3)]), "only 3".into()),
    }
}

prop_compose! {
    /// Start point relative to the region's low corner (mostly inside the region, else near
    /// it), and direction: half of the rays aim at
    /// a random point of the region (keeping the zero, ±1 and free kinds of each component),
    /// the others go anywhere.
    fn arb_ray_params()(
        origin in prop_oneof![3 => proptest::array::uniform3(0i128..12), 2 => proptest::array::uniform3(-5i128..17)],
        sub_kind in proptest::array::uniform3(0u8..3),
        sub_rand in proptest::array::uniform3(0.0f32..1.0),
        aim in any::<bool>(),
        target in proptest::array::uniform3(0.0f32..12.0),
        dir_kind in proptest::array::uniform3(0u8..6),
        dir_rand in proptest::array::uniform3(0.0f32..1.0),
        max_kind in 0u8..8,
        max_rand in 0.0f32..40.0,
    ) -> ([i128; 3], [f32; 3], [f32; 3], f32, bool) {
        let sub: [f32; 3] = std::array::from_fn(|a| sub_of_kind(sub_kind[a], sub_rand[a]));
        let dir = std::array::from_fn(|a| {
            let toward = target[a] - (origin[a] as f32 + sub[a]);
            match (aim, dir_kind[a]) {
                (true, 2 | 3) => if toward < 0.0 { -1.0 } else { 1.0 },
                (true, 4 | 5) => toward,
                _ => dir_component(dir_kind[a], dir_rand[a]),
            }
        });
        let max = match max_kind {
            0 => 0.0,
            1 | 2 => max_rand.floor(),
            _ => max_rand,
        };
        (origin, sub, dir, max, aim)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 5000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn reference_matches_oracle(
        world_seed in any::<u64>(),
        region in proptest::array::uniform3(-80i128..80),
        extra in 0u8..3,
        params in arb_ray_params(),
        skip_origin in any::<bool>(),
        filter_kind in 0u8..4,
    ) {
        let (origin, sub, dir, max, aimed) = params;
        prop_assume!(dir.iter().any(|&c| c != 0.0));
        let min = WorldPos::from_array(region);
        let (world, solids) = small_world(world_seed, min, extra);
        let r = VoxelRay::new(offset(min, origin), Vec3::from_array(sub), Vec3::from_array(dir), max)
            .map_err(|e| TestCaseError::fail(format!("{e}")))?;
        let (filter, filter_name) = filter_of(filter_kind);
        let policy = if skip_origin { OriginPolicy::SkipOriginVoxel } else { OriginPolicy::Report };
        let opts = RaycastOptions { origin: policy, blocks: filter.clone(), ..RaycastOptions::default() };
        let outcome = voxel_raycast_with(&r, &world, &opts);
        let skip = skip_origin.then(|| start_voxel(&r));
        let cands = oracle(&r, &solids, &|id| filter.contains(id), skip);
        if let Err(why) = judge(&r, &outcome, &cands) {
            return Err(TestCaseError::fail(format!(
                "{why}\n  {}\n  policy {policy:?}, filter {filter_name}, aimed {aimed}, world seed {world_seed:#x} at {min:?} extra {extra}\n  candidates {cands:#?}",
                describe(&r)
            )));
        }
    }
}

/// The oracle itself must be able to disagree: a wrong answer is rejected.
#[test]
fn oracle_rejects_wrong_answers() {
    let solids = [
        (WorldPos::new(5, 0, 0), VoxelId(1)),
        (WorldPos::new(8, 0, 0), VoxelId(2)),
    ];
    let r = common::ray_at([0, 0, 0], [0.5; 3], [1.0, 0.0, 0.0], 20.0);
    let cands = oracle(&r, &solids, &|id| !id.is_air(), None);
    let right = voxcast::VoxelRaycastHit {
        voxel_pos: WorldPos::new(5, 0, 0),
        face_normal: IVec3::NEG_X,
        distance: 4.5,
        voxel_type: VoxelId(1),
        hit_uv: Vec2::splat(0.5),
    };
    assert_eq!(judge(&r, &RaycastOutcome::Hit(right), &cands), Ok(()));
    assert!(judge(&r, &RaycastOutcome::Miss, &cands).is_err());
    let far = voxcast::VoxelRaycastHit {
        voxel_pos: WorldPos::new(8, 0, 0),
        distance: 7.5,
        voxel_type: VoxelId(2),
        ..right
    };
    assert!(judge(&r, &RaycastOutcome::Hit(far), &cands).is_err());
    assert!(
        judge(
            &r,
            &RaycastOutcome::Hit(voxcast::VoxelRaycastHit {
                face_normal: IVec3::X,
                ..right
            }),
            &cands
        )
        .is_err()
    );
    assert!(
        judge(
            &r,
            &RaycastOutcome::Hit(voxcast::VoxelRaycastHit {
                distance: 4.6,
                ..right
            }),
            &cands
        )
        .is_err()
    );
    assert!(
        judge(
            &r,
            &RaycastOutcome::Hit(voxcast::VoxelRaycastHit {
                hit_uv: Vec2::new(0.5, 0.6),
                ..right
            }),
            &cands
        )
        .is_err()
    );
    assert!(
        judge(
            &r,
            &RaycastOutcome::Hit(voxcast::VoxelRaycastHit {
                voxel_type: VoxelId(2),
                ..right
            }),
            &cands
        )
        .is_err()
    );
}

// ---------------------------------------------------------------------------------------------
// Random finite inputs: every ray ends, nothing panics, and every answer is self-consistent.

fn huge_base(kind: u8, jitter: i128) -> i128 {
    match kind % 5 {
        0 => (1i128 << 126) + jitter,
        1 => -(1i128 << 126) + jitter,
        2 => i128::MAX - 40 + jitter.rem_euclid(40),
        3 => i128::MIN + jitter.rem_euclid(40),
        _ => jitter,
    }
}

fn wild_f32(kind: u8, r: f32) -> f32 {
    match kind % 8 {
        0 => 0.0,
        1 => -0.0,
        2 => 1e-30 * (r - 0.5),
        3 => 1e-40 * (r - 0.5), // denormal
        4 => (r - 0.5) * 1e6,
        5 => (r - 0.5).signum(),
        _ => r * 2.0 - 1.0,
    }
}

fn check_consistent(
    r: &VoxelRay,
    world: &VoxelWorld,
    opts: &RaycastOptions,
    o: &RaycastOutcome,
) -> Result<(), String> {
    match o {
        RaycastOutcome::Hit(h) => {
            let id = world.get_voxel(&h.voxel_pos);
            if id != Some(h.voxel_type) || !opts.blocks.contains(h.voxel_type) {
                return Err(format!("hit {h:?} but the world holds {id:?}"));
            }
            if !(h.distance >= 0.0 && h.distance <= r.max_distance) {
                return Err(format!("hit {h:?} outside [0, max]"));
            }
            let unit = h.face_normal.abs().element_sum();
            if unit > 1 || (unit == 0) != (h.distance == 0.0) {
                return Err(format!(
                    "hit {h:?}: normal must be a unit axis, zero exactly at distance 0"
                ));
            }
            if !(0.0..=1.0).contains(&h.hit_uv.x) || !(0.0..=1.0).contains(&h.hit_uv.y) {
                return Err(format!("hit {h:?}: uv outside [0, 1]"));
            }
        }
        RaycastOutcome::Unloaded { at, distance } => {
            if opts.unloaded != UnloadedPolicy::Stop || world.is_loaded(at.chunk()) {
                return Err(format!(
                    "unloaded at {at:?} ({distance}) but policy {:?}, loaded {}",
                    opts.unloaded,
                    world.is_loaded(at.chunk())
                ));
            }
            if !(*distance >= 0.0 && *distance <= r.max_distance) {
                return Err(format!("unloaded at {distance} outside [0, max]"));
            }
        }
        RaycastOutcome::Miss => {}
        RaycastOutcome::Invalid(e) => return Err(format!("valid ray answered Invalid({e})")),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_inputs_terminate_without_panic(
        base_kind in proptest::array::uniform3(0u8..5),
        jitter in proptest::array::uniform3(-1000i128..1000),
        far_cluster in any::<bool>(),
        world_seed in any::<u64>(),
        origin_off in proptest::array::uniform3(-60i128..60),
        sub_kind in proptest::array::uniform3(0u8..8),
        sub_rand in proptest::array::uniform3(0.0f32..1.0),
        dir_kind in proptest::array::uniform3(0u8..8),
        dir_rand in proptest::array::uniform3(0.0f32..1.0),
        max in prop_oneof![Just(0.0f32), Just(MAX_DISTANCE_CAP), 0.0f32..MAX_DISTANCE_CAP],
    ) {
        let base = WorldPos::from_array(std::array::from_fn(|a| huge_base(base_kind[a], jitter[a])));
        let lo = WorldPos::from_array(base.to_array().map(|v| v.saturating_sub(6).min(i128::MAX - 11)));
        let mut solids = random_solids(world_seed, lo, 12, 0.15, 3);
        if far_cluster {
            let far = WorldPos::from_array(lo.to_array().map(|v| if v > 0 { v - (1 << 20) } else { v + (1 << 20) }));
            solids.extend(random_solids(world_seed ^ 1, far, 12, 0.15, 3));
        }
        let mut world = VoxelWorld::new();
        for &(p, id) in &solids {
            world.set_voxel(p, id);
        }
        let origin = WorldPos::from_array(std::array::from_fn(|a| base.axis(a).saturating_add(origin_off[a])));
        let sub = Vec3::from_array(std::array::from_fn(|a| wild_f32(sub_kind[a], sub_rand[a])));
        let dir = Vec3::from_array(std::array::from_fn(|a| wild_f32(dir_kind[a], dir_rand[a])));
        let r = match VoxelRay::new(origin, sub, dir, max) {
            Ok(r) => r,
            Err(e) => {
                // A rejected ray is answered Invalid, never cast.
                let raw = VoxelRay { origin, sub_offset: sub, direction: dir, max_distance: max };
                prop_assert_eq!(voxel_raycast_with(&raw, &world, &RaycastOptions::default()), RaycastOutcome::Invalid(e));
                return Ok(());
            }
        };
        for unloaded in [UnloadedPolicy::Air, UnloadedPolicy::Stop] {
            for policy in common::ORIGIN_POLICIES {
                let opts = RaycastOptions { origin: policy, unloaded, ..RaycastOptions::default() };
                let o = voxel_raycast_with(&r, &world, &opts);
                check_consistent(&r, &world, &opts, &o)
                    .map_err(|why| TestCaseError::fail(format!("{why}\n  {}\n  {policy:?} {unloaded:?}", describe(&r))))?;
                let per_voxel = voxel_raycast_with(&r, &world, &RaycastOptions { per_voxel: true, ..opts.clone() });
                prop_assert_eq!(o, per_voxel, "skip vs per voxel: {} {:?} {:?}", describe(&r), policy, unloaded);
                for conservative in [false, true] {
                    let los = line_of_sight(&r, &world, &LineOfSightOptions { raycast: opts.clone(), conservative });
                    if !conservative {
                        prop_assert_eq!(los, LineOfSight::from(o), "{}", describe(&r));
                    }
                    if let LineOfSight::Invalid(e) = los {
                        return Err(TestCaseError::fail(format!("valid segment answered Invalid({e}): {}", describe(&r))));
                    }
                }
            }
        }
        // The walk runs without panicking too, right up to the edge of the world.
        // (It yields nothing only for a ray that starts on the outer face of the i128 world
        // moving out of it.)
        let steps = VoxelTraversal::new(&r).take(5000).count();
        let leaves_at_once = r.prepare() == Ok(None);
        prop_assert_eq!(steps == 0, leaves_at_once, "{}", describe(&r));
        if leaves_at_once {
            prop_assert_eq!(voxel_raycast_with(&r, &world, &RaycastOptions::default()), RaycastOutcome::Miss);
        }
    }
}
