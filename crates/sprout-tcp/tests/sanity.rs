//! Whole-run sanity: every controller fills a 12 Mbit/s, 20 ms (one-way) constant link with a
//! 200-packet drop-tail queue over 30 s.

use crate::common::{run, Spec};
use sprout_tcp::CcKind;

#[test]
fn every_controller_uses_most_of_a_constant_link() {
    for cc in CcKind::ALL {
        let spec = Spec::new(cc);
        let r = run(&spec);
        let utilization = r.goodput_bytes_per_s() / spec.payload_rate_bytes_per_s();
        eprintln!(
            "{cc:>8}: utilization {:.3}, mean queue {:.1} pkts, mean RTT {:.1} ms, \
             fast retransmits {}, timeouts {}, drops {}, retransmitted {}",
            utilization,
            r.mean_queue_packets(5_000_000, 30_000_000),
            r.mean_rtt_us(5_000_000, 30_000_000) / 1000.0,
            r.sender.fast_retransmits,
            r.sender.timeouts,
            r.drops.len(),
            r.sender.retransmitted_segments,
        );
        assert!(
            utilization > 0.8,
            "{cc}: goodput is only {:.1}% of the link",
            utilization * 100.0
        );
        // In-order delivery covers what was acknowledged, and no more than was outstanding.
        let delivered = r.receiver.delivered_app_bytes;
        assert!(delivered >= r.sender.acked_bytes, "{cc}");
        assert!(
            delivered <= r.sender.acked_bytes + r.sender.in_flight_bytes,
            "{cc}"
        );
    }
}
