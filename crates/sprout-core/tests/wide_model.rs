//! The wide rate model (an outage to 1 Gbit/s): its maths against direct formulas, its
//! invariants under random observations, and its place in a configuration.

use std::sync::Arc;

use proptest::prelude::*;
use sprout_core::estimator_trait::Estimator;
use sprout_core::wide_forecast::{normal_quantile, quantile, HorizonMoments, SMALL_MEAN};
use sprout_core::wide_model::{WideModel, WideShared};
use sprout_core::{Config, EstimatorKind, ModelParams, WideEstimator, WideParams};

fn shared_with(w: &WideParams) -> Arc<WideShared> {
    Arc::new(WideShared::new(&ModelParams::default(), w))
}

fn shared() -> Arc<WideShared> {
    shared_with(&WideParams::default())
}

/// The wide model with Poisson counts up to 100 packets a tick (no dispersion floor).
fn poisson_shared() -> Arc<WideShared> {
    shared_with(&WideParams {
        dispersion_above: None,
        ..WideParams::default()
    })
}

fn point(sh: &WideShared, i: usize) -> Vec<f64> {
    let mut p = vec![0.0; sh.grid.len()];
    p[i] = 1.0;
    p
}

/// ln(m^k e^-m / k!) by a direct product, for whole k.
fn poisson_ln_pmf(k: u32, m: f64) -> f64 {
    let mut x = -m;
    for j in 1..=k {
        x += (m / j as f64).ln();
    }
    x
}

/// The smallest c with P(N <= c) >= q for N Poisson of mean m, by direct summation.
fn poisson_quantile(m: f64, q: f64) -> u32 {
    let mut acc = 0.0;
    for c in 0u32.. {
        acc += poisson_ln_pmf(c, m).exp();
        if acc >= q {
            return c;
        }
    }
    unreachable!()
}

#[test]
fn the_grid_spans_an_outage_to_a_gigabit_with_the_papers_spacing_at_the_bottom() {
    let sh = shared();
    let g = &sh.grid;
    assert_eq!(g.rate(0), 0.0);
    assert_eq!(g.rate(1), 3.906_25);
    assert_eq!(g.rate(2), 2.0 * 3.906_25);
    assert_eq!(g.rate(g.len() - 1), 83_334.0);
    // Linear up to where the 3% log step is wider than the paper's spacing, then log-spaced.
    let knee = g
        .rates()
        .windows(2)
        .position(|w| w[1] - w[0] > 3.906_26)
        .unwrap();
    assert!((120.0..140.0).contains(&g.rate(knee)), "{}", g.rate(knee));
    for w in g.rates()[knee + 1..g.len() - 1].windows(2) {
        assert!((w[1] / w[0] - 0.03f64.exp()).abs() < 1e-9, "{w:?}");
    }
    assert!(g.len() < 300, "{} values", g.len());
    for i in 0..g.len() {
        assert!(g.lower_edge(i) < g.rate(i) || i == 0);
        assert!(g.rate(i) < g.upper_edge(i) || i == g.len() - 1);
        assert_eq!(g.value_of(g.rate(i)), i);
    }
}

#[test]
fn the_likelihood_is_the_poisson_pmf_then_the_normal_density() {
    let sh = poisson_shared();
    for i in [1usize, 10, 40, 80, 120] {
        let m = sh.mean_count(i);
        assert!(m <= 100.0);
        for k in [1u32, 3, 17, 60] {
            let direct = poisson_ln_pmf(k, m);
            let got = sh.log_likelihood(i, k as f64, sh.count_constant(k as f64));
            assert!(
                (got - direct).abs() < 1e-9 * direct.abs().max(1.0),
                "{i} {k}"
            );
        }
    }
    // Above 100 packets a tick: the Normal of mean and variance m.
    let i = sh.grid.value_of(10_000.0);
    let m = sh.mean_count(i);
    assert!(m > 100.0);
    for k in [150.0, 200.0, 260.5] {
        let direct = -0.5 * (2.0 * std::f64::consts::PI * m).ln() - (k - m) * (k - m) / (2.0 * m);
        let got = sh.log_likelihood(i, k, sh.count_constant(k));
        assert!((got - direct).abs() < 1e-9, "{k}: {got} {direct}");
    }
}

#[test]
fn above_ten_packets_a_tick_the_count_keeps_the_relative_spread_it_has_at_ten() {
    let sh = shared();
    for rate in [100.0, 400.0] {
        let i = sh.grid.value_of(rate);
        let m = sh.mean_count(i);
        assert_eq!(sh.count_variance(i), m, "{rate}");
        let k = 3.0;
        let direct = poisson_ln_pmf(3, m);
        assert!((sh.log_likelihood(i, k, sh.count_constant(k)) - direct).abs() < 1e-9);
    }
    for rate in [600.0, 8_000.0, 80_000.0] {
        let i = sh.grid.value_of(rate);
        let m = sh.mean_count(i);
        let v = m * m / 10.0;
        assert!((sh.count_variance(i) - v).abs() < 1e-9 * v, "{rate}");
        let k = 0.8 * m;
        let direct = -0.5 * (2.0 * std::f64::consts::PI * v).ln() - (k - m) * (k - m) / (2.0 * v);
        let got = sh.log_likelihood(i, k, sh.count_constant(k));
        assert!((got - direct).abs() < 1e-9, "{rate}: {got} {direct}");
    }
}

#[test]
fn with_a_count_cv_the_likelihood_is_the_negative_binomial_pmf() {
    let w = WideParams {
        count_cv: 0.2,
        dispersion_above: None,
        ..WideParams::default()
    };
    let sh = shared_with(&w);
    let r = 1.0 / (0.2 * 0.2);
    for i in [5usize, 50, 100] {
        let m = sh.mean_count(i);
        for k in [1u32, 4, 30] {
            // P(k) = Gamma(k + r) / (Gamma(r) k!) (r / (r + m))^r (m / (r + m))^k, by products.
            let mut ln = r * (r / (r + m)).ln() + k as f64 * (m / (r + m)).ln();
            for j in 0..k {
                ln += ((r + j as f64) / (j as f64 + 1.0)).ln();
            }
            let got = sh.log_likelihood(i, k as f64, sh.count_constant(k as f64));
            assert!((got - ln).abs() < 1e-8, "{i} {k}: {got} {ln}");
        }
        assert!((sh.count_variance(i) - (m + 0.04 * m * m)).abs() < 1e-9);
    }
}

#[test]
fn the_censored_likelihood_is_the_poisson_tail() {
    let sh = poisson_shared();
    for i in [1usize, 20, 60, 100] {
        let m = sh.mean_count(i);
        for k in [1u32, 5, 12] {
            let below: f64 = (0..k).map(|j| poisson_ln_pmf(j, m).exp()).sum();
            let got = sh.tail_at_least(i, k);
            assert!((got - (1.0 - below)).abs() < 1e-12, "{i} {k}: {got}");
        }
    }
    assert_eq!(sh.tail_at_least(0, 1), 0.0);
}

#[test]
fn a_belief_on_one_rate_forecasts_the_poisson_quantile_for_the_next_tick() {
    let sh = poisson_shared();
    let poisson = WideParams {
        dispersion_above: None,
        ..WideParams::default()
    };
    let mut e = WideEstimator::new(&ModelParams::default(), &poisson, 0.95);
    for rate in [50.0, 200.0, 1000.0, 2000.0, 10_000.0, 83_334.0] {
        let i = sh.grid.value_of(rate);
        e.model_mut().set_probabilities(&point(&sh, i));
        let mut out = [0u32; 8];
        e.forecast(&mut out);
        let m = sh.mean_count(i);
        let exact = poisson_quantile(m, 0.05);
        if m < SMALL_MEAN {
            assert_eq!(out[0], exact, "rate {rate}: mean {m}");
        } else {
            // The Normal's quantile, continuity-corrected: within one packet of the Poisson's
            // (the Poisson's lower tail is a little shorter).
            assert!(
                out[0] + 1 >= exact && out[0] <= exact,
                "rate {rate}: {} vs {exact}",
                out[0]
            );
        }
        let mut med = [0u32; 8];
        assert!(e.forecast_expected(&mut med));
        let median = poisson_quantile(m, 0.5);
        assert!(
            med[0].abs_diff(median) <= 1,
            "rate {rate}: {} vs {median}",
            med[0]
        );
        for h in 1..=8 {
            assert!(out[h - 1] <= med[h - 1]);
            assert!(med[h - 1] <= e.max_forecast(h), "{rate} {h}");
        }
    }
}

#[test]
fn the_quantile_of_given_moments_is_the_negative_binomials_then_the_normals() {
    // Variance = mean: a Poisson.
    for m in [0.5, 3.0, 12.0, 40.0] {
        let got = quantile(
            HorizonMoments {
                mean: m,
                variance: m,
            },
            0.05,
            normal_quantile(0.05),
        );
        assert_eq!(got, poisson_quantile(m, 0.05), "{m}");
    }
    // A Normal of mean 1000 and sd 50: 1000 - 1.6449 * 50 = 917.8, continuity-corrected.
    let z = normal_quantile(0.05);
    assert!((z + 1.644_853_626_951).abs() < 1e-9, "{z}");
    let got = quantile(
        HorizonMoments {
            mean: 1000.0,
            variance: 2500.0,
        },
        0.05,
        z,
    );
    assert_eq!(got, (1000.0f64 + z * 50.0 - 0.5).ceil() as u32);
    assert_eq!(quantile(HorizonMoments::default(), 0.05, z), 0);
}

/// Mean and standard deviation of the log-rate (or rate) after one tick from value `i`.
fn one_tick_moments(sh: &Arc<WideShared>, i: usize, log: bool) -> (f64, f64) {
    let mut m = WideModel::new(sh.clone());
    m.set_probabilities(&point(sh, i));
    m.evolve();
    let f = |r: f64| if log { r.ln() } else { r };
    let p = m.probabilities();
    let mean: f64 = (1..p.len()).map(|j| p[j] * f(sh.grid.rate(j))).sum();
    let var: f64 = (1..p.len())
        .map(|j| p[j] * (f(sh.grid.rate(j)) - mean).powi(2))
        .sum();
    (mean, var.sqrt())
}

#[test]
fn the_kernel_is_a_gaussian_of_fixed_size_in_log_rate_above_the_floor() {
    let sh = shared();
    let s = 0.1; // the default: 0.7071 per sqrt(s), 0.1 per sqrt(tick)
    assert!((sh.s_tick - s).abs() < 1e-12);
    for rate in [1000.0, 10_000.0, 40_000.0] {
        let i = sh.grid.value_of(rate);
        let (mean, sd) = one_tick_moments(&sh, i, true);
        // Binned at 3% steps: the sd is within a few percent, the median stays.
        assert!(
            (mean - sh.grid.rate(i).ln()).abs() < 0.005,
            "{rate}: {mean}"
        );
        assert!((sd - s).abs() < 0.01, "{rate}: sd {sd}");
    }
    // Below the floor (283 packets/s) the paper's additive motion: 28.3 packets/s a tick.
    let i = sh.grid.value_of(200.0);
    let (mean, sd) = one_tick_moments(&sh, i, false);
    assert!((mean - sh.grid.rate(i)).abs() < 1.0, "{mean}");
    assert!((sd - 200.0 * 0.02f64.sqrt()).abs() < 1.5, "sd {sd}");
}

#[test]
fn an_outage_lasts_a_second_on_average_and_ends_at_a_low_rate() {
    let sh = shared();
    let mut m = WideModel::new(sh.clone());
    m.set_probabilities(&point(&sh, 0));
    m.evolve();
    let p = m.probabilities();
    assert!((p[0] - (-0.02f64).exp()).abs() < 1e-12);
    // The paper's additive motion from 0: 28.3 packets/s a tick, so nothing beyond 5 sd.
    let reach = sh.grid.value_of(5.0 * 200.0 * 0.02f64.sqrt()) + 1;
    assert!(p[1] > 0.0 && p[reach..].iter().all(|&x| x == 0.0));
}

#[test]
fn a_count_no_held_rate_explains_restarts_the_belief() {
    let sh = shared();
    let mut m = WideModel::new(sh.clone());
    for _ in 0..50 {
        m.evolve();
        m.observe(2.0);
    }
    // 1,000 packets in a tick: 50,000 packets/s, far beyond the kernel's reach from 100.
    m.evolve();
    m.observe(1_000.0);
    let mean = m.mean_rate();
    assert!((35_000.0..70_000.0).contains(&mean), "{mean}");
}

#[test]
fn packets_after_an_outage_restart_from_the_prior() {
    let sh = shared();
    let mut m = WideModel::new(sh.clone());
    m.set_probabilities(&point(&sh, 0));
    m.observe(500.0);
    let mean = m.mean_rate();
    assert!((20_000.0..30_000.0).contains(&mean), "{mean}");
}

#[test]
fn a_steady_fast_link_is_tracked_and_forecast_near_its_rate() {
    for rate in [100.0, 1_000.0, 8_333.0, 60_000.0] {
        let mut e = WideEstimator::new(&ModelParams::default(), &WideParams::default(), 0.95);
        let per_tick = rate * 0.02;
        for _ in 0..200 {
            e.evolve();
            e.observe(per_tick);
        }
        let est = e.rate_pps();
        // At 2 packets a tick the posterior is broad and skewed up (as the paper model's);
        // above 10 packets a tick a count pins the rate to no better than 32%.
        let tolerance = if rate < 283.0 { 0.15 } else { 0.08 };
        assert!((est / rate - 1.0).abs() < tolerance, "{rate}: {est}");
        let mut out = [0u32; 8];
        e.forecast(&mut out);
        let five = out[4] as f64 / (5.0 * per_tick);
        let least = if rate < 283.0 { 0.35 } else { 0.6 };
        assert!((least..1.0).contains(&five), "{rate}: {out:?}");
    }
}

#[test]
fn the_wide_model_is_a_named_configuration() {
    let c = Config::wide();
    assert!(matches!(c.estimator, EstimatorKind::Wide(_)));
    c.validate().unwrap();
    for bad in [
        WideParams {
            log_step: 0.0,
            ..WideParams::default()
        },
        WideParams {
            sigma_log: -1.0,
            ..WideParams::default()
        },
        WideParams {
            max_rate_pps: f64::NAN,
            ..WideParams::default()
        },
    ] {
        let c = Config {
            estimator: EstimatorKind::Wide(bad),
            ..Config::default()
        };
        assert!(c.validate().is_err());
    }
    // The counts a wide forecast can hold fit the wire's u32 with room, and reach a gigabit.
    let e = WideEstimator::new(&ModelParams::default(), &WideParams::default(), 0.95);
    let at8 = e.max_forecast(8);
    assert!(at8 as f64 > 8.0 * 1_666.0 && at8 < 1_000_000, "{at8}");
    assert!((1..8).all(|h| e.max_forecast(h) <= e.max_forecast(h + 1)));
}

#[test]
fn a_wide_endpoint_accepts_a_gigabit_forecast_that_a_paper_one_drops() {
    use sprout_core::wire::{self, Feedback, Header};
    use sprout_core::{Connection, DatagramError, Instant, Reject};
    // The forecast a wide receiver makes after a steady 1 Gbit/s (1,667 packets a tick).
    let mut e = WideEstimator::new(&ModelParams::default(), &WideParams::default(), 0.95);
    for _ in 0..100 {
        e.evolve();
        e.observe(1_666.0);
    }
    let mut counts = [0u32; 8];
    e.forecast(&mut counts);
    assert!(counts[7] > 8 * 1_000, "{counts:?}");
    let header = Header {
        seq: 0,
        throwaway: 0,
        time_to_next_us: 0,
        sent_us: 0,
        heartbeat: false,
        app_limited: false,
        feedback: Some(Feedback::new(1, 0, &counts)),
    };
    let mut buf = Vec::new();
    wire::encode(&header, b"x", &mut buf);
    let now = Instant::from_millis(20);
    let mut wide = Connection::new(Config::wide(), Instant::ZERO).unwrap();
    wide.handle_datagram(now, &buf).unwrap();
    assert_eq!(wide.peer_forecast().unwrap(), &counts[..]);
    let mut paper = Connection::new(Config::default(), Instant::ZERO).unwrap();
    let err = paper.handle_datagram(now, &buf).unwrap_err();
    assert!(
        matches!(err, DatagramError::Rejected(Reject::ForecastCount)),
        "{err:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_belief_stays_a_distribution_and_the_forecast_monotone(
        steps in proptest::collection::vec((0u8..3, 0.0f64..3000.0), 1..60),
        confidence in 0.05f64..0.99,
    ) {
        let mut e = WideEstimator::new(&ModelParams::default(), &WideParams::default(), confidence);
        for (kind, k) in steps {
            e.evolve();
            match kind {
                0 => e.observe(k),
                1 => e.observe(0.0),
                _ => e.observe_at_least(k),
            }
            let p = e.model().probabilities();
            let total: f64 = p.iter().sum();
            prop_assert!((total - 1.0).abs() < 1e-9, "sum {}", total);
            prop_assert!(p.iter().all(|x| x.is_finite() && *x >= 0.0));
            let mut out = [0u32; 8];
            e.forecast(&mut out);
            let mut med = [0u32; 8];
            e.forecast_expected(&mut med);
            for h in 0..8 {
                prop_assert!(h == 0 || out[h] >= out[h - 1], "{:?}", out);
                prop_assert!(out[h] <= e.max_forecast(h + 1));
                prop_assert!(confidence < 0.5 || out[h] <= med[h], "{:?} {:?}", out, med);
            }
        }
    }

    #[test]
    fn a_censored_tick_never_lowers_the_mass_above_the_observed_rate(
        warm in proptest::collection::vec(0.0f64..2000.0, 0..20),
        k in 1.0f64..2000.0,
    ) {
        let sh = shared();
        let mut m = WideModel::new(sh.clone());
        for c in warm {
            m.evolve();
            m.observe(c);
        }
        m.evolve();
        let threshold = k.floor() / 0.02;
        let above = |m: &WideModel| -> f64 {
            m.probabilities()
                .iter()
                .enumerate()
                .filter(|(i, _)| sh.grid.rate(*i) >= threshold)
                .map(|(_, p)| p)
                .sum()
        };
        let before = above(&m);
        m.observe_at_least(k);
        prop_assert!(above(&m) >= before - 1e-12, "{} -> {}", before, above(&m));
    }
}
