//! The sending side of one direction ([`Sender`]): a window of packets in flight kept so
//! that the measured RTT stays between a low and a high mark, with probes through outages.

use serde::{Deserialize, Serialize};
use sprout_core::direction::Direction;
use sprout_core::time::{Duration, Instant};

use crate::wire::{AckInfo, DataHeader};

/// Default low RTT mark: the window grows while the RTT is below it (paper: 750 ms).
pub const DEFAULT_LOW_RTT: Duration = Duration::from_millis(750);
/// Default high RTT mark: the window shrinks while the RTT is above it (paper: 3000 ms).
pub const DEFAULT_HIGH_RTT: Duration = Duration::from_millis(3_000);
/// Default probe interval: with the window full, one packet is still sent this often.
pub const DEFAULT_PROBE_INTERVAL: Duration = Duration::from_millis(200);

/// The sender's parameters (serialized with their times in microseconds, under their
/// `_us` names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SenderConfig {
    /// Grow the window while the RTT is below this (paper: 750 ms).
    #[serde(rename = "low_rtt_us")]
    pub low_rtt: Duration,
    /// Shrink the window while the RTT is above this (paper: 3000 ms).
    #[serde(rename = "high_rtt_us")]
    pub high_rtt: Duration,
    /// Window at the start, packets.
    pub initial_window: u32,
    /// The window never shrinks below this, packets.
    pub min_window: u32,
    /// The window never grows above this, packets.
    pub max_window: u32,
    /// With the window full, one probe is sent when nothing was sent for this long.
    #[serde(rename = "probe_interval_us")]
    pub probe_interval: Duration,
}

impl Default for SenderConfig {
    /// 750 ms / 3000 ms, initial window 16, min 4, max 100 000, probes every 200 ms.
    fn default() -> Self {
        SenderConfig {
            low_rtt: DEFAULT_LOW_RTT,
            high_rtt: DEFAULT_HIGH_RTT,
            initial_window: 16,
            min_window: 4,
            max_window: 100_000,
            probe_interval: DEFAULT_PROBE_INTERVAL,
        }
    }
}

impl SenderConfig {
    /// The default configuration with these RTT marks and largest window (packets; the
    /// initial and smallest windows are lowered to it if above).
    pub fn with(low_rtt: Duration, high_rtt: Duration, max_window: u32) -> SenderConfig {
        let d = SenderConfig::default();
        let max_window = max_window.max(1);
        SenderConfig {
            low_rtt,
            high_rtt,
            initial_window: d.initial_window.min(max_window),
            min_window: d.min_window.min(max_window),
            max_window,
            ..d
        }
    }

    /// Checks the parameters: 0 < low < high, 1 <= min <= initial <= max, probe interval > 0.
    pub fn validate(&self) -> Result<(), SenderConfigError> {
        if self.low_rtt.is_zero() || self.low_rtt >= self.high_rtt {
            return Err(SenderConfigError::RttMarks {
                low: self.low_rtt,
                high: self.high_rtt,
            });
        }
        if self.min_window == 0
            || self.min_window > self.initial_window
            || self.initial_window > self.max_window
        {
            return Err(SenderConfigError::Windows {
                min: self.min_window,
                initial: self.initial_window,
                max: self.max_window,
            });
        }
        if self.probe_interval.is_zero() {
            return Err(SenderConfigError::ProbeInterval);
        }
        Ok(())
    }
}

/// Why a [`SenderConfig`] is not usable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SenderConfigError {
    /// The low RTT mark is 0 or not below the high one.
    #[error(
        "the low RTT mark ({} ms) must be positive and below the high one ({} ms)",
        .low.as_millis(),
        .high.as_millis()
    )]
    RttMarks {
        /// The low mark.
        low: Duration,
        /// The high mark.
        high: Duration,
    },
    /// The windows are out of order, or the smallest is 0.
    #[error("windows must satisfy 1 <= min ({min}) <= initial ({initial}) <= max ({max})")]
    Windows {
        /// The smallest window.
        min: u32,
        /// The initial window.
        initial: u32,
        /// The largest window.
        max: u32,
    },
    /// A probe interval of 0.
    #[error("the probe interval must be positive")]
    ProbeInterval,
}

/// A packet the sender has decided to send now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outgoing {
    /// Its sequence number.
    pub seq: u64,
    /// Its send time (the time given to [`Sender::poll_transmit`]).
    pub sent: Instant,
    /// Sent beyond the window, as a probe.
    pub probe: bool,
}

/// Counters of a sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SenderStats {
    /// Data packets sent (probes included).
    pub packets_sent: u64,
    /// Of which probes.
    pub probes: u64,
    /// Acks taken (with information).
    pub acks: u64,
    /// Acks ignored as impossible (a sequence number never sent, an echo from the future).
    pub bogus_acks: u64,
    /// Window decreases.
    pub decreases: u64,
    /// Packets the receiver reported received (latest ack).
    pub peer_received: u64,
    /// Packets the receiver reported missing (latest ack).
    pub peer_lost: u64,
}

/// The saturating sender of one direction (see the module documentation for the rule).
#[derive(Clone, Debug)]
pub struct Sender {
    cfg: SenderConfig,
    session: u64,
    dir: Direction,
    start: Instant,
    window: u64,
    next_seq: u64,
    /// Packets known to be done: highest acknowledged + 1.
    acked_through: u64,
    /// Send time of every packet in flight is not kept; the last send time drives probes.
    last_send: Option<Instant>,
    /// A decrease needs an ack of a sequence number at or above this.
    decrease_mark: u64,
    srtt: Option<Duration>,
    last_rtt: Option<Duration>,
    min_rtt: Option<Duration>,
    judged_rtt: Option<Duration>,
    stopped: bool,
    stats: SenderStats,
}

impl Sender {
    /// A sender of `dir`'s data for `session`, starting at `now`. The configuration should
    /// have passed [`SenderConfig::validate`]; out-of-range values are clamped.
    pub fn new(cfg: SenderConfig, session: u64, dir: Direction, now: Instant) -> Sender {
        let min = u64::from(cfg.min_window.max(1));
        let max = u64::from(cfg.max_window).max(min);
        let window = u64::from(cfg.initial_window).clamp(min, max);
        Sender {
            cfg,
            session,
            dir,
            start: now,
            window,
            next_seq: 0,
            acked_through: 0,
            last_send: None,
            decrease_mark: 0,
            srtt: None,
            last_rtt: None,
            min_rtt: None,
            judged_rtt: None,
            stopped: false,
            stats: SenderStats::default(),
        }
    }

    fn min_window(&self) -> u64 {
        u64::from(self.cfg.min_window.max(1))
    }

    fn max_window(&self) -> u64 {
        u64::from(self.cfg.max_window).max(self.min_window())
    }

    /// The window, packets.
    pub fn window(&self) -> u64 {
        self.window
    }

    /// Packets sent and not yet acknowledged (those below the highest acknowledged sequence
    /// number count as done, received or lost).
    pub fn in_flight(&self) -> u64 {
        self.next_seq.saturating_sub(self.acked_through)
    }

    /// Smoothed RTT (EWMA, gain 1/8); `None` before the first sample.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// The latest RTT sample.
    pub fn last_rtt(&self) -> Option<Duration> {
        self.last_rtt
    }

    /// The smallest RTT sample so far.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    /// The RTT the window rule last judged: the latest sample, or less when the ack said the
    /// forward queue held less than the sample's excess over the minimum RTT.
    pub fn judged_rtt(&self) -> Option<Duration> {
        self.judged_rtt
    }

    /// Counters.
    pub fn stats(&self) -> SenderStats {
        self.stats
    }

    /// The direction sent.
    pub fn dir(&self) -> Direction {
        self.dir
    }

    /// Stops sending (the recording is over).
    pub fn stop(&mut self) {
        self.stopped = true;
    }

    /// The next packet to send at `now`, if any: one while fewer than the window are in
    /// flight, else a probe if nothing was sent for [`SenderConfig::probe_interval`].
    /// The packet counts as sent; see [`unsend`](Sender::unsend).
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Outgoing> {
        if self.stopped {
            return None;
        }
        let probe = if self.in_flight() < self.window {
            false
        } else {
            match self.last_send {
                Some(t) if now < t + self.cfg.probe_interval => return None,
                _ => true,
            }
        };
        let out = Outgoing {
            seq: self.next_seq,
            sent: now,
            probe,
        };
        self.next_seq += 1;
        self.last_send = Some(now);
        self.stats.packets_sent += 1;
        if probe {
            self.stats.probes += 1;
        }
        Some(out)
    }

    /// Takes back the packet just returned by [`poll_transmit`](Sender::poll_transmit) (the
    /// socket would not take it). Only the latest packet can be taken back.
    pub fn unsend(&mut self, out: &Outgoing) {
        if out.seq + 1 == self.next_seq && self.next_seq > self.acked_through {
            self.next_seq -= 1;
            self.stats.packets_sent = self.stats.packets_sent.saturating_sub(1);
            if out.probe {
                self.stats.probes = self.stats.probes.saturating_sub(1);
            }
        }
    }

    /// The header of `out` as this sender sends it (with its window and RTT).
    pub fn data_header(&self, out: &Outgoing, ack: Option<AckInfo>) -> DataHeader {
        DataHeader {
            session: self.session,
            dir: self.dir,
            seq: out.seq,
            sent_us: out.sent.as_micros(),
            window: u32::try_from(self.window).unwrap_or(u32::MAX),
            rtt_ms: self
                .srtt
                .map_or(0, |r| u32::try_from(r.as_millis()).unwrap_or(u32::MAX)),
            probe: out.probe,
            ack,
        }
    }

    /// When the sender next wants to send without an ack (its next probe); `None` when
    /// stopped. Call [`poll_transmit`](Sender::poll_transmit) until it returns `None` first.
    pub fn next_timeout(&self) -> Option<Instant> {
        if self.stopped {
            return None;
        }
        if self.in_flight() < self.window {
            return Some(self.start);
        }
        Some(
            self.last_send
                .map_or(self.start, |t| t + self.cfg.probe_interval),
        )
    }

    /// Takes feedback at `now`. Impossible feedback (a sequence number not sent yet, an echo
    /// later than now, than the last packet sent or earlier than the start) is counted and
    /// ignored; the window grows by at most the packets the ack newly acknowledges.
    pub fn on_ack(&mut self, now: Instant, a: &AckInfo) {
        // The wire's echoed send time, on this sender's clock.
        let echo = Instant::from_micros(a.echo_sent_us);
        if a.highest_seq >= self.next_seq
            || echo > now
            || echo < self.start
            || self.last_send.is_none_or(|t| echo > t)
        {
            self.stats.bogus_acks += 1;
            return;
        }
        self.stats.acks += 1;
        // Growth counts packets both newly acknowledged and newly received (not the ones lost
        // in the gaps the ack jumps over).
        let delivered = a.received.saturating_sub(self.stats.peer_received);
        self.stats.peer_received = self.stats.peer_received.max(a.received);
        self.stats.peer_lost = a.lost;
        let through = a.highest_seq + 1;
        let newly = through.saturating_sub(self.acked_through).min(delivered);
        self.acked_through = self.acked_through.max(through);
        let rtt = (now - echo) - Duration::from_micros(u64::from(a.ack_delay_us));
        self.last_rtt = Some(rtt);
        self.srtt = Some(match self.srtt {
            None => rtt,
            Some(s) => (s * 7 + rtt) / 8,
        });
        let min_rtt = self.min_rtt.map_or(rtt, |m| m.min(rtt));
        self.min_rtt = Some(min_rtt);
        // The RTT the rule judges: the measured one, or less when the receiver saw less queue
        // on the way here than the RTT holds beyond its minimum (the rest is the feedback's
        // own queue, on a shared loaded path). Never more than the measured RTT.
        let rtt = rtt.min(min_rtt + Duration::from_micros(u64::from(a.queue_delay_us)));
        self.judged_rtt = Some(rtt);
        if rtt < self.cfg.low_rtt {
            self.window = self.window.saturating_add(newly).min(self.max_window());
        } else if rtt > self.cfg.high_rtt && a.highest_seq >= self.decrease_mark {
            let cut = (self.window / 8).max(1);
            self.window = self.window.saturating_sub(cut).max(self.min_window());
            self.decrease_mark = self.next_seq;
            self.stats.decreases += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(us: u64) -> Instant {
        Instant::from_micros(us)
    }
    use crate::test_support::{ack, S};

    fn sender(initial: u32) -> Sender {
        let cfg = SenderConfig {
            initial_window: initial,
            ..SenderConfig::default()
        };
        Sender::new(cfg, S, Direction::Down, at(0))
    }

    /// Sends everything the sender allows at `now`, returning how many.
    fn drain(s: &mut Sender, now: u64) -> u64 {
        let mut n = 0;
        while let Some(o) = s.poll_transmit(at(now)) {
            if o.probe {
                break;
            }
            n += 1;
        }
        n
    }

    #[test]
    fn window_grows_below_the_low_mark_holds_between_and_shrinks_above() {
        let mut s = sender(10);
        assert_eq!(drain(&mut s, 0), 10, "the initial window");
        // Packets 0-4 acknowledged after 100 ms (< 750 ms): window 10 + 5 = 15, in flight 5,
        // so 10 more go out (seq 10-19).
        s.on_ack(at(100_000), &ack(4, at(0)));
        assert_eq!(s.window(), 15);
        assert_eq!(s.in_flight(), 5);
        assert_eq!(drain(&mut s, 100_000), 10);
        // RTT 1000 ms (between the marks): window held, 5 more acknowledged, 5 more sent.
        s.on_ack(at(1_000_000), &ack(9, at(0)));
        assert_eq!(s.window(), 15);
        assert_eq!(drain(&mut s, 1_000_000), 5);
        // RTT 3100 ms (> 3000 ms), ack of seq 14 >= the decrease mark 0: 15 - 15/8 = 14, and
        // the mark moves to the next sequence number, 25.
        s.on_ack(at(3_200_000), &ack(14, at(100_000)));
        assert_eq!(s.window(), 14);
        assert_eq!(s.stats().decreases, 1);
        // Another high sample, of seq 19 < 25: no second decrease in the same round trip.
        s.on_ack(at(3_300_000), &ack(19, at(100_000)));
        assert_eq!(s.window(), 14);
        // In flight: 25 sent - 20 done = 5 < 14, so 9 more (seq 25-33).
        assert_eq!(drain(&mut s, 3_300_000), 9);
        // Ack of seq 25 with RTT 3.5 s: decrease again, 14 - 1 = 13 (14 / 8 = 1).
        s.on_ack(at(6_900_000), &ack(25, at(3_300_000)));
        assert_eq!(s.window(), 13);
        assert!(s.srtt().map(Duration::as_micros).is_some());
    }

    #[test]
    fn window_respects_its_bounds() {
        let cfg = SenderConfig {
            initial_window: 4,
            min_window: 4,
            max_window: 6,
            ..SenderConfig::default()
        };
        let mut s = Sender::new(cfg, S, Direction::Up, at(0));
        drain(&mut s, 0);
        s.on_ack(at(10_000), &ack(3, at(0)));
        assert_eq!(s.window(), 6, "4 + 4 capped at 6");
        drain(&mut s, 10_000);
        s.on_ack(at(4_000_000), &ack(9, at(10_000)));
        assert_eq!(s.window(), 5, "6 - max(1, 6/8)");
        drain(&mut s, 4_000_000);
        s.on_ack(at(8_000_000), &ack(14, at(4_000_000)));
        assert_eq!(s.window(), 4, "not below the minimum");
    }

    #[test]
    fn ack_delay_is_taken_off_the_rtt() {
        let mut s = sender(10);
        drain(&mut s, 0);
        let mut a = ack(0, at(0));
        a.ack_delay_us = 20_000;
        s.on_ack(at(800_000), &a);
        assert_eq!(s.last_rtt().map(Duration::as_micros), Some(780_000));
        assert_eq!(s.window(), 10, "780 ms is between the marks");
    }

    #[test]
    fn the_reverse_queue_is_left_out_of_the_judged_rtt() {
        let mut s = sender(10);
        drain(&mut s, 0);
        // A first sample of 40 ms sets the minimum (the window grows by the 2 packets).
        s.on_ack(at(40_000), &ack(1, at(0)));
        assert_eq!(
            (s.min_rtt().map(Duration::as_micros), s.window()),
            (Some(40_000), 12)
        );
        // 1.6 s measured, but the receiver saw only 300 ms of queue on the way: the other
        // 1.26 s were the feedback's own queue. Judged 40 + 300 = 340 ms < 750 ms: grow by 2.
        let mut a = ack(3, at(0));
        a.queue_delay_us = 300_000;
        s.on_ack(at(1_600_000), &a);
        assert_eq!(s.last_rtt().map(Duration::as_micros), Some(1_600_000));
        assert_eq!(s.judged_rtt().map(Duration::as_micros), Some(340_000));
        assert_eq!(s.window(), 14);
        // A queue delay above the measured excess is not believed: judged = measured, 1 s.
        drain(&mut s, 600_000);
        let mut a = ack(5, at(600_000));
        a.queue_delay_us = 5_000_000;
        s.on_ack(at(1_600_000), &a);
        assert_eq!(s.judged_rtt().map(Duration::as_micros), Some(1_000_000));
        assert_eq!(s.window(), 14);
    }

    #[test]
    fn impossible_acks_are_ignored() {
        let mut s = sender(10);
        drain(&mut s, 1_000);
        s.on_ack(at(2_000), &ack(10, at(1_000))); // seq 10 was never sent
        s.on_ack(at(2_000), &ack(3, at(5_000))); // echo from the future
        s.on_ack(at(2_000), &ack(3, at(1_500))); // echo after the last packet sent (at 1 ms)
        s.on_ack(at(2_000), &ack(3, at(0))); // echo before the start? start is 0: fine
        assert_eq!(s.stats().bogus_acks, 3);
        assert_eq!(s.stats().acks, 1);
    }

    #[test]
    fn a_full_window_probes_and_recovers_after_an_outage() {
        let mut s = sender(10);
        assert_eq!(drain(&mut s, 0), 10);
        // Window full: nothing until the probe interval has passed since the last send.
        assert_eq!(s.poll_transmit(at(100_000)), None);
        assert_eq!(s.next_timeout().map(Instant::as_micros), Some(200_000));
        let p = s.poll_transmit(at(200_000)).unwrap();
        assert!(p.probe);
        assert_eq!(p.seq, 10);
        assert_eq!(s.poll_transmit(at(300_000)), None);
        // A 20 s outage: a probe every 200 ms, never more.
        let mut probes = 1;
        let mut t = 200_000;
        while t < 20_000_000 {
            t += 10_000;
            if let Some(p) = s.poll_transmit(at(t)) {
                assert!(p.probe);
                probes += 1;
            }
        }
        assert_eq!(probes, 100);
        // After the outage the queue drains: the first ack (seq 5, sent at 0) shows a 20.1 s
        // RTT, one decrease (10 - 1 = 9); the sender still waits, 104 in flight.
        let mut a = ack(5, at(0));
        a.received = 6;
        s.on_ack(at(20_100_000), &a);
        assert_eq!((s.window(), s.in_flight()), (9, 104));
        assert_eq!(drain(&mut s, 20_100_000), 0);
        // Everything else was lost but the last probe (seq 109, sent at 20 s): 150 ms RTT, the
        // window grows by the one packet delivered (not by the 103 lost) and opens: 10 go out.
        let mut a = ack(109, at(20_000_000));
        a.received = 7;
        s.on_ack(at(20_150_000), &a);
        assert_eq!((s.window(), s.in_flight()), (10, 0));
        assert_eq!(drain(&mut s, 20_150_000), 10);
    }

    #[test]
    fn unsend_takes_back_the_last_packet() {
        let mut s = sender(2);
        let a = s.poll_transmit(at(0)).unwrap();
        let b = s.poll_transmit(at(0)).unwrap();
        s.unsend(&a); // not the latest: ignored
        s.unsend(&b);
        assert_eq!(s.stats().packets_sent, 1);
        assert_eq!(s.poll_transmit(at(0)).unwrap().seq, 1);
    }
}
