//! The command lines of a run's peers, from typed options: the tunnel's two ends
//! ([`crate::tunnel_args`]), the bulk flow's `sprout tcp` server and client and the interactive
//! stream's `sprout interactive` server and client (sprout-apps' builders).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::Command;

use sprout_apps::interactive::{InteractiveClientOptions, InteractiveServerOptions, StreamOptions};
use sprout_apps::kernel_tcp::{TcpClientOptions, TcpServerOptions};
use sprout_core::direction::Load;
use sprout_secure::PublicKey;
use sprout_tunnel::config::{ClientFlags, ServerFlags};

use super::options::{
    INTERACTIVE_LINGER_S, INTERACTIVE_PAYLOAD_BYTES, INTERACTIVE_RATE_KBPS, TUNNEL_CLIENT_PROBE,
    TUNNEL_CONFIDENCE, TUNNEL_MODEL, TUNNEL_PROBE,
};
use crate::tunnel_args;

/// `sprout tunnel server` with key file `key`, accepting any client, listening on `listen`,
/// the tunnel network `server_v4`/24 (no IPv6) on device `device`, JSON lines; with the
/// experiment's settings (probe, confidence, model) if `tuned`, else the tunnel's defaults.
pub(super) fn tunnel_server(
    exe: &Path,
    key: &Path,
    listen: SocketAddr,
    server_v4: Ipv4Addr,
    device: String,
    tuned: bool,
) -> Command {
    let flags = ServerFlags {
        key: Some(key.to_path_buf()),
        allow_any_client: true,
        listen: Some(listen.to_string()),
        address: Some(format!("{server_v4}/24")),
        address6: Some("none".into()),
        device: Some(device),
        json: true,
        probe: tuned && TUNNEL_PROBE,
        confidence: tuned.then_some(TUNNEL_CONFIDENCE),
        model: tuned.then_some(TUNNEL_MODEL),
        ..ServerFlags::default()
    };
    command(exe, tunnel_args::server_args(&flags))
}

/// `sprout tunnel client` to the server at `server` with public key `server_key`, on device
/// `device`, JSON lines; with the experiment's settings if `tuned` (as [`tunnel_server`]).
pub(super) fn tunnel_client(
    exe: &Path,
    server: SocketAddr,
    server_key: &PublicKey,
    device: String,
    tuned: bool,
) -> Command {
    let flags = ClientFlags {
        server: Some(server.to_string()),
        server_key: Some(server_key.to_base64()),
        device: Some(device),
        json: true,
        probe: tuned && TUNNEL_CLIENT_PROBE,
        confidence: tuned.then_some(TUNNEL_CONFIDENCE),
        model: tuned.then_some(TUNNEL_MODEL),
        ..ClientFlags::default()
    };
    command(exe, tunnel_args::client_args(&flags))
}

/// `sprout tcp server` for one connection on `listen`, JSON lines.
pub(super) fn tcp_server(exe: &Path, listen: SocketAddr) -> Command {
    let opts = TcpServerOptions {
        listen,
        once: true,
        json: true,
    };
    command(exe, opts.to_args())
}

/// `sprout tcp client`: a kernel Cubic download from `server` for `seconds`, JSON lines (a
/// tick a second and a summary).
pub(super) fn tcp_client(exe: &Path, server: SocketAddr, seconds: f64) -> Command {
    let opts = TcpClientOptions {
        cc: "cubic".into(),
        direction: Load::Down,
        duration: seconds,
        json: true,
        ..TcpClientOptions::new(server)
    };
    command(exe, opts.to_args())
}

/// `sprout interactive server` on `listen`: the stream's relay end (see [`stream`]).
pub(super) fn interactive_server(
    exe: &Path,
    listen: SocketAddr,
    seconds: f64,
    csv: &Path,
) -> Command {
    let opts = InteractiveServerOptions {
        listen,
        stream: stream(seconds, csv),
    };
    command(exe, opts.to_args())
}

/// `sprout interactive client` to `server`: the stream's mobile end (see [`stream`]).
pub(super) fn interactive_client(
    exe: &Path,
    server: SocketAddr,
    seconds: f64,
    csv: &Path,
) -> Command {
    let opts = InteractiveClientOptions {
        connect: server,
        stream: stream(seconds, csv),
    };
    command(exe, opts.to_args())
}

/// An interactive end's stream: [`INTERACTIVE_RATE_KBPS`] of [`INTERACTIVE_PAYLOAD_BYTES`]-byte
/// packets for `seconds`, receiving [`INTERACTIVE_LINGER_S`] longer, each received packet a
/// row of `csv`, JSON lines.
fn stream(seconds: f64, csv: &Path) -> StreamOptions {
    StreamOptions {
        rate_kbps: INTERACTIVE_RATE_KBPS,
        payload_bytes: INTERACTIVE_PAYLOAD_BYTES,
        duration: Some(seconds),
        linger: INTERACTIVE_LINGER_S,
        csv: Some(csv.to_path_buf()),
        json: true,
    }
}

/// `exe` with `args`.
fn command<S: AsRef<std::ffi::OsStr>>(exe: &Path, args: Vec<S>) -> Command {
    let mut cmd = Command::new(exe);
    cmd.args(args);
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both tunnel ends of the experiments run the paper's model, named on their command
    /// lines (the tunnel's own default is the wide model).
    #[test]
    fn both_tunnel_ends_run_the_papers_model() {
        let exe = Path::new("sprout");
        let listen: SocketAddr = "10.0.0.1:9200".parse().unwrap();
        let key = sprout_secure::PrivateKey::generate().public_key();
        // Both ends' arguments, tuned for the experiments or not.
        let both_args = |tuned: bool| -> Vec<Vec<String>> {
            let server = tunnel_server(
                exe,
                Path::new("k"),
                listen,
                Ipv4Addr::new(10, 77, 9, 1),
                "d".into(),
                tuned,
            );
            let client = tunnel_client(exe, listen, &key, "c".into(), tuned);
            [server, client]
                .iter()
                .map(|cmd| {
                    cmd.get_args()
                        .map(|a| a.to_string_lossy().into_owned())
                        .collect()
                })
                .collect()
        };
        for args in both_args(true) {
            assert!(args.contains(&"--model=paper".to_string()), "{args:?}");
            assert!(args.contains(&"--confidence=0.75".to_string()), "{args:?}");
        }
        // Untuned (the `vpn` experiment's line-rate arm): the tunnel's own defaults.
        for args in both_args(false) {
            assert!(
                !args.iter().any(|a| a.starts_with("--model")
                    || a.starts_with("--confidence")
                    || a == "--probe"),
                "{args:?}"
            );
        }
    }

    /// The relay pads toward the mobile host; the mobile end does not pad its uplink (issue 36).
    #[test]
    fn only_the_relay_probes() {
        let exe = Path::new("sprout");
        let listen: SocketAddr = "10.0.0.1:9200".parse().unwrap();
        let key = sprout_secure::PrivateKey::generate().public_key();
        let server = tunnel_server(
            exe,
            Path::new("k"),
            listen,
            Ipv4Addr::new(10, 77, 9, 1),
            "d".into(),
            true,
        );
        let client = tunnel_client(exe, listen, &key, "c".into(), true);
        let probes = |cmd: &Command| cmd.get_args().any(|a| a == "--probe");
        assert!(probes(&server));
        assert!(!probes(&client));
    }
}
