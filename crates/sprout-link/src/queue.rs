//! The link's bottleneck queue: configuration and the per-byte FIFO it runs.
//!
//! Two disciplines: drop-tail (with an optional byte limit) and CoDel (RFC 8289), which drops at
//! the head when a packet is taken from the queue to start its transmission.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use sprout_core::time::{Duration, Instant};

/// CoDel's default `TARGET` from RFC 8289: 5 ms.
pub const CODEL_DEFAULT_TARGET: Duration = Duration::from_millis(5);

/// CoDel's default `INTERVAL` from RFC 8289: 100 ms.
pub const CODEL_DEFAULT_INTERVAL: Duration = Duration::from_millis(100);

/// CoDel's `MAXPACKET` (bytes): while at most this many bytes remain in the queue after a packet
/// is taken from it, CoDel never drops (RFC 8289 section 5, "queue below one MTU"). One MTU,
/// the size of a trace opportunity.
pub const CODEL_MAXPACKET_BYTES: u64 = 1500;

fn default_codel_target_us() -> Duration {
    CODEL_DEFAULT_TARGET
}

fn default_codel_interval_us() -> Duration {
    CODEL_DEFAULT_INTERVAL
}

/// Queue discipline of the link's bottleneck queue.
///
/// Serialized with an internal tag, e.g. `{"kind": "drop_tail", "limit_bytes": null}` or
/// `{"kind": "codel", "target_us": 5000, "interval_us": 100000, "limit_bytes": null}` (missing
/// CoDel fields take the RFC 8289 defaults).
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
    /// CoDel, "Controlled Delay" active queue management, exactly as RFC 8289's pseudocode
    /// (section 5), on top of a FIFO with the same optional tail byte limit as
    /// [`DropTail`](QueueConfig::DropTail).
    ///
    /// CoDel decides when a packet is *dequeued*: here, when a trace opportunity with budget left
    /// takes the packet at the head of the queue to start transmitting it. Its sojourn time is
    /// that opportunity's time minus the time the packet joined the queue. CoDel may then drop
    /// it (and possibly further packets) at the head; dropped packets use none of the
    /// opportunity's budget, and a packet whose transmission has started is never dropped.
    ///
    /// State and rules as in the RFC: the sojourn time must stay at or above `target_us` for
    /// `interval_us` (`first_above_time`) before the first drop, and never while at most
    /// [`CODEL_MAXPACKET_BYTES`] remain in the queue; in the dropping state the next drop is due
    /// at `drop_next`, advanced by the control law `interval_us / sqrt(count)` (computed in
    /// `f64`, truncated to whole µs); re-entering the dropping state less than 16 intervals after
    /// the last scheduled drop resumes with `count = count - lastcount` if that is more than 1.
    #[serde(rename = "codel")]
    CoDel {
        /// Acceptable standing queue delay, RFC 8289 `TARGET` (µs). Default 5 000 (5 ms).
        #[serde(default = "default_codel_target_us")]
        target_us: Duration,
        /// Sliding window over which the sojourn time must stay above target, and the base of
        /// the control law, RFC 8289 `INTERVAL` (µs). Default 100 000 (100 ms). Must be positive
        /// (see [`LinkConfig::validate`](crate::LinkConfig::validate)).
        #[serde(default = "default_codel_interval_us")]
        interval_us: Duration,
        /// Byte limit of the waiting packets (bytes), enforced at the tail as in
        /// [`DropTail`](QueueConfig::DropTail); `None` = unlimited.
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

/// A queue discipline as the command line and the Python package name it (`infinite`,
/// `codel`): the choice, from `--queue` down to the link, which takes its
/// [`config`](QueueKind::config).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueKind {
    /// Unlimited drop-tail.
    Infinite,
    /// CoDel (RFC 8289: 5 ms target, 100 ms interval).
    Codel,
}

impl QueueKind {
    /// Every kind, in the order the command line lists them.
    pub const ALL: [QueueKind; 2] = [QueueKind::Infinite, QueueKind::Codel];

    /// The name on the command line.
    pub fn key(self) -> &'static str {
        match self {
            QueueKind::Infinite => "infinite",
            QueueKind::Codel => "codel",
        }
    }

    /// One line on the discipline, for `--help`.
    pub fn help(self) -> &'static str {
        match self {
            QueueKind::Infinite => "Unlimited drop-tail",
            QueueKind::Codel => "CoDel (RFC 8289: 5 ms target, 100 ms interval)",
        }
    }

    /// The link model's queue configuration.
    pub fn config(self) -> QueueConfig {
        match self {
            QueueKind::Infinite => QueueConfig::default(),
            QueueKind::Codel => QueueConfig::codel(),
        }
    }
}

/// A queue name that is not `infinite` or `codel`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown queue '{0}' (expected infinite or codel)")]
pub struct UnknownQueue(pub String);

impl std::str::FromStr for QueueKind {
    type Err = UnknownQueue;
    /// `infinite` or `codel`, surrounding blanks ignored.
    fn from_str(s: &str) -> Result<Self, UnknownQueue> {
        let s = s.trim();
        QueueKind::ALL
            .into_iter()
            .find(|k| k.key() == s)
            .ok_or_else(|| UnknownQueue(s.to_string()))
    }
}

/// A duration in milliseconds without trailing zeros: `5ms`, `2.5ms`, `0.001ms`.
fn format_ms(d: Duration) -> String {
    let us = d.as_micros();
    let (whole, frac) = (us / 1000, us % 1000);
    if frac == 0 {
        format!("{whole}ms")
    } else {
        let frac = format!("{frac:03}");
        format!("{whole}.{}ms", frac.trim_end_matches('0'))
    }
}

impl QueueConfig {
    /// CoDel with the RFC 8289 defaults: target 5 ms, interval 100 ms, no tail byte limit.
    pub fn codel() -> Self {
        QueueConfig::CoDel {
            target_us: CODEL_DEFAULT_TARGET,
            interval_us: CODEL_DEFAULT_INTERVAL,
            limit_bytes: None,
        }
    }

    /// The tail byte limit of the waiting packets (bytes), whatever the discipline; `None` =
    /// unlimited.
    pub fn limit_bytes(&self) -> Option<u64> {
        match *self {
            QueueConfig::DropTail { limit_bytes } | QueueConfig::CoDel { limit_bytes, .. } => {
                limit_bytes
            }
        }
    }

    /// Mahimahi-style description of this queue, as in its log header: `infinite`,
    /// `droptail [bytes=N]`, or `codel [target=5ms, interval=100ms]` (with `, bytes=N` appended
    /// when there is a byte limit). Mahimahi's own CoDel header shows only the limit; this one
    /// also names the CoDel parameters.
    pub fn mahimahi_description(&self) -> String {
        match *self {
            QueueConfig::DropTail { limit_bytes: None } => "infinite".to_string(),
            QueueConfig::DropTail {
                limit_bytes: Some(n),
            } => format!("droptail [bytes={n}]"),
            QueueConfig::CoDel {
                target_us,
                interval_us,
                limit_bytes,
            } => {
                let limit = limit_bytes.map_or(String::new(), |n| format!(", bytes={n}"));
                format!(
                    "codel [target={}, interval={}{limit}]",
                    format_ms(target_us),
                    format_ms(interval_us)
                )
            }
        }
    }
}

/// A packet inside the link (in propagation or queued).
#[derive(Debug, Clone)]
pub(crate) struct Packet<P> {
    /// When the sender handed it to the link.
    pub sent: Instant,
    /// When it reaches (reached) the tail of the queue: `sent + propagation delay`.
    pub enqueued: Instant,
    /// Size (bytes).
    pub bytes: u32,
    pub payload: P,
}

/// What [`ByteQueue::serve`] did with a packet.
#[derive(Debug)]
pub(crate) enum Served<P> {
    /// Its last byte was served.
    Departed(Packet<P>),
    /// The discipline (CoDel) dropped it at the head, before any byte of it was served.
    HeadDropped(Packet<P>),
}

/// CoDel's state variables (RFC 8289 section 5), times in µs.
#[derive(Debug, Clone, Default)]
struct CoDelState {
    /// When the sojourn time will have been above target for a whole interval; `None` stands
    /// for the RFC's 0 ("below target").
    first_above_time: Option<u64>,
    /// When the next drop is due while dropping.
    drop_next: u64,
    /// Drops since entering the dropping state (plus the carried-over count).
    count: u64,
    /// `count` when the dropping state was last entered.
    lastcount: u64,
    /// Whether in the dropping state.
    dropping: bool,
}

/// FIFO with mahimahi's per-byte service, drop-tail admission and optional CoDel head drops.
#[derive(Debug, Clone)]
pub(crate) struct ByteQueue<P> {
    packets: VecDeque<Packet<P>>,
    /// Whether the head packet has been taken for transmission (CoDel can no longer drop it, and
    /// the tail limit no longer counts it). Only meaningful when non-empty.
    head_in_transit: bool,
    /// Bytes of the head packet still to transmit (meaningful only when non-empty).
    head_remaining: u32,
    /// Bytes still to transmit over all queued packets (head counted by its remaining bytes).
    remaining_bytes: u64,
    /// Full sizes of all queued packets (bytes).
    total_bytes: u64,
    config: QueueConfig,
    codel: CoDelState,
}

impl<P> ByteQueue<P> {
    pub(crate) fn new(config: QueueConfig) -> Self {
        ByteQueue {
            packets: VecDeque::new(),
            head_in_transit: false,
            head_remaining: 0,
            remaining_bytes: 0,
            total_bytes: 0,
            config,
            codel: CoDelState::default(),
        }
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.packets.len()
    }

    #[inline]
    pub(crate) fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    #[inline]
    pub(crate) fn remaining_bytes(&self) -> u64 {
        self.remaining_bytes
    }

    /// Bytes of whole packets waiting (excludes a head in transit), as the tail limit counts
    /// them.
    fn waiting_bytes(&self) -> u64 {
        match self.packets.front() {
            Some(head) if self.head_in_transit => self.total_bytes - u64::from(head.bytes),
            _ => self.total_bytes,
        }
    }

    /// Offers a packet to the tail. Returns it back if the discipline drops it.
    #[inline]
    pub(crate) fn offer(&mut self, packet: Packet<P>) -> Result<(), Packet<P>> {
        if let Some(limit) = self.config.limit_bytes() {
            if self.waiting_bytes() + u64::from(packet.bytes) > limit {
                return Err(packet);
            }
        }
        if self.packets.is_empty() {
            self.head_remaining = packet.bytes;
            self.head_in_transit = false;
        }
        self.remaining_bytes += u64::from(packet.bytes);
        self.total_bytes += u64::from(packet.bytes);
        self.packets.push_back(packet);
        Ok(())
    }

    /// Spends one opportunity of `budget` bytes at time `now`; reports every packet that
    /// completes or is dropped at the head to `out`, in FIFO order. Unused budget is lost; head
    /// drops use none of it.
    #[inline]
    pub(crate) fn serve(&mut self, now: Instant, mut budget: u32, mut out: impl FnMut(Served<P>)) {
        let now_us = now.as_micros();
        while budget > 0 {
            if !self.head_in_transit && !self.start_head(now_us, &mut out) {
                return;
            }
            if self.head_remaining <= budget {
                budget -= self.head_remaining;
                self.remaining_bytes -= u64::from(self.head_remaining);
                if let Some(done) = self.packets.pop_front() {
                    self.total_bytes -= u64::from(done.bytes);
                    self.head_remaining = self.packets.front().map_or(0, |p| p.bytes);
                    self.head_in_transit = false;
                    out(Served::Departed(done));
                }
            } else {
                self.head_remaining -= budget;
                self.remaining_bytes -= u64::from(budget);
                budget = 0;
            }
        }
    }

    /// Dequeues (in the RFC's sense) the packet at the head to start transmitting it, applying
    /// the discipline's head drops. Returns false if the queue is (or became) empty.
    fn start_head(&mut self, now_us: u64, out: &mut impl FnMut(Served<P>)) -> bool {
        if let QueueConfig::CoDel {
            target_us,
            interval_us,
            ..
        } = self.config
        {
            let (target, interval) = (target_us.as_micros(), interval_us.as_micros());
            self.codel_dequeue(now_us, target, interval, out);
        }
        if self.packets.is_empty() {
            return false;
        }
        self.head_in_transit = true;
        true
    }

    /// Removes the (not yet started) head packet and reports it as a head drop.
    fn drop_head(&mut self, out: &mut impl FnMut(Served<P>)) {
        if let Some(p) = self.packets.pop_front() {
            self.total_bytes -= u64::from(p.bytes);
            self.remaining_bytes -= u64::from(p.bytes);
            self.head_remaining = self.packets.front().map_or(0, |q| q.bytes);
            out(Served::HeadDropped(p));
        }
    }

    /// RFC 8289 `dodequeue`, looking at the head packet instead of removing it: `None` if the
    /// queue is empty, else whether it is ok to drop the head.
    fn codel_dodequeue(&mut self, now: u64, target: u64, interval: u64) -> Option<bool> {
        let Some(p) = self.packets.front() else {
            // Queue empty: reset first_above_time.
            self.codel.first_above_time = None;
            return None;
        };
        let sojourn_time = now.saturating_sub(p.enqueued.as_micros());
        // Bytes left in the queue once this packet has been taken out.
        let bytes_after = self.total_bytes - u64::from(p.bytes);
        let mut ok_to_drop = false;
        if sojourn_time < target || bytes_after <= CODEL_MAXPACKET_BYTES {
            // Went below: stay below for at least an interval.
            self.codel.first_above_time = None;
        } else {
            match self.codel.first_above_time {
                // Just went above from below; if still above at first_above_time, ok to drop.
                None => self.codel.first_above_time = Some(now.saturating_add(interval)),
                Some(t) if now >= t => ok_to_drop = true,
                Some(_) => {}
            }
        }
        Some(ok_to_drop)
    }

    /// RFC 8289 `control_law`: `t + interval / sqrt(count)`, truncated to whole µs.
    fn codel_control_law(t: u64, count: u64, interval: u64) -> u64 {
        let step = interval as f64 / (count as f64).sqrt();
        t.saturating_add(step as u64)
    }

    /// RFC 8289 `dequeue`: afterwards the head of the queue (if any) is the packet to transmit.
    fn codel_dequeue(
        &mut self,
        now: u64,
        target: u64,
        interval: u64,
        out: &mut impl FnMut(Served<P>),
    ) {
        let Some(mut ok_to_drop) = self.codel_dodequeue(now, target, interval) else {
            // An empty queue takes us out of the dropping state.
            self.codel.dropping = false;
            return;
        };
        if self.codel.dropping {
            if !ok_to_drop {
                // Sojourn time below target: leave the dropping state.
                self.codel.dropping = false;
            }
            // Time for the next drop: drop the head and look at the next. A large backlog may
            // make the next drop due now too, hence the loop.
            while now >= self.codel.drop_next && self.codel.dropping {
                self.drop_head(out);
                self.codel.count += 1;
                ok_to_drop = self.codel_dodequeue(now, target, interval) == Some(true);
                if !ok_to_drop {
                    self.codel.dropping = false;
                } else {
                    self.codel.drop_next =
                        Self::codel_control_law(self.codel.drop_next, self.codel.count, interval);
                }
            }
        } else if ok_to_drop {
            // The sojourn time has been above target for an interval: enter the dropping state.
            self.drop_head(out);
            // The next head is sent whatever this says (as in the RFC), but the call still
            // updates first_above_time.
            let _ = self.codel_dodequeue(now, target, interval);
            self.codel.dropping = true;
            // Went above target soon after last going below: resume with the drop rate that
            // controlled the queue last time.
            let delta = self.codel.count.saturating_sub(self.codel.lastcount);
            self.codel.count = 1;
            if delta > 1 && now.saturating_sub(self.codel.drop_next) < interval.saturating_mul(16) {
                self.codel.count = delta;
            }
            self.codel.drop_next = Self::codel_control_law(now, self.codel.count, interval);
            self.codel.lastcount = self.codel.count;
        }
    }
}
