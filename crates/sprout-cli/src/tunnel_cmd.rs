//! `sprout tunnel server` and `sprout tunnel client`: SproutTunnel, any IP traffic between a
//! mobile host and a relay through secure Sprout sessions, one queue per flow (see the
//! `sprout_tunnel` crate; the runtime is `sprout_tunnel::runtime`).

use std::io::BufReader;
use std::path::PathBuf;

use anyhow::Result;
use sprout_tunnel::cleanup::{self, WatchdogCommand};
use sprout_tunnel::config::{self, ClientFlags, RateModel, ServerFlags};
use sprout_tunnel::runtime;

use crate::tunnel_try_cmd;

/// `sprout tunnel` arguments.
#[derive(clap::Args)]
pub(crate) struct TunnelArgs {
    #[command(subcommand)]
    command: TunnelCommand,
}

#[derive(clap::Subcommand)]
enum TunnelCommand {
    /// The relay's end: a TUN device with the tunnel network's first address, many clients
    /// on one UDP socket, each given its own tunnel addresses. Needs root.
    Server(ServerArgs),
    /// The mobile host's end: connects to a server, makes a TUN device with the addresses the
    /// server assigns, routes the tunnel network (and --route prefixes) through it. Needs root.
    Client(ClientArgs),
    /// The tunnel on one machine: a relay and a client in two new network namespaces with an
    /// emulated link between them, a ping and a download through the tunnel, what they
    /// measured, and everything removed at the end (also on Ctrl-C). Needs root.
    Try(tunnel_try_cmd::TryArgs),
    /// The clean-up watchdog (started by the tunnel itself; runs the clean-up commands it was
    /// given on its standard input when that closes).
    #[command(hide = true)]
    Watchdog,
}

/// `sprout tunnel server` arguments.
#[derive(clap::Args)]
pub(crate) struct ServerArgs {
    /// The server's private key file (from `sprout keygen --out FILE`). Required (here or in
    /// --config).
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// File of the client public keys allowed to connect: one base64 key per line, `#` starts
    /// a comment. One of --allowed-clients, --allow-any-client or [[peer]] entries in
    /// --config is required.
    #[arg(long, value_name = "FILE")]
    allowed_clients: Option<PathBuf>,
    /// Accept any client key (still encrypted and authenticated per session; each client only
    /// ever sends from the address it was given).
    #[arg(long)]
    allow_any_client: bool,
    /// UDP address and port to listen on [default: 0.0.0.0:9200].
    #[arg(long, value_name = "HOST:PORT")]
    listen: Option<String>,
    /// The server's IPv4 tunnel address and network; clients get the network's other
    /// addresses in order. `none`: no IPv4 [default: 10.77.0.1/24].
    #[arg(long, value_name = "ADDR/PREFIX|none")]
    address: Option<String>,
    /// The server's IPv6 tunnel address and network, or `none` [default: fd77::1/64].
    #[arg(long, value_name = "ADDR/PREFIX|none")]
    address6: Option<String>,
    /// TUN device name; `%d` lets the kernel pick the number [default: sprout%d].
    #[arg(long, value_name = "NAME")]
    device: Option<String>,
    /// The path MTU between the ends, bytes: the TUN MTU is what fits a full tunnel datagram
    /// in it [default: 1500].
    #[arg(long, value_name = "BYTES")]
    path_mtu: Option<u32>,
    /// Add the addresses without their prefix routes (`noprefixroute`): no route leads into
    /// the tunnel until you add one.
    #[arg(long)]
    no_routes: bool,
    /// Do not forward packets between clients.
    #[arg(long)]
    no_client_to_client: bool,
    /// Keep clients from this host itself: drop their packets to its own addresses
    /// (loopback, broadcast and multicast too), except ICMP to the server's tunnel address.
    /// Without it a client reaches every service listening on this host.
    #[arg(long)]
    isolate: bool,
    /// Pad the Sprout window toward the clients while the session carries traffic, so that
    /// the downlink is measured even when it carries only light traffic (a call, TCP
    /// acknowledgements); without it such a direction is forecast from that traffic alone and
    /// its packets wait or drop. Costs the padding: about what Sprout would use of the link.
    #[arg(long)]
    probe: bool,
    /// Forecast confidence of the Sprout sessions, strictly between 0 and 1; both ends must
    /// use the same [default: 0.95, the paper's]. Lower sends more in the link's dips, at more
    /// delay.
    #[arg(long, value_name = "P")]
    confidence: Option<f64>,
    /// Rate model of the Sprout sessions (use the same at both ends). `wide`: rates from an
    /// outage to 1 Gbit/s; `paper`: the paper's model, which forecasts at most 12 Mbit/s
    /// [default: wide].
    #[arg(long, value_enum, value_name = "MODEL")]
    model: Option<ModelArg>,
    /// Most clients at once [default: 64].
    #[arg(long, value_name = "N")]
    max_clients: Option<usize>,
    /// A client silent this long is disconnected and its addresses freed, in seconds
    /// [default: 30].
    #[arg(long, value_name = "SECONDS")]
    idle_timeout: Option<f64>,
    /// One JSON object per line (events, status, exit) instead of text.
    #[arg(long)]
    json: bool,
    /// Seconds between status lines [default: 1].
    #[arg(long, value_name = "SECONDS")]
    status_interval: Option<f64>,
    /// Stop after this many seconds [default: until SIGINT or SIGTERM].
    #[arg(long, value_name = "SECONDS")]
    duration: Option<f64>,
    /// A TOML file with the same keys (`listen = "0.0.0.0:9200"`, `allowed-clients = "..."`,
    /// ...) and [[peer]] entries pinning addresses to client keys; flags override it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

/// `sprout tunnel client` arguments.
#[derive(clap::Args)]
pub(crate) struct ClientArgs {
    /// The server's UDP address and port. Required (here or in --config).
    #[arg(long, value_name = "HOST:PORT")]
    server: Option<String>,
    /// The server's public key: base64, as `sprout tunnel server` prints it, or a file holding
    /// it. Required (here or in --config).
    #[arg(long, value_name = "BASE64|FILE")]
    server_key: Option<String>,
    /// This client's private key file (from `sprout keygen --out FILE`) [default: a new
    /// ephemeral key, printed at the start, which only a server with --allow-any-client
    /// accepts].
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// TUN device name; `%d` lets the kernel pick the number [default: sprout%d].
    #[arg(long, value_name = "NAME")]
    device: Option<String>,
    /// The path MTU to the server, bytes [default: 1500].
    #[arg(long, value_name = "BYTES")]
    path_mtu: Option<u32>,
    /// Also route this prefix through the tunnel (repeatable). 0.0.0.0/0 (or ::/0): all
    /// traffic, as 0.0.0.0/1 + 128.0.0.0/1 through the tunnel plus a host route to the server
    /// through the old path (removed on exit) [default: only the tunnel network].
    #[arg(long = "route", value_name = "CIDR")]
    routes: Vec<String>,
    /// The device and its addresses only (without prefix routes): no route into the tunnel.
    #[arg(long, conflicts_with = "routes")]
    no_routes: bool,
    /// Pad the Sprout window toward the server while the session carries traffic, so that
    /// the uplink is measured even when it carries only light traffic (a call, TCP
    /// acknowledgements); without it such a direction is forecast from that traffic alone and
    /// its packets wait or drop. Costs the padding: about what Sprout would use of the link.
    #[arg(long)]
    probe: bool,
    /// Forecast confidence of the Sprout sessions, strictly between 0 and 1; both ends must
    /// use the same [default: 0.95, the paper's]. Lower sends more in the link's dips, at more
    /// delay.
    #[arg(long, value_name = "P")]
    confidence: Option<f64>,
    /// Rate model of the Sprout sessions (use the same at both ends). `wide`: rates from an
    /// outage to 1 Gbit/s; `paper`: the paper's model, which forecasts at most 12 Mbit/s
    /// [default: wide].
    #[arg(long, value_enum, value_name = "MODEL")]
    model: Option<ModelArg>,
    /// One JSON object per line (events, status, exit) instead of text.
    #[arg(long)]
    json: bool,
    /// Seconds between status lines [default: 1].
    #[arg(long, value_name = "SECONDS")]
    status_interval: Option<f64>,
    /// Stop after this many seconds [default: until SIGINT or SIGTERM].
    #[arg(long, value_name = "SECONDS")]
    duration: Option<f64>,
    /// A TOML file with the same keys (`server = "..."`, `server-key = "..."`, `route =
    /// ["0.0.0.0/0"]`, ...); flags override it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

/// `--model`: the rate model of the tunnel's Sprout sessions.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum ModelArg {
    /// Rates from an outage to 1 Gbit/s on a log grid (the default).
    Wide,
    /// The paper's model: 256 rates up to 1,000 packets/s (12 Mbit/s).
    Paper,
}

impl From<ModelArg> for RateModel {
    fn from(m: ModelArg) -> RateModel {
        match m {
            ModelArg::Wide => RateModel::Wide,
            ModelArg::Paper => RateModel::Paper,
        }
    }
}

/// The watchdog: this executable with `tunnel watchdog`.
fn watchdog_command() -> Option<WatchdogCommand> {
    let exe = std::env::current_exe().ok()?;
    Some(WatchdogCommand {
        program: exe,
        args: vec!["tunnel".into(), "watchdog".into()],
    })
}

/// Prints a setup or runtime error as a JSON line too when `--json` (the message also goes to
/// standard error through `main`).
fn fail(json: bool, e: impl std::fmt::Display) -> anyhow::Error {
    if json {
        println!(
            "{}",
            serde_json::json!({"event": "error", "message": e.to_string()})
        );
    }
    anyhow::anyhow!("{e}")
}

/// Runs `sprout tunnel ...`.
pub(crate) fn run(a: TunnelArgs) -> Result<()> {
    match a.command {
        TunnelCommand::Watchdog => {
            let code = cleanup::watchdog_main(BufReader::new(std::io::stdin()));
            std::process::exit(code);
        }
        TunnelCommand::Try(t) => tunnel_try_cmd::run(t),
        TunnelCommand::Server(s) => {
            let json = s.json;
            let isolate = s.isolate;
            let mut cfg = config::server_config(ServerFlags {
                config: s.config,
                key: s.key,
                allowed_clients: s.allowed_clients,
                allow_any_client: s.allow_any_client,
                listen: s.listen,
                address: s.address,
                address6: s.address6,
                device: s.device,
                path_mtu: s.path_mtu,
                no_routes: s.no_routes,
                no_client_to_client: s.no_client_to_client,
                probe: s.probe,
                confidence: s.confidence,
                model: s.model.map(RateModel::from),
                max_clients: s.max_clients,
                idle_timeout: s.idle_timeout,
                json: s.json,
                status_interval: s.status_interval,
                duration: s.duration,
                peer: Vec::new(),
            })
            .map_err(|e| fail(json, e))?;
            cfg.settings.isolate = isolate;
            let json = cfg.run.json;
            if let Some(w) = watchdog_command() {
                cleanup::set_watchdog_command(w);
            }
            let r = runtime::run_server(cfg);
            cleanup::finish();
            r.map(|_| ()).map_err(|e| fail(json, e))
        }
        TunnelCommand::Client(c) => {
            let json = c.json;
            let cfg = config::client_config(ClientFlags {
                config: c.config,
                server: c.server,
                server_key: c.server_key,
                key: c.key,
                device: c.device,
                path_mtu: c.path_mtu,
                route: c.routes,
                no_routes: c.no_routes,
                probe: c.probe,
                confidence: c.confidence,
                model: c.model.map(RateModel::from),
                json: c.json,
                status_interval: c.status_interval,
                duration: c.duration,
            })
            .map_err(|e| fail(json, e))?;
            let json = cfg.run.json;
            if let Some(w) = watchdog_command() {
                cleanup::set_watchdog_command(w);
            }
            let r = runtime::run_client(cfg);
            cleanup::finish();
            r.map(|_| ()).map_err(|e| fail(json, e))
        }
    }
}
