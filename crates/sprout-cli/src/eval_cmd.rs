//! `sprout eval`: the paper's evaluation, simulated (`sprout_eval::eval`) or in real time
//! through the link emulator (`--emulate`, `sprout_lab`); its exit status says whether every
//! check of the paper's findings held.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use sprout_eval::eval::{self, EvalOptions, Experiment, Scheme};
use sprout_lab::emulate::{self, EmulateOptions, InteractiveOptions};
use sprout_lab::tunnel_experiment::{self, TunnelOptions};
use sprout_lab::webrtc_call;
use sprout_sim::duration::seconds_to_us;

use crate::exit_status::ExitStatus;

#[derive(clap::Args)]
pub(crate) struct EvalArgs {
    /// Folder of traces (NAME.up / NAME.down pairs) [default: the first of $SPROUT_TRACES,
    /// ./traces and ../shared/traces that holds traces, else the built-in synthetic cellular
    /// link; docs/data.md].
    #[arg(long)]
    traces: Option<PathBuf>,
    /// Comma-separated schemes of the fig7 (fig8, summary) and sensitivity experiments: sprout,
    /// sprout-ewma, cubic, reno, vegas, ledbat, bbr, compound, cubic-codel, omniscient, and on
    /// request copa, copa-0.1, sprout-wide (Sprout on the wide rate model, to 1 Gbit/s) and gcc
    /// (which runs the adaptive video source, a video call, not a bulk transfer); with
    /// --emulate also webrtc (a real WebRTC video call, aiortc; gcc is
    /// its model in the simulator) [default: the first ten; with --emulate:
    /// sprout,sprout-ewma,cubic,reno,bbr,cubic-codel].
    #[arg(long, value_delimiter = ',', value_parser = Scheme::parse_emulated)]
    schemes: Option<Vec<Scheme>>,
    /// Comma-separated experiments (fig7, fig8, summary, confidence, loss, distributions,
    /// sensitivity, model), or all [default: fig7]; also interactive (application sources on
    /// the 8 link directions against direct), rates (the links scaled x1-x64 and constant
    /// 10-1000 Mbit/s links, both Sprout models) and calibration (how often each model's
    /// forecast is met at each stated confidence, per link and horizon), none in all. With --emulate: fig7 (the schemes through
    /// the emulator), tunnel (a Cubic download with an interactive stream, then with a WebRTC
    /// call, each direct and through SproutTunnel, §5.7), tunnel-cost (a download through the tunnel over a constant
    /// 10 Mbit/s link), interactive (a constant-rate stream down the link by sprout,
    /// sprout-ewma and direct, scored by its application-level delay), or all [default: fig7].
    #[arg(long, value_delimiter = ',')]
    experiments: Vec<String>,
    /// With --emulate and the interactive experiment: comma-separated offered rates, kbit/s
    /// [default: 500,2000].
    #[arg(long, value_delimiter = ',', requires = "emulate")]
    rates: Vec<f64>,
    /// Output folder.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// Seconds skipped before measuring (paper: 60).
    #[arg(long, default_value_t = 60.0)]
    skip: f64,
    /// Parallel jobs [default: one per core].
    #[arg(long)]
    jobs: Option<usize>,
    /// Change a Sprout parameter of both Sprout schemes, KEY=VALUE (repeatable; `sprout params`
    /// lists them). Not with --emulate [default: none, the paper's parameters].
    #[arg(long = "param", value_name = "KEY=VALUE", conflicts_with = "emulate")]
    params: Vec<String>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// Run in real time through the link emulator (needs root): our Sprout over UDP and the
    /// kernel's TCP, metrics from the emulator's logs, the simulator's results beside them.
    #[arg(long)]
    pub(crate) emulate: bool,
    /// With --emulate: comma-separated link pairs to run [default: Verizon-LTE-short].
    #[arg(long, value_delimiter = ',', requires = "emulate")]
    links: Vec<String>,
    /// With --emulate: seconds of each run [default: 140; tunnel: 120; tunnel-cost: 30;
    /// interactive: 60].
    #[arg(long, requires = "emulate")]
    duration: Option<f64>,
    /// With --emulate: the Python that runs the WebRTC call of the webrtc scheme and of the
    /// tunnel experiment (`python -m sprout.webrtc_call`; install with pip install
    /// './python[webrtc]') [default: $SPROUT_PYTHON, else python3].
    #[arg(long, value_name = "PATH", requires = "emulate")]
    python: Option<PathBuf>,
    /// With --emulate --experiments tunnel: leave out the WebRTC call (aiortc) that runs beside
    /// the download in runs of its own (it needs the Python given by --python with the webrtc
    /// extra).
    #[arg(long, requires = "emulate")]
    no_call: bool,
}

/// The experiments of `--experiments` (none given: fig7).
fn parse_experiments(given: &[String]) -> Result<Vec<Experiment>> {
    if given.is_empty() {
        return Ok(vec![Experiment::Fig7]);
    }
    Experiment::parse_list(&given.join(",")).map_err(|e| anyhow::anyhow!("--experiments: {e}"))
}

/// Runs `sprout eval`.
pub(crate) fn run(a: EvalArgs) -> Result<()> {
    if a.emulate {
        let (interactive, exps) = emulated_experiments(&a.experiments)?;
        let tunnel = TunnelOptions {
            isolation: exps.contains(&Experiment::Tunnel),
            cost: exps.contains(&Experiment::TunnelCost),
            traces: a.traces.clone(),
            link: a.links.first().cloned(),
            duration_us: a
                .duration
                .map(|d| seconds_to_us(d, "duration"))
                .transpose()?,
            skip_us: Some(seconds_to_us(a.skip, "skip")?),
            out: a.out.clone(),
            sprout_exe: std::env::current_exe().context("locating the sprout binary")?,
            progress: !a.quiet,
            call: !a.no_call,
            python: webrtc_call::python_from(
                a.python.clone(),
                std::env::var_os(webrtc_call::PYTHON_ENV),
            ),
        };
        let interactive = interactive.then(|| -> Result<InteractiveOptions> {
            Ok(InteractiveOptions {
                traces: a.traces.clone(),
                link: a.links.first().cloned(),
                rates_kbps: if a.rates.is_empty() {
                    emulate::DEFAULT_INTERACTIVE_RATES_KBPS.to_vec()
                } else {
                    a.rates.clone()
                },
                duration_us: a
                    .duration
                    .map_or(Ok(emulate::DEFAULT_INTERACTIVE_DURATION_US), |d| {
                        seconds_to_us(d, "duration")
                    })?,
                out: a.out.clone(),
                sprout_exe: std::env::current_exe().context("locating the sprout binary")?,
                progress: !a.quiet,
            })
        });
        let mut summary = String::new();
        if exps.contains(&Experiment::Fig7) {
            summary.push_str(&emulate_fig7(a, &tunnel)?);
        } else if tunnel.isolation || tunnel.cost {
            let tunnel_summary = tunnel_experiment::run(&tunnel)?;
            println!("{tunnel_summary}");
            summary.push_str(&tunnel_summary);
        }
        if let Some(opts) = interactive.transpose()? {
            let text = emulate::run_interactive(&opts)?;
            println!("{text}");
            summary.push_str(&text);
        }
        return checks_held(&summary);
    }
    if let Some(s) = a.schemes.iter().flatten().find(|s| s.is_emulated_only()) {
        // The simulated evaluation has no such scheme: say why, as `sprout sim` does.
        let why = s.key().parse::<Scheme>().err().map(|e| e.to_string());
        bail!("--schemes: {}", why.unwrap_or_default());
    }
    let opts = EvalOptions {
        traces: a.traces,
        schemes: a.schemes.unwrap_or_else(|| Scheme::ALL.to_vec()),
        experiments: parse_experiments(&a.experiments)?,
        out: a.out,
        skip_us: seconds_to_us(a.skip, "skip")?,
        jobs: a.jobs,
        progress: !a.quiet,
        protocol_params: a.params,
    };
    let summary = eval::run(&opts)?;
    println!("{summary}");
    checks_held(&summary)
}

/// The emulated experiments of `--experiments`: whether the interactive one is among them
/// (`interactive`, or `all`), and the others (none when only `interactive` is asked for; fig7
/// when nothing is).
fn emulated_experiments(given: &[String]) -> Result<(bool, Vec<Experiment>)> {
    let words: Vec<String> = given
        .iter()
        .map(|w| w.trim().to_ascii_lowercase())
        .filter(|w| !w.is_empty())
        .collect();
    let interactive = words.iter().any(|w| w == "interactive" || w == "all");
    let rest: Vec<&str> = words
        .iter()
        .map(String::as_str)
        .filter(|w| *w != "interactive")
        .collect();
    if interactive && rest.is_empty() {
        return Ok((true, Vec::new()));
    }
    let exps = Experiment::parse_emulated_list(&rest.join(","))
        .map_err(|e| anyhow::anyhow!("--experiments: {e} (or interactive)"))?;
    Ok((interactive, exps))
}

/// The emulated fig7 experiment (and the tunnel experiments after it, if asked for); returns
/// what it printed.
fn emulate_fig7(a: EvalArgs, tunnel: &TunnelOptions) -> Result<String> {
    let opts = EmulateOptions {
        traces: a.traces,
        links: a.links,
        schemes: a
            .schemes
            .unwrap_or_else(|| emulate::EMULATED_SCHEMES.to_vec()),
        duration_us: seconds_to_us(a.duration.unwrap_or(140.0), "duration")?,
        skip_us: seconds_to_us(a.skip, "skip")?,
        out: a.out,
        sprout_exe: std::env::current_exe().context("locating the sprout binary")?,
        python: webrtc_call::python_from(a.python, std::env::var_os(webrtc_call::PYTHON_ENV)),
        progress: !a.quiet,
    };
    let mut summary = emulate::run(&opts)?;
    println!("{summary}");
    if tunnel.isolation || tunnel.cost {
        let tunnel_summary = tunnel_experiment::run(tunnel)?;
        println!("{tunnel_summary}");
        summary.push_str(&tunnel_summary);
    }
    Ok(summary)
}

/// The exit status of `sprout eval` when it ran to the end but a check of the paper's
/// findings failed (a line starting with ❌): distinct from 1 (an error) and 2 (a usage error).
const CHECK_FAILED_STATUS: i32 = 3;

/// Whether every check a summary printed held; if not, an [`ExitStatus`] of
/// [`CHECK_FAILED_STATUS`] naming how many failed.
fn checks_held(summary: &str) -> Result<()> {
    let failed = summary.lines().filter(|l| l.starts_with('❌')).count();
    if failed == 0 {
        return Ok(());
    }
    Err(ExitStatus {
        message: format!(
            "{failed} check{} of the paper's findings failed (the ❌ above); exit status \
             {CHECK_FAILED_STATUS}",
            if failed == 1 { "" } else { "s" }
        ),
        status: CHECK_FAILED_STATUS,
    }
    .into())
}
