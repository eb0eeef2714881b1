//! `--streaming`: the GPU memory a `GpuWorld` takes per stored chunk on the standard worlds,
//! and a window that follows a player through a world of about 100,000 loaded chunks (the
//! standard terrain repeated)
//! (`GpuRaycaster::upload_window`, `recenter`): bytes uploaded and time per one-chunk move, and of a
//! jump that fills the window anew.

use std::time::Instant;
use voxcast::gpu::Rays;

use voxcast::gpu::{GpuRaycaster, GpuWorld};
use voxcast::{ChunkPos, RaycastOptions, VoxelRay, VoxelWorld, glam::Vec3};
use voxcast_testkit::scene::{Sparse, Terrain};

/// The streaming world: `X × 5 × Z` chunks, the standard terrain's 16 × 4 × 16 chunks
/// repeated across x and z, with a layer of air chunks above.
const STREAM_X: i128 = 201;
const STREAM_Z: i128 = 101;
/// The window's half extent in chunks: 65 × 5 × 65 chunks may be loaded.
const HALF_EXTENT: [u32; 3] = [32, 2, 32];
/// One-chunk moves along x.
const STEPS: i128 = 60;

/// The world streamed through: x in `-100..=100`, z in `-50..=50`.
fn streaming_world() -> VoxelWorld {
    let terrain = Terrain::STANDARD.build();
    let mut w = VoxelWorld::new();
    let (hx, hz) = (STREAM_X / 2, STREAM_Z / 2);
    for z in -hz..=hz {
        for x in -hx..=hx {
            for y in 0..5 {
                let from = ChunkPos::new(x.rem_euclid(16), y, z.rem_euclid(16));
                let chunk = terrain.chunk(from).cloned().unwrap_or_default();
                w.insert_chunk(ChunkPos::new(x, y, z), chunk)
                    .expect("in the world");
            }
        }
    }
    w
}

/// A raycaster on a device of `gpu`'s adapter created with wgpu's default limits (128 MiB
/// per storage binding), as a game's own device often is.
fn with_default_limits(gpu: &GpuRaycaster) -> Result<GpuRaycaster, String> {
    use voxcast::gpu::wgpu;
    let name = gpu.adapter_info().name.clone();
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle().with_env());
    let adapter = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()))
        .into_iter()
        .find(|a| a.get_info().name == name)
        .ok_or("the adapter is not listed again")?;
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("default limits"),
        required_limits: wgpu::Limits::default(),
        ..Default::default()
    }))
    .map_err(|e| e.to_string())?;
    GpuRaycaster::from_device(&device, &queue, voxcast::gpu::GpuConfig::default())
        .map_err(|e| e.to_string())
}

/// Waits until everything sent to the device so far is done: one ray cast after it.
fn settle(gpu: &GpuRaycaster, gw: &GpuWorld) {
    let center = gw.center().unwrap_or(ChunkPos::new(0, 0, 0)).origin();
    let ray = VoxelRay::new(center, Vec3::splat(0.5), Vec3::NEG_Y, 8.0).expect("a valid ray");
    let _ = gpu.cast(Rays(&[ray]), gw, &RaycastOptions::default());
}

fn kib(bytes: f64) -> String {
    format!("{:.1} KiB", bytes / 1024.0)
}

/// Prints the report (markdown tables).
pub(crate) fn print_streaming(machine: &[(&str, String)], gpu: Option<&GpuRaycaster>) {
    for (k, v) in machine {
        println!("{k:<10} {v}");
    }
    println!(
        "mode       streaming: GPU memory per stored chunk, and a window that follows a player"
    );
    println!();
    let Some(gpu) = gpu else {
        println!("no GPU: nothing to report");
        return;
    };
    let default = match with_default_limits(gpu) {
        Ok(g) => g,
        Err(e) => {
            println!("no device with wgpu's default limits: {e}");
            return;
        }
    };
    let gpu = &default;
    println!("On a device with wgpu's default limits (128 MiB per storage binding):");
    println!();
    println!(
        "| world | stored chunks | GPU bytes per stored chunk (in use) | (buffers) | CPU bytes per stored chunk | stored chunks in a 128 MiB id binding |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    let worlds = [
        ("W1-W3, W5: standard terrain", Terrain::STANDARD.build()),
        ("W4: sparse cube", Sparse::STANDARD.build()),
    ];
    for (name, world) in &worlds {
        match gpu.upload_world(world) {
            Ok(gw) => {
                let n = gw.stored_chunks().max(1) as f64;
                let ids = gw.stored_bytes() as f64 / n - (4096.0 + 16.0);
                println!(
                    "| {name} | {} | {} | {} | {} | {:.0} |",
                    gw.stored_chunks(),
                    kib(gw.stored_bytes() as f64 / n),
                    kib(gw.memory_bytes() as f64 / n),
                    kib(world.memory_bytes() as f64 / n),
                    (128.0 * 1024.0 * 1024.0 / ids.max(1.0)).floor()
                );
            }
            Err(e) => println!("| {name} | upload failed: {e} | | | | |"),
        }
    }
    println!();

    let t = Instant::now();
    let world = streaming_world();
    let built = t.elapsed().as_secs_f64();
    let start = ChunkPos::new(-60, 2, 0);
    let t = Instant::now();
    let mut gw = match gpu.upload_window(&world, start, HALF_EXTENT) {
        Ok(gw) => gw,
        Err(e) => {
            println!("streaming world: window refused: {e}");
            return;
        }
    };
    let host = t.elapsed().as_secs_f64();
    settle(gpu, &gw);
    let filled = t.elapsed().as_secs_f64();
    println!(
        "streaming world: {} loaded chunks ({} x 5 x {}: the standard terrain repeated, built in {built:.1} s); window of {:?} \
         chunks (half extent {HALF_EXTENT:?}); {} stored chunks in it, {} of GPU memory \
         ({} in use by stored chunks, {} a chunk); filled in {:.0} ms ({:.0} ms on the host), \
         {} uploaded",
        world.chunk_count(),
        STREAM_X,
        STREAM_Z,
        gw.dims(),
        gw.stored_chunks(),
        mib(gw.memory_bytes()),
        mib(gw.stored_bytes()),
        kib(gw.stored_bytes() as f64 / gw.stored_chunks().max(1) as f64),
        filled * 1e3,
        host * 1e3,
        mib(gw.uploaded_bytes()),
    );
    let mut moves = Vec::new();
    for step in 1..=STEPS {
        let to = ChunkPos::new(start.x + step, start.y, start.z);
        let t = Instant::now();
        let mv = match gw.recenter(&world, to) {
            Ok(mv) => mv,
            Err(e) => {
                println!("move to {to:?} failed: {e}");
                return;
            }
        };
        let host = t.elapsed().as_secs_f64();
        settle(gpu, &gw);
        moves.push((mv, host, t.elapsed().as_secs_f64()));
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (mv0, _, _) = moves[0];
    let average = gw.stored_bytes() as f64 / gw.stored_chunks().max(1) as f64;
    let dims = gw.dims();
    let area = f64::from(dims[1]) * f64::from(dims[2]);
    let bytes = median(
        moves
            .iter()
            .map(|(m, ..)| (m.chunk_bytes + m.table_bytes) as f64)
            .collect(),
    );
    println!();
    println!("| {STEPS} one-chunk moves along x (median) | value |");
    println!("|---|---:|");
    println!(
        "| chunks entered (stored) | {} ({}) |",
        mv0.entered, mv0.stored
    );
    println!("| bytes uploaded | {} |", kib(bytes));
    println!(
        "| of which table entries and region records | {} |",
        kib(median(
            moves.iter().map(|(m, ..)| m.table_bytes as f64).collect()
        ))
    );
    println!(
        "| bound: window area ({area} chunks) x average stored chunk ({}) | {} |",
        kib(average),
        kib(area * average)
    );
    println!(
        "| host time | {:.2} ms |",
        median(moves.iter().map(|(_, h, _)| h * 1e3).collect())
    );
    println!(
        "| until a batch after it is answered | {:.2} ms |",
        median(moves.iter().map(|(_, _, s)| s * 1e3).collect())
    );
    // A jump past the window: every chunk enters.
    let to = ChunkPos::new(100, start.y, start.z);
    let t = Instant::now();
    match gw.recenter(&world, to) {
        Ok(mv) => {
            let host = t.elapsed().as_secs_f64();
            settle(gpu, &gw);
            println!(
                "| jump of {} chunks: chunks entered (stored), bytes, host time, until answered | {} ({}), {}, {:.0} ms, {:.0} ms |",
                to.x - start.x - STEPS,
                mv.entered,
                mv.stored,
                mib(mv.chunk_bytes + mv.table_bytes),
                host * 1e3,
                t.elapsed().as_secs_f64() * 1e3
            );
        }
        Err(e) => println!("| jump | failed: {e} |"),
    }
    println!();
    println!(
        "GPU memory at the end: {} for {} stored chunks; no rebuild: every move wrote the \
         entering chunks, table entries and region records, nothing else.",
        mib(gw.memory_bytes()),
        gw.stored_chunks()
    );
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}
