//! The evaluation harness: the paper's experiments over every link pair and scheme, in parallel
//! over the cores, with the paper's published values beside ours: results.csv, results.json,
//! one table (CSV) and chart (SVG) per experiment, and report.md.
//!
//! The experiments, their rows and the links they run on are defined in [`crate::experiment`],
//! [`crate::results`] and [`crate::traces`] (re-exported here); this module runs them and hands
//! the results to [`crate::report`].

use crate::output_dir::OutputDir;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use sprout_core::direction::Load;
use sprout_core::time::Duration;
use sprout_link::Trace;
use sprout_sim::distributions::{self, InterArrival};
use sprout_sim::metrics::{self, DirectionMetrics, TimeSeriesPoint, Window};
use sprout_sim::sim::{self, DirectionRun, SimConfig};

pub use crate::error::EvalError;
use crate::error::Result;
pub use crate::experiment::{
    Experiment, CONFIDENCES, CONFIDENCE_LINK, DISTRIBUTIONS_LINK, FIGURE1_LINK, LOSSES, LOSS_LINK,
    MODEL_VARIANTS, SEEDS, SENSITIVITY_LINKS,
};
use crate::interactive::{InteractiveResults, InteractiveRow, InteractiveSettings, RunOf, Source};
use crate::report;
pub use crate::results::{EvalResults, ResultRow, RunLabel, SchemeAverage};
pub use crate::traces::{
    fetch_traces, import_traces, load_links, load_trace, LinkSet, Pair, DEFAULT_TRACE_DIRS,
};
pub use sprout_sim::scheme::Scheme;

/// Options of an evaluation run.
#[derive(Clone, Debug)]
pub struct EvalOptions {
    /// Folder of traces; `None` = the first of [`DEFAULT_TRACE_DIRS`] that holds traces, else
    /// a synthetic link.
    pub traces: Option<PathBuf>,
    /// Schemes of the `fig7` (and so `fig8`, `summary`) and `sensitivity` experiments.
    pub schemes: Vec<Scheme>,
    /// Experiments to run.
    pub experiments: Vec<Experiment>,
    /// Output folder.
    pub out: PathBuf,
    /// Start of the measured window, in microseconds.
    pub skip_us: u64,
    /// Parallel jobs; `None` = one per core.
    pub jobs: Option<usize>,
    /// Show a progress bar.
    pub progress: bool,
    /// Changes to the Sprout configuration of both Sprout schemes, `KEY=VALUE` as
    /// [`sprout_sim::overrides::apply`] takes them; empty = the paper's defaults.
    pub protocol_params: Vec<String>,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            traces: None,
            schemes: Scheme::ALL.to_vec(),
            experiments: vec![Experiment::Fig7],
            out: PathBuf::from("results"),
            skip_us: metrics::DEFAULT_SKIP_US,
            jobs: None,
            progress: false,
            protocol_params: Vec::new(),
        }
    }
}

/// One simulation (or, for the omniscient sender, one computation) to run.
struct Job {
    experiment: Experiment,
    link: String,
    up: Arc<Trace>,
    down: Arc<Trace>,
    scheme: Scheme,
    confidence: Option<f64>,
    loss: f64,
    seed: u64,
    cfg: SimConfig,
    /// Keep the downlink's Figure-1 time series.
    figure1: bool,
    /// The model variant (the `model` experiment), empty otherwise.
    variant: &'static str,
    /// The `interactive` experiment's run: what it offers in which direction.
    interactive: Option<InteractiveJob>,
}

/// What a run of the `interactive` experiment offers, and the direction it loads.
struct InteractiveJob {
    source: Source,
    rate_kbps: Option<f64>,
    /// "down" or "up" (the direction `cfg.load` loads).
    direction: &'static str,
}

/// What every job of a run shares: the measured window's start and the two Sprout schemes'
/// configurations, with the run's `--param` changes applied once.
struct Plan {
    skip_us: u64,
    sprout: sprout_core::Config,
    ewma: sprout_core::Config,
    /// `sprout-wide`'s (the wide model), after the run's changes.
    wide: sprout_core::Config,
    /// Sprout's configuration under each of [`MODEL_VARIANTS`], after the run's changes.
    variants: Vec<(&'static str, sprout_core::Config)>,
}

impl Plan {
    fn new(opts: &EvalOptions) -> Result<Plan> {
        // Each scheme takes the changes it uses (Sprout-EWMA has no Bayesian model);
        // `EvalResults::params_phrase` says which took what.
        let changed = |scheme: Scheme| -> Result<sprout_core::Config> {
            let mut c = scheme.protocol_config();
            let (used, _) = scheme.split_params(&opts.protocol_params);
            sprout_sim::overrides::apply(&mut c, &used).map_err(EvalError::Sim)?;
            Ok(c)
        };
        let sprout = changed(Scheme::Sprout)?;
        let variants = MODEL_VARIANTS
            .iter()
            .map(|(name, _, params)| {
                let mut c = sprout.clone();
                let params: Vec<String> = params.iter().map(|p| p.to_string()).collect();
                sprout_sim::overrides::apply(&mut c, &params)
                    .map_err(|e| EvalError::BadParameter(format!("model variant {name}: {e}")))?;
                Ok((*name, c))
            })
            .collect::<Result<_>>()?;
        Ok(Plan {
            skip_us: opts.skip_us,
            sprout,
            ewma: changed(Scheme::SproutEwma)?,
            wide: changed(Scheme::SproutWide)?,
            variants,
        })
    }
}

fn job(
    experiment: Experiment,
    pair: &Pair,
    scheme: Scheme,
    plan: &Plan,
    confidence: Option<f64>,
    loss: f64,
    seed: u64,
) -> Job {
    let mut cfg = SimConfig {
        skip: Duration::from_micros(plan.skip_us),
        seed,
        ..SimConfig::default()
    };
    scheme.configure(&mut cfg);
    // A scheme that cannot run a bulk sender (gcc) runs its own application; `direct` has
    // none and is refused by the simulator.
    if let Some(app) = scheme.natural_app() {
        cfg.app = app;
    }
    match scheme {
        Scheme::Sprout => cfg.protocol = plan.sprout.clone(),
        Scheme::SproutEwma => cfg.protocol = plan.ewma.clone(),
        Scheme::SproutWide => cfg.protocol = plan.wide.clone(),
        _ => {}
    }
    let confidence = if scheme.is_sprout() {
        Some(confidence.unwrap_or(cfg.protocol.confidence))
    } else {
        None
    };
    if let Some(c) = confidence {
        cfg.protocol.confidence = c;
    }
    cfg.link.loss = loss;
    Job {
        experiment,
        link: pair.0.clone(),
        up: pair.1.clone(),
        down: pair.2.clone(),
        scheme,
        confidence,
        loss,
        seed,
        figure1: experiment == Experiment::Fig7
            && scheme == Scheme::Sprout
            && pair.0 == FIGURE1_LINK,
        cfg,
        variant: "",
        interactive: None,
    }
}

/// The `interactive` experiment's jobs: on each link direction loaded alone, every source,
/// offered rate and scheme of [`crate::interactive::runs`], at most `settings.duration_us`
/// of simulated time each.
fn interactive_jobs(settings: &InteractiveSettings, plan: &Plan, links: &LinkSet) -> Vec<Job> {
    let mut jobs = Vec::new();
    for pair in &links.pairs {
        let whole = sim::default_duration_us(&pair.1, &pair.2);
        for (load, direction) in [(Load::Down, "down"), (Load::Up, "up")] {
            for (source, rate_kbps, scheme) in crate::interactive::runs(&settings.rates_kbps) {
                let mut j = job(Experiment::Interactive, pair, scheme, plan, None, 0.0, 0);
                j.cfg.app = source.app(rate_kbps.unwrap_or(0.0));
                j.cfg.load = load;
                j.cfg.duration = settings
                    .duration_us
                    .map(|d| Duration::from_micros(d.min(whole)));
                j.interactive = Some(InteractiveJob {
                    source,
                    rate_kbps,
                    direction,
                });
                jobs.push(j);
            }
        }
    }
    jobs
}

fn build_jobs(
    opts: &EvalOptions,
    settings: &InteractiveSettings,
    plan: &Plan,
    links: &LinkSet,
) -> Vec<Job> {
    let mut jobs = Vec::new();
    let want = |e: Experiment| opts.experiments.contains(&e);
    if want(Experiment::Fig7) || want(Experiment::Fig8) || want(Experiment::Summary) {
        for pair in &links.pairs {
            for &s in &opts.schemes {
                jobs.push(job(Experiment::Fig7, pair, s, plan, None, 0.0, 0));
            }
        }
    }
    if want(Experiment::Confidence) {
        let pair = links.named(CONFIDENCE_LINK);
        for c in CONFIDENCES {
            jobs.push(job(
                Experiment::Confidence,
                pair,
                Scheme::Sprout,
                plan,
                Some(c),
                0.0,
                0,
            ));
        }
        jobs.push(job(
            Experiment::Confidence,
            pair,
            Scheme::SproutEwma,
            plan,
            None,
            0.0,
            0,
        ));
    }
    if want(Experiment::Loss) {
        let pair = links.named(LOSS_LINK);
        for l in LOSSES {
            jobs.push(job(
                Experiment::Loss,
                pair,
                Scheme::Sprout,
                plan,
                None,
                l,
                0,
            ));
        }
    }
    if want(Experiment::Distributions) {
        let (name, up, down) = links.named(DISTRIBUTIONS_LINK);
        for (k, kind) in InterArrival::ALL.iter().enumerate() {
            let link = format!("{name}~{}", kind.name());
            let pair: Pair = (
                link.clone(),
                Arc::new(distributions::like(
                    up,
                    *kind,
                    100 + 2 * k as u64,
                    format!("{link}.up"),
                )),
                Arc::new(distributions::like(
                    down,
                    *kind,
                    101 + 2 * k as u64,
                    format!("{link}.down"),
                )),
            );
            for s in Scheme::ALL {
                jobs.push(job(Experiment::Distributions, &pair, s, plan, None, 0.0, 0));
            }
        }
    }
    if want(Experiment::Model) {
        for pair in &links.pairs {
            for (name, config) in &plan.variants {
                let mut j = job(Experiment::Model, pair, Scheme::Sprout, plan, None, 0.0, 0);
                j.cfg.protocol = config.clone();
                j.variant = name;
                jobs.push(j);
            }
        }
    }
    if want(Experiment::Sensitivity) {
        let mut names: Vec<&str> = SENSITIVITY_LINKS
            .iter()
            .filter(|n| links.pairs.iter().any(|p| p.0 == **n))
            .copied()
            .collect();
        if names.is_empty() {
            names.push(links.pairs[0].0.as_str());
        }
        for name in names {
            let pair = links.named(name);
            for &s in opts.schemes.iter().filter(|s| s.is_simulated()) {
                for seed in SEEDS {
                    jobs.push(job(Experiment::Sensitivity, pair, s, plan, None, 0.0, seed));
                }
            }
        }
    }
    if want(Experiment::Interactive) {
        jobs.extend(interactive_jobs(settings, plan, links));
    }
    jobs
}

/// The omniscient sender's metrics over a direction: every opportunity used, no queueing.
fn omniscient_metrics(trace: &Arc<Trace>, cfg: &SimConfig, duration: Duration) -> DirectionMetrics {
    let (_, _, mut m) = sim::measure(trace, &[], cfg, duration);
    m.throughput_kbps = m.capacity_kbps;
    m.goodput_kbps = m.capacity_kbps;
    m.utilization = 1.0;
    m.p95_delay_ms = m.omniscient_p95_ms;
    m.p95_delay_data_ms = m.omniscient_p95_ms;
    m.self_inflicted_ms = 0.0;
    m.self_inflicted_data_ms = 0.0;
    m
}

/// What one job produced: its two rows (none for the `interactive` experiment, which has its
/// own) and, maybe, the Figure-1 series.
struct JobOut {
    rows: Vec<ResultRow>,
    figure1: Option<Vec<TimeSeriesPoint>>,
    interactive: Option<InteractiveRow>,
}

/// Runs a job of the `interactive` experiment: its row, from the loaded direction.
fn run_interactive_job(j: &Job, ij: &InteractiveJob) -> Result<JobOut> {
    let out =
        sim::run(j.up.clone(), j.down.clone(), &j.cfg, None).map_err(|e| EvalError::SimRun {
            run: format!(
                "interactive {} {} / {} {} / {}",
                j.link,
                ij.direction,
                ij.source.key(),
                ij.rate_kbps
                    .map_or(String::new(), |r| format!("{r} kbit/s")),
                j.scheme.key()
            ),
            source: e,
        })?;
    let run = if ij.direction == "down" {
        &out.downlink
    } else {
        &out.uplink
    };
    // A loaded direction of an application source always has its figures; none would be
    // a run that offered nothing, whose every figure is NaN.
    let app = run
        .app
        .clone()
        .unwrap_or_else(|| sprout_sim::app_metrics::compute(&[], run.window));
    let label = RunOf {
        link: &j.link,
        direction: ij.direction,
        source: ij.source,
        rate_kbps: ij.rate_kbps,
        scheme: j.scheme,
    };
    Ok(JobOut {
        rows: Vec::new(),
        figure1: None,
        interactive: Some(InteractiveRow::new(&label, &run.metrics, &app)),
    })
}

/// What a simulation (or the omniscient sender's computation) gave: both directions'
/// metrics and, when asked for, the downlink's Figure-1 series.
struct Simulated {
    down: DirectionMetrics,
    up: DirectionMetrics,
    figure1: Option<Vec<TimeSeriesPoint>>,
}

/// Runs a job that is not of the `interactive` experiment; `figure1`: keep the downlink's
/// Figure-1 series.
fn simulate(j: &Job, figure1: bool) -> Result<Simulated> {
    if j.scheme.is_simulated() {
        let out = sim::run(j.up.clone(), j.down.clone(), &j.cfg, None).map_err(|e| {
            EvalError::SimRun {
                run: format!("{} / {}", j.link, j.scheme.key()),
                source: e,
            }
        })?;
        Ok(Simulated {
            figure1: figure1.then(|| figure1_series(&out.downlink)),
            down: out.downlink.metrics,
            up: out.uplink.metrics,
        })
    } else {
        let duration = Duration::from_micros(sim::default_duration_us(&j.up, &j.down));
        Ok(Simulated {
            down: omniscient_metrics(&j.down, &j.cfg, duration),
            up: omniscient_metrics(&j.up, &j.cfg, duration),
            figure1: None,
        })
    }
}

/// A job's output from its simulation's (which it may share with other jobs).
fn job_out(j: &Job, s: &Simulated) -> JobOut {
    JobOut {
        rows: vec![row(j, "down", &s.down), row(j, "up", &s.up)],
        figure1: if j.figure1 { s.figure1.clone() } else { None },
        interactive: None,
    }
}

fn row(j: &Job, direction: &str, m: &DirectionMetrics) -> ResultRow {
    let mut row = ResultRow::new(
        &RunLabel {
            experiment: j.experiment.key(),
            link: &j.link,
            scheme: j.scheme,
            confidence: j.confidence,
            loss: j.loss,
            seed: j.seed,
            queue: &j.cfg.link.queue,
            with_paper: j.experiment == Experiment::Fig7,
        },
        direction,
        m,
    );
    row.variant = j.variant.to_string();
    row
}

/// The Figure-1 time series of a direction run, in 500 ms bins over the whole run.
pub fn figure1_series(run: &DirectionRun) -> Vec<TimeSeriesPoint> {
    metrics::time_series(
        &run.arrivals,
        &run.opportunities_us,
        1500,
        Window::new(sprout_core::time::Instant::ZERO, run.window.end),
        Duration::from_millis(500),
    )
}

/// Runs the evaluation and writes its outputs; returns a short summary for the terminal.
/// The `interactive` experiment, if asked for, runs at its defaults
/// ([`InteractiveSettings::default`]).
pub fn run(opts: &EvalOptions) -> Result<String> {
    run_with(opts, &InteractiveSettings::default())
}

/// [`run`], the `interactive` experiment at `settings` (its offered rates, each run's
/// simulated time).
pub fn run_with(opts: &EvalOptions, settings: &InteractiveSettings) -> Result<String> {
    if opts.schemes.is_empty() {
        return Err(EvalError::BadParameter("no scheme given".into()));
    }
    check_settings(settings)?;
    let plan = Plan::new(opts)?;
    let links = load_links(opts.traces.as_deref())?;
    let out = OutputDir::open(&opts.out)?;
    for other in out.others_running() {
        eprintln!(
            "note: another sprout eval is writing into {} (its folder {} is left alone)",
            opts.out.display(),
            other.display()
        );
    }
    let (results, fig1) = evaluate(opts, settings, &plan, &links)?;
    report::write_outputs(out.staging(), &results, fig1.as_deref())?;
    // The opt-in experiments, each run only when asked for, with the same settings.
    let (measure, run) = (
        (opts.skip_us, opts.protocol_params.as_slice()),
        (opts.jobs, opts.progress),
    );
    let rates = crate::rates::run_if_asked(&opts.experiments, measure, run, &links, out.staging())?;
    let calibration =
        crate::calibration::run_if_asked(&opts.experiments, measure, run, &links, out.staging())?;
    let frontier =
        crate::frontier::run_if_asked(&opts.experiments, measure, run, &links, out.staging())?;
    let aqm = crate::aqm::run_if_asked(&opts.experiments, measure, run, &links, out.staging())?;
    let tidied = out.finish()?;
    Ok(summary_text(
        &format!(
            "{rates}{calibration}{frontier}{aqm}{}",
            report::summary(&results, &opts.out)
        ),
        &tidied.to_string(),
    ))
}

/// The terminal summary and, on lines of their own after it, what tidying the output folder
/// removed or left (no trailing newline: the caller prints it with one).
fn summary_text(summary: &str, tidied: &str) -> String {
    let tidied = tidied.trim_end();
    if tidied.is_empty() {
        summary.to_string()
    } else {
        format!("{summary}\n{tidied}")
    }
}

/// The interactive experiment's settings, checked: at least one offered rate, each one a
/// source accepts ([`sprout_sim::App::validate`]), and a positive duration if any.
fn check_settings(settings: &InteractiveSettings) -> Result<()> {
    let bad = |why: String| Err(EvalError::BadParameter(format!("interactive: {why}")));
    if settings.rates_kbps.is_empty() {
        return bad("no offered rate given".into());
    }
    for &r in &settings.rates_kbps {
        for s in Source::FIXED {
            if let Err(e) = s.app(r).validate() {
                return bad(format!("offered rate {r} kbit/s: {e}"));
            }
        }
    }
    if settings.duration_us == Some(0) {
        return bad("a run of no time".into());
    }
    Ok(())
}

/// Runs every simulation of the options' experiments on the links: the results, and the
/// Figure-1 time series when `fig7` ran Sprout on [`FIGURE1_LINK`].
fn evaluate(
    opts: &EvalOptions,
    settings: &InteractiveSettings,
    plan: &Plan,
    links: &LinkSet,
) -> Result<(EvalResults, Option<Vec<TimeSeriesPoint>>)> {
    let jobs = build_jobs(opts, settings, plan, links);
    let started = Instant::now();
    let outputs = run_jobs(&jobs, opts.jobs, opts.progress)?;
    let wall_s = started.elapsed().as_secs_f64();
    let mut rows = Vec::new();
    let mut fig1: Option<Vec<TimeSeriesPoint>> = None;
    let mut interactive_rows = Vec::new();
    for o in outputs {
        rows.extend(o.rows);
        interactive_rows.extend(o.interactive);
        if o.figure1.is_some() {
            fig1 = o.figure1;
        }
    }
    // Within an experiment: by link, downlink first (as the paper lists them), then in the
    // order the jobs were made (the sort is stable).
    let exp_rank = |key: &str| Experiment::ALL.iter().position(|e| e.key() == key);
    rows.sort_by(|a, b| {
        (exp_rank(&a.experiment), &a.link, a.direction != "down").cmp(&(
            exp_rank(&b.experiment),
            &b.link,
            b.direction != "down",
        ))
    });
    let averages = averages(&rows, &opts.schemes);
    let results = EvalResults {
        source: links.source.clone(),
        source_note: links.note.clone(),
        skip_s: opts.skip_us as f64 / 1e6,
        protocol_params: opts.protocol_params.clone(),
        experiments: opts.experiments.clone(),
        schemes: opts.schemes.iter().map(|s| s.key().to_string()).collect(),
        rows,
        averages,
        simulations: jobs.iter().filter(|j| j.scheme.is_simulated()).count(),
        wall_s,
        interactive: opts
            .experiments
            .contains(&Experiment::Interactive)
            .then(|| InteractiveResults::new(settings, interactive_rows)),
    };
    Ok((results, fig1))
}

/// What one distinct run gave: an `interactive` job's output, or a simulation that one or
/// more jobs share.
enum Ran {
    Interactive(JobOut),
    Simulated(Simulated),
}

/// For each job, the first job that runs the very same simulation (itself if none before
/// it does): the same traces and the same configuration, so the same outputs, since a run
/// is deterministic. The `interactive` experiment's and the omniscient sender's jobs are
/// their own.
fn shared_runs(jobs: &[Job]) -> Vec<usize> {
    let mut first: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    (0..jobs.len())
        .map(|i| {
            let j = &jobs[i];
            if j.interactive.is_some() || !j.scheme.is_simulated() {
                return i;
            }
            let key = format!(
                "{:p} {:p} {:?}",
                Arc::as_ptr(&j.up),
                Arc::as_ptr(&j.down),
                j.cfg
            );
            *first.entry(key).or_insert(i)
        })
        .collect()
}

/// A job's expected cost, in arbitrary units, to start the longest first: simulated seconds
/// times what a second costs its scheme (Sprout's Bayesian receiver ticks dominate).
fn expected_cost(j: &Job) -> f64 {
    let seconds = j.cfg.duration.map_or_else(
        || sim::default_duration_us(&j.up, &j.down),
        Duration::as_micros,
    ) as f64
        / 1e6;
    let per_second = match j.scheme {
        Scheme::Sprout | Scheme::SproutWide => 10.0,
        Scheme::SproutEwma => 2.0,
        s if s.is_simulated() => 1.0,
        _ => 0.2,
    };
    seconds * per_second
}

/// Runs the jobs on `threads` threads (`None`: one per core), each distinct simulation once
/// ([`shared_runs`]), the costliest first from one queue, so that the cores stay busy to the
/// end, with a progress bar when `progress`; their outputs in the jobs' order, or the first
/// job's error in that order.
fn run_jobs(jobs: &[Job], threads: Option<usize>, progress: bool) -> Result<Vec<JobOut>> {
    // The bar counts simulations, as the report does: the omniscient sender's jobs are
    // computed from the trace in no time.
    let simulations = jobs.iter().filter(|j| j.scheme.is_simulated()).count();
    let bar = crate::progress::bar(simulations as u64, "", progress);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.unwrap_or(0))
        .build()
        .map_err(EvalError::Threads)?;
    let leader = shared_runs(jobs);
    let mut sharing = vec![0u64; jobs.len()];
    let mut figure1 = vec![false; jobs.len()];
    for (i, &l) in leader.iter().enumerate() {
        sharing[l] += u64::from(jobs[i].scheme.is_simulated());
        figure1[l] |= jobs[i].figure1;
    }
    let mut order: Vec<usize> = (0..jobs.len()).filter(|&i| leader[i] == i).collect();
    order.sort_by(|&a, &b| expected_cost(&jobs[b]).total_cmp(&expected_cost(&jobs[a])));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let ran: Vec<std::sync::Mutex<Option<Result<Ran>>>> =
        jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let worker = || {
        while let Some(&i) = order.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
            let j = &jobs[i];
            let out = match &j.interactive {
                Some(ij) => run_interactive_job(j, ij).map(Ran::Interactive),
                None => simulate(j, figure1[i]).map(Ran::Simulated),
            };
            bar.inc(sharing[i]);
            bar.set_message(format!(
                "{} {} {}",
                j.experiment.key(),
                j.link,
                j.scheme.key()
            ));
            *ran[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(out);
        }
    };
    pool.scope(|s| {
        for _ in 0..pool.current_num_threads() {
            s.spawn(|_| worker());
        }
    });
    bar.finish_and_clear();
    let mut ran: Vec<Option<Result<Ran>>> = ran
        .into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
        .collect();
    let mut outputs = Vec::with_capacity(jobs.len());
    for (i, j) in jobs.iter().enumerate() {
        let out = match ran[leader[i]].take().expect("every distinct run ran") {
            Ok(Ran::Interactive(o)) => o,
            Ok(Ran::Simulated(s)) => {
                let o = job_out(j, &s);
                ran[leader[i]] = Some(Ok(Ran::Simulated(s)));
                o
            }
            Err(e) => return Err(e),
        };
        outputs.push(out);
    }
    Ok(outputs)
}

/// The mean of the values that are numbers (a direction that carried no data has no data-only
/// delay), or NaN when none is.
fn finite_mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values
        .filter(|v| v.is_finite())
        .fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 {
        f64::NAN
    } else {
        sum / n as f64
    }
}

fn averages(rows: &[ResultRow], schemes: &[Scheme]) -> Vec<SchemeAverage> {
    schemes
        .iter()
        .map(|s| {
            let r: Vec<&ResultRow> = rows
                .iter()
                .filter(|r| r.experiment == "fig7" && r.scheme == s.key())
                .collect();
            let n = r.len().max(1) as f64;
            SchemeAverage {
                scheme: s.key().to_string(),
                utilization: r.iter().map(|x| x.utilization).sum::<f64>() / n,
                self_inflicted_ms: r.iter().map(|x| x.self_inflicted_ms).sum::<f64>() / n,
                self_inflicted_data_ms: finite_mean(r.iter().map(|x| x.self_inflicted_data_ms)),
                throughput_kbps: r.iter().map(|x| x.throughput_kbps).sum::<f64>() / n,
                results: r.len(),
            }
        })
        .filter(|a| a.results > 0)
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn what_tidying_did_starts_a_line_of_its_own() {
        let summary = "wrote r/results.csv and a table and SVG chart per experiment";
        let tidied = "removed 2 files an earlier run wrote here and this run did not: a, b\n";
        let text = super::summary_text(summary, tidied);
        assert_eq!(
            text.lines().collect::<Vec<_>>(),
            [summary, tidied.trim_end()],
            "{text}"
        );
        assert_eq!(super::summary_text(summary, ""), summary);
    }

    use super::*;

    /// One link pair of two 12 s traces (an opportunity every 2 ms up, every 1 ms down).
    fn small_links() -> LinkSet {
        let trace = |name: &str, every: u64| {
            let opps = (1..=12_000 / every).map(|k| k * every).collect();
            Arc::new(Trace::from_opportunities_ms(name, opps).unwrap())
        };
        LinkSet {
            source: "test".into(),
            note: None,
            pairs: vec![("small".into(), trace("small.up", 2), trace("small.down", 1))],
        }
    }

    fn options(experiments: Vec<Experiment>) -> EvalOptions {
        EvalOptions {
            experiments,
            skip_us: 2_000_000,
            ..EvalOptions::default()
        }
    }

    #[test]
    fn identical_simulations_of_different_experiments_run_once() {
        let opts = options(Experiment::ALL.to_vec());
        let plan = Plan::new(&opts).unwrap();
        let links = small_links();
        let jobs = build_jobs(&opts, &InteractiveSettings::default(), &plan, &links);
        let leader = shared_runs(&jobs);
        let shared: Vec<String> = (0..jobs.len())
            .filter(|&i| leader[i] != i)
            .map(|i| {
                let (j, l) = (&jobs[i], &jobs[leader[i]]);
                assert!(leader[i] < i && format!("{:?}", j.cfg) == format!("{:?}", l.cfg));
                format!(
                    "{} {} <- {}",
                    j.experiment.key(),
                    j.scheme.key(),
                    l.experiment.key()
                )
            })
            .collect();
        // Sprout at the default confidence, without loss and under the authors' model is
        // fig7's Sprout run; the confidence experiment's Sprout-EWMA is fig7's.
        assert_eq!(
            shared,
            [
                "confidence sprout <- fig7",
                "confidence sprout-ewma <- fig7",
                "loss sprout <- fig7",
                "model sprout <- fig7",
            ]
        );
        // Seeded runs, other confidences and losses are distinct.
        let distinct = (0..jobs.len()).filter(|&i| leader[i] == i).count();
        assert_eq!(distinct, jobs.len() - 4);
    }

    #[test]
    fn shared_runs_give_each_job_the_rows_of_its_own_run() {
        let opts = options(vec![
            Experiment::Fig7,
            Experiment::Confidence,
            Experiment::Loss,
        ]);
        let plan = Plan::new(&opts).unwrap();
        let jobs: Vec<Job> = build_jobs(
            &opts,
            &InteractiveSettings::default(),
            &plan,
            &small_links(),
        )
        .into_iter()
        .filter(|j| {
            matches!(
                j.scheme,
                Scheme::Sprout | Scheme::SproutEwma | Scheme::Omniscient
            )
        })
        .collect();
        let together = run_jobs(&jobs, Some(2), false).unwrap();
        assert_eq!(together.len(), jobs.len());
        for (j, out) in jobs.iter().zip(&together) {
            let alone = job_out(j, &simulate(j, false).unwrap());
            assert_eq!(format!("{:?}", out.rows), format!("{:?}", alone.rows));
            assert_eq!(out.rows[0].experiment, j.experiment.key());
        }
    }

    #[test]
    fn the_costliest_jobs_come_first() {
        let opts = options(vec![Experiment::Fig7]);
        let plan = Plan::new(&opts).unwrap();
        let links = small_links();
        let pair = &links.pairs[0];
        let cost = |s: Scheme| expected_cost(&job(Experiment::Fig7, pair, s, &plan, None, 0.0, 0));
        assert!(cost(Scheme::Sprout) > cost(Scheme::SproutEwma));
        assert!(cost(Scheme::SproutEwma) > cost(Scheme::Cubic));
        assert!(cost(Scheme::Cubic) > cost(Scheme::Omniscient));
    }
}
