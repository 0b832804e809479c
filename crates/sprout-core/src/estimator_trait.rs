//! The interface every rate estimator of the receiver implements, apart from the estimators
//! themselves ([`crate::estimator`], [`crate::ewma`]) so that both depend on it and not on
//! each other.

/// What a receiver needs from a rate estimator, once per tick.
pub trait Estimator: Send + std::fmt::Debug {
    /// Advances the belief by one tick without looking at the link.
    fn evolve(&mut self);
    /// Takes in the packets (MTU-sized units, may be fractional) that arrived in the tick.
    fn observe(&mut self, packets: f64);
    /// Takes in the packets that arrived in a tick in which the sender was
    /// application-limited: the link could have carried at least this many (a censored
    /// observation), perhaps many more.
    fn observe_at_least(&mut self, packets: f64);
    /// Writes the forecast: cumulative MTU-sized packets expected to be delivered by the end of
    /// each of the next `out.len()` ticks.
    fn forecast(&self, out: &mut [u32]);
    /// Writes the expected (median) cumulative counts for the same ticks, if this estimator's
    /// forecast is a cautious one that differs from them; returns whether it wrote them.
    fn forecast_expected(&self, _out: &mut [u32]) -> bool {
        false
    }
    /// Current best estimate of the rate, in packets/s (for statistics).
    fn rate_pps(&self) -> f64;
    /// The largest cumulative count, in MTU-sized packets, this estimator can ever write at
    /// horizon `h` ticks (`out[h - 1]` of [`Estimator::forecast`]), whatever it has observed.
    /// An endpoint drops a peer's forecast that goes beyond it (both ends share the model).
    fn max_forecast(&self, h: usize) -> u32;
    /// The belief over the rate model's values, for estimators that hold one over the wide
    /// model's grid ([`crate::WideEstimator`]): to check its forecast against the exact
    /// computation in tests and benches.
    fn wide_belief(&self) -> Option<&[f64]> {
        None
    }
    /// A copy of this estimator, in the same state.
    fn box_clone(&self) -> Box<dyn Estimator>;
}

impl Clone for Box<dyn Estimator> {
    fn clone(&self) -> Self {
        self.box_clone()
    }
}
