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
    mut poll: Poll,
    mut socket: UdpSocket,
    mut secure: Client,
    remote: SocketAddr,
) {
    let mut events = Events::with_capacity(64);
    let mut rx = vec![0u8; MAX_UDP];
    let mut tx = Vec::with_capacity(2048);
    let mut out = Vec::with_capacity(2048);
    let mut plaintext = Vec::with_capacity(2048);
    // A sealed datagram the socket refused with "would block"; sent before anything else.
    let mut blocked: Option<Vec<u8>> = None;
    // Whether the socket may still hold datagrams (epoll is edge-triggered: read until empty).
    let mut more_input = true;
    let mut timeout: Option<Duration> = None;
    loop {
        if !more_input {
            if let Err(e) = poll.poll(&mut events, timeout) {
                if e.kind() != io::ErrorKind::Interrupted {
                    stop(&shared, format!("poll failed: {e}"));
                    return;
                }
            }
            more_input = events
                .iter()
                .any(|ev| ev.token() == SOCKET && ev.is_readable());
        }
        let mut st = shared.lock();
        if st.closed {
            st.finish("closed");
            drop(st);
            shared.notify_all();
            return;
        }
        if let Some(new) = st.rebind.take() {
            let mut new = UdpSocket::from_std(new);
            let registered =
                poll.registry()
                    .register(&mut new, SOCKET, Interest::READABLE | Interest::WRITABLE);
            if registered.is_ok() {
                let _ = poll.registry().deregister(&mut socket);
                if let Ok(a) = new.local_addr() {
                    st.local = a;
                }
                socket = new;
                blocked = None;
                more_input = true;
            } else {
                st.counters.send_errors += 1;
            }
        }
        let now = shared.clock.now_us();
        let app_before = st.app_bytes_received();
        let queued_before = st.queued_bytes();
        let established_before = st.conn.is_some();
        let mut socket_error = false;

        // Input.
        if more_input {
            more_input = false;
            for i in 0..READ_BATCH {
                match socket.recv_from(&mut rx) {
                    Ok((n, from)) => {
                        if from != remote {
                            st.counters.other_sources += 1;
                            continue;
                        }
                        match secure.handle(now, &rx[..n], &mut plaintext) {
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
                            ClientReceived::Data => st.deliver(now, &plaintext, n),
                            ClientReceived::Control | ClientReceived::Dropped(_) => {}
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => {
                        st.counters.recv_errors += 1;
                        socket_error = true;
                        break;
                    }
                }
                if i + 1 == READ_BATCH {
                    more_input = true;
                }
            }
        }

        // Timers.
        if secure.poll_timeout().is_some_and(|t| t <= now) {
            secure.handle_timeout(now);
        }
        if let Some(e) = secure.error() {
            st.secure_error = Some(e.clone());
            st.secure = Some(secure.stats());
            st.finish(e.to_string());
        }
        if st.ended {
            drop(st);
            shared.notify_all();
            return;
        }
        if let Some(c) = st.conn.as_mut() {
            c.handle_timeout(now);
        }

        // Output: what is blocked, the security layer's own datagrams, then the connection's.
        if let Some(d) = blocked.take() {
            client_send(
                &socket,
                &mut st,
                &d,
                remote,
                &mut blocked,
                &mut socket_error,
            );
        }
        while blocked.is_none() && secure.poll_transmit(now, &mut out) {
            client_send(
                &socket,
                &mut st,
                &out,
                remote,
                &mut blocked,
                &mut socket_error,
            );
        }
        let mut sent = 0;
        while blocked.is_none() && sent < SEND_BATCH && secure.is_established() {
            if st.next_transmit(now, &mut tx).is_none() {
                break;
            }
            sent += 1;
            match secure.seal(now, &tx, &mut out) {
                Ok(()) => client_send(
                    &socket,
                    &mut st,
                    &out,
                    remote,
                    &mut blocked,
                    &mut socket_error,
                ),
                Err(_) => st.counters.seal_errors += 1,
            }
        }
        if sent == SEND_BATCH {
            // More may be ready: come straight back after reading the socket.
            more_input = true;
        }
        st.peer = Some(remote);
        st.secure = Some(secure.stats());

        // Next deadline.
        let mut deadline = st.poll_timeout();
        if let Some(t) = secure.poll_timeout() {
            deadline = Some(deadline.map_or(t, |d| d.min(t)));
        }
        let now = shared.clock.now_us();
        timeout = deadline.map(|d| Duration::from_micros(d.saturating_sub(now)));
        if socket_error {
            timeout = Some(timeout.map_or(ERROR_BACKOFF, |t| t.min(ERROR_BACKOFF)));
        }
        if blocked.is_some() {
            // Nothing leaves until the socket is writable again (an event wakes the driver);
            // meanwhile a deadline already passed (a heartbeat) must not make it spin.
            timeout = Some(timeout.map_or(ERROR_BACKOFF, |t| t.max(ERROR_BACKOFF)));
        }

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

/// Marks the driver stopped for `why` and wakes every waiting application thread.
fn stop(shared: &ConnShared, why: String) {
    shared.lock().finish(why);
    shared.notify_all();
}
