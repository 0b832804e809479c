//! `sprout saturator server` as a call ([`server`]): waits for a client and runs the recording
//! it asks for, one at a time; with `out`, keeps its own copy of each uplink recording as
//! `<name>.up` and `<name>.up.json` (never replacing an earlier one: a name in use gets the
//! session id).
//!
//! Shared fairly: one client holds the server at most [`ServerOptions::max_recording`]. There
//! the recording is cut (ended "limit") and the client told ([`Refusal::Limit`]); after it,
//! the client has at most that long again (at most 60 s) to fetch its recording. Meanwhile
//! another client's proven hello is refused with when to try again ([`Refusal::Busy`]).
//!
//! Nothing larger than a hello goes to an address before it has proven that it receives what
//! is sent there: a hello without a valid cookie ([`crate::cookie`]) gets a 32-byte challenge
//! and nothing else, and hellos under 1200 bytes get nothing. During a recording, datagrams
//! count only from the session's proven addresses (its data path and its feedback path);
//! anything from elsewhere (acks, FINs, result requests, data, hellos without a cookie) is
//! counted as foreign and changes nothing.

use sprout_core::direction::{Direction, Load};
use std::io::{self, Write};

use serde::Serialize;
use sprout_os::signals::SignalWatcher;

use std::net::SocketAddr;

use sprout_core::time::{Duration, Instant};

use crate::cookie::{CookieJar, SECRET_BYTES};
use crate::runtime::error::SaturatorError;
use crate::runtime::options::ServerOptions;
use crate::runtime::server_session::Session;
use crate::runtime::socket::{
    monotonic_now, random_session, realtime_offset_ns, wait, Received, Sock, BATCH,
    RECV_BUFFER_BYTES,
};
use crate::sender::SenderStats;
use crate::summary::Summary;
use crate::wire::{
    decode, encode, DecodeError, Hello, Message, Refusal, FLAG_FEEDBACK_PATH, MAX_HIGH_RTT_MS,
    MAX_WINDOW, MIN_HELLO_BYTES,
};

/// How long the recording is kept for a client that ended it but does not ask for it.
const KEEP_RESULT: Duration = Duration::from_secs(60);
/// Warnings about datagrams of another wire version are printed at most this often.
const VERSION_WARNING: Duration = Duration::from_secs(10);

/// The server's summary of one recording (a JSON line with `json`).
#[derive(Clone, Debug, Serialize)]
pub struct ServerSummary {
    /// "summary".
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// "server".
    pub role: &'static str,
    /// The session id, 16 hex digits.
    pub session: String,
    /// Directions recorded.
    pub mode: Load,
    /// The client's address (data path, else feedback path, else "unknown").
    pub client: String,
    /// The client's address on the feedback path, if one.
    pub feedback: Option<String>,
    /// How the recording ended: "fin" (the client ended it), "idle" (the client went
    /// silent: the recording is cut where it was last heard), "limit" (it reached the
    /// server's bound, `--max-recording`: cut there, the client told so), "interrupted" (a
    /// stop signal).
    pub ended: &'static str,
    /// With "idle": when the client was last heard, s since the start of the recording.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub silent_since_s: Option<f64>,
    /// With "limit": the server's bound on a recording's length (`--max-recording`), s; the
    /// recording is cut there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_s: Option<f64>,
    /// Whether the client confirmed it received the uplink's recording.
    pub delivered: bool,
    /// Datagrams from addresses that are not the session's proven paths, during the
    /// session: ignored, and not counted in the recording's summary.
    pub foreign: u64,
    /// The uplink's recording.
    pub up: Option<Summary>,
    /// The downlink's sender.
    pub down_sender: Option<SenderStats>,
    /// Files written.
    pub files: Vec<String>,
}

/// What answers hellos: the cookie secrets, and the last warning about another version.
struct Gate {
    jar: CookieJar,
    warned_version: Option<Instant>,
}

/// 32 random bytes (a cookie secret).
fn secret() -> [u8; SECRET_BYTES] {
    let mut b = [0u8; SECRET_BYTES];
    if getrandom::getrandom(&mut b).is_err() {
        // No system randomness: a secret from several session ids (themselves best effort).
        for c in b.chunks_mut(8) {
            c.copy_from_slice(&random_session().to_ne_bytes());
        }
    }
    b
}

/// What the gate made of a hello.
enum HelloVerdict {
    /// Too small, or answered with a challenge: nothing more to do.
    Ignored,
    /// The cookie is valid: the hello's source address is proven.
    Proven(Hello),
}

impl Gate {
    fn new() -> Gate {
        Gate {
            jar: CookieJar::new(monotonic_now(), secret(), secret()),
            warned_version: None,
        }
    }

    /// A hello from `r.from`: ignored if smaller than [`MIN_HELLO_BYTES`], answered with a
    /// challenge (32 bytes) without a valid cookie, else proven.
    fn hello(&mut self, h: Hello, r: &Received, sock: &Sock, out: &mut Vec<u8>) -> HelloVerdict {
        if r.len < MIN_HELLO_BYTES {
            return HelloVerdict::Ignored;
        }
        self.jar.rotate(monotonic_now(), secret);
        if let Some(c) = &h.cookie {
            if self.jar.check(&r.from, h.session, c) {
                return HelloVerdict::Proven(h);
            }
        }
        let challenge = Message::Challenge {
            session: h.session,
            feedback_path: h.feedback_path,
            cookie: self.jar.cookie(&r.from, h.session),
        };
        encode(&challenge, 0, out);
        debug_assert!(out.len() <= MIN_HELLO_BYTES);
        let _ = sock.send_to(out, r.from);
        HelloVerdict::Ignored
    }

    /// A datagram that does not decode: says so on stderr (at most every 10 s) when it is of
    /// another wire version of the Saturator.
    fn undecodable(&mut self, e: DecodeError, r: &Received) {
        if let DecodeError::BadVersion(_) = e {
            let now = monotonic_now();
            if self
                .warned_version
                .is_none_or(|t| now >= t + VERSION_WARNING)
            {
                eprintln!("warning: ignoring a datagram from {}: {e}", r.from);
                self.warned_version = Some(now);
            }
        }
    }
}

/// Whether a proven hello's parameters are within what the server allows; the refusal if not.
fn check_hello(o: &ServerOptions, h: &Hello, from: &SocketAddr) -> Option<Refusal> {
    let max = o.max_payload(from);
    if h.payload_bytes > max {
        return Some(Refusal::Payload { max });
    }
    if h.max_window > MAX_WINDOW {
        return Some(Refusal::Window { max: MAX_WINDOW });
    }
    if h.high_rtt_ms > MAX_HIGH_RTT_MS {
        return Some(Refusal::RttMarks {
            max_high_ms: MAX_HIGH_RTT_MS,
        });
    }
    None
}

/// Listens as `o` says and runs recordings, one at a time, printing a line per second and a
/// summary of each on stdout, until a stop signal (or after the first with `o.once`).
pub fn server(o: &ServerOptions) -> Result<(), SaturatorError> {
    o.validate()?;
    let sock = Sock::new(o.listen)?;
    let signals = SignalWatcher::new().map_err(SaturatorError::Signals)?;
    if let Some(dir) = &o.out {
        std::fs::create_dir_all(dir).map_err(|source| SaturatorError::CreateDir {
            path: dir.clone(),
            source,
        })?;
    }
    if !o.json {
        println!("listening on {}", sock.sock.local_addr()?);
        let _ = io::stdout().flush();
    }
    let mut buf = vec![0u8; RECV_BUFFER_BYTES];
    let mut gate = Gate::new();
    loop {
        let Some((hello, first)) = wait_for_hello(o, &sock, &signals, &mut buf, &mut gate)? else {
            return Ok(());
        };
        let mut s = Session::new(hello, &first, Duration::from(o.max_recording));
        let summary = serve(o, &sock, &mut s, &first, &signals, &mut buf, &mut gate)?;
        print_server_summary(&summary, o.json)?;
        if o.once {
            return Ok(());
        }
    }
}

/// Waits for a hello whose cookie proves its address and whose parameters are acceptable;
/// `None` on a stop signal. Everything else is ignored, and not counted anywhere: it belongs
/// to no recording.
fn wait_for_hello(
    o: &ServerOptions,
    sock: &Sock,
    signals: &SignalWatcher,
    buf: &mut [u8],
    gate: &mut Gate,
) -> Result<Option<(Hello, Received)>, SaturatorError> {
    let mut out = Vec::with_capacity(64);
    loop {
        if signals.take().is_some() {
            return Ok(None);
        }
        let now = monotonic_now();
        let offset = realtime_offset_ns();
        while let Some(r) = sock.recv(buf, offset, now)? {
            match decode(&buf[..r.len.min(buf.len())]) {
                Ok(Message::Hello(h)) => {
                    let HelloVerdict::Proven(h) = gate.hello(h, &r, sock, &mut out) else {
                        continue;
                    };
                    if let Some(reason) = check_hello(o, &h, &r.from) {
                        let session = h.session;
                        encode(&Message::Refused { session, reason }, 0, &mut out);
                        let _ = sock.send_to(&out, r.from);
                        continue;
                    }
                    return Ok(Some((h, r)));
                }
                Ok(_) => {}
                Err(e) => gate.undecodable(e, &r),
            }
        }
        wait(&[sock], now + Duration::from_millis(50));
    }
}

/// Runs one recording, from its first proven hello to the client's DONE (or silence).
fn serve(
    o: &ServerOptions,
    sock: &Sock,
    s: &mut Session,
    first: &Received,
    signals: &SignalWatcher,
    buf: &mut [u8],
    gate: &mut Gate,
) -> Result<ServerSummary, SaturatorError> {
    let mut out = Vec::with_capacity(RECV_BUFFER_BYTES);
    let session = s.hello.session;
    hello_ack(sock, session, s.hello.feedback_path, first.from, &mut out);
    announce(o, s, first);
    let idle = Duration::from(o.idle_timeout);
    let bound = Duration::from(o.max_recording);
    // After its bound, a recording is kept for its client at most this long, whatever it
    // sends: the server is the next client's again by then.
    let grace = KEEP_RESULT.min(bound);
    let mut ended = "fin";
    loop {
        let now = monotonic_now();
        if s.done {
            break;
        }
        if signals.take().is_some() {
            ended = "interrupted";
            break;
        }
        if s.finished.is_none() && now >= s.bound_at {
            // The bound: the recording is cut there, and the client told so.
            ended = "limit";
            s.finish(o, s.bound_at)?;
            s.notify_limit(sock, bound, now);
        }
        if now >= s.last_heard + idle {
            if ended != "limit" {
                ended = if s.finished.is_some() { "fin" } else { "idle" };
            }
            break;
        }
        if s.finished
            .as_ref()
            .is_some_and(|f| now >= f.since + KEEP_RESULT)
            || (ended == "limit" && now >= s.bound_at + grace)
        {
            break;
        }
        receive(o, s, sock, buf, &mut out, now, gate)?;
        if s.finished.is_some() {
            wait(&[sock], now + Duration::from_millis(50));
            continue;
        }
        let now = monotonic_now();
        s.send(sock, now, &mut out);
        if now >= s.next_progress {
            s.progress(now, o);
        }
        let mut until = s.next_progress;
        for t in [
            s.sender.as_ref().and_then(|x| x.next_timeout()),
            s.rec.as_ref().and_then(|x| x.next_ack()),
        ]
        .into_iter()
        .flatten()
        {
            until = until.min(t);
        }
        wait(&[sock], until);
    }
    let now = monotonic_now();
    let mut silent_since_s = None;
    if s.finished.is_none() {
        // Ctrl-C: the recording ends now. Silence: it ends where the client was last heard,
        // so that a crashed client is not written down as an outage of the link.
        let end = if ended == "idle" {
            silent_since_s = Some((s.last_heard - s.start).as_secs_f64());
            s.last_heard.min(now)
        } else {
            now
        };
        s.finish(o, end)?;
    }
    Ok(ServerSummary {
        kind: "summary",
        role: "server",
        session: format!("{session:016x}"),
        mode: s.hello.mode,
        client: s
            .data_addr
            .or(s.fb_addr)
            .map_or_else(|| "unknown".into(), |a| a.to_string()),
        feedback: s.fb_addr.map(|f| f.to_string()),
        ended,
        silent_since_s,
        limit_s: (ended == "limit").then(|| bound.as_secs_f64()),
        delivered: s.done,
        foreign: s.foreign,
        up: s.rec.as_ref().map(|r| r.summary(now)),
        down_sender: s.sender.as_ref().map(|x| x.stats()),
        files: std::mem::take(&mut s.files),
    })
}

/// Sends a HELLO-ACK of `session` to `to` (answering a hello over the feedback path if
/// `feedback_path`).
fn hello_ack(sock: &Sock, session: u64, feedback_path: bool, to: SocketAddr, out: &mut Vec<u8>) {
    let flags = if feedback_path { FLAG_FEEDBACK_PATH } else { 0 };
    encode(&Message::HelloAck { session, flags }, 0, out);
    let _ = sock.send_to(out, to);
}

/// Prints what is being recorded (text only).
fn announce(o: &ServerOptions, s: &Session, first: &Received) {
    if o.json {
        return;
    }
    println!(
        "recording {:016x} from {}: {} ({} ms - {} ms RTT, {}-byte payloads){}",
        s.hello.session,
        first.from,
        s.hello.mode.as_str(),
        s.hello.low_rtt_ms,
        s.hello.high_rtt_ms,
        s.hello.payload_bytes,
        if s.hello.uses_feedback {
            ", feedback over a second path"
        } else {
            ""
        }
    );
    let _ = io::stdout().flush();
}

/// Reads what waits on the socket (at most [`BATCH`] datagrams) and acts on it: hellos go
/// through the gate; anything else counts only from the session's proven addresses.
#[allow(clippy::too_many_arguments)]
fn receive(
    o: &ServerOptions,
    s: &mut Session,
    sock: &Sock,
    buf: &mut [u8],
    out: &mut Vec<u8>,
    now: Instant,
    gate: &mut Gate,
) -> Result<(), SaturatorError> {
    let offset = realtime_offset_ns();
    for _ in 0..BATCH {
        let Some(r) = sock.recv(buf, offset, now)? else {
            break;
        };
        let on_path = s.is_path(&r.from);
        let msg = match decode(&buf[..r.len.min(buf.len())]) {
            Ok(m) => m,
            Err(e) => {
                gate.undecodable(e, &r);
                if !on_path {
                    s.foreign += 1;
                } else if let Some(rec) = s.rec.as_mut() {
                    rec.on_malformed();
                }
                continue;
            }
        };
        if let Message::Hello(h) = msg {
            hello_in_session(o, s, sock, h, &r, now, out, gate);
            continue;
        }
        if !on_path {
            s.foreign += 1;
            continue;
        }
        if msg.session() != s.hello.session {
            if let Some(rec) = s.rec.as_mut() {
                rec.on_stray();
            }
            continue;
        }
        s.last_heard = r.at.max(s.last_heard);
        on_message(o, s, sock, msg, &r, now, out)?;
    }
    Ok(())
}

/// A hello during a recording: of the session with a valid cookie, it (re)proves one of its
/// paths (the first hello over the other path, or a new address after a NAT rebinding); of
/// another session with a valid cookie, it is refused with when to try again
/// ([`Session::retry_after`]); without a valid cookie
/// it gets a challenge only, and changes nothing.
#[allow(clippy::too_many_arguments)]
fn hello_in_session(
    o: &ServerOptions,
    s: &mut Session,
    sock: &Sock,
    h: Hello,
    r: &Received,
    now: Instant,
    out: &mut Vec<u8>,
    gate: &mut Gate,
) {
    let on_path = s.is_path(&r.from);
    let session = s.hello.session;
    let proven_here = if h.feedback_path {
        s.fb_addr == Some(r.from)
    } else {
        s.data_addr == Some(r.from)
    };
    if h.session == session && proven_here {
        // A repeated hello over a path already proven.
        s.last_heard = r.at.max(s.last_heard);
        hello_ack(sock, session, h.feedback_path, r.from, out);
        return;
    }
    let HelloVerdict::Proven(h) = gate.hello(h, r, sock, out) else {
        if !on_path {
            s.foreign += 1;
        }
        return;
    };
    if h.session != session {
        let reason = s.retry_after(now);
        encode(
            &Message::Refused {
                session: h.session,
                reason,
            },
            0,
            out,
        );
        let _ = sock.send_to(out, r.from);
        if !on_path {
            s.foreign += 1;
        }
        return;
    }
    if h.feedback_path {
        s.fb_addr = Some(r.from);
    } else if s.finished.is_none() && check_hello(o, &h, &r.from).is_none() {
        s.data_path(r.from, now);
    } else {
        return;
    }
    s.last_heard = r.at.max(s.last_heard);
    hello_ack(sock, session, h.feedback_path, r.from, out);
}

/// Acts on one message of the session from one of its proven paths.
fn on_message(
    o: &ServerOptions,
    s: &mut Session,
    sock: &Sock,
    msg: Message<'_>,
    r: &Received,
    now: Instant,
    out: &mut Vec<u8>,
) -> Result<(), SaturatorError> {
    if s.limit_notice.is_some() && matches!(msg, Message::Data(_) | Message::Ack { .. }) {
        // The bound ended the recording and the client still records: tell it again.
        s.notify_limit(sock, Duration::from(o.max_recording), now);
    }
    match msg {
        Message::Data(h) => {
            if h.dir != Direction::Up || s.data_addr != Some(r.from) {
                if let Some(rec) = s.rec.as_mut() {
                    rec.on_stray();
                }
                return Ok(());
            }
            if let Some(rec) = s.rec.as_mut() {
                rec.on_data(r.at, &h, r.len);
            }
            s.peer_window = u64::from(h.window);
            s.peer_rtt = Duration::from_millis(u64::from(h.rtt_ms));
            if let (Some(ack), Some(snd)) = (h.ack, s.sender.as_mut()) {
                snd.on_ack(r.at, &ack);
            }
        }
        Message::Ack { dir, info, .. } => {
            if let (Direction::Down, Some(ack), Some(snd)) = (dir, info, s.sender.as_mut()) {
                snd.on_ack(r.at, &ack);
            }
        }
        Message::Fin { .. } => {
            if s.finished.is_none() {
                s.finish(o, now)?;
            }
            if let Some(f) = &s.finished {
                encode(&Message::FinAck(f.meta), 0, out);
                let _ = sock.send_to(out, r.from);
            }
        }
        Message::ResultRequest { first, count, .. } => {
            s.send_chunks(sock, first, count, r.from, now);
        }
        Message::Done { .. } if s.finished.is_some() => s.done = true,
        _ => {}
    }
    Ok(())
}

/// The summary of a recording on stdout: one JSON line, or text.
fn print_server_summary(summary: &ServerSummary, json: bool) -> Result<(), SaturatorError> {
    if json {
        println!("{}", serde_json::to_string(summary)?);
    } else {
        println!(
            "recording {} from {} ended ({}{}{}){}",
            summary.session,
            summary.client,
            summary.ended,
            summary.silent_since_s.map_or(String::new(), |t| format!(
                ": client silent since {t:.3} s into the recording, cut there"
            )),
            summary.limit_s.map_or(String::new(), |t| format!(
                ": the server's bound, {t} s, cut there"
            )),
            if summary.delivered {
                ", the uplink's recording delivered"
            } else {
                ""
            }
        );
        if let Some(u) = &summary.up {
            println!("{}", u.text());
        }
        if !summary.files.is_empty() {
            println!("wrote {}", summary.files.join(", "));
        }
        if summary.foreign > 0 {
            println!(
                "ignored {} datagrams from addresses other than the session's",
                summary.foreign
            );
        }
    }
    let _ = io::stdout().flush();
    Ok(())
}
