//! # voxcast
//!
//! Exact voxel raycasting in i128 worlds: "what does this ray hit first?" for one query on the
//! CPU, or for millions at once on the GPU (wgpu compute), with the same answer bit for bit.
//!
//! ```
//! use voxcast::{voxel_raycast, VoxelId, VoxelRay, VoxelWorld, WorldPos, glam::Vec3};
//! let mut world = VoxelWorld::new();
//! world.set_voxel(WorldPos::new(3, 3, 0), VoxelId(1));
//! let ray = VoxelRay::new(WorldPos::ZERO, Vec3::new(0.5, 0.5, 0.5), Vec3::new(1.0, 1.0, 0.0), 16.0)?;
//! let hit = voxel_raycast(&ray, &world).expect("the diagonal reaches (3, 3, 0)");
//! assert_eq!(hit.voxel_pos, WorldPos::new(3, 3, 0));
//! # Ok::<(), voxcast::RayError>(())
//! ```
//!
//! ## Coordinates
//! A [`WorldPos`] is a voxel; the voxel covers `[p, p + 1)` on each axis. A ray starts at
//! `origin + sub_offset` with `sub_offset` in `[0, 1)³`. Chunks are 32³ voxels; the chunk of
//! a voxel is `p >> 5` and its local position `p & 31` (floor-correct: world `-1` is chunk `-1`,
//! local `31`). Nothing is ever converted to an absolute float position, so precision is the
//! same at the origin and at `2^120`.
//!
//! ## The DDA (one definition for CPU and GPU)
//! Per axis with direction component `d`:
//! - `d == 0` (either sign of zero): the axis never crosses a boundary; it is disabled. An axis
//!   whose first crossing lies beyond max distance is disabled too, so no infinity, NaN or
//!   denormal ever reaches the arithmetic.
//! - Start voxel: the origin voxel, except when the start point lies exactly on its low face
//!   and `d < 0`: then the voxel below. The ray is in the voxel that holds `p(t)` for small
//!   `t > 0`.
//! - First crossing `b = 1 - sub` (`d > 0`), `sub` (`d < 0`), or `1` in the face case above.
//! - `inv = 1 / |d|`, once, in f32: on the host, or in the shader's `prepare_axis` for camera
//!   rays made there (the same correctly rounded f32 division, so the same bits).
//! - The `n`-th crossing is at `t = (b + n) · inv` in f32, computed from `n`, never
//!   accumulated. Skipping empty chunks and bricks, clipping to the loaded world and the GPU
//!   all land on the same counts and so the same bits.
//! - Each step takes the axis with the smallest next crossing; ties go to x, then y, then z.
//! - A crossing beyond max distance ends the ray as a miss; a hit at exactly max distance
//!   counts. Stepping past the edge of the i128 world ends it as a miss.
//! - A hit reports the voxel, the entry face's outward normal (zero for the origin voxel), the
//!   entry distance, the voxel's id and the entry point's UV on that face.
//!
//! [`OriginPolicy`] says what happens when the ray starts in a stopping voxel,
//! [`MaterialFilter`] which ids stop it, [`UnloadedPolicy`] what unloaded chunks do. Under
//! [`UnloadedPolicy::Air`] nothing outside the occupied bounds (the chunks that hold anything
//! but air, [`VoxelWorld::occupied_bounds`]) can stop a ray, so a ray ends as a miss where it
//! leaves them (and a ray from outside is clipped to them exactly), whatever its max distance.
//!
//! ## Shapes (blocks that are not cubes)
//! A world can give a voxel id a [`BlockShape`] ([`VoxelWorld::set_shape`]): the full cube
//! (every id's, unless set), [`BlockShape::Empty`] (rays pass), or up to
//! [`MAX_SHAPE_BOXES`] axis-aligned boxes with bounds on a 1/16 grid ([`ShapeBox`]: a slab,
//! stairs, a fence with its arms, a torch). A stopping voxel with boxes stops a ray only where
//! the ray meets one of them, by the DDA's own rule with a fractional count: the plane `k/16`
//! along the ray's travel in the voxel entered after `m` crossings lies at
//! `(b + (16·(m − 1) + k)/16) · inv` in f32 (`k = 0` and `16` are the voxel's own crossings,
//! bit for bit), so the CPU and the GPU agree bit for bit here too.
//! - Per box, `t_in` is the largest near-face distance (ties to the higher axis, the face a
//!   cube's walk reports at an edge), `t_out` the smallest far-face distance; on an axis the
//!   ray does not move on, the ray lies in the box when `16 − hi < 16·b ≤ 16 − lo` (`b` the
//!   DDA's offset from the voxel's high face). The ray meets the box when `t_in ≤ t_out` and
//!   `t_out > 0` (grazing counts), at `max(t_in, 0)` within max distance; the nearest box
//!   wins, equal distances the earlier box.
//! - The hit reports the voxel, the met face's normal (zero, with UV zero, where the ray
//!   starts inside a box), the distance, the id, and the UV of the hit point in the voxel's
//!   face coordinates. On an axis the ray crosses no voxel face of within max distance, the
//!   box planes use `1 / |d|` rounded once.
//! - Origin policies: a ray starts inside a solid only when it starts inside one of the
//!   voxel's boxes. `ExitSolid` treats the rest of a voxel it starts (or enters) inside a box
//!   as solid; `SkipOriginVoxel` skips the whole origin voxel, as for a cube.
//! - Conservative line of sight tests the voxels beside an edge or corner as whole cubes
//!   (an empty shape as air), so it never sees through a crack a shape could close.
//! - Box casts ([`box_cast`]) meet a shaped voxel where the moving box first overlaps one of
//!   its boxes (rule 10 below), so a character controller stands on a slab's top and climbs it
//!   with a half-voxel [`SlideOptions::step_up`].
//! - A shape of the one box `[0, 16]³` answers exactly as the cube does; a world without
//!   shapes runs the cube code alone (the GPU compiles its shape code only for worlds that
//!   have shapes).
//!
//! ## Box casts (one definition, [`box_cast`])
//! A box cast moves an axis-aligned box along a straight line and answers where it first
//! touches a stopping voxel; [`collide_and_slide`] moves a box as a character controller does.
//! The rules, each named in `tests/README.md` with its tests:
//!
//! 1. **The box.** A center ([`WorldPos`] plus an offset) and half extents `h` in voxels, each in
//!    `0..=MAX_HALF_EXTENT` (a subnormal half extent counts as 0). On each axis its faces are
//!    the center's offset minus and plus `h`, each rounded to f32 once and split into a voxel and
//!    a fraction in `[0, 1)` as a ray's origin is (a fraction that rounds to 1 moves to the next
//!    voxel's face, one between 0 and `2^-64` counts as `2^-64`). Everything after that is exact.
//! 2. **Touching.** The box touches a voxel when the open box overlaps the open voxel on every
//!    axis: sharing a face, an edge or a corner is not touching. On an axis where `h` is 0 the box
//!    is flat and covers the voxel a ray from its center is in (the DDA's start voxel rule), so a
//!    box of zero extents is a ray, except within `2^-64` of a face (rule 1) and where the ray
//!    passes exactly through an edge or a corner: the DDA then visits a voxel beside it (it crosses tied planes one at a time) that
//!    the box only grazes, and enters the next through the face it crosses last, where rule 6
//!    picks the fastest axis.
//! 3. **Moving.** On a moving axis the leading face and the trailing face are two rays of the
//!    box's direction; each crosses voxel planes at the DDA's distances `(b + n) · inv`, from its
//!    own counts, never accumulated. The box covers, just after a distance `t`, the voxels from
//!    the trailing face's voxel to the leading face's voxel. A leading face that starts exactly
//!    on a plane enters the layer beyond it at distance 0.
//! 4. **The start.** When the box touches a stopping voxel at its start, the answer is
//!    [`BoxCastOutcome::StartsInside`] under [`OriginPolicy::Report`]; under the other origin
//!    policies the voxels the box touches at its start never stop it (so a box can move out of
//!    a wall it was put into).
//! 5. **Contact.** Moving, the box can only touch new voxels where a leading face enters a new
//!    layer. At the first such distance (within max distance, a contact at exactly max distance
//!    counts) where a new voxel stops it, the cast ends: `distance` is that crossing's f32
//!    distance, the same bits however the box got there.
//! 6. **Which voxel, which face.** Several voxels can be touched at that distance. A voxel
//!    reached through one face (in the new layer of one axis) is preferred to one reached
//!    through an edge (two axes at once), and that to one reached through a corner. The face
//!    normal is that of the axis whose layer the voxel is in; for an edge or a corner, the axis
//!    along which the box moves fastest (largest `|direction|` component), so that a slide drops
//!    the largest component; equal components go to z, then y, then x (the face a ray's DDA
//!    reports at a corner, which it crosses in the order x, y, z). Among equals, the lowest
//!    voxel (x, then y, then z).
//! 7. **Unloaded chunks.** Under [`UnloadedPolicy::Air`] they are air. Under
//!    [`UnloadedPolicy::Stop`] a touched unloaded voxel ends the cast as
//!    [`BoxCastOutcome::Unloaded`] (at distance 0 when the box starts touching one), unless a
//!    stopping voxel is touched at the same distance, which wins; the voxel is chosen as in 6.
//! 8. **Edges.** A box whose faces lie outside the i128 world is invalid (a high face exactly on
//!    the world's top face too: faces are voxel coordinates); a moving box whose leading face
//!    would leave it ends as a miss, also one that starts on its bottom face moving down. Nothing can stop a box outside the occupied
//!    bounds under `Air`, so the cast ends as a miss there, whatever its max distance.
//! 9. **Bad input.** A cast is checked as a ray from its center is (direction, offset, max
//!    distance), plus its half extents; a bad one is [`BoxCastOutcome::Invalid`], never a panic,
//!    and in a batch only that cast.
//! 10. **Shapes.** A stopping voxel with a [`BlockShape`] of boxes is touched where the open box
//!     overlaps one of its open boxes (an empty shape is air). On an axis the box moves on, its
//!     leading face crosses a box's near plane and its trailing face the far plane at the
//!     shapes' distances `(b + (16·(m − 1) + k)/16) · inv`, each face from its own first voxel
//!     (`m` counts that face's crossings), so a box's face at `k = 0` or `16` is the voxel's
//!     crossing bit for bit; the box overlaps the shape's box from the last near crossing to
//!     the first far crossing. A flat box on a near plane has passed it, as a ray's start lies
//!     in the voxel it moves into. On an axis it does not move on, its faces' places are
//!     compared with the box's exactly (a flat box holds `lo ≤ 16·f < hi`, `f` its place in the
//!     voxel). The contact is the first such overlap: its distance is that last near crossing,
//!     its face the axis of that crossing (among several at once, rule 6's order), and it
//!     competes with every other contact by distance and then by rule 6's key. Rule 4 counts a
//!     shaped voxel as touched at the start only where the box overlaps one of its boxes then;
//!     one it overlaps only as a cube stops it later like any other. A shape of the one full
//!     box is the cube, under every option.
//!
//! ## Parity contract
//! For every valid ray the GPU gives the CPU reference's outcome, voxel, face normal and id,
//! and the same distance bit for bit; UV may differ by `1e-5`. The same holds for every valid
//! box cast (`gpu::BoxCasts` against [`box_cast_batch`]).
//!
//! On a window that follows a center (`gpu::GpuRaycaster::upload_window`), which holds a box of
//! the world's chunks, this holds for every ray that stays in the box. A ray that leaves the
//! box before anything in it stops the ray is answered `Unloaded` at the first voxel outside
//! the box, at the distance where it enters that voxel (the CPU's distance to that voxel, bit
//! for bit), under either unloaded policy; a ray that starts outside the box, `Unloaded` at its
//! start voxel, distance 0. `gpu::GpuWorld::left_window` tells these answers from the others,
//! and the completing forms (`gpu::Rays::complete`,
//! `gpu::Sightlines::complete`) replace them with the CPU's answers on the whole world.
//!
//! This holds on every GPU that follows the WGSL spec and rounds f32 `+ - *` to nearest even
//! (every current desktop and mobile GPU does). Nothing else is assumed: the spec lets a GPU
//! divide and take roots a few ulps off, flush subnormals to zero, fuse `a * b + c` into one
//! rounding and regroup sums and products, and the shader gives those freedoms nothing to
//! change. It uses no f32 division or root (camera rays made in the shader divide and take the
//! root with integer arithmetic, correctly rounded as the CPU's IEEE operations are), keeps
//! every product that feeds a sum, and every sum that feeds a sum, behind a barrier no compiler
//! can see through, and never makes a subnormal value. `shaders/exact.wgsl` states the rules.
//!
//! `tests/README.md` names the tests that check each rule of this page. How the contract is
//! tested, on Mesa's lavapipe in CI (which takes none of those freedoms itself):
//! - the parity suite compares the GPU with the CPU ray by ray: over a million random rays
//!   and an adversarial set (integer and half-integer origins, axis-aligned and 45° rays, zero
//!   components, chunk faces, negative coordinates, the edges of `i128`, max distance 0, rays
//!   starting in solid), camera images, line of sight under every option;
//! - the same suite runs against shader variants that take each freedom the spec gives
//!   (divisions and roots one and three ulps off either way, fused multiply-adds, regrouped
//!   sums and products, flushed subnormals), generated from the shader's own IR by
//!   `spec_variants` (cargo feature `spec-variants`); they must give the same answers;
//! - `spec_variants::check_exact` follows every f32 value of the shader through variables,
//!   fields and calls and fails on any operation a freedom could change;
//! - the correctly rounded division and root are checked on every significand, from hints up
//!   to 40 ulps off.
//!
//! On a real device, creating a `gpu::GpuRaycaster` runs a self-check: a few thousand rays
//! and a small camera image against the CPU reference. A device that differs (one whose
//! arithmetic breaks the assumption above, or a driver bug) fails creation with
//! `gpu::GpuError::SelfCheckFailed`, unless the caller allows it with
//! `gpu::SelfCheck::AllowUnverified`; `gpu::GpuRaycaster::self_check` says what it found.
//!
//! ## The API
//! Every item has one path: the CPU side at the crate root, the GPU side in `voxcast::gpu`.
//! Every query takes its arguments in one order, the query, then the world, then the options,
//! as [`voxel_raycast`]`(ray, world)` does: [`raycast_batch`]`(rays, world, opts)` on the CPU,
//! `gpu.cast(Rays(rays), gpu_world, opts)` on the GPU. Each GPU query kind is the twin of a
//! CPU call and says so in its name's documentation (`gpu::Rays` of [`raycast_batch`],
//! `gpu::Sightlines` of [`line_of_sight_batch`], `gpu::CameraImage` of [`raycast_camera`],
//! `gpu::AgentPairs` of [`agent_visibility`], `gpu::PairsWithin` of [`visible_pairs_within`],
//! `gpu::SensorSweep` of [`sense`], `gpu::BoxCasts` of [`box_cast_batch`]); a name without
//! `batch` ([`line_of_sight`], [`box_cast`]) answers one query. Sensors cast a
//! [`SensorRig`]'s rays (directions in an agent's frame) from a [`SensorPose`] per agent:
//! [`sense`]`(rig, poses, world, opts, outcomes)` on the CPU, and
//! `gpu.cast(SensorSweep { rig, poses, outcomes }, gpu_world, opts)` with the rays made in the
//! shader. [`LidarEffects::scan`] turns either's readings into a real LiDAR's returns (one of
//! a beam's sub-rays picked, intensity, range noise, dropout), the same from both engines.
//!
//! ## Cargo features
//! - `gpu` (default): the `gpu` module, the batch raycaster on wgpu. Without it
//!   (`default-features = false`) voxcast is the CPU raycaster alone and builds neither wgpu
//!   nor naga.
//! - `spec-variants`: the `spec_variants` module, shader variants that take each freedom the
//!   WGSL spec gives and the lint that checks the shader against them (implies `gpu`).

mod aabb;
mod agents;
mod blocks;
mod boxcast;
mod camera;
mod coords;
mod cpu_ref;
#[cfg(feature = "gpu")]
pub mod gpu;
mod grid;
mod lidar;
mod ray;
mod sensors;
#[cfg(feature = "spec-variants")]
pub mod spec_variants;
mod world;

pub use glam;

pub use aabb::{ray_aabb, ray_aabb_f64};
pub use agents::{Agent, agent_segment, agent_visibility, pairs_within, visible_pairs_within};
pub use blocks::{EditError, break_block, place_block};
pub use boxcast::{
    BoxBody, BoxCast, BoxCastError, BoxCastOutcome, BoxHit, MAX_HALF_EXTENT, Slide, SlideOptions,
    box_cast, box_cast_batch, collide_and_slide,
};
pub use camera::{Camera, CameraError, CameraSpec};
pub use coords::{CHUNK_EDGE, CHUNK_VOLUME, ChunkPos, LocalPos, VoxelBox, WorldPos};
pub use cpu_ref::{
    TraversalStep, VoxelTraversal, line_of_sight, line_of_sight_batch, line_of_sight_batch_into,
    line_of_sight_window_batch_into, raycast_batch, raycast_batch_into, raycast_batch_serial_into,
    raycast_camera, raycast_camera_into, raycast_camera_rows_into, raycast_window_batch_into,
    voxel_raycast, voxel_raycast_with,
};
pub use grid::{GridCell, GridError, GridTraversal, GridTraversal2D, GridTraversal3D};
pub use lidar::{LidarBeam, LidarEffects, LidarError, LidarReturn};
pub use ray::{
    LineOfSight, LineOfSightOptions, MAX_DISTANCE_CAP, MaterialFilter, OriginPolicy, RayError,
    RaycastOptions, RaycastOutcome, UV_TOLERANCE, UnloadedPolicy, VoxelRay, VoxelRaycastHit,
    WindowHit, WindowOutcome, WindowRay,
};
pub use sensors::{
    MAX_RIG_RAYS, SensorPose, SensorReading, SensorReadings, SensorRig, SensorRigError, sense,
    sense_into,
};
pub use world::{
    BRICK_EDGE, BlockShape, Chunk, MAX_SHAPE_BOXES, SHAPE_GRID, ShapeBox, ShapeError, ShapeTable,
    VoxelId, VoxelWorld, WorldError,
};

/// The items most programs use, and glam's vector types: `use voxcast::prelude::*;`.
pub mod prelude {
    pub use crate::{
        Agent, BoxCast, BoxCastError, BoxCastOutcome, BoxHit, Camera, ChunkPos, EditError,
        LineOfSight, LineOfSightOptions, LocalPos, MAX_DISTANCE_CAP, MaterialFilter, OriginPolicy,
        RayError, RaycastOptions, RaycastOutcome, SensorPose, SensorReading, SensorRig, Slide,
        SlideOptions, UnloadedPolicy, VoxelId, VoxelRay, VoxelRaycastHit, VoxelWorld, WorldPos,
        box_cast, break_block, collide_and_slide, line_of_sight, line_of_sight_batch, place_block,
        raycast_batch, sense, voxel_raycast, voxel_raycast_with,
    };
    pub use glam::{IVec3, Vec3};
}

/// The code blocks of `README.md`, compiled (and, where they need no GPU, run) as doctests so
/// that the README cannot drift from the API.
#[cfg(all(doctest, feature = "gpu"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
