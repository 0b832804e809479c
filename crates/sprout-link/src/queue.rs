//! The link's bottleneck queue: configuration and the per-byte FIFO it runs.
//!
//! Four disciplines: drop-tail (with an optional byte limit), CoDel (RFC 8289, the crate's
//! `codel` module), which drops at the head when a packet is taken from the queue to start
//! its transmission, PIE (RFC 8033, [`crate::pie`]), which drops arriving packets at random,
//! and FQ-CoDel (RFC 8290, [`crate::fq_codel`]), flow queues served in turn, each with its own
//! CoDel. Beside the discipline, the link's [`Buffer`](crate::Buffer) limits the queue in
//! packets, bytes or time and drops at the tail or the head.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use sprout_core::time::{Duration, Instant};

use crate::codel::{CoDelQueue, CoDelState};
use crate::ecn::{Marking, SentEcn};
use crate::pie::{
    Pie, PieParams, PIE_DEFAULT_ALPHA_16THS, PIE_DEFAULT_BETA_16THS, PIE_DEFAULT_MAX_BURST,
    PIE_DEFAULT_TARGET, PIE_DEFAULT_TUPDATE,
};

/// CoDel's default `TARGET` from RFC 8289: 5 ms.
pub const CODEL_DEFAULT_TARGET: Duration = Duration::from_millis(5);

/// CoDel's default `INTERVAL` from RFC 8289: 100 ms.
pub const CODEL_DEFAULT_INTERVAL: Duration = Duration::from_millis(100);

pub use crate::codel::CODEL_MAXPACKET_BYTES;

/// FQ-CoDel's default number of flow queues, Linux's `flows`: 1024.
pub const FQ_CODEL_DEFAULT_FLOWS: u32 = 1024;
/// FQ-CoDel's default DRR quantum (bytes), Linux's: 1514, an Ethernet frame.
pub const FQ_CODEL_DEFAULT_QUANTUM: u32 = 1514;
/// FQ-CoDel's default limit on queued packets, Linux's: 10 240.
pub const FQ_CODEL_DEFAULT_LIMIT: u32 = 10_240;
/// FQ-CoDel's default memory limit (bytes), Linux's: 32 MiB.
pub const FQ_CODEL_DEFAULT_MEMORY_LIMIT: u64 = 32 << 20;

fn default_codel_target_us() -> Duration {
    CODEL_DEFAULT_TARGET
}

fn default_codel_interval_us() -> Duration {
    CODEL_DEFAULT_INTERVAL
}

fn default_pie_target_us() -> Duration {
    PIE_DEFAULT_TARGET
}

fn default_pie_tupdate_us() -> Duration {
    PIE_DEFAULT_TUPDATE
}

fn default_pie_alpha() -> u32 {
    PIE_DEFAULT_ALPHA_16THS
}

fn default_pie_beta() -> u32 {
    PIE_DEFAULT_BETA_16THS
}

fn default_pie_max_burst_us() -> Duration {
    PIE_DEFAULT_MAX_BURST
}

/// Why a packet was dropped: the buffer was full, the AQM (CoDel or PIE) chose it, or it was
/// lost at random (Bernoulli or Gilbert-Elliott loss).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// The buffer's limit (drop-tail or drop-head), or the queue's own byte limit.
    Buffer,
    /// The active queue management: CoDel's head drops, PIE's early drops.
    Aqm,
    /// Random loss.
    Loss,
}

impl DropReason {
    /// The word the mm-link log writes: `buffer`, `aqm` or `loss`.
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::Buffer => "buffer",
            DropReason::Aqm => "aqm",
            DropReason::Loss => "loss",
        }
    }

    /// The reason a log's word names.
    pub fn from_word(word: &str) -> Option<DropReason> {
        [DropReason::Buffer, DropReason::Aqm, DropReason::Loss]
            .into_iter()
            .find(|r| r.as_str() == word)
    }
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
    /// PIE (RFC 8033) with Linux's defaults and early-drop safeguards; see [`crate::pie`]. PIE
    /// decides at enqueue, when a packet reaches the tail of the queue; its queue delay is the
    /// sojourn time of the packet last taken for transmission. Its drops draw from the link's
    /// seed, on a stream of their own.
    Pie {
        /// Target queue delay, RFC 8033 `QDELAY_REF` (µs). Default 15 000 (15 ms, Linux's).
        #[serde(default = "default_pie_target_us")]
        target_us: Duration,
        /// Period of the drop probability's update, `T_UPDATE` (µs). Default 15 000 (15 ms,
        /// Linux's). Must be positive.
        #[serde(default = "default_pie_tupdate_us")]
        tupdate_us: Duration,
        /// `alpha` in sixteenths per second, as Linux's `tc` takes it. Default 2 (0.125).
        #[serde(default = "default_pie_alpha")]
        alpha_16ths: u32,
        /// `beta` in sixteenths per second. Default 20 (1.25).
        #[serde(default = "default_pie_beta")]
        beta_16ths: u32,
        /// Burst allowance, `MAX_BURST` (µs). Default 150 000 (150 ms).
        #[serde(default = "default_pie_max_burst_us")]
        max_burst_us: Duration,
        /// Byte limit of the waiting packets (bytes), as [`DropTail`](QueueConfig::DropTail)'s;
        /// `None` = unlimited.
        #[serde(default)]
        limit_bytes: Option<u64>,
    },
    /// FQ-CoDel (RFC 8290) as Linux's `fq_codel`, with its defaults; see [`crate::fq_codel`].
    /// Packets go to flow queues by the flow key their sender gives
    /// ([`Link::send_flow`](crate::Link::send_flow)), served by deficit round robin, new flows
    /// first, each with its own CoDel. A link's [`Buffer`](crate::Buffer) lowers the limits
    /// (packets, or bytes for a byte or time buffer); its drop end does not apply: overflows
    /// always drop from the head of the fattest flow.
    #[serde(rename = "fq_codel")]
    FqCodel {
        /// Each flow's CoDel target (µs). Default 5 000 (5 ms).
        #[serde(default = "default_codel_target_us")]
        target_us: Duration,
        /// Each flow's CoDel interval (µs). Default 100 000 (100 ms). Must be positive.
        #[serde(default = "default_codel_interval_us")]
        interval_us: Duration,
        /// The deficit round robin's quantum (bytes). Default 1514. Must be positive.
        #[serde(default = "default_fq_quantum")]
        quantum_bytes: u32,
        /// Flow queues (1 to 65 536). Default 1024.
        #[serde(default = "default_fq_flows")]
        flows: u32,
        /// Most packets queued, one in transmission aside. Default 10 240.
        #[serde(default = "default_fq_limit")]
        limit_packets: u32,
        /// Most bytes queued (bytes), one packet in transmission aside. Default 33 554 432
        /// (32 MiB).
        #[serde(default = "default_fq_memory")]
        memory_limit_bytes: u64,
    },
}

fn default_fq_quantum() -> u32 {
    FQ_CODEL_DEFAULT_QUANTUM
}

fn default_fq_flows() -> u32 {
    FQ_CODEL_DEFAULT_FLOWS
}

fn default_fq_limit() -> u32 {
    FQ_CODEL_DEFAULT_LIMIT
}

fn default_fq_memory() -> u64 {
    FQ_CODEL_DEFAULT_MEMORY_LIMIT
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
    /// PIE (RFC 8033, Linux's defaults: 15 ms target, 15 ms update).
    Pie,
    /// FQ-CoDel (RFC 8290, Linux's defaults: 1024 flows, 1514-byte quantum, CoDel's 5 ms and
    /// 100 ms per flow).
    FqCodel,
}

impl QueueKind {
    /// Every kind, in the order the command line lists them.
    pub const ALL: [QueueKind; 4] = [
        QueueKind::Infinite,
        QueueKind::Codel,
        QueueKind::Pie,
        QueueKind::FqCodel,
    ];

    /// The name on the command line.
    pub fn key(self) -> &'static str {
        match self {
            QueueKind::Infinite => "infinite",
            QueueKind::Codel => "codel",
            QueueKind::Pie => "pie",
            QueueKind::FqCodel => "fq-codel",
        }
    }

    /// One line on the discipline, for `--help`.
    pub fn help(self) -> &'static str {
        match self {
            QueueKind::Infinite => "Unlimited drop-tail",
            QueueKind::Codel => "CoDel (RFC 8289: 5 ms target, 100 ms interval)",
            QueueKind::Pie => "PIE (RFC 8033, Linux's defaults: 15 ms target, 15 ms update)",
            QueueKind::FqCodel => {
                "FQ-CoDel (RFC 8290, Linux's defaults: 1024 flows, 1514-byte quantum, CoDel per flow)"
            }
        }
    }

    /// The link model's queue configuration.
    pub fn config(self) -> QueueConfig {
        match self {
            QueueKind::Infinite => QueueConfig::default(),
            QueueKind::Codel => QueueConfig::codel(),
            QueueKind::Pie => QueueConfig::pie(),
            QueueKind::FqCodel => QueueConfig::fq_codel(),
        }
    }
}

/// A queue name that is not `infinite`, `codel`, `pie` or `fq-codel`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown queue '{0}' (expected infinite, codel, pie or fq-codel)")]
pub struct UnknownQueue(pub String);

impl std::str::FromStr for QueueKind {
    type Err = UnknownQueue;
    /// `infinite`, `codel`, `pie` or `fq-codel`, surrounding blanks ignored.
    fn from_str(s: &str) -> Result<Self, UnknownQueue> {
        let s = s.trim();
        QueueKind::ALL
            .into_iter()
            .find(|k| k.key() == s)
            .ok_or_else(|| UnknownQueue(s.to_string()))
    }
}

/// A duration in milliseconds without trailing zeros: `5ms`, `2.5ms`, `0.001ms`.
pub(crate) fn format_ms(d: Duration) -> String {
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

    /// PIE with Linux's defaults: target 15 ms, update every 15 ms, alpha 1/8, beta 5/4, burst
    /// allowance 150 ms, no tail byte limit.
    pub fn pie() -> Self {
        QueueConfig::Pie {
            target_us: PIE_DEFAULT_TARGET,
            tupdate_us: PIE_DEFAULT_TUPDATE,
            alpha_16ths: PIE_DEFAULT_ALPHA_16THS,
            beta_16ths: PIE_DEFAULT_BETA_16THS,
            max_burst_us: PIE_DEFAULT_MAX_BURST,
            limit_bytes: None,
        }
    }

    /// FQ-CoDel with Linux's defaults: 1024 flows, a 1514-byte quantum, CoDel's 5 ms target
    /// and 100 ms interval per flow, at most 10 240 packets and 32 MiB.
    pub fn fq_codel() -> Self {
        QueueConfig::FqCodel {
            target_us: CODEL_DEFAULT_TARGET,
            interval_us: CODEL_DEFAULT_INTERVAL,
            quantum_bytes: FQ_CODEL_DEFAULT_QUANTUM,
            flows: FQ_CODEL_DEFAULT_FLOWS,
            limit_packets: FQ_CODEL_DEFAULT_LIMIT,
            memory_limit_bytes: FQ_CODEL_DEFAULT_MEMORY_LIMIT,
        }
    }

    /// The tail byte limit of the waiting packets (bytes) of the FIFO disciplines; `None` =
    /// unlimited, and for FQ-CoDel, whose limits drop from the fattest flow instead.
    pub fn limit_bytes(&self) -> Option<u64> {
        match *self {
            QueueConfig::DropTail { limit_bytes }
            | QueueConfig::CoDel { limit_bytes, .. }
            | QueueConfig::Pie { limit_bytes, .. } => limit_bytes,
            QueueConfig::FqCodel { .. } => None,
        }
    }

    /// Mahimahi-style description of this queue, as in its log header: `infinite`,
    /// `droptail [bytes=N]`, `codel [target=5ms, interval=100ms]` or `pie [target=15ms,
    /// tupdate=15ms, alpha=2, beta=20, burst=150ms]` (with `, bytes=N` appended when there is a
    /// byte limit), or `fq_codel [target=5ms, interval=100ms, quantum=1514, flows=1024,
    /// limit=10240, memory=33554432]`. Mahimahi's own CoDel header shows only the limit; this
    /// one also names the CoDel parameters.
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
            QueueConfig::Pie {
                target_us,
                tupdate_us,
                alpha_16ths,
                beta_16ths,
                max_burst_us,
                limit_bytes,
            } => {
                let limit = limit_bytes.map_or(String::new(), |n| format!(", bytes={n}"));
                format!(
                    "pie [target={}, tupdate={}, alpha={alpha_16ths}, beta={beta_16ths}, \
                     burst={}{limit}]",
                    format_ms(target_us),
                    format_ms(tupdate_us),
                    format_ms(max_burst_us)
                )
            }
            QueueConfig::FqCodel {
                target_us,
                interval_us,
                quantum_bytes,
                flows,
                limit_packets,
                memory_limit_bytes,
            } => format!(
                "fq_codel [target={}, interval={}, quantum={quantum_bytes}, flows={flows}, \
                 limit={limit_packets}, memory={memory_limit_bytes}]",
                format_ms(target_us),
                format_ms(interval_us)
            ),
        }
    }
}

/// A packet inside the link (in propagation or queued).
#[derive(Debug, Clone)]
pub(crate) struct Packet<P> {
    /// When the sender handed it to the link, its ECN codepoint (CE once the link marked
    /// it) and why the link marked it, packed.
    pub sent: SentEcn,
    /// When it reaches (reached) the tail of the queue: `sent + propagation delay`.
    pub enqueued: Instant,
    /// Size (bytes).
    pub bytes: u32,
    /// Its flow key ([`Link::send_flow`](crate::Link::send_flow)); only FQ-CoDel reads it.
    pub flow: u32,
    pub payload: P,
}

/// What [`ByteQueue::serve`] did with a packet.
#[derive(Debug)]
pub(crate) enum Served<P> {
    /// Its last byte was served.
    Departed(Packet<P>),
    /// Dropped from inside the queue, before any byte of it was served: at `index` (0 = the
    /// head, 1 behind one in transit; FQ-CoDel: among its flow key's packets), by the AQM (CoDel, at the head) or the buffer
    /// (drop-head, the oldest waiting; FQ-CoDel, the fattest flow's head).
    Dropped(Packet<P>, usize, DropReason),
}

/// The limits on what the queue admits, resolved from the queue's byte limit and the link's
/// [`Buffer`](crate::Buffer) (a time limit made bytes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Admission {
    /// At most this many waiting packets.
    pub packets: Option<u64>,
    /// At most this many waiting bytes.
    pub bytes: Option<u64>,
    /// Whether an overflow drops the oldest waiting packets instead of the arriving one.
    pub drop_head: bool,
}

/// The FIFO as its CoDel sees it: its head, and drops reported to `out`.
struct FifoCoDel<'a, P, F> {
    queue: &'a mut ByteQueue<P>,
    out: &'a mut F,
}

impl<P, F: FnMut(Served<P>)> CoDelQueue for FifoCoDel<'_, P, F> {
    fn head(&self) -> Option<(u64, u64)> {
        let p = self.queue.packets.front()?;
        Some((
            p.enqueued.as_micros(),
            self.queue.total_bytes - u64::from(p.bytes),
        ))
    }

    fn drop_head(&mut self) {
        self.queue.drop_at(0, DropReason::Aqm, self.out);
    }

    fn mark_head(&mut self) -> bool {
        let q = &mut *self.queue;
        match q.packets.front_mut() {
            Some(p) => q.marking.aqm_mark(&mut p.sent, p.bytes),
            None => false,
        }
    }
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
    admission: Admission,
    /// Whether arrivals need [`admit`](ByteQueue::admit): a limit or PIE.
    admits: bool,
    /// PIE's state, with a PIE queue.
    pie: Option<Pie>,
    /// ECN marking: what is marked, and the marks made.
    pub(crate) marking: Marking,
}

impl<P> ByteQueue<P> {
    /// A queue running `config`, admitting as `admission` says (its byte limit is the lower of
    /// the two), PIE's drops drawn from `seed`, marking as `marking` says.
    pub(crate) fn new(
        config: QueueConfig,
        mut admission: Admission,
        seed: u64,
        marking: Marking,
    ) -> Self {
        admission.bytes = match (admission.bytes, config.limit_bytes()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let pie = match config {
            QueueConfig::Pie {
                target_us,
                tupdate_us,
                alpha_16ths,
                beta_16ths,
                max_burst_us,
                ..
            } => Some(Pie::new(
                PieParams {
                    target_us: target_us.as_micros(),
                    tupdate_us: tupdate_us.as_micros(),
                    alpha_16ths,
                    beta_16ths,
                    max_burst_us: max_burst_us.as_micros(),
                },
                seed,
            )),
            _ => None,
        };
        ByteQueue {
            packets: VecDeque::new(),
            head_in_transit: false,
            head_remaining: 0,
            remaining_bytes: 0,
            total_bytes: 0,
            config,
            codel: CoDelState::default(),
            admits: admission.packets.is_some() || admission.bytes.is_some() || pie.is_some(),
            admission,
            pie,
            marking,
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

    /// Packets waiting (excludes a head in transit), as the packet limit counts them.
    fn waiting_packets(&self) -> u64 {
        let in_transit = usize::from(self.head_in_transit && !self.packets.is_empty());
        (self.packets.len() - in_transit) as u64
    }

    /// Whether `bytes` more would fit within the limits.
    fn fits(&self, bytes: u64) -> bool {
        self.admission
            .packets
            .is_none_or(|n| self.waiting_packets() < n)
            && self
                .admission
                .bytes
                .is_none_or(|n| self.waiting_bytes() + bytes <= n)
    }

    /// Offers a packet to the tail. Returns it back, with the reason, if the buffer or the AQM
    /// drops it; reports to `out` the packets a drop-head buffer drops to make room for it.
    #[inline]
    pub(crate) fn offer(
        &mut self,
        mut packet: Packet<P>,
        out: &mut impl FnMut(Served<P>),
    ) -> Result<(), (Packet<P>, DropReason)> {
        if self.admits {
            match self.admit(&packet, out) {
                Ok(sent) => packet.sent = sent,
                Err(reason) => return Err((packet, reason)),
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

    /// The admission of a packet to a limited or PIE queue: the buffer's tail drop, PIE's
    /// early drop, or the drop-head buffer's room made (its drops reported to `out`). An
    /// admitted packet's send time and ECN state, CE if PIE marked it instead of dropping it.
    #[inline(never)]
    fn admit(
        &mut self,
        packet: &Packet<P>,
        out: &mut impl FnMut(Served<P>),
    ) -> Result<SentEcn, DropReason> {
        let bytes = u64::from(packet.bytes);
        if let Some(pie) = &mut self.pie {
            pie.catch_up(packet.enqueued.as_micros());
        }
        if !self.fits(bytes) {
            let alone_too_big = self.admission.bytes.is_some_and(|n| bytes > n)
                || self.admission.packets == Some(0);
            if !self.admission.drop_head || alone_too_big {
                if let Some(pie) = &mut self.pie {
                    pie.on_overflow();
                }
                return Err(DropReason::Buffer);
            }
        }
        let waiting = self.waiting_bytes();
        let mut sent = packet.sent;
        if let Some(pie) = &mut self.pie {
            // With ECN, PIE marks an ECN-capable packet instead while its drop probability
            // is at most 10% (RFC 8033 section 5.1, Linux's `MAX_PROB / 10`).
            if pie.drop_early(waiting)
                && !(pie.may_mark() && self.marking.aqm_mark(&mut sent, packet.bytes))
            {
                return Err(DropReason::Aqm);
            }
        }
        while !self.fits(bytes) {
            let oldest_waiting = usize::from(self.head_in_transit);
            if !self.drop_at(oldest_waiting, DropReason::Buffer, out) {
                break;
            }
        }
        Ok(sent)
    }

    /// Dequeues (in the RFC's sense) the packet at the head to start transmitting it, applying
    /// the discipline's head drops. Returns false if the queue is (or became) empty.
    #[inline]
    fn start_head(&mut self, now_us: u64, out: &mut impl FnMut(Served<P>)) -> bool {
        match self.config {
            QueueConfig::DropTail { .. } => {}
            QueueConfig::CoDel {
                target_us,
                interval_us,
                ..
            } => {
                let (target, interval) = (target_us.as_micros(), interval_us.as_micros());
                let mut codel = std::mem::take(&mut self.codel);
                codel.dequeue(
                    &mut FifoCoDel { queue: self, out },
                    now_us,
                    target,
                    interval,
                );
                self.codel = codel;
            }
            // A FIFO never runs FQ-CoDel (the link gives it its own queue).
            QueueConfig::FqCodel { .. } => {}
            QueueConfig::Pie { .. } => self.pie_dequeue(now_us),
        }
        let Some(head) = self.packets.front_mut() else {
            return false;
        };
        if self.marking.step_us.is_some() {
            let sojourn = now_us.saturating_sub(head.enqueued.as_micros());
            self.marking.step_mark(&mut head.sent, head.bytes, sojourn);
        }
        self.head_in_transit = true;
        true
    }

    /// PIE's view of the head packet's dequeue at `now_us`: its sojourn time.
    #[inline(never)]
    fn pie_dequeue(&mut self, now_us: u64) {
        let Some(pie) = &mut self.pie else {
            return;
        };
        pie.catch_up(now_us);
        if let Some(p) = self.packets.front() {
            let sojourn = now_us.saturating_sub(p.enqueued.as_micros());
            pie.on_dequeue(sojourn, self.packets.len() == 1);
        }
    }

    /// Removes the packet at `index`, not started, and reports its drop; false if there is none.
    fn drop_at(
        &mut self,
        index: usize,
        reason: DropReason,
        out: &mut impl FnMut(Served<P>),
    ) -> bool {
        let Some(p) = self.packets.remove(index) else {
            return false;
        };
        self.total_bytes -= u64::from(p.bytes);
        self.remaining_bytes -= u64::from(p.bytes);
        if index == 0 {
            self.head_remaining = self.packets.front().map_or(0, |q| q.bytes);
        }
        out(Served::Dropped(p, index, reason));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ecn::{Ecn, MarkReason};

    fn packet(i: usize, ecn: Ecn) -> Packet<usize> {
        Packet {
            sent: SentEcn::new(Instant::ZERO, ecn),
            enqueued: Instant::ZERO,
            bytes: 1500,
            flow: 0,
            payload: i,
        }
    }

    /// A PIE queue with ECN forced to drop probability `p` and a 40 ms queue delay, offered
    /// 400 packets of `ecn` at once: (marked, dropped by PIE).
    fn pie_offers(p: f64, ecn: Ecn, marks: bool) -> (usize, usize) {
        let marking = Marking {
            ecn: marks,
            ..Marking::default()
        };
        let mut q = ByteQueue::new(QueueConfig::pie(), Admission::default(), 1, marking);
        if let Some(pie) = &mut q.pie {
            pie.force(p, 40_000);
        }
        let mut dropped = 0;
        for i in 0..400 {
            match q.offer(packet(i, ecn), &mut |_| {}) {
                Ok(()) => {}
                Err((_, reason)) => {
                    assert_eq!(reason, DropReason::Aqm);
                    dropped += 1;
                }
            }
        }
        let marked = q.packets.iter().filter(|p| p.sent.mark().is_some()).count();
        assert!(q
            .packets
            .iter()
            .all(|p| (p.sent.mark() == Some(MarkReason::Aqm)) == (p.sent.ecn() == Ecn::Ce)));
        assert_eq!(q.marking.aqm.0, marked as u64);
        (marked, dropped)
    }

    #[test]
    fn pie_marks_at_and_under_ten_percent_and_drops_above() {
        // At 5% and 10%, every early drop of an ECT packet is a mark (400 arrivals accumulate
        // past RFC 8033's 8.5 at least twice, so at least two decisions are made).
        for p in [0.05, 0.1] {
            for ecn in [Ecn::Ect0, Ecn::Ect1] {
                let (marked, dropped) = pie_offers(p, ecn, true);
                assert!(marked >= 2, "{p} {ecn:?}: {marked}");
                assert_eq!(dropped, 0);
            }
            // Without ECN, or for a Not-ECT packet, the same decisions drop.
            let (marked, dropped) = pie_offers(p, Ecn::Ect0, false);
            assert_eq!(marked, 0);
            assert!(dropped >= 2);
            assert_eq!(pie_offers(p, Ecn::NotEct, true), (0, dropped));
        }
        // Above 10%, ECT packets are dropped too.
        for p in [0.1001, 0.3] {
            let (marked, dropped) = pie_offers(p, Ecn::Ect0, true);
            assert_eq!(marked, 0, "{p}");
            assert!(dropped >= 10, "{p}: {dropped}");
            assert_eq!(pie_offers(p, Ecn::Ect0, false), (0, dropped));
        }
    }
}
