//! What a step returns.

use serde::{Deserialize, Serialize};

/// What happened in one step (ground truth at the receiver and on the data link).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepInfo {
    /// Time since the episode's start at the end of the step, seconds.
    pub time_s: f64,
    /// Wire bytes delivered to the receiver in the step, as Mbit/s.
    pub throughput_mbps: f64,
    /// The trace's offered capacity in the step (opportunities x their bytes), Mbit/s.
    pub capacity_mbps: f64,
    /// Mean of the delay function over the step's 1 ms instants, seconds.
    pub delay_s: f64,
    /// Mean of (delay function - the omniscient sender's) over the same instants, seconds.
    pub self_inflicted_s: f64,
    /// Wire bytes sent in the step.
    pub sent_bytes: u64,
    /// Wire bytes delivered in the step.
    pub delivered_bytes: u64,
    /// Wire bytes of our packets dropped or lost on the data link in the step.
    pub lost_bytes: u64,
    /// Bytes in the data link's queue at the end of the step.
    pub queue_bytes: u64,
    /// The action as applied (clipped to its bounds): Mbit/s or kilobytes.
    pub action: f64,
    /// The reward of the step.
    pub reward: f64,
    /// Application bytes the application created in the step, Mbit/s (0 for bulk).
    pub app_offered_mbps: f64,
    /// Application bytes waiting in the sender at the end of the step (0 for bulk).
    pub app_backlog_bytes: u64,
    /// Messages (datagrams of a constant stream, video frames) whose last byte reached the
    /// receiver in the step (0 for bulk).
    pub app_messages: u64,
    /// Median application-level delay (creation to the last byte's arrival) of those
    /// messages, ms; `None` for bulk or when no message completed in the step.
    pub app_p50_ms: Option<f64>,
    /// 95th percentile (nearest rank) of the same delays, ms; `None` likewise.
    pub app_p95_ms: Option<f64>,
    /// Share of those messages delivered within 150 ms, 0..1; `None` likewise.
    pub app_within_150ms: Option<f64>,
}

/// Result of [`super::RlEnv::step`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepOutcome {
    /// The step's reward.
    pub reward: f64,
    /// Always false: nothing ends an episode early.
    pub terminated: bool,
    /// True on the step that reaches the episode's length.
    pub truncated: bool,
    /// What happened.
    pub info: StepInfo,
}
