//! A program that uses the GPU and returns from `main` ends cleanly: dropping the last handle
//! of a raycaster ends every use of the device (its courier thread is joined), so the exit
//! handlers that unload the Vulkan driver find nothing running. Run as a child process
//! [`RUNS`] times, two at a time (the timing that made an unjoined thread crash), the program
//! must exit with status 0 every time.
//!
//! A test binary of its own (`harness = false` in `Cargo.toml`): `main` is the parent, and the
//! same binary with `VOXCAST_EXIT_CHILD=1` is the child program.

use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use voxcast::gpu::GpuRaycaster;
use voxcast::{RaycastOptions, VoxelId, VoxelRay, VoxelWorld, WorldPos, glam::Vec3};

/// Child processes run.
const RUNS: usize = 100;
/// Children running at once.
const AT_ONCE: usize = 2;
/// A child that runs longer than this has hung.
const CHILD_LIMIT: Duration = Duration::from_secs(120);

/// The child: twice a raycaster, a small world and a batch of 1,000 rays, all dropped, then a
/// return from `main`.
fn child() {
    for _ in 0..2 {
        let gpu = GpuRaycaster::new_blocking().expect("the parent checked for an adapter");
        let mut world = VoxelWorld::new();
        world.set_voxel(WorldPos::new(5, 0, 0), VoxelId(1));
        let gpu_world = gpu.upload_world(&world).expect("a small world uploads");
        let ray =
            VoxelRay::new(WorldPos::ZERO, Vec3::splat(0.5), Vec3::X, 32.0).expect("a valid ray");
        let answers = gpu
            .raycast(&vec![ray; 1000], &gpu_world, &RaycastOptions::default())
            .expect("the batch is answered");
        assert!(answers.iter().all(|a| a.hit().is_some()), "every ray hits");
    }
}

fn spawn() -> Child {
    let exe = std::env::current_exe().expect("the test binary's path");
    Command::new(exe)
        .env("VOXCAST_EXIT_CHILD", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the child starts")
}

/// The child's status, or `None` when it ran past [`CHILD_LIMIT`] (it is killed).
fn finish(mut c: Child, started: Instant) -> (Option<ExitStatus>, String) {
    let status = loop {
        match c.try_wait().expect("the child can be waited for") {
            Some(s) => break Some(s),
            None if started.elapsed() > CHILD_LIMIT => {
                let _ = c.kill();
                let _ = c.wait();
                break None;
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    let mut err = String::new();
    if let Some(mut e) = c.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut err);
    }
    (status, err)
}

fn main() {
    if std::env::var_os("VOXCAST_EXIT_CHILD").is_some() {
        child();
        return;
    }
    if let Err(e) = GpuRaycaster::new_blocking() {
        if std::env::var("VOXCAST_REQUIRE_GPU").is_ok_and(|v| v == "1") {
            panic!("VOXCAST_REQUIRE_GPU=1 but no GPU is usable: {e}");
        }
        eprintln!("\n!!!!! SKIPPING THE EXIT TEST: {e} !!!!!\n");
        return;
    }
    let mut failures = Vec::new();
    let mut running: Vec<(usize, Child, Instant)> = Vec::new();
    let mut next = 0;
    while next < RUNS || !running.is_empty() {
        while running.len() < AT_ONCE && next < RUNS {
            running.push((next, spawn(), Instant::now()));
            next += 1;
        }
        let (run, c, started) = running.remove(0);
        let (status, err) = finish(c, started);
        if !status.is_some_and(|s| s.success()) {
            let last = err.lines().rev().take(5).collect::<Vec<_>>().join(" | ");
            failures.push(format!("run {run}: {status:?} ({last})"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {RUNS} runs did not end cleanly:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!("exit_clean: {RUNS} runs of a GPU program, every one ended with status 0");
}
