//! The IP addresses of the network interfaces (`getifaddrs`, through nix).

use std::net::{IpAddr, Ipv4Addr};

use nix::sys::socket::SockaddrStorage;

/// An IP address of an interface of the calling thread's network namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterfaceAddress {
    /// The interface's name.
    pub interface: String,
    /// The address.
    pub address: IpAddr,
    /// The prefix length of its netmask (bits), when the kernel gives a netmask.
    pub prefix_len: Option<u8>,
    /// The peer's address of a point-to-point interface, or the broadcast address of a
    /// broadcast one.
    pub peer_or_broadcast: Option<IpAddr>,
}

fn ip_of(sa: &SockaddrStorage) -> Option<IpAddr> {
    if let Some(sin) = sa.as_sockaddr_in() {
        Some(IpAddr::V4(sin.ip()))
    } else {
        sa.as_sockaddr_in6().map(|sin6| IpAddr::V6(sin6.ip()))
    }
}

/// The number of one bits of a netmask.
fn prefix_of(mask: &SockaddrStorage) -> Option<u8> {
    match ip_of(mask)? {
        IpAddr::V4(m) => Some(u32::from(m).count_ones() as u8),
        IpAddr::V6(m) => Some(u128::from(m).count_ones() as u8),
    }
}

/// The IPv4 and IPv6 addresses of the calling thread's namespace's interfaces, in the
/// kernel's order; empty if they cannot be read.
pub fn interface_addresses() -> Vec<InterfaceAddress> {
    let Ok(list) = nix::ifaddrs::getifaddrs() else {
        return Vec::new();
    };
    list.filter_map(|ifa| {
        let address = ifa.address.as_ref().and_then(ip_of)?;
        Some(InterfaceAddress {
            address,
            prefix_len: ifa.netmask.as_ref().and_then(prefix_of),
            peer_or_broadcast: ifa
                .destination
                .as_ref()
                .or(ifa.broadcast.as_ref())
                .and_then(ip_of),
            interface: ifa.interface_name,
        })
    })
    .collect()
}

/// The IPv4 addresses in use on the calling thread's namespace's interfaces: local and peer
/// addresses, broadcast addresses too (what a new point-to-point link must not take).
pub fn ipv4_addresses_in_use() -> Vec<Ipv4Addr> {
    let mut out = Vec::new();
    for a in interface_addresses() {
        for ip in std::iter::once(a.address).chain(a.peer_or_broadcast) {
            if let IpAddr::V4(v4) = ip {
                out.push(v4);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_listed_with_its_prefix() {
        let all = interface_addresses();
        assert!(
            all.iter().any(|a| a.interface == "lo"
                && a.address == IpAddr::from([127, 0, 0, 1])
                && a.prefix_len == Some(8)),
            "{all:?}"
        );
    }
}
