//! One tunnel session's data path, shared by both ends: a Sprout [`Connection`] and the
//! per-flow queue in front of it. Packets wait in the [`FlowQueue`]; the connection is handed
//! only as much as keeps its window busy (at most [`CORE_BACKLOG_BYTES`] queued inside it), so
//! the round robin, not the connection's FIFO, decides who goes next, and the cap follows the
//! peer's latest forecast.

use sprout_core::{Config, Connection};

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
    /// IP payload bytes and packets sent and received through it.
    pub sent_bytes: u64,
    /// Packets handed to the connection.
    pub sent_packets: u64,
    /// Bytes received out of the connection.
    pub received_bytes: u64,
    /// Packets received out of the connection.
    pub received_packets: u64,
}

impl SessionPath {
    /// A new path created at `now_us`.
    pub fn new(config: Config, queue: FlowQueueConfig, now_us: u64) -> Result<SessionPath, String> {
        let _ = (config, queue, now_us);
        todo!()
    }

    /// Largest IP packet the session carries (bytes).
    pub fn max_packet(&self) -> usize {
        self.conn.max_payload()
    }

    /// Queues an IP packet of `flow` toward the peer; returns the packets the cap dropped.
    pub fn enqueue(&mut self, now_us: u64, flow: FlowKey, packet: Vec<u8>) -> usize {
        let _ = (now_us, flow, packet);
        todo!()
    }

    /// Queues a control message toward the peer ahead of the flows.
    pub fn send_control(&mut self, message: Vec<u8>) {
        let _ = message;
        todo!()
    }

    /// The cap from the peer's latest forecast (its last cumulative count times
    /// [`FORECAST_PACKET_BYTES`]) applied to the queue, the connection topped up from the
    /// queue, and the next core datagram to send written into `buf`; `false` when nothing
    /// goes now.
    pub fn poll_transmit(&mut self, now_us: u64, buf: &mut Vec<u8>) -> bool {
        let _ = (now_us, buf);
        todo!()
    }

    /// When the path next needs attention (µs).
    pub fn poll_timeout(&mut self) -> Option<u64> {
        todo!()
    }
}
