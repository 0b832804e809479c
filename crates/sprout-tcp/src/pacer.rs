//! Pacing: spaces data segments `len / rate` apart, like Linux's internal TCP pacing
//! (`tcp_wstamp_ns`): each departure is scheduled at `max(previous departure time, now) +
//! len / rate`, so after an idle period one segment leaves at once and the next waits.

/// Departure scheduler. Kept in nanoseconds so rounding does not accumulate.
#[derive(Clone, Debug, Default)]
pub(crate) struct Pacer {
    /// Earliest time the next segment may leave (ns).
    next_ns: u64,
}

impl Pacer {
    /// Whether a segment may leave at `now_us`.
    pub fn can_send(&self, now_us: u64) -> bool {
        now_us.saturating_mul(1000) >= self.next_ns
    }

    /// Earliest departure time of the next segment (µs, rounded up).
    pub fn release_us(&self) -> u64 {
        self.next_ns.div_ceil(1000)
    }

    /// Records a departure of `len` bytes at `now_us` under `rate` bytes/s.
    pub fn on_send(&mut self, now_us: u64, len: u64, rate_bytes_per_s: u64) {
        let now_ns = now_us.saturating_mul(1000);
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
        let mut p = Pacer::default();
        assert!(p.can_send(0));
        // 1448 bytes at 1.448 MB/s: 1 ms apart.
        p.on_send(0, 1448, 1_448_000);
        assert!(!p.can_send(999));
        assert!(p.can_send(1000));
        assert_eq!(p.release_us(), 1000);
        p.on_send(1000, 1448, 1_448_000);
        assert_eq!(p.release_us(), 2000);
        // After idling, the schedule restarts from now.
        p.on_send(10_000, 1448, 1_448_000);
        assert_eq!(p.release_us(), 11_000);
    }
}
