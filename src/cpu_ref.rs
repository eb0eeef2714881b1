//! The exact reference DDA: the definition of a correct answer.
//!
//! Every function here (and in the modules `dda`, `ties` and `traversal`) that the GPU also
//! runs has a twin of the same name in the shader's stage files (`shaders/`), with the same
//! constants and the same comparisons in the same order, so the two can be read side by side
//! (each stage file's header lists its twins): `crossing_t`, `next_axis`, `crossings_before`
//! (written out inside the shader's `skip_box`), `RegionCache::run` (`region_run` there) and
//! `cast_ray` here (its body in `Cast::ray`; what a batch shares is made once, in
//! `Cast::new`); `tied_axes`, `tie_ranks` and `tie_extra` in `ties.rs`; `dda_step`,
//! `walk_dense`, `skip_box` and `face_uv` in `dda.rs`; `empty_block` and `empty_box` in `world/summary.rs`. The public queries built on
//! `cast_ray` (one ray, line of sight, the batches) are in `queries.rs`. The host-only parts
//! (validation in [`VoxelRay::prepare`](crate::ray::VoxelRay::prepare), clipping to a box in `enter_box`) produce the state
//! the GPU starts from. Under [`UnloadedPolicy::Air`] a ray ends where it leaves the occupied
//! bounds; the GPU, which keeps no such bounds, walks on to its window's edge (the loaded
//! bounds at upload, grown by a chunk).
//!
//! Empty space is skipped at three levels, each landing on exactly the state that stepping
//! voxel by voxel reaches (`skip_box`): inside a dense chunk, runs of empty `8³` bricks
//! (`empty_box`); a chunk that holds nothing that stops the ray, whole; and around an empty
//! or (under [`UnloadedPolicy::Air`]) unloaded chunk, runs of such chunks inside its region of
//! `4×4×4` chunks (`RegionCache::run`, from the region summaries `VoxelWorld` keeps).
//!
//! A batch finds the chunks its rays enter in a flat table of the occupied bounds
//! (`ChunkTable`, made once a batch) instead of a hash of `i128` keys, and `walk_dense` walks on
//! from one dense chunk into the next without leaving its loop.
//!
//! The CPU also skips the air above the ground: `VoxelWorld` keeps, per region, how high the
//! non-air voxels of each column of bricks reach (`ColumnTops`), and where a voxel lies above
//! its column's top, the box from the top of its brick column, chunk column or whole region up
//! to the region's top is skipped whole (`column_box`), before the boxes above are tried. A
//! ray over terrain crosses a chunk column per skip there instead of walking down its empty
//! bricks. Under `Stop` only in regions where every chunk is loaded. The GPU keeps no tops and
//! reaches the same states by the boxes above (as it does without the occupied bounds).

use crate::coords::{CHUNK_SHIFT, ChunkPos, VoxelBox};
use crate::ray::{
    OriginPolicy, PreparedRay, RaycastOptions, RaycastOutcome, UnloadedPolicy, VoxelRay,
};
use crate::world::{
    ChunkView, ColumnTops, DenseChunk, REGION_SHIFT, RegionSummary, VoxelId, VoxelWorld,
    chunk_in_region, empty_block, empty_box, region_of,
};
use shapes::shape_hit;

mod camera;
mod dda;
mod queries;
pub(crate) mod shapes;
pub(crate) mod sweep;
mod ties;
mod traversal;

pub use camera::{raycast_camera, raycast_camera_into, raycast_camera_rows_into};
use dda::Walk;
pub(crate) use dda::{Dda, Ended};
pub use queries::{
    line_of_sight, line_of_sight_batch, line_of_sight_batch_into, line_of_sight_window_batch_into,
    raycast_batch, raycast_batch_into, raycast_batch_serial_into, raycast_window_batch_into,
    voxel_raycast, voxel_raycast_with,
};
use ties::next_tie_extras;
pub(crate) use ties::unloaded_tie_extra;
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
pub(crate) fn crossing_t(b: f32, inv: f32, n: u32) -> f32 {
    (b + n as f32) * inv
}

/// The axis whose next crossing comes first; ties go to x, then y, then z. Twin of
/// `next_axis` in `shaders/dda.wgsl`.
#[inline(always)]
#[must_use]
pub(crate) fn next_axis(t: [f32; 3]) -> usize {
    if t[0] <= t[1] && t[0] <= t[2] {
        0
    } else if t[1] <= t[2] {
        1
    } else {
        2
    }
}

/// How many crossings on one axis, counting from crossing `n`, come strictly before distance
/// `t_end`: the first `c` with `crossing_t(b, inv, n + c) >= t_end`. Used to land a skip on
/// exactly the state that stepping voxel by voxel reaches. The DDA counts linearly (counts
/// within a brick are small; `skip_box` starts long skips from a checked estimate), and the
/// shader runs the same count on all three axes at once inside `skip_box` in
/// `shaders/dda.wgsl`; this public form searches, so that any input returns at once.
///
/// At the edges: 0 when crossing `n` is not before `t_end` (also for a NaN `b`, `inv` or
/// `t_end`); `u32::MAX - n` when every crossing up to `u32::MAX` is (no finite count: `inv` of
/// 0 or below, `t_end` of +∞). Crossings never decrease with the count for `inv > 0` (f32
/// rounding is monotonic), which makes the search's answer the linear count's.
#[must_use]
#[cfg_attr(
    not(test),
    expect(
        dead_code,
        reason = "the definition that the DDA's cached count is tested against"
    )
)]
pub(crate) fn crossings_before(b: f32, inv: f32, n: u32, t_end: f32) -> u32 {
    let before = |c: u32| crossing_t(b, inv, n + c) < t_end;
    let limit = u32::MAX - n;
    if !before(0) {
        return 0;
    }
    if before(limit) {
        return limit;
    }
    // `before(lo)` and not `before(hi)`.
    let (mut lo, mut hi) = (0, limit);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if before(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
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
/// voxel centers or corners passes through an edge in exact arithmetic, its f32 crossings were
/// found to differ by up to 3 ulps (the direction is rounded when normalised, `1/|d|` when
/// taken, each crossing once more). Same constant in `shaders/layout.wgsl`.
pub(crate) const NEAR_TIE: f32 = 1.0 + 1.0 / 1_048_576.0;

/// `t` as a skip compares it with the crossing that leaves the box: under conservative line of
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
type LocalBox = ([i32; 3], [i32; 3]);

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
pub(crate) enum ChunkKind<'w> {
    Unloaded,
    Uniform(VoxelId),
    Dense(&'w DenseChunk),
}

fn chunk_kind(world: &VoxelWorld, chunk: [i128; 3]) -> ChunkKind<'_> {
    kind_of(world.chunk(ChunkPos::new(chunk[0], chunk[1], chunk[2])))
}

fn kind_of(chunk: Option<&crate::world::Chunk>) -> ChunkKind<'_> {
    match chunk.map(|c| c.view()) {
        None => ChunkKind::Unloaded,
        Some(ChunkView::Uniform(id)) => ChunkKind::Uniform(id),
        Some(ChunkView::Dense(d)) => ChunkKind::Dense(d),
    }
}

/// Most slots of a [`ChunkTable`]: 16 MiB of table.
const TABLE_MOST: u128 = 1 << 20;
/// Most slots of a [`ChunkTable`] a ray of the batch: a slot costs about as much to fill as
/// a chunk crossing saves.
const TABLE_SLOTS_A_RAY: u128 = 4;

/// Every chunk of a batch's `Air` bounds (see `Start::Air`) in a flat table, x fastest: a ray
/// finds the chunk it enters with one index and one load, not a hash of `i128` keys, and
/// crosses from dense chunk to dense chunk without leaving `walk_dense`'s loop. Made once a
/// batch, where the bounds are small enough (`TABLE_MOST`, `TABLE_SLOTS_A_RAY`).
pub(crate) struct ChunkTable<'w> {
    kinds: Vec<ChunkKind<'w>>,
    /// Chunks along each axis.
    dims: [u32; 3],
}

impl ChunkTable<'_> {
    /// The slot of the chunk at `at` chunks from the bounds' lowest chunk (each below `dims`).
    #[inline(always)]
    fn slot(&self, at: [u32; 3]) -> ChunkKind<'_> {
        let i = at[0] as usize
            + self.dims[0] as usize * (at[1] as usize + self.dims[1] as usize * at[2] as usize);
        self.kinds[i]
    }
}

/// `ray` prepared and cast: what [`voxel_raycast_with`] answers.
#[inline]
pub(crate) fn cast_unprepared(
    ray: &VoxelRay,
    world: &VoxelWorld,
    opts: &RaycastOptions,
) -> RaycastOutcome {
    Cast::new(world, opts, false).unprepared(ray)
}

/// Casts one prepared ray: the whole reference algorithm (see [`Cast::ray`]).
pub(crate) fn cast_ray(
    r: &PreparedRay,
    world: &VoxelWorld,
    opts: &RaycastOptions,
    conservative: bool,
    t_air: f32,
) -> RaycastOutcome {
    Cast::new(world, opts, conservative).ray(r, t_air)
}

/// How every cast under one world and one set of options begins.
#[derive(Clone, Copy)]
enum Start {
    /// Under [`UnloadedPolicy::Air`]: nothing outside a box of whole chunks stops a ray (the
    /// occupied bounds, or the loaded bounds for `per_voxel`; `Cast::bounds`); `false` when
    /// there is no such box, so that every ray misses.
    Air(bool),
    /// Under [`UnloadedPolicy::Stop`] in a world with a loaded chunk.
    Stop,
    /// Under `Stop` with nothing loaded: the ray ends where it leaves the origin voxel
    /// ([`OriginPolicy::SkipOriginVoxel`]) or at its start.
    NothingLoaded,
}

/// What a cast derives from the world and the options before it looks at a ray, made once for
/// a whole batch: each ray's cast then starts from its own state alone.
#[derive(Clone, Copy)]
pub(crate) struct Cast<'w> {
    world: &'w VoxelWorld,
    opts: &'w RaycastOptions,
    conservative: bool,
    start: Start,
    /// Under `Air`, the bounds' lowest chunk and, per axis, the highest minus the lowest: chunk
    /// `c` is outside on axis `a` when `c - lo`, taken as unsigned, exceeds that span.
    chunk_lo: [i128; 3],
    span: [u128; 3],
    every_non_air: bool,
    /// Whether the world has shaped ids (the crate docs' "Shapes").
    shapes: bool,
    /// Whether dense chunks may be crossed in `walk_dense` (neither conservative nor per voxel).
    walks: bool,
    /// Whether empty bricks are skipped whole: for rays shorter than [`LONG_RAY`], and longer.
    skip_bricks: [bool; 2],
    /// The chunks of the `Air` bounds, for a batch (see [`Cast::table`]).
    table: Option<&'w ChunkTable<'w>>,
}

impl<'w> Cast<'w> {
    /// The casts of `opts` through `world`; `conservative` for conservative line of sight.
    #[inline]
    pub(crate) fn new(world: &'w VoxelWorld, opts: &'w RaycastOptions, conservative: bool) -> Self {
        let mut bounds = None;
        let start = match opts.unloaded {
            UnloadedPolicy::Air => {
                let range = if opts.per_voxel {
                    world.loaded_chunk_bounds()
                } else {
                    world.occupied_chunk_bounds()
                };
                // Conservative line of sight also tests voxels beside the ray at edges and
                // corners: those of a crossing inside the box lie within one voxel of the
                // crossing's two voxels, so a margin of a chunk around the box keeps every
                // such crossing.
                bounds = match range {
                    Some((lo, hi)) if conservative => Some(grow_by_a_chunk(lo, hi)),
                    range => range,
                };
                Start::Air(bounds.is_some())
            }
            UnloadedPolicy::Stop if world.loaded_bounds().is_some() => Start::Stop,
            UnloadedPolicy::Stop => Start::NothingLoaded,
        };
        let (chunk_lo, span) = bounds.map_or(([0; 3], [0; 3]), |(lo, hi)| {
            (
                [lo.x, lo.y, lo.z],
                [0, 1, 2].map(|a| hi.axis(a).wrapping_sub(lo.axis(a)) as u128),
            )
        });
        Self {
            world,
            opts,
            conservative,
            start,
            chunk_lo,
            span,
            every_non_air: opts.blocks.is_every_non_air(),
            shapes: !world.shapes().is_empty(),
            walks: !conservative && !opts.per_voxel,
            skip_bricks: [world.skip_bricks_for(false), world.skip_bricks_for(true)],
            table: None,
        }
    }

    /// The world the rays are cast through.
    pub(crate) fn world(&self) -> &'w VoxelWorld {
        self.world
    }

    /// The options they are cast under.
    pub(crate) fn opts(&self) -> &'w RaycastOptions {
        self.opts
    }

    /// The table of the chunks in the `Air` bounds for a batch of `rays` rays, where it pays
    /// and rays walk dense chunks (`walks`); `None` elsewhere.
    fn table(&self, rays: usize) -> Option<ChunkTable<'w>> {
        if !matches!(self.start, Start::Air(true)) || !self.walks {
            return None;
        }
        let dims = self.span.map(|s| s.saturating_add(1));
        let slots = dims[0].saturating_mul(dims[1]).saturating_mul(dims[2]);
        let world = self.world;
        let most = TABLE_MOST.min(TABLE_SLOTS_A_RAY * rays as u128);
        if slots > most || world.chunk_count() as u128 > most {
            return None;
        }
        let dims = dims.map(|d| d as u32);
        let mut kinds = vec![ChunkKind::Unloaded; slots as usize];
        for (p, c) in world.chunks() {
            let at: [u128; 3] =
                std::array::from_fn(|a| p.axis(a).wrapping_sub(self.chunk_lo[a]) as u128);
            if (0..3).all(|a| at[a] <= self.span[a]) {
                let i = at[0] + u128::from(dims[0]) * (at[1] + u128::from(dims[1]) * at[2]);
                kinds[i as usize] = kind_of(Some(c));
            }
        }
        Some(ChunkTable { kinds, dims })
    }

    /// These casts, finding chunks in `table` (made by [`Cast::table`] of the same casts).
    fn with_table<'t>(self, table: &'t ChunkTable<'t>) -> Cast<'t>
    where
        'w: 't,
    {
        Cast {
            table: Some(table),
            ..self
        }
    }

    /// `f` given the casts of a batch of `rays` rays under `opts` through `world`: made once,
    /// with the batch's chunk table where it pays ([`Cast::table`]).
    pub(crate) fn for_batch<R>(
        world: &VoxelWorld,
        opts: &RaycastOptions,
        rays: usize,
        f: impl FnOnce(&Cast<'_>) -> R,
    ) -> R {
        let cast = Cast::new(world, opts, false);
        match cast.table(rays) {
            Some(table) => f(&cast.with_table(&table)),
            None => f(&cast),
        }
    }

    /// What the chunk at `c` (inside the `Air` bounds where there is a table) does to rays.
    #[inline(always)]
    fn kind(&self, c: [i128; 3]) -> ChunkKind<'w> {
        match self.table {
            Some(t) => t.slot(std::array::from_fn(|a| {
                c[a].wrapping_sub(self.chunk_lo[a]) as u32
            })),
            None => chunk_kind(self.world, c),
        }
    }

    /// `ray` prepared and cast: what [`voxel_raycast_with`] answers.
    #[inline]
    pub(crate) fn unprepared(&self, ray: &VoxelRay) -> RaycastOutcome {
        // Matched by reference: the prepared ray is cast where `prepare` left it, not copied.
        match &ray.prepare() {
            Err(e) => RaycastOutcome::Invalid(*e),
            Ok(None) => RaycastOutcome::Miss,
            Ok(Some(p)) => self.ray(p, 0.0),
        }
    }

    /// The `Air` bounds as voxels (only with `Start::Air(true)`).
    #[cold]
    fn bounds(&self) -> VoxelBox {
        let hi: [i128; 3] =
            std::array::from_fn(|a| self.chunk_lo[a].wrapping_add(self.span[a] as i128));
        VoxelBox::from_chunks(
            ChunkPos::new(self.chunk_lo[0], self.chunk_lo[1], self.chunk_lo[2]),
            ChunkPos::new(hi[0], hi[1], hi[2]),
        )
    }

    /// Whether chunk `c` lies outside the `Air` bounds: one comparison per axis, none
    /// branching.
    #[inline(always)]
    fn outside(&self, c: [i128; 3]) -> bool {
        (c[0].wrapping_sub(self.chunk_lo[0]) as u128 > self.span[0])
            | (c[1].wrapping_sub(self.chunk_lo[1]) as u128 > self.span[1])
            | (c[2].wrapping_sub(self.chunk_lo[2]) as u128 > self.span[2])
    }

    /// Casts one prepared ray: the whole reference algorithm. `t_air`: a distance up to which
    /// the caller knows the ray crosses only air (a sweep's, see `sweep.rs`), or 0. Twin of
    /// `cast_ray` in `shaders/cast.wgsl`.
    pub(crate) fn ray(&self, r: &PreparedRay, t_air: f32) -> RaycastOutcome {
        let (opts, conservative) = (self.opts, self.conservative);
        // Under `Air` nothing outside the occupied bounds stops the ray, and the DDA's chunk
        // coordinates only move away from a box once they have left it: a ray outside is a
        // miss. Per-voxel mode stops at the loaded bounds instead, so that comparing the modes
        // tests this.
        let air = match self.start {
            Start::Air(false) => return RaycastOutcome::Miss,
            Start::Air(true) => true,
            Start::Stop => false,
            Start::NothingLoaded if opts.origin == OriginPolicy::SkipOriginVoxel => {
                let mut d = Dda::new(r);
                if conservative && let Some(o) = unloaded_tie_extra(&d, opts) {
                    return o;
                }
                return match d.dda_step() {
                    Ok(_) => RaycastOutcome::Unloaded {
                        voxel_pos: d.voxel(),
                        distance: d.t,
                    },
                    Err(Ended) => RaycastOutcome::Miss,
                };
            }
            Start::NothingLoaded => {
                return RaycastOutcome::Unloaded {
                    voxel_pos: r.start,
                    distance: 0.0,
                };
            }
        };
        let mut d = Dda::new(r);
        let mut in_origin = true;
        let mut air_seen = opts.origin != OriginPolicy::ExitSolid;
        // `d` is in the start voxel's chunk, which lies in the bounds' whole chunks or not at
        // all.
        if air && self.outside(d.chunk) {
            if !d.enter_box(&self.bounds()) {
                return RaycastOutcome::Miss;
            }
            // The voxels before the box were air or unloaded: the origin voxel has been passed.
            in_origin = false;
            air_seen = true;
        }
        // Known air up to `t_air` (see `sweep::air_before`): land just before it in one move.
        if t_air > d.t && self.walks {
            if !d.advance_to(t_air.min(r.max_distance)) {
                return RaycastOutcome::Miss;
            }
            in_origin = false;
            air_seen = true;
        }
        self.walk(&mut d, air, in_origin, air_seen)
    }

    /// [`Cast::ray`] for a ray of a sweep: the same answer, with a leaner start where the
    /// batch has a chunk table and the ray starts inside its bounds with air ahead (`t_air`
    /// beyond its start), as a sweep's rays mostly do.
    #[inline]
    pub(crate) fn swept(&self, r: &PreparedRay, t_air: f32) -> RaycastOutcome {
        // A table is only made under `Air` with bounds, for casts that walk dense chunks.
        if self.table.is_none() {
            return self.ray(r, t_air);
        }
        let mut d = Dda::new(r);
        let ahead = matches!(t_air.partial_cmp(&d.t), Some(std::cmp::Ordering::Greater));
        if !ahead || self.outside(d.chunk) {
            return self.ray(r, t_air);
        }
        if !d.advance_to(t_air.min(r.max_distance)) {
            return RaycastOutcome::Miss;
        }
        // Past the origin voxel and in air: `walk` would step dense chunks as here. Anything
        // else (another kind of chunk, a shaped id, brick skips under column tops) goes on in
        // `walk` from the same state.
        if self.outside(d.chunk) {
            return RaycastOutcome::Miss;
        }
        let short = r.max_distance < LONG_RAY;
        if let ChunkKind::Dense(c) = self.kind(d.chunk)
            && !self.skip_bricks[usize::from(!short)]
            && !self.shapes
        {
            match self.step_dense(&mut d, c, short) {
                Walk::Hit(id) => return RaycastOutcome::Hit(d.hit(id)),
                Walk::Miss => return RaycastOutcome::Miss,
                Walk::LeftChunk => {}
            }
        }
        self.walk_cold(d)
    }

    /// `walk_dense` stepping every voxel of dense chunk `c` (and on through the chunk table's
    /// dense chunks), reading occupancy from the id records for a `short` ray where they hold
    /// it (see [`LONG_RAY`]).
    #[inline(always)]
    fn step_dense(&self, d: &mut Dda<'_>, c: &DenseChunk, short: bool) -> Walk {
        let (every_non_air, blocks) = (self.every_non_air, &self.opts.blocks);
        let table = self.table.map(|t| (t, self.chunk_lo));
        if short && c.ids.has_occupancy() {
            d.walk_dense::<true, true>(c, every_non_air, blocks, None, table)
        } else {
            d.walk_dense::<true, false>(c, every_non_air, blocks, None, table)
        }
    }

    /// [`Cast::walk`] past the origin voxel under `Air`, kept out of line so that
    /// [`Cast::swept`] stays small.
    #[inline(never)]
    fn walk_cold(&self, mut d: Dda<'_>) -> RaycastOutcome {
        self.walk(&mut d, true, false, true)
    }

    /// The rest of [`Cast::ray`] from state `d`: `air` under `Start::Air(true)`; `in_origin`
    /// while `d` is in the origin voxel; `air_seen` once the ray has been in air (or where the
    /// origin policy does not ask).
    #[inline(always)]
    fn walk(
        &self,
        d: &mut Dda<'_>,
        air: bool,
        mut in_origin: bool,
        mut air_seen: bool,
    ) -> RaycastOutcome {
        let (world, opts, conservative) = (self.world, self.opts, self.conservative);
        let r = d.ray;
        let mut regions = RegionCache::default();
        let every_non_air = self.every_non_air;
        // Shaped ids (the crate docs' "Shapes"): a stopping voxel stops the ray where it meets
        // a box.
        let shapes = world.shapes();
        let boxes_of = |id: VoxelId| {
            if self.shapes {
                shapes.boxes_of(id)
            } else {
                None
            }
        };
        let stops = |id: VoxelId| {
            let blocks = if every_non_air {
                !id.is_air()
            } else {
                opts.blocks.contains(id)
            };
            // An empty shape is air to rays.
            blocks && boxes_of(id).is_none_or(|b| !b.is_empty())
        };
        let short = r.max_distance < LONG_RAY;
        let skip_bricks = self.skip_bricks[usize::from(!short)];
        let reportable = |in_origin: bool, air_seen: bool| {
            !(in_origin && opts.origin == OriginPolicy::SkipOriginVoxel) && air_seen
        };

        loop {
            // Entered a new chunk (or started): classify it once.
            if air && self.outside(d.chunk) {
                return RaycastOutcome::Miss;
            }
            let kind = self.kind(d.chunk);
            loop {
                // Under `Report` the origin voxel is examined like any other.
                if let ChunkKind::Dense(c) = kind
                    && (!in_origin || opts.origin == OriginPolicy::Report)
                    && air_seen
                    && self.walks
                {
                    let table = self.table.is_some();
                    let walk = if skip_bricks {
                        let tops = regions.tops(world, d.chunk, opts.unloaded);
                        d.walk_dense::<false, false>(c, every_non_air, &opts.blocks, tops, None)
                    } else {
                        self.step_dense(d, c, short)
                    };
                    match walk {
                        Walk::Hit(id) => {
                            let Some(boxes) = boxes_of(id) else {
                                return RaycastOutcome::Hit(d.hit(id));
                            };
                            if let Some(h) = shape_hit(r, d.n, boxes) {
                                return RaycastOutcome::Hit(h.answer(d, id));
                            }
                            // The ray passes the shape: step on from its voxel. With a table
                            // the walk may have gone on into another chunk than `kind`'s, so
                            // the chunk is classified again.
                            in_origin = false;
                            match d.dda_step() {
                                Err(Ended) => return RaycastOutcome::Miss,
                                Ok(_) if table => break,
                                Ok(true) => break,
                                Ok(false) => continue,
                            }
                        }
                        Walk::Miss => return RaycastOutcome::Miss,
                        Walk::LeftChunk => break,
                    }
                }
                // Examine the current voxel.
                let (stop_id, passable_box): (Option<VoxelId>, Option<LocalBox>) = match kind {
                    ChunkKind::Unloaded => match opts.unloaded {
                        UnloadedPolicy::Air => (None, Some(([0; 3], [31; 3]))),
                        UnloadedPolicy::Stop
                            if in_origin && opts.origin == OriginPolicy::SkipOriginVoxel =>
                        {
                            (None, None)
                        }
                        UnloadedPolicy::Stop => {
                            return RaycastOutcome::Unloaded {
                                voxel_pos: d.voxel(),
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
                        } else if let Some((lo, hi)) = empty_box(c.bricks, x, y, z) {
                            (None, Some((lo.map(|v| v as i32), hi.map(|v| v as i32))))
                        } else {
                            (None, None)
                        }
                    }
                };
                match stop_id.map(|id| (id, boxes_of(id))) {
                    Some((id, None)) if reportable(in_origin, air_seen) => {
                        return RaycastOutcome::Hit(d.hit(id));
                    }
                    Some((_, None)) => {}
                    Some((id, Some(boxes))) => {
                        let h = shape_hit(r, d.n, boxes);
                        if reportable(in_origin, air_seen) {
                            if let Some(h) = h {
                                return RaycastOutcome::Hit(h.answer(d, id));
                            }
                            air_seen = true;
                        } else if !air_seen {
                            // `ExitSolid` before the ray has been in air: it is still in a solid
                            // where it entered this voxel inside a box (or starts inside one).
                            match h {
                                Some(h) if h.t == d.t => {}
                                Some(h) => return RaycastOutcome::Hit(h.answer(d, id)),
                                None => air_seen = true,
                            }
                        }
                    }
                    None => air_seen = true,
                }
                // Skip a box that holds nothing that stops the ray, then cross out of it. The skip
                // lands before any crossing tied with the box's exit, so the conservative corner
                // test below still sees the whole tie group.
                let mut moved = false;
                if let (Some((mut lo, mut hi)), false) = (passable_box, opts.per_voxel) {
                    // A whole chunk that holds nothing that stops the ray: cross the run of such
                    // chunks around it (as the shader does, after classifying the chunk).
                    if !matches!(kind, ChunkKind::Dense(_)) {
                        (lo, hi) = match regions
                            .tops(world, d.chunk, opts.unloaded)
                            .and_then(|t| column_box(t, d))
                        {
                            Some(b) => b,
                            None => regions.run(world, d.chunk, opts.unloaded),
                        };
                    }
                    let skipped = if conservative {
                        d.skip_box::<true>(lo, hi)
                    } else {
                        d.skip_box::<false>(lo, hi)
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
                        next_tie_extras(d, &|p| world.get_voxel(p), opts, air_seen, &stops)
                {
                    return o;
                }
                match d.dda_step() {
                    Err(Ended) => return RaycastOutcome::Miss,
                    Ok(entered) if entered || moved => break,
                    Ok(_) => {}
                }
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

    /// The box to skip from chunk `c`, which holds nothing that stops the ray: the largest
    /// run of chunks around it that hold nothing but air (or, under `UnloadedPolicy::Air`, are
    /// not loaded) in its region (see `empty_block`), or `c` alone. In local coordinates of
    /// `c`, so corners may lie outside `0..32`. Twin of `region_run` in `shaders/window.wgsl`,
    /// which reads the same bits from the region records `GpuWorld` uploads.
    fn run(&mut self, world: &'w VoxelWorld, c: [i128; 3], unloaded: UnloadedPolicy) -> LocalBox {
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

/// The empty box above the column tops `tops` of its region (see `ColumnTops::box_above`) that holds
/// the current voxel of `d`, in local coordinates of its chunk (corners may lie outside
/// `0..32`); `None` where the voxel lies below its brick column's top.
#[inline]
fn column_box(tops: &ColumnTops, d: &Dda<'_>) -> Option<LocalBox> {
    let at = chunk_corner_in_region(d.chunk);
    let (lo, hi) = tops.box_above(
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
fn chunk_corner_in_region(c: [i128; 3]) -> [u32; 3] {
    chunk_in_region(c).map(|v| v << CHUNK_SHIFT)
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
        // No finite count, or nothing to count: at once, without overflow.
        assert_eq!(crossings_before(0.5, 0.0, 0, 1.0), u32::MAX);
        assert_eq!(crossings_before(0.5, 1.0, 7, f32::INFINITY), u32::MAX - 7);
        assert_eq!(crossings_before(0.5, -1.0, 0, 1.0), u32::MAX);
        assert_eq!(crossings_before(0.5, 1.0, u32::MAX, 1e30), 0);
        for nan in [
            (f32::NAN, 1.0, 1.0),
            (0.5, f32::NAN, 1.0),
            (0.5, 1.0, f32::NAN),
        ] {
            assert_eq!(crossings_before(nan.0, nan.1, 0, nan.2), 0, "{nan:?}");
        }
    }

    /// The search gives the DDA's linear count, also where f32 rounding makes neighbouring
    /// crossings equal (large counts).
    #[test]
    fn crossings_before_equals_the_linear_count() {
        let mut rng = voxcast_testkit::SplitMix64::new(3);
        for i in 0..20_000 {
            let b = (rng.below(1 << 24) as f32 / (1 << 24) as f32).min(1.0);
            let inv = 1.0 + rng.below(1 << 20) as f32 / 1024.0;
            let n = if i % 2 == 0 {
                rng.below(64)
            } else {
                rng.below(1 << 26)
            } as u32;
            let t_n = crossing_t(b, inv, n);
            let t_end = t_n + rng.below(200) as f32 * inv * 0.37;
            let linear = count_before::<false>(b, inv, n, t_n, t_end).0;
            assert_eq!(
                crossings_before(b, inv, n, t_end),
                linear,
                "{b} {inv} {n} {t_end}"
            );
        }
    }
}
