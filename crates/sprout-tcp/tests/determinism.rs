//! Same inputs, same outputs: a run is a pure function of its configuration.

use crate::common::{run, Run, Spec, PACKET};
use sprout_tcp::CcKind;

fn lossy(cc: CcKind, seed: u64) -> Run {
    let mut spec = Spec::new(cc);
    spec.queue_limit_bytes = Some(40 * PACKET);
    spec.data_loss = 0.005;
    spec.ack_loss = 0.005;
    spec.loss_seed = seed;
    spec.duration_us = 12_000_000;
    run(&spec)
}

#[test]
fn identical_inputs_give_identical_runs() {
    for cc in CcKind::ALL {
        let a = lossy(cc, 11);
        let b = lossy(cc, 11);
        assert_eq!(a.sender, b.sender, "{cc}: sender stats");
        assert_eq!(a.receiver, b.receiver, "{cc}: receiver stats");
        assert_eq!(a.samples, b.samples, "{cc}: cwnd and queue traces");
        assert_eq!(a.departures, b.departures, "{cc}: departures");
        assert_eq!(a.rtts, b.rtts, "{cc}: RTT samples");
        assert_eq!(a.fwd, b.fwd, "{cc}: link counters");
        // The comparison has teeth: other losses give another run.
        let c = lossy(cc, 12);
        assert_ne!(
            a.departures, c.departures,
            "{cc}: the loss seed changed nothing"
        );
    }
}
