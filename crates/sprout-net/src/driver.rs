//! The driver: a background thread that moves datagrams between the UDP socket and the sans-IO
//! [`Connection`], runs its timers, and sleeps in `epoll` until the socket is readable, the
//! connection's next deadline, or an application call wakes it.
//!
//! All protocol state lives in one `State` behind one mutex shared with the application's
//! [`crate::Endpoint`]; the driver holds it only while it processes a batch of events, never
//! while it sleeps.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use mio::net::UdpSocket;
use mio::{Events, Poll, Token};
use sprout_core::{wire, Config, Connection};

use crate::clock::Clock;
use crate::stats::SocketCounters;

/// Token of the UDP socket in the poller.
pub(crate) const SOCKET: Token = Token(0);
/// Token of the application's waker in the poller.
pub(crate) const WAKER: Token = Token(1);

/// Most datagrams read from the socket in one batch before the driver sends and runs timers.
const READ_BATCH: usize = 256;
/// Most datagrams sent in one batch before the driver reads the socket again.
const SEND_BATCH: usize = 256;
/// Largest UDP datagram, in bytes.
const MAX_UDP: usize = 65_536;
/// How long the driver waits before retrying after a socket error, so that a persistent error
/// cannot make it spin.
const ERROR_BACKOFF: Duration = Duration::from_millis(10);
/// Interval between repeats of a client's greeting until the peer answers, in microseconds.
pub const GREETING_INTERVAL_US: u64 = 200_000;

/// Decides, from the first well-formed datagram of an unknown sender (its address and its
/// application payload, empty for a heartbeat), whether to accept that sender as the peer and
/// with which configuration.
pub type Acceptor = Box<dyn FnMut(SocketAddr, &[u8]) -> Option<Config> + Send>;

/// Writes the application's content into a bulk datagram's payload just before it is sent.
pub type BulkWriter = Box<dyn FnMut(&mut [u8]) + Send>;

/// The state shared by the driver thread and the application.
pub(crate) struct State {
    /// The connection, once there is a peer.
    pub conn: Option<Connection>,
    /// Accepts the peer (server side); `None` once the peer is known.
    pub acceptor: Option<Acceptor>,
    /// The peer's address.
    pub peer: Option<SocketAddr>,
    /// Application datagrams sent before the connection exists.
    pub early: VecDeque<Vec<u8>>,
    /// Bytes in `early`.
    pub early_bytes: usize,
    /// Bulk mode requested by the application.
    pub bulk: bool,
    /// Fills bulk payloads, if the application gave a writer.
    pub bulk_writer: Option<BulkWriter>,
    /// Whether received payloads are kept for `recv`.
    pub keep_incoming: bool,
    /// A client's greeting, repeated until the peer's first datagram arrives.
    pub greeting: Option<Vec<u8>>,
    /// When the greeting is next due, in µs on the endpoint's clock.
    pub next_greeting_us: u64,
    /// The driver's counters.
    pub counters: SocketCounters,
    /// When the last datagram from the peer arrived, in µs on the endpoint's clock.
    pub last_received_us: Option<u64>,
    /// Set by the application to stop the driver.
    pub closed: bool,
    /// Set by the driver when it stops.
    pub stopped: bool,
    /// Why the driver stopped, if it was not asked to.
    pub fatal: Option<String>,
}

impl State {
    pub(crate) fn new(
        conn: Option<Connection>,
        peer: Option<SocketAddr>,
        acceptor: Option<Acceptor>,
    ) -> Self {
        State {
            conn,
            acceptor,
            peer,
            early: VecDeque::new(),
            early_bytes: 0,
            bulk: false,
            bulk_writer: None,
            keep_incoming: true,
            greeting: None,
            next_greeting_us: 0,
            counters: SocketCounters::default(),
            last_received_us: None,
            closed: false,
            stopped: false,
            fatal: None,
        }
    }

    /// Application bytes waiting to be sent.
    pub(crate) fn queued_bytes(&self) -> usize {
        self.early_bytes + self.conn.as_ref().map_or(0, |c| c.queued_bytes())
    }

    /// Takes in one datagram from `from` that arrived at `now_us`. Never fails: anything
    /// unexpected is counted and dropped.
    fn on_datagram(&mut self, now_us: u64, from: SocketAddr, data: &[u8]) {
        match self.peer {
            Some(peer) if peer == from => self.deliver(now_us, data),
            Some(_) => self.counters.bad_peers += 1,
            None => {
                let payload = match wire::decode(data) {
                    Ok(d) => d.payload,
                    Err(_) => {
                        self.counters.malformed += 1;
                        return;
                    }
                };
                let config = self.acceptor.as_mut().and_then(|a| a(from, payload));
                let Some(config) = config else {
                    self.counters.unaccepted += 1;
                    return;
                };
                let mut conn = match Connection::new(config, now_us) {
                    Ok(c) => c,
                    Err(_) => {
                        self.counters.unaccepted += 1;
                        return;
                    }
                };
                conn.set_keep_incoming(self.keep_incoming);
                for d in self.early.drain(..) {
                    conn.send(d);
                }
                self.early_bytes = 0;
                self.conn = Some(conn);
                self.peer = Some(from);
                self.acceptor = None;
                self.deliver(now_us, data);
            }
        }
    }

    /// Hands a datagram from the peer to the connection.
    fn deliver(&mut self, now_us: u64, data: &[u8]) {
        self.counters.datagrams_received += 1;
        self.counters.bytes_received += data.len() as u64;
        self.last_received_us = Some(now_us);
        if let Some(conn) = &mut self.conn {
            if conn.handle_datagram(now_us, data).is_err() {
                self.counters.malformed += 1;
            }
        }
    }

    /// Puts the connection in filler mode when the application asked for bulk and nothing it
    /// sent explicitly is waiting (explicit datagrams go first).
    fn sync_bulk(&mut self) -> bool {
        let Some(conn) = &mut self.conn else {
            return false;
        };
        let filler = self.bulk && conn.queued_bytes() == 0;
        conn.set_bulk(filler);
        filler
    }
}

/// The state and the condition variables the application waits on.
pub(crate) struct Shared {
    /// Everything, behind one lock.
    pub state: Mutex<State>,
    /// Notified when application data arrives or the driver stops.
    pub readable: Condvar,
    /// Notified when queued application data leaves or the driver stops.
    pub writable: Condvar,
    /// The endpoint's clock.
    pub clock: Clock,
}

impl Shared {
    /// Locks the state, recovering it if a thread panicked while holding it.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Runs the driver until the application closes the endpoint or the poller fails.
pub(crate) fn run(shared: Arc<Shared>, mut poll: Poll, socket: UdpSocket) {
    let mut events = Events::with_capacity(64);
    let mut rx = vec![0u8; MAX_UDP];
    let mut tx = Vec::with_capacity(2048);
    // A datagram the socket refused with "would block"; sent before anything else.
    let mut blocked: Option<Vec<u8>> = None;
    // Whether the socket may still hold datagrams (epoll is edge-triggered: read until empty).
    let mut more_input = true;
    let mut timeout: Option<Duration> = None;
    loop {
        if !more_input {
            if let Err(e) = poll.poll(&mut events, timeout) {
                if e.kind() != io::ErrorKind::Interrupted {
                    stop(&shared, Some(format!("poll failed: {e}")));
                    return;
                }
            }
            more_input = events
                .iter()
                .any(|ev| ev.token() == SOCKET && ev.is_readable());
        }
        let mut st = shared.lock();
        if st.closed {
            drop(st);
            stop(&shared, None);
            return;
        }
        let now = shared.clock.now_us();
        let app_before = app_bytes(&st);
        let queued_before = st.queued_bytes();
        let mut socket_error = false;

        // Input.
        if more_input {
            more_input = false;
            for i in 0..READ_BATCH {
                match socket.recv_from(&mut rx) {
                    Ok((n, from)) => st.on_datagram(now, from, &rx[..n]),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => {
                        st.counters.recv_errors += 1;
                        socket_error = true;
                        break;
                    }
                }
                if i + 1 == READ_BATCH {
                    more_input = true;
                }
            }
        }

        // Timers and output.
        if let (Some(peer), Some(_)) = (st.peer, st.conn.as_ref()) {
            if let Some(c) = st.conn.as_mut() {
                c.handle_timeout(now);
            }
            if let Some(d) = blocked.take() {
                match socket.send_to(&d, peer) {
                    Ok(n) => count_sent(&mut st, n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => blocked = Some(d),
                    Err(_) => {
                        st.counters.send_errors += 1;
                        socket_error = true;
                    }
                }
            }
            if st.last_received_us.is_some() {
                st.greeting = None;
            }
            if blocked.is_none() && st.greeting.is_some() && now >= st.next_greeting_us {
                st.next_greeting_us = now + GREETING_INTERVAL_US;
                let d = greeting_datagram(now, st.greeting.as_deref().unwrap_or_default());
                match socket.send_to(&d, peer) {
                    Ok(n) => count_sent(&mut st, n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => blocked = Some(d),
                    Err(_) => {
                        st.counters.send_errors += 1;
                        socket_error = true;
                    }
                }
            }
            let mut sent = 0;
            while blocked.is_none() && sent < SEND_BATCH {
                let filler = st.sync_bulk();
                let State {
                    conn, bulk_writer, ..
                } = &mut *st;
                let Some(conn) = conn.as_mut() else { break };
                let Some(t) = conn.poll_transmit(now, &mut tx) else {
                    break;
                };
                if filler && !t.heartbeat && t.app_bytes > 0 {
                    if let Some(w) = bulk_writer.as_mut() {
                        let start = tx.len() - t.app_bytes;
                        w(&mut tx[start..]);
                    }
                }
                sent += 1;
                match socket.send_to(&tx, peer) {
                    Ok(n) => count_sent(&mut st, n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => blocked = Some(tx.clone()),
                    Err(_) => {
                        st.counters.send_errors += 1;
                        socket_error = true;
                    }
                }
            }
            if sent == SEND_BATCH {
                // More may be ready: come straight back after reading the socket.
                more_input = true;
            }
        }

        // Next deadline.
        st.sync_bulk();
        let mut deadline = st.conn.as_mut().and_then(|c| c.poll_timeout());
        if st.greeting.is_some() {
            deadline = Some(deadline.map_or(st.next_greeting_us, |d| d.min(st.next_greeting_us)));
        }
        let now = shared.clock.now_us();
        timeout = deadline.map(|d| Duration::from_micros(d.saturating_sub(now)));
        if socket_error {
            timeout = Some(timeout.map_or(ERROR_BACKOFF, |t| t.min(ERROR_BACKOFF)));
        }
        if blocked.is_some() {
            // Nothing leaves until the socket is writable again (an event wakes the driver);
            // meanwhile a deadline already passed (a heartbeat) must not make it spin.
            timeout = Some(timeout.map_or(ERROR_BACKOFF, |t| t.max(ERROR_BACKOFF)));
        }

        if app_bytes(&st) != app_before {
            shared.readable.notify_all();
        }
        if st.queued_bytes() < queued_before {
            shared.writable.notify_all();
        }
    }
}

/// A stand-alone Sprout datagram carrying `payload`, outside the connection's window and
/// accounting: sequence number 0, no forecast.
fn greeting_datagram(now_us: u64, payload: &[u8]) -> Vec<u8> {
    let header = wire::Header {
        seq: 0,
        throwaway: 0,
        time_to_next_us: 0,
        sent_us: now_us,
        heartbeat: false,
        feedback: None,
    };
    let mut d = Vec::with_capacity(wire::FIXED_HEADER_BYTES + payload.len());
    wire::encode(&header, payload, &mut d);
    d
}

/// Application bytes received so far.
fn app_bytes(st: &State) -> u64 {
    st.conn.as_ref().map_or(0, |c| c.stats().app_bytes_received)
}

fn count_sent(st: &mut State, n: usize) {
    st.counters.datagrams_sent += 1;
    st.counters.bytes_sent += n as u64;
}

/// Marks the driver stopped and wakes every waiting application thread.
fn stop(shared: &Shared, fatal: Option<String>) {
    let mut st = shared.lock();
    st.stopped = true;
    if st.fatal.is_none() {
        st.fatal = fatal;
    }
    drop(st);
    shared.readable.notify_all();
    shared.writable.notify_all();
}
