//! What can go wrong running the Saturator's server or client ([`SaturatorError`]).

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

use crate::wire::{MAX_PAYLOAD_BYTES, MIN_PAYLOAD_BYTES};

/// An error of the server or the client. The option errors name the `sprout saturator` flag
/// of the option ([`crate::runtime::ClientOptions::to_args`] renders them).
#[derive(Debug, thiserror::Error)]
pub enum SaturatorError {
    /// The MTU leaves a UDP payload outside the accepted range.
    #[error(
        "--mtu {mtu} gives {payload}-byte UDP payloads; they must be {MIN_PAYLOAD_BYTES} to \
         {MAX_PAYLOAD_BYTES} bytes"
    )]
    Mtu {
        /// The IP packet size asked for, bytes.
        mtu: u32,
        /// The UDP payload it leaves, bytes.
        payload: u32,
    },
    /// A window cap of 0 packets, or above what servers accept.
    #[error("--max-window must be 1 to {}", crate::wire::MAX_WINDOW)]
    MaxWindow,
    /// A server's largest packet size outside what the protocol can carry.
    #[error("--max-mtu must be 176 to 65535 bytes, got {0}")]
    MaxMtu(u32),
    /// The RTT marks are inconsistent (the reason).
    #[error("--low-rtt-ms/--high-rtt-ms: {0}")]
    RttMarks(crate::sender::SenderConfigError),
    /// A high RTT mark over a minute.
    #[error("--high-rtt-ms must be at most {} ms", crate::wire::MAX_HIGH_RTT_MS)]
    HighRtt,
    /// An RTT mark with a fraction of a millisecond (the hello carries whole milliseconds).
    #[error("--low-rtt-ms/--high-rtt-ms must be whole milliseconds")]
    RttFraction,
    /// A duration option that is not a number of the accepted kind (`--duration` not a
    /// positive number of seconds, `--fetch-timeout` a negative one, ...).
    #[error(transparent)]
    BadDuration(#[from] sprout_core::time::BadDuration),
    /// An idle timeout that is not a positive number of seconds.
    #[error("--idle-timeout must be a positive number of seconds")]
    IdleTimeout,
    /// A bound on a recording's length outside 1 ms to a day, or with a fraction of a ms.
    #[error("--max-recording must be 0.001 to 86400 seconds, in whole milliseconds")]
    MaxRecording,
    /// An output prefix that names no file.
    #[error("--name must name a file prefix, got {0:?}")]
    Name(PathBuf),
    /// A socket could not be made or bound.
    #[error("binding {addr}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: io::Error,
    },
    /// A socket could not be made or connected.
    #[error("connecting to {addr}")]
    Connect {
        /// The peer's address.
        addr: SocketAddr,
        /// Why.
        source: io::Error,
    },
    /// The signal handlers could not be installed.
    #[error("installing signal handlers")]
    Signals(#[source] io::Error),
    /// Ctrl-C (or another stop signal) before the server answered.
    #[error("interrupted before the server answered")]
    InterruptedBeforeAnswer,
    /// No answer from the server in 10 s.
    #[error(
        "no answer from {0} in 10 s (is `sprout saturator server` of the same sprout release \
         running there, and UDP open?)"
    )]
    NoAnswer(SocketAddr),
    /// The server is recording for another client (and when it said to try again, if it did).
    #[error("the server at {0} is busy with another recording{retry}", retry = retry_text(.1))]
    Busy(SocketAddr, Option<sprout_core::time::Duration>),
    /// The server refused the hello's parameters (why).
    #[error("the server at {0} refused the recording: {1}")]
    Refused(SocketAddr, crate::wire::Refusal),
    /// The server stopped answering: no acknowledgement of the end of the recording (it
    /// died, or ended the session after its idle timeout). The recording is incomplete: what
    /// was recorded here until the server went silent is written under the incomplete names.
    #[error(
        "the server at {addr} did not acknowledge the end of the recording and was last heard \
         {silent_since_s:.1} s into it (it died, or ended the session: its idle timeout); the \
         recording is incomplete, cut there: {files}"
    )]
    ServerGone {
        /// The server's address.
        addr: SocketAddr,
        /// When the server was last heard, s since the start of the recording.
        silent_since_s: f64,
        /// The files written, comma-separated.
        files: String,
    },
    /// A folder could not be made.
    #[error("creating folder {}", path.display())]
    CreateDir {
        /// The folder.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A file could not be made.
    #[error("creating {}", path.display())]
    CreateFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A file could not be written.
    #[error("writing {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A socket failed while receiving, or another IO error.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// A summary could not be encoded as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// ": try again in N s" (whole seconds, rounded up) when the server said when, else nothing.
fn retry_text(after: &Option<sprout_core::time::Duration>) -> String {
    after.map_or(String::new(), |d| {
        format!(": try again in {} s", d.as_millis().div_ceil(1000))
    })
}
