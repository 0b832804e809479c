//! Congestion controllers: the trait the sender drives, and the six the Sprout paper compares
//! against.
//!
//! | controller | specification | module |
//! |---|---|---|
//! | Reno / NewReno | RFC 5681, RFC 3465 (L = 2), RFC 6582 | [`reno`] |
//! | Cubic | RFC 9438 (as Linux), no HyStart | [`cubic`] |
//! | Vegas | Brakmo & Peterson 1995, Linux `tcp_vegas.c` constants | [`vegas`] |
//! | LEDBAT | RFC 6817 | [`ledbat`] |
//! | BBR v1 | Cardwell et al. 2016, draft-cardwell-iccrg-bbr-congestion-control-00 | [`bbr`] |
//! | Compound TCP | Tan, Song, Zhang, Sridharan, INFOCOM 2006 | [`compound`] |
//! | Copa (delta 0.5, and 0.1 as Pantheon runs it) | Arun & Balakrishnan, NSDI 2018 | [`copa`] |
//!
//! Division of labour: the sender (loss detection, NewReno fast recovery, RTO, pacing) calls
//! [`CongestionControl::on_congestion_event`] once per fast-recovery episode,
//! [`on_retransmission_timeout`](CongestionControl::on_retransmission_timeout) on each RTO,
//! and [`on_ack`](CongestionControl::on_ack) for each ACK that acknowledges new data. During
//! fast recovery the sender itself inflates the window by one segment per duplicate ACK and
//! deflates it on partial ACKs (RFC 6582), on top of the controller's window; controllers do not
//! grow their window while `in_recovery` (except BBR, which keeps modelling the path).
//!
//! Controllers grow their window only on ACKs with [`AckEvent::cwnd_limited`] set, which the
//! sender computes as Linux's `tcp_is_cwnd_limited` does: a flow held back by the receive
//! window, the send buffer or the application does not inflate cwnd (so a loss then reduces a
//! window that was really in use). Delay-based decreases (Vegas, Compound's dwnd, LEDBAT) still
//! apply. BBR sets its window from its path model (`2 BtlBw RTprop` plus three send quanta), whose
//! bandwidth is the measured delivery rate, so a flow limited elsewhere keeps a window of about
//! twice its flight without the flag, as in Linux, where BBR ignores it too.

use std::any::Any;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use sprout_core::time::{Duration, Instant};

pub mod bbr;
pub mod compound;
pub mod copa;
pub mod cubic;
pub mod ledbat;
pub mod reno;
pub mod vegas;

pub use bbr::{Bbr, BbrMode};
pub use compound::Compound;
pub use copa::{Copa, CopaMode};
pub use cubic::Cubic;
pub use ledbat::Ledbat;
pub use reno::Reno;
pub use vegas::Vegas;

/// Which congestion controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CcKind {
    /// NewReno: RFC 5681 slow start and congestion avoidance, RFC 6582 fast recovery.
    #[serde(alias = "reno")]
    Reno,
    /// CUBIC (RFC 9438), Linux's default.
    #[serde(alias = "cubic")]
    Cubic,
    /// TCP Vegas (delay-based: 2–4 segments queued).
    #[serde(alias = "vegas")]
    Vegas,
    /// LEDBAT (RFC 6817): less-than-best-effort, 100 ms queueing-delay target.
    #[serde(alias = "ledbat")]
    Ledbat,
    /// BBR version 1: model-based, paced.
    #[serde(alias = "bbr")]
    Bbr,
    /// Compound TCP (Windows): Reno plus a delay-based window.
    #[serde(alias = "compound")]
    Compound,
    /// Copa (NSDI 2018): delay-based, target rate 1/(delta d_q), delta 0.5 (the paper's).
    #[serde(alias = "copa")]
    Copa,
    /// Copa with delta 0.1, as Pantheon runs it (`do_ss:auto:0.1`): a larger standing queue.
    #[serde(alias = "copa-0.1")]
    CopaTenth,
}

impl CcKind {
    /// All controllers, in the order above.
    pub const ALL: [CcKind; 8] = [
        CcKind::Reno,
        CcKind::Cubic,
        CcKind::Vegas,
        CcKind::Ledbat,
        CcKind::Bbr,
        CcKind::Compound,
        CcKind::Copa,
        CcKind::CopaTenth,
    ];

    /// Lower-case name, as accepted by [`FromStr`]: `"reno"`, `"cubic"`, `"vegas"`,
    /// `"ledbat"`, `"bbr"`, `"compound"`, `"copa"`, `"copa-0.1"`.
    pub fn name(&self) -> &'static str {
        match self {
            CcKind::Reno => "reno",
            CcKind::Cubic => "cubic",
            CcKind::Vegas => "vegas",
            CcKind::Ledbat => "ledbat",
            CcKind::Bbr => "bbr",
            CcKind::Compound => "compound",
            CcKind::Copa => "copa",
            CcKind::CopaTenth => "copa-0.1",
        }
    }
}

impl fmt::Display for CcKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A string that names no controller.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown congestion controller {input:?} (expected reno, cubic, vegas, ledbat, bbr, compound, copa or copa-0.1)")]
pub struct ParseCcKindError {
    /// The string given.
    pub input: String,
}

impl FromStr for CcKind {
    type Err = ParseCcKindError;

    /// Parses a [`name`](CcKind::name), ignoring ASCII case and surrounding whitespace;
    /// `"newreno"` is accepted for Reno.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase();
        let kind = match t.as_str() {
            "reno" | "newreno" => CcKind::Reno,
            "cubic" => CcKind::Cubic,
            "vegas" => CcKind::Vegas,
            "ledbat" => CcKind::Ledbat,
            "bbr" => CcKind::Bbr,
            "compound" | "ctcp" => CcKind::Compound,
            "copa" => CcKind::Copa,
            "copa-0.1" | "copa0.1" => CcKind::CopaTenth,
            _ => {
                return Err(ParseCcKindError {
                    input: s.to_string(),
                })
            }
        };
        Ok(kind)
    }
}

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
    fn as_any(&self) -> &dyn Any;
}

/// Builds the controller `kind` with `cfg`.
pub fn new_controller(kind: CcKind, cfg: &CcConfig) -> Box<dyn CongestionControl> {
    match kind {
        CcKind::Reno => Box::new(Reno::new(cfg)),
        CcKind::Cubic => Box::new(Cubic::new(cfg)),
        CcKind::Vegas => Box::new(Vegas::new(cfg)),
        CcKind::Ledbat => Box::new(Ledbat::new(cfg)),
        CcKind::Bbr => Box::new(Bbr::new(cfg)),
        CcKind::Compound => Box::new(Compound::new(cfg)),
        CcKind::Copa => Box::new(Copa::new(cfg)),
        CcKind::CopaTenth => Box::new(Copa::with_delta(
            cfg,
            copa::PANTHEON_DELTA,
            CcKind::CopaTenth,
        )),
    }
}

/// Once-per-RTT bookkeeping shared by Vegas and Compound (Linux's `beg_snd_nxt`): a round ends
/// when an ACK covers the sequence number that was next to send when the round began; RTT
/// samples are reduced to their minimum over the round.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RttRound {
    /// Round ends when snd_una passes this (bytes); None = start a round at the next ACK.
    end_seq: Option<u64>,
    /// Smallest RTT sample in the round.
    pub min_rtt: Duration,
    /// Samples in the round.
    pub samples: u32,
    /// Smallest RTT ever: the propagation-delay estimate (`baseRTT`).
    pub base_rtt: Duration,
}

impl RttRound {
    pub(crate) fn new() -> Self {
        RttRound {
            end_seq: None,
            min_rtt: Duration::MAX,
            samples: 0,
            base_rtt: Duration::MAX,
        }
    }

    /// Records the ACK's RTT sample; returns true if this ACK ends a round (then the caller
    /// reads `min_rtt`/`samples` and calls [`reset`](Self::reset)).
    pub(crate) fn on_ack(&mut self, ack: &AckEvent) -> bool {
        if let Some(r) = ack.rtt {
            let r = r.max(Duration::from_micros(1));
            self.base_rtt = self.base_rtt.min(r);
            self.min_rtt = self.min_rtt.min(r);
            self.samples += 1;
        }
        match self.end_seq {
            None => {
                self.end_seq = Some(ack.snd_max);
                false
            }
            Some(end) => ack.snd_una > end,
        }
    }

    /// Whether no round is in progress (the next ACK starts one).
    pub(crate) fn idle(&self) -> bool {
        self.end_seq.is_none()
    }

    /// Starts a new round ending at `snd_max`.
    pub(crate) fn reset(&mut self, snd_max: u64) {
        self.end_seq = Some(snd_max);
        self.min_rtt = Duration::MAX;
        self.samples = 0;
    }

    /// Forgets the round in progress (after loss recovery); the next ACK starts a new one.
    pub(crate) fn restart(&mut self) {
        self.end_seq = None;
        self.min_rtt = Duration::MAX;
        self.samples = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in CcKind::ALL {
            assert_eq!(k.name().parse::<CcKind>(), Ok(k));
            assert_eq!(k.to_string(), k.name());
            assert_eq!(
                new_controller(k, &CcConfig::from_tcp(&Default::default())).kind(),
                k
            );
        }
        assert_eq!(" CUBIC ".parse::<CcKind>(), Ok(CcKind::Cubic));
        assert!("tahoe".parse::<CcKind>().is_err());
    }
}
