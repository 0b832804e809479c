//! `sprout tunnel try`: the tunnel on one machine, between two network namespaces with the
//! link emulator between them (see `sprout_lab::tunnel_try`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Result};
use sprout_core::time::{parse_duration, TimeUnit};
use sprout_eval::eval::{load_trace, DEFAULT_TRACE_DIRS};
use sprout_lab::error::LabError;
use sprout_lab::tunnel_try::{self, TryLink, TryOptions};

use crate::exit_status::ExitStatus;

/// `sprout tunnel try` arguments.
#[derive(clap::Args)]
pub(crate) struct TryArgs {
    /// Rate of the emulated link each way, Mbit/s: a constant link, no trace needed
    /// [default: 20].
    #[arg(long, value_name = "MBIT/S", conflicts_with = "trace")]
    rate: Option<f64>,
    /// Replay this trace pair (NAME.up, NAME.down from --traces, else ../shared/traces or
    /// ./traces) instead of a constant link.
    #[arg(long, value_name = "NAME")]
    trace: Option<String>,
    /// Folder of the trace pairs for --trace.
    #[arg(long, value_name = "DIR", requires = "trace")]
    traces: Option<PathBuf>,
    /// One-way propagation delay of the link each way, milliseconds [default: 20].
    #[arg(long, value_name = "MS")]
    delay: Option<f64>,
    /// Seconds of the download through the tunnel; the pings run 1 s before it and beside it,
    /// and the whole run takes about 4 s more [default: 10].
    #[arg(long, value_name = "SECONDS")]
    duration: Option<f64>,
    /// Both tunnel ends pad the Sprout window (as `sprout tunnel server --probe`).
    #[arg(long)]
    probe: bool,
    /// Both tunnel ends' forecast confidence, strictly between 0 and 1 [default: the
    /// tunnel's, 0.95].
    #[arg(long, value_name = "P")]
    confidence: Option<f64>,
}

/// Longest `--duration` (s).
const MAX_DURATION_S: f64 = 600.0;
/// Largest `--rate` (Mbit/s).
const MAX_RATE_MBPS: f64 = 1000.0;
/// Longest `--delay` (ms).
const MAX_DELAY_MS: f64 = 10_000.0;

/// The trace pair `name` from `traces`, else from the first of [`DEFAULT_TRACE_DIRS`] that
/// holds it.
fn find_trace(name: &str, traces: Option<&Path>) -> Result<TryLink> {
    let dirs: Vec<PathBuf> = match traces {
        Some(d) => vec![d.to_path_buf()],
        None => DEFAULT_TRACE_DIRS.iter().map(PathBuf::from).collect(),
    };
    for d in &dirs {
        let (up, down) = (d.join(format!("{name}.up")), d.join(format!("{name}.down")));
        if up.is_file() && down.is_file() {
            return Ok(TryLink::Trace {
                name: name.to_string(),
                up: Arc::new(load_trace(&up)?),
                down: Arc::new(load_trace(&down)?),
            });
        }
    }
    let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    bail!(
        "no trace pair {name}.up and {name}.down in {}; leave --trace out for a constant link (--rate)",
        looked.join(" or ")
    )
}

/// The options from the arguments, checked.
fn options(a: &TryArgs) -> Result<TryOptions> {
    let exe =
        std::env::current_exe().map_err(|e| anyhow::anyhow!("locating the sprout binary: {e}"))?;
    let mut o = TryOptions::new(exe);
    if let Some(r) = a.rate {
        if !(r > 0.0 && r <= MAX_RATE_MBPS) {
            bail!("--rate must be above 0 and at most {MAX_RATE_MBPS} Mbit/s, got {r}");
        }
        o.link = TryLink::Constant { rate_mbps: r };
    }
    if let Some(name) = &a.trace {
        o.link = find_trace(name, a.traces.as_deref())?;
    }
    if let Some(d) = a.delay {
        parse_duration(d, TimeUnit::Milliseconds, false, "delay")?;
        if d > MAX_DELAY_MS {
            bail!("--delay must be at most {MAX_DELAY_MS} ms, got {d}");
        }
        o.delay_ms = d;
    }
    if let Some(d) = a.duration {
        parse_duration(d, TimeUnit::Seconds, true, "duration")?;
        if d > MAX_DURATION_S {
            bail!("--duration must be at most {MAX_DURATION_S} s, got {d}");
        }
        o.duration_s = d;
    }
    if let Some(c) = a.confidence {
        if !(c > 0.0 && c < 1.0) {
            bail!("--confidence must be strictly between 0 and 1, got {c}");
        }
    }
    o.probe = a.probe;
    o.confidence = a.confidence;
    Ok(o)
}

/// Runs `sprout tunnel try`.
pub(crate) fn run(a: TryArgs) -> Result<()> {
    let opts = options(&a)?;
    // A closed standard output (`| head`) must not stop the run before it cleans up.
    let say = |line: &str| {
        let _ = writeln!(std::io::stdout(), "{line}");
    };
    let mut progress = |line: &str| say(line);
    match tunnel_try::run(&opts, &mut progress) {
        Ok(report) => {
            say(&format!("measured through the tunnel ({}):", report.link));
            say(&report.text());
            Ok(())
        }
        Err(LabError::Interrupted { signal, name }) => Err(ExitStatus {
            message: format!("interrupted by {name}; removed everything the run made"),
            status: 128 + signal,
        }
        .into()),
        Err(e) => Err(e.into()),
    }
}
