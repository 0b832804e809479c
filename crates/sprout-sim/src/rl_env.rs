//! A sans-IO stepping environment for learned congestion controllers (the Rust side of
//! `sprout.gym.CellularLinkEnv`).
//!
//! The simulator's trace-driven link ([`sprout_link::Link`]) in both directions and its clock:
//! the agent's sender sends MTU-sized packets on the *data* direction (the downlink by default)
//! at the rate, or within the window, that the agent sets each step; a receiver at the far end
//! records every delivery and its one-way delay, runs a Sprout receiver model (the estimator of
//! `sprout_core`, fed with the bytes that arrived in each 20 ms tick) and, at the end of every
//! tick, sends a small report back on the *reverse* direction (feedback packets cross the other
//! trace, so they are delayed and lost in its outages as a real receiver's would be). The
//! agent's observation is the latest report that reached the sender, plus what the sender knows
//! itself. The reward is computed from what really happened at the receiver during the step.
//!
//! # Time
//!
//! All times are microseconds (`_us`) of the link's clock, which is the trace's clock: an
//! episode starts at `start_us` (a whole millisecond of the trace drawn from the seed, or 0)
//! and lasts [`EnvConfig::episode_us`]. One step is [`EnvConfig::ticks_per_step`] ticks of
//! the model's tick length (20 ms). Nothing here reads a clock or does IO.
//!
//! # Within a tick `[T, T + tick]`
//!
//! 1. The reverse link delivers the reports due in `(T, T + tick]`; in window mode the sender
//!    sends, at each report's arrival, whatever its window then allows.
//! 2. In rate mode the sender sends its paced packets with send times in `[T, T + tick)`; in
//!    window mode it sends at `T` what the window allows (so at the start of a step, after the
//!    action).
//! 3. The data link runs to `T + tick`; the receiver records deliveries, losses (gaps in the
//!    byte sequence: both links are FIFO, so a gap below a delivered packet is a loss) and the
//!    delay function.
//! 4. The Sprout model ticks: evolve, then observe the tick's bytes in MTU-sized packets (at
//!    least one if any byte came), or observe an empty tick only if the data link held a packet
//!    of ours at some time in the tick (the stand-in for Sprout's time-to-next: an idle sender's
//!    silence says nothing about the link); then forecast. The report leaves on the reverse link
//!    at `T + tick` ([`FeedbackPath::Reverse`]), or reaches the sender at once
//!    ([`FeedbackPath::Instant`]).
//!
//! # Reward (per step)
//!
//! `throughput_weight x throughput (Mbit/s) - delay_weight x self-inflicted delay (s) -
//! loss_weight x loss (Mbit/s)`, defaults 1, [`DEFAULT_DELAY_WEIGHT`] and 0. Throughput is the
//! wire bytes delivered in the step over the step's length. The step's self-inflicted delay is
//! the mean, over the step's 1 ms sampling instants (`T + 1 ms, ..., T + step`), of the
//! paper's delay function (now minus the send time of the most recently sent packet delivered)
//! minus the omniscient sender's (now minus one propagation delay before the latest
//! opportunity), both with a virtual packet sent and delivered at the episode's start. It is
//! never negative (a packet departs at an opportunity at least one propagation delay after
//! being sent), and summed over an episode's steps it is the time integral of the
//! self-inflicted delay divided by the step length, whatever the step length. Loss is the wire
//! bytes of our packets dropped or lost on the data link in the step.
//!
//! # Application traffic
//!
//! With [`EnvConfig::app`] bulk (the default) the sender always has data, as above. With a
//! constant, video or adaptive application ([`App`]), the sender sends only what the
//! application has handed it: each message (a datagram of a constant stream, a video frame)
//! is cut into datagrams of at most [`EnvConfig::packet_bytes`] (no header is added: a
//! datagram's wire size is its application bytes) and waits in the sender's queue. In rate
//! mode the pacer sends the queue's next datagram at each paced instant (the next instant one
//! datagram's length at the rate after the last), and while the queue is empty waits for the
//! application's next message; in window mode the sender sends what the window allows at the
//! tick's start, at each report's arrival and at each message's creation. Adaptive video sizes
//! each frame by what the transport allows when it is captured: the rate times one frame
//! interval (rate mode), or the window less what is in flight (window mode). The step's info
//! adds the application's figures (`app_*`: bytes offered, the sender's backlog, the
//! application-level delay of the messages completed in the step) and
//! [`RlEnv::app_metrics`] gives the episode's ([`AppMetrics`]). The reward is unchanged: it
//! sees the network only, not the time data waits in the sender.
//!
//! # Determinism
//!
//! The same configuration, seed and actions give the identical episode (bit for bit): the
//! start, the losses and a synthetic link are drawn from `ChaCha8Rng`s seeded from the seed,
//! and nothing else is random.

use std::collections::VecDeque;
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use sprout_core::estimator::{self, Estimator};
use sprout_core::wire::MAX_FORECAST_TICKS;
use sprout_core::{Config, Instant};
use sprout_link::{Link, LinkConfig, LinkEvent, SyntheticLink, Trace};

use crate::app::{App, Source};
use crate::app_metrics::{self, AppMetrics, Ledger};
use crate::error::{SimError, UnknownName};
use crate::metrics::{self, Arrival, DirectionMetrics, Window};
use crate::sim::{Direction, MAX_APP_DATAGRAMS, MAX_SENDER_BACKLOG_BYTES};

/// Default weight of the self-inflicted delay in the reward: Mbit/s of throughput per second
/// of self-inflicted delay (10: 100 ms of delay costs as much as 1 Mbit/s).
pub const DEFAULT_DELAY_WEIGHT: f64 = 10.0;

/// Default largest sending rate the agent may set, Mbit/s (the action space's upper bound).
pub const DEFAULT_MAX_RATE_MBPS: f64 = 48.0;

/// Default largest window the agent may set, kilobytes (1000 bytes).
pub const DEFAULT_MAX_WINDOW_KB: f64 = 2000.0;

/// Default wire size of a report on the reverse link, bytes (a Sprout header with an 8-tick
/// forecast, UDP/IP and the security layer's overhead, rounded up).
pub const DEFAULT_FEEDBACK_BYTES: u32 = 100;

/// Ticks over which the report's averaged delivery rate and loss rate are taken (100 ms).
pub const AVERAGE_TICKS: usize = 5;

/// Longest episode accepted, microseconds (one hour): the episode's records grow with it.
pub const MAX_EPISODE_US: u64 = 3_600_000_000;

/// Delay sampling step of the reward's self-inflicted delay, microseconds (1 ms, as the
/// paper's scorer).
pub const DELAY_SAMPLE_US: u64 = 1_000;

/// What the agent's action sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActionKind {
    /// The sending rate, Mbit/s of wire bytes, paced evenly (one packet every
    /// `packet_bytes x 8 / rate`).
    Rate,
    /// The window, kilobytes: the sender keeps at most this many bytes sent and not yet
    /// reported delivered or lost, sending as soon as a report (or a larger window) allows.
    Window,
}

impl std::str::FromStr for ActionKind {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, UnknownName> {
        match s {
            "rate" => Ok(ActionKind::Rate),
            "window" => Ok(ActionKind::Window),
            _ => Err(UnknownName {
                what: "action",
                name: s.to_string(),
                choices: "expected rate or window".into(),
            }),
        }
    }
}

/// How the receiver's reports reach the sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FeedbackPath {
    /// As packets of [`EnvConfig::feedback_bytes`] on the reverse direction's link (its trace,
    /// propagation delay, queue and loss).
    Reverse,
    /// At once, at the end of the tick (an idealised, delay-free return path).
    Instant,
}

impl std::str::FromStr for FeedbackPath {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, UnknownName> {
        match s {
            "reverse" => Ok(FeedbackPath::Reverse),
            "instant" => Ok(FeedbackPath::Instant),
            _ => Err(UnknownName {
                what: "feedback path",
                name: s.to_string(),
                choices: "expected reverse or instant".into(),
            }),
        }
    }
}

/// Where the link's delivery opportunities come from.
#[derive(Clone, Debug)]
pub enum LinkSource {
    /// A pair of traces (as `sprout sim --uplink --downlink`), replayed from a start drawn from
    /// the seed (or from 0, see [`EnvConfig::random_start`]), looping if the episode runs past
    /// the end.
    Traces {
        /// Mobile to server.
        uplink: Arc<Trace>,
        /// Server to mobile.
        downlink: Arc<Trace>,
    },
    /// The paper's synthetic link model: a fresh trace per direction and episode, generated
    /// from the episode's seed (the model's own `seed` and `duration_s` are replaced: the
    /// length is the episode's).
    Synthetic(SyntheticLink),
}

/// The reward's weights (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RewardWeights {
    /// Per Mbit/s of throughput. Default 1.
    pub throughput: f64,
    /// Per second of the step's self-inflicted delay. Default [`DEFAULT_DELAY_WEIGHT`].
    pub delay: f64,
    /// Per Mbit/s of our bytes dropped or lost on the data link. Default 0.
    pub loss: f64,
}

impl Default for RewardWeights {
    fn default() -> Self {
        RewardWeights {
            throughput: 1.0,
            delay: DEFAULT_DELAY_WEIGHT,
            loss: 0.0,
        }
    }
}

/// The environment's configuration.
#[derive(Clone, Debug)]
pub struct EnvConfig {
    /// The link.
    pub source: LinkSource,
    /// The direction the agent's data travels (the reports travel the other way). Default
    /// [`Direction::Down`].
    pub data_direction: Direction,
    /// Both directions' link model: propagation delay, queue, loss (`seed` is replaced by
    /// streams of the episode's seed; `looping` is forced on, so an episode never runs off a
    /// trace's end). Default [`LinkConfig::default`] (20 ms, unlimited drop-tail, no loss).
    pub link: LinkConfig,
    /// Ticks per step (1 or more). Default 1.
    pub ticks_per_step: u32,
    /// What the action sets. Default [`ActionKind::Rate`].
    pub action: ActionKind,
    /// Upper bound of a rate action, Mbit/s (larger actions are clipped to it).
    pub max_rate_mbps: f64,
    /// Upper bound of a window action, kilobytes (larger actions are clipped to it).
    pub max_window_kb: f64,
    /// Wire size of each data packet, bytes. Default 1500 (one opportunity, one model packet).
    pub packet_bytes: u32,
    /// Wire size of each report on the reverse link, bytes. Default [`DEFAULT_FEEDBACK_BYTES`].
    pub feedback_bytes: u32,
    /// How reports reach the sender. Default [`FeedbackPath::Reverse`].
    pub feedback: FeedbackPath,
    /// Length of an episode, microseconds (1 step ..= [`MAX_EPISODE_US`]). Default 30 s.
    pub episode_us: u64,
    /// Whether a trace pair is replayed from a start drawn from the seed (uniform over the
    /// whole milliseconds that leave a full episode before the shorter trace's end, or over
    /// its whole length if it is shorter than an episode); if false, from 0. Default true.
    pub random_start: bool,
    /// The reward's weights.
    pub reward: RewardWeights,
    /// The Sprout configuration of the receiver's model (its tick length, forecast horizon,
    /// estimator and confidence are used). Default [`Config::default`] (the paper's).
    pub protocol: Config,
    /// What the application at the sender offers (see the module docs). Default
    /// [`App::Bulk`]: the sender always has data.
    pub app: App,
}

impl EnvConfig {
    /// The defaults (see each field) over `source`.
    pub fn new(source: LinkSource) -> Self {
        EnvConfig {
            source,
            data_direction: Direction::Down,
            link: LinkConfig::default(),
            ticks_per_step: 1,
            action: ActionKind::Rate,
            max_rate_mbps: DEFAULT_MAX_RATE_MBPS,
            max_window_kb: DEFAULT_MAX_WINDOW_KB,
            packet_bytes: 1500,
            feedback_bytes: DEFAULT_FEEDBACK_BYTES,
            feedback: FeedbackPath::Reverse,
            episode_us: 30_000_000,
            random_start: true,
            reward: RewardWeights::default(),
            protocol: Config::default(),
            app: App::Bulk,
        }
    }

    /// Length of one step, microseconds.
    pub fn step_us(&self) -> u64 {
        self.protocol.model.tick_us.as_micros() * u64::from(self.ticks_per_step)
    }

    /// Number of steps in an episode (the last one may end past `episode_us`).
    pub fn episode_steps(&self) -> u64 {
        self.episode_us.div_ceil(self.step_us().max(1))
    }

    /// Checks the configuration, describing the first problem found.
    pub fn validate(&self) -> Result<(), SimError> {
        let invalid = |msg: String| Err(SimError::InvalidOption(msg));
        self.protocol.validate()?;
        self.link.validate()?;
        if self.ticks_per_step == 0 {
            return invalid("ticks_per_step must be at least 1".into());
        }
        let tick_us = self.protocol.model.tick_us.as_micros();
        if tick_us.checked_rem(DELAY_SAMPLE_US) != Some(0) {
            return invalid(format!(
                "the model's tick ({} us) must be a whole number of milliseconds",
                tick_us
            ));
        }
        if !(self.max_rate_mbps > 0.0 && self.max_rate_mbps.is_finite()) {
            return invalid(format!(
                "max_rate_mbps must be positive, got {}",
                self.max_rate_mbps
            ));
        }
        if !(self.max_window_kb > 0.0 && self.max_window_kb.is_finite()) {
            return invalid(format!(
                "max_window_kb must be positive, got {}",
                self.max_window_kb
            ));
        }
        if self.packet_bytes == 0 || self.packet_bytes > 65_535 {
            return invalid(format!(
                "packet_bytes must be 1..=65535, got {}",
                self.packet_bytes
            ));
        }
        if self.feedback_bytes == 0 || self.feedback_bytes > 65_535 {
            return invalid(format!(
                "feedback_bytes must be 1..=65535, got {}",
                self.feedback_bytes
            ));
        }
        if self.episode_us < self.step_us() || self.episode_us > MAX_EPISODE_US {
            return invalid(format!(
                "an episode must last from one step ({} ms) to {} s, got {} s",
                self.step_us() / 1000,
                MAX_EPISODE_US / 1_000_000,
                self.episode_us as f64 / 1e6
            ));
        }
        for (name, w) in [
            ("throughput", self.reward.throughput),
            ("delay", self.reward.delay),
            ("loss", self.reward.loss),
        ] {
            if !w.is_finite() {
                return invalid(format!("reward weight {name} must be finite, got {w}"));
            }
        }
        self.app.validate()?;
        let datagrams =
            self.app.datagrams_per_s(self.packet_bytes as usize) * self.episode_us as f64 / 1e6;
        if datagrams > MAX_APP_DATAGRAMS {
            return invalid(format!(
                "app {} would create about {datagrams:.0} datagrams in an episode, more than \
                 the {MAX_APP_DATAGRAMS:.0} one episode may hold",
                self.app
            ));
        }
        if let LinkSource::Synthetic(s) = &self.source {
            if !(s.max_rate > 0.0 && s.max_rate.is_finite()) {
                return invalid(format!(
                    "synthetic link: max_rate must be positive, got {}",
                    s.max_rate
                ));
            }
        }
        Ok(())
    }
}

/// Names of the observation's features, in order (the forecast's entries follow them:
/// `forecast_1` .. `forecast_H`, H = the model's `forecast_ticks`).
pub const OBSERVATION_FEATURES: [&str; 8] = [
    "delivery_rate_mbps",
    "delivery_rate_avg_mbps",
    "delay_ms",
    "min_delay_ms",
    "loss_rate",
    "inflight_kb",
    "send_rate_mbps",
    "report_age_ms",
];

/// What happened in one step (ground truth at the receiver and on the data link).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepInfo {
    /// Time since the episode's start at the end of the step, seconds.
    pub time_s: f64,
    /// Wire bytes delivered to the receiver in the step, as Mbit/s.
    pub throughput_mbps: f64,
    /// The trace's offered capacity in the step (opportunities x their bytes), Mbit/s.
    pub capacity_mbps: f64,
    /// Mean of the delay function over the step's 1 ms instants, seconds.
    pub delay_s: f64,
    /// Mean of (delay function - the omniscient sender's) over the same instants, seconds.
    pub self_inflicted_s: f64,
    /// Wire bytes sent in the step.
    pub sent_bytes: u64,
    /// Wire bytes delivered in the step.
    pub delivered_bytes: u64,
    /// Wire bytes of our packets dropped or lost on the data link in the step.
    pub lost_bytes: u64,
    /// Bytes in the data link's queue at the end of the step.
    pub queue_bytes: u64,
    /// The action as applied (clipped to its bounds): Mbit/s or kilobytes.
    pub action: f64,
    /// The reward of the step.
    pub reward: f64,
    /// Application bytes the application created in the step, Mbit/s (0 for bulk).
    pub app_offered_mbps: f64,
    /// Application bytes waiting in the sender at the end of the step (0 for bulk).
    pub app_backlog_bytes: u64,
    /// Messages (datagrams of a constant stream, video frames) whose last byte reached the
    /// receiver in the step (0 for bulk).
    pub app_messages: u64,
    /// Median application-level delay (creation to the last byte's arrival) of those
    /// messages, ms; `None` for bulk or when no message completed in the step.
    pub app_p50_ms: Option<f64>,
    /// 95th percentile (nearest rank) of the same delays, ms; `None` likewise.
    pub app_p95_ms: Option<f64>,
    /// Share of those messages delivered within 150 ms, 0..1; `None` likewise.
    pub app_within_150ms: Option<f64>,
}

/// Result of [`RlEnv::step`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepOutcome {
    /// The step's reward.
    pub reward: f64,
    /// Always false: nothing ends an episode early.
    pub terminated: bool,
    /// True on the step that reaches the episode's length.
    pub truncated: bool,
    /// What happened.
    pub info: StepInfo,
}

/// A report from the receiver, as carried on the reverse link.
#[derive(Clone, Debug)]
struct Report {
    /// End of the tick it describes (µs).
    tick_end_us: u64,
    /// Every byte of our stream below this was delivered or lost (µs-independent; bytes).
    acked_bytes: u64,
    /// Bytes delivered in the tick.
    tick_bytes: u64,
    /// Bytes delivered and packets delivered / lost over the last ticks (up to
    /// [`AVERAGE_TICKS`]), and how many ticks that covers.
    avg_bytes: u64,
    avg_delivered: u64,
    avg_lost: u64,
    avg_ticks: u32,
    /// Delay function at the tick's end (µs).
    delay_us: u64,
    /// Smallest one-way delay of any packet delivered so far this episode (µs; 0 if none).
    min_delay_us: u64,
    /// Cumulative forecast, MTU-sized packets, for the next ticks.
    forecast: [u32; MAX_FORECAST_TICKS],
}

/// What a data packet carries through the simulated link: its first byte's sequence number and
/// the application message it is part of ([`NO_MESSAGE`] for bulk).
#[derive(Clone, Copy, Debug)]
struct Packet {
    seq: u64,
    message: u32,
}

/// [`Packet::message`] of a bulk sender's packets.
const NO_MESSAGE: u32 = u32::MAX;

/// A non-bulk application at the agent's sender: its arrival process, the messages it created
/// and the datagrams waiting to be sent.
#[derive(Clone, Debug)]
struct EnvApp {
    source: Source,
    ledger: Ledger,
    /// Datagrams waiting at the sender, in order: (message, bytes).
    queue: VecDeque<(u32, u32)>,
    /// Bytes in `queue`.
    queued_bytes: u64,
    /// Application bytes created in the current step.
    step_offered_bytes: u64,
    /// Application-level delays (µs) of the messages completed in the current step.
    step_delays_us: Vec<u64>,
}

impl EnvApp {
    /// The application of `app` starting at `start_us`; `None` for bulk.
    fn new(app: App, start_us: u64) -> Option<Box<EnvApp>> {
        Source::new(app, start_us).map(|source| {
            Box::new(EnvApp {
                source,
                ledger: Ledger::default(),
                queue: VecDeque::new(),
                queued_bytes: 0,
                step_offered_bytes: 0,
                step_delays_us: Vec::new(),
            })
        })
    }

    /// Hands the sender every message created by `until_us`, cut into datagrams of at most
    /// `max_payload` bytes; adaptive video sizes a frame by `allowance` (bytes) when nothing
    /// waits, and skips it otherwise. A message beyond [`MAX_SENDER_BACKLOG_BYTES`] is dropped
    /// at the sender (never delivered).
    fn hand_over(&mut self, until_us: u64, max_payload: u32, allowance: u64) {
        while self.source.next_us() <= until_us {
            let created = self.source.next_us();
            let idle = self.queue.is_empty();
            let Some(bytes) = self.source.emit(|| idle.then_some(allowance)) else {
                continue;
            };
            self.step_offered_bytes += bytes;
            if self.queued_bytes.saturating_add(bytes) > MAX_SENDER_BACKLOG_BYTES {
                self.ledger.open(created, bytes, 1);
                continue;
            }
            let max = u64::from(max_payload.max(1));
            let datagrams = bytes.div_ceil(max).max(1);
            let index = self.ledger.open(created, bytes, datagrams as u32);
            for k in 0..datagrams {
                let len = (bytes - k * max).min(max);
                self.queue.push_back((index, len as u32));
                self.queued_bytes += len;
            }
        }
    }

    /// A datagram of `message` reached the receiver at `at_us`.
    fn arrived(&mut self, message: u32, at_us: u64) {
        let i = message as usize;
        let done = |l: &Ledger| l.messages().get(i).and_then(|m| m.delivered_us);
        if done(&self.ledger).is_some() {
            return;
        }
        self.ledger.datagram_arrived(message, at_us);
        if let Some(t) = done(&self.ledger) {
            let created = self.ledger.messages()[i].created_us;
            self.step_delays_us.push(t.saturating_sub(created));
        }
    }
}

/// Per-tick figures the receiver keeps for its averages.
#[derive(Clone, Copy, Debug, Default)]
struct TickRecord {
    bytes: u64,
    delivered: u64,
    lost: u64,
}

/// The sans-IO environment. Create with [`RlEnv::new`], start an episode with
/// [`RlEnv::reset`], then call [`RlEnv::step`] until it reports `truncated`.
#[derive(Clone, Debug)]
pub struct RlEnv {
    cfg: EnvConfig,
    prototype: Box<dyn Estimator>,
    forecast_ticks: usize,
    // --- episode state ---
    seed: u64,
    data: Link<Packet>,
    reverse: Link<Report>,
    estimator: Box<dyn Estimator>,
    start_us: u64,
    now_us: u64,
    steps: u64,
    /// Sender: bytes sent (the next packet's sequence number).
    sent_bytes: u64,
    /// Sender: the rate (bit/s) or window (bytes) in force.
    rate_bps: f64,
    window_bytes: u64,
    /// Sender: when the last paced packet left (µs), and when the next may (ns, for exact
    /// pacing at any rate).
    next_send_ns: Option<u128>,
    last_send_ns: Option<u128>,
    /// Sender: the latest report received.
    report: Option<Report>,
    /// Sender: bytes reported delivered or lost.
    acked_bytes: u64,
    /// Sender: bytes sent in the current step.
    step_sent: u64,
    /// Receiver: end of the highest packet delivered (bytes).
    rx_expected: u64,
    /// Receiver: largest send time among delivered packets (µs; the episode's start before
    /// any), and the omniscient sender's counterpart.
    rx_max_sent_us: u64,
    omni_max_sent_us: u64,
    rx_min_delay_us: Option<u64>,
    rx_ticks: [TickRecord; AVERAGE_TICKS],
    rx_tick_count: u64,
    /// Receiver: the current tick's deliveries (arrival, send time) and opportunity times.
    tick_arrivals: Vec<(u64, u64)>,
    tick_opportunities: Vec<u64>,
    /// Scratch buffers reused every tick: reports reaching the sender (arrival, report) and
    /// data deliveries (packet, send time, arrival, bytes).
    scratch_reports: Vec<(u64, Report)>,
    scratch_delivered: Vec<(Packet, u64, u64, u32)>,
    /// Episode records (times relative to the start), for [`RlEnv::episode_metrics`].
    arrivals: Vec<Arrival>,
    opportunities: Vec<u64>,
    observation: Vec<f32>,
    /// The application at the sender (`None`: bulk).
    app: Option<Box<EnvApp>>,
}

fn rate_bps_of(mbps: f64) -> f64 {
    mbps * 1e6
}

impl RlEnv {
    /// An environment for `cfg` (validated), reset with seed 0.
    pub fn new(cfg: EnvConfig) -> Result<RlEnv, SimError> {
        let mut cfg = cfg;
        cfg.validate()?;
        cfg.link.looping = true;
        let prototype = estimator::build(&cfg.protocol);
        let forecast_ticks = cfg.protocol.model.forecast_ticks;
        let placeholder = Arc::new(Trace::from_opportunities_ms("placeholder", vec![1])?);
        let mut env = RlEnv {
            data: Link::new(placeholder.clone(), cfg.link.clone()),
            reverse: Link::new(placeholder, cfg.link.clone()),
            estimator: prototype.clone(),
            prototype,
            forecast_ticks,
            seed: 0,
            start_us: 0,
            now_us: 0,
            steps: 0,
            sent_bytes: 0,
            rate_bps: 0.0,
            window_bytes: 0,
            next_send_ns: None,
            last_send_ns: None,
            report: None,
            acked_bytes: 0,
            step_sent: 0,
            rx_expected: 0,
            rx_max_sent_us: 0,
            omni_max_sent_us: 0,
            rx_min_delay_us: None,
            rx_ticks: [TickRecord::default(); AVERAGE_TICKS],
            rx_tick_count: 0,
            tick_arrivals: Vec::new(),
            tick_opportunities: Vec::new(),
            scratch_reports: Vec::new(),
            scratch_delivered: Vec::new(),
            arrivals: Vec::new(),
            opportunities: Vec::new(),
            observation: vec![0.0; OBSERVATION_FEATURES.len() + forecast_ticks],
            app: None,
            cfg,
        };
        env.reset(0)?;
        Ok(env)
    }

    /// The configuration (with `link.looping` forced on).
    pub fn config(&self) -> &EnvConfig {
        &self.cfg
    }

    /// Length of the observation vector.
    pub fn observation_len(&self) -> usize {
        self.observation.len()
    }

    /// Names of the observation's entries, in order.
    pub fn observation_names(&self) -> Vec<String> {
        OBSERVATION_FEATURES
            .iter()
            .map(|s| s.to_string())
            .chain((1..=self.forecast_ticks).map(|h| format!("forecast_{h}")))
            .collect()
    }

    /// The action's bounds: `(0, max_rate_mbps)` or `(0, max_window_kb)`.
    pub fn action_bounds(&self) -> (f64, f64) {
        match self.cfg.action {
            ActionKind::Rate => (0.0, self.cfg.max_rate_mbps),
            ActionKind::Window => (0.0, self.cfg.max_window_kb),
        }
    }

    /// The current observation (see [`RlEnv::observation_names`]).
    pub fn observation(&self) -> &[f32] {
        &self.observation
    }

    /// The seed of the current episode.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Where the current episode started in the trace, microseconds.
    pub fn start_us(&self) -> u64 {
        self.start_us
    }

    /// Time since the episode's start, microseconds.
    pub fn elapsed_us(&self) -> u64 {
        self.now_us - self.start_us
    }

    /// Steps taken in the current episode.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The data direction's trace as replayed in this episode.
    pub fn data_trace(&self) -> &Arc<Trace> {
        self.data.trace()
    }

    /// Bytes in the data link's queue now.
    pub fn queue_bytes(&self) -> u64 {
        self.data.queue_bytes()
    }

    /// The receiver model's current rate estimate, packets/s.
    pub fn estimated_rate_pps(&self) -> f64 {
        self.estimator.rate_pps()
    }

    /// Every data packet delivered this episode (times relative to the episode's start).
    pub fn arrivals(&self) -> &[Arrival] {
        &self.arrivals
    }

    /// Every opportunity of the data link this episode (µs relative to the episode's start).
    pub fn opportunities_us(&self) -> &[u64] {
        &self.opportunities
    }

    /// The paper's metrics of the data direction over `[skip_us, elapsed)` of this episode,
    /// computed exactly as the simulator's ([`metrics::compute`], 1 ms sampling; the virtual
    /// first packet at the episode's start).
    pub fn episode_metrics(&self, skip_us: u64) -> DirectionMetrics {
        let end = self.elapsed_us();
        metrics::compute(
            &self.arrivals,
            &self.opportunities,
            self.cfg.link.opportunity_bytes,
            self.cfg.link.propagation_delay_us.as_micros(),
            Window::new(skip_us.min(end), end),
            metrics::DEFAULT_STEP_US,
        )
    }

    /// The application-level figures of the episode over `[skip_us, elapsed)`
    /// ([`app_metrics::compute`]: the messages created in that window, a message not yet
    /// delivered counting as infinitely late); `None` for a bulk sender.
    pub fn app_metrics(&self, skip_us: u64) -> Option<AppMetrics> {
        let app = self.app.as_ref()?;
        let end = self.elapsed_us();
        let window = Window::new(self.start_us + skip_us.min(end), self.start_us + end);
        Some(app_metrics::compute(app.ledger.messages(), window))
    }

    /// Application bytes waiting in the sender now (0 for bulk).
    pub fn app_backlog_bytes(&self) -> u64 {
        self.app.as_ref().map_or(0, |a| a.queued_bytes)
    }

    /// Starts a new episode with `seed`; returns the first observation.
    pub fn reset(&mut self, seed: u64) -> Result<&[f32], SimError> {
        let (data_trace, reverse_trace, start_us) = self.episode_traces(seed)?;
        let stream = |s: u64| {
            let mut l = self.cfg.link.clone();
            l.seed = seed.wrapping_mul(2).wrapping_add(s);
            l
        };
        let (data_stream, reverse_stream) = match self.cfg.data_direction {
            Direction::Down => (0, 1),
            Direction::Up => (1, 0),
        };
        self.data = Link::new(data_trace, stream(data_stream));
        self.reverse = Link::new(reverse_trace, stream(reverse_stream));
        // Run both links (empty) to the start: the opportunities before it go unused.
        let start = Instant::from_micros(start_us);
        self.data.advance(start, &mut |_| {});
        self.reverse.advance(start, &mut |_| {});
        self.seed = seed;
        self.estimator = self.prototype.clone();
        self.start_us = start_us;
        self.now_us = start_us;
        self.steps = 0;
        self.sent_bytes = 0;
        self.rate_bps = 0.0;
        self.window_bytes = 0;
        self.next_send_ns = None;
        self.last_send_ns = None;
        self.report = None;
        self.acked_bytes = 0;
        self.step_sent = 0;
        self.rx_expected = 0;
        self.rx_max_sent_us = start_us;
        self.omni_max_sent_us = start_us;
        self.rx_min_delay_us = None;
        self.rx_ticks = [TickRecord::default(); AVERAGE_TICKS];
        self.rx_tick_count = 0;
        self.tick_arrivals.clear();
        self.tick_opportunities.clear();
        self.arrivals.clear();
        self.opportunities.clear();
        self.app = EnvApp::new(self.cfg.app, start_us);
        self.fill_observation();
        Ok(&self.observation)
    }

    /// The traces of an episode (data, reverse) and its start.
    fn episode_traces(&self, seed: u64) -> Result<(Arc<Trace>, Arc<Trace>, u64), SimError> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x524c_454e_5653_5452);
        let (up, down, start_us) = match &self.cfg.source {
            LinkSource::Traces { uplink, downlink } => {
                let period_ms = uplink.period_ms().min(downlink.period_ms());
                let episode_ms = self.cfg.episode_us.div_ceil(1000);
                let start_ms = if !self.cfg.random_start {
                    0
                } else if period_ms > episode_ms {
                    rng.gen_range(0..=period_ms - episode_ms)
                } else {
                    rng.gen_range(0..period_ms)
                };
                (uplink.clone(), downlink.clone(), start_ms * 1000)
            }
            LinkSource::Synthetic(model) => {
                let duration_s = self.cfg.episode_us as f64 / 1e6;
                let make = |name: &str, s: u64| {
                    let m = SyntheticLink {
                        seed: s,
                        duration_s,
                        ..model.clone()
                    };
                    Arc::new(m.generate(name))
                };
                let (su, sd) = (rng.gen::<u64>(), rng.gen::<u64>());
                (make("synthetic.up", su), make("synthetic.down", sd), 0)
            }
        };
        Ok(match self.cfg.data_direction {
            Direction::Down => (down, up, start_us),
            Direction::Up => (up, down, start_us),
        })
    }

    /// Applies `action` (Mbit/s or kilobytes; NaN counts as 0, the value is clipped to its
    /// bounds) and runs one step. Stepping past the episode's end keeps running the link (the
    /// outcome says `truncated` again).
    pub fn step(&mut self, action: f64) -> StepOutcome {
        let (lo, hi) = self.action_bounds();
        let action = if action.is_nan() {
            0.0
        } else {
            action.clamp(lo, hi)
        };
        match self.cfg.action {
            ActionKind::Rate => self.set_rate(rate_bps_of(action)),
            ActionKind::Window => self.window_bytes = (action * 1000.0).round() as u64,
        }
        let step_start = self.now_us;
        self.step_sent = 0;
        if let Some(app) = self.app.as_mut() {
            app.step_offered_bytes = 0;
            app.step_delays_us.clear();
        }
        let mut acc = StepAccumulator::default();
        for _ in 0..self.cfg.ticks_per_step {
            self.run_tick(&mut acc);
        }
        self.steps += 1;
        let step_s = (self.now_us - step_start) as f64 / 1e6;
        let samples = acc.samples.max(1) as f64;
        let mbps = |bytes: u64| bytes as f64 * 8.0 / step_s / 1e6;
        let mut info = StepInfo {
            time_s: self.elapsed_us() as f64 / 1e6,
            throughput_mbps: mbps(acc.delivered_bytes),
            capacity_mbps: mbps(acc.offered_bytes),
            delay_s: acc.delay_sum_us as f64 / samples / 1e6,
            self_inflicted_s: acc.self_inflicted_sum_us as f64 / samples / 1e6,
            sent_bytes: self.step_sent,
            delivered_bytes: acc.delivered_bytes,
            lost_bytes: acc.lost_bytes,
            queue_bytes: self.data.queue_bytes(),
            action,
            reward: 0.0,
            ..StepInfo::default()
        };
        if let Some(app) = self.app.as_ref() {
            let d = &app.step_delays_us;
            let ms = |p: f64| (!d.is_empty()).then(|| metrics::percentile(d, p) / 1e3);
            info.app_offered_mbps = mbps(app.step_offered_bytes);
            info.app_backlog_bytes = app.queued_bytes;
            info.app_messages = d.len() as u64;
            info.app_p50_ms = ms(50.0);
            info.app_p95_ms = ms(95.0);
            info.app_within_150ms = (!d.is_empty()).then(|| {
                let within = d.iter().filter(|&&x| x <= 150_000).count();
                within as f64 / d.len() as f64
            });
        }
        let w = self.cfg.reward;
        info.reward = w.throughput * info.throughput_mbps
            - w.delay * info.self_inflicted_s
            - w.loss * mbps(acc.lost_bytes);
        self.fill_observation();
        StepOutcome {
            reward: info.reward,
            terminated: false,
            truncated: self.elapsed_us() >= self.cfg.episode_us,
            info,
        }
    }

    /// Sets the pacing rate (bit/s): the next packet leaves one new interval after the last.
    fn set_rate(&mut self, rate_bps: f64) {
        if rate_bps == self.rate_bps {
            return;
        }
        self.rate_bps = rate_bps;
        self.next_send_ns = if rate_bps <= 0.0 {
            None
        } else {
            let now_ns = u128::from(self.now_us) * 1000;
            let interval = self.interval_ns();
            Some(match self.last_send_ns {
                Some(last) => (last + interval).max(now_ns),
                None => now_ns,
            })
        };
    }

    /// Time between paced packets at the current rate, nanoseconds (at least 1).
    fn interval_ns(&self) -> u128 {
        self.interval_ns_for(self.cfg.packet_bytes)
    }

    /// Time a datagram of `bytes` takes at the current rate, nanoseconds (at least 1).
    fn interval_ns_for(&self, bytes: u32) -> u128 {
        let ns = (f64::from(bytes) * 8.0 * 1e9 / self.rate_bps).round();
        if ns.is_finite() && ns >= 1.0 {
            ns.min(1e30) as u128
        } else {
            1
        }
    }

    /// Sends one data packet at `t_us`.
    fn send_packet(&mut self, t_us: u64) {
        self.send_datagram(t_us, self.cfg.packet_bytes, NO_MESSAGE);
    }

    /// Sends a data packet of `bytes` carrying part of `message` at `t_us`.
    fn send_datagram(&mut self, t_us: u64, bytes: u32, message: u32) {
        let at = Instant::from_micros(t_us);
        let packet = Packet {
            seq: self.sent_bytes,
            message,
        };
        self.data.send(at, bytes, packet);
        self.sent_bytes += u64::from(bytes);
        self.step_sent += u64::from(bytes);
    }

    /// What the transport allows the application to hand over now (adaptive video's frame
    /// size), bytes: the rate times one frame interval, or the window less what is in flight.
    fn app_allowance(&self) -> u64 {
        match self.cfg.action {
            ActionKind::Rate => {
                let per_s = self.cfg.app.messages_per_s().max(f64::MIN_POSITIVE);
                (self.rate_bps / 8.0 / per_s).floor().min(u64::MAX as f64) as u64
            }
            ActionKind::Window => self
                .window_bytes
                .saturating_sub(self.sent_bytes - self.acked_bytes),
        }
    }

    /// The application hands the sender what it created by `until_us`.
    fn hand_over(&mut self, until_us: u64) {
        let allowance = self.app_allowance();
        let max = self.cfg.packet_bytes;
        if let Some(app) = self.app.as_mut() {
            app.hand_over(until_us, max, allowance);
        }
    }

    /// Rate mode with an application: the paced datagrams of `[now, t1)`, each at its paced
    /// instant if the queue holds one then; an empty queue moves the next instant to the
    /// application's next message.
    fn app_rate_sends(&mut self, t1: u64) {
        let end_ns = u128::from(t1) * 1000;
        while let Some(next) = self.next_send_ns {
            if next >= end_ns {
                break;
            }
            let at_us = (next / 1000) as u64;
            self.hand_over(at_us);
            let Some(app) = self.app.as_mut() else {
                break;
            };
            if let Some((message, len)) = app.queue.pop_front() {
                app.queued_bytes -= u64::from(len);
                self.send_datagram(at_us, len, message);
                self.last_send_ns = Some(next);
                self.next_send_ns = Some(next + self.interval_ns_for(len));
            } else {
                // Every message due by `at_us` is handed over, so this is later than `next`.
                let due = u128::from(app.source.next_us()) * 1000;
                self.next_send_ns = Some(next.max(due));
            }
        }
        self.hand_over(t1 - 1);
    }

    /// Window mode with an application: hands over what is due by `t_us` and sends at `t_us`
    /// the queued datagrams the window allows.
    fn app_window_send(&mut self, t_us: u64) {
        self.hand_over(t_us);
        loop {
            let Some(app) = self.app.as_mut() else {
                return;
            };
            let Some(&(message, len)) = app.queue.front() else {
                return;
            };
            if self.sent_bytes - self.acked_bytes + u64::from(len) > self.window_bytes {
                return;
            }
            app.queue.pop_front();
            app.queued_bytes -= u64::from(len);
            self.send_datagram(t_us, len, message);
        }
    }

    /// Window mode with an application over `[t0, t1)`: sends at `t0`, then, in time order,
    /// at each report's arrival (`reports`, in arrival order) and each message's creation.
    fn app_window_tick(&mut self, reports: &mut Vec<(u64, Report)>, t0: u64, t1: u64) {
        self.app_window_send(t0);
        let mut reports = reports.drain(..).peekable();
        loop {
            let created = self
                .app
                .as_ref()
                .map(|a| a.source.next_us())
                .filter(|&t| t < t1);
            let report_first = match (reports.peek().map(|r| r.0), created) {
                (None, None) => break,
                (Some(r), c) => c.is_none_or(|c| r <= c),
                (None, Some(_)) => false,
            };
            if report_first {
                if let Some((at_us, report)) = reports.next() {
                    self.on_report(report);
                    self.app_window_send(at_us);
                }
            } else if let Some(c) = created {
                self.app_window_send(c);
            }
        }
        self.hand_over(t1 - 1);
    }

    /// Window mode: sends at `t_us` what the window allows.
    fn send_window(&mut self, t_us: u64) {
        let bytes = u64::from(self.cfg.packet_bytes);
        while self.sent_bytes - self.acked_bytes + bytes <= self.window_bytes {
            self.send_packet(t_us);
        }
    }

    /// The sender takes in a report.
    fn on_report(&mut self, report: Report) {
        self.acked_bytes = self.acked_bytes.max(report.acked_bytes);
        self.report = Some(report);
    }

    /// Steps 1 and 2 of a tick `[t0, t1]`: the reports reach the sender, and it sends.
    fn sender_tick(&mut self, t0: u64, t1: u64) {
        let mut reports = std::mem::take(&mut self.scratch_reports);
        if self.cfg.feedback == FeedbackPath::Reverse {
            self.reverse.advance(Instant::from_micros(t1), &mut |ev| {
                if let LinkEvent::Delivered(d) = ev {
                    reports.push((d.delivered.as_micros(), d.payload));
                }
            });
        }
        if self.app.is_some() {
            match self.cfg.action {
                ActionKind::Window => self.app_window_tick(&mut reports, t0, t1),
                ActionKind::Rate => {
                    for (_, r) in reports.drain(..) {
                        self.on_report(r);
                    }
                    self.app_rate_sends(t1);
                }
            }
            self.scratch_reports = reports;
            return;
        }
        // 1. Reports reach the sender (window mode: it sends at each).
        for (at_us, r) in reports.drain(..) {
            self.on_report(r);
            if self.cfg.action == ActionKind::Window {
                self.send_window(at_us);
            }
        }
        self.scratch_reports = reports;
        // 2. The sender's own sends in the tick.
        match self.cfg.action {
            ActionKind::Window => self.send_window(t0),
            ActionKind::Rate => {
                let end_ns = u128::from(t1) * 1000;
                while let Some(next) = self.next_send_ns {
                    if next >= end_ns {
                        break;
                    }
                    self.send_packet((next / 1000) as u64);
                    self.last_send_ns = Some(next);
                    self.next_send_ns = Some(next + self.interval_ns());
                }
            }
        }
    }

    fn run_tick(&mut self, acc: &mut StepAccumulator) {
        let tick_us = self.cfg.protocol.model.tick_us.as_micros();
        let t0 = self.now_us;
        let t1 = t0 + tick_us;
        // 1-2. Reports reach the sender; it sends.
        self.sender_tick(t0, t1);
        // 3. The data link runs to the tick's end.
        let busy_at_start = self.data.queue_packets() > 0;
        let mut entered = false;
        let mut delivered = std::mem::take(&mut self.scratch_delivered);
        let (arrivals, opportunities) = (&mut self.tick_arrivals, &mut self.tick_opportunities);
        arrivals.clear();
        opportunities.clear();
        let mut lost = 0u64;
        let until = Instant::from_micros(t1);
        self.data.advance(until, &mut |ev| match ev {
            LinkEvent::Opportunity { at, .. } => opportunities.push(at.as_micros()),
            LinkEvent::Enqueued { .. } => entered = true,
            LinkEvent::Dropped { bytes, .. } | LinkEvent::HeadDropped { bytes, .. } => {
                lost += u64::from(bytes)
            }
            LinkEvent::Delivered(d) => {
                let (sent, arrived) = (d.sent.as_micros(), d.delivered.as_micros());
                delivered.push((d.payload, sent, arrived, d.bytes));
            }
        });
        let mut rec = TickRecord::default();
        for (packet, sent_us, arrived_us, bytes) in delivered.drain(..) {
            let seq = packet.seq;
            if packet.message != NO_MESSAGE {
                if let Some(app) = self.app.as_mut() {
                    app.arrived(packet.message, arrived_us);
                }
            }
            if seq > self.rx_expected {
                rec.lost += (seq - self.rx_expected).div_ceil(u64::from(self.cfg.packet_bytes));
            }
            self.rx_expected = self.rx_expected.max(seq + u64::from(bytes));
            rec.bytes += u64::from(bytes);
            rec.delivered += 1;
            let owd = arrived_us - sent_us;
            self.rx_min_delay_us = Some(self.rx_min_delay_us.map_or(owd, |m| m.min(owd)));
            self.tick_arrivals.push((arrived_us, sent_us));
            self.arrivals.push(Arrival {
                sent_us: sent_us - self.start_us,
                arrived_us: arrived_us - self.start_us,
                bytes,
                app_bytes: bytes,
                is_data: true,
            });
        }
        self.scratch_delivered = delivered;
        let prop = self.cfg.link.propagation_delay_us.as_micros();
        let start = self.start_us;
        self.opportunities
            .extend(self.tick_opportunities.iter().map(|&t| t - start));
        acc.offered_bytes +=
            self.tick_opportunities.len() as u64 * u64::from(self.cfg.link.opportunity_bytes);
        acc.delivered_bytes += rec.bytes;
        acc.lost_bytes += lost;
        // The delay function and the omniscient's at t0 + 1 ms, ..., t1.
        let (mut ia, mut io) = (0, 0);
        let mut t = t0 + DELAY_SAMPLE_US;
        while t <= t1 {
            while ia < self.tick_arrivals.len() && self.tick_arrivals[ia].0 <= t {
                self.rx_max_sent_us = self.rx_max_sent_us.max(self.tick_arrivals[ia].1);
                ia += 1;
            }
            while io < self.tick_opportunities.len() && self.tick_opportunities[io] <= t {
                let sent = self.tick_opportunities[io].saturating_sub(prop);
                self.omni_max_sent_us = self.omni_max_sent_us.max(sent);
                io += 1;
            }
            let delay = t - self.rx_max_sent_us.min(t);
            let omni = t - self.omni_max_sent_us.min(t);
            acc.delay_sum_us += delay;
            acc.self_inflicted_sum_us += delay.saturating_sub(omni);
            acc.samples += 1;
            t += DELAY_SAMPLE_US;
        }
        // 4. The receiver's model ticks and reports.
        self.estimator.evolve();
        if rec.bytes > 0 {
            let mtu = f64::from(self.cfg.protocol.model.mtu_bytes);
            self.estimator.observe((rec.bytes as f64 / mtu).max(1.0));
        } else if busy_at_start || entered {
            self.estimator.observe(0.0);
        }
        let slot = (self.rx_tick_count % AVERAGE_TICKS as u64) as usize;
        self.rx_ticks[slot] = rec;
        self.rx_tick_count += 1;
        let mut forecast = [0u32; MAX_FORECAST_TICKS];
        self.estimator
            .forecast(&mut forecast[..self.forecast_ticks]);
        let avg_ticks = self.rx_tick_count.min(AVERAGE_TICKS as u64) as u32;
        let (mut avg_bytes, mut avg_delivered, mut avg_lost) = (0, 0, 0);
        for r in &self.rx_ticks {
            avg_bytes += r.bytes;
            avg_delivered += r.delivered;
            avg_lost += r.lost;
        }
        let report = Report {
            tick_end_us: t1,
            acked_bytes: self.rx_expected,
            tick_bytes: rec.bytes,
            avg_bytes,
            avg_delivered,
            avg_lost,
            avg_ticks,
            delay_us: t1 - self.rx_max_sent_us.min(t1),
            min_delay_us: self.rx_min_delay_us.unwrap_or(0),
            forecast,
        };
        self.now_us = t1;
        match self.cfg.feedback {
            FeedbackPath::Reverse => {
                self.reverse
                    .send(Instant::from_micros(t1), self.cfg.feedback_bytes, report)
            }
            FeedbackPath::Instant => self.on_report(report),
        }
    }

    /// Builds the observation from the latest report and the sender's own state.
    fn fill_observation(&mut self) {
        let tick_s = self.cfg.protocol.model.tick_us.as_secs_f64();
        let step_s = self.cfg.step_us() as f64 / 1e6;
        let o = &mut self.observation;
        o.iter_mut().for_each(|x| *x = 0.0);
        if let Some(r) = &self.report {
            o[0] = (r.tick_bytes as f64 * 8.0 / tick_s / 1e6) as f32;
            o[1] =
                (r.avg_bytes as f64 * 8.0 / (tick_s * f64::from(r.avg_ticks.max(1))) / 1e6) as f32;
            o[2] = (r.delay_us as f64 / 1e3) as f32;
            o[3] = (r.min_delay_us as f64 / 1e3) as f32;
            let seen = r.avg_delivered + r.avg_lost;
            o[4] = if seen == 0 {
                0.0
            } else {
                (r.avg_lost as f64 / seen as f64) as f32
            };
            for (slot, &f) in o[OBSERVATION_FEATURES.len()..]
                .iter_mut()
                .zip(&r.forecast[..self.forecast_ticks])
            {
                *slot = f as f32;
            }
        }
        o[5] = ((self.sent_bytes - self.acked_bytes) as f64 / 1e3) as f32;
        o[6] = if self.steps == 0 {
            0.0
        } else {
            (self.step_sent as f64 * 8.0 / step_s / 1e6) as f32
        };
        let since = self
            .report
            .as_ref()
            .map_or(self.start_us, |r| r.tick_end_us);
        o[7] = ((self.now_us - since) as f64 / 1e3) as f32;
    }
}

/// Sums over the ticks of a step.
#[derive(Default)]
struct StepAccumulator {
    delivered_bytes: u64,
    offered_bytes: u64,
    lost_bytes: u64,
    delay_sum_us: u64,
    self_inflicted_sum_us: u64,
    samples: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use sprout_link::constant_rate_trace;

    /// A constant link of `mbps` both ways.
    fn constant(mbps: f64, seconds: f64) -> LinkSource {
        let t = Arc::new(constant_rate_trace("constant", mbps, seconds).unwrap());
        LinkSource::Traces {
            uplink: t.clone(),
            downlink: t,
        }
    }

    fn verizon_like() -> LinkSource {
        LinkSource::Synthetic(SyntheticLink::default())
    }

    fn run(env: &mut RlEnv, actions: impl Fn(usize, &[f32]) -> f64) -> Vec<(Vec<f32>, StepInfo)> {
        let mut out = Vec::new();
        let mut i = 0;
        loop {
            let a = actions(i, env.observation());
            let o = env.step(a);
            out.push((env.observation().to_vec(), o.info));
            i += 1;
            if o.truncated {
                break;
            }
        }
        out
    }

    #[test]
    fn same_seed_same_actions_identical_episode() {
        for source in [constant(6.0, 120.0), verizon_like()] {
            let mut cfg = EnvConfig::new(source);
            cfg.episode_us = 5_000_000;
            cfg.link.loss = 0.02;
            let mut a = RlEnv::new(cfg.clone()).unwrap();
            let mut b = RlEnv::new(cfg).unwrap();
            let policy = |i: usize, o: &[f32]| 2.0 + (i % 7) as f64 + f64::from(o[8]) * 0.01;
            a.reset(42).unwrap();
            b.reset(42).unwrap();
            let ra = run(&mut a, policy);
            let rb = run(&mut b, policy);
            assert_eq!(ra.len(), 250);
            assert_eq!(ra, rb);
            assert_eq!(a.arrivals(), b.arrivals());
            // Another seed gives another episode (another start; other losses).
            b.reset(43).unwrap();
            let rc = run(&mut b, policy);
            assert_ne!(ra, rc);
            // And the first seed again gives the first episode again.
            b.reset(42).unwrap();
            assert_eq!(run(&mut b, policy), ra);
        }
    }

    #[test]
    fn random_start_is_drawn_from_the_seed_within_the_trace() {
        let mut cfg = EnvConfig::new(constant(6.0, 100.0));
        cfg.episode_us = 10_000_000;
        let mut env = RlEnv::new(cfg).unwrap();
        let mut starts = Vec::new();
        for seed in 0..20 {
            env.reset(seed).unwrap();
            assert!(env.start_us() <= 90_000_000);
            assert_eq!(env.start_us() % 1000, 0);
            starts.push(env.start_us());
        }
        starts.sort_unstable();
        starts.dedup();
        assert!(starts.len() >= 18, "{starts:?}");
    }

    /// Constant 12 Mbit/s link (one 1500-byte opportunity per ms), 20 ms propagation, a fixed
    /// rate of 6 Mbit/s (one packet every 2 ms): every packet finds the queue empty and leaves
    /// at the first opportunity after it enters, so its one-way delay is 20 ms plus less than
    /// 1 ms, for the whole episode; the throughput is the rate.
    #[test]
    fn below_capacity_no_delay_growth() {
        let mut cfg = EnvConfig::new(constant(12.0, 60.0));
        cfg.episode_us = 10_000_000;
        cfg.random_start = false;
        let mut env = RlEnv::new(cfg).unwrap();
        let steps = run(&mut env, |_, _| 6.0);
        let arrivals = env.arrivals();
        // Packets sent at 0, 2, ..., 9980 ms arrive 20 ms later, by the end at 10 s.
        assert_eq!(arrivals.len(), 4991);
        for a in arrivals {
            let owd = a.arrived_us - a.sent_us;
            assert!((20_000..=21_000).contains(&owd), "{a:?}");
        }
        // After the first 20 ms (propagation) every step delivers 10 packets = 6 Mbit/s.
        for (_, info) in &steps[2..] {
            assert!((info.throughput_mbps - 6.0).abs() < 1e-9, "{info:?}");
            assert_eq!(info.lost_bytes, 0);
            assert!(info.queue_bytes <= 1500);
            // The delay function stays between 20 and 22 ms: the step's mean does.
            assert!((0.020..=0.022).contains(&info.delay_s), "{info:?}");
        }
        let m = env.episode_metrics(1_000_000);
        assert!((m.throughput_kbps - 6000.0).abs() < 1.0, "{m:?}");
        assert!(m.p95_delay_ms <= 22.0, "{m:?}");
    }

    /// Constant 12 Mbit/s (1000 packets/s), a fixed 18 Mbit/s (1500 packets/s): the queue grows
    /// by 500 packets per second, so the packet sent at time s waits 0.5 s of queue per second
    /// of s: its one-way delay is 20 ms + s/2 (within one opportunity). Delivery runs at the
    /// capacity (packet n leaves at 20 + n ms), so the delay function at t (ms, whole) is
    /// t - (t - 20) / 1.5, which grows by 1/3 s per second; the omniscient's is 20 ms.
    #[test]
    fn above_capacity_delay_grows_at_the_hand_computed_rate() {
        let mut cfg = EnvConfig::new(constant(12.0, 60.0));
        cfg.episode_us = 4_000_000;
        cfg.random_start = false;
        cfg.feedback = FeedbackPath::Instant;
        let mut env = RlEnv::new(cfg).unwrap();
        let steps = run(&mut env, |_, _| 18.0);
        for a in env.arrivals() {
            let expected = 20_000.0 + a.sent_us as f64 * 0.5;
            let owd = (a.arrived_us - a.sent_us) as f64;
            assert!(
                (owd - expected).abs() <= 1_001.0,
                "{a:?}: {owd} vs {expected}"
            );
        }
        // The link is busy from the first entry on: one packet per ms.
        for (_, info) in &steps[2..] {
            assert!((info.throughput_mbps - 12.0).abs() < 1e-9, "{info:?}");
        }
        // The step ending at 2 s: the delay function at t is t - s(t) with s(t) the send time
        // of the packet arriving at t: t = 20 ms + 1.5 s(t), so delay = t - (t - 0.02) / 1.5;
        // at t = 2 s, 0.68 s. Minus the omniscient's 20 ms (plus up to 1 ms): about 0.66 s.
        let (_, at2) = steps[99];
        assert!((at2.time_s - 2.0).abs() < 1e-9);
        let t = 1.9905f64; // the step's samples are 1.981..2.000 s, mean 1.9905
        let expected = t - (t - 0.02) / 1.5 - 0.02;
        assert!(
            (at2.self_inflicted_s - expected).abs() < 0.002,
            "{} vs {expected}",
            at2.self_inflicted_s
        );
        // Growth between consecutive seconds: (t+1) - (t+1-0.02)/1.5 - (t - (t-0.02)/1.5) = 1/3.
        let (_, at3) = steps[149];
        assert!(
            (at3.self_inflicted_s - at2.self_inflicted_s - 1.0 / 3.0).abs() < 0.002,
            "{at2:?} {at3:?}"
        );
        // With instant feedback the observed delay is the receiver's delay function at the
        // step's end, and the queue (in flight) estimate is what was sent but not delivered.
        let (obs, info) = &steps[149];
        let t = 3.0;
        let delay = t - (t - 0.02) / 1.5;
        assert!((f64::from(obs[2]) / 1e3 - delay).abs() < 0.002, "{obs:?}");
        assert!((obs[0] - 12.0).abs() < 1e-4, "{obs:?}");
        assert!(info.queue_bytes > 0);
    }

    #[test]
    fn window_mode_keeps_the_window_in_flight() {
        let mut cfg = EnvConfig::new(constant(12.0, 60.0));
        cfg.episode_us = 3_000_000;
        cfg.random_start = false;
        cfg.action = ActionKind::Window;
        let mut env = RlEnv::new(cfg).unwrap();
        // 30 kB = 20 packets, far below the 12 Mbit/s link's capacity. A packet's loop is
        // 20 ms out, up to 20 ms to the end of the tick that reports it, 20 ms back: 40 to
        // 60 ms, so the throughput lies between 20 packets / 60 ms = 4 Mbit/s and
        // 20 packets / 40 ms = 6 Mbit/s.
        let steps = run(&mut env, |_, _| 30.0);
        let late: Vec<&StepInfo> = steps[50..].iter().map(|(_, i)| i).collect();
        let mean: f64 = late.iter().map(|i| i.throughput_mbps).sum::<f64>() / late.len() as f64;
        assert!((4.0 - 1e-9..=6.0 + 1e-9).contains(&mean), "{mean}");
        for (obs, _) in &steps {
            assert!(obs[5] <= 30.0, "in flight {}", obs[5]);
        }
        // A window of more than the bandwidth-delay product fills the link.
        let mut env2 = RlEnv::new(env.config().clone()).unwrap();
        let steps = run(&mut env2, |_, _| 300.0);
        let tail: f64 = steps[50..]
            .iter()
            .map(|(_, i)| i.throughput_mbps)
            .sum::<f64>()
            / 100.0;
        assert!((tail - 12.0).abs() < 1e-6, "{tail}");
    }

    #[test]
    fn forecast_follows_the_link() {
        // A sender well above capacity keeps the queue backlogged: every tick sees the
        // link's 20 packets, and the model's cautious 1-tick forecast lands a little below.
        let mut cfg = EnvConfig::new(constant(12.0, 60.0));
        cfg.episode_us = 2_000_000;
        cfg.random_start = false;
        let mut env = RlEnv::new(cfg).unwrap();
        let steps = run(&mut env, |_, _| 20.0);
        let (obs, _) = steps.last().unwrap();
        let names = env.observation_names();
        assert_eq!(names.len(), 16);
        assert_eq!(names[8], "forecast_1");
        assert!((12.0..=20.0).contains(&obs[8]), "{obs:?}");
        assert!(obs[15] >= 100.0 && obs[15] <= 160.0, "{obs:?}");
        assert!((env.estimated_rate_pps() - 1000.0).abs() < 100.0);
        // Reports cross the reverse link: 20 ms propagation, so the latest is 20-40 ms old.
        assert!((20.0..=40.0).contains(&obs[7]), "{obs:?}");
    }

    #[test]
    fn idle_sender_does_not_teach_the_model_an_outage() {
        let mut cfg = EnvConfig::new(constant(12.0, 60.0));
        cfg.episode_us = 3_000_000;
        cfg.random_start = false;
        cfg.feedback = FeedbackPath::Instant;
        let mut env = RlEnv::new(cfg).unwrap();
        for _ in 0..50 {
            env.step(10.0);
        }
        let busy = env.estimated_rate_pps();
        for _ in 0..25 {
            env.step(0.0);
        }
        // Half a second of silence, with nothing of ours on the link: the model only evolves
        // (spreads), it does not observe empty ticks as an outage.
        let idle = env.estimated_rate_pps();
        assert!(idle > 0.7 * busy, "{busy} -> {idle}");
        // Losses through a full loss link are reported as such.
        let mut cfg = env.config().clone();
        cfg.link.loss = 0.5;
        let mut lossy = RlEnv::new(cfg).unwrap();
        for _ in 0..100 {
            lossy.step(6.0);
        }
        let loss_rate = lossy.observation()[4];
        assert!(loss_rate > 0.2 && loss_rate < 0.8, "{loss_rate}");
    }

    #[test]
    fn steps_of_several_ticks_add_up() {
        let mut cfg = EnvConfig::new(constant(12.0, 60.0));
        cfg.episode_us = 1_000_000;
        cfg.random_start = false;
        let mut one = RlEnv::new(cfg.clone()).unwrap();
        cfg.ticks_per_step = 5;
        let mut five = RlEnv::new(cfg).unwrap();
        let a = run(&mut one, |_, _| 9.0);
        let b = run(&mut five, |_, _| 9.0);
        assert_eq!(a.len(), 50);
        assert_eq!(b.len(), 10);
        // The same sends and deliveries whatever the step length.
        assert_eq!(one.arrivals(), five.arrivals());
        let delivered =
            |v: &[(Vec<f32>, StepInfo)]| -> u64 { v.iter().map(|(_, i)| i.delivered_bytes).sum() };
        assert_eq!(delivered(&a), delivered(&b));
        // The self-inflicted delay is a mean over the step's instants: 5 one-tick steps
        // average to the five-tick step.
        for k in 0..10 {
            let mean: f64 = a[5 * k..5 * k + 5]
                .iter()
                .map(|(_, i)| i.self_inflicted_s)
                .sum::<f64>()
                / 5.0;
            assert!((mean - b[k].1.self_inflicted_s).abs() < 1e-9);
        }
    }

    #[test]
    fn actions_are_clipped_and_configs_checked() {
        let mut cfg = EnvConfig::new(constant(12.0, 60.0));
        cfg.random_start = false;
        let mut env = RlEnv::new(cfg.clone()).unwrap();
        assert_eq!(env.step(f64::NAN).info.action, 0.0);
        assert_eq!(env.step(-3.0).info.action, 0.0);
        assert_eq!(env.step(1e9).info.action, DEFAULT_MAX_RATE_MBPS);
        let bad = |f: &dyn Fn(&mut EnvConfig)| {
            let mut c = cfg.clone();
            f(&mut c);
            RlEnv::new(c).is_err()
        };
        assert!(bad(&|c| c.ticks_per_step = 0));
        assert!(bad(&|c| c.episode_us = 1000));
        assert!(bad(&|c| c.episode_us = MAX_EPISODE_US + 1));
        assert!(bad(&|c| c.max_rate_mbps = f64::NAN));
        assert!(bad(&|c| c.packet_bytes = 0));
        assert!(bad(&|c| c.link.loss = 2.0));
        assert!(bad(&|c| c.reward.delay = f64::INFINITY));
        assert!(!bad(&|c| c.ticks_per_step = 3));
    }

    /// FNV-1a over a bulk episode's observations and step figures (those StepInfo had before
    /// applications came in), for a fixed seed and policy in both action modes.
    fn bulk_episode_digest(action: ActionKind) -> u64 {
        let mut cfg = EnvConfig::new(verizon_like());
        cfg.episode_us = 3_000_000;
        cfg.link.loss = 0.01;
        cfg.action = action;
        let mut env = RlEnv::new(cfg).unwrap();
        env.reset(7).unwrap();
        let policy = |i: usize, o: &[f32]| 1.0 + (i % 11) as f64 * 1.5 + f64::from(o[8]) * 0.1;
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |x: u64| {
            for b in x.to_le_bytes() {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
        };
        for (obs, i) in run(&mut env, policy) {
            obs.iter().for_each(|x| eat(u64::from(x.to_bits())));
            for f in [
                i.time_s,
                i.throughput_mbps,
                i.capacity_mbps,
                i.delay_s,
                i.self_inflicted_s,
                i.action,
                i.reward,
            ] {
                eat(f.to_bits());
            }
            for n in [i.sent_bytes, i.delivered_bytes, i.lost_bytes, i.queue_bytes] {
                eat(n);
            }
        }
        h
    }

    /// A bulk sender's episodes are the ones the environment gave before applications came
    /// in, bit for bit (digests taken from the code before the change).
    #[test]
    fn bulk_episodes_are_unchanged() {
        assert_eq!(
            format!("{:016x}", bulk_episode_digest(ActionKind::Rate)),
            "69a092d391764f95"
        );
        assert_eq!(
            format!("{:016x}", bulk_episode_digest(ActionKind::Window)),
            "8d585a1f6eec43fe"
        );
    }

    /// An environment over a constant 12 Mbit/s link (20 ms each way) whose sender is driven
    /// by `app`, starting at 0, with instant feedback.
    fn app_env(app: &str, action: ActionKind, seconds: u64) -> RlEnv {
        let mut cfg = EnvConfig::new(constant(12.0, 60.0));
        cfg.episode_us = seconds * 1_000_000;
        cfg.random_start = false;
        cfg.action = action;
        cfg.app = App::parse(app).unwrap();
        RlEnv::new(cfg).unwrap()
    }

    /// A 3 Mbit/s stream of 1200-byte datagrams (one every 3.2 ms), paced at 6 Mbit/s over a
    /// 12 Mbit/s link: each datagram leaves when it is created and waits at most one
    /// opportunity (1 ms), so its application-level delay is 20-21 ms, and the link carries
    /// the application's rate, not the pacer's.
    #[test]
    fn a_stream_below_the_rate_is_delivered_at_network_delay() {
        let mut env = app_env("constant:rate=3M", ActionKind::Rate, 4);
        let steps = run(&mut env, |_, _| 6.0);
        for (_, i) in &steps[5..] {
            assert!((i.app_offered_mbps - 3.0).abs() < 0.4, "{i:?}");
            assert!(i.app_backlog_bytes <= 1200, "{i:?}");
            let p95 = i.app_p95_ms.unwrap();
            assert!((20.0..=21.0).contains(&p95), "{i:?}");
            assert_eq!(i.app_within_150ms, Some(1.0));
            assert!(i.app_messages >= 6 && i.app_messages <= 7, "{i:?}");
            assert!((i.throughput_mbps - 2.88).abs() < 0.6, "{i:?}");
        }
        // Every datagram is application bytes: 1200 on the wire.
        assert!(env.arrivals().iter().all(|a| a.bytes == 1200));
        let m = env.app_metrics(1_000_000).unwrap();
        assert_eq!(m.messages, 937); // created in [1 s, 4 s): 3 s / 3.2 ms, rounded up
        assert!((m.offered_kbps - 3000.0).abs() < 5.0, "{m:?}");
        assert!(m.delay_p95_ms <= 21.0 && m.delay_p50_ms >= 20.0, "{m:?}");
        // The last datagrams are still in flight at the end: infinitely late so far.
        assert!(m.delivered_share > 0.99 && m.delivered_share < 1.0, "{m:?}");
        let tput = env.episode_metrics(1_000_000).throughput_kbps;
        assert!((tput - 3000.0).abs() < 50.0, "{tput}");
    }

    /// The same stream paced at 1.5 Mbit/s: the sender's queue grows by 1.5 Mbit/s, so the
    /// application-level delay grows by half a second per second while the network's delay
    /// stays at its least (the reward's self-inflicted delay is only the delay function's
    /// sawtooth between datagrams 6.4 ms apart: 3.2 ms on average).
    #[test]
    fn a_stream_above_the_rate_waits_in_the_sender() {
        let mut env = app_env("constant:rate=3M", ActionKind::Rate, 4);
        let steps = run(&mut env, |_, _| 1.5);
        let (_, last) = steps.last().unwrap();
        // 4 s x 1.5 Mbit/s = 750 kB waiting (within a datagram or two).
        assert!(
            (last.app_backlog_bytes as f64 - 750_000.0).abs() < 3_000.0,
            "{last:?}"
        );
        // Completed at ~4 s: created at t with 3.2 ms spacing, sent at 2 t: waited ~2 s.
        let p50 = last.app_p50_ms.unwrap();
        assert!((1_950.0..=2_050.0).contains(&p50), "{last:?}");
        assert_eq!(last.app_within_150ms, Some(0.0));
        assert!(last.self_inflicted_s < 0.004, "{last:?}");
        assert!((last.throughput_mbps - 1.44).abs() < 0.3, "{last:?}");
        let m = env.app_metrics(0).unwrap();
        assert!(m.delivered_share < 0.55, "{m:?}");
        assert_eq!(m.delay_p95_ms, f64::INFINITY);
    }

    #[test]
    fn window_mode_sends_each_message_as_it_comes() {
        // 60 kB of window, far above what a 3 Mbit/s stream keeps in flight (~15 kB over a
        // 40-60 ms loop): every datagram leaves at its creation.
        let mut env = app_env("constant:rate=3M", ActionKind::Window, 3);
        let steps = run(&mut env, |_, _| 60.0);
        let m = env.app_metrics(500_000).unwrap();
        assert!(m.delay_p95_ms <= 21.0 && m.delay_p50_ms >= 20.0, "{m:?}");
        assert!(steps[10..].iter().all(|(_, i)| i.app_backlog_bytes <= 1200));
        // A 6 kB window (five datagrams) is below that: the sender's queue grows.
        let mut env = app_env("constant:rate=3M", ActionKind::Window, 3);
        run(&mut env, |_, _| 6.0);
        let m = env.app_metrics(500_000).unwrap();
        assert!(m.delay_p50_ms > 200.0, "{m:?}");
        assert!(env.app_backlog_bytes() > 100_000);
    }

    #[test]
    fn video_frames_are_messages_cut_into_datagrams() {
        // 2 Mbit/s at 25 frames/s: 10 kB frames (key frames 5 times that every 2 s) in
        // datagrams of at most 1500 bytes, paced at 10 Mbit/s.
        let mut env = app_env("video:rate=2M,fps=25,key=2", ActionKind::Rate, 4);
        run(&mut env, |_, _| 10.0);
        let m = env.app_metrics(0).unwrap();
        assert_eq!(m.messages, 100);
        assert!((m.offered_kbps - 2000.0).abs() < 100.0, "{m:?}");
        assert!(env.arrivals().iter().all(|a| a.bytes <= 1500));
        assert!(env.arrivals().len() > 100 * 6);
        // A 10 kB frame's seven datagrams leave 1.2 ms apart: ~28 ms; a 41 kB key frame
        // takes 33 ms more to send.
        assert!(m.delay_p50_ms > 25.0 && m.delay_p50_ms < 35.0, "{m:?}");
        assert!(m.delay_p99_ms > 50.0 && m.delay_p99_ms < 90.0, "{m:?}");
    }

    #[test]
    fn adaptive_video_sizes_frames_by_the_rate() {
        // At 4 Mbit/s and 25 frames/s a frame is 20 kB: the application offers the rate.
        let mut env = app_env("adaptive:fps=25", ActionKind::Rate, 3);
        let steps = run(&mut env, |_, _| 4.0);
        let m = env.app_metrics(0).unwrap();
        assert!((m.offered_kbps - 4000.0).abs() < 200.0, "{m:?}");
        let mean: f64 = steps[25..]
            .iter()
            .map(|(_, i)| i.throughput_mbps)
            .sum::<f64>()
            / (steps.len() - 25) as f64;
        assert!((mean - 4.0).abs() < 0.3, "{mean}");
        // Halve the rate and the frames halve.
        let mut env = app_env("adaptive:fps=25", ActionKind::Rate, 3);
        run(&mut env, |_, _| 2.0);
        let half = env.app_metrics(0).unwrap();
        assert!((half.offered_kbps - 2000.0).abs() < 150.0, "{half:?}");
    }

    #[test]
    fn app_episodes_are_deterministic_and_bulk_has_no_app_figures() {
        for action in [ActionKind::Rate, ActionKind::Window] {
            let mut cfg = EnvConfig::new(verizon_like());
            cfg.episode_us = 3_000_000;
            cfg.link.loss = 0.01;
            cfg.action = action;
            cfg.app = App::parse("video:rate=1M").unwrap();
            let mut a = RlEnv::new(cfg.clone()).unwrap();
            let mut b = RlEnv::new(cfg).unwrap();
            let policy = |i: usize, o: &[f32]| 1.0 + (i % 11) as f64 * 1.5 + f64::from(o[8]) * 0.1;
            a.reset(7).unwrap();
            b.reset(7).unwrap();
            let (ra, rb) = (run(&mut a, policy), run(&mut b, policy));
            assert_eq!(ra, rb);
            assert_eq!(a.app_metrics(0), b.app_metrics(0));
            assert!(ra.iter().any(|(_, i)| i.app_messages > 0));
        }
        let mut bulk = app_env("bulk", ActionKind::Rate, 1);
        let steps = run(&mut bulk, |_, _| 6.0);
        assert!(bulk.app_metrics(0).is_none());
        assert!(steps.iter().all(|(_, i)| i.app_p95_ms.is_none()
            && i.app_messages == 0
            && i.app_offered_mbps == 0.0));
        let mut cfg = EnvConfig::new(constant(12.0, 60.0));
        cfg.app = App::Constant {
            rate_bps: f64::NAN,
            packet_bytes: 1200,
        };
        assert!(RlEnv::new(cfg.clone()).is_err());
        cfg.app = App::parse("constant:rate=10G,packet=1").unwrap();
        let e = RlEnv::new(cfg).unwrap_err().to_string();
        assert!(e.contains("datagrams in an episode"), "{e}");
    }
}
