//! Mahimahi packet-delivery traces.
//!
//! A trace file holds one non-negative integer per line: a time in milliseconds since the start of
//! the trace. Each line is one opportunity to deliver [`OPPORTUNITY_BYTES`] (1500) bytes; a repeated
//! value means several opportunities in the same millisecond. Values must be non-decreasing. Blank
//! lines and whitespace around a number are tolerated.
//!
//! When a trace loops (as mahimahi's `mm-link` does by default), opportunity `t` of the file occurs at
//! `t + k * period` for every `k >= 0`, where the period is the last timestamp of the file
//! (see [`Trace::period_ms`]).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sprout_core::time::{Duration, Instant};

/// Bytes one trace line (one delivery opportunity) may carry, as in mahimahi (bytes).
pub const OPPORTUNITY_BYTES: u64 = 1500;

/// Largest timestamp accepted in a trace (milliseconds, about 584 years), so that every time in
/// microseconds, and a few loop periods on top, fit in a `u64`.
pub const MAX_TIMESTAMP_MS: u64 = u64::MAX / 1_000_000;

/// Why a trace could not be loaded or built. Every variant names the file (the path given to
/// [`Trace::load`], or the trace name given to [`Trace::parse`] / [`Trace::from_opportunities_ms`]),
/// and line-level problems name the 1-based line number.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file (or directory) could not be read.
    #[error("{file}: {source}")]
    Io {
        /// Path that failed.
        file: String,
        /// Underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The trace holds no delivery opportunity at all.
    #[error("{file}: empty trace (no delivery opportunities)")]
    Empty {
        /// Trace file or name.
        file: String,
    },
    /// A line is not a non-negative integer.
    #[error("{file}:{line}: not a non-negative integer: `{text}`")]
    NotANumber {
        /// Trace file or name.
        file: String,
        /// 1-based line number.
        line: usize,
        /// The offending text (trimmed).
        text: String,
    },
    /// A timestamp is smaller than the one before it.
    #[error("{file}:{line}: timestamp {value} goes backwards (previous {previous})")]
    Backwards {
        /// Trace file or name.
        file: String,
        /// 1-based line number of the smaller value.
        line: usize,
        /// The offending timestamp (ms).
        value: u64,
        /// The previous timestamp (ms).
        previous: u64,
    },
    /// A timestamp exceeds [`MAX_TIMESTAMP_MS`].
    #[error("{file}:{line}: timestamp {text} ms is too large (max {max})", max = MAX_TIMESTAMP_MS)]
    TooLarge {
        /// Trace file or name.
        file: String,
        /// 1-based line number.
        line: usize,
        /// The offending timestamp as written (ms).
        text: String,
    },
    /// A trace file larger than [`MAX_TRACE_FILE_BYTES`] (or a device that never ends).
    #[error(
        "{file}: larger than {}, the most a trace file may hold",
        sprout_files::human_bytes(MAX_TRACE_FILE_BYTES)
    )]
    FileTooBig {
        /// The file, as given.
        file: String,
    },
    /// A generated trace that would hold more opportunities than
    /// [`MAX_GENERATED_OPPORTUNITIES`] (or last longer than [`MAX_GENERATED_SECONDS`]).
    #[error(
        "{file}: {what} would make about {opportunities:.0} delivery opportunities over \
         {seconds} s; a generated trace may hold at most {} over at most {} s",
        MAX_GENERATED_OPPORTUNITIES,
        MAX_GENERATED_SECONDS
    )]
    TooBig {
        /// Trace name.
        file: String,
        /// What was asked for, e.g. `a constant 1e15 Mbit/s`.
        what: String,
        /// Opportunities it would hold.
        opportunities: f64,
        /// Its length, seconds.
        seconds: f64,
    },
    /// A constant rate over [`MAX_CONSTANT_MBPS`].
    #[error(
        "{file}: a constant {mbps} Mbit/s is faster than {} Mbit/s (100 Gbit/s), the fastest \
         link a trace may model; is the unit right?",
        MAX_CONSTANT_MBPS
    )]
    RateTooHigh {
        /// Trace name.
        file: String,
        /// The rate asked for, Mbit/s.
        mbps: f64,
    },
}

/// The fastest constant link a trace may model, Mbit/s (100 Gbit/s, ten times today's fastest
/// cellular links): a faster "constant" is a mistake in the unit, not a link.
pub const MAX_CONSTANT_MBPS: f64 = 100_000.0;

/// The most delivery opportunities a generated trace (constant or synthetic) may hold: about
/// 800 MB in memory; the paper's longest trace holds about 600,000.
pub const MAX_GENERATED_OPPORTUNITIES: u64 = 100_000_000;
/// The longest generated trace, seconds (one day).
pub const MAX_GENERATED_SECONDS: u64 = 86_400;

/// A link pair found by [`Trace::find_pairs`]: `(name, path of NAME.up, path of NAME.down)`.
pub type TracePair = (String, PathBuf, PathBuf);

/// A loaded mahimahi trace: a name and the sorted opportunity times (milliseconds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    name: String,
    opportunities_ms: Vec<u64>,
}

impl Trace {
    /// Reads and parses the trace file at `path`. The trace's name is the file name
    /// (e.g. `Verizon-LTE-short.down`); errors name the path as given.
    pub fn load(path: impl AsRef<Path>) -> Result<Trace, TraceError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let text = read_capped(path, MAX_TRACE_FILE_BYTES)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| shown.clone());
        let opportunities_ms = parse_lines(&shown, &text)?;
        Ok(Trace {
            name,
            opportunities_ms,
        })
    }

    /// Parses trace text (`name` is used as the trace name and in error messages).
    pub fn parse(name: impl Into<String>, text: &str) -> Result<Trace, TraceError> {
        let name = name.into();
        let opportunities_ms = parse_lines(&name, text)?;
        Ok(Trace {
            name,
            opportunities_ms,
        })
    }

    /// Builds a trace from opportunity times (ms). They must be non-empty, non-decreasing and at
    /// most [`MAX_TIMESTAMP_MS`]; errors report the 1-based index as the line.
    pub fn from_opportunities_ms(
        name: impl Into<String>,
        opportunities_ms: Vec<u64>,
    ) -> Result<Trace, TraceError> {
        let name = name.into();
        let mut previous = 0;
        for (i, &value) in opportunities_ms.iter().enumerate() {
            check_value(&name, i + 1, value, previous)?;
            previous = value;
        }
        if opportunities_ms.is_empty() {
            return Err(TraceError::Empty { file: name });
        }
        Ok(Trace {
            name,
            opportunities_ms,
        })
    }

    /// Builds a trace from times known to be valid (non-empty, sorted, bounded).
    pub(crate) fn from_valid_parts(name: String, opportunities_ms: Vec<u64>) -> Trace {
        debug_assert!(!opportunities_ms.is_empty());
        debug_assert!(opportunities_ms.windows(2).all(|w| w[0] <= w[1]));
        Trace {
            name,
            opportunities_ms,
        }
    }

    /// The trace's name (the file name for a loaded trace).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The opportunity times (ms since the start of the trace), non-decreasing, never empty.
    pub fn opportunities_ms(&self) -> &[u64] {
        &self.opportunities_ms
    }

    /// Number of delivery opportunities in one pass of the trace.
    pub fn len(&self) -> usize {
        self.opportunities_ms.len()
    }

    /// Always false: a `Trace` holds at least one opportunity (kept for API symmetry with `len`).
    pub fn is_empty(&self) -> bool {
        self.opportunities_ms.is_empty()
    }

    /// Loop period (ms) as mahimahi uses it: the last timestamp of the trace. A trace whose last
    /// timestamp is 0 (mahimahi refuses those) is given a period of 1 ms, so it repeats every ms.
    pub fn period_ms(&self) -> u64 {
        self.last_ms().max(1)
    }

    /// Loop period ([`period_ms`](Trace::period_ms) as a duration).
    pub fn duration(&self) -> Duration {
        Duration::from_micros(self.period_us())
    }

    /// Loop period (µs), for the cursor's arithmetic.
    fn period_us(&self) -> u64 {
        self.period_ms() * 1000
    }

    /// Mean capacity of one pass (kbit/s): `len * 1500 * 8 / period_ms`.
    pub fn mean_capacity_kbps(&self) -> f64 {
        (self.len() as f64) * (OPPORTUNITY_BYTES * 8) as f64 / self.period_ms() as f64
    }

    /// Bytes the trace offers (1500 per opportunity) at times in `[from, to)`. With
    /// `looping`, opportunity `t` also occurs at `t + k * period` for all `k >= 1`; without, nothing
    /// occurs after the last timestamp. O(log n). Returns 0 when `from >= to`; saturates at
    /// `u64::MAX`.
    pub fn capacity_bytes(&self, from: Instant, to: Instant, looping: bool) -> u64 {
        let (from_us, to_us) = (from.as_micros(), to.as_micros());
        if from_us >= to_us {
            return 0;
        }
        let count = self.count_before(to_us, looping) - self.count_before(from_us, looping);
        u64::try_from(count * OPPORTUNITY_BYTES as u128).unwrap_or(u64::MAX)
    }

    /// Number of opportunities at times strictly before `x_us` (µs).
    fn count_before(&self, x_us: u64, looping: bool) -> u128 {
        let ops = &self.opportunities_ms;
        let before = |r_us: u64| ops.partition_point(|&t| t * 1000 < r_us) as u128;
        if !looping {
            return before(x_us);
        }
        let period_us = self.period_us();
        let k = (x_us / period_us) as u128;
        let r = x_us % period_us;
        let n = ops.len() as u128;
        if r > 0 || k == 0 {
            // Passes 0..k are complete (pass j ends at (j+1)*period <= k*period < x), plus the
            // part of pass k before offset r.
            k * n + before(r)
        } else {
            // x = k * period exactly: pass k-1's opportunities at time `period` fall on x itself,
            // so only those of pass k-1 strictly before its end count.
            (k - 1) * n + before(period_us)
        }
    }

    fn last_ms(&self) -> u64 {
        self.opportunities_ms.last().copied().unwrap_or(0)
    }

    /// A cursor over this trace's opportunity times (µs), looping or stopping at the end.
    pub fn cursor(self: &Arc<Self>, looping: bool) -> OpportunityCursor {
        OpportunityCursor::new(Arc::clone(self), looping)
    }

    /// Finds link pairs in `dir`: every `NAME.up` with a matching `NAME.down`. Sorted by name.
    /// Files without a partner are ignored.
    pub fn find_pairs(dir: impl AsRef<Path>) -> Result<Vec<TracePair>, TraceError> {
        let dir = dir.as_ref();
        let io_err = |source| TraceError::Io {
            file: dir.display().to_string(),
            source,
        };
        let mut pairs = Vec::new();
        for entry in fs::read_dir(dir).map_err(io_err)? {
            let entry = entry.map_err(io_err)?;
            let file_name = entry.file_name();
            let Some(file_name) = file_name.to_str() else {
                continue;
            };
            let Some(stem) = file_name.strip_suffix(".up") else {
                continue;
            };
            if stem.is_empty() {
                continue;
            }
            let up = entry.path();
            let down = dir.join(format!("{stem}.down"));
            if up.is_file() && down.is_file() {
                pairs.push((stem.to_string(), up, down));
            }
        }
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(pairs)
    }
}

fn check_value(file: &str, line: usize, value: u64, previous: u64) -> Result<(), TraceError> {
    if value > MAX_TIMESTAMP_MS {
        return Err(TraceError::TooLarge {
            file: file.to_string(),
            line,
            text: value.to_string(),
        });
    }
    if value < previous {
        return Err(TraceError::Backwards {
            file: file.to_string(),
            line,
            value,
            previous,
        });
    }
    Ok(())
}

/// The largest trace file [`Trace::load`] reads, in bytes (256 MiB). The largest trace of
/// the paper (ATT-LTE-driving.down) is 2.3 MB, so this is over 100 times it; at about 8 bytes
/// a line it holds some 33 million opportunities, 6.7 minutes of a 1 Gbit/s link. A regular
/// file over it is refused by its size, before anything is read; a device or a pipe (which
/// has no size) at the cap, so that `/dev/zero` costs at most this much memory.
pub const MAX_TRACE_FILE_BYTES: u64 = 256 << 20;

/// A trace file's text, read through one open handle and at most `cap` bytes
/// ([`sprout_files::read_capped_from`]); a regular file is checked by its size first.
pub(crate) fn read_capped(path: &Path, cap: u64) -> Result<String, TraceError> {
    let shown = || path.display().to_string();
    let io = |source| TraceError::Io {
        file: shown(),
        source,
    };
    let file = fs::File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if meta.is_file() && meta.len() > cap {
        return Err(TraceError::FileTooBig { file: shown() });
    }
    let bytes = sprout_files::read_capped_from(file, path, cap).map_err(|e| match e {
        sprout_files::ReadError::TooLarge { .. } => TraceError::FileTooBig { file: shown() },
        sprout_files::ReadError::Io { source, .. } => io(source),
        sprout_files::ReadError::NotText { .. } => io(std::io::ErrorKind::InvalidData.into()),
    })?;
    String::from_utf8(bytes).map_err(|e| {
        io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "not text (invalid UTF-8 at byte {})",
                e.utf8_error().valid_up_to()
            ),
        ))
    })
}

/// At most [`sprout_files::EXCERPT_CHARS`] characters of a bad line for an error message
/// ([`sprout_files::excerpt`]), with its length when cut: a 1 GB line is not echoed whole.
fn excerpt(line: &str) -> String {
    let shown = sprout_files::excerpt(line);
    if shown.ends_with('…') {
        format!("{shown} ({} bytes)", line.len())
    } else {
        shown
    }
}

fn parse_lines(file: &str, text: &str) -> Result<Vec<u64>, TraceError> {
    // A rough capacity guess (traces use ~6-8 bytes per line) avoids most reallocations.
    let mut out = Vec::with_capacity(text.len() / 6 + 1);
    let mut previous = 0;
    let bytes = text.as_bytes();
    let (mut start, mut line) = (0, 0);
    // Line by line, as `str::lines` splits them.
    while start < bytes.len() {
        line += 1;
        // The common line, a plain number of at most 19 digits (which cannot overflow),
        // read in one pass; any other line by `other_line`.
        let (mut end, mut value) = (start, 0u64);
        while end < bytes.len() && end - start < 19 && bytes[end].is_ascii_digit() {
            value = value * 10 + u64::from(bytes[end] - b'0');
            end += 1;
        }
        let plain = end > start && bytes.get(end).is_none_or(|&b| b == b'\n');
        if !plain {
            end = bytes[start..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(bytes.len(), |k| start + k);
            match other_line(file, line, &text[start..end])? {
                Some(v) => value = v,
                None => {
                    start = end + 1;
                    continue;
                }
            }
        }
        check_value(file, line, value, previous)?;
        previous = value;
        out.push(value);
        start = end + 1;
    }
    if out.is_empty() {
        return Err(TraceError::Empty {
            file: file.to_string(),
        });
    }
    out.shrink_to_fit();
    Ok(out)
}

/// A line of a trace that is not a plain number (line `line`, 1-based, without its `\n`):
/// its number when it is one between blanks, `None` when it is blank, else the error.
fn other_line(file: &str, line: usize, raw: &str) -> Result<Option<u64>, TraceError> {
    let text = raw.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let all_digits = text.bytes().all(|b| b.is_ascii_digit());
    match text.parse::<u64>() {
        Ok(v) if all_digits => Ok(Some(v)),
        _ if all_digits => Err(TraceError::TooLarge {
            file: file.to_string(),
            line,
            text: excerpt(text),
        }),
        _ => Err(TraceError::NotANumber {
            file: file.to_string(),
            line,
            text: excerpt(text),
        }),
    }
}

/// Cheap cursor yielding successive opportunity times of a trace, in order
/// (several equal times for several opportunities in one ms). Looping cursors repeat the trace
/// every [`Trace::period_ms`]; non-looping ones end after the last line. Also an [`Iterator`].
#[derive(Debug, Clone)]
pub struct OpportunityCursor {
    trace: Arc<Trace>,
    looping: bool,
    /// Index of the next opportunity within the trace.
    index: usize,
    /// Start of the current pass (µs).
    base_us: u64,
    /// Time of the next opportunity (µs), or None when exhausted.
    next_us: Option<u64>,
}

impl OpportunityCursor {
    /// A cursor positioned at the trace's first opportunity (pass 0).
    pub fn new(trace: Arc<Trace>, looping: bool) -> Self {
        let next_us = trace.opportunities_ms.first().map(|&t| t * 1000);
        OpportunityCursor {
            trace,
            looping,
            index: 0,
            base_us: 0,
            next_us,
        }
    }

    /// A cursor positioned at the first opportunity at or after `from`. O(log n).
    pub fn starting_at(trace: Arc<Trace>, looping: bool, from: Instant) -> Self {
        let mut cursor = OpportunityCursor::new(trace, looping);
        cursor.seek(from);
        cursor
    }

    /// Moves the cursor forward to the first opportunity at or after `from`; never moves
    /// it backwards. O(log n).
    pub fn seek(&mut self, from: Instant) {
        let from_us = from.as_micros();
        let Some(next) = self.next_us else { return };
        if next >= from_us {
            return;
        }
        let ops = &self.trace.opportunities_ms;
        let period_us = self.trace.period_us();
        let (base_us, offset_us) = if self.looping {
            let k = from_us / period_us;
            let r = from_us - k * period_us;
            if r == 0 && k > 0 {
                // Pass k-1 may still have opportunities exactly at its end (= from_us).
                ((k - 1) * period_us, period_us)
            } else {
                (k * period_us, r)
            }
        } else {
            (0, from_us)
        };
        let index = ops.partition_point(|&t| t * 1000 < offset_us);
        if index < ops.len() {
            self.index = index;
            self.base_us = base_us;
            self.next_us = base_us.checked_add(ops[index] * 1000);
        } else if self.looping {
            // Nothing left in this pass at or after the offset: start of the next pass.
            self.index = 0;
            self.base_us = base_us.saturating_add(period_us);
            self.next_us = self.base_us.checked_add(ops[0] * 1000);
        } else {
            self.index = ops.len();
            self.next_us = None;
        }
    }

    /// Time of the next opportunity without consuming it; None when the trace has ended.
    #[inline]
    pub fn peek(&self) -> Option<Instant> {
        self.next_us.map(Instant::from_micros)
    }

    /// Whether this cursor loops the trace.
    pub fn looping(&self) -> bool {
        self.looping
    }

    /// The trace this cursor walks.
    pub fn trace(&self) -> &Arc<Trace> {
        &self.trace
    }

    #[inline]
    fn step(&mut self) {
        let ops = &self.trace.opportunities_ms;
        self.index += 1;
        if self.index >= ops.len() {
            if !self.looping {
                self.next_us = None;
                return;
            }
            self.index = 0;
            match self.base_us.checked_add(self.trace.period_us()) {
                Some(b) => self.base_us = b,
                None => {
                    self.next_us = None;
                    return;
                }
            }
        }
        self.next_us = self.base_us.checked_add(ops[self.index] * 1000);
    }
}

impl Iterator for OpportunityCursor {
    type Item = Instant;

    /// Next opportunity time.
    #[inline]
    fn next(&mut self) -> Option<Instant> {
        let now = self.next_us?;
        self.step();
        Some(Instant::from_micros(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_numbers_and_padded_ones_read_alike() {
        let t = Trace::parse("t", "0\n007\n 8 \n9\r\n\n0000000000000000010\n10\n11").unwrap();
        assert_eq!(t.opportunities_ms(), [0, 7, 8, 9, 10, 10, 11]);
        let t = Trace::parse("t", "\n\n00000000000000000012\n").unwrap();
        assert_eq!(t.opportunities_ms(), [12]);
        // 19 digits read as a number (then found too large), as a padded line is.
        let big = "9".repeat(19);
        for text in [
            format!("1\n{big}\n"),
            format!("1\n {big}\n"),
            format!("1\n{big}"),
            format!("1\n{big}9\n"),
        ] {
            let e = Trace::parse("t", &text).unwrap_err().to_string();
            assert!(e.starts_with("t:2: ") && e.contains(&big), "{e}");
        }
    }

    #[test]
    fn a_bad_line_is_quoted_in_a_short_excerpt() {
        let long = format!("1\n2\n{}x\n", "9".repeat(1_000_000));
        let e = Trace::parse("t", &long).unwrap_err().to_string();
        assert!(
            e.starts_with("t:3: not a non-negative integer: `9999"),
            "{e:.80}"
        );
        assert!(e.len() < 120, "{} bytes: {e:.120}", e.len());
        assert!(e.contains("(1000001 bytes)"), "{e}");
        // Short lines are quoted whole.
        let e = Trace::parse("t", "1\nten\n").unwrap_err().to_string();
        assert_eq!(e, "t:2: not a non-negative integer: `ten`");
    }

    #[test]
    fn a_file_over_the_cap_is_refused_by_its_size_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.up");
        // Sparse: 1 GiB that costs no disk, and would cost 1 GiB of memory if read.
        fs::File::create(&big).unwrap().set_len(1 << 30).unwrap();
        let started = std::time::Instant::now();
        let e = Trace::load(&big).unwrap_err();
        assert!(matches!(e, TraceError::FileTooBig { .. }), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_millis(100));
        assert!(e
            .to_string()
            .ends_with("larger than 256 MiB, the most a trace file may hold"));
    }

    #[test]
    fn a_device_that_never_ends_is_refused_at_the_cap() {
        let e = Trace::load("/dev/zero").unwrap_err();
        assert!(matches!(e, TraceError::FileTooBig { .. }), "{e}");
        assert!(e.to_string().contains("the most a trace file may hold"));
    }
}
