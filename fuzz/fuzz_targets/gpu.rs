//! The GPU batch against the CPU reference: see `voxcast_fuzz::gpu`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| voxcast_fuzz::gpu::run(data));
