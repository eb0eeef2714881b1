//! Sensor rigs on the GPU (`SensorSweep`): every ray made in the shader from an agent's
//! pose, against the CPU reference (`voxcast::sense`) ray by ray, for the example rigs, every
//! option, bad poses, poses outside the window (cast from host-built rays), dispatches split
//! at whole agents, a window that follows a player and the non-blocking form. Runs on lavapipe
//! in CI; see `voxcast_testkit::gpu`.

#![cfg(feature = "gpu")]

use voxcast::gpu::SensorSweep;
use voxcast_testkit::gpu::*;

use voxcast::glam::{Quat, Vec3};
use voxcast::gpu::GpuError;
use voxcast::{
    ChunkPos, RayError, RaycastOptions, SensorPose, SensorReading, SensorReadings, SensorRig,
    VoxelId, WorldPos, sense,
};

#[test]
fn sensors_match_the_cpu_on_terrain() {
    let Some(gpu) = gpu() else { return };
    sensor_parity(gpu);
}

/// Every option (origin policy, unloaded policy, material filter, per-voxel walk) on the
/// sparse world, from poses inside it and inside solid voxels.
#[test]
fn sensors_under_every_option() {
    let Some(gpu) = gpu() else { return };
    let (s, sw) = sparse();
    let gw = gpu.upload_world(sw).expect("upload");
    let rig = SensorRig::cone(48, 80.0, 90.0).expect("cone");
    let on_gpu = gpu.upload_rig(&rig).expect("rig");
    let poses: Vec<SensorPose> = s
        .rays(200, 5)
        .iter()
        .map(|r| {
            let q = Quat::from_rotation_arc(Vec3::NEG_Z, r.direction);
            SensorPose::new(r.origin, r.sub_offset, q)
        })
        .collect();
    for opts in every_option() {
        let what = format!("{opts:?}");
        let g = gpu
            .cast(
                SensorSweep {
                    rig: &on_gpu,
                    poses: &poses,
                    outcomes: true,
                },
                &gw,
                &opts,
            )
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        check_sensors(
            &what,
            &rig,
            &poses,
            &g,
            &sense(&rig, &poses, sw, &opts, true),
        );
    }
}

/// Bad poses (NaN offset, a rotation far from unit, a position that leaves the i128 world)
/// get their error and nothing else breaks; poses outside the window, on its faces and corners
/// (cast from rays built on the host) and on voxel faces inside it are answered as on the CPU.
#[test]
fn bad_poses_and_poses_outside_the_window() {
    let Some(gpu) = gpu() else { return };
    let mut world = voxcast::VoxelWorld::new();
    for x in 0..40 {
        world.set_voxel(WorldPos::new(x, 3, 20), VoxelId(1 + (x % 3) as u16));
        world.set_voxel(WorldPos::new(20, x - 5, 0), VoxelId(2));
    }
    let gw = gpu.upload_world(&world).expect("upload");
    let (lo, hi) = gw.loadable_chunks();
    let rig = SensorRig::lidar(6, 24, 60.0, 80.0).expect("sweep");
    let on_gpu = gpu.upload_rig(&rig).expect("rig");
    let at = |x: i128, y: i128, z: i128, sub: Vec3, yaw: f32| {
        SensorPose::from_yaw_pitch(WorldPos::new(x, y, z), sub, yaw, 0.1)
    };
    let corner = lo.origin();
    let far = hi.origin();
    let poses = vec![
        at(5, 3, 5, Vec3::splat(0.5), 0.0),
        at(5, 3, 5, Vec3::NAN, 0.0),
        SensorPose::new(
            WorldPos::new(5, 3, 5),
            Vec3::ZERO,
            Quat::from_xyzw(0.0, 0.0, 0.5, 0.5),
        ),
        at(i128::MAX, 3, 5, Vec3::new(2.0, 0.5, 0.5), 0.0),
        // On the window's low faces and corner (a ray going down starts outside it).
        at(corner.x, corner.y, corner.z, Vec3::ZERO, 2.0),
        at(corner.x, 3, 5, Vec3::new(0.0, 0.5, 0.5), 1.0),
        // Outside the window, far and near.
        at(-500, 3, 20, Vec3::splat(0.25), -1.2),
        at(far.x + 40, far.y + 31, far.z, Vec3::splat(0.75), 3.0),
        at(10, -40, 10, Vec3::splat(0.5), 0.5),
        // Inside, on voxel faces and edges.
        at(7, 3, 19, Vec3::new(0.0, 0.0, 0.5), 0.3),
        at(20, 2, 1, Vec3::ZERO, 4.0),
    ];
    for hits in [false, true] {
        let opts = RaycastOptions::default();
        let g = gpu
            .cast(
                SensorSweep {
                    rig: &on_gpu,
                    poses: &poses,
                    outcomes: hits,
                },
                &gw,
                &opts,
            )
            .expect("sense");
        let c = sense(&rig, &poses, &world, &opts, hits);
        check_sensors(&format!("hits {hits}"), &rig, &poses, &g, &c);
        assert_eq!(
            g.get(1, 0),
            Some(SensorReading::Invalid(RayError::NonFiniteSubOffset))
        );
        assert_eq!(
            g.get(2, 7),
            Some(SensorReading::Invalid(RayError::BadRotation))
        );
        assert_eq!(
            g.get(3, 0),
            Some(SensorReading::Invalid(RayError::OriginOutOfRange))
        );
        assert!(
            g.agent(0).iter().any(|w| w.is_finite()),
            "the sweep sees the walls"
        );
    }
    // No agents, and an empty rig: empty readings.
    let empty = gpu.cast(
        SensorSweep {
            rig: &on_gpu,
            poses: &[],
            outcomes: false,
        },
        &gw,
        &RaycastOptions::default(),
    );
    assert_eq!(empty.map(|r| r.agents()), Ok(0));
    let none = SensorRig::new(&[]).expect("an empty rig");
    let none_gpu = gpu.upload_rig(&none).expect("rig");
    let r = gpu
        .cast(
            SensorSweep {
                rig: &none_gpu,
                poses: &poses,
                outcomes: false,
            },
            &gw,
            &RaycastOptions::default(),
        )
        .expect("sense");
    assert_eq!((r.agents(), r.rays_per_agent()), (poses.len(), 0));
    assert_eq!(r.errors().count(), 3);
}

/// Batches of many dispatches, each of whole agents (a dispatch size that is no multiple of the
/// rig's rays, and one below it), give the same readings; the words come back 4 bytes a ray
/// and the poses go up 32 bytes an agent.
#[test]
fn dispatches_take_whole_agents() {
    let Some(mut gpu) = own_gpu() else { return };
    let (t, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload");
    let rig = SensorRig::cone(64, 30.0, 32.0).expect("cone");
    let on_gpu = gpu.upload_rig(&rig).expect("rig");
    let poses = terrain_poses(t, 2_000, 12);
    let opts = RaycastOptions::default();
    let cpu = sense(&rig, &poses, tw, &opts, false);
    let sweep = SensorSweep {
        rig: &on_gpu,
        poses: &poses,
        outcomes: false,
    };
    let mut g = SensorReadings::default();
    let stats = gpu.cast_into(sweep, &gw, &opts, &mut g).expect("sense");
    check_sensors("one dispatch", &rig, &poses, &g, &cpu);
    assert_eq!(stats.gpu_rays, 2_000 * 64);
    assert!(
        stats.bytes_up <= 2_000 * 32 + 512 * u64::from(stats.dispatches),
        "{stats:?}"
    );
    assert_eq!(stats.bytes_down, 2_000 * 64 * 4, "{stats:?}");
    for per_dispatch in [1_000, 40] {
        gpu.set_max_dispatch_rays(per_dispatch);
        let stats = gpu.cast_into(sweep, &gw, &opts, &mut g).expect("sense");
        check_sensors(
            &format!("dispatches of {per_dispatch}"),
            &rig,
            &poses,
            &g,
            &cpu,
        );
        let expected = 2_000u32.div_ceil((per_dispatch / 64).max(1));
        assert_eq!(stats.dispatches, expected);
    }
}

/// In a window that follows a player, poses inside the window are answered by the shader as
/// the CPU answers on the window's chunks; after a move, again.
#[test]
fn sensors_in_a_window_that_follows() {
    let Some(gpu) = gpu() else { return };
    let (t, tw) = terrain();
    let poses = terrain_poses(t, 400, 31);
    let rig = SensorRig::whiskers(8, 150.0, 24.0).expect("whiskers");
    let on_gpu = gpu.upload_rig(&rig).expect("rig");
    let mut gw = gpu
        .upload_window(tw, ChunkPos::new(2, 1, 2), [2, 2, 2])
        .expect("window");
    // Every ray of every pose, as `SensorPose::ray` makes it (a bad pose's rays: any ray, as
    // their answers are errors on both sides).
    let rays: Vec<voxcast::VoxelRay> = poses
        .iter()
        .flat_map(|p| {
            let rig = &rig;
            (0..rig.len()).map(move |k| p.ray(rig, k))
        })
        .map(|r| {
            r.unwrap_or(
                voxcast::VoxelRay::new(WorldPos::ZERO, Vec3::ZERO, Vec3::X, 0.0).expect("a ray"),
            )
        })
        .collect();
    let mut left = 0;
    for center in [ChunkPos::new(2, 1, 2), ChunkPos::new(5, 1, 4)] {
        gw.recenter(tw, center).expect("move");
        for opts in every_option().into_iter().take(4) {
            let what = format!("center {center:?}, {opts:?}");
            let g = gpu
                .cast(
                    SensorSweep {
                        rig: &on_gpu,
                        poses: &poses,
                        outcomes: true,
                    },
                    &gw,
                    &opts,
                )
                .expect("sense");
            let outcomes = g.outcomes().expect("asked for");
            left += check_window_edge(&what, &gw, tw, &rays, outcomes, |w, held| {
                let (w, o) = window_cpu(&gw, w, tw, held, &opts);
                sense(&rig, &poses, &w, &o, true)
                    .outcomes()
                    .expect("asked for")
                    .to_vec()
            });
            // The words say the same: a ray that left the window reads as unloaded there.
            for (i, o) in outcomes.iter().enumerate() {
                if let voxcast::RaycastOutcome::Unloaded { distance, .. } = o {
                    assert_eq!(
                        g.distances()[i].to_bits(),
                        (-distance).to_bits(),
                        "{what}: ray {i}"
                    );
                }
            }
        }
    }
    assert!(
        left > 100,
        "the rays must leave the window to test it: {left}"
    );
}

/// The non-blocking form gives the blocking form's readings; a rig from another raycaster is
/// an error.
#[test]
fn submitted_sensors_and_a_rig_of_another_raycaster() {
    let Some(gpu) = gpu() else { return };
    let Some(other) = own_gpu() else { return };
    let (t, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload");
    let rig = SensorRig::cone(16, 45.0, 40.0).expect("cone");
    let on_gpu = gpu.upload_rig(&rig).expect("rig");
    let poses = terrain_poses(t, 100, 3);
    let opts = RaycastOptions::default();
    let mut pending = gpu
        .submit(
            SensorSweep {
                rig: &on_gpu,
                poses: &poses,
                outcomes: false,
            },
            &gw,
            &opts,
        )
        .expect("submit");
    let got = loop {
        if let Some(r) = pending.try_take() {
            break r.expect("readings");
        }
        std::thread::yield_now();
    };
    check_sensors(
        "submitted",
        &rig,
        &poses,
        &got,
        &sense(&rig, &poses, tw, &opts, false),
    );
    let foreign = other.upload_rig(&rig).expect("rig");
    assert_eq!(
        gpu.cast(
            SensorSweep {
                rig: &foreign,
                poses: &poses,
                outcomes: false
            },
            &gw,
            &opts
        )
        .err(),
        Some(GpuError::WorldFromAnotherDevice)
    );
}

/// Calls that alternate between two worlds, two rigs and sensors with and without hits on one raycaster,
/// with worlds dropped and uploaded between them: each answer is its own world's (the
/// raycaster reuses what a call binds, so a call must never see an earlier call's buffers).
#[test]
fn calls_alternating_worlds_and_rigs_answer_from_their_own() {
    let Some(gpu) = own_gpu() else { return };
    let (t, tw) = terrain();
    // The terrain with its top layer of the agents' surroundings cleared: other answers.
    let mut cleared = tw.clone();
    let poses = terrain_poses(t, 40, 17);
    for p in &poses {
        let c = p.position;
        for dx in -3..=3 {
            for dz in -3..=3 {
                for dy in -1..=2 {
                    cleared.set_voxel(WorldPos::new(c.x + dx, c.y + dy, c.z + dz), VoxelId::AIR);
                }
            }
        }
    }
    let opts = RaycastOptions::default();
    let rigs = [
        SensorRig::cone(64, 30.0, 32.0).expect("a cone"),
        SensorRig::whiskers(8, 120.0, 6.0).expect("whiskers"),
    ];
    let gpu_rigs = rigs.each_ref().map(|r| gpu.upload_rig(r).expect("rig"));
    let rays = t.reach_rays(3_000, 21);
    let mut gw = [
        gpu.upload_world(tw).expect("upload"),
        gpu.upload_world(&cleared).expect("upload"),
    ];
    let worlds = [tw, &cleared];
    // The worlds answer differently: a call bound to the other world's buffers would show.
    for rig in &rigs {
        let [a, b] = worlds.map(|w| sense(rig, &poses, w, &opts, false));
        assert!(!a.matches(&b), "the clearing changes what the sensors read");
    }
    for round in 0..6 {
        let w = round % 2;
        let r = (round / 2) % 2;
        let what = format!("round {round}: world {w}, rig {r}");
        let got = gpu
            .cast(
                SensorSweep {
                    rig: &gpu_rigs[r],
                    poses: &poses,
                    outcomes: round % 3 == 0,
                },
                &gw[w],
                &opts,
            )
            .expect("sense");
        let cpu = sense(&rigs[r], &poses, worlds[w], &opts, round % 3 == 0);
        check_sensors(&what, &rigs[r], &poses, &got, &cpu);
        check(&gpu, &what, worlds[w], &gw[w], &rays, &opts);
        if round == 3 {
            // A world dropped and uploaded again: new buffers where the old ones were.
            gw[0] = gpu.upload_world(tw).expect("upload");
        }
    }
}
