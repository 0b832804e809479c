//! A minimal SVG writer (plain string building): lines, rectangles, circles, paths and texts
//! with compact coordinates, and the chart's title.

use std::fmt::Write as _;

use super::geometry::{BBox, Pt};
use super::style::{FONT, HEIGHT, MUTED, TEXT, WIDTH};
use super::text::{
    fit_size, text_box, text_width, Anchor, Font, ASCENT_EM, DESCENT_EM, LINE_EM, PAD,
};

/// `s` with the characters that are special in XML escaped.
pub(super) fn esc(s: &str) -> String {
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
pub(super) fn c(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.into()
    }
}

/// An SVG document (or a fragment of one) being written.
pub(super) struct Svg {
    buf: String,
}

impl Svg {
    /// A chart's document: the `<svg>` element of [`WIDTH`] x [`HEIGHT`] pixels, its title and
    /// a white background.
    pub(super) fn new(title: &str) -> Self {
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

    /// An empty fragment, to be written into a document later with [`Svg::append`] (drawn
    /// over what the document already holds).
    pub(super) fn fragment() -> Self {
        Svg { buf: String::new() }
    }

    /// Writes the elements of `fragment` here.
    pub(super) fn append(&mut self, fragment: &Svg) {
        self.buf.push_str(&fragment.buf);
    }

    /// A `<line>` from `a` to `b`, `w` px wide, dashed per `dash` (none if empty), with
    /// `extra` attributes.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn line(
        &mut self,
        class: &str,
        a: Pt,
        b: Pt,
        stroke: &str,
        w: f64,
        dash: &str,
        extra: &str,
    ) {
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

    /// A `<rect>` covering `b`.
    pub(super) fn rect(&mut self, class: &str, b: &BBox, fill: &str, stroke: &str, extra: &str) {
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

    /// A `<circle>` of radius `r` around `p`, its stroke `sw` px wide.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn circle(
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
    pub(super) fn text(
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
    pub(super) fn text_lines(
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
    pub(super) fn vtext(&mut self, x: f64, y: f64, s: &str, f: Font) -> BBox {
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

    /// A `<path>` of path data `d` (see [`polyline_d`]).
    pub(super) fn path(&mut self, d: &str, stroke: &str, w: f64, fill: &str, extra: &str) {
        let _ = write!(
            self.buf,
            r#"<path d="{d}" stroke="{stroke}" stroke-width="{}" fill="{fill}" stroke-linejoin="round"{}{}/>"#,
            c(w),
            if extra.is_empty() { "" } else { " " },
            extra
        );
    }

    /// The finished document's text.
    pub(super) fn finish(mut self) -> String {
        self.buf.push_str("</svg>\n");
        self.buf
    }
}

/// Path data of a polyline.
pub(super) fn polyline_d(pts: &[Pt]) -> String {
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

/// A panel's title, bold, centred 9 px above its `frame` and shrunk (13 px down to 9 px) to
/// fit the panel's width.
pub(super) fn panel_title(svg: &mut Svg, frame: &BBox, title: &str) {
    let size = fit_size(title, frame.x1 - frame.x0, 13.0, 9.0, true);
    svg.text(
        (frame.x0 + frame.x1) / 2.0,
        frame.y0 - 9.0,
        title,
        Font::bold(size),
        Anchor::Middle,
        TEXT,
        "",
    );
}

/// A chart's caption under its panels: the first four of `lines`, centred, the first at
/// `top` px and each next 14 px below, all at one size (11 px, shrunk to fit the width, down
/// to 7 px).
pub(super) fn caption_lines(svg: &mut Svg, lines: &[&str], top: f64) {
    let size = lines
        .iter()
        .map(|c| fit_size(c, WIDTH - 20.0, 11.0, 7.0, false))
        .fold(11.0, f64::min);
    for (k, line) in lines.iter().take(4).enumerate() {
        svg.text(
            WIDTH / 2.0,
            top + k as f64 * 14.0,
            line,
            Font::plain(size),
            Anchor::Middle,
            MUTED,
            r#"class="caption""#,
        );
    }
}

/// The chart's title, centred at the top: shrunk to fit the width, down to 13 px; then on two
/// lines (down to 10 px); then cut short with an ellipsis.
pub(super) fn title_text(svg: &mut Svg, title: &str) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinate_formatting() {
        assert_eq!(c(-0.001), "0");
    }
}
