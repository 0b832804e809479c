//! The measurements through the tunnel: ICMP echo from the client's namespace to the relay's
//! tunnel address, and a TCP download from the relay's namespace. Every loop looks at a stop
//! flag at least every 100 ms, so an interrupted run ends at once.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use super::report::PingStats;

/// Time between echo requests.
pub(super) const PING_INTERVAL: Duration = Duration::from_millis(200);
/// An echo request unanswered this long counts as lost.
const PING_TIMEOUT: Duration = Duration::from_secs(2);
/// The pings' phase: before the download.
pub(super) const PHASE_ALONE: u8 = 0;
/// The pings' phase: during the download.
pub(super) const PHASE_LOADED: u8 = 1;
/// The pings' phase: over (send no more, wait for the last answers).
pub(super) const PHASE_DONE: u8 = 2;
/// Bytes of each write of the download.
const CHUNK: usize = 64 * 1024;

/// The internet checksum (RFC 1071).
fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An ICMP echo request with identifier `id` and sequence number `seq`.
fn echo_request(id: u16, seq: u16) -> Vec<u8> {
    let mut req = vec![8u8, 0, 0, 0];
    req.extend_from_slice(&id.to_be_bytes());
    req.extend_from_slice(&seq.to_be_bytes());
    req.extend_from_slice(b"sprout tunnel try ping");
    let c = checksum(&req);
    req[2..4].copy_from_slice(&c.to_be_bytes());
    req
}

/// The sequence number of an echo reply from `from` with identifier `id` in the IPv4 packet
/// `buf` (a raw socket's read), if it is one.
fn echo_reply_seq(buf: &[u8], from: Ipv4Addr, id: u16) -> Option<u16> {
    let ihl = usize::from(*buf.first()? & 0x0f) * 4;
    let icmp = buf.get(ihl..)?;
    if buf.get(12..16)? != from.octets() || icmp.len() < 8 || icmp[0] != 0 {
        return None;
    }
    (icmp[4..6] == id.to_be_bytes()).then(|| u16::from_be_bytes([icmp[6], icmp[7]]))
}

/// Pings `dst` every [`PING_INTERVAL`] from a raw ICMP socket in the calling thread's
/// namespace while `phase` is [`PHASE_ALONE`] or [`PHASE_LOADED`], each request counted in the
/// phase it was sent in; then waits up to [`PING_TIMEOUT`] for the last answers (not when
/// `stop`). Returns (alone, loaded).
pub(super) fn ping(
    dst: Ipv4Addr,
    phase: &AtomicU8,
    stop: &AtomicBool,
) -> std::io::Result<(PingStats, PingStats)> {
    let sock = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::ICMPV4))?;
    sock.set_read_timeout(Some(Duration::from_millis(20)))?;
    let to = SockAddr::from(SocketAddrV4::new(dst, 0));
    let id = (std::process::id() & 0xffff) as u16;
    // (phase, sent at, round trip) per sequence number - 1.
    let mut sent: Vec<(u8, Instant, Option<Duration>)> = Vec::new();
    let mut next = Instant::now();
    let mut done_at: Option<Instant> = None;
    let mut buf = [0u8; 2048];
    loop {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let now = Instant::now();
        let p = phase.load(Ordering::Relaxed);
        if p == PHASE_DONE {
            let at = *done_at.get_or_insert(now);
            let waiting = sent
                .iter()
                .any(|s| s.2.is_none() && now - s.1 < PING_TIMEOUT);
            if !waiting || now - at >= PING_TIMEOUT {
                break;
            }
        } else if now >= next {
            let seq = (sent.len() + 1) as u16;
            sent.push((p, now, None));
            // A request that cannot be sent counts as lost.
            let _ = sock.send_to(&echo_request(id, seq), &to);
            next += PING_INTERVAL;
        }
        if let Ok(n) = (&sock).read(&mut buf) {
            let at = Instant::now();
            if let Some(seq) = echo_reply_seq(&buf[..n], dst, id) {
                if let Some(s) = sent.get_mut(usize::from(seq).wrapping_sub(1)) {
                    if s.2.is_none() && at - s.1 < PING_TIMEOUT {
                        s.2 = Some(at - s.1);
                    }
                }
            }
        }
    }
    let stats = |want: u8| PingStats {
        sent: sent.iter().filter(|s| s.0 == want).count(),
        rtts_ms: sent
            .iter()
            .filter(|s| s.0 == want)
            .filter_map(|s| s.2.map(|d| d.as_secs_f64() * 1000.0))
            .collect(),
    };
    Ok((stats(PHASE_ALONE), stats(PHASE_LOADED)))
}

/// The download's server: binds `addr` (in the calling thread's namespace) and, on a thread,
/// sends one connection bytes for `seconds`, then closes it. Returns the bound address.
pub(super) fn serve_download(
    addr: Ipv4Addr,
    seconds: f64,
    stop: Arc<AtomicBool>,
) -> std::io::Result<(SocketAddr, thread::JoinHandle<()>)> {
    let listener = TcpListener::bind(SocketAddr::from((addr, 0)))?;
    listener.set_nonblocking(true)?;
    let bound = listener.local_addr()?;
    let handle = thread::spawn(move || {
        let conn = loop {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            match listener.accept() {
                Ok((c, _)) => break c,
                Err(_) => thread::sleep(Duration::from_millis(20)),
            }
        };
        let _ = send_for(conn, Duration::from_secs_f64(seconds), &stop);
    });
    Ok((bound, handle))
}

/// Writes to `conn` until `length` has passed or `stop`, then shuts it down.
fn send_for(mut conn: TcpStream, length: Duration, stop: &AtomicBool) -> std::io::Result<()> {
    conn.set_nonblocking(false)?;
    conn.set_write_timeout(Some(Duration::from_millis(100)))?;
    let data = vec![0x5au8; CHUNK];
    let until = Instant::now() + length;
    while Instant::now() < until && !stop.load(Ordering::Relaxed) {
        match conn.write(&data) {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(e),
        }
    }
    conn.shutdown(std::net::Shutdown::Write)
}

/// The download's client, in the calling thread's namespace: connects to `server`, reads
/// until the server closes, `deadline` or `stop`; returns (bytes, seconds from the
/// connection to the last byte).
pub(super) fn download(
    server: SocketAddr,
    deadline: Instant,
    stop: &AtomicBool,
) -> std::io::Result<(u64, f64)> {
    let mut s = TcpStream::connect_timeout(&server, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_millis(100)))?;
    let started = Instant::now();
    let mut last = started;
    let mut total = 0u64;
    let mut buf = vec![0u8; CHUNK];
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                total += n as u64;
                last = Instant::now();
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(e),
        }
    }
    Ok((total, (last - started).as_secs_f64()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_echo_reply_is_recognised_by_source_and_identifier() {
        let src = Ipv4Addr::new(10, 77, 0, 1);
        let mut reply = echo_request(0x1234, 7);
        reply[0] = 0;
        let mut packet = vec![0x45u8, 0, 0, 0, 0, 0, 0, 0, 64, 1, 0, 0];
        packet.extend_from_slice(&src.octets());
        packet.extend_from_slice(&[10, 77, 0, 2]);
        packet.extend_from_slice(&reply);
        assert_eq!(echo_reply_seq(&packet, src, 0x1234), Some(7));
        assert_eq!(echo_reply_seq(&packet, src, 0x1235), None);
        assert_eq!(
            echo_reply_seq(&packet, Ipv4Addr::new(10, 77, 0, 9), 0x1234),
            None
        );
        assert_eq!(echo_reply_seq(&packet[..20], src, 0x1234), None);
        assert_eq!(echo_reply_seq(&[], src, 0x1234), None);
        // The request itself (type 8) is not a reply.
        let n = packet.len();
        packet[n - reply.len()] = 8;
        assert_eq!(echo_reply_seq(&packet, src, 0x1234), None);
        assert_eq!(checksum(&echo_request(1, 1)), 0);
    }
}
