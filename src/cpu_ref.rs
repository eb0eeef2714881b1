//! The exact reference DDA: the definition of a correct answer.
//!
//! Every function here (and in the modules `dda` and `traversal`) that the GPU also runs has a
//! twin of the same name in `shaders/dda.wgsl`, with the same constants and the same
//! comparisons in the same order, so the two can be read side by side: [`crossing_t`],
//! [`next_axis`], [`crossings_before`] (written out inside the shader's `skip_cell`),
//! `RegionCache::run` (`region_run` there), `tied_axes`, `tie_ranks`, `tie_extra` and
//! `cast_ray` here; `dda_step`, `walk_dense`, `skip_cell` and `face_uv` in `dda.rs`;
//! `empty_block` and `empty_cell` in `world/summary.rs`. The host-only parts (validation in
//! [`VoxelRay::prepare`], clipping to a box in `enter_box`) produce the state the GPU starts
//! from. Under [`UnloadedPolicy::Air`] a ray ends where it leaves the
//! occupied bounds; the GPU, which keeps no such bounds, walks on to its window's edge (the
//! loaded bounds at upload, grown by a chunk).
//!
//! Empty space is skipped at three levels, each landing on exactly the state that stepping
//! voxel by voxel reaches (`skip_cell`): inside a dense chunk, runs of empty `8³` bricks
//! (`empty_cell`); a chunk that holds nothing that stops the ray, whole; and around an empty
//! or (under [`UnloadedPolicy::Air`]) unloaded chunk, runs of such chunks inside its region of
//! `4×4×4` chunks (`RegionCache::run`, from the region summaries `VoxelWorld` keeps).
//!
//! The CPU also skips the air above the ground: `VoxelWorld` keeps, per region, how high the
//! non-air voxels of each column of bricks reach (`ColumnTops`), and where a voxel lies above
//! its column's top, the box from the top of its brick column, chunk column or whole region up
//! to the region's top is skipped whole (`column_cell`), before the cells above are tried. A
//! ray over terrain crosses a chunk column per skip there instead of walking down its empty
//! bricks. Under `Stop` only in regions where every chunk is loaded. The GPU keeps no tops and
//! reaches the same states by the cells above (as it does without the occupied bounds).

use glam::{IVec3, Vec2};
use rayon::prelude::*;

use crate::aabb::ray_aabb_f64;
use crate::coords::{CHUNK_SHIFT, ChunkPos, VoxelBox, WorldPos};
use crate::ray::{
    LineOfSight, LineOfSightOptions, MaterialFilter, OriginPolicy, PreparedRay, RaycastOptions,
    RaycastOutcome, UnloadedPolicy, VoxelRay, VoxelRaycastHit,
};
use crate::world::{
    BRICK_EDGE, ChunkView, ColumnTops, DenseChunk, REGION_SHIFT, RegionSummary, VoxelId,
    VoxelWorld, empty_block, empty_cell, region_cell, region_of,
};

mod dda;
mod traversal;

use dda::Walk;
pub(crate) use dda::{Dda, Halt, face_uv};
pub use traversal::{TraversalStep, VoxelTraversal};

/// `entry_axis` of the origin voxel: no face was crossed.
pub(crate) const AXIS_NONE: u32 = 3;
/// Stand-in for the next crossing of a disabled axis: finite (the GPU may assume no
/// infinities), larger than every real crossing and every max distance.
pub(crate) const T_DISABLED: f32 = f32::MAX;
/// Max distance, in voxels, from which a ray counts as long: long rays skip empty bricks
/// whole in worlds where much of the air lies in them, others step through them voxel by
/// voxel (same answers; see [`VoxelWorld::skips_empty_bricks`] for the numbers).
pub(crate) const LONG_RAY: f32 = 256.0;

/// Lowest and highest chunk index of the i128 world.
const CHUNK_MIN: i128 = ChunkPos::MIN_INDEX;
const CHUNK_MAX: i128 = ChunkPos::MAX_INDEX;

/// Distance to the `n`-th crossing (`n = 0, 1, ...`) on one axis: `(b + n) · inv` in f32.
/// Computed from the count, never accumulated, so every path to the same crossing (stepping,
/// skipping, clipping, the GPU) gets the same bits. Exact for `n < 2^24`. Twin of
/// `crossing_t` in `shaders/dda.wgsl`.
#[inline(always)]
#[must_use]
pub fn crossing_t(b: f32, inv: f32, n: u32) -> f32 {
    (b + n as f32) * inv
}

/// The axis whose next crossing comes first; ties go to x, then y, then z. Twin of
/// `next_axis` in `shaders/dda.wgsl`.
#[inline(always)]
#[must_use]
pub fn next_axis(t: [f32; 3]) -> usize {
    if t[0] <= t[1] && t[0] <= t[2] {
        0
    } else if t[1] <= t[2] {
        1
    } else {
        2
    }
}

/// How many crossings on one axis, counting from crossing `n`, come strictly before distance
/// `t_end`. Used to land a skip on exactly the state that stepping voxel by voxel reaches.
/// Runs at most one chunk edge of iterations when the caller skips within a chunk. Counts
/// within a brick are small, so a linear count is the fastest there; `skip_cell` starts long
/// (chunk) skips from a checked estimate instead. The shader runs it on all three axes at once
/// inside `skip_cell` in `shaders/dda.wgsl`.
#[inline]
#[must_use]
pub fn crossings_before(b: f32, inv: f32, n: u32, t_end: f32) -> u32 {
    count_before::<false>(b, inv, n, crossing_t(b, inv, n), t_end).0
}

/// [`crossings_before`] given `t_n = crossing_t(b, inv, n)` (the DDA keeps it cached), also
/// returning the first crossing at or after `t_end`: the axis's next crossing after the skip.
/// With `NEAR`, counts only crossings that are not near-tied with `t_end` either (see
/// [`tie_scaled`]).
#[inline(always)]
fn count_before<const NEAR: bool>(b: f32, inv: f32, n: u32, t_n: f32, t_end: f32) -> (u32, f32) {
    let (mut c, mut t) = (0, t_n);
    while tie_scaled::<NEAR>(t) < t_end {
        c += 1;
        t = crossing_t(b, inv, n + c);
    }
    (c, t)
}

/// Crossings this close count as one edge or corner for conservative line of sight: a crossing
/// at `t'` is tied with an earlier one at `t` when `t' <= t · NEAR_TIE` (one rounding, so the
/// shader computes the same bits). `1 + 2⁻²⁰`, about 16 ulps: where a segment between two
/// voxel centres or corners passes through an edge in exact arithmetic, its f32 crossings were
/// found to differ by up to 3 ulps (the direction is rounded when normalised, `1/|d|` when
/// taken, each crossing once more). Same constant in `shaders/dda.wgsl`.
pub(crate) const NEAR_TIE: f32 = 1.0 + 1.0 / 1_048_576.0;

/// `t` as a skip compares it with the crossing that leaves the cell: under conservative line of
/// sight (`NEAR`) scaled by [`NEAR_TIE`], so that a skip also stops before every crossing that
/// is near-tied with that exit, and the tie test sees the whole group.
#[inline(always)]
fn tie_scaled<const NEAR: bool>(t: f32) -> f32 {
    if NEAR { t * NEAR_TIE } else { t }
}

/// Whether crossing `(t, axis)` comes before crossing `(t_ref, axis_ref)` in stepping order.
#[inline]
fn crossing_before(t: f32, axis: usize, t_ref: f32, axis_ref: usize) -> bool {
    t < t_ref || (t == t_ref && axis < axis_ref)
}

/// An inclusive box of local voxel coordinates, `(lo, hi)`, that holds nothing that stops the
/// ray and so can be skipped in one step.
type Cell = ([i32; 3], [i32; 3]);

/// The chunk range `lo..=hi` grown by one chunk on every side, within the i128 world.
pub(crate) fn grow_by_a_chunk(lo: ChunkPos, hi: ChunkPos) -> (ChunkPos, ChunkPos) {
    let grow = |c: i128, by: i128| c.saturating_add(by).clamp(CHUNK_MIN, CHUNK_MAX);
    (
        ChunkPos::new(grow(lo.x, -1), grow(lo.y, -1), grow(lo.z, -1)),
        ChunkPos::new(grow(hi.x, 1), grow(hi.y, 1), grow(hi.z, 1)),
    )
}

/// What a voxel does to the ray, from its chunk.
#[derive(Clone, Copy)]
enum ChunkKind<'w> {
    Unloaded,
    Uniform(VoxelId),
    Dense(&'w DenseChunk),
}

fn chunk_kind(world: &VoxelWorld, chunk: [i128; 3]) -> ChunkKind<'_> {
    match world
        .chunk(crate::ChunkPos::new(chunk[0], chunk[1], chunk[2]))
        .map(|c| c.view())
    {
        None => ChunkKind::Unloaded,
        Some(ChunkView::Uniform(id)) => ChunkKind::Uniform(id),
        Some(ChunkView::Dense(d)) => ChunkKind::Dense(d),
    }
}

/// The axes whose next crossing is at `t` (bit `a` for axis `a`), the first crossing, or
/// near-tied with it (within [`NEAR_TIE`]): a tie group, an edge or corner that the ray passes
/// through, when two or three bits are set. Twin of `tied_axes` in `shaders/dda.wgsl`.
#[inline]
fn tied_axes(t_next: [f32; 3], t: f32) -> u32 {
    let near = t * NEAR_TIE;
    u32::from(t_next[0] <= near)
        | u32::from(t_next[1] <= near) << 1
        | u32::from(t_next[2] <= near) << 2
}

/// Each axis's place (0 first) in the order stepping crosses the tie group `tied`: by crossing
/// distance, equal distances x, then y, then z (as [`next_axis`] picks them). Axes outside the
/// group are not counted. Twin of `tie_ranks` in `shaders/dda.wgsl`.
#[inline]
fn tie_ranks(t: [f32; 3], tied: u32) -> [u32; 3] {
    let g = |a: usize| tied >> a & 1 != 0;
    [
        u32::from(g(1) && t[1] < t[0]) + u32::from(g(2) && t[2] < t[0]),
        u32::from(g(0) && t[0] <= t[1]) + u32::from(g(2) && t[2] < t[1]),
        u32::from(g(0) && t[0] <= t[2]) + u32::from(g(1) && t[1] <= t[2]),
    ]
}

/// Whether `mask` (a subset of the tie group `tied`, whose axes stepping crosses in the order
/// `ranks`) names a voxel that the tie touches but stepping does not visit. Stepping visits the
/// "prefixes" of the group in that order (the first axis, then the first two, ...): a mask is a
/// prefix exactly when its last axis in that order has rank `popcount - 1`. Every other
/// non-empty subset is an extra voxel touching the same edge or corner. Twin of `tie_extra` in
/// `shaders/dda.wgsl`.
#[inline]
fn tie_extra(tied: u32, ranks: [u32; 3], mask: u32) -> bool {
    let m = |a: usize| mask >> a & 1 != 0;
    // One more than the highest rank in the mask (0 for an empty mask).
    let last = [0, 1, 2]
        .map(|a| if m(a) { ranks[a] + 1 } else { 0 })
        .into_iter()
        .max()
        .unwrap_or(0);
    mask & tied == mask && last > mask.count_ones()
}

/// Casts one prepared ray: the whole reference algorithm. Twin of `cast_ray` in
/// `shaders/dda.wgsl`.
pub(crate) fn cast_ray(
    r: &PreparedRay,
    world: &VoxelWorld,
    opts: &RaycastOptions,
    conservative: bool,
) -> RaycastOutcome {
    // Under `Air` nothing outside the occupied bounds stops the ray, and the DDA's chunk
    // coordinates only move away from a box once they have left it: a ray outside is a miss.
    // Per-voxel mode stops at the loaded bounds instead, so that comparing the modes tests this.
    let air_chunks = match opts.unloaded {
        UnloadedPolicy::Air => {
            let range = if opts.per_voxel {
                world.loaded_chunk_bounds()
            } else {
                world.occupied_chunk_bounds()
            };
            // Conservative line of sight also tests voxels beside the ray at edges and corners:
            // those of a crossing inside the box lie within one voxel of the crossing's two
            // voxels, so a margin of a chunk around the box keeps every such crossing.
            match range {
                None => return RaycastOutcome::Miss,
                Some((lo, hi)) if conservative => Some(grow_by_a_chunk(lo, hi)),
                range => range,
            }
        }
        UnloadedPolicy::Stop if world.loaded_bounds().is_some() => None,
        UnloadedPolicy::Stop if opts.origin == OriginPolicy::SkipOriginVoxel => {
            let mut d = Dda::new(r);
            if conservative && let Some(o) = unloaded_tie_extra(&d, opts) {
                return o;
            }
            return match d.dda_step() {
                Ok(_) => RaycastOutcome::Unloaded {
                    at: d.voxel(),
                    distance: d.t,
                },
                Err(Halt::Miss) => RaycastOutcome::Miss,
            };
        }
        UnloadedPolicy::Stop => {
            return RaycastOutcome::Unloaded {
                at: r.start,
                distance: 0.0,
            };
        }
    };
    // Chunk c is outside `lo..=hi` on axis a when `c - lo`, taken as unsigned, exceeds
    // `hi - lo`: one comparison per axis, none branching.
    let (chunk_lo, span) = air_chunks.map_or(([0; 3], [0; 3]), |(lo, hi)| {
        (
            [lo.x, lo.y, lo.z],
            [0, 1, 2].map(|a| hi.axis(a).wrapping_sub(lo.axis(a)) as u128),
        )
    });
    let outside = |c: [i128; 3]| {
        (c[0].wrapping_sub(chunk_lo[0]) as u128 > span[0])
            | (c[1].wrapping_sub(chunk_lo[1]) as u128 > span[1])
            | (c[2].wrapping_sub(chunk_lo[2]) as u128 > span[2])
    };
    let mut d = Dda::new(r);
    let mut in_origin = true;
    let mut air_seen = opts.origin != OriginPolicy::ExitSolid;
    let mut regions = RegionCache::default();
    let every_non_air = opts.blocks.is_every_non_air();
    let stops = |id: VoxelId| {
        if every_non_air {
            !id.is_air()
        } else {
            opts.blocks.contains(id)
        }
    };
    if let Some((lo, hi)) = air_chunks
        && let bounds = VoxelBox::from_chunks(lo, hi)
        && !bounds.contains(r.start)
    {
        if !d.enter_box(&bounds) {
            return RaycastOutcome::Miss;
        }
        // The voxels before the box were air or unloaded: the origin voxel has been passed.
        in_origin = false;
        air_seen = true;
    }
    let skip_bricks = world.skip_bricks_for(r.max_distance);
    let short = r.max_distance < LONG_RAY;
    let reportable = |in_origin: bool, air_seen: bool| {
        !(in_origin && opts.origin == OriginPolicy::SkipOriginVoxel) && air_seen
    };

    loop {
        // Entered a new chunk (or started): classify it once.
        if air_chunks.is_some() && outside(d.chunk) {
            return RaycastOutcome::Miss;
        }
        let kind = chunk_kind(world, d.chunk);
        loop {
            // Under `Report` the origin voxel is examined like any other.
            if let ChunkKind::Dense(c) = kind
                && (!in_origin || opts.origin == OriginPolicy::Report)
                && air_seen
                && !conservative
                && !opts.per_voxel
            {
                let blocks = &opts.blocks;
                let walk = if skip_bricks {
                    let tops = regions.tops(world, d.chunk, opts.unloaded);
                    d.walk_dense::<true, false>(c, every_non_air, blocks, tops)
                } else if short && c.ids.has_occupancy() {
                    d.walk_dense::<false, true>(c, every_non_air, blocks, None)
                } else {
                    d.walk_dense::<false, false>(c, every_non_air, blocks, None)
                };
                match walk {
                    Walk::Hit(id) => return RaycastOutcome::Hit(d.hit(id)),
                    Walk::Miss => return RaycastOutcome::Miss,
                    Walk::LeftChunk => break,
                }
            }
            // Examine the current voxel.
            let (stop_id, passable_cell): (Option<VoxelId>, Option<Cell>) = match kind {
                ChunkKind::Unloaded => match opts.unloaded {
                    UnloadedPolicy::Air => (None, Some(([0; 3], [31; 3]))),
                    UnloadedPolicy::Stop
                        if in_origin && opts.origin == OriginPolicy::SkipOriginVoxel =>
                    {
                        (None, None)
                    }
                    UnloadedPolicy::Stop => {
                        return RaycastOutcome::Unloaded {
                            at: d.voxel(),
                            distance: d.t,
                        };
                    }
                },
                ChunkKind::Uniform(id) => {
                    if stops(id) {
                        (Some(id), None)
                    } else {
                        (None, Some(([0; 3], [31; 3])))
                    }
                }
                ChunkKind::Dense(c) => {
                    let [x, y, z] = d.local.map(|v| v as u32);
                    let word = c.occupancy[(y | z << 5) as usize];
                    if word >> x & 1 != 0 {
                        let id = c.ids.id_in_row(y | z << 5, x);
                        if stops(id) {
                            (Some(id), None)
                        } else {
                            (None, None)
                        }
                    } else if let Some((lo, hi)) = empty_cell(c.bricks, x, y, z) {
                        (None, Some((lo.map(|v| v as i32), hi.map(|v| v as i32))))
                    } else {
                        (None, None)
                    }
                }
            };
            match stop_id {
                Some(id) if reportable(in_origin, air_seen) => {
                    return RaycastOutcome::Hit(d.hit(id));
                }
                Some(_) => {}
                None => air_seen = true,
            }
            // Skip a cell that holds nothing that stops the ray, then cross out of it. The skip
            // lands before any crossing tied with the cell's exit, so the conservative corner
            // test below still sees the whole tie group.
            let mut moved = false;
            if let (Some((mut lo, mut hi)), false) = (passable_cell, opts.per_voxel) {
                // A whole chunk that holds nothing that stops the ray: cross the run of such
                // chunks around it (as the shader does, after classifying the chunk).
                if !matches!(kind, ChunkKind::Dense(_)) {
                    (lo, hi) = match regions
                        .tops(world, d.chunk, opts.unloaded)
                        .and_then(|t| column_cell(t, &d))
                    {
                        Some(cell) => cell,
                        None => regions.run(world, d.chunk, opts.unloaded),
                    };
                }
                let skipped = if conservative {
                    d.skip_cell::<true>(lo, hi)
                } else {
                    d.skip_cell::<false>(lo, hi)
                };
                if skipped.is_err() {
                    return RaycastOutcome::Miss;
                }
                // A run of chunks may have ended in another chunk.
                moved = d.carry_local();
            }
            in_origin = false;
            if conservative
                && let Some(o) =
                    next_tie_extras(&d, &|p| world.get_voxel(p), opts, air_seen, &stops)
            {
                return o;
            }
            match d.dda_step() {
                Err(Halt::Miss) => return RaycastOutcome::Miss,
                Ok(entered) if entered || moved => break,
                Ok(_) => {}
            }
        }
    }
}

/// What the world keeps of the region a ray is in (its summary, see `RegionSummary`, and its
/// column tops), looked up once per region entered rather than once per chunk.
#[derive(Default)]
struct RegionCache<'w>(Option<([i128; 3], RegionSummary, Option<&'w ColumnTops>)>);

impl<'w> RegionCache<'w> {
    /// The summary and column tops of the region holding chunk `c`.
    #[inline]
    fn get(
        &mut self,
        world: &'w VoxelWorld,
        c: [i128; 3],
    ) -> (RegionSummary, Option<&'w ColumnTops>) {
        let (region, _) = region_of(c);
        match self.0 {
            // Compared field by field: `==` on `[i128; 3]` calls `memcmp`.
            Some((r, s, t)) if r[0] == region[0] && r[1] == region[1] && r[2] == region[2] => {
                (s, t)
            }
            _ => {
                let (s, t) = world
                    .region_entry(region)
                    .map_or((RegionSummary::default(), None), |r| {
                        (r.summary, Some(&*r.tops))
                    });
                self.0 = Some((region, s, t));
                (s, t)
            }
        }
    }

    /// The column tops of the region holding chunk `c`, where the boxes above them hold
    /// nothing that stops the ray: always under `UnloadedPolicy::Air`, and under `Stop` when
    /// every chunk of the region is loaded.
    #[inline]
    fn tops(
        &mut self,
        world: &'w VoxelWorld,
        c: [i128; 3],
        unloaded: UnloadedPolicy,
    ) -> Option<&'w ColumnTops> {
        let (s, t) = self.get(world, c);
        match unloaded {
            UnloadedPolicy::Air => t,
            UnloadedPolicy::Stop => t.filter(|_| s.loaded == u64::MAX),
        }
    }

    /// The cell to skip from chunk `c`, which holds nothing that stops the ray: the largest
    /// run of chunks around it that hold nothing but air (or, under `UnloadedPolicy::Air`, are
    /// not loaded) in its region (see `empty_block`), or `c` alone. In local coordinates of
    /// `c`, so corners may lie outside `0..32`. Twin of `region_run` in `shaders/dda.wgsl`,
    /// which reads the same bits from the region records `GpuWorld` uploads.
    fn run(&mut self, world: &'w VoxelWorld, c: [i128; 3], unloaded: UnloadedPolicy) -> Cell {
        let (s, _) = self.get(world, c);
        let blocked = match unloaded {
            UnloadedPolicy::Air => s.occupied,
            UnloadedPolicy::Stop => s.occupied | !s.loaded,
        };
        let at = c.map(|v| (v & ((1 << REGION_SHIFT) - 1)) as i32);
        match empty_block(blocked, at[0] as u32, at[1] as u32, at[2] as u32) {
            Some((lo, hi)) => (
                std::array::from_fn(|a| (lo[a] as i32 - at[a]) << CHUNK_SHIFT),
                std::array::from_fn(|a| ((hi[a] as i32 - at[a]) << CHUNK_SHIFT) | 31),
            ),
            None => ([0; 3], [31; 3]),
        }
    }
}

/// The empty box above the column tops `tops` of its region (see `ColumnTops::cell`) that holds
/// the current voxel of `d`, in local coordinates of its chunk (corners may lie outside
/// `0..32`); `None` where the voxel lies below its brick column's top.
#[inline]
fn column_cell(tops: &ColumnTops, d: &Dda<'_>) -> Option<Cell> {
    let at = region_offset(d.chunk);
    let (lo, hi) = tops.cell(
        at[0] + d.local[0] as u32,
        at[1] + d.local[1] as u32,
        at[2] + d.local[2] as u32,
    )?;
    Some((
        std::array::from_fn(|a| lo[a] as i32 - at[a] as i32),
        std::array::from_fn(|a| hi[a] as i32 - at[a] as i32),
    ))
}

/// Region-local voxel coordinates of the lowest voxel of chunk `c`.
#[inline]
fn region_offset(c: [i128; 3]) -> [u32; 3] {
    region_cell(c).map(|v| v << CHUNK_SHIFT)
}

/// Conservative line of sight from the start voxel `d` of a ray under [`UnloadedPolicy::Stop`]
/// when the voxels beside it are unloaded (nothing is loaded, or on the GPU the ray starts
/// outside the window): `Unloaded` at the first voxel that touches the first crossing's edge or
/// corner but that stepping does not visit, as [`cast_ray`] answers there; `None` when the first
/// crossing is no tie (or beyond max distance), or every such voxel lies beyond the i128 world.
pub(crate) fn unloaded_tie_extra(d: &Dda<'_>, opts: &RaycastOptions) -> Option<RaycastOutcome> {
    next_tie_extras(d, &|_| None, opts, true, &|_| false)
}

/// [`check_tie_extras`] at the next crossing, where that is the first crossing of a tie group
/// (not one the current voxel was entered by) within max distance; `None` elsewhere.
fn next_tie_extras(
    d: &Dda<'_>,
    voxel_at: &dyn Fn(&WorldPos) -> Option<VoxelId>,
    opts: &RaycastOptions,
    air_seen: bool,
    stops: &dyn Fn(VoxelId) -> bool,
) -> Option<RaycastOutcome> {
    let t_cross = d.t_next[next_axis(d.t_next)];
    (t_cross > d.t && t_cross <= d.ray.max_distance)
        .then(|| check_tie_extras(d, voxel_at, opts, t_cross, air_seen, stops))
        .flatten()
}

/// Conservative line of sight: at the first crossing of a tie group, test the voxels that
/// touch the crossed edge or corner but that stepping will not visit.
fn check_tie_extras(
    d: &Dda<'_>,
    voxel_at: &dyn Fn(&WorldPos) -> Option<VoxelId>,
    opts: &RaycastOptions,
    t_cross: f32,
    air_seen: bool,
    stops: &dyn Fn(VoxelId) -> bool,
) -> Option<RaycastOutcome> {
    let r = d.ray;
    let base = d.voxel();
    let tied = tied_axes(d.t_next, t_cross);
    if tied.count_ones() < 2 {
        return None;
    }
    let ranks = tie_ranks(d.t_next, tied);
    for mask in (1..8).filter(|&m| tie_extra(tied, ranks, m)) {
        let mut off = IVec3::ZERO;
        let mut n = d.n;
        // The mask's axis crossed last in stepping order: the face the voxel is entered by.
        let (mut last_axis, mut last_rank) = (0, 0);
        for a in 0..3 {
            if mask >> a & 1 != 0 {
                off[a] = i32::from(r.step[a]);
                n[a] += 1;
                if ranks[a] + 1 > last_rank {
                    (last_axis, last_rank) = (a, ranks[a] + 1);
                }
            }
        }
        let Some(p) = base.checked_offset(off) else {
            continue;
        };
        match voxel_at(&p) {
            None if opts.unloaded == UnloadedPolicy::Stop => {
                return Some(RaycastOutcome::Unloaded {
                    at: p,
                    distance: t_cross,
                });
            }
            Some(id) if stops(id) && air_seen => {
                let mut normal = IVec3::ZERO;
                normal[last_axis] = -i32::from(r.step[last_axis]);
                return Some(RaycastOutcome::Hit(VoxelRaycastHit {
                    voxel_pos: p,
                    face_normal: normal,
                    distance: t_cross,
                    voxel_type: id,
                    hit_uv: face_uv(r, n, t_cross, last_axis as u32),
                }));
            }
            _ => {}
        }
    }
    None
}

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
    match ray.prepare() {
        Err(e) => RaycastOutcome::Invalid(e),
        Ok(None) => RaycastOutcome::Miss,
        Ok(Some(p)) => cast_ray(&p, world, opts, false),
    }
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
/// `cast_segment` in `shaders/dda.wgsl`.
pub(crate) fn cast_segment(
    r: &PreparedRay,
    world: &VoxelWorld,
    opts: &RaycastOptions,
    conservative: bool,
) -> RaycastOutcome {
    let mut best = cast_ray(r, world, opts, conservative);
    let planes = if conservative { r.plane_axes() } else { 0 };
    if planes == 0 {
        return best;
    }
    for layer in (1..8).filter(|&m| m & planes == m) {
        // A layer beyond the edge of the i128 world holds nothing.
        if let Some(shifted) = r.shifted_down(layer) {
            let o = on_high_faces(cast_ray(&shifted, world, opts, true), layer);
            if nearer(&o, &best) {
                best = o;
            }
        }
    }
    best
}

/// A hit in the layer moved down on the axes of `layer` lies at its voxel's high face on those
/// axes: its UV there is 1, where the moved segment gives 0. Twin of `on_high_faces` in
/// `shaders/dda.wgsl`.
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
/// and anything else is nearer than a miss. Twin of `nearer` in `shaders/dda.wgsl`.
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

/// Casts every ray on all threads (rayon) and returns the outcomes in the input order. A bad
/// ray gets [`RaycastOutcome::Invalid`]; the others are still answered.
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
    rays.par_iter()
        .with_min_len(256)
        .map(|r| voxel_raycast_with(r, world, opts))
        .collect_into_vec(out);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_axis_tie_order() {
        assert_eq!(next_axis([1.0, 1.0, 1.0]), 0);
        assert_eq!(next_axis([2.0, 1.0, 1.0]), 1);
        assert_eq!(next_axis([2.0, 2.0, 1.0]), 2);
        assert_eq!(next_axis([T_DISABLED, 3.0, T_DISABLED]), 1);
    }

    #[test]
    fn crossings_before_counts_strictly() {
        // b = 0.5, inv = 1: crossings at 0.5, 1.5, 2.5, ...
        assert_eq!(crossings_before(0.5, 1.0, 0, 2.5), 2);
        assert_eq!(crossings_before(0.5, 1.0, 1, 2.6), 2);
        assert_eq!(crossings_before(0.5, 1.0, 0, 0.5), 0);
    }

    #[test]
    fn tie_extras_cover_edge_and_corner() {
        let t = [1.0; 3];
        let extras = |tied| {
            (1..8)
                .filter(|&m| tie_extra(tied, tie_ranks(t, tied), m))
                .collect::<Vec<_>>()
        };
        assert_eq!(tied_axes([1.0, 1.0, 2.0], 1.0), 0b011);
        assert_eq!(extras(0b011), [0b010]);
        assert_eq!(extras(0b101), [0b100]);
        assert_eq!(extras(0b110), [0b100]);
        assert_eq!(extras(0b111), [0b010, 0b100, 0b101, 0b110]);
        assert!(extras(0b001).is_empty());
    }
}
