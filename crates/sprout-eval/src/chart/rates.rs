//! The `rates` experiment's chart: utilization (top row, linear) and self-inflicted delay
//! (bottom row, logarithmic) of each scheme against the links' rate, on the left the paper's
//! links' 8-direction averages against the scale factor, on the right the constant links
//! against their rate. One line per scheme in the scheme's colour with a marker at each
//! point; nothing is written inside the panels, so no text can meet a line or a marker.

use super::axes::{ceil125, floor125, fmt_num, x_tick, y_tick_label, Linear, LogAxis};
use super::colours::{label_key, Palette};
use super::geometry::{BBox, Pt};
use super::lines::series_line;
use super::style::{AXIS, GRID, HEIGHT, TEXT, WIDTH};
use super::svg::{caption_lines, panel_title, title_text, Svg};
use super::text::{fit_size, text_width, Anchor, Font};
use super::time_panels::{legend_rows, Swatch};

/// One scheme's points on one side of a [`rates_chart`].
#[derive(Debug, Clone, PartialEq)]
pub struct RatesSeries {
    /// Scheme name (also selects its colour, as on every chart).
    pub label: String,
    /// `(x, utilization 0..1, self-inflicted delay ms)`: x is the scale factor on the left,
    /// Mbit/s on the right. A NaN figure is left out.
    pub points: Vec<(f64, f64, f64)>,
}

/// Top of the panels below the legend's last row, px.
const BELOW_LEGEND: f64 = 34.0;
/// Bottom of the lower panels, px (room below for tick labels, axis titles, the caption).
const BOTTOM: f64 = HEIGHT - 78.0;
/// Right edge of the right panels, px.
const RIGHT: f64 = WIDTH - 24.0;
/// Gap between the two columns, px.
const COLUMN_GAP: f64 = 36.0;
/// Gap between the two rows (room for the lower panels' titles), px.
const ROW_GAP: f64 = 34.0;

/// The x values of `series`, ascending without repeats.
fn xs(series: &[RatesSeries]) -> Vec<f64> {
    let mut v: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

/// The delay axis' range over both sides, ms (round values, at least a factor of ten apart).
fn delay_range(sides: [&[RatesSeries]; 2]) -> (f64, f64) {
    let d: Vec<f64> = sides
        .iter()
        .flat_map(|s| s.iter())
        .flat_map(|s| s.points.iter().map(|p| p.2))
        .filter(|d| d.is_finite())
        .map(|d| d.max(1.0))
        .collect();
    if d.is_empty() {
        return (1.0, 1000.0);
    }
    let lo = floor125(d.iter().copied().fold(f64::INFINITY, f64::min) / 1.15);
    let hi = d.iter().copied().fold(0.0, f64::max) * 1.15;
    (lo, ceil125(hi.max(lo * 10.0)))
}

/// A panel's frame and its x axis; `row` 0 is utilization, 1 delay.
struct Panel {
    frame: BBox,
    x: LogAxis,
}

/// The chart (SVG text): `scaled` (the paper's links' averages against the scale factor) on
/// the left, `constant` (constant links against Mbit/s) on the right; utilization above,
/// self-inflicted delay below; `caption`'s lines (two fit) at the bottom.
pub fn rates_chart(
    title: &str,
    scaled: &[RatesSeries],
    constant: &[RatesSeries],
    caption: &[&str],
) -> String {
    let tick_font = Font::plain(12.0);
    let mut svg = Svg::new(title);
    title_text(&mut svg, title);
    let (lo, hi) = delay_range([scaled, constant]);
    let left = (text_width(&fmt_num(hi), tick_font.size, false) + 50.0).max(84.0);
    let mut palette = Palette::new();
    let mut names: Vec<String> = Vec::new();
    for s in scaled.iter().chain(constant) {
        if !names.contains(&s.label) {
            names.push(s.label.clone());
        }
    }
    let items: Vec<(Swatch, String)> = names
        .iter()
        .map(|n| {
            let stroke = palette.color(&label_key(n));
            (Swatch::Line { stroke, dash: "" }, n.clone())
        })
        .collect();
    let top = legend_rows(&mut svg, &items, left, RIGHT) + BELOW_LEGEND;
    let panel_w = (RIGHT - left - COLUMN_GAP) / 2.0;
    let panel_h = (BOTTOM - top - ROW_GAP) / 2.0;
    let mut kept: Vec<BBox> = Vec::new();
    let sides: [(&[RatesSeries], &str, &str); 2] = [
        (scaled, "paper's links, scaled (average)", "x"),
        (constant, "constant links", ""),
    ];
    for (col, (series, side_title, prefix)) in sides.into_iter().enumerate() {
        let x0 = left + col as f64 * (panel_w + COLUMN_GAP);
        let ticks = xs(series);
        let (x_lo, x_hi) = match (ticks.first(), ticks.last()) {
            (Some(&a), Some(&b)) if b > a => (a / 1.4, b * 1.4),
            (Some(&a), _) => (a / 2.0, a * 2.0),
            _ => (1.0, 10.0),
        };
        for row in 0..2 {
            let y0 = top + row as f64 * (panel_h + ROW_GAP);
            let frame = BBox {
                x0,
                y0,
                x1: x0 + panel_w,
                y1: y0 + panel_h,
            };
            let p = Panel {
                frame,
                x: LogAxis {
                    llo: x_lo.log10(),
                    lhi: x_hi.log10(),
                    plo: frame.x0,
                    phi: frame.x1,
                },
            };
            let title = match row {
                0 => format!("{side_title}: utilization"),
                _ => format!("{side_title}: self-inflicted delay"),
            };
            panel_title(&mut svg, &frame, &title);
            let y: Box<dyn Fn(f64) -> f64> = if row == 0 {
                // 0-100% with a little room above, so that a full link's marker clears the
                // frame; ticks every 25 up to 100.
                let axis = Linear {
                    lo: 0.0,
                    hi: 108.0,
                    p0: frame.y1,
                    p1: frame.y0,
                    step: 25.0,
                };
                y_grid_linear(&mut svg, &p, &axis, col == 0, tick_font, &mut kept);
                Box::new(move |u: f64| axis.map(100.0 * u))
            } else {
                let axis = LogAxis {
                    llo: lo.log10(),
                    lhi: hi.log10(),
                    plo: frame.y1,
                    phi: frame.y0,
                };
                y_grid_log(&mut svg, &p, &axis, col == 0, tick_font, &mut kept);
                Box::new(move |d: f64| axis.map(d.max(1.0)))
            };
            for &x in &ticks {
                let px = p.x.map(x);
                svg.line("grid", (px, frame.y0), (px, frame.y1), GRID, 1.0, "", "");
                if row == 1 {
                    let label = format!("{prefix}{}", fmt_num(x));
                    x_tick(&mut svg, px, frame.y1, &label, tick_font, &mut kept);
                }
            }
            for s in series {
                let pts: Vec<(f64, f64)> = s
                    .points
                    .iter()
                    .map(|&(x, u, d)| (x, if row == 0 { u } else { d }))
                    .collect();
                let colour = palette.color(&label_key(&s.label));
                draw_series(&mut svg, &s.label, &pts, &p, &*y, colour);
            }
            svg.rect("frame", &frame, "none", AXIS, "");
        }
    }
    axis_titles(&mut svg, left, panel_w, (top, panel_h));
    caption_lines(&mut svg, caption, BOTTOM + 58.0);
    svg.finish()
}

/// A utilization panel's grid, its ticks labelled (in %) on the `first` column.
fn y_grid_linear(
    svg: &mut Svg,
    p: &Panel,
    axis: &Linear,
    first: bool,
    font: Font,
    kept: &mut Vec<BBox>,
) {
    let f = &p.frame;
    for v in axis.ticks() {
        let y = axis.map(v);
        svg.line("grid", (f.x0, y), (f.x1, y), GRID, 1.0, "", "");
        if first {
            svg.line("tick", (f.x0 - 5.0, y), (f.x0, y), AXIS, 1.0, "", "");
            y_tick_label(svg, f.x0, y, &fmt_num(v), font, kept);
        }
    }
}

/// A delay panel's grid, its ticks labelled (in ms) on the `first` column.
fn y_grid_log(
    svg: &mut Svg,
    p: &Panel,
    axis: &LogAxis,
    first: bool,
    font: Font,
    kept: &mut Vec<BBox>,
) {
    let f = &p.frame;
    for (v, lab) in axis.ticks(18.0) {
        let y = axis.map(v);
        let (w, dash) = if lab { (1.0, "") } else { (0.6, "2 3") };
        svg.line("grid", (f.x0, y), (f.x1, y), GRID, w, dash, "");
        if lab && first {
            svg.line("tick", (f.x0 - 5.0, y), (f.x0, y), AXIS, 1.0, "", "");
            y_tick_label(svg, f.x0, y, &fmt_num(v), font, kept);
        }
    }
}

/// One series in one panel: a line through its points in x order (broken at a NaN), and a
/// marker at each.
fn draw_series(
    svg: &mut Svg,
    label: &str,
    points: &[(f64, f64)],
    p: &Panel,
    y: &dyn Fn(f64) -> f64,
    colour: &'static str,
) {
    let mut pts = points.to_vec();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let placed: Vec<(f64, f64, Option<Pt>)> = pts
        .iter()
        .map(|&(x, v)| {
            let pos = (x.is_finite() && x > 0.0 && v.is_finite()).then(|| (p.x.map(x), y(v)));
            (x, v, pos)
        })
        .collect();
    series_line(svg, label, &placed, colour);
}

/// The axis titles: each column's x title under it, each row's y title turned on the left.
fn axis_titles(svg: &mut Svg, left: f64, panel_w: f64, (top, panel_h): (f64, f64)) {
    for (col, t) in [
        "Scale factor (log scale)",
        "Rate each way (Mbit/s, log scale)",
    ]
    .iter()
    .enumerate()
    {
        let mid = left + col as f64 * (panel_w + COLUMN_GAP) + panel_w / 2.0;
        svg.text(
            mid,
            BOTTOM + 40.0,
            t,
            Font::plain(13.0),
            Anchor::Middle,
            TEXT,
            "",
        );
    }
    for (row, t) in ["Utilization (%)", "Self-inflicted delay (ms, log)"]
        .iter()
        .enumerate()
    {
        let y0 = top + row as f64 * (panel_h + ROW_GAP);
        let f = Font::plain(fit_size(t, panel_h, 13.0, 8.0, false));
        svg.vtext(20.0, y0 + panel_h / 2.0, t, f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_panels_a_line_per_scheme_and_ticks_at_every_rate() {
        let s = |label: &str, pts: Vec<(f64, f64, f64)>| RatesSeries {
            label: label.into(),
            points: pts,
        };
        let scaled = [
            s(
                "sprout",
                vec![(1.0, 0.47, 380.0), (4.0, 0.4, 200.0), (16.0, 0.38, 100.0)],
            ),
            s(
                "sprout-wide",
                vec![
                    (1.0, 0.44, 340.0),
                    (4.0, f64::NAN, 250.0),
                    (16.0, 0.67, 207.0),
                ],
            ),
        ];
        let constant = [s(
            "sprout-wide",
            vec![(10.0, 0.9, 30.0), (1000.0, 0.8, 0.2)],
        )];
        let svg = rates_chart("t", &scaled, &constant, &["caption"]);
        // Markers: 3 + 2 (one NaN utilization) + 3 + 3 on the left, 2 + 2 on the right, and
        // a legend swatch per scheme.
        assert_eq!(
            svg.matches(r#"class="marker""#).count(),
            3 + 2 + 3 + 3 + 2 + 2 + 2
        );
        // The NaN breaks sprout-wide's utilization line into single points (no path): sprout
        // 2 paths, sprout-wide 1 on the left and 2 on the right.
        assert_eq!(svg.matches(r#"class="series""#).count(), 2 + 1 + 2);
        assert!(svg.contains(r##"stroke="#d62728""##) && svg.contains(r##"stroke="#8e0152""##));
        for t in [">x1</text>", ">x16</text>", ">10</text>", ">1,000</text>"] {
            assert!(svg.contains(t), "{t}");
        }
        assert_eq!(svg.matches(r#"class="frame""#).count(), 4);
    }
}
