//! A template for your own web app on voxcast: build a world, cast a batch of rays on the
//! browser's GPU (awaited: nothing blocks in a browser), cast the same rays on the CPU, and
//! compare the answers. `index.html` beside this crate loads it.
//!
//! Build it for the web (what `scripts/web.sh build` does with it):
//!
//! ```sh
//! cargo build --release --target wasm32-unknown-unknown -p voxcast-web-app
//! wasm-bindgen --target web --no-typescript --out-dir site \
//!     target/wasm32-unknown-unknown/release/voxcast_web_app.wasm
//! cp templates/web-app/index.html site/
//! ```
//!
//! then serve `site/` (WebGPU needs a secure context: `http://127.0.0.1` or `https://`).

use voxcast::gpu::{GpuConfig, GpuRaycaster, Rays};
use voxcast::{RaycastOptions, VoxelId, VoxelRay, VoxelWorld, WorldPos, raycast_batch};
use wasm_bindgen::prelude::*;

/// Rays of the batch: a 64 × 64 fan from one eye.
const SIDE: u32 = 64;

/// A world of a floor and a few pillars, a fan of rays over it, cast on the GPU and on the CPU.
/// Resolves to a line saying how many of the GPU's answers differ from the CPU's (none, on
/// every GPU: see the crate docs' parity contract), where they ran and what the batch cost;
/// rejects with the reason when the browser offers no GPU.
#[wasm_bindgen]
pub async fn run() -> Result<String, JsValue> {
    let world = world();
    let rays = rays();
    let opts = RaycastOptions::default();
    // The CPU reference: the answers every GPU must give, bit for bit.
    let cpu = raycast_batch(&rays, &world, &opts);

    // The device comes from the browser's WebGPU, awaited.
    let gpu = GpuRaycaster::new(GpuConfig::default())
        .await
        .map_err(|e| JsValue::from_str(&format!("no GPU for voxcast here: {e}")))?;
    let on_gpu = gpu.upload_world(&world).map_err(js)?;
    let mut pending = gpu.submit(Rays(&rays), &on_gpu, &opts).map_err(js)?;
    // Awaited through `&mut` so that the batch's cost can be read after.
    let answers = (&mut pending).await.map_err(js)?;
    let cost = pending.stats().unwrap_or_default();

    let differ = answers
        .iter()
        .zip(&cpu)
        .filter(|(g, c)| !g.matches(c))
        .count();
    let hits = answers.iter().filter(|o| o.hit().is_some()).count();
    Ok(format!(
        "{differ} of {} answers differ from the CPU's ({hits} hits) on {}, {:.1} ms",
        answers.len(),
        gpu.adapter_summary(),
        cost.total_seconds * 1e3
    ))
}

/// A 96 × 96 floor of id 1 at y = 0 and pillars of id 2 on it.
fn world() -> VoxelWorld {
    let mut world = VoxelWorld::new();
    for x in 0..96 {
        for z in 0..96 {
            world.set_voxel(WorldPos::new(x, 0, z), VoxelId(1));
            if x % 12 == 5 && z % 12 == 7 {
                for y in 1..=8 {
                    world.set_voxel(WorldPos::new(x, y, z), VoxelId(2));
                }
            }
        }
    }
    world
}

/// `SIDE²` rays from an eye above the floor's corner, looking across it and down.
fn rays() -> Vec<VoxelRay> {
    let eye = WorldPos::new(2, 12, 2);
    (0..SIDE * SIDE)
        .map(|k| {
            let (u, v) = (
                (k % SIDE) as f32 / SIDE as f32,
                (k / SIDE) as f32 / SIDE as f32,
            );
            VoxelRay {
                origin: eye,
                sub_offset: voxcast::glam::Vec3::splat(0.5),
                direction: voxcast::glam::Vec3::new(0.2 + u, -0.1 - 0.5 * v, 1.2 - u).normalize(),
                max_distance: 200.0,
            }
        })
        .collect()
}

/// An error of voxcast's as a JavaScript value.
fn js(e: voxcast::gpu::GpuError) -> JsValue {
    JsValue::from_str(&e.to_string())
}
