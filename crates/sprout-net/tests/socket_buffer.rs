//! The server's one socket carries every session: it asks the kernel for large buffers.

use sprout_core::Config;
use sprout_net::secure::{AllowedClients, PrivateKey, ServerConfig};
use sprout_net::{Server, ServerOptions};

/// A kernel limit from /proc/sys/net/core, bytes.
fn sysctl(name: &str) -> usize {
    std::fs::read_to_string(format!("/proc/sys/net/core/{name}"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

fn server(buffer: Option<usize>) -> Server {
    let mut options = ServerOptions::new(ServerConfig::new(
        PrivateKey::generate(),
        AllowedClients::Any,
    ));
    if let Some(b) = buffer {
        options.socket_buffer_bytes = b;
    }
    Server::bind("127.0.0.1:0".parse().unwrap(), options, |_, _, _| {
        Some(Config::default())
    })
    .unwrap()
}

#[test]
fn the_server_socket_gets_the_buffers_it_asks_for_within_the_kernel_limits() {
    let (rmem_max, wmem_max) = (sysctl("rmem_max"), sysctl("wmem_max"));
    let asked = sprout_net::server::DEFAULT_SOCKET_BUFFER_BYTES;
    let (recv, send) = server(None).socket_buffer_bytes();
    // Linux grants min(asked, limit) and reports twice that.
    assert!(recv >= asked.min(rmem_max), "receive buffer {recv} B");
    assert!(send >= asked.min(wmem_max), "send buffer {send} B");

    let (recv_small, _) = server(Some(64 << 10)).socket_buffer_bytes();
    assert!(recv_small >= (64 << 10).min(rmem_max));
    if rmem_max >= asked {
        assert!(recv > recv_small, "{recv} vs {recv_small}");
    }
    // 0 leaves the kernel's default.
    let (recv_default, _) = server(Some(0)).socket_buffer_bytes();
    assert_eq!(recv_default, sysctl("rmem_default"));
}
