//! Sans-IO TCP-like senders and receivers, and the congestion controllers the Sprout paper
//! (Winstein, Sivaraman, Balakrishnan, NSDI 2013) compares against.
//!
//! No sockets, clocks or threads: time goes in as a [`sprout_core::Instant`], segments and the
//! next deadline come out; RTTs and timeouts are [`sprout_core::Duration`]s. A simulator carries [`Segment`]s as link payloads, charging
//! [`Segment::wire_bytes`].
//!
//! | piece | specification | module |
//! |---|---|---|
//! | segments (52 header bytes: IPv4, TCP, timestamps) | RFC 791, 9293, 7323 | [`segment`] |
//! | reliability: cumulative ACKs, fast retransmit, NewReno fast recovery, RTO | RFC 5681, 6582, 6298 | `sender` |
//! | receiver: in-order delivery, out-of-order buffer, (delayed) ACKs, timestamp echo | RFC 5681 §4.2, 1122, 7323 | `receiver` |
//! | three-way handshake with Linux's SYN timers | RFC 9293 §3.5, 6298 | [`handshake`] |
//! | delivery-rate samples | draft-cheng-iccrg-delivery-rate-estimation | `rate` |
//! | pacing | Linux TCP internal pacing | `pacer` |
//! | ECN: negotiation, ECT(0) on new data, ECE until CWR, one reduction per window | RFC 3168 §6.1 | [`segment::SegmentEcn`], [`TcpConfig::ecn`] |
//! | congestion controllers | see [`cc`] | [`cc`] |
//! | the endpoint | — | [`endpoint`] |
//!
//! Loss recovery in detail (there is no SACK, so this is NewReno):
//! - a duplicate ACK is a pure ACK repeating `snd_una` while data is outstanding; the third
//!   starts fast retransmit (the controller's `on_congestion_event` with FlightSize), then fast
//!   recovery with the window inflated by 3 segments plus one per further duplicate ACK;
//! - a partial ACK retransmits the next hole at once and deflates the window by the bytes it
//!   acknowledged (plus one segment); a full ACK (covering `recover`) ends recovery with
//!   cwnd = ssthresh (RFC 6582 §3.2, option 2);
//! - the retransmission timer is restarted by every ACK of new data, except in fast recovery,
//!   where only the first partial ACK restarts it (RFC 6582's "impatient" variant): a window
//!   with more holes than fit in one RTO is finished by a timeout;
//! - RTO = SRTT + max(4 RTTVAR, 200 ms) (RFC 6298's estimator, with Linux's placement of the
//!   minimum), 1 s initially, doubled on each expiry up to 60 s; per-ACK RTT samples come from
//!   echoed timestamps (RFC 7323);
//! - on a timeout everything outstanding is resent in order as the window allows (go-back-N,
//!   skipping what cumulative ACKs cover); until `snd_una` passes the highest sequence sent
//!   before the timeout, duplicate ACKs do not trigger fast retransmit (RFC 6582 §4.1). A
//!   timeout during fast recovery, or a repeated one, keeps ssthresh (RFC 5681 §3.1, Linux).
//!
//! - the flight is bounded by the window, the receive window and the send buffer; windows grow
//!   only while the flow is cwnd-limited (Linux's `tcp_is_cwnd_limited`, RFC 7661).
//!
//! Not implemented: SACK (RFC 2018/6675), limited transmit (RFC 3042), PRR (RFC 6937), F-RTO,
//! HyStart, Nagle, teardown, a scalable (DCTCP/Prague, ECT(1)) answer to ECN marks, AccECN,
//! piggybacked ACKs, window scaling and advertised windows (the
//! receive window is a sender-side constant).
//!
//! ```
//! use sprout_core::Instant;
//! use sprout_tcp::{CcKind, TcpConfig, TcpEndpoint};
//!
//! let ms = Instant::from_millis;
//! let mut a = TcpEndpoint::new(TcpConfig::default(), CcKind::Cubic, ms(0));
//! let mut b = TcpEndpoint::new(TcpConfig::default(), CcKind::Cubic, ms(0));
//! a.set_bulk(true);
//! // The initial window: 10 segments of 1448 payload bytes.
//! let mut sent = Vec::new();
//! while let Some(s) = a.poll_transmit(ms(0)) {
//!     sent.push(s);
//! }
//! assert_eq!(sent.len(), 10);
//! assert_eq!(sent[0].wire_bytes(), 1500);
//! // Deliver them 20 ms later; b acknowledges each one.
//! for s in &sent {
//!     b.handle_segment(ms(20), s);
//! }
//! while let Some(ack) = b.poll_transmit(ms(20)) {
//!     a.handle_segment(ms(40), &ack);
//! }
//! assert_eq!(a.stats().acked_bytes, 14_480);
//! assert_eq!(b.stats().delivered_app_bytes, 14_480);
//! assert_eq!(a.cwnd_bytes(), 20 * 1448); // slow start doubled the window
//! ```
//!
//! [`TcpEndpoint::new`] starts established; a client and a server open with a handshake:
//!
//! ```
//! use sprout_core::{Duration, Instant};
//! use sprout_tcp::{CcKind, TcpConfig, TcpEndpoint};
//!
//! let ms = Instant::from_millis;
//! let mut client = TcpEndpoint::connect(TcpConfig::default(), CcKind::Cubic, ms(0));
//! let mut server = TcpEndpoint::listen(TcpConfig::default(), CcKind::Cubic, ms(0));
//! client.set_bulk(true);
//! server.set_bulk(true);
//! assert!(server.poll_transmit(ms(0)).is_none()); // no peer yet
//! let syn = client.poll_transmit(ms(0)).unwrap();
//! assert!(syn.syn && client.poll_transmit(ms(0)).is_none()); // only the SYN
//! server.handle_segment(ms(20), &syn);
//! let syn_ack = server.poll_transmit(ms(20)).unwrap();
//! assert!(server.poll_transmit(ms(20)).is_none()); // no data before the ACK
//! client.handle_segment(ms(40), &syn_ack);
//! assert!(client.is_established());
//! // 40 ms + max(4 RTTVAR, 200 ms)
//! assert_eq!(client.stats().rto_us, Duration::from_millis(240));
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod cc;
pub mod config;
pub mod endpoint;
pub mod handshake;
mod pacer;
mod rate;
mod receiver;
mod rtt;
pub mod segment;
mod sender;

pub use cc::{CcKind, CongestionControl, ParseCcKindError};
pub use config::TcpConfig;
pub use endpoint::{TcpEndpoint, TcpStats};
pub use handshake::{ConnectionState, Opening};
pub use segment::Segment;
