//! `sprout`: simulate Sprout on cellular traces, evaluate it against the paper, fetch traces,
//! print the receiver's forecasts.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use sprout_eval::eval::{self, EvalOptions, Experiment, Scheme};
use sprout_lab::emulate::{self, EmulateOptions, InteractiveOptions};
use sprout_lab::tunnel_experiment::{self, TunnelOptions};
use sprout_lab::webrtc_call;
use sprout_link::{QueueKind, Trace};
use sprout_sim::duration::seconds_to_us;
use sprout_sim::error::chain_message;
use sprout_sim::metrics::DirectionMetrics;
use sprout_sim::overrides;
use sprout_sim::sim::{Load, SimConfig};
use sprout_sim::sim_json::{self, SimOptions};

mod forecast_cmd;
mod interactive_cmd;
mod keygen_cmd;
mod link_cmd;
mod load_cmd;
mod net_cmd;
mod saturator_cmd;
mod sweep_cmd;
mod tcp_cmd;
mod traces_cmd;
mod tunnel_cmd;

#[derive(Parser)]
#[command(
    name = "sprout",
    version,
    about = "Sprout (NSDI 2013): simulator, evaluation and tools"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate one scheme over an uplink and a downlink trace and print both directions' metrics.
    Sim(SimArgs),
    /// Run every link pair and scheme, write results.csv/json, report.md and SVG charts.
    #[command(
        after_help = "Exit status: 0 when every check of the paper's findings held, 3 when the run \
                      ended but a check failed (a line starting with ❌), 1 on an error, 2 on a \
                      usage error."
    )]
    Eval(EvalArgs),
    /// Run a Sprout server: serves many clients at once on one UDP socket, every datagram
    /// encrypted and authenticated, each session running the transfer its client asks for.
    Server(net_cmd::ServerArgs),
    /// Run a Sprout client: a secure session with a server, a saturating or paced transfer.
    Client(net_cmd::ClientArgs),
    /// Make a key for secure sessions: `--out FILE` writes a new private key (mode 0600) and
    /// prints its public key; `--public FILE` prints an existing key's public key.
    Keygen(keygen_cmd::KeygenArgs),
    /// The trace-driven link emulator: run a command in a "mobile" network namespace behind
    /// an emulated cellular link (like `mm-delay 20 mm-link UP DOWN -- cmd`).
    Link(link_cmd::LinkArgs),
    /// The Saturator (paper §4.1): record a link's delivery opportunities as mahimahi traces by
    /// keeping it backlogged (`sprout saturator server`, `client`), and check recordings
    /// against replayed traces (`sprout saturator check`).
    Saturator(saturator_cmd::SaturatorArgs),
    /// Kernel TCP bulk transfers (Cubic, Reno, BBR, ...) for the emulated evaluation.
    Tcp(tcp_cmd::TcpArgs),
    /// SproutTunnel: any IP traffic between a mobile host and a relay through secure Sprout
    /// sessions, one queue per flow (`sprout tunnel server`, `sprout tunnel client`; root).
    Tunnel(tunnel_cmd::TunnelArgs),
    /// Paced UDP both ways, every packet stamped (CLOCK_MONOTONIC) for its one-way delay: the
    /// stand-in for a video call in the tunnel experiment.
    Interactive(interactive_cmd::InteractiveArgs),
    /// Print the receiver's 8-tick forecast after every tick of a series of packet counts, as
    /// CSV.
    Forecast(forecast_cmd::ForecastArgs),
    /// Run a grid of simulations (traces x schemes x Sprout parameters x options x seeds) from
    /// a TOML spec: one CSV row per run, on all cores, resumable; --ray runs it on Ray through
    /// the Python package (`python3 -m sprout.sweep`).
    #[command(after_long_help = sweep_cmd::SPEC_HELP)]
    Sweep(sweep_cmd::SweepArgs),
    /// Print a Sprout scheme's configuration: every parameter `--param` can change, with its
    /// default value.
    Params {
        /// sprout or sprout-ewma.
        #[arg(long, default_value = "sprout")]
        scheme: Scheme,
        /// Changes to show applied, as in `sim` and `eval` [default: none].
        #[arg(long = "param", value_name = "KEY=VALUE")]
        params: Vec<String>,
    },
    /// Benchmarks of the runtime.
    Bench {
        #[command(subcommand)]
        command: BenchCommand,
    },
    /// Manage cellular traces.
    Traces {
        #[command(subcommand)]
        command: TracesCommand,
    },
}

#[derive(clap::Args)]
struct SimArgs {
    /// sprout, sprout-ewma, cubic, reno, vegas, ledbat, bbr, compound, cubic-codel, copa
    /// (delta 0.5), copa-0.1 (delta 0.1, as Pantheon runs it), gcc (Google Congestion Control;
    /// with an adaptive, video or constant --app), or direct (no congestion control: each
    /// datagram straight onto the link; with a constant or video --app).
    #[arg(long, default_value = "sprout")]
    scheme: Scheme,
    /// What the application offers in each loaded direction: bulk (always more to send, the
    /// paper's saturating sender), constant:rate=R[,packet=BYTES],
    /// video:rate=R[,fps=F][,key=SECONDS][,keyratio=X] or adaptive:[fps=F][,min=R][,max=R];
    /// rates in bit/s with k, M or G, e.g. constant:rate=500k. Defaults: packet 1200, fps 30,
    /// key 3, keyratio 5, min 100k, max 20M. A non-bulk app adds application-level delay
    /// (creation to delivery, frames whole) to the output.
    #[arg(long, default_value = "bulk", value_parser = sprout_sim::App::parse)]
    app: sprout_sim::App,
    /// Uplink trace (mahimahi format).
    #[arg(long)]
    uplink: PathBuf,
    /// Downlink trace (mahimahi format).
    #[arg(long)]
    downlink: PathBuf,
    /// Forecast confidence, strictly between 0 and 1 [default: 0.95, the paper's].
    #[arg(long)]
    confidence: Option<f64>,
    /// Change a Sprout parameter, KEY=VALUE (repeatable; `sprout params` lists them), e.g.
    /// `--param window_skip_ticks=0 --param model.sigma=250` [default: none, the paper's
    /// parameters].
    #[arg(long = "param", value_name = "KEY=VALUE")]
    params: Vec<String>,
    /// Seed for anything random (loss; when not 0, the endpoints' start times too).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Sprout hosts' timer wake-up latency: each timer fires late by a uniform random 0..this
    /// many milliseconds, drawn from the seed (TCP peers, kernel stacks, are always on time).
    #[arg(long, default_value_t = SimConfig::default().host_jitter_us as f64 / 1e3)]
    host_jitter_ms: f64,
    /// Bernoulli loss probability at each direction's queue, 0..1.
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Queue discipline of both directions: infinite or codel (cubic-codel always uses CoDel).
    #[arg(long, default_value = "infinite", value_parser = queue_parser())]
    queue: QueueKind,
    /// The uplink's queue discipline, overriding --queue [default: --queue].
    #[arg(long, value_parser = queue_parser())]
    uplink_queue: Option<QueueKind>,
    /// The downlink's queue discipline, overriding --queue [default: --queue].
    #[arg(long, value_parser = queue_parser())]
    downlink_queue: Option<QueueKind>,
    /// The uplink's loss probability, overriding --loss [default: --loss].
    #[arg(long)]
    uplink_loss: Option<f64>,
    /// The downlink's loss probability, overriding --loss [default: --loss].
    #[arg(long)]
    downlink_loss: Option<f64>,
    /// Simulated seconds; longer than a trace loops it [default: the shorter trace's length,
    /// the run ends when either trace does].
    #[arg(long)]
    duration: Option<f64>,
    /// Seconds skipped before measuring (paper: 60).
    #[arg(long, default_value_t = 60.0)]
    skip: f64,
    /// Which directions carry data: both, up or down.
    #[arg(long, default_value = "both")]
    load: Load,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Write the uplink's mahimahi mm-link log here [default: none written].
    #[arg(long, requires = "downlink_log")]
    uplink_log: Option<PathBuf>,
    /// Write the downlink's mahimahi mm-link log here [default: none written].
    #[arg(long, requires = "uplink_log")]
    downlink_log: Option<PathBuf>,
}

#[derive(clap::Args)]
struct EvalArgs {
    /// Folder of traces (NAME.up / NAME.down pairs) [default: ../shared/traces if it holds
    /// traces, else ./traces if it does, else the built-in synthetic cellular link].
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
    emulate: bool,
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

/// The parser of a queue discipline on the command line (`sprout sim`, `sprout link`): the
/// link's own [`QueueKind`], its names and their help listed as clap lists an enum's.
pub(crate) fn queue_parser() -> impl clap::builder::TypedValueParser<Value = QueueKind> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let names = QueueKind::ALL.map(|k| PossibleValue::new(k.key()).help(k.help()));
    PossibleValuesParser::new(names).map(|s| s.parse::<QueueKind>().expect("a possible value"))
}

/// The experiments of `--experiments` (none given: fig7).
fn parse_experiments(given: &[String]) -> Result<Vec<Experiment>> {
    if given.is_empty() {
        return Ok(vec![Experiment::Fig7]);
    }
    Experiment::parse_list(&given.join(",")).map_err(|e| anyhow::anyhow!("--experiments: {e}"))
}

#[derive(Subcommand)]
enum BenchCommand {
    /// One `sprout server` holding many concurrent paced sessions on loopback while a flood of
    /// bogus handshakes hits it: sessions lost, delivered/released per session, server CPU and
    /// memory per session.
    Load(load_cmd::LoadArgs),
}

#[derive(Subcommand)]
enum TracesCommand {
    /// Download the paper's traces (from the mahimahi repository) into DIR.
    Fetch {
        /// Target folder.
        #[arg(default_value = "traces")]
        dir: PathBuf,
    },
    /// Figures of traces: duration, mean and peak rate, outages, the inter-arrival histogram
    /// of the paper's Figure 2 and the per-second counts; text or --json.
    Stats(traces_cmd::StatsArgs),
    /// Chart (SVG) of traces' capacity over time, both directions of a pair on one chart.
    Plot(traces_cmd::PlotArgs),
    /// Write synthetic traces: constant, the paper's Brownian-motion-with-outages model, or
    /// the published reproduction's inter-arrival distributions; seeded.
    Synth(traces_cmd::SynthArgs),
    /// Convert a per-interval throughput CSV (time, Mbit/s) to a trace: an approximation,
    /// see --help.
    Convert(traces_cmd::ConvertArgs),
    /// Multiply a trace's delivery rate by a factor, keeping its timing (outages, period).
    Scale(traces_cmd::ScaleArgs),
}

fn load_trace(path: &Path) -> Result<Arc<Trace>> {
    Ok(Arc::new(sim_json::load_trace(path)?))
}

fn cmd_sim(a: SimArgs) -> Result<()> {
    let up = load_trace(&a.uplink)?;
    let down = load_trace(&a.downlink)?;
    // The options, their checks, the run and the JSON are sim_json's, which the Python
    // package (`sprout.simulate`) shares.
    let opts = SimOptions {
        scheme: a.scheme,
        confidence: a.confidence,
        params: a.params.clone(),
        seed: a.seed,
        host_jitter_ms: a.host_jitter_ms,
        loss: a.loss,
        queue: a.queue,
        uplink_queue: a.uplink_queue,
        downlink_queue: a.downlink_queue,
        uplink_loss: a.uplink_loss,
        downlink_loss: a.downlink_loss,
        duration_s: a.duration,
        skip_s: a.skip,
        load: a.load,
        app: a.app,
    };
    let cfg = opts.config()?;
    let logs = match (&a.uplink_log, &a.downlink_log) {
        (Some(u), Some(d)) => Some((u.as_path(), d.as_path())),
        _ => None,
    };
    let out = sim_with_progress(up, down, &cfg, logs)?;
    if a.json {
        let v = sim_json::to_json(&opts, &cfg, &out);
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        // Only Sprout forecasts at a confidence.
        let confidence = if a.scheme.uses_confidence() {
            format!(" (confidence {})", cfg.protocol.confidence)
        } else {
            String::new()
        };
        println!(
            "{}{confidence}, load {}, {:.1} s simulated, measured from {:.1} s",
            a.scheme.key(),
            match a.load {
                Load::Both => "both directions",
                Load::Up => "uplink only",
                Load::Down => "downlink only",
            },
            out.duration_us as f64 / 1e6,
            cfg.skip_us as f64 / 1e6
        );
        if !a.params.is_empty() {
            println!("with {}", a.params.join(" "));
        }
        print_table(&[
            ("uplink", out.uplink.trace.name(), &out.uplink.metrics),
            ("downlink", out.downlink.trace.name(), &out.downlink.metrics),
        ]);
        if !a.app.is_bulk() {
            // Application-level delay: creation to delivery; a message never delivered is
            // infinitely late ("never").
            let ms = |v: f64| match v {
                v if v.is_finite() => format!("{v:.0} ms"),
                v if v.is_nan() => "-".to_string(),
                _ => "never".to_string(),
            };
            println!("\napplication {}", a.app);
            println!(
                "{:<9} {:>11} {:>11} {:>10} {:>9} {:>10} {:>10} {:>10}",
                "direction",
                "offered",
                "delivered",
                "messages",
                "app p50",
                "p95",
                "p99",
                "<=150 ms"
            );
            for (dir, run) in [("uplink", &out.uplink), ("downlink", &out.downlink)] {
                if let Some(m) = &run.app {
                    println!(
                        "{:<9} {:>6.0} kb/s {:>6.0} kb/s {:>10} {:>9} {:>10} {:>10} {:>9.1}%",
                        dir,
                        m.offered_kbps,
                        m.delivered_kbps,
                        m.messages,
                        ms(m.delay_p50_ms),
                        ms(m.delay_p95_ms),
                        ms(m.delay_p99_ms),
                        m.within_150ms * 100.0
                    );
                }
            }
        }
    }
    Ok(())
}

/// Runs the simulation; a run that takes more than a few seconds of wall time shows a
/// progress bar of simulated seconds on the terminal.
fn sim_with_progress(
    up: Arc<Trace>,
    down: Arc<Trace>,
    cfg: &SimConfig,
    logs: Option<(&Path, &Path)>,
) -> Result<sprout_sim::sim::SimOutput> {
    let started = std::time::Instant::now();
    let mut bar: Option<indicatif::ProgressBar> = None;
    let mut progress = |now_us: u64, duration_us: u64| {
        if bar.is_none() && started.elapsed() > std::time::Duration::from_secs(2) {
            let b = sprout_eval::progress::bar(duration_us / 1_000_000, " s", true);
            b.set_message("simulated");
            bar = Some(b);
        }
        if let Some(b) = &bar {
            b.set_position(now_us / 1_000_000);
        }
    };
    let out = sim_json::run_with_progress(up, down, cfg, logs, &mut progress);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(out?)
}

fn print_table(rows: &[(&str, &str, &DirectionMetrics)]) {
    println!(
        "{:<9} {:<28} {:>11} {:>10} {:>11} {:>6} {:>10} {:>10} {:>14} {:>14}",
        "direction",
        "trace",
        "throughput",
        "goodput",
        "capacity",
        "util",
        "p95 delay",
        "omniscient",
        "self-inflicted",
        "(data only)"
    );
    let mut no_data = Vec::new();
    for (dir, trace, m) in rows {
        // A direction that carried no data has no data-only delay: say so below the table.
        let data_only = if m.self_inflicted_data_ms.is_finite() {
            format!("{:>11.0} ms", m.self_inflicted_data_ms)
        } else {
            no_data.push(*dir);
            format!("{:>14}", "-")
        };
        println!(
            "{:<9} {:<28} {:>6.0} kb/s {:>5.0} kb/s {:>6.0} kb/s {:>5.1}% {:>7.0} ms {:>7.0} ms {:>11.0} ms {}",
            dir,
            trace,
            m.throughput_kbps,
            m.goodput_kbps,
            m.capacity_kbps,
            100.0 * m.utilization,
            m.p95_delay_ms,
            m.omniscient_p95_ms,
            m.self_inflicted_ms,
            data_only
        );
    }
    if !no_data.is_empty() {
        println!(
            "(data only): none for the {}, which carried no data (--load), only acknowledgements or heartbeats",
            no_data.join(" and ")
        );
    }
}

fn cmd_eval(a: EvalArgs) -> Result<()> {
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

/// An error that makes `sprout` exit with its own status after saying why.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
struct ExitStatus {
    message: String,
    status: i32,
}

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

fn cmd_params(scheme: Scheme, params: &[String]) -> Result<()> {
    if !scheme.is_sprout() {
        bail!("`sprout params` describes sprout and sprout-ewma; other schemes have no Sprout parameters");
    }
    let mut cfg = scheme.protocol_config();
    overrides::apply(&mut cfg, params)?;
    println!("{}", overrides::describe(&cfg));
    Ok(())
}

/// The command line's grammar, with negative numbers taken as values everywhere, so that
/// `--seconds -10` reaches the option's own check ("must be more than 0") instead of being
/// read as an unknown flag `-1`.
fn command() -> clap::Command {
    fn negatives_are_values(cmd: clap::Command) -> clap::Command {
        let names: Vec<String> = cmd
            .get_subcommands()
            .map(|c| c.get_name().to_string())
            .collect();
        let mut cmd = cmd.allow_negative_numbers(true);
        for name in names {
            cmd = cmd.mut_subcommand(name, negatives_are_values);
        }
        cmd
    }
    negatives_are_values(<Cli as clap::CommandFactory>::command())
}

/// Whether the command only writes to its standard output and files (no sockets): such a
/// command ends quietly when its reader goes away (`sprout params | head`), as `cat` does.
fn ends_quietly_on_a_closed_pipe(command: &Command) -> bool {
    match command {
        Command::Sim(_)
        | Command::Params { .. }
        | Command::Forecast(_)
        | Command::Traces { .. }
        | Command::Sweep(_)
        | Command::Keygen(_) => true,
        Command::Eval(a) => !a.emulate,
        _ => false,
    }
}

fn main() {
    let matches = command().get_matches();
    let cli =
        <Cli as clap::FromArgMatches>::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    if ends_quietly_on_a_closed_pipe(&cli.command) {
        sprout_os::signals::default_sigpipe();
    }
    let result = match cli.command {
        Command::Sim(a) => cmd_sim(a),
        Command::Eval(a) => cmd_eval(a),
        Command::Server(a) => net_cmd::server(a),
        Command::Client(a) => net_cmd::client(a),
        Command::Keygen(a) => keygen_cmd::run(a),
        Command::Bench {
            command: BenchCommand::Load(a),
        } => load_cmd::run(a),
        Command::Link(a) => link_cmd::run(a),
        Command::Tcp(a) => tcp_cmd::run(a),
        Command::Saturator(a) => saturator_cmd::run(a),
        Command::Tunnel(a) => tunnel_cmd::run(a),
        Command::Interactive(a) => interactive_cmd::run(a),
        Command::Forecast(a) => forecast_cmd::run(a),
        Command::Sweep(a) => sweep_cmd::run(a),
        Command::Params { scheme, params } => cmd_params(scheme, &params),
        Command::Traces {
            command: TracesCommand::Fetch { dir },
        } => eval::fetch_traces(&dir)
            .map(|msg| println!("{msg}"))
            .map_err(anyhow::Error::from),
        Command::Traces {
            command: TracesCommand::Stats(a),
        } => traces_cmd::stats(a),
        Command::Traces {
            command: TracesCommand::Plot(a),
        } => traces_cmd::plot(a),
        Command::Traces {
            command: TracesCommand::Synth(a),
        } => traces_cmd::synth(a),
        Command::Traces {
            command: TracesCommand::Convert(a),
        } => traces_cmd::convert(a),
        Command::Traces {
            command: TracesCommand::Scale(a),
        } => traces_cmd::scale(a),
    };
    if let Err(e) = result {
        eprintln!("error: {}", chain_message(e.as_ref()));
        let status = e.downcast_ref::<ExitStatus>().map_or(1, |s| s.status);
        std::process::exit(status);
    }
}
