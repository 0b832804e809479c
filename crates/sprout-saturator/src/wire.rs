//! The wire format: every datagram of the Saturator ([`Message`]), its encoding ([`encode`])
//! and its checked decoding ([`decode`]: no panic, every field bounded).

use sprout_core::direction::{Direction, Load};
use sprout_core::time::Duration;

/// First four bytes of every Saturator datagram.
pub const MAGIC: [u8; 4] = *b"SPSA";
/// Wire format version (2: the cookie exchange; version 1 had none and is refused).
pub const VERSION: u8 = 2;
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
/// Bytes of recording data in one [`Message::ResultChunk`].
pub const CHUNK_BYTES: usize = 1200;
/// Largest recording transfer accepted, bytes.
pub const MAX_BLOB_BYTES: usize = 256 << 20;
/// Longest recording name carried in a hello, bytes.
pub const MAX_NAME_BYTES: usize = 100;
/// Largest window a server accepts in a hello, packets (the client's default).
pub const MAX_WINDOW: u32 = 100_000;
/// Largest high RTT mark a server accepts in a hello, ms (a minute).
pub const MAX_HIGH_RTT_MS: u32 = 60_000;
/// Largest high RTT mark a hello may carry at all, ms (an hour; servers allow
/// [`MAX_HIGH_RTT_MS`]).
pub const MAX_HELLO_HIGH_RTT_MS: u32 = 3_600_000;
/// Bytes of a return-routability cookie ([`Message::Challenge`], [`Hello::cookie`]).
pub const COOKIE_BYTES: usize = 16;
/// Bytes of a [`Message::Challenge`] on the wire: the common header and the cookie.
pub const CHALLENGE_BYTES: usize = COMMON_BYTES + COOKIE_BYTES;
/// Smallest hello a server answers, bytes of UDP payload (QUIC's 1200-byte Initial): the
/// client pads its hellos to at least this, so that the server's answer to an address that
/// has not proven itself (a [`Message::Challenge`], 32 bytes) is never larger than the hello.
pub const MIN_HELLO_BYTES: usize = 1200;

/// A return-routability cookie: a keyed MAC the server computed over the client's address and
/// port, the session id and a coarse time bucket ([`crate::cookie`]).
pub type Cookie = [u8; COOKIE_BYTES];

/// The common header's byte for the direction of a data flow: 0 up (from the mobile host, the
/// client, to the server), 1 down.
fn dir_byte(dir: Direction) -> u8 {
    match dir {
        Direction::Up => 0,
        Direction::Down => 1,
    }
}

/// The direction a common header's byte names, if it names one.
fn dir_from_byte(b: u8) -> Option<Direction> {
    match b {
        0 => Some(Direction::Up),
        1 => Some(Direction::Down),
        _ => None,
    }
}

/// The HELLO's byte for the directions a recording saturates: 0 up, 1 down, 2 both.
fn load_byte(load: Load) -> u8 {
    match load {
        Load::Up => 0,
        Load::Down => 1,
        Load::Both => 2,
    }
}

/// The directions a HELLO's byte names, if it names any.
fn load_from_byte(b: u8) -> Option<Load> {
    match b {
        0 => Some(Load::Up),
        1 => Some(Load::Down),
        2 => Some(Load::Both),
        _ => None,
    }
}

/// Flag: the datagram was sent over the feedback path (acks, keepalives, hellos).
pub const FLAG_FEEDBACK_PATH: u8 = 0x01;
/// Flag: a data packet carries an [`AckInfo`]; an ack carries one (else it is a keepalive).
pub const FLAG_ACK_INFO: u8 = 0x02;
/// Flag: a data packet is a probe, sent with the window full.
pub const FLAG_PROBE: u8 = 0x04;
/// Flag (hello): the client sends its feedback over a separate path.
pub const FLAG_USES_FEEDBACK: u8 = 0x08;
/// Flag (hello): a cookie follows the name.
pub const FLAG_COOKIE: u8 = 0x10;

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
const KIND_CHALLENGE: u8 = 11;
const KIND_REFUSED: u8 = 12;

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
    pub dir: Direction,
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
    pub mode: Load,
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
    /// The cookie of the server's [`Message::Challenge`] to this path, once it came: proof
    /// that the hello's source address receives what the server sends there.
    pub cookie: Option<Cookie>,
}

/// Longest recording a server may allow one client, ms (a day: `--max-recording`), and so the
/// longest wait a [`Refusal::Busy`] may announce.
pub const MAX_RECORDING_LIMIT_MS: u32 = 86_400_000;

/// Why a server refused a hello ([`Message::Refused`]): its parameters are outside what the
/// server allows, another client holds the server, or (during a recording) the recording
/// reached the server's bound and is over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The data payload is larger than the server allows (its largest, bytes).
    Payload {
        /// Largest UDP payload the server sends or records, bytes.
        max: u32,
    },
    /// The largest window is larger than the server allows (its largest, packets).
    Window {
        /// Largest window the server accepts, packets.
        max: u32,
    },
    /// The RTT marks are outside what the server allows (its largest high mark, ms).
    RttMarks {
        /// Largest high RTT mark the server accepts, ms.
        max_high_ms: u32,
    },
    /// Another client's recording holds the server; it will be free in about this long, ms
    /// (1 to [`MAX_RECORDING_LIMIT_MS`]: the rest of that recording up to the server's bound,
    /// and the transfer of its result).
    Busy {
        /// When to try again, ms from now.
        retry_after_ms: u32,
    },
    /// Sent during a recording: it reached the server's bound on a recording's length and is
    /// over (the server stopped sending and recording there); the client ends it as usual
    /// (FIN, the transfer of the uplink's recording).
    Limit {
        /// The server's bound, ms (1 to [`MAX_RECORDING_LIMIT_MS`]).
        max_ms: u32,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Payload { max } => write!(
                f,
                "the data packets are larger than it allows ({max}-byte UDP payloads at most: \
                 lower --mtu)"
            ),
            Refusal::Window { max } => {
                write!(f, "--max-window is larger than it allows ({max} at most)")
            }
            Refusal::RttMarks { max_high_ms } => write!(
                f,
                "the RTT marks are outside what it allows (--high-rtt-ms {max_high_ms} at most)"
            ),
            Refusal::Busy { retry_after_ms } => write!(
                f,
                "it is busy with another recording: try again in {} s",
                u64::from(*retry_after_ms).div_ceil(1000)
            ),
            Refusal::Limit { max_ms } => write!(
                f,
                "it ends recordings at {} s (its --max-recording)",
                f64::from(*max_ms) / 1000.0
            ),
        }
    }
}

impl Refusal {
    /// A busy refusal: try again after `after` (whole ms, 1 ms to [`MAX_RECORDING_LIMIT_MS`]).
    pub fn busy(after: Duration) -> Refusal {
        Refusal::Busy {
            retry_after_ms: limit_ms(after),
        }
    }

    /// The end of a recording at the server's bound `bound` (whole ms, 1 ms to
    /// [`MAX_RECORDING_LIMIT_MS`]).
    pub fn limit(bound: Duration) -> Refusal {
        Refusal::Limit {
            max_ms: limit_ms(bound),
        }
    }

    /// The wait a busy refusal names, or the bound a limit names (`None` for the others).
    pub fn time(self) -> Option<Duration> {
        match self {
            Refusal::Busy { retry_after_ms: ms } | Refusal::Limit { max_ms: ms } => {
                Some(Duration::from_millis(u64::from(ms)))
            }
            _ => None,
        }
    }

    fn code_and_limit(self) -> (u8, u32) {
        match self {
            Refusal::Payload { max } => (1, max),
            Refusal::Window { max } => (2, max),
            Refusal::RttMarks { max_high_ms } => (3, max_high_ms),
            Refusal::Busy { retry_after_ms } => (4, retry_after_ms),
            Refusal::Limit { max_ms } => (5, max_ms),
        }
    }

    /// The refusal a code and its limit name, if the limit is one a server can send (a
    /// refused hello asked for more than the limit, within what a hello carries): a payload
    /// of [`MIN_PAYLOAD_BYTES`] to below [`MAX_PAYLOAD_BYTES`] bytes, a window of at least 1
    /// packet, a high RTT mark of 1 to below [`MAX_HELLO_HIGH_RTT_MS`] ms, a wait or a bound of
    /// 1 to [`MAX_RECORDING_LIMIT_MS`] ms.
    fn from_code(code: u8, limit: u32) -> Option<Refusal> {
        let r = match code {
            // A hello asks for at most MAX_PAYLOAD_BYTES, so a refusing server allows less.
            1 if (MIN_PAYLOAD_BYTES..MAX_PAYLOAD_BYTES).contains(&limit) => {
                Refusal::Payload { max: limit }
            }
            // Any window above 0 decodes in a hello; a server allows at least one packet.
            2 if limit >= 1 => Refusal::Window { max: limit },
            // A hello's high mark is at most an hour and above its low mark (at least 1).
            3 if (1..MAX_HELLO_HIGH_RTT_MS).contains(&limit) => {
                Refusal::RttMarks { max_high_ms: limit }
            }
            4 if (1..=MAX_RECORDING_LIMIT_MS).contains(&limit) => Refusal::Busy {
                retry_after_ms: limit,
            },
            5 if (1..=MAX_RECORDING_LIMIT_MS).contains(&limit) => Refusal::Limit { max_ms: limit },
            _ => return None,
        };
        Some(r)
    }
}

/// `d` in whole milliseconds, within 1 to [`MAX_RECORDING_LIMIT_MS`].
fn limit_ms(d: Duration) -> u32 {
    u32::try_from(d.as_millis())
        .unwrap_or(u32::MAX)
        .clamp(1, MAX_RECORDING_LIMIT_MS)
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
    /// Server → client: another recording is running (what servers before the bound on a
    /// recording's length sent; servers now send [`Refusal::Busy`], which says when to try
    /// again). Still decoded, and taken as busy.
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
        dir: Direction,
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
    /// Server → client: the answer to a hello without a valid cookie (never larger than
    /// the hello): say hello again with this cookie, from the same address.
    Challenge {
        /// Session id of the hello.
        session: u64,
        /// Answering a hello sent over the feedback path.
        feedback_path: bool,
        /// The cookie to send back.
        cookie: Cookie,
    },
    /// Server → client: a hello refused ([`Refusal`]: its parameters are outside what the
    /// server allows, or another client holds the server and when to try again), or, during
    /// a recording, the recording is over (it reached the server's bound).
    Refused {
        /// Session id of the hello.
        session: u64,
        /// Why.
        reason: Refusal,
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
            | Message::Done { session }
            | Message::Challenge { session, .. }
            | Message::Refused { session, .. } => *session,
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
    #[error(
        "wire version {0}, this build speaks version {VERSION} of the Saturator's protocol \
         (run the same sprout release at both ends)"
    )]
    BadVersion(u8),
    /// Unknown message kind.
    #[error("unknown kind {0}")]
    BadKind(u8),
    /// A field out of its range.
    #[error("invalid field: {0}")]
    BadField(&'static str),
}

/// Big-endian writer helpers.
/// Appends `v`, big-endian.
pub(crate) fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_be_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_be_bytes());
}

fn put_common(out: &mut Vec<u8>, kind: u8, dir: Direction, flags: u8, session: u64) {
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
    out.push(kind);
    out.push(dir_byte(dir));
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
/// `payload_bytes` (at least its header); a hello to `payload_bytes` and at least
/// [`MIN_HELLO_BYTES`]; other messages ignore `payload_bytes`.
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
            if h.cookie.is_some() {
                flags |= FLAG_COOKIE;
            }
            put_common(out, KIND_HELLO, Direction::Up, flags, h.session);
            out.push(load_byte(h.mode));
            out.push(0);
            put_u32(out, h.payload_bytes);
            put_u32(out, h.low_rtt_ms);
            put_u32(out, h.high_rtt_ms);
            put_u32(out, h.max_window);
            let name = h.name.as_bytes();
            let n = name.len().min(MAX_NAME_BYTES);
            out.push(n as u8);
            out.extend_from_slice(&name[..n]);
            if let Some(c) = &h.cookie {
                out.extend_from_slice(c);
            }
            let padded = payload_bytes.max(MIN_HELLO_BYTES);
            if out.len() < padded {
                out.resize(padded, 0);
            }
        }
        Message::HelloAck { session, flags } => {
            put_common(out, KIND_HELLO_ACK, Direction::Down, *flags, *session)
        }
        Message::Busy { session } => put_common(out, KIND_BUSY, Direction::Down, 0, *session),
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
            put_common(out, KIND_FIN, Direction::Up, flags, *session);
        }
        Message::FinAck(m) => {
            put_common(out, KIND_FIN_ACK, Direction::Down, 0, m.session);
            put_meta(out, m);
        }
        Message::ResultRequest {
            session,
            first,
            count,
        } => {
            put_common(out, KIND_RESULT_REQUEST, Direction::Up, 0, *session);
            put_u32(out, *first);
            put_u32(out, *count);
        }
        Message::ResultChunk { meta, index, data } => {
            put_common(out, KIND_RESULT_CHUNK, Direction::Down, 0, meta.session);
            put_meta(out, meta);
            put_u32(out, *index);
            out.extend_from_slice(data);
        }
        Message::Done { session } => put_common(out, KIND_DONE, Direction::Up, 0, *session),
        Message::Challenge {
            session,
            feedback_path,
            cookie,
        } => {
            let flags = if *feedback_path {
                FLAG_FEEDBACK_PATH
            } else {
                0
            };
            put_common(out, KIND_CHALLENGE, Direction::Down, flags, *session);
            out.extend_from_slice(cookie);
        }
        Message::Refused { session, reason } => {
            put_common(out, KIND_REFUSED, Direction::Down, 0, *session);
            let (code, limit) = reason.code_and_limit();
            out.push(code);
            put_u32(out, limit);
        }
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

    fn cookie(&mut self) -> Result<Cookie, DecodeError> {
        let mut c = [0u8; COOKIE_BYTES];
        c.copy_from_slice(self.take(COOKIE_BYTES)?);
        Ok(c)
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
    let dir = dir_from_byte(r.u8()?).ok_or(DecodeError::BadField("direction"))?;
    let flags = r.u8()?;
    let session = r.u64()?;
    let feedback_path = flags & FLAG_FEEDBACK_PATH != 0;
    Ok(match kind {
        KIND_HELLO => {
            let mode = load_from_byte(r.u8()?).ok_or(DecodeError::BadField("mode"))?;
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
            if low_rtt_ms == 0 || low_rtt_ms >= high_rtt_ms || high_rtt_ms > MAX_HELLO_HIGH_RTT_MS {
                return Err(DecodeError::BadField("RTT marks"));
            }
            if max_window == 0 {
                return Err(DecodeError::BadField("window"));
            }
            let cookie = if flags & FLAG_COOKIE != 0 {
                Some(r.cookie()?)
            } else {
                None
            };
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
                cookie,
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
        KIND_CHALLENGE => Message::Challenge {
            session,
            feedback_path,
            cookie: r.cookie()?,
        },
        KIND_REFUSED => {
            let code = r.u8()?;
            let limit = r.u32()?;
            Message::Refused {
                session,
                reason: Refusal::from_code(code, limit).ok_or(DecodeError::BadField("refusal"))?,
            }
        }
        k => return Err(DecodeError::BadKind(k)),
    })
}
