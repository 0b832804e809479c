//! BBR v1 measures the bottleneck, paces at it, and keeps the queue small; the endpoint really
//! paces.

use crate::common::{mean, run, Run, Spec, MSS};
use sprout_core::Instant;
use sprout_tcp::cc::{Bbr, BbrMode};
use sprout_tcp::{CcKind, TcpConfig, TcpEndpoint};

const PROBE_BW: f64 = 2.0;

fn mode_code(m: BbrMode) -> f64 {
    match m {
        BbrMode::Startup => 0.0,
        BbrMode::Drain => 1.0,
        BbrMode::ProbeBw => PROBE_BW,
        BbrMode::ProbeRtt => 3.0,
    }
}

fn probe(e: &TcpEndpoint) -> [f64; 4] {
    let b = e
        .cc()
        .as_any()
        .downcast_ref::<Bbr>()
        .expect("a BBR controller");
    [
        b.btlbw_bytes_per_s(),
        b.pacing_gain(),
        mode_code(b.mode()),
        b.rtprop().map_or(0, |d| d.as_micros()) as f64,
    ]
}

fn bbr_run() -> (Spec, Run) {
    let mut spec = Spec::new(CcKind::Bbr);
    spec.probe = Some(probe);
    let r = run(&spec);
    (spec, r)
}

#[test]
fn bbr_pacing_rate_converges_to_the_bottleneck_rate() {
    let (spec, r) = bbr_run();
    let (t0, t1) = (5_000_000, 30_000_000);
    let bottleneck = spec.payload_rate_bytes_per_s();
    let probe_bw: Vec<_> = r
        .samples_between(t0, t1)
        .filter(|s| s.extra[2] == PROBE_BW)
        .collect();
    assert!(probe_bw.len() > 20_000, "mostly in PROBE_BW after 5 s");
    let pacing = mean(probe_bw.iter().map(|s| s.pacing.unwrap() as f64)) / bottleneck;
    let btlbw = mean(probe_bw.iter().map(|s| s.extra[0])) / bottleneck;
    eprintln!("PROBE_BW mean pacing rate {pacing:.3}, BtlBw {btlbw:.3} of the bottleneck");
    assert!(
        (0.9..=1.1).contains(&pacing),
        "pacing rate {pacing:.3} of the bottleneck"
    );
    assert!(
        (0.95..=1.05).contains(&btlbw),
        "BtlBw {btlbw:.3} of the bottleneck"
    );
    // The gain cycle: 1.25 and 0.75 phases around a pacing rate of BtlBw.
    for gain in [0.75, 1.0, 1.25] {
        assert!(
            probe_bw.iter().any(|s| s.extra[1] == gain),
            "no {gain} phase"
        );
    }
    let rtprop = r.samples.last().unwrap().extra[3];
    assert!(
        (40_000.0..=42_000.0).contains(&rtprop),
        "RTprop {rtprop} µs"
    );
    // cwnd = cwnd_gain (2) * BtlBw * RTprop + 3 send quanta (2 segments each at 12 Mbit/s).
    for s in &probe_bw {
        let target = 2.0 * s.extra[0] * s.extra[3] * 1e-6 + 6.0 * MSS as f64;
        let cwnd = s.cwnd as f64;
        assert!(
            (cwnd - target).abs() <= 0.03 * target,
            "cwnd {cwnd} vs {target}"
        );
    }
    // PROBE_RTT: cwnd 4 segments for at least 200 ms (and about one round more at most).
    let probe_rtt: Vec<_> = r.samples.iter().filter(|s| s.extra[2] == 3.0).collect();
    let floor = probe_rtt.iter().map(|s| s.cwnd).min().unwrap();
    assert_eq!(floor, 4 * MSS);
    let first = probe_rtt[0].t_us;
    let span = probe_rtt
        .iter()
        .take_while(|s| s.t_us < first + 1_000_000)
        .last()
        .unwrap()
        .t_us
        - first;
    assert!(
        (200_000..=400_000).contains(&span),
        "PROBE_RTT lasted {span} µs"
    );
    // All four states were visited; PROBE_RTT came about 10 s in.
    for code in [0.0, 1.0, PROBE_BW, 3.0] {
        assert!(
            r.samples.iter().any(|s| s.extra[2] == code),
            "state {code} never seen"
        );
    }
    let first_probe_rtt = r.samples.iter().find(|s| s.extra[2] == 3.0).unwrap().t_us;
    assert!((9_000_000..=11_000_000).contains(&first_probe_rtt));
    assert!(r.goodput_bytes_per_s() / bottleneck > 0.9);
}

#[test]
fn bbr_queue_stays_small_compared_with_cubic() {
    let (_, bbr) = bbr_run();
    let cubic = run(&Spec::new(CcKind::Cubic));
    let (t0, t1) = (5_000_000, 30_000_000);
    let q_bbr = bbr.mean_queue_packets(t0, t1);
    let q_cubic = cubic.mean_queue_packets(t0, t1);
    let d_bbr = bbr.mean_queue_delay_us(t0, t1) / 1000.0;
    let d_cubic = cubic.mean_queue_delay_us(t0, t1) / 1000.0;
    eprintln!(
        "mean queue: BBR {q_bbr:.1} packets ({d_bbr:.1} ms), Cubic {q_cubic:.1} packets \
         ({d_cubic:.1} ms)"
    );
    assert!(
        q_bbr < 0.2 * q_cubic,
        "BBR {q_bbr:.1} vs Cubic {q_cubic:.1} packets"
    );
    assert!(q_bbr < 15.0);
    assert!(bbr.drops.is_empty(), "BBR overflowed a 200-packet queue");
}

#[test]
fn bbr_endpoint_spaces_departures_by_the_pacing_rate() {
    let (_, r) = bbr_run();
    // One data segment per instant after start-up: pacing, not ACK-clocked bursts.
    assert_eq!(r.max_burst_after_5s, 1);
    // In PROBE_BW, departures are ~1 ms apart (1448 bytes at ~1.448 MB/s).
    let gaps: Vec<u64> = r
        .departures
        .windows(2)
        .filter(|w| w[0].0 > 5_000_000 && w[1].0 < 9_000_000)
        .map(|w| w[1].0 - w[0].0)
        .collect();
    let mut sorted = gaps.clone();
    sorted.sort_unstable();
    let median = sorted[sorted.len() / 2];
    assert!((950..=1050).contains(&median), "median gap {median} µs");
    assert!(*sorted.first().unwrap() >= 750, "gap {} µs", sorted[0]);
    // The same measure on ACK-clocked Cubic does see bursts.
    let cubic = run(&Spec::new(CcKind::Cubic));
    assert!(cubic.max_burst_after_5s >= 2);
}

#[test]
fn poll_transmit_waits_for_the_pacing_release_time() {
    let t = Instant::from_micros;
    let mut e = TcpEndpoint::new(TcpConfig::default(), CcKind::Bbr, t(0));
    e.set_bulk(true);
    // Before any RTT sample BBR paces at 2.885 * 10 segments per ms: 1448 bytes take 34.7 µs.
    assert!(e.poll_transmit(t(0)).is_some());
    assert!(
        e.poll_transmit(t(0)).is_none(),
        "the window allows it; pacing does not"
    );
    let release = e.poll_timeout().expect("a pacing deadline").as_micros();
    assert!(
        release > 0 && release < 1_000_000,
        "release at {release} µs, not the RTO"
    );
    assert_eq!(release, 35);
    e.handle_timeout(t(release - 1));
    assert!(e.poll_transmit(t(release - 1)).is_none());
    e.handle_timeout(t(release));
    let s = e.poll_transmit(t(release)).expect("released");
    assert_eq!(s.seq, 1448);
    // A non-pacing controller sends its whole initial window at once.
    let mut c = TcpEndpoint::new(TcpConfig::default(), CcKind::Cubic, t(0));
    c.set_bulk(true);
    assert_eq!(std::iter::from_fn(|| c.poll_transmit(t(0))).count(), 10);
    assert_eq!(
        c.poll_timeout(),
        Some(t(1_000_000)),
        "only the initial RTO is pending"
    );
}
