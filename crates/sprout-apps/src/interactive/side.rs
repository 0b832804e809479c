//! Running one side of the stream: send paced packets, receive the peer's, until the duration
//! and the linger are over or a stop signal comes.

use std::io::{self, BufWriter};
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

use sprout_files::AtomicFile;
use sprout_os::clock::monotonic;
use sprout_os::signals::SignalWatcher;

use crate::interactive::error::InteractiveError;
use crate::interactive::options::{
    InteractiveClientOptions, InteractiveServerOptions, StreamOptions,
};
use crate::interactive::packet::{
    encode, Direction, Recorder, Stamp, HEADER_BYTES, MAX_PAYLOAD_BYTES,
};
use crate::interactive::summary::{print_summary, summary, Sent, Summary};

/// Longest wait in one receive call, so that signals and deadlines are noticed.
const POLL: Duration = Duration::from_millis(50);
/// A sender this late for a slot (after a stall) skips the missed slots rather than bursting.
const MAX_LATE: Duration = Duration::from_millis(100);
/// Checks the stream's options.
fn check(a: &StreamOptions) -> Result<(), InteractiveError> {
    if !(a.rate_kbps.is_finite() && a.rate_kbps > 0.0 && a.rate_kbps <= 10_000_000.0) {
        return Err(InteractiveError::InvalidOption(format!(
            "--rate-kbps must be above 0 and at most 10,000,000, got {}",
            a.rate_kbps
        )));
    }
    if !(HEADER_BYTES..=MAX_PAYLOAD_BYTES).contains(&a.payload_bytes) {
        return Err(InteractiveError::InvalidOption(format!(
            "--payload-bytes must be {HEADER_BYTES} to {MAX_PAYLOAD_BYTES}, got {}",
            a.payload_bytes
        )));
    }
    if let Some(d) = a.duration {
        if !(d.is_finite() && d > 0.0 && d <= 86_400.0) {
            return Err(InteractiveError::InvalidOption(format!(
                "--duration must be above 0 and at most 86400 seconds, got {d}"
            )));
        }
    }
    if !(a.linger.is_finite() && (0.0..=3600.0).contains(&a.linger)) {
        return Err(InteractiveError::InvalidOption(format!(
            "--linger must be 0 to 3600 seconds, got {}",
            a.linger
        )));
    }
    Ok(())
}

/// `CLOCK_MONOTONIC` in µs, the stamp the messages carry (read where all runtimes read it).
fn now_us() -> u64 {
    monotonic().as_micros()
}

/// Runs one side: `peer` is the server's address for the client, `None` for the server
/// (learned from the first valid packet). Writes the CSV if asked; returns the summary.
pub(crate) fn run_side(
    role: &'static str,
    sock: UdpSocket,
    mut peer: Option<SocketAddr>,
    a: &StreamOptions,
) -> Result<Summary, InteractiveError> {
    check(a)?;
    let (send_dir, recv_dir) = if role == "client" {
        (Direction::Up, Direction::Down)
    } else {
        (Direction::Down, Direction::Up)
    };
    let signals = SignalWatcher::new().map_err(InteractiveError::Signals)?;
    let interval = Duration::from_secs_f64(a.payload_bytes as f64 * 8.0 / (a.rate_kbps * 1000.0));
    let duration = a.duration.map(Duration::from_secs_f64);
    let linger = Duration::from_secs_f64(a.linger);
    let mut rec = Recorder::new(recv_dir);
    let mut sent = Sent::default();
    let mut out = vec![0u8; a.payload_bytes];
    let mut buf = vec![0u8; 65_536];
    // Sending starts now for the client, at the first packet for the server.
    let mut send_start: Option<Instant> = peer.map(|_| Instant::now());
    let mut next_due = send_start;
    let mut seq = 0u64;
    loop {
        if signals.take().is_some() {
            break;
        }
        let now = Instant::now();
        let send_end = send_start.and_then(|s| duration.map(|d| s + d));
        if send_end.is_some_and(|e| now >= e + linger) {
            break;
        }
        let sending = send_start.is_some() && send_end.is_none_or(|e| now < e);
        if let (true, Some(due), Some(to)) = (sending, next_due, peer) {
            if now >= due {
                encode(
                    Stamp {
                        dir: send_dir,
                        seq,
                        sent_us: now_us(),
                    },
                    &mut out,
                );
                match sock.send_to(&out, to) {
                    Ok(_) => {
                        sent.packets += 1;
                        sent.bytes += out.len() as u64;
                    }
                    Err(_) => sent.errors += 1,
                }
                sent.first.get_or_insert(now);
                sent.last = Some(now);
                seq += 1;
                let mut next = due + interval;
                if now > next + MAX_LATE {
                    // After a stall: skip the missed slots rather than send them in a burst.
                    next = now + interval;
                }
                next_due = Some(next);
                continue;
            }
        }
        let wait = match (sending, next_due) {
            (true, Some(due)) => due.saturating_duration_since(now).min(POLL),
            _ => POLL,
        };
        sock.set_read_timeout(Some(wait.max(Duration::from_micros(100))))?;
        match sock.recv_from(&mut buf) {
            Ok((n, from)) => {
                let t = now_us();
                match peer {
                    Some(p) if p != from => rec.on_foreign(),
                    Some(_) => {
                        rec.on_datagram(&buf[..n], t);
                    }
                    None => {
                        if rec.on_datagram(&buf[..n], t).is_some() {
                            peer = Some(from);
                            send_start = Some(Instant::now());
                            next_due = send_start;
                        }
                    }
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                        | io::ErrorKind::ConnectionRefused
                ) => {}
            Err(e) => return Err(InteractiveError::Receive(e)),
        }
    }
    if let Some(path) = &a.csv {
        write_csv(path, &rec)?;
    }
    Ok(summary(role, peer, a, &sent, &rec))
}

/// Writes the per-packet CSV whole or not at all: beside its name, renamed into place.
fn write_csv(path: &Path, rec: &Recorder) -> Result<(), InteractiveError> {
    let file = AtomicFile::create(path).map_err(|source| InteractiveError::CreateCsv {
        path: path.to_path_buf(),
        source,
    })?;
    let mut w = BufWriter::new(file);
    rec.write_csv(&mut w)
        .and_then(|_| w.into_inner().map_err(|e| e.into_error()))
        .and_then(AtomicFile::commit)
        .map_err(|source| InteractiveError::WriteCsv {
            path: path.to_path_buf(),
            source,
        })
}

/// Runs `sprout interactive server`: waits for a client, streams back to it, prints the
/// summary (stdout) and returns it.
pub fn serve(o: &InteractiveServerOptions) -> Result<Summary, InteractiveError> {
    let (listen, stream) = (o.listen, &o.stream);
    check(stream)?;
    let sock = UdpSocket::bind(listen).map_err(|source| InteractiveError::Listen {
        addr: listen,
        source,
    })?;
    eprintln!(
        "sprout interactive server listening on {}",
        sock.local_addr()?
    );
    let s = run_side("server", sock, None, stream)?;
    print_summary(&s, stream.json)?;
    Ok(s)
}

/// Runs `sprout interactive client`: streams to the server and receives its stream, prints the
/// summary (stdout) and returns it.
pub fn run(o: &InteractiveClientOptions) -> Result<Summary, InteractiveError> {
    let (connect, stream) = (o.connect, &o.stream);
    check(stream)?;
    let local = if connect.is_ipv4() {
        SocketAddr::from(([0, 0, 0, 0], 0))
    } else {
        SocketAddr::from(([0u16; 8], 0))
    };
    let sock = UdpSocket::bind(local).map_err(InteractiveError::Bind)?;
    let s = run_side("client", sock, Some(connect), stream)?;
    print_summary(&s, stream.json)?;
    Ok(s)
}
