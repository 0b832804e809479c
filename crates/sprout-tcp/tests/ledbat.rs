//! LEDBAT steers the queueing delay it causes towards its 100 ms target when the buffer is large
//! enough to hold that much (here 267 packets, ~267 ms at 12 Mbit/s).

use crate::common::{run, Spec, PACKET};
use sprout_tcp::cc::Ledbat;
use sprout_tcp::{CcKind, TcpEndpoint};

fn probe(e: &TcpEndpoint) -> [f64; 4] {
    let l = e
        .cc()
        .as_any()
        .downcast_ref::<Ledbat>()
        .expect("a LEDBAT controller");
    [
        l.queuing_delay().map_or(0, |d| d.as_micros()) as f64,
        0.0,
        0.0,
        0.0,
    ]
}

#[test]
fn ledbat_queueing_delay_settles_near_its_target() {
    let mut spec = Spec::new(CcKind::Ledbat);
    spec.queue_limit_bytes = Some(400_000);
    spec.duration_us = 45_000_000;
    spec.probe = Some(probe);
    let r = run(&spec);
    let (t0, t1) = (25_000_000, 45_000_000);
    let mean_delay_ms = r.mean_queue_delay_us(t0, t1) / 1000.0;
    let max_delay_ms = r
        .queue_delays
        .iter()
        .filter(|&&(t, _)| t >= t0)
        .map(|&(_, d)| d)
        .max()
        .unwrap() as f64
        / 1000.0;
    let estimate_ms = r.samples_between(t0, t1).last().unwrap().extra[0] / 1000.0;
    let utilization = r.goodput_bytes_per_s() / spec.payload_rate_bytes_per_s();
    eprintln!(
        "queueing delay: mean {mean_delay_ms:.1} ms, max {max_delay_ms:.1} ms; LEDBAT's estimate \
         {estimate_ms:.1} ms; utilization {utilization:.3}; queue limit {} packets",
        400_000 / PACKET
    );
    assert!(
        (80.0..=120.0).contains(&mean_delay_ms),
        "mean queueing delay {mean_delay_ms:.1} ms, target 100 ms"
    );
    assert!(
        max_delay_ms <= 125.0,
        "queueing delay reached {max_delay_ms:.1} ms"
    );
    assert!((80.0..=120.0).contains(&estimate_ms));
    assert!(r.drops.is_empty() && r.sender.fast_retransmits == 0);
    assert!(utilization > 0.9);
}

#[test]
fn ledbat_backs_off_from_a_too_long_queue() {
    // A 100 ms target cannot be met below a 60-packet buffer (60 ms): LEDBAT then behaves
    // like a loss-based controller, halving on each loss, yet still fills the link.
    let mut spec = Spec::new(CcKind::Ledbat);
    spec.queue_limit_bytes = Some(60 * PACKET);
    spec.duration_us = 30_000_000;
    let r = run(&spec);
    assert!(r.sender.fast_retransmits >= 1);
    for e in r.loss_events.iter().filter(|e| e.t_us > 5_000_000) {
        let ratio = e.cwnd_after as f64 / e.cwnd_before as f64;
        assert!((0.45..=0.55).contains(&ratio), "{e:?}");
    }
    assert!(r.goodput_bytes_per_s() / spec.payload_rate_bytes_per_s() > 0.85);
}
