//! Every integration test of sprout-link in one test binary: each file of `tests/` is a
//! module here, so the tests link against the dependency graph once, not once per file.
//! A test's name is `FILE::TEST` (e.g. `codel_loss_tests::...`).
//! The root is not `main.rs`: proptest looks for `lib.rs`/`main.rs` to place its
//! regression files, which stay beside each file as `FILE.proptest-regressions`.

#![forbid(unsafe_code)]

mod codel_loss_tests;
mod ecn_tests;
mod fq_codel_tests;
mod link_tests;
mod mmlog_tests;
mod real_traces;
mod scale_tests;
mod shaping_tests;
mod synthetic_tests;
mod trace_stats_tests;
mod trace_tests;
