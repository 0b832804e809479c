//! [`Server`]: many secure Sprout sessions on one UDP socket, each a [`Session`] with the
//! blocking API of an [`crate::Endpoint`].
//!
//! One driver thread owns the socket, the security layer ([`sprout_secure::Server`]) and a map
//! of sessions by [`SessionId`], each with its own [`sprout_core::Connection`] behind its own
//! lock (so application threads on different sessions never wait for each other). Per datagram
//! the work is O(1) in the number of sessions: the security layer finds the session by its
//! connection id, the driver by a hash map. Connection deadlines sit in a binary heap of
//! (deadline, session) with lazy invalidation (an entry counts only if it is still the
//! session's scheduled deadline), so a wake-up touches only the sessions that are due, that
//! received datagrams, or that the application poked.
//!
//! A session starts when a client's handshake completes and its first sealed datagram
//! arrives: the acceptor gets the client's address, public key and greeting and returns the
//! session's [`Config`] (or `None` to refuse it), and the session waits for
//! [`Server::accept`]. It ends when the application closes it ([`Session::close`], or drops
//! it), or when the security layer expires it (no authenticated datagram for the idle
//! timeout); the application then sees `recv` return `None` and [`EndpointStats::end`] set.

use std::cmp::Reverse;
use std::collections::hash_map::Entry as MapEntry;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Waker};
use sprout_core::{Config, Connection};
use sprout_secure::{
    PublicKey, SealError, Server as SecureServer, ServerConfig, ServerEvent, ServerReceived,
    SessionId,
};

use crate::clock::Clock;
use crate::conn::{ConnShared, Link, Signal};
use crate::driver::{
    segments, send_gso, send_to, Gather, Sent, SentSegments, ERROR_BACKOFF, MAX_UDP, READ_BATCH,
    SEND_BATCH, SOCKET, WAKER,
};
use crate::error::NetError;
use crate::stats::{EndpointStats, ServerStats};

/// Decides whether to accept an established session: gets the client's address, its public
/// key and its greeting, and returns the session's Sprout configuration or `None` to refuse
/// it. Runs on the driver thread and must not call back into the server.
pub type Acceptor = Box<dyn FnMut(SocketAddr, &PublicKey, &[u8]) -> Option<Config> + Send>;

/// How a [`Server`] runs.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// The security layer's configuration: the server's private key, the allowed client keys,
    /// handshake rate limits, the caps of sessions per source address and per client key
    /// (`max_sessions_per_source`, default 16, an IPv6 /64 counting as one source;
    /// `max_sessions_per_key`, default 8) and key limits. Its `max_sessions` and
    /// `idle_timeout` are replaced by the two fields below.
    pub secure: ServerConfig,
    /// Most sessions at once (default 1024); handshakes beyond are answered with an
    /// authenticated refusal (the client reports "server full (N sessions) - try later") and
    /// counted ([`sprout_secure::DropReason::TooManySessions`]).
    pub max_sessions: usize,
    /// A session with no authenticated datagram from its client for this long is closed
    /// (default 30 s). A live Sprout peer sends at least a heartbeat every few hundred ms.
    pub idle_timeout: Duration,
    /// Most accepted sessions waiting for [`Server::accept`] (default 128); beyond it new
    /// sessions are refused ([`ServerStats::sessions_refused`]).
    pub accept_backlog: usize,
    /// The socket's receive and send buffer sizes asked of the kernel, bytes (default 4 MiB;
    /// the kernel caps them at `net.core.rmem_max` / `wmem_max`; 0 leaves its defaults). One
    /// socket carries every session: with the default of about 200 KiB (some 90 datagrams of
    /// 1.1 kB) a few milliseconds without the driver on a CPU overflow it when hundreds of
    /// sessions run; see [`Server::socket_buffer_bytes`] for what the kernel granted.
    pub socket_buffer_bytes: usize,
}

/// Default of [`ServerOptions::socket_buffer_bytes`], bytes.
pub const DEFAULT_SOCKET_BUFFER_BYTES: usize = 4 << 20;

impl ServerOptions {
    /// Options with the defaults above.
    pub fn new(secure: ServerConfig) -> ServerOptions {
        ServerOptions {
            secure,
            max_sessions: 1024,
            idle_timeout: Duration::from_secs(30),
            accept_backlog: 128,
            socket_buffer_bytes: DEFAULT_SOCKET_BUFFER_BYTES,
        }
    }
}

/// What the application and the driver share about the server.
struct ServerShared {
    ctl: Mutex<Ctl>,
    /// Signalled when a session waits for `accept` or the server stops.
    accept: Signal,
    clock: Clock,
}

impl ServerShared {
    fn lock(&self) -> MutexGuard<'_, Ctl> {
        self.ctl.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The server's control block.
struct Ctl {
    /// Sessions the application touched (sent, changed modes) since the driver last looked.
    dirty: Vec<SessionId>,
    /// Sessions the application closed (with their state, so that a closed id that the
    /// layer has since given to another session cannot close that one).
    closing: Vec<(SessionId, Arc<ConnShared>)>,
    /// Accepted sessions waiting for `accept`.
    incoming: VecDeque<Session>,
    /// Set by the application to stop the driver.
    closed: bool,
    /// Set by the driver when it stops.
    stopped: bool,
    /// Why the driver stopped on its own.
    fatal: Option<String>,
    /// The latest snapshot of the server's counters.
    stats: ServerStats,
}

/// Many secure Sprout sessions on one UDP socket.
///
/// Every method takes `&self`; dropping the server (or [`Server::close`]) stops its driver and
/// ends every session.
pub struct Server {
    shared: Arc<ServerShared>,
    waker: Arc<Waker>,
    thread: Mutex<Option<JoinHandle<()>>>,
    local: SocketAddr,
    public_key: PublicKey,
    socket_buffer_bytes: (usize, usize),
}

impl Server {
    /// A server on `local` with `options`; `acceptor` chooses each new session's
    /// configuration (see [`Acceptor`]).
    pub fn bind<F>(
        local: SocketAddr,
        options: ServerOptions,
        acceptor: F,
    ) -> Result<Server, NetError>
    where
        F: FnMut(SocketAddr, &PublicKey, &[u8]) -> Option<Config> + Send + 'static,
    {
        let mut secure_config = options.secure.clone();
        secure_config.max_sessions = options.max_sessions;
        secure_config.idle_timeout = options.idle_timeout.into();
        let secure = SecureServer::new(secure_config);
        let public_key = secure.public_key();
        let mut socket = UdpSocket::bind(local)
            .map_err(|e| NetError::io(format!("binding UDP socket to {local}"), e))?;
        let local = socket
            .local_addr()
            .map_err(|e| NetError::io("reading the socket's address", e))?;
        let sock = socket2::SockRef::from(&socket);
        if options.socket_buffer_bytes > 0 {
            // Failures only leave the kernel's defaults (the sizes are advice).
            let _ = sock.set_recv_buffer_size(options.socket_buffer_bytes);
            let _ = sock.set_send_buffer_size(options.socket_buffer_bytes);
        }
        let socket_buffer_bytes = (
            sock.recv_buffer_size().unwrap_or(0),
            sock.send_buffer_size().unwrap_or(0),
        );
        let poll = Poll::new().map_err(|e| NetError::io("creating the poller", e))?;
        poll.registry()
            .register(&mut socket, SOCKET, Interest::READABLE | Interest::WRITABLE)
            .map_err(|e| NetError::io("registering the socket", e))?;
        let waker = Arc::new(
            Waker::new(poll.registry(), WAKER)
                .map_err(|e| NetError::io("creating the waker", e))?,
        );
        let shared = Arc::new(ServerShared {
            ctl: Mutex::new(Ctl {
                dirty: Vec::new(),
                closing: Vec::new(),
                incoming: VecDeque::new(),
                closed: false,
                stopped: false,
                fatal: None,
                stats: ServerStats {
                    local_addr: Some(local),
                    running: true,
                    ..ServerStats::default()
                },
            }),
            accept: Signal::new(),
            clock: Clock::new(),
        });
        let driver = Driver {
            shared: shared.clone(),
            waker: waker.clone(),
            secure,
            acceptor: Box::new(acceptor),
            accept_backlog: options.accept_backlog,
            local,
            sessions: HashMap::new(),
            timers: BinaryHeap::new(),
            stats: ServerStats {
                local_addr: Some(local),
                running: true,
                ..ServerStats::default()
            },
            blocked: None,
            gather: Gather::new(&socket),
            gather_to: None,
            ended: Vec::new(),
            socket_error: false,
        };
        let thread = std::thread::Builder::new()
            .name(format!("sprout-net server {local}"))
            .spawn(move || driver.run(poll, socket))
            .map_err(|e| NetError::io("starting the driver thread", e))?;
        Ok(Server {
            shared,
            waker,
            thread: Mutex::new(Some(thread)),
            local,
            public_key,
            socket_buffer_bytes,
        })
    }

    /// The socket's receive and send buffer sizes the kernel granted, bytes (as `getsockopt`
    /// reports them: Linux doubles the size asked for, for its own bookkeeping).
    pub fn socket_buffer_bytes(&self) -> (usize, usize) {
        self.socket_buffer_bytes
    }

    /// The local socket address (with the port the system chose, if it was 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The server's public key (what clients need to connect).
    pub fn public_key(&self) -> PublicKey {
        self.public_key
    }

    /// The next accepted session, if one is waiting (never blocks).
    pub fn try_accept(&self) -> Option<Session> {
        self.shared.lock().incoming.pop_front()
    }

    /// The next accepted session, waiting for one at most `timeout`; `None` if none came in
    /// time or the server has stopped.
    pub fn accept_timeout(&self, timeout: Duration) -> Option<Session> {
        self.accept_until(Some(Instant::now() + timeout))
    }

    /// The next accepted session, waiting as long as it takes; `None` once the server has
    /// stopped.
    pub fn accept(&self) -> Option<Session> {
        self.accept_until(None)
    }

    fn accept_until(&self, deadline: Option<Instant>) -> Option<Session> {
        let mut ctl = self.shared.lock();
        loop {
            if let Some(s) = ctl.incoming.pop_front() {
                return Some(s);
            }
            if ctl.stopped || ctl.closed {
                return None;
            }
            let wait = crate::clock::wait_left(deadline)?;
            ctl = self.shared.accept.wait_timeout(ctl, wait);
        }
    }

    /// Async: the next accepted session, or `None` once the server has stopped.
    #[cfg(feature = "tokio")]
    pub(crate) async fn accept_async(&self) -> Option<Session> {
        loop {
            let notified = self.shared.accept.notify.notified();
            ::tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut ctl = self.shared.lock();
                if let Some(s) = ctl.incoming.pop_front() {
                    return Some(s);
                }
                if ctl.stopped || ctl.closed {
                    return None;
                }
            }
            notified.await;
        }
    }

    /// A snapshot of the server's counters: sessions, traffic, and the security layer's
    /// counters with every dropped datagram by reason.
    pub fn stats(&self) -> ServerStats {
        let ctl = self.shared.lock();
        let mut s = ctl.stats.clone();
        s.elapsed_s = self.shared.clock.now().as_secs_f64();
        s.drops = s.secure.drops_by_name().into_iter().collect();
        s.running = !ctl.stopped;
        s
    }

    /// Whether the driver thread is still running.
    pub fn is_running(&self) -> bool {
        !self.shared.lock().stopped
    }

    /// Why the driver stopped on its own (a poller failure), if it did.
    pub fn fatal_error(&self) -> Option<String> {
        self.shared.lock().fatal.clone()
    }

    /// Stops the driver thread, ends every session and closes the socket. Idempotent.
    pub fn close(&self) {
        self.shared.lock().closed = true;
        let _ = self.waker.wake();
        let handle = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(h) = handle {
            let _ = h.join();
        }
        // Sessions never accepted end here (outside the lock: their drop takes it).
        let waiting: Vec<Session> = self.shared.lock().incoming.drain(..).collect();
        drop(waiting);
        self.shared.accept.notify_all();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.close();
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("local", &self.local)
            .field("public_key", &self.public_key)
            .finish()
    }
}

/// One client's session on a [`Server`], with the blocking API of an [`crate::Endpoint`].
///
/// Every method takes `&self`, so a session can be shared between threads in an [`Arc`].
/// Dropping it closes the session.
pub struct Session {
    id: SessionId,
    peer_key: PublicKey,
    greeting: Vec<u8>,
    conn: Arc<ConnShared>,
    server: Arc<ServerShared>,
    waker: Arc<Waker>,
}

impl Session {
    /// The session's id (the server's connection id for it).
    pub fn id(&self) -> SessionId {
        self.id
    }

    /// The client's public key.
    pub fn peer_key(&self) -> PublicKey {
        self.peer_key
    }

    /// The greeting the client sent in its handshake (may be empty).
    pub fn greeting(&self) -> &[u8] {
        &self.greeting
    }

    /// Asks the driver to look at this session (the application changed something).
    fn poke(&self) {
        {
            let mut st = self.conn.lock();
            if st.dirty || st.ended {
                return;
            }
            st.dirty = true;
        }
        self.server.lock().dirty.push(self.id);
        let _ = self.waker.wake();
    }

    /// Queues an application datagram; it leaves when the Sprout window allows (before any
    /// bulk filler). Datagrams longer than [`Session::max_payload`] are cut to that. Dropped
    /// if the session has ended.
    pub fn send(&self, datagram: Vec<u8>) {
        if self.conn.send(datagram) {
            self.poke();
        }
    }

    /// Bulk mode, as [`crate::Endpoint::set_bulk`].
    pub fn set_bulk(&self, bulk: bool) {
        self.conn.set_bulk(bulk);
        self.poke();
    }

    /// Bulk mode with payloads the application writes, as
    /// [`crate::Endpoint::set_bulk_writer`]. `write` runs on the server's driver thread (shared
    /// by every session): it must be quick and must not call back into the server.
    pub fn set_bulk_writer<F>(&self, write: F)
    where
        F: FnMut(&mut [u8]) + Send + 'static,
    {
        self.conn.set_bulk_writer(Box::new(write));
        self.poke();
    }

    /// Whether received payloads are kept for `recv` (default) or only counted.
    pub fn set_keep_incoming(&self, keep: bool) {
        self.conn.set_keep_incoming(keep);
    }

    /// Largest application payload per datagram, in bytes.
    pub fn max_payload(&self) -> usize {
        self.conn.max_payload()
    }

    /// Application bytes queued, waiting for the window.
    pub fn queued_bytes(&self) -> usize {
        self.conn.queued_bytes()
    }

    /// Blocks until at most `threshold` application bytes are queued, for at most `timeout`;
    /// returns whether the queue is at or below the threshold (false once the session ended).
    pub fn wait_writable(&self, threshold: usize, timeout: Duration) -> bool {
        self.conn.wait_writable(threshold, timeout)
    }

    /// The next received application datagram, if one is waiting (never blocks).
    pub fn try_recv(&self) -> Option<Vec<u8>> {
        self.conn.try_recv()
    }

    /// The next received application datagram, waiting as long as it takes; `None` once the
    /// session has ended and nothing is left.
    pub fn recv(&self) -> Option<Vec<u8>> {
        self.conn.recv_until(None)
    }

    /// The next received application datagram, waiting at most `timeout`; `None` if none came
    /// in time or the session has ended.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<Vec<u8>> {
        self.conn.recv_until(Some(Instant::now() + timeout))
    }

    /// A snapshot of the session's counters, window and forecast.
    pub fn stats(&self) -> EndpointStats {
        self.conn.stats()
    }

    /// The client's current address (it follows the client when it roams).
    pub fn peer_addr(&self) -> SocketAddr {
        let st = self.conn.lock();
        st.peer.unwrap_or(st.local)
    }

    /// The server's socket address.
    pub fn local_addr(&self) -> SocketAddr {
        self.conn.lock().local
    }

    /// The session's Sprout configuration (as the acceptor chose it).
    pub fn config(&self) -> Config {
        self.conn.lock().config.clone()
    }

    /// Whether the session still runs.
    pub fn is_open(&self) -> bool {
        !self.conn.lock().ended
    }

    /// Why the session ended (closed, idle), if it did.
    pub fn end_reason(&self) -> Option<String> {
        self.conn.lock().end.clone()
    }

    /// Ends the session: the server forgets it (later datagrams of the client are dropped as
    /// an unknown session); queued data is dropped. Idempotent.
    pub fn close(&self) {
        let already_ended = {
            let mut st = self.conn.lock();
            if st.closed {
                return;
            }
            st.closed = true;
            let ended = st.ended;
            st.finish("closed");
            ended
        };
        self.conn.notify_all();
        if !already_ended {
            self.server
                .lock()
                .closing
                .push((self.id, self.conn.clone()));
            let _ = self.waker.wake();
        }
    }

    #[cfg(feature = "tokio")]
    pub(crate) fn shared(&self) -> &Arc<ConnShared> {
        &self.conn
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close();
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &format_args!("{:08x}", self.id))
            .field("peer", &self.peer_addr())
            .field("peer_key", &self.peer_key)
            .finish()
    }
}

const _: fn() = || {
    fn is<T: Send + Sync>() {}
    is::<Server>();
    is::<Session>();
};

/// The driver's record of a session.
struct Entry {
    conn: Arc<ConnShared>,
    /// The deadline the timer heap holds for it, µs (entries with another deadline are stale).
    scheduled: Option<sprout_core::Instant>,
    /// Application data arrived in this round: its readers are woken once, when the driver
    /// services it (not once per datagram).
    readable: bool,
}

/// The server's driver thread: owns the socket, the security layer and the sessions.
struct Driver {
    shared: Arc<ServerShared>,
    waker: Arc<Waker>,
    secure: SecureServer,
    acceptor: Acceptor,
    accept_backlog: usize,
    local: SocketAddr,
    sessions: HashMap<SessionId, Entry>,
    /// (deadline µs, session), earliest first, lazily invalidated.
    timers: BinaryHeap<Reverse<(sprout_core::Instant, SessionId)>>,
    stats: ServerStats,
    /// Sealed datagrams the socket refused with "would block", their destination and the
    /// length of each but the last (as [`Gather`] holds them); sent before anything else.
    blocked: Option<(Vec<u8>, SocketAddr, usize)>,
    /// A session's datagrams gathered for one segmented send (UDP GSO), and where they go.
    gather: Gather,
    gather_to: Option<SocketAddr>,
    /// Sessions ended in this round, their applications to wake once the counters are out.
    ended: Vec<Arc<ConnShared>>,
    socket_error: bool,
}

/// Buffers the driver reuses.
struct Buffers {
    rx: Vec<u8>,
    tx: Vec<u8>,
    out: Vec<u8>,
    plaintext: Vec<u8>,
}

impl Driver {
    fn run(mut self, mut poll: Poll, socket: UdpSocket) {
        let mut events = Events::with_capacity(256);
        let mut buf = Buffers {
            rx: vec![0u8; MAX_UDP],
            tx: Vec::with_capacity(2048),
            out: Vec::with_capacity(2048),
            plaintext: Vec::with_capacity(2048),
        };
        let mut more_input = true;
        // Sessions to service at once on the next round (they hit the send batch, or the
        // socket blocked).
        let mut pending: Vec<SessionId> = Vec::new();
        // Sessions to service this round (deduplicated through `mark`).
        let mut touched: Vec<SessionId> = Vec::new();
        let mut mark: HashSet<SessionId> = HashSet::new();
        let mut timeout: Option<Duration> = None;
        loop {
            let wait = if more_input || !pending.is_empty() {
                Some(Duration::ZERO)
            } else {
                timeout
            };
            if let Err(e) = poll.poll(&mut events, wait) {
                if e.kind() != io::ErrorKind::Interrupted {
                    self.stop(Some(format!("poll failed: {e}")));
                    return;
                }
            }
            more_input |= events
                .iter()
                .any(|ev| ev.token() == SOCKET && ev.is_readable());
            let now = self.shared.clock.now();
            self.socket_error = false;
            let (dirty, closing) = {
                let mut ctl = self.shared.lock();
                if ctl.closed {
                    drop(ctl);
                    self.stop(None);
                    return;
                }
                (
                    std::mem::take(&mut ctl.dirty),
                    std::mem::take(&mut ctl.closing),
                )
            };
            for (id, conn) in closing {
                let same = self
                    .sessions
                    .get(&id)
                    .is_some_and(|e| Arc::ptr_eq(&e.conn, &conn));
                if same {
                    self.remove(id, "closed");
                    self.secure.close_at(now, id);
                }
            }

            // Input.
            if more_input {
                more_input = false;
                for i in 0..READ_BATCH {
                    match socket.recv_from(&mut buf.rx) {
                        Ok((n, from)) => {
                            let d = &buf.rx[..n];
                            if let Some(id) = self.on_datagram(now, from, d, &mut buf.plaintext) {
                                touch(&mut touched, &mut mark, id);
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(_) => {
                            self.stats.recv_errors += 1;
                            self.socket_error = true;
                            break;
                        }
                    }
                    if i + 1 == READ_BATCH {
                        more_input = true;
                    }
                }
            }

            // The security layer's timers: idle sessions and expired keys end here.
            if self.secure.poll_timeout().is_some_and(|t| t <= now) {
                self.secure.handle_timeout(now);
            }
            while let Some(ServerEvent::Closed { id }) = self.secure.poll_event() {
                if self.remove(id, "idle: no authenticated datagram from the client") {
                    self.stats.sessions_expired += 1;
                }
            }

            // Sessions due, poked by the application, or left over from the last round.
            while let Some(&Reverse((t, id))) = self.timers.peek() {
                if t > now {
                    break;
                }
                self.timers.pop();
                if let Some(e) = self.sessions.get_mut(&id) {
                    if e.scheduled == Some(t) {
                        e.scheduled = None;
                        touch(&mut touched, &mut mark, id);
                    }
                }
            }
            for id in dirty.into_iter().chain(pending.drain(..)) {
                touch(&mut touched, &mut mark, id);
            }

            // Output: what is blocked, handshake responses, then each touched session.
            if let Some((d, to, segment)) = self.blocked.take() {
                self.send_segments(&socket, &d, to, segment, None);
            }
            while self.blocked.is_none() {
                let Some(to) = self.secure.poll_transmit(&mut buf.out) else {
                    break;
                };
                let d = std::mem::take(&mut buf.out);
                self.send(&socket, &d, to, None);
                buf.out = d;
            }
            for id in touched.drain(..) {
                mark.remove(&id);
                if self.service(now, id, &socket, &mut buf) {
                    pending.push(id);
                }
            }
            if self.timers.len() > 4 * self.sessions.len() + 1024 {
                self.compact_timers();
            }

            // Next deadline.
            let mut deadline = self.timers.peek().map(|Reverse((t, _))| *t);
            if let Some(t) = self.secure.poll_timeout() {
                deadline = Some(deadline.map_or(t, |d| d.min(t)));
            }
            let now = self.shared.clock.now();
            timeout = deadline.map(|d| Duration::from(d - now));
            if self.socket_error {
                timeout = Some(timeout.map_or(ERROR_BACKOFF, |t| t.min(ERROR_BACKOFF)));
            }
            if self.blocked.is_some() {
                timeout = Some(timeout.map_or(ERROR_BACKOFF, |t| t.max(ERROR_BACKOFF)));
                // Wait for the socket to drain rather than spin on the pending sessions.
                if !pending.is_empty() && !more_input {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            self.publish_stats();
        }
    }

    /// Takes datagram `d` from `from` (opened into `plaintext`); returns the session it
    /// touched, if any.
    fn on_datagram(
        &mut self,
        now: sprout_core::Instant,
        from: SocketAddr,
        d: &[u8],
        plaintext: &mut Vec<u8>,
    ) -> Option<SessionId> {
        let n = d.len();
        self.stats.datagrams_received += 1;
        self.stats.bytes_received += n as u64;
        match self.secure.handle(now, from, d, plaintext) {
            ServerReceived::NewSession {
                id,
                peer,
                addr,
                data,
            } => {
                let greeting = self.secure.take_greeting(id);
                let backlog_full = self.shared.lock().incoming.len() >= self.accept_backlog;
                // The acceptor is the application's code: if it panics, the session is refused
                // and the driver goes on.
                let config = if backlog_full {
                    None
                } else {
                    let acceptor = &mut self.acceptor;
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        acceptor(addr, &peer, &greeting)
                    }))
                    .unwrap_or(None)
                };
                let conn = config
                    .as_ref()
                    .and_then(|c| Connection::new(c.clone(), now).ok());
                let (Some(config), Some(conn)) = (config, conn) else {
                    self.secure.close(id);
                    self.stats.sessions_refused += 1;
                    return None;
                };
                let mut link = Link::new(config, self.local, now);
                link.peer = Some(addr);
                link.install(conn);
                if data {
                    link.deliver(now, plaintext, n);
                }
                let conn = Arc::new(ConnShared::new(link, self.shared.clock));
                match self.sessions.entry(id) {
                    MapEntry::Occupied(_) => {
                        // The layer never reuses a live id; refuse rather than mix sessions.
                        self.stats.sessions_refused += 1;
                        return None;
                    }
                    MapEntry::Vacant(v) => {
                        v.insert(Entry {
                            conn: conn.clone(),
                            scheduled: None,
                            readable: false,
                        });
                    }
                }
                let session = Session {
                    id,
                    peer_key: peer,
                    greeting,
                    conn,
                    server: self.shared.clone(),
                    waker: self.waker.clone(),
                };
                self.stats.sessions_accepted += 1;
                {
                    // The count is published with the session, so that whoever accepts it
                    // sees it counted.
                    let mut ctl = self.shared.lock();
                    ctl.incoming.push_back(session);
                    ctl.stats.sessions_accepted = self.stats.sessions_accepted;
                }
                self.shared.accept.notify_all();
                Some(id)
            }
            ServerReceived::Data { id } => {
                let e = self.sessions.get_mut(&id)?;
                let mut st = e.conn.lock();
                let before = st.app_bytes_received();
                st.deliver(now, plaintext, n);
                let readable = st.app_bytes_received() != before;
                drop(st);
                // Woken once per round, in `service` (the session was touched): a wake per
                // datagram cost the server about 1.8 futex calls per datagram at 300 Mbit/s.
                e.readable |= readable;
                Some(id)
            }
            ServerReceived::Closed { id } => {
                self.remove(id, "the client closed the session");
                None
            }
            ServerReceived::Control | ServerReceived::Dropped(_) => None,
        }
    }

    /// Runs a session's timers and sends what its window allows; reschedules it. Returns
    /// whether it has more to send right away (it hit the send batch or the socket blocked).
    fn service(
        &mut self,
        now: sprout_core::Instant,
        id: SessionId,
        socket: &UdpSocket,
        buf: &mut Buffers,
    ) -> bool {
        let Some(e) = self.sessions.get_mut(&id) else {
            return false;
        };
        let conn = e.conn.clone();
        if std::mem::take(&mut e.readable) {
            conn.readable.notify_all();
        }
        let mut st = conn.lock();
        st.dirty = false;
        if st.ended {
            return false;
        }
        let queued_before = st.queued_bytes();
        if let Some(c) = st.conn.as_mut() {
            c.handle_timeout(now);
        }
        let mut sent = 0;
        let mut gone = false;
        while self.blocked.is_none() && sent < SEND_BATCH {
            if st.next_transmit(now, &mut buf.tx).is_none() {
                break;
            }
            sent += 1;
            match self.secure.seal(now, id, &buf.tx, &mut buf.out) {
                Ok(to) => {
                    if st.peer != Some(to) {
                        if st.peer.is_some() {
                            st.roams += 1;
                        }
                        st.peer = Some(to);
                    }
                    let d = std::mem::take(&mut buf.out);
                    self.gather(socket, &d, to, &mut st);
                    buf.out = d;
                }
                Err(SealError::UnknownSession(_)) => {
                    gone = true;
                    break;
                }
                Err(_) => st.counters.seal_errors += 1,
            }
        }
        self.flush(socket, &mut st);
        let more = sent == SEND_BATCH || self.blocked.is_some();
        let deadline = st.poll_timeout();
        let writable = st.queued_bytes() < queued_before;
        drop(st);
        if writable {
            conn.writable.notify_all();
        }
        if gone {
            self.remove(id, "closed by the security layer");
            return false;
        }
        if let (Some(d), Some(e)) = (deadline, self.sessions.get_mut(&id)) {
            if e.scheduled != Some(d) {
                e.scheduled = Some(d);
                self.timers.push(Reverse((d, id)));
            }
        }
        more
    }

    /// Sends a datagram, counting it for the server and, if given, its session.
    fn send(&mut self, socket: &UdpSocket, d: &[u8], to: SocketAddr, st: Option<&mut Link>) {
        match send_to(socket, d, to) {
            Sent::Ok(n) => {
                self.stats.datagrams_sent += 1;
                self.stats.bytes_sent += n as u64;
                if let Some(st) = st {
                    st.count_sent(n);
                }
            }
            Sent::Blocked => self.blocked = Some((d.to_vec(), to, d.len())),
            Sent::Failed => {
                self.stats.send_errors += 1;
                self.socket_error = true;
                if let Some(st) = st {
                    st.counters.send_errors += 1;
                }
            }
        }
    }

    /// Adds a session's sealed datagram `d` for `to` to those gathered, sending them first if
    /// it cannot join them; sends it at once where segmented sends are off.
    fn gather(&mut self, socket: &UdpSocket, d: &[u8], to: SocketAddr, st: &mut Link) {
        if !self.gather.enabled {
            self.send(socket, d, to, Some(st));
            return;
        }
        if self.gather.count > 0 && (self.gather_to != Some(to) || !self.gather.fits(d)) {
            self.flush(socket, st);
        }
        self.gather_to = Some(to);
        self.gather.push(d);
    }

    /// Sends the session's gathered datagrams.
    fn flush(&mut self, socket: &UdpSocket, st: &mut Link) {
        let Some(to) = self.gather_to.take().filter(|_| self.gather.count > 0) else {
            return;
        };
        let (buf, segment) = self.gather.take();
        self.send_segments(socket, &buf, to, segment, Some(st));
        self.gather.recycle(buf);
    }

    /// Sends `buf`, datagrams of `segment` bytes (the last one what remains), to `to`: in one
    /// segmented send if there are several and they are on, else one by one; counts them for
    /// the server and, if given, the session. Blocked: kept whole in `blocked` (datagrams
    /// behind a blocked one are lost). Segmentation refused: turned off, and they go one by one.
    fn send_segments(
        &mut self,
        socket: &UdpSocket,
        buf: &[u8],
        to: SocketAddr,
        segment: usize,
        mut st: Option<&mut Link>,
    ) {
        let count = segments(buf, segment).len() as u64;
        if self.gather.enabled && buf.len() > segment && self.blocked.is_none() {
            match send_gso(socket, buf, segment, to) {
                SentSegments::Ok => {
                    self.stats.datagrams_sent += count;
                    self.stats.bytes_sent += buf.len() as u64;
                    if let Some(st) = st {
                        segments(buf, segment).for_each(|d| st.count_sent(d.len()));
                    }
                    return;
                }
                SentSegments::Blocked => {
                    self.blocked = Some((buf.to_vec(), to, segment));
                    return;
                }
                SentSegments::Failed => {
                    self.stats.send_errors += count;
                    self.socket_error = true;
                    if let Some(st) = st {
                        st.counters.send_errors += count;
                    }
                    return;
                }
                SentSegments::Unsupported => self.gather.enabled = false,
            }
        }
        for d in segments(buf, segment) {
            if self.blocked.is_some() {
                self.stats.send_errors += 1;
                if let Some(st) = st.as_deref_mut() {
                    st.counters.send_errors += 1;
                }
                continue;
            }
            self.send(socket, d, to, st.as_deref_mut());
        }
    }

    /// Forgets session `id` and tells its application why; returns whether it was there.
    fn remove(&mut self, id: SessionId, why: &str) -> bool {
        let Some(e) = self.sessions.remove(&id) else {
            return false;
        };
        e.conn.lock().finish(why);
        // Woken once the server's counters say so too (`publish_stats`, this round).
        self.ended.push(e.conn);
        self.stats.sessions_closed += 1;
        true
    }

    /// Rebuilds the timer heap from the sessions' scheduled deadlines (drops stale entries).
    fn compact_timers(&mut self) {
        self.timers = self
            .sessions
            .iter()
            .filter_map(|(&id, e)| e.scheduled.map(|t| Reverse((t, id))))
            .collect();
    }

    /// Copies the counters where the application reads them.
    fn publish_stats(&mut self) {
        self.stats.sessions_open = self.sessions.len() as u64;
        self.stats.secure = self.secure.stats();
        self.shared.lock().stats = self.stats.clone();
        for conn in self.ended.drain(..) {
            conn.notify_all();
        }
    }

    /// Stops: every session ends, waiters wake.
    fn stop(&mut self, fatal: Option<String>) {
        let ids: Vec<SessionId> = self.sessions.keys().copied().collect();
        for id in ids {
            self.remove(id, "the server stopped");
        }
        self.publish_stats();
        let mut ctl = self.shared.lock();
        ctl.stopped = true;
        ctl.stats.running = false;
        if ctl.fatal.is_none() {
            ctl.fatal = fatal;
        }
        drop(ctl);
        self.shared.accept.notify_all();
    }
}

/// Adds `id` to this round's sessions once.
fn touch(touched: &mut Vec<SessionId>, mark: &mut HashSet<SessionId>, id: SessionId) {
    if mark.insert(id) {
        touched.push(id);
    }
}
