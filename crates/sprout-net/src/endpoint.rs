//! [`Endpoint`]: one end of a Sprout connection over a UDP socket, with a blocking API for the
//! application and a background driver thread.

use std::net::SocketAddr;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::net::UdpSocket;
use mio::{Interest, Poll, Waker};
use sprout_core::{wire, Config, Connection};

use crate::clock::Clock;
use crate::driver::{self, Acceptor, Shared, State, SOCKET, WAKER};
use crate::error::NetError;
use crate::stats::EndpointStats;

/// One end of a Sprout connection over UDP.
///
/// A background thread owns the socket and drives the sans-IO [`Connection`]: it reads
/// datagrams, runs the receiver's 20 ms ticks, sends what the Sprout window allows, and sleeps
/// until the next deadline (whole milliseconds, rounded up) or until the application calls
/// [`Endpoint::send`] and friends, which wake it at once. Malformed datagrams and datagrams
/// from other addresses than the peer's are counted ([`EndpointStats::malformed`],
/// [`EndpointStats::bad_peers`]) and dropped; network input never ends the connection.
///
/// Every method takes `&self`, so an endpoint can be shared between threads in an [`Arc`].
/// Dropping it (or [`Endpoint::close`]) stops the thread and closes the socket.
pub struct Endpoint {
    shared: Arc<Shared>,
    waker: Arc<Waker>,
    thread: Mutex<Option<JoinHandle<()>>>,
    local: SocketAddr,
}

impl Endpoint {
    /// A server endpoint on `local` that accepts as its peer the first sender of a well-formed
    /// Sprout datagram, with `config` (the protocol's parameters).
    pub fn bind(local: SocketAddr, config: Config) -> Result<Endpoint, NetError> {
        config.validate().map_err(NetError::Config)?;
        Endpoint::accept(local, move |_, _| Some(config.clone()))
    }

    /// A server endpoint on `local` that lets `accept` choose its peer: for each well-formed
    /// datagram from an unknown sender, until one is accepted, `accept` gets the sender's
    /// address and the datagram's application payload (empty for a heartbeat) and returns the
    /// configuration to accept it with, or `None` to drop the datagram. The connection is
    /// created when the peer is accepted, and the accepted datagram is its first. `accept` runs
    /// on the driver thread and must not call back into the endpoint.
    pub fn accept<F>(local: SocketAddr, accept: F) -> Result<Endpoint, NetError>
    where
        F: FnMut(SocketAddr, &[u8]) -> Option<Config> + Send + 'static,
    {
        let acceptor: Acceptor = Box::new(accept);
        Endpoint::start(local, Clock::new(), None, None, Some(acceptor), None)
    }

    /// A client endpoint on `local` (e.g. `0.0.0.0:0`) whose peer is `remote`, with `config`.
    /// Nothing is sent until the first deadline: a heartbeat, or the application's first
    /// datagram.
    pub fn connect(
        local: SocketAddr,
        remote: SocketAddr,
        config: Config,
    ) -> Result<Endpoint, NetError> {
        let clock = Clock::new();
        let conn = Connection::new(config, clock.now_us()).map_err(NetError::Config)?;
        Endpoint::start(local, clock, Some(conn), Some(remote), None, None)
    }

    /// A client endpoint as [`Endpoint::connect`] that also greets the server: `greeting` (cut
    /// to [`Endpoint::max_payload`]) goes out as the payload of a stand-alone Sprout datagram,
    /// outside the window, at once and every 200 ms until the server's first datagram arrives.
    /// A server whose [`Endpoint::accept`] chooses the configuration from the first payload can
    /// thus learn it even when the client's window starts closed (Sprout-EWMA forecasts nothing
    /// before its first observation). The server's application receives the greeting (perhaps
    /// more than once) like any datagram.
    pub fn connect_with_greeting(
        local: SocketAddr,
        remote: SocketAddr,
        config: Config,
        mut greeting: Vec<u8>,
    ) -> Result<Endpoint, NetError> {
        let clock = Clock::new();
        let conn = Connection::new(config, clock.now_us()).map_err(NetError::Config)?;
        greeting.truncate(conn.max_payload());
        Endpoint::start(local, clock, Some(conn), Some(remote), None, Some(greeting))
    }

    fn start(
        local: SocketAddr,
        clock: Clock,
        conn: Option<Connection>,
        peer: Option<SocketAddr>,
        acceptor: Option<Acceptor>,
        greeting: Option<Vec<u8>>,
    ) -> Result<Endpoint, NetError> {
        let mut socket = UdpSocket::bind(local)
            .map_err(|e| NetError::io(format!("binding UDP socket to {local}"), e))?;
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
        let mut state = State::new(conn, peer, acceptor);
        state.greeting = greeting;
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            readable: Condvar::new(),
            writable: Condvar::new(),
            clock,
        });
        let driver_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("sprout-net {local}"))
            .spawn(move || driver::run(driver_shared, poll, socket))
            .map_err(|e| NetError::io("starting the driver thread", e))?;
        Ok(Endpoint {
            shared,
            waker,
            thread: Mutex::new(Some(thread)),
            local,
        })
    }

    fn wake(&self) {
        // A failed wake only delays the driver until its next deadline.
        let _ = self.waker.wake();
    }

    /// Queues an application datagram; it leaves when the Sprout window allows (before any
    /// bulk filler). Datagrams longer than [`Endpoint::max_payload`] bytes are cut to that.
    /// Sent before a server has its peer, it waits for the peer.
    pub fn send(&self, datagram: Vec<u8>) {
        let mut st = self.shared.lock();
        match &mut st.conn {
            Some(conn) => conn.send(datagram),
            None => {
                st.early_bytes += datagram.len();
                st.early.push_back(datagram);
            }
        }
        drop(st);
        self.wake();
    }

    /// Bulk mode: the application always has more to send (the paper's saturating sender), and
    /// every datagram is filled with zeros as far as the window and the datagram size allow.
    /// Datagrams given to [`Endpoint::send`] still go first. `false` also drops a bulk writer.
    pub fn set_bulk(&self, bulk: bool) {
        let mut st = self.shared.lock();
        st.bulk = bulk;
        if !bulk {
            st.bulk_writer = None;
        }
        drop(st);
        self.wake();
    }

    /// Bulk mode whose payloads the application writes: exactly as [`Endpoint::set_bulk`]
    /// (same datagram sizes, no application-side backlog), but `write` gets each bulk
    /// datagram's payload (zeros, 1 byte up to [`Endpoint::max_payload`] long) just before it
    /// goes on the wire, to stamp it with, say, a sequence number and a send time. `write` runs
    /// on the driver thread and must not call back into the endpoint.
    pub fn set_bulk_writer<F>(&self, write: F)
    where
        F: FnMut(&mut [u8]) + Send + 'static,
    {
        let mut st = self.shared.lock();
        st.bulk = true;
        st.bulk_writer = Some(Box::new(write));
        drop(st);
        self.wake();
    }

    /// Whether received payloads are kept for [`Endpoint::recv`] (default) or only counted.
    pub fn set_keep_incoming(&self, keep: bool) {
        let mut st = self.shared.lock();
        st.keep_incoming = keep;
        if let Some(conn) = &mut st.conn {
            conn.set_keep_incoming(keep);
        }
    }

    /// Largest application payload per datagram, in bytes (before a server has its peer: that
    /// of the default configuration).
    pub fn max_payload(&self) -> usize {
        let st = self.shared.lock();
        match &st.conn {
            Some(conn) => conn.max_payload(),
            None => {
                let c = Config::default();
                c.max_datagram_bytes - wire::header_bytes(c.model.forecast_ticks)
            }
        }
    }

    /// Application bytes queued in the endpoint, waiting for the window.
    pub fn queued_bytes(&self) -> usize {
        self.shared.lock().queued_bytes()
    }

    /// Blocks until at most `threshold` application bytes are queued, for at most `timeout`.
    /// Returns whether the queue is at or below the threshold. With a threshold of about one
    /// datagram, an application can keep the sender busy with its own datagrams without
    /// building a backlog of its own; with 0, it waits until everything it sent has left.
    pub fn wait_writable(&self, threshold: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut st = self.shared.lock();
        loop {
            if st.queued_bytes() <= threshold {
                return true;
            }
            let now = Instant::now();
            if st.stopped || now >= deadline {
                return false;
            }
            st = self
                .shared
                .writable
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// The next received application datagram, if one is waiting.
    pub fn recv(&self) -> Option<Vec<u8>> {
        self.shared.lock().conn.as_mut().and_then(|c| c.recv())
    }

    /// The next received application datagram, waiting for one at most `timeout`; `None` if
    /// none came in time or the endpoint is closed.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<Vec<u8>> {
        let deadline = Instant::now() + timeout;
        let mut st = self.shared.lock();
        loop {
            if let Some(d) = st.conn.as_mut().and_then(|c| c.recv()) {
                return Some(d);
            }
            let now = Instant::now();
            if st.stopped || now >= deadline {
                return None;
            }
            st = self
                .shared
                .readable
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// A snapshot of the counters, the window and the peer's forecast.
    pub fn stats(&self) -> EndpointStats {
        let mut st = self.shared.lock();
        let now = self.shared.clock.now_us();
        let c = st.counters;
        let mut s = EndpointStats {
            elapsed_s: now as f64 / 1e6,
            local_addr: Some(self.local),
            peer_addr: st.peer,
            datagrams_sent: c.datagrams_sent,
            bytes_sent: c.bytes_sent,
            datagrams_received: c.datagrams_received,
            bytes_received: c.bytes_received,
            queued_bytes: st.queued_bytes(),
            malformed: c.malformed,
            bad_peers: c.bad_peers,
            unaccepted: c.unaccepted,
            send_errors: c.send_errors,
            recv_errors: c.recv_errors,
            since_last_received_s: st
                .last_received_us
                .map(|t| now.saturating_sub(t) as f64 / 1e6),
            running: !st.stopped,
            ..EndpointStats::default()
        };
        if let Some(conn) = &mut st.conn {
            let cs = conn.stats();
            s.heartbeats_sent = cs.heartbeats_sent;
            s.app_bytes_sent = cs.app_bytes_sent;
            s.app_bytes_received = cs.app_bytes_received;
            s.late = cs.receiver.late;
            s.duplicates = cs.receiver.duplicates;
            s.window_bytes = conn.window_bytes(now);
            s.queue_estimate_bytes = conn.queue_estimate(now);
            s.incoming_rate_pps = conn.incoming_rate_pps();
            if let Some(f) = conn.peer_forecast() {
                s.peer_forecast = f.to_vec();
                s.peer_forecast_packets = f.last().copied().unwrap_or(0) as u64;
            }
        }
        s
    }

    /// The peer's address: the remote of a client, the accepted peer of a server (`None`
    /// until then).
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.shared.lock().peer
    }

    /// The local socket address (with the port the system chose, if it was 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The connection's configuration (`None` until a server has its peer).
    pub fn config(&self) -> Option<Config> {
        self.shared.lock().conn.as_ref().map(|c| c.config().clone())
    }

    /// Microseconds on the endpoint's clock (0 when it was created), the protocol's time.
    pub fn now_us(&self) -> u64 {
        self.shared.clock.now_us()
    }

    /// Whether the driver thread is still running.
    pub fn is_running(&self) -> bool {
        !self.shared.lock().stopped
    }

    /// Why the driver stopped on its own (a poller failure), if it did.
    pub fn fatal_error(&self) -> Option<String> {
        self.shared.lock().fatal.clone()
    }

    /// Stops the driver thread and closes the socket; queued data is dropped (see
    /// [`Endpoint::wait_writable`] to let it leave first). Idempotent.
    pub fn close(&self) {
        self.shared.lock().closed = true;
        self.wake();
        let handle = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(h) = handle {
            let _ = h.join();
        }
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
            .field("local", &self.local)
            .field("peer", &self.peer_addr())
            .finish()
    }
}

// The endpoint is meant to be shared between an application's threads.
const _: fn() = || {
    fn is<T: Send + Sync>() {}
    is::<Endpoint>();
};
