//! The packets of the interactive stream (header: magic, direction, sequence number, send time)
//! and the receiver's record of them.

use std::io::{self, Write};

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

/// Direction of a packet: `Up` from client to server, `Down` from server to client (the one
/// direction type).
pub use sprout_core::direction::Direction;

/// The direction's byte in the packet's header.
fn dir_byte(dir: Direction) -> u8 {
    match dir {
        Direction::Up => 0,
        Direction::Down => 1,
    }
}

/// The header of a valid packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// Direction.
    pub dir: Direction,
    /// Sequence number, from 0.
    pub seq: u64,
    /// Send time, µs of `CLOCK_MONOTONIC`.
    pub sent_us: u64,
}

/// Writes a packet's header into `buf` (at least [`HEADER_BYTES`] long); the rest of `buf` is
/// left as it is (zeros).
pub fn encode(stamp: Stamp, buf: &mut [u8]) {
    buf[..4].copy_from_slice(&MAGIC);
    buf[4] = dir_byte(stamp.dir);
    buf[5..8].fill(0);
    buf[8..16].copy_from_slice(&stamp.seq.to_be_bytes());
    buf[16..24].copy_from_slice(&stamp.sent_us.to_be_bytes());
}

/// Reads a packet's header; `None` for anything that is not a packet of direction `dir`
/// stamped at or before `now_us` with a sequence number up to [`MAX_SEQ`].
pub fn decode(data: &[u8], dir: Direction, now_us: u64) -> Option<Stamp> {
    if data.len() < HEADER_BYTES || data[..4] != MAGIC || data[4] != dir_byte(dir) {
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
    dir: Direction,
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
    pub fn new(dir: Direction) -> Recorder {
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
                self.dir.as_str(),
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
