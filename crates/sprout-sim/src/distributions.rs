//! Synthetic links for the `distributions` experiment (the published reproduction's extension):
//! delivery opportunities whose inter-arrival times follow a chosen distribution, with the same
//! mean rate and length as a real trace.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, Normal, Poisson, Uniform};
use serde::{Deserialize, Serialize};
use sprout_core::time::Duration;
use sprout_link::Trace;

/// How opportunity times are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InterArrival {
    /// Exponential gaps (a Poisson process).
    Exponential,
    /// Gaussian gaps with a standard deviation of half the mean, cut at zero.
    Gaussian,
    /// A Poisson-distributed number of opportunities in each millisecond.
    Poisson,
    /// Gaps uniform on `[0, 2 x mean]`.
    Uniform,
}

impl InterArrival {
    /// Every distribution, in the order the experiment runs them.
    pub const ALL: [InterArrival; 4] = [
        InterArrival::Exponential,
        InterArrival::Gaussian,
        InterArrival::Poisson,
        InterArrival::Uniform,
    ];

    /// Lower-case name, as used in link names and tables.
    pub fn name(&self) -> &'static str {
        match self {
            InterArrival::Exponential => "exponential",
            InterArrival::Gaussian => "gaussian",
            InterArrival::Poisson => "poisson",
            InterArrival::Uniform => "uniform",
        }
    }
}

/// A trace named `name` with `like`'s mean opportunity rate and length whose opportunity
/// times follow `kind`, drawn from `seed`.
pub fn like(like: &Trace, kind: InterArrival, seed: u64, name: impl Into<String>) -> Trace {
    let duration_ms = like.period_ms().max(1);
    let rate_per_ms = like.len() as f64 / duration_ms as f64;
    generate(
        kind,
        rate_per_ms,
        Duration::from_millis(duration_ms),
        seed,
        name,
    )
}

/// Opportunity times (whole milliseconds) over `length` with a mean of `rate_per_ms` opportunities per
/// millisecond (at least one opportunity is always produced).
pub fn generate(
    kind: InterArrival,
    rate_per_ms: f64,
    length: Duration,
    seed: u64,
    name: impl Into<String>,
) -> Trace {
    let duration_ms = length.as_millis();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mean_gap = 1.0 / rate_per_ms.max(1e-9);
    let mut times = Vec::with_capacity((rate_per_ms * duration_ms as f64) as usize + 1);
    match kind {
        InterArrival::Poisson => {
            let count = Poisson::new(rate_per_ms.max(1e-9)).expect("positive mean");
            for ms in 0..duration_ms {
                let n: f64 = count.sample(&mut rng);
                times.extend((0..n as usize).map(|_| ms));
            }
        }
        _ => {
            let mut t = 0.0f64;
            let exp = Exp::new(1.0 / mean_gap).expect("positive rate");
            let normal = Normal::new(mean_gap, mean_gap / 2.0).expect("finite");
            let uniform = Uniform::new_inclusive(0.0, 2.0 * mean_gap);
            loop {
                let gap = match kind {
                    InterArrival::Exponential => exp.sample(&mut rng),
                    InterArrival::Gaussian => normal.sample(&mut rng).max(0.0),
                    InterArrival::Uniform => uniform.sample(&mut rng),
                    InterArrival::Poisson => unreachable!(),
                };
                t += gap;
                if t >= duration_ms as f64 {
                    break;
                }
                times.push(t as u64);
            }
        }
    }
    if times.is_empty() {
        times.push(duration_ms.saturating_sub(1));
    }
    Trace::from_opportunities_ms(name, times).expect("generated times are sorted and bounded")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_distribution_keeps_the_mean_rate() {
        for kind in InterArrival::ALL {
            // 0.5 opportunities per ms (6 Mbit/s) over 100 s.
            let t = generate(kind, 0.5, Duration::from_secs(100), 7, "x");
            let n = t.len() as f64;
            assert!((n - 50_000.0).abs() < 1_000.0, "{}: {n}", kind.name());
        }
    }

    #[test]
    fn distributions_differ_in_spread() {
        // Gap variance: uniform on [0, 2m] has m^2/3, exponential m^2, Gaussian m^2/4 (before
        // the cut at zero).
        let var = |kind| {
            let t = generate(kind, 0.1, Duration::from_secs(200), 3, "x");
            let gaps: Vec<f64> = t
                .opportunities_ms()
                .windows(2)
                .map(|w| (w[1] - w[0]) as f64)
                .collect();
            let m = gaps.iter().sum::<f64>() / gaps.len() as f64;
            gaps.iter().map(|g| (g - m).powi(2)).sum::<f64>() / gaps.len() as f64
        };
        let (e, g, u) = (
            var(InterArrival::Exponential),
            var(InterArrival::Gaussian),
            var(InterArrival::Uniform),
        );
        assert!(e > u && u > g, "exp {e} uniform {u} gaussian {g}");
        assert!(
            (e / 100.0 - 1.0).abs() < 0.1,
            "exponential gap variance {e}"
        );
    }

    #[test]
    fn same_seed_same_trace() {
        let a = generate(
            InterArrival::Exponential,
            0.3,
            Duration::from_secs(10),
            9,
            "a",
        );
        let b = generate(
            InterArrival::Exponential,
            0.3,
            Duration::from_secs(10),
            9,
            "a",
        );
        let c = generate(
            InterArrival::Exponential,
            0.3,
            Duration::from_secs(10),
            10,
            "a",
        );
        assert_eq!(a.opportunities_ms(), b.opportunities_ms());
        assert_ne!(a.opportunities_ms(), c.opportunities_ms());
    }
}
