//! A flow held back by its receive window does not inflate its congestion window (Linux's
//! `tcp_is_cwnd_limited`, RFC 7661): on a 12 Mbit/s link with 50 ms each way (a pipe of 100
//! segments), a 64 KiB receive window keeps the flight at 45 segments with no queue. Without
//! the rule cwnd grew by every ACK for the whole run, and a loss then cut a window still far
//! above the receive window, so the flight never fell.

use crate::common::{run, Run, Spec, MSS};
use sprout_tcp::{CcKind, TcpConfig};

/// The receive window (bytes).
const RWND: u64 = 64 << 10;
/// Losses: one data segment each (µs).
const LOSSES_US: [u64; 2] = [6_000_000, 12_000_000];
const DURATION_US: u64 = 18_000_000;

fn limited(cc: CcKind) -> Run {
    let mut spec = Spec::new(cc);
    spec.tcp = TcpConfig {
        receive_window_bytes: RWND,
        ..TcpConfig::default()
    };
    spec.one_way_delay_us = 50_000;
    spec.duration_us = DURATION_US;
    spec.drop_data_at_us = LOSSES_US.to_vec();
    spec.sample_every_us = 10_000;
    run(&spec)
}

/// Largest and smallest flight over `[t0, t1)` (bytes).
fn flight_range(r: &Run, t0: u64, t1: u64) -> (u64, u64) {
    let f: Vec<u64> = r.samples_between(t0, t1).map(|s| s.in_flight).collect();
    (*f.iter().max().unwrap(), *f.iter().min().unwrap())
}

#[test]
fn a_receive_window_limited_flow_keeps_cwnd_near_its_flight_and_backs_off_on_loss() {
    // The flight the window allows: whole segments within 64 KiB.
    let w = RWND / MSS * MSS;
    for cc in CcKind::ALL {
        let r = limited(cc);
        let max_cwnd = r.samples.iter().map(|s| s.cwnd).max().unwrap();
        let (before_max, _) = flight_range(&r, 2_000_000, LOSSES_US[0]);
        let (_, after_first) = flight_range(&r, LOSSES_US[0], LOSSES_US[1]);
        let (_, after_second) = flight_range(&r, LOSSES_US[1], DURATION_US);
        eprintln!(
            "{cc:>8}: max cwnd {:.1} segments, flight before the losses {:.1}, lowest after \
             the first {:.1}, after the second {:.1} (window {:.1}); {} fast retransmits, {} \
             timeouts",
            max_cwnd as f64 / MSS as f64,
            before_max as f64 / MSS as f64,
            after_first as f64 / MSS as f64,
            after_second as f64 / MSS as f64,
            w as f64 / MSS as f64,
            r.sender.fast_retransmits,
            r.sender.timeouts,
        );
        assert_eq!(before_max, w, "{cc}: the receive window limits the flight");
        if cc == CcKind::Bbr {
            // BBR's window is its model's, 2 BtlBw RTprop plus three send quanta (two segments
            // each at this rate) once STARTUP (gain 2.89) is over: about twice the flight, not
            // inflated by ACKs.
            let steady = r.samples_between(2_000_000, DURATION_US).map(|s| s.cwnd);
            let max_steady = steady.max().unwrap();
            eprintln!(
                "     bbr: max cwnd after STARTUP {:.1} segments",
                max_steady as f64 / MSS as f64
            );
            assert!(max_cwnd <= 3 * w + 6 * MSS, "{cc}: cwnd {max_cwnd}");
            assert!(max_steady <= 2 * w + 6 * MSS, "{cc}: cwnd {max_steady}");
        } else {
            assert!(
                max_cwnd <= 2 * w,
                "{cc}: cwnd {max_cwnd} grew beyond twice the window {w}"
            );
        }
        match cc {
            // RFC 5681's ssthresh = FlightSize / 2 (LEDBAT: cwnd, at most the flight plus one
            // segment, halves): the flight halves at the first loss.
            CcKind::Reno | CcKind::Vegas | CcKind::Ledbat => {
                assert!(after_first <= w / 2 + MSS, "{cc}: flight {after_first}");
            }
            // A cwnd-based decrease (Cubic: 0.7 cwnd; Compound: the total window halves) of a
            // slow-start window of up to twice the flight may leave the flight at the window
            // after the first loss; the window is then not cwnd-limited and does not grow, so
            // the second loss brings the flight down.
            CcKind::Cubic | CcKind::Compound => {
                assert!(after_second < w, "{cc}: flight {after_second}");
            }
            // BBR does not reduce on loss beyond packet conservation for one round.
            _ => {}
        }
        assert_eq!(r.sender.fast_retransmits, 2, "{cc}: one recovery per loss");
        assert_eq!(r.sender.timeouts, 0, "{cc}");
    }
}
