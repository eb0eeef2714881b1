//! Any bytes as a MagicaVoxel file: `voxcast_import::vox::model` answers with a world or an
//! error, never a panic (`voxcast-import/tests/fuzz_replay.rs` replays the corpus on stable).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = voxcast_import::vox::model(data, voxcast::WorldPos::ZERO);
});
