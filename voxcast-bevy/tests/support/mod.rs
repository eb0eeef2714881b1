//! Helpers shared by the plugin's tests: an app with the plugin, targeters aimed along a
//! direction, the messages of a frame, and the core crate's answers to compare with.

#![allow(
    dead_code,
    reason = "each test crate uses a different subset of these helpers"
)]

use bevy_app::App;
use bevy_ecs::message::MessageCursor;
use bevy_ecs::prelude::*;
use bevy_math::Quat;
use bevy_transform::components::Transform;
use voxcast::glam::Vec3;
use voxcast::{
    LineOfSight, LineOfSightOptions, RaycastOptions, VoxelId, VoxelRay, VoxelWorld, WorldPos,
    line_of_sight, voxel_raycast_with,
};
use voxcast_bevy::{
    BlockTarget, BlockTargeter, SightAnswer, SightId, SightQueue, SightRequest, VoxcastPlugin,
    VoxelPosition, Voxels,
};
use voxcast_testkit::scene::{SplitMix64, Terrain};

/// Queues a segment request for each of `segments` (from its start to its end point).
pub(crate) fn queue_segments<'a>(
    queue: &mut SightQueue,
    segments: impl Iterator<Item = &'a VoxelRay>,
) -> Vec<SightId> {
    segments
        .map(|s| {
            let (to, to_sub) = s.point_at(s.max_distance).expect("inside the world");
            queue.push_segment(
                VoxelPosition::new(s.origin, s.sub_offset),
                VoxelPosition::new(to, to_sub),
            )
        })
        .collect()
}

/// An app with Bevy's `TransformPlugin` (which computes the `GlobalTransform` targeters aim
/// with), the plugin, and `world` as its [`Voxels`].
pub(crate) fn app_with(world: VoxelWorld) -> App {
    let mut app = App::new();
    app.add_plugins((bevy_transform::TransformPlugin, VoxcastPlugin))
        .insert_resource(Voxels::new(world));
    app
}

/// A 96 × 64 × 96 terrain with 400 stone pillars, 6 voxels high, on random columns (the
/// terrain alone is too gentle to hide much from sight), pillars placed by `seed`.
pub(crate) fn pillared_terrain(seed: u64) -> (Terrain, VoxelWorld) {
    let terrain = Terrain {
        size: [96, 64, 96],
        seed: 12,
    };
    let mut world = terrain.build();
    let mut rng = SplitMix64::new(seed);
    for _ in 0..400 {
        let (x, z) = (rng.below(96) as i64, rng.below(96) as i64);
        let top = terrain.height(x, z).max(terrain.sea_level());
        for y in 1..=6 {
            world.set_voxel(
                WorldPos::new(x.into(), (top + y).into(), z.into()),
                VoxelId(1),
            );
        }
    }
    (terrain, world)
}

/// A rotation that turns Bevy's forward (`-Z`) to `dir` (voxcast's vector).
pub(crate) fn looking(dir: Vec3) -> Transform {
    let to = bevy_math::Vec3::from_array(dir.normalize().to_array());
    Transform::from_rotation(Quat::from_rotation_arc(bevy_math::Vec3::NEG_Z, to))
}

/// Spawns a targeter at `position`, looking along `dir`, with `targeter`'s reach and options.
pub(crate) fn spawn_targeter(
    app: &mut App,
    position: VoxelPosition,
    dir: Vec3,
    targeter: BlockTargeter,
) -> Entity {
    app.world_mut()
        .spawn((targeter, position, looking(dir)))
        .id()
}

/// The world of the app.
pub(crate) fn voxels(app: &App) -> &VoxelWorld {
    app.world().resource::<Voxels>()
}

/// The target the core crate gives an entity at `position` whose transform is `transform`:
/// [`voxel_raycast_with`] along Bevy's own `GlobalTransform::forward()`, and the voxel in front
/// of the hit face when it is air or unloaded.
pub(crate) fn expected_target(
    world: &VoxelWorld,
    position: &VoxelPosition,
    transform: &Transform,
    reach: f32,
    opts: &RaycastOptions,
) -> BlockTarget {
    // The plugin aims along `GlobalTransform::forward()` (for an entity without a parent, its
    // `Transform`'s matrix); a transform without a forward direction (zero or NaN through the
    // matrix), where `forward()` would give NaN, gives that vector to the ray, which rejects it.
    let global = bevy_transform::components::GlobalTransform::from(*transform);
    let through = global.affine().transform_vector3(Vec3::NEG_Z);
    let forward = if through != Vec3::ZERO && through.is_finite() {
        *global.forward()
    } else {
        through
    };
    let outcome = match VoxelRay::new(position.voxel, position.offset, forward, reach) {
        Ok(ray) => voxel_raycast_with(&ray, world, opts),
        Err(e) => voxcast::RaycastOutcome::Invalid(e),
    };
    let place_at = outcome
        .hit()
        .and_then(|h| h.previous_pos())
        .filter(|p| world.get_voxel(p).is_none_or(|id| id.is_air()));
    BlockTarget { outcome, place_at }
}

/// Checks every targeter's [`BlockTarget`] against [`expected_target`] on the app's world,
/// and returns how many hit something.
#[track_caller]
pub(crate) fn check_targets(app: &mut App) -> usize {
    let mut query = app.world_mut().query::<(
        Entity,
        &VoxelPosition,
        &Transform,
        &BlockTargeter,
        &BlockTarget,
    )>();
    let world = app.world();
    let mut hits = 0;
    for (entity, position, transform, targeter, target) in query.iter(world) {
        let want = expected_target(
            voxels(app),
            position,
            transform,
            targeter.reach,
            &targeter.options,
        );
        assert!(
            target.outcome.matches(&want.outcome) && target.place_at == want.place_at,
            "entity {entity} at {position:?}, rotation {:?}, reach {}:\n  plugin {target:?}\n  core   {want:?}",
            transform.rotation,
            targeter.reach
        );
        hits += usize::from(target.hit().is_some());
    }
    hits
}

/// The messages of type `M` written since `cursor` last read.
pub(crate) fn read<M: Message + Clone>(app: &App, cursor: &mut MessageCursor<M>) -> Vec<M> {
    let messages = app.world().resource::<Messages<M>>();
    cursor.read(messages).cloned().collect()
}

/// What [`line_of_sight`] answers for the segment between two points, as a sight answer
/// carries it.
pub(crate) fn expected_sight(
    world: &VoxelWorld,
    from: &VoxelPosition,
    to: &VoxelPosition,
    opts: &LineOfSightOptions,
) -> LineOfSight {
    match VoxelRay::sight_line(from.voxel, from.offset, to.voxel, to.offset) {
        Ok(segment) => line_of_sight(&segment, world, opts),
        Err(e) => LineOfSight::Invalid(e),
    }
}

/// Checks each answer against [`expected_sight`] on `world`, with the positions the entities
/// have now (`None` for an entity without one), and returns how many were blocked.
#[track_caller]
pub(crate) fn check_answers(
    app: &mut App,
    world: &VoxelWorld,
    answers: &[SightAnswer],
    opts: &LineOfSightOptions,
) -> usize {
    let mut blocked = 0;
    for answer in answers {
        let position = |e: Entity| app.world().get::<VoxelPosition>(e).copied();
        let points = match answer.request {
            SightRequest::Segment { from, to } => Some((from, to)),
            SightRequest::Entities { from, to } => position(from).zip(position(to)),
        };
        match (points, &answer.result) {
            (Some((from, to)), Ok(got)) => {
                let want = expected_sight(world, &from, &to, opts);
                assert!(
                    got.matches(&want),
                    "{:?} from {from:?} to {to:?}:\n  plugin {got:?}\n  core   {want:?}",
                    answer.id
                );
                blocked += usize::from(matches!(got, LineOfSight::Blocked(_)));
            }
            (None, Err(voxcast_bevy::SightError::NoPosition(e))) => {
                assert!(
                    app.world().get::<VoxelPosition>(*e).is_none(),
                    "{:?}: {e} has a position but was reported without one",
                    answer.id
                );
            }
            (points, result) => panic!(
                "{:?} ({:?}): points {points:?}, answer {result:?}",
                answer.id, answer.request
            ),
        }
    }
    blocked
}
