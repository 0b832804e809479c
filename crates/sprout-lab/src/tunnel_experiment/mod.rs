//! The SproutTunnel experiments (paper §4.3 and §5.7), run in real time through the link
//! emulator: `sprout eval --emulate --experiments tunnel,tunnel-cost`.
//!
//! **`tunnel`, the isolation experiment.** Through the emulator replaying Verizon-LTE-short
//! (both directions, looped, an unlimited drop-tail queue as in the paper's Cellsim), two flows
//! run at once: a kernel Cubic bulk download (`sprout tcp server` outside, `sprout tcp client
//! --direction down --cc cubic` in the mobile namespace) and a two-way interactive stream, the
//! stand-in for the paper's Skype call (`sprout interactive`: paced UDP, 500 kbit/s each way,
//! every packet stamped with its send time on `CLOCK_MONOTONIC`, so each packet's one-way delay
//! is exact). First both flows go straight over the emulated link ("direct"); then, in a fresh
//! emulator, both go to the server's tunnel address through `sprout tunnel server` (host
//! namespace, listening on the emulator's outside address) and `sprout tunnel client` (mobile
//! namespace) ("tunnel"). Measured over `[skip, duration)` of each run: the bulk flow's
//! goodput (from the tcp client's per-second byte counts), the interactive flow's goodput each
//! way (payload received in the window) and its median and 95th-percentile one-way delay each
//! way (packets sent in the window). The paper's numbers (Verizon LTE downlink, Cubic with
//! Skype) are the downlink's: the table's interactive rows are the direction of the download
//! (relay to mobile), the other direction is reported beside them.
//!
//! **The WebRTC call** (issue 25; on unless [`TunnelOptions::call`] is off, `--no-call`, which
//! skips its runs): a real aiortc video call ([`crate::webrtc_call`], `PYTHON -m
//! sprout.webrtc_call`) gets a pair of runs of its own after the paced stream's, direct
//! (`call-direct`) then through the tunnel (`call-tunnel`), each with the Cubic download
//! competing and the call as the only interactive flow: the paper's §5.7 setup with a real
//! call, while the paced stream's runs stay as they were without it (two flows, no third).
//! Its answer end runs on the relay side and its offer end in the mobile namespace, each
//! bound to the address the run's flows use there (direct: the emulator's outside address and
//! the namespace's; tunnel: the server's and the client's tunnel addresses, so its media goes
//! through the tunnel), signalling over a Unix-domain socket in `tunnel/`. It runs
//! [`CALL_LINGER_S`] longer than the download so that frames captured in the window and still
//! queued arrive. Its frame delay p50/p95 (capture to decode, frames captured in the window),
//! received rate each way, longest freeze and the download's goodput in its runs join the
//! table and report, with checks: its p95 down through the tunnel at most
//! [`MAX_CALL_DELAY_SHARE`] of direct, up at most [`MAX_OTHER_DELAY_SHARE`] of direct (as the
//! paced stream's up: issue 36, the direction without the download no worse than the bare
//! link), and its received rate at least [`MIN_CALL_RATE_SHARE`] of direct's each way. A Python that cannot hold the call fails the experiment
//! before anything runs, saying how to install it.
//!
//! **Time.** With the defaults `tunnel` takes four runs of 120 s plus 30 s of linger each
//! (600 s of runs; with `--no-call` two, 300 s), and each run's start-up (emulator, tunnel,
//! the call's connection) and shutdown add a few seconds: about 10 minutes in all (608 s of
//! wall time in one run on a loaded machine). `tunnel-cost` adds a 30 s run.
//!
//! **`tunnel-cost`.** A kernel Cubic download alone through the tunnel over a constant
//! 10 Mbit/s emulated link (both directions), 30 s: its goodput (application bytes per
//! second) as a share of the link's capacity, measured after [`COST_SKIP_US`] of start-up.
//!
//! Outputs (in the evaluation's output folder): `tunnel.csv`, `tunnel.json`,
//! `tunnel-delay.svg` (the interactive flow's delay over time in both runs),
//! `tunnel-delay.csv` (its points), `tunnel-cost.csv`, `tunnel-cost.json`, and a
//! `## SproutTunnel` section merged into `report.md` (other sections are kept). Every peer's
//! stdout and stderr, the per-packet CSVs of the interactive stream, the call's per-frame
//! CSVs (`RUN.call-offer.frames.csv`: down, `RUN.call-answer.frames.csv`: up, in the call's
//! runs) and the run's
//! server key are in `tunnel/` beside them (`RUN.ROLE.out`, `RUN.ROLE.err`; RUN is `direct`,
//! `tunnel`, `call-direct` or `call-tunnel`).
//!
//! [`aqm_stream`] is the `aqm` experiment's emulated run: the paced stream beside the
//! download in one FQ-CoDel queue, against the pair through the tunnel.
//!
//! Modules: [`options`] (what to run), [`results`] (what it produced), [`mod@run`] (both
//! experiments and their outputs), `isolation` and `cost` (each experiment), `one_run` (one
//! run through a fresh emulator), `peers` (the peer processes), `commands` (their command
//! lines), `call` (the WebRTC call's ends and outputs), `analysis` and `checks` (the
//! measurements, table and acceptance checks), [`report`] (the files and texts), [`error`](crate::error) (shared by the lab).

mod analysis;
pub mod aqm_stream;
mod call;
mod checks;
mod commands;
mod cost;
mod isolation;
mod one_run;
pub mod options;
mod peers;
pub mod report;
pub mod results;
pub mod run;
pub mod vpn;

pub use options::{
    TunnelOptions, CALL_LINGER_S, COST_RATE_MBPS, COST_SKIP_US, DEFAULT_COST_DURATION_US,
    DEFAULT_TUNNEL_DURATION_US, DEFAULT_TUNNEL_SKIP_US, DELAY_BIN_S, INTERACTIVE_LINGER_S,
    INTERACTIVE_PAYLOAD_BYTES, INTERACTIVE_RATE_KBPS, MAX_CALL_DELAY_SHARE, MAX_DELAY_SHARE,
    MAX_OTHER_DELAY_SHARE, MIN_BULK_SHARE, MIN_CALL_RATE_SHARE, MIN_COST_SHARE,
    MIN_INTERACTIVE_SHARE, TUNNEL_CLIENT_PROBE, TUNNEL_CONFIDENCE, TUNNEL_LINK, TUNNEL_MODEL,
    TUNNEL_PROBE,
};
pub use report::{cost_text, isolation_text, merge_section, report_section};
pub use results::{
    CallFlow, CallRun, CostResults, FlowResult, IsolationResults, IsolationRun, TunnelCheck,
    TunnelRow,
};
pub use run::run;
