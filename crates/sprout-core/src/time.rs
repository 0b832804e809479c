//! Typed time: an [`Instant`] on the caller's clock and a [`Duration`] between two, both whole
//! microseconds in a `u64` (584,000 years), as smoltcp's `time` module does for its stack.
//!
//! The protocol never reads a clock: the caller passes its `now` in, from the simulator's
//! virtual time or a runtime's monotonic clock. Arithmetic saturates instead of wrapping or
//! panicking, because times can come from the network (an echoed timestamp, a peer's claimed
//! delay): an instant minus a later one is [`Duration::ZERO`], an instant plus a huge duration
//! is [`Instant::MAX`]. Both serialize as their bare number of microseconds, so JSON and CSV
//! outputs are the same as with plain `u64` fields.

use core::fmt;
use core::ops::{Add, AddAssign, Div, Mul, Sub, SubAssign};

use serde::{Deserialize, Serialize};

/// A point in time: microseconds since the caller's epoch (the simulation's start, or when a
/// runtime's clock was created).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Instant(u64);

/// A length of time, in microseconds.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Duration(u64);

impl Instant {
    /// The epoch (time 0 µs).
    pub const ZERO: Instant = Instant(0);
    /// The latest representable instant (`u64::MAX` µs), where saturating sums stop.
    pub const MAX: Instant = Instant(u64::MAX);

    /// The instant `us` microseconds after the epoch.
    pub const fn from_micros(us: u64) -> Instant {
        Instant(us)
    }

    /// The instant `ms` milliseconds after the epoch (saturating).
    pub const fn from_millis(ms: u64) -> Instant {
        Instant(ms.saturating_mul(1_000))
    }

    /// Microseconds since the epoch.
    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// Whole milliseconds since the epoch (rounded down).
    pub const fn as_millis(self) -> u64 {
        self.0 / 1_000
    }

    /// Seconds since the epoch.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// The time since `earlier`; zero if `earlier` is later than `self`.
    pub const fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }

    /// The time since `earlier`, or `None` if `earlier` is later than `self`.
    pub const fn checked_duration_since(self, earlier: Instant) -> Option<Duration> {
        match self.0.checked_sub(earlier.0) {
            Some(d) => Some(Duration(d)),
            None => None,
        }
    }

    /// `self + d`, or `None` past [`Instant::MAX`].
    pub const fn checked_add(self, d: Duration) -> Option<Instant> {
        match self.0.checked_add(d.0) {
            Some(t) => Some(Instant(t)),
            None => None,
        }
    }

    /// `self - d`, or `None` before the epoch.
    pub const fn checked_sub(self, d: Duration) -> Option<Instant> {
        match self.0.checked_sub(d.0) {
            Some(t) => Some(Instant(t)),
            None => None,
        }
    }
}

impl Duration {
    /// No time.
    pub const ZERO: Duration = Duration(0);
    /// The longest representable duration (`u64::MAX` µs).
    pub const MAX: Duration = Duration(u64::MAX);

    /// A duration of `us` microseconds.
    pub const fn from_micros(us: u64) -> Duration {
        Duration(us)
    }

    /// A duration of `ms` milliseconds (saturating).
    pub const fn from_millis(ms: u64) -> Duration {
        Duration(ms.saturating_mul(1_000))
    }

    /// A duration of `s` seconds (saturating).
    pub const fn from_secs(s: u64) -> Duration {
        Duration(s.saturating_mul(1_000_000))
    }

    /// `s` seconds rounded to the nearest microsecond, or `None` when `s` is negative, not a
    /// number, or beyond [`Duration::MAX`].
    pub fn from_secs_f64(s: f64) -> Option<Duration> {
        let us = (s * 1e6).round();
        // u64::MAX as f64 rounds up to 2^64, which does not fit: refuse it and beyond.
        (us.is_finite() && us >= 0.0 && us < u64::MAX as f64).then_some(Duration(us as u64))
    }

    /// The duration in microseconds.
    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// The duration in whole milliseconds (rounded down).
    pub const fn as_millis(self) -> u64 {
        self.0 / 1_000
    }

    /// The duration in seconds.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// The duration in milliseconds, with the fraction.
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1e3
    }

    /// Whether this is no time at all.
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// `self + other`, or `None` past [`Duration::MAX`].
    pub const fn checked_add(self, other: Duration) -> Option<Duration> {
        match self.0.checked_add(other.0) {
            Some(d) => Some(Duration(d)),
            None => None,
        }
    }

    /// `self - other`, or `None` if `other` is longer.
    pub const fn checked_sub(self, other: Duration) -> Option<Duration> {
        match self.0.checked_sub(other.0) {
            Some(d) => Some(Duration(d)),
            None => None,
        }
    }
}

/// The unit a duration option is given in (on the command line, to the Python package).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    /// Seconds.
    Seconds,
    /// Milliseconds.
    Milliseconds,
}

impl TimeUnit {
    /// Microseconds in one of this unit.
    fn micros(self) -> f64 {
        match self {
            TimeUnit::Seconds => 1e6,
            TimeUnit::Milliseconds => 1e3,
        }
    }

    /// The unit's name in messages.
    fn name(self) -> &'static str {
        match self {
            TimeUnit::Seconds => "seconds",
            TimeUnit::Milliseconds => "milliseconds",
        }
    }
}

/// A duration option that is not a number of the accepted kind:
/// `--skip must be a non-negative number of seconds, got -1`.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("--{option} must be a {requirement} number of {unit}, got {value}")]
pub struct BadDuration {
    /// The option's name, without `--`.
    pub option: String,
    /// `non-negative` or `positive`.
    pub requirement: &'static str,
    /// `seconds` or `milliseconds`.
    pub unit: &'static str,
    /// The value given, in `unit`.
    pub value: f64,
}

/// The one duration parser: `value` (in `unit`) of the option `--{option}` as a [`Duration`]
/// of whole microseconds (rounded to the nearest). It must be finite and at least 0, or above
/// 0 when `positive`; otherwise the error names the option, the requirement and the value.
/// Every duration typed on a command line (the simulator's, the Saturator's) or given to the
/// Python package goes through it.
pub fn parse_duration(
    value: f64,
    unit: TimeUnit,
    positive: bool,
    option: &str,
) -> Result<Duration, BadDuration> {
    let ok = value.is_finite() && if positive { value > 0.0 } else { value >= 0.0 };
    if !ok {
        return Err(BadDuration {
            option: option.to_string(),
            requirement: if positive { "positive" } else { "non-negative" },
            unit: unit.name(),
            value,
        });
    }
    Ok(Duration((value * unit.micros()).round() as u64))
}

impl Add<Duration> for Instant {
    type Output = Instant;
    /// Saturates at [`Instant::MAX`].
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    /// Saturates at the epoch.
    fn sub(self, d: Duration) -> Instant {
        Instant(self.0.saturating_sub(d.0))
    }
}

impl SubAssign<Duration> for Instant {
    fn sub_assign(&mut self, d: Duration) {
        *self = *self - d;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// The time from `earlier` to `self`; zero if `earlier` is later (see
    /// [`Instant::checked_duration_since`] to tell).
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

impl Add for Duration {
    type Output = Duration;
    /// Saturates at [`Duration::MAX`].
    fn add(self, other: Duration) -> Duration {
        Duration(self.0.saturating_add(other.0))
    }
}

impl AddAssign for Duration {
    fn add_assign(&mut self, other: Duration) {
        *self = *self + other;
    }
}

impl Sub for Duration {
    type Output = Duration;
    /// Saturates at zero.
    fn sub(self, other: Duration) -> Duration {
        Duration(self.0.saturating_sub(other.0))
    }
}

impl SubAssign for Duration {
    fn sub_assign(&mut self, other: Duration) {
        *self = *self - other;
    }
}

impl Mul<u64> for Duration {
    type Output = Duration;
    /// Saturates at [`Duration::MAX`].
    fn mul(self, n: u64) -> Duration {
        Duration(self.0.saturating_mul(n))
    }
}

impl Div<u64> for Duration {
    type Output = Duration;
    /// Rounds down; panics on division by zero, as integer division does.
    fn div(self, n: u64) -> Duration {
        Duration(self.0 / n)
    }
}

impl Div for Duration {
    type Output = u64;
    /// How many whole `other` fit in `self`; panics if `other` is zero.
    fn div(self, other: Duration) -> u64 {
        self.0 / other.0
    }
}

impl From<Duration> for std::time::Duration {
    fn from(d: Duration) -> Self {
        std::time::Duration::from_micros(d.0)
    }
}

impl From<std::time::Duration> for Duration {
    /// Whole microseconds, rounded down and saturating at [`Duration::MAX`].
    fn from(d: std::time::Duration) -> Self {
        Duration(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
    }
}

impl fmt::Display for Instant {
    /// `12.345678 s`: seconds since the epoch, to the microsecond.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:06} s", self.0 / 1_000_000, self.0 % 1_000_000)
    }
}

impl fmt::Display for Duration {
    /// `1.500 ms`: milliseconds to the microsecond.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03} ms", self.0 / 1_000, self.0 % 1_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_instead_of_wrapping() {
        let t = Instant::from_micros(10);
        assert_eq!(t - Instant::from_micros(25), Duration::ZERO);
        assert_eq!(t.checked_duration_since(Instant::from_micros(25)), None);
        assert_eq!(t + Duration::MAX, Instant::MAX);
        assert_eq!(t - Duration::from_micros(11), Instant::ZERO);
        assert_eq!(Duration::from_secs(u64::MAX), Duration::MAX);
        assert_eq!(Duration::from_micros(7) * u64::MAX, Duration::MAX);
        assert_eq!(
            Duration::from_micros(3) - Duration::from_micros(5),
            Duration::ZERO
        );
        assert_eq!(
            Instant::from_millis(2) - Instant::from_micros(500),
            Duration::from_micros(1_500)
        );
    }

    #[test]
    fn units_convert_exactly() {
        assert_eq!(Duration::from_millis(20).as_micros(), 20_000);
        assert_eq!(Duration::from_secs(3).as_millis(), 3_000);
        assert_eq!(Duration::from_micros(1_999).as_millis(), 1);
        assert_eq!(
            Duration::from_secs_f64(0.0000015),
            Some(Duration::from_micros(2))
        );
        assert_eq!(Duration::from_secs_f64(-1.0), None);
        assert_eq!(Duration::from_secs_f64(f64::NAN), None);
        assert_eq!(Duration::from_secs_f64(1e300), None);
        let std: std::time::Duration = Duration::from_micros(1_500).into();
        assert_eq!(std, std::time::Duration::from_micros(1_500));
        assert_eq!(
            Duration::from(std::time::Duration::from_nanos(2_999)),
            Duration::from_micros(2)
        );
        assert_eq!(Duration::from_millis(10) / Duration::from_millis(3), 3);
        assert_eq!(Duration::from_micros(1_500).to_string(), "1.500 ms");
        assert_eq!(Instant::from_micros(2_000_001).to_string(), "2.000001 s");
    }

    #[test]
    fn the_duration_parser_rounds_and_names_the_option() {
        let ok = |v, u, p| parse_duration(v, u, p, "x").unwrap().as_micros();
        assert_eq!(ok(1.5, TimeUnit::Seconds, false), 1_500_000);
        assert_eq!(ok(0.0, TimeUnit::Seconds, false), 0);
        assert_eq!(ok(2.5, TimeUnit::Milliseconds, false), 2_500);
        assert_eq!(ok(0.0000015, TimeUnit::Seconds, true), 2);
        let err = |v, u, p, o| parse_duration(v, u, p, o).unwrap_err().to_string();
        assert_eq!(
            err(-1.0, TimeUnit::Seconds, false, "skip"),
            "--skip must be a non-negative number of seconds, got -1"
        );
        assert_eq!(
            err(0.0, TimeUnit::Seconds, true, "duration"),
            "--duration must be a positive number of seconds, got 0"
        );
        assert_eq!(
            err(f64::NAN, TimeUnit::Milliseconds, false, "delay"),
            "--delay must be a non-negative number of milliseconds, got NaN"
        );
    }

    #[test]
    fn serializes_as_bare_microseconds() {
        let d = Duration::from_millis(20);
        assert_eq!(serde_json::to_string(&d).unwrap(), "20000");
        let t: Instant = serde_json::from_str("42").unwrap();
        assert_eq!(t, Instant::from_micros(42));
    }
}
