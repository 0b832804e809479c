//! SproutTunnel (paper §4.3 and §5.7): carries any IP traffic between a mobile host and a
//! well-connected relay through secure Sprout sessions over UDP, one queue per flow, so that a
//! bulk download never delays an interactive flow.
//!
//! | module | what |
//! |---|---|
//! | [`packet`] | reading IP headers: version, addresses, the flow a packet belongs to |
//! | [`flow_queue`] | one queue per flow, round robin by bytes, capped by the forecast, head drop |
//! | [`control`] | the client's greeting and the server's address assignment |
//! | [`session`] | one session's data path: the queue in front of a Sprout connection |
//! | [`settings_error`] | why a tunnel end's settings are rejected ([`SettingsError`]) |
//! | [`server`] | [`TunnelServer`]: the relay's end, many clients, sans-IO |
//! | [`client`] | [`TunnelClient`]: the mobile host's end, sans-IO |
//! | [`status`] | counters and snapshots for the status line and `--json` |
//! | [`mtu`] | the TUN MTU that makes a full tunnel datagram fit the path MTU |
//! | [`device`] | the TUN device, its addresses and MTU (runtime) |
//! | [`routes`] | routes into the tunnel, the full tunnel's host route to the server (runtime) |
//! | [`cleanup`] | the undo list and the watchdog that undoes it if the process dies (runtime) |
//! | [`runtime`] | the event loop of each end: TUN device, UDP socket, timers, status lines |
//! | [`config`] | flags and the TOML file of `sprout tunnel server` and `client` |
//!
//! The sans-IO ends take packets and datagrams with the time and hand back packets and
//! datagrams, like the rest of Sprout; the runtime (TUN devices, sockets, routes) drives them.
//! The runtime's modules (`device`, `routes`, `cleanup`, `runtime`) need the `runtime` feature
//! (on by default), which brings the Linux system code of `sprout-os`.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

#[cfg(feature = "runtime")]
pub mod cleanup;
pub mod client;
pub mod config;
pub mod control;
#[cfg(feature = "runtime")]
pub mod device;
pub mod flow_queue;
pub mod mtu;
pub mod packet;
#[cfg(feature = "runtime")]
pub mod routes;
#[cfg(feature = "runtime")]
pub mod runtime;
pub mod server;
pub mod session;
pub mod settings_error;
pub mod status;

pub use client::{ClientSettings, ClientTunnelEvent, TunnelClient};
pub use control::Assignment;
pub use flow_queue::{FlowQueue, FlowQueueConfig};
pub use packet::{parse, FlowKey, PacketError, PacketInfo};
pub use server::{PinnedAddresses, ServerSettings, ServerTunnelEvent, TunnelServer};
pub use settings_error::SettingsError;
pub use status::{ClientState, SessionStatus, TunnelDrops, TunnelStatus};

/// Most packets waiting to be written to the TUN device; beyond, packets are dropped and
/// counted (`tun_backlog`).
pub const MAX_TUN_BACKLOG: usize = 4096;

/// Flows shown per session in status output.
pub const STATUS_FLOWS: usize = 8;

/// Smallest core `max_datagram_bytes` a server accepts from a client's greeting: enough for a
/// 576-byte IPv4 packet after the core's largest header.
pub const MIN_DATAGRAM_BYTES: u16 = 576 + sprout_core::wire::header_bytes(8) as u16;
