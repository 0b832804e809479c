//! A link direction's ticks and what a forecast made at one of them is measured against: the
//! opportunities per tick ([`TickCounts`]), the class of a miss ([`MissClass`]), and the
//! tally of an estimator's forecasts fed those ticks as a saturated receiver would be
//! ([`measure`]).

use sprout_core::estimator::Estimator;
use sprout_link::Trace;

/// Ticks of "recent" history: an outage that ended this recently, and the window whose mean
/// count a rate change is measured against (50 ticks of 20 ms: 1 s).
pub const RECENT_TICKS: usize = 50;
/// The shortest run of empty ticks that counts as an outage for [`MissClass::AfterOutage`].
pub const OUTAGE_RUN_TICKS: usize = 2;
/// A rate change: the horizon's mean count departs from the recent mean by more than this
/// fraction of the recent mean.
pub const RATE_CHANGE_FRACTION: f64 = 0.5;

/// Where a missed forecast happened: the first of these that applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissClass {
    /// An empty tick among the forecast's next `h` ticks.
    OutageInHorizon,
    /// A run of at least [`OUTAGE_RUN_TICKS`] empty ticks ended within the previous
    /// [`RECENT_TICKS`] ticks (the tick of the forecast included).
    AfterOutage,
    /// The mean count of the next `h` ticks departs from the mean of the previous
    /// [`RECENT_TICKS`] by more than [`RATE_CHANGE_FRACTION`] of the latter.
    RateChange,
    /// None of the above.
    Steady,
}

impl MissClass {
    /// Every class, in the order of the tables' columns.
    pub const ALL: [MissClass; 4] = [
        MissClass::OutageInHorizon,
        MissClass::AfterOutage,
        MissClass::RateChange,
        MissClass::Steady,
    ];

    fn index(self) -> usize {
        self as usize
    }
}

/// A link direction's per-tick opportunity counts, with what classifying a miss reads.
#[derive(Clone, Debug)]
pub struct TickCounts {
    counts: Vec<u32>,
    /// `prefix[i]`: opportunities in ticks `0..i`.
    prefix: Vec<u64>,
    /// `prefix_empty[i]`: empty ticks among `0..i`.
    prefix_empty: Vec<u32>,
    /// For each tick, the last tick at or before it that lies in a run of at least
    /// [`OUTAGE_RUN_TICKS`] empty ticks (counted up to that tick).
    last_long_outage: Vec<Option<usize>>,
}

impl TickCounts {
    /// The counts of `trace` in ticks of `tick_us` microseconds: tick `k` holds the
    /// opportunities at times in `[k tick, (k + 1) tick)`; the ticks end with the last one the
    /// trace covers whole (a partial last tick is left out).
    pub fn from_trace(trace: &Trace, tick_us: u64) -> TickCounts {
        let tick_us = tick_us.max(1);
        let covered_us = trace.period_ms().saturating_add(1).saturating_mul(1000);
        let n = usize::try_from(covered_us / tick_us).unwrap_or(usize::MAX);
        let mut counts = vec![0u32; n];
        for &ms in trace.opportunities_ms() {
            let k = usize::try_from(ms.saturating_mul(1000) / tick_us).unwrap_or(usize::MAX);
            if let Some(c) = counts.get_mut(k) {
                *c = c.saturating_add(1);
            }
        }
        TickCounts::new(counts)
    }

    /// From counts per tick.
    pub fn new(counts: Vec<u32>) -> TickCounts {
        let mut prefix = Vec::with_capacity(counts.len() + 1);
        let mut prefix_empty = Vec::with_capacity(counts.len() + 1);
        let mut last_long_outage = Vec::with_capacity(counts.len());
        let (mut sum, mut empty, mut run) = (0u64, 0u32, 0usize);
        let mut last = None;
        prefix.push(0);
        prefix_empty.push(0);
        for (k, &c) in counts.iter().enumerate() {
            sum += u64::from(c);
            run = if c == 0 { run + 1 } else { 0 };
            empty += u32::from(c == 0);
            if run >= OUTAGE_RUN_TICKS {
                last = Some(k);
            }
            prefix.push(sum);
            prefix_empty.push(empty);
            last_long_outage.push(last);
        }
        TickCounts {
            counts,
            prefix,
            prefix_empty,
            last_long_outage,
        }
    }

    /// The counts.
    pub fn counts(&self) -> &[u32] {
        &self.counts
    }

    /// Opportunities in ticks `from..to`.
    fn sum(&self, from: usize, to: usize) -> u64 {
        self.prefix[to] - self.prefix[from]
    }

    /// The class of a miss of the forecast made at the end of tick `k` for the next `h` ticks
    /// (`k + h` must be a tick).
    pub fn classify(&self, k: usize, h: usize) -> MissClass {
        if self.prefix_empty[k + h + 1] > self.prefix_empty[k + 1] {
            return MissClass::OutageInHorizon;
        }
        if self.last_long_outage[k].is_some_and(|j| k - j < RECENT_TICKS) {
            return MissClass::AfterOutage;
        }
        let from = (k + 1).saturating_sub(RECENT_TICKS);
        let recent = self.sum(from, k + 1) as f64 / (k + 1 - from) as f64;
        let next = self.sum(k + 1, k + h + 1) as f64 / h as f64;
        if (next - recent).abs() > RATE_CHANGE_FRACTION * recent {
            MissClass::RateChange
        } else {
            MissClass::Steady
        }
    }
}

/// One horizon's tally over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Forecasts counted.
    pub forecasts: u64,
    /// Forecasts met (`A_h >= F_h`).
    pub met: u64,
    /// Misses per class, in [`MissClass::ALL`]'s order.
    pub misses: [u64; 4],
}

impl Tally {
    /// Met over counted (NaN when none was counted).
    pub fn coverage(&self) -> f64 {
        if self.forecasts == 0 {
            f64::NAN
        } else {
            self.met as f64 / self.forecasts as f64
        }
    }

    /// Each class's share of the misses, or `None` when there was no miss.
    pub fn shares(&self) -> Option<[f64; 4]> {
        let missed: u64 = self.misses.iter().sum();
        (missed > 0).then(|| self.misses.map(|m| m as f64 / missed as f64))
    }
}

/// Feeds `est` the ticks of `ticks` as a saturated receiver would and tallies its forecasts
/// at horizons `1..=horizons`: each tick `evolve`, `observe(count)`, `forecast`; a forecast made
/// at the end of tick `k` is counted at horizon `h` when `k >= first` and tick `k + h` exists.
pub fn measure(
    est: &mut dyn Estimator,
    ticks: &TickCounts,
    first: usize,
    horizons: usize,
) -> Vec<Tally> {
    let mut tallies = vec![Tally::default(); horizons];
    let mut out = vec![0u32; horizons];
    let n = ticks.counts.len();
    for k in 0..n {
        est.evolve();
        est.observe(f64::from(ticks.counts[k]));
        if k < first || k + 1 >= n {
            continue;
        }
        est.forecast(&mut out);
        for (i, t) in tallies.iter_mut().enumerate() {
            let h = i + 1;
            if k + h >= n {
                break;
            }
            t.forecasts += 1;
            if ticks.sum(k + 1, k + h + 1) >= u64::from(out[i]) {
                t.met += 1;
            } else {
                t.misses[ticks.classify(k, h).index()] += 1;
            }
        }
    }
    tallies
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An estimator whose forecast is always `per_tick` packets a tick.
    #[derive(Clone, Debug)]
    struct Fixed {
        per_tick: u32,
    }

    impl Estimator for Fixed {
        fn evolve(&mut self) {}
        fn observe(&mut self, _packets: f64) {}
        fn observe_at_least(&mut self, _packets: f64) {}
        fn forecast(&self, out: &mut [u32]) {
            for (i, o) in out.iter_mut().enumerate() {
                *o = self.per_tick * (i as u32 + 1);
            }
        }
        fn rate_pps(&self) -> f64 {
            0.0
        }
        fn max_forecast(&self, _h: usize) -> u32 {
            u32::MAX
        }
        fn box_clone(&self) -> Box<dyn Estimator> {
            Box::new(self.clone())
        }
    }

    #[test]
    fn ticks_count_the_opportunities_of_each_whole_tick() {
        let t = Trace::from_opportunities_ms("t", vec![0, 5, 19, 20, 39, 41]).unwrap();
        // 42 ms covered: two whole ticks; the opportunity at 41 ms is in the partial third.
        assert_eq!(TickCounts::from_trace(&t, 20_000).counts(), [3, 2]);
        let t = Trace::from_opportunities_ms("t", vec![3, 3, 61, 79]).unwrap();
        assert_eq!(TickCounts::from_trace(&t, 20_000).counts(), [2, 0, 0, 2]);
    }

    /// 100 ticks of 10, an outage of 3 ticks, 10s again with a lone empty tick at 160, then
    /// 30s from tick 220 to the end (280).
    fn hand_made() -> TickCounts {
        let mut c = vec![10u32; 280];
        c[100..103].fill(0);
        c[160] = 0;
        c[220..].fill(30);
        TickCounts::new(c)
    }

    #[test]
    fn misses_are_classified_by_outage_recency_and_rate_change() {
        let t = hand_made();
        use MissClass::*;
        // The horizon holds an empty tick (the outage, and the lone empty tick).
        assert_eq!(t.classify(98, 4), OutageInHorizon);
        assert_eq!(t.classify(97, 2), Steady);
        assert_eq!(t.classify(159, 1), OutageInHorizon);
        // Just after the outage, and until 50 ticks after its last empty tick (102).
        assert_eq!(t.classify(102, 1), AfterOutage);
        assert_eq!(t.classify(105, 2), AfterOutage);
        assert_eq!(t.classify(151, 8), AfterOutage);
        assert_eq!(t.classify(152, 7), Steady);
        // A lone empty tick is no outage; the recent mean it lowers (9.8) is no rate change.
        assert_eq!(t.classify(162, 1), Steady);
        // From 10 a tick to 30: a rate change, in the horizon's mean as it comes.
        assert_eq!(t.classify(219, 1), RateChange);
        assert_eq!(t.classify(217, 4), RateChange); // (10 + 10 + 30 + 30) / 4 = 20 > 15
        assert_eq!(t.classify(216, 4), Steady); // (10 + 10 + 10 + 30) / 4 = 15, not more
                                                // Long after: the recent mean has caught up.
        assert_eq!(t.classify(270, 8), Steady);
    }

    #[test]
    fn a_fixed_forecast_misses_exactly_where_the_link_falls_short() {
        let t = hand_made();
        let n = t.counts().len();
        let tallies = measure(&mut Fixed { per_tick: 10 }, &t, 60, 8);
        for (i, tally) in tallies.iter().enumerate() {
            let h = i + 1;
            // Forecasts from tick 60 while tick k + h exists.
            assert_eq!(tally.forecasts, (n - h - 60) as u64, "h={h}");
            // 10 a tick is met unless an empty tick is in the horizon: every miss is an
            // outage in the horizon. Horizons that see the outage of 3 ticks: h + 2 of them;
            // the lone empty tick: h.
            let missed = tally.forecasts - tally.met;
            assert_eq!(missed, (h + 2 + h) as u64, "h={h}");
            assert_eq!(tally.misses, [missed, 0, 0, 0], "h={h}");
            assert_eq!(tally.shares(), Some([1.0, 0.0, 0.0, 0.0]));
        }
        // Forecasting 20 a tick misses everywhere but where the link carries 30 (from tick
        // 220): from tick 60 to 218, 159 misses: 4 with an empty next tick (99, 100, 101,
        // 159), 50 after the outage (102 to 151), the other 105 steady; the jump to 30 is met.
        let t20 = measure(&mut Fixed { per_tick: 20 }, &t, 60, 1);
        assert_eq!(t20[0].met, (n - 220) as u64);
        assert_eq!(t20[0].misses, [4, 50, 0, 105]);
    }
}
