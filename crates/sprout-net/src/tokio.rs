//! The async (tokio) API: [`Server`], [`Session`] and [`Endpoint`], thin wrappers of the
//! blocking types whose waits are futures.
//!
//! Why the same driver threads rather than tasks on the application's runtime: Sprout's
//! sender and receiver run on 20 ms ticks and must send the instant the window opens; a
//! dedicated thread sleeping in `epoll` until the next deadline keeps that timing whatever
//! the application's runtime is busy with (and works the same under any runtime flavour). The
//! driver signals each waiter through a condition variable (blocking callers) and a
//! `tokio::sync::Notify` (async callers) at the same moments, so async calls never block a
//! runtime thread on I/O; only short locks are taken. Each wrapper dereferences to the
//! blocking type for everything that never waits (`send`, `set_bulk`, `stats`, `peer_addr`,
//! ...); its blocking waits (`recv_timeout`, `wait_writable`, `accept_timeout`) should not be
//! called from async code.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use sprout_core::Config;
//! use sprout_net::secure::{AllowedClients, ClientConfig, Limits, PrivateKey, ServerConfig};
//! use sprout_net::tokio::{Endpoint, Server};
//! use sprout_net::ServerOptions;
//!
//! let server_key = PrivateKey::generate();
//! let server_public = server_key.public_key();
//! let options = ServerOptions::new(ServerConfig::new(server_key, AllowedClients::Any));
//! let server = Server::bind("127.0.0.1:0".parse()?, options, |_, _, _| Some(Config::default())).await?;
//! let keys = ClientConfig { private_key: PrivateKey::generate(), server_key: server_public, limits: Limits::default() };
//! let client = Endpoint::connect("127.0.0.1:0".parse()?, server.local_addr(), keys, Config::default(), b"hi").await?;
//! client.send(b"hello".to_vec());
//! let session = server.accept().await.expect("a session");
//! assert_eq!(session.recv().await.as_deref(), Some(&b"hello"[..]));
//! # Ok(()) }
//! ```

use std::net::SocketAddr;
use std::ops::Deref;

use sprout_core::Config;
use sprout_secure::{ClientConfig, PublicKey};

use crate::error::NetError;
use crate::server::ServerOptions;

/// A [`crate::Server`] with an async `accept`.
#[derive(Debug)]
pub struct Server(crate::Server);

impl Server {
    /// A server on `local`, as [`crate::Server::bind`] (binding is immediate; the future
    /// resolves at once).
    pub async fn bind<F>(
        local: SocketAddr,
        options: ServerOptions,
        acceptor: F,
    ) -> Result<Server, NetError>
    where
        F: FnMut(SocketAddr, &PublicKey, &[u8]) -> Option<Config> + Send + 'static,
    {
        crate::Server::bind(local, options, acceptor).map(Server)
    }

    /// The next accepted session; `None` once the server has stopped.
    pub async fn accept(&self) -> Option<Session> {
        self.0.accept_async().await.map(Session)
    }

    /// The blocking server underneath.
    pub fn blocking(&self) -> &crate::Server {
        &self.0
    }
}

impl Deref for Server {
    type Target = crate::Server;
    fn deref(&self) -> &crate::Server {
        &self.0
    }
}

/// A [`crate::Session`] with async `recv` and `writable`.
#[derive(Debug)]
pub struct Session(crate::Session);

impl Session {
    /// The next received application datagram; `None` once the session has ended (closed,
    /// idle, server stopped) and nothing is left.
    pub async fn recv(&self) -> Option<Vec<u8>> {
        self.0.shared().recv_async().await
    }

    /// Waits until at most `threshold` application bytes are queued (true), or the session
    /// ends (false).
    pub async fn writable(&self, threshold: usize) -> bool {
        self.0.shared().writable_async(threshold).await
    }

    /// The blocking session underneath.
    pub fn blocking(&self) -> &crate::Session {
        &self.0
    }
}

impl Deref for Session {
    type Target = crate::Session;
    fn deref(&self) -> &crate::Session {
        &self.0
    }
}

/// A client [`crate::Endpoint`] whose `connect` resolves once the handshake completes, with
/// async `recv` and `writable`.
#[derive(Debug)]
pub struct Endpoint(crate::Endpoint);

impl Endpoint {
    /// Connects as [`crate::Endpoint::connect`] and waits for the handshake; fails with
    /// [`NetError::Secure`] if nobody answers it in time (see
    /// [`sprout_secure::Limits::handshake_timeout`]).
    pub async fn connect(
        local: SocketAddr,
        remote: SocketAddr,
        keys: ClientConfig,
        config: Config,
        greeting: &[u8],
    ) -> Result<Endpoint, NetError> {
        Self::connect_with(local, remote, keys, config, greeting, Default::default()).await
    }

    /// As [`Endpoint::connect`], with the dead-peer timeout and redial schedule of
    /// `reconnect` (see [`crate::endpoint::ReconnectOptions`]).
    pub async fn connect_with(
        local: SocketAddr,
        remote: SocketAddr,
        keys: ClientConfig,
        config: Config,
        greeting: &[u8],
        reconnect: crate::endpoint::ReconnectOptions,
    ) -> Result<Endpoint, NetError> {
        let ep = crate::Endpoint::connect_with(local, remote, keys, config, greeting, reconnect)?;
        let shared = ep.shared().clone();
        loop {
            let notified = shared.readable.notify.notified();
            ::tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let st = shared.lock();
                if st.conn.is_some() {
                    break;
                }
                if let Some(e) = &st.secure_error {
                    return Err(NetError::Secure(e.clone()));
                }
                if st.ended {
                    return Err(NetError::Stopped);
                }
            }
            notified.await;
        }
        Ok(Endpoint(ep))
    }

    /// The next received application datagram; `None` once the endpoint has stopped and
    /// nothing is left.
    pub async fn recv(&self) -> Option<Vec<u8>> {
        self.0.shared().recv_async().await
    }

    /// Waits until at most `threshold` application bytes are queued (true), or the endpoint
    /// stops (false).
    pub async fn writable(&self, threshold: usize) -> bool {
        self.0.shared().writable_async(threshold).await
    }

    /// The blocking endpoint underneath.
    pub fn blocking(&self) -> &crate::Endpoint {
        &self.0
    }
}

impl Deref for Endpoint {
    type Target = crate::Endpoint;
    fn deref(&self) -> &crate::Endpoint {
        &self.0
    }
}
