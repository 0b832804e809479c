//! The wide model with its volatility learned online (issue 40): a belief over a few
//! volatilities of the wide rate model ([`crate::wide_model`]) instead of one fixed.
//!
//! - **State**: the belief over (volatility, rate), held as one wide belief `q_k` over
//!   the rates per component `k` (component `k` multiplies the wide model's `sigma_log` and
//!   `sigma_floor` by `factors[k]`, [`WideVolParams`]) and the components' weights `w_k`
//!   (summing to 1): the joint probability is `w_k q_k(rate)`.
//! - **Evolution**: each component's rate moves by its own motion; the volatility may change
//!   too, which moves the weights alone toward even (each tick each weight keeps `1 - eps` of
//!   itself and gains `eps / K`, `eps = 1 - exp(-switch_rate tau)`): the forgetting of dynamic
//!   model averaging (Raftery et al., 2010). The components' beliefs are not mixed as an
//!   exact switching model would mix them: mixing spreads every component over the union of
//!   their supports, which made the tick about twice as dear again.
//! - **Observation**: the count's likelihood does not depend on the volatility (the grid and
//!   the count model are the wide model's for every component), so Bayes' rule moves each
//!   weight by the count's marginal likelihood under its belief,
//!   `w_k <- w_k sum_r q_k(r) P(count | r)` (normalised), and updates each `q_k` as the wide
//!   model does. A steady link favours the small volatilities, a volatile one the large.
//! - **Forecast**: the cumulative count by each horizon under the weighted mixture: its mean
//!   and variance are the weighted sums of each component's ([`WideForecast::moments`]),
//!   `M = sum_k w_k M_k`, `V = sum_k w_k (V_k + M_k^2) - M^2`, and the quantile is taken as the
//!   wide forecast takes it ([`crate::wide_forecast::quantile`]). Where two moments describe
//!   the mixture badly (a belief spread over rates far apart), the value-by-value tables of
//!   the component of most weight are used, over the pooled belief `sum_k w_k q_k`: an
//!   approximation (the other components' rate spread is left out there).
//!
//! Cost: a tick evolves and updates each component, so about the wide model's tick per
//! component, the large volatilities' kernels wider (`cargo bench -p sprout-core --bench
//! receiver_tick -- "wide against"`: 1.7 to 2.8 times the wide model's tick at the default two
//! components; three, 0.25, 1 and 4, cost 3.5 to 5 times).

use std::cell::RefCell;
use std::sync::Arc;

use crate::estimator_trait::Estimator;
use crate::params::{ModelParams, WideVolParams};
use crate::wide_estimator::precomputed;
use crate::wide_forecast::{normal_quantile, quantile, support, HorizonMoments, WideForecast};
use crate::wide_mixture::Prepared;
use crate::wide_model::{WideModel, WideShared};
use crate::wire::MAX_FORECAST_TICKS;

/// No component's weight falls below this after an update (then the weights are normalised
/// again): a count that no belief of a component explains leaves it a chance to return.
pub const MIN_WEIGHT: f64 = 1e-9;

/// The forecast's per-horizon moments of the mixture, and what they were computed from.
#[derive(Clone, Debug, Default)]
struct Cache {
    /// The estimator's version they were taken at.
    version: Option<u64>,
    /// Horizons covered.
    horizons: usize,
    /// The mixture's moments per horizon.
    moments: [HorizonMoments; MAX_FORECAST_TICKS],
    /// The pooled belief `sum_k w_k q_k`, when some horizon is spread out (else empty).
    pooled: Vec<f64>,
    /// `pooled` prepared for the tables.
    prepared: Prepared,
}

/// Sprout's estimator on the wide model with a belief over its volatility (module doc).
#[derive(Clone, Debug)]
pub struct WideVolEstimator {
    /// The components' factors on the volatility, as configured.
    factors: Vec<f64>,
    /// Each component's belief over the rates.
    models: Vec<WideModel>,
    /// Each component's forecast moments.
    forecasts: Vec<Arc<WideForecast>>,
    /// The components' weights (sum 1).
    weights: Vec<f64>,
    /// The share of a component's mass that moves to the others each tick.
    switch: f64,
    /// The forecast's lower quantile, 1 - confidence, and the standard Normal's at it.
    q: f64,
    z: f64,
    /// Counts the changes to the state.
    version: u64,
    /// The censored likelihood P(N >= k | value) last computed, with its `k`.
    censored: Option<(u32, Vec<f64>)>,
    /// Scratch: the count's likelihood per value, relative to its largest.
    likelihood: Vec<f64>,
    cache: RefCell<Cache>,
}

/// The first and one past the last index holding non-zero probability (`(0, 0)`: none).
fn nonzero_range(p: &[f64]) -> (usize, usize) {
    match p.iter().position(|&x| x > 0.0) {
        Some(lo) => (lo, p.iter().rposition(|&x| x > 0.0).map_or(lo, |i| i + 1)),
        None => (0, 0),
    }
}

impl WideVolEstimator {
    /// A fresh estimator: each component at the wide model's prior, the weights even.
    /// `model` gives the tick and the forecast's length; `params` the rest (assumed valid,
    /// [`WideVolParams::validate`]).
    /// With no factor, the one of 1 (the wide model).
    pub fn new(model: &ModelParams, params: &WideVolParams, confidence: f64) -> Self {
        let mut params = params.clone();
        if params.factors.is_empty() {
            params.factors = vec![1.0];
        }
        let k = params.factors.len();
        let mut models = Vec::with_capacity(k);
        let mut forecasts = Vec::with_capacity(k);
        for i in 0..k {
            let (shared, forecast) = precomputed(model, &params.component(i));
            models.push(WideModel::new(shared));
            forecasts.push(forecast);
        }
        let q = (1.0 - confidence).clamp(0.0, 1.0);
        let eps = 1.0 - (-params.switch_rate * model.tau()).exp();
        WideVolEstimator {
            factors: params.factors.clone(),
            weights: vec![1.0 / models.len().max(1) as f64; models.len()],
            switch: if models.len() > 1 {
                eps.clamp(0.0, 1.0)
            } else {
                0.0
            },
            models,
            forecasts,
            q,
            z: normal_quantile(q),
            version: 0,
            censored: None,
            likelihood: Vec::new(),
            cache: RefCell::new(Cache::default()),
        }
    }

    /// The components' weights, in the order of the factors (sum 1).
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// The components' volatility factors.
    pub fn factors(&self) -> &[f64] {
        &self.factors
    }

    /// Component `k`'s belief over the rates.
    pub fn component(&self, k: usize) -> &WideModel {
        &self.models[k]
    }

    /// The precomputed grid and count model, the same for every component.
    fn shared(&self) -> &WideShared {
        self.models[0].shared()
    }

    /// The volatility's switch, on the weights alone: each weight keeps `1 - eps` of itself
    /// and gains `eps / K` (the module doc says why the beliefs are not mixed).
    fn switch_volatility(&mut self) {
        let k = self.weights.len() as f64;
        let eps = self.switch;
        if eps > 0.0 {
            self.weights
                .iter_mut()
                .for_each(|w| *w = (1.0 - eps) * *w + eps / k);
        }
    }

    /// Bayes' rule on the weights with `likelihood(value)` (any positive scale): each weight
    /// times its belief's marginal likelihood, normalised, floored at [`MIN_WEIGHT`]. Left
    /// as they are when no component explains the count at all (or the sums are not finite).
    fn reweigh(&mut self, likelihood: &[f64]) {
        let marginal: Vec<f64> = self
            .models
            .iter()
            .map(|m| {
                m.probabilities()
                    .iter()
                    .zip(likelihood)
                    .map(|(p, l)| p * l)
                    .sum::<f64>()
            })
            .collect();
        let posterior: Vec<f64> = self
            .weights
            .iter()
            .zip(&marginal)
            .map(|(w, l)| w * l)
            .collect();
        let total: f64 = posterior.iter().sum();
        if !(total > 0.0 && total.is_finite()) {
            return;
        }
        for (w, p) in self.weights.iter_mut().zip(&posterior) {
            *w = (p / total).max(MIN_WEIGHT);
        }
        let total: f64 = self.weights.iter().sum();
        self.weights.iter_mut().for_each(|w| *w /= total);
    }

    /// The likelihood of `k` packets (`k >= 0`, MTU-sized) at every value, divided by its
    /// largest over the values any component holds, into `self.likelihood`.
    fn count_likelihood(&mut self, k: f64) {
        let n = self.shared().grid.len();
        let (mut lo, mut hi) = (n, 0);
        for m in &self.models {
            let (a, b) = nonzero_range(m.probabilities());
            if a < b {
                lo = lo.min(a);
                hi = hi.max(b);
            }
        }
        let mut like = std::mem::take(&mut self.likelihood);
        like.clear();
        like.resize(n, 0.0);
        let sh = self.shared();
        let constant = sh.count_constant(k);
        let mut best = f64::NEG_INFINITY;
        for (i, l) in like.iter_mut().enumerate().take(hi).skip(lo) {
            // The outage delivers nothing: likelihood 1 of no packet, 0 of any.
            *l = match (i, k > 0.0) {
                (0, false) => 0.0,
                (0, true) => f64::NEG_INFINITY,
                _ => sh.log_likelihood(i, k, constant),
            };
            best = best.max(*l);
        }
        for l in like.iter_mut().take(hi).skip(lo) {
            *l = if best.is_finite() {
                (*l - best).exp()
            } else {
                0.0
            };
        }
        self.likelihood = like;
    }

    /// The mixture's moments per horizon for `n` horizons (cached per version).
    fn refresh(&self, n: usize) {
        let mut cache = self.cache.borrow_mut();
        if cache.version == Some(self.version) && cache.horizons >= n {
            return;
        }
        let mut sums = [(0.0f64, 0.0f64); MAX_FORECAST_TICKS];
        let mut part = [HorizonMoments::default(); MAX_FORECAST_TICKS];
        for ((m, f), &w) in self.models.iter().zip(&self.forecasts).zip(&self.weights) {
            f.moments(m.probabilities(), &mut part[..n]);
            for (s, p) in sums.iter_mut().zip(&part[..n]) {
                s.0 += w * p.mean;
                s.1 += w * (p.variance + p.mean * p.mean);
            }
        }
        let mut spread = false;
        for (slot, &(mean, second)) in cache.moments.iter_mut().zip(&sums[..n]) {
            *slot = HorizonMoments {
                mean,
                variance: (second - mean * mean).max(mean),
            };
            spread |= slot.variance - slot.mean > slot.mean * slot.mean;
        }
        cache.pooled.clear();
        if spread {
            let len = self.shared().grid.len();
            let mut pooled = std::mem::take(&mut cache.pooled);
            pooled.resize(len, 0.0);
            for (m, &w) in self.models.iter().zip(&self.weights) {
                for (x, &p) in pooled.iter_mut().zip(m.probabilities()) {
                    *x += w * p;
                }
            }
            cache.prepared.prepare(&pooled, support(&pooled));
            cache.pooled = pooled;
        }
        cache.version = Some(self.version);
        cache.horizons = n;
    }

    /// The forecast at the lower quantile `q` (`z` the Normal's) into `out`.
    fn forecast_at(&self, q: f64, z: f64, out: &mut [u32]) {
        let n = out
            .len()
            .min(MAX_FORECAST_TICKS)
            .min(self.forecasts[0].horizons());
        self.refresh(n);
        let cache = self.cache.borrow();
        let heaviest = (0..self.weights.len())
            .max_by(|&a, &b| self.weights[a].total_cmp(&self.weights[b]))
            .unwrap_or(0);
        let mut floor = 0u32;
        for (i, slot) in out.iter_mut().enumerate().take(n) {
            let m = cache.moments[i];
            let c = if m.variance - m.mean > m.mean * m.mean && !cache.pooled.is_empty() {
                self.forecasts[heaviest].mixture().quantile(
                    &cache.pooled,
                    &cache.prepared,
                    i,
                    q,
                    floor,
                )
            } else {
                quantile(m, q, z)
            };
            let c = c.clamp(floor, self.max_forecast(i + 1));
            *slot = c;
            floor = c;
        }
    }
}

impl Estimator for WideVolEstimator {
    fn evolve(&mut self) {
        self.switch_volatility();
        self.models.iter_mut().for_each(WideModel::evolve);
        self.version = self.version.wrapping_add(1);
    }

    fn observe(&mut self, packets: f64) {
        let k = if packets.is_finite() && packets > 0.0 {
            packets
        } else {
            0.0
        };
        self.count_likelihood(k);
        let like = std::mem::take(&mut self.likelihood);
        self.reweigh(&like);
        self.likelihood = like;
        self.models.iter_mut().for_each(|m| m.observe(k));
        self.version = self.version.wrapping_add(1);
    }

    fn observe_at_least(&mut self, packets: f64) {
        if !(packets.is_finite() && packets >= 1.0) {
            return;
        }
        let k = packets.floor().min(u32::MAX as f64) as u32;
        let mut cached = self.censored.take();
        if cached.as_ref().is_none_or(|c| c.0 != k) {
            let sh = self.shared();
            let tail = (0..sh.grid.len()).map(|i| sh.tail_at_least(i, k)).collect();
            cached = Some((k, tail));
        }
        if let Some((_, tail)) = &cached {
            self.reweigh(tail);
        }
        self.censored = cached;
        self.models
            .iter_mut()
            .for_each(|m| m.observe_at_least(packets));
        self.version = self.version.wrapping_add(1);
    }

    fn forecast(&self, out: &mut [u32]) {
        self.forecast_at(self.q, self.z, out);
    }

    /// The median of the same forecast (confidence 0.5).
    fn forecast_expected(&self, out: &mut [u32]) -> bool {
        self.forecast_at(0.5, 0.0, out);
        true
    }

    fn rate_pps(&self) -> f64 {
        self.models
            .iter()
            .zip(&self.weights)
            .map(|(m, w)| w * m.mean_rate())
            .sum()
    }

    /// The largest of the components' [`WideForecast::max_count`] at horizon `h`.
    fn max_forecast(&self, h: usize) -> u32 {
        self.forecasts
            .iter()
            .map(|f| f.max_count(h.clamp(1, f.horizons())))
            .max()
            .unwrap_or(0)
    }

    fn box_clone(&self) -> Box<dyn Estimator> {
        Box::new(self.clone())
    }
}
