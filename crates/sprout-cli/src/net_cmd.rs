//! `sprout server` and `sprout client`: Sprout over real UDP, a saturating (bulk) or paced
//! transfer in one or both directions, with a line per second and a summary.
//!
//! The client greets the server with a HELLO (direction, mode, rate, duration, scheme,
//! confidence; see [`sprout_net::message`]), sent outside the window until the server answers,
//! so that the server builds its connection with the same scheme; the server answers ACCEPT and
//! both sides send timestamped DATA messages (CLOCK_REALTIME, so one-way delays are exact when
//! both ends share a clock) for the duration, then BYE with their totals.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::Serialize;
use sprout_net::message::{
    self, Bye, Data, Direction, Hello, Message, Mode, Scheme, DATA_HEADER_BYTES,
};
use sprout_net::{realtime_us, Endpoint, EndpointStats};

/// A session ends when nothing has come from the peer for this long.
const SILENCE: Duration = Duration::from_secs(5);
/// The server waits this long past the duration for the client's BYE.
const SERVER_GRACE: Duration = Duration::from_secs(3);
/// The client waits this long past the duration for the end of the server's data.
const CLIENT_GRACE: Duration = Duration::from_secs(1);
/// Longest wait for the server's answer to the HELLO.
const HANDSHAKE: Duration = Duration::from_secs(5);
/// Default size of a paced DATA message, in bytes.
const PACED_PAYLOAD: usize = 1000;
/// Copies of BYE sent at the end (it is not retransmitted).
const BYE_COPIES: usize = 3;

/// `sprout server` arguments.
#[derive(clap::Args)]
pub struct ServerArgs {
    /// Address and port to listen on (IPv4 or IPv6, or a host name).
    #[arg(long, default_value = "0.0.0.0:9100")]
    listen: String,
    /// Exit after one session instead of waiting for the next client.
    #[arg(long)]
    once: bool,
    /// JSON lines (one object per second, then `"type":"summary"`) instead of text.
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

/// What the receiving thread has seen.
#[derive(Default)]
struct Inbox {
    hello: Option<Hello>,
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
    inbox: Arc<Mutex<Inbox>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Listener {
    /// Starts reading `ep`; a server (`accept_hellos`) answers every HELLO of its session.
    fn start(ep: Arc<Endpoint>, accept_hellos: bool) -> Listener {
        let inbox = Arc::new(Mutex::new(Inbox::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (inbox2, stop2) = (inbox.clone(), stop.clone());
        let thread = thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                let Some(d) = ep.recv_timeout(Duration::from_millis(50)) else {
                    continue;
                };
                let now = realtime_us();
                let mut ib = inbox2.lock().unwrap_or_else(|e| e.into_inner());
                match Message::decode(&d) {
                    Ok(Message::Data(m)) => {
                        let owd_ms = (now as i64 - m.sent_us as i64) as f64 / 1000.0;
                        ib.second_delays.push(owd_ms);
                        ib.delays.push(owd_ms as f32);
                        ib.data_received += 1;
                        ib.accepted = true;
                    }
                    Ok(Message::Filler) => {}
                    Ok(Message::Hello(h)) => {
                        let first = ib.hello.get_or_insert(h);
                        if accept_hellos && first.session == h.session {
                            ep.send(message::encode_accept(h.session));
                        }
                    }
                    Ok(Message::Accept(_)) => ib.accepted = true,
                    Ok(Message::Bye(b)) => ib.bye = Some(b),
                    Err(_) => ib.bad_messages += 1,
                }
            }
        });
        Listener {
            inbox,
            stop,
            thread: Some(thread),
        }
    }

    fn inbox(&self) -> std::sync::MutexGuard<'_, Inbox> {
        self.inbox.lock().unwrap_or_else(|e| e.into_inner())
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
    fn start(ep: &Arc<Endpoint>, hello: &Hello) -> DataSender {
        let sent = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = match hello.mode {
            Mode::Bulk => {
                let counter = sent.clone();
                ep.set_bulk_writer(move |buf| {
                    let seq = counter.load(Ordering::Relaxed);
                    let m = Data {
                        seq,
                        sent_us: realtime_us(),
                    };
                    if m.write(buf) {
                        counter.store(seq + 1, Ordering::Relaxed);
                    }
                });
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
    fn stop(mut self, ep: &Endpoint) -> u64 {
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
    malformed: u64,
    bad_peers: u64,
}

/// The end of a session.
#[derive(Serialize)]
struct Summary {
    #[serde(rename = "type")]
    kind: &'static str,
    role: &'static str,
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
    /// the peer's BYE ran out) or "silence" (nothing from the peer for 5 s).
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
    malformed: u64,
    bad_peers: u64,
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

fn print_header(json: bool) {
    if !json {
        println!(
            "{:>6} {:>12} {:>12} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "time s",
            "sent kbit/s",
            "recv kbit/s",
            "window B",
            "forecast",
            "owd p50",
            "owd p95",
            "malformed",
            "bad peer"
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
            println!(
                "{:>6.1} {:>12.1} {:>12.1} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
                self.elapsed_s,
                self.sent_kbps,
                self.received_kbps,
                self.window_bytes,
                self.forecast_packets,
                opt(self.owd_p50_ms),
                opt(self.owd_p95_ms),
                self.malformed,
                self.bad_peers
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
        println!(
            "{} summary: peer {peer}, {} {} {}, confidence {}, {:.1} s (ended by {})",
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
        println!(
            "  sent     {:>12} bytes {:>10.1} kbit/s  {} DATA",
            self.sent_bytes, self.sent_kbps, self.data_sent
        );
        let lost = self
            .peer_data_sent
            .map(|n| format!(" of {n} the peer sent"))
            .unwrap_or_default();
        println!(
            "  received {:>12} bytes {:>10.1} kbit/s  {} DATA{lost}",
            self.received_bytes, self.received_kbps, self.data_received
        );
        println!(
            "  one-way delay ms: p50 {}  p95 {}  p99 {}  mean {}",
            opt(self.owd_p50_ms),
            opt(self.owd_p95_ms),
            opt(self.owd_p99_ms),
            opt(self.owd_mean_ms)
        );
        println!(
            "  datagrams sent {} ({} heartbeats), received {}; malformed {}, bad peers {}, bad messages {}, send errors {}",
            self.datagrams_sent,
            self.heartbeats_sent,
            self.datagrams_received,
            self.malformed,
            self.bad_peers,
            self.bad_messages,
            self.send_errors
        );
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
}

/// Runs the data phase of a session on `ep` (after the handshake) and prints its lines and
/// summary. Returns the summary.
fn run_session(ep: &Arc<Endpoint>, listener: &Listener, plan: &Plan) -> Summary {
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
    print_header(plan.json);
    let end = loop {
        thread::sleep(Duration::from_millis(20));
        let elapsed = start.elapsed();
        let s = ep.stats();
        if elapsed >= duration && !bye_sent {
            if let Some(snd) = sender.take() {
                data_sent = snd.stop(ep);
            }
            send_bye(
                ep,
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
            data_sent = snd.stop(ep);
        }
        let s = ep.stats();
        send_bye(
            ep,
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
    let summary = Summary {
        kind: "summary",
        role: plan.role,
        peer: ep.peer_addr(),
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
        bad_peers: s.bad_peers,
        bad_messages: ib.bad_messages,
        send_errors: s.send_errors,
    };
    summary.print(plan.json);
    summary
}

fn start_plus(secs: u32) -> Duration {
    Duration::from_secs(secs as u64)
}

fn send_bye(ep: &Endpoint, session: u64, data_sent: u64, app_bytes_sent: u64) {
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
        bad_peers: s.bad_peers,
    }
    .print(plan.json);
}

/// Runs `sprout server`.
pub fn server(a: ServerArgs) -> Result<()> {
    let listen = resolve(&a.listen)?;
    let mut announced = false;
    loop {
        let ep = Endpoint::accept(listen, |_, payload| match Message::decode(payload) {
            Ok(Message::Hello(h)) => Some(h.config()),
            _ => None,
        })
        .with_context(|| format!("cannot listen on {listen}"))?;
        let ep = Arc::new(ep);
        if !announced {
            eprintln!("sprout server listening on {}", ep.local_addr());
            announced = true;
        }
        let listener = Listener::start(ep.clone(), true);
        let hello = loop {
            if let Some(h) = listener.inbox().hello {
                break h;
            }
            thread::sleep(Duration::from_millis(10));
        };
        eprintln!(
            "session {:016x} from {}: {} {} {}, {} s",
            hello.session,
            ep.peer_addr().map_or_else(|| "?".into(), |p| p.to_string()),
            hello.scheme.as_str(),
            hello.direction.as_str(),
            match hello.mode {
                Mode::Bulk => "bulk".to_string(),
                Mode::Paced => format!("paced {} kbit/s", hello.rate_kbps),
            },
            hello.duration_ms as f64 / 1000.0
        );
        let plan = Plan {
            role: "server",
            hello,
            sends: hello.direction.server_sends(),
            peer_sends: hello.direction.client_sends(),
            ends_at_duration: false,
            grace: SERVER_GRACE,
            json: a.json,
        };
        let summary = run_session(&ep, &listener, &plan);
        if summary.end == "silence" {
            eprintln!("session {:016x}: the client fell silent", hello.session);
        }
        drop(listener);
        ep.close();
        if a.once {
            return Ok(());
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
    let ep = Endpoint::connect_with_greeting(local, remote, hello.config(), hello.encode())
        .with_context(|| format!("cannot reach {remote} from {local}"))?;
    let ep = Arc::new(ep);
    let listener = Listener::start(ep.clone(), false);
    let wait = HANDSHAKE.min(Duration::from_secs_f64(a.duration));
    let t0 = Instant::now();
    while !listener.inbox().accepted {
        if t0.elapsed() >= wait {
            bail!(
                "no answer from {remote} within {:.1} s: is `sprout server` running there and reachable over UDP?",
                wait.as_secs_f64()
            );
        }
        thread::sleep(Duration::from_millis(10));
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
    let plan = Plan {
        role: "client",
        hello,
        sends: hello.direction.client_sends(),
        peer_sends: hello.direction.server_sends(),
        ends_at_duration: true,
        grace: CLIENT_GRACE,
        json: a.json,
    };
    let summary = run_session(&ep, &listener, &plan);
    drop(listener);
    ep.close();
    if summary.end == "silence" {
        bail!(
            "the server at {remote} fell silent for {} s",
            SILENCE.as_secs()
        );
    }
    Ok(())
}
