//! The page's parity suite run natively on this machine's GPU: every answer equal to the CPU
//! reference's, and the digest of the GPU's answers equal to the CPU's (the page's run in the
//! browser is compared with the native CPU digest by `scripts/web.sh test`).

use voxcast::gpu::{Driver, GpuConfig, GpuRaycaster};
use voxcast_testkit::gpu::gpu;
use voxcast_testkit::scene::Terrain;

#[test]
fn the_page_suite_matches_the_cpu_natively() {
    let Some(gpu) = gpu() else { return };
    let terrain = Terrain::STANDARD.build();
    let report = pollster::block_on(voxcast_web::suite::run(Some(gpu), &terrain))
        .unwrap_or_else(|e| panic!("the suite failed: {e}"));
    for c in &report.checks {
        assert_eq!(c.differ, 0, "{}: {:?}", c.name, c.first);
        assert!(c.compared > 0, "{}: nothing compared", c.name);
    }
    // Every kind on each of the five worlds.
    assert_eq!(report.checks.len(), 5 * 8, "{:?}", report.checks);
    assert_eq!(report.gpu_exact_digest, Some(report.cpu_exact_digest));
    let cpu_alone = pollster::block_on(voxcast_web::suite::run(None, &terrain)).expect("cpu");
    assert_eq!(
        cpu_alone.cpu_digest, report.cpu_digest,
        "the CPU answers the same either way"
    );
    assert!(cpu_alone.checks.is_empty());
    // For `scripts/test.sh`, which hands it to the page's test (the digest example's line).
    let line = format!(
        "{:016x} {:016x} {}\n",
        report.cpu_digest, report.inputs_digest, report.answers
    );
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("voxcast-web-digest");
    std::fs::write(&path, line).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// Polls `f` to the end as a browser's event loop would: with a waker that does nothing,
/// again and again, never blocking inside a poll.
fn spin<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// The suite on a device the host drives (no thread of voxcast's own, as on the web), every
/// batch awaited by a spinning executor: the same answers.
#[test]
fn the_suite_on_a_host_driven_device() {
    if gpu().is_none() {
        return;
    }
    let config = GpuConfig {
        driver: Driver::Host,
        ..GpuConfig::default()
    };
    let gpu = spin(GpuRaycaster::new(config)).expect("a host-driven raycaster");
    let terrain = Terrain::STANDARD.build();
    let report = spin(voxcast_web::suite::run(Some(&gpu), &terrain)).expect("the suite");
    for c in &report.checks {
        assert_eq!(c.differ, 0, "{}: {:?}", c.name, c.first);
    }
    assert_eq!(report.checks.len(), 5 * 8);
    assert_eq!(report.gpu_exact_digest, Some(report.cpu_exact_digest));
}
