//! UDP generic segmentation offload (`UDP_SEGMENT`, Linux 4.18 and later): many datagrams to
//! one destination in one `sendmsg(2)`, as one buffer of equal-sized segments (the last may
//! be shorter) that the kernel (or the network card) cuts into datagrams after the stack has
//! been crossed once. Through nix's `sendmsg` and its `UdpGsoSegments` control message.
//!
//! Where the kernel lacks it, [`supported`] says no; where the outgoing device cannot take
//! it (no checksum offload), a send fails with [`GsoError::Unsupported`] and the caller sends
//! the segments one by one.

use std::io::{self, IoSlice};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd};

use nix::errno::Errno;
use nix::sys::socket::{getsockopt, sendmsg, sockopt, ControlMessage, MsgFlags, SockaddrStorage};

/// Most segments the kernel takes in one send (`UDP_MAX_SEGMENTS`).
pub const MAX_SEGMENTS: usize = 64;
/// Most bytes of one send: the largest UDP payload over IPv4.
pub const MAX_BYTES: usize = 65_507;

/// Why a segmented send failed.
#[derive(Debug, thiserror::Error)]
pub enum GsoError {
    /// The socket's send buffer is full (`EAGAIN`): nothing was sent.
    #[error("the socket's send buffer is full")]
    WouldBlock,
    /// The kernel or the outgoing device cannot segment (`EIO`, `EINVAL`, `EOPNOTSUPP`, ...),
    /// or a segment does not fit the path's MTU (`EMSGSIZE`, see [`GsoError::is_too_big`]):
    /// nothing was sent; send the segments one by one.
    #[error("UDP segmentation is not available: {0}")]
    Unsupported(Errno),
    /// A signal interrupted the call before anything was sent: call again.
    #[error("interrupted by a signal")]
    Interrupted,
    /// The send failed otherwise (the datagrams are lost).
    #[error("sendmsg failed: {0}")]
    Io(#[source] io::Error),
}

impl GsoError {
    /// Whether the send failed only because its segments are longer than the path's MTU
    /// allows (`EMSGSIZE`; a datagram sent alone may still be fragmented): segmented sends of
    /// shorter datagrams still work.
    pub fn is_too_big(&self) -> bool {
        matches!(self, GsoError::Unsupported(Errno::EMSGSIZE))
    }
}

/// Whether the kernel knows `UDP_SEGMENT` for `sock` (a UDP socket).
pub fn supported(sock: &impl AsFd) -> bool {
    getsockopt(sock, sockopt::UdpGsoSegment).is_ok()
}

/// Sends `buf` to `to` as datagrams of `segment` bytes each (the last one what remains), in
/// one call; returns the bytes sent (all of `buf`). `buf` holds at most [`MAX_SEGMENTS`]
/// segments and [`MAX_BYTES`] bytes, and `segment` is at least 1 (else
/// [`GsoError::Unsupported`] with `EINVAL`, nothing sent).
pub fn send(sock: &impl AsFd, buf: &[u8], segment: u16, to: SocketAddr) -> Result<usize, GsoError> {
    send_from(sock, buf, segment, to, None)
}

/// [`send`], the datagrams leaving from local address `from` when it is given (`IP_PKTINFO`
/// or `IPV6_PKTINFO` beside `UDP_SEGMENT`, as [`crate::udp_pktinfo::send`] does for one
/// datagram). A source the kernel refuses fails with [`GsoError::Io`], nothing sent.
pub fn send_from(
    sock: &impl AsFd,
    buf: &[u8],
    segment: u16,
    to: SocketAddr,
    from: Option<IpAddr>,
) -> Result<usize, GsoError> {
    let seg = segment as usize;
    if seg == 0 || buf.len() > MAX_BYTES || buf.len().div_ceil(seg) > MAX_SEGMENTS {
        return Err(GsoError::Unsupported(Errno::EINVAL));
    }
    let dest = SockaddrStorage::from(to);
    let iov = [IoSlice::new(buf)];
    let fd = sock.as_fd().as_raw_fd();
    let v4 = match from {
        Some(IpAddr::V4(a)) => Some(libc::in_pktinfo {
            ipi_ifindex: 0,
            ipi_spec_dst: libc::in_addr {
                s_addr: u32::from(a).to_be(),
            },
            ipi_addr: libc::in_addr { s_addr: 0 },
        }),
        _ => None,
    };
    let v6 = match from {
        Some(IpAddr::V6(a)) => Some(libc::in6_pktinfo {
            ipi6_addr: libc::in6_addr {
                s6_addr: a.octets(),
            },
            ipi6_ifindex: 0,
        }),
        _ => None,
    };
    let gso = ControlMessage::UdpGsoSegments(&segment);
    let with_v4;
    let with_v6;
    let alone = [gso];
    let cmsg: &[ControlMessage<'_>] = if let Some(info) = &v4 {
        with_v4 = [gso, ControlMessage::Ipv4PacketInfo(info)];
        &with_v4
    } else if let Some(info) = &v6 {
        with_v6 = [gso, ControlMessage::Ipv6PacketInfo(info)];
        &with_v6
    } else {
        &alone
    };
    match sendmsg(fd, &iov, cmsg, MsgFlags::empty(), Some(&dest)) {
        Ok(n) => Ok(n),
        Err(Errno::EAGAIN) => Err(GsoError::WouldBlock),
        Err(Errno::EINTR) => Err(GsoError::Interrupted),
        Err(e @ (Errno::EIO | Errno::EOPNOTSUPP | Errno::ENOPROTOOPT | Errno::EMSGSIZE)) => {
            Err(GsoError::Unsupported(e))
        }
        // A source address the kernel refuses is EINVAL too: with a source, it is the
        // caller's to retry without one.
        Err(Errno::EINVAL) if from.is_none() => Err(GsoError::Unsupported(Errno::EINVAL)),
        Err(e) => Err(GsoError::Io(io::Error::from(e))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;

    #[test]
    fn one_send_arrives_as_its_segments() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        if !supported(&tx) {
            eprintln!("this kernel has no UDP_SEGMENT: nothing to test");
            return;
        }
        let mut buf = Vec::new();
        for i in 0..3u8 {
            buf.extend_from_slice(&[i; 1000]);
        }
        buf.extend_from_slice(&[9; 10]);
        assert_eq!(
            send(&tx, &buf, 1000, rx.local_addr().unwrap()).unwrap(),
            3010
        );
        let mut got = [0u8; 2000];
        for i in 0..3u8 {
            let (n, from) = rx.recv_from(&mut got).unwrap();
            assert_eq!(from, tx.local_addr().unwrap());
            assert_eq!(&got[..n], &[i; 1000][..]);
        }
        let n = rx.recv(&mut got).unwrap();
        assert_eq!(&got[..n], &[9; 10][..]);
    }

    #[test]
    fn too_many_segments_or_a_zero_segment_are_refused_unsent() {
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = "127.0.0.1:9".parse().unwrap();
        let buf = vec![0u8; 65];
        assert!(matches!(
            send(&tx, &buf, 1, to),
            Err(GsoError::Unsupported(Errno::EINVAL))
        ));
        assert!(matches!(
            send(&tx, &buf, 0, to),
            Err(GsoError::Unsupported(Errno::EINVAL))
        ));
    }

    #[test]
    fn segments_leave_from_the_source_asked_for() {
        let rx = UdpSocket::bind("0.0.0.0:0").unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let port = rx.local_addr().unwrap().port();
        let tx = UdpSocket::bind("0.0.0.0:0").unwrap();
        if !supported(&tx) {
            eprintln!("this kernel has no UDP_SEGMENT: nothing to test");
            return;
        }
        let to: SocketAddr = ([127, 0, 0, 1], port).into();
        let buf = [[1u8; 500], [2u8; 500]].concat();
        let from = IpAddr::from([127, 0, 0, 3]);
        assert_eq!(send_from(&tx, &buf, 500, to, Some(from)).unwrap(), 1000);
        let mut got = [0u8; 1000];
        for i in 1..=2u8 {
            let (n, src) = rx.recv_from(&mut got).unwrap();
            assert_eq!(src.ip(), from);
            assert_eq!(&got[..n], &[i; 500][..]);
        }
        // A source this host does not have is refused, nothing sent.
        let foreign = IpAddr::from([192, 0, 2, 1]);
        assert!(matches!(
            send_from(&tx, &buf, 500, to, Some(foreign)),
            Err(GsoError::Io(_))
        ));
    }

    #[test]
    fn segments_over_the_path_mtu_are_refused_as_too_big_unsent() {
        if !crate::caps::has_network_privileges() {
            eprintln!("SKIPPED: needs CAP_NET_ADMIN and CAP_SYS_ADMIN");
            return;
        }
        // A TUN device of MTU 1400 in a namespace of its own: the route to its peer.
        let ns = std::thread::spawn(crate::netns::NetNamespace::unshare_current_thread)
            .join()
            .unwrap()
            .unwrap();
        ns.spawn_thread("gso-mtu-test", || {
            let tun = crate::tun::TunDevice::create("gsotest%d").unwrap();
            let peer = std::net::Ipv4Addr::new(10, 98, 0, 2);
            let local = std::net::Ipv4Addr::new(10, 98, 0, 1);
            crate::tun::configure_point_to_point(tun.name(), local, peer, 1400).unwrap();
            let tx = UdpSocket::bind((local, 0)).unwrap();
            if !supported(&tx) {
                eprintln!("this kernel has no UDP_SEGMENT: nothing to test");
                return;
            }
            let to = SocketAddr::from((peer, 9));
            let buf = vec![0u8; 3000];
            let e = send(&tx, &buf, 1500, to).unwrap_err();
            assert!(e.is_too_big(), "{e:?}");
            // Segments within the MTU go (the device takes them as it can).
            let r = send(&tx, &buf, 1000, to);
            assert!(
                matches!(r, Ok(3000)) || matches!(&r, Err(e) if !e.is_too_big()),
                "{r:?}"
            );
        })
        .unwrap()
        .join()
        .unwrap();
    }
}
