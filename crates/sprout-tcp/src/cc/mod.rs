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

mod controller;
mod kind;
mod rtt_round;

pub mod bbr;
pub mod compound;
pub mod copa;
pub mod cubic;
pub mod ledbat;
pub mod reno;
pub mod vegas;

pub use bbr::{Bbr, BbrMode};
pub use compound::Compound;
pub use controller::{AckEvent, CcConfig, CloneCongestionControl, CongestionControl, RateSample};
pub use copa::{Copa, CopaMode};
pub use cubic::Cubic;
pub use kind::{new_controller, CcKind, ParseCcKindError};
pub use ledbat::Ledbat;
pub use reno::Reno;
pub(crate) use rtt_round::RttRound;
pub use vegas::Vegas;
