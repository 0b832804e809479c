//! [`Endpoint`]: the client end of a secure Sprout session over a UDP socket, with a blocking
//! API for the application and a background driver thread.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::net::UdpSocket;
use mio::{Interest, Poll, Waker};
use sprout_core::Config;
use sprout_secure::{ClientConfig, PublicKey, RedialPolicy, SecureError};

use crate::clock::Clock;
use crate::conn::{ConnShared, Link};
use crate::driver::{self, SOCKET, WAKER};
use crate::error::NetError;
use crate::secure_client::SecureClient;
use crate::stats::EndpointStats;

/// How long a client waits for an authenticated datagram from its server after it sent one
/// before it considers the server dead ([`sprout_secure::DEAD_PEER_TIMEOUT`], 15 s).
pub const DEAD_PEER_TIMEOUT: Duration =
    Duration::from_micros(sprout_secure::DEAD_PEER_TIMEOUT.as_micros());

/// The first wait after an unanswered redial ([`sprout_secure::REDIAL_BACKOFF_MIN`], 5 s).
pub const REDIAL_BACKOFF_MIN: Duration =
    Duration::from_micros(sprout_secure::REDIAL_BACKOFF_MIN.as_micros());

/// The longest wait between redials ([`sprout_secure::REDIAL_BACKOFF_MAX`], 10 s).
pub const REDIAL_BACKOFF_MAX: Duration =
    Duration::from_micros(sprout_secure::REDIAL_BACKOFF_MAX.as_micros());

/// What a client [`Endpoint`] does when its server falls silent (a restart, an idle close, a
/// long outage).
///
/// After [`ReconnectOptions::dead_after`] without an authenticated datagram from the server
/// since it sent something, the endpoint drops its Sprout connection and starts a fresh
/// handshake with the same keys and greeting to the same address; if nobody answers it within
/// [`sprout_secure::Limits::handshake_timeout`], it waits (from `backoff_min`, doubling up to
/// `backoff_max`) and tries again, for as long as the application keeps the endpoint. Once a
/// handshake completes, a fresh [`sprout_core::Connection`] carries on. Only a session that
/// was established once is redialled: a first handshake nobody answers (server down, wrong
/// `--server-key`, key not allowed) still fails the endpoint ([`Endpoint::error`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReconnectOptions {
    /// Redial a dead server (default true). Off: a dead server ends the endpoint
    /// ([`Endpoint::end_reason`] says so) instead of leaving it sealing into nothing.
    pub enabled: bool,
    /// Silence after a send that makes the server dead (default [`DEAD_PEER_TIMEOUT`]; at
    /// least a few of the server's heartbeat intervals, which are at most 1 s).
    pub dead_after: Duration,
    /// First wait between unanswered redial handshakes (default [`REDIAL_BACKOFF_MIN`]).
    pub backoff_min: Duration,
    /// Longest wait between them (default [`REDIAL_BACKOFF_MAX`]).
    pub backoff_max: Duration,
}

impl Default for ReconnectOptions {
    fn default() -> Self {
        ReconnectOptions {
            enabled: true,
            dead_after: DEAD_PEER_TIMEOUT,
            backoff_min: REDIAL_BACKOFF_MIN,
            backoff_max: REDIAL_BACKOFF_MAX,
        }
    }
}

impl ReconnectOptions {
    /// The options as sprout-secure's redial machine takes them (durations in whole
    /// microseconds), checked: `dead_after` and `backoff_min` above zero, `backoff_max` at
    /// least `backoff_min`.
    pub(crate) fn policy(&self) -> Result<RedialPolicy, NetError> {
        let policy = RedialPolicy {
            enabled: self.enabled,
            dead_after: self.dead_after.into(),
            backoff_min: self.backoff_min.into(),
            backoff_max: self.backoff_max.into(),
        };
        policy
            .validate()
            .map_err(|e| NetError::Config(format!("reconnect: {e}")))?;
        Ok(policy)
    }
}

pub use crate::stats::EndpointState;

/// The client end of a secure Sprout session over UDP.
///
/// A background thread owns the socket and the security layer and drives the sans-IO
/// [`sprout_core::Connection`]: it sends the handshake (carrying the greeting) at once and
/// repeats it until the server answers, then runs the connection: it reads and opens datagrams,
/// runs the receiver's 20 ms ticks, seals and sends what the Sprout window allows, and sleeps
/// until the next deadline or until the application calls [`Endpoint::send`] and friends,
/// which wake it at once. Nothing is sealed before the handshake completes: what the
/// application sends before waits in the endpoint. If nobody answers the handshake within
/// [`sprout_secure::Limits::handshake_timeout`], the endpoint stops and
/// [`Endpoint::error`] says why.
///
/// Every datagram that fails the security layer's checks is dropped and counted (see
/// [`EndpointStats::secure`]); network input never ends the session.
///
/// Every method takes `&self`, so an endpoint can be shared between threads in an [`Arc`].
/// Dropping it (or [`Endpoint::close`]) stops the thread and closes the socket.
pub struct Endpoint {
    shared: Arc<ConnShared>,
    waker: Arc<Waker>,
    thread: Mutex<Option<JoinHandle<()>>>,
    remote: SocketAddr,
    server_key: PublicKey,
}

impl Endpoint {
    /// A client endpoint on `local` (e.g. `0.0.0.0:0`) whose server is `remote`, with the
    /// client's keys and the server's public key in `keys`, and `config` (the protocol's
    /// parameters; the server's acceptor chooses its side's). `greeting` (at most
    /// [`sprout_secure::wire::MAX_GREETING_BYTES`], may be empty) travels in the handshake,
    /// encrypted, and reaches the server's acceptor and [`crate::Session::greeting`].
    ///
    /// A server that falls silent is redialled with the default [`ReconnectOptions`].
    pub fn connect(
        local: SocketAddr,
        remote: SocketAddr,
        keys: ClientConfig,
        config: Config,
        greeting: &[u8],
    ) -> Result<Endpoint, NetError> {
        Self::connect_with(
            local,
            remote,
            keys,
            config,
            greeting,
            ReconnectOptions::default(),
        )
    }

    /// As [`Endpoint::connect`], with the dead-peer timeout and redial schedule of
    /// `reconnect`.
    pub fn connect_with(
        local: SocketAddr,
        remote: SocketAddr,
        keys: ClientConfig,
        config: Config,
        greeting: &[u8],
        reconnect: ReconnectOptions,
    ) -> Result<Endpoint, NetError> {
        config
            .validate()
            .map_err(|e| NetError::Config(e.to_string()))?;
        let policy = reconnect.policy()?;
        let clock = Clock::new();
        let server_key = keys.server_key;
        let secure = SecureClient::new(keys, greeting, policy, clock.now())?;
        let mut socket = UdpSocket::bind(local)
            .map_err(|e| NetError::io(format!("binding UDP socket to {local}"), e))?;
        crate::driver::ask_socket_buffers(&socket, crate::server::DEFAULT_SOCKET_BUFFER_BYTES);
        let local = socket
            .local_addr()
            .map_err(|e| NetError::io("reading the socket's address", e))?;
        let poll = Poll::new().map_err(|e| NetError::io("creating the poller", e))?;
        poll.registry()
            .register(&mut socket, SOCKET, Interest::READABLE | Interest::WRITABLE)
            .map_err(|e| NetError::io("registering the socket", e))?;
        let waker = Arc::new(
            Waker::new(poll.registry(), WAKER)
                .map_err(|e| NetError::io("creating the waker", e))?,
        );
        let mut link = Link::new(config, local, sprout_core::Instant::ZERO);
        link.peer = Some(remote);
        let shared = Arc::new(ConnShared::new(link, clock));
        let driver_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("sprout-net {local}"))
            .spawn(move || driver::run_client(driver_shared, poll, socket, secure, remote))
            .map_err(|e| NetError::io("starting the driver thread", e))?;
        Ok(Endpoint {
            shared,
            waker,
            thread: Mutex::new(Some(thread)),
            remote,
            server_key,
        })
    }

    fn wake(&self) {
        // A failed wake only delays the driver until its next deadline.
        let _ = self.waker.wake();
    }

    /// Whether the handshake has completed and the Sprout connection runs (false while the
    /// endpoint redials a silent server).
    pub fn is_established(&self) -> bool {
        self.shared.lock().conn.is_some()
    }

    /// Where the endpoint stands: connecting, established, reconnecting or ended.
    pub fn state(&self) -> EndpointState {
        self.shared.lock().state()
    }

    /// Times the session was established again after the server fell silent.
    pub fn reconnections(&self) -> u64 {
        self.shared.lock().reconnections
    }

    /// Waits at most `timeout` for the handshake: `Ok(true)` once established, `Ok(false)` if
    /// it is still under way, `Err` if it failed (e.g. [`SecureError::HandshakeTimeout`]) or
    /// the endpoint was closed.
    pub fn wait_established(&self, timeout: Duration) -> Result<bool, NetError> {
        let deadline = Instant::now() + timeout;
        let mut st = self.shared.lock();
        loop {
            if st.conn.is_some() {
                return Ok(true);
            }
            if let Some(e) = &st.secure_error {
                return Err(NetError::Secure(e.clone()));
            }
            if st.ended {
                return Err(NetError::Stopped);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(false);
            }
            st = self.shared.readable.wait_timeout(st, deadline - now);
        }
    }

    /// Why the session failed (its first handshake timed out), if it did. A redial's
    /// unanswered handshake is not a failure: the endpoint tries again (see
    /// [`Endpoint::state`]).
    pub fn error(&self) -> Option<SecureError> {
        self.shared.lock().secure_error.clone()
    }

    /// Queues an application datagram; it leaves when the session is established and the
    /// Sprout window allows (before any bulk filler). Datagrams longer than
    /// [`Endpoint::max_payload`] bytes are cut to that. Dropped if the endpoint has stopped.
    pub fn send(&self, datagram: Vec<u8>) {
        if self.shared.send(datagram) {
            self.wake();
        }
    }

    /// Bulk mode: the application always has more to send (the paper's saturating sender), and
    /// every datagram is filled with zeros as far as the window and the datagram size allow.
    /// Datagrams given to [`Endpoint::send`] still go first. `false` also drops a bulk writer.
    pub fn set_bulk(&self, bulk: bool) {
        self.shared.set_bulk(bulk);
        self.wake();
    }

    /// Bulk mode whose payloads the application writes: exactly as [`Endpoint::set_bulk`]
    /// (same datagram sizes, no application-side backlog), but `write` gets each bulk
    /// datagram's payload (zeros, 1 byte up to [`Endpoint::max_payload`] long) just before it
    /// is sealed, to stamp it with, say, a sequence number and a send time. `write` runs on the
    /// driver thread and must not call back into the endpoint.
    pub fn set_bulk_writer<F>(&self, write: F)
    where
        F: FnMut(&mut [u8]) + Send + 'static,
    {
        self.shared.set_bulk_writer(Box::new(write));
        self.wake();
    }

    /// Whether received payloads are kept for [`Endpoint::recv`] (default) or only counted.
    pub fn set_keep_incoming(&self, keep: bool) {
        self.shared.set_keep_incoming(keep);
    }

    /// Largest application payload per datagram, in bytes.
    pub fn max_payload(&self) -> usize {
        self.shared.max_payload()
    }

    /// Application bytes queued in the endpoint, waiting for the handshake or the window.
    pub fn queued_bytes(&self) -> usize {
        self.shared.queued_bytes()
    }

    /// Blocks until at most `threshold` application bytes are queued, for at most `timeout`.
    /// Returns whether the queue is at or below the threshold. With a threshold of about one
    /// datagram, an application can keep the sender busy with its own datagrams without
    /// building a backlog of its own; with 0, it waits until everything it sent has left.
    pub fn wait_writable(&self, threshold: usize, timeout: Duration) -> bool {
        self.shared.wait_writable(threshold, timeout)
    }

    /// The next received application datagram, if one is waiting (never blocks).
    pub fn try_recv(&self) -> Option<Vec<u8>> {
        self.shared.try_recv()
    }

    /// The next received application datagram, waiting as long as it takes; `None` once the
    /// endpoint has stopped and nothing is left.
    pub fn recv(&self) -> Option<Vec<u8>> {
        self.shared.recv_until(None)
    }

    /// The next received application datagram, waiting for one at most `timeout`; `None` if
    /// none came in time or the endpoint has stopped.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<Vec<u8>> {
        self.shared.recv_until(Some(Instant::now() + timeout))
    }

    /// A snapshot of the counters, the window, the peer's forecast and the security layer's
    /// counters.
    pub fn stats(&self) -> EndpointStats {
        self.shared.stats()
    }

    /// The server's address.
    pub fn peer_addr(&self) -> SocketAddr {
        self.remote
    }

    /// The server's public key.
    pub fn server_key(&self) -> PublicKey {
        self.server_key
    }

    /// The local socket address (with the port the system chose, if it was 0; the new one
    /// after [`Endpoint::rebind`]).
    pub fn local_addr(&self) -> SocketAddr {
        self.shared.lock().local
    }

    /// Moves the session to a new local socket bound to `local` (as a mobile does when it
    /// changes network): the old socket is closed, datagrams go out from the new one, and the
    /// server follows the new address as soon as an authenticated datagram from it arrives
    /// (roaming). Returns the new local address once the driver has switched.
    pub fn rebind(&self, local: SocketAddr) -> Result<SocketAddr, NetError> {
        let socket = std::net::UdpSocket::bind(local)
            .map_err(|e| NetError::io(format!("binding UDP socket to {local}"), e))?;
        socket
            .set_nonblocking(true)
            .map_err(|e| NetError::io("making the socket non-blocking", e))?;
        crate::driver::ask_socket_buffers(&socket, crate::server::DEFAULT_SOCKET_BUFFER_BYTES);
        let addr = socket
            .local_addr()
            .map_err(|e| NetError::io("reading the socket's address", e))?;
        {
            let mut st = self.shared.lock();
            if st.ended {
                return Err(NetError::Stopped);
            }
            st.rebind = Some(socket);
        }
        self.wake();
        let end = Instant::now() + Duration::from_secs(1);
        while Instant::now() < end {
            let st = self.shared.lock();
            if st.rebind.is_none() || st.ended {
                break;
            }
            drop(st);
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(addr)
    }

    /// The connection's configuration.
    pub fn config(&self) -> Config {
        self.shared.lock().config.clone()
    }

    /// The time on the endpoint's clock (0 when it was created), the protocol's time.
    pub fn now(&self) -> sprout_core::Instant {
        self.shared.clock.now()
    }

    /// Whether the driver thread is still running (false after `close`, a failed handshake or
    /// a fatal socket error).
    pub fn is_running(&self) -> bool {
        !self.shared.lock().ended
    }

    /// Why the driver stopped, if it did (closed, the handshake timed out, a poller failure).
    pub fn end_reason(&self) -> Option<String> {
        self.shared.lock().end.clone()
    }

    /// The server's latest authenticated refusal of the handshake under way (e.g. "server
    /// full (N sessions) - try later"), while the endpoint still tries; `None` once a
    /// handshake completes, or if the server never refused.
    pub fn refusal(&self) -> Option<SecureError> {
        self.shared.lock().refusal.clone()
    }

    /// Stops the driver thread and closes the socket; queued data is dropped (see
    /// [`Endpoint::wait_writable`] to let it leave first). The server is told: the session's
    /// close (a few copies, sealed with its keys) ends it there at once. Idempotent.
    pub fn close(&self) {
        self.shared.lock().closed = true;
        self.wake();
        let handle = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(h) = handle {
            let _ = h.join();
        }
        let mut st = self.shared.lock();
        st.finish("closed");
        drop(st);
        self.shared.notify_all();
    }

    #[cfg(feature = "tokio")]
    pub(crate) fn shared(&self) -> &Arc<ConnShared> {
        &self.shared
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.close();
    }
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("local", &self.local_addr())
            .field("remote", &self.remote)
            .finish()
    }
}

// The endpoint is meant to be shared between an application's threads.
const _: fn() = || {
    fn is<T: Send + Sync>() {}
    is::<Endpoint>();
};
