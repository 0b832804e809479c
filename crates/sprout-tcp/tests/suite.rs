//! Every integration test of sprout-tcp in one test binary: each file of `tests/` is a
//! module here, so the tests link against the dependency graph once, not once per file.
//! A test's name is `FILE::TEST` (e.g. `bbr::...`).
//! The root is not `main.rs`: proptest looks for `lib.rs`/`main.rs` to place its
//! regression files, which stay beside each file as `FILE.proptest-regressions`.

#![forbid(unsafe_code)]

mod bbr;
mod common;
mod compound;
mod copa;
mod cubic;
mod determinism;
mod ecn;
mod flow_limited;
mod handshake;
mod ledbat;
mod reliability;
mod reno;
mod sanity;
mod vegas;
