//! Pacing: spaces data segments `len / rate` apart, like Linux's internal TCP pacing
//! (`tcp_wstamp_ns`): each departure is scheduled at `max(previous departure time, now) +
//! len / rate`, so after an idle period one segment leaves at once and the next waits.

use sprout_core::time::Instant;

/// Departure scheduler. Kept in nanoseconds so rounding does not accumulate.
#[derive(Clone, Debug, Default)]
pub(crate) struct Pacer {
    /// Earliest time the next segment may leave (ns).
    next_ns: u64,
}

impl Pacer {
    /// Whether a segment may leave at `now`.
    pub(crate) fn can_send(&self, now: Instant) -> bool {
        now.as_micros().saturating_mul(1000) >= self.next_ns
    }

    /// Earliest departure time of the next segment (rounded up to the microsecond).
    pub(crate) fn release(&self) -> Instant {
        Instant::from_micros(self.next_ns.div_ceil(1000))
    }

    /// Records a departure of `len` bytes at `now` under `rate` bytes/s.
    pub(crate) fn on_send(&mut self, now: Instant, len: u64, rate_bytes_per_s: u64) {
        let now_ns = now.as_micros().saturating_mul(1000);
        let gap_ns = (u128::from(len) * 1_000_000_000 / u128::from(rate_bytes_per_s.max(1)))
            .min(u128::from(u64::MAX / 4)) as u64;
        self.next_ns = self.next_ns.max(now_ns).saturating_add(gap_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spaces_segments_by_len_over_rate() {
        let t = Instant::from_micros;
        let mut p = Pacer::default();
        assert!(p.can_send(t(0)));
        // 1448 bytes at 1.448 MB/s: 1 ms apart.
        p.on_send(t(0), 1448, 1_448_000);
        assert!(!p.can_send(t(999)));
        assert!(p.can_send(t(1000)));
        assert_eq!(p.release(), t(1000));
        p.on_send(t(1000), 1448, 1_448_000);
        assert_eq!(p.release(), t(2000));
        // After idling, the schedule restarts from now.
        p.on_send(t(10_000), 1448, 1_448_000);
        assert_eq!(p.release(), t(11_000));
    }
}
