//! Application-level delay against offered rate (the `interactive` experiment): panels side
//! by side (one per source) on one shared logarithmic delay axis, the offered rate on a
//! logarithmic axis, one line per scheme in the scheme's colour with a marker at each rate.
//! Infinite delays (messages never delivered) are drawn in a band above the plot marked
//! "never". Nothing is written inside the panels, so no text can meet a line or a marker.

use super::axes::{ceil125, floor125, fmt_num, x_tick, y_tick_label, LogAxis};
use super::colours::{label_key, Palette};
use super::geometry::{BBox, Pt};
use super::style::{AXIS, GRID, HEIGHT, TEXT, WIDTH};
use super::svg::{caption_lines, esc, panel_title, polyline_d, title_text, Svg};
use super::text::{fit_size, text_width, Anchor, Font};
use super::time_panels::{legend_rows, Swatch};

/// One line of an [`app_delay_chart`] panel: a scheme and its points.
#[derive(Debug, Clone, PartialEq)]
pub struct AppDelaySeries {
    /// Scheme name (also selects its colour, as on every chart).
    pub label: String,
    /// `(offered rate, kbit/s; delay, ms)`: a delay of +inf is drawn in the "never" band, a
    /// NaN one (no message) breaks the line.
    pub points: Vec<(f64, f64)>,
}

/// One panel of an [`app_delay_chart`]: a source.
#[derive(Debug, Clone, PartialEq)]
pub struct AppDelayPanel {
    /// Written above the panel, e.g. "constant-rate stream".
    pub title: String,
    /// The lines, drawn in order.
    pub series: Vec<AppDelaySeries>,
}

/// Top of the panels below the legend's last row, px.
const BELOW_LEGEND: f64 = 36.0;
/// Bottom of the panels, px (room below for tick labels, the axis title and the caption).
const BOTTOM: f64 = HEIGHT - 82.0;
/// Right edge of the right panel, px.
const RIGHT: f64 = WIDTH - 24.0;
/// Gap between two panels, px.
const PANEL_GAP: f64 = 28.0;
/// Height of the "never" band at the top of each panel, px (its marks at a third of it, so
/// that its label keeps clear of the delay axis' top label).
const NEVER_H: f64 = 36.0;
/// Radius of a point's marker, px.
const MARKER_R: f64 = 3.5;

/// The delay axis' range (round values a little beyond the finite delays, at least a factor of
/// ten apart, in ms) and whether any delay is infinite.
fn delay_range(panels: &[AppDelayPanel]) -> (f64, f64, bool) {
    let delays = || {
        panels
            .iter()
            .flat_map(|p| p.series.iter())
            .flat_map(|s| s.points.iter())
            .filter(|(r, _)| r.is_finite() && *r > 0.0)
            .map(|(_, d)| *d)
    };
    let never = delays().any(|d| d == f64::INFINITY);
    let finite: Vec<f64> = delays()
        .filter(|d| d.is_finite())
        .map(|d| d.max(1.0))
        .collect();
    if finite.is_empty() {
        return (10.0, 1000.0, never);
    }
    // A little room at both ends, so that no marker sits on the frame.
    let lo = floor125(finite.iter().copied().fold(f64::INFINITY, f64::min) / 1.15);
    let hi = finite.iter().copied().fold(0.0, f64::max) * 1.15;
    (lo, ceil125(hi.max(lo * 10.0)), never)
}

/// The offered rates of the panels, ascending without repeats (kbit/s).
fn rates(panels: &[AppDelayPanel]) -> Vec<f64> {
    let mut r: Vec<f64> = panels
        .iter()
        .flat_map(|p| p.series.iter())
        .flat_map(|s| s.points.iter())
        .map(|(r, _)| *r)
        .filter(|r| r.is_finite() && *r > 0.0)
        .collect();
    r.sort_by(f64::total_cmp);
    r.dedup();
    r
}

/// Application-level delay against offered rate (SVG text): one panel per entry of `panels`,
/// side by side, sharing a logarithmic delay axis in ms (labelled on the left panel) and a
/// logarithmic rate axis in kbit/s with a tick at every offered rate; each series a line in
/// its scheme's colour (dashed for `direct`, the floor) through a marker per rate. Infinite
/// delays sit in a band at the top marked "never". `caption`'s lines (two fit) are written at
/// the bottom.
pub fn app_delay_chart(title: &str, panels: &[AppDelayPanel], caption: &[&str]) -> String {
    let tick_font = Font::plain(12.0);
    let mut svg = Svg::new(title);
    title_text(&mut svg, title);
    let (lo, hi, never) = delay_range(panels);
    let rates = rates(panels);
    let widest = text_width(&fmt_num(hi), tick_font.size, false).max(text_width(
        "never",
        tick_font.size,
        false,
    ));
    let left = (widest + 46.0).max(84.0);
    let mut palette = Palette::new();
    let mut names: Vec<String> = Vec::new();
    for s in panels.iter().flat_map(|p| p.series.iter()) {
        if !names.contains(&s.label) {
            names.push(s.label.clone());
        }
    }
    let items: Vec<(Swatch, String)> = names
        .iter()
        .map(|n| {
            let stroke = palette.color(&label_key(n));
            (
                Swatch::Line {
                    stroke,
                    dash: dash(n),
                },
                n.clone(),
            )
        })
        .collect();
    let ly = legend_rows(&mut svg, &items, left, RIGHT);
    let top = ly + BELOW_LEGEND;
    let n = panels.len().max(1) as f64;
    let panel_w = (RIGHT - left - PANEL_GAP * (n - 1.0)) / n;
    let (r_lo, r_hi) = match (rates.first(), rates.last()) {
        (Some(&a), Some(&b)) => (a / 1.25, b * 1.25),
        _ => (100.0, 10_000.0),
    };
    let mut kept: Vec<BBox> = Vec::new();
    for (k, panel) in panels.iter().enumerate() {
        let x0 = left + k as f64 * (panel_w + PANEL_GAP);
        let frame = BBox {
            x0,
            y0: top,
            x1: x0 + panel_w,
            y1: BOTTOM,
        };
        let plot_top = if never { top + NEVER_H } else { top };
        let y_axis = LogAxis {
            llo: lo.log10(),
            lhi: hi.log10(),
            plo: frame.y1,
            phi: plot_top,
        };
        let x_axis = LogAxis {
            llo: r_lo.log10(),
            lhi: r_hi.log10(),
            plo: frame.x0,
            phi: frame.x1,
        };
        let axes = PanelAxes {
            frame,
            x: x_axis,
            y: y_axis,
            never_y: never.then_some(top + NEVER_H / 3.0),
        };
        grid(&mut svg, &axes, &rates, k == 0, tick_font, &mut kept);
        panel_title(&mut svg, &frame, &panel.title);
        for s in &panel.series {
            draw_series(&mut svg, s, &axes, palette.color(&label_key(&s.label)));
        }
        svg.rect("frame", &frame, "none", AXIS, "");
    }
    axis_titles(&mut svg, left, top);
    caption_lines(&mut svg, caption, BOTTOM + 62.0);
    svg.finish()
}

/// The dash pattern of a series: dashed for `direct` (the floor, not a transport), solid
/// otherwise.
fn dash(label: &str) -> &'static str {
    if label_key(label) == "direct" {
        "6 4"
    } else {
        ""
    }
}

/// A panel's frame, its two axes, and the height of its "never" band's centre, if it has one.
struct PanelAxes {
    frame: BBox,
    x: LogAxis,
    y: LogAxis,
    never_y: Option<f64>,
}

impl PanelAxes {
    /// The pixel of a point, or `None` for a NaN delay or a rate off the axis.
    fn pos(&self, rate: f64, delay_ms: f64) -> Option<Pt> {
        if !(rate.is_finite() && rate > 0.0) || delay_ms.is_nan() {
            return None;
        }
        let y = if delay_ms == f64::INFINITY {
            self.never_y?
        } else {
            self.y.map(delay_ms.max(1.0))
        };
        Some((self.x.map(rate), y))
    }
}

/// A panel's grid: delay ticks (labelled on the `first` panel), the "never" band's line and
/// label, and a labelled tick under every offered rate.
fn grid(
    svg: &mut Svg,
    axes: &PanelAxes,
    rates: &[f64],
    first: bool,
    tick_font: Font,
    kept: &mut Vec<BBox>,
) {
    let f = &axes.frame;
    if let Some(ny) = axes.never_y {
        let edge = f.y0 + NEVER_H;
        svg.line("grid", (f.x0, edge), (f.x1, edge), AXIS, 0.8, "4 3", "");
        if first {
            svg.line("tick", (f.x0 - 5.0, ny), (f.x0, ny), AXIS, 1.0, "", "");
            y_tick_label(svg, f.x0, ny, "never", tick_font, kept);
        }
    }
    for (v, lab) in axes.y.ticks(18.0) {
        let y = axes.y.map(v);
        let (w, dash) = if lab { (1.0, "") } else { (0.6, "2 3") };
        svg.line("grid", (f.x0, y), (f.x1, y), GRID, w, dash, "");
        if lab && first {
            svg.line("tick", (f.x0 - 5.0, y), (f.x0, y), AXIS, 1.0, "", "");
            y_tick_label(svg, f.x0, y, &fmt_num(v), tick_font, kept);
        }
    }
    for &r in rates {
        let x = axes.x.map(r);
        svg.line("grid", (x, f.y0), (x, f.y1), GRID, 1.0, "", "");
        x_tick(svg, x, f.y1, &fmt_num(r), tick_font, kept);
    }
}

/// One series: its line through the points in rate order (broken at a NaN delay), and a
/// marker at each point.
fn draw_series(svg: &mut Svg, s: &AppDelaySeries, axes: &PanelAxes, colour: &'static str) {
    let mut pts: Vec<(f64, f64)> = s.points.clone();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let series = format!(r#"data-series="{}""#, esc(&s.label));
    let mut runs: Vec<Vec<Pt>> = vec![Vec::new()];
    for &(r, d) in &pts {
        match axes.pos(r, d) {
            Some(p) => runs.last_mut().expect("a run").push(p),
            None => runs.push(Vec::new()),
        }
    }
    for run in runs.iter().filter(|r| r.len() >= 2) {
        svg.path(
            &polyline_d(run),
            colour,
            1.8,
            "none",
            &format!(
                r#"class="series"{} {series}"#,
                if dash(&s.label).is_empty() {
                    String::new()
                } else {
                    format!(r#" stroke-dasharray="{}""#, dash(&s.label))
                }
            ),
        );
    }
    for &(r, d) in &pts {
        if let Some(p) = axes.pos(r, d) {
            svg.circle(
                "marker",
                p,
                MARKER_R,
                colour,
                "white",
                0.8,
                &format!(
                    r#"{series} data-rate-kbps="{r}" data-delay-ms="{}""#,
                    if d.is_finite() {
                        format!("{d}")
                    } else {
                        "inf".into()
                    }
                ),
            );
        }
    }
}

/// The axis titles: the rate's under the panels, the delay's turned on the left.
fn axis_titles(svg: &mut Svg, left: f64, top: f64) {
    let mid = (left + RIGHT) / 2.0;
    let x_title = "Offered rate (kbit/s, log scale)";
    svg.text(
        mid,
        BOTTOM + 42.0,
        x_title,
        Font::plain(13.0),
        Anchor::Middle,
        TEXT,
        "",
    );
    let y_title = "Application-level p95 delay (ms, log scale)";
    let f = Font::plain(fit_size(y_title, BOTTOM - top, 13.0, 8.0, false));
    svg.vtext(22.0, (top + BOTTOM) / 2.0, y_title, f);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn panel(title: &str, sprout: [f64; 3]) -> AppDelayPanel {
        AppDelayPanel {
            title: title.into(),
            series: vec![
                AppDelaySeries {
                    label: "sprout".into(),
                    points: vec![(250.0, sprout[0]), (500.0, sprout[1]), (1000.0, sprout[2])],
                },
                AppDelaySeries {
                    label: "direct".into(),
                    points: vec![(250.0, 40.0), (500.0, 45.0), (1000.0, 60.0)],
                },
            ],
        }
    }

    #[test]
    fn lines_markers_and_the_never_band() {
        let svg = app_delay_chart(
            "t",
            &[
                panel("constant", [50.0, 80.0, f64::INFINITY]),
                panel("video", [60.0, f64::NAN, 300.0]),
            ],
            &["caption"],
        );
        assert!(svg.contains(">never</text>"), "{svg}");
        // Sprout in its colour, direct dashed in its own.
        assert!(svg.contains(r##"stroke="#d62728""##));
        assert!(svg.contains(r#"stroke-dasharray="6 4" data-series="direct""#));
        // Five Sprout markers (one infinite; the NaN one is left out and breaks the video
        // panel's Sprout line into single points, no path), six direct ones, two legend
        // swatches.
        assert_eq!(svg.matches(r#"data-delay-ms="inf""#).count(), 1);
        assert_eq!(svg.matches(r#"class="marker""#).count(), 5 + 6 + 2);
        assert_eq!(svg.matches(r#"class="series""#).count(), 1 + 2);
        for r in ["250", "500", "1,000"] {
            assert!(svg.contains(&format!(">{r}</text>")), "{r}");
        }
        // No infinite delay: no band.
        let plain = app_delay_chart("t", &[panel("c", [50.0, 80.0, 90.0])], &[]);
        assert!(!plain.contains("never"));
    }
}
