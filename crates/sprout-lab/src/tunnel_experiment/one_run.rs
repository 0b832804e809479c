//! One run through a fresh emulator: the tunnel's ends if asked for, the bulk download and the
//! interactive stream, waited for, stopped, and their outputs read back.

use std::fs;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use serde::Deserialize;
use serde_json::Value;
use sprout_emu::{Emulator, EmulatorConfig};
use sprout_link::{QueueConfig, Trace};
use sprout_secure::PrivateKey;

use super::call::{self, CallOutput};
use super::commands;
use super::options::{TunnelOptions, CALL_LINGER_S, INTERACTIVE_LINGER_S};
use super::peers::{csv_path, json_lines, Peers};
use crate::error::{Context, LabError};

/// TCP port of the bulk server.
const BULK_PORT: u16 = 9200;
/// UDP port of the interactive server.
const INTERACTIVE_PORT: u16 = 9201;
/// UDP port of the tunnel server, on the emulator's outside address.
const TUNNEL_PORT: u16 = 9300;
/// Time the servers get to start listening before the clients start.
const SERVER_START: Duration = Duration::from_millis(400);
/// Longest wait for the tunnel server's "listening" line.
const TUNNEL_LISTEN_WAIT: Duration = Duration::from_secs(10);
/// Longest wait for the tunnel client's "up" line.
const TUNNEL_UP_WAIT: Duration = Duration::from_secs(30);
/// Time the clients may overrun their duration and linger before the run is given up.
const CLIENT_GRACE: Duration = Duration::from_secs(45);
/// Time a peer gets to exit after SIGINT (or after its work is done) before it is killed.
const EXIT_WAIT: Duration = Duration::from_secs(10);

/// What one run carries.
pub(super) struct RunSpec<'a> {
    /// File prefix inside `tunnel/`: "direct", "tunnel" or "cost".
    pub(super) name: &'a str,
    /// The uplink's trace.
    pub(super) up: Arc<Trace>,
    /// The downlink's trace.
    pub(super) down: Arc<Trace>,
    /// Through the tunnel (else straight over the emulated link).
    pub(super) tunnel: bool,
    /// With the interactive stream beside the bulk download.
    pub(super) interactive: bool,
    /// With the WebRTC call beside them too.
    pub(super) call: bool,
    /// Seconds of each flow.
    pub(super) duration_s: f64,
    /// Both directions' queue (the unlimited drop-tail but in the `aqm` experiment's FQ-CoDel
    /// run).
    pub(super) queue: QueueConfig,
}

/// One received interactive packet (a row of `sprout interactive --csv`).
#[derive(Clone, Copy, Debug, Deserialize)]
pub(super) struct Arrival {
    /// Sequence number.
    pub(super) seq: u64,
    /// Sent at, µs of `CLOCK_MONOTONIC`.
    pub(super) sent_us: u64,
    /// Received at, µs of `CLOCK_MONOTONIC`.
    pub(super) received_us: u64,
    /// UDP payload, bytes.
    pub(super) bytes: u64,
}

/// What one run produced, before analysis.
pub(super) struct RunOutput {
    /// The clients' start, µs of `CLOCK_MONOTONIC`.
    pub(super) t0_mono_us: u64,
    /// The clients' start, µs of link time (since the emulator's time 0).
    pub(super) t0_link_us: u64,
    /// The tcp client's per-second counts: (elapsed s, bytes received so far).
    pub(super) bulk_ticks: Vec<(f64, u64)>,
    /// The interactive client's summary (it sent up, received down).
    pub(super) interactive_client: Option<Value>,
    /// The interactive server's summary (it sent down, received up).
    pub(super) interactive_server: Option<Value>,
    /// Packets the client received (down).
    pub(super) down: Vec<Arrival>,
    /// Packets the server received (up).
    pub(super) up: Vec<Arrival>,
    /// What the WebRTC call's ends wrote, if it ran.
    pub(super) call: Option<CallOutput>,
    /// CPU seconds (user + system) the tunnel's (server, client) processes used from the
    /// clients' start to their end, if the run went through a tunnel and both could be read.
    pub(super) tunnel_cpu_s: Option<(f64, f64)>,
    /// File prefix of the run.
    pub(super) prefix: String,
}

/// The addresses of a run's flows: (relay side, mobile side). The servers listen on the first
/// and the clients connect to it; the WebRTC call's ends bind to one each.
pub(super) type Addrs = (IpAddr, IpAddr);

/// Starts a run's tunnel ends in place of SproutTunnel's (the `vpn` experiment's WireGuard):
/// given the run's emulator, its peers and its file prefix, returns the flows' addresses and
/// the (server, client) ends' peer indices.
pub(super) type StartEnds<'a> =
    &'a dyn Fn(&Emulator, &mut Peers, &str) -> Result<(Addrs, (usize, usize)), LabError>;

/// The flows' peers (indices into [`Peers`]) and when their clients started.
struct Flows {
    bulk_server: usize,
    interactive_server: Option<usize>,
    bulk_client: usize,
    interactive_client: Option<usize>,
    /// The tunnel's (server, client), if the flows go through it.
    tunnel: Option<(usize, usize)>,
    /// The WebRTC call's (answer, offer) ends, if it runs.
    call: Option<(usize, usize)>,
    /// The clients' start, µs of `CLOCK_MONOTONIC`.
    t0_mono_us: u64,
    /// The clients' start, µs of link time.
    t0_link_us: u64,
    /// The clients' start.
    started: Instant,
}

/// A /24 in 10.77.0.0/16 with no address in use on this host.
pub(super) fn tunnel_network() -> u8 {
    let taken = sprout_os::interfaces::ipv4_addresses_in_use();
    let start = (std::process::id() % 200) as u16;
    (0..240u16)
        .map(|k| (10 + (start + k) % 240) as u8)
        .find(|&n| !taken.iter().any(|a| a.octets()[..3] == [10, 77, n]))
        .unwrap_or(250)
}

/// A TUN device name not in use in this namespace: `PREFIX` + the process id in hex + a digit.
pub(super) fn device_name(prefix: &str) -> String {
    let pid = std::process::id() & 0xff_ffff;
    (0..100)
        .map(|k| format!("{prefix}{pid:x}{k}"))
        .find(|n| !sprout_os::tun::interface_exists(n))
        .unwrap_or_else(|| format!("{prefix}{pid:x}"))
}

/// Runs one configuration through a fresh emulator and collects its outputs.
pub(super) fn run_once(
    opts: &TunnelOptions,
    spec: &RunSpec,
    bar: &ProgressBar,
) -> Result<RunOutput, LabError> {
    run_once_with(opts, spec, bar, None)
}

/// [`run_once`], its tunnel's ends (if `spec.tunnel`) started by `ends` if given, else
/// SproutTunnel's with the experiment's settings.
pub(super) fn run_once_with(
    opts: &TunnelOptions,
    spec: &RunSpec,
    bar: &ProgressBar,
    ends: Option<StartEnds>,
) -> Result<RunOutput, LabError> {
    let dir = opts.out.join("tunnel");
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let prefix = dir.join(spec.name).display().to_string();
    let mut config = EmulatorConfig::new(spec.up.clone(), spec.down.clone());
    config.uplink_link.queue = spec.queue;
    config.downlink_link.queue = spec.queue;
    let emu = Emulator::start(config).context("starting the link emulator")?;
    let mut peers = Peers::new(prefix.clone());
    let (addrs, tunnel) = if spec.tunnel {
        let (addrs, ends) = match ends {
            Some(start) => start(&emu, &mut peers, &prefix)?,
            None => start_tunnel(opts, &emu, &mut peers, &prefix, true)?,
        };
        (addrs, Some(ends))
    } else {
        let addrs = (
            IpAddr::V4(emu.outside_addr()),
            IpAddr::V4(emu.mobile_addr()),
        );
        (addrs, None)
    };
    let flows = start_flows(opts, spec, &emu, &mut peers, addrs, tunnel)?;
    let cpu = |peers: &mut Peers| {
        let (s, c) = tunnel?;
        Some((peers.cpu_seconds(s)?, peers.cpu_seconds(c)?))
    };
    let cpu_before = cpu(&mut peers);
    wait_for_clients(spec, &mut peers, &flows, bar)?;
    let cpu_after = cpu(&mut peers);
    stop_peers(&mut peers, &flows)?;
    drop(peers);
    emu.stop().context("stopping the link emulator")?;
    let mut out = read_outputs(spec, prefix, &flows)?;
    out.tunnel_cpu_s = match (cpu_before, cpu_after) {
        (Some(a), Some(b)) => Some((b.0 - a.0, b.1 - a.1)),
        _ => None,
    };
    Ok(out)
}

/// Starts the tunnel's server (host namespace, on the emulator's outside address) with a fresh
/// key, then its client in the mobile namespace; returns the server's tunnel address, which
/// the flows go to, the client's (the WebRTC call's offer end binds to it), and the two ends'
/// peer indices. With the experiment's settings if `tuned`, else the tunnel's defaults.
pub(super) fn start_tunnel(
    opts: &TunnelOptions,
    emu: &Emulator,
    peers: &mut Peers,
    prefix: &str,
    tuned: bool,
) -> Result<(Addrs, (usize, usize)), LabError> {
    let exe = &opts.sprout_exe;
    let key_file = PathBuf::from(format!("{prefix}.server.key"));
    if key_file.exists() {
        fs::remove_file(&key_file)
            .with_context(|| format!("removing the old {}", key_file.display()))?;
    }
    let key = PrivateKey::generate();
    key.write_file(&key_file)?;
    let net = tunnel_network();
    let listen = SocketAddr::new(IpAddr::V4(emu.outside_addr()), TUNNEL_PORT);
    let server_v4 = Ipv4Addr::new(10, 77, net, 1);
    let mut srv =
        commands::tunnel_server(exe, &key_file, listen, server_v4, device_name("sts"), tuned);
    let s = peers.spawn("tunnel-server", &mut srv, None)?;
    peers.wait_for_event(s, "listening", TUNNEL_LISTEN_WAIT)?;
    let mut cli =
        commands::tunnel_client(exe, listen, &key.public_key(), device_name("stc"), tuned);
    let c = peers.spawn("tunnel-client", &mut cli, Some(emu))?;
    let up = peers.wait_for_event(c, "up", TUNNEL_UP_WAIT)?;
    let target = up["server_v4"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(IpAddr::V4(server_v4));
    // "v4" is the client's address with the network's prefix length: "10.77.N.2/24".
    let client = up["v4"]
        .as_str()
        .and_then(|s| s.split('/').next()?.parse::<Ipv4Addr>().ok())
        .ok_or_else(|| {
            LabError::Failed(format!(
                "the tunnel client's \"up\" line has no IPv4 tunnel address ({})",
                sprout_files::excerpt(&up["v4"].to_string())
            ))
        })?;
    Ok(((target, IpAddr::V4(client)), (s, c)))
}

/// Starts the servers of the flows (host namespace, on `target`, the first of `addrs`) and
/// the WebRTC call's answer end (bound to `target`), gives them [`SERVER_START`], then starts
/// their clients in the mobile namespace (the call's offer end bound to `addrs.1`).
fn start_flows(
    opts: &TunnelOptions,
    spec: &RunSpec,
    emu: &Emulator,
    peers: &mut Peers,
    addrs: Addrs,
    tunnel: Option<(usize, usize)>,
) -> Result<Flows, LabError> {
    let (target, local) = addrs;
    let exe = &opts.sprout_exe;
    let dir = opts.out.join("tunnel");
    let call_s = spec.duration_s + CALL_LINGER_S;
    let secs = spec.duration_s;
    let bulk_addr = SocketAddr::new(target, BULK_PORT);
    let ia_addr = SocketAddr::new(target, INTERACTIVE_PORT);
    let ia_server_csv = peers.csv("interactive-server");
    let ia_client_csv = peers.csv("interactive-client");
    let bulk_server = peers.spawn(
        "tcp-server",
        &mut commands::tcp_server(exe, bulk_addr),
        None,
    )?;
    let interactive_server = if spec.interactive {
        let mut c = commands::interactive_server(exe, ia_addr, secs, &ia_server_csv);
        Some(peers.spawn("interactive-server", &mut c, None)?)
    } else {
        None
    };
    let answer = if spec.call {
        Some(call::start_answer(
            opts, peers, &dir, spec.name, target, call_s,
        )?)
    } else {
        None
    };
    thread::sleep(SERVER_START);
    let t0_mono_us = sprout_os::clock::monotonic_ns() / 1000;
    let t0_link_us = emu.now_us();
    let started = Instant::now();
    let mut bulk_c = commands::tcp_client(exe, bulk_addr, secs);
    let bulk_client = peers.spawn("tcp-client", &mut bulk_c, Some(emu))?;
    let interactive_client = if spec.interactive {
        let mut c = commands::interactive_client(exe, ia_addr, secs, &ia_client_csv);
        Some(peers.spawn("interactive-client", &mut c, Some(emu))?)
    } else {
        None
    };
    let call = match answer {
        Some(a) => {
            let o = call::start_offer(opts, peers, emu, &dir, spec.name, local, call_s)?;
            Some((a, o))
        }
        None => None,
    };
    Ok(Flows {
        bulk_server,
        interactive_server,
        bulk_client,
        interactive_client,
        tunnel,
        call,
        t0_mono_us,
        t0_link_us,
        started,
    })
}

/// Waits for the clients to exit successfully, showing progress; a tunnel end that dies ends
/// the run.
fn wait_for_clients(
    spec: &RunSpec,
    peers: &mut Peers,
    flows: &Flows,
    bar: &ProgressBar,
) -> Result<(), LabError> {
    let linger = |on: bool, s: f64| if on { s } else { 0.0 };
    let shown_total = spec.duration_s
        + linger(spec.interactive, INTERACTIVE_LINGER_S).max(linger(spec.call, CALL_LINGER_S));
    let limit = Duration::from_secs_f64(shown_total) + CLIENT_GRACE;
    let mut shown = 0u64;
    loop {
        let done = peers.poll(flows.bulk_client).is_some()
            && flows
                .interactive_client
                .is_none_or(|k| peers.poll(k).is_some())
            && flows.call.is_none_or(|(_, o)| peers.poll(o).is_some());
        if done {
            break;
        }
        if let Some((s, c)) = flows.tunnel {
            for k in [s, c] {
                if peers.poll(k).is_some() {
                    let role = peers.role(k);
                    return Err(LabError::Failed(format!(
                        "the {role} ended during the run; see {}",
                        peers.err(role).display()
                    )));
                }
            }
        }
        if flows.started.elapsed() > limit {
            return Err(LabError::Failed(format!(
                "the clients did not end within {:.0} s; see {} and {}",
                limit.as_secs_f64(),
                peers.err("tcp-client").display(),
                peers.err("interactive-client").display()
            )));
        }
        let secs_now = (flows.started.elapsed().as_secs_f64().min(shown_total)) as u64;
        if secs_now > shown {
            bar.inc(secs_now - shown);
            shown = secs_now;
        }
        thread::sleep(Duration::from_millis(100));
    }
    bar.inc((shown_total as u64).saturating_sub(shown));
    peers.check_success(flows.bulk_client)?;
    if let Some(k) = flows.interactive_client {
        peers.check_success(k)?;
    }
    if let Some((_, o)) = flows.call {
        peers.check_success(o)?;
    }
    Ok(())
}

/// Lets the servers end by themselves (the tcp server, `--once`, after its connection; the
/// interactive server after its duration and linger, counted from its first packet; the
/// call's answer end after its media time, counted from the connection), then interrupts the
/// tunnel's ends; fails unless each exited successfully.
fn stop_peers(peers: &mut Peers, flows: &Flows) -> Result<(), LabError> {
    let answer = flows.call.map(|(a, _)| a);
    for k in [Some(flows.bulk_server), flows.interactive_server, answer]
        .into_iter()
        .flatten()
    {
        if peers.wait(k, EXIT_WAIT).is_none() {
            // The call's end closes its connection (up to 5 s) before it prints its summary.
            let grace = if Some(k) == answer {
                EXIT_WAIT
            } else {
                Duration::from_secs(2)
            };
            peers.stop(k, grace);
        }
    }
    for k in [flows.interactive_server, answer].into_iter().flatten() {
        peers.check_success(k)?;
    }
    if let Some((s, c)) = flows.tunnel {
        for k in [c, s] {
            peers.stop(k, EXIT_WAIT);
            peers.check_success(k)?;
        }
    }
    Ok(())
}

/// The last `summary` JSON line of `PREFIX.ROLE.out`.
fn read_summary(prefix: &str, role: &str) -> Result<Value, LabError> {
    let path = PathBuf::from(format!("{prefix}.{role}.out"));
    json_lines(&path)
        .into_iter()
        .rev()
        .find(|v| v["type"] == "summary")
        .ok_or_else(|| LabError::Failed(format!("no summary line in {}", path.display())))
}

/// Reads back what the peers wrote: the tcp client's per-second counts and, with the
/// interactive stream, both ends' summaries and received packets.
fn read_outputs(spec: &RunSpec, prefix: String, flows: &Flows) -> Result<RunOutput, LabError> {
    // The tcp client ends with a summary line: without it, its counts are incomplete.
    read_summary(&prefix, "tcp-client")?;
    let bulk_lines = json_lines(Path::new(&format!("{prefix}.tcp-client.out")));
    let bulk_ticks = bulk_lines
        .iter()
        .filter(|v| v["type"] == "tick")
        .filter_map(|v| Some((v["elapsed_s"].as_f64()?, v["received_bytes"].as_u64()?)))
        .collect();
    let (ic, is, down, up) = if spec.interactive {
        (
            Some(read_summary(&prefix, "interactive-client")?),
            Some(read_summary(&prefix, "interactive-server")?),
            read_arrivals(&csv_path(&prefix, "interactive-client"))?,
            read_arrivals(&csv_path(&prefix, "interactive-server"))?,
        )
    } else {
        (None, None, Vec::new(), Vec::new())
    };
    let call = if spec.call {
        Some(call::read_output(&prefix)?)
    } else {
        None
    };
    Ok(RunOutput {
        t0_mono_us: flows.t0_mono_us,
        t0_link_us: flows.t0_link_us,
        bulk_ticks,
        interactive_client: ic,
        interactive_server: is,
        down,
        up,
        call,
        tunnel_cpu_s: None,
        prefix,
    })
}

/// The packets of an interactive end's `--csv` file.
fn read_arrivals(path: &Path) -> Result<Vec<Arrival>, LabError> {
    let reading = || format!("reading {}", path.display());
    let mut rdr = csv::Reader::from_path(path).with_context(reading)?;
    rdr.deserialize()
        .collect::<Result<Vec<Arrival>, _>>()
        .with_context(reading)
}
