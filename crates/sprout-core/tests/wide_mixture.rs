//! The wide forecast's tables for spread beliefs ([`sprout_core::wide_mixture`]) against the
//! exact value-by-value computation: every answer is the exact quantile of a level within
//! [`ERROR_BOUND`] of the one asked, on the beliefs a quiet direction holds and on random ones.

use proptest::prelude::*;
use sprout_core::estimator_trait::Estimator;
use sprout_core::wide_forecast::{support, WideForecast};
use sprout_core::wide_mixture::{Prepared, ERROR_BOUND};
use sprout_core::{ModelParams, WideEstimator, WideParams};

fn estimator() -> WideEstimator {
    WideEstimator::new(&ModelParams::default(), &WideParams::default(), 0.95)
}

/// Checks the tables' answer at every horizon against the exact CDF: `F(c) >= q - bound`
/// (unless `c` is the horizon's largest count) and `F(c - 1) < q + bound`
/// ([`WideForecast::table_level_error`]), and that the search's start never changes it.
/// Returns the largest distance in packets from the exact quantile.
fn check(f: &WideForecast, p: &[f64], q: f64) -> Result<u32, String> {
    let belief = Prepared::new(p, support(p));
    let mut worst = 0;
    for h in 0..f.horizons() {
        let c = f.mixture().quantile(p, &belief, h, q, 0);
        // Where the search starts changes its cost, never its answer.
        let exact = f.exact_mixture_quantile(p, h, q);
        for hint in [
            exact,
            exact / 2 + 3,
            exact.saturating_mul(3),
            f.max_count(h + 1),
        ] {
            let again = f.mixture().quantile(p, &belief, h, q, hint);
            if again != c {
                return Err(format!("h {h} q {q}: {again} from {hint}, {c} from 0"));
            }
        }
        worst = worst.max(c.abs_diff(exact));
    }
    let level = f.table_level_error(p, q);
    if level >= ERROR_BOUND {
        return Err(format!("q {q}: {level} from the level asked"));
    }
    Ok(worst)
}

#[test]
fn a_quiet_directions_beliefs_are_forecast_as_the_exact_computation_does() {
    // The receiver of a direction that carries only feedback: a censored count of one packet
    // a tick (a heartbeat from an application-limited sender), after a busy spell at
    // 100 Mbit/s, then in a link outage (empty ticks), then quiet again.
    let mut e = estimator();
    let mut worst = 0;
    let mut checked = 0;
    let steps = (0..100)
        .map(|_| (0u8, 167.0))
        .chain((0..200).map(|_| (1, 1.0)))
        .chain((0..50).map(|_| (2, 0.0)))
        .chain((0..200).map(|_| (1, 1.0)));
    for (i, (kind, k)) in steps.enumerate() {
        e.evolve();
        match kind {
            0 => e.observe(k),
            1 => e.observe_at_least(k),
            _ => e.observe(0.0),
        }
        if i % 10 == 0 {
            let p = e.model().probabilities().to_vec();
            for q in [0.05, 0.5] {
                worst = worst.max(check(e.forecaster(), &p, q).unwrap());
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 110);
    // Within the bound in level, which on these smooth mixtures is within a packet.
    assert!(worst <= 1, "{worst} packets from the exact quantile");
}

#[test]
fn the_prior_and_single_values_are_forecast_within_the_bound() {
    let e = estimator();
    let n = e.model().probabilities().len();
    let f = e.forecaster();
    check(f, &vec![1.0 / n as f64; n], 0.05).unwrap();
    for i in [0, 1, 5, 40, 100, 180, n - 1] {
        let mut p = vec![0.0; n];
        p[i] = 1.0;
        for q in [0.01, 0.05, 0.5, 0.95] {
            check(f, &p, q).unwrap();
        }
    }
}

/// A belief of a few bumps (each spread over neighbouring values) on a faint background.
fn bumpy(n: usize, bumps: &[(usize, f64, usize)], background: f64) -> Vec<f64> {
    let mut p = vec![background / n as f64; n];
    for &(at, weight, width) in bumps {
        let at = at % n;
        let lo = at.saturating_sub(width);
        let hi = (at + width + 1).min(n);
        for x in &mut p[lo..hi] {
            *x += weight / (hi - lo) as f64;
        }
    }
    let total: f64 = p.iter().sum();
    p.iter().map(|x| x / total).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn any_belief_is_forecast_within_the_bound(
        bumps in proptest::collection::vec((0usize..400, 0.01f64..1.0, 0usize..30), 1..5),
        background in prop_oneof![Just(0.0), 1e-6f64..0.5],
        q in prop_oneof![Just(0.05), Just(0.5), 0.005f64..0.995],
    ) {
        let e = estimator();
        let n = e.model().probabilities().len();
        let p = bumpy(n, &bumps, background);
        if let Err(msg) = check(e.forecaster(), &p, q) {
            prop_assert!(false, "{}", msg);
        }
    }
}

#[test]
fn the_estimators_forecast_of_a_spread_belief_uses_the_tables() {
    // Two bumps far apart: the two moments would say "nothing"; the tables give the exact
    // quantile's neighbourhood.
    let mut e = estimator();
    let n = e.model().probabilities().len();
    let p = bumpy(n, &[(60, 0.5, 2), (220, 0.5, 2)], 0.0);
    e.model_mut().set_probabilities(&p);
    let mut out = [0u32; 8];
    e.forecast(&mut out);
    let f = e.forecaster();
    for (h, &c) in out.iter().enumerate() {
        let exact = f.exact_mixture_quantile(&p, h, 0.05);
        assert!(
            c.abs_diff(exact) <= 1 + exact / 100,
            "h {h}: {c} vs {exact}"
        );
        assert!(c > 0, "{out:?}");
    }
}
