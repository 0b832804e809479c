//! The data receiver: in-order delivery to the application, out-of-order buffering, and
//! acknowledgment generation (RFC 5681 §4.2, RFC 1122 §4.2.3.2, RFC 7323 timestamps).
//!
//! ACK policy: every in-order segment is acknowledged at once, or — with delayed ACKs — every
//! second segment, or when the delayed-ACK timer (40 ms) expires. Out-of-order segments,
//! duplicates, and segments that fill (part of) a gap are acknowledged immediately. Each
//! triggering segment queues its own ACK, so back-to-back out-of-order arrivals produce distinct
//! duplicate ACKs.
//!
//! Timestamp echo follows RFC 7323 §4.3: `TS.Recent` is updated from a segment with
//! `SEG.SEQ <= Last.ACK.sent`, so a delayed ACK echoes the earlier of the two segments it covers
//! and a duplicate ACK echoes the segment that last advanced the window.

use std::collections::{BTreeMap, VecDeque};

use sprout_core::time::{Duration, Instant};

use crate::config::DELAYED_ACK_TIMEOUT;
use crate::segment::Segment;

/// An acknowledgment waiting to be sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PendingAck {
    pub ack: u64,
    pub echo: Option<Instant>,
    pub one_way_delay: Option<Duration>,
    /// The ECE flag: a CE mark not yet answered by the peer's CWR.
    pub ece: bool,
}

/// Receiver counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ReceiverCounters {
    pub data_segments_received: u64,
    pub duplicate_segments_received: u64,
    pub out_of_order_segments_received: u64,
    pub ce_segments_received: u64,
}

/// The receiving half of an endpoint.
#[derive(Clone, Debug)]
pub(crate) struct Receiver {
    delayed_acks: bool,
    /// Next byte expected; also the number of bytes delivered to the application in order.
    rcv_nxt: u64,
    /// Out-of-order data: start -> end (exclusive), possibly overlapping.
    out_of_order: BTreeMap<u64, u64>,
    /// In-order segments received since the last ACK (delayed ACKs).
    unacked_segments: u32,
    delayed_ack_deadline: Option<Instant>,
    ts_recent: Option<Instant>,
    last_ack_sent: u64,
    last_one_way_delay: Option<Duration>,
    pending: VecDeque<PendingAck>,
    counters: ReceiverCounters,
    /// RFC 3168 section 6.1.3: set by a CE-marked data segment, cleared by one with CWR;
    /// every ACK echoes it as ECE.
    ece: bool,
}

impl Receiver {
    pub(crate) fn new(delayed_acks: bool) -> Self {
        Receiver {
            delayed_acks,
            rcv_nxt: 0,
            out_of_order: BTreeMap::new(),
            unacked_segments: 0,
            delayed_ack_deadline: None,
            ts_recent: None,
            last_ack_sent: 0,
            last_one_way_delay: None,
            pending: VecDeque::new(),
            counters: ReceiverCounters::default(),
            ece: false,
        }
    }

    /// Bytes delivered in order to the application (bytes).
    pub(crate) fn delivered_bytes(&self) -> u64 {
        self.rcv_nxt
    }

    pub(crate) fn counters(&self) -> ReceiverCounters {
        self.counters
    }

    /// Bytes held out of order (bytes, counting overlaps once).
    pub(crate) fn out_of_order_bytes(&self) -> u64 {
        let mut total = 0;
        let mut covered_to = self.rcv_nxt;
        for (&start, &end) in &self.out_of_order {
            let s = start.max(covered_to);
            if end > s {
                total += end - s;
                covered_to = end;
            }
        }
        total
    }

    /// ECN of a data segment with CE or CWR: CWR ends the echo; a CE mark (re)starts it and,
    /// if new, is acknowledged at once (Linux's quick ACK on CE): whether it is new.
    #[cold]
    fn on_ecn(&mut self, ecn: crate::segment::SegmentEcn) -> bool {
        if ecn.cwr() {
            self.ece = false;
        }
        let new_ce = ecn.ce() && !self.ece;
        if ecn.ce() {
            self.ece = true;
            self.counters.ce_segments_received += 1;
        }
        new_ce
    }

    /// Processes a data segment arriving at `now`.
    pub(crate) fn on_data(&mut self, now: Instant, seg: &Segment) {
        if !seg.is_data() {
            return;
        }
        self.counters.data_segments_received += 1;
        let new_ce = seg.ecn.ce_or_cwr() && self.on_ecn(seg.ecn);
        self.last_one_way_delay = Some(now - seg.sent);
        if seg.seq <= self.last_ack_sent && self.ts_recent.is_none_or(|t| seg.sent >= t) {
            self.ts_recent = Some(seg.sent);
        }
        let end = seg.end();
        if end <= self.rcv_nxt {
            self.counters.duplicate_segments_received += 1;
            self.queue_ack();
            return;
        }
        if seg.seq > self.rcv_nxt {
            self.counters.out_of_order_segments_received += 1;
            let e = self.out_of_order.entry(seg.seq).or_insert(end);
            *e = (*e).max(end);
            self.queue_ack();
            return;
        }
        // In order (possibly overlapping already received bytes).
        self.rcv_nxt = end;
        let filled_gap = !self.out_of_order.is_empty();
        while let Some((&start, &stop)) = self.out_of_order.first_key_value() {
            if start > self.rcv_nxt {
                break;
            }
            self.rcv_nxt = self.rcv_nxt.max(stop);
            self.out_of_order.remove(&start);
        }
        if !self.delayed_acks || filled_gap || new_ce {
            self.queue_ack();
            return;
        }
        self.unacked_segments += 1;
        if self.unacked_segments >= 2 {
            self.queue_ack();
        } else if self.delayed_ack_deadline.is_none() {
            self.delayed_ack_deadline = Some(now + DELAYED_ACK_TIMEOUT);
        }
    }

    fn queue_ack(&mut self) {
        self.pending.push_back(PendingAck {
            ack: self.rcv_nxt,
            echo: self.ts_recent,
            one_way_delay: self.last_one_way_delay,
            ece: self.ece,
        });
        self.last_ack_sent = self.rcv_nxt;
        self.unacked_segments = 0;
        self.delayed_ack_deadline = None;
    }

    /// Fires the delayed-ACK timer if due.
    pub(crate) fn on_timeout(&mut self, now: Instant) {
        if self.delayed_ack_deadline.is_some_and(|d| d <= now) {
            self.queue_ack();
        }
    }

    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.delayed_ack_deadline
    }

    pub(crate) fn pop_ack(&mut self) -> Option<PendingAck> {
        self.pending.pop_front()
    }
}
