//! Every integration test of sprout-net in one test binary: each file of `tests/` is a
//! module here, so the tests link against the dependency graph once, not once per file.
//! A test's name is `FILE::TEST` (e.g. `async_api::...`).
//! The root is not `main.rs`: proptest looks for `lib.rs`/`main.rs` to place its
//! regression files, which stay beside each file as `FILE.proptest-regressions`.

#![forbid(unsafe_code)]

mod async_api;
mod common;
mod endings;
mod hostile;
mod loopback;
mod many_sessions;
mod reconnect;
mod roaming;
mod session_caps;
mod socket_buffer;
