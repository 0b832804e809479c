//! One tunnel session's data path, shared by both ends: a Sprout [`Connection`] and the
//! per-flow queue in front of it. Packets wait in the [`FlowQueue`]; the connection is handed
//! only as much as keeps its window busy (at most [`CORE_BACKLOG_BYTES`] queued inside it), so
//! the round robin, not the connection's FIFO, decides who goes next, and the cap follows the
//! peer's latest forecast.

use sprout_core::{Config, Connection};

use crate::control::{self, PayloadKind};
use crate::flow_queue::{FlowQueue, FlowQueueConfig};
use crate::packet::FlowKey;

/// Bytes the connection may hold in its own FIFO: about two full packets, so that its
/// time-to-next sees that more is coming, while the flow queue keeps the order.
pub const CORE_BACKLOG_BYTES: usize = 3000;

/// Link bytes the core counts as one forecast packet (its MTU unit).
pub const FORECAST_PACKET_BYTES: usize = 1500;

/// A session's data path.
pub struct SessionPath {
    /// The Sprout connection.
    pub conn: Connection,
    /// The per-flow queue toward the peer.
    pub queue: FlowQueue,
    /// IP payload bytes handed to the connection (sent into the session).
    pub sent_bytes: u64,
    /// Packets handed to the connection.
    pub sent_packets: u64,
    /// IP packet bytes received out of the connection (control messages not counted).
    pub received_bytes: u64,
    /// IP packets received out of the connection.
    pub received_packets: u64,
}

impl SessionPath {
    /// A new path created at `now_us`.
    pub fn new(config: Config, queue: FlowQueueConfig, now_us: u64) -> Result<SessionPath, String> {
        let conn = Connection::new(config, now_us)?;
        Ok(SessionPath {
            conn,
            queue: FlowQueue::new(queue),
            sent_bytes: 0,
            sent_packets: 0,
            received_bytes: 0,
            received_packets: 0,
        })
    }

    /// Largest IP packet the session carries (bytes).
    pub fn max_packet(&self) -> usize {
        self.conn.max_payload()
    }

    /// Queues an IP packet of `flow` toward the peer; returns the packets the cap dropped.
    pub fn enqueue(&mut self, now_us: u64, flow: FlowKey, packet: Vec<u8>) -> usize {
        let dropped = self.queue.push(now_us, flow, packet);
        self.top_up(now_us);
        dropped
    }

    /// Queues a control message toward the peer ahead of the flows.
    pub fn send_control(&mut self, message: Vec<u8>) {
        self.conn.send(message);
    }

    /// Moves packets from the flow queue into the connection while it holds less than
    /// [`CORE_BACKLOG_BYTES`].
    fn top_up(&mut self, now_us: u64) {
        while self.conn.queued_bytes() < CORE_BACKLOG_BYTES {
            let Some(packet) = self.queue.pop(now_us) else {
                break;
            };
            self.sent_bytes = self.sent_bytes.saturating_add(packet.len() as u64);
            self.sent_packets = self.sent_packets.saturating_add(1);
            self.conn.send(packet);
        }
    }

    /// The cap from the peer's latest forecast (its last cumulative count times
    /// [`FORECAST_PACKET_BYTES`]) applied to the queue, the connection topped up from the
    /// queue, and the next core datagram to send written into `buf`; `false` when nothing
    /// goes now.
    pub fn poll_transmit(&mut self, now_us: u64, buf: &mut Vec<u8>) -> bool {
        self.apply_forecast_cap();
        self.top_up(now_us);
        self.conn.poll_transmit(now_us, buf).is_some()
    }

    /// Sets the queue's cap from the peer's latest forecast, if there is one; returns the
    /// packets that dropped.
    pub fn apply_forecast_cap(&mut self) -> usize {
        let cap = self
            .conn
            .peer_forecast()
            .and_then(|f| f.last())
            .map(|&last| (last as usize).saturating_mul(FORECAST_PACKET_BYTES));
        match cap {
            Some(cap) => self.queue.set_cap(cap),
            None => 0,
        }
    }

    /// The next payload received out of the connection (an IP packet or a control message),
    /// counting IP packets in [`SessionPath::received_packets`] and
    /// [`SessionPath::received_bytes`].
    pub fn recv(&mut self) -> Option<Vec<u8>> {
        let payload = self.conn.recv()?;
        if control::kind(&payload) == Some(PayloadKind::Packet) {
            self.received_packets = self.received_packets.saturating_add(1);
            self.received_bytes = self.received_bytes.saturating_add(payload.len() as u64);
        }
        Some(payload)
    }

    /// When the path next needs attention (µs).
    pub fn poll_timeout(&mut self) -> Option<u64> {
        self.conn.poll_timeout()
    }
}
