//! Errors of the UDP runtime.

use sprout_secure::SecureError;
use thiserror::Error;

/// Why an endpoint or a server could not be set up, or a client's session could not start.
#[derive(Debug, Error)]
pub enum NetError {
    /// The socket, poller or driver thread could not be created.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The Sprout configuration is invalid.
    #[error("invalid Sprout configuration: {0}")]
    Config(String),
    /// The security layer refused the keys or the greeting, or the handshake failed.
    #[error(transparent)]
    Secure(#[from] SecureError),
    /// The endpoint stopped before its session was established.
    #[error("the endpoint stopped before its session was established")]
    Stopped,
}

impl NetError {
    #[cfg(feature = "runtime")]
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        NetError::Io {
            context: context.into(),
            source,
        }
    }
}
