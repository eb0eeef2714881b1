//! Sweeps: rays from one point cast together (a plain batch's runs of rays from one eye, every
//! sensor rig) must answer exactly as each ray cast alone, bit for bit, whatever the order of
//! the rays, the world, its place in the i128 world, the options and the edits between casts.

use voxcast_testkit::common;

use common::{ORIGIN_POLICIES, offset, opts, sparse_regions_world};
use voxcast::glam::{Quat, Vec3};
use voxcast::{
    Camera, MaterialFilter, RaycastOptions, RaycastOutcome, SensorPose, SensorRig, UnloadedPolicy,
    VoxelId, VoxelRay, VoxelWorld, WorldPos, raycast_batch, raycast_batch_serial_into, sense,
    voxel_raycast_with,
};
use voxcast_testkit::scene::{SplitMix64, Terrain};

/// Asserts that the batch, and the batch on this thread alone, answer each ray as casting it
/// alone does; returns the hits.
fn assert_batch_parity(rays: &[VoxelRay], world: &VoxelWorld, o: &RaycastOptions) -> usize {
    let got = raycast_batch(rays, world, o);
    assert_eq!(got.len(), rays.len());
    let mut serial = vec![RaycastOutcome::Miss; 3];
    raycast_batch_serial_into(rays, world, o, &mut serial);
    assert!(serial == got, "the serial batch differs under {o:?}");
    for (i, (g, r)) in got.iter().zip(rays).enumerate() {
        assert_eq!(
            *g,
            voxel_raycast_with(r, world, o),
            "ray {i} {r:?} under {o:?}"
        );
    }
    got.iter().filter(|o| o.hit().is_some()).count()
}

/// Every option that changes which path a ray takes.
fn every_path() -> Vec<RaycastOptions> {
    vec![
        RaycastOptions::default(),
        opts(ORIGIN_POLICIES[1], UnloadedPolicy::Air),
        opts(ORIGIN_POLICIES[2], UnloadedPolicy::Stop),
        RaycastOptions {
            blocks: MaterialFilter::only(&[VoxelId(1)]),
            ..RaycastOptions::default()
        },
        RaycastOptions {
            per_voxel: true,
            ..RaycastOptions::default()
        },
    ]
}

fn shuffle<T>(v: &mut [T], rng: &mut SplitMix64) {
    for i in (1..v.len()).rev() {
        v.swap(i, rng.below(i as u64 + 1) as usize);
    }
}

#[test]
fn a_camera_given_as_a_plain_batch_equals_its_rays_cast_alone() {
    let t = Terrain {
        size: [256, 128, 256],
        seed: 7,
    };
    let mut world = t.build();
    let ground = t.height(128, 32).max(t.sea_level());
    let eye = WorldPos::new(128, (ground + 40).into(), 32);
    let cam = Camera::new(
        eye,
        Vec3::splat(0.5),
        Vec3::new(0.15, -0.28, 1.0),
        60.0,
        203,
        117,
        1024.0,
    )
    .expect("valid camera");
    let mut rays = cam.rays().expect("valid rays");
    let hits = assert_batch_parity(&rays, &world, &RaycastOptions::default());
    assert!(hits > rays.len() / 3, "the camera sees the ground: {hits}");
    // Out of pixel order; with bad rays and rays from elsewhere between runs of the eye's.
    let mut rng = SplitMix64::new(11);
    shuffle(&mut rays, &mut rng);
    rays[500].direction = Vec3::NAN;
    rays[501].max_distance = -1.0;
    rays[7000].origin.x += 3;
    rays[7001].origin.x += 3;
    for o in every_path() {
        assert_batch_parity(&rays[..9000], &world, &o);
    }
    // An edit where the eye looks, then the same batch again.
    let (block, _) = cam
        .ray(100, 58)
        .expect("valid")
        .point_at(20.0)
        .expect("in the world");
    world.set_voxel(block, VoxelId(9));
    assert_batch_parity(&rays, &world, &RaycastOptions::default());
}

#[test]
fn runs_from_one_eye_at_i128_offsets_equal_rays_cast_alone() {
    let mut rng = SplitMix64::new(0x5EE9);
    for case in 0..24u64 {
        let (base, world) = sparse_regions_world(case);
        // Runs of rays from a few eyes, one after another, in random or grid-like directions,
        // with a ray from elsewhere now and then. Each eye's y is within a voxel of a chunk
        // edge (the last one's of a region edge, up to the i128 world's lowest region), its x
        // too for the last one.
        let mut rays = Vec::new();
        for eye in 0..3 {
            let near_edge = |v: i128, edge: i128| ((v + edge - 1) & !(edge - 1)) - 1;
            let y = near_edge(base.y + [0, 32, 128][eye], [32, 32, 128][eye]);
            let x = if eye == 2 {
                near_edge(base.x, 32)
            } else {
                base.x + rng.below(64) as i128 - 8
            };
            let at = WorldPos::new(
                x + rng.below(3) as i128,
                y + rng.below(3) as i128,
                base.z + rng.below(64) as i128 - 8,
            );
            let sub = Vec3::new(0.5, [0.0, 0.25, 0.999][eye], 0.125);
            let max = [60.0, 300.0, f32::INFINITY][(case % 3) as usize];
            for k in 0..300 + rng.below(500) {
                let direction = if eye == 1 {
                    let (u, v) = ((k % 20) as f32 - 10.0, (k / 20) as f32 - 10.0);
                    Vec3::new(u * 0.03, -1.0, v * 0.03 + 0.2)
                } else {
                    rng.unit_vector()
                };
                rays.push(VoxelRay {
                    origin: at,
                    sub_offset: sub,
                    direction,
                    max_distance: max,
                });
                if rng.below(100) == 0 {
                    rays.push(VoxelRay {
                        origin: offset(at, [1, 0, 0]),
                        ..*rays.last().expect("a ray")
                    });
                }
            }
        }
        for o in every_path() {
            assert_batch_parity(&rays, &world, &o);
        }
    }
}

#[test]
fn sensor_rigs_equal_their_rays_cast_alone() {
    let t = Terrain {
        size: [192, 96, 192],
        seed: 5,
    };
    let mut world = t.build();
    let mut rng = SplitMix64::new(0x516);
    let rigs = [
        SensorRig::lidar(32, 600, 30.0, 120.0).expect("a rig"),
        SensorRig::cone(700, 40.0, 80.0).expect("a rig"),
        SensorRig::new(
            &(0..5000)
                .map(|_| (rng.unit_vector(), 50.0))
                .collect::<Vec<_>>(),
        )
        .expect("a rig"),
    ];
    let mut poses: Vec<SensorPose> = (0..4)
        .map(|k| {
            let (x, z) = (30 + 40 * k, 150 - 30 * k);
            let ground = t.height(x as i64, z as i64).max(t.sea_level());
            SensorPose::new(
                WorldPos::new(x, i128::from(ground) + 2, z),
                Vec3::new(0.25, 0.5, 0.75),
                Quat::from_rotation_y(k as f32 * 0.7) * Quat::from_rotation_x(-0.2),
            )
        })
        .collect();
    // A pose inside the ground, and a bad one.
    poses.push(SensorPose::new(
        WorldPos::new(60, 3, 60),
        Vec3::ZERO,
        Quat::IDENTITY,
    ));
    poses.push(SensorPose::new(
        WorldPos::ZERO,
        Vec3::ZERO,
        Quat::from_xyzw(0.0, 0.0, 0.0, 0.0),
    ));
    let check = |world: &VoxelWorld, poses: &[SensorPose], paths: &[RaycastOptions]| {
        for rig in &rigs {
            for o in paths {
                let o = o.clone();
                let got = sense(rig, poses, world, &o, true);
                let outcomes = got.outcomes().expect("outcomes kept");
                for (a, pose) in poses.iter().enumerate() {
                    for k in 0..rig.len() {
                        let want = match pose.ray(rig, k) {
                            Ok(r) => voxel_raycast_with(&r, world, &o),
                            Err(e) => RaycastOutcome::Invalid(e),
                        };
                        assert_eq!(
                            outcomes[a * rig.len() + k],
                            want,
                            "agent {a} ray {k} under {o:?}"
                        );
                    }
                }
                // Distances alone come from the same casts.
                let words = sense(rig, poses, world, &o, false);
                assert_eq!(words.distances().len(), got.distances().len());
                for (w, g) in words.distances().iter().zip(got.distances()) {
                    assert_eq!(w.to_bits(), g.to_bits());
                }
            }
        }
    };
    check(&world, &poses, &every_path());
    // Edits between sweeps: a wall in front of the first agent, then gone again.
    let p = poses[0]
        .ray(&rigs[0], 0)
        .expect("valid")
        .point_at(6.0)
        .expect("in the world")
        .0;
    let wall = |world: &mut VoxelWorld, id: VoxelId| {
        for dy in -3..4 {
            for dx in -3..4 {
                world.set_voxel(offset(p, [dx, dy, 0]), id);
            }
        }
    };
    wall(&mut world, VoxelId(4));
    check(&world, &poses, &every_path());
    wall(&mut world, VoxelId::AIR);
    check(&world, &poses, &every_path()[..1]);
    // Far out in the i128 world, up to its edge: each pose on the low face of a chunk (y a
    // multiple of 32, sub-offset 0 there).
    for case in [2, 3] {
        let (base, world) = sparse_regions_world(case);
        let poses: Vec<SensorPose> = [[20, 31, 20], [32, 128, 40], [63, 96, 0]]
            .iter()
            .map(|&d| {
                let p = offset(base, d);
                SensorPose::new(
                    WorldPos::new(p.x, (p.y + 31) & !31, p.z),
                    Vec3::new(0.5, 0.0, 0.25),
                    Quat::from_rotation_y(d[0] as f32 * 0.1),
                )
            })
            .collect();
        check(&world, &poses, &every_path()[..2]);
    }
}

/// A batch finds the chunks its rays enter in a table of the occupied bounds and walks on from
/// dense chunk to dense chunk in one loop: long rays from anywhere, in every direction, through
/// dense chunks of sparse and of packed voxels, chunks of one solid id, chunks of air and
/// unloaded chunks inside the bounds, past shaped voxels, near the i128 world's edges, must
/// answer as each ray cast alone (which looks every chunk up by its position).
#[test]
fn long_rays_of_a_batch_through_every_kind_of_chunk_equal_rays_cast_alone() {
    use voxcast::{CHUNK_EDGE, Chunk, ChunkPos, LocalPos};
    for (case, base) in [
        ChunkPos::new(-2, -1, -3),
        ChunkPos::new(1 << 90, -(1 << 100), 7),
        ChunkPos::new(
            ChunkPos::MAX_INDEX - 3,
            ChunkPos::MIN_INDEX,
            ChunkPos::MAX_INDEX - 3,
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let mut rng = SplitMix64::new(40 + case as u64);
        let mut world = VoxelWorld::new();
        for (k, c) in (0..4 * 3 * 4).map(|k| (k, [k % 4, k / 4 % 3, k / 12])) {
            let pos = ChunkPos::new(base.x + c[0], base.y + c[1], base.z + c[2]);
            // Sparse, packed and striped dense chunks, one solid id, air, or not loaded.
            let density = [0.002, 0.01, 0.05][k as usize % 3];
            let chunk = match rng.below(8) {
                0 => Chunk::from_fn(|_| VoxelId(1 + k as u16 % 3)),
                1 => Chunk::from_fn(|_| VoxelId(0)),
                2 => continue,
                3 => Chunk::from_fn(|p: LocalPos| VoxelId(u16::from(p.y % 7 == 3) * 2)),
                _ => {
                    let threshold = (density * f64::from(u32::MAX)) as u64;
                    Chunk::from_fn(|_| {
                        let r = rng.next_u64();
                        VoxelId(if r & 0xFFFF_FFFF < threshold {
                            1 + (r >> 40) as u16 % 3
                        } else {
                            0
                        })
                    })
                }
            };
            world.insert_chunk(pos, chunk).expect("in the world");
        }
        // Shaped ids that rays pass beside: a bottom slab and a thin post (a ray that passes
        // one steps on, maybe into another chunk than the one its walk began in).
        let shape = |b: &[([u8; 3], [u8; 3])]| {
            voxcast::BlockShape::Boxes(
                b.iter()
                    .map(|&(lo, hi)| voxcast::ShapeBox::new(lo, hi).expect("a valid box"))
                    .collect(),
            )
        };
        world
            .set_shape(VoxelId(2), &shape(&[([0, 0, 0], [16, 8, 16])]))
            .expect("a valid shape");
        world
            .set_shape(VoxelId(3), &shape(&[([6, 0, 6], [10, 16, 10])]))
            .expect("a valid shape");
        let edge = CHUNK_EDGE;
        let corner = WorldPos::new(base.x * edge, base.y * edge, base.z * edge);
        // Starts up to 20 voxels outside the chunks, except at the i128 world's edges.
        let margin: i128 = if case == 2 { 0 } else { 20 };
        let rays: Vec<VoxelRay> = (0..3000)
            .map(|_| {
                let at = [4 * edge, 3 * edge, 4 * edge]
                    .map(|e| rng.below((e + 2 * margin) as u64) as i128 - margin);
                VoxelRay {
                    origin: offset(corner, at),
                    sub_offset: Vec3::new(rng.next_f32(), rng.next_f32(), rng.next_f32()),
                    direction: rng.unit_vector(),
                    max_distance: [300.0, 100.0, 40.0][rng.below(3) as usize],
                }
            })
            .collect();
        for o in every_path() {
            assert_batch_parity(&rays, &world, &o);
        }
        // Runs from one eye, swept.
        let eye = offset(corner, [64, 40, 64]);
        let run: Vec<VoxelRay> = rays
            .iter()
            .map(|r| VoxelRay {
                origin: eye,
                sub_offset: Vec3::splat(0.5),
                ..*r
            })
            .collect();
        assert!(
            assert_batch_parity(&run, &world, &RaycastOptions::default()) > 100,
            "the eye sees voxels"
        );
    }
}
