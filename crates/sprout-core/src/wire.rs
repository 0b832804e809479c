//! The versioned binary wire format of a Sprout datagram, with checked parsing.
//!
//! Layout (all integers big-endian), version 3. Version 2 had the same fields without flag bit 2
//! (a version-2 peer is refused with a clear error rather than misreading the flag); version 2
//! went up from 1 with the security layer, whose sealed datagrams carry these, so that a
//! version-1 peer, which sends them in the clear, is refused too:
//!
//! ```text
//! offset size field
//!   0     1   magic 0x53 ('S')
//!   1     1   version (2)
//!   2     1   flags: bit 0 = carries a forecast, bit 1 = heartbeat (no application data),
//!             bit 2 = application-limited: when this datagram left, the sender had nothing
//!             more queued and room left in its window (the receiver scores a tick of such
//!             datagrams as a lower bound on the link's rate, not a measurement of it),
//!             bit 3 = the forecast block ends with the expected counts (needs bit 0)
//!   3     1   reserved, 0
//!   4     8   sequence number: link bytes sent before this datagram
//!  12     8   throwaway number: link bytes sent up to the end of the most recent datagram sent
//!             more than 10 ms before this one (everything below it is received or lost)
//!  20     4   time-to-next, microseconds: the sender's expected gap before its next datagram
//!  24     8   send timestamp, microseconds on the sender's clock
//!  -- if flags bit 0 --
//!  32     4   forecast id (increases with every new forecast)
//!  36     8   received-or-lost: link bytes of the peer's data received or written off as lost
//!  44     1   n, the number of forecast ticks (1..=32)
//!  45    4n   cumulative MTU-sized packets forecast to be delivered by the end of each tick
//!  -- if flags bit 3 --
//!  45+4n 4n   the expected (median) cumulative counts, for a peer whose data waits
//!  -- then --
//!   ..        application payload (empty for a heartbeat)
//! ```
//!
//! Parsing never panics: a short, truncated, foreign or unknown datagram is a [`WireError`].
//! Parsing checks only the format; whether the values are possible for the peer is checked by
//! [`crate::Connection::handle_datagram`].

use thiserror::Error;

/// First byte of every Sprout datagram.
pub const MAGIC: u8 = 0x53;
/// The wire format version this code writes and reads.
pub const VERSION: u8 = 3;
/// Size of the fixed part of the header, in bytes.
pub const FIXED_HEADER_BYTES: usize = 32;
/// Most forecast ticks a datagram can carry.
pub const MAX_FORECAST_TICKS: usize = 32;
/// Header size with a forecast of `ticks` entries, in bytes.
pub const fn header_bytes(ticks: usize) -> usize {
    FIXED_HEADER_BYTES + 13 + 4 * ticks
}
/// Largest possible header, in bytes.
pub const MAX_HEADER_BYTES: usize = header_bytes(MAX_FORECAST_TICKS);

const FLAG_FORECAST: u8 = 1;
const FLAG_HEARTBEAT: u8 = 2;
const FLAG_APP_LIMITED: u8 = 4;
const FLAG_EXPECTED: u8 = 8;
const KNOWN_FLAGS: u8 = FLAG_FORECAST | FLAG_HEARTBEAT | FLAG_APP_LIMITED | FLAG_EXPECTED;

/// Why a datagram could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum WireError {
    /// Shorter than the fixed header.
    #[error("datagram too short: {len} bytes, header needs {FIXED_HEADER_BYTES}")]
    TooShort {
        /// Length received, in bytes.
        len: usize,
    },
    /// Not a Sprout datagram.
    #[error("not a Sprout datagram (first byte {0:#04x})")]
    BadMagic(u8),
    /// A version this implementation does not speak.
    #[error("unsupported Sprout wire version {0} (this build speaks only version {VERSION}; version 2 is the format of builds without application-limited marks, version 1 the unencrypted format of older builds)")]
    UnknownVersion(u8),
    /// Flag bits this version does not define.
    #[error("unknown flags {0:#04x}")]
    UnknownFlags(u8),
    /// The forecast block is cut short.
    #[error("forecast truncated: needs {needed} bytes, {len} present")]
    Truncated {
        /// Bytes the header needs.
        needed: usize,
        /// Bytes present.
        len: usize,
    },
    /// A forecast with no ticks or more than [`MAX_FORECAST_TICKS`].
    #[error("forecast has {0} ticks (allowed 1..={MAX_FORECAST_TICKS})")]
    BadForecastLength(usize),
    /// Cumulative counts that go down.
    #[error("forecast is not cumulative (tick {tick} is below the one before)")]
    ForecastNotCumulative {
        /// Index of the offending tick.
        tick: usize,
    },
    /// A heartbeat that carries payload, or reserved bits set.
    #[error("malformed header: {0}")]
    Malformed(&'static str),
}

/// The receiver's feedback carried on a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Feedback {
    /// Increases with every new forecast the peer computes.
    pub forecast_id: u32,
    /// Link bytes the peer has received from us or written off as lost.
    pub received_or_lost: u64,
    /// Number of valid entries in `counts`.
    pub len: u8,
    /// Cumulative MTU-sized packets forecast by the end of each tick (first `len` valid).
    pub counts: [u32; MAX_FORECAST_TICKS],
    /// The expected (median) cumulative counts for the same ticks, if carried: sent to an
    /// application-limited peer, whose windows use them while its data waits.
    pub expected: Option<[u32; MAX_FORECAST_TICKS]>,
}

impl Feedback {
    /// A feedback block from a forecast slice (at most [`MAX_FORECAST_TICKS`] entries).
    pub fn new(forecast_id: u32, received_or_lost: u64, forecast: &[u32]) -> Self {
        let len = forecast.len().min(MAX_FORECAST_TICKS);
        let mut counts = [0u32; MAX_FORECAST_TICKS];
        counts[..len].copy_from_slice(&forecast[..len]);
        Feedback {
            forecast_id,
            received_or_lost,
            len: len as u8,
            counts,
            expected: None,
        }
    }

    /// The same block carrying `expected` counts too (as many as the forecast's; extra ones
    /// are dropped, missing ones repeat the forecast's).
    pub fn with_expected(mut self, expected: &[u32]) -> Self {
        let mut e = self.counts;
        let n = expected.len().min(self.len as usize);
        e[..n].copy_from_slice(&expected[..n]);
        self.expected = Some(e);
        self
    }

    /// The forecast's cumulative counts.
    pub fn forecast(&self) -> &[u32] {
        &self.counts[..self.len as usize]
    }

    /// The expected cumulative counts, if carried.
    pub fn expected(&self) -> Option<&[u32]> {
        self.expected.as_ref().map(|e| &e[..self.len as usize])
    }

    /// Encoded size of the block, in bytes.
    fn encoded_len(&self) -> usize {
        let n = self.len as usize;
        header_bytes(n) - FIXED_HEADER_BYTES + if self.expected.is_some() { 4 * n } else { 0 }
    }
}

/// The header of a Sprout datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Link bytes sent before this datagram.
    pub seq: u64,
    /// Everything below this many link bytes is received or lost.
    pub throwaway: u64,
    /// Expected gap before the sender's next datagram, in microseconds (0 inside a flight).
    pub time_to_next_us: u32,
    /// Send time on the sender's clock, in microseconds.
    pub sent_us: u64,
    /// Set on heartbeats, which carry no application data.
    pub heartbeat: bool,
    /// Set when the sender, as this datagram left, had nothing more queued and room left in
    /// its window: what arrives is then a lower bound on what the link could carry.
    pub app_limited: bool,
    /// The sender's latest forecast for the opposite direction, if it has one.
    pub feedback: Option<Feedback>,
}

impl Header {
    /// Encoded size of this header, in bytes.
    pub fn encoded_len(&self) -> usize {
        FIXED_HEADER_BYTES + self.feedback.as_ref().map_or(0, Feedback::encoded_len)
    }

    /// Appends the encoded header to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut flags = 0;
        if let Some(f) = &self.feedback {
            flags |= FLAG_FORECAST;
            if f.expected.is_some() {
                flags |= FLAG_EXPECTED;
            }
        }
        if self.heartbeat {
            flags |= FLAG_HEARTBEAT;
        }
        if self.app_limited {
            flags |= FLAG_APP_LIMITED;
        }
        out.extend_from_slice(&[MAGIC, VERSION, flags, 0]);
        out.extend_from_slice(&self.seq.to_be_bytes());
        out.extend_from_slice(&self.throwaway.to_be_bytes());
        out.extend_from_slice(&self.time_to_next_us.to_be_bytes());
        out.extend_from_slice(&self.sent_us.to_be_bytes());
        if let Some(f) = &self.feedback {
            out.extend_from_slice(&f.forecast_id.to_be_bytes());
            out.extend_from_slice(&f.received_or_lost.to_be_bytes());
            out.push(f.len);
            for c in f.forecast().iter().chain(f.expected().unwrap_or(&[])) {
                out.extend_from_slice(&c.to_be_bytes());
            }
        }
    }
}

/// A parsed datagram: its header and a view of its payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Datagram<'a> {
    /// The header.
    pub header: Header,
    /// The application payload.
    pub payload: &'a [u8],
}

fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn be_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

/// Encodes a whole datagram (header then payload) into `out`, which is cleared first.
pub fn encode(header: &Header, payload: &[u8], out: &mut Vec<u8>) {
    out.clear();
    header.encode(out);
    out.extend_from_slice(payload);
}

/// `n` big-endian cumulative counts from the start of `b` (which holds at least `4n` bytes).
fn cumulative_counts(b: &[u8], n: usize) -> Result<[u32; MAX_FORECAST_TICKS], WireError> {
    let mut counts = [0u32; MAX_FORECAST_TICKS];
    for (i, slot) in counts.iter_mut().take(n).enumerate() {
        *slot = be_u32(&b[4 * i..]);
    }
    match (1..n).find(|&i| counts[i] < counts[i - 1]) {
        Some(tick) => Err(WireError::ForecastNotCumulative { tick }),
        None => Ok(counts),
    }
}

/// Parses a datagram, checking every field; never panics.
pub fn decode(buf: &[u8]) -> Result<Datagram<'_>, WireError> {
    if buf.len() < FIXED_HEADER_BYTES {
        if let Some(&m) = buf.first() {
            if m != MAGIC {
                return Err(WireError::BadMagic(m));
            }
        }
        return Err(WireError::TooShort { len: buf.len() });
    }
    if buf[0] != MAGIC {
        return Err(WireError::BadMagic(buf[0]));
    }
    if buf[1] != VERSION {
        return Err(WireError::UnknownVersion(buf[1]));
    }
    let flags = buf[2];
    if flags & !KNOWN_FLAGS != 0 {
        return Err(WireError::UnknownFlags(flags));
    }
    if buf[3] != 0 {
        return Err(WireError::Malformed("reserved byte is not zero"));
    }
    let seq = be_u64(&buf[4..]);
    let throwaway = be_u64(&buf[12..]);
    let time_to_next_us = be_u32(&buf[20..]);
    let sent_us = be_u64(&buf[24..]);
    if flags & FLAG_EXPECTED != 0 && flags & FLAG_FORECAST == 0 {
        return Err(WireError::Malformed("expected counts without a forecast"));
    }
    let mut at = FIXED_HEADER_BYTES;
    let feedback = if flags & FLAG_FORECAST != 0 {
        let fixed = FIXED_HEADER_BYTES + 13;
        if buf.len() < fixed {
            return Err(WireError::Truncated {
                needed: fixed,
                len: buf.len(),
            });
        }
        let forecast_id = be_u32(&buf[32..]);
        let received_or_lost = be_u64(&buf[36..]);
        let n = buf[44] as usize;
        if n == 0 || n > MAX_FORECAST_TICKS {
            return Err(WireError::BadForecastLength(n));
        }
        let with_expected = flags & FLAG_EXPECTED != 0;
        let needed = header_bytes(n) + if with_expected { 4 * n } else { 0 };
        if buf.len() < needed {
            return Err(WireError::Truncated {
                needed,
                len: buf.len(),
            });
        }
        let counts = cumulative_counts(&buf[fixed..], n)?;
        let expected = if with_expected {
            Some(cumulative_counts(&buf[fixed + 4 * n..], n)?)
        } else {
            None
        };
        at = needed;
        Some(Feedback {
            forecast_id,
            received_or_lost,
            len: n as u8,
            counts,
            expected,
        })
    } else {
        None
    };
    let heartbeat = flags & FLAG_HEARTBEAT != 0;
    let app_limited = flags & FLAG_APP_LIMITED != 0;
    let payload = &buf[at..];
    if heartbeat && !payload.is_empty() {
        return Err(WireError::Malformed("heartbeat carries a payload"));
    }
    if throwaway > seq {
        return Err(WireError::Malformed(
            "throwaway number beyond sequence number",
        ));
    }
    Ok(Datagram {
        header: Header {
            seq,
            throwaway,
            time_to_next_us,
            sent_us,
            heartbeat,
            app_limited,
            feedback,
        },
        payload,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample(feedback: bool, heartbeat: bool) -> Header {
        Header {
            seq: 123_456_789_012,
            throwaway: 123_456_000_000,
            time_to_next_us: 20_000,
            sent_us: 987_654_321,
            heartbeat,
            app_limited: false,
            feedback: feedback.then(|| Feedback::new(7, 42_000, &[1, 2, 3, 5, 8, 13, 21, 34])),
        }
    }

    #[test]
    fn round_trip() {
        let mut buf = Vec::new();
        for (fb, hb) in [(false, false), (true, false), (true, true), (false, true)] {
            let h = sample(fb, hb);
            let payload: &[u8] = if hb { b"" } else { b"hello" };
            encode(&h, payload, &mut buf);
            assert_eq!(buf.len(), h.encoded_len() + payload.len());
            let d = decode(&buf).unwrap();
            assert_eq!(d.header, h);
            assert_eq!(d.payload, payload);
        }
    }

    #[test]
    fn expected_counts_round_trip_and_are_checked() {
        let mut h = sample(true, false);
        h.app_limited = true;
        h.feedback = h
            .feedback
            .map(|f| f.with_expected(&[2, 4, 6, 9, 12, 16, 24, 40]));
        let mut buf = Vec::new();
        encode(&h, b"x", &mut buf);
        assert_eq!(buf.len(), header_bytes(8) + 32 + 1);
        assert_eq!(buf[2], 1 | 4 | 8);
        let d = decode(&buf).unwrap();
        assert_eq!(d.header, h);
        assert_eq!(d.payload, b"x");
        let e = d.header.feedback.unwrap();
        assert_eq!(e.expected().unwrap(), &[2, 4, 6, 9, 12, 16, 24, 40]);
        // Cut inside the expected counts; expected counts that go down; the flag alone.
        assert!(matches!(
            decode(&buf[..header_bytes(8) + 8]),
            Err(WireError::Truncated { .. })
        ));
        let mut b = buf.clone();
        b[header_bytes(8) + 4 * 2 + 3] = 0;
        assert_eq!(
            decode(&b),
            Err(WireError::ForecastNotCumulative { tick: 2 })
        );
        let mut plain = Vec::new();
        encode(&sample(false, false), b"", &mut plain);
        plain[2] |= 8;
        assert!(matches!(decode(&plain), Err(WireError::Malformed(_))));
    }

    #[test]
    fn known_bytes() {
        let h = Header {
            seq: 1,
            throwaway: 0,
            time_to_next_us: 2,
            sent_us: 3,
            heartbeat: false,
            app_limited: false,
            feedback: None,
        };
        let mut buf = Vec::new();
        encode(&h, &[0xAB], &mut buf);
        let mut want = vec![0x53, 3, 0, 0];
        want.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 1]);
        want.extend_from_slice(&[0; 8]);
        want.extend_from_slice(&[0, 0, 0, 2]);
        want.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 3]);
        want.push(0xAB);
        assert_eq!(buf, want);
    }

    #[test]
    fn errors() {
        let mut buf = Vec::new();
        encode(&sample(true, false), b"x", &mut buf);
        assert_eq!(decode(&[]), Err(WireError::TooShort { len: 0 }));
        assert_eq!(decode(&buf[..10]), Err(WireError::TooShort { len: 10 }));
        assert_eq!(decode(&[0x45, 0, 0]), Err(WireError::BadMagic(0x45)));
        let mut b = buf.clone();
        b[1] = 1;
        assert_eq!(decode(&b), Err(WireError::UnknownVersion(1)));
        assert!(WireError::UnknownVersion(1)
            .to_string()
            .contains("version 1"));
        let mut b = buf.clone();
        b[2] |= 0x80;
        assert!(matches!(decode(&b), Err(WireError::UnknownFlags(_))));
        assert!(matches!(
            decode(&buf[..40]),
            Err(WireError::Truncated { .. })
        ));
        assert!(matches!(
            decode(&buf[..50]),
            Err(WireError::Truncated { .. })
        ));
        let mut b = buf.clone();
        b[44] = 0;
        assert_eq!(decode(&b), Err(WireError::BadForecastLength(0)));
        let mut b = buf.clone();
        b[44] = 200;
        assert_eq!(decode(&b), Err(WireError::BadForecastLength(200)));
        let mut b = buf.clone();
        b[45 + 4 * 3 + 3] = 0; // tick 3 (5 packets) becomes 0 < 3
        assert_eq!(
            decode(&b),
            Err(WireError::ForecastNotCumulative { tick: 3 })
        );
        let mut hb = Vec::new();
        encode(&sample(false, true), b"oops", &mut hb);
        assert!(matches!(decode(&hb), Err(WireError::Malformed(_))));
    }

    proptest! {
        #[test]
        fn never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode(&bytes);
        }

        #[test]
        fn never_panics_on_mutated_datagrams(pos in 0usize..90, val in any::<u8>(), cut in 0usize..90) {
            let mut buf = Vec::new();
            encode(&sample(true, false), b"payload", &mut buf);
            let p = pos % buf.len();
            buf[p] = val;
            buf.truncate(cut.max(1));
            let _ = decode(&buf);
        }

        #[test]
        fn round_trips_any_header(seq in any::<u64>(), back in any::<u64>(), ttn in any::<u32>(),
                                  sent in any::<u64>(), id in any::<u32>(), rol in any::<u64>(),
                                  steps in proptest::collection::vec(0u32..1000, 1..32)) {
            let mut acc = 0u32;
            let forecast: Vec<u32> = steps.iter().map(|s| { acc += s; acc }).collect();
            let h = Header { seq, throwaway: seq.saturating_sub(back), time_to_next_us: ttn, sent_us: sent,
                             heartbeat: false, app_limited: false, feedback: Some(Feedback::new(id, rol, &forecast)) };
            let mut buf = Vec::new();
            encode(&h, b"data", &mut buf);
            let d = decode(&buf).unwrap();
            prop_assert_eq!(d.header, h);
        }
    }
}
