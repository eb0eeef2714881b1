//! The fuzz targets' corpus replayed on the stable toolchain, as part of the test suite: every
//! file of `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/` goes through the target's
//! body (the modules of the `voxcast-fuzz` crate in `fuzz/`, included here) as `cargo fuzz`
//! would run it. A missing or empty corpus folder is a failure: a replay of nothing checks
//! nothing. To fuzz (nightly): `scripts/fuzz.sh`.

use voxcast_testkit::fuzz as harness;

use std::path::{Path, PathBuf};

/// The files of `fuzz/<dir>/<target>/`, sorted; empty when the folder does not exist.
fn files(dir: &str, target: &str) -> Vec<PathBuf> {
    voxcast_testkit::common::fuzz_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz"),
        dir,
        target,
    )
}

/// Runs `body` on every corpus and regression file of `target`; fails naming each file that
/// panics, and when the corpus is empty.
fn replay(target: &str, body: fn(&[u8])) {
    let corpus = files("corpus", target);
    assert!(
        !corpus.is_empty(),
        "fuzz/corpus/{target}/ is missing or empty: nothing to replay"
    );
    let mut failed = Vec::new();
    for path in corpus.iter().chain(&files("regressions", target)) {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if std::panic::catch_unwind(|| body(&data)).is_err() {
            failed.push(path.display().to_string());
        }
    }
    assert!(
        failed.is_empty(),
        "{target}: {} inputs fail:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

#[test]
fn raycast_corpus() {
    replay("raycast", harness::raycast::run);
}

#[test]
fn shapes_corpus() {
    replay("shapes", harness::shapes::run);
}

#[test]
fn edits_corpus() {
    replay("edits", harness::edits::run);
}

#[test]
fn boxcast_corpus() {
    replay("boxcast", harness::boxcast::run);
}

#[test]
fn grid_corpus() {
    replay("grid", harness::grid::run);
}

#[test]
fn camera_corpus() {
    replay("camera", harness::camera::run);
}

/// On the GPU: with `VOXCAST_REQUIRE_GPU=1` (as `scripts/test.sh` sets it) a missing adapter
/// fails; without it the replay says so loudly and checks nothing.
#[test]
#[cfg(feature = "gpu")]
fn gpu_corpus() {
    replay("gpu", harness::gpu::run);
}
