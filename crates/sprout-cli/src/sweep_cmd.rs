//! `sprout sweep SPEC.toml`: a grid of simulations, one tidy CSV row per run, on all cores or
//! (through the Python package) on Ray.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};
use sprout_eval::sweep::{self, SweepPlan};

/// The spec's format, shown by `sprout sweep --help`.
pub(crate) const SPEC_HELP: &str = "\
The spec (TOML):

  traces = [\"Verizon-LTE-short\", { name = \"syn\", synthetic = { seed = 1, duration_s = 60 } }]
  traces_dir = \"../shared/traces\"   # where names are looked up [default: as `sprout eval`]
  schemes = [\"sprout\", \"cubic\"]     # [default: sprout]
  seeds = [1, 2, 3]                 # or a count (3 = 1, 2, 3) [default: 0]
  out = \"results.csv\"               # [default: SPEC's name, .csv]

  [params]                          # Sprout parameters (`sprout params`): a value or a list
  \"model.sigma\" = [100, 200]

  [sim]                             # `sprout sim`'s options: a value or a list
  duration = 20.0                   # seconds [default: the shorter trace]
  skip = 5.0                        # seconds [default: 60]
  loss = [0.0, 0.05]                # also queue, uplink_queue, downlink_queue, uplink_loss,
                                    # downlink_loss, load, host_jitter_ms, confidence

A trace is a pair's name, \"*\" (every pair in traces_dir), { name, uplink, downlink } (files,
relative to the spec), { name, synthetic = {...} } or { name, constant = { mbps, seconds } }.
Parameters and confidence apply to Sprout schemes; other schemes run once per remaining
combination. Every combination is one run with a stable id (a hash of its configuration) and
one row: run_id, trace, scheme, seed, params, a param.KEY column per parameter, the options,
and up_/down_ columns of every metric of `sprout sim`.

The output is appended a row at a time as runs finish and rewritten sorted by run id at the
end; running the same sweep again skips the runs already in it (after a crash, too).

With --ray this command runs `python3 -m sprout.sweep SPEC --out FILE --ray ADDRESS
[--workers N]` (the `sprout` Python package must be installed there; $SPROUT_PYTHON names
another interpreter): `auto` uses the running Ray cluster, or starts a local one of --jobs
CPUs if there is none; `local` always starts a local one; anything else is a cluster's
address. Rows are identical to the local executor's. Parquet output (--out FILE.parquet)
needs the Python package too.";

/// `sprout sweep`'s arguments.
#[derive(clap::Args)]
pub(crate) struct SweepArgs {
    /// The sweep's spec (TOML; see below).
    spec: PathBuf,
    /// Output CSV [default: the spec's `out`, else SPEC's name with .csv, in the current
    /// folder].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Parallel runs (threads; with --ray, Ray CPUs of a local instance) [default: one per
    /// core].
    #[arg(long)]
    jobs: Option<usize>,
    /// Run as Ray tasks through the Python package: auto, local or a cluster ADDRESS (runs
    /// `python3 -m sprout.sweep`, see below).
    #[arg(long, value_name = "auto|local|ADDRESS")]
    ray: Option<String>,
    /// List the runs (id, trace, scheme, seed, parameters) without running them.
    #[arg(long)]
    list: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// Runs `sprout sweep`.
pub(crate) fn run(a: SweepArgs) -> Result<()> {
    let plan = SweepPlan::load(&a.spec)?;
    let out = a
        .out
        .clone()
        .or_else(|| plan.out.clone())
        .unwrap_or_else(|| PathBuf::from(format!("{}.csv", plan.name)));
    if a.list {
        for r in &plan.runs {
            println!(
                "{}  {}  {}  seed {}  {}",
                r.id,
                r.trace.name,
                r.scheme,
                r.seed,
                r.params.join(" ")
            );
        }
        println!("{} runs", plan.runs.len());
        return Ok(());
    }
    if let Some(address) = &a.ray {
        let python = std::env::var("SPROUT_PYTHON").unwrap_or_else(|_| "python3".into());
        let mut cmd = Command::new(&python);
        cmd.args(["-m", "sprout.sweep"])
            .arg(&a.spec)
            .arg("--out")
            .arg(&out)
            .args(["--ray", address]);
        if let Some(j) = a.jobs {
            cmd.args(["--workers", &j.to_string()]);
        }
        if a.quiet {
            cmd.arg("--quiet");
        }
        let status = cmd.status().with_context(|| {
            format!("running {python} -m sprout.sweep (is the sprout Python package installed?)")
        })?;
        if !status.success() {
            bail!("{python} -m sprout.sweep failed ({status})");
        }
        return Ok(());
    }
    if a.jobs == Some(0) {
        bail!("--jobs must be at least 1");
    }
    let report = sweep::run_local(&plan, &out, a.jobs, !a.quiet)?;
    println!("{report}");
    println!("wrote {}", out.display());
    if !report.failed.is_empty() {
        bail!(
            "{} of {} runs failed (running the sweep again retries them)",
            report.failed.len(),
            report.runs
        );
    }
    Ok(())
}
