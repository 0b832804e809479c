//! `sprout server` and `sprout client`: Sprout over real UDP, every datagram sealed by the
//! security layer, a saturating (bulk) or paced transfer in one or both directions, with a line
//! per second and a summary.
//!
//! The client greets the server with a HELLO (direction, mode, rate, duration, scheme,
//! confidence; see [`sprout_net::message`]) carried inside its encrypted handshake, so that the
//! server builds the session's connection with the same scheme; the server answers ACCEPT and
//! both sides send timestamped DATA messages (CLOCK_REALTIME, so one-way delays are exact when
//! both ends share a clock) for the duration, then BYE with their totals. One server serves
//! many clients at once, each session on its own thread, on one UDP socket.

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::Serialize;
use sprout_net::message::{
    self, Bye, Data, Direction, Hello, Message, Mode, Scheme, DATA_HEADER_BYTES,
};
use sprout_net::secure::{
    read_allowed_keys, AllowedClients, ClientConfig, DropReason, Limits, PrivateKey, PublicKey,
    SecureStats, ServerConfig,
};
use sprout_net::{
    realtime_us, BulkWriter, Endpoint, EndpointStats, Server, ServerOptions, Session,
};

/// A session ends when nothing has come from the peer for this long.
pub(crate) const SILENCE: Duration = Duration::from_secs(5);
/// The server waits this long past the duration for the client's BYE.
const SERVER_GRACE: Duration = Duration::from_secs(3);
/// The client waits this long past the duration for the end of the server's data.
pub(crate) const CLIENT_GRACE: Duration = Duration::from_secs(1);
/// Longest wait for the server's answer to the HELLO.
const HANDSHAKE: Duration = Duration::from_secs(5);
/// Default size of a paced DATA message, in bytes.
pub(crate) const PACED_PAYLOAD: usize = 1000;
/// Copies of BYE sent at the end (it is not retransmitted).
pub(crate) const BYE_COPIES: usize = 3;
/// Longest sleep of a session's control loop: it checks the clock for the per-second line,
/// the end of the duration and the peer's silence at least this often (the peer's BYE wakes
/// it at once). Long enough that many sessions on one server cost few wake-ups.
const SESSION_POLL: Duration = Duration::from_millis(200);
/// How often the receiving thread checks whether it should stop when no data comes.
const LISTEN_POLL: Duration = Duration::from_millis(200);

/// `sprout server` arguments.
#[derive(clap::Args)]
#[command(group(
    clap::ArgGroup::new("clients")
        .required(true)
        .args(["allowed_clients", "allow_any_client"])
))]
pub struct ServerArgs {
    /// Address and port to listen on (IPv4 or IPv6, or a host name).
    #[arg(long, default_value = "0.0.0.0:9100")]
    listen: String,
    /// The server's private key file (from `sprout keygen --out FILE`) [default: a new
    /// ephemeral key for this run; its public key, which clients need for --server-key, is
    /// printed at startup either way].
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// File of the client public keys allowed to open sessions: one base64 key per line, `#`
    /// starts a comment. Exactly one of --allowed-clients and --allow-any-client is required
    /// [default: none, then --allow-any-client must be given].
    #[arg(long, value_name = "FILE")]
    allowed_clients: Option<PathBuf>,
    /// Accept any client key (an open test server; every session is still encrypted and
    /// authenticated).
    #[arg(long)]
    allow_any_client: bool,
    /// Most sessions at once; handshakes beyond are refused.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    max_sessions: usize,
    /// A session with no authenticated datagram from its client for this long is closed, in
    /// seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    idle_timeout: f64,
    /// Exit after the first session ends instead of serving clients until killed.
    #[arg(long)]
    once: bool,
    /// JSON lines (one object per session per second, then `"type":"summary"` per session,
    /// each with a `session` field) instead of text.
    #[arg(long)]
    json: bool,
}

/// Which way data flows (`up` = client to server).
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum DirectionArg {
    /// Client to server.
    Up,
    /// Server to client.
    Down,
    /// Both at once (the paper's setup).
    Both,
}

/// Receiver estimator at both ends.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum SchemeArg {
    /// Sprout's Bayesian inference and cautious forecast.
    Sprout,
    /// Sprout-EWMA: a moving average of the observed rate.
    #[value(name = "sprout-ewma", alias = "ewma")]
    SproutEwma,
}

/// `sprout client` arguments.
#[derive(clap::Args)]
pub struct ClientArgs {
    /// The server's address and port.
    #[arg(long)]
    connect: String,
    /// Loaded directions: up (client to server), down, or both.
    #[arg(long, value_enum, default_value = "both")]
    direction: DirectionArg,
    /// A paced interactive stream at this application bit rate, in kbit/s [default: none, a
    /// saturating bulk transfer].
    #[arg(long, value_name = "KBIT/S")]
    rate: Option<f64>,
    /// Seconds of transfer.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Forecast confidence at both ends, strictly between 0 and 1 (paper: 0.95).
    #[arg(long, default_value_t = 0.95)]
    confidence: f64,
    /// Receiver estimator at both ends.
    #[arg(long, value_enum, default_value = "sprout")]
    scheme: SchemeArg,
    /// Bytes per paced DATA message (24 up to the largest payload). Bulk datagrams are as large
    /// as the window allows.
    #[arg(long, default_value_t = PACED_PAYLOAD)]
    payload: usize,
    /// Local address to send from [default: any address, a port chosen by the system].
    #[arg(long)]
    bind: Option<String>,
    /// The server's public key: base64 (as `sprout server` prints it at startup, or `sprout
    /// keygen --public SERVER_KEY_FILE`), or a file holding that public key (not the server's
    /// private key file). Required.
    #[arg(long, value_name = "BASE64|FILE")]
    server_key: String,
    /// This client's private key file (from `sprout keygen --out FILE`) [default: a new
    /// ephemeral key, which only a server started with --allow-any-client accepts].
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// JSON lines (one object per second, then `"type":"summary"`) instead of text.
    #[arg(long)]
    json: bool,
}

/// Resolves `addr` ("host:port") to its first socket address.
fn resolve(addr: &str) -> Result<SocketAddr> {
    addr.to_socket_addrs()
        .with_context(|| format!("bad address {addr:?} (expected HOST:PORT)"))?
        .next()
        .with_context(|| format!("address {addr:?} resolves to nothing"))
}

/// What `run_session` needs of a client endpoint or a server's session.
trait Peer: Send + Sync + 'static {
    fn send(&self, d: Vec<u8>);
    fn set_bulk(&self, bulk: bool);
    fn set_bulk_writer(&self, write: BulkWriter);
    fn max_payload(&self) -> usize;
    fn recv_timeout(&self, t: Duration) -> Option<Vec<u8>>;
    fn wait_writable(&self, threshold: usize, t: Duration) -> bool;
    fn stats(&self) -> EndpointStats;
}

impl Peer for Endpoint {
    fn send(&self, d: Vec<u8>) {
        Endpoint::send(self, d)
    }
    fn set_bulk(&self, bulk: bool) {
        Endpoint::set_bulk(self, bulk)
    }
    fn set_bulk_writer(&self, write: BulkWriter) {
        Endpoint::set_bulk_writer(self, write)
    }
    fn max_payload(&self) -> usize {
        Endpoint::max_payload(self)
    }
    fn recv_timeout(&self, t: Duration) -> Option<Vec<u8>> {
        Endpoint::recv_timeout(self, t)
    }
    fn wait_writable(&self, threshold: usize, t: Duration) -> bool {
        Endpoint::wait_writable(self, threshold, t)
    }
    fn stats(&self) -> EndpointStats {
        Endpoint::stats(self)
    }
}

impl Peer for Session {
    fn send(&self, d: Vec<u8>) {
        Session::send(self, d)
    }
    fn set_bulk(&self, bulk: bool) {
        Session::set_bulk(self, bulk)
    }
    fn set_bulk_writer(&self, write: BulkWriter) {
        Session::set_bulk_writer(self, write)
    }
    fn max_payload(&self) -> usize {
        Session::max_payload(self)
    }
    fn recv_timeout(&self, t: Duration) -> Option<Vec<u8>> {
        Session::recv_timeout(self, t)
    }
    fn wait_writable(&self, threshold: usize, t: Duration) -> bool {
        Session::wait_writable(self, threshold, t)
    }
    fn stats(&self) -> EndpointStats {
        Session::stats(self)
    }
}

/// What the receiving thread has seen.
#[derive(Default)]
struct Inbox {
    accepted: bool,
    bye: Option<Bye>,
    /// One-way delays of DATA received this second, ms.
    second_delays: Vec<f64>,
    /// One-way delays of all DATA received, ms.
    delays: Vec<f32>,
    data_received: u64,
    bad_messages: u64,
}

/// The receiving thread: parses every application payload into the inbox.
struct Listener {
    shared: Arc<InboxShared>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// The inbox and the signal of its news (the peer's ACCEPT or BYE).
#[derive(Default)]
struct InboxShared {
    inbox: Mutex<Inbox>,
    /// Signalled when an ACCEPT or a BYE arrives, and when the receiving thread ends.
    news: Condvar,
}

impl Listener {
    /// Starts reading `ep`. The thread blocks in `recv_timeout` (a datagram wakes it at
    /// once), checking its stop flag every [`LISTEN_POLL`], and ends by itself once `ep` has
    /// ended and nothing is left to read.
    fn start(ep: Arc<dyn Peer>) -> Listener {
        let shared = Arc::new(InboxShared::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (shared2, stop2) = (shared.clone(), stop.clone());
        let thread = thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                let asked = Instant::now();
                let Some(d) = ep.recv_timeout(LISTEN_POLL) else {
                    // `recv_timeout` returns None before its timeout only when the peer has
                    // ended (and everything received was read): nothing more will come.
                    if asked.elapsed() < LISTEN_POLL {
                        break;
                    }
                    continue;
                };
                let now = realtime_us();
                let mut ib = shared2.inbox.lock().unwrap_or_else(|e| e.into_inner());
                match Message::decode(&d) {
                    Ok(Message::Data(m)) => {
                        let owd_ms = (now as i64 - m.sent_us as i64) as f64 / 1000.0;
                        ib.second_delays.push(owd_ms);
                        ib.delays.push(owd_ms as f32);
                        ib.data_received += 1;
                        if !ib.accepted {
                            ib.accepted = true;
                            shared2.news.notify_all();
                        }
                    }
                    Ok(Message::Filler) => {}
                    // The HELLO travels in the handshake; one sent as data is ignored.
                    Ok(Message::Hello(_)) => {}
                    Ok(Message::Accept(_)) => {
                        ib.accepted = true;
                        shared2.news.notify_all();
                    }
                    Ok(Message::Bye(b)) => {
                        ib.bye = Some(b);
                        shared2.news.notify_all();
                    }
                    Err(_) => ib.bad_messages += 1,
                }
            }
            shared2.news.notify_all();
        });
        Listener {
            shared,
            stop,
            thread: Some(thread),
        }
    }

    fn inbox(&self) -> std::sync::MutexGuard<'_, Inbox> {
        self.shared.inbox.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits at most `timeout` until `cond` holds of the inbox (an ACCEPT or a BYE wakes the
    /// wait); returns whether it holds.
    fn wait_until(&self, timeout: Duration, cond: impl Fn(&Inbox) -> bool) -> bool {
        let guard = self.inbox();
        let (guard, _) = self
            .shared
            .news
            .wait_timeout_while(guard, timeout, |ib| !cond(ib))
            .unwrap_or_else(|e| e.into_inner());
        cond(&guard)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The data sender of one side: bulk (stamped filler) or a paced thread.
struct DataSender {
    sent: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl DataSender {
    fn start(ep: &Arc<dyn Peer>, hello: &Hello) -> DataSender {
        let sent = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = match hello.mode {
            Mode::Bulk => {
                let counter = sent.clone();
                ep.set_bulk_writer(Box::new(move |buf: &mut [u8]| {
                    let seq = counter.load(Ordering::Relaxed);
                    let m = Data {
                        seq,
                        sent_us: realtime_us(),
                    };
                    if m.write(buf) {
                        counter.store(seq + 1, Ordering::Relaxed);
                    }
                }));
                None
            }
            Mode::Paced => {
                let size = match hello.payload_bytes {
                    0 => PACED_PAYLOAD,
                    n => n as usize,
                }
                .clamp(DATA_HEADER_BYTES, ep.max_payload());
                let interval =
                    Duration::from_secs_f64(size as f64 * 8.0 / (hello.rate_kbps as f64 * 1000.0));
                let (ep, counter, stop) = (ep.clone(), sent.clone(), stop.clone());
                Some(thread::spawn(move || {
                    let start = Instant::now();
                    let mut next = start;
                    let mut seq = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let now = Instant::now();
                        if now < next {
                            thread::sleep((next - now).min(Duration::from_millis(50)));
                            continue;
                        }
                        let m = Data {
                            seq,
                            sent_us: realtime_us(),
                        };
                        ep.send(m.encode(size));
                        seq += 1;
                        counter.store(seq, Ordering::Relaxed);
                        next += interval;
                        // After a long stall, do not burst to catch up more than a second.
                        if now > next + Duration::from_secs(1) {
                            next = now;
                        }
                    }
                }))
            }
        };
        DataSender { sent, stop, thread }
    }

    /// Stops sending; returns the DATA messages sent.
    fn stop(mut self, ep: &dyn Peer) -> u64 {
        ep.set_bulk(false);
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.sent.load(Ordering::Relaxed)
    }
}

/// One per-second line.
#[derive(Serialize)]
struct Tick {
    #[serde(rename = "type")]
    kind: &'static str,
    role: &'static str,
    /// The server's id of the session, 8 hex digits (server lines only).
    #[serde(skip_serializing_if = "Option::is_none")]
    session: Option<String>,
    /// The client's address (server lines only; it follows a roaming client).
    #[serde(skip_serializing_if = "Option::is_none")]
    peer: Option<SocketAddr>,
    /// Seconds since the session started.
    elapsed_s: f64,
    /// Application data sent in the last second, kbit/s.
    sent_kbps: f64,
    /// Application data received in the last second, kbit/s.
    received_kbps: f64,
    /// Application bytes sent so far.
    sent_bytes: u64,
    /// Application bytes received so far.
    received_bytes: u64,
    /// The sender's window: what the forecast lets it have in the network (its queue estimate
    /// plus the room left), link bytes. A saturating sender keeps its room near 0, so this,
    /// not the room, shows how much the forecast allows.
    window_bytes: u64,
    /// Room left in the window now, link bytes.
    room_bytes: u64,
    /// The sender's estimate of its bytes queued in the network, link bytes.
    queue_estimate_bytes: u64,
    /// Packets the peer forecasts it will receive over the next 8 ticks (160 ms).
    forecast_packets: u64,
    /// The peer's forecast, cumulative packets per 20 ms tick.
    forecast: Vec<u32>,
    /// This side's estimate of the incoming rate, packets/s.
    incoming_rate_pps: f64,
    /// DATA messages received in the last second.
    data_received: usize,
    /// Median one-way delay of those, ms.
    owd_p50_ms: Option<f64>,
    /// 95th percentile one-way delay of those, ms.
    owd_p95_ms: Option<f64>,
    /// Authenticated datagrams the protocol core refused so far.
    malformed: u64,
    /// Datagrams the security layer dropped so far (forged, replayed, wrong key, ...): the
    /// client's own; on the server, the whole server's (unauthenticated datagrams belong to no
    /// session).
    dropped: u64,
}

/// The end of a session.
#[derive(Serialize)]
struct Summary {
    #[serde(rename = "type")]
    kind: &'static str,
    role: &'static str,
    /// The server's id of the session, 8 hex digits (server summaries only).
    #[serde(skip_serializing_if = "Option::is_none")]
    session: Option<String>,
    /// The client's public key (server summaries only).
    #[serde(skip_serializing_if = "Option::is_none")]
    peer_key: Option<String>,
    peer: Option<SocketAddr>,
    scheme: &'static str,
    confidence: f64,
    direction: Direction,
    mode: Mode,
    /// Paced rate, kbit/s (null in bulk mode).
    rate_kbps: Option<u32>,
    /// Requested duration, s.
    duration_s: f64,
    /// Length of the session, s.
    elapsed_s: f64,
    /// Why it ended: "bye" (the peer's BYE came), "duration" (the duration and the grace for
    /// the peer's BYE ran out), "silence" (nothing from the peer for 5 s) or "closed" (the
    /// server closed the session: idle timeout, or the server stopped).
    end: &'static str,
    sent_bytes: u64,
    received_bytes: u64,
    /// Average application throughput over the transfer, kbit/s.
    sent_kbps: f64,
    received_kbps: f64,
    data_sent: u64,
    data_received: u64,
    /// DATA messages the peer said it sent (from its BYE), if it said.
    peer_data_sent: Option<u64>,
    owd_p50_ms: Option<f64>,
    owd_p95_ms: Option<f64>,
    owd_p99_ms: Option<f64>,
    owd_mean_ms: Option<f64>,
    datagrams_sent: u64,
    datagrams_received: u64,
    heartbeats_sent: u64,
    /// Authenticated datagrams the protocol core refused.
    malformed: u64,
    /// Datagrams the security layer dropped (as in the ticks).
    dropped: u64,
    /// Those drops by reason (only reasons that occurred).
    drops: BTreeMap<&'static str, u64>,
    /// Times the client's address changed during the session (server summaries; roaming).
    roams: u64,
    bad_messages: u64,
    send_errors: u64,
}

/// The `p` quantile (0..=1) of sorted values, nearest rank.
fn quantile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let i = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    Some(sorted[i])
}

/// `x` rounded to `digits` decimals (for readable output).
fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v
}

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.1}"))
}

/// The column titles of the text lines; a server's lines start with the session.
fn print_header(json: bool, server: bool) {
    if !json {
        println!(
            "{}{:>6} {:>12} {:>12} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            if server { "session  " } else { "" },
            "time s",
            "sent kbit/s",
            "recv kbit/s",
            "window B",
            "forecast",
            "owd p50",
            "owd p95",
            "malformed",
            "dropped"
        );
    }
}

impl Tick {
    fn print(&self, json: bool) {
        if json {
            println!(
                "{}",
                serde_json::to_string(self).expect("a tick serializes")
            );
        } else {
            let prefix = self
                .session
                .as_ref()
                .map(|s| format!("{s} "))
                .unwrap_or_default();
            println!(
                "{prefix}{:>6.1} {:>12.1} {:>12.1} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
                self.elapsed_s,
                self.sent_kbps,
                self.received_kbps,
                self.window_bytes,
                self.forecast_packets,
                opt(self.owd_p50_ms),
                opt(self.owd_p95_ms),
                self.malformed,
                self.dropped
            );
        }
    }
}

impl Summary {
    fn print(&self, json: bool) {
        if json {
            println!(
                "{}",
                serde_json::to_string(self).expect("a summary serializes")
            );
            return;
        }
        let peer = self.peer.map_or_else(|| "-".into(), |p| p.to_string());
        let session = self
            .session
            .as_ref()
            .map(|s| format!("session {s}, "))
            .unwrap_or_default();
        // One print for the whole summary, so that concurrent sessions' summaries do not
        // interleave line by line.
        let mut text = format!(
            "{} summary: {session}peer {peer}, {} {} {}, confidence {}, {:.1} s (ended by {})\n",
            self.role,
            self.scheme,
            self.direction.as_str(),
            match self.rate_kbps {
                Some(r) => format!("paced {r} kbit/s"),
                None => "bulk".into(),
            },
            self.confidence,
            self.elapsed_s,
            self.end
        );
        if let Some(k) = &self.peer_key {
            text += &format!("  client key {k}\n");
        }
        text += &format!(
            "  sent     {:>12} bytes {:>10.1} kbit/s  {} DATA\n",
            self.sent_bytes, self.sent_kbps, self.data_sent
        );
        let lost = self
            .peer_data_sent
            .map(|n| format!(" of {n} the peer sent"))
            .unwrap_or_default();
        text += &format!(
            "  received {:>12} bytes {:>10.1} kbit/s  {} DATA{lost}\n",
            self.received_bytes, self.received_kbps, self.data_received
        );
        text += &format!(
            "  one-way delay ms: p50 {}  p95 {}  p99 {}  mean {}\n",
            opt(self.owd_p50_ms),
            opt(self.owd_p95_ms),
            opt(self.owd_p99_ms),
            opt(self.owd_mean_ms)
        );
        let drops = if self.drops.is_empty() {
            String::new()
        } else {
            let by: Vec<String> = self.drops.iter().map(|(k, v)| format!("{k} {v}")).collect();
            format!(" ({})", by.join(", "))
        };
        text += &format!(
            "  datagrams sent {} ({} heartbeats), received {}; malformed {}, dropped {}{drops}, bad messages {}, send errors {}",
            self.datagrams_sent,
            self.heartbeats_sent,
            self.datagrams_received,
            self.malformed,
            self.dropped,
            self.bad_messages,
            self.send_errors
        );
        println!("{text}");
    }
}

/// How one side runs a session.
struct Plan {
    role: &'static str,
    hello: Hello,
    sends: bool,
    /// Whether the peer sends data.
    peer_sends: bool,
    /// End at the duration once the peer's data has ended (the client), rather than as soon
    /// as the peer says BYE (the server).
    ends_at_duration: bool,
    /// How long past the duration to wait for the peer's BYE.
    grace: Duration,
    json: bool,
    /// A server's session: its id (8 hex digits) and client key, for the lines.
    session: Option<(String, String)>,
    /// Where the security layer's drop counters come from: a client's endpoint has its own;
    /// a server's session reads the server's.
    drops: Arc<dyn Fn() -> SecureStats + Send + Sync>,
}

/// Runs the data phase of a session on `ep` (after the handshake) and prints its lines and
/// summary. Returns the summary.
fn run_session(ep: &Arc<dyn Peer>, listener: &Listener, plan: &Plan) -> Summary {
    let h = &plan.hello;
    let duration = Duration::from_millis(h.duration_ms as u64);
    let start = Instant::now();
    // Counters run from the endpoint's creation: the server's first reply and the client's
    // first burst may come before either side's session clock starts.
    let base = EndpointStats::default();
    let mut sender = plan.sends.then(|| DataSender::start(ep, h));
    let mut data_sent = 0;
    let mut bye_sent = false;
    let mut last = base.clone();
    let mut next_tick = 1u32;
    if plan.session.is_none() {
        print_header(plan.json, false);
    }
    let end = loop {
        // Sleep until the next thing due (the per-second line, the end of the duration, the
        // end of the grace), at most SESSION_POLL; the peer's BYE ends the wait at once.
        let elapsed = start.elapsed();
        let mut due = start_plus(next_tick).min(duration + plan.grace);
        if !bye_sent {
            due = due.min(duration);
        }
        let wait = due.saturating_sub(elapsed).min(SESSION_POLL);
        if listener.inbox().bye.is_none() {
            listener.wait_until(wait, |ib| ib.bye.is_some());
        } else {
            thread::sleep(wait);
        }
        let elapsed = start.elapsed();
        let s = ep.stats();
        if elapsed >= duration && !bye_sent {
            if let Some(snd) = sender.take() {
                data_sent = snd.stop(ep.as_ref());
            }
            send_bye(
                ep.as_ref(),
                h.session,
                data_sent,
                s.app_bytes_sent - base.app_bytes_sent,
            );
            bye_sent = true;
        }
        if elapsed >= start_plus(next_tick) {
            let delays = std::mem::take(&mut listener.inbox().second_delays);
            print_tick(plan, elapsed, &base, &last, &s, sorted(delays));
            last = s.clone();
            next_tick += 1;
        }
        if !s.running {
            break "closed";
        }
        let silent = s
            .since_last_received_s
            .is_none_or(|t| t > SILENCE.as_secs_f64())
            && elapsed > SILENCE;
        if silent {
            break "silence";
        }
        let bye = listener.inbox().bye.is_some();
        let done = if plan.ends_at_duration {
            elapsed >= duration && (bye || !plan.peer_sends)
        } else {
            bye
        };
        if done {
            break if bye { "bye" } else { "duration" };
        }
        if elapsed >= duration + plan.grace {
            break "duration";
        }
    };
    let elapsed = start.elapsed();
    if !bye_sent {
        if let Some(snd) = sender.take() {
            data_sent = snd.stop(ep.as_ref());
        }
        let s = ep.stats();
        send_bye(
            ep.as_ref(),
            h.session,
            data_sent,
            s.app_bytes_sent - base.app_bytes_sent,
        );
    }
    // Let BYE leave (the window permitting).
    ep.wait_writable(0, Duration::from_secs(1));
    let s = ep.stats();
    let ib = listener.inbox();
    let all = sorted(ib.delays.iter().map(|&d| d as f64).collect());
    let secs = elapsed.min(duration).as_secs_f64().max(1e-3);
    let sent_bytes = s.app_bytes_sent - base.app_bytes_sent;
    let received_bytes = s.app_bytes_received - base.app_bytes_received;
    let secure = (plan.drops)();
    let summary = Summary {
        kind: "summary",
        role: plan.role,
        session: plan.session.as_ref().map(|(id, _)| id.clone()),
        peer_key: plan.session.as_ref().map(|(_, k)| k.clone()),
        peer: s.peer_addr,
        scheme: h.scheme.as_str(),
        confidence: h.confidence,
        direction: h.direction,
        mode: h.mode,
        rate_kbps: (h.mode == Mode::Paced).then_some(h.rate_kbps),
        duration_s: duration.as_secs_f64(),
        elapsed_s: round(elapsed.as_secs_f64(), 3),
        end,
        sent_bytes,
        received_bytes,
        sent_kbps: round(sent_bytes as f64 * 8.0 / 1000.0 / secs, 1),
        received_kbps: round(received_bytes as f64 * 8.0 / 1000.0 / secs, 1),
        data_sent,
        data_received: ib.data_received,
        peer_data_sent: ib.bye.map(|b| b.data_sent),
        owd_p50_ms: quantile(&all, 0.5).map(|x| round(x, 3)),
        owd_p95_ms: quantile(&all, 0.95).map(|x| round(x, 3)),
        owd_p99_ms: quantile(&all, 0.99).map(|x| round(x, 3)),
        owd_mean_ms: (!all.is_empty())
            .then(|| round(all.iter().sum::<f64>() / all.len() as f64, 3)),
        datagrams_sent: s.datagrams_sent,
        datagrams_received: s.datagrams_received,
        heartbeats_sent: s.heartbeats_sent,
        malformed: s.malformed,
        dropped: secure.dropped_total(),
        drops: secure.drops_by_name().into_iter().collect(),
        roams: s.roams,
        bad_messages: ib.bad_messages,
        send_errors: s.send_errors,
    };
    summary.print(plan.json);
    summary
}

fn start_plus(secs: u32) -> Duration {
    Duration::from_secs(secs as u64)
}

fn send_bye(ep: &dyn Peer, session: u64, data_sent: u64, app_bytes_sent: u64) {
    let bye = Bye {
        session,
        data_sent,
        app_bytes_sent,
    };
    for _ in 0..BYE_COPIES {
        ep.send(bye.encode());
    }
}

fn print_tick(
    plan: &Plan,
    elapsed: Duration,
    base: &EndpointStats,
    last: &EndpointStats,
    s: &EndpointStats,
    delays: Vec<f64>,
) {
    let dt = (s.elapsed_s - last.elapsed_s).max(1e-3);
    Tick {
        kind: "tick",
        role: plan.role,
        session: plan.session.as_ref().map(|(id, _)| id.clone()),
        peer: plan.session.as_ref().and(s.peer_addr),
        elapsed_s: (elapsed.as_secs_f64() * 10.0).round() / 10.0,
        sent_kbps: round(
            (s.app_bytes_sent - last.app_bytes_sent) as f64 * 8.0 / 1000.0 / dt,
            1,
        ),
        received_kbps: round(
            (s.app_bytes_received - last.app_bytes_received) as f64 * 8.0 / 1000.0 / dt,
            1,
        ),
        sent_bytes: s.app_bytes_sent - base.app_bytes_sent,
        received_bytes: s.app_bytes_received - base.app_bytes_received,
        window_bytes: s.queue_estimate_bytes + s.window_bytes,
        room_bytes: s.window_bytes,
        queue_estimate_bytes: s.queue_estimate_bytes,
        forecast_packets: s.peer_forecast_packets,
        forecast: s.peer_forecast.clone(),
        incoming_rate_pps: (s.incoming_rate_pps * 10.0).round() / 10.0,
        data_received: delays.len(),
        owd_p50_ms: quantile(&delays, 0.5).map(|x| round(x, 3)),
        owd_p95_ms: quantile(&delays, 0.95).map(|x| round(x, 3)),
        malformed: s.malformed,
        dropped: (plan.drops)().dropped_total(),
    }
    .print(plan.json);
}

/// The server's private key: read from `path`, or a new ephemeral one.
fn server_private_key(path: Option<&PathBuf>) -> Result<PrivateKey> {
    match path {
        Some(p) => PrivateKey::read_file(p).map_err(|e| anyhow::anyhow!("--key: {e}")),
        None => Ok(PrivateKey::generate()),
    }
}

/// The security layer's drop counters by name, "reason count, ...".
fn drops_text(s: &SecureStats) -> String {
    let by: Vec<String> = s
        .drops_by_name()
        .into_iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    by.join(", ")
}

/// Runs `sprout server`.
pub fn server(a: ServerArgs) -> Result<()> {
    let listen = resolve(&a.listen)?;
    if a.max_sessions == 0 {
        bail!("--max-sessions must be at least 1");
    }
    if !(a.idle_timeout.is_finite() && a.idle_timeout > 0.0 && a.idle_timeout <= 86_400.0) {
        bail!(
            "--idle-timeout must be a positive number of seconds (at most a day), got {}",
            a.idle_timeout
        );
    }
    let key = server_private_key(a.key.as_ref())?;
    let allowed = match (&a.allowed_clients, a.allow_any_client) {
        (Some(path), false) => {
            let keys =
                read_allowed_keys(path).map_err(|e| anyhow::anyhow!("--allowed-clients: {e}"))?;
            if keys.is_empty() {
                bail!(
                    "--allowed-clients: {} holds no key (one base64 public key per line, from `sprout keygen`)",
                    path.display()
                );
            }
            AllowedClients::Keys(keys.into_iter().collect())
        }
        (None, true) => AllowedClients::Any,
        _ => bail!("give exactly one of --allowed-clients FILE and --allow-any-client"),
    };
    let mut options = ServerOptions::new(ServerConfig::new(key, allowed));
    options.max_sessions = a.max_sessions;
    options.idle_timeout = Duration::from_secs_f64(a.idle_timeout);
    let server = Server::bind(listen, options, |_, _, greeting| {
        match Message::decode(greeting) {
            Ok(Message::Hello(h)) => Some(h.config()),
            _ => None,
        }
    })
    .with_context(|| format!("cannot listen on {listen}"))?;
    let server = Arc::new(server);
    eprintln!(
        "sprout server listening on {} with public key {}{}",
        server.local_addr(),
        server.public_key(),
        if a.key.is_none() { " (ephemeral)" } else { "" }
    );
    print_header(a.json, true);
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let mut last_drops = SecureStats::default();
    let mut next_report = Instant::now() + Duration::from_secs(1);
    loop {
        if let Some(session) = server.accept_timeout(Duration::from_millis(100)) {
            let Ok(Message::Hello(hello)) = Message::decode(session.greeting()) else {
                // The acceptor only lets HELLOs through.
                continue;
            };
            let label = format!("{:08x}", session.id());
            let peer_key = session.peer_key().to_base64();
            eprintln!(
                "session {label} from {} (key {peer_key}): {} {} {}, {} s",
                session.peer_addr(),
                hello.scheme.as_str(),
                hello.direction.as_str(),
                match hello.mode {
                    Mode::Bulk => "bulk".to_string(),
                    Mode::Paced => format!("paced {} kbit/s", hello.rate_kbps),
                },
                hello.duration_ms as f64 / 1000.0
            );
            let srv = server.clone();
            let plan = Plan {
                role: "server",
                hello,
                sends: hello.direction.server_sends(),
                peer_sends: hello.direction.client_sends(),
                ends_at_duration: false,
                grace: SERVER_GRACE,
                json: a.json,
                session: Some((label.clone(), peer_key)),
                drops: Arc::new(move || srv.stats().secure),
            };
            let done = done_tx.clone();
            let session: Arc<Session> = Arc::new(session);
            thread::spawn(move || {
                let ep: Arc<dyn Peer> = session.clone();
                for _ in 0..BYE_COPIES {
                    ep.send(message::encode_accept(plan.hello.session));
                }
                let listener = Listener::start(ep.clone());
                let summary = run_session(&ep, &listener, &plan);
                match summary.end {
                    "silence" => eprintln!("session {label}: the client fell silent"),
                    "closed" => eprintln!(
                        "session {label}: closed ({})",
                        session.end_reason().unwrap_or_default()
                    ),
                    _ => {}
                }
                drop(listener);
                session.close();
                let _ = done.send(());
            });
        }
        if Instant::now() >= next_report {
            next_report += Duration::from_secs(1);
            let s = server.stats();
            let old = s.secure.dropped(DropReason::OldVersion);
            if old > 0 && last_drops.dropped(DropReason::OldVersion) == 0 {
                eprintln!(
                    "server: refusing datagrams of wire version 1 (unencrypted, from a sprout build older than this one); this server speaks version 2 only: upgrade the client"
                );
            }
            if s.secure.dropped != last_drops.dropped {
                eprintln!(
                    "server: {} sessions open; dropped datagrams so far: {}",
                    s.sessions_open,
                    drops_text(&s.secure)
                );
                last_drops = s.secure;
            }
        }
        if a.once && done_rx.try_recv().is_ok() {
            let s = server.stats();
            eprintln!(
                "server: {} sessions accepted, {} refused; dropped datagrams: {}",
                s.sessions_accepted,
                s.sessions_refused,
                if s.secure.dropped_total() == 0 {
                    "none".to_string()
                } else {
                    drops_text(&s.secure)
                }
            );
            return Ok(());
        }
        if !server.is_running() {
            bail!(
                "the server stopped: {}",
                server.fatal_error().unwrap_or_default()
            );
        }
    }
}

/// Runs `sprout client`.
pub fn client(a: ClientArgs) -> Result<()> {
    if !(a.duration > 0.0 && a.duration * 1000.0 <= u32::MAX as f64) {
        bail!(
            "--duration must be a positive number of seconds, got {}",
            a.duration
        );
    }
    if !(a.confidence > 0.0 && a.confidence < 1.0) {
        bail!(
            "--confidence must be strictly between 0 and 1, got {}",
            a.confidence
        );
    }
    let rate_kbps = match a.rate {
        None => None,
        Some(r) if r >= 1.0 && r <= u32::MAX as f64 => Some(r.round() as u32),
        Some(r) => bail!("--rate must be at least 1 kbit/s, got {r}"),
    };
    let payload = a.payload;
    let max_payload = sprout_core::Config::default().max_datagram_bytes
        - sprout_core::wire::header_bytes(sprout_core::Config::default().model.forecast_ticks);
    if !(DATA_HEADER_BYTES..=max_payload).contains(&payload) {
        bail!("--payload must be {DATA_HEADER_BYTES}..={max_payload} bytes, got {payload}");
    }
    let server_key =
        PublicKey::from_arg(&a.server_key).map_err(|e| anyhow::anyhow!("--server-key: {e}"))?;
    let private_key = match &a.key {
        Some(p) => PrivateKey::read_file(p).map_err(|e| anyhow::anyhow!("--key: {e}"))?,
        None => PrivateKey::generate(),
    };
    let remote = resolve(&a.connect)?;
    let local = match &a.bind {
        Some(b) => resolve(b)?,
        None if remote.is_ipv4() => SocketAddr::from(([0, 0, 0, 0], 0)),
        None => SocketAddr::from(([0u16; 8], 0)),
    };
    let hello = Hello {
        session: realtime_us() ^ ((std::process::id() as u64) << 32),
        direction: match a.direction {
            DirectionArg::Up => Direction::Up,
            DirectionArg::Down => Direction::Down,
            DirectionArg::Both => Direction::Both,
        },
        mode: if rate_kbps.is_some() {
            Mode::Paced
        } else {
            Mode::Bulk
        },
        scheme: match a.scheme {
            SchemeArg::Sprout => Scheme::Sprout,
            SchemeArg::SproutEwma => Scheme::SproutEwma,
        },
        confidence: a.confidence,
        rate_kbps: rate_kbps.unwrap_or(0),
        duration_ms: (a.duration * 1000.0).round().max(1.0) as u32,
        payload_bytes: payload as u16,
    };
    let keys = ClientConfig {
        private_key,
        server_key,
        limits: Limits::default(),
    };
    let ep = Endpoint::connect(local, remote, keys, hello.config(), &hello.encode())
        .with_context(|| format!("cannot reach {remote} from {local}"))?;
    let ep = Arc::new(ep);
    let peer: Arc<dyn Peer> = ep.clone();
    let listener = Listener::start(peer.clone());
    let wait = HANDSHAKE.min(Duration::from_secs_f64(a.duration));
    let t0 = Instant::now();
    while !listener.wait_until(Duration::from_millis(100), |ib| ib.accepted) {
        if let Some(e) = ep.error() {
            bail!("no session with {remote}: {e}");
        }
        if t0.elapsed() >= wait {
            let how = if ep.is_established() {
                "the handshake completed but the server did not accept the session (it refuses a greeting it does not understand, and sessions beyond its limit)"
            } else if a.key.is_none() {
                "is `sprout server` running there and reachable over UDP, is --server-key its public key, and does it accept any client (--allow-any-client)? Without --key this client uses an ephemeral key, which a server with --allowed-clients refuses"
            } else {
                "is `sprout server` running there and reachable over UDP, is --server-key its public key, and is this client's public key (`sprout keygen --public FILE`) in its --allowed-clients file?"
            };
            bail!(
                "no answer from {remote} within {:.1} s: {how}",
                wait.as_secs_f64()
            );
        }
    }
    if !a.json {
        eprintln!(
            "connected to {remote} from {} ({} {}, {} s)",
            ep.local_addr(),
            hello.scheme.as_str(),
            hello.direction.as_str(),
            a.duration
        );
    }
    let stats_ep = ep.clone();
    let plan = Plan {
        role: "client",
        hello,
        sends: hello.direction.client_sends(),
        peer_sends: hello.direction.server_sends(),
        ends_at_duration: true,
        grace: CLIENT_GRACE,
        json: a.json,
        session: None,
        drops: Arc::new(move || stats_ep.stats().secure.unwrap_or_default()),
    };
    let summary = run_session(&peer, &listener, &plan);
    drop(listener);
    drop(plan);
    ep.close();
    if summary.end == "silence" {
        bail!(
            "the server at {remote} fell silent for {} s",
            SILENCE.as_secs()
        );
    }
    Ok(())
}
