//! Variable propagation delay: a delay that changes over time from a trace file, and random
//! jitter (netem's `delay 20ms 5ms`), with or without reordering.
//!
//! # Delay trace format
//!
//! A text file (UTF-8, at most [`MAX_DELAY_TRACE_BYTES`]). Blank lines and lines starting with
//! `#` are ignored. The first other line is `interval T` (T a time: `100ms`, `1s`, `500us`; from
//! 1 ms to 1 h), then one delay per line in milliseconds (a decimal number, at most three
//! decimals, from 0 to 60 000): the one-way delay of packets sent during that interval. A packet
//! sent at `t` (µs from the link's start) takes delay number `floor(t / T) mod n`: the trace
//! repeats, as the delivery traces do. At least one delay and at most
//! [`MAX_DELAY_TRACE_VALUES`].
//!
//! ```text
//! # 20 ms, then 80 ms for half a second, then back
//! interval 100ms
//! 20
//! 80
//! 80
//! 80
//! 80
//! 80
//! 20
//! ```

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use sprout_core::time::{Duration, Instant};

/// The largest delay trace file read (bytes): 16 MiB.
pub const MAX_DELAY_TRACE_BYTES: u64 = 16 << 20;
/// The most delays one trace may hold.
pub const MAX_DELAY_TRACE_VALUES: usize = 1_000_000;
/// The largest delay a trace may give (ms).
pub const MAX_DELAY_MS: f64 = 60_000.0;

/// A propagation delay that varies over time: one delay per interval, repeating.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelayTrace {
    name: String,
    interval: Duration,
    delays: Vec<Duration>,
}

/// Why a delay trace could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DelayTraceError {
    /// The file could not be read, is too large or is not text.
    #[error("delay trace: {0}")]
    Read(#[from] sprout_files::ReadError),
    /// A line is not what the format says.
    #[error("delay trace {name}:{line}: {reason}: `{text}`")]
    Line {
        /// The trace's name (its path).
        name: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: &'static str,
        /// The line, at most [`sprout_files::EXCERPT_CHARS`] characters of it.
        text: String,
    },
    /// No `interval` line, or no delay after it.
    #[error("delay trace {0}: {1}")]
    Incomplete(String, &'static str),
}

impl DelayTrace {
    /// Reads the trace at `path` (at most [`MAX_DELAY_TRACE_BYTES`]).
    pub fn load(path: impl AsRef<Path>) -> Result<DelayTrace, DelayTraceError> {
        let path = path.as_ref();
        let text = sprout_files::read_to_string_capped(path, MAX_DELAY_TRACE_BYTES)?;
        DelayTrace::parse(path.display().to_string(), &text)
    }

    /// Parses a trace named `name` (see the module's format).
    pub fn parse(name: impl Into<String>, text: &str) -> Result<DelayTrace, DelayTraceError> {
        let name = name.into();
        let mut interval = None;
        let mut delays = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |reason| DelayTraceError::Line {
                name: name.clone(),
                line: i + 1,
                reason,
                text: sprout_files::excerpt(raw),
            };
            let Some(_) = interval else {
                let t = line
                    .strip_prefix("interval")
                    .filter(|rest| rest.starts_with(char::is_whitespace))
                    .ok_or_else(|| bad("expected `interval T` first (e.g. `interval 100ms`)"))?;
                let t = crate::units::parse_time(t)
                    .filter(|t| *t >= Duration::from_millis(1))
                    .ok_or_else(|| bad("the interval must be a time from 1ms to 1h"))?;
                interval = Some(t);
                continue;
            };
            if delays.len() == MAX_DELAY_TRACE_VALUES {
                return Err(bad("more delays than the 1000000 a trace may hold"));
            }
            delays.push(parse_delay_ms(line).ok_or_else(|| {
                bad("expected a delay in ms from 0 to 60000, at most three decimals")
            })?);
        }
        let Some(interval) = interval else {
            return Err(DelayTraceError::Incomplete(name, "no `interval T` line"));
        };
        if delays.is_empty() {
            return Err(DelayTraceError::Incomplete(
                name,
                "no delay after the interval",
            ));
        }
        Ok(DelayTrace {
            name,
            interval,
            delays,
        })
    }

    /// The trace's name (its path when loaded).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The interval each delay lasts.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// The delays, one per interval.
    pub fn delays(&self) -> &[Duration] {
        &self.delays
    }

    /// The delay of a packet sent at `t`: number `floor(t / interval) mod n`.
    #[inline]
    pub fn at(&self, t: Instant) -> Duration {
        let k = t.as_micros() / self.interval.as_micros().max(1);
        self.delays[(k % self.delays.len() as u64) as usize]
    }
}

/// `N` or `N.NNN` milliseconds, from 0 to [`MAX_DELAY_MS`], as whole µs.
fn parse_delay_ms(text: &str) -> Option<Duration> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(frac) || frac.len() > 3 || whole.len() > 6 {
        return None;
    }
    let ms: u64 = whole.parse().ok()?;
    let frac_us: u64 = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<3}").parse().ok()?
    };
    let us = ms * 1000 + frac_us;
    (us as f64 <= MAX_DELAY_MS * 1000.0).then(|| Duration::from_micros(us))
}

/// Random jitter on the propagation delay (netem's second `delay` value): each packet's delay
/// is the base delay plus a uniform whole number of µs in `[-amount, +amount]` (never below 0),
/// drawn from the link's seed on a stream of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Jitter {
    /// The largest change to a packet's delay, either way (serialized in µs).
    pub amount: Duration,
    /// Whether a packet may overtake one sent before it (netem's behaviour). Without, a packet
    /// never reaches the queue before one sent earlier: its delay is raised to the previous
    /// packet's arrival if needed, as on a single path. Default false.
    #[serde(default)]
    pub reorder: bool,
}

/// A jitter the command line cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad jitter '{0}': expected a time, optionally followed by ,reorder (e.g. 5ms,reorder)")]
pub struct BadJitter(pub String);

impl FromStr for Jitter {
    type Err = BadJitter;
    /// `T[,reorder]`, T a time (`5ms`, `0.5ms`, `500us`).
    fn from_str(s: &str) -> Result<Self, BadJitter> {
        let bad = || BadJitter(sprout_files::excerpt(s.trim()));
        let (t, reorder) = match s.trim().split_once(',') {
            Some((t, "reorder")) => (t, true),
            Some(_) => return Err(bad()),
            None => (s, false),
        };
        let amount = crate::units::parse_time(t).ok_or_else(bad)?;
        Ok(Jitter { amount, reorder })
    }
}

impl fmt::Display for Jitter {
    /// `5ms` or `5ms,reorder`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", crate::queue::format_ms(self.amount))?;
        if self.reorder {
            write!(f, ",reorder")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_parses() {
        let j: Jitter = "5ms".parse().unwrap();
        assert_eq!(j.amount, Duration::from_millis(5));
        assert!(!j.reorder);
        let j: Jitter = "500us,reorder".parse().unwrap();
        assert_eq!(j.amount, Duration::from_micros(500));
        assert!(j.reorder);
        assert_eq!(j.to_string(), "0.5ms,reorder");
        for bad in ["", "5", "5ms,shuffle", "-1ms"] {
            assert!(bad.parse::<Jitter>().is_err(), "{bad}");
        }
    }

    #[test]
    fn delays_parse_to_whole_microseconds() {
        assert_eq!(parse_delay_ms("20"), Some(Duration::from_millis(20)));
        assert_eq!(parse_delay_ms("2.5"), Some(Duration::from_micros(2500)));
        assert_eq!(parse_delay_ms("0.001"), Some(Duration::from_micros(1)));
        assert_eq!(parse_delay_ms("60000"), Some(Duration::from_secs(60)));
        for bad in [
            "",
            ".5",
            "1.2345",
            "-3",
            "60000.001",
            "1e3",
            "5ms",
            "9999999",
        ] {
            assert_eq!(parse_delay_ms(bad), None, "{bad}");
        }
    }
}
