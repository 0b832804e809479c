//! The client's driver: a background thread that moves datagrams between the UDP socket, the
//! security layer ([`sprout_secure::Client`]) and the sans-IO [`Connection`], runs their
//! timers, and sleeps in `epoll` until the socket is readable, the next deadline, or an
//! application call wakes it.
//!
//! The driver owns the socket and the security layer; the connection and the counters live in
//! the `ConnShared` it shares with the application's [`crate::Endpoint`], locked only while
//! it processes a batch of events, never while it sleeps. Nothing is sealed before the
//! handshake completes: the connection is created then, and what the application sent before
//! goes into it.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token};
use sprout_core::Connection;
use sprout_secure::{Client, ClientReceived};

use crate::conn::{ConnShared, Link};

/// Token of the UDP socket in the poller.
pub(crate) const SOCKET: Token = Token(0);
/// Token of the application's waker in the poller.
pub(crate) const WAKER: Token = Token(1);

/// Most datagrams read from the socket in one batch before the driver sends and runs timers.
pub(crate) const READ_BATCH: usize = 256;
/// Most datagrams one connection sends in one batch before the driver reads the socket again.
pub(crate) const SEND_BATCH: usize = 256;
/// Largest UDP datagram, in bytes.
pub(crate) const MAX_UDP: usize = 65_536;
/// How long the driver waits before retrying after a socket error, so that a persistent error
/// cannot make it spin.
pub(crate) const ERROR_BACKOFF: Duration = Duration::from_millis(10);

/// What became of a datagram given to the socket.
pub(crate) enum Sent {
    /// Written, this many bytes.
    Ok(usize),
    /// The socket's buffer is full: keep the datagram and retry when it is writable.
    Blocked,
    /// Refused: the datagram is lost.
    Failed,
}

/// Sends one datagram, never failing.
pub(crate) fn send_to(socket: &UdpSocket, d: &[u8], to: SocketAddr) -> Sent {
    loop {
        match socket.send_to(d, to) {
            Ok(n) => return Sent::Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Sent::Blocked,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Sent::Failed,
        }
    }
}

/// Sends `d` to the server for the client, counting it; a blocked datagram is kept in
/// `blocked`.
fn client_send(
    socket: &UdpSocket,
    st: &mut Link,
    d: &[u8],
    to: SocketAddr,
    blocked: &mut Option<Vec<u8>>,
    socket_error: &mut bool,
) {
    match send_to(socket, d, to) {
        Sent::Ok(n) => st.count_sent(n),
        Sent::Blocked => *blocked = Some(d.to_vec()),
        Sent::Failed => {
            st.counters.send_errors += 1;
            *socket_error = true;
        }
    }
}

/// Runs a client's driver until the application closes the endpoint, the handshake fails, or
/// the poller fails.
pub(crate) fn run_client(
    shared: Arc<ConnShared>,
    poll: Poll,
    socket: UdpSocket,
    secure: Client,
    remote: SocketAddr,
) {
    ClientDriver {
        poll,
        socket,
        secure,
        remote,
        events: Events::with_capacity(64),
        rx: vec![0u8; MAX_UDP],
        tx: Vec::with_capacity(2048),
        out: Vec::with_capacity(2048),
        plaintext: Vec::with_capacity(2048),
        blocked: None,
        more_input: true,
        timeout: None,
        socket_error: false,
    }
    .run(&shared);
}

/// A client's driver: the socket, the security layer and the buffers of its loop.
struct ClientDriver {
    poll: Poll,
    socket: UdpSocket,
    secure: Client,
    remote: SocketAddr,
    events: Events,
    rx: Vec<u8>,
    tx: Vec<u8>,
    out: Vec<u8>,
    plaintext: Vec<u8>,
    /// A sealed datagram the socket refused with "would block"; sent before anything else.
    blocked: Option<Vec<u8>>,
    /// Whether the socket may still hold datagrams (epoll is edge-triggered: read until empty).
    more_input: bool,
    /// How long to sleep in the poller (`None`: until an event).
    timeout: Option<Duration>,
    /// Whether the socket failed in this round (the next sleep is at most [`ERROR_BACKOFF`]).
    socket_error: bool,
}

impl ClientDriver {
    /// The driver's loop: sleep, then read, run timers and send under the lock.
    fn run(mut self, shared: &ConnShared) {
        loop {
            if !self.more_input && !self.sleep(shared) {
                return;
            }
            let mut st = shared.lock();
            if st.closed {
                st.finish("closed");
                drop(st);
                shared.notify_all();
                return;
            }
            self.rebind(&mut st);
            let now = shared.clock.now();
            let app_before = st.app_bytes_received();
            let queued_before = st.queued_bytes();
            let established_before = st.conn.is_some();
            self.socket_error = false;
            if self.more_input {
                self.read(&mut st, now);
            }
            if !self.run_timers(&mut st, now) {
                drop(st);
                shared.notify_all();
                return;
            }
            self.write(&mut st, now);
            self.timeout = self.next_timeout(&mut st, shared);
            let established = st.conn.is_some() && !established_before;
            let readable = st.app_bytes_received() != app_before;
            let writable = st.queued_bytes() < queued_before;
            drop(st);
            if established || readable {
                shared.readable.notify_all();
            }
            if established || writable {
                shared.writable.notify_all();
            }
        }
    }

    /// Sleeps in the poller until an event or the timeout; false if the poller failed (the
    /// driver has stopped).
    fn sleep(&mut self, shared: &ConnShared) -> bool {
        if let Err(e) = self.poll.poll(&mut self.events, self.timeout) {
            if e.kind() != io::ErrorKind::Interrupted {
                stop(shared, format!("poll failed: {e}"));
                return false;
            }
        }
        self.more_input = self
            .events
            .iter()
            .any(|ev| ev.token() == SOCKET && ev.is_readable());
        true
    }

    /// Moves to the socket the application asked for with `Endpoint::rebind`, if any.
    fn rebind(&mut self, st: &mut Link) {
        let Some(new) = st.rebind.take() else {
            return;
        };
        let mut new = UdpSocket::from_std(new);
        let registered = self.poll.registry().register(
            &mut new,
            SOCKET,
            Interest::READABLE | Interest::WRITABLE,
        );
        if registered.is_ok() {
            let _ = self.poll.registry().deregister(&mut self.socket);
            if let Ok(a) = new.local_addr() {
                st.local = a;
            }
            self.socket = new;
            self.blocked = None;
            self.more_input = true;
        } else {
            st.counters.send_errors += 1;
        }
    }

    /// Reads a batch of datagrams from the server through the security layer.
    fn read(&mut self, st: &mut Link, now: sprout_core::Instant) {
        self.more_input = false;
        for i in 0..READ_BATCH {
            match self.socket.recv_from(&mut self.rx) {
                Ok((n, from)) => {
                    if from != self.remote {
                        st.counters.other_sources += 1;
                        continue;
                    }
                    match self.secure.handle(now, &self.rx[..n], &mut self.plaintext) {
                        ClientReceived::Established => {
                            if st.conn.is_none() {
                                match Connection::new(st.config.clone(), now) {
                                    Ok(c) => st.install(c),
                                    Err(e) => {
                                        st.finish(format!("invalid configuration: {e}"));
                                    }
                                }
                            }
                        }
                        ClientReceived::Data => st.deliver(now, &self.plaintext, n),
                        ClientReceived::Control | ClientReceived::Dropped(_) => {}
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    st.counters.recv_errors += 1;
                    self.socket_error = true;
                    break;
                }
            }
            if i + 1 == READ_BATCH {
                self.more_input = true;
            }
        }
    }

    /// Runs the security layer's and the connection's timers; false if the session has ended.
    fn run_timers(&mut self, st: &mut Link, now: sprout_core::Instant) -> bool {
        if self.secure.poll_timeout().is_some_and(|t| t <= now) {
            self.secure.handle_timeout(now);
        }
        if let Some(e) = self.secure.error() {
            st.secure_error = Some(e.clone());
            st.secure = Some(self.secure.stats());
            st.finish(e.to_string());
        }
        if st.ended {
            return false;
        }
        if let Some(c) = st.conn.as_mut() {
            c.handle_timeout(now);
        }
        true
    }

    /// Sends what is blocked, the security layer's own datagrams, then the connection's.
    fn write(&mut self, st: &mut Link, now: sprout_core::Instant) {
        let (socket, remote) = (&self.socket, self.remote);
        let (blocked, socket_error) = (&mut self.blocked, &mut self.socket_error);
        if let Some(d) = blocked.take() {
            client_send(socket, st, &d, remote, blocked, socket_error);
        }
        while blocked.is_none() && self.secure.poll_transmit(now, &mut self.out) {
            client_send(socket, st, &self.out, remote, blocked, socket_error);
        }
        let mut sent = 0;
        while blocked.is_none() && sent < SEND_BATCH && self.secure.is_established() {
            if st.next_transmit(now, &mut self.tx).is_none() {
                break;
            }
            sent += 1;
            match self.secure.seal(now, &self.tx, &mut self.out) {
                Ok(()) => client_send(socket, st, &self.out, remote, blocked, socket_error),
                Err(_) => st.counters.seal_errors += 1,
            }
        }
        if sent == SEND_BATCH {
            // More may be ready: come straight back after reading the socket.
            self.more_input = true;
        }
        st.peer = Some(self.remote);
        st.secure = Some(self.secure.stats());
    }

    /// How long to sleep: until the next deadline of the connection or the security layer,
    /// at most [`ERROR_BACKOFF`] after a socket error, at least that while a datagram is
    /// blocked.
    fn next_timeout(&self, st: &mut Link, shared: &ConnShared) -> Option<Duration> {
        let mut deadline = st.poll_timeout();
        if let Some(t) = self.secure.poll_timeout() {
            deadline = Some(deadline.map_or(t, |d| d.min(t)));
        }
        let now = shared.clock.now();
        let mut timeout = deadline.map(|d| Duration::from(d - now));
        if self.socket_error {
            timeout = Some(timeout.map_or(ERROR_BACKOFF, |t| t.min(ERROR_BACKOFF)));
        }
        if self.blocked.is_some() {
            // Nothing leaves until the socket is writable again (an event wakes the driver);
            // meanwhile a deadline already passed (a heartbeat) must not make it spin.
            timeout = Some(timeout.map_or(ERROR_BACKOFF, |t| t.max(ERROR_BACKOFF)));
        }
        timeout
    }
}

/// Marks the driver stopped for `why` and wakes every waiting application thread.
fn stop(shared: &ConnShared, why: String) {
    shared.lock().finish(why);
    shared.notify_all();
}
