//! Fuzz harnesses on stable Rust for every decoder of Sprout.
//!
//! `cargo-fuzz` needs a nightly compiler and `cargo-afl` an AFL installation; this crate needs
//! neither: a small mutation-based driver ([`runner`]) feeds each [`Target`] random bytes and
//! mutations of well-formed seeds (bit flips, boundary integers, cuts, splices), runs it under
//! `catch_unwind`, and reports any panic with the seed and the input in hex, so it reproduces.
//!
//! The `fuzz` profile is the release profile with overflow checks and debug assertions on, so
//! that arithmetic overflow on hostile input panics and is reported rather than wrapping:
//!
//! ```text
//! cargo run --profile fuzz -p sprout-fuzz -- all --iterations 10000000
//! ```
//!
//! | target | what it drives |
//! |---|---|
//! | [`wire`] | `sprout_core::wire::decode` on any bytes |
//! | [`connection`] | `sprout_core::Connection::handle_datagram` with decoded-but-hostile headers, between real traffic |
//! | [`secure`] | the security layer's open path (`sprout_secure::Server::handle`, `Client::handle`): handshakes, data, cookie replies, refusals, closes |
//! | [`message`] | `sprout_net::message::Message::decode`, the application messages of `sprout server` / `client` |
//! | [`trace`] | `sprout_link::Trace::parse` (mahimahi traces) and `sprout_link::MmLog::parse` (mm-link logs) |
//! | [`packet`] | `sprout_tunnel::packet::parse`, SproutTunnel's IP header reader, and `sprout_link::flow::ip_flow_key`, the emulator's flow key |
//! | [`control`] | `sprout_tunnel::control::{Greeting, Control}::decode`, SproutTunnel's greeting and control messages |
//! | [`capi`] | libsprout's C entry points (`sprout_conn_recv`, `_on_timeout`, `_send`, `_poll_transmit`, `_read`, `_close`) on an established pair: hostile and replayed datagrams, any times, small buffers |
//! | [`saturator`] | `sprout_saturator::decode` (the Saturator's datagrams, driving a recorder, a sender and a reassembly), `decode_result` (a transferred recording), and `sprout traces convert`'s CSV reader |
#![forbid(unsafe_code)]

pub mod capi;
pub mod connection;
pub mod control;
pub mod message;
pub mod packet;
pub mod runner;
pub mod saturator;
pub mod secure;
pub mod trace;
pub mod wire;

pub use runner::{run, Report, Target};

/// Every target, by name.
pub fn targets() -> Vec<Box<dyn Target>> {
    vec![
        Box::new(wire::WireTarget::default()),
        Box::new(connection::ConnectionTarget::new()),
        Box::new(secure::SecureTarget::new()),
        Box::new(message::MessageTarget),
        Box::new(trace::TraceTarget),
        Box::new(trace::MmLogTarget),
        Box::new(packet::PacketTarget),
        Box::new(control::ControlTarget),
        Box::new(saturator::SaturatorTarget::default()),
        Box::new(saturator::ResultTarget),
        Box::new(capi::CapiTarget::new()),
        Box::new(saturator::CsvTarget),
    ]
}
