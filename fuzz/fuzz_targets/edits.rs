//! Edit sequences against a model and a recount of the world's summaries: see
//! `voxcast_testkit::fuzz::edits`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| voxcast_testkit::fuzz::edits::run(data));
