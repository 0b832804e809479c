//! Round-trip time estimation and the retransmission timeout (RFC 6298).

/// Smoothed RTT, RTT variation and RTO per RFC 6298 §2, plus the minimum RTT seen.
///
/// Samples come from timestamps (RFC 7323), one per ACK that acknowledges new data, so Karn's
/// algorithm is not needed. The clock granularity `G` is 1 µs.
///
/// The minimum RTO is applied as Linux applies it, to the variance term:
/// `RTO = SRTT + max(4 * RTTVAR, min_rto)` (Linux: `rttvar = max(mdev_max, rto_min)`), rather
/// than as `max(SRTT + 4 * RTTVAR, min_rto)`. With one sample per ACK, RTTVAR collapses when the
/// RTT drifts slowly (RFC 7323 Appendix G), and an RTO close to SRTT then expires before a fast
/// retransmission queued behind a full buffer can be acknowledged.

#[derive(Clone, Debug)]
pub(crate) struct RttEstimator {
    srtt_us: Option<u64>,
    rttvar_us: u64,
    min_rtt_us: Option<u64>,
    latest_us: Option<u64>,
    rto_us: u64,
    min_rto_us: u64,
    max_rto_us: u64,
}

impl RttEstimator {
    pub fn new(initial_rto_us: u64, min_rto_us: u64, max_rto_us: u64) -> Self {
        RttEstimator {
            srtt_us: None,
            rttvar_us: 0,
            min_rtt_us: None,
            latest_us: None,
            rto_us: initial_rto_us.clamp(min_rto_us, max_rto_us.max(min_rto_us)),
            min_rto_us,
            max_rto_us: max_rto_us.max(min_rto_us),
        }
    }

    /// Takes one RTT measurement `r` (µs) and updates SRTT, RTTVAR and RTO (RFC 6298 §2.2–2.4).
    pub fn on_sample(&mut self, r: u64) {
        let r = r.max(1);
        match self.srtt_us {
            None => {
                self.srtt_us = Some(r);
                self.rttvar_us = r / 2;
            }
            Some(srtt) => {
                // RTTVAR <- (1 - 1/4) RTTVAR + 1/4 |SRTT - R'|; SRTT <- (1 - 1/8) SRTT + 1/8 R'.
                self.rttvar_us = (3 * self.rttvar_us + srtt.abs_diff(r)) / 4;
                self.srtt_us = Some((7 * srtt + r) / 8);
            }
        }
        self.latest_us = Some(r);
        self.min_rtt_us = Some(self.min_rtt_us.map_or(r, |m| m.min(r)));
        let srtt = self.srtt_us.unwrap_or(r);
        let rto = srtt + (4 * self.rttvar_us).max(self.min_rto_us).max(1);
        self.rto_us = rto.min(self.max_rto_us);
    }

    /// Sets the RTO used until the first sample (µs), within the bounds.
    pub fn set_initial_rto(&mut self, rto_us: u64) {
        if self.srtt_us.is_none() {
            self.rto_us = rto_us.clamp(self.min_rto_us, self.max_rto_us);
        }
    }

    /// Current RTO without backoff (µs).
    #[cfg(test)]
    pub fn rto_us(&self) -> u64 {
        self.rto_us
    }

    /// RTO after `backoff` doublings (RFC 6298 §5.5), capped at the maximum (µs).
    pub fn backed_off_rto_us(&self, backoff: u32) -> u64 {
        let factor = 1u64.checked_shl(backoff.min(40)).unwrap_or(u64::MAX);
        self.rto_us.saturating_mul(factor).min(self.max_rto_us)
    }

    /// Smoothed RTT (µs), once there is a sample.
    pub fn srtt_us(&self) -> Option<u64> {
        self.srtt_us
    }

    /// Smallest RTT sample so far (µs).
    pub fn min_rtt_us(&self) -> Option<u64> {
        self.min_rtt_us
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc6298_first_and_second_sample() {
        let mut e = RttEstimator::new(1_000_000, 200_000, 60_000_000);
        assert_eq!(e.rto_us(), 1_000_000);
        e.on_sample(100_000);
        // SRTT = R, RTTVAR = R/2, RTO = SRTT + 4 RTTVAR = 300 ms.
        assert_eq!(e.srtt_us(), Some(100_000));
        assert_eq!(e.rto_us(), 300_000);
        e.on_sample(100_000);
        // RTTVAR = 3/4 * 50 ms = 37.5 ms; RTO = 100 + max(150, 200) = 300 ms.
        assert_eq!(e.rto_us(), 300_000);
        e.on_sample(300_000);
        // SRTT = 125 ms, RTTVAR = (3 * 37.5 + 200) / 4 = 78.125 ms: RTO = 125 + 312.5 ms.
        assert_eq!(e.rto_us(), 437_500);
        for _ in 0..200 {
            e.on_sample(40_000);
        }
        assert_eq!(e.rto_us(), 240_000, "SRTT plus the 200 ms floor");
        assert_eq!(e.backed_off_rto_us(2), 960_000);
        assert_eq!(e.backed_off_rto_us(30), 60_000_000);
        assert_eq!(e.min_rtt_us(), Some(40_000));
    }
}
