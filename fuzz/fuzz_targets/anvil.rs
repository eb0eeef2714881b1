//! Any bytes as a Minecraft region: `voxcast_import::anvil::region` answers with a world or an
//! error, never a panic (`voxcast-import/tests/fuzz_replay.rs` replays the corpus on stable).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut palette = voxcast_import::Palette::new();
    let _ = voxcast_import::anvil::region(
        data,
        voxcast::WorldPos::ZERO,
        &mut palette,
        voxcast_import::anvil::Names::WithProperties,
    );
});
