//! The receiver's rate estimator behind one interface: Sprout's Bayesian model with its
//! cautious forecast, or Sprout-EWMA.

use std::sync::Arc;

use crate::ewma::EwmaEstimator;
use crate::forecast::ForecastTables;
use crate::model::RateModel;
use crate::params::{Config, EstimatorKind, ModelParams};

/// What a receiver needs from a rate estimator, once per tick.
pub trait Estimator: Send + std::fmt::Debug {
    /// Advances the belief by one tick without looking at the link.
    fn evolve(&mut self);
    /// Takes in the packets (MTU-sized units, may be fractional) that arrived in the tick.
    fn observe(&mut self, packets: f64);
    /// Writes the forecast: cumulative MTU-sized packets expected to be delivered by the end of
    /// each of the next `out.len()` ticks.
    fn forecast(&self, out: &mut [u32]);
    /// Current best estimate of the rate, in packets/s (for statistics).
    fn rate_pps(&self) -> f64;
    /// The largest cumulative count, in MTU-sized packets, this estimator can ever write at
    /// horizon `h` ticks (`out[h - 1]` of [`Estimator::forecast`]), whatever it has observed.
    /// An endpoint drops a peer's forecast that goes beyond it (both ends share the model).
    fn max_forecast(&self, h: usize) -> u32;
    /// A copy of this estimator, in the same state.
    fn box_clone(&self) -> Box<dyn Estimator>;
}

impl Clone for Box<dyn Estimator> {
    fn clone(&self) -> Self {
        self.box_clone()
    }
}

/// Sprout's estimator: the Bayesian rate model and the cautious forecast at a confidence.
#[derive(Clone, Debug)]
pub struct SproutEstimator {
    model: RateModel,
    tables: Arc<ForecastTables>,
    confidence: f64,
}

impl SproutEstimator {
    /// A fresh estimator (uniform prior) using shared precomputed tables.
    pub fn new(params: &ModelParams, confidence: f64) -> Self {
        let tables = ForecastTables::shared(params);
        SproutEstimator {
            model: RateModel::new(params),
            tables,
            confidence,
        }
    }

    /// The current belief about the rate.
    pub fn model(&self) -> &RateModel {
        &self.model
    }
}

impl Estimator for SproutEstimator {
    fn evolve(&mut self) {
        self.model.evolve();
    }

    fn observe(&mut self, packets: f64) {
        self.model.observe(packets);
    }

    fn forecast(&self, out: &mut [u32]) {
        self.tables
            .cautious(self.model.probabilities(), self.confidence, out);
    }

    fn rate_pps(&self) -> f64 {
        self.model.mean_rate()
    }

    /// The tables hold counts up to [`ForecastTables::max_count`] at each horizon; when even
    /// that is not reached with the required probability, the cautious forecast writes two past
    /// it (as the authors' code does), so the largest entry is `max_count(h) + 2`.
    fn max_forecast(&self, h: usize) -> u32 {
        u32::try_from(self.tables.max_count(h).saturating_add(2)).unwrap_or(u32::MAX)
    }

    fn box_clone(&self) -> Box<dyn Estimator> {
        Box::new(self.clone())
    }
}

/// Builds the estimator a configuration asks for.
pub fn build(config: &Config) -> Box<dyn Estimator> {
    match config.estimator {
        EstimatorKind::Sprout => Box::new(SproutEstimator::new(&config.model, config.confidence)),
        EstimatorKind::Ewma { gain } => Box::new(EwmaEstimator::new(&config.model, gain)),
    }
}
