//! Figures of a mahimahi trace: duration, delivery opportunities, mean and peak rate, outages,
//! and the inter-arrival distribution of the paper's Figure 2.
//!
//! Definitions (every figure is computed from the file alone, one [`OPPORTUNITY_BYTES`]
//! (1500-byte) packet per line):
//!
//! - **duration**: the last timestamp (ms), which is also mahimahi's loop period
//!   ([`Trace::period_ms`]); the trace starts at 0 ms.
//! - **mean rate**: `opportunities * 1500 * 8 / duration` (kbit/s, 1 kbit = 1000 bits).
//! - **bins**: opportunity at `t` ms falls in bin `floor(t / bin_ms)`, for bins `0 ..=
//!   floor(duration / bin_ms)`; the last bin may be partial (it is at least the final
//!   millisecond). The per-second counts are these counts for 1000 ms bins.
//! - **peak rate**: the largest bin count times 1500 * 8 bits over the bin length (kbit/s).
//! - **outage**: a gap of at least `outage_threshold_ms` between consecutive opportunities,
//!   the start of the trace (0 ms) counting as one end of a gap (a trace whose first line is at
//!   5000 ms starts with a 5 s outage, as it does when mahimahi loops it). Its length is the
//!   difference of the two timestamps. The share of time is the outages' total length over the
//!   duration.
//! - **inter-arrival histogram**: the intervals between consecutive opportunities (ms,
//!   `len - 1` of them; 0 ms = the same millisecond), counted in log-spaced bins: `0`, `1`,
//!   `2-3`, `4-7`, `8-15`, ... (powers of two), up to the bin of the longest interval, with the
//!   share of all intervals in each; the paper's Figure 2 plots this distribution on log-log
//!   axes (its "99.99% within 20 ms" is [`InterArrival::share_within_20ms`]).

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::trace::{Trace, TraceError, OPPORTUNITY_BYTES};

/// Bits one opportunity carries (1500 bytes).
const BITS_PER_OPPORTUNITY: f64 = (OPPORTUNITY_BYTES * 8) as f64;

/// Most bins [`trace_stats`] will count (per-second or `bin_ms`): beyond that a trace is far
/// longer than any recording (10 million seconds is 115 days) and is refused rather than given
/// an enormous table.
pub const MAX_BINS: u64 = 10_000_000;

/// How [`trace_stats`] bins and what it calls an outage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StatsOptions {
    /// Bin length for the peak rate (ms, at least 1). Default 1000.
    pub bin_ms: u64,
    /// Shortest gap between consecutive opportunities that counts as an outage (ms, at least
    /// 1). Default 1000.
    pub outage_threshold_ms: u64,
}

impl Default for StatsOptions {
    /// 1 s bins, outages of 1 s or more.
    fn default() -> Self {
        StatsOptions {
            bin_ms: 1000,
            outage_threshold_ms: 1000,
        }
    }
}

/// Why [`trace_stats`] or [`load_stats`] gave no figures.
#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    /// The file could not be read or is not a valid trace (the message names the file and,
    /// for a bad line, its 1-based number).
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// An option is out of range.
    #[error("{0}")]
    Option(String),
    /// The trace would need more than [`MAX_BINS`] bins.
    #[error("{file}: {duration_ms} ms is too long for {bin_ms} ms bins (more than {max} bins)", max = MAX_BINS)]
    TooLong {
        /// Trace file or name.
        file: String,
        /// The trace's duration (ms).
        duration_ms: u64,
        /// The bin length asked for (ms).
        bin_ms: u64,
    },
}

/// One outage: a gap of at least the threshold between consecutive opportunities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Outage {
    /// Time of the opportunity before the gap (ms; 0 for a gap at the start of the trace).
    pub start_ms: u64,
    /// Length of the gap (ms).
    pub length_ms: u64,
}

/// The outages of a trace (see the module's definitions).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outages {
    /// Shortest gap counted (ms).
    pub threshold_ms: u64,
    /// Number of outages.
    pub count: u64,
    /// Longest outage (ms; 0 if none).
    pub longest_ms: u64,
    /// Total length of the outages (ms).
    pub total_ms: u64,
    /// `total_ms / duration_ms`, 0..1.
    pub share_of_time: f64,
    /// Longest gap of any length, outage or not, the start counting as in outages (ms).
    pub longest_gap_ms: u64,
    /// Every outage, in time order.
    pub list: Vec<Outage>,
}

/// One bin of the inter-arrival histogram: intervals `from_ms <= x < to_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HistogramBin {
    /// Smallest interval in the bin (ms).
    pub from_ms: u64,
    /// One past the largest interval in the bin (ms).
    pub to_ms: u64,
    /// Intervals in the bin.
    pub count: u64,
    /// `count` over all intervals, 0..1.
    pub share: f64,
}

impl HistogramBin {
    /// The bin as written in tables: `0 ms`, `1 ms`, `2-3 ms`, `1024-2047 ms`.
    pub fn label(&self) -> String {
        if self.to_ms == self.from_ms + 1 {
            format!("{} ms", self.from_ms)
        } else {
            format!("{}-{} ms", self.from_ms, self.to_ms - 1)
        }
    }
}

/// The distribution of the intervals between consecutive opportunities (the paper's Figure 2).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InterArrival {
    /// Number of intervals (`opportunities - 1`).
    pub intervals: u64,
    /// Mean interval (ms; 0 if there is none).
    pub mean_ms: f64,
    /// Median interval (ms).
    pub p50_ms: u64,
    /// 90th percentile (ms).
    pub p90_ms: u64,
    /// 99th percentile (ms).
    pub p99_ms: u64,
    /// 99.9th percentile (ms).
    pub p99_9_ms: u64,
    /// 99.99th percentile (ms).
    pub p99_99_ms: u64,
    /// Longest interval (ms).
    pub max_ms: u64,
    /// Share of intervals under 20 ms, 0..1 (the paper: 99.99% on a stationary LTE downlink).
    pub share_within_20ms: f64,
    /// Log-spaced bins `0`, `1`, `2-3`, `4-7`, ... up to the longest interval's.
    pub histogram: Vec<HistogramBin>,
}

/// Every figure of one trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceStats {
    /// The trace's name (its file name when loaded from a file).
    pub name: String,
    /// Duration: the last timestamp, mahimahi's loop period (ms).
    pub duration_ms: u64,
    /// Delivery opportunities (lines).
    pub opportunities: u64,
    /// Bytes the trace can carry (1500 per opportunity).
    pub bytes: u64,
    /// Mean rate over the duration (kbit/s).
    pub mean_rate_kbps: f64,
    /// Bin length of the peak rate and `bin_counts` (ms).
    pub bin_ms: u64,
    /// Largest bin count times 12,000 bits over the bin length (kbit/s).
    pub peak_rate_kbps: f64,
    /// Start of the (first) bin with the largest count (ms).
    pub peak_bin_start_ms: u64,
    /// Opportunities in that bin.
    pub peak_bin_count: u64,
    /// Largest count in any 1 s bin (the per-second peak, whatever `bin_ms` is).
    pub peak_second_count: u64,
    /// Outages.
    pub outages: Outages,
    /// The inter-arrival distribution.
    pub interarrival: InterArrival,
    /// Opportunities in each second `[k * 1000, (k + 1) * 1000)` ms, `k = 0 ..=
    /// floor(duration / 1000)`.
    pub per_second_counts: Vec<u32>,
    /// Opportunities in each bin of `bin_ms` (the same as `per_second_counts` for 1 s bins).
    pub bin_counts: Vec<u32>,
}

/// Counts of opportunities in bins of `bin_ms`, bins `0 ..= floor(last / bin_ms)`.
fn bin_counts(ops: &[u64], bin_ms: u64, name: &str) -> Result<Vec<u32>, StatsError> {
    let last = ops.last().copied().unwrap_or(0);
    let bins = last / bin_ms + 1;
    if bins > MAX_BINS {
        return Err(StatsError::TooLong {
            file: name.to_string(),
            duration_ms: last,
            bin_ms,
        });
    }
    let mut counts = vec![0u32; bins as usize];
    for &t in ops {
        let c = &mut counts[(t / bin_ms) as usize];
        *c = c.saturating_add(1);
    }
    Ok(counts)
}

/// The `q` quantile (0..1) of sorted values, nearest rank (the smallest value with at least
/// `q` of the values at or below it).
fn quantile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The log-spaced bin of an interval: 0 for 0 ms, `k + 1` for `2^k <= x < 2^(k+1)`.
fn log_bin(x: u64) -> usize {
    if x == 0 {
        0
    } else {
        (64 - x.leading_zeros()) as usize
    }
}

/// The interval range `[from, to)` of log bin `b`.
fn log_bin_range(b: usize) -> (u64, u64) {
    if b == 0 {
        (0, 1)
    } else {
        let from = 1u64 << (b - 1);
        (from, from.saturating_mul(2))
    }
}

fn interarrival(ops: &[u64]) -> InterArrival {
    let mut gaps: Vec<u64> = ops.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.sort_unstable();
    let n = gaps.len() as u64;
    let mut counts: Vec<u64> = Vec::new();
    for &g in &gaps {
        let b = log_bin(g);
        if counts.len() <= b {
            counts.resize(b + 1, 0);
        }
        counts[b] += 1;
    }
    let share = |c: u64| if n == 0 { 0.0 } else { c as f64 / n as f64 };
    let histogram = counts
        .iter()
        .enumerate()
        .map(|(b, &count)| {
            let (from_ms, to_ms) = log_bin_range(b);
            HistogramBin {
                from_ms,
                to_ms,
                count,
                share: share(count),
            }
        })
        .collect();
    let total: u128 = gaps.iter().map(|&g| g as u128).sum();
    InterArrival {
        intervals: n,
        mean_ms: if n == 0 { 0.0 } else { total as f64 / n as f64 },
        p50_ms: quantile(&gaps, 0.5),
        p90_ms: quantile(&gaps, 0.9),
        p99_ms: quantile(&gaps, 0.99),
        p99_9_ms: quantile(&gaps, 0.999),
        p99_99_ms: quantile(&gaps, 0.9999),
        max_ms: gaps.last().copied().unwrap_or(0),
        share_within_20ms: share(gaps.partition_point(|&g| g < 20) as u64),
        histogram,
    }
}

fn outages(ops: &[u64], threshold_ms: u64, duration_ms: u64) -> Outages {
    let mut list = Vec::new();
    let mut longest_gap_ms = 0;
    let mut previous = 0;
    for &t in ops {
        let gap = t - previous;
        longest_gap_ms = longest_gap_ms.max(gap);
        if gap >= threshold_ms {
            list.push(Outage {
                start_ms: previous,
                length_ms: gap,
            });
        }
        previous = t;
    }
    let total_ms: u64 = list.iter().map(|o| o.length_ms).sum();
    Outages {
        threshold_ms,
        count: list.len() as u64,
        longest_ms: list.iter().map(|o| o.length_ms).max().unwrap_or(0),
        total_ms,
        share_of_time: total_ms as f64 / duration_ms.max(1) as f64,
        longest_gap_ms,
        list,
    }
}

/// The figures of `trace` (see the module's definitions). Errors when an option is 0 or the
/// trace needs more than [`MAX_BINS`] bins.
pub fn trace_stats(trace: &Trace, options: &StatsOptions) -> Result<TraceStats, StatsError> {
    if options.bin_ms == 0 {
        return Err(StatsError::Option("the bin must be at least 1 ms".into()));
    }
    if options.outage_threshold_ms == 0 {
        return Err(StatsError::Option(
            "the outage threshold must be at least 1 ms".into(),
        ));
    }
    let ops = trace.opportunities_ms();
    let duration_ms = trace.period_ms();
    let n = ops.len() as u64;
    let per_second_counts = bin_counts(ops, 1000, trace.name())?;
    let bins = if options.bin_ms == 1000 {
        per_second_counts.clone()
    } else {
        bin_counts(ops, options.bin_ms, trace.name())?
    };
    // The first bin with the largest count.
    let (peak_bin, peak_count) =
        bins.iter().enumerate().fold(
            (0usize, 0u32),
            |best, (i, &c)| {
                if c > best.1 {
                    (i, c)
                } else {
                    best
                }
            },
        );
    Ok(TraceStats {
        name: trace.name().to_string(),
        duration_ms,
        opportunities: n,
        bytes: n.saturating_mul(OPPORTUNITY_BYTES),
        mean_rate_kbps: n as f64 * BITS_PER_OPPORTUNITY / duration_ms as f64,
        bin_ms: options.bin_ms,
        peak_rate_kbps: peak_count as f64 * BITS_PER_OPPORTUNITY / options.bin_ms as f64,
        peak_bin_start_ms: peak_bin as u64 * options.bin_ms,
        peak_bin_count: peak_count as u64,
        peak_second_count: per_second_counts.iter().copied().max().unwrap_or(0) as u64,
        outages: outages(ops, options.outage_threshold_ms, duration_ms),
        interarrival: interarrival(ops),
        per_second_counts,
        bin_counts: bins,
    })
}

/// Loads the trace at `path` and computes its figures; the name is the path as given.
pub fn load_stats(
    path: impl AsRef<Path>,
    options: &StatsOptions,
) -> Result<TraceStats, StatsError> {
    let path = path.as_ref();
    let trace = Trace::load(path)?;
    let mut stats = trace_stats(&trace, options)?;
    stats.name = path.display().to_string();
    Ok(stats)
}

/// A duration for a table: `140.0 s`, `800 ms`.
fn fmt_ms(ms: u64) -> String {
    if ms >= 1000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{ms} ms")
    }
}

/// A share as a percentage with enough digits for small values: `62.1%`, `0.012%`.
fn fmt_share(share: f64) -> String {
    let p = share * 100.0;
    if p == 0.0 {
        "0%".into()
    } else if p >= 10.0 {
        format!("{p:.1}%")
    } else if p >= 0.1 {
        format!("{p:.2}%")
    } else {
        let s = format!("{p:.4}%");
        if s == "0.0000%" {
            format!("{p:.1e}%")
        } else {
            s
        }
    }
}

/// The summary table of several traces, one row each: duration, opportunities, mean and peak
/// rate, outages (count, longest, share of time). The headers name the bin and threshold of
/// the first trace.
pub fn summary_table(stats: &[TraceStats]) -> String {
    let (bin, threshold) = stats
        .first()
        .map(|s| (s.bin_ms, s.outages.threshold_ms))
        .unwrap_or((1000, 1000));
    let heads = [
        "trace".to_string(),
        "duration".into(),
        "opportunities".into(),
        "mean kbit/s".into(),
        format!("peak kbit/s ({})", fmt_ms(bin).replace(".0 s", " s")),
        format!("outages (>= {})", fmt_ms(threshold).replace(".0 s", " s")),
        "longest".into(),
        "outage time".into(),
    ];
    let rows: Vec<[String; 8]> = stats
        .iter()
        .map(|s| {
            [
                s.name.clone(),
                fmt_ms(s.duration_ms),
                s.opportunities.to_string(),
                format!("{:.1}", s.mean_rate_kbps),
                format!("{:.1}", s.peak_rate_kbps),
                s.outages.count.to_string(),
                if s.outages.count == 0 {
                    "-".into()
                } else {
                    fmt_ms(s.outages.longest_ms)
                },
                fmt_share(s.outages.share_of_time),
            ]
        })
        .collect();
    let mut widths: Vec<usize> = heads.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r.iter()) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[String]| {
        let mut l = String::new();
        for (k, (c, w)) in cells.iter().zip(&widths).enumerate() {
            if k == 0 {
                let _ = write!(l, "{c:<w$}");
            } else {
                let _ = write!(l, "  {c:>w$}");
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&heads);
    for r in &rows {
        line(r);
    }
    out
}

/// Characters of a histogram bar per factor of 10 in share (the bars are on a log scale, as
/// the paper's Figure 2's axis, from 0.0001% up).
pub const BAR_CHARS_PER_DECADE: usize = 4;

/// The details of one trace as text: the inter-arrival histogram as a bar list (log-scale
/// bars), its percentiles, the per-second counts' range, and the outages (the first few).
pub fn details_text(s: &TraceStats) -> String {
    let ia = &s.interarrival;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: inter-arrival times of {} intervals (mean {:.2} ms; median {} ms, p99 {} ms, p99.99 {} ms, max {}; {} within 20 ms)",
        s.name,
        ia.intervals,
        ia.mean_ms,
        ia.p50_ms,
        ia.p99_ms,
        ia.p99_99_ms,
        fmt_ms(ia.max_ms),
        fmt_share(ia.share_within_20ms),
    );
    let label_w = ia
        .histogram
        .iter()
        .map(|b| b.label().len())
        .max()
        .unwrap_or(0);
    let count_w = ia
        .histogram
        .iter()
        .map(|b| b.count.to_string().len())
        .max()
        .unwrap_or(1);
    for b in &ia.histogram {
        let bar = if b.share > 0.0 {
            // Decades above 0.0001% (1e-6), at least one character for a non-empty bin.
            let decades = (b.share.log10() + 6.0).max(0.0);
            ((decades * BAR_CHARS_PER_DECADE as f64).round() as usize).max(1)
        } else {
            0
        };
        let _ = writeln!(
            out,
            "  {:>label_w$}  {:>count_w$}  {:>8}  {}",
            b.label(),
            b.count,
            fmt_share(b.share),
            "█".repeat(bar)
        );
    }
    let _ = writeln!(
        out,
        "  (bars on a log scale: {BAR_CHARS_PER_DECADE} characters per factor of 10, from 0.0001%)"
    );
    let mut sorted = s.per_second_counts.clone();
    sorted.sort_unstable();
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or(0);
    let _ = writeln!(
        out,
        "  per-second counts ({} seconds): min {}, median {}, max {} (every count with --json)",
        s.per_second_counts.len(),
        sorted.first().copied().unwrap_or(0),
        median,
        sorted.last().copied().unwrap_or(0),
    );
    if s.outages.count > 0 {
        const SHOWN: usize = 5;
        let mut longest: Vec<&Outage> = s.outages.list.iter().collect();
        longest.sort_by(|a, b| {
            b.length_ms
                .cmp(&a.length_ms)
                .then(a.start_ms.cmp(&b.start_ms))
        });
        let list: Vec<String> = longest
            .iter()
            .take(SHOWN)
            .map(|o| format!("{} at {}", fmt_ms(o.length_ms), fmt_ms(o.start_ms)))
            .collect();
        let _ = writeln!(
            out,
            "  outages: {} of {} or more, {} in all ({} of the time); longest: {}{}",
            s.outages.count,
            fmt_ms(s.outages.threshold_ms),
            fmt_ms(s.outages.total_ms),
            fmt_share(s.outages.share_of_time),
            list.join(", "),
            if s.outages.list.len() > SHOWN {
                ", ..."
            } else {
                ""
            }
        );
    } else {
        let _ = writeln!(
            out,
            "  outages: none of {} or more (longest gap {})",
            fmt_ms(s.outages.threshold_ms),
            fmt_ms(s.outages.longest_gap_ms)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_bins_are_powers_of_two() {
        assert_eq!(log_bin(0), 0);
        assert_eq!(log_bin(1), 1);
        assert_eq!(log_bin(2), 2);
        assert_eq!(log_bin(3), 2);
        assert_eq!(log_bin(4), 3);
        assert_eq!(log_bin(1023), 10);
        assert_eq!(log_bin(1024), 11);
        for b in 0..64 {
            let (from, to) = log_bin_range(b);
            assert_eq!(log_bin(from), b);
            if b < 63 {
                assert_eq!(log_bin(to - 1), b);
                assert_eq!(log_bin(to), b + 1);
            }
        }
    }

    #[test]
    fn shares_are_readable() {
        assert_eq!(fmt_share(0.621), "62.1%");
        assert_eq!(fmt_share(0.0123), "1.23%");
        assert_eq!(fmt_share(0.000_12), "0.0120%");
        assert_eq!(fmt_share(0.0), "0%");
        assert_eq!(fmt_share(1e-9), "1.0e-7%");
    }
}
