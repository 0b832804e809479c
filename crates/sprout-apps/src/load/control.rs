//! The bench's control loop: starts the clients on the ramp (and the flood once they are all
//! started), watches each one's phase to its end, and sums up what they did.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde::{Serialize, Serializer};
use sprout_core::direction::Load;
use sprout_net::message::{Hello, Mode};
use sprout_net::realtime_us;
use sprout_net::secure::{ClientConfig, Limits, PrivateKey, PublicKey};

use crate::load::clients::{pace, Client, Connector, Rx};
use crate::load::error::LoadError;
use crate::load::flood::flood;
use crate::load::options::LoadOptions;
use crate::load::procfs::{cpu_seconds, status_field, udp_drops};
use crate::load::shared::lock;
use crate::transfer::{SessionEnd, CLIENT_GRACE, PACED_PAYLOAD, SILENCE};

/// Longest wait for a client's ACCEPT after it starts its handshake (the security layer
/// repeats an unanswered initiation every 250 ms and gives up after 10 s).
const ACCEPT_WAIT: Duration = Duration::from_secs(12);
/// Period of the bench's control loop (starts, ends, progress).
const CONTROL_PERIOD: Duration = Duration::from_millis(20);
/// Period of the receiving thread's sweep over the clients (one-way delays measured at the
/// client include up to this much of the sweep's latency).
const RECV_SWEEP: Duration = Duration::from_millis(5);

/// How a bench client's session ended, as its row says: its session's [`SessionEnd`], or
/// "failed" (no ACCEPT) or "timeout" (the bench's limit ran out before it ended).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientEnd {
    /// The session ran and ended so.
    Session(SessionEnd),
    /// The endpoint could not be opened, or no ACCEPT came.
    Failed,
    /// The bench's limit ran out before the session ended.
    Timeout,
}

impl ClientEnd {
    /// The session's end's name, `"failed"` or `"timeout"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ClientEnd::Session(end) => end.as_str(),
            ClientEnd::Failed => "failed",
            ClientEnd::Timeout => "timeout",
        }
    }
}

impl std::fmt::Display for ClientEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ClientEnd {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Where a client is, on the control thread.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Phase {
    /// Waiting for its start on the ramp.
    Waiting,
    /// Handshake sent, waiting for the ACCEPT.
    Connecting,
    /// Sending and receiving since `start`.
    Running { start: Instant },
    /// Ended for `end`; letting its BYEs leave until `until`.
    Closing { end: SessionEnd, until: Instant },
    /// Over.
    Done { end: ClientEnd },
}

/// What the clients did.
pub(crate) struct ClientsOutcome {
    /// Each client (none if its endpoint could not be opened) and its last phase.
    pub(crate) clients: Vec<(Option<Arc<Client>>, Phase)>,
    /// Bogus handshakes sent.
    pub(crate) flood_sent: u64,
    /// From the first client's start to the last one's end, s.
    pub(crate) run_s: f64,
    /// Sum of the sessions' lengths, s.
    pub(crate) session_s: f64,
    /// Datagrams the kernel dropped at the clients' sockets.
    pub(crate) client_drops: u64,
    /// The server's threads at the peak.
    pub(crate) threads_peak: u64,
}

/// The server under test, as the clients see it.
pub(crate) struct Target {
    /// Its UDP port on 127.0.0.1.
    pub(crate) port: u16,
    /// Its public key.
    pub(crate) key: PublicKey,
    /// Its process id.
    pub(crate) pid: u32,
}

/// Starts the receiving thread: it sweeps every started client's received datagrams.
fn start_receiver(
    list: Arc<Mutex<Vec<Arc<Client>>>>,
    stop: Arc<AtomicBool>,
) -> Result<JoinHandle<()>, LoadError> {
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
        .map_err(|source| LoadError::Thread {
            what: "receiving",
            source,
        })
}

/// Starts the clients on the ramp (and the flood once they are all started), runs them to
/// their ends, and returns what they did.
pub(crate) fn run_clients(
    o: &LoadOptions,
    ramp: f64,
    target: &Target,
) -> Result<ClientsOutcome, LoadError> {
    let duration = Duration::from_secs_f64(o.duration);
    let rate_kbps = o.rate.round() as u32;
    let interval = Duration::from_secs_f64(PACED_PAYLOAD as f64 * 8.0 / (rate_kbps as f64 * 1e3));
    let list: Arc<Mutex<Vec<Arc<Client>>>> = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let receiver = start_receiver(list.clone(), stop.clone())?;
    let (start_tx, start_rx) = mpsc::channel();
    let pacer = thread::Builder::new()
        .name("load pace".into())
        .spawn(move || pace(start_rx, duration, interval))
        .map_err(|source| LoadError::Thread {
            what: "pacing",
            source,
        })?;
    let result = Control::new(o, ramp, target, rate_kbps, &list, start_tx).and_then(Control::run);
    let _ = pacer.join();
    stop.store(true, Ordering::Relaxed);
    let _ = receiver.join();
    result
}

/// The control loop's state.
struct Control<'a> {
    o: &'a LoadOptions,
    /// Seconds between two clients' starts.
    gap: f64,
    duration: Duration,
    server: SocketAddr,
    server_key: PublicKey,
    server_pid: u32,
    rate_kbps: u32,
    /// The clients the receiving thread sweeps.
    list: &'a Mutex<Vec<Arc<Client>>>,
    /// Hands running clients to the pacing thread.
    start_tx: mpsc::Sender<(Arc<Client>, Instant)>,
    connector: Connector,
    start: Instant,
    clients: Vec<(Option<Arc<Client>>, Phase)>,
    next_start: usize,
    flood_thread: Option<JoinHandle<Result<u64, LoadError>>>,
    drops_seen: HashMap<u16, u64>,
    threads_peak: u64,
    session_s: f64,
    end_of_last: Instant,
    session_base: u64,
}

impl<'a> Control<'a> {
    fn new(
        o: &'a LoadOptions,
        ramp: f64,
        target: &Target,
        rate_kbps: u32,
        list: &'a Mutex<Vec<Arc<Client>>>,
        start_tx: mpsc::Sender<(Arc<Client>, Instant)>,
    ) -> Result<Control<'a>, LoadError> {
        let server: SocketAddr = ([127, 0, 0, 1], target.port).into();
        let local: SocketAddr = ([127, 0, 0, 1], 0).into();
        let start = Instant::now();
        Ok(Control {
            o,
            gap: ramp / o.sessions as f64,
            duration: Duration::from_secs_f64(o.duration),
            server,
            server_key: target.key,
            server_pid: target.pid,
            rate_kbps,
            list,
            start_tx,
            connector: Connector::start(server, local, o.client_nice)?,
            start,
            clients: vec![(None, Phase::Waiting); o.sessions],
            next_start: 0,
            flood_thread: None,
            drops_seen: HashMap::new(),
            threads_peak: 0,
            session_s: 0.0,
            end_of_last: start,
            session_base: realtime_us(),
        })
    }

    /// Runs the loop until every client is done or the bench's limit.
    fn run(mut self) -> Result<ClientsOutcome, LoadError> {
        let limit = self.start
            + Duration::from_secs_f64(self.gap * self.o.sessions as f64 + self.o.duration + 30.0);
        let mut last_print = Instant::now();
        let mut last_check = Instant::now();
        loop {
            let now = Instant::now();
            self.start_due(now);
            let check = now.duration_since(last_check) >= Duration::from_secs(1);
            if check {
                last_check = now;
                self.note_drops();
                let threads = status_field(self.server_pid, "Threads:").unwrap_or(0);
                self.threads_peak = self.threads_peak.max(threads);
            }
            self.step_all(now, check)?;
            let busy = self
                .clients
                .iter()
                .filter(|(_, p)| !matches!(p, Phase::Done { .. }))
                .count();
            if busy == 0 || now >= limit {
                break;
            }
            if !self.o.json && now.duration_since(last_print) >= Duration::from_secs(5) {
                last_print = now;
                self.print_progress(busy);
            }
            thread::sleep(CONTROL_PERIOD);
        }
        self.finish()
    }

    /// Starts the clients whose time on the ramp has come, and the flood after the last.
    fn start_due(&mut self, now: Instant) {
        let o = self.o;
        while self.next_start < o.sessions
            && now >= self.start + Duration::from_secs_f64(self.gap * self.next_start as f64)
        {
            self.start_client(self.next_start);
            self.next_start += 1;
        }
        if self.next_start == o.sessions && self.flood_thread.is_none() {
            // The flood runs while every session runs.
            let (server, count, secs) = (self.server, o.flood, (o.duration / 2.0).max(1.0));
            self.flood_thread = Some(thread::spawn(move || flood(server, count, secs)));
        }
    }

    /// Opens client `i`'s endpoint (its handshake carries the HELLO).
    fn start_client(&mut self, i: usize) {
        let hello = Hello {
            session: self.session_base.wrapping_add(i as u64),
            direction: Load::Both,
            mode: Mode::Paced,
            scheme: self.o.scheme,
            confidence: 0.95,
            rate_kbps: self.rate_kbps,
            duration_ms: self.duration.as_millis().min(u32::MAX as u128) as u32,
            payload_bytes: PACED_PAYLOAD as u16,
        };
        let keys = ClientConfig {
            private_key: PrivateKey::generate(),
            server_key: self.server_key,
            limits: Limits::default(),
        };
        let slot = &mut self.clients[i];
        match self.connector.connect(hello, keys) {
            Ok(ep) => {
                let c = Arc::new(Client {
                    ep,
                    hello,
                    started: Instant::now(),
                    rx: Mutex::new(Rx::default()),
                    sent: AtomicU64::new(0),
                    bye_sent: AtomicBool::new(false),
                });
                lock(self.list).push(c.clone());
                *slot = (Some(c), Phase::Connecting);
            }
            Err(e) => {
                if !self.o.json {
                    eprintln!("client {i}: {e}");
                }
                slot.1 = Phase::Done {
                    end: ClientEnd::Failed,
                };
            }
        }
    }

    /// Keeps the highest kernel drop count seen of every UDP socket.
    fn note_drops(&mut self) {
        for (p, d) in udp_drops() {
            let seen = self.drops_seen.entry(p).or_insert(0);
            *seen = d.max(*seen);
        }
    }

    /// Moves every client on from its phase.
    fn step_all(&mut self, now: Instant, check: bool) -> Result<(), LoadError> {
        for (c, phase) in self.clients.iter_mut() {
            let Some(c) = c else { continue };
            match *phase {
                Phase::Waiting | Phase::Done { .. } => {}
                Phase::Connecting => {
                    *phase = connecting(c, &self.start_tx, self.o.json)?;
                }
                Phase::Running { start: t0 } => {
                    let elapsed = now.saturating_duration_since(t0);
                    if let Some(end) = running_end(c, elapsed, self.duration, check) {
                        self.session_s += elapsed.as_secs_f64();
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
                        self.end_of_last = Instant::now();
                        *phase = Phase::Done {
                            end: ClientEnd::Session(end),
                        };
                    }
                }
            }
        }
        Ok(())
    }

    /// The progress line (stderr, every 5 s in text mode).
    fn print_progress(&self, busy: usize) {
        let running = self
            .clients
            .iter()
            .filter(|(_, p)| matches!(p, Phase::Running { .. }))
            .count();
        eprintln!(
            "{:>5.0} s: {running} sessions running, {busy} not done; server CPU {:.1} s, RSS {} KiB",
            self.start.elapsed().as_secs_f64(),
            cpu_seconds(&self.server_pid.to_string()).unwrap_or(0.0),
            status_field(self.server_pid, "VmRSS:").unwrap_or(0)
        );
    }

    /// Closes whatever is still open, waits for the flood, and sums up.
    fn finish(mut self) -> Result<ClientsOutcome, LoadError> {
        self.note_drops();
        // No more clients for the pacing thread: it ends once the running ones have.
        drop(self.start_tx);
        let client_drops = self
            .clients
            .iter()
            .filter_map(|(c, _)| c.as_ref())
            .map(|c| {
                self.drops_seen
                    .get(&c.ep.local_addr().port())
                    .copied()
                    .unwrap_or(0)
            })
            .sum();
        // Whatever is still open at the limit stops here.
        for (c, _) in &self.clients {
            if let Some(c) = c {
                c.ep.close();
            }
        }
        let flood_sent = match self.flood_thread {
            Some(t) => t.join().map_err(|_| LoadError::FloodPanicked)??,
            None => 0,
        };
        Ok(ClientsOutcome {
            clients: self.clients,
            flood_sent,
            run_s: self.end_of_last.duration_since(self.start).as_secs_f64(),
            session_s: self.session_s,
            client_drops,
            threads_peak: self.threads_peak,
        })
    }
}

/// A connecting client's next phase: running from its ACCEPT (handed to the pacing thread),
/// failed, or still connecting.
fn connecting(
    c: &Arc<Client>,
    start_tx: &mpsc::Sender<(Arc<Client>, Instant)>,
    json: bool,
) -> Result<Phase, LoadError> {
    if let Some(t) = lock(&c.rx).accepted_at {
        if start_tx.send((c.clone(), t)).is_err() {
            return Err(LoadError::PacerStopped);
        }
        return Ok(Phase::Running { start: t });
    }
    if c.ep.error().is_some() || !c.ep.is_running() || c.started.elapsed() >= ACCEPT_WAIT {
        if !json {
            eprintln!(
                "client {}: no ACCEPT ({})",
                c.ep.local_addr(),
                c.ep.error().map_or("no answer".into(), |e| e.to_string())
            );
        }
        c.ep.close();
        return Ok(Phase::Done {
            end: ClientEnd::Failed,
        });
    }
    Ok(Phase::Connecting)
}

/// Why a running client's session is over, if it is (silence is checked once a second).
fn running_end(
    c: &Client,
    elapsed: Duration,
    duration: Duration,
    check: bool,
) -> Option<SessionEnd> {
    let bye_sent = c.bye_sent.load(Ordering::Acquire);
    let ended = !c.ep.is_running();
    if ended {
        // The server closes a session once its BYE has left, and its close can overtake the
        // receiving thread: what arrived before the end is read first.
        c.drain();
    }
    // Our BYE was sent (the pacing thread's duration passed, on its own clock) and the
    // server's came: the session ended well, whether or not the server has closed it yet.
    if (elapsed >= duration || ended) && bye_sent && lock(&c.rx).bye.is_some() {
        Some(SessionEnd::Bye)
    } else if ended {
        Some(SessionEnd::Closed)
    } else if elapsed >= duration + CLIENT_GRACE {
        Some(SessionEnd::Duration)
    } else if check
        && elapsed > SILENCE
        && c.ep
            .stats()
            .since_last_received_s
            .is_none_or(|s| s > SILENCE.as_secs_f64())
    {
        Some(SessionEnd::Silence)
    } else {
        None
    }
}
