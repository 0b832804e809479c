//! NewReno's window (RFC 5681 with byte counting per RFC 3465, L = 2). The fast-recovery part
//! of NewReno (RFC 6582: window inflation, partial ACKs) lives in the sender.

use std::any::Any;

use sprout_core::time::Instant;

use super::{AckEvent, CcConfig, CcKind, CongestionControl};

/// RFC 3465's limit on slow-start growth per ACK (segments).
pub const ABC_LIMIT_SEGMENTS: u64 = 2;

/// Slow start and additive increase in bytes, shared by Reno, Vegas and Compound.
#[derive(Clone, Debug)]
pub(crate) struct RenoWindow {
    /// Congestion window (bytes).
    pub cwnd: u64,
    /// Slow-start threshold (bytes); `u64::MAX` initially.
    pub ssthresh: u64,
    /// RFC 3465 `bytes_acked` counter for congestion avoidance (bytes).
    bytes_acked: u64,
    pub mss: u64,
    pub max_cwnd: u64,
}

impl RenoWindow {
    pub(crate) fn new(cfg: &CcConfig) -> Self {
        RenoWindow {
            cwnd: cfg.initial_cwnd_bytes.clamp(cfg.mss, cfg.max_cwnd_bytes),
            ssthresh: u64::MAX,
            bytes_acked: 0,
            mss: cfg.mss,
            max_cwnd: cfg.max_cwnd_bytes,
        }
    }

    pub(crate) fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Slow start: cwnd += min(acked, L * SMSS), not beyond ssthresh. Returns the acked bytes
    /// left over for congestion avoidance (bytes).
    pub(crate) fn slow_start(&mut self, acked: u64) -> u64 {
        let inc = acked.min(ABC_LIMIT_SEGMENTS * self.mss);
        let room = self.ssthresh.saturating_sub(self.cwnd);
        let used = inc.min(room);
        self.cwnd = (self.cwnd + used).min(self.max_cwnd);
        acked - used.min(acked)
    }

    /// Congestion avoidance by appropriate byte counting: one SMSS per `per_bytes` bytes
    /// acknowledged (per_bytes = cwnd gives RFC 5681's one segment per RTT).
    pub(crate) fn congestion_avoidance(&mut self, acked: u64, per_bytes: u64) {
        let per_bytes = per_bytes.max(self.mss);
        self.bytes_acked += acked;
        if self.bytes_acked >= per_bytes {
            self.bytes_acked -= per_bytes;
            // One increment per ACK at most (RFC 3465 §2.1); the rest carries over.
            self.bytes_acked = self.bytes_acked.min(per_bytes);
            self.cwnd = (self.cwnd + self.mss).min(self.max_cwnd);
        }
    }

    /// Slow start below ssthresh, else congestion avoidance with one SMSS per window.
    pub(crate) fn grow(&mut self, acked: u64) {
        let left = if self.in_slow_start() {
            self.slow_start(acked)
        } else {
            acked
        };
        if left > 0 && !self.in_slow_start() {
            let cwnd = self.cwnd;
            self.congestion_avoidance(left, cwnd);
        }
    }

    /// Fast retransmit (RFC 5681 eq. 4): ssthresh = max(FlightSize / 2, 2 SMSS); cwnd =
    /// ssthresh (the sender adds the 3-segment inflation itself).
    pub(crate) fn on_loss(&mut self, in_flight: u64) {
        self.reduce_to(in_flight / 2);
    }

    /// Sets ssthresh and cwnd to `window` (at least 2 SMSS) after a loss (bytes).
    pub(crate) fn reduce_to(&mut self, window: u64) {
        self.ssthresh = window.max(2 * self.mss);
        self.cwnd = self.ssthresh.min(self.max_cwnd);
        self.bytes_acked = 0;
    }

    /// Timeout (RFC 5681 §3.1): ssthresh as for fast retransmit unless this is a repeated
    /// timeout, and cwnd = 1 SMSS (the loss window).
    pub(crate) fn on_timeout(&mut self, in_flight: u64, same_episode: bool) {
        if !same_episode {
            self.ssthresh = (in_flight / 2).max(2 * self.mss);
        }
        self.cwnd = self.mss;
        self.bytes_acked = 0;
    }
}

/// TCP NewReno's congestion controller: slow start (doubling per RTT, RFC 3465 L = 2),
/// congestion avoidance (+1 SMSS per RTT by byte counting), ssthresh = max(FlightSize/2,
/// 2 SMSS) on fast retransmit, cwnd = 1 SMSS after an RTO.
#[derive(Clone, Debug)]
pub struct Reno {
    w: RenoWindow,
}

impl Reno {
    /// A Reno controller starting with `cfg.initial_cwnd_bytes` and infinite ssthresh.
    pub fn new(cfg: &CcConfig) -> Self {
        Reno {
            w: RenoWindow::new(cfg),
        }
    }
}

impl CongestionControl for Reno {
    fn kind(&self) -> CcKind {
        CcKind::Reno
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        if ack.in_recovery || !ack.cwnd_limited {
            return;
        }
        self.w.grow(ack.acked_bytes);
    }

    fn on_congestion_event(&mut self, _now: Instant, in_flight_bytes: u64) {
        self.w.on_loss(in_flight_bytes);
    }

    fn on_retransmission_timeout(
        &mut self,
        _now: Instant,
        in_flight_bytes: u64,
        same_episode: bool,
    ) {
        self.w.on_timeout(in_flight_bytes, same_episode);
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
pub(crate) mod tests {
    use super::*;
    use sprout_core::time::Duration;

    pub(crate) fn cfg() -> CcConfig {
        CcConfig {
            mss: 1000,
            initial_cwnd_bytes: 10_000,
            max_cwnd_bytes: 100_000_000,
            seed: 1,
            receive_window_bytes: 100_000_000,
        }
    }

    pub(crate) fn ack(now: Instant, acked: u64) -> AckEvent {
        let rtt = Some(Duration::from_millis(100));
        AckEvent {
            now,
            acked_bytes: acked,
            rtt,
            min_rtt: rtt,
            srtt: rtt,
            one_way_delay: None,
            prior_in_flight_bytes: 0,
            in_flight_bytes: 0,
            snd_una: 0,
            snd_max: 0,
            in_recovery: false,
            cwnd_limited: true,
            delivered_bytes: 0,
            rate_sample: None,
        }
    }

    /// Runs `n` rounds of one ACK per segment of the controller's window, every one with the
    /// given RTT; `seq` carries the acknowledged sequence number across calls.
    pub(crate) fn rounds(cc: &mut dyn CongestionControl, seq: &mut u64, n: usize, rtt: Duration) {
        for _ in 0..n {
            let segs = cc.cwnd_bytes() / 1000;
            let snd_max = *seq + cc.cwnd_bytes();
            for _ in 0..segs {
                *seq += 1000;
                cc.on_ack(&AckEvent {
                    rtt: Some(rtt),
                    snd_una: *seq,
                    snd_max,
                    ..ack(Instant::ZERO, 1000)
                });
            }
        }
    }

    #[test]
    fn slow_start_then_avoidance() {
        let mut r = Reno::new(&cfg());
        for _ in 0..10 {
            r.on_ack(&ack(Instant::ZERO, 1000));
        }
        assert_eq!(r.cwnd_bytes(), 20_000, "doubles per window in slow start");
        // ABC: one ACK for 5 segments grows by at most 2 SMSS.
        r.on_ack(&ack(Instant::ZERO, 5000));
        assert_eq!(r.cwnd_bytes(), 22_000);
        r.on_congestion_event(Instant::ZERO, 40_000);
        assert_eq!(r.ssthresh_bytes(), 20_000);
        assert_eq!(r.cwnd_bytes(), 20_000);
        // Congestion avoidance: one SMSS per cwnd of acked bytes.
        for _ in 0..20 {
            r.on_ack(&ack(Instant::ZERO, 1000));
        }
        assert_eq!(r.cwnd_bytes(), 21_000);
        r.on_retransmission_timeout(Instant::ZERO, 30_000, false);
        assert_eq!((r.cwnd_bytes(), r.ssthresh_bytes()), (1000, 15_000));
        r.on_retransmission_timeout(Instant::ZERO, 30_000, true);
        assert_eq!(r.ssthresh_bytes(), 15_000, "held on a repeated timeout");
        // Floor of 2 SMSS.
        r.on_congestion_event(Instant::ZERO, 1000);
        assert_eq!(r.ssthresh_bytes(), 2000);
    }

    #[test]
    fn no_growth_in_recovery_or_when_app_limited() {
        let mut r = Reno::new(&cfg());
        r.on_ack(&AckEvent {
            in_recovery: true,
            ..ack(Instant::ZERO, 1000)
        });
        r.on_ack(&AckEvent {
            cwnd_limited: false,
            ..ack(Instant::ZERO, 1000)
        });
        assert_eq!(r.cwnd_bytes(), 10_000);
    }
}
