//! The state of one Sprout connection shared by a driver thread and the application: the
//! sans-IO [`Connection`], what the application queued before it existed, bulk modes, counters,
//! and the signals application threads wait on (condition variables for the blocking API,
//! `tokio::sync::Notify` for the async one).
//!
//! A client [`crate::Endpoint`] has one; every [`crate::Session`] of a [`crate::Server`] has
//! its own, so that application threads working on different sessions never wait for each
//! other.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use sprout_core::{wire, Config, Connection, Transmit};
use sprout_secure::{SecureError, SecureStats};

use crate::clock::Clock;
use crate::stats::{EndpointState, EndpointStats, SocketCounters};

/// Writes the application's content into a bulk datagram's payload just before it is sealed
/// and sent.
pub type BulkWriter = Box<dyn FnMut(&mut [u8]) + Send>;

/// Something application threads wait for: a condition variable for blocking waits and, with
/// the `tokio` feature, a `Notify` for async ones. Both are always signalled together.
pub(crate) struct Signal {
    cv: Condvar,
    #[cfg(feature = "tokio")]
    pub(crate) notify: tokio::sync::Notify,
}

impl Signal {
    pub(crate) fn new() -> Signal {
        Signal {
            cv: Condvar::new(),
            #[cfg(feature = "tokio")]
            notify: tokio::sync::Notify::new(),
        }
    }

    /// Wakes every waiter, blocking and async.
    pub(crate) fn notify_all(&self) {
        self.cv.notify_all();
        #[cfg(feature = "tokio")]
        self.notify.notify_waiters();
    }

    /// Waits on the condition variable for at most `timeout`.
    pub(crate) fn wait_timeout<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        timeout: Duration,
    ) -> MutexGuard<'a, T> {
        self.cv
            .wait_timeout(guard, timeout)
            .unwrap_or_else(|e| e.into_inner())
            .0
    }
}

/// The state of one connection, behind one mutex.
pub(crate) struct Link {
    /// The connection, once the session is established (a client creates it when its
    /// handshake completes, a server when it accepts the session).
    pub conn: Option<Connection>,
    /// The configuration the connection is (or will be) created with.
    pub config: Config,
    /// Application datagrams sent before the connection exists.
    pub early: VecDeque<Vec<u8>>,
    /// Bytes in `early`.
    pub early_bytes: usize,
    /// Bulk mode requested by the application.
    pub bulk: bool,
    /// Fills bulk payloads, if the application gave a writer.
    pub bulk_writer: Option<BulkWriter>,
    /// Whether received payloads are kept for `recv`.
    pub keep_incoming: bool,
    /// The driver's counters for this connection.
    pub counters: SocketCounters,
    /// When the connection started, on the clock.
    pub started: sprout_core::Instant,
    /// When the last authenticated datagram arrived, on the clock.
    pub last_received: Option<sprout_core::Instant>,
    /// The local socket address (a client's changes on [`crate::Endpoint::rebind`]).
    pub local: SocketAddr,
    /// The peer's address (a session's follows the client when it roams).
    pub peer: Option<SocketAddr>,
    /// Times the peer's address changed.
    pub roams: u64,
    /// The security layer's counters (a client's own; for a session, unused).
    pub secure: Option<SecureStats>,
    /// Why a client's security layer failed (its handshake timed out), if it did.
    pub secure_error: Option<SecureError>,
    /// A new socket for the driver to switch to (client only).
    pub rebind: Option<std::net::UdpSocket>,
    /// Set by the application to stop a client's driver.
    pub closed: bool,
    /// The connection is over: nothing more will arrive or leave.
    pub ended: bool,
    /// Why it ended, if it did.
    pub end: Option<String>,
    /// A server session asked the driver for service and is in its list (avoids duplicates).
    pub dirty: bool,
    /// A client whose server fell silent is redialling (its old connection is gone, what the
    /// application sends waits in `early`); published by the driver from its redial machine.
    pub reconnecting: bool,
    /// Times a client's session was re-established after its server fell silent (published by
    /// the driver from its redial machine).
    pub reconnections: u64,
    /// The server's latest authenticated refusal of a client's handshake under way
    /// ([`SecureError::Refused`]; published by the driver).
    pub refusal: Option<SecureError>,
    /// Application datagrams the old connection had received but the application had not
    /// read when the client started redialling; read before the new connection's.
    pub leftover: VecDeque<Vec<u8>>,
    /// The connection counters of a client's earlier connections (before its redials), so
    /// that [`EndpointStats`]' counters count the whole endpoint and never go back.
    pub earlier: Carried,
}

/// Counters of a client's connections that ended with a redial, carried into the next.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Carried {
    heartbeats_sent: u64,
    app_bytes_sent: u64,
    app_bytes_received: u64,
    incoming_dropped: u64,
    late: u64,
    duplicates: u64,
}

impl Carried {
    /// Adds a connection's counters.
    fn add(&mut self, c: &sprout_core::ConnectionStats) {
        self.heartbeats_sent += c.heartbeats_sent;
        self.app_bytes_sent += c.app_bytes_sent;
        self.app_bytes_received += c.app_bytes_received;
        self.incoming_dropped += c.incoming_dropped;
        self.late += c.receiver.late;
        self.duplicates += c.receiver.duplicates;
    }
}

impl Link {
    /// Where the endpoint stands.
    pub(crate) fn state(&self) -> EndpointState {
        if self.ended {
            EndpointState::Ended
        } else if self.reconnecting {
            EndpointState::Reconnecting
        } else if self.conn.is_some() {
            EndpointState::Established
        } else {
            EndpointState::Connecting
        }
    }

    pub(crate) fn new(config: Config, local: SocketAddr, started: sprout_core::Instant) -> Link {
        Link {
            conn: None,
            config,
            early: VecDeque::new(),
            early_bytes: 0,
            bulk: false,
            bulk_writer: None,
            keep_incoming: true,
            counters: SocketCounters::default(),
            started,
            last_received: None,
            local,
            peer: None,
            roams: 0,
            secure: None,
            secure_error: None,
            rebind: None,
            closed: false,
            ended: false,
            end: None,
            dirty: false,
            reconnecting: false,
            reconnections: 0,
            refusal: None,
            leftover: VecDeque::new(),
            earlier: Carried::default(),
        }
    }

    /// A client's server fell silent: the connection goes (what it received and the
    /// application did not read yet stays readable), and what the application sends from now
    /// waits in `early` for the next session. Data the old connection still held to send is
    /// dropped: it is at least the dead-peer timeout old.
    pub(crate) fn drop_connection(&mut self) {
        if let Some(mut old) = self.conn.take() {
            self.earlier.add(&old.stats());
            while let Some(d) = old.recv() {
                self.leftover.push_back(d);
            }
        }
    }

    /// The next received application datagram (the old connection's first, after a
    /// reconnection).
    pub(crate) fn recv(&mut self) -> Option<Vec<u8>> {
        if let Some(d) = self.leftover.pop_front() {
            return Some(d);
        }
        self.conn.as_mut().and_then(|c| c.recv())
    }

    /// Installs the connection: what the application sent early goes into it.
    pub(crate) fn install(&mut self, mut conn: Connection) {
        conn.set_keep_incoming(self.keep_incoming);
        for d in self.early.drain(..) {
            conn.send(d);
        }
        self.early_bytes = 0;
        self.conn = Some(conn);
    }

    /// Application bytes waiting to be sent.
    pub(crate) fn queued_bytes(&self) -> usize {
        self.early_bytes + self.conn.as_ref().map_or(0, |c| c.queued_bytes())
    }

    /// Application bytes received so far by the current connection, plus datagrams kept from
    /// an old one (a change tells the driver that something became readable).
    pub(crate) fn app_bytes_received(&self) -> u64 {
        self.conn
            .as_ref()
            .map_or(0, |c| c.stats().app_bytes_received)
            .wrapping_add(self.leftover.len() as u64)
    }

    /// Hands an opened core datagram (the plaintext of an authenticated datagram of
    /// `wire_len` bytes on the socket) to the connection.
    pub(crate) fn deliver(&mut self, now: sprout_core::Instant, plaintext: &[u8], wire_len: usize) {
        self.counters.datagrams_received += 1;
        self.counters.bytes_received += wire_len as u64;
        self.last_received = Some(now);
        if let Some(conn) = &mut self.conn {
            if conn.handle_datagram(now, plaintext).is_err() {
                self.counters.malformed += 1;
            }
        }
    }

    /// Counts a datagram of `n` bytes written to the socket.
    pub(crate) fn count_sent(&mut self, n: usize) {
        self.counters.datagrams_sent += 1;
        self.counters.bytes_sent += n as u64;
    }

    /// Puts the connection in filler mode when the application asked for bulk and nothing it
    /// sent explicitly is waiting (explicit datagrams go first).
    pub(crate) fn sync_bulk(&mut self) -> bool {
        let Some(conn) = &mut self.conn else {
            return false;
        };
        let filler = self.bulk && conn.queued_bytes() == 0;
        conn.set_bulk(filler);
        filler
    }

    /// The next core datagram to send at `now`, written into `tx` (bulk payloads stamped
    /// by the bulk writer), or `None`.
    pub(crate) fn next_transmit(
        &mut self,
        now: sprout_core::Instant,
        tx: &mut Vec<u8>,
    ) -> Option<Transmit> {
        let filler = self.sync_bulk();
        let conn = self.conn.as_mut()?;
        let t = conn.poll_transmit(now, tx)?;
        if filler && !t.heartbeat && t.app_bytes > 0 {
            if let Some(w) = self.bulk_writer.as_mut() {
                let start = tx.len().saturating_sub(t.app_bytes);
                w(&mut tx[start..]);
            }
        }
        Some(t)
    }

    /// The connection's next deadline, on the clock.
    pub(crate) fn poll_timeout(&mut self) -> Option<sprout_core::Instant> {
        self.sync_bulk();
        self.conn.as_mut().and_then(|c| c.poll_timeout())
    }

    /// Marks the connection over for `why` (the first reason stays).
    pub(crate) fn finish(&mut self, why: impl Into<String>) {
        self.ended = true;
        if self.end.is_none() {
            self.end = Some(why.into());
        }
    }
}

/// A connection's state and the signals its application threads wait on.
pub(crate) struct ConnShared {
    /// Everything, behind one lock.
    pub state: Mutex<Link>,
    /// Signalled when application data arrives, the session is established, or it ends.
    pub readable: Signal,
    /// Signalled when queued application data leaves, the session is established, or it ends.
    pub writable: Signal,
    /// The protocol clock (a server's is shared by all its sessions).
    pub clock: Clock,
}

impl ConnShared {
    pub(crate) fn new(link: Link, clock: Clock) -> ConnShared {
        ConnShared {
            state: Mutex::new(link),
            readable: Signal::new(),
            writable: Signal::new(),
            clock,
        }
    }

    /// Locks the state, recovering it if a thread panicked while holding it.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Link> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wakes every waiter (after the connection ended).
    pub(crate) fn notify_all(&self) {
        self.readable.notify_all();
        self.writable.notify_all();
    }

    /// Queues an application datagram (cut to the largest payload); returns false if the
    /// connection is over (the datagram is dropped).
    pub(crate) fn send(&self, mut datagram: Vec<u8>) -> bool {
        let mut st = self.lock();
        if st.ended {
            return false;
        }
        match &mut st.conn {
            Some(conn) => conn.send(datagram),
            None => {
                datagram.truncate(max_payload_of(&st.config));
                st.early_bytes += datagram.len();
                st.early.push_back(datagram);
            }
        }
        true
    }

    pub(crate) fn set_bulk(&self, bulk: bool) {
        let mut st = self.lock();
        st.bulk = bulk;
        if !bulk {
            st.bulk_writer = None;
        }
    }

    pub(crate) fn set_bulk_writer(&self, write: BulkWriter) {
        let mut st = self.lock();
        st.bulk = true;
        st.bulk_writer = Some(write);
    }

    pub(crate) fn set_keep_incoming(&self, keep: bool) {
        let mut st = self.lock();
        st.keep_incoming = keep;
        if let Some(conn) = &mut st.conn {
            conn.set_keep_incoming(keep);
        }
    }

    pub(crate) fn max_payload(&self) -> usize {
        max_payload_of(&self.lock().config)
    }

    pub(crate) fn queued_bytes(&self) -> usize {
        self.lock().queued_bytes()
    }

    /// Blocks until at most `threshold` bytes are queued (true), the connection ends or
    /// `timeout` passes (false).
    pub(crate) fn wait_writable(&self, threshold: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut st = self.lock();
        loop {
            if st.queued_bytes() <= threshold {
                return true;
            }
            let now = Instant::now();
            if st.ended || now >= deadline {
                return false;
            }
            st = self.writable.wait_timeout(st, deadline - now);
        }
    }

    pub(crate) fn try_recv(&self) -> Option<Vec<u8>> {
        self.lock().recv()
    }

    /// The next received datagram, waiting until `deadline` (forever if `None`); `None` when
    /// the deadline passes or the connection is over and nothing is left.
    pub(crate) fn recv_until(&self, deadline: Option<Instant>) -> Option<Vec<u8>> {
        let mut st = self.lock();
        loop {
            if let Some(d) = st.recv() {
                return Some(d);
            }
            if st.ended {
                return None;
            }
            let wait = crate::clock::wait_left(deadline)?;
            st = self.readable.wait_timeout(st, wait);
        }
    }

    /// Async: the next received datagram, or `None` once the connection is over and nothing
    /// is left.
    #[cfg(feature = "tokio")]
    pub(crate) async fn recv_async(&self) -> Option<Vec<u8>> {
        loop {
            let notified = self.readable.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut st = self.lock();
                if let Some(d) = st.recv() {
                    return Some(d);
                }
                if st.ended {
                    return None;
                }
            }
            notified.await;
        }
    }

    /// Async: waits until at most `threshold` bytes are queued (true) or the connection ends
    /// (false).
    #[cfg(feature = "tokio")]
    pub(crate) async fn writable_async(&self, threshold: usize) -> bool {
        loop {
            let notified = self.writable.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let st = self.lock();
                if st.queued_bytes() <= threshold {
                    return true;
                }
                if st.ended {
                    return false;
                }
            }
            notified.await;
        }
    }

    /// A snapshot of the counters, the window and the peer's forecast.
    pub(crate) fn stats(&self) -> EndpointStats {
        let mut st = self.lock();
        let now = self.clock.now();
        let c = st.counters;
        let mut s = EndpointStats {
            elapsed_s: (now - st.started).as_secs_f64(),
            local_addr: Some(st.local),
            peer_addr: st.peer,
            established: st.conn.is_some(),
            state: st.state(),
            reconnections: st.reconnections,
            datagrams_sent: c.datagrams_sent,
            bytes_sent: c.bytes_sent,
            datagrams_received: c.datagrams_received,
            bytes_received: c.bytes_received,
            queued_bytes: st.queued_bytes(),
            malformed: c.malformed,
            other_sources: c.other_sources,
            seal_errors: c.seal_errors,
            send_errors: c.send_errors,
            recv_errors: c.recv_errors,
            roams: st.roams,
            since_last_received_s: st.last_received.map(|t| (now - t).as_secs_f64()),
            running: !st.ended,
            end: st.end.clone(),
            secure: st.secure.clone(),
            ..EndpointStats::default()
        };
        let mut all = st.earlier;
        if let Some(conn) = &st.conn {
            all.add(&conn.stats());
        }
        s.heartbeats_sent = all.heartbeats_sent;
        s.app_bytes_sent = all.app_bytes_sent;
        s.app_bytes_received = all.app_bytes_received;
        s.incoming_dropped = all.incoming_dropped;
        s.late = all.late;
        s.duplicates = all.duplicates;
        if let Some(conn) = &mut st.conn {
            let cs = conn.stats();
            s.rejected = cs.rejected;
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
}

/// Largest application payload per datagram under `config`, in bytes.
pub(crate) fn max_payload_of(config: &Config) -> usize {
    config
        .max_datagram_bytes
        .saturating_sub(wire::header_bytes(config.model.forecast_ticks))
}
