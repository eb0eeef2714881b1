//! voxcast in the browser: the demo page's WebAssembly module and the parity suite it runs.
//!
//! Built for `wasm32-unknown-unknown` by `scripts/web.sh build` (with `wasm-bindgen`), the
//! module renders the standard terrain with one WebGPU batch a frame, checks it against the
//! CPU reference compiled into the same module, and falls back to that reference where the
//! browser has no WebGPU. On the web voxcast starts no thread and never blocks: the browser's
//! event loop drives the device and each batch is awaited (`gpu::Driver::Host`). The CPU
//! reference runs on the page's one thread (its batch calls are rayon loops, which run on the
//! calling thread where the page has no worker threads).
//!
//! [`suite`] builds and runs natively too: `cargo run -p voxcast-web --example digest` prints
//! the digest of its CPU answers, which the page's own run must equal.

pub mod suite;

#[cfg(target_arch = "wasm32")]
mod page;
