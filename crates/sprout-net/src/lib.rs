//! Sprout over real UDP sockets, every datagram sealed by the security layer
//! ([`sprout_secure`], re-exported as [`secure`]): a client [`Endpoint`], a [`Server`] that
//! holds many [`Session`]s on one socket, and an async (tokio) API in [`mod@tokio`].
//!
//! The protocol itself is the unchanged sans-IO [`sprout_core::Connection`]; its datagrams
//! travel as the plaintext of sealed version-2 datagrams. A background thread per endpoint or
//! server (a `mio` poller with the socket and a waker) reads and opens datagrams, runs the
//! receiver's 20 ms ticks, seals and sends what each Sprout window allows, and sleeps until
//! the next deadline. The protocol's time is microseconds since the endpoint or server was
//! created ([`clock::Clock`]).
//!
//! - A client [`Endpoint::connect`]s with its private key and the server's public key; its
//!   greeting travels inside the handshake. Nothing is sealed before the handshake completes;
//!   if it times out, [`Endpoint::error`] says so. [`Endpoint::rebind`] moves it to a new
//!   local socket mid-session, and the server follows (roaming). A server that sends nothing
//!   authenticated for [`DEAD_PEER_TIMEOUT`] (15 s) after the client sent something is taken
//!   for dead (restarted, or the path is gone): the client redials it with the same keys and
//!   greeting, backing off between unanswered tries, for as long as the endpoint is kept
//!   ([`ReconnectOptions`], [`Endpoint::state`], [`Endpoint::reconnections`]).
//! - A [`Server::bind`] takes the server's key, the allowed clients, a session limit and an
//!   idle timeout ([`ServerOptions`]) and an acceptor that chooses each session's
//!   configuration from the client's address, public key and greeting;
//!   [`Server::accept_timeout`] hands out [`Session`]s.
//! - Unauthenticated datagrams change nothing but the security layer's counters
//!   ([`ServerStats::secure`], [`EndpointStats::secure`]); network input never panics a driver.
//!
//! | module | what |
//! |---|---|
//! | [`endpoint`] | [`Endpoint`]: the client: `connect`, `send`, `recv_timeout`, bulk modes, `rebind`, `stats` |
//! | [`server`] | [`Server`], [`ServerOptions`], [`Session`]: many sessions on one socket |
//! | [`mod@tokio`] | the async API (feature `tokio`, on by default) |
//! | [`clock`] | the monotonic protocol clock and the wall clock for one-way delays |
//! | [`stats`] | [`EndpointStats`], [`ServerStats`], serializable snapshots |
//! | [`message`] | the application messages of `sprout server` / `sprout client` (HELLO, ACCEPT, DATA, BYE) |
//!
//! The endpoint and the server (sockets, a mio poller, segmented sends through sprout-os on
//! Linux) are the default `runtime` feature; without it the crate is its sans-IO part, the
//! application messages ([`message`]), which is what the fuzz crate and libsprout take.
//!
//! A server and a client over loopback, a message each way:
//!
//! ```
//! use std::time::Duration;
//! use sprout_core::Config;
//! use sprout_net::secure::{AllowedClients, ClientConfig, Limits, PrivateKey, ServerConfig};
//! use sprout_net::{Endpoint, Server, ServerOptions};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server_key = PrivateKey::generate();
//! let server_public = server_key.public_key();
//! let options = ServerOptions::new(ServerConfig::new(server_key, AllowedClients::Any));
//! // Port 0: the system chooses one. The acceptor takes every client, with the default model.
//! let server = Server::bind("127.0.0.1:0".parse()?, options, |_addr, _key, _greeting| {
//!     Some(Config::default())
//! })?;
//! let keys = ClientConfig {
//!     private_key: PrivateKey::generate(),
//!     server_key: server_public,
//!     limits: Limits::default(),
//! };
//! let client = Endpoint::connect(
//!     "127.0.0.1:0".parse()?,
//!     server.local_addr(),
//!     keys,
//!     Config::default(),
//!     b"hello, server",
//! )?;
//! client.send(b"ping".to_vec());
//! let session = server.accept_timeout(Duration::from_secs(5)).expect("a session");
//! assert_eq!(session.greeting(), b"hello, server");
//! assert_eq!(session.recv_timeout(Duration::from_secs(5)).expect("a message"), b"ping");
//! session.send(b"pong".to_vec());
//! assert_eq!(client.recv_timeout(Duration::from_secs(5)).expect("a reply"), b"pong");
//! println!("{}", serde_json::to_string(&client.stats())?);
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

#[cfg(feature = "runtime")]
pub mod clock;
#[cfg(feature = "runtime")]
mod conn;
#[cfg(feature = "runtime")]
mod driver;
#[cfg(feature = "runtime")]
pub mod endpoint;
pub mod error;
pub mod message;
#[cfg(feature = "runtime")]
mod secure_client;
#[cfg(feature = "runtime")]
pub mod server;
pub mod stats;
#[cfg(feature = "tokio")]
pub mod tokio;

/// The security layer (keys, configurations, counters), re-exported.
pub use sprout_secure as secure;

#[cfg(feature = "runtime")]
pub use clock::{realtime_us, Clock};
#[cfg(feature = "runtime")]
pub use conn::BulkWriter;
#[cfg(feature = "runtime")]
pub use endpoint::{Endpoint, ReconnectOptions, DEAD_PEER_TIMEOUT};
pub use error::NetError;
#[cfg(feature = "runtime")]
pub use server::{Acceptor, Server, ServerOptions, Session};
pub use stats::{EndpointState, EndpointStats, ServerStats, SocketCounters};
