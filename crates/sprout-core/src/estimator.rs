//! The receiver's rate estimator behind one interface: Sprout's Bayesian model with its
//! cautious forecast (the paper's model or the wide one), or Sprout-EWMA.

use std::sync::Arc;

use crate::ewma::EwmaEstimator;
use crate::forecast::ForecastTables;
use crate::model::RateModel;
use crate::params::{Config, EstimatorKind, ModelParams};
use crate::wide_estimator::WideEstimator;

// The trait lives in its own module, which both estimators import, so that this module (which
// builds either) and `ewma` do not import each other.
pub use crate::estimator_trait::Estimator;

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

    fn observe_at_least(&mut self, packets: f64) {
        self.model.observe_at_least(packets);
    }

    fn forecast(&self, out: &mut [u32]) {
        self.tables
            .cautious(self.model.probabilities(), self.confidence, out);
    }

    /// The median of the same forecast (confidence 0.5).
    fn forecast_expected(&self, out: &mut [u32]) -> bool {
        self.tables.cautious(self.model.probabilities(), 0.5, out);
        true
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
        EstimatorKind::Wide(ref wide) => {
            Box::new(WideEstimator::new(&config.model, wide, config.confidence))
        }
        EstimatorKind::WideVol(ref vol) => Box::new(crate::wide_vol::WideVolEstimator::new(
            &config.model,
            vol,
            config.confidence,
        )),
    }
}
