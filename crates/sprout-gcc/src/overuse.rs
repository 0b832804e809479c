//! The over-use detector (draft-ietf-rmcat-gcc-02 section 5.4): the filtered delay gradient
//! against an adaptive threshold `gamma`, which follows |m| up quickly (K_u) and down slowly
//! (K_d) so that GCC holds its own against loss-based flows; over-use only once the gradient
//! has stayed above the threshold for [`OVERUSE_TIME_MS`] and at least one more sample, and is
//! not falling.

use sprout_core::time::Instant;

/// The signal the detector gives the rate controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BandwidthUsage {
    /// The delay gradient is within the threshold.
    Normal,
    /// The queue is growing: the sender exceeds the path's capacity.
    Overusing,
    /// The queue is draining.
    Underusing,
}

/// The threshold's gain while |m| is above it, per ms (the draft's K_u).
pub const K_UP: f64 = 0.01;
/// The threshold's gain while |m| is below it, per ms (the draft's K_d).
pub const K_DOWN: f64 = 0.00018;
/// The threshold at start, ms (the draft's 12.5).
pub const INITIAL_THRESHOLD_MS: f64 = 12.5;
/// The lowest threshold, ms.
pub const MIN_THRESHOLD_MS: f64 = 6.0;
/// The highest threshold, ms.
pub const MAX_THRESHOLD_MS: f64 = 600.0;
/// A gradient this far above the threshold, ms, does not move it (a sudden change of the path
/// must not raise the bar it is detected by; the draft's 15 ms).
pub const MAX_ADAPT_OFFSET_MS: f64 = 15.0;
/// How long the gradient must stay above the threshold before over-use is signalled, ms.
pub const OVERUSE_TIME_MS: f64 = 10.0;
/// The longest gap between updates the threshold adapts over, ms (a pause must not swing it).
pub const MAX_UPDATE_GAP_MS: f64 = 100.0;

/// The over-use detector with its adaptive threshold.
#[derive(Clone, Debug)]
pub struct OveruseDetector {
    threshold_ms: f64,
    last_update: Option<Instant>,
    /// Time the gradient has been above the threshold, ms (negative: not above).
    time_over_ms: f64,
    /// Samples in a row above the threshold.
    samples_over: u32,
    previous_ms: f64,
    state: BandwidthUsage,
}

impl Default for OveruseDetector {
    fn default() -> Self {
        OveruseDetector {
            threshold_ms: INITIAL_THRESHOLD_MS,
            last_update: None,
            time_over_ms: -1.0,
            samples_over: 0,
            previous_ms: 0.0,
            state: BandwidthUsage::Normal,
        }
    }
}

impl OveruseDetector {
    /// A detector with the initial threshold.
    pub fn new() -> OveruseDetector {
        OveruseDetector::default()
    }

    /// Takes the (scaled) gradient `m_ms`, ms, of a group whose send delta was
    /// `send_delta_ms`, computed at `now`; returns the signal.
    pub fn detect(&mut self, m_ms: f64, send_delta_ms: f64, now: Instant) -> BandwidthUsage {
        if m_ms > self.threshold_ms {
            if self.time_over_ms < 0.0 {
                // First sample above: count half its interval.
                self.time_over_ms = send_delta_ms / 2.0;
            } else {
                self.time_over_ms += send_delta_ms;
            }
            self.samples_over += 1;
            if self.time_over_ms > OVERUSE_TIME_MS
                && self.samples_over > 1
                && m_ms >= self.previous_ms
            {
                self.time_over_ms = 0.0;
                self.samples_over = 0;
                self.state = BandwidthUsage::Overusing;
            }
        } else if m_ms < -self.threshold_ms {
            self.time_over_ms = -1.0;
            self.samples_over = 0;
            self.state = BandwidthUsage::Underusing;
        } else {
            self.time_over_ms = -1.0;
            self.samples_over = 0;
            self.state = BandwidthUsage::Normal;
        }
        self.previous_ms = m_ms;
        self.adapt(m_ms, now);
        self.state
    }

    /// `gamma(i) = gamma(i-1) + dt * K * (|m| - gamma(i-1))`, dt in ms, K = K_d below the
    /// threshold and K_u above, kept within [6, 600] ms.
    fn adapt(&mut self, m_ms: f64, now: Instant) {
        let last = self.last_update.replace(now);
        let Some(last) = last else {
            return;
        };
        if m_ms.abs() > self.threshold_ms + MAX_ADAPT_OFFSET_MS {
            return;
        }
        let k = if m_ms.abs() < self.threshold_ms {
            K_DOWN
        } else {
            K_UP
        };
        let dt_ms = (now.saturating_duration_since(last).as_millis_f64()).min(MAX_UPDATE_GAP_MS);
        self.threshold_ms += k * dt_ms * (m_ms.abs() - self.threshold_ms);
        self.threshold_ms = self.threshold_ms.clamp(MIN_THRESHOLD_MS, MAX_THRESHOLD_MS);
    }

    /// The current threshold `gamma`, ms.
    pub fn threshold_ms(&self) -> f64 {
        self.threshold_ms
    }

    /// The last signal.
    pub fn state(&self) -> BandwidthUsage {
        self.state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(us: u64) -> Instant {
        Instant::from_micros(us)
    }

    #[test]
    fn overuse_needs_10ms_and_a_second_sample() {
        let mut d = OveruseDetector::new();
        // One sample far above, with a 30 ms interval: counted as 15 ms but only one sample.
        assert_eq!(d.detect(20.0, 30.0, at(0)), BandwidthUsage::Normal);
        // A second, not falling: over-use.
        assert_eq!(d.detect(20.0, 30.0, at(30_000)), BandwidthUsage::Overusing);
        // Short intervals: 2 ms each, over-use after more than 10 ms.
        let mut d = OveruseDetector::new();
        let mut t = 0;
        let mut signalled_at = None;
        for i in 0..10 {
            t += 2_000;
            if d.detect(20.0, 2.0, at(t)) == BandwidthUsage::Overusing {
                signalled_at.get_or_insert(i);
            }
        }
        // 1 + 2*5 = 11 ms > 10 ms at the 6th sample.
        assert_eq!(signalled_at, Some(5));
    }

    #[test]
    fn a_falling_gradient_is_not_overuse() {
        let mut d = OveruseDetector::new();
        d.detect(30.0, 30.0, at(0));
        assert_eq!(d.detect(25.0, 30.0, at(30_000)), BandwidthUsage::Normal);
    }

    #[test]
    fn underuse_below_minus_threshold() {
        let mut d = OveruseDetector::new();
        assert_eq!(d.detect(-20.0, 5.0, at(0)), BandwidthUsage::Underusing);
        assert_eq!(d.detect(0.0, 5.0, at(5_000)), BandwidthUsage::Normal);
    }

    #[test]
    fn threshold_rises_fast_above_and_falls_slowly_below() {
        let mut d = OveruseDetector::new();
        d.detect(0.0, 5.0, at(0));
        // |m| = 20 (above, within 15 ms of the threshold) for 1 s: K_u = 0.01/ms pulls the
        // threshold close to 20.
        let mut t = 0;
        for _ in 0..100 {
            t += 10_000;
            d.detect(20.0, 10.0, at(t));
        }
        assert!(d.threshold_ms() > 19.0, "{}", d.threshold_ms());
        // |m| = 0 for 1 s: K_d = 0.00018/ms moves it down by only about 17%.
        let high = d.threshold_ms();
        for _ in 0..100 {
            t += 10_000;
            d.detect(0.0, 10.0, at(t));
        }
        let low = d.threshold_ms();
        assert!(low < high && low > 0.8 * high, "{high} -> {low}");
    }

    #[test]
    fn threshold_stays_within_bounds_and_ignores_jumps() {
        let mut d = OveruseDetector::new();
        d.detect(0.0, 5.0, at(0));
        // A jump 100 ms above the threshold does not move it.
        d.detect(112.5, 5.0, at(10_000));
        assert_eq!(d.threshold_ms(), INITIAL_THRESHOLD_MS);
        let mut t = 10_000;
        for _ in 0..10_000 {
            t += 100_000;
            d.detect(0.0, 10.0, at(t));
        }
        assert_eq!(d.threshold_ms(), MIN_THRESHOLD_MS);
    }
}
