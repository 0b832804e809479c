//! How the report writes numbers: percentages, optional values and ratios to the paper's.

/// A fraction (0..1) as a whole percentage: `0.42` is "42%".
pub(super) fn pct(x: f64) -> String {
    format!("{:.0}%", 100.0 * x)
}

/// A value rounded to a whole number, or "–" when there is none.
pub(super) fn opt(v: Option<f64>) -> String {
    v.map_or("–".into(), |x| format!("{x:.0}"))
}

/// Ratio of ours to the paper's, as text; flagged when it departs by more than a third.
pub(super) fn ratio(ours: f64, paper: Option<f64>) -> (String, bool) {
    match paper {
        Some(p) if p > 0.0 => {
            let r = ours / p;
            (format!("{r:.2}"), !(2.0 / 3.0..=4.0 / 3.0).contains(&r))
        }
        _ => ("–".into(), false),
    }
}
