//! The public queries on the CPU reference: one raycast, line of sight (also conservative, along
//! voxel face planes) and batches on rayon, all built on `cast_ray`.

use glam::IVec3;
use rayon::iter::{IndexedParallelIterator, IntoParallelRefIterator, ParallelIterator};

use crate::coords::WorldPos;
use crate::cpu_ref::{cast_ray, cast_unprepared};
use crate::ray::{
    LineOfSight, LineOfSightOptions, PreparedRay, RayError, RaycastOptions, RaycastOutcome,
    VoxelRay, VoxelRaycastHit, WindowOutcome, WindowRay,
};
use crate::world::VoxelWorld;

/// Casts `ray` with the default [`RaycastOptions`] and returns the first stopping voxel.
///
/// Returns `None` on a miss and also for an invalid ray; use [`voxel_raycast_with`] to tell
/// those apart and to choose the origin, material and unloaded policies.
///
/// # Example
/// ```
/// use voxcast::{voxel_raycast, VoxelId, VoxelRay, VoxelWorld, WorldPos, glam::{IVec3, Vec3}};
/// let mut world = VoxelWorld::new();
/// world.set_voxel(WorldPos::new(5, 0, 0), VoxelId(1));
/// let ray = VoxelRay::new(WorldPos::ZERO, Vec3::splat(0.5), Vec3::X, 10.0)?;
/// let hit = voxel_raycast(&ray, &world).expect("hit");
/// assert_eq!(hit.voxel_pos, WorldPos::new(5, 0, 0));
/// assert_eq!(hit.face_normal, IVec3::NEG_X);
/// assert_eq!(hit.distance, 4.5);
/// # Ok::<(), voxcast::RayError>(())
/// ```
#[must_use]
pub fn voxel_raycast(ray: &VoxelRay, world: &VoxelWorld) -> Option<VoxelRaycastHit> {
    voxel_raycast_with(ray, world, &RaycastOptions::default())
        .hit()
        .copied()
}

/// Casts `ray` through `world` with `opts`: the exact reference every other engine matches.
///
/// Never panics: an invalid ray gives [`RaycastOutcome::Invalid`], and a ray reaching the edge
/// of the i128 world ends as [`RaycastOutcome::Miss`].
#[must_use]
pub fn voxel_raycast_with(
    ray: &VoxelRay,
    world: &VoxelWorld,
    opts: &RaycastOptions,
) -> RaycastOutcome {
    cast_unprepared(ray, world, opts)
}

/// Whether the segment `ray` (typically from [`VoxelRay::between`]) is free of stopping
/// voxels up to and including its max distance. See [`LineOfSightOptions::conservative`] for
/// segments through voxel edges and corners, and along voxel face planes, and
/// [`VoxelRay::between`] for an end point on a voxel face (aim off the face).
#[must_use]
pub fn line_of_sight(ray: &VoxelRay, world: &VoxelWorld, opts: &LineOfSightOptions) -> LineOfSight {
    match ray.prepare() {
        Err(e) => LineOfSight::Invalid(e),
        Ok(None) => LineOfSight::Clear,
        Ok(Some(p)) => cast_segment(&p, world, &opts.raycast, opts.conservative).into(),
    }
}

/// Line of sight for one prepared segment: [`cast_ray`], and under the conservative rule on a
/// segment that lies in a voxel face plane ([`PreparedRay::plane_axes`]) also the layers of
/// voxels on the other side of each such plane, each walked as the segment shifted one voxel
/// down on those axes. The nearest answer wins; at equal distances the first layer in the
/// order of `layer` (the segment's own, then shifted on x, y, x and y, z, ...). Twin of
/// `cast_segment` in `shaders/cast.wgsl`.
pub(crate) fn cast_segment(
    r: &PreparedRay,
    world: &VoxelWorld,
    opts: &RaycastOptions,
    conservative: bool,
) -> RaycastOutcome {
    let mut best = cast_ray(r, world, opts, conservative, 0.0);
    let planes = if conservative { r.plane_axes() } else { 0 };
    if planes == 0 {
        return best;
    }
    for layer in (1..8).filter(|&m| m & planes == m) {
        // A layer beyond the edge of the i128 world holds nothing.
        if let Some(shifted) = r.shifted_down(layer) {
            let o = on_high_faces(cast_ray(&shifted, world, opts, true, 0.0), layer);
            if nearer(&o, &best) {
                best = o;
            }
        }
    }
    best
}

/// A hit in the layer moved down on the axes of `layer` lies at its voxel's high face on those
/// axes: its UV there is 1, where the moved segment gives 0. Twin of `on_high_faces` in
/// `shaders/cast.wgsl`.
fn on_high_faces(o: RaycastOutcome, layer: u32) -> RaycastOutcome {
    match o {
        RaycastOutcome::Hit(mut h) if h.face_normal != IVec3::ZERO => {
            let (u, v) = if h.face_normal.x != 0 {
                (1, 2)
            } else if h.face_normal.y != 0 {
                (0, 2)
            } else {
                (0, 1)
            };
            if layer >> u & 1 != 0 {
                h.hit_uv.x = 1.0;
            }
            if layer >> v & 1 != 0 {
                h.hit_uv.y = 1.0;
            }
            RaycastOutcome::Hit(h)
        }
        o => o,
    }
}

/// Whether outcome `a` lies strictly nearer than `b` along the ray: a miss is never nearer,
/// and anything else is nearer than a miss. Twin of `nearer` in `shaders/cast.wgsl`.
fn nearer(a: &RaycastOutcome, b: &RaycastOutcome) -> bool {
    let distance = |o: &RaycastOutcome| match *o {
        RaycastOutcome::Hit(h) => Some(h.distance),
        RaycastOutcome::Unloaded { distance, .. } => Some(distance),
        RaycastOutcome::Miss | RaycastOutcome::Invalid(_) => None,
    };
    match (distance(a), distance(b)) {
        (Some(ta), Some(tb)) => ta < tb,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// Casts every ray on all threads (rayon) and returns the outcomes in the input order, each
/// exactly what [`voxel_raycast_with`] answers for it. A bad ray gets
/// [`RaycastOutcome::Invalid`]; the others are still answered.
///
/// Runs of 128 or more consecutive rays from one start point (the same origin voxel and
/// sub-offset: a camera's or a LiDAR's rays built by hand, rays in pixel order from one eye)
/// are cast as sweeps under [`UnloadedPolicy::Air`](crate::UnloadedPolicy::Air) without
/// `per_voxel`: sorted by direction into groups of nearby rays (within blocks of 4,096
/// consecutive rays), each group crossing the air above the ground together before its rays
/// walk alone, where a trial of the run finds that this pays. Same answers, faster for long
/// rays over open ground (`BENCHMARKS.md`).
#[must_use]
pub fn raycast_batch(
    rays: &[VoxelRay],
    world: &VoxelWorld,
    opts: &RaycastOptions,
) -> Vec<RaycastOutcome> {
    let mut out = Vec::new();
    raycast_batch_into(rays, world, opts, &mut out);
    out
}

/// [`raycast_batch`] into `out`, which is cleared and refilled in input order. Its allocation
/// is reused: a caller that keeps `out` between frames saves allocating (and the operating
/// system zeroing) `size_of::<RaycastOutcome>()` bytes per ray on every call.
pub fn raycast_batch_into(
    rays: &[VoxelRay],
    world: &VoxelWorld,
    opts: &RaycastOptions,
    out: &mut Vec<RaycastOutcome>,
) {
    super::sweep::cast_batch_into(rays, world, opts, out);
}

/// [`raycast_batch_into`] on the calling thread only: for a caller that spreads its batches
/// over threads of its own (a game's job system, or a package that writes each block of
/// answers straight into its own arrays). `out` is cleared and refilled in input order, each
/// outcome exactly [`voxel_raycast_with`]'s; runs of 128 or more consecutive rays from one
/// start point are swept as [`raycast_batch`] describes, so hand it blocks of a few thousand
/// rays (a few rows of a camera's pixels) for the sweep to find its groups.
pub fn raycast_batch_serial_into(
    rays: &[VoxelRay],
    world: &VoxelWorld,
    opts: &RaycastOptions,
    out: &mut Vec<RaycastOutcome>,
) {
    super::sweep::cast_serial_into(rays, world, opts, out);
}

/// [`line_of_sight`] for many segments on all threads, in input order.
#[must_use]
pub fn line_of_sight_batch(
    rays: &[VoxelRay],
    world: &VoxelWorld,
    opts: &LineOfSightOptions,
) -> Vec<LineOfSight> {
    let mut out = Vec::new();
    line_of_sight_batch_into(rays, world, opts, &mut out);
    out
}

/// [`line_of_sight_batch`] into `out`, cleared and refilled in input order, its allocation
/// reused (see [`raycast_batch_into`]).
pub fn line_of_sight_batch_into(
    rays: &[VoxelRay],
    world: &VoxelWorld,
    opts: &LineOfSightOptions,
    out: &mut Vec<LineOfSight>,
) {
    rays.par_iter()
        .with_min_len(256)
        .map(|r| line_of_sight(r, world, opts))
        .collect_into_vec(out);
}

/// [`raycast_batch_into`] for rays given relative to origin voxel `origin` ([`WindowRay`]),
/// answered relative to it ([`WindowOutcome::from_outcome`]), on all threads, in input order.
/// The CPU twin of
/// [`Rays`](crate::gpu::Rays) of window rays with
/// `origin` the world's [`window_origin`](crate::gpu::GpuWorld::window_origin). A ray whose
/// voxel plus `origin` leaves the i128 world is [`WindowOutcome::Invalid`] with
/// [`RayError::OriginOutOfRange`].
pub fn raycast_window_batch_into(
    rays: &[WindowRay],
    origin: WorldPos,
    world: &VoxelWorld,
    opts: &RaycastOptions,
    out: &mut Vec<WindowOutcome>,
) {
    window_batch_into(rays, origin, out, |r| voxel_raycast_with(r, world, opts));
}

/// [`line_of_sight_batch_into`] for segments given relative to origin voxel `origin`, as
/// [`raycast_window_batch_into`] takes rays: [`WindowOutcome::Miss`] for
/// [`LineOfSight::Clear`], [`WindowOutcome::Hit`] for [`LineOfSight::Blocked`],
/// [`WindowOutcome::Unloaded`] for [`LineOfSight::Unknown`].
pub fn line_of_sight_window_batch_into(
    rays: &[WindowRay],
    origin: WorldPos,
    world: &VoxelWorld,
    opts: &LineOfSightOptions,
    out: &mut Vec<WindowOutcome>,
) {
    window_batch_into(rays, origin, out, |r| line_of_sight(r, world, opts).into());
}

/// `cast` of each ray's [`WindowRay::to_voxel_ray`] on all threads, in input order, relative
/// to `origin`.
fn window_batch_into(
    rays: &[WindowRay],
    origin: WorldPos,
    out: &mut Vec<WindowOutcome>,
    cast: impl Fn(&VoxelRay) -> RaycastOutcome + Sync,
) {
    rays.par_iter()
        .with_min_len(256)
        .map(|r| {
            let o = r
                .to_voxel_ray(origin)
                .map_or(RaycastOutcome::Invalid(RayError::OriginOutOfRange), |r| {
                    cast(&r)
                });
            WindowOutcome::from_outcome(&o, origin)
        })
        .collect_into_vec(out);
}
