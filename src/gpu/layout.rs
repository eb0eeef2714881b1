//! The wire format: what the host and the shader both read and write, twins of
//! `shaders/layout.wgsl` (its constants, structs and bindings) and of the shader's entry
//! points. Its tests (`layout/tests.rs`) read the shader through naga and compare each
//! constant, struct size and binding with its twin here, and with those each query kind lists
//! in its [`Entry`] (a kind's own structs and constants live in its own two files).
//!
//! # The shader's stage files
//! [`SHADER_SOURCE`](crate::gpu::SHADER_SOURCE) joins the files of `shaders/` into one WGSL
//! module in the order `src/gpu.rs` lists them: `layout` (constants, structs, the shared
//! bindings), `exact` (exact f32 arithmetic), `window` (the chunk table, the summaries, a
//! voxel's id), `dda` (the walk and its hits), `ties` (edges and corners), `cast` (`cast_ray`,
//! `cast_segment`), then one file per query kind, each with its entry point and its own
//! bindings, structs and constants: `rays` (`cast_rays`, with the invocation index, hit packing and ray set-up that the
//! others share), `camera`, `agents` (`cast_pairs`), `sensors` and `boxes`. The order has one
//! reason: each file uses only what the files before it declare. WGSL itself accepts
//! declarations in any order, so the rule is for readers, who meet every name before its first
//! use and can read each file on top of the ones before it. naga reports lines of the joined
//! source; the tests name each one's file and line there.

use bytemuck::{Pod, Zeroable};

use crate::ray::{OriginPolicy, RaycastOptions, UnloadedPolicy};

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
    for stage in crate::gpu::SHADER_STAGES {
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
/// The world has shaped ids ([`crate::ShapeTable`]): a stopping voxel is tested against its
/// boxes (`shaders/shapes.wgsl`); without it the shader has no code for shapes.
pub(super) const FLAG_SHAPES: u32 = 2048;

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
    /// `cast_camera`: the image row of the batch's first pixel.
    pub(super) cam_row0: u32,
    pub(super) _pad: [u32; 2],
}

/// How the shader declares a binding: its address space and access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Access {
    /// `var<uniform>`.
    Uniform,
    /// `var<storage, read>`.
    Read,
    /// `var<storage, read_write>`.
    ReadWrite,
}

/// One buffer the shader binds: `@group(0) @binding(number) var<access> name`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct ShaderBinding {
    pub(super) number: u32,
    /// The shader's variable.
    pub(super) name: &'static str,
    pub(super) access: Access,
}

pub(super) const fn bind(number: u32, name: &'static str, access: Access) -> ShaderBinding {
    ShaderBinding {
        number,
        name,
        access,
    }
}

// The bindings every entry point binds, all in group 0 as all bindings are: the dispatch's
// parameters, the world (chunk table with region records, occupancy, slot records, id records)
// and the material filter. Each query kind declares its own bindings in its Rust file (its
// [`Entry`]) and its WGSL file; the test `bindings_match_the_shader` checks every entry
// point's numbers, names and access against the shader, through naga.
pub(super) const PARAMS: ShaderBinding = bind(0, "params", Access::Uniform);
pub(super) const CHUNK_TABLE: ShaderBinding = bind(1, "chunk_table", Access::Read);
pub(super) const OCCUPANCY: ShaderBinding = bind(2, "occupancy", Access::Read);
pub(super) const SLOTS: ShaderBinding = bind(3, "slots", Access::Read);
pub(super) const IDS: ShaderBinding = bind(4, "ids", Access::Read);
pub(super) const FILTER_BITS: ShaderBinding = bind(5, "filter_bits", Access::Uniform);
/// The world's shape table (`shaders/shapes.wgsl`), numbered after every kind's own bindings.
pub(super) const SHAPES: ShaderBinding = bind(16, "shapes", Access::Read);

/// The bindings every entry point binds: the dispatch's parameters, the world and the filter
/// (and [`SHAPES`], numbered after the kinds' own).
pub(super) const SHARED_BINDINGS: [ShaderBinding; 6] =
    [PARAMS, CHUNK_TABLE, OCCUPANCY, SLOTS, IDS, FILTER_BITS];

/// A compute entry point of the shader and its own bindings, besides [`SHARED_BINDINGS`]: the
/// dispatch's input (in the batch's upload or input buffer), a buffer the batch brings besides
/// it (the agents' eyes, the rig), and the output (the batch's output buffer). Each query
/// kind's file declares its own; `ENTRIES` in `src/gpu.rs` lists them all, and the device makes
/// a bind group layout for each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct Entry {
    /// Its name in the shader (`@compute fn <name>`).
    pub(super) name: &'static str,
    pub(super) input: ShaderBinding,
    pub(super) extra: Option<ShaderBinding>,
    pub(super) output: ShaderBinding,
    /// Whether it reads its input: `cast_camera` makes its rays, and binds `cast_rays`'s
    /// bindings only so that the two share one layout.
    pub(super) reads_input: bool,
    /// Whether it reads the world's shapes ([`SHAPES`]); bound either way, so that every
    /// entry point binds the world alike.
    pub(super) reads_shapes: bool,
    /// The wire structs of its own, declared in its kind's Rust and WGSL files.
    pub(super) structs: &'static [WireStruct],
    /// Its own `u32` constants that the host uses too, `(WGSL name, Rust value)`.
    pub(super) constants: &'static [(&'static str, u32)],
    /// Its own constants that only the shader uses.
    pub(super) shader_only: &'static [&'static str],
}

/// A wire struct as the layout tests compare it with the shader's: its WGSL name and the size
/// of its Rust twin, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct WireStruct {
    pub(super) name: &'static str,
    pub(super) size: usize,
}

/// The [`WireStruct`] of Rust twin `T`, named `name` in the shader.
pub(super) const fn wire<T>(name: &'static str) -> WireStruct {
    WireStruct {
        name,
        size: size_of::<T>(),
    }
}

impl Entry {
    /// Every binding its bind group holds, in number order: [`SHARED_BINDINGS`], its own,
    /// then [`SHAPES`].
    pub(super) fn bindings(self) -> impl Iterator<Item = ShaderBinding> {
        SHARED_BINDINGS
            .into_iter()
            .chain([self.input])
            .chain(self.extra)
            .chain([self.output])
            .chain([SHAPES])
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
