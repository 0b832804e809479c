//! Fuzz target: SproutTunnel's control messages, `sprout_tunnel::control::Greeting::decode`
//! (the client's greeting, read by the server inside the handshake) and
//! `sprout_tunnel::control::Control::decode` (the address assignment and its
//! acknowledgement, read inside core datagrams), and `control::kind`.

use std::net::Ipv4Addr;

use sprout_tunnel::control::{
    self, Assignment, Control, Greeting, PayloadKind, V4Assignment, V6Assignment, MIN_TUN_MTU_V4,
    MIN_TUN_MTU_V6,
};
use sprout_tunnel::MIN_DATAGRAM_BYTES;

use crate::Target;

/// The `max_datagram_bytes` limits a server may check greetings against.
const LIMITS: [(u16, u16); 3] = [(MIN_DATAGRAM_BYTES, 1472), (0, u16::MAX), (1000, 1000)];

/// Decodes any bytes as a greeting and as a control message; what decodes must encode to the
/// same bytes and decode again to the same value, with every field in its range.
#[derive(Default)]
pub struct ControlTarget;

fn assignment(v4: bool, v6: bool, mtu: u16) -> Assignment {
    Assignment {
        v4: v4.then(|| V4Assignment {
            client: Ipv4Addr::new(10, 77, 0, 2),
            prefix: 24,
            server: Ipv4Addr::new(10, 77, 0, 1),
        }),
        v6: v6.then(|| V6Assignment {
            client: "fd77::2".parse().unwrap(),
            prefix: 64,
            server: "fd77::1".parse().unwrap(),
        }),
        mtu,
    }
}

impl Target for ControlTarget {
    fn name(&self) -> &'static str {
        "control"
    }

    fn seeds(&mut self) -> Vec<Vec<u8>> {
        let mut tight = assignment(true, false, MIN_TUN_MTU_V4);
        if let Some(v4) = tight.v4.as_mut() {
            v4.prefix = 30;
            v4.client = Ipv4Addr::new(192, 0, 2, 1);
            v4.server = Ipv4Addr::new(192, 0, 2, 2);
        }
        vec![
            Greeting {
                max_datagram_bytes: 1440,
            }
            .encode(),
            Greeting {
                max_datagram_bytes: MIN_DATAGRAM_BYTES,
            }
            .encode(),
            Control::AssignAck.encode(),
            Control::Assign(assignment(true, false, 1363)).encode(),
            Control::Assign(assignment(false, true, MIN_TUN_MTU_V6)).encode(),
            Control::Assign(assignment(true, true, 65535)).encode(),
            Control::Assign(tight).encode(),
        ]
    }

    fn run(&mut self, input: &[u8]) {
        let kind = control::kind(input);
        for limits in LIMITS {
            if let Ok(g) = Greeting::decode(input, limits) {
                assert!(g.max_datagram_bytes >= limits.0 && g.max_datagram_bytes <= limits.1);
                assert_eq!(g.encode(), input, "a greeting re-encodes to its bytes");
                assert_eq!(Greeting::decode(&g.encode(), limits), Ok(g));
            }
        }
        match Control::decode(input) {
            Ok(c) => {
                assert_eq!(kind, Some(PayloadKind::Control));
                let bytes = c.encode();
                if c == Control::Padding {
                    // Padding is any length of bytes after [0x00] or [0x00, 0x00].
                    assert!(input.len() == 1 || input[1] == 0, "padding is kind 0");
                } else {
                    assert_eq!(bytes, input, "a control message re-encodes to its bytes");
                }
                assert_eq!(Control::decode(&bytes), Ok(c), "decode(encode(x)) == x");
                if let Control::Assign(a) = c {
                    assert!(a.v4.is_some() || a.v6.is_some());
                    let min = if a.v6.is_some() {
                        MIN_TUN_MTU_V6
                    } else {
                        MIN_TUN_MTU_V4
                    };
                    assert!(a.mtu >= min);
                    if let Some(v4) = a.v4 {
                        assert!(v4.prefix <= 30 && v4.client != v4.server);
                        let mask = u32::MAX.checked_shl(32 - u32::from(v4.prefix)).unwrap_or(0);
                        assert_eq!(
                            u32::from(v4.client) & mask,
                            u32::from(v4.server) & mask,
                            "both IPv4 addresses in one network"
                        );
                    }
                    if let Some(v6) = a.v6 {
                        assert!(v6.prefix <= 126 && v6.client != v6.server);
                        assert!(!v6.client.is_unspecified() && !v6.client.is_multicast());
                        let mask = u128::MAX
                            .checked_shl(128 - u32::from(v6.prefix))
                            .unwrap_or(0);
                        assert_eq!(
                            u128::from(v6.client) & mask,
                            u128::from(v6.server) & mask,
                            "both IPv6 addresses in one network"
                        );
                    }
                }
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
}
