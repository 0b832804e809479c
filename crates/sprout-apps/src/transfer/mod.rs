//! `sprout server` and `sprout client`: Sprout over real UDP, every datagram sealed by the
//! security layer, a saturating (bulk) or paced transfer in one or both directions, with a line
//! per second and a summary.
//!
//! The client greets the server with a HELLO (direction, mode, rate, duration, scheme,
//! confidence; see [`sprout_net::message`]) carried inside its encrypted handshake, so that the
//! server builds the session's connection with the same scheme; the server answers ACCEPT and
//! both sides send timestamped DATA messages (CLOCK_REALTIME, so one-way delays are exact when
//! both ends share a clock) for the duration, then BYE with their totals. One server serves
//! many clients at once, each session on its own thread, on one UDP socket.
//!
//! A paced DATA message is stamped when the pacer creates it and handed to the connection at
//! once; when the window holds it back it waits in the connection's send queue, so its one-way
//! delay, and the summary's application-level delay ([`crate::app_delay`]: offered and delivered
//! kbit/s, p50/p95/p99, the shares within 100, 150 and 300 ms, a message never delivered
//! counted as infinitely late), include the sender's queue.

mod address;
mod client;
mod end;
mod error;
mod limits;
mod lines;
mod options;
mod peer;
mod plan;
mod server;
mod session;

pub use client::{run, run_stream};
pub use end::SessionEnd;
pub use error::TransferError;
pub use limits::{BYE_COPIES, CLIENT_GRACE, PACED_PAYLOAD, SILENCE};
pub use options::{ClientOptions, ServerOptions};
pub use server::serve;
