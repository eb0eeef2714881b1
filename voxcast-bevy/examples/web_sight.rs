//! Line of sight on the GPU in a Bevy app, written to run in a browser as well as natively.
//!
//! On the web (`wasm32-unknown-unknown`) nothing may block, so the raycaster is made
//! asynchronously: `GpuRaycaster::new(config).await`, or, in a game that renders with Bevy,
//! `GpuRaycaster::from_device(render_device.wgpu_device(), &render_queue, config).await` (on
//! wasm32 `from_device` is `async` too). A system cannot await, so a `Startup` system spawns
//! the future (`wasm_bindgen_futures::spawn_local`), the future puts the raycaster into a shared
//! slot, and an `Update` system moves it into the `VoxelGpu` resource once it is there. Until
//! then `SightQueue`'s batches are answered on the CPU, and every answer is the CPU reference's
//! either way. Natively the slot is filled at once by `GpuRaycaster::new_blocking`.
//!
//! ```text
//! cargo run --release -p voxcast-bevy --example web_sight
//! cargo build --release --target wasm32-unknown-unknown -p voxcast-bevy --example web_sight
//! ```
//!
//! In a browser the frames come from the page: Bevy's own runner calls `App::update` once an
//! animation frame; this example's wasm32 `main` steps its frames from a timer instead (it has
//! no window). Natively it runs 12 frames of 300 requests and exits with status 1 when the GPU
//! answered no batch or any answer differs from `voxcast::line_of_sight`'s.

use std::sync::{Arc, Mutex};

use bevy_app::{App, Startup, Update};
use bevy_ecs::message::MessageReader;
use bevy_ecs::prelude::{Commands, Res, ResMut, Resource};
use voxcast::glam::Vec3;
use voxcast::gpu::{GpuConfig, GpuError, GpuRaycaster};
use voxcast::{LineOfSight, VoxelId, VoxelRay, VoxelWorld, WorldPos, line_of_sight};
use voxcast_bevy::{
    SightAnswer, SightEngine, SightQueue, SightRequest, SightStatus, VoxcastPlugin, VoxelGpu,
    VoxelPosition, Voxels,
};

/// Where the raycaster lands once it is made (or why it could not be).
#[derive(Resource, Clone, Default)]
struct GpuSlot(Arc<Mutex<Option<Result<GpuRaycaster, GpuError>>>>);

/// `Startup`: starts making the raycaster. In a browser this returns at once and the future
/// runs on the page's event loop.
fn start_gpu(slot: Res<GpuSlot>) {
    let slot = slot.clone();
    #[cfg(target_arch = "wasm32")]
    wasm_bindgen_futures::spawn_local(async move {
        let made = GpuRaycaster::new(GpuConfig::default()).await;
        *slot.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(made);
    });
    #[cfg(not(target_arch = "wasm32"))]
    {
        let made = GpuRaycaster::new_blocking(GpuConfig::default());
        *slot.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(made);
    }
}

/// `Update`: once the raycaster is there, sight batches go to it.
fn take_gpu(mut commands: Commands, slot: Res<GpuSlot>) {
    let made = slot.0.lock().unwrap_or_else(|e| e.into_inner()).take();
    match made {
        Some(Ok(gpu)) => {
            println!(
                "sight on the GPU from the next batch: {}",
                gpu.adapter_summary()
            );
            commands.insert_resource(VoxelGpu::new(gpu));
        }
        Some(Err(e)) => println!("line of sight stays on the CPU: {e}"),
        None => {}
    }
}

/// A wall with a gap: eyes on one side look at points on the other.
fn world() -> VoxelWorld {
    let mut world = VoxelWorld::new();
    for y in 0..8 {
        for z in 0..16 {
            if !(6..9).contains(&z) {
                world.set_voxel(WorldPos::new(8, y, z), VoxelId(1));
            }
        }
    }
    world
}

/// The `k`-th request of a frame: from an eye west of the wall to a point east of it.
fn segment(k: u32) -> (VoxelPosition, VoxelPosition) {
    let at = |x: i128, z: i128| VoxelPosition::new(WorldPos::new(x, 3, z), Vec3::splat(0.5));
    let k = i128::from(k);
    (at(2, k % 16), at(14, (k * 7) % 16))
}

/// Requests a frame.
const REQUESTS: u32 = 300;

/// `Update`: the frame's requests.
fn look(mut queue: ResMut<SightQueue>) {
    for k in 0..REQUESTS {
        let (from, to) = segment(k);
        queue.push_segment(from, to);
    }
}

/// What the answers said: answers on the GPU, and those that differ from the CPU reference.
#[derive(Resource, Default, Debug)]
struct Tally {
    gpu_answers: usize,
    differ: usize,
    clear: usize,
}

/// `Update`: checks each answer against `voxcast::line_of_sight` on the same world.
fn check(
    mut answers: MessageReader<SightAnswer>,
    status: Res<SightStatus>,
    voxels: Res<Voxels>,
    queue: Res<SightQueue>,
    mut tally: ResMut<Tally>,
) {
    for a in answers.read() {
        let SightRequest::Segment { from, to } = a.request else {
            continue;
        };
        let expected = VoxelRay::between(from.voxel, from.offset, to.voxel, to.offset)
            .map_or_else(LineOfSight::Invalid, |ray| {
                line_of_sight(&ray, &voxels, &queue.options)
            });
        if !a.result.as_ref().is_ok_and(|got| got.matches(&expected)) {
            tally.differ += 1;
        }
        if status.engine == Some(SightEngine::Gpu) {
            tally.gpu_answers += 1;
        }
        tally.clear += usize::from(matches!(a.result, Ok(LineOfSight::Clear)));
    }
}

fn app() -> App {
    let mut app = App::new();
    app.add_plugins(VoxcastPlugin)
        .insert_resource(Voxels::new(world()))
        .init_resource::<GpuSlot>()
        .init_resource::<Tally>()
        .add_systems(Startup, start_gpu)
        .add_systems(Update, (take_gpu, look, check));
    app
}

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    let mut app = app();
    for _ in 0..12 {
        app.update();
    }
    let tally = app.world().resource::<Tally>();
    println!(
        "{} answers from the GPU, {} clear, {} differ from the CPU reference",
        tally.gpu_answers, tally.clear, tally.differ
    );
    if tally.gpu_answers == 0 || tally.differ != 0 {
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}

/// In a browser: a frame each time the page's timer fires, so that the browser's event loop
/// (which drives the GPU there) runs between frames.
#[cfg(target_arch = "wasm32")]
fn main() {
    wasm_bindgen_futures::spawn_local(async {
        let mut app = app();
        for _ in 0..600 {
            app.update();
            next_task().await;
        }
        let tally = app.world().resource::<Tally>();
        println!(
            "{} answers from the GPU, {} differ from the CPU reference",
            tally.gpu_answers, tally.differ
        );
    });
}

/// Resolves in a later task of the page's event loop (`setTimeout(resolve, 0)`).
#[cfg(target_arch = "wasm32")]
async fn next_task() {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        let global = js_sys::global();
        if let Ok(f) = js_sys::Reflect::get(&global, &"setTimeout".into()) {
            let set_timeout = js_sys::Function::from(f);
            let _ = set_timeout.call2(&global, &resolve, &0.into());
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}
