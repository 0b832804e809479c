//! The spread of repeated runs (the sensitivity experiment): one throughput-delay plot per link
//! direction, each scheme's mean over the runs as a labelled marker in the scheme's colour with
//! bars from the lowest to the highest run on both axes, and one legend for all plots.

use super::axes::{fmt_num, Linear};
use super::colours::{label_key, Palette};
use super::geometry::{BBox, Seg};
use super::placement::Placer;
use super::scatter::{delay_axis, draw_grid, markers};
use super::scatter_labels::{label_groups, Groups};
use super::scatter_points::{Drawn, Mark};
use super::style::{HEIGHT, MUTED, TEXT, WIDTH};
use super::svg::{esc, panel_title, title_text, Svg};
use super::text::{fit_size, text_width, Anchor, Font};

/// A value over several runs: the lowest, the mean and the highest.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// The lowest value.
    pub min: f64,
    /// The mean.
    pub mean: f64,
    /// The highest value.
    pub max: f64,
}

impl Spread {
    /// The spread of `xs` (NaN everywhere if it is empty).
    pub fn of(xs: &[f64]) -> Spread {
        if xs.is_empty() {
            return Spread {
                min: f64::NAN,
                mean: f64::NAN,
                max: f64::NAN,
            };
        }
        Spread {
            min: xs.iter().copied().fold(f64::INFINITY, f64::min),
            mean: xs.iter().sum::<f64>() / xs.len() as f64,
            max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }
}

/// One scheme's runs on one link direction.
#[derive(Debug, Clone, PartialEq)]
pub struct SpreadPoint {
    /// Scheme name written beside the mean (also selects its colour).
    pub label: String,
    /// Throughput over the runs, kbit/s.
    pub throughput_kbps: Spread,
    /// 95th-percentile self-inflicted delay over the runs, ms (below 1 ms drawn at 1 ms).
    pub delay_ms: Spread,
}

/// One plot of a [`seed_spread_chart`]: a link direction.
#[derive(Debug, Clone, PartialEq)]
pub struct SpreadPanel {
    /// Written above the plot, e.g. "Verizon-LTE-short uplink".
    pub title: String,
    /// One point per scheme.
    pub points: Vec<SpreadPoint>,
}

/// Room right of the plots for the legend, px.
const LEGEND_W: f64 = 150.0;
/// Left edge of the left plots, px.
const LEFT: f64 = 84.0;
/// Top of the first row of plots, px.
const TOP: f64 = 64.0;
/// Bottom of the last row of plots, px.
const BOTTOM: f64 = HEIGHT - 74.0;
/// Vertical room between two rows of plots (tick labels, the next plot's title), px.
const ROW_GAP: f64 = 54.0;
/// Radius of a mean's marker in the legend's key, px.
const KEY_R: f64 = 5.0;

/// A chart (SVG text) of `panels` in two columns (one if there is a single panel): each a
/// reversed logarithmic delay axis (ms) against throughput (kbit/s from 0), each scheme's mean
/// a filled marker in its colour, labelled with its name (equal means share a label), with
/// bars from the lowest to the highest run in delay and in throughput. `runs` is said in the
/// legend ("mean of 5 seeds"). Points with a non-finite mean are skipped.
pub fn seed_spread_chart(title: &str, panels: &[SpreadPanel], runs: &str) -> String {
    let mut svg = Svg::new(title);
    title_text(&mut svg, title);
    let tick_font = Font::plain(12.0);
    let cols = if panels.len() > 1 { 2 } else { 1 };
    let rows = panels.len().div_ceil(cols).max(1);
    let axes: Vec<Linear> = panels.iter().map(throughput_axis).collect();
    let widest = axes
        .iter()
        .flat_map(|a| a.ticks())
        .map(|v| text_width(&fmt_num(v), tick_font.size, false))
        .fold(0.0, f64::max);
    let col_gap = widest + 32.0;
    let plot_w = (WIDTH - LEGEND_W - LEFT - col_gap * (cols - 1) as f64) / cols as f64;
    let plot_h = (BOTTOM - TOP - ROW_GAP * (rows - 1) as f64) / rows as f64;
    let mut palette = Palette::new();
    let mut series: Vec<(String, &'static str)> = Vec::new();
    for (k, panel) in panels.iter().enumerate() {
        let (row, col) = ((k / cols) as f64, (k % cols) as f64);
        let x0 = LEFT + col * (plot_w + col_gap);
        let y0 = TOP + row * (plot_h + ROW_GAP);
        let frame = BBox {
            x0,
            y0,
            x1: x0 + plot_w,
            y1: y0 + plot_h,
        };
        let prefix = ((b'a' + (k % 26) as u8) as char).to_string();
        let drawn = plot(&mut svg, panel, &frame, axes[k], &mut palette, &prefix);
        for (name, colour) in drawn {
            if !series.iter().any(|(n, _)| *n == name) {
                series.push((name, colour));
            }
        }
    }
    axis_titles(&mut svg, cols, plot_w, col_gap);
    legend(&mut svg, &series, runs);
    svg.finish()
}

/// The throughput axis of a panel: from 0 over its highest run.
fn throughput_axis(panel: &SpreadPanel) -> Linear {
    let ymax = panel
        .points
        .iter()
        .map(|p| p.throughput_kbps.max.max(p.throughput_kbps.mean))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    Linear::nice(0.0, ymax, 4.0, 0.0, 0.0)
}

/// Draws one panel in `frame`: its title, grid and axes, bars, markers and labels. Returns its
/// series (name and colour) in order.
fn plot(
    svg: &mut Svg,
    panel: &SpreadPanel,
    frame: &BBox,
    mut y_axis: Linear,
    palette: &mut Palette,
    prefix: &str,
) -> Vec<(String, &'static str)> {
    let points: Vec<&SpreadPoint> = panel
        .points
        .iter()
        .filter(|p| p.delay_ms.mean.is_finite() && p.throughput_kbps.mean.is_finite())
        .collect();
    let marks: Vec<Mark> = points
        .iter()
        .map(|p| Mark {
            label: p.label.clone(),
            key: label_key(&p.label),
            delay_ms: p.delay_ms.mean,
            y: p.throughput_kbps.mean,
            paper: false,
            emphasis: false,
        })
        .collect();
    // The delay axis covers every run, not only the means.
    let mut extent: Vec<Mark> = Vec::new();
    for p in &points {
        for d in [p.delay_ms.min, p.delay_ms.max, p.delay_ms.mean] {
            if d.is_finite() {
                extent.push(Mark {
                    label: String::new(),
                    key: String::new(),
                    delay_ms: d,
                    y: 0.0,
                    paper: false,
                    emphasis: false,
                });
            }
        }
    }
    let x_axis = delay_axis(&extent, frame);
    y_axis.p0 = frame.y1;
    y_axis.p1 = frame.y0;
    let tick_font = Font::plain(12.0);
    let y_labels: Vec<(f64, String)> = y_axis
        .ticks()
        .into_iter()
        .map(|v| (v, fmt_num(v)))
        .collect();
    panel_title(svg, frame, &panel.title);
    draw_grid(svg, frame, &x_axis, &y_axis, &y_labels, tick_font);
    if marks.is_empty() {
        return Vec::new();
    }
    let drawn = Drawn::in_plot(&marks, &x_axis, &y_axis, palette, prefix);
    let groups = Groups::overlapping(&marks, &drawn);
    let mut under = Svg::fragment();
    let mut placer = Placer::default();
    for (i, p) in points.iter().enumerate() {
        let (x, y) = drawn.pos[i];
        let bars = [
            (
                (x_axis.map(p.delay_ms.min.max(1.0)), y),
                (x_axis.map(p.delay_ms.max.max(1.0)), y),
            ),
            (
                (x, y_axis.map(p.throughput_kbps.min)),
                (x, y_axis.map(p.throughput_kbps.max)),
            ),
        ];
        let series = format!(r#"data-series="{}""#, esc(&marks[i].label));
        for (a, b) in bars {
            if [a.0, a.1, b.0, b.1].iter().all(|v| v.is_finite()) {
                under.line("spread", a, b, drawn.colour[i], 1.5, "", &series);
                placer.segs.push(Seg { a, b });
            }
        }
    }
    let over_markers = markers(&marks, &drawn, &mut placer);
    let over = label_groups(&marks, &drawn, &groups, &placer, frame, &mut under);
    svg.append(&under);
    svg.append(&over_markers);
    svg.append(&over);
    marks
        .iter()
        .zip(&drawn.colour)
        .map(|(m, c)| (m.label.clone(), *c))
        .collect()
}

/// The axis titles: the delay's under the plots, the throughput's turned on the left.
fn axis_titles(svg: &mut Svg, cols: usize, plot_w: f64, col_gap: f64) {
    let right = LEFT + cols as f64 * plot_w + (cols - 1) as f64 * col_gap;
    let mid = (LEFT + right) / 2.0;
    let x_title = "Mean 95th-percentile self-inflicted delay (ms)";
    let f = Font::plain(fit_size(x_title, right - LEFT, 13.0, 9.0, false));
    svg.text(mid, BOTTOM + 44.0, x_title, f, Anchor::Middle, TEXT, "");
    svg.text(
        mid,
        BOTTOM + 62.0,
        "(log scale, reversed: lower delay to the right)",
        Font::plain(11.0),
        Anchor::Middle,
        MUTED,
        "",
    );
    let y_title = "Mean throughput (kbit/s)";
    let f = Font::plain(fit_size(y_title, BOTTOM - TOP, 13.0, 9.0, false));
    svg.vtext(22.0, (TOP + BOTTOM) / 2.0, y_title, f);
}

/// The legend right of the plots: the schemes in their colours, then a key to the marker
/// (the mean over `runs`) and its bars (lowest to highest run).
fn legend(svg: &mut Svg, series: &[(String, &'static str)], runs: &str) {
    let lx = WIDTH - LEGEND_W + 14.0;
    let room = WIDTH - 6.0 - (lx + 18.0);
    let mut ly = TOP + 4.0;
    svg.text(lx, ly, "Scheme", Font::bold(12.0), Anchor::Start, TEXT, "");
    ly += 20.0;
    let step = ((BOTTOM - ly - 90.0) / series.len().max(1) as f64).clamp(12.0, 19.0);
    let size = (step - 6.0).clamp(9.0, 12.0);
    for (name, colour) in series {
        svg.circle(
            "legend-marker",
            (lx + 6.0, ly - size * 0.35),
            (size / 2.0 - 1.0).min(5.0),
            colour,
            "none",
            0.0,
            &format!(r#"data-series="{}""#, esc(name)),
        );
        let f = Font::plain(fit_size(name, room, size, 6.0, false));
        svg.text(lx + 18.0, ly, name, f, Anchor::Start, TEXT, "");
        ly += step;
    }
    // The key: a grey mean with its bars, and what they are.
    let c = (lx + 14.0, ly + 22.0);
    let arm = 13.0;
    svg.line(
        "legend-bar",
        (c.0 - arm, c.1),
        (c.0 + arm, c.1),
        "#555555",
        1.5,
        "",
        "",
    );
    svg.line(
        "legend-bar",
        (c.0, c.1 - arm),
        (c.0, c.1 + arm),
        "#555555",
        1.5,
        "",
        "",
    );
    svg.circle("legend-marker", c, KEY_R, "#555555", "#222222", 1.0, "");
    let tx = c.0 + arm + 8.0;
    let f = Font::plain(fit_size(runs, WIDTH - 6.0 - tx, 11.0, 7.0, false));
    svg.text(tx, c.1 - 2.0, runs, f, Anchor::Start, TEXT, "");
    let lines = [
        "bars: lowest to highest;",
        "under the marker when",
        "the spread is smaller",
    ];
    let f = Font::plain(
        lines
            .iter()
            .map(|l| fit_size(l, WIDTH - 6.0 - lx, 11.0, 7.0, false))
            .fold(11.0, f64::min),
    );
    for (k, line) in lines.iter().enumerate() {
        let y = c.1 + arm + 16.0 + k as f64 * 14.0;
        svg.text(lx, y, line, f, Anchor::Start, MUTED, "");
    }
}
