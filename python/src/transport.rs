//! The sans-IO cores of `sprout.transport` (the asyncio layer is Python, in
//! `sprout/transport.py`): `_TransportClient` wraps libsprout's [`Conn`] (the client side of a
//! secure Sprout connection), `_TransportListener` libsprout's [`Listener`] (the server side of
//! many sessions on one socket). Both are fed datagrams and the time (microseconds on the
//! caller's monotonic clock: the event loop's) and hand back datagrams to send, the next
//! deadline and messages; neither does I/O or blocks. Keys are 32 raw bytes here (the Python
//! layer takes base64 too); HELLO and the other messages of `sprout client`'s protocol are
//! sprout-net's ([`sprout_net::message`]).

use std::net::{IpAddr, SocketAddr};

use pyo3::exceptions::{PyConnectionError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use sprout::conn::{Conn, ConnError, Counters, Event, Received, State};
use sprout::listener::{Listener, ListenerError, ListenerOptions};
use sprout_core::direction::Load;
use sprout_core::{Duration, Instant, SproutVariant};
use sprout_net::message::{Hello, Message, Mode};
use sprout_secure::{PrivateKey, PublicKey};

/// Most datagrams one `transmit` call hands back (the rest wait for the next call).
const MAX_BURST: usize = 4096;

fn key32(bytes: &[u8], what: &str) -> PyResult<[u8; 32]> {
    bytes.try_into().map_err(|_| {
        PyValueError::new_err(format!(
            "{what} must be 32 bytes (or 44 characters of base64), got {} bytes",
            bytes.len()
        ))
    })
}

fn at(us: u64) -> Instant {
    Instant::from_micros(us)
}

fn conn_err(e: ConnError) -> PyErr {
    match e {
        ConnError::Closed(_) => PyConnectionError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

fn listener_err(e: ListenerError) -> PyErr {
    match e {
        ListenerError::TooLong { .. } => PyValueError::new_err(e.to_string()),
        _ => PyConnectionError::new_err(e.to_string()),
    }
}

fn state_name(s: State) -> &'static str {
    match s {
        State::Connecting => "connecting",
        State::Established => "established",
        State::Reconnecting => "reconnecting",
        State::Closed => "closed",
    }
}

/// A received message as `(payload, seq, sent_us, is_data)`.
type PyMessage<'py> = (Bound<'py, PyBytes>, u64, u64, bool);

fn message<'py>(py: Python<'py>, m: Received) -> PyMessage<'py> {
    (PyBytes::new(py, &m.payload), m.seq, m.sent_us, m.is_data)
}

/// The counters and figures of a connection as a dict.
#[allow(clippy::too_many_arguments)]
fn stats_dict<'py>(
    py: Python<'py>,
    state: State,
    end: Option<&str>,
    c: Counters,
    window: (u64, u64),
    queue_and_rate: (usize, f64),
    max_message: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("state", state_name(state))?;
    d.set_item("end_reason", end)?;
    d.set_item("datagrams_sent", c.datagrams_sent)?;
    d.set_item("bytes_sent", c.bytes_sent)?;
    d.set_item("datagrams_received", c.datagrams_received)?;
    d.set_item("bytes_received", c.bytes_received)?;
    d.set_item("datagrams_dropped", c.datagrams_dropped)?;
    d.set_item("messages_sent", c.messages_sent)?;
    d.set_item("messages_received", c.messages_received)?;
    d.set_item("reconnections", c.reconnections)?;
    d.set_item("window_bytes", window.0)?;
    d.set_item("queue_estimate_bytes", window.1)?;
    d.set_item("queued_bytes", queue_and_rate.0)?;
    d.set_item("incoming_rate_pps", queue_and_rate.1)?;
    d.set_item("max_message", max_message)?;
    Ok(d)
}

/// The client side of one secure Sprout connection, sans-IO (libsprout's `Conn`).
/// Used from one thread (the event loop's): pyo3 refuses calls from another.
#[pyclass(module = "sprout._sprout", name = "_TransportClient", unsendable)]
pub struct TransportClient {
    conn: Conn,
    buf: Vec<u8>,
}

#[pymethods]
impl TransportClient {
    #[new]
    fn new(key: &[u8], server_key: &[u8], greeting: &[u8], now_us: u64) -> PyResult<Self> {
        let key = PrivateKey::from_bytes(key32(key, "key")?);
        let server = PublicKey(key32(server_key, "server_key")?);
        let conn = Conn::client(key, server, greeting, at(now_us)).map_err(conn_err)?;
        Ok(TransportClient {
            conn,
            buf: Vec::with_capacity(2048),
        })
    }

    /// Takes in a datagram received at `now_us`.
    fn feed(&mut self, now_us: u64, datagram: &[u8]) {
        self.conn.recv(at(now_us), datagram);
    }

    /// Runs the timers due by `now_us`.
    fn on_timeout(&mut self, now_us: u64) {
        self.conn.on_timeout(at(now_us));
    }

    /// The datagrams to send now.
    fn transmit<'py>(&mut self, py: Python<'py>, now_us: u64) -> Vec<Bound<'py, PyBytes>> {
        let mut out = Vec::new();
        while out.len() < MAX_BURST && self.conn.poll_transmit(at(now_us), &mut self.buf) {
            out.push(PyBytes::new(py, &self.buf));
        }
        out
    }

    /// When `on_timeout` is next needed (µs), or None.
    fn deadline(&mut self) -> Option<u64> {
        self.conn.deadline().map(|t| t.as_micros())
    }

    /// Queues a DATA message.
    fn send(&mut self, sent_us: u64, payload: &[u8]) -> PyResult<()> {
        self.conn.send(sent_us, payload).map_err(conn_err)
    }

    /// The next received message as (payload, seq, sent_us, is_data), or None.
    fn recv<'py>(&mut self, py: Python<'py>) -> Option<PyMessage<'py>> {
        self.conn.recv_message().map(|m| message(py, m))
    }

    /// Queues BYE (a few copies): the end of this side's data, as `sprout client` says it.
    fn send_bye(&mut self) -> PyResult<()> {
        self.conn.send_bye().map_err(conn_err)
    }

    /// Events since the last call: "connected", "reconnecting", "closed".
    fn events(&mut self) -> Vec<&'static str> {
        let mut v = Vec::new();
        while let Some(e) = self.conn.poll_event() {
            v.push(match e {
                Event::Connected => "connected",
                Event::Reconnecting => "reconnecting",
                Event::Closed => "closed",
            });
        }
        v
    }

    fn state(&self) -> &'static str {
        state_name(self.conn.state())
    }

    fn end_reason(&self) -> Option<String> {
        self.conn.end_reason().map(str::to_string)
    }

    fn max_message(&self) -> usize {
        self.conn.max_message()
    }

    /// The peer's latest forecast (cumulative packets by each 20 ms tick ahead).
    fn forecast(&self) -> Vec<u32> {
        self.conn.forecast().to_vec()
    }

    fn stats<'py>(&mut self, py: Python<'py>, now_us: u64) -> PyResult<Bound<'py, PyDict>> {
        let window = self.conn.window(at(now_us));
        stats_dict(
            py,
            self.conn.state(),
            self.conn.end_reason(),
            self.conn.counters(),
            window,
            self.conn.queue_and_rate(),
            self.conn.max_message(),
        )
    }

    /// Closes the connection (its close datagrams come from `transmit`).
    fn close(&mut self, now_us: u64) {
        self.conn.close(at(now_us));
    }
}

fn parse_addr(host: &str, port: u16) -> PyResult<SocketAddr> {
    // An IPv6 host may carry its scope ("fe80::1%eth0"); the scope is not kept.
    let ip: IpAddr = host
        .split('%')
        .next()
        .unwrap_or(host)
        .parse()
        .map_err(|_| PyValueError::new_err(format!("not an IP address: {host:?}")))?;
    Ok(SocketAddr::new(ip, port))
}

/// The server side of many secure Sprout sessions on one socket, sans-IO (libsprout's
/// `Listener`). Sessions are numbered by the security layer's session id.
#[pyclass(module = "sprout._sprout", name = "_TransportListener", unsendable)]
pub struct TransportListener {
    inner: Listener,
    buf: Vec<u8>,
}

#[pymethods]
impl TransportListener {
    #[new]
    #[pyo3(signature = (key, allowed, now_us, max_sessions, max_sessions_per_source,
        max_sessions_per_key, idle_timeout_s, accept_backlog))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        key: &[u8],
        allowed: Option<Vec<Vec<u8>>>,
        now_us: u64,
        max_sessions: usize,
        max_sessions_per_source: usize,
        max_sessions_per_key: usize,
        idle_timeout_s: f64,
        accept_backlog: usize,
    ) -> PyResult<Self> {
        let key = PrivateKey::from_bytes(key32(key, "key")?);
        let allowed = match allowed {
            Some(keys) => Some(
                keys.iter()
                    .map(|k| key32(k, "an allowed key").map(PublicKey))
                    .collect::<PyResult<Vec<_>>>()?,
            ),
            None => None,
        };
        if !(idle_timeout_s.is_finite() && idle_timeout_s > 0.0 && idle_timeout_s <= 86_400.0) {
            return Err(PyValueError::new_err(format!(
                "idle_timeout must be a positive number of seconds (at most a day), got {idle_timeout_s}"
            )));
        }
        if max_sessions == 0 || max_sessions_per_source == 0 || max_sessions_per_key == 0 {
            return Err(PyValueError::new_err(
                "max_sessions, max_sessions_per_source and max_sessions_per_key must be at least 1",
            ));
        }
        let options = ListenerOptions {
            max_sessions,
            max_sessions_per_source,
            max_sessions_per_key,
            idle_timeout: Duration::from_micros((idle_timeout_s * 1e6) as u64),
            accept_backlog,
            ..ListenerOptions::default()
        };
        Ok(TransportListener {
            inner: Listener::new(key, allowed, options, at(now_us)),
            buf: Vec::with_capacity(2048),
        })
    }

    fn public_key<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.public_key().0)
    }

    /// Takes in a datagram from (host, port) received at `now_us`.
    fn feed(&mut self, now_us: u64, host: &str, port: u16, datagram: &[u8]) -> PyResult<()> {
        let from = parse_addr(host, port)?;
        self.inner.recv(at(now_us), from, datagram);
        Ok(())
    }

    fn on_timeout(&mut self, now_us: u64) {
        self.inner.on_timeout(at(now_us));
    }

    /// The datagrams to send now, each as (datagram, host, port).
    fn transmit<'py>(
        &mut self,
        py: Python<'py>,
        now_us: u64,
    ) -> Vec<(Bound<'py, PyBytes>, String, u16)> {
        let mut out = Vec::new();
        while out.len() < MAX_BURST {
            let Some(to) = self.inner.poll_transmit(at(now_us), &mut self.buf) else {
                break;
            };
            out.push((PyBytes::new(py, &self.buf), to.ip().to_string(), to.port()));
        }
        out
    }

    fn deadline(&mut self) -> Option<u64> {
        self.inner.deadline().map(|t| t.as_micros())
    }

    /// The next new session as (id, client public key, greeting, host, port), or None. The
    /// sessions wait in the listener (its backlog is bounded) until taken here.
    #[allow(clippy::type_complexity)]
    fn accept<'py>(
        &mut self,
        py: Python<'py>,
    ) -> Option<(u32, Bound<'py, PyBytes>, Bound<'py, PyBytes>, String, u16)> {
        let id = self.inner.accept()?;
        let (key, greeting, addr) = self.inner.peer(id).ok()?;
        let addr = addr.unwrap_or(SocketAddr::from(([0, 0, 0, 0], 0)));
        Some((
            id,
            PyBytes::new(py, &key.0),
            PyBytes::new(py, greeting),
            addr.ip().to_string(),
            addr.port(),
        ))
    }

    /// Sessions that received something or ended since the last call.
    fn ready(&mut self) -> Vec<u32> {
        let mut v = Vec::new();
        while let Some(id) = self.inner.poll_ready() {
            v.push(id);
        }
        v
    }

    fn send(&mut self, id: u32, sent_us: u64, payload: &[u8]) -> PyResult<()> {
        self.inner.send(id, sent_us, payload).map_err(listener_err)
    }

    fn send_raw(&mut self, id: u32, message: &[u8]) -> PyResult<()> {
        self.inner.send_raw(id, message).map_err(listener_err)
    }

    fn recv<'py>(&mut self, py: Python<'py>, id: u32) -> PyResult<Option<PyMessage<'py>>> {
        Ok(self
            .inner
            .recv_message(id)
            .map_err(listener_err)?
            .map(|m| message(py, m)))
    }

    fn state(&self, id: u32) -> PyResult<&'static str> {
        self.inner.state(id).map(state_name).map_err(listener_err)
    }

    fn end_reason(&self, id: u32) -> PyResult<Option<String>> {
        Ok(self
            .inner
            .end_reason(id)
            .map_err(listener_err)?
            .map(str::to_string))
    }

    fn forecast(&self, id: u32) -> PyResult<Vec<u32>> {
        Ok(self.inner.forecast(id).map_err(listener_err)?.to_vec())
    }

    fn stats<'py>(
        &mut self,
        py: Python<'py>,
        id: u32,
        now_us: u64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let window = self.inner.window(id, at(now_us)).map_err(listener_err)?;
        let l = &self.inner;
        stats_dict(
            py,
            l.state(id).map_err(listener_err)?,
            l.end_reason(id).map_err(listener_err)?,
            l.counters(id).map_err(listener_err)?,
            window,
            l.queue_and_rate(id).map_err(listener_err)?,
            l.max_message(id).map_err(listener_err)?,
        )
    }

    fn close(&mut self, id: u32, now_us: u64) -> PyResult<()> {
        self.inner.close(id, at(now_us)).map_err(listener_err)
    }

    /// Forgets a session (closing it first if it is live).
    fn release(&mut self, id: u32, now_us: u64) {
        self.inner.release(id, at(now_us));
    }

    /// The listener's counters and the security layer's drops by reason.
    fn server_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.inner.listener_counters();
        let s = self.inner.secure_stats();
        let d = PyDict::new(py);
        d.set_item("sessions", self.inner.session_count())?;
        d.set_item("sessions_accepted", c.sessions_accepted)?;
        d.set_item("sessions_refused", c.sessions_refused)?;
        d.set_item("datagrams_received", c.datagrams_received)?;
        d.set_item("datagrams_sent", c.datagrams_sent)?;
        d.set_item("datagrams_dropped", c.datagrams_dropped)?;
        let drops = PyDict::new(py);
        for (name, n) in s.drops_by_name() {
            if n > 0 {
                drops.set_item(name, n)?;
            }
        }
        d.set_item("drops", drops)?;
        Ok(d)
    }
}

/// A fresh private key (32 random bytes from the operating system).
#[pyfunction]
fn _transport_generate_key<'py>(py: Python<'py>) -> Bound<'py, PyBytes> {
    PyBytes::new(py, PrivateKey::generate().as_bytes())
}

/// The public key of a 32-byte private key.
#[pyfunction]
fn _transport_public_key<'py>(py: Python<'py>, key: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    let k = PrivateKey::from_bytes(key32(key, "key")?);
    Ok(PyBytes::new(py, &k.public_key().0))
}

/// A HELLO of `sprout client`'s protocol asking for the paper's Sprout (the model the
/// transport's client runs) with confidence 0.95.
#[pyfunction]
fn _transport_hello<'py>(
    py: Python<'py>,
    direction: &str,
    rate_kbps: u32,
    duration_ms: u32,
    payload_bytes: u16,
    session: u64,
) -> PyResult<Bound<'py, PyBytes>> {
    let direction = match direction {
        "up" => Load::Up,
        "down" => Load::Down,
        "both" => Load::Both,
        d => {
            return Err(PyValueError::new_err(format!(
                "direction must be \"up\", \"down\" or \"both\", got {d:?}"
            )))
        }
    };
    let h = Hello {
        session,
        direction,
        mode: if rate_kbps == 0 {
            Mode::Bulk
        } else {
            Mode::Paced
        },
        scheme: SproutVariant::Sprout,
        confidence: 0.95,
        rate_kbps,
        duration_ms,
        payload_bytes,
    };
    Ok(PyBytes::new(py, &h.encode()))
}

/// What a message of `sprout client`'s protocol says, as a dict with its "type" ("hello",
/// "accept", "data", "bye", "filler"), or None if it is none of them.
#[pyfunction]
fn _transport_decode<'py>(py: Python<'py>, message: &[u8]) -> PyResult<Option<Bound<'py, PyDict>>> {
    let Ok(m) = Message::decode(message) else {
        return Ok(None);
    };
    let d = PyDict::new(py);
    match m {
        Message::Filler => d.set_item("type", "filler")?,
        Message::Hello(h) => {
            d.set_item("type", "hello")?;
            d.set_item("session", h.session)?;
            d.set_item("direction", h.direction.as_str())?;
            d.set_item("scheme", h.scheme.as_str())?;
            d.set_item("confidence", h.confidence)?;
            d.set_item("rate_kbps", h.rate_kbps)?;
            d.set_item("duration_ms", h.duration_ms)?;
            d.set_item("payload_bytes", h.payload_bytes)?;
        }
        Message::Accept(session) => {
            d.set_item("type", "accept")?;
            d.set_item("session", session)?;
        }
        Message::Data(x) => {
            d.set_item("type", "data")?;
            d.set_item("seq", x.seq)?;
            d.set_item("sent_us", x.sent_us)?;
        }
        Message::Bye(b) => {
            d.set_item("type", "bye")?;
            d.set_item("session", b.session)?;
            d.set_item("data_sent", b.data_sent)?;
            d.set_item("app_bytes_sent", b.app_bytes_sent)?;
        }
    }
    Ok(Some(d))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TransportClient>()?;
    m.add_class::<TransportListener>()?;
    m.add_function(wrap_pyfunction!(_transport_generate_key, m)?)?;
    m.add_function(wrap_pyfunction!(_transport_public_key, m)?)?;
    m.add_function(wrap_pyfunction!(_transport_hello, m)?)?;
    m.add_function(wrap_pyfunction!(_transport_decode, m)?)?;
    Ok(())
}
