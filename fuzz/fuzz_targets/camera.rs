//! Cameras with any fields, pixel by pixel: see `voxcast_fuzz::camera`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| voxcast_fuzz::camera::run(data));
