//! The `rates` experiment (issue 24): Sprout at today's link rates. The paper's eight link
//! directions scaled x1, x4, x16 and x64 (in memory, with `sprout_link::scale`, the function of
//! `sprout traces scale`) and constant links of 10, 100 and 1,000 Mbit/s, both directions
//! loaded at once with 20 ms each way as in the paper's experiments; Sprout on the paper's
//! model, Sprout on the wide model (`sprout-wide`), Sprout-EWMA, Cubic and BBR; utilization and
//! self-inflicted delay per run, averaged over the eight directions at each scale.
//!
//! A run on the paper's links replays its whole trace pair at every scale (140 s to 1,062 s,
//! as `fig7` does, so that x1 is fig7's runs and the scales compare over the same window),
//! up to a cap of [`DEFAULT_DURATION_US`] (1,100 s, above the longest of them) for longer
//! trace folders; scaled x64 the AT&T LTE pair, the densest, replays 25 million
//! opportunities (32,000 packets/s both ways over 786 s), half the simulator's limit of 50
//! million (`sprout_sim::run_limits`, about 2.4 GB of records). A run on a constant link
//! lasts [`DEFAULT_CONSTANT_DURATION_US`] (120 s): at 1 Gbit/s both ways it replays 167,000
//! packets a second, so 300 s would reach that limit, and a constant link's figures settle
//! within seconds, so the minute measured after the evaluation's skip (60 s by default) is
//! plenty. Not in `all`
//! ([`crate::experiment::Experiment::OPT_IN`]). The files, table and report section are in
//! `crate::report::rates`, the chart in `crate::chart::rates_chart`.

use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use sprout_core::time::Duration;
use sprout_link::Trace;
use sprout_sim::scheme::Scheme;
use sprout_sim::sim::{self, SimConfig};

use crate::error::{EvalError, Result};
use crate::report::Check;
use crate::traces::{LinkSet, Pair};

/// The factors the paper's links are scaled by.
pub const SCALES: [f64; 4] = [1.0, 4.0, 16.0, 64.0];
/// The constant links' rates, Mbit/s (1,500-byte packets: 10 Mbit/s is 833 packets/s).
pub const CONSTANT_MBPS: [f64; 3] = [10.0, 100.0, 1000.0];
/// The schemes compared, in the order tables list them.
pub const SCHEMES: [Scheme; 5] = [
    Scheme::Sprout,
    Scheme::SproutWide,
    Scheme::SproutEwma,
    Scheme::Cubic,
    Scheme::Bbr,
];
/// The longest a run on a scaled link lasts, simulated microseconds (1,100 s: the paper's
/// traces, at most 1,062 s, run whole; see the module's doc).
pub const DEFAULT_DURATION_US: u64 = 1_100_000_000;
/// The length of a run on a constant link, simulated microseconds (120 s).
pub const DEFAULT_CONSTANT_DURATION_US: u64 = 120_000_000;

/// The checks' margins: the wide model's 8-link averages at x1 within this many points of
/// utilization (0.03 = 3 points) of the paper model's...
pub const X1_UTILIZATION_POINTS: f64 = 0.03;
/// ...and within this fraction of its self-inflicted delay (15%).
pub const X1_DELAY_FRACTION: f64 = 0.15;
/// At the high scales the wide model keeps its x1 utilization within this many points.
pub const HIGH_SCALE_UTILIZATION_POINTS: f64 = 0.05;
/// The scales whose wide-model averages are checked against x1's.
pub const HIGH_SCALES: [f64; 2] = [16.0, 64.0];

/// What the experiment runs: the scales, the constant links, and each run's length.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RatesSettings {
    /// Factors the links of the evaluation are scaled by (default [`SCALES`]).
    pub scales: Vec<f64>,
    /// Constant links, Mbit/s each way (default [`CONSTANT_MBPS`]).
    pub constant_mbps: Vec<f64>,
    /// Longest run on the scaled links, simulated microseconds (default
    /// [`DEFAULT_DURATION_US`]); a link pair shorter than this runs its own length.
    pub duration_us: u64,
    /// Length of a run on a constant link, simulated microseconds (default
    /// [`DEFAULT_CONSTANT_DURATION_US`]).
    pub constant_duration_us: u64,
    /// Start of the measured window, microseconds (the evaluation's `--skip`).
    pub skip_us: u64,
}

impl Default for RatesSettings {
    fn default() -> Self {
        RatesSettings {
            scales: SCALES.to_vec(),
            constant_mbps: CONSTANT_MBPS.to_vec(),
            duration_us: DEFAULT_DURATION_US,
            constant_duration_us: DEFAULT_CONSTANT_DURATION_US,
            skip_us: sprout_sim::metrics::DEFAULT_SKIP_US,
        }
    }
}

/// A link of the experiment: one of the evaluation's link pairs scaled, or a constant link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RatesLink {
    /// The evaluation's link pair of this index, its rate times `factor`.
    Scaled {
        /// Index into the evaluation's link pairs.
        pair: usize,
        /// Scale factor.
        factor: f64,
    },
    /// A constant link of this rate both ways, Mbit/s.
    Constant {
        /// Rate each way, Mbit/s.
        mbps: f64,
    },
}

/// One run of the experiment: a link and a scheme.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RatesRun {
    /// The link.
    pub link: RatesLink,
    /// The scheme.
    pub scheme: Scheme,
}

/// The experiment's runs over `pairs` link pairs: every scale of every pair, then every
/// constant link, each with every scheme of [`SCHEMES`].
pub fn runs(settings: &RatesSettings, pairs: usize) -> Vec<RatesRun> {
    let scaled = settings
        .scales
        .iter()
        .flat_map(|&factor| (0..pairs).map(move |pair| RatesLink::Scaled { pair, factor }));
    let constant = settings
        .constant_mbps
        .iter()
        .map(|&mbps| RatesLink::Constant { mbps });
    scaled
        .chain(constant)
        .flat_map(|link| SCHEMES.map(|scheme| RatesRun { link, scheme }))
        .collect()
}

/// One direction of one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RatesRow {
    /// The group the row is averaged in: `x4` for a scaled link, `100 Mbit/s` for a
    /// constant one.
    pub group: String,
    /// Scale factor of a scaled link (empty for a constant one).
    pub scale: Option<f64>,
    /// Rate of a constant link, Mbit/s (empty for a scaled one).
    pub constant_mbps: Option<f64>,
    /// The link pair's name (`constant` for a constant link).
    pub link: String,
    /// "down" or "up".
    pub direction: String,
    /// The scheme's key.
    pub scheme: String,
    /// The link's capacity over the measured window, kbit/s.
    pub capacity_kbps: f64,
    /// Throughput, kbit/s.
    pub throughput_kbps: f64,
    /// Throughput over capacity, 0..1.
    pub utilization: f64,
    /// Self-inflicted delay (the paper's, all packets), ms.
    pub self_inflicted_ms: f64,
    /// Self-inflicted delay of the packets carrying data, ms.
    pub self_inflicted_data_ms: f64,
    /// Length of the measured window, s.
    pub window_s: f64,
}

/// A group's average over its directions (8 for the paper's links, 2 for a constant link).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RatesAverage {
    /// `x4`, `100 Mbit/s`.
    pub group: String,
    /// Scale factor (scaled links).
    pub scale: Option<f64>,
    /// Rate, Mbit/s (constant links).
    pub constant_mbps: Option<f64>,
    /// The scheme's key.
    pub scheme: String,
    /// Mean utilization, 0..1.
    pub utilization: f64,
    /// Mean self-inflicted delay, ms.
    pub self_inflicted_ms: f64,
    /// Mean throughput per direction, kbit/s.
    pub throughput_kbps: f64,
    /// Directions averaged.
    pub directions: usize,
}

/// Everything the experiment produced (rates.json).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RatesResults {
    /// What ran.
    pub settings: RatesSettings,
    /// The link pairs that were scaled, in order.
    pub links: Vec<String>,
    /// Where they came from (a folder, or the synthetic link).
    pub source: String,
    /// Every direction of every run.
    pub rows: Vec<RatesRow>,
    /// Per group and scheme.
    pub averages: Vec<RatesAverage>,
    /// Simulations run.
    pub simulations: usize,
    /// Wall time, s.
    pub wall_s: f64,
}

/// The group name of a link.
fn group(link: &RatesLink) -> String {
    match link {
        RatesLink::Scaled { factor, .. } => format!("x{factor}"),
        RatesLink::Constant { mbps } => format!("{} Mbit/s", crate::report::thousands(*mbps)),
    }
}

impl RatesResults {
    /// The average of `scheme` at scale `factor`, if it ran.
    pub fn at_scale(&self, factor: f64, scheme: Scheme) -> Option<&RatesAverage> {
        self.averages
            .iter()
            .find(|a| a.scale == Some(factor) && a.scheme == scheme.key())
    }

    /// Per group and scheme, the mean of the rows, in the rows' order of groups and
    /// [`SCHEMES`]' order.
    fn average_rows(rows: &[RatesRow]) -> Vec<RatesAverage> {
        let mut groups: Vec<&RatesRow> = Vec::new();
        for r in rows {
            if !groups.iter().any(|g| g.group == r.group) {
                groups.push(r);
            }
        }
        let mut out = Vec::new();
        for g in groups {
            for s in SCHEMES {
                let of: Vec<&RatesRow> = rows
                    .iter()
                    .filter(|r| r.group == g.group && r.scheme == s.key())
                    .collect();
                if of.is_empty() {
                    continue;
                }
                let mean = |f: fn(&RatesRow) -> f64| {
                    of.iter().map(|r| f(r)).sum::<f64>() / of.len() as f64
                };
                out.push(RatesAverage {
                    group: g.group.clone(),
                    scale: g.scale,
                    constant_mbps: g.constant_mbps,
                    scheme: s.key().to_string(),
                    utilization: mean(|r| r.utilization),
                    self_inflicted_ms: mean(|r| r.self_inflicted_ms),
                    throughput_kbps: mean(|r| r.throughput_kbps),
                    directions: of.len(),
                });
            }
        }
        out
    }
}

/// The traces of the experiment's links: each pair scaled by each factor (whole: a run ends at
/// its cap, and a trace cut there would end at its last opportunity instead), and each
/// constant link; indexed as [`RatesLinks::get`] reads them.
struct RatesLinks {
    /// `(factor, pairs)`: the pairs scaled, each `(name, up, down)`.
    scaled: Vec<(f64, Vec<Pair>)>,
    /// `(Mbit/s, trace)`.
    constant: Vec<(f64, Arc<Trace>)>,
}

impl RatesLinks {
    fn build(settings: &RatesSettings, links: &LinkSet) -> Result<RatesLinks> {
        let bad = |why: String| EvalError::BadParameter(format!("rates: {why}"));
        let mut scaled = Vec::new();
        for &factor in &settings.scales {
            let mut pairs = Vec::new();
            for (name, up, down) in &links.pairs {
                let s = |t: &Trace, dir: &str| -> Result<Arc<Trace>> {
                    let name = format!("{name}.{dir}x{factor}");
                    sprout_link::scale::scale(t, factor, name)
                        .map(Arc::new)
                        .map_err(|e| bad(e.to_string()))
                };
                pairs.push((name.clone(), s(up, "up")?, s(down, "down")?));
            }
            scaled.push((factor, pairs));
        }
        let seconds = settings.constant_duration_us as f64 / 1e6;
        let constant = settings
            .constant_mbps
            .iter()
            .map(|&mbps| {
                sprout_link::constant_rate_trace(format!("constant-{mbps}Mbps"), mbps, seconds)
                    .map(|t| (mbps, Arc::new(t)))
                    .map_err(|e| bad(e.to_string()))
            })
            .collect::<Result<_>>()?;
        Ok(RatesLinks { scaled, constant })
    }

    /// The link's name and its two traces (up, down).
    fn get(&self, link: &RatesLink) -> Pair {
        match *link {
            RatesLink::Scaled { pair, factor } => {
                let (_, pairs) = self
                    .scaled
                    .iter()
                    .find(|(f, _)| *f == factor)
                    .expect("every factor of the runs is built");
                pairs[pair].clone()
            }
            RatesLink::Constant { mbps } => {
                let (_, t) = self
                    .constant
                    .iter()
                    .find(|(m, _)| *m == mbps)
                    .expect("every constant link of the runs is built");
                ("constant".to_string(), t.clone(), t.clone())
            }
        }
    }
}

/// Each scheme's Sprout configuration with the run's `--param` changes it uses.
fn configs(params: &[String]) -> Result<Vec<(Scheme, sprout_core::Config)>> {
    SCHEMES
        .iter()
        .map(|&s| {
            let mut c = s.protocol_config();
            let (used, _) = s.split_params(params);
            sprout_sim::overrides::apply(&mut c, &used).map_err(EvalError::Sim)?;
            Ok((s, c))
        })
        .collect()
}

/// Checks the settings: at least one scale or constant link, every factor and rate above 0,
/// and a measured window of at least 5 s.
fn check_settings(settings: &RatesSettings) -> Result<()> {
    let bad = |why: String| Err(EvalError::BadParameter(format!("rates: {why}")));
    if settings.scales.is_empty() && settings.constant_mbps.is_empty() {
        return bad("no scale and no constant link".into());
    }
    let positive = |x: &f64| x.is_finite() && *x > 0.0;
    if !settings.scales.iter().all(positive) || !settings.constant_mbps.iter().all(positive) {
        return bad("scale factors and constant rates must be above 0".into());
    }
    for d in [settings.duration_us, settings.constant_duration_us] {
        if d.saturating_sub(settings.skip_us) < sprout_sim::run_limits::MIN_MEASURED_WINDOW_US {
            return bad(format!(
                "runs of {} s measured from {} s leave less than 5 s",
                d as f64 / 1e6,
                settings.skip_us as f64 / 1e6
            ));
        }
    }
    Ok(())
}

/// Runs the experiment on the evaluation's `links` with `params` (`--param`) on `threads`
/// threads (`None`: one per core), with a progress bar when `progress`.
pub fn run(
    settings: &RatesSettings,
    params: &[String],
    links: &LinkSet,
    threads: Option<usize>,
    progress: bool,
) -> Result<RatesResults> {
    check_settings(settings)?;
    let configs = configs(params)?;
    let built = RatesLinks::build(settings, links)?;
    let plan = runs(settings, links.pairs.len());
    let started = Instant::now();
    let outs = run_all(settings, &plan, &built, &configs, threads, progress)?;
    let rows: Vec<RatesRow> = outs.into_iter().flatten().collect();
    Ok(RatesResults {
        settings: settings.clone(),
        links: links.pairs.iter().map(|p| p.0.clone()).collect(),
        source: links.source.clone(),
        averages: RatesResults::average_rows(&rows),
        rows,
        simulations: plan.len(),
        wall_s: started.elapsed().as_secs_f64(),
    })
}

/// The experiment as `sprout eval` runs it: nothing (an empty text) unless `experiments`
/// holds it; else at the default settings with the evaluation's skip and `--param` changes,
/// on `threads` threads with a progress bar when `progress`, its files written into `out`
/// (after report.md) and its table and checks returned for the terminal.
pub fn run_if_asked(
    experiments: &[crate::experiment::Experiment],
    (skip_us, params): (u64, &[String]),
    (threads, progress): (Option<usize>, bool),
    links: &LinkSet,
    out: &std::path::Path,
) -> Result<String> {
    if !experiments.contains(&crate::experiment::Experiment::Rates) {
        return Ok(String::new());
    }
    let settings = RatesSettings {
        skip_us,
        ..RatesSettings::default()
    };
    let res = run(&settings, params, links, threads, progress)?;
    crate::report::write_rates(out, &res)?;
    Ok(crate::report::rates_terminal_table(&res))
}

/// A run's cost in opportunities replayed (both directions), to start the dearest first.
fn cost(up: &Trace, down: &Trace, duration_us: u64) -> f64 {
    let per_s = |t: &Trace| t.len() as f64 / (t.period_ms().max(1) as f64 / 1e3);
    (per_s(up) + per_s(down)) * duration_us as f64 / 1e6
}

/// Runs `plan` in parallel, the costliest first; each run's two rows, in the plan's order.
fn run_all(
    settings: &RatesSettings,
    plan: &[RatesRun],
    built: &RatesLinks,
    configs: &[(Scheme, sprout_core::Config)],
    threads: Option<usize>,
    progress: bool,
) -> Result<Vec<Vec<RatesRow>>> {
    let jobs: Vec<(String, Arc<Trace>, Arc<Trace>, u64)> = plan
        .iter()
        .map(|r| {
            let (name, up, down) = built.get(&r.link);
            let cap = match r.link {
                RatesLink::Scaled { .. } => settings.duration_us,
                RatesLink::Constant { .. } => settings.constant_duration_us,
            };
            let d = cap.min(sim::default_duration_us(&up, &down));
            (name, up, down, d)
        })
        .collect();
    let indexed: Vec<usize> = (0..plan.len()).collect();
    let dearness = |&i: &usize| cost(&jobs[i].1, &jobs[i].2, jobs[i].3);
    let message = |&i: &usize| {
        let r = &plan[i];
        format!("rates {} {} {}", group(&r.link), jobs[i].0, r.scheme.key())
    };
    let work = |&i: &usize| {
        let (name, up, down, duration_us) = &jobs[i];
        let r = &plan[i];
        let config = &configs
            .iter()
            .find(|(s, _)| *s == r.scheme)
            .expect("a config per scheme")
            .1;
        run_one(r, name, (up, down), config, settings.skip_us, *duration_us)
    };
    crate::parallel::run_costliest_first(&indexed, threads, progress, (dearness, message), work)?
        .into_iter()
        .collect()
}

/// One simulation: both directions loaded, 20 ms each way (the simulator's default link).
fn run_one(
    r: &RatesRun,
    name: &str,
    (up, down): (&Arc<Trace>, &Arc<Trace>),
    config: &sprout_core::Config,
    skip_us: u64,
    duration_us: u64,
) -> Result<Vec<RatesRow>> {
    let mut cfg = SimConfig {
        skip: Duration::from_micros(skip_us),
        duration: Some(Duration::from_micros(duration_us)),
        ..SimConfig::default()
    };
    r.scheme.configure(&mut cfg);
    if r.scheme.is_sprout() {
        cfg.protocol = config.clone();
    }
    let out = sim::run(up.clone(), down.clone(), &cfg, None).map_err(|e| EvalError::SimRun {
        run: format!("rates {} {name} / {}", group(&r.link), r.scheme.key()),
        source: e,
    })?;
    let row = |direction: &str, m: &sprout_sim::metrics::DirectionMetrics| RatesRow {
        group: group(&r.link),
        scale: match r.link {
            RatesLink::Scaled { factor, .. } => Some(factor),
            RatesLink::Constant { .. } => None,
        },
        constant_mbps: match r.link {
            RatesLink::Constant { mbps } => Some(mbps),
            RatesLink::Scaled { .. } => None,
        },
        link: name.to_string(),
        direction: direction.to_string(),
        scheme: r.scheme.key().to_string(),
        capacity_kbps: m.capacity_kbps,
        throughput_kbps: m.throughput_kbps,
        utilization: m.utilization,
        self_inflicted_ms: m.self_inflicted_ms,
        self_inflicted_data_ms: m.self_inflicted_data_ms,
        window_s: m.window_s,
    };
    Ok(vec![
        row("down", &out.downlink.metrics),
        row("up", &out.uplink.metrics),
    ])
}

/// Why the checks do not apply to this run's links (they are about the paper's four link
/// pairs), or `None` when they are exactly those.
fn not_the_paper_links(res: &RatesResults) -> Option<String> {
    let mut have: Vec<&str> = res.links.iter().map(String::as_str).collect();
    have.sort_unstable();
    let mut paper: Vec<&str> = crate::paper::TRACE_LINKS.iter().map(|(t, _)| *t).collect();
    paper.sort_unstable();
    (have != paper).then(|| format!("this run's links are {}", res.links.join(", ")))
}

/// The checks on the 8-link averages: the wide model at x1 within
/// [`X1_UTILIZATION_POINTS`] and [`X1_DELAY_FRACTION`] of the paper model's; at each of
/// [`HIGH_SCALES`] its utilization at least its x1 figure minus
/// [`HIGH_SCALE_UTILIZATION_POINTS`] and its delay no more than at x1, the paper model's
/// plateau beside. A check whose scales did not run is left out.
pub fn checks(res: &RatesResults) -> Vec<Check> {
    let na = not_the_paper_links(res);
    let mut out = Vec::new();
    let fig = |a: &RatesAverage| {
        format!(
            "{:.1}% / {:.0} ms ({:.1} Mbit/s a direction)",
            100.0 * a.utilization,
            a.self_inflicted_ms,
            a.throughput_kbps / 1e3
        )
    };
    let (Some(w1), Some(p1)) = (
        res.at_scale(1.0, Scheme::SproutWide),
        res.at_scale(1.0, Scheme::Sprout),
    ) else {
        return out;
    };
    let du = (w1.utilization - p1.utilization).abs();
    let dd = (w1.self_inflicted_ms - p1.self_inflicted_ms).abs();
    out.push(Check {
        topic: "wide model at x1",
        text: format!(
            "On the 8 link directions (x1) the wide model's averages are within {:.0} points of \
             utilization and {:.0}% of self-inflicted delay of the paper model's: wide {}, \
             paper {} ({:.1} points, {:.1}%)",
            100.0 * X1_UTILIZATION_POINTS,
            100.0 * X1_DELAY_FRACTION,
            fig(w1),
            fig(p1),
            100.0 * du,
            100.0 * dd / p1.self_inflicted_ms.max(f64::MIN_POSITIVE)
        ),
        ok: du <= X1_UTILIZATION_POINTS + 1e-12
            && dd <= X1_DELAY_FRACTION * p1.self_inflicted_ms + 1e-9,
        not_applicable: na.clone(),
    });
    for factor in HIGH_SCALES {
        let Some(w) = res.at_scale(factor, Scheme::SproutWide) else {
            continue;
        };
        let paper = res
            .at_scale(factor, Scheme::Sprout)
            .map_or(String::new(), |p| format!("; the paper model: {}", fig(p)));
        out.push(Check {
            topic: "wide model scaled up",
            text: format!(
                "Scaled x{factor}, the wide model's 8-link average utilization is at least its \
                 x1 figure minus {:.0} points, with self-inflicted delay no more than at x1: \
                 {} against {:.1}% / {:.0} ms at x1{paper}",
                100.0 * HIGH_SCALE_UTILIZATION_POINTS,
                fig(w),
                100.0 * w1.utilization,
                w1.self_inflicted_ms
            ),
            ok: w.utilization >= w1.utilization - HIGH_SCALE_UTILIZATION_POINTS - 1e-12
                && w.self_inflicted_ms <= w1.self_inflicted_ms + 1e-9,
            not_applicable: na.clone(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_runs_every_scale_of_every_pair_and_every_constant_link_with_five_schemes() {
        let plan = runs(&RatesSettings::default(), 4);
        assert_eq!(plan.len(), (4 * 4 + 3) * 5);
        let sprouts = plan
            .iter()
            .filter(|r| r.scheme == Scheme::SproutWide)
            .count();
        assert_eq!(sprouts, 19);
        for factor in SCALES {
            for pair in 0..4 {
                let of: Vec<Scheme> = plan
                    .iter()
                    .filter(|r| r.link == RatesLink::Scaled { pair, factor })
                    .map(|r| r.scheme)
                    .collect();
                assert_eq!(of, SCHEMES.to_vec(), "x{factor} pair {pair}");
            }
        }
        for mbps in CONSTANT_MBPS {
            let n = plan
                .iter()
                .filter(|r| r.link == RatesLink::Constant { mbps })
                .count();
            assert_eq!(n, 5, "{mbps}");
        }
        // Sprout on the paper's model and on the wide one, no Sprout-EWMA model variant.
        assert_eq!(
            SCHEMES.map(|s| s.key()),
            ["sprout", "sprout-wide", "sprout-ewma", "cubic", "bbr"]
        );
        let few = RatesSettings {
            scales: vec![2.0],
            constant_mbps: vec![],
            ..RatesSettings::default()
        };
        assert_eq!(runs(&few, 1).len(), 5);
    }

    #[test]
    fn settings_that_cannot_run_are_refused() {
        let ok = RatesSettings::default();
        assert!(check_settings(&ok).is_ok());
        for bad in [
            RatesSettings {
                scales: vec![],
                constant_mbps: vec![],
                ..ok.clone()
            },
            RatesSettings {
                scales: vec![0.0],
                ..ok.clone()
            },
            RatesSettings {
                duration_us: 64_000_000,
                ..ok.clone()
            },
            RatesSettings {
                constant_duration_us: 64_000_000,
                ..ok.clone()
            },
        ] {
            assert!(check_settings(&bad).is_err(), "{bad:?}");
        }
    }

    /// Results with the wide and paper models' averages at x1 and at the high scales.
    fn results(x1: (f64, f64, f64, f64), high: (f64, f64)) -> RatesResults {
        let avg = |scale: f64, scheme: Scheme, u: f64, d: f64| RatesAverage {
            group: format!("x{scale}"),
            scale: Some(scale),
            constant_mbps: None,
            scheme: scheme.key().to_string(),
            utilization: u,
            self_inflicted_ms: d,
            throughput_kbps: 1000.0,
            directions: 8,
        };
        let mut averages = vec![
            avg(1.0, Scheme::SproutWide, x1.0, x1.1),
            avg(1.0, Scheme::Sprout, x1.2, x1.3),
        ];
        for f in HIGH_SCALES {
            averages.push(avg(f, Scheme::SproutWide, high.0, high.1));
            averages.push(avg(f, Scheme::Sprout, 0.1, 40.0));
        }
        RatesResults {
            settings: RatesSettings::default(),
            links: crate::paper::TRACE_LINKS
                .iter()
                .map(|(t, _)| t.to_string())
                .collect(),
            source: "t".into(),
            rows: vec![],
            averages,
            simulations: 0,
            wall_s: 0.0,
        }
    }

    fn oks(res: &RatesResults) -> Vec<bool> {
        checks(res).iter().map(|c| c.ok).collect()
    }

    #[test]
    fn the_checks_pass_at_their_edges_and_fail_beyond() {
        // x1: 3 points and 15% of 400 ms (60 ms) exactly pass.
        let edge = results((0.47, 340.0, 0.50, 400.0), (0.42, 340.0));
        assert_eq!(oks(&edge), [true, true, true]);
        assert!(checks(&edge).iter().all(|c| c.not_applicable.is_none()));
        assert!(!oks(&results((0.469, 340.0, 0.50, 400.0), (0.42, 300.0)))[0]);
        assert!(oks(&results((0.53, 460.0, 0.50, 400.0), (0.48, 300.0)))[0]);
        assert!(!oks(&results((0.50, 461.0, 0.50, 400.0), (0.45, 300.0)))[0]);
        // Scaled up: x1 minus 5 points and x1's delay exactly pass; a little worse fails.
        let w1 = (0.47, 340.0, 0.47, 340.0);
        assert_eq!(oks(&results(w1, (0.42, 340.0))), [true, true, true]);
        assert_eq!(oks(&results(w1, (0.419, 300.0))), [true, false, false]);
        assert_eq!(oks(&results(w1, (0.60, 341.0))), [true, false, false]);
        // The paper model's plateau is written beside.
        let c = checks(&edge);
        assert!(
            c[1].text.contains("the paper model: 10.0% / 40 ms"),
            "{}",
            c[1].text
        );
        // Other links: the checks are computed but do not apply.
        let mut other = edge.clone();
        other.links = vec!["synthetic".into()];
        assert!(checks(&other).iter().all(|c| c.not_applicable.is_some()));
        // No x1 run of both models: no check.
        let mut none = edge;
        none.averages.retain(|a| a.scale != Some(1.0));
        assert!(checks(&none).is_empty());
    }
}
