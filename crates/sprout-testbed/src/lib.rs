//! The testbed around Sprout: the deterministic simulator, the paper's metrics (§5.1), the
//! evaluation harness, its report and its charts.

pub mod chart;
pub mod distributions;
pub mod emulate;
pub mod emulate_report;
pub mod eval;
pub mod logscore;
pub mod metrics;
pub mod overrides;
pub mod paper;
pub mod report;
pub mod rl_env;
pub mod saturator;
pub mod saturator_check;
pub mod sim;
pub mod sim_json;
pub mod sweep;
pub mod trace_plot;
pub mod tunnel_experiment;
