//! Delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation), per connection and per
//! transmitted segment.

use sprout_core::time::{Duration, Instant};

use crate::cc::RateSample;

/// Connection-level state of the rate estimator ("C." in the draft).
#[derive(Clone, Debug, Default)]
pub(crate) struct RateEstimator {
    /// Bytes delivered so far (bytes).
    pub delivered: u64,
    /// When `delivered` last changed.
    delivered_time: Instant,
    /// Send time of the most recently sent segment whose delivery has been sampled.
    first_sent_time: Instant,
    /// Application-limited marker: `delivered + in flight` when the sender last ran out of data,
    /// 0 when not application-limited.
    app_limited_until: u64,
    /// Sample being built for the current ACK.
    building: Option<Building>,
}

/// Per-segment state recorded at (re)transmission ("P." in the draft).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TxState {
    delivered: u64,
    delivered_time: Instant,
    first_sent_time: Instant,
    is_app_limited: bool,
    sent: Instant,
}

#[derive(Clone, Copy, Debug)]
struct Building {
    prior_delivered: u64,
    is_app_limited: bool,
    send_elapsed: Duration,
    ack_elapsed: Duration,
}

impl RateEstimator {
    /// Called when a segment is (re)transmitted at `now`; `nothing_in_flight` when no data was
    /// outstanding just before.
    pub(crate) fn on_send(&mut self, now: Instant, nothing_in_flight: bool) -> TxState {
        if nothing_in_flight {
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        TxState {
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            is_app_limited: self.app_limited_until != 0,
            sent: now,
        }
    }

    /// A segment of `len` bytes sent with state `tx` was acknowledged at `now`.
    pub(crate) fn on_segment_delivered(&mut self, now: Instant, len: u64, tx: &TxState) {
        self.delivered += len;
        self.delivered_time = now;
        // The draft's "P.delivered > rs.prior_delivered" (>= here, so that of segments sent at the
        // same delivered count the later one wins): the sample
        // follows the most recently sent segment this ACK covers.
        let newer = self
            .building
            .is_none_or(|b| tx.delivered >= b.prior_delivered);
        if newer {
            self.building = Some(Building {
                prior_delivered: tx.delivered,
                is_app_limited: tx.is_app_limited,
                send_elapsed: tx.sent - tx.first_sent_time,
                ack_elapsed: now - tx.delivered_time,
            });
            self.first_sent_time = tx.sent;
        }
    }

    /// Finishes the sample for this ACK. `min_rtt` guards against intervals shorter than the
    /// minimum RTT (as Linux does).
    pub(crate) fn generate(&mut self, min_rtt: Option<Duration>) -> Option<RateSample> {
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let b = self.building.take()?;
        let interval = b.send_elapsed.max(b.ack_elapsed);
        if interval.is_zero() || min_rtt.is_some_and(|m| interval < m) {
            return None;
        }
        let delivered = self.delivered - b.prior_delivered;
        Some(RateSample {
            delivery_rate_bytes_per_s: delivered as f64 * 1e6 / interval.as_micros() as f64,
            delivered_bytes: delivered,
            interval,
            prior_delivered_bytes: b.prior_delivered,
            is_app_limited: b.is_app_limited,
        })
    }

    /// The sender has nothing (more) to send: mark the samples until everything now in flight is
    /// delivered as application-limited.
    pub(crate) fn mark_app_limited(&mut self, in_flight: u64) {
        self.app_limited_until = (self.delivered + in_flight).max(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_flow_measures_its_rate() {
        // One 1000-byte segment sent every ms, each acknowledged 50 ms later: 1 MB/s.
        let mut r = RateEstimator::default();
        let mut txs = std::collections::VecDeque::new();
        let mut last = None;
        for ms in 0..200u64 {
            let now = Instant::from_millis(ms);
            if ms >= 50 {
                let tx = txs.pop_front().unwrap();
                r.on_segment_delivered(now, 1000, &tx);
                last = r.generate(Some(Duration::from_millis(50)));
            }
            let empty = txs.is_empty() && ms < 50 && ms == 0;
            txs.push_back(r.on_send(now, empty));
        }
        let s = last.expect("a sample");
        assert!((s.delivery_rate_bytes_per_s - 1e6).abs() < 0.03e6, "{s:?}");
        assert!(!s.is_app_limited);
        r.mark_app_limited(10_000);
        let tx = r.on_send(Instant::from_millis(200), false);
        assert!(tx.is_app_limited);
    }
}
