//! The environment's configuration: what the agent sets, where feedback goes, the link.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sprout_core::time::Duration;
use sprout_core::Config;
use sprout_link::{LinkConfig, SyntheticLink, Trace};

use crate::app::App;
use crate::error::{SimError, UnknownName};
use crate::sim::{Direction, MAX_APP_DATAGRAMS};

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

/// Longest episode accepted (one hour): the episode's records grow with it.
pub const MAX_EPISODE: Duration = Duration::from_secs(3_600);

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
    /// Length of an episode (1 step ..= [`MAX_EPISODE`]). Default 30 s.
    pub episode: Duration,
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
            episode: Duration::from_secs(30),
            random_start: true,
            reward: RewardWeights::default(),
            protocol: Config::default(),
            app: App::Bulk,
        }
    }

    /// Length of one step: [`EnvConfig::ticks_per_step`] of the model's ticks.
    pub fn step(&self) -> Duration {
        self.protocol.model.tick_us * u64::from(self.ticks_per_step)
    }

    /// Number of steps in an episode (the last one may end past `episode`).
    pub fn episode_steps(&self) -> u64 {
        let step_us = self.step().as_micros().max(1);
        self.episode.as_micros().div_ceil(step_us)
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
        if self.episode < self.step() || self.episode > MAX_EPISODE {
            return invalid(format!(
                "an episode must last from one step ({} ms) to {} s, got {} s",
                self.step().as_millis(),
                MAX_EPISODE.as_millis() / 1000,
                self.episode.as_secs_f64()
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
            self.app.datagrams_per_s(self.packet_bytes as usize) * self.episode.as_secs_f64();
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
