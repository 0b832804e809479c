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

/// A value rounded to a whole number with thousands separators: `4741.4` is "4,741".
pub(crate) fn thousands(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let n = v.round() as i64;
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (k, ch) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(4741.4), "4,741");
        assert_eq!(thousands(999.6), "1,000");
        assert_eq!(thousands(250.0), "250");
        assert_eq!(thousands(-1234567.0), "-1,234,567");
    }
}
