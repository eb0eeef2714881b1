//! The stepping state of one ray and its moves: a DDA step, the dense-chunk hot loop, exact
//! skips of empty boxes and clipping to a box. Twins in `shaders/dda.wgsl` as named on each.

use glam::{IVec3, Vec2};

use crate::aabb::ray_aabb_f64;
use crate::coords::{CHUNK_SHIFT, VoxelBox, WorldPos};
use crate::cpu_ref::{
    AXIS_NONE, CHUNK_MAX, CHUNK_MIN, ChunkKind, ChunkTable, T_DISABLED, chunk_corner_in_region,
    count_before, crossing_before, crossing_t, next_axis, tie_scaled,
};
use crate::ray::{MaterialFilter, PreparedRay, VoxelRaycastHit};
use crate::world::{BRICK_EDGE, ColumnTops, DenseChunk, VoxelId, empty_box};

/// How [`Dda::walk_dense`] left its loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Walk {
    Hit(VoxelId),
    LeftChunk,
    Miss,
}

/// The ray ended as a miss: its next crossing lies beyond max distance, or it left the i128
/// world.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ended;

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
    /// `local` is in `0..32` again. Returns whether the chunk changed. The skipped box lies
    /// in one region, which lies inside the i128 world, so the chunk index cannot overflow.
    pub(super) fn carry_local(&mut self) -> bool {
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
    /// Returns whether the step entered another chunk; `Err(Ended)` beyond max distance
    /// or the i128 edge.
    #[inline(always)]
    pub(crate) fn dda_step(&mut self) -> Result<bool, Ended> {
        let a = next_axis(self.t_next);
        let t = self.t_next[a];
        if t > self.ray.max_distance {
            return Err(Ended);
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
            Err(Ended)
        }
    }

    /// The hot loop for a dense chunk, with the whole state in registers: examines the
    /// current voxel and steps, exactly as `dda_step` does, skipping empty bricks with
    /// `skip_box`, until a voxel stops the ray ([`Walk::Hit`], state at that voxel), the ray
    /// enters another chunk ([`Walk::LeftChunk`], state in the new chunk) or it ends
    /// ([`Walk::Miss`]). Only where the origin policy no longer matters (past the origin voxel
    /// and out of any solid it started in, or anywhere under `Report`) and without the
    /// conservative tie test. Twin of `walk_dense` in `shaders/dda.wgsl`, which makes the same
    /// comparisons without branches and leaves empty bricks to its caller (faster there).
    ///
    /// `STEP_EMPTY_BRICKS` (the shader's `FLAG_STEP_EMPTY_BRICKS`): whether empty bricks are
    /// stepped through voxel by voxel (faster for short rays, and in worlds with few empty
    /// bricks: see [`LONG_RAY`]) or skipped whole. When skipping, a voxel above its region's column tops (`tops`, where the caller's unloaded
    /// policy allows them) skips the box above the tops instead, cut to this chunk (see
    /// `ColumnTops::box_above`); the shader has no tops and skips the bricks.
    /// `ROWS`: whether occupancy words are read from the id records (`PackedIds`), where the
    /// hit voxel's id shares a cache line with its occupancy word (faster for short rays), or
    /// from the compact occupancy bits (faster for long rays, which cross many rows). Only for
    /// chunks whose records hold occupancy words. A layout choice of the CPU's alone: the
    /// shader reads the GPU's own buffers (compact occupancy bits, `u16` ids) and takes the
    /// same steps.
    ///
    /// `table`: the batch's chunk table and its lowest chunk (only with `STEP_EMPTY_BRICKS`,
    /// under `Air`): the walk goes on into the next chunk where that is dense (and holds
    /// occupancy words, with `ROWS`), ends as [`Walk::Miss`] where the ray leaves the table's
    /// bounds (nothing outside them stops it), and leaves as [`Walk::LeftChunk`] elsewhere.
    #[inline(always)]
    pub(super) fn walk_dense<'c, const STEP_EMPTY_BRICKS: bool, const ROWS: bool>(
        &mut self,
        c: &'c DenseChunk,
        every_non_air: bool,
        blocks: &MaterialFilter,
        tops: Option<&ColumnTops>,
        table: Option<(&'c ChunkTable<'c>, [i128; 3])>,
    ) -> Walk {
        let r = self.ray;
        let at = chunk_corner_in_region(self.chunk);
        let mut c = c;
        let mut occupancy = &*c.occupancy;
        let (mut records, mut shift) = (c.ids.words(), c.ids.record_shift());
        // The chunk's place in the table, where there is one.
        let mut place: [u32; 3] = match table {
            Some((_, lo)) => std::array::from_fn(|a| self.chunk[a].wrapping_sub(lo[a]) as u32),
            None => [0; 3],
        };
        macro_rules! load {
            ($y:expr, $z:expr) => {
                if ROWS {
                    records[(($y | $z << 5) << shift) as usize]
                } else {
                    occupancy[($y | $z << 5) as usize]
                }
            };
        }
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
        let mut word = load!(y, z);
        // The ray left the chunk on axis `$a` (local coordinate `$v`, now 32 or `u32::MAX`):
        // where the next chunk is dense, go on in it; else leave the loop.
        macro_rules! next_chunk {
            ($a:expr, $v:ident, $step:expr) => {
                match table {
                    Some((t, _)) if STEP_EMPTY_BRICKS => {
                        place[$a] = place[$a].wrapping_add($step);
                        if place[$a] >= t.dims[$a] {
                            break Walk::Miss;
                        }
                        $v &= 31;
                        match t.slot(place) {
                            ChunkKind::Dense(next) if !ROWS || next.ids.has_occupancy() => {
                                c = next;
                                occupancy = &*c.occupancy;
                                (records, shift) = (c.ids.words(), c.ids.record_shift());
                                word = load!(y, z);
                                continue;
                            }
                            _ => break Walk::LeftChunk,
                        }
                    }
                    _ => break Walk::LeftChunk,
                }
            };
        }
        let walk = loop {
            if word >> x & 1 != 0 {
                let id = c.ids.id_in_row(y | z << 5, x);
                if every_non_air || blocks.contains(id) {
                    break Walk::Hit(id);
                }
            } else if !STEP_EMPTY_BRICKS
                && let Some((lo, hi)) = tops
                    .and_then(|t| t.box_above(at[0] + x, at[1] + y, at[2] + z))
                    .map(|(lo, hi)| {
                        // The part of the box above the column tops inside this chunk.
                        let clip = |v: u32, a: usize| v.saturating_sub(at[a]).min(31);
                        (
                            std::array::from_fn(|a| clip(lo[a], a)),
                            std::array::from_fn(|a| clip(hi[a], a)),
                        )
                    })
                    .or_else(|| empty_box(bricks, x, y, z))
            {
                // An empty box above the column tops of the region (see `ColumnTops::box_above`),
                // else an empty box of whole bricks (see `empty_box`): `skip_box` to its
                // last voxel on the ray, then step out of it below, as `cast_ray` does,
                // without leaving this loop.
                self.local = [x, y, z].map(|v| v as i32);
                self.n = [nx, ny, nz];
                self.t_next = [tx, ty, tz];
                if self
                    .skip_box::<false>(lo.map(|v| v as i32), hi.map(|v| v as i32))
                    .is_err()
                {
                    break Walk::Miss;
                }
                [x, y, z] = self.local.map(|v| v as u32);
                [nx, ny, nz] = self.n;
                [tx, ty, tz] = self.t_next;
                word = load!(y, z);
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
                    next_chunk!(0, x, sx);
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
                    next_chunk!(1, y, sy);
                }
                word = load!(y, z);
            } else {
                if tz > max {
                    break Walk::Miss;
                }
                (t, axis) = (tz, 2);
                nz += 1;
                tz = crossing_t(bz, iz, nz);
                z = z.wrapping_add(sz);
                if z >= 32 {
                    next_chunk!(2, z, sz);
                }
                word = load!(y, z);
            }
        };
        self.n = [nx, ny, nz];
        self.t_next = [tx, ty, tz];
        self.t = t;
        self.entry_axis = axis;
        self.local = [x, y, z].map(|v| v as i32);
        match table {
            // The walk has kept `place` and the local coordinates in range.
            Some((_, lo)) if STEP_EMPTY_BRICKS => {
                self.chunk = std::array::from_fn(|a| lo[a].wrapping_add(i128::from(place[a])));
            }
            _ => {
                if walk == Walk::LeftChunk {
                    let a = axis as usize;
                    if !self.carry_chunk(a, self.local[a]) {
                        return Walk::Miss;
                    }
                }
            }
        }
        walk
    }

    /// Skips to the last voxel the ray visits inside the box `lo..=hi` (local coordinates of
    /// the current chunk, inclusive; a run of chunks reaches outside `0..32`, and the caller
    /// then carries `local` back into range), which must hold nothing that stops the ray. The state
    /// lands exactly where voxel-by-voxel stepping would be just before the first crossing that
    /// leaves the box, and before any crossing tied with it (with `NEAR`, for conservative line
    /// of sight, also before any near-tied with it: see `NEAR_TIE`). Twin of `skip_box` in
    /// `shaders/dda.wgsl`. `Err(Ended)` when that crossing lies beyond max distance (with
    /// `NEAR`, when the next crossing after the landing does).
    #[inline]
    pub(crate) fn skip_box<const NEAR: bool>(
        &mut self,
        lo: [i32; 3],
        hi: [i32; 3],
    ) -> Result<(), Ended> {
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
        // Under `NEAR` a crossing inside the box within max distance can still form an edge
        // with an exit beyond it: land first, and end once the next crossing lies beyond.
        if !NEAR && t_end > r.max_distance {
            return Err(Ended);
        }
        for a in 0..3 {
            if r.enabled[a] {
                // `crossings_before`, reusing the cached next crossing and keeping the last one
                // computed as the new next crossing.
                let (c, t_next) = if a == exit_axis {
                    (k[a], t_exit[a])
                } else if k[a] <= BRICK_EDGE as u32 {
                    count_before::<NEAR>(r.b[a], r.inv[a], self.n[a], self.t_next[a], t_end)
                } else {
                    count_from_estimate::<NEAR>(r, a, self.n[a], self.t_next[a], t_end, k[a])
                };
                self.n[a] += c;
                self.local[a] += i32::from(r.step[a]) * c as i32;
                self.t_next[a] = t_next;
            }
        }
        if NEAR && self.t_next[next_axis(self.t_next)] > r.max_distance {
            return Err(Ended);
        }
        Ok(())
    }

    /// Moves the state to where voxel-by-voxel stepping is just before its first crossing at or
    /// after distance `t_end` (at most max distance): every crossing strictly before it done,
    /// on all three axes. The caller has made sure that no voxel the ray visits before `t_end`
    /// stops it. `false` when the ray leaves the i128 world on the way (a miss, as stepping
    /// would end there).
    pub(crate) fn advance_to(&mut self, t_end: f32) -> bool {
        let r = self.ray;
        let mut last: Option<(f32, usize)> = None;
        for a in 0..3 {
            if !r.enabled[a] {
                continue;
            }
            let (c, t_next) =
                count_from_estimate::<false>(r, a, self.n[a], self.t_next[a], t_end, u32::MAX >> 1);
            self.t_next[a] = t_next;
            if c == 0 {
                continue;
            }
            self.n[a] += c;
            let t = crossing_t(r.b[a], r.inv[a], self.n[a] - 1);
            if last.is_none_or(|(tl, al)| crossing_before(tl, al, t, a)) {
                last = Some((t, a));
            }
            // The voxel coordinate moves by `c` voxels (`c < 2^31`): whole chunks of the move
            // carried into the chunk index, which leaves its range exactly where the voxel
            // coordinate would leave the i128 world.
            let l = i64::from(self.local[a]) + i64::from(r.step[a]) * i64::from(c);
            let chunk = self.chunk[a] + i128::from(l >> CHUNK_SHIFT);
            if !(CHUNK_MIN..=CHUNK_MAX).contains(&chunk) {
                return false;
            }
            self.chunk[a] = chunk;
            self.local[a] = (l & 31) as i32;
        }
        if let Some((t, a)) = last {
            self.t = t;
            self.entry_axis = a as u32;
        }
        true
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

    pub(super) fn hit(&self, id: VoxelId) -> VoxelRaycastHit {
        VoxelRaycastHit {
            voxel_pos: self.voxel(),
            face_normal: self.face_normal(),
            distance: self.t,
            voxel_type: id,
            hit_uv: face_uv(self.ray, self.n, self.t, self.entry_axis),
        }
    }
}

/// [`count_before`] on axis `a` of `r` from crossing `n` (at `t_n`), for long distances:
/// counting starts from an estimate that lies just below the count (checked, so the count stays
/// exact whatever its rounding), at most `most`.
#[inline]
fn count_from_estimate<const NEAR: bool>(
    r: &PreparedRay,
    a: usize,
    n: u32,
    t_n: f32,
    t_end: f32,
    most: u32,
) -> (u32, f32) {
    // Usually the estimate is the count itself: check it and the crossing before it at once.
    // The first crossing index at or beyond `t_end`, rounded up (without a call to `ceil`).
    let x = t_end * r.dir[a].abs() - r.b[a];
    let whole = x as i64;
    let guess = whole + i64::from((whole as f32) < x) - i64::from(n);
    if (1..=i64::from(most)).contains(&guess) {
        let c = guess as u32;
        let t_c = crossing_t(r.b[a], r.inv[a], n + c);
        let before = crossing_t(r.b[a], r.inv[a], n + c - 1);
        if tie_scaled::<NEAR>(before) < t_end && tie_scaled::<NEAR>(t_c) >= t_end {
            return (c, t_c);
        }
    }
    let est = ((t_end * r.dir[a].abs() - r.b[a]) as i64 - i64::from(n) - 1)
        .clamp(0, i64::from(most)) as u32;
    let t_est = crossing_t(r.b[a], r.inv[a], n + est);
    if est > 0 && tie_scaled::<NEAR>(t_est) < t_end {
        let (c, t) = count_before::<NEAR>(r.b[a], r.inv[a], n + est, t_est, t_end);
        (est + c, t)
    } else {
        count_before::<NEAR>(r.b[a], r.inv[a], n, t_n, t_end)
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
