//! An app with the plugin and a `VoxelGpu` ends cleanly when it is dropped, also with a batch
//! of sight requests still on the GPU: the resources' raycaster, world and pending batch end
//! voxcast's use of the device, so a program can return from `main` at once. Run as a child
//! process 100 times ([`voxcast_testkit::gpu::exits_cleanly`]), every run must exit with
//! status 0.
//!
//! A test binary of its own (`harness = false` in `Cargo.toml`): `main` is the parent, and the
//! same binary with `VOXCAST_EXIT_CHILD=1` is the child program.

use bevy_app::App;
use voxcast::glam::Vec3;
use voxcast::gpu::GpuConfig;
use voxcast::gpu::GpuRaycaster;
use voxcast::{VoxelId, VoxelWorld, WorldPos};
use voxcast_bevy::{SightQueue, VoxcastPlugin, VoxelGpu, VoxelPosition, Voxels};

/// Frames of an app with the plugin on the GPU: requests answered, then more submitted and
/// left in flight when the app is dropped and `main` returns.
fn program() {
    let mut world = VoxelWorld::new();
    world.set_voxel(WorldPos::new(5, 0, 0), VoxelId(1));
    let gpu = GpuRaycaster::new_blocking(GpuConfig::default())
        .expect("the parent checked for an adapter");
    let mut app = App::new();
    app.add_plugins(VoxcastPlugin)
        .insert_resource(Voxels::new(world))
        .insert_resource(VoxelGpu::new(gpu));
    let eye = |x: i128| VoxelPosition::new(WorldPos::new(x, 0, 0), Vec3::splat(0.5));
    for _frame in 0..3 {
        let mut queue = app.world_mut().resource_mut::<SightQueue>();
        for i in 0..500 {
            queue.push_segment(eye(0), eye(2 + i % 9));
        }
        app.update();
    }
    drop(app);
}

fn main() {
    voxcast_testkit::gpu::exits_cleanly(100, program);
}
