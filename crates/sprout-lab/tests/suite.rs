//! Every integration test of sprout-lab in one test binary: each file of `tests/` is a
//! module here, so the tests link against the dependency graph once, not once per file.
//! A test's name is `FILE::TEST` (e.g. `saturator_sim::...`).
//! The root is not `main.rs`: proptest looks for `lib.rs`/`main.rs` to place its
//! regression files, which stay beside each file as `FILE.proptest-regressions`.

#![forbid(unsafe_code)]

mod saturator_sim;
mod tunnel_args;
