//! Edit sequences against a model and a recount of the world's summaries: see
//! `voxcast_fuzz::edits`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| voxcast_fuzz::edits::run(data));
