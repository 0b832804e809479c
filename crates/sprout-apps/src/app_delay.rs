//! Application-level delay of a paced stream: for every datagram the application created, the
//! time from its creation (when the application handed it to the transport: the stamp in its
//! payload) until the receiving application got it. This counts the wait in the sender's queue
//! (data the transport's window held back) as well as the network's; a datagram never delivered
//! counts as infinitely late.
//!
//! Both ends stamp and read one clock that every process on a host shares (the transfer's
//! `CLOCK_REALTIME`, the interactive stream's `CLOCK_MONOTONIC`), so through the emulator, whose
//! ends are two network namespaces of one machine, the delays are exact.

use serde::{Deserialize, Serialize};

/// The delay thresholds of the `app_within_*` shares, ms.
pub const WITHIN_MS: [f64; 3] = [100.0, 150.0, 300.0];

/// The application-level delay of one received stream. A quantile that falls among the
/// datagrams never delivered is infinite: `None` here, `null` in JSON, `∞` in text.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AppDelay {
    /// The clock both ends stamped and read: "CLOCK_REALTIME" or "CLOCK_MONOTONIC".
    pub app_clock: String,
    /// Datagrams the sending application created (handed to the transport).
    pub app_offered: u64,
    /// Of those, datagrams the receiving application got (each once).
    pub app_delivered: u64,
    /// Rate the sending application created data at over the stream's duration, kbit/s of
    /// payload.
    pub app_offered_kbps: f64,
    /// Rate the receiving application got data at over the stream's duration, kbit/s of
    /// payload.
    pub app_delivered_kbps: f64,
    /// Median creation-to-delivery delay, ms (`None`: infinite).
    pub app_delay_p50_ms: Option<f64>,
    /// 95th-percentile creation-to-delivery delay, ms (`None`: infinite).
    pub app_delay_p95_ms: Option<f64>,
    /// 99th-percentile creation-to-delivery delay, ms (`None`: infinite).
    pub app_delay_p99_ms: Option<f64>,
    /// Share of the offered datagrams delivered within 100 ms of creation, 0..1.
    pub app_within_100ms: f64,
    /// Share delivered within 150 ms, 0..1.
    pub app_within_150ms: f64,
    /// Share delivered within 300 ms, 0..1.
    pub app_within_300ms: f64,
}

/// What a receiver knows of a stream, to score it.
#[derive(Clone, Copy, Debug)]
pub struct Stream<'a> {
    /// The clock the delays were measured on.
    pub clock: &'static str,
    /// Datagrams the sender created (at least as many as were delivered).
    pub offered: u64,
    /// Payload bytes of each datagram.
    pub datagram_bytes: u64,
    /// The stream's duration, s (the sender's creation time).
    pub duration_s: f64,
    /// Creation-to-delivery delays of the delivered datagrams, ms, in any order.
    pub delays_ms: &'a [f64],
}

impl AppDelay {
    /// Scores a stream: datagrams beyond the delivered ones are counted as infinitely late.
    pub fn new(s: Stream<'_>) -> AppDelay {
        let mut d: Vec<f64> = s.delays_ms.to_vec();
        d.sort_by(f64::total_cmp);
        let delivered = d.len() as u64;
        let offered = s.offered.max(delivered);
        let kbps = |n: u64| {
            if s.duration_s > 0.0 {
                round(
                    n as f64 * s.datagram_bytes as f64 * 8.0 / 1000.0 / s.duration_s,
                    1,
                )
            } else {
                0.0
            }
        };
        let within = |ms: f64| {
            if offered == 0 {
                return 0.0;
            }
            let n = d.partition_point(|&x| x <= ms);
            round(n as f64 / offered as f64, 4)
        };
        AppDelay {
            app_clock: s.clock.to_string(),
            app_offered: offered,
            app_delivered: delivered,
            app_offered_kbps: kbps(offered),
            app_delivered_kbps: kbps(delivered),
            app_delay_p50_ms: quantile_or_infinite(&d, offered, 0.5),
            app_delay_p95_ms: quantile_or_infinite(&d, offered, 0.95),
            app_delay_p99_ms: quantile_or_infinite(&d, offered, 0.99),
            app_within_100ms: within(WITHIN_MS[0]),
            app_within_150ms: within(WITHIN_MS[1]),
            app_within_300ms: within(WITHIN_MS[2]),
        }
    }

    /// The summary line's text: rates, quantiles and shares.
    pub fn text(&self) -> String {
        format!(
            "app delay ms ({}, creation to delivery; never delivered = ∞): p50 {}  p95 {}  p99 {}; \
             within 100/150/300 ms: {:.1}% {:.1}% {:.1}%; offered {:.1} kbit/s ({} datagrams), \
             delivered {:.1} kbit/s ({})",
            self.app_clock,
            ms_text(self.app_delay_p50_ms),
            ms_text(self.app_delay_p95_ms),
            ms_text(self.app_delay_p99_ms),
            100.0 * self.app_within_100ms,
            100.0 * self.app_within_150ms,
            100.0 * self.app_within_300ms,
            self.app_offered_kbps,
            self.app_offered,
            self.app_delivered_kbps,
            self.app_delivered
        )
    }
}

/// A delay in ms with one decimal, or `∞` for `None`.
pub fn ms_text(v: Option<f64>) -> String {
    v.map_or_else(|| "∞".into(), |x| format!("{x:.1}"))
}

/// The `p` quantile (nearest rank) of `offered` values of which `sorted` are the finite ones and
/// the rest infinite; `None` when it is infinite (or there is nothing).
fn quantile_or_infinite(sorted: &[f64], offered: u64, p: f64) -> Option<f64> {
    if offered == 0 {
        return None;
    }
    let rank = ((p * offered as f64).ceil() as u64).clamp(1, offered);
    sorted.get(rank as usize - 1).map(|&x| round(x, 3))
}

/// Datagrams a paced sender creates in `duration_s` at `rate_kbps` of `datagram_bytes`-byte
/// payloads, one at time 0 and one every interval while the duration lasts.
pub fn paced_count(duration_s: f64, rate_kbps: f64, datagram_bytes: u64) -> u64 {
    if !(duration_s > 0.0 && rate_kbps > 0.0 && datagram_bytes > 0) {
        return 0;
    }
    let interval_s = datagram_bytes as f64 * 8.0 / (rate_kbps * 1000.0);
    // A hair below the exact ratio so that a whole number of intervals is not one too many.
    (duration_s / interval_s - 1e-9).ceil().max(0.0) as u64
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(offered: u64, delays_ms: &[f64]) -> AppDelay {
        AppDelay::new(Stream {
            clock: "CLOCK_REALTIME",
            offered,
            datagram_bytes: 1000,
            duration_s: 1.0,
            delays_ms,
        })
    }

    #[test]
    fn undelivered_datagrams_are_infinitely_late() {
        // 100 offered, 90 delivered at 1..=90 ms (shuffled): p50 is 50 ms, p95 and p99 fall
        // among the 10 never delivered.
        let mut d: Vec<f64> = (1..=90).map(f64::from).collect();
        d.reverse();
        let a = stream(100, &d);
        assert_eq!(a.app_delay_p50_ms, Some(50.0));
        assert_eq!(a.app_delay_p95_ms, None);
        assert_eq!(a.app_delay_p99_ms, None);
        assert_eq!((a.app_offered, a.app_delivered), (100, 90));
        assert_eq!(a.app_within_100ms, 0.9);
        // 1000-byte datagrams over 1 s: 800 and 720 kbit/s.
        assert_eq!((a.app_offered_kbps, a.app_delivered_kbps), (800.0, 720.0));
        assert!(a.text().contains("p95 ∞"), "{}", a.text());
    }

    #[test]
    fn shares_count_each_threshold_inclusively() {
        let a = stream(4, &[100.0, 150.0, 299.0, 301.0]);
        assert_eq!(
            (a.app_within_100ms, a.app_within_150ms, a.app_within_300ms),
            (0.25, 0.5, 0.75)
        );
        assert_eq!(a.app_delay_p95_ms, Some(301.0));
        assert_eq!(a.app_delay_p50_ms, Some(150.0));
        // Fewer offered than delivered (a late count): the delivered ones are the floor.
        let b = stream(2, &[5.0, 6.0, 7.0]);
        assert_eq!((b.app_offered, b.app_delay_p99_ms), (3, Some(7.0)));
        // Nothing at all: no quantile, no share.
        let c = stream(0, &[]);
        assert_eq!((c.app_delay_p50_ms, c.app_within_300ms), (None, 0.0));
    }

    #[test]
    fn a_paced_sender_creates_one_datagram_per_interval() {
        // 1000 bytes at 500 kbit/s: one every 16 ms; 62.5 intervals in a second.
        assert_eq!(paced_count(1.0, 500.0, 1000), 63);
        // 1000 bytes at 800 kbit/s: every 10 ms, exactly 100 in a second.
        assert_eq!(paced_count(1.0, 800.0, 1000), 100);
        assert_eq!(paced_count(0.0, 800.0, 1000), 0);
    }
}
