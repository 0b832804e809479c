//! The flow key of a real IP packet, for FQ-CoDel's flow queues in the emulator
//! ([`Link::send_flow`](crate::Link::send_flow)): a hash of the 5-tuple (protocol, addresses,
//! ports) for TCP, UDP, UDP-Lite, SCTP and DCCP (whose ports sit in the same place), of the
//! protocol and addresses for everything else (ICMP, a fragment after the first, ESP, ...).
//! IPv4 and IPv6 (whose hop-by-hop, routing, destination-options and fragment headers are
//! walked, at most [`MAX_EXTENSION_HEADERS`]). Every read is checked against the bytes present:
//! a packet too short or malformed to read is one flow of its own, [`UNPARSED_FLOW`], and never
//! a panic.

/// IPv6 extension headers walked at most; beyond them the flow is the addresses' alone.
pub const MAX_EXTENSION_HEADERS: usize = 8;

/// The flow key of every packet whose header cannot be read.
pub const UNPARSED_FLOW: u32 = 0;

/// FNV-1a, 64 bits, over `bytes`, continuing from `h`.
fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// Whether protocol `proto` carries 16-bit source and destination ports at the start of its
/// header: TCP (6), UDP (17), DCCP (33), SCTP (132), UDP-Lite (136).
fn has_ports(proto: u8) -> bool {
    matches!(proto, 6 | 17 | 33 | 132 | 136)
}

/// The key of `packet`, an IPv4 or IPv6 packet as a TUN device reads it: a hash of its flow,
/// never [`UNPARSED_FLOW`] for a packet that parses; [`UNPARSED_FLOW`] for one that does not.
pub fn ip_flow_key(packet: &[u8]) -> u32 {
    let parsed = match packet.first().map(|b| b >> 4) {
        Some(4) => ipv4(packet),
        Some(6) => ipv6(packet),
        _ => None,
    };
    let Some((proto, addresses, ports)) = parsed else {
        return UNPARSED_FLOW;
    };
    let mut h = fnv1a(FNV_OFFSET, &[proto]);
    h = fnv1a(h, addresses);
    if let Some(p) = ports {
        h = fnv1a(h, p);
    }
    let key = (h ^ (h >> 32)) as u32;
    if key == UNPARSED_FLOW {
        1
    } else {
        key
    }
}

/// The ports (4 bytes) of a transport header at `offset`, if the protocol has them and they
/// are present.
fn ports(packet: &[u8], proto: u8, offset: usize) -> Option<&[u8]> {
    if !has_ports(proto) {
        return None;
    }
    packet.get(offset..offset.checked_add(4)?)
}

/// (protocol, source and destination addresses, ports) of an IPv4 packet.
fn ipv4(packet: &[u8]) -> Option<(u8, &[u8], Option<&[u8]>)> {
    let ihl = usize::from(packet.first()? & 0x0f) * 4;
    if ihl < 20 || packet.len() < ihl {
        return None;
    }
    let proto = packet[9];
    let addresses = &packet[12..20];
    // A fragment after the first carries no transport header.
    let fragment_offset = u16::from_be_bytes([packet[6], packet[7]]) & 0x1fff;
    let ports = if fragment_offset == 0 {
        ports(packet, proto, ihl)
    } else {
        None
    };
    Some((proto, addresses, ports))
}

/// (upper-layer protocol, source and destination addresses, ports) of an IPv6 packet; an
/// extension header cut short leaves the addresses and the last next-header value (the tunnel
/// reads such a packet, so it must not fall into [`UNPARSED_FLOW`] with the unreadable ones).
fn ipv6(packet: &[u8]) -> Option<(u8, &[u8], Option<&[u8]>)> {
    let addresses = packet.get(8..40)?;
    let mut next = packet[6];
    let mut offset = 40;
    for _ in 0..MAX_EXTENSION_HEADERS {
        match next {
            // Hop-by-hop, routing, destination options: length in 8-byte units after the first
            // 8 bytes.
            0 | 43 | 60 => {
                let Some(header) = packet.get(offset..offset + 2) else {
                    return Some((next, addresses, None));
                };
                next = header[0];
                offset += (usize::from(header[1]) + 1) * 8;
            }
            // Fragment: 8 bytes; a later fragment carries no transport header.
            44 => {
                let Some(header) = packet.get(offset..offset + 8) else {
                    return Some((next, addresses, None));
                };
                next = header[0];
                offset += 8;
                let fragment_offset = u16::from_be_bytes([header[2], header[3]]) >> 3;
                if fragment_offset != 0 {
                    return Some((next, addresses, None));
                }
            }
            proto => return Some((proto, addresses, ports(packet, proto, offset))),
        }
    }
    // Too many extension headers: the addresses alone.
    Some((next, addresses, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4 packet of protocol `proto` from 10.0.0.`src` port `sport` to 10.0.0.2 port 80.
    fn v4(proto: u8, src: u8, sport: u16) -> Vec<u8> {
        let mut p = vec![0u8; 40];
        p[0] = 0x45;
        p[9] = proto;
        p[12..16].copy_from_slice(&[10, 0, 0, src]);
        p[16..20].copy_from_slice(&[10, 0, 0, 2]);
        p[20..22].copy_from_slice(&sport.to_be_bytes());
        p[22..24].copy_from_slice(&80u16.to_be_bytes());
        p
    }

    #[test]
    fn the_five_tuple_makes_the_flow() {
        let a = ip_flow_key(&v4(6, 1, 5000));
        assert_ne!(a, UNPARSED_FLOW);
        assert_eq!(a, ip_flow_key(&v4(6, 1, 5000)));
        assert_ne!(a, ip_flow_key(&v4(6, 1, 5001)), "port");
        assert_ne!(a, ip_flow_key(&v4(17, 1, 5000)), "protocol");
        assert_ne!(a, ip_flow_key(&v4(6, 3, 5000)), "address");
        // ICMP: addresses only, so the bytes where ports would be do not matter.
        assert_eq!(ip_flow_key(&v4(1, 1, 5000)), ip_flow_key(&v4(1, 1, 7)));
    }

    #[test]
    fn ipv6_with_an_extension_header() {
        let mut p = vec![0u8; 80];
        p[0] = 0x60;
        p[6] = 0; // hop-by-hop
        p[8] = 0xfd;
        p[24] = 0xfd;
        p[40] = 17; // then UDP
        p[41] = 0; // 8 bytes
        p[48..50].copy_from_slice(&1234u16.to_be_bytes());
        let a = ip_flow_key(&p);
        p[49] ^= 1;
        assert_ne!(a, ip_flow_key(&p));
        assert_ne!(a, UNPARSED_FLOW);
    }

    #[test]
    fn an_ipv6_packet_whose_extension_header_is_cut_short_keeps_its_addresses() {
        // Found by the fuzzer: a hop-by-hop header (next header 0) with no bytes after the
        // fixed header. The tunnel reads it; its flow is its addresses'.
        let mut p = vec![0u8; 40];
        p[0] = 0x60;
        p[6] = 0;
        p[23] = 1;
        let a = ip_flow_key(&p);
        assert_ne!(a, UNPARSED_FLOW);
        p[39] = 2;
        assert_ne!(a, ip_flow_key(&p), "the addresses make the flow");
    }

    #[test]
    fn bad_packets_are_one_flow_and_never_panic() {
        assert_eq!(ip_flow_key(&[]), UNPARSED_FLOW);
        assert_eq!(ip_flow_key(&[0x45, 0, 0]), UNPARSED_FLOW);
        assert_eq!(ip_flow_key(&[0x41; 30]), UNPARSED_FLOW); // header length 4 bytes
        assert_eq!(ip_flow_key(&[0x60; 20]), UNPARSED_FLOW);
        for len in 0..100 {
            for first in [0x45u8, 0x4f, 0x60, 0x00, 0xff] {
                let mut p = vec![0xffu8; len];
                if let Some(b) = p.first_mut() {
                    *b = first;
                }
                let _ = ip_flow_key(&p);
            }
        }
    }
}
