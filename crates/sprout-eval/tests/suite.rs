//! Every integration test of sprout-eval in one test binary: each file of `tests/` is a
//! module here, so the tests link against the dependency graph once, not once per file.
//! A test's name is `FILE::TEST` (e.g. `calibration::...`).
//! The root is not `main.rs`: proptest looks for `lib.rs`/`main.rs` to place its
//! regression files, which stay beside each file as `FILE.proptest-regressions`.

#![forbid(unsafe_code)]

mod aqm;
mod calibration;
mod chart_labels;
mod frontier;
mod interactive;
mod metrics_charts;
mod rates;
mod sim_e2e;
mod tcp_seeds;
