//! `sprout_link::scale`: a trace's rate times a factor, its timing kept.

use proptest::prelude::*;
use sprout_link::scale::{check_scale, scale, write_scaled, ScaleError};
use sprout_link::Trace;

fn trace(ops: &[u64]) -> Trace {
    Trace::from_opportunities_ms("t", ops.to_vec()).unwrap()
}

/// Opportunities per millisecond, 0 ..= the period.
fn per_ms(t: &Trace) -> Vec<u64> {
    let mut v = vec![0u64; t.period_ms() as usize + 1];
    for &ms in t.opportunities_ms() {
        v[ms as usize] += 1;
    }
    v
}

/// A small trace with repeats, gaps (outages) and a last timestamp that holds one line.
fn sample() -> Trace {
    trace(&[
        0, 0, 1, 1, 1, 5, 6, 6, 400, 401, 401, 401, 401, 1500, 1500, 1503, 2999,
    ])
}

#[test]
fn times_one_is_the_identity() {
    let t = sample();
    assert_eq!(
        scale(&t, 1.0, "t").unwrap().opportunities_ms(),
        t.opportunities_ms()
    );
    let real = Trace::parse(
        "r",
        &(0..5000u64)
            .map(|i| format!("{}\n", i * 7 / 3))
            .collect::<String>(),
    )
    .unwrap();
    assert_eq!(
        scale(&real, 1.0, "r").unwrap().opportunities_ms(),
        real.opportunities_ms()
    );
}

#[test]
fn times_four_has_four_times_the_lines_at_the_same_timestamps() {
    let t = sample();
    let s = scale(&t, 4.0, "x4").unwrap();
    assert_eq!(s.name(), "x4");
    assert_eq!(s.len(), 4 * t.len());
    assert_eq!(s.period_ms(), t.period_ms());
    let (a, b) = (per_ms(&t), per_ms(&s));
    for ms in 0..a.len() {
        assert_eq!(b[ms], 4 * a[ms], "ms {ms}");
    }
}

#[test]
fn times_a_half_halves_within_one_per_window_and_keeps_outages() {
    let t = sample();
    let s = scale(&t, 0.5, "half").unwrap();
    assert_eq!(s.len(), t.len().div_ceil(2)); // 17 lines -> ceil(8.5) = 9
    assert_eq!(s.period_ms(), 2999);
    let (a, b) = (per_ms(&t), per_ms(&s));
    for from in 0..a.len() {
        for to in from..a.len() {
            let orig: u64 = a[from..=to].iter().sum();
            let got: u64 = b[from..=to].iter().sum();
            let want = 0.5 * orig as f64;
            assert!(
                (got as f64 - want).abs() < 1.0,
                "[{from}, {to}]: {got} vs {want}"
            );
        }
        if a[from] == 0 {
            assert_eq!(b[from], 0, "ms {from} was an outage");
        }
    }
}

#[test]
fn the_fractional_carry_is_deterministic_and_the_total_exact_within_one() {
    // 1000 ms with one line each, x 0.3: 300 lines, spread as the carry falls, every time.
    let t = trace(&(1..=1000).collect::<Vec<_>>());
    let a = scale(&t, 0.3, "a").unwrap();
    let b = scale(&t, 0.3, "b").unwrap();
    assert_eq!(a.opportunities_ms(), b.opportunities_ms());
    assert_eq!(a.len(), 300);
    assert_eq!(a.period_ms(), 1000);
    // No two consecutive kept milliseconds are more than ceil(1 / 0.3) = 4 apart.
    assert!(a.opportunities_ms().windows(2).all(|w| w[1] - w[0] <= 4));
    for (factor, n) in [
        (0.7, 1234u64),
        (2.5, 999),
        (16.0, 321),
        (0.01, 57),
        (1.1, 10),
    ] {
        let t = trace(&(0..n).map(|i| i * 3).collect::<Vec<_>>());
        let s = scale(&t, factor, "s").unwrap();
        let want = factor * n as f64;
        assert!(
            (s.len() as f64 - want).abs() < 1.0,
            "x{factor} of {n}: {} lines",
            s.len()
        );
        assert!(s.len() as f64 >= want - 1e-9, "the total is the ceiling");
    }
    // 0.1 is a tenth: 10 lines become exactly 1.
    assert_eq!(scale(&trace(&[1; 10]), 0.1, "t").unwrap().len(), 1);
}

#[test]
fn the_written_text_is_the_scaled_trace() {
    let t = sample();
    let mut out = Vec::new();
    let summary = write_scaled(&t, 2.5, &mut out).unwrap();
    let s = scale(&t, 2.5, "s").unwrap();
    let text: String = s
        .opportunities_ms()
        .iter()
        .map(|t| format!("{t}\n"))
        .collect();
    assert_eq!(String::from_utf8(out).unwrap(), text);
    assert_eq!(summary.opportunities, s.len() as u64);
    assert_eq!(summary.file_bytes, text.len() as u64);
    assert_eq!(summary.period_ms, 2999);
}

#[test]
fn bad_and_too_big_factors_are_refused_before_anything_is_built() {
    let t = sample();
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let e = scale(&t, bad, "t").unwrap_err();
        assert!(matches!(e, ScaleError::BadFactor { .. }), "{bad}: {e}");
        assert!(e.to_string().contains("finite number above 0"), "{e}");
    }
    // 17 lines x 1e8 is 1.7e9 lines: far above 256 MiB of text.
    let e = check_scale(&t, 1e8).unwrap_err();
    assert!(matches!(e, ScaleError::TooBig { .. }), "{e}");
    assert!(e.to_string().contains("256"), "{e}");
    let e = write_scaled(&t, f64::MAX, std::io::sink()).unwrap_err();
    assert!(matches!(e, ScaleError::TooBig { .. }), "{e}");
    // Under the cap by the rough bound (2 bytes a line: 204 MB), over it exactly: the sample
    // takes 56 bytes of text, x 6e6 = 336 MB.
    let e = check_scale(&t, 6e6).unwrap_err();
    assert!(matches!(e, ScaleError::TooBig { .. }), "{e}");
    assert_eq!(check_scale(&t, 1.0).unwrap().file_bytes, 56);
    assert!(check_scale(&t, 1024.0).is_ok());
}

/// Random traces: sorted timestamps up to 5 s, with repeats and gaps.
fn arb_trace() -> impl Strategy<Value = Trace> {
    prop::collection::vec((0u64..40, 0u64..4), 1..400).prop_map(|steps| {
        let (mut t, mut ops) = (0u64, Vec::new());
        for (gap, extra) in steps {
            // Mostly short gaps, now and then a long one (an outage).
            t += if gap == 39 { 700 } else { gap / 8 };
            for _ in 0..=extra {
                ops.push(t);
            }
        }
        trace(&ops)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn any_one_second_window_is_within_one_of_factor_times_the_original(
        t in arb_trace(),
        factor in prop_oneof![0.01f64..1.0, 1.0f64..100.0, Just(0.5), Just(4.0), Just(64.0)],
    ) {
        let s = scale(&t, factor, "s").unwrap();
        prop_assert_eq!(s.period_ms(), t.period_ms());
        let (a, b) = (per_ms(&t), per_ms(&s));
        for ms in 0..a.len() {
            prop_assert!(a[ms] > 0 || b[ms] == 0, "new timestamp {}", ms);
            if factor >= 1.0 {
                prop_assert!(a[ms] == 0 || b[ms] > 0, "ms {} lost its lines", ms);
            }
        }
        // Prefix sums; every window [from, from + 1000) ms, cut at the period.
        let prefix = |v: &[u64]| {
            let mut p = vec![0u64];
            for x in v {
                p.push(p.last().unwrap() + x);
            }
            p
        };
        let (pa, pb) = (prefix(&a), prefix(&b));
        for from in 0..a.len() {
            let to = (from + 1000).min(a.len());
            let orig = (pa[to] - pa[from]) as f64;
            let got = (pb[to] - pb[from]) as f64;
            prop_assert!(
                (got - factor * orig).abs() < 1.0 + 1e-9,
                "[{}, {}) ms: {} vs {} x {}", from, to, got, factor, orig
            );
        }
    }
}
