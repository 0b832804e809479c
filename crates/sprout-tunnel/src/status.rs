//! Counters and snapshots of a tunnel end, for the status line, `--json` and tests.

use std::net::SocketAddr;

use serde::Serialize;
use sprout_core::time::Instant;

use crate::control::Assignment;
use crate::flow_queue::{FlowSnapshot, QueueStats};
use crate::packet::PacketError;
use crate::session::SessionPath;

/// Packets the tunnel itself dropped (not the flow queue), by reason. Every packet read from
/// the TUN device or out of a session is either forwarded, queued, or counted here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TunnelDrops {
    /// Read from the TUN device: empty.
    pub tun_empty: u64,
    /// Read from the TUN device: version neither 4 nor 6.
    pub tun_unknown_version: u64,
    /// Read from the TUN device: fewer bytes than its header says.
    pub tun_truncated: u64,
    /// Read from the TUN device: an impossible header field.
    pub tun_malformed: u64,
    /// Read from the TUN device with a destination no client has (server) or before the
    /// assignment arrived (client).
    pub no_route: u64,
    /// Read from the TUN device with a source other than this end's tunnel address (client).
    pub wrong_source: u64,
    /// Larger than the session's largest payload.
    pub too_big: u64,
    /// Out of a session: a payload that is neither an IP packet nor a control message, or an
    /// IP packet that does not parse.
    pub malformed_payload: u64,
    /// Out of a session: an IP packet whose source is not the tunnel address that session was
    /// given (server), or whose destination is not ours (client).
    pub spoofed_source: u64,
    /// Out of a session: destined to another client while forwarding between clients is off.
    pub client_to_client: u64,
    /// Packets to write to the TUN device beyond [`crate::MAX_TUN_BACKLOG`].
    pub tun_backlog: u64,
    /// A malformed or unexpected control message.
    pub bad_control: u64,
    /// Core datagrams the security layer could not seal (keys expired, session gone).
    pub seal_failed: u64,
    /// Out of a session: addressed to the relay host itself while the server isolates it
    /// (`--isolate`).
    pub to_relay_host: u64,
}

impl TunnelDrops {
    /// Every counter with its name (snake case, as in JSON), in a fixed order.
    pub fn by_name(&self) -> [(&'static str, u64); 14] {
        [
            ("tun_empty", self.tun_empty),
            ("tun_unknown_version", self.tun_unknown_version),
            ("tun_truncated", self.tun_truncated),
            ("tun_malformed", self.tun_malformed),
            ("no_route", self.no_route),
            ("wrong_source", self.wrong_source),
            ("too_big", self.too_big),
            ("malformed_payload", self.malformed_payload),
            ("spoofed_source", self.spoofed_source),
            ("client_to_client", self.client_to_client),
            ("tun_backlog", self.tun_backlog),
            ("bad_control", self.bad_control),
            ("seal_failed", self.seal_failed),
            ("to_relay_host", self.to_relay_host),
        ]
    }

    /// All drops together.
    pub fn total(&self) -> u64 {
        self.by_name()
            .iter()
            .fold(0u64, |a, &(_, n)| a.saturating_add(n))
    }

    /// Counts a packet read from the TUN device that did not parse.
    pub fn count_tun_error(&mut self, e: &PacketError) {
        let c = match e {
            PacketError::Empty => &mut self.tun_empty,
            PacketError::UnknownVersion(_) => &mut self.tun_unknown_version,
            PacketError::Truncated { .. } => &mut self.tun_truncated,
            PacketError::Malformed(_) => &mut self.tun_malformed,
        };
        *c = c.saturating_add(1);
    }
}

/// Adds one to a counter, saturating.
pub(crate) fn bump(counter: &mut u64) {
    *counter = counter.saturating_add(1);
}

/// One session's state as shown in status output.
#[derive(Clone, Debug, Serialize)]
pub struct SessionStatus {
    /// The server's id of the session (the client's own session shows 0).
    pub id: u32,
    /// The peer's public key (base64).
    pub peer: String,
    /// The peer's UDP address.
    pub addr: Option<SocketAddr>,
    /// The addresses given to the client, once assigned.
    pub assignment: Option<Assignment>,
    /// The client confirmed its assignment (a server's session; a client's own once
    /// assigned). A server shows an unconfirmed session apart, not among its clients.
    pub confirmed: bool,
    /// The per-flow queue toward the peer.
    pub queue: QueueStats,
    /// The busiest flows toward the peer (at most [`crate::STATUS_FLOWS`]).
    pub flows: Vec<FlowSnapshot>,
    /// The forecast the sender works from: cumulative packets the link is forecast to deliver
    /// by each tick ahead.
    pub forecast: Vec<u32>,
    /// The sender's window now, in link bytes.
    pub window_bytes: u64,
    /// The receiver's estimate of the incoming link rate, packets/s.
    pub incoming_rate_pps: f64,
    /// IP payload bytes sent into the session since it started.
    pub sent_bytes: u64,
    /// IP payload bytes received out of the session since it started.
    pub received_bytes: u64,
    /// Packets sent into the session.
    pub sent_packets: u64,
    /// Packets received out of the session.
    pub received_packets: u64,
}

/// A whole tunnel end's status.
#[derive(Clone, Debug, Serialize)]
pub struct TunnelStatus {
    /// When the snapshot was taken, on the caller's clock (serialized as its microseconds,
    /// under its old name).
    pub now_us: Instant,
    /// Sessions (one for a client).
    pub sessions: Vec<SessionStatus>,
    /// Drops by the tunnel itself.
    pub drops: TunnelDrops,
    /// Datagrams the security layer dropped, by reason name.
    pub secure_drops: std::collections::BTreeMap<String, u64>,
    /// Packets read from the TUN device.
    pub tun_read_packets: u64,
    /// Packets handed to be written to the TUN device.
    pub tun_write_packets: u64,
    /// A client whose relay fell silent is redialling it (always false for a server).
    pub reconnecting: bool,
    /// A client's sessions re-established after its relay fell silent (0 for a server).
    pub reconnections: u64,
    /// Where a client stands (`None` for a server; left out of its JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<ClientState>,
}

/// Where a tunnel client stands (the states of sprout-net's `EndpointState`, by the same
/// names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientState {
    /// The first handshake is under way, or the relay's assignment has not come.
    Connecting,
    /// The session is up.
    Established,
    /// The relay fell silent: the client redials it.
    Reconnecting,
    /// The client quit, or the tunnel failed (the relay's close included).
    Ended,
}

impl ClientState {
    /// The state's name: `connecting`, `established`, `reconnecting` or `ended`.
    pub fn name(self) -> &'static str {
        match self {
            ClientState::Connecting => "connecting",
            ClientState::Established => "established",
            ClientState::Reconnecting => "reconnecting",
            ClientState::Ended => "ended",
        }
    }
}

impl TunnelStatus {
    /// Sessions whose client confirmed its assignment (a server's clients), and the others.
    pub fn clients(&self) -> (usize, usize) {
        let confirmed = self.sessions.iter().filter(|s| s.confirmed).count();
        (confirmed, self.sessions.len() - confirmed)
    }
}

impl SessionStatus {
    /// A session's status at `now` from its data path (`id` 0 for the client's own).
    pub fn of(
        id: u32,
        peer: String,
        addr: Option<SocketAddr>,
        assignment: Option<Assignment>,
        path: &mut SessionPath,
        now: Instant,
    ) -> SessionStatus {
        let mut flows = path.queue.flows();
        flows.truncate(crate::STATUS_FLOWS);
        SessionStatus {
            id,
            peer,
            addr,
            assignment,
            confirmed: assignment.is_some(),
            queue: path.queue.stats(),
            flows,
            forecast: path
                .conn
                .peer_forecast()
                .map(<[u32]>::to_vec)
                .unwrap_or_default(),
            window_bytes: path.conn.window_bytes(now),
            incoming_rate_pps: path.conn.incoming_rate_pps(),
            sent_bytes: path.sent_bytes,
            received_bytes: path.received_bytes,
            sent_packets: path.sent_packets,
            received_packets: path.received_packets,
        }
    }
}

/// The security layer's drop counters by reason name (every reason, zeros included).
pub fn secure_drops(stats: &sprout_secure::SecureStats) -> std::collections::BTreeMap<String, u64> {
    sprout_secure::DropReason::ALL
        .iter()
        .map(|&r| (r.name().to_string(), stats.dropped(r)))
        .collect()
}
