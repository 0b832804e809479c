//! Sprout-EWMA (paper §5.3): the observed rate smoothed by an exponentially weighted moving
//! average, and a forecast that assumes that rate for all the forecast's ticks.

use crate::estimator_trait::Estimator;
use crate::params::ModelParams;

/// The EWMA's forecast assumes at most this rate, in MTU-sized packets per second: the wide
/// rate model's top rate ([`crate::params::WideParams::default`]'s `max_rate_pps`, 83,334
/// packets/s, 1 Gbit/s of 1,500-byte packets), so that Sprout-EWMA can fill a link as fast as
/// the default model can. The average itself has no bound (a tick's observation is whatever
/// arrived), so without a clamp a peer's forecast could hold any count up to `u32::MAX`; with
/// it, both ends know the largest count a conforming forecast can hold
/// ([`Estimator::max_forecast`]), and a forecast beyond it is never sent. It was 10,000
/// packets/s ([`MAX_RATE_FACTOR`] x the paper model's top rate), which held Sprout-EWMA to 21.7%
/// of a 1 Gbit/s link; the paper's links never come near either bound.
pub const MAX_RATE_PPS: f64 = 83_334.0;

/// The clamp is at least this many times the model's top rate
/// ([`ModelParams::max_rate_pps`]), for a model configured above [`MAX_RATE_PPS`] / 10.
pub const MAX_RATE_FACTOR: f64 = 10.0;

/// The EWMA forecast's top rate for a model, in packets/s: the larger of [`MAX_RATE_PPS`] and
/// [`MAX_RATE_FACTOR`] x its top rate.
pub fn max_rate_pps(params: &ModelParams) -> f64 {
    MAX_RATE_PPS.max(MAX_RATE_FACTOR * params.max_rate_pps)
}

/// An EWMA of the observed per-tick rate, in packets/s.
#[derive(Clone, Debug)]
pub struct EwmaEstimator {
    gain: f64,
    tau: f64,
    rate: f64,
    seeded: bool,
    /// Most packets per tick the forecast assumes ([`max_rate_pps`] x tau).
    max_per_tick: f64,
}

impl EwmaEstimator {
    /// A new estimator; `gain` is the weight of each tick's observation (0..=1).
    pub fn new(params: &ModelParams, gain: f64) -> Self {
        EwmaEstimator {
            gain,
            tau: params.tau(),
            rate: 0.0,
            seeded: false,
            max_per_tick: max_rate_pps(params) * params.tau(),
        }
    }
}

impl Estimator for EwmaEstimator {
    fn evolve(&mut self) {}

    fn observe(&mut self, packets: f64) {
        let sample = packets.max(0.0) / self.tau;
        if self.seeded {
            self.rate += self.gain * (sample - self.rate);
        } else {
            // The first observation sets the average; there is no prior to blend with.
            self.rate = sample;
            self.seeded = true;
        }
    }

    /// A lower bound on the rate only raises the average (as BBR takes application-limited
    /// samples): a quiet sender does not talk the link's rate down to its own.
    fn observe_at_least(&mut self, packets: f64) {
        if !self.seeded || packets.max(0.0) / self.tau > self.rate {
            self.observe(packets);
        }
    }

    fn forecast(&self, out: &mut [u32]) {
        let per_tick = (self.rate * self.tau).min(self.max_per_tick);
        for (i, slot) in out.iter_mut().enumerate() {
            *slot = (per_tick * (i + 1) as f64).floor() as u32;
        }
    }

    fn rate_pps(&self) -> f64 {
        self.rate
    }

    fn max_forecast(&self, h: usize) -> u32 {
        (self.max_per_tick * h as f64).floor() as u32
    }

    fn box_clone(&self) -> Box<dyn Estimator> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ewma_known_answers() {
        let p = ModelParams::default();
        let mut e = EwmaEstimator::new(&p, 0.25);
        e.observe(10.0); // first observation: 500 packets/s
        assert_eq!(e.rate_pps(), 500.0);
        e.observe(0.0); // 500 + 0.25 * (0 - 500) = 375
        assert_eq!(e.rate_pps(), 375.0);
        let mut out = [0u32; 8];
        e.forecast(&mut out); // 7.5 packets per tick, no caution
        assert_eq!(out, [7, 15, 22, 30, 37, 45, 52, 60]);
    }

    #[test]
    fn a_lower_bound_only_raises_the_average() {
        let p = ModelParams::default();
        let mut e = EwmaEstimator::new(&p, 0.25);
        e.observe_at_least(10.0); // unseeded: the first observation sets it, 500 packets/s
        assert_eq!(e.rate_pps(), 500.0);
        e.observe_at_least(2.0); // 100 packets/s or more: says nothing new
        assert_eq!(e.rate_pps(), 500.0);
        e.observe_at_least(18.0); // 900 or more: 500 + 0.25 * 400
        assert_eq!(e.rate_pps(), 600.0);
    }

    #[test]
    fn forecast_is_clamped_to_its_documented_maximum() {
        let p = ModelParams::default();
        let mut e = EwmaEstimator::new(&p, 0.25);
        e.observe(1e9); // a flood: far beyond any link
        let mut out = [0u32; 8];
        e.forecast(&mut out);
        // 83,334 packets/s x 20 ms = 1,666.68 packets per tick.
        assert_eq!(out[0], 1666);
        assert_eq!(out[7], 13_333);
        for (h, &c) in (1..).zip(&out) {
            assert!(c <= e.max_forecast(h));
        }
        assert_eq!(e.max_forecast(8), 13_333);
    }

    #[test]
    fn a_1_gbit_rate_is_forecast_whole() {
        // 1 Gbit/s of 1,500-byte packets: 83,333.3 packets/s, 1,666.7 a tick; the old clamp
        // (10,000 packets/s) forecast 200.
        let p = ModelParams::default();
        let mut e = EwmaEstimator::new(&p, 0.25);
        e.observe(1e9 / 8.0 / 1500.0 * p.tau());
        let mut out = [0u32; 8];
        e.forecast(&mut out);
        assert_eq!(out[0], 1666);
        assert_eq!(out[7], 13_333);
    }

    #[test]
    fn the_clamp_is_the_wide_models_top_rate() {
        assert_eq!(
            MAX_RATE_PPS,
            crate::params::WideParams::default().max_rate_pps
        );
        // A model above a tenth of it keeps the factor.
        let p = ModelParams {
            max_rate_pps: 20_000.0,
            ..ModelParams::default()
        };
        assert_eq!(max_rate_pps(&p), 200_000.0);
    }
}
