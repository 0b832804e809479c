//! Why a kernel-TCP transfer could not run.

use std::io;
use std::net::SocketAddr;

use thiserror::Error;

/// Why a request line was refused.
#[derive(Debug, Error, PartialEq)]
pub enum RequestError {
    /// Not four words.
    #[error("malformed request {0:?}: expected `SPROUT-TCP <up|down> <cc> <seconds>`")]
    Malformed(String),
    /// Another first word.
    #[error("not a sprout tcp request: {0:?}")]
    NotSproutTcp(String),
    /// Neither `up` nor `down`.
    #[error("bad direction {0:?} in request (up or down)")]
    Direction(String),
    /// Not a name the kernel could hold (1 to 15 letters, digits or `_`).
    #[error("bad congestion controller name {0:?}")]
    ControllerName(String),
    /// Not a number of seconds above 0 and at most a day.
    #[error("bad duration {0:?} in request")]
    Duration(String),
}

/// Why a kernel-TCP server or client failed.
#[derive(Debug, Error)]
pub enum TcpError {
    /// A bad request line (received, or about to be sent).
    #[error(transparent)]
    Request(#[from] RequestError),
    /// `--duration` out of range (s).
    #[error("--duration must be between 0 and 86400 seconds, got {0}")]
    Duration(f64),
    /// The kernel refused the congestion controller.
    #[error("cannot use TCP congestion controller {cc:?} (available: {available}; others may need `modprobe tcp_{cc}`)")]
    Congestion {
        /// The controller's name.
        cc: String,
        /// The controllers the kernel has loaded (space-separated).
        available: String,
        /// The kernel's error.
        source: io::Error,
    },
    /// The server's socket could not be bound.
    #[error("cannot listen on {addr}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// The kernel's error.
        source: io::Error,
    },
    /// The client could not connect.
    #[error("cannot connect to {addr}")]
    Connect {
        /// The server's address.
        addr: SocketAddr,
        /// The kernel's error.
        source: io::Error,
    },
    /// The request line could not be read.
    #[error("reading the request")]
    ReadRequest(#[source] io::Error),
    /// Another socket operation failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}
