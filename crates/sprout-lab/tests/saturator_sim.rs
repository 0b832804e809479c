//! The Saturator over the link model on a virtual clock: recording the paper's traces (both
//! directions at once, feedback over a separate path) reproduces them.

use std::sync::Arc;

use sprout_core::time::Instant;
use sprout_lab::saturator_check::{
    compare_seconds, simulate_recording, with_outage, SimulateOptions,
};
use sprout_link::{testdata, Trace};

#[test]
fn simulated_recordings_of_the_paper_traces() {
    let Some(dir) = testdata::require("traces") else {
        return;
    };
    let pairs = Trace::find_pairs(&dir).unwrap();
    for (name, up, down) in pairs {
        let up = Arc::new(Trace::load(&up).unwrap());
        let down = Arc::new(Trace::load(&down).unwrap());
        for (loss, outage) in [(0.0, 0u64), (0.05, 10_000u64)] {
            let up_r = Arc::new(with_outage(&up, 56_000, outage).unwrap());
            let down_r = Arc::new(with_outage(&down, 56_000, outage).unwrap());
            let mut o = SimulateOptions {
                duration_us: 122_000_000,
                start_us: 300_000,
                ..SimulateOptions::default()
            };
            o.link.loss = loss;
            let rec = simulate_recording(up_r.clone(), down_r.clone(), &o);
            for (r, t) in [(&rec.up, &up_r), (&rec.down, &down_r)] {
                let ms: Vec<i64> = r.arrivals_ms().iter().map(|&x| i64::from(x)).collect();
                let c = compare_seconds(&ms, t.opportunities_ms(), 1000, 120);
                let s = r.summary(Instant::from_micros(122_000_000));
                eprintln!(
                    "{name} {} loss {loss} outage {outage}: within {}/{} ({:.1}%), \
                     total {:+.2}%, exact {:.3}, loss {:.3}, gap {} ms, low-backlog s {}",
                    r.dir().as_str(),
                    c.seconds_within,
                    c.seconds - c.outage_seconds,
                    100.0 * c.share_within,
                    100.0 * c.total_error,
                    c.exact_ms_share,
                    s.loss_rate,
                    s.longest_gap_ms,
                    s.low_backlog_seconds,
                );
                assert!(
                    c.per_second_ok,
                    "{name} {}: {:?}",
                    r.dir().as_str(),
                    c.per_second
                );
                assert!(c.total_ok, "{name} {}: {c:?}", r.dir().as_str());
                // On a virtual clock the recording is the trace itself, to the millisecond.
                assert_eq!(c.exact_ms_share, 1.0);
                assert_eq!(c.recorded_total, c.replayed_total);
                if loss > 0.0 {
                    assert!((s.loss_rate - loss).abs() < 0.01, "{}", s.loss_rate);
                    assert!(s.longest_gap_ms >= outage, "{}", s.longest_gap_ms);
                } else {
                    assert_eq!(s.lost, 0);
                }
                assert_eq!((s.duplicates, s.strays, s.malformed), (0, 0, 0));
            }
        }
    }
}

/// Without the paper's traces: the paper's own link model (outages included), 60 s each way.
#[test]
fn simulated_recording_of_the_papers_link_model() {
    let gen = |seed| {
        Arc::new(
            sprout_link::SyntheticLink {
                seed,
                duration_s: 62.0,
                ..sprout_link::SyntheticLink::default()
            }
            .generate(format!("synthetic-{seed}")),
        )
    };
    let (up, down) = (gen(3), gen(4));
    let o = SimulateOptions {
        duration_us: 61_000_000,
        start_us: 300_000,
        ..SimulateOptions::default()
    };
    let rec = simulate_recording(up.clone(), down.clone(), &o);
    for (r, t) in [(&rec.up, &up), (&rec.down, &down)] {
        let ms: Vec<i64> = r.arrivals_ms().iter().map(|&x| i64::from(x)).collect();
        let c = compare_seconds(&ms, t.opportunities_ms(), 1000, 59);
        assert!(c.replayed_total > 10_000, "{}", c.replayed_total);
        assert!(c.outage_seconds > 0, "the model has outages");
        assert!(c.per_second_ok && c.total_ok, "{c:?}");
        assert_eq!(c.exact_ms_share, 1.0);
        // The window never collapsed: the senders kept between the marks after the start.
        let s = r.summary(Instant::from_micros(o.duration_us));
        assert!(s.low_backlog_seconds <= 2, "{}", s.low_backlog_seconds);
    }
    assert!(
        rec.up_sender.stats().probes > 0,
        "outages are probed through"
    );
}
