//! Figure 7: throughput against 95th-percentile self-inflicted delay, one point per scheme
//! (ours and the paper's).

use super::axes::{fmt_num, Linear};
use super::colours::label_key;
use super::scatter::scatter_chart;
use super::scatter_points::{Mark, PLOT_B, PLOT_T};

/// One point of a Figure-7-style chart.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartPoint {
    /// Scheme name shown next to the point (also selects its colour).
    pub label: String,
    /// Average throughput, kbit/s.
    pub throughput_kbps: f64,
    /// 95th-percentile self-inflicted delay, ms (values below 1 ms are drawn at 1 ms).
    pub delay_ms: f64,
    /// True for a published value from the paper (hollow marker), false for ours (filled).
    pub paper: bool,
}

/// A Figure-7-style chart (SVG text): x = 95th-percentile self-inflicted delay in ms on a
/// reversed logarithmic axis (large delays on the left), y = throughput in kbit/s from 0.
/// Our points are filled, the paper's hollow, in one colour per scheme (matched by label,
/// ignoring case and any parenthesized suffix); each is labelled with its scheme name, and
/// points whose markers overlap share one label. Delays below 1 ms are drawn at 1 ms; points
/// with non-finite values are skipped.
pub fn throughput_delay_chart(title: &str, points: &[ChartPoint]) -> String {
    delay_scatter(
        title,
        "95th-percentile self-inflicted delay (ms)",
        "Throughput (kbit/s)",
        points,
    )
}

/// [`throughput_delay_chart`] for points that are means over several runs or links (each a
/// mean throughput and a mean of the runs' 95th-percentile self-inflicted delays), with axis
/// titles that say so.
pub fn mean_throughput_delay_chart(title: &str, points: &[ChartPoint]) -> String {
    delay_scatter(
        title,
        "Mean 95th-percentile self-inflicted delay (ms)",
        "Mean throughput (kbit/s)",
        points,
    )
}

/// A throughput-delay chart with the given axis titles.
fn delay_scatter(title: &str, x_title: &str, y_title: &str, points: &[ChartPoint]) -> String {
    let ymax = points
        .iter()
        .map(|p| p.throughput_kbps)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let y_axis = Linear::nice(0.0, ymax, 6.0, PLOT_B, PLOT_T);
    let marks = points
        .iter()
        .map(|p| Mark {
            label: p.label.clone(),
            key: label_key(&p.label),
            delay_ms: p.delay_ms,
            y: p.throughput_kbps,
            paper: p.paper,
        })
        .collect();
    scatter_chart(title, x_title, y_title, marks, y_axis, fmt_num)
}
