//! `--boxes` (and every full run): W8, player-sized boxes moving on the standard terrain
//! (`voxcast_testkit::peers::w8_casts`), through voxcast's `box_cast` on one thread,
//! `box_cast_batch` on all, `gpu::BoxCasts` (where a GPU is at hand; the report counts
//! its answers equal to the CPU's), and parry3d's `cast_shapes` of a `Cuboid` against its `Voxels` on one
//! thread. Agreement with parry is on the distance (within 1e-3 voxels, or both no
//! contact); every disagreement is judged against the brute-force oracle
//! (`voxcast_testkit::boxes`), and the report says how many of them voxcast's answer is the
//! oracle's.

use std::time::Instant;
use voxcast::gpu::BoxCasts;

use voxcast::gpu::GpuRaycaster;
use voxcast::{BoxCast, BoxCastOutcome, RaycastOptions, box_cast, box_cast_batch};
use voxcast_testkit::boxes::{contacts, judge};
use voxcast_testkit::peers::{ParryScene, box_solids_near, w8_casts};

/// Best of `repeats` timed runs of `f` (after one untimed), in seconds, and its last answers.
fn best<T>(repeats: usize, mut f: impl FnMut() -> Vec<T>) -> (Vec<T>, f64) {
    std::hint::black_box(f());
    let mut best = f64::MAX;
    let mut out = Vec::new();
    for _ in 0..repeats {
        let t = Instant::now();
        out = std::hint::black_box(f());
        best = best.min(t.elapsed().as_secs_f64());
    }
    (out, best)
}

/// Runs W8 with `n` casts (parry on `n / 5`) and prints its table; prints up to `show` casts
/// where parry disagrees to stderr.
pub(crate) fn print_boxes(
    machine: &[(&str, String)],
    n: usize,
    repeats: usize,
    gpu: Option<&GpuRaycaster>,
    show: usize,
) {
    let t = Instant::now();
    let (world, casts) = w8_casts(n);
    let parry = ParryScene::new(&world);
    eprintln!(
        "W8: {} casts, world and parry's Voxels built in {:.1} s",
        casts.len(),
        t.elapsed().as_secs_f64()
    );
    let opts = RaycastOptions::default();
    let (one, t_one) = best(repeats, || {
        casts.iter().map(|c| box_cast(c, &world, &opts)).collect()
    });
    let (batch, t_batch) = best(repeats, || box_cast_batch(&casts, &world, &opts));
    assert_eq!(one, batch, "the batch gives each cast's own answer");
    // The GPU: best of the repeats, every answer the CPU's (bit for bit).
    let gpu_row = gpu.map(|g| {
        let gw = g.upload_world(&world).expect("W8's world uploads");
        let mut stats = voxcast::gpu::BatchStats::default();
        let (answers, t) = best(repeats, || {
            let mut answers = Vec::new();
            stats = g
                .cast_into(BoxCasts(&casts), &gw, &opts, &mut answers)
                .expect("W8 on the GPU");
            answers
        });
        let equal = answers
            .iter()
            .zip(&one)
            .filter(|(a, b)| voxcast_testkit::gpu::same_box_answer(a, b))
            .count();
        (t, equal, stats)
    });
    let sample: Vec<BoxCast> = casts.iter().step_by(5).copied().collect();
    let (parry_toi, t_parry) = best(repeats, || {
        sample.iter().map(|c| parry.box_cast(c)).collect()
    });
    // Agreement, and the disagreements judged by the oracle.
    let (mut agree, mut ours_exact, mut ties) = (0, 0, 0);
    for (k, (c, p)) in sample.iter().zip(&parry_toi).enumerate() {
        let ours = &one[k * 5];
        let same = match (ours.distance(), p) {
            (None, None) => true,
            (Some(a), Some(b)) => (a - b).abs() <= 1e-3,
            _ => false,
        };
        if same {
            agree += 1;
            continue;
        }
        if k - agree < show {
            eprintln!("W8: {c:?}\n    voxcast {ours:?}\n    parry time of impact {p:?}");
        }
        match judge(
            c,
            ours,
            &contacts(c, &box_solids_near(&world, c)),
            opts.origin,
        ) {
            Ok(tie) => {
                ours_exact += 1;
                ties += usize::from(tie);
            }
            Err(e) => eprintln!("W8: voxcast disagrees with the oracle on {c:?}: {e}"),
        }
    }
    // Voxcast against the oracle on every cast of the sample, whatever parry says.
    let judged_all = sample
        .iter()
        .enumerate()
        .filter(|(k, c)| {
            judge(
                c,
                &one[k * 5],
                &contacts(c, &box_solids_near(&world, c)),
                opts.origin,
            )
            .is_ok()
        })
        .count();
    let hits = one.iter().filter(|o| o.hit().is_some()).count();
    let starts = one
        .iter()
        .filter(|o| matches!(o, BoxCastOutcome::StartsInside { .. }))
        .count();
    let rate = |count: usize, s: f64| count as f64 / s;
    let (r_one, r_batch, r_parry) = (
        rate(casts.len(), t_one),
        rate(casts.len(), t_batch),
        rate(sample.len(), t_parry),
    );
    println!(
        "## W8 box casts (player boxes 0.3 x 0.9 x 0.3 moving 0.5 to 4 voxels on the terrain)"
    );
    println!();
    for (k, v) in machine {
        println!("- {k}: {v}");
    }
    println!(
        "- casts: {} ({hits} hit, {starts} start inside, the rest move freely); parry sample {}",
        casts.len(),
        sample.len()
    );
    println!();
    println!("| engine | casts/s | vs parry | agreement with parry |");
    println!("| --- | --- | --- | --- |");
    println!(
        "| voxcast CPU 1T (`box_cast`) | {:.0} | {:.1}x | {:.2}% |",
        r_one,
        r_one / r_parry,
        100.0 * agree as f64 / sample.len() as f64
    );
    println!(
        "| voxcast CPU batch (`box_cast_batch`, all threads) | {:.0} | {:.1}x | same answers as 1T |",
        r_batch,
        r_batch / r_parry
    );
    if let Some((t, equal, stats)) = gpu_row {
        let r = rate(casts.len(), t);
        println!(
            "| voxcast GPU (`BoxCasts`) | {r:.0} | {:.1}x | equal to the CPU's: {:.2}% ({} B up, {} B down a cast) |",
            r / r_parry,
            100.0 * equal as f64 / casts.len() as f64,
            stats.bytes_up / casts.len() as u64,
            stats.bytes_down / casts.len() as u64,
        );
    }
    println!("| parry3d `cast_shapes` Cuboid vs `Voxels` 1T | {r_parry:.0} | 1.0x | |");
    println!();
    println!(
        "Of the {} casts where parry's distance differs, voxcast's answer is the oracle's on {ours_exact} \
         ({ties} within the oracle's tie tolerance); voxcast agrees with the oracle on {judged_all} of all {} sampled casts.",
        sample.len() - agree,
        sample.len()
    );
}
