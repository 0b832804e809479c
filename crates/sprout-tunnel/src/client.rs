//! The mobile host's end of SproutTunnel, sans-IO: one secure session to the relay, the
//! per-flow queue toward it, and the addresses the relay assigns.

use sprout_core::Config;
use sprout_secure::ClientConfig;

use crate::control::Assignment;
use crate::flow_queue::FlowQueueConfig;
use crate::status::{TunnelDrops, TunnelStatus};

/// Configuration of a [`TunnelClient`].
#[derive(Clone, Debug)]
pub struct ClientSettings {
    /// Keys.
    pub secure: ClientConfig,
    /// The Sprout configuration (its `max_datagram_bytes` follows from the path MTU).
    pub core: Config,
    /// The per-flow queue.
    pub queue: FlowQueueConfig,
}

/// Something that happened to the client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientTunnelEvent {
    /// The secure session is up (the assignment has not necessarily arrived).
    Established,
    /// The server's assignment arrived (first time, or changed).
    Assigned(Assignment),
    /// The session failed (handshake timeout, keys refused); the tunnel is down.
    Failed(String),
}

/// The mobile host's end of the tunnel.
pub struct TunnelClient {
    _todo: (),
}

impl TunnelClient {
    /// A client whose handshake starts at `now_us`.
    pub fn new(settings: ClientSettings, now_us: u64) -> Result<TunnelClient, String> {
        let _ = (settings, now_us);
        todo!()
    }

    /// Takes a UDP datagram from the server that arrived at `now_us`. Never panics.
    pub fn handle_udp(&mut self, now_us: u64, datagram: &[u8]) {
        let _ = (now_us, datagram);
        todo!()
    }

    /// Takes an IP packet read from the TUN device at `now_us`. Never panics.
    pub fn handle_tun(&mut self, now_us: u64, packet: &[u8]) {
        let _ = (now_us, packet);
        todo!()
    }

    /// The next UDP datagram to send to the server at `now_us`, written into `buf`; `false`
    /// when none. Call until `false`.
    pub fn poll_udp(&mut self, now_us: u64, buf: &mut Vec<u8>) -> bool {
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

    /// When [`TunnelClient::handle_timeout`] or [`TunnelClient::poll_udp`] is next needed (µs).
    pub fn poll_timeout(&mut self) -> Option<u64> {
        todo!()
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<ClientTunnelEvent> {
        todo!()
    }

    /// The assignment, once it arrived.
    pub fn assignment(&self) -> Option<Assignment> {
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
