//! Time for the endpoint: a monotonic clock for the protocol, read as a
//! [`sprout_core::time::Instant`], and the wall clock (CLOCK_REALTIME) for one-way delay
//! measurements between hosts.
//!
//! This crate is portable, so it cannot use the Linux-only `sprout-os`, whose
//! `clock::MonotonicClock` is where the Linux runtimes read the protocol's time. [`Clock`] is its
//! twin on `std::time::Instant`, which on Linux reads the same `CLOCK_MONOTONIC`: both count
//! whole microseconds from their creation.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A monotonic clock that counts microseconds from its creation (the protocol's time base).
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    origin: Instant,
}

impl Clock {
    /// A clock whose time 0 is now.
    pub fn new() -> Self {
        Clock {
            origin: Instant::now(),
        }
    }

    /// The time since the clock was created, in whole microseconds (rounded down).
    pub fn now(&self) -> sprout_core::Instant {
        sprout_core::Instant::ZERO + sprout_core::Duration::from(self.origin.elapsed())
    }

    /// The instant the clock counts from.
    pub fn origin(&self) -> Instant {
        self.origin
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

/// Microseconds since the Unix epoch on the wall clock (CLOCK_REALTIME); 0 if the clock is set
/// before 1970. Differences between two hosts' readings are one-way delays only as far as their
/// clocks agree (exactly, on one machine, e.g. across network namespaces).
pub fn realtime_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros().min(u64::MAX as u128) as u64)
        .unwrap_or(0)
}

/// How long a blocking call may still wait for `deadline`: `None` once it has passed; with no
/// deadline, a second, after which the caller checks again (so a lost wake-up costs at most
/// that).
pub(crate) fn wait_left(deadline: Option<Instant>) -> Option<Duration> {
    match deadline {
        Some(d) => d
            .checked_duration_since(Instant::now())
            .filter(|w| !w.is_zero()),
        None => Some(Duration::from_secs(1)),
    }
}
