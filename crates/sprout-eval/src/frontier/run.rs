//! The experiment's runs: every model at every point of its knob on every link pair, in
//! parallel, their rows, averages and verdicts, and the experiment as `sprout eval` runs it.

use std::sync::Arc;
use std::time::Instant;

use sprout_core::params::EstimatorKind;
use sprout_core::time::Duration;
use sprout_link::Trace;
use sprout_sim::sim::{self, SimConfig};

use super::links::{cases, LinkCase, X1};
use super::{
    average_rows, model, verdicts, FrontierModel, FrontierResults, FrontierRow, FrontierSettings,
};
use crate::error::{EvalError, Result};
use crate::traces::LinkSet;

/// One simulation: a model at one point of its knob on one link pair.
struct Job {
    model: &'static FrontierModel,
    value: f64,
    config: sprout_core::Config,
    /// Index into the link cases.
    case: usize,
}

/// Checks the settings: known models, Sprout-EWMA among them, at least one confidence (each
/// strictly between 0 and 1) and one gain (each in (0, 1]).
fn check_settings(settings: &FrontierSettings) -> Result<Vec<&'static FrontierModel>> {
    let bad = |why: String| Err(EvalError::BadParameter(format!("frontier: {why}")));
    let mut models = Vec::new();
    for name in &settings.models {
        match model(name) {
            Some(m) => models.push(m),
            None => return bad(format!("unknown model '{name}'")),
        }
    }
    if !models.iter().any(|m| !m.scheme.uses_confidence()) {
        return bad("no Sprout-EWMA to compare with".into());
    }
    let extra = !settings.scales.is_empty() || settings.synthetic;
    for (confidences, gains) in [
        (&settings.confidences, &settings.gains),
        (&settings.extra_confidences, &settings.extra_gains),
    ]
    .iter()
    .take(if extra { 2 } else { 1 })
    {
        if confidences.is_empty() || gains.is_empty() {
            return bad("no confidence or no gain".into());
        }
        if let Some(c) = confidences.iter().find(|c| !(**c > 0.0 && **c < 1.0)) {
            return bad(format!("confidence {c} is not strictly between 0 and 1"));
        }
        if let Some(g) = gains.iter().find(|g| !(**g > 0.0 && **g <= 1.0)) {
            return bad(format!("gain {g} is not in (0, 1]"));
        }
    }
    if extra && settings.extra_duration_us <= settings.skip_us {
        return bad("the scaled and synthetic links' runs end before the skip".into());
    }
    Ok(models)
}

/// Each model's configuration at each point: the scheme's, the run's `--param` changes it
/// uses, the model's own, then the point's confidence or gain; models, points, links in
/// order (the [`X1`] links at the settings' full grid, the others at the extra grid).
fn jobs(
    settings: &FrontierSettings,
    models: &[&'static FrontierModel],
    params: &[String],
    links: &[LinkCase],
) -> Result<Vec<Job>> {
    let mut out = Vec::new();
    for &m in models {
        let mut base = m.scheme.protocol_config();
        let (used, _) = m.scheme.split_params(params);
        sprout_sim::overrides::apply(&mut base, &used).map_err(EvalError::Sim)?;
        let own: Vec<String> = m.params.iter().map(|p| p.to_string()).collect();
        sprout_sim::overrides::apply(&mut base, &own)
            .map_err(|e| EvalError::BadParameter(format!("frontier model {}: {e}", m.name)))?;
        let (all, extra) = if m.scheme.uses_confidence() {
            (&settings.confidences, &settings.extra_confidences)
        } else {
            (&settings.gains, &settings.extra_gains)
        };
        let mut values = all.clone();
        values.extend(extra.iter().filter(|v| !all.contains(v)));
        for value in values {
            let mut config = base.clone();
            if m.scheme.uses_confidence() {
                config.confidence = value;
            } else {
                config.estimator = EstimatorKind::Ewma { gain: value };
            }
            config
                .validate()
                .map_err(|e| EvalError::BadParameter(format!("frontier {}: {e}", m.name)))?;
            for (case, link) in links.iter().enumerate() {
                let grid = if link.set == X1 { all } else { extra };
                if grid.contains(&value) {
                    out.push(Job {
                        model: m,
                        value,
                        config: config.clone(),
                        case,
                    });
                }
            }
        }
    }
    Ok(out)
}

/// Runs the experiment on the evaluation's `links` with `params` (`--param`) on `threads`
/// threads (`None`: one per core), with a progress bar when `progress`.
pub fn run(
    settings: &FrontierSettings,
    params: &[String],
    links: &LinkSet,
    threads: Option<usize>,
    progress: bool,
) -> Result<FrontierResults> {
    let models = check_settings(settings)?;
    let started = Instant::now();
    let pairs = cases(settings, links)?;
    let plan = jobs(settings, &models, params, &pairs)?;
    // A simulation's cost: the opportunities it replays (a share of them when the run is cut
    // short), the Bayesian models' ticks dearer.
    let dearness = |j: &Job| {
        let c = &pairs[j.case];
        let per_tick = if j.model.scheme.uses_confidence() {
            3.0
        } else {
            1.0
        };
        let whole = sprout_sim::sim::default_duration_us(&c.up, &c.down) as f64;
        let share = c.duration_us.map_or(1.0, |d| (d as f64 / whole).min(1.0));
        (c.up.len() + c.down.len()) as f64 * share * per_tick
    };
    let message = |j: &Job| {
        let c = &pairs[j.case];
        format!("frontier {} {} {} {}", c.set, c.name, j.model.name, j.value)
    };
    let work = |j: &Job| run_one(j, &pairs[j.case], settings.skip_us);
    let outs =
        crate::parallel::run_costliest_first(&plan, threads, progress, (dearness, message), work)?;
    let mut rows = Vec::new();
    for o in outs {
        rows.extend(o?);
    }
    let averages = average_rows(&rows);
    let mut res = FrontierResults {
        settings: settings.clone(),
        links: links.pairs.iter().map(|p| p.0.clone()).collect(),
        sets: super::results::sets_of(&pairs),
        source: links.source.clone(),
        rows,
        averages,
        verdicts: Vec::new(),
        simulations: plan.len(),
        wall_s: 0.0,
    };
    let ewma = models
        .iter()
        .find(|m| !m.scheme.uses_confidence())
        .expect("checked")
        .name;
    let names: Vec<String> = models.iter().map(|m| m.name.to_string()).collect();
    res.verdicts = verdicts(&res.averages, &res.verdict_groups(), &names, ewma);
    res.wall_s = started.elapsed().as_secs_f64();
    Ok(res)
}

/// One simulation, both directions loaded, 20 ms each way, the pair replayed whole or for
/// the case's duration.
fn run_one(j: &Job, link: &LinkCase, skip_us: u64) -> Result<Vec<FrontierRow>> {
    let (name, up, down): (&str, &Arc<Trace>, &Arc<Trace>) = (&link.name, &link.up, &link.down);
    let mut cfg = SimConfig {
        skip: Duration::from_micros(skip_us),
        duration: link.duration_us.map(Duration::from_micros),
        ..SimConfig::default()
    };
    j.model.scheme.configure(&mut cfg);
    cfg.protocol = j.config.clone();
    let out = sim::run(up.clone(), down.clone(), &cfg, None).map_err(|e| EvalError::SimRun {
        run: format!(
            "frontier {} {name} / {} at {}",
            link.set, j.model.name, j.value
        ),
        source: e,
    })?;
    let row = |direction: &str, m: &sprout_sim::metrics::DirectionMetrics| FrontierRow {
        model: j.model.name.to_string(),
        set: link.set.clone(),
        knob: j.model.knob().to_string(),
        value: j.value,
        link: name.to_string(),
        direction: direction.to_string(),
        capacity_kbps: m.capacity_kbps,
        throughput_kbps: m.throughput_kbps,
        utilization: m.utilization,
        self_inflicted_ms: m.self_inflicted_ms,
    };
    Ok(vec![
        row("down", &out.downlink.metrics),
        row("up", &out.uplink.metrics),
    ])
}

/// The experiment as `sprout eval` runs it: nothing (an empty text) unless `experiments`
/// holds it; else at the default settings with the evaluation's skip and `--param` changes,
/// on `threads` threads with a progress bar when `progress`, its files written into `out`
/// (after report.md) and its table and verdicts returned for the terminal.
pub fn run_if_asked(
    experiments: &[crate::experiment::Experiment],
    (skip_us, params): (u64, &[String]),
    (threads, progress): (Option<usize>, bool),
    links: &LinkSet,
    out: &std::path::Path,
) -> Result<String> {
    if !experiments.contains(&crate::experiment::Experiment::Frontier) {
        return Ok(String::new());
    }
    let settings = FrontierSettings {
        skip_us,
        ..FrontierSettings::default()
    };
    let res = run(&settings, params, links, threads, progress)?;
    crate::report::write_frontier(out, &res)?;
    Ok(crate::report::frontier_terminal_table(&res))
}
