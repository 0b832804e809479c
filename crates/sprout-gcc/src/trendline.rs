//! libwebrtc's trendline estimator: the delay variations of successive groups
//! ([`crate::arrival_filter::InterArrival`]) are accumulated into the one-way queueing delay,
//! smoothed, and the slope of a least-squares line through the last [`WINDOW`] points (smoothed
//! delay against arrival time) is the delay gradient. It is the default estimator of this
//! model: a pacer that sends each frame at 2.5 times the target makes the per-group delay
//! variation swing by several ms inside every frame, and the draft's Kalman filter either
//! follows that swing or, once its noise estimate has grown, averages over seconds; the
//! regression over ~20 groups sees through the swing and answers within a few frames
//! (measured in this crate's and the simulator's tests: on a 2 Mbit/s link the Kalman filter
//! let the queue reach 340 ms before it signalled over-use).

use std::collections::VecDeque;

use sprout_core::time::Instant;

use crate::arrival_filter::{GroupDelta, MAX_DELTAS};

/// Points in the regression (libwebrtc's 20).
pub const WINDOW: usize = 20;
/// Weight of the previous smoothed delay (libwebrtc's 0.9).
pub const SMOOTHING: f64 = 0.9;
/// The gain applied to the slope before it meets the threshold (libwebrtc's 4).
pub const THRESHOLD_GAIN: f64 = 4.0;

/// The trendline estimator.
#[derive(Clone, Debug, Default)]
pub struct TrendlineEstimator {
    accumulated_ms: f64,
    smoothed_ms: f64,
    first_arrival: Option<Instant>,
    /// (arrival time since the first, ms; smoothed delay, ms).
    points: VecDeque<(f64, f64)>,
    deltas: u32,
    slope: f64,
}

impl TrendlineEstimator {
    /// An estimator with no point yet.
    pub fn new() -> TrendlineEstimator {
        TrendlineEstimator::default()
    }

    /// Takes the delta of a group whose last packet arrived at `arrival`; returns the
    /// scaled gradient for the detector, ms: `min(deltas, 60) * slope * 4`.
    pub fn update(&mut self, delta: &GroupDelta, arrival: Instant) -> f64 {
        self.deltas = self.deltas.saturating_add(1);
        self.accumulated_ms += delta.delay_variation_ms;
        self.smoothed_ms = SMOOTHING * self.smoothed_ms + (1.0 - SMOOTHING) * self.accumulated_ms;
        let first = *self.first_arrival.get_or_insert(arrival);
        let x = arrival.saturating_duration_since(first).as_millis_f64();
        self.points.push_back((x, self.smoothed_ms));
        if self.points.len() > WINDOW {
            self.points.pop_front();
        }
        if self.points.len() == WINDOW {
            if let Some(s) = slope(&self.points) {
                self.slope = s;
            }
        }
        self.scaled()
    }

    /// The slope of the last regression (ms of delay per ms of time).
    pub fn slope(&self) -> f64 {
        self.slope
    }

    /// The slope scaled for the detector, ms.
    pub fn scaled(&self) -> f64 {
        f64::from(self.deltas.min(MAX_DELTAS)) * self.slope * THRESHOLD_GAIN
    }
}

/// The least-squares slope of `points`, `None` when all x are equal.
fn slope(points: &VecDeque<(f64, f64)>) -> Option<f64> {
    let n = points.len() as f64;
    let (mx, my) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), &(x, y)| (a + x / n, b + y / n));
    let (num, den) = points.iter().fold((0.0, 0.0), |(num, den), &(x, y)| {
        (num + (x - mx) * (y - my), den + (x - mx) * (x - mx))
    });
    (den > 0.0).then(|| num / den)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(d: f64) -> GroupDelta {
        GroupDelta {
            send_delta_ms: 10.0,
            arrival_delta_ms: 10.0 + d,
            delay_variation_ms: d,
        }
    }

    #[test]
    fn a_steadily_growing_queue_gives_its_slope() {
        let mut t = TrendlineEstimator::new();
        // 1 ms more delay every 10 ms group: the queue grows 0.1 ms per ms.
        let mut arrival = 0;
        for _ in 0..200 {
            arrival += 11_000;
            t.update(&delta(1.0), Instant::from_micros(arrival));
        }
        assert!((t.slope() - 1.0 / 11.0).abs() < 1e-3, "{}", t.slope());
        assert!((t.scaled() - 60.0 * 4.0 / 11.0).abs() < 0.5);
    }

    #[test]
    fn a_swing_inside_frames_averages_out() {
        let mut t = TrendlineEstimator::new();
        // +5, +5, -10 ms: a queue that fills within each frame and drains between frames.
        let mut arrival = 0;
        for i in 0..300 {
            arrival += 11_000;
            let d = if i % 3 == 2 { -10.0 } else { 5.0 };
            t.update(&delta(d), Instant::from_micros(arrival));
        }
        assert!(t.scaled().abs() < 6.0, "{}", t.scaled());
    }

    #[test]
    fn no_slope_before_the_window_fills() {
        let mut t = TrendlineEstimator::new();
        for i in 1..WINDOW as u64 {
            assert_eq!(t.update(&delta(3.0), Instant::from_micros(i * 10_000)), 0.0);
        }
        assert!(t.update(&delta(3.0), Instant::from_micros(200_000)) > 0.0);
    }
}
