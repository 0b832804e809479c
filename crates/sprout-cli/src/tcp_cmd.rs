//! `sprout tcp server` and `sprout tcp client`: bulk transfers over the kernel's own TCP, with
//! the congestion controller chosen per socket (`TCP_CONGESTION`), as the real peers of the
//! emulated evaluation (the paper compared Sprout with Cubic, Reno and others over Cellsim).
//!
//! The client opens one connection per loaded direction and starts each with a one-line request
//! `SPROUT-TCP <up|down> <controller> <seconds>\n`. For `up` the client sends and the server
//! discards; for `down` the server sends and the client discards. The sender of each connection
//! sets the requested controller on its socket. Both sides print per-second lines and a summary.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::Serialize;
use socket2::SockRef;

/// `sprout tcp` arguments.
#[derive(clap::Args)]
pub struct TcpArgs {
    #[command(subcommand)]
    role: TcpRole,
}

#[derive(clap::Subcommand)]
enum TcpRole {
    /// Accept clients and run the transfers they ask for.
    Server {
        /// Address and port to listen on.
        #[arg(long, default_value = "0.0.0.0:9100")]
        listen: SocketAddr,
        /// Exit once the first client's transfers are over.
        #[arg(long)]
        once: bool,
        /// JSON lines instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Connect to a server and run bulk transfers in one or both directions.
    Client {
        /// The server's address and port.
        #[arg(long)]
        connect: SocketAddr,
        /// Kernel congestion controller of the sending sockets (cubic, reno, bbr, ...).
        #[arg(long, default_value = "cubic")]
        cc: String,
        /// Loaded directions: up (client to server), down, or both.
        #[arg(long, default_value = "both")]
        direction: DirectionArg,
        /// Seconds of transfer.
        #[arg(long, default_value_t = 10.0)]
        duration: f64,
        /// JSON lines instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Which directions carry a bulk flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum DirectionArg {
    Up,
    Down,
    Both,
}

/// Longest controller name the kernel accepts (`TCP_CA_NAME_MAX` is 16 with the NUL).
const CC_NAME_MAX: usize = 15;
/// Bytes of each write of a bulk sender.
const CHUNK: usize = 64 * 1024;
/// A request line longer than this is refused (bytes).
const MAX_REQUEST: usize = 128;

/// What one connection carries, from its request line.
#[derive(Clone, Debug, PartialEq)]
struct Request {
    /// `true`: the client sends ("up"); `false`: the server sends ("down").
    up: bool,
    /// Kernel congestion controller of the sender.
    cc: String,
    /// Transfer length (s).
    seconds: f64,
}

impl Request {
    fn line(&self) -> String {
        let dir = if self.up { "up" } else { "down" };
        format!("SPROUT-TCP {dir} {} {}\n", self.cc, self.seconds)
    }

    fn parse(line: &str) -> Result<Request> {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [magic, dir, cc, secs] = parts[..] else {
            bail!("malformed request {line:?}: expected `SPROUT-TCP <up|down> <cc> <seconds>`");
        };
        if magic != "SPROUT-TCP" {
            bail!("not a sprout tcp request: {line:?}");
        }
        let up = match dir {
            "up" => true,
            "down" => false,
            _ => bail!("bad direction {dir:?} in request (up or down)"),
        };
        check_cc_name(cc)?;
        let seconds: f64 = secs
            .parse()
            .ok()
            .filter(|s: &f64| s.is_finite() && *s > 0.0 && *s <= 86_400.0)
            .with_context(|| format!("bad duration {secs:?} in request"))?;
        Ok(Request {
            up,
            cc: cc.to_string(),
            seconds,
        })
    }
}

fn check_cc_name(cc: &str) -> Result<()> {
    if cc.is_empty()
        || cc.len() > CC_NAME_MAX
        || !cc.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        bail!("bad congestion controller name {cc:?}");
    }
    Ok(())
}

/// Sets the kernel congestion controller of a socket, with a message naming the ones available.
fn set_congestion(stream: &TcpStream, cc: &str) -> Result<()> {
    SockRef::from(stream)
        .set_tcp_congestion(cc.as_bytes())
        .with_context(|| {
            let avail =
                std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
                    .unwrap_or_default();
            format!(
                "cannot use TCP congestion controller {cc:?} (available: {}; others may need `modprobe tcp_{cc}`)",
                avail.trim()
            )
        })
}

/// Byte counters shared between a transfer thread and the reporter.
#[derive(Default)]
struct Counters {
    sent: AtomicU64,
    received: AtomicU64,
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
fn report(role: &str, cc: &str, counters: &Counters, done: &AtomicBool, json: bool) {
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
fn send_bulk(mut stream: TcpStream, seconds: f64, counter: &AtomicU64) {
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
fn drain(mut reader: impl Read, counter: &AtomicU64, deadline: Instant) {
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

/// Serves one connection: reads its request, then sends or drains.
fn serve(stream: TcpStream, counters: &Counters) -> Result<Request> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    (&mut reader)
        .take(MAX_REQUEST as u64)
        .read_line(&mut line)
        .context("reading the request")?;
    let req = Request::parse(line.trim_end())?;
    if req.up {
        stream.set_read_timeout(Some(Duration::from_millis(200)))?;
        // Grace for data still queued in the emulated link when the client stops.
        let deadline = Instant::now() + Duration::from_secs_f64(req.seconds + 30.0);
        drain(reader, &counters.received, deadline);
    } else {
        set_congestion(&stream, &req.cc)?;
        send_bulk(stream, req.seconds, &counters.sent);
    }
    Ok(req)
}

fn server(listen: SocketAddr, once: bool, json: bool) -> Result<()> {
    let listener =
        TcpListener::bind(listen).with_context(|| format!("cannot listen on {listen}"))?;
    eprintln!("sprout tcp server listening on {}", listener.local_addr()?);
    let counters = Arc::new(Counters::default());
    let done = Arc::new(AtomicBool::new(false));
    let reporter = {
        let (counters, done) = (counters.clone(), done.clone());
        thread::spawn(move || report("server", "-", &counters, &done, json))
    };
    let mut workers: Vec<thread::JoinHandle<()>> = Vec::new();
    // With --once: serve the connections of one client (those from its address that arrive
    // within a second of each other), then exit when they are over.
    let mut first_peer: Option<std::net::IpAddr> = None;
    if once {
        listener.set_nonblocking(true)?;
    }
    let mut idle_since = Instant::now();
    loop {
        match listener.accept() {
            Ok((stream, peer)) => {
                stream.set_nonblocking(false)?;
                idle_since = Instant::now();
                if once && first_peer.is_some_and(|p| p != peer.ip()) {
                    eprintln!("ignoring {peer}: serving one client only (--once)");
                    continue;
                }
                first_peer = Some(peer.ip());
                let counters = counters.clone();
                workers.push(thread::spawn(move || {
                    if let Err(e) = serve(stream, &counters) {
                        eprintln!("client {peer}: {e:#}");
                    }
                }));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if first_peer.is_some() && idle_since.elapsed() > Duration::from_secs(1) {
                    break;
                }
                thread::sleep(Duration::from_millis(10));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => eprintln!("accept: {e}"),
        }
        workers.retain(|w| !w.is_finished());
    }
    for w in workers {
        let _ = w.join();
    }
    done.store(true, Ordering::Relaxed);
    let _ = reporter.join();
    Ok(())
}

fn client(
    connect: SocketAddr,
    cc: &str,
    direction: DirectionArg,
    seconds: f64,
    json: bool,
) -> Result<()> {
    check_cc_name(cc)?;
    if !(seconds.is_finite() && seconds > 0.0 && seconds <= 86_400.0) {
        bail!("--duration must be between 0 and 86400 seconds, got {seconds}");
    }
    let counters = Arc::new(Counters::default());
    let mut workers = Vec::new();
    let dirs: &[bool] = match direction {
        DirectionArg::Up => &[true],
        DirectionArg::Down => &[false],
        DirectionArg::Both => &[true, false],
    };
    for &up in dirs {
        let mut stream = TcpStream::connect_timeout(&connect, Duration::from_secs(10))
            .with_context(|| format!("cannot connect to {connect}"))?;
        if up {
            set_congestion(&stream, cc)?;
        }
        let req = Request {
            up,
            cc: cc.to_string(),
            seconds,
        };
        stream.write_all(req.line().as_bytes())?;
        let counters = counters.clone();
        workers.push(thread::spawn(move || {
            if up {
                send_bulk(stream, seconds, &counters.sent);
            } else {
                let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
                let deadline = Instant::now() + Duration::from_secs_f64(seconds + 30.0);
                drain(stream, &counters.received, deadline);
            }
        }));
    }
    let done = Arc::new(AtomicBool::new(false));
    let reporter = {
        let (counters, done, cc) = (counters.clone(), done.clone(), cc.to_string());
        thread::spawn(move || report("client", &cc, &counters, &done, json))
    };
    for w in workers {
        let _ = w.join();
    }
    done.store(true, Ordering::Relaxed);
    let _ = reporter.join();
    Ok(())
}

/// Runs `sprout tcp`.
pub fn run(a: TcpArgs) -> Result<()> {
    match a.role {
        TcpRole::Server { listen, once, json } => server(listen, once, json),
        TcpRole::Client {
            connect,
            cc,
            direction,
            duration,
            json,
        } => client(connect, &cc, direction, duration, json),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_round_trip_and_bad_ones_are_refused() {
        let r = Request {
            up: false,
            cc: "bbr".into(),
            seconds: 2.5,
        };
        assert_eq!(Request::parse(r.line().trim_end()).unwrap(), r);
        for bad in [
            "",
            "HELLO up cubic 3",
            "SPROUT-TCP sideways cubic 3",
            "SPROUT-TCP up cu/bic 3",
            "SPROUT-TCP up cubic -1",
            "SPROUT-TCP up cubic NaN",
            "SPROUT-TCP up cubic 3 extra",
            "SPROUT-TCP up averyveryverylongname 3",
        ] {
            assert!(Request::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
