//! `sprout interactive server` and `sprout interactive client`: the stand-in for a video call in
//! the tunnel experiment (paper §5.7): paced UDP both ways, by default 500 kbit/s each way
//! (1000-byte payloads every 16 ms), every packet stamped with a sequence number and its send
//! time on `CLOCK_MONOTONIC`.
//!
//! `CLOCK_MONOTONIC` is one clock for every network namespace of a host, so when both ends run
//! on one machine (the emulator's mobile namespace and the host's), the receiver's clock minus
//! the stamp is the packet's exact one-way delay.
//!
//! The client sends to the server from the start; the server learns the client's address from
//! the first valid packet and streams back to it (packets from any other address are counted as
//! bad). Each side sends for `--duration` seconds (the server from its first client packet),
//! keeps receiving for `--linger` seconds more (late packets still count), then prints a
//! summary (`--json`: one JSON line) and, with `--csv FILE`, writes one row per packet it
//! received: `direction,seq,sent_us,received_us,bytes` (`up` = client to server, `down` =
//! server to client; times in µs of `CLOCK_MONOTONIC`; bytes of UDP payload).
//!
//! Wire format of a packet (UDP payload, big-endian): 4 bytes magic `SPRI`, 1 byte direction
//! (0 up, 1 down), 3 bytes zero, 8 bytes sequence number (from 0), 8 bytes send time (µs of
//! `CLOCK_MONOTONIC`), then zero padding to the payload size. A datagram that is too short, has
//! another magic or direction, a sequence number beyond [`MAX_SEQ`] or a send time in the
//! future is counted as bad and ignored. Ctrl-C stops either side early, with its summary.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::Serialize;
use sprout_emu::monotonic_ns;
use sprout_emu::signals::SignalWatcher;

/// `sprout interactive` arguments.
#[derive(clap::Args)]
pub struct InteractiveArgs {
    #[command(subcommand)]
    role: Role,
}

#[derive(clap::Subcommand)]
enum Role {
    /// Wait for a client, then stream back to the address of its first packet.
    Server {
        /// Address and port to listen on.
        #[arg(long, default_value = "0.0.0.0:9101")]
        listen: SocketAddr,
        #[command(flatten)]
        stream: StreamArgs,
    },
    /// Stream to a server and receive its stream.
    Client {
        /// The server's address and port.
        #[arg(long)]
        connect: SocketAddr,
        #[command(flatten)]
        stream: StreamArgs,
    },
}

/// What both sides share: the stream's shape, its length and the outputs.
#[derive(clap::Args, Clone, Debug)]
struct StreamArgs {
    /// Sending rate, kbit/s of UDP payload.
    #[arg(long, default_value_t = 500.0)]
    rate_kbps: f64,
    /// UDP payload of each packet, bytes (24 to 65000; the interval between packets is
    /// payload / rate: 1000 bytes at 500 kbit/s is one packet every 16 ms).
    #[arg(long, default_value_t = 1000)]
    payload_bytes: usize,
    /// Seconds of sending; the server counts from its first client packet [default: until
    /// Ctrl-C].
    #[arg(long)]
    duration: Option<f64>,
    /// Seconds of receiving after sending stops, for packets still on their way.
    #[arg(long, default_value_t = 2.0)]
    linger: f64,
    /// Write one row per received packet to FILE (direction, seq, sent_us, received_us, bytes).
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Print the summary as one JSON line.
    #[arg(long)]
    json: bool,
}

/// Bytes of a packet's header: magic, direction, padding, sequence number, send time.
pub const HEADER_BYTES: usize = 24;
/// Largest payload accepted on the command line (bytes).
pub const MAX_PAYLOAD_BYTES: usize = 65_000;
/// Largest sequence number accepted from the network: about 50 days of packets every 1 ms.
pub const MAX_SEQ: u64 = 1 << 32;
/// Most packets recorded per side (rows of the CSV, delays of the summary); packets beyond are
/// still counted.
pub const MAX_RECORDS: usize = 4_000_000;
/// Most sequence numbers whose arrival is remembered for duplicate detection (bits: 64 MiB
/// of bitmap at most, grown as sequence numbers arrive).
const MAX_SEEN_BITS: u64 = MAX_SEQ;
const MAGIC: [u8; 4] = *b"SPRI";
/// Longest wait in one receive call, so that signals and deadlines are noticed.
const POLL: Duration = Duration::from_millis(50);
/// A sender this late for a slot (after a stall) skips the missed slots rather than bursting.
const MAX_LATE: Duration = Duration::from_millis(100);

/// Direction of a packet: `Up` from client to server, `Down` from server to client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    /// Client to server.
    Up,
    /// Server to client.
    Down,
}

impl Dir {
    fn byte(self) -> u8 {
        match self {
            Dir::Up => 0,
            Dir::Down => 1,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Dir::Up => "up",
            Dir::Down => "down",
        }
    }
}

/// The header of a valid packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// Direction.
    pub dir: Dir,
    /// Sequence number, from 0.
    pub seq: u64,
    /// Send time, µs of `CLOCK_MONOTONIC`.
    pub sent_us: u64,
}

/// Writes a packet's header into `buf` (at least [`HEADER_BYTES`] long); the rest of `buf` is
/// left as it is (zeros).
pub fn encode(stamp: Stamp, buf: &mut [u8]) {
    buf[..4].copy_from_slice(&MAGIC);
    buf[4] = stamp.dir.byte();
    buf[5..8].fill(0);
    buf[8..16].copy_from_slice(&stamp.seq.to_be_bytes());
    buf[16..24].copy_from_slice(&stamp.sent_us.to_be_bytes());
}

/// Reads a packet's header; `None` for anything that is not a packet of direction `dir`
/// stamped at or before `now_us` with a sequence number up to [`MAX_SEQ`].
pub fn decode(data: &[u8], dir: Dir, now_us: u64) -> Option<Stamp> {
    if data.len() < HEADER_BYTES || data[..4] != MAGIC || data[4] != dir.byte() {
        return None;
    }
    let seq = u64::from_be_bytes(data[8..16].try_into().ok()?);
    let sent_us = u64::from_be_bytes(data[16..24].try_into().ok()?);
    if seq > MAX_SEQ || sent_us > now_us {
        return None;
    }
    Some(Stamp { dir, seq, sent_us })
}

/// One received packet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Arrival {
    /// Sequence number.
    pub seq: u64,
    /// Send time, µs of `CLOCK_MONOTONIC`.
    pub sent_us: u64,
    /// Arrival time, µs of `CLOCK_MONOTONIC`.
    pub received_us: u64,
    /// UDP payload, bytes.
    pub bytes: usize,
}

/// Everything one side received: the arrivals and counters (bounded memory).
#[derive(Debug)]
pub struct Recorder {
    dir: Dir,
    arrivals: Vec<Arrival>,
    seen: Vec<u64>,
    /// Packets received (each sequence number once).
    pub packets: u64,
    /// Payload bytes received (each sequence number once).
    pub bytes: u64,
    /// Packets whose sequence number had already arrived.
    pub duplicates: u64,
    /// Datagrams that were not valid packets of the expected direction and peer.
    pub bad: u64,
    /// Highest sequence number received.
    pub max_seq: Option<u64>,
}

impl Recorder {
    /// An empty record of packets of direction `dir`.
    pub fn new(dir: Dir) -> Recorder {
        Recorder {
            dir,
            arrivals: Vec::new(),
            seen: Vec::new(),
            packets: 0,
            bytes: 0,
            duplicates: 0,
            bad: 0,
            max_seq: None,
        }
    }

    /// Takes a datagram received at `now_us` (µs of `CLOCK_MONOTONIC`); returns its header if
    /// it is a new valid packet.
    pub fn on_datagram(&mut self, data: &[u8], now_us: u64) -> Option<Stamp> {
        let Some(stamp) = decode(data, self.dir, now_us) else {
            self.bad = self.bad.saturating_add(1);
            return None;
        };
        if !self.mark_seen(stamp.seq) {
            self.duplicates = self.duplicates.saturating_add(1);
            return None;
        }
        self.packets = self.packets.saturating_add(1);
        self.bytes = self.bytes.saturating_add(data.len() as u64);
        self.max_seq = Some(self.max_seq.map_or(stamp.seq, |m| m.max(stamp.seq)));
        if self.arrivals.len() < MAX_RECORDS {
            self.arrivals.push(Arrival {
                seq: stamp.seq,
                sent_us: stamp.sent_us,
                received_us: now_us,
                bytes: data.len(),
            });
        }
        Some(stamp)
    }

    /// Counts a datagram from an unexpected address.
    pub fn on_foreign(&mut self) {
        self.bad = self.bad.saturating_add(1);
    }

    /// Marks `seq` as arrived; false if it had already.
    fn mark_seen(&mut self, seq: u64) -> bool {
        if seq >= MAX_SEEN_BITS {
            return true;
        }
        let (word, bit) = ((seq / 64) as usize, seq % 64);
        if word >= self.seen.len() {
            self.seen.resize(word + 1, 0);
        }
        let fresh = self.seen[word] & (1 << bit) == 0;
        self.seen[word] |= 1 << bit;
        fresh
    }

    /// The recorded arrivals, in arrival order.
    pub fn arrivals(&self) -> &[Arrival] {
        &self.arrivals
    }

    /// Packets missing below the highest sequence number received.
    pub fn lost(&self) -> u64 {
        self.max_seq
            .map_or(0, |m| m.saturating_add(1).saturating_sub(self.packets))
    }

    /// Writes the arrivals as CSV: `direction,seq,sent_us,received_us,bytes`.
    pub fn write_csv(&self, out: &mut impl Write) -> io::Result<()> {
        writeln!(out, "direction,seq,sent_us,received_us,bytes")?;
        for a in &self.arrivals {
            writeln!(
                out,
                "{},{},{},{},{}",
                self.dir.name(),
                a.seq,
                a.sent_us,
                a.received_us,
                a.bytes
            )?;
        }
        Ok(())
    }
}

/// The `q`-quantile (0..1) of `v` by the nearest-rank method; 0 for none.
pub fn quantile(v: &mut [u64], q: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    let rank = (q * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// A side's summary (the `--json` line).
#[derive(Debug, Serialize)]
pub struct Summary {
    /// Always "summary".
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// "server" or "client".
    pub role: &'static str,
    /// The peer's address (the server's once a client came), if any.
    pub peer: Option<String>,
    /// Configured sending rate, kbit/s of payload.
    pub rate_kbps: f64,
    /// Payload of each packet, bytes.
    pub payload_bytes: usize,
    /// Packets sent.
    pub sent_packets: u64,
    /// Payload bytes sent.
    pub sent_bytes: u64,
    /// Sends that failed (counted, not retried).
    pub send_errors: u64,
    /// Time from the first send to the last, s.
    pub sending_s: f64,
    /// Payload sent per second of sending, kbit/s.
    pub sent_kbps: f64,
    /// Packets received (each sequence number once).
    pub received_packets: u64,
    /// Payload bytes received.
    pub received_bytes: u64,
    /// Payload received per second between the first and the last arrival, kbit/s.
    pub received_kbps: f64,
    /// Received packets whose sequence number had already arrived.
    pub duplicates: u64,
    /// Datagrams that were not valid packets (ignored).
    pub bad_packets: u64,
    /// Packets missing below the highest sequence number received.
    pub lost_packets: u64,
    /// lost / (lost + received), 0..1.
    pub loss: f64,
    /// Median one-way delay of the received packets, ms.
    pub delay_p50_ms: f64,
    /// 95th-percentile one-way delay of the received packets, ms.
    pub delay_p95_ms: f64,
    /// Highest one-way delay, ms.
    pub delay_max_ms: f64,
}

/// What the sending half did.
#[derive(Debug, Default, Clone, Copy)]
struct Sent {
    packets: u64,
    bytes: u64,
    errors: u64,
    first: Option<Instant>,
    last: Option<Instant>,
}

fn summary(
    role: &'static str,
    peer: Option<SocketAddr>,
    a: &StreamArgs,
    sent: &Sent,
    rec: &Recorder,
) -> Summary {
    let sending_s = match (sent.first, sent.last) {
        (Some(f), Some(l)) => (l - f).as_secs_f64(),
        _ => 0.0,
    };
    // The rate over whole intervals: n packets span n - 1 intervals, plus the last one's.
    let interval_s = a.payload_bytes as f64 * 8.0 / (a.rate_kbps * 1000.0);
    let kbps = |bytes: u64, secs: f64| {
        if secs > 0.0 {
            bytes as f64 * 8.0 / 1000.0 / secs
        } else {
            0.0
        }
    };
    let mut delays: Vec<u64> = rec
        .arrivals()
        .iter()
        .map(|x| x.received_us.saturating_sub(x.sent_us))
        .collect();
    let span_s = match (rec.arrivals().first(), rec.arrivals().last()) {
        (Some(f), Some(l)) if rec.packets > 1 => {
            l.received_us.saturating_sub(f.received_us) as f64 / 1e6 + interval_s
        }
        _ => 0.0,
    };
    let lost = rec.lost();
    Summary {
        kind: "summary",
        role,
        peer: peer.map(|p| p.to_string()),
        rate_kbps: a.rate_kbps,
        payload_bytes: a.payload_bytes,
        sent_packets: sent.packets,
        sent_bytes: sent.bytes,
        send_errors: sent.errors,
        sending_s,
        sent_kbps: kbps(
            sent.bytes,
            if sent.packets > 0 {
                sending_s + interval_s
            } else {
                0.0
            },
        ),
        received_packets: rec.packets,
        received_bytes: rec.bytes,
        received_kbps: kbps(rec.bytes, span_s),
        duplicates: rec.duplicates,
        bad_packets: rec.bad,
        lost_packets: lost,
        loss: if lost + rec.packets > 0 {
            lost as f64 / (lost + rec.packets) as f64
        } else {
            0.0
        },
        delay_p50_ms: quantile(&mut delays, 0.5) as f64 / 1e3,
        delay_p95_ms: quantile(&mut delays, 0.95) as f64 / 1e3,
        delay_max_ms: delays.iter().max().copied().unwrap_or(0) as f64 / 1e3,
    }
}

fn print_summary(s: &Summary, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string(s)?);
    } else {
        println!(
            "{}: sent {} packets ({:.0} kbit/s), received {} ({:.0} kbit/s), lost {} ({:.2}%), \
             {} duplicate, {} bad; one-way delay p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms",
            s.role,
            s.sent_packets,
            s.sent_kbps,
            s.received_packets,
            s.received_kbps,
            s.lost_packets,
            100.0 * s.loss,
            s.duplicates,
            s.bad_packets,
            s.delay_p50_ms,
            s.delay_p95_ms,
            s.delay_max_ms
        );
    }
    Ok(())
}

fn check(a: &StreamArgs) -> Result<()> {
    if !(a.rate_kbps.is_finite() && a.rate_kbps > 0.0 && a.rate_kbps <= 10_000_000.0) {
        bail!(
            "--rate-kbps must be above 0 and at most 10,000,000, got {}",
            a.rate_kbps
        );
    }
    if !(HEADER_BYTES..=MAX_PAYLOAD_BYTES).contains(&a.payload_bytes) {
        bail!(
            "--payload-bytes must be {HEADER_BYTES} to {MAX_PAYLOAD_BYTES}, got {}",
            a.payload_bytes
        );
    }
    if let Some(d) = a.duration {
        if !(d.is_finite() && d > 0.0 && d <= 86_400.0) {
            bail!("--duration must be above 0 and at most 86400 seconds, got {d}");
        }
    }
    if !(a.linger.is_finite() && (0.0..=3600.0).contains(&a.linger)) {
        bail!("--linger must be 0 to 3600 seconds, got {}", a.linger);
    }
    Ok(())
}

fn now_us() -> u64 {
    monotonic_ns() / 1000
}

/// Runs one side: `peer` is the server's address for the client, `None` for the server
/// (learned from the first valid packet). Writes the CSV if asked; returns the summary.
fn run_side(
    role: &'static str,
    sock: UdpSocket,
    mut peer: Option<SocketAddr>,
    a: &StreamArgs,
) -> Result<Summary> {
    check(a)?;
    let (send_dir, recv_dir) = if role == "client" {
        (Dir::Up, Dir::Down)
    } else {
        (Dir::Down, Dir::Up)
    };
    let signals = SignalWatcher::new().context("installing signal handlers")?;
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
            Err(e) => return Err(e).context("receiving"),
        }
    }
    if let Some(path) = &a.csv {
        write_csv(path, &rec)?;
    }
    Ok(summary(role, peer, a, &sent, &rec))
}

fn write_csv(path: &Path, rec: &Recorder) -> Result<()> {
    let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = BufWriter::new(file);
    rec.write_csv(&mut w)
        .and_then(|_| w.flush())
        .with_context(|| format!("writing {}", path.display()))
}

/// Runs `sprout interactive`.
pub fn run(a: InteractiveArgs) -> Result<()> {
    match a.role {
        Role::Server { listen, stream } => {
            check(&stream)?;
            let sock =
                UdpSocket::bind(listen).with_context(|| format!("cannot listen on {listen}"))?;
            eprintln!(
                "sprout interactive server listening on {}",
                sock.local_addr()?
            );
            print_summary(&run_side("server", sock, None, &stream)?, stream.json)
        }
        Role::Client { connect, stream } => {
            check(&stream)?;
            let local: SocketAddr = if connect.is_ipv4() {
                "0.0.0.0:0".parse()?
            } else {
                "[::]:0".parse()?
            };
            let sock = UdpSocket::bind(local).context("binding a UDP socket")?;
            print_summary(
                &run_side("client", sock, Some(connect), &stream)?,
                stream.json,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(dir: Dir, seq: u64, sent_us: u64, len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len];
        encode(Stamp { dir, seq, sent_us }, &mut b);
        b
    }

    #[test]
    fn packets_round_trip_and_bad_ones_are_refused() {
        let p = packet(Dir::Down, 7, 1_000, 1000);
        assert_eq!(
            decode(&p, Dir::Down, 2_000),
            Some(Stamp {
                dir: Dir::Down,
                seq: 7,
                sent_us: 1_000
            })
        );
        // Wrong direction, from the future, too short, bad magic, sequence too high.
        assert_eq!(decode(&p, Dir::Up, 2_000), None);
        assert_eq!(decode(&p, Dir::Down, 999), None);
        assert_eq!(decode(&p[..HEADER_BYTES - 1], Dir::Down, 2_000), None);
        let mut q = p.clone();
        q[0] = b'X';
        assert_eq!(decode(&q, Dir::Down, 2_000), None);
        assert_eq!(
            decode(&packet(Dir::Down, MAX_SEQ + 1, 0, 24), Dir::Down, 1),
            None
        );
        assert!(decode(&packet(Dir::Down, MAX_SEQ, 0, 24), Dir::Down, 1).is_some());
        assert_eq!(decode(&[], Dir::Up, 0), None);
    }

    #[test]
    fn recorder_counts_losses_duplicates_and_bad_packets() {
        let mut r = Recorder::new(Dir::Up);
        for (seq, sent, recv) in [(0, 0, 30_000), (1, 16_000, 50_000), (3, 48_000, 90_000)] {
            assert!(r
                .on_datagram(&packet(Dir::Up, seq, sent, 100), recv)
                .is_some());
        }
        assert!(r
            .on_datagram(&packet(Dir::Up, 1, 16_000, 100), 95_000)
            .is_none());
        assert!(r
            .on_datagram(&packet(Dir::Down, 4, 0, 100), 95_000)
            .is_none());
        assert!(r.on_datagram(b"hello", 95_000).is_none());
        r.on_foreign();
        assert_eq!(
            (r.packets, r.bytes, r.duplicates, r.bad, r.lost()),
            (3, 300, 1, 3, 1)
        );
        let mut csv = Vec::new();
        r.write_csv(&mut csv).unwrap();
        assert_eq!(
            String::from_utf8(csv).unwrap(),
            "direction,seq,sent_us,received_us,bytes\nup,0,0,30000,100\nup,1,16000,50000,100\n\
             up,3,48000,90000,100\n"
        );
        // Delays 30, 34 and 42 ms: median 34, p95 42.
        let args = StreamArgs {
            rate_kbps: 50.0,
            payload_bytes: 100,
            duration: None,
            linger: 0.0,
            csv: None,
            json: true,
        };
        let s = summary("server", None, &args, &Sent::default(), &r);
        assert_eq!(
            (s.delay_p50_ms, s.delay_p95_ms, s.delay_max_ms),
            (34.0, 42.0, 42.0)
        );
        assert_eq!(s.lost_packets, 1);
        assert!((s.loss - 0.25).abs() < 1e-12);
        // 300 bytes over 60 ms of arrivals plus one 16 ms interval: 31.6 kbit/s.
        assert!(
            (s.received_kbps - 2.4 / 0.076).abs() < 1e-9,
            "{}",
            s.received_kbps
        );
    }

    #[test]
    fn quantiles_by_nearest_rank() {
        let mut v: Vec<u64> = (1..=100).rev().collect();
        assert_eq!(quantile(&mut v, 0.95), 95);
        assert_eq!(quantile(&mut v, 0.5), 50);
        assert_eq!(quantile(&mut [], 0.5), 0);
        assert_eq!(quantile(&mut [7], 0.95), 7);
    }

    #[test]
    fn a_client_and_a_server_stream_both_ways_on_loopback() {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = server.local_addr().unwrap();
        let args = StreamArgs {
            rate_kbps: 400.0,
            payload_bytes: 500,
            duration: Some(0.5),
            linger: 0.2,
            csv: None,
            json: true,
        };
        let a2 = args.clone();
        let t = std::thread::spawn(move || run_side("server", server, None, &a2));
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        let client_addr = client.local_addr().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("client.csv");
        let c = run_side(
            "client",
            client,
            Some(addr),
            &StreamArgs {
                csv: Some(csv.clone()),
                ..args
            },
        )
        .unwrap();
        let s = t.join().unwrap().unwrap();
        // 400 kbit/s of 500-byte packets: one every 10 ms, about 50 in 0.5 s each way.
        for x in [&c, &s] {
            assert!((40..=52).contains(&x.sent_packets), "{x:?}");
            assert_eq!(x.sent_bytes, 500 * x.sent_packets);
            assert!((x.sent_kbps - 400.0).abs() < 40.0, "{x:?}");
        }
        // Loopback loses nothing; each side lingers long enough for the other's last packet.
        assert_eq!(s.received_packets, c.sent_packets, "{s:?}");
        assert_eq!(c.received_packets, s.sent_packets, "{c:?}");
        assert_eq!((s.lost_packets, s.bad_packets, s.duplicates), (0, 0, 0));
        assert!(s.delay_p95_ms < 50.0, "{s:?}");
        assert_eq!(s.peer, Some(client_addr.to_string()));
        assert_eq!(c.peer, Some(addr.to_string()));
        let rows = std::fs::read_to_string(&csv).unwrap();
        assert_eq!(rows.lines().count() as u64, 1 + c.received_packets);
        assert!(rows.lines().nth(1).unwrap().starts_with("down,0,"));
    }
}
