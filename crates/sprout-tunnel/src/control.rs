//! What travels inside the tunnel besides IP packets: the client's greeting (in the secure
//! handshake) and the server's address assignment (in core datagrams).
//!
//! A core datagram's payload is an IP packet when its first byte's high nibble is 4 or 6, and
//! a control message when its first byte is [`CONTROL`]; anything else is malformed. Control
//! messages are checked field by field like any network input.
//!
//! Layouts (big-endian):
//!
//! - greeting: `"SPROUT-TUNNEL"` (13 bytes), version (1 byte, [`VERSION`]), the client's core
//!   `max_datagram_bytes` (u16);
//! - assign: [`CONTROL`], [`KIND_ASSIGN`], flags (bit 0: IPv4 present, bit 1: IPv6 present),
//!   TUN MTU (u16), then if IPv4: client address (4), prefix length (1), server address (4);
//!   then if IPv6: client address (16), prefix length (1), server address (16);
//! - assign-ack: [`CONTROL`], [`KIND_ASSIGN_ACK`];
//! - padding: [`CONTROL`] alone or followed by [`KIND_PADDING`] and any bytes: what a probing
//!   end sends to keep the link measured (the core's bulk filler is zero bytes), ignored.

use std::net::{Ipv4Addr, Ipv6Addr};

use serde::Serialize;
use thiserror::Error;

/// First byte of a control message.
pub const CONTROL: u8 = 0x00;
/// Control kind: padding (the core's zero-byte filler), ignored by the receiver.
pub const KIND_PADDING: u8 = 0;
/// Control kind: the server's address assignment.
pub const KIND_ASSIGN: u8 = 1;
/// Control kind: the client confirms the assignment.
pub const KIND_ASSIGN_ACK: u8 = 2;
/// Tunnel protocol version carried in the greeting.
pub const VERSION: u8 = 1;
/// Magic at the start of the greeting.
pub const GREETING_MAGIC: &[u8; 13] = b"SPROUT-TUNNEL";
/// Length of the greeting, in bytes.
pub const GREETING_BYTES: usize = 16;
/// Smallest TUN MTU either end accepts (bytes): IPv6 needs 1280; IPv4 alone at least 576.
pub const MIN_TUN_MTU_V4: u16 = 576;
/// Smallest TUN MTU when IPv6 is carried (bytes).
pub const MIN_TUN_MTU_V6: u16 = 1280;

/// The client's greeting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Greeting {
    /// The client's core `max_datagram_bytes`; the server's end of the session uses the same.
    pub max_datagram_bytes: u16,
}

/// An IPv4 assignment: the client's address, the network's prefix length, and the server's
/// own address in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct V4Assignment {
    /// The client's tunnel address.
    pub client: Ipv4Addr,
    /// Prefix length of the tunnel network (bits).
    pub prefix: u8,
    /// The server's tunnel address.
    pub server: Ipv4Addr,
}

/// An IPv6 assignment (as [`V4Assignment`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct V6Assignment {
    /// The client's tunnel address.
    pub client: Ipv6Addr,
    /// Prefix length of the tunnel network (bits).
    pub prefix: u8,
    /// The server's tunnel address.
    pub server: Ipv6Addr,
}

/// What the server gives a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Assignment {
    /// IPv4 addresses, if the tunnel carries IPv4.
    pub v4: Option<V4Assignment>,
    /// IPv6 addresses, if the tunnel carries IPv6.
    pub v6: Option<V6Assignment>,
    /// MTU of the TUN device at both ends (bytes): the largest IP packet the tunnel carries.
    pub mtu: u16,
}

/// A control message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Server → client: addresses and MTU.
    Assign(Assignment),
    /// Client → server: the assignment arrived.
    AssignAck,
    /// Either way: padding that keeps the link measured; ignored.
    Padding,
}

/// What a core datagram's payload is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PayloadKind {
    /// An IP packet (version nibble 4 or 6).
    Packet,
    /// A control message.
    Control,
}

/// Why a greeting or control message was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum ControlError {
    /// Not a tunnel greeting (wrong magic or length): another Sprout application.
    #[error("not a SproutTunnel greeting")]
    NotTunnel,
    /// A tunnel greeting of another version.
    #[error("tunnel protocol version {0}, this build speaks {VERSION}")]
    Version(u8),
    /// A field out of its possible range, a wrong length or an unknown kind.
    #[error("malformed control message: {0}")]
    Malformed(&'static str),
}

/// The kind of a core datagram's payload, or `None` for an empty or unknown one.
pub fn kind(payload: &[u8]) -> Option<PayloadKind> {
    match payload.first()? {
        &CONTROL => Some(PayloadKind::Control),
        b if b >> 4 == 4 || b >> 4 == 6 => Some(PayloadKind::Packet),
        _ => None,
    }
}

impl Greeting {
    /// The greeting's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(GREETING_BYTES);
        out.extend_from_slice(GREETING_MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&self.max_datagram_bytes.to_be_bytes());
        out
    }

    /// Reads a greeting; `max_datagram_bytes` must lie in `limits` (inclusive).
    pub fn decode(b: &[u8], limits: (u16, u16)) -> Result<Greeting, ControlError> {
        if b.len() < GREETING_MAGIC.len() + 1 || !b.starts_with(GREETING_MAGIC) {
            return Err(ControlError::NotTunnel);
        }
        let version = b[GREETING_MAGIC.len()];
        if version != VERSION {
            return Err(ControlError::Version(version));
        }
        if b.len() != GREETING_BYTES {
            return Err(ControlError::Malformed("greeting length"));
        }
        let max_datagram_bytes = u16::from_be_bytes([b[14], b[15]]);
        if max_datagram_bytes < limits.0 || max_datagram_bytes > limits.1 {
            return Err(ControlError::Malformed("max_datagram_bytes out of range"));
        }
        Ok(Greeting { max_datagram_bytes })
    }
}

impl Control {
    /// The message's bytes.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Control::AssignAck => vec![CONTROL, KIND_ASSIGN_ACK],
            Control::Padding => vec![CONTROL, KIND_PADDING],
            Control::Assign(a) => {
                let flags = u8::from(a.v4.is_some()) | (u8::from(a.v6.is_some()) << 1);
                let mut out = vec![CONTROL, KIND_ASSIGN, flags];
                out.extend_from_slice(&a.mtu.to_be_bytes());
                if let Some(v4) = &a.v4 {
                    out.extend_from_slice(&v4.client.octets());
                    out.push(v4.prefix);
                    out.extend_from_slice(&v4.server.octets());
                }
                if let Some(v6) = &a.v6 {
                    out.extend_from_slice(&v6.client.octets());
                    out.push(v6.prefix);
                    out.extend_from_slice(&v6.server.octets());
                }
                out
            }
        }
    }

    /// Reads a control message, checking every field (padding, any length, is accepted as
    /// is): prefix lengths at most 30 (IPv4) and
    /// 126 (IPv6) so that the network holds both addresses, both addresses inside the same
    /// network and different, the MTU at least [`MIN_TUN_MTU_V4`] (or [`MIN_TUN_MTU_V6`]
    /// with IPv6) and at most 65535, at least one family, no trailing bytes.
    pub fn decode(b: &[u8]) -> Result<Control, ControlError> {
        let malformed = ControlError::Malformed;
        if b.first() != Some(&CONTROL) {
            return Err(malformed("not a control message"));
        }
        if b.len() == 1 {
            return Ok(Control::Padding);
        }
        match b[1] {
            KIND_PADDING => Ok(Control::Padding),
            KIND_ASSIGN_ACK if b.len() == 2 => Ok(Control::AssignAck),
            KIND_ASSIGN_ACK => Err(malformed("assign-ack length")),
            KIND_ASSIGN => {
                let flags = *b.get(2).ok_or(malformed("assign length"))?;
                if flags == 0 || flags > 3 {
                    return Err(malformed("assign flags"));
                }
                let (has4, has6) = (flags & 1 != 0, flags & 2 != 0);
                let want = 5 + if has4 { 9 } else { 0 } + if has6 { 33 } else { 0 };
                if b.len() != want {
                    return Err(malformed("assign length"));
                }
                let mtu = u16::from_be_bytes([b[3], b[4]]);
                let min = if has6 { MIN_TUN_MTU_V6 } else { MIN_TUN_MTU_V4 };
                if mtu < min {
                    return Err(malformed("MTU too small"));
                }
                let mut at = 5;
                let v4 = if has4 {
                    let client = Ipv4Addr::new(b[at], b[at + 1], b[at + 2], b[at + 3]);
                    let prefix = b[at + 4];
                    let server = Ipv4Addr::new(b[at + 5], b[at + 6], b[at + 7], b[at + 8]);
                    at += 9;
                    if prefix > 30 {
                        return Err(malformed("IPv4 prefix length"));
                    }
                    let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
                    if client == server
                        || u32::from(client) & mask != u32::from(server) & mask
                        || client.is_unspecified()
                        || client.is_broadcast()
                        || client.is_multicast()
                    {
                        return Err(malformed("IPv4 addresses"));
                    }
                    Some(V4Assignment {
                        client,
                        prefix,
                        server,
                    })
                } else {
                    None
                };
                let v6 = if has6 {
                    let mut c = [0u8; 16];
                    c.copy_from_slice(&b[at..at + 16]);
                    let prefix = b[at + 16];
                    let mut s = [0u8; 16];
                    s.copy_from_slice(&b[at + 17..at + 33]);
                    let (client, server) = (Ipv6Addr::from(c), Ipv6Addr::from(s));
                    if prefix > 126 {
                        return Err(malformed("IPv6 prefix length"));
                    }
                    let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
                    if client == server
                        || u128::from(client) & mask != u128::from(server) & mask
                        || client.is_unspecified()
                        || client.is_multicast()
                    {
                        return Err(malformed("IPv6 addresses"));
                    }
                    Some(V6Assignment {
                        client,
                        prefix,
                        server,
                    })
                } else {
                    None
                };
                Ok(Control::Assign(Assignment { v4, v6, mtu }))
            }
            _ => Err(malformed("unknown control kind")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greeting_round_trip_and_refusals() {
        let g = Greeting {
            max_datagram_bytes: 1440,
        };
        let b = g.encode();
        assert_eq!(b.len(), GREETING_BYTES);
        assert_eq!(Greeting::decode(&b, (600, 1472)), Ok(g));
        assert_eq!(
            Greeting::decode(b"hello", (600, 1472)),
            Err(ControlError::NotTunnel)
        );
        let mut v = b.clone();
        v[13] = 9;
        assert_eq!(
            Greeting::decode(&v, (600, 1472)),
            Err(ControlError::Version(9))
        );
        assert!(Greeting::decode(&b, (600, 1000)).is_err());
        assert!(Greeting::decode(&b[..15], (600, 1472)).is_err());
    }

    #[test]
    fn assign_round_trip_and_refusals() {
        let a = Assignment {
            v4: Some(V4Assignment {
                client: "10.77.0.2".parse().unwrap(),
                prefix: 24,
                server: "10.77.0.1".parse().unwrap(),
            }),
            v6: Some(V6Assignment {
                client: "fd77::2".parse().unwrap(),
                prefix: 64,
                server: "fd77::1".parse().unwrap(),
            }),
            mtu: 1363,
        };
        let b = Control::Assign(a).encode();
        assert_eq!(b.len(), 5 + 9 + 33);
        assert_eq!(Control::decode(&b), Ok(Control::Assign(a)));
        assert_eq!(kind(&b), Some(PayloadKind::Control));
        assert_eq!(
            Control::decode(&Control::AssignAck.encode()),
            Ok(Control::AssignAck)
        );
        // The core's filler is zero bytes: padding, whatever its length.
        assert_eq!(Control::decode(&[0]), Ok(Control::Padding));
        assert_eq!(Control::decode(&[0; 1300]), Ok(Control::Padding));
        assert!(Control::decode(&[]).is_err());
        for cut in 2..b.len() {
            assert!(Control::decode(&b[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad = b.clone();
        bad[12] = 11; // server address outside the client's /24
        assert!(Control::decode(&bad).is_err());
        let mut bad = b.clone();
        bad[3] = 0;
        bad[4] = 100; // MTU below IPv6's minimum
        assert!(Control::decode(&bad).is_err());
        assert_eq!(kind(&[0x45]), Some(PayloadKind::Packet));
        assert_eq!(kind(&[0x60]), Some(PayloadKind::Packet));
        assert_eq!(kind(&[0x13]), None);
        assert_eq!(kind(&[]), None);
    }
}
