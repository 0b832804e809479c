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
        // Before anything is written: a missing package leaves no header-only CSV behind.
        check_ray_python(&python)?;
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

/// What `sprout sweep --ray` runs first: imports the Python package's sweep and Ray, and on
/// failure prints which (`MODULE: ERROR`) and exits 1.
const RAY_CHECK: &str = "\
import importlib, sys
for m in ('sprout.sweep', 'ray'):
    try:
        importlib.import_module(m)
    except ImportError as e:
        sys.exit(f'{m}: {e}')
";

/// What to install for `sprout sweep --ray` (the `ray` extra of python/pyproject.toml).
const RAY_INSTALL: &str = "pip install './python[ray]'";

/// Checks that `python` can import the `sprout` package's sweep and Ray; the error says what
/// to install.
fn check_ray_python(python: &str) -> Result<()> {
    let out = match Command::new(python).args(["-c", RAY_CHECK]).output() {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
            "sprout sweep --ray runs {python} -m sprout.sweep, but there is no {python}: \
             install Python 3 and {RAY_INSTALL} (from the repository), or set SPROUT_PYTHON"
        ),
        Err(e) => return Err(e).with_context(|| format!("running {python}")),
    };
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let detail = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    bail!(
        "sprout sweep --ray needs the sprout Python package and Ray in {python} ({detail}): \
         {RAY_INSTALL} (from the repository), or set SPROUT_PYTHON to a Python that has them"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in interpreter: a shell script that prints `stderr` and exits with `code`.
    fn fake_python(dir: &std::path::Path, stderr: &str, code: i32) -> String {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join("python");
        std::fs::write(
            &p,
            format!("#!/bin/sh\necho \"{stderr}\" >&2\nexit {code}\n"),
        )
        .unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p.to_string_lossy().into_owned()
    }

    /// `check_ray_python`, retried while the script just written is "busy": another test
    /// thread that forks between our write and its exec holds the written file open for a
    /// moment (ETXTBSY), which says nothing about the code under test.
    fn check_settled(python: &str) -> Result<()> {
        for _ in 0..100 {
            match check_ray_python(python) {
                Err(e)
                    if e.chain().any(|c| {
                        c.downcast_ref::<std::io::Error>()
                            .is_some_and(|io| io.raw_os_error() == Some(ETXTBSY))
                    }) =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => return other,
            }
        }
        check_ray_python(python)
    }

    /// ETXTBSY on Linux ("Text file busy").
    const ETXTBSY: i32 = 26;

    #[test]
    fn missing_package_or_ray_says_what_to_install() {
        let dir = tempfile::tempdir().unwrap();
        let py = fake_python(dir.path(), "ray: No module named 'ray'", 1);
        let msg = check_settled(&py).unwrap_err().to_string();
        assert!(msg.contains("(ray: No module named 'ray')"), "{msg}");
        assert!(msg.contains("pip install './python[ray]'"), "{msg}");
        assert!(!msg.contains('\n'), "one line: {msg}");
        let ok_dir = tempfile::tempdir().unwrap();
        let ok = fake_python(ok_dir.path(), "", 0);
        assert!(check_settled(&ok).is_ok());
        let none = dir.path().join("no-python").to_string_lossy().into_owned();
        let msg = check_settled(&none).unwrap_err().to_string();
        assert!(
            msg.contains("there is no") && msg.contains("SPROUT_PYTHON"),
            "{msg}"
        );
    }

    #[test]
    fn the_check_really_imports_both() {
        // The check's own Python: without a sprout package on the path it names sprout.sweep.
        let Ok(out) = Command::new("python3")
            .args(["-S", "-c", RAY_CHECK])
            .env("PYTHONPATH", "/nonexistent")
            .output()
        else {
            return; // no python3 here: nothing to check against
        };
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            err.contains("sprout.sweep: No module named 'sprout'"),
            "{err}"
        );
    }
}
