//! The wire format: what the host and the shader both read and write, twins of
//! `shaders/layout.wgsl` (its constants, structs and bindings) and of the shader's entry
//! points. Its tests (`layout/tests.rs`) read the shader through naga and compare each
//! constant, struct size and binding with its twin here.
//!
//! # The shader's stage files
//! [`SHADER_SOURCE`] joins the files of `shaders/` into one WGSL module in this order: `layout`
//! (constants, structs, bindings), `exact` (exact f32 arithmetic), `window` (the chunk table,
//! the summaries, a voxel's id), `dda` (the walk and its hits), `ties` (edges and corners),
//! `cast` (`cast_ray`, `cast_segment`), then one file per entry point: `rays` (`cast_rays`,
//! with the invocation index, hit packing and ray set-up that the others share), `camera`,
//! `agents` (`cast_pairs`), `sensors` and `boxes`. The order has one reason: each file uses
//! only what the files before it declare. WGSL itself accepts declarations in any order, so
//! the rule is for readers, who meet every name before its first use and can read each file
//! on top of the ones before it. naga reports lines of the joined source; the tests name each
//! one's file and line there.

use bytemuck::{Pod, Zeroable};

use crate::ray::{OriginPolicy, RaycastOptions, UnloadedPolicy};

/// The WGSL source of the compute shader: the stage files of `shaders/` joined into one module,
/// in the order that `src/gpu/layout.rs` gives with its reason.
pub const SHADER_SOURCE: &str = concat!(
    include_str!("../../shaders/layout.wgsl"),
    include_str!("../../shaders/exact.wgsl"),
    include_str!("../../shaders/window.wgsl"),
    include_str!("../../shaders/dda.wgsl"),
    include_str!("../../shaders/ties.wgsl"),
    include_str!("../../shaders/cast.wgsl"),
    include_str!("../../shaders/rays.wgsl"),
    include_str!("../../shaders/camera.wgsl"),
    include_str!("../../shaders/agents.wgsl"),
    include_str!("../../shaders/sensors.wgsl"),
    include_str!("../../shaders/boxes.wgsl"),
);

/// The stage files of [`SHADER_SOURCE`], in its order (`shaders/<stage>.wgsl`).
#[cfg(test)]
const SHADER_STAGES: [&str; 11] = [
    "layout", "exact", "window", "dda", "ties", "cast", "rays", "camera", "agents", "sensors",
    "boxes",
];

/// The path and text of stage file `stage`, read from the crate's sources.
#[cfg(test)]
fn stage_file(stage: &str) -> (String, String) {
    let path = format!("shaders/{stage}.wgsl");
    let full = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{path}: {e}"));
    (path, text)
}

/// Where line `line` (counted from 1) of [`SHADER_SOURCE`] lies, as `shaders/<stage>.wgsl:<line
/// there>`; the line itself where it lies past the end.
#[cfg(test)]
pub(crate) fn shader_place(line: u32) -> String {
    let mut before = 0;
    for stage in SHADER_STAGES {
        let (path, text) = stage_file(stage);
        let lines = text.lines().count() as u32;
        if line <= before + lines {
            return format!("{path}:{}", line - before);
        }
        before += lines;
    }
    format!("line {line} of SHADER_SOURCE")
}

/// Invocations per workgroup (`@workgroup_size` of every entry point).
pub(super) const WORKGROUP_SIZE: u32 = 64;
/// Default for the most rays in one dispatch (and so the size the batch buffers grow to); see
/// [`GpuRaycaster::set_max_dispatch_rays`](crate::gpu::GpuRaycaster::set_max_dispatch_rays).
pub const MAX_DISPATCH_RAYS: u32 = 1 << 19;

// Chunk table entries: a slot in the chunk pool, or a tag in the top two bits.
pub(super) const TAG_MASK: u32 = 0xC000_0000;
pub(super) const TAG_EMPTY: u32 = 0x4000_0000;
pub(super) const TAG_UNLOADED: u32 = 0x8000_0000;
pub(super) const TAG_UNIFORM: u32 = 0xC000_0000;
/// Words of a stored chunk's slot record: its brick summary (two words), where its id record
/// starts in the id heap, and the id record's bits per value.
pub(super) const SLOT_WORDS: usize = 4;
/// An id record's first words: one entry per `8³` brick of the chunk.
pub(super) const RECORD_BRICKS: usize = 64;
/// In a brick's entry of an id record: the brick is this one id throughout (the low 16 bits),
/// with no values stored.
pub(super) const BRICK_UNIFORM: u32 = 0x8000_0000;

// The shader's OPTIONS bits (see `option_flags`).
const ORIGIN_REPORT: u32 = 0;
const ORIGIN_SKIP: u32 = 1;
const ORIGIN_EXIT_SOLID: u32 = 2;
const FLAG_STOP_UNLOADED: u32 = 4;
const FLAG_EVERY_NON_AIR: u32 = 8;
const FLAG_CONSERVATIVE: u32 = 16;
const FLAG_PER_VOXEL: u32 = 32;
/// The walk steps through empty bricks instead of skipping them (see
/// `GpuWorld::skips_empty_bricks`).
pub(super) const FLAG_STEP_EMPTY_BRICKS: u32 = 64;
/// The chunk table is addressed toroidally (a window that follows a center).
pub(super) const FLAG_TOROIDAL: u32 = 128;
/// The world may hold chunks outside the window's box (a window that follows a center): a
/// ray that leaves the box ends as unloaded there.
pub(super) const FLAG_PARTIAL: u32 = 256;
/// The device is a software rasteriser whose loops a shader may run a limited number of times
/// in all (llvmpipe): box casts that would need more end as `STATUS_RUNAWAY`.
pub(super) const FLAG_LOOP_BUDGET: u32 = 512;
/// The batch's rays may be uploaded as given ([`RAY_SET_UP_IN_SHADER`], `RaySetup::Shader`):
/// without it `cast_rays` has no code for them.
pub(super) const FLAG_RAYS_AS_GIVEN: u32 = 1024;

// A ray's flags (`GpuRay::flags`).
pub(super) const RAY_NEGATIVE_SHIFT: u32 = 3;
pub(super) const RAY_ENTRY_SHIFT: u32 = 6;
pub(super) const RAY_CLIPPED: u32 = 256;
pub(super) const RAY_PLANE_SHIFT: u32 = 9;
/// `GpuRay::counts_hi` of a ray uploaded as given (`RaySetup::Shader`): its voxel before the
/// start-voxel rule, its offset in `b`, its direction in `inv`, its flags 0; the shader sets
/// it up as `VoxelRay::prepare` would. No packed count reaches this bit (51 bits in all).
pub(super) const RAY_SET_UP_IN_SHADER: u32 = 1 << 31;
/// Where the packed crossing counts start in `GpuRay::flags`.
pub(super) const RAY_COUNTS_SHIFT: u32 = 12;
/// The largest crossing count a ray can reach: one past [`crate::ray::MAX_DISTANCE_CAP`], in
/// the shader's 17 bits per axis.
pub(super) const COUNT_MAX: u32 = (1 << 17) - 1;

// An answer's status (`GpuHit::w1 >> 20`, low four bits).
pub(super) const STATUS_MISS: u32 = 0;
pub(super) const STATUS_HIT: u32 = 1;
pub(super) const STATUS_UNLOADED: u32 = 2;
/// The walk ran past its step limit (or a box cast past its loop budget).
pub(super) const STATUS_RUNAWAY: u32 = 3;
/// A pair's eyes are too close for a segment (`cast_pairs`).
pub(super) const STATUS_ZERO_LENGTH: u32 = 4;
/// A pair's eyes are farther apart than [`crate::ray::MAX_DISTANCE_CAP`].
pub(super) const STATUS_TOO_LONG: u32 = 5;

/// One ray as the shader reads it (`GpuRay` in `shaders/layout.wgsl`): 48 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(super) struct GpuRay {
    /// Start voxel, window-relative.
    pub(super) voxel: [i32; 3],
    /// Bits 0..11 the ray's flags (`RAY_*`), bits 12..31 the low 20 bits of the packed counts.
    pub(super) flags: u32,
    pub(super) b: [f32; 3],
    pub(super) max_distance: f32,
    /// `1 / |d|` on an enabled axis, `|d|` on a disabled one.
    pub(super) inv: [f32; 3],
    /// Bits 20..50 of the packed crossing counts (`x | y << 17 | z << 34`).
    pub(super) counts_hi: u32,
}

/// One answer as the shader writes it (`GpuHit` in `shaders/layout.wgsl`): 20 bytes, the voxel
/// relative to the ray's start voxel (decoded by `decode::decode_window`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(super) struct GpuHit {
    pub(super) w0: u32,
    pub(super) w1: u32,
    pub(super) w2: u32,
    pub(super) distance: u32,
    pub(super) uv: u32,
}

/// One agent's eye as the shader reads it (`GpuAgent` in `shaders/layout.wgsl`): 32 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(super) struct GpuAgent {
    pub(super) voxel: [i32; 3],
    pub(super) usable: u32,
    pub(super) sub: [f32; 3],
    pub(super) _pad: u32,
}

/// Per-dispatch parameters (`Params` in `shaders/layout.wgsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(super) struct GpuParams {
    pub(super) dims: [u32; 3],
    pub(super) region_phase: u32,
    pub(super) table_phase: [u32; 3],
    pub(super) world_edge: u32,
    pub(super) region_dims: [u32; 3],
    pub(super) ray_base: u32,
    pub(super) region_table_phase: [u32; 3],
    pub(super) ray_count: u32,
    pub(super) cam_position: [i32; 3],
    pub(super) cam_width: u32,
    pub(super) cam_sub: [f32; 3],
    pub(super) cam_height: u32,
    pub(super) cam_forward: [f32; 3],
    pub(super) cam_scale_x: f32,
    pub(super) cam_right: [f32; 3],
    pub(super) cam_scale_y: f32,
    pub(super) cam_up: [f32; 3],
    pub(super) cam_max_distance: f32,
    pub(super) cam_inv_w: f32,
    pub(super) cam_inv_h: f32,
    /// Always 0: the shader's `pin` hides values behind it (see `shaders/exact.wgsl`).
    pub(super) zero: u32,
    /// `cast_pairs`, `cast_sensors`: 1 to write each answer whole.
    pub(super) details: u32,
    /// `cast_sensors`: rays of the rig.
    pub(super) sensor_rays: u32,
    pub(super) _pad: [u32; 3],
}

/// One agent's sensor pose as the shader reads it (`GpuPose` in `shaders/layout.wgsl`): 32
/// bytes, the voxel window-relative, the rotation packed (`src/sensors.rs`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(super) struct GpuPose {
    pub(super) voxel: [i32; 3],
    pub(super) rotation_lo: u32,
    pub(super) sub: [f32; 3],
    pub(super) rotation_hi: u32,
}

/// One box cast as the shader reads it (`GpuBox` in `shaders/layout.wgsl`): 80 bytes, the voxels
/// window-relative. Per axis, on a moving axis `lead` and `trail` are the start voxels of the
/// leading and trailing face, on a still axis the box's highest and lowest voxel.
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

/// How the shader declares a binding: its address space and access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Access {
    /// `var<uniform>`.
    Uniform,
    /// `var<storage, read>`.
    Read,
    /// `var<storage, read_write>`.
    ReadWrite,
}

/// One buffer the shader binds: `@group(0) @binding(number) var<access> name`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ShaderBinding {
    pub(super) number: u32,
    /// The shader's variable.
    pub(super) name: &'static str,
    pub(super) access: Access,
}

const fn bind(number: u32, name: &'static str, access: Access) -> ShaderBinding {
    ShaderBinding {
        number,
        name,
        access,
    }
}

// The shader's bindings, all in group 0: each written once here, listed in `BINDINGS`, and
// bound per entry point by `Entry::bindings`. The test `bindings_match_the_shader` checks each
// number, name and access, and which entry point uses which, against `shaders/layout.wgsl`.
// First the dispatch's parameters, the world (chunk table with region records, occupancy,
// slot records, id records) and the material filter, which every entry point binds.
pub(super) const PARAMS: ShaderBinding = bind(0, "params", Access::Uniform);
pub(super) const CHUNK_TABLE: ShaderBinding = bind(1, "chunk_table", Access::Read);
pub(super) const OCCUPANCY: ShaderBinding = bind(2, "occupancy", Access::Read);
pub(super) const SLOTS: ShaderBinding = bind(3, "slots", Access::Read);
pub(super) const IDS: ShaderBinding = bind(4, "ids", Access::Read);
pub(super) const FILTER_BITS: ShaderBinding = bind(5, "filter_bits", Access::Uniform);
// `cast_rays` (and `cast_camera`): rays in, answers out.
pub(super) const RAYS: ShaderBinding = bind(6, "rays", Access::Read);
pub(super) const HITS: ShaderBinding = bind(7, "hits", Access::ReadWrite);
// `cast_pairs`: pairs of agent indices, the agents' eyes, and the pairs' bits and answers.
pub(super) const PAIRS: ShaderBinding = bind(8, "pairs", Access::Read);
pub(super) const AGENTS: ShaderBinding = bind(9, "agents", Access::Read);
pub(super) const PAIR_OUT: ShaderBinding = bind(10, "pair_out", Access::ReadWrite);
// `cast_sensors`: the agents' poses, the rig, and the rays' words or answers.
pub(super) const POSES: ShaderBinding = bind(11, "poses", Access::Read);
pub(super) const RIG: ShaderBinding = bind(12, "rig", Access::Read);
pub(super) const SENSED: ShaderBinding = bind(13, "sensed", Access::ReadWrite);
// `cast_boxes`: box casts in, answers out.
pub(super) const BOXES: ShaderBinding = bind(14, "boxes", Access::Read);
pub(super) const BOX_HITS: ShaderBinding = bind(15, "box_hits", Access::ReadWrite);

/// Every binding of the shader, in number order.
pub(super) const BINDINGS: [ShaderBinding; 16] = [
    PARAMS,
    CHUNK_TABLE,
    OCCUPANCY,
    SLOTS,
    IDS,
    FILTER_BITS,
    RAYS,
    HITS,
    PAIRS,
    AGENTS,
    PAIR_OUT,
    POSES,
    RIG,
    SENSED,
    BOXES,
    BOX_HITS,
];

/// The bindings every entry point binds: the dispatch's parameters, the world and the filter.
pub(super) const SHARED_BINDINGS: [ShaderBinding; 6] =
    [PARAMS, CHUNK_TABLE, OCCUPANCY, SLOTS, IDS, FILTER_BITS];

/// An entry point's own bindings, besides [`SHARED_BINDINGS`]: the dispatch's input (in the
/// batch's upload or input buffer), a buffer the batch brings besides it (the agents' eyes,
/// the rig), and the output (the batch's output buffer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct OwnBindings {
    pub(super) input: ShaderBinding,
    pub(super) extra: Option<ShaderBinding>,
    pub(super) output: ShaderBinding,
}

/// A compute entry point of the shader.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Entry {
    /// `cast_rays`: rays prepared on the host.
    Rays,
    /// `cast_camera`: a camera's pixels, rays made in the shader.
    Camera,
    /// `cast_pairs`: line of sight between pairs of agents.
    Pairs,
    /// `cast_sensors`: the rays of a sensor rig from agents' poses.
    Sensors,
    /// `cast_boxes`: box casts prepared on the host.
    Boxes,
}

impl Entry {
    /// Every entry point.
    pub(super) const ALL: [Entry; 5] = [
        Entry::Rays,
        Entry::Camera,
        Entry::Pairs,
        Entry::Sensors,
        Entry::Boxes,
    ];

    /// Its name in the shader.
    pub(super) fn name(self) -> &'static str {
        match self {
            Entry::Rays => "cast_rays",
            Entry::Camera => "cast_camera",
            Entry::Pairs => "cast_pairs",
            Entry::Sensors => "cast_sensors",
            Entry::Boxes => "cast_boxes",
        }
    }

    /// Its own bindings. `cast_camera` makes its rays and reads no input, but it binds
    /// `cast_rays`'s bindings so that the two share one layout: its input is bound, unread.
    pub(super) fn own_bindings(self) -> OwnBindings {
        let (input, extra, output) = match self {
            Entry::Rays | Entry::Camera => (RAYS, None, HITS),
            Entry::Pairs => (PAIRS, Some(AGENTS), PAIR_OUT),
            Entry::Sensors => (POSES, Some(RIG), SENSED),
            Entry::Boxes => (BOXES, None, BOX_HITS),
        };
        OwnBindings {
            input,
            extra,
            output,
        }
    }

    /// Every binding its bind group holds, in number order: [`SHARED_BINDINGS`], then its own.
    pub(super) fn bindings(self) -> impl Iterator<Item = ShaderBinding> {
        let own = self.own_bindings();
        SHARED_BINDINGS
            .into_iter()
            .chain([own.input])
            .chain(own.extra)
            .chain([own.output])
    }
}

/// The shader's `OPTIONS` for `opts` (and conservative line of sight): the `FLAG_*` bits of
/// `shaders/layout.wgsl` that the options decide (the world adds its own: `FLAG_TOROIDAL` and
/// `FLAG_STEP_EMPTY_BRICKS`).
pub(super) fn option_flags(opts: &RaycastOptions, conservative: bool) -> u32 {
    let mut flags = match opts.origin {
        OriginPolicy::Report => ORIGIN_REPORT,
        OriginPolicy::SkipOriginVoxel => ORIGIN_SKIP,
        OriginPolicy::ExitSolid => ORIGIN_EXIT_SOLID,
    };
    if opts.unloaded == UnloadedPolicy::Stop {
        flags |= FLAG_STOP_UNLOADED;
    }
    if opts.blocks.is_every_non_air() {
        flags |= FLAG_EVERY_NON_AIR;
    }
    if conservative {
        flags |= FLAG_CONSERVATIVE;
    }
    if opts.per_voxel {
        flags |= FLAG_PER_VOXEL;
    }
    flags
}

#[cfg(test)]
mod tests;
