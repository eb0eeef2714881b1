//! Target `gpu`: the GPU batch against the CPU reference on random worlds, after edits sent
//! with `GpuWorld::update_chunks`, in a window around the loaded chunks or one that follows a
//! center through moves (`GpuRaycaster::upload_window`, `recenter`; its table checked against a
//! recount after each, the CPU answering on the chunks the window may hold), with batches
//! that mix valid and invalid rays, under every option: raycasts, line of sight (plain and
//! conservative), a small camera and box casts made from the rays, outcome by
//! outcome under the parity contract (`RaycastOutcome::matches`: the same voxel, face, id and
//! distance bit for bit, UV within 1e-5; an invalid ray `Invalid` with the same error on both).
//!
//! One `GpuRaycaster` serves every input (creating one costs much). Without a usable adapter
//! the target fails when `VOXCAST_REQUIRE_GPU=1` (as in `scripts/test.sh`), and otherwise
//! returns at once after saying so once.

use std::sync::OnceLock;
use voxcast::gpu::{BoxCasts, CameraImage, GpuConfig, Rays, Sightlines};

use arbitrary::{Arbitrary, Unstructured};
use voxcast::gpu::{GpuError, GpuRaycaster};
use voxcast::{
    Camera, ChunkPos, LineOfSightOptions, RaycastOptions, RaycastOutcome, UnloadedPolicy, VoxelRay,
    WorldPos, line_of_sight_batch, raycast_batch, raycast_camera,
};

use super::input::{AnchorIn, CoordIn, F32In, FilterIn, IdIn, ORIGIN_POLICIES, vec3};
use super::model::{Edit, Model, apply};
use super::raycast::RayIn;
use crate::gpu::{check_window_edge, window_cpu};

/// Most edits before and after the upload, and rays in a batch.
const EDITS: usize = 16;
const LATER_EDITS: usize = 8;
const RAYS: usize = 32;
/// Most moves of a window that follows a center.
const MOVES: usize = 6;

/// The shared raycaster, `None` where no adapter is usable (a failure under
/// `VOXCAST_REQUIRE_GPU=1`).
pub fn gpu() -> Option<&'static GpuRaycaster> {
    static GPU: OnceLock<Option<GpuRaycaster>> = OnceLock::new();
    GPU.get_or_init(|| match GpuRaycaster::new_blocking(GpuConfig::default()) {
        Ok(g) => Some(g),
        Err(e) => {
            if std::env::var("VOXCAST_REQUIRE_GPU").is_ok_and(|v| v == "1") {
                panic!("VOXCAST_REQUIRE_GPU=1 but no GPU is usable: {e}");
            }
            eprintln!("\n!!!!! gpu fuzz target: no GPU is usable ({e}); nothing checked !!!!!\n");
            None
        }
    })
    .as_ref()
}

/// The options of a batch.
#[derive(Arbitrary, Debug)]
pub struct OptionsIn {
    /// Origin policy (index into the three).
    pub origin: u8,
    /// Unloaded chunks stop rays.
    pub stop: bool,
    /// Walk voxel by voxel.
    pub per_voxel: bool,
    /// Which ids stop rays.
    pub filter: FilterIn,
}

/// A small camera near the world.
#[derive(Arbitrary, Debug)]
pub struct CameraIn {
    /// The eye.
    pub position: [CoordIn; 3],
    /// The eye inside its voxel.
    pub sub: [F32In; 3],
    /// The view direction.
    pub forward: [F32In; 3],
    /// Field of view.
    pub fov: F32In,
    /// Width and height, up to 16 each.
    pub size: (u8, u8),
    /// Max distance.
    pub max: F32In,
}

/// A window that follows a center: where it starts (in chunks from the anchor's chunk), its
/// half extent (0 to 2 chunks per axis) and its moves (in chunks, jumps too).
#[derive(Arbitrary, Debug)]
pub struct WindowIn {
    /// The first center, relative to the anchor's chunk.
    pub center: [i8; 3],
    /// The half extent, taken modulo 3.
    pub half: [u8; 3],
    /// Each move, relative to the last center.
    pub moves: Vec<[i8; 3]>,
}

/// One input of the target.
#[derive(Arbitrary, Debug)]
pub struct Input {
    /// Where the world is.
    pub anchor: [AnchorIn; 3],
    /// The world as uploaded.
    pub edits: Vec<Edit>,
    /// Edits after the upload, sent with `update_chunks`.
    pub later: Vec<Edit>,
    /// The batch (valid and invalid rays).
    pub rays: Vec<RayIn>,
    /// More rays for the batch, made from a seed: a batch of dozens from a few bytes.
    pub generated: Option<(u64, u8)>,
    /// Its options.
    pub options: OptionsIn,
    /// A camera rendered on both.
    pub camera: Option<CameraIn>,
    /// A window that follows a center instead of the one around the loaded chunks.
    pub window: Option<WindowIn>,
}

/// `from` moved by `by` chunks, `None` beyond the i128 world (no center there).
fn moved(from: ChunkPos, by: [i8; 3]) -> Option<ChunkPos> {
    let c = ChunkPos::from_array(std::array::from_fn(|a| {
        from.axis(a).saturating_add(i128::from(by[a]))
    }));
    c.is_in_world().then_some(c)
}

/// The target: decodes `data` and compares the GPU with the CPU; panics on a difference.
pub fn run(data: &[u8]) {
    let Ok(input) = Input::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let Some(gpu) = gpu() else {
        return;
    };
    let result = check(gpu, &input);
    // wgpu frees the buffers of a dropped `GpuWorld` when the device is next polled, which a
    // batch does; an input with no rays polls nothing, and a run of them would pile up
    // uploads. Poll here so that memory stays bounded over millions of inputs.
    let (device, _) = gpu.device();
    let _ = device.poll(voxcast::gpu::wgpu::PollType::wait_indefinitely());
    if let Err(why) = result {
        panic!("{why}\ninput: {input:#?}");
    }
}

/// `n` rays near `anchor` from `seed`: origins within 40 voxels, sub offsets on faces, at
/// halves or anywhere, directions along axes, diagonals (zero components of both signs) or
/// anywhere, max distances from 0 to past the cap; about one in eight is invalid (a NaN or
/// infinite field, a zero direction, a negative or too large max distance).
fn generated_rays(anchor: WorldPos, seed: u64, n: usize) -> Vec<VoxelRay> {
    let mut rng = crate::scene::SplitMix64::new(seed);
    let comps = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5];
    let maxes = [0.0, 1.0, 8.0, 64.0, 300.0, voxcast::MAX_DISTANCE_CAP];
    (0..n)
        .map(|_| {
            let origin = super::input::near(anchor, [0; 3].map(|_| rng.below(80) as i32 - 40));
            let sub = voxcast::glam::Vec3::from_array([0; 3].map(|_| match rng.below(3) {
                0 => 0.0,
                1 => 0.5,
                _ => rng.next_f32(),
            }));
            let direction = if rng.below(2) == 0 {
                rng.unit_vector()
            } else {
                voxcast::glam::Vec3::from_array([0; 3].map(|_| comps[rng.below(6) as usize]))
            };
            let mut ray = VoxelRay {
                origin,
                sub_offset: sub,
                direction,
                max_distance: maxes[rng.below(6) as usize],
            };
            match rng.below(16) {
                0 => ray.direction.y = f32::NAN,
                1 => ray.max_distance = -1.0,
                2 => ray.max_distance = f32::INFINITY,
                3 => ray.sub_offset.z = f32::INFINITY,
                _ => {}
            }
            ray
        })
        .collect()
}

/// Compares outcome by outcome under the parity contract.
fn parity(
    what: &str,
    rays: &[VoxelRay],
    gpu: &[RaycastOutcome],
    cpu: &[RaycastOutcome],
) -> Result<(), String> {
    if gpu.len() != cpu.len() {
        return Err(format!(
            "{what}: {} GPU outcomes, {} CPU",
            gpu.len(),
            cpu.len()
        ));
    }
    match (0..gpu.len()).find(|&i| !gpu[i].matches(&cpu[i])) {
        Some(i) => Err(format!(
            "{what}: ray #{i} {:?}\n    gpu: {:?}\n    cpu: {:?}",
            rays.get(i),
            gpu[i],
            cpu[i]
        )),
        None => Ok(()),
    }
}

/// Builds, uploads, edits and casts; compares every answer.
///
/// # Errors
/// The first difference, or a GPU error on valid input.
pub fn check(gpu: &GpuRaycaster, input: &Input) -> Result<(), String> {
    let anchor = WorldPos::from_array(input.anchor.map(AnchorIn::get));
    let mut world = voxcast::VoxelWorld::new();
    let mut model = Model::default();
    for e in input.edits.iter().take(EDITS) {
        apply(&mut world, &mut model, anchor, e, IdIn::get)?;
    }
    world.set_track_changes(true);
    let start = input
        .window
        .as_ref()
        .and_then(|w| moved(anchor.chunk(), w.center).map(|c| (w, c)));
    let mut gw = match start {
        Some((w, center)) => gpu
            .upload_window(&world, center, w.half.map(|h| u32::from(h % 3)))
            .map_err(|e| format!("with_window: {e}"))?,
        None => gpu
            .upload_world(&world)
            .map_err(|e| format!("from_world: {e}"))?,
    };
    let uploaded = world.loaded_chunk_bounds();
    for e in input.later.iter().take(LATER_EDITS) {
        apply(&mut world, &mut model, anchor, e, IdIn::get)?;
    }
    let changed = world.take_changed_chunks();
    match gw.update_chunks(&world, &changed) {
        Ok(()) => {}
        Err(GpuError::ChunkOutsideWindow(pos)) => {
            // Only a loaded chunk outside the chunks loaded at upload may be refused.
            let inside = uploaded.is_some_and(|(lo, hi)| {
                (0..3).all(|a| lo.axis(a) <= pos.axis(a) && pos.axis(a) <= hi.axis(a))
            });
            if inside || !world.is_loaded(pos) {
                return Err(format!(
                    "update_chunks refused {pos:?} (loaded at upload: {uploaded:?})"
                ));
            }
            let rebuilt = gw
                .update_or_rebuild(&world, &changed)
                .map_err(|e| format!("update_or_rebuild: {e}"))?;
            if !rebuilt {
                return Err(
                    "update_or_rebuild did not rebuild a world update_chunks refused".into(),
                );
            }
        }
        Err(e) => return Err(format!("update_chunks: {e}")),
    }
    if let Some((w, mut center)) = start {
        for &by in w.moves.iter().take(MOVES) {
            let to = ChunkPos::from_array(std::array::from_fn(|a| {
                center.axis(a).saturating_add(i128::from(by[a]))
            }));
            let before = gw.loadable_chunks();
            match gw.recenter(&world, to) {
                Ok(_) if to.is_in_world() => center = to,
                Err(GpuError::CenterOutsideWorld(c))
                    if c == to && !to.is_in_world() && gw.loadable_chunks() == before => {}
                other => return Err(format!("recenter to {to:?}: {other:?}")),
            }
            gw.check_table(&world)
                .map_err(|e| format!("after recenter to {to:?}: {e}"))?;
        }
    }
    let o = &input.options;
    let opts = RaycastOptions {
        origin: ORIGIN_POLICIES[usize::from(o.origin) % 3],
        blocks: o.filter.get(),
        unloaded: if o.stop {
            UnloadedPolicy::Stop
        } else {
            UnloadedPolicy::Air
        },
        per_voxel: o.per_voxel,
    };
    let mut rays: Vec<VoxelRay> = input
        .rays
        .iter()
        .take(RAYS)
        .map(|r| r.get(anchor))
        .collect();
    if let Some((seed, count)) = input.generated {
        rays.extend(generated_rays(anchor, seed, usize::from(count % 65)));
    }
    let what = format!("{opts:?}");
    // On a window that follows a center a ray may leave it: checked with the window's rules
    // (`check_window_edge`, which panics with the difference), else by plain parity.
    let windowed = start.is_some();
    let g = gpu
        .cast(Rays(&rays), &gw, &opts)
        .map_err(|e| format!("raycast: {e}"))?;
    // A batch of rays on the window, judged by its rule (panics with the difference).
    let window_rays = |what: &str, rays: &[VoxelRay], g: &[RaycastOutcome]| {
        check_window_edge(what, &gw, &world, rays, g, |w, held| {
            let (w, o) = window_cpu(&gw, w, &world, held, &opts);
            raycast_batch(rays, &w, &o)
        });
    };
    if windowed {
        window_rays(&format!("raycast {what}"), &rays, &g);
    } else {
        parity(
            &format!("raycast {what}"),
            &rays,
            &g,
            &raycast_batch(&rays, &world, &opts),
        )?;
    }
    for conservative in [false, true] {
        let sight = LineOfSightOptions {
            raycast: opts.clone(),
            conservative,
        };
        let g: Vec<RaycastOutcome> = gpu
            .cast(Sightlines(&rays), &gw, &sight)
            .map_err(|e| format!("line_of_sight: {e}"))?
            .into_iter()
            .map(RaycastOutcome::from)
            .collect();
        if windowed {
            check_window_edge(
                &format!("line of sight (conservative {conservative}) {what}"),
                &gw,
                &world,
                &rays,
                &g,
                |w, held| {
                    let (w, raycast) = window_cpu(&gw, w, &world, held, &opts);
                    let o = LineOfSightOptions {
                        raycast,
                        conservative,
                    };
                    line_of_sight_batch(&rays, &w, &o)
                        .into_iter()
                        .map(RaycastOutcome::from)
                        .collect()
                },
            );
            continue;
        }
        let c: Vec<RaycastOutcome> = line_of_sight_batch(&rays, &world, &sight)
            .into_iter()
            .map(RaycastOutcome::from)
            .collect();
        parity(
            &format!("line of sight (conservative {conservative}) {what}"),
            &rays,
            &g,
            &c,
        )?;
    }
    if let Some(c) = &input.camera {
        let at = WorldPos::from_array(std::array::from_fn(|a| c.position[a].get(anchor.axis(a))));
        let (w, h) = (u32::from(c.size.0 % 17), u32::from(c.size.1 % 17));
        if let Ok(camera) = Camera::new(
            at,
            vec3(c.sub),
            vec3(c.forward),
            c.fov.get(),
            w,
            h,
            c.max.get(),
        ) {
            let g = gpu
                .cast(CameraImage(&camera), &gw, &opts)
                .map_err(|e| format!("raycast_camera: {e}"))?;
            let rays: Vec<VoxelRay> = camera.rays().unwrap_or_default();
            if windowed {
                window_rays(&format!("camera {camera:?} {what}"), &rays, &g);
            } else {
                let cpu = raycast_camera(&camera, &world, &opts)
                    .map_err(|e| format!("raycast_camera: {e}"))?;
                parity(&format!("camera {camera:?} {what}"), &rays, &g, &cpu)?;
            }
        }
    }
    boxes(gpu, &gw, &world, &rays, &opts, windowed)
}

/// Box casts from the batch's rays (their start, direction and max distance up to 16 voxels),
/// their half extents by position in the batch (flat, player-sized, grid-aligned, a ray): the
/// GPU's answers equal the CPU's on the world uploaded, or on a window that follows a center,
/// the CPU's on the chunks it holds under its rule (`window_cpu`).
fn boxes(
    gpu: &GpuRaycaster,
    gw: &voxcast::gpu::GpuWorld,
    world: &voxcast::VoxelWorld,
    rays: &[VoxelRay],
    opts: &RaycastOptions,
    windowed: bool,
) -> Result<(), String> {
    use voxcast::glam::Vec3;
    const HALVES: [Vec3; 5] = [
        Vec3::new(0.3, 0.9, 0.3),
        Vec3::splat(0.5),
        Vec3::ZERO,
        Vec3::new(1.0, 0.0, 2.5),
        Vec3::new(0.25, 0.75, 1.0),
    ];
    let casts: Vec<voxcast::BoxCast> = rays
        .iter()
        .enumerate()
        .map(|(i, r)| voxcast::BoxCast {
            body: voxcast::BoxBody {
                center: r.origin,
                center_offset: r.sub_offset,
                half_extents: HALVES[i % HALVES.len()],
            },
            direction: r.direction,
            max_distance: if r.max_distance.is_nan() {
                r.max_distance
            } else {
                r.max_distance.min(16.0)
            },
        })
        .collect();
    let g = gpu
        .cast(BoxCasts(&casts), gw, opts)
        .map_err(|e| format!("box_cast: {e}"))?;
    let held = windowed.then(|| crate::gpu::held_world(gw, world));
    let (w, o) = window_cpu(gw, held.as_ref().unwrap_or(world), world, windowed, opts);
    let c = voxcast::box_cast_batch(&casts, &w, &o);
    match (0..casts.len()).find(|&i| !crate::gpu::same_box_answer(&g[i], &c[i])) {
        Some(i) => Err(format!(
            "box cast #{i} {:?} {opts:?}\n    gpu: {:?}\n    cpu: {:?}",
            casts[i], g[i], c[i]
        )),
        None => Ok(()),
    }
}
