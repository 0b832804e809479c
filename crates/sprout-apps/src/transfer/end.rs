//! How a session ended: the `end` of its summary.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Why a session ended, as its summary says (serialized as the lowercase name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionEnd {
    /// The peer's BYE came.
    Bye,
    /// The duration and the grace for the peer's BYE ran out.
    Duration,
    /// Nothing came from the peer for [`SILENCE`](super::SILENCE).
    Silence,
    /// The endpoint closed the session (the server's idle timeout, or the server stopped).
    Closed,
}

impl SessionEnd {
    /// `"bye"`, `"duration"`, `"silence"` or `"closed"`.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionEnd::Bye => "bye",
            SessionEnd::Duration => "duration",
            SessionEnd::Silence => "silence",
            SessionEnd::Closed => "closed",
        }
    }
}

impl fmt::Display for SessionEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
