//! The halves of a transfer: the bulk sender, the draining receiver, and the reporter of
//! per-second and summary lines.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;
use socket2::SockRef;

use crate::kernel_tcp::error::TcpError;

/// Bytes of each write of a bulk sender.
const CHUNK: usize = 64 * 1024;

/// Sets the kernel congestion controller of a socket, with a message naming the ones available.
pub(crate) fn set_congestion(stream: &TcpStream, cc: &str) -> Result<(), TcpError> {
    SockRef::from(stream)
        .set_tcp_congestion(cc.as_bytes())
        .map_err(|source| {
            let available =
                std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
                    .unwrap_or_default();
            TcpError::Congestion {
                cc: cc.to_string(),
                available: available.trim().to_string(),
                source,
            }
        })
}

/// Byte counters shared between a transfer thread and the reporter.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) sent: AtomicU64,
    pub(crate) received: AtomicU64,
}

/// One per-second or summary line.
#[derive(Serialize)]
struct Line<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    role: &'a str,
    cc: &'a str,
    elapsed_s: f64,
    sent_kbps: f64,
    received_kbps: f64,
    sent_bytes: u64,
    received_bytes: u64,
}

impl Line<'_> {
    fn print(&self, json: bool) {
        if json {
            println!(
                "{}",
                serde_json::to_string(self).expect("a line serializes")
            );
        } else {
            println!(
                "{:>5} {:>7.1} s  sent {:>9.0} kbit/s  received {:>9.0} kbit/s  ({} / {} bytes)",
                self.kind,
                self.elapsed_s,
                self.sent_kbps,
                self.received_kbps,
                self.sent_bytes,
                self.received_bytes
            );
        }
    }
}

/// Prints a line per second until `done`, then the summary.
pub(crate) fn report(role: &str, cc: &str, counters: &Counters, done: &AtomicBool, json: bool) {
    let start = Instant::now();
    let (mut last_sent, mut last_recv) = (0u64, 0u64);
    let mut next = 1u64;
    while !done.load(Ordering::Relaxed) {
        let due = start + Duration::from_secs(next);
        let now = Instant::now();
        if now < due {
            thread::sleep((due - now).min(Duration::from_millis(50)));
            continue;
        }
        let (s, r) = (
            counters.sent.load(Ordering::Relaxed),
            counters.received.load(Ordering::Relaxed),
        );
        Line {
            kind: "tick",
            role,
            cc,
            elapsed_s: next as f64,
            sent_kbps: (s - last_sent) as f64 * 8.0 / 1000.0,
            received_kbps: (r - last_recv) as f64 * 8.0 / 1000.0,
            sent_bytes: s,
            received_bytes: r,
        }
        .print(json);
        (last_sent, last_recv) = (s, r);
        next += 1;
    }
    let secs = start.elapsed().as_secs_f64().max(1e-9);
    let (s, r) = (
        counters.sent.load(Ordering::Relaxed),
        counters.received.load(Ordering::Relaxed),
    );
    Line {
        kind: "summary",
        role,
        cc,
        elapsed_s: secs,
        sent_kbps: s as f64 * 8.0 / 1000.0 / secs,
        received_kbps: r as f64 * 8.0 / 1000.0 / secs,
        sent_bytes: s,
        received_bytes: r,
    }
    .print(json);
}

/// Writes zeros for `seconds`, counting bytes; a peer that goes away ends it quietly.
pub(crate) fn send_bulk(mut stream: TcpStream, seconds: f64, counter: &AtomicU64) {
    let buf = vec![0u8; CHUNK];
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    // Writes block while the window is closed; a timeout lets the deadline be noticed.
    let _ = stream.set_write_timeout(Some(Duration::from_millis(200)));
    while Instant::now() < end {
        match stream.write(&buf) {
            Ok(0) => break,
            Ok(n) => {
                counter.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

/// Reads and discards until the peer closes or `deadline` passes, counting bytes.
pub(crate) fn drain(mut reader: impl Read, counter: &AtomicU64, deadline: Instant) {
    let mut buf = vec![0u8; CHUNK];
    while Instant::now() < deadline {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                counter.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(_) => break,
        }
    }
}
