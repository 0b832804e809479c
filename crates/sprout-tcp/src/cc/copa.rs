//! Copa (Arun & Balakrishnan, "Copa: Practical Delay-Based Congestion Control for the
//! Internet", NSDI 2018; section numbers below are the paper's), with the details the paper
//! leaves open taken from the authors' implementation (`genericCC`, `markoviancc.cc` and
//! `rtt-window.cc`, the code Pantheon runs).
//!
//! On every ACK (§2, "the Copa algorithm"):
//! 1. RTT filters: `RTTmin` is the smallest RTT over the last [`RTT_MIN_WINDOW`] (10 s, §2);
//!    `RTTstanding` the smallest over the last `srtt / 2` ([`STANDING_WINDOW_FRACTION`], §2;
//!    `srtt` is the sender's RFC 6298 smoothed RTT, the paper's "standard EWMA"); the queueing
//!    delay is `d_q = RTTstanding - RTTmin`.
//! 2. The target rate is `lambda_t = 1 / (delta * d_q)` packets per second (§2, eq. 1).
//! 3. The current rate is `lambda = cwnd / RTTstanding`. If `lambda <= lambda_t`, cwnd grows by
//!    `v / (delta * cwnd)` packets per packet acknowledged, else it shrinks by as much (§2
//!    step 3). `d_q = 0` means an infinite target: grow.
//! 4. Velocity `v` (§2.1): starts at 1. Once per window of data (a round ends when the
//!    cumulative ACK passes what was sent when it began) the direction is `up` if cwnd grew
//!    over the round, `down` if it shrank. A change of direction resets `v` to 1; `v`
//!    doubles at each round end once the direction has stayed the same for
//!    [`VELOCITY_SAME_DIRECTION_ROUNDS`] (3) rounds beyond the first (§2.1: "only after the
//!    direction has remained the same for three RTTs"). As in the authors' code, `v` never
//!    exceeds `delta * cwnd`, so cwnd changes by at most one packet per packet acknowledged.
//! 5. Slow start (§2): cwnd doubles once per RTT (one packet per packet acknowledged) until
//!    `lambda` exceeds `lambda_t`, or until a loss.
//! 6. Pacing (§2): `2 * cwnd / RTTstanding` ([`PACING_GAIN`]).
//!
//! Competitive mode (§3, "competing with buffer-filling schemes"): in default mode Copa
//! drains the queue about every five RTTs. The queue counts as nearly empty when
//! `d_q < 0.1 * (RTTmax - RTTmin)` ([`NEARLY_EMPTY_FRACTION`]), `RTTmax` being the largest RTT
//! over the last four `srtt` ([`RTT_MAX_WINDOW_SRTTS`]; the paper's "max RTT over the last 4
//! RTTs", the authors' `is_copa`). If it has not been nearly empty within the last five `srtt`
//! ([`EMPTY_QUEUE_SRTTS`]), a buffer-filling flow shares the bottleneck and Copa switches to
//! competitive mode, where `1/delta` follows AIMD (§3): +1 once per RTT
//! ([`COMPETITIVE_INCREASE`]), halved on a loss (at most once per RTT), and never below
//! `1/delta_default` (`delta <= delta_default`: 0.5, or 0.1 for `copa-0.1`). Back in default
//! mode, `delta` returns to its default.
//!
//! Loss (§2, §5: Copa is delay-based and does not reduce on loss): fast recovery leaves cwnd as
//! it is (the sender's NewReno inflation applies on top) and ends slow start; in competitive
//! mode it halves `1/delta`. A retransmission timeout restarts as the authors' sender does
//! after two silent seconds: slow start from [`MIN_CWND_PACKETS`] packets, velocity 1 (the RTT
//! filters are kept). cwnd stays at least [`MIN_CWND_PACKETS`] (2, the authors' bound).
//!
//! Known behaviour with both directions loaded (the Sprout paper's setup): each flow's ACKs
//! wait behind the other direction's data, so the RTT it sees includes a queue it does not
//! control and rarely finds both queues nearly empty at once. The mode switch then reads a
//! buffer-filler, and over unbounded queues (no loss to halve `1/delta`) competitive mode
//! raises `1/delta` without end: in the simulator over a constant 12 Mbit/s link, one
//! direction alone keeps about 4 ms of self-inflicted delay (21 ms for delta 0.1), both
//! directions at once about 270 ms. Pantheon runs Copa one way only. The cellular traces, whose
//! rate swings, keep the queue from emptying even one way: on ATT-LTE-driving's uplink alone
//! Copa keeps 4.4 s of self-inflicted delay with the switch and 0.3 s without it (the
//! criticism of Copa's competitive mode in Copa+, IEEE/ACM ToN 2023).
//!
//! As everywhere in this crate, growth needs a cwnd-limited flow ([`AckEvent::cwnd_limited`])
//! and does not happen during fast recovery; decreases always apply.

use std::any::Any;
use std::collections::VecDeque;

use sprout_core::time::{Duration, Instant};

use super::{AckEvent, CcConfig, CcKind, CongestionControl};

/// The paper's default delta (§2, §5): about 1/delta = 2 packets queued per flow.
pub const DEFAULT_DELTA: f64 = 0.5;
/// Pantheon's delta: its Copa wrapper runs the authors' sender with `do_ss:auto:0.1`.
pub const PANTHEON_DELTA: f64 = 0.1;
/// `RTTmin` window (§2: "over a long period of time, 10 seconds").
pub const RTT_MIN_WINDOW: Duration = Duration::from_secs(10);
/// `RTTstanding` window as a fraction of srtt (§2: `tau = srtt / 2`).
pub const STANDING_WINDOW_FRACTION: f64 = 0.5;
/// `RTTmax` window for the mode switch, in srtt (§3: "the last four RTTs"; `is_copa_max`).
pub const RTT_MAX_WINDOW_SRTTS: f64 = 4.0;
/// The queue is nearly empty when `d_q` is below this fraction of `RTTmax - RTTmin` (§3: 10%).
pub const NEARLY_EMPTY_FRACTION: f64 = 0.1;
/// Default mode expects the queue nearly empty at least once in this many srtt (§3: 5 RTTs).
pub const EMPTY_QUEUE_SRTTS: f64 = 5.0;
/// Rounds in the same direction, beyond the first, before the velocity doubles (§2.1: 3).
pub const VELOCITY_SAME_DIRECTION_ROUNDS: u32 = 3;
/// Pacing rate over `cwnd / RTTstanding` (§2: "pace packets at 2 cwnd / RTTstanding").
pub const PACING_GAIN: f64 = 2.0;
/// Competitive mode's additive increase of `1/delta` per RTT without loss (§3).
pub const COMPETITIVE_INCREASE: f64 = 1.0;
/// Smallest cwnd (packets): the authors' `max(2, window)`.
pub const MIN_CWND_PACKETS: f64 = 2.0;

/// Copa's operating mode (§3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CopaMode {
    /// The queue empties every few RTTs: `delta` is the default.
    Default,
    /// A buffer-filling flow shares the bottleneck: `1/delta` follows AIMD.
    Competitive,
}

/// Direction cwnd moved over a round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    Up,
    Down,
}

/// Sliding-window minimum (or maximum) of RTT samples by time, as the authors'
/// `ExtremeWindow`: a monotone deque; samples older than the window are dropped when read,
/// but the newest is always kept.
#[derive(Clone, Debug)]
pub(crate) struct ExtremeWindow {
    find_min: bool,
    /// (time µs, RTT µs), values monotone from the front (the extreme) to the back.
    samples: VecDeque<(u64, u64)>,
}

impl ExtremeWindow {
    pub(crate) fn new(find_min: bool) -> Self {
        ExtremeWindow {
            find_min,
            samples: VecDeque::new(),
        }
    }

    /// Adds the sample `value` taken at `now_us`.
    pub(crate) fn push(&mut self, now_us: u64, value: u64) {
        while let Some(&(_, v)) = self.samples.back() {
            let dominated = if self.find_min {
                v >= value
            } else {
                v <= value
            };
            if !dominated {
                break;
            }
            self.samples.pop_back();
        }
        self.samples.push_back((now_us, value));
    }

    /// The extreme over the samples of the last `window_us` before `now_us` (the newest sample
    /// if all are older), dropping older ones; None before any sample.
    pub(crate) fn get(&mut self, now_us: u64, window_us: u64) -> Option<u64> {
        let oldest = now_us.saturating_sub(window_us);
        while self.samples.len() > 1 && self.samples.front().is_some_and(|&(t, _)| t < oldest) {
            self.samples.pop_front();
        }
        self.samples.front().map(|&(_, v)| v)
    }
}

/// What one ACK's RTT filters say (µs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CopaRtts {
    /// Smallest RTT over 10 s (µs).
    pub min_us: u64,
    /// Smallest RTT over srtt/2 (µs).
    pub standing_us: u64,
    /// Largest RTT over 4 srtt (µs).
    pub max_us: u64,
    /// Smoothed RTT (µs).
    pub srtt_us: u64,
}

impl CopaRtts {
    /// Queueing delay `d_q = RTTstanding - RTTmin` (µs).
    pub fn queueing_us(&self) -> u64 {
        self.standing_us.saturating_sub(self.min_us)
    }
}

/// The Copa controller.
#[derive(Clone, Debug)]
pub struct Copa {
    kind: CcKind,
    mss: u64,
    max_cwnd: u64,
    /// Congestion window (packets, fractional).
    cwnd: f64,
    default_delta: f64,
    delta: f64,
    mode: CopaMode,
    slow_start: bool,
    velocity: f64,
    direction: Option<Direction>,
    /// Rounds in `direction` since it last changed.
    same_direction_rounds: u32,
    /// The current round ends when `snd_una` passes this (bytes).
    round_end: Option<u64>,
    /// cwnd when the current round began (packets).
    round_start_cwnd: f64,
    min_filter: ExtremeWindow,
    standing_filter: ExtremeWindow,
    max_filter: ExtremeWindow,
    last: Option<CopaRtts>,
    /// When the queue was last nearly empty (µs).
    last_empty_us: Option<u64>,
    /// Competitive mode: when 1/delta last grew, and when a loss last halved it (µs).
    last_delta_increase_us: u64,
    last_delta_decrease_us: Option<u64>,
    /// Whether the mode switch of §3 runs (off: default mode always, delta fixed).
    mode_switch: bool,
}

impl Copa {
    /// A Copa controller with the paper's delta (0.5).
    pub fn new(cfg: &CcConfig) -> Self {
        Copa::with_delta(cfg, DEFAULT_DELTA, CcKind::Copa)
    }

    /// A Copa controller with default delta `delta` (in (0, 1]), reporting itself as `kind`.
    pub fn with_delta(cfg: &CcConfig, delta: f64, kind: CcKind) -> Self {
        let mss = cfg.mss.max(1);
        let delta = if delta.is_finite() && delta > 0.0 {
            delta.min(1.0)
        } else {
            DEFAULT_DELTA
        };
        Copa {
            kind,
            mss,
            max_cwnd: cfg.max_cwnd_bytes.max(2 * mss),
            cwnd: (cfg.initial_cwnd_bytes as f64 / mss as f64).max(MIN_CWND_PACKETS),
            default_delta: delta,
            delta,
            mode: CopaMode::Default,
            slow_start: true,
            velocity: 1.0,
            direction: None,
            same_direction_rounds: 0,
            round_end: None,
            round_start_cwnd: 0.0,
            min_filter: ExtremeWindow::new(true),
            standing_filter: ExtremeWindow::new(true),
            max_filter: ExtremeWindow::new(false),
            last: None,
            last_empty_us: None,
            last_delta_increase_us: 0,
            last_delta_decrease_us: None,
            mode_switch: true,
        }
    }

    /// The same controller with the mode switch of §3 off: always in default mode with a
    /// fixed delta (the paper's "Copa without competitive mode", for comparison).
    pub fn without_mode_switch(mut self) -> Self {
        self.mode_switch = false;
        self
    }

    /// The delta in use now (the default in default mode).
    pub fn delta(&self) -> f64 {
        self.delta
    }

    /// The operating mode.
    pub fn mode(&self) -> CopaMode {
        self.mode
    }

    /// The velocity `v`.
    pub fn velocity(&self) -> f64 {
        self.velocity
    }

    /// Whether Copa is still in slow start.
    pub fn in_slow_start(&self) -> bool {
        self.slow_start
    }

    /// The RTT filters after the last ACK with an RTT sample.
    pub fn rtts(&self) -> Option<CopaRtts> {
        self.last
    }

    /// The target rate `lambda_t = 1 / (delta * d_q)` (packets per second) after the last
    /// ACK; infinite with no queueing delay.
    pub fn target_rate_packets_per_s(&self) -> Option<f64> {
        let r = self.last?;
        Some(target_rate(self.delta, r.queueing_us()))
    }

    /// The current rate `lambda = cwnd / RTTstanding` (packets per second).
    pub fn current_rate_packets_per_s(&self) -> Option<f64> {
        let r = self.last?;
        Some(self.cwnd / (r.standing_us.max(1) as f64 * 1e-6))
    }

    fn update_filters(&mut self, now_us: u64, rtt: Duration, srtt: Option<Duration>) -> CopaRtts {
        let rtt_us = rtt.as_micros().max(1);
        let srtt_us = srtt.map_or(rtt_us, |s| s.as_micros().max(1));
        self.min_filter.push(now_us, rtt_us);
        self.standing_filter.push(now_us, rtt_us);
        self.max_filter.push(now_us, rtt_us);
        let standing_window = (srtt_us as f64 * STANDING_WINDOW_FRACTION) as u64;
        let max_window =
            ((srtt_us as f64 * RTT_MAX_WINDOW_SRTTS) as u64).min(RTT_MIN_WINDOW.as_micros());
        let r = CopaRtts {
            min_us: self
                .min_filter
                .get(now_us, RTT_MIN_WINDOW.as_micros())
                .unwrap_or(rtt_us),
            standing_us: self
                .standing_filter
                .get(now_us, standing_window)
                .unwrap_or(rtt_us),
            max_us: self.max_filter.get(now_us, max_window).unwrap_or(rtt_us),
            srtt_us,
        };
        self.last = Some(r);
        r
    }

    /// Mode switch (§3) and competitive mode's additive increase of 1/delta.
    fn update_mode(&mut self, now_us: u64, r: &CopaRtts) {
        let spread = r.max_us.saturating_sub(r.min_us) as f64;
        if (r.queueing_us() as f64) <= NEARLY_EMPTY_FRACTION * spread {
            self.last_empty_us = Some(now_us);
        }
        let since_empty = now_us.saturating_sub(self.last_empty_us.unwrap_or(0)) as f64;
        let competitive = self.mode_switch && since_empty > EMPTY_QUEUE_SRTTS * r.srtt_us as f64;
        match (self.mode, competitive) {
            (CopaMode::Default, true) => {
                self.mode = CopaMode::Competitive;
                self.delta = self.default_delta;
                self.last_delta_increase_us = now_us;
            }
            (CopaMode::Competitive, false) => {
                self.mode = CopaMode::Default;
                self.delta = self.default_delta;
            }
            (CopaMode::Competitive, true) => {
                if now_us.saturating_sub(self.last_delta_increase_us) >= r.srtt_us {
                    self.delta = 1.0 / (1.0 / self.delta + COMPETITIVE_INCREASE);
                    self.last_delta_increase_us = now_us;
                }
            }
            (CopaMode::Default, false) => {}
        }
    }

    /// Round bookkeeping for the velocity (§2.1).
    fn update_velocity(&mut self, ack: &AckEvent) {
        let Some(end) = self.round_end else {
            self.round_end = Some(ack.snd_max);
            self.round_start_cwnd = self.cwnd;
            return;
        };
        if ack.snd_una <= end {
            return;
        }
        let dir = if self.cwnd > self.round_start_cwnd {
            Some(Direction::Up)
        } else if self.cwnd < self.round_start_cwnd {
            Some(Direction::Down)
        } else {
            self.direction
        };
        if dir != self.direction {
            self.direction = dir;
            self.velocity = 1.0;
            self.same_direction_rounds = 0;
        } else if !self.slow_start {
            self.same_direction_rounds += 1;
            if self.same_direction_rounds >= VELOCITY_SAME_DIRECTION_ROUNDS {
                self.velocity *= 2.0;
            }
        }
        self.round_end = Some(ack.snd_max);
        self.round_start_cwnd = self.cwnd;
    }

    /// The window step towards the target (§2 step 3), or slow start.
    fn adjust_cwnd(&mut self, ack: &AckEvent, r: &CopaRtts) {
        let acked_packets = ack.acked_bytes as f64 / self.mss as f64;
        let rate = self.cwnd / (r.standing_us.max(1) as f64 * 1e-6);
        let target = target_rate(self.delta, r.queueing_us());
        let up = rate <= target;
        if self.slow_start {
            if up {
                if ack.cwnd_limited {
                    self.cwnd += acked_packets;
                }
                return;
            }
            self.slow_start = false;
        }
        self.velocity = self.velocity.min((self.delta * self.cwnd).max(1.0));
        let step = acked_packets * self.velocity / (self.delta * self.cwnd);
        if up {
            if ack.cwnd_limited {
                self.cwnd += step;
            }
        } else {
            self.cwnd -= step;
        }
    }

    fn clamp(&mut self) {
        let max = self.max_cwnd as f64 / self.mss as f64;
        self.cwnd = self.cwnd.clamp(MIN_CWND_PACKETS, max.max(MIN_CWND_PACKETS));
    }
}

/// `lambda_t = 1 / (delta * d_q)` in packets per second for `d_q` in µs (infinite at 0).
pub fn target_rate(delta: f64, queueing_us: u64) -> f64 {
    if queueing_us == 0 {
        f64::INFINITY
    } else {
        1.0 / (delta * queueing_us as f64 * 1e-6)
    }
}

impl CongestionControl for Copa {
    fn kind(&self) -> CcKind {
        self.kind
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        let now_us = ack.now.as_micros();
        let r = match ack.rtt {
            Some(rtt) => self.update_filters(now_us, rtt, ack.srtt),
            None => match self.last {
                Some(r) => r,
                None => return,
            },
        };
        self.update_mode(now_us, &r);
        self.update_velocity(ack);
        if !ack.in_recovery {
            self.adjust_cwnd(ack, &r);
        }
        self.clamp();
    }

    fn on_congestion_event(&mut self, now: Instant, _in_flight_bytes: u64) {
        self.slow_start = false;
        if self.mode != CopaMode::Competitive {
            return;
        }
        let now_us = now.as_micros();
        let rtt_us = self.last.map_or(0, |r| r.srtt_us);
        let recent = self
            .last_delta_decrease_us
            .is_some_and(|t| now_us.saturating_sub(t) < rtt_us);
        if !recent {
            let inv = (0.5 / self.delta).max(1.0 / self.default_delta);
            self.delta = 1.0 / inv;
            self.last_delta_decrease_us = Some(now_us);
            self.last_delta_increase_us = now_us;
        }
    }

    fn on_retransmission_timeout(
        &mut self,
        _now: Instant,
        _in_flight_bytes: u64,
        same_episode: bool,
    ) {
        self.cwnd = MIN_CWND_PACKETS;
        if !same_episode {
            self.slow_start = true;
        }
        self.velocity = 1.0;
        self.direction = None;
        self.same_direction_rounds = 0;
        self.round_end = None;
    }

    fn cwnd_bytes(&self) -> u64 {
        ((self.cwnd * self.mss as f64) as u64).clamp(2 * self.mss, self.max_cwnd)
    }

    fn pacing_rate_bytes_per_s(&self) -> Option<u64> {
        let r = self.last?;
        let bytes = self.cwnd * self.mss as f64;
        Some((PACING_GAIN * bytes / (r.standing_us.max(1) as f64 * 1e-6)).max(1.0) as u64)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::reno::tests::{ack, cfg};

    /// An ACK at `now_us` of `acked` bytes with RTT and srtt `rtt_us`.
    fn ack_at(now_us: u64, rtt_us: u64, acked: u64, snd_una: u64, snd_max: u64) -> AckEvent {
        let rtt = Some(Duration::from_micros(rtt_us));
        AckEvent {
            rtt,
            srtt: rtt,
            snd_una,
            snd_max,
            ..ack(Instant::from_micros(now_us), acked)
        }
    }

    /// Time and sequence carried across [`drive`] calls.
    #[derive(Default)]
    struct Clock {
        now_us: u64,
        seq: u64,
    }

    /// `n` rounds of one ACK per 1000-byte segment of the window, spread over one RTT of
    /// `rtt_us`, every sample `rtt_us`.
    fn drive(c: &mut Copa, k: &mut Clock, n: usize, rtt_us: u64) {
        for _ in 0..n {
            let segs = (c.cwnd_bytes() / 1000).max(1);
            let snd_max = k.seq + c.cwnd_bytes();
            for _ in 0..segs {
                k.seq += 1000;
                k.now_us += rtt_us / segs;
                c.on_ack(&ack_at(k.now_us, rtt_us, 1000, k.seq, snd_max));
            }
        }
    }

    #[test]
    fn target_rate_is_one_over_delta_times_queueing_delay() {
        // delta 0.5, d_q 10 ms: 200 packets/s; delta 0.1: 1000; no queue: unbounded.
        assert!((target_rate(0.5, 10_000) - 200.0).abs() < 1e-9);
        assert!((target_rate(0.1, 10_000) - 1000.0).abs() < 1e-9);
        assert!(target_rate(0.5, 0).is_infinite());
        let mut c = Copa::new(&cfg());
        c.on_ack(&ack_at(0, 100_000, 1000, 1000, 10_000));
        c.on_ack(&ack_at(1_000_000, 150_000, 1000, 2000, 10_000));
        let r = c.rtts().unwrap();
        assert_eq!(
            (r.min_us, r.standing_us, r.queueing_us()),
            (100_000, 150_000, 50_000)
        );
        assert!((c.target_rate_packets_per_s().unwrap() - 40.0).abs() < 1e-9);
    }

    #[test]
    fn standing_rtt_is_the_minimum_over_half_an_srtt_and_rtt_min_over_ten_seconds() {
        let mut c = Copa::new(&cfg()).without_mode_switch();
        c.on_ack(&ack_at(0, 100_000, 1000, 1000, 10_000));
        c.on_ack(&ack_at(1_000_000, 130_000, 1000, 2000, 10_000));
        c.on_ack(&ack_at(1_010_000, 120_000, 1000, 3000, 10_000));
        c.on_ack(&ack_at(1_050_000, 125_000, 1000, 4000, 10_000));
        // srtt 125 ms: the standing window is 62.5 ms, holding 120 and 125 (not the 100 of t=0).
        let r = c.rtts().unwrap();
        assert_eq!((r.standing_us, r.min_us), (120_000, 100_000));
        // 10 s after the 100 ms sample it is forgotten; the 120 ms one (t = 1.01 s) is not yet.
        c.on_ack(&ack_at(10_500_000, 140_000, 1000, 5000, 10_000));
        let r = c.rtts().unwrap();
        assert_eq!((r.standing_us, r.min_us), (140_000, 120_000));
        // A window with only old samples keeps the newest.
        let mut w = ExtremeWindow::new(false);
        w.push(0, 5);
        w.push(10, 3);
        assert_eq!(w.get(10, 100), Some(5), "max filter");
        assert_eq!(w.get(1000, 100), Some(3));
    }

    #[test]
    fn cwnd_moves_by_v_over_delta_cwnd_towards_the_target() {
        let mut c = Copa::new(&cfg());
        // No queue: slow start, +1 packet for the packet acknowledged.
        c.on_ack(&ack_at(0, 100_000, 1000, 1000, 10_000));
        assert_eq!(c.cwnd_bytes(), 11_000);
        assert!(c.in_slow_start());
        // d_q = 50 ms: lambda_t = 40 packets/s < lambda = 11 / 0.15 s = 73: slow start ends and
        // cwnd shrinks by v / (delta cwnd) = 1 / (0.5 * 11) packets.
        c.on_ack(&ack_at(1_000_000, 150_000, 1000, 2000, 10_000));
        assert!(!c.in_slow_start());
        let w1 = 11.0 - 1.0 / (0.5 * 11.0);
        assert_eq!(c.cwnd_bytes(), (w1 * 1000.0) as u64);
        // d_q = 0.5 ms: lambda_t = 4000 packets/s > lambda: grows by 1 / (0.5 w1) packets.
        c.on_ack(&ack_at(1_001_000, 100_500, 1000, 3000, 10_000));
        let w2 = w1 + 1.0 / (0.5 * w1);
        assert_eq!(c.cwnd_bytes(), (w2 * 1000.0) as u64);
        // Two packets acknowledged at once move it twice as far; delta 0.1 five times as far.
        let mut d = Copa::with_delta(&cfg(), 0.1, CcKind::CopaTenth);
        d.on_ack(&ack_at(0, 100_000, 1000, 1000, 10_000));
        d.on_ack(&ack_at(1_000_000, 150_000, 1000, 2000, 10_000));
        // delta 0.1: lambda_t = 200 packets/s > 73: still slow start (+1).
        assert!(d.in_slow_start() && d.cwnd_bytes() == 12_000);
        d.on_ack(&ack_at(3_000_000, 1_000_000, 2000, 4000, 10_000));
        // d_q = 900 ms: lambda_t = 11.1 < 12 / 1 s: down by 2 * 1 / (0.1 * 12).
        assert_eq!(d.cwnd_bytes(), ((12.0 - 2.0 / 1.2) * 1000.0) as u64);
        // Not cwnd-limited: no growth; decreases still apply.
        let mut e = Copa::new(&cfg());
        e.on_ack(&AckEvent {
            cwnd_limited: false,
            ..ack_at(0, 100_000, 1000, 1000, 10_000)
        });
        assert_eq!(e.cwnd_bytes(), 10_000);
    }

    #[test]
    fn slow_start_doubles_per_rtt_until_the_rate_exceeds_the_target() {
        let mut c = Copa::new(&cfg());
        let mut k = Clock::default();
        drive(&mut c, &mut k, 1, 100_000);
        assert_eq!(c.cwnd_bytes(), 20_000);
        drive(&mut c, &mut k, 1, 100_000);
        assert_eq!(c.cwnd_bytes(), 40_000);
        assert!(c.in_slow_start());
        // A 100 ms queue: lambda_t = 20 packets/s, far below 40 / 0.2 s: out (once the 100 ms
        // samples leave the standing window), and shrinking from there.
        let mut acks = 0;
        while c.in_slow_start() {
            k.seq += 1000;
            k.now_us += 5000;
            c.on_ack(&ack_at(k.now_us, 200_000, 1000, k.seq, k.seq + 40_000));
            acks += 1;
            assert!(acks < 40, "still in slow start");
        }
        let exit = c.cwnd_bytes();
        assert!(exit < 80_000, "{exit}");
        drive(&mut c, &mut k, 1, 200_000);
        assert!(c.cwnd_bytes() < exit, "{} >= {exit}", c.cwnd_bytes());
        // A loss also ends slow start.
        let mut d = Copa::new(&cfg());
        d.on_congestion_event(Instant::ZERO, 10_000);
        assert!(!d.in_slow_start());
    }

    #[test]
    fn velocity_doubles_after_three_rounds_in_one_direction_and_resets_on_a_change() {
        let mut c = Copa::new(&cfg()).without_mode_switch();
        let mut k = Clock::default();
        c.on_congestion_event(Instant::ZERO, 10_000); // out of slow start
                                                      // No queue: cwnd grows every round. A round ends at the first ACK beyond it, so the
                                                      // first round end comes in the second call: it sets the direction (v = 1); the next
                                                      // three keep it (v = 1, 1, then 2), then 4.
        let mut v = Vec::new();
        for _ in 0..6 {
            drive(&mut c, &mut k, 1, 100_000);
            v.push(c.velocity());
        }
        assert_eq!(v, [1.0, 1.0, 1.0, 1.0, 2.0, 4.0], "velocity by round");
        // A 200 ms queue: the window now shrinks; the round that turns resets v to 1.
        drive(&mut c, &mut k, 2, 300_000);
        assert_eq!(c.velocity(), 1.0);
        // The velocity is capped at delta * cwnd: at most one packet per packet acknowledged.
        let mut d = Copa::new(&cfg()).without_mode_switch();
        d.on_congestion_event(Instant::ZERO, 10_000);
        d.velocity = 1e6;
        let before = d.cwnd;
        d.on_ack(&ack_at(1000, 100_000, 1000, 1000, 10_000));
        assert!((d.cwnd - before - 1.0).abs() < 1e-9, "{}", d.cwnd - before);
    }

    #[test]
    fn pacing_is_twice_cwnd_over_the_standing_rtt() {
        let mut c = Copa::new(&cfg());
        assert_eq!(c.pacing_rate_bytes_per_s(), None, "no RTT yet");
        c.on_ack(&ack_at(0, 100_000, 1000, 1000, 10_000));
        // 11 000 bytes over 100 ms, doubled.
        assert_eq!(c.pacing_rate_bytes_per_s(), Some(220_000));
    }

    #[test]
    fn a_queue_that_never_empties_switches_to_competitive_mode_where_one_over_delta_is_aimd() {
        let mut c = Copa::new(&cfg());
        let mut k = Clock::default();
        drive(&mut c, &mut k, 2, 100_000);
        c.on_congestion_event(Instant::from_micros(k.now_us), 10_000);
        assert_eq!((c.mode(), c.delta()), (CopaMode::Default, 0.5));
        // A standing 100 ms queue (RTT 200 ms): not nearly empty, as it was until t0; after
        // 5 srtt (1 s) Copa turns competitive.
        let t0 = k.now_us;
        while c.mode() == CopaMode::Default {
            drive(&mut c, &mut k, 1, 200_000);
            assert!(k.now_us < t0 + 2_000_000, "no switch");
        }
        assert!(
            k.now_us >= t0 + 1_000_000,
            "switched after {} µs",
            k.now_us - t0
        );
        // 1/delta grows by one per RTT (200 ms) without loss.
        let inv0 = 1.0 / c.delta();
        drive(&mut c, &mut k, 10, 200_000);
        let inv = 1.0 / c.delta();
        assert!((inv - inv0 - 10.0).abs() <= 1.0, "1/delta {inv0} -> {inv}");
        // A loss halves it, once per RTT.
        let t = Instant::from_micros(k.now_us);
        c.on_congestion_event(t, 10_000);
        assert!((1.0 / c.delta() - inv / 2.0).abs() < 1e-9);
        c.on_congestion_event(t + Duration::from_millis(10), 10_000);
        assert!(
            (1.0 / c.delta() - inv / 2.0).abs() < 1e-9,
            "twice in one RTT"
        );
        // Never below 1/delta_default: delta stays at most the default.
        for i in 1..10u64 {
            c.on_congestion_event(t + Duration::from_secs(i), 10_000);
        }
        assert_eq!(c.delta(), 0.5);
        // The queue empties: back to default mode and delta.
        drive(&mut c, &mut k, 3, 100_000);
        assert_eq!((c.mode(), c.delta()), (CopaMode::Default, 0.5));
        // Without the switch the same standing queue leaves delta alone.
        let mut d = Copa::new(&cfg()).without_mode_switch();
        let mut k = Clock::default();
        drive(&mut d, &mut k, 2, 100_000);
        drive(&mut d, &mut k, 20, 200_000);
        assert_eq!((d.mode(), d.delta()), (CopaMode::Default, 0.5));
    }

    #[test]
    fn a_timeout_restarts_slow_start_from_two_packets() {
        let mut c = Copa::new(&cfg());
        let mut k = Clock::default();
        drive(&mut c, &mut k, 2, 100_000);
        c.on_retransmission_timeout(Instant::from_micros(k.now_us), 40_000, false);
        assert_eq!(c.cwnd_bytes(), 2000);
        assert!(c.in_slow_start());
        assert_eq!(c.kind(), CcKind::Copa);
    }
}
