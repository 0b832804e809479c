//! What the TUN device hands over with its offloads on (`IFF_VNET_HDR`, TSO): each read is a
//! `virtio_net_hdr` and a packet, perhaps a TCP super-packet of up to 64 KB that the kernel
//! left to segment (TSO), perhaps a packet whose checksum it left to finish. [`split`] cuts
//! one read into the IP packets the engine takes, as the kernel would have: the headers
//! copied, the IPv4 length, identification and header checksum, the IPv6 payload length,
//! the TCP sequence number, flags (FIN and PSH on the last segment only, CWR on the first)
//! and checksum set for each. One read then replaces up to 45 (a 64 KB super-packet of
//! 1,400-byte segments), and the kernel's TCP crosses its stack once per super-packet.

use sprout_os::tun::VNET_HDR_LEN;

/// `virtio_net_hdr.flags`: the checksum is to be finished (from `csum_start`, stored at
/// `csum_start + csum_offset`; the field holds the pseudo-header's sum).
const F_NEEDS_CSUM: u8 = 1;
/// `virtio_net_hdr.gso_type`: a plain packet.
const GSO_NONE: u8 = 0;
/// `virtio_net_hdr.gso_type`: TCP over IPv4 to segment.
const GSO_TCPV4: u8 = 1;
/// `virtio_net_hdr.gso_type`: TCP over IPv6 to segment.
const GSO_TCPV6: u8 = 4;
/// `virtio_net_hdr.gso_type` bit: the segments carry ECN (CWR on the first only).
const GSO_ECN: u8 = 0x80;

/// Why a read could not be cut into packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(super) enum SplitError {
    /// Shorter than its header.
    #[error("shorter than its virtio_net_hdr")]
    Truncated,
    /// Its header's offsets or its packet's headers do not hold together.
    #[error("malformed offload request")]
    Malformed,
    /// A segmentation the tunnel never asks for (UDP, ...).
    #[error("unknown segmentation type {0}")]
    Unsupported(u8),
}

/// The `virtio_net_hdr` fields used (native byte order, as the device writes them).
struct VnetHdr {
    flags: u8,
    gso_type: u8,
    gso_size: usize,
    csum_start: usize,
    csum_offset: usize,
}

fn u16_at(b: &[u8], at: usize) -> usize {
    u16::from_ne_bytes([b[at], b[at + 1]]) as usize
}

fn be16(b: &[u8], at: usize) -> usize {
    u16::from_be_bytes([b[at], b[at + 1]]) as usize
}

/// Calls `each` with every IP packet of `frame` (a `virtio_net_hdr` and its packet), in order;
/// `scratch` holds each packet made (no allocation once it has grown). The number of packets.
pub(super) fn split(
    frame: &[u8],
    scratch: &mut Vec<u8>,
    mut each: impl FnMut(&[u8]),
) -> Result<usize, SplitError> {
    if frame.len() < VNET_HDR_LEN {
        return Err(SplitError::Truncated);
    }
    let h = VnetHdr {
        flags: frame[0],
        gso_type: frame[1],
        gso_size: u16_at(frame, 4),
        csum_start: u16_at(frame, 6),
        csum_offset: u16_at(frame, 8),
    };
    let pkt = &frame[VNET_HDR_LEN..];
    match h.gso_type & !GSO_ECN {
        GSO_NONE if h.flags & F_NEEDS_CSUM == 0 => {
            each(pkt);
            Ok(1)
        }
        GSO_NONE => {
            let at = h.csum_start + h.csum_offset;
            if h.csum_start >= pkt.len() || at + 2 > pkt.len() {
                return Err(SplitError::Malformed);
            }
            scratch.clear();
            scratch.extend_from_slice(pkt);
            let sum = checksum(&scratch[h.csum_start..], 0);
            scratch[at..at + 2].copy_from_slice(&finish(sum).to_be_bytes());
            each(scratch);
            Ok(1)
        }
        GSO_TCPV4 | GSO_TCPV6 => segment_tcp(pkt, &h, scratch, each),
        other => Err(SplitError::Unsupported(other)),
    }
}

/// The segments of TCP super-packet `pkt`, each `h.gso_size` bytes of payload but the last.
fn segment_tcp(
    pkt: &[u8],
    h: &VnetHdr,
    scratch: &mut Vec<u8>,
    mut each: impl FnMut(&[u8]),
) -> Result<usize, SplitError> {
    let v4 = h.gso_type & !GSO_ECN == GSO_TCPV4;
    let l4 = h.csum_start;
    let ip_ok = match pkt.first().map(|b| b >> 4) {
        Some(4) => v4 && l4 == usize::from(pkt[0] & 0x0f) * 4 && l4 >= 20,
        Some(6) => !v4 && l4 >= 40,
        _ => false,
    };
    if !ip_ok || h.gso_size == 0 || l4 + 20 > pkt.len() {
        return Err(SplitError::Malformed);
    }
    let hlen = l4 + usize::from(pkt[l4 + 12] >> 4) * 4;
    if hlen < l4 + 20 || hlen > pkt.len() {
        return Err(SplitError::Malformed);
    }
    let seq = u32::from_be_bytes([pkt[l4 + 4], pkt[l4 + 5], pkt[l4 + 6], pkt[l4 + 7]]);
    let id = be16(pkt, 4) as u16;
    let flags = pkt[l4 + 13];
    let payload = &pkt[hlen..];
    let n = payload.len().div_ceil(h.gso_size).max(1);
    for (i, chunk) in payload.chunks(h.gso_size).enumerate() {
        scratch.clear();
        scratch.extend_from_slice(&pkt[..hlen]);
        scratch.extend_from_slice(chunk);
        let total = scratch.len();
        let tcp_len = total - l4;
        if v4 {
            scratch[2..4].copy_from_slice(&(total as u16).to_be_bytes());
            scratch[4..6].copy_from_slice(&id.wrapping_add(i as u16).to_be_bytes());
            scratch[10..12].copy_from_slice(&[0, 0]);
            let ip_sum = finish(checksum(&scratch[..l4], 0));
            scratch[10..12].copy_from_slice(&ip_sum.to_be_bytes());
        } else {
            scratch[4..6].copy_from_slice(&((total - 40) as u16).to_be_bytes());
        }
        let seq_i = seq.wrapping_add((i * h.gso_size) as u32);
        scratch[l4 + 4..l4 + 8].copy_from_slice(&seq_i.to_be_bytes());
        let mut f = flags;
        if i + 1 < n {
            f &= !(0x01 | 0x08); // FIN, PSH: the last segment's
        }
        if i > 0 {
            f &= !0x80; // CWR: the first segment's
        }
        scratch[l4 + 13] = f;
        scratch[l4 + 16..l4 + 18].copy_from_slice(&[0, 0]);
        let pseudo = if v4 {
            checksum(&scratch[12..20], 6 + tcp_len as u64)
        } else {
            checksum(&scratch[8..40], 6 + tcp_len as u64)
        };
        let sum = finish(checksum(&scratch[l4..], pseudo));
        scratch[l4 + 16..l4 + 18].copy_from_slice(&sum.to_be_bytes());
        each(scratch);
    }
    if payload.is_empty() {
        // A super-packet without payload is its one header (never sent so, but harmless).
        each(pkt);
    }
    Ok(n)
}

/// The Internet checksum's running sum of `data` (big-endian 16-bit words, an odd last byte
/// padded with zero) added to `sum`, unfolded.
pub(super) fn checksum(data: &[u8], mut sum: u64) -> u64 {
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let v = u64::from_be_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        sum += (v >> 32) + (v & 0xffff_ffff);
    }
    let rest = words.remainder();
    let mut pairs = rest.chunks_exact(2);
    for p in &mut pairs {
        sum += u64::from(u16::from_be_bytes([p[0], p[1]]));
    }
    if let [last] = pairs.remainder() {
        sum += u64::from(*last) << 8;
    }
    sum
}

/// The checksum field for running sum `sum`: folded to 16 bits and complemented.
pub(super) fn finish(mut sum: u64) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Most bytes of one coalesced packet (the IPv4 total length's limit).
const MAX_COALESCED: usize = 65_535;

/// Where one TCP packet's parts are, for [`Coalesce`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TcpShape {
    v4: bool,
    /// Offset of the TCP header (bytes).
    l4: usize,
    /// Length of the IP and TCP headers (bytes).
    hlen: usize,
    seq: u32,
    flags: u8,
}

/// The shape of `p` if it may be coalesced: TCP over IPv4 without options or fragmentation,
/// or over IPv6 without extension headers, carrying payload, its flags ACK and perhaps PSH.
fn tcp_shape(p: &[u8]) -> Option<TcpShape> {
    let (v4, l4) = match p.first()? >> 4 {
        4 if p.len() >= 20 && p[0] & 0x0f == 5 && p[9] == 6 => {
            // Not a fragment (MF clear, offset 0), and the length is the packet's.
            if be16(p, 6) & 0x3fff != 0 || be16(p, 2) != p.len() {
                return None;
            }
            (true, 20)
        }
        6 if p.len() >= 40 && p[6] == 6 && be16(p, 4) + 40 == p.len() => (false, 40),
        _ => return None,
    };
    if p.len() < l4 + 20 {
        return None;
    }
    let hlen = l4 + usize::from(p[l4 + 12] >> 4) * 4;
    let flags = p[l4 + 13];
    if hlen < l4 + 20 || hlen >= p.len() || flags & !0x08 != 0x10 {
        return None;
    }
    let seq = u32::from_be_bytes([p[l4 + 4], p[l4 + 5], p[l4 + 6], p[l4 + 7]]);
    Some(TcpShape {
        v4,
        l4,
        hlen,
        seq,
        flags,
    })
}

/// Consecutive TCP segments of one flow joined into one super-packet for one TUN write (the
/// reverse of [`split`], as the kernel's GRO does): same addresses, ports, acknowledgement,
/// window and options, each starting where the last ended, all of the first one's length but
/// the last, which may be shorter; a PSH ends the packet. Written with a `virtio_net_hdr`
/// asking the kernel to treat it as the segments it stands for (TSO on the way in), so its
/// TCP crosses the stack once for them all.
#[derive(Debug, Default)]
pub(super) struct Coalesce {
    /// The `virtio_net_hdr` then the packet so far.
    buf: Vec<u8>,
    shape: Option<TcpShape>,
    /// Payload bytes of the first segment.
    mss: usize,
    /// Segments joined.
    count: usize,
    /// Sequence number the next segment must start at.
    next_seq: u32,
    /// The last segment joined was shorter than the first, or had PSH: nothing more joins.
    closed: bool,
}

impl Coalesce {
    /// Joins `p` to the packet held, or starts one with it (false: the caller writes what is
    /// held first, then calls again).
    pub(super) fn push(&mut self, p: &[u8]) -> bool {
        let shape = tcp_shape(p);
        if self.count == 0 {
            self.buf.clear();
            self.buf.extend_from_slice(&[0; VNET_HDR_LEN]);
            self.buf.extend_from_slice(p);
            self.count = 1;
            self.shape = shape;
            self.closed = shape.is_none_or(|s| s.flags & 0x08 != 0);
            if let Some(s) = shape {
                self.mss = p.len() - s.hlen;
                self.next_seq = s.seq.wrapping_add(self.mss as u32);
            }
            return true;
        }
        let (Some(s), Some(first)) = (shape, self.shape) else {
            return false;
        };
        let held = &self.buf[VNET_HDR_LEN..];
        let len = p.len() - s.hlen;
        let joins = !self.closed
            && s.v4 == first.v4
            && s.hlen == first.hlen
            && s.seq == self.next_seq
            && len <= self.mss
            && self.buf.len() - VNET_HDR_LEN + len <= MAX_COALESCED
            && same_flow(held, p, first);
        if !joins {
            return false;
        }
        self.buf.extend_from_slice(&p[s.hlen..]);
        self.count += 1;
        self.next_seq = self.next_seq.wrapping_add(len as u32);
        if len < self.mss || s.flags & 0x08 != 0 {
            self.closed = true;
            // The last segment's PSH goes on the whole.
            let at = VNET_HDR_LEN + first.l4 + 13;
            self.buf[at] |= s.flags & 0x08;
        }
        true
    }

    /// The frame to write for what is held (a `virtio_net_hdr` and the packet), leaving
    /// nothing held; `None` if nothing was.
    pub(super) fn take(&mut self) -> Option<&[u8]> {
        if self.count == 0 {
            return None;
        }
        let count = std::mem::take(&mut self.count);
        let Some(s) = self.shape.filter(|_| count > 1) else {
            return Some(&self.buf);
        };
        let (hdr, p) = self.buf.split_at_mut(VNET_HDR_LEN);
        let total = p.len();
        let tcp_len = total - s.l4;
        let pseudo = if s.v4 {
            p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
            p[10..12].copy_from_slice(&[0, 0]);
            let ip_sum = finish(checksum(&p[..20], 0));
            p[10..12].copy_from_slice(&ip_sum.to_be_bytes());
            checksum(&p[12..20], 6 + tcp_len as u64)
        } else {
            p[4..6].copy_from_slice(&((total - 40) as u16).to_be_bytes());
            checksum(&p[8..40], 6 + tcp_len as u64)
        };
        // The kernel finishes the checksum from the pseudo-header's sum (folded, not
        // complemented) in the field.
        p[s.l4 + 16..s.l4 + 18].copy_from_slice(&(!finish(pseudo)).to_be_bytes());
        hdr[0] = F_NEEDS_CSUM;
        hdr[1] = if s.v4 { GSO_TCPV4 } else { GSO_TCPV6 };
        hdr[2..4].copy_from_slice(&(s.hlen as u16).to_ne_bytes());
        hdr[4..6].copy_from_slice(&(self.mss as u16).to_ne_bytes());
        hdr[6..8].copy_from_slice(&(s.l4 as u16).to_ne_bytes());
        hdr[8..10].copy_from_slice(&16u16.to_ne_bytes());
        Some(&self.buf)
    }
}

/// Whether `p` continues the flow of `held` (shape `s`): the same IP header fields that do not
/// change between segments, addresses, ports, acknowledgement, data offset, window and
/// options (the flags were checked by [`tcp_shape`]).
fn same_flow(held: &[u8], p: &[u8], s: TcpShape) -> bool {
    let ip_same = if s.v4 {
        held[1] == p[1]
            && held[8] == p[8]
            && held[6] & 0x40 == p[6] & 0x40
            && held[12..20] == p[12..20]
    } else {
        held[..4] == p[..4] && held[7] == p[7] && held[8..40] == p[8..40]
    };
    let l4 = s.l4;
    ip_same
        && held[l4..l4 + 4] == p[l4..l4 + 4]
        && held[l4 + 8..l4 + 13] == p[l4 + 8..l4 + 13]
        && held[l4 + 14..l4 + 16] == p[l4 + 14..l4 + 16]
        && held[l4 + 18..s.hlen] == p[l4 + 18..s.hlen]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The textbook checksum, 16 bits at a time, to check the fast one against.
    fn slow_sum(data: &[u8]) -> u16 {
        let mut s: u32 = 0;
        for p in data.chunks(2) {
            let w = u32::from(p[0]) << 8 | u32::from(*p.get(1).unwrap_or(&0));
            s += w;
            s = (s & 0xffff) + (s >> 16);
        }
        !(s as u16)
    }

    fn vnet(flags: u8, gso_type: u8, hdr_len: u16, gso_size: u16, start: u16, off: u16) -> Vec<u8> {
        let mut h = vec![flags, gso_type];
        for v in [hdr_len, gso_size, start, off] {
            h.extend_from_slice(&v.to_ne_bytes());
        }
        h
    }

    /// A TCP packet over IPv4 (`v6` false) or IPv6 with `payload`, flags `flags`, sequence
    /// number `seq`, its checksums as TSO leaves them (IPv4 header's set, TCP's the
    /// pseudo-header's sum of the whole).
    fn tcp_packet(v6: bool, payload: &[u8], flags: u8, seq: u32) -> Vec<u8> {
        let mut p = Vec::new();
        if v6 {
            p.extend_from_slice(&[0x60, 0, 0, 0]);
            p.extend_from_slice(&((20 + payload.len()) as u16).to_be_bytes());
            p.extend_from_slice(&[6, 64]);
            p.extend_from_slice(&[0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
            p.extend_from_slice(&[0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        } else {
            p.extend_from_slice(&[0x45, 0]);
            p.extend_from_slice(&((40 + payload.len()) as u16).to_be_bytes());
            p.extend_from_slice(&[0x12, 0x34, 0x40, 0, 64, 6, 0, 0]);
            p.extend_from_slice(&[10, 77, 0, 1, 10, 77, 0, 2]);
        }
        if !v6 {
            let sum = finish(checksum(&p, 0));
            p[10..12].copy_from_slice(&sum.to_be_bytes());
        }
        let l4 = p.len();
        p.extend_from_slice(&[0x23, 0x82, 0x9c, 0x40]);
        p.extend_from_slice(&seq.to_be_bytes());
        p.extend_from_slice(&[0, 0, 0, 1, 0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
        p.extend_from_slice(payload);
        p[l4 + 16..l4 + 18].copy_from_slice(&[0xde, 0xad]);
        p
    }

    /// Checks `p` as a receiver would: lengths, IPv4 header checksum, TCP checksum.
    fn check(p: &[u8]) -> (u32, u8, Vec<u8>) {
        let (l4, pseudo_addrs) = if p[0] >> 4 == 4 {
            assert_eq!(be16(p, 2), p.len());
            assert_eq!(slow_sum(&p[..20]), 0, "IPv4 header checksum");
            (20, &p[12..20])
        } else {
            assert_eq!(be16(p, 4), p.len() - 40);
            (40, &p[8..40])
        };
        let tcp_len = p.len() - l4;
        let mut whole = pseudo_addrs.to_vec();
        whole.extend_from_slice(&[0, 6]);
        whole.extend_from_slice(&(tcp_len as u16).to_be_bytes());
        whole.extend_from_slice(&p[l4..]);
        assert_eq!(slow_sum(&whole), 0, "TCP checksum");
        let seq = u32::from_be_bytes(p[l4 + 4..l4 + 8].try_into().unwrap());
        (seq, p[l4 + 13], p[l4 + 20..].to_vec())
    }

    #[test]
    fn the_fast_checksum_is_the_textbook_one() {
        let data: Vec<u8> = (0..3001u32).map(|i| (i * 7919 % 251) as u8).collect();
        for len in [0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 1500, 3001] {
            assert_eq!(
                finish(checksum(&data[..len], 0)),
                slow_sum(&data[..len]),
                "{len}"
            );
        }
    }

    #[test]
    fn a_super_packet_becomes_segments_a_receiver_accepts() {
        let payload: Vec<u8> = (0..10_000u32).map(|i| (i % 253) as u8).collect();
        for v6 in [false, true] {
            for (mss, ecn) in [
                (1348usize, false),
                (1000, true),
                (10_000, false),
                (9_999, false),
            ] {
                // PSH|ACK|FIN|CWR on the super-packet.
                let pkt = tcp_packet(v6, &payload, 0x80 | 0x10 | 0x08 | 0x01, 0xffff_f000);
                let l4: u16 = if v6 { 40 } else { 20 };
                let gso = if v6 { GSO_TCPV6 } else { GSO_TCPV4 } | if ecn { GSO_ECN } else { 0 };
                let mut frame = vnet(F_NEEDS_CSUM, gso, l4 + 20, mss as u16, l4, 16);
                frame.extend_from_slice(&pkt);
                let mut got = Vec::new();
                let mut scratch = Vec::new();
                let n = split(&frame, &mut scratch, |p| got.push(p.to_vec())).unwrap();
                assert_eq!(n, payload.len().div_ceil(mss));
                assert_eq!(got.len(), n);
                let mut back = Vec::new();
                for (i, p) in got.iter().enumerate() {
                    let (seq, flags, data) = check(p);
                    assert_eq!(seq, 0xffff_f000u32.wrapping_add((i * mss) as u32));
                    let last = i + 1 == n;
                    assert_eq!(flags & 0x09 != 0, last, "FIN/PSH on the last only");
                    assert_eq!(flags & 0x80 != 0, i == 0, "CWR on the first only");
                    assert_eq!(flags & 0x10, 0x10);
                    if !v6 {
                        assert_eq!(be16(p, 4), 0x1234 + i);
                    }
                    assert!(data.len() == mss || last);
                    back.extend_from_slice(&data);
                }
                assert_eq!(back, payload);
            }
        }
    }

    #[test]
    fn a_plain_packet_passes_and_a_partial_checksum_is_finished() {
        let pkt = tcp_packet(false, b"hello, tunnel", 0x18, 7);
        let mut frame = vnet(0, GSO_NONE, 0, 0, 0, 0);
        frame.extend_from_slice(&pkt);
        let mut got = Vec::new();
        let mut scratch = Vec::new();
        split(&frame, &mut scratch, |p| got.push(p.to_vec())).unwrap();
        assert_eq!(got, vec![pkt.clone()]);
        // The TCP checksum field holding the pseudo-header's sum, as the kernel leaves it.
        let mut partial = pkt.clone();
        let mut pseudo = partial[12..20].to_vec();
        pseudo.extend_from_slice(&[0, 6, 0, (partial.len() - 20) as u8]);
        let seed = !finish(checksum(&pseudo, 0));
        partial[36..38].copy_from_slice(&seed.to_be_bytes());
        let mut frame = vnet(F_NEEDS_CSUM, GSO_NONE, 0, 0, 20, 16);
        frame.extend_from_slice(&partial);
        got.clear();
        split(&frame, &mut scratch, |p| got.push(p.to_vec())).unwrap();
        let (seq, _, data) = check(&got[0]);
        assert_eq!((seq, data.as_slice()), (7, &b"hello, tunnel"[..]));
    }

    #[test]
    fn nonsense_is_refused_without_a_panic() {
        let mut scratch = Vec::new();
        let mut n = 0;
        assert_eq!(
            split(&[0; 5], &mut scratch, |_| n += 1),
            Err(SplitError::Truncated)
        );
        let pkt = tcp_packet(false, &[1; 3000], 0x10, 1);
        // Offsets past the end, a zero segment size, a wrong family, an unknown type, and
        // every truncation of a valid super-packet.
        let bad = [
            vnet(F_NEEDS_CSUM, GSO_NONE, 0, 0, 5000, 16),
            vnet(F_NEEDS_CSUM, GSO_TCPV4, 40, 0, 20, 16),
            vnet(F_NEEDS_CSUM, GSO_TCPV6, 40, 1000, 20, 16),
            vnet(F_NEEDS_CSUM, 3, 28, 1000, 20, 6),
        ];
        for h in bad {
            let mut frame = h.clone();
            frame.extend_from_slice(&pkt);
            assert!(split(&frame, &mut scratch, |_| n += 1).is_err(), "{h:?}");
        }
        let mut frame = vnet(F_NEEDS_CSUM, GSO_TCPV4, 40, 1000, 20, 16);
        frame.extend_from_slice(&pkt);
        for len in 0..frame.len() {
            let _ = split(&frame[..len], &mut scratch, |_| {});
        }
        assert_eq!(n, 0);
    }

    /// Cuts `payload` into `mss`-byte ACK segments (PSH on the last) from sequence `seq`.
    fn segments(v6: bool, payload: &[u8], mss: usize, seq: u32) -> Vec<Vec<u8>> {
        let n = payload.len().div_ceil(mss);
        let mut out = Vec::new();
        for (i, c) in payload.chunks(mss).enumerate() {
            let flags = if i + 1 == n { 0x18 } else { 0x10 };
            let mut p = tcp_packet(v6, c, flags, seq.wrapping_add((i * mss) as u32));
            // A complete checksum, as the engine's packets have.
            let l4 = if v6 { 40 } else { 20 };
            p[l4 + 16..l4 + 18].copy_from_slice(&[0, 0]);
            let pseudo = if v6 {
                checksum(&p[8..40], 6 + (p.len() - l4) as u64)
            } else {
                checksum(&p[12..20], 6 + (p.len() - l4) as u64)
            };
            let sum = finish(checksum(&p[l4..], pseudo));
            p[l4 + 16..l4 + 18].copy_from_slice(&sum.to_be_bytes());
            out.push(p);
        }
        out
    }

    /// Coalesces `packets` as the runtime does; the frames written.
    fn coalesce_all(packets: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let mut c = Coalesce::default();
        let mut frames = Vec::new();
        for p in packets {
            if !c.push(p) {
                frames.push(c.take().unwrap().to_vec());
                assert!(c.push(p));
            }
        }
        frames.extend(c.take().map(<[u8]>::to_vec));
        assert!(c.take().is_none());
        frames
    }

    #[test]
    fn segments_coalesced_then_split_are_the_segments_again() {
        let payload: Vec<u8> = (0..50_000u32).map(|i| (i % 249) as u8).collect();
        for v6 in [false, true] {
            for mss in [1348, 1000, 777] {
                let segs = segments(v6, &payload, mss, 0xffff_ff00);
                let frames = coalesce_all(&segs);
                assert!(frames.len() < segs.len() / 10, "{} frames", frames.len());
                let mut back = Vec::new();
                let mut scratch = Vec::new();
                for f in &frames {
                    split(f, &mut scratch, |p| back.push(p.to_vec())).unwrap();
                }
                assert_eq!(back.len(), segs.len());
                for (b, s) in back.iter().zip(&segs) {
                    check(b);
                    if v6 {
                        assert_eq!(b, s);
                    } else {
                        // The same but the IPv4 identification (the first's, counted up).
                        assert_eq!(b[..4], s[..4]);
                        assert_eq!(b[6..10], s[6..10]);
                        assert_eq!(b[12..], s[12..]);
                    }
                }
            }
        }
    }

    #[test]
    fn only_consecutive_segments_of_one_flow_join() {
        let payload = vec![5u8; 4000];
        let segs = segments(false, &payload, 1000, 100);
        // A gap in the sequence, another port, a SYN, a different window, a shorter segment
        // followed by more: each starts a new frame.
        let mut other_port = segs[1].clone();
        other_port[20] ^= 1;
        let mut syn = segs[1].clone();
        syn[33] |= 0x02;
        let mut window = segs[2].clone();
        window[34] ^= 1;
        let short = segments(false, &[5u8; 500], 500, 1100).remove(0);
        let after_short = segments(false, &[5u8; 1000], 1000, 1600).remove(0);
        for (packets, frames) in [
            (vec![segs[0].clone(), segs[2].clone()], 2),
            (vec![segs[0].clone(), other_port], 2),
            (vec![segs[0].clone(), syn], 2),
            (vec![segs[0].clone(), segs[1].clone(), window], 2),
            (vec![segs[0].clone(), short, after_short], 2),
            (segs.clone(), 1),
        ] {
            assert_eq!(coalesce_all(&packets).len(), frames);
        }
        // A lone packet goes unchanged after a plain header; so does anything not TCP.
        let udp = vec![
            0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        for p in [segs[0].clone(), udp.clone(), vec![0x60], Vec::new()] {
            let f = coalesce_all(std::slice::from_ref(&p));
            assert_eq!(f, vec![[vec![0; VNET_HDR_LEN], p].concat()]);
        }
    }
}
