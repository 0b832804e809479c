//! How much room a text takes: glyph widths, ascent and descent, fonts and anchors, and the
//! conservative box of a text run that the charts keep clear of everything else.

use super::geometry::{BBox, Pt};

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
pub(super) const PAD: f64 = 1.5;

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
pub(super) fn fit_size(s: &str, width: f64, size: f64, min: f64, bold: bool) -> f64 {
    let w = text_width(s, size, bold);
    if w <= width {
        size
    } else {
        (size * width / w).floor().max(min)
    }
}

/// Which point of a text run its `x` is: its left end, its centre or its right end.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Anchor {
    /// `x` is the left end.
    Start,
    /// `x` is the centre.
    Middle,
    /// `x` is the right end.
    End,
}

impl Anchor {
    /// The SVG `text-anchor` value.
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// How a text run looks.
#[derive(Clone, Copy)]
pub(super) struct Font {
    /// Font size, px.
    pub(super) size: f64,
    /// Bold weight.
    pub(super) bold: bool,
    /// Italic style (as wide as regular).
    pub(super) italic: bool,
}

impl Font {
    /// Regular text of `size` pixels.
    pub(super) const fn plain(size: f64) -> Font {
        Font {
            size,
            bold: false,
            italic: false,
        }
    }

    /// Bold text of `size` pixels.
    pub(super) const fn bold(size: f64) -> Font {
        Font {
            size,
            bold: true,
            italic: false,
        }
    }
}

/// Height of a text of `n` lines from the top of the first to the bottom of the last.
pub(super) fn lines_height(n: usize, f: Font) -> f64 {
    (ASCENT_EM + DESCENT_EM) * f.size + n.saturating_sub(1) as f64 * LINE_EM * f.size
}

/// The conservative box of a text run at `(x, y)` (baseline), padded by [`PAD`].
pub(super) fn text_box(x: f64, y: f64, s: &str, f: Font, anchor: Anchor) -> BBox {
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

/// A box of a text run of `s` in font `f`, of which one point (per `anchor`: left, centre or
/// right) is at `x` and whose top is at `top`.
pub(super) fn box_from_top(x: f64, top: f64, s: &str, f: Font, anchor: Anchor) -> BBox {
    let y = top + PAD + ASCENT_EM * f.size;
    text_box(x, y, s, f, anchor)
}

/// The text position (anchor point and baseline) of a padded box from [`box_from_top`] or
/// `Placer::place` (module `placement`).
pub(super) fn text_pos(bb: &BBox, f: Font, anchor: Anchor) -> Pt {
    let x = match anchor {
        Anchor::Start => bb.x0 + PAD,
        Anchor::End => bb.x1 - PAD,
        Anchor::Middle => (bb.x0 + bb.x1) / 2.0,
    };
    (x, bb.y0 + PAD + ASCENT_EM * f.size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_estimate_is_at_least_the_flat_one_and_wider_for_wide_glyphs() {
        for s in ["iiii", "sprout", "WWW", "1,000", "reno = compound"] {
            let n = s.chars().count() as f64;
            assert!(text_width(s, 10.0, false) >= n * 10.0 * CHAR_WIDTH_EM);
            assert!(text_width(s, 10.0, true) >= n * 10.0 * BOLD_CHAR_WIDTH_EM);
        }
        assert!(text_width("WWW", 10.0, false) > 3.0 * 10.0 * 0.95);
    }
}
