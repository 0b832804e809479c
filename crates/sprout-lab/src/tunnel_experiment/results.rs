//! What the tunnel experiments produced (`tunnel.json`, `tunnel-cost.json`).

use serde::{Deserialize, Serialize};

use crate::webrtc_call::CheckVersions;

/// The interactive flow in one direction of one run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FlowResult {
    /// "down" (relay to mobile, the bulk download's direction) or "up".
    pub direction: String,
    /// What the sender sent over its whole sending time, kbit/s of payload.
    pub offered_kbps: f64,
    /// Payload received within the measured window, per second of it, kbit/s.
    pub throughput_kbps: f64,
    /// Packets sent within the window that arrived.
    pub packets: u64,
    /// Packets sent within the window (between the first and last that arrived) that never did.
    pub lost: u64,
    /// Median one-way delay of the packets sent within the window, ms.
    pub delay_p50_ms: f64,
    /// 95th-percentile one-way delay of the packets sent within the window, ms.
    pub delay_p95_ms: f64,
    /// Highest one-way delay of the packets sent within the window, ms.
    pub delay_max_ms: f64,
}

/// The WebRTC call's video in one direction of one run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CallFlow {
    /// "down" (relay to mobile: the frames the offer end received) or "up".
    pub direction: String,
    /// Readable frames captured within the measured window and received.
    pub frames: u64,
    /// `frames` per second of the window, frames/s (the sender makes 30).
    pub frames_per_s: f64,
    /// Median capture-to-decode delay of those frames, ms.
    pub delay_p50_ms: f64,
    /// 95th-percentile capture-to-decode delay of those frames, ms.
    pub delay_p95_ms: f64,
    /// Highest capture-to-decode delay of those frames, ms.
    pub delay_max_ms: f64,
    /// Longest time between two of those frames' decodes, ms (a freeze of the picture).
    #[serde(default)]
    pub longest_gap_ms: f64,
    /// RTP payload received over the call's whole media time (start-up and linger included),
    /// kbit/s, from the receiving end's summary.
    pub received_kbps: f64,
    /// RTP payload the other end sent over its media time, kbit/s.
    pub sent_kbps: f64,
    /// Frames the receiving end decoded over the whole call.
    pub frames_received: u64,
    /// Of those, frames whose time barcode did not check (not in the delays).
    pub frames_unreadable: u64,
    /// The sending end's encoder target at the end of the call, kbit/s (set by REMB; `None`
    /// if unknown).
    pub target_last_kbps: Option<f64>,
    /// The sending end's lowest encoder target over the call, kbit/s (`None` if unknown).
    pub target_min_kbps: Option<f64>,
}

/// The WebRTC call of one run: both directions. The call has runs of its own (the call and
/// the download, no paced stream), direct and through the tunnel.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CallRun {
    /// Relay to mobile (the download's direction).
    pub down: CallFlow,
    /// Mobile to relay.
    pub up: CallFlow,
    /// Media time of the call, s (the run's length plus the linger, from connection).
    pub media_s: f64,
    /// The competing download's goodput within the window of the call's run, kbit/s.
    #[serde(default)]
    pub bulk_kbps: f64,
    /// The call's run's files (peer output, frames): this prefix + `.ROLE.out` etc.
    #[serde(default)]
    pub files: String,
}

/// One run of the isolation experiment (direct or through the tunnel).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct IsolationRun {
    /// "direct" or "tunnel".
    pub mode: String,
    /// The bulk download's goodput within the window, kbit/s.
    pub bulk_kbps: f64,
    /// The interactive flow, relay to mobile.
    pub down: FlowResult,
    /// The interactive flow, mobile to relay.
    pub up: FlowResult,
    /// The downlink's capacity within the window (trace opportunities x 1500 bytes), kbit/s.
    pub capacity_down_kbps: f64,
    /// The uplink's capacity within the window, kbit/s.
    pub capacity_up_kbps: f64,
    /// The WebRTC call in its own run of the same mode (direct or through the tunnel), if it
    /// ran; this run's download and paced stream did not share the link with it.
    #[serde(default)]
    pub call: Option<CallRun>,
    /// The run's files (peer output, per-packet CSVs): this prefix + `.ROLE.out` etc.
    pub files: String,
}

/// A row of the §5.7 table (`tunnel.csv`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TunnelRow {
    /// What is measured.
    pub metric: String,
    /// Unit of the values.
    pub unit: String,
    /// Without the tunnel.
    pub direct: f64,
    /// Through the tunnel.
    pub tunnel: f64,
    /// The change, in words ("-55%", "÷35").
    pub change: String,
    /// The paper's value without the tunnel, in `unit`, if it has one.
    pub paper_direct: Option<f64>,
    /// The paper's value with the tunnel, in `unit`, if it has one.
    pub paper_tunnel: Option<f64>,
}

/// An acceptance check.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TunnelCheck {
    /// Whether it holds.
    pub ok: bool,
    /// What is checked, with the numbers.
    pub text: String,
}

impl TunnelCheck {
    /// "✅ text" or "❌ text".
    pub fn line(&self) -> String {
        format!("{} {}", if self.ok { "✅" } else { "❌" }, self.text)
    }
}

/// Everything the isolation experiment produced (`tunnel.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IsolationResults {
    /// Link pair name.
    pub link: String,
    /// Where the traces came from.
    pub source: String,
    /// Length of each run, s.
    pub duration_s: f64,
    /// Start of the measured window, s.
    pub skip_s: f64,
    /// Offered rate of the interactive stream each way, kbit/s of payload.
    pub interactive_rate_kbps: f64,
    /// The versions of aiortc and av that held the WebRTC call; `None` = run without it.
    #[serde(default)]
    pub webrtc: Option<CheckVersions>,
    /// Without the tunnel.
    pub direct: IsolationRun,
    /// Through the tunnel.
    pub tunnel: IsolationRun,
    /// The §5.7 table.
    pub rows: Vec<TunnelRow>,
    /// The acceptance checks.
    pub checks: Vec<TunnelCheck>,
    /// Wall-clock time, s.
    pub wall_s: f64,
}

/// What the cost experiment produced (`tunnel-cost.json`, one row of `tunnel-cost.csv`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CostResults {
    /// Rate of the constant link, each way, Mbit/s.
    pub link_mbps: f64,
    /// Length of the run, s.
    pub duration_s: f64,
    /// Start of the measured window, s.
    pub skip_s: f64,
    /// The link's capacity within the window, kbit/s.
    pub capacity_kbps: f64,
    /// The download's goodput (application bytes) within the window, kbit/s.
    pub goodput_kbps: f64,
    /// goodput / capacity, 0..1.
    pub share: f64,
    /// Goodput over the whole transfer, start-up included, kbit/s.
    pub whole_run_goodput_kbps: f64,
    /// The least share accepted.
    pub target_share: f64,
    /// Whether the share reaches the target.
    pub ok: bool,
    /// The run's files: this prefix + `.ROLE.out` etc.
    pub files: String,
    /// Wall-clock time, s.
    pub wall_s: f64,
}
