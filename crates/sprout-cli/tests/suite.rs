//! Every integration test of sprout-cli in one test binary: each file of `tests/` is a
//! module here, so the tests link against the dependency graph once, not once per file.
//! A test's name is `FILE::TEST` (e.g. `bounded_inputs::...`).
//! The root is not `main.rs`: proptest looks for `lib.rs`/`main.rs` to place its
//! regression files, which stay beside each file as `FILE.proptest-regressions`.

#![forbid(unsafe_code)]

mod bounded_inputs;
mod cli;
mod common;
mod emulate_cli;
mod endings_cli;
mod first_hour;
mod kernel_qdiscs;
mod killed_eval;
mod link_cli;
mod load_cli;
mod net_cli;
mod one_way_download;
mod saturator_cli;
mod saturator_endings;
mod sim_app_cli;
mod traces_cli;
mod tunnel_cli;
mod tunnel_namespaces;
mod vpn_cli;
mod webrtc_emulated;
