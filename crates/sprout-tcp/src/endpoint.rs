//! One host: a sender for its own outgoing data and a receiver for the peer's data.

use serde::{Deserialize, Serialize};
use sprout_core::time::{Duration, Instant};

use crate::cc::{new_controller, CcConfig, CcKind, CongestionControl};
use crate::config::{TcpConfig, SYN_FALLBACK_RTO};
use crate::handshake::{ConnectionState, Handshake, Opening, Outcome};
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
    /// Smoothed RTT (serialized in µs, under its `_us` name).
    pub srtt_us: Option<Duration>,
    /// Minimum RTT seen (serialized in µs).
    pub min_rtt_us: Option<Duration>,
    /// Current retransmission timeout, backoff included (serialized in µs).
    pub rto_us: Duration,
    /// Pacing rate (payload bytes per second), if the controller paces.
    pub pacing_rate_bytes_per_s: Option<u64>,
    /// Where the connection is in its handshake.
    pub state: ConnectionState,
    /// SYNs or SYN-ACKs retransmitted.
    pub syn_retransmits: u32,
    /// SYN, SYN-ACK and handshake ACK segments sent (not counted as ACKs or data).
    pub handshake_segments_sent: u64,
    /// Whether ECN was negotiated (RFC 3168; [`TcpConfig::ecn`]).
    pub ecn: bool,
    /// Peer data segments received marked CE.
    pub ce_segments_received: u64,
    /// Window reductions in answer to ECE (at most one per window of data).
    pub ecn_reductions: u64,
}

/// A sans-IO TCP-like endpoint.
///
/// Outgoing: the handshake's segments, data segments (when [`set_bulk`](Self::set_bulk) or
/// [`write`](Self::write) gave it data) and pure ACKs for the peer's data; ACKs are not
/// piggybacked on data. [`connect`](Self::connect) and [`listen`](Self::listen) open the
/// connection with a three-way handshake (see [`handshake`](crate::handshake)) and send no data
/// before it completes; [`new`](Self::new) starts established, as if a handshake had already
/// happened without an RTT sample. There is no teardown and no SACK: loss recovery is NewReno.
/// Drive it with [`handle_segment`](Self::handle_segment),
/// [`handle_timeout`](Self::handle_timeout), [`poll_transmit`](Self::poll_transmit) and
/// [`poll_timeout`](Self::poll_timeout).
#[derive(Debug)]
pub struct TcpEndpoint {
    cfg: TcpConfig,
    sender: Sender,
    receiver: Receiver,
    handshake: Handshake,
    /// The controller to rebuild with a one-segment window if the handshake needed more than one
    /// retransmission (only for endpoints built from a [`CcKind`]).
    rebuild: Option<(CcKind, CcConfig)>,
    ack_segments_sent: u64,
    handshake_segments_sent: u64,
    wire_bytes_sent: u64,
}

impl TcpEndpoint {
    /// A new endpoint with congestion controller `cc`, already established (no handshake),
    /// nothing to send yet. `now` is the creation time; all state is relative to the
    /// times later passed in.
    pub fn new(cfg: TcpConfig, cc: CcKind, now: Instant) -> Self {
        Self::open(cfg, cc, Opening::Established, now)
    }

    /// A client: an endpoint that opens the connection actively, sending its SYN at the first
    /// [`poll_transmit`](Self::poll_transmit). `now` as for [`new`](Self::new).
    pub fn connect(cfg: TcpConfig, cc: CcKind, now: Instant) -> Self {
        Self::open(cfg, cc, Opening::Active, now)
    }

    /// A server: an endpoint that waits for the peer's SYN and answers it. `now` as for
    /// [`new`](Self::new).
    pub fn listen(cfg: TcpConfig, cc: CcKind, now: Instant) -> Self {
        Self::open(cfg, cc, Opening::Passive, now)
    }

    /// An endpoint with congestion controller `cc` that opens its connection as `opening` says.
    /// `now` as for [`new`](Self::new).
    pub fn open(cfg: TcpConfig, cc: CcKind, opening: Opening, now: Instant) -> Self {
        let cc_cfg = CcConfig::from_tcp(&cfg);
        let mut e = Self::with_controller(cfg, new_controller(cc, &cc_cfg), now);
        e.handshake = Handshake::new(opening, e.cfg.initial_rto, e.cfg.ecn);
        e.sender.set_ecn(e.handshake.ecn_ok());
        e.rebuild = Some((cc, cc_cfg));
        e
    }

    /// A new endpoint, already established (no handshake), driven by a controller built
    /// elsewhere (e.g. with a non-default [`CcConfig::seed`](crate::cc::CcConfig::seed), or a
    /// controller of your own). `now` as for [`new`](Self::new).
    pub fn with_controller(cfg: TcpConfig, cc: Box<dyn CongestionControl>, now: Instant) -> Self {
        let _ = now;
        let mut sender = Sender::with_controller(&cfg, cc);
        sender.set_ecn(cfg.ecn);
        TcpEndpoint {
            sender,
            receiver: Receiver::new(cfg.delayed_acks),
            handshake: Handshake::new(Opening::Established, cfg.initial_rto, cfg.ecn),
            rebuild: None,
            cfg,
            ack_segments_sent: 0,
            handshake_segments_sent: 0,
            wire_bytes_sent: 0,
        }
    }

    /// Where the connection is in its handshake.
    pub fn state(&self) -> ConnectionState {
        self.handshake.state()
    }

    /// Whether the connection is established (data may flow).
    pub fn is_established(&self) -> bool {
        self.handshake.is_established()
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

    /// Processes a segment from the peer arriving at `now`: a handshake segment goes to
    /// the handshake; otherwise its data goes to the receiver (which queues ACKs), its ACK field
    /// to the sender. Before the connection can take them, segments are dropped.
    pub fn handle_segment(&mut self, now: Instant, seg: &Segment) {
        if !self.handshake.passes(seg) {
            match self.handshake.on_segment(now, seg) {
                Outcome::Consumed => return,
                Outcome::Established { rtt } => {
                    self.on_established(now, rtt);
                    if seg.syn {
                        return;
                    }
                }
                Outcome::Pass => {}
            }
        }
        if seg.is_data() {
            self.receiver.on_data(now, seg);
        }
        if seg.ack.is_some() {
            self.sender.on_ack(now, seg);
        }
    }

    /// The handshake completed: the controller is told, with the handshake's RTT sample, which
    /// also seeds the RTO. As in Linux (`tcp_init_transfer`), more than one retransmission of
    /// the SYN or SYN-ACK leaves a one-segment initial window (RFC 5681 §3.1 asks for it after
    /// any), and a handshake that needed retransmissions but gave no RTT sample leaves a 3 s RTO
    /// (RFC 6298 §5.7).
    fn on_established(&mut self, now: Instant, rtt: Option<Duration>) {
        self.sender.set_ecn(self.handshake.ecn_ok());
        if self.handshake.retransmits() > 1 {
            if let Some((kind, cc_cfg)) = &self.rebuild {
                let one_segment = CcConfig {
                    initial_cwnd_bytes: cc_cfg.mss,
                    ..*cc_cfg
                };
                self.sender
                    .set_controller(new_controller(*kind, &one_segment));
            }
        }
        match rtt {
            Some(r) => self.sender.on_handshake_rtt(r),
            None if self.handshake.retransmits() > 0 => {
                self.sender.set_rto_without_sample(SYN_FALLBACK_RTO)
            }
            None => {}
        }
        self.sender.cc_mut().on_established(now, rtt);
    }

    /// Fires whatever timers are due at `now`: the SYN's or SYN-ACK's retransmission,
    /// the retransmission timeout, the delayed ACK. Pacing needs no call:
    /// [`poll_transmit`](Self::poll_transmit) checks the release time.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.handshake.on_timeout(now);
        self.sender.on_timeout(now);
        self.receiver.on_timeout(now);
    }

    /// The next segment to send at `now`, if any: the handshake's segments first, then
    /// queued ACKs, then data as the window and pacing allow (only once established). Call
    /// until `None`.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Segment> {
        let handshake = if self.handshake.may_transmit() {
            self.handshake.poll_transmit(
                now,
                self.receiver.delivered_bytes(),
                self.sender.snd_max(),
            )
        } else {
            None
        };
        let seg = if let Some(h) = handshake {
            self.handshake_segments_sent += 1;
            h
        } else if let Some(a) = self.receiver.pop_ack() {
            self.ack_segments_sent += 1;
            Segment {
                seq: self.sender.snd_max(),
                len: 0,
                ack: Some(a.ack),
                sent: now,
                echo: a.echo,
                one_way_delay: a.one_way_delay,
                retransmission: false,
                syn: false,
                ecn: {
                    let mut ecn = crate::segment::SegmentEcn::default();
                    ecn.set_ece(a.ece);
                    ecn
                },
            }
        } else if self.handshake.is_established() {
            self.sender.poll_transmit(now)?
        } else {
            return None;
        };
        self.wire_bytes_sent += u64::from(seg.wire_bytes());
        Some(seg)
    }

    /// Earliest deadline: the SYN's or SYN-ACK's retransmission, the retransmission
    /// timer, the delayed-ACK timer, or the pacing release time when pacing is what holds the
    /// next segment back. `None` if nothing is pending.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let sender = if self.handshake.is_established() {
            self.sender.poll_timeout()
        } else {
            None
        };
        [
            self.handshake.poll_timeout(),
            sender,
            self.receiver.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
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
            srtt_us: self.sender.rtt().srtt(),
            min_rtt_us: self.sender.rtt().min_rtt(),
            rto_us: self.sender.rto(),
            pacing_rate_bytes_per_s: cc.pacing_rate_bytes_per_s(),
            state: self.handshake.state(),
            syn_retransmits: self.handshake.retransmits(),
            handshake_segments_sent: self.handshake_segments_sent,
            ecn: self.sender.ecn(),
            ce_segments_received: r.ce_segments_received,
            ecn_reductions: s.ecn_reductions,
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
