//! Sprout-EWMA (paper §5.3): the observed rate smoothed by an exponentially weighted moving
//! average, and a forecast that assumes that rate for all the forecast's ticks.

use crate::estimator::Estimator;
use crate::params::ModelParams;

/// An EWMA of the observed per-tick rate, in packets/s.
#[derive(Clone, Debug)]
pub struct EwmaEstimator {
    gain: f64,
    tau: f64,
    rate: f64,
    seeded: bool,
}

impl EwmaEstimator {
    /// A new estimator; `gain` is the weight of each tick's observation (0..=1).
    pub fn new(params: &ModelParams, gain: f64) -> Self {
        EwmaEstimator {
            gain,
            tau: params.tau(),
            rate: 0.0,
            seeded: false,
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

    fn forecast(&self, out: &mut [u32]) {
        let per_tick = self.rate * self.tau;
        for (i, slot) in out.iter_mut().enumerate() {
            *slot = (per_tick * (i + 1) as f64).floor() as u32;
        }
    }

    fn rate_pps(&self) -> f64 {
        self.rate
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
}
