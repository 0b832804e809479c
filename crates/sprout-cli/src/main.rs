//! `sprout`: simulate Sprout on cellular traces, evaluate it against the paper, fetch traces,
//! print the receiver's forecasts.
#![forbid(unsafe_code)]

//!
//! This file parses the command line and sends each verb to its own `<verb>_cmd.rs`, which
//! holds the verb's arguments and the one call into a library that does its work
//! (`tools/floors` checks it).

use clap::{Parser, Subcommand};
use sprout_core::error_chain::chain_message;

use exit_status::ExitStatus;

mod eval_cmd;
mod exit_status;
mod forecast_cmd;
mod interactive_cmd;
mod keygen_cmd;
mod link_cmd;
mod link_shape_args;
mod load_cmd;
mod net_cmd;
mod params_cmd;
mod parsers;
mod saturator_cmd;
mod sim_cmd;
mod sweep_cmd;
mod tcp_cmd;
mod traces_cmd;
mod tunnel_cmd;
mod tunnel_try_cmd;

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
    Sim(sim_cmd::SimArgs),
    /// Run every link pair and scheme, write results.csv/json, report.md and SVG charts.
    #[command(
        after_help = "Exit status: 0 when every check of the paper's findings held, 3 when the run \
                      ended but a check failed (a line starting with ❌), 1 on an error, 2 on a \
                      usage error."
    )]
    Eval(eval_cmd::EvalArgs),
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
    Params(params_cmd::ParamsArgs),
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
    Fetch(traces_cmd::FetchArgs),
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
        | Command::Params(_)
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
        Command::Sim(a) => sim_cmd::run(a),
        Command::Eval(a) => eval_cmd::run(a),
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
        Command::Params(a) => params_cmd::run(a),
        Command::Traces {
            command: TracesCommand::Fetch(a),
        } => traces_cmd::fetch(a),
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
