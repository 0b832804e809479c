//! What a recording of one direction saw ([`Summary`]): duration, rates, gaps, outages,
//! loss, reordering, in text and JSON.

use serde::{Deserialize, Serialize};
use sprout_core::direction::Direction;
use sprout_core::time::Duration;

/// A gap between arrivals at least this long counts as an outage in the summary, ms.
pub const OUTAGE_MS: u64 = 1000;

/// What a recording of one direction saw. Rates count [`RecorderConfig::line_bytes`] (1500) per
/// recorded packet, as a mahimahi trace line does.
///
/// [`RecorderConfig::line_bytes`]: crate::RecorderConfig::line_bytes
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Summary {
    /// "up" or "down".
    pub direction: String,
    /// Time 0 of the recording on the recording side's clock (µs; `CLOCK_MONOTONIC` for
    /// `sprout saturator`), so that two recordings on one host can be lined up.
    pub start_clock_us: u64,
    /// Length of the recording, s.
    pub duration_s: f64,
    /// Data packets recorded (trace lines).
    pub packets: u64,
    /// Mean rate over the recording, kbit/s.
    pub mean_kbps: f64,
    /// Highest rate over 1 s bins (from the start), kbit/s.
    pub peak_kbps: f64,
    /// Start of that bin, s.
    pub peak_at_s: f64,
    /// Longest time without an arrival (from the start to the first arrival, between arrivals,
    /// from the last to the end), ms.
    pub longest_gap_ms: u64,
    /// Where it began, s since the start.
    pub longest_gap_at_s: f64,
    /// Gaps of at least [`OUTAGE_MS`] between arrivals (or at either end).
    pub outages: u64,
    /// Their total length, s.
    pub outage_s: f64,
    /// Highest sequence number received.
    pub highest_seq: Option<u64>,
    /// Distinct sequence numbers received.
    pub unique: u64,
    /// Packets missing below the highest sequence number.
    pub lost: u64,
    /// lost / (highest + 1).
    pub loss_rate: f64,
    /// Packets that arrived below the highest sequence number, new.
    pub reordered: u64,
    /// Packets that had arrived before.
    pub duplicates: u64,
    /// Datagrams of another session or direction, or from an unknown peer (ignored).
    pub strays: u64,
    /// Datagrams that were not valid (ignored).
    pub malformed: u64,
    /// Data packets after the end (ignored).
    pub late: u64,
    /// Data packets beyond the recording limit (counted, not recorded).
    pub unrecorded: u64,
    /// Seconds in which some packet arrived with under 50 ms of queueing delay: the queue may
    /// have run empty then (the first second, while the window opens, usually is one).
    pub low_backlog_seconds: u64,
}

impl Summary {
    /// The timing figures of a recording from its sorted arrivals (ms since the start), its
    /// length and the bytes per line; the sequence counters are left at 0.
    pub fn from_arrivals(
        dir: Direction,
        sorted_ms: &[u32],
        duration: Duration,
        line_bytes: u32,
    ) -> Summary {
        let duration_ms = duration.as_millis();
        let line_bits = u64::from(line_bytes) * 8;
        let mut s = Summary {
            direction: dir.as_str().to_string(),
            duration_s: duration.as_secs_f64(),
            packets: sorted_ms.len() as u64,
            ..Summary::default()
        };
        if !duration.is_zero() {
            s.mean_kbps = (s.packets * line_bits) as f64 / duration.as_millis_f64();
        }
        // 1 s bins.
        let mut best = (0u64, 0u64);
        let mut i = 0;
        while i < sorted_ms.len() {
            let bin = u64::from(sorted_ms[i]) / 1000;
            let mut n = 0;
            while i < sorted_ms.len() && u64::from(sorted_ms[i]) / 1000 == bin {
                n += 1;
                i += 1;
            }
            if n > best.1 {
                best = (bin, n);
            }
        }
        s.peak_kbps = (best.1 * line_bits) as f64 / 1000.0;
        s.peak_at_s = best.0 as f64;
        // Gaps, including both ends.
        let mut consider = |from: u64, to: u64| {
            let gap = to.saturating_sub(from);
            if gap > s.longest_gap_ms {
                s.longest_gap_ms = gap;
                s.longest_gap_at_s = from as f64 / 1000.0;
            }
            if gap >= OUTAGE_MS {
                s.outages += 1;
                s.outage_s += gap as f64 / 1000.0;
            }
        };
        let mut prev = 0u64;
        for &t in sorted_ms {
            consider(prev, u64::from(t));
            prev = u64::from(t);
        }
        consider(prev, duration_ms.max(prev));
        s
    }

    /// One line of text: duration, packets, mean and peak rate, longest gap, outages, loss,
    /// reordering, duplicates, strays.
    pub fn text(&self) -> String {
        format!(
            "{}: {:.1} s, {} packets, mean {:.0} kbit/s, peak {:.0} kbit/s (1 s bins, at {:.0} s), \
             longest gap {} ms at {:.1} s, {} outage(s) >= 1 s ({:.1} s), lost {} ({:.2}%), \
             reordered {}, duplicates {}, strays {}, malformed {}, low-backlog seconds {}",
            self.direction,
            self.duration_s,
            self.packets,
            self.mean_kbps,
            self.peak_kbps,
            self.peak_at_s,
            self.longest_gap_ms,
            self.longest_gap_at_s,
            self.outages,
            self.outage_s,
            self.lost,
            100.0 * self.loss_rate,
            self.reordered,
            self.duplicates,
            self.strays,
            self.malformed,
            self.low_backlog_seconds
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_hand_made_arrivals() {
        // 3 s recording: 2 packets in second 0, 4 in second 1, none in 2.0-3.0 (a 1.5 s gap
        // from 1.5 s to the end at 3.0 s).
        let ms = [100, 400, 1000, 1100, 1200, 1500];
        let s = Summary::from_arrivals(Direction::Up, &ms, Duration::from_secs(3), 1500);
        assert_eq!(s.packets, 6);
        assert!(
            (s.mean_kbps - 6.0 * 12.0 / 3.0).abs() < 1e-9,
            "{}",
            s.mean_kbps
        );
        assert!((s.peak_kbps - 48.0).abs() < 1e-9);
        assert_eq!(s.peak_at_s, 1.0);
        assert_eq!(s.longest_gap_ms, 1500);
        assert_eq!(s.longest_gap_at_s, 1.5);
        assert_eq!((s.outages, s.outage_s), (1, 1.5));
        let empty = Summary::from_arrivals(Direction::Up, &[], Duration::from_millis(2_500), 1500);
        assert_eq!((empty.longest_gap_ms, empty.outages), (2500, 1));
    }
}
