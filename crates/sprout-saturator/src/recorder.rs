//! The recording side of one direction ([`Recorder`]): when each data packet arrived, what
//! was lost, reordered or duplicated, and the feedback ([`AckInfo`]) for the sender.

use sprout_core::direction::Direction;
use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use sprout_core::time::{Duration, Instant};

use crate::summary::Summary;
use crate::wire::{AckInfo, DataHeader, DEFAULT_MTU_BYTES, DEFAULT_PAYLOAD_BYTES};

/// A data packet whose sequence number is this far above the highest one seen is not believed
/// (counted as malformed), so that one bogus packet cannot claim millions of losses.
pub const MAX_SEQ_JUMP: u64 = 1 << 24;
/// Sequence numbers remembered for duplicate detection (a sliding window below the highest).
pub const SEEN_WINDOW: u64 = 1 << 20;
/// Default limit of recorded arrivals (4 bytes each): about 4 hours at 1400 packets/s.
/// Arrivals beyond it are counted ([`Summary::unrecorded`]), not recorded.
pub const DEFAULT_MAX_ARRIVALS: usize = 20_000_000;
/// Seconds of per-second bookkeeping kept (about 12 days); later seconds are not tracked.
pub const MAX_SECONDS: usize = 1 << 20;
/// A second in which some packet arrived with less queueing delay than this (its one-way delay
/// minus the smallest of the recording) counts as possibly short of backlog, µs.
pub const LOW_BACKLOG_US: i64 = 50_000;

/// The recorder's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecorderConfig {
    /// UDP payload of a data packet, bytes: other sizes are malformed.
    pub payload_bytes: u32,
    /// Bytes each recorded line stands for (rates in the summary), bytes (the IP packet).
    pub line_bytes: u32,
    /// An ack leaves at most this long after the first arrival it covers (serialized in µs,
    /// as `ack_interval_us`).
    #[serde(rename = "ack_interval_us")]
    pub ack_interval: Duration,
    /// An ack leaves at once when this many arrivals are not acknowledged yet.
    pub ack_every: u32,
    /// Most arrivals recorded (later ones are counted, not recorded).
    pub max_arrivals: usize,
}

impl Default for RecorderConfig {
    /// 1472-byte payloads (1500-byte lines), acks every 20 ms or 16 packets, 20 M arrivals.
    fn default() -> Self {
        RecorderConfig {
            payload_bytes: DEFAULT_PAYLOAD_BYTES,
            line_bytes: DEFAULT_MTU_BYTES,
            ack_interval: Duration::from_millis(20),
            ack_every: 16,
            max_arrivals: DEFAULT_MAX_ARRIVALS,
        }
    }
}

/// What the recorder made of a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A new packet, in order (possibly after a gap).
    InOrder,
    /// A new packet below the highest sequence number seen.
    Reordered,
    /// A packet seen before (still recorded: it crossed the link).
    Duplicate,
    /// Not this recording's (another session or direction); ignored.
    Stray,
    /// Broken (wrong size, impossible sequence number); ignored.
    Malformed,
    /// Arrived after the recording ended; ignored.
    Late,
}

/// Counters of a recorder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecorderCounters {
    /// Data packets recorded (one trace line each; duplicates included).
    pub packets: u64,
    /// Distinct sequence numbers received.
    pub unique: u64,
    /// Packets missing below the highest sequence number (gaps not filled later).
    pub lost: u64,
    /// Packets that arrived below the highest sequence number without having arrived before.
    pub reordered: u64,
    /// Packets that had arrived before.
    pub duplicates: u64,
    /// Datagrams of another session or direction (or from an unknown peer), ignored.
    pub strays: u64,
    /// Datagrams that are not valid Saturator messages, or data of the wrong size or with an
    /// impossible sequence number, ignored.
    pub malformed: u64,
    /// Data packets after the end of the recording, ignored.
    pub late: u64,
    /// Data packets beyond [`RecorderConfig::max_arrivals`], counted but not recorded.
    pub unrecorded: u64,
}

/// The recording of one direction.
#[derive(Clone, Debug)]
pub struct Recorder {
    cfg: RecorderConfig,
    session: u64,
    dir: Direction,
    start: Instant,
    end: Option<Instant>,
    arrivals_ms: Vec<u32>,
    highest: Option<u64>,
    seen: Vec<u64>,
    /// Smallest one-way delay (arrival minus send stamp, two clocks) per second of recording.
    owd_min: Vec<i64>,
    counters: RecorderCounters,
    /// Ack state: arrivals not acknowledged yet, the first one's time, and the echo.
    unacked: u32,
    first_unacked: Instant,
    echo_sent_us: u64,
    echo_arrival: Instant,
    echo_queue_delay_us: u32,
    /// Smallest one-way delay of the recording (two clocks), µs.
    min_owd: Option<i64>,
    last_arrival: Option<Instant>,
}

impl Recorder {
    /// A recording of `dir`'s data of `session`, whose time 0 is `start`.
    pub fn new(cfg: RecorderConfig, session: u64, dir: Direction, start: Instant) -> Recorder {
        Recorder {
            cfg,
            session,
            dir,
            start,
            end: None,
            arrivals_ms: Vec::new(),
            highest: None,
            seen: vec![0; (SEEN_WINDOW / 64) as usize],
            owd_min: Vec::new(),
            counters: RecorderCounters::default(),
            unacked: 0,
            first_unacked: Instant::ZERO,
            echo_sent_us: 0,
            echo_arrival: Instant::ZERO,
            echo_queue_delay_us: 0,
            min_owd: None,
            last_arrival: None,
        }
    }

    /// The direction recorded.
    pub fn dir(&self) -> Direction {
        self.dir
    }

    /// Time 0 of the recording (on the caller's clock).
    pub fn start(&self) -> Instant {
        self.start
    }

    /// When the recording ended, if it has.
    pub fn end(&self) -> Option<Instant> {
        self.end
    }

    /// Counters so far.
    pub fn counters(&self) -> RecorderCounters {
        self.counters
    }

    /// Highest sequence number received.
    pub fn highest_seq(&self) -> Option<u64> {
        self.highest
    }

    /// The recorded arrivals, ms since the start, in arrival order.
    pub fn arrivals_ms(&self) -> &[u32] {
        &self.arrivals_ms
    }

    /// Counts a datagram that is not this recording's (another session, an unknown peer).
    pub fn on_stray(&mut self) {
        self.counters.strays = self.counters.strays.saturating_add(1);
    }

    /// Counts a datagram that is not a valid message.
    pub fn on_malformed(&mut self) {
        self.counters.malformed = self.counters.malformed.saturating_add(1);
    }

    fn bit(seq: u64) -> (usize, u64) {
        let i = seq % SEEN_WINDOW;
        ((i / 64) as usize, 1u64 << (i % 64))
    }

    /// Takes a data packet of `len` bytes (UDP payload) that arrived at `now`.
    pub fn on_data(&mut self, now: Instant, h: &DataHeader, len: usize) -> Verdict {
        // The one-way delay compares the arrival with the wire's send stamp, in µs of two
        // clocks (it may be negative).
        let now_us = now.as_micros();
        if h.session != self.session || h.dir != self.dir {
            self.on_stray();
            return Verdict::Stray;
        }
        if len != self.cfg.payload_bytes as usize
            || self.highest.map_or(h.seq >= MAX_SEQ_JUMP, |hi| {
                h.seq > hi.saturating_add(MAX_SEQ_JUMP)
            })
        {
            self.on_malformed();
            return Verdict::Malformed;
        }
        if self.end.is_some() {
            self.counters.late = self.counters.late.saturating_add(1);
            return Verdict::Late;
        }
        let owd = (now_us as i128 - h.sent_us as i128).clamp(i64::MIN as i128 + 1, i64::MAX as i128)
            as i64;
        let min_owd = self.min_owd.map_or(owd, |m| m.min(owd));
        self.min_owd = Some(min_owd);
        let queue_delay_us = u32::try_from(owd.saturating_sub(min_owd)).unwrap_or(u32::MAX);
        let verdict = match self.highest {
            Some(hi) if h.seq <= hi => {
                if hi - h.seq >= SEEN_WINDOW {
                    // Too old to tell: an old packet arriving very late counts as reordered.
                    self.counters.reordered += 1;
                    Verdict::Reordered
                } else {
                    let (w, b) = Self::bit(h.seq);
                    if self.seen[w] & b != 0 {
                        self.counters.duplicates += 1;
                        Verdict::Duplicate
                    } else {
                        self.seen[w] |= b;
                        self.counters.unique += 1;
                        self.counters.reordered += 1;
                        self.counters.lost = self.counters.lost.saturating_sub(1);
                        Verdict::Reordered
                    }
                }
            }
            _ => {
                let from = self.highest.map_or(0, |hi| hi + 1);
                let gap = h.seq - from;
                self.counters.lost = self.counters.lost.saturating_add(gap);
                // Clear the bits of the sequence numbers entering the window (at most all).
                if gap + 1 >= SEEN_WINDOW {
                    self.seen.iter_mut().for_each(|w| *w = 0);
                } else {
                    for s in from..=h.seq {
                        let (w, b) = Self::bit(s);
                        self.seen[w] &= !b;
                    }
                }
                let (w, b) = Self::bit(h.seq);
                self.seen[w] |= b;
                self.highest = Some(h.seq);
                self.counters.unique += 1;
                self.echo_sent_us = h.sent_us;
                self.echo_arrival = now;
                self.echo_queue_delay_us = queue_delay_us;
                Verdict::InOrder
            }
        };
        self.counters.packets += 1;
        if self.arrivals_ms.len() < self.cfg.max_arrivals {
            let ms = (now - self.start).as_millis();
            self.arrivals_ms.push(u32::try_from(ms).unwrap_or(u32::MAX));
        } else {
            self.counters.unrecorded += 1;
        }
        let second = ((now - self.start).as_micros() / 1_000_000) as usize;
        if second < MAX_SECONDS {
            if self.owd_min.len() <= second {
                self.owd_min.resize(second + 1, i64::MAX);
            }
            self.owd_min[second] = self.owd_min[second].min(owd);
        }
        if self.unacked == 0 {
            self.first_unacked = now;
        }
        self.unacked = self.unacked.saturating_add(1);
        self.last_arrival = Some(now);
        verdict
    }

    /// The feedback as of `now` (`None` before the first packet).
    pub fn ack_info(&self, now: Instant) -> Option<AckInfo> {
        let highest_seq = self.highest?;
        Some(AckInfo {
            highest_seq,
            echo_sent_us: self.echo_sent_us,
            ack_delay_us: u32::try_from((now - self.echo_arrival).as_micros()).unwrap_or(u32::MAX),
            received: self.counters.packets,
            lost: self.counters.lost,
            queue_delay_us: self.echo_queue_delay_us,
        })
    }

    /// An ack if one is due at `now`: [`RecorderConfig::ack_every`] arrivals are waiting, or
    /// the first waiting one arrived [`RecorderConfig::ack_interval`] ago.
    pub fn poll_ack(&mut self, now: Instant) -> Option<AckInfo> {
        if self.unacked == 0 {
            return None;
        }
        let due = self.unacked >= self.cfg.ack_every.max(1)
            || now >= self.first_unacked + self.cfg.ack_interval;
        if !due {
            return None;
        }
        self.unacked = 0;
        self.ack_info(now)
    }

    /// When the next ack is due if no more packets arrive.
    pub fn next_ack(&self) -> Option<Instant> {
        (self.unacked > 0).then(|| self.first_unacked + self.cfg.ack_interval)
    }

    /// Ends the recording at `now`: later data packets are ignored (counted as late).
    pub fn finish(&mut self, now: Instant) {
        if self.end.is_none() {
            self.end = Some(now.max(self.start));
            self.unacked = 0;
        }
    }

    /// Ends a finished recording earlier, at `at` (if that is before its end and not before
    /// its start): the summary's duration, gaps and outages stop there. For a recording whose
    /// other end went silent at `at` (nothing arrived after it), so that the silence is not
    /// written down as an outage of the link.
    pub fn cut(&mut self, at: Instant) {
        let at = at.max(self.start);
        if self.end.is_none_or(|e| at < e) {
            self.end = Some(at);
            self.unacked = 0;
        }
    }

    /// The recorded arrivals sorted (ms since the start), as the trace file holds them.
    pub fn sorted_arrivals_ms(&self) -> Vec<u32> {
        let mut v = self.arrivals_ms.clone();
        v.sort_unstable();
        v
    }

    /// Writes the mahimahi trace: one line per recorded packet, its arrival ms, sorted.
    pub fn write_trace(&self, w: &mut impl Write) -> io::Result<()> {
        write_trace(&self.sorted_arrivals_ms(), w)
    }

    /// Seconds of the recording in which some packet arrived with less than
    /// [`LOW_BACKLOG_US`] of queueing delay (one-way delay minus the recording's smallest):
    /// the sender may not have kept the queue busy all that second.
    pub fn low_backlog_seconds(&self) -> u64 {
        let Some(&min) = self.owd_min.iter().min() else {
            return 0;
        };
        self.owd_min
            .iter()
            .filter(|&&m| m != i64::MAX && m.saturating_sub(min) < LOW_BACKLOG_US)
            .count() as u64
    }

    /// The summary as of `now` (or the end, if the recording ended).
    pub fn summary(&self, now: Instant) -> Summary {
        let end = self.end.unwrap_or(now).max(self.start);
        let mut s = Summary::from_arrivals(
            self.dir,
            &self.sorted_arrivals_ms(),
            end - self.start,
            self.cfg.line_bytes,
        );
        s.start_clock_us = self.start.as_micros();
        s.highest_seq = self.highest;
        s.unique = self.counters.unique;
        s.lost = self.counters.lost;
        let expected = self.highest.map_or(0, |h| h + 1);
        s.loss_rate = if expected > 0 {
            self.counters.lost as f64 / expected as f64
        } else {
            0.0
        };
        s.reordered = self.counters.reordered;
        s.duplicates = self.counters.duplicates;
        s.strays = self.counters.strays;
        s.malformed = self.counters.malformed;
        s.late = self.counters.late;
        s.unrecorded = self.counters.unrecorded;
        s.low_backlog_seconds = self.low_backlog_seconds();
        s
    }
}

/// Writes arrival times (ms, sorted) as a mahimahi trace, one per line.
pub fn write_trace(arrivals_ms: &[u32], w: &mut impl Write) -> io::Result<()> {
    let mut out = io::BufWriter::new(w);
    for ms in arrivals_ms {
        writeln!(out, "{ms}")?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(us: u64) -> Instant {
        Instant::from_micros(us)
    }
    use crate::test_support::{data, S};

    fn recorder() -> Recorder {
        let cfg = RecorderConfig {
            payload_bytes: 200,
            ..RecorderConfig::default()
        };
        Recorder::new(cfg, S, Direction::Down, at(1_000_000))
    }

    #[test]
    fn recorder_counts_loss_reordering_and_duplicates() {
        let mut r = recorder();
        // Sequence 0 1 2 5 3 3 7 9 4: gaps {3,4} at 5, {6} at 7, {8} at 9; 3 and 4 arrive late
        // (reordered, no longer lost); 3 again is a duplicate. Lost at the end: 6 and 8.
        let seqs = [0, 1, 2, 5, 3, 3, 7, 9, 4];
        let mut verdicts = Vec::new();
        for (i, &q) in seqs.iter().enumerate() {
            let now = 1_000_000 + 1_000 * i as u64;
            verdicts.push(r.on_data(at(now), &data(q, at(now - 500)), 200));
        }
        use Verdict::*;
        assert_eq!(
            verdicts,
            [
                InOrder, InOrder, InOrder, InOrder, Reordered, Duplicate, InOrder, InOrder,
                Reordered
            ]
        );
        let c = r.counters();
        assert_eq!(c.packets, 9, "every arrival is a trace line");
        assert_eq!(c.unique, 8);
        assert_eq!(c.lost, 2);
        assert_eq!(c.reordered, 2);
        assert_eq!(c.duplicates, 1);
        assert_eq!(r.arrivals_ms(), &[0, 1, 2, 3, 4, 5, 6, 7, 8]);
        let s = r.summary(at(1_010_000));
        assert_eq!(s.highest_seq, Some(9));
        assert!((s.loss_rate - 0.2).abs() < 1e-12, "2 of 10");
    }

    #[test]
    fn recorder_ignores_strays_malformed_and_late() {
        let mut r = recorder();
        let mut other = data(0, at(0));
        other.session = S + 1;
        assert_eq!(r.on_data(at(1_000_000), &other, 200), Verdict::Stray);
        other = data(0, at(0));
        other.dir = Direction::Up;
        assert_eq!(r.on_data(at(1_000_000), &other, 200), Verdict::Stray);
        assert_eq!(
            r.on_data(at(1_000_000), &data(0, at(0)), 199),
            Verdict::Malformed
        );
        assert_eq!(
            r.on_data(at(1_000_000), &data(MAX_SEQ_JUMP, at(0)), 200),
            Verdict::Malformed
        );
        r.on_malformed();
        r.on_stray();
        assert_eq!(
            r.on_data(at(1_002_000), &data(0, at(0)), 200),
            Verdict::InOrder
        );
        r.finish(at(1_003_000));
        assert_eq!(
            r.on_data(at(1_004_000), &data(1, at(0)), 200),
            Verdict::Late
        );
        let c = r.counters();
        assert_eq!(
            (c.strays, c.malformed, c.packets, c.late, c.lost),
            (3, 3, 1, 1, 0)
        );
        assert_eq!(r.arrivals_ms(), &[2]);
    }

    #[test]
    fn duplicates_are_forgotten_after_the_window_but_never_counted_as_loss() {
        let mut r = recorder();
        r.on_data(at(1_000_000), &data(5, at(0)), 200);
        r.on_data(at(1_000_000), &data(5 + SEEN_WINDOW + 3, at(0)), 200);
        assert_eq!(r.counters().lost, 5 + SEEN_WINDOW + 2);
        // 5 is now beyond the window: counted as reordered, the loss is left alone.
        assert_eq!(
            r.on_data(at(1_000_000), &data(5, at(0)), 200),
            Verdict::Reordered
        );
        // 10 is within the window: a late arrival that fills a gap.
        assert_eq!(
            r.on_data(at(1_000_000), &data(10, at(0)), 200),
            Verdict::Reordered
        );
        assert_eq!(r.counters().lost, 5 + SEEN_WINDOW + 1);
    }

    #[test]
    fn acks_leave_every_16_packets_or_after_20_ms() {
        let mut r = recorder();
        assert_eq!(r.poll_ack(at(1_000_000)), None);
        for i in 0..15 {
            r.on_data(at(1_000_000 + i * 100), &data(i, at(500 + i)), 200);
        }
        assert_eq!(r.poll_ack(at(1_001_500)), None);
        assert_eq!(r.next_ack().map(Instant::as_micros), Some(1_020_000));
        r.on_data(at(1_001_600), &data(15, at(900)), 200);
        let a = r.poll_ack(at(1_001_700)).unwrap();
        assert_eq!(a.highest_seq, 15);
        assert_eq!(a.echo_sent_us, 900);
        assert_eq!(a.ack_delay_us, 100);
        assert_eq!(a.received, 16);
        assert_eq!(r.poll_ack(at(1_001_700)), None);
        r.on_data(at(1_005_000), &data(16, at(1_000)), 200);
        assert_eq!(r.poll_ack(at(1_024_999)), None);
        let a = r.poll_ack(at(1_025_000)).unwrap();
        assert_eq!((a.highest_seq, a.ack_delay_us), (16, 20_000));
    }

    #[test]
    fn acks_carry_the_forward_queueing_delay() {
        let mut r = recorder();
        // One-way delays (two clocks, offset 5 s): 5.020 s, then 5.520 s, then 5.010 s.
        r.on_data(
            at(1_000_000),
            &data(0, at(10_000_000 + 1_000_000 - 5_020_000)),
            200,
        );
        assert_eq!(r.ack_info(at(1_000_000)).unwrap().queue_delay_us, 0);
        r.on_data(
            at(2_000_000),
            &data(1, at(10_000_000 + 2_000_000 - 5_520_000)),
            200,
        );
        assert_eq!(r.ack_info(at(2_000_000)).unwrap().queue_delay_us, 500_000);
        r.on_data(
            at(3_000_000),
            &data(2, at(10_000_000 + 3_000_000 - 5_010_000)),
            200,
        );
        assert_eq!(
            r.ack_info(at(3_000_000)).unwrap().queue_delay_us,
            0,
            "new minimum"
        );
    }

    #[test]
    fn low_backlog_seconds_find_an_empty_queue() {
        let mut r = recorder();
        // Second 0: one-way delay 20 ms (the minimum, queue empty); second 1: 800 ms.
        r.on_data(at(1_100_000), &data(0, at(1_080_000)), 200);
        r.on_data(at(2_500_000), &data(1, at(1_700_000)), 200);
        r.on_data(at(3_500_000), &data(2, at(3_440_000)), 200);
        // Seconds 0 and 2 had a packet within 50 ms of the minimum.
        assert_eq!(r.low_backlog_seconds(), 2);
    }
}
