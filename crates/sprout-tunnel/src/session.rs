//! One tunnel session's data path, shared by both ends: a Sprout [`Connection`] and the
//! per-flow queue in front of it. Packets wait in the [`FlowQueue`]; the connection is handed
//! only as much as keeps its window busy (at most [`CORE_BACKLOG_BYTES`] queued inside it), so
//! the round robin, not the connection's FIFO, decides who goes next, and the cap follows the
//! peer's latest forecast.
//!
//! **Probing.** Sprout learns the link's rate only from what it sends: a direction that carries
//! only light traffic (a call, TCP acknowledgements) is forecast from that traffic, and the
//! cautious forecast of a few packets per tick is well below the traffic's own rate (one packet
//! per tick forecasts 1 packet over the next 5 ticks), so the window holds packets back and the
//! cap drops them. With probing on, while the session carried real packets in the last
//! [`PROBE_LINGER`], the connection runs in bulk mode: real packets go first and padding
//! fills the rest of the window, so the receiver measures the link as the paper's saturating
//! senders do. The price is the padding itself (about what Sprout uses of the link), which is
//! why it is a choice, off by default.
//!
//! The padding sits in the link's queue like any bulk sender's: a real packet sent after it
//! waits behind the window's worth of padding already sent (about the delay target at the
//! forecast rate, more in a dip). A direction whose own traffic is light pays that delay for
//! nothing since the core scores an application-limited sender's ticks as lower bounds and
//! keeps its forecast above its traffic without padding: on Verizon-LTE-short's uplink
//! (acknowledgements and a 500 kbit/s stream), a padding client put 656 ms on the stream's
//! p95 against 68 ms direct, and a client without padding 91 ms against 71 (issue 36). So pad
//! only toward a peer whose direction carries bulk traffic: the SproutTunnel experiment has its
//! relay probe and its mobile end not.

use sprout_core::time::{Duration, Instant};
use sprout_core::{Config, ConfigError, Connection};

use crate::control::{self, PayloadKind};
use crate::flow_queue::{FlowQueue, FlowQueueConfig};
use crate::packet::FlowKey;

/// Bytes the connection may hold in its own FIFO: about two full packets, so that its
/// time-to-next sees that more is coming, while the flow queue keeps the order.
pub const CORE_BACKLOG_BYTES: usize = 3000;

/// How long after the last real packet (either way) a probing session keeps padding.
pub const PROBE_LINGER: Duration = Duration::from_secs(1);

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
    /// Probing on (see the module docs).
    probe: bool,
    /// When the session last carried a real packet either way.
    last_activity: Option<Instant>,
    /// `received_packets` when activity was last noted.
    seen_received: u64,
    /// Whether the connection is in bulk mode (padding) now.
    padding: bool,
}

impl SessionPath {
    /// A new path created at `now`.
    pub fn new(
        config: Config,
        queue: FlowQueueConfig,
        now: Instant,
    ) -> Result<SessionPath, ConfigError> {
        let conn = Connection::new(config, now)?;
        Ok(SessionPath {
            conn,
            queue: FlowQueue::new(queue),
            sent_bytes: 0,
            sent_packets: 0,
            received_bytes: 0,
            received_packets: 0,
            probe: false,
            last_activity: None,
            seen_received: 0,
            padding: false,
        })
    }

    /// Turns probing on or off (see the module docs).
    pub fn set_probe(&mut self, probe: bool) {
        self.probe = probe;
        if !probe {
            self.conn.set_bulk(false);
            self.padding = false;
        }
    }

    /// Whether the connection pads now (probing on and the session active).
    pub fn is_padding(&self) -> bool {
        self.padding
    }

    /// Largest IP packet the session carries (bytes).
    pub fn max_packet(&self) -> usize {
        self.conn.max_payload()
    }

    /// Queues an IP packet of `flow` toward the peer; returns the packets the cap dropped.
    pub fn enqueue(&mut self, now: Instant, flow: FlowKey, packet: Vec<u8>) -> usize {
        let dropped = self.queue.push(now, flow, packet);
        self.last_activity = Some(now);
        self.top_up(now);
        dropped
    }

    /// Queues a control message toward the peer ahead of the flows.
    pub fn send_control(&mut self, message: Vec<u8>) {
        self.conn.send(message);
    }

    /// Moves packets from the flow queue into the connection while it holds less than
    /// [`CORE_BACKLOG_BYTES`].
    fn top_up(&mut self, now: Instant) {
        while self.conn.queued_bytes() < CORE_BACKLOG_BYTES {
            let Some(packet) = self.queue.pop(now) else {
                break;
            };
            self.sent_bytes = self.sent_bytes.saturating_add(packet.len() as u64);
            self.sent_packets = self.sent_packets.saturating_add(1);
            self.conn.send(packet);
        }
    }

    /// The cap from the peer's latest forecast ([`SessionPath::apply_forecast_cap`]) applied
    /// to the queue, the connection topped up from the queue, and the next core datagram to
    /// send written into `buf`; `false` when nothing goes now.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> bool {
        self.apply_forecast_cap();
        self.top_up(now);
        if self.probe {
            if self.received_packets != self.seen_received {
                self.seen_received = self.received_packets;
                self.last_activity = Some(now);
            }
            let active = self.last_activity.is_some_and(|t| now - t < PROBE_LINGER);
            if active != self.padding {
                self.padding = active;
                self.conn.set_bulk(active);
            }
        }
        self.conn.poll_transmit(now, buf).is_some()
    }

    /// Sets the queue's cap from the peer's latest forecast, if there is one: its last
    /// cumulative count (packets of [`FORECAST_PACKET_BYTES`]) over its horizon (the forecast's
    /// ticks), so the cap is [`FlowQueueConfig::cap_time`] at the forecast rate
    /// ([`FlowQueue::set_forecast`]). Returns the packets that dropped.
    pub fn apply_forecast_cap(&mut self) -> usize {
        let tick = self.conn.config().model.tick_us;
        let forecast = self.conn.peer_forecast().and_then(|f| {
            let last = u64::from(*f.last()?);
            Some((last * FORECAST_PACKET_BYTES as u64, tick * f.len() as u64))
        });
        match forecast {
            Some((bytes, horizon)) => self.queue.set_forecast(bytes, horizon),
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

    /// When the path next needs attention.
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        self.conn.poll_timeout()
    }
}
