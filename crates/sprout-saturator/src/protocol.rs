//! The Saturator (the paper's §4.1), sans-IO: record a link's delivery opportunities by keeping
//! its queue backlogged with MTU-sized packets and writing down when each one arrives.
//!
//! - [`Sender`]: keeps a window of packets in flight and adjusts it so that the measured
//!   round-trip time stays between a low and a high mark (750 ms and 3000 ms by default, the
//!   paper's): the window grows by one packet per newly acknowledged packet while the RTT is
//!   below the low mark, shrinks by an eighth while it is above the high mark (at most once per
//!   round trip: only an acknowledgement of a packet sent after the last decrease can shrink it
//!   again, so the old samples of one long queue, or of an outage, count once), and holds in
//!   between. While the window is full it still sends one probe every
//!   [`SenderConfig::probe_interval_us`] without any acknowledgement, so that an outage of any
//!   length (or the loss of everything in flight) cannot wedge it; the window recovers from the
//!   first acknowledgement after.
//! - [`Recorder`]: records every valid data packet's arrival (ms since the recording's start),
//!   counts loss (sequence gaps), reordering (a sequence number below the highest seen, not seen
//!   before), duplicates, stray and malformed datagrams, and produces the feedback
//!   ([`AckInfo`]: the highest sequence number, the echo of its send time and how long the ack
//!   was held, enough for the sender's RTT).
//! - The wire format ([`Message`], [`encode`], [`decode`]) and the end-of-recording transfer of
//!   a recording ([`encode_result`], [`decode_result`]).
//! - [`Summary`]: duration, mean and peak rate (1 s bins), longest gap, outages, loss,
//!   reordering, duplicates, strays, in text ([`Summary::text`]) and JSON (serde).
//!
//! Times are microseconds (`_us`) of the caller's clock (the `sprout saturator` command uses
//! `CLOCK_MONOTONIC`), passed in; nothing here reads a clock or does IO beyond writing a trace
//! to a `Write`. Everything from the network is checked: no panic, saturating arithmetic,
//! bounded state.
//!
//! Trace output: one line per recorded data packet, the whole millisecond of its arrival
//! counted from the recording's start (`floor((arrival_us - start_us) / 1000)`), sorted, as
//! mahimahi reads it: each line stands for one opportunity of [`DEFAULT_MTU_BYTES`] bytes (the
//! data packets are MTU-sized: 1472 bytes of UDP payload in 1500-byte IPv4 packets).

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

/// First four bytes of every Saturator datagram.
pub const MAGIC: [u8; 4] = *b"SPSA";
/// Wire format version.
pub const VERSION: u8 = 1;
/// Bytes of the header every message starts with: magic, version, kind, direction, flags,
/// session id.
pub const COMMON_BYTES: usize = 16;
/// Bytes of a data packet's header without a piggybacked ack: common header, sequence number,
/// send time, the sender's window and RTT.
pub const DATA_HEADER_BYTES: usize = COMMON_BYTES + 24;
/// Bytes of an [`AckInfo`] on the wire.
pub const ACK_INFO_BYTES: usize = 40;
/// The IP packet size the Saturator fills by default, bytes (an Ethernet MTU).
pub const DEFAULT_MTU_BYTES: u32 = 1500;
/// IPv4 and UDP headers, bytes: an IP packet of [`DEFAULT_MTU_BYTES`] carries 1472 bytes of UDP
/// payload.
pub const IPV4_UDP_OVERHEAD_BYTES: u32 = 28;
/// Default UDP payload of a data packet, bytes (1500 - 28).
pub const DEFAULT_PAYLOAD_BYTES: u32 = DEFAULT_MTU_BYTES - IPV4_UDP_OVERHEAD_BYTES;
/// Smallest data payload accepted, bytes (room for the header and a piggybacked ack).
pub const MIN_PAYLOAD_BYTES: u32 = 128;
/// Largest data payload accepted, bytes (the largest UDP payload over IPv4).
pub const MAX_PAYLOAD_BYTES: u32 = 65_507;
/// Default low RTT mark, µs: the window grows while the RTT is below it (paper: 750 ms).
pub const DEFAULT_LOW_RTT_US: u64 = 750_000;
/// Default high RTT mark, µs: the window shrinks while the RTT is above it (paper: 3000 ms).
pub const DEFAULT_HIGH_RTT_US: u64 = 3_000_000;
/// Default probe interval, µs: with the window full, one packet is still sent this often.
pub const DEFAULT_PROBE_INTERVAL_US: u64 = 200_000;
/// A data packet whose sequence number is this far above the highest one seen is not believed
/// (counted as malformed), so that one bogus packet cannot claim millions of losses.
pub const MAX_SEQ_JUMP: u64 = 1 << 24;
/// Sequence numbers remembered for duplicate detection (a sliding window below the highest).
pub const SEEN_WINDOW: u64 = 1 << 20;
/// Default limit of recorded arrivals (4 bytes each): about 4 hours at 1400 packets/s.
/// Arrivals beyond it are counted ([`Summary::unrecorded`]), not recorded.
pub const DEFAULT_MAX_ARRIVALS: usize = 20_000_000;
/// Seconds of per-second bookkeeping kept (about 12 days); later seconds are not tracked.
pub const MAX_SECONDS: usize = 1 << 20;
/// A gap between arrivals at least this long counts as an outage in the summary, ms.
pub const OUTAGE_MS: u64 = 1000;
/// A second in which some packet arrived with less queueing delay than this (its one-way delay
/// minus the smallest of the recording) counts as possibly short of backlog, µs.
pub const LOW_BACKLOG_US: i64 = 50_000;
/// Bytes of recording data in one [`Message::ResultChunk`].
pub const CHUNK_BYTES: usize = 1200;
/// Largest recording transfer accepted, bytes.
pub const MAX_BLOB_BYTES: usize = 256 << 20;
/// Longest recording name carried in a hello, bytes.
pub const MAX_NAME_BYTES: usize = 100;

/// Direction of a data flow: `Up` from the mobile (client) to the server, `Down` back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    /// Mobile (client) to server.
    Up,
    /// Server to mobile (client).
    Down,
}

impl Dir {
    /// "up" or "down" (also the recording's file suffix).
    pub fn name(self) -> &'static str {
        match self {
            Dir::Up => "up",
            Dir::Down => "down",
        }
    }

    /// The other direction.
    pub fn opposite(self) -> Dir {
        match self {
            Dir::Up => Dir::Down,
            Dir::Down => Dir::Up,
        }
    }

    fn byte(self) -> u8 {
        match self {
            Dir::Up => 0,
            Dir::Down => 1,
        }
    }

    fn from_byte(b: u8) -> Option<Dir> {
        match b {
            0 => Some(Dir::Up),
            1 => Some(Dir::Down),
            _ => None,
        }
    }
}

/// Which directions a recording saturates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Only the uplink (the client sends, the server records).
    Up,
    /// Only the downlink (the server sends, the client records).
    Down,
    /// Both at once.
    Both,
}

impl Mode {
    /// Whether the direction is saturated in this mode.
    pub fn has(self, dir: Dir) -> bool {
        matches!(
            (self, dir),
            (Mode::Both, _) | (Mode::Up, Dir::Up) | (Mode::Down, Dir::Down)
        )
    }

    /// "up", "down" or "both".
    pub fn name(self) -> &'static str {
        match self {
            Mode::Up => "up",
            Mode::Down => "down",
            Mode::Both => "both",
        }
    }

    fn byte(self) -> u8 {
        match self {
            Mode::Up => 0,
            Mode::Down => 1,
            Mode::Both => 2,
        }
    }

    fn from_byte(b: u8) -> Option<Mode> {
        match b {
            0 => Some(Mode::Up),
            1 => Some(Mode::Down),
            2 => Some(Mode::Both),
            _ => None,
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        match s {
            "up" => Ok(Mode::Up),
            "down" => Ok(Mode::Down),
            "both" => Ok(Mode::Both),
            _ => Err(format!(
                "unknown direction '{s}' (expected up, down or both)"
            )),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Wire format
// ---------------------------------------------------------------------------------------------

/// Flag: the datagram was sent over the feedback path (acks, keepalives, hellos).
pub const FLAG_FEEDBACK_PATH: u8 = 0x01;
/// Flag: a data packet carries an [`AckInfo`]; an ack carries one (else it is a keepalive).
pub const FLAG_ACK_INFO: u8 = 0x02;
/// Flag: a data packet is a probe, sent with the window full.
pub const FLAG_PROBE: u8 = 0x04;
/// Flag (hello): the client sends its feedback over a separate path.
pub const FLAG_USES_FEEDBACK: u8 = 0x08;

const KIND_HELLO: u8 = 1;
const KIND_HELLO_ACK: u8 = 2;
const KIND_BUSY: u8 = 3;
const KIND_DATA: u8 = 4;
const KIND_ACK: u8 = 5;
const KIND_FIN: u8 = 6;
const KIND_FIN_ACK: u8 = 7;
const KIND_RESULT_REQUEST: u8 = 8;
const KIND_RESULT_CHUNK: u8 = 9;
const KIND_DONE: u8 = 10;

/// Feedback about one direction's data: what the receiver has seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckInfo {
    /// Highest sequence number received.
    pub highest_seq: u64,
    /// The send time (sender's clock, µs) carried by the packet with that sequence number.
    pub echo_sent_us: u64,
    /// How long the receiver held that packet's arrival before this ack left, µs (so that the
    /// sender's RTT does not include the ack's delay).
    pub ack_delay_us: u32,
    /// Data packets received so far (duplicates included).
    pub received: u64,
    /// Packets missing below the highest sequence number (sequence gaps not filled since).
    pub lost: u64,
    /// The queueing delay of the echoed packet as the receiver sees it: its one-way delay
    /// (arrival on the receiver's clock minus its send stamp) minus the smallest one-way delay
    /// of the recording, µs (saturated). Clock offsets cancel; the sender uses it to leave the
    /// reverse path's queue out of its RTT when feedback shares a loaded path.
    pub queue_delay_us: u32,
}

/// A data packet's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataHeader {
    /// Session id.
    pub session: u64,
    /// Direction of the data.
    pub dir: Dir,
    /// Sequence number, from 0.
    pub seq: u64,
    /// Send time, µs of the sender's clock.
    pub sent_us: u64,
    /// The sender's window when it sent this, packets (for progress lines).
    pub window: u32,
    /// The sender's smoothed RTT when it sent this, ms (0 before the first sample).
    pub rtt_ms: u32,
    /// Sent as a probe with the window full.
    pub probe: bool,
    /// Feedback about the opposite direction's data, piggybacked.
    pub ack: Option<AckInfo>,
}

/// A client's request to start a recording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    /// Session id (random, chosen by the client).
    pub session: u64,
    /// Directions to saturate.
    pub mode: Mode,
    /// UDP payload of the data packets, bytes.
    pub payload_bytes: u32,
    /// Low RTT mark for both senders, ms.
    pub low_rtt_ms: u32,
    /// High RTT mark for both senders, ms.
    pub high_rtt_ms: u32,
    /// Largest window of both senders, packets (at least 1).
    pub max_window: u32,
    /// Sent over the feedback path (else over the data path).
    pub feedback_path: bool,
    /// The client sends its feedback over a separate path.
    pub uses_feedback: bool,
    /// The recording's name (letters, digits, `.`, `_`, `-`; may be empty), for files the
    /// server writes.
    pub name: String,
}

/// How a finished recording will be transferred: its length, chunk count and checksum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResultMeta {
    /// Session id.
    pub session: u64,
    /// Bytes of the encoded recording (0: nothing to transfer).
    pub blob_len: u32,
    /// Number of chunks.
    pub chunks: u32,
    /// FNV-1a (32 bit) of the encoded recording.
    pub checksum: u32,
}

/// One message of the Saturator's protocol (a UDP payload).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message<'a> {
    /// Client → server: start (repeated until answered).
    Hello(Hello),
    /// Server → client: the session is running.
    HelloAck {
        /// Session id.
        session: u64,
        /// Flags (FLAG_FEEDBACK_PATH when answering a hello from the feedback path).
        flags: u8,
    },
    /// Server → client: another recording is running.
    Busy {
        /// The refused session id.
        session: u64,
    },
    /// A data packet (the rest of the datagram is padding).
    Data(DataHeader),
    /// Feedback about `dir`'s data; without info, a keepalive.
    Ack {
        /// Session id.
        session: u64,
        /// Direction of the data acknowledged.
        dir: Dir,
        /// Sent over the feedback path.
        feedback_path: bool,
        /// What the receiver has seen, if anything yet.
        info: Option<AckInfo>,
    },
    /// Client → server: the recording is over.
    Fin {
        /// Session id.
        session: u64,
        /// Sent over the feedback path.
        feedback_path: bool,
    },
    /// Server → client: recording over; how its uplink recording will be transferred.
    FinAck(ResultMeta),
    /// Client → server: send chunks `first .. first + count`.
    ResultRequest {
        /// Session id.
        session: u64,
        /// First chunk wanted.
        first: u32,
        /// Number of chunks wanted.
        count: u32,
    },
    /// Server → client: one chunk of the encoded recording.
    ResultChunk {
        /// Transfer description (same in every chunk).
        meta: ResultMeta,
        /// Index of this chunk.
        index: u32,
        /// The chunk's bytes.
        data: &'a [u8],
    },
    /// Client → server: everything received; the session may end.
    Done {
        /// Session id.
        session: u64,
    },
}

impl Message<'_> {
    /// The session id the message belongs to.
    pub fn session(&self) -> u64 {
        match self {
            Message::Hello(h) => h.session,
            Message::Data(d) => d.session,
            Message::FinAck(m) => m.session,
            Message::ResultChunk { meta, .. } => meta.session,
            Message::HelloAck { session, .. }
            | Message::Busy { session }
            | Message::Ack { session, .. }
            | Message::Fin { session, .. }
            | Message::ResultRequest { session, .. }
            | Message::Done { session } => *session,
        }
    }
}

/// Why a datagram is not a valid message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Shorter than its kind's fixed part.
    #[error("too short")]
    TooShort,
    /// Not starting with [`MAGIC`].
    #[error("bad magic")]
    BadMagic,
    /// Another wire version.
    #[error("unknown version {0}")]
    BadVersion(u8),
    /// Unknown message kind.
    #[error("unknown kind {0}")]
    BadKind(u8),
    /// A field out of its range.
    #[error("invalid field: {0}")]
    BadField(&'static str),
}

/// Big-endian writer helpers.
fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_be_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_be_bytes());
}

fn put_common(out: &mut Vec<u8>, kind: u8, dir: Dir, flags: u8, session: u64) {
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
    out.push(kind);
    out.push(dir.byte());
    out.push(flags);
    put_u64(out, session);
}

fn put_ack_info(out: &mut Vec<u8>, a: &AckInfo) {
    put_u64(out, a.highest_seq);
    put_u64(out, a.echo_sent_us);
    put_u32(out, a.ack_delay_us);
    put_u64(out, a.received);
    put_u64(out, a.lost);
    put_u32(out, a.queue_delay_us);
}

fn put_meta(out: &mut Vec<u8>, m: &ResultMeta) {
    put_u32(out, m.blob_len);
    put_u32(out, m.chunks);
    put_u32(out, m.checksum);
}

/// Encodes `msg` into `out` (cleared first). A data packet is padded with zeros to
/// `payload_bytes` (at least its header); other messages ignore `payload_bytes`.
pub fn encode(msg: &Message<'_>, payload_bytes: usize, out: &mut Vec<u8>) {
    out.clear();
    match msg {
        Message::Hello(h) => {
            let mut flags = 0;
            if h.feedback_path {
                flags |= FLAG_FEEDBACK_PATH;
            }
            if h.uses_feedback {
                flags |= FLAG_USES_FEEDBACK;
            }
            put_common(out, KIND_HELLO, Dir::Up, flags, h.session);
            out.push(h.mode.byte());
            out.push(0);
            put_u32(out, h.payload_bytes);
            put_u32(out, h.low_rtt_ms);
            put_u32(out, h.high_rtt_ms);
            put_u32(out, h.max_window);
            let name = h.name.as_bytes();
            let n = name.len().min(MAX_NAME_BYTES);
            out.push(n as u8);
            out.extend_from_slice(&name[..n]);
        }
        Message::HelloAck { session, flags } => {
            put_common(out, KIND_HELLO_ACK, Dir::Down, *flags, *session)
        }
        Message::Busy { session } => put_common(out, KIND_BUSY, Dir::Down, 0, *session),
        Message::Data(d) => {
            let mut flags = 0;
            if d.probe {
                flags |= FLAG_PROBE;
            }
            if d.ack.is_some() {
                flags |= FLAG_ACK_INFO;
            }
            put_common(out, KIND_DATA, d.dir, flags, d.session);
            put_u64(out, d.seq);
            put_u64(out, d.sent_us);
            put_u32(out, d.window);
            put_u32(out, d.rtt_ms);
            if let Some(a) = &d.ack {
                put_ack_info(out, a);
            }
            if out.len() < payload_bytes {
                out.resize(payload_bytes, 0);
            }
        }
        Message::Ack {
            session,
            dir,
            feedback_path,
            info,
        } => {
            let mut flags = 0;
            if *feedback_path {
                flags |= FLAG_FEEDBACK_PATH;
            }
            if info.is_some() {
                flags |= FLAG_ACK_INFO;
            }
            put_common(out, KIND_ACK, *dir, flags, *session);
            if let Some(a) = info {
                put_ack_info(out, a);
            }
        }
        Message::Fin {
            session,
            feedback_path,
        } => {
            let flags = if *feedback_path {
                FLAG_FEEDBACK_PATH
            } else {
                0
            };
            put_common(out, KIND_FIN, Dir::Up, flags, *session);
        }
        Message::FinAck(m) => {
            put_common(out, KIND_FIN_ACK, Dir::Down, 0, m.session);
            put_meta(out, m);
        }
        Message::ResultRequest {
            session,
            first,
            count,
        } => {
            put_common(out, KIND_RESULT_REQUEST, Dir::Up, 0, *session);
            put_u32(out, *first);
            put_u32(out, *count);
        }
        Message::ResultChunk { meta, index, data } => {
            put_common(out, KIND_RESULT_CHUNK, Dir::Down, 0, meta.session);
            put_meta(out, meta);
            put_u32(out, *index);
            out.extend_from_slice(data);
        }
        Message::Done { session } => put_common(out, KIND_DONE, Dir::Up, 0, *session),
    }
}

/// Reads big-endian fields from a slice, failing with [`DecodeError::TooShort`].
struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self.at.checked_add(n).ok_or(DecodeError::TooShort)?;
        let s = self.buf.get(self.at..end).ok_or(DecodeError::TooShort)?;
        self.at = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, DecodeError> {
        let s = self.take(4)?;
        Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }

    fn u64(&mut self) -> Result<u64, DecodeError> {
        let s = self.take(8)?;
        let mut b = [0u8; 8];
        b.copy_from_slice(s);
        Ok(u64::from_be_bytes(b))
    }

    fn rest(&self) -> &'a [u8] {
        self.buf.get(self.at..).unwrap_or(&[])
    }

    fn ack_info(&mut self) -> Result<AckInfo, DecodeError> {
        Ok(AckInfo {
            highest_seq: self.u64()?,
            echo_sent_us: self.u64()?,
            ack_delay_us: self.u32()?,
            received: self.u64()?,
            lost: self.u64()?,
            queue_delay_us: self.u32()?,
        })
    }

    fn meta(&mut self, session: u64) -> Result<ResultMeta, DecodeError> {
        let m = ResultMeta {
            session,
            blob_len: self.u32()?,
            chunks: self.u32()?,
            checksum: self.u32()?,
        };
        if m.blob_len as usize > MAX_BLOB_BYTES {
            return Err(DecodeError::BadField("recording too large"));
        }
        if m.chunks as usize != (m.blob_len as usize).div_ceil(CHUNK_BYTES) {
            return Err(DecodeError::BadField("chunk count"));
        }
        Ok(m)
    }
}

/// Whether `name` is an acceptable recording name: at most [`MAX_NAME_BYTES`] of ASCII letters,
/// digits, `.`, `_` and `-`, not starting with `.`.
pub fn valid_name(name: &str) -> bool {
    name.len() <= MAX_NAME_BYTES
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Decodes a datagram. Never panics; every field is checked (lengths, version, kind,
/// direction, ranges of the hello's parameters, the transfer's sizes).
pub fn decode(buf: &[u8]) -> Result<Message<'_>, DecodeError> {
    if buf.len() < COMMON_BYTES {
        return Err(if buf.len() >= 4 && buf[..4] != MAGIC {
            DecodeError::BadMagic
        } else {
            DecodeError::TooShort
        });
    }
    if buf[..4] != MAGIC {
        return Err(DecodeError::BadMagic);
    }
    let mut r = Reader { buf, at: 4 };
    let version = r.u8()?;
    if version != VERSION {
        return Err(DecodeError::BadVersion(version));
    }
    let kind = r.u8()?;
    let dir = Dir::from_byte(r.u8()?).ok_or(DecodeError::BadField("direction"))?;
    let flags = r.u8()?;
    let session = r.u64()?;
    let feedback_path = flags & FLAG_FEEDBACK_PATH != 0;
    Ok(match kind {
        KIND_HELLO => {
            let mode = Mode::from_byte(r.u8()?).ok_or(DecodeError::BadField("mode"))?;
            r.u8()?;
            let payload_bytes = r.u32()?;
            let low_rtt_ms = r.u32()?;
            let high_rtt_ms = r.u32()?;
            let max_window = r.u32()?;
            let n = r.u8()? as usize;
            let name = r.take(n)?;
            if !(MIN_PAYLOAD_BYTES..=MAX_PAYLOAD_BYTES).contains(&payload_bytes) {
                return Err(DecodeError::BadField("payload size"));
            }
            if low_rtt_ms == 0 || low_rtt_ms >= high_rtt_ms || high_rtt_ms > 3_600_000 {
                return Err(DecodeError::BadField("RTT marks"));
            }
            if max_window == 0 {
                return Err(DecodeError::BadField("window"));
            }
            let name = std::str::from_utf8(name).map_err(|_| DecodeError::BadField("name"))?;
            if !valid_name(name) {
                return Err(DecodeError::BadField("name"));
            }
            Message::Hello(Hello {
                session,
                mode,
                payload_bytes,
                low_rtt_ms,
                high_rtt_ms,
                max_window,
                feedback_path,
                uses_feedback: flags & FLAG_USES_FEEDBACK != 0,
                name: name.to_string(),
            })
        }
        KIND_HELLO_ACK => Message::HelloAck { session, flags },
        KIND_BUSY => Message::Busy { session },
        KIND_DATA => {
            let seq = r.u64()?;
            let sent_us = r.u64()?;
            let window = r.u32()?;
            let rtt_ms = r.u32()?;
            let ack = if flags & FLAG_ACK_INFO != 0 {
                Some(r.ack_info()?)
            } else {
                None
            };
            Message::Data(DataHeader {
                session,
                dir,
                seq,
                sent_us,
                window,
                rtt_ms,
                probe: flags & FLAG_PROBE != 0,
                ack,
            })
        }
        KIND_ACK => {
            let info = if flags & FLAG_ACK_INFO != 0 {
                Some(r.ack_info()?)
            } else {
                None
            };
            Message::Ack {
                session,
                dir,
                feedback_path,
                info,
            }
        }
        KIND_FIN => Message::Fin {
            session,
            feedback_path,
        },
        KIND_FIN_ACK => Message::FinAck(r.meta(session)?),
        KIND_RESULT_REQUEST => Message::ResultRequest {
            session,
            first: r.u32()?,
            count: r.u32()?,
        },
        KIND_RESULT_CHUNK => {
            let meta = r.meta(session)?;
            let index = r.u32()?;
            let data = r.rest();
            if index >= meta.chunks {
                return Err(DecodeError::BadField("chunk index"));
            }
            let start = index as usize * CHUNK_BYTES;
            let expected = (meta.blob_len as usize - start).min(CHUNK_BYTES);
            if data.len() != expected {
                return Err(DecodeError::BadField("chunk length"));
            }
            Message::ResultChunk { meta, index, data }
        }
        KIND_DONE => Message::Done { session },
        k => return Err(DecodeError::BadKind(k)),
    })
}

// ---------------------------------------------------------------------------------------------
// Sender
// ---------------------------------------------------------------------------------------------

/// The sender's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SenderConfig {
    /// Grow the window while the RTT is below this, µs (paper: 750 ms).
    pub low_rtt_us: u64,
    /// Shrink the window while the RTT is above this, µs (paper: 3000 ms).
    pub high_rtt_us: u64,
    /// Window at the start, packets.
    pub initial_window: u32,
    /// The window never shrinks below this, packets.
    pub min_window: u32,
    /// The window never grows above this, packets.
    pub max_window: u32,
    /// With the window full, one probe is sent when nothing was sent for this long, µs.
    pub probe_interval_us: u64,
}

impl Default for SenderConfig {
    /// 750 ms / 3000 ms, initial window 16, min 4, max 100 000, probes every 200 ms.
    fn default() -> Self {
        SenderConfig {
            low_rtt_us: DEFAULT_LOW_RTT_US,
            high_rtt_us: DEFAULT_HIGH_RTT_US,
            initial_window: 16,
            min_window: 4,
            max_window: 100_000,
            probe_interval_us: DEFAULT_PROBE_INTERVAL_US,
        }
    }
}

impl SenderConfig {
    /// The default configuration with these RTT marks (µs) and largest window (packets; the
    /// initial and smallest windows are lowered to it if above).
    pub fn with(low_rtt_us: u64, high_rtt_us: u64, max_window: u32) -> SenderConfig {
        let d = SenderConfig::default();
        let max_window = max_window.max(1);
        SenderConfig {
            low_rtt_us,
            high_rtt_us,
            initial_window: d.initial_window.min(max_window),
            min_window: d.min_window.min(max_window),
            max_window,
            ..d
        }
    }

    /// Checks the parameters: 0 < low < high, 1 <= min <= initial <= max, probe interval > 0.
    pub fn validate(&self) -> Result<(), String> {
        if self.low_rtt_us == 0 || self.low_rtt_us >= self.high_rtt_us {
            return Err(format!(
                "the low RTT mark ({} ms) must be positive and below the high one ({} ms)",
                self.low_rtt_us / 1000,
                self.high_rtt_us / 1000
            ));
        }
        if self.min_window == 0
            || self.min_window > self.initial_window
            || self.initial_window > self.max_window
        {
            return Err(format!(
                "windows must satisfy 1 <= min ({}) <= initial ({}) <= max ({})",
                self.min_window, self.initial_window, self.max_window
            ));
        }
        if self.probe_interval_us == 0 {
            return Err("the probe interval must be positive".into());
        }
        Ok(())
    }
}

/// A packet the sender has decided to send now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outgoing {
    /// Its sequence number.
    pub seq: u64,
    /// Its send time (µs, the time given to [`Sender::poll_transmit`]).
    pub sent_us: u64,
    /// Sent beyond the window, as a probe.
    pub probe: bool,
}

/// Counters of a sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SenderStats {
    /// Data packets sent (probes included).
    pub packets_sent: u64,
    /// Of which probes.
    pub probes: u64,
    /// Acks taken (with information).
    pub acks: u64,
    /// Acks ignored as impossible (a sequence number never sent, an echo from the future).
    pub bogus_acks: u64,
    /// Window decreases.
    pub decreases: u64,
    /// Packets the receiver reported received (latest ack).
    pub peer_received: u64,
    /// Packets the receiver reported missing (latest ack).
    pub peer_lost: u64,
}

/// The saturating sender of one direction (see the module documentation for the rule).
#[derive(Clone, Debug)]
pub struct Sender {
    cfg: SenderConfig,
    session: u64,
    dir: Dir,
    start_us: u64,
    window: u64,
    next_seq: u64,
    /// Packets known to be done: highest acknowledged + 1.
    acked_through: u64,
    /// Send time of every packet in flight is not kept; the last send time drives probes.
    last_send_us: Option<u64>,
    /// A decrease needs an ack of a sequence number at or above this.
    decrease_mark: u64,
    srtt_us: Option<u64>,
    last_rtt_us: Option<u64>,
    min_rtt_us: Option<u64>,
    judged_rtt_us: Option<u64>,
    stopped: bool,
    stats: SenderStats,
}

impl Sender {
    /// A sender of `dir`'s data for `session`, starting at `now_us`. The configuration should
    /// have passed [`SenderConfig::validate`]; out-of-range values are clamped.
    pub fn new(cfg: SenderConfig, session: u64, dir: Dir, now_us: u64) -> Sender {
        let min = u64::from(cfg.min_window.max(1));
        let max = u64::from(cfg.max_window).max(min);
        let window = u64::from(cfg.initial_window).clamp(min, max);
        Sender {
            cfg,
            session,
            dir,
            start_us: now_us,
            window,
            next_seq: 0,
            acked_through: 0,
            last_send_us: None,
            decrease_mark: 0,
            srtt_us: None,
            last_rtt_us: None,
            min_rtt_us: None,
            judged_rtt_us: None,
            stopped: false,
            stats: SenderStats::default(),
        }
    }

    fn min_window(&self) -> u64 {
        u64::from(self.cfg.min_window.max(1))
    }

    fn max_window(&self) -> u64 {
        u64::from(self.cfg.max_window).max(self.min_window())
    }

    /// The window, packets.
    pub fn window(&self) -> u64 {
        self.window
    }

    /// Packets sent and not yet acknowledged (those below the highest acknowledged sequence
    /// number count as done, received or lost).
    pub fn in_flight(&self) -> u64 {
        self.next_seq.saturating_sub(self.acked_through)
    }

    /// Smoothed RTT (EWMA, gain 1/8), µs; `None` before the first sample.
    pub fn srtt_us(&self) -> Option<u64> {
        self.srtt_us
    }

    /// The latest RTT sample, µs.
    pub fn last_rtt_us(&self) -> Option<u64> {
        self.last_rtt_us
    }

    /// The smallest RTT sample so far, µs.
    pub fn min_rtt_us(&self) -> Option<u64> {
        self.min_rtt_us
    }

    /// The RTT the window rule last judged, µs: the latest sample, or less when the ack said
    /// the forward queue held less than the sample's excess over the minimum RTT.
    pub fn judged_rtt_us(&self) -> Option<u64> {
        self.judged_rtt_us
    }

    /// Counters.
    pub fn stats(&self) -> SenderStats {
        self.stats
    }

    /// The direction sent.
    pub fn dir(&self) -> Dir {
        self.dir
    }

    /// Stops sending (the recording is over).
    pub fn stop(&mut self) {
        self.stopped = true;
    }

    /// The next packet to send at `now_us`, if any: one while fewer than the window are in
    /// flight, else a probe if nothing was sent for [`SenderConfig::probe_interval_us`].
    /// The packet counts as sent; see [`unsend`](Sender::unsend).
    pub fn poll_transmit(&mut self, now_us: u64) -> Option<Outgoing> {
        if self.stopped {
            return None;
        }
        let probe = if self.in_flight() < self.window {
            false
        } else {
            match self.last_send_us {
                Some(t) if now_us < t.saturating_add(self.cfg.probe_interval_us) => return None,
                _ => true,
            }
        };
        let out = Outgoing {
            seq: self.next_seq,
            sent_us: now_us,
            probe,
        };
        self.next_seq += 1;
        self.last_send_us = Some(now_us);
        self.stats.packets_sent += 1;
        if probe {
            self.stats.probes += 1;
        }
        Some(out)
    }

    /// Takes back the packet just returned by [`poll_transmit`](Sender::poll_transmit) (the
    /// socket would not take it). Only the latest packet can be taken back.
    pub fn unsend(&mut self, out: &Outgoing) {
        if out.seq + 1 == self.next_seq && self.next_seq > self.acked_through {
            self.next_seq -= 1;
            self.stats.packets_sent = self.stats.packets_sent.saturating_sub(1);
            if out.probe {
                self.stats.probes = self.stats.probes.saturating_sub(1);
            }
        }
    }

    /// The header of `out` as this sender sends it (with its window and RTT).
    pub fn data_header(&self, out: &Outgoing, ack: Option<AckInfo>) -> DataHeader {
        DataHeader {
            session: self.session,
            dir: self.dir,
            seq: out.seq,
            sent_us: out.sent_us,
            window: u32::try_from(self.window).unwrap_or(u32::MAX),
            rtt_ms: self
                .srtt_us
                .map_or(0, |r| u32::try_from(r / 1000).unwrap_or(u32::MAX)),
            probe: out.probe,
            ack,
        }
    }

    /// When the sender next wants to send without an ack (its next probe), µs; `None` when
    /// stopped. Call [`poll_transmit`](Sender::poll_transmit) until it returns `None` first.
    pub fn next_timeout_us(&self) -> Option<u64> {
        if self.stopped {
            return None;
        }
        if self.in_flight() < self.window {
            return Some(self.start_us);
        }
        Some(self.last_send_us.map_or(self.start_us, |t| {
            t.saturating_add(self.cfg.probe_interval_us)
        }))
    }

    /// Takes feedback at `now_us`. Impossible feedback (a sequence number not sent yet, an echo
    /// later than now or earlier than the start) is counted and ignored.
    pub fn on_ack(&mut self, now_us: u64, a: &AckInfo) {
        if a.highest_seq >= self.next_seq
            || a.echo_sent_us > now_us
            || a.echo_sent_us < self.start_us
        {
            self.stats.bogus_acks += 1;
            return;
        }
        self.stats.acks += 1;
        // Growth counts packets both newly acknowledged and newly received (not the ones lost
        // in the gaps the ack jumps over).
        let delivered = a.received.saturating_sub(self.stats.peer_received);
        self.stats.peer_received = self.stats.peer_received.max(a.received);
        self.stats.peer_lost = a.lost;
        let through = a.highest_seq + 1;
        let newly = through.saturating_sub(self.acked_through).min(delivered);
        self.acked_through = self.acked_through.max(through);
        let rtt = now_us
            .saturating_sub(a.echo_sent_us)
            .saturating_sub(u64::from(a.ack_delay_us));
        self.last_rtt_us = Some(rtt);
        self.srtt_us = Some(match self.srtt_us {
            None => rtt,
            Some(s) => (s * 7 + rtt) / 8,
        });
        let min_rtt = self.min_rtt_us.map_or(rtt, |m| m.min(rtt));
        self.min_rtt_us = Some(min_rtt);
        // The RTT the rule judges: the measured one, or less when the receiver saw less queue
        // on the way here than the RTT holds beyond its minimum (the rest is the feedback's
        // own queue, on a shared loaded path). Never more than the measured RTT.
        let rtt = rtt.min(min_rtt.saturating_add(u64::from(a.queue_delay_us)));
        self.judged_rtt_us = Some(rtt);
        if rtt < self.cfg.low_rtt_us {
            self.window = self.window.saturating_add(newly).min(self.max_window());
        } else if rtt > self.cfg.high_rtt_us && a.highest_seq >= self.decrease_mark {
            let cut = (self.window / 8).max(1);
            self.window = self.window.saturating_sub(cut).max(self.min_window());
            self.decrease_mark = self.next_seq;
            self.stats.decreases += 1;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Recorder
// ---------------------------------------------------------------------------------------------

/// The recorder's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecorderConfig {
    /// UDP payload of a data packet, bytes: other sizes are malformed.
    pub payload_bytes: u32,
    /// Bytes each recorded line stands for (rates in the summary), bytes (the IP packet).
    pub line_bytes: u32,
    /// An ack leaves at most this long after the first arrival it covers, µs.
    pub ack_interval_us: u64,
    /// An ack leaves at once when this many arrivals are not acknowledged yet.
    pub ack_every: u32,
    /// Most arrivals recorded (later ones are counted, not recorded).
    pub max_arrivals: usize,
}

impl Default for RecorderConfig {
    /// 1472-byte payloads (1500-byte lines), acks every 20 ms or 16 packets, 20 M arrivals.
    fn default() -> Self {
        RecorderConfig {
            payload_bytes: DEFAULT_PAYLOAD_BYTES,
            line_bytes: DEFAULT_MTU_BYTES,
            ack_interval_us: 20_000,
            ack_every: 16,
            max_arrivals: DEFAULT_MAX_ARRIVALS,
        }
    }
}

/// What the recorder made of a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A new packet, in order (possibly after a gap).
    InOrder,
    /// A new packet below the highest sequence number seen.
    Reordered,
    /// A packet seen before (still recorded: it crossed the link).
    Duplicate,
    /// Not this recording's (another session or direction); ignored.
    Stray,
    /// Broken (wrong size, impossible sequence number); ignored.
    Malformed,
    /// Arrived after the recording ended; ignored.
    Late,
}

/// Counters of a recorder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecorderCounters {
    /// Data packets recorded (one trace line each; duplicates included).
    pub packets: u64,
    /// Distinct sequence numbers received.
    pub unique: u64,
    /// Packets missing below the highest sequence number (gaps not filled later).
    pub lost: u64,
    /// Packets that arrived below the highest sequence number without having arrived before.
    pub reordered: u64,
    /// Packets that had arrived before.
    pub duplicates: u64,
    /// Datagrams of another session or direction (or from an unknown peer), ignored.
    pub strays: u64,
    /// Datagrams that are not valid Saturator messages, or data of the wrong size or with an
    /// impossible sequence number, ignored.
    pub malformed: u64,
    /// Data packets after the end of the recording, ignored.
    pub late: u64,
    /// Data packets beyond [`RecorderConfig::max_arrivals`], counted but not recorded.
    pub unrecorded: u64,
}

/// The recording of one direction.
#[derive(Clone, Debug)]
pub struct Recorder {
    cfg: RecorderConfig,
    session: u64,
    dir: Dir,
    start_us: u64,
    end_us: Option<u64>,
    arrivals_ms: Vec<u32>,
    highest: Option<u64>,
    seen: Vec<u64>,
    /// Smallest one-way delay (arrival minus send stamp, two clocks) per second of recording.
    owd_min: Vec<i64>,
    counters: RecorderCounters,
    /// Ack state: arrivals not acknowledged yet, the first one's time, and the echo.
    unacked: u32,
    first_unacked_us: u64,
    echo_sent_us: u64,
    echo_arrival_us: u64,
    echo_queue_delay_us: u32,
    /// Smallest one-way delay of the recording (two clocks), µs.
    min_owd: Option<i64>,
    last_arrival_us: Option<u64>,
}

impl Recorder {
    /// A recording of `dir`'s data of `session`, whose time 0 is `start_us`.
    pub fn new(cfg: RecorderConfig, session: u64, dir: Dir, start_us: u64) -> Recorder {
        Recorder {
            cfg,
            session,
            dir,
            start_us,
            end_us: None,
            arrivals_ms: Vec::new(),
            highest: None,
            seen: vec![0; (SEEN_WINDOW / 64) as usize],
            owd_min: Vec::new(),
            counters: RecorderCounters::default(),
            unacked: 0,
            first_unacked_us: 0,
            echo_sent_us: 0,
            echo_arrival_us: 0,
            echo_queue_delay_us: 0,
            min_owd: None,
            last_arrival_us: None,
        }
    }

    /// The direction recorded.
    pub fn dir(&self) -> Dir {
        self.dir
    }

    /// Time 0 of the recording (µs of the caller's clock).
    pub fn start_us(&self) -> u64 {
        self.start_us
    }

    /// When the recording ended, if it has.
    pub fn end_us(&self) -> Option<u64> {
        self.end_us
    }

    /// Counters so far.
    pub fn counters(&self) -> RecorderCounters {
        self.counters
    }

    /// Highest sequence number received.
    pub fn highest_seq(&self) -> Option<u64> {
        self.highest
    }

    /// The recorded arrivals, ms since the start, in arrival order.
    pub fn arrivals_ms(&self) -> &[u32] {
        &self.arrivals_ms
    }

    /// Counts a datagram that is not this recording's (another session, an unknown peer).
    pub fn on_stray(&mut self) {
        self.counters.strays = self.counters.strays.saturating_add(1);
    }

    /// Counts a datagram that is not a valid message.
    pub fn on_malformed(&mut self) {
        self.counters.malformed = self.counters.malformed.saturating_add(1);
    }

    fn bit(seq: u64) -> (usize, u64) {
        let i = seq % SEEN_WINDOW;
        ((i / 64) as usize, 1u64 << (i % 64))
    }

    /// Takes a data packet of `len` bytes (UDP payload) that arrived at `now_us`.
    pub fn on_data(&mut self, now_us: u64, h: &DataHeader, len: usize) -> Verdict {
        if h.session != self.session || h.dir != self.dir {
            self.on_stray();
            return Verdict::Stray;
        }
        if len != self.cfg.payload_bytes as usize
            || self.highest.map_or(h.seq >= MAX_SEQ_JUMP, |hi| {
                h.seq > hi.saturating_add(MAX_SEQ_JUMP)
            })
        {
            self.on_malformed();
            return Verdict::Malformed;
        }
        if self.end_us.is_some() {
            self.counters.late = self.counters.late.saturating_add(1);
            return Verdict::Late;
        }
        let owd = (now_us as i128 - h.sent_us as i128).clamp(i64::MIN as i128 + 1, i64::MAX as i128)
            as i64;
        let min_owd = self.min_owd.map_or(owd, |m| m.min(owd));
        self.min_owd = Some(min_owd);
        let queue_delay_us = u32::try_from(owd.saturating_sub(min_owd)).unwrap_or(u32::MAX);
        let verdict = match self.highest {
            Some(hi) if h.seq <= hi => {
                if hi - h.seq >= SEEN_WINDOW {
                    // Too old to tell: an old packet arriving very late counts as reordered.
                    self.counters.reordered += 1;
                    Verdict::Reordered
                } else {
                    let (w, b) = Self::bit(h.seq);
                    if self.seen[w] & b != 0 {
                        self.counters.duplicates += 1;
                        Verdict::Duplicate
                    } else {
                        self.seen[w] |= b;
                        self.counters.unique += 1;
                        self.counters.reordered += 1;
                        self.counters.lost = self.counters.lost.saturating_sub(1);
                        Verdict::Reordered
                    }
                }
            }
            _ => {
                let from = self.highest.map_or(0, |hi| hi + 1);
                let gap = h.seq - from;
                self.counters.lost = self.counters.lost.saturating_add(gap);
                // Clear the bits of the sequence numbers entering the window (at most all).
                if gap + 1 >= SEEN_WINDOW {
                    self.seen.iter_mut().for_each(|w| *w = 0);
                } else {
                    for s in from..=h.seq {
                        let (w, b) = Self::bit(s);
                        self.seen[w] &= !b;
                    }
                }
                let (w, b) = Self::bit(h.seq);
                self.seen[w] |= b;
                self.highest = Some(h.seq);
                self.counters.unique += 1;
                self.echo_sent_us = h.sent_us;
                self.echo_arrival_us = now_us;
                self.echo_queue_delay_us = queue_delay_us;
                Verdict::InOrder
            }
        };
        self.counters.packets += 1;
        if self.arrivals_ms.len() < self.cfg.max_arrivals {
            let ms = now_us.saturating_sub(self.start_us) / 1000;
            self.arrivals_ms.push(u32::try_from(ms).unwrap_or(u32::MAX));
        } else {
            self.counters.unrecorded += 1;
        }
        let second = (now_us.saturating_sub(self.start_us) / 1_000_000) as usize;
        if second < MAX_SECONDS {
            if self.owd_min.len() <= second {
                self.owd_min.resize(second + 1, i64::MAX);
            }
            self.owd_min[second] = self.owd_min[second].min(owd);
        }
        if self.unacked == 0 {
            self.first_unacked_us = now_us;
        }
        self.unacked = self.unacked.saturating_add(1);
        self.last_arrival_us = Some(now_us);
        verdict
    }

    /// The feedback as of `now_us` (`None` before the first packet).
    pub fn ack_info(&self, now_us: u64) -> Option<AckInfo> {
        let highest_seq = self.highest?;
        Some(AckInfo {
            highest_seq,
            echo_sent_us: self.echo_sent_us,
            ack_delay_us: u32::try_from(now_us.saturating_sub(self.echo_arrival_us))
                .unwrap_or(u32::MAX),
            received: self.counters.packets,
            lost: self.counters.lost,
            queue_delay_us: self.echo_queue_delay_us,
        })
    }

    /// An ack if one is due at `now_us`: [`RecorderConfig::ack_every`] arrivals are waiting, or
    /// the first waiting one arrived [`RecorderConfig::ack_interval_us`] ago.
    pub fn poll_ack(&mut self, now_us: u64) -> Option<AckInfo> {
        if self.unacked == 0 {
            return None;
        }
        let due = self.unacked >= self.cfg.ack_every.max(1)
            || now_us
                >= self
                    .first_unacked_us
                    .saturating_add(self.cfg.ack_interval_us);
        if !due {
            return None;
        }
        self.unacked = 0;
        self.ack_info(now_us)
    }

    /// When the next ack is due if no more packets arrive, µs.
    pub fn next_ack_us(&self) -> Option<u64> {
        (self.unacked > 0).then(|| {
            self.first_unacked_us
                .saturating_add(self.cfg.ack_interval_us)
        })
    }

    /// Ends the recording at `now_us`: later data packets are ignored (counted as late).
    pub fn finish(&mut self, now_us: u64) {
        if self.end_us.is_none() {
            self.end_us = Some(now_us.max(self.start_us));
            self.unacked = 0;
        }
    }

    /// The recorded arrivals sorted (ms since the start), as the trace file holds them.
    pub fn sorted_arrivals_ms(&self) -> Vec<u32> {
        let mut v = self.arrivals_ms.clone();
        v.sort_unstable();
        v
    }

    /// Writes the mahimahi trace: one line per recorded packet, its arrival ms, sorted.
    pub fn write_trace(&self, w: &mut impl Write) -> io::Result<()> {
        write_trace(&self.sorted_arrivals_ms(), w)
    }

    /// Seconds of the recording in which some packet arrived with less than
    /// [`LOW_BACKLOG_US`] of queueing delay (one-way delay minus the recording's smallest):
    /// the sender may not have kept the queue busy all that second.
    pub fn low_backlog_seconds(&self) -> u64 {
        let Some(&min) = self.owd_min.iter().min() else {
            return 0;
        };
        self.owd_min
            .iter()
            .filter(|&&m| m != i64::MAX && m.saturating_sub(min) < LOW_BACKLOG_US)
            .count() as u64
    }

    /// The summary as of `now_us` (or the end, if the recording ended).
    pub fn summary(&self, now_us: u64) -> Summary {
        let end = self.end_us.unwrap_or(now_us).max(self.start_us);
        let mut s = Summary::from_arrivals(
            self.dir,
            &self.sorted_arrivals_ms(),
            end - self.start_us,
            self.cfg.line_bytes,
        );
        s.start_clock_us = self.start_us;
        s.highest_seq = self.highest;
        s.unique = self.counters.unique;
        s.lost = self.counters.lost;
        let expected = self.highest.map_or(0, |h| h + 1);
        s.loss_rate = if expected > 0 {
            self.counters.lost as f64 / expected as f64
        } else {
            0.0
        };
        s.reordered = self.counters.reordered;
        s.duplicates = self.counters.duplicates;
        s.strays = self.counters.strays;
        s.malformed = self.counters.malformed;
        s.late = self.counters.late;
        s.unrecorded = self.counters.unrecorded;
        s.low_backlog_seconds = self.low_backlog_seconds();
        s
    }
}

/// Writes arrival times (ms, sorted) as a mahimahi trace, one per line.
pub fn write_trace(arrivals_ms: &[u32], w: &mut impl Write) -> io::Result<()> {
    let mut out = io::BufWriter::new(w);
    for ms in arrivals_ms {
        writeln!(out, "{ms}")?;
    }
    out.flush()
}

// ---------------------------------------------------------------------------------------------
// Summary
// ---------------------------------------------------------------------------------------------

/// What a recording of one direction saw. Rates count [`RecorderConfig::line_bytes`] (1500) per
/// recorded packet, as a mahimahi trace line does.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Summary {
    /// "up" or "down".
    pub direction: String,
    /// Time 0 of the recording on the recording side's clock (µs; `CLOCK_MONOTONIC` for
    /// `sprout saturator`), so that two recordings on one host can be lined up.
    pub start_clock_us: u64,
    /// Length of the recording, s.
    pub duration_s: f64,
    /// Data packets recorded (trace lines).
    pub packets: u64,
    /// Mean rate over the recording, kbit/s.
    pub mean_kbps: f64,
    /// Highest rate over 1 s bins (from the start), kbit/s.
    pub peak_kbps: f64,
    /// Start of that bin, s.
    pub peak_at_s: f64,
    /// Longest time without an arrival (from the start to the first arrival, between arrivals,
    /// from the last to the end), ms.
    pub longest_gap_ms: u64,
    /// Where it began, s since the start.
    pub longest_gap_at_s: f64,
    /// Gaps of at least [`OUTAGE_MS`] between arrivals (or at either end).
    pub outages: u64,
    /// Their total length, s.
    pub outage_s: f64,
    /// Highest sequence number received.
    pub highest_seq: Option<u64>,
    /// Distinct sequence numbers received.
    pub unique: u64,
    /// Packets missing below the highest sequence number.
    pub lost: u64,
    /// lost / (highest + 1).
    pub loss_rate: f64,
    /// Packets that arrived below the highest sequence number, new.
    pub reordered: u64,
    /// Packets that had arrived before.
    pub duplicates: u64,
    /// Datagrams of another session or direction, or from an unknown peer (ignored).
    pub strays: u64,
    /// Datagrams that were not valid (ignored).
    pub malformed: u64,
    /// Data packets after the end (ignored).
    pub late: u64,
    /// Data packets beyond the recording limit (counted, not recorded).
    pub unrecorded: u64,
    /// Seconds in which some packet arrived with under 50 ms of queueing delay: the queue may
    /// have run empty then (the first second, while the window opens, usually is one).
    pub low_backlog_seconds: u64,
}

impl Summary {
    /// The timing figures of a recording from its sorted arrivals (ms since the start), its
    /// length (µs) and the bytes per line; the sequence counters are left at 0.
    pub fn from_arrivals(
        dir: Dir,
        sorted_ms: &[u32],
        duration_us: u64,
        line_bytes: u32,
    ) -> Summary {
        let duration_ms = duration_us / 1000;
        let line_bits = u64::from(line_bytes) * 8;
        let mut s = Summary {
            direction: dir.name().to_string(),
            duration_s: duration_us as f64 / 1e6,
            packets: sorted_ms.len() as u64,
            ..Summary::default()
        };
        if duration_us > 0 {
            s.mean_kbps = (s.packets * line_bits) as f64 / (duration_us as f64 / 1000.0);
        }
        // 1 s bins.
        let mut best = (0u64, 0u64);
        let mut i = 0;
        while i < sorted_ms.len() {
            let bin = u64::from(sorted_ms[i]) / 1000;
            let mut n = 0;
            while i < sorted_ms.len() && u64::from(sorted_ms[i]) / 1000 == bin {
                n += 1;
                i += 1;
            }
            if n > best.1 {
                best = (bin, n);
            }
        }
        s.peak_kbps = (best.1 * line_bits) as f64 / 1000.0;
        s.peak_at_s = best.0 as f64;
        // Gaps, including both ends.
        let mut consider = |from: u64, to: u64| {
            let gap = to.saturating_sub(from);
            if gap > s.longest_gap_ms {
                s.longest_gap_ms = gap;
                s.longest_gap_at_s = from as f64 / 1000.0;
            }
            if gap >= OUTAGE_MS {
                s.outages += 1;
                s.outage_s += gap as f64 / 1000.0;
            }
        };
        let mut prev = 0u64;
        for &t in sorted_ms {
            consider(prev, u64::from(t));
            prev = u64::from(t);
        }
        consider(prev, duration_ms.max(prev));
        s
    }

    /// One line of text: duration, packets, mean and peak rate, longest gap, outages, loss,
    /// reordering, duplicates, strays.
    pub fn text(&self) -> String {
        format!(
            "{}: {:.1} s, {} packets, mean {:.0} kbit/s, peak {:.0} kbit/s (1 s bins, at {:.0} s), \
             longest gap {} ms at {:.1} s, {} outage(s) >= 1 s ({:.1} s), lost {} ({:.2}%), \
             reordered {}, duplicates {}, strays {}, malformed {}, low-backlog seconds {}",
            self.direction,
            self.duration_s,
            self.packets,
            self.mean_kbps,
            self.peak_kbps,
            self.peak_at_s,
            self.longest_gap_ms,
            self.longest_gap_at_s,
            self.outages,
            self.outage_s,
            self.lost,
            100.0 * self.loss_rate,
            self.reordered,
            self.duplicates,
            self.strays,
            self.malformed,
            self.low_backlog_seconds
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Transfer of a recording
// ---------------------------------------------------------------------------------------------

const RESULT_MAGIC: [u8; 4] = *b"SPSR";

/// FNV-1a, 32 bit.
pub fn fnv1a32(data: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in data {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(buf: &[u8], at: &mut usize) -> Option<u64> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f).checked_shl(shift)?;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Encodes a recording for transfer: its summary (as JSON) and its sorted arrivals (ms,
/// delta-encoded varints: about one byte per packet).
pub fn encode_result(summary: &Summary, sorted_ms: &[u32]) -> Vec<u8> {
    let json = serde_json::to_vec(summary).unwrap_or_default();
    let mut out = Vec::with_capacity(16 + json.len() + sorted_ms.len() + 8);
    out.extend_from_slice(&RESULT_MAGIC);
    put_u32(&mut out, json.len() as u32);
    out.extend_from_slice(&json);
    put_varint(&mut out, sorted_ms.len() as u64);
    let mut prev = 0u32;
    for &t in sorted_ms {
        put_varint(&mut out, u64::from(t.saturating_sub(prev)));
        prev = prev.max(t);
    }
    out
}

/// Decodes a transferred recording: its summary and sorted arrivals (ms). Checks every length;
/// `None` if anything is off.
pub fn decode_result(blob: &[u8]) -> Option<(Summary, Vec<u32>)> {
    if blob.len() < 8 || blob[..4] != RESULT_MAGIC {
        return None;
    }
    let json_len = u32::from_be_bytes([blob[4], blob[5], blob[6], blob[7]]) as usize;
    let json = blob.get(8..8usize.checked_add(json_len)?)?;
    let summary: Summary = serde_json::from_slice(json).ok()?;
    let mut at = 8 + json_len;
    let count = get_varint(blob, &mut at)?;
    // Each arrival takes at least one byte.
    if count > (blob.len() - at) as u64 {
        return None;
    }
    let mut v = Vec::with_capacity(count as usize);
    let mut t: u64 = 0;
    for _ in 0..count {
        t = t.checked_add(get_varint(blob, &mut at)?)?;
        v.push(u32::try_from(t).ok()?);
    }
    (at == blob.len()).then_some((summary, v))
}

/// The largest transferred recording a sender of `packets_sent` packets can be owed, bytes:
/// room for the summary (64 KiB), and 5 bytes (the longest varint of a `u32`) for each of
/// twice the packets sent plus 1024 (duplicates made by the network are recorded too), at
/// most [`MAX_BLOB_BYTES`]. A client refuses a larger announcement rather than reserve its
/// size: a hostile or broken server cannot make it hold 256 MiB for a short recording.
pub fn max_result_bytes(packets_sent: u64) -> usize {
    let arrivals = packets_sent.saturating_mul(2).saturating_add(1024);
    let bytes = arrivals.saturating_mul(5).saturating_add(64 * 1024 + 16);
    usize::try_from(bytes).map_or(MAX_BLOB_BYTES, |b| b.min(MAX_BLOB_BYTES))
}

/// The description of a blob's transfer.
pub fn result_meta(session: u64, blob: &[u8]) -> ResultMeta {
    ResultMeta {
        session,
        blob_len: blob.len() as u32,
        chunks: blob.len().div_ceil(CHUNK_BYTES) as u32,
        checksum: fnv1a32(blob),
    }
}

/// Chunk `index` of `blob` (empty past the end).
pub fn chunk(blob: &[u8], index: u32) -> &[u8] {
    let start = (index as usize).saturating_mul(CHUNK_BYTES);
    if start >= blob.len() {
        return &[];
    }
    &blob[start..(start + CHUNK_BYTES).min(blob.len())]
}

/// Reassembles a transferred blob from chunks in any order, duplicates ignored.
#[derive(Clone, Debug)]
pub struct Reassembly {
    meta: ResultMeta,
    data: Vec<u8>,
    have: Vec<bool>,
    missing: u32,
}

impl Reassembly {
    /// An empty reassembly for `meta` (whose sizes [`decode`] checked).
    pub fn new(meta: ResultMeta) -> Reassembly {
        let blob_len = (meta.blob_len as usize).min(MAX_BLOB_BYTES);
        let chunks = blob_len.div_ceil(CHUNK_BYTES);
        Reassembly {
            meta,
            data: vec![0; blob_len],
            have: vec![false; chunks],
            missing: chunks as u32,
        }
    }

    /// The transfer's description.
    pub fn meta(&self) -> ResultMeta {
        self.meta
    }

    /// Takes chunk `index` (ignored if it does not fit the description).
    pub fn add(&mut self, meta: &ResultMeta, index: u32, data: &[u8]) {
        if *meta != self.meta {
            return;
        }
        let i = index as usize;
        let start = i.saturating_mul(CHUNK_BYTES);
        if i >= self.have.len() || self.have[i] {
            return;
        }
        let end = (start + CHUNK_BYTES).min(self.data.len());
        if data.len() != end - start {
            return;
        }
        self.data[start..end].copy_from_slice(data);
        self.have[i] = true;
        self.missing -= 1;
    }

    /// The first missing chunk and how many follow it missing (up to `max`).
    pub fn wanted(&self, max: u32) -> Option<(u32, u32)> {
        let first = self.have.iter().position(|h| !h)?;
        let count = self.have[first..]
            .iter()
            .take(max as usize)
            .take_while(|h| !**h)
            .count();
        Some((first as u32, count as u32))
    }

    /// Chunks still missing.
    pub fn missing(&self) -> u32 {
        self.missing
    }

    /// The blob, once complete and matching its checksum.
    pub fn complete(&self) -> Option<&[u8]> {
        (self.missing == 0 && fnv1a32(&self.data) == self.meta.checksum).then_some(&self.data[..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 0xfeed;

    fn data(seq: u64, sent_us: u64) -> DataHeader {
        DataHeader {
            session: S,
            dir: Dir::Down,
            seq,
            sent_us,
            window: 0,
            rtt_ms: 0,
            probe: false,
            ack: None,
        }
    }

    fn ack(highest_seq: u64, echo_sent_us: u64) -> AckInfo {
        AckInfo {
            highest_seq,
            echo_sent_us,
            ack_delay_us: 0,
            received: highest_seq + 1,
            lost: 0,
            queue_delay_us: u32::MAX,
        }
    }

    fn sender(initial: u32) -> Sender {
        let cfg = SenderConfig {
            initial_window: initial,
            ..SenderConfig::default()
        };
        Sender::new(cfg, S, Dir::Down, 0)
    }

    /// Sends everything the sender allows at `now`, returning how many.
    fn drain(s: &mut Sender, now: u64) -> u64 {
        let mut n = 0;
        while let Some(o) = s.poll_transmit(now) {
            if o.probe {
                break;
            }
            n += 1;
        }
        n
    }

    #[test]
    fn window_grows_below_the_low_mark_holds_between_and_shrinks_above() {
        let mut s = sender(10);
        assert_eq!(drain(&mut s, 0), 10, "the initial window");
        // Packets 0-4 acknowledged after 100 ms (< 750 ms): window 10 + 5 = 15, in flight 5,
        // so 10 more go out (seq 10-19).
        s.on_ack(100_000, &ack(4, 0));
        assert_eq!(s.window(), 15);
        assert_eq!(s.in_flight(), 5);
        assert_eq!(drain(&mut s, 100_000), 10);
        // RTT 1000 ms (between the marks): window held, 5 more acknowledged, 5 more sent.
        s.on_ack(1_000_000, &ack(9, 0));
        assert_eq!(s.window(), 15);
        assert_eq!(drain(&mut s, 1_000_000), 5);
        // RTT 3100 ms (> 3000 ms), ack of seq 14 >= the decrease mark 0: 15 - 15/8 = 14, and
        // the mark moves to the next sequence number, 25.
        s.on_ack(3_200_000, &ack(14, 100_000));
        assert_eq!(s.window(), 14);
        assert_eq!(s.stats().decreases, 1);
        // Another high sample, of seq 19 < 25: no second decrease in the same round trip.
        s.on_ack(3_300_000, &ack(19, 100_000));
        assert_eq!(s.window(), 14);
        // In flight: 25 sent - 20 done = 5 < 14, so 9 more (seq 25-33).
        assert_eq!(drain(&mut s, 3_300_000), 9);
        // Ack of seq 25 with RTT 3.5 s: decrease again, 14 - 1 = 13 (14 / 8 = 1).
        s.on_ack(6_900_000, &ack(25, 3_300_000));
        assert_eq!(s.window(), 13);
        assert!(s.srtt_us().is_some());
    }

    #[test]
    fn window_respects_its_bounds() {
        let cfg = SenderConfig {
            initial_window: 4,
            min_window: 4,
            max_window: 6,
            ..SenderConfig::default()
        };
        let mut s = Sender::new(cfg, S, Dir::Up, 0);
        drain(&mut s, 0);
        s.on_ack(10_000, &ack(3, 0));
        assert_eq!(s.window(), 6, "4 + 4 capped at 6");
        drain(&mut s, 10_000);
        s.on_ack(4_000_000, &ack(9, 10_000));
        assert_eq!(s.window(), 5, "6 - max(1, 6/8)");
        drain(&mut s, 4_000_000);
        s.on_ack(8_000_000, &ack(14, 4_000_000));
        assert_eq!(s.window(), 4, "not below the minimum");
    }

    #[test]
    fn ack_delay_is_taken_off_the_rtt() {
        let mut s = sender(10);
        drain(&mut s, 0);
        let mut a = ack(0, 0);
        a.ack_delay_us = 20_000;
        s.on_ack(800_000, &a);
        assert_eq!(s.last_rtt_us(), Some(780_000));
        assert_eq!(s.window(), 10, "780 ms is between the marks");
    }

    #[test]
    fn the_reverse_queue_is_left_out_of_the_judged_rtt() {
        let mut s = sender(10);
        drain(&mut s, 0);
        // A first sample of 40 ms sets the minimum (the window grows by the 2 packets).
        s.on_ack(40_000, &ack(1, 0));
        assert_eq!((s.min_rtt_us(), s.window()), (Some(40_000), 12));
        // 1.6 s measured, but the receiver saw only 300 ms of queue on the way: the other
        // 1.26 s were the feedback's own queue. Judged 40 + 300 = 340 ms < 750 ms: grow by 2.
        let mut a = ack(3, 0);
        a.queue_delay_us = 300_000;
        s.on_ack(1_600_000, &a);
        assert_eq!(s.last_rtt_us(), Some(1_600_000));
        assert_eq!(s.judged_rtt_us(), Some(340_000));
        assert_eq!(s.window(), 14);
        // A queue delay above the measured excess is not believed: judged = measured, 1 s.
        let mut a = ack(5, 600_000);
        a.queue_delay_us = 5_000_000;
        s.on_ack(1_600_000, &a);
        assert_eq!(s.judged_rtt_us(), Some(1_000_000));
        assert_eq!(s.window(), 14);
    }

    #[test]
    fn impossible_acks_are_ignored() {
        let mut s = sender(10);
        drain(&mut s, 1_000);
        s.on_ack(2_000, &ack(10, 1_000)); // seq 10 was never sent
        s.on_ack(2_000, &ack(3, 5_000)); // echo from the future
        s.on_ack(2_000, &ack(3, 0)); // echo before the start? start is 0: fine
        assert_eq!(s.stats().bogus_acks, 2);
        assert_eq!(s.stats().acks, 1);
    }

    #[test]
    fn a_full_window_probes_and_recovers_after_an_outage() {
        let mut s = sender(10);
        assert_eq!(drain(&mut s, 0), 10);
        // Window full: nothing until the probe interval has passed since the last send.
        assert_eq!(s.poll_transmit(100_000), None);
        assert_eq!(s.next_timeout_us(), Some(200_000));
        let p = s.poll_transmit(200_000).unwrap();
        assert!(p.probe);
        assert_eq!(p.seq, 10);
        assert_eq!(s.poll_transmit(300_000), None);
        // A 20 s outage: a probe every 200 ms, never more.
        let mut probes = 1;
        let mut t = 200_000;
        while t < 20_000_000 {
            t += 10_000;
            if let Some(p) = s.poll_transmit(t) {
                assert!(p.probe);
                probes += 1;
            }
        }
        assert_eq!(probes, 100);
        // After the outage the queue drains: the first ack (seq 5, sent at 0) shows a 20.1 s
        // RTT, one decrease (10 - 1 = 9); the sender still waits, 104 in flight.
        let mut a = ack(5, 0);
        a.received = 6;
        s.on_ack(20_100_000, &a);
        assert_eq!((s.window(), s.in_flight()), (9, 104));
        assert_eq!(drain(&mut s, 20_100_000), 0);
        // Everything else was lost but the last probe (seq 109, sent at 20 s): 150 ms RTT, the
        // window grows by the one packet delivered (not by the 103 lost) and opens: 10 go out.
        let mut a = ack(109, 20_000_000);
        a.received = 7;
        s.on_ack(20_150_000, &a);
        assert_eq!((s.window(), s.in_flight()), (10, 0));
        assert_eq!(drain(&mut s, 20_150_000), 10);
    }

    #[test]
    fn unsend_takes_back_the_last_packet() {
        let mut s = sender(2);
        let a = s.poll_transmit(0).unwrap();
        let b = s.poll_transmit(0).unwrap();
        s.unsend(&a); // not the latest: ignored
        s.unsend(&b);
        assert_eq!(s.stats().packets_sent, 1);
        assert_eq!(s.poll_transmit(0).unwrap().seq, 1);
    }

    fn recorder() -> Recorder {
        let cfg = RecorderConfig {
            payload_bytes: 200,
            ..RecorderConfig::default()
        };
        Recorder::new(cfg, S, Dir::Down, 1_000_000)
    }

    #[test]
    fn recorder_counts_loss_reordering_and_duplicates() {
        let mut r = recorder();
        // Sequence 0 1 2 5 3 3 7 9 4: gaps {3,4} at 5, {6} at 7, {8} at 9; 3 and 4 arrive late
        // (reordered, no longer lost); 3 again is a duplicate. Lost at the end: 6 and 8.
        let seqs = [0, 1, 2, 5, 3, 3, 7, 9, 4];
        let mut verdicts = Vec::new();
        for (i, &q) in seqs.iter().enumerate() {
            let now = 1_000_000 + 1_000 * i as u64;
            verdicts.push(r.on_data(now, &data(q, now - 500), 200));
        }
        use Verdict::*;
        assert_eq!(
            verdicts,
            [
                InOrder, InOrder, InOrder, InOrder, Reordered, Duplicate, InOrder, InOrder,
                Reordered
            ]
        );
        let c = r.counters();
        assert_eq!(c.packets, 9, "every arrival is a trace line");
        assert_eq!(c.unique, 8);
        assert_eq!(c.lost, 2);
        assert_eq!(c.reordered, 2);
        assert_eq!(c.duplicates, 1);
        assert_eq!(r.arrivals_ms(), &[0, 1, 2, 3, 4, 5, 6, 7, 8]);
        let s = r.summary(1_010_000);
        assert_eq!(s.highest_seq, Some(9));
        assert!((s.loss_rate - 0.2).abs() < 1e-12, "2 of 10");
    }

    #[test]
    fn recorder_ignores_strays_malformed_and_late() {
        let mut r = recorder();
        let mut other = data(0, 0);
        other.session = S + 1;
        assert_eq!(r.on_data(1_000_000, &other, 200), Verdict::Stray);
        other = data(0, 0);
        other.dir = Dir::Up;
        assert_eq!(r.on_data(1_000_000, &other, 200), Verdict::Stray);
        assert_eq!(r.on_data(1_000_000, &data(0, 0), 199), Verdict::Malformed);
        assert_eq!(
            r.on_data(1_000_000, &data(MAX_SEQ_JUMP, 0), 200),
            Verdict::Malformed
        );
        r.on_malformed();
        r.on_stray();
        assert_eq!(r.on_data(1_002_000, &data(0, 0), 200), Verdict::InOrder);
        r.finish(1_003_000);
        assert_eq!(r.on_data(1_004_000, &data(1, 0), 200), Verdict::Late);
        let c = r.counters();
        assert_eq!(
            (c.strays, c.malformed, c.packets, c.late, c.lost),
            (3, 3, 1, 1, 0)
        );
        assert_eq!(r.arrivals_ms(), &[2]);
    }

    #[test]
    fn duplicates_are_forgotten_after_the_window_but_never_counted_as_loss() {
        let mut r = recorder();
        r.on_data(1_000_000, &data(5, 0), 200);
        r.on_data(1_000_000, &data(5 + SEEN_WINDOW + 3, 0), 200);
        assert_eq!(r.counters().lost, 5 + SEEN_WINDOW + 2);
        // 5 is now beyond the window: counted as reordered, the loss is left alone.
        assert_eq!(r.on_data(1_000_000, &data(5, 0), 200), Verdict::Reordered);
        // 10 is within the window: a late arrival that fills a gap.
        assert_eq!(r.on_data(1_000_000, &data(10, 0), 200), Verdict::Reordered);
        assert_eq!(r.counters().lost, 5 + SEEN_WINDOW + 1);
    }

    #[test]
    fn acks_leave_every_16_packets_or_after_20_ms() {
        let mut r = recorder();
        assert_eq!(r.poll_ack(1_000_000), None);
        for i in 0..15 {
            r.on_data(1_000_000 + i * 100, &data(i, 500 + i), 200);
        }
        assert_eq!(r.poll_ack(1_001_500), None);
        assert_eq!(r.next_ack_us(), Some(1_020_000));
        r.on_data(1_001_600, &data(15, 900), 200);
        let a = r.poll_ack(1_001_700).unwrap();
        assert_eq!(a.highest_seq, 15);
        assert_eq!(a.echo_sent_us, 900);
        assert_eq!(a.ack_delay_us, 100);
        assert_eq!(a.received, 16);
        assert_eq!(r.poll_ack(1_001_700), None);
        r.on_data(1_005_000, &data(16, 1_000), 200);
        assert_eq!(r.poll_ack(1_024_999), None);
        let a = r.poll_ack(1_025_000).unwrap();
        assert_eq!((a.highest_seq, a.ack_delay_us), (16, 20_000));
    }

    #[test]
    fn acks_carry_the_forward_queueing_delay() {
        let mut r = recorder();
        // One-way delays (two clocks, offset 5 s): 5.020 s, then 5.520 s, then 5.010 s.
        r.on_data(1_000_000, &data(0, 10_000_000 + 1_000_000 - 5_020_000), 200);
        assert_eq!(r.ack_info(1_000_000).unwrap().queue_delay_us, 0);
        r.on_data(2_000_000, &data(1, 10_000_000 + 2_000_000 - 5_520_000), 200);
        assert_eq!(r.ack_info(2_000_000).unwrap().queue_delay_us, 500_000);
        r.on_data(3_000_000, &data(2, 10_000_000 + 3_000_000 - 5_010_000), 200);
        assert_eq!(
            r.ack_info(3_000_000).unwrap().queue_delay_us,
            0,
            "new minimum"
        );
    }

    #[test]
    fn summary_of_hand_made_arrivals() {
        // 3 s recording: 2 packets in second 0, 4 in second 1, none in 2.0-3.0 (a 1.5 s gap
        // from 1.5 s to the end at 3.0 s).
        let ms = [100, 400, 1000, 1100, 1200, 1500];
        let s = Summary::from_arrivals(Dir::Up, &ms, 3_000_000, 1500);
        assert_eq!(s.packets, 6);
        assert!(
            (s.mean_kbps - 6.0 * 12.0 / 3.0).abs() < 1e-9,
            "{}",
            s.mean_kbps
        );
        assert!((s.peak_kbps - 48.0).abs() < 1e-9);
        assert_eq!(s.peak_at_s, 1.0);
        assert_eq!(s.longest_gap_ms, 1500);
        assert_eq!(s.longest_gap_at_s, 1.5);
        assert_eq!((s.outages, s.outage_s), (1, 1.5));
        let empty = Summary::from_arrivals(Dir::Up, &[], 2_500_000, 1500);
        assert_eq!((empty.longest_gap_ms, empty.outages), (2500, 1));
    }

    #[test]
    fn low_backlog_seconds_find_an_empty_queue() {
        let mut r = recorder();
        // Second 0: one-way delay 20 ms (the minimum, queue empty); second 1: 800 ms.
        r.on_data(1_100_000, &data(0, 1_080_000), 200);
        r.on_data(2_500_000, &data(1, 1_700_000), 200);
        r.on_data(3_500_000, &data(2, 3_440_000), 200);
        // Seconds 0 and 2 had a packet within 50 ms of the minimum.
        assert_eq!(r.low_backlog_seconds(), 2);
    }

    #[test]
    fn messages_round_trip_and_garbage_is_refused() {
        let hello = Hello {
            session: 7,
            mode: Mode::Both,
            payload_bytes: 1472,
            low_rtt_ms: 750,
            high_rtt_ms: 3000,
            max_window: 100,
            feedback_path: true,
            uses_feedback: true,
            name: "lte-run_1".into(),
        };
        let mut d = data(42, 123);
        d.ack = Some(ack(9, 77));
        d.probe = true;
        let meta = result_meta(7, &[1u8; 2500]);
        let chunk_data = [1u8; CHUNK_BYTES];
        let msgs = [
            Message::Hello(hello),
            Message::HelloAck {
                session: 7,
                flags: FLAG_FEEDBACK_PATH,
            },
            Message::Busy { session: 7 },
            Message::Data(d),
            Message::Ack {
                session: 7,
                dir: Dir::Up,
                feedback_path: true,
                info: Some(ack(3, 4)),
            },
            Message::Ack {
                session: 7,
                dir: Dir::Down,
                feedback_path: false,
                info: None,
            },
            Message::Fin {
                session: 7,
                feedback_path: false,
            },
            Message::FinAck(meta),
            Message::ResultRequest {
                session: 7,
                first: 1,
                count: 2,
            },
            Message::ResultChunk {
                meta,
                index: 1,
                data: &chunk_data,
            },
            Message::Done { session: 7 },
        ];
        let mut buf = Vec::new();
        for m in &msgs {
            encode(m, 1472, &mut buf);
            assert_eq!(&decode(&buf).unwrap(), m);
            // Every truncation is refused, never a panic.
            for n in 0..buf.len().min(200) {
                if decode(&buf[..n]).is_ok() {
                    // Only a data packet, whose tail is padding, may decode when cut.
                    assert!(
                        matches!(m, Message::Data(_)) && n >= DATA_HEADER_BYTES + ACK_INFO_BYTES,
                        "{m:?} at {n}"
                    );
                }
            }
        }
        encode(&Message::Data(data(1, 2)), 1472, &mut buf);
        assert_eq!(buf.len(), 1472);
        assert_eq!(
            decode(b"hello world, not a saturator packet"),
            Err(DecodeError::BadMagic)
        );
        let mut bad = buf.clone();
        bad[4] = 9;
        assert_eq!(decode(&bad), Err(DecodeError::BadVersion(9)));
        bad = buf.clone();
        bad[6] = 5;
        assert!(decode(&bad).is_err());
        bad = buf.clone();
        bad[5] = 99;
        assert_eq!(decode(&bad), Err(DecodeError::BadKind(99)));
        // A chunk whose length does not match its index, or an index out of range.
        encode(
            &Message::ResultChunk {
                meta,
                index: 2,
                data: &chunk_data,
            },
            0,
            &mut buf,
        );
        assert!(decode(&buf).is_err());
        assert!(!valid_name("../etc"));
        assert!(valid_name("ATT-LTE.run_2"));
    }

    #[test]
    fn the_largest_recording_a_sender_is_owed_fits_its_bound() {
        // Worst case: every packet arrives twice, each delta a 5-byte varint, and more.
        for sent in [0u64, 1, 100, 10_000] {
            let n = (2 * sent + 1024) as usize;
            let ms: Vec<u32> = (0..n).map(|i| (i as u32).saturating_mul(1 << 28)).collect();
            let mut sorted = ms.clone();
            sorted.sort_unstable();
            let summary = Summary::from_arrivals(Dir::Up, &sorted, u64::MAX / 4, 1500);
            let blob = encode_result(&summary, &sorted);
            assert!(
                blob.len() <= max_result_bytes(sent),
                "{sent}: {} > {}",
                blob.len(),
                max_result_bytes(sent)
            );
        }
        assert_eq!(max_result_bytes(u64::MAX), MAX_BLOB_BYTES);
        assert!(max_result_bytes(1000) < 100 * 1024);
    }

    #[test]
    fn results_round_trip_through_chunks_in_any_order() {
        let ms: Vec<u32> = (0..5000u32)
            .map(|i| i / 3 + (i % 7) * 1000)
            .collect::<Vec<_>>();
        let mut sorted = ms.clone();
        sorted.sort_unstable();
        let summary = Summary::from_arrivals(Dir::Up, &sorted, 10_000_000, 1500);
        let blob = encode_result(&summary, &sorted);
        assert!(
            blob.len() < 2 * sorted.len() + 1000,
            "about a byte per arrival"
        );
        let meta = result_meta(3, &blob);
        let mut r = Reassembly::new(meta);
        for i in (0..meta.chunks).rev() {
            r.add(&meta, i, chunk(&blob, i));
            r.add(&meta, i, chunk(&blob, i));
        }
        assert_eq!(r.wanted(64), None);
        let (s2, v2) = decode_result(r.complete().unwrap()).unwrap();
        assert_eq!(s2, summary);
        assert_eq!(v2, sorted);
        // A corrupted blob fails its checksum; a truncated one does not decode.
        let mut r = Reassembly::new(meta);
        let mut broken = chunk(&blob, 0).to_vec();
        broken[10] ^= 1;
        r.add(&meta, 0, &broken);
        for i in 1..meta.chunks {
            r.add(&meta, i, chunk(&blob, i));
        }
        assert!(r.complete().is_none());
        assert!(decode_result(&blob[..blob.len() - 1]).is_none());
        let mut r = Reassembly::new(meta);
        r.add(&meta, 1, chunk(&blob, 1));
        assert_eq!(r.wanted(64), Some((0, 1)));
    }
}
