//! `sprout tcp server` and `sprout tcp client`: bulk transfers over the kernel's own TCP, with
//! the congestion controller chosen per socket (`TCP_CONGESTION`), as the real peers of the
//! emulated evaluation (the paper compared Sprout with Cubic, Reno and others over Cellsim).
//!
//! The client opens one connection per loaded direction and starts each with a one-line request
//! `SPROUT-TCP <up|down> <controller> <seconds>\n`. For `up` the client sends and the server
//! discards; for `down` the server sends and the client discards. The sender of each connection
//! sets the requested controller on its socket. Both sides print per-second lines and a summary.

mod client;
mod error;
mod options;
mod request;
mod server;
mod transfer;

pub use client::run;
pub use error::{RequestError, TcpError};
pub use options::{TcpClientOptions, TcpOptions, TcpRole, TcpServerOptions};
pub use request::Request;
pub use server::serve;
