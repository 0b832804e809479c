//! Every integration test of sprout-tunnel in one test binary: each file of `tests/` is a
//! module here, so the tests link against the dependency graph once, not once per file.
//! A test's name is `FILE::TEST` (e.g. `flow_queue_props::...`).
//! The root is not `main.rs`: proptest looks for `lib.rs`/`main.rs` to place its
//! regression files, which stay beside each file as `FILE.proptest-regressions`.

#![forbid(unsafe_code)]

mod common;
mod endings;
mod flow_queue_props;
mod forwarding;
mod pair;
mod reconnect;
