//! The paper's metrics (Winstein et al., NSDI 2013, section 5.1), as pure functions.
//!
//! Times are [`Instant`]s since the start of the run and [`Duration`]s (whole microseconds);
//! the delay samples and trace opportunities are `u64` microseconds, and a name says so
//! otherwise (`_ms`, `_s`). Rates are kilobits per second (1 kbit = 1000 bits).
//!
//! # Definitions
//!
//! * **Throughput**: bytes leaving the link queue toward the receiver with `arrived` inside
//!   the measured [`Window`], times 8, divided by 1000 and by the window's length in seconds
//!   (the paper measured at Cellsim). **Goodput** is the same over the application payload.
//! * **End-to-end delay function**: at every instant `t`, take the most recently *sent*
//!   packet (latest `sent`) among the packets that have arrived by `t` (`arrived <= t`,
//!   including arrivals before the window); `delay(t) = t - sent`. Between arrivals it
//!   grows at 1 s/s; a packet that was sent earlier than one already arrived (reordering)
//!   never lowers it.
//! * **Before-first-arrival rule**: a virtual packet sent at time 0 is deemed to have arrived
//!   at time 0, so before any real arrival `delay(t) = t`.
//! * **95% end-to-end delay**: the 95th percentile ([`percentile`], nearest rank) of the delay
//!   function sampled every `step` (1 ms by default, [`DEFAULT_STEP`]) at
//!   `t = start, start + step, ... < end`, as the authors' scorer did.
//! * **Omniscient**: a sender whose packets arrive exactly at every delivery opportunity of
//!   the trace, each sent one propagation delay earlier; see [`omniscient_delay_samples`].
//! * **Self-inflicted delay** = 95% end-to-end delay - the omniscient's, on the same trace.
//! * **Utilization** = delivered (wire) bytes / the bytes the trace offered in the window.
//!
//! The paper counted *every* packet crossing Cellsim, so an idle sender's heartbeats count as
//! "the most recent packet to arrive". [`DirectionMetrics`] therefore reports both the paper's
//! all-packet figures (`p95_delay_ms`, `self_inflicted_ms`) and data-only figures
//! (`p95_delay_data_ms`, `self_inflicted_data_ms`).

use serde::{Deserialize, Serialize};
use sprout_core::time::{Duration, Instant};

/// Default sampling step of the delay function: 1 ms, in microseconds.
pub const DEFAULT_STEP_US: u64 = 1_000;

/// Default sampling step of the delay function: 1 ms.
pub const DEFAULT_STEP: Duration = Duration::from_micros(DEFAULT_STEP_US);

/// Default start-up period skipped before measuring: 60 s, in microseconds (section 5.1).
pub const DEFAULT_SKIP_US: u64 = 60_000_000;

/// Default start-up period skipped before measuring: 60 s (section 5.1).
pub const DEFAULT_SKIP: Duration = Duration::from_micros(DEFAULT_SKIP_US);

/// Default percentile of the delay function reported by the paper (95).
pub const DELAY_PERCENTILE: f64 = 95.0;

/// One packet leaving the link queue toward the receiver. Serialized with its times as
/// `sent_us` and `arrived_us` (µs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Arrival {
    /// When the sender sent it.
    #[serde(rename = "sent_us")]
    pub sent: Instant,
    /// When it left the link queue toward the receiver; `>= sent`.
    #[serde(rename = "arrived_us")]
    pub arrived: Instant,
    /// On-the-wire size counted by the link (bytes).
    pub bytes: u32,
    /// Application payload it carried (bytes).
    pub app_bytes: u32,
    /// True if it carried application data; false for a heartbeat / feedback-only packet.
    pub is_data: bool,
}

/// The measured interval `[start, end)`. The caller sets `start` to the skipped start-up
/// period (60 s by default, [`DEFAULT_SKIP`]). Serialized as `start_us` and `end_us` (µs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    /// First instant measured (inclusive).
    #[serde(rename = "start_us")]
    pub start: Instant,
    /// End of the measured interval (exclusive).
    #[serde(rename = "end_us")]
    pub end: Instant,
}

impl Window {
    /// A window `[start, end)`.
    pub fn new(start: Instant, end: Instant) -> Self {
        Window { start, end }
    }

    /// Length of the window (zero if `end <= start`).
    pub fn duration(&self) -> Duration {
        self.end.saturating_duration_since(self.start)
    }

    /// Length of the window in seconds.
    pub fn len_s(&self) -> f64 {
        self.duration().as_secs_f64()
    }

    /// True if `t` lies in `[start, end)`.
    pub fn contains(&self, t: Instant) -> bool {
        t >= self.start && t < self.end
    }

    /// The sampling instants `start, start + step, ... < end`. Panics if `step` is zero.
    pub fn sample_times(&self, step: Duration) -> impl Iterator<Item = Instant> {
        assert!(!step.is_zero(), "sampling step must be positive");
        (self.start.as_micros()..self.end.as_micros())
            .step_by(step.as_micros() as usize)
            .map(Instant::from_micros)
    }
}

fn is_sorted_by_arrival(arrivals: &[Arrival]) -> bool {
    arrivals.windows(2).all(|w| w[0].arrived <= w[1].arrived)
}

/// The end-to-end delay function (µs) sampled every `step` at `t = start, start + step, ...
/// < end` of `window`, counting only arrivals that pass `filter`.
///
/// `arrivals` must be sorted by `arrived` (checked in debug builds). At each `t` the most
/// recently sent packet (latest `sent`) among those with `arrived <= t` is taken, including
/// arrivals before the window; `delay(t) = t - sent`. Before any arrival passing the filter,
/// `delay(t) = t` (a virtual packet sent and arrived at time 0). O(arrivals + samples).
/// Panics if `step` is zero.
pub fn delay_samples(
    arrivals: &[Arrival],
    window: Window,
    step: Duration,
    filter: impl Fn(&Arrival) -> bool,
) -> Vec<u64> {
    debug_assert!(
        is_sorted_by_arrival(arrivals),
        "arrivals must be sorted by arrived"
    );
    let mut out = Vec::with_capacity(sample_count(window, step).max(1));
    let mut i = 0;
    let mut max_sent = 0u64; // the virtual packet sent at time 0
    for t in window.sample_times(step).map(Instant::as_micros) {
        while i < arrivals.len() && arrivals[i].arrived.as_micros() <= t {
            let a = &arrivals[i];
            if filter(a) {
                max_sent = max_sent.max(a.sent.as_micros());
            }
            i += 1;
        }
        out.push(t.saturating_sub(max_sent));
    }
    out
}

/// Nearest-rank percentile of `samples` (any unit; result in the same unit).
///
/// Definition: with `n` samples sorted ascending `x[1] <= ... <= x[n]`, the `p`-th percentile
/// (`0 <= p <= 100`) is `x[k]` with `k = ceil(p / 100 * n)`, clamped to `1..=n`; so the 95th
/// percentile of `1..=100` is 95 and of `1..=10` is 10. Returns NaN if `samples` is empty.
/// O(n) (selection on a copy).
pub fn percentile(samples: &[u64], p: f64) -> f64 {
    let n = samples.len();
    if n == 0 {
        return f64::NAN;
    }
    let p = p.clamp(0.0, 100.0);
    // Multiply first: for integer p, p * n is exact, so an integral rank is not pushed up
    // by rounding (0.95 * 20 would not be exactly 19).
    let rank = ((p * n as f64 / 100.0).ceil() as usize).clamp(1, n);
    let mut v = samples.to_vec();
    let (_, kth, _) = v.select_nth_unstable(rank - 1);
    *kth as f64
}

/// The omniscient sender's delay function (µs), sampled like [`delay_samples`].
///
/// Its packets arrive exactly at every delivery opportunity in `opportunities_us` (sorted
/// ascending, µs), each sent `propagation_delay` earlier, so
/// `delay(t) = t - last_opportunity_at_or_before(t) + propagation_delay`. Same
/// before-first-arrival rule as [`delay_samples`] (a virtual packet sent at time 0): the
/// sender cannot send before time 0, so the value is `t - max(0, last_opportunity - propagation)`,
/// and `t` before the first opportunity. With this rule the omniscient delay is a lower
/// bound for every schedule whose packets depart only at opportunities at least one
/// propagation delay after being sent. O(opportunities + samples). Panics if `step` is zero.
pub fn omniscient_delay_samples(
    opportunities_us: &[u64],
    propagation_delay: Duration,
    window: Window,
    step: Duration,
) -> Vec<u64> {
    let propagation_delay_us = propagation_delay.as_micros();
    debug_assert!(
        opportunities_us.windows(2).all(|w| w[0] <= w[1]),
        "opportunities must be sorted"
    );
    let mut out = Vec::with_capacity(sample_count(window, step).max(1));
    let mut i = 0;
    let mut max_sent = 0u64;
    for t in window.sample_times(step).map(Instant::as_micros) {
        while i < opportunities_us.len() && opportunities_us[i] <= t {
            max_sent = max_sent.max(opportunities_us[i].saturating_sub(propagation_delay_us));
            i += 1;
        }
        out.push(t.saturating_sub(max_sent));
    }
    out
}

/// The nearest-rank percentile of a delay function's samples, found exactly without
/// making the samples: the function is a series of runs, each a stretch of sampling instants
/// over which the latest sending time `m` it counts stays the same, so that its samples
/// `t - m` rise by the step ([`for_each_run`]). A first pass counts the samples of each run in
/// at most 65,536 buckets of their top bits; a second keeps only the samples that fall in the
/// bucket holding the rank, and selects among them. Gives the same value as [`percentile`]
/// over the samples.
struct RunPercentile {
    /// Sampling step (µs).
    step: u64,
    /// Bits dropped to find a sample's bucket.
    shift: u32,
    /// Samples per bucket (first pass).
    counts: Vec<u32>,
    /// The bucket holding the rank, and the rank within it (1-based), after `locate`.
    target: u64,
    within: usize,
    /// The second pass's samples of the target bucket.
    picked: Vec<u64>,
}

/// A run of `count` samples at `t, t + step, ...` of `t - m` (0 while `t < m`): the number
/// of its samples that are 0, and the first instant and number of the others.
#[inline]
fn split_zeros(t: u64, count: u64, m: u64, step: u64) -> (u64, u64, u64) {
    if m <= t {
        return (0, t, count);
    }
    let zeros = ((m - t - 1) / step + 1).min(count);
    (zeros, t + zeros * step, count - zeros)
}

impl RunPercentile {
    /// A percentile of samples at `step` that are all below `bound` (µs).
    fn new(bound: u64, step: Duration) -> Self {
        let shift = (64 - (bound >> 16).leading_zeros()).min(63);
        RunPercentile {
            step: step.as_micros(),
            shift,
            counts: vec![0; (bound >> shift) as usize + 1],
            target: 0,
            within: 0,
            picked: Vec::new(),
        }
    }

    /// First pass: one run (`count` samples from instant `t`, latest sending time `m`).
    fn count(&mut self, t: u64, count: u64, m: u64) {
        let (zeros, t, count) = split_zeros(t, count, m, self.step);
        self.counts[0] += zeros as u32;
        let (v0, step, shift) = (t.wrapping_sub(m), self.step, self.shift);
        if count <= 4 {
            for k in 0..count {
                self.counts[((v0 + k * step) >> shift) as usize] += 1;
            }
            return;
        }
        let mut k = 0;
        while k < count {
            let v = v0 + k * step;
            let b = v >> shift;
            let in_bucket = ((((b + 1) << shift) - v - 1) / step + 1).min(count - k);
            self.counts[b as usize] += in_bucket as u32;
            k += in_bucket;
        }
    }

    /// Between the passes: finds the bucket holding the `p`-th percentile's rank among the
    /// `n` samples counted (ranked as [`percentile`] ranks). False when `n` is 0.
    fn locate(&mut self, n: usize, p: f64) -> bool {
        if n == 0 {
            return false;
        }
        let p = p.clamp(0.0, 100.0);
        let rank = ((p * n as f64 / 100.0).ceil() as usize).clamp(1, n);
        let mut below = 0usize;
        for (b, &c) in self.counts.iter().enumerate() {
            if below + c as usize >= rank {
                self.target = b as u64;
                self.within = rank - below;
                self.picked.reserve(c as usize);
                return true;
            }
            below += c as usize;
        }
        unreachable!("the rank lies within the samples counted")
    }

    /// Second pass: one run again; keeps its samples in the target bucket.
    fn collect(&mut self, t: u64, count: u64, m: u64) {
        let (zeros, t, count) = split_zeros(t, count, m, self.step);
        if self.target == 0 {
            self.picked.extend((0..zeros).map(|_| 0));
        }
        if count == 0 {
            return;
        }
        let (v0, step) = (t - m, self.step);
        let (lo, hi) = (self.target << self.shift, (self.target + 1) << self.shift);
        let last = v0 + (count - 1) * step;
        if last < lo || v0 >= hi {
            return;
        }
        let first_k = if v0 >= lo {
            0
        } else {
            (lo - v0 - 1) / step + 1
        };
        let end_k = ((hi - v0 - 1) / step + 1).min(count);
        self.picked.extend((first_k..end_k).map(|k| v0 + k * step));
    }

    /// The percentile, after the second pass.
    fn value(mut self) -> u64 {
        let (_, kth, _) = self.picked.select_nth_unstable(self.within - 1);
        *kth
    }
}

/// How many sampling instants `window` has at `step` ([`Window::sample_times`]).
fn sample_count(window: Window, step: Duration) -> usize {
    let step_us = step.as_micros();
    assert!(step_us > 0, "sampling step must be positive");
    let (start, end) = (window.start.as_micros(), window.end.as_micros());
    if end > start {
        ((end - start - 1) / step_us + 1) as usize
    } else {
        0
    }
}

/// The delay function over `window`, sampled every `step`, as runs: `run(t, count, m)`
/// for `count` sampling instants `t, t + step, ...` whose latest counted sending time is `m`
/// (the value at each is `t - m`, 0 when negative). `event(i)` is the `i`-th of `len` events
/// in time order: its time, and its sending time if it counts. Before any event, `m` is 0
/// (the virtual packet sent at time 0). The same samples as [`delay_samples`] makes.
#[inline]
fn for_each_run(
    len: usize,
    event: impl Fn(usize) -> (u64, Option<u64>),
    window: Window,
    step: Duration,
    mut run: impl FnMut(u64, u64, u64),
) {
    let step_us = step.as_micros();
    assert!(step_us > 0, "sampling step must be positive");
    let end = window.end.as_micros();
    let (mut i, mut m, mut t) = (0usize, 0u64, window.start.as_micros());
    while t < end {
        // Take in the events up to t.
        while i < len {
            let (at, sent) = event(i);
            if at > t {
                break;
            }
            if let Some(s) = sent {
                m = m.max(s);
            }
            i += 1;
        }
        // The run lasts until the next event that raises m (those before it change nothing).
        let mut next = end;
        while i < len {
            let (at, sent) = event(i);
            if sent.is_some_and(|s| s > m) {
                next = next.min(at);
                break;
            }
            i += 1;
        }
        let count = (next - t - 1) / step_us + 1;
        run(t, count, m);
        match count.checked_mul(step_us).and_then(|d| t.checked_add(d)) {
            Some(after) => t = after,
            None => return,
        }
    }
}

/// The 95th percentile (µs) of the delay function that [`for_each_run`] describes for these
/// events (0 for an empty window).
fn p95_of_runs(
    len: usize,
    event: impl Fn(usize) -> (u64, Option<u64>) + Copy,
    window: Window,
    step: Duration,
) -> f64 {
    let mut sel = RunPercentile::new(window.end.as_micros(), step);
    for_each_run(len, event, window, step, |t, c, m| sel.count(t, c, m));
    if !sel.locate(sample_count(window, step), DELAY_PERCENTILE) {
        return 0.0;
    }
    for_each_run(len, event, window, step, |t, c, m| sel.collect(t, c, m));
    sel.value() as f64
}

/// The 95th percentiles (µs) of the all-packet and the data-only delay functions over
/// `window` (0 for an empty window), exactly as [`percentile`] of [`delay_samples`] gives
/// them. `arrivals` sorted by arrival.
fn delay_p95s(arrivals: &[Arrival], window: Window, step: Duration) -> (f64, f64) {
    let all = |i: usize| {
        let a = &arrivals[i];
        (a.arrived.as_micros(), Some(a.sent.as_micros()))
    };
    let data = |i: usize| {
        let a = &arrivals[i];
        (a.arrived.as_micros(), a.is_data.then(|| a.sent.as_micros()))
    };
    (
        p95_of_runs(arrivals.len(), all, window, step),
        p95_of_runs(arrivals.len(), data, window, step),
    )
}

/// The 95th percentile of the omniscient sender's delay function, ms, as [`compute`] reports
/// it (`omniscient_p95_ms`): that of [`omniscient_delay_samples`] over `window` at
/// `step` (0 for an empty window), computed without keeping the samples.
/// `opportunities_us` must be sorted (µs).
pub fn omniscient_p95_ms(
    opportunities_us: &[u64],
    propagation_delay: Duration,
    window: Window,
    step: Duration,
) -> f64 {
    let (opps, prop) = (opportunities_us, propagation_delay.as_micros());
    let event = |i: usize| (opps[i], Some(opps[i].saturating_sub(prop)));
    p95_of_runs(opps.len(), event, window, step) / 1000.0
}

/// The paper's metrics for one direction of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirectionMetrics {
    /// All bytes leaving the link queue with `arrived` in the window, in kbit/s.
    pub throughput_kbps: f64,
    /// Application payload bytes of the same arrivals, in kbit/s.
    pub goodput_kbps: f64,
    /// The trace's offered capacity in the window, in kbit/s.
    pub capacity_kbps: f64,
    /// `delivered_bytes / offered_bytes` (normally 0..1; 0 if nothing was offered).
    pub utilization: f64,
    /// 95th percentile of the delay function over all packets, ms (the paper's figure).
    pub p95_delay_ms: f64,
    /// 95th percentile of the delay function over packets carrying application data, ms;
    /// NaN (`null` in JSON) when no data packet arrived by the window's end: in a direction
    /// that carries no data (`--load up` or `down`), the time since no data is not a delay.
    pub p95_delay_data_ms: f64,
    /// 95th percentile of the omniscient sender's delay function, ms.
    pub omniscient_p95_ms: f64,
    /// `p95_delay_ms - omniscient_p95_ms` (the paper's self-inflicted delay), ms. Not clamped.
    pub self_inflicted_ms: f64,
    /// `p95_delay_data_ms - omniscient_p95_ms`, ms. Not clamped; NaN when
    /// `p95_delay_data_ms` is.
    pub self_inflicted_data_ms: f64,
    /// Wire bytes delivered in the window.
    pub delivered_bytes: u64,
    /// Bytes the trace offered in the window (`opportunity_bytes` x opportunities in it).
    pub offered_bytes: u64,
    /// Packets (all kinds) delivered in the window.
    pub packets: u64,
    /// Length of the window, seconds.
    pub window_s: f64,
}

/// Bytes over a duration as kbit/s; 0 for an empty duration.
fn kbps(bytes: u64, dur: Duration) -> f64 {
    if dur.is_zero() {
        0.0
    } else {
        bytes as f64 * 8.0 * 1000.0 / dur.as_micros() as f64
    }
}

/// Computes [`DirectionMetrics`] for one direction.
///
/// * `arrivals`: packets leaving the link queue toward the receiver, ideally sorted by
///   `arrived` (a sorted copy is made if they are not); may include arrivals before the
///   window, which affect the delay function's first samples.
/// * `opportunities_us`: every delivery opportunity of the trace as replayed (µs, sorted; may
///   extend beyond the window), each worth `opportunity_bytes` bytes.
/// * `propagation_delay`: one-way propagation delay for the omniscient sender.
/// * `window`, `step`: measured interval and delay sampling step.
///
/// An empty window yields zero rates and zero delays. A direction in which no data packet
/// arrived by the window's end has no data-only delay (NaN).
pub fn compute(
    arrivals: &[Arrival],
    opportunities_us: &[u64],
    opportunity_bytes: u32,
    propagation_delay: Duration,
    window: Window,
    step: Duration,
) -> DirectionMetrics {
    let sorted_opps;
    let opportunities_us = if opportunities_us.windows(2).all(|w| w[0] <= w[1]) {
        opportunities_us
    } else {
        let mut v = opportunities_us.to_vec();
        v.sort_unstable();
        sorted_opps = v;
        &sorted_opps[..]
    };
    let omniscient = omniscient_p95_ms(opportunities_us, propagation_delay, window, step);
    compute_given_omniscient(
        arrivals,
        opportunities_us,
        opportunity_bytes,
        window,
        step,
        omniscient,
    )
}

/// [`compute`] with the omniscient sender's figure already known ([`omniscient_p95_ms`] of
/// the same opportunities, propagation delay, window and step, ms): the same metrics, for a
/// caller that measures many runs over one trace. `opportunities_us` must be sorted (µs).
pub fn compute_given_omniscient(
    arrivals: &[Arrival],
    opportunities_us: &[u64],
    opportunity_bytes: u32,
    window: Window,
    step: Duration,
    omniscient_p95_ms: f64,
) -> DirectionMetrics {
    debug_assert!(
        opportunities_us.windows(2).all(|w| w[0] <= w[1]),
        "opportunities must be sorted"
    );
    let sorted_copy;
    let arrivals = if is_sorted_by_arrival(arrivals) {
        arrivals
    } else {
        let mut v = arrivals.to_vec();
        v.sort_by_key(|a| a.arrived);
        sorted_copy = v;
        &sorted_copy[..]
    };

    let dur = window.duration();
    let mut delivered_bytes = 0u64;
    let mut app_bytes = 0u64;
    let mut packets = 0u64;
    for a in arrivals.iter().filter(|a| window.contains(a.arrived)) {
        delivered_bytes += u64::from(a.bytes);
        app_bytes += u64::from(a.app_bytes);
        packets += 1;
    }
    let in_window = opportunities_us.partition_point(|&t| t < window.end.as_micros())
        - opportunities_us.partition_point(|&t| t < window.start.as_micros());
    let offered_bytes = u64::from(opportunity_bytes) * in_window as u64;

    let (all, data) = delay_p95s(arrivals, window, step);
    let p95_delay_ms = all / 1000.0;
    let carried_data = arrivals.iter().any(|a| a.is_data && a.arrived < window.end);
    let p95_delay_data_ms = if carried_data {
        data / 1000.0
    } else {
        f64::NAN
    };

    DirectionMetrics {
        throughput_kbps: kbps(delivered_bytes, dur),
        goodput_kbps: kbps(app_bytes, dur),
        capacity_kbps: kbps(offered_bytes, dur),
        utilization: if offered_bytes == 0 {
            0.0
        } else {
            delivered_bytes as f64 / offered_bytes as f64
        },
        p95_delay_ms,
        p95_delay_data_ms,
        omniscient_p95_ms,
        self_inflicted_ms: p95_delay_ms - omniscient_p95_ms,
        self_inflicted_data_ms: p95_delay_data_ms - omniscient_p95_ms,
        delivered_bytes,
        offered_bytes,
        packets,
        window_s: window.len_s(),
    }
}

/// One bin of a Figure-1-style time series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimeSeriesPoint {
    /// Start of the bin, seconds since the start of the run (not of the window).
    pub t_s: f64,
    /// Length of the bin, seconds (the last bin may be shorter than the others).
    pub bin_s: f64,
    /// Capacity the trace offered in the bin, kbit/s.
    pub capacity_kbps: f64,
    /// Wire bytes delivered in the bin, kbit/s.
    pub throughput_kbps: f64,
    /// Application payload delivered in the bin, kbit/s.
    pub goodput_kbps: f64,
    /// Maximum (supremum) of the all-packet delay function within the bin, ms.
    pub delay_ms: f64,
    /// Maximum (supremum) of the data-only delay function within the bin, ms.
    pub delay_data_ms: f64,
}

/// Running state of an exact per-bin maximum of the delay function.
struct BinMax {
    idx: usize,
    max_sent: u64,
}

impl BinMax {
    /// Supremum of `delay(t)` over `[b0, b1)` (µs), counting arrivals passing `keep`, advancing
    /// through `arrivals` (sorted by arrival). The delay function rises linearly between
    /// arrivals and only drops at them, so the supremum is the largest of its value at `b0`,
    /// its left limits at each arrival inside the bin, and its left limit at `b1`.
    fn next(
        &mut self,
        arrivals: &[Arrival],
        b0: u64,
        b1: u64,
        keep: &impl Fn(&Arrival) -> bool,
    ) -> u64 {
        while self.idx < arrivals.len() && arrivals[self.idx].arrived.as_micros() <= b0 {
            if keep(&arrivals[self.idx]) {
                self.max_sent = self.max_sent.max(arrivals[self.idx].sent.as_micros());
            }
            self.idx += 1;
        }
        let mut best = b0.saturating_sub(self.max_sent);
        while self.idx < arrivals.len() && arrivals[self.idx].arrived.as_micros() < b1 {
            let a = &arrivals[self.idx];
            if keep(a) {
                best = best.max(a.arrived.as_micros().saturating_sub(self.max_sent));
                self.max_sent = self.max_sent.max(a.sent.as_micros());
            }
            self.idx += 1;
        }
        best.max(b1.saturating_sub(self.max_sent))
    }
}

/// A Figure-1-style time series over `window`, in bins of `bin` (the last bin may be
/// shorter): offered capacity and throughput per bin, and the maximum of the delay function
/// (exact supremum, not sampled) within each bin. The maximum rather than a percentile is used
/// so that outages show at their full height. `arrivals` must be sorted by `arrived`
/// (a sorted copy is made if not); `opportunities_us` sorted, each worth `opportunity_bytes`.
/// Panics if `bin` is zero.
pub fn time_series(
    arrivals: &[Arrival],
    opportunities_us: &[u64],
    opportunity_bytes: u32,
    window: Window,
    bin: Duration,
) -> Vec<TimeSeriesPoint> {
    assert!(!bin.is_zero(), "bin length must be positive");
    let bin_us = bin.as_micros();
    let sorted_copy;
    let arrivals = if is_sorted_by_arrival(arrivals) {
        arrivals
    } else {
        let mut v = arrivals.to_vec();
        v.sort_by_key(|a| a.arrived);
        sorted_copy = v;
        &sorted_copy[..]
    };
    let mut opps = opportunities_us.to_vec();
    opps.sort_unstable();

    let mut out = Vec::new();
    let mut all = BinMax {
        idx: 0,
        max_sent: 0,
    };
    let mut data = BinMax {
        idx: 0,
        max_sent: 0,
    };
    // Cursors for byte counting.
    let (start, end) = (window.start.as_micros(), window.end.as_micros());
    let mut ai = arrivals.partition_point(|a| a.arrived.as_micros() < start);
    let mut oi = opps.partition_point(|&t| t < start);
    let mut b0 = start;
    while b0 < end {
        let b1 = b0.saturating_add(bin_us).min(end);
        let (mut wire, mut app) = (0u64, 0u64);
        while ai < arrivals.len() && arrivals[ai].arrived.as_micros() < b1 {
            wire += u64::from(arrivals[ai].bytes);
            app += u64::from(arrivals[ai].app_bytes);
            ai += 1;
        }
        let mut n_opps = 0u64;
        while oi < opps.len() && opps[oi] < b1 {
            n_opps += 1;
            oi += 1;
        }
        let d_all = all.next(arrivals, b0, b1, &|_: &Arrival| true);
        let d_data = data.next(arrivals, b0, b1, &|a: &Arrival| a.is_data);
        let dur = Duration::from_micros(b1 - b0);
        out.push(TimeSeriesPoint {
            t_s: b0 as f64 / 1e6,
            bin_s: dur.as_secs_f64(),
            capacity_kbps: kbps(n_opps * u64::from(opportunity_bytes), dur),
            throughput_kbps: kbps(wire, dur),
            goodput_kbps: kbps(app, dur),
            delay_ms: d_all as f64 / 1000.0,
            delay_data_ms: d_data as f64 / 1000.0,
        });
        b0 = b1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sprout_core::time::Instant;

    const MS: u64 = 1000;
    /// The default sampling step, 1 ms.
    const STEP: Duration = DEFAULT_STEP;

    /// The instant `x` ms after the start.
    fn ms(x: u64) -> Instant {
        Instant::from_millis(x)
    }

    /// A data packet sent at `sent` that arrived at `arrived`.
    fn pkt(sent: Instant, arrived: Instant) -> Arrival {
        Arrival {
            sent,
            arrived,
            bytes: 1500,
            app_bytes: 1400,
            is_data: true,
        }
    }

    /// A heartbeat sent at `sent` that arrived at `arrived`.
    fn hb(sent: Instant, arrived: Instant) -> Arrival {
        Arrival {
            sent,
            arrived,
            bytes: 60,
            app_bytes: 0,
            is_data: false,
        }
    }

    /// The instant `x` µs after the start.
    fn us(x: u64) -> Instant {
        Instant::from_micros(x)
    }

    /// The window `[a, b)`, µs.
    fn win(a: u64, b: u64) -> Window {
        Window::new(us(a), us(b))
    }

    fn ms_samples(v: &[u64]) -> Vec<u64> {
        v.iter().map(|x| x / MS).collect()
    }

    #[test]
    fn times_serialize_under_their_microsecond_names() {
        let a = pkt(ms(1), ms(3));
        let v = serde_json::to_value(a).unwrap();
        assert_eq!(v["sent_us"], 1_000);
        assert_eq!(v["arrived_us"], 3_000);
        assert_eq!(serde_json::from_value::<Arrival>(v).unwrap(), a);
        let w = win(5, 9);
        let v = serde_json::to_value(w).unwrap();
        assert_eq!(v, serde_json::json!({"start_us": 5, "end_us": 9}));
        assert_eq!(serde_json::from_value::<Window>(v).unwrap(), w);
    }

    #[test]
    fn a_window_is_half_open() {
        let w = win(5, 9);
        assert_eq!(w.duration(), Duration::from_micros(4));
        assert!(w.contains(us(5)) && w.contains(us(8)));
        assert!(!w.contains(us(4)) && !w.contains(us(9)));
        let t: Vec<Instant> = w.sample_times(Duration::from_micros(3)).collect();
        assert_eq!(t, vec![us(5), us(8)]);
        assert_eq!(win(9, 5).duration(), Duration::ZERO);
        assert_eq!(win(9, 5).sample_times(STEP).count(), 0);
    }

    #[test]
    fn percentile_nearest_rank_on_1_to_100() {
        let v: Vec<u64> = (1..=100).rev().collect();
        assert_eq!(percentile(&v, 95.0), 95.0);
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 100.0), 100.0);
        assert_eq!(percentile(&v, 0.0), 1.0);
        assert_eq!(percentile(&v, 0.5), 1.0);
        assert_eq!(percentile(&v, 94.1), 95.0);
        // 1..=10: rank ceil(9.5) = 10.
        let w: Vec<u64> = (1..=10).collect();
        assert_eq!(percentile(&w, 95.0), 10.0);
        // 1..=20: rank ceil(19) = 19 exactly (no float drift to 20).
        let x: Vec<u64> = (1..=20).collect();
        assert_eq!(percentile(&x, 95.0), 19.0);
        assert!(percentile(&[], 95.0).is_nan());
        assert_eq!(percentile(&[7], 95.0), 7.0);
    }

    #[test]
    fn simple_in_order_known_answer() {
        // Sent at 0, 10, 20 ms; arrive at 50, 60, 70 ms. Window [50, 100) ms, step 1 ms.
        // t in 50..=59: last arrival sent at 0  -> delay = t       = 50..59
        // t in 60..=69: last arrival sent at 10 -> delay = t - 10  = 50..59
        // t in 70..=99: last arrival sent at 20 -> delay = t - 20  = 50..79
        let arr = [pkt(ms(0), ms(50)), pkt(ms(10), ms(60)), pkt(ms(20), ms(70))];
        let w = win(50 * MS, 100 * MS);
        let s = delay_samples(&arr, w, STEP, |_| true);
        assert_eq!(s.len(), 50);
        let mut expect: Vec<u64> = (50..60).chain(50..60).chain(50..80).collect();
        assert_eq!(ms_samples(&s), expect);
        // Values 50..59 appear 3 times (30 samples), 60..79 once (20 samples). Rank
        // ceil(0.95*50) = 48 -> the 48th smallest = 30 + 18th of 60..79 = 77.
        expect.sort();
        assert_eq!(expect[47], 77);
        let p = percentile(&s, 95.0);
        assert_eq!(p, 77_000.0);

        // Opportunities at 50, 60, 70 ms (1500 bytes each), plus 80 and 90 (unused), plus
        // one at 100 ms outside the window. Propagation 20 ms.
        let opps: Vec<u64> = [50, 60, 70, 80, 90, 100].iter().map(|x| x * MS).collect();
        // Omniscient: delay(t) = t - last_opp + 20 -> 20..29 on each 10 ms stretch,
        // five stretches in [50,100): each of 20..29 appears 5 times; rank 48 -> 29.
        let omni = omniscient_delay_samples(&opps, Duration::from_millis(20), w, STEP);
        assert_eq!(percentile(&omni, 95.0), 29_000.0);

        let m = compute(&arr, &opps, 1500, Duration::from_millis(20), w, STEP);
        // 3 x 1500 bytes in 50 ms = 4500*8/0.05 bit/s = 720 kbit/s.
        assert!((m.throughput_kbps - 720.0).abs() < 1e-9);
        assert!((m.goodput_kbps - 3.0 * 1400.0 * 8.0 / 0.05 / 1000.0).abs() < 1e-9);
        // offered: 5 opportunities in window = 7500 bytes -> 1200 kbit/s; utilization 0.6.
        assert_eq!(m.offered_bytes, 7500);
        assert_eq!(m.delivered_bytes, 4500);
        assert!((m.capacity_kbps - 1200.0).abs() < 1e-9);
        assert!((m.utilization - 0.6).abs() < 1e-12);
        assert_eq!(m.p95_delay_ms, 77.0);
        assert_eq!(m.p95_delay_data_ms, 77.0);
        assert_eq!(m.omniscient_p95_ms, 29.0);
        assert_eq!(m.self_inflicted_ms, 48.0);
        assert_eq!(m.self_inflicted_data_ms, 48.0);
        assert_eq!(m.packets, 3);
        assert!((m.window_s - 0.05).abs() < 1e-12);
    }

    #[test]
    fn reordering_does_not_lower_delay() {
        // B (sent 30) arrives at 40, then A (sent 10) arrives at 45. Window [40, 50).
        // delay = t - 30 throughout: 10..19. A never lowers it (it would give t - 10).
        let arr = [pkt(ms(30), ms(40)), pkt(ms(10), ms(45))];
        let w = win(40 * MS, 50 * MS);
        let s = delay_samples(&arr, w, STEP, |_| true);
        assert_eq!(ms_samples(&s), (10..20).collect::<Vec<_>>());
        // Compute tolerates unsorted input too (sorted copy).
        let m = compute(
            &[pkt(ms(10), ms(45)), pkt(ms(30), ms(40))],
            &[],
            1500,
            Duration::ZERO,
            w,
            STEP,
        );
        // rank ceil(9.5) = 10 -> 19 ms.
        assert_eq!(m.p95_delay_ms, 19.0);
    }

    #[test]
    fn outage_gap_grows_one_ms_per_ms() {
        // Packets sent at 100, arrive at 120; next sent 130 arrives only at 620 (500 ms outage).
        let arr = [pkt(ms(100), ms(120)), pkt(ms(130), ms(620))];
        let w = win(120 * MS, 700 * MS);
        let s = delay_samples(&arr, w, STEP, |_| true);
        // t=120..619: delay = t - 100 = 20..519, rising by exactly 1 ms each ms.
        for (k, d) in s.iter().take(500).enumerate() {
            assert_eq!(*d, (20 + k as u64) * MS);
        }
        // t=620..699: delay = t - 130 = 490..569.
        assert_eq!(s[500], 490 * MS);
        assert_eq!(s[579], 569 * MS);
        // 580 samples; rank ceil(551) = 551. Values: 20..519 (500) and 490..569 (80).
        // Sorted: below 490 there are 470 (20..489); 490..519 appear twice (60 samples ->
        // ranks 471..530); 520..569 once (ranks 531..580). Rank 551 -> 520 + 20 = 540.
        assert_eq!(percentile(&s, 95.0), 540_000.0);
    }

    #[test]
    fn a_direction_without_data_has_no_data_only_delay() {
        // Heartbeats only, as in the direction `--load up` leaves unloaded: the all-packet
        // delay is the heartbeats', and there is no data-only figure at all.
        let arr: Vec<Arrival> = (0..40).map(|k| hb(ms(50 * k), ms(50 * k + 20))).collect();
        let w = win(100 * MS, 2000 * MS);
        let m = compute(&arr, &[], 1500, Duration::from_millis(20), w, STEP);
        assert!(
            m.p95_delay_ms > 0.0 && m.p95_delay_ms < 100.0,
            "{}",
            m.p95_delay_ms
        );
        assert!(m.p95_delay_data_ms.is_nan());
        assert!(m.self_inflicted_data_ms.is_nan());
    }

    #[test]
    fn data_only_filter_sees_through_heartbeats() {
        // Data packets sent at 0 and 1000 arrive at 20 and 1020; during the data gap the idle
        // sender's heartbeats (sent every 50 ms from 50 to 950) arrive 20 ms later.
        let mut arr = vec![pkt(ms(0), ms(20))];
        for k in 1..=19 {
            arr.push(hb(ms(50 * k), ms(50 * k + 20)));
        }
        arr.push(pkt(ms(1000), ms(1020)));
        let w = win(20 * MS, 1020 * MS);
        let m = compute(&arr, &[], 1500, Duration::from_millis(20), w, STEP);
        // All packets: sawtooth 20..69 (approx) -> p95 = 67 ms: the delay at t is
        // t - 50*floor((t-20)/50) (sent 0 counts for t in 20..69), values 20..69 each 20 times
        // over 1000 samples; rank 950 -> 20 + floor(949/20) = 20 + 47 = 67.
        assert_eq!(m.p95_delay_ms, 67.0);
        // Data only: delay = t for t in 20..1019 -> values 20..1019; rank 950 -> 969.
        assert_eq!(m.p95_delay_data_ms, 969.0);
        assert!(m.p95_delay_data_ms > m.p95_delay_ms);
        // No opportunities at all: omniscient delay = t, p95 = 969 too.
        assert_eq!(m.omniscient_p95_ms, 969.0);
        assert_eq!(m.self_inflicted_data_ms, 0.0);
    }

    #[test]
    fn arrivals_before_window_count() {
        // One packet sent at 5 ms arrived at 8 ms, before the window [10, 20).
        let arr = [pkt(ms(5), ms(8)), pkt(ms(12), ms(15))];
        let w = win(10 * MS, 20 * MS);
        let s = delay_samples(&arr, w, STEP, |_| true);
        // t=10..14: t-5 = 5..9; t=15..19: t-12 = 3..7.
        assert_eq!(ms_samples(&s), vec![5, 6, 7, 8, 9, 3, 4, 5, 6, 7]);
        // Before any arrival at all, delay(t) = t.
        let s2 = delay_samples(&arr, win(0, 5 * MS), STEP, |_| true);
        assert_eq!(ms_samples(&s2), vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn omniscient_with_one_second_gap() {
        // Opportunities every 10 ms over [0, 1000) ms, none in [1000, 2000), every 10 ms again
        // over [2000, 3000). Propagation 20 ms. Window [0, 3000).
        let mut opps: Vec<u64> = (0..100).map(|k| k * 10 * MS).collect();
        opps.extend((200..300).map(|k| k * 10 * MS));
        let w = win(0, 3000 * MS);
        let s = omniscient_delay_samples(&opps, Duration::from_millis(20), w, STEP);
        // t in [0,20): only opportunities < propagation -> virtual packet at 0 -> delay = t.
        assert_eq!(s[5], 5 * MS);
        // Steady state: 20..29.
        assert_eq!(s[500], 20 * MS);
        assert_eq!(s[509], 29 * MS);
        // Gap: last opportunity 990 ms -> delay(t) = t - 970; at t=1999: 1029 ms.
        assert_eq!(s[1999], 1029 * MS);
        // 3000 samples; rank 2850. Values >= 30 ms occur only in t in [1000,2000): there
        // delay = t - 970 runs over 30..1029 (1000 samples). All others (2000 samples) are
        // <= 29. Rank 2850 -> 850th of 30..1029 -> 879.
        assert_eq!(percentile(&s, 95.0), 879_000.0);
    }

    #[test]
    fn empty_window_is_zero() {
        let m = compute(
            &[pkt(ms(0), ms(10))],
            &[10 * MS],
            1500,
            Duration::ZERO,
            win(5, 5),
            STEP,
        );
        assert_eq!(m.throughput_kbps, 0.0);
        assert_eq!(m.p95_delay_ms, 0.0);
        assert_eq!(m.utilization, 0.0);
        assert_eq!(m.window_s, 0.0);
    }

    #[test]
    fn streamed_percentiles_equal_those_of_the_samples() {
        // Irregular arrivals (a linear congruential generator) over a 400 s window, so that
        // the buckets are many samples wide and the rank falls inside one of them.
        let mut x = 12345u64;
        let mut next = |m: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        let (mut arr, mut opps, mut t) = (Vec::new(), Vec::new(), 0u64);
        while t < 400_000 * MS {
            t += next(3_000 * MS) + 1;
            let sent = t.saturating_sub(20 * MS + next(2_000 * MS));
            let mut a = pkt(ms(0), ms(0));
            (a.sent, a.arrived, a.is_data) = (us(sent), us(t), next(3) != 0);
            arr.push(a);
            opps.push(t - next(10 * MS));
        }
        opps.sort_unstable();
        for (start, step) in [(0, MS), (60_000 * MS, MS), (1_234_567, 7 * MS)] {
            let w = win(start, 400_000 * MS);
            let m = compute(
                &arr,
                &opps,
                1500,
                Duration::from_millis(20),
                w,
                Duration::from_micros(step),
            );
            let all = percentile(
                &delay_samples(&arr, w, Duration::from_micros(step), |_| true),
                95.0,
            );
            let data = percentile(
                &delay_samples(&arr, w, Duration::from_micros(step), |a| a.is_data),
                95.0,
            );
            let omni = percentile(
                &omniscient_delay_samples(
                    &opps,
                    Duration::from_millis(20),
                    w,
                    Duration::from_micros(step),
                ),
                95.0,
            );
            assert_eq!(m.p95_delay_ms, all / 1000.0);
            assert_eq!(m.p95_delay_data_ms, data / 1000.0);
            assert_eq!(m.omniscient_p95_ms, omni / 1000.0);
            assert!(m.p95_delay_ms > 100.0 && m.p95_delay_data_ms > m.p95_delay_ms);
        }
    }

    #[test]
    fn streamed_percentiles_hold_for_bursts_gaps_and_packets_from_the_future() {
        // Bursts of arrivals within a millisecond, gaps of seconds, and now and then a packet
        // whose sending time is after its arrival (the delay function is 0 until it passes),
        // sampled at steps that divide the gaps or not, over windows whose 95th percentile
        // is 0 or not.
        let mut x = 99u64;
        let mut next = |m: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        for future_every in [3, 40, 1000] {
            let (mut arr, mut t) = (Vec::new(), 0u64);
            while t < 100_000 * MS {
                t += if next(10) == 0 {
                    next(4_000 * MS)
                } else {
                    next(900)
                };
                let mut a = pkt(ms(0), ms(0));
                a.arrived = us(t);
                a.sent = us(if next(future_every) == 0 {
                    t + next(3_000 * MS)
                } else {
                    t.saturating_sub(next(500 * MS))
                });
                a.is_data = next(4) != 0;
                arr.push(a);
            }
            for (start, step) in [(0, MS), (5_000 * MS + 17, 333), (0, 4_096)] {
                let w = win(start, 100_000 * MS);
                let m = compute(
                    &arr,
                    &[],
                    1500,
                    Duration::ZERO,
                    w,
                    Duration::from_micros(step),
                );
                let all = percentile(
                    &delay_samples(&arr, w, Duration::from_micros(step), |_| true),
                    95.0,
                );
                let data = percentile(
                    &delay_samples(&arr, w, Duration::from_micros(step), |a| a.is_data),
                    95.0,
                );
                assert_eq!(
                    (m.p95_delay_ms, m.p95_delay_data_ms),
                    (all / 1e3, data / 1e3)
                );
            }
        }
    }

    #[test]
    fn time_series_bins() {
        // Same scenario as the known-answer test, bins of 25 ms over [50, 100).
        let arr = [pkt(ms(0), ms(50)), pkt(ms(10), ms(60)), pkt(ms(20), ms(70))];
        let opps: Vec<u64> = [50, 60, 70, 80, 90].iter().map(|x| x * MS).collect();
        let ts = time_series(
            &arr,
            &opps,
            1500,
            win(50 * MS, 100 * MS),
            Duration::from_millis(25),
        );
        assert_eq!(ts.len(), 2);
        // Bin [50,75): 3 packets, 3 opportunities -> 4500*8/0.025 = 1440 kbit/s each.
        assert!((ts[0].throughput_kbps - 1440.0).abs() < 1e-9);
        assert!((ts[0].capacity_kbps - 1440.0).abs() < 1e-9);
        // Max delay in [50,75): left limits 60-0=60 at t=60, 70-10=60 at t=70, 75-20=55 at
        // the end -> 60 ms.
        assert_eq!(ts[0].delay_ms, 60.0);
        // Bin [75,100): no arrivals, 2 opportunities; delay rises to 100-20=80.
        assert_eq!(ts[1].throughput_kbps, 0.0);
        assert!((ts[1].capacity_kbps - 960.0).abs() < 1e-9);
        assert_eq!(ts[1].delay_ms, 80.0);
        assert_eq!(ts[1].t_s, 0.075);
        // Partial last bin.
        let ts = time_series(
            &arr,
            &opps,
            1500,
            win(50 * MS, 100 * MS),
            Duration::from_millis(30),
        );
        assert_eq!(ts.len(), 2);
        assert!((ts[1].bin_s - 0.02).abs() < 1e-12);
    }
}
