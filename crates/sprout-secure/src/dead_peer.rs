//! When a client takes its server for dead and how it redials: the defaults both clients (the
//! library `Endpoint` of sprout-net and SproutTunnel's client) use, kept in the layer they
//! share.

use sprout_core::time::Duration;

/// How long a client waits for an authenticated datagram from its server after it sent one
/// before it considers the server dead and starts a new handshake: WireGuard's
/// `KEEPALIVE_TIMEOUT` (10 s) plus `REKEY_TIMEOUT` (5 s). A live server is never silent that
/// long: its Sprout heartbeats leave at least once a second
/// (`sprout_core::params::MAX_HEARTBEAT_INTERVAL_US`).
pub const DEAD_PEER_TIMEOUT: Duration = Duration::from_secs(15);

/// The first wait after a redial's handshake went unanswered (for
/// [`Limits::handshake_timeout`](crate::Limits::handshake_timeout), 10 s by default) before the
/// next one.
pub const REDIAL_BACKOFF_MIN: Duration = Duration::from_secs(5);

/// The longest wait between two redial handshakes (the wait doubles from
/// [`REDIAL_BACKOFF_MIN`] up to this). Kept at 10 s so that a server that comes back after a
/// long outage is found within about 10 s (plus a round trip), whatever the outage's length;
/// an outage costs a handshake initiation every 250 ms for 10 s, then nothing for 10 s.
pub const REDIAL_BACKOFF_MAX: Duration = Duration::from_secs(10);
