//! [`Client`]: the client side of the security layer, one session to one server.
//!
//! The client sends a handshake initiation at once (carrying its greeting, authenticated and
//! encrypted), repeats it every [`Limits::handshake_retry`] until the server answers, and
//! gives up after [`Limits::handshake_timeout`]. On the answer it is established and at
//! once queues an empty keepalive that confirms the keys to the server. It starts a rekey
//! (a fresh handshake naming its session) when its keys reach [`Limits::rekey_after`] or
//! [`Limits::rekey_after_messages`], and keeps sealing with the old keys until the answer
//! comes.
//!
//! A server under load may answer with a cookie reply ([`crate::cookie`]): the client keeps the
//! cookie, puts `mac2` on its initiations from then on (for [`crate::cookie::COOKIE_LIFETIME`])
//! and sends the initiation again at once. A server that cannot take the client answers with
//! an authenticated refusal: the client tries again every [`REFUSED_RETRY`] (a slot may free
//! up), shows the refusal at once through [`Client::refusal`], and if no session comes before
//! [`Limits::handshake_timeout`] fails with [`SecureError::Refused`] ("server full (N
//! sessions) - try later"), not with a timeout that hints at the keys.
//!
//! Endings: a client that quits sends the session's close ([`Client::close`], a few copies);
//! the server's close, authenticated by the session's keys, ends the client with
//! [`SecureError::ClosedByServer`] ([`ClientReceived::Closed`]), which a redialling client
//! takes as final (the server ended the session; it is not dead).

use sprout_core::time::{Duration, Instant};

use crate::cookie::{CookieCipher, COOKIE_LIFETIME};
use crate::handshake::{
    self, InitiationPayload, Initiator, Mac1, ServerReply, KIND_NEW, KIND_REKEY,
};
use crate::keys::{PrivateKey, PublicKey};
use crate::keyset::KeySet;
use crate::server::{prefix_reason, random_u32};
use crate::stats::{DropReason, SecureStats};
use crate::wire::{self, DataHeader, CLOSE_BYTES, COOKIE_BYTES, MAC_BYTES};
use crate::{Limits, SealError, SecureError};

/// Configuration of a [`Client`].
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// The client's private key.
    pub private_key: PrivateKey,
    /// The server's public key.
    pub server_key: PublicKey,
    /// Key limits.
    pub limits: Limits,
}

/// What [`Client::handle`] made of a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientReceived {
    /// The handshake completed: the session is established (first time only).
    Established,
    /// The plaintext buffer holds a core datagram from the server.
    Data,
    /// Handled inside the layer (a rekey answer, a keepalive); nothing for the application.
    Control,
    /// The server closed the session (an authenticated close): the client has ended
    /// ([`Client::error`] is [`SecureError::ClosedByServer`]).
    Closed,
    /// Dropped and counted.
    Dropped(DropReason),
}

/// How often a client the server refused tries again (each try costs the server a
/// Diffie-Hellman), unless [`Limits::handshake_retry`] is longer.
pub const REFUSED_RETRY: Duration = Duration::from_secs(1);

/// A handshake the client has sent and waits an answer for.
struct Attempt {
    initiator: Initiator,
    kind: u8,
    started: Instant,
    /// How long to wait for an answer before sending again.
    retry_every: Duration,
    /// When the initiation was last sent (`None`: not yet).
    last_sent: Option<Instant>,
    /// The initiation is due to be (re)sent by [`Client::poll_transmit`].
    send: bool,
    /// The `mac1` of the last two datagrams of this initiation sent (with or without `mac2`
    /// they differ), newest first: a cookie reply must name one of them.
    sent_mac1: [Option<[u8; MAC_BYTES]>; 2],
    /// The cookie the last datagram sent carried `mac2` with, if any.
    sent_cookie: Option<[u8; COOKIE_BYTES]>,
}

/// The client side of one session.
pub struct Client {
    config: ClientConfig,
    mac1: Mac1,
    cookie_cipher: CookieCipher,
    /// The latest cookie from the server and when it came.
    cookie: Option<([u8; COOKIE_BYTES], Instant)>,
    /// The client's receiver index (connection id of datagrams from the server).
    index: u32,
    /// The server's session id (from its response).
    session: u32,
    current: Option<KeySet>,
    previous: Option<KeySet>,
    attempt: Option<Attempt>,
    greeting: Vec<u8>,
    /// Handshake number of the last initiation made.
    number: u64,
    established: bool,
    error: Option<SecureError>,
    /// The server's latest refusal of the handshake under way ([`SecureError::Refused`]).
    refused: Option<SecureError>,
    /// An empty datagram under the current keys is due (confirms a handshake).
    keepalive: bool,
    /// The server's close this client took: its copies (the server sends
    /// [`wire::CLOSE_COPIES`]) are recognized and not counted as drops.
    taken_close: Option<[u8; CLOSE_BYTES]>,
    stats: SecureStats,
}

impl Client {
    /// A client that starts its handshake at `now` with `greeting` (at most
    /// [`crate::wire::MAX_GREETING_BYTES`]), which the server's application receives with the
    /// new session.
    pub fn new(config: ClientConfig, now: Instant, greeting: &[u8]) -> Result<Client, SecureError> {
        if greeting.len() > wire::MAX_GREETING_BYTES {
            return Err(SecureError::GreetingTooLong(greeting.len()));
        }
        let index = loop {
            match random_u32() {
                Some(0) => continue,
                Some(i) => break i,
                None => {
                    return Err(SecureError::Key(
                        "the operating system's random generator failed".into(),
                    ))
                }
            }
        };
        let mut client = Client {
            mac1: Mac1::new(&config.server_key),
            cookie_cipher: CookieCipher::new(&config.server_key),
            cookie: None,
            config,
            index,
            session: 0,
            current: None,
            previous: None,
            attempt: None,
            greeting: greeting.to_vec(),
            number: 0,
            established: false,
            error: None,
            refused: None,
            keepalive: false,
            taken_close: None,
            stats: SecureStats::default(),
        };
        client.start_attempt(now, KIND_NEW)?;
        Ok(client)
    }

    /// Makes a fresh initiation (new ephemeral, next handshake number) and queues it.
    fn start_attempt(&mut self, now: Instant, kind: u8) -> Result<(), SecureError> {
        self.number = self.number.saturating_add(1);
        let payload = InitiationPayload {
            kind,
            client_index: self.index,
            session: if kind == KIND_NEW { 0 } else { self.session },
            number: self.number,
            greeting: if kind == KIND_NEW {
                self.greeting.clone()
            } else {
                Vec::new()
            },
        };
        let initiator = handshake::initiate(
            &self.config.private_key,
            &self.config.server_key,
            &self.mac1,
            &payload,
        )
        .map_err(|e| SecureError::Key(e.to_string()))?;
        self.attempt = Some(Attempt {
            initiator,
            kind,
            started: now,
            retry_every: self.config.limits.handshake_retry,
            last_sent: None,
            send: true,
            sent_mac1: [None; 2],
            sent_cookie: None,
        });
        Ok(())
    }

    /// Starts a rekey if none is under way, the session is up, and the keys are due one
    /// (by age at `now`, or by a counter of `counter`).
    fn maybe_rekey(&mut self, now: Instant, counter: u64) {
        if self.attempt.is_some() || self.error.is_some() {
            return;
        }
        let Some(k) = &self.current else { return };
        let limits = &self.config.limits;
        let due = now - k.created >= limits.rekey_after
            || counter >= limits.rekey_after_messages
            || k.send_counter >= limits.rekey_after_messages;
        if due {
            if let Err(e) = self.start_attempt(now, KIND_REKEY) {
                self.error = Some(e);
            }
        }
    }

    /// Whether the handshake has completed.
    pub fn is_established(&self) -> bool {
        self.established
    }

    /// Why the session failed, if it did (the handshake timed out, or the server refused it
    /// until then).
    pub fn error(&self) -> Option<&SecureError> {
        self.error.as_ref()
    }

    /// The server's latest authenticated refusal ([`SecureError::Refused`]) of the handshake
    /// under way, while the client still tries (it becomes [`Client::error`] if no session
    /// comes before [`Limits::handshake_timeout`]); `None` once a handshake completes.
    pub fn refusal(&self) -> Option<&SecureError> {
        self.refused.as_ref()
    }

    /// This client's receiver index (the connection id of datagrams the server sends it).
    pub fn index(&self) -> u32 {
        self.index
    }

    /// The key epoch the client seals with now (`None` before the handshake completes).
    pub fn key_epoch(&self) -> Option<u8> {
        self.current.as_ref().map(|k| k.epoch)
    }

    /// The server's id of this session (0 before the handshake completes).
    pub fn session_id(&self) -> u32 {
        self.session
    }

    fn drop_with(&mut self, reason: DropReason) -> ClientReceived {
        self.stats.drop(reason);
        ClientReceived::Dropped(reason)
    }

    /// Takes one datagram from the server that arrived at `now`; a core datagram goes into
    /// `plaintext` (cleared first). Never panics; nothing that fails a check changes any state
    /// but a counter.
    pub fn handle(
        &mut self,
        now: Instant,
        datagram: &[u8],
        plaintext: &mut Vec<u8>,
    ) -> ClientReceived {
        plaintext.clear();
        if datagram.len() > wire::MAX_DATAGRAM_BYTES {
            return self.drop_with(DropReason::Malformed);
        }
        match wire::message_type(datagram) {
            Err(e) => self.drop_with(prefix_reason(e)),
            Ok(wire::TYPE_RESPONSE | wire::TYPE_REFUSAL) => self.handle_response(now, datagram),
            Ok(wire::TYPE_COOKIE) => self.handle_cookie(now, datagram),
            Ok(wire::TYPE_DATA) => self.handle_data(now, datagram, plaintext),
            Ok(wire::TYPE_CLOSE) => self.handle_close(now, datagram),
            Ok(_) => self.drop_with(DropReason::Malformed),
        }
    }

    fn handle_response(&mut self, now: Instant, d: &[u8]) -> ClientReceived {
        let receiver = match handshake::response_receiver(d) {
            Ok(r) => r,
            Err(r) => return self.drop_with(r),
        };
        if receiver != self.index || self.error.is_some() {
            return self.drop_with(DropReason::UnexpectedResponse);
        }
        let Some(attempt) = self.attempt.as_mut() else {
            return self.drop_with(DropReason::UnexpectedResponse);
        };
        let reply = match handshake::read_response(&mut attempt.initiator.state, d) {
            Ok(reply) => reply,
            // snow restored the state: the genuine response can still complete it.
            Err(_) => return self.drop_with(DropReason::HandshakeFailed),
        };
        // Authenticated by the server's key: the attempt is used up either way.
        let Some(attempt) = self.attempt.take() else {
            return self.drop_with(DropReason::UnexpectedResponse);
        };
        let (epoch, session) = match reply {
            ServerReply::Accepted { epoch, session } => (epoch, session),
            ServerReply::Refused {
                reason,
                limit,
                idle_timeout_s,
            } => {
                self.stats.refusals += 1;
                self.refused = Some(SecureError::Refused {
                    reason,
                    limit,
                    idle_timeout_s,
                });
                self.retry_after_refusal(now, attempt);
                return ClientReceived::Control;
            }
        };
        self.refused = None;
        let rekey = attempt.kind == KIND_REKEY;
        let consistent = if rekey {
            session == self.session && self.current.as_ref().is_some_and(|k| k.epoch != epoch)
        } else {
            session != 0
        };
        let transport = match attempt.initiator.state.into_stateless_transport_mode() {
            Ok(t) if consistent => t,
            // A server that answers inconsistently: the next timer starts a new attempt.
            _ => return self.drop_with(DropReason::HandshakeFailed),
        };
        self.session = session;
        let keys = KeySet::new(epoch, transport, now, session);
        self.previous = self.current.replace(keys);
        self.keepalive = true;
        self.stats.handshakes += 1;
        if rekey {
            self.stats.rekeys += 1;
            ClientReceived::Control
        } else {
            self.previous = None;
            self.established = true;
            ClientReceived::Established
        }
    }

    /// After a refusal of `old` (whose Noise state is used up): a fresh attempt of the same
    /// kind and deadline, sent after [`REFUSED_RETRY`].
    fn retry_after_refusal(&mut self, now: Instant, old: Attempt) {
        if let Err(e) = self.start_attempt(now, old.kind) {
            self.error = Some(e);
            return;
        }
        if let Some(a) = self.attempt.as_mut() {
            a.started = old.started;
            a.send = false;
            a.last_sent = Some(now);
            a.retry_every = REFUSED_RETRY.max(self.config.limits.handshake_retry);
        }
    }

    /// A cookie reply: kept if it answers an initiation of the attempt under way (its `mac1`),
    /// and the initiation sent again at once with `mac2` if the cookie is new.
    fn handle_cookie(&mut self, now: Instant, d: &[u8]) -> ClientReceived {
        if self.error.is_some() {
            return self.drop_with(DropReason::UnexpectedResponse);
        }
        let Some(a) = self.attempt.as_mut() else {
            return self.drop_with(DropReason::UnexpectedResponse);
        };
        let cipher = &self.cookie_cipher;
        let Some(cookie) = a.sent_mac1.iter().flatten().find_map(|m| cipher.open(d, m)) else {
            return self.drop_with(DropReason::Forged);
        };
        if a.sent_cookie != Some(cookie) {
            a.send = true;
        }
        self.cookie = Some((cookie, now));
        self.stats.cookie_replies += 1;
        ClientReceived::Control
    }

    fn handle_data(&mut self, now: Instant, d: &[u8], plaintext: &mut Vec<u8>) -> ClientReceived {
        let Some(h) = DataHeader::parse(d) else {
            return self.drop_with(DropReason::Truncated);
        };
        if h.receiver != self.index || self.current.is_none() {
            return self.drop_with(DropReason::UnknownSession);
        }
        let limits = &self.config.limits;
        let (is_current, keys) = match (self.current.as_mut(), self.previous.as_mut()) {
            (Some(k), _) if k.epoch == h.epoch => (true, k),
            (_, Some(k)) if k.epoch == h.epoch => (false, k),
            _ => return self.drop_with(DropReason::UnknownEpoch),
        };
        if let Err(r) = keys.open(now, limits, &h, d, plaintext) {
            return self.drop_with(r);
        }
        self.stats.opened += 1;
        if is_current {
            self.maybe_rekey(now, h.counter);
        }
        if plaintext.is_empty() {
            ClientReceived::Control
        } else {
            ClientReceived::Data
        }
    }

    /// A close from the server: ends the client if the session's keys (current or previous,
    /// by its epoch) authenticate it; anything else changes nothing but a counter.
    fn handle_close(&mut self, now: Instant, d: &[u8]) -> ClientReceived {
        let Ok(close) = <[u8; CLOSE_BYTES]>::try_from(d) else {
            return self.drop_with(DropReason::Truncated);
        };
        // A copy of the close already taken: nothing to do or count.
        if self.taken_close == Some(close) {
            return ClientReceived::Control;
        }
        let (epoch, receiver) = (d[3], wire::be_u32(d, 4));
        if receiver != self.index || self.current.is_none() || self.error.is_some() {
            return self.drop_with(DropReason::UnknownSession);
        }
        let keys = [self.current.as_ref(), self.previous.as_ref()]
            .into_iter()
            .flatten()
            .find(|k| k.epoch == epoch);
        let Some(keys) = keys else {
            return self.drop_with(DropReason::UnknownEpoch);
        };
        if !keys.opens_close(now, &self.config.limits, d) {
            return self.drop_with(DropReason::Forged);
        }
        self.stats.opened += 1;
        self.attempt = None;
        self.keepalive = false;
        self.error = Some(SecureError::ClosedByServer);
        self.taken_close = Some(close);
        ClientReceived::Closed
    }

    /// The client quits: writes the session's close into `out` (cleared first; the caller
    /// sends it [`wire::CLOSE_COPIES`] times, best-effort) and ends the client (nothing more
    /// is sealed or sent). `false`, and `out` empty, if no session is up to close.
    pub fn close(&mut self, now: Instant, out: &mut Vec<u8>) -> bool {
        out.clear();
        let written = self.error.is_none()
            && self
                .current
                .as_ref()
                .is_some_and(|k| k.close_message(now, &self.config.limits, out));
        self.attempt = None;
        self.keepalive = false;
        if self.error.is_none() {
            self.error = Some(SecureError::Closed);
        }
        written
    }

    /// Whether the server closed the session ([`SecureError::ClosedByServer`]).
    pub fn closed_by_server(&self) -> bool {
        self.error == Some(SecureError::ClosedByServer)
    }

    /// Seals the core datagram `plaintext` into `out` (cleared first).
    pub fn seal(
        &mut self,
        now: Instant,
        plaintext: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), SealError> {
        out.clear();
        let Some(keys) = self.current.as_mut() else {
            return Err(SealError::NotEstablished);
        };
        keys.seal(now, &self.config.limits, plaintext, out)?;
        self.stats.sealed += 1;
        self.maybe_rekey(now, 0);
        Ok(())
    }

    /// The next datagram the layer itself must send (a handshake initiation or its repeat, a
    /// keepalive), written into `out` (cleared first); `false` when there is none.
    pub fn poll_transmit(&mut self, now: Instant, out: &mut Vec<u8>) -> bool {
        out.clear();
        if self.error.is_some() {
            return false;
        }
        let cookie = self
            .cookie
            .filter(|&(_, at)| now - at < COOKIE_LIFETIME)
            .map(|(c, _)| c);
        if let Some(a) = self.attempt.as_mut().filter(|a| a.send) {
            a.send = false;
            a.last_sent = Some(now);
            match cookie {
                Some(c) => out.extend_from_slice(&handshake::with_mac2(
                    &a.initiator.datagram,
                    &self.mac1,
                    &c,
                )),
                None => out.extend_from_slice(&a.initiator.datagram),
            }
            let mac1 = handshake::initiation_mac1(out);
            if a.sent_mac1[0] != Some(mac1) {
                a.sent_mac1 = [Some(mac1), a.sent_mac1[0]];
            }
            a.sent_cookie = cookie;
            return true;
        }
        if self.keepalive {
            self.keepalive = false;
            return self.seal(now, &[], out).is_ok();
        }
        false
    }

    /// Runs the timers due by `now` (handshake repeats and timeout, rekeys).
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.error.is_some() {
            return;
        }
        let limits = self.config.limits.clone();
        if let Some(a) = self.attempt.as_mut() {
            if now - a.started >= limits.handshake_timeout {
                let kind = a.kind;
                self.attempt = None;
                let keys_alive = self
                    .current
                    .as_ref()
                    .is_some_and(|k| !k.expired(now, &limits));
                if kind == KIND_REKEY && keys_alive {
                    // Keep trying while the old keys last.
                    if let Err(e) = self.start_attempt(now, KIND_REKEY) {
                        self.error = Some(e);
                    }
                } else {
                    self.error =
                        Some(self.refused.take().unwrap_or(SecureError::HandshakeTimeout(
                            limits.handshake_timeout.as_micros() / 1_000_000,
                        )));
                }
            } else if let Some(sent) = a.last_sent {
                if now - sent >= a.retry_every {
                    a.send = true;
                }
            }
            return;
        }
        if self
            .current
            .as_ref()
            .is_some_and(|k| k.expired(now, &limits))
        {
            self.error = Some(SecureError::HandshakeTimeout(
                limits.handshake_timeout.as_micros() / 1_000_000,
            ));
            return;
        }
        self.maybe_rekey(now, 0);
    }

    /// When [`Client::handle_timeout`] is next needed.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.error.is_some() {
            return None;
        }
        let limits = &self.config.limits;
        if let Some(a) = &self.attempt {
            let give_up = a.started + limits.handshake_timeout;
            let retry = a.last_sent.map_or(a.started, |t| t + a.retry_every);
            return Some(give_up.min(retry));
        }
        self.current
            .as_ref()
            .map(|k| k.created + limits.rekey_after)
    }

    /// The server's public key.
    pub fn server_key(&self) -> PublicKey {
        self.config.server_key
    }

    /// Counters.
    pub fn stats(&self) -> SecureStats {
        let mut s = self.stats.clone();
        s.sessions = u64::from(self.established && self.error.is_none());
        s
    }
}
