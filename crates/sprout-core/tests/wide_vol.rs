//! The wide model with a belief over its volatility (`sprout_core::wide_vol`): its weights
//! stay a distribution, follow a link that turns volatile, its one-component case is the wide
//! model's forecast exactly, and no input makes it panic or forecast beyond its bound.

use sprout_core::estimator_trait::Estimator;
use sprout_core::params::MAX_VOLATILITIES;
use sprout_core::wide_vol::MIN_WEIGHT;
use sprout_core::{Config, ConfigError, EstimatorKind, ModelParams};
use sprout_core::{WideEstimator, WideParams, WideVolEstimator, WideVolParams};

fn estimator(confidence: f64) -> WideVolEstimator {
    WideVolEstimator::new(
        &ModelParams::default(),
        &WideVolParams::default(),
        confidence,
    )
}

/// A fixed pseudo-random sequence in [0, 1) (an LCG: the test needs no statistics).
fn uniforms(seed: u64) -> impl Iterator<Item = f64> {
    let mut x = seed;
    std::iter::repeat_with(move || {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (x >> 11) as f64 / (1u64 << 53) as f64
    })
}

/// One tick: evolve, observe `count`, forecast; checks the invariants every tick must keep.
fn tick(e: &mut WideVolEstimator, count: f64) -> [u32; 8] {
    e.evolve();
    e.observe(count);
    check(e)
}

fn check(e: &WideVolEstimator) -> [u32; 8] {
    let w = e.weights();
    let sum: f64 = w.iter().sum();
    assert!((sum - 1.0).abs() < 1e-9, "weights sum to {sum}: {w:?}");
    assert!(
        w.iter().all(|&x| x.is_finite() && x >= 0.5 * MIN_WEIGHT),
        "{w:?}"
    );
    let mut out = [0u32; 8];
    e.forecast(&mut out);
    let mut expected = [0u32; 8];
    assert!(e.forecast_expected(&mut expected));
    for (h, pair) in out.windows(2).enumerate() {
        assert!(pair[0] <= pair[1], "forecast decreases at {h}: {out:?}");
    }
    for (h, (&c, &m)) in out.iter().zip(&expected).enumerate() {
        assert!(c <= e.max_forecast(h + 1), "{c} beyond the bound at {h}");
        assert!(
            c <= m,
            "the cautious forecast {out:?} above the median {expected:?}"
        );
    }
    assert!(e.rate_pps().is_finite() && e.rate_pps() >= 0.0);
    out
}

#[test]
fn weights_stay_a_distribution_on_a_random_link() {
    let mut e = estimator(0.95);
    let mut u = uniforms(7);
    let mut rate = 20.0f64;
    for _ in 0..2_000 {
        // A random walk in the log-rate with spells of outage.
        rate = (rate * (2.0 * u.next().unwrap() - 1.0).exp()).clamp(0.05, 5_000.0);
        let count = if u.next().unwrap() < 0.05 {
            0.0
        } else {
            (rate * (0.5 + u.next().unwrap())).round()
        };
        tick(&mut e, count);
    }
}

/// Steady: 2,000 packets/s (40 a tick), each count within 10% of it. Volatile: the rate
/// a geometric random walk of 0.15 per tick in its log (the wide model's volatility is 0.1).
#[test]
fn a_link_that_turns_volatile_moves_the_weight_to_the_large_volatility() {
    let mut e = estimator(0.95);
    let mut u = uniforms(3);
    let mut steady = |e: &mut WideVolEstimator, ticks: usize| {
        for _ in 0..ticks {
            tick(e, (40.0 * (0.9 + 0.2 * u.next().unwrap())).round());
        }
        e.weights().to_vec()
    };
    let (small, large) = (0, e.factors().len() - 1);
    let before = steady(&mut e, 500);
    assert!(
        before[small] > 0.9 && before[large] < 0.1,
        "a steady link favours the small volatility: {before:?}"
    );
    let mut u2 = uniforms(5);
    let mut rate = 40.0f64;
    for _ in 0..300 {
        let step = 0.15 * 3f64.sqrt() * (2.0 * u2.next().unwrap() - 1.0);
        rate = (rate * step.exp()).clamp(5.0, 400.0);
        tick(&mut e, rate.round());
    }
    let volatile = e.weights().to_vec();
    assert!(
        volatile[large] > 0.5 && volatile[large] > 5.0 * before[large],
        "a volatile link favours the large volatility: {before:?} then {volatile:?}"
    );
    // And back: steady again for long enough, the weight returns.
    let again = steady(&mut e, 500);
    assert!(again[large] < 0.1 && again[small] > 0.9, "{again:?}");
}

#[test]
fn one_component_of_factor_one_is_the_wide_model() {
    let params = WideVolParams {
        factors: vec![1.0],
        ..WideVolParams::default()
    };
    let model = ModelParams::default();
    let mut vol = WideVolEstimator::new(&model, &params, 0.9);
    let mut wide = WideEstimator::new(&model, &WideParams::default(), 0.9);
    let mut u = uniforms(11);
    let (mut a, mut b) = ([0u32; 8], [0u32; 8]);
    for i in 0..1_500 {
        let count = match i % 300 {
            0..=39 => 0.0,
            40..=59 => 1.0,
            _ => (30.0 * u.next().unwrap()).round(),
        };
        for e in [&mut vol as &mut dyn Estimator, &mut wide] {
            e.evolve();
            if i % 7 == 3 {
                e.observe_at_least(count.max(1.0));
            } else {
                e.observe(count);
            }
        }
        vol.forecast(&mut a);
        wide.forecast(&mut b);
        assert_eq!(a, b, "tick {i}");
        assert_eq!(vol.weights(), &[1.0]);
        assert_eq!(vol.rate_pps(), wide.rate_pps());
    }
}

#[test]
fn never_panics_on_extremes() {
    let mut e = estimator(0.95);
    for count in [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        -5.0,
        0.0,
        1e12,
        0.0,
        1e-300,
        f64::MAX,
        3.0,
    ] {
        tick(&mut e, count);
        e.evolve();
        e.observe_at_least(count);
        check(&e);
    }
    // A long outage, then the link at its top rate at once, then quiet feedback only.
    for _ in 0..3_000 {
        tick(&mut e, 0.0);
    }
    for _ in 0..50 {
        tick(&mut e, 1_666.0);
    }
    for _ in 0..500 {
        e.evolve();
        e.observe_at_least(1.0);
        check(&e);
    }
    // Every confidence at the ends (below 0.5 the forecast is above the median: not ticked
    // through `check`, which asserts the caution).
    for c in [1e-9, 0.5, 1.0 - 1e-9] {
        let mut e = estimator(c);
        for count in [5.0, 0.0, 1e9, 2.0] {
            e.evolve();
            e.observe(count);
            let mut out = [0u32; 8];
            e.forecast(&mut out);
            assert!(out.windows(2).all(|p| p[0] <= p[1]), "{out:?}");
            assert!(out[7] <= e.max_forecast(8), "{out:?}");
        }
    }
}

#[test]
fn the_configuration_selects_and_checks_it() {
    let cfg: EstimatorKind = serde_json::from_str(r#"{"WideVol":{}}"#).unwrap();
    assert_eq!(cfg, EstimatorKind::WideVol(WideVolParams::default()));
    let config = Config {
        estimator: cfg,
        ..Config::wide()
    };
    config.validate().unwrap();
    let mut built = sprout_core::estimator::build(&config);
    built.evolve();
    built.observe(3.0);
    let mut out = [0u32; 8];
    built.forecast(&mut out);
    assert!(out[7] > 0, "{out:?}");
    let bad = |p: WideVolParams| {
        Config {
            estimator: EstimatorKind::WideVol(p),
            ..Config::wide()
        }
        .validate()
        .unwrap_err()
    };
    let d = WideVolParams::default;
    for factors in [
        vec![],
        vec![1.0, f64::NAN],
        vec![0.0],
        vec![1.0; MAX_VOLATILITIES + 1],
    ] {
        assert!(matches!(
            bad(WideVolParams { factors, ..d() }),
            ConfigError::WideVol
        ));
    }
    assert!(matches!(
        bad(WideVolParams {
            switch_rate: -1.0,
            ..d()
        }),
        ConfigError::WideVol
    ));
    // A factor that makes a component's wide model invalid is refused as the wide model is.
    assert!(matches!(
        bad(WideVolParams {
            factors: vec![f64::MAX],
            ..d()
        }),
        ConfigError::Wide
    ));
}
