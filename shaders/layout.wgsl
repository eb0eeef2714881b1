// voxcast shader, layout: the constants, structs and bindings that the host and the shader
// both read, and that more than one query kind uses (a kind's own are in its file). Twins of
// those in src/gpu/layout.rs, which checks them through naga: constants, struct sizes and
// bindings.
//
// The shader is one exact DDA per invocation, joined from the stage files of this folder in
// the order SHADER_SOURCE gives (src/gpu/layout.rs says which and why). Each function that
// shapes an answer has a Rust twin (most of the same name), named in its file's header. Keep
// twins in step: same constants, same order of operations, same branch order. The rest handle
// the GPU's own layout (buffers, packing, the window). The DDA definition and the parity contract
// are in the crate docs (src/lib.rs).
//
// Coordinates here are i32 voxels relative to the window's lowest voxel (anchor chunk * 32);
// the host adds the i128 anchor back. Every f32 operation follows the rules at the top of
// shaders/exact.wgsl, so that any conforming GPU gives these bits.

const AXIS_NONE: u32 = 3u;
// f32::MAX: the next crossing of a disabled axis. Finite, because WGSL lets an implementation
// assume that no infinity or NaN occurs.
const T_DISABLED: f32 = 0x1.fffffep+127f;
// Crossings within this factor of each other count as one edge or corner for conservative line
// of sight (1 + 2^-20; NEAR_TIE in src/cpu_ref.rs says why).
const NEAR_TIE: f32 = 0x1.00001p+0f;
const MIN_NORMAL: f32 = 0x1p-126f;

// Chunk table entries: a slot in the chunk pool, or a tag in the top two bits.
const TAG_MASK: u32 = 0xC0000000u;
const TAG_EMPTY: u32 = 0x40000000u;
const TAG_UNLOADED: u32 = 0x80000000u;
const TAG_UNIFORM: u32 = 0xC0000000u;

// Per slot: 32^3 occupancy bits (OCC_WORDS words) in `occupancy`, and in `slots` its record:
// the brick summary (64 bits), where its id record starts in `ids`, and the id record's bits
// per value (1, 2, 4 or 8 through the palette, 16 raw). An id record: one entry per 8^3 brick
// (BRICK_UNIFORM | id for a brick of one id, else where its values start, from the record's
// start), then the palette (two u16 ids a word), then the values (src/gpu/store.rs).
const OCC_WORDS: u32 = 1024u;
const SLOT_WORDS: u32 = 4u;
const RECORD_BRICKS: u32 = 64u;
const BRICK_UNIFORM: u32 = 0x80000000u;
// A hit's id while it is still to be read from its chunk (no id is this large).
const ID_LATER: u32 = 0x10000u;
const BRICK_EDGE: i32 = 8;
// In one word of a 4x4x4 summary (a chunk's bricks, a region's chunks): the bits of the eight
// entries of a 2x2x2 block (shifted by the block's lowest entry's bit), of a layer of entries
// (shifted by 4 * y) and of two layers (by 8 * half).
const BLOCK_BITS: u32 = 0x00330033u;
const LAYER_BITS: u32 = 0x000F000Fu;
const HALF_BITS: u32 = 0x00FF00FFu;

// The batch's options, bits as below. A pipeline-overridable constant, not a uniform: each
// combination of options gets its own pipeline, compiled on first use (src/gpu/device.rs,
// `Device::pipeline`), so that the code of options not in use folds away (faster than
// reading the options from Params: BENCHMARKS.md, "Design choices").
override OPTIONS: u32;
const FLAG_ORIGIN_MASK: u32 = 3u;      // 0 Report, 1 SkipOriginVoxel, 2 ExitSolid
const ORIGIN_REPORT: u32 = 0u;
const ORIGIN_SKIP: u32 = 1u;
const ORIGIN_EXIT_SOLID: u32 = 2u;
const FLAG_STOP_UNLOADED: u32 = 4u;
const FLAG_EVERY_NON_AIR: u32 = 8u;
const FLAG_CONSERVATIVE: u32 = 16u;
const FLAG_PER_VOXEL: u32 = 32u;
const FLAG_STEP_EMPTY_BRICKS: u32 = 64u; // walk_dense steps through empty bricks (GpuWorld::skips_empty_bricks)
const FLAG_TOROIDAL: u32 = 128u;       // the table is addressed toroidally (a window that follows a center)
const FLAG_PARTIAL: u32 = 256u;        // the world may hold chunks outside the window's box: leaving it is unknown
const FLAG_LOOP_BUDGET: u32 = 512u;    // a software rasteriser (llvmpipe) that limits loop iterations: see cast_box
const FLAG_RAYS_AS_GIVEN: u32 = 1024u; // cast_rays: rays may be uploaded as given (RAY_SET_UP_IN_SHADER)
const FLAG_SHAPES: u32 = 2048u;        // the world has shaped ids: a stopping voxel is tested against its boxes (shapes.wgsl)

// Ray.flags (GpuRay.flags bits 0..11)
const RAY_ENABLED_SHIFT: u32 = 0u;     // bits 0..2: axis crosses within max distance
const RAY_NEGATIVE_SHIFT: u32 = 3u;    // bits 3..5: axis steps down
const RAY_ENTRY_SHIFT: u32 = 6u;       // bits 6..7: entry axis of the start state (3 = none)
const RAY_CLIPPED: u32 = 256u;         // the start state is past the origin voxel
const RAY_PLANE_SHIFT: u32 = 9u;       // bits 9..11: the ray lies in a face plane on the axis (PreparedRay::plane_axes)
const RAY_FLAG_BITS: u32 = 0xFFFu;
// GpuRay.counts_hi of a ray uploaded as given (RaySetup::Shader in src/gpu/device.rs): the
// voxel before the start-voxel rule, the offset in b, the direction in inv; made_ray sets it up.
const RAY_SET_UP_IN_SHADER: u32 = 0x80000000u;
// A count of crossings (at most MAX_DISTANCE_CAP + 1) fits in 17 bits: three pack into 51.
const COUNT_BITS: u32 = 0x1FFFFu;

// Hit.status: low 4 bits the outcome, bits 4..5 the face axis (3 = none), bit 6 the normal's sign.
const STATUS_BITS: u32 = 0x7Fu;
const STATUS_MISS: u32 = 0u;
const STATUS_HIT: u32 = 1u;
const STATUS_UNLOADED: u32 = 2u;
const STATUS_RUNAWAY: u32 = 3u;
const STATUS_SHAPED: u32 = 15u;       // internal to cast_ray: the walk stopped at a shaped voxel
const MAX_ITERATIONS: u32 = 1048576u;

// Window chunk c has table entry (c + table_phase) mod dims per axis, window region r (chunks
// (c + region_phase) >> 2) has record (r + region_table_phase) mod region_dims; both phases are
// 0 and no wrap-around is made for a window that does not move (FLAG_TOROIDAL, src/gpu/window.rs).
struct Params {
    dims: vec3<u32>,        // window size in chunks
    region_phase: u32,      // the anchor's position in its region (0..4) per axis: x | y << 2 | z << 4
    table_phase: vec3<u32>, // the anchor's table entry per axis (anchor mod dims)
    world_edge: u32,        // bit a: the window's low face on axis a is the i128 world's edge; bit 3 + a: its high face
    region_dims: vec3<u32>, // the region records' grid
    ray_base: u32,          // first ray (or pixel) of this dispatch
    region_table_phase: vec3<u32>, // the anchor's region's record per axis
    ray_count: u32,         // rays in this dispatch
    cam_position: vec3<i32>, // camera voxel, window-relative
    cam_width: u32,
    cam_sub: vec3<f32>,
    cam_height: u32,
    cam_forward: vec3<f32>,
    cam_scale_x: f32,
    cam_right: vec3<f32>,
    cam_scale_y: f32,
    cam_up: vec3<f32>,
    cam_max_distance: f32,
    cam_inv_w: f32,         // 2 / cam_width and 2 / cam_height, from the host (Camera::pixel_steps)
    cam_inv_h: f32,
    zero: u32,              // 0: the value behind `pin` (shaders/exact.wgsl), unknown when compiling
    details: u32,           // cast_pairs, cast_sensors: 1 to write each answer whole
    sensor_rays: u32,       // cast_sensors: rays of the rig (the dispatch's rays are whole agents)
    cam_row0: u32,          // cast_camera: the image row of the batch's first pixel
}

// One ray as the host uploads it: 48 bytes.
struct GpuRay {
    voxel: vec3<i32>,       // start voxel, window-relative
    flags: u32,             // bits 0..11: Ray.flags; bits 12..31: the low 20 bits of the packed counts
    b: vec3<f32>,
    max_distance: f32,
    inv: vec3<f32>,         // 1 / |d| on an enabled axis, |d| on a disabled one
    counts_hi: u32,         // bits 20..50 of the packed counts (x | y << 17 | z << 34)
}

// One answer as the host reads it back: 20 bytes. The voxel as its offset from the ray's start
// voxel (at most 65538 on an axis: 18 bits), the id, status, distance, and UV in 23-bit fixed
// point: x(18) | id low 14 bits; y(18) | id high 2 | status(7) << 20; z(18) | v high 14;
// distance; u(23) | v low 9 << 23.
struct GpuHit {
    w0: u32,
    w1: u32,
    w2: u32,
    distance: u32,
    uv: u32,
}

// The ray as the DDA reads it.
struct Ray {
    voxel: vec3<i32>,       // start voxel, window-relative
    flags: u32,
    b: vec3<f32>,
    max_distance: f32,
    inv: vec3<f32>,         // 1 / |d| on an enabled axis, |d| on a disabled one (see ray_dir)
    n: vec3<u32>,           // crossings already done (non-zero after clipping)
}

struct Hit {
    voxel: vec3<i32>,
    status: u32,
    distance: f32,
    id: u32,                // ID_LATER: read by finished once the walk has ended
    uv: vec2<f32>,          // set by finished once the walk has ended
    n: vec3<u32>,           // the crossings done on reaching the voxel (finished's input)
}

// The bindings every entry point binds: twins of SHARED_BINDINGS in src/gpu/layout.rs. Each
// query kind declares its own bindings in its file, twins of its `ENTRY` in src/gpu/<kind>.rs
// (a test checks them all against this module).
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> chunk_table: array<u32>;
@group(0) @binding(2) var<storage, read> occupancy: array<u32>;
@group(0) @binding(3) var<storage, read> slots: array<u32>;
@group(0) @binding(4) var<storage, read> ids: array<u32>;
// One bit per voxel id: the ids that stop a ray (MaterialFilter), 128 to an element.
@group(0) @binding(5) var<uniform> filter_bits: array<vec4<u32>, 512>;

// 0, read from a uniform: `pin` (shaders/exact.wgsl) hides values behind it.
fn opaque_zero() -> u32 {
    return params.zero;
}
