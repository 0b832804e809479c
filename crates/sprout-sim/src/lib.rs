//! The deterministic simulator: Sprout, Sprout-EWMA and the TCP peers over trace-driven links,
//! scored with the paper's metrics (section 5.1); pure computation, no clock, socket or thread
//! of its own.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod app;
pub mod app_metrics;
mod cross;
pub mod distributions;
pub mod duration;
pub mod error;
pub mod gcc_flow;
pub mod logscore;
pub mod metrics;
pub mod overrides;
pub mod recorded;
pub mod rl_env;
pub mod run_limits;
pub mod scheme;
pub mod sim;
pub mod sim_json;
mod sim_loop;

pub use app::App;
pub use error::{ParamError, SimError};
