//! The bench report's output: the Markdown table (default) and the `--json` report.

use serde::Serialize;

use super::{Config, GpuCall, WorkloadReport};

fn fmt_rate(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v >= 1e9 => format!("{:.2} G", v / 1e9),
        Some(v) if v >= 1e6 => format!("{:.2} M", v / 1e6),
        Some(v) if v >= 1e3 => format!("{:.1} k", v / 1e3),
        Some(v) => format!("{v:.0}"),
    }
}

pub(crate) fn print_table(machine: &[(&str, String)], cfg: &Config, reports: &[WorkloadReport]) {
    for (k, v) in machine {
        println!("{k:<10} {v}");
    }
    println!(
        "mode       {} (best of {} timed runs after a warm-up; one-thread engines on an evenly spread sample)",
        cfg.mode, cfg.repeats
    );
    println!();
    println!(
        "| {:<17} | {:<25} | {:>10} | {:>11} | {:>9} | {:>17} | note |",
        "workload", "engine", "rays/s", "steps/s", "vs CPU-1T", "agreement"
    );
    println!(
        "|-------------------|---------------------------|-----------:|------------:|----------:|------------------:|------|"
    );
    for r in reports {
        for row in &r.rows {
            let agree = row
                .agreement
                .map_or("-".into(), |(a, n)| format!("{:.2}% of {n}", a * 100.0));
            let ratio = row.ratio.map_or("-".into(), |x| format!("{x:.2}x"));
            println!(
                "| {:<17} | {:<25} | {:>10} | {:>11} | {:>9} | {:>17} | {} |",
                r.id.label(),
                row.engine,
                fmt_rate(row.rays_per_s),
                fmt_rate(row.steps_per_s),
                ratio,
                agree,
                row.note
            );
        }
    }
    print_gpu_calls(reports);
    println!();
    for r in reports {
        let prep: Vec<String> = r
            .prep
            .iter()
            .map(|(k, v)| format!("{k} {v:.2} s"))
            .collect();
        println!(
            "{}: {} rays, {:.1} reference voxel steps/ray, {:.1}% hit; prep: {}",
            r.id.label(),
            r.rays,
            r.mean_steps,
            r.hit_rate * 100.0,
            prep.join(", ")
        );
    }
}

/// Per query of a GPU call: end-to-end and kernel-only rates, nanoseconds outside the kernel
/// and of host work, the host ceiling (the CPU batch's time per query over the host's: the most
/// the call can beat the CPU batch by, on any GPU), bytes each way, and the query rates a PCIe
/// link of 25 and 50 GB/s allows for those bytes.
#[derive(Serialize)]
struct PerQuery {
    end_to_end_per_s: f64,
    kernel_per_s: Option<f64>,
    outside_kernel_ns: Option<f64>,
    host_ns: f64,
    host_ceiling: Option<f64>,
    bytes_up: f64,
    bytes_down: f64,
    pcie_25_per_s: f64,
    pcie_50_per_s: f64,
}

impl PerQuery {
    /// Per query of `c`, a call of a workload whose CPU batch answers `cpu_batch_per_s`
    /// queries a second.
    fn of(c: &GpuCall, cpu_batch_per_s: Option<f64>) -> Self {
        let n = c.queries.max(1) as f64;
        let (up, down) = (c.bytes_up as f64 / n, c.bytes_down as f64 / n);
        let host_ns = c.host_s / n * 1e9;
        Self {
            end_to_end_per_s: n / c.total_s.max(1e-12),
            kernel_per_s: c.kernel_s.map(|k| n / k.max(1e-12)),
            outside_kernel_ns: c.kernel_s.map(|k| (c.total_s - k) / n * 1e9),
            host_ns,
            host_ceiling: cpu_batch_per_s.map(|r| 1e9 / r / host_ns.max(1e-9)),
            bytes_up: up,
            bytes_down: down,
            pcie_25_per_s: 25e9 / (up + down).max(1e-9),
            pcie_50_per_s: 50e9 / (up + down).max(1e-9),
        }
    }
}

/// The rate of a workload's CPU batch (all threads), the host ceiling's reference.
fn cpu_batch_rate(r: &WorkloadReport) -> Option<f64> {
    r.rows
        .iter()
        .find(|row| row.engine.starts_with("voxcast cpu batch"))
        .and_then(|row| row.rays_per_s)
}

fn print_gpu_calls(reports: &[WorkloadReport]) {
    let calls: Vec<_> = reports
        .iter()
        .flat_map(|r| {
            let cpu = cpu_batch_rate(r);
            r.rows.iter().filter_map(move |row| {
                row.gpu_call
                    .as_ref()
                    .map(|c| (r, row, PerQuery::of(c, cpu)))
            })
        })
        .collect();
    if calls.is_empty() {
        return;
    }
    println!();
    println!(
        "GPU calls, per query: outside the kernel = 1/end-to-end - 1/kernel alone; host = the \
         calls' own work (staging, decoding; for W5 and W6 also segments, rays or eyes built \
         first), not waiting; ceiling = the CPU batch's time per query / host, the most the \
         call can beat the CPU batch by on any GPU; PCIe = what a link of that bandwidth \
         allows for the bytes each query moves."
    );
    println!();
    println!(
        "| {:<17} | {:<25} | {:>10} | {:>12} | {:>14} | {:>9} | {:>8} | {:>8} | {:>8} | {:>12} | {:>12} |",
        "workload",
        "call",
        "end to end",
        "kernel alone",
        "outside kernel",
        "host",
        "ceiling",
        "up",
        "down",
        "PCIe 25 GB/s",
        "PCIe 50 GB/s"
    );
    println!(
        "|-------------------|---------------------------|-----------:|-------------:|---------------:|----------:|---------:|---------:|---------:|-------------:|-------------:|"
    );
    for (r, row, q) in calls {
        println!(
            "| {:<17} | {:<25} | {:>10} | {:>12} | {:>14} | {:>9} | {:>8} | {:>8} | {:>8} | {:>12} | {:>12} |",
            r.id.label(),
            row.engine,
            fmt_rate(Some(q.end_to_end_per_s)),
            fmt_rate(q.kernel_per_s),
            q.outside_kernel_ns
                .map_or("-".into(), |ns| format!("{ns:.0} ns")),
            format!("{:.1} ns", q.host_ns),
            q.host_ceiling.map_or("-".into(), |c| format!("{c:.1}x")),
            format!("{:.2} B", q.bytes_up),
            format!("{:.2} B", q.bytes_down),
            fmt_rate(Some(q.pcie_25_per_s)),
            fmt_rate(Some(q.pcie_50_per_s)),
        );
    }
}

/// Writes `pairs` as a JSON object, in their order.
fn as_map<S: serde::Serializer, K: Serialize, V: Serialize>(
    pairs: &&[(K, V)],
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_map(pairs.iter().map(|(k, v)| (k, v)))
}

/// The `--json` report: what the table shows, with the machine and the run sizes.
#[derive(Serialize)]
struct JsonReport<'a> {
    #[serde(serialize_with = "as_map")]
    machine: &'a [(&'a str, String)],
    config: &'a Config,
    workloads: Vec<JsonWorkload<'a>>,
}

#[derive(Serialize)]
struct JsonWorkload<'a> {
    key: &'static str,
    label: &'static str,
    rays: usize,
    mean_steps_per_ray: f64,
    hit_rate: f64,
    /// Seconds of each preparation step.
    #[serde(serialize_with = "as_map")]
    prep_s: &'a [(String, f64)],
    engines: Vec<JsonEngine<'a>>,
}

/// One row; `None` (an engine that did not run) is written as `null`.
#[derive(Serialize)]
struct JsonEngine<'a> {
    engine: &'a str,
    rays_timed: usize,
    rays_per_s: Option<f64>,
    steps_per_s: Option<f64>,
    ratio_vs_cpu_1t: Option<f64>,
    agreement: Option<f64>,
    agreement_compared: usize,
    note: &'a str,
    /// For a GPU call, per query.
    gpu_call: Option<PerQuery>,
}

pub(crate) fn print_json(machine: &[(&str, String)], cfg: &Config, reports: &[WorkloadReport]) {
    let report = JsonReport {
        machine,
        config: cfg,
        workloads: reports
            .iter()
            .map(|r| JsonWorkload {
                key: r.id.key(),
                label: r.id.label(),
                rays: r.rays,
                mean_steps_per_ray: r.mean_steps,
                hit_rate: r.hit_rate,
                prep_s: &r.prep,
                engines: r
                    .rows
                    .iter()
                    .map(|row| JsonEngine {
                        engine: &row.engine,
                        rays_timed: row.rays_timed,
                        rays_per_s: row.rays_per_s,
                        steps_per_s: row.steps_per_s,
                        ratio_vs_cpu_1t: row.ratio,
                        agreement: row.agreement.map(|a| a.0),
                        agreement_compared: row.agreement.map_or(0, |a| a.1),
                        note: &row.note,
                        gpu_call: row
                            .gpu_call
                            .as_ref()
                            .map(|c| PerQuery::of(c, cpu_batch_rate(r))),
                    })
                    .collect(),
            })
            .collect(),
    };
    match serde_json::to_string_pretty(&report) {
        Ok(s) => println!("{s}"),
        Err(e) => {
            eprintln!("cannot write the report as JSON: {e}");
            std::process::exit(1)
        }
    }
}
