//! Fuzz target: `sprout_tunnel::packet::parse`, the IP header reader of SproutTunnel, which
//! sees every packet read from the TUN device and every packet out of the tunnel; and
//! `sprout_link::flow::ip_flow_key`, the emulator's FQ-CoDel flow key of every packet it reads;
//! and `sprout_link::ecn::{ip_ecn, set_ip_ce}`, the emulator's reading of a packet's ECN
//! codepoint and its CE mark (the header rewritten, the IPv4 checksum updated).

use std::net::IpAddr;

use sprout_tunnel::packet::{parse, IpVersion, PacketError, IPV4_HEADER_BYTES, IPV6_HEADER_BYTES};

use crate::Target;

/// Parses any bytes: an error that describes the input, or a packet whose length is within
/// the input, whose addresses are the header's, and which parses the same without the bytes
/// beyond its length.
#[derive(Default)]
pub struct PacketTarget;

/// An IPv4 packet: header of `ihl` 32-bit words (options zero), protocol, fragment offset
/// field, payload.
fn v4(ihl: u8, proto: u8, frag: u16, payload: &[u8]) -> Vec<u8> {
    let header = usize::from(ihl) * 4;
    let total = (header + payload.len()) as u16;
    let mut p = vec![0u8; header];
    p[0] = 0x40 | ihl;
    p[2..4].copy_from_slice(&total.to_be_bytes());
    p[6..8].copy_from_slice(&frag.to_be_bytes());
    p[8] = 64;
    p[9] = proto;
    p[12..16].copy_from_slice(&[10, 77, 0, 2]);
    p[16..20].copy_from_slice(&[198, 51, 100, 7]);
    p.extend_from_slice(payload);
    p
}

/// An IPv6 packet: next header, then the bytes after the fixed header (extension headers
/// and payload).
fn v6(next: u8, rest: &[u8]) -> Vec<u8> {
    let mut p = vec![0u8; IPV6_HEADER_BYTES];
    p[0] = 0x60;
    p[4..6].copy_from_slice(&(rest.len() as u16).to_be_bytes());
    p[6] = next;
    p[7] = 64;
    p[8..24].copy_from_slice(&[0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    p[24..40].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    p.extend_from_slice(rest);
    p
}

impl Target for PacketTarget {
    fn name(&self) -> &'static str {
        "packet"
    }

    /// IPv4 TCP, UDP, ICMP, with options, a later fragment, with link padding; IPv6 TCP and
    /// UDP, through hop-by-hop, routing, destination options and fragment headers.
    fn seeds(&mut self) -> Vec<Vec<u8>> {
        let tcp = [
            0x9c, 0x40, 0x01, 0xbb, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x10, 0xff, 0xff, 0, 0, 0, 0,
        ];
        let udp = [0x13, 0x88, 0x00, 0x35, 0, 12, 0, 0, 1, 2, 3, 4];
        let mut padded = v4(5, 1, 0, &[8, 0, 0, 0, 0, 1, 0, 1]);
        padded.extend_from_slice(&[0; 18]);
        let mut big = v4(5, 6, 0x4000, &tcp);
        big.resize(1400, 0xab);
        big[2..4].copy_from_slice(&1400u16.to_be_bytes());
        let opts = [60, 0, 0, 0, 0, 0, 0, 0];
        let frag_first = [17, 0, 0, 1, 0, 0, 0, 9];
        let frag_later = [17, 0, 0x05, 0xa9, 0, 0, 0, 9];
        let routing = [44, 0, 0, 0, 0, 0, 0, 0];
        // ECN-capable packets: IPv4 ECT(0) with a right checksum (DSCP 46), IPv6 ECT(1).
        let mut ect0 = v4(5, 6, 0x4000, &tcp);
        ect0[1] = 0xba;
        if let Some(c) = sprout_link::ecn::ipv4_header_checksum(&ect0) {
            ect0[10..12].copy_from_slice(&c.to_be_bytes());
        }
        let mut ect1 = v6(17, &udp);
        ect1[1] = 0x10;
        vec![
            ect0,
            ect1,
            v4(5, 6, 0x4000, &tcp),
            v4(5, 17, 0, &udp),
            v4(7, 17, 0, &udp),
            v4(5, 17, 0x00b9, &udp),
            padded,
            big,
            v6(6, &tcp),
            v6(17, &udp),
            v6(58, &[128, 0, 0, 0, 0, 1, 0, 1]),
            v6(60, &[opts.as_slice(), &tcp].concat()),
            v6(
                0,
                &[
                    [43, 0, 0, 0, 0, 0, 0, 0].as_slice(),
                    &routing,
                    &frag_first,
                    &udp,
                ]
                .concat(),
            ),
            v6(44, &[frag_later.as_slice(), &udp].concat()),
        ]
    }

    fn run(&mut self, input: &[u8]) {
        check_ecn(input);
        let key = sprout_link::flow::ip_flow_key(input);
        match parse(input) {
            Ok(info) => {
                assert_ne!(
                    key,
                    sprout_link::flow::UNPARSED_FLOW,
                    "a packet the tunnel reads has a flow of its own in the emulator"
                );
                assert!(info.len <= input.len(), "a parsed length within the input");
                let (version, min, src, dst) = match info.version {
                    IpVersion::V4 => (
                        4,
                        IPV4_HEADER_BYTES,
                        IpAddr::from(<[u8; 4]>::try_from(&input[12..16]).unwrap()),
                        IpAddr::from(<[u8; 4]>::try_from(&input[16..20]).unwrap()),
                    ),
                    IpVersion::V6 => (
                        6,
                        IPV6_HEADER_BYTES,
                        IpAddr::from(<[u8; 16]>::try_from(&input[8..24]).unwrap()),
                        IpAddr::from(<[u8; 16]>::try_from(&input[24..40]).unwrap()),
                    ),
                };
                assert_eq!(input[0] >> 4, version, "the version is the header's");
                assert!(info.len >= min, "a parsed packet holds its fixed header");
                assert_eq!((info.src(), info.dst()), (src, dst));
                assert_eq!(
                    parse(&input[..info.len]),
                    Ok(info),
                    "bytes beyond the packet's length change nothing"
                );
                assert!(!info.flow.to_string().is_empty());
            }
            Err(e) => {
                assert!(!e.name().is_empty() && !e.to_string().is_empty());
                match e {
                    PacketError::Empty => assert!(input.is_empty()),
                    PacketError::UnknownVersion(v) => {
                        assert!(v != 4 && v != 6);
                        assert_eq!(input[0] >> 4, v);
                    }
                    PacketError::Truncated { needed, got } => {
                        assert_eq!(got, input.len());
                        assert!(needed > got, "truncated means fewer bytes than needed");
                    }
                    PacketError::Malformed(_) => assert_eq!(input[0] >> 4, 4),
                }
            }
        }
    }
}

/// The ECN codepoint and the CE mark of any bytes: a mark changes only the ECN bits (and an
/// IPv4 header's checksum, kept right if it was), happens exactly when the packet is ECT, and
/// leaves it CE.
fn check_ecn(input: &[u8]) {
    use sprout_link::ecn::{ip_ecn, ipv4_header_checksum, set_ip_ce};
    let before = ip_ecn(input);
    let mut p = input.to_vec();
    let marked = set_ip_ce(&mut p);
    assert_eq!(marked, before.is_ect(), "marked exactly when ECT");
    assert_eq!(p.len(), input.len());
    if !marked {
        assert_eq!(p, input, "an unmarked packet is left alone");
        return;
    }
    assert_eq!(ip_ecn(&p), sprout_link::Ecn::Ce);
    let changed: Vec<usize> = (0..p.len()).filter(|&i| p[i] != input[i]).collect();
    if input[0] >> 4 == 6 {
        assert_eq!(changed, [1], "IPv6: the traffic class alone");
        assert_eq!(p[1] & 0xcf, input[1] & 0xcf);
    } else {
        assert!(
            changed.iter().all(|i| [1, 10, 11].contains(i)),
            "{changed:?}"
        );
        assert_eq!(p[1] & 0xfc, input[1] & 0xfc, "the DSCP is kept");
        if ipv4_header_checksum(input) == Some(0) {
            assert_eq!(
                ipv4_header_checksum(&p),
                Some(0),
                "a right checksum stays right"
            );
        }
    }
}
