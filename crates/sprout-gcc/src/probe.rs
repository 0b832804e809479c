//! Start-up probing (libwebrtc's `ProbeController` and `ProbeBitrateEstimator`): at the start
//! the sender sends short clusters of packets at 3 and 6 times the start rate; the rate at which
//! a cluster arrives is a measure of the path's capacity, which raises the delay-based estimate
//! at once (AIMD alone, at 8% a second, takes 25 s from 300 kbit/s to 2 Mbit/s). While a probe
//! arrives at more than 70% of its rate, the next probes at twice what arrived.

use std::collections::{HashMap, VecDeque};

use sprout_core::time::{Duration, Instant};

use crate::feedback::PacketResult;

/// The first probes, times the start rate (libwebrtc's 3 and 6).
pub const INITIAL_SCALES: [f64; 2] = [3.0, 6.0];
/// A probe that arrives at more than this fraction of its rate is followed by another.
pub const FURTHER_FRACTION: f64 = 0.7;
/// The next probe's rate, times what the last one measured.
pub const FURTHER_SCALE: f64 = 2.0;
/// The fewest packets a cluster holds.
pub const MIN_PACKETS: u32 = 5;
/// The shortest a cluster lasts, µs (15 ms).
pub const MIN_DURATION_US: u64 = 15_000;
/// A measured receive rate under this fraction of the send rate shows the path's limit.
pub const LIMITED_FRACTION: f64 = 0.9;
/// What is taken of a limited receive rate (libwebrtc's 0.95).
pub const TARGET_UTILIZATION: f64 = 0.95;

/// A cluster of probe packets for the sender to pace out.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProbeCluster {
    /// Identifier, carried by each of its packets.
    pub id: u32,
    /// The pacing rate of its packets, bit/s.
    pub rate_bps: f64,
    /// Packets to send.
    pub packets: u32,
}

impl ProbeCluster {
    fn new(id: u32, rate_bps: f64, packet_bytes: u32) -> ProbeCluster {
        let in_duration = rate_bps * MIN_DURATION_US as f64 / 1e6 / (8.0 * packet_bytes as f64);
        ProbeCluster {
            id,
            rate_bps,
            packets: (in_duration.ceil() as u32).max(MIN_PACKETS),
        }
    }
}

/// Decides when to probe and at what rate.
#[derive(Clone, Debug)]
pub struct ProbeController {
    pending: VecDeque<ProbeCluster>,
    /// The last cluster requested, whose result decides the next.
    last: Option<ProbeCluster>,
    next_id: u32,
    max_bps: f64,
    packet_bytes: u32,
    stopped: bool,
}

impl ProbeController {
    /// Probes at 3 and 6 times `start_bps` (bit/s), with packets of `packet_bytes`, never
    /// above `max_bps`.
    pub fn new(start_bps: f64, max_bps: f64, packet_bytes: u32) -> ProbeController {
        let mut c = ProbeController {
            pending: VecDeque::new(),
            last: None,
            next_id: 0,
            max_bps,
            packet_bytes,
            stopped: false,
        };
        for s in INITIAL_SCALES {
            c.request(start_bps * s);
        }
        c
    }

    fn request(&mut self, rate_bps: f64) {
        let cluster =
            ProbeCluster::new(self.next_id, rate_bps.min(self.max_bps), self.packet_bytes);
        self.next_id += 1;
        self.pending.push_back(cluster);
        self.last = Some(cluster);
    }

    /// The next cluster to send, if any.
    pub fn poll(&mut self) -> Option<ProbeCluster> {
        if self.stopped {
            return None;
        }
        self.pending.pop_front()
    }

    /// Takes cluster `id`'s measured rate (bit/s): another probe at twice it if it came
    /// close to the probed rate.
    pub fn on_result(&mut self, id: u32, measured_bps: f64) {
        let Some(last) = self.last else {
            return;
        };
        if self.stopped || id != last.id || last.rate_bps >= self.max_bps {
            return;
        }
        if measured_bps > FURTHER_FRACTION * last.rate_bps {
            self.request(FURTHER_SCALE * measured_bps);
        } else {
            self.last = None;
        }
    }

    /// Stops probing (after over-use: the capacity is known).
    pub fn stop(&mut self) {
        self.stopped = true;
        self.pending.clear();
    }
}

/// What arrived of one cluster.
#[derive(Clone, Copy, Debug)]
struct ClusterStats {
    first_send: Instant,
    last_send: Instant,
    first_arrival: Instant,
    last_arrival: Instant,
    first_arrival_bytes: u32,
    last_send_bytes: u32,
    bytes: u64,
    received: u32,
    reported: bool,
}

/// Measures the rate at which each cluster's packets arrived.
#[derive(Clone, Debug, Default)]
pub struct ProbeEstimator {
    clusters: HashMap<u32, ClusterStats>,
}

impl ProbeEstimator {
    /// An estimator with no cluster yet.
    pub fn new() -> ProbeEstimator {
        ProbeEstimator::default()
    }

    /// Takes one packet's result; returns (cluster, rate in bit/s) once `min_packets` of the
    /// cluster have arrived: the lower of the send and receive rates (each leaving out the
    /// packet at the edge that took no time), or 95% of the receive rate if it is under 90%
    /// of the send rate.
    pub fn on_result(&mut self, r: &PacketResult, min_packets: u32) -> Option<(u32, f64)> {
        let (Some(id), Some(arrival)) = (r.sent.probe, r.arrival) else {
            return None;
        };
        let s = self.clusters.entry(id).or_insert(ClusterStats {
            first_send: r.sent.send_time,
            last_send: r.sent.send_time,
            first_arrival: arrival,
            last_arrival: arrival,
            first_arrival_bytes: r.sent.bytes,
            last_send_bytes: r.sent.bytes,
            bytes: 0,
            received: 0,
            reported: false,
        });
        s.bytes += u64::from(r.sent.bytes);
        s.received += 1;
        if r.sent.send_time >= s.last_send {
            s.last_send = r.sent.send_time;
            s.last_send_bytes = r.sent.bytes;
        }
        s.last_arrival = s.last_arrival.max(arrival);
        if s.reported || s.received < min_packets.max(2) {
            return None;
        }
        s.reported = true;
        let secs = |d: Duration| d.as_micros().max(1) as f64 / 1e6;
        let send_s = secs(s.last_send - s.first_send);
        let recv_s = secs(s.last_arrival - s.first_arrival);
        let send_bps = (s.bytes - u64::from(s.last_send_bytes)) as f64 * 8.0 / send_s;
        let recv_bps = (s.bytes - u64::from(s.first_arrival_bytes)) as f64 * 8.0 / recv_s;
        let rate = if recv_bps < LIMITED_FRACTION * send_bps {
            TARGET_UTILIZATION * recv_bps
        } else {
            send_bps.min(recv_bps)
        };
        Some((id, rate))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feedback::SentPacket;

    fn result(id: u32, i: u64, send_gap: u64, arrival_gap: u64) -> PacketResult {
        PacketResult {
            sent: SentPacket {
                seq: i,
                send_time: Instant::from_micros(i * send_gap),
                bytes: 1000,
                probe: Some(id),
            },
            arrival: Some(Instant::from_micros(50_000 + i * arrival_gap)),
        }
    }

    #[test]
    fn a_probe_through_a_slower_path_measures_the_path() {
        let mut e = ProbeEstimator::new();
        // Sent at 8 Mbit/s (1 ms a packet), arriving at 2 Mbit/s (4 ms a packet).
        let mut got = None;
        for i in 0..10 {
            got = got.or(e.on_result(&result(0, i, 1_000, 4_000), 10));
        }
        let (id, rate) = got.unwrap();
        assert_eq!(id, 0);
        assert!((rate - 0.95 * 2e6).abs() < 1.0, "{rate}");
    }

    #[test]
    fn a_probe_never_measures_more_than_it_sent() {
        let mut e = ProbeEstimator::new();
        // Sent at 2 Mbit/s, released by the link in a burst 0.1 ms apart.
        let mut got = None;
        for i in 0..10 {
            got = got.or(e.on_result(&result(1, i, 4_000, 100), 10));
        }
        assert!((got.unwrap().1 - 2e6).abs() < 1.0);
    }

    #[test]
    fn probing_goes_on_while_probes_succeed() {
        let mut c = ProbeController::new(300e3, 20e6, 1200);
        let a = c.poll().unwrap();
        let b = c.poll().unwrap();
        assert_eq!((a.rate_bps, b.rate_bps), (900e3, 1.8e6));
        assert!(c.poll().is_none());
        // The first cluster's result does not decide: only the last requested does.
        c.on_result(a.id, 900e3);
        assert!(c.poll().is_none());
        c.on_result(b.id, 1.7e6);
        let next = c.poll().unwrap();
        assert_eq!(next.rate_bps, 3.4e6);
        assert!(next.packets >= MIN_PACKETS);
        // A probe that arrives at under 70% ends probing.
        c.on_result(next.id, 2e6);
        assert!(c.poll().is_none());
    }
}
