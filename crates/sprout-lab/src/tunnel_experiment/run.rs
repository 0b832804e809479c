//! Both tunnel experiments, as asked for, and their outputs.

use std::fmt::Write as _;
use std::fs;

use super::call::preflight;
use super::cost::run_cost;
use super::isolation::run_isolation;
use super::options::{
    TunnelOptions, CALL_LINGER_S, COST_SKIP_US, DEFAULT_COST_DURATION_US,
    DEFAULT_TUNNEL_DURATION_US, DEFAULT_TUNNEL_SKIP_US, INTERACTIVE_LINGER_S,
};
use super::report::{cost_text, isolation_text, merge_report, write_cost, write_isolation};
use crate::error::{Context, LabError};
use sprout_eval::progress;

/// Runs the tunnel experiments asked for, writes their outputs and returns what to print.
pub fn run(opts: &TunnelOptions) -> Result<String, LabError> {
    sprout_emu::check_privileges()?;
    if !opts.isolation && !opts.cost {
        return Err(LabError::Invalid("no tunnel experiment given".into()));
    }
    let iso_dur = opts.duration_us.unwrap_or(DEFAULT_TUNNEL_DURATION_US);
    let iso_skip = opts.skip_us.unwrap_or(DEFAULT_TUNNEL_SKIP_US);
    let cost_dur = opts.duration_us.unwrap_or(DEFAULT_COST_DURATION_US);
    if opts.isolation && iso_skip >= iso_dur {
        return Err(LabError::Invalid(format!(
            "the skipped time ({} s) must be shorter than the run ({} s)",
            iso_skip as f64 / 1e6,
            iso_dur as f64 / 1e6
        )));
    }
    if opts.cost && COST_SKIP_US >= cost_dur {
        return Err(LabError::Invalid(format!(
            "the tunnel-cost run must be longer than its {} s start-up",
            COST_SKIP_US / 1_000_000
        )));
    }
    // Before anything runs: a call that cannot run says so, with how to install it.
    let webrtc = if opts.isolation && opts.call {
        Some(preflight(opts)?)
    } else {
        None
    };
    fs::create_dir_all(&opts.out)
        .with_context(|| format!("creating output folder {}", opts.out.display()))?;
    let mut total = 0u64;
    if opts.isolation {
        total += 2 * (iso_dur / 1_000_000 + INTERACTIVE_LINGER_S as u64);
        if webrtc.is_some() {
            // The call's own pair of runs.
            total += 2 * (iso_dur / 1_000_000 + CALL_LINGER_S as u64);
        }
    }
    if opts.cost {
        total += cost_dur / 1_000_000;
    }
    let bar = progress::bar(total, " s", opts.progress);
    let mut printed = String::new();
    if opts.isolation {
        let res = run_isolation(opts, iso_dur, iso_skip, webrtc, &bar)?;
        write_isolation(&opts.out, &res)?;
        printed.push_str(&isolation_text(&res));
    }
    if opts.cost {
        let res = run_cost(opts, cost_dur, &bar)?;
        write_cost(&opts.out, &res)?;
        printed.push_str(&cost_text(&res));
    }
    bar.finish_and_clear();
    merge_report(&opts.out)?;
    let mut files = Vec::new();
    if opts.isolation {
        files.extend([
            "tunnel.csv",
            "tunnel.json",
            "tunnel-delay.svg",
            "tunnel-delay.csv",
        ]);
    }
    if opts.cost {
        files.extend(["tunnel-cost.csv", "tunnel-cost.json"]);
    }
    let _ = writeln!(
        printed,
        "wrote {} in {}, the SproutTunnel section of report.md, and every peer's output in {}",
        files.join(", "),
        opts.out.display(),
        opts.out.join("tunnel").display()
    );
    Ok(printed)
}
