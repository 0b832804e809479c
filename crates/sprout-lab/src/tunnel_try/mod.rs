//! `sprout tunnel try`: the tunnel on one machine. Two fresh network namespaces, a relay's
//! and a client's, with the trace-driven link emulator between them (the relay's side is the
//! emulator's own namespace, the client's its mobile namespace); `sprout tunnel server` and
//! `sprout tunnel client` (this executable, with keys made for the run) at either end; then,
//! through the tunnel, ICMP pings from the client to the relay's tunnel address (alone first,
//! then beside a download) and a TCP download from the relay for a few seconds. It reports
//! the ping round trips, the download's rate and the tunnel ends' own exit counters.
//!
//! Nothing it makes outlives it: the namespaces are anonymous (held by its threads and
//! processes, never bind-mounted under `/var/run/netns`), the TUN devices, their addresses and
//! routes live inside them, the tunnel ends die with the thread that started them
//! (`PR_SET_PDEATHSIG`), and the keys are in a folder of its own that it removes. It stops
//! early on SIGINT, SIGTERM or SIGHUP, cleaning up the same way, and at its start it removes
//! what an earlier run killed outright (SIGKILL) may have left: processes marked as that run's
//! and its key folder ([`leftovers`]).
//!
//! Modules: [`options`] (what to run), [`report`] (what it measured), `run` (the run),
//! `measure` (the ping and the download), `peers` (the tunnel's two processes),
//! [`leftovers`] (the marks and the sweep).

pub mod leftovers;
mod measure;
pub mod options;
mod peers;
pub mod report;
mod run;

pub use options::{TryLink, TryOptions, DEFAULT_DELAY_MS, DEFAULT_DURATION_S, DEFAULT_RATE_MBPS};
pub use report::{EndTotals, PingStats, TryReport};
pub use run::run;
