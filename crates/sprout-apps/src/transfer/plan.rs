//! How one side (client or server) runs a session's data phase.

use std::sync::Arc;
use std::time::Duration;

use sprout_net::message::Hello;
use sprout_net::secure::SecureStats;

/// How one side runs a session.
pub(crate) struct Plan {
    pub(crate) role: &'static str,
    pub(crate) hello: Hello,
    pub(crate) sends: bool,
    /// Whether the peer sends data.
    pub(crate) peer_sends: bool,
    /// End at the duration once the peer's data has ended (the client), rather than as soon
    /// as the peer says BYE (the server).
    pub(crate) ends_at_duration: bool,
    /// How long past the duration to wait for the peer's BYE.
    pub(crate) grace: Duration,
    pub(crate) json: bool,
    /// The endpoint redials a server that falls silent (a client without `--no-redial`):
    /// silence does not end the session before the duration does.
    pub(crate) redials: bool,
    /// A server's session: its id (8 hex digits) and client key, for the lines.
    pub(crate) session: Option<(String, String)>,
    /// Where the security layer's drop counters come from: a client's endpoint has its own;
    /// a server's session reads the server's.
    pub(crate) drops: Arc<dyn Fn() -> SecureStats + Send + Sync>,
}
