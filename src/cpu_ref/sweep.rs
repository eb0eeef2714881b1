//! Sweeps: rays that start at one point are cast in groups of nearby directions. Before its
//! rays are cast, a group finds how far all of them certainly travel through air
//! (`air_before`), and each ray then starts there in one exact move instead of crossing that
//! air box by box. The answers are those of [`voxel_raycast_with`](crate::voxel_raycast_with)
//! for each ray, bit for bit: the sweep only chooses where each exact walk starts.
//!
//! Where the groups come from: a camera's `8×8` pixel tiles (`camera.rs`); a sensor rig's
//! directions, ordered once when the rig is made ([`SweepOrder`]); and in a plain batch, each
//! run of consecutive rays from one start point (a camera or a LiDAR built by hand, rays in
//! pixel order from one eye), sorted by direction cell here, block by block.

use rayon::iter::{IndexedParallelIterator, IntoParallelRefIterator, ParallelIterator};
use rayon::slice::{ParallelSlice, ParallelSliceMut};

use crate::cpu_ref::Cast;
use crate::ray::{
    PreparedRay, RaycastOptions, RaycastOutcome, SharedStart, UnloadedPolicy, VoxelRay, floor_i64,
};
use crate::world::VoxelWorld;

/// Most rays in a group: enough to share the air search's cost, few enough that their
/// directions stay within a few voxels of each other for hundreds of voxels.
const GROUP: usize = 64;
/// Fewest consecutive rays from one start point that a batch sorts into groups: below it,
/// the trial and the sort cost more than the shared air saves.
const MIN_RUN: usize = 2 * GROUP;
/// Rays a task of a batch casts one by one, outside runs.
const ALONE: usize = 256;
/// Steps of the air search along the group's rays, in voxels: the first, the longest, and the
/// shortest before it gives up.
const FIRST_STEP: f64 = 8.0;
const LONGEST_STEP: f64 = 64.0;
const SHORTEST_STEP: f64 = 1.0;
/// The widest box, in voxels on any axis, that the air search asks about: a box costs a region
/// lookup per region it touches, and a wide group far out would touch thousands. Wider boxes
/// end the search (the rays then walk alone from there).
const WIDEST_BOX: i64 = 512;

/// Whether `opts` let a ray start from air found by a group (`cast_ray`'s `t_air`): under
/// [`UnloadedPolicy::Air`] and not `per_voxel`. Elsewhere each ray walks alone.
pub(crate) fn sweeps(opts: &RaycastOptions) -> bool {
    opts.unloaded == UnloadedPolicy::Air && !opts.per_voxel
}

/// Groups that search for air whatever they find, before the search must show that it pays.
const TRIAL: u32 = 4;
/// Air, in voxels a group on average, that pays for searching: a group's search costs each of
/// its rays about what a voxel step or two costs, and each voxel of air crossed together saves
/// a ray a voxel step or more (rays near the ground find a few voxels, and gain from them).
const AIR_THAT_PAYS: f32 = 4.0;
/// Where the search does not pay, one group in this many still searches, so that a task whose
/// first groups looked at a wall finds the open sky further on.
const RETRY: u32 = 8;

/// Whether the air search pays, from what it has found so far.
#[derive(Clone, Copy, Debug, Default)]
struct AirGate {
    /// Air searches made, the air they found (voxels, added up), and groups not searched.
    searches: u32,
    found: f32,
    passed: u32,
}

impl AirGate {
    /// Whether the search has found at least `AIR_THAT_PAYS` voxels a group on average (or has
    /// not been tried `TRIAL` times yet).
    fn pays(&self) -> bool {
        self.searches < TRIAL || self.found >= AIR_THAT_PAYS * self.searches as f32
    }

    /// Whether the next group should search: where it pays, and one group in `RETRY` elsewhere.
    fn next(&mut self) -> bool {
        if self.pays() {
            return true;
        }
        self.passed += 1;
        self.passed.is_multiple_of(RETRY)
    }

    fn searched(&mut self, t_air: f32) {
        self.searches += 1;
        self.found += t_air;
    }
}

/// What the groups of one task share: whether the air search pays, and room for a group's
/// prepared rays.
#[derive(Default)]
pub(crate) struct Shared {
    air: AirGate,
    rays: Vec<(usize, PreparedRay)>,
}

impl Shared {
    /// Casts the rays of one group from `from` (each a direction, a max distance and the
    /// index its answer goes to): finds the air they cross together (where the search pays),
    /// then casts each from there. `answer(i, outcome)` receives each ray's outcome, exactly
    /// [`voxel_raycast_with`](crate::voxel_raycast_with)'s.
    #[inline]
    pub(crate) fn cast_group(
        &mut self,
        from: &SharedStart,
        rays: impl Iterator<Item = (usize, glam::Vec3, f32)>,
        cast: &Cast<'_>,
        mut answer: impl FnMut(usize, RaycastOutcome),
    ) {
        let mut prepared = std::mem::take(&mut self.rays);
        prepared.clear();
        for (i, d, max) in rays {
            match from.prepare(d, max) {
                Err(e) => answer(i, RaycastOutcome::Invalid(e)),
                Ok(None) => answer(i, RaycastOutcome::Miss),
                Ok(Some(p)) => prepared.push((i, p)),
            }
        }
        self.cast_prepared(from, &prepared, cast, answer);
        self.rays = prepared;
    }

    /// [`Shared::cast_group`] for rays already prepared from `from`.
    #[inline]
    pub(crate) fn cast_prepared(
        &mut self,
        from: &SharedStart,
        rays: &[(usize, PreparedRay)],
        cast: &Cast<'_>,
        mut answer: impl FnMut(usize, RaycastOutcome),
    ) {
        let t_air = if sweeps(cast.opts()) && self.air.next() {
            let t = air_before(cast.world(), from, rays.iter().map(|(_, r)| r));
            self.air.searched(t);
            t
        } else {
            0.0
        };
        for (i, r) in rays {
            answer(*i, cast.swept(r, t_air));
        }
    }
}

/// Casts `rays` into `out` in input order, each outcome exactly
/// [`voxel_raycast_with`](crate::voxel_raycast_with)'s, on rayon's threads: in blocks of
/// Bits of a direction's index in its block in a [`SweepOrder`] key.
const INDEX_BITS: u32 = 12;
const _: () = assert!(BLOCK == 1 << INDEX_BITS);
/// Bits an axis of a direction's cell in a [`SweepOrder`] key, above its index.
const CELL_BITS: u32 = (u32::BITS - INDEX_BITS) / 2;
/// Digits of the radix sort of [`SweepOrder`] keys: two passes over the cell bits.
const DIGIT_BITS: u32 = CELL_BITS;

/// Sorts `keys` (cell above index, the indices distinct) by cell, then index: two stable
/// passes of a radix sort over the cell bits, as the keys come in index order. `spare` is
/// scratch of the same length, reused between calls.
fn radix_sort_cells(keys: &mut Vec<u32>, spare: &mut Vec<u32>) {
    spare.clear();
    spare.resize(keys.len(), 0);
    for pass in 0..2 {
        let shift = INDEX_BITS + pass * DIGIT_BITS;
        let digit = |k: u32| ((k >> shift) & ((1 << DIGIT_BITS) - 1)) as usize;
        let mut at = [0u32; 1 << DIGIT_BITS];
        for &k in keys.iter() {
            at[digit(k)] += 1;
        }
        let mut sum = 0;
        for c in &mut at {
            (*c, sum) = (sum, sum + *c);
        }
        for &k in keys.iter() {
            let d = digit(k);
            spare[at[d] as usize] = k;
            at[d] += 1;
        }
        std::mem::swap(keys, spare);
    }
}

/// `BLOCK` consecutive rays, where runs of at least `MIN_RUN` rays from one start point are
/// swept and the rest cast one by one.
pub(crate) fn cast_batch_into(
    rays: &[VoxelRay],
    world: &VoxelWorld,
    opts: &RaycastOptions,
    out: &mut Vec<RaycastOutcome>,
) {
    Cast::for_batch(world, opts, rays.len(), |cast| {
        if !sweeps(opts) || !has_run(rays) {
            rays.par_iter()
                .with_min_len(ALONE)
                .map(|r| cast.unprepared(r))
                .collect_into_vec(out);
            return;
        }
        out.clear();
        out.resize(rays.len(), RaycastOutcome::Miss);
        out.par_chunks_mut(BLOCK)
            .zip(rays.par_chunks(BLOCK))
            .for_each(|(out, rays)| cast_block(rays, cast, out));
    });
}

/// [`cast_batch_into`] on the calling thread.
pub(crate) fn cast_serial_into(
    rays: &[VoxelRay],
    world: &VoxelWorld,
    opts: &RaycastOptions,
    out: &mut Vec<RaycastOutcome>,
) {
    out.clear();
    Cast::for_batch(world, opts, rays.len(), |cast| {
        if !sweeps(opts) {
            out.extend(rays.iter().map(|r| cast.unprepared(r)));
            return;
        }
        out.resize(rays.len(), RaycastOutcome::Miss);
        for (out, rays) in out.chunks_mut(BLOCK).zip(rays.chunks(BLOCK)) {
            cast_block(rays, cast, out);
        }
    });
}

/// Rays a task of a batch sweeps: the runs it sorts lie within it, so that its answers are
/// written into a part of the output that stays in cache, with no reordering afterwards.
/// Large enough to hold several rows of a camera's pixels or a LiDAR's channels.
const BLOCK: usize = 1 << 12;

/// Whether `rays` has a run of at least `MIN_RUN` consecutive rays from one start point.
fn has_run(rays: &[VoxelRay]) -> bool {
    let mut run = 1;
    for w in rays.windows(2) {
        if same_start(&w[0], &w[1]) {
            run += 1;
            if run >= MIN_RUN {
                return true;
            }
        } else {
            run = 1;
        }
    }
    false
}

/// Whether rays `a` and `b` start at the same point (the same origin voxel and sub-offset, as
/// given).
#[inline]
fn same_start(a: &VoxelRay, b: &VoxelRay) -> bool {
    a.origin == b.origin
        && a.sub_offset.to_array().map(f32::to_bits) == b.sub_offset.to_array().map(f32::to_bits)
}

/// Whether rays of `run` (which share their start point) find enough air together for sorting
/// them into groups to pay: the air found by `TRIAL` strips of `GROUP` consecutive rays, spread
/// over the run, is at least what makes a search pay on average. Strips are wider than the
/// groups sorted by direction, so they find less air than those.
fn air_found(from: &SharedStart, run: &[VoxelRay], world: &VoxelWorld) -> bool {
    let mut trial = AirGate::default();
    let strips = run.len() / GROUP;
    let every = (strips / TRIAL as usize).max(1);
    for k in (0..strips).step_by(every).take(TRIAL as usize) {
        let strip: Vec<PreparedRay> = run[k * GROUP..(k + 1) * GROUP]
            .iter()
            .filter_map(|r| from.prepare(r.direction, r.max_distance).ok().flatten())
            .collect();
        trial.searched(air_before(world, from, strip.iter()));
    }
    trial.pays()
}

/// Casts `rays` (a block of a batch cast under options that sweep) into `out`, each outcome
/// exactly [`voxel_raycast_with`](crate::voxel_raycast_with)'s: runs of at least `MIN_RUN`
/// rays from one start point sorted into groups of nearby directions and swept, where a trial
/// finds air; the rest one by one.
fn cast_block(rays: &[VoxelRay], cast: &Cast<'_>, out: &mut [RaycastOutcome]) {
    let mut shared = Shared::default();
    let mut dirs: Vec<glam::Vec3> = Vec::new();
    let mut start = 0;
    while start < rays.len() {
        let mut end = start + 1;
        while end < rays.len() && same_start(&rays[end], &rays[start]) {
            end += 1;
        }
        // A run whose start point is bad is cast ray by ray, each with its own first error.
        let from = (end - start >= MIN_RUN)
            .then(|| SharedStart::new(rays[start].origin, rays[start].sub_offset).ok())
            .flatten()
            .filter(|from| air_found(from, &rays[start..end], cast.world()));
        match from {
            None => {
                for i in start..end {
                    out[i] = cast.unprepared(&rays[i]);
                }
            }
            Some(from) => {
                dirs.clear();
                dirs.extend(rays[start..end].iter().map(|r| r.direction));
                for g in SweepOrder::of(&dirs).groups() {
                    let group = g.iter().map(|&k| {
                        let r = &rays[start + k as usize];
                        (start + k as usize, r.direction, r.max_distance)
                    });
                    shared.cast_group(&from, group, cast, |i, o| out[i] = o);
                }
            }
        }
        start = end;
    }
}

/// An order of a set of directions in which runs of nearby directions follow each other, cut
/// into groups of at most `GROUP`: what a sweep casts together. Made from the directions
/// alone, so a sensor rig's order holds in every pose (a rotation keeps nearby directions
/// nearby). Directions are ordered within blocks of `BLOCK` consecutive ones, so that a
/// block's answers are written into a part of the output that stays in cache.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SweepOrder {
    /// The directions' indices, group after group.
    order: Vec<u32>,
    /// Where each group ends in `order`.
    ends: Vec<u32>,
    /// Per block, the index in `ends` of its first group; then the count of groups.
    blocks: Vec<u32>,
}

impl SweepOrder {
    /// The order of `dirs` (any non-zero vectors; others go anywhere). In each block, the
    /// directions are sorted along a Z-order curve over the octahedral map of the sphere, then
    /// cut into groups at `GROUP` directions and wherever the curve leaves a cell sized to hold
    /// about `GROUP` of them (so a group never spans two far-apart parts of the curve).
    pub(crate) fn of(dirs: &[glam::Vec3]) -> Self {
        let mut s = Self::default();
        let mut cells: Vec<[u32; 2]> = Vec::with_capacity(dirs.len().min(BLOCK));
        let mut keys: Vec<u32> = Vec::with_capacity(dirs.len().min(BLOCK));
        let mut spare: Vec<u32> = Vec::new();
        for (b, block) in dirs.chunks(BLOCK).enumerate() {
            s.blocks.push(s.ends.len() as u32);
            let base = b * BLOCK;
            cells.clear();
            cells.extend(block.iter().map(|&d| octahedral_cell(d)));
            let (lo, hi) = cells.iter().fold(([u32::MAX; 2], [0; 2]), |(lo, hi), c| {
                (
                    [lo[0].min(c[0]), lo[1].min(c[1])],
                    [hi[0].max(c[0]), hi[1].max(c[1])],
                )
            });
            // A cell edge (a power of two of map units) holding about `GROUP` directions were
            // they spread evenly over their bounding box.
            let area = f64::from(hi[0] - lo[0] + 1) * f64::from(hi[1] - lo[1] + 1);
            let edge = (GROUP as f64 * area / block.len() as f64).sqrt();
            let level = (edge.log2().ceil().max(0.0) as u32).min(16);
            // Cells from the block's lowest, coarsened to `CELL_BITS` bits an axis, so that a
            // key holds the cell's Z-order index above the direction's index in the block.
            let span = (hi[0] - lo[0]).max(hi[1] - lo[1]);
            let coarse = (u32::BITS - span.leading_zeros()).saturating_sub(CELL_BITS);
            let level = level.saturating_sub(coarse);
            keys.clear();
            keys.extend(cells.iter().enumerate().map(|(i, c)| {
                let cell = morton((c[0] - lo[0]) >> coarse, (c[1] - lo[1]) >> coarse);
                cell << INDEX_BITS | i as u32
            }));
            radix_sort_cells(&mut keys, &mut spare);
            let cell_of = |k: u32| (k >> INDEX_BITS) >> (2 * level);
            let mut from = 0;
            for i in 1..=keys.len() {
                if i == keys.len() || i - from == GROUP || cell_of(keys[i]) != cell_of(keys[from]) {
                    s.ends.push((base + i) as u32);
                    from = i;
                }
            }
            let index = (1 << INDEX_BITS) - 1;
            s.order
                .extend(keys.iter().map(|&k| (base as u32) + (k & index)));
        }
        s.blocks.push(s.ends.len() as u32);
        s
    }

    /// Answers every direction into `out` (indexed as the directions were given), block by
    /// block on rayon's threads: `cast(group, block, base, shared)` answers the directions of
    /// `group` (indices into `out`) into `block`, the part of `out` from index `base`, with
    /// `shared` shared by the block's groups.
    pub(crate) fn cast_into(
        &self,
        out: &mut [RaycastOutcome],
        cast: impl Fn(&[u32], &mut [RaycastOutcome], usize, &mut Shared) + Sync,
    ) {
        out.par_chunks_mut(BLOCK)
            .enumerate()
            .for_each(|(b, block)| {
                let mut shared = Shared::default();
                for g in self.blocks[b] as usize..self.blocks[b + 1] as usize {
                    cast(self.group(g), block, b * BLOCK, &mut shared);
                }
            });
    }

    /// The groups, each the indices of its directions.
    fn groups(&self) -> impl Iterator<Item = &[u32]> + '_ {
        (0..self.ends.len()).map(|g| self.group(g))
    }

    /// Group `g`: the indices of its directions.
    fn group(&self, g: usize) -> &[u32] {
        let from = if g == 0 { 0 } else { self.ends[g - 1] as usize };
        &self.order[from..self.ends[g] as usize]
    }
}

/// The cell of direction `d` on a `65536 × 65536` octahedral map of the sphere: nearby
/// directions get nearby cells. Zero and non-finite vectors get cell `(0, 0)`.
fn octahedral_cell(d: glam::Vec3) -> [u32; 2] {
    let s = d.x.abs() + d.y.abs() + d.z.abs();
    if !(s > 0.0 && s.is_finite()) {
        return [0, 0];
    }
    let (mut u, mut v) = (d.x / s, d.y / s);
    if d.z < 0.0 {
        (u, v) = ((1.0 - v.abs()) * u.signum(), (1.0 - u.abs()) * v.signum());
    }
    let q = |c: f32| (((c + 1.0) * 32767.5) as u32).min(65535);
    [q(u), q(v)]
}

/// `x` and `y` (16 bits each) with their bits interleaved: a point's index on the Z-order curve.
fn morton(x: u32, y: u32) -> u32 {
    let spread = |mut v: u32| {
        v &= 0xFFFF;
        v = (v | v << 8) & 0x00FF_00FF;
        v = (v | v << 4) & 0x0F0F_0F0F;
        v = (v | v << 2) & 0x3333_3333;
        (v | v << 1) & 0x5555_5555
    };
    spread(x) | spread(y) << 1
}

/// A distance up to which every voxel that any of `rays` (all prepared from `from`) visits
/// lies above its region's column tops (air, or not loaded): 0 when none is found. Walks the
/// rays' bounding box forward in steps of up to `LONGEST_STEP` voxels, halving the step where
/// a box reaches below the tops. The boxes are widened by a margin far larger than the
/// difference between a ray's exact line and the voxels its DDA visits.
pub(crate) fn air_before<'r>(
    world: &VoxelWorld,
    from: &SharedStart,
    rays: impl Iterator<Item = &'r PreparedRay>,
) -> f32 {
    let mut rays = rays.peekable();
    let Some(first) = rays.peek() else {
        return 0.0;
    };
    let (mut d_lo, mut d_hi) = (first.dir.as_dvec3(), first.dir.as_dvec3());
    let mut t_max = 0.0f64;
    for r in rays {
        debug_assert!(r.origin() == from.origin && r.sub == from.sub);
        d_lo = d_lo.min(r.dir.as_dvec3());
        d_hi = d_hi.max(r.dir.as_dvec3());
        t_max = t_max.max(f64::from(r.max_distance));
    }
    let sub = from.sub.as_dvec3();
    let origin = from.origin.to_array();
    let (mut t0, mut step) = (0.0f64, FIRST_STEP);
    while t0 < t_max {
        let t1 = (t0 + step).min(t_max);
        let slack = 0.01 + t1 * 1e-4;
        let lo = (sub + (d_lo * t0).min(d_lo * t1) - slack)
            .to_array()
            .map(floor_i64);
        let hi = (sub + (d_hi * t0).max(d_hi * t1) + slack)
            .to_array()
            .map(floor_i64);
        if (0..3).any(|a| hi[a] - lo[a] > WIDEST_BOX) {
            break;
        }
        let corner = |v: [i64; 3]| std::array::from_fn(|a| origin[a].saturating_add(v[a].into()));
        if world.air_above_tops(corner(lo), corner(hi)) {
            t0 = t1;
            step = (step * 2.0).min(LONGEST_STEP);
        } else if step > SHORTEST_STEP {
            step /= 2.0;
        } else {
            break;
        }
    }
    // The largest f32 not above `t0`.
    let t = t0 as f32;
    if f64::from(t) > t0 { t.next_down() } else { t }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coords::WorldPos;
    use voxcast_testkit::scene::Terrain;

    /// A run of a camera's rays over terrain must be swept (or the batch would be correct but
    /// no faster, and the parity tests could not tell); a run from inside the ground must not.
    #[test]
    fn runs_over_terrain_are_swept_and_buried_ones_are_not() {
        let t = Terrain {
            size: [256, 128, 256],
            seed: 7,
        };
        let world = crate::world::world_of(|f| t.for_each_voxel(f));
        let ground = i128::from(t.height(128, 32).max(t.sea_level()));
        let run = |y: i128| -> Vec<VoxelRay> {
            (0..40 * 30)
                .map(|k| VoxelRay {
                    origin: WorldPos::new(128, y, 32),
                    sub_offset: glam::Vec3::splat(0.5),
                    direction: glam::Vec3::new(
                        (k % 40) as f32 * 0.02 - 0.4,
                        -0.3 - (k / 40) as f32 * 0.01,
                        1.0,
                    ),
                    max_distance: 500.0,
                })
                .collect()
        };
        let found = |y: i128| {
            let from = SharedStart::new(WorldPos::new(128, y, 32), glam::Vec3::splat(0.5));
            air_found(&from.expect("a valid start"), &run(y), &world)
        };
        assert!(found(ground + 40));
        assert!(!found(ground - 5));
    }

    /// The gate searches in its trial, then only where searches find air, and retries now
    /// and then where they do not.
    #[test]
    fn the_air_gate_searches_where_it_pays_and_retries() {
        let mut gate = AirGate::default();
        for _ in 0..TRIAL {
            assert!(gate.next());
            gate.searched(0.0);
        }
        let searched: Vec<bool> = (0..2 * RETRY).map(|_| gate.next()).collect();
        assert_eq!(searched.iter().filter(|&&s| s).count(), 2, "{searched:?}");
        // A retry that finds open sky makes searching pay again.
        gate.searched(AIR_THAT_PAYS * (TRIAL + 2) as f32);
        assert!(gate.pays() && gate.next());
    }

    #[test]
    fn nearby_directions_share_groups() {
        // A 64 × 64 grid of directions around +Z, shuffled: every group's directions lie
        // within a few grid steps of each other.
        let mut dirs = Vec::new();
        for i in 0..64 {
            for j in 0..64 {
                dirs.push(glam::Vec3::new(
                    i as f32 * 0.01 - 0.32,
                    j as f32 * 0.01 - 0.32,
                    1.0,
                ));
            }
        }
        let mut rng = voxcast_testkit::SplitMix64::new(5);
        for i in (1..dirs.len()).rev() {
            dirs.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let s = SweepOrder::of(&dirs);
        let mut seen = vec![false; dirs.len()];
        for g in s.groups() {
            assert!(!g.is_empty() && g.len() <= GROUP);
            let lo = g
                .iter()
                .fold(glam::Vec3::MAX, |m, &k| m.min(dirs[k as usize]));
            let hi = g
                .iter()
                .fold(glam::Vec3::MIN, |m, &k| m.max(dirs[k as usize]));
            assert!(
                (hi - lo).max_element() <= 0.16,
                "a group spans {:?}",
                hi - lo
            );
            for &k in g {
                assert!(!std::mem::replace(&mut seen[k as usize], true), "{k} twice");
            }
        }
        assert!(seen.iter().all(|&s| s), "every direction in a group");
        assert!(
            s.groups().count() <= 2 * dirs.len() / GROUP,
            "groups mostly full"
        );
        // Degenerate directions still get a place.
        let odd = [glam::Vec3::ZERO, glam::Vec3::NAN, glam::Vec3::X];
        assert_eq!(
            SweepOrder::of(&odd)
                .groups()
                .map(<[u32]>::len)
                .sum::<usize>(),
            3
        );
        assert_eq!(SweepOrder::of(&[]).groups().count(), 0);
    }

    #[test]
    fn the_radix_sort_sorts() {
        let mut rng = voxcast_testkit::SplitMix64::new(9);
        for len in [0, 1, 2, 100, BLOCK] {
            // Keys as `SweepOrder::of` makes them: any cell above distinct indices in order,
            // cells drawn from few values too so that equal cells keep their index order.
            for few in [false, true] {
                let mut keys: Vec<u32> = (0..len as u32)
                    .map(|i| {
                        let cell = if few {
                            rng.below(4) as u32
                        } else {
                            rng.next_u64() as u32
                        };
                        cell << INDEX_BITS | i
                    })
                    .collect();
                let mut want = keys.clone();
                want.sort_unstable();
                radix_sort_cells(&mut keys, &mut Vec::new());
                assert_eq!(keys, want, "{len} keys");
            }
        }
    }
}
