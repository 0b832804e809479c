//! Reading the IP header of a packet taken from the TUN device (or out of the tunnel): its
//! version, addresses and the flow it belongs to. Every length is checked against the bytes
//! present; nothing here trusts the packet.
//!
//! A flow is the 5-tuple (protocol, addresses, ports) for TCP and UDP (and UDP-Lite, SCTP,
//! DCCP, which carry ports in the same place), and protocol and addresses for everything else
//! (ICMP, fragments after the first, ESP, ...). For IPv6 the fixed header's next-header field
//! names the protocol; the common extension headers (hop-by-hop, routing, destination options,
//! fragment) are walked, up to [`MAX_EXTENSION_HEADERS`] of them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::Serialize;
use thiserror::Error;

/// Smallest IPv4 header, in bytes.
pub const IPV4_HEADER_BYTES: usize = 20;
/// IPv6 fixed header, in bytes.
pub const IPV6_HEADER_BYTES: usize = 40;
/// IPv6 extension headers walked at most before the packet's flow falls back to addresses only.
pub const MAX_EXTENSION_HEADERS: usize = 8;

/// IP protocol numbers used here.
pub mod proto {
    /// ICMP.
    pub const ICMP: u8 = 1;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// ICMPv6.
    pub const ICMPV6: u8 = 58;
}

/// The IP version of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum IpVersion {
    /// IPv4.
    V4,
    /// IPv6.
    V6,
}

/// What identifies a flow: the 5-tuple for TCP and UDP, protocol and addresses (ports 0) for
/// the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct FlowKey {
    /// IP protocol number (the upper-layer protocol for IPv6).
    pub proto: u8,
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Source port (0 when the protocol has none or the packet is a later fragment).
    pub src_port: u16,
    /// Destination port (0 likewise).
    pub dst_port: u16,
}

impl std::fmt::Display for FlowKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self.proto {
            proto::TCP => "tcp".to_string(),
            proto::UDP => "udp".to_string(),
            proto::ICMP => "icmp".to_string(),
            proto::ICMPV6 => "icmpv6".to_string(),
            p => format!("proto{p}"),
        };
        let ep = |a: IpAddr, p: u16| match (a, p) {
            (a, 0) => a.to_string(),
            (IpAddr::V4(a), p) => format!("{a}:{p}"),
            (IpAddr::V6(a), p) => format!("[{a}]:{p}"),
        };
        write!(
            f,
            "{name} {} > {}",
            ep(self.src, self.src_port),
            ep(self.dst, self.dst_port)
        )
    }
}

/// What [`parse`] read of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketInfo {
    /// IPv4 or IPv6.
    pub version: IpVersion,
    /// The packet's flow (its addresses are the packet's source and destination).
    pub flow: FlowKey,
    /// Length of the packet according to its header (bytes); at most the buffer's length.
    /// Bytes beyond it (link padding) are not part of the packet.
    pub len: usize,
}

impl PacketInfo {
    /// Source address.
    pub fn src(&self) -> IpAddr {
        self.flow.src
    }
    /// Destination address.
    pub fn dst(&self) -> IpAddr {
        self.flow.dst
    }
}

/// Why a packet was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum PacketError {
    /// No bytes at all.
    #[error("empty packet")]
    Empty,
    /// The version nibble is neither 4 nor 6.
    #[error("unknown IP version {0}")]
    UnknownVersion(u8),
    /// Fewer bytes than the header (or the header's total length) says.
    #[error("truncated packet: {needed} bytes needed, {got} present")]
    Truncated {
        /// Bytes the header says there are (or a header needs).
        needed: usize,
        /// Bytes present.
        got: usize,
    },
    /// A header field that no valid packet has (an IPv4 header length below 20 bytes, a total
    /// length below the header length).
    #[error("malformed header: {0}")]
    Malformed(&'static str),
}

impl PacketError {
    /// A short name for counters (snake case).
    pub fn name(&self) -> &'static str {
        match self {
            PacketError::Empty => "empty",
            PacketError::UnknownVersion(_) => "unknown_version",
            PacketError::Truncated { .. } => "truncated",
            PacketError::Malformed(_) => "malformed",
        }
    }
}

fn ports(proto: u8, transport: &[u8]) -> (u16, u16) {
    match proto {
        // TCP, UDP, DCCP, UDP-Lite, SCTP: source and destination ports first.
        6 | 17 | 33 | 136 | 132 if transport.len() >= 4 => (
            u16::from_be_bytes([transport[0], transport[1]]),
            u16::from_be_bytes([transport[2], transport[3]]),
        ),
        _ => (0, 0),
    }
}

fn truncated(needed: usize, got: usize) -> PacketError {
    PacketError::Truncated { needed, got }
}

/// Reads the IP header of `packet`: version, addresses, flow and length. Never panics.
pub fn parse(packet: &[u8]) -> Result<PacketInfo, PacketError> {
    let first = *packet.first().ok_or(PacketError::Empty)?;
    match first >> 4 {
        4 => parse_v4(packet),
        6 => parse_v6(packet),
        v => Err(PacketError::UnknownVersion(v)),
    }
}

fn parse_v4(p: &[u8]) -> Result<PacketInfo, PacketError> {
    if p.len() < IPV4_HEADER_BYTES {
        return Err(truncated(IPV4_HEADER_BYTES, p.len()));
    }
    let ihl = usize::from(p[0] & 0x0f) * 4;
    if ihl < IPV4_HEADER_BYTES {
        return Err(PacketError::Malformed("IPv4 header length below 20 bytes"));
    }
    let total = usize::from(u16::from_be_bytes([p[2], p[3]]));
    if total < ihl {
        return Err(PacketError::Malformed(
            "IPv4 total length below header length",
        ));
    }
    if p.len() < total {
        return Err(truncated(total, p.len()));
    }
    let proto = p[9];
    let src = Ipv4Addr::new(p[12], p[13], p[14], p[15]);
    let dst = Ipv4Addr::new(p[16], p[17], p[18], p[19]);
    // Only the first fragment (offset 0) carries the ports.
    let offset = u16::from_be_bytes([p[6], p[7]]) & 0x1fff;
    let (src_port, dst_port) = if offset == 0 {
        ports(proto, &p[ihl..total])
    } else {
        (0, 0)
    };
    Ok(PacketInfo {
        version: IpVersion::V4,
        flow: FlowKey {
            proto,
            src: IpAddr::V4(src),
            dst: IpAddr::V4(dst),
            src_port,
            dst_port,
        },
        len: total,
    })
}

fn parse_v6(p: &[u8]) -> Result<PacketInfo, PacketError> {
    if p.len() < IPV6_HEADER_BYTES {
        return Err(truncated(IPV6_HEADER_BYTES, p.len()));
    }
    let payload = usize::from(u16::from_be_bytes([p[4], p[5]]));
    let total = IPV6_HEADER_BYTES + payload;
    if p.len() < total {
        return Err(truncated(total, p.len()));
    }
    let mut src = [0u8; 16];
    src.copy_from_slice(&p[8..24]);
    let mut dst = [0u8; 16];
    dst.copy_from_slice(&p[24..40]);
    // Walk the extension headers to the upper-layer protocol.
    let mut next = p[6];
    let mut at = IPV6_HEADER_BYTES;
    let mut ports_ok = true;
    for _ in 0..MAX_EXTENSION_HEADERS {
        match next {
            // Hop-by-hop, routing, destination options: length in 8-byte units, plus 8.
            0 | 43 | 60 => {
                let Some(h) = p.get(at..at + 2).filter(|_| at + 2 <= total) else {
                    ports_ok = false;
                    break;
                };
                next = h[0];
                at += 8 + usize::from(h[1]) * 8;
            }
            // Fragment: 8 bytes; only the first fragment carries the ports.
            44 => {
                let Some(h) = p.get(at..at + 8).filter(|_| at + 8 <= total) else {
                    ports_ok = false;
                    break;
                };
                next = h[0];
                if u16::from_be_bytes([h[2], h[3]]) >> 3 != 0 {
                    ports_ok = false;
                }
                at += 8;
            }
            _ => break,
        }
    }
    if matches!(next, 0 | 43 | 60 | 44) {
        ports_ok = false; // more extension headers than we walk
    }
    let (src_port, dst_port) = if ports_ok && at <= total {
        ports(next, &p[at..total])
    } else {
        (0, 0)
    };
    Ok(PacketInfo {
        version: IpVersion::V6,
        flow: FlowKey {
            proto: next,
            src: IpAddr::V6(Ipv6Addr::from(src)),
            dst: IpAddr::V6(Ipv6Addr::from(dst)),
            src_port,
            dst_port,
        },
        len: total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(proto: u8, payload: &[u8]) -> Vec<u8> {
        let total = 20 + payload.len();
        let mut p = vec![
            0x45,
            0,
            (total >> 8) as u8,
            total as u8,
            0,
            0,
            0x40,
            0,
            64,
            proto,
            0,
            0,
        ];
        p.extend_from_slice(&[10, 0, 0, 2, 10, 0, 0, 1]);
        p.extend_from_slice(payload);
        p
    }

    #[test]
    fn ipv4_udp_five_tuple() {
        let p = v4(
            proto::UDP,
            &[0x13, 0x88, 0x00, 0x35, 0, 12, 0, 0, 1, 2, 3, 4],
        );
        let info = parse(&p).unwrap();
        assert_eq!(info.version, IpVersion::V4);
        assert_eq!(info.len, 32);
        assert_eq!(info.flow.src, "10.0.0.2".parse::<IpAddr>().unwrap());
        assert_eq!((info.flow.src_port, info.flow.dst_port), (5000, 53));
        assert_eq!(info.flow.to_string(), "udp 10.0.0.2:5000 > 10.0.0.1:53");
    }

    #[test]
    fn ipv4_icmp_has_no_ports_and_padding_is_not_counted() {
        let mut p = v4(proto::ICMP, &[8, 0, 0, 0, 0, 1, 0, 1]);
        p.extend_from_slice(&[0; 6]); // link padding
        let info = parse(&p).unwrap();
        assert_eq!(info.len, 28);
        assert_eq!((info.flow.src_port, info.flow.dst_port), (0, 0));
    }

    #[test]
    fn refusals() {
        assert_eq!(parse(&[]), Err(PacketError::Empty));
        assert_eq!(parse(&[0x50; 40]), Err(PacketError::UnknownVersion(5)));
        assert!(matches!(
            parse(&[0x45; 10]),
            Err(PacketError::Truncated { .. })
        ));
        let mut p = v4(proto::UDP, &[0; 8]);
        p[0] = 0x44;
        assert!(matches!(parse(&p), Err(PacketError::Malformed(_))));
        let mut p = v4(proto::UDP, &[0; 8]);
        p[3] = 200; // total length beyond the buffer
        assert!(matches!(
            parse(&p),
            Err(PacketError::Truncated {
                needed: 200,
                got: 28
            })
        ));
        let mut p = vec![0x60; 40];
        p[4] = 0;
        p[5] = 10; // 10 payload bytes claimed, none present
        assert!(matches!(
            parse(&p),
            Err(PacketError::Truncated {
                needed: 50,
                got: 40
            })
        ));
    }

    #[test]
    fn ipv6_tcp_through_an_extension_header() {
        let mut p = vec![0u8; 40];
        p[0] = 0x60;
        p[6] = 60; // destination options
        p[8..24].copy_from_slice(&"fd00::2".parse::<Ipv6Addr>().unwrap().octets());
        p[24..40].copy_from_slice(&"fd00::1".parse::<Ipv6Addr>().unwrap().octets());
        p.extend_from_slice(&[proto::TCP, 0, 0, 0, 0, 0, 0, 0]); // 8-byte options header
        p.extend_from_slice(&[0x1f, 0x90, 0x00, 0x50, 0, 0, 0, 0]);
        let len = p.len() - 40;
        p[4] = (len >> 8) as u8;
        p[5] = len as u8;
        let info = parse(&p).unwrap();
        assert_eq!(info.version, IpVersion::V6);
        assert_eq!(info.flow.proto, proto::TCP);
        assert_eq!((info.flow.src_port, info.flow.dst_port), (8080, 80));
        assert_eq!(info.flow.to_string(), "tcp [fd00::2]:8080 > [fd00::1]:80");
    }
}
