//! The sizes that make a full tunnel datagram fit the path MTU.
//!
//! A tunnel datagram on the path is the outer IP header (20 bytes IPv4, 40 bytes IPv6), the
//! UDP header (8), the security layer's header and tag ([`sprout_secure::OVERHEAD_BYTES`],
//! 32) and the core datagram. The core datagram is the core's header (at most
//! [`sprout_core::wire::header_bytes`] of the forecast length) and one IP packet, so the TUN
//! MTU is the core's `max_datagram_bytes` minus its largest header.

use std::net::IpAddr;

/// Outer IP + UDP header bytes for a server at `server`.
pub fn outer_header_bytes(server: &IpAddr) -> usize {
    match server {
        IpAddr::V4(_) => 20 + 8,
        IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some() => 20 + 8,
        IpAddr::V6(_) => 40 + 8,
    }
}

/// The core's `max_datagram_bytes` for a path MTU of `path_mtu` bytes toward `server`.
pub fn max_datagram_bytes(path_mtu: usize, server: &IpAddr) -> usize {
    path_mtu.saturating_sub(outer_header_bytes(server) + sprout_secure::OVERHEAD_BYTES)
}

/// The TUN MTU for a core `max_datagram_bytes` and a forecast of `forecast_ticks` ticks.
pub fn tun_mtu(max_datagram_bytes: usize, forecast_ticks: usize) -> usize {
    max_datagram_bytes.saturating_sub(sprout_core::wire::header_bytes(forecast_ticks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_1500_byte_path() {
        let v4: IpAddr = "192.0.2.1".parse().unwrap();
        let v6: IpAddr = "2001:db8::1".parse().unwrap();
        assert_eq!(max_datagram_bytes(1500, &v4), 1440);
        assert_eq!(max_datagram_bytes(1500, &v6), 1420);
        assert_eq!(tun_mtu(1440, 8), 1440 - 77);
        // The whole datagram: 20 + 8 + 32 + 77 + 1363 = 1500.
        assert_eq!(28 + 32 + 77 + tun_mtu(1440, 8), 1500);
    }
}
