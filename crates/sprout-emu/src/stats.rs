//! Counters and latency histograms of the emulator, per direction.

use sprout_link::LinkStats;

/// A histogram of non-negative integer values (here microseconds) with exact buckets below
/// 1024 and 512 buckets per power of two above (relative error under 0.2%).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Histogram {
    counts: Vec<u64>,
    count: u64,
    sum: u128,
    max: u64,
}

const EXACT: u64 = 1024;
const SUB: u64 = 512;

fn bucket(v: u64) -> usize {
    if v < EXACT {
        return v as usize;
    }
    let e = 63 - u64::from(v.leading_zeros()); // >= 10
    let shift = e - 9;
    (EXACT + (e - 10) * SUB + ((v >> shift) - SUB)) as usize
}

fn bucket_low(i: usize) -> u64 {
    let i = i as u64;
    if i < EXACT {
        return i;
    }
    let e = (i - EXACT) / SUB + 10;
    let m = (i - EXACT) % SUB + SUB;
    m << (e - 9)
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; bucket(u64::MAX) + 1],
            count: 0,
            sum: 0,
            max: 0,
        }
    }
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one value.
    pub fn record(&mut self, v: u64) {
        self.counts[bucket(v)] += 1;
        self.count += 1;
        self.sum += u128::from(v);
        self.max = self.max.max(v);
    }

    /// Number of values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Largest value recorded (0 if none).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Mean of the values recorded (`None` if none).
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64)
    }

    /// The `q`-quantile (`q` in `[0, 1]`, e.g. 0.99): the smallest bucket value at or below
    /// which at least `q` of the values lie (exact below 1024, within 0.2% above; never above
    /// the maximum). `None` if nothing was recorded.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(bucket_low(i).min(self.max));
            }
        }
        Some(self.max)
    }
}

/// What one direction of the emulator did: the link model's counters plus the emulator's own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DirectionStats {
    /// The link model's counters (packets and bytes sent, enqueued, dropped, lost, delivered;
    /// opportunities and bytes offered).
    pub link: LinkStats,
    /// Packets read from the TUN device on this direction's entry side.
    pub packets_read: u64,
    /// Packets the model delivered that were written to the exit TUN device.
    pub packets_written: u64,
    /// Delivered packets whose write to the exit TUN device failed (they are lost).
    pub write_errors: u64,
}

impl DirectionStats {
    /// Share of the link's offered capacity that carried delivered bytes
    /// (`bytes_delivered / bytes_offered`, 0 when nothing was offered).
    pub fn capacity_used(&self) -> f64 {
        if self.link.bytes_offered == 0 {
            0.0
        } else {
            self.link.bytes_delivered as f64 / self.link.bytes_offered as f64
        }
    }
}

/// Counters of both directions, as of the emulator's last loop iteration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EmulatorStats {
    /// Mobile → outside (packets read from the mobile namespace's TUN device).
    pub uplink: DirectionStats,
    /// Outside → mobile.
    pub downlink: DirectionStats,
}

/// One packet's passage through the emulator, recorded when
/// [`Emulator::start_recording`](crate::Emulator::start_recording) asks for it.
/// `_ns` times are `CLOCK_MONOTONIC` nanoseconds since the links' time 0
/// ([`Emulator::epoch_ns`](crate::Emulator::epoch_ns)); `_us` times are the link model's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliveryRecord {
    /// IP packet size (bytes).
    pub bytes: u32,
    /// When the emulator read it from the entry TUN device (ns since time 0).
    pub read_ns: u64,
    /// When the model says it was sent (µs; `read_ns / 1000`).
    pub sent_us: u64,
    /// When it joined the model's queue (µs; `sent_us` + propagation delay).
    pub enqueued_us: u64,
    /// When the model delivered it (µs).
    pub delivered_us: u64,
    /// When the emulator wrote it to the exit TUN device (ns since time 0).
    pub written_ns: u64,
}

/// Everything one direction did over the emulator's life, returned by
/// [`Emulator::stop`](crate::Emulator::stop).
#[derive(Debug, Clone)]
pub struct DirectionReport {
    /// Final counters.
    pub stats: DirectionStats,
    /// The emulator's own lateness per delivered packet (µs): when it wrote the packet to the
    /// exit TUN device minus the delivery time the model gave it.
    pub lateness_us: Histogram,
    /// The model's queueing delay per delivered packet (µs): delivery minus queue entry; for a
    /// lone packet, the wait for the next trace opportunity.
    pub queue_delay_us: Histogram,
    /// Per-packet records, if asked for (at most the number asked for, the first ones).
    pub deliveries: Vec<DeliveryRecord>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_round_trip() {
        for v in [0, 1, 1023, 1024, 1025, 5000, 123_456, 1 << 40, u64::MAX] {
            let b = bucket(v);
            assert!(bucket_low(b) <= v, "{v}");
            assert!(v - bucket_low(b) <= v / 500, "{v}");
            if b + 1 < bucket(u64::MAX) {
                assert!(bucket_low(b + 1) > v, "{v}");
            }
        }
    }

    #[test]
    fn quantiles() {
        let mut h = Histogram::new();
        for v in 1..=100 {
            h.record(v);
        }
        assert_eq!(h.quantile(0.5), Some(50));
        assert_eq!(h.quantile(0.99), Some(99));
        assert_eq!(h.quantile(1.0), Some(100));
        assert_eq!(h.max(), 100);
        assert_eq!(Histogram::new().quantile(0.5), None);
    }
}
