//! The timing and sizes of the application protocol of `sprout server` and `sprout client`.

use std::time::Duration;

/// A session ends when nothing has come from the peer for this long.
pub const SILENCE: Duration = Duration::from_secs(5);
/// The server waits this long past the duration for the client's BYE.
pub(crate) const SERVER_GRACE: Duration = Duration::from_secs(3);
/// The client waits this long past the duration for the end of the server's data.
pub const CLIENT_GRACE: Duration = Duration::from_secs(1);
/// Longest wait for the server's answer to the HELLO.
pub(crate) const HANDSHAKE: Duration = Duration::from_secs(5);
/// Default size of a paced DATA message, in bytes.
pub const PACED_PAYLOAD: usize = 1000;
/// Copies of BYE (and of ACCEPT) sent (they are not retransmitted).
pub const BYE_COPIES: usize = 3;
/// Longest sleep of a session's control loop: it checks the clock for the per-second line,
/// the end of the duration and the peer's silence at least this often (the peer's BYE wakes
/// it at once). Long enough that many sessions on one server cost few wake-ups.
pub(crate) const SESSION_POLL: Duration = Duration::from_millis(200);

/// When a session's endpoint has ended, how long the session waits at most for its receiving
/// thread to read what arrived before the end (the peer's BYE, then its close): the queue is
/// bounded (`max_incoming_bytes`, 4 MiB), so reading it takes far less.
pub(crate) const ENDED_DRAIN: Duration = Duration::from_secs(5);
/// How often the receiving thread checks whether it should stop when no data comes.
pub(crate) const LISTEN_POLL: Duration = Duration::from_millis(200);
