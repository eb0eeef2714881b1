//! voxcast's vectors are Bevy's: this file stops compiling if `voxcast::glam` and `bevy_math`
//! ever name different glam versions (then `Transform` and voxcast's calls no longer share
//! `Vec3` and `Quat`, and every app converts by hand).

use bevy_math::{Quat, Vec3};
use voxcast::{VoxelRay, WorldPos};

#[test]
fn bevy_vectors_go_straight_into_voxcast_calls() {
    let forward: Vec3 = Quat::from_rotation_y(0.5) * Vec3::NEG_Z;
    let same: voxcast::glam::Vec3 = forward;
    let ray = VoxelRay::new(WorldPos::new(0, 0, 0), Vec3::splat(0.5), same, 8.0)
        .expect("a unit direction from Bevy's own types is a valid ray");
    let back: Vec3 = ray.direction;
    assert!((back - forward).length() < 1e-6, "{back} against {forward}");
}
