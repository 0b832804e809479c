//! The peer programs of an emulated run, from sprout-apps' typed options: `sprout server` /
//! `sprout client` for Sprout, `sprout tcp server` / `sprout tcp client` for the kernel's TCP,
//! `sprout interactive server` / `client` for the interactive experiment's `direct` stream.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

use sprout_apps::interactive::{InteractiveClientOptions, InteractiveServerOptions, StreamOptions};
use sprout_apps::kernel_tcp::{TcpClientOptions, TcpServerOptions};
use sprout_apps::transfer::{ClientOptions, ServerOptions};
use sprout_core::direction::Load;
use sprout_core::SproutVariant;
use sprout_eval::eval::Scheme;
use sprout_secure::PublicKey;

/// `program` with `args` (the arguments a builder rendered).
fn command(exe: &Path, args: Vec<String>) -> Command {
    let mut cmd = Command::new(exe);
    cmd.args(args);
    cmd
}

/// The server and client command lines of Sprout or Sprout-EWMA (`scheme`): a server for one
/// session on `server` with the private key in `key_file`, accepting any client key (the client
/// makes an ephemeral one: every datagram is still sealed, as in a real deployment), and a
/// client loading both directions for `seconds`, given the server's public key. JSON lines.
pub(super) fn sprout_commands(
    exe: &Path,
    scheme: Scheme,
    server: SocketAddr,
    seconds: f64,
    (key_file, public): (&Path, PublicKey),
) -> (Command, Command) {
    let srv = ServerOptions {
        listen: server.to_string(),
        key: Some(key_file.to_path_buf()),
        allow_any_client: true,
        once: true,
        json: true,
        ..ServerOptions::default()
    };
    let cli = sprout_client(scheme, server, &public, seconds);
    (command(exe, srv.to_args()), command(exe, cli.to_args()))
}

/// A Sprout (paper or wide model) or Sprout-EWMA (`scheme`) client of `server` loading both directions for
/// `seconds`, JSON lines.
fn sprout_client(
    scheme: Scheme,
    server: SocketAddr,
    public: &PublicKey,
    seconds: f64,
) -> ClientOptions {
    ClientOptions {
        direction: Load::Both,
        duration: seconds,
        // Named explicitly: the client's default is the wide model, and the paper comparison
        // runs the paper's.
        scheme: scheme.sprout_variant().unwrap_or(SproutVariant::Sprout),
        json: true,
        ..ClientOptions::new(server.to_string(), public.to_base64())
    }
}

/// The server and client command lines of a kernel TCP scheme (Reno, BBR, else Cubic): a
/// server for one connection on `server` and a client loading both directions for `seconds`.
/// JSON lines.
pub(super) fn tcp_commands(
    exe: &Path,
    scheme: Scheme,
    server: SocketAddr,
    seconds: f64,
) -> (Command, Command) {
    let cc = match scheme {
        Scheme::Reno => "reno",
        Scheme::Bbr => "bbr",
        _ => "cubic",
    };
    let srv = TcpServerOptions {
        listen: server,
        once: true,
        json: true,
    };
    let cli = TcpClientOptions {
        cc: cc.into(),
        direction: Load::Both,
        duration: seconds,
        json: true,
        ..TcpClientOptions::new(server)
    };
    (command(exe, srv.to_args()), command(exe, cli.to_args()))
}

/// The server and client command lines of a paced Sprout or Sprout-EWMA (`scheme`) stream of
/// `rate_kbps` down from the server for `seconds` (1000-byte DATA messages), the server as in
/// [`sprout_commands`]. JSON lines.
pub(super) fn paced_commands(
    exe: &Path,
    scheme: Scheme,
    server: SocketAddr,
    (seconds, rate_kbps): (f64, f64),
    keys: (&Path, PublicKey),
) -> (Command, Command) {
    let public = keys.1.clone();
    let (srv, _) = sprout_commands(exe, scheme, server, seconds, keys);
    let cli = ClientOptions {
        direction: Load::Down,
        rate: Some(rate_kbps),
        ..sprout_client(scheme, server, &public, seconds)
    };
    (srv, command(exe, cli.to_args()))
}

/// The server and client command lines of `direct`: `sprout interactive` streaming `rate_kbps`
/// of 1000-byte packets each way for `seconds` with no congestion control, each end receiving
/// for `linger_s` more. JSON summaries.
pub(super) fn direct_commands(
    exe: &Path,
    server: SocketAddr,
    (seconds, rate_kbps): (f64, f64),
    linger_s: f64,
) -> (Command, Command) {
    let stream = StreamOptions {
        rate_kbps,
        payload_bytes: 1000,
        duration: Some(seconds),
        linger: linger_s,
        csv: None,
        json: true,
    };
    let srv = InteractiveServerOptions {
        listen: server,
        stream: stream.clone(),
    };
    let cli = InteractiveClientOptions {
        connect: server,
        stream,
    };
    (command(exe, srv.to_args()), command(exe, cli.to_args()))
}
