//! `sprout sim`: one scheme over an uplink and a downlink trace, both directions' metrics as a
//! table or JSON (the options, their checks, the run and the JSON are `sprout_sim::sim_json`'s).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use sprout_core::direction::Load;
use sprout_eval::eval::Scheme;
use sprout_link::{QueueKind, Trace};
use sprout_sim::metrics::DirectionMetrics;
use sprout_sim::sim::{parse_load, SimConfig};
use sprout_sim::sim_json::{self, CcKind, SimOptions};

use crate::link_shape_args::LinkShapeArgs;
use crate::parsers::queue_parser;

#[derive(clap::Args)]
pub(crate) struct SimArgs {
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
    #[arg(long, default_value_t = SimConfig::default().host_jitter.as_millis_f64())]
    host_jitter_ms: f64,
    /// Bernoulli loss probability at each direction's queue, 0..1.
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Queue discipline of both directions: infinite, codel, pie or fq-codel (cubic-codel
    /// always uses CoDel).
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
    #[command(flatten)]
    shape: LinkShapeArgs,
    /// Cross traffic: a bulk TCP transfer with this congestion control (cubic, reno, vegas,
    /// ledbat, bbr, compound, copa, copa-0.1) beside the scheme's flow in each loaded
    /// direction, sharing its queues (a flow of its own in an fq-codel queue) and counted in no
    /// metric [default: none].
    #[arg(long, value_name = "CC")]
    cross: Option<CcKind>,
    /// Simulated seconds; longer than a trace loops it [default: the shorter trace's length,
    /// the run ends when either trace does].
    #[arg(long)]
    duration: Option<f64>,
    /// Seconds skipped before measuring (paper: 60).
    #[arg(long, default_value_t = 60.0)]
    skip: f64,
    /// Which directions carry data: both, up or down.
    #[arg(long, default_value = "both", value_parser = parse_load)]
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

fn load_trace(path: &Path) -> Result<Arc<Trace>> {
    Ok(Arc::new(sim_json::load_trace(path)?))
}

/// Runs `sprout sim`.
pub(crate) fn run(a: SimArgs) -> Result<()> {
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
        shape: a.shape.shape()?,
        cross: a.cross,
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
            out.duration.as_secs_f64(),
            cfg.skip.as_secs_f64()
        );
        if !a.params.is_empty() {
            println!("with {}", a.params.join(" "));
        }
        print_table(&[
            ("uplink", out.uplink.trace.name(), &out.uplink.metrics),
            ("downlink", out.downlink.trace.name(), &out.downlink.metrics),
        ]);
        if let Some(cc) = a.cross {
            println!(
                "cross traffic ({cc}, not in the table): {:.0} kB delivered on the uplink, {:.0} \
                 kB on the downlink",
                out.uplink.cross_bytes as f64 / 1e3,
                out.downlink.cross_bytes as f64 / 1e3
            );
        }
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
