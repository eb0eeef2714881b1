//! The bodies of voxcast's fuzz targets, and what they check against.
//!
//! Each target module has one entry point, `run(data: &[u8])`, that decodes the bytes (with
//! `arbitrary`) into voxcast inputs, runs the public API on them and panics with a message
//! naming the input when an answer is wrong. `cargo fuzz` calls it from `fuzz/fuzz_targets/`;
//! the stable test `tests/fuzz_replay.rs` calls it on every file of `fuzz/corpus/<target>/`
//! and `fuzz/regressions/<target>/`.
//!
//! Answers are judged by [`oracle`], which knows nothing of the DDA: it intersects the ray with
//! every voxel and chunk box of a [`model::Model`] of the world (the slab test, in f64) and
//! accepts any of the answers that are tied within the f32 arithmetic's reach.

pub mod boxcast;
pub mod camera;
pub mod edits;
#[cfg(all(feature = "gpu", not(target_arch = "wasm32")))]
pub mod gpu;
pub mod grid;
pub mod input;
pub mod model;
pub mod oracle;
pub mod raycast;
pub mod shapes;
pub mod validate;
pub mod walk;
