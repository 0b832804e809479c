//! SVG charts in the style of the paper's Figures 1, 7 and 8.
//!
//! # Approach
//!
//! The charts are built by a small SVG writer in this module (plain string building), not by
//! a plotting crate: these charts need a *reversed logarithmic* delay axis, hollow-versus-filled
//! markers per scheme, label placement that avoids collisions, and machine-checkable output;
//! with a hand-written writer all of that is short, the output is deterministic, and the crate
//! gains no dependency. Text is emitted as SVG `<text>` in a generic sans-serif font.
//!
//! # Labels
//!
//! No text overlaps another text, a marker or a line. Every text's extent is estimated
//! conservatively ([`text_width`]: per-glyph widths, at least [`CHAR_WIDTH_EM`] or
//! [`BOLD_CHAR_WIDTH_EM`] per character; [`ASCENT_EM`] above the baseline and [`DESCENT_EM`]
//! below; [`LINE_EM`] between the lines of a label of several lines), and point labels
//! are placed greedily by a small placer: first the eight positions touching the point, then
//! rings of positions further out joined to the point by a leader line, then a scan of the whole
//! plot; a position is taken only if its box stays inside the plot and meets no label placed
//! before, no marker and no line (the paper-to-ours connectors and the leaders of earlier
//! labels), and if its leader crosses no label. Points whose markers overlap (or whose values are
//! equal) share one label, `"reno = compound"` for equal values and `"cubic ≈ reno"` for
//! markers that merely overlap. Tick labels that would collide are left out.
//!
//! # Machine-readable output
//!
//! Every data marker is a `<circle class="point">` with an `id` (`p0`, `p1`, ...) and
//! `data-label`, `data-delay-ms`, `data-y` and `data-paper` attributes; every point label is a
//! `<text class="point-label">` with an `id` (`l0`, ...) and `data-points` naming the markers it
//! labels; a leader is a `<line class="leader">` whose `data-for` names its label. Other classes:
//! `grid` (grid lines, the only lines a text may cross), `tick`, `frame` (plot borders),
//! `connector` (ours to the paper's), `marker` (legend swatches, the arrow head), `reference`
//! (the 100 ms target), `shade` (the unmeasured start of a time series) and, on time series,
//! `capacity`, `throughput`, `delay`, `delay-data`.
//!
//! Units: delays in milliseconds, throughputs in kbit/s, utilization as a fraction 0..1
//! (plotted as percent), time in seconds. The charts are [`WIDTH`] x [`HEIGHT`] pixels.

use std::collections::HashMap;
use std::fmt::Write as _;

use sprout_sim::metrics::TimeSeriesPoint;
use crate::paper::scheme_key;

/// Width of every chart, pixels.
pub const WIDTH: f64 = 840.0;
/// Height of every chart, pixels.
pub const HEIGHT: f64 = 560.0;

/// Least width of a character of regular (or italic) text, in units of its font size: the
/// floor of the charts' estimate [`text_width`], which is wider for wide glyphs ("m", "W",
/// capitals).
pub const CHAR_WIDTH_EM: f64 = 0.6;
/// Least width of a character of bold text, in units of its font size (see [`CHAR_WIDTH_EM`]).
pub const BOLD_CHAR_WIDTH_EM: f64 = 0.66;
/// Height of text above its baseline, in units of its font size.
pub const ASCENT_EM: f64 = 0.8;
/// Depth of text below its baseline, in units of its font size.
pub const DESCENT_EM: f64 = 0.25;

/// Distance between the baselines of the lines of a label of several lines, in units of its
/// font size (each line is a `<tspan>` with this `dy` in pixels).
pub const LINE_EM: f64 = 1.2;

/// Clearance kept around every estimated text box, pixels.
const PAD: f64 = 1.5;

const FONT: &str = "DejaVu Sans, Helvetica, Arial, sans-serif";
const GRID: &str = "#e3e3e3";
const AXIS: &str = "#333333";
const TEXT: &str = "#222222";
const MUTED: &str = "#666666";
const HALO: &str =
    r#"stroke="white" stroke-width="3" stroke-linejoin="round" paint-order="stroke""#;

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
// Text extents.

/// Advance width of a glyph in units of the font size, rounded up from DejaVu Sans (the
/// first font the charts ask for; Helvetica and Arial are narrower).
fn glyph_em(ch: char, bold: bool) -> f64 {
    let (regular, heavy) = match ch {
        ' ' | '.' | ',' | ':' | ';' | '!' | '\'' | '|' | 'i' | 'j' | 'l' | 'I' => (0.34, 0.40),
        'f' | 't' | 'r' | '(' | ')' | '[' | ']' | '{' | '}' | '-' | '/' | '\\' | '"' | '`' => {
            (0.44, 0.50)
        }
        'm' | 'w' | 'M' | 'W' | '%' | '@' | '&' | '—' => (1.0, 1.11),
        '=' | '+' | '<' | '>' | '~' | '#' | '≈' | '×' | '±' | '→' | '←' | '↑' | '↓' => {
            (0.84, 0.84)
        }
        c if c.is_ascii_uppercase() => (0.80, 0.86),
        c if c.is_ascii() => (0.66, 0.72),
        _ => (1.0, 1.11),
    };
    if bold {
        heavy
    } else {
        regular
    }
}

/// Conservative width of a text run of `s` at font size `size` (pixels): per-glyph widths
/// rounded up from DejaVu Sans (bold or regular; italic is as wide as regular), and never less
/// than [`CHAR_WIDTH_EM`] (or [`BOLD_CHAR_WIDTH_EM`]) per character. The charts keep this
/// width, [`ASCENT_EM`] above the baseline and [`DESCENT_EM`] below, plus 1.5 px all round,
/// clear of other texts, markers and lines. Rendered with librsvg, the ink of every text of
/// the evaluation's charts stays within 0.6 px of this estimate.
pub fn text_width(s: &str, size: f64, bold: bool) -> f64 {
    let n = s.chars().count() as f64;
    let flat = n
        * size
        * if bold {
            BOLD_CHAR_WIDTH_EM
        } else {
            CHAR_WIDTH_EM
        };
    let glyphs: f64 = s.chars().map(|c| glyph_em(c, bold)).sum::<f64>() * size;
    flat.max(glyphs)
}

/// The largest font size, at most `size` and at least `min`, at which `s` fits in `width`.
fn fit_size(s: &str, width: f64, size: f64, min: f64, bold: bool) -> f64 {
    let w = text_width(s, size, bold);
    if w <= width {
        size
    } else {
        (size * width / w).floor().max(min)
    }
}

// ---------------------------------------------------------------------------------------
// Geometry.

#[derive(Clone, Copy, Debug, PartialEq)]
struct BBox {
    x0: f64,
    y0: f64,
    x1: f64,
    y1: f64,
}

type Pt = (f64, f64);

#[derive(Clone, Copy, Debug)]
struct Seg {
    a: Pt,
    b: Pt,
}

impl BBox {
    fn inflate(&self, d: f64) -> BBox {
        BBox {
            x0: self.x0 - d,
            y0: self.y0 - d,
            x1: self.x1 + d,
            y1: self.y1 + d,
        }
    }

    fn intersects(&self, o: &BBox) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    fn contains(&self, o: &BBox) -> bool {
        o.x0 >= self.x0 && o.x1 <= self.x1 && o.y0 >= self.y0 && o.y1 <= self.y1
    }

    fn nearest(&self, p: Pt) -> Pt {
        (p.0.clamp(self.x0, self.x1), p.1.clamp(self.y0, self.y1))
    }

    fn hits_circle(&self, cx: f64, cy: f64, r: f64) -> bool {
        let (nx, ny) = self.nearest((cx, cy));
        (nx - cx).powi(2) + (ny - cy).powi(2) < r * r
    }

    /// Whether the segment meets the box (Liang-Barsky clipping).
    fn hits_seg(&self, s: Seg) -> bool {
        let (dx, dy) = (s.b.0 - s.a.0, s.b.1 - s.a.1);
        let (mut t0, mut t1) = (0.0f64, 1.0f64);
        for (p, q) in [
            (-dx, s.a.0 - self.x0),
            (dx, self.x1 - s.a.0),
            (-dy, s.a.1 - self.y0),
            (dy, self.y1 - s.a.1),
        ] {
            if p == 0.0 {
                if q < 0.0 {
                    return false;
                }
            } else {
                let r = q / p;
                if p < 0.0 {
                    t0 = t0.max(r);
                } else {
                    t1 = t1.min(r);
                }
                if t0 > t1 {
                    return false;
                }
            }
        }
        true
    }
}

fn dist(a: Pt, b: Pt) -> f64 {
    ((a.0 - b.0).powi(2) + (a.1 - b.1).powi(2)).sqrt()
}

fn segs_cross(s: Seg, t: Seg) -> bool {
    let orient = |a: Pt, b: Pt, c: Pt| (b.0 - a.0) * (c.1 - a.1) - (b.1 - a.1) * (c.0 - a.0);
    let d1 = orient(t.a, t.b, s.a);
    let d2 = orient(t.a, t.b, s.b);
    let d3 = orient(s.a, s.b, t.a);
    let d4 = orient(s.a, s.b, t.b);
    ((d1 > 0.0 && d2 < 0.0) || (d1 < 0.0 && d2 > 0.0))
        && ((d3 > 0.0 && d4 < 0.0) || (d3 < 0.0 && d4 > 0.0))
}

fn seg_hits_circle(s: Seg, c: Pt, r: f64) -> bool {
    let (dx, dy) = (s.b.0 - s.a.0, s.b.1 - s.a.1);
    let len2 = dx * dx + dy * dy;
    let t = if len2 > 0.0 {
        (((c.0 - s.a.0) * dx + (c.1 - s.a.1) * dy) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    dist((s.a.0 + t * dx, s.a.1 + t * dy), c) < r
}

/// The segments of a polyline.
fn polyline_segs(pts: &[Pt]) -> impl Iterator<Item = Seg> + '_ {
    pts.windows(2).map(|w| Seg { a: w[0], b: w[1] })
}

/// The four edges of a rectangle.
fn edges(b: &BBox) -> [Seg; 4] {
    let (a, c, d, e) = ((b.x0, b.y0), (b.x1, b.y0), (b.x1, b.y1), (b.x0, b.y1));
    [
        Seg { a, b: c },
        Seg { a: c, b: d },
        Seg { a: d, b: e },
        Seg { a: e, b: a },
    ]
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

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
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

/// How a text run looks.
#[derive(Clone, Copy)]
struct Font {
    size: f64,
    bold: bool,
    italic: bool,
}

impl Font {
    const fn plain(size: f64) -> Font {
        Font {
            size,
            bold: false,
            italic: false,
        }
    }

    const fn bold(size: f64) -> Font {
        Font {
            size,
            bold: true,
            italic: false,
        }
    }
}

/// Height of a text of `n` lines from the top of the first to the bottom of the last.
fn lines_height(n: usize, f: Font) -> f64 {
    (ASCENT_EM + DESCENT_EM) * f.size + n.saturating_sub(1) as f64 * LINE_EM * f.size
}

/// The conservative box of a text run at `(x, y)` (baseline), padded by [`PAD`].
fn text_box(x: f64, y: f64, s: &str, f: Font, anchor: Anchor) -> BBox {
    let w = text_width(s, f.size, f.bold);
    let x0 = match anchor {
        Anchor::Start => x,
        Anchor::Middle => x - w / 2.0,
        Anchor::End => x - w,
    };
    BBox {
        x0,
        y0: y - ASCENT_EM * f.size,
        x1: x0 + w,
        y1: y + DESCENT_EM * f.size,
    }
    .inflate(PAD)
}

/// A tick mark below the x axis at `x` (the axis at height `axis_y`) and its label, left out
/// when it would leave the canvas or touch a label in `kept` (which it then joins).
fn x_tick(svg: &mut Svg, x: f64, axis_y: f64, label: &str, font: Font, kept: &mut Vec<BBox>) {
    svg.line("tick", (x, axis_y), (x, axis_y + 5.0), AXIS, 1.0, "", "");
    let y = axis_y + 19.0;
    let bb = text_box(x, y, label, font, Anchor::Middle);
    if bb.x0 >= 0.0 && bb.x1 <= WIDTH && !kept.iter().any(|k| k.intersects(&bb)) {
        svg.text(
            x,
            y,
            label,
            font,
            Anchor::Middle,
            TEXT,
            r#"class="tick-label""#,
        );
        kept.push(bb.inflate(2.0));
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
            r#"<rect class="background" x="0" y="0" width="{}" height="{}" fill="white"/>"#,
            c(WIDTH),
            c(HEIGHT)
        );
        Svg { buf }
    }

    #[allow(clippy::too_many_arguments)]
    fn line(&mut self, class: &str, a: Pt, b: Pt, stroke: &str, w: f64, dash: &str, extra: &str) {
        let _ = write!(
            self.buf,
            r#"<line class="{class}" x1="{}" y1="{}" x2="{}" y2="{}" stroke="{stroke}" stroke-width="{}""#,
            c(a.0),
            c(a.1),
            c(b.0),
            c(b.1),
            c(w)
        );
        if !dash.is_empty() {
            let _ = write!(self.buf, r#" stroke-dasharray="{dash}""#);
        }
        if !extra.is_empty() {
            let _ = write!(self.buf, " {extra}");
        }
        self.buf.push_str("/>");
    }

    fn rect(&mut self, class: &str, b: &BBox, fill: &str, stroke: &str, extra: &str) {
        let _ = write!(
            self.buf,
            r#"<rect class="{class}" x="{}" y="{}" width="{}" height="{}" fill="{fill}" stroke="{stroke}"{}{}/>"#,
            c(b.x0),
            c(b.y0),
            c((b.x1 - b.x0).max(0.0)),
            c((b.y1 - b.y0).max(0.0)),
            if extra.is_empty() { "" } else { " " },
            extra
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn circle(
        &mut self,
        class: &str,
        p: Pt,
        r: f64,
        fill: &str,
        stroke: &str,
        sw: f64,
        extra: &str,
    ) {
        let _ = write!(
            self.buf,
            r#"<circle class="{class}" cx="{}" cy="{}" r="{}" fill="{fill}" stroke="{stroke}" stroke-width="{}"{}{}/>"#,
            c(p.0),
            c(p.1),
            c(r),
            c(sw),
            if extra.is_empty() { "" } else { " " },
            extra
        );
    }

    /// Writes a text run and returns its conservative box.
    #[allow(clippy::too_many_arguments)]
    fn text(
        &mut self,
        x: f64,
        y: f64,
        s: &str,
        f: Font,
        anchor: Anchor,
        fill: &str,
        extra: &str,
    ) -> BBox {
        self.open_text(x, y, f, anchor, fill, extra);
        let _ = write!(self.buf, "{}</text>", esc(s));
        text_box(x, y, s, f, anchor)
    }

    /// The opening `<text>` tag with its position, font, anchor, fill and extra attributes.
    fn open_text(&mut self, x: f64, y: f64, f: Font, anchor: Anchor, fill: &str, extra: &str) {
        let _ = write!(
            self.buf,
            r#"<text x="{}" y="{}" font-size="{}" text-anchor="{}" fill="{fill}"{}{}{}{}>"#,
            c(x),
            c(y),
            c(f.size),
            anchor.as_str(),
            if f.bold { r#" font-weight="bold""# } else { "" },
            if f.italic {
                r#" font-style="italic""#
            } else {
                ""
            },
            if extra.is_empty() { "" } else { " " },
            extra,
        );
    }

    /// A text of several lines, the first line's baseline at `y`, one `<tspan>` per line.
    #[allow(clippy::too_many_arguments)]
    fn text_lines(
        &mut self,
        x: f64,
        y: f64,
        lines: &[String],
        f: Font,
        anchor: Anchor,
        fill: &str,
        extra: &str,
    ) {
        if lines.len() == 1 {
            self.text(x, y, &lines[0], f, anchor, fill, extra);
            return;
        }
        self.open_text(x, y, f, anchor, fill, extra);
        for (k, line) in lines.iter().enumerate() {
            let _ = write!(
                self.buf,
                r#"<tspan x="{}" dy="{}">{}</tspan>"#,
                c(x),
                if k == 0 {
                    "0".to_string()
                } else {
                    c(LINE_EM * f.size)
                },
                esc(line)
            );
        }
        self.buf.push_str("</text>");
    }

    /// Text turned a quarter to the left, centred on `(x, y)`'s baseline; returns its box.
    fn vtext(&mut self, x: f64, y: f64, s: &str, f: Font) -> BBox {
        let _ = write!(
            self.buf,
            r#"<text x="{x}" y="{y}" font-size="{}" text-anchor="middle" fill="{TEXT}" transform="rotate(-90 {x} {y})">{}</text>"#,
            c(f.size),
            esc(s),
            x = c(x),
            y = c(y)
        );
        let w = text_width(s, f.size, f.bold);
        BBox {
            x0: x - ASCENT_EM * f.size,
            y0: y - w / 2.0,
            x1: x + DESCENT_EM * f.size,
            y1: y + w / 2.0,
        }
        .inflate(PAD)
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

/// Path data of a polyline.
fn polyline_d(pts: &[Pt]) -> String {
    let mut d = String::new();
    for (k, p) in pts.iter().enumerate() {
        let _ = write!(
            d,
            "{}{} {} ",
            if k == 0 { "M" } else { "L" },
            c(p.0),
            c(p.1)
        );
    }
    d.trim_end().to_string()
}

/// The chart's title, centred at the top: shrunk to fit the width, down to 13 px; then on two
/// lines (down to 10 px); then cut short with an ellipsis.
fn title_text(svg: &mut Svg, title: &str) {
    let room = WIDTH - 24.0;
    let size = fit_size(title, room, 18.0, 13.0, true);
    if text_width(title, size, true) <= room {
        svg.text(
            WIDTH / 2.0,
            30.0,
            title,
            Font::bold(size),
            Anchor::Middle,
            TEXT,
            "",
        );
        return;
    }
    // Two lines, broken at the space nearest the middle.
    let chars: Vec<char> = title.chars().collect();
    let mid = chars.len() / 2;
    let split = (0..chars.len())
        .filter(|&k| chars[k] == ' ')
        .min_by_key(|&k| k.abs_diff(mid));
    let mut lines: Vec<String> = match split {
        Some(k) => vec![chars[..k].iter().collect(), chars[k + 1..].iter().collect()],
        None => vec![title.to_string()],
    };
    let longest = lines
        .iter()
        .max_by(|a, b| text_width(a, 13.0, true).total_cmp(&text_width(b, 13.0, true)))
        .cloned()
        .unwrap_or_default();
    let size = fit_size(&longest, room, 13.0, 10.0, true);
    for line in &mut lines {
        while text_width(line, size, true) > room && line.chars().count() > 1 {
            line.pop();
            while line.ends_with('…') {
                line.pop();
            }
            line.pop();
            line.push('…');
        }
    }
    let y = if lines.len() == 2 { 22.0 } else { 30.0 };
    svg.text_lines(
        WIDTH / 2.0,
        y,
        &lines,
        Font::bold(size),
        Anchor::Middle,
        TEXT,
        "",
    );
}

// ---------------------------------------------------------------------------------------
// Label placement.

/// Where a label went: the text's anchor and first baseline point, and the leader
/// joining it to its point when it is not beside it.
struct Placement {
    anchor: Anchor,
    x: f64,
    y: f64,
    leader: Option<Seg>,
    /// False if no free position was found (the label then overlaps something).
    free: bool,
}

/// What labels must keep clear of: the labels already placed, markers (circles) and lines.
#[derive(Default, Clone)]
struct Placer {
    boxes: Vec<BBox>,
    circles: Vec<(Pt, f64)>,
    segs: Vec<Seg>,
    /// The leaders of the labels placed so far.
    leaders: Vec<Seg>,
    /// What a position beside the point costs more when it could be read as another marker's
    /// label: 0, or [`AMBIGUOUS`] to prefer a position on the nearer rings, with a leader.
    ambiguity: f64,
}

/// See [`Placer::ambiguity`].
const AMBIGUOUS: f64 = 45.0;

/// Which side of its attachment point a label's box lies on.
#[derive(Clone, Copy)]
enum Side {
    E,
    W,
    N,
    S,
    NE,
    NW,
    SE,
    SW,
}

impl Placer {
    fn box_free(&self, bb: &BBox) -> bool {
        self.boxes.iter().all(|b| !b.intersects(bb))
            && self
                .circles
                .iter()
                .all(|&((x, y), r)| !bb.hits_circle(x, y, r))
            && self.segs.iter().all(|s| !bb.hits_seg(*s))
            && self.leaders.iter().all(|s| !bb.hits_seg(*s))
    }

    /// Whether a label beside the point `p` (radius `r`) could be read as another marker's:
    /// another marker is nearly as close to its box, or closer to its centre.
    fn ambiguous(&self, bb: &BBox, p: Pt, r: f64) -> bool {
        let own = dist(p, bb.nearest(p)) - r;
        let mid = ((bb.x0 + bb.x1) / 2.0, (bb.y0 + bb.y1) / 2.0);
        let own_mid = dist(p, mid) - r;
        self.circles.iter().any(|&(c, cr)| {
            dist(c, p) + cr > r + 1.5
                && (dist(c, bb.nearest(c)) - cr < own + 4.0 || dist(c, mid) - cr < own_mid)
        })
    }

    fn leader_ok(&self, s: Seg) -> bool {
        self.boxes.iter().all(|b| !b.hits_seg(s))
    }

    /// How bad a leader from the point `own` (radius `r`) is: markers and lines it crosses.
    fn leader_cost(&self, s: Seg, own: Pt, r: f64) -> f64 {
        let mut cost = 0.0;
        for &(p, pr) in &self.circles {
            if dist(p, own) + pr <= r + 1.5 {
                continue; // one of the labelled markers
            }
            if seg_hits_circle(s, p, pr) {
                cost += 80.0;
            }
        }
        for t in &self.segs {
            if segs_cross(s, *t) {
                cost += 15.0;
            }
        }
        for t in &self.leaders {
            if segs_cross(s, *t) {
                cost += 80.0;
            }
        }
        cost
    }

    /// A box of size `w` x `h` on `side` of the point `p`.
    fn box_at(p: Pt, w: f64, h: f64, side: Side) -> (BBox, Anchor) {
        let (x0, y0, anchor) = match side {
            Side::E => (p.0, p.1 - h / 2.0, Anchor::Start),
            Side::W => (p.0 - w, p.1 - h / 2.0, Anchor::End),
            Side::N => (p.0 - w / 2.0, p.1 - h, Anchor::Middle),
            Side::S => (p.0 - w / 2.0, p.1, Anchor::Middle),
            Side::NE => (p.0, p.1 - h, Anchor::Start),
            Side::NW => (p.0 - w, p.1 - h, Anchor::End),
            Side::SE => (p.0, p.1, Anchor::Start),
            Side::SW => (p.0 - w, p.1, Anchor::End),
        };
        (
            BBox {
                x0,
                y0,
                x1: x0 + w,
                y1: y0 + h,
            },
            anchor,
        )
    }

    /// Places a label for the point (or group of points) at `p` whose markers lie within `r`
    /// of it: the cheapest free position beside it, else on rings further out with a leader,
    /// else anywhere in `bounds` with a leader. Records the label (and leader) as obstacles.
    /// If nothing is free (never seen in practice) the label goes to the right of the point.
    fn place(&mut self, p: Pt, r: f64, lines: &[String], f: Font, bounds: &BBox) -> Placement {
        let w = lines
            .iter()
            .map(|s| text_width(s, f.size, f.bold))
            .fold(0.0, f64::max)
            + 2.0 * PAD;
        let h = lines_height(lines.len(), f) + 2.0 * PAD;
        let mut best = None;
        type Best = Option<(f64, BBox, Anchor, Option<Seg>)>;
        let consider = |best: &mut Best,
                        cost: f64,
                        bb: BBox,
                        anchor: Anchor,
                        leader: Option<Seg>,
                        me: &Placer| {
            if best.as_ref().is_some_and(|b| b.0 <= cost) {
                return;
            }
            if !bounds.contains(&bb) || !me.box_free(&bb) {
                return;
            }
            if let Some(l) = leader {
                if !me.leader_ok(l) {
                    return;
                }
            }
            *best = Some((cost, bb, anchor, leader));
        };

        // Beside the point, in order of preference.
        let g = r + 2.0;
        let k = g * std::f64::consts::FRAC_1_SQRT_2;
        let beside = [
            ((p.0 + g, p.1), Side::E),
            ((p.0 - g, p.1), Side::W),
            ((p.0, p.1 - g), Side::N),
            ((p.0, p.1 + g), Side::S),
            ((p.0 + k, p.1 - k), Side::NE),
            ((p.0 - k, p.1 - k), Side::NW),
            ((p.0 + k, p.1 + k), Side::SE),
            ((p.0 - k, p.1 + k), Side::SW),
            ((p.0 + g, p.1 - h / 3.0), Side::E),
            ((p.0 + g, p.1 + h / 3.0), Side::E),
            ((p.0 - g, p.1 - h / 3.0), Side::W),
            ((p.0 - g, p.1 + h / 3.0), Side::W),
        ];
        for (i, &(q, side)) in beside.iter().enumerate() {
            let (bb, anchor) = Self::box_at(q, w, h, side);
            let cost = i as f64
                + if self.ambiguous(&bb, p, r) {
                    self.ambiguity
                } else {
                    0.0
                };
            consider(&mut best, cost, bb, anchor, None, self);
        }

        // Further out, with a leader.
        let leader_for = |bb: &BBox| -> Option<Seg> {
            let q = bb.nearest(p);
            let d = dist(p, q);
            if d <= r + 3.0 {
                return None;
            }
            let u = ((q.0 - p.0) / d, (q.1 - p.1) / d);
            let start = (p.0 + u.0 * (r + 1.0), p.1 + u.1 * (r + 1.0));
            Some(Seg { a: start, b: q })
        };
        if best.as_ref().is_none_or(|b| b.0 >= AMBIGUOUS) {
            for d in [
                12.0, 22.0, 34.0, 48.0, 64.0, 82.0, 104.0, 130.0, 160.0, 200.0,
            ] {
                for j in 0..24 {
                    let th = j as f64 * std::f64::consts::PI / 12.0;
                    let (cs, sn) = (th.cos(), th.sin());
                    let q = (p.0 + (r + d) * cs, p.1 + (r + d) * sn);
                    let side = if cs > 0.5 {
                        Side::E
                    } else if cs < -0.5 {
                        Side::W
                    } else if sn < 0.0 {
                        Side::N
                    } else {
                        Side::S
                    };
                    let (bb, anchor) = Self::box_at(q, w, h, side);
                    let leader = leader_for(&bb);
                    let cost = 20.0
                        + d
                        + leader.map_or(0.0, |l| self.leader_cost(l, p, r))
                        + j as f64 * 0.01;
                    consider(&mut best, cost, bb, anchor, leader, self);
                }
            }
        }

        // Anywhere.
        if best.is_none() {
            let mut y = bounds.y0;
            while y + h <= bounds.y1 {
                let mut x = bounds.x0;
                while x + w <= bounds.x1 {
                    let bb = BBox {
                        x0: x,
                        y0: y,
                        x1: x + w,
                        y1: y + h,
                    };
                    let anchor = if bb.x0 >= p.0 {
                        Anchor::Start
                    } else if bb.x1 <= p.0 {
                        Anchor::End
                    } else {
                        Anchor::Middle
                    };
                    let leader = leader_for(&bb);
                    let cost = 20.0
                        + dist(p, bb.nearest(p))
                        + leader.map_or(0.0, |l| self.leader_cost(l, p, r));
                    consider(&mut best, cost, bb, anchor, leader, self);
                    x += 6.0;
                }
                y += 6.0;
            }
        }

        let free = best.is_some();
        let (bb, anchor, leader) = match best {
            Some((_, bb, anchor, leader)) => (bb, anchor, leader),
            None => {
                let (bb, anchor) = Self::box_at((p.0 + g, p.1), w, h, Side::E);
                (bb, anchor, None)
            }
        };
        self.boxes.push(bb);
        if let Some(l) = leader {
            self.leaders.push(l);
        }
        let x = match anchor {
            Anchor::Start => bb.x0 + PAD,
            Anchor::End => bb.x1 - PAD,
            Anchor::Middle => (bb.x0 + bb.x1) / 2.0,
        };
        Placement {
            anchor,
            x,
            y: bb.y0 + PAD + ASCENT_EM * f.size,
            leader,
            free,
        }
    }

    /// The first of `candidates` (boxes with their anchors) that is free and inside its
    /// bounds; recorded as an obstacle.
    fn first_free(&mut self, candidates: &[(BBox, Anchor, BBox)]) -> Option<(BBox, Anchor)> {
        let found = candidates
            .iter()
            .find(|(bb, _, bounds)| bounds.contains(bb) && self.box_free(bb))
            .map(|&(bb, anchor, _)| (bb, anchor));
        if let Some((bb, _)) = found {
            self.boxes.push(bb);
        }
        found
    }
}

/// A box of a text run of `s` in font `f`, of which one point (per `anchor`: left, centre or
/// right) is at `x` and whose top is at `top`.
fn box_from_top(x: f64, top: f64, s: &str, f: Font, anchor: Anchor) -> BBox {
    let y = top + PAD + ASCENT_EM * f.size;
    text_box(x, y, s, f, anchor)
}

/// The text position (anchor point and baseline) of a padded box from [`box_from_top`] or
/// [`Placer::place`].
fn text_pos(bb: &BBox, f: Font, anchor: Anchor) -> Pt {
    let x = match anchor {
        Anchor::Start => bb.x0 + PAD,
        Anchor::End => bb.x1 - PAD,
        Anchor::Middle => (bb.x0 + bb.x1) / 2.0,
    };
    (x, bb.y0 + PAD + ASCENT_EM * f.size)
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

/// A logarithmic axis over `[10^llo, 10^lhi]`: `10^llo` maps to pixel `plo` and `10^lhi` to
/// `phi` (a reversed horizontal axis has `plo` on the right).
#[derive(Clone, Copy)]
struct LogAxis {
    llo: f64,
    lhi: f64,
    plo: f64,
    phi: f64,
}

impl LogAxis {
    /// Covers `[min, max]` (both >= 1) with some padding in log space, at least one decade.
    fn covering(min: f64, max: f64, plo: f64, phi: f64) -> LogAxis {
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
        LogAxis { llo, lhi, plo, phi }
    }

    fn map(&self, v: f64) -> f64 {
        let l = v.max(1e-9).log10();
        self.plo + (l - self.llo) / (self.lhi - self.llo) * (self.phi - self.plo)
    }

    /// (value, labelled?) tick positions. Labels go at the densest of the mantissa sets
    /// 1-2-3-5-7, 1-2-5 and 1 whose closest labels are at least `label_px` pixels apart;
    /// unlabelled minor grid lines at the other integer mantissas when there is room.
    fn ticks(&self, label_px: f64) -> Vec<(f64, bool)> {
        let per_decade = (self.phi - self.plo).abs() / (self.lhi - self.llo);
        let labelled: &[f64] = if per_decade * (10f64 / 7.0).log10() >= label_px {
            &[1.0, 2.0, 3.0, 5.0, 7.0]
        } else if per_decade * 2f64.log10() >= label_px {
            &[1.0, 2.0, 5.0]
        } else {
            &[1.0]
        };
        let minor = per_decade >= 100.0;
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
                if lab || minor {
                    out.push((v, lab));
                }
            }
        }
        out
    }
}

/// The largest of 1, 2, 5 times a power of ten that is at most `v` (> 0).
fn floor125(v: f64) -> f64 {
    let mag = 10f64.powf(v.log10().floor());
    [5.0, 2.0, 1.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|&x| x <= v * (1.0 + 1e-9))
        .unwrap_or(mag)
}

/// The smallest of 1, 2, 5 times a power of ten that is at least `v` (> 0).
fn ceil125(v: f64) -> f64 {
    let mag = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|&x| x >= v * (1.0 - 1e-9))
        .unwrap_or(10.0 * mag)
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
// Scatter charts (Figures 7 and 8).

struct Mark {
    label: String,
    key: String,
    delay_ms: f64,
    y: f64,
    paper: bool,
}

const PLOT_T: f64 = 58.0;
const PLOT_B: f64 = HEIGHT - 74.0;
/// Room right of the plot for the legend.
const LEGEND_W: f64 = 205.0;
const MARKER_R: f64 = 6.0;

/// Whether two values are equal to within rounding.
fn same(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

/// The text of the one label of a group of points whose markers overlap: one name per point,
/// `=` between points of equal values and `≈` between the others; a published point beside
/// ours of the same scheme adds nothing, and one beside other schemes of ours says "(paper)".
fn group_text(marks: &[Mark], members: &[usize]) -> String {
    let has_ours = members.iter().any(|&i| !marks[i].paper);
    let mut groups: Vec<(f64, f64, Vec<String>)> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for &i in members {
        let m = &marks[i];
        if m.paper
            && members
                .iter()
                .any(|&j| !marks[j].paper && marks[j].key == m.key)
        {
            continue;
        }
        let name = if m.paper && has_ours && !m.label.contains('(') {
            format!("{} (paper)", m.label)
        } else {
            m.label.clone()
        };
        if names.contains(&name) {
            continue;
        }
        names.push(name.clone());
        match groups
            .iter_mut()
            .find(|g| same(g.0, m.delay_ms.max(1.0)) && same(g.1, m.y))
        {
            Some(g) => g.2.push(name),
            None => groups.push((m.delay_ms.max(1.0), m.y, vec![name])),
        }
    }
    // "cubic TMobile = reno TMobile" says "cubic = reno TMobile".
    let last_word = |n: &str| n.rsplit_once(' ').map(|(_, w)| w.to_string());
    let common = last_word(&names[0]).filter(|w| {
        names.len() > 1
            && names
                .iter()
                .all(|n| !n.contains('(') && last_word(n).as_ref() == Some(w))
    });
    let short = |n: &String| match &common {
        Some(w) => n[..n.len() - w.len() - 1].to_string(),
        None => n.clone(),
    };
    let text = groups
        .iter()
        .map(|g| g.2.iter().map(short).collect::<Vec<_>>().join(" = "))
        .collect::<Vec<_>>()
        .join(" ≈ ");
    match common {
        Some(w) => format!("{text} {w}"),
        None => text,
    }
}

/// A group label as lines no wider than `max_w` where it can be broken (after a `=` or `≈`).
fn wrap_group_text(text: &str, f: Font, max_w: f64) -> Vec<String> {
    if text_width(text, f.size, f.bold) <= max_w {
        return vec![text.to_string()];
    }
    // Pieces that end with their separator.
    let mut pieces: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in text.split(' ') {
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
        if word == "=" || word == "≈" {
            pieces.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        pieces.push(cur);
    }
    let mut lines: Vec<String> = Vec::new();
    for piece in pieces {
        match lines.last_mut() {
            Some(last) if text_width(&format!("{last} {piece}"), f.size, f.bold) <= max_w => {
                last.push(' ');
                last.push_str(&piece);
            }
            _ => lines.push(piece),
        }
    }
    lines
}

fn scatter_chart(
    title: &str,
    x_title: &str,
    y_title: &str,
    marks: Vec<Mark>,
    mut y_axis: Linear,
    y_fmt: fn(f64) -> String,
) -> String {
    let mut svg = Svg::new(title);
    let marks: Vec<Mark> = marks
        .into_iter()
        .filter(|m| m.delay_ms.is_finite() && m.y.is_finite())
        .collect();
    let tick_font = Font::plain(12.0);

    // The plot's frame: room on the left for the widest y tick label and the axis title.
    let y_labels: Vec<(f64, String)> = y_axis.ticks().into_iter().map(|v| (v, y_fmt(v))).collect();
    let widest = y_labels
        .iter()
        .map(|(_, s)| text_width(s, tick_font.size, false))
        .fold(0.0, f64::max);
    let frame = BBox {
        x0: (widest + 40.0).max(84.0),
        y0: PLOT_T,
        x1: WIDTH - LEGEND_W,
        y1: PLOT_B,
    };
    y_axis.p0 = frame.y1;
    y_axis.p1 = frame.y0;

    // X axis: reversed log over the delays (clamped to >= 1 ms).
    let (mut dmin, mut dmax) = (f64::INFINITY, f64::NEG_INFINITY);
    for m in &marks {
        dmin = dmin.min(m.delay_ms.max(1.0));
        dmax = dmax.max(m.delay_ms.max(1.0));
    }
    if !dmin.is_finite() {
        (dmin, dmax) = (10.0, 1000.0);
    }
    let x_axis = LogAxis::covering(dmin, dmax, frame.x1, frame.x0);

    title_text(&mut svg, title);

    // Grid, ticks and tick labels (a label that would touch the previous one is left out).
    let mut kept: Vec<BBox> = Vec::new();
    for (v, lab) in x_axis.ticks(46.0) {
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
            x_tick(&mut svg, x, frame.y1, &fmt_num(v), tick_font, &mut kept);
        }
    }
    for (v, s) in &y_labels {
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
    svg.rect("frame", &frame, "none", AXIS, "");
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

    // Positions, colours and the markers' outer radii.
    let mut palette = Palette::new();
    let pos: Vec<Pt> = marks
        .iter()
        .map(|m| (x_axis.map(m.delay_ms.max(1.0)), y_axis.map(m.y)))
        .collect();
    let colour: Vec<&'static str> = marks.iter().map(|m| palette.color(&m.key)).collect();
    let stroke_w = |m: &Mark| if m.paper { 2.0 } else { 1.0 };
    let outer: Vec<f64> = marks.iter().map(|m| MARKER_R + stroke_w(m) / 2.0).collect();

    // Points whose markers overlap form one group with one label (union-find).
    let n = marks.len();
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for i in 0..n {
        for j in i + 1..n {
            let equal = same(marks[i].delay_ms.max(1.0), marks[j].delay_ms.max(1.0))
                && same(marks[i].y, marks[j].y);
            if equal || dist(pos[i], pos[j]) < outer[i] + outer[j] + 1.0 {
                let (a, b) = (root(&mut parent, i), root(&mut parent, j));
                parent[a.max(b)] = a.min(b);
            }
        }
    }
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut group_of = vec![0usize; n];
    for (i, slot) in group_of.iter_mut().enumerate() {
        let r = root(&mut parent, i);
        match (0..groups.len()).find(|&g| groups[g][0] == r) {
            Some(g) => {
                groups[g].push(i);
                *slot = g;
            }
            None => {
                *slot = groups.len();
                groups.push(vec![i]);
            }
        }
    }
    for g in &mut groups {
        g.sort_by_key(|&i| (marks[i].paper, i)); // ours first
    }

    let mut under = Svg { buf: String::new() };
    let mut over = Svg { buf: String::new() };
    let mut placer = Placer::default();

    // Faint connectors between a scheme's published point and ours.
    for i in (0..n).filter(|&i| !marks[i].paper) {
        for j in (0..n).filter(|&j| marks[j].paper && marks[j].key == marks[i].key) {
            let d = dist(pos[i], pos[j]);
            if group_of[i] == group_of[j] || d <= outer[i] + outer[j] + 2.0 {
                continue;
            }
            let u = ((pos[j].0 - pos[i].0) / d, (pos[j].1 - pos[i].1) / d);
            let a = (pos[i].0 + u.0 * outer[i], pos[i].1 + u.1 * outer[i]);
            let b = (pos[j].0 - u.0 * outer[j], pos[j].1 - u.1 * outer[j]);
            under.line("connector", a, b, colour[i], 1.0, "3 3", "");
            placer.segs.push(Seg { a, b });
        }
    }

    // Markers: published hollow (drawn first), ours filled on top.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| !marks[i].paper);
    let mut markers = Svg { buf: String::new() };
    for &i in &order {
        let m = &marks[i];
        let (fill, stroke) = if m.paper {
            ("white", colour[i])
        } else {
            (colour[i], "#222222")
        };
        markers.circle(
            "point",
            pos[i],
            MARKER_R,
            fill,
            stroke,
            stroke_w(m),
            &format!(
                r#"id="p{i}" data-label="{}" data-delay-ms="{}" data-y="{}" data-paper="{}""#,
                esc(&m.label),
                m.delay_ms,
                m.y,
                m.paper
            ),
        );
        placer.circles.push((pos[i], outer[i] + 1.0));
    }

    // One label per group: groups with our points first, crowded ones before lonely ones.
    let centre: Vec<(Pt, f64)> = groups
        .iter()
        .map(|g| {
            let k = g.len() as f64;
            let c = (
                g.iter().map(|&i| pos[i].0).sum::<f64>() / k,
                g.iter().map(|&i| pos[i].1).sum::<f64>() / k,
            );
            let r = g
                .iter()
                .map(|&i| dist(c, pos[i]) + outer[i])
                .fold(0.0, f64::max);
            (c, r)
        })
        .collect();
    let crowd = |g: usize| {
        centre
            .iter()
            .enumerate()
            .filter(|&(h, (c, _))| h != g && dist(*c, centre[g].0) < 90.0)
            .count()
    };
    let mut label_order: Vec<usize> = (0..groups.len()).collect();
    label_order.sort_by_key(|&g| {
        (
            groups[g].iter().all(|&i| marks[i].paper),
            std::cmp::Reverse(crowd(g)),
            g,
        )
    });
    // Greedy placement in that order; if a label finds no free position, the placement is
    // redone with the labels that failed placed first (a few times at most).
    let bounds = frame.inflate(-2.0);
    let mut texts: Vec<(Vec<String>, Font, &'static str)> = groups
        .iter()
        .map(|members| {
            let ours = members.iter().any(|&i| !marks[i].paper);
            let font = if ours {
                Font::bold(12.0)
            } else {
                Font {
                    size: 11.0,
                    bold: false,
                    italic: true,
                }
            };
            let col = if members.iter().all(|&i| colour[i] == colour[members[0]]) {
                colour[members[0]]
            } else {
                TEXT
            };
            (
                wrap_group_text(&group_text(&marks, members), font, 240.0),
                font,
                col,
            )
        })
        .collect();
    type Placed = Vec<(usize, Placement, Vec<String>, Font)>;
    let mut best: Option<(usize, Placed)> = None;
    for attempt in 0..12 {
        let mut pl = placer.clone();
        // Crowded charts: after four tries, a label may sit beside a point also near another.
        pl.ambiguity = if attempt < 4 { AMBIGUOUS } else { 0.0 };
        let mut placed = Vec::new();
        let mut failed = Vec::new();
        for &g in &label_order {
            let (c, r) = centre[g];
            let p = pl.place(c, r, &texts[g].0, texts[g].1, &bounds);
            if !p.free {
                failed.push(g);
            }
            placed.push((g, p, texts[g].0.clone(), texts[g].1));
        }
        let n_failed = failed.len();
        if best.as_ref().is_none_or(|b| n_failed < b.0) {
            best = Some((n_failed, placed));
        }
        if n_failed == 0 {
            break;
        }
        // Then smaller type, in narrower lines, for the labels that found no room.
        if attempt >= 6 {
            for &g in &failed {
                let f = &mut texts[g].1;
                f.size = (f.size - 1.0).max(8.0);
                let text = group_text(&marks, &groups[g]);
                texts[g].0 = wrap_group_text(&text, texts[g].1, 160.0);
            }
        }
        label_order.retain(|g| !failed.contains(g));
        failed.extend(label_order);
        label_order = failed;
    }
    for (g, p, lines, font) in best.map(|b| b.1).unwrap_or_default() {
        let (lines, font, col) = (&lines, &font, texts[g].2);
        if let Some(l) = p.leader {
            under.line(
                "leader",
                l.a,
                l.b,
                col,
                1.0,
                "",
                &format!(r#"data-for="l{g}""#),
            );
        }
        let ids: Vec<String> = groups[g].iter().map(|i| format!("p{i}")).collect();
        over.text_lines(
            p.x,
            p.y,
            lines,
            *font,
            p.anchor,
            col,
            &format!(
                r#"class="point-label" id="l{g}" data-points="{}" {HALO}"#,
                ids.join(" ")
            ),
        );
    }
    svg.buf.push_str(&under.buf);
    svg.buf.push_str(&markers.buf);
    svg.buf.push_str(&over.buf);

    // Legend (outside the plot, on the right).
    let mut entries: Vec<(String, &'static str)> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, m) in marks.iter().enumerate() {
        if seen.contains(&m.key.as_str()) {
            continue;
        }
        seen.push(&m.key);
        // Prefer our label's spelling for the legend.
        let name = marks
            .iter()
            .find(|o| o.key == m.key && !o.paper)
            .map_or(&m.label, |o| &o.label);
        entries.push((name.clone(), colour[i]));
    }
    let has_ours = marks.iter().any(|m| !m.paper);
    let has_paper = marks.iter().any(|m| m.paper);
    let rows = entries.len() + usize::from(has_ours) + usize::from(has_paper);
    let lx = frame.x1 + 18.0;
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
    let text_room = WIDTH - 6.0 - (lx + 18.0);
    let mut ly = top;
    svg.text(lx, ly, "Scheme", Font::bold(12.0), Anchor::Start, TEXT, "");
    ly += 20.0;
    let swatch_r = (entry_size / 2.0 - 1.0).min(5.0);
    let swatch = |svg: &mut Svg, ly: f64, fill: &str, stroke: &str, sw: f64| {
        svg.circle(
            "legend-marker",
            (lx + 6.0, ly - entry_size * 0.35),
            swatch_r,
            fill,
            stroke,
            sw,
            "",
        );
    };
    for (name, col) in &entries {
        swatch(&mut svg, ly, col, "none", 0.0);
        let f = Font::plain(fit_size(name, text_room, entry_size, 6.0, false));
        svg.text(lx + 18.0, ly, name, f, Anchor::Start, TEXT, "");
        ly += step;
    }
    ly += 10.0;
    if has_ours {
        swatch(&mut svg, ly, "#555555", "#222222", 1.0);
        let f = Font::plain(entry_size);
        svg.text(lx + 18.0, ly, "this run", f, Anchor::Start, TEXT, "");
        ly += step;
    }
    if has_paper {
        swatch(&mut svg, ly, "white", "#555555", 2.0);
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
        ly += step;
    }
    // "Better" arrow.
    if show_arrow {
        ly += 16.0;
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

    svg.finish()
}

/// A Figure-7-style chart (SVG text): x = 95th-percentile self-inflicted delay in ms on a
/// reversed logarithmic axis (large delays on the left), y = throughput in kbit/s from 0.
/// Our points are filled, the paper's hollow, in one colour per scheme (matched by label,
/// ignoring case and any parenthesized suffix); each is labelled with its scheme name, and
/// points whose markers overlap share one label. Delays below 1 ms are drawn at 1 ms; points
/// with non-finite values are skipped.
pub fn throughput_delay_chart(title: &str, points: &[ChartPoint]) -> String {
    delay_scatter(
        title,
        "95th-percentile self-inflicted delay (ms)",
        "Throughput (kbit/s)",
        points,
    )
}

/// [`throughput_delay_chart`] for points that are means over several runs or links (each a
/// mean throughput and a mean of the runs' 95th-percentile self-inflicted delays), with axis
/// titles that say so.
pub fn mean_throughput_delay_chart(title: &str, points: &[ChartPoint]) -> String {
    delay_scatter(
        title,
        "Mean 95th-percentile self-inflicted delay (ms)",
        "Mean throughput (kbit/s)",
        points,
    )
}

fn delay_scatter(title: &str, x_title: &str, y_title: &str, points: &[ChartPoint]) -> String {
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
    scatter_chart(title, x_title, y_title, marks, y_axis, fmt_num)
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

/// Polyline of a step function through `(t0, t1, value)` segments, mapped by `fx`, `fy`.
fn step_points(
    segs: &[(f64, f64, f64)],
    fx: impl Fn(f64) -> f64,
    fy: impl Fn(f64) -> f64,
) -> Vec<Pt> {
    let mut pts = Vec::with_capacity(2 * segs.len());
    for &(t0, t1, v) in segs {
        let y = fy(v);
        pts.push((fx(t0), y));
        pts.push((fx(t1), y));
    }
    pts
}

/// A duration for a caption: "500 ms", "1 s", "2.5 s".
fn fmt_duration(s: f64) -> String {
    if s < 1.0 {
        format!("{} ms", fmt_num((s * 1000.0 * 1000.0).round() / 1000.0))
    } else {
        format!("{} s", fmt_num((s * 1000.0).round() / 1000.0))
    }
}

/// A legend swatch of the time series.
enum Swatch {
    Area(&'static str),
    Line(&'static str, &'static str),
}

/// A Figure-1-style time series (SVG text); see [`time_series_chart_measured`]. Nothing is
/// shaded as unmeasured.
pub fn time_series_chart(title: &str, points: &[TimeSeriesPoint]) -> String {
    time_series_chart_measured(title, points, 0.0)
}

/// A Figure-1-style time series (SVG text). Top panel: the trace's capacity (grey, filled)
/// and the delivered throughput (blue line), kbit/s, against time in seconds. Bottom panel:
/// the per-bin maximum of the all-packet delay function (red), ms, on a logarithmic axis
/// from a round value below the typical delays to one above the highest, with a dotted 100 ms
/// target line and the highest value marked and written; the data-only delay is added
/// (orange, dashed) where it differs. Points are the bins of
/// [`sprout_sim::metrics::time_series`], drawn as steps over each bin, and a caption states the bin
/// length. The time before `measured_from_s` (the start-up the metrics skip) is shaded in
/// both panels and labelled "not measured"; 0 shades nothing.
pub fn time_series_chart_measured(
    title: &str,
    points: &[TimeSeriesPoint],
    measured_from_s: f64,
) -> String {
    const CAP: &str = "#9a9a9a";
    const TPUT: &str = "#1f5fb4";
    const DELAY: &str = "#c62828";
    const DDATA: &str = "#ef8a00";
    const TARGET: &str = "#444444";
    let tick_font = Font::plain(12.0);
    let small = Font::plain(11.0);

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
    let has_data_delay = pts
        .iter()
        .any(|p| p.delay_data_ms.is_finite() && (p.delay_data_ms - p.delay_ms).abs() > 1e-9);
    let shade_to = measured_from_s.min(t1);
    let shaded = measured_from_s.is_finite() && shade_to > t0;

    let mut svg = Svg::new(title);
    title_text(&mut svg, title);

    // Delay axis: logarithmic, from a round value below the typical delays (the 2nd
    // percentile, and at most 50 ms so that the 100 ms target shows) to one above the highest.
    let shown = |p: &TimeSeriesPoint| {
        if has_data_delay && p.delay_data_ms.is_finite() {
            p.delay_ms.max(p.delay_data_ms)
        } else {
            p.delay_ms
        }
    };
    let mut delays: Vec<f64> = pts
        .iter()
        .map(|p| p.delay_ms)
        .filter(|&d| d > 0.0)
        .collect();
    delays.sort_by(f64::total_cmp);
    let typical_low = delays
        .get(delays.len() / 50)
        .copied()
        .unwrap_or(10.0)
        .clamp(1.0, 50.0);
    let delay_max = pts.iter().map(|p| shown(p)).fold(200.0, f64::max);
    let (delay_lo, delay_hi) = (floor125(typical_low), ceil125(delay_max));

    // Left margin: room for the widest tick label and the axis title.
    let rate_max = pts
        .iter()
        .map(|p| p.capacity_kbps.max(p.throughput_kbps))
        .fold(0.0, f64::max);
    let mut ya = Linear::nice(0.0, rate_max.max(1.0), 5.0, 0.0, 1.0);
    let rate_labels: Vec<String> = ya.ticks().into_iter().map(fmt_num).collect();
    let widest = rate_labels
        .iter()
        .map(|s| text_width(s, tick_font.size, false))
        .fold(text_width("10,000", tick_font.size, false), f64::max)
        .max(text_width(&fmt_num(delay_hi), tick_font.size, false));
    let l = (widest + 40.0).max(84.0);
    let r = WIDTH - 30.0;

    // Legend rows, flowing to a second row if need be.
    let mut items: Vec<(Swatch, &str)> = vec![
        (Swatch::Area(CAP), "capacity"),
        (Swatch::Line(TPUT, ""), "throughput"),
        (Swatch::Line(DELAY, ""), "delay (max per bin)"),
    ];
    if has_data_delay {
        items.push((Swatch::Line(DDATA, "5 3"), "delay, data only"));
    }
    items.push((Swatch::Line(TARGET, "2 3"), "100 ms target"));
    let legend_font = Font::plain(12.0);
    let (mut lx, mut ly) = (l, 56.0);
    for (sw, text) in &items {
        let w = 28.0 + text_width(text, legend_font.size, false);
        if lx > l && lx + w > r {
            lx = l;
            ly += 19.0;
        }
        match sw {
            Swatch::Area(col) => svg.rect(
                "marker",
                &BBox {
                    x0: lx,
                    y0: ly - 10.0,
                    x1: lx + 22.0,
                    y1: ly + 1.0,
                },
                col,
                "none",
                r#"fill-opacity="0.55""#,
            ),
            Swatch::Line(col, dash) => svg.line(
                "marker",
                (lx, ly - 4.0),
                (lx + 22.0, ly - 4.0),
                col,
                2.0,
                dash,
                "",
            ),
        }
        svg.text(lx + 28.0, ly, text, legend_font, Anchor::Start, TEXT, "");
        lx += w + 16.0;
    }

    // Panels.
    let t1_top = ly + 16.0;
    let b2 = HEIGHT - 66.0;
    let gap = 30.0;
    let panel_h = (b2 - t1_top - gap) / 2.0;
    let top = BBox {
        x0: l,
        y0: t1_top,
        x1: r,
        y1: t1_top + panel_h,
    };
    let bottom = BBox {
        x0: l,
        y0: top.y1 + gap,
        x1: r,
        y1: b2,
    };
    ya.p0 = top.y1;
    ya.p1 = top.y0;
    let fx = |t: f64| l + (t - t0) / (t1 - t0) * (r - l);

    let yd = LogAxis {
        llo: delay_lo.log10(),
        lhi: delay_hi.log10(),
        plo: bottom.y1,
        phi: bottom.y0,
    };
    let fyd = |v: f64| yd.map(v.max(10f64.powf(yd.llo)));

    // Grids and tick labels.
    let mut ticks_a: Vec<(f64, String, bool)> = ya
        .ticks()
        .into_iter()
        .map(|v| (ya.map(v), fmt_num(v), true))
        .collect();
    for (v, lab) in yd.ticks(18.0) {
        ticks_a.push((yd.map(v), fmt_num(v), lab));
    }
    let mut kept: Vec<BBox> = Vec::new();
    for (y, s, lab) in &ticks_a {
        svg.line(
            "grid",
            (l, *y),
            (r, *y),
            GRID,
            if *lab { 1.0 } else { 0.6 },
            if *lab { "" } else { "2 3" },
            "",
        );
        if *lab {
            svg.line("tick", (l - 5.0, *y), (l, *y), AXIS, 1.0, "", "");
            let bb = text_box(l - 8.0, y + 4.0, s, tick_font, Anchor::End);
            if !kept.iter().any(|k| k.intersects(&bb)) {
                svg.text(
                    l - 8.0,
                    y + 4.0,
                    s,
                    tick_font,
                    Anchor::End,
                    TEXT,
                    r#"class="tick-label""#,
                );
                kept.push(bb.inflate(1.0));
            }
        }
    }
    let tick_axis = Linear::nice(0.0, t1 - t0, 8.0, 0.0, 1.0);
    let time_ticks: Vec<f64> = tick_axis
        .ticks()
        .into_iter()
        .filter(|&v| v <= t1 - t0 + 1e-9)
        .collect();
    let mut placer = Placer::default();
    for &v in &time_ticks {
        let x = fx(t0 + v);
        for panel in [&top, &bottom] {
            svg.line("grid", (x, panel.y0), (x, panel.y1), GRID, 1.0, "", "");
        }
        let under_top = Seg {
            a: (x, top.y1),
            b: (x, top.y1 + 4.0),
        };
        svg.line("tick", under_top.a, under_top.b, AXIS, 1.0, "", "");
        placer.segs.push(under_top);
        x_tick(
            &mut svg,
            x,
            bottom.y1,
            &fmt_num(t0 + v),
            tick_font,
            &mut kept,
        );
    }

    // The unmeasured start, shaded in both panels.
    if shaded {
        for panel in [&top, &bottom] {
            svg.rect(
                "shade",
                &BBox {
                    x0: fx(t0),
                    x1: fx(shade_to),
                    ..*panel
                },
                "#000000",
                "none",
                r#"fill-opacity="0.07""#,
            );
        }
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
        let mut outline = vec![(fx(cap[0].0), top.y1)];
        outline.extend(step_points(&cap, fx, |v| ya.map(v)));
        outline.push((fx(cap[cap.len() - 1].1), top.y1));
        outline.push(outline[0]);
        svg.path(
            &polyline_d(&outline),
            "none",
            0.0,
            CAP,
            r#"fill-opacity="0.55" class="capacity""#,
        );
        placer.segs.extend(polyline_segs(&outline));
        let line = step_points(&tput, fx, |v| ya.map(v));
        svg.path(
            &polyline_d(&line),
            TPUT,
            1.6,
            "none",
            r#"class="throughput""#,
        );
        placer.segs.extend(polyline_segs(&line));
    }
    svg.rect("frame", &top, "none", AXIS, "");
    placer.segs.extend(edges(&top));

    // Bottom panel: delay.
    let target = yd.map(100.0);
    let target_seg = Seg {
        a: (l, target),
        b: (r, target),
    };
    svg.line(
        "reference",
        target_seg.a,
        target_seg.b,
        TARGET,
        1.2,
        "2 3",
        "",
    );
    placer.segs.push(target_seg);
    if has_data_delay {
        let dd: Vec<(f64, f64, f64)> = pts
            .iter()
            .filter(|p| p.delay_data_ms.is_finite())
            .map(|p| (p.t_s, bin_end(p), p.delay_data_ms))
            .collect();
        if !dd.is_empty() {
            let line = step_points(&dd, fx, fyd);
            svg.path(
                &polyline_d(&line),
                DDATA,
                1.4,
                "none",
                r#"stroke-dasharray="5 3" class="delay-data""#,
            );
            placer.segs.extend(polyline_segs(&line));
        }
    }
    let dl: Vec<(f64, f64, f64)> = pts
        .iter()
        .map(|p| (p.t_s, bin_end(p), p.delay_ms))
        .collect();
    if !dl.is_empty() {
        let line = step_points(&dl, fx, fyd);
        svg.path(&polyline_d(&line), DELAY, 1.6, "none", r#"class="delay""#);
        placer.segs.extend(polyline_segs(&line));
    }
    svg.rect("frame", &bottom, "none", AXIS, "");
    placer.segs.extend(edges(&bottom));

    // The highest delay, marked and written.
    let peak = pts
        .iter()
        .map(|p| (p, shown(p)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let peak_mark = peak.map(|(p, v)| ((fx(p.t_s) + fx(bin_end(p))) / 2.0, fyd(v), v, p));
    if let Some((x, y, _, _)) = peak_mark {
        svg.circle(
            "marker",
            (x, y),
            3.5,
            "white",
            DELAY,
            1.5,
            r#"data-role="peak""#,
        );
        placer.circles.push(((x, y), 5.5));
    }

    // The gap between the two panels, where a small label that fits nowhere else goes, and
    // the top at which a small label sits centred in it.
    let between = BBox {
        x0: 0.0,
        y0: top.y1 + 4.5,
        x1: WIDTH,
        y1: bottom.y0 - 0.5,
    };
    let h = (ASCENT_EM + DESCENT_EM) * small.size + 2.0 * PAD;
    let mid_gap = (between.y0 + between.y1 - h) / 2.0;

    // "Not measured" on the shaded start: inside a panel where it is clear of the lines,
    // else between the panels.
    if shaded {
        let text = format!("not measured (first {})", fmt_duration(shade_to - t0));
        let (sx0, sx1) = (fx(t0), fx(shade_to));
        let sxm = (sx0 + sx1) / 2.0;
        let inside = |p: &BBox| p.inflate(-2.0);
        let mut cands: Vec<(BBox, Anchor, BBox)> = Vec::new();
        for panel in [&top, &bottom] {
            for (x, anchor) in [(sx0 + 4.0, Anchor::Start), (sxm, Anchor::Middle)] {
                for y_top in [panel.y0 + 4.0, panel.y1 - 4.0 - h] {
                    cands.push((
                        box_from_top(x, y_top, &text, small, anchor),
                        anchor,
                        inside(panel),
                    ));
                }
            }
        }
        for (x, anchor) in [(sxm, Anchor::Middle), (sx0, Anchor::Start)] {
            cands.push((
                box_from_top(x, mid_gap, &text, small, anchor),
                anchor,
                between,
            ));
        }
        let (bb, anchor) = placer.first_free(&cands).unwrap_or_else(|| {
            let (bb, anchor, _) = cands[cands.len() - 1];
            placer.boxes.push(bb);
            (bb, anchor)
        });
        let (x, y) = text_pos(&bb, small, anchor);
        svg.text(
            x,
            y,
            &text,
            small,
            anchor,
            MUTED,
            &format!(r#"class="shade-label" {HALO}"#),
        );
    }
    let mut peak_in_caption: Option<String> = None;
    if let Some((x, y, v, p)) = peak_mark {
        let which = if has_data_delay && p.delay_data_ms > p.delay_ms {
            ", data packets"
        } else {
            ""
        };
        let text = format!(
            "highest: {} ms at {} s{which}",
            fmt_num(v.round()),
            fmt_num((p.t_s * 10.0).round() / 10.0)
        );
        // Beside the peak in the delay panel; else between the panels; else in the caption.
        let before = placer.clone();
        let pl = placer.place(
            (x, y),
            5.5,
            std::slice::from_ref(&text),
            small,
            &bottom.inflate(-2.0),
        );
        if pl.free {
            if let Some(ld) = pl.leader {
                svg.line(
                    "leader",
                    ld.a,
                    ld.b,
                    DELAY,
                    1.0,
                    "",
                    r#"data-for="peak-label""#,
                );
            }
            svg.text(
                pl.x,
                pl.y,
                &text,
                small,
                pl.anchor,
                DELAY,
                &format!(r#"class="peak-label" id="peak-label" {HALO}"#),
            );
        } else {
            placer = before;
            let cands: Vec<(BBox, Anchor, BBox)> = [(r, Anchor::End), (l, Anchor::Start)]
                .into_iter()
                .map(|(x, anchor)| {
                    (
                        box_from_top(x, mid_gap, &text, small, anchor),
                        anchor,
                        between,
                    )
                })
                .collect();
            match placer.first_free(&cands) {
                Some((bb, anchor)) => {
                    let (tx, ty) = text_pos(&bb, small, anchor);
                    svg.text(
                        tx,
                        ty,
                        &text,
                        small,
                        anchor,
                        DELAY,
                        &format!(r#"class="peak-label" id="peak-label" {HALO}"#),
                    );
                }
                None => peak_in_caption = Some(text),
            }
        }
    }

    // Axis titles and caption.
    let title_font = Font::plain(13.0);
    svg.vtext(
        22.0,
        (top.y0 + top.y1) / 2.0,
        "Throughput (kbit/s)",
        Font::plain(fit_size("Throughput (kbit/s)", panel_h, 13.0, 9.0, false)),
    );
    let dt = "Delay (ms, log scale)";
    svg.vtext(
        22.0,
        (bottom.y0 + bottom.y1) / 2.0,
        dt,
        Font::plain(fit_size(dt, panel_h, 13.0, 9.0, false)),
    );
    svg.text(
        (l + r) / 2.0,
        bottom.y1 + 38.0,
        "Time (s)",
        title_font,
        Anchor::Middle,
        TEXT,
        "",
    );
    let bin = pts
        .first()
        .map(|p| p.bin_s)
        .filter(|&b| b > 0.0)
        .map(fmt_duration);
    if let Some(bin) = bin {
        let mut caption =
            format!("Throughput and capacity in {bin} bins; delay is the maximum in each bin.");
        if let Some(peak) = &peak_in_caption {
            caption.push_str(&format!(" Circled, the {peak}."));
        }
        svg.text(
            (l + r) / 2.0,
            bottom.y1 + 56.0,
            &caption,
            Font::plain(fit_size(&caption, r - l, 11.0, 8.0, false)),
            Anchor::Middle,
            MUTED,
            r#"class="caption""#,
        );
    }

    svg.finish()
}

// ---------------------------------------------------------------------------------------
// Delay over time of several runs (the tunnel experiment).

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
    const COLOURS: [&str; 6] = [
        "#c62828", "#1f5fb4", "#2e7d32", "#ef8a00", "#6a1b9a", "#555555",
    ];
    let tick_font = Font::plain(12.0);
    let bin_s = if bin_s.is_finite() && bin_s > 0.0 {
        bin_s
    } else {
        1.0
    };
    let panels: Vec<DelayPanel> = panels
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
        .collect();
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

    let mut svg = Svg::new(title);
    title_text(&mut svg, title);

    // Colours by label, in order of first appearance.
    let mut labels: Vec<String> = Vec::new();
    for s in panels.iter().flat_map(|p| p.series.iter()) {
        if !labels.contains(&s.label) {
            labels.push(s.label.clone());
        }
    }
    let colour = |label: &str| {
        let k = labels.iter().position(|l| l == label).unwrap_or(0);
        COLOURS[k % COLOURS.len()]
    };

    // Left margin: the widest delay tick label, and the axis title.
    let l = (text_width(&fmt_num(delay_hi), tick_font.size, false) + 40.0).max(84.0);
    let r = WIDTH - 30.0;

    // Legend rows, flowing to more rows if need be.
    let legend_font = Font::plain(12.0);
    let (mut lx, mut ly) = (l, 56.0);
    let mut legend_items: Vec<(String, &str, bool)> = labels
        .iter()
        .map(|s| (s.clone(), colour(s), false))
        .collect();
    let shaded = measured_from_s.is_finite() && measured_from_s.min(t1) > t0;
    if shaded {
        legend_items.push((
            format!("not measured (first {})", fmt_duration(measured_from_s)),
            "#000000",
            true,
        ));
    }
    for (text, col, shade) in &legend_items {
        let w = 28.0 + text_width(text, legend_font.size, false);
        if lx > l && lx + w > r {
            lx = l;
            ly += 19.0;
        }
        if *shade {
            svg.rect(
                "marker",
                &BBox {
                    x0: lx,
                    y0: ly - 10.0,
                    x1: lx + 22.0,
                    y1: ly + 1.0,
                },
                col,
                "none",
                r#"fill-opacity="0.07""#,
            );
        } else {
            svg.line(
                "marker",
                (lx, ly - 4.0),
                (lx + 22.0, ly - 4.0),
                col,
                2.0,
                "",
                "",
            );
        }
        svg.text(lx + 28.0, ly, text, legend_font, Anchor::Start, TEXT, "");
        lx += w + 16.0;
    }

    // Panels, stacked.
    let n = panels.len().max(1);
    let first_top = ly + 16.0;
    let bottom_y = HEIGHT - 66.0;
    let gap = 24.0;
    let panel_h = (bottom_y - first_top - gap * (n - 1) as f64) / n as f64;
    let frames: Vec<BBox> = (0..n)
        .map(|k| {
            let y0 = first_top + k as f64 * (panel_h + gap);
            BBox {
                x0: l,
                y0,
                x1: r,
                y1: y0 + panel_h,
            }
        })
        .collect();
    let fx = |t: f64| l + (t - t0) / (t1 - t0) * (r - l);
    let time_axis = Linear::nice(0.0, t1 - t0, 8.0, 0.0, 1.0);
    let time_ticks: Vec<f64> = time_axis
        .ticks()
        .into_iter()
        .filter(|&v| v <= t1 - t0 + 1e-9)
        .collect();
    let mut kept: Vec<BBox> = Vec::new();
    for (k, frame) in frames.iter().enumerate() {
        let axis = LogAxis {
            llo: delay_lo.log10(),
            lhi: delay_hi.log10(),
            plo: frame.y1,
            phi: frame.y0,
        };
        let fy = |v: f64| axis.map(v.clamp(delay_lo, delay_hi));
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
                let s = fmt_num(v);
                let bb = text_box(l - 8.0, y + 4.0, &s, tick_font, Anchor::End);
                if !kept.iter().any(|b| b.intersects(&bb)) {
                    svg.text(
                        l - 8.0,
                        y + 4.0,
                        &s,
                        tick_font,
                        Anchor::End,
                        TEXT,
                        r#"class="tick-label""#,
                    );
                    kept.push(bb.inflate(1.0));
                }
            }
        }
        for &v in &time_ticks {
            let x = fx(t0 + v);
            svg.line("grid", (x, frame.y0), (x, frame.y1), GRID, 1.0, "", "");
            if k + 1 == frames.len() {
                x_tick(
                    &mut svg,
                    x,
                    frame.y1,
                    &fmt_num(t0 + v),
                    tick_font,
                    &mut kept,
                );
            } else {
                svg.line(
                    "tick",
                    (x, frame.y1),
                    (x, frame.y1 + 4.0),
                    AXIS,
                    1.0,
                    "",
                    "",
                );
            }
        }
        if shaded {
            svg.rect(
                "shade",
                &BBox {
                    x0: fx(t0),
                    x1: fx(measured_from_s.min(t1)),
                    ..*frame
                },
                "#000000",
                "none",
                r#"fill-opacity="0.07""#,
            );
        }
        if let Some(panel) = panels.get(k) {
            for s in &panel.series {
                // Runs of consecutive bins, each drawn as one step line.
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
                    let pts = step_points(&run, fx, fy);
                    svg.path(
                        &polyline_d(&pts),
                        colour(&s.label),
                        1.5,
                        "none",
                        r#"class="delay""#,
                    );
                }
            }
            let title_size = fit_size(&panel.axis_title, panel_h, 13.0, 8.0, false);
            svg.vtext(
                22.0,
                (frame.y0 + frame.y1) / 2.0,
                &panel.axis_title,
                Font::plain(title_size),
            );
        }
        svg.rect("frame", frame, "none", AXIS, "");
    }
    let last = frames[frames.len() - 1];
    svg.text(
        (l + r) / 2.0,
        last.y1 + 38.0,
        "Time (s)",
        Font::plain(13.0),
        Anchor::Middle,
        TEXT,
        "",
    );
    if !caption.is_empty() {
        svg.text(
            WIDTH / 2.0,
            last.y1 + 56.0,
            caption,
            Font::plain(fit_size(caption, WIDTH - 20.0, 11.0, 7.0, false)),
            Anchor::Middle,
            MUTED,
            r#"class="caption""#,
        );
    }
    svg.finish()
}

// ---------------------------------------------------------------------------------------
// Rate over time of link traces (`sprout traces plot`).

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
    const COLOURS: [&str; 8] = [
        "#1f5fb4", "#c62828", "#2e7d32", "#ef8a00", "#6a1b9a", "#555555", "#00838f", "#8d6e63",
    ];
    let tick_font = Font::plain(12.0);
    let bin_s = if bin_s.is_finite() && bin_s > 0.0 {
        bin_s
    } else {
        1.0
    };
    let clean = |v: f64| if v.is_finite() && v > 0.0 { v } else { 0.0 };
    let bins = panels
        .iter()
        .flat_map(|p| p.series.iter())
        .map(|s| s.values.len())
        .max()
        .unwrap_or(0);
    let t1 = (bins as f64 * bin_s).max(bin_s);

    let mut svg = Svg::new(title);
    title_text(&mut svg, title);

    // Colours by label, in order of first appearance.
    let mut labels: Vec<String> = Vec::new();
    for s in panels.iter().flat_map(|p| p.series.iter()) {
        if !labels.contains(&s.label) {
            labels.push(s.label.clone());
        }
    }
    let colour = |label: &str| {
        let k = labels.iter().position(|l| l == label).unwrap_or(0);
        COLOURS[k % COLOURS.len()]
    };

    // Axes per panel, and the left margin: room for the widest tick label and the axis title.
    let axes: Vec<Linear> = panels
        .iter()
        .map(|p| {
            let max = p
                .series
                .iter()
                .flat_map(|s| s.values.iter())
                .map(|&v| clean(v))
                .fold(0.0, f64::max);
            Linear::nice(0.0, if max > 0.0 { max } else { 1.0 }, 4.0, 0.0, 1.0)
        })
        .collect();
    let widest = axes
        .iter()
        .flat_map(|a| a.ticks())
        .map(|v| text_width(&fmt_num(v), tick_font.size, false))
        .fold(text_width("100", tick_font.size, false), f64::max);
    let l = (widest + 40.0).max(84.0);
    let r = WIDTH - 30.0;

    // Legend rows, flowing to more rows if need be.
    let legend_font = Font::plain(12.0);
    let (mut lx, mut ly) = (l, 56.0);
    for label in &labels {
        let text = fit_legend(label, r - l - 28.0, legend_font);
        let w = 28.0 + text_width(&text, legend_font.size, false);
        if lx > l && lx + w > r {
            lx = l;
            ly += 19.0;
        }
        svg.rect(
            "marker",
            &BBox {
                x0: lx,
                y0: ly - 10.0,
                x1: lx + 22.0,
                y1: ly + 1.0,
            },
            colour(label),
            "none",
            r#"fill-opacity="0.6""#,
        );
        svg.text(lx + 28.0, ly, &text, legend_font, Anchor::Start, TEXT, "");
        lx += w + 16.0;
    }

    // Panels, stacked.
    let n = panels.len().max(1);
    let first_top = ly + 16.0;
    let bottom_y = HEIGHT - 66.0;
    let gap = 24.0;
    let panel_h = ((bottom_y - first_top - gap * (n - 1) as f64) / n as f64).max(10.0);
    let frames: Vec<BBox> = (0..n)
        .map(|k| {
            let y0 = first_top + k as f64 * (panel_h + gap);
            BBox {
                x0: l,
                y0,
                x1: r,
                y1: y0 + panel_h,
            }
        })
        .collect();
    let fx = |t: f64| l + t / t1 * (r - l);
    let time_axis = Linear::nice(0.0, t1, 8.0, 0.0, 1.0);
    let time_ticks: Vec<f64> = time_axis
        .ticks()
        .into_iter()
        .filter(|&v| v <= t1 + 1e-9)
        .collect();
    let mut kept: Vec<BBox> = Vec::new();
    for (k, frame) in frames.iter().enumerate() {
        let mut axis = axes
            .get(k)
            .copied()
            .unwrap_or_else(|| Linear::nice(0.0, 1.0, 4.0, 0.0, 1.0));
        axis.p0 = frame.y1;
        axis.p1 = frame.y0;
        // Tick labels at least 16 px apart: every other one (or fewer) on small panels.
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
            let s = fmt_num(v);
            let bb = text_box(l - 8.0, y + 4.0, &s, tick_font, Anchor::End);
            if !kept.iter().any(|b| b.intersects(&bb)) {
                svg.text(
                    l - 8.0,
                    y + 4.0,
                    &s,
                    tick_font,
                    Anchor::End,
                    TEXT,
                    r#"class="tick-label""#,
                );
                kept.push(bb.inflate(1.0));
            }
        }
        for &v in &time_ticks {
            let x = fx(v);
            svg.line("grid", (x, frame.y0), (x, frame.y1), GRID, 1.0, "", "");
            if k + 1 == frames.len() {
                x_tick(&mut svg, x, frame.y1, &fmt_num(v), tick_font, &mut kept);
            } else {
                svg.line(
                    "tick",
                    (x, frame.y1),
                    (x, frame.y1 + 4.0),
                    AXIS,
                    1.0,
                    "",
                    "",
                );
            }
        }
        if let Some(panel) = panels.get(k) {
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
                if filled {
                    let mut outline = vec![(fx(0.0), frame.y1)];
                    outline.extend(line.iter().copied());
                    outline.push((fx(segs[segs.len() - 1].1), frame.y1));
                    outline.push(outline[0]);
                    svg.path(
                        &polyline_d(&outline),
                        colour(&s.label),
                        1.0,
                        colour(&s.label),
                        r#"fill-opacity="0.45" class="capacity""#,
                    );
                } else {
                    svg.path(
                        &polyline_d(&line),
                        colour(&s.label),
                        1.3,
                        "none",
                        r#"class="rate""#,
                    );
                }
            }
            let title_size = fit_size(&panel.axis_title, panel_h, 13.0, 8.0, false);
            svg.vtext(
                22.0,
                (frame.y0 + frame.y1) / 2.0,
                &panel.axis_title,
                Font::plain(title_size),
            );
        }
        svg.rect("frame", frame, "none", AXIS, "");
    }
    let last = frames[frames.len() - 1];
    svg.text(
        (l + r) / 2.0,
        last.y1 + 38.0,
        "Time (s)",
        Font::plain(13.0),
        Anchor::Middle,
        TEXT,
        "",
    );
    if !caption.is_empty() {
        svg.text(
            WIDTH / 2.0,
            last.y1 + 56.0,
            caption,
            Font::plain(fit_size(caption, WIDTH - 20.0, 11.0, 7.0, false)),
            Anchor::Middle,
            MUTED,
            r#"class="caption""#,
        );
    }
    svg.finish()
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
        assert_eq!(fmt_duration(0.5), "500 ms");
        assert_eq!(fmt_duration(2.0), "2 s");
    }

    #[test]
    fn log_axis_is_reversed() {
        let a = LogAxis::covering(50.0, 5000.0, 500.0, 100.0);
        assert!(a.map(5000.0) < a.map(50.0));
        assert!(a.map(5000.0) >= 100.0 && a.map(50.0) <= 500.0);
        assert!(a.ticks(50.0).iter().any(|&(v, lab)| lab && v == 100.0));
    }

    #[test]
    fn round_values() {
        assert_eq!(floor125(48.0), 20.0);
        assert_eq!(floor125(10.0), 10.0);
        assert_eq!(ceil125(3102.0), 5000.0);
        assert_eq!(ceil125(200.0), 200.0);
        assert_eq!(ceil125(0.7), 1.0);
    }

    #[test]
    fn nice_linear_axis() {
        let a = Linear::nice(0.0, 4741.0, 6.0, 400.0, 0.0);
        assert!(a.hi >= 4741.0);
        assert_eq!(a.step, 1000.0);
        assert_eq!(a.ticks().first(), Some(&0.0));
    }

    #[test]
    fn text_estimate_is_at_least_the_flat_one_and_wider_for_wide_glyphs() {
        for s in ["iiii", "sprout", "WWW", "1,000", "reno = compound"] {
            let n = s.chars().count() as f64;
            assert!(text_width(s, 10.0, false) >= n * 10.0 * CHAR_WIDTH_EM);
            assert!(text_width(s, 10.0, true) >= n * 10.0 * BOLD_CHAR_WIDTH_EM);
        }
        assert!(text_width("WWW", 10.0, false) > 3.0 * 10.0 * 0.95);
    }

    #[test]
    fn segment_and_box_geometry() {
        let b = BBox {
            x0: 0.0,
            y0: 0.0,
            x1: 10.0,
            y1: 10.0,
        };
        let s = |a: Pt, b: Pt| Seg { a, b };
        assert!(b.hits_seg(s((-5.0, 5.0), (15.0, 5.0))));
        assert!(b.hits_seg(s((5.0, 5.0), (6.0, 6.0))));
        assert!(!b.hits_seg(s((-5.0, -1.0), (15.0, -1.0))));
        assert!(!b.hits_seg(s((11.0, 0.0), (20.0, 20.0))));
        assert!(segs_cross(
            s((0.0, 0.0), (2.0, 2.0)),
            s((0.0, 2.0), (2.0, 0.0))
        ));
        assert!(!segs_cross(
            s((0.0, 0.0), (1.0, 1.0)),
            s((0.0, 2.0), (2.0, 3.0))
        ));
        assert!(b.hits_circle(12.0, 5.0, 2.5));
        assert!(!b.hits_circle(12.0, 12.0, 2.5));
    }
}
