//! The arrival-time filter (draft-ietf-rmcat-gcc-02 section 5.2-5.3): packets sent within
//! [`BURST`] of a group's first packet form one group; for consecutive groups the
//! inter-group delay variation `d = (t_i - t_{i-1}) - (T_i - T_{i-1})` (arrival and send times
//! of each group's last packet) is filtered by the draft's scalar Kalman filter into `m`, the
//! estimated queueing-delay gradient per group, in ms.
//!
//! The Kalman filter is the draft's estimator, kept as [`crate::controller::Estimator::Kalman`];
//! the controller's default is libwebrtc's trendline ([`crate::trendline`], which says why). As
//! libwebrtc's Kalman-era detector did, the estimate meets the threshold scaled by the number
//! of deltas seen (at most [`MAX_DELTAS`]) — see [`KalmanFilter::scaled`].

use sprout_core::time::{Duration, Instant};

/// A group spans at most this much send time (the draft's `burst_time`, 5 ms).
pub const BURST: Duration = Duration::from_millis(5);

/// A packet that arrives within this of the previous one, with a negative delay variation, is
/// part of the same burst (5 ms), as long as the burst lasts under [`MAX_BURST`].
pub const BURST_ARRIVAL: Duration = Duration::from_millis(5);

/// The longest a burst of packets joined by arrival may last (100 ms, libwebrtc).
pub const MAX_BURST: Duration = Duration::from_millis(100);

/// The most deltas the filter's output is scaled by (libwebrtc's `kMinNumDeltas`, 60).
pub const MAX_DELTAS: u32 = 60;

/// The Kalman filter's process noise `q`, ms² (the draft's 10^-3).
pub const PROCESS_NOISE: f64 = 1e-3;

/// The noise-variance forgetting factor `chi` of the draft (0.01, in its range 0.001..0.1).
pub const CHI: f64 = 0.01;

/// One group of packets: send and arrival times of its first and last packets.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Group {
    first_send: Instant,
    last_send: Instant,
    first_arrival: Instant,
    last_arrival: Instant,
}

/// The delay variation between two consecutive groups.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GroupDelta {
    /// Send-time difference of the groups' last packets, ms.
    pub send_delta_ms: f64,
    /// Arrival-time difference of the groups' last packets, ms.
    pub arrival_delta_ms: f64,
    /// Inter-group delay variation `d = arrival delta - send delta`, ms.
    pub delay_variation_ms: f64,
}

/// Groups packets into bursts and gives the delay variation of each completed group.
#[derive(Clone, Debug, Default)]
pub struct InterArrival {
    current: Option<Group>,
    previous: Option<Group>,
}

impl InterArrival {
    /// A grouping with no packet yet.
    pub fn new() -> InterArrival {
        InterArrival::default()
    }

    /// Takes one received packet (in send order: send and arrival times); returns the
    /// delta between the two groups before it when this packet starts a new group. A packet
    /// sent before the current group's first (reordered) is ignored.
    pub fn add(&mut self, send: Instant, arrival: Instant) -> Option<GroupDelta> {
        let Some(cur) = self.current.as_mut() else {
            self.current = Some(Group {
                first_send: send,
                last_send: send,
                first_arrival: arrival,
                last_arrival: arrival,
            });
            return None;
        };
        if send < cur.first_send {
            return None;
        }
        let in_send_burst = send - cur.first_send <= BURST;
        if in_send_burst || Self::in_arrival_burst(cur, send, arrival) {
            cur.last_send = cur.last_send.max(send);
            cur.last_arrival = cur.last_arrival.max(arrival);
            return None;
        }
        let done = *cur;
        let delta = self.previous.map(|prev| {
            let ms = |a: Instant, b: Instant| (a.as_micros() as f64 - b.as_micros() as f64) / 1e3;
            let send_delta_ms = ms(done.last_send, prev.last_send);
            let arrival_delta_ms = ms(done.last_arrival, prev.last_arrival);
            GroupDelta {
                send_delta_ms,
                arrival_delta_ms,
                delay_variation_ms: arrival_delta_ms - send_delta_ms,
            }
        });
        self.previous = Some(done);
        self.current = Some(Group {
            first_send: send,
            last_send: send,
            first_arrival: arrival,
            last_arrival: arrival,
        });
        delta
    }

    /// Whether a packet arriving close behind the group, with a negative delay variation
    /// against its last packet, belongs to the group's burst (a burst released at once by the
    /// network, the draft's section 5.2).
    fn in_arrival_burst(cur: &Group, send: Instant, arrival: Instant) -> bool {
        // Signed: a reordered packet's send delta is negative.
        let signed = |a: Instant, b: Instant| a.as_micros() as i64 - b.as_micros() as i64;
        let arrival_delta = signed(arrival, cur.last_arrival);
        let send_delta = signed(send, cur.last_send);
        arrival_delta >= 0
            && (arrival_delta as u64) <= BURST_ARRIVAL.as_micros()
            && arrival_delta - send_delta < 0
            && arrival - cur.first_arrival < MAX_BURST
    }
}

/// The draft's scalar Kalman filter of the queueing-delay gradient.
#[derive(Clone, Debug)]
pub struct KalmanFilter {
    /// Estimate `m_hat`, ms.
    estimate_ms: f64,
    /// Estimate variance `e`, ms².
    error: f64,
    /// Measurement-noise variance `var_v_hat`, ms².
    noise_var: f64,
    /// Send deltas of the last 5 groups, ms (for the highest group rate `f_max`).
    recent_send_deltas_ms: [f64; 5],
    /// Deltas filtered so far.
    deltas: u32,
}

impl Default for KalmanFilter {
    fn default() -> Self {
        KalmanFilter {
            estimate_ms: 0.0,
            error: 0.1,
            noise_var: 50.0,
            recent_send_deltas_ms: [f64::INFINITY; 5],
            deltas: 0,
        }
    }
}

impl KalmanFilter {
    /// A filter at rest: estimate 0, variance 0.1 ms², noise variance 50 ms².
    pub fn new() -> KalmanFilter {
        KalmanFilter::default()
    }

    /// Filters one group delta; returns the new estimate `m`, ms.
    pub fn update(&mut self, delta: &GroupDelta) -> f64 {
        self.recent_send_deltas_ms.rotate_right(1);
        self.recent_send_deltas_ms[0] = delta.send_delta_ms.max(0.0);
        self.deltas = self.deltas.saturating_add(1);
        // f_max: the highest group rate among the last 5 groups, Hz.
        let min_delta_s = self
            .recent_send_deltas_ms
            .iter()
            .fold(f64::INFINITY, |a, &b| a.min(b))
            .max(1.0)
            / 1e3;
        let f_max = 1.0 / min_delta_s;
        let alpha = (1.0 - CHI).powf(30.0 / (1000.0 * f_max));
        let z = delta.delay_variation_ms - self.estimate_ms;
        // An outlier updates the noise variance as if it were 3 standard deviations.
        let bound = 3.0 * self.noise_var.sqrt();
        let z_noise = z.clamp(-bound, bound);
        self.noise_var = (alpha * self.noise_var + (1.0 - alpha) * z_noise * z_noise).max(1.0);
        let predicted = self.error + PROCESS_NOISE;
        let gain = predicted / (self.noise_var + predicted);
        self.estimate_ms += gain * z;
        self.error = (1.0 - gain) * predicted;
        self.estimate_ms
    }

    /// The estimate `m`, ms.
    pub fn estimate_ms(&self) -> f64 {
        self.estimate_ms
    }

    /// The estimate scaled for the overuse detector, ms: `m` times the deltas seen so far, at
    /// most [`MAX_DELTAS`] (libwebrtc's Kalman-era detector: the draft's `m` per group is a
    /// fraction of a millisecond at a few percent of overload, far below the 6-600 ms
    /// threshold range, so the detector reads the accumulated gradient).
    pub fn scaled(&self) -> f64 {
        self.estimate_ms * f64::from(self.deltas.min(MAX_DELTAS))
    }

    /// Group deltas filtered so far.
    pub fn deltas(&self) -> u32 {
        self.deltas
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The instant `us` microseconds after the start.
    fn at(us: u64) -> Instant {
        Instant::from_micros(us)
    }

    #[test]
    fn packets_within_5ms_of_send_time_form_one_group() {
        let mut g = InterArrival::new();
        // Packets every 1 ms of send time: a group ends every 6 packets.
        let mut deltas = Vec::new();
        for i in 0..30u64 {
            if let Some(d) = g.add(at(i * 1_000), at(i * 1_000 + 20_000)) {
                deltas.push(d);
            }
        }
        assert_eq!(deltas.len(), 3);
        for d in deltas {
            assert!((d.send_delta_ms - 6.0).abs() < 1e-9, "{d:?}");
            assert!(d.delay_variation_ms.abs() < 1e-9);
        }
    }

    #[test]
    fn a_growing_queue_gives_a_positive_delay_variation_and_estimate() {
        let mut g = InterArrival::new();
        let mut k = KalmanFilter::new();
        // Sent every 10 ms, each arriving 1 ms later than the last: the queue grows 1 ms
        // per packet.
        for i in 0..300u64 {
            if let Some(d) = g.add(at(i * 10_000), at(i * 11_000 + 20_000)) {
                assert!((d.delay_variation_ms - 1.0).abs() < 1e-9);
                k.update(&d);
            }
        }
        assert!(k.estimate_ms() > 0.5, "{}", k.estimate_ms());
        assert!(k.scaled() > 30.0);
        // A steady queue: the estimate falls back toward 0.
        let mut k2 = KalmanFilter::new();
        let mut g2 = InterArrival::new();
        for i in 0..300u64 {
            if let Some(d) = g2.add(at(i * 10_000), at(i * 10_000 + 20_000)) {
                k2.update(&d);
            }
        }
        assert!(k2.estimate_ms().abs() < 1e-9);
    }

    #[test]
    fn a_burst_released_at_once_joins_the_group() {
        let mut g = InterArrival::new();
        // Sent 10 ms apart, held by the network and released 1 ms apart: one burst.
        assert!(g.add(at(0), at(100_000)).is_none());
        assert!(g.add(at(10_000), at(101_000)).is_none());
        assert!(g.add(at(20_000), at(102_000)).is_none());
        // A later packet arriving in step with its sending starts a new group; the next new
        // group gives the delta.
        assert!(g.add(at(60_000), at(142_000)).is_none());
        let d = g.add(at(100_000), at(182_000)).unwrap();
        assert!((d.send_delta_ms - 40.0).abs() < 1e-9, "{d:?}");
        assert!((d.arrival_delta_ms - 40.0).abs() < 1e-9, "{d:?}");
    }

    #[test]
    fn an_outlier_moves_the_noise_variance_by_at_most_three_deviations() {
        let mut k = KalmanFilter::new();
        let before = k.noise_var;
        k.update(&GroupDelta {
            send_delta_ms: 5.0,
            arrival_delta_ms: 1005.0,
            delay_variation_ms: 1000.0,
        });
        assert!(k.noise_var <= before.max(9.0 * before) + 1e-9);
        assert!(k.noise_var < 1000.0);
    }
}
