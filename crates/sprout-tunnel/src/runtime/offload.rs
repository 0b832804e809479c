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
}
