//! The tunnel's cost: a kernel Cubic download alone through it over a constant-rate link.

use std::sync::Arc;
use std::time::Instant;

use indicatif::ProgressBar;
use sprout_link::constant_rate_trace;

use super::analysis::goodput_kbps;
use super::one_run::{run_once, RunSpec};
use super::options::{TunnelOptions, COST_RATE_MBPS, COST_SKIP_US, MIN_COST_SHARE};
use super::results::CostResults;
use crate::error::{Context, LabError};

/// Runs the cost experiment for `dur_us` and returns its results.
pub(super) fn run_cost(
    opts: &TunnelOptions,
    dur_us: u64,
    bar: &ProgressBar,
) -> Result<CostResults, LabError> {
    let name = format!("Constant-{COST_RATE_MBPS}Mbps");
    // 6 s of a constant rate (a whole number of opportunities: 5000), looped.
    let trace = Arc::new(constant_rate_trace(&name, COST_RATE_MBPS, 6.0)?);
    bar.set_message(format!("tunnel cost: {name}"));
    let started = Instant::now();
    let dur_s = dur_us as f64 / 1e6;
    let skip_s = COST_SKIP_US as f64 / 1e6;
    let out = run_once(
        opts,
        &RunSpec {
            name: "cost",
            up: trace.clone(),
            down: trace.clone(),
            tunnel: true,
            interactive: false,
            call: false,
            duration_s: dur_s,
            queue: sprout_link::QueueConfig::default(),
        },
        bar,
    )
    .context("the tunnel-cost run")?;
    let capacity_kbps = trace.capacity_bytes(
        sprout_core::Instant::from_micros(out.t0_link_us + COST_SKIP_US),
        sprout_core::Instant::from_micros(out.t0_link_us + dur_us),
        true,
    ) as f64
        * 8.0
        / 1000.0
        / (dur_s - skip_s);
    let goodput = goodput_kbps(&out.bulk_ticks, skip_s, dur_s);
    let whole = goodput_kbps(&out.bulk_ticks, 0.0, dur_s);
    let share = if capacity_kbps > 0.0 {
        goodput / capacity_kbps
    } else {
        0.0
    };
    Ok(CostResults {
        link_mbps: COST_RATE_MBPS,
        duration_s: dur_s,
        skip_s,
        capacity_kbps,
        goodput_kbps: goodput,
        share,
        whole_run_goodput_kbps: whole,
        target_share: MIN_COST_SHARE,
        ok: share >= MIN_COST_SHARE,
        files: out.prefix,
        wall_s: started.elapsed().as_secs_f64(),
    })
}
