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
