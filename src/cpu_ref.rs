//! The exact reference DDA: the definition of a correct answer.
//!
//! Every function here that the GPU also runs has a twin of the same name in
//! `shaders/dda.wgsl`, with the same constants and the same comparisons in the same order, so
//! the two can be read side by side: [`crossing_t`], [`next_axis`], [`crossings_before`]
//! (written out inside the shader's `skip_cell`), `skip_cell`, `empty_block` and `empty_cell`
//! (in `world.rs`), `RegionCache::run` (`region_run` there), `dda_step`, `walk_dense`,
//! `face_uv`, `tied_axes`, `tie_extra` and `cast_ray`. The host-only
//! parts (validation in [`VoxelRay::prepare`], clipping to a box in `enter_box`) produce the
//! state the GPU starts from. Under [`UnloadedPolicy::Air`] a ray ends where it leaves the
//! occupied bounds; the GPU, which keeps no such bounds, walks on to its window's edge (the
//! loaded bounds at upload, grown by a chunk).
//!
//! Empty space is skipped at three levels, each landing on exactly the state that stepping
//! voxel by voxel reaches (`skip_cell`): inside a dense chunk, runs of empty `8³` bricks
//! (`empty_cell`); a chunk that holds nothing that stops the ray, whole; and around an empty
//! or (under [`UnloadedPolicy::Air`]) unloaded chunk, runs of such chunks inside its region of
//! `4×4×4` chunks (`RegionCache::run`, from the region summaries `VoxelWorld` keeps).

use glam::{IVec3, Vec2};
use rayon::prelude::*;

use crate::aabb::ray_aabb_f64;
use crate::coords::{CHUNK_SHIFT, ChunkPos, VoxelBox, WorldPos};
use crate::ray::{
    LineOfSight, LineOfSightOptions, MaterialFilter, OriginPolicy, PreparedRay, RaycastOptions,
    RaycastOutcome, UnloadedPolicy, VoxelRay, VoxelRaycastHit,
};
use crate::world::{
    BRICK_EDGE, ChunkView, DenseChunk, REGION_SHIFT, RegionSummary, VoxelId, VoxelWorld,
    empty_block, empty_cell, region_of,
};

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
    count_before(b, inv, n, crossing_t(b, inv, n), t_end).0
}

/// [`crossings_before`] given `t_n = crossing_t(b, inv, n)` (the DDA keeps it cached), also
/// returning the first crossing at or after `t_end`: the axis's next crossing after the skip.
#[inline(always)]
fn count_before(b: f32, inv: f32, n: u32, t_n: f32, t_end: f32) -> (u32, f32) {
    let (mut c, mut t) = (0, t_n);
    while t < t_end {
        c += 1;
        t = crossing_t(b, inv, n + c);
    }
    (c, t)
}

/// Whether crossing `(t, axis)` comes before crossing `(t_ref, axis_ref)` in stepping order.
#[inline]
fn crossing_before(t: f32, axis: usize, t_ref: f32, axis_ref: usize) -> bool {
    t < t_ref || (t == t_ref && axis < axis_ref)
}

/// How [`Dda::walk_dense`] left its loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Walk {
    Hit(VoxelId),
    LeftChunk,
    Miss,
}

/// Why a ray stopped moving.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Halt {
    /// The next crossing lies beyond max distance, or the ray left the i128 world.
    Miss,
}

/// The stepping state of one ray: current voxel (as chunk plus local), crossing counts, the
/// cached next crossing per axis, and how the current voxel was entered.
#[derive(Clone, Debug)]
pub(crate) struct Dda<'r> {
    pub(crate) ray: &'r PreparedRay,
    pub(crate) chunk: [i128; 3],
    pub(crate) local: [i32; 3],
    /// Crossings done per axis.
    pub(crate) n: [u32; 3],
    /// `crossing_t` of each axis's next crossing, or [`T_DISABLED`].
    pub(crate) t_next: [f32; 3],
    /// Distance at which the current voxel was entered (0 in the start voxel).
    pub(crate) t: f32,
    /// Axis of the crossing that entered the current voxel, or [`AXIS_NONE`].
    pub(crate) entry_axis: u32,
}

impl<'r> Dda<'r> {
    pub(crate) fn new(ray: &'r PreparedRay) -> Self {
        let c = ray.start.chunk();
        let l = ray.start.local();
        let mut d = Self {
            ray,
            chunk: [c.x, c.y, c.z],
            local: [l.x.into(), l.y.into(), l.z.into()],
            n: [0; 3],
            t_next: [T_DISABLED; 3],
            t: 0.0,
            entry_axis: AXIS_NONE,
        };
        for a in 0..3 {
            d.refresh_axis(a);
        }
        d
    }

    #[inline(always)]
    fn refresh_axis(&mut self, a: usize) {
        self.t_next[a] = if self.ray.enabled[a] {
            crossing_t(self.ray.b[a], self.ray.inv[a], self.n[a])
        } else {
            T_DISABLED
        };
    }

    pub(crate) fn voxel(&self) -> WorldPos {
        WorldPos::from_array(std::array::from_fn(|a| {
            (self.chunk[a] << CHUNK_SHIFT) | i128::from(self.local[a])
        }))
    }

    /// Carries a local coordinate `l` that left `0..32` on axis `a` into the chunk
    /// coordinate. `false` when the ray leaves the i128 world.
    #[inline]
    fn carry_chunk(&mut self, a: usize, l: i32) -> bool {
        // |l >> 5| is 1 here, and chunk indices are far from i128 overflow.
        let c = self.chunk[a] + i128::from(l >> CHUNK_SHIFT);
        if !(CHUNK_MIN..=CHUNK_MAX).contains(&c) {
            return false;
        }
        self.chunk[a] = c;
        self.local[a] = l & 31;
        true
    }

    /// After a skip across several chunks, moves whole chunks of `local` into `chunk` so that
    /// `local` is in `0..32` again. Returns whether the chunk changed. The skipped cell lies
    /// in one region, which lies inside the i128 world, so the chunk index cannot overflow.
    fn carry_local(&mut self) -> bool {
        let mut moved = false;
        for a in 0..3 {
            let carry = self.local[a] >> CHUNK_SHIFT;
            if carry != 0 {
                self.chunk[a] += i128::from(carry);
                self.local[a] &= 31;
                moved = true;
            }
        }
        moved
    }

    /// One DDA step: cross the nearest boundary. Twin of `dda_step` in `shaders/dda.wgsl`.
    /// Returns whether the step entered another chunk; `Err(Halt::Miss)` beyond max distance
    /// or the i128 edge.
    #[inline(always)]
    pub(crate) fn dda_step(&mut self) -> Result<bool, Halt> {
        let a = next_axis(self.t_next);
        let t = self.t_next[a];
        if t > self.ray.max_distance {
            return Err(Halt::Miss);
        }
        self.n[a] += 1;
        // The stepped axis is enabled: a disabled one sits at T_DISABLED, beyond every max
        // distance, so no enabled check is needed here.
        self.t_next[a] = crossing_t(self.ray.b[a], self.ray.inv[a], self.n[a]);
        self.t = t;
        self.entry_axis = a as u32;
        let l = self.local[a] + i32::from(self.ray.step[a]);
        if (0..32).contains(&l) {
            self.local[a] = l;
            return Ok(false);
        }
        if self.carry_chunk(a, l) {
            Ok(true)
        } else {
            Err(Halt::Miss)
        }
    }

    /// The hot loop for a dense chunk, with the whole state in registers: examines the
    /// current voxel and steps, exactly as `dda_step` does, skipping empty bricks with
    /// `skip_cell`, until a voxel stops the ray ([`Walk::Hit`], state at that voxel), the ray
    /// enters another chunk ([`Walk::LeftChunk`], state in the new chunk) or it ends
    /// ([`Walk::Miss`]). Only where the origin policy no longer matters (past the origin voxel
    /// and out of any solid it started in, or anywhere under `Report`) and without the
    /// conservative tie test. Twin of `walk_dense` in `shaders/dda.wgsl`, which makes the same
    /// comparisons without branches and leaves empty bricks to its caller (faster there).
    ///
    /// `SKIP_BRICKS`: whether empty bricks are skipped whole or stepped through voxel by voxel
    /// (faster for short rays, and in worlds with few empty bricks: see [`LONG_RAY`]).
    /// `ROWS`: whether occupancy words are read from the id records (`PackedIds`), where the
    /// hit voxel's id shares a cache line with its occupancy word (faster for short rays), or
    /// from the compact occupancy bits (faster for long rays, which cross many rows). Only for
    /// chunks whose records hold occupancy words. A layout choice of the CPU's alone: the
    /// shader reads the GPU's own buffers (compact occupancy bits, `u16` ids) and takes the
    /// same steps.
    #[inline]
    fn walk_dense<const SKIP_BRICKS: bool, const ROWS: bool>(
        &mut self,
        c: &DenseChunk,
        every_non_air: bool,
        blocks: &MaterialFilter,
    ) -> Walk {
        let r = self.ray;
        let occupancy = &*c.occupancy;
        let (records, shift) = (c.ids.words(), c.ids.record_shift());
        let load = |y: u32, z: u32| {
            if ROWS {
                records[((y | z << 5) << shift) as usize]
            } else {
                occupancy[(y | z << 5) as usize]
            }
        };
        let bricks = c.bricks;
        let max = r.max_distance;
        let [bx, by, bz] = r.b;
        let [ix, iy, iz] = r.inv;
        let [sx, sy, sz] = r.step.map(|s| i32::from(s) as u32);
        // Local coordinates are in 0..32; a step out of the chunk wraps to 32 or u32::MAX.
        let [mut x, mut y, mut z] = self.local.map(|v| v as u32);
        let [mut nx, mut ny, mut nz] = self.n;
        let [mut tx, mut ty, mut tz] = self.t_next;
        let mut t = self.t;
        let mut axis = self.entry_axis;
        let mut word = load(y, z);
        let walk = loop {
            if word >> x & 1 != 0 {
                let id = c.ids.id_in_row(y | z << 5, x);
                if every_non_air || blocks.contains(id) {
                    break Walk::Hit(id);
                }
            } else if SKIP_BRICKS && let Some((lo, hi)) = empty_cell(bricks, x, y, z) {
                // An empty cell of whole bricks (see `empty_cell`): `skip_cell` to its last
                // voxel on the ray, then step out of it below, as `cast_ray` does, without
                // leaving this loop.
                self.local = [x, y, z].map(|v| v as i32);
                self.n = [nx, ny, nz];
                self.t_next = [tx, ty, tz];
                if self
                    .skip_cell(lo.map(|v| v as i32), hi.map(|v| v as i32))
                    .is_err()
                {
                    break Walk::Miss;
                }
                [x, y, z] = self.local.map(|v| v as u32);
                [nx, ny, nz] = self.n;
                [tx, ty, tz] = self.t_next;
                word = load(y, z);
            }
            // `next_axis` and `dda_step`, unrolled per axis.
            if tx <= ty && tx <= tz {
                if tx > max {
                    break Walk::Miss;
                }
                (t, axis) = (tx, 0);
                nx += 1;
                tx = crossing_t(bx, ix, nx);
                x = x.wrapping_add(sx);
                if x >= 32 {
                    break Walk::LeftChunk;
                }
            } else if ty <= tz {
                if ty > max {
                    break Walk::Miss;
                }
                (t, axis) = (ty, 1);
                ny += 1;
                ty = crossing_t(by, iy, ny);
                y = y.wrapping_add(sy);
                if y >= 32 {
                    break Walk::LeftChunk;
                }
                word = load(y, z);
            } else {
                if tz > max {
                    break Walk::Miss;
                }
                (t, axis) = (tz, 2);
                nz += 1;
                tz = crossing_t(bz, iz, nz);
                z = z.wrapping_add(sz);
                if z >= 32 {
                    break Walk::LeftChunk;
                }
                word = load(y, z);
            }
        };
        self.n = [nx, ny, nz];
        self.t_next = [tx, ty, tz];
        self.t = t;
        self.entry_axis = axis;
        self.local = [x, y, z].map(|v| v as i32);
        if walk == Walk::LeftChunk {
            let a = axis as usize;
            if !self.carry_chunk(a, self.local[a]) {
                return Walk::Miss;
            }
        }
        walk
    }

    /// Skips to the last voxel the ray visits inside the cell `lo..=hi` (local coordinates of
    /// the current chunk, inclusive; a run of chunks reaches outside `0..32`, and the caller
    /// then carries `local` back into range), which must hold nothing that stops the ray. The state
    /// lands exactly where voxel-by-voxel stepping would be just before the first crossing that
    /// leaves the cell, and before any crossing tied with it. Twin of `skip_cell` in
    /// `shaders/dda.wgsl`. `Err(Halt::Miss)` when that crossing lies beyond max distance.
    #[inline]
    pub(crate) fn skip_cell(&mut self, lo: [i32; 3], hi: [i32; 3]) -> Result<(), Halt> {
        let r = self.ray;
        let mut t_exit = [T_DISABLED; 3];
        let mut k = [0u32; 3];
        for a in 0..3 {
            if r.enabled[a] {
                k[a] = if r.step[a] > 0 {
                    hi[a] - self.local[a]
                } else {
                    self.local[a] - lo[a]
                } as u32;
                t_exit[a] = crossing_t(r.b[a], r.inv[a], self.n[a] + k[a]);
            }
        }
        let exit_axis = next_axis(t_exit);
        let t_end = t_exit[exit_axis];
        if t_end > r.max_distance {
            return Err(Halt::Miss);
        }
        for a in 0..3 {
            if r.enabled[a] {
                // `crossings_before`, reusing the cached next crossing and keeping the last one
                // computed as the new next crossing.
                let (c, t_next) = if a == exit_axis {
                    (k[a], t_exit[a])
                } else if k[a] <= BRICK_EDGE as u32 {
                    count_before(r.b[a], r.inv[a], self.n[a], self.t_next[a], t_end)
                } else {
                    // A long skip: start counting from an estimate that lies just below the
                    // count (checked, so the count stays exact whatever its rounding).
                    let n = self.n[a];
                    let est = ((t_end * r.dir[a].abs() - r.b[a]) as i64 - i64::from(n) - 1)
                        .clamp(0, i64::from(k[a])) as u32;
                    let t_est = crossing_t(r.b[a], r.inv[a], n + est);
                    if est > 0 && t_est < t_end {
                        let (c, t) = count_before(r.b[a], r.inv[a], n + est, t_est, t_end);
                        (est + c, t)
                    } else {
                        count_before(r.b[a], r.inv[a], n, self.t_next[a], t_end)
                    }
                };
                self.n[a] += c;
                self.local[a] += i32::from(r.step[a]) * c as i32;
                self.t_next[a] = t_next;
            }
        }
        Ok(())
    }

    /// Host-only clipping: when the start voxel lies outside `bounds`, advance to the first
    /// voxel inside it, exactly as stepping would. Returns `false` when the ray cannot reach
    /// the box within max distance (a miss under [`UnloadedPolicy::Air`]).
    pub(crate) fn enter_box(&mut self, bounds: &VoxelBox) -> bool {
        let r = self.ray;
        let start = r.start;
        // Quick reject with the slab test in f64, relative to the start voxel, one voxel of slack.
        // Differences saturate: anything 2^127 away is as unreachable as the i128 edge.
        let rel = |p: WorldPos, a: usize| p.axis(a).saturating_sub(start.axis(a)) as f64;
        let lo = glam::DVec3::new(rel(bounds.min, 0), rel(bounds.min, 1), rel(bounds.min, 2)) - 1.0;
        let hi = glam::DVec3::new(rel(bounds.max, 0), rel(bounds.max, 1), rel(bounds.max, 2)) + 2.0;
        match ray_aabb_f64(r.start_offset().as_dvec3(), r.dir.as_dvec3(), lo, hi) {
            Some((t_near, _)) if t_near <= f64::from(r.max_distance) + 2.0 => {}
            _ => return false,
        }
        const FAR: i128 = 1 << 24;
        let mut entry: Option<(f32, usize, u32)> = None; // (t, axis, crossing index)
        for a in 0..3 {
            let (s, lo, hi) = (start.axis(a), bounds.min.axis(a), bounds.max.axis(a));
            let gap = if s < lo && r.step[a] > 0 {
                lo.saturating_sub(s)
            } else if s > hi && r.step[a] < 0 {
                s.saturating_sub(hi)
            } else if s < lo || s > hi {
                return false;
            } else {
                continue;
            };
            if !r.enabled[a] || gap > FAR {
                return false;
            }
            let idx = (gap - 1) as u32;
            let t = crossing_t(r.b[a], r.inv[a], idx);
            if entry.is_none_or(|(te, ae, _)| crossing_before(te, ae, t, a)) {
                entry = Some((t, a, idx));
            }
        }
        let Some((t_in, a_in, idx_in)) = entry else {
            return true;
        };
        if t_in > r.max_distance {
            return false;
        }
        // The ray must not leave the box on another axis before it has entered on all.
        for a in 0..3 {
            if !r.enabled[a] {
                continue;
            }
            let (s, lo, hi) = (start.axis(a), bounds.min.axis(a), bounds.max.axis(a));
            let to_far_side = if r.step[a] > 0 {
                hi.saturating_sub(s)
            } else {
                s.saturating_sub(lo)
            };
            if (0..FAR).contains(&to_far_side) {
                let t_out = crossing_t(r.b[a], r.inv[a], to_far_side as u32);
                if crossing_before(t_out, a, t_in, a_in) {
                    return false;
                }
            }
        }
        for a in 0..3 {
            if !r.enabled[a] {
                continue;
            }
            let c = if a == a_in {
                idx_in + 1
            } else {
                // Count crossings ordered before (t_in, a_in): estimate, then correct exactly.
                let before =
                    |n: u32| crossing_before(crossing_t(r.b[a], r.inv[a], n), a, t_in, a_in);
                let mut n = ((f64::from(t_in) * f64::from(r.dir[a].abs()) - f64::from(r.b[a]))
                    .floor()
                    .max(0.0)) as u32;
                while n > 0 && !before(n - 1) {
                    n -= 1;
                }
                while before(n) {
                    n += 1;
                }
                n
            };
            self.n[a] = c;
            let v = start.axis(a) + i128::from(r.step[a]) * i128::from(c);
            self.chunk[a] = v >> CHUNK_SHIFT;
            self.local[a] = (v & 31) as i32;
            self.refresh_axis(a);
        }
        self.t = t_in;
        self.entry_axis = a_in as u32;
        true
    }

    /// The outward normal of the entry face (zero in the start voxel).
    pub(crate) fn face_normal(&self) -> IVec3 {
        if self.entry_axis == AXIS_NONE {
            return IVec3::ZERO;
        }
        let a = self.entry_axis as usize;
        let mut v = IVec3::ZERO;
        v[a] = -i32::from(self.ray.step[a]);
        v
    }

    fn hit(&self, id: VoxelId) -> VoxelRaycastHit {
        VoxelRaycastHit {
            voxel_pos: self.voxel(),
            face_normal: self.face_normal(),
            distance: self.t,
            voxel_type: id,
            hit_uv: face_uv(self.ray, self.n, self.t, self.entry_axis),
        }
    }
}

/// Where on the entry face the ray hit, in `[0, 1]²` (see [`VoxelRaycastHit::hit_uv`]). On each
/// face axis the offset inside the voxel is measured from that axis's last crossing, so it
/// stays precise far from the origin. Twin of `face_uv` in `shaders/dda.wgsl`.
pub(crate) fn face_uv(r: &PreparedRay, n: [u32; 3], t: f32, face_axis: u32) -> Vec2 {
    if face_axis == AXIS_NONE {
        return Vec2::ZERO;
    }
    let (u, v) = match face_axis {
        0 => (1, 2),
        1 => (0, 2),
        _ => (0, 1),
    };
    let frac = |b: usize| -> f32 {
        let f = if n[b] == 0 {
            // Offset of the start point inside the start voxel, recovered from `b`.
            let start = if r.step[b] > 0 { 1.0 - r.b[b] } else { r.b[b] };
            start + r.dir[b] * t
        } else {
            let along = r.dir[b].abs() * (t - crossing_t(r.b[b], r.inv[b], n[b] - 1));
            if r.step[b] > 0 { along } else { 1.0 - along }
        };
        f.clamp(0.0, 1.0)
    };
    Vec2::new(frac(u), frac(v))
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

/// The axes whose next crossing is at `t` (bit `a` for axis `a`): a tie group when two or
/// three bits are set.
#[inline]
fn tied_axes(t_next: [f32; 3], t: f32) -> u32 {
    u32::from(t_next[0] == t) | u32::from(t_next[1] == t) << 1 | u32::from(t_next[2] == t) << 2
}

/// Whether `mask` (a subset of the tie group `tied`) names a voxel that the tie touches but
/// stepping does not visit. Stepping through a tie crosses the tied axes in order x, y, z, so it
/// visits the "prefixes" of the group (`+x`, then `+x+y`, ...); every other non-empty subset is
/// an extra voxel touching the same edge or corner. Twin of `tie_extra` in `shaders/dda.wgsl`.
#[inline]
fn tie_extra(tied: u32, mask: u32) -> bool {
    let highest = 1u32 << (31 - mask.leading_zeros());
    let prefix = tied & ((highest << 1) - 1);
    mask & tied == mask && mask != prefix
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
                    d.walk_dense::<true, false>(c, every_non_air, blocks)
                } else if short && c.ids.has_occupancy() {
                    d.walk_dense::<false, true>(c, every_non_air, blocks)
                } else {
                    d.walk_dense::<false, false>(c, every_non_air, blocks)
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
                    (lo, hi) = regions.run(world, d.chunk, opts.unloaded);
                }
                if d.skip_cell(lo, hi).is_err() {
                    return RaycastOutcome::Miss;
                }
                // A run of chunks may have ended in another chunk.
                moved = d.carry_local();
            }
            in_origin = false;
            if conservative {
                let t_cross = d.t_next[next_axis(d.t_next)];
                if t_cross > d.t
                    && t_cross <= r.max_distance
                    && let Some(o) = check_tie_extras(&d, world, opts, t_cross, air_seen, &stops)
                {
                    return o;
                }
            }
            match d.dda_step() {
                Err(Halt::Miss) => return RaycastOutcome::Miss,
                Ok(entered) if entered || moved => break,
                Ok(_) => {}
            }
        }
    }
}

/// The region summary (see `RegionSummary`) of the region a ray is in, looked up once per
/// region entered rather than once per chunk.
#[derive(Default)]
struct RegionCache(Option<([i128; 3], RegionSummary)>);

impl RegionCache {
    /// The cell to skip from chunk `c`, which holds nothing that stops the ray: the largest
    /// run of chunks around it that hold nothing but air (or, under `UnloadedPolicy::Air`, are
    /// not loaded) in its region (see `empty_block`), or `c` alone. In local coordinates of
    /// `c`, so corners may lie outside `0..32`. Twin of `region_run` in `shaders/dda.wgsl`,
    /// which reads the same bits from the region records `GpuWorld` uploads.
    fn run(&mut self, world: &VoxelWorld, c: [i128; 3], unloaded: UnloadedPolicy) -> Cell {
        let (region, _) = region_of(c);
        let s = match self.0 {
            // Compared field by field: `==` on `[i128; 3]` calls `memcmp`.
            Some((r, s)) if r[0] == region[0] && r[1] == region[1] && r[2] == region[2] => s,
            _ => {
                let s = world.region(region);
                self.0 = Some((region, s));
                s
            }
        };
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

/// Conservative line of sight: at the first crossing of a tie group, test the voxels that
/// touch the crossed edge or corner but that stepping will not visit.
fn check_tie_extras(
    d: &Dda<'_>,
    world: &VoxelWorld,
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
    for mask in (1..8).filter(|&m| tie_extra(tied, m)) {
        let mut off = IVec3::ZERO;
        let mut n = d.n;
        let mut last_axis = 0;
        for a in 0..3 {
            if mask >> a & 1 != 0 {
                off[a] = i32::from(r.step[a]);
                n[a] += 1;
                last_axis = a;
            }
        }
        let Some(p) = base.checked_offset(off) else {
            continue;
        };
        match world.get_voxel(&p) {
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
/// segments through voxel edges and corners.
#[must_use]
pub fn line_of_sight(ray: &VoxelRay, world: &VoxelWorld, opts: &LineOfSightOptions) -> LineOfSight {
    match ray.prepare() {
        Err(e) => LineOfSight::Invalid(e),
        Ok(None) => LineOfSight::Clear,
        Ok(Some(p)) => cast_ray(&p, world, &opts.raycast, opts.conservative).into(),
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

/// One voxel visited by a [`VoxelTraversal`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraversalStep {
    /// The voxel.
    pub voxel: WorldPos,
    /// Distance at which the ray enters it (0 for the first voxel).
    pub t_enter: f32,
    /// Distance at which the ray leaves it, capped at the max distance.
    pub t_exit: f32,
    /// Outward normal of the face it was entered through (zero for the first voxel).
    pub entry_face: IVec3,
}

/// Every voxel a ray passes through, in order, with entry and exit distances; the same walk
/// and the same distances as [`voxel_raycast_with`], without a world. Ends after the last voxel
/// entered at or before the max distance, or at the edge of the i128 world. Stop early by
/// dropping it.
#[derive(Clone, Debug)]
pub struct VoxelTraversal {
    ray: Option<PreparedRay>,
    n: [u32; 3],
    voxel: WorldPos,
    t: f32,
    entry_axis: u32,
    done: bool,
}

impl VoxelTraversal {
    /// Starts a traversal. An invalid ray yields nothing; check it first with
    /// [`VoxelRay::prepare`] if that matters.
    #[must_use]
    pub fn new(ray: &VoxelRay) -> Self {
        let prepared = ray.prepare().ok().flatten();
        Self {
            voxel: prepared.map_or(WorldPos::ZERO, |p| p.start),
            done: prepared.is_none(),
            ray: prepared,
            n: [0; 3],
            t: 0.0,
            entry_axis: AXIS_NONE,
        }
    }
}

impl Iterator for VoxelTraversal {
    type Item = TraversalStep;

    fn next(&mut self) -> Option<TraversalStep> {
        if self.done {
            return None;
        }
        let r = self.ray.as_ref()?;
        let t_next: [f32; 3] = std::array::from_fn(|a| {
            if r.enabled[a] {
                crossing_t(r.b[a], r.inv[a], self.n[a])
            } else {
                T_DISABLED
            }
        });
        let a = next_axis(t_next);
        let mut entry_face = IVec3::ZERO;
        if self.entry_axis != AXIS_NONE {
            let e = self.entry_axis as usize;
            entry_face[e] = -i32::from(r.step[e]);
        }
        let item = TraversalStep {
            voxel: self.voxel,
            t_enter: self.t,
            t_exit: t_next[a].min(r.max_distance),
            entry_face,
        };
        // Advance for the next call.
        let mut off = IVec3::ZERO;
        off[a] = i32::from(r.step[a]);
        match self.voxel.checked_offset(off) {
            Some(v) if t_next[a] <= r.max_distance => {
                self.voxel = v;
                self.n[a] += 1;
                self.t = t_next[a];
                self.entry_axis = a as u32;
            }
            _ => self.done = true,
        }
        Some(item)
    }
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
        let extras = |tied| (1..8).filter(|&m| tie_extra(tied, m)).collect::<Vec<_>>();
        assert_eq!(tied_axes([1.0, 1.0, 2.0], 1.0), 0b011);
        assert_eq!(extras(0b011), [0b010]);
        assert_eq!(extras(0b101), [0b100]);
        assert_eq!(extras(0b110), [0b100]);
        assert_eq!(extras(0b111), [0b010, 0b100, 0b101, 0b110]);
        assert!(extras(0b001).is_empty());
    }
}
