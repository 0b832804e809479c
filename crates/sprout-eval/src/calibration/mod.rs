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
//!
//! Modules: `ticks` (a direction's ticks, the classes of misses, one estimator's tally) and
//! `run` (the runs over every model, confidence and direction, their rows and averages).

mod run;
mod ticks;

pub use run::{
    run, run_if_asked, CalibrationAverage, CalibrationResults, CalibrationRow, CalibrationSettings,
    CONFIDENCES, MODELS, REPORT_HORIZONS,
};
pub use ticks::{
    measure, MissClass, Tally, TickCounts, OUTAGE_RUN_TICKS, RATE_CHANGE_FRACTION, RECENT_TICKS,
};
