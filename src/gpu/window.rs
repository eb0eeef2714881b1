//! The window of chunks a `GpuWorld` covers: the i128 ↔ i32 split, clipping rays to the
//! window on the host, and decoding the shader's hits back into i128 outcomes.

use glam::{IVec3, Vec2};

use crate::coords::{ChunkPos, VoxelBox, WorldPos};
use crate::cpu_ref::{AXIS_NONE, Dda, grow_by_a_chunk, unloaded_tie_extra};
use crate::gpu::{
    COUNT_MAX, FLAG_TOROIDAL, GpuError, GpuHit, GpuRay, RAY_CLIPPED, RAY_COUNTS_SHIFT,
    RAY_ENTRY_SHIFT, RAY_NEGATIVE_SHIFT, RAY_PLANE_SHIFT, STATUS_HIT, STATUS_MISS, STATUS_TOO_LONG,
    STATUS_UNLOADED, STATUS_ZERO_LENGTH, TAG_EMPTY, TAG_MASK, TAG_UNLOADED,
};
use crate::ray::{
    OriginPolicy, PreparedRay, RayError, RaycastOptions, RaycastOutcome, UnloadedPolicy,
    VoxelRaycastHit,
};
use crate::world::{REGION_SHIFT, VoxelId};

/// How a prepared ray goes to the GPU.
pub(super) enum Upload {
    Gpu(GpuRay),
    Answered(RaycastOutcome),
}

/// The window of chunks a [`GpuWorld`] covers, and the i128 ↔ i32 split around it.
///
/// A window that follows a centre addresses its chunk table toroidally: chunk `c` of the
/// window has table entry `c mod dims` per axis, and region `r` (chunk coordinates
/// `>> REGION_SHIFT`) has region record `r mod region_dims`. A window moved by a chunk then
/// changes only the entries of the chunks that enter it (which take the slots of those that
/// leave); nothing else moves. A window that does not move numbers its entries and records
/// from its anchor, and its batches skip the shader's wrap-around (`FLAG_TOROIDAL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Window {
    pub(super) anchor: ChunkPos,
    pub(super) dims: [u32; 3],
    pub(super) bounds: VoxelBox,
    /// The chunks that may be loaded (inclusive corners): the window less its margin of one
    /// unloaded chunk on every side that is not the i128 world's edge. Rays from outside are
    /// clipped to the window without the conservative tie test at the crossing into it, which
    /// is exact only while the margin holds nothing.
    pub(super) interior: (ChunkPos, ChunkPos),
    /// The region records' grid: room for every region a window of `dims` chunks touches,
    /// wherever it lies.
    region_dims: [u32; 3],
    /// Whether the table is addressed toroidally (a window that follows a centre).
    pub(super) toroidal: bool,
}

impl Window {
    /// The window of `dims` chunks from `anchor`, whose chunks may be loaded within
    /// `interior`.
    fn new(
        anchor: ChunkPos,
        dims: [u32; 3],
        interior: (ChunkPos, ChunkPos),
        toroidal: bool,
    ) -> Self {
        let hi = ChunkPos::from_array(std::array::from_fn(|a| {
            anchor.axis(a) + i128::from(dims[a]) - 1
        }));
        Self {
            anchor,
            dims,
            bounds: VoxelBox::from_chunks(anchor, hi),
            interior,
            region_dims: dims.map(|d| d.div_ceil(1 << REGION_SHIFT) + 1),
            toroidal,
        }
    }

    /// The window around the chunks `interior` may hold: grown by a margin of one chunk,
    /// except at the edge of the i128 world. `Err` with the axis's span in chunks where it is
    /// [`MAX_WINDOW_CHUNKS`] or more.
    pub(super) fn around(interior: (ChunkPos, ChunkPos)) -> Result<Self, u128> {
        let (lo, hi) = grow_by_a_chunk(interior.0, interior.1);
        let mut dims = [0; 3];
        for (a, d) in dims.iter_mut().enumerate() {
            // At most 2^128 - 1 (the whole i128 world in chunks), so u128 holds it.
            let span = hi.axis(a).abs_diff(lo.axis(a)) + 1;
            if span >= u128::from(MAX_WINDOW_CHUNKS) {
                return Err(span);
            }
            *d = span as u32;
        }
        Ok(Self::new(lo, dims, interior, false))
    }

    /// The window of `2 · half_extent + 1` chunks a side centred on `centre` that may be
    /// loaded, plus its margin: moved inside the i128 world where it would cross its edge
    /// (then the chunks at the edge may be loaded, as the world has no margin there).
    /// `centre` must lie in the world and `half_extent` below [`MAX_WINDOW_CHUNKS`] / 2 - 1.
    pub(super) fn following(centre: ChunkPos, half_extent: [u32; 3]) -> Self {
        let dims = half_extent.map(|h| 2 * h + 3);
        let mut anchor = [0; 3];
        let mut interior = ([0; 3], [0; 3]);
        for a in 0..3 {
            let span = i128::from(dims[a]) - 1;
            let lo = (centre.axis(a) - i128::from(half_extent[a]) - 1)
                .clamp(ChunkPos::MIN_INDEX, ChunkPos::MAX_INDEX - span);
            anchor[a] = lo;
            interior.0[a] = if lo == ChunkPos::MIN_INDEX {
                lo
            } else {
                lo + 1
            };
            interior.1[a] = if lo + span == ChunkPos::MAX_INDEX {
                lo + span
            } else {
                lo + span - 1
            };
        }
        Self::new(
            ChunkPos::from_array(anchor),
            dims,
            (
                ChunkPos::from_array(interior.0),
                ChunkPos::from_array(interior.1),
            ),
            true,
        )
    }

    /// Whether chunk `pos` may be loaded in this window (see `interior`).
    pub(super) fn may_load(&self, pos: ChunkPos) -> bool {
        let (lo, hi) = self.interior;
        (0..3).all(|a| (lo.axis(a)..=hi.axis(a)).contains(&pos.axis(a)))
    }

    /// Whether chunk `pos` lies in the window (its margin included).
    pub(super) fn contains(&self, pos: ChunkPos) -> bool {
        (0..3).all(|a| {
            pos.axis(a)
                .checked_sub(self.anchor.axis(a))
                .is_some_and(|rel| (0..i128::from(self.dims[a])).contains(&rel))
        })
    }

    /// The last chunk of the window (inclusive).
    pub(super) fn last_chunk(&self) -> ChunkPos {
        self.bounds.max.chunk()
    }

    /// For the shader's `beyond_world`: bit `a` set where the window's low face on axis `a` is
    /// the i128 world's edge, bit `3 + a` where its high face is.
    pub(super) fn world_edge(&self) -> u32 {
        let hi = self.last_chunk();
        (0..3).fold(0, |bits, a| {
            bits | u32::from(self.anchor.axis(a) == ChunkPos::MIN_INDEX) << a
                | u32::from(hi.axis(a) == ChunkPos::MAX_INDEX) << (3 + a)
        })
    }

    /// How far the anchor lies into its region, per axis (`0..4`).
    fn region_phase(&self) -> [u32; 3] {
        std::array::from_fn(|a| (self.anchor.axis(a) & ((1 << REGION_SHIFT) - 1)) as u32)
    }

    /// `region_phase` packed for the shader: x in bits 0..2, y in 2..4, z in 4..6.
    pub(super) fn packed_region_phase(&self) -> u32 {
        let [x, y, z] = self.region_phase();
        x | y << 2 | z << 4
    }

    /// The anchor's table entry per axis (`anchor mod dims`, 0 where the table is not
    /// toroidal): for the shader, which finds a window chunk's entry from its window-relative
    /// position.
    pub(super) fn table_phase(&self) -> [u32; 3] {
        if !self.toroidal {
            return [0; 3];
        }
        std::array::from_fn(|a| self.anchor.axis(a).rem_euclid(i128::from(self.dims[a])) as u32)
    }

    /// The region grid's size in records (see `region_dims`).
    pub(super) fn region_dims(&self) -> [u32; 3] {
        self.region_dims
    }

    /// The anchor's region's record per axis (`(anchor >> REGION_SHIFT) mod region_dims`, 0
    /// where the table is not toroidal).
    pub(super) fn region_table_phase(&self) -> [u32; 3] {
        if !self.toroidal {
            return [0; 3];
        }
        std::array::from_fn(|a| {
            (self.anchor.axis(a) >> REGION_SHIFT).rem_euclid(i128::from(self.region_dims[a])) as u32
        })
    }

    /// Number of chunk table entries; the region records follow them.
    pub(super) fn entries(&self) -> usize {
        self.dims.iter().map(|&d| d as usize).product()
    }

    /// Number of region records (four words each).
    pub(super) fn records(&self) -> usize {
        self.region_dims.iter().map(|&d| d as usize).product()
    }

    /// The table entry of chunk `pos`, `None` outside the window.
    pub(super) fn entry_index(&self, pos: ChunkPos) -> Option<usize> {
        self.contains(pos)
            .then(|| self.grid_index(pos.to_array(), self.anchor.to_array(), self.dims))
    }

    /// The index among the region records of region `r` (chunk coordinates `>> REGION_SHIFT`).
    pub(super) fn record_index(&self, r: [i128; 3]) -> usize {
        let first = self.anchor.to_array().map(|c| c >> REGION_SHIFT);
        self.grid_index(r, first, self.region_dims)
    }

    /// Row-major index of `p` in a grid of `dims`: `p mod dims` per axis where the table is
    /// toroidal, else `p - first`.
    fn grid_index(&self, p: [i128; 3], first: [i128; 3], dims: [u32; 3]) -> usize {
        let [x, y, z] = std::array::from_fn::<usize, 3, _>(|a| {
            if self.toroidal {
                p[a].rem_euclid(i128::from(dims[a])) as usize
            } else {
                (p[a] - first[a]) as usize
            }
        });
        x + dims[0] as usize * (y + dims[1] as usize * z)
    }

    /// The shader's `OPTIONS` bits this window decides: `FLAG_TOROIDAL` where it follows a
    /// centre.
    pub(super) fn flags(&self) -> u32 {
        if self.toroidal { FLAG_TOROIDAL } else { 0 }
    }

    /// The regions holding at least one chunk of the window (inclusive corners).
    pub(super) fn regions(&self) -> ([i128; 3], [i128; 3]) {
        let hi = self.last_chunk();
        (
            self.anchor.to_array().map(|c| c >> REGION_SHIFT),
            hi.to_array().map(|c| c >> REGION_SHIFT),
        )
    }

    /// The region record of region `r` (see `RegionCache::run` in `cpu_ref.rs` and
    /// `region_run` in `shaders/dda.wgsl`): the chunks that block a run of empty chunks under
    /// `UnloadedPolicy::Air` (loaded and not all air), then under `Stop` (also not loaded),
    /// each as two words, read from the chunk entries `table` (what the GPU has, which may
    /// be older than the world for chunks edited but not passed to `update_chunks`). Chunks of
    /// the region outside the window count as not loaded.
    pub(super) fn region_record(&self, table: &[u32], r: [i128; 3]) -> [u32; 4] {
        let (mut loaded, mut occupied) = (0u64, 0u64);
        for bit in 0..64u32 {
            let entry = [bit & 3, bit >> 2 & 3, bit >> 4];
            let pos = ChunkPos::from_array(std::array::from_fn(|a| {
                (r[a] << REGION_SHIFT) + i128::from(entry[a])
            }));
            let tag = match self.entry_index(pos) {
                Some(i) => table[i] & TAG_MASK,
                None => TAG_UNLOADED,
            };
            loaded |= u64::from(tag != TAG_UNLOADED) << bit;
            occupied |= u64::from(tag != TAG_UNLOADED && tag != TAG_EMPTY) << bit;
        }
        let air = occupied;
        let stop = occupied | !loaded;
        [
            air as u32,
            (air >> 32) as u32,
            stop as u32,
            (stop >> 32) as u32,
        ]
    }

    pub(super) fn relative(&self, p: WorldPos) -> Option<[i32; 3]> {
        let mut out = [0; 3];
        for (a, o) in out.iter_mut().enumerate() {
            *o = i32::try_from(p.axis(a).checked_sub(self.bounds.min.axis(a))?).ok()?;
        }
        Some(out)
    }

    /// The world voxel of window-relative `v`; `None` beyond the i128 world.
    fn absolute(&self, v: [i32; 3]) -> Option<WorldPos> {
        let mut out = [0; 3];
        for (a, o) in out.iter_mut().enumerate() {
            *o = self.bounds.min.axis(a).checked_add(i128::from(v[a]))?;
        }
        Some(WorldPos::from_array(out))
    }

    /// The GPU's state for a stepping state `d` (clipped into the window or not), or `None`
    /// where its voxel lies beyond the window's coordinates.
    fn gpu_ray(&self, d: &Dda<'_>, clipped: bool) -> Option<GpuRay> {
        let voxel = self.relative(d.voxel())?;
        Some(gpu_ray_at(d.ray, voxel, d.entry_axis, d.n, clipped))
    }

    /// The host's share of the work: the state the GPU starts from, or the whole answer when
    /// the ray never gets into the window.
    pub(super) fn upload_ray(
        &self,
        r: &PreparedRay,
        opts: &RaycastOptions,
        conservative: bool,
    ) -> Upload {
        // A ray that starts inside goes up as it is: what `Dda::new` would make of it (no
        // crossing done, entered through no face).
        if let Some(voxel) = self
            .bounds
            .contains(r.start)
            .then(|| self.relative(r.start))
            .flatten()
        {
            return Upload::Gpu(gpu_ray_at(r, voxel, AXIS_NONE, [0; 3], false));
        }
        let mut d = Dda::new(r);
        match opts.unloaded {
            // Outside the window nothing is loaded: air. Clip exactly as the CPU reference does.
            UnloadedPolicy::Air => {
                if d.enter_box(&self.bounds) {
                    self.gpu_ray(&d, true)
                        .map_or(Upload::Answered(RaycastOutcome::Miss), Upload::Gpu)
                } else {
                    Upload::Answered(RaycastOutcome::Miss)
                }
            }
            UnloadedPolicy::Stop if opts.origin == OriginPolicy::SkipOriginVoxel => {
                // The origin voxel is skipped; the ray stops at the next voxel unless that is
                // inside the window, where the GPU takes over. Conservative line of sight first
                // tests the voxels beside its first crossing: within a voxel of the start, so
                // outside the loaded chunks (the window has a margin of a chunk), unloaded.
                if conservative && let Some(o) = unloaded_tie_extra(&d, opts) {
                    return Upload::Answered(o);
                }
                if d.dda_step().is_err() {
                    return Upload::Answered(RaycastOutcome::Miss);
                }
                if self.bounds.contains(d.voxel()) {
                    self.gpu_ray(&d, true)
                        .map_or(Upload::Answered(RaycastOutcome::Miss), Upload::Gpu)
                } else {
                    Upload::Answered(RaycastOutcome::Unloaded {
                        at: d.voxel(),
                        distance: d.t,
                    })
                }
            }
            UnloadedPolicy::Stop => Upload::Answered(RaycastOutcome::Unloaded {
                at: r.start,
                distance: 0.0,
            }),
        }
    }

    /// The outcome `h` stands for, for a ray whose uploaded start voxel is `start`
    /// (window-relative): the shader gives the voxel as an 18-bit offset from it.
    pub(super) fn decode(&self, h: &GpuHit, start: [i32; 3]) -> Result<RaycastOutcome, GpuError> {
        let status_word = h.w1 >> 20;
        let status = status_word & 15;
        match status {
            STATUS_MISS => return Ok(RaycastOutcome::Miss),
            STATUS_ZERO_LENGTH => return Ok(RaycastOutcome::Invalid(RayError::ZeroDirection)),
            STATUS_TOO_LONG => return Ok(RaycastOutcome::Invalid(RayError::MaxDistanceTooLarge)),
            _ => {}
        }
        let offset = |w: u32| ((w << 14) as i32) >> 14;
        let voxel = [
            start[0].wrapping_add(offset(h.w0)),
            start[1].wrapping_add(offset(h.w1)),
            start[2].wrapping_add(offset(h.w2)),
        ];
        // The shader ends a ray that steps beyond the i128 world as a miss (`beyond_world`).
        let at = self.absolute(voxel).ok_or_else(|| {
            GpuError::Internal(format!("a result beyond the i128 world ({voxel:?})"))
        })?;
        let distance = f32::from_bits(h.distance);
        match status {
            STATUS_UNLOADED => Ok(RaycastOutcome::Unloaded { at, distance }),
            STATUS_HIT => {
                let axis = (status_word >> 4) & 3;
                let mut face_normal = IVec3::ZERO;
                if axis != AXIS_NONE {
                    face_normal[axis as usize] = if status_word & 64 != 0 { 1 } else { -1 };
                }
                let id = (h.w0 >> 18) | (h.w1 >> 18 & 3) << 14;
                // 23-bit fixed point: within 6e-8 of the shader's UV.
                let v = (h.uv >> 23) | (h.w2 >> 18) << 9;
                let unit = |q: u32| q as f32 / UV_STEPS;
                Ok(RaycastOutcome::Hit(VoxelRaycastHit {
                    voxel_pos: at,
                    face_normal,
                    distance,
                    voxel_type: VoxelId(id as u16),
                    hit_uv: Vec2::new(unit(h.uv & 0x7F_FFFF), unit(v)),
                }))
            }
            s => Err(GpuError::Internal(format!(
                "ray ran past the step limit (status {s})"
            ))),
        }
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

/// UV in the shader's hits: `[0, 1]` in 23-bit fixed point.
const UV_STEPS: f32 = 8_388_607.0;

/// The most chunks a window spans on an axis (exclusive): window-relative voxel coordinates
/// must fit in i32, with room for a run of empty chunks that reaches past the window to the
/// end of its region.
pub(super) const MAX_WINDOW_CHUNKS: u32 = (1 << 26) - (1 << REGION_SHIFT);
