//! The trace-driven link (the paper's Cellsim), sans-IO: the caller passes time in.
//!
//! A packet sent at time `t` first experiences the propagation delay (fixed, or from a
//! [`DelayTrace`], plus [`Jitter`] if configured), then reaches the tail of the queue at
//! `t + delay`. There it may be lost at random (Bernoulli loss, probability
//! [`LinkConfig::loss`], or [`GilbertElliott`] bursty loss), dropped by the buffer's limit
//! ([`LinkConfig::buffer`], drop-tail or drop-head) or PIE, or join the queue. The trace
//! says when the queue may release bytes: each opportunity gives `opportunity_bytes` of budget,
//! spent per byte on the head of the queue (a packet departs when its last byte is served; partial
//! progress carries over; unused budget is lost). With CoDel, packets may also be dropped at the
//! head when an opportunity takes them for transmission (see [`QueueConfig::CoDel`]); with
//! FQ-CoDel ([`QueueConfig::FqCodel`]) the queue is one per flow, served in turn. Packets
//! that join the queue at time `T` can use an opportunity at `T`. Time 0 of the link's clock is
//! time 0 of the trace.

use std::collections::VecDeque;
use std::sync::Arc;

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use sprout_core::time::{Duration, Instant};

use crate::buffer::{Buffer, DropEnd};
use crate::delay::{DelayTrace, Jitter};
use crate::ecn::{Ecn, MarkReason, Marking, SentEcn};
use crate::fq_codel::FqCodel;
use crate::link_queue::LinkQueue;
use crate::loss::{GeState, GilbertElliott};
use crate::queue::{Admission, DropReason, Packet, QueueConfig, Served};
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
    /// same losses, on every platform. Default 0. Unused while `loss` is 0. Jitter and PIE
    /// draw from streams of their own of the same seed.
    pub seed: u64,
    /// A finite buffer: a limit in packets, bytes or time at the trace's mean rate, drop-tail
    /// or drop-head, whatever the discipline (with the queue's own byte limit, the lower
    /// holds). Default `None`: unlimited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer: Option<Buffer>,
    /// Gilbert-Elliott bursty loss instead of Bernoulli loss (then `loss` must be 0), drawing
    /// from the loss generator. Default `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gilbert_elliott: Option<GilbertElliott>,
    /// A propagation delay that varies over time, replacing `propagation_delay_us` (not
    /// serialized: set it from [`DelayTrace::load`]). Default `None`.
    #[serde(skip)]
    pub delay_trace: Option<Arc<DelayTrace>>,
    /// Random jitter on the propagation delay, with or without reordering. Default `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter: Option<Jitter>,
    /// ECN: CoDel, FQ-CoDel and PIE mark ECN-capable packets CE instead of dropping them
    /// ([`crate::ecn`]). Default false: they drop every packet, as before.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ecn: bool,
    /// The L4S step threshold (serialized in µs): an ECT(1) packet that waited longer than
    /// this in the queue is marked CE when taken for transmission, whatever the discipline
    /// ([`crate::ecn`]). Default `None`: no step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l4s_step_us: Option<Duration>,
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
            buffer: None,
            gilbert_elliott: None,
            delay_trace: None,
            jitter: None,
            ecn: false,
            l4s_step_us: None,
        }
    }
}

impl LinkConfig {
    /// Checks that the parameters make sense, describing the first problem found: `loss` must be
    /// a probability in `[0, 1]` (not NaN), `opportunity_bytes` must be positive, and a CoDel or
    /// FQ-CoDel queue's `interval_us` must be positive (and FQ-CoDel's quantum and limits, with
    /// 1 to 65 536 flows), a PIE queue's `tupdate_us` too. [`Link::new`] does not call this (it
    /// accepts any configuration); callers taking configurations from users (such as the CLI)
    /// should.
    pub fn validate(&self) -> Result<(), LinkConfigError> {
        if !(0.0..=1.0).contains(&self.loss) {
            return Err(LinkConfigError::Loss(self.loss));
        }
        if self.opportunity_bytes == 0 {
            return Err(LinkConfigError::ZeroOpportunity);
        }
        match self.queue {
            QueueConfig::CoDel {
                interval_us: Duration::ZERO,
                ..
            } => return Err(LinkConfigError::ZeroCodelInterval),
            QueueConfig::Pie {
                tupdate_us: Duration::ZERO,
                ..
            } => return Err(LinkConfigError::ZeroPieUpdate),
            QueueConfig::FqCodel {
                interval_us,
                quantum_bytes,
                flows,
                limit_packets,
                memory_limit_bytes,
                ..
            } => {
                let bad = if interval_us == Duration::ZERO {
                    Some(LinkConfigError::ZeroCodelInterval)
                } else if quantum_bytes == 0 || limit_packets == 0 || memory_limit_bytes == 0 {
                    Some(LinkConfigError::ZeroFqParameter)
                } else if !(1..=crate::fq_codel::FQ_CODEL_MAX_FLOWS).contains(&flows) {
                    Some(LinkConfigError::FqFlows(flows))
                } else {
                    None
                };
                if let Some(e) = bad {
                    return Err(e);
                }
            }
            _ => {}
        }
        if let Some(ge) = &self.gilbert_elliott {
            if let Some((name, value)) = ge.invalid() {
                return Err(LinkConfigError::GilbertElliott(name, value));
            }
            if self.loss > 0.0 {
                return Err(LinkConfigError::TwoLossModels);
            }
        }
        if let Some(b) = self.buffer {
            use crate::buffer::BufferLimit;
            if matches!(
                b.limit,
                BufferLimit::Packets(0) | BufferLimit::Bytes(0) | BufferLimit::Time(Duration::ZERO)
            ) {
                return Err(LinkConfigError::ZeroBuffer);
            }
        }
        Ok(())
    }

    /// The buffer, queue, loss and delay as the mm-link log's header and `--help` name them:
    /// the queue's [`mahimahi_description`](QueueConfig::mahimahi_description), with the buffer
    /// after it (`droptail [packets=100]`, `drophead [bytes=200000]`, `droptail [time=50ms]`,
    /// `codel [...] + buffer 50ms,head`).
    pub fn queue_description(&self) -> String {
        let Some(b) = self.buffer else {
            return self.queue.mahimahi_description();
        };
        use crate::buffer::BufferLimit;
        let end = match b.drop {
            DropEnd::Tail => "droptail",
            DropEnd::Head => "drophead",
        };
        match (self.queue, b.limit) {
            (QueueConfig::DropTail { limit_bytes: None }, BufferLimit::Packets(n)) => {
                format!("{end} [packets={n}]")
            }
            (QueueConfig::DropTail { limit_bytes: None }, BufferLimit::Bytes(n)) => {
                format!("{end} [bytes={n}]")
            }
            (QueueConfig::DropTail { limit_bytes: None }, BufferLimit::Time(t)) => {
                format!("{end} [time={}]", crate::queue::format_ms(t))
            }
            (q, _) => format!("{} + buffer {b}", q.mahimahi_description()),
        }
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
    /// A PIE queue's update period is 0 µs.
    #[error("PIE's tupdate must be positive")]
    ZeroPieUpdate,
    /// An FQ-CoDel queue's quantum, packet limit or memory limit is 0.
    #[error("FQ-CoDel's quantum and limits must be positive")]
    ZeroFqParameter,
    /// An FQ-CoDel queue's flow count is outside 1..=65536.
    #[error("FQ-CoDel's flows must be between 1 and 65536, got {0}")]
    FqFlows(u32),
    /// A Gilbert-Elliott parameter is not a probability.
    #[error("gemodel {0} must be a probability between 0 and 1, got {1}")]
    GilbertElliott(&'static str, f64),
    /// Both Bernoulli and Gilbert-Elliott loss.
    #[error("give Bernoulli loss or a gemodel, not both")]
    TwoLossModels,
    /// A buffer of 0 packets, bytes or time.
    #[error("a buffer must hold more than nothing")]
    ZeroBuffer,
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
    /// The flow key it was sent with ([`Link::send_flow`]; 0 for [`Link::send`]). FQ-CoDel
    /// delivers the packets of one key in the order they joined the queue, but not across
    /// keys; the FIFO disciplines deliver all in that order.
    pub flow: u32,
    /// Its ECN codepoint as it leaves the link: as sent ([`Link::send_ecn`]; Not-ECT for
    /// [`Link::send`]), or CE if the link marked it.
    pub ecn: Ecn,
    /// Why the link marked it CE, if it did ([`crate::ecn`]).
    pub mark: Option<MarkReason>,
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
        /// Which of the packets in propagation it was, in the order they were sent: 0 (the
        /// earliest sent) unless jitter with reordering let it overtake earlier ones.
        index: usize,
    },
    /// A packet reached the tail of the queue and did not join it: dropped by the buffer's
    /// limit or PIE, or lost at random ([`LinkConfig::loss`], [`LinkConfig::gilbert_elliott`]).
    Dropped {
        /// Time of the event.
        at: Instant,
        /// Packet size (bytes).
        bytes: u32,
        /// Why.
        reason: DropReason,
        /// Which of the packets in propagation it was, as in
        /// [`Enqueued`](LinkEvent::Enqueued).
        index: usize,
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
    /// A queued packet was dropped from inside the queue (none of its bytes had been served;
    /// it used none of the budget): by CoDel at the head, when an opportunity took it for
    /// transmission (reported after the [`Opportunity`](LinkEvent::Opportunity) and in FIFO
    /// order with its deliveries), or by a drop-head buffer, the oldest waiting packet, to make
    /// room for an arriving one (reported before that one's
    /// [`Enqueued`](LinkEvent::Enqueued)). The packet had been reported as
    /// [`Enqueued`](LinkEvent::Enqueued) when it joined the queue.
    HeadDropped {
        /// Time of the drop.
        at: Instant,
        /// Packet size (bytes).
        bytes: u32,
        /// When it joined the queue; `at - enqueued` is its sojourn time.
        enqueued: Instant,
        /// Why: [`DropReason::Aqm`] (CoDel) or [`DropReason::Buffer`] (drop-head).
        reason: DropReason,
        /// Its place in the queue: 0 (the head), or 1 when the head was being transmitted;
        /// with FQ-CoDel, among the packets of its flow key (as [`Delivery::flow`]): 0 (the
        /// oldest), or 1 when one of that key was being transmitted.
        index: usize,
        /// The flow key it was sent with, as [`Delivery::flow`].
        flow: u32,
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
    /// Packets dropped by the queue: at the tail (the buffer's limit, PIE) or at the head
    /// (CoDel, a drop-head buffer: those are in `packets_head_dropped` too);
    /// `packets_buffer_dropped + packets_aqm_dropped`. Random losses are not included.
    pub packets_dropped: u64,
    /// Bytes dropped by the queue discipline (tail and head; see `packets_dropped`).
    pub bytes_dropped: u64,
    /// Of `packets_dropped`, the packets dropped from inside the queue, by CoDel or a drop-head
    /// buffer (they had joined the queue, so they are counted in `packets_enqueued` too).
    pub packets_head_dropped: u64,
    /// Of `bytes_dropped`, the bytes dropped from inside the queue.
    pub bytes_head_dropped: u64,
    /// Packets lost at random at the tail of the queue ([`LinkConfig::loss`]); not in
    /// `packets_dropped`.
    pub packets_lost: u64,
    /// Bytes lost at random at the tail of the queue.
    pub bytes_lost: u64,
    /// Of `packets_dropped`, those the buffer's limit dropped (tail or head).
    pub packets_buffer_dropped: u64,
    /// Of `bytes_dropped`, those the buffer's limit dropped.
    pub bytes_buffer_dropped: u64,
    /// Of `packets_dropped`, those the AQM dropped (CoDel at the head, PIE at the tail).
    pub packets_aqm_dropped: u64,
    /// Of `bytes_dropped`, those the AQM dropped.
    pub bytes_aqm_dropped: u64,
    /// Packets that left the queue.
    pub packets_delivered: u64,
    /// Bytes that left the queue.
    pub bytes_delivered: u64,
    /// Delivery opportunities that occurred (used or not).
    pub opportunities: u64,
    /// Bytes those opportunities offered (`opportunities * opportunity_bytes`).
    pub bytes_offered: u64,
    /// Packets the link marked CE ([`crate::ecn`]; not dropped, so not in `packets_dropped`):
    /// `packets_aqm_marked + packets_step_marked`. Not serialized while 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub packets_marked: u64,
    /// Bytes the link marked CE. Not serialized while 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub bytes_marked: u64,
    /// Of `packets_marked`, those the AQM marked instead of dropping them. Not serialized
    /// while 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub packets_aqm_marked: u64,
    /// Of `packets_marked`, those the L4S step marked. Not serialized while 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub packets_step_marked: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A uniform number in `[0, 1)` from the top 53 bits of one `u64`.
#[inline]
fn uniform(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

impl LinkStats {
    /// Counts a drop by the queue (not a loss) of `bytes`.
    fn count_drop(&mut self, reason: DropReason, bytes: u32) {
        let b = u64::from(bytes);
        self.packets_dropped += 1;
        self.bytes_dropped += b;
        match reason {
            DropReason::Buffer => {
                self.packets_buffer_dropped += 1;
                self.bytes_buffer_dropped += b;
            }
            DropReason::Aqm => {
                self.packets_aqm_dropped += 1;
                self.bytes_aqm_dropped += b;
            }
            DropReason::Loss => {}
        }
    }
}

/// Reports what an opportunity at `at` did with a packet: its delivery, or its drop from
/// inside the queue, counted.
#[inline(always)]
fn on_served<P>(
    stats: &mut LinkStats,
    sink: &mut impl FnMut(LinkEvent<P>),
    at: Instant,
    served: Served<P>,
) {
    match served {
        Served::Departed(p) => {
            stats.packets_delivered += 1;
            stats.bytes_delivered += u64::from(p.bytes);
            let (ecn, mark) = p.sent.ecn_mark();
            sink(LinkEvent::Delivered(Delivery {
                payload: p.payload,
                bytes: p.bytes,
                sent: p.sent.sent(),
                enqueued: p.enqueued,
                delivered: at,
                flow: p.flow,
                ecn,
                mark,
            }));
        }
        Served::Dropped(p, index, reason) => {
            sink(count_inner_drop(stats, at, p, index, reason));
        }
    }
}

/// FQ-CoDel's service of an opportunity, out of the FIFO's way.
#[cold]
#[inline(never)]
fn serve_fq<P>(fq: &mut FqCodel<P>, at: Instant, budget: u32, mut out: impl FnMut(Served<P>)) {
    fq.serve(at.as_micros(), budget, &mut out);
}

/// FQ-CoDel's admission of a packet, out of the FIFO's way.
#[cold]
#[inline(never)]
fn offer_fq<P>(
    fq: &mut FqCodel<P>,
    packet: Packet<P>,
    out: &mut impl FnMut(Served<P>),
) -> Result<(), (Packet<P>, DropReason)> {
    fq.offer(packet, out)
}

/// Counts a drop from inside the queue and makes its event.
#[cold]
fn count_inner_drop<P>(
    stats: &mut LinkStats,
    at: Instant,
    p: Packet<P>,
    index: usize,
    reason: DropReason,
) -> LinkEvent<P> {
    stats.count_drop(reason, p.bytes);
    stats.packets_head_dropped += 1;
    stats.bytes_head_dropped += u64::from(p.bytes);
    LinkEvent::HeadDropped {
        at,
        bytes: p.bytes,
        enqueued: p.enqueued,
        reason,
        index,
        flow: p.flow,
    }
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
    queue: LinkQueue<P>,
    now: Instant,
    stats: LinkStats,
    /// Effective loss probability (`config.loss` made a probability); 1 with Gilbert-Elliott
    /// loss, whose draws then replace the Bernoulli one.
    loss: f64,
    /// Loss generator, seeded from `config.seed`.
    rng: ChaCha8Rng,
    /// Gilbert-Elliott's parameters and chain, with that loss.
    ge: Option<(GilbertElliott, GeState)>,
    /// The variable delay, with a delay trace or jitter.
    delay: Option<VariableDelay>,
}

/// A delay trace and jitter, as a link runs them.
#[derive(Debug, Clone)]
struct VariableDelay {
    trace: Option<Arc<DelayTrace>>,
    jitter: Option<Jitter>,
    /// Jitter's generator: the link's seed, stream 2.
    rng: ChaCha8Rng,
    /// With reordering: the rank in sending order (0 for the first packet sent) of each packet
    /// in propagation, in the link's order of them (arrival at the queue).
    ranks: VecDeque<u64>,
    /// With reordering: packets sent so far.
    sent: u64,
}

impl VariableDelay {
    /// When a packet sent at `sent` reaches the queue, `fixed` being the fixed delay.
    fn arrival(&mut self, sent: Instant, fixed: Duration) -> Instant {
        let base = self.trace.as_ref().map_or(fixed, |t| t.at(sent));
        let Some(j) = self.jitter else {
            return sent + base;
        };
        let amount = j.amount.as_micros();
        let span = amount.saturating_mul(2).saturating_add(1);
        let draw = self.rng.next_u64() % span;
        // base + draw - amount, never below sent.
        let us = (base.as_micros() + draw).saturating_sub(amount);
        sent + Duration::from_micros(us)
    }

    fn reorders(&self) -> bool {
        self.jitter.is_some_and(|j| j.reorder)
    }

    /// With reordering, the rank in sending order, among the packets still in propagation, of
    /// the packet now leaving propagation (the first of them in the link's order); else 0.
    #[inline(never)]
    fn rank_among_propagating(&mut self) -> usize {
        if !self.reorders() {
            return 0;
        }
        match self.ranks.pop_front() {
            Some(rank) => self.ranks.iter().filter(|r| **r < rank).count(),
            None => 0,
        }
    }
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
        let admission = match config.buffer {
            None => Admission::default(),
            Some(b) => {
                let period_s = trace.period_ms() as f64 / 1e3;
                let rate = trace.len() as f64 * f64::from(config.opportunity_bytes) / period_s;
                let (packets, bytes) = b.resolve(rate);
                Admission {
                    packets,
                    bytes,
                    drop_head: b.drop == DropEnd::Head,
                }
            }
        };
        let delay = (config.delay_trace.is_some() || config.jitter.is_some()).then(|| {
            let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
            rng.set_stream(2);
            VariableDelay {
                trace: config.delay_trace.clone(),
                jitter: config.jitter,
                rng,
                ranks: VecDeque::new(),
                sent: 0,
            }
        });
        Link {
            // Gilbert-Elliott loss (which the configuration's validation keeps from Bernoulli
            // loss) takes over the Bernoulli check's "draw" path.
            loss: if config.gilbert_elliott.is_some() {
                1.0
            } else {
                loss
            },
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            ge: config.gilbert_elliott.map(|g| (g, GeState::default())),
            delay,
            cursor: OpportunityCursor::new(trace, config.looping),
            propagating: VecDeque::new(),
            propagating_bytes: 0,
            queue: LinkQueue::new(
                config.queue,
                admission,
                config.seed,
                Marking {
                    ecn: config.ecn,
                    step_us: config.l4s_step_us.map(|d| d.as_micros()),
                    ..Marking::default()
                },
            ),
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
    #[inline]
    pub fn send(&mut self, now: Instant, size_bytes: u32, payload: P) {
        self.send_flow(now, size_bytes, 0, payload);
    }

    /// [`send`](Link::send) of a packet of flow `flow`: an FQ-CoDel queue
    /// ([`QueueConfig::FqCodel`]) puts packets of different keys in different flow queues
    /// (but for hash collisions); the other disciplines ignore it. The emulator gives the hash
    /// of the packet's 5-tuple ([`crate::flow::ip_flow_key`]), the simulator one key per
    /// sender.
    #[inline]
    pub fn send_flow(&mut self, now: Instant, size_bytes: u32, flow: u32, payload: P) {
        self.send_ecn(now, size_bytes, flow, Ecn::NotEct, payload);
    }

    /// [`send_flow`](Link::send_flow) of a packet carrying the ECN codepoint `ecn`: with
    /// [`LinkConfig::ecn`] the AQM marks an ECT(0) or ECT(1) packet CE where it would drop
    /// it, and with [`LinkConfig::l4s_step_us`] the step marks an ECT(1) packet
    /// ([`crate::ecn`]); the delivery says what it left with ([`Delivery::ecn`]). The emulator
    /// reads the codepoint from the real header ([`crate::ecn::ip_ecn`]), the simulator's
    /// TCP peers give ECT(0) on data once they negotiated ECN.
    #[inline]
    pub fn send_ecn(&mut self, now: Instant, size_bytes: u32, flow: u32, ecn: Ecn, payload: P) {
        let sent = now.max(self.now);
        self.now = sent;
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += u64::from(size_bytes);
        self.propagating_bytes += u64::from(size_bytes);
        if self.delay.is_some() {
            self.send_delayed(sent, size_bytes, flow, ecn, payload);
            return;
        }
        self.propagating.push_back(Packet {
            sent: SentEcn::new(sent, ecn),
            enqueued: sent + self.config.propagation_delay_us,
            bytes: size_bytes,
            flow,
            payload,
        });
    }

    /// [`send`](Link::send)'s propagation with a delay trace or jitter (kept out of the fixed
    /// delay's path).
    #[inline(never)]
    fn send_delayed(&mut self, sent: Instant, size_bytes: u32, flow: u32, ecn: Ecn, payload: P) {
        let Some(delay) = &mut self.delay else {
            return;
        };
        let mut enqueued = delay.arrival(sent, self.config.propagation_delay_us);
        let reorders = delay.reorders();
        let packet = |enqueued| Packet {
            sent: SentEcn::new(sent, ecn),
            enqueued,
            bytes: size_bytes,
            flow,
            payload,
        };
        if reorders {
            // Kept in order of arrival at the queue; among equal arrivals, of sending.
            let at = self.propagating.partition_point(|p| p.enqueued <= enqueued);
            self.propagating.insert(at, packet(enqueued));
            delay.ranks.insert(at, delay.sent);
            delay.sent += 1;
        } else {
            // Never before a packet sent earlier.
            if let Some(last) = self.propagating.back() {
                enqueued = enqueued.max(last.enqueued);
            }
            self.propagating.push_back(packet(enqueued));
        }
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
                    let served = |served| on_served(stats, sink, at, served);
                    match &mut self.queue.fq {
                        None => self.queue.fifo.serve(at, opportunity_bytes, served),
                        Some(fq) => serve_fq(fq, at, opportunity_bytes, served),
                    }
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
        // Its rank among the packets in propagation, in sending order: only reordering can make
        // it other than 0.
        let index = match &mut self.delay {
            Some(d) => d.rank_among_propagating(),
            None => 0,
        };
        if self.lose() {
            self.stats.packets_lost += 1;
            self.stats.bytes_lost += u64::from(bytes);
            sink(LinkEvent::Dropped {
                at,
                bytes,
                reason: DropReason::Loss,
                index,
            });
            return;
        }
        let stats = &mut self.stats;
        let mut dropped = |served| {
            if let Served::Dropped(p, i, reason) = served {
                sink(count_inner_drop(stats, at, p, i, reason));
            }
        };
        let offered = match &mut self.queue.fq {
            None => self.queue.fifo.offer(packet, &mut dropped),
            Some(fq) => offer_fq(fq, packet, &mut dropped),
        };
        match offered {
            Ok(()) => {
                self.stats.packets_enqueued += 1;
                self.stats.bytes_enqueued += u64::from(bytes);
                sink(LinkEvent::Enqueued { at, bytes, index });
            }
            Err((_dropped, reason)) => {
                self.stats.count_drop(reason, bytes);
                sink(LinkEvent::Dropped {
                    at,
                    bytes,
                    reason,
                    index,
                });
            }
        }
    }

    /// Draws whether the packet now reaching the queue is lost. Bernoulli loss uses the
    /// generator only when the loss probability is positive: one `u64` per packet, its top 53
    /// bits as a uniform number `u` in `[0, 1)`; lost if `u < loss` (so loss 1 loses
    /// everything). Gilbert-Elliott loss draws two such numbers per packet ([`GilbertElliott`]).
    #[inline]
    fn lose(&mut self) -> bool {
        if self.loss <= 0.0 {
            return false;
        }
        if self.ge.is_some() {
            return self.lose_ge();
        }
        uniform(&mut self.rng) < self.loss
    }

    /// Gilbert-Elliott's draw for the packet now reaching the queue.
    #[inline(never)]
    fn lose_ge(&mut self) -> bool {
        let Some((ge, state)) = &mut self.ge else {
            return false;
        };
        let u_loss = uniform(&mut self.rng);
        let u_move = uniform(&mut self.rng);
        state.step(ge, u_loss, u_move)
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
        let mut s = self.stats;
        let m = self.queue.marking();
        s.packets_aqm_marked = m.aqm.0;
        s.packets_step_marked = m.step.0;
        s.packets_marked = m.aqm.0 + m.step.0;
        s.bytes_marked = m.aqm.1 + m.step.1;
        s
    }
}
