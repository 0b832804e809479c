//! Counters and live figures of an endpoint.

use std::net::SocketAddr;

use serde::Serialize;

/// Counters kept by the driver beside the connection's own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SocketCounters {
    /// UDP datagrams written to the socket (data and heartbeats).
    pub datagrams_sent: u64,
    /// UDP payload bytes written to the socket (Sprout header and application data).
    pub bytes_sent: u64,
    /// UDP datagrams from the peer handed to the connection (including malformed ones).
    pub datagrams_received: u64,
    /// UDP payload bytes of those datagrams.
    pub bytes_received: u64,
    /// Datagrams that were not well-formed Sprout datagrams (counted and dropped).
    pub malformed: u64,
    /// Datagrams from an address other than the peer's (counted and dropped).
    pub bad_peers: u64,
    /// Well-formed datagrams that arrived before a peer was accepted and that the acceptor
    /// turned down (counted and dropped).
    pub unaccepted: u64,
    /// Sends the socket refused with an error other than "would block" (the datagram is lost).
    pub send_errors: u64,
    /// Receive calls that failed with an error other than "would block".
    pub recv_errors: u64,
}

/// A snapshot of an endpoint: traffic counters, the sender's window and the peer's forecast.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EndpointStats {
    /// Seconds since the endpoint was created.
    pub elapsed_s: f64,
    /// The local socket address.
    pub local_addr: Option<SocketAddr>,
    /// The peer's address, once known.
    pub peer_addr: Option<SocketAddr>,
    /// UDP datagrams sent (data and heartbeats).
    pub datagrams_sent: u64,
    /// UDP payload bytes sent.
    pub bytes_sent: u64,
    /// Heartbeats sent (datagrams without application data).
    pub heartbeats_sent: u64,
    /// UDP datagrams received from the peer (including malformed ones).
    pub datagrams_received: u64,
    /// UDP payload bytes received from the peer.
    pub bytes_received: u64,
    /// Application bytes sent (payloads, bulk filler included).
    pub app_bytes_sent: u64,
    /// Application bytes received.
    pub app_bytes_received: u64,
    /// Application bytes waiting in the endpoint for the window to open.
    pub queued_bytes: usize,
    /// The sender's current window, in link bytes (UDP payload plus IP/UDP headers).
    pub window_bytes: u64,
    /// The sender's estimate of its bytes queued in the network toward the peer, in link bytes.
    pub queue_estimate_bytes: u64,
    /// The peer's latest forecast for this direction: cumulative MTU-sized (1500-byte) packets
    /// expected to be delivered by the end of each 20 ms tick (empty before the first).
    pub peer_forecast: Vec<u32>,
    /// Packets that forecast expects over its whole horizon (its last, cumulative entry).
    pub peer_forecast_packets: u64,
    /// The receiver's estimate of the incoming link rate, in packets per second.
    pub incoming_rate_pps: f64,
    /// Datagrams that were not well-formed Sprout datagrams (dropped).
    pub malformed: u64,
    /// Datagrams from an address other than the peer's (dropped).
    pub bad_peers: u64,
    /// Well-formed datagrams turned down before a peer was accepted (dropped).
    pub unaccepted: u64,
    /// Sends the socket refused (the datagram is lost).
    pub send_errors: u64,
    /// Receive calls that failed.
    pub recv_errors: u64,
    /// Peer datagrams that arrived after being written off as lost (reordered by over 10 ms).
    pub late: u64,
    /// Peer datagrams received twice.
    pub duplicates: u64,
    /// Seconds since the last datagram from the peer (`None` before the first).
    pub since_last_received_s: Option<f64>,
    /// Whether the driver thread is running (false after `close` or a fatal socket error).
    pub running: bool,
}
