//! Non-persistent TUN devices and their IPv4 configuration, through ioctls (no `ip` command).
//!
//! ## Why our own ioctls and not a TUN crate
//!
//! The device is opened directly through `/dev/net/tun` and `TUNSETIFF` rather than through a
//! TUN crate because the emulator and the tunnel need control the crates do not all give: the
//! device must be created by a particular *thread* (it belongs to the network namespace of the
//! thread that opens `/dev/net/tun`), with `IFF_TUN_EXCL` (never attach to an existing
//! persistent device of the same name), without a packet-information header, and with a
//! non-blocking, close-on-exec descriptor polled by the caller's own loop. A device made this
//! way is not persistent: it disappears, with its addresses and routes, when its descriptor is
//! closed (including when the process dies). rustix opens the device, makes the control socket
//! and reads and writes packets; the interface ioctls (`TUNSETIFF`, `SIOCSIF*`, `SIOCADDRT`)
//! are hand-written on libc because neither rustix nor nix wraps them.

use std::ffi::CString;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

use rustix::fs::{Mode, OFlags};
use rustix::net::{AddressFamily, SocketFlags, SocketType};

/// Longest interface name Linux accepts (bytes, without the terminating NUL).
pub const MAX_IFNAME_LEN: usize = libc::IFNAMSIZ - 1;

/// Length of the `virtio_net_hdr` before each packet of a device made with
/// [`TunDevice::create_with_offloads`], bytes.
pub const VNET_HDR_LEN: usize = 10;

/// An open, non-persistent TUN device (IP packets, no packet-information header; offloads
/// only when made with [`TunDevice::create_with_offloads`]).
#[derive(Debug)]
pub struct TunDevice {
    fd: OwnedFd,
    name: String,
    /// Whether each packet read or written carries a [`VNET_HDR_LEN`]-byte `virtio_net_hdr`.
    vnet_hdr: bool,
}

fn ifreq_named(name: &str) -> io::Result<libc::ifreq> {
    if name.is_empty() || name.len() > MAX_IFNAME_LEN || name.contains(['/', ' ', '\0']) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad interface name `{name}`"),
        ));
    }
    // SAFETY: ifreq is plain old data (a name and a union of integers and sockaddrs); all
    // zeroes is a valid value.
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
    // SAFETY: sockaddr_in and sockaddr have the same size (16 bytes) and both are plain old
    // data; the kernel reads the bytes as the family says.
    unsafe { std::mem::transmute::<libc::sockaddr_in, libc::sockaddr>(sin) }
}

/// A datagram socket for interface ioctls, in the calling thread's network namespace.
fn control_socket() -> io::Result<OwnedFd> {
    Ok(rustix::net::socket_with(
        AddressFamily::INET,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC,
        None,
    )?)
}

/// `ioctl(fd, request, arg)`, its error prefixed with `what`.
///
/// # Safety
///
/// `arg` must point to a live, writable value of the type `request` expects.
unsafe fn ioctl(
    fd: BorrowedFd<'_>,
    request: libc::c_ulong,
    arg: *mut libc::c_void,
    what: &str,
) -> io::Result<()> {
    // SAFETY: the caller passes a pointer of the type the request expects (see above).
    if unsafe { libc::ioctl(fd.as_raw_fd(), request as _, arg) } == -1 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(())
}

/// An interface ioctl on `sock` taking an `ifreq`.
fn ifreq_ioctl(
    sock: &OwnedFd,
    request: libc::c_ulong,
    req: &mut libc::ifreq,
    what: &str,
) -> io::Result<()> {
    // SAFETY: every request passed here (SIOCSIFADDR, SIOCSIFDSTADDR, SIOCSIFNETMASK,
    // SIOCSIFMTU, SIOCSIFTXQLEN, SIOCGIFFLAGS, SIOCSIFFLAGS) takes a pointer to an ifreq, and
    // `req` is one.
    unsafe {
        ioctl(
            sock.as_fd(),
            request,
            (req as *mut libc::ifreq).cast(),
            what,
        )
    }
}

impl TunDevice {
    /// Creates TUN device `name` (at most [`MAX_IFNAME_LEN`] bytes) in the *calling thread's*
    /// network namespace. Fails (`EBUSY`) if an interface of that name exists. `name` may
    /// hold one `%d`, which the kernel replaces by the lowest free number (`sprout%d` →
    /// `sprout0`); [`TunDevice::name`] is the name the kernel gave. The descriptor is
    /// non-blocking and close-on-exec.
    pub fn create(name: &str) -> io::Result<TunDevice> {
        Self::create_flags(name, false)
    }

    /// [`TunDevice::create`] with the kernel's offloads (`IFF_VNET_HDR`, then `TUNSETOFFLOAD`
    /// with `TUN_F_CSUM`, `TUN_F_TSO4` and `TUN_F_TSO6`): the kernel's TCP hands the device
    /// whole 64 KB segments (TSO) and packets with their checksum left to finish, each read
    /// beginning with a [`VNET_HDR_LEN`]-byte `virtio_net_hdr` (native byte order) that says
    /// so; the reader cuts them into packets and finishes the checksums. Each write is given
    /// a header saying "a plain packet" (see [`TunDevice::write`]). If the kernel refuses the
    /// offloads the reads still begin with the header, which then always says "a plain packet".
    pub fn create_with_offloads(name: &str) -> io::Result<TunDevice> {
        let dev = Self::create_flags(name, true)?;
        let offloads = libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO6;
        // SAFETY: TUNSETOFFLOAD takes its argument (the offload flags) by value, not a
        // pointer; the kernel reads no memory of ours.
        let r = unsafe {
            libc::ioctl(
                dev.fd.as_raw_fd(),
                libc::TUNSETOFFLOAD as _,
                offloads as libc::c_ulong,
            )
        };
        if r == -1 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("TUNSETOFFLOAD {name}: {e}"),
            ));
        }
        Ok(dev)
    }

    fn create_flags(name: &str, vnet_hdr: bool) -> io::Result<TunDevice> {
        let mut req = ifreq_named(name)?;
        let vnet = if vnet_hdr { libc::IFF_VNET_HDR } else { 0 };
        req.ifr_ifru.ifru_flags =
            (libc::IFF_TUN | libc::IFF_NO_PI | libc::IFF_TUN_EXCL | vnet) as i16;
        let fd = rustix::fs::open(
            "/dev/net/tun",
            OFlags::RDWR | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| {
            let e = io::Error::from(e);
            io::Error::new(e.kind(), format!("open /dev/net/tun: {e}"))
        })?;
        // SAFETY: TUNSETIFF takes a pointer to an ifreq, and `req` is one.
        unsafe {
            ioctl(
                fd.as_fd(),
                libc::TUNSETIFF as libc::c_ulong,
                (&mut req as *mut libc::ifreq).cast(),
                &format!("TUNSETIFF {name}"),
            )
        }?;
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
        Ok(TunDevice { fd, name, vnet_hdr })
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

    /// Whether each read begins with a [`VNET_HDR_LEN`]-byte `virtio_net_hdr`
    /// ([`TunDevice::create_with_offloads`]).
    pub fn has_vnet_header(&self) -> bool {
        self.vnet_hdr
    }

    /// Reads one IP packet into `buf` (after its `virtio_net_hdr` on a device with
    /// [`TunDevice::has_vnet_header`]); its length with the header (bytes). `WouldBlock` when
    /// none is waiting, `Interrupted` if a signal came first.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        Ok(rustix::io::read(&self.fd, buf)?)
    }

    /// Writes `frame`, a `virtio_net_hdr` and its packet (perhaps a TCP super-packet for
    /// the kernel to treat as its segments), on a device with [`TunDevice::has_vnet_header`]
    /// (elsewhere `InvalidInput`, nothing written); the bytes written.
    pub fn write_frame(&self, frame: &[u8]) -> io::Result<usize> {
        if !self.vnet_hdr {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a frame with a virtio_net_hdr on a device without one",
            ));
        }
        Ok(rustix::io::write(&self.fd, frame)?)
    }

    /// Writes one IP packet (the whole of `packet`, complete with its checksums), after an
    /// all-zero `virtio_net_hdr` ("a plain packet") on a device with
    /// [`TunDevice::has_vnet_header`]; the bytes of `packet` written.
    pub fn write(&self, packet: &[u8]) -> io::Result<usize> {
        if !self.vnet_hdr {
            return Ok(rustix::io::write(&self.fd, packet)?);
        }
        let hdr = [0u8; VNET_HDR_LEN];
        let n = rustix::io::writev(
            &self.fd,
            &[io::IoSlice::new(&hdr), io::IoSlice::new(packet)],
        )?;
        Ok(n.saturating_sub(VNET_HDR_LEN))
    }
}

impl AsFd for TunDevice {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
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
    ifreq_ioctl(&sock, libc::SIOCSIFADDR, &mut req, "set address")?;
    let mut req = ifreq_named(name)?;
    req.ifr_ifru.ifru_dstaddr = sockaddr_v4(peer);
    ifreq_ioctl(&sock, libc::SIOCSIFDSTADDR, &mut req, "set peer address")?;
    let mut req = ifreq_named(name)?;
    req.ifr_ifru.ifru_netmask = sockaddr_v4(Ipv4Addr::BROADCAST);
    ifreq_ioctl(&sock, libc::SIOCSIFNETMASK, &mut req, "set netmask")?;
    let mut req = ifreq_named(name)?;
    req.ifr_ifru.ifru_mtu = mtu as libc::c_int;
    ifreq_ioctl(&sock, libc::SIOCSIFMTU, &mut req, "set MTU")?;
    set_up(name)
}

/// Sets the transmit queue length of interface `name` of the calling thread's namespace, in
/// packets (`ip link set NAME txqueuelen LEN`). For a TUN device this is how many packets the
/// kernel holds for its reader before it drops the next (500 by default).
pub fn set_tx_queue_len(name: &str, len: u32) -> io::Result<()> {
    let sock = control_socket()?;
    let mut req = ifreq_named(name)?;
    req.ifr_ifru.ifru_metric = len.min(i32::MAX as u32) as libc::c_int;
    ifreq_ioctl(&sock, libc::SIOCSIFTXQLEN, &mut req, "set txqueuelen")
}

/// Brings interface `name` of the calling thread's namespace up (e.g. `lo`).
pub fn set_up(name: &str) -> io::Result<()> {
    let sock = control_socket()?;
    let mut req = ifreq_named(name)?;
    ifreq_ioctl(&sock, libc::SIOCGIFFLAGS, &mut req, "get flags")?;
    // SAFETY: SIOCGIFFLAGS filled the flags member of the union.
    let flags = unsafe { req.ifr_ifru.ifru_flags };
    req.ifr_ifru.ifru_flags = flags | (libc::IFF_UP | libc::IFF_RUNNING) as i16;
    ifreq_ioctl(&sock, libc::SIOCSIFFLAGS, &mut req, "bring up")
}

/// Adds a default IPv4 route through `gateway` on interface `dev`, in the calling thread's
/// namespace.
pub fn add_default_route(dev: &str, gateway: Ipv4Addr) -> io::Result<()> {
    let sock = control_socket()?;
    let dev_c = CString::new(dev).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: rtentry is plain old data (integers, sockaddrs and pointers); all zeroes (null
    // pointers) is a valid value.
    let mut rt: libc::rtentry = unsafe { std::mem::zeroed() };
    rt.rt_dst = sockaddr_v4(Ipv4Addr::UNSPECIFIED);
    rt.rt_genmask = sockaddr_v4(Ipv4Addr::UNSPECIFIED);
    rt.rt_gateway = sockaddr_v4(gateway);
    rt.rt_flags = libc::RTF_UP | libc::RTF_GATEWAY;
    rt.rt_dev = dev_c.as_ptr() as *mut libc::c_char;
    // SAFETY: SIOCADDRT takes a pointer to an rtentry; `rt` is one, and its `rt_dev` points to
    // `dev_c`, alive until the end of this function.
    unsafe {
        ioctl(
            sock.as_fd(),
            libc::SIOCADDRT,
            (&mut rt as *mut libc::rtentry).cast(),
            "add default route",
        )
    }
}

/// Turns IPv6 off on interface `name` (best effort: nothing to do when IPv6 is absent). The
/// `/proc/sys/net` tree shown is that of the calling thread's namespace.
fn disable_ipv6(name: &str) {
    let path = format!("/proc/sys/net/ipv6/conf/{name}/disable_ipv6");
    let _ = std::fs::write(path, "1");
}

/// Whether an interface named `name` exists in the calling thread's namespace
/// (`if_nametoindex`).
pub fn interface_exists(name: &str) -> bool {
    nix::net::if_::if_nametoindex(name).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_before_any_system_call() {
        for bad in ["", "a/b", "a b", "a\0b", "0123456789abcdef"] {
            let e = TunDevice::create(bad).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        }
        assert!(interface_exists("lo"));
        assert!(!interface_exists("no-such-if-x"));
    }

    #[test]
    fn a_device_lives_as_long_as_its_descriptor() {
        if !crate::caps::has_network_privileges() {
            eprintln!("SKIPPED: needs CAP_NET_ADMIN and CAP_SYS_ADMIN");
            return;
        }
        // In a namespace of its own, so that nothing on the host sees the device.
        let ns = std::thread::spawn(crate::netns::NetNamespace::unshare_current_thread)
            .join()
            .unwrap()
            .unwrap();
        ns.spawn_thread("tun-test", || {
            let tun = TunDevice::create("sprouttest%d").unwrap();
            assert_eq!(tun.name(), "sprouttest0");
            assert!(interface_exists("sprouttest0"));
            let local = Ipv4Addr::new(10, 99, 0, 1);
            configure_point_to_point("sprouttest0", local, Ipv4Addr::new(10, 99, 0, 2), 1400)
                .unwrap();
            let addrs = crate::interfaces::interface_addresses();
            assert!(addrs.iter().any(|a| a.address == local), "{addrs:?}");
            let mut buf = [0u8; 2048];
            let e = tun.read(&mut buf);
            assert!(
                matches!(&e, Err(e) if e.kind() == io::ErrorKind::WouldBlock) || e.is_ok(),
                "{e:?}"
            );
            let again = TunDevice::create("sprouttest0").unwrap_err();
            assert!(
                again.to_string().starts_with("TUNSETIFF sprouttest0: "),
                "{again}"
            );
            drop(tun);
            assert!(!interface_exists("sprouttest0"));
            let tun = TunDevice::create_with_offloads("sprouttest%d").unwrap();
            assert!(tun.has_vnet_header());
            configure_point_to_point(tun.name(), local, Ipv4Addr::new(10, 99, 0, 2), 1400).unwrap();
            // A datagram to the peer comes out after its header.
            let udp = std::net::UdpSocket::bind((local, 0)).unwrap();
            udp.send_to(&[7; 100], (Ipv4Addr::new(10, 99, 0, 2), 9))
                .unwrap();
            let n = (0..200)
                .find_map(|_| match tun.read(&mut buf) {
                    Ok(n) => Some(n),
                    Err(_) => {
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        None
                    }
                })
                .unwrap();
            assert_eq!(n, VNET_HDR_LEN + 20 + 8 + 100);
            assert_eq!(buf[VNET_HDR_LEN] >> 4, 4);
            assert_eq!(&buf[n - 100..n], &[7; 100][..]);
        })
        .unwrap()
        .join()
        .unwrap();
    }
}
