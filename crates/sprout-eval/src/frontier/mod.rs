//! The `frontier` experiment (issue 40, the paper's open question): does some Sprout model,
//! at some forecast confidence, beat Sprout-EWMA on utilization and self-inflicted delay at
//! once? Section 5.5 of the paper left it open: along its confidence sweep Sprout beat the
//! moving average on one metric or the other, never on both.
//!
//! On every link direction of the evaluation (both directions loaded at once, 20 ms each way,
//! each trace pair replayed whole as fig7 does, measured from the evaluation's `--skip`),
//! each model of [`MODELS`] runs at each point of its knob: a Bayesian model at each of the
//! settings' confidences ([`CONFIDENCES`]), Sprout-EWMA at each of its gains ([`GAINS`],
//! around the default [`sprout_core::params::DEFAULT_EWMA_GAIN`]), so that both sides get
//! their best curve. Per model and point: utilization and self-inflicted delay per direction,
//! averaged over every direction (`all`) and over each link pair's two.
//!
//! The same on links the models were not tuned on, each set a group of its own (module
//! `links`): the evaluation's link pairs scaled x4 and x16 ([`SCALES`]) and synthetic links
//! (the paper's link model at two seeds, a stepwise link), each run for
//! [`EXTRA_DURATION_US`] only and at a thinner grid ([`EXTRA_CONFIDENCES`], [`EXTRA_GAINS`])
//! so that the experiment stays within two minutes.
//!
//! The verdicts ([`Verdict`], module `dominance`): on the all-direction average, on the
//! Figure-9 link (`TMobile-UMTS-driving`, both directions averaged) and on each further set, which points of each
//! Bayesian model dominate which of Sprout-EWMA's (at least its utilization with strictly less
//! delay), and the best gap otherwise (the utilization short of Sprout-EWMA's at Sprout-EWMA's
//! delay, the model's curve interpolated along its Pareto front).
//!
//! Not in `all` ([`crate::experiment::Experiment::OPT_IN`]). The files, table and report
//! section are in `crate::report::frontier`, the chart in `crate::chart::frontier_chart`.

pub mod dominance;
mod links;
mod models;
mod results;
mod run;

pub use dominance::{best_gap, dominates, dominating_pairs, front, gaps, utilization_at};
pub use dominance::{CurvePoint, Gap};
pub use links::{cases, scale_set, LinkCase, STEPWISE_MBIT, SYNTHETIC, SYNTHETIC_SEEDS, X1};
pub use models::{
    model, FrontierModel, FrontierSettings, ALL, CONFIDENCES, EXTRA_CONFIDENCES, EXTRA_DURATION_US,
    EXTRA_GAINS, FIGURE9_LINK, GAINS, MODELS, SCALES,
};
pub use results::{
    average_rows, curve, sets_of, verdicts, FrontierAverage, FrontierResults, FrontierRow, Verdict,
};
pub use run::{run, run_if_asked};
