//! The flood of bogus handshake initiations sent to the server while the sessions run.

use std::net::{SocketAddr, UdpSocket};
use std::thread;
use std::time::{Duration, Instant};

use crate::load::error::LoadError;

/// The flood is sent in bursts this far apart.
const FLOOD_BURST: Duration = Duration::from_millis(5);

/// Sends `count` bogus handshake initiations to `to`, evenly over `seconds` (in bursts every
/// [`FLOOD_BURST`]).
pub(crate) fn flood(to: SocketAddr, count: u64, seconds: f64) -> Result<u64, LoadError> {
    let sock = UdpSocket::bind("127.0.0.1:0").map_err(LoadError::FloodSocket)?;
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut buf = vec![0u8; 8 + 32 + 48 + 32 + 16];
    let start = Instant::now();
    let mut sent = 0;
    let mut i = 0u64;
    while i < count {
        // As many as are due by now.
        let due_by = (start.elapsed().as_secs_f64() / seconds.max(1e-3) * count as f64).ceil();
        let due = (due_by as u64).clamp(i + 1, count);
        while i < due {
            // Magic, version 2, type 1 (initiation), reserved; the rest random (xorshift:
            // this only needs to look random to the server, not to resist analysis).
            buf[..4].copy_from_slice(&[0x53, 2, 1, 0]);
            for b in buf[4..].iter_mut() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                *b = state as u8;
            }
            if sock.send_to(&buf, to).is_ok() {
                sent += 1;
            }
            i += 1;
        }
        if i < count {
            thread::sleep(FLOOD_BURST);
        }
    }
    Ok(sent)
}
