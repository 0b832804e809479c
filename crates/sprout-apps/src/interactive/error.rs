//! Why a side of the interactive stream could not run.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

use thiserror::Error;

/// Why a side of the interactive stream failed. Messages name the command-line flag at fault.
#[derive(Debug, Error)]
pub enum InteractiveError {
    /// An option out of its range (the message names the flag and the value).
    #[error("{0}")]
    InvalidOption(String),
    /// The stop-signal handlers could not be installed.
    #[error("installing signal handlers")]
    Signals(#[source] io::Error),
    /// The server's socket could not be bound.
    #[error("cannot listen on {addr}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// The kernel's error.
        source: io::Error,
    },
    /// The client's socket could not be bound.
    #[error("binding a UDP socket")]
    Bind(#[source] io::Error),
    /// Receiving failed.
    #[error("receiving")]
    Receive(#[source] io::Error),
    /// The CSV file could not be created.
    #[error("creating {}", path.display())]
    CreateCsv {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// The CSV file could not be written.
    #[error("writing {}", path.display())]
    WriteCsv {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// The summary could not be written as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// Another socket operation failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}
