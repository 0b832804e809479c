//! The segment carried between endpoints. It is never serialized to bytes: a simulator carries
//! it as an opaque payload and charges the link [`Segment::wire_bytes`].

use sprout_core::time::{Duration, Instant};

/// Header bytes charged per segment on the wire (bytes): 20 (IPv4) + 20 (TCP) + 12 (the
/// timestamp option, RFC 7323, padded).
pub const HEADER_BYTES: u32 = 52;

/// Header bytes of a SYN or SYN-ACK on the wire (bytes): 20 (IPv4) + 20 (TCP) + 20 of options
/// as Linux sends them (MSS 4, SACK-permitted 2, timestamps 10, window scale 3, one NOP).
pub const SYN_HEADER_BYTES: u32 = 60;

/// A TCP-like segment: a SYN or SYN-ACK of the handshake, data, a pure ACK, or both.
///
/// Sequence numbers count payload bytes from 0: the SYN does not take a sequence number (there
/// is no FIN either), and a SYN-ACK acknowledges 0.
#[derive(Clone, Debug, PartialEq)]
pub struct Segment {
    /// Sequence number of the first payload byte (bytes). For a pure ACK: the sender's next
    /// sequence number (informational only).
    pub seq: u64,
    /// Payload length (bytes); 0 for a pure ACK.
    pub len: u32,
    /// Cumulative acknowledgment: the next byte the sender of this segment expects from its
    /// peer (bytes), if it carries one.
    pub ack: Option<u64>,
    /// Sender's timestamp when the segment left it (TSval-like).
    pub sent: Instant,
    /// Timestamp echoed from the peer segment being acknowledged (TSecr-like, RFC 7323
    /// `TS.Recent` rules).
    pub echo: Option<Instant>,
    /// One-way delay of the most recent data segment the ACK's sender received, measured by it
    /// as arrival time minus that segment's `sent` (the simulator's clocks are shared).
    /// LEDBAT's delay signal.
    pub one_way_delay: Option<Duration>,
    /// Whether this data segment (or SYN, or SYN-ACK) is a retransmission.
    pub retransmission: bool,
    /// The SYN flag: a SYN (no `ack`) opens a connection, a SYN-ACK (with `ack`) answers it.
    pub syn: bool,
    /// ECN (RFC 3168): the IP header's codepoint and the TCP header's ECE and CWR flags.
    pub ecn: SegmentEcn,
}

/// A segment's ECN bits (RFC 3168): what its sender set, and whether the network marked it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SegmentEcn {
    /// ECT(0) in the IP header: sent ECN-capable (new data, once ECN is negotiated).
    pub ect: bool,
    /// CE in the IP header: a router marked it (the network sets this, e.g. the simulator
    /// when its link marked the packet).
    pub ce: bool,
    /// The TCP header's ECE flag: on a SYN (with CWR), asks for ECN; on a SYN-ACK (without
    /// CWR), accepts it; on an ACK, echoes a CE mark until the sender's CWR.
    pub ece: bool,
    /// The TCP header's CWR flag: on a SYN, asks for ECN; on data, the sender reduced its
    /// window.
    pub cwr: bool,
}

impl Segment {
    /// Size on the wire (bytes): payload plus [`HEADER_BYTES`] ([`SYN_HEADER_BYTES`] for a SYN
    /// or SYN-ACK). A full 1448-byte segment is 1500.
    pub fn wire_bytes(&self) -> u32 {
        self.len
            + if self.syn {
                SYN_HEADER_BYTES
            } else {
                HEADER_BYTES
            }
    }

    /// Whether the segment carries payload.
    pub fn is_data(&self) -> bool {
        self.len > 0
    }

    /// End of the payload (exclusive): `seq + len` (bytes).
    pub fn end(&self) -> u64 {
        self.seq + u64::from(self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_segment_is_one_mtu() {
        let s = Segment {
            seq: 0,
            len: 1448,
            ack: None,
            sent: Instant::ZERO,
            echo: None,
            one_way_delay: None,
            retransmission: false,
            syn: false,
            ecn: crate::segment::SegmentEcn::default(),
        };
        assert_eq!(s.wire_bytes(), 1500);
        assert!(s.is_data());
        assert_eq!(s.end(), 1448);
        let ack = Segment { len: 0, ..s };
        assert_eq!(ack.wire_bytes(), 52);
        assert!(!ack.is_data());
        let syn = Segment { syn: true, ..ack };
        assert_eq!(syn.wire_bytes(), 60);
        assert!(!syn.is_data());
    }
}
