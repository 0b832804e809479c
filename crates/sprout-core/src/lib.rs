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
