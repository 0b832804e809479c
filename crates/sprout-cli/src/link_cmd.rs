//! `sprout link`: runs a command in a "mobile" network namespace behind an emulated cellular
//! link (`sprout_emu`), like `mm-delay 20 mm-link UP DOWN -- cmd`.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use sprout_emu::{fidelity, DirectionReport, EmuError, Emulator, EmulatorConfig};
use sprout_link::{DirectionShape, LinkConfig, QueueKind};
use sprout_os::caps::has_network_privileges;
use sprout_os::child::{
    become_subreaper, exit_code, reclaim_terminal, terminate_group, wait_for, WaitOutcome,
};
use sprout_os::signals::SignalWatcher;
use sprout_sim::duration::{duration_us, TimeUnit};
use sprout_sim::sim_json::load_trace;

use crate::link_shape_args::LinkShapeArgs;
use crate::parsers::queue_parser;

/// Longest time the link still delivers what the command sent before it exited by itself.
const EXIT_DRAIN: Duration = Duration::from_secs(1);

/// `sprout link` arguments.
#[derive(clap::Args)]
#[command(
    after_help = "The command runs in a new network namespace with address $SPROUT_LINK_MOBILE; \
                  $SPROUT_LINK_OUTSIDE (also $MAHIMAHI_BASE) is the emulator's side, reachable \
                  only through the emulated link. Needs root. Exit status: the command's (128 + \
                  signal if it was killed), 0 when --duration ended it, 130/143/129 when sprout \
                  link itself gets SIGINT/SIGTERM/SIGHUP."
)]
pub(crate) struct LinkArgs {
    /// Uplink trace (mobile → outside), mahimahi format.
    #[arg(long, required_unless_present = "fidelity")]
    uplink: Option<PathBuf>,
    /// Downlink trace (outside → mobile), mahimahi format.
    #[arg(long, required_unless_present = "fidelity")]
    downlink: Option<PathBuf>,
    /// One-way propagation delay of each direction (ms).
    #[arg(long, default_value_t = 20.0)]
    delay: f64,
    /// Queue discipline of both directions: infinite, codel, pie or fq-codel.
    #[arg(long, default_value = "infinite", value_parser = queue_parser())]
    queue: QueueKind,
    /// The uplink's queue discipline, overriding --queue [default: --queue].
    #[arg(long, value_parser = queue_parser())]
    uplink_queue: Option<QueueKind>,
    /// The downlink's queue discipline, overriding --queue [default: --queue].
    #[arg(long, value_parser = queue_parser())]
    downlink_queue: Option<QueueKind>,
    /// Bernoulli loss probability of both directions, 0..1.
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// The uplink's loss probability, overriding --loss [default: --loss].
    #[arg(long)]
    uplink_loss: Option<f64>,
    /// The downlink's loss probability, overriding --loss [default: --loss].
    #[arg(long)]
    downlink_loss: Option<f64>,
    #[command(flatten)]
    shape: LinkShapeArgs,
    /// Seed of the loss generators, jitter and PIE (each direction has its own stream, as in
    /// `sprout sim`).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Do not repeat the traces when they end (the paper's Cellsim); by default they loop,
    /// as in mahimahi.
    #[arg(long)]
    no_loop: bool,
    /// Stop after this many seconds (SIGTERM to the command's process group, SIGKILL 1 s
    /// later; exit status 0). With --fidelity: the length of each measurement [default: none,
    /// run until the command exits; with --fidelity, 3].
    #[arg(long)]
    duration: Option<f64>,
    /// Write the uplink's mahimahi mm-link log here [default: none written].
    #[arg(long)]
    uplink_log: Option<PathBuf>,
    /// Write the downlink's mahimahi mm-link log here [default: none written].
    #[arg(long)]
    downlink_log: Option<PathBuf>,
    /// Measure the emulator's own fidelity (no traces needed): utilization of a UDP flood at
    /// 12 and 200 Mbit/s and the extra one-way delay of a light probe; prints a table.
    #[arg(long, conflicts_with_all = ["uplink", "downlink", "command"])]
    fidelity: bool,
    /// The command to run in the mobile namespace, after `--` [default: $SHELL, or /bin/sh].
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    command: Vec<String>,
}

/// Checks the arguments and builds the emulator's configuration (traces loaded) and the
/// duration.
fn configure(a: &LinkArgs) -> Result<(EmulatorConfig, Option<Duration>)> {
    let (Some(up_path), Some(down_path)) = (&a.uplink, &a.downlink) else {
        bail!("--uplink and --downlink are required");
    };
    // The trace error's message already names the file, the line and the cause.
    let load = |p: &PathBuf| load_trace(p).map(Arc::new);
    let up = load(up_path)?;
    let down = load(down_path)?;
    let delay_us = duration_us(a.delay, TimeUnit::Milliseconds, false, "delay")?;
    let duration = a
        .duration
        .map(|s| duration_us(s, TimeUnit::Seconds, true, "duration"))
        .transpose()?
        .map(Duration::from_micros);
    let base = LinkConfig {
        propagation_delay_us: sprout_core::time::Duration::from_micros(delay_us),
        looping: !a.no_loop,
        ..LinkConfig::default()
    };
    let shape = a.shape.shape()?;
    let link = |queue: Option<QueueKind>, loss: Option<f64>, stream: u64, s: DirectionShape| {
        let mut cfg = LinkConfig {
            queue: queue.unwrap_or(a.queue).config(),
            loss: loss.unwrap_or(a.loss),
            seed: a.seed.wrapping_mul(2).wrapping_add(stream),
            ..base.clone()
        };
        s.apply(&mut cfg);
        cfg
    };
    let uplink_link = link(a.uplink_queue, a.uplink_loss, 1, shape.uplink());
    let downlink_link = link(a.downlink_queue, a.downlink_loss, 0, shape.downlink());
    shape.validate(&uplink_link, &downlink_link)?;
    uplink_link
        .validate()
        .map_err(|e| anyhow::anyhow!("uplink: {e} (--loss / --uplink-loss)"))?;
    downlink_link
        .validate()
        .map_err(|e| anyhow::anyhow!("downlink: {e} (--loss / --downlink-loss)"))?;
    if a.uplink_log.is_some() && a.uplink_log == a.downlink_log {
        bail!("--uplink-log and --downlink-log must be different files");
    }
    let config = EmulatorConfig {
        uplink: up,
        downlink: down,
        uplink_link,
        downlink_link,
        uplink_log: a.uplink_log.clone(),
        downlink_log: a.downlink_log.clone(),
    };
    Ok((config, duration))
}

/// Runs `sprout link`.
pub(crate) fn run(a: LinkArgs) -> Result<()> {
    if a.fidelity {
        return run_fidelity(a.duration.unwrap_or(3.0));
    }
    let (config, duration) = configure(&a)?;
    if !has_network_privileges() {
        return Err(EmuError::NotPrivileged.into());
    }
    let (program, args) = match a.command.split_first() {
        Some((p, rest)) => (p.clone(), rest.to_vec()),
        None => (
            std::env::var("SHELL")
                .ok()
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "/bin/sh".into()),
            Vec::new(),
        ),
    };
    // Catch stop signals from before the namespace exists, so that none can leave the command
    // running.
    let signals = SignalWatcher::new().context("install signal handlers")?;
    // Orphans of the command's group come to us, to be reaped when the group is ended.
    become_subreaper();
    let up_name = config.uplink.name().to_string();
    let down_name = config.downlink.name().to_string();
    let emu = Emulator::start(config)?;
    eprintln!(
        "sprout link: mobile {} (in its own namespace) <-> outside {}; running {}",
        emu.mobile_addr(),
        emu.outside_addr(),
        program
    );
    let mut cmd = Command::new(&program);
    cmd.args(&args);
    let mut child = match emu.spawn_interactive(&mut cmd) {
        Ok(c) => c,
        Err(e) => {
            let _ = emu.stop();
            return Err(e).with_context(|| format!("cannot run `{program}`"));
        }
    };
    let outcome = wait_for(&mut child, duration, &signals);
    // Whatever happened, end the command's whole process group (leftover members included).
    let status = terminate_group(&mut child, Duration::from_secs(1));
    reclaim_terminal();
    // A command that ended by itself may have sent its last packets (a close) just before:
    // they still cross the link, as they would a real one.
    let stopped = match &outcome {
        Ok(WaitOutcome::Exited(_)) => emu.drain_and_stop(EXIT_DRAIN),
        _ => emu.stop(),
    };
    let outcome = outcome.context("waiting for the command")?;
    let report = stopped?;
    print_summary(&[
        ("uplink", &up_name, &report.uplink),
        ("downlink", &down_name, &report.downlink),
    ]);
    let status = status.context("waiting for the command")?;
    let code = match outcome {
        WaitOutcome::Exited(s) => {
            eprintln!("sprout link: {program} exited with {s}");
            exit_code(s)
        }
        WaitOutcome::TimedOut => {
            eprintln!("sprout link: stopped {program} after --duration ({status})");
            0
        }
        WaitOutcome::Signaled(sig) => {
            eprintln!("sprout link: stopped by signal {sig}; {program}: {status}");
            128 + sig
        }
    };
    drop(signals);
    std::process::exit(code);
}

fn print_summary(rows: &[(&str, &str, &DirectionReport)]) {
    eprintln!(
        "{:<9} {:<24} {:>9} {:>12} {:>9} {:>12} {:>8} {:>6} {:>9} {:>14}",
        "direction",
        "trace",
        "pkts in",
        "bytes in",
        "delivered",
        "bytes deliv.",
        "dropped",
        "lost",
        "cap. used",
        "late p50/p99"
    );
    for (dir, trace, r) in rows {
        let s = &r.stats;
        let late = |q| {
            r.lateness_us
                .quantile(q)
                .map_or_else(|| "-".to_string(), |v| v.to_string())
        };
        eprintln!(
            "{:<9} {:<24} {:>9} {:>12} {:>9} {:>12} {:>8} {:>6} {:>8.1}% {:>11} µs",
            dir,
            trace,
            s.link.packets_sent,
            s.link.bytes_sent,
            s.link.packets_delivered,
            s.link.bytes_delivered,
            s.link.packets_dropped,
            s.link.packets_lost,
            100.0 * s.capacity_used(),
            format!("{}/{}", late(0.5), late(0.99))
        );
    }
    for (dir, _, r) in rows {
        let l = &r.stats.link;
        if l.packets_marked > 0 {
            eprintln!(
                "{dir}: {} packets marked CE ({} by the AQM instead of a drop, {} by the L4S step)",
                l.packets_marked, l.packets_aqm_marked, l.packets_step_marked
            );
        }
    }
}

fn run_fidelity(seconds: f64) -> Result<()> {
    if !(seconds.is_finite() && seconds > 0.0 && seconds <= 600.0) {
        bail!("--duration must be between 0 and 600 seconds, got {seconds}");
    }
    let report = fidelity::run_all(seconds)?;
    print!("{report}");
    if report.checks().iter().any(|(_, ok)| !ok) {
        bail!("some fidelity checks failed");
    }
    Ok(())
}
