//! The security layer of Sprout, sans-IO: it sits between the protocol core
//! ([`sprout_core::Connection`](https://docs.rs/sprout-core)) and the UDP socket, so that the
//! simulator and the tests drive it without sockets, exactly as the runtime does.
//!
//! - A Noise `IK` handshake (`Noise_IK_25519_ChaChaPoly_BLAKE2s`, through the `snow` crate, as
//!   WireGuard does) gives every session fresh keys; the client knows the server's public key,
//!   the server learns the client's and checks it against its allowed keys.
//! - Every datagram is sealed with ChaCha20-Poly1305; the nonce is a per-direction 64-bit
//!   counter carried in the clear; a sliding replay window (RFC 6479 style) of
//!   [`replay::WINDOW`] datagrams refuses replays.
//! - A 32-bit connection id (the receiver's index, chosen by the receiver) lets one socket
//!   serve many sessions; a key epoch lets a session rekey (a fresh handshake) without losing
//!   a datagram.
//! - Nothing unauthenticated changes state: forged, replayed, truncated, wrong-key,
//!   wrong-session and downgraded datagrams are dropped and counted by [`DropReason`].
//!   Handshakes are cheap to refuse (a keyed BLAKE2s `mac1` over the server's public key, as in
//!   WireGuard), rate-limited, and their state is bounded. Under load the server answers
//!   initiations with a cookie reply and then serves those that prove their source address
//!   (`mac2`, as in WireGuard) by a per-address limit only ([`cookie`]).
//! - Sessions are capped per source address (an IPv6 /64 counts as one) and per client key,
//!   and a client the server cannot take is told so by an authenticated refusal
//!   ([`SecureError::Refused`]: "server full (N sessions) - try later"), not by silence.
//!
//! | module | what |
//! |---|---|
//! | [`keys`] | private and public keys, key files, the allowed-clients file |
//! | [`wire`] | the version-2 datagram layouts and their checked parsing |
//! | [`replay`] | the sliding replay window |
//! | [`handshake`] | the Noise IK handshake messages, `mac1` and refusals |
//! | [`cookie`] | cookie replies and `mac2` under load |
//! | [`ratelimit`] | token buckets for handshakes |
//! | [`server`] | [`Server`]: many sessions on one socket |
//! | [`client`] | [`Client`]: one session to a server |
//! | [`stats`] | [`SecureStats`], [`DropReason`] |
//! | [`redial`] | [`Redial`]: a client's dead-peer detection and redial schedule |
//!
//! A session in memory (the runtime does the same with a socket in between):
//!
//! ```
//! use sprout_core::{Duration, Instant};
//! use sprout_secure::*;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let client_key = PrivateKey::generate();
//! let allowed = AllowedClients::Keys([client_key.public_key()].into_iter().collect());
//! let mut server = Server::new(ServerConfig::new(PrivateKey::generate(), allowed));
//! let config = ClientConfig {
//!     private_key: client_key,
//!     server_key: server.public_key(),
//!     limits: Limits::default(),
//! };
//! let (t0, t1) = (Instant::ZERO, Instant::ZERO + Duration::from_micros(1));
//! let mut client = Client::new(config, t0, b"greeting")?;
//! let from: std::net::SocketAddr = "192.0.2.1:4000".parse()?;
//! let (mut wire, mut plain) = (Vec::new(), Vec::new());
//! // Initiation, response, keepalive.
//! assert!(client.poll_transmit(t0, &mut wire));
//! assert_eq!(server.handle(t0, from, &wire, &mut plain), ServerReceived::Control);
//! assert_eq!(server.poll_transmit(&mut wire), Some(from));
//! assert_eq!(client.handle(t0, &wire, &mut plain), ClientReceived::Established);
//! assert!(client.poll_transmit(t0, &mut wire));
//! let ServerReceived::NewSession { id, .. } = server.handle(t0, from, &wire, &mut plain) else {
//!     panic!("no session")
//! };
//! assert_eq!(server.take_greeting(id), b"greeting");
//! // Core datagrams, sealed and opened.
//! client.seal(t1, b"core datagram", &mut wire)?;
//! assert_eq!(wire.len(), 13 + OVERHEAD_BYTES);
//! assert_eq!(server.handle(t1, from, &wire, &mut plain), ServerReceived::Data { id });
//! assert_eq!(plain, b"core datagram");
//! // The same datagram again is a replay.
//! assert_eq!(
//!     server.handle(t1, from, &wire, &mut plain),
//!     ServerReceived::Dropped(DropReason::Replayed)
//! );
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

pub mod client;
pub mod cookie;
pub mod handshake;
pub mod keys;
mod keyset;
pub mod ratelimit;
pub mod redial;
pub mod replay;
pub mod server;
pub mod stats;
pub mod wire;

pub use client::{Client, ClientConfig, ClientReceived};
pub use handshake::RefusalReason;
pub use keys::{read_allowed_keys, KeyError, PrivateKey, PublicKey};
pub use redial::{
    Redial, RedialAction, RedialPolicy, RedialPolicyError, RedialReason, DEAD_PEER_TIMEOUT,
    REDIAL_BACKOFF_MAX, REDIAL_BACKOFF_MIN,
};
pub use server::{
    AllowedClients, Server, ServerConfig, ServerEvent, ServerReceived, SessionInfo, RECENT_CLOSES,
};
pub use stats::{DropReason, SecureStats};
pub use wire::{OVERHEAD_BYTES, VERSION};

use sprout_core::time::Duration;
use thiserror::Error;

/// Identifies a session at the server: the server's 32-bit receiver index for it (random,
/// unique among the server's sessions).
pub type SessionId = u32;

/// Time limits and counter limits of a session's keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The client starts a fresh handshake (rekey) when its keys are this old (default 120 s).
    pub rekey_after: Duration,
    /// ... or when it has sealed this many datagrams with them (default 2^60).
    pub rekey_after_messages: u64,
    /// Keys older than this are never used again, to seal or to open (default 180 s).
    pub reject_after: Duration,
    /// Datagrams sealed with one key at most (default 2^64 - 2^16); sealing beyond fails.
    pub reject_after_messages: u64,
    /// The client repeats an unanswered handshake after this long (default 250 ms).
    pub handshake_retry: Duration,
    /// The client gives up a handshake nobody answers after this long (default 10 s).
    pub handshake_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            rekey_after: Duration::from_secs(120),
            rekey_after_messages: 1 << 60,
            reject_after: Duration::from_secs(180),
            reject_after_messages: u64::MAX - (1 << 16),
            handshake_retry: Duration::from_millis(250),
            handshake_timeout: Duration::from_secs(10),
        }
    }
}

/// Why [`Server::seal`] or [`Client::seal`] could not seal a datagram.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum SealError {
    /// The client's handshake has not completed yet.
    #[error("the session is not established yet")]
    NotEstablished,
    /// No session with this id (closed, expired, or never there).
    #[error("no session {0:#010x}")]
    UnknownSession(SessionId),
    /// The keys are past [`Limits::reject_after`] or [`Limits::reject_after_messages`] and
    /// no rekey has completed.
    #[error("the session's keys expired before a rekey completed")]
    KeysExpired,
    /// The plaintext does not fit one datagram.
    #[error("plaintext of {0} bytes is too long for one datagram")]
    TooLong(usize),
}

/// Why a client's session ended or could not start.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum SecureError {
    /// Nobody answered the handshake within [`Limits::handshake_timeout`].
    #[error("no handshake answer from the server in {0} s (is it running, reachable, a build that speaks wire version 2, and does it allow this client's key?)")]
    HandshakeTimeout(u64),
    /// A greeting longer than [`wire::MAX_GREETING_BYTES`].
    #[error("greeting of {0} bytes exceeds the {max} allowed", max = wire::MAX_GREETING_BYTES)]
    GreetingTooLong(usize),
    /// The keys could not be used (a bad key, or the Noise library refused them).
    #[error("key error: {0}")]
    Key(String),
    /// The server ended the session: an authenticated close came (it is not dead; a
    /// redialling client does not redial it).
    #[error("the server closed the session")]
    ClosedByServer,
    /// This client closed the session ([`Client::close`]).
    #[error("the session was closed by this client")]
    Closed,
    /// The server answered, authenticated by its key, that it cannot open a session now.
    #[error("{}", refused_message(*reason, *limit, *idle_timeout_s))]
    Refused {
        /// Why.
        reason: RefusalReason,
        /// The limit reached, sessions.
        limit: u32,
        /// The server's idle timeout, seconds (how long an abandoned session holds a slot).
        idle_timeout_s: u32,
    },
}

/// What a client is told when the server refuses it.
fn refused_message(reason: RefusalReason, limit: u32, idle_s: u32) -> String {
    let full = format!("server full ({limit} sessions) - try later");
    let frees = format!("a slot frees when a session closes, or after {idle_s} s without traffic");
    match reason {
        RefusalReason::Full => format!("{full} ({frees})"),
        RefusalReason::SourceCap => format!(
            "{full}: this address already holds {limit} sessions (the server's limit per source address; {frees})"
        ),
        RefusalReason::KeyCap => format!(
            "{full}: this client key already holds {limit} sessions (the server's limit per key; {frees})"
        ),
    }
}
