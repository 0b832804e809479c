//! Endpoint configuration and fixed protocol constants.

use sprout_core::time::Duration;

/// Delayed-ACK timer: 40 ms, Linux's minimum delayed-ACK time (RFC 5681 §4.2 allows up to
/// 500 ms).
pub const DELAYED_ACK_TIMEOUT: Duration = Duration::from_millis(40);

/// Upper bound of the retransmission timeout, backoff included: 60 s (RFC 6298 §2.5).
pub const MAX_RTO: Duration = Duration::from_secs(60);

/// Duplicate ACKs that trigger fast retransmit (RFC 5681 §3.2).
pub const DUPACK_THRESHOLD: u32 = 3;

/// Retransmission timeout when data transmission begins after a handshake whose SYN or SYN-ACK
/// was retransmitted and that gave no RTT sample: 3 s (RFC 6298 §5.7, Linux's
/// `TCP_TIMEOUT_FALLBACK`). With timestamps the handshake nearly always gives a sample.
pub const SYN_FALLBACK_RTO: Duration = Duration::from_secs(3);

/// Parameters of a [`TcpEndpoint`](crate::TcpEndpoint). `Default` gives Linux-like values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcpConfig {
    /// Payload bytes per full segment (SMSS; bytes). Default 1448, so a full segment is 1500
    /// bytes on the wire.
    pub mss: u32,
    /// Delayed ACKs (RFC 5681 §4.2, RFC 1122): ACK every second segment or after
    /// [`DELAYED_ACK_TIMEOUT`], immediately on out-of-order or gap-filling data.
    /// Default false (ACK every segment).
    pub delayed_acks: bool,
    /// Initial congestion window (segments). Default 10 (RFC 6928, Linux). LEDBAT uses its own
    /// RFC 6817 `INIT_CWND` of 2 instead.
    pub initial_cwnd_segments: u32,
    /// Minimum retransmission timeout. Default 200 ms (Linux's `TCP_RTO_MIN`). Applied
    /// as Linux applies it, to the variance term: `RTO = SRTT + max(4 RTTVAR, min_rto)`, so
    /// the RTO is at least SRTT + 200 ms (RFC 6298's formula otherwise, backoff ×2 per timeout up
    /// to 60 s).
    pub min_rto: Duration,
    /// Retransmission timeout before any RTT sample, also the SYN's and SYN-ACK's first
    /// timeout (doubled on each retransmission up to 60 s). Default 1 s (RFC 6298 §2.1,
    /// Linux's `TCP_TIMEOUT_INIT`).
    pub initial_rto: Duration,
    /// Upper bound of the congestion window (segments), like Linux's `snd_cwnd_clamp`.
    /// Default 100 000.
    pub max_cwnd_segments: u32,
    /// Receive window (bytes): the sender never has more than this outstanding. Default 64 MiB,
    /// so flow control does not limit; the simulator uses Linux's largest default receive
    /// buffer (6 MiB).
    pub receive_window_bytes: u64,
    /// Send buffer (bytes): the application's data waiting to be acknowledged never exceeds
    /// this, so it bounds the flight as the receive window does (Linux: `net.ipv4.tcp_wmem`'s
    /// largest value, 4 MiB by default; the send buffer holds every unacknowledged byte). Default
    /// 64 MiB, so it does not limit; the simulator uses Linux's 4 MiB.
    pub send_buffer_bytes: u64,
    /// ECN (RFC 3168): ask for it in the handshake (or, for an endpoint opened established,
    /// take it as negotiated); once negotiated, new data is sent ECT(0), CE marks are echoed
    /// with ECE until the peer's CWR, and an ECE reduces the window once per window of data
    /// (the controller's reduction, Cubic's beta) with CWR on the next new data. Default
    /// false (Linux's `tcp_ecn` = 2 answers ECN but does not ask for it).
    pub ecn: bool,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss: 1448,
            delayed_acks: false,
            initial_cwnd_segments: 10,
            min_rto: Duration::from_millis(200),
            initial_rto: Duration::from_secs(1),
            max_cwnd_segments: 100_000,
            receive_window_bytes: 64 << 20,
            send_buffer_bytes: 64 << 20,
            ecn: false,
        }
    }
}

impl TcpConfig {
    /// SMSS as used internally: at least 1 byte.
    pub(crate) fn smss(&self) -> u32 {
        self.mss.max(1)
    }

    /// Initial congestion window (bytes).
    pub fn initial_cwnd_bytes(&self) -> u64 {
        u64::from(self.initial_cwnd_segments.max(1)) * u64::from(self.smss())
    }

    /// Congestion window cap (bytes).
    pub fn max_cwnd_bytes(&self) -> u64 {
        u64::from(self.max_cwnd_segments.max(2)) * u64::from(self.smss())
    }
}
