//! The runtime's clock and sockets: `CLOCK_MONOTONIC` in µs, UDP sockets whose datagrams
//! carry their kernel receive time on that clock, waiting on them, and session ids.

use std::io;
use std::net::SocketAddr;
use std::time::Duration as StdDuration;

use sprout_core::time::Instant;

use sprout_os::clock::{monotonic, monotonic_ns, realtime_ns};
use sprout_os::udp_timestamps::{wait_readable, TimestampedUdp};

use crate::runtime::error::SaturatorError;

/// Socket buffers asked for, bytes.
const SOCKET_BUFFER_BYTES: usize = 4 << 20;
/// Largest datagram read, bytes.
pub(crate) const RECV_BUFFER_BYTES: usize = 65_536;
/// Most datagrams read from a socket, or data packets sent, per loop iteration.
pub(crate) const BATCH: usize = 256;
/// A kernel stamp older than this (µs) is not believed (a clock step came between).
const STAMP_TRUST_US: i128 = 2_000_000;

/// `CLOCK_MONOTONIC` (read where all runtimes read it).
pub(crate) fn monotonic_now() -> Instant {
    monotonic()
}

/// `CLOCK_REALTIME` less `CLOCK_MONOTONIC` now, ns: what turns a kernel receive stamp
/// (realtime) into monotonic time.
pub(crate) fn realtime_offset_ns() -> i128 {
    i128::from(realtime_ns()) - i128::from(monotonic_ns())
}

/// One datagram read: its length (one more than the buffer if it was truncated), source and
/// arrival time (on `CLOCK_MONOTONIC`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Received {
    pub(crate) len: usize,
    pub(crate) from: SocketAddr,
    pub(crate) at: Instant,
}

/// A non-blocking UDP socket that reads kernel receive timestamps.
pub(crate) struct Sock {
    pub(crate) sock: TimestampedUdp,
}

impl Sock {
    /// A socket bound to `bind`.
    pub(crate) fn new(bind: SocketAddr) -> Result<Sock, SaturatorError> {
        let sock = TimestampedUdp::bind(bind, SOCKET_BUFFER_BYTES)
            .map_err(|source| SaturatorError::Bind { addr: bind, source })?;
        Ok(Sock { sock })
    }

    /// A socket connected to `remote` from an ephemeral port.
    pub(crate) fn connected(remote: SocketAddr) -> Result<Sock, SaturatorError> {
        let sock = TimestampedUdp::connected(remote, SOCKET_BUFFER_BYTES).map_err(|source| {
            SaturatorError::Connect {
                addr: remote,
                source,
            }
        })?;
        Ok(Sock { sock })
    }

    pub(crate) fn send_to(&self, data: &[u8], to: SocketAddr) -> io::Result<()> {
        self.sock.send_to(data, to)
    }

    pub(crate) fn send(&self, data: &[u8]) -> io::Result<()> {
        self.sock.send(data)
    }

    /// Reads one datagram, if one is waiting; its arrival time from the kernel's stamp
    /// (`CLOCK_REALTIME` less `rt_offset_ns`, see [`realtime_offset_ns`]) when plausible
    /// (within the last 2 s), else `now`.
    pub(crate) fn recv(
        &self,
        buf: &mut [u8],
        rt_offset_ns: i128,
        now: Instant,
    ) -> io::Result<Option<Received>> {
        let Some(d) = self.sock.recv(buf)? else {
            return Ok(None);
        };
        let mut at = now;
        if let Some(rt) = d.stamp_realtime_ns {
            let mono_us = (rt - rt_offset_ns) / 1000;
            let now_us = i128::from(now.as_micros());
            if mono_us <= now_us && mono_us + STAMP_TRUST_US >= now_us {
                at = Instant::from_micros(mono_us as u64);
            }
        }
        let len = if d.truncated { buf.len() + 1 } else { d.len };
        Ok(Some(Received {
            len,
            from: d.from,
            at,
        }))
    }
}

/// Waits until a socket is readable or `until` (on `CLOCK_MONOTONIC`) passes, at most 50 ms
/// (so that signals are noticed).
pub(crate) fn wait(socks: &[&Sock], until: Instant) {
    let us = (until - monotonic_now()).as_micros().min(50_000);
    let socks: Vec<&TimestampedUdp> = socks.iter().map(|s| &s.sock).collect();
    // A failed poll is a short wait: the loop around it reads and waits again.
    let _ = wait_readable(&socks, StdDuration::from_micros(us));
}

/// A random session id (never 0).
pub(crate) fn random_session() -> u64 {
    let mut b = [0u8; 8];
    let v = match getrandom::getrandom(&mut b) {
        Ok(()) => u64::from_ne_bytes(b),
        Err(_) => monotonic_ns() ^ (u64::from(std::process::id()) << 32),
    };
    v.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagrams_are_stamped_on_the_monotonic_clock() {
        let s = Sock::new("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = s.sock.local_addr().unwrap();
        let t = Sock::connected(addr).unwrap();
        t.send(b"x").unwrap();
        let mut buf = [0u8; 64];
        let mut got = None;
        for _ in 0..100 {
            let now = monotonic_now();
            if let Some(r) = s.recv(&mut buf, realtime_offset_ns(), now).unwrap() {
                got = Some((r, now));
                break;
            }
            std::thread::sleep(StdDuration::from_millis(1));
        }
        let (r, now) = got.expect("a datagram");
        assert_eq!(r.len, 1);
        assert_eq!(r.from, t.sock.local_addr().unwrap());
        assert!(
            r.at <= now && r.at + sprout_core::time::Duration::from_secs(1) > now,
            "kernel stamp near now"
        );
    }
}
