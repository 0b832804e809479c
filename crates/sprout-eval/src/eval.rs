//! The evaluation harness: the paper's experiments over every link pair and scheme, in parallel
//! over the cores, with the paper's published values beside ours: results.csv, results.json,
//! one table (CSV) and chart (SVG) per experiment, and report.md.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sprout_link::{QueueConfig, SyntheticLink, Trace, TraceError};

use sprout_sim::distributions::{self, InterArrival};
use sprout_sim::metrics::{self, DirectionMetrics, TimeSeriesPoint, Window};
pub use sprout_sim::scheme::Scheme;
use crate::paper;
use crate::report;
use sprout_sim::sim::{self, DirectionRun, SimConfig};

/// A named experiment of the paper's evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Experiment {
    /// All schemes on all links, one chart per link (the paper's Figure 7).
    Fig7,
    /// Average utilization against average self-inflicted delay (Figure 8).
    Fig8,
    /// The introduction's table: Sprout's throughput ratio and delay reduction per scheme.
    Summary,
    /// Sprout's confidence sweep on the T-Mobile UMTS uplink (Figure 9).
    Confidence,
    /// Sprout on Verizon LTE at 0%, 5% and 10% loss each way (the loss table).
    Loss,
    /// Synthetic links with other inter-arrival distributions (the reproduction's extension).
    Distributions,
    /// Five seeds of each scheme on two links: mean and standard deviation.
    Sensitivity,
    /// Sprout with each named variant of the receiver's model ([`MODEL_VARIANTS`]) on every
    /// link: what each detail of the authors' arithmetic changes.
    Model,
}

/// The named variants of the receiver's model that the `model` experiment compares: a name
/// (the `variant` column of results.csv), what it changes, and its `--param` assignments.
pub const MODEL_VARIANTS: [(&str, &str, &[&str]); 7] = [
    (
        "authors",
        "the default: the authors' arithmetic, every forecast of their fixtures reproduced",
        &[],
    ),
    (
        "exact-cdf",
        "the exact Gaussian CDF instead of their table of 32,768 cells read at cell midpoints",
        &["model.gaussian_cdf=Exact"],
    ),
    (
        "lowest-1.95",
        "the lowest rate at 1.95 packets/s (a trickle) instead of an outage at exactly 0",
        &["model.grid=Midpoint", "model.bins=257"],
    ),
    (
        "lump-tail",
        "tick counts of 30 or more lumped at 30 in the forecast tables instead of dropped",
        &["model.count_tail=Lump"],
    ),
    (
        "symmetric-kernel",
        "a symmetric evolution kernel instead of one running a value past the upper reach",
        &["model.kernel_span=Symmetric"],
    ),
    (
        "former",
        "all four of the above: this project's model before it reproduced the authors' code",
        &[
            "model.gaussian_cdf=Exact",
            "model.grid=Midpoint",
            "model.bins=257",
            "model.count_tail=Lump",
            "model.kernel_span=Symmetric",
        ],
    ),
    (
        "paper-literal",
        "the paper's text: 256 values from 0, value 0 a sticky outage",
        &["model.grid=ZeroOutage"],
    ),
];

impl Experiment {
    /// Every experiment, in run order.
    pub const ALL: [Experiment; 8] = [
        Experiment::Fig7,
        Experiment::Fig8,
        Experiment::Summary,
        Experiment::Confidence,
        Experiment::Loss,
        Experiment::Distributions,
        Experiment::Sensitivity,
        Experiment::Model,
    ];

    /// The experiment's key, as on the command line and in results.csv.
    pub fn key(&self) -> &'static str {
        match self {
            Experiment::Fig7 => "fig7",
            Experiment::Fig8 => "fig8",
            Experiment::Summary => "summary",
            Experiment::Confidence => "confidence",
            Experiment::Loss => "loss",
            Experiment::Distributions => "distributions",
            Experiment::Sensitivity => "sensitivity",
            Experiment::Model => "model",
        }
    }

    /// Parses a comma-separated list, or `all`.
    pub fn parse_list(s: &str) -> Result<Vec<Experiment>, String> {
        if s.trim() == "all" {
            return Ok(Experiment::ALL.to_vec());
        }
        let mut out = Vec::new();
        for part in s.split(',').filter(|p| !p.trim().is_empty()) {
            let e: Experiment = part.parse()?;
            if !out.contains(&e) {
                out.push(e);
            }
        }
        if out.is_empty() {
            return Err("no experiment given".into());
        }
        out.sort();
        Ok(out)
    }
}

impl std::str::FromStr for Experiment {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let key = s.trim().to_ascii_lowercase();
        Experiment::ALL
            .iter()
            .find(|e| e.key() == key)
            .copied()
            .ok_or_else(|| {
                let known: Vec<&str> = Experiment::ALL.iter().map(|e| e.key()).collect();
                format!(
                    "unknown experiment '{}' (known: {}, or all)",
                    s.trim(),
                    known.join(", ")
                )
            })
    }
}

/// Confidences of the `confidence` experiment (the paper's Figure 9 sweep and more).
pub const CONFIDENCES: [f64; 7] = [0.05, 0.25, 0.50, 0.75, 0.90, 0.95, 0.98];
/// Loss probabilities each way of the `loss` experiment.
pub const LOSSES: [f64; 3] = [0.0, 0.05, 0.10];
/// Seeds of the `sensitivity` experiment.
pub const SEEDS: [u64; 5] = [1, 2, 3, 4, 5];

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

/// One row of results.csv: one run, link, direction and scheme.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ResultRow {
    /// The experiment the run belongs to.
    pub experiment: String,
    /// Link name (the trace pair's name; synthetic links say which distribution).
    pub link: String,
    /// "up" or "down".
    pub direction: String,
    /// Scheme key.
    pub scheme: String,
    /// Sprout's forecast confidence, 0..1 (empty for other schemes).
    pub confidence: Option<f64>,
    /// Bernoulli loss probability each way, 0..1.
    pub loss: f64,
    /// Seed of the run (0: no start-time jitter).
    pub seed: u64,
    /// Queue discipline ("infinite" or "codel").
    pub queue: String,
    /// Bytes leaving the link queue, kbit/s (the paper's throughput, measured at Cellsim).
    pub throughput_kbps: f64,
    /// Application payload delivered, kbit/s.
    pub goodput_kbps: f64,
    /// Capacity the trace offered over the window, kbit/s.
    pub capacity_kbps: f64,
    /// Delivered / offered bytes, 0..1.
    pub utilization: f64,
    /// 95th-percentile end-to-end delay, all packets (the paper's figure), ms.
    pub p95_delay_ms: f64,
    /// Same, counting only packets with application data, ms.
    pub p95_delay_data_ms: f64,
    /// The omniscient sender's 95th-percentile delay on the same trace, ms.
    pub omniscient_p95_ms: f64,
    /// p95_delay_ms - omniscient_p95_ms.
    pub self_inflicted_ms: f64,
    /// p95_delay_data_ms - omniscient_p95_ms.
    pub self_inflicted_data_ms: f64,
    /// The paper's Figure 7 throughput for this link, direction and scheme, kbit/s.
    pub paper_throughput_kbps: Option<f64>,
    /// The paper's Figure 7 self-inflicted delay, ms.
    pub paper_self_inflicted_ms: Option<f64>,
    /// Length of the measured window, s.
    pub window_s: f64,
    /// The model variant of the `model` experiment ([`MODEL_VARIANTS`]); empty elsewhere.
    #[serde(default)]
    pub variant: String,
}

/// Per-scheme averages over all links and directions of the `fig7` experiment.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SchemeAverage {
    /// Scheme key.
    pub scheme: String,
    /// Mean utilization, 0..1.
    pub utilization: f64,
    /// Mean self-inflicted delay (all packets), ms.
    pub self_inflicted_ms: f64,
    /// Mean self-inflicted delay (data packets only), ms.
    pub self_inflicted_data_ms: f64,
    /// Mean throughput, kbit/s.
    pub throughput_kbps: f64,
    /// Number of direction results averaged.
    pub results: usize,
}

/// Everything an evaluation produced.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EvalResults {
    /// Where the traces came from.
    pub source: String,
    /// How the traces were chosen, when no folder was given and none was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_note: Option<String>,
    /// Seconds skipped before measuring.
    pub skip_s: f64,
    /// Changes to the Sprout schemes' configuration (`KEY=VALUE`); empty = the defaults.
    #[serde(default)]
    pub protocol_params: Vec<String>,
    /// The experiments run.
    pub experiments: Vec<Experiment>,
    /// The schemes of `fig7`, in the order asked.
    pub schemes: Vec<String>,
    /// One row per run, link, direction and scheme.
    pub rows: Vec<ResultRow>,
    /// Per-scheme averages over the `fig7` rows.
    pub averages: Vec<SchemeAverage>,
    /// Simulations run.
    pub simulations: usize,
    /// Wall-clock time of the simulations, s.
    pub wall_s: f64,
}

impl EvalResults {
    /// The rows of one experiment.
    pub fn rows_of(&self, e: Experiment) -> impl Iterator<Item = &ResultRow> {
        self.rows.iter().filter(move |r| r.experiment == e.key())
    }

    /// The fig7 average of a scheme.
    pub fn average(&self, scheme: &str) -> Option<&SchemeAverage> {
        self.averages.iter().find(|a| a.scheme == scheme)
    }
}

/// A link pair: (name, uplink, downlink).
/// A link pair: its name, its uplink and its downlink trace.
pub type Pair = (String, Arc<Trace>, Arc<Trace>);

/// The link pairs an evaluation runs, and where they came from.
pub struct LinkSet {
    /// Where the links came from (a folder, or the built-in synthetic link).
    pub source: String,
    /// How the links were chosen, when the user did not name a folder and none was found.
    pub note: Option<String>,
    /// The pairs, in order.
    pub pairs: Vec<Pair>,
}

impl LinkSet {
    /// The pair with this name, or else the first.
    pub fn named(&self, name: &str) -> &Pair {
        self.pairs
            .iter()
            .find(|p| p.0 == name)
            .unwrap_or(&self.pairs[0])
    }
}

/// Where an evaluation looks for traces when it is not given a folder, in order (relative to
/// the current folder): the paper's traces beside the repository, then `./traces` (where
/// `sprout traces fetch` puts them). With neither, it runs the built-in synthetic link.
pub const DEFAULT_TRACE_DIRS: [&str; 2] = ["../shared/traces", "./traces"];

/// Loads a trace file; a file that cannot be read is "cannot read trace PATH: why", once.
pub fn load_trace(path: &Path) -> Result<Trace> {
    Trace::load(path).map_err(|e| match e {
        TraceError::Io { file, source } => {
            anyhow::Error::new(source).context(format!("cannot read trace {file}"))
        }
        e => e.into(),
    })
}

/// The trace pairs in `dir`, loaded; an error when there are none.
fn load_pairs(dir: &Path) -> Result<Vec<Pair>> {
    let found = Trace::find_pairs(dir).map_err(|e| match e {
        TraceError::Io { source, .. } => {
            let hint = if source.kind() == std::io::ErrorKind::NotFound {
                format!(
                    " (without --traces, eval uses {} if one holds traces, else the built-in \
                     synthetic link)",
                    DEFAULT_TRACE_DIRS.join(" or ")
                )
            } else {
                String::new()
            };
            anyhow::anyhow!("cannot read trace folder {}: {source}{hint}", dir.display())
        }
        e => e.into(),
    })?;
    if found.is_empty() {
        anyhow::bail!(
            "no trace pairs (NAME.up and NAME.down) in {}",
            dir.display()
        );
    }
    found
        .into_iter()
        .map(|(name, up, down)| -> Result<_> {
            Ok((
                name,
                Arc::new(load_trace(&up)?),
                Arc::new(load_trace(&down)?),
            ))
        })
        .collect()
}

/// The trace pairs in `traces`; with `None`, those of the first of [`DEFAULT_TRACE_DIRS`] that
/// holds any, else the built-in synthetic link (with a note saying so).
pub fn load_links(traces: Option<&Path>) -> Result<LinkSet> {
    let dir = match traces {
        Some(d) => Some(d.to_path_buf()),
        None => DEFAULT_TRACE_DIRS
            .iter()
            .map(PathBuf::from)
            .find(|d| matches!(Trace::find_pairs(d), Ok(p) if !p.is_empty())),
    };
    if let Some(d) = dir {
        return Ok(LinkSet {
            pairs: load_pairs(&d)?,
            source: d.display().to_string(),
            note: None,
        });
    }
    let make = |seed: u64, dir: &str| {
        Arc::new(
            SyntheticLink {
                seed,
                duration_s: 300.0,
                ..SyntheticLink::default()
            }
            .generate(format!("Synthetic.{dir}")),
        )
    };
    Ok(LinkSet {
        source: "the built-in synthetic cellular link (the paper's model, seeds 1 and 2, 300 s)"
            .into(),
        note: Some(format!(
            "No traces in {}, so this ran the built-in synthetic cellular link, and only the \
             checks that hold on any link apply. For the paper's eight links, put its traces \
             (NAME.up and NAME.down files) in ./traces (`sprout traces fetch` downloads them) or \
             pass --traces DIR.",
            DEFAULT_TRACE_DIRS.join(" or ")
        )),
        pairs: vec![("Synthetic".into(), make(1, "up"), make(2, "down"))],
    })
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
}

/// What every job of a run shares: the measured window's start and the two Sprout schemes'
/// configurations, with the run's `--param` changes applied once.
struct Plan {
    skip_us: u64,
    sprout: sprout_core::Config,
    ewma: sprout_core::Config,
    /// Sprout's configuration under each of [`MODEL_VARIANTS`], after the run's changes.
    variants: Vec<(&'static str, sprout_core::Config)>,
}

impl Plan {
    fn new(opts: &EvalOptions) -> Result<Plan> {
        let changed = |scheme: Scheme| -> Result<sprout_core::Config> {
            let mut c = scheme.protocol_config();
            sprout_sim::overrides::apply(&mut c, &opts.protocol_params).map_err(anyhow::Error::msg)?;
            Ok(c)
        };
        let sprout = changed(Scheme::Sprout)?;
        let variants = MODEL_VARIANTS
            .iter()
            .map(|(name, _, params)| {
                let mut c = sprout.clone();
                let params: Vec<String> = params.iter().map(|p| p.to_string()).collect();
                sprout_sim::overrides::apply(&mut c, &params)
                    .map_err(|e| anyhow::anyhow!("model variant {name}: {e}"))?;
                Ok((*name, c))
            })
            .collect::<Result<_>>()?;
        Ok(Plan {
            skip_us: opts.skip_us,
            sprout,
            ewma: changed(Scheme::SproutEwma)?,
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
        skip_us: plan.skip_us,
        seed,
        ..SimConfig::default()
    };
    scheme.configure(&mut cfg);
    match scheme {
        Scheme::Sprout => cfg.protocol = plan.sprout.clone(),
        Scheme::SproutEwma => cfg.protocol = plan.ewma.clone(),
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
    }
}

/// The link whose downlink the Figure-1 time series shows.
pub const FIGURE1_LINK: &str = "Verizon-LTE-short";
/// The link of the confidence sweep (the paper's Figure 9: its uplink).
pub const CONFIDENCE_LINK: &str = "TMobile-UMTS-driving";
/// The link of the loss experiment.
pub const LOSS_LINK: &str = "Verizon-LTE-short";
/// The real link whose mean rates the synthetic distributions copy.
pub const DISTRIBUTIONS_LINK: &str = "Verizon-LTE-short";
/// The two links of the sensitivity experiment.
pub const SENSITIVITY_LINKS: [&str; 2] = ["Verizon-LTE-short", "TMobile-UMTS-driving"];

fn build_jobs(opts: &EvalOptions, plan: &Plan, links: &LinkSet) -> Vec<Job> {
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
    jobs
}

/// The omniscient sender's metrics over a direction: every opportunity used, no queueing.
fn omniscient_metrics(trace: &Arc<Trace>, cfg: &SimConfig, duration_us: u64) -> DirectionMetrics {
    let (_, _, mut m) = sim::measure(trace, &[], cfg, duration_us);
    m.throughput_kbps = m.capacity_kbps;
    m.goodput_kbps = m.capacity_kbps;
    m.utilization = 1.0;
    m.p95_delay_ms = m.omniscient_p95_ms;
    m.p95_delay_data_ms = m.omniscient_p95_ms;
    m.self_inflicted_ms = 0.0;
    m.self_inflicted_data_ms = 0.0;
    m
}

/// What one job produced: its two rows and, maybe, the Figure-1 series.
struct JobOut {
    rows: [ResultRow; 2],
    figure1: Option<Vec<TimeSeriesPoint>>,
}

fn run_job(j: &Job) -> Result<JobOut> {
    let (down, up, figure1) = if j.scheme.is_simulated() {
        let out = sim::run(j.up.clone(), j.down.clone(), &j.cfg, None)
            .with_context(|| format!("{} / {}", j.link, j.scheme.key()))?;
        let fig = j.figure1.then(|| figure1_series(&out.downlink));
        (out.downlink.metrics, out.uplink.metrics, fig)
    } else {
        let duration = sim::default_duration_us(&j.up, &j.down);
        (
            omniscient_metrics(&j.down, &j.cfg, duration),
            omniscient_metrics(&j.up, &j.cfg, duration),
            None,
        )
    };
    Ok(JobOut {
        rows: [row(j, "down", &down), row(j, "up", &up)],
        figure1,
    })
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

/// What a [`ResultRow`] is about, besides its direction and metrics.
#[derive(Clone, Debug)]
pub struct RunLabel<'a> {
    /// Experiment key (`fig7`, ..., or `emulated` / `simulated` for the emulated evaluation).
    pub experiment: &'a str,
    /// Link name.
    pub link: &'a str,
    /// Scheme.
    pub scheme: Scheme,
    /// Sprout's forecast confidence (0..1), `None` for other schemes.
    pub confidence: Option<f64>,
    /// Bernoulli loss probability each way (0..1).
    pub loss: f64,
    /// Seed of the run.
    pub seed: u64,
    /// Queue discipline of the link.
    pub queue: &'a QueueConfig,
    /// Fill in the paper's Figure-7 values for this link, direction and scheme.
    pub with_paper: bool,
}

impl ResultRow {
    /// The row of one direction's metrics.
    pub fn new(label: &RunLabel, direction: &str, m: &DirectionMetrics) -> ResultRow {
        let p = if label.with_paper {
            paper::fig7(label.link, direction, label.scheme.key())
        } else {
            None
        };
        ResultRow {
            experiment: label.experiment.to_string(),
            link: label.link.to_string(),
            direction: direction.to_string(),
            scheme: label.scheme.key().to_string(),
            confidence: label.confidence,
            loss: label.loss,
            seed: label.seed,
            queue: match label.queue {
                QueueConfig::CoDel { .. } => "codel".into(),
                _ => "infinite".into(),
            },
            throughput_kbps: m.throughput_kbps,
            goodput_kbps: m.goodput_kbps,
            capacity_kbps: m.capacity_kbps,
            utilization: m.utilization,
            p95_delay_ms: m.p95_delay_ms,
            p95_delay_data_ms: m.p95_delay_data_ms,
            omniscient_p95_ms: m.omniscient_p95_ms,
            self_inflicted_ms: m.self_inflicted_ms,
            self_inflicted_data_ms: m.self_inflicted_data_ms,
            paper_throughput_kbps: p.map(|p| p.throughput_kbps),
            paper_self_inflicted_ms: p.map(|p| p.self_inflicted_ms),
            window_s: m.window_s,
            variant: String::new(),
        }
    }
}

/// The Figure-1 time series of a direction run, in 500 ms bins over the whole run.
pub fn figure1_series(run: &DirectionRun) -> Vec<TimeSeriesPoint> {
    let end = run.window.end_us;
    metrics::time_series(
        &run.arrivals,
        &run.opportunities_us,
        1500,
        Window::new(0, end),
        500_000,
    )
}

/// Runs the evaluation and writes its outputs; returns a short summary for the terminal.
pub fn run(opts: &EvalOptions) -> Result<String> {
    if opts.schemes.is_empty() {
        anyhow::bail!("no scheme given");
    }
    let plan = Plan::new(opts)?;
    let links = load_links(opts.traces.as_deref())?;
    fs::create_dir_all(&opts.out)
        .with_context(|| format!("creating output folder {}", opts.out.display()))?;
    let jobs = build_jobs(opts, &plan, &links);
    let bar = if opts.progress {
        let b = ProgressBar::new(jobs.len() as u64);
        b.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b
    } else {
        ProgressBar::hidden()
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.jobs.unwrap_or(0))
        .build()?;
    let started = Instant::now();
    // Longest first, so the cores stay busy to the end.
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| {
        let j = &jobs[i];
        std::cmp::Reverse(j.up.len() + j.down.len())
    });
    let mut outputs: Vec<(usize, Result<JobOut>)> = pool.install(|| {
        order
            .par_iter()
            .map(|&i| {
                let out = run_job(&jobs[i]);
                bar.inc(1);
                bar.set_message(format!(
                    "{} {} {}",
                    jobs[i].experiment.key(),
                    jobs[i].link,
                    jobs[i].scheme.key()
                ));
                (i, out)
            })
            .collect()
    });
    bar.finish_and_clear();
    let wall_s = started.elapsed().as_secs_f64();
    outputs.sort_by_key(|(i, _)| *i);

    let mut rows = Vec::new();
    let mut fig1: Option<Vec<TimeSeriesPoint>> = None;
    for (_, o) in outputs {
        let o = o?;
        rows.extend(o.rows);
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
    };
    report::write_outputs(&opts.out, &results, fig1.as_deref())?;
    Ok(report::summary(&results, &opts.out))
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
                self_inflicted_data_ms: r.iter().map(|x| x.self_inflicted_data_ms).sum::<f64>() / n,
                throughput_kbps: r.iter().map(|x| x.throughput_kbps).sum::<f64>() / n,
                results: r.len(),
            }
        })
        .filter(|a| a.results > 0)
        .collect()
}

/// Public home of the paper's traces (the mahimahi repository's traces folder).
const TRACE_BASE: &str = "https://raw.githubusercontent.com/ravinet/mahimahi/master/traces";
const TRACE_NAMES: [&str; 4] = [
    "Verizon-LTE-short",
    "ATT-LTE-driving",
    "TMobile-UMTS-driving",
    "Verizon-EVDO-driving",
];

/// Downloads the paper's traces into `dir` with `curl`, checking each file parses as a trace.
/// Says clearly when the network (or curl) is not available.
pub fn fetch_traces(dir: &Path) -> Result<String> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut fetched = Vec::new();
    for name in TRACE_NAMES {
        for d in ["up", "down"] {
            let file = format!("{name}.{d}");
            let target = dir.join(&file);
            let tmp = dir.join(format!(".{file}.part"));
            let url = format!("{TRACE_BASE}/{file}");
            let status = std::process::Command::new("curl")
                .args([
                    "-fsSL",
                    "--connect-timeout",
                    "10",
                    "--max-time",
                    "120",
                    "-o",
                ])
                .arg(&tmp)
                .arg(&url)
                .status();
            match status {
                Ok(s) if s.success() => {}
                Ok(s) => {
                    let _ = fs::remove_file(&tmp);
                    anyhow::bail!(
                        "could not download {url} (curl exit {}): this machine's network does not \
                         reach the traces' public home. Copy the eight files (NAME.up / NAME.down) \
                         into {} by hand, or pass --traces DIR to `sprout eval`.",
                        s.code().unwrap_or(-1),
                        dir.display()
                    );
                }
                Err(e) => anyhow::bail!("could not run curl to download traces: {e}"),
            }
            Trace::load(&tmp).with_context(|| format!("downloaded {file} is not a valid trace"))?;
            fs::rename(&tmp, &target)?;
            fetched.push(file);
        }
    }
    Ok(format!(
        "fetched {} traces into {}",
        fetched.len(),
        dir.display()
    ))
}
