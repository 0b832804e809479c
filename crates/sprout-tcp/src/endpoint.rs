//! One host: a sender for its own outgoing data and a receiver for the peer's data.

use serde::{Deserialize, Serialize};

use crate::cc::{new_controller, CcConfig, CcKind, CongestionControl};
use crate::config::TcpConfig;
use crate::receiver::Receiver;
use crate::segment::Segment;
use crate::sender::Sender;

/// Counters and current state of an endpoint. Bytes are payload bytes unless named `wire`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpStats {
    /// Data segments sent, retransmissions included.
    pub data_segments_sent: u64,
    /// Payload bytes sent, retransmissions included (bytes).
    pub data_bytes_sent: u64,
    /// Pure ACK segments sent.
    pub ack_segments_sent: u64,
    /// Bytes handed to the network, headers included, data and ACKs (bytes).
    pub wire_bytes_sent: u64,
    /// Data segments that were retransmissions.
    pub retransmitted_segments: u64,
    /// Payload bytes retransmitted (bytes).
    pub retransmitted_bytes: u64,
    /// Fast retransmits (fast-recovery episodes entered).
    pub fast_retransmits: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Timeouts found spurious (the first ACK after them acknowledged an original
    /// transmission) and undone.
    pub spurious_timeouts: u64,
    /// Own data cumulatively acknowledged by the peer (bytes).
    pub acked_bytes: u64,
    /// Own data still outstanding (bytes).
    pub in_flight_bytes: u64,
    /// Peer data delivered in order to this host's application (bytes).
    pub delivered_app_bytes: u64,
    /// Peer data segments received (duplicates included).
    pub data_segments_received: u64,
    /// Peer data segments received that were entirely duplicates.
    pub duplicate_segments_received: u64,
    /// Peer data segments received out of order.
    pub out_of_order_segments_received: u64,
    /// Congestion window (bytes), without fast-recovery inflation.
    pub cwnd_bytes: u64,
    /// Usable window (bytes): cwnd plus fast-recovery inflation, capped.
    pub window_bytes: u64,
    /// Slow-start threshold (bytes); `u64::MAX` if none.
    pub ssthresh_bytes: u64,
    /// Whether the sender is in fast recovery.
    pub in_recovery: bool,
    /// Smoothed RTT (µs).
    pub srtt_us: Option<u64>,
    /// Minimum RTT seen (µs).
    pub min_rtt_us: Option<u64>,
    /// Current retransmission timeout, backoff included (µs).
    pub rto_us: u64,
    /// Pacing rate (payload bytes per second), if the controller paces.
    pub pacing_rate_bytes_per_s: Option<u64>,
}

/// A sans-IO TCP-like endpoint.
///
/// Outgoing: data segments (when [`set_bulk`](Self::set_bulk) or [`write`](Self::write) gave it
/// data) and pure ACKs for the peer's data; ACKs are not piggybacked on data. There is no
/// handshake or teardown, and no SACK: loss recovery is NewReno. Drive it with
/// [`handle_segment`](Self::handle_segment), [`handle_timeout`](Self::handle_timeout),
/// [`poll_transmit`](Self::poll_transmit) and [`poll_timeout`](Self::poll_timeout).
#[derive(Debug)]
pub struct TcpEndpoint {
    cfg: TcpConfig,
    sender: Sender,
    receiver: Receiver,
    ack_segments_sent: u64,
    wire_bytes_sent: u64,
}

impl TcpEndpoint {
    /// A new endpoint with congestion controller `cc`, nothing to send yet. `now_us` (µs) is
    /// the creation time; all state is relative to the times later passed in.
    pub fn new(cfg: TcpConfig, cc: CcKind, now_us: u64) -> Self {
        let controller = new_controller(cc, &CcConfig::from_tcp(&cfg));
        Self::with_controller(cfg, controller, now_us)
    }

    /// A new endpoint driven by a controller built elsewhere (e.g. with a non-default
    /// [`CcConfig::seed`](crate::cc::CcConfig::seed), or a controller of your own). `now_us` (µs)
    /// as for [`new`](Self::new).
    pub fn with_controller(cfg: TcpConfig, cc: Box<dyn CongestionControl>, now_us: u64) -> Self {
        let _ = now_us;
        TcpEndpoint {
            sender: Sender::with_controller(&cfg, cc),
            receiver: Receiver::new(cfg.delayed_acks),
            cfg,
            ack_segments_sent: 0,
            wire_bytes_sent: 0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &TcpConfig {
        &self.cfg
    }

    /// Saturating application: when on, there is always new data to send (an infinite send
    /// buffer).
    pub fn set_bulk(&mut self, on: bool) {
        self.sender.set_bulk(on);
    }

    /// Queues `bytes` more bytes of application data (a finite transfer; bytes).
    pub fn write(&mut self, bytes: u64) {
        self.sender.write(bytes);
    }

    /// Application bytes written with [`write`](Self::write) and not yet sent (bytes).
    pub fn unsent_bytes(&self) -> u64 {
        self.sender.unsent_app_bytes()
    }

    /// Processes a segment from the peer arriving at `now_us` (µs): its data goes to the
    /// receiver (which queues ACKs), its ACK field to the sender.
    pub fn handle_segment(&mut self, now_us: u64, seg: &Segment) {
        if seg.is_data() {
            self.receiver.on_data(now_us, seg);
        }
        if seg.ack.is_some() {
            self.sender.on_ack(now_us, seg);
        }
    }

    /// Fires whatever timers are due at `now_us` (µs): retransmission timeout, delayed ACK.
    /// Pacing needs no call: [`poll_transmit`](Self::poll_transmit) checks the release time.
    pub fn handle_timeout(&mut self, now_us: u64) {
        self.sender.on_timeout(now_us);
        self.receiver.on_timeout(now_us);
    }

    /// The next segment to send at `now_us` (µs), if any: queued ACKs first, then data as the
    /// window and pacing allow. Call until `None`.
    pub fn poll_transmit(&mut self, now_us: u64) -> Option<Segment> {
        let seg = if let Some(a) = self.receiver.pop_ack() {
            self.ack_segments_sent += 1;
            Segment {
                seq: self.sender.snd_max(),
                len: 0,
                ack: Some(a.ack),
                sent_us: now_us,
                echo_us: a.echo_us,
                one_way_delay_us: a.one_way_delay_us,
                retransmission: false,
            }
        } else {
            self.sender.poll_transmit(now_us)?
        };
        self.wire_bytes_sent += u64::from(seg.wire_bytes());
        Some(seg)
    }

    /// Earliest deadline (µs): retransmission timer, delayed-ACK timer, or the pacing release
    /// time when pacing is what holds the next segment back. `None` if nothing is pending.
    pub fn poll_timeout(&self) -> Option<u64> {
        match (self.sender.poll_timeout(), self.receiver.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Counters and current state.
    pub fn stats(&self) -> TcpStats {
        let s = self.sender.counters();
        let r = self.receiver.counters();
        let cc = self.sender.cc();
        TcpStats {
            data_segments_sent: s.data_segments_sent,
            data_bytes_sent: s.data_bytes_sent,
            ack_segments_sent: self.ack_segments_sent,
            wire_bytes_sent: self.wire_bytes_sent,
            retransmitted_segments: s.retransmitted_segments,
            retransmitted_bytes: s.retransmitted_bytes,
            fast_retransmits: s.fast_retransmits,
            timeouts: s.timeouts,
            spurious_timeouts: s.spurious_timeouts,
            acked_bytes: self.sender.snd_una(),
            in_flight_bytes: self.sender.in_flight(),
            delivered_app_bytes: self.receiver.delivered_bytes(),
            data_segments_received: r.data_segments_received,
            duplicate_segments_received: r.duplicate_segments_received,
            out_of_order_segments_received: r.out_of_order_segments_received,
            cwnd_bytes: self.cwnd_bytes(),
            window_bytes: self.sender.window(),
            ssthresh_bytes: cc.ssthresh_bytes(),
            in_recovery: self.sender.in_recovery(),
            srtt_us: self.sender.rtt().srtt_us(),
            min_rtt_us: self.sender.rtt().min_rtt_us(),
            rto_us: self.sender.rto_us(),
            pacing_rate_bytes_per_s: cc.pacing_rate_bytes_per_s(),
        }
    }

    /// Congestion window (bytes), capped at `max_cwnd_segments`, without fast-recovery
    /// inflation.
    pub fn cwnd_bytes(&self) -> u64 {
        self.sender.cc().cwnd_bytes().min(self.cfg.max_cwnd_bytes())
    }

    /// The congestion controller, e.g. to downcast with `as_any()` to read
    /// [`Compound::dwnd_bytes`](crate::cc::Compound::dwnd_bytes).
    pub fn cc(&self) -> &dyn CongestionControl {
        self.sender.cc()
    }

    /// Which congestion controller.
    pub fn cc_kind(&self) -> CcKind {
        self.sender.cc().kind()
    }

    /// Peer data held out of order, waiting for a gap to fill (bytes).
    pub fn out_of_order_bytes(&self) -> u64 {
        self.receiver.out_of_order_bytes()
    }
}
