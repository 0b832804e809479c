//! The `frontier` experiment's chart (and the `aqm` experiment's): utilization against
//! self-inflicted delay (reversed logarithmic axis, lower delay to the right, as Figures 7
//! and 8), one panel per group of link directions on the same axes: up to four side by side,
//! more in two rows (five as 3 + 2). One line per model in its colour through its sweep's
//! points in knob order (confidence or gain), a marker at each. Every model is named in the
//! legend above the panels; nothing is written inside them, so no text can meet a line or a
//! marker. One delay axis title, with its note on the scale, serves every panel.

use super::axes::{fmt_num, x_tick, y_tick_label, Linear, LogAxis};
use super::colours::{label_key, Palette};
use super::geometry::{BBox, Pt};
use super::lines::series_line;
use super::style::{AXIS, GRID, HEIGHT, TEXT, WIDTH};
use super::svg::{caption_lines, panel_title, title_text, Svg};
use super::text::{fit_size, text_width, Anchor, Font};
use super::time_panels::{legend_rows, Swatch};

/// One model's points on a panel of a [`frontier_chart`].
#[derive(Debug, Clone, PartialEq)]
pub struct FrontierSeries {
    /// Model name (a scheme's selects its colour, as on every chart).
    pub label: String,
    /// `(knob value, utilization 0..1, self-inflicted delay ms)` in the order the line joins
    /// them. A point with a non-finite figure is left out (and breaks the line).
    pub points: Vec<(f64, f64, f64)>,
}

/// One panel (a group of link directions) of a [`frontier_chart`].
#[derive(Debug, Clone, PartialEq)]
pub struct FrontierPanel {
    /// The panel's title.
    pub title: String,
    /// The models.
    pub series: Vec<FrontierSeries>,
}

/// Top of the panels below the legend's last row, px.
const BELOW_LEGEND: f64 = 34.0;
/// Bottom of the last row of panels above `lines` caption lines (one to four), px: room
/// below for tick labels, the axis title and the caption, whose last line is 18 px above
/// the bottom edge.
fn bottom(lines: usize) -> f64 {
    HEIGHT - 74.0 - 14.0 * (lines.clamp(1, 4) - 1) as f64
}
/// Vertical gap between two rows of panels, px: the upper row's tick labels and the lower
/// row's titles.
const ROW_GAP: f64 = 50.0;
/// Most panels side by side in one row; more go in two rows.
const MAX_COLUMNS: usize = 4;
/// The delay axis' title, for every panel.
const X_TITLE: &str = "Self-inflicted delay (ms; log scale, reversed: lower delay to the right)";
/// Right edge of the right panel, px.
const RIGHT: f64 = WIDTH - 24.0;
/// Left edge of the left panel, px.
const LEFT: f64 = 84.0;
/// Gap between the panels, px.
const COLUMN_GAP: f64 = 36.0;

/// Every finite point of every panel.
fn all_points(panels: &[FrontierPanel]) -> impl Iterator<Item = (f64, f64)> + '_ {
    panels
        .iter()
        .flat_map(|p| p.series.iter())
        .flat_map(|s| s.points.iter())
        .filter(|p| p.1.is_finite() && p.2.is_finite())
        .map(|p| (p.1, p.2))
}

/// The utilization axis' range, percent: multiples of 10 around every value, within 0..100
/// unless a value lies beyond.
fn y_range(panels: &[FrontierPanel]) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for (u, _) in all_points(panels) {
        lo = lo.min(100.0 * u);
        hi = hi.max(100.0 * u);
    }
    if !lo.is_finite() {
        return (0.0, 100.0);
    }
    let lo = ((lo / 10.0).floor() * 10.0).clamp(0.0, 90.0);
    let hi = ((hi / 10.0).ceil() * 10.0).max(lo + 10.0);
    (lo, hi)
}

/// Columns and rows of the grid of `n` panels: one row of up to `MAX_COLUMNS` (4), else two
/// rows, the first the longer.
fn grid_shape(n: usize) -> (usize, usize) {
    let columns = if n <= MAX_COLUMNS {
        n.max(1)
    } else {
        n.div_ceil(2)
    };
    (columns, n.div_ceil(columns).max(1))
}

/// The chart (SVG text): a panel per entry of `panels` (side by side, or in two rows when
/// there are more than `MAX_COLUMNS` (4)), `caption`'s lines (four fit) at the bottom. Panel
/// titles should be short (a panel may be under a third of the width): the caption says more.
pub fn frontier_chart(title: &str, panels: &[FrontierPanel], caption: &[&str]) -> String {
    let tick_font = Font::plain(12.0);
    let mut svg = Svg::new(title);
    title_text(&mut svg, title);
    let mut palette = Palette::spread();
    let mut items: Vec<(Swatch, String)> = Vec::new();
    for s in panels.iter().flat_map(|p| p.series.iter()) {
        if !items.iter().any(|(_, l)| *l == s.label) {
            let stroke = palette.color(&label_key(&s.label));
            items.push((Swatch::Line { stroke, dash: "" }, s.label.clone()));
        }
    }
    let top = legend_rows(&mut svg, &items, LEFT, RIGHT) + BELOW_LEGEND;
    let (columns, rows) = grid_shape(panels.len());
    let panel_w = (RIGHT - LEFT - COLUMN_GAP * (columns as f64 - 1.0)) / columns as f64;
    let bottom = bottom(caption.len());
    let panel_h = (bottom - top - ROW_GAP * (rows as f64 - 1.0)) / rows as f64;
    let (dmin, dmax) = all_points(panels)
        .map(|p| p.1.max(1.0))
        .fold((f64::INFINITY, 0.0f64), |(a, b), d| (a.min(d), b.max(d)));
    let (dmin, dmax) = if dmin.is_finite() {
        (dmin, dmax)
    } else {
        (10.0, 1000.0)
    };
    let (ylo, yhi) = y_range(panels);
    let mut kept: Vec<BBox> = Vec::new();
    for (k, panel) in panels.iter().enumerate() {
        let (col, row) = (k % columns, k / columns);
        let x0 = LEFT + col as f64 * (panel_w + COLUMN_GAP);
        let y0 = top + row as f64 * (panel_h + ROW_GAP);
        let frame = BBox {
            x0,
            y0,
            x1: x0 + panel_w,
            y1: y0 + panel_h,
        };
        // Reversed: the least delay on the right.
        let x = LogAxis::covering(dmin, dmax, frame.x1, frame.x0);
        let pad = 0.03 * (yhi - ylo);
        let y = Linear {
            lo: ylo - pad,
            hi: yhi + pad,
            p0: frame.y1,
            p1: frame.y0,
            step: 10.0,
        };
        panel_title(&mut svg, &frame, &panel.title);
        grid(
            &mut svg,
            &frame,
            (&x, &y),
            (ylo, yhi, col == 0),
            tick_font,
            &mut kept,
        );
        for s in &panel.series {
            let colour = palette.color(&label_key(&s.label));
            let placed: Vec<(f64, f64, Option<Pt>)> = s
                .points
                .iter()
                .map(|&(v, u, d)| {
                    let pos = (u.is_finite() && d.is_finite())
                        .then(|| (x.map(d.max(1.0)), y.map(100.0 * u)));
                    (v, u, pos)
                })
                .collect();
            series_line(&mut svg, &s.label, &placed, colour);
        }
        svg.rect("frame", &frame, "none", AXIS, "");
    }
    axis_titles(&mut svg, top, bottom);
    caption_lines(&mut svg, caption, bottom + 56.0);
    svg.finish()
}

/// A panel's grid: the delay ticks (labelled where they keep apart), a line every 10% of
/// utilization from `ylo` to `yhi`, labelled on the `first` panel.
fn grid(
    svg: &mut Svg,
    f: &BBox,
    (x, y): (&LogAxis, &Linear),
    (ylo, yhi, first): (f64, f64, bool),
    font: Font,
    kept: &mut Vec<BBox>,
) {
    let w = |v: f64| text_width(&fmt_num(v), font.size, false);
    for (v, lab) in x.ticks_spaced(|a, b| (w(a) + w(b)) / 2.0 + 14.0) {
        let px = x.map(v);
        let (width, dash) = if lab { (1.0, "") } else { (0.6, "2 3") };
        svg.line("grid", (px, f.y0), (px, f.y1), GRID, width, dash, "");
        if lab {
            x_tick(svg, px, f.y1, &fmt_num(v), font, kept);
        }
    }
    let mut v = ylo;
    while v <= yhi + 1e-9 {
        let py = y.map(v);
        svg.line("grid", (f.x0, py), (f.x1, py), GRID, 1.0, "", "");
        if first {
            svg.line("tick", (f.x0 - 5.0, py), (f.x0, py), AXIS, 1.0, "", "");
            y_tick_label(svg, f.x0, py, &fmt_num(v), font, kept);
        }
        v += 10.0;
    }
}

/// The axis titles: the delay axis' (with its note on the scale) once under the panels, the
/// utilization axis' turned on the left.
fn axis_titles(svg: &mut Svg, top: f64, bottom: f64) {
    let f = Font::plain(fit_size(X_TITLE, RIGHT - LEFT, 13.0, 8.0, false));
    let mid = (LEFT + RIGHT) / 2.0;
    svg.text(mid, bottom + 38.0, X_TITLE, f, Anchor::Middle, TEXT, "");
    let t = "Utilization (%)";
    let f = Font::plain(fit_size(t, bottom - top, 13.0, 8.0, false));
    svg.vtext(20.0, (top + bottom) / 2.0, t, f);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_per_model_on_every_panel_lower_delay_to_the_right() {
        let panel = |title: &str| FrontierPanel {
            title: title.into(),
            series: vec![
                FrontierSeries {
                    label: "sprout".into(),
                    points: vec![
                        (0.5, 0.8, 1000.0),
                        (0.95, 0.47, 380.0),
                        (0.98, f64::NAN, 1.0),
                    ],
                },
                FrontierSeries {
                    label: "sprout-ewma".into(),
                    points: vec![(0.0625, 0.75, 400.0), (0.125, 0.8, 550.0)],
                },
            ],
        };
        let svg = frontier_chart("t", &[panel("all"), panel("one")], &["caption"]);
        // Markers: 2 + 2 per panel and a legend swatch per model.
        assert_eq!(svg.matches(r#"class="marker""#).count(), 2 * 4 + 2);
        assert_eq!(svg.matches(r#"class="series""#).count(), 2 * 2);
        assert!(svg.contains(r##"stroke="#d62728""##) && svg.contains(r##"stroke="#ff7f0e""##));
        assert_eq!(svg.matches(r#"class="frame""#).count(), 2);
        // 380 ms lies right of 1,000 ms: the axis is reversed.
        let cx = |delay_y: &str| -> f64 {
            let at = svg.find(delay_y).expect("the marker");
            let head = &svg[..at];
            let c = head.rfind("cx=\"").expect("its cx") + 4;
            head[c..].split('"').next().unwrap().parse().unwrap()
        };
        assert!(cx(r#"data-x="0.95""#) > cx(r#"data-x="0.5""#));
        // Utilization from 40% to 80%, labelled every 10.
        assert!(svg.contains(">40</text>") && svg.contains(">80</text>"));
        assert!(!svg.contains(">30</text>"));
    }
}
