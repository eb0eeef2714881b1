//! Cameras with any fields, pixel by pixel: see `voxcast_testkit::fuzz::camera`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| voxcast_testkit::fuzz::camera::run(data));
