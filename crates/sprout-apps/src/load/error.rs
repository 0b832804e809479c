//! Why the load benchmark could not run, or failed.

use std::io;
use std::process::ExitStatus;

use sprout_net::secure::KeyError;
use sprout_net::NetError;
use thiserror::Error;

/// Why `sprout bench load` failed. Messages name the command-line flag at fault.
#[derive(Debug, Error)]
pub enum LoadError {
    /// An option out of its range (the message names the flag and the value).
    #[error("{0}")]
    InvalidOption(String),
    /// The temporary folder for the server's key could not be made.
    #[error("creating a temporary folder for the keys")]
    TempDir(#[source] io::Error),
    /// The server's key could not be written.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// No free UDP port for the server.
    #[error("finding a free UDP port")]
    FreePort(#[source] io::Error),
    /// `sprout server` could not be started.
    #[error("starting `sprout server`")]
    StartServer(#[source] io::Error),
    /// `sprout server` exited right after starting.
    #[error("`sprout server` exited at once ({0})")]
    ServerExited(ExitStatus),
    /// One of the bench's threads could not be started.
    #[error("starting the {what} thread")]
    Thread {
        /// Which thread: "receiving", "pacing" or "connecting".
        what: &'static str,
        /// The error.
        source: io::Error,
    },
    /// The pacing thread ended early.
    #[error("the pacing thread stopped")]
    PacerStopped,
    /// The thread that opens the clients' endpoints ended early.
    #[error("the connecting thread stopped")]
    ConnectorStopped,
    /// A client's endpoint could not be set up.
    #[error(transparent)]
    Connect(#[from] NetError),
    /// The flood's socket could not be bound.
    #[error("binding the flood's socket")]
    FloodSocket(#[source] io::Error),
    /// The flood's thread panicked.
    #[error("the flood thread panicked")]
    FloodPanicked,
    /// The report could not be written as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// Another system call failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// Sessions were lost or delivered less than the tolerance (the report was printed).
    #[error("{lost} of {sessions} sessions were lost or delivered less than {:.0}% of what was released", tolerance * 100.0)]
    SessionsLost {
        /// Sessions lost.
        lost: usize,
        /// Sessions run.
        sessions: usize,
        /// The least delivered share each way, 0..1.
        tolerance: f64,
    },
}
