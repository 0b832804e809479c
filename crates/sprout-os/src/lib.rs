//! Linux system interfaces for the runtimes (TUN devices, network namespaces, capabilities,
//! interfaces, clocks, timestamped receive, segmented UDP sends, scheduling, signals): the only
//! crate of the workspace with `unsafe` code, each use wrapped in a safe function with its reason.
// Empty elsewhere, and under `--cfg sprout_portable_check`: CI's portable check (.ci/run) builds
// the portable crates with this crate's code compiled out, so a use of it without its guard,
// `#[cfg(all(target_os = "linux", not(sprout_portable_check)))]`, fails there.
#![cfg(all(target_os = "linux", not(sprout_portable_check)))]
// The workspace denies unsafe code (Cargo.toml's [workspace.lints]); this crate is where it
// is allowed, each block with a SAFETY comment.
#![allow(unsafe_code)]
#![warn(missing_docs)]

pub mod caps;
pub mod child;
pub mod clock;
pub mod interfaces;
pub mod netns;
pub mod poll;
pub mod sched;
pub mod signals;
pub mod socket_buffers;
pub mod tun;
pub mod udp_gso;
pub mod udp_pktinfo;
pub mod udp_timestamps;
