//! Clocks: `CLOCK_MONOTONIC` and `CLOCK_REALTIME` read as nanosecond counts, and the unit of
//! the kernel's CPU-time counters.

use rustix::time::{clock_gettime, ClockId, Timespec};

/// `CLOCK_MONOTONIC` now (ns since an arbitrary start, usually boot). The same clock in every
/// network namespace, so a timestamp taken by a sender inside the emulated "mobile" namespace
/// can be compared with one taken outside.
pub fn monotonic_ns() -> u64 {
    nanoseconds(clock_gettime(ClockId::Monotonic))
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
