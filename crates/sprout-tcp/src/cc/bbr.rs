//! BBR version 1 (Cardwell, Cheng, Gunn, Hassas Yeganeh, Jacobson, "BBR: Congestion-Based
//! Congestion Control", ACM Queue 2016; draft-cardwell-iccrg-bbr-congestion-control-00).
//!
//! - Model: `BtlBw` = windowed maximum of delivery-rate samples over 10 round trips; `RTprop` =
//!   minimum RTT over 10 s.
//! - STARTUP: pacing and cwnd gain `2/ln 2 ≈ 2.885` until the bandwidth estimate stops growing by
//!   25% for 3 rounds; DRAIN: pacing gain `1/2.885` until inflight <= BDP; PROBE_BW: pacing gain
//!   cycles through `[1.25, 0.75, 1, 1, 1, 1, 1, 1]`, each phase lasting one RTprop (the 1.25
//!   phase also until inflight reaches 1.25 BDP, the 0.75 phase ending early once inflight <=
//!   BDP), cwnd gain 2; PROBE_RTT: when RTprop is 10 s old, cwnd = 4 segments for
//!   max(200 ms, one round), then back to PROBE_BW.
//! - `cwnd = cwnd_gain * BDP + 3 * send_quantum`, grown by the bytes acknowledged towards that
//!   target; pacing rate `pacing_gain * BtlBw` (payload bytes per second).
//! - Loss recovery: on entering fast recovery cwnd is saved and set to the flight size, and
//!   packet conservation holds for one round (the sender's NewReno inflation then releases one
//!   segment per segment delivered); on leaving it the saved cwnd is restored. On a timeout
//!   cwnd = 1 segment, restored when recovery ends.
//!
//! Rate samples (draft-cheng-iccrg-delivery-rate-estimation) are computed by the sender from
//! cumulative ACKs; without SACK, segments received out of order count as delivered only when
//! the cumulative ACK covers them. Omitted from Linux's BBR: the long-term ("policer")
//! bandwidth model, idle restart and the 1% pacing margin.

use std::any::Any;
use std::collections::VecDeque;

use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use sprout_core::time::{Duration, Instant};

use super::{AckEvent, CcConfig, CcKind, CongestionControl};

/// STARTUP's pacing and cwnd gain, 2/ln 2.
pub const HIGH_GAIN: f64 = 2.0 / std::f64::consts::LN_2;
/// DRAIN's pacing gain, 1/HIGH_GAIN.
pub const DRAIN_GAIN: f64 = 1.0 / HIGH_GAIN;
/// cwnd gain in PROBE_BW.
pub const CWND_GAIN: f64 = 2.0;
/// PROBE_BW's pacing-gain cycle.
pub const PACING_GAIN_CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// Length of the BtlBw max filter (round trips).
pub const BTLBW_FILTER_ROUNDS: u64 = 10;
/// Length of the RTprop min filter: 10 s.
pub const RTPROP_FILTER: Duration = Duration::from_secs(10);
/// Minimum time spent at the PROBE_RTT window: 200 ms.
pub const PROBE_RTT_DURATION: Duration = Duration::from_millis(200);
/// Smallest cwnd BBR uses, and PROBE_RTT's window (segments).
pub const MIN_PIPE_CWND_SEGMENTS: u64 = 4;
/// STARTUP ends after this many rounds without the bandwidth growing by FULL_BW_GROWTH.
pub const FULL_BW_ROUNDS: u32 = 3;
/// Growth that counts as "still growing" in STARTUP (factor).
pub const FULL_BW_GROWTH: f64 = 1.25;

/// BBR's state machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BbrMode {
    /// Exponential search for the bottleneck bandwidth.
    Startup,
    /// Draining the queue STARTUP created.
    Drain,
    /// Steady state: cycling the pacing gain around 1.
    ProbeBw,
    /// Shrinking inflight to 4 segments to re-measure RTprop.
    ProbeRtt,
}

/// Exact sliding-window maximum over round numbers.
#[derive(Clone, Debug)]
struct WindowedMax {
    window: u64,
    samples: VecDeque<(u64, f64)>,
}

impl WindowedMax {
    fn new(window: u64) -> Self {
        WindowedMax {
            window,
            samples: VecDeque::new(),
        }
    }

    fn update(&mut self, round: u64, value: f64) {
        while self.samples.back().is_some_and(|&(_, v)| v <= value) {
            self.samples.pop_back();
        }
        self.samples.push_back((round, value));
        while self
            .samples
            .front()
            .is_some_and(|&(r, _)| r + self.window <= round)
        {
            self.samples.pop_front();
        }
    }

    fn get(&self) -> f64 {
        self.samples.front().map_or(0.0, |&(_, v)| v)
    }
}

/// The BBR v1 controller.
#[derive(Clone, Debug)]
pub struct Bbr {
    mss: u64,
    init_cwnd: u64,
    max_cwnd: u64,
    mode: BbrMode,
    btlbw_filter: WindowedMax,
    /// Bottleneck bandwidth estimate (bytes/s).
    btlbw: f64,
    rtprop_us: Option<u64>,
    rtprop_stamp_us: u64,
    rtprop_expired: bool,
    round_count: u64,
    next_round_delivered: u64,
    round_start: bool,
    filled_pipe: bool,
    full_bw: f64,
    full_bw_count: u32,
    pacing_gain: f64,
    cwnd_gain: f64,
    cycle_index: usize,
    cycle_stamp_us: u64,
    probe_rtt_done_stamp_us: Option<u64>,
    probe_rtt_round_done: bool,
    packet_conservation: bool,
    in_recovery: bool,
    prior_cwnd: u64,
    cwnd: u64,
    /// Pacing rate (bytes/s).
    pacing_rate: f64,
    pacing_from_rtt: bool,
    /// Delivered count at the last ACK (bytes).
    last_delivered: u64,
    rng: ChaCha8Rng,
}

impl Bbr {
    /// A BBR controller in STARTUP with cwnd = `cfg.initial_cwnd_bytes`. Until the first RTT
    /// sample the pacing rate is `HIGH_GAIN * initial cwnd / 1 ms`, as Linux's without SRTT; the
    /// handshake's RTT ([`on_established`](CongestionControl::on_established)) or, without a
    /// handshake, the first ACK's re-initialises it to `HIGH_GAIN * initial cwnd / RTT`.
    pub fn new(cfg: &CcConfig) -> Self {
        let init_cwnd = cfg.initial_cwnd_bytes.clamp(cfg.mss, cfg.max_cwnd_bytes);
        Bbr {
            mss: cfg.mss,
            init_cwnd,
            max_cwnd: cfg.max_cwnd_bytes,
            mode: BbrMode::Startup,
            btlbw_filter: WindowedMax::new(BTLBW_FILTER_ROUNDS),
            btlbw: 0.0,
            rtprop_us: None,
            rtprop_stamp_us: 0,
            rtprop_expired: false,
            round_count: 0,
            next_round_delivered: 0,
            round_start: false,
            filled_pipe: false,
            full_bw: 0.0,
            full_bw_count: 0,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            cycle_index: 0,
            cycle_stamp_us: 0,
            probe_rtt_done_stamp_us: None,
            probe_rtt_round_done: false,
            packet_conservation: false,
            in_recovery: false,
            prior_cwnd: 0,
            cwnd: init_cwnd,
            pacing_rate: HIGH_GAIN * init_cwnd as f64 / 1e-3,
            pacing_from_rtt: false,
            last_delivered: 0,
            rng: ChaCha8Rng::seed_from_u64(cfg.seed),
        }
    }

    /// Current state.
    pub fn mode(&self) -> BbrMode {
        self.mode
    }

    /// Bottleneck bandwidth estimate (payload bytes/s).
    pub fn btlbw_bytes_per_s(&self) -> f64 {
        self.btlbw
    }

    /// Round-trip propagation time estimate.
    pub fn rtprop(&self) -> Option<Duration> {
        self.rtprop_us.map(Duration::from_micros)
    }

    /// Current pacing gain.
    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain
    }

    /// Packet-timed round trips counted so far.
    pub fn round_count(&self) -> u64 {
        self.round_count
    }

    /// Whether STARTUP has found the pipe full.
    pub fn filled_pipe(&self) -> bool {
        self.filled_pipe
    }

    fn send_quantum(&self) -> f64 {
        let rate = self.pacing_rate;
        let mss = self.mss as f64;
        if rate < 1.2e6 / 8.0 {
            mss
        } else if rate < 24e6 / 8.0 {
            2.0 * mss
        } else {
            (rate * 1e-3).min(65_536.0)
        }
    }

    /// BBRInflight(gain): gain * BDP + 3 send quanta (bytes).
    fn inflight(&self, gain: f64) -> u64 {
        match self.rtprop_us {
            None => self.init_cwnd,
            Some(rtprop) => {
                let bdp = self.btlbw * rtprop as f64 * 1e-6;
                (gain * bdp + 3.0 * self.send_quantum()) as u64
            }
        }
    }

    fn update_round(&mut self, ack: &AckEvent) {
        self.round_start = false;
        if let Some(rs) = ack.rate_sample {
            if rs.prior_delivered_bytes >= self.next_round_delivered {
                self.next_round_delivered = ack.delivered_bytes;
                self.round_count += 1;
                self.round_start = true;
                self.packet_conservation = false;
            }
        }
    }

    fn update_btlbw(&mut self, ack: &AckEvent) {
        self.update_round(ack);
        if let Some(rs) = ack.rate_sample {
            let rate = rs.delivery_rate_bytes_per_s;
            if rate > 0.0 && (rate >= self.btlbw || !rs.is_app_limited) {
                self.btlbw_filter.update(self.round_count, rate);
                self.btlbw = self.btlbw_filter.get();
            }
        }
    }

    fn is_next_cycle_phase(&self, ack: &AckEvent) -> bool {
        let rtprop = self.rtprop_us.unwrap_or(0);
        let full_length = ack.now.as_micros().saturating_sub(self.cycle_stamp_us) > rtprop;
        if self.pacing_gain == 1.0 {
            return full_length;
        }
        if self.pacing_gain > 1.0 {
            return full_length
                && (ack.in_recovery
                    || ack.prior_in_flight_bytes >= self.inflight(self.pacing_gain));
        }
        full_length || ack.prior_in_flight_bytes <= self.inflight(1.0)
    }

    fn advance_cycle_phase(&mut self, now_us: u64) {
        self.cycle_stamp_us = now_us;
        self.cycle_index = (self.cycle_index + 1) % PACING_GAIN_CYCLE.len();
        self.pacing_gain = PACING_GAIN_CYCLE[self.cycle_index];
    }

    fn enter_startup(&mut self) {
        self.mode = BbrMode::Startup;
        self.pacing_gain = HIGH_GAIN;
        self.cwnd_gain = HIGH_GAIN;
    }

    fn enter_probe_bw(&mut self, now_us: u64) {
        self.mode = BbrMode::ProbeBw;
        self.pacing_gain = 1.0;
        self.cwnd_gain = CWND_GAIN;
        // Start at a random phase other than the 0.75 one.
        let r: usize = self.rng.gen_range(0..=6);
        self.cycle_index = PACING_GAIN_CYCLE.len() - 1 - r;
        self.advance_cycle_phase(now_us);
    }

    fn check_full_pipe(&mut self, ack: &AckEvent) {
        let app_limited = ack.rate_sample.is_some_and(|rs| rs.is_app_limited);
        if self.filled_pipe || !self.round_start || app_limited {
            return;
        }
        if self.btlbw >= self.full_bw * FULL_BW_GROWTH {
            self.full_bw = self.btlbw;
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        if self.full_bw_count >= FULL_BW_ROUNDS {
            self.filled_pipe = true;
        }
    }

    fn check_drain(&mut self, ack: &AckEvent) {
        if self.mode == BbrMode::Startup && self.filled_pipe {
            self.mode = BbrMode::Drain;
            self.pacing_gain = DRAIN_GAIN;
            self.cwnd_gain = HIGH_GAIN;
        }
        if self.mode == BbrMode::Drain && ack.in_flight_bytes <= self.inflight(1.0) {
            self.enter_probe_bw(ack.now.as_micros());
        }
    }

    fn update_rtprop(&mut self, ack: &AckEvent) {
        self.rtprop_expired =
            ack.now.as_micros() > self.rtprop_stamp_us + RTPROP_FILTER.as_micros();
        if let Some(rtt) = ack.rtt.map(Duration::as_micros) {
            let rtt = rtt.max(1);
            if self.rtprop_us.is_none_or(|p| rtt <= p) || self.rtprop_expired {
                self.rtprop_us = Some(rtt);
                self.rtprop_stamp_us = ack.now.as_micros();
            }
        }
    }

    fn save_cwnd(&mut self) {
        self.prior_cwnd = if !self.in_recovery && self.mode != BbrMode::ProbeRtt {
            self.cwnd
        } else {
            self.prior_cwnd.max(self.cwnd)
        };
    }

    fn restore_cwnd(&mut self) {
        self.cwnd = self.cwnd.max(self.prior_cwnd);
    }

    fn check_probe_rtt(&mut self, ack: &AckEvent) {
        if self.mode != BbrMode::ProbeRtt && self.rtprop_expired {
            self.save_cwnd();
            self.mode = BbrMode::ProbeRtt;
            self.pacing_gain = 1.0;
            self.cwnd_gain = 1.0;
            self.probe_rtt_done_stamp_us = None;
        }
        if self.mode == BbrMode::ProbeRtt {
            self.handle_probe_rtt(ack);
        }
    }

    fn handle_probe_rtt(&mut self, ack: &AckEvent) {
        let min_pipe = MIN_PIPE_CWND_SEGMENTS * self.mss;
        match self.probe_rtt_done_stamp_us {
            None if ack.in_flight_bytes <= min_pipe => {
                self.probe_rtt_done_stamp_us =
                    Some(ack.now.as_micros() + PROBE_RTT_DURATION.as_micros());
                self.probe_rtt_round_done = false;
                self.next_round_delivered = ack.delivered_bytes;
            }
            None => {}
            Some(done) => {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done && ack.now.as_micros() > done {
                    self.rtprop_stamp_us = ack.now.as_micros();
                    self.restore_cwnd();
                    if self.filled_pipe {
                        self.enter_probe_bw(ack.now.as_micros());
                    } else {
                        self.enter_startup();
                    }
                }
            }
        }
    }

    fn set_pacing_rate(&mut self) {
        let rate = self.pacing_gain * self.btlbw;
        if self.btlbw > 0.0 && (self.filled_pipe || rate > self.pacing_rate) {
            self.pacing_rate = rate;
        }
    }

    fn set_cwnd(&mut self, ack: &AckEvent) {
        let target = self.inflight(self.cwnd_gain);
        let acked = ack.acked_bytes;
        if !self.packet_conservation {
            if self.filled_pipe {
                self.cwnd = (self.cwnd + acked).min(target);
            } else if self.cwnd < target || ack.delivered_bytes < self.init_cwnd {
                self.cwnd += acked;
            }
        }
        let min_pipe = MIN_PIPE_CWND_SEGMENTS * self.mss;
        self.cwnd = self.cwnd.max(min_pipe);
        if self.mode == BbrMode::ProbeRtt {
            self.cwnd = self.cwnd.min(min_pipe);
        }
        self.cwnd = self.cwnd.min(self.max_cwnd);
    }
}

impl CongestionControl for Bbr {
    fn kind(&self) -> CcKind {
        CcKind::Bbr
    }

    /// Linux's `bbr_init` after the handshake: RTprop from the handshake's RTT, and the first
    /// pacing rate `HIGH_GAIN * cwnd / SRTT` (`bbr_init_pacing_rate_from_rtt`).
    fn on_established(&mut self, now: Instant, rtt: Option<Duration>) {
        let Some(rtt) = rtt else { return };
        let rtt = rtt.as_micros().max(1);
        self.rtprop_us = Some(rtt);
        self.rtprop_stamp_us = now.as_micros();
        self.pacing_from_rtt = true;
        if self.btlbw == 0.0 {
            self.pacing_rate = HIGH_GAIN * self.cwnd as f64 / (rtt as f64 * 1e-6);
        }
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        if !self.pacing_from_rtt {
            if let Some(rtt) = ack.rtt.map(Duration::as_micros) {
                self.pacing_from_rtt = true;
                if self.btlbw == 0.0 {
                    self.pacing_rate =
                        HIGH_GAIN * self.init_cwnd as f64 / (rtt.max(1) as f64 * 1e-6);
                }
            }
        }
        self.update_btlbw(ack);
        if self.mode == BbrMode::ProbeBw && self.is_next_cycle_phase(ack) {
            self.advance_cycle_phase(ack.now.as_micros());
        }
        self.check_full_pipe(ack);
        self.check_drain(ack);
        self.update_rtprop(ack);
        self.check_probe_rtt(ack);
        self.set_pacing_rate();
        self.set_cwnd(ack);
        self.last_delivered = ack.delivered_bytes;
    }

    fn on_congestion_event(&mut self, _now: Instant, in_flight_bytes: u64) {
        self.save_cwnd();
        self.in_recovery = true;
        self.cwnd = in_flight_bytes
            .max(MIN_PIPE_CWND_SEGMENTS * self.mss)
            .min(self.max_cwnd);
        self.packet_conservation = true;
        // Packet conservation lasts one round, starting now.
        self.next_round_delivered = self.last_delivered;
    }

    fn on_recovery_exit(&mut self, _now: Instant) {
        self.in_recovery = false;
        self.packet_conservation = false;
        self.restore_cwnd();
    }

    fn on_retransmission_timeout(
        &mut self,
        _now: Instant,
        _in_flight_bytes: u64,
        _same_episode: bool,
    ) {
        self.save_cwnd();
        self.in_recovery = true;
        self.packet_conservation = false;
        self.cwnd = self.mss;
    }

    fn cwnd_bytes(&self) -> u64 {
        self.cwnd
    }

    fn pacing_rate_bytes_per_s(&self) -> Option<u64> {
        Some(self.pacing_rate.max(1.0) as u64)
    }

    fn app_limited_hint(&self) -> bool {
        self.mode == BbrMode::ProbeRtt
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windowed_max_expires_after_ten_rounds() {
        let mut f = WindowedMax::new(10);
        f.update(1, 100.0);
        f.update(2, 50.0);
        assert_eq!(f.get(), 100.0);
        f.update(10, 60.0);
        assert_eq!(f.get(), 100.0);
        f.update(11, 40.0);
        assert_eq!(f.get(), 60.0, "round 1 left the window [2, 11]");
        f.update(12, 70.0);
        assert_eq!(f.get(), 70.0);
    }

    #[test]
    fn gains() {
        assert!((HIGH_GAIN - 2.885).abs() < 1e-3);
        assert!((DRAIN_GAIN * HIGH_GAIN - 1.0).abs() < 1e-12);
        let mean: f64 = PACING_GAIN_CYCLE.iter().sum::<f64>() / 8.0;
        assert_eq!(mean, 1.0);
    }
}
