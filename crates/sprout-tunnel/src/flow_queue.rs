//! The per-flow queue of SproutTunnel (paper §4.3): one FIFO per flow, the Sprout window
//! filled round-robin by bytes among the flows with data (deficit round robin, a quantum of
//! [`FlowQueueConfig::quantum_bytes`] per turn), the total queued bytes capped at the
//! receiver's latest forecast of what the link delivers over the forecast's life, and packets
//! dropped from the head of the longest queue while over the cap.
//!
//! Sans-IO: time is passed in (microseconds), nothing here reads a clock.

use serde::Serialize;

use crate::packet::FlowKey;

/// Parameters of a [`FlowQueue`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowQueueConfig {
    /// Bytes a flow may send per round-robin turn (default 1500).
    pub quantum_bytes: usize,
    /// Most flows tracked at once, with data or recently active (default 1024). A packet of a
    /// new flow beyond it is dropped (`too_many_flows`) unless an idle flow can be forgotten.
    pub max_flows: usize,
    /// The cap never goes below this many bytes (default 3000: two full packets), so that an
    /// outage forecast of zero does not drop every packet as it arrives.
    pub min_cap_bytes: usize,
    /// The cap never goes above this many bytes (default 4 MiB), whatever the forecast says.
    pub max_cap_bytes: usize,
    /// A flow with no queued packet and no packet for this long is forgotten, in microseconds
    /// (default 10 s); its counters go with it.
    pub idle_flow_us: u64,
}

impl Default for FlowQueueConfig {
    fn default() -> Self {
        FlowQueueConfig {
            quantum_bytes: 1500,
            max_flows: 1024,
            min_cap_bytes: 3000,
            max_cap_bytes: 4 << 20,
            idle_flow_us: 10_000_000,
        }
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

/// One queue per flow, round-robin by bytes, capped with head drop from the longest queue.
#[derive(Debug)]
pub struct FlowQueue {
    _todo: (),
}

impl FlowQueue {
    /// An empty queue whose cap starts at `config.max_cap_bytes`.
    pub fn new(config: FlowQueueConfig) -> FlowQueue {
        let _ = config;
        todo!()
    }

    /// Sets the cap (clamped to `[min_cap_bytes, max_cap_bytes]`) and drops from the head of
    /// the longest queue (most bytes; ties: the flow that became active earliest) until the
    /// total is at most the cap. Returns the packets dropped.
    pub fn set_cap(&mut self, cap_bytes: usize) -> usize {
        let _ = cap_bytes;
        todo!()
    }

    /// The cap now, in bytes.
    pub fn cap(&self) -> usize {
        todo!()
    }

    /// Appends `packet` to the tail of its flow's queue at `now_us`, then enforces the cap as
    /// [`FlowQueue::set_cap`] does (the head of the longest queue goes, which may be an older
    /// packet of this very flow, never the one just added unless it is alone in the longest
    /// queue). Returns the packets dropped (including this one if refused).
    pub fn push(&mut self, now_us: u64, flow: FlowKey, packet: Vec<u8>) -> usize {
        let _ = (now_us, flow, packet);
        todo!()
    }

    /// The next packet in deficit-round-robin order: the flow whose turn it is sends packets
    /// while its deficit (grown by one quantum per turn) covers them; a flow that empties
    /// leaves the round and loses its deficit. `None` when empty.
    pub fn pop(&mut self, now_us: u64) -> Option<Vec<u8>> {
        let _ = now_us;
        todo!()
    }

    /// Length in bytes of the packet [`FlowQueue::pop`] would return next, without taking it.
    pub fn peek_len(&self) -> Option<usize> {
        todo!()
    }

    /// Bytes queued.
    pub fn bytes(&self) -> usize {
        todo!()
    }

    /// Packets queued.
    pub fn packets(&self) -> usize {
        todo!()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.packets() == 0
    }

    /// Forgets flows idle for [`FlowQueueConfig::idle_flow_us`] at `now_us`.
    pub fn expire(&mut self, now_us: u64) {
        let _ = now_us;
        todo!()
    }

    /// Counters and gauges.
    pub fn stats(&self) -> QueueStats {
        todo!()
    }

    /// The tracked flows, most queued bytes first, then most sent bytes.
    pub fn flows(&self) -> Vec<FlowSnapshot> {
        todo!()
    }
}
