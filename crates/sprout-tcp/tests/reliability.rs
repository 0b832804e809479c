//! Reliability: complete in-order delivery under loss, the retransmission timer, fast
//! retransmit with NewReno recovery, and the receiver's ACK policy.

use std::collections::BTreeSet;

use crate::common::{self, run, Spec, MSS, PACKET};
use proptest::prelude::*;
use sprout_core::{Duration, Instant};
use sprout_tcp::{CcKind, Segment, TcpConfig, TcpEndpoint};

fn drain(e: &mut TcpEndpoint, now_us: u64) -> Vec<Segment> {
    std::iter::from_fn(|| e.poll_transmit(Instant::from_micros(now_us))).collect()
}

fn data(seq: u64, len: u32, sent_us: u64) -> Segment {
    Segment {
        seq,
        len,
        ack: None,
        sent: Instant::from_micros(sent_us),
        echo: None,
        one_way_delay: None,
        retransmission: false,
        syn: false,
        ecn: sprout_tcp::segment::SegmentEcn::default(),
    }
}

fn ack(ack: u64, echo_us: u64) -> Segment {
    Segment {
        seq: 0,
        len: 0,
        ack: Some(ack),
        sent: Instant::from_micros(echo_us + 20_000),
        echo: Some(Instant::from_micros(echo_us)),
        one_way_delay: Some(Duration::from_millis(20)),
        retransmission: false,
        syn: false,
        ecn: sprout_tcp::segment::SegmentEcn::default(),
    }
}

/// A finite transfer over a short queue plus random data and ACK loss.
fn lossy_transfer(cc: CcKind, bytes: u64, queue_packets: u64, loss: f64, seed: u64) -> common::Run {
    let mut spec = Spec::new(cc);
    spec.transfer_bytes = Some(bytes);
    spec.queue_limit_bytes = Some(queue_packets * PACKET);
    spec.data_loss = loss;
    spec.ack_loss = loss;
    spec.loss_seed = seed;
    spec.duration_us = 600_000_000;
    run(&spec)
}

fn assert_complete(r: &common::Run, bytes: u64, what: &str) {
    assert_eq!(r.sender.acked_bytes, bytes, "{what}: not all acknowledged");
    assert_eq!(
        r.receiver.delivered_app_bytes, bytes,
        "{what}: delivered count"
    );
    let max_end = r
        .departures
        .iter()
        .map(|&(_, seq, len, _)| seq + u64::from(len))
        .max()
        .unwrap();
    assert_eq!(max_end, bytes, "{what}: sent beyond the data written");
    assert!(r.end_us < 600_000_000, "{what}: did not finish");
}

#[test]
fn every_byte_arrives_in_order_exactly_once_under_loss() {
    let bytes = 2_000_000;
    for cc in CcKind::ALL {
        let r = lossy_transfer(cc, bytes, 15, 0.01, 3);
        eprintln!(
            "{cc}: {:.1} s, {} queue drops, {} random losses, {} retransmissions, {} timeouts, \
             {} duplicates received",
            r.end_us as f64 * 1e-6,
            r.drops.len(),
            r.random_losses,
            r.sender.retransmitted_segments,
            r.sender.timeouts,
            r.receiver.duplicate_segments_received
        );
        assert_complete(&r, bytes, cc.name());
        assert!(r.random_losses > 0 && r.sender.retransmitted_segments > 0);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn transfers_complete_whatever_the_losses(
        cc in prop::sample::select(CcKind::ALL.to_vec()),
        kb in 1u64..400,
        queue in 3u64..60,
        loss in 0.0f64..0.08,
        seed in any::<u64>(),
    ) {
        let bytes = kb * 1000 + seed % 1000;
        let r = lossy_transfer(cc, bytes, queue, loss, seed);
        assert_complete(&r, bytes, cc.name());
    }

    /// Segments of varied lengths arriving in any order, some twice: every ACK carries the
    /// contiguous prefix received so far, each data segment is acknowledged at once, and the
    /// application counter only ever covers that prefix.
    #[test]
    fn receiver_acks_the_contiguous_prefix(
        lens in prop::collection::vec(1u32..=1448, 1..40),
        order in prop::collection::vec(any::<prop::sample::Index>(), 1..120),
    ) {
        let mut starts = vec![0u64];
        for &l in &lens {
            starts.push(starts.last().unwrap() + u64::from(l));
        }
        let total = *starts.last().unwrap();
        // Deliver every segment at least once, plus the random extra order.
        let mut arrivals: Vec<usize> = order.iter().map(|i| i.index(lens.len())).collect();
        arrivals.extend(0..lens.len());
        let mut rx = TcpEndpoint::new(TcpConfig::default(), CcKind::Reno, Instant::from_micros(0));
        let mut have = BTreeSet::new();
        for (k, &i) in arrivals.iter().enumerate() {
            let now = 1_000 * k as u64;
            rx.handle_segment(Instant::from_micros(now), &data(starts[i], lens[i], now));
            have.insert(i);
            let prefix = starts[(0..lens.len()).find(|j| !have.contains(j)).unwrap_or(lens.len())];
            let acks = drain(&mut rx, now);
            prop_assert_eq!(acks.len(), 1);
            prop_assert_eq!(acks[0].ack, Some(prefix));
            prop_assert!(!acks[0].is_data());
            prop_assert_eq!(rx.stats().delivered_app_bytes, prefix);
        }
        prop_assert_eq!(rx.stats().delivered_app_bytes, total);
        prop_assert_eq!(rx.out_of_order_bytes(), 0);
    }
}

#[test]
fn rto_fires_after_silence_and_backs_off_exponentially() {
    let mut e = TcpEndpoint::new(TcpConfig::default(), CcKind::Reno, Instant::from_micros(0));
    e.set_bulk(true);
    assert_eq!(drain(&mut e, 0).len(), 10);
    let mut fired = Vec::new();
    for _ in 0..8 {
        let t = e
            .poll_timeout()
            .map(Instant::as_micros)
            .expect("the retransmission timer runs");
        e.handle_timeout(Instant::from_micros(t - 1));
        assert!(
            e.poll_transmit(Instant::from_micros(t - 1)).is_none(),
            "nothing before the deadline"
        );
        e.handle_timeout(Instant::from_micros(t));
        let resent = drain(&mut e, t);
        assert_eq!(resent.len(), 1, "cwnd is one segment after a timeout");
        assert_eq!(resent[0].seq, 0);
        assert!(resent[0].retransmission);
        fired.push(t);
    }
    // Initial RTO 1 s, doubled each time (RFC 6298 §5.5), capped at 60 s.
    let s = 1_000_000;
    assert_eq!(
        fired,
        [s, 3 * s, 7 * s, 15 * s, 31 * s, 63 * s, 123 * s, 183 * s]
    );
    assert_eq!(e.stats().timeouts, 8);
}

/// Ten segments sent at 0, then a timeout at 1 s: the window collapses to one segment.
fn timed_out_sender() -> (TcpEndpoint, u64, u64) {
    let mut e = TcpEndpoint::new(TcpConfig::default(), CcKind::Reno, Instant::from_micros(0));
    e.set_bulk(true);
    assert_eq!(drain(&mut e, 0).len(), 10);
    let cwnd_before = e.cwnd_bytes();
    let t = e
        .poll_timeout()
        .map(Instant::as_micros)
        .expect("the retransmission timer runs");
    e.handle_timeout(Instant::from_micros(t));
    assert_eq!(e.cwnd_bytes(), MSS, "one segment after the timeout");
    let resent = drain(&mut e, t);
    assert_eq!((resent.len(), resent[0].seq), (1, 0));
    (e, cwnd_before, t)
}

#[test]
fn a_timeout_whose_first_ack_echoes_an_original_transmission_is_undone() {
    // The ACKs were only late (queued behind the other direction's data): the first ACK after
    // the timeout echoes the original transmission's timestamp (0, before the timeout).
    let (mut e, cwnd_before, t) = timed_out_sender();
    e.handle_segment(Instant::from_micros(t + 10_000), &ack(2 * MSS, 0));
    assert_eq!(e.stats().spurious_timeouts, 1);
    // The controller's state is restored, then the ACK's two segments grow it (slow start).
    assert_eq!(e.cwnd_bytes(), cwnd_before + 2 * MSS);
    // No go-back-N: what follows is new data, from the highest byte sent.
    let next = drain(&mut e, t + 10_000);
    assert!(!next.is_empty());
    assert!(next.iter().all(|s| !s.retransmission && s.seq >= 10 * MSS));
}

#[test]
fn a_timeout_whose_first_ack_echoes_the_retransmission_stands() {
    let (mut e, _, t) = timed_out_sender();
    e.handle_segment(Instant::from_micros(t + 40_000), &ack(MSS, t));
    assert_eq!(e.stats().spurious_timeouts, 0);
    assert!(
        e.cwnd_bytes() <= 2 * MSS,
        "still in slow start from one segment"
    );
    let next = drain(&mut e, t + 40_000);
    assert!(
        next.iter().all(|s| s.retransmission && s.seq < 10 * MSS),
        "go-back-N resumes"
    );
}

#[test]
fn rto_after_rtt_samples_is_srtt_plus_the_200_ms_floor() {
    let mut e = TcpEndpoint::new(TcpConfig::default(), CcKind::Reno, Instant::from_micros(0));
    e.set_bulk(true);
    assert_eq!(drain(&mut e, 0).len(), 10);
    for i in 1..=10u64 {
        e.handle_segment(Instant::from_micros(40_000), &ack(i * MSS, 0));
    }
    assert_eq!(e.stats().srtt_us.map(Duration::as_micros), Some(40_000));
    assert_eq!(e.stats().rto_us.as_micros(), 240_000);
    assert_eq!(
        drain(&mut e, 40_000).len(),
        20,
        "slow start doubled the window"
    );
    // Silence from here: the timer was restarted by the last ACK at 40 ms.
    let mut fired = Vec::new();
    for _ in 0..3 {
        let t = e.poll_timeout().map(Instant::as_micros).unwrap();
        e.handle_timeout(Instant::from_micros(t));
        assert_eq!(drain(&mut e, t)[0].seq, 10 * MSS);
        fired.push(t);
    }
    assert_eq!(fired, [280_000, 760_000, 1_720_000]);
    // An ACK of the retransmission brings the RTO back to SRTT + 200 ms.
    e.handle_segment(Instant::from_micros(1_760_000), &ack(11 * MSS, 1_720_000));
    assert_eq!(e.stats().rto_us.as_micros(), 240_000);
}

#[test]
fn fast_retransmit_after_three_duplicate_acks_and_newreno_recovery() {
    let mut e = TcpEndpoint::new(TcpConfig::default(), CcKind::Reno, Instant::from_micros(0));
    e.set_bulk(true);
    assert_eq!(drain(&mut e, 0).len(), 10);
    // Segment 1 is lost: segment 0 is acknowledged, then every later one repeats that ACK.
    e.handle_segment(Instant::from_micros(40_000), &ack(MSS, 0));
    assert_eq!(drain(&mut e, 40_000).len(), 2, "slow start: 11 segments");
    for dup in 1..=2 {
        e.handle_segment(Instant::from_micros(40_000 + dup), &ack(MSS, 0));
        assert!(
            drain(&mut e, 40_000 + dup).is_empty(),
            "no retransmit after {dup} dupACKs"
        );
    }
    e.handle_segment(Instant::from_micros(40_003), &ack(MSS, 0));
    let out = drain(&mut e, 40_003);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].seq, MSS, "the missing segment");
    assert!(out[0].retransmission);
    let st = e.stats();
    assert_eq!(st.fast_retransmits, 1);
    assert!(st.in_recovery);
    // ssthresh = FlightSize / 2 = 11 segments / 2; cwnd = ssthresh (+ 3 segments inflation).
    assert_eq!(st.ssthresh_bytes, 11 * MSS / 2);
    assert_eq!(st.cwnd_bytes, 11 * MSS / 2);
    assert_eq!(st.window_bytes, 11 * MSS / 2 + 3 * MSS);
    // Each further dupACK inflates the window by one segment; new data flows once the
    // inflated window exceeds the flight (11 segments).
    let mut new_data = Vec::new();
    for k in 4..=10u64 {
        e.handle_segment(Instant::from_micros(40_000 + k), &ack(MSS, 0));
        new_data.extend(drain(&mut e, 40_000 + k));
    }
    assert!(!new_data.is_empty() && new_data.iter().all(|s| !s.retransmission));
    assert!(new_data.iter().all(|s| s.seq >= 12 * MSS));
    // Partial ACK (segment 5 was lost too): retransmit it at once, stay in recovery.
    e.handle_segment(Instant::from_micros(80_000), &ack(5 * MSS, 40_003));
    let out = drain(&mut e, 80_000);
    assert_eq!(out[0].seq, 5 * MSS);
    assert!(out[0].retransmission);
    assert!(e.stats().in_recovery);
    // Full ACK (everything sent before the fast retransmit): recovery ends with cwnd =
    // ssthresh.
    e.handle_segment(Instant::from_micros(120_000), &ack(12 * MSS, 80_000));
    let st = e.stats();
    assert!(!st.in_recovery);
    assert_eq!(st.cwnd_bytes, 11 * MSS / 2);
    assert_eq!(st.window_bytes, st.cwnd_bytes);
    assert_eq!(st.fast_retransmits, 1);
    assert_eq!(st.timeouts, 0);
}

#[test]
fn delayed_acks_acknowledge_every_second_segment() {
    let cfg = TcpConfig {
        delayed_acks: true,
        ..TcpConfig::default()
    };
    let mut rx = TcpEndpoint::new(cfg.clone(), CcKind::Reno, Instant::from_micros(0));
    let m = MSS as u32;
    rx.handle_segment(Instant::from_micros(20_000), &data(0, m, 0));
    assert!(
        drain(&mut rx, 20_000).is_empty(),
        "first segment: ACK delayed"
    );
    assert_eq!(
        rx.poll_timeout().map(Instant::as_micros),
        Some(60_000),
        "40 ms delayed-ACK timer"
    );
    rx.handle_segment(Instant::from_micros(21_000), &data(MSS, m, 1_000));
    let a = drain(&mut rx, 21_000);
    assert_eq!(a.len(), 1, "second segment: ACK now");
    assert_eq!(a[0].ack, Some(2 * MSS));
    assert_eq!(
        a[0].echo.map(Instant::as_micros),
        Some(0),
        "echoes the earlier segment (RFC 7323)"
    );
    assert_eq!(rx.poll_timeout().map(Instant::as_micros), None);
    // A lone segment is acknowledged when the timer fires.
    rx.handle_segment(Instant::from_micros(22_000), &data(2 * MSS, m, 2_000));
    rx.handle_timeout(Instant::from_micros(61_999));
    assert!(drain(&mut rx, 61_999).is_empty());
    rx.handle_timeout(Instant::from_micros(62_000));
    let a = drain(&mut rx, 62_000);
    assert_eq!(a[0].ack, Some(3 * MSS));
    assert_eq!(a[0].echo.map(Instant::as_micros), Some(2_000));
    // Out of order: immediate duplicate ACK; filling the gap: immediate ACK.
    rx.handle_segment(Instant::from_micros(70_000), &data(4 * MSS, m, 50_000));
    assert_eq!(drain(&mut rx, 70_000)[0].ack, Some(3 * MSS));
    rx.handle_segment(Instant::from_micros(71_000), &data(3 * MSS, m, 51_000));
    assert_eq!(drain(&mut rx, 71_000)[0].ack, Some(5 * MSS));
    assert_eq!(rx.stats().delivered_app_bytes, 5 * MSS);

    // Over a link: about one ACK per two segments, and the link is still filled.
    let mut spec = Spec::new(CcKind::Reno);
    spec.tcp = cfg;
    spec.queue_limit_bytes = Some(60 * PACKET);
    let r = run(&spec);
    let ratio = r.receiver.ack_segments_sent as f64 / r.receiver.data_segments_received as f64;
    eprintln!("delayed ACKs: {ratio:.3} ACKs per data segment");
    assert!((0.5..=0.56).contains(&ratio), "{ratio:.3} ACKs per segment");
    assert!(r.goodput_bytes_per_s() / spec.payload_rate_bytes_per_s() > 0.9);
    let mut spec = Spec::new(CcKind::Reno);
    spec.queue_limit_bytes = Some(60 * PACKET);
    let r = run(&spec);
    assert_eq!(
        r.receiver.ack_segments_sent,
        r.receiver.data_segments_received
    );
}
