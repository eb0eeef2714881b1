//! A MagicaVoxel model, raycast: imports a `.vox` file (by default `axes.vox`, which dot_vox's
//! package ships), renders it on the GPU in its own palette's colours with every pixel checked
//! against the CPU reference, writes `magica-depth.png` and `magica-shaded.png`, and casts a
//! batch of rays at it from all around, GPU against CPU ray by ray.
//!
//! ```text
//! cargo run --release -p voxcast-import --example magica
//! cargo run --release -p voxcast-import --example magica -- --file castle.vox --out-dir docs
//! ```
//!
//! Without a GPU it says so and renders on the CPU. Exit status: 0 when every answer matches
//! the CPU reference, 1 when any differs or a file cannot be read or written.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;
use voxcast::gpu::{GpuConfig, GpuRaycaster, GpuWorld, Rays};

use clap::Parser;
use voxcast::glam::Vec3;
use voxcast::{Camera, RaycastOptions, VoxelId, VoxelRay, VoxelWorld, WorldPos, raycast_batch};
use voxcast_import::vox;
use voxcast_testkit::common::package_dir;
use voxcast_testkit::demo::{no_gpu, render_checked, secs};
use voxcast_testkit::scene::SplitMix64;
use voxcast_testkit::shading::write_pictures;

/// Command line.
#[derive(Debug, Parser)]
#[command(about = "Raycast a MagicaVoxel model on the GPU, checked against the CPU reference")]
struct Args {
    /// The `.vox` file. Default: dot_vox's `axes.vox`.
    #[arg(long)]
    file: Option<PathBuf>,
    /// Image width in pixels.
    #[arg(long, default_value_t = 640, value_parser = clap::value_parser!(u32).range(1..=4096))]
    width: u32,
    /// Image height in pixels.
    #[arg(long, default_value_t = 480, value_parser = clap::value_parser!(u32).range(1..=4096))]
    height: u32,
    /// Where the pictures go.
    #[arg(long, default_value = ".")]
    out_dir: PathBuf,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let path = args.file.clone().unwrap_or_else(|| {
        package_dir(env!("CARGO_MANIFEST_DIR"), "dot_vox").join("src/resources/axes.vox")
    });
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("magica: cannot read {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    };
    let started = Instant::now();
    let world = match vox::model(&bytes, WorldPos::ZERO) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("magica: {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    };
    // The file's own colours: id i + 1 is palette entry i.
    let palette: Vec<Vec3> = dot_vox::load_bytes(&bytes)
        .map(|d| {
            d.palette
                .iter()
                .map(|c| Vec3::new(c.r.into(), c.g.into(), c.b.into()) / 255.0)
                .collect()
        })
        .unwrap_or_default();
    let Some((lo, hi)) = world.occupied_chunk_bounds() else {
        eprintln!("magica: the model holds no voxel");
        return ExitCode::FAILURE;
    };
    println!(
        "model: {} into {} chunks, in {}",
        path.display(),
        world.chunk_count(),
        secs(started.elapsed())
    );
    let (a, b) = (lo.origin(), hi.origin());
    let center = WorldPos::new(
        (a.x + b.x + 32) / 2,
        (a.y + b.y + 32) / 2,
        (a.z + b.z + 32) / 2,
    );
    let size = (b.x - a.x + 32).max(b.y - a.y + 32).max(b.z - a.z + 32);
    let opts = RaycastOptions::default();
    let gpu = gpu_setup(&world);

    // From above and to one side, the whole model in view.
    let eye = WorldPos::new(
        center.x + size,
        center.y + size * 3 / 4,
        center.z + size * 5 / 4,
    );
    let camera = match Camera::look_at(
        eye,
        Vec3::splat(0.5),
        center,
        Vec3::splat(0.5),
        45.0,
        args.width,
        args.height,
        (size * 4) as f32,
    ) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("magica: camera: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (image, mut differ) = match render_checked(gpu.as_ref(), &world, &camera, &opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("magica: {e}");
            return ExitCode::FAILURE;
        }
    };
    let base = |id: VoxelId| {
        palette
            .get(usize::from(id.0).wrapping_sub(1))
            .copied()
            .unwrap_or(Vec3::splat(0.6))
    };
    // No fog over a model's few voxels: max distance far beyond it.
    if let Err(e) = write_pictures(
        &args.out_dir,
        "magica",
        (args.width, args.height),
        &image,
        (1e6, camera.max_distance),
        base,
    ) {
        eprintln!("magica: {e}");
        return ExitCode::FAILURE;
    }

    // Rays at the model from all around: from points on a sphere about it, towards points in it.
    let mut rng = SplitMix64::new(11);
    let rays: Vec<VoxelRay> = (0..20_000)
        .filter_map(|_| {
            let from = rng.unit_vector() * size as f32;
            let to = (rng.unit_vector() * (size / 4) as f32) - from;
            VoxelRay::new(
                WorldPos::new(
                    center.x + from.x as i128,
                    center.y + from.y as i128,
                    center.z + from.z as i128,
                ),
                Vec3::splat(0.5),
                to,
                (size * 2) as f32,
            )
            .ok()
        })
        .collect();
    let cpu = raycast_batch(&rays, &world, &opts);
    println!(
        "batch on the CPU: {} rays, {} hit",
        rays.len(),
        cpu.iter().filter(|o| o.hit().is_some()).count()
    );
    if let Some((gpu, gw)) = &gpu {
        match gpu.cast(Rays(&rays), gw, &opts) {
            Ok(g) => {
                let d = g.iter().zip(&cpu).filter(|(a, b)| !a.matches(b)).count();
                println!("batch on the GPU: {d} rays differ from the CPU reference");
                differ += d;
            }
            Err(e) => {
                eprintln!("magica: GPU batch: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if differ == 0 {
        ExitCode::SUCCESS
    } else {
        eprintln!("magica: {differ} answers differ from the CPU reference");
        ExitCode::FAILURE
    }
}

/// The GPU and the world on it, or `None` after saying why (the CPU reference answers then).
fn gpu_setup(world: &VoxelWorld) -> Option<(GpuRaycaster, GpuWorld)> {
    // One raycaster for the program: it picks the adapter (`WGPU_BACKEND`,
    // `WGPU_ADAPTER_NAME`) and checks it against the CPU reference before it is returned.
    let gpu = GpuRaycaster::new_blocking(GpuConfig::default())
        .inspect_err(no_gpu)
        .ok()?;
    println!("adapter: {}", gpu.adapter_summary());
    // The world's chunks, uploaded once; later edits go up as lists of changed chunks.
    let gpu_world = gpu.upload_world(world).inspect_err(no_gpu).ok()?;
    Some((gpu, gpu_world))
}
