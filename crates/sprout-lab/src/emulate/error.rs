//! Why an emulated evaluation failed. The texts are those the CLI prints, each followed by its
//! causes.

use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;

use sprout_emu::EmuError;
use sprout_eval::EvalError;
use sprout_link::MmLogError;
use sprout_secure::KeyError;
use sprout_sim::error::SimError;

use crate::webrtc_call::CallError;

/// An error of [`run`](super::run::run) and the emulated evaluation's outputs.
#[derive(Debug, thiserror::Error)]
pub enum EmulateError {
    /// The options name no scheme.
    #[error("no scheme given")]
    NoScheme,
    /// A scheme the emulator cannot run (not one of [`EMULATED_SCHEMES`](super::EMULATED_SCHEMES)).
    #[error("scheme {scheme} cannot be emulated (emulated schemes: {known})")]
    NotEmulated {
        /// The scheme's key.
        scheme: String,
        /// The emulated schemes' keys, comma-separated.
        known: String,
    },
    /// The measured window would be empty.
    #[error("the skipped time must be shorter than the run")]
    SkipTooLong,
    /// A link pair the traces do not hold.
    #[error("no link pair named {name} in {traces}")]
    NoLinkPair {
        /// The pair asked for.
        name: String,
        /// Where the traces came from.
        traces: String,
    },
    /// The output folder could not be made.
    #[error("creating output folder {}", path.display())]
    CreateOutput {
        /// The folder.
        path: PathBuf,
        /// Why.
        source: io::Error,
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
    /// The client exited with a failure.
    #[error("{scheme} client on {link} failed ({status}); see {files}.client.err")]
    ClientFailed {
        /// Scheme key.
        scheme: String,
        /// Link pair name.
        link: String,
        /// How it exited.
        status: ExitStatus,
        /// The run's file prefix.
        files: String,
    },
    /// The client ran past its duration and grace time.
    #[error("{scheme} client on {link} did not end within {limit_s:.0} s")]
    ClientTimeout {
        /// Scheme key.
        scheme: String,
        /// Link pair name.
        link: String,
        /// The time it had, s.
        limit_s: f64,
    },
    /// An emulator log could not be read (`direction`: "up" or "down").
    #[error("reading the {direction}link log")]
    ReadLog {
        /// "up" or "down".
        direction: &'static str,
        /// Why.
        source: MmLogError,
    },
    /// One scheme's emulated run on one link failed.
    #[error("emulating {scheme} on {link}")]
    Run {
        /// Scheme key.
        scheme: String,
        /// Link pair name.
        link: String,
        /// Why.
        source: Box<EmulateError>,
    },
    /// An offered rate of the interactive experiment that is not a positive number.
    #[error("offered rates must be positive kbit/s, got {0}")]
    BadRate(f64),
    /// The interactive experiment's run is shorter than a second.
    #[error("the interactive experiment needs runs of at least 1 s")]
    TooShort,
    /// A peer of the interactive experiment exited without printing its JSON summary.
    #[error("the {role} of {scheme} at {rate_kbps} kbit/s on {link} printed no summary; see {files}.{role}.out and .err")]
    NoSummary {
        /// "client" or "server".
        role: &'static str,
        /// Scheme key.
        scheme: String,
        /// Offered rate, kbit/s.
        rate_kbps: f64,
        /// Link pair name.
        link: String,
        /// The run's file prefix.
        files: String,
    },
    /// The WebRTC call cannot run here (no Python, no `sprout` package, no aiortc: the text
    /// says how to install them).
    #[error(transparent)]
    Call(#[from] CallError),
    /// An end of the WebRTC call failed, or did not end in time.
    #[error("the webrtc {role} end on {link} {how}; see {files}.{role}.err")]
    CallEnd {
        /// "answer" or "offer".
        role: &'static str,
        /// Link pair name.
        link: String,
        /// What happened ("failed (exit status: 1)", "did not end within 95 s").
        how: String,
        /// The run's file prefix.
        files: String,
    },
    /// The answer end did not open its signalling socket in time.
    #[error("the webrtc answer end on {link} did not open its signalling socket {} within {limit_s:.0} s; see {files}.answer.err", socket.display())]
    SignalTimeout {
        /// Link pair name.
        link: String,
        /// The socket's path.
        socket: PathBuf,
        /// The time it had, s.
        limit_s: f64,
        /// The run's file prefix.
        files: String,
    },
    /// An end of the WebRTC call printed no readable summary.
    #[error("reading the webrtc {role} end's summary ({files}.{role}.out)")]
    CallSummary {
        /// "answer" or "offer".
        role: &'static str,
        /// The run's file prefix.
        files: String,
        /// Why.
        source: CallError,
    },
    /// The emulator's privilege check failed.
    #[error(transparent)]
    Privileges(#[from] EmuError),
    /// The server key could not be written.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// A file or process operation failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// `results.json` could not be encoded.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The evaluation harness failed (loading the traces, writing a CSV file).
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// A simulated run failed.
    #[error(transparent)]
    Sim(#[from] SimError),
}
