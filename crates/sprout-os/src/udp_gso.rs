//! UDP generic segmentation offload (`UDP_SEGMENT`, Linux 4.18 and later): many datagrams to
//! one destination in one `sendmsg(2)`, as one buffer of equal-sized segments (the last may
//! be shorter) that the kernel (or the network card) cuts into datagrams after the stack has
//! been crossed once. Through nix's `sendmsg` and its `UdpGsoSegments` control message.
//!
//! Where the kernel lacks it, [`supported`] says no; where the outgoing device cannot take
//! it (no checksum offload), a send fails with [`GsoError::Unsupported`] and the caller sends
//! the segments one by one.

use std::io::{self, IoSlice};
use std::net::SocketAddr;
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
    /// The kernel or the outgoing device cannot segment (`EIO`, `EINVAL`, `EOPNOTSUPP`, ...):
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

/// Whether the kernel knows `UDP_SEGMENT` for `sock` (a UDP socket).
pub fn supported(sock: &impl AsFd) -> bool {
    getsockopt(sock, sockopt::UdpGsoSegment).is_ok()
}

/// Sends `buf` to `to` as datagrams of `segment` bytes each (the last one what remains), in
/// one call; returns the bytes sent (all of `buf`). `buf` holds at most [`MAX_SEGMENTS`]
/// segments and [`MAX_BYTES`] bytes, and `segment` is at least 1 (else
/// [`GsoError::Unsupported`] with `EINVAL`, nothing sent).
pub fn send(sock: &impl AsFd, buf: &[u8], segment: u16, to: SocketAddr) -> Result<usize, GsoError> {
    let seg = segment as usize;
    if seg == 0 || buf.len() > MAX_BYTES || buf.len().div_ceil(seg) > MAX_SEGMENTS {
        return Err(GsoError::Unsupported(Errno::EINVAL));
    }
    let dest = SockaddrStorage::from(to);
    let iov = [IoSlice::new(buf)];
    let cmsg = [ControlMessage::UdpGsoSegments(&segment)];
    let fd = sock.as_fd().as_raw_fd();
    match sendmsg(fd, &iov, &cmsg, MsgFlags::empty(), Some(&dest)) {
        Ok(n) => Ok(n),
        Err(Errno::EAGAIN) => Err(GsoError::WouldBlock),
        Err(Errno::EINTR) => Err(GsoError::Interrupted),
        Err(e @ (Errno::EIO | Errno::EINVAL | Errno::EOPNOTSUPP | Errno::ENOPROTOOPT)) => {
            Err(GsoError::Unsupported(e))
        }
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
}
