//! Figure 8: average utilization against average self-inflicted delay, one point per scheme
//! (ours and the paper's).

use super::axes::{fmt_num, Linear};
use super::colours::label_key;
use super::scatter::{scatter_chart, Titles};
use super::scatter_points::{Mark, PLOT_B, PLOT_T};

/// One point of a Figure-8-style chart.
#[derive(Debug, Clone, PartialEq)]
pub struct UtilizationPoint {
    /// Scheme name shown next to the point (also selects its colour).
    pub label: String,
    /// Average utilization, fraction 0..1 (plotted as percent).
    pub utilization: f64,
    /// Average self-inflicted delay, ms (values below 1 ms are drawn at 1 ms).
    pub delay_ms: f64,
    /// True for a published value from the paper (hollow marker), false for ours (filled).
    pub paper: bool,
}

/// A Figure-8-style chart (SVG text): x = average self-inflicted delay in ms on a reversed
/// logarithmic axis, y = average utilization in percent (0-100; above 100 % the axis extends).
/// Same marker, colour and label conventions as
/// [`throughput_delay_chart`](super::throughput_delay_chart).
pub fn utilization_delay_chart(title: &str, points: &[UtilizationPoint]) -> String {
    let ymax = points
        .iter()
        .map(|p| p.utilization * 100.0)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let y_axis = if ymax <= 100.0 {
        Linear {
            lo: 0.0,
            hi: 100.0,
            p0: PLOT_B,
            p1: PLOT_T,
            step: 10.0,
        }
    } else {
        Linear::nice(0.0, ymax, 6.0, PLOT_B, PLOT_T)
    };
    let marks = points
        .iter()
        .map(|p| Mark {
            label: p.label.clone(),
            key: label_key(&p.label),
            delay_ms: p.delay_ms,
            y: p.utilization * 100.0,
            paper: p.paper,
            emphasis: false,
        })
        .collect();
    let titles = Titles {
        title,
        x: "Average self-inflicted delay (ms)",
        y: "Average utilization (%)",
        legend: "Scheme",
    };
    scatter_chart(&titles, marks, y_axis, |v| format!("{}%", fmt_num(v)))
}
