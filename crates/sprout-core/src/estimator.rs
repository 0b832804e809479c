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
}

/// Sprout's estimator: the Bayesian rate model and the cautious forecast at a confidence.
#[derive(Debug)]
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
}

/// Builds the estimator a configuration asks for.
pub fn build(config: &Config) -> Box<dyn Estimator> {
    match config.estimator {
        EstimatorKind::Sprout => Box::new(SproutEstimator::new(&config.model, config.confidence)),
        EstimatorKind::Ewma { gain } => Box::new(EwmaEstimator::new(&config.model, gain)),
    }
}
