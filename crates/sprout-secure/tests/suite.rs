//! Every integration test of sprout-secure in one test binary: each file of `tests/` is a
//! module here, so the tests link against the dependency graph once, not once per file.
//! A test's name is `FILE::TEST` (e.g. `adversarial::...`).
//! The root is not `main.rs`: proptest looks for `lib.rs`/`main.rs` to place its
//! regression files, which stay beside each file as `FILE.proptest-regressions`.

#![forbid(unsafe_code)]

mod adversarial;
mod caps_and_cookies;
mod cipher_interop;
mod close;
mod common;
mod flood;
mod half_open;
mod keys;
mod redial;
mod rekey;
mod roundtrip;
mod sessions;
mod unchanged;
