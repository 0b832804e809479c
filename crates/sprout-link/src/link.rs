//! The trace-driven link (the paper's Cellsim), sans-IO: the caller passes time in.
//!
//! A packet sent at time `t` first experiences the fixed propagation delay, then reaches the tail
//! of the queue at `t + delay`. There it may be lost at random (Bernoulli loss, probability
//! [`LinkConfig::loss`]), dropped by the queue discipline's limit, or join the queue. The trace
//! says when the queue may release bytes: each opportunity gives `opportunity_bytes` of budget,
//! spent per byte on the head of the queue (a packet departs when its last byte is served; partial
//! progress carries over; unused budget is lost). With CoDel, packets may also be dropped at the
//! head when an opportunity takes them for transmission (see [`QueueConfig::CoDel`]). Packets
//! that join the queue at time `T` can use an opportunity at `T`. Time 0 of the link's clock is
//! time 0 of the trace.

use std::collections::VecDeque;
use std::sync::Arc;

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use sprout_core::time::{Duration, Instant};

use crate::queue::{ByteQueue, Packet, QueueConfig, Served};
use crate::trace::{OpportunityCursor, Trace};

/// Link parameters. `Default`: 20 ms propagation delay, unlimited drop-tail queue, looping trace,
/// 1500-byte opportunities, no random loss (seed 0). Missing fields deserialize to their defaults.
///
/// [`Link::new`] accepts any value; use [`validate`](LinkConfig::validate) to reject nonsensical
/// ones (e.g. from a command line) with a clear message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LinkConfig {
    /// One-way fixed delay applied before the queue (serialized in µs). Default 20 ms.
    pub propagation_delay_us: Duration,
    /// Queue discipline. Default: unlimited drop-tail.
    pub queue: QueueConfig,
    /// Whether the trace repeats when it ends (mahimahi's default). Default true. The paper's own
    /// Cellsim did not loop; without looping no opportunity occurs after the trace's end.
    pub looping: bool,
    /// Bytes each trace opportunity may carry (bytes). Default 1500.
    pub opportunity_bytes: u32,
    /// Probability (0 to 1) that a packet is lost when it reaches the tail of the queue, after
    /// its propagation delay and before the queue discipline sees it; each packet independently
    /// (Bernoulli loss). Default 0 (no loss). [`Link::new`] treats NaN as 0 and clamps other
    /// values into `[0, 1]`; [`validate`](LinkConfig::validate) rejects them.
    pub loss: f64,
    /// Seed of the loss generator (a `ChaCha8Rng`). The same seed and the same packets give the
    /// same losses, on every platform. Default 0. Unused while `loss` is 0.
    pub seed: u64,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            propagation_delay_us: Duration::from_millis(20),
            queue: QueueConfig::default(),
            looping: true,
            opportunity_bytes: 1500,
            loss: 0.0,
            seed: 0,
        }
    }
}

impl LinkConfig {
    /// Checks that the parameters make sense, describing the first problem found: `loss` must be
    /// a probability in `[0, 1]` (not NaN), `opportunity_bytes` must be positive, and a CoDel
    /// queue's `interval_us` must be positive. [`Link::new`] does not call this (it accepts any
    /// configuration); callers taking configurations from users (such as the CLI) should.
    pub fn validate(&self) -> Result<(), LinkConfigError> {
        if !(0.0..=1.0).contains(&self.loss) {
            return Err(LinkConfigError::Loss(self.loss));
        }
        if self.opportunity_bytes == 0 {
            return Err(LinkConfigError::ZeroOpportunity);
        }
        if let QueueConfig::CoDel {
            interval_us: Duration::ZERO,
            ..
        } = self.queue
        {
            return Err(LinkConfigError::ZeroCodelInterval);
        }
        Ok(())
    }
}

/// Why [`LinkConfig::validate`] rejects a configuration.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LinkConfigError {
    /// The loss probability is outside `[0, 1]` or NaN.
    #[error("loss must be a probability between 0 and 1, got {0}")]
    Loss(f64),
    /// Opportunities carry 0 bytes.
    #[error("opportunity_bytes must be positive")]
    ZeroOpportunity,
    /// A CoDel queue's interval is 0 µs.
    #[error("CoDel interval must be positive")]
    ZeroCodelInterval,
}

/// A packet that crossed the link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery<P> {
    /// The caller's payload, as given to [`Link::send`].
    pub payload: P,
    /// Packet size (bytes).
    pub bytes: u32,
    /// When it was sent (the time given to `send`, raised to the link's clock if earlier).
    pub sent: Instant,
    /// When it joined the queue: `sent + propagation delay`.
    pub enqueued: Instant,
    /// When it left the queue, i.e. the opportunity that served its last byte.
    pub delivered: Instant,
}

/// Something that happened on the link, reported by [`Link::advance`] in time order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkEvent<P> {
    /// A packet joined the tail of the queue (after its propagation delay).
    Enqueued {
        /// Time of the event.
        at: Instant,
        /// Packet size (bytes).
        bytes: u32,
    },
    /// A packet reached the tail of the queue and did not join it: dropped by the discipline's
    /// byte limit, or lost at random ([`LinkConfig::loss`]). [`LinkStats`] tells the two apart.
    Dropped {
        /// Time of the event.
        at: Instant,
        /// Packet size (bytes).
        bytes: u32,
    },
    /// A delivery opportunity of the trace occurred (reported whether used or wasted), before the
    /// deliveries it makes.
    Opportunity {
        /// Time of the event.
        at: Instant,
        /// Budget of the opportunity (bytes).
        bytes: u32,
    },
    /// A packet left the queue.
    Delivered(Delivery<P>),
    /// CoDel dropped a queued packet at the head of the queue, when an opportunity took it for
    /// transmission (none of its bytes had been served; it used none of the budget). Reported
    /// after the [`Opportunity`](LinkEvent::Opportunity) and in FIFO order with its deliveries.
    /// The packet had been reported as [`Enqueued`](LinkEvent::Enqueued) when it joined the queue.
    HeadDropped {
        /// Time of the drop, i.e. of the opportunity.
        at: Instant,
        /// Packet size (bytes).
        bytes: u32,
        /// When it joined the queue; `at - enqueued` is its sojourn time.
        enqueued: Instant,
    },
}

impl<P> LinkEvent<P> {
    /// Time of the event.
    pub fn at(&self) -> Instant {
        match self {
            LinkEvent::Enqueued { at, .. }
            | LinkEvent::Dropped { at, .. }
            | LinkEvent::Opportunity { at, .. }
            | LinkEvent::HeadDropped { at, .. } => *at,
            LinkEvent::Delivered(d) => d.delivered,
        }
    }
}

/// Counters of a link since its creation (bytes and packets). Missing fields deserialize to 0.
///
/// Every packet sent is, at any time, in exactly one of: in flight (propagating), lost, dropped
/// at the tail, queued, dropped at the head, delivered. So `packets_sent = in flight +
/// packets_lost + packets_dropped + queued + packets_delivered`, and `packets_enqueued =
/// queued + packets_head_dropped + packets_delivered` (the same for bytes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LinkStats {
    /// Packets handed to [`Link::send`].
    pub packets_sent: u64,
    /// Bytes handed to [`Link::send`].
    pub bytes_sent: u64,
    /// Packets that joined the queue.
    pub packets_enqueued: u64,
    /// Bytes that joined the queue.
    pub bytes_enqueued: u64,
    /// Packets dropped by the queue discipline: at the tail (byte limit) or, with CoDel, at the
    /// head (those are in `packets_head_dropped` too). Random losses are not included.
    pub packets_dropped: u64,
    /// Bytes dropped by the queue discipline (tail and head; see `packets_dropped`).
    pub bytes_dropped: u64,
    /// Of `packets_dropped`, the packets CoDel dropped at the head of the queue (they had joined
    /// the queue, so they are counted in `packets_enqueued` too).
    pub packets_head_dropped: u64,
    /// Of `bytes_dropped`, the bytes CoDel dropped at the head of the queue.
    pub bytes_head_dropped: u64,
    /// Packets lost at random at the tail of the queue ([`LinkConfig::loss`]); not in
    /// `packets_dropped`.
    pub packets_lost: u64,
    /// Bytes lost at random at the tail of the queue.
    pub bytes_lost: u64,
    /// Packets that left the queue.
    pub packets_delivered: u64,
    /// Bytes that left the queue.
    pub bytes_delivered: u64,
    /// Delivery opportunities that occurred (used or not).
    pub opportunities: u64,
    /// Bytes those opportunities offered (`opportunities * opportunity_bytes`).
    pub bytes_offered: u64,
}

/// The trace-driven link, generic over an opaque payload `P` carried with each packet.
///
/// Drive it with [`send`](Link::send), [`next_event`](Link::next_event) and
/// [`advance`](Link::advance). The link keeps a clock: the latest time passed to `send` or
/// `advance`. A `send` earlier than that clock is treated as a send at the clock (time never runs
/// backwards), and an `advance` to an earlier time does nothing.
#[derive(Debug, Clone)]
pub struct Link<P> {
    config: LinkConfig,
    cursor: OpportunityCursor,
    /// Packets in propagation, ordered by `enqueued` (non-decreasing since the clock is).
    propagating: VecDeque<Packet<P>>,
    propagating_bytes: u64,
    queue: ByteQueue<P>,
    now: Instant,
    stats: LinkStats,
    /// Effective loss probability (`config.loss` made a probability).
    loss: f64,
    /// Loss generator, seeded from `config.seed`.
    rng: ChaCha8Rng,
}

impl<P> Link<P> {
    /// A link replaying `trace` (trace time 0 = link time 0) with `config`; nothing in flight.
    /// Does not validate `config` (see [`LinkConfig::validate`]): a NaN `loss` counts as 0 and
    /// other out-of-range values are clamped into `[0, 1]`.
    pub fn new(trace: Arc<Trace>, config: LinkConfig) -> Self {
        let loss = if config.loss.is_nan() {
            0.0
        } else {
            config.loss.clamp(0.0, 1.0)
        };
        Link {
            loss,
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            cursor: OpportunityCursor::new(trace, config.looping),
            propagating: VecDeque::new(),
            propagating_bytes: 0,
            queue: ByteQueue::new(config.queue),
            now: Instant::ZERO,
            stats: LinkStats::default(),
            config,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    /// The trace being replayed.
    pub fn trace(&self) -> &Arc<Trace> {
        self.cursor.trace()
    }

    /// The link's clock: the latest time given to `send` or `advance`.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Hands a packet of `size_bytes` to the link at `now`. It joins the queue at
    /// `now + propagation_delay_us` during a later (or this) [`advance`](Link::advance).
    /// A `now` earlier than the link's clock is raised to the clock. Any size is accepted
    /// (a packet larger than one opportunity needs several; a 0-byte packet departs at the first
    /// opportunity with budget left).
    ///
    /// With a zero propagation delay, send *before* advancing to `now` if the packet should be
    /// able to use an opportunity at exactly `now`: once `advance(now)` has processed that
    /// opportunity it is gone (the same as mahimahi, which serves the link up to the arrival time
    /// before queueing an arriving packet).
    pub fn send(&mut self, now: Instant, size_bytes: u32, payload: P) {
        let sent = now.max(self.now);
        self.now = sent;
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += u64::from(size_bytes);
        self.propagating_bytes += u64::from(size_bytes);
        self.propagating.push_back(Packet {
            sent,
            enqueued: sent + self.config.propagation_delay_us,
            bytes: size_bytes,
            payload,
        });
    }

    /// The earliest time at which a queue entry or a delivery can happen: the next pending
    /// queue entry, or the next opportunity if the queue is non-empty. Opportunities that would be
    /// wasted on an empty queue are not reported (they are still emitted by `advance`). `None` when
    /// nothing is in flight, or only queued packets remain on a non-looping trace that has ended.
    /// May be earlier than [`now`](Link::now) if `advance` has not caught up.
    pub fn next_event(&self) -> Option<Instant> {
        let entry = self.propagating.front().map(|p| p.enqueued);
        let opportunity = if self.queue.is_empty() {
            None
        } else {
            self.cursor.peek()
        };
        match (entry, opportunity) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Processes everything with time `<= now` in time order, reporting each event to `sink`:
    /// queue entries (or tail drops and losses) and every trace opportunity (even wasted ones),
    /// each followed by the head drops and deliveries it makes, in FIFO order. Entries at time `T`
    /// come before an opportunity at `T`.
    pub fn advance(&mut self, now: Instant, sink: &mut impl FnMut(LinkEvent<P>)) {
        self.now = self.now.max(now);
        let opportunity_bytes = self.config.opportunity_bytes;
        loop {
            let next_opportunity = self.cursor.peek();
            if let Some(front) = self.propagating.front() {
                let entry = front.enqueued;
                if entry <= now && !matches!(next_opportunity, Some(o) if o < entry) {
                    self.enter_queue(sink);
                    continue;
                }
            }
            match next_opportunity {
                Some(at) if at <= now => {
                    self.cursor.next();
                    self.stats.opportunities += 1;
                    self.stats.bytes_offered += u64::from(opportunity_bytes);
                    sink(LinkEvent::Opportunity {
                        at,
                        bytes: opportunity_bytes,
                    });
                    let stats = &mut self.stats;
                    self.queue
                        .serve(at, opportunity_bytes, |served| match served {
                            Served::Departed(p) => {
                                stats.packets_delivered += 1;
                                stats.bytes_delivered += u64::from(p.bytes);
                                sink(LinkEvent::Delivered(Delivery {
                                    payload: p.payload,
                                    bytes: p.bytes,
                                    sent: p.sent,
                                    enqueued: p.enqueued,
                                    delivered: at,
                                }));
                            }
                            Served::HeadDropped(p) => {
                                stats.packets_dropped += 1;
                                stats.bytes_dropped += u64::from(p.bytes);
                                stats.packets_head_dropped += 1;
                                stats.bytes_head_dropped += u64::from(p.bytes);
                                sink(LinkEvent::HeadDropped {
                                    at,
                                    bytes: p.bytes,
                                    enqueued: p.enqueued,
                                });
                            }
                        });
                }
                _ => break,
            }
        }
    }

    #[inline]
    fn enter_queue(&mut self, sink: &mut impl FnMut(LinkEvent<P>)) {
        let Some(packet) = self.propagating.pop_front() else {
            return;
        };
        let bytes = packet.bytes;
        let at = packet.enqueued;
        self.propagating_bytes -= u64::from(bytes);
        if self.lose() {
            self.stats.packets_lost += 1;
            self.stats.bytes_lost += u64::from(bytes);
            sink(LinkEvent::Dropped { at, bytes });
            return;
        }
        match self.queue.offer(packet) {
            Ok(()) => {
                self.stats.packets_enqueued += 1;
                self.stats.bytes_enqueued += u64::from(bytes);
                sink(LinkEvent::Enqueued { at, bytes });
            }
            Err(_dropped) => {
                self.stats.packets_dropped += 1;
                self.stats.bytes_dropped += u64::from(bytes);
                sink(LinkEvent::Dropped { at, bytes });
            }
        }
    }

    /// Draws whether the packet now reaching the queue is lost. Uses the generator only when the
    /// loss probability is positive: one `u64` per packet, its top 53 bits as a uniform number
    /// `u` in `[0, 1)`; lost if `u < loss` (so loss 1 loses everything).
    #[inline]
    fn lose(&mut self) -> bool {
        if self.loss <= 0.0 {
            return false;
        }
        let u = (self.rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        u < self.loss
    }

    /// Bytes of the packets in the queue, counted at full size (a partly transmitted head counts
    /// all its bytes, since none has been delivered yet).
    pub fn queue_bytes(&self) -> u64 {
        self.queue.total_bytes()
    }

    /// Bytes the queue still has to transmit (a partly transmitted head counts only its remaining
    /// bytes); at most [`queue_bytes`](Link::queue_bytes).
    pub fn queue_bytes_to_transmit(&self) -> u64 {
        self.queue.remaining_bytes()
    }

    /// Packets in the queue (including a partly sent head).
    pub fn queue_packets(&self) -> usize {
        self.queue.len()
    }

    /// Bytes sent but not yet at the queue (still in propagation).
    pub fn in_flight_bytes(&self) -> u64 {
        self.propagating_bytes
    }

    /// Packets sent but not yet at the queue (still in propagation).
    pub fn in_flight_packets(&self) -> usize {
        self.propagating.len()
    }

    /// Counters since creation.
    pub fn stats(&self) -> LinkStats {
        self.stats
    }
}
