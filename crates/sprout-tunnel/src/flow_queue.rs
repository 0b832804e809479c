//! The per-flow queue of SproutTunnel (paper §4.3): one FIFO per flow, the Sprout window
//! filled round-robin by bytes among the flows with data (deficit round robin, a quantum of
//! [`FlowQueueConfig::quantum_bytes`] per turn), the total queued bytes capped at what the
//! link drains in [`FlowQueueConfig::cap_time`] (160 ms) at the receiver's latest forecast
//! rate, and packets dropped from the head of the longest queue while over the cap.
//!
//! Sans-IO: time is passed in (microseconds), nothing here reads a clock.

use std::collections::{HashMap, VecDeque};

use serde::Serialize;
use sprout_core::time::{Duration, Instant};

use crate::packet::FlowKey;

/// Default time the queue's cap holds at the forecast rate: 160 ms, the paper's forecast
/// horizon (see [`FlowQueueConfig::cap_time`]).
pub const DEFAULT_CAP_TIME: Duration = Duration::from_millis(160);

/// Fastest rate the cap's ceiling is sized for, in bytes/s: 1 Gbit/s, the top of the wide rate
/// model (`sprout_core::WideParams`), so that the cap is a time at every rate a session can
/// forecast.
pub const MAX_CAP_RATE_BYTES_PER_S: u64 = 125_000_000;

/// Parameters of a [`FlowQueue`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowQueueConfig {
    /// Bytes a flow may send per round-robin turn (default 1500).
    pub quantum_bytes: usize,
    /// Most flows tracked at once, with data or recently active (default 1024). A packet of a
    /// new flow beyond it is dropped (`too_many_flows`) unless an idle flow can be forgotten.
    pub max_flows: usize,
    /// How long the queue may hold at the session's forecast rate: the cap is this time times
    /// the rate ([`FlowQueueConfig::cap_for_rate`]; default [`DEFAULT_CAP_TIME`], 160 ms).
    ///
    /// A cap in bytes is right at one rate only: made for 12 Mbit/s (the paper's top rate,
    /// about 240 packets) it holds 29 ms at 100 Mbit/s, less than a TCP download's window
    /// there (100 Mbit/s x its 40 ms path = 500 KB before any queue), so each of the
    /// sender's bursts overflows it and the window drops. A time scales with the rate: the
    /// queue toward a fast link holds as many bytes as that link drains in the same time. The
    /// time is the forecast's own horizon: the peer's forecast says what the link delivers
    /// over the next 160 ms, so what waits beyond that would not even leave within the
    /// forecast's life, and only delays the flow. It is also enough for TCP: after a loss
    /// Cubic keeps 70% of its window, and refills the link if the queue holds
    /// 0.3 / 0.7 = 43% of the window's worth of path, 60 ms of a 140 ms round trip (40 ms of
    /// path and Sprout's 100 ms of delay), within 160 ms even when the 95% forecast is 80%
    /// of the true rate (128 ms).
    pub cap_time: Duration,
    /// The cap never goes below this many bytes (default 64 KiB). On a variable link the
    /// cautious forecast falls to a few packets in every dip (an outage forecasts 0), and a
    /// cap that small drops what a 500 kbit/s call sends in a tenth of a second although the
    /// link recovers within a second; the floor keeps about a second of such a flow (and lets
    /// TCP keep its window), while the forecast governs the cap whenever it is larger.
    pub min_cap_bytes: usize,
    /// The cap never goes above this many bytes, whatever the forecast says (default:
    /// [`DEFAULT_CAP_TIME`] at [`MAX_CAP_RATE_BYTES_PER_S`], 20 MB, so the ceiling binds
    /// only above 1 Gbit/s; the most memory one session's queue holds).
    pub max_cap_bytes: usize,
    /// A flow with no queued packet and no packet for this long is forgotten (default 10 s);
    /// its counters go with it.
    pub idle_flow: Duration,
}

impl Default for FlowQueueConfig {
    fn default() -> Self {
        FlowQueueConfig {
            quantum_bytes: 1500,
            max_flows: 1024,
            cap_time: DEFAULT_CAP_TIME,
            min_cap_bytes: 64 << 10,
            max_cap_bytes: bytes_over(MAX_CAP_RATE_BYTES_PER_S, 1_000_000, DEFAULT_CAP_TIME),
            idle_flow: Duration::from_secs(10),
        }
    }
}

/// Bytes `bytes` per `per_us` microseconds amounts to over `time` (rounded down, saturating).
fn bytes_over(bytes: u64, per_us: u64, time: Duration) -> usize {
    if per_us == 0 {
        return usize::MAX;
    }
    let b = u128::from(bytes) * u128::from(time.as_micros()) / u128::from(per_us);
    usize::try_from(b).unwrap_or(usize::MAX)
}

impl FlowQueueConfig {
    /// The cap for a forecast of `bytes` delivered over the next `horizon`: [`cap_time`] at
    /// that rate (`bytes x cap_time / horizon`, rounded down), within `[min_cap_bytes,
    /// max_cap_bytes]`. A zero horizon gives the ceiling.
    ///
    /// [`cap_time`]: FlowQueueConfig::cap_time
    pub fn cap_for_forecast(&self, bytes: u64, horizon: Duration) -> usize {
        let min = self.min_cap_bytes.min(self.max_cap_bytes);
        bytes_over(bytes, horizon.as_micros(), self.cap_time).clamp(min, self.max_cap_bytes)
    }

    /// The cap at a rate of `bytes_per_s` bytes/s: [`FlowQueueConfig::cap_time`] of it within
    /// `[min_cap_bytes, max_cap_bytes]`.
    pub fn cap_for_rate(&self, bytes_per_s: u64) -> usize {
        self.cap_for_forecast(bytes_per_s, Duration::from_secs(1))
    }
}

/// Packets dropped, by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct QueueDrops {
    /// Dropped from the head of the longest queue because the total was over the cap.
    pub over_cap: u64,
    /// A new flow's packet when [`FlowQueueConfig::max_flows`] flows were active.
    pub too_many_flows: u64,
}

/// Counters and gauges of a [`FlowQueue`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct QueueStats {
    /// Bytes queued now.
    pub queued_bytes: usize,
    /// Packets queued now.
    pub queued_packets: usize,
    /// Flows with at least one packet queued.
    pub active_flows: usize,
    /// Flows tracked (active or recently active).
    pub tracked_flows: usize,
    /// The cap now (bytes).
    pub cap_bytes: usize,
    /// Packets accepted by [`FlowQueue::push`] since the start.
    pub pushed_packets: u64,
    /// Packets handed out by [`FlowQueue::pop`] since the start.
    pub popped_packets: u64,
    /// Bytes handed out by [`FlowQueue::pop`] since the start.
    pub popped_bytes: u64,
    /// Drops by reason.
    pub drops: QueueDrops,
}

/// One flow's state as shown in status output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FlowSnapshot {
    /// The flow.
    pub flow: FlowKey,
    /// Bytes queued now.
    pub queued_bytes: usize,
    /// Packets queued now.
    pub queued_packets: usize,
    /// Bytes this flow has had popped (sent) since it was first seen.
    pub sent_bytes: u64,
    /// Packets of this flow dropped over the cap since it was first seen.
    pub dropped_packets: u64,
}

/// A flow's queue keeps its buffer while it is tracked (no allocation per packet); a buffer
/// grown beyond this many packets is given back when the flow empties.
const KEEP_QUEUE_CAPACITY: usize = 256;

/// One tracked flow (a slot of [`FlowQueue::slots`]).
#[derive(Debug)]
struct Flow {
    key: FlowKey,
    /// Whether the slot holds a tracked flow (else it is on the free list).
    live: bool,
    packets: VecDeque<Vec<u8>>,
    /// Bytes in `packets`.
    bytes: usize,
    /// Deficit-round-robin credit, in bytes; 0 whenever the flow is not in the round.
    deficit: usize,
    /// Whether the flow has packets and so a place in the round.
    in_round: bool,
    /// Order in which flows became active (joined the round): ties of the longest queue go
    /// to the smallest.
    active_seq: u64,
    /// When the flow last became idle (its queue emptied), in microseconds.
    idle_since: Instant,
    /// Times the flow (or an earlier flow in this slot) became idle: entries of the idle list
    /// carry it, so that stale ones are recognised.
    idle_gen: u64,
    sent_bytes: u64,
    dropped_packets: u64,
}

/// One queue per flow, round-robin by bytes, capped with head drop from the longest queue.
///
/// Costs: `push` and `pop` are O(1) amortised while the total is under the cap and packets
/// are at most a quantum long. A drop over the cap finds the longest queue by a scan of the
/// active flows, O(active flows), as Linux's `fq_codel` does to find its fat flow: active
/// flows are few (at most [`FlowQueueConfig::max_flows`], a bound on the scan). A packet
/// longer than the quantum makes `pop` skip whole rounds, which it does in one
/// O(active flows) step rather than round by round. Flows are found through a hash map and
/// kept in a slab of slots reused after a flow is forgotten; idle flows are forgotten in the
/// order they became idle, from a list that is compacted when stale entries pile up.
pub struct FlowQueue {
    /// The configuration, made consistent (quantum and max_flows at least 1, the minimum cap
    /// at most the maximum).
    config: FlowQueueConfig,
    cap: usize,
    /// Flow slots; `index` maps a tracked flow to its slot, `free` lists unused slots.
    slots: Vec<Flow>,
    free: Vec<usize>,
    index: HashMap<FlowKey, usize>,
    /// The flows with packets, in round-robin order: the front one's turn is now.
    round: VecDeque<usize>,
    /// Whether the front flow of the round has had its quantum for the current turn.
    head_credited: bool,
    /// (slot, idle_gen) of flows as they became idle, oldest first (stale entries included).
    idle: VecDeque<(usize, u64)>,
    bytes: usize,
    packets: usize,
    /// The latest time seen; never goes back.
    now: Instant,
    next_active_seq: u64,
    pushed_packets: u64,
    popped_packets: u64,
    popped_bytes: u64,
    drops: QueueDrops,
}

/// The configuration and counters, not the packets (megabytes of them).
impl std::fmt::Debug for FlowQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowQueue")
            .field("config", &self.config)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl FlowQueue {
    /// An empty queue whose cap starts at `config.max_cap_bytes`.
    pub fn new(config: FlowQueueConfig) -> FlowQueue {
        let config = FlowQueueConfig {
            quantum_bytes: config.quantum_bytes.max(1),
            max_flows: config.max_flows.max(1),
            min_cap_bytes: config.min_cap_bytes.min(config.max_cap_bytes),
            ..config
        };
        FlowQueue {
            cap: config.max_cap_bytes,
            config,
            slots: Vec::new(),
            free: Vec::new(),
            index: HashMap::new(),
            round: VecDeque::new(),
            head_credited: false,
            idle: VecDeque::new(),
            bytes: 0,
            packets: 0,
            now: Instant::ZERO,
            next_active_seq: 0,
            pushed_packets: 0,
            popped_packets: 0,
            popped_bytes: 0,
            drops: QueueDrops::default(),
        }
    }

    /// The configuration in force (as given, with a quantum and `max_flows` of at least 1 and
    /// `min_cap_bytes` at most `max_cap_bytes`).
    pub fn config(&self) -> &FlowQueueConfig {
        &self.config
    }

    /// Sets the cap to [`FlowQueueConfig::cap_for_forecast`] of a forecast of `bytes` over
    /// `horizon`, as [`FlowQueue::set_cap`] does; returns the packets dropped.
    pub fn set_forecast(&mut self, bytes: u64, horizon: Duration) -> usize {
        let cap = self.config.cap_for_forecast(bytes, horizon);
        self.set_cap(cap)
    }

    /// Sets the cap (clamped to `[min_cap_bytes, max_cap_bytes]`) and drops from the head of
    /// the longest queue (most bytes; ties: the flow that became active earliest) until the
    /// total is at most the cap. Returns the packets dropped.
    pub fn set_cap(&mut self, cap_bytes: usize) -> usize {
        self.cap = cap_bytes.clamp(self.config.min_cap_bytes, self.config.max_cap_bytes);
        self.enforce_cap()
    }

    /// The cap now, in bytes.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Appends `packet` to the tail of its flow's queue at `now`, then enforces the cap as
    /// [`FlowQueue::set_cap`] does (the head of the longest queue goes, which may be an older
    /// packet of this very flow, never the one just added unless it is alone in the longest
    /// queue). Returns the packets dropped (including this one if refused).
    ///
    /// An empty packet is refused (returns 1, counted nowhere): it carries nothing and would
    /// escape the byte cap.
    pub fn push(&mut self, now: Instant, flow: FlowKey, packet: Vec<u8>) -> usize {
        let now = self.advance(now);
        if packet.is_empty() {
            return 1;
        }
        let slot = match self.index.get(&flow) {
            Some(&slot) => slot,
            None => match self.track(now, flow) {
                Some(slot) => slot,
                None => {
                    self.drops.too_many_flows = self.drops.too_many_flows.saturating_add(1);
                    return 1;
                }
            },
        };
        let len = packet.len();
        let f = &mut self.slots[slot];
        f.packets.push_back(packet);
        f.bytes += len;
        if !f.in_round {
            // A newly active flow joins the tail of the round with no credit.
            f.in_round = true;
            f.deficit = 0;
            f.active_seq = self.next_active_seq;
            self.next_active_seq += 1;
            self.round.push_back(slot);
        }
        self.bytes += len;
        self.packets += 1;
        self.pushed_packets = self.pushed_packets.saturating_add(1);
        self.enforce_cap()
    }

    /// The next packet in deficit-round-robin order: the flow whose turn it is sends packets
    /// while its deficit (grown by one quantum per turn) covers them; a flow that empties
    /// leaves the round and loses its deficit. `None` when empty.
    pub fn pop(&mut self, now: Instant) -> Option<Vec<u8>> {
        self.advance(now);
        let quantum = self.config.quantum_bytes;
        // Turns ended without sending in this call; after a whole round of them, every flow's
        // head is longer than its deficit (packets longer than the quantum).
        let mut skipped = 0usize;
        loop {
            let slot = *self.round.front()?;
            let f = &mut self.slots[slot];
            if !self.head_credited {
                f.deficit = f.deficit.saturating_add(quantum);
                self.head_credited = true;
            }
            let head = f.packets.front().map_or(0, Vec::len);
            if head <= f.deficit {
                let Some(packet) = f.packets.pop_front() else {
                    // Not reached: a flow in the round has packets. Repair and go on.
                    self.round.pop_front();
                    self.head_credited = false;
                    self.went_idle(slot);
                    continue;
                };
                f.deficit -= head;
                f.bytes -= head;
                f.sent_bytes = f.sent_bytes.saturating_add(head as u64);
                self.bytes -= head;
                self.packets -= 1;
                self.popped_packets = self.popped_packets.saturating_add(1);
                self.popped_bytes = self.popped_bytes.saturating_add(head as u64);
                if f.packets.is_empty() {
                    self.round.pop_front();
                    self.head_credited = false;
                    self.went_idle(slot);
                }
                return Some(packet);
            }
            // The turn ends: to the tail, keeping the deficit.
            self.round.rotate_left(1);
            self.head_credited = false;
            skipped += 1;
            if skipped >= self.round.len() {
                self.skip_idle_rounds();
                skipped = 0;
            }
        }
    }

    /// Length in bytes of the packet [`FlowQueue::pop`] would return next, without taking it.
    pub fn peek_len(&self) -> Option<usize> {
        let quantum = self.config.quantum_bytes;
        // The first flow to send is the one with the fewest turns to go, then the earliest in
        // the round: the front flow on its current turn in the common case.
        let mut best: Option<(usize, usize)> = None; // (turns, head length)
        for (pos, &slot) in self.round.iter().enumerate() {
            let f = &self.slots[slot];
            let head = f.packets.front().map_or(0, Vec::len);
            let credit = if pos == 0 && self.head_credited {
                f.deficit
            } else {
                f.deficit.saturating_add(quantum)
            };
            if head <= credit {
                // One turn: nobody earlier in the round has fewer.
                return Some(head);
            }
            let turns = 1 + (head - credit).div_ceil(quantum);
            if best.is_none_or(|(t, _)| turns < t) {
                best = Some((turns, head));
            }
        }
        best.map(|(_, head)| head)
    }

    /// Bytes queued.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Packets queued.
    pub fn packets(&self) -> usize {
        self.packets
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.packets() == 0
    }

    /// Forgets flows idle for [`FlowQueueConfig::idle_flow`] at `now`.
    pub fn expire(&mut self, now: Instant) {
        let now = self.advance(now);
        while let Some(&(slot, gen)) = self.idle.front() {
            if !self.idle_entry_valid(slot, gen) {
                self.idle.pop_front();
                continue;
            }
            if now - self.slots[slot].idle_since < self.config.idle_flow {
                break; // the list is in order of becoming idle: the rest are younger
            }
            self.idle.pop_front();
            self.forget(slot);
        }
    }

    /// Counters and gauges.
    pub fn stats(&self) -> QueueStats {
        QueueStats {
            queued_bytes: self.bytes,
            queued_packets: self.packets,
            active_flows: self.round.len(),
            tracked_flows: self.index.len(),
            cap_bytes: self.cap,
            pushed_packets: self.pushed_packets,
            popped_packets: self.popped_packets,
            popped_bytes: self.popped_bytes,
            drops: self.drops,
        }
    }

    /// The tracked flows, most queued bytes first, then most sent bytes (then by flow, so
    /// that the order is deterministic).
    pub fn flows(&self) -> Vec<FlowSnapshot> {
        let mut out: Vec<FlowSnapshot> = self
            .slots
            .iter()
            .filter(|f| f.live)
            .map(|f| FlowSnapshot {
                flow: f.key,
                queued_bytes: f.bytes,
                queued_packets: f.packets.len(),
                sent_bytes: f.sent_bytes,
                dropped_packets: f.dropped_packets,
            })
            .collect();
        out.sort_by(|a, b| {
            b.queued_bytes
                .cmp(&a.queued_bytes)
                .then(b.sent_bytes.cmp(&a.sent_bytes))
                .then(a.flow.cmp(&b.flow))
        });
        out
    }

    /// Moves the clock to `now` unless it is behind the latest time seen; the time now.
    fn advance(&mut self, now: Instant) -> Instant {
        self.now = self.now.max(now);
        self.now
    }

    /// A slot for a new flow: flows idle for `idle_flow` are forgotten first, and when
    /// `max_flows` are still tracked, the one idle longest (any idle flow may go: it has no
    /// packets, only counters). `None` when every tracked flow has packets.
    fn track(&mut self, now: Instant, key: FlowKey) -> Option<usize> {
        self.expire(now);
        while self.index.len() >= self.config.max_flows {
            let (slot, gen) = self.idle.pop_front()?;
            if self.idle_entry_valid(slot, gen) {
                self.forget(slot);
            }
        }
        let flow = Flow {
            key,
            live: true,
            packets: VecDeque::new(),
            bytes: 0,
            deficit: 0,
            in_round: false,
            active_seq: 0,
            idle_since: now,
            idle_gen: 0,
            sent_bytes: 0,
            dropped_packets: 0,
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                let old = &mut self.slots[slot];
                // The generation goes on, so that the slot's old idle entries stay stale; the
                // buffer is reused.
                let f = Flow {
                    idle_gen: old.idle_gen,
                    packets: std::mem::take(&mut old.packets),
                    ..flow
                };
                *old = f;
                slot
            }
            None => {
                self.slots.push(flow);
                self.slots.len() - 1
            }
        };
        self.index.insert(key, slot);
        Some(slot)
    }

    /// Whether an idle-list entry still names an idle, tracked flow.
    fn idle_entry_valid(&self, slot: usize, gen: u64) -> bool {
        self.slots
            .get(slot)
            .is_some_and(|f| f.live && !f.in_round && f.idle_gen == gen)
    }

    /// Bookkeeping for a flow that just left the round (its queue emptied).
    fn went_idle(&mut self, slot: usize) {
        let now = self.now;
        let f = &mut self.slots[slot];
        f.in_round = false;
        f.deficit = 0;
        f.idle_since = now;
        f.idle_gen = f.idle_gen.wrapping_add(1);
        if f.packets.capacity() > KEEP_QUEUE_CAPACITY {
            f.packets = VecDeque::new();
        }
        self.idle.push_back((slot, f.idle_gen));
        // Stale entries (flows active again) are dropped when the list is twice what can be
        // valid: amortised O(1), and the list stays bounded.
        if self.idle.len() > 2 * self.config.max_flows + 16 {
            let slots = &self.slots;
            self.idle.retain(|&(s, g)| {
                slots
                    .get(s)
                    .is_some_and(|f| f.live && !f.in_round && f.idle_gen == g)
            });
        }
    }

    /// Forgets an idle flow: its slot is freed and its counters go.
    fn forget(&mut self, slot: usize) {
        let f = &mut self.slots[slot];
        debug_assert!(f.live && !f.in_round && f.packets.is_empty());
        f.live = false;
        self.index.remove(&f.key);
        self.free.push(slot);
    }

    /// Drops from the head of the longest queue until the total is within the cap; the
    /// packets dropped.
    fn enforce_cap(&mut self) -> usize {
        let mut dropped = 0;
        while self.bytes > self.cap {
            // O(active flows): the longest queue, ties to the earliest active.
            let Some((pos, slot)) = self
                .round
                .iter()
                .enumerate()
                .max_by(|(_, &a), (_, &b)| {
                    let (a, b) = (&self.slots[a], &self.slots[b]);
                    a.bytes.cmp(&b.bytes).then(b.active_seq.cmp(&a.active_seq))
                })
                .map(|(pos, &slot)| (pos, slot))
            else {
                break; // not reached: queued bytes are in flows of the round
            };
            let f = &mut self.slots[slot];
            let Some(packet) = f.packets.pop_front() else {
                break; // not reached
            };
            f.bytes -= packet.len();
            f.dropped_packets = f.dropped_packets.saturating_add(1);
            self.bytes -= packet.len();
            self.packets -= 1;
            self.drops.over_cap = self.drops.over_cap.saturating_add(1);
            dropped += 1;
            if f.packets.is_empty() {
                self.round.remove(pos);
                if pos == 0 {
                    self.head_credited = false;
                }
                self.went_idle(slot);
            }
        }
        dropped
    }

    /// Called after a whole round in which no flow could send (every head longer than its
    /// deficit, the front flow not yet credited for its turn): grants at once the rounds in
    /// which still nobody could, so that the next round sends. The same order as going round
    /// by round, in one O(active flows) step.
    fn skip_idle_rounds(&mut self) {
        let quantum = self.config.quantum_bytes;
        let rounds = self
            .round
            .iter()
            .map(|&slot| {
                let f = &self.slots[slot];
                let head = f.packets.front().map_or(0, Vec::len);
                head.saturating_sub(f.deficit).div_ceil(quantum)
            })
            .min()
            .unwrap_or(0);
        // In round `rounds` the first flow can send; before it, nobody.
        let extra = rounds.saturating_sub(1).saturating_mul(quantum);
        if extra > 0 {
            for &slot in &self.round {
                let f = &mut self.slots[slot];
                f.deficit = f.deficit.saturating_add(extra);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use super::*;

    /// Flow `n` (A = 0, B = 1, ...): UDP from port 1000 + n.
    fn key(n: u8) -> FlowKey {
        FlowKey {
            proto: 17,
            src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            src_port: 1000 + u16::from(n),
            dst_port: 53,
        }
    }

    /// Packet `index` of flow `flow` (0 = A), `len` bytes, tagged in its first two bytes.
    fn pkt(flow: u8, index: u8, len: usize) -> Vec<u8> {
        let mut p = vec![0xee; len];
        p[0] = flow;
        p[1] = index;
        p
    }

    /// "A0", "B2", ...: the tag of a packet.
    fn tag(p: &[u8]) -> String {
        format!("{}{}", char::from(b'A' + p[0]), p[1])
    }

    /// Pops everything at `now`, checking `peek_len` before each pop; the tags in order.
    fn drain(q: &mut FlowQueue, now: Instant) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(len) = q.peek_len() {
            let p = q.pop(now).expect("peek_len said a packet is there");
            assert_eq!(p.len(), len, "peek_len is the length pop returns");
            out.push(tag(&p));
        }
        assert!(q.pop(now).is_none());
        assert!(q.is_empty());
        assert_eq!(q.bytes(), 0);
        out
    }

    fn flow_of(q: &FlowQueue, n: u8) -> Option<FlowSnapshot> {
        q.flows().into_iter().find(|f| f.flow == key(n))
    }

    /// The defaults with `quantum_bytes`, and a floor of 3000 bytes (two full packets) so that
    /// the hand-worked caps below are not clamped.
    fn config(quantum_bytes: usize) -> FlowQueueConfig {
        FlowQueueConfig {
            quantum_bytes,
            min_cap_bytes: 3000,
            ..FlowQueueConfig::default()
        }
    }

    /// Issue 36: a paced interactive flow (B, a 1028-byte packet every 16 ms, 500 kbit/s)
    /// beside a bulk flow that always has 50 full packets waiting (A) and the bulk flow's
    /// acknowledgements (C, 52 bytes every 4 ms), drained by a link of 500 bytes per ms
    /// (4 Mbit/s) for 2 s. Each of B's packets leaves within 10 ms of its arrival: at most a
    /// quantum of A and one of C go ahead of it (3052 + 1028 bytes, 8.2 ms at the link's rate,
    /// plus the 1 ms step); a FIFO would hold it behind A's 75 KB (150 ms). C's packets are
    /// never held for more than 10 ms either.
    #[test]
    fn a_light_flow_beside_a_bulk_flow_leaves_within_a_round() {
        let mut q = FlowQueue::new(config(1500));
        let mut waits: HashMap<u8, Vec<u64>> = HashMap::new();
        let mut arrivals: HashMap<(u8, u8), u64> = HashMap::new();
        let (mut seq_a, mut seq_b, mut seq_c) = (0u8, 0u8, 0u8);
        let mut budget = 0usize;
        for ms in 0..2000u64 {
            let now = Instant::from_micros(ms * 1000);
            while q
                .flows()
                .iter()
                .find(|f| f.flow == key(0))
                .map_or(0, |f| f.queued_packets)
                < 50
            {
                q.push(now, key(0), pkt(0, seq_a, 1500));
                seq_a = seq_a.wrapping_add(1);
            }
            if ms % 16 == 0 {
                q.push(now, key(1), pkt(1, seq_b, 1028));
                arrivals.insert((1, seq_b), ms);
                seq_b = seq_b.wrapping_add(1);
            }
            if ms % 4 == 0 {
                q.push(now, key(2), pkt(2, seq_c, 52));
                arrivals.insert((2, seq_c), ms);
                seq_c = seq_c.wrapping_add(1);
            }
            budget += 500;
            while let Some(len) = q.peek_len().filter(|&l| l <= budget) {
                budget -= len;
                let p = q.pop(now).expect("peek_len said a packet is there");
                if let Some(at) = arrivals.remove(&(p[0], p[1])) {
                    waits.entry(p[0]).or_default().push(ms - at);
                }
            }
        }
        for flow in [1u8, 2] {
            let w = &waits[&flow];
            let max = w.iter().max().copied().unwrap_or(u64::MAX);
            assert!(
                w.len() > 100 && max <= 10,
                "flow {flow}: {} sent, longest wait {max} ms",
                w.len()
            );
        }
        assert!(
            q.stats().popped_bytes > 900_000,
            "the bulk flow kept the link busy"
        );
    }

    /// The bulk flow's acknowledgements (A: 600 of 52 bytes) do not starve an interactive flow
    /// (B: 10 packets of 1000 bytes) queued after them: A gets a quantum (1500 bytes, 28 or 29
    /// acknowledgements with the carried deficit) per turn, then B sends one packet, or two
    /// when its carried deficit covers them (500 + 1500), so B's packets are out within the
    /// first 10 x 30 pops and never more than 29 acknowledgements apart.
    #[test]
    fn acknowledgements_do_not_starve_an_interactive_flow() {
        let mut q = FlowQueue::new(config(1500));
        for i in 0..600u32 {
            q.push(Instant::from_micros(0), key(0), pkt(0, i as u8, 52));
        }
        for i in 0..10 {
            q.push(Instant::from_micros(0), key(1), pkt(1, i, 1000));
        }
        let order = drain(&mut q, Instant::from_micros(1));
        let b_at: Vec<usize> = order
            .iter()
            .enumerate()
            .filter(|(_, t)| t.starts_with('B'))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(b_at.len(), 10);
        assert!(*b_at.last().unwrap() < 10 * 30, "{b_at:?}");
        let mut prev = None;
        for &i in &b_at {
            let acks_between = i - prev.map_or(0, |p: usize| p + 1);
            assert!(
                acks_between == 0 || (28..=29).contains(&acks_between),
                "{b_at:?}"
            );
            prev = Some(i);
        }
    }

    /// (a) Quantum 1500; pushed in this order: A0 A1 A2 (1000 B each), B0 (1500 B), C0 C1
    /// (500 B each). The round is [A, B, C] (the order the flows became active).
    ///
    /// - pop 1: A's turn, deficit 0 + 1500; A0 (1000) fits: sent, deficit 500.
    /// - pop 2: A's turn goes on; A1 (1000) > 500: A goes to the tail keeping 500, round
    ///   [B, C, A]. B's turn: 1500; B0 (1500) fits: sent, deficit 0, B empty: leaves.
    /// - pop 3: C's turn: 1500; C0 (500) sent, deficit 1000.
    /// - pop 4: C1 (500) <= 1000: sent, C empty: leaves (deficit 500 lost).
    /// - pop 5: A's turn: 500 + 1500 = 2000; A1 sent, 1000 left.
    /// - pop 6: A2 (1000) <= 1000: sent.
    ///
    /// Order: A0 B0 C0 C1 A1 A2.
    #[test]
    fn round_robin_by_bytes_hand_worked() {
        let mut q = FlowQueue::new(config(1500));
        for i in 0..3 {
            assert_eq!(q.push(Instant::from_micros(0), key(0), pkt(0, i, 1000)), 0);
        }
        assert_eq!(q.push(Instant::from_micros(0), key(1), pkt(1, 0, 1500)), 0);
        for i in 0..2 {
            assert_eq!(q.push(Instant::from_micros(0), key(2), pkt(2, i, 500)), 0);
        }
        assert_eq!(q.bytes(), 5500);
        assert_eq!(q.packets(), 6);
        assert_eq!(q.stats().active_flows, 3);
        assert_eq!(
            drain(&mut q, Instant::from_micros(1)),
            ["A0", "B0", "C0", "C1", "A1", "A2"]
        );
        let s = q.stats();
        assert_eq!(
            (s.pushed_packets, s.popped_packets, s.popped_bytes),
            (6, 6, 5500)
        );
        assert_eq!(s.active_flows, 0);
        assert_eq!(s.tracked_flows, 3);
        assert_eq!(flow_of(&q, 0).unwrap().sent_bytes, 3000);
        assert_eq!(flow_of(&q, 1).unwrap().sent_bytes, 1500);
        assert_eq!(flow_of(&q, 2).unwrap().sent_bytes, 1000);
        // flows(): all empty now, so most sent bytes first.
        let order: Vec<u16> = q.flows().iter().map(|f| f.flow.src_port).collect();
        assert_eq!(order, [1000, 1001, 1002]);
    }

    /// A flow arriving mid-round joins the tail: quantum 1500, A0..A3 (1000 B), pop A0 (A's
    /// deficit 500), then B0 (1000 B) arrives: round [A, B]. A1 > 500: A to the tail,
    /// [B, A]; B0 sent; A: 500 + 1500 = 2000: A1, A2; A's next turn: 0 + 1500: A3.
    #[test]
    fn a_new_flow_joins_the_tail_of_the_round() {
        let mut q = FlowQueue::new(config(1500));
        for i in 0..4 {
            q.push(Instant::from_micros(0), key(0), pkt(0, i, 1000));
        }
        assert_eq!(tag(&q.pop(Instant::from_micros(1)).unwrap()), "A0");
        q.push(Instant::from_micros(2), key(1), pkt(1, 0, 1000));
        assert_eq!(
            drain(&mut q, Instant::from_micros(3)),
            ["B0", "A1", "A2", "A3"]
        );
    }

    /// (b) Head drop, cap 5000 (A = flow 0, ...; sizes in bytes; the total after each step):
    ///
    /// 1. A0 1500 -> 1500.  2. A1 1500 -> 3000.  3. A2 1500 -> 4500.
    /// 4. B0 1000 -> 5500 > 5000: longest A (4500): A0 dropped -> 4000.
    /// 5. B1 1000 -> 5000: at the cap, nothing dropped.
    /// 6. C0 1200 -> 6200: A 3000, B 2000, C 1200: A1 dropped -> 4700.
    /// 7. B2 1000 -> 5700: A 1500, B 3000, C 1200: B0 dropped (an older packet of the flow
    ///    that pushed) -> 4700.
    /// 8. B3 1000 -> 5700: B 3000 again: B1 dropped -> 4700.
    /// 9. A3 1500 -> 6200: A 3000, B 2000, C 1200: A2 dropped -> 4700.
    /// 10. C1 800 -> 5500: A 1500, B 2000, C 2000: a tie, B became active first (step 4,
    ///     C at step 6): B2 dropped -> 4500.
    /// 11. D0 4000 -> 8500: D (4000) is the longest and holds only D0: D0 itself is refused
    ///     -> 4500.
    ///
    /// Dropped: A0 A1 A2 B0 B1 B2 D0 (7). Left: A3, B3, C0 C1 (4500 bytes), popped in the
    /// order of the round [A, B, C] (D left it): A3 (1500 fits A's quantum), B3, C0 (C's
    /// deficit 1500 - 1200 = 300 < 800), then C alone again: 300 + 1500: C1.
    #[test]
    fn head_drop_from_the_longest_queue_hand_worked() {
        let mut q = FlowQueue::new(config(1500));
        assert_eq!(q.set_cap(5000), 0);
        assert_eq!(q.cap(), 5000);
        let steps: [(u8, u8, usize, usize, usize); 11] = [
            // (flow, index, length, dropped, total after)
            (0, 0, 1500, 0, 1500),
            (0, 1, 1500, 0, 3000),
            (0, 2, 1500, 0, 4500),
            (1, 0, 1000, 1, 4000),
            (1, 1, 1000, 0, 5000),
            (2, 0, 1200, 1, 4700),
            (1, 2, 1000, 1, 4700),
            (1, 3, 1000, 1, 4700),
            (0, 3, 1500, 1, 4700),
            (2, 1, 800, 1, 4500),
            (3, 0, 4000, 1, 4500),
        ];
        for (step, &(flow, index, len, dropped, total)) in steps.iter().enumerate() {
            assert_eq!(
                q.push(Instant::from_micros(10), key(flow), pkt(flow, index, len)),
                dropped,
                "step {}",
                step + 1
            );
            assert_eq!(q.bytes(), total, "step {}", step + 1);
            assert!(q.bytes() <= q.cap());
        }
        let s = q.stats();
        assert_eq!(s.drops.over_cap, 7);
        assert_eq!(s.drops.too_many_flows, 0);
        assert_eq!(s.pushed_packets, 11);
        assert_eq!(s.queued_packets, 4);
        assert_eq!(s.active_flows, 3);
        assert_eq!(s.tracked_flows, 4);
        let dropped: Vec<u64> = (0..4)
            .map(|n| flow_of(&q, n).unwrap().dropped_packets)
            .collect();
        assert_eq!(dropped, [3, 3, 0, 1]);
        // flows(): most queued bytes first: C 2000, A 1500, B 1000, D 0.
        let order: Vec<(u16, usize)> = q
            .flows()
            .iter()
            .map(|f| (f.flow.src_port - 1000, f.queued_bytes))
            .collect();
        assert_eq!(order, [(2, 2000), (0, 1500), (1, 1000), (3, 0)]);
        assert_eq!(
            drain(&mut q, Instant::from_micros(20)),
            ["A3", "B3", "C0", "C1"]
        );
    }

    /// (c) Shrinking the cap drops from the longest queue again and again. Cap 20 MB (the
    /// default ceiling); pushed
    /// A0..A3 (1000 B each), B0 B1 (1000 B), C0 (500 B): 6500 B. set_cap(3000):
    ///
    /// - A 4000 is the longest: A0 goes -> 5500.
    /// - A 3000 > B 2000: A1 goes -> 4500.
    /// - A 2000 = B 2000: a tie, A became active first: A2 goes -> 3500.
    /// - A 1000, B 2000: B0 goes -> 2500 <= 3000: done, 4 packets dropped.
    ///
    /// Left: A3, B1, C0.
    #[test]
    fn set_cap_shrinking_drops_from_the_longest_repeatedly() {
        let mut q = FlowQueue::new(config(1500));
        assert_eq!(q.cap(), 20_000_000);
        for i in 0..4 {
            assert_eq!(q.push(Instant::from_micros(0), key(0), pkt(0, i, 1000)), 0);
        }
        for i in 0..2 {
            assert_eq!(q.push(Instant::from_micros(0), key(1), pkt(1, i, 1000)), 0);
        }
        assert_eq!(q.push(Instant::from_micros(0), key(2), pkt(2, 0, 500)), 0);
        assert_eq!(q.bytes(), 6500);
        assert_eq!(q.set_cap(3000), 4);
        assert_eq!(q.bytes(), 2500);
        assert_eq!(q.stats().drops.over_cap, 4);
        assert_eq!(flow_of(&q, 0).unwrap().dropped_packets, 3);
        assert_eq!(flow_of(&q, 1).unwrap().dropped_packets, 1);
        assert_eq!(q.set_cap(3000), 0, "within the cap: nothing more goes");
        assert_eq!(drain(&mut q, Instant::from_micros(1)), ["A3", "B1", "C0"]);
    }

    /// (d) The cap is clamped to [min_cap_bytes, max_cap_bytes] = [3000, 10000]; it starts
    /// at the maximum. A forecast of 0 (an outage) still leaves two 1400-byte packets: three
    /// of three flows make 4200 > 3000, and the earliest active of the tied flows (A) loses
    /// its packet.
    #[test]
    fn cap_is_clamped() {
        let mut q = FlowQueue::new(FlowQueueConfig {
            min_cap_bytes: 3000,
            max_cap_bytes: 10_000,
            ..FlowQueueConfig::default()
        });
        assert_eq!(q.cap(), 10_000);
        q.set_cap(0);
        assert_eq!(q.cap(), 3000);
        q.set_cap(5000);
        assert_eq!(q.cap(), 5000);
        q.set_cap(usize::MAX);
        assert_eq!(q.cap(), 10_000);
        assert_eq!(q.stats().cap_bytes, 10_000);
        q.set_cap(0);
        assert_eq!(q.push(Instant::from_micros(0), key(0), pkt(0, 0, 1400)), 0);
        assert_eq!(q.push(Instant::from_micros(0), key(1), pkt(1, 0, 1400)), 0);
        assert_eq!(q.push(Instant::from_micros(0), key(2), pkt(2, 0, 1400)), 1);
        assert_eq!(drain(&mut q, Instant::from_micros(1)), ["B0", "C0"]);

        // A minimum above the maximum is taken as the maximum.
        let mut q = FlowQueue::new(FlowQueueConfig {
            min_cap_bytes: 20_000,
            max_cap_bytes: 10_000,
            ..FlowQueueConfig::default()
        });
        q.set_cap(0);
        assert_eq!(q.cap(), 10_000);
        // A packet longer than the cap alone is refused.
        assert_eq!(
            q.push(Instant::from_micros(0), key(0), pkt(0, 0, 10_001)),
            1
        );
        assert!(q.is_empty());
    }

    /// (e) At most max_flows = 2 flows, forgotten after 1 s idle.
    ///
    /// - t=0: A0, B0 (100 B). t=10: C0: both tracked flows have packets: refused
    ///   (too_many_flows 1).
    /// - t=20: pop A0 (A idle from 20), pop B0 (B idle from 20, after A).
    /// - t=30: C0 again: the table is full, so the flow idle longest, A, is forgotten; C is
    ///   tracked (B, C).
    /// - expire(1_000_019): B idle 999_999 us < 1 s: kept. expire(1_000_020): B forgotten; C
    ///   has a packet: kept however long.
    /// - pop C0 at 2_000_000; expire(2_999_999) keeps it, expire(3_000_000) forgets it.
    #[test]
    fn too_many_flows_and_idle_expiry() {
        let mut q = FlowQueue::new(FlowQueueConfig {
            max_flows: 2,
            idle_flow: Duration::from_micros(1_000_000),
            ..FlowQueueConfig::default()
        });
        assert_eq!(q.push(Instant::from_micros(0), key(0), pkt(0, 0, 100)), 0);
        assert_eq!(q.push(Instant::from_micros(0), key(1), pkt(1, 0, 100)), 0);
        assert_eq!(q.push(Instant::from_micros(10), key(2), pkt(2, 0, 100)), 1);
        let s = q.stats();
        assert_eq!(s.drops.too_many_flows, 1);
        assert_eq!(s.drops.over_cap, 0);
        assert_eq!(s.pushed_packets, 2, "a refused packet was not accepted");
        assert_eq!(s.tracked_flows, 2);
        assert!(flow_of(&q, 2).is_none());

        assert_eq!(tag(&q.pop(Instant::from_micros(20)).unwrap()), "A0");
        assert_eq!(tag(&q.pop(Instant::from_micros(20)).unwrap()), "B0");
        assert_eq!(q.push(Instant::from_micros(30), key(2), pkt(2, 0, 100)), 0);
        assert!(flow_of(&q, 0).is_none(), "A, idle longest, made room");
        assert_eq!(flow_of(&q, 1).unwrap().sent_bytes, 100);
        assert_eq!(flow_of(&q, 2).unwrap().queued_bytes, 100);
        assert_eq!(q.stats().tracked_flows, 2);

        q.expire(Instant::from_micros(1_000_019));
        assert!(flow_of(&q, 1).is_some(), "idle 999 999 us: kept");
        q.expire(Instant::from_micros(1_000_020));
        assert!(flow_of(&q, 1).is_none(), "idle 1 s: forgotten");
        assert_eq!(q.stats().tracked_flows, 1);
        q.expire(Instant::from_micros(1_900_000));
        assert!(
            flow_of(&q, 2).is_some(),
            "a flow with packets is never forgotten"
        );

        assert_eq!(tag(&q.pop(Instant::from_micros(2_000_000)).unwrap()), "C0");
        q.expire(Instant::from_micros(2_999_999));
        assert_eq!(q.stats().tracked_flows, 1);
        q.expire(Instant::from_micros(3_000_000));
        assert_eq!(q.stats().tracked_flows, 0);
        assert!(q.flows().is_empty());

        // A forgotten flow comes back with fresh counters.
        assert_eq!(
            q.push(Instant::from_micros(3_000_001), key(1), pkt(1, 1, 100)),
            0
        );
        assert_eq!(flow_of(&q, 1).unwrap().sent_bytes, 0);
        // A time that goes back is taken as the latest seen.
        assert_eq!(tag(&q.pop(Instant::from_micros(5)).unwrap()), "B1");
        q.expire(Instant::from_micros(3_999_999));
        assert_eq!(q.stats().tracked_flows, 1);
        q.expire(Instant::from_micros(4_000_001));
        assert_eq!(q.stats().tracked_flows, 0);
    }

    /// Idle flows are forgotten when a new flow arrives, without `expire`: A idle from t=0
    /// (1 s limit); a new flow B at t=1_000_000 finds A forgotten.
    #[test]
    fn idle_flows_go_when_a_new_flow_arrives() {
        let mut q = FlowQueue::new(FlowQueueConfig {
            idle_flow: Duration::from_micros(1_000_000),
            ..FlowQueueConfig::default()
        });
        q.push(Instant::from_micros(0), key(0), pkt(0, 0, 100));
        q.pop(Instant::from_micros(0)).unwrap();
        q.push(Instant::from_micros(999_999), key(1), pkt(1, 0, 100));
        assert!(flow_of(&q, 0).is_some());
        q.pop(Instant::from_micros(999_999)).unwrap();
        q.push(Instant::from_micros(1_000_000), key(2), pkt(2, 0, 100));
        assert!(flow_of(&q, 0).is_none());
        assert!(flow_of(&q, 1).is_some());
        assert_eq!(q.stats().tracked_flows, 2);
    }

    /// (f) A flow that empties loses its deficit. Quantum 1500: A0 (500 B) pushed and popped:
    /// A had 1500 - 500 = 1000 left, but emptied: 0. Then A1, A2 (1200 B) and B0 (300 B):
    /// round [A, B]. A's turn: 0 + 1500: A1 sent, 300 left < 1200: A to the tail; B0; A:
    /// 300 + 1500: A2. Order A1 B0 A2 (had A kept its 1000, 2500 would have sent A1 and A2
    /// before B0).
    #[test]
    fn a_flow_that_empties_loses_its_deficit() {
        let mut q = FlowQueue::new(config(1500));
        q.push(Instant::from_micros(0), key(0), pkt(0, 0, 500));
        assert_eq!(tag(&q.pop(Instant::from_micros(0)).unwrap()), "A0");
        q.push(Instant::from_micros(1), key(0), pkt(0, 1, 1200));
        q.push(Instant::from_micros(1), key(0), pkt(0, 2, 1200));
        q.push(Instant::from_micros(1), key(1), pkt(1, 0, 300));
        assert_eq!(drain(&mut q, Instant::from_micros(2)), ["A1", "B0", "A2"]);
    }

    /// Packets longer than the quantum (100 B): A0 1000 B, B0 450 B, C0 950 B. B has enough
    /// on its 5th turn (500), A and C on their 10th (1000 >= 1000, 1000 >= 950), A before C
    /// in the round. Order B0 A0 C0. A 60 000-byte packet with a quantum of 1 comes out at
    /// once (rounds with no send are skipped in one step).
    #[test]
    fn packets_longer_than_the_quantum() {
        let mut q = FlowQueue::new(config(100));
        q.push(Instant::from_micros(0), key(0), pkt(0, 0, 1000));
        q.push(Instant::from_micros(0), key(1), pkt(1, 0, 450));
        q.push(Instant::from_micros(0), key(2), pkt(2, 0, 950));
        assert_eq!(drain(&mut q, Instant::from_micros(1)), ["B0", "A0", "C0"]);

        let mut q = FlowQueue::new(config(1));
        q.push(Instant::from_micros(0), key(0), pkt(0, 0, 60_000));
        q.push(Instant::from_micros(0), key(1), pkt(1, 0, 59_999));
        q.push(Instant::from_micros(0), key(1), pkt(1, 1, 2));
        assert_eq!(drain(&mut q, Instant::from_micros(1)), ["B0", "A0", "B1"]);
    }

    #[test]
    fn empty_packets_are_refused_and_counters_add_up() {
        let mut q = FlowQueue::new(FlowQueueConfig::default());
        assert_eq!(q.push(Instant::from_micros(0), key(0), Vec::new()), 1);
        assert!(q.is_empty());
        assert_eq!(
            q.stats(),
            QueueStats {
                cap_bytes: 20_000_000,
                ..QueueStats::default()
            }
        );
        assert!(q.pop(Instant::from_micros(0)).is_none());
        assert_eq!(q.peek_len(), None);
        q.push(Instant::from_micros(0), key(0), pkt(0, 0, 1000));
        let debug = format!("{q:?}");
        assert!(
            debug.contains("queued_bytes: 1000") && debug.len() < 1000,
            "{debug}"
        );
    }
}
