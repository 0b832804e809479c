//! The trait the sender drives, [`CongestionControl`], and what it is given: its
//! configuration ([`CcConfig`]), each ACK ([`AckEvent`]) and delivery-rate samples
//! ([`RateSample`]).

use std::any::Any;
use std::fmt;

use sprout_core::time::{Duration, Instant};

use super::CcKind;

/// Parameters every controller is built with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CcConfig {
    /// Sender maximum segment size (payload bytes).
    pub mss: u64,
    /// Initial congestion window (bytes).
    pub initial_cwnd_bytes: u64,
    /// Congestion window cap (bytes).
    pub max_cwnd_bytes: u64,
    /// Seed for controllers that randomise (BBR's first PROBE_BW phase).
    pub seed: u64,
    /// The peer's receive window (bytes): Compound's `awnd`, which caps `cwnd + dwnd`.
    pub receive_window_bytes: u64,
}

impl CcConfig {
    /// The configuration an endpoint with `cfg` uses (seed 1).
    pub fn from_tcp(cfg: &crate::TcpConfig) -> Self {
        CcConfig {
            mss: u64::from(cfg.smss()),
            initial_cwnd_bytes: cfg.initial_cwnd_bytes(),
            max_cwnd_bytes: cfg.max_cwnd_bytes(),
            seed: 1,
            receive_window_bytes: cfg.receive_window_bytes.max(u64::from(cfg.smss())),
        }
    }
}

/// A delivery-rate sample (draft-cheng-iccrg-delivery-rate-estimation), computed by the sender
/// from the most recently sent segment that an ACK acknowledged.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateSample {
    /// Delivery rate (payload bytes per second).
    pub delivery_rate_bytes_per_s: f64,
    /// Bytes delivered over the sample's interval (bytes).
    pub delivered_bytes: u64,
    /// The interval: max(send elapsed, ACK elapsed).
    pub interval: Duration,
    /// Connection's delivered count when that segment was sent (bytes); BBR's round counting.
    pub prior_delivered_bytes: u64,
    /// Whether the segment was sent while the sender was application-limited.
    pub is_app_limited: bool,
}

/// What the sender tells a controller about one ACK that acknowledged new data.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AckEvent {
    /// Arrival time of the ACK.
    pub now: Instant,
    /// Bytes newly acknowledged by the cumulative ACK (bytes).
    pub acked_bytes: u64,
    /// RTT sample from the echoed timestamp.
    pub rtt: Option<Duration>,
    /// Smallest RTT sample of the connection.
    pub min_rtt: Option<Duration>,
    /// Smoothed RTT.
    pub srtt: Option<Duration>,
    /// One-way delay reported by the receiver.
    pub one_way_delay: Option<Duration>,
    /// Bytes outstanding before this ACK (bytes).
    pub prior_in_flight_bytes: u64,
    /// Bytes outstanding after this ACK (bytes).
    pub in_flight_bytes: u64,
    /// Cumulative ACK point after this ACK (bytes).
    pub snd_una: u64,
    /// Highest sequence number sent so far, plus one (bytes).
    pub snd_max: u64,
    /// Whether the sender is (still, or was until this ACK) in fast recovery. Controllers other
    /// than BBR do not grow their window on such ACKs.
    pub in_recovery: bool,
    /// Whether the window is what limits the flow (Linux's `tcp_is_cwnd_limited`, RFC 7661's
    /// "cwnd-limited"): the last window of data filled cwnd, or, in slow start (cwnd below
    /// ssthresh), cwnd is below twice that window's largest flight. False while the receive
    /// window, the send buffer or the application holds the flight below cwnd. Windows grow only
    /// when true.
    pub cwnd_limited: bool,
    /// Total bytes delivered so far (bytes).
    pub delivered_bytes: u64,
    /// Delivery-rate sample for this ACK, if valid.
    pub rate_sample: Option<RateSample>,
}

/// A copy of a boxed controller, taken when a retransmission timeout may later prove spurious
/// (so the sender can restore it). Implemented for every `Clone` controller.
pub trait CloneCongestionControl {
    /// A boxed copy of this controller, with all its state.
    fn clone_box(&self) -> Box<dyn CongestionControl>;
}

impl<T: CongestionControl + Clone + 'static> CloneCongestionControl for T {
    fn clone_box(&self) -> Box<dyn CongestionControl> {
        Box::new(self.clone())
    }
}

/// A congestion controller: turns ACK, loss and timeout events into a window and, optionally,
/// a pacing rate.
pub trait CongestionControl: CloneCongestionControl + fmt::Debug + Send {
    /// Which controller this is.
    fn kind(&self) -> CcKind;

    /// An ACK acknowledged new data.
    fn on_ack(&mut self, ack: &AckEvent);

    /// Loss detected by three duplicate ACKs: fast retransmit and the start of a fast-recovery
    /// episode (at most once per window of data). `in_flight_bytes` is RFC 5681's FlightSize.
    fn on_congestion_event(&mut self, now: Instant, in_flight_bytes: u64);

    /// Fast recovery ended with a full ACK (RFC 6582).
    fn on_recovery_exit(&mut self, _now: Instant) {}

    /// An ACK echoed a CE mark (ECE, RFC 3168), at most once per window of data: the
    /// window is reduced as for a loss, with no fast recovery (nothing is retransmitted).
    /// By default the loss's reduction followed at once by the recovery's end (Cubic: cwnd
    /// and ssthresh to beta_cubic, 0.7, of cwnd; Reno: half; BBR: its cwnd saved and
    /// restored, so it ignores the mark as Linux's BBR v1 nearly does).
    fn on_ecn_echo(&mut self, now: Instant, in_flight_bytes: u64) {
        self.on_congestion_event(now, in_flight_bytes);
        self.on_recovery_exit(now);
    }

    /// The three-way handshake completed at `now`, before any data was sent;
    /// `rtt` is its RTT sample, if any. Linux initialises a controller at this point,
    /// with the handshake's RTT already in SRTT (BBR derives its first pacing rate and RTprop
    /// from it). Not called on endpoints created without a handshake.
    fn on_established(&mut self, _now: Instant, _rtt: Option<Duration>) {}

    /// The retransmission timer expired; `in_flight_bytes` is the FlightSize. `same_episode` is
    /// true when the loss episode was already reacted to: the timed-out data had already been
    /// retransmitted by a timeout (RFC 5681 §3.1 keeps ssthresh then), or the timeout hit
    /// during fast recovery (Linux keeps the recovery's ssthresh then). Controllers then keep
    /// ssthresh and only collapse the window.
    fn on_retransmission_timeout(&mut self, now: Instant, in_flight_bytes: u64, same_episode: bool);

    /// Congestion window (bytes).
    fn cwnd_bytes(&self) -> u64;

    /// Slow-start threshold (bytes); `u64::MAX` when not applicable or not yet set.
    fn ssthresh_bytes(&self) -> u64 {
        u64::MAX
    }

    /// Pacing rate (payload bytes per second), if the controller paces.
    fn pacing_rate_bytes_per_s(&self) -> Option<u64> {
        None
    }

    /// True while the controller deliberately sends below the path's capacity (BBR's
    /// PROBE_RTT), so that rate samples of what is sent now count as application-limited.
    fn app_limited_hint(&self) -> bool {
        false
    }

    /// For downcasting to the concrete controller (e.g. to read [`Compound::dwnd_bytes`]).
    ///
    /// [`Compound::dwnd_bytes`]: super::compound::Compound::dwnd_bytes
    fn as_any(&self) -> &dyn Any;
}
