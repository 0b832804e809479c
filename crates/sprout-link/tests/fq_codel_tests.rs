//! FQ-CoDel (RFC 8290) through the link: new-flow priority, the new flow that empties, DRR's
//! byte fairness, the fattest flow's drops at the limit, per-flow CoDel, and (a property) that
//! every packet offered is delivered or dropped exactly once, each flow in order.
//!
//! Most scenarios use a 12 Mbit/s constant-rate trace (one 1500-byte opportunity per
//! millisecond) and no propagation delay, so a packet sent at `t` joins the queue at `t`.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use proptest::prelude::*;
use sprout_core::time::{Duration, Instant};
use sprout_link::{
    constant_rate_trace, Buffer, DropReason, Link, LinkConfig, LinkEvent, QueueConfig, Trace,
};

/// One 1500-byte opportunity per ms (12 Mbit/s), looping every 10 s.
fn one_per_ms() -> Arc<Trace> {
    Arc::new(constant_rate_trace("const12", 12.0, 10.0).unwrap())
}

/// FQ-CoDel with Linux's defaults but for the given CoDel target (µs), quantum and limit.
fn fq(target_us: u64, quantum_bytes: u32, limit_packets: u32) -> QueueConfig {
    let QueueConfig::FqCodel {
        interval_us,
        flows,
        memory_limit_bytes,
        ..
    } = QueueConfig::fq_codel()
    else {
        unreachable!()
    };
    QueueConfig::FqCodel {
        target_us: Duration::from_micros(target_us),
        interval_us,
        quantum_bytes,
        flows,
        limit_packets,
        memory_limit_bytes,
    }
}

fn config(queue: QueueConfig) -> LinkConfig {
    LinkConfig {
        queue,
        propagation_delay_us: Duration::ZERO,
        ..LinkConfig::default()
    }
}

/// One packet offered: when (µs), its flow, its size (bytes).
type Send = (u64, u32, u32);

/// Sends `sends` (sorted by time; payload = index), then runs the link to `until_us`.
fn run(link: &mut Link<usize>, sends: &[Send], until_us: u64) -> Vec<LinkEvent<usize>> {
    let mut events = Vec::new();
    for (i, &(t, flow, bytes)) in sends.iter().enumerate() {
        if t > 0 {
            link.advance(Instant::from_micros(t - 1), &mut |e| events.push(e));
        }
        link.send_flow(Instant::from_micros(t), bytes, flow, i);
    }
    link.advance(Instant::from_micros(until_us), &mut |e| events.push(e));
    events
}

/// (payload, delivery time in µs) of every delivery, in order.
fn deliveries(events: &[LinkEvent<usize>]) -> Vec<(usize, u64)> {
    events
        .iter()
        .filter_map(|e| match e {
            LinkEvent::Delivered(d) => Some((d.payload, d.delivered.as_micros())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_sparse_flow_goes_before_a_backlogged_one() {
    // Flow 1 puts 30 packets in the queue at 0; flow 2 sends one at 5.5 ms.
    let mut sends: Vec<Send> = (0..30).map(|_| (0, 1, 1500)).collect();
    sends.push((5_500, 2, 1500));
    let sparse = sends.len() - 1;
    let mut fq_link = Link::new(one_per_ms(), config(QueueConfig::fq_codel()));
    let got = deliveries(&run(&mut fq_link, &sends, 100_000));
    let at = |d: &[(usize, u64)]| d.iter().find(|(p, _)| *p == sparse).unwrap().1;
    // The next opportunity after it arrives (6 ms) takes it, ahead of flow 1's backlog.
    assert_eq!(at(&got), 6_000, "{got:?}");
    // A FIFO makes it wait behind the whole backlog.
    let mut fifo = Link::new(one_per_ms(), config(QueueConfig::default()));
    let fifo_got = deliveries(&run(&mut fifo, &sends, 100_000));
    assert!(at(&fifo_got) >= 30_000, "{fifo_got:?}");
}

#[test]
fn a_new_flow_that_empties_waits_its_turn_among_the_old_ones() {
    // Quantum 4500: flow 1, backlogged from 0, is served three packets a turn. Flow 2 sends a
    // packet at 4.5 ms (a new flow: served first, at 5 ms) and another at 6.5 ms. At 6 ms flow
    // 2 was found empty and, by RFC 8290 section 4.3, went to the tail of the old flows, behind
    // flow 1 with credit for two more packets (6 and 7 ms): its second packet goes at 8 ms. Had
    // it left the rotation instead, its second packet would have come back as a new flow and
    // gone first, at 7 ms.
    let mut sends: Vec<Send> = (0..30).map(|_| (0, 1, 1500)).collect();
    sends.push((4_500, 2, 1500));
    sends.push((6_500, 2, 1500));
    let mut link = Link::new(one_per_ms(), config(fq(10_000_000, 4500, 10_240)));
    let got = deliveries(&run(&mut link, &sends, 100_000));
    let flow_2: Vec<u64> = got
        .iter()
        .filter(|(p, _)| sends[*p].1 == 2)
        .map(|(_, t)| *t)
        .collect();
    assert_eq!(flow_2, vec![5_000, 8_000], "{got:?}");
    let at_7ms = got.iter().find(|(_, t)| *t == 7_000).unwrap();
    assert_eq!(sends[at_7ms.0].1, 1);
}

#[test]
fn drr_shares_bytes_between_two_backlogged_flows() {
    // Flow 1 sends 1500-byte packets, flow 2 300-byte ones, both far more than the link
    // carries in 300 ms; CoDel out of the way (a 10 s target).
    let mut sends: Vec<Send> = Vec::new();
    for _ in 0..400 {
        sends.push((0, 1, 1500));
        for _ in 0..5 {
            sends.push((0, 2, 300));
        }
    }
    let quantum = 1514;
    let mut link = Link::new(one_per_ms(), config(fq(10_000_000, quantum, 10_240)));
    let events = run(&mut link, &sends, 300_000);
    let mut bytes = [0u64; 3];
    for (p, _) in deliveries(&events) {
        let (_, flow, b) = sends[p];
        bytes[flow as usize] += u64::from(b);
    }
    let total = bytes[1] + bytes[2];
    assert!(total >= 290 * 1500, "{bytes:?}");
    let gap = bytes[1].abs_diff(bytes[2]);
    assert!(
        gap <= u64::from(quantum) + 1500,
        "flow 1 {} bytes, flow 2 {} bytes",
        bytes[1],
        bytes[2]
    );
}

#[test]
fn the_limit_drops_from_the_head_of_the_fattest_flow() {
    // No opportunity before 1 s: everything waits. Limit 10 packets.
    let trace = Arc::new(Trace::from_opportunities_ms("late", vec![1000]).unwrap());
    let mut link = Link::new(trace, config(fq(10_000_000, 1514, 10)));
    // Flow 1: 8 packets; flow 2: 3. The 11th packet (flow 2's third) overflows.
    let mut sends: Vec<Send> = (0..8).map(|_| (0, 1, 1500)).collect();
    sends.extend((0..3).map(|_| (0, 2, 1500)));
    let events = run(&mut link, &sends, 10);
    let mut dropped = Vec::new();
    let mut enqueued = 0;
    for e in &events {
        match e {
            LinkEvent::HeadDropped {
                flow,
                reason,
                index,
                ..
            } => {
                assert_eq!((*reason, *index), (DropReason::Buffer, 0));
                // Made room for the 11th packet, before it joined.
                assert_eq!(enqueued, 10);
                dropped.push(*flow);
            }
            LinkEvent::Enqueued { .. } => enqueued += 1,
            LinkEvent::Dropped { .. } => panic!("the arriving packet was not the fattest's"),
            _ => {}
        }
    }
    // Flow 1 (12 000 bytes) loses half its bytes, from its head: its first four packets.
    assert_eq!(dropped, vec![1; 4]);
    assert_eq!(enqueued, 11);
    assert_eq!(link.queue_packets(), 7);
    let s = link.stats();
    assert_eq!((s.packets_head_dropped, s.packets_buffer_dropped), (4, 4));
    let mut rest: Vec<usize> = deliveries(&run(&mut link, &[], 20_000_000))
        .iter()
        .map(|(p, _)| *p)
        .collect();
    rest.sort_unstable();
    assert_eq!(rest, (4..11).collect::<Vec<_>>());
}

#[test]
fn an_arriving_packet_of_the_fattest_flow_can_be_its_own_drop() {
    // Limit 1 packet: flow 1 holds 100 bytes; flow 2's 1500-byte packet overflows the limit and
    // makes flow 2 the fattest, whose head is that very packet: it is dropped as it arrives.
    let trace = Arc::new(Trace::from_opportunities_ms("late", vec![1000]).unwrap());
    let mut link = Link::new(trace, config(fq(5_000, 1514, 1)));
    let sends: Vec<Send> = vec![(0, 1, 100), (0, 2, 1500)];
    let events = run(&mut link, &sends, 2_000_000);
    assert_eq!(deliveries(&events), vec![(0, 1_000_000)]);
    let drops: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, LinkEvent::Dropped { .. } | LinkEvent::HeadDropped { .. }))
        .collect();
    assert!(
        matches!(
            drops[..],
            [LinkEvent::Dropped {
                bytes: 1500,
                reason: DropReason::Buffer,
                ..
            }]
        ),
        "{drops:?}"
    );
}

#[test]
fn codel_drops_only_in_the_flow_with_a_standing_queue() {
    // Flow 1 (1500-byte packets) offers twice the link's rate for 2 s; flow 2 (200-byte
    // packets) one packet every 10 ms. FQ-CoDel serves flow 2 at once; flow 1 keeps a standing
    // queue, which its CoDel drops from.
    let mut sends: Vec<Send> = (0..4000u64).map(|k| (k * 500, 1, 1500)).collect();
    sends.extend((0..200u64).map(|k| (k * 10_000 + 3, 2, 200)));
    sends.sort_by_key(|s| s.0);
    let mut link = Link::new(one_per_ms(), config(QueueConfig::fq_codel()));
    let events = run(&mut link, &sends, 3_000_000);
    let mut aqm = [0u32; 3];
    for e in &events {
        if let LinkEvent::HeadDropped {
            bytes,
            reason: DropReason::Aqm,
            ..
        } = e
        {
            aqm[if *bytes == 1500 { 1 } else { 2 }] += 1;
        }
    }
    assert!(aqm[1] > 100, "{aqm:?}");
    assert_eq!(aqm[2], 0, "{aqm:?}");
    // And flow 2's packets go at the next opportunity, or the one after when the rest of a
    // flow 1 packet already in transmission fills it (service is per byte; flow 2's 200-byte
    // packets shift flow 1's packets across opportunities); but the first: at 3 µs flow 1 was
    // a new flow too, ahead of it with a quantum (two packets) of credit.
    let waits: Vec<u64> = deliveries(&events)
        .iter()
        .filter(|(p, _)| sends[*p].1 == 2)
        .map(|&(p, t)| t - sends[p].0)
        .collect();
    assert_eq!(waits.len(), 200);
    assert_eq!(waits[0], 2_997);
    assert!(waits[1..].iter().all(|&w| w <= 1_997), "{waits:?}");
    assert!(
        waits.iter().filter(|&&w| w <= 997).count() > 150,
        "{waits:?}"
    );
}

#[test]
fn a_buffer_lowers_the_limit_and_the_header_names_the_parameters() {
    let trace = Arc::new(Trace::from_opportunities_ms("late", vec![1000]).unwrap());
    let cfg = LinkConfig {
        buffer: Some("3pkt".parse::<Buffer>().unwrap()),
        ..config(QueueConfig::fq_codel())
    };
    assert_eq!(
        cfg.queue_description(),
        "fq_codel [target=5ms, interval=100ms, quantum=1514, flows=1024, limit=10240, \
         memory=33554432] + buffer 3pkt"
    );
    let mut link = Link::new(trace, cfg);
    let sends: Vec<Send> = (0..5).map(|_| (0, 1, 1500)).collect();
    run(&mut link, &sends, 10);
    assert!(link.queue_packets() <= 3);
    assert!(link.stats().packets_buffer_dropped >= 2);
}

/// Follows every packet through a run's events as the simulator does: the arrivals at the
/// queue come in the order sent (no jitter), and each flow key's packets leave (delivered, or
/// dropped from the head of its flow) in the order they joined. Returns, per payload, how many
/// times it was delivered or dropped.
fn account(events: &[LinkEvent<usize>], sends: &[Send]) -> Result<Vec<u32>, TestCaseError> {
    let mut fate = vec![0u32; sends.len()];
    let mut arrived = 0usize;
    let mut queued: HashMap<u32, VecDeque<usize>> = HashMap::new();
    for e in events {
        match e {
            LinkEvent::Enqueued { .. } => {
                queued
                    .entry(sends[arrived].1)
                    .or_default()
                    .push_back(arrived);
                arrived += 1;
            }
            LinkEvent::Dropped { .. } => {
                fate[arrived] += 1;
                arrived += 1;
            }
            LinkEvent::HeadDropped { flow, index, .. } => {
                // The oldest of its key, or the next behind one in transmission.
                prop_assert!(*index <= 1);
                let p = queued.get_mut(flow).and_then(|q| q.remove(*index));
                prop_assert!(p.is_some(), "a drop of flow {} with none queued", flow);
                fate[p.unwrap_or_default()] += 1;
            }
            LinkEvent::Delivered(d) => {
                let p = queued.get_mut(&d.flow).and_then(VecDeque::pop_front);
                prop_assert_eq!(p, Some(d.payload), "flow {} out of order", d.flow);
                fate[d.payload] += 1;
            }
            LinkEvent::Opportunity { .. } => {}
        }
    }
    Ok(fate)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn every_packet_is_delivered_or_dropped_once(
        packets in prop::collection::vec((0u64..3000, 0u32..6, 1u32..3000), 1..120),
        flows in prop_oneof![Just(1u32), Just(2), Just(4), Just(1024)],
        quantum in prop_oneof![Just(300u32), Just(1514), Just(5000)],
        limit in 1u32..40,
        target_us in prop_oneof![Just(1_000u64), Just(5_000)],
        interval_ms in 1u64..100,
    ) {
        let mut now = 0;
        let sends: Vec<Send> = packets
            .iter()
            .map(|&(gap, flow, bytes)| { now += gap; (now, flow, bytes) })
            .collect();
        let queue = QueueConfig::FqCodel {
            target_us: Duration::from_micros(target_us),
            interval_us: Duration::from_millis(interval_ms),
            quantum_bytes: quantum,
            flows,
            limit_packets: limit,
            memory_limit_bytes: 20_000,
        };
        // 1500 bytes every 2 ms: slower than most offered loads.
        let trace = Arc::new(constant_rate_trace("const6", 6.0, 10.0).unwrap());
        let mut link = Link::new(trace, config(queue));
        let events = run(&mut link, &sends, now + 10_000_000);
        let fate = account(&events, &sends)?;
        prop_assert!(fate.iter().all(|&f| f == 1), "{:?}", fate);
        let s = link.stats();
        prop_assert_eq!(link.queue_packets(), 0);
        prop_assert_eq!(s.bytes_sent, s.bytes_delivered + s.bytes_dropped + s.bytes_lost);
        prop_assert_eq!(s.bytes_enqueued, s.bytes_delivered + s.bytes_head_dropped);
        prop_assert_eq!(s.packets_sent, s.packets_delivered + s.packets_dropped);
    }
}
