//! Synthetic traces.

use sprout_link::{constant_rate_trace, SyntheticLink, TraceError};

#[test]
fn long_synthetic_trace_is_plausible() {
    let t = SyntheticLink {
        seed: 11,
        duration_s: 600.0,
        ..SyntheticLink::default()
    }
    .generate("synthetic");
    assert_eq!(t.name(), "synthetic");
    assert_eq!(t.period_ms(), 600_000);
    let rate = t.len() as f64 / 600.0;
    assert!((100.0..900.0).contains(&rate), "mean rate {rate} packets/s");
    let ops = t.opportunities_ms();
    let outages = ops.windows(2).filter(|w| w[1] - w[0] >= 200).count();
    assert!(outages >= 3, "only {outages} gaps of 200 ms or more");
    // Never faster than the clamp allows on average over a second.
    let max_per_s = ops
        .chunk_by(|a, b| a / 1000 == b / 1000)
        .map(|c| c.len())
        .max()
        .unwrap();
    assert!(max_per_s < 1200, "{max_per_s} packets in one second");
}

#[test]
fn same_seed_same_trace_different_seed_different_trace() {
    let a = SyntheticLink {
        seed: 5,
        duration_s: 30.0,
        ..SyntheticLink::default()
    };
    let b = SyntheticLink {
        seed: 6,
        ..a.clone()
    };
    assert_eq!(a.generate("x"), a.generate("x"));
    assert_ne!(
        a.generate("x").opportunities_ms(),
        b.generate("x").opportunities_ms()
    );
}

#[test]
fn generation_is_stable_across_platforms_and_versions() {
    // Golden values: if these change, traces generated from a seed are no longer reproducible.
    let t = SyntheticLink {
        seed: 42,
        duration_s: 20.0,
        ..SyntheticLink::default()
    }
    .generate("g");
    let checksum = t
        .opportunities_ms()
        .iter()
        .fold(0u64, |h, &x| h.wrapping_mul(1_000_003).wrapping_add(x));
    println!("len {} checksum {checksum}", t.len());
    assert_eq!((t.len(), checksum), GOLDEN);
}

const GOLDEN: (usize, u64) = (15930, 18294097344556502840);

#[test]
fn bad_parameters_do_not_panic() {
    for link in [
        SyntheticLink {
            duration_s: f64::NAN,
            ..SyntheticLink::default()
        },
        SyntheticLink {
            duration_s: 0.0,
            ..SyntheticLink::default()
        },
        SyntheticLink {
            duration_s: 1.0,
            start_rate: -5.0,
            outage_escape_rate: 0.0,
            ..SyntheticLink::default()
        },
        SyntheticLink {
            duration_s: 1.0,
            sigma: f64::INFINITY,
            max_rate: 1e9,
            ..SyntheticLink::default()
        },
    ] {
        let t = link.generate("bad");
        assert!(!t.is_empty());
        assert!(t.opportunities_ms().windows(2).all(|w| w[0] <= w[1]));
    }
    // Starting at rate 0 with no escape: a single closing opportunity.
    let t = SyntheticLink {
        duration_s: 2.0,
        start_rate: 0.0,
        outage_escape_rate: 0.0,
        ..SyntheticLink::default()
    }
    .generate("dead");
    assert_eq!(t.opportunities_ms(), &[2000]);
}

#[test]
fn constant_rate_traces() {
    let t = constant_rate_trace("12mbps", 12.0, 1.0).unwrap();
    assert_eq!(t.len(), 1000);
    assert_eq!(t.opportunities_ms()[0], 1);
    assert_eq!(t.period_ms(), 1000);
    assert!(t.opportunities_ms().windows(2).all(|w| w[1] - w[0] == 1));
    assert!((t.mean_capacity_kbps() - 12_000.0).abs() < 1e-9);

    let t = constant_rate_trace("24mbps", 24.0, 2.0).unwrap();
    assert_eq!(t.len(), 4000);
    assert_eq!(&t.opportunities_ms()[..4], &[1, 1, 2, 2]);
    assert_eq!(t.period_ms(), 2000);

    let t = constant_rate_trace("slow", 0.6, 10.0).unwrap(); // 50 per second, every 20 ms
    assert_eq!(t.len(), 500);
    assert!(t
        .opportunities_ms()
        .iter()
        .enumerate()
        .all(|(i, &x)| x == 20 * (i as u64 + 1)));
    assert!((t.mean_capacity_kbps() - 600.0).abs() < 1e-9);

    for (rate, dur) in [
        (0.0, 1.0),
        (12.0, 0.0),
        (f64::NAN, 1.0),
        (-3.0, 1.0),
        (0.001, 1.0),
    ] {
        let e = constant_rate_trace("none", rate, dur).unwrap_err();
        assert!(matches!(e, TraceError::Empty { .. }), "{rate} {dur}: {e:?}");
    }
}
