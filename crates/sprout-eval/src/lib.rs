//! The paper's evaluation over the simulator: its experiments on every link and scheme, the
//! published values beside ours, `report.md`, the SVG charts and parameter sweeps.
//!
//! Modules from the bottom up: [`error`] (the crate's one error type), [`paper`] (the paper's
//! published values), [`experiment`] (what each experiment runs), [`results`] (the rows it
//! produces; [`interactive`]: the application streams' experiment; [`rates`]: Sprout at today's
//! link rates; [`calibration`]: how well the forecasts are calibrated; [`frontier`]: each model's
//! utilization-delay curve against Sprout-EWMA's, the paper's open question; [`aqm`]: the schemes
//! over finite buffers and AQMs, the paper's CoDel comparison made whole), [`traces`] (the links it
//! runs on), [`chart`] and [`trace_plot`] (SVG), [`report`] (every output file),
//! [`output_dir`] (the output folder and what earlier runs left there), [`eval`] (runs the
//! experiments and writes the report: the top), [`parallel`] (the opt-in experiments' runner), [`sweep`] (grids of single simulations) and,
//! with the `cli` feature, `cli` (the flags `sprout eval` and the `sprout-eval` binary share).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod aqm;
pub mod calibration;
pub mod chart;
#[cfg(feature = "cli")]
pub mod cli;
pub mod error;
pub mod eval;
pub mod experiment;
pub mod frontier;
pub mod interactive;
pub mod output_dir;
pub mod paper;
pub mod parallel;
pub mod progress;
pub mod rates;
pub mod report;
pub mod results;
pub mod sweep;
pub mod trace_plot;
pub mod traces;

pub use error::EvalError;
