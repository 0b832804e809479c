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
//!
//! Dead peers and redials (WireGuard's rule, sprout-secure's [`sprout_secure::Redial`]): see
//! [`crate::secure_client`], the sans-IO part of the driver that runs them.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token};

use crate::conn::{ConnShared, Link};
use crate::secure_client::SecureClient;

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

/// Asks the kernel for a client socket's receive and send buffers of `bytes` each (the
/// endpoint asks for 4 MiB, as the server does; the kernel caps them at `net.core.rmem_max` /
/// `wmem_max`); a refusal leaves its defaults. With the default of about
/// 200 KiB a download at 100 Mbit/s over loopback lost about half its datagrams in the
/// client's socket (the server's sends arrive in bursts of up to 256); with 4 MiB, none.
#[cfg(unix)]
pub(crate) fn ask_socket_buffers(socket: &impl std::os::fd::AsFd, bytes: usize) {
    let sock = socket2::SockRef::from(socket);
    let _ = sock.set_recv_buffer_size(bytes);
    let _ = sock.set_send_buffer_size(bytes);
}

/// Elsewhere the kernel's defaults stay.
#[cfg(not(unix))]
pub(crate) fn ask_socket_buffers<S>(_socket: &S, _bytes: usize) {}

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

// The kernel's limits of one segmented send: `UDP_MAX_SEGMENTS` datagrams, and the largest
// UDP payload over IPv4 in bytes. Segmented sends are Linux's (sprout-os); elsewhere, and under
// CI's `--cfg sprout_portable_check`, they are never enabled (`Gather::new`) and these limits
// only bound a gather that never grows.
#[cfg(all(target_os = "linux", not(sprout_portable_check)))]
pub(crate) use sprout_os::udp_gso::{MAX_BYTES as GSO_MAX_BYTES, MAX_SEGMENTS as GSO_MAX_SEGMENTS};
/// The largest UDP payload over IPv4, bytes (as sprout-os's `udp_gso::MAX_BYTES`).
#[cfg(not(all(target_os = "linux", not(sprout_portable_check))))]
pub(crate) const GSO_MAX_BYTES: usize = 65_507;
/// Datagrams of one segmented send (as sprout-os's `udp_gso::MAX_SEGMENTS`).
#[cfg(not(all(target_os = "linux", not(sprout_portable_check))))]
pub(crate) const GSO_MAX_SEGMENTS: usize = 64;

/// Sealed datagrams to one destination gathered for one segmented send (UDP GSO, Linux):
/// equal-sized ones, the last possibly shorter. A bulk transfer's datagrams are nearly all
/// full-size, so one system call carries up to [`GSO_MAX_SEGMENTS`] of them through the
/// stack at once.
pub(crate) struct Gather {
    /// Whether segmented sends are used: the kernel has them, and none has failed as
    /// unsupported (then every datagram goes alone).
    pub enabled: bool,
    /// The gathered datagrams, one after the other.
    pub buf: Vec<u8>,
    /// Length of each but the last, bytes.
    pub segment: usize,
    /// How many are gathered.
    pub count: usize,
}

impl Gather {
    /// Gathering for `socket`, if its kernel segments UDP sends.
    pub(crate) fn new(socket: &UdpSocket) -> Gather {
        #[cfg(all(target_os = "linux", not(sprout_portable_check)))]
        let enabled = sprout_os::udp_gso::supported(socket);
        #[cfg(not(all(target_os = "linux", not(sprout_portable_check))))]
        let enabled = {
            let _ = socket;
            false
        };
        Gather {
            enabled,
            buf: Vec::new(),
            segment: 0,
            count: 0,
        }
    }

    /// Whether datagram `d` can join those gathered (not after a shorter one, within the
    /// kernel's limits).
    pub(crate) fn fits(&self, d: &[u8]) -> bool {
        self.count > 0
            && d.len() <= self.segment
            && self.buf.len() == self.count * self.segment
            && self.count < GSO_MAX_SEGMENTS
            && self.buf.len() + d.len() <= GSO_MAX_BYTES
    }

    /// Adds `d` (the caller sent what was gathered first unless it [`Gather::fits`]).
    pub(crate) fn push(&mut self, d: &[u8]) {
        if self.count == 0 {
            self.segment = d.len();
        }
        self.buf.extend_from_slice(d);
        self.count += 1;
    }

    /// The gathered datagrams and their segment length, leaving the gather empty (its buffer
    /// goes back with [`Gather::recycle`]).
    pub(crate) fn take(&mut self) -> (Vec<u8>, usize) {
        self.count = 0;
        (std::mem::take(&mut self.buf), self.segment)
    }

    /// Gives back the buffer [`Gather::take`] lent, to be reused.
    pub(crate) fn recycle(&mut self, mut buf: Vec<u8>) {
        buf.clear();
        self.buf = buf;
    }
}

/// The datagrams of `buf`, cut into `segment`-byte pieces (the last one what remains).
pub(crate) fn segments(buf: &[u8], segment: usize) -> std::slice::Chunks<'_, u8> {
    buf.chunks(segment.max(1))
}

/// What became of a segmented send (without Linux's segmented sends, always `Unsupported`).
#[cfg_attr(
    not(all(target_os = "linux", not(sprout_portable_check))),
    allow(dead_code)
)]
pub(crate) enum SentSegments {
    /// All sent.
    Ok,
    /// The socket's buffer is full: nothing sent, keep them and retry when it is writable.
    Blocked,
    /// Refused: the datagrams are lost.
    Failed,
    /// The kernel or the device cannot segment: nothing sent; send them one by one.
    Unsupported,
}

/// Sends `buf`, datagrams of `segment` bytes (the last one what remains), to `to` in one
/// segmented send.
pub(crate) fn send_gso(
    socket: &UdpSocket,
    buf: &[u8],
    segment: usize,
    to: SocketAddr,
) -> SentSegments {
    #[cfg(all(target_os = "linux", not(sprout_portable_check)))]
    {
        use sprout_os::udp_gso::{send, GsoError};
        let Ok(seg) = u16::try_from(segment) else {
            return SentSegments::Unsupported;
        };
        loop {
            return match send(socket, buf, seg, to) {
                Ok(_) => SentSegments::Ok,
                Err(GsoError::WouldBlock) => SentSegments::Blocked,
                Err(GsoError::Interrupted) => continue,
                Err(GsoError::Unsupported(_)) => SentSegments::Unsupported,
                Err(GsoError::Io(_)) => SentSegments::Failed,
            };
        }
    }
    #[cfg(not(all(target_os = "linux", not(sprout_portable_check))))]
    {
        let _ = (socket, buf, segment, to);
        SentSegments::Unsupported
    }
}

/// Runs a client's driver until the application closes the endpoint, the first handshake
/// fails, or the poller fails.
pub(crate) fn run_client(
    shared: Arc<ConnShared>,
    poll: Poll,
    socket: UdpSocket,
    secure: SecureClient,
    remote: SocketAddr,
) {
    ClientDriver {
        gather: Gather::new(&socket),
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
    /// The security layer and its redial machine.
    secure: SecureClient,
    remote: SocketAddr,
    events: Events,
    rx: Vec<u8>,
    tx: Vec<u8>,
    out: Vec<u8>,
    plaintext: Vec<u8>,
    /// Sealed datagrams waiting for one segmented send.
    gather: Gather,
    /// Sealed datagrams the socket refused with "would block", and the length of each but the
    /// last (as [`Gather`] holds them); sent before anything else.
    blocked: Option<(Vec<u8>, usize)>,
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
                self.send_close(shared.clock.now());
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

    /// The application closed the endpoint: the session's close goes to the server,
    /// [`sprout_secure::wire::CLOSE_COPIES`] copies, best-effort (not counted).
    fn send_close(&mut self, now: sprout_core::Instant) {
        if self.secure.close(now, &mut self.out) {
            for _ in 0..sprout_secure::wire::CLOSE_COPIES {
                let _ = send_to(&self.socket, &self.out, self.remote);
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
                    self.secure
                        .handle(st, now, &self.rx[..n], &mut self.plaintext);
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

    /// Runs the security layer's and the connection's timers, and the dead-peer and redial
    /// ones; false if the session has ended.
    fn run_timers(&mut self, st: &mut Link, now: sprout_core::Instant) -> bool {
        let timers = self.secure.run_timers(st, now);
        if timers.redialled {
            // The old session's datagrams are stale.
            self.blocked = None;
        }
        !timers.ended
    }

    /// Sends what is blocked, the security layer's own datagrams, then the connection's
    /// (gathered for segmented sends where the kernel has them).
    fn write(&mut self, st: &mut Link, now: sprout_core::Instant) {
        if let Some((d, segment)) = self.blocked.take() {
            self.send_segments(st, &d, segment);
        }
        while self.blocked.is_none() && self.secure.secure.poll_transmit(now, &mut self.out) {
            let d = std::mem::take(&mut self.out);
            self.send_segments(st, &d, d.len());
            self.out = d;
        }
        let mut sent = 0;
        while self.blocked.is_none() && sent < SEND_BATCH && self.secure.secure.is_established() {
            if st.next_transmit(now, &mut self.tx).is_none() {
                break;
            }
            sent += 1;
            match self.secure.seal(now, &self.tx, &mut self.out) {
                Ok(()) => {
                    let d = std::mem::take(&mut self.out);
                    self.gather(st, &d);
                    self.out = d;
                }
                Err(_) => st.counters.seal_errors += 1,
            }
        }
        self.flush(st);
        if sent == SEND_BATCH {
            // More may be ready: come straight back after reading the socket.
            self.more_input = true;
        }
        st.peer = Some(self.remote);
        st.secure = Some(self.secure.secure.stats());
    }

    /// Adds sealed datagram `d` to those gathered, sending them first if it cannot join
    /// them; sends it at once where segmented sends are off.
    fn gather(&mut self, st: &mut Link, d: &[u8]) {
        if !self.gather.enabled {
            self.send_segments(st, d, d.len());
            return;
        }
        if self.gather.count > 0 && !self.gather.fits(d) {
            self.flush(st);
        }
        self.gather.push(d);
    }

    /// Sends the gathered datagrams.
    fn flush(&mut self, st: &mut Link) {
        if self.gather.count == 0 {
            return;
        }
        let (buf, segment) = self.gather.take();
        if self.blocked.is_some() {
            // Only one blocked batch is held: these are lost.
            st.counters.send_errors += segments(&buf, segment).len() as u64;
        } else {
            self.send_segments(st, &buf, segment);
        }
        self.gather.recycle(buf);
    }

    /// Sends `buf`, datagrams of `segment` bytes (the last one what remains), in one
    /// segmented send if there are several and they are on, else one by one; counts them.
    /// Blocked: kept whole in `blocked`. Segmentation refused: turned off, and the datagrams
    /// go one by one.
    fn send_segments(&mut self, st: &mut Link, buf: &[u8], segment: usize) {
        let (socket, remote) = (&self.socket, self.remote);
        if self.gather.enabled && buf.len() > segment {
            match send_gso(socket, buf, segment, remote) {
                SentSegments::Ok => {
                    for d in segments(buf, segment) {
                        st.count_sent(d.len());
                    }
                    return;
                }
                SentSegments::Blocked => {
                    self.blocked = Some((buf.to_vec(), segment));
                    return;
                }
                SentSegments::Failed => {
                    st.counters.send_errors += segments(buf, segment).len() as u64;
                    self.socket_error = true;
                    return;
                }
                SentSegments::Unsupported => self.gather.enabled = false,
            }
        }
        let (blocked, socket_error) = (&mut self.blocked, &mut self.socket_error);
        let mut one = None;
        for d in segments(buf, segment) {
            if blocked.is_some() || one.is_some() {
                // Only one blocked datagram is kept: the rest are lost.
                st.counters.send_errors += 1;
                continue;
            }
            client_send(socket, st, d, remote, &mut one, socket_error);
        }
        if let Some(d) = one {
            let len = d.len();
            *blocked = Some((d, len));
        }
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

#[cfg(all(test, target_os = "linux", not(sprout_portable_check)))]
mod tests {
    use super::*;

    fn gather(lens: &[usize]) -> Gather {
        let mut g = Gather {
            enabled: true,
            buf: Vec::new(),
            segment: 0,
            count: 0,
        };
        for &n in lens {
            g.push(&vec![0u8; n]);
        }
        g
    }

    #[test]
    fn equal_datagrams_gather_and_a_shorter_one_ends_the_run() {
        let g = gather(&[1472, 1472]);
        assert!(g.fits(&[0; 1472]));
        assert!(g.fits(&[0; 100]));
        assert!(!g.fits(&[0; 1473]), "a longer one starts a new send");
        let g = gather(&[1472, 100]);
        assert!(!g.fits(&[0; 100]), "nothing follows a shorter one");
        assert!(
            !gather(&[]).fits(&[0; 10]),
            "an empty gather takes its first by itself"
        );
        let pieces: Vec<usize> = segments(&g.buf, g.segment).map(|d| d.len()).collect();
        assert_eq!(pieces, [1472, 100]);
    }

    #[test]
    fn the_kernels_limits_hold() {
        let g = gather(&[100; GSO_MAX_SEGMENTS]);
        assert!(!g.fits(&[0; 100]), "64 segments at most");
        let g = gather(&[30_000, 30_000]);
        assert!(!g.fits(&[0; 30_000]), "65,507 bytes at most");
        assert!(g.fits(&[0; 5_000]));
    }
}
