//! What an evaluation produced: one row per run, link, direction and scheme, the per-scheme
//! averages, and the whole (results.json).

use serde::{Deserialize, Serialize};
use sprout_link::QueueConfig;
use sprout_sim::metrics::DirectionMetrics;
use sprout_sim::scheme::Scheme;

use crate::experiment::Experiment;
use crate::interactive::InteractiveResults;
use crate::paper;

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
    /// The model variant of the `model` experiment ([`MODEL_VARIANTS`](crate::experiment::MODEL_VARIANTS)); empty elsewhere.
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
    /// The `interactive` experiment's results, when it ran (also in interactive.json).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interactive: Option<InteractiveResults>,
}

impl EvalResults {
    /// One line for each scheme of the run's schemes that ran its own application instead of
    /// a bulk sender in fig7 or sensitivity ([`Scheme::natural_app_note`]): "gcc runs the
    /// adaptive video source (a video call), not a bulk transfer".
    pub fn natural_app_notes(&self) -> Vec<String> {
        let bulk = [
            Experiment::Fig7,
            Experiment::Fig8,
            Experiment::Summary,
            Experiment::Sensitivity,
        ];
        if !self.experiments.iter().any(|e| bulk.contains(e)) {
            return Vec::new();
        }
        self.schemes
            .iter()
            .filter_map(|k| k.parse::<Scheme>().ok()?.natural_app_note())
            .collect()
    }

    /// Which Sprout scheme ran with which of [`EvalResults::protocol_params`], as a phrase
    /// ("sprout with `model.sigma=250 target_ticks=4`, sprout-ewma with `target_ticks=4`
    /// (it has no Bayesian model)"), or `None` when the run used the defaults.
    pub fn params_phrase(&self) -> Option<String> {
        if self.protocol_params.is_empty() {
            return None;
        }
        let mut parts = Vec::new();
        for scheme in [Scheme::Sprout, Scheme::SproutEwma] {
            if !self.schemes.iter().any(|s| s == scheme.key()) {
                continue;
            }
            let (used, ignored) = scheme.split_params(&self.protocol_params);
            let with = if used.is_empty() {
                "the defaults".to_string()
            } else {
                format!("`{}`", used.join(" "))
            };
            let why = if ignored.is_empty() {
                ""
            } else {
                " (it has no Bayesian model)"
            };
            parts.push(format!("{} with {with}{why}", scheme.key()));
        }
        Some(if parts.is_empty() {
            format!(
                "`{}` (no Sprout scheme ran)",
                self.protocol_params.join(" ")
            )
        } else {
            parts.join(", ")
        })
    }

    /// The rows of one experiment.
    pub fn rows_of(&self, e: Experiment) -> impl Iterator<Item = &ResultRow> {
        self.rows.iter().filter(move |r| r.experiment == e.key())
    }

    /// The fig7 average of a scheme.
    pub fn average(&self, scheme: &str) -> Option<&SchemeAverage> {
        self.averages.iter().find(|a| a.scheme == scheme)
    }
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
