//! Why a tunnel end cannot be made from its settings ([`TunnelServer::new`],
//! [`TunnelClient::new`]).
//!
//! [`TunnelServer::new`]: crate::TunnelServer::new
//! [`TunnelClient::new`]: crate::TunnelClient::new

use std::net::{IpAddr, Ipv4Addr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use sprout_secure::{PublicKey, SecureError};

use crate::MIN_DATAGRAM_BYTES;

/// A tunnel end's settings rejected, with the message a person sees.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SettingsError {
    /// The Sprout core configuration is invalid.
    #[error(transparent)]
    Core(#[from] sprout_core::ConfigError),
    /// The client's secure session cannot start (a bad key or greeting).
    #[error(transparent)]
    Secure(#[from] SecureError),
    /// The client's core `max_datagram_bytes` (bytes) is outside
    /// [`MIN_DATAGRAM_BYTES`]`..=65535`.
    #[error(
        "the core's max_datagram_bytes ({max}) must be {MIN_DATAGRAM_BYTES}..=65535 for the tunnel"
    )]
    DatagramSize {
        /// The configured size (bytes).
        max: usize,
    },
    /// The server's core `max_datagram_bytes` (bytes) is below [`MIN_DATAGRAM_BYTES`].
    #[error("the core's max_datagram_bytes ({max}) is below the tunnel's minimum of {MIN_DATAGRAM_BYTES}")]
    DatagramSizeBelowMinimum {
        /// The configured size (bytes).
        max: usize,
    },
    /// The server has neither an IPv4 nor an IPv6 network.
    #[error("the tunnel needs an IPv4 or an IPv6 network (or both)")]
    NoNetwork,
    /// The IPv4 network is smaller than a /30.
    #[error("IPv4 tunnel network {0} is too small (a prefix of at most /30 is needed)")]
    V4NetworkTooSmall(Ipv4Net),
    /// The server's IPv4 address is the network's or its broadcast address.
    #[error(
        "the server's IPv4 tunnel address in {net} must be a host address (e.g. {}/{})",
        first_host(.net),
        .net.prefix_len()
    )]
    V4ServerNotHost {
        /// The server's address and the network's prefix.
        net: Ipv4Net,
    },
    /// The IPv6 network is smaller than a /126.
    #[error("IPv6 tunnel network {0} is too small (a prefix of at most /126 is needed)")]
    V6NetworkTooSmall(Ipv6Net),
    /// The server's IPv6 address is the network's first or last address.
    #[error(
        "the server's IPv6 tunnel address in {0} must not be the network's first or last address"
    )]
    V6ServerNotHost(Ipv6Net),
    /// The TUN MTU (bytes) is below the minimum for the families carried.
    #[error("TUN MTU {mtu} is below the minimum of {min} bytes{}", if *.v6 { " (IPv6)" } else { "" })]
    MtuTooSmall {
        /// The configured MTU (bytes).
        mtu: u16,
        /// The minimum (bytes): 576, or 1280 with IPv6.
        min: u16,
        /// Whether the tunnel carries IPv6.
        v6: bool,
    },
    /// An address pinned to a client key is not a client address of the network.
    #[error("address {addr} pinned to {key} is not a client address of {net}")]
    PinnedOutside {
        /// The pinned address.
        addr: IpAddr,
        /// The client's key.
        key: PublicKey,
        /// The tunnel network of its family.
        net: IpNet,
    },
    /// An address is pinned for a family the tunnel does not carry.
    #[error("address {addr} pinned to {key}, but the tunnel carries no {family}")]
    PinnedWithoutFamily {
        /// The pinned address.
        addr: IpAddr,
        /// The client's key.
        key: PublicKey,
        /// `IPv4` or `IPv6`.
        family: &'static str,
    },
    /// One address is pinned to two keys.
    #[error("address {0} is pinned to two keys")]
    PinnedTwice(IpAddr),
}

/// The first host address of `net` (an example of a valid server address).
fn first_host(net: &Ipv4Net) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(net.network()).saturating_add(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_the_command_lines() {
        let e = SettingsError::V4ServerNotHost {
            net: "10.0.0.0/24".parse().unwrap(),
        };
        assert_eq!(
            e.to_string(),
            "the server's IPv4 tunnel address in 10.0.0.0/24 must be a host address (e.g. 10.0.0.1/24)"
        );
        let e = SettingsError::MtuTooSmall {
            mtu: 1000,
            min: 1280,
            v6: true,
        };
        assert_eq!(
            e.to_string(),
            "TUN MTU 1000 is below the minimum of 1280 bytes (IPv6)"
        );
        let e = SettingsError::MtuTooSmall {
            mtu: 500,
            min: 576,
            v6: false,
        };
        assert_eq!(
            e.to_string(),
            "TUN MTU 500 is below the minimum of 576 bytes"
        );
        assert_eq!(
            SettingsError::DatagramSize { max: 100 }.to_string(),
            format!("the core's max_datagram_bytes (100) must be {MIN_DATAGRAM_BYTES}..=65535 for the tunnel")
        );
        let e = SettingsError::PinnedWithoutFamily {
            addr: "fd00::5".parse().unwrap(),
            key: PublicKey([0; 32]),
            family: "IPv6",
        };
        assert!(
            e.to_string().ends_with(", but the tunnel carries no IPv6"),
            "{e}"
        );
    }
}
