//! Every integration test of sprout-sim in one test binary: each file of `tests/` is a
//! module here, so the tests link against the dependency graph once, not once per file.
//! A test's name is `FILE::TEST` (e.g. `app_traffic::...`).
//! The root is not `main.rs`: proptest looks for `lib.rs`/`main.rs` to place its
//! regression files, which stay beside each file as `FILE.proptest-regressions`.

#![forbid(unsafe_code)]

mod app_traffic;
mod ecn;
mod gcc;
mod recorded;
mod wide_forecast_recorded;
mod wide_scheme;
