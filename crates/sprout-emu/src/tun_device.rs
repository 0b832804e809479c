//! Non-persistent TUN devices and their IPv4 configuration: [`sprout_os::tun`], and the IPv4
//! addresses already in use on this namespace's interfaces.

use std::net::{IpAddr, Ipv4Addr};

pub use sprout_os::tun::{
    add_default_route, configure_point_to_point, interface_exists, set_up, TunDevice,
    MAX_IFNAME_LEN,
};

/// The IPv4 addresses currently assigned to interfaces of the calling thread's namespace
/// (local and peer addresses; broadcast addresses too).
pub fn existing_ipv4_addresses() -> Vec<Ipv4Addr> {
    let mut out = Vec::new();
    for a in sprout_os::interfaces::interface_addresses() {
        for ip in std::iter::once(a.address).chain(a.peer_or_broadcast) {
            if let IpAddr::V4(v4) = ip {
                out.push(v4);
            }
        }
    }
    out
}
