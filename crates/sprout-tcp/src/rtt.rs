//! Round-trip time estimation and the retransmission timeout (RFC 6298).

use sprout_core::time::Duration;

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
    srtt: Option<Duration>,
    rttvar: Duration,
    min_rtt: Option<Duration>,
    latest: Option<Duration>,
    rto: Duration,
    min_rto: Duration,
    max_rto: Duration,
}

impl RttEstimator {
    pub(crate) fn new(initial_rto: Duration, min_rto: Duration, max_rto: Duration) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: Duration::ZERO,
            min_rtt: None,
            latest: None,
            rto: initial_rto.clamp(min_rto, max_rto.max(min_rto)),
            min_rto,
            max_rto: max_rto.max(min_rto),
        }
    }

    /// Takes one RTT measurement `r` and updates SRTT, RTTVAR and RTO (RFC 6298 §2.2–2.4).
    pub(crate) fn on_sample(&mut self, r: Duration) {
        let r = r.max(Duration::from_micros(1));
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(srtt) => {
                // RTTVAR <- (1 - 1/4) RTTVAR + 1/4 |SRTT - R'|; SRTT <- (1 - 1/8) SRTT + 1/8 R'.
                let deviation = srtt.max(r) - srtt.min(r);
                self.rttvar = (self.rttvar * 3 + deviation) / 4;
                self.srtt = Some((srtt * 7 + r) / 8);
            }
        }
        self.latest = Some(r);
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        let srtt = self.srtt.unwrap_or(r);
        let variance = (self.rttvar * 4)
            .max(self.min_rto)
            .max(Duration::from_micros(1));
        self.rto = (srtt + variance).min(self.max_rto);
    }

    /// Sets the RTO used until the first sample, within the bounds.
    pub(crate) fn set_initial_rto(&mut self, rto: Duration) {
        if self.srtt.is_none() {
            self.rto = rto.clamp(self.min_rto, self.max_rto);
        }
    }

    /// Current RTO without backoff.
    #[cfg(test)]
    pub(crate) fn rto(&self) -> Duration {
        self.rto
    }

    /// RTO after `backoff` doublings (RFC 6298 §5.5), capped at the maximum.
    pub(crate) fn backed_off_rto(&self, backoff: u32) -> Duration {
        let factor = 1u64.checked_shl(backoff.min(40)).unwrap_or(u64::MAX);
        (self.rto * factor).min(self.max_rto)
    }

    /// Smoothed RTT, once there is a sample.
    pub(crate) fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// Smallest RTT sample so far.
    pub(crate) fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc6298_first_and_second_sample() {
        let d = Duration::from_micros;
        let mut e = RttEstimator::new(d(1_000_000), d(200_000), d(60_000_000));
        assert_eq!(e.rto(), d(1_000_000));
        e.on_sample(d(100_000));
        // SRTT = R, RTTVAR = R/2, RTO = SRTT + 4 RTTVAR = 300 ms.
        assert_eq!(e.srtt(), Some(d(100_000)));
        assert_eq!(e.rto(), d(300_000));
        e.on_sample(d(100_000));
        // RTTVAR = 3/4 * 50 ms = 37.5 ms; RTO = 100 + max(150, 200) = 300 ms.
        assert_eq!(e.rto(), d(300_000));
        e.on_sample(d(300_000));
        // SRTT = 125 ms, RTTVAR = (3 * 37.5 + 200) / 4 = 78.125 ms: RTO = 125 + 312.5 ms.
        assert_eq!(e.rto(), d(437_500));
        for _ in 0..200 {
            e.on_sample(d(40_000));
        }
        assert_eq!(e.rto(), d(240_000), "SRTT plus the 200 ms floor");
        assert_eq!(e.backed_off_rto(2), d(960_000));
        assert_eq!(e.backed_off_rto(30), d(60_000_000));
        assert_eq!(e.min_rtt(), Some(d(40_000)));
    }
}
