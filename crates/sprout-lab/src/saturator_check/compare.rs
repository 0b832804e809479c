//! A recording against its replayed trace: per-second and total counts, outage seconds, the
//! alignment of the recording's clock on the replay's, and the injected outage.

use serde::{Deserialize, Serialize};
use sprout_link::{Trace, TraceError};

/// The recorded second must be within this share of the replayed one.
pub const SECOND_TOLERANCE: f64 = 0.05;
/// Share of the non-outage seconds that must be within [`SECOND_TOLERANCE`].
pub const SECONDS_REQUIRED: f64 = 0.95;
/// The recorded total must be within this share of the replayed one.
pub const TOTAL_TOLERANCE: f64 = 0.02;
/// A gap between opportunities at least this long makes the seconds it overlaps outage
/// seconds, ms.
pub const OUTAGE_GAP_MS: u64 = 1000;

/// Counts per second of the window `[from_ms, from_ms + seconds * 1000)`, of times (ms) in any
/// order.
pub fn per_second_counts(
    times_ms: impl IntoIterator<Item = i64>,
    from_ms: i64,
    seconds: usize,
) -> Vec<u64> {
    let mut counts = vec![0u64; seconds];
    for t in times_ms {
        let rel = t - from_ms;
        if rel >= 0 {
            let s = (rel / 1000) as usize;
            if s < seconds {
                counts[s] += 1;
            }
        }
    }
    counts
}

/// Which seconds of the window `[from_ms, from_ms + seconds * 1000)` are outage seconds of a
/// trace (sorted opportunity times, ms): those overlapping a gap of at least `min_gap_ms`
/// between consecutive opportunities (or before the first one). The window must lie within the
/// trace (before its last opportunity): the replay loops after it.
pub fn outage_seconds(
    sorted_ms: &[u64],
    from_ms: u64,
    seconds: usize,
    min_gap_ms: u64,
) -> Vec<bool> {
    let mut out = vec![false; seconds];
    let end_ms = from_ms + seconds as u64 * 1000;
    let mut mark = |a: u64, b: u64| {
        // The open interval (a, b) has no opportunity; mark seconds [s, s+1) with s < b, s+1 > a.
        if b.saturating_sub(a) < min_gap_ms || b <= from_ms || a >= end_ms {
            return;
        }
        for (i, o) in out.iter_mut().enumerate() {
            let s = from_ms + i as u64 * 1000;
            if s < b && s + 1000 > a {
                *o = true;
            }
        }
    };
    let mut prev: Option<u64> = None;
    for &t in sorted_ms {
        match prev {
            None => mark(0, t),
            Some(p) => mark(p, t),
        }
        prev = Some(t);
    }
    out
}

/// Number of equal elements of two sorted lists (a multiset intersection).
fn matches(a: &[i64], b: &[i64]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

/// The whole-millisecond offset to add to recorded times (ms, sorted) to put them on the
/// replay's clock: of `estimate_ms - 2 ..= estimate_ms + 2`, the one that makes the most
/// recorded times equal to opportunity times of the replay (sorted, ms), the estimate on ties.
pub fn align_offset_ms(recorded_ms: &[u32], replay_ms: &[u64], estimate_ms: i64) -> i64 {
    let replay: Vec<i64> = replay_ms.iter().map(|&t| t as i64).collect();
    let mut best = (estimate_ms, 0usize);
    for d in [0i64, -1, 1, -2, 2] {
        let k = estimate_ms + d;
        let shifted: Vec<i64> = recorded_ms.iter().map(|&t| i64::from(t) + k).collect();
        let n = matches(&shifted, &replay);
        if n > best.1 {
            best = (k, n);
        }
    }
    best.0
}

/// One direction's recording against its replayed trace.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SecondsComparison {
    /// Seconds in the window.
    pub seconds: usize,
    /// Of which outage seconds (not judged).
    pub outage_seconds: usize,
    /// Non-outage seconds whose recorded count is within 5% of the replayed.
    pub seconds_within: usize,
    /// `seconds_within / (seconds - outage_seconds)`.
    pub share_within: f64,
    /// Whether `share_within >= 0.95`.
    pub per_second_ok: bool,
    /// Opportunities of the replayed trace in the window.
    pub replayed_total: u64,
    /// Recorded arrivals in the window.
    pub recorded_total: u64,
    /// `recorded_total / replayed_total - 1`.
    pub total_error: f64,
    /// Whether `|total_error| <= 2%`.
    pub total_ok: bool,
    /// Recorded arrivals that fell on a millisecond of the replayed trace with an opportunity
    /// left (exact matches after alignment), share of the recorded ones in the window.
    pub exact_ms_share: f64,
    /// Offset added to the recorded times to put them on the replay's clock, ms.
    pub offset_ms: i64,
    /// Per second: (replayed, recorded, outage second).
    pub per_second: Vec<(u64, u64, bool)>,
}

/// Compares recorded arrivals (ms on the replay's clock) with the replayed trace's
/// opportunities (ms, sorted) over `[from_ms, from_ms + seconds * 1000)`.
pub fn compare_seconds(
    recorded_ms: &[i64],
    replay_ms: &[u64],
    from_ms: u64,
    seconds: usize,
) -> SecondsComparison {
    let from = from_ms as i64;
    let replayed = per_second_counts(replay_ms.iter().map(|&t| t as i64), from, seconds);
    let recorded = per_second_counts(recorded_ms.iter().copied(), from, seconds);
    let outage = outage_seconds(replay_ms, from_ms, seconds, OUTAGE_GAP_MS);
    let mut within = 0;
    let mut judged = 0;
    for i in 0..seconds {
        if outage[i] {
            continue;
        }
        judged += 1;
        let (o, r) = (replayed[i] as f64, recorded[i] as f64);
        if (r - o).abs() <= SECOND_TOLERANCE * o + 1e-9 {
            within += 1;
        }
    }
    let replayed_total: u64 = replayed.iter().sum();
    let recorded_total: u64 = recorded.iter().sum();
    let total_error = if replayed_total > 0 {
        recorded_total as f64 / replayed_total as f64 - 1.0
    } else if recorded_total == 0 {
        0.0
    } else {
        f64::INFINITY
    };
    let end = from + seconds as i64 * 1000;
    let mut rec_in: Vec<i64> = recorded_ms
        .iter()
        .copied()
        .filter(|t| (from..end).contains(t))
        .collect();
    rec_in.sort_unstable();
    let rep_in: Vec<i64> = replay_ms
        .iter()
        .map(|&t| t as i64)
        .filter(|t| (from..end).contains(t))
        .collect();
    let exact = matches(&rec_in, &rep_in);
    let share_within = if judged > 0 {
        within as f64 / judged as f64
    } else {
        1.0
    };
    SecondsComparison {
        seconds,
        outage_seconds: seconds - judged,
        seconds_within: within,
        share_within,
        per_second_ok: share_within >= SECONDS_REQUIRED,
        replayed_total,
        recorded_total,
        total_error,
        total_ok: total_error.abs() <= TOTAL_TOLERANCE,
        exact_ms_share: if rec_in.is_empty() {
            0.0
        } else {
            exact as f64 / rec_in.len() as f64
        },
        offset_ms: 0,
        per_second: (0..seconds)
            .map(|i| (replayed[i], recorded[i], outage[i]))
            .collect(),
    }
}

/// The times (ms) in `[from_ms, from_ms + seconds * 1000)` shifted to start at 0, as a trace
/// named `name`; `None` when the window holds no time.
pub fn window_trace(name: &str, times_ms: &[i64], from_ms: u64, seconds: usize) -> Option<Trace> {
    let from = from_ms as i64;
    let end = from + seconds as i64 * 1000;
    let mut v: Vec<u64> = times_ms
        .iter()
        .filter(|t| (from..end).contains(t))
        .map(|&t| (t - from) as u64)
        .collect();
    v.sort_unstable();
    Trace::from_opportunities_ms(name, v).ok()
}

/// The replayed trace: `trace` without its opportunities in `[from_ms, from_ms + len_ms)` (an
/// injected outage), or as it is when `len_ms` is 0.
pub fn with_outage(trace: &Trace, from_ms: u64, len_ms: u64) -> Result<Trace, TraceError> {
    if len_ms == 0 {
        return Ok(trace.clone());
    }
    let v: Vec<u64> = trace
        .opportunities_ms()
        .iter()
        .copied()
        .filter(|&t| t < from_ms || t >= from_ms + len_ms)
        .collect();
    Trace::from_opportunities_ms(trace.name(), v)
}
