//! A Minecraft region, raycast: imports an Anvil region (by default the 1.19.4 region
//! fastanvil's package ships), renders it from above on the GPU with every pixel checked
//! against the CPU reference, writes `minecraft-depth.png` and `minecraft-shaded.png` (and a
//! close-up of the blocks that are not cubes, `minecraft-shapes-*.png`), and
//! runs a player-reach batch and a line-of-sight batch over it, GPU against CPU ray by ray.
//!
//! ```text
//! cargo run --release -p voxcast-import --example minecraft
//! cargo run --release -p voxcast-import --example minecraft -- --region r.0.0.mca --out-dir docs
//! ```
//!
//! Blocks keep their shapes (`voxcast_import::shapes`: slabs, stairs, fences, doors, torches,
//! flowers, ...): block states are imported with their properties and each gets its shape, so a
//! ray passes over a bottom slab and hits a flower. What stops a ray is every block but air,
//! water, glass, leaves and the plants without a shape (`anvil::see_through`); `--cubes` imports
//! every block as a cube (plants see-through) for comparison. Without a GPU it says so and
//! renders on the CPU. Exit status: 0 when every answer matches the CPU reference, 1 when any
//! differs or a file cannot be read or written.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;
use voxcast::gpu::{GpuConfig, GpuRaycaster, GpuWorld, Rays, Sightlines};

use clap::Parser;
use voxcast::glam::Vec3;
use voxcast::{
    BlockShape, Camera, LineOfSightOptions, RaycastOptions, VoxelId, VoxelRay, VoxelWorld,
    WorldPos, line_of_sight_batch, raycast_batch, raycast_camera, voxel_raycast_with,
};
use voxcast_import::shapes::block_shape;
use voxcast_import::{Palette, anvil};
use voxcast_testkit::common::package_dir;
use voxcast_testkit::demo::{no_gpu, render_checked, secs};
use voxcast_testkit::scene::SplitMix64;
use voxcast_testkit::shading::write_pictures;

/// Command line.
#[derive(Debug, Parser)]
#[command(about = "Raycast a Minecraft region on the GPU, checked against the CPU reference")]
struct Args {
    /// The region file (`r.<x>.<z>.mca`). Default: fastanvil's 1.19.4 region.
    #[arg(long)]
    region: Option<PathBuf>,
    /// Image width in pixels.
    #[arg(long, default_value_t = 960, value_parser = clap::value_parser!(u32).range(1..=4096))]
    width: u32,
    /// Image height in pixels.
    #[arg(long, default_value_t = 540, value_parser = clap::value_parser!(u32).range(1..=4096))]
    height: u32,
    /// Where the pictures go.
    #[arg(long, default_value = ".")]
    out_dir: PathBuf,
    /// Every block a full cube (plants see-through), as without shapes.
    #[arg(long)]
    cubes: bool,
}

/// A block's colour from its name: a few families, grey for the rest.
fn colour(name: &str) -> Vec3 {
    // The block's name without its properties (`waterlogged=true` is no water).
    let n = name.split('[').next().unwrap_or(name);
    let n = n.strip_prefix("minecraft:").unwrap_or(n);
    let has = |s: &str| n.contains(s);
    if has("grass") || has("moss") {
        Vec3::new(0.36, 0.62, 0.24)
    } else if has("leaves") {
        Vec3::new(0.22, 0.48, 0.18)
    } else if has("water") || has("ice") {
        Vec3::new(0.16, 0.38, 0.78)
    } else if has("sand") {
        Vec3::new(0.86, 0.80, 0.56)
    } else if has("snow") {
        Vec3::new(0.95, 0.96, 0.98)
    } else if has("dirt") || has("mud") || has("podzol") {
        Vec3::new(0.52, 0.37, 0.24)
    } else if [
        "log", "wood", "planks", "oak", "spruce", "birch", "jungle", "acacia", "chest",
    ]
    .iter()
    .any(|w| has(w))
    {
        Vec3::new(0.45, 0.33, 0.20)
    } else if has("ore") {
        Vec3::new(0.80, 0.55, 0.20)
    } else if has("gravel") || has("clay") {
        Vec3::new(0.60, 0.58, 0.56)
    } else {
        Vec3::new(0.55, 0.55, 0.57)
    }
}

/// The first stopping voxel straight down from `y = top` over column `(x, z)`, if any.
fn ground(world: &VoxelWorld, opts: &RaycastOptions, x: i128, z: i128, top: i128) -> Option<i128> {
    let ray = VoxelRay::new(
        WorldPos::new(x, top, z),
        Vec3::splat(0.5),
        Vec3::NEG_Y,
        600.0,
    )
    .ok()?;
    voxel_raycast_with(&ray, world, opts)
        .hit()
        .map(|h| h.voxel_pos.y)
}

fn main() -> ExitCode {
    let args = Args::parse();
    let path = args.region.clone().unwrap_or_else(|| {
        package_dir(env!("CARGO_MANIFEST_DIR"), "fastanvil").join("resources/1.19.4.mca")
    });
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("minecraft: cannot read {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    };
    let started = Instant::now();
    let mut palette = Palette::new();
    let names = if args.cubes {
        anvil::Names::Plain
    } else {
        anvil::Names::WithProperties
    };
    let mut world = match anvil::region(&bytes, WorldPos::ZERO, &mut palette, names) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("minecraft: {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    };
    let shaped = if args.cubes {
        0
    } else {
        match palette.apply_shapes(&mut world, block_shape) {
            Ok(n) => n,
            Err(e) => {
                eprintln!("minecraft: shapes: {e}");
                return ExitCode::FAILURE;
            }
        }
    };
    println!(
        "region: {} ({} KiB) into {} chunks, {} block types, in {}",
        path.display(),
        bytes.len() / 1024,
        world.chunk_count(),
        palette.len(),
        secs(started.elapsed())
    );
    if !args.cubes {
        println!("shapes: {shaped} block states are not cubes");
    }
    // With shapes, plants that have one (flowers, grass, torches) stop rays where their boxes
    // are; glass panes stay see-through.
    let cubes = args.cubes;
    let passes = |n: &str| {
        anvil::see_through(n) && (cubes || anvil::is_glass(n) || block_shape(n).is_none())
    };
    let opts = RaycastOptions {
        blocks: palette.filter_passing(passes),
        ..RaycastOptions::default()
    };
    let Some((lo, hi)) = world.loaded_chunk_bounds() else {
        eprintln!("minecraft: the region holds no chunk");
        return ExitCode::FAILURE;
    };
    let (x0, z0, x1, z1) = (lo.x * 32, lo.z * 32, hi.x * 32 + 31, hi.z * 32 + 31);
    let top = hi.y * 32 + 31;
    let center = ((x0 + x1) / 2, (z0 + z1) / 2);
    let center_y = ground(&world, &opts, center.0, center.1, top).unwrap_or(64);
    let gpu = gpu_setup(&world);

    // The picture: from above one corner, across the region.
    let eye = WorldPos::new(x0 + 20, center_y + 70, z0 + 20);
    let camera = match Camera::look_at(
        eye,
        Vec3::splat(0.5),
        WorldPos::new(center.0, center_y, center.1),
        Vec3::splat(0.5),
        60.0,
        args.width,
        args.height,
        700.0,
    ) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("minecraft: camera: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (image, mut differ) = match render_checked(gpu.as_ref(), &world, &camera, &opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("minecraft: {e}");
            return ExitCode::FAILURE;
        }
    };
    let base = |id: VoxelId| colour(palette.name(id).unwrap_or(""));
    if let Err(e) = write_pictures(
        &args.out_dir,
        "minecraft",
        (args.width, args.height),
        &image,
        (camera.max_distance, camera.max_distance),
        base,
    ) {
        eprintln!("minecraft: {e}");
        return ExitCode::FAILURE;
    }

    // A close-up of the shapes: the densest group of shaped blocks open to the sky, as they
    // are and as cubes.
    if !args.cubes
        && let Some(target) = shaped_spot(&world, &opts)
    {
        match close_up(gpu.as_ref(), &world, &opts, target, &args, &palette) {
            Ok(d) => differ += d,
            Err(e) => {
                eprintln!("minecraft: {e}");
                return ExitCode::FAILURE;
            }
        }
    }

    // Player reach (eye 1.62 above the ground, 5 voxels) and line of sight between points
    // 2 above the ground, up to 64 voxels apart.
    let mut rng = SplitMix64::new(7);
    let mut column = || {
        let x = x0 + i128::from(rng.below((x1 - x0 + 1) as u64));
        let z = z0 + i128::from(rng.below((z1 - z0 + 1) as u64));
        (x, z)
    };
    let mut eyes = Vec::new();
    while eyes.len() < 20_000 {
        let (x, z) = column();
        if let Some(y) = ground(&world, &opts, x, z, top) {
            eyes.push(WorldPos::new(x, y + 1, z));
        }
    }
    let mut dirs = SplitMix64::new(8);
    let reach: Vec<VoxelRay> = eyes
        .iter()
        .filter_map(|&p| VoxelRay::new(p, Vec3::new(0.5, 0.62, 0.5), dirs.unit_vector(), 5.0).ok())
        .collect();
    let sight: Vec<VoxelRay> = eyes
        .chunks_exact(2)
        .filter_map(|p| {
            VoxelRay::between(
                p[0],
                Vec3::new(0.5, 1.0, 0.5),
                p[1],
                Vec3::new(0.5, 1.0, 0.5),
            )
            .ok()
        })
        .filter(|s| s.max_distance <= 64.0)
        .collect();
    let started = Instant::now();
    let cpu_reach = raycast_batch(&reach, &world, &opts);
    let los_opts = LineOfSightOptions {
        raycast: opts.clone(),
        conservative: false,
    };
    let cpu_sight = line_of_sight_batch(&sight, &world, &los_opts);
    println!(
        "batches on the CPU: {} reach rays ({} hit), {} sight segments ({} clear), in {}",
        reach.len(),
        cpu_reach.iter().filter(|o| o.hit().is_some()).count(),
        sight.len(),
        cpu_sight
            .iter()
            .filter(|l| **l == voxcast::LineOfSight::Clear)
            .count(),
        secs(started.elapsed())
    );
    if let Some((gpu, gw)) = &gpu {
        let g = gpu.cast(Rays(&reach), gw, &opts);
        let s = gpu.cast(Sightlines(&sight), gw, &los_opts);
        match (g, s) {
            (Ok(g), Ok(s)) => {
                let d1 = g
                    .iter()
                    .zip(&cpu_reach)
                    .filter(|(a, b)| !a.matches(b))
                    .count();
                let d2 = s
                    .iter()
                    .zip(&cpu_sight)
                    .filter(|(a, b)| !a.matches(b))
                    .count();
                println!(
                    "batches on the GPU: {d1} reach rays and {d2} sight segments differ from the CPU reference"
                );
                differ += d1 + d2;
            }
            (Err(e), _) | (_, Err(e)) => {
                eprintln!("minecraft: GPU batch: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if differ == 0 {
        ExitCode::SUCCESS
    } else {
        eprintln!("minecraft: {differ} answers differ from the CPU reference");
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

/// The shaped block with the most shaped blocks open to the sky within 8 voxels of it (open:
/// a ray straight up from it reaches nothing that stops it), if any.
fn shaped_spot(world: &VoxelWorld, opts: &RaycastOptions) -> Option<WorldPos> {
    let mut open = Vec::new();
    for (pos, _) in world.chunks() {
        for i in 0..32 * 32 * 32 {
            let p = WorldPos::new(
                pos.x * 32 + (i & 31),
                pos.y * 32 + (i >> 5 & 31),
                pos.z * 32 + (i >> 10),
            );
            let Some(id) = world.get_voxel(&p) else {
                continue;
            };
            if id.is_air() || !opts.blocks.contains(id) || world.shape(id) == BlockShape::Cube {
                continue;
            }
            let up = VoxelRay::new(
                WorldPos::new(p.x, p.y + 1, p.z),
                Vec3::splat(0.5),
                Vec3::Y,
                600.0,
            );
            if up.is_ok_and(|r| voxel_raycast_with(&r, world, opts).hit().is_none()) {
                open.push(p);
            }
        }
    }
    let near = |a: &WorldPos, b: &WorldPos| {
        (a.x - b.x).abs() <= 8 && (a.y - b.y).abs() <= 8 && (a.z - b.z).abs() <= 8
    };
    open.iter()
        .max_by_key(|p| (open.iter().filter(|q| near(p, q)).count(), -p.x, -p.z))
        .copied()
}

/// Renders `minecraft-shapes-*.png` around `target` (checked against the CPU as the overview
/// is), and says how many of its pixels the shapes change. Returns the pixels that differ
/// between GPU and CPU.
fn close_up(
    gpu: Option<&(GpuRaycaster, GpuWorld)>,
    world: &VoxelWorld,
    opts: &RaycastOptions,
    target: WorldPos,
    args: &Args,
    palette: &Palette,
) -> Result<usize, String> {
    let camera = Camera::look_at(
        WorldPos::new(target.x - 11, target.y + 9, target.z - 13),
        Vec3::splat(0.5),
        target,
        Vec3::splat(0.5),
        50.0,
        args.width,
        args.height,
        200.0,
    )
    .map_err(|e| format!("close-up camera: {e}"))?;
    println!("close-up of the shapes around {target}");
    let (image, differ) = render_checked(gpu, world, &camera, opts)?;
    let base = |id: VoxelId| colour(palette.name(id).unwrap_or(""));
    write_pictures(
        &args.out_dir,
        "minecraft-shapes",
        (args.width, args.height),
        &image,
        (camera.max_distance, camera.max_distance),
        base,
    )?;
    // The same view with every block a cube and plants see-through.
    let mut cubes = world.clone();
    let mut blocks = opts.blocks.clone();
    for (name, id) in palette.iter() {
        if cubes.shape(id) != BlockShape::Cube {
            cubes
                .set_shape(id, &BlockShape::Cube)
                .map_err(|e| e.to_string())?;
            if anvil::see_through(name.split('[').next().unwrap_or(name)) {
                blocks = blocks.without(id);
            }
        }
    }
    let as_cubes = RaycastOptions {
        blocks,
        ..opts.clone()
    };
    let cpu = raycast_camera(&camera, &cubes, &as_cubes).map_err(|e| e.to_string())?;
    let changed = cpu
        .iter()
        .zip(&image)
        .filter(|(a, b)| !a.matches(b))
        .count();
    println!(
        "close-up: the shapes change {changed} of {} pixels from the region as cubes",
        image.len()
    );
    Ok(differ)
}
