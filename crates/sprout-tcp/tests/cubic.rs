//! CUBIC on a 12 Mbit/s link with a 100 ms RTT (BDP 100 segments) and a 100-packet queue: the
//! pipe holds ~200 segments. After each fast-recovery loss the window drops to 0.7 of its value
//! and then follows `W(t) = C (t - K)^3 + W_max` (C = 0.4, t from the start of congestion
//! avoidance).

use crate::common::{run, LossEvent, Run, Spec, MSS, PACKET};
use sprout_tcp::cc::Cubic;
use sprout_tcp::{CcKind, TcpEndpoint};

const C: f64 = 0.4;
const BETA: f64 = 0.7;
const STEADY_FROM_US: u64 = 4_000_000;

fn probe(e: &TcpEndpoint) -> [f64; 4] {
    let c = e
        .cc()
        .as_any()
        .downcast_ref::<Cubic>()
        .expect("a Cubic controller");
    [c.w_max_bytes(), c.k_s(), 0.0, 0.0]
}

fn cubic_run() -> Run {
    let mut spec = Spec::new(CcKind::Cubic);
    spec.one_way_delay_us = 50_000;
    spec.queue_limit_bytes = Some(100 * PACKET);
    spec.duration_us = 20_000_000;
    spec.probe = Some(probe);
    run(&spec)
}

/// The losses after the start-up transient.
fn steady_losses(r: &Run) -> Vec<&LossEvent> {
    r.loss_events
        .iter()
        .filter(|e| e.t_us > STEADY_FROM_US)
        .collect()
}

fn segs(bytes: u64) -> f64 {
    bytes as f64 / MSS as f64
}

#[test]
fn cubic_reduces_to_beta_times_the_window_and_updates_w_max() {
    let r = cubic_run();
    let steady = steady_losses(&r);
    assert!(steady.len() >= 2, "{} steady losses", steady.len());
    let (mut plain, mut fast_convergence) = (0, 0);
    let mut previous_w_max: Option<f64> = None;
    for e in &steady {
        let ratio = e.ssthresh_after as f64 / e.cwnd_before as f64;
        assert!(
            (BETA - 0.002..=BETA + 0.002).contains(&ratio),
            "{ratio}: {e:?}"
        );
        assert_eq!(e.cwnd_after, e.ssthresh_after);
        // W_max is the window at the loss, or (fast convergence) (1 + beta)/2 of it when the
        // loss came below the previous W_max.
        let w_max = r.sample_at(e.t_us + 1_000).extra[0];
        let before = e.cwnd_before as f64;
        if (w_max - before).abs() <= 1.0 * MSS as f64 {
            plain += 1;
        } else {
            assert!(
                (w_max - before * (1.0 + BETA) / 2.0).abs() <= 1.0 * MSS as f64,
                "W_max {w_max} for a loss at {before}"
            );
            assert!(previous_w_max.is_some_and(|p| before < p));
            fast_convergence += 1;
        }
        previous_w_max = Some(w_max);
    }
    assert!(
        plain >= 1 && fast_convergence >= 1,
        "{plain} plain, {fast_convergence} FC"
    );
}

#[test]
fn cubic_window_follows_the_cubic_function_after_a_loss() {
    let r = cubic_run();
    let steady = steady_losses(&r);
    let mut checked_epochs = 0;
    let mut checked_points = 0;
    let mut checked_convex = 0;
    for (i, e) in steady.iter().enumerate() {
        let end = steady.get(i + 1).map_or(r.end_us, |n| n.t_us);
        if r.timeouts.iter().any(|&t| t > e.t_us && t < end) {
            continue; // the epoch was cut short by a timeout
        }
        // Congestion avoidance (the cubic epoch) starts when fast recovery ends.
        let start = r
            .samples
            .iter()
            .find(|s| s.t_us > e.t_us && !s.in_recovery)
            .expect("recovery ends")
            .t_us;
        let w_max = r.sample_at(e.t_us + 1_000).extra[0] / MSS as f64;
        let cwnd_epoch = segs(e.ssthresh_after);
        // K = cbrt((W_max - cwnd_epoch) / C), = cbrt(W_max (1 - beta) / C) without fast
        // convergence.
        let k = ((w_max - cwnd_epoch) / C).cbrt();
        if (w_max - segs(e.cwnd_before)).abs() < 1.0 {
            let k_spec = (w_max * (1.0 - BETA) / C).cbrt();
            assert!((k - k_spec).abs() < 0.05, "K {k} vs {k_spec}");
        }
        for f in [0.1, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75] {
            let t = f * k;
            let at = start + (t * 1e6) as u64;
            if at + 300_000 > end {
                break;
            }
            let expected = C * (t - k).powi(3) + w_max;
            let observed = segs(r.sample_at(at).cwnd);
            let tolerance = (0.03 * expected).max(3.0);
            eprintln!(
                "epoch at {start} µs, W_max {w_max:.1}, K {k:.2} s: t = {t:.2} s, \
                 W(t) = {expected:.1}, cwnd = {observed:.1}"
            );
            assert!(
                (observed - expected).abs() <= tolerance,
                "t = {t:.2} s: cwnd {observed:.1} segments, W(t) = {expected:.1}"
            );
            checked_points += 1;
            if f > 1.0 {
                checked_convex += 1;
            }
        }
        checked_epochs += 1;
    }
    assert!(checked_epochs >= 2, "{checked_epochs} epochs checked");
    assert!(checked_points >= 8 && checked_convex >= 1);
}
