//! Grid traversals with any f64 input: see `voxcast_fuzz::grid`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| voxcast_fuzz::grid::run(data));
