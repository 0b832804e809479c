//! The command lines of a run's peers: the tunnel's two ends, the bulk flow's `sprout tcp`
//! server and client, and the interactive stream's `sprout interactive` server and client.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::Command;

use sprout_secure::PublicKey;
use sprout_tunnel::config::{ClientFlags, ServerFlags};

use super::options::{
    INTERACTIVE_LINGER_S, INTERACTIVE_PAYLOAD_BYTES, INTERACTIVE_RATE_KBPS, TUNNEL_CONFIDENCE,
    TUNNEL_PROBE,
};
use crate::tunnel_args;

/// `sprout tunnel server` with key file `key`, accepting any client, listening on `listen`,
/// the tunnel network `server_v4`/24 (no IPv6) on device `device`, JSON lines.
pub(super) fn tunnel_server(
    exe: &Path,
    key: &Path,
    listen: SocketAddr,
    server_v4: Ipv4Addr,
    device: String,
) -> Command {
    let flags = ServerFlags {
        key: Some(key.to_path_buf()),
        allow_any_client: true,
        listen: Some(listen.to_string()),
        address: Some(format!("{server_v4}/24")),
        address6: Some("none".into()),
        device: Some(device),
        json: true,
        probe: TUNNEL_PROBE,
        confidence: Some(TUNNEL_CONFIDENCE),
        ..ServerFlags::default()
    };
    let mut cmd = Command::new(exe);
    cmd.args(tunnel_args::server_args(&flags));
    cmd
}

/// `sprout tunnel client` to the server at `server` with public key `server_key`, on device
/// `device`, JSON lines.
pub(super) fn tunnel_client(
    exe: &Path,
    server: SocketAddr,
    server_key: &PublicKey,
    device: String,
) -> Command {
    let flags = ClientFlags {
        server: Some(server.to_string()),
        server_key: Some(server_key.to_base64()),
        device: Some(device),
        json: true,
        probe: TUNNEL_PROBE,
        confidence: Some(TUNNEL_CONFIDENCE),
        ..ClientFlags::default()
    };
    let mut cmd = Command::new(exe);
    cmd.args(tunnel_args::client_args(&flags));
    cmd
}

/// `sprout tcp server` for one connection on `listen`, JSON lines.
pub(super) fn tcp_server(exe: &Path, listen: SocketAddr) -> Command {
    let mut cmd = Command::new(exe);
    cmd.args(["tcp", "server", "--once", "--json", "--listen"])
        .arg(listen.to_string());
    cmd
}

/// `sprout tcp client`: a kernel Cubic download from `server` for `seconds`, JSON lines (a
/// tick a second and a summary).
pub(super) fn tcp_client(exe: &Path, server: SocketAddr, seconds: f64) -> Command {
    let mut cmd = Command::new(exe);
    cmd.args([
        "tcp",
        "client",
        "--json",
        "--direction",
        "down",
        "--cc",
        "cubic",
    ])
    .args([
        "--connect",
        &server.to_string(),
        "--duration",
        &format!("{seconds}"),
    ]);
    cmd
}

/// `sprout interactive server` on `listen`: the stream's relay end (see [`interactive`]).
pub(super) fn interactive_server(
    exe: &Path,
    listen: SocketAddr,
    seconds: f64,
    csv: &str,
) -> Command {
    interactive(
        exe,
        ["interactive", "server", "--listen"],
        listen,
        seconds,
        csv,
    )
}

/// `sprout interactive client` to `server`: the stream's mobile end (see [`interactive`]).
pub(super) fn interactive_client(
    exe: &Path,
    server: SocketAddr,
    seconds: f64,
    csv: &str,
) -> Command {
    interactive(
        exe,
        ["interactive", "client", "--connect"],
        server,
        seconds,
        csv,
    )
}

/// An interactive end: [`INTERACTIVE_RATE_KBPS`] of [`INTERACTIVE_PAYLOAD_BYTES`]-byte
/// packets for `seconds`, receiving [`INTERACTIVE_LINGER_S`] longer, each received packet a
/// row of `csv`, JSON lines.
fn interactive(exe: &Path, head: [&str; 3], addr: SocketAddr, seconds: f64, csv: &str) -> Command {
    let mut cmd = Command::new(exe);
    cmd.args(head)
        .arg(addr.to_string())
        .args(["--duration", &format!("{seconds}")])
        .args(["--linger", &format!("{INTERACTIVE_LINGER_S}"), "--json"])
        .args(["--rate-kbps", &format!("{INTERACTIVE_RATE_KBPS}")])
        .args(["--payload-bytes", &format!("{INTERACTIVE_PAYLOAD_BYTES}")])
        .args(["--csv", csv]);
    cmd
}
