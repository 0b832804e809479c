//! The GCC sender's controller: transport-wide feedback in, target rate out. The target is
//! the lower of the delay-based estimate (arrival filter, over-use detector, AIMD, start-up
//! probes) and the loss-based estimate (draft-ietf-rmcat-gcc-02 section 6: `min(A_r, A_s)`).

use std::collections::{HashMap, VecDeque};

use sprout_core::time::{Duration, Instant};

use crate::arrival_filter::{InterArrival, KalmanFilter};
use crate::feedback::{Feedback, SendHistory, SentPacket};
use crate::loss_control::LossControl;
use crate::overuse::{BandwidthUsage, OveruseDetector};
use crate::probe::{ProbeCluster, ProbeController, ProbeEstimator};
use crate::rate_control::AimdRateControl;
use crate::trendline::TrendlineEstimator;

/// Which estimator of the queueing-delay gradient the controller runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Estimator {
    /// libwebrtc's trendline ([`crate::trendline`]). Default.
    Trendline,
    /// The draft's Kalman filter ([`crate::arrival_filter::KalmanFilter`]).
    Kalman,
}

/// The controller's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct GccConfig {
    /// The rate at start, bit/s (libwebrtc's 300 kbit/s).
    pub start_bps: f64,
    /// The lowest target, bit/s.
    pub min_bps: f64,
    /// The highest target, bit/s.
    pub max_bps: f64,
    /// The window the received rate is measured over (the draft's 0.5-1 s: 500 ms).
    pub received_window: Duration,
    /// Whether to probe at start-up ([`crate::probe`]).
    pub probing: bool,
    /// The size of a probe's padding packets, bytes.
    pub probe_packet_bytes: u32,
    /// The delay-gradient estimator.
    pub estimator: Estimator,
}

impl Default for GccConfig {
    fn default() -> Self {
        GccConfig {
            start_bps: 300e3,
            min_bps: 30e3,
            max_bps: 20e6,
            received_window: Duration::from_millis(500),
            probing: true,
            probe_packet_bytes: 1200,
            estimator: Estimator::Trendline,
        }
    }
}

/// The smoothing of the round-trip time, weight of a new sample.
const RTT_WEIGHT: f64 = 0.125;

/// Google Congestion Control at the sender, sans-IO.
#[derive(Clone, Debug)]
pub struct GccController {
    cfg: GccConfig,
    history: SendHistory,
    inter_arrival: InterArrival,
    filter: KalmanFilter,
    trendline: TrendlineEstimator,
    detector: OveruseDetector,
    aimd: AimdRateControl,
    loss: LossControl,
    probes: ProbeController,
    probe_estimator: ProbeEstimator,
    /// Packets of each probe cluster sent.
    probe_sizes: HashMap<u32, u32>,
    /// (arrival time, bytes) of packets in the received-rate window.
    acked: VecDeque<(Instant, u32)>,
    acked_bytes: u64,
    first_arrival: Option<Instant>,
    rtt_ms: Option<f64>,
    usage: BandwidthUsage,
    overuses: u64,
}

impl GccController {
    /// A controller with these settings, at its start rate.
    pub fn new(cfg: GccConfig) -> GccController {
        let mut probes = ProbeController::new(cfg.start_bps, cfg.max_bps, cfg.probe_packet_bytes);
        if !cfg.probing {
            probes.stop();
        }
        GccController {
            history: SendHistory::new(),
            inter_arrival: InterArrival::new(),
            filter: KalmanFilter::new(),
            trendline: TrendlineEstimator::new(),
            detector: OveruseDetector::new(),
            aimd: AimdRateControl::new(cfg.start_bps, cfg.min_bps, cfg.max_bps),
            loss: LossControl::new(cfg.start_bps, cfg.min_bps, cfg.max_bps),
            probes,
            probe_estimator: ProbeEstimator::new(),
            probe_sizes: HashMap::new(),
            acked: VecDeque::new(),
            acked_bytes: 0,
            first_arrival: None,
            rtt_ms: None,
            usage: BandwidthUsage::Normal,
            overuses: 0,
            cfg,
        }
    }

    /// The target sending rate, bit/s: `min(delay-based, loss-based)`.
    pub fn target_bps(&self) -> f64 {
        self.aimd.estimate_bps().min(self.loss.estimate_bps())
    }

    /// The delay-based estimate `A_r`, bit/s.
    pub fn delay_based_bps(&self) -> f64 {
        self.aimd.estimate_bps()
    }

    /// The loss-based estimate `A_s`, bit/s.
    pub fn loss_based_bps(&self) -> f64 {
        self.loss.estimate_bps()
    }

    /// The smoothed round-trip time, ms, once measured.
    pub fn rtt_ms(&self) -> Option<f64> {
        self.rtt_ms
    }

    /// The detector's last signal.
    pub fn usage(&self) -> BandwidthUsage {
        self.usage
    }

    /// Over-uses signalled so far.
    pub fn overuses(&self) -> u64 {
        self.overuses
    }

    /// The rate at which reported packets arrived over the last window, bit/s, once a whole
    /// window has been seen.
    pub fn received_bps(&self) -> Option<f64> {
        let last = self.acked.back()?.0;
        let first = self.first_arrival?;
        let window = self.cfg.received_window;
        (last.saturating_duration_since(first) >= window)
            .then(|| self.acked_bytes as f64 * 8.0 * 1e6 / window.as_micros() as f64)
    }

    /// The next probe cluster to pace out, if any.
    pub fn poll_probe(&mut self) -> Option<ProbeCluster> {
        let c = self.probes.poll()?;
        self.probe_sizes.insert(c.id, c.packets);
        Some(c)
    }

    /// Records a packet just sent.
    pub fn on_packet_sent(&mut self, packet: SentPacket) {
        self.history.on_sent(packet);
    }

    /// Takes one feedback received at `now` and updates the estimates.
    pub fn on_feedback(&mut self, now: Instant, feedback: &Feedback) {
        let results = self.history.resolve(feedback);
        let expected = results.len() as u64;
        let lost = results.iter().filter(|r| r.arrival.is_none()).count() as u64;
        let mut overused = false;
        let mut probe_result = None;
        let mut last_received = None;
        for r in &results {
            let Some(arrival) = r.arrival else {
                continue;
            };
            last_received = Some((r.sent.send_time, arrival));
            self.note_arrival(arrival, r.sent.bytes);
            if let Some(&n) = r.sent.probe.and_then(|id| self.probe_sizes.get(&id)) {
                if let Some(res) = self.probe_estimator.on_result(r, n) {
                    probe_result = Some(res);
                }
            }
            if let Some(delta) = self.inter_arrival.add(r.sent.send_time, arrival) {
                let gradient = match self.cfg.estimator {
                    Estimator::Trendline => self.trendline.update(&delta, arrival),
                    Estimator::Kalman => {
                        self.filter.update(&delta);
                        self.filter.scaled()
                    }
                };
                let usage = self.detector.detect(gradient, delta.send_delta_ms, arrival);
                overused |= usage == BandwidthUsage::Overusing;
            }
        }
        if let Some((send, arrival)) = last_received {
            let sample = (now.saturating_duration_since(send).as_micros() as f64
                - feedback.sent.saturating_duration_since(arrival).as_micros() as f64)
                .max(0.0)
                / 1e3;
            self.rtt_ms = Some(
                self.rtt_ms
                    .map_or(sample, |r| (1.0 - RTT_WEIGHT) * r + RTT_WEIGHT * sample),
            );
        }
        self.usage = if overused {
            self.overuses += 1;
            self.probes.stop();
            BandwidthUsage::Overusing
        } else {
            self.detector.state()
        };
        if let Some((id, rate)) = probe_result {
            self.probes.on_result(id, rate);
            if !overused && rate > self.aimd.estimate_bps() {
                self.aimd.set_estimate(rate, now);
            }
        }
        let received = self.received_bps();
        let rtt = self.rtt_ms.unwrap_or(100.0);
        let delay_bps = self.aimd.update(self.usage, received, rtt, now);
        self.loss.on_feedback(now, expected, lost, delay_bps);
    }

    /// Adds one arrival to the received-rate window and drops what fell out of it.
    fn note_arrival(&mut self, arrival: Instant, bytes: u32) {
        self.first_arrival.get_or_insert(arrival);
        self.acked.push_back((arrival, bytes));
        self.acked_bytes += u64::from(bytes);
        let start = arrival - self.cfg.received_window;
        while let Some(&(t, b)) = self.acked.front() {
            if t > start {
                break;
            }
            self.acked.pop_front();
            self.acked_bytes -= u64::from(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends 1200-byte packets at the target rate for `secs` through a FIFO bottleneck of
    /// `capacity_bps` (one-way delay 20 ms), losing every `loss_every`-th packet, feeding
    /// back every 50 ms; returns the controller.
    fn run(capacity_bps: f64, secs: f64, loss_every: Option<u64>) -> GccController {
        run_with(capacity_bps, secs, loss_every, Estimator::Trendline)
    }

    fn run_with(
        capacity_bps: f64,
        secs: f64,
        loss_every: Option<u64>,
        estimator: Estimator,
    ) -> GccController {
        let mut c = GccController::new(GccConfig {
            probing: false,
            estimator,
            ..GccConfig::default()
        });
        // (seq, arrival µs, lost) of packets on their way, in order.
        let mut flight: VecDeque<(u64, u64, bool)> = VecDeque::new();
        let mut pending: VecDeque<Feedback> = VecDeque::new();
        let (mut now, mut next_send, mut link_free, mut next_fb) = (0u64, 0u64, 0u64, 50_000u64);
        let (mut seq, mut next_report) = (0u64, 0u64);
        while now < (secs * 1e6) as u64 {
            if now >= next_send {
                c.on_packet_sent(SentPacket {
                    seq,
                    send_time: Instant::from_micros(now),
                    bytes: 1200,
                    probe: None,
                });
                let service = (1200.0 * 8.0 / capacity_bps * 1e6) as u64;
                link_free = link_free.max(now) + service;
                let lost = loss_every.is_some_and(|k| seq % k == k - 1);
                flight.push_back((seq, link_free + 20_000, lost));
                seq += 1;
                next_send = now + (1200.0 * 8.0 / c.target_bps() * 1e6) as u64;
            }
            if now >= next_fb {
                let mut arrivals = Vec::new();
                let mut last = None;
                while flight.front().is_some_and(|p| p.1 <= now) {
                    let (s, a, lost) = flight.pop_front().unwrap();
                    last = Some(s);
                    if !lost {
                        arrivals.push((s, Instant::from_micros(a)));
                    }
                }
                if let Some(last_seq) = last {
                    pending.push_back(Feedback {
                        sent: Instant::from_micros(now),
                        first_seq: next_report,
                        last_seq,
                        arrivals,
                    });
                    next_report = last_seq + 1;
                }
                next_fb += 50_000;
            }
            while pending
                .front()
                .is_some_and(|f| f.sent.as_micros() + 20_000 <= now)
            {
                let f = pending.pop_front().unwrap();
                c.on_feedback(Instant::from_micros(now), &f);
            }
            now += 500;
        }
        c
    }

    #[test]
    fn converges_under_a_2_mbit_bottleneck() {
        let c = run(2e6, 40.0, None);
        let t = c.target_bps();
        assert!(t > 1.4e6 && t < 2.6e6, "{t}");
        assert!(c.overuses() > 0);
    }

    #[test]
    fn the_kalman_filter_also_converges() {
        let c = run_with(2e6, 40.0, None, Estimator::Kalman);
        let t = c.target_bps();
        assert!(t > 1.2e6 && t < 3.0e6, "{t}");
    }

    #[test]
    fn heavy_loss_lowers_the_loss_based_estimate() {
        // Every 5th packet lost (20%) under a 2 Mbit/s bottleneck.
        let c = run(2e6, 20.0, Some(5));
        assert!(
            c.loss_based_bps() < 0.5 * c.delay_based_bps().max(300e3),
            "{c:?}"
        );
        assert!(c.target_bps() < 300e3);
    }
}
