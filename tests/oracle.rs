//! The CPU reference against an independent oracle, and random inputs that must never panic.
//! That empty-space skipping changes no bit of any answer is tested in `skipping.rs`.
//!
//! The oracle is the fuzz targets' (`voxcast_testkit::fuzz::oracle`): it knows nothing of the DDA, intersects the ray with the box of every voxel
//! of a model of the world (the slab test, in f64, relative to the ray's origin voxel) and
//! accepts, where the exact answer is a tie within the f32 arithmetic's reach (see its docs),
//! any of the tied answers; everywhere else the reference must give the oracle's voxel, face,
//! id, distance and UV.

use voxcast_testkit::common;
use voxcast_testkit::fuzz as harness;

use common::{describe, dir_component, offset, random_solids, sub_of_kind};
use harness::model::{Model, ModelChunk};
use harness::oracle::judge;
use proptest::prelude::*;
use voxcast::glam::{IVec3, Vec2, Vec3};
use voxcast::{
    Chunk, ChunkPos, LineOfSight, LineOfSightOptions, MAX_DISTANCE_CAP, MaterialFilter,
    OriginPolicy, RaycastOptions, RaycastOutcome, UnloadedPolicy, VoxelId, VoxelRay,
    VoxelTraversal, VoxelWorld, WorldPos, line_of_sight, voxel_raycast_with,
};

/// A random small world: a 12³ region at `min` with ~10% solids (ids 1..=3), plus, by `extra`,
/// nothing (0), a shell of loaded empty chunks around it (1), or a uniformly solid chunk next
/// to it (2); with the model of it that the oracle reads.
fn small_world(seed: u64, min: WorldPos, extra: u8) -> (VoxelWorld, Model) {
    let mut world = VoxelWorld::new();
    let mut model = Model::default();
    let mut insert = |pos: ChunkPos, fill: VoxelId| {
        world
            .insert_chunk(pos, Chunk::filled(fill))
            .expect("in the world");
        model.insert_chunk(
            pos,
            ModelChunk {
                fill,
                ..ModelChunk::default()
            },
        );
    };
    let c = min.chunk();
    match extra % 3 {
        1 => {
            for dz in -1..=1 {
                for dy in -1..=1 {
                    for dx in -1..=1 {
                        insert(ChunkPos::new(c.x + dx, c.y + dy, c.z + dz), VoxelId::AIR);
                    }
                }
            }
        }
        2 => insert(
            ChunkPos::new(c.x - 1, c.y, c.z),
            VoxelId(1 + (seed % 3) as u16),
        ),
        _ => {}
    }
    for (p, id) in random_solids(seed, min, 12, 0.1, 3) {
        world.set_voxel(p, id);
        model.set_voxel(p, id);
    }
    (world, model)
}

fn filter_of(kind: u8) -> (MaterialFilter, String) {
    match kind % 4 {
        0 | 1 => (MaterialFilter::default(), "default".into()),
        2 => (
            MaterialFilter::every_non_air().without(VoxelId(2)),
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
        let (world, model) = small_world(world_seed, min, extra);
        let r = VoxelRay::new(offset(min, origin), Vec3::from_array(sub), Vec3::from_array(dir), max)
            .map_err(|e| TestCaseError::fail(format!("{e}")))?;
        let (filter, filter_name) = filter_of(filter_kind);
        let policy = if skip_origin { OriginPolicy::SkipOriginVoxel } else { OriginPolicy::Report };
        let opts = RaycastOptions { origin: policy, blocks: filter.clone(), ..RaycastOptions::default() };
        let outcome = voxel_raycast_with(&r, &world, &opts);
        if let Err(why) = judge(&model, &r, &opts, false, &outcome) {
            return Err(TestCaseError::fail(format!(
                "{why}\n  {}\n  policy {policy:?}, filter {filter_name}, aimed {aimed}, world seed {world_seed:#x} at {min:?} extra {extra}",
                describe(&r)
            )));
        }
    }
}

/// The oracle itself must be able to disagree: under each policy the right answer passes and
/// each wrong one (another voxel, face, distance, UV or id, a miss, unloaded space) is
/// rejected.
#[test]
fn oracle_rejects_wrong_answers() {
    let (mut world, mut model) = (VoxelWorld::new(), Model::default());
    for (x, id) in [(5, 1), (8, 2)] {
        world.set_voxel(WorldPos::new(x, 0, 0), VoxelId(id));
        model.set_voxel(WorldPos::new(x, 0, 0), VoxelId(id));
    }
    let hit = |x: i128, distance: f32, face: IVec3, id: u16| {
        RaycastOutcome::Hit(voxcast::VoxelRaycastHit {
            voxel_pos: WorldPos::new(x, 0, 0),
            face_normal: face,
            distance,
            voxel_type: VoxelId(id),
            hit_uv: if face == IVec3::ZERO {
                Vec2::ZERO
            } else {
                Vec2::splat(0.5)
            },
        })
    };
    let with_uv = |o: RaycastOutcome, uv: Vec2| match o {
        RaycastOutcome::Hit(h) => RaycastOutcome::Hit(voxcast::VoxelRaycastHit { hit_uv: uv, ..h }),
        o => o,
    };
    let unloaded = |x: i128, distance: f32| RaycastOutcome::Unloaded {
        voxel_pos: WorldPos::new(x, 0, 0),
        distance,
    };
    let x = IVec3::NEG_X;
    // (start x, policy, unloaded policy, the right answer, wrong answers)
    let cases = [
        (
            0,
            OriginPolicy::Report,
            UnloadedPolicy::Air,
            hit(5, 4.5, x, 1),
            vec![
                RaycastOutcome::Miss,
                hit(8, 7.5, x, 2),
                hit(5, 4.5, IVec3::X, 1),
                hit(5, 4.6, x, 1),
                with_uv(hit(5, 4.5, x, 1), Vec2::new(0.5, 0.6)),
                hit(5, 4.5, x, 2),
                hit(6, 5.5, x, 1),
                unloaded(5, 4.5),
            ],
        ),
        (
            10,
            OriginPolicy::Report,
            UnloadedPolicy::Stop,
            unloaded(32, 21.5),
            vec![
                RaycastOutcome::Miss,
                unloaded(33, 22.5),
                unloaded(32, 22.0),
                unloaded(31, 20.5),
            ],
        ),
        (
            5,
            OriginPolicy::Report,
            UnloadedPolicy::Air,
            hit(5, 0.0, IVec3::ZERO, 1),
            vec![hit(8, 2.5, x, 2), hit(5, 0.0, x, 1)],
        ),
        (
            5,
            OriginPolicy::SkipOriginVoxel,
            UnloadedPolicy::Air,
            hit(8, 2.5, x, 2),
            vec![hit(5, 0.0, IVec3::ZERO, 1), RaycastOutcome::Miss],
        ),
        (
            5,
            OriginPolicy::ExitSolid,
            UnloadedPolicy::Air,
            hit(8, 2.5, x, 2),
            vec![hit(5, 0.0, IVec3::ZERO, 1), RaycastOutcome::Miss],
        ),
    ];
    for (start, origin, unloaded, right, wrong) in cases {
        let r = common::ray_at([start, 0, 0], [0.5; 3], [1.0, 0.0, 0.0], 40.0);
        let opts = common::opts(origin, unloaded);
        assert_eq!(
            voxel_raycast_with(&r, &world, &opts),
            right,
            "{origin:?} {unloaded:?}"
        );
        assert_eq!(
            judge(&model, &r, &opts, false, &right),
            Ok(()),
            "{origin:?} {unloaded:?}"
        );
        for w in wrong {
            assert!(
                judge(&model, &r, &opts, false, &w).is_err(),
                "{origin:?} {unloaded:?}: the oracle accepts {w:?}"
            );
        }
    }
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
        RaycastOutcome::Unloaded {
            voxel_pos: at,
            distance,
        } => {
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
        // Leaving at once: on the low face of the i128 world (sub offset 0 at i128::MIN)
        // moving down, whose start voxel would lie outside it.
        let leaves_at_once = (0..3).any(|a| {
            r.origin.axis(a) == i128::MIN && r.sub_offset[a] == 0.0 && r.direction[a] < 0.0
        });
        prop_assert_eq!(steps == 0, leaves_at_once, "{}", describe(&r));
        if leaves_at_once {
            prop_assert_eq!(voxel_raycast_with(&r, &world, &RaycastOptions::default()), RaycastOutcome::Miss);
        }
    }
}
