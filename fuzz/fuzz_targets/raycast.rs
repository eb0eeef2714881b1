//! Raycasts, line of sight and traversals of small worlds against the oracle: see
//! `voxcast_testkit::fuzz::raycast`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| voxcast_testkit::fuzz::raycast::run(data));
