//! A sans-IO model of Google Congestion Control (GCC) after draft-ietf-rmcat-gcc-02 and
//! libwebrtc's `goog_cc`, driven by transport-wide feedback (per-packet arrival times reported
//! back to the sender): no clock, socket or thread of its own. Times are microseconds (`u64`)
//! at the interface; rates are bit/s (`f64`).
//!
//! The pipeline, one module each: [`feedback`] matches reported arrivals with the sender's
//! history; [`arrival_filter`] groups packets into 5 ms bursts and has the draft's Kalman
//! filter of the queueing-delay gradient, [`trendline`] libwebrtc's estimator of it (the
//! default, see there why); [`overuse`] compares it with the adaptive
//! threshold; [`rate_control`] turns the signal into the delay-based estimate (AIMD);
//! [`loss_control`] gives the loss-based estimate; [`probe`] finds the capacity at start-up;
//! [`controller`] joins them into the target rate.

#![forbid(unsafe_code)]

pub mod arrival_filter;
pub mod controller;
pub mod feedback;
pub mod loss_control;
pub mod overuse;
pub mod probe;
pub mod rate_control;
pub mod trendline;

pub use controller::{Estimator, GccConfig, GccController};
pub use feedback::{Feedback, PacketResult, SentPacket};
pub use overuse::BandwidthUsage;
