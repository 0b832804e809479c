//! The experiment's runs: every model at every confidence on every link direction, in
//! parallel, their rows and averages, and the experiment as `sprout eval` runs it.

use std::time::Instant;

use serde::{Deserialize, Serialize};
use sprout_core::estimator::build;
use sprout_sim::scheme::Scheme;

use super::ticks::{measure, Tally, TickCounts};
use crate::error::{EvalError, Result};
use crate::traces::LinkSet;

/// The stated confidences of the Bayesian models.
pub const CONFIDENCES: [f64; 7] = [0.5, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98];
/// The models, in the order tables list them: the paper's, the wide one, Sprout-EWMA.
pub const MODELS: [Scheme; 3] = [Scheme::Sprout, Scheme::SproutWide, Scheme::SproutEwma];
/// The horizons the report's table shows, ticks.
pub const REPORT_HORIZONS: [usize; 3] = [1, 4, 8];
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
    /// The shares of all the directions' misses together, in [`super::MissClass::ALL`]'s order
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
        self.averages
            .iter()
            .find(|a| a.model == model.key() && a.confidence == confidence && a.horizon == horizon)
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
        rows.extend(
            tallies
                .iter()
                .enumerate()
                .map(|(i, t)| row(job, d, i + 1, t)),
        );
    }
    Ok(CalibrationResults {
        settings: settings.clone(),
        links: links.pairs.iter().map(|p| p.0.clone()).collect(),
        source: links.source.clone(),
        averages: average_rows(&rows),
        runs: plan.len(),
        ticks: plan
            .iter()
            .map(|j| directions[j.direction].ticks.counts().len() as u64)
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
    directions[job.direction].ticks.counts().len() as f64 * per_tick
}

/// Runs `plan` in parallel, the costliest first; each job's tallies, in the plan's order.
fn run_all(
    settings: &CalibrationSettings,
    plan: &[Job],
    directions: &[Direction],
    threads: Option<usize>,
    progress: bool,
) -> Result<Vec<Vec<Tally>>> {
    let dearness = |job: &Job| cost(job, directions);
    let message = |job: &Job| {
        let d = &directions[job.direction];
        format!("calibration {} {} {}", d.link, d.direction, job.model.key())
    };
    let work = |job: &Job| {
        let d = &directions[job.direction];
        let tick_us = job.config.model.tick_us.as_micros().max(1);
        let first = usize::try_from(settings.skip_us.div_ceil(tick_us))
            .unwrap_or(usize::MAX)
            .saturating_sub(1);
        let mut est = build(&job.config);
        measure(&mut *est, &d.ticks, first, job.config.model.forecast_ticks)
    };
    crate::parallel::run_costliest_first(plan, threads, progress, (dearness, message), work)
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
    use sprout_link::Trace;

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
