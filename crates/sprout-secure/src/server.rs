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
//! ([`ServerConfig::max_pending`]) and expire after [`Limits::handshake_timeout_us`]. A rekey
//! (a new initiation naming an existing session, from the same client key) installs the new
//! keys beside the old ones; the server seals with the new keys once a datagram sealed with
//! them arrives. An authenticated data datagram whose counter is the highest yet seen moves the
//! session to the address it came from (roaming).

use std::collections::HashSet;
use std::net::SocketAddr;

use crate::keys::{PrivateKey, PublicKey};
use crate::stats::{DropReason, SecureStats};
use crate::{Limits, SealError, SessionId};

/// Which clients may open sessions.
#[derive(Clone, Debug)]
pub enum AllowedClients {
    /// Any client key (an open test server; still encrypted and authenticated per session).
    Any,
    /// Only these client public keys.
    Keys(HashSet<PublicKey>),
}

/// Configuration of a [`Server`].
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The server's private key.
    pub private_key: PrivateKey,
    /// Which client keys may open sessions.
    pub allowed: AllowedClients,
    /// Most sessions at once, established and pending (default 1024).
    pub max_sessions: usize,
    /// Most pending sessions (answered, not yet confirmed) at once (default 256); beyond it
    /// the oldest pending one is forgotten.
    pub max_pending: usize,
    /// A session with no authenticated datagram for this long is closed, in microseconds
    /// (default 30 s).
    pub idle_timeout_us: u64,
    /// Handshake initiations processed per second, all sources together (default 500).
    pub handshakes_per_s: u32,
    /// Handshake initiations processed per second from one source IP address (default 100).
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
            max_pending: 256,
            idle_timeout_us: 30_000_000,
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
    /// Handled inside the layer (a handshake answered, a keepalive, a rekey); nothing for the
    /// application. A reply may be waiting in [`Server::poll_transmit`].
    Control,
    /// Dropped and counted.
    Dropped(DropReason),
}

/// Something that happened to a session outside [`Server::handle`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerEvent {
    /// The session had no authenticated datagram for [`ServerConfig::idle_timeout_us`], or
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
    /// The client's current address.
    pub addr: SocketAddr,
    /// When the last authenticated datagram arrived, in microseconds.
    pub last_received_us: u64,
    /// Datagrams sealed for it.
    pub sealed: u64,
    /// Datagrams opened from it.
    pub opened: u64,
    /// Completed rekeys.
    pub rekeys: u64,
    /// Address changes (roaming).
    pub roams: u64,
}

/// The server side: sessions, pending handshakes, rate limits, counters.
pub struct Server {
    _private: (),
}

impl Server {
    /// A server with `config`.
    pub fn new(config: ServerConfig) -> Server {
        let _ = config;
        todo!()
    }

    /// The server's public key.
    pub fn public_key(&self) -> PublicKey {
        todo!()
    }

    /// Takes one datagram from `from` that arrived at `now_us`; the plaintext (a core
    /// datagram, or a new session's greeting) goes into `plaintext` (cleared first). Never
    /// panics; nothing that fails a check changes any state but a counter.
    pub fn handle(
        &mut self,
        now_us: u64,
        from: SocketAddr,
        datagram: &[u8],
        plaintext: &mut Vec<u8>,
    ) -> ServerReceived {
        let _ = (now_us, from, datagram, plaintext);
        todo!()
    }

    /// Seals the core datagram `plaintext` for session `id` into `out` (cleared first) and
    /// returns the address to send it to.
    pub fn seal(
        &mut self,
        now_us: u64,
        id: SessionId,
        plaintext: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<SocketAddr, SealError> {
        let _ = (now_us, id, plaintext, out);
        todo!()
    }

    /// The next datagram the layer itself must send (a handshake response), written into
    /// `out` (cleared first), with its destination; `None` when there is none.
    pub fn poll_transmit(&mut self, out: &mut Vec<u8>) -> Option<SocketAddr> {
        let _ = out;
        todo!()
    }

    /// Runs the timers due by `now_us`: idle sessions and expired keys closed (reported by
    /// [`Server::poll_event`]), pending handshakes expired, rate limits refilled.
    pub fn handle_timeout(&mut self, now_us: u64) {
        let _ = now_us;
        todo!()
    }

    /// When [`Server::handle_timeout`] is next needed, in microseconds.
    pub fn poll_timeout(&self) -> Option<u64> {
        todo!()
    }

    /// The next session event, if any.
    pub fn poll_event(&mut self) -> Option<ServerEvent> {
        todo!()
    }

    /// Forgets a session at once (the application closed it); later datagrams for it are
    /// dropped as [`DropReason::UnknownSession`].
    pub fn close(&mut self, id: SessionId) {
        let _ = id;
        todo!()
    }

    /// The greeting of session `id`'s client handshake (empty once taken, or if none).
    pub fn take_greeting(&mut self, id: SessionId) -> Vec<u8> {
        let _ = id;
        todo!()
    }

    /// What the server knows of session `id`.
    pub fn session(&self, id: SessionId) -> Option<SessionInfo> {
        let _ = id;
        todo!()
    }

    /// Established sessions now.
    pub fn session_count(&self) -> usize {
        todo!()
    }

    /// Counters.
    pub fn stats(&self) -> SecureStats {
        todo!()
    }
}
