//! Why a tunnel end cannot be made from its settings: the one check of them
//! ([`ServerSettings::validate`], [`ClientSettings::validate`]), which [`TunnelServer::new`],
//! [`TunnelClient::new`] and the command line's [`crate::config`] all run; the command line
//! names the flag that set what is wrong.
//!
//! [`TunnelServer::new`]: crate::TunnelServer::new
//! [`TunnelClient::new`]: crate::TunnelClient::new
//! [`ServerSettings::validate`]: crate::ServerSettings::validate
//! [`ClientSettings::validate`]: crate::ClientSettings::validate

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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
        "datagrams of at most {max} bytes are too {} for the tunnel: it needs {MIN_DATAGRAM_BYTES}..=65535 bytes (a 576-byte IPv4 packet after the core's header)",
        if *.max < MIN_DATAGRAM_BYTES as usize { "small" } else { "large" }
    )]
    DatagramSize {
        /// The configured size (bytes).
        max: usize,
    },
    /// The server's core `max_datagram_bytes` (bytes) is below [`MIN_DATAGRAM_BYTES`].
    #[error("datagrams of at most {max} bytes are too small for the tunnel: it needs at least {MIN_DATAGRAM_BYTES} bytes (a 576-byte IPv4 packet after the core's header)")]
    DatagramSizeBelowMinimum {
        /// The configured size (bytes).
        max: usize,
    },
    /// The server has neither an IPv4 nor an IPv6 network.
    #[error("the tunnel must carry IPv4 or IPv6: it needs an IPv4 or an IPv6 network (or both)")]
    NoNetwork,
    /// The IPv4 network is smaller than a /30.
    #[error(
        "the IPv4 tunnel network {0} has no room for clients (a prefix of at most /30 is needed)"
    )]
    V4NetworkTooSmall(Ipv4Net),
    /// The server's IPv4 address is the network's or its broadcast address.
    #[error(
        "the server's IPv4 tunnel address {} is the network's {} address; give the server's own address, e.g. {}/{}",
        .net.addr(),
        if .net.addr() == .net.network() { "network" } else { "broadcast" },
        first_host(.net),
        .net.prefix_len()
    )]
    V4ServerNotHost {
        /// The server's address and the network's prefix.
        net: Ipv4Net,
    },
    /// The IPv6 network is smaller than a /126.
    #[error(
        "the IPv6 tunnel network {0} has no room for clients (a prefix of at most /126 is needed)"
    )]
    V6NetworkTooSmall(Ipv6Net),
    /// The server's IPv6 address is the network's first or last address.
    #[error(
        "the server's IPv6 tunnel address {} is the network's {} address; give the server's address, e.g. {}/{}",
        .0.addr(),
        if .0.addr() == .0.network() { "own (subnet-router anycast)" } else { "last" },
        first_host6(.0),
        .0.prefix_len()
    )]
    V6ServerNotHost(Ipv6Net),
    /// The TUN MTU (bytes) is below the minimum for the families carried.
    #[error("a TUN MTU of {mtu} bytes is below the {min} that {} needs", if *.v6 { "IPv6" } else { "IPv4" })]
    MtuTooSmall {
        /// The configured MTU (bytes).
        mtu: u16,
        /// The minimum (bytes): 576, or 1280 with IPv6.
        min: u16,
        /// Whether the tunnel carries IPv6.
        v6: bool,
    },
    /// An address pinned to a client key is not a client address of the network.
    #[error("address {addr} pinned to {key} is not a client address of {} (the server is {})", .net.trunc(), .net.addr())]
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
    #[error("address {0} is pinned twice (to two keys)")]
    PinnedTwice(IpAddr),
}

/// The first host address of `net` (an example of a valid server address).
fn first_host(net: &Ipv4Net) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(net.network()).saturating_add(1))
}

/// The first address after the network's own in `net` (an example of a valid server address).
fn first_host6(net: &Ipv6Net) -> Ipv6Addr {
    Ipv6Addr::from(u128::from(net.network()).saturating_add(1))
}

/// Checks a server's IPv4 network: room for clients, and a host address for the server.
pub(crate) fn check_v4(net: &Ipv4Net) -> Result<(), SettingsError> {
    if net.prefix_len() > 30 {
        return Err(SettingsError::V4NetworkTooSmall(*net));
    }
    if net.addr() == net.network() || net.addr() == net.broadcast() {
        return Err(SettingsError::V4ServerNotHost { net: *net });
    }
    Ok(())
}

/// Checks a server's IPv6 network: room for clients, and neither its first nor its last
/// address for the server.
pub(crate) fn check_v6(net: &Ipv6Net) -> Result<(), SettingsError> {
    if net.prefix_len() > 126 {
        return Err(SettingsError::V6NetworkTooSmall(*net));
    }
    if net.addr() == net.network() || net.addr() == net.broadcast() {
        return Err(SettingsError::V6ServerNotHost(*net));
    }
    Ok(())
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
            "the server's IPv4 tunnel address 10.0.0.0 is the network's network address; give the server's own address, e.g. 10.0.0.1/24"
        );
        let e = SettingsError::V6ServerNotHost("fd77::/64".parse().unwrap());
        assert_eq!(
            e.to_string(),
            "the server's IPv6 tunnel address fd77:: is the network's own (subnet-router anycast) address; give the server's address, e.g. fd77::1/64"
        );
        let e = SettingsError::MtuTooSmall {
            mtu: 1000,
            min: 1280,
            v6: true,
        };
        assert_eq!(
            e.to_string(),
            "a TUN MTU of 1000 bytes is below the 1280 that IPv6 needs"
        );
        let e = SettingsError::MtuTooSmall {
            mtu: 500,
            min: 576,
            v6: false,
        };
        assert_eq!(
            e.to_string(),
            "a TUN MTU of 500 bytes is below the 576 that IPv4 needs"
        );
        assert_eq!(
            SettingsError::DatagramSize { max: 100 }.to_string(),
            format!("datagrams of at most 100 bytes are too small for the tunnel: it needs {MIN_DATAGRAM_BYTES}..=65535 bytes (a 576-byte IPv4 packet after the core's header)")
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
