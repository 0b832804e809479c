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

/// The mantissas a logarithmic axis may label, in the order they are given a label: 1, then 2
/// and 5, then 3, 7 and 1.5 (denser where the axis has room).
const LOG_LABEL_TIERS: [&[f64]; 5] = [&[1.0], &[2.0, 5.0], &[3.0], &[7.0], &[1.5]];

/// The round values `m * 10^d` a logarithmic axis may end at and label (`m` a labelled
/// mantissa), ascending from the largest at most `10^l` when `down`, else the smallest at least
/// `10^l`; returns its decimal logarithm.
fn round_log(l: f64, down: bool) -> f64 {
    let d = l.floor();
    let mut ms: Vec<f64> = LOG_LABEL_TIERS
        .iter()
        .flat_map(|t| t.iter().copied())
        .collect();
    ms.push(10.0);
    ms.sort_by(f64::total_cmp);
    let logs = ms.iter().map(|m| d + m.log10());
    if down {
        logs.filter(|&x| x <= l + 1e-9).fold(d, f64::max)
    } else {
        logs.filter(|&x| x >= l - 1e-9).fold(d + 1.0, f64::min)
    }
}

impl LogAxis {
    /// Covers `[min, max]` (both >= 1) with some padding in log space, at least half a decade,
    /// ending at round values (a labelled mantissa 1, 1.5, 2, 3, 5 or 7 times a power of ten)
    /// so that the ends get tick labels and every value is read between two labels.
    pub(super) fn covering(min: f64, max: f64, plo: f64, phi: f64) -> LogAxis {
        let (mut a, mut b) = (min.max(1.0).log10(), max.max(1.0).log10());
        if a > b {
            std::mem::swap(&mut a, &mut b);
        }
        let pad = ((b - a) * 0.08).max(0.12);
        let (mut llo, mut lhi) = (a - pad, b + pad);
        if lhi - llo < 0.5 {
            let mid = (lhi + llo) / 2.0;
            llo = mid - 0.25;
            lhi = mid + 0.25;
        }
        LogAxis {
            llo: round_log(llo.max(0.0), true),
            lhi: round_log(lhi, false),
            plo,
            phi,
        }
    }

    /// The pixel of value `v` (values at or below 0 are taken as 1e-9).
    pub(super) fn map(&self, v: f64) -> f64 {
        let l = v.max(1e-9).log10();
        self.plo + (l - self.llo) / (self.lhi - self.llo) * (self.phi - self.plo)
    }

    /// (value, labelled?) tick positions, ascending, with labels at least `label_px` pixels
    /// apart (see [`LogAxis::ticks_spaced`]).
    pub(super) fn ticks(&self, label_px: f64) -> Vec<(f64, bool)> {
        self.ticks_spaced(|_, _| label_px)
    }

    /// (value, labelled?) tick positions, ascending. Labels go greedily, the labels of values
    /// `a` and `b` at least `gap(a, b)` pixels apart: first at the axis' ends if they are round
    /// values, then at the mantissas 1, then 2 and 5, then 3, 7 and 1.5 wherever they keep
    /// that distance (so a stretch of axis left without a label, as at the ends, gets a finer
    /// one); unlabelled minor grid lines at the other integer mantissas when there is room.
    pub(super) fn ticks_spaced(&self, gap: impl Fn(f64, f64) -> f64) -> Vec<(f64, bool)> {
        let per_decade = (self.phi - self.plo).abs() / (self.lhi - self.llo);
        let minor = per_decade >= 100.0;
        let in_range = |l: f64| l >= self.llo - 1e-9 && l <= self.lhi + 1e-9;
        let (d0, d1) = (self.llo.floor() as i32, self.lhi.ceil() as i32);
        // Candidates for a label, in order of priority, as decimal logarithms.
        let mut candidates: Vec<f64> = Vec::new();
        for tier in LOG_LABEL_TIERS {
            for d in d0..=d1 {
                for &m in tier {
                    let l = d as f64 + m.log10();
                    if in_range(l) {
                        candidates.push(l);
                    }
                }
            }
        }
        let is_end = |l: f64| (l - self.llo).abs() < 1e-9 || (l - self.lhi).abs() < 1e-9;
        candidates.sort_by_key(|&l| !is_end(l));
        let mut labelled: Vec<f64> = Vec::new();
        let value = |l: f64| round_sig(10f64.powf(l));
        for l in candidates {
            if labelled
                .iter()
                .all(|&k| (k - l).abs() * per_decade >= gap(value(k), value(l)))
            {
                labelled.push(l);
            }
        }
        let mut out: Vec<(f64, bool)> = labelled.iter().map(|&l| (value(l), true)).collect();
        if minor {
            for d in d0..=d1 {
                for m in 1..=9 {
                    let l = d as f64 + (m as f64).log10();
                    if in_range(l) && !labelled.iter().any(|&k| (k - l).abs() < 1e-9) {
                        out.push((round_sig(m as f64 * 10f64.powi(d)), false));
                    }
                }
            }
        }
        out.sort_by(|a, b| a.0.total_cmp(&b.0));
        out
    }
}

/// `v` (> 0) rounded to 6 significant digits (so that 10^2.477 reads 300).
fn round_sig(v: f64) -> f64 {
    let e = v.log10().floor() as i32 - 5;
    if e >= 0 {
        let mag = 10f64.powi(e);
        (v / mag).round() * mag
    } else {
        let inv = 10f64.powi(-e);
        (v * inv).round() / inv
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
    fn log_axis_ends_at_labelled_round_values() {
        // Figure 8's delays: the ends are round and labelled, and Sprout's 317 and 383 ms lie
        // between labels.
        let a = LogAxis::covering(317.0, 43544.0, 635.0, 84.0);
        let labels: Vec<f64> = a.ticks(46.0).iter().filter(|t| t.1).map(|t| t.0).collect();
        assert_eq!(labels.first(), Some(&200.0), "{labels:?}");
        assert_eq!(labels.last(), Some(&70000.0), "{labels:?}");
        assert!(labels.iter().any(|&v| v <= 317.0) && labels.contains(&500.0));
        for w in labels.windows(2) {
            assert!((a.map(w[0]) - a.map(w[1])).abs() >= 46.0, "{labels:?}");
        }
        // The confidence sweep's: a dense axis labels 1.5 and the other mantissas.
        let b = LogAxis::covering(136.0, 1171.0, 635.0, 84.0);
        let labels: Vec<f64> = b.ticks(46.0).iter().filter(|t| t.1).map(|t| t.0).collect();
        assert_eq!(
            labels,
            [100.0, 150.0, 200.0, 300.0, 500.0, 700.0, 1000.0, 1500.0, 2000.0]
        );
        // A narrow range still spans half a decade.
        let c = LogAxis::covering(300.0, 310.0, 600.0, 100.0);
        assert!(c.lhi - c.llo >= 0.5);
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
