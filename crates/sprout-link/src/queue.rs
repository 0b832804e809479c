//! The link's bottleneck queue: configuration and the per-byte FIFO it runs.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// Queue discipline of the link's bottleneck queue.
///
/// Serialized with an internal tag, e.g. `{"kind": "drop_tail", "limit_bytes": null}`.
// Later: CoDel (RFC 8289) and Bernoulli loss at the tail, as further variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum QueueConfig {
    /// First-in first-out; a packet arriving at the tail is dropped if accepting it would put
    /// more than `limit_bytes` bytes in the queue (bytes). `None` = unlimited.
    ///
    /// As in mahimahi's `droptail` queue, the limit counts the packets *waiting* in the queue; a
    /// head packet that has already been partly transmitted is "in transit" and not counted.
    DropTail {
        /// Byte limit of the waiting packets (bytes); `None` = unlimited.
        #[serde(default)]
        limit_bytes: Option<u64>,
    },
}

impl Default for QueueConfig {
    /// Unlimited drop-tail (an infinite FIFO), Cellsim's and mahimahi's default.
    fn default() -> Self {
        QueueConfig::DropTail { limit_bytes: None }
    }
}

impl QueueConfig {
    /// Mahimahi's description of this queue, as in its log header: `infinite` or
    /// `droptail [bytes=N]`.
    pub fn mahimahi_description(&self) -> String {
        match self {
            QueueConfig::DropTail { limit_bytes: None } => "infinite".to_string(),
            QueueConfig::DropTail {
                limit_bytes: Some(n),
            } => format!("droptail [bytes={n}]"),
        }
    }
}

/// A packet inside the link (in propagation or queued).
#[derive(Debug, Clone)]
pub(crate) struct Packet<P> {
    /// When the sender handed it to the link (µs).
    pub sent_us: u64,
    /// When it reaches (reached) the tail of the queue: `sent_us + propagation delay` (µs).
    pub enqueued_us: u64,
    /// Size (bytes).
    pub bytes: u32,
    pub payload: P,
}

/// FIFO with mahimahi's per-byte service and drop-tail admission.
#[derive(Debug, Clone)]
pub(crate) struct ByteQueue<P> {
    packets: VecDeque<Packet<P>>,
    /// Bytes of the head packet still to transmit (meaningful only when non-empty).
    head_remaining: u32,
    /// Bytes still to transmit over all queued packets (head counted by its remaining bytes).
    remaining_bytes: u64,
    /// Full sizes of all queued packets (bytes).
    total_bytes: u64,
    config: QueueConfig,
}

impl<P> ByteQueue<P> {
    pub fn new(config: QueueConfig) -> Self {
        ByteQueue {
            packets: VecDeque::new(),
            head_remaining: 0,
            remaining_bytes: 0,
            total_bytes: 0,
            config,
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.packets.len()
    }

    #[inline]
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    #[inline]
    pub fn remaining_bytes(&self) -> u64 {
        self.remaining_bytes
    }

    /// Bytes of whole packets waiting (excludes a partly transmitted head), as the drop-tail
    /// limit counts them.
    fn waiting_bytes(&self) -> u64 {
        match self.packets.front() {
            Some(head) if self.head_remaining < head.bytes => {
                self.remaining_bytes - u64::from(self.head_remaining)
            }
            _ => self.remaining_bytes,
        }
    }

    /// Offers a packet to the tail. Returns it back if the discipline drops it.
    #[inline]
    pub fn offer(&mut self, packet: Packet<P>) -> Result<(), Packet<P>> {
        match self.config {
            QueueConfig::DropTail {
                limit_bytes: Some(limit),
            } if self.waiting_bytes() + u64::from(packet.bytes) > limit => return Err(packet),
            QueueConfig::DropTail { .. } => {}
        }
        if self.packets.is_empty() {
            self.head_remaining = packet.bytes;
        }
        self.remaining_bytes += u64::from(packet.bytes);
        self.total_bytes += u64::from(packet.bytes);
        self.packets.push_back(packet);
        Ok(())
    }

    /// Spends one opportunity of `budget` bytes; calls `depart` for every packet that completes,
    /// in FIFO order. Unused budget is lost.
    #[inline]
    pub fn serve(&mut self, mut budget: u32, mut depart: impl FnMut(Packet<P>)) {
        while budget > 0 {
            if self.packets.is_empty() {
                return;
            }
            if self.head_remaining <= budget {
                budget -= self.head_remaining;
                self.remaining_bytes -= u64::from(self.head_remaining);
                if let Some(done) = self.packets.pop_front() {
                    self.total_bytes -= u64::from(done.bytes);
                    self.head_remaining = self.packets.front().map_or(0, |p| p.bytes);
                    depart(done);
                }
            } else {
                self.head_remaining -= budget;
                self.remaining_bytes -= u64::from(budget);
                budget = 0;
            }
        }
    }
}
