//! UDP sockets that read the kernel's receive timestamp of each datagram (`SO_TIMESTAMPNS`),
//! for the Saturator's recordings: the arrival time of a packet is when the kernel took it
//! off the interface, not when a busy process got round to reading it.
//!
//! socket2 makes, binds, connects the sockets and sends; nix turns `SO_TIMESTAMPNS` on and
//! reads the `SCM_TIMESTAMPNS` control message of `recvmsg` (socket2 hands back raw control
//! bytes, rustix parses only descriptors and credentials); the wait is [`crate::poll`]'s.

use std::io::{self, IoSliceMut};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Duration;

use nix::sys::socket::{
    recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags, SockaddrStorage,
};
use rustix::event::{PollFd, PollFlags};
use socket2::{Domain, Protocol, Socket, Type};

use crate::poll::poll_in;

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
            match recv_timestamped(&self.sock, buf) {
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
    setsockopt(s, sockopt::ReceiveTimestampns, &true)?;
    Ok(())
}

/// Room for one `SCM_TIMESTAMPNS` control message (and a spare), aligned as `cmsghdr` needs.
#[repr(C, align(8))]
struct ControlBuffer([u8; 128]);

/// One `recvmsg(MSG_DONTWAIT)` on `sock` into `buf`, with the source address and the
/// `SCM_TIMESTAMPNS` control message.
fn recv_timestamped(sock: &UdpSocket, buf: &mut [u8]) -> io::Result<Datagram> {
    let mut control = ControlBuffer([0; 128]);
    let mut iov = [IoSliceMut::new(buf)];
    let msg = recvmsg::<SockaddrStorage>(
        sock.as_raw_fd(),
        &mut iov,
        Some(&mut control.0),
        MsgFlags::MSG_DONTWAIT,
    )?;
    let mut stamp = None;
    if let Ok(cmsgs) = msg.cmsgs() {
        for c in cmsgs {
            if let ControlMessageOwned::ScmTimestampns(ts) = c {
                stamp = Some(i128::from(ts.tv_sec()) * 1_000_000_000 + i128::from(ts.tv_nsec()));
            }
        }
    }
    Ok(Datagram {
        len: msg.bytes,
        truncated: msg.flags.contains(MsgFlags::MSG_TRUNC),
        from: msg
            .address
            .as_ref()
            .and_then(socket_addr)
            .unwrap_or_else(|| (Ipv4Addr::UNSPECIFIED, 0).into()),
        stamp_realtime_ns: stamp,
    })
}

fn socket_addr(sa: &SockaddrStorage) -> Option<SocketAddr> {
    if let Some(sin) = sa.as_sockaddr_in() {
        Some(SocketAddr::from(*sin))
    } else {
        sa.as_sockaddr_in6().map(|sin6| SocketAddr::from(*sin6))
    }
}

/// Waits until one of `socks` is readable or `timeout` passes (rounded up to whole ms, as
/// `poll` counts); returns at once for a zero timeout. A signal ends the wait early.
pub fn wait_readable(socks: &[&TimestampedUdp], timeout: Duration) -> io::Result<()> {
    let ms = timeout.as_micros().div_ceil(1000);
    if ms == 0 {
        return Ok(());
    }
    let mut fds: Vec<PollFd<'_>> = socks
        .iter()
        .map(|s| PollFd::new(&s.sock, PollFlags::IN))
        .collect();
    poll_in(
        &mut fds,
        Some(u64::try_from(ms * 1_000_000).unwrap_or(u64::MAX)),
    )?;
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
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos() as i128;
        assert_eq!((d.len, d.truncated), (1, false));
        assert_eq!(d.from, t.local_addr().unwrap());
        let stamp = d.stamp_realtime_ns.expect("a kernel stamp");
        assert!(
            stamp <= now && stamp + 1_000_000_000 > now,
            "kernel stamp near now"
        );
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
