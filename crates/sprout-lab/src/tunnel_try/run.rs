//! One `sprout tunnel try`: the relay's namespace on a thread of its own, the emulator, the
//! tunnel's ends, the measurements, and everything stopped and removed, on a signal too.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use sprout_emu::{Emulator, EmulatorConfig};
use sprout_link::constant_rate_trace;
use sprout_os::netns::NetNamespace;
use sprout_os::signals::{self, SignalWatcher};
use sprout_secure::PrivateKey;
use sprout_tunnel::config::{ClientFlags, ServerFlags};

use super::leftovers::{self, RunDir, OWNER_ENV};
use super::measure::{self, PHASE_DONE, PHASE_LOADED};
use super::options::{TryLink, TryOptions};
use super::peers::Peer;
use super::report::{EndTotals, PingStats, TryReport};
use crate::error::{Context, LabError};
use crate::tunnel_args;

/// The relay's UDP port, on its end of the emulated link.
const RELAY_PORT: u16 = 9200;
/// Longest wait for the relay's "listening" line.
const LISTEN_WAIT: Duration = Duration::from_secs(10);
/// Longest wait for the client's "up" line (its handshake and the assignment).
const UP_WAIT: Duration = Duration::from_secs(20);
/// Pings alone before the download starts.
const ALONE: Duration = Duration::from_secs(1);
/// The download's client stops reading this long after the download's length at the latest
/// (what the server's socket buffer still holds drains meanwhile).
const DRAIN: Duration = Duration::from_secs(3);
/// Time a tunnel end gets to exit after SIGINT before it is killed.
const EXIT_WAIT: Duration = Duration::from_secs(5);
/// Seconds of the constant link's trace (looped).
const CONSTANT_TRACE_S: f64 = 10.0;

/// Runs `sprout tunnel try`, saying what it does through `progress` (a line at a time).
/// Stops early on SIGINT, SIGTERM or SIGHUP with [`LabError::Interrupted`], after removing
/// everything it made.
pub fn run(opts: &TryOptions, progress: &mut dyn FnMut(&str)) -> Result<TryReport, LabError> {
    if !sprout_os::caps::has_network_privileges() {
        return Err(LabError::Invalid(
            "sprout tunnel try needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) for its network namespaces and TUN devices: run it with sudo"
                .into(),
        ));
    }
    let signals = SignalWatcher::new().context("catching SIGINT and SIGTERM")?;
    for r in leftovers::sweep() {
        progress(&format!("removed {r}, left by an earlier run"));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<String>();
    let worker = {
        let (opts, stop) = (opts.clone(), stop.clone());
        thread::Builder::new()
            .name("sprout-try-relay".into())
            .spawn(move || in_relay_namespace(&opts, &stop, &tx))
            .context("starting the relay namespace's thread")?
    };
    let mut interrupted = None;
    loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(line) => progress(&line),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if let Some(sig) = signals.take() {
            if interrupted.is_none() {
                interrupted = Some(sig);
                stop.store(true, Ordering::Relaxed);
                progress(&format!(
                    "{}: stopping, removing what the run made",
                    signals::name(sig)
                ));
            }
        }
    }
    let result = worker
        .join()
        .unwrap_or_else(|_| Err(LabError::Failed("the run's thread panicked".into())));
    if let Some(sig) = interrupted {
        return Err(LabError::Interrupted {
            signal: sig,
            name: signals::name(sig),
        });
    }
    result
}

/// The run, on a thread moved into a new network namespace: the relay's. Everything made
/// here is dropped (stopped, removed) before it returns.
fn in_relay_namespace(
    opts: &TryOptions,
    stop: &Arc<AtomicBool>,
    tx: &Sender<String>,
) -> Result<TryReport, LabError> {
    let say = |s: String| {
        let _ = tx.send(s);
    };
    let _ns =
        NetNamespace::unshare_current_thread().context("making the relay's network namespace")?;
    sprout_os::tun::set_up("lo").context("setting up the relay namespace's loopback")?;
    // Dropped in the reverse order: the tunnel's ends, the emulator (the client's namespace
    // with it), the key folder.
    let dir = RunDir::create().context("making the folder of the run's keys")?;
    let emu = start_link(opts)?;
    say(format!(
        "link: {}; relay namespace {} <-> client namespace {}",
        opts.link_text(),
        emu.outside_addr(),
        emu.mobile_addr()
    ));
    let (mut relay, mut client, tunnel_addrs) = start_ends(opts, &emu, &dir, stop, &say)?;
    let measured = measure_through(opts, &emu, tunnel_addrs, stop, &say)?;
    let client_exit = client.stop(EXIT_WAIT);
    let relay_exit = relay.stop(EXIT_WAIT);
    drop((client, relay));
    emu.stop().context("stopping the link emulator")?;
    drop(dir);
    say(
        "stopped the tunnel's ends and the emulator; removed the namespaces, devices and keys"
            .into(),
    );
    let (ping_alone, ping_loaded, download_bytes, download_s) = measured;
    Ok(TryReport {
        link: opts.link_text(),
        link_rate_mbps: match opts.link {
            TryLink::Constant { rate_mbps } => Some(rate_mbps),
            TryLink::Trace { .. } => None,
        },
        link_addrs: tunnel_addrs.2,
        tunnel_addrs: (tunnel_addrs.0, tunnel_addrs.1),
        ping_alone,
        ping_loaded,
        download_bytes,
        download_s,
        relay: relay_exit.as_ref().map(EndTotals::from_exit),
        client: client_exit.as_ref().map(EndTotals::from_exit),
    })
}

/// The emulator between the relay's namespace (this thread's) and a new one, the client's.
fn start_link(opts: &TryOptions) -> Result<Emulator, LabError> {
    let (up, down) = match &opts.link {
        TryLink::Constant { rate_mbps } => {
            let t = constant_rate_trace(
                format!("constant-{rate_mbps}Mbit"),
                *rate_mbps,
                CONSTANT_TRACE_S,
            )?;
            let t = Arc::new(t);
            (t.clone(), t)
        }
        TryLink::Trace { up, down, .. } => (up.clone(), down.clone()),
    };
    let mut cfg = EmulatorConfig::new(up, down);
    let delay = sprout_core::time::Duration::from_micros((opts.delay_ms * 1000.0).round() as u64);
    cfg.uplink_link.propagation_delay_us = delay;
    cfg.downlink_link.propagation_delay_us = delay;
    Emulator::start(cfg).context("starting the link emulator")
}

/// The relay's and the client's tunnel addresses, and the relay's and the client's ends of
/// the emulated link.
type Addrs = (Ipv4Addr, Ipv4Addr, (Ipv4Addr, Ipv4Addr));

/// `sprout tunnel server` in this thread's namespace on the emulator's outside address, then
/// `sprout tunnel client` in the client's namespace, with keys made for the run (the relay
/// allows only the client's); returns once the client's device is up.
fn start_ends(
    opts: &TryOptions,
    emu: &Emulator,
    dir: &RunDir,
    stop: &AtomicBool,
    say: &dyn Fn(String),
) -> Result<(Peer, Peer, Addrs), LabError> {
    let relay_key = PrivateKey::generate();
    let client_key = PrivateKey::generate();
    let relay_key_file = dir.path().join("relay.key");
    let client_key_file = dir.path().join("client.key");
    let allowed = dir.path().join("clients.txt");
    relay_key.write_file(&relay_key_file)?;
    client_key.write_file(&client_key_file)?;
    std::fs::write(
        &allowed,
        format!("{}\n", client_key.public_key().to_base64()),
    )
    .with_context(|| format!("writing {}", allowed.display()))?;
    let listen = SocketAddr::new(IpAddr::V4(emu.outside_addr()), RELAY_PORT);
    let server = ServerFlags {
        key: Some(relay_key_file),
        allowed_clients: Some(allowed),
        listen: Some(listen.to_string()),
        address6: Some("none".into()),
        json: true,
        probe: opts.probe,
        confidence: opts.confidence,
        ..ServerFlags::default()
    };
    let pid = std::process::id();
    let mut cmd = Command::new(&opts.sprout_exe);
    cmd.args(tunnel_args::server_args(&server))
        .env(OWNER_ENV, pid.to_string());
    sprout_os::child::isolate_on_exec(&mut cmd, pid, false);
    let mut relay = Peer::start("relay", &mut cmd, |c| c.spawn())?;
    let l = relay.wait_event("listening", LISTEN_WAIT, stop)?;
    say(format!(
        "relay: sprout tunnel server (pid {}) listening on {listen}, tunnel address {}",
        relay.pid(),
        l["v4"].as_str().unwrap_or("?")
    ));
    let client_flags = ClientFlags {
        server: Some(listen.to_string()),
        server_key: Some(relay_key.public_key().to_base64()),
        key: Some(client_key_file),
        json: true,
        probe: opts.probe,
        confidence: opts.confidence,
        ..ClientFlags::default()
    };
    let mut cmd = Command::new(&opts.sprout_exe);
    cmd.args(tunnel_args::client_args(&client_flags))
        .env(OWNER_ENV, pid.to_string());
    let mut client = Peer::start("client", &mut cmd, |c| emu.spawn_in_namespace(c))?;
    let up = client.wait_event("up", UP_WAIT, stop)?;
    let addr = |v: &Value| {
        v.as_str()
            .and_then(|s| s.split('/').next()?.parse::<Ipv4Addr>().ok())
    };
    let (Some(relay_v4), Some(client_v4)) = (addr(&up["server_v4"]), addr(&up["v4"])) else {
        return Err(LabError::Failed(format!(
            "the tunnel's client came up without IPv4 addresses: {up}"
        )));
    };
    say(format!(
        "client: sprout tunnel client (pid {}) up on {}: {}, MTU {}",
        client.pid(),
        up["device"].as_str().unwrap_or("?"),
        up["v4"].as_str().unwrap_or("?"),
        up["mtu"]
    ));
    let link = (emu.outside_addr(), emu.mobile_addr());
    Ok((relay, client, (relay_v4, client_v4, link)))
}

/// Sleeps `d` unless `stop` is set first; whether it slept the whole time.
fn sleep_unless(stop: &AtomicBool, d: Duration) -> bool {
    let until = Instant::now() + d;
    while Instant::now() < until {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        thread::sleep(Duration::from_millis(20));
    }
    !stop.load(Ordering::Relaxed)
}

/// What [`measure_through`] measured: pings alone, pings beside the download, the download's
/// bytes and seconds.
type Measured = (PingStats, PingStats, u64, f64);

/// Pings from the client's namespace to the relay's tunnel address, alone for [`ALONE`] and
/// then beside a download from the relay for the run's duration.
fn measure_through(
    opts: &TryOptions,
    emu: &Emulator,
    (relay_v4, _, _): Addrs,
    stop: &Arc<AtomicBool>,
    say: &dyn Fn(String),
) -> Result<Measured, LabError> {
    let stopped = || LabError::Failed("stopped".into());
    let phase = Arc::new(AtomicU8::new(measure::PHASE_ALONE));
    let pinger = {
        let (phase, stop) = (phase.clone(), stop.clone());
        emu.run_on_namespace_thread(move || measure::ping(relay_v4, &phase, &stop))
            .context("starting the pings in the client's namespace")?
    };
    say(format!(
        "through the tunnel: pinging {relay_v4} every {} ms, alone for {} s, then beside a {} s TCP download from {relay_v4}",
        measure::PING_INTERVAL.as_millis(),
        ALONE.as_secs(),
        opts.duration_s
    ));
    let result = (|| {
        if !sleep_unless(stop, ALONE) {
            return Err(stopped());
        }
        let (addr, server) = measure::serve_download(relay_v4, opts.duration_s, stop.clone())
            .context("listening for the download")?;
        phase.store(PHASE_LOADED, Ordering::Relaxed);
        let deadline = Instant::now() + Duration::from_secs_f64(opts.duration_s) + DRAIN;
        let client = {
            let stop = stop.clone();
            emu.run_on_namespace_thread(move || measure::download(addr, deadline, &stop))
                .context("starting the download in the client's namespace")?
        };
        let got = client
            .join()
            .map_err(|_| LabError::Failed("the download panicked".into()))?;
        let _ = server.join();
        got.context("downloading through the tunnel")
    })();
    phase.store(PHASE_DONE, Ordering::Relaxed);
    let pings = pinger
        .join()
        .map_err(|_| LabError::Failed("the pings panicked".into()))?;
    let (bytes, secs) = result?;
    let (alone, loaded) = pings.context("pinging through the tunnel")?;
    if stop.load(Ordering::Relaxed) {
        return Err(stopped());
    }
    Ok((alone, loaded, bytes, secs))
}
