//! Linux system interfaces for the runtimes (TUN devices, network namespaces, capabilities,
//! interfaces, clocks, timestamped receive, scheduling, signals): the only crate of the
//! workspace with `unsafe` code, each use wrapped in a safe function with its reason.
#![cfg(target_os = "linux")]

pub mod udp_timestamps;
