//! Compound TCP (Tan, Song, Zhang, Sridharan, "A Compound TCP Approach for High-Speed and Long
//! Distance Networks", INFOCOM 2006; draft-sridharan-tcpm-ctcp-02).
//!
//! The sending window is `win = min(cwnd + dwnd, awnd)`, `awnd` the receive window: `cwnd` is a
//! Reno window (slow start, then `cwnd += 1/(cwnd + dwnd)` per segment acknowledged, i.e. one
//! segment per RTT), `dwnd` a delay-based window updated once per RTT (a round ends when the
//! cumulative ACK passes what was the next sequence number at its start) from the Vegas
//! estimate of the segments the flow has queued,
//! `Expected = win / baseRTT`, `Actual = win / RTT`,
//! `diff = (Expected - Actual) * baseRTT = win * (RTT - baseRTT) / RTT` (segments; `RTT` the
//! minimum sample of the round, `baseRTT` the minimum ever):
//! - `diff < gamma`: `dwnd += max(alpha * win^k - 1, 0)`;
//! - `diff >= gamma`: `dwnd = max(dwnd - zeta * diff, 0)`;
//! - on loss: `cwnd = cwnd / 2` and `dwnd = max(win * (1 - beta) - cwnd / 2, 0)`, so the total
//!   window halves.
//!
//! with `alpha = 1/8`, `k = 0.75`, `gamma = 30` packets, `zeta = 1`, `beta = 1/2`.
//! `dwnd` stays 0 in slow start and after a timeout until congestion avoidance. Like `cwnd`'s
//! growth, `dwnd`'s increase needs a cwnd-limited flow ([`AckEvent::cwnd_limited`]): a flow held
//! at `awnd` or by the send buffer grows neither; its decrease applies always. Omitted: the
//! Windows implementation's `low_wnd` threshold below which dwnd is disabled, and gamma
//! auto-tuning (gamma is fixed at 30 packets, the paper's value).
//!
//! Over a deep buffer that the loss-based `cwnd` alone fills, `diff` exceeds gamma every round
//! and `dwnd` stays 0: Compound then behaves exactly as Reno (the paper's design, "CTCP is as
//! aggressive as standard TCP when the network is congested").

use std::any::Any;

use sprout_core::time::{Duration, Instant};

use super::reno::RenoWindow;
use super::{AckEvent, CcConfig, CcKind, CongestionControl, RttRound};

/// alpha (segments^(1-k) per RTT).
pub const ALPHA: f64 = 0.125;
/// beta: multiplicative decrease of the total window.
pub const BETA: f64 = 0.5;
/// k: exponent of the binomial increase.
pub const K: f64 = 0.75;
/// gamma: queued segments above which dwnd backs off (packets).
pub const GAMMA: f64 = 30.0;
/// zeta: dwnd decrease per queued segment.
pub const ZETA: f64 = 1.0;

/// The Compound TCP controller.
#[derive(Clone, Debug)]
pub struct Compound {
    w: RenoWindow,
    /// Delay-based window (bytes).
    dwnd: f64,
    /// The receive window `awnd` (bytes).
    awnd: f64,
    round: RttRound,
    last_diff: Option<f64>,
}

impl Compound {
    /// A Compound controller starting with `cfg.initial_cwnd_bytes` in slow start, dwnd = 0.
    pub fn new(cfg: &CcConfig) -> Self {
        Compound {
            w: RenoWindow::new(cfg),
            dwnd: 0.0,
            awnd: cfg.receive_window_bytes as f64,
            round: RttRound::new(),
            last_diff: None,
        }
    }

    /// Delay-based window `dwnd` (bytes).
    pub fn dwnd_bytes(&self) -> u64 {
        self.dwnd as u64
    }

    /// Loss-based (Reno) window `cwnd` (bytes).
    pub fn loss_window_bytes(&self) -> u64 {
        self.w.cwnd
    }

    /// `diff` (segments queued) at the end of the last round, if computed.
    pub fn last_diff_segments(&self) -> Option<f64> {
        self.last_diff
    }

    /// baseRTT: minimum RTT seen.
    pub fn base_rtt(&self) -> Option<Duration> {
        (self.round.base_rtt != Duration::MAX).then_some(self.round.base_rtt)
    }

    /// `cwnd + dwnd` (bytes).
    fn sum_bytes(&self) -> f64 {
        self.w.cwnd as f64 + self.dwnd
    }

    /// `win = min(cwnd + dwnd, awnd)` (bytes).
    fn win_bytes(&self) -> f64 {
        self.sum_bytes().min(self.awnd)
    }

    /// The once-per-RTT update; `may_grow` is false when the flow is not cwnd-limited.
    fn update_dwnd(&mut self, may_grow: bool) {
        let mss = self.w.mss as f64;
        let win = self.win_bytes() / mss;
        let rtt = self.round.min_rtt.as_micros() as f64;
        let base = self.round.base_rtt.as_micros() as f64;
        // diff = (Expected - Actual) * baseRTT, Expected = win / baseRTT, Actual = win / RTT.
        let diff = (win / base - win / rtt) * base;
        self.last_diff = Some(diff);
        if diff < GAMMA {
            if may_grow {
                self.dwnd += (ALPHA * win.powf(K) - 1.0).max(0.0) * mss;
            }
        } else {
            self.dwnd = (self.dwnd - ZETA * diff * mss).max(0.0);
        }
        let room = (self.w.max_cwnd as f64 - self.w.cwnd as f64).max(0.0);
        self.dwnd = self.dwnd.min(room);
    }
}

impl CongestionControl for Compound {
    fn kind(&self) -> CcKind {
        CcKind::Compound
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        let round_end = self.round.on_ack(ack);
        if ack.in_recovery {
            return;
        }
        if ack.cwnd_limited {
            if self.w.in_slow_start() {
                self.w.slow_start(ack.acked_bytes);
            } else {
                let sum = self.sum_bytes() as u64;
                self.w.congestion_avoidance(ack.acked_bytes, sum);
            }
        }
        if round_end {
            if !self.w.in_slow_start() && self.round.samples > 2 {
                self.update_dwnd(ack.cwnd_limited);
            }
            self.round.reset(ack.snd_max);
        }
    }

    fn on_congestion_event(&mut self, _now: Instant, _in_flight_bytes: u64) {
        let win = self.win_bytes();
        let cwnd = self.w.cwnd as f64;
        self.w.reduce_to(self.w.cwnd / 2);
        self.dwnd = (win * (1.0 - BETA) - cwnd / 2.0).max(0.0);
        self.round.restart();
    }

    fn on_recovery_exit(&mut self, _now: Instant) {
        self.round.restart();
    }

    fn on_retransmission_timeout(
        &mut self,
        _now: Instant,
        in_flight_bytes: u64,
        same_episode: bool,
    ) {
        self.w.on_timeout(in_flight_bytes, same_episode);
        self.dwnd = 0.0;
        self.round.restart();
    }

    /// `cwnd + dwnd` (bytes). The sender applies `awnd` itself; the sum is not capped by it here
    /// so that the sender sees a flow held at `awnd` as not cwnd-limited.
    fn cwnd_bytes(&self) -> u64 {
        (self.sum_bytes() as u64).min(self.w.max_cwnd)
    }

    fn ssthresh_bytes(&self) -> u64 {
        self.w.ssthresh
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::reno::tests::{cfg, rounds};

    #[test]
    fn dwnd_grows_without_queue_shrinks_with_queue_and_loss_halves_win() {
        let mut c = Compound::new(&cfg());
        let mut seq = 0;
        rounds(&mut c, &mut seq, 3, Duration::from_micros(100_000));
        assert_eq!(c.dwnd_bytes(), 0, "no dwnd in slow start");
        c.on_congestion_event(Instant::ZERO, 0);
        assert_eq!(c.loss_window_bytes(), c.cwnd_bytes());
        rounds(&mut c, &mut seq, 6, Duration::from_micros(100_000));
        let grown = c.dwnd_bytes();
        assert!(grown > 0, "dwnd grows while diff < gamma");
        // RTT doubled: diff = win/2 > gamma once win > 60 segments.
        rounds(&mut c, &mut seq, 20, Duration::from_micros(100_000));
        let before = c.dwnd_bytes();
        rounds(&mut c, &mut seq, 2, Duration::from_micros(200_000));
        assert!(c.dwnd_bytes() < before, "dwnd shrinks while diff >= gamma");
        let win = c.cwnd_bytes();
        c.on_congestion_event(Instant::ZERO, 0);
        let after = c.cwnd_bytes();
        assert!(after.abs_diff(win / 2) <= 1000, "{win} -> {after}");
    }
}
