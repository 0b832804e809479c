//! Running a sweep's runs: one run's row ([`run_line`], what every executor writes) and all
//! the runs not yet in the output on this machine's cores ([`run_local`]).

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use rayon::prelude::*;
use sprout_sim::app_metrics::AppMetrics;
use sprout_sim::metrics::DirectionMetrics;
use sprout_sim::sim_json;

use super::output::{csv_line, SweepOutput};
use super::plan::{RunSpec, SweepPlan};
use crate::error::{EvalError, Result};

/// The fields of [`APP_COLUMNS`] for one direction: empty without application figures.
fn app_fields(m: Option<&AppMetrics>) -> [String; 10] {
    let Some(m) = m else {
        return Default::default();
    };
    [
        m.offered_kbps.to_string(),
        m.delivered_kbps.to_string(),
        m.delivered_share.to_string(),
        m.messages.to_string(),
        m.delay_p50_ms.to_string(),
        m.delay_p95_ms.to_string(),
        m.delay_p99_ms.to_string(),
        m.within_100ms.to_string(),
        m.within_150ms.to_string(),
        m.within_300ms.to_string(),
    ]
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map(|x| x.to_string()).unwrap_or_default()
}

fn metric_fields(m: &DirectionMetrics) -> [String; 13] {
    [
        m.throughput_kbps.to_string(),
        m.goodput_kbps.to_string(),
        m.capacity_kbps.to_string(),
        m.utilization.to_string(),
        m.p95_delay_ms.to_string(),
        m.p95_delay_data_ms.to_string(),
        m.omniscient_p95_ms.to_string(),
        m.self_inflicted_ms.to_string(),
        m.self_inflicted_data_ms.to_string(),
        m.delivered_bytes.to_string(),
        m.offered_bytes.to_string(),
        m.packets.to_string(),
        m.window_s.to_string(),
    ]
}

/// Runs one run and gives its row's fields (see [`header`](super::header)).
pub fn run_fields(run: &RunSpec) -> Result<Vec<String>> {
    let opts = run.sim_options()?;
    let cfg = opts.config()?;
    let (up, down) = run.trace.load()?;
    let out = sim_json::run(up, down, &cfg, None)?;
    let given: HashMap<&str, &str> = run
        .params
        .iter()
        .filter_map(|p| p.split_once('='))
        .collect();
    let mut f = vec![
        run.id.clone(),
        run.trace.name.clone(),
        run.scheme.clone(),
        run.seed.to_string(),
        run.params.join(" "),
    ];
    for k in &run.param_columns {
        f.push(
            given
                .get(k.as_str())
                .map(|v| v.to_string())
                .unwrap_or_default(),
        );
    }
    let s = &run.sim;
    f.extend([
        out.duration.as_secs_f64().to_string(),
        s.skip_s.to_string(),
        s.load.clone(),
        s.queue.clone(),
        opt(&s.uplink_queue),
        opt(&s.downlink_queue),
        s.loss.to_string(),
        opt(&s.uplink_loss),
        opt(&s.downlink_loss),
        s.host_jitter_ms.to_string(),
        if opts.scheme.uses_confidence() {
            cfg.protocol.confidence.to_string()
        } else {
            String::new()
        },
    ]);
    if run.app_columns {
        f.push(opts.app.to_string());
    }
    f.extend(metric_fields(&out.uplink.metrics));
    f.extend(metric_fields(&out.downlink.metrics));
    if run.app_columns {
        f.extend(app_fields(out.uplink.app.as_ref()));
        f.extend(app_fields(out.downlink.app.as_ref()));
    }
    if run.ecn_columns {
        let (up, down) = (&out.uplink.link, &out.downlink.link);
        f.extend([
            s.ecn.to_string(),
            up.packets_marked.to_string(),
            down.packets_marked.to_string(),
            up.packets_aqm_dropped.to_string(),
            down.packets_aqm_dropped.to_string(),
        ]);
    }
    if !run.link_columns.is_empty() {
        for k in &run.link_columns {
            f.push(s.link.get(k).cloned().unwrap_or_default());
        }
        let (up, down) = (&out.uplink.link, &out.downlink.link);
        f.extend([
            up.packets_buffer_dropped.to_string(),
            down.packets_buffer_dropped.to_string(),
            up.packets_lost.to_string(),
            down.packets_lost.to_string(),
        ]);
    }
    Ok(f)
}

/// Runs one run and gives its row as a CSV line (without the newline): what every executor
/// writes.
pub fn run_line(run: &RunSpec) -> Result<String> {
    Ok(csv_line(&run_fields(run)?))
}

/// What a sweep did.
#[derive(Clone, Debug, Default)]
pub struct SweepReport {
    /// Runs in the plan.
    pub runs: usize,
    /// Runs skipped because their rows were already in the output.
    pub skipped: usize,
    /// Runs run now and written.
    pub ran: usize,
    /// Runs that failed: (description, error).
    pub failed: Vec<(String, String)>,
    /// Rows in the output at the end.
    pub rows: usize,
    /// Wall-clock seconds.
    pub elapsed_s: f64,
}

impl std::fmt::Display for SweepReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} runs: {} run in {:.1} s, {} already done, {} failed; {} rows",
            self.runs,
            self.ran,
            self.elapsed_s,
            self.skipped,
            self.failed.len(),
            self.rows
        )?;
        for (run, e) in &self.failed {
            write!(f, "\n  {run}: {e}")?;
        }
        Ok(())
    }
}

/// Runs the plan's runs not yet in `out` on `jobs` threads (default: one per core), appending
/// each row as it finishes, then sorts the file. A progress bar when `progress`.
pub fn run_local(
    plan: &SweepPlan,
    out: &Path,
    jobs: Option<usize>,
    progress: bool,
) -> Result<SweepReport> {
    let started = Instant::now();
    let mut output = SweepOutput::open(out, &plan.header())?;
    let pending: Vec<&RunSpec> = plan
        .runs
        .iter()
        .filter(|r| !output.done().contains(&r.id))
        .collect();
    let mut report = SweepReport {
        runs: plan.runs.len(),
        skipped: plan.runs.len() - pending.len(),
        ..SweepReport::default()
    };
    let bar = crate::progress::bar(pending.len() as u64, "", progress);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.unwrap_or(0))
        .build()
        .map_err(EvalError::Threads)?;
    let (tx, rx) = std::sync::mpsc::channel::<(&RunSpec, Result<String>)>();
    let mut write_error = None;
    std::thread::scope(|s| {
        s.spawn(move || {
            pool.install(|| {
                pending.par_iter().for_each_with(tx, |tx, run| {
                    let _ = tx.send((run, run_line(run)));
                })
            })
        });
        for (run, line) in rx {
            match line {
                Ok(l) => {
                    if write_error.is_none() {
                        match output.append(&l) {
                            Ok(()) => report.ran += 1,
                            Err(e) => write_error = Some(e),
                        }
                    }
                }
                Err(e) => report.failed.push((run.describe(), sim_error_message(&e))),
            }
            bar.inc(1);
        }
    });
    bar.finish_and_clear();
    if let Some(e) = write_error {
        return Err(e);
    }
    report.rows = output.finish()?;
    report.elapsed_s = started.elapsed().as_secs_f64();
    Ok(report)
}

/// An error and its causes joined by ": ", each said once, as `sprout` prints errors
/// ([`sprout_sim::error::chain_message`]).
pub fn sim_error_message(e: &(dyn std::error::Error + 'static)) -> String {
    sprout_sim::error::chain_message(e)
}
