//! CUBIC (RFC 9438), as Linux runs it.
//!
//! - Window growth `W_cubic(t) = C (t - K)^3 + W_max` (segments, t in seconds since the start of
//!   the congestion-avoidance epoch), `K = cbrt((W_max - cwnd_epoch) / C)`, which right after a
//!   reduction to `beta * W_max` is `cbrt(W_max (1 - beta) / C)`.
//! - Per ACK the window moves towards `target = W_cubic(t + RTT)` (clamped to
//!   `[cwnd, 1.5 cwnd]`) by `(target - cwnd) / cwnd` segments per segment acknowledged; the RTT
//!   used is the minimum RTT, as Linux does (`delay_min`).
//! - Reno-friendly region: `W_est` grows by `alpha_cubic = 3 (1 - beta) / (1 + beta)` segments per
//!   window (1 once `W_est >= cwnd_prior`); when `W_cubic(t) < W_est`, cwnd = `W_est`.
//! - Fast convergence: if a loss happens below the previous `W_max`, `W_max = cwnd (1 + beta)/2`.
//! - Multiplicative decrease: `ssthresh = cwnd = max(beta * cwnd, 2 SMSS)`; RTO: cwnd = 1 SMSS.
//!
//! HyStart (Linux's delay-based slow-start exit) is **omitted**: slow start is standard
//! RFC 5681/3465 slow start, ending at the first loss.

use std::any::Any;

use sprout_core::time::{Duration, Instant};

use super::reno::ABC_LIMIT_SEGMENTS;
use super::{AckEvent, CcConfig, CcKind, CongestionControl};

/// CUBIC's scaling constant C (segments / s^3).
pub const C: f64 = 0.4;
/// CUBIC's multiplicative-decrease factor beta_cubic.
pub const BETA: f64 = 0.7;

/// The CUBIC controller. Windows are kept in bytes as `f64`; the formulas work in segments.
#[derive(Clone, Debug)]
pub struct Cubic {
    mss: f64,
    max_cwnd: f64,
    cwnd: f64,
    ssthresh: f64,
    /// Window before the last reduction, after fast convergence (bytes); 0 before any loss.
    w_max: f64,
    /// cwnd just before the last reduction (bytes): RFC 9438's `cwnd_prior`.
    cwnd_prior: f64,
    /// Start of the current congestion-avoidance epoch (µs).
    epoch_start_us: Option<u64>,
    /// cwnd at the epoch start (bytes).
    cwnd_epoch: f64,
    /// Plateau of the cubic function for this epoch: max(W_max, cwnd_epoch) (bytes).
    origin: f64,
    /// K for this epoch (s).
    k_s: f64,
    /// Reno-friendly estimate (bytes).
    w_est: f64,
    /// Minimum RTT seen (µs).
    min_rtt_us: Option<u64>,
}

impl Cubic {
    /// A CUBIC controller starting with `cfg.initial_cwnd_bytes` in slow start.
    pub fn new(cfg: &CcConfig) -> Self {
        let mss = cfg.mss as f64;
        Cubic {
            mss,
            max_cwnd: cfg.max_cwnd_bytes as f64,
            cwnd: (cfg.initial_cwnd_bytes as f64).clamp(mss, cfg.max_cwnd_bytes as f64),
            ssthresh: f64::INFINITY,
            w_max: 0.0,
            cwnd_prior: 0.0,
            epoch_start_us: None,
            cwnd_epoch: 0.0,
            origin: 0.0,
            k_s: 0.0,
            w_est: 0.0,
            min_rtt_us: None,
        }
    }

    /// `W_max` after the last congestion event, fast convergence applied (bytes).
    pub fn w_max_bytes(&self) -> f64 {
        self.w_max
    }

    /// K of the current epoch (s).
    pub fn k_s(&self) -> f64 {
        self.k_s
    }

    /// Start of the current congestion-avoidance epoch; `None` in slow start, in recovery
    /// and before the first congestion-avoidance ACK after a reduction.
    pub fn epoch_start(&self) -> Option<Instant> {
        self.epoch_start_us.map(Instant::from_micros)
    }

    /// `W_cubic(t)` of the current epoch (bytes), `t` in seconds since the epoch start.
    pub fn w_cubic_bytes(&self, t_s: f64) -> f64 {
        let d = t_s - self.k_s;
        (C * d * d * d) * self.mss + self.origin
    }

    fn start_epoch(&mut self, now_us: u64) {
        self.epoch_start_us = Some(now_us);
        self.cwnd_epoch = self.cwnd;
        if self.w_max > self.cwnd {
            self.k_s = ((self.w_max - self.cwnd) / self.mss / C).cbrt();
            self.origin = self.w_max;
        } else {
            self.k_s = 0.0;
            self.origin = self.cwnd;
        }
        self.w_est = self.cwnd;
    }

    fn congestion_avoidance(&mut self, now_us: u64, acked: f64) {
        if self.epoch_start_us.is_none() {
            self.start_epoch(now_us);
        }
        let epoch = self.epoch_start_us.unwrap_or(now_us);
        let t = now_us.saturating_sub(epoch) as f64 * 1e-6;
        let rtt = self.min_rtt_us.unwrap_or(0) as f64 * 1e-6;
        let target = self
            .w_cubic_bytes(t + rtt)
            .clamp(self.cwnd, 1.5 * self.cwnd);

        // Reno-friendly estimate (RFC 9438 §4.3).
        let alpha = if self.w_est >= self.cwnd_prior {
            1.0
        } else {
            3.0 * (1.0 - BETA) / (1.0 + BETA)
        };
        self.w_est += alpha * acked * self.mss / self.cwnd;

        if self.w_cubic_bytes(t) < self.w_est {
            self.cwnd = self.cwnd.max(self.w_est);
        } else {
            // Concave and convex regions (RFC 9438 §4.4, §4.5).
            self.cwnd += (target - self.cwnd) * acked / self.cwnd;
        }
        self.cwnd = self.cwnd.min(self.max_cwnd);
    }

    fn reduce(&mut self) {
        self.epoch_start_us = None;
        // Fast convergence (RFC 9438 §4.7).
        self.w_max = if self.cwnd < self.w_max {
            self.cwnd * (1.0 + BETA) / 2.0
        } else {
            self.cwnd
        };
        self.cwnd_prior = self.cwnd;
    }
}

impl CongestionControl for Cubic {
    fn kind(&self) -> CcKind {
        CcKind::Cubic
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        if let Some(r) = ack.rtt.map(Duration::as_micros) {
            self.min_rtt_us = Some(self.min_rtt_us.map_or(r, |m| m.min(r)));
        }
        if ack.in_recovery || !ack.cwnd_limited {
            return;
        }
        let mut acked = ack.acked_bytes as f64;
        if self.cwnd < self.ssthresh {
            let inc = acked.min(ABC_LIMIT_SEGMENTS as f64 * self.mss);
            let used = inc.min(self.ssthresh - self.cwnd);
            self.cwnd = (self.cwnd + used).min(self.max_cwnd);
            acked = (acked - used).max(0.0);
            if self.cwnd < self.ssthresh || acked <= 0.0 {
                return;
            }
        }
        self.congestion_avoidance(ack.now.as_micros(), acked);
    }

    fn on_congestion_event(&mut self, _now: Instant, _in_flight_bytes: u64) {
        self.reduce();
        // Linux and RFC 9438 §4.6 (cwnd-based variant): ssthresh = cwnd * beta_cubic.
        self.ssthresh = (self.cwnd * BETA).max(2.0 * self.mss);
        self.cwnd = self.ssthresh;
    }

    fn on_retransmission_timeout(
        &mut self,
        _now: Instant,
        _in_flight_bytes: u64,
        same_episode: bool,
    ) {
        if !same_episode {
            self.reduce();
            self.ssthresh = (self.cwnd * BETA).max(2.0 * self.mss);
        }
        // RFC 9438 §4.8 (and Linux's reset on entering loss): the first congestion-avoidance
        // stage after a timeout uses K = 0 and W_max = the window at its start.
        self.w_max = 0.0;
        self.epoch_start_us = None;
        self.cwnd = self.mss;
    }

    fn cwnd_bytes(&self) -> u64 {
        self.cwnd as u64
    }

    fn ssthresh_bytes(&self) -> u64 {
        if self.ssthresh.is_finite() {
            self.ssthresh as u64
        } else {
            u64::MAX
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::reno::tests::{ack, cfg};

    #[test]
    fn reduction_and_cubic_growth() {
        let mut c = Cubic::new(&cfg());
        // Slow start to 100 segments.
        while c.cwnd_bytes() < 100_000 {
            c.on_ack(&ack(Instant::ZERO, 1000));
        }
        c.on_congestion_event(Instant::ZERO, 100_000);
        assert_eq!(c.cwnd_bytes(), 70_000);
        assert_eq!(c.w_max_bytes(), 100_000.0);
        // One ACK starts the epoch: K = cbrt(100 * 0.3 / 0.4).
        c.on_ack(&AckEvent {
            rtt: None,
            ..ack(Instant::from_micros(1_000_000), 1000)
        });
        let k = (100.0f64 * 0.3 / 0.4).cbrt();
        assert!((c.k_s() - k).abs() < 1e-9);
        // Feed ACKs at the rate of cwnd per 100 ms RTT for K seconds: cwnd ends near W_max.
        let mut now = 1_000_000u64;
        while (now - 1_000_000) as f64 * 1e-6 < k - 0.1 {
            let per_ack = 100_000 * 1000 / c.cwnd_bytes().max(1);
            now += per_ack;
            c.on_ack(&ack(Instant::from_micros(now), 1000));
        }
        let w = c.cwnd_bytes() as f64 / 1000.0;
        assert!(
            (w - 100.0).abs() < 3.0,
            "cwnd {w} segments near W_max at t = K"
        );
    }

    #[test]
    fn fast_convergence_and_timeout() {
        let mut c = Cubic::new(&cfg());
        while c.cwnd_bytes() < 100_000 {
            c.on_ack(&ack(Instant::ZERO, 1000));
        }
        c.on_congestion_event(Instant::ZERO, 100_000);
        // A second loss at 70 segments, below W_max = 100: W_max = 70 * (1 + 0.7) / 2.
        c.on_congestion_event(Instant::ZERO, 70_000);
        assert!((c.w_max_bytes() - 59_500.0).abs() < 1e-6);
        assert_eq!(c.cwnd_bytes(), 49_000);
        c.on_retransmission_timeout(Instant::ZERO, 49_000, false);
        assert_eq!(c.cwnd_bytes(), 1000);
        assert_eq!(c.ssthresh_bytes(), 34_300);
    }
}
