//! The Saturator on UDP sockets (Linux): `sprout saturator server` ([`server`]) and
//! `sprout saturator client` ([`client`]) as library calls, with typed options
//! ([`ServerOptions`], [`ClientOptions`]) and errors ([`SaturatorError`]).
//!
//! The client runs at the mobile end and connects to the server. Whichever end sends a
//! direction keeps that direction's queue backlogged with MTU-sized UDP packets, a window of
//! packets in flight adjusted so that the measured RTT stays between the low and high marks;
//! the other end records when each packet arrives (kernel receive timestamps,
//! `SO_TIMESTAMPNS`, on `CLOCK_MONOTONIC`) and sends feedback: over the same path by default
//! (piggybacked on its own data when it sends some), or over a second path
//! ([`ClientOptions::feedback`]). Both sides print a line per second and a summary. A
//! recording survives loss, reordering, duplicates and outages of any length; stray or
//! malformed datagrams are counted and ignored.
//!
//! Return-routability: the server sends nothing larger than a hello to an address that has
//! not proven it receives what is sent there. Each path (data, feedback) proves its address by
//! sending back the cookie of the server's 32-byte challenge in a padded (1200-byte or
//! larger) hello ([`crate::cookie`]); only then does the session start (or move a path to a
//! new address), and only datagrams from those addresses count. The Saturator uses a cookie
//! rather than the Noise keys of `sprout-secure`: it is a measurement tool run with no key
//! distribution, its data packets must stay MTU-sized plain UDP for the recording to be
//! faithful, and the attack to remove is amplification toward an address that never asked,
//! which proving the address removes.

mod client;
mod client_run;
mod error;
mod fetch;
mod options;
mod output;
mod server;
mod server_session;
mod socket;

pub use client::{client, ClientSummary};
pub use error::SaturatorError;
pub use options::{
    payload_for, seconds, ClientOptions, ServerOptions, DEFAULT_IDLE_TIMEOUT_S, DEFAULT_MAX_MTU,
    DEFAULT_MAX_RECORDING_S,
};
pub use output::{DirProgress, Progress};
pub use server::{server, ServerSummary};
