//! placeholder

// TEMPORARY (metrics/chart/paper helper): the lead merges the real module list.
pub mod chart;
pub mod metrics;
pub mod paper;
