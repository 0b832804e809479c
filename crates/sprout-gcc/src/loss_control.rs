//! The loss-based controller (draft-ietf-rmcat-gcc-02 section 6): over windows of at least
//! [`MIN_WINDOW_PACKETS`] packets, the loss fraction `p` moves the loss-based estimate `A_s`:
//! above 10% it falls to `A_s (1 - 0.5 p)`, below 2% it rises 5%, between them it holds. It
//! never exceeds the delay-based estimate (the draft's `A_s <= A_r`), and during the first
//! [`START_PHASE`] with no loss at all it follows the delay-based estimate up (libwebrtc's
//! start phase, so that a start-up probe raises the target at once).

use sprout_core::time::{Duration, Instant};

/// The fewest packets a loss window holds: enough that the 2% and 10% thresholds separate loss
/// rates (at 5% random loss, 50 packets fall below 2% or above 10% only 8% and 4% of the time).
pub const MIN_WINDOW_PACKETS: u64 = 50;
/// Loss above this fraction lowers the estimate.
pub const HIGH_LOSS: f64 = 0.10;
/// Loss below this fraction raises it.
pub const LOW_LOSS: f64 = 0.02;
/// The increase per window at low loss (the draft's 1.05).
pub const INCREASE: f64 = 1.05;
/// The start phase, µs (2 s, libwebrtc).
pub const START_PHASE: Duration = Duration::from_secs(2);

/// The loss-based controller.
#[derive(Clone, Debug)]
pub struct LossControl {
    estimate_bps: f64,
    min_bps: f64,
    max_bps: f64,
    start: Option<Instant>,
    expected: u64,
    lost: u64,
    any_loss: bool,
    last_fraction: Option<f64>,
}

impl LossControl {
    /// A controller starting at `start_bps`, kept within `[min_bps, max_bps]` (bit/s).
    pub fn new(start_bps: f64, min_bps: f64, max_bps: f64) -> LossControl {
        LossControl {
            estimate_bps: start_bps.clamp(min_bps, max_bps),
            min_bps,
            max_bps,
            start: None,
            expected: 0,
            lost: 0,
            any_loss: false,
            last_fraction: None,
        }
    }

    /// The loss-based estimate, bit/s.
    pub fn estimate_bps(&self) -> f64 {
        self.estimate_bps
    }

    /// The loss fraction of the last complete window (0..1), if any.
    pub fn last_fraction(&self) -> Option<f64> {
        self.last_fraction
    }

    /// Takes one feedback's count of packets `expected` and `lost` at `now`, with the
    /// current delay-based estimate (bit/s); returns the loss-based estimate.
    pub fn on_feedback(&mut self, now: Instant, expected: u64, lost: u64, delay_bps: f64) -> f64 {
        let start = *self.start.get_or_insert(now);
        self.expected += expected;
        self.lost += lost.min(expected);
        self.any_loss |= lost > 0;
        if self.expected >= MIN_WINDOW_PACKETS {
            let p = self.lost as f64 / self.expected as f64;
            self.last_fraction = Some(p);
            if p > HIGH_LOSS {
                self.estimate_bps *= 1.0 - 0.5 * p;
            } else if p < LOW_LOSS {
                self.estimate_bps *= INCREASE;
            }
            self.expected = 0;
            self.lost = 0;
        }
        if !self.any_loss && now.saturating_duration_since(start) < START_PHASE {
            self.estimate_bps = self.estimate_bps.max(delay_bps);
        }
        self.estimate_bps = self
            .estimate_bps
            .min(delay_bps)
            .clamp(self.min_bps, self.max_bps);
        self.estimate_bps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(us: u64) -> Instant {
        Instant::from_micros(us)
    }

    #[test]
    fn high_loss_lowers_by_half_the_fraction() {
        let mut c = LossControl::new(1e6, 30e3, 20e6);
        // 20% loss over 100 packets: 1e6 * (1 - 0.1).
        let e = c.on_feedback(t(3_000_000), 100, 20, 5e6);
        assert!((e - 9e5).abs() < 1e-6, "{e}");
    }

    #[test]
    fn low_loss_raises_5_percent_up_to_the_delay_based_estimate() {
        let mut c = LossControl::new(1e6, 30e3, 20e6);
        c.on_feedback(t(0), 10, 1, 5e6);
        // After the start phase: 0% loss over 100 packets.
        let e = c.on_feedback(t(3_000_000), 100, 0, 5e6);
        // The window holds the first 10 packets too: 1 of 110 lost, under 2%.
        assert!((e - 1.05e6).abs() < 1e-6, "{e}");
        let e = c.on_feedback(t(3_100_000), 100, 0, 1.06e6);
        assert!((e - 1.06e6).abs() < 1e-6, "{e}");
    }

    #[test]
    fn moderate_loss_holds() {
        let mut c = LossControl::new(1e6, 30e3, 20e6);
        let e = c.on_feedback(t(3_000_000), 100, 5, 5e6);
        assert_eq!(e, 1e6);
        assert_eq!(c.last_fraction(), Some(0.05));
    }

    #[test]
    fn a_window_waits_for_50_packets() {
        let mut c = LossControl::new(1e6, 30e3, 20e6);
        c.on_feedback(t(3_000_000), 20, 10, 5e6);
        assert_eq!(c.estimate_bps(), 1e6);
        assert_eq!(c.last_fraction(), None);
        c.on_feedback(t(3_100_000), 30, 10, 5e6);
        // 20 of 50 lost: 1e6 * (1 - 0.2).
        assert!((c.estimate_bps() - 8e5).abs() < 1e-6);
    }

    #[test]
    fn lossless_start_follows_the_delay_based_estimate_lossy_start_does_not() {
        let mut c = LossControl::new(3e5, 30e3, 20e6);
        assert_eq!(c.on_feedback(t(0), 5, 0, 3e5), 3e5);
        assert_eq!(c.on_feedback(t(500_000), 5, 0, 1.8e6), 1.8e6);
        let mut c = LossControl::new(3e5, 30e3, 20e6);
        c.on_feedback(t(0), 5, 1, 3e5);
        assert_eq!(c.on_feedback(t(500_000), 5, 0, 1.8e6), 3e5);
    }
}
