//! UDP sockets that read the kernel's receive timestamp of each datagram (`SO_TIMESTAMPNS`),
//! for the Saturator's recordings: the arrival time of a packet is when the kernel took it
//! off the interface, not when a busy process got round to reading it.
//!
//! socket2 makes, binds, connects the sockets and sends; two things are hand-written on libc
//! because neither socket2 nor rustix offers them: turning `SO_TIMESTAMPNS` on (socket2 has no
//! setter for it) and reading the `SCM_TIMESTAMPNS` control message of `recvmsg` (socket2's
//! `recvmsg` hands back the raw control bytes, rustix parses only descriptors and
//! credentials). `poll` is libc's too: one call, not worth a dependency.

use std::io;
use std::mem::size_of;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};

/// A non-blocking UDP socket that reads kernel receive timestamps.
#[derive(Debug)]
pub struct TimestampedUdp {
    sock: UdpSocket,
}

/// One datagram read by [`TimestampedUdp::recv`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Datagram {
    /// Bytes written into the buffer.
    pub len: usize,
    /// The datagram was longer than the buffer (the rest was dropped).
    pub truncated: bool,
    /// Its source (`0.0.0.0:0` if the kernel gave none).
    pub from: SocketAddr,
    /// The kernel's receive timestamp, ns of `CLOCK_REALTIME`, if it gave one.
    pub stamp_realtime_ns: Option<i128>,
}

impl TimestampedUdp {
    /// A non-blocking socket bound to `bind`, with receive timestamps on and both socket
    /// buffers asked to be `buffer_bytes` (best effort: the kernel caps them at `rmem_max` /
    /// `wmem_max`).
    pub fn bind(bind: SocketAddr, buffer_bytes: usize) -> io::Result<TimestampedUdp> {
        let domain = if bind.is_ipv4() {
            Domain::IPV4
        } else {
            Domain::IPV6
        };
        let s = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?;
        let _ = s.set_recv_buffer_size(buffer_bytes);
        let _ = s.set_send_buffer_size(buffer_bytes);
        s.bind(&bind.into())?;
        s.set_nonblocking(true)?;
        enable_timestamps(&s)?;
        Ok(TimestampedUdp { sock: s.into() })
    }

    /// A socket as [`TimestampedUdp::bind`] on an ephemeral port, connected to `remote`.
    pub fn connected(remote: SocketAddr, buffer_bytes: usize) -> io::Result<TimestampedUdp> {
        let any: SocketAddr = if remote.is_ipv4() {
            (Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let s = TimestampedUdp::bind(any, buffer_bytes)?;
        s.sock.connect(remote)?;
        Ok(s)
    }

    /// The address the socket is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    /// Sends one datagram to `to`.
    pub fn send_to(&self, data: &[u8], to: SocketAddr) -> io::Result<()> {
        self.sock.send_to(data, to).map(|_| ())
    }

    /// Sends one datagram to the connected peer.
    pub fn send(&self, data: &[u8]) -> io::Result<()> {
        self.sock.send(data).map(|_| ())
    }

    /// Reads one datagram into `buf`, if one is waiting (`None` when none is, or when the
    /// kernel reports an ICMP error of an earlier send: the peer's port closed, not fatal).
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<Datagram>> {
        loop {
            match recv_timestamped(self.sock.as_raw_fd(), buf) {
                Ok(d) => return Ok(Some(d)),
                Err(e) => match e.kind() {
                    io::ErrorKind::Interrupted => continue,
                    io::ErrorKind::WouldBlock | io::ErrorKind::ConnectionRefused => {
                        return Ok(None)
                    }
                    _ => return Err(e),
                },
            }
        }
    }
}

/// Turns `SO_TIMESTAMPNS` on.
fn enable_timestamps(s: &Socket) -> io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: a valid socket descriptor, and a pointer to a live c_int with its size.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&one as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// One `recvmsg(MSG_DONTWAIT)` on `fd` into `buf`, with the source address and the
/// `SCM_TIMESTAMPNS` control message.
fn recv_timestamped(fd: libc::c_int, buf: &mut [u8]) -> io::Result<Datagram> {
    // SAFETY: all-zero is a valid sockaddr_storage and msghdr.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // u64s: the control buffer must be aligned for cmsghdr.
    let mut control = [0u64; 16];
    msg.msg_name = (&mut storage as *mut libc::sockaddr_storage).cast();
    msg.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: every pointer in msg points into live buffers (storage, iov -> buf, control) of
    // the sizes stated, which outlive the call.
    let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Datagram {
        len: n as usize,
        truncated: msg.msg_flags & libc::MSG_TRUNC != 0,
        from: sockaddr_to_std(&storage).unwrap_or_else(|| (Ipv4Addr::UNSPECIFIED, 0).into()),
        stamp_realtime_ns: timestamp(&msg),
    })
}

/// The last `SCM_TIMESTAMPNS` of a message `recvmsg` filled, ns of `CLOCK_REALTIME`.
fn timestamp(msg: &libc::msghdr) -> Option<i128> {
    let mut stamp = None;
    // SAFETY: msg was filled by recvmsg: its control pointer and length describe the live
    // control buffer, and the CMSG_* macros stay within msg_controllen. The timespec is read
    // unaligned from the message's data.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS
            {
                let ts: libc::timespec =
                    std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::timespec>());
                stamp = Some(ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128);
            }
            cmsg = libc::CMSG_NXTHDR(msg, cmsg);
        }
    }
    stamp
}

/// The address in a `sockaddr_storage` the kernel filled (IPv4 or IPv6; `None` for others).
fn sockaddr_to_std(s: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match s.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says it is a sockaddr_in, which fits in sockaddr_storage
            // (whose alignment is at least sockaddr_in's).
            let a = unsafe { &*(s as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
                u16::from_be(a.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: as above, a sockaddr_in6.
            let a = unsafe { &*(s as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(a.sin6_addr.s6_addr),
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Waits until one of `socks` is readable or `timeout` passes (rounded up to whole ms);
/// returns at once for a zero timeout. An interrupted wait returns early, as a timeout.
pub fn wait_readable(socks: &[&TimestampedUdp], timeout: Duration) -> io::Result<()> {
    let ms = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int;
    if ms == 0 {
        return Ok(());
    }
    let mut fds: Vec<libc::pollfd> = socks
        .iter()
        .map(|s| libc::pollfd {
            fd: s.sock.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: fds is a live array of fds.len() pollfd.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{SystemTime, UNIX_EPOCH};

    #[test]
    fn a_datagram_carries_its_source_and_a_kernel_stamp() {
        let s = TimestampedUdp::bind("127.0.0.1:0".parse().unwrap(), 1 << 20).unwrap();
        let t = TimestampedUdp::connected(s.local_addr().unwrap(), 1 << 20).unwrap();
        t.send(b"x").unwrap();
        wait_readable(&[&s], Duration::from_secs(1)).unwrap();
        let mut buf = [0u8; 64];
        let d = s.recv(&mut buf).unwrap().expect("a datagram");
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as i128;
        assert_eq!((d.len, d.truncated), (1, false));
        assert_eq!(d.from, t.local_addr().unwrap());
        let stamp = d.stamp_realtime_ns.expect("a kernel stamp");
        assert!(stamp <= now && stamp + 1_000_000_000 > now, "kernel stamp near now");
        assert_eq!(s.recv(&mut buf).unwrap(), None, "nothing more waiting");
    }

    #[test]
    fn a_long_datagram_is_reported_truncated() {
        let s = TimestampedUdp::bind("[::1]:0".parse().unwrap(), 1 << 20).unwrap();
        let t = TimestampedUdp::connected(s.local_addr().unwrap(), 1 << 20).unwrap();
        t.send(&[7u8; 100]).unwrap();
        wait_readable(&[&s], Duration::from_secs(1)).unwrap();
        let mut buf = [0u8; 10];
        let d = s.recv(&mut buf).unwrap().expect("a datagram");
        assert_eq!((d.len, d.truncated), (10, true));
        assert_eq!(d.from, t.local_addr().unwrap());
    }
}
