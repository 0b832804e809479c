//! Axes: linear and logarithmic scales from values to pixels, their ticks, round values, the
//! formatting of tick numbers and durations, and tick labels that give way when they would
//! collide.

use super::geometry::BBox;
use super::style::{AXIS, TEXT, WIDTH};
use super::svg::Svg;
use super::text::{text_box, Anchor, Font};

/// Formats a tick value: thousands separators for large numbers, few decimals otherwise.
pub(super) fn fmt_num(v: f64) -> String {
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

/// A duration of `s` seconds for a caption: "500 ms", "1 s", "2.5 s".
pub(super) fn fmt_duration(s: f64) -> String {
    if s < 1.0 {
        format!("{} ms", fmt_num((s * 1000.0 * 1000.0).round() / 1000.0))
    } else {
        format!("{} s", fmt_num((s * 1000.0).round() / 1000.0))
    }
}

/// A linear axis `[lo, hi]` mapped onto pixels `[p0, p1]`.
#[derive(Clone, Copy)]
pub(super) struct Linear {
    /// The value at `p0`.
    pub(super) lo: f64,
    /// The value at `p1`.
    pub(super) hi: f64,
    /// The pixel of `lo`.
    pub(super) p0: f64,
    /// The pixel of `hi`.
    pub(super) p1: f64,
    /// The distance between ticks, in values.
    pub(super) step: f64,
}

impl Linear {
    /// A "nice" axis from `lo` covering `max` (with a little headroom), about `target` ticks.
    pub(super) fn nice(lo: f64, max: f64, target: f64, p0: f64, p1: f64) -> Linear {
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

    /// The pixel of value `v`.
    pub(super) fn map(&self, v: f64) -> f64 {
        self.p0 + (v - self.lo) / (self.hi - self.lo) * (self.p1 - self.p0)
    }

    /// The tick values, from `lo` to `hi` by `step`.
    pub(super) fn ticks(&self) -> Vec<f64> {
        let n = ((self.hi - self.lo) / self.step).round() as i64;
        (0..=n).map(|i| self.lo + i as f64 * self.step).collect()
    }
}

/// A logarithmic axis over `[10^llo, 10^lhi]`: `10^llo` maps to pixel `plo` and `10^lhi` to
/// `phi` (a reversed horizontal axis has `plo` on the right).
#[derive(Clone, Copy)]
pub(super) struct LogAxis {
    /// Decimal logarithm of the value at `plo`.
    pub(super) llo: f64,
    /// Decimal logarithm of the value at `phi`.
    pub(super) lhi: f64,
    /// The pixel of `10^llo`.
    pub(super) plo: f64,
    /// The pixel of `10^lhi`.
    pub(super) phi: f64,
}

impl LogAxis {
    /// Covers `[min, max]` (both >= 1) with some padding in log space, at least one decade.
    pub(super) fn covering(min: f64, max: f64, plo: f64, phi: f64) -> LogAxis {
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

    /// The pixel of value `v` (values at or below 0 are taken as 1e-9).
    pub(super) fn map(&self, v: f64) -> f64 {
        let l = v.max(1e-9).log10();
        self.plo + (l - self.llo) / (self.lhi - self.llo) * (self.phi - self.plo)
    }

    /// (value, labelled?) tick positions. Labels go at the densest of the mantissa sets
    /// 1-2-3-5-7, 1-2-5 and 1 whose closest labels are at least `label_px` pixels apart;
    /// unlabelled minor grid lines at the other integer mantissas when there is room.
    pub(super) fn ticks(&self, label_px: f64) -> Vec<(f64, bool)> {
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
pub(super) fn floor125(v: f64) -> f64 {
    let mag = 10f64.powf(v.log10().floor());
    [5.0, 2.0, 1.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|&x| x <= v * (1.0 + 1e-9))
        .unwrap_or(mag)
}

/// The smallest of 1, 2, 5 times a power of ten that is at least `v` (> 0).
pub(super) fn ceil125(v: f64) -> f64 {
    let mag = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|&x| x >= v * (1.0 - 1e-9))
        .unwrap_or(10.0 * mag)
}

/// A tick mark below the x axis at `x` (the axis at height `axis_y`) and its label, left out
/// when it would leave the canvas or touch a label in `kept` (which it then joins).
pub(super) fn x_tick(
    svg: &mut Svg,
    x: f64,
    axis_y: f64,
    label: &str,
    font: Font,
    kept: &mut Vec<BBox>,
) {
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

/// The label `s` of a tick at height `y` left of a vertical axis at `axis_x` (the tick mark
/// itself is the caller's), left out when it would touch a label in `kept` (which it then
/// joins).
pub(super) fn y_tick_label(
    svg: &mut Svg,
    axis_x: f64,
    y: f64,
    s: &str,
    font: Font,
    kept: &mut Vec<BBox>,
) {
    let bb = text_box(axis_x - 8.0, y + 4.0, s, font, Anchor::End);
    if !kept.iter().any(|k| k.intersects(&bb)) {
        svg.text(
            axis_x - 8.0,
            y + 4.0,
            s,
            font,
            Anchor::End,
            TEXT,
            r#"class="tick-label""#,
        );
        kept.push(bb.inflate(1.0));
    }
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
}
