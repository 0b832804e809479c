//! Transport-wide feedback: the sender numbers every packet and remembers when it sent it and
//! how big it was; the receiver reports, every few tens of milliseconds, the arrival time of
//! every packet it received in a range of sequence numbers (as RTCP transport-wide congestion
//! control feedback does); the sender matches the two into [`PacketResult`]s.

use std::collections::VecDeque;

use sprout_core::time::Instant;

/// A packet as the sender sent it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SentPacket {
    /// Transport-wide sequence number (consecutive from 0).
    pub seq: u64,
    /// Send time.
    pub send_time: Instant,
    /// Size on the wire, bytes.
    pub bytes: u32,
    /// The probe cluster it belongs to, if any.
    pub probe: Option<u32>,
}

/// A packet's fate as feedback told it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PacketResult {
    /// The packet as sent.
    pub sent: SentPacket,
    /// Arrival time at the receiver; `None` if lost.
    pub arrival: Option<Instant>,
}

/// One feedback message: every sequence number in `first_seq..=last_seq` not listed in
/// `arrivals` was lost.
#[derive(Clone, Debug, PartialEq)]
pub struct Feedback {
    /// When the receiver sent it (on the receiver's clock, which the simulation shares).
    pub sent: Instant,
    /// First sequence number covered.
    pub first_seq: u64,
    /// Last sequence number covered.
    pub last_seq: u64,
    /// (sequence number, arrival time) of each packet received, in order.
    pub arrivals: Vec<(u64, Instant)>,
}

impl Feedback {
    /// Its size on the wire, bytes: IPv4/UDP (28), an RTCP feedback header (20) and 2 bytes a
    /// covered packet (status and receive delta).
    pub fn wire_bytes(&self) -> u32 {
        let covered = self.last_seq.saturating_sub(self.first_seq) + 1;
        (48 + 2 * covered).min(u64::from(u32::MAX)) as u32
    }
}

/// The sender's record of packets not yet reported on.
#[derive(Clone, Debug, Default)]
pub struct SendHistory {
    packets: VecDeque<SentPacket>,
}

impl SendHistory {
    /// An empty history.
    pub fn new() -> SendHistory {
        SendHistory::default()
    }

    /// Records a packet just sent (sequence numbers consecutive).
    pub fn on_sent(&mut self, packet: SentPacket) {
        self.packets.push_back(packet);
    }

    /// Packets recorded and not yet reported on.
    pub fn len(&self) -> usize {
        self.packets.len()
    }

    /// Whether no packet waits for a report.
    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    /// The results of the packets `feedback` covers, in sequence order; packets before its
    /// range (whose feedback was lost) are forgotten.
    pub fn resolve(&mut self, feedback: &Feedback) -> Vec<PacketResult> {
        let mut arrivals = feedback.arrivals.iter().peekable();
        let mut out = Vec::new();
        while let Some(p) = self.packets.front().copied() {
            if p.seq > feedback.last_seq {
                break;
            }
            self.packets.pop_front();
            if p.seq < feedback.first_seq {
                continue;
            }
            while arrivals.next_if(|a| a.0 < p.seq).is_some() {}
            let arrival = arrivals.next_if(|a| a.0 == p.seq).map(|a| a.1);
            out.push(PacketResult { sent: p, arrival });
        }
        out
    }
}

/// The receiver's side: collects arrivals and builds feedback.
#[derive(Clone, Debug, Default)]
pub struct FeedbackBuilder {
    /// The first sequence number the next feedback covers.
    next_seq: u64,
    arrivals: Vec<(u64, Instant)>,
}

impl FeedbackBuilder {
    /// A receiver that has reported nothing yet.
    pub fn new() -> FeedbackBuilder {
        FeedbackBuilder::default()
    }

    /// Records packet `seq` arriving at `arrival` (one already reported is ignored).
    pub fn on_packet(&mut self, seq: u64, arrival: Instant) {
        let last = self.arrivals.last().map(|a| a.0);
        if seq >= self.next_seq && last.is_none_or(|l| seq > l) {
            self.arrivals.push((seq, arrival));
        }
    }

    /// The feedback to send at `now`, covering everything up to the highest sequence
    /// number received; `None` if nothing arrived since the last.
    pub fn poll(&mut self, now: Instant) -> Option<Feedback> {
        let last_seq = self.arrivals.last()?.0;
        let fb = Feedback {
            sent: now,
            first_seq: self.next_seq,
            last_seq,
            arrivals: std::mem::take(&mut self.arrivals),
        };
        self.next_seq = last_seq + 1;
        Some(fb)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(seq: u64) -> SentPacket {
        SentPacket {
            seq,
            send_time: Instant::from_micros(seq * 1000),
            bytes: 1200,
            probe: None,
        }
    }

    #[test]
    fn gaps_in_the_reported_range_are_losses() {
        let mut h = SendHistory::new();
        let mut r = FeedbackBuilder::new();
        for s in 0..6 {
            h.on_sent(sent(s));
        }
        for s in [0, 1, 3, 5] {
            r.on_packet(s, Instant::from_micros(50_000 + s));
        }
        let fb = r.poll(Instant::from_micros(60_000)).unwrap();
        assert_eq!((fb.first_seq, fb.last_seq), (0, 5));
        let res = h.resolve(&fb);
        let lost: Vec<u64> = res
            .iter()
            .filter(|p| p.arrival.is_none())
            .map(|p| p.sent.seq)
            .collect();
        assert_eq!(lost, vec![2, 4]);
        assert_eq!(res[3].arrival, Some(Instant::from_micros(50_003)));
        assert!(h.is_empty());
        assert!(r.poll(Instant::from_micros(70_000)).is_none());
    }

    #[test]
    fn a_lost_feedback_forgets_its_packets() {
        let mut h = SendHistory::new();
        let mut r = FeedbackBuilder::new();
        for s in 0..4 {
            h.on_sent(sent(s));
            r.on_packet(s, Instant::from_micros(s));
        }
        let first = r.poll(Instant::from_micros(10)).unwrap();
        h.on_sent(sent(4));
        r.on_packet(4, Instant::from_micros(4));
        let second = r.poll(Instant::from_micros(20)).unwrap();
        drop(first);
        let res = h.resolve(&second);
        assert_eq!(res.len(), 1);
        assert_eq!(res[0].sent.seq, 4);
        assert_eq!(second.wire_bytes(), 50);
    }
}
