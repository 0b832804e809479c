//! Sprout's estimator on the wide rate model ([`crate::wide_model`]) with its table-free
//! cautious forecast ([`crate::wide_forecast`]).

use std::cell::{Cell, RefCell};
use std::sync::{Arc, Mutex, OnceLock};

use crate::estimator_trait::Estimator;
use crate::params::{ModelParams, WideParams};
use crate::wide_forecast::{normal_quantile, Summary, WideForecast};
use crate::wide_model::{WideModel, WideShared};
use crate::wire::MAX_FORECAST_TICKS;

/// The grid, kernel and forecast moments of one parameter set, shared by every estimator.
#[derive(Debug)]
struct Precomputed {
    key: (ModelParams, WideParams),
    shared: Arc<WideShared>,
    forecast: Arc<WideForecast>,
}

/// The precomputed parts for these parameters, built once per process.
pub(crate) fn precomputed(
    model: &ModelParams,
    wide: &WideParams,
) -> (Arc<WideShared>, Arc<WideForecast>) {
    static CACHE: OnceLock<Mutex<Vec<Precomputed>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(Vec::new()));
    let mut guard = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = guard.iter().find(|p| &p.key.0 == model && &p.key.1 == wide) {
        return (p.shared.clone(), p.forecast.clone());
    }
    let shared = Arc::new(WideShared::new(model, wide));
    let forecast = Arc::new(WideForecast::new(&shared, model.forecast_ticks));
    guard.push(Precomputed {
        key: (model.clone(), wide.clone()),
        shared: shared.clone(),
        forecast: forecast.clone(),
    });
    (shared, forecast)
}

/// Sprout's estimator on the wide model: Bayesian inference over rates from an outage to
/// 1 Gbit/s and the cautious forecast at a confidence.
#[derive(Clone, Debug)]
pub struct WideEstimator {
    model: WideModel,
    forecast: Arc<WideForecast>,
    /// The forecast's lower quantile, 1 - confidence.
    q: f64,
    /// The standard Normal's quantile at `q`.
    z: f64,
    /// The last cautious and expected forecasts, where the next ones' searches start.
    last: Cell<[Option<[u32; MAX_FORECAST_TICKS]>; 2]>,
    /// The belief's summary for the forecasts, and the model's version it was taken at.
    summary: RefCell<(Option<u64>, Summary)>,
}

impl WideEstimator {
    /// A fresh estimator (the prior). `model` gives the tick and the forecast's length;
    /// `wide` the rest.
    pub fn new(model: &ModelParams, wide: &WideParams, confidence: f64) -> Self {
        let (shared, forecast) = precomputed(model, wide);
        WideEstimator {
            model: WideModel::new(shared),
            forecast,
            q: (1.0 - confidence).clamp(0.0, 1.0),
            z: normal_quantile((1.0 - confidence).clamp(0.0, 1.0)),
            last: Cell::new([None; 2]),
            summary: RefCell::new((None, Summary::default())),
        }
    }

    /// The current belief about the rate.
    pub fn model(&self) -> &WideModel {
        &self.model
    }

    /// The belief, to set it in tests and tools.
    pub fn model_mut(&mut self) -> &mut WideModel {
        &mut self.model
    }

    /// The forecast's per-value moments.
    pub fn forecaster(&self) -> &WideForecast {
        &self.forecast
    }

    /// The forecast at the lower quantile `q` (`z` the Normal's), its searches started from
    /// the last forecast of the same kind (`kind` 0: cautious, 1: expected), which is then
    /// this one.
    fn forecast_from(&self, kind: usize, q: f64, z: f64, out: &mut [u32]) {
        let mut last = self.last.get();
        let n = out.len().min(MAX_FORECAST_TICKS);
        let hints = last[kind].as_ref().map_or(&[][..], |h| &h[..n]);
        let prob = self.model.probabilities();
        let mut summary = self.summary.borrow_mut();
        let (version, summary) = &mut *summary;
        if *version != Some(self.model.version()) || summary.horizons() < n {
            self.forecast.summarise(prob, n, summary);
            *version = Some(self.model.version());
        }
        self.forecast
            .cautious_from(prob, summary, q, z, &mut out[..n], hints);
        let mut now = [0; MAX_FORECAST_TICKS];
        now[..n].copy_from_slice(&out[..n]);
        last[kind] = Some(now);
        self.last.set(last);
    }
}

impl Estimator for WideEstimator {
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
        self.forecast_from(0, self.q, self.z, out);
    }

    /// The median of the same forecast (confidence 0.5).
    fn forecast_expected(&self, out: &mut [u32]) -> bool {
        self.forecast_from(1, 0.5, 0.0, out);
        true
    }

    fn rate_pps(&self) -> f64 {
        self.model.mean_rate()
    }

    /// The top value's mean plus 10 standard deviations at horizon `h`
    /// ([`WideForecast::max_count`]); beyond the forecast's ticks, the last one's.
    fn max_forecast(&self, h: usize) -> u32 {
        let h = h.clamp(1, self.forecast.horizons());
        self.forecast.max_count(h)
    }

    fn wide_belief(&self) -> Option<&[f64]> {
        Some(self.model.probabilities())
    }

    fn box_clone(&self) -> Box<dyn Estimator> {
        Box::new(self.clone())
    }
}
