//! `sprout saturator server` as a call ([`server`]): waits for a client and runs the recording
//! it asks for, one at a time; with `out`, keeps its own copy of each uplink recording as
//! `<name>.up` and `<name>.up.json`.

use std::io::{self, Write};

use serde::Serialize;
use sprout_os::signals::SignalWatcher;

use crate::runtime::error::SaturatorError;
use crate::runtime::options::ServerOptions;
use crate::runtime::server_session::Session;
use crate::runtime::socket::{
    now_us, realtime_offset_ns, wait, Received, Sock, BATCH, RECV_BUFFER_BYTES,
};
use crate::sender::SenderStats;
use crate::summary::Summary;
use crate::wire::{decode, encode, Dir, Hello, Message, Mode, FLAG_FEEDBACK_PATH};

/// How long the recording is kept for a client that ended it but does not ask for it, µs.
const KEEP_RESULT_US: u64 = 60_000_000;

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
    pub mode: Mode,
    /// The client's address (data path, else feedback path, else "unknown").
    pub client: String,
    /// The client's address on the feedback path, if one.
    pub feedback: Option<String>,
    /// How the recording ended: "fin" (the client ended it), "idle" (the client went
    /// silent), "interrupted" (a stop signal).
    pub ended: &'static str,
    /// Whether the client confirmed it received the uplink's recording.
    pub delivered: bool,
    /// The uplink's recording.
    pub up: Option<Summary>,
    /// The downlink's sender.
    pub down_sender: Option<SenderStats>,
    /// Files written.
    pub files: Vec<String>,
}

/// Stray and malformed datagrams received between recordings: counted in the next one.
#[derive(Default)]
struct Idle {
    strays: u64,
    malformed: u64,
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
    let mut out = Vec::with_capacity(RECV_BUFFER_BYTES);
    let mut idle = Idle::default();
    loop {
        let Some((hello, first)) = wait_for_hello(&sock, &signals, &mut buf, &mut idle)? else {
            return Ok(());
        };
        let mut s = Session::new(hello, &first);
        if let Some(rec) = s.rec.as_mut() {
            for _ in 0..idle.strays {
                rec.on_stray();
            }
            for _ in 0..idle.malformed {
                rec.on_malformed();
            }
        }
        idle = Idle::default();
        let summary = serve(o, &sock, &mut s, &first, &signals, &mut buf, &mut out)?;
        print_server_summary(&summary, o.json)?;
        if o.once {
            return Ok(());
        }
    }
}

/// Waits for a hello, counting what else arrives; `None` on a stop signal.
fn wait_for_hello(
    sock: &Sock,
    signals: &SignalWatcher,
    buf: &mut [u8],
    idle: &mut Idle,
) -> Result<Option<(Hello, Received)>, SaturatorError> {
    loop {
        if signals.take().is_some() {
            return Ok(None);
        }
        let now = now_us();
        let offset = realtime_offset_ns();
        while let Some(r) = sock.recv(buf, offset, now)? {
            match decode(&buf[..r.len.min(buf.len())]) {
                Ok(Message::Hello(h)) => return Ok(Some((h, r))),
                Ok(_) => idle.strays += 1,
                Err(_) => idle.malformed += 1,
            }
        }
        wait(&[sock], now + 50_000);
    }
}

/// Runs one recording, from its first hello to the client's DONE (or silence).
fn serve(
    o: &ServerOptions,
    sock: &Sock,
    s: &mut Session,
    first: &Received,
    signals: &SignalWatcher,
    buf: &mut [u8],
    out: &mut Vec<u8>,
) -> Result<ServerSummary, SaturatorError> {
    let session = s.hello.session;
    let flags = if s.hello.feedback_path {
        FLAG_FEEDBACK_PATH
    } else {
        0
    };
    encode(&Message::HelloAck { session, flags }, 0, out);
    let _ = sock.send_to(out, first.from);
    if !o.json {
        println!(
            "recording {session:016x} from {}: {} ({} ms - {} ms RTT, {}-byte payloads){}",
            first.from,
            s.hello.mode.name(),
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
    let idle_us = o.idle_timeout.as_micros() as u64;
    let mut ended = "fin";
    loop {
        let now = now_us();
        if s.done {
            break;
        }
        if signals.take().is_some() {
            ended = "interrupted";
            break;
        }
        if now >= s.last_heard_us.saturating_add(idle_us) {
            ended = if s.finished.is_some() { "fin" } else { "idle" };
            break;
        }
        if s.finished
            .as_ref()
            .is_some_and(|f| now >= f.since_us + KEEP_RESULT_US)
        {
            break;
        }
        receive(o, s, sock, buf, out, now)?;
        if s.finished.is_some() {
            wait(&[sock], now + 50_000);
            continue;
        }
        let now = now_us();
        s.send(sock, now, out);
        if now >= s.next_progress {
            s.progress(now, o);
        }
        let mut until = s.next_progress;
        for t in [
            s.sender.as_ref().and_then(|x| x.next_timeout_us()),
            s.rec.as_ref().and_then(|x| x.next_ack_us()),
        ]
        .into_iter()
        .flatten()
        {
            until = until.min(t);
        }
        wait(&[sock], until);
    }
    let now = now_us();
    if s.finished.is_none() {
        // The client went silent (or Ctrl-C): keep what was recorded.
        s.finish(o, now)?;
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
        delivered: s.done,
        up: s.rec.as_ref().map(|r| r.summary(now)),
        down_sender: s.sender.as_ref().map(|x| x.stats()),
        files: std::mem::take(&mut s.files),
    })
}

/// Reads what waits on the socket (at most [`BATCH`] datagrams) and acts on it.
fn receive(
    o: &ServerOptions,
    s: &mut Session,
    sock: &Sock,
    buf: &mut [u8],
    out: &mut Vec<u8>,
    now: u64,
) -> Result<(), SaturatorError> {
    let session = s.hello.session;
    let offset = realtime_offset_ns();
    for _ in 0..BATCH {
        let Some(r) = sock.recv(buf, offset, now)? else {
            break;
        };
        let Ok(msg) = decode(&buf[..r.len.min(buf.len())]) else {
            if let Some(rec) = s.rec.as_mut() {
                rec.on_malformed();
            }
            continue;
        };
        if msg.session() != session {
            if let Message::Hello(_) = msg {
                encode(
                    &Message::Busy {
                        session: msg.session(),
                    },
                    0,
                    out,
                );
                let _ = sock.send_to(out, r.from);
            }
            if let Some(rec) = s.rec.as_mut() {
                rec.on_stray();
            }
            continue;
        }
        s.last_heard_us = r.at_us.max(s.last_heard_us);
        on_message(o, s, sock, msg, &r, now, out)?;
    }
    Ok(())
}

/// Acts on one message of the session.
fn on_message(
    o: &ServerOptions,
    s: &mut Session,
    sock: &Sock,
    msg: Message<'_>,
    r: &Received,
    now: u64,
    out: &mut Vec<u8>,
) -> Result<(), SaturatorError> {
    let session = s.hello.session;
    match msg {
        Message::Hello(h) => {
            if h.feedback_path {
                s.fb_addr = Some(r.from);
            } else {
                s.data_path(r.from, now);
            }
            let flags = if h.feedback_path {
                FLAG_FEEDBACK_PATH
            } else {
                0
            };
            encode(&Message::HelloAck { session, flags }, 0, out);
            let _ = sock.send_to(out, r.from);
        }
        Message::Data(h) => {
            if h.dir == Dir::Up {
                s.data_path(r.from, now);
            }
            if let Some(rec) = s.rec.as_mut() {
                rec.on_data(r.at_us, &h, r.len);
            }
            s.peer_window = u64::from(h.window);
            s.peer_rtt_ms = u64::from(h.rtt_ms);
            if let (Some(ack), Some(snd)) = (h.ack, s.sender.as_mut()) {
                snd.on_ack(r.at_us, &ack);
            }
        }
        Message::Ack {
            dir,
            feedback_path,
            info,
            ..
        } => {
            if feedback_path {
                s.fb_addr = Some(r.from);
            } else {
                s.data_path(r.from, now);
            }
            if let (Dir::Down, Some(ack), Some(snd)) = (dir, info, s.sender.as_mut()) {
                snd.on_ack(r.at_us, &ack);
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
            "recording {} from {} ended ({}){}",
            summary.session,
            summary.client,
            summary.ended,
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
    }
    let _ = io::stdout().flush();
    Ok(())
}
