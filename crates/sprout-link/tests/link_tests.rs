//! Link semantics: per-byte delivery, propagation delay, drop-tail, looping, event order.

use sprout_core::time::{Duration, Instant};
use std::collections::VecDeque;
use std::sync::Arc;

use proptest::prelude::*;
use sprout_link::{Delivery, DropReason, Link, LinkConfig, LinkEvent, QueueConfig, Trace};

fn trace(ms: &[u64]) -> Arc<Trace> {
    Arc::new(Trace::from_opportunities_ms("test", ms.to_vec()).unwrap())
}

fn config(delay_ms: u64, looping: bool, limit: Option<u64>) -> LinkConfig {
    LinkConfig {
        propagation_delay_us: Duration::from_micros(delay_ms * 1000),
        queue: QueueConfig::DropTail { limit_bytes: limit },
        looping,
        ..LinkConfig::default()
    }
}

/// Sends `(time_us, bytes)` packets (payload = index), advancing to each send time first, then
/// advances to `until_us`. Returns all events.
fn run(link: &mut Link<usize>, sends: &[(u64, u32)], until_us: u64) -> Vec<LinkEvent<usize>> {
    let mut events = Vec::new();
    for (i, &(t, size)) in sends.iter().enumerate() {
        link.advance(Instant::from_micros(t), &mut |e| events.push(e));
        link.send(Instant::from_micros(t), size, i);
    }
    link.advance(Instant::from_micros(until_us), &mut |e| events.push(e));
    events
}

fn deliveries(events: &[LinkEvent<usize>]) -> Vec<Delivery<usize>> {
    events
        .iter()
        .filter_map(|e| match e {
            LinkEvent::Delivered(d) => Some(d.clone()),
            _ => None,
        })
        .collect()
}

fn delivered_at(events: &[LinkEvent<usize>]) -> Vec<(usize, u64)> {
    deliveries(events)
        .iter()
        .map(|d| (d.payload, d.delivered.as_micros()))
        .collect()
}

#[test]
fn defaults() {
    let c = LinkConfig::default();
    assert_eq!(c.propagation_delay_us.as_micros(), 20_000);
    assert_eq!(c.queue, QueueConfig::DropTail { limit_bytes: None });
    assert!(c.looping);
    assert_eq!(c.opportunity_bytes, 1500);
}

#[test]
fn config_serde_round_trip_and_defaults() {
    let c = config(7, false, Some(3000));
    let json = serde_json::to_string(&c).unwrap();
    let back: LinkConfig = serde_json::from_str(&json).unwrap();
    assert_eq!(back, c);
    let empty: LinkConfig = serde_json::from_str("{}").unwrap();
    assert_eq!(empty, LinkConfig::default());
    let q: LinkConfig =
        serde_json::from_str(r#"{"queue": {"kind": "drop_tail", "limit_bytes": 9000}}"#).unwrap();
    assert_eq!(
        q.queue,
        QueueConfig::DropTail {
            limit_bytes: Some(9000)
        }
    );
}

#[test]
fn one_opportunity_releases_fifteen_small_packets() {
    let mut link = Link::new(trace(&[10, 1000]), config(0, false, None));
    let sends: Vec<(u64, u32)> = (0..16).map(|_| (0, 100)).collect();
    let events = run(&mut link, &sends, 10_000);
    let d = delivered_at(&events);
    assert_eq!(d.len(), 15);
    assert!(d
        .iter()
        .enumerate()
        .all(|(i, &(p, t))| p == i && t == 10_000));
    assert_eq!(link.queue_packets(), 1);
    assert_eq!(link.queue_bytes(), 100);
}

#[test]
fn big_packet_needs_two_opportunities() {
    let mut link = Link::new(trace(&[10, 20, 30]), config(0, false, None));
    let events = run(&mut link, &[(0, 3000)], 15_000);
    assert!(delivered_at(&events).is_empty());
    assert_eq!(link.queue_bytes(), 3000);
    assert_eq!(link.queue_bytes_to_transmit(), 1500);
    let mut more = Vec::new();
    link.advance(Instant::from_micros(30_000), &mut |e| more.push(e));
    assert_eq!(delivered_at(&more), vec![(0, 20_000)]);
}

#[test]
fn partial_progress_carries_over() {
    // 1000 + 1000 bytes: the first opportunity delivers the first and 500 bytes of the second.
    let mut link = Link::new(trace(&[10, 20]), config(0, false, None));
    let events = run(&mut link, &[(0, 1000), (0, 1000)], 100_000);
    assert_eq!(delivered_at(&events), vec![(0, 10_000), (1, 20_000)]);
}

#[test]
fn unused_opportunity_budget_is_lost() {
    // The 500 bytes left at 10 ms are not carried to the 2000-byte packet arriving at 15 ms:
    // it gets 1500 at 20 ms and the rest at 30 ms.
    let mut link = Link::new(trace(&[10, 20, 30]), config(0, false, None));
    let events = run(&mut link, &[(0, 1000), (15_000, 2000)], 100_000);
    assert_eq!(delivered_at(&events), vec![(0, 10_000), (1, 30_000)]);
    // Opportunities on an empty queue are wasted too.
    let mut link = Link::new(trace(&[10, 20, 30]), config(0, false, None));
    let events = run(&mut link, &[(25_000, 1500), (25_000, 1500)], 100_000);
    assert_eq!(delivered_at(&events), vec![(0, 30_000)]);
    assert_eq!(link.queue_packets(), 1);
}

#[test]
fn propagation_delay_comes_before_the_queue() {
    let mut link = Link::new(trace(&[5, 25]), config(20, false, None));
    let events = run(&mut link, &[(0, 1500)], 100_000);
    let d = deliveries(&events);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].sent.as_micros(), 0);
    assert_eq!(d[0].enqueued.as_micros(), 20_000);
    assert_eq!(d[0].delivered.as_micros(), 25_000);
    assert_eq!(d[0].bytes, 1500);
}

#[test]
fn packet_joining_at_t_can_use_opportunity_at_t() {
    let mut link = Link::new(trace(&[20, 40]), config(20, false, None));
    let events = run(&mut link, &[(0, 1500)], 100_000);
    assert_eq!(delivered_at(&events), vec![(0, 20_000)]);
}

#[test]
fn drop_tail_drops_over_the_byte_limit() {
    let mut link = Link::new(trace(&[100]), config(1, false, Some(3000)));
    let events = run(
        &mut link,
        &[(0, 1500), (0, 1500), (0, 1500), (0, 100)],
        50_000,
    );
    let drops: Vec<&LinkEvent<usize>> = events
        .iter()
        .filter(|e| matches!(e, LinkEvent::Dropped { .. }))
        .collect();
    assert_eq!(drops.len(), 2);
    assert_eq!(
        drops[0],
        &LinkEvent::Dropped {
            at: Instant::from_micros(1000),
            bytes: 1500,
            reason: DropReason::Buffer,
            index: 0,
        }
    );
    assert_eq!(
        drops[1],
        &LinkEvent::Dropped {
            at: Instant::from_micros(1000),
            bytes: 100,
            reason: DropReason::Buffer,
            index: 0,
        }
    );
    let s = link.stats();
    assert_eq!((s.packets_enqueued, s.bytes_enqueued), (2, 3000));
    assert_eq!((s.packets_dropped, s.bytes_dropped), (2, 1600));
    assert_eq!(link.queue_bytes(), 3000);
}

#[test]
fn drop_tail_limit_ignores_the_packet_in_transit() {
    // As mahimahi: a partly transmitted head is out of the queue for the limit.
    let mut link = Link::new(trace(&[10, 20, 30, 40]), config(0, false, Some(3000)));
    let events = run(
        &mut link,
        &[(0, 3000), (11_000, 3000), (12_000, 1)],
        100_000,
    );
    assert_eq!(
        delivered_at(&events),
        vec![(0, 20_000), (1, 40_000)],
        "{events:?}"
    );
    assert_eq!(link.stats().packets_dropped, 1);
}

#[test]
fn looping_repeats_the_trace_and_non_looping_stops() {
    let sends: Vec<(u64, u32)> = (0..5).map(|_| (0, 1500)).collect();
    let mut looping = Link::new(trace(&[10, 20]), config(0, true, None));
    let events = run(&mut looping, &sends, 1_000_000);
    let times: Vec<u64> = delivered_at(&events).iter().map(|d| d.1).collect();
    assert_eq!(times, vec![10_000, 20_000, 30_000, 40_000, 50_000]);

    let mut once = Link::new(trace(&[10, 20]), config(0, false, None));
    let events = run(&mut once, &sends, 1_000_000);
    assert_eq!(delivered_at(&events).len(), 2);
    assert_eq!(once.queue_packets(), 3);
    assert_eq!(once.next_event().map(Instant::as_micros), None);
    let opportunities = events
        .iter()
        .filter(|e| matches!(e, LinkEvent::Opportunity { .. }))
        .count();
    assert_eq!(opportunities, 2);
}

#[test]
fn events_come_in_time_order() {
    let mut link = Link::new(trace(&[0, 10, 10, 20]), config(5, false, None));
    let events = run(&mut link, &[(0, 1500), (5_000, 100)], 20_000);
    let expected = vec![
        LinkEvent::Opportunity {
            at: Instant::from_micros(0),
            bytes: 1500,
        },
        LinkEvent::Enqueued {
            at: Instant::from_micros(5_000),
            bytes: 1500,
            index: 0,
        },
        LinkEvent::Enqueued {
            at: Instant::from_micros(10_000),
            bytes: 100,
            index: 0,
        },
        LinkEvent::Opportunity {
            at: Instant::from_micros(10_000),
            bytes: 1500,
        },
        LinkEvent::Delivered(Delivery {
            payload: 0,
            bytes: 1500,
            sent: Instant::from_micros(0),
            enqueued: Instant::from_micros(5_000),
            delivered: Instant::from_micros(10_000),
            flow: 0,
            ecn: sprout_link::Ecn::NotEct,
            mark: None,
        }),
        LinkEvent::Opportunity {
            at: Instant::from_micros(10_000),
            bytes: 1500,
        },
        LinkEvent::Delivered(Delivery {
            payload: 1,
            bytes: 100,
            sent: Instant::from_micros(5_000),
            enqueued: Instant::from_micros(10_000),
            delivered: Instant::from_micros(10_000),
            flow: 0,
            ecn: sprout_link::Ecn::NotEct,
            mark: None,
        }),
        LinkEvent::Opportunity {
            at: Instant::from_micros(20_000),
            bytes: 1500,
        },
    ];
    assert_eq!(events, expected);
}

#[test]
fn next_event_skips_wasted_opportunities() {
    let mut link: Link<()> = Link::new(trace(&[1, 2, 3, 50, 60]), config(20, false, None));
    assert_eq!(link.next_event().map(Instant::as_micros), None);
    link.send(Instant::from_micros(10_000), 1500, ());
    link.send(Instant::from_micros(10_000), 1500, ());
    assert_eq!(link.next_event().map(Instant::as_micros), Some(30_000));
    let mut n = 0;
    link.advance(Instant::from_micros(30_000), &mut |_| n += 1);
    assert_eq!(n, 3 + 2); // three wasted opportunities, two entries
    assert_eq!(link.next_event().map(Instant::as_micros), Some(50_000));
    link.advance(Instant::from_micros(50_000), &mut |_| {});
    assert_eq!(link.next_event().map(Instant::as_micros), Some(60_000));
    link.advance(Instant::from_micros(60_000), &mut |_| {});
    assert_eq!(link.next_event().map(Instant::as_micros), None);
    assert_eq!(link.stats().packets_delivered, 2);
}

#[test]
fn opportunity_bytes_is_configurable() {
    let cfg = LinkConfig {
        opportunity_bytes: 3000,
        ..config(0, false, None)
    };
    let mut link = Link::new(trace(&[10]), cfg);
    let events = run(&mut link, &[(0, 1500), (0, 1500), (0, 1)], 10_000);
    assert_eq!(delivered_at(&events).len(), 2);
    assert!(events.contains(&LinkEvent::Opportunity {
        at: Instant::from_micros(10_000),
        bytes: 3000
    }));
}

#[test]
fn zero_delay_send_after_advance_misses_opportunity_at_same_instant() {
    // Sending before advancing to T: the packet uses the opportunity at T.
    let mut link = Link::new(trace(&[10, 20]), config(0, false, None));
    link.send(Instant::from_micros(10_000), 1500, 0usize);
    let mut events = Vec::new();
    link.advance(Instant::from_micros(30_000), &mut |e| events.push(e));
    assert_eq!(delivered_at(&events), vec![(0, 10_000)]);
    // Advancing to T first (as mahimahi does on arrival): that opportunity is gone.
    let mut link = Link::new(trace(&[10, 20]), config(0, false, None));
    let events = run(&mut link, &[(10_000, 1500)], 30_000);
    assert_eq!(delivered_at(&events), vec![(0, 20_000)]);
}

#[test]
fn time_never_runs_backwards() {
    let mut link = Link::new(trace(&[10, 20, 30]), config(0, false, None));
    link.advance(Instant::from_micros(15_000), &mut |_| {});
    link.send(Instant::from_micros(5_000), 1500, 7usize); // in the past: treated as sent at 15 ms
    let mut events = Vec::new();
    link.advance(Instant::from_micros(1_000), &mut |e| events.push(e)); // earlier than the clock: nothing
    assert!(events.is_empty());
    link.advance(Instant::from_micros(100_000), &mut |e| events.push(e));
    let d = deliveries(&events);
    assert_eq!(d[0].sent.as_micros(), 15_000);
    assert_eq!(d[0].delivered.as_micros(), 20_000);
}

/// Independent reference: walk opportunities one by one with a plain queue.
fn reference(
    trace: &Arc<Trace>,
    cfg: &LinkConfig,
    sends: &[(u64, u32)],
    until_us: u64,
) -> (Vec<(usize, u64)>, Vec<usize>) {
    let entries: Vec<(u64, u32, usize)> = sends
        .iter()
        .enumerate()
        .map(|(i, &(t, b))| (t + cfg.propagation_delay_us.as_micros(), b, i))
        .collect();
    let limit = match cfg.queue {
        QueueConfig::DropTail { limit_bytes } => limit_bytes,
        QueueConfig::CoDel { .. } | QueueConfig::Pie { .. } | QueueConfig::FqCodel { .. } => {
            unreachable!("this reference models drop-tail only")
        }
    };
    let mut queue: VecDeque<(usize, u32, u32)> = VecDeque::new(); // id, size, remaining
    let mut delivered = Vec::new();
    let mut dropped = Vec::new();
    let mut next_entry = 0;
    let mut admit_until = |t: u64, queue: &mut VecDeque<(usize, u32, u32)>, next: &mut usize| {
        while *next < entries.len() && entries[*next].0 <= t {
            let (_, b, id) = entries[*next];
            let waiting: u64 = queue
                .iter()
                .filter(|q| q.1 == q.2)
                .map(|q| u64::from(q.1))
                .sum();
            if limit.is_some_and(|l| waiting + u64::from(b) > l) {
                dropped.push(id);
            } else {
                queue.push_back((id, b, b));
            }
            *next += 1;
        }
    };
    for o in trace
        .cursor(cfg.looping)
        .map(Instant::as_micros)
        .take_while(|&o| o <= until_us)
    {
        admit_until(o, &mut queue, &mut next_entry);
        let mut budget = cfg.opportunity_bytes;
        while budget > 0 && !queue.is_empty() {
            let head = queue.front_mut().unwrap();
            if head.2 <= budget {
                budget -= head.2;
                delivered.push((head.0, o));
                queue.pop_front();
            } else {
                head.2 -= budget;
                budget = 0;
            }
        }
    }
    admit_until(until_us, &mut queue, &mut next_entry);
    (delivered, dropped)
}

fn check_conservation(link: &Link<usize>) -> Result<(), TestCaseError> {
    let s = link.stats();
    prop_assert_eq!(
        s.bytes_sent,
        s.bytes_delivered + link.queue_bytes() + link.in_flight_bytes() + s.bytes_dropped
    );
    prop_assert_eq!(
        s.packets_sent,
        s.packets_delivered
            + link.queue_packets() as u64
            + link.in_flight_packets() as u64
            + s.packets_dropped
    );
    prop_assert_eq!(
        s.bytes_sent,
        s.bytes_enqueued + s.bytes_dropped + link.in_flight_bytes()
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn bytes_conserved_fifo_and_matches_reference(
        gaps in prop::collection::vec(0u64..6, 1..25),
        looping in any::<bool>(),
        delay_ms in 0u64..30,
        limit in prop::option::of(0u64..8000),
        packets in prop::collection::vec(
            (prop_oneof![0u64..4000, (0u64..5).prop_map(|m| m * 1000)], 0u32..4000),
            0..60,
        ),
    ) {
        let mut t = 0;
        let ms: Vec<u64> = gaps.iter().map(|g| { t += g; t }).collect();
        let trace = trace(&ms);
        let cfg = config(delay_ms, looping, limit);
        let mut now = 0;
        let sends: Vec<(u64, u32)> = packets.iter().map(|&(gap, b)| { now += gap; (now, b) }).collect();
        let until = now + 200_000;

        // Interleaved run, checking invariants at every step. (Advance only to just before each
        // send: with zero delay, a packet sent at T after advancing to T misses opportunities at T.)
        let mut link = Link::new(Arc::clone(&trace), cfg.clone());
        let mut events = Vec::new();
        for (i, &(t, size)) in sends.iter().enumerate() {
            if t > 0 {
                link.advance(Instant::from_micros(t - 1), &mut |e| events.push(e));
            }
            check_conservation(&link)?;
            link.send(Instant::from_micros(t), size, i);
            check_conservation(&link)?;
        }
        link.advance(Instant::from_micros(until), &mut |e| events.push(e));
        check_conservation(&link)?;

        // Time order, opportunity before its deliveries, never before send + delay.
        let mut last = 0;
        let mut last_opportunity = None;
        let mut last_id = None;
        for e in &events {
            prop_assert!(e.at().as_micros() >= last, "out of order: {:?}", e);
            prop_assert!(e.at().as_micros() <= until);
            last = e.at().as_micros();
            match e {
                LinkEvent::Opportunity { at, .. } => last_opportunity = Some(at.as_micros()),
                LinkEvent::Delivered(d) => {
                    prop_assert_eq!(last_opportunity, Some(d.delivered.as_micros()));
                    prop_assert_eq!(d.enqueued.as_micros(), d.sent.as_micros() + cfg.propagation_delay_us.as_micros());
                    prop_assert!(d.delivered.as_micros() >= d.enqueued.as_micros());
                    prop_assert_eq!(d.sent.as_micros(), sends[d.payload].0);
                    prop_assert_eq!(d.bytes, sends[d.payload].1);
                    prop_assert!(!matches!(last_id, Some(l) if d.payload <= l), "not FIFO");
                    last_id = Some(d.payload);
                }
                _ => {}
            }
        }

        // Same answer as the independent reference model.
        let (ref_delivered, ref_dropped) = reference(&trace, &cfg, &sends, until);
        prop_assert_eq!(delivered_at(&events), ref_delivered);
        prop_assert_eq!(link.stats().packets_dropped as usize, ref_dropped.len());

        // Sending everything first and advancing once gives the same events.
        let mut batch = Link::new(Arc::clone(&trace), cfg.clone());
        for (i, &(t, size)) in sends.iter().enumerate() {
            batch.send(Instant::from_micros(t), size, i);
        }
        let mut batch_events = Vec::new();
        batch.advance(Instant::from_micros(until), &mut |e| batch_events.push(e));
        prop_assert_eq!(batch_events, events);
    }
}
