//! The wide model's cautious forecast (paper §3.3), without the paper's per-rate tables.
//!
//! As in the paper's model, tick 1 is counted at the current rate and each later tick one
//! evolution on, the ticks' counts are added as independent counts (the paper's
//! [`crate::params::ForecastModel::PerTick`]), and the forecast for horizon `h` is the smallest
//! whole count `c` with P(N_h <= c) >= 1 - confidence, where N_h is the packets delivered by
//! the end of tick `h`.
//!
//! Given the current value `b` (`m_b` packets a tick), tick `t`'s count has mean `m_b g_t`,
//! with `g_t = exp((t - 1) s^2 / 2)` the expected growth of the geometric Brownian motion of
//! per-tick log-sd `s` over `t - 1` ticks (1 for the additive motion at low rates), and
//! variance the Poisson's plus the rate's spread after `t - 1` ticks:
//! `m_b^2 g_t^2 (exp((t - 1) s^2) - 1)` (lognormal, exact); for the additive motion of
//! per-tick sd `a` packets/s at low rates, the mean and variance of `max(0, X)`, X Normal of
//! mean `m_b` and sd `a tau sqrt(t - 1)` (the rate can not go below 0: it falls into the
//! outage, so near 0 the motion drifts up, as the paper's model's does). Added over independent ticks, N_h given `b`
//! has mean `mu_bh` and variance `mu_bh + w_bh` (`w_bh` the summed spreads). Under the belief
//! `p_b`, the mixture over the values, N_h has mean `M_h = sum_b p_b mu_bh` and variance
//! `V_h = M_h + sum_b p_b w_bh + sum_b p_b mu_bh^2 - M_h^2` (the last two: the belief's own
//! spread, which holds for every tick alike, as in the paper's tables, one per current rate).
//!
//! Below [`SMALL_MEAN`] packets N_h is taken as the negative binomial of that mean and
//! variance (a Poisson whose mean is Gamma-distributed, which a belief spread over rates
//! makes it; a Poisson when `V_h = M_h`), whose lower quantile is found by summing its terms;
//! above, as the Normal, whose quantile is `ceil(M_h + z_q sqrt(V_h) - 0.5)`
//! (continuity-corrected). Each horizon's answer is at least the previous one's, so the
//! forecast is non-decreasing across ticks. A forecast costs one pass over the values that
//! hold mass for all horizons. Where the moments describe the mixture badly (a belief spread
//! over rates far apart, `V_h - M_h > M_h^2`), the horizon's count comes instead from the
//! value-by-value CDF, through the tables of [`crate::wide_mixture`] (within a stated bound of
//! the exact computation, [`WideForecast::exact_mixture_quantile`]).

use std::sync::OnceLock;

use crate::model::normal_cdf;
pub use crate::wide_counts::{negative_binomial, SMALL_MEAN};
use crate::wide_counts::{negative_binomial_cdf, negative_binomial_cdfs, terms_bound};
use crate::wide_mixture::{MixtureTables, Prepared};
use crate::wide_model::WideShared;

/// Values holding less than this probability are left out of the moments.
const SUPPORT_EPS: f64 = 1e-12;

/// Per-value, per-horizon moments of the cumulative count.
#[derive(Clone, Debug, PartialEq)]
pub struct WideForecast {
    /// Number of values of the grid.
    n: usize,
    /// `mean[(h - 1) n + b]`: expected packets by the end of tick `h` from value `b` now.
    mean: Vec<f64>,
    /// `spread[(h - 1) n + b]`: the variance the rate's evolution adds to the same, summed
    /// over the ticks (independent, as in the paper's tables).
    spread: Vec<f64>,
    /// Largest count a forecast can hold at each horizon (the top value's mean plus 10 sd).
    top: Vec<u32>,
    /// The value-by-value CDFs on a grid of counts, for beliefs spread over rates far apart,
    /// built on first use (about 80 ms; a run whose beliefs all stay narrow never needs them).
    mixture: OnceLock<MixtureTables>,
    /// `mean` value by value, `[b][h - 1]`, 0 past the last horizon (the sums of all
    /// horizons then run side by side, in vector registers).
    mean_by_value: Vec<[f64; MAX_TICKS]>,
    /// `spread` value by value, as `mean_by_value`.
    spread_by_value: Vec<[f64; MAX_TICKS]>,
}

/// What a forecast needs of a belief ([`WideForecast::summarise`]), computed once for the
/// cautious and the expected forecast of the same tick.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    moments: [HorizonMoments; MAX_TICKS],
    horizons: usize,
    /// Some horizon's moments describe the mixture badly ([`spread_out`]).
    spread_out: bool,
    /// The belief's running sums, when `spread_out`.
    prepared: Prepared,
}

impl Summary {
    /// The horizons it covers.
    pub fn horizons(&self) -> usize {
        self.horizons
    }
}

/// Overdispersion beyond the mean squared: the fitted negative binomial's Gamma has a shape
/// below 1, its density infinite at rate 0 (and the Normal's quantile is below 0), so the
/// moments say "nothing" for a belief that holds no rate near 0; the tables answer instead.
fn spread_out(m: &HorizonMoments) -> bool {
    m.variance - m.mean > m.mean * m.mean
}

/// The most horizons a forecast holds.
const MAX_TICKS: usize = crate::wire::MAX_FORECAST_TICKS;

/// Mean and variance of the cumulative count by each horizon under a belief.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HorizonMoments {
    /// Expected packets delivered by the end of the horizon.
    pub mean: f64,
    /// Their variance (Poisson, belief and rate spread), packets squared.
    pub variance: f64,
}

impl WideForecast {
    /// The moments for `horizons` ticks ahead on the shared grid.
    pub fn new(sh: &WideShared, horizons: usize) -> Self {
        let n = sh.grid.len();
        let s2 = sh.s_tick * sh.s_tick;
        let a_tau = sh.floor_tick * sh.tau;
        let mut mean = vec![0.0; horizons * n];
        let mut spread = vec![0.0; horizons * n];
        let mut top = Vec::with_capacity(horizons);
        for t in 1..=horizons {
            let ahead = (t - 1) as f64;
            let g = (ahead * s2 / 2.0).exp();
            let grow = (ahead * s2).exp() - 1.0;
            for b in 1..n {
                let m = sh.mean_count(b);
                let log = sh.s_tick * sh.grid.rate(b) >= sh.floor_tick;
                let (mu, var) = if log {
                    (m * g, m * m * g * g * grow)
                } else {
                    clipped_gaussian(m, a_tau * ahead.sqrt())
                };
                let (before_mu, before_var) = if t == 1 {
                    (0.0, 0.0)
                } else {
                    (mean[(t - 2) * n + b], spread[(t - 2) * n + b])
                };
                // The count's variance beyond the Poisson's (count_cv), at the tick's rate.
                let extra = sh.count_variance(b) - m;
                let extra = extra * (mu * mu + var) / (m * m);
                mean[(t - 1) * n + b] = before_mu + mu;
                spread[(t - 1) * n + b] = before_var + var + extra;
            }
            let last = (t - 1) * n + n - 1;
            let ceiling = mean[last] + 10.0 * (mean[last] + spread[last]).sqrt();
            top.push(ceiling.ceil().min(u32::MAX as f64 / 4.0) as u32);
        }
        let by_value = |of: &[f64]| -> Vec<[f64; MAX_TICKS]> {
            (0..n)
                .map(|b| std::array::from_fn(|h| if h < horizons { of[h * n + b] } else { 0.0 }))
                .collect()
        };
        WideForecast {
            mean_by_value: by_value(&mean),
            spread_by_value: by_value(&spread),
            n,
            mean,
            spread,
            top,
            mixture: OnceLock::new(),
        }
    }

    /// Number of horizons (ticks ahead) the forecast covers.
    pub fn horizons(&self) -> usize {
        self.top.len()
    }

    /// The tables of the value-by-value CDFs ([`MixtureTables`]), built on first use.
    pub fn mixture(&self) -> &MixtureTables {
        self.mixture
            .get_or_init(|| MixtureTables::new(self.n, &self.mean, &self.spread, &self.top))
    }

    /// Largest count the forecast can hold at horizon `h` ticks (1-based).
    pub fn max_count(&self, h: usize) -> u32 {
        self.top[h - 1]
    }

    /// Mean and variance of the cumulative count by each horizon `1..=out.len()` under the
    /// belief `prob`, written to `out`.
    pub fn moments(&self, prob: &[f64], out: &mut [HorizonMoments]) {
        self.moments_over(prob, support(prob), out);
    }

    /// [`WideForecast::moments`] over the values `lo..hi` that hold the belief.
    fn moments_over(&self, prob: &[f64], (lo, hi): (usize, usize), out: &mut [HorizonMoments]) {
        let lo = lo.max(1);
        let hi = hi.max(lo);
        let horizons = out.len().min(self.top.len());
        // Eight horizons at a time in one pass over the values, each sum still added value by
        // value in order (the same sums as one pass per horizon), in vector registers.
        for h0 in (0..horizons).step_by(8) {
            let (mut e, mut sq, mut w) = ([0.0f64; 8], [0.0f64; 8], [0.0f64; 8]);
            for ((&p, m), v) in prob[lo..hi]
                .iter()
                .zip(&self.mean_by_value[lo..hi])
                .zip(&self.spread_by_value[lo..hi])
            {
                let (m, v) = (&m[h0..h0 + 8], &v[h0..h0 + 8]);
                for j in 0..8 {
                    e[j] += p * m[j];
                    sq[j] += p * m[j] * m[j];
                    w[j] += p * v[j];
                }
            }
            for (j, slot) in out[h0..horizons].iter_mut().take(8).enumerate() {
                *slot = HorizonMoments {
                    mean: e[j],
                    variance: e[j] + w[j] + (sq[j] - e[j] * e[j]).max(0.0),
                };
            }
        }
    }

    /// What the forecasts of the belief `prob` over `horizons` ticks need, into `into` (whose
    /// allocation it reuses): the moments, and, where some horizon's moments describe the
    /// mixture badly, the belief's running sums for the tables.
    pub fn summarise(&self, prob: &[f64], horizons: usize, into: &mut Summary) {
        let horizons = horizons.min(self.top.len()).min(MAX_TICKS);
        into.horizons = horizons;
        let range = support(prob);
        self.moments_over(prob, range, &mut into.moments[..horizons]);
        into.spread_out = into.moments[..horizons].iter().any(spread_out);
        if into.spread_out {
            into.prepared.prepare(prob, range);
        }
    }

    /// The cautious forecast at `confidence`: for each horizon `h`, the smallest count `c`
    /// with P(N_h <= c) >= 1 - confidence (capped at [`WideForecast::max_count`]), written to
    /// `out[h - 1]` in MTU-sized packets, cumulative and non-decreasing in `h`.
    pub fn cautious(&self, prob: &[f64], confidence: f64, out: &mut [u32]) {
        let q = (1.0 - confidence).clamp(0.0, 1.0);
        self.cautious_at(prob, q, normal_quantile(q), out);
    }

    /// [`WideForecast::cautious`] at the lower quantile `q` (1 - confidence), `z` being the
    /// standard Normal's quantile at `q` ([`normal_quantile`], computed once by the caller).
    pub fn cautious_at(&self, prob: &[f64], q: f64, z: f64, out: &mut [u32]) {
        let mut summary = Summary::default();
        self.summarise(prob, out.len(), &mut summary);
        self.cautious_from(prob, &summary, q, z, out, &[]);
    }

    /// [`WideForecast::cautious_at`] given the belief's [`Summary`], with the search of each
    /// horizon's count, where the belief is spread out ([`MixtureTables::quantile`]),
    /// starting from `hints[h - 1]` (the last tick's answers, say; the answers do not depend
    /// on them, their cost does); a horizon without one starts from the horizon before's.
    pub fn cautious_from(
        &self,
        prob: &[f64],
        summary: &Summary,
        q: f64,
        z: f64,
        out: &mut [u32],
        hints: &[u32],
    ) {
        let mut floor = 0u32;
        for (i, slot) in out.iter_mut().enumerate().take(summary.horizons) {
            let m = summary.moments[i];
            let c = if spread_out(&m) {
                let hint = hints.get(i).copied().unwrap_or(floor);
                self.mixture().quantile(prob, &summary.prepared, i, q, hint)
            } else {
                quantile(m, q, z)
            };
            let c = c.clamp(floor, self.top[i]);
            *slot = c;
            floor = c;
        }
    }

    /// P(N_h <= c) under the belief `prob`, summed over every value (`h` 0-based): the
    /// outage delivers nothing, and value `b`'s count is negative binomial of its own mean and
    /// variance below [`SMALL_MEAN`], Normal above. The reference that
    /// [`MixtureTables::quantile`] approximates; it costs a pass over the values, each
    /// negative binomial summed term by term.
    pub fn exact_mixture_cdf(&self, prob: &[f64], h: usize, c: f64) -> f64 {
        let base = h * self.n;
        let mut total = prob.first().copied().unwrap_or(0.0);
        for (b, &p) in prob.iter().enumerate().skip(1) {
            let mu = self.mean[base + b];
            let var = mu + self.spread[base + b];
            let sd = var.sqrt();
            if p == 0.0 {
                continue;
            }
            total += p * if mu < SMALL_MEAN {
                negative_binomial_cdf(mu, var - mu, c)
            } else {
                normal_cdf((c + 0.5 - mu) / sd)
            };
        }
        total
    }

    /// How far the tables' answers ([`MixtureTables::quantile`]) for the belief `prob` at
    /// level `q` stray from the exact computation, over every horizon: the most by which
    /// `F(c)` falls short of `q` (unless `c` is the horizon's largest count) or `F(c - 1)`
    /// reaches it, `F` the exact CDF ([`WideForecast::exact_mixture_cdf`]); at most
    /// [`crate::wide_mixture::ERROR_BOUND`]. For tests and benches: it costs two exact sums a
    /// horizon.
    pub fn table_level_error(&self, prob: &[f64], q: f64) -> f64 {
        let belief = Prepared::new(prob, support(prob));
        let mut worst = 0.0f64;
        for h in 0..self.horizons() {
            let c = self.mixture().quantile(prob, &belief, h, q, 0);
            if c < self.top[h] {
                worst = worst.max(q - self.exact_mixture_cdf(prob, h, c as f64));
            }
            if c > 0 {
                worst = worst.max(self.exact_mixture_cdf(prob, h, c as f64 - 1.0) - q);
            }
        }
        worst
    }

    /// The smallest whole `c` with P(N_h <= c) >= q summed value by value
    /// ([`WideForecast::exact_mixture_cdf`]), by bisection from 0 up to the horizon's largest
    /// count (which it gives when even that falls short): the reference for the tables that
    /// the forecast uses where two moments describe the mixture badly, a belief spread over
    /// rates far apart (after quiet spells, where only heartbeats came), whose variance is so
    /// large against its mean that the fitted count puts nearly all its mass at 0, though no
    /// rate the belief holds would deliver so little.
    pub fn exact_mixture_quantile(&self, prob: &[f64], h: usize, q: f64) -> u32 {
        let top = self.top[h] as f64;
        let (mut lo, mut hi) = (0.0f64, top);
        if self.exact_mixture_cdf(prob, h, lo) >= q {
            return 0;
        }
        if self.exact_mixture_cdf(prob, h, hi) < q {
            return self.top[h];
        }
        // Invariant: F(lo) < q <= F(hi).
        while hi - lo > 1.0 {
            let mid = (0.5 * (lo + hi)).floor();
            if self.exact_mixture_cdf(prob, h, mid) >= q {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi as u32
    }
}

/// Mean and variance of `max(0, X)` for X Normal of mean `m` and sd `sd` (`sd` may be 0):
/// the additive motion's rate, which can not fall below 0 (what would falls into the
/// outage and delivers nothing).
fn clipped_gaussian(m: f64, sd: f64) -> (f64, f64) {
    if sd <= 0.0 {
        return (m.max(0.0), 0.0);
    }
    let x = m / sd;
    let cdf = normal_cdf(x);
    let pdf = (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
    let mean = m * cdf + sd * pdf;
    let second = (m * m + sd * sd) * cdf + m * sd * pdf;
    (mean, (second - mean * mean).max(0.0))
}

/// The smallest whole `c` with P(N <= c) >= q for the count of these moments (negative
/// binomial below [`SMALL_MEAN`], Normal above); `z` is the standard Normal's `q` quantile.
pub fn quantile(m: HorizonMoments, q: f64, z: f64) -> u32 {
    if m.mean.is_nan() || m.mean <= 0.0 {
        return 0;
    }
    if m.mean >= SMALL_MEAN {
        let c = (m.mean + z * m.variance.max(m.mean).sqrt() - 0.5).ceil();
        return c.clamp(0.0, u32::MAX as f64 / 4.0) as u32;
    }
    // The mean plus 40 sd bounds the search whatever rounding does.
    let bound = terms_bound(m.mean, (m.variance - m.mean).max(0.0));
    negative_binomial_cdfs(m.mean, (m.variance - m.mean).max(0.0))
        .take(bound)
        .position(|acc| acc >= q)
        .unwrap_or(bound) as u32
}

/// The standard Normal's quantile at `q` (0 < q < 1), by bisection on its CDF to 1e-12.
pub fn normal_quantile(q: f64) -> f64 {
    if q <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if q >= 1.0 {
        return f64::INFINITY;
    }
    let (mut lo, mut hi) = (-40.0f64, 40.0f64);
    while hi - lo > 1e-12 {
        let mid = 0.5 * (lo + hi);
        if normal_cdf(mid) < q {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The range of values holding more than `SUPPORT_EPS` (1e-12) each (the others are left out of
/// the forecast).
pub fn support(prob: &[f64]) -> (usize, usize) {
    let lo = prob.iter().position(|&p| p > SUPPORT_EPS).unwrap_or(0);
    let hi = prob
        .iter()
        .rposition(|&p| p > SUPPORT_EPS)
        .map_or(prob.len(), |i| i + 1);
    (lo, hi.max(lo))
}
