//! Box casts on the GPU against the CPU reference, cast by cast: the terrain and adversarial
//! casts under every option, the i128 edge (`voxcast_testkit::gpu::box_parity`, also run on
//! every spec variant by `spec_variants.rs`), a window that follows a center, the
//! non-blocking form, bad casts and casts far from the window.

#![cfg(feature = "gpu")]

use voxcast::glam::Vec3;
use voxcast::gpu::BoxCasts;
use voxcast::{
    BoxCast, BoxCastError, BoxCastOutcome, ChunkPos, RaycastOptions, WorldPos, box_cast_batch,
};
use voxcast_testkit::gpu::*;

#[test]
fn gpu_box_casts_equal_the_cpu() {
    let Some(gpu) = gpu() else {
        return;
    };
    box_parity(gpu);
}

#[test]
fn bad_and_far_casts_are_answered_alone() {
    let Some(gpu) = gpu() else {
        return;
    };
    let (_, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload");
    let good = BoxCast::new(
        WorldPos::new(20, 80, 20),
        Vec3::splat(0.5),
        Vec3::new(0.3, 0.9, 0.3),
        Vec3::NEG_Y,
        64.0,
    )
    .expect("valid");
    let mut casts = vec![good; 6];
    casts[1].body.half_extents.y = -1.0;
    casts[2].direction = Vec3::ZERO;
    // Far beyond the window, and at the other end of i128.
    casts[3].body.center = WorldPos::new(1 << 40, 80, 20);
    casts[4].body.center = WorldPos::new(i128::MIN + 100, i128::MIN + 100, 0);
    for opts in every_option() {
        let g = gpu.cast(BoxCasts(&casts), &gw, &opts).expect("box casts");
        let c = box_cast_batch(&casts, tw, &opts);
        for (i, (g, c)) in g.iter().zip(&c).enumerate() {
            assert!(
                same_box_answer(g, c),
                "{opts:?} cast {i}: gpu {g:?}, cpu {c:?}"
            );
        }
        assert_eq!(g[1], BoxCastOutcome::Invalid(BoxCastError::HalfExtents));
        assert!(matches!(
            g[2],
            BoxCastOutcome::Invalid(BoxCastError::Ray(_))
        ));
    }
    // The non-blocking form gives the same answers.
    let opts = RaycastOptions::default();
    let pending = gpu.submit(BoxCasts(&casts), &gw, &opts).expect("submitted");
    let later = pending.wait().expect("answers");
    assert_eq!(later, box_cast_batch(&casts, tw, &opts));
    assert!(matches!(later[0], BoxCastOutcome::Hit(_)), "{:?}", later[0]);
}

/// On a window that follows a center: a box that stays in the window's box of chunks gets the
/// CPU's answer on those chunks; one that touches a voxel outside it is `Unloaded` there,
/// under either policy (the CPU's answer on the held chunks under `Stop`).
#[test]
fn boxes_on_a_following_window() {
    let Some(gpu) = gpu() else {
        return;
    };
    let (t, tw) = terrain();
    let gw = gpu
        .upload_window(tw, ChunkPos::new(3, 1, 3), [1, 1, 1])
        .expect("a window");
    let held = held_world(&gw, tw);
    let mut rays = t.reach_rays(1_500, 80);
    rays.extend(adversarial_rays(WorldPos::new(110, 40, 110), 1_500, 81));
    let casts = boxes_of(&rays, 82);
    let mut left = 0;
    for opts in every_option() {
        let g = gpu.cast(BoxCasts(&casts), &gw, &opts).expect("box casts");
        let (world, cpu_opts) = window_cpu(&gw, &held, tw, true, &opts);
        let on_held = box_cast_batch(&casts, &world, &cpu_opts);
        for (i, (g, c)) in g.iter().zip(&on_held).enumerate() {
            assert!(
                same_box_answer(g, c),
                "{opts:?} cast {i} {:?}: gpu {g:?}, cpu on the window {c:?}",
                casts[i]
            );
            left += usize::from(matches!(g, BoxCastOutcome::Unloaded { .. }));
        }
    }
    assert!(
        left > 1_000,
        "only {left} answers reached the window's edge"
    );
}

/// On a software rasteriser (lavapipe in CI) a cast that would loop past the driver's budget
/// fails the batch with `BoxCastTooLong` instead of answering wrongly; on other devices it is
/// answered as the CPU answers it.
#[test]
fn a_cast_too_long_for_llvmpipe_says_so() {
    let Some(gpu) = gpu() else {
        return;
    };
    let (_, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload");
    // The largest box sweeping 200 voxels over the terrain: thousands of layers of 17 x 17.
    let long = BoxCast::new(
        WorldPos::new(10, 80, 10),
        Vec3::splat(0.5),
        Vec3::splat(8.0),
        Vec3::new(1.0, 0.0, 1.0),
        200.0,
    )
    .expect("valid");
    let opts = RaycastOptions::default();
    let got = gpu.cast(BoxCasts(&[long]), &gw, &opts);
    if gpu.adapter_info().device_type == voxcast::gpu::wgpu::DeviceType::Cpu {
        assert!(
            matches!(got, Err(voxcast::gpu::GpuError::BoxCastTooLong)),
            "{got:?}"
        );
    } else {
        let got = got.expect("answered");
        assert!(same_box_answer(
            &got[0],
            &box_cast_batch(&[long], tw, &opts)[0]
        ));
    }
}
