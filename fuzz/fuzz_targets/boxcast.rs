//! Box casts and slides with any input: see `voxcast_testkit::fuzz::boxcast`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| voxcast_testkit::fuzz::boxcast::run(data));
