//! The wide forecast's tables ([`sprout_core::wide_mixture`]) against the exact value-by-value
//! computation on beliefs the receivers really held: recorded (`sprout_sim::recorded`) along a
//! stepwise link, the same with outages, and constant links from 1 Mbit/s to 1 Gbit/s, both
//! the loaded direction and the idle one. Every answer must be the exact quantile of a level
//! within `ERROR_BOUND` of the one asked, at every horizon, for the cautious (5%) and the
//! median forecast.

use std::sync::Arc;

use sprout_core::time::Duration;
use sprout_core::wide_forecast::WideForecast;
use sprout_core::wide_mixture::ERROR_BOUND;
use sprout_core::{Config, EstimatorKind, WideEstimator};
use sprout_link::synthetic::OutageOverlay;
use sprout_link::{constant_rate_trace, StepwiseLink, Trace};
use sprout_sim::recorded::{record, Direction, RecordOptions};

/// Records `seconds` of the link (both ways the same trace) and checks 8 beliefs of each
/// direction, evenly spaced; returns the worst level error.
fn check_link(name: &str, trace: Trace, seconds: u64, f: &WideForecast) -> f64 {
    let trace = Arc::new(trace);
    let options = RecordOptions {
        duration: Duration::from_secs(seconds),
        record_from: Duration::from_millis(500),
        every: (seconds * 50 / 8).max(1) as u32,
        ..RecordOptions::default()
    };
    let rec = record(trace.clone(), trace, &options).expect("recording");
    let mut worst = 0.0f64;
    for d in Direction::ALL {
        let mut checked = 0;
        for s in rec.of(d) {
            let p = s.receiver.estimator().wide_belief().expect("a wide belief");
            for q in [0.05, 0.5] {
                let e = f.table_level_error(p, q);
                assert!(e < ERROR_BOUND, "{name} {d:?} at {:?}, q {q}: {e}", s.at);
                worst = worst.max(e);
            }
            checked += 1;
        }
        assert!(checked >= 7, "{name} {d:?}: {checked} beliefs");
    }
    worst
}

#[test]
fn recorded_beliefs_are_forecast_within_the_bound_on_every_link_kind() {
    let config = Config::wide();
    let EstimatorKind::Wide(ref wide) = config.estimator else {
        panic!("Config::wide() is not the wide model");
    };
    let estimator = WideEstimator::new(&config.model, wide, config.confidence);
    let f = estimator.forecaster();
    let step = StepwiseLink {
        seed: 3,
        duration_s: 8.0,
        ..StepwiseLink::default()
    }
    .generate("stepwise")
    .expect("stepwise trace");
    let (holed, outages) = OutageOverlay {
        seed: 7,
        probability_per_s: 0.3,
        mean_length_s: 1.0,
    }
    .apply(&step);
    assert!(!outages.is_empty(), "the overlay made no outage");
    let mut links = vec![("stepwise", step, 8), ("stepwise+outages", holed, 8)];
    for mbit in [1.0, 100.0, 1000.0] {
        let t = constant_rate_trace(format!("c{mbit}"), mbit, 3.0).expect("constant trace");
        links.push(("constant", t, 3));
    }
    for (name, trace, seconds) in links {
        let worst = check_link(name, trace, seconds, f);
        eprintln!("{name}: worst level error {worst:.2e} (bound {ERROR_BOUND:.2e})");
    }
}
