//! Every integration test of sprout-core in one test binary: each file of `tests/` is a
//! module here, so the tests link against the dependency graph once, not once per file.
//! A test's name is `FILE::TEST` (e.g. `attacks::...`).
//! The root is not `main.rs`: proptest looks for `lib.rs`/`main.rs` to place its
//! regression files, which stay beside each file as `FILE.proptest-regressions`.

#![forbid(unsafe_code)]

mod attacks;
mod authors_arithmetic;
mod authors_fixtures;
mod common;
mod idle_then_send;
mod stream_overhead;
mod wide_mixture;
mod wide_model;
mod wide_vol;
