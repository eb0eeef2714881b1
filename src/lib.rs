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
//! ## Parity contract
//! For every valid ray the GPU gives the CPU reference's outcome, voxel, face normal and id,
//! and the same distance bit for bit; UV may differ by `1e-5`. The parity tests check this on
//! Mesa's lavapipe, ray by ray.

pub mod aabb;
pub mod camera;
pub mod coords;
pub mod cpu_ref;
pub mod gpu;
pub mod grid;
mod packed_ids;
pub mod ray;
pub mod scene;
pub mod world;

pub use glam;

pub use aabb::ray_aabb;
pub use camera::{Camera, CameraError};
pub use coords::{CHUNK_EDGE, CHUNK_VOLUME, ChunkPos, LocalPos, VoxelBox, WorldPos};
pub use cpu_ref::{
    TraversalStep, VoxelTraversal, line_of_sight, line_of_sight_batch, line_of_sight_batch_into,
    raycast_batch, raycast_batch_into, raycast_camera, raycast_camera_into,
    raycast_camera_rows_into, voxel_raycast, voxel_raycast_with,
};
pub use grid::{GridCell, GridError, GridTraversal, GridTraversal2D, GridTraversal3D};
pub use ray::{
    LineOfSight, LineOfSightOptions, MAX_DISTANCE_CAP, MaterialFilter, OriginPolicy, PreparedRay,
    RayError, RaycastOptions, RaycastOutcome, UV_TOLERANCE, UnloadedPolicy, VoxelRay,
    VoxelRaycastHit,
};
pub use world::{BRICK_EDGE, Chunk, VoxelId, VoxelWorld, WorldError, break_block, place_block};

/// The code blocks of `README.md`, compiled (and, where they need no GPU, run) as doctests so
/// that the README cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
