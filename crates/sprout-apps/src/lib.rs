//! The programs the `sprout` command runs, as library code: Sprout transfers between a server
//! and clients, the load benchmark, the interactive stream and kernel-TCP transfers.
//!
//! Each program's options are a clap `Args` struct that the CLI parses as it is, and each
//! renders the command line that runs it (`to_args`: the subcommand words, then `--flag=value`
//! for every option), so that a program starting `sprout` in another process (the lab's
//! experiments in network namespaces) names no flag by hand; the CLI's tests parse what every
//! builder renders and get the same options back.
//!
//! | module | command | options (builders) | entry points |
//! |---|---|---|---|
//! | [`transfer`] | `sprout server`, `sprout client` | [`transfer::ServerOptions`], [`transfer::ClientOptions`] | [`transfer::serve`], [`transfer::run`] |
//! | [`kernel_tcp`] | `sprout tcp server\|client` | [`kernel_tcp::TcpServerOptions`], [`kernel_tcp::TcpClientOptions`] | [`kernel_tcp::serve`], [`kernel_tcp::run`] |
//! | [`interactive`] | `sprout interactive server\|client` | [`interactive::InteractiveServerOptions`], [`interactive::InteractiveClientOptions`] | [`interactive::serve`], [`interactive::run`] |
//! | [`load`] | `sprout bench load` | [`load::LoadOptions`] | [`load::run`] |
//!
//! [`app_delay`] scores a paced stream at its receiver: the application-level delay (creation
//! to delivery, the sender's queue included) the transfer's and the interactive stream's
//! summaries report.
#![forbid(unsafe_code)]

pub mod app_delay;
mod args;
pub mod choices;
pub mod interactive;
pub mod kernel_tcp;
pub mod load;
pub mod transfer;
