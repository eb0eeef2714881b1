// voxcast: one exact DDA per invocation.
//
// This file is the twin of the CPU reference. Its functions and their Rust twins:
//   crossing_t, next_axis, tie_scaled, cast_ray      src/cpu_ref.rs (same names)
//   refresh_axis, dda_step, skip_box, walk_dense,    src/cpu_ref/dda.rs (Dda's methods;
//     hit (Dda::hit), face_uv                          crossings_before, src/cpu_ref.rs, is
//                                                      written out inside skip_box)
//   tied_axes, tie_ranks, tie_extra,                 src/cpu_ref/ties.rs
//     check_tie_extras
//   cast_segment, on_high_faces, nearer              src/cpu_ref/queries.rs
//   empty_block, empty_box                           src/world/summary.rs
//   region_run                                       RegionCache::run in src/cpu_ref.rs
//   camera_dir                                       Camera::pixel_dir in src/camera.rs
//   made_ray, prepare_axis                           VoxelRay::new, VoxelRay::prepare (src/ray.rs)
//   segment                                          segment in src/ray.rs
//   cast_box                                         walk in src/boxcast.rs
// The rest handle the GPU's own layout (buffers, packing, the window). Keep twins in step:
// same constants (checked by `shader_constants_equal_their_rust_twins` in src/gpu/layout.rs), same
// order of operations, same branch order. The DDA definition and the parity contract are in
// the crate docs (src/lib.rs).
//
// Coordinates here are i32 voxels relative to the window's lowest voxel (anchor chunk * 32);
// the host adds the i128 anchor back. Every f32 operation follows the rules at the top of
// shaders/exact.wgsl (joined after this file), so that any conforming GPU gives these bits.
//
// Sections, each headed by a "// ====" line naming its twins' files: the layout (constants,
// structs, bindings; src/gpu/layout.rs), the walk, edges and corners, the window, casting, and the
// entry points (rays, cameras, agent pairs).

// ==== Layout: constants, structs and bindings, twins of those in src/gpu/layout.rs

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
const FLAG_TOROIDAL: u32 = 128u;       // the table is addressed toroidally (a window that follows a centre)
const FLAG_PARTIAL: u32 = 256u;        // the world may hold chunks outside the window's box: leaving it is unknown
const FLAG_LOOP_BUDGET: u32 = 512u;    // a software rasteriser (llvmpipe) that limits loop iterations: see cast_box
const FLAG_RAYS_AS_GIVEN: u32 = 1024u; // cast_rays: rays may be uploaded as given (RAY_SET_UP_IN_SHADER)

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

// One agent's eye as the host uploads it (Agent::eye, window-relative): 32 bytes. The host
// answers the pairs of an agent that is not usable (an invalid eye, or one the window does
// not hold with a voxel to spare below it), so those never reach the shader.
struct GpuAgent {
    voxel: vec3<i32>,
    usable: u32,
    sub: vec3<f32>,
    _pad: u32,
}

// One agent's sensor pose as the host uploads it (SensorPose, window-relative): 32 bytes. The
// voxel and offset as VoxelRay::new normalises them, and the rotation packed in 62 bits
// (src/sensors.rs, pack_rotation): rotation_lo bits 0..2 the largest component's index, then
// the other three as 20-bit two's complement multiples of 2^-19, continued in rotation_hi. The
// host answers agents whose pose is bad or outside the window, so those never reach the shader.
struct GpuPose {
    voxel: vec3<i32>,
    rotation_lo: u32,
    sub: vec3<f32>,
    rotation_hi: u32,
}

// One box cast as the host uploads it (BoxCast prepared, window-relative; GpuBox in
// src/gpu/layout.rs): 80 bytes. Per axis: on a moving axis `lead` and `trail` are the start
// voxels of the leading and the trailing face, `lead_b` and `trail_b` their first crossings and
// `inv` 1 / |d|; on a still axis `lead` and `trail` are the box's highest and lowest voxel.
struct GpuBox {
    lead: vec3<i32>,
    flags: u32,             // BOX_* bits, three per field (bit a for axis a), then the ranks
    trail: vec3<i32>,
    max_distance: f32,
    lead_b: vec3<f32>,
    _pad0: u32,
    trail_b: vec3<f32>,
    _pad1: u32,
    inv: vec3<f32>,
    _pad2: u32,
}

// GpuBox.flags
const BOX_MOVING_SHIFT: u32 = 0u;      // bits 0..2: the box moves on the axis
const BOX_NEGATIVE_SHIFT: u32 = 3u;    // bits 3..5: it moves down
const BOX_LEAD_ON_SHIFT: u32 = 6u;     // bits 6..8: the leading face crosses a plane within max distance
const BOX_TRAIL_ON_SHIFT: u32 = 9u;    // bits 9..11: the trailing face does
const BOX_ON_PLANE_SHIFT: u32 = 12u;   // bits 12..14: the leading face starts on a plane
const BOX_RANKS_SHIFT: u32 = 15u;      // bits 15..20: each axis's rank for edges and corners, 2 bits each

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

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> chunk_table: array<u32>;
@group(0) @binding(2) var<storage, read> occupancy: array<u32>;
@group(0) @binding(3) var<storage, read> slots: array<u32>;
@group(0) @binding(4) var<storage, read> ids: array<u32>;
// One bit per voxel id: the ids that stop a ray (MaterialFilter), 128 to an element.
@group(0) @binding(5) var<uniform> filter_bits: array<vec4<u32>, 512>;
@group(0) @binding(6) var<storage, read> rays: array<GpuRay>;
@group(0) @binding(7) var<storage, read_write> hits: array<GpuHit>;
// cast_pairs: pairs of agent indices, the agents' eyes, and per pair a visibility bit (the
// dispatch's first ceil(count / 32) words), then with Params.details its answer (5 words).
@group(0) @binding(8) var<storage, read> pairs: array<vec2<u32>>;
@group(0) @binding(9) var<storage, read> agents: array<GpuAgent>;
@group(0) @binding(10) var<storage, read_write> pair_out: array<atomic<u32>>;
// cast_sensors: the dispatch's agents' poses, the rig, and per ray its word (sense_word), or
// with Params.details its answer (5 words). The rig (src/gpu/sensors.rs, GpuSensorRig::new):
// its rays in a coherent order (the bits of a unit direction xyz in the agent's frame, max
// distance w), then each one's index in the rig, four to an element.
@group(0) @binding(11) var<storage, read> poses: array<GpuPose>;
@group(0) @binding(12) var<storage, read> rig: array<vec4<u32>>;
@group(0) @binding(13) var<storage, read_write> sensed: array<u32>;

// cast_boxes: the dispatch's box casts and their answers.
@group(0) @binding(14) var<storage, read> boxes: array<GpuBox>;
@group(0) @binding(15) var<storage, read_write> box_hits: array<GpuHit>;

// 0, read from a uniform: `pin` (shaders/exact.wgsl) hides values behind it.
fn opaque_zero() -> u32 {
    return params.zero;
}

// ==== The walk: twins of src/cpu_ref/dda.rs (crossing_t, next_axis: src/cpu_ref.rs)

// Per-invocation DDA state; twin of `Dda` in src/cpu_ref/dda.rs.
struct Dda {
    voxel: vec3<i32>,
    step: vec3<i32>,        // +1 or -1 per axis, from the ray's flags
    n: vec3<u32>,
    t_next: vec3<f32>,
    t: f32,
    entry_axis: u32,
}

// (b + n) * inv: the n-th crossing on one axis, from the count, never accumulated.
fn crossing_t(b: f32, inv: f32, n: u32) -> f32 {
    return (b + f32(n)) * inv;
}

// The axis whose next crossing comes first; ties go to x, then y, then z.
fn next_axis(t: vec3<f32>) -> u32 {
    if (t.x <= t.y && t.x <= t.z) {
        return 0u;
    } else if (t.y <= t.z) {
        return 1u;
    }
    return 2u;
}

fn axis_enabled(ray: Ray, a: u32) -> bool {
    return ((ray.flags >> (RAY_ENABLED_SHIFT + a)) & 1u) != 0u;
}

fn axis_step(ray: Ray, a: u32) -> i32 {
    return select(1, -1, ((ray.flags >> (RAY_NEGATIVE_SHIFT + a)) & 1u) != 0u);
}

fn refresh_axis(ray: Ray, d: ptr<function, Dda>, a: u32) {
    if (axis_enabled(ray, a)) {
        (*d).t_next[a] = crossing_t(ray.b[a], ray.inv[a], (*d).n[a]);
    } else {
        (*d).t_next[a] = T_DISABLED;
    }
}

// The axis whose next crossing comes first, as a one-hot mask: `next_axis` (same comparisons,
// ties x, then y, then z) without branches. `&` and `|`, not `&&` and `||`: no short-circuit.
fn next_axis_mask(t: vec3<f32>) -> vec3<bool> {
    let is_x = (t.x <= t.y) & (t.x <= t.z);
    let is_y = !is_x & (t.y <= t.z);
    return vec3<bool>(is_x, is_y, !(is_x | is_y));
}

// One DDA step. Returns false beyond max distance. Written with selects on the mask of
// next_axis_mask instead of branches and dynamic vector indexing, which are slow on some
// drivers (lanes of a SIMD group step together); the stepped axis's crossing still comes from
// its count, so the bits are those of the Rust twin. The chosen axis is always enabled: a
// disabled axis sits at T_DISABLED, beyond every max distance.
fn dda_step(ray: Ray, d: ptr<function, Dda>) -> bool {
    let t = (*d).t_next;
    let m = next_axis_mask(t);
    let t_step = select(select(t.z, t.y, m.y), t.x, m.x);
    if (t_step > ray.max_distance) {
        return false;
    }
    let n = (*d).n + select(vec3<u32>(0u), vec3<u32>(1u), m);
    (*d).n = n;
    (*d).t_next = select(t, (ray.b + vec3<f32>(n)) * ray.inv, m);
    (*d).voxel += select(vec3<i32>(0), (*d).step, m);
    (*d).t = t_step;
    (*d).entry_axis = select(select(2u, 1u, m.y), 0u, m.x);
    return true;
}

// Skip to the last voxel inside the box lo..=hi (window-relative, inclusive), before the
// first crossing that leaves it and before any crossing tied with that one (for conservative
// line of sight also near-tied: crossings are compared scaled by NEAR_TIE). Returns false when
// that crossing lies beyond max distance.
fn skip_box(ray: Ray, d: ptr<function, Dda>, lo: vec3<i32>, hi: vec3<i32>) -> bool {
    let conservative = (OPTIONS & FLAG_CONSERVATIVE) != 0u;
    // Written per lane with vectors and selects (same arithmetic as the Rust twin's per-axis
    // loops) because dynamic vector indexing and branches are slow on some drivers.
    let enabled = vec3<bool>(axis_enabled(ray, 0u), axis_enabled(ray, 1u), axis_enabled(ray, 2u));
    let n = (*d).n;
    let k = bitcast<vec3<u32>>(select((*d).voxel - lo, hi - (*d).voxel, (*d).step > vec3<i32>(0)));
    let t_exit = select(vec3<f32>(T_DISABLED), (ray.b + vec3<f32>(n + k)) * ray.inv, enabled);
    let exit_x = (t_exit.x <= t_exit.y) & (t_exit.x <= t_exit.z);
    let exit_y = !exit_x & (t_exit.y <= t_exit.z);
    let exit_mask = vec3<bool>(exit_x, exit_y, !(exit_x | exit_y));
    let t_end = select(select(t_exit.z, t_exit.y, exit_y), t_exit.x, exit_x);
    // Conservative: a crossing within max distance can form an edge with an exit beyond it, so
    // land first and end once the next crossing lies beyond.
    if (!conservative && t_end > ray.max_distance) {
        return false;
    }
    // crossings_before (src/cpu_ref.rs) on the other enabled axes, all lanes at once.
    let counting = enabled & !exit_mask;
    // Start from an estimate just below the count, kept only where its crossing lies before
    // t_end (then so do all earlier ones), so the count stays exact whatever the estimate;
    // long (chunk) skips then take a step or two instead of up to 32.
    var c = crossings_hint(ray, t_end, n, k);
    c = select(vec3<u32>(0u), c, counting & (tie_scaled((ray.b + vec3<f32>(n + c)) * ray.inv) < vec3<f32>(t_end)));
    loop {
        let more = counting & (tie_scaled((ray.b + vec3<f32>(n + c)) * ray.inv) < vec3<f32>(t_end));
        if (!any(more)) {
            break;
        }
        c += select(vec3<u32>(0u), vec3<u32>(1u), more);
    }
    c = select(c, k, exit_mask);
    (*d).n = n + c;
    (*d).voxel += (*d).step * bitcast<vec3<i32>>(c);
    (*d).t_next = select(vec3<f32>(T_DISABLED), (ray.b + vec3<f32>((*d).n)) * ray.inv, enabled);
    let t_next = (*d).t_next;
    if (conservative && min(min(t_next.x, t_next.y), t_next.z) > ray.max_distance) {
        return false;
    }
    return true;
}

// Crossings as skip_box compares them with the one that leaves the box: for conservative
// line of sight scaled by NEAR_TIE, so that a skip also stops before every crossing near-tied
// with that exit. Twin of `tie_scaled` in src/cpu_ref.rs.
fn tie_scaled(t: vec3<f32>) -> vec3<f32> {
    if ((OPTIONS & FLAG_CONSERVATIVE) != 0u) {
        return pin3(t) * NEAR_TIE;
    }
    return t;
}

// An estimate from below of the crossings before t_end on each axis, at most k: where
// skip_box's exact count starts (it checks the estimate, so any value gives the same count).
fn crossings_hint(ray: Ray, t_end: f32, n: vec3<u32>, k: vec3<u32>) -> vec3<u32> {
    let estimate = vec3<f32>(t_end) / ray.inv - ray.b - vec3<f32>(n) - vec3<f32>(1.0);
    return vec3<u32>(clamp(estimate, vec3<f32>(0.0), vec3<f32>(k)));
}

// How walk_dense left its loop.
const WALK_HIT: u32 = 0u;
const WALK_EMPTY_BRICK: u32 = 1u;
const WALK_LEFT_CHUNK: u32 = 2u;
const WALK_MISS: u32 = 3u;

// The hot loop for the dense chunk in `slot`, with the state in locals: examine the current
// voxel and step (exactly as dda_step) until a voxel stops the ray (WALK_HIT, its id in
// *hit_id), the current voxel lies in an empty brick (WALK_EMPTY_BRICK, for the caller to
// skip; never under FLAG_STEP_EMPTY_BRICKS, set for batches of short rays and in worlds with
// little air in empty bricks, where the brick test on every air voxel costs more than the
// skips save; `Dda::walk_dense::<true, _>` is its twin), the ray enters another chunk
// (WALK_LEFT_CHUNK) or it ends (WALK_MISS). Only where the origin policy no longer matters
// and without the conservative tie test. Twin of `Dda::walk_dense` in src/cpu_ref/dda.rs,
// which skips empty bricks itself: here the caller skips, because every lane of a SIMD group
// would carry the skip code. Where every non-air voxel stops the ray (the default), the
// occupancy bit alone decides and the id is read once after the loop, and the time and entry
// axis are made from the last step's axis mask after the loop (the same bits): work after the
// loop runs once, work in it once per step. The Rust twin reads the id and sets those in the
// loop, with the same result. At most 96 steps: each one moves one voxel through the chunk.
fn walk_dense(ray: Ray, d: ptr<function, Dda>, slot: u32, hit_id: ptr<function, u32>) -> u32 {
    let occ_base = slot * OCC_WORDS;
    let brick_bits = vec2<u32>(slots[slot * SLOT_WORDS], slots[slot * SLOT_WORDS + 1u]);
    let base = (*d).voxel & vec3<i32>(~31);
    // The state in separate locals rather than a Dda copy, which the loop would carry whole.
    // Local coordinates in 0..32; a step out of the chunk wraps to 32 or 0xFFFFFFFF.
    var l = bitcast<vec3<u32>>((*d).voxel - base);
    let step = bitcast<vec3<u32>>((*d).step);
    var n = (*d).n;
    var t_next = (*d).t_next;
    // The axis of the last step; its time and the entry axis are made from it after the loop.
    var last = vec3<bool>(false);
    var word = occupancy[occ_base + (l.y | (l.z << 5u))];
    var result = WALK_MISS;
    loop {
        if (((word >> l.x) & 1u) != 0u) {
            // Every non-air voxel stops the ray: the id is read once, after the loop.
            if ((OPTIONS & FLAG_EVERY_NON_AIR) != 0u) {
                result = WALK_HIT;
                break;
            }
            let id = slot_id(slot, l);
            if (stops(id)) {
                *hit_id = id;
                result = WALK_HIT;
                break;
            }
        } else if ((OPTIONS & FLAG_STEP_EMPTY_BRICKS) == 0u) {
            let brick = (l.x >> 3u) | ((l.y >> 3u) << 2u) | ((l.z >> 3u) << 4u);
            let bits = select(brick_bits.x, brick_bits.y, brick >= 32u);
            if (((bits >> (brick & 31u)) & 1u) == 0u) {
                result = WALK_EMPTY_BRICK;
                break;
            }
        }
        // dda_step on the locals.
        let m = next_axis_mask(t_next);
        let t_step = select(select(t_next.z, t_next.y, m.y), t_next.x, m.x);
        if (t_step > ray.max_distance) {
            result = WALK_MISS;
            break;
        }
        last = m;
        n += select(vec3<u32>(0u), vec3<u32>(1u), m);
        t_next = select(t_next, (ray.b + vec3<f32>(n)) * ray.inv, m);
        l += select(vec3<u32>(0u), step, m);
        if (any(l >= vec3<u32>(32u))) {
            result = WALK_LEFT_CHUNK;
            break;
        }
        word = occupancy[occ_base + (l.y | (l.z << 5u))];
    }
    if (result == WALK_HIT && (OPTIONS & FLAG_EVERY_NON_AIR) != 0u) {
        *hit_id = ID_LATER;
    }
    if (any(last)) {
        // The last step's crossing, (b + n - 1) * inv on its axis: the bits of its t_step.
        let crossed = (ray.b + vec3<f32>(n - vec3<u32>(1u))) * ray.inv;
        (*d).t = select(select(crossed.z, crossed.y, last.y), crossed.x, last.x);
        (*d).entry_axis = select(select(2u, 1u, last.y), 0u, last.x);
    }
    (*d).voxel = base + bitcast<vec3<i32>>(l);
    (*d).n = n;
    (*d).t_next = t_next;
    return result;
}

// UV of the entry point on the face crossed on face_axis.
fn face_uv(ray: Ray, n: vec3<u32>, t: f32, face_axis: u32) -> vec2<f32> {
    if (face_axis == AXIS_NONE) {
        return vec2<f32>(0.0);
    }
    var u = 0u;
    var v = 1u;
    if (face_axis == 0u) {
        u = 1u;
        v = 2u;
    } else if (face_axis == 1u) {
        v = 2u;
    }
    return vec2<f32>(face_frac(ray, n, t, u), face_frac(ray, n, t, v));
}

// The direction's component on axis a: 1 / inv on an enabled axis (within 2e-7 of the host's,
// relative: only UV uses it), |d| as uploaded on a disabled one, with the step's sign.
fn ray_dir(ray: Ray, a: u32) -> f32 {
    var m = ray.inv[a];
    if (axis_enabled(ray, a)) {
        m = recip_near(m);
    }
    return select(m, -m, axis_step(ray, a) < 0);
}

// 1 / m for a positive normal m below 2^124, within two ulps: three Newton steps from the
// exponent-flipping first guess (relative error 0.12, then 0.015, 2e-4, 4e-8), each pinned so
// that every GPU computes the same bits. For UV only (1e-5 tolerance), where div_rn's exact
// search would cost more than the rest of a hit.
fn recip_near(m: f32) -> f32 {
    var r = bitcast<f32>(0x7EF311C3u - bitcast<u32>(m));
    for (var k = 0u; k < 3u; k += 1u) {
        r = pin(r * (2.0 - pin(m * r)));
    }
    return r;
}

fn face_frac(ray: Ray, n: vec3<u32>, t: f32, b: u32) -> f32 {
    var f: f32;
    if (n[b] == 0u) {
        var start = ray.b[b];
        if (axis_step(ray, b) > 0) {
            start = pin(1.0 - ray.b[b]);
        }
        f = start + pin(ray_dir(ray, b) * pin(t));
    } else {
        let along = abs(ray_dir(ray, b)) * (pin(t) - pin(crossing_t(ray.b[b], ray.inv[b], n[b] - 1u)));
        f = select(1.0 - pin(along), along, axis_step(ray, b) > 0);
    }
    return clamp(f, 0.0, 1.0);
}

// ==== Edges and corners: twins of src/cpu_ref/ties.rs

// The axes whose next crossing is t (the first) or near-tied with it: an edge or corner when
// two or three bits are set.
fn tied_axes(t_next: vec3<f32>, t: f32) -> u32 {
    let near = pin(t) * NEAR_TIE;
    return select(0u, 1u, t_next.x <= near) | select(0u, 2u, t_next.y <= near) | select(0u, 4u, t_next.z <= near);
}

// Each axis's place in the order stepping crosses the tie group: by distance, then x, y, z.
fn tie_ranks(t: vec3<f32>, tied: u32) -> vec3<u32> {
    let g = vec3<bool>((tied & 1u) != 0u, (tied & 2u) != 0u, (tied & 4u) != 0u);
    return vec3<u32>(
        select(0u, 1u, g.y && t.y < t.x) + select(0u, 1u, g.z && t.z < t.x),
        select(0u, 1u, g.x && t.x <= t.y) + select(0u, 1u, g.z && t.z < t.y),
        select(0u, 1u, g.x && t.x <= t.z) + select(0u, 1u, g.y && t.y <= t.z));
}

// Whether mask names a voxel touching the tie that stepping does not visit: not a prefix of
// the group in stepping order (its last axis ranks at or above its size).
fn tie_extra(tied: u32, ranks: vec3<u32>, mask: u32) -> bool {
    let m = vec3<bool>((mask & 1u) != 0u, (mask & 2u) != 0u, (mask & 4u) != 0u);
    let ranked = select(vec3<u32>(0u), ranks + vec3<u32>(1u), m);
    let last = max(max(ranked.x, ranked.y), ranked.z);
    return (mask & tied) == mask && last > countOneBits(mask);
}

// Conservative line of sight: test the voxels touching a crossed edge or corner that stepping
// will not visit. Returns a hit with status MISS when none stops the ray.
fn check_tie_extras(ray: Ray, d: Dda, t_cross: f32, air_seen: bool) -> Hit {
    let tied = tied_axes(d.t_next, t_cross);
    if (countOneBits(tied) < 2u) {
        return miss();
    }
    let ranks = tie_ranks(d.t_next, tied);
    for (var mask = 1u; mask < 8u; mask += 1u) {
        if (!tie_extra(tied, ranks, mask)) {
            continue;
        }
        var p = d.voxel;
        var n = d.n;
        // The mask's axis crossed last in stepping order: the face the voxel is entered by.
        var last_axis = 0u;
        var last_rank = 0u;
        for (var a = 0u; a < 3u; a += 1u) {
            if (((mask >> a) & 1u) != 0u) {
                p[a] += axis_step(ray, a);
                n[a] += 1u;
                if (ranks[a] + 1u > last_rank) {
                    last_axis = a;
                    last_rank = ranks[a] + 1u;
                }
            }
        }
        if (beyond_world(p)) {
            continue;
        }
        if ((OPTIONS & FLAG_PARTIAL) != 0u && !held(p)) {
            return make_hit(STATUS_UNLOADED, p, t_cross, 0u, AXIS_NONE, false, vec3<u32>(0u));
        }
        let at = voxel_at(p);
        if (at.x == 1u && (OPTIONS & FLAG_STOP_UNLOADED) != 0u) {
            return make_hit(STATUS_UNLOADED, p, t_cross, 0u, AXIS_NONE, false, vec3<u32>(0u));
        }
        if (at.x == 0u && stops(at.y) && air_seen) {
            return make_hit(STATUS_HIT, p, t_cross, at.y, last_axis, axis_step(ray, last_axis) < 0, n);
        }
    }
    return miss();
}

// ==== The window: chunk table and summaries (src/gpu/window.rs, src/world/summary.rs)

fn stops(id: u32) -> bool {
    if ((OPTIONS & FLAG_EVERY_NON_AIR) != 0u) {
        return id != 0u;
    }
    return ((filter_bits[id >> 7u][(id >> 5u) & 3u] >> (id & 31u)) & 1u) != 0u;
}

fn in_window(v: vec3<i32>) -> bool {
    let size = vec3<i32>(params.dims) * 32;
    return all(v >= vec3<i32>(0)) && all(v < size);
}

// Whether v lies beyond the i128 world: outside the window across a face that is the world's
// edge (the window has no margin there). The CPU twin is the i128 range itself: `carry_chunk`
// refuses such a step (the ray ends as a miss) and `check_tie_extras` skips such a voxel.
fn beyond_world(v: vec3<i32>) -> bool {
    let size = vec3<i32>(params.dims) * 32;
    let low = (vec3<u32>(params.world_edge) >> vec3<u32>(0u, 1u, 2u)) & vec3<u32>(1u);
    let high = (vec3<u32>(params.world_edge) >> vec3<u32>(3u, 4u, 5u)) & vec3<u32>(1u);
    return any((v < vec3<i32>(0)) & (low != vec3<u32>(0u))) || any((v >= size) & (high != vec3<u32>(0u)));
}

// The lowest and highest voxel (window-relative, inclusive) of the box of chunks a window
// holds: the window less its margin of a chunk on each face that is not the i128 world's edge
// (Window::interior in src/gpu/window.rs).
fn held_lo() -> vec3<i32> {
    let low = (vec3<u32>(params.world_edge) >> vec3<u32>(0u, 1u, 2u)) & vec3<u32>(1u);
    return select(vec3<i32>(32), vec3<i32>(0), low != vec3<u32>(0u));
}

fn held_hi() -> vec3<i32> {
    let high = (vec3<u32>(params.world_edge) >> vec3<u32>(3u, 4u, 5u)) & vec3<u32>(1u);
    return vec3<i32>(params.dims) * 32 - select(vec3<i32>(33), vec3<i32>(1), high != vec3<u32>(0u));
}

// Whether v lies in that box.
fn held(v: vec3<i32>) -> bool {
    return all(v >= held_lo()) && all(v <= held_hi());
}

// (a + b) mod n for a, b in 0..n where the table is toroidal (b is 0 where it is not).
fn wrap_add(a: vec3<u32>, b: vec3<u32>, n: vec3<u32>) -> vec3<u32> {
    if ((OPTIONS & FLAG_TOROIDAL) == 0u) {
        return a;
    }
    let s = a + b;
    return select(s, s - n, s >= n);
}

// The table entry of the chunk holding window voxel v (in the window).
fn table_entry(v: vec3<i32>) -> u32 {
    let c = wrap_add(vec3<u32>(v >> vec3<u32>(5u)), params.table_phase, params.dims);
    return chunk_table[c.x + params.dims.x * (c.y + params.dims.y * c.z)];
}

// The largest empty block of entries around entry b (each in 0..4) of a 4x4x4 summary, given
// as its two words w (bit set = the entry is not empty; entries with z >= 2 in w.y), as
// inclusive entry corners in *lo and *hi; false when entry b is not empty. The first empty one
// of: the half holding b (4x2x4 entries), its layer (4x1x4), its aligned 2x2x2 block, b alone.
// Twin of `empty_block` in src/world/summary.rs: a layer has entries in both words, a 2x2x2
// block only in the word of its own entries.
fn empty_block(w: vec2<u32>, b: vec3<u32>, lo: ptr<function, vec3<u32>>, hi: ptr<function, vec3<u32>>) -> bool {
    let bit = b.x | (b.y << 2u) | (b.z << 4u);
    let word = select(w.x, w.y, bit >= 32u);
    if (((word >> (bit & 31u)) & 1u) != 0u) {
        return false;
    }
    let y2 = b.y & ~1u;
    if (((w.x | w.y) & (HALF_BITS << (4u * y2))) == 0u) {
        *lo = vec3<u32>(0u, y2, 0u);
        *hi = vec3<u32>(3u, y2 + 1u, 3u);
    } else if (((w.x | w.y) & (LAYER_BITS << (4u * b.y))) == 0u) {
        *lo = vec3<u32>(0u, b.y, 0u);
        *hi = vec3<u32>(3u, b.y, 3u);
    } else if (((word >> (bit & 0xAu)) & BLOCK_BITS) == 0u) {
        // bit & 0xA: the block's lowest entry within the word (bit 1 of entry x and of entry y).
        *lo = b & vec3<u32>(~1u);
        *hi = *lo + vec3<u32>(1u);
    } else {
        *lo = b;
        *hi = b;
    }
    return true;
}

// The largest empty box of whole bricks around local voxel l of the dense chunk in `slot`, as inclusive local
// corners in *lo and *hi; false when l's brick is not empty: empty_block over the chunk's
// bricks (32x16x32, 32x8x32, 16^3 or 8^3 voxels). Twin of `empty_box` in
// src/world/summary.rs.
fn empty_box(slot: u32, l: vec3<u32>, lo: ptr<function, vec3<u32>>, hi: ptr<function, vec3<u32>>) -> bool {
    let w = vec2<u32>(slots[slot * SLOT_WORDS], slots[slot * SLOT_WORDS + 1u]);
    var blo: vec3<u32>;
    var bhi: vec3<u32>;
    if (!empty_block(w, l >> vec3<u32>(3u), &blo, &bhi)) {
        return false;
    }
    *lo = blo << vec3<u32>(3u);
    *hi = (bhi << vec3<u32>(3u)) | vec3<u32>(7u);
    return true;
}

// The run of chunks to cross in one step from window chunk c, which holds nothing that stops
// the ray: the largest empty block of its region (4x4x4 chunks) in the region's record, which
// follows the chunk entries in the chunk table (two words for UnloadedPolicy::Air, then two for
// Stop). Writes it as inclusive window-relative voxel corners to *lo and *hi (a run may reach
// past the window), and leaves them (the chunk alone) when c blocks runs. Twin of
// `RegionCache::run` in src/cpu_ref.rs.
fn region_run(c: vec3<i32>, stop_unloaded: bool, lo: ptr<function, vec3<i32>>, hi: ptr<function, vec3<i32>>) {
    let phase = (vec3<u32>(params.region_phase) >> vec3<u32>(0u, 2u, 4u)) & vec3<u32>(3u);
    let rc = vec3<u32>(c) + phase;
    let rdims = params.region_dims;
    let r = wrap_add(rc >> vec3<u32>(2u), params.region_table_phase, rdims);
    let record = params.dims.x * params.dims.y * params.dims.z
        + 4u * (r.x + rdims.x * (r.y + rdims.y * r.z)) + select(0u, 2u, stop_unloaded);
    let w = vec2<u32>(chunk_table[record], chunk_table[record + 1u]);
    let at = rc & vec3<u32>(3u);
    var blo: vec3<u32>;
    var bhi: vec3<u32>;
    if (empty_block(w, at, &blo, &bhi)) {
        *lo = (c + bitcast<vec3<i32>>(blo) - bitcast<vec3<i32>>(at)) * 32;
        *hi = (c + bitcast<vec3<i32>>(bhi) - bitcast<vec3<i32>>(at)) * 32 + vec3<i32>(31);
    }
}

// The id of local voxel l of the chunk in `slot`, from its id record: the brick's own id, or
// its value (through the palette below 16 bits).
fn slot_id(slot: u32, l: vec3<u32>) -> u32 {
    let record = slots[slot * SLOT_WORDS + 2u];
    let bits = slots[slot * SLOT_WORDS + 3u];
    let brick = (l.x >> 3u) | ((l.y >> 3u) << 2u) | ((l.z >> 3u) << 4u);
    let entry = ids[record + brick];
    if ((entry & BRICK_UNIFORM) != 0u) {
        return entry & 0xFFFFu;
    }
    let bit = ((l.x & 7u) | ((l.y & 7u) << 3u) | ((l.z & 7u) << 6u)) * bits;
    let v = (ids[record + entry + (bit >> 5u)] >> (bit & 31u)) & ((1u << bits) - 1u);
    if (bits == 16u) {
        return v;
    }
    return (ids[record + RECORD_BRICKS + (v >> 1u)] >> ((v & 1u) * 16u)) & 0xFFFFu;
}

// Id of any voxel, for the conservative corner test. x = 0 loaded, 1 unloaded; y = id.
fn voxel_at(v: vec3<i32>) -> vec2<u32> {
    if (!in_window(v)) {
        return vec2<u32>(1u, 0u);
    }
    let e = table_entry(v);
    let tag = e & TAG_MASK;
    if (tag == TAG_UNLOADED) {
        return vec2<u32>(1u, 0u);
    } else if (tag == TAG_EMPTY) {
        return vec2<u32>(0u, 0u);
    } else if (tag == TAG_UNIFORM) {
        return vec2<u32>(0u, e & 0xFFFFu);
    }
    return vec2<u32>(0u, slot_id(e, vec3<u32>(v & vec3<i32>(31))));
}

// ==== Casting: hits (Dda::hit in src/cpu_ref/dda.rs), cast_ray (src/cpu_ref.rs), cast_segment
// and its helpers (src/cpu_ref/queries.rs)

fn make_hit(status: u32, voxel: vec3<i32>, t: f32, id: u32, face_axis: u32, normal_positive: bool, n: vec3<u32>) -> Hit {
    var h: Hit;
    h.voxel = voxel;
    h.status = status | (face_axis << 4u) | select(0u, 64u, normal_positive);
    h.distance = t;
    h.id = id;
    h.uv = vec2<f32>(0.0);
    h.n = n;
    return h;
}

fn miss() -> Hit {
    return make_hit(STATUS_MISS, vec3<i32>(0), 0.0, 0u, AXIS_NONE, false, vec3<u32>(0u));
}

// The hit on the current voxel of d; twin of `Dda::hit` in src/cpu_ref/dda.rs.
fn hit(ray: Ray, d: Dda, id: u32) -> Hit {
    var normal_positive = false;
    if (d.entry_axis != AXIS_NONE) {
        normal_positive = axis_step(ray, d.entry_axis) < 0;
    }
    return make_hit(STATUS_HIT, d.voxel, d.t, id, d.entry_axis, normal_positive, d.n);
}

// The hit with its id and UV, once the walk has ended: the id of a voxel whose occupancy
// bit alone stopped the ray (ID_LATER) read from its chunk, and the UV from the crossings and
// distance the hit was made with. Made once after the walk, not where the walk stops: lanes
// of a SIMD group that stop at different steps would each run it inside the loop.
fn finished(ray: Ray, hit: Hit) -> Hit {
    var h = hit;
    if ((h.status & 15u) == STATUS_HIT) {
        if (h.id == ID_LATER) {
            h.id = slot_id(table_entry(h.voxel), vec3<u32>(h.voxel & vec3<i32>(31)));
        }
        h.uv = face_uv(ray, h.n, h.distance, (h.status >> 4u) & 3u);
    }
    return h;
}

// `finished` where `finish` (uniform across a dispatch), else the hit as the walk left it.
fn finished_if(ray: Ray, hit: Hit, finish: bool) -> Hit {
    if (finish) {
        return finished(ray, hit);
    }
    return hit;
}

// The whole algorithm for one ray; twin of `cast_ray` in src/cpu_ref.rs.
fn cast_ray(ray: Ray) -> Hit {
    let origin_policy = OPTIONS & FLAG_ORIGIN_MASK;
    let stop_unloaded = (OPTIONS & FLAG_STOP_UNLOADED) != 0u;
    let conservative = (OPTIONS & FLAG_CONSERVATIVE) != 0u;
    let per_voxel = (OPTIONS & FLAG_PER_VOXEL) != 0u;

    var d: Dda;
    d.voxel = ray.voxel;
    d.step = vec3<i32>(axis_step(ray, 0u), axis_step(ray, 1u), axis_step(ray, 2u));
    d.n = ray.n;
    d.entry_axis = (ray.flags >> RAY_ENTRY_SHIFT) & 3u;
    for (var a = 0u; a < 3u; a += 1u) {
        refresh_axis(ray, &d, a);
    }
    d.t = 0.0;
    if (d.entry_axis != AXIS_NONE) {
        d.t = crossing_t(ray.b[d.entry_axis], ray.inv[d.entry_axis], d.n[d.entry_axis] - 1u);
    }
    let clipped = (ray.flags & RAY_CLIPPED) != 0u;
    var in_origin = !clipped;
    var air_seen = origin_policy != ORIGIN_EXIT_SOLID || clipped;

    var cur_chunk = vec3<i32>(-1);
    var entry = TAG_UNLOADED;
    for (var iter = 0u; iter < MAX_ITERATIONS; iter += 1u) {
        // Entered a new chunk (or started): classify it once.
        let chunk = d.voxel >> vec3<u32>(5u);
        if (any(chunk != cur_chunk)) {
            // Past the box of a window that follows a centre the GPU knows nothing: the ray
            // ends as unloaded there, whatever the unloaded policy (a step beyond the i128
            // world is still a miss).
            if ((OPTIONS & FLAG_PARTIAL) != 0u && !held(d.voxel) && !beyond_world(d.voxel)) {
                return make_hit(STATUS_UNLOADED, d.voxel, d.t, 0u, AXIS_NONE, false, vec3<u32>(0u));
            }
            if (!in_window(d.voxel)) {
                // Nothing outside the window is loaded; a step beyond the i128 world ends the
                // ray as a miss (the CPU's `dda_step`), whatever the unloaded policy.
                if (!stop_unloaded || beyond_world(d.voxel)) {
                    return miss();
                }
                entry = TAG_UNLOADED;
            } else {
                entry = table_entry(d.voxel);
            }
            cur_chunk = chunk;
        }
        let tag = entry & TAG_MASK;
        // Under Report the origin voxel is examined like any other.
        if (tag == 0u && (!in_origin || origin_policy == ORIGIN_REPORT) && air_seen && !conservative && !per_voxel) {
            var walk_id = 0u;
            let walk = walk_dense(ray, &d, entry, &walk_id);
            if (walk == WALK_HIT) {
                return hit(ray, d, walk_id);
            } else if (walk == WALK_MISS) {
                return miss();
            } else if (walk == WALK_LEFT_CHUNK) {
                continue;
            }
            // WALK_EMPTY_BRICK: examined below, which skips the brick.
        }
        // Examine the current voxel.
        let skip_origin = in_origin && origin_policy == ORIGIN_SKIP;
        var stop_id = 0u;
        var stopping = false;
        var passable = false;
        var box_lo = cur_chunk * 32;
        var box_hi = box_lo + vec3<i32>(31);
        if (tag == TAG_UNLOADED) {
            if (!stop_unloaded) {
                passable = true;
            } else if (!skip_origin) {
                return make_hit(STATUS_UNLOADED, d.voxel, d.t, 0u, AXIS_NONE, false, vec3<u32>(0u));
            }
        } else if (tag == TAG_EMPTY) {
            passable = true;
        } else if (tag == TAG_UNIFORM) {
            let id = entry & 0xFFFFu;
            if (stops(id)) {
                stopping = true;
                stop_id = id;
            } else {
                passable = true;
            }
        } else {
            let l = vec3<u32>(d.voxel & vec3<i32>(31));
            let word = occupancy[entry * OCC_WORDS + (l.y | (l.z << 5u))];
            if (((word >> l.x) & 1u) != 0u) {
                if ((OPTIONS & FLAG_EVERY_NON_AIR) != 0u) {
                    stopping = true;
                    stop_id = ID_LATER;
                } else {
                    let id = slot_id(entry, l);
                    if (stops(id)) {
                        stopping = true;
                        stop_id = id;
                    }
                }
            } else {
                var lo: vec3<u32>;
                var hi: vec3<u32>;
                if (empty_box(entry, l, &lo, &hi)) {
                    passable = true;
                    box_hi = box_lo + bitcast<vec3<i32>>(hi);
                    box_lo += bitcast<vec3<i32>>(lo);
                }
            }
        }
        // A whole chunk that holds nothing that stops the ray: cross the run of such chunks
        // around it.
        if (passable && tag != 0u && !per_voxel) {
            region_run(cur_chunk, stop_unloaded, &box_lo, &box_hi);
            if ((OPTIONS & FLAG_PARTIAL) != 0u) {
                // A run stops at the box's faces: the next voxel is where the ray leaves it.
                box_lo = max(box_lo, held_lo());
                box_hi = min(box_hi, held_hi());
            }
        }
        if (stopping) {
            if (!skip_origin && air_seen) {
                return hit(ray, d, stop_id);
            }
        } else {
            air_seen = true;
        }
        // Skip a box that holds nothing that stops the ray, then cross out of it.
        if (passable && !per_voxel) {
            if (!skip_box(ray, &d, box_lo, box_hi)) {
                return miss();
            }
        }
        in_origin = false;
        if (conservative) {
            let t_cross = d.t_next[next_axis(d.t_next)];
            if (t_cross > d.t && t_cross <= ray.max_distance) {
                let extra = check_tie_extras(ray, d, t_cross, air_seen);
                if ((extra.status & 15u) != STATUS_MISS) {
                    return extra;
                }
            }
        }
        if (!dda_step(ray, &d)) {
            return miss();
        }
    }
    return make_hit(STATUS_RUNAWAY, d.voxel, d.t, 0u, AXIS_NONE, false, vec3<u32>(0u));
}

// Whether hit a lies strictly nearer than b: a miss is never nearer, anything else is nearer
// than a miss; a runaway is nearer than everything, so that it is reported. Twin of `nearer`
// in src/cpu_ref/queries.rs.
fn nearer(a: Hit, b: Hit) -> bool {
    let sa = a.status & 15u;
    let sb = b.status & 15u;
    if (sa == STATUS_MISS || sb == STATUS_RUNAWAY) {
        return false;
    }
    return sb == STATUS_MISS || sa == STATUS_RUNAWAY || a.distance < b.distance;
}

// A hit in the layer moved down on the axes of `layer` lies at its voxel's high face on those
// axes: its UV there is 1, where the moved ray gives 0. Twin of `on_high_faces` in
// src/cpu_ref/queries.rs.
fn on_high_faces(hit: Hit, layer: u32) -> Hit {
    var h = hit;
    let face = (h.status >> 4u) & 3u;
    if ((h.status & 15u) == STATUS_HIT && face != AXIS_NONE) {
        // The face's UV axes: x face (y, z), y face (x, z), z face (x, y).
        let u = select(0u, 1u, face == 0u);
        let v = select(1u, 2u, face != 2u);
        if (((layer >> u) & 1u) != 0u) {
            h.uv.x = 1.0;
        }
        if (((layer >> v) & 1u) != 0u) {
            h.uv.y = 1.0;
        }
    }
    return h;
}

// cast_ray, and for conservative line of sight on a ray that lies in a voxel face plane also
// the layers of voxels on the other side of each such plane: the ray shifted one voxel down on
// those axes (the host's clipping and step never move them, so the shifted start state is that
// layer's). The nearest answer wins, at equal distances the first layer. With `finish`, each
// hit gets its id and UV (`finished`); without, a hit's id and UV are not made (agent pairs
// asked for their bits alone). Twin of `cast_segment` in src/cpu_ref/queries.rs.
fn cast_segment(ray: Ray, finish: bool) -> Hit {
    if ((OPTIONS & FLAG_CONSERVATIVE) == 0u) {
        return finished_if(ray, cast_ray(ray), finish);
    }
    let planes = (ray.flags >> RAY_PLANE_SHIFT) & 7u;
    if (planes == 0u) {
        // Most rays: without the loop, which would keep `best` live around cast_ray.
        return finished_if(ray, cast_ray(ray), finish);
    }
    var best = miss();
    for (var layer = 0u; layer < 8u; layer += 1u) {
        if ((layer & planes) != layer) {
            continue;
        }
        var r = ray;
        r.voxel -= vec3<i32>(vec3<u32>(layer, layer >> 1u, layer >> 2u) & vec3<u32>(1u));
        // A layer beyond the edge of the i128 world holds nothing (the CPU skips it).
        if (layer != 0u && beyond_world(r.voxel)) {
            continue;
        }
        let h = on_high_faces(finished_if(r, cast_ray(r), finish), layer);
        if (nearer(h, best)) {
            best = h;
        }
    }
    return best;
}

// ==== Entry points: rays (GpuRay, GpuHit in src/gpu/layout.rs), cameras (src/camera.rs), agent pairs
// (segment: src/ray.rs)

fn unpack_ray(r: GpuRay) -> Ray {
    var ray: Ray;
    ray.voxel = r.voxel;
    ray.flags = r.flags & RAY_FLAG_BITS;
    ray.b = r.b;
    ray.max_distance = r.max_distance;
    ray.inv = r.inv;
    let lo = r.flags >> 12u;
    ray.n = vec3<u32>(lo, (lo >> 17u) | (r.counts_hi << 3u), r.counts_hi >> 14u) & vec3<u32>(COUNT_BITS);
    return ray;
}

// `h` as the host reads it, its voxel relative to `start` (the ray's uploaded start voxel).
fn pack_hit(h: Hit, start: vec3<i32>) -> GpuHit {
    let d = bitcast<vec3<u32>>(h.voxel - start) & vec3<u32>(0x3FFFFu);
    let unit = clamp(vec2<f32>(pin(h.uv.x), pin(h.uv.y)), vec2<f32>(0.0), vec2<f32>(1.0));
    let uv = vec2<u32>(round(unit * 8388607.0));
    var o: GpuHit;
    o.w0 = d.x | (h.id << 18u);
    o.w1 = d.y | ((h.id >> 14u) << 18u) | ((h.status & STATUS_BITS) << 20u);
    o.w2 = d.z | ((uv.y >> 9u) << 18u);
    o.distance = bitcast<u32>(h.distance);
    o.uv = uv.x | (uv.y << 23u);
    return o;
}

fn invocation_index(gid: vec3<u32>, groups: vec3<u32>) -> u32 {
    return gid.x + gid.y * groups.x * 64u;
}

@compute @workgroup_size(64)
fn cast_rays(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = invocation_index(gid, groups);
    if (i >= params.ray_count || i >= arrayLength(&rays)) {
        return;
    }
    let r = rays[i];
    var ray: Ray;
    if ((OPTIONS & FLAG_RAYS_AS_GIVEN) != 0u && r.counts_hi == RAY_SET_UP_IN_SHADER) {
        ray = made_ray(r.voxel, r.b, r.inv, r.max_distance);
    } else {
        ray = unpack_ray(r);
    }
    // Relative to the voxel uploaded, which the host decodes against.
    hits[i] = pack_hit(cast_segment(ray, true), r.voxel);
}

// The unit direction through the centre of pixel (px, py); twin of `Camera::pixel_dir` in
// src/camera.rs: same operations in the same order, each rounded once (`pin` keeps products
// from being fused into the sums they feed and sums from being regrouped; `div_rn` and
// `sqrt_rn` round as the CPU does). px and py are below 2^24, so f32(px) is exact.
fn camera_dir(px: u32, py: u32) -> vec3<f32> {
    let sx = pin(pin(pin(f32(px) + 0.5) * params.cam_inv_w) - 1.0) * params.cam_scale_x;
    let sy = pin(1.0 - pin(pin(f32(py) + 0.5) * params.cam_inv_h)) * params.cam_scale_y;
    let f = params.cam_forward;
    let r = params.cam_right;
    let u = params.cam_up;
    let across = pin3(r * pin(sx));
    let down = pin3(u * pin(sy));
    let v = pin3(f + across) + down;
    let squares = pin3(v * v);
    let len = sqrt_rn(pin(squares.x + squares.y) + squares.z);
    let rl = div_rn(1.0, len);
    return v * rl;
}

// One axis of VoxelRay::prepare (src/ray.rs): flush a denormal component, apply the start-voxel
// rule and decide whether the axis is enabled. Returns the updated ray.
fn prepare_axis(ray_in: Ray, a: u32, d_raw: f32, sub: f32) -> Ray {
    var ray = ray_in;
    let d = pin(select(d_raw, 0.0, abs(d_raw) < MIN_NORMAL));
    // PreparedRay::plane_axes: the ray lies in a voxel face plane on this axis.
    if (d == 0.0 && sub == 0.0) {
        ray.flags |= 1u << (RAY_PLANE_SHIFT + a);
    }
    if (d < 0.0) {
        ray.flags |= 1u << (RAY_NEGATIVE_SHIFT + a);
        if (sub == 0.0) {
            ray.voxel[a] -= 1;
            ray.b[a] = 1.0;
        } else {
            ray.b[a] = sub;
        }
    } else {
        ray.b[a] = pin(1.0 - sub);
    }
    ray.inv[a] = abs(d);
    if (d != 0.0) {
        let inv = div_rn(1.0, abs(d));
        if (ray.b[a] * inv <= ray.max_distance) {
            ray.flags |= 1u << (RAY_ENABLED_SHIFT + a);
            ray.inv[a] = inv;
        }
    }
    return ray;
}

@compute @workgroup_size(64)
fn cast_camera(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = invocation_index(gid, groups);
    if (i >= params.ray_count || i >= arrayLength(&hits)) {
        return;
    }
    let pixel = params.ray_base + i;
    let px = pixel % params.cam_width;
    let py = pixel / params.cam_width;
    let dir = camera_dir(px, py);
    let ray = made_ray(params.cam_position, params.cam_sub, dir, params.cam_max_distance);
    hits[i] = pack_hit(finished(ray, cast_ray(ray)), params.cam_position);
}

// A ray made in the shader (a camera's pixel, a pair's segment) from its start voxel, the
// offset in it, its unit direction and its max distance, as VoxelRay::new makes it.
fn made_ray(voxel: vec3<i32>, sub: vec3<f32>, dir: vec3<f32>, max_distance: f32) -> Ray {
    var ray: Ray;
    ray.voxel = voxel;
    ray.flags = AXIS_NONE << RAY_ENTRY_SHIFT;
    ray.max_distance = max_distance;
    ray.n = vec3<u32>(0u);
    for (var a = 0u; a < 3u; a += 1u) {
        ray = prepare_axis(ray, a, dir[a], sub[a]);
    }
    return ray;
}

// Statuses of a pair's answer besides those of Hit.status: the eyes are too close
// (RayError::ZeroDirection) or too far apart (RayError::MaxDistanceTooLarge).
const STATUS_ZERO_LENGTH: u32 = 4u;
const STATUS_TOO_LONG: u32 = 5u;
const MAX_DISTANCE_CAP: f32 = 65536.0;
const MIN_SQUARED_LENGTH: f32 = 0x1p-60f;

// The unit direction (xyz) and length (w) of a segment whose difference vector is d; a length
// of 0 where the points are too close, -1 where too far apart. Twin of `segment` in
// src/ray.rs: every operation correctly rounded, so every GPU gives its bits.
fn segment(d: vec3<f32>) -> vec4<f32> {
    let sq = pin3(d * d);
    let squared = pin(sq.x + sq.y) + sq.z;
    if (!(squared >= MIN_SQUARED_LENGTH)) {
        return vec4<f32>(0.0);
    }
    let length = sqrt_rn(squared);
    if (length > MAX_DISTANCE_CAP) {
        return vec4<f32>(0.0, 0.0, 0.0, -1.0);
    }
    let r = div_rn(1.0, length);
    return vec4<f32>(d * r, length);
}

// Line of sight between the eyes of a pair of agents: the segment from agent a's eye to agent
// b's, built as VoxelRay::between builds it, cast as cast_rays casts a segment; sets the
// pair's bit where nothing blocks it, and writes its answer with Params.details.
@compute @workgroup_size(64)
fn cast_pairs(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = invocation_index(gid, groups);
    if (i >= params.ray_count || i >= arrayLength(&pairs)) {
        return;
    }
    let pair = pairs[i];
    let a = agents[pair.x];
    let b = agents[pair.y];
    // VoxelRay::between: the voxel difference (exact) plus the offsets' difference.
    let seg = segment(vec3<f32>(b.voxel - a.voxel) + pin3(b.sub - a.sub));
    var h = miss();
    if (seg.w == 0.0) {
        h = make_hit(STATUS_ZERO_LENGTH, a.voxel, 0.0, 0u, AXIS_NONE, false, vec3<u32>(0u));
    } else if (seg.w < 0.0) {
        h = make_hit(STATUS_TOO_LONG, a.voxel, 0.0, 0u, AXIS_NONE, false, vec3<u32>(0u));
    } else {
        h = cast_segment(made_ray(a.voxel, a.sub, seg.xyz, seg.w), params.details != 0u);
    }
    if ((h.status & 15u) == STATUS_MISS) {
        atomicOr(&pair_out[i >> 5u], 1u << (i & 31u));
    }
    if (params.details != 0u) {
        let o = pack_hit(h, a.voxel);
        let at = (params.ray_count + 31u) / 32u + 5u * i;
        atomicStore(&pair_out[at], o.w0);
        atomicStore(&pair_out[at + 1u], o.w1);
        atomicStore(&pair_out[at + 2u], o.w2);
        atomicStore(&pair_out[at + 3u], o.distance);
        atomicStore(&pair_out[at + 4u], o.uv);
    }
}

// ==== Sensors: twins of src/sensors.rs

// A packed rotation's stored components are multiples of this.
const ROTATION_STEP: f32 = 0x1p-19f;

// The rotation matrix (rows) of a packed rotation; twin of `rotation_matrix` in
// src/sensors.rs. The stored components convert exactly (20-bit integers times a power of
// two); the largest is the root of one less their squares, at least 1/2, so every value here is
// 0 or far above the subnormal range (the rig's directions are multiples of 2^-22).
fn rotation_matrix(lo: u32, hi: u32) -> array<vec3<f32>, 3> {
    let largest = lo & 3u;
    let raw = vec3<u32>(lo >> 2u, (lo >> 22u) | (hi << 10u), hi >> 10u) & vec3<u32>(0xFFFFFu);
    let stored = pin3(vec3<f32>(bitcast<vec3<i32>>(raw << vec3<u32>(12u)) >> vec3<u32>(12u)) * ROTATION_STEP);
    let sq = pin3(stored * stored);
    let big = sqrt_rn(pin(1.0 - pin(pin(sq.x + sq.y) + sq.z)));
    var q = vec4<f32>(0.0);
    var next = 0u;
    for (var i = 0u; i < 4u; i += 1u) {
        if (i == largest) {
            q[i] = big;
        } else {
            q[i] = stored[next];
            next += 1u;
        }
    }
    let x = q.x;
    let y = q.y;
    let z = q.z;
    let w = q.w;
    let xx = pin(x * x);
    let yy = pin(y * y);
    let zz = pin(z * z);
    let xy = pin(x * y);
    let xz = pin(x * z);
    let yz = pin(y * z);
    let wx = pin(w * x);
    let wy = pin(w * y);
    let wz = pin(w * z);
    return array<vec3<f32>, 3>(
        pin3(vec3<f32>(1.0 - pin(2.0 * pin(yy + zz)), 2.0 * pin(xy - wz), 2.0 * pin(xz + wy))),
        pin3(vec3<f32>(2.0 * pin(xy + wz), 1.0 - pin(2.0 * pin(xx + zz)), 2.0 * pin(yz - wx))),
        pin3(vec3<f32>(2.0 * pin(xz - wy), 2.0 * pin(yz + wx), 1.0 - pin(2.0 * pin(xx + yy)))),
    );
}

// Rig direction d turned by the rows m; twin of `sensor_dir` in src/sensors.rs:
// (m0 * d.x + m1 * d.y) + m2 * d.z per component, each operation rounded once.
fn sensor_dir(m: array<vec3<f32>, 3>, d: vec3<f32>) -> vec3<f32> {
    let r0 = pin3(m[0] * d);
    let r1 = pin3(m[1] * d);
    let r2 = pin3(m[2] * d);
    return vec3<f32>(pin(r0.x + r0.y) + r0.z, pin(r1.x + r1.y) + r1.z, pin(r2.x + r2.y) + r2.z);
}

// A sensor ray's word (src/sensors.rs, `word`): the distance of a hit, +infinity for a miss,
// the negated distance for unloaded space (the sign bit set, also at 0).
fn sense_word(h: Hit) -> u32 {
    let status = h.status & 15u;
    if (status == STATUS_HIT) {
        return bitcast<u32>(h.distance);
    } else if (status == STATUS_UNLOADED) {
        return bitcast<u32>(h.distance) | 0x80000000u;
    } else if (status == STATUS_MISS) {
        return 0x7F800000u;
    }
    // A walk past the step limit: NaN, which the host reports as an internal error.
    return 0x7FC00000u | status;
}

// Ray k of the rig from the pose of agent a (of the dispatch), made as SensorPose::ray makes
// it and cast as a camera's pixel is.
@compute @workgroup_size(64)
fn cast_sensors(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = invocation_index(gid, groups);
    if (i >= params.ray_count || params.sensor_rays == 0u) {
        return;
    }
    let n = params.sensor_rays;
    let a = i / n;
    let k = i % n;
    if (a >= arrayLength(&poses) || n + k / 4u >= arrayLength(&rig)) {
        return;
    }
    // The rig's ray k in its coherent order, answered at its place in the rig.
    let index = rig[n + k / 4u][k % 4u];
    if (index >= n) {
        return;
    }
    let out = a * n + index;
    let pose = poses[a];
    let r = bitcast<vec4<f32>>(rig[k]);
    let dir = sensor_dir(rotation_matrix(pose.rotation_lo, pose.rotation_hi), r.xyz);
    let ray = made_ray(pose.voxel, pose.sub, dir, r.w);
    // A word needs the status and distance alone: the id and UV only with details.
    let h = finished_if(ray, cast_ray(ray), params.details != 0u);
    if (params.details != 0u) {
        let o = pack_hit(h, pose.voxel);
        sensed[5u * out] = o.w0;
        sensed[5u * out + 1u] = o.w1;
        sensed[5u * out + 2u] = o.w2;
        sensed[5u * out + 3u] = o.distance;
        sensed[5u * out + 4u] = o.uv;
    } else {
        sensed[out] = sense_word(h);
    }
}

// ==== Box casts: twin of `walk` in src/boxcast.rs (the rules in the crate docs, "Box casts")

// What voxel v does to a box: x = 0 nothing, 1 it stops the box (id in y), 2 it counts as
// unloaded (under Stop, or outside the box of chunks a following window holds, whatever the
// policy: the box cannot know what is there).
fn box_voxel(v: vec3<i32>) -> vec2<u32> {
    let stop_unloaded = (OPTIONS & FLAG_STOP_UNLOADED) != 0u;
    let unloaded = vec2<u32>(select(0u, 2u, stop_unloaded), 0u);
    if ((OPTIONS & FLAG_PARTIAL) != 0u && !held(v)) {
        return vec2<u32>(2u, 0u);
    }
    if (!in_window(v)) {
        return unloaded;
    }
    let e = table_entry(v);
    let tag = e & TAG_MASK;
    if (tag == TAG_UNLOADED) {
        return unloaded;
    } else if (tag == TAG_EMPTY) {
        return vec2<u32>(0u);
    }
    var id = e & 0xFFFFu;
    if (tag != TAG_UNIFORM) {
        let l = bitcast<vec3<u32>>(v & vec3<i32>(31));
        if (((occupancy[e * OCC_WORDS + (l.y | (l.z << 5u))] >> l.x) & 1u) == 0u) {
            return vec2<u32>(0u);
        }
        id = slot_id(e, l);
    }
    if (id != 0u && stops(id)) {
        return vec2<u32>(1u, id);
    }
    return vec2<u32>(0u);
}

// Whether voxel v, by rule 6's key (`kind`: how many new layers hold it, 1 a face, 2 an edge,
// 3 a corner; the rank of its face's axis; then x, y, z), comes before the best one so far
// (`best`: its kind and rank; `at`: its voxel; none when `found` is false).
fn box_before(kind: u32, rank: u32, v: vec3<i32>, found: bool, best: vec2<u32>, at: vec3<i32>) -> bool {
    if (!found) {
        return true;
    }
    if (kind != best.x) {
        return kind < best.x;
    }
    if (rank != best.y) {
        return rank < best.y;
    }
    if (v.x != at.x) {
        return v.x < at.x;
    }
    if (v.y != at.y) {
        return v.y < at.y;
    }
    return v.z < at.z;
}

fn box_bit(b: GpuBox, shift: u32, a: u32) -> bool {
    return ((b.flags >> (shift + a)) & 1u) != 0u;
}

fn box_rank(b: GpuBox, a: u32) -> u32 {
    return (b.flags >> (BOX_RANKS_SHIFT + 2u * a)) & 3u;
}

fn box_lead_t(b: GpuBox, a: u32, n: u32) -> f32 {
    if (!box_bit(b, BOX_LEAD_ON_SHIFT, a)) {
        return T_DISABLED;
    }
    return crossing_t(b.lead_b[a], b.inv[a], n);
}

fn box_trail_t(b: GpuBox, a: u32, n: u32) -> f32 {
    if (!box_bit(b, BOX_TRAIL_ON_SHIFT, a)) {
        return T_DISABLED;
    }
    return crossing_t(b.trail_b[a], b.inv[a], n);
}

// The voxels from the trailing face's to the leading face's on axis a, as (lo, hi).
fn box_span(b: GpuBox, a: u32, trail: i32, lead: i32) -> vec2<i32> {
    if (box_bit(b, BOX_NEGATIVE_SHIFT, a)) {
        return vec2<i32>(lead, trail);
    }
    return vec2<i32>(trail, lead);
}

// Whether the box lo..=hi lies outside the window on an axis along which it does not move
// towards it: under Air nothing there stops it (`leaves` in src/boxcast.rs, which asks the
// occupied bounds; the window holds them, and between the two everything is air).
fn box_leaves(b: GpuBox, lo: vec3<i32>, hi: vec3<i32>) -> bool {
    let size = vec3<i32>(params.dims) * 32;
    for (var a = 0u; a < 3u; a++) {
        let moving = box_bit(b, BOX_MOVING_SHIFT, a);
        let down = box_bit(b, BOX_NEGATIVE_SHIFT, a);
        if ((lo[a] >= size[a] && (!moving || !down)) || (hi[a] < 0 && (!moving || down))) {
            return true;
        }
    }
    return false;
}

fn box_step(b: GpuBox, a: u32) -> i32 {
    return select(1, -1, box_bit(b, BOX_NEGATIVE_SHIFT, a));
}

// Lane a of a vector, as a mask: the box walk writes one axis of its vectors with `select`,
// not by a dynamic index.
fn axis_mask(a: u32) -> vec3<bool> {
    return vec3<u32>(0u, 1u, 2u) == vec3<u32>(a);
}

// Loop iterations one box cast may count under FLAG_LOOP_BUDGET: Mesa's llvmpipe (lavapipe) ends
// every loop of a shader once its loops have run 65535 iterations in all for the group of (at
// most 8) invocations it runs together (LP_MAX_TGSI_LOOP_ITERATIONS), which would leave a
// walk half done. A group's count is at most the sum of its invocations' own, each kept below
// an eighth (8191): the count with a step's voxel loops added is checked before they run, and
// what runs before the next check (that loop's own 16 and the trailing faces' few) stays
// within the margin. A cast that needs more ends as STATUS_RUNAWAY, which the host reports as
// GpuError::BoxCastTooLong.
const BOX_LOOP_BUDGET: u32 = 8064u;

// The walk of one box cast. It counts every loop iteration it runs (`iterations`), and spends
// one per voxel it looks at and a few per crossing. It ends without a step limit: every
// crossing lies farther than the last, and the last within max distance.
fn cast_box(b: GpuBox) -> Hit {
    let report = (OPTIONS & FLAG_ORIGIN_MASK) == ORIGIN_REPORT;
    let partial = (OPTIONS & FLAG_PARTIAL) != 0u;
    let ranks = vec3<u32>(box_rank(b, 0u), box_rank(b, 1u), box_rank(b, 2u));
    var lo = b.trail;
    var hi = b.lead;
    var lead = b.lead;
    var n_lead = vec3<u32>(0u);
    var n_trail = vec3<u32>(0u);
    var pending = vec3<bool>(false);
    var t_lead = vec3<f32>(T_DISABLED);
    for (var a = 0u; a < 3u; a++) {
        if (box_bit(b, BOX_MOVING_SHIFT, a)) {
            let m = axis_mask(a);
            let on_plane = box_bit(b, BOX_ON_PLANE_SHIFT, a);
            pending = pending | (m & vec3<bool>(on_plane));
            let l = select(b.lead[a], b.lead[a] - box_step(b, a), on_plane);
            lead = select(lead, vec3<i32>(l), m);
            let s = box_span(b, a, b.trail[a], l);
            lo = select(lo, vec3<i32>(s.x), m);
            hi = select(hi, vec3<i32>(s.y), m);
            t_lead = select(t_lead, vec3<f32>(select(box_lead_t(b, a, 0u), 0.0, on_plane)), m);
        }
    }
    // Rule 4: the voxels touched at the start, where they can end the cast: a stopping voxel
    // under Report, an unloaded one under Stop or outside a following window's box.
    var iterations = 0u;
    let stop_unloaded = (OPTIONS & FLAG_STOP_UNLOADED) != 0u;
    if ((report || stop_unloaded || partial) && all(lo <= hi)) {
        var s_found = false;
        var s_voxel = vec3<i32>(0);
        var s_id = 0u;
        var u_found = false;
        var u_voxel = vec3<i32>(0);
        for (var z = lo.z; z <= hi.z; z++) {
            iterations += 2u;
            for (var y = lo.y; y <= hi.y; y++) {
                iterations += 2u;
                for (var x = lo.x; x <= hi.x; x++) {
                    iterations++;
                    let v = vec3<i32>(x, y, z);
                    let what = box_voxel(v);
                    if (what.x == 1u && box_before(0u, 0u, v, s_found, vec2<u32>(0u), s_voxel)) {
                        s_found = true;
                        s_voxel = v;
                        s_id = what.y;
                    } else if (what.x == 2u && box_before(0u, 0u, v, u_found, vec2<u32>(0u), u_voxel)) {
                        u_found = true;
                        u_voxel = v;
                    }
                }
            }
        }
        if ((OPTIONS & FLAG_LOOP_BUDGET) != 0u && iterations > BOX_LOOP_BUDGET) {
            return make_hit(STATUS_RUNAWAY, vec3<i32>(0), 0.0, 0u, AXIS_NONE, false, vec3<u32>(0u));
        }
        if (s_found && report) {
            return make_hit(STATUS_HIT, s_voxel, 0.0, s_id, AXIS_NONE, false, vec3<u32>(0u));
        }
        if (u_found) {
            return make_hit(STATUS_UNLOADED, u_voxel, 0.0, 0u, AXIS_NONE, false, vec3<u32>(0u));
        }
    }
    var result = miss();
    loop {
        // This loop's iteration, the three passes of each loop over the axes below and one
        // more each for the voxel loops' ends.
        iterations += 16u;
        if ((OPTIONS & FLAG_LOOP_BUDGET) != 0u && iterations > BOX_LOOP_BUDGET) {
            result = make_hit(STATUS_RUNAWAY, vec3<i32>(0), 0.0, 0u, AXIS_NONE, false, vec3<u32>(0u));
            break;
        }
        let t = min(min(t_lead.x, t_lead.y), t_lead.z);
        if (t > b.max_distance) {
            break;
        }
        if ((OPTIONS & FLAG_STOP_UNLOADED) == 0u && !partial && box_leaves(b, lo, hi)) {
            break;
        }
        var entered = 0u;
        var off_world = false;
        for (var a = 0u; a < 3u; a++) {
            if (t_lead[a] == t) {
            entered |= 1u << a;
            let m = axis_mask(a);
            var n = n_lead[a];
            var l = b.lead[a];
            if (!pending[a]) {
                n += 1u;
                l = b.lead[a] + box_step(b, a) * i32(n);
            }
            pending = pending & !m;
            n_lead = select(n_lead, vec3<u32>(n), m);
            lead = select(lead, vec3<i32>(l), m);
            off_world = off_world || beyond_world(select(vec3<i32>(0), vec3<i32>(l), m));
            t_lead = select(t_lead, vec3<f32>(box_lead_t(b, a, n)), m);
            }
        }
        if (off_world) {
            break;
        }
        for (var a = 0u; a < 3u; a++) {
            if (box_bit(b, BOX_MOVING_SHIFT, a)) {
                let m = axis_mask(a);
                var n = n_trail[a];
                while (box_trail_t(b, a, n) <= t) {
                    n += 1u;
                    iterations++;
                }
                n_trail = select(n_trail, vec3<u32>(n), m);
                let s = box_span(b, a, b.trail[a] + box_step(b, a) * i32(n), lead[a]);
                lo = select(lo, vec3<i32>(s.x), m);
                hi = select(hi, vec3<i32>(s.y), m);
            }
        }
        // The iterations the new layers' voxel loops will count (as they count them below).
        var layers = 0u;
        for (var a = 0u; a < 3u; a++) {
            if (((entered >> a) & 1u) != 0u) {
                let span = select(hi, lead, axis_mask(a)) - select(lo, lead, axis_mask(a)) + 1;
                let d = vec3<u32>(max(span, vec3<i32>(0)));
                layers += d.z * 2u + d.z * d.y * 2u + d.z * d.y * d.x;
            }
        }
        if ((OPTIONS & FLAG_LOOP_BUDGET) != 0u && iterations + layers > BOX_LOOP_BUDGET) {
            result = make_hit(STATUS_RUNAWAY, vec3<i32>(0), 0.0, 0u, AXIS_NONE, false, vec3<u32>(0u));
            break;
        }
        // Rules 5 and 6: the voxels of the new layers.
        let in_layer = ((vec3<u32>(entered) >> vec3<u32>(0u, 1u, 2u)) & vec3<u32>(1u)) != vec3<u32>(0u);
        var s_found = false;
        var s_key = vec2<u32>(0u);
        var s_voxel = vec3<i32>(0);
        var s_id = 0u;
        var s_axis = 0u;
        var u_found = false;
        var u_key = vec2<u32>(0u);
        var u_voxel = vec3<i32>(0);
        for (var a = 0u; a < 3u; a++) {
            if (((entered >> a) & 1u) != 0u) {
            let slo = select(lo, lead, axis_mask(a));
            let shi = select(hi, lead, axis_mask(a));
            for (var z = slo.z; z <= shi.z; z++) {
                iterations += 2u;
                for (var y = slo.y; y <= shi.y; y++) {
                    iterations += 2u;
                    for (var x = slo.x; x <= shi.x; x++) {
                        iterations++;
                        let v = vec3<i32>(x, y, z);
                        // The axes whose new layer holds v; v was seen with an earlier one's.
                        let mine = in_layer & (v == lead);
                        let earlier = any(mine & (vec3<u32>(0u, 1u, 2u) < vec3<u32>(a)));
                        let kind = u32(mine.x) + u32(mine.y) + u32(mine.z);
                        // The axis of lowest rank among those whose layer holds v (written out:
                        // every loop iteration counts against llvmpipe's budget, see cast_box).
                        let r = select(vec3<u32>(3u), ranks, mine);
                        var axis = 0u;
                        if (r.y < r[axis]) {
                            axis = 1u;
                        }
                        if (r.z < r[axis]) {
                            axis = 2u;
                        }
                        let rank = r[axis];
                        if (!earlier) {
                            let what = box_voxel(v);
                            if (what.x == 1u && box_before(kind, rank, v, s_found, s_key, s_voxel)) {
                                s_found = true;
                                s_key = vec2<u32>(kind, rank);
                                s_voxel = v;
                                s_id = what.y;
                                s_axis = axis;
                            } else if (what.x == 2u && box_before(kind, rank, v, u_found, u_key, u_voxel)) {
                                u_found = true;
                                u_key = vec2<u32>(kind, rank);
                                u_voxel = v;
                            }
                        }
                    }
                }
            }
            }
        }
        if (s_found) {
            result = make_hit(STATUS_HIT, s_voxel, t, s_id, s_axis, box_bit(b, BOX_NEGATIVE_SHIFT, s_axis), vec3<u32>(0u));
            break;
        }
        if (u_found) {
            result = make_hit(STATUS_UNLOADED, u_voxel, t, 0u, AXIS_NONE, false, vec3<u32>(0u));
            break;
        }
    }
    return result;
}

@compute @workgroup_size(64)
fn cast_boxes(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = invocation_index(gid, groups);
    if (i >= params.ray_count || i >= arrayLength(&boxes)) {
        return;
    }
    let b = boxes[i];
    box_hits[i] = pack_hit(cast_box(b), b.lead);
}
