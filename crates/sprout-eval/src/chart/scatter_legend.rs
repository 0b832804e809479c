//! The legend of a scatter chart, right of the plot: one colour per scheme, filled for this
//! run and hollow for the paper, and a "better" arrow pointing up and to the right.

use super::scatter_points::{Mark, PLOT_T};
use super::style::{AXIS, HEIGHT, TEXT, WIDTH};
use super::svg::{esc, polyline_d, Svg};
use super::text::{fit_size, Anchor, Font};

/// The legend's layout: left edge, row step and font size of its entries, px.
struct Layout {
    lx: f64,
    step: f64,
    entry_size: f64,
    swatch_r: f64,
}

impl Layout {
    /// A round swatch left of the entry whose baseline is at `ly`; `extra` are more
    /// attributes (the series it stands for).
    fn swatch(&self, svg: &mut Svg, ly: f64, fill: &str, stroke: &str, sw: f64, extra: &str) {
        svg.circle(
            "legend-marker",
            (self.lx + 6.0, ly - self.entry_size * 0.35),
            self.swatch_r,
            fill,
            stroke,
            sw,
            extra,
        );
    }
}

/// The name of the series (scheme) of key `key` among `marks`: our point's label if there is
/// one, else the first point's label.
pub(super) fn series_name<'a>(marks: &'a [Mark], key: &str) -> &'a str {
    marks
        .iter()
        .find(|o| o.key == key && !o.paper)
        .or_else(|| marks.iter().find(|o| o.key == key))
        .map_or("", |o| o.label.as_str())
}

/// One entry per scheme, in order of first appearance, spelled as our point's label if there
/// is one, in the scheme's colour.
fn entries(marks: &[Mark], colour: &[&'static str]) -> Vec<(String, &'static str)> {
    let mut entries: Vec<(String, &'static str)> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, m) in marks.iter().enumerate() {
        if seen.contains(&m.key.as_str()) {
            continue;
        }
        seen.push(&m.key);
        entries.push((series_name(marks, &m.key).to_string(), colour[i]));
    }
    entries
}

/// The legend for `marks` (coloured `colour`), from `frame_right` (the plot's right edge) to
/// the canvas' right edge: under `title` the series (schemes), "this run" and "paper
/// (published)" swatches, and the "better" arrow if there is room.
pub(super) fn legend(
    svg: &mut Svg,
    marks: &[Mark],
    colour: &[&'static str],
    frame_right: f64,
    title: &str,
) {
    let entries = entries(marks, colour);
    let has_ours = marks.iter().any(|m| !m.paper);
    let has_paper = marks.iter().any(|m| m.paper);
    let rows = entries.len() + usize::from(has_ours) + usize::from(has_paper);
    let lx = frame_right + 18.0;
    let top = PLOT_T + 8.0;
    let avail = HEIGHT - 8.0 - top;
    let need = |step: f64| 20.0 + rows as f64 * step + 26.0 + 44.0;
    let step = if need(19.0) <= avail {
        19.0
    } else {
        ((avail - 90.0) / rows.max(1) as f64).clamp(12.0, 19.0)
    };
    let show_arrow = need(step) <= avail;
    let entry_size = (step - 6.0).clamp(9.0, 12.0);
    let layout = Layout {
        lx,
        step,
        entry_size,
        swatch_r: (entry_size / 2.0 - 1.0).min(5.0),
    };
    let text_room = WIDTH - 6.0 - (lx + 18.0);
    let mut ly = top;
    svg.text(lx, ly, title, Font::bold(12.0), Anchor::Start, TEXT, "");
    ly += 20.0;
    for (name, col) in &entries {
        let series = format!(r#"data-series="{}""#, esc(name));
        layout.swatch(svg, ly, col, "none", 0.0, &series);
        let f = Font::plain(fit_size(name, text_room, entry_size, 6.0, false));
        svg.text(lx + 18.0, ly, name, f, Anchor::Start, TEXT, "");
        ly += step;
    }
    ly += 10.0;
    if has_ours {
        layout.swatch(svg, ly, "#555555", "#222222", 1.0, "");
        let f = Font::plain(entry_size);
        svg.text(lx + 18.0, ly, "this run", f, Anchor::Start, TEXT, "");
        ly += step;
    }
    if has_paper {
        layout.swatch(svg, ly, "white", "#555555", 2.0, "");
        let f = Font::plain(entry_size);
        svg.text(
            lx + 18.0,
            ly,
            "paper (published)",
            f,
            Anchor::Start,
            TEXT,
            "",
        );
        ly += layout.step;
    }
    if show_arrow {
        better_arrow(svg, lx, ly + 16.0);
    }
}

/// The "better: up and to the right" arrow and its words, the arrow's foot at `(lx + 6,
/// ly + 26)`.
fn better_arrow(svg: &mut Svg, lx: f64, ly: f64) {
    let (ax, ay) = (lx + 6.0, ly + 26.0);
    svg.line(
        "marker",
        (ax, ay),
        (ax + 20.0, ay - 20.0),
        AXIS,
        1.8,
        "",
        "",
    );
    svg.path(
        &polyline_d(&[
            (ax + 24.0, ay - 24.0),
            (ax + 13.0, ay - 21.0),
            (ax + 21.0, ay - 13.0),
            (ax + 24.0, ay - 24.0),
        ]),
        AXIS,
        1.0,
        AXIS,
        r#"class="marker""#,
    );
    svg.text(
        lx + 36.0,
        ly + 6.0,
        "better:",
        Font::bold(12.0),
        Anchor::Start,
        TEXT,
        "",
    );
    svg.text(
        lx + 36.0,
        ly + 21.0,
        "up and to the right",
        Font::plain(11.0),
        Anchor::Start,
        TEXT,
        "",
    );
}
