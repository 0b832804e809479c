//! The `vpn` experiment (issue 36, point 6): SproutTunnel against the VPN its users would
//! otherwise run, WireGuard, as boringtun (Cloudflare's userspace WireGuard, `boringtun-cli`
//! configured with `wg`), in the same namespaces over the same emulated links:
//! `sprout eval --emulate --experiments vpn` (both parts), `vpn-rate` or `vpn-lte` (one).
//!
//! **Line rate (`vpn-rate`).** A constant [`VPN_RATE_MBPS`] emulated link both ways: one kernel
//! Cubic download alone, direct, through boringtun and through SproutTunnel (its own default
//! settings, as a user runs it): its goodput over the window after [`VPN_RATE_SKIP_US`] and each
//! tunnel end's CPU seconds (user + system, from `/proc/PID/stat`) per GB downloaded.
//!
//! **The §5.7 link (`vpn-lte`).** Verizon-LTE-short (or `--links`), as the `tunnel` experiment:
//! the Cubic download with the paced interactive stream, then (unless `--no-call`) with the
//! WebRTC call, direct, through boringtun and through SproutTunnel (the `tunnel` experiment's
//! settings): each flow's rate and delay p50/p95 both ways.
//!
//! It is opt-in (not in `all`): without `boringtun-cli` (`--boringtun PATH`, else on `PATH`)
//! or `wg` it fails at once, saying how to install them. Each arm's run is a run of the
//! tunnel experiment's ([`super::one_run`]), with boringtun's ends started in place of
//! SproutTunnel's; everything the run made (namespaces, devices, processes, boringtun's
//! control sockets) is removed at its end and on error.
//!
//! Outputs (in the evaluation's output folder): `vpn-rate.csv`, `vpn-lte.csv`, `vpn.json`,
//! `vpn.svg` and a `## Against WireGuard` section of report.md; every peer's output (and the
//! WireGuard keys) in `tunnel/` as `vpn-PART-ARM.ROLE.out`.
//!
//! Modules: [`options`] (what to run), `wireguard` (boringtun's ends), [`results`] (what it
//! produced), [`mod@run`] (the runs), [`report`] (table, CSV, JSON, chart, section).

mod chart;
pub mod options;
pub mod report;
pub mod results;
pub mod run;
mod wireguard;

pub use options::{
    VpnOptions, BORINGTUN_ENV, VPN_RATE_DURATION_US, VPN_RATE_MBPS, VPN_RATE_SKIP_US, VPN_SECTION,
};
pub use results::{VpnFlowRow, VpnRateRow, VpnResults};
pub use run::run;
