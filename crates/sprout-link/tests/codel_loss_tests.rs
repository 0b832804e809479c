//! CoDel (RFC 8289) queue and Bernoulli loss at the tail of the queue.
//!
//! Most scenarios use a 12 Mbit/s constant-rate trace: one 1500-byte opportunity every
//! millisecond, so a 1500-byte packet is dequeued (in CoDel's sense) and delivered at the same
//! opportunity, and its sojourn time is `delivered_us - enqueued_us`.

use sprout_core::time::{Duration, Instant};
use std::sync::Arc;

use proptest::prelude::*;
use sprout_link::{
    constant_rate_trace, Link, LinkConfig, LinkEvent, LinkStats, MmLog, MmLogWriter, QueueConfig,
    Trace, CODEL_DEFAULT_INTERVAL, CODEL_DEFAULT_TARGET,
};

const TARGET_US: u64 = CODEL_DEFAULT_TARGET.as_micros();
const INTERVAL_US: u64 = CODEL_DEFAULT_INTERVAL.as_micros();
/// Service time of one 1500-byte packet on the constant-rate trace (µs).
const SERVICE_US: u64 = 1_000;

/// One 1500-byte opportunity per ms (12 Mbit/s), looping every 10 s.
fn one_per_ms() -> Arc<Trace> {
    Arc::new(constant_rate_trace("const12", 12.0, 10.0).unwrap())
}

fn trace(ms: &[u64]) -> Arc<Trace> {
    Arc::new(Trace::from_opportunities_ms("test", ms.to_vec()).unwrap())
}

fn with_queue(queue: QueueConfig) -> LinkConfig {
    LinkConfig {
        queue,
        ..LinkConfig::default()
    }
}

/// Sends a 1500-byte packet at each time of `sends` (µs, non-decreasing; payload = index),
/// advancing to each send time first, then advances to `until_us`. Returns all events.
fn run(link: &mut Link<usize>, sends: &[u64], until_us: u64) -> Vec<LinkEvent<usize>> {
    let mut events = Vec::new();
    for (i, &t) in sends.iter().enumerate() {
        link.advance(Instant::from_micros(t), &mut |e| events.push(e));
        link.send(Instant::from_micros(t), 1500, i);
    }
    link.advance(Instant::from_micros(until_us), &mut |e| events.push(e));
    events
}

/// `(time, sojourn)` of every delivery (µs).
fn sojourns(events: &[LinkEvent<usize>]) -> Vec<(u64, u64)> {
    events
        .iter()
        .filter_map(|e| match e {
            LinkEvent::Delivered(d) => Some((
                d.delivered.as_micros(),
                d.delivered.as_micros() - d.enqueued.as_micros(),
            )),
            _ => None,
        })
        .collect()
}

fn head_drop_times(events: &[LinkEvent<usize>]) -> Vec<u64> {
    events
        .iter()
        .filter_map(|e| match e {
            LinkEvent::HeadDropped { at, .. } => Some(at.as_micros()),
            _ => None,
        })
        .collect()
}

fn delivered_payloads(events: &[LinkEvent<usize>]) -> Vec<(usize, u64)> {
    events
        .iter()
        .filter_map(|e| match e {
            LinkEvent::Delivered(d) => Some((d.payload, d.delivered.as_micros())),
            _ => None,
        })
        .collect()
}

/// Times `start, start + step, ...` below `end` (µs).
fn every(start: u64, step: u64, end: u64) -> Vec<u64> {
    (0..)
        .map(|i| start + i * step)
        .take_while(|&t| t < end)
        .collect()
}

fn median(mut v: Vec<u64>) -> u64 {
    assert!(!v.is_empty());
    v.sort_unstable();
    v[v.len() / 2]
}

fn percentile(mut v: Vec<u64>, p: f64) -> u64 {
    assert!(!v.is_empty());
    v.sort_unstable();
    v[((v.len() - 1) as f64 * p) as usize]
}

/// The stats identities of [`LinkStats`]' documentation.
fn assert_conservation(link: &Link<usize>) {
    let s = link.stats();
    let queued = link.queue_packets() as u64;
    let in_flight = link.in_flight_packets() as u64;
    assert_eq!(
        s.packets_sent,
        in_flight + s.packets_lost + s.packets_dropped + queued + s.packets_delivered
    );
    assert_eq!(
        s.bytes_sent,
        link.in_flight_bytes()
            + s.bytes_lost
            + s.bytes_dropped
            + link.queue_bytes()
            + s.bytes_delivered
    );
    assert_eq!(
        s.packets_enqueued,
        queued + s.packets_head_dropped + s.packets_delivered
    );
    assert_eq!(
        s.bytes_enqueued,
        link.queue_bytes() + s.bytes_head_dropped + s.bytes_delivered
    );
    assert!(s.packets_head_dropped <= s.packets_dropped);
}

// ---------------------------------------------------------------------------------------------
// CoDel
// ---------------------------------------------------------------------------------------------

#[test]
fn codel_constructor_has_the_rfc_defaults() {
    assert_eq!(
        QueueConfig::codel(),
        QueueConfig::CoDel {
            target_us: Duration::from_micros(5_000),
            interval_us: Duration::from_micros(100_000),
            limit_bytes: None
        }
    );
    assert_eq!(QueueConfig::codel().limit_bytes(), None);
}

#[test]
fn codel_does_nothing_while_sojourn_stays_below_target() {
    // Bursts of 5 packets every 10 ms (half the link rate): sojourn times 0..4 ms, just below
    // the 5 ms target, for 10 s.
    let sends: Vec<u64> = every(0, 10_000, 10_000_000)
        .into_iter()
        .flat_map(|t| [t; 5])
        .collect();
    let mut codel = Link::new(one_per_ms(), with_queue(QueueConfig::codel()));
    let events = run(&mut codel, &sends, 11_000_000);
    let max_sojourn = sojourns(&events).iter().map(|s| s.1).max().unwrap();
    assert_eq!(
        max_sojourn, 4_000,
        "the scenario should come close to target"
    );
    assert!(head_drop_times(&events).is_empty());
    assert_eq!(codel.stats().packets_dropped, 0);
    assert_eq!(codel.stats().packets_delivered, sends.len() as u64);

    // Exactly what an infinite drop-tail queue does.
    let mut fifo = Link::new(one_per_ms(), LinkConfig::default());
    assert_eq!(run(&mut fifo, &sends, 11_000_000), events);
}

#[test]
fn codel_tolerates_sojourn_above_target_for_less_than_an_interval() {
    // A burst of 60 packets each second: the sojourn time is at or above 5 ms from the 6th packet
    // to the 60th, i.e. for 55 ms < 100 ms. No drop.
    let sends: Vec<u64> = every(0, 1_000_000, 5_000_000)
        .into_iter()
        .flat_map(|t| [t; 60])
        .collect();
    let mut link = Link::new(one_per_ms(), with_queue(QueueConfig::codel()));
    let events = run(&mut link, &sends, 6_000_000);
    let max_sojourn = sojourns(&events).iter().map(|s| s.1).max().unwrap();
    assert_eq!(max_sojourn, 59_000);
    assert!(head_drop_times(&events).is_empty());
    assert_eq!(link.stats().packets_delivered, sends.len() as u64);
}

#[test]
fn codel_never_drops_when_at_most_one_mtu_would_remain() {
    // One opportunity every 200 ms; one packet arrives 1 ms after each, so every packet waits
    // 199 ms — far above target for far longer than an interval — but it is alone in the queue.
    let slow = trace(&[200]);
    let sends = every(181_000, 200_000, 5_000_000);
    let mut link = Link::new(Arc::clone(&slow), with_queue(QueueConfig::codel()));
    let events = run(&mut link, &sends, 6_000_000);
    assert!(sojourns(&events).iter().all(|s| s.1 == 199_000));
    assert!(head_drop_times(&events).is_empty());
    assert_eq!(link.stats().packets_delivered, sends.len() as u64);

    // With two packets per period the queue holds more than one MTU and CoDel does drop.
    let sends: Vec<u64> = sends.into_iter().flat_map(|t| [t; 2]).collect();
    let mut link = Link::new(slow, with_queue(QueueConfig::codel()));
    let events = run(&mut link, &sends, 6_000_000);
    assert!(!head_drop_times(&events).is_empty());
}

#[test]
fn codel_first_drop_after_an_interval_above_target_then_control_law() {
    // 2x overload: a packet every 0.5 ms, 1500 bytes, on a link serving one per ms.
    let sends = every(0, 500, 1_000_000);
    let mut link = Link::new(one_per_ms(), with_queue(QueueConfig::codel()));
    let events = run(&mut link, &sends, 1_200_000);
    assert_conservation(&link);

    let deliveries = sojourns(&events);
    let (above_at, _) = *deliveries
        .iter()
        .find(|s| s.1 >= TARGET_US)
        .expect("sojourn reaches target");
    let drops = head_drop_times(&events);
    assert!(drops.len() >= 8, "drops: {drops:?}");

    // First drop: the first dequeue once the sojourn has been above target for an interval.
    let first_due = above_at + INTERVAL_US;
    assert!(
        drops[0] >= first_due && drops[0] < first_due + SERVICE_US,
        "sojourn above target from {above_at} µs, first drop at {} µs",
        drops[0]
    );
    assert!(deliveries
        .iter()
        .filter(|s| s.0 > above_at && s.0 <= drops[0])
        .all(|s| s.1 >= TARGET_US));

    // Then drops are scheduled by the control law, drop_next += interval / sqrt(count): the
    // k-th drop after entering the dropping state (count = k) schedules the next one
    // interval/sqrt(k) later. Each happens at the first dequeue at or after its due time.
    assert!(drops[1] - drops[0] >= INTERVAL_US && drops[1] - drops[0] < INTERVAL_US + SERVICE_US);
    let gap_2_3 = drops[2] - drops[1];
    assert!(
        gap_2_3.abs_diff(70_711) < SERVICE_US,
        "interval/sqrt(2) expected, got {gap_2_3} µs"
    );
    let mut due = drops[0];
    for (k, &at) in drops.iter().enumerate().take(8).skip(1) {
        due += (INTERVAL_US as f64 / (k as f64).sqrt()) as u64;
        assert!(
            at >= due && at < due + SERVICE_US,
            "drop {k} due at {due} µs, happened at {at} µs"
        );
    }

    // Dropped packets had a sojourn time at or above target, and use none of the opportunity:
    // the queue never empties, so every opportunity from the first delivery on (and in
    // particular each one that drops) still delivers one packet.
    for e in &events {
        if let LinkEvent::HeadDropped { at, enqueued, .. } = e {
            assert!((*at - *enqueued).as_micros() >= TARGET_US);
            assert!(deliveries.iter().any(|s| s.0 == at.as_micros()));
        }
    }
    let first_delivery = deliveries[0].0;
    let opportunities = events
        .iter()
        .filter(
            |e| matches!(e, LinkEvent::Opportunity { at, .. } if at.as_micros() >= first_delivery),
        )
        .count();
    assert_eq!(deliveries.len(), opportunities);

    // Deliveries stay FIFO (head drops only remove packets).
    let order = delivered_payloads(&events);
    assert!(order.windows(2).all(|w| w[0].0 < w[1].0));
}

#[test]
fn codel_reentry_resumes_the_previous_drop_rate_within_16_intervals() {
    // A first overload episode long enough for several drops, then the queue drains; a second
    // episode starts either soon after (resume: count = drops of the last cycle - 1) or more
    // than 16 intervals after (count restarts at 1).
    let episode = |start: u64| every(start, 500, start + 600_000);
    let gap_after_reentry = |second_start: u64| -> (usize, u64) {
        let mut sends = episode(0);
        sends.extend(episode(second_start));
        let mut link = Link::new(one_per_ms(), with_queue(QueueConfig::codel()));
        let events = run(&mut link, &sends, second_start + 3_000_000);
        let drops = head_drop_times(&events);
        let first_cycle = drops.iter().filter(|&&t| t < second_start).count();
        let second: Vec<u64> = drops[first_cycle..].to_vec();
        assert!(second.len() >= 2);
        (first_cycle, second[1] - second[0])
    };

    // Soon after: the first episode's drops end ~1.2 s in (the drain), the second episode starts
    // at 1.5 s and re-enters dropping ~110 ms later, well within 16 intervals of drop_next.
    let (cycle, gap) = gap_after_reentry(1_500_000);
    assert!(
        cycle > 2,
        "need delta = count - lastcount > 1; got {cycle} drops"
    );
    let expected = (INTERVAL_US as f64 / ((cycle - 1) as f64).sqrt()) as u64;
    assert!(
        gap >= expected && gap < expected + SERVICE_US,
        "{cycle} drops in the first cycle: expected interval/sqrt({}) = {expected} µs, got {gap}",
        cycle - 1
    );

    // Long after (> 16 intervals): count restarts at 1, so the next drop is a whole interval on.
    let (_, gap) = gap_after_reentry(4_000_000);
    assert!(
        (INTERVAL_US..INTERVAL_US + SERVICE_US).contains(&gap),
        "gap {gap}"
    );
}

/// A loss-responsive sender (rate-based AIMD, capped at twice the link rate): +1 packet/s every
/// ms, rate halved (at most once per 100 ms) when the link reports a drop. Returns
/// `(time, sojourn)` per delivery and the stats.
fn aimd_run(queue: QueueConfig, seconds: u64) -> (Vec<(u64, u64)>, LinkStats) {
    let mut link: Link<usize> = Link::new(one_per_ms(), with_queue(queue));
    let mut deliveries = Vec::new();
    let mut rate = 500.0_f64; // packets/s; the link carries 1000
    let mut credit = 0.0_f64;
    let mut last_cut = 0;
    let mut id = 0;
    for ms in 0..seconds * 1000 {
        let now = ms * 1000;
        let mut dropped = false;
        link.advance(Instant::from_micros(now), &mut |e| match e {
            LinkEvent::Delivered(d) => deliveries.push((
                d.delivered.as_micros(),
                d.delivered.as_micros() - d.enqueued.as_micros(),
            )),
            LinkEvent::Dropped { .. } | LinkEvent::HeadDropped { .. } => dropped = true,
            _ => {}
        });
        if dropped && now - last_cut >= 100_000 {
            rate /= 2.0;
            last_cut = now;
        }
        rate = (rate + 1.0).min(2000.0);
        credit += rate / 1000.0;
        while credit >= 1.0 {
            link.send(Instant::from_micros(now), 1500, id);
            id += 1;
            credit -= 1.0;
        }
    }
    assert_conservation(&link);
    (deliveries, link.stats())
}

#[test]
fn codel_bounds_standing_delay_where_drop_tail_grows_without_bound() {
    let last_10s = |d: &[(u64, u64)]| -> Vec<u64> {
        d.iter()
            .filter(|s| s.0 >= 20_000_000)
            .map(|s| s.1)
            .collect()
    };
    // The sender wants 2x the link rate and backs off only on drops.
    let (codel, codel_stats) = aimd_run(QueueConfig::codel(), 30);
    let tail = last_10s(&codel);
    assert!(codel_stats.packets_head_dropped > 0);
    assert!(median(tail.clone()) < 20_000, "median {}", median(tail));
    assert!(percentile(tail.clone(), 0.99) < 40_000);
    assert!(
        tail.len() > 8_000,
        "link mostly busy: {} of 10 000",
        tail.len()
    );

    // An infinite drop-tail queue never drops, so the same sender stays at 2x and the delay grows
    // by about half a second per second.
    let (fifo, fifo_stats) = aimd_run(QueueConfig::default(), 30);
    assert_eq!(fifo_stats.packets_dropped, 0);
    let tail = last_10s(&fifo);
    assert!(median(tail.clone()) > 5_000_000);
    let second = |s: u64| -> Vec<u64> {
        fifo.iter()
            .filter(|d| d.0 / 1_000_000 == s)
            .map(|d| d.1)
            .collect()
    };
    assert!(median(second(29)) > median(second(19)) + 4_000_000);
}

#[test]
fn codel_keeps_an_unresponsive_overload_bounded() {
    // Unresponsive 2x overload for 60 s. RFC CoDel's drop rate ramps up only as sqrt(count) per
    // interval, so against traffic that ignores drops it holds a standing queue of seconds, not
    // milliseconds; but the queue stays bounded, while drop-tail's grows linearly.
    let sends = every(0, 500, 60_000_000);
    let mut codel = Link::new(one_per_ms(), with_queue(QueueConfig::codel()));
    let events = run(&mut codel, &sends, 60_000_000);
    assert_conservation(&codel);
    let codel_max = sojourns(&events).iter().map(|s| s.1).max().unwrap();
    assert!(codel_max < 10_000_000, "CoDel max sojourn {codel_max} µs");

    let mut fifo = Link::new(one_per_ms(), LinkConfig::default());
    let events = run(&mut fifo, &sends, 60_000_000);
    let fifo_max = sojourns(&events).iter().map(|s| s.1).max().unwrap();
    assert!(fifo_max > 25_000_000, "drop-tail max sojourn {fifo_max} µs");
}

#[test]
fn codel_drops_use_no_budget_and_never_hit_a_started_packet() {
    // 500-byte opportunities every ms, 1500-byte packets: each packet spans three opportunities.
    // A 2x overload (a packet every 1.5 ms) for 3 s makes CoDel drop; then the queue drains.
    // The queue is never empty from the first arrival until it has drained, so every opportunity
    // in between is spent entirely on delivered packets — only the last one may have budget
    // left. A head drop that used budget, or a drop of a partly sent packet, would waste some.
    let cfg = LinkConfig {
        opportunity_bytes: 500,
        ..with_queue(QueueConfig::codel())
    };
    let mut link = Link::new(one_per_ms(), cfg.clone());
    let sends = every(0, 1_500, 3_000_000);
    let events = run(&mut link, &sends, 20_000_000);
    assert_conservation(&link);
    let s = link.stats();
    assert!(s.packets_head_dropped > 10, "{s:?}");
    assert_eq!(link.queue_packets(), 0, "drained");
    let first_arrival = cfg.propagation_delay_us.as_micros();
    let last_delivery = delivered_payloads(&events).last().unwrap().1;
    let opportunities = events
        .iter()
        .filter(|e| {
            matches!(e, LinkEvent::Opportunity { at, .. }
                if (first_arrival..=last_delivery).contains(&at.as_micros()))
        })
        .count() as u64;
    let budget = opportunities * 500;
    assert!(
        s.bytes_delivered <= budget && budget - s.bytes_delivered < 500,
        "{} bytes delivered with {budget} bytes of opportunities",
        s.bytes_delivered
    );
}

#[test]
fn codel_tail_limit_counts_waiting_bytes() {
    // The optional byte limit works as drop-tail's: here 3000 bytes of waiting packets.
    let queue = QueueConfig::CoDel {
        target_us: CODEL_DEFAULT_TARGET,
        interval_us: CODEL_DEFAULT_INTERVAL,
        limit_bytes: Some(3000),
    };
    let mut link = Link::new(trace(&[100]), with_queue(queue));
    let events = run(&mut link, &[0, 0, 0, 0], 50_000);
    let tail_drops = events
        .iter()
        .filter(|e| matches!(e, LinkEvent::Dropped { .. }))
        .count();
    assert_eq!(tail_drops, 2);
    let s = link.stats();
    assert_eq!((s.packets_dropped, s.packets_head_dropped), (2, 0));
    assert_eq!(link.queue_packets(), 2);
}

#[test]
fn codel_description() {
    assert_eq!(
        QueueConfig::codel().mahimahi_description(),
        "codel [target=5ms, interval=100ms]"
    );
    let q = QueueConfig::CoDel {
        target_us: Duration::from_micros(2_500),
        interval_us: Duration::from_micros(80_001),
        limit_bytes: Some(150_000),
    };
    assert_eq!(
        q.mahimahi_description(),
        "codel [target=2.5ms, interval=80.001ms, bytes=150000]"
    );
    // Unchanged for drop-tail.
    assert_eq!(QueueConfig::default().mahimahi_description(), "infinite");
}

#[test]
fn mm_log_of_codel_writes_head_drops_without_a_second_arrival() {
    let config = with_queue(QueueConfig::codel());
    let trace = one_per_ms();
    let mut link = Link::new(Arc::clone(&trace), config.clone());
    let events = run(&mut link, &every(0, 500, 600_000), 700_000);
    let s = link.stats();
    assert!(s.packets_head_dropped > 0);

    let mut w = MmLogWriter::new(Vec::new(), "downlink", trace.name(), &config).unwrap();
    for e in &events {
        w.event(e).unwrap();
    }
    let bytes = w.finish().unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.contains("# queue: codel [target=5ms, interval=100ms]\n"));
    assert!(!text.contains("# loss"));
    let log = MmLog::parse(&bytes[..]).unwrap();
    assert_eq!(log.arrivals.len() as u64, s.packets_enqueued);
    assert_eq!(log.drops.len() as u64, s.packets_dropped);
    assert_eq!(log.departures.len() as u64, s.packets_delivered);
    let first_drop = head_drop_times(&events)[0] / 1000;
    assert!(log.drops.iter().any(|d| d.ms == first_drop));
}

// ---------------------------------------------------------------------------------------------
// Bernoulli loss
// ---------------------------------------------------------------------------------------------

fn lossy(loss: f64, seed: u64) -> LinkConfig {
    LinkConfig {
        loss,
        seed,
        ..LinkConfig::default()
    }
}

/// Sends `n` 100-byte packets at time 0 and lets them all reach the queue; returns, per packet in
/// send order, whether it was lost.
fn loss_pattern(config: LinkConfig, n: usize) -> (Vec<bool>, Link<usize>) {
    let mut link = Link::new(one_per_ms(), config);
    for i in 0..n {
        link.send(Instant::from_micros(0), 100, i);
    }
    let mut pattern = Vec::with_capacity(n);
    let delay = link.config().propagation_delay_us.as_micros();
    link.advance(Instant::from_micros(delay), &mut |e| match e {
        LinkEvent::Enqueued { .. } => pattern.push(false),
        LinkEvent::Dropped { at, .. } => {
            assert_eq!(at.as_micros(), delay, "lost at the tail of the queue");
            pattern.push(true)
        }
        _ => {}
    });
    assert_eq!(pattern.len(), n);
    (pattern, link)
}

#[test]
fn bernoulli_loss_rate_matches() {
    let n = 100_000;
    let (pattern, link) = loss_pattern(lossy(0.05, 1), n);
    let lost = pattern.iter().filter(|&&l| l).count();
    let fraction = lost as f64 / n as f64;
    assert!(
        (0.045..=0.055).contains(&fraction),
        "loss fraction {fraction}"
    );
    let s = link.stats();
    assert_eq!(s.packets_lost, lost as u64);
    assert_eq!(s.bytes_lost, 100 * lost as u64);
    assert_eq!(s.packets_dropped, 0, "losses are not queue drops");
    assert_eq!(s.packets_enqueued, (n - lost) as u64);
    assert_eq!(
        link.queue_packets() as u64 + s.packets_delivered,
        (n - lost) as u64
    );
}

#[test]
fn same_seed_same_losses_different_seed_different_losses() {
    let (a, _) = loss_pattern(lossy(0.05, 7), 20_000);
    let (b, _) = loss_pattern(lossy(0.05, 7), 20_000);
    let (c, _) = loss_pattern(lossy(0.05, 8), 20_000);
    assert_eq!(a, b);
    assert_ne!(a, c);

    // Known answer: the generator is portable (ChaCha8), so these never change.
    let (p, _) = loss_pattern(lossy(0.05, 0), 400);
    let lost: Vec<usize> = (0..p.len()).filter(|&i| p[i]).collect();
    assert_eq!(
        lost,
        vec![
            38, 71, 80, 92, 103, 137, 181, 192, 193, 198, 216, 268, 271, 283, 291, 314, 317, 338,
            377, 396, 397
        ]
    );
}

#[test]
fn losses_are_the_same_whatever_the_interleaving() {
    // Losses depend only on the order packets reach the queue, not on how time is advanced.
    let config = lossy(0.3, 3);
    let sends = every(0, 700, 2_000_000);
    let mut a = Link::new(one_per_ms(), config.clone());
    let events = run(&mut a, &sends, 2_100_000);
    let mut b = Link::new(one_per_ms(), config);
    for (i, &t) in sends.iter().enumerate() {
        b.send(Instant::from_micros(t), 1500, i);
    }
    let mut batch = Vec::new();
    b.advance(Instant::from_micros(2_100_000), &mut |e| batch.push(e));
    assert_eq!(batch, events);
    assert_conservation(&a);
    assert!(a.stats().packets_lost > 0);
}

#[test]
fn zero_loss_drops_nothing_and_full_loss_drops_everything() {
    let (pattern, link) = loss_pattern(lossy(0.0, 12345), 10_000);
    assert!(pattern.iter().all(|&l| !l));
    assert_eq!(link.stats().packets_lost, 0);

    // Loss 0 with any seed behaves exactly as the default configuration.
    let sends = every(0, 700, 1_000_000);
    let mut a = Link::new(one_per_ms(), lossy(0.0, 99));
    let mut b = Link::new(one_per_ms(), LinkConfig::default());
    assert_eq!(
        run(&mut a, &sends, 1_100_000),
        run(&mut b, &sends, 1_100_000)
    );

    let (pattern, link) = loss_pattern(lossy(1.0, 0), 10_000);
    assert!(pattern.iter().all(|&l| l));
    assert_eq!(link.stats().packets_lost, 10_000);
    assert_eq!(link.queue_packets(), 0);
}

#[test]
fn loss_comes_before_the_queue_discipline() {
    // A lost packet takes no room: with a 1500-byte limit and loss 1, nothing is a queue drop.
    let config = LinkConfig {
        queue: QueueConfig::DropTail {
            limit_bytes: Some(1500),
        },
        ..lossy(1.0, 0)
    };
    let (_, link) = loss_pattern(config, 10);
    let s = link.stats();
    assert_eq!((s.packets_lost, s.packets_dropped), (10, 0));
}

#[test]
fn validate_rejects_nonsense() {
    assert_eq!(LinkConfig::default().validate(), Ok(()));
    for ok in [0.0, 0.05, 1.0] {
        assert_eq!(lossy(ok, 0).validate(), Ok(()));
    }
    for bad in [1.5, -0.1, f64::NAN, f64::INFINITY] {
        let err = lossy(bad, 0).validate().unwrap_err().to_string();
        assert!(err.contains("loss"), "{err}");
    }
    assert!(with_queue(QueueConfig::codel()).validate().is_ok());
    let zero_interval = with_queue(QueueConfig::CoDel {
        target_us: Duration::from_micros(5_000),
        interval_us: Duration::from_micros(0),
        limit_bytes: None,
    });
    assert!(zero_interval
        .validate()
        .unwrap_err()
        .to_string()
        .contains("interval"));
    let zero_opportunity = LinkConfig {
        opportunity_bytes: 0,
        ..LinkConfig::default()
    };
    assert!(zero_opportunity
        .validate()
        .unwrap_err()
        .to_string()
        .contains("opportunity_bytes"));

    // Link::new still accepts them: NaN is no loss, 1.5 is clamped to 1.
    let (pattern, _) = loss_pattern(lossy(f64::NAN, 0), 1000);
    assert!(pattern.iter().all(|&l| !l));
    let (pattern, _) = loss_pattern(lossy(1.5, 0), 1000);
    assert!(pattern.iter().all(|&l| l));
}

#[test]
fn mm_log_header_mentions_loss_and_still_parses() {
    let config = LinkConfig {
        queue: QueueConfig::codel(),
        ..lossy(0.05, 7)
    };
    let trace = one_per_ms();
    let mut link = Link::new(Arc::clone(&trace), config.clone());
    let events = run(&mut link, &every(0, 900, 300_000), 400_000);
    let mut w = MmLogWriter::new(Vec::new(), "uplink", trace.name(), &config).unwrap();
    for e in &events {
        w.event(e).unwrap();
    }
    let bytes = w.finish().unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.contains("# propagation delay: 20 ms\n# loss: 0.05 (bernoulli, seed 7)\n"));
    let log = MmLog::parse(&bytes[..]).unwrap();
    assert_eq!(log.propagation_delay_ms, Some(20));
    assert_eq!(
        log.queue.as_deref(),
        Some("codel [target=5ms, interval=100ms]")
    );
    let s = link.stats();
    assert!(s.packets_lost > 0);
    // Lost packets appear as arrival + drop, like tail drops.
    assert_eq!(
        log.arrivals.len() as u64,
        s.packets_enqueued + s.packets_lost + s.packets_dropped - s.packets_head_dropped
    );
    assert_eq!(log.drops.len() as u64, s.packets_lost + s.packets_dropped);
}

// ---------------------------------------------------------------------------------------------
// Serde
// ---------------------------------------------------------------------------------------------

#[test]
fn serde_round_trips_codel_and_loss() {
    let q = QueueConfig::CoDel {
        target_us: Duration::from_micros(2_000),
        interval_us: Duration::from_micros(50_000),
        limit_bytes: Some(90_000),
    };
    let json = serde_json::to_string(&q).unwrap();
    assert_eq!(
        json,
        r#"{"kind":"codel","target_us":2000,"interval_us":50000,"limit_bytes":90000}"#
    );
    assert_eq!(serde_json::from_str::<QueueConfig>(&json).unwrap(), q);
    // Missing CoDel fields take the RFC defaults.
    assert_eq!(
        serde_json::from_str::<QueueConfig>(r#"{"kind":"codel"}"#).unwrap(),
        QueueConfig::codel()
    );

    let c = LinkConfig {
        queue: q,
        loss: 0.05,
        seed: 42,
        ..LinkConfig::default()
    };
    let json = serde_json::to_string(&c).unwrap();
    assert!(json.contains(r#""loss":0.05"#) && json.contains(r#""seed":42"#));
    let back: LinkConfig = serde_json::from_str(&json).unwrap();
    assert_eq!(back, c);
    // Missing fields: no loss, seed 0.
    let partial: LinkConfig =
        serde_json::from_str(r#"{"queue": {"kind": "codel"}, "loss": 0.01}"#).unwrap();
    assert_eq!(partial.queue, QueueConfig::codel());
    assert_eq!((partial.loss, partial.seed), (0.01, 0));
    let empty: LinkConfig = serde_json::from_str("{}").unwrap();
    assert_eq!((empty.loss, empty.seed), (0.0, 0));

    // Stats with the new counters round-trip, and older stats without them still read.
    let s = LinkStats {
        packets_lost: 3,
        bytes_lost: 4500,
        packets_head_dropped: 1,
        ..LinkStats::default()
    };
    let back: LinkStats = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(back, s);
    let old: LinkStats = serde_json::from_str(r#"{"packets_sent": 5}"#).unwrap();
    assert_eq!(old.packets_sent, 5);
    assert_eq!(old.packets_lost, 0);
}

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// With random traces, packet sizes, opportunity sizes, CoDel parameters, limits and losses:
    /// counters balance, events are in time order, deliveries are FIFO, every head drop had a
    /// sojourn time at or above target, and advancing in one go gives the same events.
    #[test]
    fn codel_and_loss_invariants(
        gaps in prop::collection::vec(0u64..4, 1..30),
        looping in any::<bool>(),
        delay_ms in 0u64..10,
        target_us in 0u64..4_000,
        interval_us in 1u64..30_000,
        limit in prop::option::of(0u64..12_000),
        opportunity_bytes in 1u32..3000,
        loss in prop_oneof![Just(0.0), 0.0f64..0.5],
        seed in any::<u64>(),
        packets in prop::collection::vec((0u64..1500, 0u32..3000), 0..150),
    ) {
        let mut t = 0;
        let ms: Vec<u64> = gaps.iter().map(|g| { t += g; t }).collect();
        let trace = trace(&ms);
        let cfg = LinkConfig {
            propagation_delay_us: Duration::from_micros(delay_ms * 1000),
            queue: QueueConfig::CoDel {
                target_us: Duration::from_micros(target_us),
                interval_us: Duration::from_micros(interval_us),
                limit_bytes: limit,
            },
            looping,
            opportunity_bytes,
            loss,
            seed,
            ..LinkConfig::default()
        };
        let mut now = 0;
        let sends: Vec<(u64, u32)> =
            packets.iter().map(|&(gap, b)| { now += gap; (now, b) }).collect();
        let until = now + 500_000;

        let mut link = Link::new(Arc::clone(&trace), cfg.clone());
        let mut events = Vec::new();
        for (i, &(t, size)) in sends.iter().enumerate() {
            if t > 0 {
                link.advance(Instant::from_micros(t - 1), &mut |e| events.push(e));
            }
            link.send(Instant::from_micros(t), size, i);
        }
        link.advance(Instant::from_micros(until), &mut |e| events.push(e));
        assert_conservation(&link);

        let mut last = 0;
        let mut last_opportunity = None;
        let mut last_id = None;
        for e in &events {
            prop_assert!(e.at().as_micros() >= last, "out of order: {:?}", e);
            last = e.at().as_micros();
            match e {
                LinkEvent::Opportunity { at, .. } => last_opportunity = Some(at.as_micros()),
                LinkEvent::HeadDropped { at, enqueued, .. } => {
                    prop_assert_eq!(last_opportunity, Some(at.as_micros()));
                    prop_assert!((*at - *enqueued).as_micros() >= target_us);
                }
                LinkEvent::Delivered(d) => {
                    prop_assert_eq!(last_opportunity, Some(d.delivered.as_micros()));
                    prop_assert_eq!(d.bytes, sends[d.payload].1);
                    prop_assert!(!matches!(last_id, Some(l) if d.payload <= l), "not FIFO");
                    last_id = Some(d.payload);
                }
                _ => {}
            }
        }

        let mut batch = Link::new(Arc::clone(&trace), cfg);
        for (i, &(t, size)) in sends.iter().enumerate() {
            batch.send(Instant::from_micros(t), size, i);
        }
        let mut batch_events = Vec::new();
        batch.advance(Instant::from_micros(until), &mut |e| batch_events.push(e));
        prop_assert_eq!(batch_events, events);
    }

    /// CoDel whose target is never reached is exactly drop-tail with the same limit.
    #[test]
    fn codel_with_unreachable_target_is_drop_tail(
        gaps in prop::collection::vec(0u64..6, 1..25),
        limit in prop::option::of(0u64..8000),
        opportunity_bytes in 1u32..3000,
        packets in prop::collection::vec((0u64..3000, 0u32..4000), 0..80),
    ) {
        let mut t = 0;
        let ms: Vec<u64> = gaps.iter().map(|g| { t += g; t }).collect();
        let trace = trace(&ms);
        let mut now = 0;
        let sends: Vec<(u64, u32)> =
            packets.iter().map(|&(gap, b)| { now += gap; (now, b) }).collect();
        let go = |queue: QueueConfig| {
            let cfg = LinkConfig { queue, opportunity_bytes, ..LinkConfig::default() };
            let mut link = Link::new(Arc::clone(&trace), cfg);
            for (i, &(t, size)) in sends.iter().enumerate() {
                link.send(Instant::from_micros(t), size, i);
            }
            let mut events = Vec::new();
            link.advance(Instant::from_micros(now + 300_000), &mut |e| events.push(e));
            events
        };
        let codel = go(QueueConfig::CoDel {
            target_us: Duration::from_micros(u64::MAX),
            interval_us: CODEL_DEFAULT_INTERVAL,
            limit_bytes: limit,
        });
        prop_assert_eq!(codel, go(QueueConfig::DropTail { limit_bytes: limit }));
    }
}
