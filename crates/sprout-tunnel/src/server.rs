//! The relay's end of SproutTunnel, sans-IO: many clients on one UDP socket, each with its own
//! secure session, Sprout connection, per-flow queue and tunnel addresses.
//!
//! The server is never an open relay: nothing reaches a session before the security layer has
//! authenticated it (allowed keys only, unless configured to accept any key), and a packet out
//! of a session is forwarded only if its source is the address that session was given. A
//! packet read from the TUN device goes to the session that owns its destination; a packet
//! from one client to another is forwarded directly (unless turned off); everything else from
//! a client is handed to the TUN device, i.e. to the server's kernel and its network.

use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

use ipnet::{Ipv4Net, Ipv6Net};
use sprout_core::Config;
use sprout_secure::{PublicKey, ServerConfig, SessionId};

use crate::control::Assignment;
use crate::flow_queue::FlowQueueConfig;
use crate::status::{TunnelDrops, TunnelStatus};

/// Addresses pinned to a client key (from the configuration file).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PinnedAddresses {
    /// The client's IPv4 tunnel address.
    pub v4: Option<Ipv4Addr>,
    /// The client's IPv6 tunnel address.
    pub v6: Option<Ipv6Addr>,
}

/// Configuration of a [`TunnelServer`].
#[derive(Clone, Debug)]
pub struct ServerSettings {
    /// The security layer (keys, allowed clients, session limits, idle timeout).
    pub secure: ServerConfig,
    /// The Sprout configuration of every session (its `max_datagram_bytes` is replaced by the
    /// client's, from its greeting, within [`crate::MIN_DATAGRAM_BYTES`] and this value).
    pub core: Config,
    /// The IPv4 tunnel network and the server's address in it (e.g. 10.77.0.1/24); clients
    /// get the other host addresses in order.
    pub v4: Option<Ipv4Net>,
    /// The IPv6 tunnel network and the server's address in it (e.g. fd77::1/64).
    pub v6: Option<Ipv6Net>,
    /// Addresses pinned to particular client keys.
    pub pinned: HashMap<PublicKey, PinnedAddresses>,
    /// The per-flow queues.
    pub queue: FlowQueueConfig,
    /// MTU of the server's TUN device (bytes); a client is assigned the smaller of this and
    /// its session's largest payload.
    pub tun_mtu: u16,
    /// Forward packets between clients directly (default true).
    pub client_to_client: bool,
}

/// Something that happened to a client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerTunnelEvent {
    /// A client's session is up and was given addresses.
    ClientUp {
        /// The session.
        id: SessionId,
        /// The client's key.
        peer: PublicKey,
        /// Where it is.
        addr: SocketAddr,
        /// Its addresses.
        assignment: Assignment,
    },
    /// A client was refused after its handshake (not a tunnel client, a greeting of another
    /// version, no address left).
    ClientRefused {
        /// The session.
        id: SessionId,
        /// The client's key.
        peer: PublicKey,
        /// Why.
        reason: String,
    },
    /// A client's session ended (idle, keys expired) and its addresses are free again.
    ClientDown {
        /// The session.
        id: SessionId,
        /// The client's key.
        peer: PublicKey,
    },
}

/// The relay's end of the tunnel.
pub struct TunnelServer {
    _todo: (),
}

impl TunnelServer {
    /// A server; fails on an inconsistent configuration (no address family, a network too
    /// small, a pinned address outside the network, an invalid core configuration).
    pub fn new(settings: ServerSettings) -> Result<TunnelServer, String> {
        let _ = settings;
        todo!()
    }

    /// Takes a UDP datagram from `from` that arrived at `now_us`. Never panics.
    pub fn handle_udp(&mut self, now_us: u64, from: SocketAddr, datagram: &[u8]) {
        let _ = (now_us, from, datagram);
        todo!()
    }

    /// Takes an IP packet read from the TUN device at `now_us`. Never panics.
    pub fn handle_tun(&mut self, now_us: u64, packet: &[u8]) {
        let _ = (now_us, packet);
        todo!()
    }

    /// The next UDP datagram to send at `now_us`, written into `buf`, with its destination.
    /// Call until `None`.
    pub fn poll_udp(&mut self, now_us: u64, buf: &mut Vec<u8>) -> Option<SocketAddr> {
        let _ = (now_us, buf);
        todo!()
    }

    /// The next IP packet to write to the TUN device.
    pub fn poll_tun(&mut self) -> Option<Vec<u8>> {
        todo!()
    }

    /// Runs the timers due by `now_us`.
    pub fn handle_timeout(&mut self, now_us: u64) {
        let _ = now_us;
        todo!()
    }

    /// When [`TunnelServer::handle_timeout`] or [`TunnelServer::poll_udp`] is next needed (µs).
    pub fn poll_timeout(&mut self) -> Option<u64> {
        todo!()
    }

    /// The next client event.
    pub fn poll_event(&mut self) -> Option<ServerTunnelEvent> {
        todo!()
    }

    /// The server's public key.
    pub fn public_key(&self) -> PublicKey {
        todo!()
    }

    /// Clients connected now.
    pub fn client_count(&self) -> usize {
        todo!()
    }

    /// The tunnel's own drop counters.
    pub fn drops(&self) -> TunnelDrops {
        todo!()
    }

    /// Everything, for the status line and `--json`.
    pub fn status(&mut self, now_us: u64) -> TunnelStatus {
        let _ = now_us;
        todo!()
    }
}
