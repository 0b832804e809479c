//! The points of a scatter chart (Figures 7 and 8): their values, and where and in which
//! colour they are drawn.

use super::axes::{Linear, LogAxis};
use super::colours::Palette;
use super::geometry::Pt;
use super::style::HEIGHT;

/// One point of a scatter chart, in the chart's units.
pub(super) struct Mark {
    /// The name written beside it.
    pub(super) label: String,
    /// The scheme key (see `colours::label_key`) that selects its colour and pairs a
    /// published point with ours.
    pub(super) key: String,
    /// Delay, ms (the horizontal axis).
    pub(super) delay_ms: f64,
    /// The vertical axis' value (throughput in kbit/s or utilization in percent).
    pub(super) y: f64,
    /// True for a published value (hollow marker).
    pub(super) paper: bool,
    /// True for the point the chart is about (a model's default variant): a larger marker
    /// with a heavy outline, drawn over the others.
    pub(super) emphasis: bool,
}

/// Top of the plot, px.
pub(super) const PLOT_T: f64 = 58.0;
/// Bottom of the plot, px.
pub(super) const PLOT_B: f64 = HEIGHT - 74.0;
/// Room right of the plot for the legend, px.
pub(super) const LEGEND_W: f64 = 205.0;
/// Radius of a point's marker, px (without its stroke).
pub(super) const MARKER_R: f64 = 6.0;

/// Whether two values are equal to within rounding.
pub(super) fn same(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

/// Radius of an emphasized point's marker, px (without its stroke).
pub(super) const EMPHASIS_R: f64 = 7.5;

/// Width of the stroke of a point's marker, px: published points' hollow markers and
/// emphasized points' outlines are thicker.
pub(super) fn stroke_w(m: &Mark) -> f64 {
    if m.emphasis {
        2.5
    } else if m.paper {
        2.0
    } else {
        1.0
    }
}

/// Radius of a point's marker, px (without its stroke).
pub(super) fn marker_r(m: &Mark) -> f64 {
    if m.emphasis {
        EMPHASIS_R
    } else {
        MARKER_R
    }
}

/// How the marks of a chart are drawn, by index: centre, colour and outer radius (marker
/// radius plus half its stroke), px; and the prefix of the ids of its markers and labels
/// (several plots on one chart each have their own).
pub(super) struct Drawn {
    /// Prefix of the `id`s of the markers (`{prefix}p0`) and labels (`{prefix}l0`).
    pub(super) prefix: String,
    /// Centre of each marker.
    pub(super) pos: Vec<Pt>,
    /// Colour of each mark's scheme.
    pub(super) colour: Vec<&'static str>,
    /// Outer radius of each marker.
    pub(super) outer: Vec<f64>,
}

impl Drawn {
    /// Places `marks` on the axes (delays below 1 ms at 1 ms) and colours them by scheme.
    pub(super) fn new(marks: &[Mark], x_axis: &LogAxis, y_axis: &Linear) -> Drawn {
        Drawn::in_plot(marks, x_axis, y_axis, &mut Palette::new(), "")
    }

    /// [`Drawn::new`] for one plot of several on a chart: colours from the chart's `palette`,
    /// ids prefixed by `prefix`.
    pub(super) fn in_plot(
        marks: &[Mark],
        x_axis: &LogAxis,
        y_axis: &Linear,
        palette: &mut Palette,
        prefix: &str,
    ) -> Drawn {
        let pos: Vec<Pt> = marks
            .iter()
            .map(|m| (x_axis.map(m.delay_ms.max(1.0)), y_axis.map(m.y)))
            .collect();
        let colour: Vec<&'static str> = marks.iter().map(|m| palette.color(&m.key)).collect();
        let outer: Vec<f64> = marks
            .iter()
            .map(|m| marker_r(m) + stroke_w(m) / 2.0)
            .collect();
        Drawn {
            prefix: prefix.to_string(),
            pos,
            colour,
            outer,
        }
    }
}
