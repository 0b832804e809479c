//! Which points of one utilization-delay curve dominate which of another, and how far a curve
//! falls short of a point it does not dominate: pure arithmetic on averaged points.

use serde::{Deserialize, Serialize};

/// One point of a curve: a model at one value of its knob (confidence or gain).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// The knob's value (a confidence or Sprout-EWMA's gain).
    pub value: f64,
    /// Utilization, a fraction 0..1.
    pub utilization: f64,
    /// Self-inflicted delay, ms.
    pub delay_ms: f64,
}

/// `a` dominates `b`: at least `b`'s utilization with strictly less self-inflicted delay
/// (the paper's question: better on both, or as good on one and better on the other). A
/// point with a non-finite figure dominates nothing and is dominated by nothing.
pub fn dominates(a: &CurvePoint, b: &CurvePoint) -> bool {
    let finite = |p: &CurvePoint| p.utilization.is_finite() && p.delay_ms.is_finite();
    finite(a) && finite(b) && a.utilization >= b.utilization && a.delay_ms < b.delay_ms
}

/// Every `(i, j)` with `curve[i]` dominating `other[j]`, in `curve`'s then `other`'s order.
pub fn dominating_pairs(curve: &[CurvePoint], other: &[CurvePoint]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (i, a) in curve.iter().enumerate() {
        for (j, b) in other.iter().enumerate() {
            if dominates(a, b) {
                out.push((i, j));
            }
        }
    }
    out
}

/// The curve's non-dominated points (its Pareto front: no other point has at least its
/// utilization with less delay, nor more utilization with the same delay), by delay
/// ascending; along it utilization rises with delay. Non-finite points are left out.
pub fn front(curve: &[CurvePoint]) -> Vec<CurvePoint> {
    let mut pts: Vec<CurvePoint> = curve
        .iter()
        .filter(|p| p.utilization.is_finite() && p.delay_ms.is_finite())
        .copied()
        .collect();
    // By delay ascending, the higher utilization first at equal delay; a point is on the
    // front when it carries more than every point of less (or equal) delay before it.
    pts.sort_by(|a, b| {
        a.delay_ms
            .total_cmp(&b.delay_ms)
            .then(b.utilization.total_cmp(&a.utilization))
    });
    let mut out: Vec<CurvePoint> = Vec::new();
    for p in pts {
        if out.last().is_none_or(|q| p.utilization > q.utilization) {
            out.push(p);
        }
    }
    out
}

/// The utilization the curve reaches at `delay_ms`: on its front ([`front`]), linear in delay
/// between the two points either side; beyond its largest delay, the utilization of that
/// point (the most the curve shows at no more delay); `None` below its smallest delay (the
/// curve does not reach so little delay) or when it has no finite point.
pub fn utilization_at(curve: &[CurvePoint], delay_ms: f64) -> Option<f64> {
    let f = front(curve);
    let first = f.first()?;
    if !delay_ms.is_finite() || delay_ms < first.delay_ms {
        return None;
    }
    for w in f.windows(2) {
        let (a, b) = (w[0], w[1]);
        if delay_ms <= b.delay_ms {
            let t = (delay_ms - a.delay_ms) / (b.delay_ms - a.delay_ms);
            return Some(a.utilization + t * (b.utilization - a.utilization));
        }
    }
    f.last().map(|p| p.utilization)
}

/// How far a curve falls short of one point of another (Sprout-EWMA's).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Gap {
    /// The other curve's point.
    pub at: CurvePoint,
    /// The curve's utilization at that point's delay ([`utilization_at`]).
    pub utilization: f64,
    /// `at`'s utilization minus the curve's, a fraction (0.12: 12 points short; negative:
    /// the curve carries more at that delay).
    pub short: f64,
}

/// The shortfall of `curve` against each point of `other` whose delay it reaches
/// ([`utilization_at`]), in `other`'s order.
pub fn gaps(curve: &[CurvePoint], other: &[CurvePoint]) -> Vec<Gap> {
    other
        .iter()
        .filter_map(|p| {
            let u = utilization_at(curve, p.delay_ms)?;
            Some(Gap {
                at: *p,
                utilization: u,
                short: p.utilization - u,
            })
        })
        .collect()
}

/// The smallest shortfall of `curve` against any point of `other` ([`gaps`]), the first such
/// point on a tie; `None` when the curve reaches the delay of none of them.
pub fn best_gap(curve: &[CurvePoint], other: &[CurvePoint]) -> Option<Gap> {
    gaps(curve, other)
        .into_iter()
        .reduce(|best, g| if g.short < best.short { g } else { best })
}
