//! GPU vs CPU reference, ray by ray (the parity contract in the crate docs). Runs on lavapipe in
//! CI. With `VOXCAST_REQUIRE_GPU=1` a missing adapter fails every test here; without it they
//! skip with a loud message.

#![cfg(feature = "gpu")]

use voxcast::gpu::{CameraImage, CameraRows, Rays, Sightlines};
use voxcast_testkit::common;

use voxcast_testkit::gpu::*;

use voxcast::gpu::{GpuError, GpuRaycaster, GpuWorld};
use voxcast::{
    Camera, ChunkPos, RaycastOptions, UnloadedPolicy, VoxelId, VoxelRay, VoxelWorld, WorldPos,
    glam::Vec3, raycast_batch, raycast_camera_rows_into,
};
use voxcast_testkit::scene::SplitMix64;

#[test]
fn parity_terrain_and_sparse_million_rays() {
    let Some(gpu) = gpu() else { return };
    million_rays(gpu);
}

#[test]
fn parity_every_option() {
    let Some(gpu) = gpu() else { return };
    every_option_with_clipped_rays(gpu);
}

/// Every option and both kinds of line of sight are answered by the shader, not on the host:
/// rays that start inside the window all go to the GPU (only rays that cannot reach it are
/// answered on the host, with the CPU reference's own code, which the parity tests above
/// could not tell from the shader's). A raycaster of the test's own, so that no other test's
/// batch is counted in its stats.
#[test]
fn every_option_is_answered_by_the_shader() {
    let Some(gpu) = own_gpu() else { return };
    let (t, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload terrain");
    let mut rays = t.reach_rays(1_000, 14);
    rays.extend(adversarial_rays(WorldPos::new(100, 40, 90), 1_000, 15));
    let expected = rays.len() as u64;
    for opts in every_option() {
        let stats = check(&gpu, &format!("{opts:?}"), tw, &gw, &rays, &opts);
        assert_eq!(stats.gpu_rays, expected, "{opts:?}");
        for conservative in [false, true] {
            let sight = voxcast::LineOfSightOptions {
                conservative,
                raycast: opts.clone(),
            };
            let what = format!("line of sight conservative={conservative} {opts:?}");
            let mut g = Vec::new();
            let stats = gpu
                .cast_into(Sightlines(&rays), &gw, &sight, &mut g)
                .expect("gpu los");
            assert_eq!(stats.gpu_rays, expected, "{what}");
            let c = voxcast::line_of_sight_batch(&rays, tw, &sight);
            assert_sight_parity(&what, &rays, &g, &c);
        }
    }
}

#[test]
fn parity_line_of_sight_both_modes() {
    let Some(gpu) = gpu() else { return };
    sight_through_ties_and_clipping(gpu);
}

#[test]
fn parity_near_i128_edges_and_negative_coordinates() {
    let Some(gpu) = gpu() else { return };
    near_i128_edges(gpu);
}

/// Adversarial rays in scattered voxels and a filled chunk far out on the negative axes and at
/// the i128 world's corner, under both unloaded policies.
fn near_i128_edges(gpu: &GpuRaycaster) {
    for base in [
        WorldPos::new(-(1 << 126), 1 << 126, -5000),
        WorldPos::new(i128::MAX - 200, i128::MIN + 100, 0),
    ] {
        let mut world = VoxelWorld::new();
        let mut rng = SplitMix64::new(30);
        let base_chunk = base.chunk();
        for _ in 0..3000 {
            let p = WorldPos::new(
                base.x.saturating_add(rng.below(96) as i128 - 48),
                base.y.saturating_add(rng.below(96) as i128 - 48),
                base.z + rng.below(96) as i128 - 48,
            );
            world.set_voxel(p, VoxelId(1 + rng.below(3) as u16));
        }
        world
            .insert_chunk(
                ChunkPos::new(base_chunk.x, base_chunk.y, base_chunk.z + 3),
                voxcast::Chunk::filled(VoxelId(2)),
            )
            .expect("in the world");
        let gw = gpu.upload_world(&world).expect("upload");
        let rays = adversarial_rays(base, 30_000, 31);
        for unloaded in [UnloadedPolicy::Air, UnloadedPolicy::Stop] {
            check(
                gpu,
                &format!("edges {base:?} {unloaded:?}"),
                &world,
                &gw,
                &rays,
                &RaycastOptions {
                    unloaded,
                    ..Default::default()
                },
            );
        }
    }
}

#[test]
fn parity_camera_rays_made_in_the_shader() {
    let Some(gpu) = gpu() else { return };
    camera_images(gpu);
    let (_, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload");
    // More pixels than one batch holds: a clear error before anything is allocated, and the
    // raycaster goes on working (the camera below).
    let (w, h) = (65_536_u32, 65_537_u32);
    let huge = Camera::new(
        WorldPos::new(100, 100, 100),
        Vec3::splat(0.5),
        Vec3::new(1.0, -0.5, 1.0),
        70.0,
        w,
        h,
        64.0,
    )
    .expect("camera");
    let pixels = w as usize * h as usize;
    assert_eq!(
        gpu.cast(CameraImage(&huge), &gw, &RaycastOptions::default())
            .err(),
        Some(GpuError::BatchTooLarge(pixels))
    );
    // A camera outside the window falls back to host rays and still matches.
    let far = Camera::new(
        WorldPos::new(-50, 200, -50),
        Vec3::splat(0.5),
        Vec3::new(1.0, -0.5, 1.0),
        70.0,
        64,
        48,
        1024.0,
    )
    .expect("camera");
    let g = gpu
        .cast(CameraImage(&far), &gw, &RaycastOptions::default())
        .expect("render");
    assert_parity(
        "camera outside window",
        &far.rays().expect("rays"),
        &g,
        &raycast_batch(&far.rays().expect("rays"), tw, &RaycastOptions::default()),
    );
    // An image in bands of rows (`CameraRows`), from the shader and from host rays: each band
    // is those rows of the whole image, and rows past its height continue the image plane as
    // on the CPU.
    let opts = RaycastOptions::default();
    let near = Camera::new(
        WorldPos::new(128, 60, 4),
        Vec3::splat(0.5),
        Vec3::new(0.1, -0.5, 1.0),
        70.0,
        96,
        54,
        512.0,
    )
    .expect("camera");
    for cam in [near, far] {
        let whole = gpu.cast(CameraImage(&cam), &gw, &opts).expect("render");
        let mut bands = Vec::new();
        for rows in [
            0..8,
            8..8,
            8..37,
            37..cam.height,
            cam.height..cam.height + 5,
        ] {
            let band = gpu
                .cast(
                    CameraRows {
                        camera: &cam,
                        rows: rows.clone(),
                    },
                    &gw,
                    &opts,
                )
                .expect("a band");
            let mut cpu = Vec::new();
            raycast_camera_rows_into(&cam, rows.clone(), tw, &opts, &mut cpu).expect("rows");
            let rays: Vec<_> = rows
                .clone()
                .flat_map(|y| (0..cam.width).map(move |x| (x, y)))
                .map(|(x, y)| cam.ray(x, y).expect("a ray"))
                .collect();
            assert_parity(&format!("camera rows {rows:?}"), &rays, &band, &cpu);
            bands.extend(band);
        }
        assert_eq!(bands.len(), whole.len() + 5 * cam.width as usize);
        assert!(bands.iter().zip(&whole).all(|(b, w)| b.matches(w)));
    }
}

/// Issue 5's exactness claim on the GPU: skipping empty chunks and bricks lands on exactly the
/// state voxel-by-voxel stepping reaches, over more than a million rays from every workload and
/// the adversarial set. (The CPU side of the same claim is in tests/skipping.rs.)
#[test]
fn gpu_skipping_equals_per_voxel_stepping() {
    let Some(gpu) = gpu() else { return };
    let (t, tw) = terrain();
    let (s, sw) = sparse();
    let tg = gpu.upload_world(tw).expect("upload terrain");
    let sg = gpu.upload_world(sw).expect("upload sparse");
    let skip = RaycastOptions::default();
    let walk = RaycastOptions {
        per_voxel: true,
        ..Default::default()
    };
    let cam = t.camera(480, 270).rays().expect("camera");
    let sets: [(&str, &VoxelWorld, &GpuWorld, Vec<VoxelRay>); 5] = [
        ("reach", tw, &tg, t.reach_rays(300_000, 60)),
        ("sight", tw, &tg, t.sight_segments(200_000, 64.0, 61)),
        ("camera", tw, &tg, cam),
        ("sparse", sw, &sg, s.rays(350_000, 62)),
        (
            "adversarial",
            tw,
            &tg,
            adversarial_rays(WorldPos::new(128, 48, 128), 60_000, 63),
        ),
    ];
    let mut total = 0;
    for (name, world, gw, rays) in &sets {
        let fast = gpu.cast(Rays(rays), gw, &skip).expect("skipping");
        let slow = gpu.cast(Rays(rays), gw, &walk).expect("per voxel");
        assert_parity(
            &format!("{name}: GPU skipping vs GPU per-voxel"),
            rays,
            &fast,
            &slow,
        );
        // And both equal the CPU reference (which skips by default).
        let cpu = raycast_batch(rays, world, &skip);
        assert_parity(&format!("{name}: GPU per-voxel vs CPU"), rays, &slow, &cpu);
        total += rays.len();
    }
    assert!(total >= 1_000_000, "only {total} rays");
}

/// A window that reaches the edge of the i128 world has no margin there: rays that step off
/// the world end as a miss on the GPU as on the CPU, under `Stop` too, and conservative line of
/// sight skips the voxels beyond the edge, with no overflow or wrapped position anywhere.
#[test]
fn parity_where_the_window_reaches_the_i128_edge() {
    let Some(gpu) = gpu() else { return };
    for (i, base) in [
        WorldPos::new(i128::MAX - 40, i128::MAX - 40, i128::MAX - 40),
        WorldPos::new(i128::MIN, i128::MIN, i128::MIN),
        WorldPos::new(i128::MIN, i128::MAX - 40, 0),
    ]
    .into_iter()
    .enumerate()
    {
        let mut world = VoxelWorld::new();
        let mut rng = SplitMix64::new(50 + i as u64);
        for _ in 0..600 {
            let p = [base.x, base.y, base.z].map(|b| b.saturating_add(rng.below(40) as i128));
            world.set_voxel(WorldPos::from_array(p), VoxelId(1 + rng.below(3) as u16));
        }
        let gw = gpu.upload_world(&world).expect("upload");
        let center = WorldPos::from_array([base.x, base.y, base.z].map(|b| b.saturating_add(20)));
        let mut rays = adversarial_rays(center, 1500, 51 + i as u64);
        // The review's case: along +x (or -x) off the world's edge beside a solid voxel.
        for dir in [
            Vec3::X,
            Vec3::NEG_X,
            Vec3::new(1.0, 1.0, 0.0),
            Vec3::new(-1.0, -1.0, 0.0),
        ] {
            rays.push(common::ray(center, Vec3::splat(0.5), dir, 100.0));
            rays.push(common::ray(center, Vec3::new(0.0, 0.0, 0.5), dir, 100.0));
        }
        check_every_option(gpu, &format!("edge {base:?}"), &world, &gw, &rays);
    }
}

/// Skipping empty bricks whole or stepping through them gives the same answers: each world
/// under both walks, against the CPU, and the choice made from the stored chunks follows their
/// share of air in empty bricks, also after updates and a rebuild.
#[test]
fn both_walks_through_empty_bricks_agree_with_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let (t, tw) = terrain();
    let (s, sw) = sparse();
    let mut tg = gpu.upload_world(tw).expect("upload terrain");
    let mut sg = gpu.upload_world(sw).expect("upload sparse");
    // Terrain keeps much of its air in empty bricks; 1% random solid voxels almost none.
    assert!(tg.skips_empty_bricks(), "terrain: skip empty bricks");
    assert!(!sg.skips_empty_bricks(), "sparse: step through them");
    let mut rng = SplitMix64::new(95);
    let terrain_rays: Vec<VoxelRay> = t
        .reach_rays(20_000, 96)
        .into_iter()
        .map(|r| VoxelRay {
            max_distance: 300.0 * rng.next_f32(),
            ..r
        })
        .collect();
    let sparse_rays = s.rays(20_000, 97);
    for skip in [false, true] {
        tg.set_skip_empty_bricks(Some(skip));
        sg.set_skip_empty_bricks(Some(skip));
        assert_eq!(tg.skips_empty_bricks(), skip);
        assert_eq!(sg.skips_empty_bricks(), skip);
        for opts in every_option() {
            let what = format!("skip empty bricks {skip}, {opts:?}");
            check(
                gpu,
                &format!("terrain, {what}"),
                tw,
                &tg,
                &terrain_rays,
                &opts,
            );
            check(
                gpu,
                &format!("sparse, {what}"),
                sw,
                &sg,
                &sparse_rays,
                &opts,
            );
        }
        let camera = Camera::new(
            WorldPos::new(40, 70, 40),
            Vec3::splat(0.5),
            Vec3::new(1.0, -0.4, 0.8),
            70.0,
            160,
            90,
            400.0,
        )
        .expect("camera");
        let opts = RaycastOptions::default();
        let g = gpu
            .cast(CameraImage(&camera), &tg, &opts)
            .expect("camera on the GPU");
        let rays: Vec<VoxelRay> = (0..90)
            .flat_map(|y| (0..160).map(move |x| (x, y)))
            .map(|(x, y)| camera.ray(x, y).expect("pixel ray"))
            .collect();
        assert_parity(
            &format!("terrain camera, skip empty bricks {skip}"),
            &rays,
            &g,
            &raycast_batch(&rays, tw, &opts),
        );
    }
    // Back to the choice made from the chunks; an update that empties the terrain's upper
    // chunks' solid voxels into scattered ones changes it.
    tg.set_skip_empty_bricks(None);
    assert!(tg.skips_empty_bricks());
    let mut world = tw.clone();
    let mut changed = Vec::new();
    for (pos, chunk) in tw.chunks() {
        if chunk.uniform_id().is_none() {
            let mut c = voxcast::Chunk::filled(VoxelId::AIR);
            let mut r = SplitMix64::new(pos.x as u64 ^ (pos.z as u64) << 20);
            for _ in 0..300 {
                let v = r.next_u64();
                c.set(
                    voxcast::LocalPos::new(
                        (v & 31) as u8,
                        (v >> 5 & 31) as u8,
                        (v >> 10 & 31) as u8,
                    ),
                    VoxelId(1),
                );
            }
            world.insert_chunk(pos, c).expect("chunk in the world");
            changed.push(pos);
        }
    }
    tg.update_chunks(&world, &changed).expect("update");
    assert!(
        !tg.skips_empty_bricks(),
        "scattered voxels after the update"
    );
    check(
        gpu,
        "terrain scattered",
        &world,
        &tg,
        &terrain_rays,
        &RaycastOptions::default(),
    );
    // A setting survives a rebuild.
    tg.set_skip_empty_bricks(Some(true));
    let mut grown = world.clone();
    let far = WorldPos::new(-40, 3, 3);
    grown.set_voxel(far, VoxelId(1));
    assert_eq!(tg.update_or_rebuild(&grown, &[far.chunk()]), Ok(true));
    assert!(tg.skips_empty_bricks(), "the setting survives a rebuild");
    check(
        gpu,
        "rebuilt",
        &grown,
        &tg,
        &terrain_rays,
        &RaycastOptions::default(),
    );
}

#[test]
fn parity_of_rays_given_relative_to_the_window() {
    let Some(gpu) = gpu() else { return };
    window_ray_parity(gpu);
}

/// Rays set up the other way from the shared raycaster's ([`voxcast::gpu::RaySetup`]: in the
/// shader where it sets them up on the host, as on lavapipe, and the other way round) give the
/// CPU reference's answers too: every option with rays clipped into the window, line of sight
/// through ties and clipping, rays relative to the window, rays near the i128 edges, and a
/// batch over several dispatches with rays the host answers among those that go up.
#[test]
fn parity_with_rays_set_up_the_other_way() {
    let Some(mut gpu) = other_setup_gpu() else {
        return;
    };
    every_option_with_clipped_rays(&gpu);
    sight_through_ties_and_clipping(&gpu);
    window_ray_parity(&gpu);
    let (t, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload terrain");
    gpu.set_max_dispatch_rays(3000);
    // Every ray goes up (in the shader setup, each in its own slot in the caller's order).
    let mut inside = t.reach_rays(8_000, 55);
    inside.extend(adversarial_rays(WorldPos::new(100, 40, 90), 2_000, 56));
    let opts = RaycastOptions::default();
    let stats = check(
        &gpu,
        "several dispatches, all uploaded",
        tw,
        &gw,
        &inside,
        &opts,
    );
    assert_eq!(stats.gpu_rays, inside.len() as u64, "{stats:?}");
    assert_eq!(u64::from(stats.dispatches), stats.gpu_rays.div_ceil(3000));
    assert_eq!(stats.bytes_down, 20 * stats.gpu_rays, "{stats:?}");
    // Rays the host answers among them: those go up without them.
    let mut rays = t.reach_rays(8_000, 50);
    rays.extend(adversarial_rays(WorldPos::new(-40, 120, -40), 2_000, 51));
    rays.extend(adversarial_rays(WorldPos::new(100, 40, 90), 2_000, 52));
    let mut rng = SplitMix64::new(53);
    for i in (0..rays.len()).step_by(7) {
        if rng.below(2) == 0 {
            rays[i].max_distance = f32::NAN;
        }
    }
    let stats = check(&gpu, "several dispatches", tw, &gw, &rays, &opts);
    assert!(stats.gpu_rays < rays.len() as u64, "{stats:?}");
    // Only the rays that go up are read back: 20 bytes an answer.
    assert_eq!(stats.bytes_down, 20 * stats.gpu_rays, "{stats:?}");
    near_i128_edges(&gpu);
}

/// Worlds with shapes (`voxcast::BlockShape`): every query against the CPU, answer by answer.
#[test]
fn parity_with_shapes() {
    let Some(gpu) = gpu() else { return };
    shape_parity(gpu, true);
}
