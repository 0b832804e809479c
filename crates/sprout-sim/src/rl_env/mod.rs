//! A sans-IO stepping environment for learned congestion controllers (the Rust side of
//! `sprout.gym.CellularLinkEnv`).
//!
//! The simulator's trace-driven link ([`sprout_link::Link`]) in both directions and its clock:
//! the agent's sender sends MTU-sized packets on the *data* direction (the downlink by default)
//! at the rate, or within the window, that the agent sets each step; a receiver at the far end
//! records every delivery and its one-way delay, runs a Sprout receiver model (the estimator of
//! `sprout_core`, fed with the bytes that arrived in each 20 ms tick) and, at the end of every
//! tick, sends a small report back on the *reverse* direction (feedback packets cross the other
//! trace, so they are delayed and lost in its outages as a real receiver's would be). The
//! agent's observation is the latest report that reached the sender, plus what the sender knows
//! itself. The reward is computed from what really happened at the receiver during the step.
//!
//! # Time
//!
//! All times are [`sprout_core::Instant`]s and [`sprout_core::time::Duration`]s (whole
//! microseconds) of the link's clock, which is the trace's clock: an episode starts at
//! [`RlEnv::start`] (a whole millisecond of the trace drawn from the seed, or 0) and lasts
//! [`EnvConfig::episode`]. One step is [`EnvConfig::ticks_per_step`] ticks of
//! the model's tick length (20 ms). Nothing here reads a clock or does IO.
//!
//! # The loop
//!
//! The environment runs on the simulator's one loop (the crate's `sim_loop`): the clock jumps
//! from one event to the next (a link event, a paced instant, an application message, a
//! tick's end), and at each instant
//!
//! 1. the reverse link delivers the reports due by then, and the data link its packets: the
//!    receiver records deliveries, losses (gaps in the byte sequence: both links are FIFO, so a
//!    gap below a delivered packet is a loss) and the delay function;
//! 2. at a tick's end the Sprout model ticks: evolve, then observe the tick's bytes in
//!    MTU-sized packets (at least one if any byte came), or observe an empty tick only if the
//!    data link held a packet of ours at some time in the tick (the stand-in for Sprout's
//!    time-to-next: an idle sender's silence says nothing about the link); then forecast. The
//!    report leaves on the reverse link ([`FeedbackPath::Reverse`]), or reaches the sender at
//!    once ([`FeedbackPath::Instant`]);
//! 3. the sender sends: in rate mode its paced packets due by then (none at or after the
//!    step's end: the next action sets their rate), in window mode what the window allows
//!    with the reports that have reached it. At a step's start, after the action, it sends
//!    again.
//!
//! # Reward (per step)
//!
//! `throughput_weight x throughput (Mbit/s) - delay_weight x self-inflicted delay (s) -
//! loss_weight x loss (Mbit/s)`, defaults 1, [`DEFAULT_DELAY_WEIGHT`] and 0. Throughput is the
//! wire bytes delivered in the step over the step's length. The step's self-inflicted delay is
//! the mean, over the step's 1 ms sampling instants (`T + 1 ms, ..., T + step`), of the
//! paper's delay function (now minus the send time of the most recently sent packet delivered)
//! minus the omniscient sender's (now minus one propagation delay before the latest
//! opportunity), both with a virtual packet sent and delivered at the episode's start. It is
//! never negative (a packet departs at an opportunity at least one propagation delay after
//! being sent), and summed over an episode's steps it is the time integral of the
//! self-inflicted delay divided by the step length, whatever the step length. Loss is the wire
//! bytes of our packets dropped or lost on the data link in the step.
//!
//! # Application traffic
//!
//! With [`EnvConfig::app`] bulk (the default) the sender always has data, as above. With a
//! constant, video or adaptive application ([`crate::App`]), the sender sends only what the
//! application has handed it: each message (a datagram of a constant stream, a video frame)
//! is cut into datagrams of at most [`EnvConfig::packet_bytes`] (no header is added: a
//! datagram's wire size is its application bytes) and waits in the sender's queue. In rate
//! mode the pacer sends the queue's next datagram at each paced instant (the next instant one
//! datagram's length at the rate after the last), and while the queue is empty waits for the
//! application's next message; in window mode the sender sends what the window allows at the
//! tick's start, at each report's arrival and at each message's creation. Adaptive video sizes
//! each frame by what the transport allows when it is captured: the rate times one frame
//! interval (rate mode), or the window less what is in flight (window mode). The step's info
//! adds the application's figures (`app_*`: bytes offered, the sender's backlog, the
//! application-level delay of the messages completed in the step) and
//! [`RlEnv::app_metrics`] gives the episode's ([`AppMetrics`]). The reward is unchanged: it
//! sees the network only, not the time data waits in the sender.
//!
//! # Determinism
//!
//! The same configuration, seed and actions give the identical episode (bit for bit): the
//! start, the losses and a synthetic link are drawn from `ChaCha8Rng`s seeded from the seed,
//! and nothing else is random.
//!
//! [`AppMetrics`]: crate::app_metrics::AppMetrics

mod app;
mod config;
mod env;
mod outcome;
mod receiver;
mod sender;
#[cfg(test)]
mod tests;

use app::EnvApp;
pub use config::{
    ActionKind, EnvConfig, FeedbackPath, LinkSource, RewardWeights, AVERAGE_TICKS,
    DEFAULT_DELAY_WEIGHT, DEFAULT_FEEDBACK_BYTES, DEFAULT_MAX_RATE_MBPS, DEFAULT_MAX_WINDOW_KB,
    DELAY_SAMPLE_US, MAX_EPISODE, OBSERVATION_FEATURES,
};
pub use env::RlEnv;
use env::{Packet, Report, NO_MESSAGE};
pub use outcome::{StepInfo, StepOutcome};
use receiver::StepAccumulator;
