//! The delay-based rate controller (draft-ietf-rmcat-gcc-02 section 5.5, libwebrtc's
//! `AimdRateControl`): a three-state machine (hold, increase, decrease) driven by the over-use
//! signal. Far from the last known capacity the estimate grows multiplicatively, 8% a second;
//! near it (within 3 standard deviations of the average received rate at past over-uses)
//! additively, about half a packet per response time; on over-use it drops to 0.85 times the
//! received rate. It never grows beyond 1.5 times the received rate.

use sprout_core::time::{Duration, Instant};

use crate::overuse::BandwidthUsage;

/// Multiplicative increase per second far from convergence (the draft's 1.08).
pub const MULTIPLICATIVE_PER_S: f64 = 1.08;
/// The decrease factor on over-use, times the received rate (the draft's beta, 0.85).
pub const BETA: f64 = 0.85;
/// The estimate's ceiling, times the received rate (the draft's 1.5).
pub const MAX_OVER_RECEIVED: f64 = 1.5;
/// The packet size the additive increase assumes, bytes.
pub const PACKET_BYTES: f64 = 1200.0;
/// The least additive increase per update, bit/s (the draft's 1000).
pub const MIN_ADDITIVE_BPS: f64 = 1000.0;
/// The response time is the round-trip time plus this, ms (the draft's 100 ms).
pub const RESPONSE_EXTRA_MS: f64 = 100.0;
/// Weight of a new sample in the average received rate at over-use (libwebrtc's 0.05).
pub const MAX_AVERAGE_WEIGHT: f64 = 0.05;

/// The state of the rate controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateState {
    /// Keep the estimate.
    Hold,
    /// Raise it.
    Increase,
    /// Lower it (once, then hold).
    Decrease,
}

/// The AIMD delay-based rate controller.
#[derive(Clone, Debug)]
pub struct AimdRateControl {
    estimate_bps: f64,
    min_bps: f64,
    max_bps: f64,
    state: RateState,
    last_update: Option<Instant>,
    last_decrease: Option<Instant>,
    /// Average received rate at over-use, kbit/s, and its normalised variance (kbit/s).
    avg_max_kbps: Option<f64>,
    var_max_kbps: f64,
}

impl AimdRateControl {
    /// A controller starting at `start_bps`, kept within `[min_bps, max_bps]` (bit/s).
    pub fn new(start_bps: f64, min_bps: f64, max_bps: f64) -> AimdRateControl {
        AimdRateControl {
            estimate_bps: start_bps.clamp(min_bps, max_bps),
            min_bps,
            max_bps,
            state: RateState::Hold,
            last_update: None,
            last_decrease: None,
            avg_max_kbps: None,
            var_max_kbps: 0.4,
        }
    }

    /// The delay-based estimate, bit/s.
    pub fn estimate_bps(&self) -> f64 {
        self.estimate_bps
    }

    /// The state the last update left.
    pub fn state(&self) -> RateState {
        self.state
    }

    /// Whether the estimate is near the last known capacity (additive increase).
    pub fn near_max(&self) -> bool {
        self.avg_max_kbps.is_some()
    }

    /// Sets the estimate to `bps` (a probe's result), within the bounds.
    pub fn set_estimate(&mut self, bps: f64, now: Instant) {
        self.estimate_bps = bps.clamp(self.min_bps, self.max_bps);
        self.last_update = Some(now);
    }

    /// Updates the estimate at `now` with the detector's `usage`, the received rate
    /// (bit/s, `None` before one is measured) and the round-trip time (ms); returns it.
    pub fn update(
        &mut self,
        usage: BandwidthUsage,
        received_bps: Option<f64>,
        rtt_ms: f64,
        now: Instant,
    ) -> f64 {
        self.state = match (usage, self.state) {
            (BandwidthUsage::Overusing, _) => RateState::Decrease,
            (BandwidthUsage::Underusing, _) => RateState::Hold,
            (BandwidthUsage::Normal, RateState::Hold) => RateState::Increase,
            (BandwidthUsage::Normal, s) => s,
        };
        let dt_ms = self
            .last_update
            .map_or(0.0, |t| now.saturating_duration_since(t).as_millis_f64());
        match self.state {
            RateState::Hold => {}
            RateState::Increase => self.increase(received_bps, rtt_ms, dt_ms),
            RateState::Decrease => {
                if self.time_to_reduce(received_bps, rtt_ms, now) {
                    self.decrease(received_bps, now);
                }
                self.state = RateState::Hold;
            }
        }
        self.estimate_bps = self.estimate_bps.clamp(self.min_bps, self.max_bps);
        self.last_update = Some(now);
        self.estimate_bps
    }

    fn increase(&mut self, received_bps: Option<f64>, rtt_ms: f64, dt_ms: f64) {
        if let (Some(avg), Some(r)) = (self.avg_max_kbps, received_bps) {
            // Far above the old capacity: it has grown, search multiplicatively again.
            if r / 1e3 > avg + 3.0 * self.std_max_kbps() {
                self.avg_max_kbps = None;
            }
        }
        let new = if self.near_max() {
            let response_ms = rtt_ms + RESPONSE_EXTRA_MS;
            let alpha = 0.5 * (dt_ms / response_ms).min(1.0);
            self.estimate_bps + (alpha * PACKET_BYTES * 8.0).max(MIN_ADDITIVE_BPS)
        } else {
            let eta = MULTIPLICATIVE_PER_S.powf((dt_ms / 1e3).min(1.0));
            self.estimate_bps * eta
        };
        // The ceiling: never more than 1.5x what arrives (but never lowered by it).
        let cap = received_bps.map_or(f64::INFINITY, |r| MAX_OVER_RECEIVED * r);
        self.estimate_bps = if new > cap {
            self.estimate_bps.max(cap)
        } else {
            new
        };
    }

    /// A further decrease waits one round-trip time (10-200 ms) after the last, unless what
    /// arrives is under half the estimate.
    fn time_to_reduce(&self, received_bps: Option<f64>, rtt_ms: f64, now: Instant) -> bool {
        let Some(last) = self.last_decrease else {
            return true;
        };
        let interval = Duration::from_micros((rtt_ms.clamp(10.0, 200.0) * 1e3) as u64);
        now.saturating_duration_since(last) >= interval
            || received_bps.is_some_and(|r| r < 0.5 * self.estimate_bps)
    }

    fn decrease(&mut self, received_bps: Option<f64>, now: Instant) {
        let received = received_bps.unwrap_or(self.estimate_bps);
        self.estimate_bps = (BETA * received).min(self.estimate_bps);
        let r_kbps = received / 1e3;
        if let Some(avg) = self.avg_max_kbps {
            if r_kbps < avg - 3.0 * self.std_max_kbps() {
                self.avg_max_kbps = None;
            }
        }
        self.update_max(r_kbps);
        self.last_decrease = Some(now);
    }

    /// The average received rate at over-use and its variance (normalised by the average, as
    /// libwebrtc keeps it, within [0.4, 2.5]).
    fn update_max(&mut self, r_kbps: f64) {
        let a = MAX_AVERAGE_WEIGHT;
        let avg = match self.avg_max_kbps {
            None => r_kbps,
            Some(avg) => (1.0 - a) * avg + a * r_kbps,
        };
        let norm = avg.max(1.0);
        self.var_max_kbps =
            ((1.0 - a) * self.var_max_kbps + a * (avg - r_kbps).powi(2) / norm).clamp(0.4, 2.5);
        self.avg_max_kbps = Some(avg);
    }

    /// Standard deviation of the received rate at over-use, kbit/s.
    fn std_max_kbps(&self) -> f64 {
        (self.var_max_kbps * self.avg_max_kbps.unwrap_or(0.0)).sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(us: u64) -> Instant {
        Instant::from_micros(us)
    }

    fn ctl() -> AimdRateControl {
        AimdRateControl::new(1e6, 30e3, 20e6)
    }

    #[test]
    fn far_from_convergence_it_grows_8_percent_a_second() {
        let mut c = ctl();
        c.update(BandwidthUsage::Normal, None, 50.0, t(0));
        for i in 1..=10u64 {
            c.update(BandwidthUsage::Normal, None, 50.0, t(i * 100_000));
        }
        let expected = 1e6 * 1.08;
        assert!(
            (c.estimate_bps() - expected).abs() < 100.0,
            "{}",
            c.estimate_bps()
        );
    }

    #[test]
    fn overuse_drops_to_085_of_received_then_grows_additively() {
        let mut c = ctl();
        c.update(BandwidthUsage::Normal, Some(1e6), 50.0, t(0));
        c.update(BandwidthUsage::Overusing, Some(8e5), 50.0, t(100_000));
        assert!((c.estimate_bps() - 0.85 * 8e5).abs() < 1e-6);
        assert_eq!(c.state(), RateState::Hold);
        assert!(c.near_max());
        // Near the known capacity: one second of 100 ms updates adds about
        // 10 * 0.5 * (100/150) * 9600 = 32 kbit/s, not 8%.
        let before = c.estimate_bps();
        for i in 2..=12u64 {
            c.update(BandwidthUsage::Normal, Some(8e5), 50.0, t(i * 100_000));
        }
        let gained = c.estimate_bps() - before;
        assert!(gained > 20e3 && gained < 45e3, "{gained}");
    }

    #[test]
    fn never_more_than_15_times_the_received_rate() {
        let mut c = AimdRateControl::new(1e6, 30e3, 20e6);
        c.update(BandwidthUsage::Normal, Some(1e6), 50.0, t(0));
        for i in 1..=100u64 {
            c.update(BandwidthUsage::Normal, Some(1e6), 50.0, t(i * 1_000_000));
        }
        assert!(
            (c.estimate_bps() - 1.5e6).abs() < 1.0,
            "{}",
            c.estimate_bps()
        );
    }

    #[test]
    fn underuse_holds_and_a_second_decrease_waits_a_round_trip() {
        let mut c = ctl();
        c.update(BandwidthUsage::Normal, None, 50.0, t(0));
        let e = c.update(BandwidthUsage::Underusing, Some(1e6), 50.0, t(500_000));
        assert_eq!(e, 1e6);
        c.update(BandwidthUsage::Overusing, Some(1e6), 50.0, t(600_000));
        assert!((c.estimate_bps() - 8.5e5).abs() < 1e-6);
        // 20 ms later (RTT 50 ms): no second cut.
        c.update(BandwidthUsage::Overusing, Some(9e5), 50.0, t(620_000));
        assert!((c.estimate_bps() - 8.5e5).abs() < 1e-6);
        c.update(BandwidthUsage::Overusing, Some(9e5), 50.0, t(660_000));
        assert!((c.estimate_bps() - 7.65e5).abs() < 1e-6);
    }
}
