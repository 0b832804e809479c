//! The tunnel's TUN device: created, given its MTU and addresses, brought up; gone with
//! everything on it when the [`Device`] is dropped or the process dies.
//!
//! ## Why sprout-os's TUN code and not a TUN crate
//!
//! The device is [`sprout_os::tun::TunDevice`], the code the link emulator has used (and CI
//! has tested) since it was written, rather than a crate such as `tun` or `tun-tap`, because
//! what the tunnel needs is exactly what that code does and the crates do not all promise:
//!
//! - **non-persistent**: the device lives as long as its descriptor. When the descriptor
//!   closes, on a normal exit, a panic, or `SIGKILL`, the kernel deletes the device and with
//!   it its addresses and every route through it. Nothing the device carries can be left
//!   behind, so the clean-up list ([`crate::cleanup`]) only holds what lies outside it;
//! - **`IFF_TUN_EXCL`**: it never attaches to an existing (say persistent) device of the same
//!   name, so two tunnels cannot share one device by mistake: the second gets a clear "device
//!   exists" error;
//! - **no packet-information header** (`IFF_NO_PI`): a read is one IP packet, as the engine
//!   takes it, and a write is one IP packet;
//! - **a non-blocking, close-on-exec descriptor** that the runtime's own `mio` loop polls with
//!   the UDP socket (the crates bring their own async wrappers or runtimes);
//! - no new dependency tree, and names with `%d` resolved by the kernel and read back.
//!
//! ## Addresses and routes: the `ip` command
//!
//! Addresses, the MTU, the link state and routes are set with `ip` from iproute2, as
//! `wg-quick` does: IPv6 addresses and most route operations have no ioctl, netlink would
//! mean a netlink crate or a hand-written codec, and `ip`'s own error message (shown verbatim
//! on failure) is what a person would see typing the same command. The commands are the ones
//! a person would type: `ip link set dev sprout0 mtu 1363`, `ip -4 address add 10.77.0.1/24 dev
//! sprout0`, `ip -6 address add fd77::1/64 dev sprout0 nodad`, `ip link set dev sprout0 up`.
//! If `ip` is missing the error says to install iproute2.
//!
//! ## IPv6 chatter
//!
//! Before the device goes up its IPv6 sysctls (`/proc/sys/net/ipv6/conf/DEV/`) are set so it
//! sends nothing of its own: `addr_gen_mode` 1 (no link-local address, so no router
//! solicitations, MLD reports or neighbour discovery), `accept_ra` 0, `autoconf` 0,
//! `router_solicitations` 0, `accept_dad` 0 and `dad_transmits` 0 (the tunnel's addresses are
//! added `nodad`: nobody else is on the link). When the tunnel carries no IPv6,
//! `disable_ipv6` is 1 on the device.

use std::io;
use std::os::fd::RawFd;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use sprout_os::tun::TunDevice;

/// Why the tunnel could not set up (or run): a message for the person at the terminal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SetupError(pub String);

impl SetupError {
    /// An error with this message.
    pub fn new(msg: impl Into<String>) -> SetupError {
        SetupError(msg.into())
    }
}

/// Whether this process has `CAP_NET_ADMIN` in its effective set (root has it).
pub fn has_net_admin() -> bool {
    sprout_os::caps::has_net_admin()
}

/// `Ok` if this process may make a TUN device and change addresses and routes (`CAP_NET_ADMIN`)
/// and the kernel offers TUN devices (`/dev/net/tun`).
pub fn check_can_create() -> Result<(), SetupError> {
    if !has_net_admin() {
        return Err(SetupError::new(
            "sprout tunnel needs root (CAP_NET_ADMIN) to create its TUN device and set addresses and routes: run it with sudo",
        ));
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Err(SetupError::new(
            "/dev/net/tun is missing: this kernel or container offers no TUN devices (load the module with `modprobe tun`, or give the container the device)",
        ));
    }
    ip_path()?;
    Ok(())
}

/// Where `ip` (iproute2) is: on `PATH`, else in the usual sbin folders (a `sudo` without
/// them on `PATH`).
pub fn ip_path() -> Result<PathBuf, SetupError> {
    static IP: OnceLock<Option<PathBuf>> = OnceLock::new();
    IP.get_or_init(|| {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .chain(
                ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
                    .iter()
                    .map(PathBuf::from),
            )
            .map(|d| d.join("ip"))
            .find(|p| p.is_file())
    })
    .clone()
    .ok_or_else(|| {
        SetupError::new(
            "the `ip` command (iproute2) is missing: sprout tunnel sets addresses and routes with it; install iproute2",
        )
    })
}

/// Runs `ip ARGS`; its standard output, or an error with the command and its standard error.
pub fn ip(args: &[&str]) -> Result<String, SetupError> {
    let path = ip_path()?;
    let out = Command::new(&path)
        .args(args)
        .output()
        .map_err(|e| SetupError(format!("cannot run {}: {e}", path.display())))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(SetupError(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// Whether IPv6 is usable on this host (this namespace): the kernel has it and it is not
/// disabled for all interfaces.
pub fn host_ipv6_enabled() -> bool {
    match sprout_files::read_to_string_capped("/proc/sys/net/ipv6/conf/all/disable_ipv6", 64) {
        Ok(v) => v.trim() == "0",
        Err(_) => false,
    }
}

/// Whether the kernel forwards packets between interfaces (`net.ipv4.ip_forward`, or
/// `net.ipv6.conf.all.forwarding` when `v6`).
pub fn forwarding_enabled(v6: bool) -> bool {
    let path = if v6 {
        "/proc/sys/net/ipv6/conf/all/forwarding"
    } else {
        "/proc/sys/net/ipv4/ip_forward"
    };
    sprout_files::read_to_string_capped(path, 64)
        .map(|v| v.trim() == "1")
        .unwrap_or(false)
}

/// An address of an interface of this namespace, with its prefix length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterfaceAddress {
    /// The interface.
    pub interface: String,
    /// The address and prefix.
    pub net: IpNet,
}

/// The IPv4 and IPv6 addresses of this namespace's interfaces (a netmask-less address counts
/// as a host address).
pub fn interface_addresses() -> Vec<InterfaceAddress> {
    sprout_os::interfaces::interface_addresses()
        .into_iter()
        .filter_map(|a| {
            let max = if a.address.is_ipv4() { 32 } else { 128 };
            let prefix = a.prefix_len.unwrap_or(max).min(max);
            let net = IpNet::new(a.address, prefix).ok()?;
            Some(InterfaceAddress {
                interface: a.interface,
                net,
            })
        })
        .collect()
}

/// An error if `net`'s address is already on an interface, or another interface has an
/// address in exactly the same network (two devices would claim the same prefix).
pub fn check_address_free(net: IpNet) -> Result<(), SetupError> {
    for a in interface_addresses() {
        if a.net.addr() == net.addr() {
            return Err(SetupError(format!(
                "address {} is in use on interface {} (another tunnel? choose other tunnel addresses)",
                net.addr(),
                a.interface
            )));
        }
        if a.net.trunc() == net.trunc() && !a.net.addr().is_loopback() {
            return Err(SetupError(format!(
                "network {} is in use on interface {} ({}); choose another tunnel network",
                net.trunc(),
                a.interface,
                a.net
            )));
        }
    }
    Ok(())
}

/// What to make.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceSpec {
    /// Name or pattern with one `%d`.
    pub name: String,
    /// MTU (bytes).
    pub mtu: u16,
    /// This end's IPv4 address and the tunnel network's prefix length.
    pub v4: Option<Ipv4Net>,
    /// This end's IPv6 address and prefix length.
    pub v6: Option<Ipv6Net>,
    /// Let the kernel add the prefix route of each address (the tunnel network through the
    /// device). `false` (`--no-routes`): addresses are added `noprefixroute`.
    pub prefix_routes: bool,
}

/// A configured, up TUN device. Dropping it closes the descriptor, and the kernel deletes the
/// device with its addresses and routes.
#[derive(Debug)]
pub struct Device {
    tun: TunDevice,
    spec: DeviceSpec,
}

/// Writes a device sysctl (`/proc/sys/net/ipv6/conf/DEV/KEY`); false if it could not.
fn set_ipv6_sysctl(dev: &str, key: &str, value: &str) -> bool {
    std::fs::write(format!("/proc/sys/net/ipv6/conf/{dev}/{key}"), value).is_ok()
}

fn create_error(pattern: &str, e: io::Error) -> SetupError {
    // The TunDevice error keeps its kind, not its number: an existing device is recognised by
    // looking for it.
    let exists = !pattern.contains('%') && sprout_os::tun::interface_exists(pattern);
    if exists || e.raw_os_error() == Some(libc::EBUSY) {
        return SetupError(format!(
            "cannot create TUN device {pattern}: an interface of that name exists (another tunnel? choose another --device)"
        ));
    }
    match e.kind() {
        io::ErrorKind::PermissionDenied => SetupError(format!(
            "cannot create TUN device {pattern}: {e} (needs root or CAP_NET_ADMIN)"
        )),
        io::ErrorKind::NotFound => SetupError(format!(
            "cannot create TUN device {pattern}: {e} (no TUN support: `modprobe tun`)"
        )),
        _ => SetupError(format!("cannot create TUN device {pattern}: {e}")),
    }
}

impl Device {
    /// Creates the device in this process's namespace and configures it: IPv6 sysctls, MTU,
    /// addresses, up. On an error nothing is left (the half-made device goes with its
    /// descriptor).
    pub fn create(spec: &DeviceSpec) -> Result<Device, SetupError> {
        for net in spec
            .v4
            .map(IpNet::V4)
            .into_iter()
            .chain(spec.v6.map(IpNet::V6))
        {
            check_address_free(net)?;
        }
        // With the kernel's offloads (TSO: its TCP hands over 64 KB at a time) where it
        // takes them, else a plain device.
        let tun = TunDevice::create_with_offloads(&spec.name)
            .or_else(|_| TunDevice::create(&spec.name))
            .map_err(|e| create_error(&spec.name, e))?;
        let name = tun.name().to_string();
        let dev = Device {
            tun,
            spec: DeviceSpec {
                name: name.clone(),
                ..spec.clone()
            },
        };
        if spec.v6.is_some() {
            // Before the device goes up: no link-local address, no RA, no DAD.
            for (k, v) in [
                ("addr_gen_mode", "1"),
                ("accept_ra", "0"),
                ("autoconf", "0"),
                ("router_solicitations", "0"),
                ("accept_dad", "0"),
                ("dad_transmits", "0"),
            ] {
                set_ipv6_sysctl(&name, k, v);
            }
            if !set_ipv6_sysctl(&name, "disable_ipv6", "0") {
                return Err(SetupError(format!(
                    "cannot turn IPv6 on for {name} (/proc/sys/net/ipv6/conf/{name}/disable_ipv6): is IPv6 disabled on this host?"
                )));
            }
        } else {
            set_ipv6_sysctl(&name, "disable_ipv6", "1");
        }
        let mtu = spec.mtu.to_string();
        ip(&["link", "set", "dev", &name, "mtu", &mtu])?;
        if let Some(v4) = spec.v4 {
            let a = v4.to_string();
            let mut args = vec!["-4", "address", "add", &a, "dev", &name];
            if !spec.prefix_routes {
                args.push("noprefixroute");
            }
            ip(&args)?;
        }
        if let Some(v6) = spec.v6 {
            let a = v6.to_string();
            let mut args = vec!["-6", "address", "add", &a, "dev", &name, "nodad"];
            if !spec.prefix_routes {
                args.push("noprefixroute");
            }
            ip(&args)?;
        }
        ip(&["link", "set", "dev", &name, "up"])?;
        Ok(dev)
    }

    /// The device's name (a pattern's `%d` resolved).
    pub fn name(&self) -> &str {
        self.tun.name()
    }

    /// What it was made with (the name resolved).
    pub fn spec(&self) -> &DeviceSpec {
        &self.spec
    }

    /// The descriptor (non-blocking): for polling.
    pub fn raw_fd(&self) -> RawFd {
        self.tun.raw_fd()
    }

    /// Whether the device has the kernel's offloads: each read then begins with a
    /// `virtio_net_hdr` (see [`Device::read`]).
    pub fn offloads(&self) -> bool {
        self.tun.has_vnet_header()
    }

    /// Reads one IP packet into `buf` (`WouldBlock` when none is waiting); with
    /// [`Device::offloads`], a `virtio_net_hdr` and a packet, perhaps a TCP super-packet to
    /// segment (the runtime's `offload::split`).
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.tun.read(buf)
    }

    /// Writes a `virtio_net_hdr` and its packet (with [`Device::offloads`] only).
    pub fn write_frame(&self, frame: &[u8]) -> io::Result<usize> {
        self.tun.write_frame(frame)
    }

    /// Writes one IP packet (complete, checksums included).
    pub fn write(&self, packet: &[u8]) -> io::Result<usize> {
        self.tun.write(packet)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_addresses_are_listed_with_prefixes() {
        let all = interface_addresses();
        assert!(
            all.iter()
                .any(|a| a.net == "127.0.0.1/8".parse::<IpNet>().unwrap() && a.interface == "lo"),
            "{all:?}"
        );
        let e = check_address_free("127.0.0.1/8".parse().unwrap()).unwrap_err();
        assert!(e.0.contains("in use on interface lo"), "{e}");
        assert!(check_address_free("10.254.253.1/24".parse().unwrap()).is_ok());
    }

    #[test]
    fn ip_errors_carry_the_command_and_its_stderr() {
        if ip_path().is_err() {
            eprintln!("SKIPPED: no ip command");
            return;
        }
        let e = ip(&["link", "show", "dev", "no-such-dev-x"]).unwrap_err();
        assert!(
            e.0.starts_with("`ip link show dev no-such-dev-x` failed: "),
            "{e}"
        );
        assert!(e.0.contains("no-such-dev-x"), "{e}");
    }
}
