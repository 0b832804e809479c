//! Real-time experiments (root, Linux): Sprout, kernel TCP and the Saturator through the
//! trace-driven link emulator and SproutTunnel, checked against the simulator.

#![forbid(unsafe_code)]

pub mod emulate;
pub mod error;
pub mod saturator_check;
pub mod tunnel_args;
pub mod tunnel_experiment;
pub mod tunnel_try;
pub mod webrtc_call;
