//! Why a tunnel experiment failed. The texts are those the CLI prints, each followed by its
//! causes.

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;

use sprout_emu::EmuError;
use sprout_eval::EvalError;
use sprout_link::TraceError;
use sprout_secure::KeyError;

use crate::webrtc_call::CallError;

/// An error of [`run`](super::run::run).
#[derive(Debug, thiserror::Error)]
pub enum TunnelError {
    /// Neither experiment was asked for.
    #[error("no tunnel experiment given")]
    NoExperiment,
    /// The isolation experiment's measured window would be empty.
    #[error("the skipped time ({skip_s} s) must be shorter than the run ({duration_s} s)")]
    SkipTooLong {
        /// The skipped time, s.
        skip_s: f64,
        /// The run's length, s.
        duration_s: f64,
    },
    /// The cost run would end within its start-up.
    #[error("the tunnel-cost run must be longer than its {startup_s} s start-up")]
    CostTooShort {
        /// The start-up left out, s.
        startup_s: u64,
    },
    /// The output folder could not be made.
    #[error("creating output folder {}", path.display())]
    CreateOutput {
        /// The folder.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The folder of the peers' files could not be made.
    #[error("creating {}", path.display())]
    CreateDir {
        /// The folder.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A link pair the traces do not hold.
    #[error("no link pair named {name} in {traces}")]
    NoLinkPair {
        /// The pair asked for.
        name: String,
        /// Where the traces came from.
        traces: String,
    },
    /// The previous run's server key could not be removed.
    #[error("removing the old {}", path.display())]
    RemoveKey {
        /// The key file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The link emulator did not start.
    #[error("starting the link emulator")]
    StartEmulator(#[source] EmuError),
    /// The link emulator did not stop cleanly.
    #[error("stopping the link emulator")]
    StopEmulator(#[source] EmuError),
    /// A peer program did not start.
    #[error("starting the {role} ({program:?})")]
    StartPeer {
        /// The peer's role ("tunnel-server", "tcp-client", ...).
        role: &'static str,
        /// The program.
        program: OsString,
        /// Why.
        source: io::Error,
    },
    /// A peer exited before printing the JSON event awaited.
    #[error("the {role} exited ({status}) before saying \"{event}\"; see {}", err.display())]
    ExitedBeforeEvent {
        /// The peer's role.
        role: &'static str,
        /// How it exited.
        status: ExitStatus,
        /// The event awaited.
        event: String,
        /// Its standard error file.
        err: PathBuf,
    },
    /// A peer did not print the JSON event awaited in time.
    #[error(
        "the {role} did not say \"{event}\" within {limit_s:.0} s; see {} and {}",
        out.display(),
        err.display()
    )]
    NoEvent {
        /// The peer's role.
        role: &'static str,
        /// The event awaited.
        event: String,
        /// The time it had, s.
        limit_s: f64,
        /// Its standard output file.
        out: PathBuf,
        /// Its standard error file.
        err: PathBuf,
    },
    /// A tunnel end exited while the flows ran.
    #[error("the {role} ended during the run; see {}", err.display())]
    EndedDuringRun {
        /// The peer's role.
        role: &'static str,
        /// Its standard error file.
        err: PathBuf,
    },
    /// The clients ran past their duration, linger and grace time.
    #[error(
        "the clients did not end within {limit_s:.0} s; see {} and {}",
        tcp_err.display(),
        interactive_err.display()
    )]
    ClientsTimeout {
        /// The time they had, s.
        limit_s: f64,
        /// The tcp client's standard error file.
        tcp_err: PathBuf,
        /// The interactive client's standard error file.
        interactive_err: PathBuf,
    },
    /// A peer exited with a failure.
    #[error("the {role} failed ({status}); see {}", err.display())]
    PeerFailed {
        /// The peer's role.
        role: &'static str,
        /// How it exited.
        status: ExitStatus,
        /// Its standard error file.
        err: PathBuf,
    },
    /// A peer did not exit when it should have.
    #[error("the {role} did not exit in time; see {}", err.display())]
    PeerHung {
        /// The peer's role.
        role: &'static str,
        /// Its standard error file.
        err: PathBuf,
    },
    /// A client's output ends without its summary line.
    #[error("no summary line in {}", path.display())]
    NoSummary {
        /// The output file.
        path: PathBuf,
    },
    /// The per-packet CSV of an interactive peer could not be read.
    #[error("reading {}", path.display())]
    ReadArrivals {
        /// The CSV file.
        path: PathBuf,
        /// Why.
        source: csv::Error,
    },
    /// The WebRTC call cannot run with the Python given (missing interpreter, package or
    /// aiortc); the source says how to install it.
    #[error(
        "the tunnel experiment holds a WebRTC call (aiortc) in two runs of its own and {} \
         cannot run it (leave the call out with --no-call)",
        python.display()
    )]
    NoCall {
        /// The Python.
        python: PathBuf,
        /// Why, with the install hint.
        source: CallError,
    },
    /// A WebRTC call end's output could not be read.
    #[error("reading the output of the {role}")]
    CallOutput {
        /// The end's role ("call-offer", "call-answer").
        role: &'static str,
        /// Why.
        source: CallError,
    },
    /// A WebRTC call end's frames file could not be read.
    #[error("reading {}", path.display())]
    ReadFrames {
        /// The CSV file.
        path: PathBuf,
        /// Why.
        source: csv::Error,
    },
    /// The tunnel client's "up" line had no tunnel address for the WebRTC call to bind to.
    #[error("the tunnel client's \"up\" line has no IPv4 tunnel address ({got})")]
    NoTunnelAddress {
        /// The line's "v4" field, cut.
        got: String,
    },
    /// report.md could not be written.
    #[error("writing {}", path.display())]
    WriteReport {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A run of the isolation experiment failed.
    #[error("the {mode} run of the tunnel experiment on {link}")]
    IsolationRun {
        /// "direct" or "tunnel".
        mode: String,
        /// Link pair name.
        link: String,
        /// Why.
        source: Box<TunnelError>,
    },
    /// The cost run failed.
    #[error("the tunnel-cost run")]
    CostRun(#[source] Box<TunnelError>),
    /// The emulator's privilege check failed.
    #[error(transparent)]
    Privileges(#[from] EmuError),
    /// The server key could not be written.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// The cost run's constant-rate trace could not be made.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A file or process operation failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// A JSON output could not be encoded.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The evaluation harness failed (loading the traces, writing a CSV file).
    #[error(transparent)]
    Eval(#[from] EvalError),
}
