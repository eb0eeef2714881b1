//! Shaped voxels against the oracle over boxes, and shapes from any bytes: see
//! `voxcast_testkit::fuzz::shapes`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| voxcast_testkit::fuzz::shapes::run(data));
