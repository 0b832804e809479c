//! The link's buffer: a limit in packets, bytes or time at the link's rate, and which end of the
//! queue loses a packet when an arriving one does not fit (drop-tail or drop-head).
//!
//! Written on the command line as `100pkt`, `200kB` (also `B`, `KB`, `MB`, `kiB`, `MiB`) or
//! `50ms` (also `s`, `us`), optionally followed by `,head` for drop-head (`,tail`, the default,
//! is accepted too): `--buffer 100pkt`, `--buffer 50ms,head`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use sprout_core::time::Duration;

/// How much the queue may hold. Like mahimahi's `droptail`/`drophead` queues, the limit counts
/// the packets *waiting* in the queue: a head packet whose transmission has started is in
/// transit and not counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BufferLimit {
    /// At most this many packets.
    Packets(u64),
    /// At most this many bytes.
    Bytes(u64),
    /// At most the bytes the link carries in this time at its mean rate (the trace's mean
    /// capacity of one pass: opportunities x opportunity bytes / period), rounded down; serialized
    /// in µs.
    Time(Duration),
}

/// Which packet is lost when an arriving packet would overflow the buffer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropEnd {
    /// The arriving packet (drop-tail, mahimahi's `droptail`, Linux's `pfifo`/`bfifo`).
    #[default]
    Tail,
    /// The oldest waiting packets, as many as needed for the arriving one to fit (mahimahi's
    /// `drophead`, Linux's `pfifo_head_drop`). A packet larger than the whole limit is dropped
    /// itself.
    Head,
}

/// A finite buffer: its limit and the end that drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Buffer {
    /// The limit.
    pub limit: BufferLimit,
    /// Which end drops. Default tail.
    #[serde(default)]
    pub drop: DropEnd,
}

/// A buffer the command line cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "bad buffer '{0}': expected a positive limit in packets, bytes or time, e.g. 100pkt, \
     200kB or 50ms, optionally followed by ,head or ,tail"
)]
pub struct BadBuffer(pub String);

impl FromStr for Buffer {
    type Err = BadBuffer;
    /// `LIMIT[,head|,tail]`; LIMIT is `Npkt`, a byte size (`N`/`NB`, `NkB`/`NKB` (1000),
    /// `NkiB` (1024), `NMB`, `NMiB`) or a time (`Nms`, `Ns`, `Nus`). Blanks around are ignored.
    fn from_str(s: &str) -> Result<Self, BadBuffer> {
        let bad = || BadBuffer(sprout_files::excerpt(s.trim()));
        let (limit, end) = match s.trim().split_once(',') {
            Some((l, e)) => (l.trim(), e.trim()),
            None => (s.trim(), "tail"),
        };
        let drop = match end {
            "tail" => DropEnd::Tail,
            "head" => DropEnd::Head,
            _ => return Err(bad()),
        };
        if let Some(d) = crate::units::parse_time(limit) {
            if d == Duration::ZERO {
                return Err(bad());
            }
            return Ok(Buffer {
                limit: BufferLimit::Time(d),
                drop,
            });
        }
        let split = limit
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(limit.len());
        let (number, unit) = limit.split_at(split);
        if number.is_empty() {
            return Err(bad());
        }
        let value: f64 = number.parse().map_err(|_| bad())?;
        let whole = |scale: f64| -> Result<u64, BadBuffer> {
            let v = (value * scale).round();
            if (1.0..1e18).contains(&v) {
                Ok(v as u64)
            } else {
                Err(bad())
            }
        };
        let limit = match unit.trim() {
            "pkt" | "pkts" | "p" => {
                if value.fract() != 0.0 {
                    return Err(bad());
                }
                BufferLimit::Packets(whole(1.0)?)
            }
            "" | "B" => BufferLimit::Bytes(whole(1.0)?),
            "kB" | "KB" => BufferLimit::Bytes(whole(1e3)?),
            "kiB" | "KiB" => BufferLimit::Bytes(whole(1024.0)?),
            "MB" => BufferLimit::Bytes(whole(1e6)?),
            "MiB" => BufferLimit::Bytes(whole(1024.0 * 1024.0)?),
            _ => return Err(bad()),
        };
        Ok(Buffer { limit, drop })
    }
}

impl fmt::Display for Buffer {
    /// The command line's spelling: `100pkt`, `200000B`, `50ms`, with `,head` for drop-head.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.limit {
            BufferLimit::Packets(n) => write!(f, "{n}pkt")?,
            BufferLimit::Bytes(n) => write!(f, "{n}B")?,
            BufferLimit::Time(d) => write!(f, "{}", crate::queue::format_ms(d))?,
        }
        if self.drop == DropEnd::Head {
            write!(f, ",head")?;
        }
        Ok(())
    }
}

impl Buffer {
    /// The limit as (packets, bytes), with a time limit made bytes at `bytes_per_s` (the
    /// link's mean rate, bytes per second), rounded down.
    pub fn resolve(&self, bytes_per_s: f64) -> (Option<u64>, Option<u64>) {
        match self.limit {
            BufferLimit::Packets(n) => (Some(n), None),
            BufferLimit::Bytes(n) => (None, Some(n)),
            BufferLimit::Time(d) => {
                let bytes = (bytes_per_s * d.as_secs_f64()).floor();
                (None, Some(if bytes.is_finite() { bytes as u64 } else { 0 }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_unit_and_end() {
        let b = |s: &str| s.parse::<Buffer>().unwrap();
        assert_eq!(b("100pkt").limit, BufferLimit::Packets(100));
        assert_eq!(b("100pkt").drop, DropEnd::Tail);
        assert_eq!(b("200kB").limit, BufferLimit::Bytes(200_000));
        assert_eq!(b("2KiB").limit, BufferLimit::Bytes(2048));
        assert_eq!(b("1500").limit, BufferLimit::Bytes(1500));
        assert_eq!(
            b(" 50ms,head ").limit,
            BufferLimit::Time(Duration::from_millis(50))
        );
        assert_eq!(b("50ms,head").drop, DropEnd::Head);
        assert_eq!(
            b("0.5s").limit,
            BufferLimit::Time(Duration::from_millis(500))
        );
        for bad in [
            "",
            "pkt",
            "0pkt",
            "1.5pkt",
            "-3kB",
            "10 parsecs",
            "5ms,middle",
            "0ms",
        ] {
            assert!(bad.parse::<Buffer>().is_err(), "{bad}");
        }
        assert_eq!(b("50ms,head").to_string(), "50ms,head");
        assert_eq!(b("100pkt").to_string(), "100pkt");
    }

    #[test]
    fn time_limit_is_bytes_at_the_rate() {
        // 12 Mbit/s = 1.5 MB/s; 50 ms of it is 75 000 bytes.
        let b: Buffer = "50ms".parse().unwrap();
        assert_eq!(b.resolve(1.5e6), (None, Some(75_000)));
        let p: Buffer = "7pkt".parse().unwrap();
        assert_eq!(p.resolve(1.5e6), (Some(7), None));
    }
}
