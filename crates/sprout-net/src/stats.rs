//! Counters and live figures of an endpoint, a session and a server.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use serde::Serialize;
use sprout_secure::SecureStats;

/// Where a client endpoint (or a server's session) stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EndpointState {
    /// The first handshake is under way.
    #[default]
    Connecting,
    /// The session is established and the server answers.
    Established,
    /// The server fell silent for `ReconnectOptions::dead_after`: the endpoint redials it;
    /// what the application sends waits.
    Reconnecting,
    /// The endpoint stopped (closed by either side, the first handshake failed, a fatal error).
    Ended,
}

impl EndpointState {
    /// The state's name: `connecting`, `established`, `reconnecting` or `ended`.
    pub fn name(self) -> &'static str {
        match self {
            EndpointState::Connecting => "connecting",
            EndpointState::Established => "established",
            EndpointState::Reconnecting => "reconnecting",
            EndpointState::Ended => "ended",
        }
    }
}

/// Counters kept by a driver for one connection, beside the connection's own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SocketCounters {
    /// UDP datagrams written to the socket for this connection (sealed data, heartbeats and
    /// keepalives; a client's handshake initiations too).
    pub datagrams_sent: u64,
    /// UDP payload bytes of those datagrams (sealed: header, ciphertext and tag).
    pub bytes_sent: u64,
    /// Authenticated datagrams handed to the connection.
    pub datagrams_received: u64,
    /// UDP payload bytes of those datagrams (as sealed on the wire).
    pub bytes_received: u64,
    /// Authenticated datagrams whose plaintext the core refused (counted and dropped).
    pub malformed: u64,
    /// Datagrams a client received from an address other than its server's (dropped before
    /// the security layer).
    pub other_sources: u64,
    /// Core datagrams the security layer could not seal (dropped).
    pub seal_errors: u64,
    /// Sends the socket refused with an error other than "would block" (the datagram is lost).
    pub send_errors: u64,
    /// Receive calls that failed with an error other than "would block".
    pub recv_errors: u64,
}

/// A snapshot of a client [`crate::Endpoint`] or a server's [`crate::Session`]: traffic
/// counters, the sender's window and the peer's forecast.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EndpointStats {
    /// Seconds since the endpoint was created (a session: since it was accepted).
    pub elapsed_s: f64,
    /// The local socket address.
    pub local_addr: Option<SocketAddr>,
    /// The peer's address (a session's follows its client when it roams).
    pub peer_addr: Option<SocketAddr>,
    /// Whether the secure session is established and the Sprout connection runs.
    pub established: bool,
    /// Where the endpoint stands: `connecting`, `established`, `reconnecting` (a client
    /// redialling a server that fell silent) or `ended`.
    pub state: EndpointState,
    /// Times a client's session was established again after its server fell silent (0 for a
    /// server's session).
    pub reconnections: u64,
    /// UDP datagrams sent (sealed data, heartbeats, keepalives, a client's handshakes).
    pub datagrams_sent: u64,
    /// UDP payload bytes sent.
    pub bytes_sent: u64,
    /// Heartbeats sent (core datagrams without application data). This and the application
    /// counters below count every connection of a client that redialled, not only the latest.
    pub heartbeats_sent: u64,
    /// Authenticated datagrams received from the peer.
    pub datagrams_received: u64,
    /// UDP payload bytes of those.
    pub bytes_received: u64,
    /// Application bytes sent (payloads, bulk filler included).
    pub app_bytes_sent: u64,
    /// Application bytes received (those dropped unread, `incoming_dropped`, included).
    pub app_bytes_received: u64,
    /// Application datagrams that arrived, authenticated, but were dropped before the
    /// application read them: the receive queue reached its bound
    /// (`sprout_core::Config::max_incoming_bytes`, 4 MiB), the reader falling behind; the
    /// oldest are dropped first, so the peer's last messages survive.
    pub incoming_dropped: u64,
    /// Application bytes waiting in the endpoint for the window to open.
    pub queued_bytes: usize,
    /// The sender's current window, in link bytes (UDP payload plus IP/UDP headers).
    pub window_bytes: u64,
    /// The sender's estimate of its bytes queued in the network toward the peer, in link bytes.
    pub queue_estimate_bytes: u64,
    /// The peer's latest forecast for this direction: cumulative MTU-sized (1500-byte) packets
    /// expected to be delivered by the end of each 20 ms tick (empty before the first).
    pub peer_forecast: Vec<u32>,
    /// Packets that forecast expects over its whole horizon (its last, cumulative entry).
    pub peer_forecast_packets: u64,
    /// The receiver's estimate of the incoming link rate, in packets per second.
    pub incoming_rate_pps: f64,
    /// Authenticated datagrams whose plaintext the core refused (dropped): those that did not
    /// parse plus those in `rejected`.
    pub malformed: u64,
    /// Of those, the ones that parsed but held values the peer can not have sent, by reason
    /// (the hardened core's checks, `sprout_core::connection::Reject`).
    pub rejected: sprout_core::connection::Rejections,
    /// Datagrams a client received from another address than its server's (dropped).
    pub other_sources: u64,
    /// Core datagrams that could not be sealed (dropped).
    pub seal_errors: u64,
    /// Sends the socket refused (the datagram is lost).
    pub send_errors: u64,
    /// Receive calls that failed.
    pub recv_errors: u64,
    /// Peer datagrams that arrived after being written off as lost (reordered by over 10 ms).
    pub late: u64,
    /// Peer datagrams received twice.
    pub duplicates: u64,
    /// Times the peer's address changed (a session whose client roamed).
    pub roams: u64,
    /// Seconds since the last authenticated datagram from the peer (`None` before the first).
    pub since_last_received_s: Option<f64>,
    /// Whether the connection still runs (false once it ended: closed, idle, failed).
    pub running: bool,
    /// Why it ended (e.g. the handshake timed out, the session was idle), if it did.
    pub end: Option<String>,
    /// A client's security-layer counters: handshakes, sealed and opened datagrams, drops by
    /// reason (`None` for a server's session: the server's counters are in [`ServerStats`]).
    pub secure: Option<SecureStats>,
}

/// A snapshot of a [`crate::Server`].
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ServerStats {
    /// Seconds since the server was bound.
    pub elapsed_s: f64,
    /// The local socket address.
    pub local_addr: Option<SocketAddr>,
    /// Sessions open now (accepted and not yet closed).
    pub sessions_open: u64,
    /// Sessions accepted so far.
    pub sessions_accepted: u64,
    /// Established sessions the acceptor turned down, or refused because the accept backlog
    /// was full.
    pub sessions_refused: u64,
    /// Sessions closed so far, for any reason.
    pub sessions_closed: u64,
    /// Of those, closed by the security layer for idleness (or keys that expired).
    pub sessions_expired: u64,
    /// UDP datagrams read from the socket (all of them, hostile ones included).
    pub datagrams_received: u64,
    /// UDP payload bytes read.
    pub bytes_received: u64,
    /// UDP datagrams written (sealed data and handshake responses).
    pub datagrams_sent: u64,
    /// UDP payload bytes written.
    pub bytes_sent: u64,
    /// Sends the socket refused (the datagram is lost).
    pub send_errors: u64,
    /// Receive calls that failed.
    pub recv_errors: u64,
    /// The security layer's counters, drops by reason included (in the order of
    /// [`sprout_secure::DropReason::ALL`]).
    pub secure: SecureStats,
    /// The same drops by reason name, only the reasons that occurred (e.g. `"forged": 3`).
    pub drops: BTreeMap<&'static str, u64>,
    /// Whether the driver thread runs.
    pub running: bool,
}
