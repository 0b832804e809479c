//! Delay over time of several runs (the tunnel experiment): stacked panels on one logarithmic
//! delay axis, one step line per run.

use super::axes::{ceil125, floor125, fmt_duration, fmt_num, y_tick_label, LogAxis};
use super::colours::LabelColours;
use super::geometry::BBox;
use super::style::{AXIS, GRID, HEIGHT, WIDTH};
use super::svg::{polyline_d, title_text, Svg};
use super::text::{text_width, Font};
use super::time_panels::{
    finish_stacked, legend_rows, panel_axis_title, positive_bin, stacked_frames, step_points,
    time_grid, Swatch, TimeAxis,
};

/// One line of a [`delay_over_time_chart`] panel: its legend label and its bins, each
/// `(start_s, delay_ms)` (time in seconds, delay in ms); bins that are not consecutive (a bin
/// with no packet left out) break the line.
#[derive(Debug, Clone, PartialEq)]
pub struct DelaySeries {
    /// Legend label (the same label in every panel gets the same colour).
    pub label: String,
    /// `(bin start, s; delay, ms)`, in time order.
    pub bins: Vec<(f64, f64)>,
}

/// One panel of a [`delay_over_time_chart`]: its vertical axis title and its lines.
#[derive(Debug, Clone, PartialEq)]
pub struct DelayPanel {
    /// Title of the panel's delay axis, e.g. "Downlink delay (ms)".
    pub axis_title: String,
    /// The lines, drawn in order.
    pub series: Vec<DelaySeries>,
}

/// The colours of the lines, by label in order of first appearance.
const COLOURS: [&str; 6] = [
    "#c62828", "#1f5fb4", "#2e7d32", "#ef8a00", "#6a1b9a", "#555555",
];

/// Delay over time of several runs (SVG text): one panel per entry of `panels` (stacked, all
/// on one logarithmic delay axis in ms, from a round value below the lowest delay to one above
/// the highest), each line a step function over bins of `bin_s` seconds, time in seconds on
/// the horizontal axis. Colours follow the labels' order of first appearance (red, blue, then
/// others). The time before `measured_from_s` is shaded (0 shades nothing); `caption` is
/// written under the time axis. Nothing is written inside the panels, so no text can meet a
/// line.
pub fn delay_over_time_chart(
    title: &str,
    panels: &[DelayPanel],
    bin_s: f64,
    measured_from_s: f64,
    caption: &str,
) -> String {
    let tick_font = Font::plain(12.0);
    let bin_s = positive_bin(bin_s);
    let panels = finite_bins(panels);
    let (t0, t1, delay_lo, delay_hi) = ranges(&panels, bin_s);

    let mut svg = Svg::new(title);
    title_text(&mut svg, title);
    let colours = LabelColours::new(
        panels
            .iter()
            .flat_map(|p| p.series.iter())
            .map(|s| s.label.as_str()),
        &COLOURS,
    );

    // Left margin: the widest delay tick label, and the axis title.
    let l = (text_width(&fmt_num(delay_hi), tick_font.size, false) + 40.0).max(84.0);
    let r = WIDTH - 30.0;
    let shaded = measured_from_s.is_finite() && measured_from_s.min(t1) > t0;
    let ly = legend_rows(
        &mut svg,
        &legend_items(&colours, shaded, measured_from_s),
        l,
        r,
    );

    // Panels, stacked.
    let n = panels.len().max(1);
    let first_top = ly + 16.0;
    let bottom_y = HEIGHT - 66.0;
    let gap = 24.0;
    let panel_h = (bottom_y - first_top - gap * (n - 1) as f64) / n as f64;
    let frames = stacked_frames(l, r, first_top, panel_h, gap, n);
    let time = TimeAxis { l, r, t0, t1 };
    let time_ticks = time.ticks();
    let mut kept: Vec<BBox> = Vec::new();
    for (k, frame) in frames.iter().enumerate() {
        let axis = LogAxis {
            llo: delay_lo.log10(),
            lhi: delay_hi.log10(),
            plo: frame.y1,
            phi: frame.y0,
        };
        delay_grid(&mut svg, &axis, &time, tick_font, &mut kept);
        let last = k + 1 == frames.len();
        time_grid(
            &mut svg,
            frame,
            last,
            &time,
            &time_ticks,
            tick_font,
            &mut kept,
        );
        if shaded {
            svg.rect(
                "shade",
                &BBox {
                    x0: time.x(t0),
                    x1: time.x(measured_from_s.min(t1)),
                    ..*frame
                },
                "#000000",
                "none",
                r#"fill-opacity="0.07""#,
            );
        }
        if let Some(panel) = panels.get(k) {
            let fy = |v: f64| axis.map(v.clamp(delay_lo, delay_hi));
            draw_lines(&mut svg, panel, &colours, bin_s, &time, fy);
            panel_axis_title(&mut svg, &panel.axis_title, frame, panel_h);
        }
        svg.rect("frame", frame, "none", AXIS, "");
    }
    finish_stacked(svg, &frames, &time, caption)
}

/// The panels with only their bins of finite time and finite, non-negative delay.
fn finite_bins(panels: &[DelayPanel]) -> Vec<DelayPanel> {
    panels
        .iter()
        .map(|p| DelayPanel {
            axis_title: p.axis_title.clone(),
            series: p
                .series
                .iter()
                .map(|s| DelaySeries {
                    label: s.label.clone(),
                    bins: s
                        .bins
                        .iter()
                        .copied()
                        .filter(|(t, d)| t.is_finite() && d.is_finite() && *d >= 0.0)
                        .collect(),
                })
                .collect(),
        })
        .collect()
}

/// The time span `(t0, t1)` in seconds (from 0 or earlier) and the delay axis' range
/// `(lo, hi)` in ms (round values around the delays, at least a factor of two apart).
fn ranges(panels: &[DelayPanel], bin_s: f64) -> (f64, f64, f64, f64) {
    let all = || {
        panels
            .iter()
            .flat_map(|p| p.series.iter())
            .flat_map(|s| s.bins.iter())
    };
    let (t0, t1) = {
        let a = all().map(|b| b.0).fold(f64::INFINITY, f64::min);
        let b = all().map(|b| b.0 + bin_s).fold(f64::NEG_INFINITY, f64::max);
        if a.is_finite() && b > a {
            (a.min(0.0), b)
        } else {
            (0.0, 1.0)
        }
    };
    let dmin = all().map(|b| b.1.max(1.0)).fold(f64::INFINITY, f64::min);
    let dmax = all()
        .map(|b| b.1.max(1.0))
        .fold(f64::NEG_INFINITY, f64::max);
    let (delay_lo, delay_hi) = if dmin.is_finite() {
        (floor125(dmin), ceil125(dmax.max(dmin * 2.0)))
    } else {
        (10.0, 1000.0)
    };
    (t0, t1, delay_lo, delay_hi)
}

/// The legend: one line per label, and the shaded start if there is one.
fn legend_items(
    colours: &LabelColours,
    shaded: bool,
    measured_from_s: f64,
) -> Vec<(Swatch, String)> {
    let mut items: Vec<(Swatch, String)> = colours
        .labels()
        .iter()
        .map(|s| {
            let swatch = Swatch::Line {
                stroke: colours.colour(s),
                dash: "",
            };
            (swatch, s.clone())
        })
        .collect();
    if shaded {
        items.push((
            Swatch::Area {
                fill: "#000000",
                opacity: "0.07",
            },
            format!("not measured (first {})", fmt_duration(measured_from_s)),
        ));
    }
    items
}

/// Horizontal grid lines of a panel at the delay `axis`' ticks, with tick marks and labels at
/// the labelled ones.
fn delay_grid(
    svg: &mut Svg,
    axis: &LogAxis,
    time: &TimeAxis,
    tick_font: Font,
    kept: &mut Vec<BBox>,
) {
    let (l, r) = (time.l, time.r);
    for (v, lab) in axis.ticks(18.0) {
        let y = axis.map(v);
        svg.line(
            "grid",
            (l, y),
            (r, y),
            GRID,
            if lab { 1.0 } else { 0.6 },
            if lab { "" } else { "2 3" },
            "",
        );
        if lab {
            svg.line("tick", (l - 5.0, y), (l, y), AXIS, 1.0, "", "");
            y_tick_label(svg, l, y, &fmt_num(v), tick_font, kept);
        }
    }
}

/// The panel's lines: each run of consecutive bins drawn as one step line.
fn draw_lines(
    svg: &mut Svg,
    panel: &DelayPanel,
    colours: &LabelColours,
    bin_s: f64,
    time: &TimeAxis,
    fy: impl Fn(f64) -> f64 + Copy,
) {
    for s in &panel.series {
        let mut runs: Vec<Vec<(f64, f64, f64)>> = Vec::new();
        for &(t, d) in &s.bins {
            let seg = (t, t + bin_s, d);
            match runs.last_mut() {
                Some(run) if run.last().is_some_and(|p| (p.1 - t).abs() < bin_s * 0.01) => {
                    run.push(seg)
                }
                _ => runs.push(vec![seg]),
            }
        }
        for run in runs {
            let pts = step_points(&run, |t| time.x(t), fy);
            svg.path(
                &polyline_d(&pts),
                colours.colour(&s.label),
                1.5,
                "none",
                r#"class="delay""#,
            );
        }
    }
}
