//! Delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation), per connection and per
//! transmitted segment.

use crate::cc::RateSample;

/// Connection-level state of the rate estimator ("C." in the draft).
#[derive(Clone, Debug, Default)]
pub(crate) struct RateEstimator {
    /// Bytes delivered so far (bytes).
    pub delivered: u64,
    /// When `delivered` last changed (µs).
    delivered_time_us: u64,
    /// Send time of the most recently sent segment whose delivery has been sampled (µs).
    first_sent_time_us: u64,
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
    delivered_time_us: u64,
    first_sent_time_us: u64,
    is_app_limited: bool,
    sent_us: u64,
}

#[derive(Clone, Copy, Debug)]
struct Building {
    prior_delivered: u64,
    is_app_limited: bool,
    send_elapsed_us: u64,
    ack_elapsed_us: u64,
}

impl RateEstimator {
    /// Called when a segment is (re)transmitted at `now_us`; `nothing_in_flight` when no data was
    /// outstanding just before.
    pub fn on_send(&mut self, now_us: u64, nothing_in_flight: bool) -> TxState {
        if nothing_in_flight {
            self.first_sent_time_us = now_us;
            self.delivered_time_us = now_us;
        }
        TxState {
            delivered: self.delivered,
            delivered_time_us: self.delivered_time_us,
            first_sent_time_us: self.first_sent_time_us,
            is_app_limited: self.app_limited_until != 0,
            sent_us: now_us,
        }
    }

    /// A segment of `len` bytes sent with state `tx` was acknowledged at `now_us`.
    pub fn on_segment_delivered(&mut self, now_us: u64, len: u64, tx: &TxState) {
        self.delivered += len;
        self.delivered_time_us = now_us;
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
                send_elapsed_us: tx.sent_us.saturating_sub(tx.first_sent_time_us),
                ack_elapsed_us: now_us.saturating_sub(tx.delivered_time_us),
            });
            self.first_sent_time_us = tx.sent_us;
        }
    }

    /// Finishes the sample for this ACK. `min_rtt_us` guards against intervals shorter than the
    /// minimum RTT (as Linux does).
    pub fn generate(&mut self, min_rtt_us: Option<u64>) -> Option<RateSample> {
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let b = self.building.take()?;
        let interval = b.send_elapsed_us.max(b.ack_elapsed_us);
        if interval == 0 || min_rtt_us.is_some_and(|m| interval < m) {
            return None;
        }
        let delivered = self.delivered - b.prior_delivered;
        Some(RateSample {
            delivery_rate_bytes_per_s: delivered as f64 * 1e6 / interval as f64,
            delivered_bytes: delivered,
            interval_us: interval,
            prior_delivered_bytes: b.prior_delivered,
            is_app_limited: b.is_app_limited,
        })
    }

    /// The sender has nothing (more) to send: mark the samples until everything now in flight is
    /// delivered as application-limited.
    pub fn mark_app_limited(&mut self, in_flight: u64) {
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
            let now = ms * 1000;
            if ms >= 50 {
                let tx = txs.pop_front().unwrap();
                r.on_segment_delivered(now, 1000, &tx);
                last = r.generate(Some(50_000));
            }
            let empty = txs.is_empty() && ms < 50 && ms == 0;
            txs.push_back(r.on_send(now, empty));
        }
        let s = last.expect("a sample");
        assert!((s.delivery_rate_bytes_per_s - 1e6).abs() < 0.03e6, "{s:?}");
        assert!(!s.is_app_limited);
        r.mark_app_limited(10_000);
        let tx = r.on_send(200_000, false);
        assert!(tx.is_app_limited);
    }
}
