//! The data sender: sequence space, cumulative ACK processing, NewReno loss recovery
//! (RFC 5681 fast retransmit, RFC 6582 fast recovery), the retransmission timer (RFC 6298),
//! delivery-rate sampling and pacing. The window itself comes from a
//! [`CongestionControl`].
//!
//! Conventions: `snd_una` is the oldest unacknowledged byte, `snd_max` one past the highest byte
//! ever sent, `snd_nxt` the next byte to (re)send — it only differs from `snd_max` after a
//! timeout, when everything outstanding is resent in order (go-back-N, as BSD and Linux do
//! without SACK). Bytes in flight — RFC 5681's FlightSize — are `snd_nxt - snd_una`: after a
//! timeout, data beyond `snd_nxt` is presumed lost. There is no SACK.
//!
//! Spurious timeouts are detected and undone with timestamps (Eifel, RFC 3522 and RFC 4015), as
//! Linux does: when the first ACK after a timeout echoes a timestamp older than the timeout, it
//! acknowledges an original transmission, so nothing was lost (the ACKs were only late, e.g.
//! queued behind the other direction's data). The controller then gets back the state it had
//! before the timeout and the go-back-N resend stops.
//!
//! The flight is bounded by the congestion window, the receive window and the send buffer.
//! Controllers grow their window only while the flow is *cwnd-limited*, as Linux decides it
//! (`tcp_cwnd_validate` and `tcp_is_cwnd_limited`, the idea of RFC 7661): after each burst of
//! transmissions the sender records whether the flight filled the window and the largest flight
//! of the current window of data; an ACK is cwnd-limited if the last window of data filled the
//! congestion window, or, in slow start, while cwnd is below twice that largest flight. A flow
//! held back by the receive window, the send buffer or the application does not inflate cwnd.

use std::collections::VecDeque;

use sprout_core::time::{Duration, Instant};

use crate::cc::{AckEvent, CongestionControl};
use crate::config::{TcpConfig, DUPACK_THRESHOLD, MAX_RTO};
use crate::pacer::Pacer;
use crate::rate::{RateEstimator, TxState};
use crate::rtt::RttEstimator;
use crate::segment::{Segment, SegmentEcn};

/// A transmitted, not yet acknowledged segment.
#[derive(Clone, Debug)]
struct SentSegment {
    seq: u64,
    len: u32,
    tx: TxState,
}

impl SentSegment {
    fn end(&self) -> u64 {
        self.seq + u64::from(self.len)
    }
}

/// What to send next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Candidate {
    /// Fast retransmit or partial-ACK retransmission of the segment at `snd_una`, regardless of
    /// the window (RFC 5681 §3.2 step 2, RFC 6582 §3.2 step 5).
    ForcedRetransmit,
    /// Go-back-N resend of the segment at `snd_nxt` (index into the queue) after a timeout.
    Resend(usize),
    /// New data of this many bytes.
    New(u32),
}

/// Sender counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SenderCounters {
    pub data_segments_sent: u64,
    pub data_bytes_sent: u64,
    pub retransmitted_segments: u64,
    pub retransmitted_bytes: u64,
    pub fast_retransmits: u64,
    pub timeouts: u64,
    pub spurious_timeouts: u64,
    pub ecn_reductions: u64,
}

/// What a retransmission timeout changed, kept until the first ACK after it says whether the
/// timeout was spurious.
#[derive(Debug)]
struct TimeoutUndo {
    /// The controller as it was before the timeout.
    cc: Box<dyn CongestionControl>,
    /// When the timeout fired: an ACK echoing an older timestamp acknowledges an original
    /// transmission.
    fired: Instant,
}

/// The sending half of an endpoint.
#[derive(Debug)]
pub(crate) struct Sender {
    mss: u32,
    /// The smaller of the receive window and the send buffer (bytes): the flight never exceeds it.
    flow_window: u64,
    max_cwnd: u64,
    cc: Box<dyn CongestionControl>,
    bulk: bool,
    /// Bytes written by the application and not yet sent (bytes).
    app_pending: u64,
    snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    /// Outstanding segments, contiguous from `snd_una`.
    segments: VecDeque<SentSegment>,
    dupacks: u32,
    in_recovery: bool,
    /// RFC 6582's `recover`: `snd_max` when the last fast recovery or timeout began.
    recover: u64,
    /// Whether `recover` was set by a timeout (then fast retransmit needs ACKs beyond it).
    recover_set_by_rto: bool,
    /// A timeout's recovery is in progress (until `snd_una >= recover`).
    rto_recovery: bool,
    /// Window adjustment during fast recovery (bytes): +3 SMSS at entry, +SMSS per duplicate
    /// ACK, minus newly acknowledged bytes (plus SMSS) per partial ACK.
    inflation: i64,
    partial_ack_seen: bool,
    retransmit_pending: bool,
    rtt: RttEstimator,
    rto_deadline: Option<Instant>,
    backoff: u32,
    /// Set by a timeout until the next new ACK (Eifel detection).
    undo: Option<TimeoutUndo>,
    rate: RateEstimator,
    pacer: Pacer,
    counters: SenderCounters,
    /// Whether the flight filled the window in the current window of data (Linux's
    /// `is_cwnd_limited`).
    is_cwnd_limited: bool,
    /// Largest flight of the current window of data (bytes; Linux's `max_packets_out`).
    max_flight: u64,
    /// The current window of data ends when `snd_una` reaches this (Linux's `cwnd_usage_seq`).
    cwnd_usage_seq: u64,
    /// Data was sent since the window's use was last recorded.
    sent_since_validate: bool,
    /// ECN was negotiated: new data goes ECT(0), ECE is answered.
    ecn: bool,
    /// The next new data segment carries CWR (the window was reduced).
    cwr_pending: bool,
    /// `snd_max` at the last window reduction (ECE, fast retransmit or timeout): an ECE is
    /// answered only once `snd_una` is past it, once per window of data (RFC 3168 6.1.2).
    reduced_at: u64,
}

impl Sender {
    pub(crate) fn with_controller(cfg: &TcpConfig, cc: Box<dyn CongestionControl>) -> Self {
        Sender {
            mss: cfg.smss(),
            flow_window: cfg
                .receive_window_bytes
                .min(cfg.send_buffer_bytes)
                .max(u64::from(cfg.smss())),
            max_cwnd: cfg.max_cwnd_bytes(),
            cc,
            bulk: false,
            app_pending: 0,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            segments: VecDeque::new(),
            dupacks: 0,
            in_recovery: false,
            recover: 0,
            recover_set_by_rto: false,
            rto_recovery: false,
            inflation: 0,
            partial_ack_seen: false,
            retransmit_pending: false,
            rtt: RttEstimator::new(cfg.initial_rto, cfg.min_rto, MAX_RTO),
            rto_deadline: None,
            backoff: 0,
            undo: None,
            rate: RateEstimator::default(),
            pacer: Pacer::default(),
            counters: SenderCounters::default(),
            is_cwnd_limited: false,
            max_flight: 0,
            cwnd_usage_seq: 0,
            sent_since_validate: false,
            ecn: false,
            cwr_pending: false,
            reduced_at: 0,
        }
    }

    /// Sets whether ECN was negotiated.
    pub(crate) fn set_ecn(&mut self, on: bool) {
        self.ecn = on;
    }

    /// Whether ECN was negotiated.
    pub(crate) fn ecn(&self) -> bool {
        self.ecn
    }

    /// A window reduction happened (RFC 3168 section 6.1.2): with ECN, the next new data
    /// carries CWR, and ECEs for the data sent so far are not answered again.
    fn on_window_reduced(&mut self) {
        self.reduced_at = self.snd_max;
        self.cwr_pending = self.ecn;
    }

    /// An ACK of new data carried ECE: the controller reduces its window as for a loss,
    /// without fast recovery, unless a reduction already answered this window of data or a
    /// loss recovery is under way.
    fn on_ecn_echo(&mut self, now: Instant) {
        if !self.ecn || self.in_recovery || self.rto_recovery || self.snd_una <= self.reduced_at {
            return;
        }
        let flight = self.in_flight();
        self.cc.on_ecn_echo(now, flight);
        self.counters.ecn_reductions += 1;
        self.on_window_reduced();
    }

    /// Replaces the controller (before any data was sent).
    pub(crate) fn set_controller(&mut self, cc: Box<dyn CongestionControl>) {
        self.cc = cc;
    }

    /// The controller, to tell it about the connection's establishment.
    pub(crate) fn cc_mut(&mut self) -> &mut dyn CongestionControl {
        self.cc.as_mut()
    }

    /// Takes the handshake's RTT sample, which seeds SRTT, RTTVAR and the RTO as any
    /// sample does (Linux measures the SYN-ACK's, or the SYN-ACK's acknowledgment's, RTT).
    pub(crate) fn on_handshake_rtt(&mut self, rtt: Duration) {
        self.rtt.on_sample(rtt);
    }

    /// Sets the RTO used until the first RTT sample: RFC 6298 §5.7's 3 s after a handshake
    /// that needed retransmissions and gave no sample.
    pub(crate) fn set_rto_without_sample(&mut self, rto: Duration) {
        if self.rtt.srtt().is_none() {
            self.rtt.set_initial_rto(rto);
        }
    }

    pub(crate) fn set_bulk(&mut self, on: bool) {
        self.bulk = on;
    }

    pub(crate) fn write(&mut self, bytes: u64) {
        self.app_pending = self.app_pending.saturating_add(bytes);
    }

    pub(crate) fn cc(&self) -> &dyn CongestionControl {
        self.cc.as_ref()
    }

    pub(crate) fn counters(&self) -> SenderCounters {
        self.counters
    }

    pub(crate) fn snd_una(&self) -> u64 {
        self.snd_una
    }

    pub(crate) fn snd_max(&self) -> u64 {
        self.snd_max
    }

    pub(crate) fn in_flight(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }

    pub(crate) fn in_recovery(&self) -> bool {
        self.in_recovery
    }

    pub(crate) fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    /// Current RTO including backoff.
    pub(crate) fn rto(&self) -> Duration {
        self.rtt.backed_off_rto(self.backoff)
    }

    pub(crate) fn unsent_app_bytes(&self) -> u64 {
        self.app_pending
    }

    /// The usable window (bytes): the controller's cwnd (capped), plus the fast-recovery
    /// adjustment, at least one segment.
    pub(crate) fn window(&self) -> u64 {
        let cwnd = self.cc.cwnd_bytes().min(self.max_cwnd) as i64;
        let w = if self.in_recovery {
            cwnd + self.inflation
        } else {
            cwnd
        };
        w.max(i64::from(self.mss)) as u64
    }

    fn has_new_data(&self) -> bool {
        self.bulk || self.app_pending > 0
    }

    fn next_candidate(&self) -> Option<Candidate> {
        if self.retransmit_pending && !self.segments.is_empty() {
            return Some(Candidate::ForcedRetransmit);
        }
        let in_flight = self.in_flight();
        let window = self.window();
        if self.snd_nxt < self.snd_max {
            let idx = self
                .segments
                .binary_search_by(|s| s.seq.cmp(&self.snd_nxt))
                .ok()?;
            let len = u64::from(self.segments[idx].len);
            return (in_flight + len <= window).then_some(Candidate::Resend(idx));
        }
        if !self.has_new_data() {
            return None;
        }
        let len = if self.bulk {
            self.mss
        } else {
            self.app_pending.min(u64::from(self.mss)) as u32
        };
        let len64 = u64::from(len);
        let fits_cwnd = in_flight + len64 <= window;
        let fits_flow = self.snd_max + len64 - self.snd_una <= self.flow_window;
        (fits_cwnd && fits_flow).then_some(Candidate::New(len))
    }

    /// Whether the flight fills the window: not even one more full segment fits (Linux:
    /// `packets_in_flight >= cwnd`).
    fn window_full(&self) -> bool {
        self.in_flight() + u64::from(self.mss) > self.window()
    }

    /// Records how the window was used after a burst of transmissions (Linux's
    /// `tcp_cwnd_validate`): whether the flight filled it, and the largest flight of the current
    /// window of data, which starts again once `snd_una` passes its end.
    fn cwnd_validate(&mut self) {
        let full = self.window_full();
        if !std::mem::take(&mut self.sent_since_validate) && !full {
            return;
        }
        let flight = self.in_flight();
        if self.snd_una >= self.cwnd_usage_seq
            || full
            || (!self.is_cwnd_limited && flight > self.max_flight)
        {
            self.is_cwnd_limited = full;
            self.max_flight = flight;
            self.cwnd_usage_seq = self.snd_max;
        }
    }

    /// Whether the window may grow on an ACK now (Linux's `tcp_is_cwnd_limited`): the current
    /// window of data filled cwnd, or, in slow start, cwnd is below twice its largest flight.
    pub(crate) fn cwnd_limited(&self) -> bool {
        if self.is_cwnd_limited {
            return true;
        }
        let cwnd = self.cc.cwnd_bytes().min(self.max_cwnd);
        cwnd < self.cc.ssthresh_bytes() && cwnd < 2 * self.max_flight
    }

    /// The next data segment to send at `now`, if window and pacing allow.
    pub(crate) fn poll_transmit(&mut self, now: Instant) -> Option<Segment> {
        let Some(candidate) = self.next_candidate() else {
            if !self.has_new_data() && self.snd_nxt == self.snd_max {
                let in_flight = self.in_flight();
                if in_flight < self.window() {
                    self.rate.mark_app_limited(in_flight);
                }
            }
            self.cwnd_validate();
            return None;
        };
        let pacing = self.cc.pacing_rate_bytes_per_s();
        if pacing.is_some() && !self.pacer.can_send(now) {
            self.cwnd_validate();
            return None;
        }
        self.sent_since_validate = true;
        let nothing_in_flight = self.in_flight() == 0;
        let tx = self.rate.on_send(now, nothing_in_flight);
        let mut ecn = SegmentEcn::default();
        let (seq, len, retransmission) = match candidate {
            Candidate::ForcedRetransmit => {
                self.retransmit_pending = false;
                let s = &mut self.segments[0];
                s.tx = tx;
                let end = s.end();
                let (seq, len) = (s.seq, s.len);
                self.snd_nxt = self.snd_nxt.max(end);
                (seq, len, true)
            }
            Candidate::Resend(idx) => {
                let s = &mut self.segments[idx];
                s.tx = tx;
                self.snd_nxt = s.end();
                (s.seq, s.len, true)
            }
            Candidate::New(len) => {
                let seq = self.snd_max;
                self.segments.push_back(SentSegment { seq, len, tx });
                self.snd_max += u64::from(len);
                self.snd_nxt = self.snd_max;
                if !self.bulk {
                    self.app_pending -= u64::from(len);
                }
                // RFC 3168 section 6.1.5: ECT on new data only, never on a retransmission.
                ecn.set_ect(self.ecn);
                ecn.set_cwr(std::mem::take(&mut self.cwr_pending));
                (seq, len, false)
            }
        };
        if let Some(rate) = pacing {
            self.pacer.on_send(now, u64::from(len), rate);
        }
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rto());
        }
        self.counters.data_segments_sent += 1;
        self.counters.data_bytes_sent += u64::from(len);
        if retransmission {
            self.counters.retransmitted_segments += 1;
            self.counters.retransmitted_bytes += u64::from(len);
        }
        Some(Segment {
            seq,
            len,
            ack: None,
            sent: now,
            echo: None,
            one_way_delay: None,
            retransmission,
            syn: false,
            ecn,
        })
    }

    /// Earliest deadline of the sender: the retransmission timer, or the pacing release
    /// time when a segment is waiting only for it.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        let pacing = (self.cc.pacing_rate_bytes_per_s().is_some()
            && self.next_candidate().is_some())
        .then(|| self.pacer.release());
        match (self.rto_deadline, pacing) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Processes the acknowledgment fields of an incoming segment.
    pub(crate) fn on_ack(&mut self, now: Instant, seg: &Segment) {
        let Some(ack) = seg.ack else { return };
        if ack > self.snd_max || ack < self.snd_una {
            return;
        }
        if ack == self.snd_una {
            if !seg.is_data() && self.snd_una < self.snd_max {
                self.on_duplicate_ack(now);
            }
            return;
        }
        self.on_new_ack(now, ack, seg);
    }

    fn on_duplicate_ack(&mut self, now: Instant) {
        self.dupacks += 1;
        if self.in_recovery {
            // RFC 6582 §3.2 step 4 / RFC 5681 step 4: inflate by one segment per dupACK.
            self.inflation += i64::from(self.mss);
            return;
        }
        if self.dupacks != DUPACK_THRESHOLD {
            return;
        }
        // RFC 6582 §3.2 step 1 / §4.1: after a timeout, duplicates of needlessly resent data
        // produce dupACKs, so only ACKs beyond `recover` may start a fast retransmit (Linux
        // without SACK likewise stays in its Loss state until `snd_una` passes `high_seq`).
        let allowed = self.snd_una > self.recover
            || (self.snd_una == self.recover && !self.recover_set_by_rto);
        if !allowed {
            return;
        }
        let flight_size = self.in_flight();
        self.in_recovery = true;
        self.recover = self.snd_max;
        self.recover_set_by_rto = false;
        self.partial_ack_seen = false;
        self.cc.on_congestion_event(now, flight_size);
        self.on_window_reduced();
        self.inflation = i64::from(DUPACK_THRESHOLD) * i64::from(self.mss);
        self.retransmit_pending = true;
        self.counters.fast_retransmits += 1;
    }

    fn on_new_ack(&mut self, now: Instant, ack: u64, seg: &Segment) {
        if let Some(undo) = self.undo.take() {
            if seg.echo.is_some_and(|e| e < undo.fired) {
                // Eifel: the timeout was spurious. Restore the controller, resume new data.
                self.cc = undo.cc;
                self.rto_recovery = false;
                self.recover_set_by_rto = false;
                self.snd_nxt = self.snd_max;
                self.backoff = 0;
                self.counters.spurious_timeouts += 1;
            }
        }
        let prior_in_flight = self.in_flight();
        let newly_acked = ack - self.snd_una;
        let rtt_sample = seg.echo.map(|e| now - e);
        if let Some(r) = rtt_sample {
            self.rtt.on_sample(r);
            self.backoff = 0;
        }

        // Drop acknowledged segments, feeding the rate estimator.
        while let Some(front) = self.segments.front_mut() {
            if front.end() <= ack {
                let s = self.segments.pop_front().expect("front exists");
                self.rate.on_segment_delivered(now, u64::from(s.len), &s.tx);
            } else {
                if front.seq < ack {
                    // ACK inside a segment (never produced by our receiver): trim it.
                    let cut = ack - front.seq;
                    self.rate.on_segment_delivered(now, cut, &front.tx);
                    front.len -= cut as u32;
                    front.seq = ack;
                }
                break;
            }
        }
        self.snd_una = ack;
        self.snd_nxt = self.snd_nxt.max(ack);
        self.dupacks = 0;

        let was_in_recovery = self.in_recovery;
        let mut partial = false;
        let mut exited = false;
        if self.in_recovery {
            if ack >= self.recover {
                // Full ACK (RFC 6582 §3.2 step 3): leave fast recovery; cwnd = ssthresh.
                self.in_recovery = false;
                self.inflation = 0;
                self.retransmit_pending = false;
                exited = true;
            } else {
                // Partial ACK: retransmit the next hole, deflate by the amount acknowledged
                // (adding back one segment if at least one was acknowledged).
                partial = true;
                self.inflation -= newly_acked as i64;
                if newly_acked >= u64::from(self.mss) {
                    self.inflation += i64::from(self.mss);
                }
                self.retransmit_pending = true;
            }
        }
        if self.rto_recovery && ack >= self.recover {
            self.rto_recovery = false;
            exited = true;
        }

        // Retransmission timer (RFC 6298 §5.2, §5.3; RFC 6582 §4 "impatient": reset only on the
        // first partial ACK).
        if self.snd_una == self.snd_max {
            self.rto_deadline = None;
        } else if partial {
            if !self.partial_ack_seen {
                self.partial_ack_seen = true;
                self.rto_deadline = Some(now + self.rto());
            }
        } else {
            self.rto_deadline = Some(now + self.rto());
        }

        let rate_sample = self.rate.generate(self.rtt.min_rtt());
        let event = AckEvent {
            now,
            acked_bytes: newly_acked,
            rtt: rtt_sample,
            min_rtt: self.rtt.min_rtt(),
            srtt: self.rtt.srtt(),
            one_way_delay: seg.one_way_delay,
            prior_in_flight_bytes: prior_in_flight,
            in_flight_bytes: self.in_flight(),
            snd_una: self.snd_una,
            snd_max: self.snd_max,
            in_recovery: was_in_recovery,
            cwnd_limited: self.cwnd_limited(),
            delivered_bytes: self.rate.delivered,
            rate_sample,
        };
        self.cc.on_ack(&event);
        if exited {
            self.cc.on_recovery_exit(now);
        }
        if seg.ecn.ece() {
            self.on_ecn_echo(now);
        }
        if self.cc.app_limited_hint() {
            self.rate.mark_app_limited(self.in_flight());
        }
    }

    /// Fires the retransmission timer if due (RFC 6298 §5.4–5.6).
    pub(crate) fn on_timeout(&mut self, now: Instant) {
        let Some(deadline) = self.rto_deadline else {
            return;
        };
        if deadline > now {
            return;
        }
        if self.snd_una == self.snd_max {
            self.rto_deadline = None;
            return;
        }
        self.counters.timeouts += 1;
        let flight_size = self.in_flight();
        // The loss episode has already been reacted to if this is a repeated timeout (RFC 5681
        // §3.1) or if fast recovery was under way (Linux's tcp_enter_loss keeps the recovery's
        // ssthresh then; FlightSize is inflated by the recovery's new data).
        let same_episode = self.backoff > 0 || self.in_recovery;
        // Eifel detection compares echoes with the episode's first retransmission (Linux's
        // `retrans_stamp`): this timeout's when it starts the episode; a fast retransmit's, which
        // is not kept, when fast recovery was under way (then no undo). Repeated timeouts keep
        // the first one's.
        if self.in_recovery {
            self.undo = None;
        } else if !same_episode {
            self.undo = Some(TimeoutUndo {
                cc: self.cc.clone_box(),
                fired: now,
            });
        }
        self.cc
            .on_retransmission_timeout(now, flight_size, same_episode);
        self.on_window_reduced();
        self.in_recovery = false;
        self.inflation = 0;
        self.dupacks = 0;
        self.retransmit_pending = false;
        self.recover = self.snd_max;
        self.recover_set_by_rto = true;
        self.rto_recovery = true;
        // Everything outstanding is presumed lost and resent in order.
        self.snd_nxt = self.snd_una;
        self.backoff = self.backoff.saturating_add(1);
        self.rto_deadline = Some(now + self.rto());
    }
}
