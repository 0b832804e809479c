//! [`Listener`]: the server side of many secure Sprout sessions on one UDP socket, sans-IO, in
//! safe Rust (the Python transport's `serve` drives it; [`crate::conn::Conn`]'s server side
//! serves one session). The application feeds it each datagram with its source address and the
//! current time, and takes back addressed datagrams to send, the next deadline, new sessions
//! to accept and, per session, messages with their send time, the window, the forecast and
//! counters.
//!
//! It is built from the pieces the runtime of sprout-net uses, unchanged: one sprout-secure
//! [`Server`] (handshakes, sealing, rate limits, the caps of sessions per source and per key,
//! idle timeouts) and one sprout-core [`Connection`] per session. A session's configuration
//! is the one its client's greeting asks for when that is a HELLO of `sprout client`
//! ([`sprout_net::message::Hello::config`]), else [`Config::default`], what
//! [`crate::conn::Conn`]'s client side runs. Application messages are DATA messages
//! ([`sprout_net::message`]), as [`crate::conn::Conn`] sends them.
//!
//! State is bounded: the security layer caps the live sessions
//! ([`ListenerOptions::max_sessions`] and the caps per source and per key); at most
//! [`ListenerOptions::accept_backlog`] sessions wait for [`Listener::accept`] (beyond, a new
//! session is closed at once and counted as refused); a session's received messages are
//! capped by its connection's `max_incoming_bytes`; an ended session is kept, with what it
//! received and the application has not read, until [`Listener::release`]. Hostile datagrams
//! are dropped and counted, never a panic.
//!
//! Time goes as in [`crate::conn::Conn`] (the clock pattern there is repeated here, for all
//! sessions at once): a `now` earlier than one seen before is taken as that one, and the
//! protocol connections are shown at most `MAX_GAP` (60 s) between two calls.

use std::cmp::Reverse;
use std::collections::hash_map::Entry;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::net::SocketAddr;

use sprout_core::{wire, Config, Connection, Duration, Instant};
use sprout_net::message::{self, Message, DATA_HEADER_BYTES};
use sprout_secure::{
    AllowedClients, PrivateKey, PublicKey, SecureStats, Server, ServerConfig, ServerEvent,
    ServerReceived, SessionId,
};
use thiserror::Error;

use crate::conn::{Counters, ProtoClock, Received, State, LATEST};

/// How a [`Listener`] runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenerOptions {
    /// Most live sessions at once (default 1024); handshakes beyond are refused.
    pub max_sessions: usize,
    /// Most live sessions at once from one source, an IPv4 address or an IPv6 /64 (default
    /// 16, as `sprout server`); raise it for many clients on one host.
    pub max_sessions_per_source: usize,
    /// Most live sessions at once with one client key (default 8).
    pub max_sessions_per_key: usize,
    /// Handshakes processed per second from one source (default 100).
    pub handshakes_per_s_per_source: u32,
    /// A session with no authenticated datagram from its client for this long ends
    /// (default 30 s).
    pub idle_timeout: Duration,
    /// Most sessions waiting for [`Listener::accept`] (default 128).
    pub accept_backlog: usize,
}

impl Default for ListenerOptions {
    fn default() -> Self {
        ListenerOptions {
            max_sessions: 1024,
            max_sessions_per_source: 16,
            max_sessions_per_key: 8,
            handshakes_per_s_per_source: 100,
            idle_timeout: Duration::from_secs(30),
            accept_backlog: 128,
        }
    }
}

/// What the application cannot do with a session.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ListenerError {
    /// No such session (never accepted, or released).
    #[error("no session {0}")]
    UnknownSession(SessionId),
    /// The session is over.
    #[error("the connection is closed: {0}")]
    Closed(String),
    /// A message longer than [`Listener::max_message`].
    #[error("message of {len} bytes is longer than the {max} bytes one datagram carries")]
    TooLong {
        /// Bytes given.
        len: usize,
        /// Most bytes allowed.
        max: usize,
    },
}

/// The listener's own counters (each session has its [`Counters`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListenerCounters {
    /// Sessions established and put in the accept backlog.
    pub sessions_accepted: u64,
    /// Sessions established and closed at once: the backlog was full, or the configuration
    /// could not make a connection.
    pub sessions_refused: u64,
    /// Datagrams fed in.
    pub datagrams_received: u64,
    /// Datagrams handed out to send.
    pub datagrams_sent: u64,
    /// Datagrams fed in that the security layer dropped, or whose core datagram the session's
    /// connection refused.
    pub datagrams_dropped: u64,
}

/// One session.
struct Session {
    conn: Connection,
    peer: PublicKey,
    greeting: Vec<u8>,
    ended: Option<String>,
    next_seq: u64,
    counters: Counters,
    /// The connection's deadline (protocol time) as last put in [`Listener::timers`].
    scheduled: Option<Instant>,
}

/// The server side of many secure Sprout sessions on one socket.
pub struct Listener {
    secure: Server,
    options: ListenerOptions,
    sessions: HashMap<SessionId, Session>,
    /// Established sessions not yet taken by [`Listener::accept`].
    backlog: VecDeque<SessionId>,
    /// Sessions that received something or ended since [`Listener::poll_ready`] last gave them.
    ready: VecDeque<SessionId>,
    ready_set: HashSet<SessionId>,
    /// Sessions that may have a datagram to send, in the order they get to send (round
    /// robin): those that received, were sent to or ran their timers since their last empty
    /// poll. Work per datagram stays O(1) in the number of sessions.
    turn: VecDeque<SessionId>,
    active: HashSet<SessionId>,
    /// (deadline, session) of the sessions' connections, earliest first; an entry counts only
    /// while it is its session's `scheduled` (stale ones are skipped, and dropped when the
    /// heap outgrows the sessions).
    timers: BinaryHeap<Reverse<(Instant, SessionId)>>,
    now: Instant,
    clock: ProtoClock,
    counters: ListenerCounters,
    plaintext: Vec<u8>,
    tx: Vec<u8>,
}

/// The configuration a client's greeting asks for: its HELLO's, or the default.
fn config_for(greeting: &[u8]) -> Config {
    match Message::decode(greeting) {
        Ok(Message::Hello(h)) => h.config(),
        _ => Config::default(),
    }
}

impl Listener {
    /// A listener with the server's private `key`, letting in the clients of the public keys
    /// `allowed` (any client if `None`), at `now`.
    pub fn new(
        key: PrivateKey,
        allowed: Option<Vec<PublicKey>>,
        options: ListenerOptions,
        now: Instant,
    ) -> Listener {
        let allowed = match allowed {
            Some(keys) => AllowedClients::Keys(keys.into_iter().collect()),
            None => AllowedClients::Any,
        };
        let mut config = ServerConfig::new(key, allowed);
        config.max_sessions = options.max_sessions.max(1);
        config.max_sessions_per_source = options.max_sessions_per_source.max(1);
        config.max_sessions_per_key = options.max_sessions_per_key.max(1);
        config.handshakes_per_s_per_source = options.handshakes_per_s_per_source.max(1);
        config.handshakes_per_s = config
            .handshakes_per_s
            .max(config.handshakes_per_s_per_source);
        config.idle_timeout = options.idle_timeout;
        let now = now.min(LATEST);
        Listener {
            secure: Server::new(config),
            options,
            sessions: HashMap::new(),
            backlog: VecDeque::new(),
            ready: VecDeque::new(),
            ready_set: HashSet::new(),
            turn: VecDeque::new(),
            active: HashSet::new(),
            timers: BinaryHeap::new(),
            now,
            clock: ProtoClock {
                skew_us: 0,
                seen: now,
            },
            counters: ListenerCounters::default(),
            plaintext: Vec::with_capacity(2048),
            tx: Vec::with_capacity(2048),
        }
    }

    /// The server's public key.
    pub fn public_key(&self) -> PublicKey {
        self.secure.public_key()
    }

    /// `now`, never earlier than a time seen before, nor later than [`LATEST`].
    fn tick(&mut self, now: Instant) -> Instant {
        self.now = self.now.max(now.min(LATEST));
        self.now
    }

    fn mark_ready(&mut self, id: SessionId) {
        if self.ready_set.insert(id) {
            self.ready.push_back(id);
        }
    }

    /// Ends session `id` for `why` (the first reason stays).
    fn end(&mut self, id: SessionId, why: &str) {
        if let Some(s) = self.sessions.get_mut(&id) {
            if s.ended.is_none() {
                s.ended = Some(why.to_string());
                self.mark_ready(id);
            }
        }
    }

    /// Takes in datagram `d` from `from`, received at `now`. Anything unauthenticated,
    /// malformed, replayed or for an unknown session is dropped and counted, never an error.
    pub fn recv(&mut self, now: Instant, from: SocketAddr, d: &[u8]) {
        let now = self.tick(now);
        self.counters.datagrams_received += 1;
        let mut plaintext = std::mem::take(&mut self.plaintext);
        let delivered = match self.secure.handle(now, from, d, &mut plaintext) {
            ServerReceived::NewSession { id, peer, data, .. } => {
                self.open(now, id, peer);
                data.then_some(id)
            }
            ServerReceived::Data { id } => Some(id),
            ServerReceived::Closed { id } => {
                self.end(id, "the client closed the session");
                None
            }
            ServerReceived::Control => None,
            ServerReceived::Dropped(_) => {
                self.counters.datagrams_dropped += 1;
                None
            }
        };
        if let Some(id) = delivered {
            let t = self.clock.at(now);
            let ok = match self.sessions.get_mut(&id) {
                Some(s) if s.ended.is_none() => {
                    s.counters.datagrams_received += 1;
                    s.counters.bytes_received += d.len() as u64;
                    let ok = s.conn.handle_datagram(t, &plaintext).is_ok();
                    if !ok {
                        s.counters.datagrams_dropped += 1;
                    }
                    ok
                }
                _ => false,
            };
            if ok {
                self.mark_ready(id);
                self.touch(id);
            } else {
                self.counters.datagrams_dropped += 1;
            }
        }
        self.plaintext = plaintext;
    }

    /// A client's session `id` is established at `now`: it waits for [`Listener::accept`], or
    /// is closed at once if the backlog is full.
    fn open(&mut self, now: Instant, id: SessionId, peer: PublicKey) {
        let greeting = self.secure.take_greeting(id);
        if self.backlog.len() >= self.options.accept_backlog {
            self.secure.close_at(now, id);
            self.counters.sessions_refused += 1;
            return;
        }
        let conn = match Connection::new(config_for(&greeting), self.clock.at(now)) {
            Ok(c) => c,
            Err(_) => {
                self.secure.close_at(now, id);
                self.counters.sessions_refused += 1;
                return;
            }
        };
        let session = Session {
            conn,
            peer,
            greeting,
            ended: None,
            next_seq: 0,
            counters: Counters::default(),
            scheduled: None,
        };
        match self.sessions.entry(id) {
            // An id still held by an ended session the application has not released: the
            // security layer chose it afresh, so the old one is forgotten.
            Entry::Occupied(mut e) => {
                e.insert(session);
                self.backlog.retain(|&b| b != id);
            }
            Entry::Vacant(e) => {
                e.insert(session);
            }
        }
        self.backlog.push_back(id);
        self.touch(id);
        self.counters.sessions_accepted += 1;
    }

    /// The next established session waiting to be accepted, if any.
    pub fn accept(&mut self) -> Option<SessionId> {
        self.backlog.pop_front()
    }

    /// The next session that received something or ended since it was last given here, if
    /// any (the application reads its messages with [`Listener::recv_message`]).
    pub fn poll_ready(&mut self) -> Option<SessionId> {
        let id = self.ready.pop_front()?;
        self.ready_set.remove(&id);
        Some(id)
    }

    /// Runs the timers due by `now`: handshakes, idle sessions, the protocol's ticks.
    pub fn on_timeout(&mut self, now: Instant) {
        let now = self.tick(now);
        if self.secure.poll_timeout().is_some_and(|t| t <= now) {
            self.secure.handle_timeout(now);
        }
        while let Some(ServerEvent::Closed { id }) = self.secure.poll_event() {
            self.end(
                id,
                "the client sent nothing authenticated for the idle timeout",
            );
        }
        let t = self.clock.at(now);
        // The sessions due run once each (a connection may be due again at once: it has
        // something to send now, which poll_transmit takes).
        let mut due_now = Vec::new();
        while let Some(&Reverse((due, id))) = self.timers.peek() {
            if due > t {
                break;
            }
            self.timers.pop();
            if let Some(s) = self.sessions.get_mut(&id) {
                if s.ended.is_none() && s.scheduled == Some(due) {
                    s.scheduled = None;
                    due_now.push(id);
                }
            }
        }
        for id in due_now {
            if let Some(s) = self.sessions.get_mut(&id) {
                s.conn.handle_timeout(t);
            }
            self.touch(id);
        }
    }

    /// Session `id` may have something to send: it joins the turn (once), and its
    /// connection's deadline is scheduled again.
    fn touch(&mut self, id: SessionId) {
        if self.active.insert(id) {
            self.turn.push_back(id);
        }
        self.reschedule(id);
    }

    /// Puts session `id`'s connection deadline in the heap if it changed.
    fn reschedule(&mut self, id: SessionId) {
        let Some(s) = self.sessions.get_mut(&id).filter(|s| s.ended.is_none()) else {
            return;
        };
        let next = s.conn.poll_timeout();
        if next != s.scheduled {
            s.scheduled = next;
            if let Some(t) = next {
                self.timers.push(Reverse((t, id)));
            }
        }
        if self.timers.len() > 2 * self.sessions.len() + 1024 {
            let sessions = &self.sessions;
            self.timers.retain(|Reverse((t, id))| {
                sessions
                    .get(id)
                    .is_some_and(|s| s.ended.is_none() && s.scheduled == Some(*t))
            });
        }
    }

    /// The next datagram to send at `now`, written into `out` (cleared first), and where to
    /// send it; `None` if there is none now. The security layer's own datagrams go first, then
    /// the sessions' in turn.
    pub fn poll_transmit(&mut self, now: Instant, out: &mut Vec<u8>) -> Option<SocketAddr> {
        let now = self.tick(now);
        if let Some(to) = self.secure.poll_transmit(out) {
            self.counters.datagrams_sent += 1;
            return Some(to);
        }
        let t = self.clock.at(now);
        while let Some(id) = self.turn.pop_front() {
            let Some(s) = self.sessions.get_mut(&id).filter(|s| s.ended.is_none()) else {
                self.active.remove(&id);
                continue;
            };
            let mut sent = None;
            while s.conn.poll_transmit(t, &mut self.tx).is_some() {
                if let Ok(to) = self.secure.seal(now, id, &self.tx, out) {
                    s.counters.datagrams_sent += 1;
                    s.counters.bytes_sent += out.len() as u64;
                    self.counters.datagrams_sent += 1;
                    sent = Some(to);
                    break;
                }
            }
            if sent.is_some() {
                // Its next datagram waits for the others' turns.
                self.turn.push_back(id);
                self.reschedule(id);
                return sent;
            }
            self.active.remove(&id);
            self.reschedule(id);
        }
        out.clear();
        None
    }

    /// The next time [`Listener::on_timeout`] is needed, or `None` if nothing is scheduled.
    pub fn deadline(&mut self) -> Option<Instant> {
        let secure = self.secure.poll_timeout();
        while let Some(&Reverse((due, id))) = self.timers.peek() {
            let valid = self
                .sessions
                .get(&id)
                .is_some_and(|s| s.ended.is_none() && s.scheduled == Some(due));
            if valid {
                let due = self.clock.caller(due);
                return Some(secure.map_or(due, |s| s.min(due)));
            }
            self.timers.pop();
        }
        secure
    }

    fn live(&mut self, id: SessionId) -> Result<&mut Session, ListenerError> {
        let s = self
            .sessions
            .get_mut(&id)
            .ok_or(ListenerError::UnknownSession(id))?;
        match &s.ended {
            Some(why) => Err(ListenerError::Closed(why.clone())),
            None => Ok(s),
        }
    }

    fn get(&self, id: SessionId) -> Result<&Session, ListenerError> {
        self.sessions
            .get(&id)
            .ok_or(ListenerError::UnknownSession(id))
    }

    /// Largest message [`Listener::send`] takes on session `id`, in bytes.
    pub fn max_message(&self, id: SessionId) -> Result<usize, ListenerError> {
        let c = self.get(id)?.conn.config();
        Ok(c.max_datagram_bytes
            .saturating_sub(wire::header_bytes(c.model.forecast_ticks))
            .saturating_sub(DATA_HEADER_BYTES))
    }

    /// Queues an application message of `payload` with send time `sent_us` on session `id`,
    /// as a DATA message (its sequence number is the session's next).
    pub fn send(
        &mut self,
        id: SessionId,
        sent_us: u64,
        payload: &[u8],
    ) -> Result<(), ListenerError> {
        let max = self.max_message(id)?;
        let s = self.live(id)?;
        if payload.len() > max {
            return Err(ListenerError::TooLong {
                len: payload.len(),
                max,
            });
        }
        let mut m = message::Data {
            seq: s.next_seq,
            sent_us,
        }
        .encode(DATA_HEADER_BYTES + payload.len());
        m[DATA_HEADER_BYTES..].copy_from_slice(payload);
        s.next_seq += 1;
        s.counters.messages_sent += 1;
        s.conn.send(m);
        self.touch(id);
        Ok(())
    }

    /// Queues `message` on session `id` as it is, not as a DATA message: the other messages of
    /// `sprout client`'s protocol (its ACCEPT and BYE, [`sprout_net::message`]).
    pub fn send_raw(&mut self, id: SessionId, msg: &[u8]) -> Result<(), ListenerError> {
        let max = self.max_message(id)? + DATA_HEADER_BYTES;
        let s = self.live(id)?;
        if msg.len() > max {
            return Err(ListenerError::TooLong {
                len: msg.len(),
                max,
            });
        }
        s.counters.messages_sent += 1;
        s.conn.send(msg.to_vec());
        self.touch(id);
        Ok(())
    }

    /// The next message session `id` received, if any (also after it ended).
    pub fn recv_message(&mut self, id: SessionId) -> Result<Option<Received>, ListenerError> {
        let s = self
            .sessions
            .get_mut(&id)
            .ok_or(ListenerError::UnknownSession(id))?;
        let Some(m) = s.conn.recv() else {
            return Ok(None);
        };
        s.counters.messages_received += 1;
        Ok(Some(match Message::decode(&m) {
            Ok(Message::Data(d)) => Received {
                is_data: true,
                seq: d.seq,
                sent_us: d.sent_us,
                payload: m[DATA_HEADER_BYTES..].to_vec(),
            },
            _ => Received {
                is_data: false,
                seq: 0,
                sent_us: 0,
                payload: m,
            },
        }))
    }

    /// Where session `id` stands: [`State::Established`] or [`State::Closed`].
    pub fn state(&self, id: SessionId) -> Result<State, ListenerError> {
        Ok(match self.get(id)?.ended {
            Some(_) => State::Closed,
            None => State::Established,
        })
    }

    /// Why session `id` ended, if it did.
    pub fn end_reason(&self, id: SessionId) -> Result<Option<&str>, ListenerError> {
        Ok(self.get(id)?.ended.as_deref())
    }

    /// The client's public key and greeting of session `id`, and its address now (`None`
    /// once the session ended).
    pub fn peer(
        &self,
        id: SessionId,
    ) -> Result<(PublicKey, &[u8], Option<SocketAddr>), ListenerError> {
        let s = self.get(id)?;
        let addr = self.secure.session(id).map(|i| i.addr);
        Ok((s.peer, s.greeting.as_slice(), addr))
    }

    /// Session `id`'s counters.
    pub fn counters(&self, id: SessionId) -> Result<Counters, ListenerError> {
        Ok(self.get(id)?.counters)
    }

    /// The window the forecast allows session `id` now, in link bytes, and its sender's
    /// queue estimate (0 and 0 once it ended).
    pub fn window(&mut self, id: SessionId, now: Instant) -> Result<(u64, u64), ListenerError> {
        let now = self.tick(now);
        let t = self.clock.at(now);
        let s = self
            .sessions
            .get_mut(&id)
            .ok_or(ListenerError::UnknownSession(id))?;
        if s.ended.is_some() {
            return Ok((0, 0));
        }
        let w = (s.conn.window_bytes(t), s.conn.queue_estimate(t));
        self.reschedule(id);
        Ok(w)
    }

    /// The client's latest forecast on session `id`: cumulative packets it expects to
    /// receive by each tick (20 ms) ahead; empty before one arrived.
    pub fn forecast(&self, id: SessionId) -> Result<&[u32], ListenerError> {
        Ok(self.get(id)?.conn.peer_forecast().unwrap_or(&[]))
    }

    /// Application bytes session `id` has waiting to be sent, and its receiver's estimate of
    /// the incoming rate (packets/s).
    pub fn queue_and_rate(&self, id: SessionId) -> Result<(usize, f64), ListenerError> {
        let c = &self.get(id)?.conn;
        Ok((c.queued_bytes(), c.incoming_rate_pps()))
    }

    /// Closes session `id` at `now`: its close goes to the client (a few copies, from
    /// [`Listener::poll_transmit`]). What it received stays readable until
    /// [`Listener::release`].
    pub fn close(&mut self, id: SessionId, now: Instant) -> Result<(), ListenerError> {
        let now = self.tick(now);
        let s = self.get(id)?;
        if s.ended.is_none() {
            self.secure.close_at(now, id);
            self.end(id, "closed by this application");
        }
        Ok(())
    }

    /// Forgets session `id` (closing it first if it is live): the application is done with it.
    pub fn release(&mut self, id: SessionId, now: Instant) {
        if self.close(id, now).is_ok() {
            self.sessions.remove(&id);
            self.backlog.retain(|&b| b != id);
        }
    }

    /// Sessions held: live ones and ended ones not yet released.
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    /// The listener's counters.
    pub fn listener_counters(&self) -> ListenerCounters {
        self.counters.clone()
    }

    /// The security layer's counters (drops by reason, handshakes, sessions).
    pub fn secure_stats(&self) -> SecureStats {
        self.secure.stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conn::Conn;

    /// A client address: `n` gives the port, one host for all.
    fn addr(n: u16) -> SocketAddr {
        SocketAddr::from(([10, 0, 0, 1], 1000 + n))
    }

    /// Every datagram each way at `t` µs between `clients` (client `i` at `addr(i)`) and `l`.
    fn exchange(clients: &mut [Conn], l: &mut Listener, t: u64) {
        let now = Instant::from_micros(t);
        let mut d = Vec::new();
        l.on_timeout(now);
        for (i, c) in clients.iter_mut().enumerate() {
            c.on_timeout(now);
            let mut n = 0;
            while c.poll_transmit(now, &mut d) {
                n += 1;
                assert!(n < 10_000, "endless datagrams from client {i}");
                l.recv(now, addr(i as u16), &d);
            }
        }
        let mut n = 0;
        while let Some(to) = l.poll_transmit(now, &mut d) {
            n += 1;
            assert!(n < 100_000, "endless datagrams from the listener");
            let i = (to.port() - 1000) as usize;
            clients[i].recv(now, &d);
        }
    }

    fn many(options: ListenerOptions, n: usize) -> (Vec<Conn>, Listener, PublicKey) {
        let sk = PrivateKey::generate();
        let sp = sk.public_key();
        let l = Listener::new(sk, None, options, Instant::ZERO);
        let clients = (0..n)
            .map(|i| {
                let hi = format!("client {i}");
                Conn::client(PrivateKey::generate(), sp, hi.as_bytes(), Instant::ZERO).unwrap()
            })
            .collect();
        (clients, l, sp)
    }

    fn run(clients: &mut [Conn], l: &mut Listener, from_ms: u64, to_ms: u64) {
        for ms in from_ms..to_ms {
            exchange(clients, l, ms * 1_000);
        }
    }

    /// Runs `clients` and `l` from `from_us` to `to_us` waking only at their deadlines (and
    /// when datagrams arrive), as an event loop does; how many wake-ups it took.
    fn drive_by_deadlines(clients: &mut [Conn], l: &mut Listener, from_us: u64, to_us: u64) -> u64 {
        let mut t = from_us;
        let mut wakeups = 0;
        while t < to_us {
            exchange(clients, l, t);
            wakeups += 1;
            assert!(wakeups < 1_000_000, "endless wake-ups at {t} us");
            let next = clients
                .iter_mut()
                .filter_map(|c| c.deadline())
                .chain(l.deadline())
                .map(|d| d.as_micros())
                .min()
                .expect("a deadline");
            // A deadline already past is run at once, as a timer in the past is.
            t = next.max(t + 1);
        }
        wakeups
    }

    #[test]
    fn sessions_driven_only_by_the_deadlines_keep_going() {
        let options = ListenerOptions {
            max_sessions_per_source: 10,
            ..ListenerOptions::default()
        };
        let (mut cs, mut l, _) = many(options, 5);
        drive_by_deadlines(&mut cs, &mut l, 1, 200_000);
        let ids: Vec<_> = std::iter::from_fn(|| l.accept()).collect();
        assert_eq!(ids.len(), 5);
        for (i, c) in cs.iter_mut().enumerate() {
            for k in 0..50u64 {
                c.send(k, format!("{i}:{k}").as_bytes()).unwrap();
            }
        }
        for &id in &ids {
            l.send(id, 7, b"from the listener").unwrap();
        }
        // 10 s: the messages, then heartbeats only; nothing idles out, nothing is lost.
        let wakeups = drive_by_deadlines(&mut cs, &mut l, 200_000, 10_200_000);
        for &id in &ids {
            assert_eq!(l.state(id).unwrap(), State::Established);
            let n = std::iter::from_fn(|| l.recv_message(id).unwrap()).count();
            assert_eq!(n, 50, "session {id}");
        }
        for c in cs.iter_mut() {
            assert_eq!(c.state(), State::Established);
            assert_eq!(c.recv_message().unwrap().payload, b"from the listener");
        }
        // Heartbeats every 50 ms or so, not a wake-up every tick of the clock.
        assert!(wakeups < 20_000, "{wakeups} wake-ups in 10 s");
    }

    #[test]
    fn accepts_a_client_and_carries_messages_both_ways() {
        let (mut cs, mut l, _) = many(ListenerOptions::default(), 1);
        run(&mut cs, &mut l, 1, 100);
        let id = l.accept().expect("a session");
        assert_eq!(l.accept(), None);
        let (key, greeting, from) = l.peer(id).unwrap();
        assert_eq!(greeting, b"client 0");
        assert_eq!(from, Some(addr(0)));
        assert_ne!(key, l.public_key());
        for i in 0..20u64 {
            cs[0].send(1_000 + i, format!("up {i}").as_bytes()).unwrap();
            l.send(id, 2_000 + i, format!("down {i}").as_bytes())
                .unwrap();
        }
        run(&mut cs, &mut l, 100, 400);
        for i in 0..20u64 {
            let m = l.recv_message(id).unwrap().expect("an upward message");
            assert_eq!((m.seq, m.sent_us), (i, 1_000 + i));
            assert_eq!(m.payload, format!("up {i}").as_bytes());
            let m = cs[0].recv_message().expect("a downward message");
            assert_eq!((m.seq, m.sent_us), (i, 2_000 + i));
            assert_eq!(m.payload, format!("down {i}").as_bytes());
        }
        assert_eq!(l.poll_ready(), Some(id));
        assert!(!cs[0].forecast().is_empty() && !l.forecast(id).unwrap().is_empty());
        // The client closes: the session ends, what it sent stays readable.
        cs[0].send(9, b"last").unwrap();
        run(&mut cs, &mut l, 400, 450);
        cs[0].close(Instant::from_micros(450_000));
        run(&mut cs, &mut l, 450, 460);
        assert_eq!(l.state(id).unwrap(), State::Closed);
        assert_eq!(
            l.end_reason(id).unwrap(),
            Some("the client closed the session")
        );
        assert_eq!(l.recv_message(id).unwrap().unwrap().payload, b"last");
        assert!(matches!(l.send(id, 0, b"x"), Err(ListenerError::Closed(_))));
        l.release(id, Instant::from_micros(460_000));
        assert_eq!(l.session_count(), 0);
        assert_eq!(l.state(id), Err(ListenerError::UnknownSession(id)));
    }

    #[test]
    fn many_sessions_each_deliver_every_message() {
        let options = ListenerOptions {
            max_sessions_per_source: 100,
            ..ListenerOptions::default()
        };
        let (mut cs, mut l, _) = many(options, 60);
        run(&mut cs, &mut l, 1, 200);
        let mut ids = Vec::new();
        while let Some(id) = l.accept() {
            ids.push(id);
        }
        assert_eq!(ids.len(), 60);
        for (i, c) in cs.iter_mut().enumerate() {
            for k in 0..10u64 {
                c.send(k, format!("{i}:{k}").as_bytes()).unwrap();
            }
        }
        run(&mut cs, &mut l, 200, 1_500);
        for &id in &ids {
            let greeting = String::from_utf8(l.peer(id).unwrap().1.to_vec()).unwrap();
            let i = greeting.strip_prefix("client ").unwrap();
            for k in 0..10u64 {
                let m = l.recv_message(id).unwrap().expect("every message");
                assert_eq!(m.payload, format!("{i}:{k}").as_bytes());
                l.send(id, k, &m.payload).unwrap();
            }
            assert_eq!(l.recv_message(id).unwrap(), None);
        }
        run(&mut cs, &mut l, 1_500, 3_000);
        for (i, c) in cs.iter_mut().enumerate() {
            for k in 0..10u64 {
                let m = c.recv_message().expect("every echo");
                assert_eq!(m.payload, format!("{i}:{k}").as_bytes());
            }
        }
        assert_eq!(l.listener_counters().datagrams_dropped, 0);
    }

    #[test]
    fn forged_and_replayed_datagrams_are_dropped_and_the_session_goes_on() {
        let (mut cs, mut l, _) = many(ListenerOptions::default(), 1);
        run(&mut cs, &mut l, 1, 100);
        let id = l.accept().unwrap();
        cs[0].send(1, b"genuine").unwrap();
        let now = Instant::from_micros(100_000);
        let mut d = Vec::new();
        let mut sealed = Vec::new();
        while cs[0].poll_transmit(now, &mut d) {
            sealed.push(d.clone());
        }
        assert!(!sealed.is_empty());
        let before = l.listener_counters().datagrams_dropped;
        let mut forged = 0;
        for s in &sealed {
            // One bit flipped at each position (header and ciphertext), then cut short.
            for at in 0..s.len() {
                let mut f = s.clone();
                f[at] ^= 0x40;
                l.recv(now, addr(0), &f);
                forged += 1;
            }
            for len in 0..s.len() {
                l.recv(now, addr(0), &s[..len]);
                forged += 1;
            }
        }
        for s in &sealed {
            l.recv(now, addr(0), s);
        }
        // Replays of the genuine ones, from another address too.
        for s in &sealed {
            l.recv(now, addr(0), s);
            l.recv(now, addr(7), s);
            forged += 2;
        }
        // Noise, and a huge datagram.
        for n in 0..200u32 {
            let junk: Vec<u8> = (0..(n % 90)).map(|k| (k * 31 + n) as u8).collect();
            l.recv(now, addr(3), &junk);
            forged += 1;
        }
        l.recv(now, addr(3), &vec![1u8; 70_000]);
        forged += 1;
        let dropped = l.listener_counters().datagrams_dropped - before;
        assert_eq!(dropped, forged, "every forged datagram is dropped");
        let m = l.recv_message(id).unwrap().expect("the genuine message");
        assert_eq!(m.payload, b"genuine");
        assert_eq!(l.recv_message(id).unwrap(), None);
        assert_eq!(l.state(id).unwrap(), State::Established);
        assert_eq!(l.accept(), None);
    }

    #[test]
    fn a_full_backlog_refuses_sessions_and_idle_sessions_end() {
        let options = ListenerOptions {
            accept_backlog: 2,
            idle_timeout: Duration::from_secs(2),
            ..ListenerOptions::default()
        };
        let (mut cs, mut l, _) = many(options, 4);
        run(&mut cs, &mut l, 1, 200);
        assert_eq!(l.listener_counters().sessions_accepted, 2);
        assert_eq!(l.listener_counters().sessions_refused, 2);
        let ids = [l.accept().unwrap(), l.accept().unwrap()];
        assert_eq!(l.accept(), None);
        // The clients fall silent: the listener ends their sessions after the idle timeout.
        for ms in (200..2_600).step_by(10) {
            let now = Instant::from_micros(ms * 1_000);
            l.on_timeout(now);
            let mut d = Vec::new();
            while l.poll_transmit(now, &mut d).is_some() {}
        }
        for id in ids {
            assert_eq!(l.state(id).unwrap(), State::Closed);
            assert!(l.end_reason(id).unwrap().unwrap().contains("idle"));
        }
        assert!(l
            .deadline()
            .is_none_or(|d| d > Instant::from_micros(2_600_000)));
    }

    #[test]
    fn a_clock_that_jumps_hours_or_back_keeps_calls_short() {
        let (mut cs, mut l, _) = many(ListenerOptions::default(), 1);
        run(&mut cs, &mut l, 1, 100);
        let id = l.accept().unwrap();
        let start = std::time::Instant::now();
        exchange(&mut cs, &mut l, 5 * 3600 * 1_000_000);
        exchange(&mut cs, &mut l, 1_000);
        exchange(&mut cs, &mut l, u64::MAX);
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
        let _ = l.state(id).unwrap();
    }
}
