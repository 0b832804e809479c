//! FQ-CoDel (RFC 8290), the link's flow-queueing discipline ([`crate::QueueConfig::FqCodel`]), as
//! Linux's `sch_fq_codel` runs it:
//!
//! - each packet's flow key (the 5-tuple's hash in the emulator, the sender in the simulator;
//!   [`Link::send_flow`](crate::Link::send_flow)) picks one of `flows` queues (1024 by
//!   default), mixed and scaled as Linux's `reciprocal_scale`;
//! - deficit round robin (RFC 8290 section 4.2): a queue that joins the rotation gets a
//!   quantum (1514 bytes) of credit, each packet taken costs its size, and a queue out of credit
//!   gets another quantum and goes to the tail of the old queues;
//! - new queues are served before old ones (section 4.1 and 4.3); a new queue that empties goes
//!   to the tail of the old queues (Linux: when there are old queues; else it leaves the
//!   rotation) rather than leaving, so that a flow cannot keep its priority by sending one
//!   packet at a time (the RFC's anti-starvation rule), and an old queue that empties leaves;
//! - each queue runs its own CoDel (the crate's `codel` module) at dequeue, with the queue's
//!   target and interval; CoDel's "below one MTU" rule looks at the bytes of the whole
//!   discipline, as Linux's does;
//! - beyond `limit_packets` packets (10 240) or `memory_limit_bytes` bytes (32 MiB, counted in
//!   packet bytes where Linux counts buffer sizes), the arriving packet is queued and then up to
//!   64 packets are dropped from the head of the fattest queue (the most bytes), until half its
//!   bytes have gone (section 4.1 and Linux's drop batch); its CoDel's count grows by as many.
//!   These drops are the buffer's ([`DropReason::Buffer`]); CoDel's are the AQM's.
//! - with ECN ([`crate::ecn`]), each flow's CoDel marks an ECN-capable head CE instead of
//!   dropping it, and the L4S step marks an ECT(1) packet that waited longer than the step
//!   when it is taken for transmission; overflows always drop.
//!
//! Per-byte service as in the link's FIFO: a packet taken for transmission (dequeued, in
//! RFC terms) is in transit until an opportunity serves its last byte; it counts in no limit
//! and no flow's backlog, and no drop takes it.

use std::collections::VecDeque;

use crate::codel::{CoDelQueue, CoDelState};
use crate::ecn::Marking;
use crate::queue::{Admission, DropReason, Packet, Served};

pub use crate::queue::{
    FQ_CODEL_DEFAULT_FLOWS, FQ_CODEL_DEFAULT_LIMIT, FQ_CODEL_DEFAULT_MEMORY_LIMIT,
    FQ_CODEL_DEFAULT_QUANTUM,
};
/// The most flow queues a configuration may ask for (Linux's limit): 65 536.
pub const FQ_CODEL_MAX_FLOWS: u32 = 65_536;
/// Most packets one overflow drops from the fattest queue (Linux's `drop_batch`): 64.
pub const FQ_CODEL_DROP_BATCH: u32 = 64;

/// The queue of `key` among `flows` queues: the key mixed (MurmurHash3's 32-bit finalizer, so
/// that small keys spread), then scaled into `0..flows` as Linux's `reciprocal_scale`.
pub fn flow_bucket(key: u32, flows: u32) -> u32 {
    let mut h = key;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    ((u64::from(h) * u64::from(flows)) >> 32) as u32
}

/// Which rotation list a flow queue is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    /// Not in the rotation (empty and idle).
    None,
    /// New flows, served first.
    New,
    /// Old flows.
    Old,
}

/// One flow queue.
#[derive(Debug, Clone)]
struct Flow<P> {
    /// Its packets, oldest first.
    packets: VecDeque<Packet<P>>,
    /// Bytes queued.
    backlog: u64,
    /// DRR credit (bytes; may be negative).
    deficit: i64,
    list: List,
    codel: CoDelState,
}

impl<P> Default for Flow<P> {
    fn default() -> Self {
        Flow {
            packets: VecDeque::new(),
            backlog: 0,
            deficit: 0,
            list: List::None,
            codel: CoDelState::default(),
        }
    }
}

/// FQ-CoDel's parameters, in the queue's units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FqParams {
    /// CoDel's target (µs).
    pub target_us: u64,
    /// CoDel's interval (µs).
    pub interval_us: u64,
    /// DRR quantum (bytes).
    pub quantum: u32,
    /// Flow queues (at least 1).
    pub flows: u32,
    /// Most packets queued (not counting one in transit).
    pub limit_packets: u64,
    /// Most bytes queued (not counting one in transit).
    pub limit_bytes: u64,
}

/// The FQ-CoDel discipline with per-byte service.
#[derive(Debug, Clone)]
pub(crate) struct FqCodel<P> {
    params: FqParams,
    flows: Vec<Flow<P>>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    /// Packets in the flow queues.
    packets: u64,
    /// Bytes in the flow queues.
    bytes: u64,
    /// The packet being transmitted, and its bytes still to transmit.
    in_transit: Option<Packet<P>>,
    in_transit_remaining: u32,
    /// ECN marking: what is marked, and the marks made.
    pub(crate) marking: Marking,
}

/// One flow queue as its CoDel sees it: the discipline, the queue's index, and where drops are
/// reported.
struct FlowCoDel<'a, P, F> {
    fq: &'a mut FqCodel<P>,
    flow: usize,
    out: &'a mut F,
}

impl<P, F: FnMut(Served<P>)> CoDelQueue for FlowCoDel<'_, P, F> {
    fn head(&self) -> Option<(u64, u64)> {
        let p = self.fq.flows[self.flow].packets.front()?;
        Some((p.enqueued.as_micros(), self.fq.bytes - u64::from(p.bytes)))
    }

    fn drop_head(&mut self) {
        if let Some(p) = self.fq.pop(self.flow) {
            let index = self.fq.place_of(&p);
            (self.out)(Served::Dropped(p, index, DropReason::Aqm));
        }
    }

    fn mark_head(&mut self) -> bool {
        let fq = &mut *self.fq;
        match fq.flows[self.flow].packets.front_mut() {
            Some(p) => fq.marking.aqm_mark(&mut p.sent, p.bytes),
            None => false,
        }
    }
}

impl<P> FqCodel<P> {
    /// The discipline with `params`, its limits lowered to the link's buffer's (`admission`),
    /// marking as `marking` says.
    pub(crate) fn new(mut params: FqParams, admission: Admission, marking: Marking) -> Self {
        if let Some(n) = admission.packets {
            params.limit_packets = params.limit_packets.min(n);
        }
        if let Some(n) = admission.bytes {
            params.limit_bytes = params.limit_bytes.min(n);
        }
        params.flows = params.flows.clamp(1, FQ_CODEL_MAX_FLOWS);
        FqCodel {
            flows: (0..params.flows).map(|_| Flow::default()).collect(),
            params,
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            packets: 0,
            bytes: 0,
            in_transit: None,
            in_transit_remaining: 0,
            marking,
        }
    }

    /// Packets held, one in transit included.
    pub(crate) fn len(&self) -> usize {
        self.packets as usize + usize::from(self.in_transit.is_some())
    }

    /// Full sizes of the packets held, one in transit included (bytes).
    pub(crate) fn total_bytes(&self) -> u64 {
        self.bytes + self.in_transit.as_ref().map_or(0, |p| u64::from(p.bytes))
    }

    /// Bytes still to transmit (bytes).
    pub(crate) fn remaining_bytes(&self) -> u64 {
        self.bytes + u64::from(self.in_transit_remaining)
    }

    /// The place of `p`, the head of its flow queue, among the packets of its flow key that
    /// have not left: 1 if one is in transmission, else 0.
    fn place_of(&self, p: &Packet<P>) -> usize {
        usize::from(self.in_transit.as_ref().is_some_and(|t| t.flow == p.flow))
    }

    /// Removes the head packet of flow queue `flow`, its bytes uncounted.
    fn pop(&mut self, flow: usize) -> Option<Packet<P>> {
        let f = &mut self.flows[flow];
        let p = f.packets.pop_front()?;
        let b = u64::from(p.bytes);
        f.backlog -= b;
        self.packets -= 1;
        self.bytes -= b;
        Some(p)
    }

    /// Offers a packet: it joins its flow's queue (which joins the new flows if idle); over the
    /// limits, the fattest queue loses a batch from its head (reported to `out`), and the
    /// packet itself comes back if it was among them.
    pub(crate) fn offer(
        &mut self,
        packet: Packet<P>,
        out: &mut impl FnMut(Served<P>),
    ) -> Result<(), (Packet<P>, DropReason)> {
        let index = flow_bucket(packet.flow, self.params.flows) as usize;
        let bytes = u64::from(packet.bytes);
        let f = &mut self.flows[index];
        f.packets.push_back(packet);
        f.backlog += bytes;
        if f.list == List::None {
            f.list = List::New;
            f.deficit = i64::from(self.params.quantum);
            self.new_flows.push_back(index as u32);
        }
        self.packets += 1;
        self.bytes += bytes;
        if self.packets > self.params.limit_packets || self.bytes > self.params.limit_bytes {
            if let Some(own) = self.drop_from_fattest(index, out) {
                return Err((own, DropReason::Buffer));
            }
        }
        Ok(())
    }

    /// RFC 8290 section 4.1's overflow: up to [`FQ_CODEL_DROP_BATCH`] packets from the head
    /// of the queue with the most bytes, until half of them have gone. Returns the arriving
    /// packet, the tail of queue `arriving`, if it was dropped; reports the others to `out`.
    #[cold]
    fn drop_from_fattest(
        &mut self,
        arriving: usize,
        out: &mut impl FnMut(Served<P>),
    ) -> Option<Packet<P>> {
        let mut fattest = 0;
        let mut most = (0, 0);
        for (i, f) in self.flows.iter().enumerate() {
            let size = (f.backlog, f.packets.len());
            if size > most {
                most = size;
                fattest = i;
            }
        }
        let threshold = most.0 / 2;
        let (mut dropped_bytes, mut count) = (0u64, 0u32);
        let mut own = None;
        while let Some(p) = self.pop(fattest) {
            dropped_bytes += u64::from(p.bytes);
            count += 1;
            // The arriving packet is its queue's tail: the last to go from it.
            if fattest == arriving && self.flows[fattest].packets.is_empty() {
                own = Some(p);
            } else {
                let index = self.place_of(&p);
                out(Served::Dropped(p, index, DropReason::Buffer));
            }
            if count >= FQ_CODEL_DROP_BATCH || dropped_bytes >= threshold {
                break;
            }
        }
        // Tell CoDel to drop harder, as Linux does.
        self.flows[fattest].codel.count += u64::from(count);
        own
    }

    /// Spends one opportunity of `budget` bytes at `now_us`; reports every packet that departs
    /// or that CoDel drops to `out`.
    pub(crate) fn serve(&mut self, now_us: u64, mut budget: u32, out: &mut impl FnMut(Served<P>)) {
        while budget > 0 {
            if self.in_transit.is_none() && !self.start_next(now_us, out) {
                return;
            }
            if self.in_transit_remaining <= budget {
                budget -= self.in_transit_remaining;
                self.in_transit_remaining = 0;
                if let Some(p) = self.in_transit.take() {
                    out(Served::Departed(p));
                }
            } else {
                self.in_transit_remaining -= budget;
                budget = 0;
            }
        }
    }

    /// RFC 8290's dequeue (Linux's `fq_codel_dequeue`): picks the next packet to transmit and
    /// puts it in transit; false if every queue is empty.
    fn start_next(&mut self, now_us: u64, out: &mut impl FnMut(Served<P>)) -> bool {
        loop {
            let (from_new, index) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (true, i as usize),
                (None, Some(&i)) => (false, i as usize),
                (None, None) => return false,
            };
            if self.flows[index].deficit <= 0 {
                // Out of credit: another quantum, and to the tail of the old flows.
                let f = &mut self.flows[index];
                f.deficit += i64::from(self.params.quantum);
                f.list = List::Old;
                self.pop_list(from_new);
                self.old_flows.push_back(index as u32);
                continue;
            }
            let mut codel = std::mem::take(&mut self.flows[index].codel);
            let (target, interval) = (self.params.target_us, self.params.interval_us);
            codel.dequeue(
                &mut FlowCoDel {
                    fq: self,
                    flow: index,
                    out,
                },
                now_us,
                target,
                interval,
            );
            self.flows[index].codel = codel;
            match self.pop(index) {
                Some(mut p) => {
                    let sojourn = now_us.saturating_sub(p.enqueued.as_micros());
                    self.marking.step_mark(&mut p.sent, p.bytes, sojourn);
                    self.flows[index].deficit -= i64::from(p.bytes);
                    self.in_transit_remaining = p.bytes;
                    self.in_transit = Some(p);
                    return true;
                }
                None => {
                    // Empty: a new flow goes to the old ones (when there are any) so that it
                    // cannot stay new by sending a packet at a time; an old flow leaves.
                    self.pop_list(from_new);
                    if from_new && !self.old_flows.is_empty() {
                        self.flows[index].list = List::Old;
                        self.old_flows.push_back(index as u32);
                    } else {
                        self.flows[index].list = List::None;
                    }
                }
            }
        }
    }

    fn pop_list(&mut self, from_new: bool) {
        if from_new {
            self.new_flows.pop_front();
        } else {
            self.old_flows.pop_front();
        }
    }

    /// The new and the old flows' queues, in order, for tests.
    #[cfg(test)]
    fn lists(&self) -> (Vec<u32>, Vec<u32>) {
        (
            self.new_flows.iter().copied().collect(),
            self.old_flows.iter().copied().collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sprout_core::time::Instant;

    fn params() -> FqParams {
        FqParams {
            target_us: 5_000,
            interval_us: 100_000,
            quantum: 1514,
            flows: 1024,
            limit_packets: 10_240,
            limit_bytes: 32 << 20,
        }
    }

    fn packet(flow: u32, bytes: u32, at_us: u64) -> Packet<u32> {
        Packet {
            sent: crate::ecn::SentEcn::new(Instant::from_micros(at_us), crate::ecn::Ecn::NotEct),
            enqueued: Instant::from_micros(at_us),
            bytes,
            flow,
            payload: flow,
        }
    }

    #[test]
    fn a_new_flow_that_empties_joins_the_old_list() {
        let params = FqParams {
            quantum: 3000,
            ..params()
        };
        let mut q: FqCodel<u32> = FqCodel::new(params, Admission::default(), Marking::default());
        let (a, b) = (flow_bucket(1, 1024), flow_bucket(2, 1024));
        assert_ne!(a, b);
        // Flow 1, backlogged, spends its first quantum as a new flow, then goes old.
        for _ in 0..4 {
            q.offer(packet(1, 1500, 0), &mut |_| {}).unwrap();
        }
        for _ in 0..3 {
            q.serve(0, 1500, &mut |_| {});
        }
        assert_eq!(q.lists(), (vec![], vec![a]));
        // Flow 2 sends one packet: a new flow, served first.
        q.offer(packet(2, 100, 0), &mut |_| {}).unwrap();
        assert_eq!(q.lists(), (vec![b], vec![a]));
        let mut order = Vec::new();
        q.serve(0, 1500, &mut |s| {
            if let Served::Departed(p) = s {
                order.push(p.payload);
            }
        });
        assert_eq!(order, vec![2]);
        // Empty, it went to the tail of the old flows (RFC 8290 section 4.3), not away: its
        // next packet waits for flow 1's turn instead of going first as a new flow's would.
        assert_eq!(q.lists(), (vec![], vec![a, b]));
        q.offer(packet(2, 100, 0), &mut |_| {}).unwrap();
        assert_eq!(q.lists(), (vec![], vec![a, b]));
    }

    #[test]
    fn small_keys_spread_over_the_queues() {
        let buckets: std::collections::HashSet<u32> =
            (0..64).map(|k| flow_bucket(k, 1024)).collect();
        assert!(buckets.len() > 60);
        assert!((0..1000).all(|k| flow_bucket(k, 7) < 7));
        assert_eq!(flow_bucket(u32::MAX, 1), 0);
    }
}
