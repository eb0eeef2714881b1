//! Raycasts, line of sight and traversals of small worlds against the oracle: see
//! `voxcast_fuzz::raycast`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| voxcast_fuzz::raycast::run(data));
