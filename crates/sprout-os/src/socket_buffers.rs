//! Socket buffer sizes beyond the system's limits.

use std::io;
use std::os::fd::AsFd;

/// Sets the receive buffer of `sock` to `bytes` (the kernel doubles it for its bookkeeping)
/// with `SO_RCVBUFFORCE`, which ignores `net.core.rmem_max` but needs `CAP_NET_ADMIN`.
pub fn force_receive_buffer(sock: &impl AsFd, bytes: usize) -> io::Result<()> {
    Ok(rustix::net::sockopt::set_socket_recv_buffer_size_force(
        sock, bytes,
    )?)
}

/// Sets the send buffer of `sock` to `bytes` (doubled by the kernel) with `SO_SNDBUFFORCE`,
/// which ignores `net.core.wmem_max` but needs `CAP_NET_ADMIN`.
pub fn force_send_buffer(sock: &impl AsFd, bytes: usize) -> io::Result<()> {
    Ok(rustix::net::sockopt::set_socket_send_buffer_size_force(
        sock, bytes,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forced_buffers_pass_the_system_limit_with_privileges() {
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let want = 64 << 20;
        let r = force_receive_buffer(&sock, want).and(force_send_buffer(&sock, want));
        if !crate::caps::has_net_admin() {
            assert!(r.is_err(), "forced without CAP_NET_ADMIN");
            return;
        }
        r.unwrap();
        let s = socket2::SockRef::from(&sock);
        // The kernel doubles what it is given.
        assert_eq!(s.recv_buffer_size().unwrap(), 2 * want);
        assert_eq!(s.send_buffer_size().unwrap(), 2 * want);
    }
}
