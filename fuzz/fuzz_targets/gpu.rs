//! The GPU batch against the CPU reference: see `voxcast_testkit::fuzz::gpu`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| voxcast_testkit::fuzz::gpu::run(data));
