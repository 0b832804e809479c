//! LEDBAT (RFC 6817): a less-than-best-effort controller that keeps the queueing delay it
//! causes near `TARGET`.
//!
//! Per ACK (RFC 6817 §2.4.2):
//! `queuing_delay = min(current_delays) - min(base_delays)`,
//! `off_target = (TARGET - queuing_delay) / TARGET`,
//! `cwnd += GAIN * off_target * bytes_newly_acked * MSS / cwnd`, capped at
//! `flightsize + ALLOWED_INCREASE * MSS` and floored at `MIN_CWND * MSS`.
//! Base delay: minimum one-way delay over `BASE_HISTORY` one-minute intervals; current delay:
//! minimum of the last `CURRENT_FILTER` samples. On loss cwnd halves (at most once per
//! recovery episode, so at most once per RTT); on a timeout cwnd = 1 MSS. Increases need a
//! cwnd-limited flow ([`AckEvent::cwnd_limited`]); decreases apply always.
//!
//! One-way delays come from the receiver (`Segment::one_way_delay`). The RFC specifies no
//! slow start and none is used: the window starts at `INIT_CWND` = 2 segments and grows by at
//! most one segment per RTT.

use std::any::Any;
use std::collections::VecDeque;

use sprout_core::time::{Duration, Instant};

use super::{AckEvent, CcConfig, CcKind, CongestionControl};

/// Target queueing delay: 100 ms.
pub const TARGET: Duration = Duration::from_millis(100);
/// GAIN: cwnd grows by at most GAIN segments per RTT.
pub const GAIN: f64 = 1.0;
/// One-minute base-delay minima kept.
pub const BASE_HISTORY: usize = 10;
/// Delay samples the current-delay filter (minimum) looks at.
pub const CURRENT_FILTER: usize = 4;
/// Initial window (segments).
pub const INIT_CWND: u64 = 2;
/// Minimum window (segments).
pub const MIN_CWND: u64 = 2;
/// ALLOWED_INCREASE (segments): cwnd may exceed the flight size by at most this much.
pub const ALLOWED_INCREASE: u64 = 1;
/// Length of one base-delay history interval: one minute.
pub const BASE_INTERVAL: Duration = Duration::from_secs(60);

/// The LEDBAT controller.
#[derive(Clone, Debug)]
pub struct Ledbat {
    mss: f64,
    max_cwnd: f64,
    cwnd: f64,
    /// Per-minute minima, oldest first (µs).
    base_delays: VecDeque<u64>,
    /// Minute index of the newest base-delay entry.
    last_rollover_minute: Option<u64>,
    /// Last CURRENT_FILTER delay samples (µs).
    current_delays: VecDeque<u64>,
}

impl Ledbat {
    /// A LEDBAT controller with cwnd = INIT_CWND segments (`cfg.initial_cwnd_bytes` is not used).
    pub fn new(cfg: &CcConfig) -> Self {
        let mss = cfg.mss as f64;
        Ledbat {
            mss,
            max_cwnd: cfg.max_cwnd_bytes as f64,
            cwnd: INIT_CWND as f64 * mss,
            base_delays: VecDeque::from(vec![u64::MAX; BASE_HISTORY]),
            last_rollover_minute: None,
            current_delays: VecDeque::with_capacity(CURRENT_FILTER + 1),
        }
    }

    /// Base delay: minimum one-way delay over the history.
    pub fn base_delay(&self) -> Option<Duration> {
        self.base_delay_us().map(Duration::from_micros)
    }

    /// Filtered current one-way delay.
    pub fn current_delay(&self) -> Option<Duration> {
        self.current_delay_us().map(Duration::from_micros)
    }

    /// Estimated queueing delay: current minus base.
    pub fn queuing_delay(&self) -> Option<Duration> {
        self.queuing_delay_us().map(Duration::from_micros)
    }

    /// [`base_delay`](Self::base_delay) in µs, for the window arithmetic.
    fn base_delay_us(&self) -> Option<u64> {
        self.base_delays
            .iter()
            .copied()
            .min()
            .filter(|&d| d != u64::MAX)
    }

    /// [`current_delay`](Self::current_delay) in µs.
    fn current_delay_us(&self) -> Option<u64> {
        self.current_delays.iter().copied().min()
    }

    /// [`queuing_delay`](Self::queuing_delay) in µs.
    fn queuing_delay_us(&self) -> Option<u64> {
        Some(
            self.current_delay_us()?
                .saturating_sub(self.base_delay_us()?),
        )
    }

    fn update_base_delay(&mut self, now_us: u64, delay: u64) {
        let minute = now_us / BASE_INTERVAL.as_micros();
        if self.last_rollover_minute != Some(minute) {
            self.last_rollover_minute = Some(minute);
            self.base_delays.pop_front();
            self.base_delays.push_back(delay);
        } else if let Some(tail) = self.base_delays.back_mut() {
            *tail = (*tail).min(delay);
        }
    }

    fn update_current_delay(&mut self, delay: u64) {
        if self.current_delays.len() == CURRENT_FILTER {
            self.current_delays.pop_front();
        }
        self.current_delays.push_back(delay);
    }
}

impl CongestionControl for Ledbat {
    fn kind(&self) -> CcKind {
        CcKind::Ledbat
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        if let Some(d) = ack.one_way_delay.map(Duration::as_micros) {
            self.update_base_delay(ack.now.as_micros(), d);
            self.update_current_delay(d);
        }
        if ack.in_recovery {
            return;
        }
        let Some(queuing_delay) = self.queuing_delay_us() else {
            return;
        };
        let target = TARGET.as_micros() as f64;
        let off_target = (target - queuing_delay as f64) / target;
        if off_target > 0.0 && !ack.cwnd_limited {
            // Below target, but the window is not what limits the flow: no increase.
            return;
        }
        self.cwnd += GAIN * off_target * ack.acked_bytes as f64 * self.mss / self.cwnd;
        let max_allowed = ack.prior_in_flight_bytes as f64 + ALLOWED_INCREASE as f64 * self.mss;
        self.cwnd = self
            .cwnd
            .min(max_allowed)
            .min(self.max_cwnd)
            .max(MIN_CWND as f64 * self.mss);
    }

    fn on_congestion_event(&mut self, _now: Instant, _in_flight_bytes: u64) {
        let floor = MIN_CWND as f64 * self.mss;
        self.cwnd = self.cwnd.min((self.cwnd / 2.0).max(floor));
    }

    fn on_retransmission_timeout(
        &mut self,
        _now: Instant,
        _in_flight_bytes: u64,
        _same_episode: bool,
    ) {
        self.cwnd = self.mss;
    }

    fn cwnd_bytes(&self) -> u64 {
        self.cwnd as u64
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::reno::tests::{ack, cfg};

    fn owd_ack(now_us: u64, owd_us: u64, flight: u64) -> AckEvent {
        AckEvent {
            one_way_delay: Some(Duration::from_micros(owd_us)),
            prior_in_flight_bytes: flight,
            ..ack(Instant::from_micros(now_us), 1000)
        }
    }

    #[test]
    fn grows_below_target_and_shrinks_above() {
        let mut l = Ledbat::new(&cfg());
        assert_eq!(l.cwnd_bytes(), 2000);
        // No queueing: +1 MSS per window of ACKs.
        for _ in 0..2 {
            l.on_ack(&owd_ack(0, 20_000, 100_000));
        }
        assert!(
            (2800..=3000).contains(&l.cwnd_bytes()),
            "{}",
            l.cwnd_bytes()
        );
        // Grow to ~20 segments.
        for _ in 0..200 {
            l.on_ack(&owd_ack(0, 20_000, 100_000));
        }
        let w = l.cwnd_bytes();
        assert!(w > 15_000, "{w}");
        // 300 ms of queueing (off_target = -2): shrinks by 2 MSS per window.
        for _ in 0..10 {
            l.on_ack(&owd_ack(1, 320_000, 100_000));
        }
        assert_eq!(l.queuing_delay_us(), Some(300_000));
        assert!(l.cwnd_bytes() < w);
        // Flight-size cap.
        l.on_ack(&owd_ack(2, 20_000, 3000));
        assert!(l.cwnd_bytes() <= 4000);
        l.on_congestion_event(Instant::ZERO, 0);
        assert_eq!(l.cwnd_bytes(), 2000, "halved, floored at MIN_CWND");
    }

    #[test]
    fn base_delay_history_rolls_per_minute() {
        let mut l = Ledbat::new(&cfg());
        l.on_ack(&owd_ack(0, 50_000, 0));
        l.on_ack(&owd_ack(1_000_000, 40_000, 0));
        assert_eq!(l.base_delay_us(), Some(40_000));
        // Ten minutes later the old minimum has left the history.
        for m in 1..=10u64 {
            l.on_ack(&owd_ack(m * BASE_INTERVAL.as_micros(), 60_000, 0));
        }
        assert_eq!(l.base_delay_us(), Some(60_000));
    }
}
