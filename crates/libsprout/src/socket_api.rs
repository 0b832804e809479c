//! The socket layer's C functions (`sprout_socket_*`): each checks its pointers, calls
//! [`crate::socket`], and returns a [`SproutStatus`]; none lets a panic unwind into C.
//!
//! A handle ([`SproutSocket`], [`SproutSocketServer`]) owns its UDP socket and the threads of
//! sprout-net underneath; the application polls one descriptor per handle and makes
//! non-blocking calls. Unlike a `SproutConn`, a handle may be used from several threads at
//! once (it locks what it changes); only its free must come after every other call on it.

use std::ffi::{c_char, c_int};
use std::time::Duration;

use sprout_net::NetError;
use sprout_secure::{PrivateKey, PublicKey};

use crate::api::{SproutMessageKind, SproutState, SproutStats, SPROUT_MAX_GREETING_BYTES};
use crate::boundary::{
    bytes, bytes_mut, c_str, free_boxed, guard, key, out, shared, slice_mut, write_c_string,
    Failure, SproutStatus,
};
use crate::socket::{resolve, Socket, SocketError, SocketServer};

/// One secure Sprout connection over a UDP socket of its own (`sprout_socket_connect`), or one
/// session of a server (`sprout_socket_accept`): opaque, freed by `sprout_socket_free`.
pub struct SproutSocket {
    inner: Socket,
}

/// A Sprout server: many sessions on one UDP socket (`sprout_socket_bind`): opaque, freed by
/// `sprout_socket_server_free`.
pub struct SproutSocketServer {
    inner: SocketServer,
}

/// A message's description (`sprout_socket_recv`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SproutSocketMessage {
    /// A message sent with `sprout_socket_send` (or `sprout_conn_send`, or `sprout client`'s
    /// DATA), or another message of the peer (`sprout server`'s ACCEPT and BYE: the whole
    /// message, `seq`, `sent_us` and `delay_us` 0).
    pub kind: SproutMessageKind,
    /// The sender's sequence number: 0, 1, 2, ... in the order of `sprout_socket_send`.
    pub seq: u64,
    /// When it was sent: microseconds since the Unix epoch on the sender's CLOCK_REALTIME
    /// (`sprout_socket_send` stamps it).
    pub sent_us: u64,
    /// Its delay, microseconds: when it arrived (this host's CLOCK_REALTIME) less `sent_us`.
    /// Exact on one host; across hosts it carries the difference of their clocks (negative if
    /// the sender's is ahead).
    pub delay_us: i64,
    /// The payload's length, in bytes (when SPROUT_STATUS_BUFFER_TOO_SMALL: the capacity
    /// needed).
    pub len: usize,
}

fn failure(e: SocketError) -> Failure {
    let status = match &e {
        SocketError::Address { .. } => SproutStatus::InvalidArgument,
        SocketError::Net(NetError::Io { .. }) | SocketError::Io { .. } => SproutStatus::Io,
        SocketError::Net(NetError::Stopped) | SocketError::Closed(_) => SproutStatus::Closed,
        SocketError::Net(_) => SproutStatus::InvalidArgument,
        SocketError::TooLong { .. } => SproutStatus::TooLong,
    };
    Failure::new(status, e.to_string())
}

fn socket<'a>(s: *const SproutSocket) -> Result<&'a Socket, Failure> {
    shared(s, "socket").map(|s| &s.inner)
}

fn server<'a>(s: *const SproutSocketServer) -> Result<&'a SocketServer, Failure> {
    shared(s, "server").map(|s| &s.inner)
}

/// Connects to the Sprout server at `addr` (a NUL-terminated string, read during the call:
/// `HOST:PORT`, HOST an IPv4 address, `[IPv6]` or a name, its first address taken) from a UDP
/// socket of its own on a port the system chooses, and stores the handle in `*out_socket`.
///
/// `server_public_key` is the server's public key and `private_key` the client's
/// (SPROUT_KEY_BYTES each, read during the call only); NULL `private_key`: a fresh key pair
/// (for a server that lets any client in). `greeting` (`greeting_len` bytes, at most
/// SPROUT_MAX_GREETING_BYTES, may be NULL when 0) reaches the server inside the handshake; a
/// HELLO (`sprout_hello_encode`; `sprout server` expects one) chooses the Sprout configuration
/// of both ends, as for `sprout_conn_new_client`. The call returns at once; the handshake goes
/// on in the background, and what `sprout_socket_send` queues meanwhile leaves once it is done
/// (`SproutStats.state` says where it stands). A server that never answers ends the connection
/// after the handshake's timeout (`sprout_socket_recv` then returns SPROUT_STATUS_CLOSED).
///
/// SPROUT_STATUS_INVALID_ARGUMENT: an address that does not resolve, a greeting too long;
/// SPROUT_STATUS_IO: the socket or a thread could not be made.
///
/// The handle belongs to the caller until `sprout_socket_free`. Threads: the library runs two
/// threads per connection (sprout-net's driver, which keeps Sprout's 20 ms ticks and sends what
/// the window allows whatever the application is doing, and one that hands received messages
/// to `sprout_socket_fd`); calls on a handle may come from any threads, at once.
#[no_mangle]
pub extern "C" fn sprout_socket_connect(
    addr: *const c_char,
    server_public_key: *const u8,
    private_key: *const u8,
    greeting: *const u8,
    greeting_len: usize,
    out_socket: *mut *mut SproutSocket,
) -> SproutStatus {
    guard(|| {
        let slot = out(out_socket, "out_socket")?;
        *slot = std::ptr::null_mut();
        let remote = resolve(c_str(addr, "addr")?).map_err(failure)?;
        let server_key = PublicKey(key(server_public_key, "server_public_key")?);
        let private = if private_key.is_null() {
            None
        } else {
            Some(PrivateKey::from_bytes(key(private_key, "private_key")?))
        };
        if greeting_len > SPROUT_MAX_GREETING_BYTES {
            return Err(Failure::invalid(format!(
                "a greeting of {greeting_len} bytes is longer than \
                 {SPROUT_MAX_GREETING_BYTES}"
            )));
        }
        let greeting = bytes(greeting, greeting_len, "greeting")?;
        let s = Socket::connect(remote, server_key, private, greeting).map_err(failure)?;
        *slot = Box::into_raw(Box::new(SproutSocket { inner: s }));
        Ok(SproutStatus::Ok)
    })
}

/// Binds a Sprout server to `addr` (a NUL-terminated string, read during the call: as for
/// `sprout_socket_connect`; port 0: the system chooses, see `sprout_socket_server_local_addr`)
/// with the server's `private_key` (SPROUT_KEY_BYTES, read during the call only), and stores
/// the handle in `*out_server`. Only the client whose public key is `client_public_key`
/// (SPROUT_KEY_BYTES, read during the call only) is let in, or any client if it is NULL.
///
/// Each client whose handshake completes becomes a session for `sprout_socket_accept`. A
/// session runs the Sprout configuration its client's greeting names if that is a HELLO (and
/// the client gets an ACCEPT, 3 copies, as `sprout server` answers `sprout client`), else Sprout
/// on the paper's model at confidence 0.95.
///
/// SPROUT_STATUS_INVALID_ARGUMENT: an address that does not resolve; SPROUT_STATUS_IO: the
/// address is taken, or a thread could not be made.
///
/// The handle belongs to the caller until `sprout_socket_server_free`. Threads: the library
/// runs two threads per server (sprout-net's driver for all its sessions, and one that hands
/// new sessions to `sprout_socket_server_fd`), and one more per session it accepted; calls on
/// a handle may come from any threads, at once.
#[no_mangle]
pub extern "C" fn sprout_socket_bind(
    addr: *const c_char,
    private_key: *const u8,
    client_public_key: *const u8,
    out_server: *mut *mut SproutSocketServer,
) -> SproutStatus {
    guard(|| {
        let slot = out(out_server, "out_server")?;
        *slot = std::ptr::null_mut();
        let local = resolve(c_str(addr, "addr")?).map_err(failure)?;
        let k = PrivateKey::from_bytes(key(private_key, "private_key")?);
        let allowed = if client_public_key.is_null() {
            None
        } else {
            Some(PublicKey(key(client_public_key, "client_public_key")?))
        };
        let s = SocketServer::bind(local, k, allowed).map_err(failure)?;
        *slot = Box::into_raw(Box::new(SproutSocketServer { inner: s }));
        Ok(SproutStatus::Ok)
    })
}

/// The next session of `server`, stored in `*out_socket` (the caller's until
/// `sprout_socket_free`); SPROUT_STATUS_OK. Never blocks: SPROUT_STATUS_DONE (and NULL) when
/// none is waiting; SPROUT_STATUS_CLOSED when the server has stopped.
#[no_mangle]
pub extern "C" fn sprout_socket_accept(
    server: *const SproutSocketServer,
    out_socket: *mut *mut SproutSocket,
) -> SproutStatus {
    guard(|| {
        let slot = out(out_socket, "out_socket")?;
        *slot = std::ptr::null_mut();
        match self::server(server)?.accept().map_err(failure)? {
            Some(s) => {
                *slot = Box::into_raw(Box::new(SproutSocket { inner: s }));
                Ok(SproutStatus::Ok)
            }
            None => Ok(SproutStatus::Done),
        }
    })
}

/// The descriptor to poll for readability (POLLIN, EPOLLIN) before `sprout_socket_accept`: it
/// is readable exactly while a session waits or the server has stopped, i.e. while
/// `sprout_socket_accept` would not return SPROUT_STATUS_DONE. It belongs to the server: never
/// read, write or close it; it is closed by `sprout_socket_server_free`. -1 if `server` is NULL.
#[no_mangle]
pub extern "C" fn sprout_socket_server_fd(server: *const SproutSocketServer) -> c_int {
    let mut fd = -1;
    guard(|| {
        fd = self::server(server)?.fd();
        Ok(SproutStatus::Ok)
    });
    fd
}

/// The server's local address ("IP:PORT", with the port the system chose) written into `buf`
/// (`cap` bytes, cut to fit and NUL-terminated when `cap` > 0), returning its full length as
/// `snprintf` does; 0 (and an empty string) if `server` is NULL.
#[no_mangle]
pub extern "C" fn sprout_socket_server_local_addr(
    server: *const SproutSocketServer,
    buf: *mut c_char,
    cap: usize,
) -> usize {
    let mut n = 0;
    guard(|| {
        let addr = self::server(server).map(|s| s.local_addr().to_string());
        n = write_c_string(addr.as_deref().unwrap_or(""), buf, cap);
        addr.map(|_| SproutStatus::Ok)
    });
    n
}

/// Stops the server and frees it (NULL is ignored): its UDP socket and threads are gone when
/// this returns, and so are the sessions it had not handed out. The sessions it accepted end
/// (their peers are told) but their handles stay valid until their own `sprout_socket_free`,
/// which may come before or after this. `server` must not be used afterwards, nor freed twice.
#[no_mangle]
pub extern "C" fn sprout_socket_server_free(server: *mut SproutSocketServer) {
    free_boxed(server);
}

/// The descriptor to poll for readability (POLLIN, EPOLLIN) before `sprout_socket_recv`: it is
/// readable exactly while a message waits or the connection has ended, i.e. while
/// `sprout_socket_recv` would not return SPROUT_STATUS_DONE. It is not the UDP socket (that one
/// is sprout-net's driver's): never read, write or close it; it is closed by
/// `sprout_socket_free`. -1 if `socket` is NULL.
#[no_mangle]
pub extern "C" fn sprout_socket_fd(socket: *const SproutSocket) -> c_int {
    let mut fd = -1;
    guard(|| {
        fd = self::socket(socket)?.fd();
        Ok(SproutStatus::Ok)
    });
    fd
}

/// The local address of the connection's UDP socket ("IP:PORT") written into `buf` (`cap`
/// bytes, cut to fit and NUL-terminated when `cap` > 0), returning its full length as
/// `snprintf` does; 0 (and an empty string) if `socket` is NULL.
#[no_mangle]
pub extern "C" fn sprout_socket_local_addr(
    socket: *const SproutSocket,
    buf: *mut c_char,
    cap: usize,
) -> usize {
    let mut n = 0;
    guard(|| {
        let addr = self::socket(socket).map(|s| s.local_addr().to_string());
        n = write_c_string(addr.as_deref().unwrap_or(""), buf, cap);
        addr.map(|_| SproutStatus::Ok)
    });
    n
}

/// Largest message `sprout_socket_send` takes, in bytes (0 if `socket` is NULL).
#[no_mangle]
pub extern "C" fn sprout_socket_max_message(socket: *const SproutSocket) -> usize {
    let mut n = 0;
    guard(|| {
        n = self::socket(socket)?.max_message();
        Ok(SproutStatus::Ok)
    });
    n
}

/// Queues a message: `data`, `len` bytes (at most `sprout_socket_max_message`; copied, so the
/// caller keeps its buffer), stamped with the time now (CLOCK_REALTIME, microseconds since the
/// Unix epoch), which the receiver gets back as `sent_us` and measures `delay_us` against. It
/// travels as a DATA message of `sprout client` (SPROUT_DATA_HEADER_BYTES of header before the
/// payload) and leaves when Sprout's window allows; messages sent before the session is up
/// wait for it. Datagrams may be lost: a message arrives once or never. Never blocks.
/// SPROUT_STATUS_TOO_LONG, SPROUT_STATUS_CLOSED: not queued.
#[no_mangle]
pub extern "C" fn sprout_socket_send(
    socket: *const SproutSocket,
    data: *const u8,
    len: usize,
) -> SproutStatus {
    guard(|| {
        let s = self::socket(socket)?;
        s.send(bytes(data, len, "data")?).map_err(failure)?;
        Ok(SproutStatus::Ok)
    })
}

/// Queues the end of this side's data as `sprout client` says it: a BYE (3 copies) with the
/// session of the HELLO (0 without one) and the number of messages `sprout_socket_send`
/// queued and their bytes (SPROUT_DATA_HEADER_BYTES each included). `sprout server` ends the
/// session it serves when the client's BYE comes. SPROUT_STATUS_CLOSED: not queued.
#[no_mangle]
pub extern "C" fn sprout_socket_send_bye(socket: *const SproutSocket) -> SproutStatus {
    guard(|| {
        self::socket(socket)?.send_bye().map_err(failure)?;
        Ok(SproutStatus::Ok)
    })
}

/// The next received message: its payload copied into `buf` (`cap` bytes, owned by the
/// caller; `sprout_socket_max_message` always suffice for a DATA message) and its description
/// into `*message`; SPROUT_STATUS_OK. Never blocks: SPROUT_STATUS_DONE when none is waiting
/// (poll `sprout_socket_fd`); SPROUT_STATUS_CLOSED once the connection has ended and every
/// message it received has been read (`sprout_socket_end_reason` says why).
/// SPROUT_STATUS_BUFFER_TOO_SMALL when `cap` is too small (`message->len` says how large it
/// must be): the message is kept for the next call. At most 1024 messages wait here; beyond,
/// sprout-net keeps what its bounded queue holds and drops the rest.
#[no_mangle]
pub extern "C" fn sprout_socket_recv(
    socket: *const SproutSocket,
    message: *mut SproutSocketMessage,
    buf: *mut u8,
    cap: usize,
) -> SproutStatus {
    guard(|| {
        let s = self::socket(socket)?;
        let m = out(message, "message")?;
        let dst = bytes_mut(buf, cap, "buf")?;
        *m = SproutSocketMessage::default();
        let Some(r) = s.recv().map_err(failure)? else {
            return Ok(SproutStatus::Done);
        };
        *m = SproutSocketMessage {
            kind: if r.is_data {
                SproutMessageKind::Data
            } else {
                SproutMessageKind::Other
            },
            seq: r.seq,
            sent_us: r.sent_us,
            delay_us: r.delay_us,
            len: r.payload.len(),
        };
        if r.payload.len() > dst.len() {
            let need = r.payload.len();
            s.unrecv(r);
            return Err(Failure::new(
                SproutStatus::BufferTooSmall,
                format!("a message of {need} bytes does not fit {cap} bytes"),
            ));
        }
        dst[..r.payload.len()].copy_from_slice(&r.payload);
        Ok(SproutStatus::Ok)
    })
}

/// Writes a snapshot of the connection into `*stats` (owned by the caller). The datagram
/// counters are the UDP socket's (the handshake, heartbeats and closes included);
/// `datagrams_dropped` counts what arrived and was dropped (unauthenticated, replayed,
/// malformed, from elsewhere); `messages_sent` counts `sprout_socket_send` and the BYEs of
/// `sprout_socket_send_bye`, `messages_received` the messages `sprout_socket_recv` returned.
#[no_mangle]
pub extern "C" fn sprout_socket_stats(
    socket: *const SproutSocket,
    stats: *mut SproutStats,
) -> SproutStatus {
    guard(|| {
        let (e, messages_sent, messages_received) = self::socket(socket)?.stats();
        let st = out(stats, "stats")?;
        let secure_drops = e.secure.as_ref().map_or(0, |s| s.dropped_total());
        *st = SproutStats {
            state: match e.state {
                sprout_net::EndpointState::Connecting => SproutState::Connecting,
                sprout_net::EndpointState::Established => SproutState::Established,
                sprout_net::EndpointState::Reconnecting => SproutState::Reconnecting,
                sprout_net::EndpointState::Ended => SproutState::Closed,
            },
            window_bytes: e.window_bytes,
            queue_estimate_bytes: e.queue_estimate_bytes,
            queued_bytes: e.queued_bytes as u64,
            forecast_packets: e.peer_forecast_packets,
            incoming_rate_pps: e.incoming_rate_pps,
            datagrams_sent: e.datagrams_sent,
            bytes_sent: e.bytes_sent,
            datagrams_received: e.datagrams_received,
            bytes_received: e.bytes_received,
            datagrams_dropped: e.malformed + e.other_sources + e.rejected.total() + secure_drops,
            messages_sent,
            messages_received,
            reconnections: e.reconnections,
        };
        Ok(SproutStatus::Ok)
    })
}

/// The peer's latest forecast: the cumulative packets it expects to receive by each tick
/// (20 ms) ahead, written into `counts` (`cap` entries, owned by the caller; 8 suffice with
/// the default model), their number into `*len` (0 before a forecast arrived).
/// SPROUT_STATUS_BUFFER_TOO_SMALL when `cap` is below `*len`.
#[no_mangle]
pub extern "C" fn sprout_socket_forecast(
    socket: *const SproutSocket,
    counts: *mut u32,
    cap: usize,
    len: *mut usize,
) -> SproutStatus {
    guard(|| {
        let s = self::socket(socket)?;
        let len = out(len, "len")?;
        let f = s.stats().0.peer_forecast;
        *len = f.len();
        if cap < f.len() {
            return Err(Failure::new(
                SproutStatus::BufferTooSmall,
                format!("a forecast of {} ticks does not fit {cap}", f.len()),
            ));
        }
        slice_mut(counts, cap, "counts")?[..f.len()].copy_from_slice(&f);
        Ok(SproutStatus::Ok)
    })
}

/// A session's client: its public key (written into `public_key`, SPROUT_KEY_BYTES) and the
/// greeting it sent with its handshake (into `greeting`, `cap` bytes, its length in `*len`);
/// SPROUT_STATUS_OK. SPROUT_STATUS_DONE on a client's handle. SPROUT_STATUS_BUFFER_TOO_SMALL
/// when `cap` is below the greeting's length (the key is written).
#[no_mangle]
pub extern "C" fn sprout_socket_peer(
    socket: *const SproutSocket,
    public_key: *mut u8,
    greeting: *mut u8,
    cap: usize,
    len: *mut usize,
) -> SproutStatus {
    guard(|| {
        let s = self::socket(socket)?;
        let len = out(len, "len")?;
        let k = out(public_key.cast::<[u8; 32]>(), "public_key")?;
        let dst = bytes_mut(greeting, cap, "greeting")?;
        *len = 0;
        let Some((peer, g)) = s.client() else {
            return Ok(SproutStatus::Done);
        };
        *len = g.len();
        *k = peer.0;
        if g.len() > dst.len() {
            return Err(Failure::new(
                SproutStatus::BufferTooSmall,
                format!("a greeting of {} bytes does not fit {cap} bytes", g.len()),
            ));
        }
        dst[..g.len()].copy_from_slice(g);
        Ok(SproutStatus::Ok)
    })
}

/// Why the connection ended: written into `buf` (`cap` bytes, cut to fit, NUL-terminated when
/// `cap` > 0), returning its full length in bytes as `snprintf` does; 0 (and an empty string)
/// while it has not ended or if `socket` is NULL.
#[no_mangle]
pub extern "C" fn sprout_socket_end_reason(
    socket: *const SproutSocket,
    buf: *mut c_char,
    cap: usize,
) -> usize {
    let mut n = 0;
    guard(|| {
        let why = self::socket(socket).map(|s| s.end_reason().unwrap_or_default());
        n = write_c_string(why.as_deref().unwrap_or(""), buf, cap);
        why.map(|_| SproutStatus::Ok)
    });
    n
}

/// Ends the connection: waits at most `linger_ms` milliseconds (0: not at all) for the
/// messages queued to leave (blocking the calling thread), then tells the peer and stops the
/// connection's driver; what is still queued is dropped. Messages received before stay
/// readable with `sprout_socket_recv`, then SPROUT_STATUS_CLOSED. Closing a closed connection
/// does nothing. Free the handle with `sprout_socket_free`.
#[no_mangle]
pub extern "C" fn sprout_socket_close(socket: *const SproutSocket, linger_ms: u32) -> SproutStatus {
    guard(|| {
        self::socket(socket)?.close(Duration::from_millis(u64::from(linger_ms)));
        Ok(SproutStatus::Ok)
    })
}

/// Closes the connection (as `sprout_socket_close` with no linger) and frees it (NULL is
/// ignored): its UDP socket (a client's), descriptor and threads are gone when this returns.
/// `socket` must not be used afterwards, nor freed twice, nor freed while another thread is
/// in a call on it.
#[no_mangle]
pub extern "C" fn sprout_socket_free(socket: *mut SproutSocket) {
    free_boxed(socket);
}

// What the descriptor's type is in C: the handles hand out a RawFd as an int.
const _: () = assert!(std::mem::size_of::<std::os::fd::RawFd>() == std::mem::size_of::<c_int>());
