//! Conversions to mahimahi traces: from a per-interval throughput CSV (the form most public
//! 5G data sets take: a time and a throughput per row), and writing a [`Trace`] as text.
//!
//! # The approximation
//!
//! A throughput CSV says how many bits crossed the link in each interval, not when each packet
//! arrived inside it. [`throughput_csv_to_trace`] spreads each interval's bits over it as
//! evenly spaced 1500-byte delivery opportunities (the k-th of n in `[a, b)` at
//! `ceil(a + k (b - a) / n)` ms, the last at the interval's end, as
//! [`crate::constant_rate_trace`] places them), the bits short of a whole packet carried to
//! the next interval. The result has the data set's rate in every interval, but none of the
//! arrival pattern inside an interval (the bursts, the millisecond-scale gaps of the paper's
//! Figure 2, outages shorter than an interval): a link replayed from it is smoother than the
//! real one, and a scheme that reacts within an interval (as Sprout does, every 20 ms) meets an
//! easier link than the one measured. Use it for capacity over seconds, not for fine timing.
//!
//! # The CSV
//!
//! - Fields are separated by a comma, a semicolon, a tab, or runs of spaces (detected from the
//!   first row unless given); a field may be in double quotes. Blank lines and lines starting
//!   with `#` are skipped.
//! - The first row is a header when the chosen columns hold something other than numbers
//!   there; columns are chosen by 1-based number or by header name (then the first row must be
//!   the header).
//! - Row `i`'s time `t_i` starts its interval, which lasts until the next row's time (times
//!   must increase; they are taken relative to the first row's, so absolute clock times work).
//!   The last row lasts [`CsvOptions::interval_s`] if given, else as long as the row before.
//!   Without a time column each row is one interval of [`CsvOptions::interval_s`] seconds.
//! - The trace starts at 0 ms (the first row's time) and ends at the end of the last interval:
//!   when no opportunity falls on that millisecond one is added there (at most 1500 bytes more),
//!   so the trace's loop period is the CSV's duration.

use std::io::{BufRead, Write};

use crate::trace::{Trace, MAX_TIMESTAMP_MS, OPPORTUNITY_BYTES};

/// Bits one opportunity carries (1500 bytes = 12,000 bits).
const BITS_PER_OPPORTUNITY: f64 = (OPPORTUNITY_BYTES * 8) as f64;

/// Highest rate accepted in a CSV (bit/s): 1 Tbit/s.
pub const MAX_RATE_BPS: f64 = 1e12;

/// Writes `trace` as mahimahi text: one timestamp (ms) per line.
pub fn write_trace(trace: &Trace, out: impl Write) -> std::io::Result<()> {
    write_opportunities(trace.opportunities_ms(), out)
}

/// Writes opportunity times (ms) as mahimahi text: one per line.
pub fn write_opportunities(opportunities_ms: &[u64], out: impl Write) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(out);
    for t in opportunities_ms {
        writeln!(out, "{t}")?;
    }
    out.flush()
}

/// A CSV column: a 1-based number or a header name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Column {
    /// The column's position, counting from 1.
    Number(usize),
    /// The column whose header is this name (compared without case or surrounding spaces).
    Name(String),
}

/// A column that names none.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ColumnError {
    /// Nothing given.
    #[error("a column is a number counting from 1 or a header name")]
    Empty,
    /// A number that is no position (0, or too large).
    #[error("column {0}: columns are counted from 1 (or named by their header)")]
    NotAPosition(String),
}

impl std::str::FromStr for Column {
    type Err = ColumnError;

    /// A number (`2`) is a position counting from 1; anything else a header name.
    fn from_str(s: &str) -> Result<Column, ColumnError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(ColumnError::Empty);
        }
        if s.bytes().all(|b| b.is_ascii_digit()) {
            match s.parse::<usize>() {
                Ok(n) if n >= 1 => Ok(Column::Number(n)),
                _ => Err(ColumnError::NotAPosition(s.to_string())),
            }
        } else {
            Ok(Column::Name(s.to_string()))
        }
    }
}

impl std::fmt::Display for Column {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Column::Number(n) => write!(f, "column {n}"),
            Column::Name(s) => write!(f, "column \"{s}\""),
        }
    }
}

/// How [`throughput_csv_to_trace`] reads a CSV.
#[derive(Debug, Clone, PartialEq)]
pub struct CsvOptions {
    /// The time column (the start of each row's interval), or `None` when rows are
    /// consecutive intervals of [`CsvOptions::interval_s`]. Default: column 1.
    pub time_column: Option<Column>,
    /// The throughput column. Default: column 2.
    pub rate_column: Column,
    /// Length of each row's interval without a time column, and of the last row's with one
    /// (seconds); `None` = the last row lasts as long as the one before (required without a
    /// time column).
    pub interval_s: Option<f64>,
    /// Seconds per unit of the time column (1 for seconds, 0.001 for milliseconds).
    pub time_unit_s: f64,
    /// Bit/s per unit of the throughput column (1e6 for Mbit/s, 1e3 for kbit/s).
    pub rate_unit_bps: f64,
    /// Field separator; `None` = detected from the first row (`,` `;` tab, else spaces).
    pub delimiter: Option<char>,
    /// Most opportunities to write before giving up (a guard against a runaway rate).
    pub max_opportunities: u64,
}

impl Default for CsvOptions {
    /// Time in column 1 (seconds), Mbit/s in column 2, separator detected, at most 500 million
    /// opportunities (750 GB of link capacity).
    fn default() -> Self {
        CsvOptions {
            time_column: Some(Column::Number(1)),
            rate_column: Column::Number(2),
            interval_s: None,
            time_unit_s: 1.0,
            rate_unit_bps: 1e6,
            delimiter: None,
            max_opportunities: 500_000_000,
        }
    }
}

/// Why a CSV could not be converted. Every variant names the input; line-level problems name
/// the 1-based line.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    /// The input could not be read or the output written.
    #[error("{file}: {source}")]
    Io {
        /// The file that failed.
        file: String,
        /// Underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A row is malformed (a missing column, a field that is not a number, a time that does
    /// not increase, a negative rate).
    #[error("{file}:{line}: {message}")]
    Line {
        /// Input file.
        file: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The input as a whole cannot be converted (no rows, no opportunity, an option that does
    /// not fit it).
    #[error("{file}: {message}")]
    Input {
        /// Input file.
        file: String,
        /// What is wrong.
        message: String,
    },
}

/// What [`throughput_csv_to_trace`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct ConvertSummary {
    /// Data rows read.
    pub rows: u64,
    /// The header row's fields, if the first row was a header.
    pub header: Option<Vec<String>>,
    /// Duration of the trace (ms): the end of the last interval, rounded up.
    pub duration_ms: u64,
    /// Opportunities written (lines).
    pub opportunities: u64,
    /// Mean rate of the CSV over its intervals (Mbit/s).
    pub csv_mean_mbit: f64,
    /// Mean rate of the trace, `opportunities * 12,000 bits / duration` (Mbit/s).
    pub trace_mean_mbit: f64,
    /// Whether an opportunity was added at the end so that the trace lasts the CSV's duration.
    pub added_final_opportunity: bool,
    /// Bits of the CSV left over at the end, short of one whole packet (< 12,000).
    pub leftover_bits: f64,
}

/// A data row: its line number, time (s, as in the file, scaled) and rate (bit/s).
struct Row {
    line: usize,
    time_s: f64,
    rate_bps: f64,
}

fn detect_delimiter(line: &str) -> Option<char> {
    [',', ';', '\t'].into_iter().find(|&d| line.contains(d))
}

fn split_fields(line: &str, delimiter: Option<char>) -> Vec<String> {
    let unquote = |s: &str| {
        let s = s.trim();
        s.strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .unwrap_or(s)
            .trim()
            .to_string()
    };
    match delimiter {
        Some(d) => line.split(d).map(unquote).collect(),
        None => line.split_whitespace().map(unquote).collect(),
    }
}

/// An error about the input as a whole.
fn input_err(name: &str, message: String) -> ConvertError {
    ConvertError::Input {
        file: name.to_string(),
        message,
    }
}

/// An error about line `line` of the input.
fn line_err(name: &str, line: usize, message: String) -> ConvertError {
    ConvertError::Line {
        file: name.to_string(),
        line,
        message,
    }
}

/// Checks the options that do not depend on the input: units and interval positive, and an
/// interval when there is no time column.
fn check_options(options: &CsvOptions, name: &str) -> Result<(), ConvertError> {
    let good = |x: f64| x.is_finite() && x > 0.0;
    if !good(options.time_unit_s) || !good(options.rate_unit_bps) {
        return Err(input_err(
            name,
            "the time and rate units must be positive".into(),
        ));
    }
    if let Some(i) = options.interval_s {
        if !good(i) {
            return Err(input_err(
                name,
                format!("the interval must be a positive number of seconds, not {i}"),
            ));
        }
    }
    if options.time_column.is_none() && options.interval_s.is_none() {
        return Err(input_err(
            name,
            "without a time column, give each row's interval (--interval SECONDS)".into(),
        ));
    }
    Ok(())
}

/// The columns' 0-based indices (time, rate) chosen by `options`, from the first row's
/// `fields` (line `line_no`), and whether that row is a header: it is when the chosen columns
/// are not numbers there (with a column chosen by name, when any field is not a number).
fn first_row_columns(
    fields: &[String],
    options: &CsvOptions,
    name: &str,
    line_no: usize,
) -> Result<((Option<usize>, usize), bool), ConvertError> {
    let numeric_at = |c: &Column| match c {
        Column::Number(n) => n
            .checked_sub(1)
            .and_then(|i| fields.get(i))
            .is_some_and(|f| f.parse::<f64>().is_ok()),
        Column::Name(_) => false,
    };
    let named = matches!(options.rate_column, Column::Name(_))
        || matches!(options.time_column, Some(Column::Name(_)));
    let is_header = if named {
        // Columns chosen by name need a header, and a row of numbers is none.
        !fields.iter().all(|f| f.parse::<f64>().is_ok())
    } else {
        !(numeric_at(&options.rate_column) && options.time_column.as_ref().is_none_or(numeric_at))
    };
    let names = if is_header { Some(fields) } else { None };
    let resolve = |c: &Column| -> Result<usize, ConvertError> {
        match (c, names) {
            (Column::Number(0), _) => Err(input_err(
                name,
                "columns are counted from 1 (or named by their header)".into(),
            )),
            (Column::Number(n), _) => Ok(n - 1),
            (Column::Name(want), Some(names)) => names
                .iter()
                .position(|h| h.trim().eq_ignore_ascii_case(want.trim()))
                .ok_or_else(|| {
                    line_err(
                        name,
                        line_no,
                        format!(
                            "no column named \"{want}\" in the header ({})",
                            sprout_files::excerpt(&names.join(", "))
                        ),
                    )
                }),
            (Column::Name(want), None) => Err(line_err(
                name,
                line_no,
                format!(
                    "the first row is not a header (it is all numbers), so there is \
                     no column named \"{want}\"; give its number"
                ),
            )),
        }
    };
    let t = options.time_column.as_ref().map(resolve).transpose()?;
    let r = resolve(&options.rate_column)?;
    Ok(((t, r), is_header))
}

/// The number in field `idx` of line `line_no` (the `what` of the CSV, in column `col`).
fn number_field(
    fields: &[String],
    idx: usize,
    what: &str,
    col: &Column,
    name: &str,
    line_no: usize,
) -> Result<f64, ConvertError> {
    let text = fields.get(idx).ok_or_else(|| {
        line_err(
            name,
            line_no,
            format!(
                "has {} field{}; the {what} is {col}",
                fields.len(),
                if fields.len() == 1 { "" } else { "s" }
            ),
        )
    })?;
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(line_err(
            name,
            line_no,
            format!(
                "the {what} ({col}) is not a number: `{}`",
                sprout_files::excerpt(text)
            ),
        )),
    }
}

/// The throughput of a data row (bit/s): its rate column in [`CsvOptions::rate_unit_bps`],
/// not negative and at most [`MAX_RATE_BPS`].
fn row_rate_bps(
    fields: &[String],
    rate_idx: usize,
    options: &CsvOptions,
    name: &str,
    line_no: usize,
) -> Result<f64, ConvertError> {
    let rate = number_field(
        fields,
        rate_idx,
        "throughput",
        &options.rate_column,
        name,
        line_no,
    )?;
    if rate < 0.0 {
        return Err(line_err(
            name,
            line_no,
            format!("the throughput is negative: {rate}"),
        ));
    }
    let rate_bps = rate * options.rate_unit_bps;
    if rate_bps > MAX_RATE_BPS {
        return Err(line_err(
            name,
            line_no,
            format!("the throughput {rate} is over 1 Tbit/s; is the unit right?"),
        ));
    }
    Ok(rate_bps)
}

/// Converts a per-interval throughput CSV read from `input` (named `name` in errors) into a
/// mahimahi trace written to `out`, streaming (memory does not grow with the input). See the
/// module's documentation for the format and for why the result is an approximation: each
/// interval's bits become evenly spaced 1500-byte opportunities, the remainder carried to the
/// next interval. On error, part of the trace may have been written.
pub fn throughput_csv_to_trace(
    input: impl BufRead,
    name: &str,
    options: &CsvOptions,
    out: impl Write,
) -> Result<ConvertSummary, ConvertError> {
    check_options(options, name)?;
    let mut writer = Writer {
        out: std::io::BufWriter::new(out),
        name,
        last_ms: 0,
        written: 0,
        carry_bits: 0.0,
        max: options.max_opportunities,
    };
    let mut delimiter = options.delimiter;
    let mut detected = false;
    let mut header: Option<Vec<String>> = None;
    let mut columns: Option<(Option<usize>, usize)> = None;
    let mut first_time: Option<f64> = None;
    let mut pending: Option<Row> = None;
    let mut previous_len_s: Option<f64> = None;
    let mut rows = 0u64;
    let mut csv_bits = 0.0f64;
    let mut end_s = 0.0f64;
    let mut next_start_s = 0.0f64;
    let mut last_line = 0usize;

    for (i, raw) in input.lines().enumerate() {
        let line_no = i + 1;
        let raw = raw.map_err(|source| ConvertError::Io {
            file: name.to_string(),
            source,
        })?;
        let line = raw.trim().trim_start_matches('\u{feff}');
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if !detected {
            detected = true;
            if delimiter.is_none() {
                delimiter = detect_delimiter(line);
            }
        }
        let fields = split_fields(line, delimiter);
        let (time_idx, rate_idx) = match columns {
            Some(c) => c,
            None => {
                let (c, is_header) = first_row_columns(&fields, options, name, line_no)?;
                columns = Some(c);
                if is_header {
                    header = Some(fields);
                    continue;
                }
                c
            }
        };
        let rate_bps = row_rate_bps(&fields, rate_idx, options, name, line_no)?;
        let time_s = match (time_idx, &options.time_column) {
            (Some(idx), Some(col)) => {
                let t =
                    number_field(&fields, idx, "time", col, name, line_no)? * options.time_unit_s;
                let t0 = *first_time.get_or_insert(t);
                t - t0
            }
            _ => next_start_s,
        };
        let row = Row {
            line: line_no,
            time_s,
            rate_bps,
        };
        rows += 1;
        last_line = line_no;
        if options.time_column.is_none() {
            // Consecutive intervals: the row's length is known now.
            let len = options.interval_s.unwrap_or(1.0);
            writer.interval(row.time_s, row.time_s + len, row.rate_bps, row.line)?;
            csv_bits += row.rate_bps * len;
            next_start_s = row.time_s + len;
            end_s = next_start_s;
            continue;
        }
        if let Some(p) = pending.take() {
            if row.time_s <= p.time_s {
                return Err(line_err(
                    name,
                    row.line,
                    format!(
                        "the time does not increase (this row starts {} s after the first, the row before {} s)",
                        row.time_s, p.time_s
                    ),
                ));
            }
            writer.interval(p.time_s, row.time_s, p.rate_bps, p.line)?;
            csv_bits += p.rate_bps * (row.time_s - p.time_s);
            previous_len_s = Some(row.time_s - p.time_s);
        }
        pending = Some(row);
    }
    if let Some(p) = pending.take() {
        let len = options.interval_s.or(previous_len_s).ok_or_else(|| {
            input_err(
                name,
                "only one row, so the length of its interval is unknown; give it with --interval"
                    .into(),
            )
        })?;
        writer.interval(p.time_s, p.time_s + len, p.rate_bps, p.line)?;
        csv_bits += p.rate_bps * len;
        end_s = p.time_s + len;
    }
    if rows == 0 {
        return Err(input_err(name, "no data rows".into()));
    }
    let duration_ms =
        ms_of(end_s).ok_or_else(|| input_err(name, "the CSV lasts too long".into()))?;
    let duration_ms = duration_ms.max(1);
    let added_final_opportunity = writer.last_ms < duration_ms || writer.written == 0;
    if added_final_opportunity {
        writer.push(duration_ms, last_line)?;
    }
    let leftover_bits = writer.carry_bits;
    let opportunities = writer.written;
    writer.out.flush().map_err(|source| ConvertError::Io {
        file: "output".into(),
        source,
    })?;
    let trace_mean_mbit = opportunities as f64 * BITS_PER_OPPORTUNITY / duration_ms as f64 / 1e3;
    Ok(ConvertSummary {
        rows,
        header,
        duration_ms,
        opportunities,
        csv_mean_mbit: if end_s > 0.0 {
            csv_bits / end_s / 1e6
        } else {
            0.0
        },
        trace_mean_mbit,
        added_final_opportunity,
        leftover_bits,
    })
}

/// `s` seconds as whole milliseconds, rounded up, if within [`MAX_TIMESTAMP_MS`].
fn ms_of(s: f64) -> Option<u64> {
    let ms = (s * 1000.0 - 1e-6).ceil();
    if ms.is_finite() && ms <= MAX_TIMESTAMP_MS as f64 {
        Some(ms.max(0.0) as u64)
    } else {
        None
    }
}

/// Writes opportunities in order, carrying bits between intervals.
struct Writer<'a, W: Write> {
    out: std::io::BufWriter<W>,
    name: &'a str,
    last_ms: u64,
    written: u64,
    carry_bits: f64,
    max: u64,
}

impl<W: Write> Writer<'_, W> {
    fn push(&mut self, t_ms: u64, line: usize) -> Result<(), ConvertError> {
        if self.written >= self.max {
            return Err(ConvertError::Line {
                file: self.name.to_string(),
                line,
                message: format!(
                    "more than {} opportunities by this row: stopped (is the unit right?)",
                    self.max
                ),
            });
        }
        let t = t_ms.max(self.last_ms);
        writeln!(self.out, "{t}").map_err(|source| ConvertError::Io {
            file: "output".into(),
            source,
        })?;
        self.last_ms = t;
        self.written += 1;
        Ok(())
    }

    /// The opportunities of `[from_s, to_s)` at `rate_bps` plus the carried bits, evenly
    /// spaced: the k-th of n at `ceil(from + k * (to - from) / n)` ms, the last at the
    /// interval's end (as [`crate::constant_rate_trace`] places them).
    fn interval(
        &mut self,
        from_s: f64,
        to_s: f64,
        rate_bps: f64,
        line: usize,
    ) -> Result<(), ConvertError> {
        let (Some(_), Some(_)) = (ms_of(from_s), ms_of(to_s)) else {
            return Err(ConvertError::Line {
                file: self.name.to_string(),
                line,
                message: "the time is too large".into(),
            });
        };
        let bits = self.carry_bits + rate_bps * (to_s - from_s);
        // A hair of slack so that 12,000,000 bits computed as 11,999,999.999... is 1000 packets.
        let count = ((bits + 1e-6) / BITS_PER_OPPORTUNITY).floor().max(0.0);
        self.carry_bits = (bits - count * BITS_PER_OPPORTUNITY).max(0.0);
        if count > (self.max - self.written.min(self.max)) as f64 {
            return Err(ConvertError::Line {
                file: self.name.to_string(),
                line,
                message: format!(
                    "more than {} opportunities by this row: stopped (is the unit right?)",
                    self.max
                ),
            });
        }
        let count = count as u64;
        let (a_ms, len_ms) = (from_s * 1000.0, (to_s - from_s) * 1000.0);
        for k in 1..=count {
            let t = a_ms + k as f64 * len_ms / count as f64;
            let ms = (t - 1e-6).ceil().max(0.0) as u64;
            self.push(ms, line)?;
        }
        Ok(())
    }
}
