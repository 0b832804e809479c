//! Sans-IO core of Sprout, the transport protocol of Winstein, Sivaraman and Balakrishnan,
//! "Stochastic Forecasts Achieve High Throughput and Low Delay over Cellular Networks"
//! (NSDI 2013).
//!
//! No sockets, clocks or threads: time goes in as a [`time::Instant`] (microseconds on the
//! caller's clock), datagrams and the next deadline come out. Where each idea of the paper lives:
//!
//! | paper | module |
//! |---|---|
//! | parameters (§3.1, §5) | [`params`] |
//! | the rate model: Brownian motion, outages, Poisson observation (§3.1–3.2) | [`model`] |
//! | the cautious 8-tick forecast (§3.3) | [`forecast`] |
//! | the wide rate model, an outage to 1 Gbit/s, and its forecast | [`wide_model`], [`wide_forecast`] (with [`wide_mixture`] for spread beliefs and [`wide_counts`], the count distributions both take), [`wide_estimator`]; its volatility learned online: [`wide_vol`] |
//! | Sprout-EWMA (§5.3) | [`ewma`] |
//! | the receiver: ticks, time-to-next, received-or-lost (§3.2, §3.4) | [`receiver`] |
//! | the sender: queue estimate and window (§3.5) | [`sender`] |
//! | the wire format (§3.4) | [`wire`] |
//! | an endpoint that is both (§3.4) | [`connection`] |
//! | what a peer can have sent: every wire value checked, impossible ones dropped by reason | [`connection`] |
//!
//! Beside the protocol, two things every crate above shares: the typed time ([`time`]) and the
//! one formatter of an error's cause chain ([`error_chain::chain_message`]).
//!
//! Two endpoints in memory (an application puts a socket in between, and sealed datagrams:
//! sprout-secure and sprout-net do). Each step, at `now`: hand in the datagrams that arrived
//! ([`Connection::handle_datagram`]), send what [`Connection::poll_transmit`] hands out, read
//! what arrived ([`Connection::recv`]), then sleep until [`Connection::poll_timeout`] or the
//! next datagram. Here the link delivers at once and time goes in 1 ms steps:
//!
//! ```
//! use sprout_core::{Config, Connection, Duration, Instant};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut a = Connection::new(Config::default(), Instant::ZERO)?;
//! let mut b = Connection::new(Config::default(), Instant::ZERO)?;
//! for i in 0..20u8 {
//!     a.send(vec![i; 1000]); // queued; it leaves when a's window allows
//! }
//! let (mut buf, mut received) = (Vec::new(), Vec::new());
//! let mut now = Instant::ZERO;
//! while received.len() < 20 && now < Instant::from_millis(5_000) {
//!     a.handle_timeout(now);
//!     b.handle_timeout(now);
//!     while a.poll_transmit(now, &mut buf).is_some() {
//!         b.handle_datagram(now, &buf)?;
//!     }
//!     while b.poll_transmit(now, &mut buf).is_some() {
//!         a.handle_datagram(now, &buf)?; // b's forecasts and acknowledgments
//!     }
//!     while let Some(payload) = b.recv() {
//!         received.push(payload);
//!     }
//!     assert!(a.poll_timeout().is_some(), "a always has a next deadline");
//!     now = now + Duration::from_millis(1);
//! }
//! assert_eq!(received.len(), 20);
//! assert_eq!(received[19], vec![19; 1000]);
//! println!("delivered by {now:?}; a's window now {} bytes", a.window_bytes(now));
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

pub mod connection;
pub mod direction;
pub mod error_chain;
pub mod estimator;
pub mod estimator_trait;
pub mod ewma;
pub mod forecast;
pub mod model;
pub mod params;
pub mod receiver;
pub mod sender;
pub mod time;
pub mod variant;
pub mod wide_counts;
pub mod wide_estimator;
pub mod wide_forecast;
pub mod wide_mixture;
pub mod wide_model;
pub mod wide_vol;
mod windowed;
pub mod wire;

pub use connection::{Connection, ConnectionStats, DatagramError, Reject, Rejections, Transmit};
pub use estimator::{Estimator, SproutEstimator};
pub use ewma::EwmaEstimator;
pub use forecast::ForecastTables;
pub use model::RateModel;
pub use params::{Config, ConfigError, EstimatorKind, ModelParams, WideParams, WideVolParams};
pub use time::{Duration, Instant};
pub use variant::SproutVariant;
pub use wide_estimator::WideEstimator;
pub use wide_vol::WideVolEstimator;
pub use wire::WireError;
