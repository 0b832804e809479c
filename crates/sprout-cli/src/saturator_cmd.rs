//! `sprout saturator server|client|check`: the paper's Saturator (§4.1), recording a link's
//! delivery opportunities as mahimahi traces, and its round trips through the emulator.
//!
//! The client runs at the mobile end and connects to the server. Whichever end sends a
//! direction keeps that direction's queue backlogged with MTU-sized UDP packets (1472-byte
//! payloads, 1500-byte IPv4 packets; `--mtu`), a window of packets in flight adjusted so that
//! the measured RTT stays between `--low-rtt-ms` (750) and `--high-rtt-ms` (3000); the other
//! end records when each packet arrives (kernel receive timestamps, `SO_TIMESTAMPNS`, on
//! `CLOCK_MONOTONIC`) and sends feedback: over the same path by default (piggybacked on its
//! own data when it sends some), or over a second path with `--feedback ADDR` (the server's
//! address as reached through that path; the paper used a second phone, so that a backlog of
//! seconds in one direction does not delay the other direction's feedback — record both
//! directions at once with it: through the emulator, recording both directions of
//! Verizon-LTE-short and Verizon-EVDO-driving over one path missed 15-28% of their
//! opportunities, and the summaries' `low_backlog_seconds` rose from 1-2 to 24-46; with a
//! second path the recordings matched the traces, `sprout saturator check --same-path` against
//! `sprout saturator check`). So the client records both directions by default only with
//! `--feedback`; over one path it records the downlink (`--direction up` for the uplink), and
//! `--direction both` over one path is done with a loud warning.
//!
//! The server answers a hello from an address that has not proven itself with a 32-byte
//! challenge only (the client's hellos are padded to 1200 bytes or more); the client sends
//! its cookie back from the same address, and only then does a recording start. During a
//! recording only the session's proven addresses count; a client silent for `--idle-timeout`
//! (5 s) frees the server, its recording cut where it was last heard. One client holds the
//! server at most `--max-recording` (10 minutes): the server ends the recording there (the
//! client's files say it was cut at that bound) and meanwhile refuses other clients, saying
//! when to try again. A client whose server never acknowledges the end of the recording (it
//! died) writes what it has as `NAME.incomplete.*`, cut where the server was last heard, and
//! exits non-zero. The protocol and the runtime are [`sprout_saturator`]; this module parses
//! the arguments into its options and calls it.
//!
//! Files: the client writes `NAME.down` (its recording of the downlink), `NAME.up` (the
//! server's recording of the uplink, sent back to the client when the recording ends, over the
//! feedback path if there is one) and `NAME.json` (both summaries). With `--out DIR` the server
//! also keeps its own copy, `DIR/<name>.up` and `DIR/<name>.up.json` (the name the client
//! gave, without folders). Each trace has one line per recorded packet: the millisecond of its
//! arrival counted from the start of the recording on the recording side (the client's first
//! hello for `.down`, the server's receipt of the first hello for `.up`), sorted; the summaries
//! give that start on `CLOCK_MONOTONIC` (`start_clock_us`) to line recordings up with other
//! clocks of the same host (the check does, with the emulator's).
//!
//! Both sides print a line per second (rate, RTT, window, losses of each direction) and a
//! summary (`--json`: one JSON object per line). A recording survives loss, reordering,
//! duplicates and outages of any length (the sender keeps probing, 5 packets/s, with its window
//! full); stray or malformed datagrams are counted and ignored. Ctrl-C ends the client's
//! recording early, as if its duration had passed.

use anyhow::{bail, Context, Result};
use sprout_core::direction::Load;
use sprout_lab::saturator_check::{self, CheckOptions};
use sprout_saturator::runtime::{self, seconds, ClientOptions, SaturatorError, ServerOptions};
use std::net::SocketAddr;
use std::path::PathBuf;

/// `sprout saturator` arguments.
#[derive(clap::Args)]
pub(crate) struct SaturatorArgs {
    #[command(subcommand)]
    command: SaturatorCommand,
}

#[derive(clap::Subcommand)]
enum SaturatorCommand {
    /// Wait for a client and run the recording it asks for (one at a time).
    Server(ServerArgs),
    /// Record a link to a server: NAME.down, NAME.up, NAME.json.
    Client(ClientArgs),
    /// Round trips: record the paper's traces replayed by the emulator (root; real time) and
    /// compare the recordings with them (per-second counts, totals, Sprout in the simulator).
    Check(CheckArgs),
}

#[derive(clap::Args)]
struct ServerArgs {
    /// Address and port to listen on (data and feedback).
    #[arg(long, default_value = "0.0.0.0:9200")]
    listen: SocketAddr,
    /// Also write each recording of the uplink here, as <name>.up and <name>.up.json
    /// [default: only sent back to the client].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Exit after the first recording.
    #[arg(long)]
    once: bool,
    /// End a recording whose client has been silent this long, s (the recording is cut where
    /// the client was last heard). A recording client is heard many times a second; over one
    /// path, an uplink outage longer than this ends the recording: raise it for such links.
    #[arg(long, default_value_t = runtime::DEFAULT_IDLE_TIMEOUT_S as f64)]
    idle_timeout: f64,
    /// Longest recording of one client, s (up to a day): the server ends a recording there
    /// (the client is told, and its files say it was cut at this bound), and meanwhile
    /// refuses other clients, telling them when to try again.
    #[arg(long, value_name = "SECS", default_value_t = runtime::DEFAULT_MAX_RECORDING_S as f64)]
    max_recording: f64,
    /// Largest IP packet a client may ask the data packets to be, bytes.
    #[arg(long, default_value_t = runtime::DEFAULT_MAX_MTU)]
    max_mtu: u32,
    /// JSON lines instead of text.
    #[arg(long)]
    json: bool,
    /// No per-second lines.
    #[arg(long)]
    quiet: bool,
}

#[derive(clap::Args)]
struct ClientArgs {
    /// The server's address and port (the data path).
    #[arg(long)]
    connect: SocketAddr,
    /// The server's address and port over a second path, for the feedback (acks) of both
    /// directions and the transfer of the uplink's recording [default: the data path].
    #[arg(long, value_name = "ADDR")]
    feedback: Option<SocketAddr>,
    /// Directions to saturate and record: up, down or both at once [default: both with
    /// --feedback, else down: over one path the acks would queue behind the saturated data].
    #[arg(long)]
    direction: Option<Load>,
    /// Seconds of recording [default: until Ctrl-C].
    #[arg(long)]
    duration: Option<f64>,
    /// Output prefix: writes NAME.down, NAME.up and NAME.json.
    #[arg(long, default_value = "saturator")]
    name: PathBuf,
    /// Low RTT mark of both senders, ms: the window grows while the RTT is below it.
    #[arg(long, default_value_t = 750)]
    low_rtt_ms: u32,
    /// High RTT mark of both senders, ms: the window shrinks while the RTT is above it.
    #[arg(long, default_value_t = 3000)]
    high_rtt_ms: u32,
    /// Largest window of both senders, packets (a cap for tests or fragile networks; the
    /// RTT marks normally keep it far below).
    #[arg(long, default_value_t = 100_000)]
    max_window: u32,
    /// IP packet size of the data packets, bytes (the UDP payload is 28 bytes less over IPv4,
    /// 48 over IPv6); each trace line stands for one such packet.
    #[arg(long, default_value_t = 1500)]
    mtu: u32,
    /// Seconds to wait, after the recording, for the server's recording of the uplink.
    #[arg(long, default_value_t = 60.0)]
    fetch_timeout: f64,
    /// JSON lines instead of text.
    #[arg(long)]
    json: bool,
    /// No per-second lines.
    #[arg(long)]
    quiet: bool,
}

#[derive(clap::Args)]
struct CheckArgs {
    /// Folder of trace pairs (NAME.up, NAME.down) [default: $SPROUT_TRACES, ./traces or
    /// ../shared/traces, the first that holds pairs].
    #[arg(long)]
    traces: Option<PathBuf>,
    /// Comma-separated link pairs [default: every pair in the folder].
    #[arg(long, value_delimiter = ',')]
    links: Vec<String>,
    /// Seconds compared (from --from).
    #[arg(long, default_value_t = 120)]
    seconds: u64,
    /// First second compared. Seconds 0 and 1 are the warm-up: the recording starts a few
    /// tens of ms into the replay, its handshake crosses the data path (and on
    /// Verizon-EVDO-driving the uplink has no opportunity until 1.06 s), and the window opens.
    #[arg(long, default_value_t = 2)]
    from: u64,
    /// Bernoulli loss at each direction's queue, 0..1 (the loss variant).
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Seconds of outage injected in the middle of the compared window, both directions.
    #[arg(long, default_value_t = 0)]
    outage: u64,
    /// Seed of the loss.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Run the link model on a virtual clock instead of the emulator (no root, no real time).
    #[arg(long)]
    simulated: bool,
    /// Output folder (recordings, logs, saturator-check.csv and .json).
    #[arg(long, default_value = "saturator-check")]
    out: PathBuf,
    /// Send the Saturator's feedback over the emulated links (the data path) instead of a
    /// separate path, to see what the paper's second phone avoided.
    #[arg(long)]
    same_path: bool,
    /// Leave the emulator's threads at normal priority (by default they run under
    /// SCHED_FIFO, so that a busy machine does not make them deliver, and the recording
    /// stamp, late).
    #[arg(long)]
    no_realtime: bool,
    /// Print the results as JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs `sprout saturator`.
pub(crate) fn run(a: SaturatorArgs) -> Result<()> {
    match a.command {
        SaturatorCommand::Server(s) => Ok(runtime::server(&s.options()?)?),
        SaturatorCommand::Client(c) => {
            runtime::client(&c.options()?)?;
            Ok(())
        }
        SaturatorCommand::Check(c) => check(c),
    }
}

impl ServerArgs {
    /// The server's options.
    fn options(self) -> Result<ServerOptions, SaturatorError> {
        Ok(ServerOptions {
            listen: self.listen,
            out: self.out,
            once: self.once,
            idle_timeout: seconds(self.idle_timeout, true, "idle-timeout")?,
            max_recording: seconds(self.max_recording, true, "max-recording")?,
            max_mtu: self.max_mtu,
            json: self.json,
            quiet: self.quiet,
        })
    }
}

impl ClientArgs {
    /// The client's options.
    fn options(self) -> Result<ClientOptions, SaturatorError> {
        let duration = match self.duration {
            None => None,
            Some(d) => Some(seconds(d, true, "duration")?),
        };
        Ok(ClientOptions {
            connect: self.connect,
            feedback: self.feedback,
            direction: self.direction,
            duration,
            name: self.name,
            low_rtt: sprout_core::time::Duration::from_millis(u64::from(self.low_rtt_ms)),
            high_rtt: sprout_core::time::Duration::from_millis(u64::from(self.high_rtt_ms)),
            max_window: self.max_window,
            mtu: self.mtu,
            fetch_timeout: seconds(self.fetch_timeout, false, "fetch-timeout")?,
            json: self.json,
            quiet: self.quiet,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Check
// ---------------------------------------------------------------------------------------------

fn check(a: CheckArgs) -> Result<()> {
    let traces = match a.traces {
        Some(t) => t,
        None => sprout_link::data_dirs::find_trace_dir().unwrap_or_else(|| PathBuf::from("traces")),
    };
    if !(0.0..1.0).contains(&a.loss) {
        bail!("--loss must be a probability in [0, 1), got {}", a.loss);
    }
    if a.seconds == 0 || a.outage >= a.seconds {
        bail!("--seconds must be positive and longer than --outage");
    }
    let opts = CheckOptions {
        traces,
        links: a.links,
        seconds: a.seconds,
        from_s: a.from,
        loss: a.loss,
        outage_s: a.outage,
        seed: a.seed,
        simulated: a.simulated,
        out: a.out,
        sprout_exe: std::env::current_exe().context("locating the sprout binary")?,
        same_path: a.same_path,
        realtime: !a.no_realtime,
        progress: !a.json,
    };
    let results = saturator_check::run(&opts)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&results)?);
    } else {
        println!("{}", saturator_check::table(&results));
    }
    if !results.all_ok {
        bail!("some checks failed (see the table)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::time::Duration;

    use clap::Parser;

    use super::*;
    use crate::{Cli, Command};

    /// What the whole `sprout` command line parses `args` into.
    fn parse(args: Vec<OsString>) -> SaturatorCommand {
        let argv = std::iter::once(OsString::from("sprout")).chain(args);
        match Cli::try_parse_from(argv).expect("the rendered command line parses") {
            Cli {
                command: Command::Saturator(a),
            } => a.command,
            _ => panic!("not `sprout saturator`"),
        }
    }

    #[test]
    fn the_client_parses_exactly_what_its_options_render() {
        let mut o = ClientOptions::new("10.0.0.1:9200".parse().unwrap());
        assert_client_round_trip(&o);
        o.feedback = Some("[fd00::1]:9201".parse().unwrap());
        o.direction = Some(Load::Up);
        o.duration = Some(Duration::from_millis(122_500));
        o.name = PathBuf::from("out dir/run.1");
        o.low_rtt = sprout_core::time::Duration::from_millis(100);
        o.high_rtt = sprout_core::time::Duration::from_millis(400);
        o.max_window = 8;
        o.mtu = 1280;
        o.fetch_timeout = Duration::from_secs(5);
        o.json = true;
        o.quiet = true;
        assert_client_round_trip(&o);
    }

    fn assert_client_round_trip(o: &ClientOptions) {
        match parse(o.to_args()) {
            SaturatorCommand::Client(c) => assert_eq!(&c.options().unwrap(), o),
            _ => panic!("not `sprout saturator client`"),
        }
    }

    #[test]
    fn the_server_parses_exactly_what_its_options_render() {
        let mut o = ServerOptions::new("0.0.0.0:9200".parse().unwrap());
        assert_server_round_trip(&o);
        o.out = Some(PathBuf::from("recordings/server"));
        o.once = true;
        o.idle_timeout = Duration::from_millis(2500);
        o.max_recording = Duration::from_millis(3500);
        o.max_mtu = 1500;
        o.json = true;
        o.quiet = true;
        assert_server_round_trip(&o);
    }

    fn assert_server_round_trip(o: &ServerOptions) {
        match parse(o.to_args()) {
            SaturatorCommand::Server(s) => assert_eq!(&s.options().unwrap(), o),
            _ => panic!("not `sprout saturator server`"),
        }
    }

    #[test]
    fn the_defaults_are_the_options_defaults() {
        let connect: SocketAddr = "10.0.0.1:9".parse().unwrap();
        let args = vec![
            "saturator".into(),
            "client".into(),
            "--connect".into(),
            "10.0.0.1:9".into(),
        ];
        match parse(args) {
            SaturatorCommand::Client(c) => {
                assert_eq!(c.options().unwrap(), ClientOptions::new(connect))
            }
            _ => panic!("not `sprout saturator client`"),
        }
        let args = vec!["saturator".into(), "server".into()];
        match parse(args) {
            SaturatorCommand::Server(s) => assert_eq!(
                s.options().unwrap(),
                ServerOptions::new("0.0.0.0:9200".parse().unwrap())
            ),
            _ => panic!("not `sprout saturator server`"),
        }
    }
}
