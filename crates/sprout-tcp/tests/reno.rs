//! NewReno on a 12 Mbit/s, 20 ms (one-way) link with a 60-packet drop-tail queue: the pipe holds
//! 40 + 60 = 100 segments, so the steady state is a sawtooth between 50 and 100 segments with
//! one drop per cycle.

use crate::common::{run, Run, Spec, MSS, PACKET};
use sprout_tcp::CcKind;

/// Losses before this are slow-start overshoot and its aftermath (µs).
const STEADY_FROM_US: u64 = 3_000_000;

fn sawtooth() -> Run {
    let mut spec = Spec::new(CcKind::Reno);
    spec.queue_limit_bytes = Some(60 * PACKET);
    spec.duration_us = 30_000_000;
    run(&spec)
}

/// First sample at or after `t` that is out of fast recovery.
fn recovery_exit_after(r: &Run, t: u64) -> u64 {
    r.samples
        .iter()
        .find(|s| s.t_us > t && !s.in_recovery)
        .expect("recovery ends")
        .t_us
}

#[test]
fn reno_halves_its_window_on_a_loss() {
    let r = sawtooth();
    let steady: Vec<_> = r
        .loss_events
        .iter()
        .filter(|e| e.t_us > STEADY_FROM_US)
        .collect();
    assert!(steady.len() >= 5, "{} steady-state losses", steady.len());
    for e in &steady {
        // RFC 5681 eq. (4): ssthresh = max(FlightSize / 2, 2 SMSS).
        assert_eq!(
            e.ssthresh_after,
            (e.flight_before / 2).max(2 * MSS),
            "{e:?}"
        );
        let ratio = e.cwnd_after as f64 / e.cwnd_before as f64;
        assert!((0.49..=0.51).contains(&ratio), "cwnd ratio {ratio}: {e:?}");
        // The pipe holds 100 segments: the window at the loss is just above that.
        let before = e.cwnd_before as f64 / MSS as f64;
        assert!((98.0..=104.0).contains(&before), "cwnd at loss {before}");
        // Fast recovery ends with cwnd = ssthresh.
        let exit = recovery_exit_after(&r, e.t_us);
        assert_eq!(r.sample_at(exit).cwnd, e.ssthresh_after);
    }
    assert!(
        r.timeouts.iter().all(|&t| t < STEADY_FROM_US),
        "timeouts in steady state: {:?}",
        r.timeouts
    );
}

#[test]
fn reno_grows_one_segment_per_rtt_in_congestion_avoidance() {
    let r = sawtooth();
    let steady: Vec<_> = r
        .loss_events
        .iter()
        .filter(|e| e.t_us > STEADY_FROM_US)
        .collect();
    let mut checked = 0;
    for pair in steady.windows(2) {
        let t0 = recovery_exit_after(&r, pair[0].t_us) + 200_000;
        let t1 = pair[1].t_us - 1_000;
        let grown = (r.sample_at(t1).cwnd - r.sample_at(t0).cwnd) as f64 / MSS as f64;
        let rounds = r.rounds_between(t0, t1);
        let per_rtt = grown / rounds;
        eprintln!("CA {t0}..{t1} µs: +{grown} segments over {rounds:.1} RTTs = {per_rtt:.3}/RTT");
        assert!(grown >= 30.0, "a long congestion-avoidance phase: +{grown}");
        assert!(
            (0.8..=1.2).contains(&per_rtt),
            "growth {per_rtt:.3} segments per RTT, expected 1 ± 20%"
        );
        checked += 1;
    }
    assert!(checked >= 4);
}
