//! SVG charts in the style of the paper's Figures 1, 7 and 8.
//!
//! # Approach
//!
//! The charts are built by a small SVG writer in this module (plain string building), not by
//! a plotting crate. `plotters`' SVG backend would build without system font libraries (it
//! only estimates text extents), but these charts need a *reversed logarithmic* delay axis,
//! hollow-versus-filled markers per scheme, label placement that avoids collisions, and
//! machine-checkable output; with a hand-written writer all of that is a few dozen lines,
//! the output is deterministic, and the crate gains no dependency. Text is emitted as SVG
//! `<text>` in a generic sans-serif font and laid out with a conservative width estimate.
//!
//! Every data marker carries `class="point"`, `data-label`, `data-delay-ms` and
//! `data-paper` attributes so that tests and tools can find it.
//!
//! Units: delays in milliseconds, throughputs in kbit/s, utilization as a fraction 0..1
//! (plotted as percent), time in seconds. The charts are [`WIDTH`] x [`HEIGHT`] pixels.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::metrics::TimeSeriesPoint;
use crate::paper::scheme_key;

/// Width of every chart, pixels.
pub const WIDTH: f64 = 840.0;
/// Height of every chart, pixels.
pub const HEIGHT: f64 = 560.0;

const FONT: &str = "DejaVu Sans, Helvetica, Arial, sans-serif";
const GRID: &str = "#e3e3e3";
const AXIS: &str = "#333333";
const TEXT: &str = "#222222";

/// One point of a Figure-7-style chart.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartPoint {
    /// Scheme name shown next to the point (also selects its colour).
    pub label: String,
    /// Average throughput, kbit/s.
    pub throughput_kbps: f64,
    /// 95th-percentile self-inflicted delay, ms (values below 1 ms are drawn at 1 ms).
    pub delay_ms: f64,
    /// True for a published value from the paper (hollow marker), false for ours (filled).
    pub paper: bool,
}

/// One point of a Figure-8-style chart.
#[derive(Debug, Clone, PartialEq)]
pub struct UtilizationPoint {
    /// Scheme name shown next to the point (also selects its colour).
    pub label: String,
    /// Average utilization, fraction 0..1 (plotted as percent).
    pub utilization: f64,
    /// Average self-inflicted delay, ms (values below 1 ms are drawn at 1 ms).
    pub delay_ms: f64,
    /// True for a published value from the paper (hollow marker), false for ours (filled).
    pub paper: bool,
}

// ---------------------------------------------------------------------------------------
// A minimal SVG writer.

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c => o.push(c),
        }
    }
    o
}

/// Compact coordinate formatting (two decimals, trailing zeros trimmed).
fn c(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.into()
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    fn as_str(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

struct Svg {
    buf: String,
}

impl Svg {
    fn new(title: &str) -> Self {
        let mut buf = String::new();
        let _ = write!(
            buf,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="{FONT}">"#,
            w = c(WIDTH),
            h = c(HEIGHT)
        );
        let _ = write!(buf, "<title>{}</title>", esc(title));
        let _ = write!(
            buf,
            r#"<rect x="0" y="0" width="{}" height="{}" fill="white"/>"#,
            c(WIDTH),
            c(HEIGHT)
        );
        Svg { buf }
    }

    fn raw(&mut self, s: &str) {
        self.buf.push_str(s);
    }

    #[allow(clippy::too_many_arguments)]
    fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, stroke: &str, w: f64, dash: &str) {
        let _ = write!(
            self.buf,
            r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{stroke}" stroke-width="{}""#,
            c(x1),
            c(y1),
            c(x2),
            c(y2),
            c(w)
        );
        if !dash.is_empty() {
            let _ = write!(self.buf, r#" stroke-dasharray="{dash}""#);
        }
        self.buf.push_str("/>");
    }

    fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, stroke: &str) {
        let _ = write!(
            self.buf,
            r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{fill}" stroke="{stroke}"/>"#,
            c(x),
            c(y),
            c(w.max(0.0)),
            c(h.max(0.0))
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn text(
        &mut self,
        x: f64,
        y: f64,
        s: &str,
        size: f64,
        anchor: Anchor,
        fill: &str,
        extra: &str,
    ) {
        let _ = write!(
            self.buf,
            r#"<text x="{}" y="{}" font-size="{}" text-anchor="{}" fill="{fill}"{}{}>{}</text>"#,
            c(x),
            c(y),
            c(size),
            anchor.as_str(),
            if extra.is_empty() { "" } else { " " },
            extra,
            esc(s)
        );
    }

    fn vtext(&mut self, x: f64, y: f64, s: &str, size: f64) {
        let _ = write!(
            self.buf,
            r#"<text x="{x}" y="{y}" font-size="{}" text-anchor="middle" fill="{TEXT}" transform="rotate(-90 {x} {y})">{}</text>"#,
            c(size),
            esc(s),
            x = c(x),
            y = c(y)
        );
    }

    fn path(&mut self, d: &str, stroke: &str, w: f64, fill: &str, extra: &str) {
        let _ = write!(
            self.buf,
            r#"<path d="{d}" stroke="{stroke}" stroke-width="{}" fill="{fill}" stroke-linejoin="round"{}{}/>"#,
            c(w),
            if extra.is_empty() { "" } else { " " },
            extra
        );
    }

    fn finish(mut self) -> String {
        self.buf.push_str("</svg>\n");
        self.buf
    }
}

// ---------------------------------------------------------------------------------------
// Axes and number formatting.

/// Formats a tick value: thousands separators for large numbers, few decimals otherwise.
fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return "?".into();
    }
    let r = v.round();
    if (v - r).abs() < 1e-9 * v.abs().max(1.0) {
        let n = r as i64;
        let digits = n.unsigned_abs().to_string();
        let first = match digits.len() % 3 {
            0 => 3,
            r => r,
        };
        let mut out = digits[..first].to_string();
        for chunk in digits.as_bytes()[first..].chunks(3) {
            out.push(',');
            out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        }
        if n < 0 {
            format!("-{out}")
        } else {
            out
        }
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// A linear axis `[lo, hi]` mapped onto pixels `[p0, p1]`.
#[derive(Clone, Copy)]
struct Linear {
    lo: f64,
    hi: f64,
    p0: f64,
    p1: f64,
    step: f64,
}

impl Linear {
    /// A "nice" axis from `lo` covering `max` (with a little headroom), about `target` ticks.
    fn nice(lo: f64, max: f64, target: f64, p0: f64, p1: f64) -> Linear {
        let max = if max.is_finite() && max > lo {
            max
        } else {
            lo + 1.0
        };
        let raw = (max - lo) * 1.05 / target;
        let mag = 10f64.powf(raw.log10().floor());
        let norm = raw / mag;
        let step = mag
            * if norm <= 1.0 {
                1.0
            } else if norm <= 2.0 {
                2.0
            } else if norm <= 2.5 {
                2.5
            } else if norm <= 5.0 {
                5.0
            } else {
                10.0
            };
        let hi = lo + ((max * 1.05 - lo) / step).ceil() * step;
        Linear {
            lo,
            hi,
            p0,
            p1,
            step,
        }
    }

    fn map(&self, v: f64) -> f64 {
        self.p0 + (v - self.lo) / (self.hi - self.lo) * (self.p1 - self.p0)
    }

    fn ticks(&self) -> Vec<f64> {
        let n = ((self.hi - self.lo) / self.step).round() as i64;
        (0..=n).map(|i| self.lo + i as f64 * self.step).collect()
    }
}

/// A logarithmic axis over `[10^llo, 10^lhi]`, REVERSED: `10^lhi` maps to `p0` (left) and
/// `10^llo` to `p1` (right).
#[derive(Clone, Copy)]
struct LogRev {
    llo: f64,
    lhi: f64,
    p0: f64,
    p1: f64,
}

impl LogRev {
    /// Covers `[min, max]` (both >= 1) with some padding in log space, at least one decade.
    fn covering(min: f64, max: f64, p0: f64, p1: f64) -> LogRev {
        let (mut a, mut b) = (min.max(1.0).log10(), max.max(1.0).log10());
        if a > b {
            std::mem::swap(&mut a, &mut b);
        }
        let pad = ((b - a) * 0.08).max(0.12);
        let (mut llo, mut lhi) = (a - pad, b + pad);
        if lhi - llo < 1.0 {
            let mid = (lhi + llo) / 2.0;
            llo = mid - 0.5;
            lhi = mid + 0.5;
        }
        LogRev { llo, lhi, p0, p1 }
    }

    fn map(&self, v: f64) -> f64 {
        let l = v.max(1e-9).log10();
        self.p0 + (self.lhi - l) / (self.lhi - self.llo) * (self.p1 - self.p0)
    }

    /// (value, labelled?) tick positions: labelled 1-2-5 (or decades only on wide axes),
    /// unlabelled minor grid lines at the other integer mantissas.
    fn ticks(&self) -> Vec<(f64, bool)> {
        let span = self.lhi - self.llo;
        let labelled: &[f64] = if span <= 1.6 {
            &[1.0, 2.0, 3.0, 5.0, 7.0]
        } else if span <= 3.2 {
            &[1.0, 2.0, 5.0]
        } else {
            &[1.0]
        };
        let mut out = Vec::new();
        let (d0, d1) = (self.llo.floor() as i32, self.lhi.ceil() as i32);
        for d in d0..=d1 {
            for m in 1..=9 {
                let v = m as f64 * 10f64.powi(d);
                let l = v.log10();
                if l < self.llo - 1e-9 || l > self.lhi + 1e-9 {
                    continue;
                }
                let lab = labelled.contains(&(m as f64));
                if lab || span <= 5.0 {
                    out.push((v, lab));
                }
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------------------
// Colours.

/// The colour used for a scheme (by its normalized key); unknown schemes get colours from a
/// fallback palette in order of first appearance.
fn known_color(key: &str) -> Option<&'static str> {
    Some(match key {
        "sprout" => "#d62728",
        "sprout-ewma" => "#ff7f0e",
        "cubic" => "#1f77b4",
        "cubic-codel" => "#17becf",
        "vegas" => "#2ca02c",
        "ledbat" => "#9467bd",
        "compound" => "#8c564b",
        "bbr" => "#e377c2",
        "skype" => "#7f7f7f",
        "facetime" => "#bcbd22",
        "hangout" => "#393b79",
        "omniscient" => "#000000",
        _ => return None,
    })
}

const FALLBACK: [&str; 8] = [
    "#637939", "#843c39", "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363",
];

/// Key that groups a label with its published counterpart: the scheme key of the label with
/// any parenthesized suffix removed (`"Sprout (paper)"` -> `"sprout"`).
fn label_key(label: &str) -> String {
    let base = label.split('(').next().unwrap_or(label);
    scheme_key(base)
}

struct Palette {
    assigned: HashMap<String, &'static str>,
    next: usize,
}

impl Palette {
    fn new() -> Self {
        Palette {
            assigned: HashMap::new(),
            next: 0,
        }
    }

    fn color(&mut self, key: &str) -> &'static str {
        if let Some(c) = known_color(key) {
            return c;
        }
        if let Some(c) = self.assigned.get(key) {
            return c;
        }
        let c = FALLBACK[self.next % FALLBACK.len()];
        self.next += 1;
        self.assigned.insert(key.to_string(), c);
        c
    }
}

// ---------------------------------------------------------------------------------------
// Label placement.

#[derive(Clone, Copy)]
struct BBox {
    x0: f64,
    y0: f64,
    x1: f64,
    y1: f64,
}

impl BBox {
    fn overlap(&self, o: &BBox) -> f64 {
        let w = (self.x1.min(o.x1) - self.x0.max(o.x0)).max(0.0);
        let h = (self.y1.min(o.y1) - self.y0.max(o.y0)).max(0.0);
        w * h
    }
}

/// Estimated extent of a text run (generous average glyph width for sans-serif).
fn text_bbox(x: f64, y: f64, s: &str, size: f64, anchor: Anchor) -> BBox {
    let w = 0.6 * size * s.chars().count() as f64;
    let x0 = match anchor {
        Anchor::Start => x,
        Anchor::Middle => x - w / 2.0,
        Anchor::End => x - w,
    };
    BBox {
        x0,
        y0: y - 0.8 * size,
        x1: x0 + w,
        y1: y + 0.25 * size,
    }
}

// ---------------------------------------------------------------------------------------
// Scatter charts (Figures 7 and 8).

struct Mark {
    label: String,
    key: String,
    delay_ms: f64,
    y: f64,
    paper: bool,
}

const PLOT_L: f64 = 84.0;
const PLOT_T: f64 = 58.0;
const PLOT_R: f64 = WIDTH - 205.0;
const PLOT_B: f64 = HEIGHT - 74.0;
const MARKER_R: f64 = 6.0;

fn scatter_chart(
    title: &str,
    x_title: &str,
    y_title: &str,
    marks: Vec<Mark>,
    y_axis: Linear,
    y_fmt: fn(f64) -> String,
) -> String {
    let mut svg = Svg::new(title);
    let marks: Vec<Mark> = marks
        .into_iter()
        .filter(|m| m.delay_ms.is_finite() && m.y.is_finite())
        .collect();

    // X axis: reversed log over the delays (clamped to >= 1 ms).
    let (mut dmin, mut dmax) = (f64::INFINITY, f64::NEG_INFINITY);
    for m in &marks {
        dmin = dmin.min(m.delay_ms.max(1.0));
        dmax = dmax.max(m.delay_ms.max(1.0));
    }
    if !dmin.is_finite() {
        (dmin, dmax) = (10.0, 1000.0);
    }
    let x_axis = LogRev::covering(dmin, dmax, PLOT_L, PLOT_R);

    // Title.
    svg.text(
        WIDTH / 2.0,
        30.0,
        title,
        18.0,
        Anchor::Middle,
        TEXT,
        r#"font-weight="bold""#,
    );

    // Grid and ticks.
    for (v, lab) in x_axis.ticks() {
        let x = x_axis.map(v);
        svg.line(
            x,
            PLOT_T,
            x,
            PLOT_B,
            GRID,
            if lab { 1.0 } else { 0.6 },
            if lab { "" } else { "2 3" },
        );
        if lab {
            svg.line(x, PLOT_B, x, PLOT_B + 5.0, AXIS, 1.0, "");
            svg.text(
                x,
                PLOT_B + 19.0,
                &fmt_num(v),
                12.0,
                Anchor::Middle,
                TEXT,
                "",
            );
        }
    }
    for v in y_axis.ticks() {
        let y = y_axis.map(v);
        svg.line(PLOT_L, y, PLOT_R, y, GRID, 1.0, "");
        svg.line(PLOT_L - 5.0, y, PLOT_L, y, AXIS, 1.0, "");
        svg.text(
            PLOT_L - 8.0,
            y + 4.0,
            &y_fmt(v),
            12.0,
            Anchor::End,
            TEXT,
            "",
        );
    }
    svg.rect(
        PLOT_L,
        PLOT_T,
        PLOT_R - PLOT_L,
        PLOT_B - PLOT_T,
        "none",
        AXIS,
    );
    svg.text(
        (PLOT_L + PLOT_R) / 2.0,
        PLOT_B + 44.0,
        x_title,
        13.0,
        Anchor::Middle,
        TEXT,
        "",
    );
    svg.text(
        (PLOT_L + PLOT_R) / 2.0,
        PLOT_B + 62.0,
        "(log scale, reversed: lower delay to the right)",
        11.0,
        Anchor::Middle,
        "#666666",
        "",
    );
    svg.vtext(22.0, (PLOT_T + PLOT_B) / 2.0, y_title, 13.0);

    // Colours and positions.
    let mut palette = Palette::new();
    let placed: Vec<(f64, f64, &'static str)> = marks
        .iter()
        .map(|m| {
            (
                x_axis.map(m.delay_ms.max(1.0)),
                y_axis.map(m.y),
                palette.color(&m.key),
            )
        })
        .collect();

    // Faint connectors between a scheme's published point and ours.
    for (i, m) in marks.iter().enumerate().filter(|(_, m)| !m.paper) {
        for (j, o) in marks.iter().enumerate() {
            if o.paper && o.key == m.key {
                let (a, b) = (placed[i], placed[j]);
                svg.line(a.0, a.1, b.0, b.1, a.2, 1.0, "3 3");
            }
        }
    }

    // Markers: published hollow (drawn first), ours filled on top.
    let mut obstacles: Vec<BBox> = Vec::new();
    let mut order: Vec<usize> = (0..marks.len()).collect();
    order.sort_by_key(|&i| !marks[i].paper); // paper first
    for &i in &order {
        let m = &marks[i];
        let (x, y, col) = placed[i];
        let (fill, stroke, sw) = if m.paper {
            ("white", col, 2.0)
        } else {
            (col, "#222222", 1.0)
        };
        let _ = write!(
            svg.buf,
            r#"<circle class="point" cx="{}" cy="{}" r="{}" fill="{fill}" stroke="{stroke}" stroke-width="{}" data-label="{}" data-delay-ms="{}" data-paper="{}"/>"#,
            c(x),
            c(y),
            c(MARKER_R),
            c(sw),
            esc(&m.label),
            m.delay_ms,
            m.paper
        );
        obstacles.push(BBox {
            x0: x - MARKER_R - 1.0,
            y0: y - MARKER_R - 1.0,
            x1: x + MARKER_R + 1.0,
            y1: y + MARKER_R + 1.0,
        });
    }

    // Labels: ours first (they get the best spots), then the published ones.
    let plot_box = BBox {
        x0: PLOT_L + 2.0,
        y0: PLOT_T + 2.0,
        x1: PLOT_R - 2.0,
        y1: PLOT_B - 2.0,
    };
    let mut label_order: Vec<usize> = (0..marks.len()).collect();
    label_order.sort_by_key(|&i| marks[i].paper);
    let candidates: [(f64, f64, Anchor); 8] = [
        (9.0, 4.0, Anchor::Start),
        (-9.0, 4.0, Anchor::End),
        (0.0, -10.0, Anchor::Middle),
        (0.0, 19.0, Anchor::Middle),
        (7.0, -8.0, Anchor::Start),
        (-7.0, -8.0, Anchor::End),
        (7.0, 16.0, Anchor::Start),
        (-7.0, 16.0, Anchor::End),
    ];
    for &i in &label_order {
        let m = &marks[i];
        let (x, y, col) = placed[i];
        let size = if m.paper { 11.0 } else { 12.0 };
        let mut best: Option<(f64, f64, f64, Anchor, BBox)> = None;
        for &(dx, dy, anchor) in &candidates {
            let (tx, ty) = (x + dx, y + dy);
            let bb = text_bbox(tx, ty, &m.label, size, anchor);
            let mut score: f64 = obstacles.iter().map(|o| o.overlap(&bb)).sum();
            let inside = bb.x0 >= plot_box.x0
                && bb.x1 <= plot_box.x1
                && bb.y0 >= plot_box.y0
                && bb.y1 <= plot_box.y1;
            if !inside {
                score += 1e6;
            }
            let better = match &best {
                Some(b) => score < b.0,
                None => true,
            };
            if better {
                best = Some((score, tx, ty, anchor, bb));
            }
            if score == 0.0 {
                break;
            }
        }
        if let Some((_, tx, ty, anchor, bb)) = best {
            let extra = if m.paper {
                r#"font-style="italic" class="point-label""#
            } else {
                r#"font-weight="bold" class="point-label""#
            };
            svg.text(tx, ty, &m.label, size, anchor, col, extra);
            obstacles.push(bb);
        }
    }

    // Legend (outside the plot, on the right).
    let lx = PLOT_R + 18.0;
    let mut ly = PLOT_T + 8.0;
    svg.text(
        lx,
        ly,
        "Scheme",
        12.0,
        Anchor::Start,
        TEXT,
        r#"font-weight="bold""#,
    );
    ly += 20.0;
    let mut seen: Vec<String> = Vec::new();
    for (i, m) in marks.iter().enumerate() {
        if seen.contains(&m.key) {
            continue;
        }
        // Prefer our label's spelling for the legend.
        let name = marks
            .iter()
            .find(|o| o.key == m.key && !o.paper)
            .map_or(&m.label, |o| &o.label);
        seen.push(m.key.clone());
        let _ = write!(
            svg.buf,
            r#"<circle cx="{}" cy="{}" r="5" fill="{}" stroke="none"/>"#,
            c(lx + 6.0),
            c(ly - 4.0),
            placed[i].2
        );
        svg.text(lx + 18.0, ly, name, 12.0, Anchor::Start, TEXT, "");
        ly += 19.0;
    }
    ly += 10.0;
    let has_ours = marks.iter().any(|m| !m.paper);
    let has_paper = marks.iter().any(|m| m.paper);
    if has_ours {
        svg.raw(&format!(
            r##"<circle cx="{}" cy="{}" r="5" fill="#555555" stroke="#222222"/>"##,
            c(lx + 6.0),
            c(ly - 4.0)
        ));
        svg.text(lx + 18.0, ly, "this run", 12.0, Anchor::Start, TEXT, "");
        ly += 19.0;
    }
    if has_paper {
        svg.raw(&format!(
            r##"<circle cx="{}" cy="{}" r="5" fill="white" stroke="#555555" stroke-width="2"/>"##,
            c(lx + 6.0),
            c(ly - 4.0)
        ));
        svg.text(
            lx + 18.0,
            ly,
            "paper (published)",
            12.0,
            Anchor::Start,
            TEXT,
            "",
        );
        ly += 19.0;
    }
    // "Better" arrow.
    ly += 16.0;
    let (ax, ay) = (lx + 6.0, ly + 26.0);
    svg.line(ax, ay, ax + 22.0, ay - 22.0, AXIS, 1.8, "");
    svg.path(
        &format!(
            "M{} {} L{} {} L{} {} Z",
            c(ax + 24.0),
            c(ay - 24.0),
            c(ax + 13.0),
            c(ay - 21.0),
            c(ax + 21.0),
            c(ay - 13.0)
        ),
        AXIS,
        1.0,
        AXIS,
        "",
    );
    svg.text(
        lx + 36.0,
        ly + 6.0,
        "better:",
        12.0,
        Anchor::Start,
        TEXT,
        r#"font-weight="bold""#,
    );
    svg.text(
        lx + 36.0,
        ly + 21.0,
        "up and to the right",
        11.0,
        Anchor::Start,
        TEXT,
        "",
    );

    svg.finish()
}

/// A Figure-7-style chart (SVG text): x = 95th-percentile self-inflicted delay in ms on a
/// reversed logarithmic axis (large delays on the left), y = throughput in kbit/s from 0.
/// Our points are filled, the paper's hollow, in one colour per scheme (matched by label,
/// ignoring case and any parenthesized suffix); each is labelled with its scheme name.
/// Delays below 1 ms are drawn at 1 ms; points with non-finite values are skipped.
pub fn throughput_delay_chart(title: &str, points: &[ChartPoint]) -> String {
    let ymax = points
        .iter()
        .map(|p| p.throughput_kbps)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let y_axis = Linear::nice(0.0, ymax, 6.0, PLOT_B, PLOT_T);
    let marks = points
        .iter()
        .map(|p| Mark {
            label: p.label.clone(),
            key: label_key(&p.label),
            delay_ms: p.delay_ms,
            y: p.throughput_kbps,
            paper: p.paper,
        })
        .collect();
    scatter_chart(
        title,
        "95th-percentile self-inflicted delay (ms)",
        "Throughput (kbit/s)",
        marks,
        y_axis,
        fmt_num,
    )
}

/// A Figure-8-style chart (SVG text): x = average self-inflicted delay in ms on a reversed
/// logarithmic axis, y = average utilization in percent (0-100; above 100 % the axis extends).
/// Same marker, colour and label conventions as [`throughput_delay_chart`].
pub fn utilization_delay_chart(title: &str, points: &[UtilizationPoint]) -> String {
    let ymax = points
        .iter()
        .map(|p| p.utilization * 100.0)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let y_axis = if ymax <= 100.0 {
        Linear {
            lo: 0.0,
            hi: 100.0,
            p0: PLOT_B,
            p1: PLOT_T,
            step: 10.0,
        }
    } else {
        Linear::nice(0.0, ymax, 6.0, PLOT_B, PLOT_T)
    };
    let marks = points
        .iter()
        .map(|p| Mark {
            label: p.label.clone(),
            key: label_key(&p.label),
            delay_ms: p.delay_ms,
            y: p.utilization * 100.0,
            paper: p.paper,
        })
        .collect();
    scatter_chart(
        title,
        "Average self-inflicted delay (ms)",
        "Average utilization (%)",
        marks,
        y_axis,
        |v| format!("{}%", fmt_num(v)),
    )
}

// ---------------------------------------------------------------------------------------
// Time series (Figure 1).

/// Step-function path through `(t0, t1, value)` segments, mapped by `fx`, `fy`.
fn step_path(segs: &[(f64, f64, f64)], fx: impl Fn(f64) -> f64, fy: impl Fn(f64) -> f64) -> String {
    let mut d = String::new();
    for (k, &(t0, t1, v)) in segs.iter().enumerate() {
        let (x0, x1, y) = (fx(t0), fx(t1), fy(v));
        let _ = write!(
            d,
            "{}{} {} L{} {} ",
            if k == 0 { "M" } else { "L" },
            c(x0),
            c(y),
            c(x1),
            c(y)
        );
    }
    d.trim_end().to_string()
}

/// A Figure-1-style time series (SVG text). Top panel: the trace's capacity (grey, filled)
/// and the delivered throughput (blue line), kbit/s, against time in seconds. Bottom panel:
/// the per-bin maximum of the all-packet delay function (red), ms, on a linear axis with a
/// dotted 100 ms target line; the data-only delay is added (orange, dashed) where it differs.
/// Points are the bins of [`crate::metrics::time_series`], drawn as steps over each bin.
pub fn time_series_chart(title: &str, points: &[TimeSeriesPoint]) -> String {
    const L: f64 = 84.0;
    const R: f64 = WIDTH - 30.0;
    const T1: f64 = 74.0;
    const B1: f64 = 300.0;
    const T2: f64 = 336.0;
    const B2: f64 = HEIGHT - 70.0;
    const CAP: &str = "#9a9a9a";
    const TPUT: &str = "#1f5fb4";
    const DELAY: &str = "#c62828";
    const DDATA: &str = "#ef8a00";

    let pts: Vec<&TimeSeriesPoint> = points
        .iter()
        .filter(|p| {
            p.t_s.is_finite()
                && p.capacity_kbps.is_finite()
                && p.throughput_kbps.is_finite()
                && p.delay_ms.is_finite()
        })
        .collect();
    let bin_end = |p: &TimeSeriesPoint| p.t_s + if p.bin_s > 0.0 { p.bin_s } else { 0.0 };
    let (t0, t1) = if pts.is_empty() {
        (0.0, 1.0)
    } else {
        let a = pts.iter().map(|p| p.t_s).fold(f64::INFINITY, f64::min);
        let b = pts
            .iter()
            .map(|p| bin_end(p))
            .fold(f64::NEG_INFINITY, f64::max);
        if b > a {
            (a, b)
        } else {
            (a, a + 1.0)
        }
    };
    // Time axis: nice ticks inside [t0, t1], exact ends.
    let tick_axis = Linear::nice(0.0, t1 - t0, 8.0, 0.0, 1.0);
    let fx = |t: f64| L + (t - t0) / (t1 - t0) * (R - L);

    let rate_max = pts
        .iter()
        .map(|p| p.capacity_kbps.max(p.throughput_kbps))
        .fold(0.0, f64::max);
    let ya = Linear::nice(0.0, rate_max.max(1.0), 5.0, B1, T1);
    let has_data_delay = pts
        .iter()
        .any(|p| p.delay_data_ms.is_finite() && (p.delay_data_ms - p.delay_ms).abs() > 1e-9);
    let delay_max = pts
        .iter()
        .map(|p| {
            if has_data_delay && p.delay_data_ms.is_finite() {
                p.delay_ms.max(p.delay_data_ms)
            } else {
                p.delay_ms
            }
        })
        .fold(0.0, f64::max);
    let yd = Linear::nice(0.0, delay_max.max(120.0), 4.0, B2, T2);

    let mut svg = Svg::new(title);
    svg.text(
        WIDTH / 2.0,
        30.0,
        title,
        18.0,
        Anchor::Middle,
        TEXT,
        r#"font-weight="bold""#,
    );

    // Legend row.
    let mut lx = L;
    let ly = 56.0;
    svg.rect(lx, ly - 10.0, 22.0, 11.0, CAP, "none");
    svg.text(
        lx + 28.0,
        ly,
        "capacity (trace)",
        12.0,
        Anchor::Start,
        TEXT,
        "",
    );
    lx += 150.0;
    svg.line(lx, ly - 4.0, lx + 22.0, ly - 4.0, TPUT, 2.0, "");
    svg.text(lx + 28.0, ly, "throughput", 12.0, Anchor::Start, TEXT, "");
    lx += 115.0;
    svg.line(lx, ly - 4.0, lx + 22.0, ly - 4.0, DELAY, 2.0, "");
    svg.text(
        lx + 28.0,
        ly,
        "delay (max per bin)",
        12.0,
        Anchor::Start,
        TEXT,
        "",
    );
    lx += 160.0;
    if has_data_delay {
        svg.line(lx, ly - 4.0, lx + 22.0, ly - 4.0, DDATA, 2.0, "5 3");
        svg.text(
            lx + 28.0,
            ly,
            "delay, data packets only",
            12.0,
            Anchor::Start,
            TEXT,
            "",
        );
    }

    // Grids.
    for (top, bottom, axis, unit) in [(T1, B1, ya, ""), (T2, B2, yd, "")] {
        for v in axis.ticks() {
            let y = axis.map(v);
            svg.line(L, y, R, y, GRID, 1.0, "");
            svg.line(L - 5.0, y, L, y, AXIS, 1.0, "");
            svg.text(
                L - 8.0,
                y + 4.0,
                &format!("{}{unit}", fmt_num(v)),
                12.0,
                Anchor::End,
                TEXT,
                "",
            );
        }
        for v in tick_axis.ticks() {
            if v > t1 - t0 + 1e-9 {
                continue;
            }
            let x = fx(t0 + v);
            svg.line(x, top, x, bottom, GRID, 1.0, "");
        }
    }
    for v in tick_axis.ticks() {
        if v > t1 - t0 + 1e-9 {
            continue;
        }
        let x = fx(t0 + v);
        svg.line(x, B1, x, B1 + 4.0, AXIS, 1.0, "");
        svg.line(x, B2, x, B2 + 5.0, AXIS, 1.0, "");
        svg.text(
            x,
            B2 + 19.0,
            &fmt_num(t0 + v),
            12.0,
            Anchor::Middle,
            TEXT,
            "",
        );
    }

    // Top panel: capacity area and throughput line.
    let cap: Vec<(f64, f64, f64)> = pts
        .iter()
        .map(|p| (p.t_s, bin_end(p), p.capacity_kbps))
        .collect();
    let tput: Vec<(f64, f64, f64)> = pts
        .iter()
        .map(|p| (p.t_s, bin_end(p), p.throughput_kbps))
        .collect();
    if !cap.is_empty() {
        let line = step_path(&cap, fx, |v| ya.map(v));
        let area = format!(
            "M{} {} {} L{} {} Z",
            c(fx(cap[0].0)),
            c(B1),
            line.replacen('M', "L", 1),
            c(fx(cap[cap.len() - 1].1)),
            c(B1)
        );
        svg.path(
            &area,
            "none",
            0.0,
            CAP,
            r#"fill-opacity="0.55" class="capacity""#,
        );
        svg.path(
            &step_path(&tput, fx, |v| ya.map(v)),
            TPUT,
            1.6,
            "none",
            r#"class="throughput""#,
        );
    }
    svg.rect(L, T1, R - L, B1 - T1, "none", AXIS);
    svg.vtext(24.0, (T1 + B1) / 2.0, "Throughput (kbit/s)", 13.0);

    // Bottom panel: delay.
    let target = yd.map(100.0);
    svg.line(L, target, R, target, "#444444", 1.2, "2 3");
    svg.text(
        R - 6.0,
        target - 5.0,
        "100 ms target",
        11.0,
        Anchor::End,
        "#444444",
        "",
    );
    if has_data_delay {
        let dd: Vec<(f64, f64, f64)> = pts
            .iter()
            .filter(|p| p.delay_data_ms.is_finite())
            .map(|p| (p.t_s, bin_end(p), p.delay_data_ms))
            .collect();
        if !dd.is_empty() {
            svg.path(
                &step_path(&dd, fx, |v| yd.map(v)),
                DDATA,
                1.4,
                "none",
                r#"stroke-dasharray="5 3" class="delay-data""#,
            );
        }
    }
    let dl: Vec<(f64, f64, f64)> = pts
        .iter()
        .map(|p| (p.t_s, bin_end(p), p.delay_ms))
        .collect();
    if !dl.is_empty() {
        svg.path(
            &step_path(&dl, fx, |v| yd.map(v)),
            DELAY,
            1.6,
            "none",
            r#"class="delay""#,
        );
    }
    svg.rect(L, T2, R - L, B2 - T2, "none", AXIS);
    svg.vtext(24.0, (T2 + B2) / 2.0, "Delay (ms)", 13.0);
    svg.text(
        (L + R) / 2.0,
        B2 + 44.0,
        "Time (s)",
        13.0,
        Anchor::Middle,
        TEXT,
        "",
    );

    svg.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_formatting() {
        assert_eq!(fmt_num(1000.0), "1,000");
        assert_eq!(fmt_num(97631.0), "97,631");
        assert_eq!(fmt_num(5.0), "5");
        assert_eq!(fmt_num(2.5), "2.5");
        assert_eq!(fmt_num(0.0), "0");
        assert_eq!(c(-0.001), "0");
    }

    #[test]
    fn log_axis_is_reversed() {
        let a = LogRev::covering(50.0, 5000.0, 100.0, 500.0);
        assert!(a.map(5000.0) < a.map(50.0));
        assert!(a.map(5000.0) >= 100.0 && a.map(50.0) <= 500.0);
        assert!(a.ticks().iter().any(|&(v, lab)| lab && v == 100.0));
    }

    #[test]
    fn nice_linear_axis() {
        let a = Linear::nice(0.0, 4741.0, 6.0, 400.0, 0.0);
        assert!(a.hi >= 4741.0);
        assert_eq!(a.step, 1000.0);
        assert_eq!(a.ticks().first(), Some(&0.0));
    }
}
