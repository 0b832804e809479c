//! The scatter chart behind Figures 7 and 8: a reversed logarithmic delay axis, one marker per
//! point (ours filled, the paper's hollow), faint connectors from the paper's point to ours,
//! one label per group of overlapping points, and the legend on the right.

use super::axes::{fmt_num, x_tick, Linear, LogAxis};
use super::geometry::{dist, BBox, Seg};
use super::placement::Placer;
use super::scatter_labels::{label_groups, Groups};
use super::scatter_legend::{legend, series_name};
use super::scatter_points::{marker_r, stroke_w, Drawn, Mark, LEGEND_W, PLOT_B, PLOT_T};
use super::style::{AXIS, GRID, MUTED, TEXT, WIDTH};
use super::svg::{esc, title_text, Svg};
use super::text::{fit_size, text_width, Anchor, Font};

/// The words of a scatter chart: its title, axis titles and the title of its legend (what
/// its series are, e.g. "Scheme").
pub(super) struct Titles<'a> {
    /// The chart's title.
    pub(super) title: &'a str,
    /// The delay axis' title.
    pub(super) x: &'a str,
    /// The vertical axis' title.
    pub(super) y: &'a str,
    /// The legend's title.
    pub(super) legend: &'a str,
}

/// A scatter chart (SVG text) of `marks`: x = delay on a reversed logarithmic axis, y on
/// `y_axis` (whose pixels are set here) with tick labels by `y_fmt`. Marks with non-finite
/// values are skipped.
pub(super) fn scatter_chart(
    titles: &Titles,
    marks: Vec<Mark>,
    mut y_axis: Linear,
    y_fmt: fn(f64) -> String,
) -> String {
    let (title, x_title, y_title) = (titles.title, titles.x, titles.y);
    let mut svg = Svg::new(title);
    let marks: Vec<Mark> = marks
        .into_iter()
        .filter(|m| m.delay_ms.is_finite() && m.y.is_finite())
        .collect();
    let tick_font = Font::plain(12.0);
    let y_labels: Vec<(f64, String)> = y_axis.ticks().into_iter().map(|v| (v, y_fmt(v))).collect();
    let frame = plot_frame(&y_labels, tick_font);
    y_axis.p0 = frame.y1;
    y_axis.p1 = frame.y0;
    let x_axis = delay_axis(&marks, &frame);
    title_text(&mut svg, title);
    draw_grid(&mut svg, &frame, &x_axis, &y_axis, &y_labels, tick_font);
    axis_titles(&mut svg, &frame, x_title, y_title);

    let drawn = Drawn::new(&marks, &x_axis, &y_axis);
    let groups = Groups::overlapping(&marks, &drawn);
    let mut under = Svg::fragment();
    let mut placer = Placer::default();
    connectors(&marks, &drawn, &groups, &mut under, &mut placer);
    let markers = markers(&marks, &drawn, &mut placer);
    let over = label_groups(&marks, &drawn, &groups, &placer, &frame, &mut under);
    svg.append(&under);
    svg.append(&markers);
    svg.append(&over);
    legend(&mut svg, &marks, &drawn.colour, frame.x1, titles.legend);
    svg.finish()
}

/// The plot's frame: room on the left for the widest y tick label and the axis title, on the
/// right for the legend.
fn plot_frame(y_labels: &[(f64, String)], tick_font: Font) -> BBox {
    let widest = y_labels
        .iter()
        .map(|(_, s)| text_width(s, tick_font.size, false))
        .fold(0.0, f64::max);
    BBox {
        x0: (widest + 40.0).max(84.0),
        y0: PLOT_T,
        x1: WIDTH - LEGEND_W,
        y1: PLOT_B,
    }
}

/// The x axis: reversed log over the delays (clamped to >= 1 ms); 10 to 1,000 ms if there are
/// none.
pub(super) fn delay_axis(marks: &[Mark], frame: &BBox) -> LogAxis {
    let (mut dmin, mut dmax) = (f64::INFINITY, f64::NEG_INFINITY);
    for m in marks {
        dmin = dmin.min(m.delay_ms.max(1.0));
        dmax = dmax.max(m.delay_ms.max(1.0));
    }
    if !dmin.is_finite() {
        (dmin, dmax) = (10.0, 1000.0);
    }
    LogAxis::covering(dmin, dmax, frame.x1, frame.x0)
}

/// Grid, ticks and tick labels of both axes (an x label that would touch the previous one is
/// left out), and the frame.
pub(super) fn draw_grid(
    svg: &mut Svg,
    frame: &BBox,
    x_axis: &LogAxis,
    y_axis: &Linear,
    y_labels: &[(f64, String)],
    tick_font: Font,
) {
    let mut kept: Vec<BBox> = Vec::new();
    // Labels at least 14 px apart, wider ones further.
    let w = |v: f64| text_width(&fmt_num(v), tick_font.size, false);
    for (v, lab) in x_axis.ticks_spaced(|a, b| (w(a) + w(b)) / 2.0 + 14.0) {
        let x = x_axis.map(v);
        svg.line(
            "grid",
            (x, frame.y0),
            (x, frame.y1),
            GRID,
            if lab { 1.0 } else { 0.6 },
            if lab { "" } else { "2 3" },
            "",
        );
        if lab {
            x_tick(svg, x, frame.y1, &fmt_num(v), tick_font, &mut kept);
        }
    }
    for (v, s) in y_labels {
        let y = y_axis.map(*v);
        svg.line("grid", (frame.x0, y), (frame.x1, y), GRID, 1.0, "", "");
        svg.line(
            "tick",
            (frame.x0 - 5.0, y),
            (frame.x0, y),
            AXIS,
            1.0,
            "",
            "",
        );
        svg.text(
            frame.x0 - 8.0,
            y + 4.0,
            s,
            tick_font,
            Anchor::End,
            TEXT,
            r#"class="tick-label""#,
        );
    }
    svg.rect("frame", frame, "none", AXIS, "");
}

/// The axis titles: x under the plot with a note on the reversed log scale, y turned on the
/// left.
fn axis_titles(svg: &mut Svg, frame: &BBox, x_title: &str, y_title: &str) {
    let mid = (frame.x0 + frame.x1) / 2.0;
    let axis_font = Font::plain(fit_size(x_title, frame.x1 - frame.x0, 13.0, 9.0, false));
    svg.text(
        mid,
        frame.y1 + 44.0,
        x_title,
        axis_font,
        Anchor::Middle,
        TEXT,
        "",
    );
    svg.text(
        mid,
        frame.y1 + 62.0,
        "(log scale, reversed: lower delay to the right)",
        Font::plain(11.0),
        Anchor::Middle,
        MUTED,
        "",
    );
    let y_title_font = Font::plain(fit_size(y_title, frame.y1 - frame.y0, 13.0, 9.0, false));
    svg.vtext(22.0, (frame.y0 + frame.y1) / 2.0, y_title, y_title_font);
}

/// Faint connectors between a scheme's published point and ours (unless they share a label
/// or nearly touch), into `under`; each is an obstacle for the labels.
fn connectors(
    marks: &[Mark],
    drawn: &Drawn,
    groups: &Groups,
    under: &mut Svg,
    placer: &mut Placer,
) {
    let (pos, outer) = (&drawn.pos, &drawn.outer);
    let n = marks.len();
    for i in (0..n).filter(|&i| !marks[i].paper) {
        for j in (0..n).filter(|&j| marks[j].paper && marks[j].key == marks[i].key) {
            let d = dist(pos[i], pos[j]);
            if groups.of[i] == groups.of[j] || d <= outer[i] + outer[j] + 2.0 {
                continue;
            }
            let u = ((pos[j].0 - pos[i].0) / d, (pos[j].1 - pos[i].1) / d);
            let a = (pos[i].0 + u.0 * outer[i], pos[i].1 + u.1 * outer[i]);
            let b = (pos[j].0 - u.0 * outer[j], pos[j].1 - u.1 * outer[j]);
            under.line("connector", a, b, drawn.colour[i], 1.0, "3 3", "");
            placer.segs.push(Seg { a, b });
        }
    }
}

/// The markers, published hollow (drawn first), ours filled on top, emphasized ones last in a
/// heavy outline, each with its values as attributes; each is an obstacle for the labels.
pub(super) fn markers(marks: &[Mark], drawn: &Drawn, placer: &mut Placer) -> Svg {
    let mut order: Vec<usize> = (0..marks.len()).collect();
    order.sort_by_key(|&i| (!marks[i].paper, marks[i].emphasis));
    let mut markers = Svg::fragment();
    for &i in &order {
        let m = &marks[i];
        let colour = drawn.colour[i];
        let (fill, stroke) = if m.paper {
            ("white", colour)
        } else if m.emphasis {
            (colour, "#111111")
        } else {
            (colour, "#222222")
        };
        markers.circle(
            "point",
            drawn.pos[i],
            marker_r(m),
            fill,
            stroke,
            stroke_w(m),
            &format!(
                r#"id="{}p{i}" data-label="{}" data-series="{}" data-delay-ms="{}" data-y="{}" data-paper="{}""#,
                drawn.prefix,
                esc(&m.label),
                esc(series_name(marks, &m.key)),
                m.delay_ms,
                m.y,
                m.paper
            ),
        );
        placer.circles.push((drawn.pos[i], drawn.outer[i] + 1.0));
    }
    markers
}
