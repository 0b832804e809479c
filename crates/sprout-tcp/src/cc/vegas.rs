//! TCP Vegas (Brakmo & Peterson, SIGCOMM 1994 / JSAC 1995), with Linux `tcp_vegas.c`'s
//! constants and structure.
//!
//! `baseRTT` is the minimum RTT ever seen. Once per RTT (a round ends when the cumulative ACK
//! passes what was the next sequence number at its start), with `rtt` the minimum RTT sample of
//! the round, Vegas computes
//! `diff = W * (rtt - baseRTT) / rtt` (segments) — the paper's `(Expected - Actual) * baseRTT`,
//! i.e. the segments this flow has queued at the bottleneck, `W` the window the measured segments
//! were sent with — and:
//! - in slow start (as in the paper, the window doubles only every other RTT, so that the RTT
//!   measured in between belongs to a known window): at the start of each growth round, once
//!   three ACKs of the preceding hold round's segments have arrived, if `diff > gamma` Vegas leaves
//!   slow start with `cwnd = min(cwnd, W * baseRTT / rtt + 1)` (the window that empties the
//!   queue, as Linux) and ssthresh below cwnd; otherwise the window grows for the rest of the
//!   round;
//! - in congestion avoidance: `cwnd += 1` segment if `diff < alpha`, `-= 1` if `diff > beta`.
//!
//! Increases (slow start's and avoidance's) need a cwnd-limited flow
//! ([`AckEvent::cwnd_limited`]); decreases apply always. (Linux's Vegas grows on `diff < alpha`
//! even when the receive window holds the flow, which inflates cwnd without bound.)
//!
//! With fewer than three RTT samples in a round, or during loss recovery, it behaves as Reno; on
//! loss and timeout it reacts exactly as Reno.

use std::any::Any;

use sprout_core::time::{Duration, Instant};

use super::reno::RenoWindow;
use super::{AckEvent, CcConfig, CcKind, CongestionControl, RttRound};

/// Lower bound of segments queued (alpha).
pub const ALPHA: f64 = 2.0;
/// Upper bound of segments queued (beta).
pub const BETA: f64 = 4.0;
/// Slow-start exit threshold (gamma, segments).
pub const GAMMA: f64 = 1.0;

/// The Vegas controller.
#[derive(Clone, Debug)]
pub struct Vegas {
    w: RenoWindow,
    round: RttRound,
    last_diff: Option<f64>,
    /// Slow start: whether the current round is a growth round (they alternate with hold
    /// rounds).
    ss_grow: bool,
    /// cwnd when the current round started (bytes).
    round_start_cwnd: u64,
    /// Slow start: whether this growth round's exit check has been made.
    ss_checked: bool,
}

impl Vegas {
    /// A Vegas controller starting with `cfg.initial_cwnd_bytes` in slow start.
    pub fn new(cfg: &CcConfig) -> Self {
        Vegas {
            w: RenoWindow::new(cfg),
            round: RttRound::new(),
            last_diff: None,
            ss_grow: true,
            round_start_cwnd: 0,
            ss_checked: false,
        }
    }

    /// baseRTT: minimum RTT seen.
    pub fn base_rtt(&self) -> Option<Duration> {
        (self.round.base_rtt != Duration::MAX).then_some(self.round.base_rtt)
    }

    /// `diff` (segments) computed at the end of the last round, if any.
    pub fn last_diff_segments(&self) -> Option<f64> {
        self.last_diff
    }

    /// Slow-start exit check, made early in a growth round: its first ACKs measure the segments
    /// sent during the preceding hold round, with window `round_start_cwnd`.
    fn check_slow_start_exit(&mut self) {
        let mss = self.w.mss;
        let rtt = self.round.min_rtt.as_micros() as f64;
        let base = self.round.base_rtt.as_micros() as f64;
        let w = (self.round_start_cwnd / mss) as f64;
        let diff = w * (rtt - base) / rtt;
        self.last_diff = Some(diff);
        if diff > GAMMA {
            // Going too fast: leave slow start at the window that empties the queue.
            let target = (w * base / rtt) as u64 + 1;
            self.w.cwnd = self.w.cwnd.min(target * mss).max(2 * mss);
            self.w.ssthresh = self.w.ssthresh.min(self.w.cwnd.saturating_sub(mss));
        }
    }

    /// Congestion avoidance, once per round: +1 segment if diff < alpha (and the flow is
    /// cwnd-limited), -1 if diff > beta.
    fn congestion_avoidance_round(&mut self, cwnd_limited: bool) {
        let mss = self.w.mss;
        let rtt = self.round.min_rtt.as_micros() as f64;
        let base = self.round.base_rtt.as_micros() as f64;
        let cwnd_segs = (self.w.cwnd / mss) as f64;
        let diff = cwnd_segs * (rtt - base) / rtt;
        self.last_diff = Some(diff);
        if diff > BETA {
            self.w.cwnd = self.w.cwnd.saturating_sub(mss);
            self.w.ssthresh = self.w.ssthresh.min(self.w.cwnd.saturating_sub(mss));
        } else if diff < ALPHA && cwnd_limited {
            self.w.cwnd += mss;
        }
        self.w.cwnd = self.w.cwnd.clamp(2 * mss, self.w.max_cwnd);
    }

    fn start_round(&mut self, snd_max: u64) {
        self.round.reset(snd_max);
        self.round_start_cwnd = self.w.cwnd;
        self.ss_grow = !self.ss_grow;
        self.ss_checked = false;
    }
}

impl CongestionControl for Vegas {
    fn kind(&self) -> CcKind {
        CcKind::Vegas
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        if self.round.idle() {
            self.round_start_cwnd = self.w.cwnd;
            self.ss_grow = true;
            self.ss_checked = false;
        }
        let round_end = self.round.on_ack(ack);
        if ack.in_recovery {
            return;
        }
        if round_end {
            if !self.w.in_slow_start() {
                if self.round.samples > 2 {
                    self.congestion_avoidance_round(ack.cwnd_limited);
                } else if ack.cwnd_limited {
                    self.w.grow(ack.acked_bytes);
                }
            }
            self.start_round(ack.snd_max);
        }
        if self.w.in_slow_start() && self.ss_grow {
            if !self.ss_checked && self.round.samples > 2 {
                self.ss_checked = true;
                self.check_slow_start_exit();
            }
            if self.ss_checked && self.w.in_slow_start() && ack.cwnd_limited {
                self.w.slow_start(ack.acked_bytes);
            }
        }
    }

    fn on_congestion_event(&mut self, _now: Instant, in_flight_bytes: u64) {
        self.w.on_loss(in_flight_bytes);
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
        self.round.restart();
    }

    fn cwnd_bytes(&self) -> u64 {
        self.w.cwnd
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
    fn avoidance_steers_diff_between_alpha_and_beta() {
        let mut v = Vegas::new(&cfg());
        let mut seq = 0;
        rounds(&mut v, &mut seq, 2, Duration::from_micros(100_000));
        // Force congestion avoidance, then a large queue: diff = 30 * 50/150 = 10 > beta.
        v.on_congestion_event(Instant::ZERO, 60_000);
        let w0 = v.cwnd_bytes();
        rounds(&mut v, &mut seq, 3, Duration::from_micros(150_000));
        assert!(v.cwnd_bytes() < w0, "decreases while diff > beta");
        // No queue at all: diff = 0 < alpha, +1 per round.
        let w1 = v.cwnd_bytes();
        rounds(&mut v, &mut seq, 3, Duration::from_micros(100_000));
        assert!(v.cwnd_bytes() > w1);
        assert_eq!(v.base_rtt(), Some(Duration::from_millis(100)));
    }
}
