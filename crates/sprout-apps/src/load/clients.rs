//! The in-process clients: their endpoints (opened on a low-priority thread), the receiving
//! thread's sweep, and the pacing thread.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use sprout_net::message::{Bye, Data, Hello, Message};
use sprout_net::secure::ClientConfig;
use sprout_net::{realtime_us, Endpoint};

use crate::load::error::LoadError;
use crate::load::shared::lock;
use crate::transfer::BYE_COPIES;

/// What the receiving thread has seen of one client's session.
#[derive(Default)]
pub(crate) struct Rx {
    /// When the server's ACCEPT (or its first DATA) came.
    pub(crate) accepted_at: Option<Instant>,
    pub(crate) data_received: u64,
    /// The server's BYE.
    pub(crate) bye: Option<Bye>,
    /// One-way delays of the DATA received, ms.
    pub(crate) delays_ms: Vec<f32>,
    pub(crate) bad_messages: u64,
}

/// One in-process client.
pub(crate) struct Client {
    pub(crate) ep: Endpoint,
    pub(crate) hello: Hello,
    pub(crate) started: Instant,
    pub(crate) rx: Mutex<Rx>,
    /// DATA messages sent so far (the pacing thread's count).
    pub(crate) sent: AtomicU64,
    /// Whether the pacing thread has sent the BYEs.
    pub(crate) bye_sent: AtomicBool,
}

impl Client {
    /// Takes every datagram waiting at the client (the receiving thread).
    pub(crate) fn drain(&self) {
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
pub(crate) fn pace(
    starts: mpsc::Receiver<(Arc<Client>, Instant)>,
    duration: Duration,
    interval: Duration,
) {
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
pub(crate) struct Connector {
    requests: mpsc::Sender<(Hello, ClientConfig)>,
    answers: mpsc::Receiver<Result<Endpoint, sprout_net::NetError>>,
}

impl Connector {
    pub(crate) fn start(
        server: SocketAddr,
        local: SocketAddr,
        nice: i32,
    ) -> Result<Connector, LoadError> {
        let (requests, rx) = mpsc::channel::<(Hello, ClientConfig)>();
        let (tx, answers) = mpsc::channel();
        thread::Builder::new()
            .name("load connect".into())
            .spawn(move || {
                // Failure leaves the bench's priority.
                let _ = sprout_os::sched::set_nice(nice);
                for (hello, keys) in rx {
                    let ep =
                        Endpoint::connect(local, server, keys, hello.config(), &hello.encode());
                    if tx.send(ep).is_err() {
                        break;
                    }
                }
            })
            .map_err(|source| LoadError::Thread {
                what: "connecting",
                source,
            })?;
        Ok(Connector { requests, answers })
    }

    /// A client endpoint for `hello` with `keys`.
    pub(crate) fn connect(&self, hello: Hello, keys: ClientConfig) -> Result<Endpoint, LoadError> {
        self.requests
            .send((hello, keys))
            .map_err(|_| LoadError::ConnectorStopped)?;
        Ok(self
            .answers
            .recv()
            .map_err(|_| LoadError::ConnectorStopped)??)
    }
}
