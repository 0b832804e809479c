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
/// Four flags in one byte (read with [`ect`](Self::ect) and the like, set with
/// [`set_ect`](Self::set_ect) and the like), so that a segment stays 72 bytes.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct SegmentEcn(u8);

impl SegmentEcn {
    const ECT: u8 = 1 << 0;
    const CE: u8 = 1 << 1;
    const ECE: u8 = 1 << 2;
    const CWR: u8 = 1 << 3;

    /// ECT(0) in the IP header: sent ECN-capable (new data, once ECN is negotiated).
    #[inline]
    pub fn ect(self) -> bool {
        self.0 & Self::ECT != 0
    }

    /// Sets or clears [`ect`](Self::ect).
    #[inline]
    pub fn set_ect(&mut self, on: bool) {
        self.0 = (self.0 & !Self::ECT) | if on { Self::ECT } else { 0 };
    }

    /// CE in the IP header: a router marked it (the network sets this, e.g. the simulator
    /// when its link marked the packet).
    #[inline]
    pub fn ce(self) -> bool {
        self.0 & Self::CE != 0
    }

    /// Sets or clears [`ce`](Self::ce).
    #[inline]
    pub fn set_ce(&mut self, on: bool) {
        self.0 = (self.0 & !Self::CE) | if on { Self::CE } else { 0 };
    }

    /// The TCP header's ECE flag: on a SYN (with CWR), asks for ECN; on a SYN-ACK (without
    /// CWR), accepts it; on an ACK, echoes a CE mark until the sender's CWR.
    #[inline]
    pub fn ece(self) -> bool {
        self.0 & Self::ECE != 0
    }

    /// Sets or clears [`ece`](Self::ece).
    #[inline]
    pub fn set_ece(&mut self, on: bool) {
        self.0 = (self.0 & !Self::ECE) | if on { Self::ECE } else { 0 };
    }

    /// The TCP header's CWR flag: on a SYN, asks for ECN; on data, the sender reduced its
    /// window.
    #[inline]
    pub fn cwr(self) -> bool {
        self.0 & Self::CWR != 0
    }

    /// Whether [`ce`](Self::ce) or [`cwr`](Self::cwr) is set: what a receiver answers.
    #[inline]
    pub fn ce_or_cwr(self) -> bool {
        self.0 & (Self::CE | Self::CWR) != 0
    }

    /// Sets or clears [`cwr`](Self::cwr).
    #[inline]
    pub fn set_cwr(&mut self, on: bool) {
        self.0 = (self.0 & !Self::CWR) | if on { Self::CWR } else { 0 };
    }
}

impl std::fmt::Debug for SegmentEcn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentEcn")
            .field("ect", &self.ect())
            .field("ce", &self.ce())
            .field("ece", &self.ece())
            .field("cwr", &self.cwr())
            .finish()
    }
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
