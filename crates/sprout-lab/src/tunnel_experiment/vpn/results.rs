//! What the `vpn` experiment produced (`vpn.json`, `vpn-rate.csv`, `vpn-lte.csv`).

use serde::{Deserialize, Serialize};

/// The arms of both parts, in the order they run and are shown.
pub const ARMS: [&str; 3] = ["direct", "boringtun", "sprout"];

/// One arm of the line-rate part (a row of `vpn-rate.csv`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VpnRateRow {
    /// "direct", "boringtun" or "sprout" (SproutTunnel).
    pub arm: String,
    /// The constant link's rate, each way, Mbit/s.
    pub link_mbps: f64,
    /// The download's goodput (application bytes) over the measured window, Mbit/s.
    pub goodput_mbps: f64,
    /// Bytes the download received over the whole run (the CPU figures' denominator).
    pub bytes: u64,
    /// CPU seconds (user + system) of the tunnel's server end over the run; `None` direct.
    pub server_cpu_s: Option<f64>,
    /// CPU seconds of the tunnel's client end (mobile namespace) over the run.
    pub client_cpu_s: Option<f64>,
    /// The server end's CPU seconds per GB (10^9 bytes) downloaded.
    pub server_cpu_s_per_gb: Option<f64>,
    /// The client end's CPU seconds per GB downloaded.
    pub client_cpu_s_per_gb: Option<f64>,
    /// The run's files: this prefix + `.ROLE.out` etc.
    pub files: String,
}

impl VpnRateRow {
    /// A row from a run's goodput (kbit/s), bytes and tunnel ends' CPU seconds.
    pub fn new(
        arm: &str,
        link_mbps: f64,
        goodput_kbps: f64,
        bytes: u64,
        cpu: Option<(f64, f64)>,
        files: String,
    ) -> VpnRateRow {
        let per_gb = |s: f64| (bytes > 0).then(|| s / (bytes as f64 / 1e9));
        VpnRateRow {
            arm: arm.into(),
            link_mbps,
            goodput_mbps: goodput_kbps / 1000.0,
            bytes,
            server_cpu_s: cpu.map(|c| c.0),
            client_cpu_s: cpu.map(|c| c.1),
            server_cpu_s_per_gb: cpu.and_then(|c| per_gb(c.0)),
            client_cpu_s_per_gb: cpu.and_then(|c| per_gb(c.1)),
            files,
        }
    }
}

/// One flow in one direction of one arm of the LTE part (a row of `vpn-lte.csv`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VpnFlowRow {
    /// "direct", "boringtun" or "sprout".
    pub arm: String,
    /// "cubic" (the download), "paced" (the interactive stream) or "call" (WebRTC video).
    pub flow: String,
    /// "down" (relay to mobile, the download's direction) or "up".
    pub direction: String,
    /// Rate received over the measured window, kbit/s (the call's: over its media time).
    pub rate_kbps: f64,
    /// Median one-way delay (the call's: capture to decode) of what was sent in the window,
    /// ms; `None` for the download.
    pub delay_p50_ms: Option<f64>,
    /// 95th-percentile delay, ms; `None` for the download.
    pub delay_p95_ms: Option<f64>,
}

/// Everything the `vpn` experiment produced (`vpn.json`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct VpnResults {
    /// `boringtun-cli --version`'s answer.
    pub boringtun_version: String,
    /// `wg --version`'s answer.
    pub wg_version: String,
    /// Length of each line-rate run, s.
    pub rate_duration_s: f64,
    /// Start of the line-rate runs' window, s.
    pub rate_skip_s: f64,
    /// The line-rate part's rows (none if it did not run).
    pub rate: Vec<VpnRateRow>,
    /// The LTE part's link pair (`None` if it did not run).
    pub lte_link: Option<String>,
    /// Length of each LTE run, s.
    pub lte_duration_s: f64,
    /// Start of the LTE runs' window, s.
    pub lte_skip_s: f64,
    /// The LTE part's rows.
    pub lte: Vec<VpnFlowRow>,
    /// Wall time of the experiment, s.
    pub wall_s: f64,
}
