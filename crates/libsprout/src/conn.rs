//! [`Conn`]: one secure Sprout connection, sans-IO, in safe Rust: the object behind the C
//! API's `SproutConn`. It glues the pieces the runtime of sprout-net uses, unchanged: the
//! security layer's [`Client`] (with its [`Redial`] machine) or [`Server`], and the protocol's
//! [`Connection`]; the application's messages travel as the DATA messages of `sprout client`
//! ([`sprout_net::message`]), so that each carries its sequence number and send time.
//!
//! A client whose greeting is a HELLO of `sprout client` ([`Hello`]) runs the Sprout
//! configuration it names (scheme and confidence), and the server side runs the one of the
//! HELLO it received, as `sprout server` does; the server side answers a HELLO with ACCEPT
//! (`ACCEPT_COPIES`, 3 copies), and either side can end its data with a BYE
//! ([`Conn::send_bye`]). Any other greeting leaves both on [`Config::default`].
//!
//! Time only goes forward: a `now` earlier than one seen before is taken as that one. The
//! protocol connection is shown at most `MAX_GAP` (60 s) passing between two calls (`ProtoClock`):
//! its receiver runs one tick per 20 ms of elapsed time, so a clock that jumped hours (a
//! suspended application, a caller's bug) would otherwise keep a call busy for minutes.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Once;

use sprout_core::{wire, Config, Connection, Duration, Instant};
use sprout_net::message::{self, Bye, Hello, Message, SproutVariant, DATA_HEADER_BYTES};
use sprout_secure::{
    AllowedClients, Client, ClientConfig, ClientReceived, Limits, PrivateKey, PublicKey, Redial,
    RedialAction, RedialPolicy, SecureError, Server, ServerConfig, ServerEvent, ServerReceived,
    SessionId,
};
use thiserror::Error;

/// Copies of ACCEPT (server side, to a HELLO) and of BYE ([`Conn::send_bye`]) queued: they
/// are not retransmitted, so a few go, as `sprout server` and `sprout client` send them.
pub(crate) const ACCEPT_COPIES: usize = 3;

/// Most events kept for the application; beyond, the oldest is dropped.
pub(crate) const MAX_EVENTS: usize = 64;

/// The address the server side takes every datagram to come from: it serves one session, so
/// where its datagrams come from is the application's business (a documentation address,
/// RFC 5737).
const PEER: ([u8; 4], u16) = ([192, 0, 2, 1], 1);

/// Most time the protocol connection is shown passing between two calls (60 s, 3,000 of its
/// receiver's ticks): a longer gap counts as this much. The security layer sees the real
/// time, so a session silent that long has ended (the server's idle timeout, 30 s) or is being
/// redialled (the client's dead-peer timeout, 15 s) by then anyway.
pub(crate) const MAX_GAP: Duration = Duration::from_secs(60);

/// The latest time taken (2^62 microseconds, some 146,000 years): later ones are taken as
/// this, so that deadlines computed from it never reach the end of the clock.
pub(crate) const LATEST: Instant = Instant::from_micros(1 << 62);

/// The protocol connection's clock: the caller's time less the part of long gaps beyond
/// [`MAX_GAP`] (the skew), never going back.
/// The listener's sessions share it (`crate::listener`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ProtoClock {
    pub(crate) skew_us: u64,
    pub(crate) seen: Instant,
}

impl ProtoClock {
    /// The protocol's time at the caller's `now`.
    pub(crate) fn at(&mut self, now: Instant) -> Instant {
        let mut t = Instant::from_micros(now.as_micros().saturating_sub(self.skew_us));
        let limit = self.seen + MAX_GAP;
        if t > limit {
            self.skew_us = self.skew_us.saturating_add((t - limit).as_micros());
            t = limit;
        }
        self.seen = self.seen.max(t);
        self.seen
    }

    /// The caller's time of protocol time `t`.
    pub(crate) fn caller(&self, t: Instant) -> Instant {
        Instant::from_micros(t.as_micros().saturating_add(self.skew_us))
    }
}

/// Where a connection stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// The handshake is under way (client), or no client has come yet (server).
    Connecting,
    /// Messages flow.
    Established,
    /// The client's server fell silent: the connection is gone and a fresh handshake is under
    /// way; messages sent meanwhile wait for it.
    Reconnecting,
    /// Over: nothing more arrives or leaves (but the close datagrams, and what was received and
    /// not read yet).
    Closed,
}

/// Something that happened to a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The session is established (again, after a reconnection).
    Connected,
    /// The client's server fell silent; a fresh handshake started.
    Reconnecting,
    /// The connection is over ([`Conn::end_reason`] says why).
    Closed,
}

/// What the application cannot do.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ConnError {
    /// The connection is over.
    #[error("the connection is closed: {0}")]
    Closed(String),
    /// A message longer than [`Conn::max_message`].
    #[error("message of {len} bytes is longer than the {max} bytes one datagram carries")]
    TooLong {
        /// Bytes given.
        len: usize,
        /// Most bytes allowed.
        max: usize,
    },
    /// The security layer refused the keys or the greeting.
    #[error("{0}")]
    Secure(#[from] SecureError),
}

/// One received application message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Received {
    /// A DATA message (`seq` and `sent_us` are its header's; `payload` is what follows it),
    /// or anything else (`payload` is the whole message, `seq` and `sent_us` are 0).
    pub is_data: bool,
    /// Sequence number: 0, 1, 2, ... per sender.
    pub seq: u64,
    /// The send time the sender gave, in microseconds on its clock.
    pub sent_us: u64,
    /// The message's bytes.
    pub payload: Vec<u8>,
}

/// The security layer of one side.
enum Side {
    Client {
        secure: Box<Client>,
        redial: Redial,
    },
    Server {
        secure: Box<Server>,
        /// The session served, once a client's handshake completed.
        session: Option<SessionId>,
        peer: Option<PublicKey>,
        greeting: Vec<u8>,
    },
}

/// Counters of a connection's datagrams and messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Datagrams handed to the application to send.
    pub datagrams_sent: u64,
    /// Their bytes.
    pub bytes_sent: u64,
    /// Datagrams the application fed in.
    pub datagrams_received: u64,
    /// Their bytes.
    pub bytes_received: u64,
    /// Datagrams fed in that were dropped: unauthenticated, replayed, malformed, or for
    /// another session.
    pub datagrams_dropped: u64,
    /// Messages queued by the application.
    pub messages_sent: u64,
    /// Messages handed to the application.
    pub messages_received: u64,
    /// Sessions re-established after the server fell silent (client).
    pub reconnections: u64,
}

/// One secure Sprout connection, client or server side of one session.
pub struct Conn {
    side: Side,
    config: Config,
    conn: Option<Connection>,
    /// Messages the application sent before the session was up.
    early: VecDeque<Vec<u8>>,
    /// Messages received by a connection that was dropped at a reconnection, unread.
    leftover: VecDeque<Vec<u8>>,
    /// Datagrams to send before anything else (a close's copies).
    outbox: VecDeque<Vec<u8>>,
    events: VecDeque<Event>,
    ended: Option<String>,
    now: Instant,
    clock: ProtoClock,
    next_seq: u64,
    /// Bytes of the application messages queued, DATA headers included (a BYE's total).
    app_bytes_sent: u64,
    /// The session's HELLO: the client's greeting, if it is one (on the server side, once a
    /// client came).
    hello: Option<Hello>,
    counters: Counters,
    plaintext: Vec<u8>,
    tx: Vec<u8>,
}

impl Conn {
    /// The client side, at `now`: `key` is the client's private key, `server_key` the server's
    /// public key, `greeting` what the server gets with the handshake (at most
    /// [`sprout_secure::wire::MAX_GREETING_BYTES`]). A greeting that is a HELLO chooses the
    /// Sprout configuration ([`Hello::config`]); any other, [`Config::default`].
    pub fn client(
        key: PrivateKey,
        server_key: PublicKey,
        greeting: &[u8],
        now: Instant,
    ) -> Result<Conn, ConnError> {
        let keys = ClientConfig {
            private_key: key,
            server_key,
            limits: Limits::default(),
        };
        let redial = Redial::new(keys, greeting, RedialPolicy::default());
        let secure = Box::new(redial.client(now)?);
        let mut c = Conn::with_side(Side::Client { secure, redial }, now);
        c.hello = hello_of(greeting);
        c.config = config_of(c.hello.as_ref());
        prepare(c.hello.map_or(SproutVariant::Sprout, |h| h.scheme));
        Ok(c)
    }

    /// The server side of one session, at `now`: `key` is the server's private key; only the
    /// client of public key `client` is let in, or any client if `None`. A client that
    /// redials (a fresh handshake) replaces the session.
    pub fn server(key: PrivateKey, client: Option<PublicKey>, now: Instant) -> Conn {
        let allowed = match client {
            Some(k) => AllowedClients::Keys([k].into_iter().collect()),
            None => AllowedClients::Any,
        };
        let secure = Box::new(Server::new(ServerConfig::new(key, allowed)));
        // The client's HELLO names the model only once its data comes: both that need tables.
        prepare(SproutVariant::Sprout);
        prepare(SproutVariant::SproutWide);
        let side = Side::Server {
            secure,
            session: None,
            peer: None,
            greeting: Vec::new(),
        };
        Conn::with_side(side, now)
    }

    fn with_side(side: Side, now: Instant) -> Conn {
        Conn {
            side,
            config: Config::default(),
            conn: None,
            early: VecDeque::new(),
            leftover: VecDeque::new(),
            outbox: VecDeque::new(),
            events: VecDeque::new(),
            ended: None,
            now,
            clock: ProtoClock {
                skew_us: 0,
                seen: now,
            },
            next_seq: 0,
            app_bytes_sent: 0,
            hello: None,
            counters: Counters::default(),
            plaintext: Vec::with_capacity(2048),
            tx: Vec::with_capacity(2048),
        }
    }

    /// `now`, never earlier than a time seen before, nor later than [`LATEST`].
    fn tick(&mut self, now: Instant) -> Instant {
        self.now = self.now.max(now.min(LATEST));
        self.now
    }

    /// Largest message [`Conn::send`] takes, in bytes.
    pub fn max_message(&self) -> usize {
        self.config
            .max_datagram_bytes
            .saturating_sub(wire::header_bytes(self.config.model.forecast_ticks))
            .saturating_sub(DATA_HEADER_BYTES)
    }

    /// Where the connection stands.
    pub fn state(&self) -> State {
        if self.ended.is_some() {
            State::Closed
        } else if self.conn.is_some() {
            State::Established
        } else if matches!(&self.side, Side::Client { redial, .. } if redial.is_reconnecting()) {
            State::Reconnecting
        } else {
            State::Connecting
        }
    }

    /// Why the connection ended, if it did.
    pub fn end_reason(&self) -> Option<&str> {
        self.ended.as_deref()
    }

    /// The counters.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    fn event(&mut self, e: Event) {
        if self.events.len() >= MAX_EVENTS {
            self.events.pop_front();
        }
        self.events.push_back(e);
    }

    /// Ends the connection for `why` (the first reason stays).
    fn finish(&mut self, why: impl Into<String>) {
        if self.ended.is_none() {
            self.ended = Some(why.into());
            self.drop_connection();
            self.event(Event::Closed);
        }
    }

    /// The protocol connection goes; what it received and the application has not read stays.
    fn drop_connection(&mut self) {
        if let Some(mut old) = self.conn.take() {
            while let Some(d) = old.recv() {
                self.leftover.push_back(d);
            }
        }
    }

    /// A session is up at `now`: a fresh protocol connection takes what waited.
    fn install(&mut self, now: Instant) {
        let now = self.clock.at(now);
        match Connection::new(self.config.clone(), now) {
            Ok(mut c) => {
                for d in self.early.drain(..) {
                    c.send(d);
                }
                self.conn = Some(c);
                self.event(Event::Connected);
            }
            Err(e) => self.finish(format!("invalid configuration: {e}")),
        }
    }

    /// Queues an application message of `payload` with send time `sent_us` (any clock the
    /// receiver shares: it gets the value back).
    pub fn send(&mut self, sent_us: u64, payload: &[u8]) -> Result<(), ConnError> {
        if let Some(why) = &self.ended {
            return Err(ConnError::Closed(why.clone()));
        }
        let max = self.max_message();
        if payload.len() > max {
            return Err(ConnError::TooLong {
                len: payload.len(),
                max,
            });
        }
        let seq = self.next_seq;
        let mut m = message::Data { seq, sent_us }.encode(DATA_HEADER_BYTES + payload.len());
        m[DATA_HEADER_BYTES..].copy_from_slice(payload);
        self.next_seq += 1;
        self.app_bytes_sent += m.len() as u64;
        self.counters.messages_sent += 1;
        self.queue(m);
        Ok(())
    }

    /// Queues application message `m`, to leave once the session is up.
    fn queue(&mut self, m: Vec<u8>) {
        match &mut self.conn {
            Some(c) => c.send(m),
            None => self.early.push_back(m),
        }
    }

    /// Queues the end of this side's data as `sprout client` and `sprout server` say it: a
    /// BYE (`ACCEPT_COPIES`, 3 copies) with the session of the HELLO (0 without one), the
    /// DATA messages sent and their bytes (headers included).
    pub fn send_bye(&mut self) -> Result<(), ConnError> {
        if let Some(why) = &self.ended {
            return Err(ConnError::Closed(why.clone()));
        }
        let bye = Bye {
            session: self.hello.map_or(0, |h| h.session),
            data_sent: self.next_seq,
            app_bytes_sent: self.app_bytes_sent,
        }
        .encode();
        for _ in 0..ACCEPT_COPIES {
            self.counters.messages_sent += 1;
            self.queue(bye.clone());
        }
        Ok(())
    }

    /// The session's HELLO: the client's greeting if it is one (the server side's, once a
    /// client came).
    pub fn hello(&self) -> Option<&Hello> {
        self.hello.as_ref()
    }

    /// The next received application message, if any.
    pub fn recv_message(&mut self) -> Option<Received> {
        let m = match self.leftover.pop_front() {
            Some(m) => m,
            None => self.conn.as_mut()?.recv()?,
        };
        self.counters.messages_received += 1;
        Some(match Message::decode(&m) {
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
        })
    }

    /// Takes in datagram `d`, received at `now`. Anything unauthenticated or malformed is
    /// dropped and counted, never an error.
    pub fn recv(&mut self, now: Instant, d: &[u8]) {
        let now = self.tick(now);
        self.counters.datagrams_received += 1;
        self.counters.bytes_received += d.len() as u64;
        if self.ended.is_some() {
            self.counters.datagrams_dropped += 1;
            return;
        }
        let delivered = if matches!(self.side, Side::Client { .. }) {
            self.client_recv(now, d)
        } else {
            self.server_recv(now, d)
        };
        if delivered {
            let now = self.clock.at(now);
            let plaintext = std::mem::take(&mut self.plaintext);
            let ok = self
                .conn
                .as_mut()
                .is_some_and(|c| c.handle_datagram(now, &plaintext).is_ok());
            if !ok {
                self.counters.datagrams_dropped += 1;
            }
            self.plaintext = plaintext;
        }
    }

    /// The client's security layer takes `d`; true if the plaintext holds a core datagram.
    fn client_recv(&mut self, now: Instant, d: &[u8]) -> bool {
        let Side::Client { secure, redial } = &mut self.side else {
            return false;
        };
        let received = secure.handle(now, d, &mut self.plaintext);
        redial.on_received(received);
        let reconnections = redial.reconnections();
        match received {
            ClientReceived::Established => {
                self.counters.reconnections = reconnections;
                if self.conn.is_none() {
                    self.install(now);
                }
                false
            }
            ClientReceived::Data => true,
            ClientReceived::Closed => {
                self.finish(SecureError::ClosedByServer.to_string());
                false
            }
            ClientReceived::Control => false,
            ClientReceived::Dropped(_) => {
                self.counters.datagrams_dropped += 1;
                false
            }
        }
    }

    /// The server's security layer takes `d`; true if the plaintext holds a core datagram of
    /// the session served.
    fn server_recv(&mut self, now: Instant, d: &[u8]) -> bool {
        let Side::Server {
            secure,
            session,
            peer,
            greeting,
        } = &mut self.side
        else {
            return false;
        };
        let from = SocketAddr::from(PEER);
        match secure.handle(now, from, d, &mut self.plaintext) {
            ServerReceived::NewSession {
                id,
                peer: key,
                data,
                ..
            } => {
                // A client's first session, or its redial: the new one replaces the old.
                if let Some(old) = session.replace(id) {
                    secure.close(old);
                }
                *peer = Some(key);
                *greeting = secure.take_greeting(id);
                let hello = hello_of(greeting);
                self.drop_connection();
                self.hello = hello;
                self.config = config_of(hello.as_ref());
                self.install(now);
                // A HELLO is answered as `sprout server` answers it.
                if let Some(h) = hello {
                    for _ in 0..ACCEPT_COPIES {
                        self.queue(message::encode_accept(h.session));
                    }
                }
                data
            }
            ServerReceived::Data { id } => *session == Some(id),
            ServerReceived::Closed { id } => {
                if *session == Some(id) {
                    self.finish("the client closed the session");
                }
                false
            }
            ServerReceived::Control => false,
            ServerReceived::Dropped(_) => {
                self.counters.datagrams_dropped += 1;
                false
            }
        }
    }

    /// Runs the timers due by `now`: the handshake's retries and timeout, the dead-peer
    /// detection and redials (client), idle sessions (server), the protocol's ticks.
    pub fn on_timeout(&mut self, now: Instant) {
        let now = self.tick(now);
        if self.ended.is_some() {
            return;
        }
        match &mut self.side {
            Side::Client { .. } => self.client_timers(now),
            Side::Server {
                secure, session, ..
            } => {
                if secure.poll_timeout().is_some_and(|t| t <= now) {
                    secure.handle_timeout(now);
                }
                let mut gone = false;
                while let Some(ServerEvent::Closed { id }) = secure.poll_event() {
                    gone |= *session == Some(id);
                }
                if gone {
                    self.finish(
                        "the client sent nothing authenticated for the idle timeout (30 s)",
                    );
                }
            }
        }
        let now = self.clock.at(now);
        if let Some(c) = self.conn.as_mut() {
            c.handle_timeout(now);
        }
    }

    /// The client's security timers and what its redial machine says.
    fn client_timers(&mut self, now: Instant) {
        let Side::Client { secure, redial } = &mut self.side else {
            return;
        };
        if secure.poll_timeout().is_some_and(|t| t <= now) {
            secure.handle_timeout(now);
        }
        match redial.poll(now, secure) {
            None => {}
            // A redial (or a rekey) went unanswered: wait, then try again.
            Some(RedialAction::Wait { .. }) => self.drop_connection(),
            Some(RedialAction::GiveUp) => {
                let why = secure
                    .error()
                    .map_or("the session failed".to_string(), |e| e.to_string());
                self.finish(why);
            }
            Some(RedialAction::GiveUpDead { .. }) => {
                let s = redial.policy().dead_after.as_micros() / 1_000_000;
                self.finish(format!(
                    "the server sent nothing authenticated for {s} s after this client sent"
                ));
            }
            Some(RedialAction::RedialNow { .. }) => match redial.client(now) {
                Ok(c) => {
                    *secure = Box::new(c);
                    self.drop_connection();
                    self.event(Event::Reconnecting);
                }
                Err(e) => self.finish(e.to_string()),
            },
        }
    }

    /// The next datagram to send at `now`, written into `out` (cleared first); false if
    /// there is none now.
    pub fn poll_transmit(&mut self, now: Instant, out: &mut Vec<u8>) -> bool {
        let now = self.tick(now);
        out.clear();
        if let Some(d) = self.outbox.pop_front() {
            out.extend_from_slice(&d);
        } else if !self.poll_side(now, out) {
            return false;
        }
        self.counters.datagrams_sent += 1;
        self.counters.bytes_sent += out.len() as u64;
        true
    }

    /// The security layer's own datagrams first, then the protocol's, sealed.
    fn poll_side(&mut self, now: Instant, out: &mut Vec<u8>) -> bool {
        if self.ended.is_some() {
            return false;
        }
        match &mut self.side {
            Side::Client { secure, redial } => {
                if secure.poll_transmit(now, out) {
                    return true;
                }
                while secure.is_established() {
                    let Some(c) = self.conn.as_mut() else {
                        return false;
                    };
                    if c.poll_transmit(self.clock.at(now), &mut self.tx).is_none() {
                        return false;
                    }
                    if secure.seal(now, &self.tx, out).is_ok() {
                        redial.on_sealed(now);
                        return true;
                    }
                }
                false
            }
            Side::Server {
                secure, session, ..
            } => {
                if secure.poll_transmit(out).is_some() {
                    return true;
                }
                let (Some(id), Some(c)) = (*session, self.conn.as_mut()) else {
                    return false;
                };
                while c.poll_transmit(self.clock.at(now), &mut self.tx).is_some() {
                    if secure.seal(now, id, &self.tx, out).is_ok() {
                        return true;
                    }
                }
                false
            }
        }
    }

    /// The next time [`Conn::on_timeout`] is needed or something may be ready to send, or
    /// `None` if nothing is scheduled (a closed connection with nothing left to send).
    pub fn deadline(&mut self) -> Option<Instant> {
        if !self.outbox.is_empty() {
            return Some(self.now);
        }
        if self.ended.is_some() {
            return None;
        }
        let side = match &self.side {
            Side::Client { secure, redial } => min(secure.poll_timeout(), redial.poll_timeout()),
            Side::Server { secure, .. } => secure.poll_timeout(),
        };
        let clock = self.clock;
        let proto = self.conn.as_mut().and_then(|c| c.poll_timeout());
        min(side, proto.map(|t| clock.caller(t)))
    }

    /// Closes the connection at `now`: the session's close is queued for
    /// [`Conn::poll_transmit`] (a few copies) if a session is up.
    pub fn close(&mut self, now: Instant) {
        let now = self.tick(now);
        if self.ended.is_some() {
            return;
        }
        match &mut self.side {
            Side::Client { secure, .. } => {
                let mut out = Vec::new();
                if secure.close(now, &mut out) {
                    for _ in 0..sprout_secure::wire::CLOSE_COPIES {
                        self.outbox.push_back(out.clone());
                    }
                }
            }
            Side::Server {
                secure, session, ..
            } => {
                if let Some(id) = *session {
                    secure.close_at(now, id);
                    let mut out = Vec::new();
                    while secure.poll_transmit(&mut out).is_some() {
                        self.outbox.push_back(out.clone());
                    }
                }
            }
        }
        self.finish("closed by this application");
    }

    /// The window the forecast allows now, in link bytes, and the sender's queue estimate
    /// (0 and 0 before the session is up).
    pub fn window(&mut self, now: Instant) -> (u64, u64) {
        let now = self.tick(now);
        let now = self.clock.at(now);
        self.conn
            .as_mut()
            .map_or((0, 0), |c| (c.window_bytes(now), c.queue_estimate(now)))
    }

    /// The peer's latest forecast: cumulative packets it expects to receive by each tick
    /// (20 ms) ahead; empty before one arrived.
    pub fn forecast(&self) -> &[u32] {
        self.conn
            .as_ref()
            .and_then(|c| c.peer_forecast())
            .unwrap_or(&[])
    }

    /// Application bytes waiting to be sent, and the receiver's estimate of the incoming
    /// rate (packets/s).
    pub fn queue_and_rate(&self) -> (usize, f64) {
        let early: usize = self.early.iter().map(Vec::len).sum();
        self.conn.as_ref().map_or((early, 0.0), |c| {
            (early + c.queued_bytes(), c.incoming_rate_pps())
        })
    }

    /// The client's greeting and public key (server side, once a client came).
    pub fn peer(&self) -> Option<(&[u8], PublicKey)> {
        match &self.side {
            Side::Server {
                peer: Some(k),
                greeting,
                ..
            } => Some((greeting.as_slice(), *k)),
            _ => None,
        }
    }
}

/// Computes, once per process, the tables of `variant`'s rate model (the paper's and the
/// wide one take about 0.1 s; every later connection shares them), so that a session does not
/// wait for them when its first datagrams come: the client side does this when it is made,
/// the server side for both models when it is made (a client's HELLO names the model only with
/// its first data, and its stream follows at once).
fn prepare(variant: SproutVariant) {
    static DONE: [Once; 3] = [Once::new(), Once::new(), Once::new()];
    let i = match variant {
        SproutVariant::Sprout => 0,
        SproutVariant::SproutEwma => 1,
        SproutVariant::SproutWide => 2,
    };
    DONE[i].call_once(|| {
        // A connection made and dropped: what it computes once stays for the others.
        let _ = Connection::new(variant.config(0.95), Instant::ZERO);
    });
}

/// The HELLO `greeting` is, if it is a valid one.
fn hello_of(greeting: &[u8]) -> Option<Hello> {
    match Message::decode(greeting) {
        Ok(Message::Hello(h)) => Some(h),
        _ => None,
    }
}

/// The Sprout configuration of a session with `hello`: the one it names, or the default.
fn config_of(hello: Option<&Hello>) -> Config {
    hello.map_or_else(Config::default, Hello::config)
}

fn min(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client and a server side with their session up, at `t` microseconds.
    fn pair() -> (Conn, Conn, u64) {
        pair_greeting(b"hi")
    }

    /// [`pair`] with the client's `greeting`.
    fn pair_greeting(greeting: &[u8]) -> (Conn, Conn, u64) {
        let (ck, sk) = (PrivateKey::generate(), PrivateKey::generate());
        let cp = ck.public_key();
        let sp = sk.public_key();
        let mut c = Conn::client(ck, sp, greeting, Instant::ZERO).unwrap();
        let mut s = Conn::server(sk, Some(cp), Instant::ZERO);
        let mut t = 0;
        for _ in 0..50 {
            t += 1_000;
            exchange(&mut c, &mut s, t);
        }
        assert_eq!(
            (c.state(), s.state()),
            (State::Established, State::Established)
        );
        (c, s, t)
    }

    /// Every datagram each way at `t`; how many the client sent.
    fn exchange(c: &mut Conn, s: &mut Conn, t: u64) -> usize {
        let now = Instant::from_micros(t);
        let mut d = Vec::new();
        let mut n = 0;
        c.on_timeout(now);
        s.on_timeout(now);
        while c.poll_transmit(now, &mut d) {
            n += 1;
            assert!(n < 10_000, "endless datagrams from the client at {t} us");
            s.recv(now, &d);
        }
        let mut m = 0;
        while s.poll_transmit(now, &mut d) {
            m += 1;
            assert!(m < 10_000, "endless datagrams from the server at {t} us");
            c.recv(now, &d);
        }
        n
    }

    #[test]
    fn a_clock_that_jumps_to_its_end_sends_a_bounded_number_of_datagrams() {
        let (mut c, mut s, _) = pair();
        for t in [u64::MAX, u64::MAX, u64::MAX - 5] {
            c.send(t, b"x").unwrap();
            exchange(&mut c, &mut s, t);
        }
    }

    #[test]
    fn a_frozen_clock_sends_a_bounded_number_of_datagrams() {
        let (mut c, mut s, t) = pair();
        for i in 0..300 {
            for _ in 0..20 {
                c.send(i, b"").unwrap();
                s.send(i, b"").unwrap();
            }
            exchange(&mut c, &mut s, t + 1);
        }
    }

    #[test]
    fn a_jump_of_hours_is_shown_to_the_protocol_as_a_minute() {
        let (mut c, mut s, t) = pair();
        let later = t + 5 * 3600 * 1_000_000;
        let start = std::time::Instant::now();
        exchange(&mut c, &mut s, later);
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
        // The protocol connection's deadline is back on the caller's clock.
        let d = c.deadline().expect("a deadline");
        assert!(d.as_micros() >= later, "deadline {d:?} before {later}");
    }

    fn hello(scheme: SproutVariant, confidence: f64) -> Hello {
        Hello {
            session: 0x5eed,
            direction: sprout_core::direction::Load::Up,
            mode: message::Mode::Paced,
            scheme,
            confidence,
            rate_kbps: 1000,
            duration_ms: 20_000,
            payload_bytes: 1000,
        }
    }

    #[test]
    fn a_hello_chooses_both_sides_configuration_and_the_server_accepts_it() {
        let h = hello(SproutVariant::SproutWide, 0.9);
        let (mut c, mut s, t) = pair_greeting(&h.encode());
        assert_eq!(
            (c.config.clone(), s.config.clone()),
            (h.config(), h.config())
        );
        assert_ne!(c.config.estimator, Config::default().estimator);
        assert_eq!(s.hello(), Some(&h));
        exchange(&mut c, &mut s, t + 1_000);
        let mut accepts = 0;
        while let Some(m) = c.recv_message() {
            assert!(!m.is_data);
            assert_eq!(Message::decode(&m.payload), Ok(Message::Accept(0x5eed)));
            accepts += 1;
        }
        assert_eq!(accepts, ACCEPT_COPIES);
    }

    #[test]
    fn any_other_greeting_leaves_the_default_and_no_accept() {
        // A HELLO that the server would refuse (confidence 1) is no HELLO.
        let mut bad = hello(SproutVariant::SproutEwma, 0.5).encode();
        bad[28..36].copy_from_slice(&1.0f64.to_bits().to_be_bytes());
        for greeting in [&b"hi"[..], &bad] {
            let (mut c, mut s, t) = pair_greeting(greeting);
            assert_eq!(c.config, Config::default());
            assert_eq!(s.config, Config::default());
            assert_eq!(s.hello(), None);
            exchange(&mut c, &mut s, t + 1_000);
            assert_eq!(c.recv_message(), None);
        }
    }

    #[test]
    fn a_bye_carries_the_session_and_the_totals_of_the_data() {
        let (mut c, mut s, mut t) = pair_greeting(&hello(SproutVariant::Sprout, 0.95).encode());
        for i in 0..5u64 {
            c.send(i, &[7u8; 100]).unwrap();
        }
        c.send_bye().unwrap();
        for _ in 0..20 {
            t += 20_000;
            exchange(&mut c, &mut s, t);
        }
        let got: Vec<Received> = std::iter::from_fn(|| s.recv_message()).collect();
        assert_eq!(got.iter().filter(|m| m.is_data).count(), 5);
        let byes: Vec<_> = got
            .iter()
            .filter_map(|m| match Message::decode(&m.payload) {
                Ok(Message::Bye(b)) if !m.is_data => Some(b),
                _ => None,
            })
            .collect();
        let want = Bye {
            session: 0x5eed,
            data_sent: 5,
            app_bytes_sent: 5 * (DATA_HEADER_BYTES as u64 + 100),
        };
        assert_eq!(byes, vec![want; ACCEPT_COPIES]);
        c.close(Instant::from_micros(t));
        assert!(matches!(c.send_bye(), Err(ConnError::Closed(_))));
    }
}
