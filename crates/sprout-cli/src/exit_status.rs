//! The error that makes `sprout` exit with a status of its own (not 1) after saying why.

/// An error that makes `sprout` exit with its own status after saying why.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub(crate) struct ExitStatus {
    /// What to say (after "error: ").
    pub(crate) message: String,
    /// The exit status.
    pub(crate) status: i32,
}
