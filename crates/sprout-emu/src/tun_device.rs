//! Non-persistent TUN devices and their IPv4 configuration, through ioctls (no `ip` command).
//!
//! The device is opened directly through `/dev/net/tun` and `TUNSETIFF` rather than through a
//! TUN crate because the emulator needs control the crates do not all give: the device must be
//! created by a particular *thread* (it belongs to the network namespace of the thread that
//! opens `/dev/net/tun`), with `IFF_TUN_EXCL` (never attach to an existing persistent device of
//! the same name), without a packet-information header, and with a non-blocking, close-on-exec
//! descriptor. A device made this way is not persistent: it disappears, with its addresses and
//! routes, when its descriptor is closed (including when the process dies).

use std::ffi::CString;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::sys::cvt;

/// Longest interface name Linux accepts (bytes, without the terminating NUL).
pub const MAX_IFNAME_LEN: usize = libc::IFNAMSIZ - 1;

/// An open, non-persistent TUN device (IP packets, no packet-information header, no offloads).
#[derive(Debug)]
pub struct TunDevice {
    fd: OwnedFd,
    name: String,
}

fn ifreq_named(name: &str) -> io::Result<libc::ifreq> {
    if name.is_empty() || name.len() > MAX_IFNAME_LEN || name.contains(['/', ' ', '\0']) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad interface name `{name}`"),
        ));
    }
    // SAFETY: ifreq is plain old data; all zeroes is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes()) {
        *dst = src as libc::c_char;
    }
    Ok(req)
}

fn sockaddr_v4(addr: Ipv4Addr) -> libc::sockaddr {
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from(addr).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: sockaddr_in and sockaddr have the same size; the kernel reads it by family.
    unsafe { std::mem::transmute::<libc::sockaddr_in, libc::sockaddr>(sin) }
}

/// A datagram socket for interface ioctls, in the calling thread's network namespace.
fn control_socket() -> io::Result<OwnedFd> {
    // SAFETY: socket has no memory preconditions; the returned fd is owned here.
    let fd = cvt(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: fresh descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn ioctl(
    sock: &OwnedFd,
    request: libc::c_ulong,
    arg: *mut libc::c_void,
    what: &str,
) -> io::Result<()> {
    // SAFETY: every caller passes a pointer to a live struct of the type the request expects.
    cvt(unsafe { libc::ioctl(sock.as_raw_fd(), request as _, arg) })
        .map(|_| ())
        .map_err(|e| io::Error::new(e.kind(), format!("{what}: {e}")))
}

impl TunDevice {
    /// Creates TUN device `name` (at most [`MAX_IFNAME_LEN`] bytes) in the *calling thread's*
    /// network namespace. Fails (`EBUSY`) if an interface of that name exists. `name` may
    /// hold one `%d`, which the kernel replaces by the lowest free number (`sprout%d` →
    /// `sprout0`); [`TunDevice::name`] is the name the kernel gave. The descriptor is
    /// non-blocking and close-on-exec.
    pub fn create(name: &str) -> io::Result<TunDevice> {
        let mut req = ifreq_named(name)?;
        req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI | libc::IFF_TUN_EXCL) as i16;
        let path = c"/dev/net/tun";
        // SAFETY: valid C string; the returned fd is owned below.
        let fd = cvt(unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        })
        .map_err(|e| io::Error::new(e.kind(), format!("open /dev/net/tun: {e}")))?;
        // SAFETY: fresh descriptor.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: TUNSETIFF takes a pointer to an ifreq.
        cvt(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF as _, &mut req) })
            .map_err(|e| io::Error::new(e.kind(), format!("TUNSETIFF {name}: {e}")))?;
        // The kernel writes the device's real name back (a `%d` pattern resolved).
        let given: Vec<u8> = req
            .ifr_name
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        let name = match String::from_utf8(given) {
            Ok(n) if !n.is_empty() => n,
            _ => name.to_string(),
        };
        Ok(TunDevice { fd, name })
    }

    /// The interface name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device's descriptor: `read` returns one IP packet, `write` injects one.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Gives up the device's descriptor (closing it destroys the device).
    pub fn into_fd(self) -> OwnedFd {
        self.fd
    }
}

/// Configures interface `name` of the calling thread's namespace as the local end `local` of a
/// point-to-point IPv4 link to `peer` (netmask /32, so the kernel adds a host route to the
/// peer), sets its MTU (bytes), turns IPv6 off on it (no router solicitations or other
/// chatter crosses the emulated link), and brings it up.
pub fn configure_point_to_point(
    name: &str,
    local: Ipv4Addr,
    peer: Ipv4Addr,
    mtu: u32,
) -> io::Result<()> {
    disable_ipv6(name);
    let sock = control_socket()?;
    let mut req = ifreq_named(name)?;
    req.ifr_ifru.ifru_addr = sockaddr_v4(local);
    ioctl(
        &sock,
        libc::SIOCSIFADDR,
        (&mut req as *mut libc::ifreq).cast(),
        "set address",
    )?;
    let mut req = ifreq_named(name)?;
    req.ifr_ifru.ifru_dstaddr = sockaddr_v4(peer);
    ioctl(
        &sock,
        libc::SIOCSIFDSTADDR,
        (&mut req as *mut libc::ifreq).cast(),
        "set peer address",
    )?;
    let mut req = ifreq_named(name)?;
    req.ifr_ifru.ifru_netmask = sockaddr_v4(Ipv4Addr::BROADCAST);
    ioctl(
        &sock,
        libc::SIOCSIFNETMASK,
        (&mut req as *mut libc::ifreq).cast(),
        "set netmask",
    )?;
    let mut req = ifreq_named(name)?;
    req.ifr_ifru.ifru_mtu = mtu as libc::c_int;
    ioctl(
        &sock,
        libc::SIOCSIFMTU,
        (&mut req as *mut libc::ifreq).cast(),
        "set MTU",
    )?;
    set_up(name)
}

/// Brings interface `name` of the calling thread's namespace up (e.g. `lo`).
pub fn set_up(name: &str) -> io::Result<()> {
    let sock = control_socket()?;
    let mut req = ifreq_named(name)?;
    ioctl(
        &sock,
        libc::SIOCGIFFLAGS,
        (&mut req as *mut libc::ifreq).cast(),
        "get flags",
    )?;
    // SAFETY: SIOCGIFFLAGS filled the flags member.
    let flags = unsafe { req.ifr_ifru.ifru_flags };
    req.ifr_ifru.ifru_flags = flags | (libc::IFF_UP | libc::IFF_RUNNING) as i16;
    ioctl(
        &sock,
        libc::SIOCSIFFLAGS,
        (&mut req as *mut libc::ifreq).cast(),
        "bring up",
    )
}

/// Adds a default IPv4 route through `gateway` on interface `dev`, in the calling thread's
/// namespace.
pub fn add_default_route(dev: &str, gateway: Ipv4Addr) -> io::Result<()> {
    let sock = control_socket()?;
    let dev_c = CString::new(dev).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: rtentry is plain old data; all zeroes is valid.
    let mut rt: libc::rtentry = unsafe { std::mem::zeroed() };
    rt.rt_dst = sockaddr_v4(Ipv4Addr::UNSPECIFIED);
    rt.rt_genmask = sockaddr_v4(Ipv4Addr::UNSPECIFIED);
    rt.rt_gateway = sockaddr_v4(gateway);
    rt.rt_flags = libc::RTF_UP | libc::RTF_GATEWAY;
    rt.rt_dev = dev_c.as_ptr() as *mut libc::c_char;
    ioctl(
        &sock,
        libc::SIOCADDRT,
        (&mut rt as *mut libc::rtentry).cast(),
        "add default route",
    )
}

/// Turns IPv6 off on interface `name` (best effort: nothing to do when IPv6 is absent). The
/// `/proc/sys/net` tree shown is that of the calling thread's namespace.
fn disable_ipv6(name: &str) {
    let path = format!("/proc/sys/net/ipv6/conf/{name}/disable_ipv6");
    let _ = std::fs::write(path, "1");
}

/// The IPv4 addresses currently assigned to interfaces of the calling thread's namespace
/// (local and peer addresses).
pub fn existing_ipv4_addresses() -> Vec<Ipv4Addr> {
    let mut out = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list we free below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return out;
    }
    let mut cur = list;
    while !cur.is_null() {
        // SAFETY: cur is a node of the list returned by getifaddrs.
        let ifa = unsafe { &*cur };
        for sa in [ifa.ifa_addr, ifa.ifa_ifu] {
            // SAFETY: non-null sockaddr pointers from getifaddrs; AF_INET ones are sockaddr_in.
            if !sa.is_null() && unsafe { (*sa).sa_family } == libc::AF_INET as libc::sa_family_t {
                let sin = unsafe { &*(sa as *const libc::sockaddr_in) };
                out.push(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)));
            }
        }
        cur = ifa.ifa_next;
    }
    // SAFETY: list came from getifaddrs.
    unsafe { libc::freeifaddrs(list) };
    out
}

/// Whether an interface named `name` exists in the calling thread's namespace.
pub fn interface_exists(name: &str) -> bool {
    CString::new(name)
        // SAFETY: valid C string.
        .map(|c| unsafe { libc::if_nametoindex(c.as_ptr()) } != 0)
        .unwrap_or(false)
}
