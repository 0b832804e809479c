//! The socket layer in safe Rust: [`Socket`], one secure Sprout connection that owns its UDP
//! socket (a client [`Endpoint`] of sprout-net, or a [`Session`] of a [`SocketServer`]), and
//! [`SocketServer`], many sessions on one UDP socket (sprout-net's [`Server`]).
//!
//! sprout-net runs each endpoint and server on a driver thread of its own (a mio poller that
//! sleeps until the next datagram or protocol deadline: Sprout's 20 ms ticks must be kept
//! whatever the application is busy with). What this layer adds is what a C event loop needs
//! on top: a descriptor to poll and non-blocking calls. Each handle has one more thread, its
//! pump, that waits for what sprout-net hands out (a received message, an accepted session)
//! and moves it into the handle's bounded inbox ([`Inbox`]); the inbox keeps one byte in a
//! socket pair whose reading end is the handle's descriptor exactly while something waits in
//! it or the handle has ended, so that the descriptor is readable exactly when a
//! non-blocking call would not come back empty-handed.
//!
//! Messages are the DATA messages of `sprout client` ([`sprout_net::message`]), as
//! [`crate::conn::Conn`] sends them: a sequence number and the send time (CLOCK_REALTIME,
//! microseconds since the Unix epoch, as `sprout client` stamps them) before the payload. A
//! received message's delay is measured when the pump takes it from sprout-net, on the same
//! clock.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use sprout_core::Config;
use sprout_net::message::{self, Bye, Data, Message, DATA_HEADER_BYTES};
use sprout_net::secure::{
    AllowedClients, ClientConfig, Limits, PrivateKey, PublicKey, ServerConfig,
};
use sprout_net::{realtime_us, Endpoint, EndpointStats, NetError, Server, ServerOptions, Session};
use thiserror::Error;

/// Most items an inbox holds (received messages, or accepted sessions); beyond, the pump waits
/// and sprout-net's own bounded queue takes the rest (and drops what exceeds it, counted).
pub(crate) const INBOX_ITEMS: usize = 1024;

/// Copies of a BYE or an ACCEPT, as `sprout client` and `sprout server` send them.
const COPIES: usize = 3;

/// Why a socket call failed.
#[derive(Debug, Error)]
pub enum SocketError {
    /// The address could not be parsed or resolved.
    #[error("address {addr:?}: {why}")]
    Address {
        /// The address as given.
        addr: String,
        /// Why.
        why: String,
    },
    /// sprout-net could not set the endpoint or the server up (binding, the poller, a thread,
    /// a greeting too long).
    #[error(transparent)]
    Net(#[from] NetError),
    /// A system call of this layer failed (the descriptor's socket pair, the pump's thread).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: &'static str,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A message longer than [`Socket::max_message`].
    #[error("a message of {len} bytes is longer than the {max} bytes a message may have")]
    TooLong {
        /// The message's length, bytes.
        len: usize,
        /// The most a message may have, bytes.
        max: usize,
    },
    /// The connection is over.
    #[error("the connection is closed: {0}")]
    Closed(String),
}

/// Resolves `addr` (`HOST:PORT`, a literal IPv4 or `[IPv6]` address or a name) to its first
/// address.
pub fn resolve(addr: &str) -> Result<SocketAddr, SocketError> {
    let bad = |why: String| SocketError::Address {
        addr: addr.to_string(),
        why,
    };
    let mut all = addr.to_socket_addrs().map_err(|e| bad(e.to_string()))?;
    all.next()
        .ok_or_else(|| bad("it resolves to no address".to_string()))
}

/// The Sprout configuration a greeting asks for: a HELLO's ([`message::Hello::config`]),
/// else [`Config::default`], as [`crate::conn::Conn`] and [`crate::listener::Listener`]
/// choose it.
fn config_for(greeting: &[u8]) -> Config {
    match Message::decode(greeting) {
        Ok(Message::Hello(h)) => h.config(),
        _ => Config::default(),
    }
}

/// The session number of a greeting that is a HELLO (0 otherwise).
fn hello_session(greeting: &[u8]) -> Option<u64> {
    match Message::decode(greeting) {
        Ok(Message::Hello(h)) => Some(h.session),
        _ => None,
    }
}

struct InboxState<T> {
    items: VecDeque<T>,
    /// No more items will come (the connection or the server is over).
    ended: bool,
    /// The handle is being freed: the pump stops waiting for room.
    stop: bool,
    /// Whether the readiness byte is in the socket pair.
    signalled: bool,
}

/// A bounded queue filled by a pump thread and emptied by the application, with a descriptor
/// that is readable exactly while the queue holds something or has ended.
pub struct Inbox<T> {
    state: Mutex<InboxState<T>>,
    /// Signalled when an item leaves (the pump waits for room).
    room: Condvar,
    /// Signalled when an item comes or the inbox ends ([`Inbox::settle`] waits).
    changed: Condvar,
    /// The reading end: the descriptor the application polls (never read by it).
    rx: UnixStream,
    /// The writing end.
    tx: UnixStream,
}

impl<T> Inbox<T> {
    /// An empty inbox; its socket pair is non-blocking.
    pub fn new() -> Result<Inbox<T>, SocketError> {
        let io = |context| move |source| SocketError::Io { context, source };
        let (rx, tx) = UnixStream::pair().map_err(io("creating the descriptor's socket pair"))?;
        rx.set_nonblocking(true)
            .map_err(io("making the descriptor non-blocking"))?;
        tx.set_nonblocking(true)
            .map_err(io("making the descriptor non-blocking"))?;
        Ok(Inbox {
            state: Mutex::new(InboxState {
                items: VecDeque::new(),
                ended: false,
                stop: false,
                signalled: false,
            }),
            room: Condvar::new(),
            changed: Condvar::new(),
            rx,
            tx,
        })
    }

    fn lock(&self) -> MutexGuard<'_, InboxState<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The descriptor to poll for readability.
    pub fn fd(&self) -> RawFd {
        self.rx.as_raw_fd()
    }

    /// Puts the readiness byte in or takes it out, as the state says, under the lock. One
    /// byte never fills a socket pair's buffer, and taking it out of a non-blocking socket
    /// only fails if it is not there: either failure leaves the descriptor as it was, which
    /// `signalled` then records.
    fn sync(&self, st: &mut InboxState<T>) {
        let want = st.ended || !st.items.is_empty();
        if want && !st.signalled {
            st.signalled = (&self.tx).write(&[1]).is_ok_and(|n| n == 1);
        } else if !want && st.signalled {
            let mut b = [0u8; 8];
            st.signalled = !(&self.rx).read(&mut b).is_ok_and(|n| n >= 1);
        }
    }

    /// Appends `item`, waiting while the inbox is full; false (and `item` dropped) once the
    /// handle is being freed.
    pub fn push(&self, item: T) -> bool {
        let mut st = self.lock();
        while st.items.len() >= INBOX_ITEMS && !st.stop {
            st = self.room.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        if st.stop {
            return false;
        }
        st.items.push_back(item);
        self.sync(&mut st);
        self.changed.notify_all();
        true
    }

    /// The oldest item, or `Err(ended)` when there is none (`ended`: none will come).
    pub fn pop(&self) -> Result<T, bool> {
        let mut st = self.lock();
        let item = st.items.pop_front();
        self.sync(&mut st);
        self.room.notify_all();
        item.ok_or(st.ended)
    }

    /// Puts `item` back in front (a message the caller's buffer was too small for).
    pub fn unpop(&self, item: T) {
        let mut st = self.lock();
        st.items.push_front(item);
        self.sync(&mut st);
    }

    /// Records that no more items will come.
    pub fn end(&self) {
        let mut st = self.lock();
        st.ended = true;
        self.sync(&mut st);
        self.changed.notify_all();
    }

    /// Waits until the inbox has ended or is full, at most `limit`: after its source ended,
    /// until the pump has moved what was left into it and recorded the end.
    fn settle(&self, limit: Duration) {
        let end = std::time::Instant::now() + limit;
        let mut st = self.lock();
        while !st.ended && !st.stop && st.items.len() < INBOX_ITEMS {
            let Some(left) = end.checked_duration_since(std::time::Instant::now()) else {
                return;
            };
            st = self
                .changed
                .wait_timeout(st, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Makes the pump stop waiting for room, for good.
    fn stop(&self) {
        self.lock().stop = true;
        self.room.notify_all();
    }

    /// Items waiting.
    pub fn len(&self) -> usize {
        self.lock().items.len()
    }

    /// Whether no item waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every waiting item (outside the lock: a [`Socket`]'s drop waits for its pump).
    fn clear(&self) {
        let items: Vec<T> = self.lock().items.drain(..).collect();
        drop(items);
    }
}

/// A received application message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SocketMessage {
    /// A DATA message (`seq`, `sent_us` from its header), or any other message of the peer
    /// (`sprout server`'s ACCEPT or BYE: the whole message, `seq` and `sent_us` 0).
    pub is_data: bool,
    /// The sender's sequence number (0, 1, 2, ...).
    pub seq: u64,
    /// The send time, microseconds since the Unix epoch on the sender's CLOCK_REALTIME.
    pub sent_us: u64,
    /// When it was taken from sprout-net less `sent_us`, microseconds on this host's
    /// CLOCK_REALTIME (negative if the sender's clock is ahead; 0 when not a DATA message).
    pub delay_us: i64,
    /// The payload (without the DATA header).
    pub payload: Vec<u8>,
}

impl SocketMessage {
    fn decode(d: Vec<u8>, now_us: u64) -> SocketMessage {
        match Message::decode(&d) {
            Ok(Message::Data(h)) => SocketMessage {
                is_data: true,
                seq: h.seq,
                sent_us: h.sent_us,
                delay_us: (i128::from(now_us) - i128::from(h.sent_us))
                    .clamp(i128::from(i64::MIN), i128::from(i64::MAX))
                    as i64,
                payload: d[DATA_HEADER_BYTES..].to_vec(),
            },
            _ => SocketMessage {
                is_data: false,
                seq: 0,
                sent_us: 0,
                delay_us: 0,
                payload: d,
            },
        }
    }
}

/// A client endpoint or a server's session.
enum Peer {
    Client(Endpoint),
    Session(Session),
}

impl Peer {
    fn send(&self, d: Vec<u8>) {
        match self {
            Peer::Client(e) => e.send(d),
            Peer::Session(s) => s.send(d),
        }
    }
    fn recv(&self) -> Option<Vec<u8>> {
        match self {
            Peer::Client(e) => e.recv(),
            Peer::Session(s) => s.recv(),
        }
    }
    fn stats(&self) -> EndpointStats {
        match self {
            Peer::Client(e) => e.stats(),
            Peer::Session(s) => s.stats(),
        }
    }
    fn max_payload(&self) -> usize {
        match self {
            Peer::Client(e) => e.max_payload(),
            Peer::Session(s) => s.max_payload(),
        }
    }
    fn wait_writable(&self, timeout: Duration) -> bool {
        match self {
            Peer::Client(e) => e.wait_writable(0, timeout),
            Peer::Session(s) => s.wait_writable(0, timeout),
        }
    }
    fn is_open(&self) -> bool {
        match self {
            Peer::Client(e) => e.is_running(),
            Peer::Session(s) => s.is_open(),
        }
    }
    fn end_reason(&self) -> Option<String> {
        match self {
            Peer::Client(e) => e.end_reason(),
            Peer::Session(s) => s.end_reason(),
        }
    }
    fn local_addr(&self) -> SocketAddr {
        match self {
            Peer::Client(e) => e.local_addr(),
            Peer::Session(s) => s.local_addr(),
        }
    }
    fn close(&self) {
        match self {
            Peer::Client(e) => e.close(),
            Peer::Session(s) => s.close(),
        }
    }
}

/// What this layer counts of a socket's messages.
#[derive(Clone, Copy, Debug, Default)]
struct Sent {
    /// DATA messages queued (the next one's sequence number).
    data: u64,
    /// Their bytes, DATA headers included (what a BYE reports).
    data_bytes: u64,
    /// Messages queued, BYEs included.
    messages: u64,
    /// Messages the application received.
    received: u64,
}

/// One secure Sprout connection over a UDP socket of its own (a client), or one session of a
/// [`SocketServer`]. Every method takes `&self` and may be called from any thread.
pub struct Socket {
    peer: Arc<Peer>,
    inbox: Arc<Inbox<SocketMessage>>,
    pump: Option<JoinHandle<()>>,
    sent: Mutex<Sent>,
    /// The HELLO's session number (client: its greeting's; session: its client's), 0 without.
    session: u64,
    /// Server side: the client's key and greeting.
    client: Option<(PublicKey, Vec<u8>)>,
}

impl Socket {
    /// A client connected to `remote` with `keys` (a fresh key pair's private key when
    /// `private_key` is `None`) and `greeting`: the handshake starts at once, on a socket bound
    /// to the wildcard address of `remote`'s family and a port the system chooses.
    pub fn connect(
        remote: SocketAddr,
        server_key: PublicKey,
        private_key: Option<PrivateKey>,
        greeting: &[u8],
    ) -> Result<Socket, SocketError> {
        let local: SocketAddr = if remote.is_ipv4() {
            (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let keys = ClientConfig {
            private_key: private_key.unwrap_or_else(PrivateKey::generate),
            server_key,
            limits: Limits::default(),
        };
        let ep = Endpoint::connect(local, remote, keys, config_for(greeting), greeting)?;
        Socket::start(Peer::Client(ep), hello_session(greeting).unwrap_or(0), None)
    }

    fn from_session(s: Session) -> Result<Socket, SocketError> {
        let greeting = s.greeting().to_vec();
        let hello = hello_session(&greeting);
        if let Some(h) = hello {
            // The answer `sprout client` waits for, as `sprout server` gives it.
            for _ in 0..COPIES {
                s.send(message::encode_accept(h));
            }
        }
        let client = Some((s.peer_key(), greeting));
        Socket::start(Peer::Session(s), hello.unwrap_or(0), client)
    }

    fn start(
        peer: Peer,
        session: u64,
        client: Option<(PublicKey, Vec<u8>)>,
    ) -> Result<Socket, SocketError> {
        let peer = Arc::new(peer);
        let inbox = Arc::new(Inbox::new()?);
        let (p, i) = (peer.clone(), inbox.clone());
        let pump = std::thread::Builder::new()
            .name("sprout socket".into())
            .spawn(move || {
                while let Some(d) = p.recv() {
                    if !i.push(SocketMessage::decode(d, realtime_us())) {
                        return;
                    }
                }
                i.end();
            })
            .map_err(|source| SocketError::Io {
                context: "starting the socket's thread",
                source,
            })?;
        Ok(Socket {
            peer,
            inbox,
            pump: Some(pump),
            sent: Mutex::new(Sent::default()),
            session,
            client,
        })
    }

    fn sent(&self) -> MutexGuard<'_, Sent> {
        self.sent.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn closed(&self) -> SocketError {
        SocketError::Closed(self.peer.end_reason().unwrap_or_else(|| "closed".into()))
    }

    /// The descriptor that is readable exactly while [`Socket::recv`] has something to say:
    /// a message, or the end of the connection.
    pub fn fd(&self) -> RawFd {
        self.inbox.fd()
    }

    /// Largest payload [`Socket::send`] takes, bytes.
    pub fn max_message(&self) -> usize {
        self.peer.max_payload().saturating_sub(DATA_HEADER_BYTES)
    }

    /// Queues `payload` as a DATA message stamped with the time now (CLOCK_REALTIME).
    pub fn send(&self, payload: &[u8]) -> Result<(), SocketError> {
        let max = self.max_message();
        if payload.len() > max {
            return Err(SocketError::TooLong {
                len: payload.len(),
                max,
            });
        }
        if !self.peer.is_open() {
            return Err(self.closed());
        }
        let mut sent = self.sent();
        let mut d = Data {
            seq: sent.data,
            sent_us: realtime_us(),
        }
        .encode(DATA_HEADER_BYTES + payload.len());
        d[DATA_HEADER_BYTES..].copy_from_slice(payload);
        sent.data += 1;
        sent.data_bytes += d.len() as u64;
        sent.messages += 1;
        self.peer.send(d);
        Ok(())
    }

    /// Queues a BYE (3 copies) with the session of the HELLO and what was sent, as `sprout
    /// client` ends its data.
    pub fn send_bye(&self) -> Result<(), SocketError> {
        if !self.peer.is_open() {
            return Err(self.closed());
        }
        let mut sent = self.sent();
        let bye = Bye {
            session: self.session,
            data_sent: sent.data,
            app_bytes_sent: sent.data_bytes,
        }
        .encode();
        for _ in 0..COPIES {
            sent.messages += 1;
            self.peer.send(bye.clone());
        }
        Ok(())
    }

    /// The next received message; `Ok(None)` when none waits (would block),
    /// `Err(SocketError::Closed)` when none will come.
    pub fn recv(&self) -> Result<Option<SocketMessage>, SocketError> {
        match self.inbox.pop() {
            Ok(m) => {
                self.sent().received += 1;
                Ok(Some(m))
            }
            Err(false) => Ok(None),
            Err(true) => Err(self.closed()),
        }
    }

    /// Puts back a message [`Socket::recv`] returned (the caller could not take it).
    pub fn unrecv(&self, m: SocketMessage) {
        let mut s = self.sent();
        s.received = s.received.saturating_sub(1);
        drop(s);
        self.inbox.unpop(m);
    }

    /// sprout-net's snapshot of the connection, and (messages queued, messages received).
    pub fn stats(&self) -> (EndpointStats, u64, u64) {
        let s = self.sent();
        (self.peer.stats(), s.messages, s.received)
    }

    /// Why the connection ended, if it did.
    pub fn end_reason(&self) -> Option<String> {
        self.peer.end_reason()
    }

    /// The local address of the UDP socket.
    pub fn local_addr(&self) -> SocketAddr {
        self.peer.local_addr()
    }

    /// Server side: the client's public key and greeting.
    pub fn client(&self) -> Option<&(PublicKey, Vec<u8>)> {
        self.client.as_ref()
    }

    /// Waits at most `linger` for the queued messages to leave, then ends the connection (the
    /// peer is told). Messages received before stay readable, and then [`Socket::recv`] says
    /// the connection is closed (at once, unless 1024 messages wait). Idempotent.
    pub fn close(&self, linger: Duration) {
        if !linger.is_zero() && self.peer.is_open() {
            self.peer.wait_writable(linger);
        }
        self.peer.close();
        // The pump ends as soon as it has handed over what sprout-net held (a bounded wait).
        self.inbox.settle(Duration::from_secs(1));
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        self.inbox.stop();
        self.peer.close();
        if let Some(p) = self.pump.take() {
            let _ = p.join();
        }
    }
}

/// Many sessions on one UDP socket: sprout-net's [`Server`], with an inbox of accepted
/// sessions. Every method takes `&self` and may be called from any thread.
pub struct SocketServer {
    server: Arc<Server>,
    inbox: Arc<Inbox<Socket>>,
    pump: Option<JoinHandle<()>>,
}

impl SocketServer {
    /// A server on `local` with `key`, letting in the clients of `allowed` (any when `None`).
    /// A session runs the Sprout configuration its client's greeting asks for when that is a
    /// HELLO (and the client gets an ACCEPT, as from `sprout server`), else the default.
    pub fn bind(
        local: SocketAddr,
        key: PrivateKey,
        allowed: Option<PublicKey>,
    ) -> Result<SocketServer, SocketError> {
        let allowed = match allowed {
            Some(k) => AllowedClients::Keys([k].into_iter().collect()),
            None => AllowedClients::Any,
        };
        let options = ServerOptions::new(ServerConfig::new(key, allowed));
        let server = Arc::new(Server::bind(local, options, |_, _, greeting| {
            Some(config_for(greeting))
        })?);
        let inbox: Arc<Inbox<Socket>> = Arc::new(Inbox::new()?);
        let (s, i) = (server.clone(), inbox.clone());
        let pump = std::thread::Builder::new()
            .name("sprout socket server".into())
            .spawn(move || {
                while let Some(session) = s.accept() {
                    // A session this layer cannot start (no thread, no descriptor) is closed.
                    if let Ok(socket) = Socket::from_session(session) {
                        if !i.push(socket) {
                            return;
                        }
                    }
                }
                i.end();
            })
            .map_err(|source| SocketError::Io {
                context: "starting the server's thread",
                source,
            })?;
        Ok(SocketServer {
            server,
            inbox,
            pump: Some(pump),
        })
    }

    /// The descriptor that is readable exactly while [`SocketServer::accept`] has something to
    /// say: a session, or the server's end.
    pub fn fd(&self) -> RawFd {
        self.inbox.fd()
    }

    /// The next session; `Ok(None)` when none waits, `Err(SocketError::Closed)` when the server
    /// has stopped.
    pub fn accept(&self) -> Result<Option<Socket>, SocketError> {
        match self.inbox.pop() {
            Ok(s) => Ok(Some(s)),
            Err(false) => Ok(None),
            Err(true) => Err(SocketError::Closed(
                self.server
                    .fatal_error()
                    .unwrap_or_else(|| "the server stopped".into()),
            )),
        }
    }

    /// The local address of the UDP socket (with the port the system chose).
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// The server's public key.
    pub fn public_key(&self) -> PublicKey {
        self.server.public_key()
    }
}

impl Drop for SocketServer {
    fn drop(&mut self) {
        self.inbox.stop();
        self.server.close();
        if let Some(p) = self.pump.take() {
            let _ = p.join();
        }
        self.inbox.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the descriptor is readable now: a byte read from it (and put back).
    fn readable(inbox: &Inbox<u32>) -> bool {
        let _st = inbox.lock();
        let mut b = [0u8; 8];
        let n = (&inbox.rx).read(&mut b).unwrap_or(0);
        assert!(n <= 1, "never more than one byte in the descriptor");
        if n == 1 {
            (&inbox.tx).write_all(&b[..1]).unwrap();
        }
        n == 1
    }

    #[test]
    fn the_descriptor_is_readable_exactly_while_an_item_waits_or_the_inbox_ended() {
        let inbox = Inbox::new().unwrap();
        assert!(!readable(&inbox));
        assert!(inbox.push(1));
        assert!(inbox.push(2));
        assert!(readable(&inbox));
        assert_eq!(inbox.pop(), Ok(1));
        assert!(readable(&inbox));
        assert_eq!(inbox.pop(), Ok(2));
        assert!(!readable(&inbox));
        assert_eq!(inbox.pop(), Err(false));
        inbox.unpop(3);
        assert!(readable(&inbox));
        assert_eq!(inbox.pop(), Ok(3));
        inbox.end();
        assert!(readable(&inbox));
        assert_eq!(inbox.pop(), Err(true));
        assert!(readable(&inbox), "an ended inbox stays readable");
    }

    #[test]
    fn a_full_inbox_holds_its_pump_until_room_or_the_stop() {
        let inbox = Arc::new(Inbox::new().unwrap());
        for i in 0..INBOX_ITEMS {
            assert!(inbox.push(i));
        }
        let i2 = inbox.clone();
        let pump = std::thread::spawn(move || i2.push(usize::MAX));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(inbox.len(), INBOX_ITEMS, "the pump waits for room");
        assert_eq!(inbox.pop(), Ok(0));
        assert!(pump.join().unwrap(), "room let the pump in");
        assert_eq!(inbox.len(), INBOX_ITEMS);
        let i3 = inbox.clone();
        let pump = std::thread::spawn(move || i3.push(7));
        std::thread::sleep(Duration::from_millis(20));
        inbox.stop();
        assert!(!pump.join().unwrap(), "the stop releases a waiting pump");
    }

    #[test]
    fn data_messages_are_decoded_with_their_delay_and_others_kept_whole() {
        let mut d = Data {
            seq: 5,
            sent_us: 1_000,
        }
        .encode(DATA_HEADER_BYTES + 3);
        d[DATA_HEADER_BYTES..].copy_from_slice(b"abc");
        let m = SocketMessage::decode(d, 4_500);
        assert_eq!(
            (m.is_data, m.seq, m.sent_us, m.delay_us),
            (true, 5, 1_000, 3_500)
        );
        assert_eq!(m.payload, b"abc");
        let early = SocketMessage::decode(Data { seq: 0, sent_us: 9 }.encode(DATA_HEADER_BYTES), 2);
        assert_eq!(early.delay_us, -7);
        let accept = message::encode_accept(42);
        let m = SocketMessage::decode(accept.clone(), 1);
        assert!(!m.is_data);
        assert_eq!(m.payload, accept);
    }

    #[test]
    fn a_client_and_a_session_exchange_messages_over_loopback() {
        let key = PrivateKey::generate();
        let public = key.public_key();
        let server = SocketServer::bind("127.0.0.1:0".parse().unwrap(), key, None).unwrap();
        let client = Socket::connect(server.local_addr(), public, None, b"hi").unwrap();
        client.send(b"ping").unwrap();
        let wait = |what: &str, mut f: Box<dyn FnMut() -> bool + '_>| {
            let end = std::time::Instant::now() + Duration::from_secs(5);
            while !f() {
                assert!(std::time::Instant::now() < end, "no {what} in 5 s");
                std::thread::sleep(Duration::from_millis(2));
            }
        };
        let mut session = None;
        wait(
            "session",
            Box::new(|| {
                session = server.accept().unwrap();
                session.is_some()
            }),
        );
        let session = session.unwrap();
        assert_eq!(session.client().unwrap().1, b"hi");
        let mut got = None;
        wait(
            "message",
            Box::new(|| {
                got = session.recv().unwrap();
                got.is_some()
            }),
        );
        let got = got.unwrap();
        assert_eq!(
            (got.is_data, got.seq, &got.payload[..]),
            (true, 0, &b"ping"[..])
        );
        assert!((0..5_000_000).contains(&got.delay_us), "{got:?}");
        assert!(matches!(
            client.send(&vec![0; client.max_message() + 1]),
            Err(SocketError::TooLong { .. })
        ));
        client.close(Duration::ZERO);
        assert!(matches!(client.send(b"x"), Err(SocketError::Closed(_))));
        assert!(matches!(client.recv(), Err(SocketError::Closed(_))));
        // The session hears of the close: its recv says so once nothing is left.
        wait(
            "end",
            Box::new(|| matches!(session.recv(), Err(SocketError::Closed(_)))),
        );
    }
}
