//! `sprout bench load`: one `sprout server` holding many concurrent sessions on loopback.
//!
//! The server runs as its own process (so its CPU time and memory are its own, read from
//! `/proc`). The clients run inside the bench process, one [`Endpoint`] each (so the forecast
//! tables are built once, and a few shared threads do the application's work instead of
//! several threads per client): they speak `sprout client`'s application protocol
//! ([`sprout_net::message`]) exactly: the HELLO as the handshake's greeting, the server's
//! ACCEPT, a paced stream of timestamped DATA in both directions for the duration, BYE three
//! times with the totals. One pacing thread sends every client's DATA at its due time (a
//! min-heap of next send times); one receiving thread sweeps every client's received
//! datagrams. The clients start spread over a ramp; each session's duration runs from its own
//! ACCEPT. While the sessions run, a flood of bogus handshake initiations (valid header,
//! random body) hits the server's port.
//!
//! At the end every session's delivered DATA messages are checked against what its sender
//! released, each way: downlink released = the server's DATA count (its per-session summary,
//! or its BYE), delivered = DATA the client received; uplink released = the client's DATA
//! sent, delivered = the server's per-session `data_received` (the server's summaries name
//! each session's client by its address, which is the bench's client socket). The server's
//! CPU and memory per session are reported. Exits non-zero when a session was lost or
//! delivered less than `--tolerance` of what was released.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::Serialize;
use serde_json::Value;
use sprout_net::message::{Bye, Data, Direction, Hello, Message, Mode, Scheme};
use sprout_net::secure::{ClientConfig, Limits, PrivateKey, PublicKey};
use sprout_net::{realtime_us, Endpoint};

use crate::net_cmd::{BYE_COPIES, CLIENT_GRACE, PACED_PAYLOAD, SILENCE};

/// Longest wait for a client's ACCEPT after it starts its handshake (the security layer
/// repeats an unanswered initiation every 250 ms and gives up after 10 s).
const ACCEPT_WAIT: Duration = Duration::from_secs(12);
/// Period of the bench's control loop (starts, ends, progress).
const CONTROL_PERIOD: Duration = Duration::from_millis(20);
/// Period of the receiving thread's sweep over the clients (one-way delays measured at the
/// client include up to this much of the sweep's latency).
const RECV_SWEEP: Duration = Duration::from_millis(5);
/// The flood is sent in bursts this far apart.
const FLOOD_BURST: Duration = Duration::from_millis(5);
/// Longest wait for the server's summaries after the last client ended.
const SUMMARY_WAIT: Duration = Duration::from_secs(8);

/// `sprout bench load` arguments.
#[derive(clap::Args)]
pub struct LoadArgs {
    /// Concurrent client sessions.
    #[arg(long, default_value_t = 200)]
    sessions: usize,
    /// Paced application rate of each session, each way, kbit/s (DATA messages of 1000
    /// bytes).
    #[arg(long, default_value_t = 200.0)]
    rate: f64,
    /// Seconds of transfer of each session, from its own start.
    #[arg(long, default_value_t = 60.0)]
    duration: f64,
    /// Bogus handshake initiations sent to the server while the sessions run (after the last
    /// client started, spread over half the duration).
    #[arg(long, default_value_t = 100_000)]
    flood: u64,
    /// Seconds over which the clients start, spread evenly [default: one per 50 ms, at most
    /// 10 s].
    #[arg(long)]
    ramp: Option<f64>,
    /// Least share of the released DATA each session must deliver, each way.
    #[arg(long, default_value_t = 0.98)]
    tolerance: f64,
    /// Nice value of the clients' endpoint threads (0-19): on one machine the load generator
    /// runs as many Sprout connections as the server, and at 19 they give way to the server
    /// under test when the CPUs are short (the server, and the clients' pacing and receiving
    /// threads, keep the bench's own priority).
    #[arg(long, default_value_t = 19, value_parser = clap::value_parser!(i32).range(0..=19))]
    client_nice: i32,
    /// One JSON object (the report) instead of text.
    #[arg(long)]
    json: bool,
}

/// One session's figures.
#[derive(Clone, Debug, Serialize)]
struct SessionRow {
    /// The client's address (the server's summaries name the session by it).
    session: String,
    /// How the client's session ended: "bye" (the server's BYE came), "duration" (the grace
    /// for it ran out), "silence" (nothing from the server for 5 s), "closed" (the endpoint
    /// stopped), "failed" (no ACCEPT), or "timeout" (the bench's limit ran out).
    end: String,
    /// How the server's session ended ("bye": the client's BYE came; null: no summary).
    server_end: Option<String>,
    /// DATA messages the server sent / the client received (downlink).
    down_released: u64,
    down_delivered: u64,
    /// DATA messages the client sent / the server received (uplink).
    up_released: u64,
    up_delivered: u64,
    /// Seconds from the client's start to the server's ACCEPT.
    accept_s: Option<f64>,
    /// Whether the session completed: both BYEs came and each way delivered at least the
    /// tolerance.
    ok: bool,
}

/// The report.
#[derive(Debug, Serialize)]
struct LoadReport {
    sessions: usize,
    rate_kbps: f64,
    duration_s: f64,
    ramp_s: f64,
    /// Sessions whose handshake the server accepted.
    accepted: usize,
    /// Sessions that ended by the peers' BYEs both ways and delivered within tolerance.
    completed: usize,
    /// Sessions that failed, fell silent, or delivered less than the tolerance.
    lost: usize,
    /// The tolerance: least delivered / released share, each way.
    tolerance: f64,
    /// Lowest delivered / released share over the sessions, downlink and uplink.
    min_down_share: f64,
    min_up_share: f64,
    /// Lowest DATA released by a session over what the rate and duration call for, downlink
    /// (the server's senders) and uplink (the bench's pacing): how close to the nominal rate
    /// the streams ran.
    min_down_released_of_nominal: f64,
    min_up_released_of_nominal: f64,
    /// DATA delivered / released over all sessions, each way.
    total_down_share: f64,
    total_up_share: f64,
    /// Slowest ACCEPT after a client's start, s.
    max_accept_s: f64,
    /// Downlink one-way delay over every DATA received, ms (p50, p95, p99; measured at the
    /// client's sweep, so up to 5 ms late).
    down_owd_ms: [f64; 3],
    /// Highest per-session uplink p95 one-way delay the server reported, ms.
    up_owd_p95_max_ms: f64,
    /// Bogus handshakes sent.
    flood_sent: u64,
    /// Server CPU time over the run (user + system), s.
    server_cpu_s: f64,
    /// Server CPU per session: ms of CPU per second of session (server CPU over the sum of
    /// the sessions' lengths).
    server_cpu_ms_per_s_per_session: f64,
    /// Server CPU per second of run, s/s (1.0 is one core busy).
    server_cores: f64,
    /// Server threads at the peak of the run.
    server_threads_peak: u64,
    /// Server resident memory before the clients and at its peak, KiB.
    server_rss_idle_kib: u64,
    server_rss_peak_kib: u64,
    /// (peak - idle) / sessions, KiB.
    server_rss_per_session_kib: f64,
    /// Datagrams the kernel dropped at the server's socket (receive buffer full).
    server_socket_drops: u64,
    /// Datagrams the kernel dropped at the clients' sockets.
    client_socket_drops: u64,
    /// The server's security-layer drop counters, as it reported them (if it did).
    server_drops: Value,
    /// The bench process's CPU (the clients, the flood), s.
    bench_cpu_s: f64,
    /// From the first client's start to the last one's end, s.
    run_s: f64,
    /// Wall time, s.
    wall_s: f64,
    rows: Vec<SessionRow>,
}

/// CPU seconds (user + system) of a process ("self" or a pid), from /proc/PID/stat.
fn cpu_seconds(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Some((utime + stime) / hz.max(1.0))
}

/// A figure of a process from /proc/PID/status (`VmRSS`, `VmHWM` in KiB, `Threads`).
fn status_field(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The kernel's drop counter of every IPv4 UDP socket, by local port (/proc/net/udp).
fn udp_drops() -> HashMap<u16, u64> {
    let Ok(text) = std::fs::read_to_string("/proc/net/udp") else {
        return HashMap::new();
    };
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let port = u16::from_str_radix(f.get(1)?.rsplit(':').next()?, 16).ok()?;
            let drops: u64 = f.last()?.parse().ok()?;
            Some((port, drops))
        })
        .collect()
}

/// A free UDP port on 127.0.0.1.
fn free_port() -> Result<u16> {
    let s = UdpSocket::bind("127.0.0.1:0").context("finding a free UDP port")?;
    Ok(s.local_addr()?.port())
}

/// Keeps a child's stdout lines of type "summary" (JSON) in a shared list, on a thread.
fn collect_summaries(child: &mut Child) -> Arc<Mutex<Vec<Value>>> {
    let lines = Arc::new(Mutex::new(Vec::new()));
    if let Some(out) = child.stdout.take() {
        let lines = lines.clone();
        thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(|l| l.ok()) {
                // Skip the per-second lines without parsing them.
                if !line.contains("\"summary\"") {
                    continue;
                }
                let Ok(v) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if v.get("type").and_then(Value::as_str) == Some("summary") {
                    lock(&lines).push(v);
                }
            }
        });
    }
    lines
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn u64_of(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

/// Sends `count` bogus handshake initiations to `to`, evenly over `seconds` (in bursts every
/// [`FLOOD_BURST`]).
fn flood(to: SocketAddr, count: u64, seconds: f64) -> Result<u64> {
    let sock = UdpSocket::bind("127.0.0.1:0").context("binding the flood's socket")?;
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut buf = vec![0u8; 8 + 32 + 48 + 32 + 16];
    let start = Instant::now();
    let mut sent = 0;
    let mut i = 0u64;
    while i < count {
        // As many as are due by now.
        let due_by = (start.elapsed().as_secs_f64() / seconds.max(1e-3) * count as f64).ceil();
        let due = (due_by as u64).clamp(i + 1, count);
        while i < due {
            // Magic, version 2, type 1 (initiation), reserved; the rest random (xorshift:
            // this only needs to look random to the server, not to resist analysis).
            buf[..4].copy_from_slice(&[0x53, 2, 1, 0]);
            for b in buf[4..].iter_mut() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                *b = state as u8;
            }
            if sock.send_to(&buf, to).is_ok() {
                sent += 1;
            }
            i += 1;
        }
        if i < count {
            thread::sleep(FLOOD_BURST);
        }
    }
    Ok(sent)
}

/// What the receiving thread has seen of one client's session.
#[derive(Default)]
struct Rx {
    /// When the server's ACCEPT (or its first DATA) came.
    accepted_at: Option<Instant>,
    data_received: u64,
    /// The server's BYE.
    bye: Option<Bye>,
    /// One-way delays of the DATA received, ms.
    delays_ms: Vec<f32>,
    bad_messages: u64,
}

/// One in-process client.
struct Client {
    ep: Endpoint,
    hello: Hello,
    started: Instant,
    rx: Mutex<Rx>,
    /// DATA messages sent so far (the pacing thread's count).
    sent: AtomicU64,
    /// Whether the pacing thread has sent the BYEs.
    bye_sent: AtomicBool,
}

impl Client {
    /// Takes every datagram waiting at the client (the receiving thread).
    fn drain(&self) {
        let mut rx: Option<MutexGuard<'_, Rx>> = None;
        while let Some(d) = self.ep.try_recv() {
            let rx = rx.get_or_insert_with(|| lock(&self.rx));
            match Message::decode(&d) {
                Ok(Message::Data(m)) => {
                    let owd_ms = (realtime_us() as i64 - m.sent_us as i64) as f64 / 1000.0;
                    rx.delays_ms.push(owd_ms as f32);
                    rx.data_received += 1;
                    rx.accepted_at.get_or_insert_with(Instant::now);
                }
                Ok(Message::Accept(_)) => {
                    rx.accepted_at.get_or_insert_with(Instant::now);
                }
                Ok(Message::Bye(b)) => rx.bye = Some(b),
                Ok(Message::Filler | Message::Hello(_)) => {}
                Err(_) => rx.bad_messages += 1,
            }
        }
    }
}

/// A client's paced stream, on the pacing thread.
struct Paced {
    client: Arc<Client>,
    /// The session's start (the ACCEPT).
    start: Instant,
    /// The next DATA's due time.
    next: Instant,
    seq: u64,
}

/// The pacing thread: sends every running client's DATA at its due time, then its BYEs at
/// the end of its duration, as `sprout client`'s paced sender does (one DATA every
/// `interval`; after a stall of more than a second it does not burst to catch up).
fn pace(starts: mpsc::Receiver<(Arc<Client>, Instant)>, duration: Duration, interval: Duration) {
    let mut paced: Vec<Paced> = Vec::new();
    let mut heap: BinaryHeap<Reverse<(Instant, usize)>> = BinaryHeap::new();
    let mut open = true;
    while open || !heap.is_empty() {
        let wait = heap
            .peek()
            .map_or(Duration::from_millis(100), |Reverse((t, _))| {
                t.saturating_duration_since(Instant::now())
            });
        if open {
            match starts.recv_timeout(wait) {
                Ok((client, start)) => {
                    heap.push(Reverse((start, paced.len())));
                    paced.push(Paced {
                        client,
                        start,
                        next: start,
                        seq: 0,
                    });
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => open = false,
            }
        } else {
            thread::sleep(wait);
        }
        let now = Instant::now();
        while let Some(&Reverse((t, i))) = heap.peek() {
            if t > now {
                break;
            }
            heap.pop();
            let p = &mut paced[i];
            let c = &p.client;
            let end = p.start + duration;
            if now >= end || !c.ep.is_running() {
                let bye = Bye {
                    session: c.hello.session,
                    data_sent: p.seq,
                    app_bytes_sent: c.ep.stats().app_bytes_sent,
                };
                for _ in 0..BYE_COPIES {
                    c.ep.send(bye.encode());
                }
                c.bye_sent.store(true, Ordering::Release);
                continue;
            }
            let m = Data {
                seq: p.seq,
                sent_us: realtime_us(),
            };
            c.ep.send(m.encode(c.hello.payload_bytes as usize));
            p.seq += 1;
            c.sent.store(p.seq, Ordering::Release);
            p.next += interval;
            if now > p.next + Duration::from_secs(1) {
                p.next = now;
            }
            heap.push(Reverse((p.next.min(end), i)));
        }
    }
}

/// Opens the clients' endpoints on a thread of its own, whose nice value their driver threads
/// inherit (on Linux a thread's nice value is its own and new threads take their creator's):
/// the endpoints' drivers run as many Sprout connections as the server does, and at a high
/// nice value they give way to the server under test when the CPUs are short, while the
/// bench's pacing, receiving and control threads keep the bench's priority.
struct Connector {
    requests: mpsc::Sender<(Hello, ClientConfig)>,
    answers: mpsc::Receiver<Result<Endpoint, sprout_net::NetError>>,
}

impl Connector {
    fn start(server: SocketAddr, local: SocketAddr, nice: i32) -> Result<Connector> {
        let (requests, rx) = mpsc::channel::<(Hello, ClientConfig)>();
        let (tx, answers) = mpsc::channel();
        thread::Builder::new()
            .name("load connect".into())
            .spawn(move || {
                // SAFETY: setpriority with who = 0 (this thread) has no memory-safety
                // preconditions. Failure leaves the bench's priority.
                unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
                for (hello, keys) in rx {
                    let ep =
                        Endpoint::connect(local, server, keys, hello.config(), &hello.encode());
                    if tx.send(ep).is_err() {
                        break;
                    }
                }
            })
            .context("starting the connecting thread")?;
        Ok(Connector { requests, answers })
    }

    /// A client endpoint for `hello` with `keys`.
    fn connect(&self, hello: Hello, keys: ClientConfig) -> Result<Endpoint> {
        self.requests
            .send((hello, keys))
            .map_err(|_| anyhow::anyhow!("the connecting thread stopped"))?;
        Ok(self
            .answers
            .recv()
            .map_err(|_| anyhow::anyhow!("the connecting thread stopped"))??)
    }
}

/// Where a client is, on the control thread.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    /// Waiting for its start on the ramp.
    Waiting,
    /// Handshake sent, waiting for the ACCEPT.
    Connecting,
    /// Sending and receiving since `start`.
    Running { start: Instant },
    /// Ended for `end`; letting its BYEs leave until `until`.
    Closing { end: &'static str, until: Instant },
    /// Over.
    Done { end: &'static str },
}

/// What the clients did.
struct ClientsOutcome {
    clients: Vec<(Option<Arc<Client>>, Phase)>,
    flood_sent: u64,
    run_s: f64,
    /// Sum of the sessions' lengths, s.
    session_s: f64,
    client_drops: u64,
    threads_peak: u64,
}

/// Runs `sprout bench load`.
pub fn run(a: LoadArgs) -> Result<()> {
    if a.sessions == 0 || !(a.duration > 0.0 && a.duration * 1000.0 <= u32::MAX as f64) {
        bail!("--sessions and --duration must be positive");
    }
    if !(a.rate >= 1.0 && a.rate <= u32::MAX as f64) {
        bail!("--rate must be at least 1 kbit/s, got {}", a.rate);
    }
    if !(a.tolerance >= 0.0 && a.tolerance <= 1.0) {
        bail!("--tolerance must be between 0 and 1, got {}", a.tolerance);
    }
    let ramp = a.ramp.unwrap_or((a.sessions as f64 * 0.05).min(10.0));
    if !(ramp.is_finite() && ramp >= 0.0) {
        bail!("--ramp must be a number of seconds, 0 or more, got {ramp}");
    }
    let exe = std::env::current_exe().context("finding the sprout binary")?;
    let dir = tempfile::tempdir().context("creating a temporary folder for the keys")?;
    let key_file = dir.path().join("server.key");
    let key = PrivateKey::generate();
    key.write_file(&key_file)?;
    let server_key = key.public_key();
    let port = free_port()?;
    let listen = format!("127.0.0.1:{port}");
    let started = Instant::now();

    let mut server = Command::new(&exe)
        .args([
            "server",
            "--json",
            "--listen",
            &listen,
            "--allow-any-client",
        ])
        .arg("--key")
        .arg(&key_file)
        .args(["--max-sessions", &(a.sessions + 16).to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("starting `sprout server`")?;
    let server_pid = server.id();
    let summaries = collect_summaries(&mut server);
    thread::sleep(Duration::from_millis(500));
    if let Some(s) = server.try_wait()? {
        bail!("`sprout server` exited at once ({s})");
    }
    let rss_idle = status_field(server_pid, "VmRSS:").unwrap_or(0);
    let cpu_before = cpu_seconds(&server_pid.to_string()).unwrap_or(0.0);
    let bench_cpu_before = cpu_seconds("self").unwrap_or(0.0);

    let outcome = run_clients(&a, ramp, server_key, port, server_pid);
    let cpu_after = cpu_seconds(&server_pid.to_string()).unwrap_or(cpu_before);
    let rss_peak = status_field(server_pid, "VmHWM:").unwrap_or(0);
    let bench_cpu = cpu_seconds("self").unwrap_or(bench_cpu_before) - bench_cpu_before;
    let server_socket_drops = udp_drops().get(&port).copied().unwrap_or(0);
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            let _ = server.kill();
            let _ = server.wait();
            return Err(e);
        }
    };
    // Wait for the server's summaries of the sessions that just ended, then stop it.
    let accepted: Vec<String> = outcome
        .clients
        .iter()
        .filter(|(_, p)| !matches!(p, Phase::Done { end: "failed" }))
        .filter_map(|(c, _)| Some(c.as_ref()?.ep.local_addr().to_string()))
        .collect();
    let deadline = Instant::now() + SUMMARY_WAIT;
    while Instant::now() < deadline {
        let have: Vec<String> = lock(&summaries)
            .iter()
            .filter_map(|v| Some(v.get("peer")?.as_str()?.to_string()))
            .collect();
        if accepted.iter().all(|p| have.contains(p)) {
            break;
        }
        thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: kill with a valid pid and signal has no memory-safety preconditions.
    unsafe {
        libc::kill(server_pid as i32, libc::SIGINT);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.try_wait()?.is_none() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(50));
    }
    let _ = server.kill();
    let _ = server.wait();

    let summaries = lock(&summaries).clone();
    let by_peer: HashMap<String, &Value> = summaries
        .iter()
        .filter_map(|v| Some((v.get("peer")?.as_str()?.to_string(), v)))
        .collect();
    // Each summary carries the server-wide drop counters at its end; the largest is the
    // latest.
    let server_drops = summaries
        .iter()
        .filter_map(|v| v.get("drops"))
        .max_by_key(|d| {
            d.as_object()
                .map_or(0, |o| o.values().filter_map(Value::as_u64).sum::<u64>())
        })
        .cloned()
        .unwrap_or(Value::Null);

    let mut rows = Vec::new();
    let mut delays: Vec<f32> = Vec::new();
    let mut up_owd_p95_max_ms = 0f64;
    for (c, phase) in &outcome.clients {
        let end = match phase {
            Phase::Done { end } => *end,
            _ => "timeout",
        };
        let Some(c) = c else {
            rows.push(SessionRow {
                session: "-".into(),
                end: "failed".into(),
                server_end: None,
                down_released: 0,
                down_delivered: 0,
                up_released: 0,
                up_delivered: 0,
                accept_s: None,
                ok: false,
            });
            continue;
        };
        let session = c.ep.local_addr().to_string();
        let s = by_peer.get(&session);
        let rx = lock(&c.rx);
        delays.extend_from_slice(&rx.delays_ms);
        if let Some(p95) = s.and_then(|s| s.get("owd_p95_ms")).and_then(Value::as_f64) {
            up_owd_p95_max_ms = up_owd_p95_max_ms.max(p95);
        }
        rows.push(SessionRow {
            end: end.to_string(),
            server_end: s
                .and_then(|s| s.get("end"))
                .and_then(Value::as_str)
                .map(str::to_string),
            down_released: s
                .and_then(|s| u64_of(s, "data_sent"))
                .or(rx.bye.map(|b| b.data_sent))
                .unwrap_or(0),
            down_delivered: rx.data_received,
            up_released: c.sent.load(Ordering::Acquire),
            up_delivered: s.and_then(|s| u64_of(s, "data_received")).unwrap_or(0),
            accept_s: rx.accepted_at.map(|t| {
                (t.saturating_duration_since(c.started).as_secs_f64() * 1e3).round() / 1e3
            }),
            session,
            ok: false,
        });
    }
    delays.sort_by(f32::total_cmp);
    let quantile = |p: f64| -> f64 {
        if delays.is_empty() {
            return f64::NAN;
        }
        let i = ((p * delays.len() as f64).ceil() as usize).clamp(1, delays.len()) - 1;
        (delays[i] as f64 * 1000.0).round() / 1000.0
    };
    let share = |d: u64, r: u64| if r == 0 { 0.0 } else { d as f64 / r as f64 };
    let ok = |r: &SessionRow| {
        r.end == "bye"
            && r.server_end.as_deref() == Some("bye")
            && share(r.down_delivered, r.down_released) >= a.tolerance
            && share(r.up_delivered, r.up_released) >= a.tolerance
    };
    for r in rows.iter_mut() {
        r.ok = ok(r);
    }
    let completed = rows.iter().filter(|r| r.ok).count();
    let min_of = |f: &dyn Fn(&SessionRow) -> f64| rows.iter().map(f).fold(f64::INFINITY, f64::min);
    let sum_of = |f: &dyn Fn(&SessionRow) -> u64| rows.iter().map(f).sum::<u64>();
    let server_cpu_s = cpu_after - cpu_before;
    // DATA messages a session's sender releases over the duration at the nominal rate.
    let nominal = (a.duration * a.rate.round() * 1000.0 / (8.0 * PACED_PAYLOAD as f64)).max(1.0);
    let report = LoadReport {
        sessions: a.sessions,
        rate_kbps: a.rate,
        duration_s: a.duration,
        ramp_s: ramp,
        accepted: rows.iter().filter(|r| r.accept_s.is_some()).count(),
        completed,
        lost: a.sessions - completed,
        tolerance: a.tolerance,
        min_down_share: min_of(&|r| share(r.down_delivered, r.down_released)),
        min_up_share: min_of(&|r| share(r.up_delivered, r.up_released)),
        min_down_released_of_nominal: min_of(&|r| r.down_released as f64) / nominal,
        min_up_released_of_nominal: min_of(&|r| r.up_released as f64) / nominal,
        total_down_share: share(sum_of(&|r| r.down_delivered), sum_of(&|r| r.down_released)),
        total_up_share: share(sum_of(&|r| r.up_delivered), sum_of(&|r| r.up_released)),
        max_accept_s: rows.iter().filter_map(|r| r.accept_s).fold(0.0, f64::max),
        down_owd_ms: [quantile(0.5), quantile(0.95), quantile(0.99)],
        up_owd_p95_max_ms,
        flood_sent: outcome.flood_sent,
        server_cpu_s,
        server_cpu_ms_per_s_per_session: server_cpu_s * 1000.0 / outcome.session_s.max(1e-3),
        server_cores: server_cpu_s / outcome.run_s.max(1e-3),
        server_threads_peak: outcome.threads_peak,
        server_rss_idle_kib: rss_idle,
        server_rss_peak_kib: rss_peak,
        server_rss_per_session_kib: rss_peak.saturating_sub(rss_idle) as f64 / a.sessions as f64,
        server_socket_drops,
        client_socket_drops: outcome.client_drops,
        server_drops,
        bench_cpu_s: bench_cpu,
        run_s: outcome.run_s,
        wall_s: started.elapsed().as_secs_f64(),
        rows,
    };
    print_report(&report, a.json)?;
    if report.lost > 0 {
        bail!(
            "{} of {} sessions were lost or delivered less than {:.0}% of what was released",
            report.lost,
            report.sessions,
            a.tolerance * 100.0
        );
    }
    Ok(())
}

/// Starts the clients on the ramp (and the flood once they are all started), runs them to
/// their ends, and returns what they did.
fn run_clients(
    a: &LoadArgs,
    ramp: f64,
    server_key: PublicKey,
    port: u16,
    server_pid: u32,
) -> Result<ClientsOutcome> {
    let server: SocketAddr = ([127, 0, 0, 1], port).into();
    let local: SocketAddr = ([127, 0, 0, 1], 0).into();
    let duration = Duration::from_secs_f64(a.duration);
    let rate_kbps = a.rate.round() as u32;
    let interval = Duration::from_secs_f64(PACED_PAYLOAD as f64 * 8.0 / (rate_kbps as f64 * 1e3));
    let gap = ramp / a.sessions as f64;

    // The receiving thread sweeps every started client.
    let list: Arc<Mutex<Vec<Arc<Client>>>> = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let receiver = {
        let (list, stop) = (list.clone(), stop.clone());
        thread::Builder::new()
            .name("load receive".into())
            .spawn(move || {
                let mut clients: Vec<Arc<Client>> = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    {
                        let l = lock(&list);
                        if l.len() != clients.len() {
                            clients = l.clone();
                        }
                    }
                    for c in &clients {
                        c.drain();
                    }
                    thread::sleep(RECV_SWEEP);
                }
            })
            .context("starting the receiving thread")?
    };
    let (start_tx, start_rx) = mpsc::channel();
    let pacer = thread::Builder::new()
        .name("load pace".into())
        .spawn(move || pace(start_rx, duration, interval))
        .context("starting the pacing thread")?;

    let result = control(
        a, gap, duration, server, local, server_key, rate_kbps, server_pid, &list, start_tx,
    );
    let _ = pacer.join();
    stop.store(true, Ordering::Relaxed);
    let _ = receiver.join();
    result
}

/// The control loop: starts, ACCEPTs, ends, progress.
#[allow(clippy::too_many_arguments)]
fn control(
    a: &LoadArgs,
    gap: f64,
    duration: Duration,
    server: SocketAddr,
    local: SocketAddr,
    server_key: PublicKey,
    rate_kbps: u32,
    server_pid: u32,
    list: &Mutex<Vec<Arc<Client>>>,
    start_tx: mpsc::Sender<(Arc<Client>, Instant)>,
) -> Result<ClientsOutcome> {
    let start = Instant::now();
    let mut clients: Vec<(Option<Arc<Client>>, Phase)> = vec![(None, Phase::Waiting); a.sessions];
    let mut next_start = 0usize;
    let mut flood_thread = None;
    let limit = start + Duration::from_secs_f64(gap * a.sessions as f64 + a.duration + 30.0);
    let mut last_print = Instant::now();
    let mut last_check = Instant::now();
    let connector = Connector::start(server, local, a.client_nice)?;
    let mut drops_seen: HashMap<u16, u64> = HashMap::new();
    let mut threads_peak = 0;
    let mut session_s = 0.0;
    let mut end_of_last = start;
    let session_base = realtime_us();
    loop {
        let now = Instant::now();
        // Starts on the ramp.
        while next_start < a.sessions
            && now >= start + Duration::from_secs_f64(gap * next_start as f64)
        {
            let hello = Hello {
                session: session_base.wrapping_add(next_start as u64),
                direction: Direction::Both,
                mode: Mode::Paced,
                scheme: Scheme::Sprout,
                confidence: 0.95,
                rate_kbps,
                duration_ms: duration.as_millis().min(u32::MAX as u128) as u32,
                payload_bytes: PACED_PAYLOAD as u16,
            };
            let keys = ClientConfig {
                private_key: PrivateKey::generate(),
                server_key,
                limits: Limits::default(),
            };
            let slot = &mut clients[next_start];
            match connector.connect(hello, keys) {
                Ok(ep) => {
                    let c = Arc::new(Client {
                        ep,
                        hello,
                        started: Instant::now(),
                        rx: Mutex::new(Rx::default()),
                        sent: AtomicU64::new(0),
                        bye_sent: AtomicBool::new(false),
                    });
                    lock(list).push(c.clone());
                    *slot = (Some(c), Phase::Connecting);
                }
                Err(e) => {
                    if !a.json {
                        eprintln!("client {next_start}: {e}");
                    }
                    slot.1 = Phase::Done { end: "failed" };
                }
            }
            next_start += 1;
        }
        if next_start == a.sessions && flood_thread.is_none() {
            // The flood runs while every session runs.
            let (count, secs) = (a.flood, (a.duration / 2.0).max(1.0));
            flood_thread = Some(thread::spawn(move || flood(server, count, secs)));
        }

        let check = now.duration_since(last_check) >= Duration::from_secs(1);
        if check {
            last_check = now;
            for (p, d) in udp_drops() {
                drops_seen.insert(p, d.max(drops_seen.get(&p).copied().unwrap_or(0)));
            }
            threads_peak = threads_peak.max(status_field(server_pid, "Threads:").unwrap_or(0));
        }
        for (c, phase) in clients.iter_mut() {
            let Some(c) = c else { continue };
            match *phase {
                Phase::Waiting | Phase::Done { .. } => {}
                Phase::Connecting => {
                    if let Some(t) = lock(&c.rx).accepted_at {
                        *phase = Phase::Running { start: t };
                        if start_tx.send((c.clone(), t)).is_err() {
                            bail!("the pacing thread stopped");
                        }
                    } else if c.ep.error().is_some()
                        || !c.ep.is_running()
                        || c.started.elapsed() >= ACCEPT_WAIT
                    {
                        if !a.json {
                            eprintln!(
                                "client {}: no ACCEPT ({})",
                                c.ep.local_addr(),
                                c.ep.error().map_or("no answer".into(), |e| e.to_string())
                            );
                        }
                        c.ep.close();
                        *phase = Phase::Done { end: "failed" };
                    }
                }
                Phase::Running { start: t0 } => {
                    let elapsed = now.saturating_duration_since(t0);
                    let bye_sent = c.bye_sent.load(Ordering::Acquire);
                    let end = if !c.ep.is_running() {
                        Some("closed")
                    } else if elapsed >= duration && bye_sent && lock(&c.rx).bye.is_some() {
                        Some("bye")
                    } else if elapsed >= duration + CLIENT_GRACE {
                        Some("duration")
                    } else if check
                        && elapsed > SILENCE
                        && c.ep
                            .stats()
                            .since_last_received_s
                            .is_none_or(|s| s > SILENCE.as_secs_f64())
                    {
                        Some("silence")
                    } else {
                        None
                    };
                    if let Some(end) = end {
                        session_s += elapsed.as_secs_f64();
                        // Let the BYEs leave (the window permitting), as `sprout client` does.
                        *phase = Phase::Closing {
                            end,
                            until: now + Duration::from_secs(1),
                        };
                    }
                }
                Phase::Closing { end, until } => {
                    if c.ep.queued_bytes() == 0 || now >= until {
                        c.ep.close();
                        end_of_last = Instant::now();
                        *phase = Phase::Done { end };
                    }
                }
            }
        }
        let busy = clients
            .iter()
            .filter(|(_, p)| !matches!(p, Phase::Done { .. }))
            .count();
        if busy == 0 || now >= limit {
            break;
        }
        if !a.json && now.duration_since(last_print) >= Duration::from_secs(5) {
            last_print = now;
            let running = clients
                .iter()
                .filter(|(_, p)| matches!(p, Phase::Running { .. }))
                .count();
            eprintln!(
                "{:>5.0} s: {running} sessions running, {busy} not done; server CPU {:.1} s, RSS {} KiB",
                start.elapsed().as_secs_f64(),
                cpu_seconds(&server_pid.to_string()).unwrap_or(0.0),
                status_field(server_pid, "VmRSS:").unwrap_or(0)
            );
        }
        thread::sleep(CONTROL_PERIOD);
    }
    drop(start_tx);
    for (p, d) in udp_drops() {
        drops_seen.insert(p, d.max(drops_seen.get(&p).copied().unwrap_or(0)));
    }
    let client_drops = clients
        .iter()
        .filter_map(|(c, _)| c.as_ref())
        .map(|c| {
            drops_seen
                .get(&c.ep.local_addr().port())
                .copied()
                .unwrap_or(0)
        })
        .sum();
    // Whatever is still open at the limit stops here.
    for (c, _) in &clients {
        if let Some(c) = c {
            c.ep.close();
        }
    }
    let flood_sent = match flood_thread {
        Some(t) => t
            .join()
            .map_err(|_| anyhow::anyhow!("the flood thread panicked"))??,
        None => 0,
    };
    Ok(ClientsOutcome {
        clients,
        flood_sent,
        run_s: end_of_last.duration_since(start).as_secs_f64(),
        session_s,
        client_drops,
        threads_peak,
    })
}

fn print_report(r: &LoadReport, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(r)?);
        return Ok(());
    }
    println!(
        "sprout bench load: {} sessions on one `sprout server`, paced {} kbit/s each way, {} s each (started over {} s), {} bogus handshakes",
        r.sessions, r.rate_kbps, r.duration_s, r.ramp_s, r.flood_sent
    );
    println!(
        "  sessions accepted {}, completed {} of {} (lost {}); slowest ACCEPT {:.3} s",
        r.accepted, r.completed, r.sessions, r.lost, r.max_accept_s
    );
    println!(
        "  delivered/released DATA: lowest session down {:.4}, up {:.4}; all sessions down {:.4}, up {:.4} (tolerance {})",
        r.min_down_share, r.min_up_share, r.total_down_share, r.total_up_share, r.tolerance
    );
    println!(
        "  released DATA of the nominal rate: lowest session down {:.4}, up {:.4}",
        r.min_down_released_of_nominal, r.min_up_released_of_nominal
    );
    println!(
        "  one-way delay down ms: p50 {:.1} p95 {:.1} p99 {:.1}; worst session's uplink p95 {:.1}",
        r.down_owd_ms[0], r.down_owd_ms[1], r.down_owd_ms[2], r.up_owd_p95_max_ms
    );
    println!(
        "  server CPU {:.2} s over {:.1} s ({:.2} cores; {:.3} ms per second per session), {} threads at peak",
        r.server_cpu_s, r.run_s, r.server_cores, r.server_cpu_ms_per_s_per_session, r.server_threads_peak
    );
    println!(
        "  server RSS idle {} KiB, peak {} KiB ({:.1} KiB per session)",
        r.server_rss_idle_kib, r.server_rss_peak_kib, r.server_rss_per_session_kib
    );
    println!("  server drops: {}", r.server_drops);
    println!(
        "  kernel UDP drops: server socket {}, client sockets {}",
        r.server_socket_drops, r.client_socket_drops
    );
    println!(
        "  bench (clients, flood) CPU {:.1} s; wall {:.1} s",
        r.bench_cpu_s, r.wall_s
    );
    for row in r.rows.iter().filter(|row| !row.ok) {
        println!(
            "  lost {}: client end {}, server end {}, down {}/{}, up {}/{}",
            row.session,
            row.end,
            row.server_end.as_deref().unwrap_or("-"),
            row.down_delivered,
            row.down_released,
            row.up_delivered,
            row.up_released
        );
    }
    Ok(())
}
