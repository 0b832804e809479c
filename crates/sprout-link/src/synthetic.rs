//! Synthetic traces: the paper's own stochastic link model (seeded, deterministic) and
//! constant-rate links.
//!
//! Determinism: random numbers come from `ChaCha8Rng` (portable), and the model only uses
//! IEEE-754 basic operations (`+ - * / sqrt`) plus this module's own series for `exp` and `ln`, so
//! the same seed gives the identical trace on every platform and Rust version.

use rand::RngCore;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::trace::{Trace, TraceError, MAX_TIMESTAMP_MS};

/// The Sprout paper's link model as a trace generator.
///
/// The underlying rate `lambda` (MTU-sized packets per second) does Brownian motion with
/// volatility `sigma` (packets/s per sqrt(s)) in 1 ms steps, clamped to `[0, max_rate]`. When it
/// reaches 0 the link enters an outage lasting an exponentially distributed time (rate
/// `outage_escape_rate` per second, so mean `1/outage_escape_rate` s) with no deliveries, then
/// resumes at `resume_rate`. In each millisecond the number of deliveries is
/// Poisson(`lambda * 0.001`).
///
/// Deliveries during millisecond `[m, m+1)` (m = 0, 1, ...) are written at timestamp `m + 1`; the
/// trace always ends with an opportunity at `duration` ms (added if that millisecond had none), so
/// its loop period is exactly the requested duration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SyntheticLink {
    /// Seed of the ChaCha8 generator.
    pub seed: u64,
    /// Length of the trace (seconds); rounded to whole ms, at least 1 ms.
    pub duration_s: f64,
    /// Initial rate (packets/s). Default 400.
    pub start_rate: f64,
    /// Brownian volatility (packets/s per sqrt(s)). Default 200.
    pub sigma: f64,
    /// Rate of leaving an outage (1/s). Default 1 (mean outage 1 s). 0 = outages never end.
    pub outage_escape_rate: f64,
    /// Upper clamp of the rate (packets/s). Default 1000.
    pub max_rate: f64,
    /// Rate at which the link resumes after an outage (packets/s). Default 100.
    pub resume_rate: f64,
}

impl Default for SyntheticLink {
    /// Seed 1, 60 s, start 400 packets/s, sigma 200, escape 1/s, max 1000, resume 100.
    fn default() -> Self {
        SyntheticLink {
            seed: 1,
            duration_s: 60.0,
            start_rate: 400.0,
            sigma: 200.0,
            outage_escape_rate: 1.0,
            max_rate: 1000.0,
            resume_rate: 100.0,
        }
    }
}

pub use crate::trace::{MAX_CONSTANT_MBPS, MAX_GENERATED_OPPORTUNITIES, MAX_GENERATED_SECONDS};

/// Checks that a trace of about `per_s` opportunities a second for `seconds` is within
/// [`MAX_GENERATED_OPPORTUNITIES`] and [`MAX_GENERATED_SECONDS`]; `what` says what was asked.
fn check_size(name: &str, what: String, per_s: f64, seconds: f64) -> Result<(), TraceError> {
    let opportunities = per_s * seconds;
    let fits = seconds.is_finite()
        && seconds <= MAX_GENERATED_SECONDS as f64
        && opportunities.is_finite()
        && opportunities <= MAX_GENERATED_OPPORTUNITIES as f64;
    if fits {
        Ok(())
    } else {
        Err(TraceError::TooBig {
            file: name.to_string(),
            what,
            opportunities,
            seconds,
        })
    }
}

/// Sanitises a parameter: non-finite or negative values become 0.
fn non_negative(x: f64) -> f64 {
    if x.is_finite() && x > 0.0 {
        x
    } else {
        0.0
    }
}

/// Whole milliseconds in `duration_s` seconds, in `[1, MAX_TIMESTAMP_MS]`.
fn duration_ms(duration_s: f64) -> u64 {
    let ms = non_negative(duration_s) * 1000.0;
    let ms = ms.round();
    if ms >= MAX_TIMESTAMP_MS as f64 {
        MAX_TIMESTAMP_MS
    } else {
        (ms as u64).max(1)
    }
}

impl SyntheticLink {
    /// Checks that the trace [`SyntheticLink::generate`] would make is within
    /// [`MAX_GENERATED_SECONDS`] and, at `max_rate`, [`MAX_GENERATED_OPPORTUNITIES`]
    /// ([`TraceError::TooBig`]), before anything is allocated.
    pub fn check_size(&self, name: &str) -> Result<(), TraceError> {
        check_size(
            name,
            format!("a synthetic link of max_rate {}", self.max_rate),
            non_negative(self.max_rate),
            non_negative(self.duration_s),
        )
    }

    /// Generates the trace (deterministic for a given configuration). Invalid parameters
    /// (negative, NaN) are treated as 0; `start_rate` and `resume_rate` are clamped to
    /// `[0, max_rate]`. Memory is about 8 bytes per opportunity.
    pub fn generate(&self, name: impl Into<String>) -> Trace {
        let total_ms = duration_ms(self.duration_s);
        let max_rate = non_negative(self.max_rate);
        let sigma = non_negative(self.sigma);
        let escape = non_negative(self.outage_escape_rate);
        let resume = non_negative(self.resume_rate).min(max_rate);
        let step_sd = sigma * 0.001_f64.sqrt();

        let mut rng = Rng(ChaCha8Rng::seed_from_u64(self.seed));
        let mut rate = non_negative(self.start_rate).min(max_rate);
        let mut outage_left_ms: u64 = if rate <= 0.0 {
            outage_length_ms(&mut rng, escape)
        } else {
            0
        };
        let mut ops = Vec::with_capacity((total_ms as f64 * rate * 0.001) as usize + 16);
        for m in 0..total_ms {
            if outage_left_ms > 0 {
                outage_left_ms -= 1;
                if outage_left_ms == 0 {
                    rate = resume;
                    if rate <= 0.0 {
                        outage_left_ms = outage_length_ms(&mut rng, escape);
                    }
                }
                continue;
            }
            let k = rng.poisson(rate * 0.001);
            ops.resize(ops.len() + k as usize, m + 1);
            rate = (rate + step_sd * rng.normal()).clamp(0.0, max_rate);
            if rate <= 0.0 {
                outage_left_ms = outage_length_ms(&mut rng, escape);
            }
        }
        if ops.last() != Some(&total_ms) {
            ops.push(total_ms);
        }
        // Times are 1..=total_ms, non-decreasing and non-empty: valid by construction.
        Trace::from_valid_parts(name.into(), ops)
    }
}

/// Outage length (ms, at least 1): Exponential(escape per second). Never-ending if escape is 0.
fn outage_length_ms(rng: &mut Rng, escape_per_s: f64) -> u64 {
    if escape_per_s <= 0.0 {
        return u64::MAX;
    }
    let seconds = -ln(rng.uniform_open0()) / escape_per_s;
    let ms = (seconds * 1000.0).ceil();
    if ms >= 1e18 {
        u64::MAX
    } else {
        (ms as u64).max(1)
    }
}

/// Deterministic sampling helpers over ChaCha8.
struct Rng(ChaCha8Rng);

impl Rng {
    /// Uniform in (0, 1].
    fn uniform_open0(&mut self) -> f64 {
        ((self.0.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [0, 1).
    fn uniform(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Standard normal (Marsaglia polar method).
    fn normal(&mut self) -> f64 {
        loop {
            let u = 2.0 * self.uniform() - 1.0;
            let v = 2.0 * self.uniform() - 1.0;
            let s = u * u + v * v;
            if s > 0.0 && s < 1.0 {
                return u * (-2.0 * ln(s) / s).sqrt();
            }
        }
    }

    /// Poisson(mean) by inversion (normal approximation above mean 200).
    fn poisson(&mut self, mean: f64) -> u64 {
        if mean.is_nan() || mean <= 0.0 {
            return 0;
        }
        if mean > 200.0 {
            let x = (mean + mean.sqrt() * self.normal()).round();
            return if x <= 0.0 { 0 } else { x as u64 };
        }
        let u = self.uniform();
        let mut p = exp_neg(mean);
        let mut cdf = p;
        let mut k = 0u64;
        while u >= cdf && k < 10_000 {
            k += 1;
            p *= mean / k as f64;
            cdf += p;
            if p == 0.0 {
                break;
            }
        }
        k
    }
}

/// `exp(-x)` for `x >= 0` using only basic operations: Taylor series on `x / 2^n <= 0.5`,
/// then `n` squarings.
fn exp_neg(x: f64) -> f64 {
    if x > 745.0 {
        return 0.0;
    }
    let mut y = x;
    let mut halvings = 0;
    while y > 0.5 {
        y *= 0.5;
        halvings += 1;
    }
    let mut term = 1.0;
    let mut sum = 1.0;
    for i in 1..=20 {
        term *= -y / i as f64;
        sum += term;
    }
    for _ in 0..halvings {
        sum *= sum;
    }
    sum
}

/// Natural log for `x > 0` using only basic operations: `x = m * 2^e` with `m` in
/// `[sqrt(1/2), sqrt(2))`, then `ln m = 2 atanh((m-1)/(m+1))` by series.
fn ln(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        return f64::NEG_INFINITY;
    }
    const LN2: f64 = std::f64::consts::LN_2;
    let mut x = x;
    let mut e: i64 = 0;
    // Normalise subnormals.
    if x < f64::MIN_POSITIVE {
        x *= (1u64 << 54) as f64;
        e -= 54;
    }
    let bits = x.to_bits();
    e += ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52));
    if m > std::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    let z = (m - 1.0) / (m + 1.0);
    let z2 = z * z;
    let mut term = z;
    let mut sum = 0.0;
    for k in 0..20 {
        sum += term / (2 * k + 1) as f64;
        term *= z2;
    }
    2.0 * sum + e as f64 * LN2
}

/// Checks, before anything is allocated, that [`constant_rate_trace`] of `mbit_per_s` for
/// `duration_s` is within [`MAX_GENERATED_OPPORTUNITIES`] and [`MAX_GENERATED_SECONDS`]
/// ([`TraceError::TooBig`]) and the rate at most [`MAX_CONSTANT_MBPS`]
/// ([`TraceError::RateTooHigh`]); for specs that generate the trace later (sweeps).
pub fn check_constant_size(name: &str, mbit_per_s: f64, duration_s: f64) -> Result<(), TraceError> {
    if mbit_per_s > MAX_CONSTANT_MBPS {
        return Err(TraceError::RateTooHigh {
            file: name.to_string(),
            mbps: mbit_per_s,
        });
    }
    check_size(
        name,
        format!("a constant {mbit_per_s} Mbit/s"),
        non_negative(mbit_per_s) * 1e6 / 12_000.0,
        non_negative(duration_s),
    )
}

/// A constant-rate trace: `mbit_per_s` (1 opportunity = 1500 bytes = 12 000 bits, so 12 Mbit/s =
/// 1000 opportunities/s) for `duration_s` seconds, opportunities evenly spaced with the last one
/// at the end, so the trace loops seamlessly. The count is `round(rate * duration)`; opportunity
/// `i` (1-based) is at `ceil(i * duration_ms / count)` ms.
///
/// Errors with [`TraceError::TooBig`] beyond [`MAX_GENERATED_OPPORTUNITIES`] or
/// [`MAX_GENERATED_SECONDS`], and with [`TraceError::Empty`] when that makes no opportunity (rate or duration zero,
/// negative or not finite, or duration under 0.5 ms).
pub fn constant_rate_trace(
    name: impl Into<String>,
    mbit_per_s: f64,
    duration_s: f64,
) -> Result<Trace, TraceError> {
    let name = name.into();
    check_constant_size(&name, mbit_per_s, duration_s)?;
    let per_s = non_negative(mbit_per_s) * 1e6 / 12_000.0;
    let seconds = non_negative(duration_s);
    let count = (per_s * seconds).round();
    let total_ms = (seconds * 1000.0).round();
    if count < 1.0 || total_ms < 1.0 || !count.is_finite() || total_ms >= MAX_TIMESTAMP_MS as f64 {
        return Err(TraceError::Empty { file: name });
    }
    let count = count as u64;
    let total_ms = total_ms as u128;
    let ops = (1..=count as u128)
        .map(|i| ((i * total_ms).div_ceil(count as u128)) as u64)
        .collect();
    Trace::from_opportunities_ms(name, ops)
}

/// A stepwise link, the shape of per-second 5G drive recordings: the rate holds for
/// [`StepwiseLink::step_s`] and then jumps to a new rate drawn log-uniformly in
/// `[min_mbit, max_mbit]` (Mbit/s); the first step draws too. Within a step the opportunities
/// are evenly spaced as in [`constant_rate_trace`] (the `i`-th of `n` in a step of `len` ms that
/// starts at `s` is at `s + ceil(i * len / n)` ms, the last at the step's end). Step counts are
/// rounded cumulatively, so the trace carries every step's bits to within one opportunity
/// (1500 bytes) over any run of whole steps. The last step is cut at `duration_s`, and the trace
/// always ends with an opportunity at its end. Seeded and deterministic like [`SyntheticLink`]
/// (ChaCha8 and this module's own `exp` and `ln`).
///
/// The defaults (20 to 500 Mbit/s) average `(max - min) / ln(max / min)`, about 149 Mbit/s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StepwiseLink {
    /// Seed of the ChaCha8 generator.
    pub seed: u64,
    /// Length of the trace, seconds; rounded to whole ms.
    pub duration_s: f64,
    /// How long each rate holds, seconds; rounded to whole ms, at least 1 ms. Default 1.
    pub step_s: f64,
    /// The lowest rate a step may draw, Mbit/s (above 0). Default 20.
    pub min_mbit: f64,
    /// The highest rate a step may draw, Mbit/s (at least `min_mbit`, at most
    /// [`MAX_CONSTANT_MBPS`]). Default 500.
    pub max_mbit: f64,
}

impl Default for StepwiseLink {
    /// Seed 1, 60 s, 1 s steps, 20 to 500 Mbit/s.
    fn default() -> Self {
        StepwiseLink {
            seed: 1,
            duration_s: 60.0,
            step_s: 1.0,
            min_mbit: 20.0,
            max_mbit: 500.0,
        }
    }
}

/// Why a [`StepwiseLink`] cannot be generated.
#[derive(Debug, thiserror::Error)]
pub enum StepwiseError {
    /// The lowest rate is not a number above 0.
    #[error("the lowest rate must be above 0 Mbit/s, not {0}")]
    MinRate(f64),
    /// The highest rate is below the lowest, not finite, or above [`MAX_CONSTANT_MBPS`].
    #[error("the highest rate must be at least the lowest ({min} Mbit/s) and at most {} Mbit/s, not {max}", MAX_CONSTANT_MBPS)]
    MaxRate {
        /// The lowest rate, Mbit/s.
        min: f64,
        /// The highest rate asked for, Mbit/s.
        max: f64,
    },
    /// The step is not at least 1 ms (or not finite).
    #[error("a step must last at least 0.001 s, not {0} s")]
    Step(f64),
    /// The length is not at least 1 ms, or beyond [`MAX_GENERATED_SECONDS`].
    #[error("the trace must last at least 0.001 s and at most {max} s, not {0} s", max = MAX_GENERATED_SECONDS)]
    Duration(f64),
    /// The trace would be too big ([`TraceError::TooBig`]).
    #[error(transparent)]
    Trace(#[from] TraceError),
}

impl StepwiseLink {
    /// Checks the parameters (each error names the first one wrong) and, before anything is
    /// allocated, that the trace at `max_mbit` throughout fits [`MAX_GENERATED_OPPORTUNITIES`].
    pub fn validate(&self, name: &str) -> Result<(), StepwiseError> {
        if !(self.min_mbit.is_finite() && self.min_mbit > 0.0) {
            return Err(StepwiseError::MinRate(self.min_mbit));
        }
        if !(self.max_mbit >= self.min_mbit && self.max_mbit <= MAX_CONSTANT_MBPS) {
            return Err(StepwiseError::MaxRate {
                min: self.min_mbit,
                max: self.max_mbit,
            });
        }
        if !(self.step_s.is_finite() && self.step_s >= 0.0005) {
            return Err(StepwiseError::Step(self.step_s));
        }
        let seconds = MAX_GENERATED_SECONDS as f64;
        if !(self.duration_s.is_finite() && self.duration_s >= 0.0005 && self.duration_s <= seconds)
        {
            return Err(StepwiseError::Duration(self.duration_s));
        }
        check_size(
            name,
            format!("a stepwise link up to {} Mbit/s", self.max_mbit),
            self.max_mbit * 1e6 / 12_000.0,
            self.duration_s,
        )?;
        Ok(())
    }

    /// Length of a step, ms (at least 1).
    fn step_ms(&self) -> u64 {
        ((self.step_s * 1000.0).round() as u64).max(1)
    }

    /// The rate of each step in order, Mbit/s (the last step may be cut short by the trace's
    /// end). Fails as [`StepwiseLink::validate`].
    pub fn step_rates_mbit(&self) -> Result<Vec<f64>, StepwiseError> {
        self.validate("stepwise")?;
        let steps = duration_ms(self.duration_s).div_ceil(self.step_ms());
        let mut rng = Rng(ChaCha8Rng::seed_from_u64(self.seed));
        let span = ln(self.max_mbit / self.min_mbit);
        // max * exp(-(1 - u) span) = min * (max / min)^u: log-uniform in [min, max).
        Ok((0..steps)
            .map(|_| self.max_mbit * exp_neg((1.0 - rng.uniform()) * span))
            .collect())
    }

    /// Generates the trace (deterministic for a given configuration); memory is about 8 bytes
    /// per opportunity. Fails as [`StepwiseLink::validate`].
    pub fn generate(&self, name: impl Into<String>) -> Result<Trace, StepwiseError> {
        let name = name.into();
        self.validate(&name)?;
        let rates = self.step_rates_mbit()?;
        let total_ms = duration_ms(self.duration_s);
        let step_ms = self.step_ms();
        let mut ops = Vec::new();
        // Opportunities owed so far (fractional), and how many were placed.
        let mut owed = 0.0_f64;
        let mut placed = 0u64;
        for (k, rate) in rates.iter().enumerate() {
            let start = k as u64 * step_ms;
            let len = step_ms.min(total_ms - start);
            owed += rate * 1e6 / 12_000.0 * len as f64 / 1000.0;
            let n = (owed.round() as u64).saturating_sub(placed);
            placed += n;
            ops.extend((1..=n).map(|i| start + (i * len).div_ceil(n)));
        }
        if ops.last() != Some(&total_ms) {
            ops.push(total_ms);
        }
        // Times are non-decreasing, within 1..=total_ms and end at total_ms: valid.
        Ok(Trace::from_valid_parts(name, ops))
    }
}

/// Random outages laid over any trace (for `sprout traces synth`): in each whole second of the
/// trace an outage starts with probability [`OutageOverlay::probability_per_s`], at a uniformly
/// drawn millisecond of that second, and lasts an exponentially distributed time of mean
/// [`OutageOverlay::mean_length_s`] (at least 1 ms); outages that overlap merge. Seeded and
/// deterministic like [`SyntheticLink`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutageOverlay {
    /// Seed of the ChaCha8 generator.
    pub seed: u64,
    /// Chance that an outage starts in any given second, 0..1 (clamped).
    pub probability_per_s: f64,
    /// Mean length of an outage (seconds).
    pub mean_length_s: f64,
}

impl OutageOverlay {
    /// The outages over `duration_ms` as `(start_ms, end_ms)` intervals, in order, not
    /// overlapping, clipped to `[0, duration_ms]`. Empty when the probability or the mean
    /// length is 0 (or not a number).
    pub fn outages(&self, duration_ms: u64) -> Vec<(u64, u64)> {
        let p = non_negative(self.probability_per_s).min(1.0);
        let mean_s = non_negative(self.mean_length_s);
        let mut out: Vec<(u64, u64)> = Vec::new();
        if p <= 0.0 || mean_s <= 0.0 {
            return out;
        }
        let mut rng = Rng(ChaCha8Rng::seed_from_u64(self.seed));
        for second in 0..duration_ms.div_ceil(1000) {
            // Three draws per second, whether or not an outage starts: the outages of the
            // first seconds do not depend on the trace's length.
            let starts = rng.uniform() < p;
            let offset = (rng.uniform() * 1000.0) as u64;
            let length_ms = outage_length_ms(&mut rng, 1.0 / mean_s);
            if !starts {
                continue;
            }
            let start = second * 1000 + offset.min(999);
            if start >= duration_ms {
                continue;
            }
            let end = start.saturating_add(length_ms).min(duration_ms);
            match out.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => out.push((start, end)),
            }
        }
        out
    }

    /// `trace` without the opportunities inside its outages (`start_ms <= t < end_ms`),
    /// keeping the final one so that the loop period does not change; returns the outages
    /// too. Same name.
    pub fn apply(&self, trace: &Trace) -> (Trace, Vec<(u64, u64)>) {
        let ops = trace.opportunities_ms();
        let period = trace.period_ms();
        let outages = self.outages(period);
        if outages.is_empty() {
            return (trace.clone(), outages);
        }
        let last = ops.len() - 1;
        let mut k = 0;
        let kept: Vec<u64> = ops
            .iter()
            .enumerate()
            .filter(|&(i, &t)| {
                while k < outages.len() && outages[k].1 <= t {
                    k += 1;
                }
                i == last || !(k < outages.len() && outages[k].0 <= t)
            })
            .map(|(_, &t)| t)
            .collect();
        // A subsequence of a valid trace that keeps its last opportunity: valid.
        (
            Trace::from_valid_parts(trace.name().to_string(), kept),
            outages,
        )
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn generated_traces_are_bounded_before_anything_is_allocated() {
        let e = constant_rate_trace("c", 1e15, 30.0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("a constant 1000000000000000 Mbit/s"), "{e}");
        assert!(e.contains("faster than 100000 Mbit/s"), "{e}");
        // The rate bound holds however short the trace.
        assert!(constant_rate_trace("c", 100_001.0, 1e-6).is_err());
        let e = constant_rate_trace("c", 90_000.0, 30.0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("at most 100000000"), "{e}");
        assert!(constant_rate_trace("c", 12.0, 1e9).is_err());
        assert!(constant_rate_trace("c", 1000.0, 1000.0).is_ok());
        let huge = SyntheticLink {
            duration_s: 1e7,
            ..SyntheticLink::default()
        };
        assert!(huge.check_size("s").is_err());
        assert!(SyntheticLink::default().check_size("s").is_ok());
    }
    use super::*;

    #[test]
    fn series_match_std() {
        for &x in &[1e-300, 1e-9, 0.001, 0.3, 0.5, 0.9999, 1.0, 2.0, 10.0, 1e9] {
            let a = ln(x);
            let b = x.ln();
            assert!(
                (a - b).abs() <= 1e-13 * b.abs().max(1.0),
                "ln({x}): {a} vs {b}"
            );
        }
        for &x in &[0.0, 1e-6, 0.001, 0.2, 1.0, 3.7, 50.0, 300.0] {
            let a = exp_neg(x);
            let b = (-x).exp();
            assert!((a - b).abs() <= 1e-12 * b, "exp(-{x}): {a} vs {b}");
        }
    }
}
