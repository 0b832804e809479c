//! Durations given on the command line (and to the Python package) as the simulator's callers
//! take them: the one parser, [`sprout_core::time::parse_duration`] (re-exported here, where
//! the Saturator's command line can reach it too), with its checks and messages (`--skip must
//! be a non-negative number of seconds, got -1`) as a [`SimError`].

use crate::error::SimError;

pub use sprout_core::time::{parse_duration, BadDuration, Duration, TimeUnit};

/// `value` (in `unit`) of the option `--{option}` as whole microseconds (rounded): it must be
/// finite and at least 0, or above 0 when `positive`; otherwise the error says
/// `--{option} must be a non-negative (positive) number of seconds (milliseconds), got {value}`.
pub fn duration_us(
    value: f64,
    unit: TimeUnit,
    positive: bool,
    option: &str,
) -> Result<u64, SimError> {
    Ok(parse_duration(value, unit, positive, option)?.as_micros())
}

/// `s` seconds as a [`Duration`] (rounded to the microsecond); `option` names the option in
/// the error (`--{option} must be a non-negative number of seconds, got {s}`).
pub fn seconds(s: f64, option: &str) -> Result<Duration, SimError> {
    Ok(parse_duration(s, TimeUnit::Seconds, false, option)?)
}

/// Seconds to microseconds (rounded); `option` names the option in the error (`--{option}
/// must be a non-negative number of seconds, got {s}`).
pub fn seconds_to_us(s: f64, option: &str) -> Result<u64, SimError> {
    duration_us(s, TimeUnit::Seconds, false, option)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_and_checks() {
        assert_eq!(seconds_to_us(1.5, "skip").unwrap(), 1_500_000);
        assert_eq!(seconds_to_us(0.0, "skip").unwrap(), 0);
        assert_eq!(
            seconds_to_us(-1.0, "skip").unwrap_err().to_string(),
            "--skip must be a non-negative number of seconds, got -1"
        );
        assert_eq!(
            seconds_to_us(f64::INFINITY, "duration")
                .unwrap_err()
                .to_string(),
            "--duration must be a non-negative number of seconds, got inf"
        );
        assert_eq!(
            duration_us(0.0, TimeUnit::Seconds, true, "duration")
                .unwrap_err()
                .to_string(),
            "--duration must be a positive number of seconds, got 0"
        );
        assert_eq!(
            duration_us(2.5, TimeUnit::Milliseconds, false, "delay").unwrap(),
            2_500
        );
        assert_eq!(
            duration_us(f64::NAN, TimeUnit::Milliseconds, false, "delay")
                .unwrap_err()
                .to_string(),
            "--delay must be a non-negative number of milliseconds, got NaN"
        );
    }
}
