//! Vegas keeps between alpha = 2 and beta = 4 of its segments queued at the bottleneck, whatever
//! the path's BDP, and so never fills a large drop-tail buffer.

use crate::common::{run, Spec, PACKET};
use sprout_tcp::CcKind;

#[test]
fn vegas_settles_with_two_to_four_segments_queued() {
    for one_way_delay_us in [20_000, 50_000] {
        let mut spec = Spec::new(CcKind::Vegas);
        spec.one_way_delay_us = one_way_delay_us;
        spec.queue_limit_bytes = Some(200 * PACKET);
        spec.duration_us = 30_000_000;
        let r = run(&spec);
        let (t0, t1) = (10_000_000, 30_000_000);
        let queued = r.mean_queue_packets(t0, t1);
        let max_queued = r
            .samples_between(t0, t1)
            .map(|s| s.queue_packets)
            .max()
            .unwrap_or(0);
        // The same from the sender's side: RTT inflation times the packet rate.
        let min_rtt = r.rtts.iter().map(|&(_, rtt)| rtt).min().unwrap() as f64;
        let inflation = (r.mean_rtt_us(t0, t1) - min_rtt) * 1e-6 * spec.packets_per_s();
        let utilization = r.goodput_bytes_per_s() / spec.payload_rate_bytes_per_s();
        eprintln!(
            "one-way {one_way_delay_us} µs: mean queue {queued:.2} packets (max {max_queued}), \
             RTT inflation {inflation:.2} packets, utilization {utilization:.3}"
        );
        assert!(
            (1.5..=4.5).contains(&queued),
            "mean queue {queued:.2} packets"
        );
        assert!(max_queued <= 6, "queue reached {max_queued} packets");
        assert!(
            (1.5..=4.5).contains(&inflation),
            "RTT inflation {inflation:.2}"
        );
        assert!(
            r.drops.is_empty(),
            "Vegas should not overflow a 200-packet queue"
        );
        assert!(utilization > 0.9, "utilization {utilization:.3}");
    }
}

#[test]
fn vegas_sheds_its_queue_when_the_bottleneck_slows_down() {
    // 1000 packets/s for 15 s, then 500 packets/s: the window that kept 3 segments queued now
    // keeps ~23 queued, and Vegas must come down one segment per RTT to 2-4 again.
    let mut ms: Vec<u64> = (1..=15_000).collect();
    ms.extend((1..=7_500).map(|i| 15_000 + 2 * i));
    let mut spec = Spec::new(CcKind::Vegas);
    spec.trace_ms = Some(ms);
    spec.duration_us = 30_000_000;
    let r = run(&spec);
    let before = r.mean_queue_packets(10_000_000, 15_000_000);
    let just_after = r
        .samples_between(15_000_000, 16_000_000)
        .map(|s| s.queue_packets)
        .max()
        .unwrap();
    let settled = r.mean_queue_packets(24_000_000, 30_000_000);
    eprintln!("queue: {before:.2} before, up to {just_after} after the drop, {settled:.2} settled");
    assert!((1.5..=4.5).contains(&before));
    assert!(just_after >= 15, "the rate drop builds a queue");
    assert!(
        (1.5..=4.5).contains(&settled),
        "settled at {settled:.2} packets"
    );
    assert!(r.drops.is_empty());
}
