//! libsprout: Sprout embedded in C applications. A shared and a static C library (`-lsprout`)
//! with the header `include/sprout.h`, generated from this crate by cbindgen
//! (`tools/sprout-header`, run by CI, fails when the checked-in header differs from the code;
//! `cargo run --manifest-path tools/sprout-header/Cargo.toml -- --write` rewrites it).
//!
//! This is the sans-IO layer: a secure Sprout connection object ([`api::SproutConn`]),
//! client side or server side of one session, that the application feeds with the datagrams
//! it receives and the current time, and that hands back datagrams to send, the next
//! deadline, the application messages received (with their send time), the window and the
//! forecast, and events. It is a thin layer over the pieces the runtime of sprout-net uses,
//! unchanged: sprout-secure's `Client` (with its redial machine) and `Server`, and
//! sprout-core's `Connection` ([`conn::Conn`] glues them); application messages are the DATA
//! messages of `sprout client` ([`sprout_net::message`]).
//!
//! | module | what |
//! |---|---|
//! | [`api`] | the C functions and types |
//! | [`conn`] | [`conn::Conn`], the connection in safe Rust |
//! | [`boundary`] | status codes, the last error message, the panic guard, pointer checks |
//!
//! The C boundary: every entry point catches panics ([`std::panic::catch_unwind`]) and returns
//! [`boundary::SproutStatus::Internal`]; errors are status codes plus a per-thread message
//! (`sprout_last_error`); NULL pointers and impossible lengths are errors. The `unsafe` blocks
//! (turning the caller's pointers into references, and freeing a connection) are in
//! [`boundary`] and `sprout_conn_free`, each with its SAFETY comment. See docs/embedding.md.
// The workspace denies unsafe code (Cargo.toml's [workspace.lints]); the C boundary needs it
// (raw pointers from C, `#[no_mangle]`), each block small and with its SAFETY comment.
#![allow(unsafe_code)]
// The entry points take raw pointers from C and are safe Rust functions on purpose: each
// checks NULL and lengths, and the rest of the C caller's contract is in the header.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

pub mod api;
pub mod boundary;
pub mod conn;
pub mod listener;

pub use api::*;
pub use boundary::SproutStatus;
