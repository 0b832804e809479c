//! Why `sprout server` or `sprout client` could not run or ended in error.

use std::net::SocketAddr;
use std::path::PathBuf;

use sprout_net::secure::{KeyError, SecureError};
use sprout_net::NetError;
use thiserror::Error;

/// Why a transfer's server or client failed. Messages name the command-line flag at fault.
#[derive(Debug, Error)]
pub enum TransferError {
    /// An option out of its range (the message names the flag and the value).
    #[error("{0}")]
    InvalidOption(String),
    /// An address that does not parse or resolve.
    #[error("bad address {addr:?} (expected HOST:PORT)")]
    BadAddress {
        /// The address as given.
        addr: String,
        /// The resolver's error.
        source: std::io::Error,
    },
    /// An address that resolves to no socket address.
    #[error("address {addr:?} resolves to nothing")]
    Unresolved {
        /// The address as given.
        addr: String,
    },
    /// The `--key` file could not be read.
    #[error("--key: {0}")]
    Key(#[source] KeyError),
    /// The `--server-key` is not a public key or a file holding one.
    #[error("--server-key: {0}")]
    ServerKey(#[source] KeyError),
    /// The `--allowed-clients` file could not be read.
    #[error("--allowed-clients: {0}")]
    AllowedClients(#[source] KeyError),
    /// The `--allowed-clients` file holds no key.
    #[error("--allowed-clients: {} holds no key (one base64 public key per line, from `sprout keygen`)", .0.display())]
    NoAllowedClient(PathBuf),
    /// Neither or both of `--allowed-clients` and `--allow-any-client`.
    #[error("give exactly one of --allowed-clients FILE and --allow-any-client")]
    ClientsChoice,
    /// The server's socket could not be bound.
    #[error("cannot listen on {addr}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// The runtime's error.
        source: NetError,
    },
    /// The server's driver stopped.
    #[error("the server stopped: {0}")]
    ServerStopped(String),
    /// The client's endpoint could not be set up.
    #[error("cannot reach {remote} from {local}")]
    Connect {
        /// The server's address.
        remote: SocketAddr,
        /// The client's local address.
        local: SocketAddr,
        /// The runtime's error.
        source: NetError,
    },
    /// The client's handshake failed.
    #[error("no session with {remote}: {error}")]
    NoSession {
        /// The server's address.
        remote: SocketAddr,
        /// The security layer's reason.
        error: SecureError,
    },
    /// The server did not accept the session in time (`how` suggests what to check).
    #[error("no answer from {remote} within {wait_s:.1} s: {how}")]
    NoAnswer {
        /// The server's address.
        remote: SocketAddr,
        /// How long the client waited, s.
        wait_s: f64,
        /// What to check.
        how: &'static str,
    },
    /// The session broke during the transfer (the security layer gave up on it).
    #[error("the session with {remote} ended before the transfer did: {error}")]
    SessionLost {
        /// The server's address.
        remote: SocketAddr,
        /// The security layer's reason.
        error: SecureError,
    },
    /// The server fell silent during the transfer, or after it without ending it (no BYE):
    /// it stopped or crashed, or the path to it broke.
    #[error(
        "the server at {remote} fell silent for {silence_s} s and did not end the session: \
         it stopped or crashed, or the path to it broke; the transfer is incomplete"
    )]
    Silence {
        /// The server's address.
        remote: SocketAddr,
        /// The silence that ends a session, s.
        silence_s: u64,
    },
}
