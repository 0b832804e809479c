//! Figure 7: throughput against 95th-percentile self-inflicted delay, one point per scheme
//! (ours and the paper's).

use super::axes::{fmt_num, Linear};
use super::colours::label_key;
use super::scatter::{scatter_chart, Titles};
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

/// Sprout's means under each variant of its model (SVG text), as
/// [`mean_throughput_delay_chart`] with one colour per variant (none a scheme's colour) under
/// the legend title "Model variant". The points labelled `default_variant` are written
/// "`default_variant` (default)" and drawn last, larger and in a heavy outline, so that no other
/// variant's marker hides them.
pub fn model_variants_chart(title: &str, points: &[ChartPoint], default_variant: &str) -> String {
    let default_key = label_key(default_variant);
    let marks = marks(points)
        .into_iter()
        .map(|mut m| {
            if m.key == default_key {
                m.emphasis = true;
                m.label = format!("{} (default)", m.label);
            }
            m
        })
        .collect();
    let titles = Titles {
        title,
        x: "Mean 95th-percentile self-inflicted delay (ms)",
        y: "Mean throughput (kbit/s)",
        legend: "Model variant",
    };
    scatter_chart(&titles, marks, throughput_axis(points), fmt_num)
}

/// The marks of `points`, coloured by the key of their label.
fn marks(points: &[ChartPoint]) -> Vec<Mark> {
    points
        .iter()
        .map(|p| Mark {
            label: p.label.clone(),
            key: label_key(&p.label),
            delay_ms: p.delay_ms,
            y: p.throughput_kbps,
            paper: p.paper,
            emphasis: false,
        })
        .collect()
}

/// A throughput axis from 0 over the points' throughputs.
fn throughput_axis(points: &[ChartPoint]) -> Linear {
    let ymax = points
        .iter()
        .map(|p| p.throughput_kbps)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    Linear::nice(0.0, ymax, 6.0, PLOT_B, PLOT_T)
}

/// A throughput-delay chart with the given axis titles, one series per scheme.
fn delay_scatter(title: &str, x_title: &str, y_title: &str, points: &[ChartPoint]) -> String {
    let titles = Titles {
        title,
        x: x_title,
        y: y_title,
        legend: "Scheme",
    };
    scatter_chart(&titles, marks(points), throughput_axis(points), fmt_num)
}
