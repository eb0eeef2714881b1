//! `raycast_camera` on the CPU: every pixel's outcome must equal `voxel_raycast_with` of that
//! pixel's `Camera::ray`, bit for bit, whatever the world, the camera and the options, while
//! the tiles cross open air together.

use voxcast_testkit::common;

use common::{ORIGIN_POLICIES, offset, opts, random_solids, sparse_regions_world, world_with};
use voxcast::glam::Vec3;
use voxcast::{
    Camera, CameraError, CameraSpec, MaterialFilter, RayError, RaycastOptions, RaycastOutcome,
    UnloadedPolicy, VoxelId, VoxelWorld, WorldPos, raycast_camera, raycast_camera_into,
    raycast_camera_rows_into, voxel_raycast_with,
};
use voxcast_testkit::scene::{SplitMix64, Terrain};

/// Every pixel of `camera` cast one by one.
fn one_by_one(camera: &Camera, world: &VoxelWorld, o: &RaycastOptions) -> Vec<RaycastOutcome> {
    (0..camera.height)
        .flat_map(|py| (0..camera.width).map(move |px| (px, py)))
        .map(|(px, py)| match camera.ray(px, py) {
            Ok(r) => voxel_raycast_with(&r, world, o),
            Err(e) => RaycastOutcome::Invalid(e),
        })
        .collect()
}

/// Asserts that the image equals the pixels cast one by one, naming the first pixel that
/// differs; returns how many pixels hit something.
fn assert_camera_parity(camera: &Camera, world: &VoxelWorld, o: &RaycastOptions) -> usize {
    let want = one_by_one(camera, world, o);
    let got = raycast_camera(camera, world, o).expect("the image fits in memory");
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let (px, py) = (i as u32 % camera.width, i as u32 / camera.width);
        assert_eq!(
            g,
            w,
            "pixel ({px}, {py}) of {camera:?} under {o:?}: ray {:?}",
            camera.ray(px, py)
        );
    }
    want.iter().filter(|o| o.hit().is_some()).count()
}

#[test]
fn the_terrain_image_equals_its_pixels_cast_one_by_one() {
    let t = Terrain {
        size: [256, 128, 256],
        seed: 7,
    };
    let world = t.build();
    // A camera over the terrain looking across it and down, as W3's; an image whose sides
    // are not multiples of the tile edge.
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
    let hits = assert_camera_parity(&cam, &world, &RaycastOptions::default());
    assert!(
        hits > 203 * 117 / 3,
        "the camera sees the ground: {hits} hits"
    );
    // Every option that changes which path a ray takes.
    let filter = MaterialFilter::only(&[VoxelId(1)]);
    for o in [
        opts(ORIGIN_POLICIES[1], UnloadedPolicy::Air),
        opts(ORIGIN_POLICIES[2], UnloadedPolicy::Stop),
        RaycastOptions {
            blocks: filter,
            ..RaycastOptions::default()
        },
        RaycastOptions {
            per_voxel: true,
            ..RaycastOptions::default()
        },
    ] {
        assert_camera_parity(&cam.with_size(64, 40), &world, &o);
    }
}

/// `camera` with another image size (the same view).
trait WithSize {
    fn with_size(&self, width: u32, height: u32) -> Camera;
}

impl WithSize for Camera {
    fn with_size(&self, width: u32, height: u32) -> Camera {
        Camera::with_up(
            self.position,
            self.sub_offset,
            self.forward,
            self.up,
            60.0,
            width,
            height,
            self.max_distance,
        )
        .expect("valid camera")
    }
}

#[test]
fn random_worlds_and_cameras_match_pixel_by_pixel() {
    let mut rng = SplitMix64::new(0xCA3E);
    for case in 0..40u64 {
        let (base, world) = sparse_regions_world(case);
        let eye = offset(
            base,
            [
                rng.below(120) as i128 - 20,
                rng.below(260) as i128 - 20,
                rng.below(120) as i128 - 20,
            ],
        );
        let sub = Vec3::new(rng.next_f32(), rng.next_f32(), rng.next_f32());
        let fov = 10.0 + 150.0 * rng.next_f32();
        let (w, h) = (1 + rng.below(40) as u32, 1 + rng.below(30) as u32);
        let max = [8.0, 64.0, 300.0, 2000.0][rng.below(4) as usize];
        let Ok(cam) = Camera::new(eye, sub, rng.unit_vector(), fov, w, h, max) else {
            continue;
        };
        for o in ORIGIN_POLICIES.map(|p| opts(p, UnloadedPolicy::Air)) {
            assert_camera_parity(&cam, &world, &o);
        }
        assert_camera_parity(
            &cam,
            &world,
            &opts(ORIGIN_POLICIES[0], UnloadedPolicy::Stop),
        );
    }
}

#[test]
fn a_camera_in_a_solid_voxel_follows_each_origin_policy() {
    let mut solids = random_solids(3, WorldPos::new(0, 0, 0), 32, 0.3, 2);
    solids.push((WorldPos::new(10, 10, 10), VoxelId(5)));
    let world = world_with(&solids);
    let cam = Camera::new(
        WorldPos::new(10, 10, 10),
        Vec3::splat(0.25),
        Vec3::new(1.0, 0.2, 0.3),
        90.0,
        24,
        16,
        100.0,
    )
    .expect("valid camera");
    for o in ORIGIN_POLICIES.map(|p| opts(p, UnloadedPolicy::Air)) {
        let hits = assert_camera_parity(&cam, &world, &o);
        assert!(hits > 0);
    }
    let image = raycast_camera(&cam, &world, &RaycastOptions::default()).expect("fits");
    assert!(
        image.iter().all(|o| o
            .hit()
            .is_some_and(|h| h.distance == 0.0 && h.voxel_type == VoxelId(5))),
        "under Report every pixel hits the eye's voxel"
    );
}

#[test]
fn an_edit_shows_in_the_next_image() {
    let t = Terrain {
        size: [128, 64, 128],
        seed: 3,
    };
    let mut world = t.build();
    let ground = t.height(64, 8).max(t.sea_level());
    let eye = WorldPos::new(64, (ground + 20).into(), 8);
    let cam = Camera::new(
        eye,
        Vec3::splat(0.5),
        Vec3::new(0.0, -0.2, 1.0),
        50.0,
        32,
        24,
        500.0,
    )
    .expect("valid camera");
    let o = RaycastOptions::default();
    assert_camera_parity(&cam, &world, &o);
    // A block in the open air the center pixel looks through, then gone again.
    let r = cam.ray(16, 12).expect("valid ray");
    let (block, _) = r.point_at(12.0).expect("in the world");
    world.set_voxel(block, VoxelId(9));
    assert_camera_parity(&cam, &world, &o);
    let center = raycast_camera(&cam, &world, &o).expect("fits")[12 * 32 + 16];
    assert_eq!(center.hit().map(|h| h.voxel_pos), Some(block));
    world.set_voxel(block, VoxelId::AIR);
    assert_camera_parity(&cam, &world, &o);
}

#[test]
fn bands_of_rows_make_the_same_image() {
    let world = Terrain {
        size: [128, 64, 128],
        seed: 5,
    }
    .build();
    let cam = Camera::new(
        WorldPos::new(60, 70, 4),
        Vec3::splat(0.5),
        Vec3::new(0.1, -0.4, 1.0),
        70.0,
        30,
        21,
        400.0,
    )
    .expect("valid camera");
    let o = RaycastOptions::default();
    let whole = raycast_camera(&cam, &world, &o).expect("fits");
    let mut out = Vec::new();
    for band in [1u32, 5, 8, 16] {
        let mut image = Vec::new();
        for first in (0..cam.height).step_by(band as usize) {
            raycast_camera_rows_into(
                &cam,
                first..(first + band).min(cam.height),
                &world,
                &o,
                &mut out,
            )
            .expect("fits");
            image.extend_from_slice(&out);
        }
        assert_eq!(image, whole, "bands of {band} rows");
    }
    // Rows below the image continue its plane, as `Camera::ray` does.
    raycast_camera_rows_into(&cam, 21..25, &world, &o, &mut out).expect("fits");
    assert_eq!(out.len(), 4 * 30);
    for (i, got) in out.iter().enumerate() {
        let (px, py) = (i as u32 % 30, 21 + i as u32 / 30);
        let want = voxel_raycast_with(&cam.ray(px, py).expect("valid ray"), &world, &o);
        assert_eq!(*got, want, "pixel ({px}, {py})");
    }
    raycast_camera_rows_into(&cam, 7..7, &world, &o, &mut out).expect("fits");
    assert!(out.is_empty());
    raycast_camera_into(&cam, &world, &o, &mut out).expect("fits");
    assert_eq!(out, whole);
}

#[test]
fn hand_edited_cameras_give_errors_not_panics() {
    let world = world_with(&[(WorldPos::new(5, 0, 0), VoxelId(1))]);
    let good = Camera::new(
        WorldPos::new(0, 0, 0),
        Vec3::splat(0.5),
        Vec3::X,
        60.0,
        16,
        9,
        50.0,
    )
    .expect("valid camera");
    let o = RaycastOptions::default();
    // A bad max distance: every pixel invalid, with the error `Camera::ray` gives.
    let bad = Camera {
        max_distance: -1.0,
        ..good
    };
    let image = raycast_camera(&bad, &world, &o).expect("fits");
    assert!(
        image
            .iter()
            .all(|p| *p == RaycastOutcome::Invalid(RayError::NegativeMaxDistance))
    );
    // A NaN in the image plane: the bad pixels invalid, as one by one.
    let nan = Camera {
        right: Vec3::new(f32::NAN, 0.0, 0.0),
        ..good
    };
    assert_camera_parity(&nan, &world, &o);
    // A huge image scale: some directions overflow.
    let wide = Camera {
        scale_x: f32::MAX,
        ..good
    };
    assert_camera_parity(&wide, &world, &o);
    // A tiny image with a field of view of almost 180 degrees and the longest rays: its tile
    // spans nearly a half space of empty regions, and the air search must not ask about
    // millions of them.
    let fisheye = Camera::new(
        WorldPos::new(-300, 0, 0),
        Vec3::splat(0.5),
        Vec3::NEG_X,
        179.0,
        8,
        8,
        voxcast::MAX_DISTANCE_CAP,
    )
    .expect("valid camera");
    assert_camera_parity(&fisheye, &world, &o);
    // An empty image is the error `Camera::new` gives; so is an image too large for memory.
    for (w, h) in [(0, 9), (16, 0)] {
        let empty = Camera {
            width: w,
            height: h,
            ..good
        };
        assert_eq!(
            raycast_camera(&empty, &world, &o),
            Err(CameraError::EmptyImage)
        );
    }
    let huge = Camera {
        width: u32::MAX,
        height: u32::MAX,
        ..good
    };
    let pixels = u64::from(u32::MAX) * u64::from(u32::MAX);
    assert_eq!(
        raycast_camera(&huge, &world, &o),
        Err(CameraError::ImageTooLarge(pixels))
    );
}

/// `CameraSpec` names the parameters of `Camera::with_up`: it builds the same camera, and the
/// same errors; its defaults are those its docs give.
#[test]
fn a_camera_spec_builds_what_with_up_builds() {
    let spec = CameraSpec {
        position: WorldPos::new(-7, 40, 1 << 90),
        sub_offset: Vec3::new(0.25, 0.5, 0.75),
        forward: Vec3::new(0.3, -1.0, 0.2),
        up: Vec3::X,
        fov_y_degrees: 75.0,
        width: 33,
        height: 17,
        max_distance: 300.0,
    };
    let made = Camera::with_up(
        spec.position,
        spec.sub_offset,
        spec.forward,
        spec.up,
        spec.fov_y_degrees,
        spec.width,
        spec.height,
        spec.max_distance,
    );
    assert_eq!(spec.build(), made);
    assert!(made.is_ok());
    let d = CameraSpec::default();
    assert_eq!(
        d.build(),
        Camera::new(
            WorldPos::ZERO,
            Vec3::splat(0.5),
            Vec3::Z,
            60.0,
            1280,
            720,
            1024.0
        )
    );
    for (bad, error) in [
        (CameraSpec { width: 0, ..d }, CameraError::EmptyImage),
        (
            CameraSpec {
                fov_y_degrees: 180.0,
                ..d
            },
            CameraError::FieldOfView,
        ),
        (
            CameraSpec {
                forward: Vec3::Y,
                ..d
            },
            CameraError::VerticalView,
        ),
        (
            CameraSpec {
                up: Vec3::ZERO,
                ..d
            },
            CameraError::InvalidUp,
        ),
    ] {
        assert_eq!(bad.build(), Err(error), "{bad:?}");
    }
}
