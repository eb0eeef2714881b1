//! A program that uses the GPU and returns from `main` ends cleanly: dropping the last handle
//! of a raycaster ends every use of the device (its courier thread is joined), so the exit
//! handlers that unload the Vulkan driver find nothing running. The program below runs as a
//! child process 100 times ([`voxcast_testkit::gpu::exits_cleanly`]); every run must exit
//! with status 0.
//!
//! A test binary of its own (`harness = false` in `Cargo.toml`): `main` is the parent, and the
//! same binary with `VOXCAST_EXIT_CHILD=1` is the child program.

use voxcast::gpu::GpuRaycaster;
use voxcast::gpu::{GpuConfig, Rays};
use voxcast::{RaycastOptions, VoxelId, VoxelRay, VoxelWorld, WorldPos, glam::Vec3};

/// Twice a raycaster, a small world and a batch of 1,000 rays, all dropped, then a return from
/// `main`.
fn program() {
    for _ in 0..2 {
        let gpu = GpuRaycaster::new_blocking(GpuConfig::default())
            .expect("the parent checked for an adapter");
        let mut world = VoxelWorld::new();
        world.set_voxel(WorldPos::new(5, 0, 0), VoxelId(1));
        let gpu_world = gpu.upload_world(&world).expect("a small world uploads");
        let ray =
            VoxelRay::new(WorldPos::ZERO, Vec3::splat(0.5), Vec3::X, 32.0).expect("a valid ray");
        let answers = gpu
            .cast(
                Rays(&vec![ray; 1000]),
                &gpu_world,
                &RaycastOptions::default(),
            )
            .expect("the batch is answered");
        assert!(answers.iter().all(|a| a.hit().is_some()), "every ray hits");
    }
}

fn main() {
    voxcast_testkit::gpu::exits_cleanly(100, program);
}
