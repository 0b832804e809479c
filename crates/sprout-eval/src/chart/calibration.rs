//! The `calibration` experiment's chart: reliability diagrams, measured coverage against
//! stated confidence, one panel per horizon side by side on one coverage axis. One line per
//! model with a confidence, in the scheme's colour, with a marker at each confidence; a model
//! without one (Sprout-EWMA) a dashed horizontal line at its coverage; the diagonal (coverage =
//! confidence) dashed grey. Every series is named in the legend above the panels; nothing is
//! written inside them, so no text can meet a line or a marker.

use super::axes::{fmt_num, x_tick, y_tick_label, Linear};
use super::colours::{label_key, Palette};
use super::geometry::{BBox, Pt};
use super::lines::series_line;
use super::style::{AXIS, GRID, HEIGHT, TEXT, WIDTH};
use super::svg::{caption_lines, esc, panel_title, title_text, Svg};
use super::text::{fit_size, Anchor, Font};
use super::time_panels::{legend_rows, Swatch};

/// One model's points on a panel of a [`calibration_chart`].
#[derive(Debug, Clone, PartialEq)]
pub struct CalibrationSeries {
    /// Scheme name (also selects its colour, as on every chart).
    pub label: String,
    /// `(stated confidence, measured coverage)`, both 0..1. A NaN coverage is left out.
    pub points: Vec<(f64, f64)>,
}

/// One panel (a horizon) of a [`calibration_chart`].
#[derive(Debug, Clone, PartialEq)]
pub struct CalibrationPanel {
    /// The panel's title.
    pub title: String,
    /// The models with a confidence.
    pub series: Vec<CalibrationSeries>,
    /// The models without one: `(scheme name, coverage 0..1)`, drawn as horizontal lines.
    pub flat: Vec<(String, f64)>,
}

/// The diagonal's legend entry.
const DIAGONAL: &str = "coverage = confidence";
/// The diagonal's colour (no scheme's, no other series').
const DIAGONAL_COLOUR: &str = "#999999";
/// Dashes of a model without a confidence.
const FLAT_DASH: &str = "7 4";
/// Top of the panels below the legend's last row, px.
const BELOW_LEGEND: f64 = 34.0;
/// Bottom of the panels, px (room below for tick labels, the axis title, the caption).
const BOTTOM: f64 = HEIGHT - 78.0;
/// Right edge of the right panel, px.
const RIGHT: f64 = WIDTH - 24.0;
/// Left edge of the left panel, px.
const LEFT: f64 = 84.0;
/// Gap between the panels, px.
const COLUMN_GAP: f64 = 36.0;
/// The confidence axis' range, percent (ticks every 10).
const X_RANGE: (f64, f64) = (40.0, 100.0);

/// The coverage axis' lower end, percent: 40, or lower (a multiple of 10) to hold every value.
fn y_low(panels: &[CalibrationPanel]) -> f64 {
    let min = panels
        .iter()
        .flat_map(|p| {
            p.series
                .iter()
                .flat_map(|s| s.points.iter().map(|q| q.1))
                .chain(p.flat.iter().map(|f| f.1))
        })
        .filter(|v| v.is_finite())
        .fold(1.0, f64::min);
    ((100.0 * min / 10.0).floor() * 10.0).clamp(0.0, 40.0)
}

/// The chart (SVG text): a panel per entry of `panels` side by side, `caption`'s lines (two
/// fit) at the bottom.
pub fn calibration_chart(title: &str, panels: &[CalibrationPanel], caption: &[&str]) -> String {
    let tick_font = Font::plain(12.0);
    let mut svg = Svg::new(title);
    title_text(&mut svg, title);
    let mut palette = Palette::new();
    let items = legend_items(panels, &mut palette);
    let top = legend_rows(&mut svg, &items, LEFT, RIGHT) + BELOW_LEGEND;
    let n = panels.len().max(1) as f64;
    let panel_w = (RIGHT - LEFT - COLUMN_GAP * (n - 1.0)) / n;
    let lo = y_low(panels);
    let mut kept: Vec<BBox> = Vec::new();
    for (col, panel) in panels.iter().enumerate() {
        let x0 = LEFT + col as f64 * (panel_w + COLUMN_GAP);
        let frame = BBox {
            x0,
            y0: top,
            x1: x0 + panel_w,
            y1: BOTTOM,
        };
        // A little room beyond the ends, so that a marker at 100% clears the frame.
        let pad = |(a, b): (f64, f64)| (a - 0.03 * (b - a), b + 0.03 * (b - a));
        let (xa, xb) = pad(X_RANGE);
        let (ya, yb) = pad((lo, 100.0));
        let x = Linear {
            lo: xa,
            hi: xb,
            p0: frame.x0,
            p1: frame.x1,
            step: 10.0,
        };
        let y = Linear {
            lo: ya,
            hi: yb,
            p0: frame.y1,
            p1: frame.y0,
            step: 10.0,
        };
        panel_title(&mut svg, &frame, &panel.title);
        grid(
            &mut svg,
            &frame,
            (&x, &y),
            (lo, col == 0),
            tick_font,
            &mut kept,
        );
        let diag_lo = X_RANGE.0.max(lo);
        svg.line(
            "reference",
            (x.map(diag_lo), y.map(diag_lo)),
            (x.map(100.0), y.map(100.0)),
            DIAGONAL_COLOUR,
            1.2,
            "3 3",
            &format!(r#"data-series="{DIAGONAL}""#),
        );
        for (label, cov) in panel.flat.iter().filter(|f| f.1.is_finite()) {
            let colour = palette.color(&label_key(label));
            let py = y.map(100.0 * cov);
            svg.line(
                "series",
                (frame.x0, py),
                (frame.x1, py),
                colour,
                1.8,
                FLAT_DASH,
                &format!(r#"data-series="{}" data-y="{cov}""#, esc(label)),
            );
        }
        for s in &panel.series {
            let colour = palette.color(&label_key(&s.label));
            draw_series(&mut svg, s, (&x, &y), colour);
        }
        svg.rect("frame", &frame, "none", AXIS, "");
    }
    axis_titles(&mut svg, panel_w, n as usize, top);
    caption_lines(&mut svg, caption, BOTTOM + 58.0);
    svg.finish()
}

/// The legend: each model once (solid for one with a confidence, dashed for one without),
/// then the diagonal.
fn legend_items(panels: &[CalibrationPanel], palette: &mut Palette) -> Vec<(Swatch, String)> {
    let mut items: Vec<(Swatch, String)> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for p in panels {
        let models = p.series.iter().map(|s| (&s.label, "")).chain(
            p.flat
                .iter()
                .filter(|f| f.1.is_finite())
                .map(|f| (&f.0, FLAT_DASH)),
        );
        for (label, dash) in models {
            if !seen.contains(label) {
                seen.push(label.clone());
                let stroke = palette.color(&label_key(label));
                items.push((Swatch::Line { stroke, dash }, label.clone()));
            }
        }
    }
    items.push((
        Swatch::Line {
            stroke: DIAGONAL_COLOUR,
            dash: "3 3",
        },
        DIAGONAL.to_string(),
    ));
    items
}

/// A panel's grid: a line every 10% each way, the x ticks labelled, the y ticks labelled on
/// the `first` panel (from `lo`, percent).
fn grid(
    svg: &mut Svg,
    f: &BBox,
    (x, y): (&Linear, &Linear),
    (lo, first): (f64, bool),
    font: Font,
    kept: &mut Vec<BBox>,
) {
    let tens = |a: f64| {
        (0..=10)
            .map(f64::from)
            .map(|k| k * 10.0)
            .filter(move |v| *v >= a)
    };
    for v in tens(X_RANGE.0) {
        let px = x.map(v);
        svg.line("grid", (px, f.y0), (px, f.y1), GRID, 1.0, "", "");
        x_tick(svg, px, f.y1, &fmt_num(v), font, kept);
    }
    for v in tens(lo) {
        let py = y.map(v);
        svg.line("grid", (f.x0, py), (f.x1, py), GRID, 1.0, "", "");
        if first {
            svg.line("tick", (f.x0 - 5.0, py), (f.x0, py), AXIS, 1.0, "", "");
            y_tick_label(svg, f.x0, py, &fmt_num(v), font, kept);
        }
    }
}

/// One model in one panel: a line through its points in confidence order (broken at a NaN),
/// and a marker at each.
fn draw_series(svg: &mut Svg, s: &CalibrationSeries, (x, y): (&Linear, &Linear), colour: &str) {
    let mut pts = s.points.clone();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let placed: Vec<(f64, f64, Option<Pt>)> = pts
        .iter()
        .map(|&(c, v)| {
            let pos =
                (c.is_finite() && v.is_finite()).then(|| (x.map(100.0 * c), y.map(100.0 * v)));
            (c, v, pos)
        })
        .collect();
    series_line(svg, &s.label, &placed, colour);
}

/// The axis titles: the x title under each panel, the y title turned on the left.
fn axis_titles(svg: &mut Svg, panel_w: f64, panels: usize, top: f64) {
    for col in 0..panels {
        let mid = LEFT + col as f64 * (panel_w + COLUMN_GAP) + panel_w / 2.0;
        svg.text(
            mid,
            BOTTOM + 40.0,
            "Stated confidence (%)",
            Font::plain(13.0),
            Anchor::Middle,
            TEXT,
            "",
        );
    }
    let t = "Forecasts met (%)";
    let f = Font::plain(fit_size(t, BOTTOM - top, 13.0, 8.0, false));
    svg.vtext(20.0, (top + BOTTOM) / 2.0, t, f);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_per_model_a_flat_line_without_confidence_and_the_diagonal() {
        let panel = |title: &str, k: f64| CalibrationPanel {
            title: title.into(),
            series: vec![
                CalibrationSeries {
                    label: "sprout".into(),
                    points: vec![(0.5, 0.6 * k), (0.95, 0.99), (0.98, f64::NAN)],
                },
                CalibrationSeries {
                    label: "sprout-wide".into(),
                    points: vec![(0.5, 0.55), (0.95, 0.9 * k)],
                },
            ],
            flat: vec![("sprout-ewma".into(), 0.3 * k)],
        };
        let svg = calibration_chart(
            "t",
            &[panel("h = 1", 1.0), panel("h = 8", 0.9)],
            &["caption"],
        );
        // Markers: 2 + 2 per panel, and a legend swatch per model and the diagonal.
        assert_eq!(svg.matches(r#"class="marker""#).count(), 2 * 4 + 4);
        // A path per model with a confidence and a dashed line for Sprout-EWMA, per panel.
        assert_eq!(svg.matches(r#"class="series""#).count(), 2 * 3);
        assert_eq!(svg.matches(r#"class="reference""#).count(), 2);
        assert!(svg.contains(r##"stroke="#ff7f0e""##) && svg.contains(r##"stroke="#8e0152""##));
        // EWMA at 27% pulls the axis down to 20%.
        assert!(svg.contains(">20</text>") && !svg.contains(">10</text>"));
        assert_eq!(svg.matches(r#"class="frame""#).count(), 2);
    }
}
