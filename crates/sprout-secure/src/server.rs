//! [`Server`]: the server side of the security layer, many sessions on one socket.
//!
//! Sans-IO: the runtime hands it each datagram read from the socket ([`Server::handle`]), asks
//! it to seal each core datagram ([`Server::seal`]), sends what [`Server::poll_transmit`]
//! gives (handshake responses), and runs [`Server::handle_timeout`] at
//! [`Server::poll_timeout`].
//!
//! A session is created when a client's handshake initiation passes `mac1`, the rate limit,
//! Noise and the allowed keys, and the server answers; it is *pending* until the first data
//! datagram sealed with the new keys arrives (which proves the client holds them), and only
//! then reported ([`ServerReceived::NewSession`]). Pending sessions are bounded
//! ([`ServerConfig::max_pending`]) and expire after [`Limits::handshake_timeout`]. A rekey
//! (a new initiation naming an existing session, from the same client key) installs the new
//! keys beside the old ones; the server seals with the new keys once a datagram sealed with
//! them arrives.
//!
//! Roaming: an authenticated data datagram whose counter is the highest yet seen, from another
//! address than the session's, makes that address a *candidate*; the session moves there only
//! when a later authenticated datagram (newer still) comes from it too, and until then the
//! server goes on sending to the old address. A datagram captured on the path and replayed from
//! a spoofed address thus reflects nothing to that address (a genuine client that moved sends
//! a second datagram within its next heartbeat). A newer datagram from the session's own
//! address drops the candidate.
//!
//! Sessions (established and pending) are capped per source ([`crate::ratelimit::source_key`]:
//! an IPv4 address or an IPv6 /64) and per client key; an initiation the server cannot take
//! (full, or its source or key at its cap) is answered with an authenticated refusal
//! ([`handshake::write_refusal`]) that names the reason, and no session is made for it. Under
//! load, initiations without a valid `mac2` get a cookie reply instead ([`crate::cookie`]).
//! A pending session holds no slot against an initiation of the same key: at the key's cap,
//! the oldest pending session of the key is forgotten to make room, so
//! that a path that delivers a client's initiations but loses the answers cannot lock its
//! owner out; established sessions keep their slots.
//!
//! Endings: [`Server::close`] queues the session's close (a few copies, sealed with its keys)
//! for [`Server::poll_transmit`]; a client's close, authenticated by the session's keys, ends
//! the session at once ([`ServerReceived::Closed`]). A close for an unknown session, or one
//! that fails its tag, changes nothing but a counter.

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::{IpAddr, SocketAddr};

use blake2::{Blake2s256, Digest};
use sprout_core::time::{Duration, Instant};

use crate::cookie::CookieMaker;
use crate::handshake::{self, InitiationError, Mac1, RefusalReason, KIND_NEW};
use crate::keys::{PrivateKey, PublicKey};
use crate::keyset::KeySet;
use crate::ratelimit::{source_key, HandshakeLimiter};
use crate::stats::{DropReason, SecureStats};
use crate::wire::{self, DataHeader, PrefixError};
use crate::{Limits, SealError, SessionId};

/// Which clients may open sessions.
#[derive(Clone, Debug)]
pub enum AllowedClients {
    /// Any client key (an open test server; still encrypted and authenticated per session).
    Any,
    /// Only these client public keys.
    Keys(HashSet<PublicKey>),
}

/// Default of [`ServerConfig::max_sessions_per_source`], sessions.
pub const DEFAULT_MAX_SESSIONS_PER_SOURCE: usize = 16;
/// Default of [`ServerConfig::max_sessions_per_key`], sessions.
pub const DEFAULT_MAX_SESSIONS_PER_KEY: usize = 8;

/// Configuration of a [`Server`].
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The server's private key.
    pub private_key: PrivateKey,
    /// Which client keys may open sessions.
    pub allowed: AllowedClients,
    /// Most sessions at once, established and pending (default 1024).
    pub max_sessions: usize,
    /// Most sessions at once, established and pending, from one source: an IPv4 address or an
    /// IPv6 /64 (default [`DEFAULT_MAX_SESSIONS_PER_SOURCE`] = 16). Beyond it, initiations from
    /// that source are refused ([`RefusalReason::SourceCap`]).
    pub max_sessions_per_source: usize,
    /// Most sessions at once, established and pending, of one client public key (default
    /// [`DEFAULT_MAX_SESSIONS_PER_KEY`] = 8). Beyond it, initiations with that key are refused
    /// ([`RefusalReason::KeyCap`]).
    pub max_sessions_per_key: usize,
    /// Most pending sessions (answered, not yet confirmed) at once (default 256); beyond it
    /// the oldest pending one is forgotten.
    pub max_pending: usize,
    /// A session with no authenticated datagram for this long is closed (default 30 s).
    pub idle_timeout: Duration,
    /// Handshake initiations processed per second, all sources together (default 500). When
    /// fewer than a quarter of a second's worth are left, the server is under load: it answers
    /// initiations without a valid `mac2` with a cookie reply, and processes those with one
    /// within the per-source rate only.
    pub handshakes_per_s: u32,
    /// Handshake initiations processed per second from one source, an IPv4 address or an IPv6
    /// /64 (default 100).
    pub handshakes_per_s_per_source: u32,
    /// Key limits.
    pub limits: Limits,
}

impl ServerConfig {
    /// A configuration with the defaults above.
    pub fn new(private_key: PrivateKey, allowed: AllowedClients) -> ServerConfig {
        ServerConfig {
            private_key,
            allowed,
            max_sessions: 1024,
            max_sessions_per_source: DEFAULT_MAX_SESSIONS_PER_SOURCE,
            max_sessions_per_key: DEFAULT_MAX_SESSIONS_PER_KEY,
            max_pending: 256,
            idle_timeout: Duration::from_secs(30),
            handshakes_per_s: 500,
            handshakes_per_s_per_source: 100,
            limits: Limits::default(),
        }
    }
}

/// What [`Server::handle`] made of a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerReceived {
    /// A client's session is now established: its first datagram under the new keys came.
    /// The client's greeting is kept for [`Server::take_greeting`]. If that first datagram
    /// carried a core datagram (not an empty keepalive), `data` is set and the plaintext buffer
    /// holds it.
    NewSession {
        /// The session.
        id: SessionId,
        /// The client's public key.
        peer: PublicKey,
        /// Where the client is.
        addr: SocketAddr,
        /// The plaintext buffer holds a core datagram.
        data: bool,
    },
    /// The plaintext buffer holds a core datagram for session `id`.
    Data {
        /// The session.
        id: SessionId,
    },
    /// Handled inside the layer (a handshake answered, a keepalive, a rekey, a copy of a
    /// close already taken); nothing for the application. A reply may be waiting in
    /// [`Server::poll_transmit`].
    Control,
    /// The client closed session `id` (an authenticated close): it is gone.
    Closed {
        /// The session.
        id: SessionId,
    },
    /// Dropped and counted.
    Dropped(DropReason),
}

/// Something that happened to a session outside [`Server::handle`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerEvent {
    /// The session had no authenticated datagram for [`ServerConfig::idle_timeout`], or
    /// its keys expired; it is gone.
    Closed {
        /// The session.
        id: SessionId,
    },
}

/// What the server knows of one session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionInfo {
    /// The client's public key.
    pub peer: PublicKey,
    /// The client's current address (where the server sends).
    pub addr: SocketAddr,
    /// An address the client's newest datagram came from, not yet confirmed by a second one
    /// (nothing is sent there until then).
    pub candidate: Option<SocketAddr>,
    /// When the last authenticated datagram arrived.
    pub last_received: Instant,
    /// Datagrams sealed for it.
    pub sealed: u64,
    /// Datagrams opened from it.
    pub opened: u64,
    /// Completed rekeys.
    pub rekeys: u64,
    /// Address changes (roaming, each confirmed).
    pub roams: u64,
}

/// Most handshake responses waiting for [`Server::poll_transmit`]; beyond, the oldest is
/// dropped (the client repeats its initiation).
pub const MAX_QUEUED_TRANSMITS: usize = 1024;
/// Most events waiting for [`Server::poll_event`]; beyond, the oldest is dropped.
pub const MAX_QUEUED_EVENTS: usize = 4096;

/// One session (pending or established).
struct Session {
    peer: PublicKey,
    addr: SocketAddr,
    /// The source `addr` counts against (see [`source_key`]).
    source: IpAddr,
    /// A new address seen once, waiting for a second authenticated datagram from it.
    candidate: Option<SocketAddr>,
    /// Confirmed by a datagram under its first keys (and reported to the application).
    established: bool,
    /// The keys the server seals with.
    current: KeySet,
    /// A rekey answered but not yet confirmed by a datagram under its keys.
    next: Option<KeySet>,
    /// The keys before the last rekey, kept to open reordered datagrams.
    previous: Option<KeySet>,
    greeting: Vec<u8>,
    created: Instant,
    last_received: Instant,
    sealed: u64,
    opened: u64,
    rekeys: u64,
    roams: u64,
    /// Handshake number of the last initiation accepted for this session.
    number: u64,
    /// Client ephemeral of that initiation (the key of `Server::by_ephemeral`).
    ephemeral: [u8; 32],
    /// Hash of that initiation, to recognise an identical repeat.
    initiation_hash: [u8; 32],
    /// The response sent to it (sent again to an identical repeat).
    response: Vec<u8>,
}

/// Which keys of a session opened a datagram.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    Current,
    Next,
    Previous,
}

/// The server side: sessions, pending handshakes, rate limits, counters.
pub struct Server {
    config: ServerConfig,
    public: PublicKey,
    mac1: Mac1,
    limiter: HandshakeLimiter,
    cookies: CookieMaker,
    sessions: HashMap<SessionId, Session>,
    /// Sessions (established and pending) per source.
    per_source: HashMap<IpAddr, usize>,
    /// Sessions (established and pending) per client key.
    per_key: HashMap<PublicKey, usize>,
    /// The latest initiation's client ephemeral of each session.
    by_ephemeral: HashMap<[u8; 32], SessionId>,
    /// Pending session ids, oldest first (may hold ids no longer pending; skipped).
    pending_order: VecDeque<SessionId>,
    pending: usize,
    established: usize,
    transmits: VecDeque<(SocketAddr, Vec<u8>)>,
    events: VecDeque<ServerEvent>,
    stats: SecureStats,
    /// No timer is due before this (a conservative, early bound).
    next_timer: Option<Instant>,
    /// The latest closes taken from clients (at most [`RECENT_CLOSES`], oldest first): their
    /// copies are recognized and not counted as drops.
    recent_closes: VecDeque<[u8; wire::CLOSE_BYTES]>,
}

/// Closes a [`Server`] remembers, so that the copies a client sends of its close
/// ([`wire::CLOSE_COPIES`]) are not counted as datagrams for an unknown session.
pub const RECENT_CLOSES: usize = 64;

/// A random 32-bit value from the operating system.
pub(crate) fn random_u32() -> Option<u32> {
    let mut b = [0u8; 4];
    getrandom::getrandom(&mut b).ok()?;
    Some(u32::from_be_bytes(b))
}

fn hash32(bytes: &[u8]) -> [u8; 32] {
    Blake2s256::digest(bytes).into()
}

impl Server {
    /// A server with `config`.
    pub fn new(config: ServerConfig) -> Server {
        let public = config.private_key.public_key();
        let limiter = HandshakeLimiter::new(
            config.handshakes_per_s,
            config.handshakes_per_s_per_source,
            Instant::ZERO,
        );
        Server {
            mac1: Mac1::new(&public),
            cookies: CookieMaker::new(&public),
            public,
            limiter,
            config,
            sessions: HashMap::new(),
            per_source: HashMap::new(),
            per_key: HashMap::new(),
            by_ephemeral: HashMap::new(),
            pending_order: VecDeque::new(),
            pending: 0,
            established: 0,
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            stats: SecureStats::default(),
            next_timer: None,
            recent_closes: VecDeque::new(),
        }
    }

    /// The server's public key.
    pub fn public_key(&self) -> PublicKey {
        self.public
    }

    fn drop_with(&mut self, reason: DropReason) -> ServerReceived {
        self.stats.drop(reason);
        ServerReceived::Dropped(reason)
    }

    /// Takes one datagram from `from` that arrived at `now`; the core datagram it carries,
    /// if any ([`ServerReceived::Data`], or [`ServerReceived::NewSession`] with `data`), goes
    /// into `plaintext` (cleared first; a new session's greeting is kept for
    /// [`Server::take_greeting`]). Never panics; nothing that fails a check changes any state
    /// but a counter. (A handshake initiation that passes `mac1` uses a rate-limit token
    /// whatever becomes of it; an answered one queues its response, or a refusal, for
    /// [`Server::poll_transmit`]; under load, one without a valid `mac2` queues a cookie
    /// reply instead.)
    pub fn handle(
        &mut self,
        now: Instant,
        from: SocketAddr,
        datagram: &[u8],
        plaintext: &mut Vec<u8>,
    ) -> ServerReceived {
        plaintext.clear();
        if datagram.len() > wire::MAX_DATAGRAM_BYTES {
            return self.drop_with(DropReason::Malformed);
        }
        match wire::message_type(datagram) {
            Err(e) => self.drop_with(prefix_reason(e)),
            Ok(wire::TYPE_INITIATION) => self.handle_initiation(now, from, datagram),
            Ok(wire::TYPE_DATA) => self.handle_data(now, from, datagram, plaintext),
            Ok(wire::TYPE_CLOSE) => self.handle_close(now, datagram),
            Ok(_) => self.drop_with(DropReason::UnexpectedResponse),
        }
    }

    fn handle_initiation(&mut self, now: Instant, from: SocketAddr, d: &[u8]) -> ServerReceived {
        if let Err(r) = handshake::initiation_shape_ok(d) {
            return self.drop_with(r);
        }
        if !self.mac1.verify_initiation(d) {
            return self.drop_with(DropReason::BadMac);
        }
        if let Some(r) = self.admit(now, from, d) {
            return r;
        }
        // An identical repeat of the latest initiation of a session (the client's retry, or a
        // replay) is answered with the same response: no new keys, no new session.
        let ephemeral = handshake::initiation_ephemeral(d);
        let digest = hash32(handshake::initiation_body(d));
        if let Some(s) = self
            .by_ephemeral
            .get(&ephemeral)
            .and_then(|id| self.sessions.get(id))
        {
            if s.initiation_hash == digest {
                let response = s.response.clone();
                self.queue_transmit(from, response);
                return ServerReceived::Control;
            }
        }
        let r = match handshake::respond(&self.config.private_key, d) {
            Ok(r) => r,
            Err(InitiationError::Noise) => return self.drop_with(DropReason::HandshakeFailed),
            Err(InitiationError::Malformed) => return self.drop_with(DropReason::Malformed),
        };
        if let AllowedClients::Keys(keys) = &self.config.allowed {
            if !keys.contains(&r.client) {
                return self.drop_with(DropReason::NotAllowed);
            }
        }
        if r.payload.kind == KIND_NEW {
            self.new_session(now, from, r, ephemeral, digest)
        } else {
            self.rekey(now, from, r, ephemeral, digest)
        }
    }

    /// The rate limit of an initiation (shape and `mac1` checked) from `from`: `None` to go
    /// on, or what became of it. Under load, one without a valid `mac2` gets a cookie reply
    /// (and counts as rate-limited); one with a valid `mac2` is limited per source only.
    fn admit(&mut self, now: Instant, from: SocketAddr, d: &[u8]) -> Option<ServerReceived> {
        let proven = d[3] == wire::FLAG_MAC2 && self.cookies.mac2_valid(now, from, d);
        let allowed = if !self.limiter.under_load(now) {
            self.limiter.allow(from.ip(), now)
        } else if proven {
            self.limiter.allow_proven(from.ip(), now)
        } else {
            let mac1 = handshake::initiation_mac1(d);
            if let Some(reply) = self.cookies.reply(now, from, &mac1) {
                self.stats.cookie_replies += 1;
                self.queue_transmit(from, reply);
            }
            false
        };
        (!allowed).then(|| self.drop_with(DropReason::RateLimited))
    }

    /// Answers an initiation read with `r` from `from` with a refusal for `reason` (no
    /// session is made); counted as [`DropReason::TooManySessions`].
    fn refuse(
        &mut self,
        from: SocketAddr,
        r: handshake::Responder,
        reason: RefusalReason,
        limit: usize,
    ) -> ServerReceived {
        let idle_s = self.config.idle_timeout.as_micros() / 1_000_000;
        let refusal = handshake::write_refusal(
            r.state,
            r.payload.client_index,
            reason,
            u32::try_from(limit).unwrap_or(u32::MAX),
            u32::try_from(idle_s).unwrap_or(u32::MAX),
        );
        if let Ok(refusal) = refusal {
            self.stats.refusals += 1;
            self.queue_transmit(from, refusal);
        }
        self.drop_with(DropReason::TooManySessions)
    }

    /// A close from a client: removes the session if one of its keys (by the close's epoch)
    /// authenticates it.
    fn handle_close(&mut self, now: Instant, d: &[u8]) -> ServerReceived {
        let Ok(close) = <[u8; wire::CLOSE_BYTES]>::try_from(d) else {
            return self.drop_with(DropReason::Truncated);
        };
        // A copy of a close already taken (the client sends a few): nothing to do or count.
        if self.recent_closes.contains(&close) {
            return ServerReceived::Control;
        }
        let (epoch, id) = (d[3], wire::be_u32(d, 4));
        let limits = &self.config.limits;
        let Some(s) = self.sessions.get(&id) else {
            return self.drop_with(DropReason::UnknownSession);
        };
        let keys = [Some(&s.current), s.next.as_ref(), s.previous.as_ref()]
            .into_iter()
            .flatten()
            .find(|k| k.epoch == epoch);
        let Some(keys) = keys else {
            return self.drop_with(DropReason::UnknownEpoch);
        };
        if !keys.opens_close(now, limits, d) {
            return self.drop_with(DropReason::Forged);
        }
        self.stats.opened += 1;
        self.remove(id);
        if self.recent_closes.len() >= RECENT_CLOSES {
            self.recent_closes.pop_front();
        }
        self.recent_closes.push_back(close);
        ServerReceived::Closed { id }
    }

    /// Forgets the oldest pending session for which `of` holds, if any; whether one was.
    fn forget_oldest_pending_of(&mut self, of: impl Fn(&Session) -> bool) -> bool {
        let found = self.pending_order.iter().copied().find(|id| {
            self.sessions
                .get(id)
                .is_some_and(|s| !s.established && of(s))
        });
        match found {
            Some(id) => {
                self.remove(id);
                true
            }
            None => false,
        }
    }

    /// Forgets the oldest pending session, if any; whether one was.
    fn forget_oldest_pending(&mut self) -> bool {
        while let Some(id) = self.pending_order.pop_front() {
            if self.sessions.get(&id).is_some_and(|s| !s.established) {
                self.remove(id);
                return true;
            }
        }
        false
    }

    fn new_session(
        &mut self,
        now: Instant,
        from: SocketAddr,
        r: handshake::Responder,
        ephemeral: [u8; 32],
        digest: [u8; 32],
    ) -> ServerReceived {
        if r.payload.session != 0 {
            return self.drop_with(DropReason::Malformed);
        }
        let source = source_key(from.ip());
        // At the key's cap, a pending session of the key gives way: only established sessions
        // hold their slots.
        let (client, per_key) = (r.client, self.config.max_sessions_per_key);
        if self.per_key.get(&client).copied().unwrap_or(0) >= per_key
            && !self.forget_oldest_pending_of(|s| s.peer == client)
        {
            return self.refuse(from, r, RefusalReason::KeyCap, per_key);
        }
        let per_source = self.config.max_sessions_per_source;
        if self.per_source.get(&source).copied().unwrap_or(0) >= per_source {
            return self.refuse(from, r, RefusalReason::SourceCap, per_source);
        }
        if self.sessions.len() >= self.config.max_sessions && !self.forget_oldest_pending() {
            let max = self.config.max_sessions;
            return self.refuse(from, r, RefusalReason::Full, max);
        }
        if self.pending >= self.config.max_pending.max(1) {
            self.forget_oldest_pending();
        }
        let Some(id) = self.fresh_id() else {
            return self.drop_with(DropReason::HandshakeFailed);
        };
        let (response, transport) =
            match handshake::write_response(r.state, r.payload.client_index, 0, id) {
                Ok(x) => x,
                Err(_) => return self.drop_with(DropReason::HandshakeFailed),
            };
        let session = Session {
            peer: r.client,
            addr: from,
            source,
            candidate: None,
            established: false,
            current: KeySet::new(0, transport, now, r.payload.client_index),
            next: None,
            previous: None,
            greeting: r.payload.greeting,
            created: now,
            last_received: now,
            sealed: 0,
            opened: 0,
            rekeys: 0,
            roams: 0,
            number: r.payload.number,
            ephemeral,
            initiation_hash: digest,
            response: response.clone(),
        };
        self.sessions.insert(id, session);
        *self.per_source.entry(source).or_insert(0) += 1;
        *self.per_key.entry(r.client).or_insert(0) += 1;
        self.by_ephemeral.insert(ephemeral, id);
        self.pending += 1;
        self.pending_order.push_back(id);
        if self.pending_order.len() > 2 * self.config.max_pending.max(1) + 64 {
            let sessions = &self.sessions;
            self.pending_order
                .retain(|id| sessions.get(id).is_some_and(|s| !s.established));
        }
        self.timer_at(now + self.config.limits.handshake_timeout);
        self.queue_transmit(from, response);
        ServerReceived::Control
    }

    fn rekey(
        &mut self,
        now: Instant,
        from: SocketAddr,
        r: handshake::Responder,
        ephemeral: [u8; 32],
        digest: [u8; 32],
    ) -> ServerReceived {
        let id = r.payload.session;
        let Some(s) = self.sessions.get_mut(&id).filter(|s| s.established) else {
            return self.drop_with(DropReason::UnknownSession);
        };
        if s.peer != r.client {
            return self.drop_with(DropReason::NotAllowed);
        }
        if r.payload.number <= s.number {
            // An older initiation of this client replayed: it must not replace keys.
            return self.drop_with(DropReason::Replayed);
        }
        let epoch = s.current.epoch.wrapping_add(1);
        let (response, transport) =
            match handshake::write_response(r.state, r.payload.client_index, epoch, id) {
                Ok(x) => x,
                Err(_) => return self.drop_with(DropReason::HandshakeFailed),
            };
        s.next = Some(KeySet::new(epoch, transport, now, r.payload.client_index));
        s.number = r.payload.number;
        let old_ephemeral = std::mem::replace(&mut s.ephemeral, ephemeral);
        s.initiation_hash = digest;
        s.response = response.clone();
        self.by_ephemeral.remove(&old_ephemeral);
        self.by_ephemeral.insert(ephemeral, id);
        self.timer_at(now + self.config.limits.handshake_timeout);
        self.queue_transmit(from, response);
        ServerReceived::Control
    }

    fn handle_data(
        &mut self,
        now: Instant,
        from: SocketAddr,
        d: &[u8],
        plaintext: &mut Vec<u8>,
    ) -> ServerReceived {
        let Some(h) = DataHeader::parse(d) else {
            return self.drop_with(DropReason::Truncated);
        };
        let limits = &self.config.limits;
        let Some(s) = self.sessions.get_mut(&h.receiver) else {
            return self.drop_with(DropReason::UnknownSession);
        };
        let (slot, keys) = if s.current.epoch == h.epoch {
            (Slot::Current, &mut s.current)
        } else if let Some(k) = s.next.as_mut().filter(|k| k.epoch == h.epoch) {
            (Slot::Next, k)
        } else if let Some(k) = s.previous.as_mut().filter(|k| k.epoch == h.epoch) {
            (Slot::Previous, k)
        } else {
            return self.drop_with(DropReason::UnknownEpoch);
        };
        let newest = match keys.open(now, limits, &h, d, plaintext) {
            Ok(n) => n,
            Err(r) => return self.drop_with(r),
        };
        // Authenticated: from here on the datagram may change state.
        s.last_received = now;
        s.opened += 1;
        self.stats.opened += 1;
        if slot == Slot::Next {
            if let Some(next) = s.next.take() {
                s.previous = Some(std::mem::replace(&mut s.current, next));
                s.rekeys += 1;
                self.stats.rekeys += 1;
                self.stats.handshakes += 1;
            }
        }
        if newest && slot != Slot::Previous {
            if s.addr == from {
                s.candidate = None;
            } else if s.candidate == Some(from) {
                // A second, newer datagram from the new address: the client is there.
                s.candidate = None;
                s.addr = from;
                let source = source_key(from.ip());
                let old = std::mem::replace(&mut s.source, source);
                uncount(&mut self.per_source, &old);
                *self.per_source.entry(source).or_insert(0) += 1;
                s.roams += 1;
                self.stats.roams += 1;
            } else {
                s.candidate = Some(from);
            }
        }
        if !s.established {
            s.established = true;
            self.pending = self.pending.saturating_sub(1);
            self.established += 1;
            self.stats.handshakes += 1;
            // Idle, or keys too old: whichever comes first.
            let deadline = s.current.created
                + self
                    .config
                    .idle_timeout
                    .min(self.config.limits.reject_after);
            let addr = s.addr;
            let peer = s.peer;
            self.timer_at(deadline);
            return ServerReceived::NewSession {
                id: h.receiver,
                peer,
                addr,
                data: !plaintext.is_empty(),
            };
        }
        if plaintext.is_empty() {
            ServerReceived::Control
        } else {
            ServerReceived::Data { id: h.receiver }
        }
    }

    /// A random session id, not 0 and not in use.
    fn fresh_id(&self) -> Option<SessionId> {
        for _ in 0..64 {
            let id = random_u32()?;
            if id != 0 && !self.sessions.contains_key(&id) {
                return Some(id);
            }
        }
        None
    }

    fn queue_transmit(&mut self, to: SocketAddr, datagram: Vec<u8>) {
        if self.transmits.len() >= MAX_QUEUED_TRANSMITS {
            self.transmits.pop_front();
        }
        self.transmits.push_back((to, datagram));
    }

    fn timer_at(&mut self, at: Instant) {
        self.next_timer = Some(self.next_timer.map_or(at, |t| t.min(at)));
    }

    /// Removes a session and its index entries (no event).
    fn remove(&mut self, id: SessionId) -> Option<Session> {
        let s = self.sessions.remove(&id)?;
        uncount(&mut self.per_source, &s.source);
        uncount(&mut self.per_key, &s.peer);
        if self.by_ephemeral.get(&s.ephemeral) == Some(&id) {
            self.by_ephemeral.remove(&s.ephemeral);
        }
        if s.established {
            self.established = self.established.saturating_sub(1);
        } else {
            self.pending = self.pending.saturating_sub(1);
        }
        Some(s)
    }

    /// Seals the core datagram `plaintext` for session `id` into `out` (cleared first) and
    /// returns the address to send it to.
    pub fn seal(
        &mut self,
        now: Instant,
        id: SessionId,
        plaintext: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<SocketAddr, SealError> {
        out.clear();
        let Some(s) = self.sessions.get_mut(&id).filter(|s| s.established) else {
            return Err(SealError::UnknownSession(id));
        };
        s.current.seal(now, &self.config.limits, plaintext, out)?;
        s.sealed += 1;
        self.stats.sealed += 1;
        Ok(s.addr)
    }

    /// The next datagram the layer itself must send (a handshake response), written into
    /// `out` (cleared first), with its destination; `None` when there is none.
    pub fn poll_transmit(&mut self, out: &mut Vec<u8>) -> Option<SocketAddr> {
        out.clear();
        let (to, datagram) = self.transmits.pop_front()?;
        out.extend_from_slice(&datagram);
        Some(to)
    }

    /// Runs the timers due by `now`: idle sessions and expired keys closed (reported by
    /// [`Server::poll_event`]), pending handshakes expired, rate limits refilled.
    pub fn handle_timeout(&mut self, now: Instant) {
        match self.next_timer {
            Some(t) if t <= now => {}
            _ => return,
        }
        let limits = self.config.limits.clone();
        let idle = self.config.idle_timeout;
        let mut gone = Vec::new();
        let mut next: Option<Instant> = None;
        let mut at = |t: Instant| next = Some(next.map_or(t, |n: Instant| n.min(t)));
        for (&id, s) in self.sessions.iter_mut() {
            if !s.established {
                let deadline = s.created + limits.handshake_timeout;
                if now >= deadline {
                    gone.push((id, false));
                } else {
                    at(deadline);
                }
                continue;
            }
            let idle_at = s.last_received + idle;
            let expire_at = s.current.created + limits.reject_after;
            if now >= idle_at || now >= expire_at {
                gone.push((id, true));
                continue;
            }
            at(idle_at);
            at(expire_at);
            if let Some(p) = &s.previous {
                let t = p.created + limits.reject_after;
                if now >= t {
                    s.previous = None;
                } else {
                    at(t);
                }
            }
            if let Some(n) = &s.next {
                let t = n.created + limits.handshake_timeout;
                if now >= t {
                    s.next = None;
                } else {
                    at(t);
                }
            }
        }
        self.next_timer = next;
        for (id, report) in gone {
            self.remove(id);
            if report {
                if self.events.len() >= MAX_QUEUED_EVENTS {
                    self.events.pop_front();
                }
                self.events.push_back(ServerEvent::Closed { id });
            }
        }
        let sessions = &self.sessions;
        self.pending_order
            .retain(|id| sessions.get(id).is_some_and(|s| !s.established));
    }

    /// When [`Server::handle_timeout`] is next needed.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.next_timer
    }

    /// The next session event, if any.
    pub fn poll_event(&mut self) -> Option<ServerEvent> {
        self.events.pop_front()
    }

    /// Ends a session at once (the application closed it): its close, sealed with its keys,
    /// is queued [`wire::CLOSE_COPIES`] times for [`Server::poll_transmit`] (if it was
    /// established), and later datagrams for it are dropped as [`DropReason::UnknownSession`].
    pub fn close_at(&mut self, now: Instant, id: SessionId) {
        let mut close = Vec::new();
        let written = self.sessions.get(&id).is_some_and(|s| {
            s.established
                && s.current
                    .close_message(now, &self.config.limits, &mut close)
        });
        if let (true, Some(s)) = (written, self.remove(id)) {
            for _ in 0..wire::CLOSE_COPIES {
                self.queue_transmit(s.addr, close.clone());
            }
        }
    }

    /// Forgets a session at once, without telling its client (see [`Server::close_at`]);
    /// later datagrams for it are dropped as [`DropReason::UnknownSession`].
    pub fn close(&mut self, id: SessionId) {
        self.remove(id);
    }

    /// The greeting of session `id`'s client handshake (empty once taken, or if none).
    pub fn take_greeting(&mut self, id: SessionId) -> Vec<u8> {
        self.sessions
            .get_mut(&id)
            .map(|s| std::mem::take(&mut s.greeting))
            .unwrap_or_default()
    }

    /// What the server knows of session `id`.
    pub fn session(&self, id: SessionId) -> Option<SessionInfo> {
        let s = self.sessions.get(&id).filter(|s| s.established)?;
        Some(SessionInfo {
            peer: s.peer,
            addr: s.addr,
            candidate: s.candidate,
            last_received: s.last_received,
            sealed: s.sealed,
            opened: s.opened,
            rekeys: s.rekeys,
            roams: s.roams,
        })
    }

    /// Established sessions now.
    pub fn session_count(&self) -> usize {
        self.established
    }

    /// Pending sessions now (answered, not yet confirmed by the client).
    pub fn pending_count(&self) -> usize {
        self.pending
    }

    /// Ids of the established sessions now (in no particular order).
    pub fn session_ids(&self) -> Vec<SessionId> {
        self.sessions
            .iter()
            .filter(|(_, s)| s.established)
            .map(|(&id, _)| id)
            .collect()
    }

    /// Counters.
    pub fn stats(&self) -> SecureStats {
        let mut s = self.stats.clone();
        s.sessions = self.established as u64;
        s
    }

    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }
}

/// One session fewer for `k` (its entry goes at 0).
fn uncount<K: std::hash::Hash + Eq>(counts: &mut HashMap<K, usize>, k: &K) {
    if let Some(n) = counts.get_mut(k) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            counts.remove(k);
        }
    }
}

/// The drop reason of a refused prefix.
pub(crate) fn prefix_reason(e: PrefixError) -> DropReason {
    match e {
        PrefixError::Truncated => DropReason::Truncated,
        PrefixError::NotSprout => DropReason::NotSprout,
        PrefixError::OldVersion => DropReason::OldVersion,
        PrefixError::UnknownVersion => DropReason::UnknownVersion,
        PrefixError::UnknownType => DropReason::Malformed,
    }
}
