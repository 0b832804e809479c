//! `sprout bench load`: one `sprout server` holding many concurrent sessions on loopback.
//!
//! The server runs as its own process (so its CPU time and memory are its own, read from
//! `/proc`). The clients run inside the bench process, one [`sprout_net::Endpoint`] each (so
//! the forecast tables are built once, and a few shared threads do the application's work
//! instead of several threads per client): they speak `sprout client`'s application protocol
//! ([`sprout_net::message`]) exactly: the HELLO as the handshake's greeting, the server's
//! ACCEPT, a paced stream of timestamped DATA in both directions for the duration, BYE three
//! times with the totals. One pacing thread sends every client's DATA at its due time (a
//! min-heap of next send times); one receiving thread sweeps every client's received
//! datagrams. The clients start spread over a ramp; each session's duration runs from its own
//! ACCEPT. While the sessions run, a flood of bogus handshake initiations (valid header,
//! random body) hits the server's port.
//!
//! At the end every session's delivered DATA messages are checked against what its sender
//! released, each way: downlink released = the server's DATA count (its per-session summary,
//! or its BYE), delivered = DATA the client received; uplink released = the client's DATA
//! sent, delivered = the server's per-session `data_received` (the server's summaries name
//! each session's client by its address, which is the bench's client socket). The server's
//! CPU and memory per session are reported. Exits non-zero when a session was lost or
//! delivered less than `--tolerance` of what was released.

mod clients;
mod control;
mod error;
mod flood;
mod options;
mod procfs;
mod report;
mod run;
mod server;
mod shared;

pub use control::ClientEnd;
pub use error::LoadError;
pub use options::LoadOptions;
pub use report::{LoadReport, SessionRow};
pub use run::run;
