//! Grid traversals with any f64 input: see `voxcast_testkit::fuzz::grid`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| voxcast_testkit::fuzz::grid::run(data));
