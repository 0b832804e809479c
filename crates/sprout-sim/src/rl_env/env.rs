//! The environment: its state, its public API, reset and step.

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sprout_core::estimator::{self, Estimator};
use sprout_core::time::Duration;
use sprout_core::wire::MAX_FORECAST_TICKS;
use sprout_core::Instant;
use sprout_link::{Link, SyntheticLink, Trace};

use super::*;
use crate::app_metrics::{self, AppMetrics};
use crate::error::SimError;
use crate::metrics::{self, Arrival, DirectionMetrics, Window};
use crate::sim::Direction;
use crate::sim_loop::Simulation;

/// A report from the receiver, as carried on the reverse link.
#[derive(Clone, Debug)]
pub(super) struct Report {
    /// End of the tick it describes.
    pub(super) tick_end: Instant,
    /// Every byte of our stream below this was delivered or lost (µs-independent; bytes).
    pub(super) acked_bytes: u64,
    /// Bytes delivered in the tick.
    pub(super) tick_bytes: u64,
    /// Bytes delivered and packets delivered / lost over the last ticks (up to
    /// [`AVERAGE_TICKS`]), and how many ticks that covers.
    pub(super) avg_bytes: u64,
    pub(super) avg_delivered: u64,
    pub(super) avg_lost: u64,
    pub(super) avg_ticks: u32,
    /// Delay function at the tick's end.
    pub(super) delay: Duration,
    /// Smallest one-way delay of any packet delivered so far this episode (0 if none).
    pub(super) min_delay: Duration,
    /// Cumulative forecast, MTU-sized packets, for the next ticks.
    pub(super) forecast: [u32; MAX_FORECAST_TICKS],
}

/// What a data packet carries through the simulated link: its first byte's sequence number and
/// the application message it is part of ([`NO_MESSAGE`] for bulk).
#[derive(Clone, Copy, Debug)]
pub(super) struct Packet {
    pub(super) seq: u64,
    pub(super) message: u32,
}

/// [`Packet::message`] of a bulk sender's packets.
pub(super) const NO_MESSAGE: u32 = u32::MAX;

/// Per-tick figures the receiver keeps for its averages.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct TickRecord {
    pub(super) bytes: u64,
    pub(super) delivered: u64,
    pub(super) lost: u64,
}

/// The sans-IO environment. Create with [`RlEnv::new`], start an episode with
/// [`RlEnv::reset`], then call [`RlEnv::step`] until it reports `truncated`.
#[derive(Clone, Debug)]
pub struct RlEnv {
    pub(super) cfg: EnvConfig,
    pub(super) prototype: Box<dyn Estimator>,
    pub(super) forecast_ticks: usize,
    // --- episode state ---
    pub(super) seed: u64,
    pub(super) data: Link<Packet>,
    pub(super) reverse: Link<Report>,
    pub(super) estimator: Box<dyn Estimator>,
    pub(super) start: Instant,
    pub(super) now: Instant,
    pub(super) steps: u64,
    /// Sender: bytes sent (the next packet's sequence number).
    pub(super) sent_bytes: u64,
    /// Sender: the rate (bit/s) or window (bytes) in force.
    pub(super) rate_bps: f64,
    pub(super) window_bytes: u64,
    /// Sender: when the last paced packet left (µs), and when the next may (ns, for exact
    /// pacing at any rate).
    pub(super) next_send_ns: Option<u128>,
    pub(super) last_send_ns: Option<u128>,
    /// Sender: the latest report received.
    pub(super) report: Option<Report>,
    /// Sender: bytes reported delivered or lost.
    pub(super) acked_bytes: u64,
    /// Sender: bytes sent in the current step.
    pub(super) step_sent: u64,
    /// Receiver: end of the highest packet delivered (bytes).
    pub(super) rx_expected: u64,
    /// Receiver: largest send time among delivered packets (the episode's start before
    /// any), and the omniscient sender's counterpart.
    pub(super) rx_max_sent: Instant,
    pub(super) omni_max_sent: Instant,
    pub(super) rx_min_delay: Option<Duration>,
    pub(super) rx_ticks: [TickRecord; AVERAGE_TICKS],
    pub(super) rx_tick_count: u64,
    /// Receiver: the current tick's deliveries (arrival, send time) and opportunity times.
    pub(super) tick_arrivals: Vec<(u64, u64)>,
    pub(super) tick_opportunities: Vec<u64>,
    /// The simulation loop's clock ([`crate::sim_loop`]), which drives both links, the
    /// receiver and the sender.
    pub(super) clock: Simulation,
    /// End of the current step: the rate in force sends nothing at or after it.
    pub(super) horizon: Instant,
    /// Receiver: end of the current tick.
    pub(super) tick_end: Instant,
    /// Receiver: whether the data link's queue held a packet at the current tick's start,
    /// and whether a packet of ours entered it in the tick.
    pub(super) busy_at_start: bool,
    pub(super) entered: bool,
    /// Receiver: the current tick's figures.
    pub(super) tick_rec: TickRecord,
    /// The current step's sums.
    pub(super) acc: StepAccumulator,
    /// Scratch buffers reused every tick: reports reaching the sender and
    /// data deliveries (packet, send time, arrival, bytes).
    pub(super) scratch_reports: Vec<Report>,
    pub(super) scratch_delivered: Vec<(Packet, Instant, Instant, u32)>,
    /// Episode records (times relative to the start), for [`RlEnv::episode_metrics`].
    pub(super) arrivals: Vec<Arrival>,
    pub(super) opportunities: Vec<u64>,
    pub(super) observation: Vec<f32>,
    /// The application at the sender (`None`: bulk).
    pub(super) app: Option<Box<EnvApp>>,
}

pub(super) fn rate_bps_of(mbps: f64) -> f64 {
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
            start: Instant::ZERO,
            now: Instant::ZERO,
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
            rx_max_sent: Instant::ZERO,
            omni_max_sent: Instant::ZERO,
            rx_min_delay: None,
            rx_ticks: [TickRecord::default(); AVERAGE_TICKS],
            rx_tick_count: 0,
            tick_arrivals: Vec::new(),
            tick_opportunities: Vec::new(),
            clock: Simulation::new(Instant::ZERO),
            horizon: Instant::ZERO,
            tick_end: Instant::ZERO,
            busy_at_start: false,
            entered: false,
            tick_rec: TickRecord::default(),
            acc: StepAccumulator::default(),
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

    /// Where the current episode started in the trace.
    pub fn start(&self) -> Instant {
        self.start
    }

    /// Time since the episode's start.
    pub fn elapsed(&self) -> Duration {
        self.now - self.start
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

    /// The paper's metrics of the data direction over `[skip, elapsed)` of this episode
    /// (its records' times are relative to the episode's start), computed exactly as the
    /// simulator's ([`metrics::compute`], 1 ms sampling; the virtual first packet at the
    /// episode's start).
    pub fn episode_metrics(&self, skip: Duration) -> DirectionMetrics {
        let end = self.elapsed();
        metrics::compute(
            &self.arrivals,
            &self.opportunities,
            self.cfg.link.opportunity_bytes,
            self.cfg.link.propagation_delay_us,
            Window::new(Instant::ZERO + skip.min(end), Instant::ZERO + end),
            metrics::DEFAULT_STEP,
        )
    }

    /// The application-level figures of the episode over `[skip, elapsed)`
    /// ([`app_metrics::compute`]: the messages created in that window, a message not yet
    /// delivered counting as infinitely late); `None` for a bulk sender.
    pub fn app_metrics(&self, skip: Duration) -> Option<AppMetrics> {
        let app = self.app.as_ref()?;
        let end = self.elapsed();
        let window = Window::new(self.start + skip.min(end), self.start + end);
        Some(app_metrics::compute(app.ledger.messages(), window))
    }

    /// Application bytes waiting in the sender now (0 for bulk).
    pub fn app_backlog_bytes(&self) -> u64 {
        self.app.as_ref().map_or(0, |a| a.queued_bytes)
    }

    /// Starts a new episode with `seed`; returns the first observation.
    pub fn reset(&mut self, seed: u64) -> Result<&[f32], SimError> {
        let (data_trace, reverse_trace, start) = self.episode_traces(seed)?;
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
        self.data.advance(start, &mut |_| {});
        self.reverse.advance(start, &mut |_| {});
        self.seed = seed;
        self.estimator = self.prototype.clone();
        self.start = start;
        self.now = start;
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
        self.rx_max_sent = start;
        self.omni_max_sent = start;
        self.rx_min_delay = None;
        self.rx_ticks = [TickRecord::default(); AVERAGE_TICKS];
        self.rx_tick_count = 0;
        self.tick_arrivals.clear();
        self.tick_opportunities.clear();
        self.clock = Simulation::new(start);
        self.horizon = start;
        self.tick_end = start + self.cfg.protocol.model.tick_us;
        self.busy_at_start = false;
        self.entered = false;
        self.tick_rec = TickRecord::default();
        self.acc = StepAccumulator::default();
        self.arrivals.clear();
        self.opportunities.clear();
        self.app = EnvApp::new(self.cfg.app, start);
        self.fill_observation();
        Ok(&self.observation)
    }

    /// The traces of an episode (data, reverse) and its start.
    pub(super) fn episode_traces(
        &self,
        seed: u64,
    ) -> Result<(Arc<Trace>, Arc<Trace>, Instant), SimError> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x524c_454e_5653_5452);
        let (up, down, start) = match &self.cfg.source {
            LinkSource::Traces { uplink, downlink } => {
                let period_ms = uplink.period_ms().min(downlink.period_ms());
                let episode_ms = self.cfg.episode.as_micros().div_ceil(1000);
                let start_ms = if !self.cfg.random_start {
                    0
                } else if period_ms > episode_ms {
                    rng.gen_range(0..=period_ms - episode_ms)
                } else {
                    rng.gen_range(0..period_ms)
                };
                (
                    uplink.clone(),
                    downlink.clone(),
                    Instant::from_millis(start_ms),
                )
            }
            LinkSource::Synthetic(model) => {
                let duration_s = self.cfg.episode.as_secs_f64();
                let make = |name: &str, s: u64| {
                    let m = SyntheticLink {
                        seed: s,
                        duration_s,
                        ..model.clone()
                    };
                    Arc::new(m.generate(name))
                };
                let (su, sd) = (rng.gen::<u64>(), rng.gen::<u64>());
                (
                    make("synthetic.up", su),
                    make("synthetic.down", sd),
                    Instant::ZERO,
                )
            }
        };
        Ok(match self.cfg.data_direction {
            Direction::Down => (down, up, start),
            Direction::Up => (up, down, start),
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
        let step_start = self.now;
        self.step_sent = 0;
        if let Some(app) = self.app.as_mut() {
            app.step_offered_bytes = 0;
            app.step_delays_us.clear();
        }
        // The sender acts on the action at the step's start, then the loop runs the step.
        self.horizon = step_start + self.cfg.step();
        self.sender_act(step_start);
        let mut clock = self.clock;
        clock.wake(self);
        let end = self.horizon;
        // Nothing in the RL env's endpoints fails.
        let _ = clock.run_until(self, end, &mut |_| {});
        self.clock = clock;
        let acc = std::mem::take(&mut self.acc);
        self.steps += 1;
        let step_s = (self.now - step_start).as_secs_f64();
        let samples = acc.samples.max(1) as f64;
        let mbps = |bytes: u64| bytes as f64 * 8.0 / step_s / 1e6;
        let mut info = StepInfo {
            time_s: self.elapsed().as_secs_f64(),
            throughput_mbps: mbps(acc.delivered_bytes),
            capacity_mbps: mbps(acc.offered_bytes),
            // Micros over samples, then seconds: the order the digests were taken with.
            delay_s: acc.delay_sum.as_micros() as f64 / samples / 1e6,
            self_inflicted_s: acc.self_inflicted_sum.as_micros() as f64 / samples / 1e6,
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
            truncated: self.elapsed() >= self.cfg.episode,
            info,
        }
    }
}
