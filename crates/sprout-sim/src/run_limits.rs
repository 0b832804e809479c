//! What one simulation may be asked for, checked before it starts: a measured window long
//! enough for the paper's metrics to mean something, and a size that fits in memory.
//!
//! Without these checks a window that starts after the run ends printed 0 kb/s and 0 ms for
//! every figure with success, and `--duration 1e12` ran on while its records grew without end.

use sprout_core::time::Duration;
use sprout_link::Trace;

use crate::error::SimError;

/// The shortest measured window a run may have, in microseconds (5 s): the self-inflicted
/// delay is a 95th percentile over the window, and throughput a mean; over less than a few
/// seconds of a cellular trace neither says anything of the scheme.
pub const MIN_MEASURED_WINDOW_US: u64 = 5_000_000;

/// The most delivery opportunities (both directions together) one run may replay. The run
/// keeps every opportunity time (8 bytes) and every delivered packet (about 40 bytes), so
/// this bounds its memory near 2.5 GB; the paper's longest link pair needs about 1.2 million.
pub const MAX_OPPORTUNITIES: u64 = 50_000_000;

/// The longest run one simulation may be, microseconds (a day). Its timers, heartbeats and
/// records grow with simulated time even over a link that offers nothing (a trace of one
/// line at a timestamp centuries away, `--duration 1e30`); the paper's runs are 140-300 s.
pub const MAX_RUN_US: u64 = 86_400_000_000;

/// Checks a run before it starts and returns its length in microseconds: at most
/// [`MAX_RUN_US`] ([`SimError::RunTooLong`]), the measured window of each direction at least
/// [`MIN_MEASURED_WINDOW_US`] long ([`SimError::MeasuredWindow`]) and at most
/// [`MAX_OPPORTUNITIES`] replayed ([`SimError::RunTooLarge`]).
///
/// `run` is the run's length (`None`: the shorter trace's, as the simulator's default), `skip`
/// where measuring starts, `looping` whether the links replay their traces in a loop. Returns
/// the run's length in microseconds.
pub fn check_run(
    uplink: &Trace,
    downlink: &Trace,
    run: Option<Duration>,
    skip: Duration,
    looping: bool,
) -> Result<u64, SimError> {
    let skip_us = skip.as_micros();
    let duration = run
        .unwrap_or_else(|| uplink.duration().min(downlink.duration()))
        .as_micros();
    // The opportunities of the run, counted over at most a day: when a day of these traces
    // is already over the memory bound, that bound is the smaller one and the only one said
    // (a --duration of 1e12 s is told the longest run that fits, not first "a day" and then,
    // asked for a day, something shorter).
    let counted = duration.min(MAX_RUN_US);
    let run_length = Duration::from_micros(counted);
    let opportunities = expected_opportunities(uplink, run_length, looping)
        + expected_opportunities(downlink, run_length, looping);
    if opportunities > MAX_OPPORTUNITIES as f64 {
        let per_second = opportunities / (counted as f64 / 1e6);
        return Err(SimError::RunTooLarge {
            duration_s: duration as f64 / 1e6,
            opportunities: per_second * (duration as f64 / 1e6),
            max_duration_s: (MAX_OPPORTUNITIES as f64 / per_second).floor(),
            max_opportunities: MAX_OPPORTUNITIES,
        });
    }
    if duration > MAX_RUN_US {
        return Err(SimError::RunTooLong {
            duration_s: duration as f64 / 1e6,
            ends_at: if run.is_some() {
                "--duration"
            } else {
                "the shorter trace's length"
            },
            max_s: MAX_RUN_US / 1_000_000,
        });
    }
    for (direction, trace) in [("uplink", uplink), ("downlink", downlink)] {
        let trace_us = trace.duration().as_micros().max(1);
        let end = if looping {
            duration.min(trace_us)
        } else {
            duration
        };
        if end.saturating_sub(skip_us) < MIN_MEASURED_WINDOW_US {
            let ends_at = if looping && trace_us < duration {
                "its trace's length"
            } else if run.is_some() {
                "--duration"
            } else {
                "the shorter trace's length"
            };
            return Err(SimError::MeasuredWindow {
                direction,
                trace: trace.name().to_string(),
                skip_s: skip_us as f64 / 1e6,
                end_s: end as f64 / 1e6,
                ends_at,
                min_window_s: MIN_MEASURED_WINDOW_US as f64 / 1e6,
            });
        }
    }
    Ok(duration)
}

/// About how many delivery opportunities `trace` offers over `run`, looped or not.
fn expected_opportunities(trace: &Trace, run: Duration, looping: bool) -> f64 {
    let trace_us = trace.duration().as_micros().max(1) as f64;
    let n = trace.len() as f64;
    let run_us = run.as_micros() as f64;
    if looping {
        n * run_us / trace_us
    } else {
        n.min(n * run_us / trace_us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::chain_message;

    fn trace(name: &str, seconds: u64) -> Trace {
        let ms: Vec<u64> = (1..=seconds * 100).map(|i| i * 10).collect();
        Trace::from_opportunities_ms(name, ms).unwrap()
    }

    /// The checks of a looping run (the simulator's default) of `duration_s` (None: the
    /// shorter trace's length) measured from `skip_s`.
    fn check(
        up: &Trace,
        down: &Trace,
        duration_s: Option<f64>,
        skip_s: f64,
    ) -> Result<u64, SimError> {
        let run = duration_s.map(|d| Duration::from_micros((d * 1e6) as u64));
        check_run(
            up,
            down,
            run,
            Duration::from_micros((skip_s * 1e6) as u64),
            true,
        )
    }

    #[test]
    fn a_window_that_starts_after_the_run_ends_is_refused() {
        let (up, down) = (trace("x.up", 60), trace("x.down", 60));
        // The default skip (60 s) of a 60 s trace: nothing left to measure.
        let e = check(&up, &down, None, 60.0).unwrap_err();
        let msg = chain_message(&e);
        assert!(msg.contains("uplink (x.up)"), "{msg}");
        assert!(msg.contains("60.0 s"), "{msg}");
        assert!(msg.contains("shorter trace's length"), "{msg}");
        assert!(e.is_bad_parameter());
        // --duration 20 --skip 30.
        let msg = chain_message(&check(&up, &down, Some(20.0), 30.0).unwrap_err());
        assert!(msg.contains("--duration"), "{msg}");
        // A window shorter than the minimum, and one exactly at it.
        assert!(check(&up, &down, None, 56.0).is_err());
        assert_eq!(check(&up, &down, None, 55.0).unwrap(), 60_000_000);
    }

    #[test]
    fn a_looped_trace_is_measured_over_its_own_length() {
        let (up, down) = (trace("a.up", 100), trace("b.down", 30));
        // Looping: the downlink is measured over its own 30 s, less than the 40 s skip.
        let e = check(&up, &down, Some(100.0), 40.0).unwrap_err();
        let msg = chain_message(&e);
        assert!(msg.contains("downlink (b.down)"), "{msg}");
        assert!(msg.contains("its trace's length"), "{msg}");
    }

    #[test]
    fn a_run_too_large_for_memory_is_refused_with_the_longest_that_fits() {
        let (up, down) = (trace("x.up", 60), trace("x.down", 60));
        // 200 opportunities per second in all: 1e12 s is far beyond the bound.
        let e = check(&up, &down, Some(1e12), 0.0).unwrap_err();
        let msg = chain_message(&e);
        assert!(msg.contains("longer than 86400 s"), "{msg}");
        assert!(check(&up, &down, Some(86_400.0), 0.0).is_ok());
        // 2000 opportunities per second in all: a day is over the bound.
        let dense = |name: &str| {
            Trace::from_opportunities_ms(name, (1..=60_000).collect::<Vec<u64>>()).unwrap()
        };
        let (up, down) = (dense("y.up"), dense("y.down"));
        let msg = chain_message(&check(&up, &down, Some(86_400.0), 0.0).unwrap_err());
        assert!(msg.contains("at most 25000 s"), "{msg}");
        assert!(check(&up, &down, Some(25_000.0), 0.0).is_ok());
        // Beyond a day, the same one bound: the smaller (25000 s), not first the day's.
        let msg = chain_message(&check(&up, &down, Some(1e12), 0.0).unwrap_err());
        assert!(msg.contains("at most 25000 s"), "{msg}");
        assert!(!msg.contains("86400"), "{msg}");
    }

    #[test]
    fn a_window_shorter_than_the_minimum_names_the_minimum() {
        let (up, down) = (trace("x.up", 60), trace("x.down", 60));
        // --duration 3 --skip 0: no --skip helps; the message says why (the 5 s minimum).
        let msg = chain_message(&check(&up, &down, Some(3.0), 0.0).unwrap_err());
        assert!(msg.contains("5 s"), "{msg}");
        assert!(msg.contains("--duration of at least 5.0 s"), "{msg}");
        assert!(!msg.contains("--skip at most 0.0 s"), "{msg}");
        // --duration 20 --skip 18: a shorter skip does.
        let msg = chain_message(&check(&up, &down, Some(20.0), 18.0).unwrap_err());
        assert!(msg.contains("give a --skip at most 15.0 s"), "{msg}");
        assert!(msg.contains("5 s"), "{msg}");
    }

    #[test]
    fn a_run_longer_than_a_day_is_refused_however_little_its_traces_offer() {
        // One opportunity at the largest timestamp a trace accepts: 584 years of nothing.
        let far = Trace::from_opportunities_ms("far", vec![sprout_link::trace::MAX_TIMESTAMP_MS])
            .unwrap();
        let msg = chain_message(&check(&far, &far, None, 60.0).unwrap_err());
        assert!(msg.contains("the shorter trace's length"), "{msg}");
        assert!(msg.contains("longer than 86400 s"), "{msg}");
        let msg = chain_message(&check(&far, &far, Some(1e30), 60.0).unwrap_err());
        assert!(msg.contains("(--duration)"), "{msg}");
        assert!(check(&far, &far, Some(86_400.0), 60.0).is_ok());
    }
}
