//! Why a Saturator check failed. The texts are those the CLI prints, each followed by its
//! causes.

use std::io;
use std::num::ParseIntError;
use std::path::PathBuf;
use std::process::ExitStatus;

use sprout_emu::EmuError;
use sprout_eval::EvalError;
use sprout_link::TraceError;
use sprout_sim::error::SimError;

/// An error of [`run`](super::run::run) and its outputs.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The folder of trace pairs could not be listed.
    #[error("looking for trace pairs in {}", dir.display())]
    FindPairs {
        /// The folder.
        dir: PathBuf,
        /// Why.
        source: TraceError,
    },
    /// A link pair the traces do not hold.
    #[error("no link pair named {name} in {}", traces.display())]
    NoLinkPair {
        /// The pair asked for.
        name: String,
        /// The folder of trace pairs.
        traces: PathBuf,
    },
    /// The folder holds no trace pair.
    #[error("no trace pairs (NAME.up and NAME.down) in {}", traces.display())]
    NoTracePairs {
        /// The folder of trace pairs.
        traces: PathBuf,
    },
    /// A replayed trace ends before the compared window does.
    #[error(
        "{trace} is {length_s:.1} s long, shorter than the compared window ({seconds} s from \
         {from_s} s)"
    )]
    TraceTooShort {
        /// The trace's name.
        trace: String,
        /// Its last opportunity, s.
        length_s: f64,
        /// Seconds compared.
        seconds: u64,
        /// First second compared.
        from_s: u64,
    },
    /// A folder or file could not be created.
    #[error("creating {}", path.display())]
    Create {
        /// The folder or file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A file could not be read.
    #[error("reading {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// An output file could not be written.
    #[error("writing {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// An output CSV file could not be opened.
    #[error("writing {}", path.display())]
    WriteCsv {
        /// The file.
        path: PathBuf,
        /// Why.
        source: csv::Error,
    },
    /// No UDP port could be bound on the host.
    #[error("finding a free UDP port")]
    FreePort(#[source] io::Error),
    /// The server program did not start.
    #[error("starting {}", exe.display())]
    StartServer {
        /// The `sprout` binary.
        exe: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The client program did not start in the emulator's mobile namespace.
    #[error("starting the client in the emulator's namespace")]
    StartClient(#[source] io::Error),
    /// The link emulator did not start.
    #[error("starting the link emulator")]
    StartEmulator(#[source] EmuError),
    /// The link emulator did not stop cleanly.
    #[error("stopping the link emulator")]
    StopEmulator(#[source] EmuError),
    /// The client exited with a failure.
    #[error("the saturator client failed ({status}); see {}.client.err", prefix.display())]
    ClientFailed {
        /// How it exited.
        status: ExitStatus,
        /// The recording's file prefix.
        prefix: PathBuf,
    },
    /// The client ran past its recording and grace time.
    #[error("the saturator client did not end within {limit_s} s")]
    ClientTimeout {
        /// The time it had, whole s.
        limit_s: u64,
    },
    /// The client's output ends without its summary line.
    #[error("no summary line in {}", path.display())]
    NoSummary {
        /// The output file.
        path: PathBuf,
    },
    /// The client's summary of one direction could not be decoded.
    #[error("reading the {direction} summary")]
    BadSummary {
        /// "up" or "down".
        direction: &'static str,
        /// Why.
        source: serde_json::Error,
    },
    /// A line of a recording is not a time in ms.
    #[error("{}: not a time: {line}", path.display())]
    NotATime {
        /// The recording.
        path: PathBuf,
        /// The line.
        line: String,
        /// Why.
        source: ParseIntError,
    },
    /// `ip` could not be run on the host.
    #[error("running `ip` to {what} (is iproute2 installed?)")]
    RunIp {
        /// What it was run for.
        what: &'static str,
        /// Why.
        source: io::Error,
    },
    /// `ip` could not be run in the emulator's mobile namespace.
    #[error("running `ip` in the namespace to {what}")]
    RunIpInNamespace {
        /// What it was run for.
        what: &'static str,
        /// Why.
        source: io::Error,
    },
    /// `ip` exited with a failure (making the feedback path).
    #[error("`ip` failed to {what}: {stderr}")]
    IpFailed {
        /// What it was run for.
        what: &'static str,
        /// Its standard error, trimmed.
        stderr: String,
    },
    /// One link pair's recording through the emulator failed.
    #[error("recording {name} through the emulator")]
    Emulated {
        /// Link pair name.
        name: String,
        /// Why.
        source: Box<CheckError>,
    },
    /// The emulator's privilege check failed.
    #[error(transparent)]
    Emulator(#[from] EmuError),
    /// A trace could not be loaded.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// A simulated Sprout run failed.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// A replayed trace (with its injected outage) could not be made.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A file or process operation failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// An output CSV file could not be written.
    #[error(transparent)]
    Csv(#[from] csv::Error),
    /// `saturator-check.json` could not be encoded.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// A result of the check.
pub type Result<T, E = CheckError> = std::result::Result<T, E>;
