//! GPU line of sight against the CPU reference under the conservative rule: segments through
//! exact lattice edges and corners, along voxel face planes, ending on a corner, and from outside
//! the window. Runs on lavapipe in CI; see `voxcast_testkit::gpu` for the CI switch.

#![cfg(feature = "gpu")]

use voxcast::gpu::Sightlines;
use voxcast_testkit::common;

use voxcast_testkit::gpu::*;

use voxcast::gpu::GpuRaycaster;
use voxcast::{
    LineOfSight, LineOfSightOptions, RaycastOptions, UnloadedPolicy, VoxelId, VoxelRay, VoxelWorld,
    WorldPos, glam::Vec3, line_of_sight_batch,
};

/// Segments between voxel centers and between voxel corners that pass through voxel edges and
/// corners in exact arithmetic (found with integers by `lattice_ties`; about a quarter of such
/// crossings are 1-3 ulps apart in f32): conservative line of sight tests the same voxels beside
/// them on the GPU as on the CPU. First in a world where one voxel in 25 is solid, then in
/// worlds of a single solid voxel beside many segments' edges and corners, where every segment
/// must be blocked by it and the walk reaches it by skips through empty bricks and unloaded
/// chunks (which must end before a near-tied crossing).
#[test]
fn parity_of_sight_through_lattice_edges() {
    let Some(gpu) = gpu() else { return };
    let stop = RaycastOptions {
        origin: voxcast::OriginPolicy::SkipOriginVoxel,
        unloaded: UnloadedPolicy::Stop,
        ..RaycastOptions::default()
    };
    let conservative = LineOfSightOptions {
        conservative: true,
        ..LineOfSightOptions::default()
    };

    let mut world = VoxelWorld::new();
    for (p, id) in common::random_solids(77, WorldPos::new(-52, -16, -8), 96, 0.04, 3) {
        world.set_voxel(p, id);
    }
    let gw = gpu.upload_world(&world).expect("upload");
    for from in [WorldPos::new(29, -3, 6), WorldPos::new(-40, 17, 31)] {
        let segs: Vec<VoxelRay> = common::lattice_segments(from, 9)
            .into_iter()
            .map(|(s, _)| s)
            .collect();
        let what = format!("lattice edges from {from:?}");
        sight_parity(gpu, &gw, &world, &segs, &what);
        sight_parity_with(gpu, &gw, &world, &segs, &format!("{what}, Stop"), &stop);
        // The conservative rule must matter on this set, or the comparison shows little.
        let plain = line_of_sight_batch(&segs, &world, &LineOfSightOptions::default());
        let cons = line_of_sight_batch(&segs, &world, &conservative);
        let differ = plain.iter().zip(&cons).filter(|(p, c)| p != c).count();
        assert!(
            differ * 20 > segs.len(),
            "{what}: only {differ} of {} segments answer differently when conservative",
            segs.len()
        );
    }

    let from = WorldPos::new(29, -3, 6);
    let all = common::lattice_segments(from, 9);
    for v in [
        [3, 2, 1],
        [-2, -3, 4],
        [-4, 4, 4],
        [2, 3, 3],
        [2, 2, 2],
        [1, 2, 3],
        [-1, 1, 1],
        [3, -3, 0],
        [4, 2, 2],
        [-3, -3, -3],
    ] {
        let segs: Vec<VoxelRay> = all
            .iter()
            .filter(|(_, touching)| touching.iter().any(|&(_, t, _)| t == v.map(i64::from)))
            .map(|&(s, _)| s)
            .collect();
        blocked_by_one_voxel(gpu, from, v, &segs, 30);
    }
}

/// Segments that lie in voxel face planes or along edge lines: conservative line of sight walks
/// the layers on both sides of each plane on the GPU as on the CPU, under every option. First
/// in a world where one voxel in 25 is solid: lattice segments from two voxel corners (one a
/// chunk corner), and long segments from outside the loaded chunks along planes at the faces of
/// the loaded chunks and of the window, where a shifted layer lies in the window's margin or
/// outside it. Then in worlds of one solid voxel, which every segment touching it beyond its
/// start point (found in exact arithmetic) must come back blocked by.
#[test]
fn parity_of_sight_along_face_planes() {
    let Some(gpu) = gpu() else { return };
    let mut world = VoxelWorld::new();
    for (p, id) in common::random_solids(78, WorldPos::new(-52, -16, -8), 96, 0.04, 3) {
        world.set_voxel(p, id);
    }
    let gw = gpu.upload_world(&world).expect("upload");
    let mut segs = Vec::new();
    for from in [WorldPos::new(32, -32, 0), WorldPos::new(-40, 17, 31)] {
        segs.extend(
            common::face_plane_segments(from, 9)
                .into_iter()
                .map(|(s, _)| s),
        );
    }
    // The loaded chunks span y and z -32..=95; the window -64..=127.
    let planes = [-64, -32, -31, 40, 96, 127, 128];
    for y in planes {
        for z in planes {
            segs.push(common::ray_at(
                [-200, y, z],
                [0.5, 0.0, 0.0],
                [1.0, 0.0, 0.0],
                400.0,
            ));
            segs.push(common::ray_at(
                [200, y, z],
                [0.5, 0.0, 0.0],
                [-1.0, 0.0, 0.0],
                400.0,
            ));
        }
        segs.push(common::ray_at(
            [-200, y, 10],
            [0.5, 0.0, 0.5],
            [1.0, 0.0, 0.3],
            400.0,
        ));
        segs.push(common::ray_at(
            [10, 200, y],
            [0.5, 0.5, 0.0],
            [0.2, -1.0, 0.0],
            400.0,
        ));
    }
    check_every_option(gpu, "face planes", &world, &gw, &segs);

    let from = WorldPos::new(32, -32, 0);
    let all = common::face_plane_segments(from, 6);
    for v in [
        [2, -1, 0],
        [-1, -1, 3],
        [0, -1, -1],
        [-3, 2, -1],
        [1, 1, -1],
        [-1, 2, -1],
        [-1, -1, -1],
    ] {
        let segs: Vec<VoxelRay> = all
            .iter()
            .filter(|(_, d)| {
                common::closed_touching(*d)
                    .iter()
                    .any(|&(t, s)| t == v.map(i64::from) && s < 1.0)
            })
            .map(|&(s, _)| s)
            .collect();
        blocked_by_one_voxel(gpu, from, v, &segs, 10);
    }
}

/// In a world whose one solid voxel is `from + v`: GPU against CPU on `segs` (at least
/// `min_segments` of them; plain and conservative), and every one of them blocked by that
/// voxel on the GPU under the conservative rule.
fn blocked_by_one_voxel(
    gpu: &GpuRaycaster,
    from: WorldPos,
    v: [i32; 3],
    segs: &[VoxelRay],
    min_segments: usize,
) {
    let what = &format!("one solid voxel at {v:?} from {from:?}");
    assert!(
        segs.len() >= min_segments,
        "{what}: only {} segments beside it",
        segs.len()
    );
    let p = from
        .checked_offset(voxcast::glam::IVec3::from_array(v))
        .expect("near 0");
    let world = common::world_with(&[(p, VoxelId(1))]);
    let gw = gpu.upload_world(&world).expect("upload");
    sight_parity(gpu, &gw, &world, segs, what);
    let conservative = LineOfSightOptions {
        conservative: true,
        ..LineOfSightOptions::default()
    };
    let got = gpu
        .cast(Sightlines(segs), &gw, &conservative)
        .expect("gpu los");
    for (seg, g) in segs.iter().zip(&got) {
        assert!(
            matches!(g, LineOfSight::Blocked(h) if h.voxel_pos == p),
            "{what}: {} gives {g:?}",
            common::describe(seg)
        );
    }
}

/// Segments from voxel centers that end exactly on a corner of the one solid voxel: the edge
/// crossings there round to either side of max distance. The GPU's conservative answers equal
/// the CPU's walking voxel by voxel, not only the CPU's with skips.
#[test]
fn parity_of_conservative_sight_ending_on_a_corner() {
    let Some(gpu) = gpu() else { return };
    let solid = WorldPos::new(-9, -2, -4);
    let world = common::world_with(&[(solid, VoxelId(1))]);
    let gw = gpu.upload_world(&world).expect("upload");
    let mut segs = Vec::new();
    for corner in 0..8 {
        let to = solid
            .checked_offset(voxcast::glam::IVec3::new(
                corner & 1,
                corner >> 1 & 1,
                corner >> 2 & 1,
            ))
            .expect("near 0");
        for d in common::cube(7).filter(|&d| d != voxcast::glam::IVec3::ZERO) {
            let from = solid.checked_offset(d).expect("near 0");
            let seg = VoxelRay::between(from, Vec3::splat(0.5), to, Vec3::ZERO);
            segs.push(seg.expect("valid"));
        }
    }
    let opts = |per_voxel| LineOfSightOptions {
        conservative: true,
        raycast: RaycastOptions {
            per_voxel,
            ..RaycastOptions::default()
        },
    };
    let walked = line_of_sight_batch(&segs, &world, &opts(true));
    for per_voxel in [false, true] {
        let g = gpu
            .cast(Sightlines(&segs), &gw, &opts(per_voxel))
            .expect("gpu los");
        assert_sight_parity(
            &format!("per_voxel {per_voxel} against the CPU walking voxel by voxel"),
            &segs,
            &g,
            &walked,
        );
    }
    let blocked = walked
        .iter()
        .filter(|l| matches!(l, LineOfSight::Blocked(h) if h.voxel_pos == solid))
        .count();
    assert!(
        blocked * 2 > segs.len(),
        "only {blocked} of {} segments blocked at their end",
        segs.len()
    );
}

/// A segment from outside the window under `Stop` with the origin voxel skipped is answered on
/// the host; conservative line of sight there first tests the voxels beside a tie at its first
/// crossing, as the CPU does (here the step itself leaves the i128 world, and the voxel beside
/// it across z alone is unloaded: `Unknown`, once `Clear`).
#[test]
fn conservative_sight_from_outside_the_window_tests_the_first_tie() {
    let Some(gpu) = gpu() else { return };
    let mut world = VoxelWorld::new();
    world.set_voxel(WorldPos::new(5000, 5000, 5000), VoxelId(1));
    let gw = gpu.upload_world(&world).expect("upload");
    let r = common::ray_at(
        [i128::MIN, 0, 0],
        [0.25, 0.5, 0.75],
        [-1.0, -1.0, 1.0],
        10.0,
    );
    let mut segs = vec![r];
    // And the same kind of first tie away from the edge, stepping on into unloaded space.
    segs.push(common::ray_at(
        [-70, 3, 9],
        [0.25, 0.5, 0.75],
        [-1.0, -1.0, 1.0],
        10.0,
    ));
    for conservative in [false, true] {
        let opts = LineOfSightOptions {
            raycast: RaycastOptions {
                origin: voxcast::OriginPolicy::SkipOriginVoxel,
                unloaded: UnloadedPolicy::Stop,
                ..RaycastOptions::default()
            },
            conservative,
        };
        let g = gpu.cast(Sightlines(&segs), &gw, &opts).expect("gpu los");
        let c = line_of_sight_batch(&segs, &world, &opts);
        assert_sight_parity(&format!("conservative {conservative}"), &segs, &g, &c);
        // The first crossing ties x and z at 0.25 · √3: the x step leaves the i128 world, and
        // conservatively the voxel across z alone, unloaded, makes the answer unknown.
        let tie = 0.25 * 3f32.sqrt();
        match g[0] {
            LineOfSight::Unknown {
                voxel_pos: at,
                distance,
            } if conservative => {
                assert_eq!(at, WorldPos::new(i128::MIN, 0, 1));
                assert!((distance - tie).abs() < 1e-6, "{distance}");
            }
            LineOfSight::Clear if !conservative => {}
            other => panic!("conservative {conservative}: {other:?}"),
        }
        // Away from the edge the first voxel stepped into (or, conservatively, the one across
        // z) is unloaded, at the same crossing.
        let first = if conservative {
            [-70, 3, 10]
        } else {
            [-71, 3, 9]
        };
        assert!(
            matches!(g[1], LineOfSight::Unknown { voxel_pos: at, distance }
                if at == WorldPos::new(first[0], first[1], first[2]) && (distance - tie).abs() < 1e-6),
            "conservative {conservative}: {:?}",
            g[1]
        );
    }
}
