//! The corpus of the importers' fuzz targets (`fuzz/fuzz_targets/anvil.rs`, `vox.rs`) replayed
//! on the stable toolchain: every file of `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/`
//! goes through the importer as the target runs it, and must give a world or an error, never a
//! panic. The corpus seeds are files fastanvil and dot_vox ship (one column of fastanvil's
//! 1.19.4 region, compressed and not; dot_vox's models).

use std::path::{Path, PathBuf};

use voxcast::WorldPos;
use voxcast_import::{Palette, anvil, vox};

/// The files of `fuzz/<dir>/<target>/`, sorted; empty when the folder does not exist.
fn files(dir: &str, target: &str) -> Vec<PathBuf> {
    voxcast_testkit::common::fuzz_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz"),
        dir,
        target,
    )
}

/// Runs `body` on every corpus and regression file of `target`; returns how many imported.
fn replay(target: &str, body: fn(&[u8]) -> bool) -> usize {
    let corpus = files("corpus", target);
    assert!(
        !corpus.is_empty(),
        "fuzz/corpus/{target}/ is missing or empty"
    );
    let mut failed = Vec::new();
    let mut imported = 0;
    for path in corpus.iter().chain(&files("regressions", target)) {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        match std::panic::catch_unwind(|| body(&data)) {
            Ok(ok) => imported += usize::from(ok),
            Err(_) => failed.push(path.display().to_string()),
        }
    }
    assert!(
        failed.is_empty(),
        "{target}: {} inputs panic:\n{}",
        failed.len(),
        failed.join("\n")
    );
    imported
}

#[cfg(feature = "anvil")]
#[test]
fn anvil_corpus() {
    let imported = replay("anvil", |data| {
        let mut palette = Palette::new();
        anvil::region(
            data,
            WorldPos::ZERO,
            &mut palette,
            anvil::Names::WithProperties,
        )
        .is_ok()
    });
    assert!(imported >= 2, "the seeds import: {imported}");
}

#[cfg(feature = "vox")]
#[test]
fn vox_corpus() {
    let imported = replay("vox", |data| vox::model(data, WorldPos::ZERO).is_ok());
    assert!(imported >= 2, "the seeds import: {imported}");
}
