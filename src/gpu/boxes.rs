//! Box casts on the GPU: each cast prepared on the host as the CPU prepares it (`BoxCast`'s
//! per-axis state, window-relative, 80 bytes), walked by `cast_box` in `shaders/boxes.wgsl` (the
//! twin of `walk` in `src/boxcast.rs`), its answer read back as a ray's (20 bytes). Casts the
//! shader cannot place (too far from the window for its i32 voxels) are answered on the host.

use bytemuck::{Pod, Zeroable};
use rayon::prelude::*;

use crate::boxcast::{BoxCast, BoxCastOutcome, BoxHit, Prepared};
use crate::coords::WorldPos;
use crate::gpu::decode::decode;
use crate::gpu::error::GpuError;
use crate::gpu::flight::Upload;
use crate::gpu::layout::{
    Access, Entry, FLAG_LOOP_BUDGET, GpuHit, GpuRay, STATUS_RUNAWAY, bind, option_flags, wire,
};
use crate::gpu::pending::{Collect, Launch, Leg, PendingBatch};
use crate::gpu::query::{Query, sealed::Sealed};
use crate::gpu::window::Window;
use crate::ray::{RaycastOptions, RaycastOutcome, UnloadedPolicy, flush_denormal};

/// `cast_boxes`: box casts prepared on the host in (`shaders/boxes.wgsl`), answers out.
pub(super) const ENTRY: Entry = Entry {
    name: "cast_boxes",
    input: bind(14, "boxes", Access::Read),
    extra: None,
    output: bind(15, "box_hits", Access::ReadWrite),
    reads_input: true,
    reads_shapes: true,
    structs: &[wire::<GpuBox>("GpuBox")],
    constants: &[
        ("BOX_MOVING_SHIFT", BOX_MOVING_SHIFT),
        ("BOX_NEGATIVE_SHIFT", BOX_NEGATIVE_SHIFT),
        ("BOX_LEAD_ON_SHIFT", BOX_LEAD_ON_SHIFT),
        ("BOX_TRAIL_ON_SHIFT", BOX_TRAIL_ON_SHIFT),
        ("BOX_ON_PLANE_SHIFT", BOX_ON_PLANE_SHIFT),
        ("BOX_RANKS_SHIFT", BOX_RANKS_SHIFT),
        ("BOX_FLAT_SHIFT", BOX_FLAT_SHIFT),
    ],
    shader_only: &[
        "BOX_LOOP_BUDGET",
        "TOUCH_NEVER",
        "TOUCH_INSIDE",
        "TOUCH_AT",
        "TOUCH_PAST",
    ],
};

/// One box cast as the shader reads it (`GpuBox` in `shaders/boxes.wgsl`): 80 bytes, the voxels
/// window-relative. Per axis, on a moving axis `lead` and `trail` are the start voxels of the
/// leading and trailing face, on a still axis the box's highest and lowest voxel (and `lead_b`,
/// `trail_b` where its high and low face lie in them).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(super) struct GpuBox {
    pub(super) lead: [i32; 3],
    pub(super) flags: u32,
    pub(super) trail: [i32; 3],
    pub(super) max_distance: f32,
    pub(super) lead_b: [f32; 3],
    pub(super) _pad0: u32,
    pub(super) trail_b: [f32; 3],
    pub(super) _pad1: u32,
    pub(super) inv: [f32; 3],
    pub(super) _pad2: u32,
}

// A box cast's flags (`GpuBox::flags`): three bits per field, bit `a` for axis `a`.
pub(super) const BOX_MOVING_SHIFT: u32 = 0;
pub(super) const BOX_NEGATIVE_SHIFT: u32 = 3;
pub(super) const BOX_LEAD_ON_SHIFT: u32 = 6;
pub(super) const BOX_TRAIL_ON_SHIFT: u32 = 9;
pub(super) const BOX_ON_PLANE_SHIFT: u32 = 12;
/// Each axis's rank for edges and corners (rule 6), two bits each.
pub(super) const BOX_RANKS_SHIFT: u32 = 15;
/// The box is flat (half extent 0) on the axis.
pub(super) const BOX_FLAT_SHIFT: u32 = 21;

/// How far outside its window a box may start and still be cast by the shader, in voxels: its
/// window-relative voxels, plus the max distance, stay far inside i32.
const REACH: i128 = 1 << 29;

/// `p` on the shader's terms: the cast's per-axis state relative to the window's lowest voxel,
/// or `None` when a voxel of it lies more than [`REACH`] outside the window, or it leaves the
/// bottom of the i128 world at once where the window's low face is not that edge.
fn gpu_box(p: &Prepared, w: &Window) -> Option<GpuBox> {
    let lowest = w.absolute([0; 3])?;
    let rel = |v: i128, a: usize| -> Option<i32> {
        let r = v.checked_sub(lowest.axis(a))?;
        (-REACH..REACH).contains(&r).then_some(r as i32)
    };
    let ranks = p.ranks();
    let mut b = GpuBox {
        // No value the shader reads may be subnormal; crossings are 0 or at least 2^-64, so
        // a subnormal max distance and 0 end the same casts.
        max_distance: flush_denormal(p.max_distance),
        ..GpuBox::default()
    };
    for (a, ax) in p.axes.iter().enumerate() {
        let bit = |on: bool, shift: u32| u32::from(on) << (shift + a as u32);
        b.flags |= bit(ax.moving, BOX_MOVING_SHIFT)
            | bit(ax.step < 0, BOX_NEGATIVE_SHIFT)
            | bit(ax.lead_on, BOX_LEAD_ON_SHIFT)
            | bit(ax.trail_on, BOX_TRAIL_ON_SHIFT)
            | bit(ax.on_plane, BOX_ON_PLANE_SHIFT)
            | bit(ax.flat, BOX_FLAT_SHIFT)
            | u32::from(ranks[a]) << (BOX_RANKS_SHIFT + 2 * a as u32);
        let (lead, trail) = if ax.moving {
            (ax.lead0, ax.trail0)
        } else {
            (ax.start_hi, ax.start_lo)
        };
        b.lead[a] = rel(lead, a)?;
        b.trail[a] = rel(trail, a)?;
        if ax.exits {
            // The layer below the i128 world, which only the window can name, and only where
            // its low face is the world's edge (the shader then ends the cast there): elsewhere
            // the host answers.
            if w.world_edge() >> a & 1 == 0 {
                return None;
            }
            b.lead[a] -= 1;
        }
        // On a still axis, where the faces lie in their voxels (shaped voxels' boxes are
        // tested against them).
        (b.lead_b[a], b.trail_b[a]) = if ax.moving {
            (ax.lead_b, ax.trail_b)
        } else {
            (ax.face_hi, ax.face_lo)
        };
        b.inv[a] = ax.inv;
    }
    Some(b)
}

/// The answer for a cast the shader cannot place: one too far from the window, or at the bottom
/// of the i128 world leaving it where the window does not reach that edge. Nothing the window
/// holds is near its start, so under `Air` nothing stops it (it cannot reach the window within
/// its max distance, or leaves the world at once), and under `Stop` (or on a window that
/// follows a center, which does not know what is there) it starts touching unloaded voxels,
/// the lowest of which is reported.
fn far_answer(p: &Prepared, w: &Window, opts: &RaycastOptions) -> BoxCastOutcome {
    if opts.unloaded == UnloadedPolicy::Air && !w.partial() {
        return BoxCastOutcome::Miss;
    }
    // The start's voxels (never none: see `Axis::new`) from their lowest corner.
    let lowest = |a: usize| p.axes[a].start_lo;
    BoxCastOutcome::Unloaded {
        voxel_pos: WorldPos::new(lowest(0), lowest(1), lowest(2)),
        distance: 0.0,
    }
}

/// Boxes to cast on the GPU, the twin of [`box_cast_batch`](crate::box_cast_batch): each
/// box's outcome (see [`box_cast`](crate::box_cast) and the box cast rules in the crate docs)
/// in input order, exactly as the CPU gives it on the world uploaded: the same outcome, voxel,
/// face and id, and the same distance bit for bit. A bad cast gets
/// [`BoxCastOutcome::Invalid`] and the others are still answered. On a window that follows a
/// center, a box that touches a voxel outside the box of chunks the window holds is answered
/// `Unloaded` there, under either unloaded policy (as rays that leave it are). 80 bytes go up
/// a cast and 20 come down; casts the shader cannot place (too far from the window for its
/// i32 voxels) are answered on the host.
#[derive(Clone, Copy, Debug)]
pub struct BoxCasts<'a>(pub &'a [BoxCast]);

impl Sealed for BoxCasts<'_> {}

impl Query for BoxCasts<'_> {
    type Answers = Vec<BoxCastOutcome>;
    type Options = RaycastOptions;

    fn start(
        self,
        launch: Launch<'_>,
        opts: &RaycastOptions,
        reuse: Vec<BoxCastOutcome>,
    ) -> Result<PendingBatch<Vec<BoxCastOutcome>>, GpuError> {
        let (leg, uploaded) = box_leg(&launch, self.0, opts, reuse)?;
        Ok(launch.pending(leg, uploaded))
    }
}

/// Box casts prepared on the host.
#[derive(Debug)]
pub(super) struct BoxUpload(Vec<GpuBox>);

impl Upload for BoxUpload {
    const ENTRY: Entry = self::ENTRY;

    fn count(&self) -> u64 {
        self.0.len() as u64
    }

    fn bytes(&self, n: u64) -> (u64, u64) {
        (
            n * size_of::<GpuBox>() as u64,
            n * size_of::<GpuHit>() as u64,
        )
    }

    fn input(&self, base: u64, count: u64) -> &[u8] {
        bytemuck::cast_slice(&self.0[base as usize..(base + count) as usize])
    }
}

/// The answers of a box batch: `out` in the caller's order (the host's answers already in),
/// `gpu[j]` the caller's index of upload `j`.
#[derive(Debug)]
pub(super) struct BoxAnswers {
    out: Vec<BoxCastOutcome>,
    gpu: Vec<u32>,
    window: Window,
}

impl Collect<BoxUpload> for BoxAnswers {
    type Output = Vec<BoxCastOutcome>;

    fn collect(
        &mut self,
        items: &BoxUpload,
        base: u64,
        count: u64,
        bytes: &[u8],
    ) -> Result<(), GpuError> {
        let boxes = &items.0;
        let hits: &[GpuHit] = bytemuck::cast_slice(bytes);
        let range = base as usize..(base + count) as usize;
        // Each answer's voxels are relative to its cast's `lead`.
        for ((h, &i), b) in hits.iter().zip(&self.gpu[range.clone()]).zip(&boxes[range]) {
            let lead = b.lead;
            if (h.w1 >> 20) & 15 == STATUS_RUNAWAY {
                return Err(GpuError::BoxCastTooLong);
            }
            self.out[i as usize] = match decode(&self.window, h, lead)? {
                RaycastOutcome::Miss => BoxCastOutcome::Miss,
                RaycastOutcome::Unloaded {
                    voxel_pos: at,
                    distance,
                } => BoxCastOutcome::Unloaded {
                    voxel_pos: at,
                    distance,
                },
                // A hit without a face: a voxel the box touches at its start.
                RaycastOutcome::Hit(hit) if hit.face_normal == glam::IVec3::ZERO => {
                    BoxCastOutcome::StartsInside {
                        voxel_pos: hit.voxel_pos,
                        voxel_type: hit.voxel_type,
                    }
                }
                RaycastOutcome::Hit(hit) => BoxCastOutcome::Hit(BoxHit {
                    voxel_pos: hit.voxel_pos,
                    face_normal: hit.face_normal,
                    distance: hit.distance,
                    voxel_type: hit.voxel_type,
                }),
                RaycastOutcome::Invalid(e) => {
                    return Err(GpuError::Internal(format!("a box cast answered {e}")));
                }
            };
        }
        Ok(())
    }

    fn finish(self) -> Vec<BoxCastOutcome> {
        self.out
    }
}

/// The leg of a box batch on the launch's world (no flight when the host answered every
/// cast), about a dispatch's worth of rays' bytes a dispatch, its answers filling `out`
/// (cleared first, its allocation kept); also how many casts went to the GPU.
fn box_leg(
    launch: &Launch<'_>,
    casts: &[BoxCast],
    opts: &RaycastOptions,
    mut out: Vec<BoxCastOutcome>,
) -> Result<(Leg<BoxUpload, BoxAnswers>, u64), GpuError> {
    let (batches, world) = (launch.batches, launch.world);
    let w = world.window;
    let prepared: Vec<Result<GpuBox, BoxCastOutcome>> = casts
        .par_iter()
        .with_min_len(1024)
        .map(|c| match c.prepare() {
            Err(e) => Err(BoxCastOutcome::Invalid(e)),
            Ok(p) if p.misses => Err(BoxCastOutcome::Miss),
            Ok(p) => gpu_box(&p, &w).ok_or_else(|| far_answer(&p, &w, opts)),
        })
        .collect();
    out.clear();
    out.try_reserve(casts.len())
        .map_err(|_| GpuError::OutputTooLarge(casts.len() as u64))?;
    let (mut boxes, mut gpu) = (Vec::new(), Vec::new());
    for (i, p) in prepared.into_iter().enumerate() {
        match p {
            Ok(b) => {
                out.push(BoxCastOutcome::Miss);
                boxes.push(b);
                gpu.push(i as u32);
            }
            Err(answer) => out.push(answer),
        }
    }
    let uploaded = boxes.len() as u64;
    let answers = BoxAnswers {
        out,
        gpu,
        window: w,
    };
    if boxes.is_empty() {
        return Ok((Leg::new(None, answers), 0));
    }
    // The batch buffers are sized in rays: as many bytes a dispatch of boxes.
    let per = (u64::from(launch.per_dispatch) * size_of::<GpuRay>() as u64
        / size_of::<GpuBox>() as u64)
        .max(1) as u32;
    let budget = if batches.device.loop_budget {
        FLAG_LOOP_BUDGET
    } else {
        0
    };
    let binding = launch.binding(
        ENTRY,
        option_flags(opts, false) | budget,
        world.params(),
        opts,
    )?;
    let flight = launch.flight_of(binding, BoxUpload(boxes), per)?;
    Ok((Leg::new(Some(flight), answers), uploaded))
}
