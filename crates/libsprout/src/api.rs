//! The C functions: each checks its pointers, calls [`crate::conn::Conn`], and returns a
//! [`SproutStatus`]; none lets a panic unwind into C (`guard`).

use std::ffi::c_char;

use sprout_core::direction::Load;
use sprout_core::Instant;
use sprout_net::message::{Hello, Message, Mode, SproutVariant};
use sprout_secure::{PrivateKey, PublicKey};

use crate::boundary::{
    bytes, bytes_mut, free_boxed, get, guard, key, out, slice_mut, write_c_string, Failure,
    SproutStatus,
};
use crate::conn::{Conn, ConnError, Event, Received, State};

/// Bytes of a key, private or public (X25519).
pub const SPROUT_KEY_BYTES: usize = 32;

/// A buffer of this many bytes holds any datagram `sprout_conn_poll_transmit` hands out.
pub const SPROUT_MAX_DATAGRAM_BYTES: usize = 1472;

/// Most bytes of a greeting (`sprout_conn_new_client`).
pub const SPROUT_MAX_GREETING_BYTES: usize = 512;

/// The deadline `sprout_conn_deadline` gives when nothing is scheduled (UINT64_MAX).
pub const SPROUT_NO_DEADLINE: u64 = u64::MAX;

/// Bytes of the header `sprout_conn_send` puts before each message (a DATA message of `sprout
/// client`: type, sequence number, send time). `sprout client` and `sprout server` count it as
/// application data: a message of N bytes there is one of N - SPROUT_DATA_HEADER_BYTES here.
pub const SPROUT_DATA_HEADER_BYTES: usize = 24;

/// Bytes of a HELLO (`sprout_hello_encode`).
pub const SPROUT_HELLO_BYTES: usize = 36;

// The header's numbers are literals (cbindgen writes no other); they are the messages'.
const _: () = assert!(
    SPROUT_DATA_HEADER_BYTES == sprout_net::message::DATA_HEADER_BYTES
        && SPROUT_HELLO_BYTES == sprout_net::message::HELLO_BYTES
);

/// `SproutHello.scheme`: Sprout on the paper's rate model (to about 12 Mbit/s), the
/// configuration of a connection without a HELLO.
pub const SPROUT_SCHEME_SPROUT: u8 = 0;
/// `SproutHello.scheme`: Sprout-EWMA (a moving average of the rate, without caution).
pub const SPROUT_SCHEME_SPROUT_EWMA: u8 = 1;
/// `SproutHello.scheme`: Sprout on the wide rate model (outage to 1 Gbit/s), `sprout client`'s
/// default.
pub const SPROUT_SCHEME_SPROUT_WIDE: u8 = 2;

/// `SproutHello.direction`: the client sends data (to the server).
pub const SPROUT_DIRECTION_UP: u8 = 0;
/// `SproutHello.direction`: the server sends data (to the client).
pub const SPROUT_DIRECTION_DOWN: u8 = 1;
/// `SproutHello.direction`: both send data.
pub const SPROUT_DIRECTION_BOTH: u8 = 2;

/// `SproutHello.mode`: saturating senders.
pub const SPROUT_MODE_BULK: u8 = 0;
/// `SproutHello.mode`: paced senders at `SproutHello.rate_kbps`.
pub const SPROUT_MODE_PACED: u8 = 1;

/// What a client asks of a session, as `sprout client` asks `sprout server` (the HELLO of
/// crates/sprout-net/src/message.rs): `sprout_hello_encode` makes the greeting of
/// `sprout_conn_new_client` from it. Both ends of a session greeted with a HELLO run the Sprout
/// configuration it names (`scheme`, `confidence`); `sprout server` also reads the rest.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SproutHello {
    /// Any number naming the session; each BYE carries it back (`sprout_conn_send_bye`).
    pub session: u64,
    /// SPROUT_DIRECTION_UP, _DOWN or _BOTH: which ends send data.
    pub direction: u8,
    /// SPROUT_MODE_BULK or SPROUT_MODE_PACED.
    pub mode: u8,
    /// SPROUT_SCHEME_SPROUT, _SPROUT_EWMA or _SPROUT_WIDE: the receivers' estimator.
    pub scheme: u8,
    /// Forecast confidence of both ends, strictly between 0 and 1 (the paper's: 0.95).
    pub confidence: f64,
    /// Paced rate of application data, kbit/s, DATA headers included (above 0 when paced; 0
    /// when bulk).
    pub rate_kbps: u32,
    /// How long the data senders send, milliseconds.
    pub duration_ms: u32,
    /// Bytes of each paced DATA message, header included (0: `sprout server`'s 1000).
    pub payload_bytes: u16,
}

/// One secure Sprout connection (client side, or server side of one session): opaque, made
/// by `sprout_conn_new_client` or `sprout_conn_new_server`, freed by `sprout_conn_free`.
pub struct SproutConn {
    inner: Conn,
    /// Set while a call runs; left set by a panic (the connection is then refused).
    busy: bool,
    /// A datagram the caller's buffer was too small for, handed out next.
    pending_tx: Option<Vec<u8>>,
    /// A message the caller's buffer was too small for, read next.
    pending_rx: Option<Received>,
    tx: Vec<u8>,
}

/// Where a connection stands.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SproutState {
    /// The handshake is under way (client), or no client has come yet (server).
    #[default]
    Connecting = 0,
    /// Messages flow.
    Established = 1,
    /// The client's server fell silent: a fresh handshake is under way; messages sent
    /// meanwhile wait for it.
    Reconnecting = 2,
    /// Over: nothing more arrives or leaves but the close's datagrams.
    Closed = 3,
}

/// Something that happened to a connection (`sprout_conn_poll_event`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SproutEvent {
    /// No event (what `sprout_conn_poll_event` writes when it returns SPROUT_STATUS_DONE).
    None = 0,
    /// The session is established (again, after a reconnection).
    Connected = 1,
    /// The client's server fell silent for 15 s; a fresh handshake started.
    Reconnecting = 2,
    /// The connection is over (`sprout_conn_end_reason` says why).
    Closed = 3,
}

/// What kind of application message `sprout_conn_read` returned.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SproutMessageKind {
    /// A message sent with `sprout_conn_send` (a DATA message of `sprout client`): its
    /// sequence number, send time and payload.
    #[default]
    Data = 0,
    /// Any other application message (the ACCEPT and BYE of `sprout server`, `sprout client`
    /// and `sprout_conn_send_bye`): the whole message, sequence number and send time 0.
    Other = 1,
}

/// An application message's description (`sprout_conn_read`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SproutMessage {
    /// A DATA message or another.
    pub kind: SproutMessageKind,
    /// The sender's sequence number: 0, 1, 2, ... in the order of `sprout_conn_send`.
    pub seq: u64,
    /// The send time the sender passed to `sprout_conn_send`, microseconds on its clock.
    pub sent_us: u64,
    /// The payload's length, in bytes (when SPROUT_STATUS_BUFFER_TOO_SMALL: the capacity
    /// needed).
    pub len: usize,
}

/// A snapshot of a connection (`sprout_conn_stats`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SproutStats {
    /// Where it stands.
    pub state: SproutState,
    /// The window the peer's forecast allows now, link bytes: what may be sent so that it
    /// clears the link's queue within the delay target (100 ms). 0 before the session is up.
    pub window_bytes: u64,
    /// The sender's estimate of its bytes in the link's queue, link bytes.
    pub queue_estimate_bytes: u64,
    /// Application bytes queued by `sprout_conn_send` and not yet sent.
    pub queued_bytes: u64,
    /// Packets the peer's latest forecast expects to receive in the next 160 ms (its last
    /// cumulative count; 0 before one arrived).
    pub forecast_packets: u64,
    /// The receiver's estimate of the incoming link rate, packets per second.
    pub incoming_rate_pps: f64,
    /// Datagrams handed out by `sprout_conn_poll_transmit`, and their bytes.
    pub datagrams_sent: u64,
    /// Bytes of those datagrams.
    pub bytes_sent: u64,
    /// Datagrams fed in by `sprout_conn_recv`.
    pub datagrams_received: u64,
    /// Bytes of those datagrams.
    pub bytes_received: u64,
    /// Datagrams fed in and dropped: unauthenticated, replayed, malformed, for another session.
    pub datagrams_dropped: u64,
    /// Messages queued by `sprout_conn_send`, and the BYEs of `sprout_conn_send_bye`.
    pub messages_sent: u64,
    /// Messages returned by `sprout_conn_read`.
    pub messages_received: u64,
    /// Sessions re-established after the server fell silent (client side).
    pub reconnections: u64,
}

impl SproutConn {
    fn new(inner: Conn) -> *mut SproutConn {
        Box::into_raw(Box::new(SproutConn {
            inner,
            busy: false,
            pending_tx: None,
            pending_rx: None,
            tx: Vec::with_capacity(SPROUT_MAX_DATAGRAM_BYTES),
        }))
    }
}

/// Runs `f` on the connection at `conn`, under [`guard`]; a connection a panic left busy is
/// refused.
fn with_conn(
    conn: *mut SproutConn,
    f: impl FnOnce(&mut SproutConn) -> Result<SproutStatus, Failure>,
) -> SproutStatus {
    guard(|| {
        let c = out(conn, "conn")?;
        if c.busy {
            return Err(Failure::new(
                SproutStatus::Internal,
                "this connection is unusable after an internal error; free it",
            ));
        }
        c.busy = true;
        let r = f(c);
        c.busy = false;
        r
    })
}

fn closed(e: ConnError) -> Failure {
    match e {
        ConnError::Closed(_) => Failure::new(SproutStatus::Closed, e.to_string()),
        ConnError::TooLong { .. } => Failure::new(SproutStatus::TooLong, e.to_string()),
        ConnError::Secure(_) => Failure::invalid(e.to_string()),
    }
}

/// The library's version, a static NUL-terminated string (never freed).
/// Thread-safe.
#[no_mangle]
pub extern "C" fn sprout_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// Writes the message of the last call that failed on the calling thread into `buf`
/// (`cap` bytes, cut to fit and NUL-terminated when `cap` > 0; `buf` may be NULL when `cap`
/// is 0) and returns the message's full length in bytes (without the NUL), as `snprintf`
/// does. The message stays until another call fails on the same thread; calls that succeed
/// leave it. Thread-safe: each thread has its own.
#[no_mangle]
pub extern "C" fn sprout_last_error(buf: *mut c_char, cap: usize) -> usize {
    let mut n = 0;
    guard(|| {
        n = write_c_string(&crate::boundary::last_error(), buf, cap);
        Ok(SproutStatus::Ok)
    });
    n
}

/// Makes a fresh key pair from the operating system's random generator: writes the private
/// key into `private_key` and its public key into `public_key` (SPROUT_KEY_BYTES each,
/// owned by the caller). Keep the private key secret. Thread-safe.
#[no_mangle]
pub extern "C" fn sprout_keygen(private_key: *mut u8, public_key: *mut u8) -> SproutStatus {
    guard(|| {
        let private = bytes_mut(private_key, SPROUT_KEY_BYTES, "private_key")?;
        let public = bytes_mut(public_key, SPROUT_KEY_BYTES, "public_key")?;
        let k = PrivateKey::generate();
        private.copy_from_slice(k.as_bytes());
        public.copy_from_slice(&k.public_key().0);
        Ok(SproutStatus::Ok)
    })
}

/// Writes the public key of `private_key` (SPROUT_KEY_BYTES, read) into `public_key`
/// (SPROUT_KEY_BYTES, written). Thread-safe.
#[no_mangle]
pub extern "C" fn sprout_public_key(private_key: *const u8, public_key: *mut u8) -> SproutStatus {
    guard(|| {
        let k = PrivateKey::from_bytes(key(private_key, "private_key")?);
        let public = out(public_key.cast::<[u8; 32]>(), "public_key")?;
        *public = k.public_key().0;
        Ok(SproutStatus::Ok)
    })
}

/// Makes the client side of a connection, at `now_us`, and stores it in `*out_conn`.
///
/// `private_key` is the client's private key and `server_public_key` the server's public key
/// (SPROUT_KEY_BYTES each, read during the call only). `greeting` (`greeting_len` bytes, at
/// most SPROUT_MAX_GREETING_BYTES, may be NULL when 0; read during the call only) reaches the
/// server inside the handshake. A HELLO (`sprout_hello_encode`; `sprout server` expects one)
/// chooses the Sprout configuration of both ends: its scheme and confidence; with any other
/// greeting both run Sprout on the paper's model at confidence 0.95. The handshake starts at
/// once: call `sprout_conn_poll_transmit`. The first connection of a process with a model
/// computes its tables (about 0.1 s, then shared by every connection), here rather than when
/// the session comes up.
///
/// The connection belongs to the caller until `sprout_conn_free`. Times are microseconds on
/// one monotonic clock of the caller's choice (e.g. CLOCK_MONOTONIC), the same for every call
/// on this connection.
///
/// Thread-safety: creating connections is thread-safe. A connection is not: calls on one
/// connection must not overlap (use it from one thread, or under the caller's lock); it may
/// move between threads, and distinct connections may be used on distinct threads at once.
#[no_mangle]
pub extern "C" fn sprout_conn_new_client(
    private_key: *const u8,
    server_public_key: *const u8,
    greeting: *const u8,
    greeting_len: usize,
    now_us: u64,
    out_conn: *mut *mut SproutConn,
) -> SproutStatus {
    guard(|| {
        let slot = out(out_conn, "out_conn")?;
        let k = PrivateKey::from_bytes(key(private_key, "private_key")?);
        let server = PublicKey(key(server_public_key, "server_public_key")?);
        let greeting = bytes(greeting, greeting_len, "greeting")?;
        let c = Conn::client(k, server, greeting, Instant::from_micros(now_us)).map_err(closed)?;
        *slot = SproutConn::new(c);
        Ok(SproutStatus::Ok)
    })
}

/// Makes the server side of one session, at `now_us`, and stores it in `*out_conn`.
///
/// `private_key` is the server's private key (SPROUT_KEY_BYTES, read during the call only).
/// Only the client whose public key is `client_public_key` (SPROUT_KEY_BYTES, read during the
/// call only) is let in, or any client if it is NULL. The first client whose handshake
/// completes gets the session; if it redials later (a fresh handshake with its keys), the new
/// session replaces the old one. A client whose greeting is a HELLO (`sprout client`, or
/// `sprout_hello_encode`) gets the Sprout configuration it names, and an ACCEPT (3 copies, as
/// `sprout server` answers; the client reads them as SPROUT_MESSAGE_KIND_OTHER messages); any
/// other greeting, Sprout on the paper's model at confidence 0.95. The first server side of a
/// process computes the tables of the paper's and the wide model (about 0.2 s, then shared by
/// every connection), so that no session waits for them while its client's data comes. Feed it the client's datagrams with `sprout_conn_recv`;
/// where they come from is the caller's business (answer to where the last one came from).
///
/// Ownership, time and thread-safety as for `sprout_conn_new_client`.
#[no_mangle]
pub extern "C" fn sprout_conn_new_server(
    private_key: *const u8,
    client_public_key: *const u8,
    now_us: u64,
    out_conn: *mut *mut SproutConn,
) -> SproutStatus {
    guard(|| {
        let slot = out(out_conn, "out_conn")?;
        let k = PrivateKey::from_bytes(key(private_key, "private_key")?);
        let client = if client_public_key.is_null() {
            None
        } else {
            Some(PublicKey(key(client_public_key, "client_public_key")?))
        };
        *slot = SproutConn::new(Conn::server(k, client, Instant::from_micros(now_us)));
        Ok(SproutStatus::Ok)
    })
}

/// Frees a connection (NULL is ignored). It sends nothing: call `sprout_conn_close` and send
/// what `sprout_conn_poll_transmit` hands out first to tell the peer. `conn` must not be used
/// afterwards, nor freed twice.
#[no_mangle]
pub extern "C" fn sprout_conn_free(conn: *mut SproutConn) {
    free_boxed(conn);
}

/// Feeds in a datagram that arrived at `now_us`: `data`, `len` bytes, read during the call
/// only. Anything unauthenticated, replayed or malformed is dropped and counted
/// (`SproutStats.datagrams_dropped`), never an error. Then call `sprout_conn_poll_transmit`,
/// `sprout_conn_read` and `sprout_conn_poll_event`.
#[no_mangle]
pub extern "C" fn sprout_conn_recv(
    conn: *mut SproutConn,
    now_us: u64,
    data: *const u8,
    len: usize,
) -> SproutStatus {
    with_conn(conn, |c| {
        let d = bytes(data, len, "data")?;
        c.inner.recv(Instant::from_micros(now_us), d);
        Ok(SproutStatus::Ok)
    })
}

/// Runs the timers due by `now_us`: call it when the time `sprout_conn_deadline` gave has
/// come (calling it earlier or more often is harmless). It may end the connection or start a
/// reconnection (see `sprout_conn_poll_event`).
#[no_mangle]
pub extern "C" fn sprout_conn_on_timeout(conn: *mut SproutConn, now_us: u64) -> SproutStatus {
    with_conn(conn, |c| {
        c.inner.on_timeout(Instant::from_micros(now_us));
        Ok(SproutStatus::Ok)
    })
}

/// The next datagram to send at `now_us` to the peer: written into `buf` (`cap` bytes, owned
/// by the caller; SPROUT_MAX_DATAGRAM_BYTES always suffice) with its length in `*len`;
/// SPROUT_STATUS_OK. SPROUT_STATUS_DONE (and `*len` 0) when nothing is to be sent now: call it
/// until then after every `sprout_conn_recv`, `sprout_conn_on_timeout` and `sprout_conn_send`.
/// SPROUT_STATUS_BUFFER_TOO_SMALL when `cap` is below the datagram's length (in `*len`): the
/// datagram is kept for the next call. What the Sprout window allows leaves now; a datagram
/// handed out must be sent at once (pacing is Sprout's).
#[no_mangle]
pub extern "C" fn sprout_conn_poll_transmit(
    conn: *mut SproutConn,
    now_us: u64,
    buf: *mut u8,
    cap: usize,
    len: *mut usize,
) -> SproutStatus {
    with_conn(conn, |c| {
        let len = out(len, "len")?;
        *len = 0;
        let dst = bytes_mut(buf, cap, "buf")?;
        let d = match c.pending_tx.take() {
            Some(d) => d,
            None => {
                let mut tx = std::mem::take(&mut c.tx);
                if !c.inner.poll_transmit(Instant::from_micros(now_us), &mut tx) {
                    c.tx = tx;
                    return Ok(SproutStatus::Done);
                }
                tx
            }
        };
        *len = d.len();
        if d.len() > dst.len() {
            c.pending_tx = Some(d);
            return Err(Failure::new(
                SproutStatus::BufferTooSmall,
                format!("a datagram of {} bytes does not fit {cap} bytes", *len),
            ));
        }
        dst[..d.len()].copy_from_slice(&d);
        c.tx = d;
        Ok(SproutStatus::Ok)
    })
}

/// Writes into `*deadline_us` when the connection next needs `sprout_conn_on_timeout` or may
/// have a datagram to send (microseconds on the caller's clock; possibly already past), or
/// SPROUT_NO_DEADLINE if nothing is scheduled (a closed connection with nothing left to send).
/// Sleep (poll) until then or until a datagram arrives.
#[no_mangle]
pub extern "C" fn sprout_conn_deadline(
    conn: *mut SproutConn,
    deadline_us: *mut u64,
) -> SproutStatus {
    with_conn(conn, |c| {
        let d = out(deadline_us, "deadline_us")?;
        *d = match (&c.pending_tx, c.inner.deadline()) {
            (Some(_), _) => 0,
            (None, t) => t.map_or(SPROUT_NO_DEADLINE, |t| t.as_micros()),
        };
        Ok(SproutStatus::Ok)
    })
}

/// Queues an application message: `data`, `len` bytes (at most `sprout_conn_max_message`;
/// copied, so the caller keeps its buffer), with send time `sent_us`, which the receiver gets
/// back as `SproutMessage.sent_us` (pass the clock the receiver reads to measure delay: the
/// monotonic clock on one host, CLOCK_REALTIME in microseconds across hosts, as `sprout
/// client` does). It travels as a DATA message of `sprout client`, its header
/// (SPROUT_DATA_HEADER_BYTES: a sequence number and the send time) before the payload. It
/// leaves when the window allows (`sprout_conn_poll_transmit`); messages sent before the
/// session is up wait for it. Datagrams may be lost: a message arrives once or never.
/// SPROUT_STATUS_TOO_LONG, SPROUT_STATUS_CLOSED: not queued.
#[no_mangle]
pub extern "C" fn sprout_conn_send(
    conn: *mut SproutConn,
    sent_us: u64,
    data: *const u8,
    len: usize,
) -> SproutStatus {
    with_conn(conn, |c| {
        let d = bytes(data, len, "data")?;
        c.inner.send(sent_us, d).map_err(closed)?;
        Ok(SproutStatus::Ok)
    })
}

/// Queues the end of this side's data as `sprout client` and `sprout server` say it: a BYE
/// (3 copies, as they send it) with the session of the HELLO (0 without one), the number of
/// messages `sprout_conn_send` queued and their bytes (SPROUT_DATA_HEADER_BYTES each
/// included). `sprout server` ends a session it serves when the client's BYE comes (the peer
/// reads it as a SPROUT_MESSAGE_KIND_OTHER message). SPROUT_STATUS_CLOSED: not queued.
#[no_mangle]
pub extern "C" fn sprout_conn_send_bye(conn: *mut SproutConn) -> SproutStatus {
    with_conn(conn, |c| {
        c.inner.send_bye().map_err(closed)?;
        Ok(SproutStatus::Ok)
    })
}

/// Writes the HELLO `*hello` (read during the call only) into `buf` (`cap` bytes, owned by the
/// caller; SPROUT_HELLO_BYTES suffice), its length into `*len`: the greeting to pass to
/// `sprout_conn_new_client`. SPROUT_STATUS_INVALID_ARGUMENT when a field is out of its range
/// (an unknown scheme, direction or mode, a confidence not strictly between 0 and 1, a paced
/// rate of 0); SPROUT_STATUS_BUFFER_TOO_SMALL when `cap` is below SPROUT_HELLO_BYTES.
/// Thread-safe.
#[no_mangle]
pub extern "C" fn sprout_hello_encode(
    hello: *const SproutHello,
    buf: *mut u8,
    cap: usize,
    len: *mut usize,
) -> SproutStatus {
    guard(|| {
        let len = out(len, "len")?;
        *len = 0;
        let h = hello_of(get(hello, "hello")?)?.encode();
        let dst = bytes_mut(buf, cap, "buf")?;
        *len = h.len();
        if dst.len() < h.len() {
            return Err(Failure::new(
                SproutStatus::BufferTooSmall,
                format!("a HELLO of {} bytes does not fit {cap} bytes", h.len()),
            ));
        }
        dst[..h.len()].copy_from_slice(&h);
        Ok(SproutStatus::Ok)
    })
}

/// The HELLO of `h`, checked as `sprout server` checks it.
fn hello_of(h: &SproutHello) -> Result<Hello, Failure> {
    let bad = |what: &str, v: u8| Failure::invalid(format!("SproutHello.{what} {v} is unknown"));
    let hello = Hello {
        session: h.session,
        direction: match h.direction {
            SPROUT_DIRECTION_UP => Load::Up,
            SPROUT_DIRECTION_DOWN => Load::Down,
            SPROUT_DIRECTION_BOTH => Load::Both,
            v => return Err(bad("direction", v)),
        },
        mode: match h.mode {
            SPROUT_MODE_BULK => Mode::Bulk,
            SPROUT_MODE_PACED => Mode::Paced,
            v => return Err(bad("mode", v)),
        },
        scheme: match h.scheme {
            SPROUT_SCHEME_SPROUT => SproutVariant::Sprout,
            SPROUT_SCHEME_SPROUT_EWMA => SproutVariant::SproutEwma,
            SPROUT_SCHEME_SPROUT_WIDE => SproutVariant::SproutWide,
            v => return Err(bad("scheme", v)),
        },
        confidence: h.confidence,
        rate_kbps: h.rate_kbps,
        duration_ms: h.duration_ms,
        payload_bytes: h.payload_bytes,
    };
    // The decoder's checks are the server's: what it refuses is refused here.
    match Message::decode(&hello.encode()) {
        Ok(Message::Hello(back)) => Ok(back),
        Ok(_) => Err(Failure::invalid("not a HELLO")),
        Err(e) => Err(Failure::invalid(format!("SproutHello: {e}"))),
    }
}

/// Largest message `sprout_conn_send` takes, in bytes (0 if `conn` is NULL).
#[no_mangle]
pub extern "C" fn sprout_conn_max_message(conn: *mut SproutConn) -> usize {
    let mut n = 0;
    with_conn(conn, |c| {
        n = c.inner.max_message();
        Ok(SproutStatus::Ok)
    });
    n
}

/// The next received application message: its payload copied into `buf` (`cap` bytes,
/// owned by the caller; `sprout_conn_max_message` always suffice for a DATA message) and its
/// description into `*message`; SPROUT_STATUS_OK. SPROUT_STATUS_DONE when none is waiting.
/// SPROUT_STATUS_BUFFER_TOO_SMALL when `cap` is too small (`message->len` says how large it
/// must be): the message is kept for the next call.
#[no_mangle]
pub extern "C" fn sprout_conn_read(
    conn: *mut SproutConn,
    message: *mut SproutMessage,
    buf: *mut u8,
    cap: usize,
) -> SproutStatus {
    with_conn(conn, |c| {
        let m = out(message, "message")?;
        let dst = bytes_mut(buf, cap, "buf")?;
        let Some(r) = c.pending_rx.take().or_else(|| c.inner.recv_message()) else {
            m.len = 0;
            return Ok(SproutStatus::Done);
        };
        *m = SproutMessage {
            kind: if r.is_data {
                SproutMessageKind::Data
            } else {
                SproutMessageKind::Other
            },
            seq: r.seq,
            sent_us: r.sent_us,
            len: r.payload.len(),
        };
        if r.payload.len() > dst.len() {
            let need = r.payload.len();
            c.pending_rx = Some(r);
            return Err(Failure::new(
                SproutStatus::BufferTooSmall,
                format!("a message of {need} bytes does not fit {cap} bytes"),
            ));
        }
        dst[..r.payload.len()].copy_from_slice(&r.payload);
        Ok(SproutStatus::Ok)
    })
}

/// The next event, written into `*event`: SPROUT_STATUS_OK, or SPROUT_STATUS_DONE (and
/// SPROUT_EVENT_NONE) when there is none. Events wait until polled (the oldest are dropped
/// beyond 64).
#[no_mangle]
pub extern "C" fn sprout_conn_poll_event(
    conn: *mut SproutConn,
    event: *mut SproutEvent,
) -> SproutStatus {
    with_conn(conn, |c| {
        let e = out(event, "event")?;
        let (status, value) = match c.inner.poll_event() {
            None => (SproutStatus::Done, SproutEvent::None),
            Some(Event::Connected) => (SproutStatus::Ok, SproutEvent::Connected),
            Some(Event::Reconnecting) => (SproutStatus::Ok, SproutEvent::Reconnecting),
            Some(Event::Closed) => (SproutStatus::Ok, SproutEvent::Closed),
        };
        *e = value;
        Ok(status)
    })
}

/// Writes a snapshot of the connection at `now_us` into `*stats` (owned by the caller).
#[no_mangle]
pub extern "C" fn sprout_conn_stats(
    conn: *mut SproutConn,
    now_us: u64,
    stats: *mut SproutStats,
) -> SproutStatus {
    with_conn(conn, |c| {
        let s = out(stats, "stats")?;
        let (window_bytes, queue_estimate_bytes) = c.inner.window(Instant::from_micros(now_us));
        let (queued, rate) = c.inner.queue_and_rate();
        let k = c.inner.counters();
        *s = SproutStats {
            state: match c.inner.state() {
                State::Connecting => SproutState::Connecting,
                State::Established => SproutState::Established,
                State::Reconnecting => SproutState::Reconnecting,
                State::Closed => SproutState::Closed,
            },
            window_bytes,
            queue_estimate_bytes,
            queued_bytes: queued as u64,
            forecast_packets: c.inner.forecast().last().copied().unwrap_or(0) as u64,
            incoming_rate_pps: rate,
            datagrams_sent: k.datagrams_sent,
            bytes_sent: k.bytes_sent,
            datagrams_received: k.datagrams_received,
            bytes_received: k.bytes_received,
            datagrams_dropped: k.datagrams_dropped,
            messages_sent: k.messages_sent,
            messages_received: k.messages_received,
            reconnections: k.reconnections,
        };
        Ok(SproutStatus::Ok)
    })
}

/// The peer's latest forecast: the cumulative packets it expects to receive by each tick
/// (20 ms) ahead, written into `counts` (`cap` entries, owned by the caller; 8 suffice with
/// the default model), their number into `*len` (0 before a forecast arrived).
/// SPROUT_STATUS_BUFFER_TOO_SMALL when `cap` is below `*len`.
#[no_mangle]
pub extern "C" fn sprout_conn_forecast(
    conn: *mut SproutConn,
    counts: *mut u32,
    cap: usize,
    len: *mut usize,
) -> SproutStatus {
    with_conn(conn, |c| {
        let len = out(len, "len")?;
        let f = c.inner.forecast();
        *len = f.len();
        if cap < f.len() {
            return Err(Failure::new(
                SproutStatus::BufferTooSmall,
                format!("a forecast of {} ticks does not fit {cap}", f.len()),
            ));
        }
        slice_mut(counts, cap, "counts")?[..f.len()].copy_from_slice(f);
        Ok(SproutStatus::Ok)
    })
}

/// Closes the connection at `now_us`: the session's close (a few copies) is queued for
/// `sprout_conn_poll_transmit` if a session is up; send them, then `sprout_conn_free`. A
/// SPROUT_EVENT_CLOSED follows. Closing a closed connection does nothing.
#[no_mangle]
pub extern "C" fn sprout_conn_close(conn: *mut SproutConn, now_us: u64) -> SproutStatus {
    with_conn(conn, |c| {
        c.inner.close(Instant::from_micros(now_us));
        Ok(SproutStatus::Ok)
    })
}

/// Why the connection ended: written into `buf` (`cap` bytes, cut to fit, NUL-terminated
/// when `cap` > 0), returning its full length in bytes as `snprintf` does; 0 (and an empty
/// string) while it has not ended or if `conn` is NULL.
#[no_mangle]
pub extern "C" fn sprout_conn_end_reason(
    conn: *mut SproutConn,
    buf: *mut c_char,
    cap: usize,
) -> usize {
    let mut n = 0;
    with_conn(conn, |c| {
        n = write_c_string(c.inner.end_reason().unwrap_or(""), buf, cap);
        Ok(SproutStatus::Ok)
    });
    n
}

/// Server side: the client's public key (written into `public_key`, SPROUT_KEY_BYTES) and
/// the greeting it sent with its handshake (into `greeting`, `cap` bytes, its length in
/// `*len`); SPROUT_STATUS_OK. SPROUT_STATUS_DONE when no client has come yet, or on a client
/// side. SPROUT_STATUS_BUFFER_TOO_SMALL when `cap` is below the greeting's length.
#[no_mangle]
pub extern "C" fn sprout_conn_peer(
    conn: *mut SproutConn,
    public_key: *mut u8,
    greeting: *mut u8,
    cap: usize,
    len: *mut usize,
) -> SproutStatus {
    with_conn(conn, |c| {
        let len = out(len, "len")?;
        let k = out(public_key.cast::<[u8; 32]>(), "public_key")?;
        let dst = bytes_mut(greeting, cap, "greeting")?;
        *len = 0;
        let Some((g, peer)) = c.inner.peer() else {
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
