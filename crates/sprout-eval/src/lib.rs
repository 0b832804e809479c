//! The paper's evaluation over the simulator: its experiments on every link and scheme, the
//! published values beside ours, `report.md`, the SVG charts and parameter sweeps.

pub mod chart;
pub mod eval;
pub mod paper;
pub mod report;
pub mod sweep;
pub mod trace_plot;
