//! The Saturator over the link model on a virtual clock: recording the paper's traces (both
//! directions at once, feedback over a separate path) reproduces them.

use std::sync::Arc;

use sprout_link::{testdata, Trace};
use sprout_testbed::saturator_check::{
    compare_seconds, simulate_recording, with_outage, SimulateOptions,
};

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
                let s = r.summary(122_000_000);
                eprintln!(
                    "{name} {} loss {loss} outage {outage}: within {}/{} ({:.1}%), total {:+.2}%, exact {:.3}, loss {:.3}, gap {} ms, low-backlog s {}",
                    r.dir().name(),
                    c.seconds_within,
                    c.seconds - c.outage_seconds,
                    100.0 * c.share_within,
                    100.0 * c.total_error,
                    c.exact_ms_share,
                    s.loss_rate,
                    s.longest_gap_ms,
                    s.low_backlog_seconds,
                );
                let bad: Vec<_> = c
                    .per_second
                    .iter()
                    .enumerate()
                    .filter(|(_, (o, r, out))| {
                        !out && ((*r as f64) - (*o as f64)).abs() > 0.05 * *o as f64
                    })
                    .map(|(i, x)| (i + 1, *x))
                    .collect();
                eprintln!("   bad seconds: {:?}", &bad[..bad.len().min(12)]);
            }
        }
    }
}
