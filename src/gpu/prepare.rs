//! Preparing a batch on the host: each ray validated, split into the window's i32 voxel and
//! stepped to the window where it starts outside (or answered here when it cannot reach it),
//! encoded in the wire format, and the uploaded rays put in an order that keeps neighbouring
//! invocations coherent; and which cameras the shader can make exactly.

use bytemuck::Zeroable;
use rayon::iter::{
    IndexedParallelIterator, IntoParallelRefIterator, IntoParallelRefMutIterator, ParallelIterator,
};
use rayon::slice::{ParallelSlice, ParallelSliceMut};

use crate::coords::CHUNK_SHIFT;
use crate::cpu_ref::{AXIS_NONE, Dda, LONG_RAY, unloaded_tie_extra};
use crate::gpu::decode::HostAnswer;
use crate::gpu::layout::{
    COUNT_MAX, GpuRay, RAY_CLIPPED, RAY_COUNTS_SHIFT, RAY_ENTRY_SHIFT, RAY_NEGATIVE_SHIFT,
    RAY_PLANE_SHIFT, RAY_SET_UP_IN_SHADER,
};
use crate::gpu::window::Window;
use crate::ray::{
    MAX_DISTANCE_CAP, OriginPolicy, PreparedRay, RayError, RaycastOptions, RaycastOutcome,
    UnloadedPolicy, VoxelRay, WindowRay, first_crossing, first_voxel, flush_denormal,
};

/// How a prepared ray goes to the GPU: as the state the shader starts from, or answered here.
pub(super) enum Prepared {
    Gpu(GpuRay),
    Answered(RaycastOutcome),
}

/// The host's share of a batch of rays, on all threads: validation, the i128 split and
/// clipping. Rays answered here go straight to `out` (as their outcome converted); the
/// others are staged at their index and put in upload order: the batch's parts (runs of
/// a dispatch's worth of rays in the caller's order, see [`Buckets::new`]) one after
/// another, and within a part by coherence bucket (neighbouring invocations then get rays
/// from the same chunks going the same way, so they walk the same chunks and branch
/// alike). With `in_shader` ([`RaySetup::Shader`](crate::gpu::RaySetup::Shader)) rays that
/// start in the window are staged as given for the shader to set up
/// ([`RAY_SET_UP_IN_SHADER`]) and nothing is sorted: where every ray goes up, upload position
/// `i` is ray `i` ([`HostStaging::in_caller_order`]); where the host answers some, the others
/// keep the caller's order without them. Returns the staging, whether every uploaded ray is at
/// least [`LONG_RAY`] long (for the choice of walk) and how many rays go to the GPU.
pub(super) fn prepare_rays<R: HostRay, T: HostAnswer>(
    staging: HostStaging,
    window: &Window,
    (per_dispatch, in_shader): (u32, bool),
    rays: &[R],
    opts: &RaycastOptions,
    conservative: bool,
    out: &mut [T],
) -> (HostStaging, bool, usize) {
    let job = (window, per_dispatch as usize, (opts, conservative));
    if in_shader {
        prepare::<true, _, _>(staging, job, rays, out)
    } else {
        prepare::<false, _, _>(staging, job, rays, out)
    }
}

/// [`prepare_rays`] with the setup a constant, so that the per-ray loop does not branch on it.
fn prepare<const IN_SHADER: bool, R: HostRay, T: HostAnswer>(
    mut staging: HostStaging,
    (window, per_dispatch, options): (&Window, usize, (&RaycastOptions, bool)),
    rays: &[R],
    out: &mut [T],
) -> (HostStaging, bool, usize) {
    let n = rays.len();
    if staging.rays.len() < n {
        staging.rays.resize(n, GpuRay::zeroed());
    }
    let last = last_voxel(window);
    let buckets = if IN_SHADER {
        Buckets::unsorted(n, per_dispatch)
    } else {
        Buckets::new(n, per_dispatch, window.dims)
    };
    staging.keys.clear();
    staging.keys.resize(n, NOT_UPLOADED);
    // Part by part, so that each ray's part is known without a division.
    let (mut uploaded, mut short) = (0, 0);
    let rays_of = staging.rays[..n].chunks_mut(buckets.part_rays);
    let keys_of = staging.keys.chunks_mut(buckets.part_rays);
    let parts = out
        .chunks_mut(buckets.part_rays)
        .zip(rays.chunks(buckets.part_rays));
    for (part, ((out, rays), (slots, keys))) in parts.zip(rays_of.zip(keys_of)).enumerate() {
        let (u, s) = out
            .par_iter_mut()
            .zip(rays.par_iter())
            .zip(slots.par_iter_mut().zip(keys.par_iter_mut()))
            .with_min_len(4096)
            .map(|((o, ray), (g, key))| {
                let Some(r) = staged::<IN_SHADER, _, _>(ray, window, last, options, o) else {
                    return (0, 0);
                };
                *g = r;
                *key = buckets.key(part as u32, &r);
                (1, usize::from(r.max_distance < LONG_RAY))
            })
            .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        uploaded += u;
        short += s;
    }
    if IN_SHADER && uploaded == n {
        staging.in_caller_order(n);
    } else {
        staging.counting_sort(&buckets);
    }
    (staging, short == 0, uploaded)
}

/// The last window-relative voxel of `window`. A window spans fewer than 2^31 voxels a side
/// (`MAX_WINDOW_CHUNKS`); were it not so, the fast path would refuse every window ray.
fn last_voxel(window: &Window) -> [i32; 3] {
    let last = window.relative(window.bounds.max);
    debug_assert!(last.is_some());
    last.unwrap_or([-1; 3])
}

/// What goes up for `ray`: its fast path's slot ([`HostRay::fast`], in the shader's form
/// with `IN_SHADER`) or its general path's state; `None` where the host answers it (the answer
/// written to `o`).
#[inline(always)]
fn staged<const IN_SHADER: bool, R: HostRay, T: HostAnswer>(
    ray: &R,
    window: &Window,
    last: [i32; 3],
    (opts, conservative): (&RaycastOptions, bool),
    o: &mut T,
) -> Option<GpuRay> {
    if let Some(r) = ray.fast::<IN_SHADER>(window, last) {
        return Some(r);
    }
    general(ray, window, opts, conservative)
        .map_err(|answer| *o = answer)
        .ok()
}

/// The general path of a ray the fast path ([`HostRay::fast`]) refuses: its state for the
/// GPU, or its answer when it is invalid or never reaches the window. Out of line: the fast
/// path's loop stays small.
#[cold]
#[inline(never)]
fn general<R: HostRay, T: HostAnswer>(
    ray: &R,
    window: &Window,
    opts: &RaycastOptions,
    conservative: bool,
) -> Result<GpuRay, T> {
    let prepared = ray
        .voxel_ray(window)
        .and_then(|ray| ray.prepare())
        .map(|p| p.map(|p| encode(window, &p, opts, conservative)));
    let outcome = match prepared {
        Ok(Some(Prepared::Gpu(r))) => return Ok(r),
        Ok(Some(Prepared::Answered(a))) => a,
        Ok(None) => RaycastOutcome::Miss,
        Err(e) => RaycastOutcome::Invalid(e),
    };
    Err(T::answered(outcome, window))
}

/// A ray as a batch takes it: a [`VoxelRay`], or a [`WindowRay`] relative to the window's
/// first voxel.
pub(super) trait HostRay: Sync {
    /// The GPU's state of the ray where it is valid as given (a max distance within the cap,
    /// a finite direction of squared length within `1e-5` of 1, an offset in `[0, 1)`:
    /// nothing to normalise) and its start voxel lies in window `w`, whose last voxel is
    /// `last` (window-relative): exactly what [`VoxelRay::prepare`] and [`encode`] make of
    /// such a ray, without their general paths, or with `IN_SHADER` the ray as the shader
    /// sets it up ([`RAY_SET_UP_IN_SHADER`]). `None` for every other ray.
    fn fast<const IN_SHADER: bool>(&self, w: &Window, last: [i32; 3]) -> Option<GpuRay>;
    /// The [`VoxelRay`] it stands for; an error where that is beyond the i128 world.
    fn voxel_ray(&self, w: &Window) -> Result<VoxelRay, RayError>;
}

impl HostRay for VoxelRay {
    #[inline]
    fn fast<const IN_SHADER: bool>(&self, w: &Window, _: [i32; 3]) -> Option<GpuRay> {
        let start = |a: usize, sub: f32, d: f32| {
            let start = first_voxel(self.origin.axis(a), sub, d)?;
            let rel = start.checked_sub(w.bounds.min.axis(a))?;
            if start > w.bounds.max.axis(a) || rel < 0 {
                return None;
            }
            i32::try_from(rel).ok()
        };
        fast_ray::<IN_SHADER>(self.sub_offset, self.direction, self.max_distance, start)
    }

    #[inline]
    fn voxel_ray(&self, _: &Window) -> Result<VoxelRay, RayError> {
        Ok(*self)
    }
}

impl HostRay for WindowRay {
    #[inline]
    fn fast<const IN_SHADER: bool>(&self, _: &Window, last: [i32; 3]) -> Option<GpuRay> {
        let start = |a: usize, sub: f32, d: f32| {
            let start = first_voxel(i128::from(self.voxel[a]), sub, d)?;
            i32::try_from(start)
                .ok()
                .filter(|s| (0..=last[a]).contains(s))
        };
        fast_ray::<IN_SHADER>(self.sub_offset, self.direction, self.max_distance, start)
    }

    #[inline]
    fn voxel_ray(&self, w: &Window) -> Result<VoxelRay, RayError> {
        self.to_voxel_ray(w.bounds.min)
            .ok_or(RayError::OriginOutOfRange)
    }
}

/// [`HostRay::fast`] for a ray of offset `sub`, direction `d` and max distance `max` whose
/// window-relative start voxel on axis `a` is `start(a, sub, d)` (`None` outside the window),
/// given the offset and direction as they are cast; with `IN_SHADER` the ray as the shader
/// sets it up: its voxel before the start-voxel rule (the shader applies it), the offset and
/// direction as they are cast, marked [`RAY_SET_UP_IN_SHADER`].
#[inline]
fn fast_ray<const IN_SHADER: bool>(
    sub: glam::Vec3,
    d: glam::Vec3,
    max: f32,
    start: impl Fn(usize, f32, f32) -> Option<i32>,
) -> Option<GpuRay> {
    if !(0.0..=MAX_DISTANCE_CAP).contains(&max) {
        return None;
    }
    // As `VoxelRay::new` keeps a unit direction: as given, denormals flushed.
    if !d.is_finite() || (d.length_squared() - 1.0).abs() > 1e-5 {
        return None;
    }
    let d = d.to_array().map(flush_denormal);
    let mut out = GpuRay {
        flags: AXIS_NONE << RAY_ENTRY_SHIFT,
        max_distance: max + 0.0,
        ..GpuRay::zeroed()
    };
    for a in 0..3 {
        let sub = sub[a];
        if !(0.0..1.0).contains(&sub) {
            return None;
        }
        let (sub, d) = (flush_denormal(sub), d[a]);
        out.voxel[a] = start(a, sub, d)?;
        if IN_SHADER {
            // The start voxel is at most the window's last, so one past it fits.
            out.voxel[a] += i32::from(d < 0.0 && sub == 0.0);
            (out.b[a], out.inv[a]) = (sub, d);
            continue;
        }
        out.b[a] = first_crossing(sub, d);
        let inv = 1.0 / d.abs();
        let enabled = d != 0.0 && inv.is_finite() && out.b[a] * inv <= out.max_distance;
        out.inv[a] = if enabled { inv } else { d.abs() };
        out.flags |= u32::from(enabled) << a
            | u32::from(d < 0.0) << (RAY_NEGATIVE_SHIFT + a as u32)
            | u32::from(d == 0.0 && sub == 0.0) << (RAY_PLANE_SHIFT + a as u32);
    }
    if IN_SHADER {
        out.flags = 0;
        out.counts_hi = RAY_SET_UP_IN_SHADER;
    }
    Some(out)
}

/// The GPU's state for a stepping state `d` (clipped into the window or not), or `None`
/// where its voxel lies beyond the window's coordinates.
fn gpu_ray(w: &Window, d: &Dda<'_>, clipped: bool) -> Option<GpuRay> {
    let voxel = w.relative(d.voxel())?;
    Some(gpu_ray_at(d.ray, voxel, d.entry_axis, d.n, clipped))
}

/// The host's share of the work: the state the GPU starts from, or the whole answer when
/// the ray never gets into the window.
pub(super) fn encode(
    w: &Window,
    r: &PreparedRay,
    opts: &RaycastOptions,
    conservative: bool,
) -> Prepared {
    // A ray that starts inside goes up as it is: what `Dda::new` would make of it (no
    // crossing done, entered through no face).
    if let Some(voxel) = w
        .bounds
        .contains(r.start)
        .then(|| w.relative(r.start))
        .flatten()
    {
        return Prepared::Gpu(gpu_ray_at(r, voxel, AXIS_NONE, [0; 3], false));
    }
    // A window that follows a center knows nothing outside its box: the ray ends where it
    // starts, as unloaded, whatever the unloaded policy (as the shader ends a ray that leaves
    // the box).
    if w.partial() {
        return Prepared::Answered(RaycastOutcome::Unloaded {
            voxel_pos: r.start,
            distance: 0.0,
        });
    }
    let mut d = Dda::new(r);
    match opts.unloaded {
        // Outside the window nothing is loaded: air. Clip exactly as the CPU reference does.
        UnloadedPolicy::Air => {
            if d.enter_box(&w.bounds) {
                gpu_ray(w, &d, true).map_or(Prepared::Answered(RaycastOutcome::Miss), Prepared::Gpu)
            } else {
                Prepared::Answered(RaycastOutcome::Miss)
            }
        }
        UnloadedPolicy::Stop if opts.origin == OriginPolicy::SkipOriginVoxel => {
            // The origin voxel is skipped; the ray stops at the next voxel unless that is
            // inside the window, where the GPU takes over. Conservative line of sight first
            // tests the voxels beside its first crossing: within a voxel of the start, so
            // outside the loaded chunks (the window has a margin of a chunk), unloaded.
            if conservative && let Some(o) = unloaded_tie_extra(&d, opts) {
                return Prepared::Answered(o);
            }
            if d.dda_step().is_err() {
                return Prepared::Answered(RaycastOutcome::Miss);
            }
            if w.bounds.contains(d.voxel()) {
                gpu_ray(w, &d, true).map_or(Prepared::Answered(RaycastOutcome::Miss), Prepared::Gpu)
            } else {
                Prepared::Answered(RaycastOutcome::Unloaded {
                    voxel_pos: d.voxel(),
                    distance: d.t,
                })
            }
        }
        UnloadedPolicy::Stop => Prepared::Answered(RaycastOutcome::Unloaded {
            voxel_pos: r.start,
            distance: 0.0,
        }),
    }
}

/// The GPU's state of ray `r` at window-relative `voxel`, entered through `entry_axis` after
/// `n` crossings per axis (`clipped`: moved into the window on the host).
fn gpu_ray_at(
    r: &PreparedRay,
    voxel: [i32; 3],
    entry_axis: u32,
    n: [u32; 3],
    clipped: bool,
) -> GpuRay {
    let mut flags = entry_axis << RAY_ENTRY_SHIFT;
    for a in 0..3 {
        flags |= u32::from(r.enabled[a]) << a;
        flags |= u32::from(r.step[a] < 0) << (RAY_NEGATIVE_SHIFT + a as u32);
    }
    if clipped {
        flags |= RAY_CLIPPED;
    }
    // Shifting on these axes commutes with clipping and the host's step: neither moves them.
    flags |= r.plane_axes() << RAY_PLANE_SHIFT;
    // Counts are at most one past MAX_DISTANCE_CAP, 17 bits each.
    debug_assert!(n.iter().all(|&n| n <= COUNT_MAX), "{n:?}");
    let [x, y, z] = n.map(|n| u64::from(n.min(COUNT_MAX)));
    let counts = x | y << 17 | z << 34;
    flags |= ((counts & 0xF_FFFF) as u32) << RAY_COUNTS_SHIFT;
    GpuRay {
        voxel,
        flags,
        b: r.b,
        max_distance: r.max_distance,
        inv: std::array::from_fn(|a| {
            if r.enabled[a] {
                r.inv[a]
            } else {
                r.dir[a].abs()
            }
        }),
        counts_hi: (counts >> 20) as u32,
    }
}

impl HostStaging {
    /// Puts the prepared rays (`rays[..n]` with their `keys`) in upload order, a counting sort
    /// on all threads, stable within a bucket: `position` says where each ray went, `order`
    /// which ray each upload position takes and `part_ends` where each part's rays end. Only
    /// 4-byte indices move here; the rays themselves are gathered once, into the mapped upload
    /// buffer ([`HostStaging::gather`]).
    fn counting_sort(&mut self, buckets: &Buckets) {
        let n = self.keys.len();
        let total = buckets.total();
        // Runs of the caller's order, one a thread, each counted on its own.
        let tasks = (n / SORT_TASK_RAYS).clamp(1, rayon::current_num_threads().min(SORT_TASKS));
        let run = n.div_ceil(tasks).max(1);
        self.counts.clear();
        self.counts.resize(tasks * total, 0);
        self.counts
            .par_chunks_mut(total)
            .zip(self.keys.par_chunks(run))
            .for_each(|(counts, keys)| {
                for &k in keys.iter().filter(|&&k| k != NOT_UPLOADED) {
                    counts[k as usize] += 1;
                }
            });
        let uploaded: u32 = self.counts.iter().sum();
        // Every place is written below: the order of an earlier batch is not cleared first.
        self.order.truncate(uploaded as usize);
        self.order.resize(uploaded as usize, 0);
        // Each run's share of each bucket: buckets in order, runs in order within a bucket,
        // a slice of the upload order each (the counts become the first positions).
        let mut slots: Vec<Vec<&mut [u32]>> =
            (0..tasks).map(|_| Vec::with_capacity(total)).collect();
        let mut rest = self.order.as_mut_slice();
        let mut next = 0u32;
        self.part_ends.clear();
        for b in 0..total {
            for (t, slot) in slots.iter_mut().enumerate() {
                let c = &mut self.counts[t * total + b];
                let (mine, later) = std::mem::take(&mut rest).split_at_mut(*c as usize);
                slot.push(mine);
                rest = later;
                (*c, next) = (next, next + *c);
            }
            if (b + 1) % buckets.per_part as usize == 0 {
                self.part_ends.push(u64::from(next));
            }
        }
        self.part_rays = buckets.part_rays;
        self.caller_order = false;
        self.position.clear();
        self.position.resize(n, NOT_UPLOADED_AT);
        self.counts
            .par_chunks_mut(total)
            .zip(slots)
            .zip(self.keys.par_chunks(run))
            .zip(self.position.par_chunks_mut(run))
            .enumerate()
            .for_each(|(t, (((next, mut slots), keys), position))| {
                for (i, (&k, p)) in keys.iter().zip(position).enumerate() {
                    if k == NOT_UPLOADED {
                        continue;
                    }
                    let k = k as usize;
                    if let Some((first, rest)) = std::mem::take(&mut slots[k]).split_first_mut() {
                        // Batches hold at most u32::MAX rays (a dispatch's positions are u32).
                        *first = (t * run + i) as u32;
                        slots[k] = rest;
                        *p = next[k];
                        next[k] += 1;
                    }
                }
            });
    }

    /// Writes the `count` uploaded rays from position `base` of the upload order into the
    /// mapped `buffer` at byte `at`, on all threads, each through its own view of a share of
    /// the range: the only copy of the rays after they are prepared. Rays are gathered a
    /// block at a time in cache and written out in one piece (mapped memory may be
    /// write-combined).
    pub(super) fn gather(
        &self,
        base: usize,
        count: usize,
        buffer: &wgpu::Buffer,
        at: u64,
    ) -> Result<(), wgpu::MapRangeError> {
        const BLOCK: usize = 256;
        const RAY: u64 = size_of::<GpuRay>() as u64;
        // A few shares a thread; a ray is 48 bytes, so every share starts 8-byte aligned
        // (what mapping asks) where `at` does.
        let share = count
            .div_ceil(4 * rayon::current_num_threads())
            .max(SORT_TASK_RAYS);
        let view_of = |s: usize, rays: usize| {
            let start = at + (s * share) as u64 * RAY;
            buffer
                .slice(start..start + rays as u64 * RAY)
                .get_mapped_range_mut()
        };
        if self.caller_order {
            // Staged in upload order already: copied as they are.
            return self.rays[base..base + count]
                .par_chunks(share)
                .enumerate()
                .try_for_each(|(s, rays)| {
                    view_of(s, rays.len())?.copy_from_slice(bytemuck::cast_slice(rays));
                    Ok(())
                });
        }
        let order = &self.order[base..base + count];
        order
            .par_chunks(share)
            .enumerate()
            .try_for_each(|(s, order)| {
                let mut view = view_of(s, order.len())?;
                let mut block = [GpuRay::zeroed(); BLOCK];
                for (k, order) in order.chunks(BLOCK).enumerate() {
                    for (b, &i) in block.iter_mut().zip(order) {
                        *b = self.rays[i as usize];
                    }
                    let from = k * BLOCK * RAY as usize;
                    view.slice(from..from + order.len() * RAY as usize)
                        .copy_from_slice(bytemuck::cast_slice(&block[..order.len()]));
                }
                Ok(())
            })
    }
}

/// How a batch's rays are grouped for upload: in parts of `part_rays` rays of the caller's
/// order (each read back on its own), within a part by octant of direction, then by the
/// window's cell of `2^shift` chunks a side they start in.
#[derive(Clone, Copy, Debug)]
struct Buckets {
    part_rays: usize,
    parts: usize,
    /// Buckets per part: 1 when the batch is not sorted, else 8 octants of `cells`.
    per_part: u32,
    cells: [u32; 3],
    shift: u32,
}

impl Buckets {
    /// The grouping of a batch of `n` rays on a window of `dims` chunks, dispatched
    /// `per_dispatch` rays at a time: at most [`MAX_BUCKETS`] buckets in all. A part is
    /// `per_dispatch` rays, or more where the batch has over `MAX_BUCKETS` of those; parts too
    /// many for eight octants each (tiny dispatches) are not sorted within.
    fn new(n: usize, per_dispatch: usize, dims: [u32; 3]) -> Self {
        let Self {
            part_rays, parts, ..
        } = Self::unsorted(n, per_dispatch);
        let budget = MAX_BUCKETS / parts / 8;
        let cells_at = |shift: u32| dims.map(|d| d.div_ceil(1 << shift));
        let product = |c: [u32; 3]| c.iter().map(|&c| c as usize).product::<usize>();
        let mut shift = 0;
        while shift < 31 && product(cells_at(shift)) > budget.max(1) {
            shift += 1;
        }
        let cells = cells_at(shift);
        let sort = n >= SORT_MIN_RAYS && budget >= 1;
        Self {
            part_rays,
            parts,
            per_part: if sort { 8 * product(cells) as u32 } else { 1 },
            cells,
            shift,
        }
    }

    /// The grouping of a batch of `n` rays that is not sorted: parts as [`Buckets::new`] cuts
    /// them, one bucket each.
    fn unsorted(n: usize, per_dispatch: usize) -> Self {
        let part_rays = per_dispatch.max(n.div_ceil(MAX_BUCKETS)).max(1);
        Self {
            part_rays,
            parts: n.div_ceil(part_rays).max(1),
            per_part: 1,
            cells: [1; 3],
            shift: 0,
        }
    }

    /// Buckets in all.
    fn total(&self) -> usize {
        self.parts * self.per_part as usize
    }

    /// The bucket of a ray of part `part` of the batch, uploaded as `r`.
    fn key(&self, part: u32, r: &GpuRay) -> u32 {
        let part = part * self.per_part;
        if self.per_part == 1 {
            return part;
        }
        let octant = (r.flags >> RAY_NEGATIVE_SHIFT) & 7;
        // Window-relative voxels are never negative; a cell past the last is the last.
        let cell = |a: usize| {
            ((r.voxel[a].max(0) as u32) >> (CHUNK_SHIFT + self.shift)).min(self.cells[a] - 1)
        };
        let [cx, cy, _] = self.cells;
        part + octant * (self.per_part / 8) + cell(0) + cx * (cell(1) + cy * cell(2))
    }
}

/// Rays (or host-built camera pixels) a blocking call prepares at a time: larger batches are
/// cast in bands of this many, so that the host's working buffers (at most 60 bytes a ray,
/// `HostStaging`, for two bands at once) stay near 130 MB however large the batch.
#[cfg(not(target_arch = "wasm32"))]
pub(super) const HOST_BAND: usize = 1 << 20;

/// Batches at least this large are sorted for coherence before upload.
const SORT_MIN_RAYS: usize = 4096;

/// Most coherence buckets of a batch ([`Buckets`]): each sorting task counts them all.
const MAX_BUCKETS: usize = 1 << 15;

/// Most threads of the counting sort, and the fewest rays each is given.
const SORT_TASKS: usize = 16;
const SORT_TASK_RAYS: usize = 1 << 15;

/// The bucket of a ray answered on the host (no bucket is this large).
const NOT_UPLOADED: u32 = u32::MAX;

/// The upload position of a ray answered on the host.
pub(super) const NOT_UPLOADED_AT: u32 = u32::MAX;

/// The host's working buffers for a batch of rays ([`prepare_rays`]), kept in
/// the raycaster's pool between batches.
#[derive(Debug, Default)]
pub(super) struct HostStaging {
    /// Each prepared ray at its index in the batch.
    pub(super) rays: Vec<GpuRay>,
    /// Each ray's bucket ([`Buckets`]), or [`NOT_UPLOADED`].
    keys: Vec<u32>,
    /// The counting sort's counts, then next positions: per task, per bucket.
    counts: Vec<u32>,
    /// Per ray, its place in the upload order, or [`NOT_UPLOADED_AT`].
    pub(super) position: Vec<u32>,
    /// Per upload position, the index of the ray it takes: the upload order.
    pub(super) order: Vec<u32>,
    /// Rays of the caller's order per part (the last may have fewer), and where each part's
    /// rays end in the upload order: a dispatch never takes rays of two parts.
    pub(super) part_rays: usize,
    pub(super) part_ends: Vec<u64>,
    /// Whether the batch is staged in the caller's order, every ray going up ([`prepare_rays`]):
    /// upload position `i` is ray `i`, and `keys`, `position` and `order` are unused.
    pub(super) caller_order: bool,
}

impl HostStaging {
    /// Bytes allocated.
    pub(super) fn bytes(&self) -> u64 {
        (self.rays.capacity() * size_of::<GpuRay>()
            + (self.keys.capacity() + self.counts.capacity()) * size_of::<u32>()
            + self.position.capacity() * size_of::<u32>()
            + self.order.capacity() * size_of::<u32>()
            + self.part_ends.capacity() * size_of::<u64>()) as u64
    }

    /// Marks the staging as a batch of `n` rays that all go up in the caller's order
    /// ([`prepare_rays`]), one part.
    fn in_caller_order(&mut self, n: usize) {
        self.caller_order = true;
        self.keys.clear();
        self.position.clear();
        self.order.clear();
        self.part_rays = n;
        self.part_ends.clear();
        self.part_ends.push(n as u64);
    }

    /// The caller's rays of the part whose upload range holds position `base`, and where that
    /// part's uploaded rays start.
    pub(super) fn part_of(&self, base: u64) -> (std::ops::Range<usize>, u64) {
        let p = self.part_ends.partition_point(|&e| e <= base);
        let n = self.position.len();
        let first = (p * self.part_rays).min(n);
        let start = if p == 0 { 0 } else { self.part_ends[p - 1] };
        (first..(first + self.part_rays).min(n), start)
    }

    /// Where the part holding upload position `at` ends in the upload order.
    pub(super) fn part_end(&self, at: u64) -> u64 {
        let p = self.part_ends.partition_point(|&e| e <= at);
        self.part_ends.get(p).copied().unwrap_or(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coords::WorldPos;

    /// The upload order puts parts one after another, within a part buckets in order and
    /// within a bucket the caller's order; `position` and `order` agree, and rays answered on
    /// the host are left out.
    #[test]
    fn counting_sort_orders_parts_then_buckets_then_callers() {
        let (n, per_dispatch, dims) = (70_001, 20_000, [5, 2, 3]);
        let buckets = Buckets::new(n, per_dispatch, dims);
        assert_eq!((buckets.parts, buckets.part_rays), (4, 20_000));
        assert_eq!(
            (buckets.shift, buckets.cells, buckets.per_part),
            (0, dims, 8 * 30)
        );
        let mut rng = voxcast_testkit::SplitMix64::new(29);
        let mut s = HostStaging {
            rays: (0..n)
                .map(|i| GpuRay {
                    voxel: dims.map(|d| rng.below(u64::from(d) * 32) as i32),
                    flags: (rng.below(8) as u32) << RAY_NEGATIVE_SHIFT,
                    max_distance: i as f32,
                    ..GpuRay::zeroed()
                })
                .collect(),
            ..HostStaging::default()
        };
        s.keys = (0..n)
            .map(|i| {
                if i % 7 == 3 {
                    NOT_UPLOADED
                } else {
                    buckets.key((i / buckets.part_rays) as u32, &s.rays[i])
                }
            })
            .collect();
        s.counting_sort(&buckets);
        let uploaded = (0..n).filter(|i| i % 7 != 3).count();
        assert_eq!(s.order.len(), uploaded);
        let mut last = None;
        for (j, &i) in s.order.iter().enumerate() {
            let i = i as usize;
            assert_eq!(s.rays[i].max_distance as usize, i);
            assert_eq!(s.position[i] as usize, j, "ray {i}");
            let (part, key) = (i / 20_000, s.keys[i]);
            assert!(j as u64 >= s.part_of(j as u64).1 && (j as u64) < s.part_end(j as u64));
            assert_eq!(
                s.part_of(j as u64).0,
                part * 20_000..((part + 1) * 20_000).min(n)
            );
            assert!(last < Some((key, i)), "ray {i} after {last:?}");
            last = Some((key, i));
        }
        for (i, &p) in s.position.iter().enumerate() {
            assert_eq!(p == NOT_UPLOADED_AT, i % 7 == 3, "ray {i}");
        }
        assert_eq!(s.part_ends.len(), 4);
        assert_eq!(*s.part_ends.last().unwrap(), uploaded as u64);
        // Rays of one chunk and octant share a bucket; the octant weighs more than the cell.
        let ray = |voxel: [i32; 3], octant: u32| GpuRay {
            voxel,
            flags: octant << RAY_NEGATIVE_SHIFT,
            ..GpuRay::zeroed()
        };
        assert_eq!(
            buckets.key(0, &ray([0, 0, 0], 0)),
            buckets.key(0, &ray([31, 31, 31], 0))
        );
        assert_eq!(buckets.key(0, &ray([32, 0, 0], 0)), 1);
        assert_eq!(buckets.key(0, &ray([0, 32, 64], 0)), 5 + 2 * 10);
        assert_eq!(buckets.key(1, &ray([0, 0, 0], 1)), 240 + 30);
        // A window too large for a bucket a chunk groups cells of 2^shift chunks.
        let wide = Buckets::new(1 << 20, 1 << 19, [1000, 16, 1000]);
        assert_eq!((wide.shift, wide.cells), (5, [32, 1, 32]));
        assert!(wide.total() <= MAX_BUCKETS);
        // Small batches are not sorted: one bucket a part.
        assert_eq!(Buckets::new(SORT_MIN_RAYS - 1, 100, dims).per_part, 1);
    }

    /// Set up in the shader, a batch whose rays all go up is staged in the caller's order,
    /// slot `i` ray `i`; one with rays the host answers keeps the caller's order without them,
    /// each part (a dispatch's run of the caller's order) ending where its rays end.
    #[test]
    fn rays_set_up_in_the_shader_keep_the_callers_order() {
        use crate::coords::ChunkPos;
        let w = Window::around((ChunkPos::new(-2, -1, -3), ChunkPos::new(3, 2, 1))).unwrap();
        let mut rng = voxcast_testkit::SplitMix64::new(43);
        let mut rays: Vec<VoxelRay> = (0..10_000)
            .map(|_| VoxelRay {
                origin: WorldPos::new(
                    rng.below(64) as i128 - 32,
                    rng.below(32) as i128 - 16,
                    rng.below(64) as i128 - 64,
                ),
                sub_offset: glam::Vec3::splat(0.5),
                direction: rng.unit_vector(),
                max_distance: 20.0,
            })
            .collect();
        let opts = RaycastOptions::default();
        let mut out = vec![RaycastOutcome::Miss; rays.len()];
        let job = (3000, true);
        let staging = HostStaging::default();
        let (staging, _, uploaded) = prepare_rays(staging, &w, job, &rays, &opts, false, &mut out);
        assert_eq!(uploaded, rays.len());
        assert!(staging.caller_order);
        let slots = &staging.rays[..rays.len()];
        assert!(slots.iter().all(|g| g.counts_hi == RAY_SET_UP_IN_SHADER));
        for r in rays.iter_mut().step_by(7) {
            r.max_distance = f32::NAN;
        }
        let (staging, _, uploaded) = prepare_rays(staging, &w, job, &rays, &opts, false, &mut out);
        let kept: Vec<u32> = (0..rays.len() as u32).filter(|i| i % 7 != 0).collect();
        assert_eq!(uploaded, kept.len());
        assert!(!staging.caller_order);
        assert_eq!(staging.order, kept);
        for (p, &i) in kept.iter().enumerate() {
            assert_eq!(staging.position[i as usize], p as u32);
        }
        let ends: Vec<u64> = (1..=4)
            .map(|k| kept.iter().filter(|&&i| (i as usize) < 3000 * k).count() as u64)
            .collect();
        assert_eq!(staging.part_ends, ends);
        let invalid = |o: &RaycastOutcome| matches!(o, RaycastOutcome::Invalid(_));
        assert!(out.iter().step_by(7).all(invalid));
    }

    /// A twin of `made_ray` and `prepare_axis` in `shaders/rays.wgsl` (on a GPU that rounds as
    /// IEEE 754 does, as the exact division of `shaders/exact.wgsl` makes every GPU do): the
    /// state the shader makes of a slot uploaded as given.
    fn shader_set_up(s: &GpuRay) -> GpuRay {
        let mut made = GpuRay {
            flags: AXIS_NONE << RAY_ENTRY_SHIFT,
            max_distance: s.max_distance,
            voxel: s.voxel,
            ..GpuRay::zeroed()
        };
        for a in 0..3 {
            let (d, sub) = (flush_denormal(s.inv[a]), s.b[a]);
            let bit = |shift: u32| 1 << (shift + a as u32);
            if d == 0.0 && sub == 0.0 {
                made.flags |= bit(RAY_PLANE_SHIFT);
            }
            if d < 0.0 {
                made.flags |= bit(RAY_NEGATIVE_SHIFT);
                if sub == 0.0 {
                    made.voxel[a] -= 1;
                    made.b[a] = 1.0;
                } else {
                    made.b[a] = sub;
                }
            } else {
                made.b[a] = 1.0 - sub;
            }
            made.inv[a] = d.abs();
            if d != 0.0 {
                let inv = 1.0 / d.abs();
                if made.b[a] * inv <= made.max_distance {
                    made.flags |= bit(0);
                    made.inv[a] = inv;
                }
            }
        }
        made
    }

    /// The fast path for rays that start in the window gives exactly the state the general
    /// path (`VoxelRay::prepare`, then `encode`) gives, bit for bit, and refuses every ray the
    /// general path would change, reject or clip: rays at the window's faces and the i128
    /// edge, signed zeros, denormals, directions not quite unit, every kind of max distance;
    /// and the same ray given relative to the window ([`WindowRay`]) gets the same state.
    #[test]
    fn window_ray_is_prepare_then_encode() {
        use crate::coords::ChunkPos;
        use glam::Vec3;
        let windows = [
            Window::around((ChunkPos::new(-2, -1, -3), ChunkPos::new(3, 2, 1))).unwrap(),
            Window::following(
                ChunkPos::new(ChunkPos::MAX_INDEX, 5, ChunkPos::MIN_INDEX),
                [2; 3],
            ),
        ];
        let mut rng = voxcast_testkit::SplitMix64::new(41);
        let (mut fast, mut checked, mut local_checked) = (0, 0, 0);
        for w in &windows {
            for _ in 0..200_000 {
                let corner = if rng.below(2) == 0 {
                    w.bounds.min
                } else {
                    w.bounds.max
                };
                let origin = WorldPos::from_array(std::array::from_fn(|a| {
                    let span = w.bounds.max.axis(a).abs_diff(w.bounds.min.axis(a));
                    match rng.below(4) {
                        0 => corner.axis(a).saturating_add(rng.below(5) as i128 - 2),
                        _ => w.bounds.min.axis(a) + rng.below(span as u64 + 1) as i128,
                    }
                }));
                let special = |rng: &mut voxcast_testkit::SplitMix64, x: f32| {
                    const SPECIAL: [f32; 7] = [0.0, -0.0, 1e-40, -1e-40, 0.5, 1.0, f32::NAN];
                    if rng.below(5) == 0 {
                        SPECIAL[rng.below(7) as usize]
                    } else {
                        x
                    }
                };
                let u = rng.unit_vector();
                let scale = [1.0, 1.0, 1.0 + 4e-6, 1.0 - 4e-6, 1.0 + 1e-4, 3.0];
                let scale = scale[rng.below(6) as usize];
                let direction = Vec3::new(
                    special(&mut rng, u.x),
                    special(&mut rng, u.y),
                    special(&mut rng, u.z),
                ) * scale;
                let (sx, sy) = (rng.next_f32(), rng.next_f32());
                let sub = Vec3::new(
                    special(&mut rng, sx),
                    special(&mut rng, sy),
                    special(&mut rng, 1.0 - f32::EPSILON / 2.0),
                );
                let max_distance = [
                    0.0,
                    -0.0,
                    8.5,
                    MAX_DISTANCE_CAP,
                    MAX_DISTANCE_CAP * 2.0,
                    -1.0,
                    f32::NAN,
                ][rng.below(7) as usize];
                let ray = VoxelRay {
                    origin,
                    sub_offset: sub,
                    direction,
                    max_distance,
                };
                let general = match ray.prepare() {
                    Ok(Some(p)) => match encode(w, &p, &RaycastOptions::default(), false) {
                        Prepared::Gpu(g) => Some(g),
                        Prepared::Answered(_) => None,
                    },
                    _ => None,
                };
                let last = w.relative(w.bounds.max).unwrap();
                let got = ray.fast::<false>(w, last);
                // Set up in the shader: the same rays go up, as given, each with its voxel
                // before the start-voxel rule (the shader applies it).
                let as_given = ray.fast::<true>(w, last);
                assert_eq!(as_given.is_some(), got.is_some(), "{ray:?}");
                if let (Some(s), Some(g)) = (as_given, got) {
                    let d = ray.direction.to_array().map(flush_denormal);
                    let sub = ray.sub_offset.to_array().map(flush_denormal);
                    for a in 0..3 {
                        let moved = i32::from(d[a] < 0.0 && sub[a] == 0.0);
                        assert_eq!(s.voxel[a] - moved, g.voxel[a], "{ray:?}");
                        assert_eq!(s.b[a].to_bits(), sub[a].to_bits(), "{ray:?}");
                        assert_eq!(s.inv[a].to_bits(), d[a].to_bits(), "{ray:?}");
                    }
                    let marks = (s.flags, s.counts_hi, s.max_distance.to_bits());
                    let want = (0, RAY_SET_UP_IN_SHADER, g.max_distance.to_bits());
                    assert_eq!(marks, want, "{ray:?}");
                    let made = shader_set_up(&s);
                    assert_eq!(bytemuck::bytes_of(&made), bytemuck::bytes_of(&g), "{ray:?}");
                }
                // The same ray relative to the window takes the same path to the same state.
                if let Some(local) = WindowRay::from_voxel_ray(&ray, w.bounds.min) {
                    let bytes = |g: Option<GpuRay>| g.map(|g| bytemuck::bytes_of(&g).to_vec());
                    assert_eq!(bytes(local.fast::<false>(w, last)), bytes(got), "{ray:?}");
                    assert_eq!(
                        bytes(local.fast::<true>(w, last)),
                        bytes(as_given),
                        "{ray:?}"
                    );
                    let twin = local.voxel_ray(w).map(|r| format!("{r:?}"));
                    assert_eq!(twin, Ok(format!("{ray:?}")));
                    local_checked += 1;
                }
                match got {
                    Some(g) => {
                        fast += 1;
                        let general = general.unwrap_or_else(|| panic!("{ray:?} in {w:?}"));
                        assert_eq!(
                            bytemuck::bytes_of(&g),
                            bytemuck::bytes_of(&general),
                            "{ray:?}"
                        );
                    }
                    None => {
                        // Refused: the ray is not one the fast path takes as it is.
                        checked += 1;
                    }
                }
            }
        }
        // Both kinds occur often: the comparison above is not vacuous.
        assert!(
            fast > 20_000 && checked > 20_000 && local_checked > 200_000,
            "{fast} fast, {checked} refused, {local_checked} relative to the window"
        );
    }
}
