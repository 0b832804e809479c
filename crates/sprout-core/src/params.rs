//! Every parameter of the paper, as a documented default that can be changed.

use serde::{Deserialize, Serialize};

use crate::time::Duration;

/// Parameters of the receiver's stochastic model of the link (paper §3.1–3.3).
///
/// The defaults are the paper's values, which were frozen before its traces were collected,
/// computed as the authors' code computes them: their grid ([`RateGrid::Authors`]), their
/// tabulated Gaussian ([`GaussianCdf::Table`]), their kernel span ([`KernelSpan::Authors`]) and
/// their forecast tables, which leave out counts of 30 or more per tick ([`CountTail::Drop`]).
/// With these defaults every forecast of the authors' fixtures is reproduced exactly
/// (`tests/authors_fixtures.rs`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelParams {
    /// Number of rate intervals of the grid (paper and authors' code: 256). The authors' grid
    /// holds one value more than this (see [`RateGrid::Authors`]); [`ModelParams::values`] is
    /// the number of values of any grid.
    pub bins: usize,
    /// Largest modelled rate, in MTU-sized packets per second (paper: 1000, about 12 Mbit/s).
    pub max_rate_pps: f64,
    /// Brownian-motion volatility sigma of lambda, in packets/s per sqrt(s) (paper: 200).
    pub sigma: f64,
    /// Outage escape rate lambda_z, per second (paper: 1, i.e. outages last 1 s on average).
    pub outage_escape_rate: f64,
    /// Length of one tick (one evolve/observe/forecast step) (paper: 20 ms). Keeps its `_us`
    /// name: it is the key `sprout params` prints and `--param` takes, in microseconds.
    pub tick_us: Duration,
    /// Number of ticks the forecast looks ahead (paper: 8, i.e. 160 ms).
    pub forecast_ticks: usize,
    /// The evolution kernel is truncated at this many standard deviations (authors' code: 5).
    pub kernel_sigmas: f64,
    /// Packets counted per tick in the forecast tables: counts `0..cap` are kept and what lies
    /// at or above the cap is dropped or lumped ([`CountTail`]) (authors' code: 30). `None`
    /// means 1.5 x the top rate's mean count per tick (30 at the defaults).
    pub max_arrivals_per_tick: Option<usize>,
    /// How the forecast adds up the ticks' deliveries.
    pub forecast_model: ForecastModel,
    /// Size of the model's "packet" in bytes: byte counts are divided by it (default 1500,
    /// the size of one delivery opportunity in the traces).
    pub mtu_bytes: u32,
    /// Where the rate values sit on the grid and what the lowest one means (default: the
    /// authors' [`RateGrid::Authors`]).
    #[serde(default)]
    pub grid: RateGrid,
    /// How the evolution kernel's Gaussian CDF is computed (default: the authors' table).
    #[serde(default)]
    pub gaussian_cdf: GaussianCdf,
    /// Which destination bins the evolution kernel spans from each source bin (default: the
    /// authors' asymmetric span).
    #[serde(default)]
    pub kernel_span: KernelSpan,
    /// What the forecast tables do with per-tick counts at or above the cap (default: drop
    /// them, as the authors' code does).
    #[serde(default)]
    pub count_tail: CountTail,
}

/// The rate grid of the model and the meaning of its lowest value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum RateGrid {
    /// As the authors' code (`SampledFunction(256, 1000, 0)`): `bins + 1` values of spacing
    /// `w = max / bins` (3.90625 packets/s). Value 0 is exactly 0 packets/s (an outage, which
    /// delivers nothing) and stands for every rate below `w`; value `i >= 1` is
    /// `(i + 0.5) w` and stands for `[i w, (i + 1) w)`, the top one for everything from
    /// `bins w` up (so the top value, 1001.95 packets/s, lies above the top rate). From value
    /// 0 the escape rate weighs the Gaussian's share that stays (`exp(-lambda_z tau)`) against
    /// the share that leaves (the rest), and the lost mass is normalised away, so the outage
    /// is not sticky.
    #[default]
    Authors,
    /// As the paper's text reads: `bins` values from 0 to the top rate; value 0 is the outage
    /// (lambda = 0), which lasts an exponential time of mean `1 / outage_escape_rate`. More
    /// willing to forecast deliveries at low observed rates than the authors' grid, so it sends
    /// more.
    ZeroOutage,
    /// `bins` values at the midpoints of `[i w, (i + 1) w)` with `w = max / (bins - 1)`: the
    /// authors' grid without its value at exactly 0 (the lowest value is about 1.96 packets/s,
    /// so it delivers a trickle), with the authors' escape weighting of the lowest value. This
    /// was the project's default before the authors' exact arithmetic was reproduced.
    Midpoint,
}

/// How the Gaussian CDF of the evolution kernel is evaluated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum GaussianCdf {
    /// As the authors' code (`GaussianCache`): tabulated once in `128 * bins` cells over
    /// `[-max, max]` packets/s (32,768 cells of 0.061 packets/s), each cell holding the CDF at
    /// its midpoint, and read at the cell that holds the argument.
    #[default]
    Table,
    /// The exact CDF (`erfc`) at the bin edges.
    Exact,
}

/// Which destination values the evolution kernel reaches from a source value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum KernelSpan {
    /// As the authors' code: from the value holding `rate - k sigma` to one value past the one
    /// holding `rate + k sigma` (`k` = `kernel_sigmas`).
    #[default]
    Authors,
    /// Symmetric: `ceil(k sigma / w)` values each side.
    Symmetric,
}

/// What the forecast tables do with the probability of a tick count at or above the cap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum CountTail {
    /// As the authors' code: left out, so a cumulative distribution may sum to less than 1
    /// (at the top rate, 20 packets a tick, a tick count of 30 or more has probability 2%).
    #[default]
    Drop,
    /// Lumped at the cap (a count of `cap` stands for `cap` or more).
    Lump,
}

impl Default for ModelParams {
    fn default() -> Self {
        ModelParams {
            bins: 256,
            max_rate_pps: 1000.0,
            sigma: 200.0,
            outage_escape_rate: 1.0,
            tick_us: Duration::from_millis(20),
            forecast_ticks: 8,
            kernel_sigmas: 5.0,
            max_arrivals_per_tick: None,
            forecast_model: ForecastModel::PerTick,
            mtu_bytes: 1500,
            grid: RateGrid::Authors,
            gaussian_cdf: GaussianCdf::Table,
            kernel_span: KernelSpan::Authors,
            count_tail: CountTail::Drop,
        }
    }
}

impl ModelParams {
    /// Tick length in seconds.
    pub fn tau(&self) -> f64 {
        self.tick_us.as_secs_f64()
    }

    /// Number of rate values of the grid: `bins + 1` on the authors' grid, `bins` otherwise.
    pub fn values(&self) -> usize {
        match self.grid {
            RateGrid::Authors => self.bins + 1,
            RateGrid::ZeroOutage | RateGrid::Midpoint => self.bins,
        }
    }

    /// Spacing of the rate grid, in packets/s.
    pub fn bin_width(&self) -> f64 {
        match self.grid {
            RateGrid::Authors => self.max_rate_pps / self.bins as f64,
            RateGrid::ZeroOutage | RateGrid::Midpoint => self.max_rate_pps / (self.bins - 1) as f64,
        }
    }

    /// The rate of value `i`, in packets/s (value 0 is an outage, 0 packets/s, on the authors'
    /// and the paper-literal grid).
    pub fn rate(&self, i: usize) -> f64 {
        let w = self.bin_width();
        match self.grid {
            RateGrid::Authors if i == 0 => 0.0,
            RateGrid::ZeroOutage => i as f64 * w,
            RateGrid::Authors | RateGrid::Midpoint => (i as f64 + 0.5) * w,
        }
    }

    /// Lower edge of the rate interval value `i` stands for, in packets/s (`-inf` for the
    /// lowest on the authors' and the midpoint grid, 0 on the paper-literal one).
    pub fn lower_edge(&self, i: usize) -> f64 {
        let w = self.bin_width();
        match self.grid {
            RateGrid::Authors | RateGrid::Midpoint if i == 0 => f64::NEG_INFINITY,
            RateGrid::ZeroOutage if i == 0 => 0.0,
            RateGrid::Authors | RateGrid::Midpoint => i as f64 * w,
            RateGrid::ZeroOutage => (i as f64 - 0.5) * w,
        }
    }

    /// Upper edge of the rate interval value `i` stands for, in packets/s (`+inf` for the top).
    pub fn upper_edge(&self, i: usize) -> f64 {
        if i + 1 >= self.values() {
            return f64::INFINITY;
        }
        let w = self.bin_width();
        match self.grid {
            RateGrid::Authors | RateGrid::Midpoint => (i + 1) as f64 * w,
            RateGrid::ZeroOutage => (i as f64 + 0.5) * w,
        }
    }

    /// The value whose interval holds `rate` (clamped to the grid). On the authors' grid this
    /// is their `to_bin`: the rate over the spacing, truncated toward zero.
    pub fn value_of(&self, rate: f64) -> usize {
        let w = self.bin_width();
        let x = match self.grid {
            RateGrid::Authors | RateGrid::Midpoint => (rate / w).trunc(),
            RateGrid::ZeroOutage => (rate / w + 0.5).floor(),
        };
        if x.is_nan() || x < 0.0 {
            0
        } else {
            (x as usize).min(self.values() - 1)
        }
    }

    /// Truncation of the per-tick packet count used in the forecast tables: counts
    /// `0..arrivals_cap()` are kept, larger ones dropped or lumped at the cap ([`CountTail`]).
    pub fn arrivals_cap(&self) -> usize {
        self.max_arrivals_per_tick
            .unwrap_or_else(|| (1.5 * self.max_rate_pps * self.tau()).ceil() as usize)
            .max(1)
    }

    /// Checks that the parameters describe a usable model.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.bins < 2 || self.bins > 65_536 {
            return Err(ConfigError::Bins(self.bins));
        }
        if !(self.max_rate_pps > 0.0 && self.max_rate_pps.is_finite()) {
            return Err(ConfigError::MaxRate(self.max_rate_pps));
        }
        if !(self.sigma > 0.0 && self.sigma.is_finite()) {
            return Err(ConfigError::Sigma(self.sigma));
        }
        if !(self.outage_escape_rate >= 0.0 && self.outage_escape_rate.is_finite()) {
            return Err(ConfigError::OutageEscapeRate(self.outage_escape_rate));
        }
        if self.tick_us.is_zero() {
            return Err(ConfigError::ZeroTick);
        }
        if self.forecast_ticks == 0 || self.forecast_ticks > crate::wire::MAX_FORECAST_TICKS {
            return Err(ConfigError::ForecastTicks(self.forecast_ticks));
        }
        if !(self.kernel_sigmas > 0.0 && self.kernel_sigmas.is_finite()) {
            return Err(ConfigError::KernelSigmas);
        }
        if self.count_tail == CountTail::Drop && self.arrivals_cap() < 2 {
            return Err(ConfigError::CountTailCap);
        }
        if self.mtu_bytes == 0 {
            return Err(ConfigError::ZeroMtu);
        }
        Ok(())
    }
}

/// How the cautious forecast combines the ticks (paper §3.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ForecastModel {
    /// As the paper describes and its authors implemented: evolve the rate distribution to
    /// each tick, take each tick's count distribution over the rates, and sum the ticks as
    /// independent counts. Less spread than the joint model, so less cautious.
    PerTick,
    /// The exact model: one rate path drives all ticks, so their counts are correlated and the
    /// cumulative count is more spread out. Far more cautious at low rates.
    Joint,
}

/// Which estimator the receiver runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum EstimatorKind {
    /// Sprout: Bayesian inference and the cautious forecast.
    Sprout,
    /// Sprout-EWMA: an exponentially weighted moving average of the observed rate, assumed to
    /// hold for the whole forecast (no caution).
    Ewma {
        /// Weight of each new tick's observed rate, 0..1.
        gain: f64,
    },
    /// Sprout with the wide rate model ([`crate::wide_model`]): rates from an outage up to
    /// 1 Gbit/s on a log-spaced grid, geometric Brownian motion, and the cautious forecast
    /// computed without per-count tables. The tick, forecast length and MTU still come from
    /// [`Config::model`]; the rest of the paper's model parameters are not used.
    Wide(WideParams),
    /// Sprout on the wide rate model with its volatility learned online
    /// ([`crate::wide_vol`]): a belief over a few volatilities of the wide model, each a
    /// multiple of its `sigma_log` and `sigma_floor`, whose weights follow the observed
    /// counts tick by tick, and the forecast of the weighted mixture.
    WideVol(WideVolParams),
}

/// Parameters of the wide model with a belief over its volatility ([`crate::wide_vol`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WideVolParams {
    /// The wide model of every component ([`WideParams`]); each component multiplies its
    /// `sigma_log` and `sigma_floor` by its factor.
    pub wide: WideParams,
    /// The components' volatility factors (default 0.25 and 1: a steady link's and the wide model's): one to
    /// [`MAX_VOLATILITIES`] of them, each positive and finite.
    pub factors: Vec<f64>,
    /// Rate at which the link's volatility changes, per second (default 0.5): each tick each
    /// weight keeps `1 - exp(-switch_rate tau)` less of itself and the weights gain it evenly,
    /// so that no component's weight stays near zero and a link that turns volatile is
    /// followed within a few ticks.
    pub switch_rate: f64,
}

/// The most volatility components of [`WideVolParams::factors`].
pub const MAX_VOLATILITIES: usize = 4;

impl Default for WideVolParams {
    fn default() -> Self {
        WideVolParams {
            wide: WideParams::default(),
            factors: vec![0.25, 1.0],
            switch_rate: 0.5,
        }
    }
}

impl WideVolParams {
    /// The wide parameters of component `k` (its factor on both volatilities).
    pub fn component(&self, k: usize) -> WideParams {
        let f = self.factors[k];
        WideParams {
            sigma_log: self.wide.sigma_log * f,
            sigma_floor: self.wide.sigma_floor * f,
            ..self.wide.clone()
        }
    }

    /// Checks that the parameters describe a usable belief: one to [`MAX_VOLATILITIES`]
    /// positive finite factors, a non-negative finite switch rate, and a valid wide model at
    /// each factor.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let factors_ok = !self.factors.is_empty()
            && self.factors.len() <= MAX_VOLATILITIES
            && self.factors.iter().all(|f| f.is_finite() && *f > 0.0);
        if !factors_ok || !(self.switch_rate >= 0.0 && self.switch_rate.is_finite()) {
            return Err(ConfigError::WideVol);
        }
        (0..self.factors.len()).try_for_each(|k| self.component(k).validate())
    }
}

/// Parameters of the wide rate model ([`crate::wide_model`]): the paper's model stretched from
/// an outage to 1 Gbit/s. Derivation of the defaults: `docs/design-choices.md`, "The wide rate
/// model".
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WideParams {
    /// Largest modelled rate, in MTU-sized packets per second (default 83,334: 1 Gbit/s of
    /// 1,500-byte packets).
    pub max_rate_pps: f64,
    /// Spacing of the linear part of the grid at the bottom, in packets/s (default 3.90625, the
    /// paper's spacing). The grid is linear from this spacing up to the rate where the log
    /// spacing becomes wider.
    pub low_step_pps: f64,
    /// Spacing of the log part of the grid, in natural-log units (default 0.03: each value
    /// 3.0% above the one below).
    pub log_step: f64,
    /// Volatility of the log-rate (geometric Brownian motion), per sqrt(second) (default
    /// 0.7071, i.e. 0.1 per sqrt(tick) of 20 ms).
    pub sigma_log: f64,
    /// Floor of the rate's volatility, in packets/s per sqrt(second) (default 200, the paper's
    /// sigma): below `sigma_floor / sigma_log` (283 packets/s at the defaults) the rate moves
    /// by the paper's additive Brownian motion, above it by the geometric one.
    pub sigma_floor: f64,
    /// Rate at which an outage ends, per second (default 1, the paper's lambda_z), to a low
    /// rate by the additive motion from 0 (a count far above it restarts the belief from the
    /// prior).
    pub outage_escape_rate: f64,
    /// Rate at which an outage begins from any rate, per second (default 0: as in the paper's
    /// model, the rate reaches the outage only by moving down to it). Above 0 a single empty
    /// tick at a few packets a tick or more is read as an outage, which on the paper's bursty
    /// links stalls the sender.
    pub outage_entry_rate: f64,
    /// The evolution kernel is truncated at this many standard deviations (default 4: the
    /// Gaussian's tails beyond hold 6e-5 of its mass; 5, the paper's, makes the tick a fifth
    /// dearer at low rates, where the belief spans many values).
    pub kernel_sigmas: f64,
    /// Expected packets per tick above which a tick's count is taken as Normal (of the same
    /// mean and variance) rather than computed exactly (default 100).
    pub normal_above: f64,
    /// Relative standard deviation of the link's rate within one tick, beyond the Poisson's
    /// counting noise (default 0: a tick's count is Poisson). Above 0 the count is negative
    /// binomial, of variance `m + (count_cv m)^2` for a mean of `m` packets, so that however
    /// fast the link a single tick never pins the rate down closer than this.
    pub count_cv: f64,
    /// Expected packets per tick above which a tick's count is no longer taken as Poisson but
    /// as Normal with the relative spread of a Poisson count of this mean: variance
    /// `m^2 / dispersion_above`, a relative sd of `1 / sqrt(dispersion_above)` whatever the rate
    /// (`None`: never, Poisson to `normal_above` and a Normal of variance `m` beyond). Default
    /// 10 (500 packets/s, a relative sd of 32%): keeps the caution the model has at the
    /// paper's rates on a link whose deliveries come in bursts that grow with its rate
    /// (`docs/design-choices.md`, "The wide rate model").
    pub dispersion_above: Option<f64>,
}

impl Default for WideParams {
    fn default() -> Self {
        WideParams {
            max_rate_pps: 83_334.0,
            low_step_pps: 3.906_25,
            log_step: 0.03,
            sigma_log: 0.1 / 0.02f64.sqrt(),
            sigma_floor: 200.0,
            outage_escape_rate: 1.0,
            outage_entry_rate: 0.0,
            kernel_sigmas: 4.0,
            normal_above: 100.0,
            count_cv: 0.0,
            dispersion_above: Some(10.0),
        }
    }
}

impl WideParams {
    /// Checks that the parameters describe a usable wide model.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let positive = |x: f64| x > 0.0 && x.is_finite();
        let rates_ok = positive(self.max_rate_pps)
            && positive(self.low_step_pps)
            && self.max_rate_pps > 2.0 * self.low_step_pps;
        // Keep the grid within a few thousand values.
        let log_ok = positive(self.log_step)
            && self.log_step >= 1e-3
            && (self.max_rate_pps / self.low_step_pps).ln() / self.log_step < 20_000.0;
        let vol_ok = positive(self.sigma_log)
            && positive(self.sigma_floor)
            && positive(self.kernel_sigmas)
            && positive(self.normal_above)
            && self
                .dispersion_above
                .is_none_or(|d| d > 0.0 && d.is_finite())
            && self.count_cv >= 0.0
            && self.count_cv <= 10.0;
        let rates_per_s_ok = self.outage_escape_rate >= 0.0
            && self.outage_escape_rate.is_finite()
            && self.outage_entry_rate >= 0.0
            && self.outage_entry_rate.is_finite();
        if rates_ok && log_ok && vol_ok && rates_per_s_ok {
            Ok(())
        } else {
            Err(ConfigError::Wide)
        }
    }
}

/// How the sender's queue estimate falls as each tick of a forecast elapses (paper §3.5: "it
/// decrements the estimate by the amount of the forecast").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum QueueDrain {
    /// As the authors' implementation does: subtract the forecast's entry for the tick, which
    /// is the *cumulative* count by that tick. The estimate falls faster than the forecast
    /// deliveries, so the sender keeps a standing queue of about the 5-tick forecast; this is
    /// the behaviour behind the paper's published figures.
    ForecastEntry,
    /// Subtract only that tick's forecast deliveries (the increment). More cautious: on a
    /// 40 ms round trip the queue then often runs dry and throughput falls.
    Increment,
}

/// Default gain of Sprout-EWMA per 20 ms tick (the paper does not publish its value).
pub const DEFAULT_EWMA_GAIN: f64 = 0.125;

/// Configuration of a Sprout connection endpoint (both its sender and its receiver).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// The receiver's link model.
    pub model: ModelParams,
    /// Which estimator the receiver runs.
    pub estimator: EstimatorKind,
    /// Probability with which the forecast deliveries are expected to be at least met
    /// (paper: 0.95). Lower values forecast more and send more.
    pub confidence: f64,
    /// The delay target, in ticks of the forecast: the window is what the forecast says will
    /// drain within this many ticks (paper: 5, i.e. 100 ms).
    pub target_ticks: usize,
    /// An idle sender sends a heartbeat after this long without sending, in microseconds.
    pub heartbeat_interval_us: Duration,
    /// Packets sent this long apart are assumed never to be reordered (paper: 10 ms).
    pub throwaway_window_us: Duration,
    /// If set, an endpoint that has a forecast not yet sent and has sent nothing for this long
    /// sends it in a heartbeat rather than waiting for the heartbeat interval, in microseconds.
    /// Default `None`: as in the authors' code, an idle endpoint returns forecasts only on its
    /// heartbeats (every 50 ms).
    pub feedback_interval_us: Option<Duration>,
    /// How the queue estimate drains between forecasts.
    pub queue_drain: QueueDrain,
    /// Ticks a forecast is taken to be old when it arrives, beyond what the window already
    /// skips (`window_skip_ticks`): default 0.
    pub forecast_age_ticks: usize,
    /// Forecast ticks the window skips before its target span: the window is the forecast's
    /// deliveries over ticks `applied + 1 + skip ..= applied + skip + target`, minus the queue
    /// estimate. 1 (the authors' code, `counts(i + 5) - counts(i)`): the forecast's first tick
    /// is the one that was in progress at the receiver and has gone by while the forecast
    /// travelled, so the window covers the next 100 ms from the forecast's arrival. 0 reads the
    /// paper literally; it counts a tick that has already passed and, since the cautious
    /// forecast of the first tick is often 0 at low rates, lets Sprout lock itself in at a low
    /// rate (10% loss, or feedback only every 50 ms, drop it below 20% utilization).
    pub window_skip_ticks: usize,
    /// Largest core datagram the endpoint sends (Sprout header and payload), in bytes. The core
    /// datagram travels inside a sealed datagram of the security layer, which adds
    /// [`SECURE_OVERHEAD_BYTES`]; the default, 1472 - 32 = 1440, keeps the sealed datagram
    /// within a 1500-byte IPv4 MTU (1472 bytes of UDP payload).
    pub max_datagram_bytes: usize,
    /// Bytes a core datagram occupies on the link beyond itself, in bytes: IPv4 + UDP headers
    /// (28) plus the security layer's header and tag ([`SECURE_OVERHEAD_BYTES`], 32), since the
    /// core datagram travels inside a sealed datagram; default 60. Sequence numbers, the queue
    /// estimate and the receiver's counts are all in link bytes. Both ends must use the same
    /// value (the receiver counts the peer's datagrams with it).
    pub link_overhead_bytes: u32,
    /// Most application bytes received and not yet taken by [`crate::Connection::recv`], in
    /// bytes (default [`DEFAULT_MAX_INCOMING_BYTES`], 4 MiB). When a payload would go beyond
    /// it the oldest queued ones are dropped to make room (drop-head: the freshest data and the
    /// peer's last messages survive) and counted ([`crate::ConnectionStats::incoming_dropped`]):
    /// the application must call `recv`; back-pressure is not possible for datagrams already
    /// received.
    #[serde(default = "default_max_incoming_bytes")]
    pub max_incoming_bytes: usize,
}

/// Bytes the security layer adds to every core datagram: its data header (16 bytes) and the
/// AEAD tag (16 bytes). `sprout_secure::wire::OVERHEAD_BYTES` must equal it.
pub const SECURE_OVERHEAD_BYTES: usize = 32;

/// IPv4 and UDP headers, in bytes.
pub const IP_UDP_HEADER_BYTES: usize = 28;

/// Default bound of the incoming application queue, in bytes (4 MiB).
pub const DEFAULT_MAX_INCOMING_BYTES: usize = 4 << 20;

fn default_max_incoming_bytes() -> usize {
    DEFAULT_MAX_INCOMING_BYTES
}

/// Longest heartbeat interval [`Config::validate`] allows, in microseconds (1 s), and so the
/// protocol's maximum time-to-next: a conforming sender announces either 0 or its heartbeat
/// interval, so a datagram announcing more is dropped. Beyond a second of silence the peer's
/// 8-tick (160 ms) forecast has long run out, so a longer interval would serve no purpose, and
/// a longer announced pause would hide that much of an outage from the receiver's model.
pub const MAX_HEARTBEAT_INTERVAL_US: u64 = 1_000_000;

impl Default for Config {
    fn default() -> Self {
        Config {
            model: ModelParams::default(),
            estimator: EstimatorKind::Sprout,
            confidence: 0.95,
            target_ticks: 5,
            heartbeat_interval_us: Duration::from_millis(50),
            throwaway_window_us: Duration::from_millis(10),
            feedback_interval_us: None,
            queue_drain: QueueDrain::ForecastEntry,
            forecast_age_ticks: 0,
            window_skip_ticks: 1,
            max_datagram_bytes: 1472 - SECURE_OVERHEAD_BYTES,
            link_overhead_bytes: (IP_UDP_HEADER_BYTES + SECURE_OVERHEAD_BYTES) as u32,
            max_incoming_bytes: DEFAULT_MAX_INCOMING_BYTES,
        }
    }
}

impl Config {
    /// Sprout with the wide rate model ([`WideParams::default`]), the rest as the default but
    /// for one thing: an idle receiver returns its forecast every tick (20 ms) rather than on
    /// its heartbeats (50 ms). A one-way sender holds to the window the last forecast gave it,
    /// and through a real emulated 10 Mbit/s link two downloads of three stayed near
    /// 300 kbit/s to their end with forecasts every 50 ms: the sender sent its few packets a
    /// round, the receiver saw just those, and its cautious forecast stayed as low
    /// (`tests/one_way_download.rs` of `sprout-cli`). At 50 forecasts a second of about
    /// 100 bytes, 40 kbit/s back.
    pub fn wide() -> Self {
        Config {
            estimator: EstimatorKind::Wide(WideParams::default()),
            feedback_interval_us: Some(Duration::from_millis(20)),
            ..Config::default()
        }
    }

    /// The Sprout-EWMA variant with the default gain.
    pub fn ewma() -> Self {
        Config {
            estimator: EstimatorKind::Ewma {
                gain: DEFAULT_EWMA_GAIN,
            },
            ..Config::default()
        }
    }

    /// Checks that the configuration is usable.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.model.validate()?;
        if !(self.confidence > 0.0 && self.confidence < 1.0) {
            return Err(ConfigError::Confidence(self.confidence));
        }
        let forecast_ticks = self.model.forecast_ticks;
        if self.target_ticks == 0 || self.target_ticks > forecast_ticks {
            return Err(ConfigError::TargetTicks {
                target: self.target_ticks,
                forecast: forecast_ticks,
            });
        }
        if self.window_skip_ticks + self.target_ticks > forecast_ticks {
            return Err(ConfigError::WindowSkip {
                skip: self.window_skip_ticks,
                target: self.target_ticks,
                forecast: forecast_ticks,
            });
        }
        match &self.estimator {
            EstimatorKind::Ewma { gain } if !(*gain > 0.0 && *gain <= 1.0) => {
                return Err(ConfigError::EwmaGain(*gain));
            }
            EstimatorKind::Wide(w) => w.validate()?,
            EstimatorKind::WideVol(v) => v.validate()?,
            _ => {}
        }
        let min = crate::wire::header_bytes(forecast_ticks) + 1;
        if self.max_datagram_bytes < min || self.max_datagram_bytes > 65_507 {
            return Err(ConfigError::MaxDatagram {
                min,
                got: self.max_datagram_bytes,
            });
        }
        let heartbeat_us = self.heartbeat_interval_us.as_micros();
        if heartbeat_us == 0 || heartbeat_us > MAX_HEARTBEAT_INTERVAL_US {
            return Err(ConfigError::HeartbeatInterval(heartbeat_us));
        }
        Ok(())
    }
}

/// Why [`Config::validate`] (or [`ModelParams::validate`]) rejects a configuration: the first
/// problem found, with the command line's message.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// The model's number of rate bins is outside 2..=65536.
    #[error("model needs 2..=65536 rate bins, got {0}")]
    Bins(usize),
    /// The largest modelled rate (packets per second) is not positive and finite.
    #[error("max rate must be positive, got {0}")]
    MaxRate(f64),
    /// The Brownian motion's sigma (packets per second per sqrt(second)) is not positive.
    #[error("sigma must be positive, got {0}")]
    Sigma(f64),
    /// The outage escape rate (per second) is negative or not finite.
    #[error("outage escape rate must be >= 0, got {0}")]
    OutageEscapeRate(f64),
    /// The tick length is 0 µs.
    #[error("tick length must be positive")]
    ZeroTick,
    /// The forecast's length in ticks is outside 1..=32.
    #[error("forecast ticks must be 1..=32, got {0}")]
    ForecastTicks(usize),
    /// The evolution kernel's truncation (in sigmas) is not positive.
    #[error("kernel truncation must be positive")]
    KernelSigmas,
    /// The count tail is dropped while the per-tick cap is below 2.
    #[error("dropping the count tail needs a cap of at least 2 per tick")]
    CountTailCap,
    /// The MTU is 0 bytes.
    #[error("MTU must be positive")]
    ZeroMtu,
    /// The forecast confidence is not strictly between 0 and 1.
    #[error("confidence must be strictly between 0 and 1, got {0}")]
    Confidence(f64),
    /// The target (ticks) is 0 or beyond the forecast.
    #[error("target ticks must be 1..={forecast}, got {target}")]
    TargetTicks {
        /// The configured target, ticks.
        target: usize,
        /// The forecast's length, ticks.
        forecast: usize,
    },
    /// The window's skipped ticks plus the target reach beyond the forecast.
    #[error(
        "window skip ({skip}) plus target ({target}) ticks exceed the forecast's {forecast} ticks"
    )]
    WindowSkip {
        /// Skipped ticks.
        skip: usize,
        /// Target ticks.
        target: usize,
        /// The forecast's length, ticks.
        forecast: usize,
    },
    /// A parameter of the wide model is out of range (each must be positive and finite, the
    /// rates per second non-negative, the top rate above two low steps, the log step at least
    /// 0.001 and the grid under 20,000 values).
    #[error("wide model parameters out of range (each positive and finite; log step >= 0.001; grid under 20000 values)")]
    Wide,
    /// The volatility belief's factors or switch rate are out of range
    /// ([`WideVolParams::validate`]).
    #[error("volatility belief out of range (1 to {MAX_VOLATILITIES} factors, each positive and finite; switch rate non-negative)")]
    WideVol,
    /// Sprout-EWMA's gain is outside (0, 1].
    #[error("EWMA gain must be in (0, 1], got {0}")]
    EwmaGain(f64),
    /// The largest datagram (bytes) cannot hold a header and one byte, or exceeds UDP's 65507.
    #[error("max datagram must be {min}..=65507 bytes, got {got}")]
    MaxDatagram {
        /// The smallest allowed, bytes.
        min: usize,
        /// The configured size, bytes.
        got: usize,
    },
    /// The heartbeat interval (µs) is 0 or above [`MAX_HEARTBEAT_INTERVAL_US`].
    #[error("heartbeat interval must be 1..={MAX_HEARTBEAT_INTERVAL_US} us, got {0}")]
    HeartbeatInterval(u64),
}
