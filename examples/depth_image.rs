//! Renders the standard terrain from the W3 camera on the GPU (one ray per pixel, rays made in
//! the shader), checks every pixel against the CPU reference, and writes two pictures:
//!
//! - `depth.png`: 16-bit greyscale depth. A hit at distance `d` of max distance `max` is
//!   `1 + 65534 · (1 - sqrt(d / max))`: near is bright, and the square root spreads the far
//!   field so that hills 300 voxels away still read; every hit is at least 1, misses are 0.
//! - `shaded.png`: 8-bit RGB, coloured by material, shaded by the face the ray entered (top 1.0,
//!   x sides 0.8, z sides 0.65, bottom 0.5), with block edges traced from the hit UV up close
//!   and distance fog towards the sky colour; misses are sky.
//!
//! ```text
//! cargo run --release --example depth_image
//! cargo run --release --example depth_image -- --width 640 --height 360 --out-dir docs
//! cargo run --release --example depth_image -- --camera 40,90.5,40 --look-at 256,40,256 --fov 75
//! cargo run --release --example depth_image -- --cpu          # the CPU reference only
//! ```
//!
//! Without a GPU adapter it says so in one line and renders with the CPU reference on all
//! threads. Exit status: 0 when every pixel matches the CPU reference (distance bit for bit,
//! UV within 1e-5), 1 when any differs or a file cannot be written, 2 for bad arguments.

use voxcast::gpu::{CameraImage, GpuConfig, GpuRaycaster};
use voxcast_testkit::demo::{self as common, secs};
use voxcast_testkit::shading::{shade, write_png};

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use voxcast::glam::Vec3;

use voxcast::spec_variants::Freedom;
use voxcast::{
    Camera, CameraError, RaycastOptions, RaycastOutcome, VoxelWorld, WorldPos,
    raycast_camera_rows_into,
};
use voxcast_testkit::scene::Terrain;

/// Command line.
#[derive(Debug, Parser)]
#[command(
    about = "Render a depth image and a shaded image of the voxcast terrain on the GPU, \
                   checked pixel by pixel against the CPU reference"
)]
struct Args {
    /// Image width in pixels (1 to 8192; at most 16,777,216 pixels in all, as about 200 bytes a
    /// pixel are kept).
    #[arg(long, default_value_t = 1280, value_parser = clap::value_parser!(u32).range(1..=8192))]
    width: u32,
    /// Image height in pixels (1 to 8192; see --width).
    #[arg(long, default_value_t = 720, value_parser = clap::value_parser!(u32).range(1..=8192))]
    height: u32,
    /// Eye position in world voxel coordinates, `x,y,z` (floats allowed; integers of any i128
    /// size are exact). Default: the standard W3 camera, 40 voxels above the ground.
    #[arg(long, value_parser = parse_point, allow_hyphen_values = true)]
    camera: Option<Point>,
    /// Point to look at, `x,y,z`. Default: the W3 camera's direction (across the terrain,
    /// slightly down).
    #[arg(long, value_parser = parse_point, allow_hyphen_values = true)]
    look_at: Option<Point>,
    /// Vertical field of view in degrees, in (0, 180).
    #[arg(long, default_value_t = 60.0, allow_hyphen_values = true)]
    fov: f32,
    /// Max distance of every ray, in voxels (0 to 65536).
    #[arg(long, default_value_t = 1024.0, allow_hyphen_values = true)]
    max_distance: f32,
    /// Folder for depth.png and shaded.png (created if missing).
    #[arg(long, default_value = ".")]
    out_dir: PathBuf,
    /// Terrain noise seed (default: the standard terrain's).
    #[arg(long)]
    seed: Option<u64>,
    /// Render with the CPU reference even when a GPU is available.
    #[arg(long)]
    cpu: bool,
    /// Skip the pixel-by-pixel comparison with the CPU reference.
    #[arg(long)]
    no_check: bool,
    /// Render with the shader rewritten to take one of the WGSL spec's floating-point
    /// freedoms, as a GPU may (see `voxcast::spec_variants`): inexact-up-1, inexact-down-1,
    /// inexact-up-3, inexact-down-3, fused, reassociated or flush-subnormals. Every pixel must
    /// still match the CPU reference.
    #[arg(long, value_parser = parse_freedom)]
    shader_variant: Option<Freedom>,
}

fn parse_freedom(s: &str) -> Result<Freedom, String> {
    Freedom::from_name(s).ok_or_else(|| {
        let names: Vec<String> = Freedom::ALL.iter().map(|f| f.name()).collect();
        format!("{s:?} is not one of {}", names.join(", "))
    })
}

/// A point given on the command line: a voxel and the offset inside it (not yet normalised
/// into `[0, 1)`; the camera constructors do that).
#[derive(Clone, Copy, Debug)]
struct Point {
    voxel: WorldPos,
    sub: Vec3,
}

/// One coordinate: `123`, `-4.25`, `.5`, `1e3`, or an integer up to i128's range. Integer
/// and fractional parts are split as text, so big integers stay exact.
fn parse_coord(s: &str) -> Result<(i128, f32), String> {
    let s = s.trim();
    let bad = || format!("{s:?} is not a number");
    if s.contains(['e', 'E', 'i', 'I', 'n', 'N']) {
        let v: f64 = s.parse().map_err(|_| bad())?;
        let whole = v.floor();
        if !v.is_finite() || whole.abs() >= 1.7e38 {
            return Err(format!("{s} is outside the i128 world"));
        }
        return Ok((whole as i128, (v - whole) as f32));
    }
    let (int_part, frac_part) = s.split_once('.').unwrap_or((s, ""));
    let negative = int_part.starts_with('-');
    let int_digits = int_part.trim_start_matches(['-', '+']);
    if int_part.len() - int_digits.len() > 1
        || (int_digits.is_empty() && frac_part.is_empty())
        || !int_digits.bytes().all(|b| b.is_ascii_digit())
        || !frac_part.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let whole: i128 = if int_digits.is_empty() {
        0
    } else {
        int_part
            .parse()
            .map_err(|_| format!("{s} is outside the i128 world"))?
    };
    let frac: f64 = if frac_part.is_empty() {
        0.0
    } else {
        format!("0.{frac_part}").parse().map_err(|_| bad())?
    };
    Ok((whole, if negative { -frac } else { frac } as f32))
}

fn parse_point(s: &str) -> Result<Point, String> {
    let parts: Vec<&str> = s.split(',').collect();
    let [x, y, z] = parts[..] else {
        return Err(format!("expected x,y,z, got {s:?}"));
    };
    let (x, y, z) = (parse_coord(x)?, parse_coord(y)?, parse_coord(z)?);
    Ok(Point {
        voxel: WorldPos::new(x.0, y.0, z.0),
        sub: Vec3::new(x.1, y.1, z.1),
    })
}

/// The camera the flags describe: the W3 camera unless a flag changes it.
fn make_camera(args: &Args, terrain: &Terrain) -> Result<Camera, String> {
    let standard = terrain.camera(args.width, args.height);
    if args.camera.is_none() && args.look_at.is_none() && args.fov == 60.0 {
        return Camera::new(
            standard.position,
            standard.sub_offset,
            standard.forward,
            60.0,
            args.width,
            args.height,
            args.max_distance,
        )
        .map_err(|e| format!("bad --max-distance {}: {e}", args.max_distance));
    }
    let eye = args.camera.unwrap_or(Point {
        voxel: standard.position,
        sub: standard.sub_offset,
    });
    match args.look_at {
        Some(target) => Camera::look_at(
            eye.voxel,
            eye.sub,
            target.voxel,
            target.sub,
            args.fov,
            args.width,
            args.height,
            args.max_distance,
        ),
        None => Camera::new(
            eye.voxel,
            eye.sub,
            standard.forward,
            args.fov,
            args.width,
            args.height,
            args.max_distance,
        ),
    }
    .map_err(|e| match e {
        CameraError::Ray(_) => format!(
            "bad camera (--camera or --max-distance {}): {e}",
            args.max_distance
        ),
        e => format!("bad camera: {e}"),
    })
}

/// The most pixels an image may have: the GPU's and the CPU's outcomes (96 bytes each) are
/// kept for the comparison, 3.2 GB at this size.
const MAX_PIXELS: u64 = 1 << 24;

fn main() -> ExitCode {
    let args = Args::parse();
    let pixels = u64::from(args.width) * u64::from(args.height);
    if pixels > MAX_PIXELS {
        eprintln!(
            "depth_image: {}x{} is {pixels} pixels; at most {MAX_PIXELS} (for example 4096x4096)",
            args.width, args.height
        );
        return ExitCode::from(2);
    }
    // Before rendering, so that a folder that cannot be written does not waste a render.
    if let Err(e) = check_out_dir(&args.out_dir) {
        eprintln!("depth_image: {e}");
        return ExitCode::from(2);
    }
    let terrain = Terrain {
        seed: args.seed.unwrap_or(Terrain::STANDARD.seed),
        ..Terrain::STANDARD
    };
    let camera = match make_camera(&args, &terrain) {
        Ok(c) => c,
        Err(msg) => {
            eprintln!("depth_image: {msg}");
            return ExitCode::from(2);
        }
    };
    let pixels = camera.width as usize * camera.height as usize;

    let started = Instant::now();
    let world = terrain.build();
    println!(
        "terrain: {}x{}x{} voxels, seed {:#x}, {} chunks, built in {}",
        terrain.size[0],
        terrain.size[1],
        terrain.size[2],
        terrain.seed,
        world.chunk_count(),
        secs(started.elapsed())
    );
    println!(
        "camera: eye {}, looking {:.3?}, {}x{} pixels, fov {} deg, max distance {}",
        show_point(camera.position, camera.sub_offset),
        camera.forward.to_array(),
        camera.width,
        camera.height,
        args.fov,
        camera.max_distance
    );

    let opts = RaycastOptions::default();
    let gpu_image = if args.cpu {
        println!("adapter: none (--cpu): rendering with the CPU reference");
        None
    } else {
        render_gpu(&world, &camera, &opts, args.shader_variant)
    };
    let rendered_on_gpu = gpu_image.is_some();
    let image = match gpu_image {
        Some(image) => image,
        None => match render_cpu(&world, &camera, &opts) {
            Ok(image) => image,
            Err(e) => {
                eprintln!("depth_image: bad camera: {e}");
                return ExitCode::from(2);
            }
        },
    };

    let mut differ = 0;
    if args.no_check {
        println!("check: skipped (--no-check)");
    } else if !rendered_on_gpu {
        println!("check: the image is the CPU reference itself, nothing to compare");
    } else {
        let reference = match render_cpu(&world, &camera, &opts) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("depth_image: bad camera: {e}");
                return ExitCode::from(2);
            }
        };
        let mut max_uv = 0.0f32;
        for (i, (gpu, cpu)) in image.iter().zip(&reference).enumerate() {
            match compare(gpu, cpu) {
                Some(uv) => max_uv = max_uv.max(uv),
                None => {
                    if differ < 5 {
                        let (x, y) = (i % camera.width as usize, i / camera.width as usize);
                        eprintln!("pixel ({x}, {y}) differs:\n  GPU {gpu:?}\n  CPU {cpu:?}");
                    }
                    differ += 1;
                }
            }
        }
        println!(
            "check: {differ} of {pixels} pixels differ from the CPU reference \
             (distance bit for bit; largest UV difference {max_uv:e})"
        );
    }

    let hits = image.iter().filter(|o| o.hit().is_some()).count();
    println!("pixels: {hits} hit, {} miss (sky)", image.len() - hits);
    let written = write_images(&args.out_dir, &camera, &image);
    match written {
        Ok((depth, shaded)) => println!("wrote {} and {}", depth.display(), shaded.display()),
        Err(e) => {
            eprintln!("depth_image: {e}");
            return ExitCode::FAILURE;
        }
    }
    if differ > 0 {
        eprintln!("depth_image: {differ} pixels differ from the CPU reference: this is a bug");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// Creates `dir` if missing and checks that a file can be written in it (one is created and
/// removed).
fn check_out_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let probe = dir.join(".depth_image_write_check");
    std::fs::write(&probe, b"").map_err(|e| format!("cannot write in {}: {e}", dir.display()))?;
    std::fs::remove_file(&probe).map_err(|e| format!("cannot write in {}: {e}", dir.display()))
}

/// The GPU render, or `None` (after one line saying why) when there is no usable GPU.
fn render_gpu(
    world: &VoxelWorld,
    camera: &Camera,
    opts: &RaycastOptions,
    freedom: Option<Freedom>,
) -> Option<Vec<RaycastOutcome>> {
    // One raycaster for the program: it picks the adapter (`WGPU_BACKEND`,
    // `WGPU_ADAPTER_NAME`) and checks it against the CPU reference before it is returned.
    let made = match freedom {
        None => GpuRaycaster::new_blocking(GpuConfig::default()),
        Some(f) => common::variant_raycaster(f),
    };
    let gpu = made.inspect_err(common::no_gpu).ok()?;
    println!("adapter: {}", gpu.adapter_summary());
    // The world's chunks, uploaded once; later edits go up as lists of changed chunks.
    let gpu_world = gpu.upload_world(world).inspect_err(common::no_gpu).ok()?;
    let started = Instant::now();
    match gpu.cast(CameraImage(camera), &gpu_world, opts) {
        Ok(image) => {
            let took = started.elapsed();
            println!(
                "render (GPU): {}x{} = {} rays in {} = {}",
                camera.width,
                camera.height,
                image.len(),
                secs(took),
                rate(image.len(), took)
            );
            Some(image)
        }
        Err(e) => {
            println!(
                "adapter: GPU render failed ({e}); rendering with the CPU reference on {} threads",
                rayon::current_num_threads()
            );
            None
        }
    }
}

/// The CPU reference on all threads (`raycast_camera`, whose tiles of pixels cross the air
/// together), in bands of rows so that a progress bar can advance.
fn render_cpu(
    world: &VoxelWorld,
    camera: &Camera,
    opts: &RaycastOptions,
) -> Result<Vec<RaycastOutcome>, CameraError> {
    let started = Instant::now();
    let width = camera.width as usize;
    // Whole tiles of `raycast_camera` (8 rows) in each band.
    let rows_per_band = ((32_768 / width).max(1) as u32).next_multiple_of(8);
    let bar =
        ProgressBar::with_draw_target(Some(u64::from(camera.height)), ProgressDrawTarget::hidden())
            .with_style(
                ProgressStyle::with_template("{bar:40} {pos}/{len} rows, {eta} left")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
    let mut shown = false;
    let mut image = Vec::with_capacity(width * camera.height as usize);
    let mut band = Vec::new();
    for first in (0..camera.height).step_by(rows_per_band as usize) {
        let rows = first..camera.height.min(first + rows_per_band);
        raycast_camera_rows_into(camera, rows.clone(), world, opts, &mut band)?;
        image.extend_from_slice(&band);
        bar.inc(rows.len() as u64);
        // Only a render that takes more than a moment gets a bar.
        if !shown && started.elapsed() > Duration::from_millis(500) {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            shown = true;
        }
    }
    bar.finish_and_clear();
    let took = started.elapsed();
    println!(
        "render (CPU reference, {} threads): {}x{} = {} rays in {} = {}",
        rayon::current_num_threads(),
        camera.width,
        camera.height,
        image.len(),
        secs(took),
        rate(image.len(), took)
    );
    Ok(image)
}

/// `Some(uv difference)` when the GPU outcome equals the CPU's under the parity contract,
/// `None` otherwise.
fn compare(gpu: &RaycastOutcome, cpu: &RaycastOutcome) -> Option<f32> {
    gpu.matches(cpu).then(|| match (gpu, cpu) {
        (RaycastOutcome::Hit(g), RaycastOutcome::Hit(c)) => {
            (g.hit_uv - c.hit_uv).abs().max_element()
        }
        _ => 0.0,
    })
}

fn write_images(
    dir: &Path,
    camera: &Camera,
    image: &[RaycastOutcome],
) -> Result<(PathBuf, PathBuf), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let max = camera.max_distance.max(f32::MIN_POSITIVE);
    let mut depth = Vec::with_capacity(image.len() * 2);
    let mut shaded = Vec::with_capacity(image.len() * 3);
    for outcome in image {
        let grey: u16 = match outcome.hit() {
            Some(h) => 1 + (65534.0 * (1.0 - (h.distance / max).clamp(0.0, 1.0).sqrt())) as u16,
            None => 0,
        };
        depth.extend_from_slice(&grey.to_be_bytes());
        shaded.extend_from_slice(&shade(outcome, max));
    }
    let depth_path = dir.join("depth.png");
    let shaded_path = dir.join("shaded.png");
    let (w, h) = (camera.width, camera.height);
    write_png(
        &depth_path,
        w,
        h,
        png::ColorType::Grayscale,
        png::BitDepth::Sixteen,
        &depth,
    )?;
    write_png(
        &shaded_path,
        w,
        h,
        png::ColorType::Rgb,
        png::BitDepth::Eight,
        &shaded,
    )?;
    Ok((depth_path, shaded_path))
}

fn show_point(p: WorldPos, sub: Vec3) -> String {
    format!(
        "({} + {}, {} + {}, {} + {})",
        p.x, sub.x, p.y, sub.y, p.z, sub.z
    )
}

fn rate(rays: usize, d: Duration) -> String {
    format!(
        "{:.2} M rays/s",
        rays as f64 / d.as_secs_f64().max(1e-9) / 1e6
    )
}
