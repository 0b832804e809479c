//! Every integration test of sprout-emu in one test binary: each file of `tests/` is a
//! module here, so the tests link against the dependency graph once, not once per file.
//! `fidelity.rs`, timing-sensitive, is a test binary of its own (Cargo.toml).
//! A test's name is `FILE::TEST` (e.g. `cleanup::...`).
//! The root is not `main.rs`: proptest looks for `lib.rs`/`main.rs` to place its
//! regression files, which stay beside each file as `FILE.proptest-regressions`.

#![forbid(unsafe_code)]

mod cleanup;
mod smoke;
