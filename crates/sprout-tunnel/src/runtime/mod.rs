//! The runtime of both tunnel ends: the TUN device, one UDP socket and the sans-IO engine
//! ([`crate::TunnelServer`] or [`crate::TunnelClient`]) on one thread, with status lines.
//!
//! Each end is one event loop (`mio`, edge-triggered) over the TUN descriptor, a non-blocking
//! UDP socket (16 MiB send and receive buffers forced, else 4 MiB asked of the kernel) and the
//! engine's `poll_timeout`:
//!
//! - packets read from the TUN device in batches of up to [`BATCH`] → `handle_tun`; the
//!   device has the kernel's offloads where it takes them (`IFF_VNET_HDR`, TSO), so a read may
//!   be a TCP super-packet of up to 64 KB, cut into its segments first;
//! - datagrams received in batches of up to [`BATCH`] → `handle_udp`;
//! - `handle_timeout` at the engine's deadlines;
//! - `poll_tun` drained → written to the TUN device, consecutive TCP segments of one flow
//!   joined into one write where the device has offloads;
//! - `poll_udp` drained → gathered into segmented sends (`UDP_SEGMENT`: up to 64 equal-sized
//!   datagrams to one peer in one `sendmsg`, where the kernel takes them, else one `send_to`
//!   each); on `WouldBlock` the datagrams are kept and sent first when the socket becomes
//!   writable again.
//!
//! A server listening on an unspecified address (`0.0.0.0`, `[::]`) answers each client from
//! the local address that client wrote to (`IP_PKTINFO`/`IPV6_PKTINFO`, as WireGuard does), so
//! a relay with several addresses works whichever one clients use.
//!
//! Time is `CLOCK_MONOTONIC` in microseconds since the end started.
//!
//! The server makes its device at the start from its settings (its own tunnel addresses and
//! TUN MTU). The client makes its device only when the server's assignment arrives, from the
//! assignment (its addresses, the MTU), then its routes ([`crate::routes`]).
//!
//! Output, one line each, on standard output: text, or with `--json` one JSON object per line
//! (`event`: `listening`, `client_up`, `client_down`, `client_refused` on the server;
//! `connecting`, `established`, `up` on the client; `status` every status interval and a
//! final `exit` with the totals on both). Both ends stop with exit status 0 on `SIGINT`,
//! `SIGTERM`, `SIGHUP` or at `--duration`, after removing everything they made.
//!
//! | module | what |
//! |---|---|
//! | `batch` | datagrams gathered for one segmented UDP send (GSO) |
//! | `offload` | a TUN read with the kernel's offloads cut into packets (TSO segments, checksums) |
//! | `io` | the UDP socket (sticky source addresses), the TUN device, the poller, the `End` trait over both engines |
//! | `event_loop` | the loop both ends run, and what it checks besides the engine (stop, `--duration`) |
//! | `stop` | [`StopHandle`], [`stop_on_signals`], [`ExitReason`] |
//! | `output` | status lines, the server's client events and the exit line (text or JSON) |
//! | `server` | [`Server`], [`run_server`]: the relay's end |
//! | `client` | [`Client`], [`run_client`]: the mobile host's end |
//! | `device_setup` | the client's device and routes from the relay's assignment |

mod batch;
mod client;
mod device_setup;
mod event_loop;
mod io;
mod offload;
mod output;
mod server;
mod stop;

pub use client::{run_client, Client, ASSIGNMENT_TIMEOUT};
pub use io::{BATCH, FORCED_SOCKET_BUFFER_BYTES, SOCKET_BUFFER_BYTES};
pub use output::TEXT_FLOWS;
pub use server::{run_server, Server};
pub use stop::{stop_on_signals, ExitReason, StopHandle};
