//! The three-way handshake (RFC 9293 §3.5) with Linux's timers: an active opener sends a SYN, a
//! passive listener answers with a SYN-ACK, and the opener's ACK completes the connection. No
//! data leaves either side before its end is established: the opener once the SYN-ACK arrives,
//! the listener once the ACK (or, if that ACK was lost, the opener's first data segment)
//! arrives.
//!
//! Timers: the SYN and the SYN-ACK are retransmitted after 1 s (`TcpConfig::initial_rto`,
//! Linux's `TCP_TIMEOUT_INIT`, RFC 6298 §2.1), doubling on each retransmission up to 60 s; a
//! listener also answers a retransmitted SYN with its SYN-ACK at once (Linux's
//! `inet_rtx_syn_ack`). Retransmission never gives up (Linux stops after `tcp_syn_retries` = 6
//! SYNs, 127 s; a simulated run has no use for a connection that failed).
//!
//! Timestamps (RFC 7323) give each end an RTT sample: the opener from the SYN-ACK, which echoes
//! the SYN that reached the listener; the listener from the ACK, which echoes the SYN-ACK. The
//! sample seeds SRTT, RTTVAR and the RTO as any sample does (Linux's `tcp_ack_update_rtt` on
//! the SYN-ACK, `tcp_synack_rtt_meas` on the ACK).
//!
//! A segment that reaches an endpoint before the handshake lets it accept one is dropped, as a
//! host that does not exist yet drops it; after establishment a duplicate SYN or SYN-ACK (its
//! ACK was lost or late) is answered with an ACK.

use serde::{Deserialize, Serialize};
use sprout_core::time::{Duration, Instant};

use crate::config::MAX_RTO;
use crate::segment::Segment;

/// Where an endpoint is in opening its connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ConnectionState {
    /// A passive opener waiting for a SYN (RFC 9293's LISTEN).
    Listen,
    /// An active opener that sent its SYN and waits for the SYN-ACK (SYN-SENT).
    SynSent,
    /// A passive opener that answered a SYN and waits for the ACK (SYN-RECEIVED).
    SynReceived,
    /// Data may flow (ESTABLISHED).
    #[default]
    Established,
}

/// How an endpoint opens its connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Opening {
    /// No handshake: the connection exists from the start (the endpoint sends data at once).
    Established,
    /// Active open: send a SYN and wait for the SYN-ACK (a client's `connect`).
    Active,
    /// Passive open: wait for a SYN and answer it (a server's `listen`).
    Passive,
}

/// What a segment did to the handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The segment was the handshake's, or arrived before the connection could take it: it
    /// goes no further.
    Consumed,
    /// The connection was established by this segment, with the handshake's RTT sample if it
    /// gave one; a segment carrying data or an ACK goes on to the receiver and sender.
    Established { rtt: Option<Duration> },
    /// An ordinary segment of an established connection.
    Pass,
}

/// The handshake's state and timer.
#[derive(Clone, Debug)]
pub(crate) struct Handshake {
    state: ConnectionState,
    initial_rto: Duration,
    /// When the SYN or SYN-ACK is retransmitted.
    deadline: Option<Instant>,
    /// Retransmissions of the SYN or SYN-ACK so far.
    retransmits: u32,
    /// The SYN or SYN-ACK is due.
    transmit_pending: bool,
    /// An ACK of the peer's SYN-ACK (or a reply to a duplicate SYN) is due.
    ack_pending: bool,
    /// Timestamp of the peer's SYN or SYN-ACK, echoed in the reply.
    peer_tsval: Option<Instant>,
    /// This end wants ECN (`TcpConfig::ecn`).
    ecn_wanted: bool,
    /// ECN was negotiated (RFC 3168 section 6.1.1): the SYN carried ECE and CWR and the
    /// SYN-ACK ECE without CWR; for an endpoint opened established, whether it wants ECN.
    ecn_ok: bool,
}

impl Handshake {
    pub(crate) fn new(opening: Opening, initial_rto: Duration, ecn: bool) -> Self {
        let state = match opening {
            Opening::Established => ConnectionState::Established,
            Opening::Active => ConnectionState::SynSent,
            Opening::Passive => ConnectionState::Listen,
        };
        Handshake {
            state,
            initial_rto,
            deadline: None,
            retransmits: 0,
            transmit_pending: opening == Opening::Active,
            ack_pending: false,
            peer_tsval: None,
            ecn_wanted: ecn,
            ecn_ok: ecn && opening == Opening::Established,
        }
    }

    /// Whether ECN was negotiated (meaningful once established).
    pub(crate) fn ecn_ok(&self) -> bool {
        self.ecn_ok
    }

    pub(crate) fn state(&self) -> ConnectionState {
        self.state
    }

    pub(crate) fn is_established(&self) -> bool {
        self.state == ConnectionState::Established
    }

    /// SYNs or SYN-ACKs retransmitted.
    pub(crate) fn retransmits(&self) -> u32 {
        self.retransmits
    }

    /// The SYN or SYN-ACK's timeout after `retransmits` retransmissions.
    fn timeout(&self) -> Duration {
        let factor = 1u64 << self.retransmits.min(20);
        (self.initial_rto * factor).min(MAX_RTO)
    }

    /// Whether [`on_segment`](Self::on_segment) passes `seg` on untouched: an established
    /// connection's segment that is not a SYN, the common case, kept inline.
    #[inline]
    pub(crate) fn passes(&self, seg: &Segment) -> bool {
        self.state == ConnectionState::Established && !seg.syn
    }

    /// Whether [`poll_transmit`](Self::poll_transmit) may have a segment: a SYN or SYN-ACK or
    /// a handshake ACK is pending. Kept inline, so that an established connection skips it.
    #[inline]
    pub(crate) fn may_transmit(&self) -> bool {
        self.transmit_pending || self.ack_pending
    }

    /// Takes a segment arriving at `now`.
    pub(crate) fn on_segment(&mut self, now: Instant, seg: &Segment) -> Outcome {
        match self.state {
            ConnectionState::Listen => {
                if seg.syn && seg.ack.is_none() {
                    self.state = ConnectionState::SynReceived;
                    // An ECN-setup SYN (ECE and CWR) to an end that wants ECN.
                    self.ecn_ok = self.ecn_wanted && seg.ecn.ece() && seg.ecn.cwr();
                    self.peer_tsval = Some(seg.sent);
                    self.transmit_pending = true;
                }
                Outcome::Consumed
            }
            ConnectionState::SynSent => {
                if seg.syn && seg.ack.is_some() {
                    // An ECN-setup SYN-ACK: ECE without CWR.
                    self.ecn_ok = self.ecn_wanted && seg.ecn.ece() && !seg.ecn.cwr();
                    self.state = ConnectionState::Established;
                    self.deadline = None;
                    self.transmit_pending = false;
                    self.peer_tsval = Some(seg.sent);
                    self.ack_pending = true;
                    let rtt = seg.echo.map(|e| now - e);
                    return Outcome::Established { rtt };
                }
                Outcome::Consumed
            }
            ConnectionState::SynReceived => {
                if seg.syn {
                    if seg.ack.is_none() {
                        // The opener retransmitted its SYN: our SYN-ACK may be lost; resend it.
                        self.peer_tsval = Some(seg.sent);
                        if !self.transmit_pending {
                            self.transmit_pending = true;
                            self.retransmits += 1;
                        }
                    }
                    return Outcome::Consumed;
                }
                if seg.ack.is_none() && !seg.is_data() {
                    return Outcome::Consumed;
                }
                // The ACK of our SYN-ACK, or, if it was lost, the opener's data.
                self.state = ConnectionState::Established;
                self.deadline = None;
                self.transmit_pending = false;
                let rtt = seg.echo.filter(|_| seg.ack.is_some()).map(|e| now - e);
                Outcome::Established { rtt }
            }
            ConnectionState::Established => {
                if seg.syn {
                    // A duplicate SYN-ACK (our ACK was lost) or SYN: acknowledge it again.
                    self.peer_tsval = Some(seg.sent);
                    self.ack_pending = true;
                    return Outcome::Consumed;
                }
                Outcome::Pass
            }
        }
    }

    /// Fires the SYN or SYN-ACK retransmission timer if due.
    pub(crate) fn on_timeout(&mut self, now: Instant) {
        if self.deadline.is_some_and(|d| d <= now) {
            self.deadline = None;
            self.retransmits += 1;
            self.transmit_pending = true;
        }
    }

    /// The SYN, SYN-ACK or handshake ACK due at `now`, if any. `rcv_nxt` is the receiver's
    /// next expected byte (what an ACK acknowledges), `snd_max` the sender's next new byte (an
    /// ACK's sequence number).
    pub(crate) fn poll_transmit(
        &mut self,
        now: Instant,
        rcv_nxt: u64,
        snd_max: u64,
    ) -> Option<Segment> {
        let syn = |ack, echo, retransmission| Segment {
            seq: 0,
            len: 0,
            ack,
            sent: now,
            echo,
            one_way_delay: None,
            retransmission,
            syn: true,
            ecn: crate::segment::SegmentEcn::default(),
        };
        match self.state {
            ConnectionState::SynSent | ConnectionState::SynReceived if self.transmit_pending => {
                self.transmit_pending = false;
                self.deadline = Some(now + self.timeout());
                let retransmission = self.retransmits > 0;
                let mut seg = if self.state == ConnectionState::SynSent {
                    syn(None, None, retransmission)
                } else {
                    syn(Some(0), self.peer_tsval, retransmission)
                };
                // RFC 3168 section 6.1.1: an ECN-setup SYN has ECE and CWR, an ECN-setup
                // SYN-ACK ECE alone.
                if self.state == ConnectionState::SynSent {
                    seg.ecn.set_ece(self.ecn_wanted);
                    seg.ecn.set_cwr(self.ecn_wanted);
                } else {
                    seg.ecn.set_ece(self.ecn_ok);
                }
                Some(seg)
            }
            ConnectionState::Established if self.ack_pending => {
                self.ack_pending = false;
                Some(Segment {
                    seq: snd_max,
                    ack: Some(rcv_nxt),
                    syn: false,
                    ecn: crate::segment::SegmentEcn::default(),
                    ..syn(None, self.peer_tsval, false)
                })
            }
            _ => None,
        }
    }

    /// The retransmission deadline of the SYN or SYN-ACK.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.deadline
    }
}
