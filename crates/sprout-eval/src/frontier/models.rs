//! The experiment's models, their knobs' points and its settings.

use serde::{Deserialize, Serialize};
use sprout_sim::scheme::Scheme;

/// The Bayesian models' confidences.
pub const CONFIDENCES: [f64; 8] = [0.5, 0.55, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95];
/// Sprout-EWMA's gains per 20 ms tick: the default 0.125 and values either side.
pub const GAINS: [f64; 5] = [0.03125, 0.0625, 0.125, 0.25, 0.5];
/// The Bayesian models' confidences on the scaled and synthetic links (thinned, to keep the
/// experiment within its two minutes).
pub const EXTRA_CONFIDENCES: [f64; 4] = [0.5, 0.6, 0.7, 0.9];
/// Sprout-EWMA's gains on the scaled and synthetic links.
pub const EXTRA_GAINS: [f64; 4] = [0.0625, 0.125, 0.25, 0.5];
/// The factors the evaluation's links are scaled by, each a group of its own.
pub const SCALES: [f64; 2] = [4.0, 16.0];
/// How long a run on a scaled or synthetic link lasts, simulated µs, the skip included
/// (140 s: 80 s measured after the evaluation's 60 s; at 180 s and five confidences the
/// experiment took 267 CPU-s, too much for two minutes on two cores).
pub const EXTRA_DURATION_US: u64 = 140_000_000;
/// The link whose two directions' average gets a verdict of its own: Figure 9's.
pub const FIGURE9_LINK: &str = crate::experiment::CONFIDENCE_LINK;
/// The group name of the average over every link direction.
pub const ALL: &str = "all";

/// One model of the experiment: a scheme and the parameter changes (`--param` assignments)
/// that make it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrontierModel {
    /// Its name in the tables (a scheme's key for the unchanged ones).
    pub name: &'static str,
    /// The Sprout scheme it runs as.
    pub scheme: Scheme,
    /// Its `--param` changes to the scheme's configuration, applied after the run's own.
    pub params: &'static [&'static str],
    /// What it is, for the report.
    pub about: &'static str,
}

impl FrontierModel {
    /// The knob swept: `confidence` for a Bayesian model, `gain` for Sprout-EWMA.
    pub fn knob(&self) -> &'static str {
        if self.scheme.uses_confidence() {
            "confidence"
        } else {
            "gain"
        }
    }
}

/// The models, in the order the tables list them: the paper's, the wide one, the candidates
/// of issue 40's second part (each a named parameter set of the wide model), Sprout-EWMA last.
pub const MODELS: [FrontierModel; 6] = [
    FrontierModel {
        name: "sprout",
        scheme: Scheme::Sprout,
        params: &[],
        about: "the paper's model (to 1,000 packets/s, Poisson counts, sigma 200)",
    },
    FrontierModel {
        name: "sprout-wide",
        scheme: Scheme::SproutWide,
        params: &[],
        about: "the wide model (an outage to 1 Gbit/s, geometric Brownian motion)",
    },
    FrontierModel {
        name: "wide-nb",
        scheme: Scheme::SproutWide,
        params: &["estimator.Wide.count_cv=0.3"],
        about: "the wide model with a negative binomial count (overdispersed Poisson: \
                variance m + (0.3 m)^2 for a mean of m packets a tick), for bursty delivery",
    },
    FrontierModel {
        name: "wide-floor25",
        scheme: Scheme::SproutWide,
        params: &["estimator.Wide.sigma_floor=25"],
        about: "the wide model with the floor of its volatility at 25 packets/s per sqrt(s) \
                instead of the paper's 200: below 35 packets/s (an outage's escape included) \
                the rate moves by that additive motion, so a belief near an outage expects \
                slower recovery and the cautious forecast sends less into it",
    },
    FrontierModel {
        name: "wide-vol",
        scheme: Scheme::SproutWide,
        params: &[r#"estimator={"WideVol":{}}"#],
        about: "the wide model with its volatility learned online (`sprout_core::wide_vol`): \
                a belief over two volatilities, the wide model's and a quarter of it (both \
                `sigma_log` and `sigma_floor`), each weight moved every tick by how well its \
                belief predicted the count, the forecast from the weighted mixture",
    },
    FrontierModel {
        name: "sprout-ewma",
        scheme: Scheme::SproutEwma,
        params: &[],
        about: "Sprout-EWMA: a moving average of the observed rate, no caution",
    },
];

/// The model of this name, if any.
pub fn model(name: &str) -> Option<&'static FrontierModel> {
    MODELS.iter().find(|m| m.name == name)
}

/// What the experiment runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrontierSettings {
    /// The Bayesian models' confidences (default [`CONFIDENCES`]).
    pub confidences: Vec<f64>,
    /// Sprout-EWMA's gains (default [`GAINS`]).
    pub gains: Vec<f64>,
    /// The models run, by name (default every one of [`MODELS`]).
    pub models: Vec<String>,
    /// Start of the measured window, microseconds (the evaluation's `--skip`).
    pub skip_us: u64,
    /// The factors the links are scaled by, each a group (default [`SCALES`]).
    pub scales: Vec<f64>,
    /// Whether the synthetic links run, a group (default true).
    pub synthetic: bool,
    /// The Bayesian models' confidences on the scaled and synthetic links (default
    /// [`EXTRA_CONFIDENCES`]).
    pub extra_confidences: Vec<f64>,
    /// Sprout-EWMA's gains there (default [`EXTRA_GAINS`]).
    pub extra_gains: Vec<f64>,
    /// How long a run there lasts, simulated µs, the skip included (default
    /// [`EXTRA_DURATION_US`]).
    pub extra_duration_us: u64,
}

impl Default for FrontierSettings {
    fn default() -> Self {
        FrontierSettings {
            confidences: CONFIDENCES.to_vec(),
            gains: GAINS.to_vec(),
            models: MODELS.iter().map(|m| m.name.to_string()).collect(),
            skip_us: sprout_sim::metrics::DEFAULT_SKIP_US,
            scales: SCALES.to_vec(),
            synthetic: true,
            extra_confidences: EXTRA_CONFIDENCES.to_vec(),
            extra_gains: EXTRA_GAINS.to_vec(),
            extra_duration_us: EXTRA_DURATION_US,
        }
    }
}
