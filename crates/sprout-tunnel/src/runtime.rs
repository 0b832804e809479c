//! The runtime of both tunnel ends: the TUN device, one UDP socket and the sans-IO engine
//! ([`TunnelServer`] or [`TunnelClient`]) on one thread, with status lines.
//!
//! Each end is one event loop (`mio`, edge-triggered) over the TUN descriptor, a non-blocking
//! UDP socket (4 MiB send and receive buffers asked of the kernel) and the engine's
//! `poll_timeout`:
//!
//! - packets read from the TUN device in batches of up to [`BATCH`] → `handle_tun`;
//! - datagrams received in batches of up to [`BATCH`] → `handle_udp`;
//! - `handle_timeout` at the engine's deadlines;
//! - `poll_tun` drained → written to the TUN device;
//! - `poll_udp` drained → `send_to`; on `WouldBlock` the datagram is kept and sent first when
//!   the socket becomes writable again.
//!
//! A server listening on an unspecified address (`0.0.0.0`, `[::]`) answers each client from
//! the local address that client wrote to (`IP_PKTINFO`/`IPV6_PKTINFO`, as WireGuard does), so
//! a relay with several addresses works whichever one clients use.
//!
//! Time is `CLOCK_MONOTONIC` in microseconds since the end started.
//!
//! The server makes its device at the start from its settings (its own tunnel addresses and
//! TUN MTU). The client makes its device only when the server's assignment arrives, from the
//! assignment (its addresses, the MTU), then its routes ([`crate::routes`]).
//!
//! Output, one line each, on standard output: text, or with `--json` one JSON object per line
//! (`event`: `listening`, `client_up`, `client_down`, `client_refused` on the server;
//! `connecting`, `established`, `up` on the client; `status` every status interval and a
//! final `exit` with the totals on both). Both ends stop with exit status 0 on `SIGINT`,
//! `SIGTERM`, `SIGHUP` or at `--duration`, after removing everything they made.

use std::collections::HashMap;
use std::io::{self, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ipnet::{Ipv4Net, Ipv6Net};
use mio::net::UdpSocket;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token, Waker};
use serde_json::{json, Value};
use socket2::{Domain, Protocol, Socket, Type};
use sprout_core::time::Instant;
use sprout_os::clock::MonotonicClock;

use crate::cleanup::Undo;
use crate::client::{ClientTunnelEvent, TunnelClient};
use crate::config::{TunnelClientConfig, TunnelServerConfig};
use crate::control::{Assignment, MIN_TUN_MTU_V6};
use crate::device::{self, Device, DeviceSpec, SetupError};
use crate::packet::FlowKey;
use crate::routes::{self, AppliedRoutes};
use crate::server::{ServerTunnelEvent, TunnelServer};
use crate::status::{SessionStatus, TunnelDrops, TunnelStatus};

/// Packets or datagrams taken from one source before the others get a turn.
pub const BATCH: usize = 64;
/// Socket buffer sizes asked of the kernel (bytes).
pub const SOCKET_BUFFER_BYTES: usize = 4 << 20;
/// A client with no assignment this long after it started gives up.
pub const ASSIGNMENT_TIMEOUT: sprout_core::Duration = sprout_core::Duration::from_secs(15);
/// Flows shown in a text status line.
pub const TEXT_FLOWS: usize = 3;

const UDP: Token = Token(0);
const TUN: Token = Token(1);
const WAKE: Token = Token(2);

/// Stops a running end from another thread (or a signal-handling thread).
#[derive(Clone, Debug)]
pub struct StopHandle {
    flag: Arc<AtomicBool>,
    signal: Arc<AtomicI32>,
    waker: Arc<Waker>,
}

impl StopHandle {
    /// Asks the end to stop (it removes what it made and returns).
    pub fn stop(&self) {
        self.flag.store(true, Ordering::SeqCst);
        let _ = self.waker.wake();
    }

    /// Asks the end to stop because of signal `sig` (named in the exit line).
    pub fn stop_for_signal(&self, sig: i32) {
        self.signal.store(sig, Ordering::SeqCst);
        self.stop();
    }
}

/// Catches `SIGINT`, `SIGTERM` and `SIGHUP` from now on, each stopping `handle`'s end (a
/// thread waits for them).
pub fn stop_on_signals(handle: StopHandle) -> io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new()
        .name("sprout-tunnel-signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                handle.stop_for_signal(sig);
            }
        })?;
    Ok(())
}

fn signal_name(sig: i32) -> String {
    sprout_os::signals::name(sig)
}

/// Prints one line on standard output, ignoring a closed pipe.
fn out(line: &str) {
    let stdout = io::stdout();
    let mut lock = stdout.lock();
    let _ = writeln!(lock, "{line}");
    let _ = lock.flush();
}

fn out_json(v: Value) {
    out(&v.to_string());
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// A UDP socket: non-blocking, 4 MiB buffers, bound to `local` (dual-stack when `[::]`).
fn udp_socket(local: SocketAddr) -> io::Result<(std::net::UdpSocket, (usize, usize))> {
    let sock = Socket::new(Domain::for_address(local), Type::DGRAM, Some(Protocol::UDP))?;
    if local.is_ipv6() {
        let _ = sock.set_only_v6(false);
    }
    let _ = sock.set_recv_buffer_size(SOCKET_BUFFER_BYTES);
    let _ = sock.set_send_buffer_size(SOCKET_BUFFER_BYTES);
    let granted = (
        sock.recv_buffer_size().unwrap_or(0),
        sock.send_buffer_size().unwrap_or(0),
    );
    sock.set_nonblocking(true)?;
    sock.bind(&local.into())?;
    Ok((sock.into(), granted))
}

fn bind_error(what: &str, addr: SocketAddr, e: io::Error) -> SetupError {
    let hint = match e.kind() {
        io::ErrorKind::AddrInUse => {
            " (address in use: another server on that port? choose another --listen)"
        }
        io::ErrorKind::AddrNotAvailable => " (no interface of this host has that address)",
        _ => "",
    };
    SetupError(format!("cannot {what} {addr}: {e}{hint}"))
}

/// Counters of the runtime itself.
#[derive(Clone, Copy, Debug, Default)]
struct IoCounters {
    udp_sent: u64,
    udp_received: u64,
    udp_send_errors: u64,
    udp_recv_errors: u64,
    tun_read: u64,
    tun_written: u64,
    tun_write_errors: u64,
    /// Packets for the TUN device before it existed (client).
    tun_no_device: u64,
}

/// What the loop drives: the two engines behind one interface.
trait End {
    fn handle_udp(&mut self, now: Instant, from: SocketAddr, d: &[u8]);
    fn handle_tun(&mut self, now: Instant, p: &[u8]);
    fn poll_udp(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<SocketAddr>;
    fn poll_tun(&mut self) -> Option<Vec<u8>>;
    fn handle_timeout(&mut self, now: Instant);
    fn poll_timeout(&mut self) -> Option<Instant>;
    fn status(&mut self, now: Instant) -> TunnelStatus;
}

impl End for TunnelServer {
    fn handle_udp(&mut self, now: Instant, from: SocketAddr, d: &[u8]) {
        TunnelServer::handle_udp(self, now, from, d)
    }
    fn handle_tun(&mut self, now: Instant, p: &[u8]) {
        TunnelServer::handle_tun(self, now, p)
    }
    fn poll_udp(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<SocketAddr> {
        TunnelServer::poll_udp(self, now, buf)
    }
    fn poll_tun(&mut self) -> Option<Vec<u8>> {
        TunnelServer::poll_tun(self)
    }
    fn handle_timeout(&mut self, now: Instant) {
        TunnelServer::handle_timeout(self, now)
    }
    fn poll_timeout(&mut self) -> Option<Instant> {
        TunnelServer::poll_timeout(self)
    }
    fn status(&mut self, now: Instant) -> TunnelStatus {
        TunnelServer::status(self, now)
    }
}

/// The client engine with the server's address (its datagrams all go there).
struct ClientEnd {
    engine: TunnelClient,
    server: SocketAddr,
}

impl End for ClientEnd {
    fn handle_udp(&mut self, now: Instant, _from: SocketAddr, d: &[u8]) {
        self.engine.handle_udp(now, d)
    }
    fn handle_tun(&mut self, now: Instant, p: &[u8]) {
        self.engine.handle_tun(now, p)
    }
    fn poll_udp(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<SocketAddr> {
        self.engine.poll_udp(now, buf).then_some(self.server)
    }
    fn poll_tun(&mut self) -> Option<Vec<u8>> {
        self.engine.poll_tun()
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.engine.handle_timeout(now)
    }
    fn poll_timeout(&mut self) -> Option<Instant> {
        self.engine.poll_timeout()
    }
    fn status(&mut self, now: Instant) -> TunnelStatus {
        self.engine.status(now)
    }
}

/// Sockets, device, poller.
struct Io {
    poll: Poll,
    udp: UdpSocket,
    /// The client's socket is connected to the server (`send`, `recv`).
    connected: bool,
    /// A server socket bound to an unspecified address: the local address each peer's last
    /// datagram arrived at, so that replies leave from it (see [`sticky`]).
    sticky: Option<HashMap<SocketAddr, IpAddr>>,
    device: Option<Device>,
    udp_readable: bool,
    tun_readable: bool,
    udp_blocked: bool,
    pending: Option<(Vec<u8>, SocketAddr)>,
    read_buf: Vec<u8>,
    send_buf: Vec<u8>,
    counters: IoCounters,
}

impl Io {
    fn new(udp: std::net::UdpSocket, connected: bool) -> Result<(Io, Arc<Waker>), SetupError> {
        let poll = Poll::new().map_err(|e| SetupError(format!("cannot create a poller: {e}")))?;
        let mut udp = UdpSocket::from_std(udp);
        poll.registry()
            .register(&mut udp, UDP, Interest::READABLE | Interest::WRITABLE)
            .map_err(|e| SetupError(format!("cannot poll the socket: {e}")))?;
        let waker = Arc::new(
            Waker::new(poll.registry(), WAKE)
                .map_err(|e| SetupError(format!("cannot create a waker: {e}")))?,
        );
        Ok((
            Io {
                poll,
                udp,
                connected,
                sticky: None,
                device: None,
                udp_readable: true,
                tun_readable: false,
                udp_blocked: false,
                pending: None,
                read_buf: vec![0; 65_536],
                send_buf: Vec::with_capacity(65_536),
                counters: IoCounters::default(),
            },
            waker,
        ))
    }

    fn attach(&mut self, device: Device) -> Result<(), SetupError> {
        self.detach();
        let fd = device.raw_fd();
        self.poll
            .registry()
            .register(&mut SourceFd(&fd), TUN, Interest::READABLE)
            .map_err(|e| SetupError(format!("cannot poll the TUN device: {e}")))?;
        self.device = Some(device);
        self.tun_readable = true;
        Ok(())
    }

    /// Removes the device (the kernel deletes it with its addresses and routes).
    fn detach(&mut self) {
        if let Some(d) = self.device.take() {
            let fd = d.raw_fd();
            let _ = self.poll.registry().deregister(&mut SourceFd(&fd));
        }
        self.tun_readable = false;
    }

    /// Waits for readiness at most `timeout`.
    fn wait(
        &mut self,
        events: &mut Events,
        timeout: sprout_core::Duration,
    ) -> Result<(), SetupError> {
        let timeout = Duration::from(timeout);
        match self.poll.poll(events, Some(timeout)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(()),
            Err(e) => return Err(SetupError(format!("poll: {e}"))),
        }
        for ev in events.iter() {
            match ev.token() {
                UDP => {
                    if ev.is_readable() || ev.is_error() {
                        self.udp_readable = true;
                    }
                    if ev.is_writable() || ev.is_error() {
                        self.udp_blocked = false;
                    }
                }
                TUN => self.tun_readable = true,
                _ => {}
            }
        }
        Ok(())
    }

    fn read_tun<E: End>(&mut self, end: &mut E, now: Instant) -> Result<(), SetupError> {
        let Some(dev) = &self.device else {
            self.tun_readable = false;
            return Ok(());
        };
        for _ in 0..BATCH {
            match dev.read(&mut self.read_buf) {
                Ok(n) => {
                    self.counters.tun_read += 1;
                    end.handle_tun(now, &self.read_buf[..n]);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.tun_readable = false;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(SetupError(format!(
                        "reading the TUN device {}: {e}",
                        dev.name()
                    )))
                }
            }
        }
        Ok(())
    }

    fn read_udp<E: End>(&mut self, end: &mut E, now: Instant) {
        for _ in 0..BATCH {
            let r = if self.connected {
                self.udp.recv(&mut self.read_buf).and_then(|n| {
                    let peer = self.udp.peer_addr()?;
                    Ok((n, peer))
                })
            } else if let Some(map) = self.sticky.as_mut() {
                sticky::recv(&self.udp, &mut self.read_buf).map(|(n, from, local)| {
                    if let Some(local) = local {
                        if map.len() >= sticky::MAX_PEERS && !map.contains_key(&from) {
                            map.clear();
                        }
                        map.insert(from, local);
                    }
                    (n, from)
                })
            } else {
                self.udp.recv_from(&mut self.read_buf)
            };
            match r {
                Ok((n, from)) => {
                    self.counters.udp_received += 1;
                    end.handle_udp(now, from, &self.read_buf[..n]);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.udp_readable = false;
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // ICMP errors reported on the socket (port unreachable, ...): counted.
                Err(_) => self.counters.udp_recv_errors += 1,
            }
        }
    }

    fn send(&mut self, d: &[u8], to: SocketAddr) -> io::Result<()> {
        if self.connected {
            return self.udp.send(d).map(|_| ());
        }
        if let Some(local) = self.sticky.as_ref().and_then(|m| m.get(&to).copied()) {
            match sticky::send(&self.udp, d, to, local) {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Err(e),
                // The address is gone (or the kernel refuses it): let routing choose.
                Err(_) => {
                    if let Some(m) = self.sticky.as_mut() {
                        m.remove(&to);
                    }
                }
            }
        }
        self.udp.send_to(d, to).map(|_| ())
    }

    /// Sends what is pending, then what the engine has, until it has nothing or the socket
    /// would block.
    fn drain_udp<E: End>(&mut self, end: &mut E, now: Instant) {
        if self.udp_blocked {
            return;
        }
        if let Some((d, to)) = self.pending.take() {
            match self.send(&d, to) {
                Ok(()) => self.counters.udp_sent += 1,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.pending = Some((d, to));
                    self.udp_blocked = true;
                    return;
                }
                Err(_) => self.counters.udp_send_errors += 1,
            }
        }
        loop {
            let mut buf = std::mem::take(&mut self.send_buf);
            buf.clear();
            let Some(to) = end.poll_udp(now, &mut buf) else {
                self.send_buf = buf;
                return;
            };
            match self.send(&buf, to) {
                Ok(()) => self.counters.udp_sent += 1,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.pending = Some((buf, to));
                    self.udp_blocked = true;
                    return;
                }
                Err(_) => self.counters.udp_send_errors += 1,
            }
            self.send_buf = buf;
        }
    }

    fn drain_tun<E: End>(&mut self, end: &mut E) {
        while let Some(p) = end.poll_tun() {
            match &self.device {
                Some(dev) => match dev.write(&p) {
                    Ok(_) => self.counters.tun_written += 1,
                    Err(_) => self.counters.tun_write_errors += 1,
                },
                None => self.counters.tun_no_device += 1,
            }
        }
    }
}

/// One session's counters at the previous status line.
#[derive(Clone, Copy, Default)]
struct Prev {
    sent_bytes: u64,
    received_bytes: u64,
    sent_packets: u64,
    received_packets: u64,
}

/// Turns successive [`TunnelStatus`] snapshots into status lines (rates from deltas).
struct StatusPrinter {
    json: bool,
    server: bool,
    last: Instant,
    sessions: HashMap<u32, Prev>,
    /// (session, flow) → (sent bytes, last seen µs).
    flows: HashMap<(u32, FlowKey), (u64, Instant)>,
    /// Totals of sessions that have ended.
    closed: Prev,
    latest: Option<TunnelStatus>,
}

/// A flow's line in the status output.
struct FlowRate {
    session: u32,
    flow: FlowKey,
    queued_bytes: usize,
    kbps: f64,
    dropped: u64,
}

impl StatusPrinter {
    fn new(json: bool, server: bool) -> StatusPrinter {
        StatusPrinter {
            json,
            server,
            last: Instant::ZERO,
            sessions: HashMap::new(),
            flows: HashMap::new(),
            closed: Prev::default(),
            latest: None,
        }
    }

    fn print(&mut self, s: TunnelStatus, io: &IoCounters) {
        let dt_s = (s.now_us - self.last).as_secs_f64().max(1e-3);
        let mut t = LineTotals::default();
        let mut sessions_json = Vec::new();
        let mut rates: Vec<FlowRate> = Vec::new();
        let mut seen = HashMap::new();
        for ss in &s.sessions {
            sessions_json.push(self.session_json(ss, s.now_us, dt_s, &mut t, &mut rates));
            seen.insert(
                ss.id,
                Prev {
                    sent_bytes: ss.sent_bytes,
                    received_bytes: ss.received_bytes,
                    sent_packets: ss.sent_packets,
                    received_packets: ss.received_packets,
                },
            );
        }
        self.replace_sessions(seen);
        // Flows not seen for a minute are forgotten.
        let now = s.now_us;
        self.flows
            .retain(|_, &mut (_, at)| now - at < sprout_core::Duration::from_secs(60));
        rates.sort_by(|a, b| {
            b.kbps
                .total_cmp(&a.kbps)
                .then(b.queued_bytes.cmp(&a.queued_bytes))
        });
        // Up = mobile host to relay: the client's sent, the server's received.
        let (up, down) = if self.server {
            (t.received_bytes, t.sent_bytes)
        } else {
            (t.sent_bytes, t.received_bytes)
        };
        let line = LineRates { up, down, dt_s };
        if self.json {
            out_json(status_json(&s, io, &t, &line, sessions_json));
        } else {
            out(&self.text_line(&s, &t, &rates, &line));
        }
        self.last = s.now_us;
        self.latest = Some(s);
    }

    /// One session's part of a status line (JSON), adding its deltas to `t` and its flows'
    /// rates to `rates`, and remembering its flows' byte counts for the next line.
    fn session_json(
        &mut self,
        ss: &SessionStatus,
        now: Instant,
        dt_s: f64,
        t: &mut LineTotals,
        rates: &mut Vec<FlowRate>,
    ) -> Value {
        let kbps = |bytes: u64| kbps_over(bytes, dt_s);
        let prev = self.sessions.get(&ss.id).copied().unwrap_or_default();
        let ds = ss.sent_bytes.saturating_sub(prev.sent_bytes);
        let dr = ss.received_bytes.saturating_sub(prev.received_bytes);
        t.sent_bytes += ds;
        t.received_bytes += dr;
        t.queued_bytes += ss.queue.queued_bytes;
        t.cap_bytes += ss.queue.cap_bytes;
        let f = ss.forecast.last().copied().unwrap_or(0) as u64;
        t.forecast_packets += f;
        t.over_cap += ss.queue.drops.over_cap;
        t.too_many_flows += ss.queue.drops.too_many_flows;
        let mut flows_json = Vec::new();
        for fl in &ss.flows {
            let key = (ss.id, fl.flow);
            let before = self.flows.get(&key).map(|&(b, _)| b).unwrap_or(0);
            let rate = kbps(fl.sent_bytes.saturating_sub(before));
            if self.flows.len() < 65_536 || self.flows.contains_key(&key) {
                self.flows.insert(key, (fl.sent_bytes, now));
            }
            flows_json.push(json!({
                "flow": fl.flow.to_string(),
                "queued_bytes": fl.queued_bytes,
                "queued_packets": fl.queued_packets,
                "sent_kbps": rate,
                "sent_bytes": fl.sent_bytes,
                "dropped_packets": fl.dropped_packets,
            }));
            rates.push(FlowRate {
                session: ss.id,
                flow: fl.flow,
                queued_bytes: fl.queued_bytes,
                kbps: rate,
                dropped: fl.dropped_packets,
            });
        }
        let a = ss.assignment;
        json!({
            "id": ss.id,
            "peer": ss.peer,
            "addr": ss.addr,
            "v4": a.and_then(|a| a.v4).map(|v| v.client.to_string()),
            "v6": a.and_then(|a| a.v6).map(|v| v.client.to_string()),
            "queued_bytes": ss.queue.queued_bytes,
            "queued_packets": ss.queue.queued_packets,
            "cap_bytes": ss.queue.cap_bytes,
            "active_flows": ss.queue.active_flows,
            "tracked_flows": ss.queue.tracked_flows,
            "queue_drops": ss.queue.drops,
            "forecast": ss.forecast,
            "forecast_packets": f,
            "window_bytes": ss.window_bytes,
            "incoming_rate_pps": round1(ss.incoming_rate_pps),
            "sent_kbps": kbps(ds),
            "received_kbps": kbps(dr),
            "sent_bytes": ss.sent_bytes,
            "received_bytes": ss.received_bytes,
            "sent_packets": ss.sent_packets,
            "received_packets": ss.received_packets,
            "flows": flows_json,
        })
    }

    /// Makes `seen` the current sessions; the totals of sessions gone since the last line are
    /// kept for the exit line.
    fn replace_sessions(&mut self, seen: HashMap<u32, Prev>) {
        for (id, p) in &self.sessions {
            if !seen.contains_key(id) {
                self.closed.sent_bytes += p.sent_bytes;
                self.closed.received_bytes += p.received_bytes;
                self.closed.sent_packets += p.sent_packets;
                self.closed.received_packets += p.received_packets;
            }
        }
        self.sessions = seen;
    }

    /// The human-readable status line.
    fn text_line(
        &self,
        s: &TunnelStatus,
        t: &LineTotals,
        rates: &[FlowRate],
        line: &LineRates,
    ) -> String {
        let kbps = |bytes: u64| kbps_over(bytes, line.dt_s);
        let mut drops: Vec<String> = drop_names(&s.drops)
            .into_iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        for (k, v) in [
            ("over_cap", t.over_cap),
            ("too_many_flows", t.too_many_flows),
        ] {
            if v > 0 {
                drops.push(format!("{k} {v}"));
            }
        }
        for (k, v) in &s.secure_drops {
            if *v > 0 {
                drops.push(format!("{k} {v}"));
            }
        }
        let top: Vec<String> = rates
            .iter()
            .filter(|r| r.kbps > 0.0 || r.queued_bytes > 0)
            .take(TEXT_FLOWS)
            .map(|r| self.flow_text(r))
            .collect();
        let clients = if self.server {
            format!("clients {} | ", s.sessions.len())
        } else if s.reconnecting {
            "reconnecting | ".to_string()
        } else {
            String::new()
        };
        let elapsed = round1(s.now_us.as_secs_f64());
        format!(
            "[{elapsed:>7.1} s] {clients}up {:.0} kbit/s, down {:.0} kbit/s | queue {}/{} B | forecast {} pkt | drops: {} | top: {}",
            kbps(line.up),
            kbps(line.down),
            t.queued_bytes,
            t.cap_bytes,
            t.forecast_packets,
            if drops.is_empty() { "none".into() } else { drops.join(", ") },
            if top.is_empty() { "-".into() } else { top.join("; ") }
        )
    }

    /// One flow of the text line's "top" list.
    fn flow_text(&self, r: &FlowRate) -> String {
        let who = if self.server {
            format!("{:08x} ", r.session)
        } else {
            String::new()
        };
        let dropped = if r.dropped > 0 {
            format!(", {} dropped", r.dropped)
        } else {
            String::new()
        };
        format!(
            "{who}{} {:.0} kbit/s ({} B queued{dropped})",
            r.flow, r.kbps, r.queued_bytes
        )
    }

    /// Totals over all sessions, ended and current.
    fn totals(&self) -> Prev {
        let mut t = self.closed;
        for p in self.sessions.values() {
            t.sent_bytes += p.sent_bytes;
            t.received_bytes += p.received_bytes;
            t.sent_packets += p.sent_packets;
            t.received_packets += p.received_packets;
        }
        t
    }
}

/// Sums over the sessions of one status line.
#[derive(Default)]
struct LineTotals {
    /// Bytes sent since the last line.
    sent_bytes: u64,
    /// Bytes received since the last line.
    received_bytes: u64,
    queued_bytes: usize,
    cap_bytes: usize,
    forecast_packets: u64,
    over_cap: u64,
    too_many_flows: u64,
}

/// The bytes up and down since the last status line, and the time since it (s).
struct LineRates {
    up: u64,
    down: u64,
    dt_s: f64,
}

/// `bytes` over `dt_s` seconds, in kbit/s to one decimal.
fn kbps_over(bytes: u64, dt_s: f64) -> f64 {
    round1(bytes as f64 * 8.0 / 1000.0 / dt_s)
}

/// The JSON status line.
fn status_json(
    s: &TunnelStatus,
    io: &IoCounters,
    t: &LineTotals,
    line: &LineRates,
    sessions_json: Vec<Value>,
) -> Value {
    let kbps = |bytes: u64| kbps_over(bytes, line.dt_s);
    json!({
        "event": "status",
        "elapsed_s": round1(s.now_us.as_secs_f64()),
        "clients": s.sessions.len(),
        "reconnecting": s.reconnecting,
        "reconnections": s.reconnections,
        "up_kbps": kbps(line.up),
        "down_kbps": kbps(line.down),
        "queued_bytes": t.queued_bytes,
        "cap_bytes": t.cap_bytes,
        "forecast_packets": t.forecast_packets,
        "drops": s.drops,
        "queue_drops": {"over_cap": t.over_cap, "too_many_flows": t.too_many_flows},
        "secure_drops": s.secure_drops,
        "tun_read_packets": s.tun_read_packets,
        "tun_write_packets": s.tun_write_packets,
        "udp_sent": io.udp_sent,
        "udp_received": io.udp_received,
        "udp_send_errors": io.udp_send_errors,
        "sessions": sessions_json,
    })
}

/// The non-zero tunnel drop counters by name.
fn drop_names(d: &TunnelDrops) -> Vec<(String, u64)> {
    match serde_json::to_value(d) {
        Ok(Value::Object(m)) => m
            .into_iter()
            .filter_map(|(k, v)| v.as_u64().filter(|&n| n > 0).map(|n| (k, n)))
            .collect(),
        _ => Vec::new(),
    }
}

/// Why an end stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExitReason {
    /// A signal (`SIGINT`, ...) or [`StopHandle::stop`].
    Stopped(String),
    /// `--duration` passed.
    Duration,
}

impl ExitReason {
    fn text(&self) -> String {
        match self {
            ExitReason::Stopped(s) => s.clone(),
            ExitReason::Duration => "duration".into(),
        }
    }
}

/// What an end's loop checks besides the engine.
struct Control {
    stop: Arc<AtomicBool>,
    signal: Arc<AtomicI32>,
    /// The protocol's clock (time 0 when the end started).
    clock: MonotonicClock,
    /// When `--duration` ends the run.
    end: Option<Instant>,
    status_interval: sprout_core::Duration,
}

impl Control {
    fn stopped(&self) -> Option<ExitReason> {
        if self.stop.load(Ordering::SeqCst) {
            let sig = self.signal.load(Ordering::SeqCst);
            return Some(ExitReason::Stopped(if sig == 0 {
                "stopped".into()
            } else {
                signal_name(sig)
            }));
        }
        None
    }
}

/// Runs the loop until stopped, `--duration`, or an error; `hook` runs after the inputs of
/// each round (events, device set-up).
fn run_loop<E: End>(
    end: &mut E,
    io: &mut Io,
    ctl: &Control,
    printer: &mut StatusPrinter,
    mut hook: impl FnMut(&mut E, &mut Io, Instant) -> Result<(), SetupError>,
) -> Result<ExitReason, SetupError> {
    let mut events = Events::with_capacity(64);
    let mut next_status = Instant::ZERO + ctl.status_interval;
    loop {
        if let Some(r) = ctl.stopped() {
            return Ok(r);
        }
        let now = ctl.clock.now();
        if ctl.end.is_some_and(|e| now >= e) {
            return Ok(ExitReason::Duration);
        }
        let mut wake = next_status;
        if let Some(t) = end.poll_timeout() {
            wake = wake.min(t);
        }
        if let Some(e) = ctl.end {
            wake = wake.min(e);
        }
        let timeout = if io.udp_readable || io.tun_readable {
            sprout_core::Duration::ZERO
        } else {
            wake - now
        };
        io.wait(&mut events, timeout)?;
        let now = ctl.clock.now();
        if io.tun_readable {
            io.read_tun(end, now)?;
        }
        if io.udp_readable {
            io.read_udp(end, now);
        }
        if end.poll_timeout().is_some_and(|t| t <= now) {
            end.handle_timeout(now);
        }
        hook(end, io, now)?;
        io.drain_tun(end);
        io.drain_udp(end, now);
        if now >= next_status {
            let s = end.status(now);
            printer.print(s, &io.counters);
            next_status = (next_status + ctl.status_interval)
                .max(now + sprout_core::Duration::from_micros(1));
        }
    }
}

fn exit_line(
    printer: &StatusPrinter,
    io: &IoCounters,
    reason: &ExitReason,
    now: Instant,
    extra: Value,
) {
    let t = printer.totals();
    let (drops, secure) = match &printer.latest {
        Some(s) => (
            serde_json::to_value(s.drops).unwrap_or(Value::Null),
            serde_json::to_value(&s.secure_drops).unwrap_or(Value::Null),
        ),
        None => (Value::Null, Value::Null),
    };
    if printer.json {
        let mut v = json!({
            "event": "exit",
            "reason": reason.text(),
            "elapsed_s": round1(now.as_secs_f64()),
            "sent_bytes": t.sent_bytes,
            "received_bytes": t.received_bytes,
            "sent_packets": t.sent_packets,
            "received_packets": t.received_packets,
            "udp_sent": io.udp_sent,
            "udp_received": io.udp_received,
            "udp_send_errors": io.udp_send_errors,
            "udp_recv_errors": io.udp_recv_errors,
            "tun_read_packets": io.tun_read,
            "tun_write_packets": io.tun_written,
            "tun_write_errors": io.tun_write_errors,
            "drops": drops,
            "secure_drops": secure,
        });
        if let (Value::Object(m), Value::Object(e)) = (&mut v, extra) {
            m.extend(e);
        }
        out_json(v);
    } else {
        out(&format!(
            "exit ({}) after {:.1} s: sent {} packets ({} bytes), received {} packets ({} bytes) through the tunnel; {} datagrams sent, {} received, {} send errors; removed the device{}",
            reason.text(),
            now.as_secs_f64(),
            t.sent_packets,
            t.sent_bytes,
            t.received_packets,
            t.received_bytes,
            io.udp_sent,
            io.udp_received,
            io.udp_send_errors,
            extra
                .get("removed")
                .and_then(Value::as_str)
                .map(|s| format!(" and {s}"))
                .unwrap_or_default()
        ));
    }
}

/// A running server or client, made by [`Server::new`]/[`Client::new`] and run by their `run`.
/// Exposes the stop handle before running.
pub struct Server {
    cfg: TunnelServerConfig,
    engine: TunnelServer,
    io: Io,
    ctl: Control,
    waker: Arc<Waker>,
    local: SocketAddr,
    notes: Vec<String>,
}

impl Server {
    /// Checks privileges, makes the engine, binds the socket, creates and configures the
    /// device. Nothing is left if it fails.
    pub fn new(mut cfg: TunnelServerConfig) -> Result<Server, SetupError> {
        device::check_can_create()?;
        let mut notes = Vec::new();
        if cfg.settings.v6.is_some() && !device::host_ipv6_enabled() {
            notes.push("IPv6 is disabled on this host: the tunnel carries IPv4 only".to_string());
            cfg.settings.v6 = None;
            for p in cfg.settings.pinned.values_mut() {
                p.v6 = None;
            }
            if cfg.settings.v4.is_none() {
                return Err(SetupError::new(
                    "IPv6 is disabled on this host and --address is none: nothing to carry",
                ));
            }
        }
        let mut engine =
            TunnelServer::new(cfg.settings.clone()).map_err(|e| SetupError(e.to_string()))?;
        let (sock, _) =
            udp_socket(cfg.run.listen).map_err(|e| bind_error("listen on", cfg.run.listen, e))?;
        let local = sock.local_addr().unwrap_or(cfg.run.listen);
        let (mut io, waker) = Io::new(sock, false)?;
        if local.ip().is_unspecified() && sticky::enable(&io.udp, local.is_ipv6()) {
            io.sticky = Some(HashMap::new());
        }
        let spec = DeviceSpec {
            name: cfg.run.device.clone(),
            mtu: cfg.settings.tun_mtu,
            v4: cfg.settings.v4,
            v6: cfg.settings.v6,
            prefix_routes: !cfg.run.no_routes,
        };
        let dev = Device::create(&spec)?;
        io.attach(dev)?;
        let ctl = Control {
            stop: Arc::new(AtomicBool::new(false)),
            signal: Arc::new(AtomicI32::new(0)),
            clock: MonotonicClock::new(),
            end: cfg.run.duration.map(|d| Instant::ZERO + d),
            status_interval: cfg.run.status_interval,
        };
        if cfg.settings.isolate {
            engine.set_host_addresses(host_addresses());
        } else {
            notes.push("clients reach every service on this host's own addresses (its tunnel address, and others they route into the tunnel); --isolate drops their packets to this host".to_string());
        }
        if cfg.settings.v4.is_some() && !device::forwarding_enabled(false) {
            notes.push("IPv4 forwarding is off on this host (net.ipv4.ip_forward = 0): clients reach this host and each other, not the networks behind it".to_string());
        }
        Ok(Server {
            cfg,
            engine,
            io,
            ctl,
            waker,
            local,
            notes,
        })
    }

    /// Stops [`Server::run`] from another thread.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle {
            flag: self.ctl.stop.clone(),
            signal: self.ctl.signal.clone(),
            waker: self.waker.clone(),
        }
    }

    /// The device's name.
    pub fn device_name(&self) -> String {
        self.io
            .device
            .as_ref()
            .map(|d| d.name().to_string())
            .unwrap_or_default()
    }

    /// Prints the start lines and runs until stopped; then removes the device.
    pub fn run(mut self) -> Result<ExitReason, SetupError> {
        let json = self.cfg.run.json;
        let device = self.device_name();
        let key = self.engine.public_key().to_base64();
        let v4 = self.cfg.settings.v4.map(|n| n.to_string());
        let v6 = self.cfg.settings.v6.map(|n| n.to_string());
        let mtu = self.cfg.settings.tun_mtu;
        if json {
            out_json(json!({
                "event": "listening",
                "listen": self.local,
                "device": device,
                "v4": v4,
                "v6": v6,
                "mtu": mtu,
                "path_mtu": self.cfg.run.path_mtu,
                "public_key": key,
                "max_clients": self.cfg.settings.secure.max_sessions,
                "client_to_client": self.cfg.settings.client_to_client,
                "isolate": self.cfg.settings.isolate,
                "prefix_routes": !self.cfg.run.no_routes,
                "notes": self.notes,
            }));
        } else {
            out(&format!(
                "sprout tunnel server listening on {} (UDP), public key {key}",
                self.local
            ));
            let addrs: Vec<String> = v4.iter().chain(v6.iter()).cloned().collect();
            out(&format!(
                "device {device}: {}, MTU {mtu} (path MTU {}){}",
                addrs.join(" "),
                self.cfg.run.path_mtu,
                if self.cfg.run.no_routes {
                    ", addresses without prefix routes (--no-routes)"
                } else {
                    ""
                }
            ));
            for n in &self.notes {
                out(&format!("note: {n}"));
            }
        }
        let mut printer = StatusPrinter::new(json, true);
        let mut clients_seen = 0u64;
        let isolate = self.cfg.settings.isolate;
        let mut refresh = Instant::ZERO + HOST_ADDRESSES_REFRESH;
        let result = run_loop(
            &mut self.engine,
            &mut self.io,
            &self.ctl,
            &mut printer,
            |engine, _io, now| {
                if isolate && now >= refresh {
                    engine.set_host_addresses(host_addresses());
                    refresh = now + HOST_ADDRESSES_REFRESH;
                }
                while let Some(ev) = engine.poll_event() {
                    if matches!(ev, ServerTunnelEvent::ClientUp { .. }) {
                        clients_seen += 1;
                    }
                    print_server_event(&ev, json);
                }
                Ok(())
            },
        );
        let now = self.ctl.clock.now();
        let reason = result?;
        let s = self.engine.status(now);
        printer.print(s, &self.io.counters);
        self.io.detach();
        exit_line(
            &printer,
            &self.io.counters,
            &reason,
            now,
            json!({ "clients_seen": clients_seen }),
        );
        Ok(reason)
    }
}

/// How often a server with `--isolate` reads the host's addresses again (they change with
/// DHCP, roaming, an operator's `ip addr`).
const HOST_ADDRESSES_REFRESH: sprout_core::time::Duration =
    sprout_core::time::Duration::from_secs(2);

/// The relay host's own addresses: every interface address, and each IPv4 network's
/// broadcast address.
fn host_addresses() -> Vec<IpAddr> {
    let mut out = Vec::new();
    for a in sprout_os::interfaces::interface_addresses() {
        out.push(a.address);
        if let (IpAddr::V4(v4), Some(p)) = (a.address, a.prefix_len) {
            if let Ok(n) = Ipv4Net::new(v4, p) {
                if p < 31 {
                    out.push(n.broadcast().into());
                }
            }
        }
    }
    out
}

fn assignment_json(a: &Assignment) -> Value {
    json!({
        "v4": a.v4.map(|v| v.client.to_string()),
        "v6": a.v6.map(|v| v.client.to_string()),
        "mtu": a.mtu,
    })
}

fn print_server_event(ev: &ServerTunnelEvent, json: bool) {
    match ev {
        ServerTunnelEvent::ClientUp {
            id,
            peer,
            addr,
            assignment,
        } => {
            if json {
                let mut v = json!({
                    "event": "client_up",
                    "id": id,
                    "peer": peer.to_base64(),
                    "addr": addr,
                });
                if let (Value::Object(m), Value::Object(a)) = (&mut v, assignment_json(assignment))
                {
                    m.extend(a);
                }
                out_json(v);
            } else {
                let addrs: Vec<String> = assignment
                    .v4
                    .map(|v| v.client.to_string())
                    .into_iter()
                    .chain(assignment.v6.map(|v| v.client.to_string()))
                    .collect();
                out(&format!(
                    "client {id:08x} up from {addr} (key {}): {}, MTU {}",
                    peer.to_base64(),
                    addrs.join(" "),
                    assignment.mtu
                ));
            }
        }
        ServerTunnelEvent::ClientDown { id, peer } => {
            if json {
                out_json(json!({"event": "client_down", "id": id, "peer": peer.to_base64()}));
            } else {
                out(&format!("client {id:08x} down (key {})", peer.to_base64()));
            }
        }
        ServerTunnelEvent::ClientRefused { id, peer, reason } => {
            if json {
                out_json(json!({
                    "event": "client_refused",
                    "id": id,
                    "peer": peer.to_base64(),
                    "reason": reason,
                }));
            } else {
                out(&format!(
                    "client {id:08x} refused (key {}): {reason}",
                    peer.to_base64()
                ));
            }
        }
    }
}

/// The client's device, routes and clean-up, made from an assignment.
struct ClientSetup {
    assignment: Assignment,
    undo: Undo,
}

/// A tunnel client: [`Client::new`] then [`Client::run`].
pub struct Client {
    cfg: TunnelClientConfig,
    end: ClientEnd,
    io: Io,
    ctl: Control,
    waker: Arc<Waker>,
    local: SocketAddr,
}

impl Client {
    /// Checks privileges, binds and connects the socket, starts the handshake. The device is
    /// made when the assignment arrives.
    pub fn new(cfg: TunnelClientConfig) -> Result<Client, SetupError> {
        device::check_can_create()?;
        let server = cfg.run.server;
        let local: SocketAddr = if server.is_ipv4() {
            (Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let (sock, _) = udp_socket(local).map_err(|e| bind_error("bind", local, e))?;
        sock.connect(server)
            .map_err(|e| SetupError(format!("cannot reach the server {server}: {e}")))?;
        let local = sock.local_addr().unwrap_or(local);
        let (io, waker) = Io::new(sock, true)?;
        let clock = MonotonicClock::new();
        let engine = TunnelClient::new(cfg.settings.clone(), Instant::ZERO)
            .map_err(|e| SetupError(e.to_string()))?;
        let ctl = Control {
            stop: Arc::new(AtomicBool::new(false)),
            signal: Arc::new(AtomicI32::new(0)),
            clock,
            end: cfg.run.duration.map(|d| Instant::ZERO + d),
            status_interval: cfg.run.status_interval,
        };
        Ok(Client {
            cfg,
            end: ClientEnd { engine, server },
            io,
            ctl,
            waker,
            local,
        })
    }

    /// Stops [`Client::run`] from another thread.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle {
            flag: self.ctl.stop.clone(),
            signal: self.ctl.signal.clone(),
            waker: self.waker.clone(),
        }
    }

    /// Runs until stopped; removes the device and routes whatever happens.
    pub fn run(mut self) -> Result<ExitReason, SetupError> {
        let json = self.cfg.run.json;
        let run = self.cfg.run.clone();
        let key = run.public_key.to_base64();
        if json {
            out_json(json!({
                "event": "connecting",
                "server": run.server,
                "local": self.local,
                "public_key": key,
                "ephemeral_key": run.ephemeral_key,
            }));
        } else {
            out(&format!(
                "sprout tunnel client, public key {key}{}",
                if run.ephemeral_key {
                    " (ephemeral: only a server with --allow-any-client accepts it)"
                } else {
                    ""
                }
            ));
            out(&format!("connecting to {} from {}", run.server, self.local));
        }
        let mut setup: Option<ClientSetup> = None;
        let mut printer = StatusPrinter::new(json, false);
        let mut established = false;
        let result = run_loop(
            &mut self.end,
            &mut self.io,
            &self.ctl,
            &mut printer,
            |end, io, now| {
                while let Some(ev) = end.engine.poll_event() {
                    match ev {
                        ClientTunnelEvent::Established => {
                            established = true;
                            let n = end.engine.reconnections();
                            if json {
                                out_json(
                                    json!({"event": "established", "server": run.server, "reconnections": n}),
                                );
                            } else if n > 0 {
                                out(&format!(
                                    "session established again with {} (reconnection {n})",
                                    run.server
                                ));
                            } else {
                                out(&format!("session established with {}", run.server));
                            }
                        }
                        ClientTunnelEvent::Reconnecting(why) => {
                            if json {
                                out_json(
                                    json!({"event": "reconnecting", "server": run.server, "reason": why}),
                                );
                            } else {
                                out(&format!(
                                    "the server {} is silent, reconnecting: {why}",
                                    run.server
                                ));
                            }
                        }
                        ClientTunnelEvent::Assigned(a) => {
                            if setup.as_ref().is_some_and(|s| s.assignment == a) {
                                continue;
                            }
                            // A new or changed assignment: the old device and routes go first.
                            if let Some(old) = setup.take() {
                                io.detach();
                                drop(old);
                            }
                            setup = Some(set_up_client(&run, &a, io)?);
                        }
                        ClientTunnelEvent::Failed(why) => {
                            return Err(SetupError(format!(
                                "the tunnel to {} failed: {why}{}",
                                run.server,
                                if established { "" } else { hint(&run) }
                            )));
                        }
                    }
                }
                if setup.is_none() && now >= Instant::ZERO + ASSIGNMENT_TIMEOUT {
                    return Err(SetupError(if established {
                        format!(
                            "the server {} completed the handshake but assigned no tunnel address within {} s (is it a `sprout tunnel server`, with addresses left?)",
                            run.server,
                            ASSIGNMENT_TIMEOUT.as_micros() / 1_000_000
                        )
                    } else {
                        format!(
                            "no answer from {} within {} s: {}",
                            run.server,
                            ASSIGNMENT_TIMEOUT.as_micros() / 1_000_000,
                            hint(&run).trim_start_matches(": ")
                        )
                    }));
                }
                Ok(())
            },
        );
        let now = self.ctl.clock.now();
        // Whatever happened: the device goes (with its addresses and routes), then the rest.
        self.io.detach();
        let removed = setup.as_ref().and_then(|s| {
            s.undo
                .pending()
                .first()
                .map(|a| format!("`ip {}`", a.join(" ")))
        });
        drop(setup);
        let reason = result?;
        let s = self.end.status(now);
        printer.print(s, &self.io.counters);
        exit_line(
            &printer,
            &self.io.counters,
            &reason,
            now,
            json!({ "removed": removed.map(|r| format!("ran {r}")) }),
        );
        Ok(reason)
    }
}

fn hint(run: &crate::config::ClientRun) -> &'static str {
    if run.ephemeral_key {
        ": is `sprout tunnel server` running there and reachable over UDP, is --server-key its public key, and does it accept any client (--allow-any-client)? Without --key this client's key is ephemeral"
    } else {
        ": is `sprout tunnel server` running there and reachable over UDP, is --server-key its public key, and is this client's public key in its --allowed-clients file or [[peer]] list?"
    }
}

/// Makes the client's device from the assignment, then its routes; prints the `up` line.
fn set_up_client(
    run: &crate::config::ClientRun,
    a: &Assignment,
    io: &mut Io,
) -> Result<ClientSetup, SetupError> {
    let mut notes = Vec::new();
    let mut v6 = a.v6;
    if v6.is_some() && !device::host_ipv6_enabled() {
        notes.push("IPv6 is disabled on this host: only IPv4 is set up".to_string());
        v6 = None;
    }
    if v6.is_some() && a.mtu < MIN_TUN_MTU_V6 {
        notes.push(format!(
            "the MTU {} is below IPv6's 1280: only IPv4 is set up",
            a.mtu
        ));
        v6 = None;
    }
    let v4net =
        a.v4.map(|v| Ipv4Net::new(v.client, v.prefix))
            .transpose()
            .map_err(|_| SetupError::new("the server assigned a bad IPv4 prefix"))?;
    let v6net = v6
        .map(|v| Ipv6Net::new(v.client, v.prefix))
        .transpose()
        .map_err(|_| SetupError::new("the server assigned a bad IPv6 prefix"))?;
    if v4net.is_none() && v6net.is_none() {
        return Err(SetupError::new(
            "the server assigned no address this host can use",
        ));
    }
    let spec = DeviceSpec {
        name: run.device.clone(),
        mtu: a.mtu,
        v4: v4net,
        v6: v6net,
        prefix_routes: !run.no_routes,
    };
    let dev = Device::create(&spec)?;
    let name = dev.name().to_string();
    io.attach(dev)?;
    let mut undo = Undo::new();
    let applied = if run.no_routes {
        AppliedRoutes::default()
    } else {
        routes::apply(
            &name,
            &run.routes,
            run.server.ip(),
            v4net.is_some(),
            v6net.is_some(),
            &mut undo,
        )?
    };
    if let Some(n) = &applied.note {
        notes.push(n.clone());
    }
    let routes: Vec<String> = applied.via_tunnel.iter().map(|r| r.to_string()).collect();
    if run.json {
        out_json(json!({
            "event": "up",
            "device": name,
            "v4": v4net.map(|n| n.to_string()),
            "server_v4": a.v4.map(|v| v.server.to_string()),
            "v6": v6net.map(|n| n.to_string()),
            "server_v6": v6.map(|v| v.server.to_string()),
            "mtu": a.mtu,
            "routes": routes,
            "server_route": applied.server_route,
            "prefix_routes": !run.no_routes,
            "notes": notes,
        }));
    } else {
        let mut parts = Vec::new();
        if let (Some(n), Some(v)) = (v4net, a.v4) {
            parts.push(format!("{n} (server {})", v.server));
        }
        if let (Some(n), Some(v)) = (v6net, v6) {
            parts.push(format!("{n} (server {})", v.server));
        }
        out(&format!(
            "device {name} up: {}, MTU {}",
            parts.join(", "),
            a.mtu
        ));
        if run.no_routes {
            out("routes: none (--no-routes; the addresses have no prefix routes)");
        } else if !routes.is_empty() {
            out(&format!(
                "routes through {name}: {}{}",
                routes.join(" "),
                applied
                    .server_route
                    .as_ref()
                    .map(|r| format!("; to the server outside the tunnel: {r} (removed on exit)"))
                    .unwrap_or_default()
            ));
        }
        for n in &notes {
            out(&format!("note: {n}"));
        }
    }
    Ok(ClientSetup {
        assignment: *a,
        undo,
    })
}

/// Runs a server until a signal or `--duration`: [`Server::new`], signals, [`Server::run`].
pub fn run_server(cfg: TunnelServerConfig) -> Result<ExitReason, SetupError> {
    crate::cleanup::install_panic_hook();
    let server = Server::new(cfg)?;
    stop_on_signals(server.stop_handle())
        .map_err(|e| SetupError(format!("cannot catch signals: {e}")))?;
    server.run()
}

/// Runs a client until a signal, `--duration` or a failure: [`Client::new`], signals,
/// [`Client::run`].
pub fn run_client(cfg: TunnelClientConfig) -> Result<ExitReason, SetupError> {
    crate::cleanup::install_panic_hook();
    let client = Client::new(cfg)?;
    stop_on_signals(client.stop_handle())
        .map_err(|e| SetupError(format!("cannot catch signals: {e}")))?;
    client.run()
}

/// Replies from the address the peer wrote to (WireGuard's "sticky sockets").
///
/// A server socket bound to `0.0.0.0` (or `[::]`) on a host with several addresses would
/// otherwise send its replies from whichever address the route back prefers; a client
/// (whose socket is connected, and whose NAT maps one address pair) drops those, and the
/// tunnel never comes up. So the server asks the kernel for each datagram's destination
/// address (`IP_PKTINFO`, `IPV6_RECVPKTINFO`), remembers it per peer, and sends to that peer
/// with it as the source (`sendmsg` with `IP_PKTINFO` / `IPV6_PKTINFO`): see
/// [`sprout_os::udp_pktinfo`].
mod sticky {
    pub(super) use sprout_os::udp_pktinfo::{enable, recv, send};

    /// Peers remembered at most (the map is cleared when full).
    pub(super) const MAX_PEERS: usize = 65_536;
}
