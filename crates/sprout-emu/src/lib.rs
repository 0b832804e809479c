//! The trace-driven link emulator (the paper's Cellsim), in the spirit of
//! `mm-delay 20 mm-link UP DOWN -- cmd`: a command runs in a "mobile" network namespace whose
//! only way out is a pair of TUN devices, and every packet crossing between them goes through a
//! [`sprout_link::Link`] replaying a cellular trace (uplink: mobile → outside; downlink:
//! outside → mobile), logged in mahimahi's mm-link format if asked.
//!
//! - [`emulator`]: [`Emulator`] and its configuration, the library entry point.
//!
//! The system calls (namespaces, TUN devices, clocks, signals, processes) are [`sprout_os`]'s;
//! callers that run a command under the emulator use its `child` and `signals` modules.
//! - `event_loop`: the single thread moving packets between devices and links.
//! - [`stats`]: counters, latency histograms and per-packet records.
//! - [`leftovers`]: what of an emulator is still visible on the host (clean-up checks).
//! - [`fidelity`]: measurements of the emulator's own accuracy (utilization under a flood,
//!   extra delay of a light probe).
//!
//! Nothing persistent is created: if the emulator dies, even by `SIGKILL`, the kernel removes
//! the TUN devices, their addresses and routes, and the namespace (commands spawned in it get
//! `SIGKILL` through their parent-death signal). Times are microseconds (`_us`) or nanoseconds
//! (`_ns`) of `CLOCK_MONOTONIC`; link time 0 is when the emulator starts. Needs root (or
//! `CAP_NET_ADMIN` and `CAP_SYS_ADMIN`).

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod addressing;
pub mod emulator;
mod event_loop;
pub mod fidelity;
pub mod leftovers;
pub mod stats;

pub use emulator::{
    check_privileges, EmuError, Emulator, EmulatorConfig, EmulatorReport, ENV_MAHIMAHI_BASE,
    ENV_MOBILE, ENV_OUTSIDE, MTU_BYTES,
};
pub use stats::{DeliveryRecord, DirectionReport, DirectionStats, EmulatorStats, Histogram};
