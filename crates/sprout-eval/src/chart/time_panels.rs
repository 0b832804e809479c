//! Pieces shared by the charts over time (the time series of Figure 1, delay over time, rate
//! over time): the time axis, its ticks and title, panels stacked under a legend row, step
//! lines over bins and the caption.

use super::axes::{fmt_num, x_tick, Linear};
use super::geometry::{BBox, Pt};
use super::style::{AXIS, GRID, MUTED, TEXT, WIDTH};
use super::svg::{esc, Svg};
use super::text::{fit_size, text_width, Anchor, Font};

/// Polyline of a step function through `(t0, t1, value)` segments, mapped by `fx`, `fy`.
pub(super) fn step_points(
    segs: &[(f64, f64, f64)],
    fx: impl Fn(f64) -> f64,
    fy: impl Fn(f64) -> f64,
) -> Vec<Pt> {
    let mut pts = Vec::with_capacity(2 * segs.len());
    for &(t0, t1, v) in segs {
        let y = fy(v);
        pts.push((fx(t0), y));
        pts.push((fx(t1), y));
    }
    pts
}

/// The horizontal time axis: time `t0` (seconds) at pixel `l`, `t1` at pixel `r`.
#[derive(Clone, Copy)]
pub(super) struct TimeAxis {
    /// Left edge of the panels, px.
    pub(super) l: f64,
    /// Right edge of the panels, px.
    pub(super) r: f64,
    /// Time at the left edge, s.
    pub(super) t0: f64,
    /// Time at the right edge, s.
    pub(super) t1: f64,
}

impl TimeAxis {
    /// The pixel of time `t` (seconds).
    pub(super) fn x(&self, t: f64) -> f64 {
        self.l + (t - self.t0) / (self.t1 - self.t0) * (self.r - self.l)
    }

    /// The ticks, as seconds after `t0`: about eight round values no later than `t1`.
    pub(super) fn ticks(&self) -> Vec<f64> {
        let span = self.t1 - self.t0;
        Linear::nice(0.0, span, 8.0, 0.0, 1.0)
            .ticks()
            .into_iter()
            .filter(|&v| v <= span + 1e-9)
            .collect()
    }
}

/// A legend entry's swatch.
pub(super) enum Swatch {
    /// A filled box of colour `fill` at opacity `opacity` (an SVG number).
    Area {
        /// Fill colour.
        fill: &'static str,
        /// Fill opacity, as written.
        opacity: &'static str,
    },
    /// A short line of colour `stroke`, dashed per `dash` (solid if empty).
    Line {
        /// Stroke colour.
        stroke: &'static str,
        /// SVG dash array, or empty.
        dash: &'static str,
    },
}

/// The legend row(s) under the title, from `l` to `r`, flowing to more rows if need be;
/// returns the last row's baseline, px.
pub(super) fn legend_rows(svg: &mut Svg, items: &[(Swatch, String)], l: f64, r: f64) -> f64 {
    let legend_font = Font::plain(12.0);
    let (mut lx, mut ly) = (l, 56.0);
    for (sw, text) in items {
        let w = 28.0 + text_width(text, legend_font.size, false);
        let series = format!(r#"data-series="{}""#, esc(text));
        if lx > l && lx + w > r {
            lx = l;
            ly += 19.0;
        }
        match sw {
            Swatch::Area { fill, opacity } => svg.rect(
                "marker",
                &BBox {
                    x0: lx,
                    y0: ly - 10.0,
                    x1: lx + 22.0,
                    y1: ly + 1.0,
                },
                fill,
                "none",
                &format!(r#"fill-opacity="{opacity}" {series}"#),
            ),
            Swatch::Line { stroke, dash } => svg.line(
                "marker",
                (lx, ly - 4.0),
                (lx + 22.0, ly - 4.0),
                stroke,
                2.0,
                dash,
                &series,
            ),
        }
        svg.text(lx + 28.0, ly, text, legend_font, Anchor::Start, TEXT, "");
        lx += w + 16.0;
    }
    ly
}

/// `n` panels of height `panel_h` from `l` to `r`, the first's top at `first_top`, `gap`
/// pixels apart.
pub(super) fn stacked_frames(
    l: f64,
    r: f64,
    first_top: f64,
    panel_h: f64,
    gap: f64,
    n: usize,
) -> Vec<BBox> {
    (0..n)
        .map(|k| {
            let y0 = first_top + k as f64 * (panel_h + gap);
            BBox {
                x0: l,
                y0,
                x1: r,
                y1: y0 + panel_h,
            }
        })
        .collect()
}

/// Vertical grid lines of the panel `frame` at the time `ticks` (seconds after `time.t0`),
/// and under it tick marks: labelled if it is the `last` (lowest) panel, short otherwise.
pub(super) fn time_grid(
    svg: &mut Svg,
    frame: &BBox,
    last: bool,
    time: &TimeAxis,
    ticks: &[f64],
    tick_font: Font,
    kept: &mut Vec<BBox>,
) {
    for &v in ticks {
        let x = time.x(time.t0 + v);
        svg.line("grid", (x, frame.y0), (x, frame.y1), GRID, 1.0, "", "");
        if last {
            x_tick(svg, x, frame.y1, &fmt_num(time.t0 + v), tick_font, kept);
        } else {
            svg.line(
                "tick",
                (x, frame.y1),
                (x, frame.y1 + 4.0),
                AXIS,
                1.0,
                "",
                "",
            );
        }
    }
}

/// "Time (s)" under the lowest panel, whose bottom is at `bottom`.
pub(super) fn time_title(svg: &mut Svg, time: &TimeAxis, bottom: f64) {
    svg.text(
        (time.l + time.r) / 2.0,
        bottom + 38.0,
        "Time (s)",
        Font::plain(13.0),
        Anchor::Middle,
        TEXT,
        "",
    );
}

/// `caption` (if any) across the chart under the time axis' title, the lowest panel's bottom
/// at `bottom`, shrunk to fit the width.
pub(super) fn caption_across(svg: &mut Svg, bottom: f64, caption: &str) {
    if !caption.is_empty() {
        svg.text(
            WIDTH / 2.0,
            bottom + 56.0,
            caption,
            Font::plain(fit_size(caption, WIDTH - 20.0, 11.0, 7.0, false)),
            Anchor::Middle,
            MUTED,
            r#"class="caption""#,
        );
    }
}

/// A stacked panel's axis title, written upward at the chart's left edge beside `frame`, as
/// large as fits the panel's height `panel_h` (8 to 13 px).
pub(super) fn panel_axis_title(svg: &mut Svg, title: &str, frame: &BBox, panel_h: f64) {
    let size = fit_size(title, panel_h, 13.0, 8.0, false);
    svg.vtext(22.0, (frame.y0 + frame.y1) / 2.0, title, Font::plain(size));
}

/// The end of a chart of stacked panels (`frames`, top to bottom): "Time (s)" and the
/// caption under the lowest frame, then the finished document.
pub(super) fn finish_stacked(
    mut svg: Svg,
    frames: &[BBox],
    time: &TimeAxis,
    caption: &str,
) -> String {
    let last = frames[frames.len() - 1];
    time_title(&mut svg, time, last.y1);
    caption_across(&mut svg, last.y1, caption);
    svg.finish()
}

/// `bin_s` if it is a positive number of seconds, else 1 s.
pub(super) fn positive_bin(bin_s: f64) -> f64 {
    if bin_s.is_finite() && bin_s > 0.0 {
        bin_s
    } else {
        1.0
    }
}
