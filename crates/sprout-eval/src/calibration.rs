//! The `calibration` experiment (issue 40, its first part): how well each estimator's forecast
//! is calibrated against the link itself. A forecast that claims 95% should be met 95% of the
//! time.
//!
//! Each link direction of the evaluation is turned into per-tick delivery-opportunity counts
//! (a tick is the model's tau, 20 ms; a count is the opportunities in the tick), and an
//! estimator is fed them exactly as the receiver of a saturated link would be fed
//! ([`sprout_core::receiver`]'s tick): each tick `evolve()`, then `observe(count)` (0 for an
//! empty tick), then `forecast()` of the next ticks. Its forecast `F_h` (cumulative packets by
//! the end of the `h`-th next tick) is met when the opportunities of the next `h` ticks,
//! `A_h`, are at least `F_h`; the coverage is the share of forecasts met, forecasts made in the
//! evaluation's skipped start (60 s by default) left out as warm-up. This is the *ideal
//! observation* calibration: the belief sees every opportunity, as a receiver behind a
//! saturated link does; in a simulation the sender's own behaviour (application-limited ticks,
//! a queue that runs dry) shapes what the receiver sees, which is later work.
//!
//! Each miss is put in one class, the first that applies ([`MissClass`]): an empty tick
//! within the horizon, a recent outage (a run of at least [`OUTAGE_RUN_TICKS`] empty ticks
//! that ended within the previous [`RECENT_TICKS`] ticks), a rate change (the horizon's mean
//! count departs from the previous [`RECENT_TICKS`] ticks' by more than
//! [`RATE_CHANGE_FRACTION`] of the latter), else steady.
//!
//! Models: Sprout on the paper's model and on the wide one at each of [`CONFIDENCES`], and
//! Sprout-EWMA (no confidence). Not in `all` ([`crate::experiment::Experiment::OPT_IN`]). The
//! files, table and report section are in `crate::report::calibration`, the chart in
//! `crate::chart::calibration_chart`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use sprout_core::estimator::{build, Estimator};
use sprout_link::Trace;
use sprout_sim::scheme::Scheme;

use crate::error::{EvalError, Result};
use crate::traces::LinkSet;

/// The stated confidences of the Bayesian models.
pub const CONFIDENCES: [f64; 7] = [0.5, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98];
/// The models, in the order tables list them: the paper's, the wide one, Sprout-EWMA.
pub const MODELS: [Scheme; 3] = [Scheme::Sprout, Scheme::SproutWide, Scheme::SproutEwma];
/// The horizons the report's table shows, ticks.
pub const REPORT_HORIZONS: [usize; 3] = [1, 4, 8];
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

/// What the experiment runs: the confidences and the warm-up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CalibrationSettings {
    /// The Bayesian models' stated confidences (default [`CONFIDENCES`]).
    pub confidences: Vec<f64>,
    /// Forecasts made before this time are warm-up, microseconds (the evaluation's `--skip`).
    pub skip_us: u64,
}

impl Default for CalibrationSettings {
    fn default() -> Self {
        CalibrationSettings {
            confidences: CONFIDENCES.to_vec(),
            skip_us: sprout_sim::metrics::DEFAULT_SKIP_US,
        }
    }
}

/// One model, confidence, link direction and horizon (calibration.csv's row).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CalibrationRow {
    /// The model: `sprout` (the paper's), `sprout-wide`, `sprout-ewma`.
    pub model: String,
    /// The stated confidence (empty for Sprout-EWMA).
    pub confidence: Option<f64>,
    /// The link pair's name.
    pub link: String,
    /// "down" or "up".
    pub direction: String,
    /// Ticks ahead, 1..=8.
    pub horizon: usize,
    /// Forecasts counted.
    pub forecasts: u64,
    /// Forecasts met.
    pub met: u64,
    /// Met over counted, 0..1.
    pub coverage: f64,
    /// Share of the misses with an empty tick in the horizon (empty when none missed).
    pub outage_in_horizon: Option<f64>,
    /// Share of the misses soon after an outage.
    pub after_outage: Option<f64>,
    /// Share of the misses at a rate change.
    pub rate_change: Option<f64>,
    /// Share of the other misses.
    pub steady: Option<f64>,
}

/// A model, confidence and horizon averaged over the link directions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CalibrationAverage {
    /// The model.
    pub model: String,
    /// The stated confidence (none for Sprout-EWMA).
    pub confidence: Option<f64>,
    /// Ticks ahead.
    pub horizon: usize,
    /// Mean of the directions' coverages.
    pub coverage: f64,
    /// The shares of all the directions' misses together, in [`MissClass::ALL`]'s order
    /// (none when nothing missed).
    pub miss_shares: Option<[f64; 4]>,
    /// Directions averaged.
    pub directions: usize,
}

/// Everything the experiment produced (calibration.json).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CalibrationResults {
    /// What ran.
    pub settings: CalibrationSettings,
    /// The link pairs, in order.
    pub links: Vec<String>,
    /// Where they came from.
    pub source: String,
    /// Every model, confidence, direction and horizon.
    pub rows: Vec<CalibrationRow>,
    /// Per model, confidence and horizon, over the directions.
    pub averages: Vec<CalibrationAverage>,
    /// Estimators run.
    pub runs: usize,
    /// Ticks fed to them in all.
    pub ticks: u64,
    /// Wall time, s.
    pub wall_s: f64,
}

impl CalibrationResults {
    /// The average of `model` at `confidence` (none: Sprout-EWMA) and `horizon`.
    pub fn average(
        &self,
        model: Scheme,
        confidence: Option<f64>,
        horizon: usize,
    ) -> Option<&CalibrationAverage> {
        self.averages.iter().find(|a| {
            a.model == model.key() && a.confidence == confidence && a.horizon == horizon
        })
    }
}

/// One run: a model at a confidence on one link direction.
#[derive(Clone, Debug)]
struct Job {
    model: Scheme,
    confidence: Option<f64>,
    config: sprout_core::Config,
    /// Index into the directions.
    direction: usize,
}

/// A link direction: its pair's name, "up" or "down", and its ticks.
struct Direction {
    link: String,
    direction: &'static str,
    ticks: TickCounts,
}

/// Each model's configuration with the run's `--param` changes it uses.
fn configs(params: &[String]) -> Result<Vec<(Scheme, sprout_core::Config)>> {
    MODELS
        .iter()
        .map(|&s| {
            let mut c = s.protocol_config();
            let (used, _) = s.split_params(params);
            sprout_sim::overrides::apply(&mut c, &used).map_err(EvalError::Sim)?;
            Ok((s, c))
        })
        .collect()
}

/// The jobs: every model at every confidence (Sprout-EWMA once) on every direction, models in
/// [`MODELS`]' order, then confidences, then directions.
fn jobs(
    settings: &CalibrationSettings,
    configs: &[(Scheme, sprout_core::Config)],
    directions: usize,
) -> Vec<Job> {
    let mut out = Vec::new();
    for (model, config) in configs {
        let confidences: Vec<Option<f64>> = if model.uses_confidence() {
            settings.confidences.iter().map(|&c| Some(c)).collect()
        } else {
            vec![None]
        };
        for confidence in confidences {
            let mut config = config.clone();
            if let Some(c) = confidence {
                config.confidence = c;
            }
            for direction in 0..directions {
                out.push(Job {
                    model: *model,
                    confidence,
                    config: config.clone(),
                    direction,
                });
            }
        }
    }
    out
}

/// Checks the settings: at least one confidence, each strictly between 0 and 1.
fn check_settings(settings: &CalibrationSettings) -> Result<()> {
    if settings.confidences.is_empty() {
        return Err(EvalError::BadParameter("calibration: no confidence".into()));
    }
    if let Some(c) = settings
        .confidences
        .iter()
        .find(|c| !(**c > 0.0 && **c < 1.0))
    {
        return Err(EvalError::BadParameter(format!(
            "calibration: confidence {c} is not strictly between 0 and 1"
        )));
    }
    Ok(())
}

/// Runs the experiment on the evaluation's `links` with `params` (`--param`) on `threads`
/// threads (`None`: one per core), with a progress bar when `progress`.
pub fn run(
    settings: &CalibrationSettings,
    params: &[String],
    links: &LinkSet,
    threads: Option<usize>,
    progress: bool,
) -> Result<CalibrationResults> {
    check_settings(settings)?;
    let configs = configs(params)?;
    for (s, c) in &configs {
        c.validate()
            .map_err(|e| EvalError::BadParameter(format!("calibration {}: {e}", s.key())))?;
    }
    let tick_us = configs[0].1.model.tick_us.as_micros();
    let directions: Vec<Direction> = links
        .pairs
        .iter()
        .flat_map(|(name, up, down)| {
            [("down", down), ("up", up)].map(|(d, t)| Direction {
                link: name.clone(),
                direction: d,
                ticks: TickCounts::from_trace(t, tick_us),
            })
        })
        .collect();
    let plan = jobs(settings, &configs, directions.len());
    let started = Instant::now();
    let tallies = run_all(settings, &plan, &directions, threads, progress)?;
    let mut rows = Vec::new();
    for (job, tallies) in plan.iter().zip(&tallies) {
        let d = &directions[job.direction];
        rows.extend(tallies.iter().enumerate().map(|(i, t)| row(job, d, i + 1, t)));
    }
    Ok(CalibrationResults {
        settings: settings.clone(),
        links: links.pairs.iter().map(|p| p.0.clone()).collect(),
        source: links.source.clone(),
        averages: average_rows(&rows),
        runs: plan.len(),
        ticks: plan
            .iter()
            .map(|j| directions[j.direction].ticks.counts.len() as u64)
            .sum(),
        rows,
        wall_s: started.elapsed().as_secs_f64(),
    })
}

fn row(job: &Job, d: &Direction, horizon: usize, t: &Tally) -> CalibrationRow {
    let shares = t.shares();
    let share = |i: usize| shares.map(|s| s[i]);
    CalibrationRow {
        model: job.model.key().to_string(),
        confidence: job.confidence,
        link: d.link.clone(),
        direction: d.direction.to_string(),
        horizon,
        forecasts: t.forecasts,
        met: t.met,
        coverage: t.coverage(),
        outage_in_horizon: share(0),
        after_outage: share(1),
        rate_change: share(2),
        steady: share(3),
    }
}

/// Per model, confidence and horizon (in the rows' order), the directions' mean coverage and
/// the shares of their misses together.
fn average_rows(rows: &[CalibrationRow]) -> Vec<CalibrationAverage> {
    let mut out: Vec<CalibrationAverage> = Vec::new();
    let mut misses: Vec<[f64; 4]> = Vec::new();
    for r in rows {
        let i = match out.iter().position(|a| {
            a.model == r.model && a.confidence == r.confidence && a.horizon == r.horizon
        }) {
            Some(i) => i,
            None => {
                out.push(CalibrationAverage {
                    model: r.model.clone(),
                    confidence: r.confidence,
                    horizon: r.horizon,
                    coverage: 0.0,
                    miss_shares: None,
                    directions: 0,
                });
                misses.push([0.0; 4]);
                out.len() - 1
            }
        };
        out[i].coverage += r.coverage;
        out[i].directions += 1;
        let missed = (r.forecasts - r.met) as f64;
        let shares = [r.outage_in_horizon, r.after_outage, r.rate_change, r.steady];
        for (m, s) in misses[i].iter_mut().zip(shares) {
            *m += missed * s.unwrap_or(0.0);
        }
    }
    for (a, m) in out.iter_mut().zip(misses) {
        a.coverage /= a.directions.max(1) as f64;
        let total: f64 = m.iter().sum();
        a.miss_shares = (total > 0.0).then(|| m.map(|x| x / total));
    }
    out
}

/// A job's cost, to start the dearest first: its ticks times what a tick costs its model.
fn cost(job: &Job, directions: &[Direction]) -> f64 {
    let per_tick = match job.model {
        Scheme::SproutWide => 4.0,
        Scheme::Sprout => 2.0,
        _ => 0.1,
    };
    directions[job.direction].ticks.counts.len() as f64 * per_tick
}

/// Runs `plan` in parallel, the costliest first; each job's tallies, in the plan's order.
fn run_all(
    settings: &CalibrationSettings,
    plan: &[Job],
    directions: &[Direction],
    threads: Option<usize>,
    progress: bool,
) -> Result<Vec<Vec<Tally>>> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.unwrap_or(0))
        .build()
        .map_err(EvalError::Threads)?;
    let bar = crate::progress::bar(plan.len() as u64, "", progress);
    let mut order: Vec<usize> = (0..plan.len()).collect();
    order.sort_by(|&a, &b| cost(&plan[b], directions).total_cmp(&cost(&plan[a], directions)));
    let next = AtomicUsize::new(0);
    let done: Vec<Mutex<Vec<Tally>>> = plan.iter().map(|_| Mutex::new(Vec::new())).collect();
    let worker = || {
        while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
            let job = &plan[i];
            let d = &directions[job.direction];
            let tick_us = job.config.model.tick_us.as_micros().max(1);
            let first = usize::try_from(settings.skip_us.div_ceil(tick_us))
                .unwrap_or(usize::MAX)
                .saturating_sub(1);
            let mut est = build(&job.config);
            let t = measure(&mut *est, &d.ticks, first, job.config.model.forecast_ticks);
            bar.inc(1);
            bar.set_message(format!(
                "calibration {} {} {}",
                d.link,
                d.direction,
                job.model.key()
            ));
            *done[i].lock().unwrap_or_else(|e| e.into_inner()) = t;
        }
    };
    pool.scope(|s| {
        for _ in 0..pool.current_num_threads() {
            s.spawn(|_| worker());
        }
    });
    bar.finish_and_clear();
    Ok(done
        .into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
        .collect())
}

/// The experiment as `sprout eval` runs it: nothing (an empty text) unless `experiments`
/// holds it; else at the default confidences with the evaluation's skip and `--param`
/// changes, on `threads` threads with a progress bar when `progress`, its files written into
/// `out` (after report.md) and its table returned for the terminal.
pub fn run_if_asked(
    experiments: &[crate::experiment::Experiment],
    (skip_us, params): (u64, &[String]),
    (threads, progress): (Option<usize>, bool),
    links: &LinkSet,
    out: &std::path::Path,
) -> Result<String> {
    if !experiments.contains(&crate::experiment::Experiment::Calibration) {
        return Ok(String::new());
    }
    let settings = CalibrationSettings {
        skip_us,
        ..CalibrationSettings::default()
    };
    let res = run(&settings, params, links, threads, progress)?;
    crate::report::write_calibration(out, &res)?;
    Ok(crate::report::calibration_terminal_table(&res))
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

    /// A constant link of one opportunity every 2 ms: 10 in every tick.
    fn constant_link() -> LinkSet {
        let opps: Vec<u64> = (1..=20_000).map(|k| 2 * k - 1).collect();
        let t = std::sync::Arc::new(Trace::from_opportunities_ms("c", opps).unwrap());
        LinkSet {
            source: "constant".into(),
            note: None,
            pairs: vec![("constant".into(), t.clone(), t)],
        }
    }

    #[test]
    fn on_a_constant_link_every_forecast_is_met() {
        let links = constant_link();
        assert!(TickCounts::from_trace(&links.pairs[0].1, 20_000)
            .counts()
            .iter()
            .all(|&c| c == 10));
        let settings = CalibrationSettings {
            confidences: vec![0.95],
            skip_us: 10_000_000,
        };
        let res = run(&settings, &[], &links, Some(2), false).unwrap();
        // Three models on two directions, eight horizons each.
        assert_eq!(res.runs, 3 * 2);
        assert_eq!(res.rows.len(), 3 * 2 * 8);
        for r in &res.rows {
            // From the end of tick 499 (10 s) while the horizon's last tick exists.
            assert_eq!(r.forecasts, (2000 - 499 - r.horizon) as u64, "{r:?}");
            // The link delivers exactly 10 a tick. Sprout-EWMA's average of a constant count
            // is that count, and its forecast, rounded down, never exceeds it. Sprout's
            // belief settles on that rate, and its cautious forecast is a lower quantile of
            // the deliveries it expects at it (below their mean, 10 a tick): never above
            // what the link delivers. So all are met.
            assert_eq!(r.coverage, 1.0, "{r:?}");
            assert_eq!(r.outage_in_horizon, None);
        }
        let ewma = res.average(Scheme::SproutEwma, None, 8).unwrap();
        assert_eq!((ewma.coverage, ewma.directions), (1.0, 2));
    }
}
