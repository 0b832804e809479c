//! The application messages of `sprout server` and `sprout client`, carried as the payloads of
//! Sprout datagrams (the HELLO as the greeting inside the client's handshake). All integers
//! are big-endian; the first byte is the message type.
//!
//! ```text
//! HELLO  (client -> server, the greeting of the handshake), 36 bytes
//!   0  1  type 1          1  1  version (1)     2  1  direction: 0 up, 1 down, 2 both
//!   3  1  mode: 0 bulk (saturating), 1 paced    4  1  scheme: 0 sprout (the paper's rate model),
//!                                                 1 sprout-ewma, 2 sprout-wide (the wide model)
//!   5  3  reserved, 0     8  8  session id (chosen by the client)
//!  16  4  paced rate, kbit/s of application data (0 in bulk mode)
//!  20  4  duration, ms    24  2  payload bytes per DATA message (0: as large as fits)
//!  26  2  reserved, 0    28  8  forecast confidence (IEEE 754 double, 0 < p < 1)
//! ACCEPT (server -> client, a few copies when the session is accepted), 16 bytes
//!   0  1  type 2          1  7  reserved, 0     8  8  session id
//! DATA   (either way), at least 24 bytes
//!   0  1  type 3          1  7  reserved, 0     8  8  sequence number (0, 1, 2, ... per sender)
//!  16  8  send time, microseconds since the Unix epoch (CLOCK_REALTIME)
//!  24  .. padding (zeros) up to the message's size
//! BYE    (either way, a few times at the end), 32 bytes
//!   0  1  type 4          1  7  reserved, 0     8  8  session id
//!  16  8  DATA messages sent    24  8  application bytes sent
//! ```
//!
//! A payload whose first byte is 0 is bulk filler too short to hold a DATA header (it still
//! counts as received data). Parsing never panics; anything else is a [`MessageError`].

use serde::Serialize;
use sprout_core::direction::Load;
use sprout_core::Config;
pub use sprout_core::SproutVariant;
use thiserror::Error;

/// Version of this message format.
pub const VERSION: u8 = 1;
/// Size of a HELLO message, in bytes.
pub const HELLO_BYTES: usize = 36;
/// Size of an ACCEPT message, in bytes.
pub const ACCEPT_BYTES: usize = 16;
/// Size of a DATA message's header (its smallest size), in bytes.
pub const DATA_HEADER_BYTES: usize = 24;
/// Size of a BYE message, in bytes.
pub const BYE_BYTES: usize = 32;

const T_FILLER: u8 = 0;
const T_HELLO: u8 = 1;
const T_ACCEPT: u8 = 2;
const T_DATA: u8 = 3;
const T_BYE: u8 = 4;

/// How the data senders send.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Saturating: always more to send (the paper's bulk transfer).
    Bulk,
    /// An interactive stream at a fixed application bit rate.
    Paced,
}

/// What the client asks the server to run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Hello {
    /// Identifies the session (chosen by the client).
    pub session: u64,
    /// Which directions carry data ("up" is from the client to the server).
    pub direction: Load,
    /// Saturating or paced.
    pub mode: Mode,
    /// Estimator both ends run.
    pub scheme: SproutVariant,
    /// Forecast confidence both ends use (0 < p < 1).
    pub confidence: f64,
    /// Application bit rate of a paced sender, in kbit/s (0 in bulk mode).
    pub rate_kbps: u32,
    /// How long the data senders send, in milliseconds.
    pub duration_ms: u32,
    /// Size of each DATA message, in bytes (0: as large as fits).
    pub payload_bytes: u16,
}

/// One timestamped data message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Data {
    /// Sequence number: 0, 1, 2, ... per sender.
    pub seq: u64,
    /// Send time, microseconds since the Unix epoch (CLOCK_REALTIME).
    pub sent_us: u64,
}

/// The end of a sender's data, with its totals.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Bye {
    /// The session.
    pub session: u64,
    /// DATA messages sent.
    pub data_sent: u64,
    /// Application bytes sent.
    pub app_bytes_sent: u64,
}

/// Any application message.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Message {
    /// Bulk filler too short for a DATA header.
    Filler,
    /// A session request.
    Hello(Hello),
    /// The server's answer to a HELLO, with the session id.
    Accept(u64),
    /// Timestamped data.
    Data(Data),
    /// End of a sender's data.
    Bye(Bye),
}

/// Why a payload is not a valid message.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum MessageError {
    /// The payload is empty.
    #[error("empty message")]
    Empty,
    /// An unknown message type.
    #[error("unknown message type {0}")]
    UnknownType(u8),
    /// Shorter than its type requires.
    #[error("message of type {kind} too short: {len} bytes, needs {needed}")]
    TooShort {
        /// The message type.
        kind: u8,
        /// Bytes present.
        len: usize,
        /// Bytes needed.
        needed: usize,
    },
    /// A HELLO of another version.
    #[error("unsupported HELLO version {0} (this build speaks {VERSION})")]
    UnknownVersion(u8),
    /// A field out of its range.
    #[error("invalid HELLO: {0}")]
    Invalid(&'static str),
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_be_bytes(a)
}

fn need(b: &[u8], needed: usize) -> Result<(), MessageError> {
    if b.len() < needed {
        return Err(MessageError::TooShort {
            kind: b[0],
            len: b.len(),
            needed,
        });
    }
    Ok(())
}

impl Hello {
    /// The encoded message ([`HELLO_BYTES`] long).
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; HELLO_BYTES];
        b[0] = T_HELLO;
        b[1] = VERSION;
        b[2] = match self.direction {
            Load::Up => 0,
            Load::Down => 1,
            Load::Both => 2,
        };
        b[3] = match self.mode {
            Mode::Bulk => 0,
            Mode::Paced => 1,
        };
        b[4] = match self.scheme {
            SproutVariant::Sprout => 0,
            SproutVariant::SproutEwma => 1,
            SproutVariant::SproutWide => 2,
        };
        b[8..16].copy_from_slice(&self.session.to_be_bytes());
        b[16..20].copy_from_slice(&self.rate_kbps.to_be_bytes());
        b[20..24].copy_from_slice(&self.duration_ms.to_be_bytes());
        b[24..26].copy_from_slice(&self.payload_bytes.to_be_bytes());
        b[28..36].copy_from_slice(&self.confidence.to_bits().to_be_bytes());
        b
    }

    fn decode(b: &[u8]) -> Result<Hello, MessageError> {
        need(b, HELLO_BYTES)?;
        if b[1] != VERSION {
            return Err(MessageError::UnknownVersion(b[1]));
        }
        let direction = match b[2] {
            0 => Load::Up,
            1 => Load::Down,
            2 => Load::Both,
            _ => return Err(MessageError::Invalid("direction")),
        };
        let mode = match b[3] {
            0 => Mode::Bulk,
            1 => Mode::Paced,
            _ => return Err(MessageError::Invalid("mode")),
        };
        let scheme = match b[4] {
            0 => SproutVariant::Sprout,
            1 => SproutVariant::SproutEwma,
            2 => SproutVariant::SproutWide,
            _ => return Err(MessageError::Invalid("scheme")),
        };
        let confidence = f64::from_bits(u64_at(b, 28));
        if !(confidence > 0.0 && confidence < 1.0) {
            return Err(MessageError::Invalid("confidence"));
        }
        let rate_kbps = u32_at(b, 16);
        if mode == Mode::Paced && rate_kbps == 0 {
            return Err(MessageError::Invalid("paced rate 0"));
        }
        Ok(Hello {
            session: u64_at(b, 8),
            direction,
            mode,
            scheme,
            confidence,
            rate_kbps,
            duration_ms: u32_at(b, 20),
            payload_bytes: u16::from_be_bytes([b[24], b[25]]),
        })
    }

    /// The Sprout configuration this HELLO asks for.
    pub fn config(&self) -> Config {
        self.scheme.config(self.confidence)
    }
}

/// An encoded ACCEPT of `session` ([`ACCEPT_BYTES`] long).
pub fn encode_accept(session: u64) -> Vec<u8> {
    let mut b = vec![0u8; ACCEPT_BYTES];
    b[0] = T_ACCEPT;
    b[8..16].copy_from_slice(&session.to_be_bytes());
    b
}

impl Data {
    /// The encoded message, padded with zeros to `len` bytes (at least [`DATA_HEADER_BYTES`]).
    pub fn encode(&self, len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len.max(DATA_HEADER_BYTES)];
        self.write(&mut b);
        b
    }

    /// Writes the message's header over the start of `buf` (the rest is left as it is, zeros in
    /// a bulk payload). Returns false, writing nothing, if `buf` is shorter than
    /// [`DATA_HEADER_BYTES`].
    pub fn write(&self, buf: &mut [u8]) -> bool {
        if buf.len() < DATA_HEADER_BYTES {
            return false;
        }
        buf[..8].copy_from_slice(&[T_DATA, 0, 0, 0, 0, 0, 0, 0]);
        buf[8..16].copy_from_slice(&self.seq.to_be_bytes());
        buf[16..24].copy_from_slice(&self.sent_us.to_be_bytes());
        true
    }
}

impl Bye {
    /// The encoded message ([`BYE_BYTES`] long).
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; BYE_BYTES];
        b[0] = T_BYE;
        b[8..16].copy_from_slice(&self.session.to_be_bytes());
        b[16..24].copy_from_slice(&self.data_sent.to_be_bytes());
        b[24..32].copy_from_slice(&self.app_bytes_sent.to_be_bytes());
        b
    }
}

impl Message {
    /// Parses an application payload. Never panics.
    pub fn decode(b: &[u8]) -> Result<Message, MessageError> {
        let Some(&kind) = b.first() else {
            return Err(MessageError::Empty);
        };
        match kind {
            T_FILLER => Ok(Message::Filler),
            T_HELLO => Hello::decode(b).map(Message::Hello),
            T_ACCEPT => {
                need(b, ACCEPT_BYTES)?;
                Ok(Message::Accept(u64_at(b, 8)))
            }
            T_DATA => {
                need(b, DATA_HEADER_BYTES)?;
                Ok(Message::Data(Data {
                    seq: u64_at(b, 8),
                    sent_us: u64_at(b, 16),
                }))
            }
            T_BYE => {
                need(b, BYE_BYTES)?;
                Ok(Message::Bye(Bye {
                    session: u64_at(b, 8),
                    data_sent: u64_at(b, 16),
                    app_bytes_sent: u64_at(b, 24),
                }))
            }
            k => Err(MessageError::UnknownType(k)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip() {
        let h = Hello {
            session: 0xdead_beef,
            direction: Load::Both,
            mode: Mode::Paced,
            scheme: SproutVariant::SproutEwma,
            confidence: 0.95,
            rate_kbps: 500,
            duration_ms: 10_000,
            payload_bytes: 1000,
        };
        assert_eq!(Message::decode(&h.encode()), Ok(Message::Hello(h)));
        assert_eq!(Message::decode(&encode_accept(7)), Ok(Message::Accept(7)));
        let d = Data {
            seq: 42,
            sent_us: 1_700_000_000_000_000,
        };
        let enc = d.encode(1000);
        assert_eq!(enc.len(), 1000);
        assert_eq!(Message::decode(&enc), Ok(Message::Data(d)));
        let b = Bye {
            session: 1,
            data_sent: 2,
            app_bytes_sent: 3,
        };
        assert_eq!(Message::decode(&b.encode()), Ok(Message::Bye(b)));
        assert_eq!(Message::decode(&[0, 0, 0]), Ok(Message::Filler));
        assert_eq!(h.config().estimator, Config::ewma().estimator);
    }

    #[test]
    fn each_scheme_round_trips_with_its_own_model() {
        for (scheme, config) in [
            (SproutVariant::Sprout, Config::default()),
            (SproutVariant::SproutEwma, Config::ewma()),
            (SproutVariant::SproutWide, Config::wide()),
        ] {
            let h = Hello {
                session: 3,
                direction: Load::Down,
                mode: Mode::Bulk,
                scheme,
                confidence: 0.9,
                rate_kbps: 0,
                duration_ms: 1000,
                payload_bytes: 0,
            };
            let Ok(Message::Hello(back)) = Message::decode(&h.encode()) else {
                panic!("{scheme:?} did not decode");
            };
            assert_eq!(back.scheme, scheme);
            assert_eq!(back.config().estimator, config.estimator);
            assert_eq!(back.config().confidence, 0.9);
        }
        let mut b = Hello {
            session: 3,
            direction: Load::Down,
            mode: Mode::Bulk,
            scheme: SproutVariant::SproutWide,
            confidence: 0.9,
            rate_kbps: 0,
            duration_ms: 1000,
            payload_bytes: 0,
        }
        .encode();
        b[4] = 3;
        assert_eq!(Message::decode(&b), Err(MessageError::Invalid("scheme")));
    }

    #[test]
    fn the_direction_byte_keeps_its_codes() {
        // A HELLO as version 1 has always encoded it: up, bulk, sprout, session 1, 1 s.
        let mut b = [0u8; HELLO_BYTES];
        b[..2].copy_from_slice(&[T_HELLO, VERSION]);
        b[15] = 1;
        b[20..24].copy_from_slice(&1000u32.to_be_bytes());
        b[28..36].copy_from_slice(&0.95f64.to_bits().to_be_bytes());
        for (code, load) in [(0u8, Load::Up), (1, Load::Down), (2, Load::Both)] {
            b[2] = code;
            let Ok(Message::Hello(h)) = Message::decode(&b) else {
                panic!("direction byte {code} did not decode");
            };
            assert_eq!(h.direction, load);
            assert_eq!(h.encode(), b);
        }
        b[2] = 3;
        assert_eq!(Message::decode(&b), Err(MessageError::Invalid("direction")));
    }

    #[test]
    fn bad_messages_are_errors_never_panics() {
        assert_eq!(Message::decode(&[]), Err(MessageError::Empty));
        assert!(Message::decode(&[9]).is_err());
        for kind in 1..=4u8 {
            for len in 1..40 {
                let mut b = vec![0xffu8; len];
                b[0] = kind;
                let _ = Message::decode(&b);
            }
        }
        let mut h = Hello {
            session: 1,
            direction: Load::Up,
            mode: Mode::Bulk,
            scheme: SproutVariant::Sprout,
            confidence: 0.95,
            rate_kbps: 0,
            duration_ms: 1000,
            payload_bytes: 0,
        }
        .encode();
        h[28..36].copy_from_slice(&f64::NAN.to_bits().to_be_bytes());
        assert_eq!(
            Message::decode(&h),
            Err(MessageError::Invalid("confidence"))
        );
        assert!(!Data { seq: 0, sent_us: 0 }.write(&mut [0u8; 10]));
    }
}
