//! voxcast's test fixtures, shared by its tests, examples, benches and fuzz targets and by the
//! Bevy crate's tests; never published.
//!
//! - [`scene`]: the deterministic scenes and ray sets (the standard terrain, the sparse world)
//!   that tests and BENCHMARKS.md's workloads are built from;
//! - [`common`]: helpers of the integration tests (rays, small worlds, printing a ray);
//! - [`gpu`] (feature `gpu`): the shared raycaster with the CI switch, ray-by-ray parity checks;
//! - [`boxes`]: the box casts' brute-force oracle and its judge;
//! - [`fuzz`]: the fuzz targets' bodies and the brute-force oracle they judge answers by;
//! - [`peers`] (feature `peers`): the bench report's workloads and one adapter per engine;
//! - [`demo`] (feature `gpu`) and [`shading`]: the examples' GPU set-up and pictures.

pub mod boxes;
pub mod common;
// The GPU helpers wait for the device: native only (voxcast's blocking calls).
#[cfg(all(feature = "gpu", not(target_arch = "wasm32")))]
pub mod demo;
pub mod fuzz;
#[cfg(all(feature = "gpu", not(target_arch = "wasm32")))]
pub mod gpu;
#[cfg(feature = "peers")]
pub mod peers;
pub mod scene;
pub mod shading;

pub use scene::SplitMix64;
