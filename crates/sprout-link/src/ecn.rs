//! Explicit Congestion Notification (RFC 3168) in the link: the codepoint a packet carries,
//! why the link marked one CE, and the real IP header's ECN field as the emulator reads and
//! rewrites it.
//!
//! The link marks only when asked ([`LinkConfig::ecn`](crate::LinkConfig::ecn),
//! [`LinkConfig::l4s_step_us`](crate::LinkConfig::l4s_step_us)); packets sent without a
//! codepoint ([`Link::send`](crate::Link::send), [`Link::send_flow`](crate::Link::send_flow))
//! are Not-ECT and are dropped as before.
//!
//! - **AQM marking** (`ecn`): where CoDel, FQ-CoDel's per-flow CoDel or PIE would drop an
//!   ECN-capable packet (ECT(0) or ECT(1)), it marks it CE instead and it goes on, as Linux's
//!   `codel`, `fq_codel` and `pie` do with `ecn`. CoDel's state advances as for a drop (its
//!   count and next drop time). PIE marks only while its drop probability is at most 10%
//!   (RFC 8033 section 5.1's `mark_ecnth`, Linux's `MAX_PROB / 10`) and drops above it. A
//!   Not-ECT packet is dropped; a buffer's overflow always drops.
//! - **The L4S step** (`l4s_step_us`): an ECT(1) packet taken from any queue for
//!   transmission after waiting longer than the step (its sojourn time strictly above it) is
//!   marked CE: RFC 9332's shallow step threshold for the L queue, applied in the one queue
//!   the link has (no dual queue, no coupling to a classic AQM), as Linux's `ce_threshold`
//!   with `ce_threshold_selector 0x1/0x1` does in `codel` and `fq_codel`. It needs no `ecn`.
//!
//! [`ip_ecn`] reads the codepoint of a real IPv4 or IPv6 packet and [`set_ip_ce`] rewrites
//! it to CE: the IPv4 TOS byte with its header checksum updated incrementally (RFC 1624,
//! equation 3), or the IPv6 traffic class (which no checksum covers). Both check every read
//! against the bytes present and never panic.

use serde::{Deserialize, Serialize};

/// The ECN field of the IP header (RFC 3168 section 5), in its two bits' values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum Ecn {
    /// `00`: not ECN-capable transport.
    #[default]
    NotEct = 0,
    /// `01`: ECN-capable, ECT(1) (L4S traffic, RFC 9331).
    Ect1 = 1,
    /// `10`: ECN-capable, ECT(0) (classic ECN).
    Ect0 = 2,
    /// `11`: congestion experienced.
    Ce = 3,
}

impl Ecn {
    /// The codepoint of two bits' value (`bits & 3`).
    pub fn from_bits(bits: u8) -> Ecn {
        match bits & 3 {
            0 => Ecn::NotEct,
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }

    /// The two bits.
    pub fn bits(self) -> u8 {
        self as u8
    }

    /// Whether the packet is ECN-capable and not yet marked: ECT(0) or ECT(1).
    #[inline]
    pub fn is_ect(self) -> bool {
        matches!(self, Ecn::Ect0 | Ecn::Ect1)
    }
}

/// Why the link marked a packet CE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MarkReason {
    /// The AQM (CoDel, FQ-CoDel's CoDel, PIE) marked it instead of dropping it.
    Aqm,
    /// The L4S step threshold marked an ECT(1) packet.
    Step,
}

impl MarkReason {
    /// The word the mm-link log writes: `aqm` or `step`.
    pub fn as_str(self) -> &'static str {
        match self {
            MarkReason::Aqm => "aqm",
            MarkReason::Step => "step",
        }
    }

    /// The reason a log's word names.
    pub fn from_word(word: &str) -> Option<MarkReason> {
        [MarkReason::Aqm, MarkReason::Step]
            .into_iter()
            .find(|r| r.as_str() == word)
    }
}

/// What a queue marks, and the marks it made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Marking {
    /// The AQM marks ECT packets instead of dropping them.
    pub ecn: bool,
    /// The L4S step threshold (µs), if any.
    pub step_us: Option<u64>,
    /// Packets and bytes the AQM marked.
    pub aqm: (u64, u64),
    /// Packets and bytes the step marked.
    pub step: (u64, u64),
}

/// A packet's send time and ECN state in one `u64`, so that the link's packet stays 24
/// bytes: the time (µs) in the low 56 bits (up to about 2283 years; later times saturate
/// there), the codepoint in bits 56-57 and why the link marked it CE in bits 58-59 (0 not
/// marked, 1 the AQM, 2 the step).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SentEcn(u64);

/// The time bits of [`SentEcn`].
const SENT_TIME: u64 = (1 << 56) - 1;
/// The lowest bit of [`SentEcn`]'s ECN state.
const SENT_ECN_SHIFT: u32 = 56;

impl SentEcn {
    /// Sent at `sent` with codepoint `ecn`, not marked.
    #[inline]
    pub(crate) fn new(sent: sprout_core::time::Instant, ecn: Ecn) -> Self {
        SentEcn(sent.as_micros().min(SENT_TIME) | (u64::from(ecn.bits()) << SENT_ECN_SHIFT))
    }

    /// When it was sent.
    #[inline]
    pub(crate) fn sent(self) -> sprout_core::time::Instant {
        sprout_core::time::Instant::from_micros(self.0 & SENT_TIME)
    }

    /// Its codepoint, CE once the link marked it.
    #[inline]
    pub(crate) fn ecn(self) -> Ecn {
        Ecn::from_bits((self.0 >> SENT_ECN_SHIFT) as u8)
    }

    /// Why the link marked it CE, if it did.
    #[inline]
    pub(crate) fn mark(self) -> Option<MarkReason> {
        match (self.0 >> (SENT_ECN_SHIFT + 2)) & 3 {
            1 => Some(MarkReason::Aqm),
            2 => Some(MarkReason::Step),
            _ => None,
        }
    }

    /// Its codepoint and mark together ([`ecn`](Self::ecn), [`mark`](Self::mark)), quick
    /// for an unmarked packet.
    #[inline]
    pub(crate) fn ecn_mark(self) -> (Ecn, Option<MarkReason>) {
        let state = self.0 >> SENT_ECN_SHIFT;
        if state < 4 {
            (Ecn::from_bits(state as u8), None)
        } else {
            (self.ecn(), self.mark())
        }
    }

    /// Marks it CE for `why`.
    #[inline]
    fn set_ce(&mut self, why: MarkReason) {
        let reason: u64 = match why {
            MarkReason::Aqm => 1,
            MarkReason::Step => 2,
        };
        self.0 =
            (self.0 & SENT_TIME) | ((u64::from(Ecn::Ce.bits()) | reason << 2) << SENT_ECN_SHIFT);
    }
}

impl Marking {
    /// Marks `packet` (of `bytes`) CE for `why` if it is ECN-capable; whether it did.
    #[inline]
    pub(crate) fn mark(&mut self, packet: &mut SentEcn, bytes: u32, why: MarkReason) -> bool {
        if !packet.ecn().is_ect() {
            return false;
        }
        packet.set_ce(why);
        let c = match why {
            MarkReason::Aqm => &mut self.aqm,
            MarkReason::Step => &mut self.step,
        };
        c.0 += 1;
        c.1 += u64::from(bytes);
        true
    }

    /// The AQM's mark instead of a drop: only with `ecn` on and an ECN-capable packet.
    #[inline]
    pub(crate) fn aqm_mark(&mut self, packet: &mut SentEcn, bytes: u32) -> bool {
        self.ecn && self.mark(packet, bytes, MarkReason::Aqm)
    }

    /// The L4S step at dequeue: an ECT(1) packet whose sojourn (µs) is above the step.
    #[inline]
    pub(crate) fn step_mark(&mut self, packet: &mut SentEcn, bytes: u32, sojourn_us: u64) {
        if let Some(step) = self.step_us {
            if packet.ecn() == Ecn::Ect1 && sojourn_us > step {
                self.mark(packet, bytes, MarkReason::Step);
            }
        }
    }
}

/// The ECN codepoint of `packet`, an IPv4 or IPv6 packet as a TUN device reads it; Not-ECT
/// for anything else or a header cut short.
pub fn ip_ecn(packet: &[u8]) -> Ecn {
    match packet.first().map(|b| b >> 4) {
        Some(4) if ipv4_header_len(packet).is_some() => Ecn::from_bits(packet[1]),
        Some(6) if packet.len() >= 40 => Ecn::from_bits(packet[1] >> 4),
        _ => Ecn::NotEct,
    }
}

/// The length of `packet`'s IPv4 header (bytes), if it is whole (IHL at least 5).
fn ipv4_header_len(packet: &[u8]) -> Option<usize> {
    let ihl = usize::from(packet.first()? & 0x0f) * 4;
    (ihl >= 20 && packet.len() >= ihl).then_some(ihl)
}

/// One's complement sum of two 16-bit words.
fn ones_add(a: u16, b: u16) -> u16 {
    let s = u32::from(a) + u32::from(b);
    ((s & 0xffff) + (s >> 16)) as u16
}

/// Rewrites the ECN field of `packet` (IPv4 or IPv6, as [`ip_ecn`] reads it) to CE if it is
/// ECT(0) or ECT(1); whether it did. The IPv4 header checksum is updated as RFC 1624's
/// equation 3 says, `HC' = ~(~HC + ~m + m')`, `m` being the 16-bit word holding the TOS byte;
/// a packet that is Not-ECT, already CE, not IP or cut short is left as it is.
pub fn set_ip_ce(packet: &mut [u8]) -> bool {
    if !ip_ecn(packet).is_ect() {
        return false;
    }
    if packet[0] >> 4 == 6 {
        packet[1] |= 0x30;
        return true;
    }
    let old = u16::from_be_bytes([packet[0], packet[1]]);
    packet[1] |= 0x03;
    let new = u16::from_be_bytes([packet[0], packet[1]]);
    let hc = u16::from_be_bytes([packet[10], packet[11]]);
    let sum = !ones_add(ones_add(!hc, !old), new);
    packet[10..12].copy_from_slice(&sum.to_be_bytes());
    true
}

/// The one's complement checksum of an IPv4 header as it stands (0 when the header's
/// checksum field is right, as RFC 1071 verifies it): for tests and the fuzz target; `None`
/// when `packet` has no whole IPv4 header.
pub fn ipv4_header_checksum(packet: &[u8]) -> Option<u16> {
    if packet.first()? >> 4 != 4 {
        return None;
    }
    let len = ipv4_header_len(packet)?;
    let sum = packet[..len]
        .chunks_exact(2)
        .fold(0u16, |s, w| ones_add(s, u16::from_be_bytes([w[0], w[1]])));
    Some(!sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real IPv4 TCP header (20 bytes, from a capture), TOS `tos`, with its checksum right.
    fn ipv4(tos: u8) -> Vec<u8> {
        let mut p = vec![
            0x45, tos, 0x00, 0x3c, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x06, 0x00, 0x00, 0xac, 0x10,
            0x0a, 0x63, 0xac, 0x10, 0x0a, 0x0c,
        ];
        p.extend_from_slice(&[0u8; 40]);
        let c = ipv4_header_checksum(&p).unwrap();
        p[10..12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(ipv4_header_checksum(&p), Some(0));
        p
    }

    #[test]
    fn ipv4_ce_rewrite_keeps_the_checksum_right() {
        // The RFC 1071 example's header: 0xb1e6 is its checksum with TOS 0.
        let p = ipv4(0);
        assert_eq!(u16::from_be_bytes([p[10], p[11]]), 0xb1e6);
        for (tos, ecn) in [(0x02, Ecn::Ect0), (0x01, Ecn::Ect1), (0xb9, Ecn::Ect1)] {
            let mut p = ipv4(tos);
            assert_eq!(ip_ecn(&p), ecn);
            assert!(set_ip_ce(&mut p));
            assert_eq!(ip_ecn(&p), Ecn::Ce);
            assert_eq!(p[1], tos | 3, "the DSCP is kept");
            assert_eq!(ipv4_header_checksum(&p), Some(0), "tos {tos:#x}");
            assert_eq!(p, {
                let mut q = ipv4(tos | 3);
                q.truncate(p.len());
                q
            });
        }
    }

    #[test]
    fn not_ect_and_ce_are_left_alone() {
        for tos in [0x00, 0x03, 0xb8] {
            let mut p = ipv4(tos);
            let before = p.clone();
            assert!(!set_ip_ce(&mut p));
            assert_eq!(p, before);
        }
    }

    #[test]
    fn ipv6_traffic_class_rewrite() {
        // Version 6, traffic class 0x02 (ECT(0)), flow label 0x12345.
        let mut p = vec![0x60, 0x21, 0x23, 0x45, 0, 20, 6, 64];
        p.extend_from_slice(&[0u8; 52]);
        assert_eq!(ip_ecn(&p), Ecn::Ect0);
        assert!(set_ip_ce(&mut p));
        assert_eq!(&p[..4], &[0x60, 0x31, 0x23, 0x45]);
        assert_eq!(ip_ecn(&p), Ecn::Ce);
        p[1] = 0x11; // ECT(1)
        assert_eq!(ip_ecn(&p), Ecn::Ect1);
    }

    #[test]
    fn malformed_packets_never_panic() {
        let cases: [&[u8]; 7] = [
            &[],
            &[0x45],
            &[0x45, 0x02, 0, 20, 0, 0, 0, 0, 0, 6, 0],
            &[
                0x4f, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            ],
            &[
                0x41, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            ],
            &[0x60, 0x20, 0, 0],
            &[0x12, 0x02, 0, 0],
        ];
        for c in cases {
            let mut p = c.to_vec();
            assert_eq!(ip_ecn(&p), Ecn::NotEct, "{c:?}");
            assert!(!set_ip_ce(&mut p));
            assert_eq!(p, c);
        }
        assert_eq!(ipv4_header_checksum(&[0x45]), None);
    }
}
