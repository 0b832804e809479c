//! Errors of the UDP runtime.

use thiserror::Error;

/// Why an endpoint could not be set up.
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
}

impl NetError {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        NetError::Io {
            context: context.into(),
            source,
        }
    }
}
