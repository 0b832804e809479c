//! The wide rate model: the paper's Bayesian model of the link rate (§3.1–3.2) stretched from
//! an outage to 1 Gbit/s ([`WideParams`]).
//!
//! - **Grid**: value 0 is an outage (0 packets/s); then values `low_step`, `2 low_step`, ...
//!   (the paper's spacing) up to where a log step is wider than that, and from there values
//!   spaced by a constant ratio `exp(log_step)` up to the top rate: about 230 values at the
//!   defaults, against the paper's 257 up to 1,000 packets/s.
//! - **Evolution**: geometric Brownian motion, a fixed Gaussian of standard deviation
//!   `sigma_log sqrt(tau)` in log-rate (symmetric: the median rate stays), with the paper's
//!   additive Brownian motion (`sigma_floor`) as a floor at low rates, where the Gaussian is in
//!   the rate itself and mass below the first value's interval falls into the outage. An
//!   outage ends at rate `outage_escape_rate`, by the same additive motion from 0, and begins
//!   from any rate at `outage_entry_rate` (default 0). A count no rate the belief holds can
//!   explain (`SURPRISE`) restarts the belief from the prior, so the end of an outage at
//!   any rate is placed at once.
//! - **Observation**: the count is in MTU-sized packets (bytes / MTU, fractional); the
//!   likelihood is Poisson's (or, with `count_cv` above 0, the negative binomial's of variance
//!   `m + (count_cv m)^2`), exact (with `lgamma`) while the mean is at most `normal_above`
//!   and `dispersion_above` packets a tick, and the Normal of the same mean above it: of the
//!   same variance up to `dispersion_above` (default 10 packets a tick), of variance
//!   `m^2 / dispersion_above` beyond, so that a tick's count never pins the rate down closer
//!   than it does at 10 packets a tick.
//!   A censored tick uses P(N >= k | rate), as [`crate::RateModel::observe_at_least`].
//!
//! The forecast is in [`crate::wide_forecast`].

use std::sync::Arc;

use crate::model::{apply_likelihood, normal_cdf, normalise_or_reset, poisson_tail};
use crate::params::{ModelParams, WideParams};

/// Probabilities below this are set to zero after each normalisation, which keeps the values a
/// tick works on to those that matter (a count the belief can not explain restarts it from the
/// prior, [`SURPRISE`], so nothing is lost for good): at 1e-30 instead the tick cost a third
/// more at low rates, where the Poisson likelihood of a few packets falls off slowly.
const FLUSH_BELOW: f64 = 1e-16;

/// A tick's count whose log-likelihood at every rate the belief holds is this far below its
/// log-likelihood at its own rate (e^-30) restarts the belief from the prior: the link has
/// moved further in one tick than the motion allows (the end of an outage at a high rate,
/// say), and the evidence of one tick then places it at once.
const SURPRISE: f64 = 30.0;

/// The wide model's grid of rate values and their intervals.
#[derive(Clone, Debug, PartialEq)]
pub struct WideGrid {
    /// Rate of each value, in packets/s (value 0: the outage, 0 packets/s).
    rates: Vec<f64>,
    /// Edge between value `i` and `i + 1`, in packets/s (`edges.len() == rates.len() - 1`).
    edges: Vec<f64>,
}

impl WideGrid {
    /// The grid for these parameters (assumed valid, [`WideParams::validate`]).
    pub fn new(w: &WideParams) -> Self {
        let step = w.low_step_pps;
        let ratio = w.log_step.exp();
        let mut rates = vec![0.0];
        let mut r = step;
        // Linear while the log step would be narrower than the linear one.
        while r * (ratio - 1.0) < step && r < w.max_rate_pps {
            rates.push(r);
            r += step;
        }
        while r < w.max_rate_pps {
            rates.push(r);
            r *= ratio;
        }
        rates.push(w.max_rate_pps);
        let edges = rates
            .windows(2)
            .enumerate()
            .map(|(i, pair)| {
                let (a, b) = (pair[0], pair[1]);
                if i == 0 || b - a <= step * (1.0 + 1e-9) {
                    0.5 * (a + b)
                } else {
                    (a * b).sqrt()
                }
            })
            .collect();
        WideGrid { rates, edges }
    }

    /// Number of values (the outage included).
    pub fn len(&self) -> usize {
        self.rates.len()
    }

    /// Whether the grid has no values (never: it holds at least the outage and the top).
    pub fn is_empty(&self) -> bool {
        self.rates.is_empty()
    }

    /// The rate of value `i`, in packets/s.
    pub fn rate(&self, i: usize) -> f64 {
        self.rates[i]
    }

    /// All rates, in packets/s, increasing.
    pub fn rates(&self) -> &[f64] {
        &self.rates
    }

    /// Lower edge of value `i`'s interval, in packets/s (`-inf` for the outage).
    pub fn lower_edge(&self, i: usize) -> f64 {
        if i == 0 {
            f64::NEG_INFINITY
        } else {
            self.edges[i - 1]
        }
    }

    /// Upper edge of value `i`'s interval, in packets/s (`+inf` for the top value).
    pub fn upper_edge(&self, i: usize) -> f64 {
        self.edges.get(i).copied().unwrap_or(f64::INFINITY)
    }

    /// The value whose interval holds `rate` (packets/s), clamped to the grid.
    pub fn value_of(&self, rate: f64) -> usize {
        if rate.is_nan() {
            return 0;
        }
        self.edges.partition_point(|&e| e <= rate)
    }
}

/// Per-tick standard deviation of the rate's change from `rate` (packets/s), in packets/s when
/// additive (`floor` applies) and in log units otherwise; returns (sd, is_log).
fn change_sd(rate: f64, s_log: f64, floor: f64) -> (f64, bool) {
    if s_log * rate >= floor {
        (s_log, true)
    } else {
        (floor, false)
    }
}

/// One row of the evolution: where a value's mass goes in one tick (before the outage entry).
#[derive(Clone, Debug, PartialEq)]
struct Row {
    start: usize,
    weights: Vec<f64>,
}

/// What the wide model precomputes once for a set of parameters, shared by every belief.
#[derive(Debug, PartialEq)]
pub struct WideShared {
    /// The grid.
    pub grid: WideGrid,
    /// The wide parameters.
    pub params: WideParams,
    /// Tick length, in seconds.
    pub tau: f64,
    /// Log-rate standard deviation per tick (GBM part).
    pub s_tick: f64,
    /// Additive standard deviation per tick, packets/s (the floor).
    pub floor_tick: f64,
    rows: Vec<Row>,
    /// Expected packets per tick of each value.
    mean: Vec<f64>,
    /// ln(mean) (value 0: unused).
    ln_mean: Vec<f64>,
    /// -0.5 ln(2 pi variance) for the values taken as Normal (others: unused).
    ln_norm: Vec<f64>,
    /// Variance of a tick's count, per value: `m + (count_cv m)^2`.
    var: Vec<f64>,
    /// The negative binomial's shape `r = 1 / count_cv^2` (infinite: Poisson).
    shape: f64,
    /// ln(r + mean) per value (negative binomial only).
    ln_shape_mean: Vec<f64>,
    /// First value whose count is taken as Normal.
    first_normal: usize,
    /// Probability an outage lasts another tick.
    stay: f64,
    /// Probability of entering the outage from any rate in a tick.
    enter: f64,
}

impl WideShared {
    /// Precomputes the grid and the evolution for these parameters.
    pub fn new(model: &ModelParams, w: &WideParams) -> Self {
        let grid = WideGrid::new(w);
        let tau = model.tau();
        let s_tick = w.sigma_log * tau.sqrt();
        let floor_tick = w.sigma_floor * tau.sqrt();
        let rows = (0..grid.len())
            .map(|i| Self::row(&grid, i, s_tick, floor_tick, w.kernel_sigmas))
            .collect();
        let mean: Vec<f64> = grid.rates().iter().map(|r| r * tau).collect();
        let ln_mean = mean
            .iter()
            .map(|&m| if m > 0.0 { m.ln() } else { f64::NEG_INFINITY })
            .collect();
        let cv2 = w.count_cv * w.count_cv;
        let d = w.dispersion_above.unwrap_or(f64::INFINITY);
        let var: Vec<f64> = mean
            .iter()
            .map(|&m| m.max(m * m / d) + cv2 * m * m)
            .collect();
        let ln_norm = var
            .iter()
            .map(|&v| -0.5 * (2.0 * std::f64::consts::PI * v.max(1e-300)).ln())
            .collect();
        let shape = if cv2 > 0.0 { 1.0 / cv2 } else { f64::INFINITY };
        let ln_shape_mean = mean.iter().map(|&m| (shape + m).ln()).collect();
        let first_normal = mean.partition_point(|&m| m <= w.normal_above.min(d));
        WideShared {
            grid,
            params: w.clone(),
            tau,
            s_tick,
            floor_tick,
            rows,
            mean,
            ln_mean,
            ln_norm,
            var,
            shape,
            ln_shape_mean,
            first_normal,
            stay: (-w.outage_escape_rate * tau).exp(),
            enter: 1.0 - (-w.outage_entry_rate * tau).exp(),
        }
    }

    /// The kernel row of value `i`; for the outage, where its escape goes: the additive
    /// motion from 0 over the values above it (the share that stays is handled apart).
    fn row(grid: &WideGrid, i: usize, s_tick: f64, floor_tick: f64, k: f64) -> Row {
        let r = grid.rate(i);
        let (sd, log) = change_sd(r, s_tick, floor_tick);
        if i == 0 {
            let end = grid.value_of(k * floor_tick).max(1);
            let mut weights: Vec<f64> = (1..=end)
                .map(|j| {
                    let hi = normal_cdf(grid.upper_edge(j) / floor_tick);
                    (hi - normal_cdf(grid.lower_edge(j) / floor_tick)).max(0.0)
                })
                .collect();
            let total: f64 = weights.iter().sum();
            weights.iter_mut().for_each(|x| *x /= total);
            return Row { start: 1, weights };
        }
        let cdf = |x: f64| {
            if log {
                if x <= 0.0 {
                    0.0
                } else if x.is_infinite() {
                    1.0
                } else {
                    normal_cdf((x / r).ln() / sd)
                }
            } else {
                normal_cdf((x - r) / sd)
            }
        };
        let (lo, hi) = if log {
            (r * (-k * sd).exp(), r * (k * sd).exp())
        } else {
            (r - k * sd, r + k * sd)
        };
        let (start, end) = (grid.value_of(lo), grid.value_of(hi));
        let mut weights: Vec<f64> = (start..=end)
            .map(|j| (cdf(grid.upper_edge(j)) - cdf(grid.lower_edge(j))).max(0.0))
            .collect();
        let total: f64 = weights.iter().sum();
        weights.iter_mut().for_each(|x| *x /= total);
        Row { start, weights }
    }

    /// Variance of a tick's count at value `i`, packets squared (`m + (count_cv m)^2`, or
    /// `m^2 / dispersion_above + (count_cv m)^2` above `dispersion_above`).
    pub fn count_variance(&self, i: usize) -> f64 {
        self.var[i]
    }

    /// Expected packets per tick of value `i`.
    pub fn mean_count(&self, i: usize) -> f64 {
        self.mean[i]
    }

    /// The part of the log-likelihood of a tick's count `k` that does not depend on the rate,
    /// for [`WideShared::log_likelihood`]: `lgamma(k + 1)` for a Poisson count,
    /// `lgamma(k + 1) + lgamma(r) - lgamma(k + r) - r ln r` for a negative binomial one.
    pub fn count_constant(&self, k: f64) -> f64 {
        let lg = libm::lgamma(k + 1.0);
        if self.shape.is_finite() {
            let r = self.shape;
            lg + libm::lgamma(r) - libm::lgamma(k + r) - r * r.ln()
        } else {
            lg
        }
    }

    /// Log-likelihood of a tick's count `k` (MTU-sized packets, `k > 0`) at value `i >= 1`,
    /// normalised: Poisson's `k ln m - m - lgamma(k + 1)` (or the negative binomial's
    /// `k ln m - (k + r) ln(r + m) + lgamma(k + r) - lgamma(r) - lgamma(k + 1) + r ln r`), with
    /// `constant` = [`WideShared::count_constant`] of `k`, at means up to `normal_above`; the
    /// Normal density of the same mean and variance above.
    pub fn log_likelihood(&self, i: usize, k: f64, constant: f64) -> f64 {
        let m = self.mean[i];
        if i >= self.first_normal {
            let d = k - m;
            self.ln_norm[i] - d * d / (2.0 * self.var[i])
        } else if self.shape.is_finite() {
            k * self.ln_mean[i] - (k + self.shape) * self.ln_shape_mean[i] - constant
        } else {
            k * self.ln_mean[i] - m - constant
        }
    }

    /// P(N >= k | value `i`) for a tick's count N and whole `k >= 1`: the Poisson's, exact, at
    /// means up to `normal_above` (also when `count_cv` is above 0: slightly less cautious
    /// there than the negative binomial), the Normal's upper tail (continuity-corrected, of
    /// the count's variance) above.
    pub fn tail_at_least(&self, i: usize, k: u32) -> f64 {
        let m = self.mean[i];
        if m <= 0.0 {
            return 0.0;
        }
        let kf = k as f64;
        if i >= self.first_normal {
            return normal_cdf((m - (kf - 0.5)) / self.var[i].sqrt());
        }
        if m - kf > 12.0 * m.sqrt() + 12.0 {
            // More than 12 standard deviations below the mean: 1 to within 1e-30.
            return 1.0;
        }
        poisson_tail(k, m)
    }
}

/// The receiver's belief about the link rate on the wide grid.
#[derive(Clone, Debug)]
pub struct WideModel {
    shared: Arc<WideShared>,
    prob: Vec<f64>,
    scratch: Vec<f64>,
    /// The censored likelihood P(N >= k | value) last computed, with its `k`: a quiet
    /// direction's receiver takes in the same count (a heartbeat, 1 packet) tick after tick.
    censored: Option<(u32, Vec<f64>)>,
    /// Counts the changes to the belief (for what is computed from it to know it is stale).
    version: u64,
}

impl WideModel {
    /// A model with the prior: uniform over the grid's values (so log-uniform at high rates).
    pub fn new(shared: Arc<WideShared>) -> Self {
        let n = shared.grid.len();
        WideModel {
            shared,
            prob: vec![1.0 / n as f64; n],
            scratch: vec![0.0; n],
            censored: None,
            version: 0,
        }
    }

    /// The precomputed grid and kernel.
    pub fn shared(&self) -> &Arc<WideShared> {
        &self.shared
    }

    /// A number that changes whenever the belief does.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Current probability of each value (sums to 1).
    pub fn probabilities(&self) -> &[f64] {
        &self.prob
    }

    /// Replaces the distribution (normalised; an all-zero or invalid input gives the prior).
    pub fn set_probabilities(&mut self, p: &[f64]) {
        assert_eq!(
            p.len(),
            self.prob.len(),
            "distribution has the wrong length"
        );
        self.prob.copy_from_slice(p);
        self.normalise_or_reset();
    }

    /// Expected rate, in packets/s.
    pub fn mean_rate(&self) -> f64 {
        self.prob
            .iter()
            .zip(self.shared.grid.rates())
            .map(|(p, r)| p * r)
            .sum()
    }

    /// One tick of evolution: the outage's escape and entry, then the kernel.
    pub fn evolve(&mut self) {
        let sh = &*self.shared;
        let out = &mut self.scratch;
        out.iter_mut().for_each(|x| *x = 0.0);
        let p0 = self.prob[0];
        let mut entered = 0.0;
        if p0 > 0.0 {
            let row = &sh.rows[0];
            let m = p0 * (1.0 - sh.stay);
            let dst = &mut out[row.start..row.start + row.weights.len()];
            for (d, &w) in dst.iter_mut().zip(&row.weights) {
                *d += m * w;
            }
        }
        for (i, row) in sh.rows.iter().enumerate().skip(1) {
            let p = self.prob[i];
            if p == 0.0 {
                continue;
            }
            entered += p * sh.enter;
            let m = p * (1.0 - sh.enter);
            let dst = &mut out[row.start..row.start + row.weights.len()];
            for (d, &w) in dst.iter_mut().zip(&row.weights) {
                *d += m * w;
            }
        }
        out[0] += p0 * sh.stay + entered;
        std::mem::swap(&mut self.prob, &mut self.scratch);
        self.normalise_or_reset();
    }

    /// Bayes' rule with the likelihood of `packets` (MTU-sized, may be fractional) in a tick.
    pub fn observe(&mut self, packets: f64) {
        let k = if packets.is_finite() && packets > 0.0 {
            packets
        } else {
            0.0
        };
        let sh = &*self.shared;
        if k == 0.0 {
            let c0 = sh.count_constant(0.0);
            for (i, p) in self.prob.iter_mut().enumerate().skip(1) {
                if *p != 0.0 {
                    *p *= sh.log_likelihood(i, 0.0, c0).exp();
                }
            }
            self.normalise_or_reset();
            return;
        }
        if self.prob[1..].iter().all(|&p| p == 0.0) {
            // All on the outage but packets came: start again from the prior.
            self.prob.iter_mut().for_each(|p| *p = 1.0);
        }
        self.prob[0] = 0.0;
        let shared = self.shared.clone();
        let sh = &*shared;
        let lg = sh.count_constant(k);
        let mut best = self.log_likelihoods(k, lg);
        let own = sh.log_likelihood(sh.grid.value_of(k / sh.tau).max(1), k, lg);
        if best < own - SURPRISE {
            // No rate the belief holds explains the count: start again from the prior.
            self.prob.iter_mut().skip(1).for_each(|p| *p = 1.0);
            best = self.log_likelihoods(k, lg);
        }
        for (p, &s) in self.prob.iter_mut().zip(&self.scratch).skip(1) {
            if *p != 0.0 {
                let d = s - best;
                *p = if d < -700.0 { 0.0 } else { *p * d.exp() };
            }
        }
        self.normalise_or_reset();
    }

    /// Writes the log-likelihood of `k` packets into `scratch` for every value that holds
    /// mass; returns the largest.
    fn log_likelihoods(&mut self, k: f64, constant: f64) -> f64 {
        let sh = &*self.shared;
        let mut best = f64::NEG_INFINITY;
        for (i, (&p, s)) in self.prob.iter().zip(self.scratch.iter_mut()).enumerate() {
            if i == 0 || p == 0.0 {
                continue;
            }
            let ll = sh.log_likelihood(i, k, constant);
            *s = ll;
            best = best.max(ll);
        }
        best
    }

    /// Bayes' rule with the censored likelihood P(N >= k | rate), `k` the whole packets in
    /// `packets` (at least 1): a tick of an application-limited sender.
    pub fn observe_at_least(&mut self, packets: f64) {
        if !(packets.is_finite() && packets >= 1.0) {
            return;
        }
        let k = packets.floor().min(u32::MAX as f64) as u32;
        let sh = &*self.shared;
        let (cached, likelihood) = self.censored.get_or_insert_with(|| (k, Vec::new()));
        if *cached != k || likelihood.is_empty() {
            likelihood.clear();
            likelihood.extend((0..sh.grid.len()).map(|i| sh.tail_at_least(i, k)));
            *cached = k;
        }
        apply_likelihood(&mut self.prob, likelihood, FLUSH_BELOW);
        self.version = self.version.wrapping_add(1);
    }

    fn normalise_or_reset(&mut self) {
        self.version = self.version.wrapping_add(1);
        normalise_or_reset(&mut self.prob, FLUSH_BELOW);
    }
}
