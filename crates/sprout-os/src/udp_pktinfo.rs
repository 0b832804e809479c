//! UDP datagrams with the local address they were sent to, and replies sent from a chosen
//! local address (`IP_PKTINFO`, `IPV6_RECVPKTINFO`, `IPV6_PKTINFO`), through nix's
//! `recvmsg` and `sendmsg` control messages (rustix parses only descriptors and
//! credentials).
//!
//! A server socket bound to `0.0.0.0` (or `[::]`) on a host with several addresses would
//! otherwise send its replies from whichever address the route back prefers; a client (whose
//! socket is connected, and whose NAT maps one address pair) drops those. WireGuard calls the
//! remedy "sticky sockets".

use std::io::{self, IoSlice, IoSliceMut};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd};

use nix::sys::socket::{
    recvmsg, sendmsg, setsockopt, sockopt, ControlMessage, ControlMessageOwned, MsgFlags,
    SockaddrStorage,
};

/// Asks the kernel for the destination address of each datagram of `sock` (`v6`: an IPv6
/// socket, which on dual stack reports IPv4 datagrams with `IP_PKTINFO`); false if it
/// refuses.
pub fn enable(sock: &impl AsFd, v6: bool) -> bool {
    let v4 = setsockopt(sock, sockopt::Ipv4PacketInfo, &true).is_ok();
    if v6 {
        setsockopt(sock, sockopt::Ipv6RecvPacketInfo, &true).is_ok() || v4
    } else {
        v4
    }
}

/// Room for one control message of either family, aligned as `cmsghdr` needs.
#[repr(C, align(8))]
struct ControlBuffer([u8; 128]);

fn socket_addr(sa: &SockaddrStorage) -> Option<SocketAddr> {
    if let Some(sin) = sa.as_sockaddr_in() {
        Some(SocketAddr::from(*sin))
    } else {
        sa.as_sockaddr_in6().map(|sin6| SocketAddr::from(*sin6))
    }
}

/// Receives one datagram of `sock` into `buf`: its length (bytes), its source, and the local
/// address it was sent to (`None` if the kernel did not say; see [`enable`]).
pub fn recv(sock: &impl AsFd, buf: &mut [u8]) -> io::Result<(usize, SocketAddr, Option<IpAddr>)> {
    let mut control = ControlBuffer([0; 128]);
    let mut iov = [IoSliceMut::new(buf)];
    let msg = recvmsg::<SockaddrStorage>(
        sock.as_fd().as_raw_fd(),
        &mut iov,
        Some(&mut control.0),
        MsgFlags::empty(),
    )?;
    let from = msg
        .address
        .as_ref()
        .and_then(socket_addr)
        .ok_or_else(|| io::Error::other("datagram from a non-IP address"))?;
    let mut local = None;
    if let Ok(cmsgs) = msg.cmsgs() {
        for c in cmsgs {
            match c {
                ControlMessageOwned::Ipv4PacketInfo(info) => {
                    local = Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                        info.ipi_addr.s_addr,
                    ))));
                }
                ControlMessageOwned::Ipv6PacketInfo(info) => {
                    local = Some(IpAddr::V6(Ipv6Addr::from(info.ipi6_addr.s6_addr)));
                }
                _ => {}
            }
        }
    }
    Ok((msg.bytes, from, local))
}

/// Sends `data` on `sock` to `to` from local address `from`; the bytes sent.
pub fn send(sock: &impl AsFd, data: &[u8], to: SocketAddr, from: IpAddr) -> io::Result<usize> {
    let dest = SockaddrStorage::from(to);
    let iov = [IoSlice::new(data)];
    let fd = sock.as_fd().as_raw_fd();
    let n = match from {
        IpAddr::V4(a) => {
            let info = libc::in_pktinfo {
                ipi_ifindex: 0,
                ipi_spec_dst: libc::in_addr {
                    s_addr: u32::from(a).to_be(),
                },
                ipi_addr: libc::in_addr { s_addr: 0 },
            };
            let cmsg = [ControlMessage::Ipv4PacketInfo(&info)];
            sendmsg(fd, &iov, &cmsg, MsgFlags::empty(), Some(&dest))?
        }
        IpAddr::V6(a) => {
            let info = libc::in6_pktinfo {
                ipi6_addr: libc::in6_addr {
                    s6_addr: a.octets(),
                },
                ipi6_ifindex: 0,
            };
            let cmsg = [ControlMessage::Ipv6PacketInfo(&info)];
            sendmsg(fd, &iov, &cmsg, MsgFlags::empty(), Some(&dest))?
        }
    };
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;

    #[test]
    fn the_local_address_is_reported_and_used_for_replies() {
        let server = UdpSocket::bind("0.0.0.0:0").unwrap();
        assert!(enable(&server, false));
        let port = server.local_addr().unwrap().port();
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        client.connect(("127.0.0.2", port)).unwrap();
        client.send(b"hello").unwrap();
        let mut buf = [0u8; 64];
        let (n, from, local) = recv(&server, &mut buf).unwrap();
        assert_eq!(&buf[..n], b"hello");
        assert_eq!(from, client.local_addr().unwrap());
        assert_eq!(local, Some(IpAddr::from([127, 0, 0, 2])));
        // The connected client takes only replies from 127.0.0.2.
        assert_eq!(send(&server, b"back", from, local.unwrap()).unwrap(), 4);
        let n = client.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"back");
    }
}
