//! Scaling a trace's delivery rate by a factor, keeping its timing structure.
//!
//! Every millisecond of a trace that holds `n` delivery opportunities (1500 bytes each) gets
//! about `factor x n`; a millisecond with none keeps none (outages stay outages), and the
//! last timestamp (mahimahi's loop period) is kept. The count is exact integer arithmetic on
//! the factor as written (`0.1` is exactly a tenth), with no randomness: the same trace and
//! factor always give the same output.
//!
//! The rule: with `D(t)` the opportunities at or after millisecond `t` in the original, the
//! scaled trace holds `ceil(factor x D(t))` opportunities at or after `t`. So the millisecond
//! `t` gets `ceil(factor x D(t)) - ceil(factor x D(t + 1))` (the fractional part carried
//! from the end towards the start), and over ANY window of milliseconds the scaled count is
//! within 1 (strictly) of `factor` times the original's. Counting from the end makes the last
//! millisecond get `ceil(factor x n) >= 1`, so the period never changes; with `factor >= 1`
//! every millisecond that had an opportunity still has one, with `factor < 1` some lose
//! theirs (the rate is lower), but no new timestamp ever appears.

use std::io::Write;

use crate::trace::{Trace, MAX_TRACE_FILE_BYTES};

/// Why a trace cannot be scaled.
#[derive(Debug, thiserror::Error)]
pub enum ScaleError {
    /// The factor is not a finite number above 0.
    #[error("the scale factor must be a finite number above 0, not {factor}")]
    BadFactor {
        /// The factor given.
        factor: f64,
    },
    /// The scaled trace would be larger than a trace file may be.
    #[error(
        "{file} x {factor} would hold about {opportunities:.0} opportunities ({bytes:.0} bytes), \
         more than a trace file may hold ({})",
        sprout_files::human_bytes(MAX_TRACE_FILE_BYTES)
    )]
    TooBig {
        /// The trace's name.
        file: String,
        /// The factor given.
        factor: f64,
        /// Opportunities the scaled trace would hold.
        opportunities: f64,
        /// Bytes its file would take.
        bytes: f64,
    },
    /// Writing the scaled trace failed.
    #[error("cannot write the scaled trace: {0}")]
    Io(#[from] std::io::Error),
}

/// What a scaled trace holds (known before it is written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScaleSummary {
    /// Delivery opportunities (lines) in the scaled trace.
    pub opportunities: u64,
    /// Bytes of its mahimahi text (one timestamp in ms and a newline per line).
    pub file_bytes: u64,
    /// Its period, the last timestamp, ms (the original's).
    pub period_ms: u64,
}

/// A positive finite factor as an exact fraction: its shortest decimal form (`0.1` is 1/10,
/// as the user wrote it) when the denominator fits in 10^18, else its binary value
/// `mantissa x 2^exponent`.
#[derive(Debug, Clone, Copy)]
enum ExactFactor {
    /// `numerator / denominator`, the denominator a power of ten.
    Decimal { numerator: u128, denominator: u128 },
    /// `mantissa x 2^exponent`.
    Binary { mantissa: u128, exponent: i32 },
}

impl ExactFactor {
    fn new(factor: f64) -> Result<Self, ScaleError> {
        if !(factor.is_finite() && factor > 0.0) {
            return Err(ScaleError::BadFactor { factor });
        }
        // Display gives the shortest decimal that reads back as `factor`, with no exponent.
        let text = format!("{factor}");
        let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
        if frac.len() <= 18 {
            if let Ok(numerator) = format!("{int}{frac}").parse::<u128>() {
                let denominator = 10u128.pow(frac.len() as u32);
                return Ok(ExactFactor::Decimal {
                    numerator,
                    denominator,
                });
            }
        }
        let bits = factor.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as i32;
        let fraction = bits & ((1u64 << 52) - 1);
        let (mantissa, exponent) = if biased == 0 {
            (fraction, -1074)
        } else {
            (fraction | (1u64 << 52), biased - 1075)
        };
        Ok(ExactFactor::Binary {
            mantissa: u128::from(mantissa),
            exponent,
        })
    }

    /// `ceil(factor x count)`, exactly. The caller has bounded `factor x count` (below 2^28,
    /// [`check_scale`]), so nothing overflows (saturating if it did).
    fn ceil_times(self, count: u64) -> u64 {
        let count = u128::from(count);
        let result = match self {
            ExactFactor::Decimal {
                numerator,
                denominator,
            } => numerator
                .checked_mul(count)
                .map_or(u128::MAX, |p| p.div_ceil(denominator)),
            ExactFactor::Binary { mantissa, exponent } => {
                let product = mantissa * count; // < 2^53 x 2^64 = 2^117
                if exponent >= 0 {
                    product.checked_shl(exponent as u32).unwrap_or(u128::MAX)
                } else if product == 0 {
                    0
                } else if exponent.unsigned_abs() >= 118 {
                    1 // 0 < product / 2^shift < 1
                } else {
                    product.div_ceil(1u128 << exponent.unsigned_abs())
                }
            }
        };
        u64::try_from(result).unwrap_or(u64::MAX)
    }
}

/// Digits of `t` in decimal.
fn digits(t: u64) -> u64 {
    u64::from(t.checked_ilog10().unwrap_or(0)) + 1
}

/// Calls `emit(t, k)` for every millisecond `t` of `trace` (in order) with the `k` scaled
/// opportunities it gets (possibly 0).
fn for_each_ms(trace: &Trace, factor: ExactFactor, mut emit: impl FnMut(u64, u64)) {
    let ops = trace.opportunities_ms();
    let total = ops.len() as u64;
    let mut before = 0u64; // original opportunities before the current millisecond
    let mut at_or_after = factor.ceil_times(total);
    for group in ops.chunk_by(|a, b| a == b) {
        before += group.len() as u64;
        let after = factor.ceil_times(total - before);
        emit(group[0], at_or_after - after);
        at_or_after = after;
    }
}

/// Checks `factor` against `trace` and counts what scaling would give, without allocating:
/// refuses a factor that is not finite and above 0, or one whose output would exceed
/// [`MAX_TRACE_FILE_BYTES`] of text.
pub fn check_scale(trace: &Trace, factor: f64) -> Result<ScaleSummary, ScaleError> {
    let exact = ExactFactor::new(factor)?;
    let too_big = |opportunities: f64, bytes: f64| ScaleError::TooBig {
        file: trace.name().to_string(),
        factor,
        opportunities,
        bytes,
    };
    // Every line takes at least 2 bytes ("0\n"): a first bound, before exact counting.
    let rough = factor * trace.len() as f64;
    if rough * 2.0 > MAX_TRACE_FILE_BYTES as f64 {
        let bytes = rough * (digits(trace.period_ms()) + 1) as f64;
        return Err(too_big(rough, bytes));
    }
    let (mut opportunities, mut file_bytes) = (0u64, 0u64);
    for_each_ms(trace, exact, |t, k| {
        opportunities += k;
        file_bytes += k * (digits(t) + 1);
    });
    if file_bytes > MAX_TRACE_FILE_BYTES {
        return Err(too_big(opportunities as f64, file_bytes as f64));
    }
    Ok(ScaleSummary {
        opportunities,
        file_bytes,
        period_ms: trace.period_ms(),
    })
}

/// `trace` with its delivery rate multiplied by `factor` (see the module's rule), named
/// `name`. Checked first with [`check_scale`].
pub fn scale(trace: &Trace, factor: f64, name: impl Into<String>) -> Result<Trace, ScaleError> {
    let summary = check_scale(trace, factor)?;
    let exact = ExactFactor::new(factor)?;
    let mut out = Vec::with_capacity(summary.opportunities as usize);
    for_each_ms(trace, exact, |t, k| {
        out.extend(std::iter::repeat_n(t, k as usize))
    });
    // Non-empty (the last millisecond keeps at least one), sorted, timestamps of `trace`.
    Ok(Trace::from_valid_parts(name.into(), out))
}

/// Writes `trace` scaled by `factor` as mahimahi text to `out` (one timestamp, ms, per line),
/// streaming: checked first with [`check_scale`], nothing is held but the output buffer.
pub fn write_scaled(
    trace: &Trace,
    factor: f64,
    out: impl Write,
) -> Result<ScaleSummary, ScaleError> {
    let summary = check_scale(trace, factor)?;
    let exact = ExactFactor::new(factor)?;
    let mut out = std::io::BufWriter::new(out);
    let mut result = Ok(());
    for_each_ms(trace, exact, |t, k| {
        for _ in 0..k {
            if result.is_ok() {
                result = writeln!(out, "{t}");
            }
        }
    });
    result?;
    out.flush()?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_ceil_matches_integer_arithmetic() {
        let half = ExactFactor::new(0.5).unwrap();
        assert_eq!(half.ceil_times(3), 2);
        assert_eq!(half.ceil_times(4), 2);
        assert_eq!(ExactFactor::new(4.0).unwrap().ceil_times(7), 28);
        // 0.1 is read as the user wrote it, 1/10 (in binary it is just above a tenth).
        assert_eq!(ExactFactor::new(0.1).unwrap().ceil_times(10), 1);
        assert_eq!(ExactFactor::new(0.1).unwrap().ceil_times(11), 2);
        assert_eq!(ExactFactor::new(2.5).unwrap().ceil_times(3), 8);
        assert!(matches!(
            ExactFactor::new(1e-30).unwrap(),
            ExactFactor::Binary { .. }
        ));
        assert_eq!(
            ExactFactor::new(f64::MIN_POSITIVE).unwrap().ceil_times(5),
            1
        );
        assert_eq!(ExactFactor::new(1e-300).unwrap().ceil_times(0), 0);
        assert_eq!(digits(0), 1);
        assert_eq!(digits(9), 1);
        assert_eq!(digits(10), 2);
        assert_eq!(digits(140_000), 6);
    }
}
