//! Compound TCP on a 12 Mbit/s link with a 100 ms RTT (BDP 100) and a 100-packet queue: after
//! each loss the total window halves to about the BDP, so the queue is short and the
//! delay-based window `dwnd` grows; once the queue exceeds gamma = 30 packets dwnd collapses to
//! 0 and the Reno part carries on alone to the next loss.

use crate::common::{run, Spec, MSS, PACKET};
use sprout_tcp::cc::Compound;
use sprout_tcp::{CcKind, TcpEndpoint};

const GAMMA: f64 = 30.0;

fn probe(e: &TcpEndpoint) -> [f64; 4] {
    let c = e
        .cc()
        .as_any()
        .downcast_ref::<Compound>()
        .expect("a Compound controller");
    [
        c.dwnd_bytes() as f64 / MSS as f64,
        c.loss_window_bytes() as f64 / MSS as f64,
        c.last_diff_segments().unwrap_or(-1.0),
        0.0,
    ]
}

#[test]
fn compound_dwnd_grows_on_a_short_queue_and_collapses_past_gamma() {
    let mut spec = Spec::new(CcKind::Compound);
    spec.one_way_delay_us = 50_000;
    spec.queue_limit_bytes = Some(100 * PACKET);
    spec.duration_us = 40_000_000;
    spec.probe = Some(probe);
    let r = run(&spec);
    let losses: Vec<_> = r
        .loss_events
        .iter()
        .filter(|e| e.t_us > 4_000_000)
        .collect();
    let mut cycles = 0;
    for pair in losses.windows(2) {
        let (from, to) = (pair[0].t_us, pair[1].t_us);
        if r.timeouts.iter().any(|&t| t > from && t < to) {
            continue;
        }
        let ca: Vec<_> = r
            .samples_between(from, to)
            .skip_while(|s| s.in_recovery)
            .collect();
        let peak = ca
            .iter()
            .max_by(|a, b| a.extra[0].total_cmp(&b.extra[0]))
            .unwrap();
        let dwnd_peak = peak.extra[0];
        eprintln!(
            "cycle {from}..{to} µs: dwnd peaks at {dwnd_peak:.1} segments at {} µs with {} \
             packets queued",
            peak.t_us, peak.queue_packets
        );
        // dwnd grew substantially, and it grew while the queue was short: diff measures the
        // queue one round late (the round's minimum RTT), and the queue grows by ~5 packets per
        // round at peak dwnd growth, hence the allowance of 8 packets.
        assert!(dwnd_peak >= 10.0, "dwnd peak {dwnd_peak:.1} segments");
        let steps: Vec<_> = ca
            .windows(2)
            .filter(|w| w[1].extra[0] != w[0].extra[0])
            .collect();
        let increases: Vec<_> = steps
            .iter()
            .filter(|w| w[1].extra[0] > w[0].extra[0])
            .collect();
        assert!(increases.len() >= 5);
        let short = increases
            .iter()
            .filter(|w| (w[1].queue_packets as f64) < GAMMA + 8.0)
            .count();
        assert!(
            short as f64 >= 0.9 * increases.len() as f64,
            "only {short} of {} dwnd increases with a short queue",
            increases.len()
        );
        // The rule itself: dwnd grows iff diff < gamma, shrinks iff diff >= gamma.
        for w in &steps {
            let diff = w[1].extra[2];
            if w[1].extra[0] > w[0].extra[0] {
                assert!(diff < GAMMA, "dwnd grew with diff {diff:.1}");
            } else {
                assert!(diff >= GAMMA, "dwnd shrank with diff {diff:.1}");
            }
        }
        // Once the queue is well past gamma, dwnd is back to 0.
        let long_queue: Vec<_> = ca
            .iter()
            .filter(|s| s.queue_packets as f64 > GAMMA + 15.0)
            .collect();
        assert!(!long_queue.is_empty());
        let zero = long_queue.iter().filter(|s| s.extra[0] == 0.0).count();
        assert!(
            zero as f64 >= 0.95 * long_queue.len() as f64,
            "dwnd > 0 in {} of {} long-queue samples",
            long_queue.len() - zero,
            long_queue.len()
        );
        assert_eq!(
            ca.last().unwrap().extra[0],
            0.0,
            "dwnd is 0 at the next loss"
        );
        // The loss halves the total window.
        let ratio = pair[1].cwnd_after as f64 / pair[1].cwnd_before as f64;
        assert!((0.48..=0.52).contains(&ratio), "{:?}", pair[1]);
        cycles += 1;
    }
    assert!(cycles >= 1, "no clean congestion-avoidance cycle");
}
