//! Rate over time of link traces (`sprout traces plot`), as mahimahi's capacity graphs:
//! stacked panels, each with its own linear axis, one step line or area per series.

use super::axes::{fmt_num, y_tick_label, Linear};
use super::colours::LabelColours;
use super::geometry::BBox;
use super::style::{AXIS, GRID, HEIGHT, WIDTH};
use super::svg::{polyline_d, title_text, Svg};
use super::text::{text_width, Font};
use super::time_panels::{
    finish_stacked, legend_rows, panel_axis_title, positive_bin, stacked_frames, step_points,
    time_grid, Swatch, TimeAxis,
};

/// One series of a [`rate_over_time_chart`] panel: its legend label and its values, one per
/// bin, bin `k` covering `[k * bin_s, (k + 1) * bin_s)` seconds (values in the panel's unit,
/// e.g. Mbit/s; values that are not finite or are negative are drawn as 0).
#[derive(Debug, Clone, PartialEq)]
pub struct RateSeries {
    /// Legend label (the same label in every panel gets the same colour).
    pub label: String,
    /// One value per bin, from time 0.
    pub values: Vec<f64>,
}

/// One panel of a [`rate_over_time_chart`]: its vertical axis title and its series.
#[derive(Debug, Clone, PartialEq)]
pub struct RatePanel {
    /// Title of the panel's axis, e.g. "Downlink (Mbit/s)".
    pub axis_title: String,
    /// The series, drawn in order.
    pub series: Vec<RateSeries>,
}

/// The colours of the series, by label in order of first appearance.
const COLOURS: [&str; 8] = [
    "#1f5fb4", "#c62828", "#2e7d32", "#ef8a00", "#6a1b9a", "#555555", "#00838f", "#8d6e63",
];

/// A value as drawn: itself if it is finite and positive, else 0.
fn clean(v: f64) -> f64 {
    if v.is_finite() && v > 0.0 {
        v
    } else {
        0.0
    }
}

/// Rate over time (SVG text), as mahimahi's capacity graphs: one panel per entry of `panels`
/// (stacked, each with its own linear axis from 0), each series a step function over bins of
/// `bin_s` seconds, time in seconds on the horizontal axis. A panel with one series draws it
/// as a filled area (class `capacity`), a panel with several draws lines (class `rate`).
/// Colours follow the labels' order of first appearance; the legend names them. `caption` is
/// written under the time axis. Nothing is written inside the panels, so no text can meet a
/// line.
pub fn rate_over_time_chart(
    title: &str,
    panels: &[RatePanel],
    bin_s: f64,
    caption: &str,
) -> String {
    let tick_font = Font::plain(12.0);
    let bin_s = positive_bin(bin_s);
    let bins = panels
        .iter()
        .flat_map(|p| p.series.iter())
        .map(|s| s.values.len())
        .max()
        .unwrap_or(0);
    let t1 = (bins as f64 * bin_s).max(bin_s);

    let mut svg = Svg::new(title);
    title_text(&mut svg, title);
    let colours = LabelColours::new(
        panels
            .iter()
            .flat_map(|p| p.series.iter())
            .map(|s| s.label.as_str()),
        &COLOURS,
    );

    // Axes per panel, and the left margin: room for the widest tick label and the axis title.
    let axes: Vec<Linear> = panels.iter().map(panel_axis).collect();
    let widest = axes
        .iter()
        .flat_map(|a| a.ticks())
        .map(|v| text_width(&fmt_num(v), tick_font.size, false))
        .fold(text_width("100", tick_font.size, false), f64::max);
    let l = (widest + 40.0).max(84.0);
    let r = WIDTH - 30.0;
    let ly = legend_rows(&mut svg, &legend_items(&colours, l, r), l, r);

    // Panels, stacked.
    let n = panels.len().max(1);
    let first_top = ly + 16.0;
    let bottom_y = HEIGHT - 66.0;
    let gap = 24.0;
    let panel_h = ((bottom_y - first_top - gap * (n - 1) as f64) / n as f64).max(10.0);
    let frames = stacked_frames(l, r, first_top, panel_h, gap, n);
    let time = TimeAxis { l, r, t0: 0.0, t1 };
    let time_ticks = time.ticks();
    let mut kept: Vec<BBox> = Vec::new();
    for (k, frame) in frames.iter().enumerate() {
        let mut axis = axes
            .get(k)
            .copied()
            .unwrap_or_else(|| Linear::nice(0.0, 1.0, 4.0, 0.0, 1.0));
        axis.p0 = frame.y1;
        axis.p1 = frame.y0;
        rate_grid(&mut svg, &axis, &time, panel_h, tick_font, &mut kept);
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
        if let Some(panel) = panels.get(k) {
            draw_series(&mut svg, panel, &colours, bin_s, &time, &axis, frame);
            panel_axis_title(&mut svg, &panel.axis_title, frame, panel_h);
        }
        svg.rect("frame", frame, "none", AXIS, "");
    }
    finish_stacked(svg, &frames, &time, caption)
}

/// A panel's axis: from 0 over its highest value (pixels set later).
fn panel_axis(p: &RatePanel) -> Linear {
    let max = p
        .series
        .iter()
        .flat_map(|s| s.values.iter())
        .map(|&v| clean(v))
        .fold(0.0, f64::max);
    Linear::nice(0.0, if max > 0.0 { max } else { 1.0 }, 4.0, 0.0, 1.0)
}

/// The legend: one filled box per label, each cut short to fit the row from `l` to `r`.
fn legend_items(colours: &LabelColours, l: f64, r: f64) -> Vec<(Swatch, String)> {
    let legend_font = Font::plain(12.0);
    colours
        .labels()
        .iter()
        .map(|label| {
            let swatch = Swatch::Area {
                fill: colours.colour(label),
                opacity: "0.6",
            };
            (swatch, fit_legend(label, r - l - 28.0, legend_font))
        })
        .collect()
}

/// Horizontal grid lines and tick marks of a panel at its `axis`' ticks, labelled at least
/// 16 px apart: every other one (or fewer) on small panels.
fn rate_grid(
    svg: &mut Svg,
    axis: &Linear,
    time: &TimeAxis,
    panel_h: f64,
    tick_font: Font,
    kept: &mut Vec<BBox>,
) {
    let (l, r) = (time.l, time.r);
    let ticks = axis.ticks();
    let px_per_tick = panel_h / (ticks.len().max(2) - 1) as f64;
    let every = (16.0 / px_per_tick).ceil().max(1.0) as usize;
    for (i, &v) in ticks.iter().enumerate() {
        let y = axis.map(v);
        svg.line("grid", (l, y), (r, y), GRID, 1.0, "", "");
        svg.line("tick", (l - 5.0, y), (l, y), AXIS, 1.0, "", "");
        if i % every != 0 {
            continue;
        }
        y_tick_label(svg, l, y, &fmt_num(v), tick_font, kept);
    }
}

/// A panel's series: one filled area if it is alone, else one line each.
fn draw_series(
    svg: &mut Svg,
    panel: &RatePanel,
    colours: &LabelColours,
    bin_s: f64,
    time: &TimeAxis,
    axis: &Linear,
    frame: &BBox,
) {
    let fx = |t: f64| time.x(t);
    let fy = |v: f64| axis.map(clean(v).min(axis.hi));
    let filled = panel.series.len() == 1;
    for s in &panel.series {
        if s.values.is_empty() {
            continue;
        }
        let segs: Vec<(f64, f64, f64)> = s
            .values
            .iter()
            .enumerate()
            .map(|(i, &v)| (i as f64 * bin_s, (i + 1) as f64 * bin_s, v))
            .collect();
        let line = step_points(&segs, fx, fy);
        let colour = colours.colour(&s.label);
        if filled {
            let mut outline = vec![(fx(0.0), frame.y1)];
            outline.extend(line.iter().copied());
            outline.push((fx(segs[segs.len() - 1].1), frame.y1));
            outline.push(outline[0]);
            svg.path(
                &polyline_d(&outline),
                colour,
                1.0,
                colour,
                r#"fill-opacity="0.45" class="capacity""#,
            );
        } else {
            svg.path(&polyline_d(&line), colour, 1.3, "none", r#"class="rate""#);
        }
    }
}

/// `text` cut short with an ellipsis to fit `width` pixels in `font` (a legend entry).
fn fit_legend(text: &str, width: f64, font: Font) -> String {
    if text_width(text, font.size, font.bold) <= width {
        return text.to_string();
    }
    let mut chars: Vec<char> = text.chars().collect();
    while !chars.is_empty() {
        chars.pop();
        let s: String = chars.iter().collect::<String>() + "…";
        if text_width(&s, font.size, font.bold) <= width {
            return s;
        }
    }
    "…".into()
}
