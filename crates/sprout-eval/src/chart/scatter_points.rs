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

/// Width of the stroke of a point's marker, px: published points' hollow markers are thicker.
pub(super) fn stroke_w(m: &Mark) -> f64 {
    if m.paper {
        2.0
    } else {
        1.0
    }
}

/// How the marks of a chart are drawn, by index: centre, colour and outer radius (marker
/// radius plus half its stroke), px.
pub(super) struct Drawn {
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
        let mut palette = Palette::new();
        let pos: Vec<Pt> = marks
            .iter()
            .map(|m| (x_axis.map(m.delay_ms.max(1.0)), y_axis.map(m.y)))
            .collect();
        let colour: Vec<&'static str> = marks.iter().map(|m| palette.color(&m.key)).collect();
        let outer: Vec<f64> = marks.iter().map(|m| MARKER_R + stroke_w(m) / 2.0).collect();
        Drawn { pos, colour, outer }
    }
}
