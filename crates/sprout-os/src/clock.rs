//! Clocks: `CLOCK_MONOTONIC` and `CLOCK_REALTIME` read as nanosecond counts, the protocol's
//! time read from `CLOCK_MONOTONIC` as a [`sprout_core::time::Instant`], and the unit of the
//! kernel's CPU-time counters.
//!
//! This is where the Linux runtimes (the tunnel, the interactive and saturator programs) read
//! the time they hand to the sans-IO protocols: [`MonotonicClock::now`] (microseconds since
//! the clock was created) or [`monotonic`] (microseconds since the kernel's start). The portable
//! runtime, `sprout-net`, cannot depend on this Linux-only crate; its `Clock` is the twin of
//! [`MonotonicClock`] on `std::time::Instant`, which on Linux reads the same `CLOCK_MONOTONIC`.

use rustix::time::{clock_gettime, ClockId, Timespec};
use sprout_core::time::Instant;

/// `CLOCK_MONOTONIC` now (ns since an arbitrary start, usually boot). The same clock in every
/// network namespace, so a timestamp taken by a sender inside the emulated "mobile" namespace
/// can be compared with one taken outside.
pub fn monotonic_ns() -> u64 {
    nanoseconds(clock_gettime(ClockId::Monotonic))
}

/// `CLOCK_MONOTONIC` now as an [`Instant`]: whole microseconds since the clock's start
/// (rounded down), comparable between network namespaces as [`monotonic_ns`] is.
pub fn monotonic() -> Instant {
    Instant::from_micros(monotonic_ns() / 1000)
}

/// A protocol clock on `CLOCK_MONOTONIC` whose time 0 is when it was created: what a runtime
/// passes to a sans-IO endpoint as `now`.
#[derive(Clone, Copy, Debug)]
pub struct MonotonicClock {
    start_ns: u64,
}

impl MonotonicClock {
    /// A clock whose time 0 is now.
    pub fn new() -> MonotonicClock {
        MonotonicClock {
            start_ns: monotonic_ns(),
        }
    }

    /// The [`monotonic_ns`] reading the clock counts from.
    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }

    /// Whole microseconds since the clock was created (rounded down).
    pub fn now(&self) -> Instant {
        Instant::from_micros(monotonic_ns().saturating_sub(self.start_ns) / 1000)
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        MonotonicClock::new()
    }
}

/// `CLOCK_REALTIME` now (ns since the Unix epoch): wall-clock time, comparable between hosts
/// whose clocks are synchronised; it can jump when the clock is set.
pub fn realtime_ns() -> u64 {
    nanoseconds(clock_gettime(ClockId::Realtime))
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`, usually 100): the unit of the CPU times in
/// `/proc/PID/stat` (`utime`, `stime`).
pub fn clock_ticks_per_second() -> u64 {
    rustix::param::clock_ticks_per_second()
}

fn nanoseconds(ts: Timespec) -> u64 {
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_advance_and_ticks_are_positive() {
        let a = monotonic_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = monotonic_ns();
        assert!(b >= a + 2_000_000, "{a} {b}");
        // After 2020-01-01.
        assert!(realtime_ns() > 1_577_836_800 * 1_000_000_000);
        assert!(clock_ticks_per_second() > 0);
    }
}
