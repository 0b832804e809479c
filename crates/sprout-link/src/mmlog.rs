//! Mahimahi `mm-link` log format: a writer fed by [`LinkEvent`]s and a reader.
//!
//! A log is a few `#` comment lines (header) followed by one line per event, times in integer
//! milliseconds:
//!
//! - `t + bytes`: a packet arrives at the queue (mahimahi logs this for dropped packets too);
//! - `t d packets bytes reason`: packets dropped (mahimahi ≥ 0.98 `record_drop`; always with
//!   `packets` = 1 here), with why: `buffer` (the buffer's limit), `aqm` (CoDel or PIE) or
//!   `loss` (random loss). The reason is our addition; mahimahi writes none, and the reader
//!   takes lines with or without it. Written after the packet's `+` line for drops at the tail
//!   (the buffer, PIE) and random losses, and alone for drops from inside the queue (CoDel, a
//!   drop-head buffer), whose arrival was logged when they joined it;
//! - `t # bytes`: a delivery opportunity;
//! - `t - bytes delay`: a packet departs; `delay` = departure ms - arrival-at-queue ms. A
//!   packet the link marked CE ([`crate::ecn`]) departs as `t - bytes delay ce:reason`, with
//!   why: `ce:aqm` (the AQM marked it instead of dropping it) or `ce:step` (the L4S step).
//!   The mark is our addition, written only when the link marks (with `ecn` or an L4S step).
//!
//! With random loss configured ([`LinkConfig::loss`] > 0) the header has one more comment line,
//! `# loss: <probability> (bernoulli, seed <seed>)` (with Gilbert-Elliott loss, `# loss:
//! gemodel p=P r=R 1-h=H 1-k=K (seed <seed>)`); a delay trace adds `# delay trace: <name>
//! (interval <T>, <n> values)`, jitter `# jitter: <T>[,reorder]`, and ECN marking `# ecn:
//! mark` with `, l4s step <T>` (or `# ecn: l4s step <T>` alone). Readers ignore unknown
//! comments.

use std::io::{self, BufRead, BufWriter, Write};
use std::path::Path;

use crate::ecn::MarkReason;
use crate::link::{LinkConfig, LinkEvent};
use crate::queue::{format_ms, DropReason};

/// Writes a mahimahi `mm-link` log from link events. Times are written as whole milliseconds
/// relative to a base timestamp of 0 (`floor(µs / 1000)`). Output is buffered; call
/// [`finish`](MmLogWriter::finish) to flush and see write errors.
#[derive(Debug)]
pub struct MmLogWriter<W: Write> {
    out: BufWriter<W>,
}

impl<W: Write> MmLogWriter<W> {
    /// Starts a log and writes its header: `# mahimahi mm-link (<direction>) [<trace_name>] > -`,
    /// `# queue: ...`, `# init timestamp: 0`, `# base timestamp: 0`,
    /// `# propagation delay: N ms` (N = floor of the configured delay in ms), and, only if
    /// `config.loss > 0`, `# loss: P (bernoulli, seed S)`.
    pub fn new(w: W, direction: &str, trace_name: &str, config: &LinkConfig) -> io::Result<Self> {
        Self::with_log_name(w, direction, trace_name, "-", config)
    }

    /// Like [`new`](MmLogWriter::new), naming the log file in the first header line.
    pub fn with_log_name(
        w: W,
        direction: &str,
        trace_name: &str,
        log_name: &str,
        config: &LinkConfig,
    ) -> io::Result<Self> {
        let mut out = BufWriter::with_capacity(64 * 1024, w);
        writeln!(
            out,
            "# mahimahi mm-link ({direction}) [{trace_name}] > {log_name}"
        )?;
        writeln!(out, "# queue: {}", config.queue_description())?;
        writeln!(out, "# init timestamp: 0")?;
        writeln!(out, "# base timestamp: 0")?;
        writeln!(
            out,
            "# propagation delay: {} ms",
            config.propagation_delay_us.as_millis()
        )?;
        if config.loss > 0.0 {
            writeln!(
                out,
                "# loss: {} (bernoulli, seed {})",
                config.loss, config.seed
            )?;
        }
        if let Some(ge) = &config.gilbert_elliott {
            writeln!(out, "# loss: {ge} (seed {})", config.seed)?;
        }
        if let Some(t) = &config.delay_trace {
            writeln!(
                out,
                "# delay trace: {} (interval {}, {} values)",
                t.name(),
                format_ms(t.interval()),
                t.delays().len()
            )?;
        }
        if let Some(j) = &config.jitter {
            writeln!(out, "# jitter: {j}")?;
        }
        let step = config
            .l4s_step_us
            .map(|t| format!("l4s step {}", format_ms(t)));
        match (config.ecn, step) {
            (true, Some(step)) => writeln!(out, "# ecn: mark, {step}")?,
            (true, None) => writeln!(out, "# ecn: mark")?,
            (false, Some(step)) => writeln!(out, "# ecn: {step}")?,
            (false, None) => {}
        }
        Ok(MmLogWriter { out })
    }

    /// Writes the line(s) for one event. A drop at the tail (or a loss) writes both its arrival
    /// (`t + bytes`) and `t d 1 bytes reason`, as mahimahi does (the reason aside); a drop from
    /// inside the queue writes only `t d 1 bytes reason`.
    pub fn event<P>(&mut self, event: &LinkEvent<P>) -> io::Result<()> {
        match event {
            LinkEvent::Enqueued { at, bytes, .. } => {
                writeln!(self.out, "{} + {}", at.as_millis(), bytes)
            }
            LinkEvent::Dropped {
                at, bytes, reason, ..
            } => {
                let ms = at.as_millis();
                writeln!(self.out, "{ms} + {bytes}")?;
                writeln!(self.out, "{ms} d 1 {bytes} {}", reason.as_str())
            }
            LinkEvent::HeadDropped {
                at, bytes, reason, ..
            } => {
                writeln!(
                    self.out,
                    "{} d 1 {} {}",
                    at.as_millis(),
                    bytes,
                    reason.as_str()
                )
            }
            LinkEvent::Opportunity { at, bytes } => {
                writeln!(self.out, "{} # {}", at.as_millis(), bytes)
            }
            LinkEvent::Delivered(d) => {
                let t = d.delivered.as_millis();
                let delay = t.saturating_sub(d.enqueued.as_millis());
                match d.mark {
                    None => writeln!(self.out, "{} - {} {}", t, d.bytes, delay),
                    Some(m) => {
                        writeln!(self.out, "{} - {} {} ce:{}", t, d.bytes, delay, m.as_str())
                    }
                }
            }
        }
    }

    /// Flushes the buffer and returns the underlying writer.
    pub fn finish(self) -> io::Result<W> {
        self.out.into_inner().map_err(|e| e.into_error())
    }
}

/// Why a log could not be read. Line numbers are 1-based.
#[derive(Debug, thiserror::Error)]
pub enum MmLogError {
    /// Reading failed.
    #[error("line {line}: read error: {source}")]
    Io {
        /// Line being read when the error occurred.
        line: usize,
        /// Underlying error.
        #[source]
        source: io::Error,
    },
    /// A line does not have the expected shape.
    #[error("line {line}: {reason}: `{text}`")]
    Malformed {
        /// The line number.
        line: usize,
        /// What is wrong.
        reason: &'static str,
        /// The offending line, at most [`sprout_files::EXCERPT_CHARS`] characters of it.
        text: String,
    },
    /// The log is larger than [`MAX_MMLOG_BYTES`] (or a device that never ends).
    #[error(
        "larger than {}, the most an mm-link log may hold",
        sprout_files::human_bytes(MAX_MMLOG_BYTES)
    )]
    TooLarge,
}

/// The largest mm-link log [`MmLog::load`] reads, bytes (1 GiB: about 80 million events, a
/// 140 s emulated run of a 1 Gbit/s link logs under half of it).
pub const MAX_MMLOG_BYTES: u64 = 1 << 30;

/// `t + bytes`: a packet arrived at the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MmArrival {
    /// Time (ms, as written in the log).
    pub ms: u64,
    /// Size (bytes).
    pub bytes: u64,
}

/// `t # bytes`: a delivery opportunity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MmOpportunity {
    /// Time (ms, as written in the log).
    pub ms: u64,
    /// Budget (bytes).
    pub bytes: u64,
}

/// `t - bytes delay`: a packet departed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MmDeparture {
    /// Time (ms, as written in the log).
    pub ms: u64,
    /// Size (bytes).
    pub bytes: u64,
    /// Time in the queue (ms).
    pub delay_ms: u64,
    /// Why the link marked it CE, if the log says it did (`ce:aqm`, `ce:step`).
    pub mark: Option<MarkReason>,
}

/// `t d packets bytes [reason]`: packets dropped by the queue (or lost).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MmDrop {
    /// Time (ms, as written in the log).
    pub ms: u64,
    /// Number of packets dropped.
    pub packets: u64,
    /// Bytes dropped.
    pub bytes: u64,
    /// Why, when the log says (ours do; mahimahi's do not).
    pub reason: Option<DropReason>,
}

/// A parsed mahimahi `mm-link` log. Event times are kept as written; subtract
/// `base_timestamp_ms` for times relative to the link's start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MmLog {
    /// From the `# mahimahi mm-link (<direction>) [...]` header line, if present.
    pub direction: Option<String>,
    /// The trace file named in the first header line, if present.
    pub trace_file: Option<String>,
    /// From `# queue: ...`, if present.
    pub queue: Option<String>,
    /// From `# init timestamp: N` (ms), if present.
    pub init_timestamp_ms: Option<u64>,
    /// From `# base timestamp: N` (ms); 0 if absent.
    pub base_timestamp_ms: u64,
    /// From `# propagation delay: N ms` (written by [`MmLogWriter`]), if present.
    pub propagation_delay_ms: Option<u64>,
    /// Arrivals at the queue, in file order (includes dropped packets).
    pub arrivals: Vec<MmArrival>,
    /// Delivery opportunities, in file order.
    pub opportunities: Vec<MmOpportunity>,
    /// Departures, in file order.
    pub departures: Vec<MmDeparture>,
    /// Drops, in file order.
    pub drops: Vec<MmDrop>,
}

impl MmLog {
    /// Reads and parses the log file at `path`, at most [`MAX_MMLOG_BYTES`] of it
    /// ([`MmLogError::TooLarge`] beyond).
    pub fn load(path: impl AsRef<Path>) -> Result<MmLog, MmLogError> {
        use std::io::Read;
        let file =
            std::fs::File::open(path).map_err(|source| MmLogError::Io { line: 0, source })?;
        let mut limited = io::BufReader::new(file).take(MAX_MMLOG_BYTES + 1);
        let parsed = MmLog::parse(&mut limited);
        if limited.limit() == 0 {
            return Err(MmLogError::TooLarge);
        }
        parsed
    }

    /// Parses a log. Blank lines are skipped; unknown `#` comments are ignored.
    pub fn parse(reader: impl BufRead) -> Result<MmLog, MmLogError> {
        let mut log = MmLog::default();
        for (i, line) in reader.lines().enumerate() {
            let line_no = i + 1;
            let line = line.map_err(|source| MmLogError::Io {
                line: line_no,
                source,
            })?;
            let text = line.trim();
            if text.is_empty() {
                continue;
            }
            let bad = |reason: &'static str| MmLogError::Malformed {
                line: line_no,
                reason,
                text: sprout_files::excerpt(&line),
            };
            if let Some(comment) = text.strip_prefix('#') {
                log.comment(comment.trim()).map_err(bad)?;
                continue;
            }
            let mut fields = text.split_ascii_whitespace();
            let ms = number(fields.next()).ok_or_else(|| bad("bad timestamp"))?;
            let kind = fields.next().ok_or_else(|| bad("missing event type"))?;
            let a = number(fields.next());
            let b = number(fields.next());
            let word = fields.next();
            let (reason, mark) = match (kind, word) {
                ("d", Some(w)) => (
                    Some(DropReason::from_word(w).ok_or_else(|| bad("unknown drop reason"))?),
                    None,
                ),
                ("-", Some(w)) => {
                    let m = w.strip_prefix("ce:").and_then(MarkReason::from_word);
                    (None, Some(m.ok_or_else(|| bad("unknown mark"))?))
                }
                _ => (None, None),
            };
            let extra =
                (word.is_some() && reason.is_none() && mark.is_none()) || fields.next().is_some();
            match (kind, a, b, extra) {
                ("+", Some(bytes), None, false) => log.arrivals.push(MmArrival { ms, bytes }),
                ("#", Some(bytes), None, false) => {
                    log.opportunities.push(MmOpportunity { ms, bytes })
                }
                ("-", Some(bytes), Some(delay_ms), false) => log.departures.push(MmDeparture {
                    ms,
                    bytes,
                    delay_ms,
                    mark,
                }),
                ("d", Some(packets), Some(bytes), false) => log.drops.push(MmDrop {
                    ms,
                    packets,
                    bytes,
                    reason,
                }),
                ("+" | "#" | "-" | "d", ..) => return Err(bad("wrong fields for event type")),
                _ => return Err(bad("unknown event type")),
            }
        }
        Ok(log)
    }

    fn comment(&mut self, c: &str) -> Result<(), &'static str> {
        if let Some(rest) = c.strip_prefix("base timestamp:") {
            self.base_timestamp_ms = rest.trim().parse().map_err(|_| "bad base timestamp")?;
        } else if let Some(rest) = c.strip_prefix("init timestamp:") {
            self.init_timestamp_ms = Some(rest.trim().parse().map_err(|_| "bad init timestamp")?);
        } else if let Some(rest) = c.strip_prefix("propagation delay:") {
            let n = rest.trim().trim_end_matches("ms").trim();
            self.propagation_delay_ms = Some(n.parse().map_err(|_| "bad propagation delay")?);
        } else if let Some(rest) = c.strip_prefix("queue:") {
            self.queue = Some(rest.trim().to_string());
        } else if let Some(rest) = c.strip_prefix("mahimahi mm-link (") {
            if let Some((direction, rest)) = rest.split_once(')') {
                self.direction = Some(direction.to_string());
                if let Some((_, rest)) = rest.split_once('[') {
                    if let Some((file, _)) = rest.rsplit_once(']') {
                        self.trace_file = Some(file.to_string());
                    }
                }
            }
        }
        Ok(())
    }
}

fn number(field: Option<&str>) -> Option<u64> {
    field.and_then(|f| f.parse().ok())
}
