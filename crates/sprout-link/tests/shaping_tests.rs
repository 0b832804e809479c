//! Buffers (packets, bytes, time; drop-tail and drop-head), PIE on the link, Gilbert-Elliott
//! loss, delay traces and jitter, and the drop reasons in events, counters and mm-link logs.
//!
//! Most scenarios use a 12 Mbit/s constant-rate trace: one 1500-byte opportunity every
//! millisecond (1.5 MB/s).

use std::sync::Arc;

use sprout_core::time::{Duration, Instant};
use sprout_link::{
    constant_rate_trace, Buffer, DelayTrace, DelayTraceError, DropReason, GilbertElliott, Jitter,
    Link, LinkConfig, LinkConfigError, LinkEvent, MmLog, MmLogWriter, QueueConfig, Trace,
};

/// One 1500-byte opportunity per ms (12 Mbit/s), looping every 10 s.
fn one_per_ms() -> Arc<Trace> {
    Arc::new(constant_rate_trace("const12", 12.0, 10.0).unwrap())
}

fn buffered(spec: &str) -> LinkConfig {
    LinkConfig {
        propagation_delay_us: Duration::ZERO,
        buffer: Some(spec.parse::<Buffer>().unwrap()),
        ..LinkConfig::default()
    }
}

/// Sends `(time µs, bytes)` packets (payload = index), advancing to each send time first, then
/// advances to `until_us`. Returns all events.
fn run(link: &mut Link<usize>, sends: &[(u64, u32)], until_us: u64) -> Vec<LinkEvent<usize>> {
    let mut events = Vec::new();
    for (i, &(t, b)) in sends.iter().enumerate() {
        link.advance(Instant::from_micros(t), &mut |e| events.push(e));
        link.send(Instant::from_micros(t), b, i);
    }
    link.advance(Instant::from_micros(until_us), &mut |e| events.push(e));
    events
}

fn delivered(events: &[LinkEvent<usize>]) -> Vec<usize> {
    events
        .iter()
        .filter_map(|e| match e {
            LinkEvent::Delivered(d) => Some(d.payload),
            _ => None,
        })
        .collect()
}

/// A burst of `n` 1500-byte packets at 0.5 ms (between two opportunities): the first waits
/// for the opportunity at 1 ms, so all `n` are waiting when the last arrives.
fn burst(n: usize) -> Vec<(u64, u32)> {
    vec![(500, 1500); n]
}

#[test]
fn packet_limit_drop_tail_keeps_the_first() {
    let mut link = Link::new(one_per_ms(), buffered("3pkt"));
    let events = run(&mut link, &burst(5), 50_000);
    assert_eq!(delivered(&events), vec![0, 1, 2]);
    let s = link.stats();
    assert_eq!((s.packets_buffer_dropped, s.packets_aqm_dropped), (2, 0));
    assert_eq!(s.packets_dropped, 2);
    assert_eq!(s.packets_head_dropped, 0);
    assert!(events.iter().any(|e| matches!(
        e,
        LinkEvent::Dropped {
            reason: DropReason::Buffer,
            ..
        }
    )));
}

#[test]
fn packet_limit_drop_head_keeps_the_last() {
    let mut link = Link::new(one_per_ms(), buffered("3pkt,head"));
    let events = run(&mut link, &burst(5), 50_000);
    assert_eq!(delivered(&events), vec![2, 3, 4]);
    let s = link.stats();
    assert_eq!((s.packets_buffer_dropped, s.packets_head_dropped), (2, 2));
    // Each head drop comes before the arrival it made room for, from the head (index 0).
    let heads: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            LinkEvent::HeadDropped {
                reason: DropReason::Buffer,
                index,
                ..
            } => Some(*index),
            _ => None,
        })
        .collect();
    assert_eq!(heads, vec![0, 0]);
}

#[test]
fn drop_head_spares_the_packet_in_transmission() {
    // 3000-byte packets take two opportunities; the first is in transmission from 1 ms on.
    let mut link = Link::new(one_per_ms(), buffered("2pkt,head"));
    let sends = [(500, 3000), (500, 3000), (1_500, 3000), (1_500, 3000)];
    let events = run(&mut link, &sends, 50_000);
    // At 1.5 ms packet 0 is in transit; 1 waits; 2 joins (2 waiting); 3 pushes out 1, the
    // oldest waiting, at index 1 behind the head.
    assert_eq!(delivered(&events), vec![0, 2, 3]);
    let dropped: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            LinkEvent::HeadDropped { index, .. } => Some(*index),
            _ => None,
        })
        .collect();
    assert_eq!(dropped, vec![1]);
}

#[test]
fn byte_limit_in_each_end() {
    // 4000 bytes hold two 1500-byte packets (the third would make 4500).
    let mut tail = Link::new(one_per_ms(), buffered("4kB"));
    assert_eq!(delivered(&run(&mut tail, &burst(4), 50_000)), vec![0, 1]);
    let mut head = Link::new(one_per_ms(), buffered("4000B,head"));
    assert_eq!(delivered(&run(&mut head, &burst(4), 50_000)), vec![2, 3]);
    // A packet larger than the whole limit is dropped itself, even with drop-head.
    let mut big = Link::new(one_per_ms(), buffered("1kB,head"));
    let events = run(&mut big, &[(500, 1500)], 50_000);
    assert!(delivered(&events).is_empty());
    assert_eq!(big.stats().packets_buffer_dropped, 1);
}

#[test]
fn time_limit_is_bytes_at_the_mean_rate() {
    // 5 ms at 1.5 MB/s = 7500 bytes: five 1500-byte packets.
    let mut link = Link::new(one_per_ms(), buffered("5ms"));
    let events = run(&mut link, &burst(8), 50_000);
    assert_eq!(delivered(&events), vec![0, 1, 2, 3, 4]);
    // The same at half the rate (one opportunity every 2 ms) holds half as much.
    let half = Arc::new(constant_rate_trace("const6", 6.0, 10.0).unwrap());
    let mut link = Link::new(half, buffered("5ms"));
    let events = run(&mut link, &burst(8), 80_000);
    assert_eq!(delivered(&events).len(), 2);
}

#[test]
fn the_lower_of_two_byte_limits_holds() {
    let cfg = LinkConfig {
        queue: QueueConfig::DropTail {
            limit_bytes: Some(3000),
        },
        ..buffered("10pkt")
    };
    let mut link = Link::new(one_per_ms(), cfg);
    assert_eq!(delivered(&run(&mut link, &burst(5), 50_000)), vec![0, 1]);
}

#[test]
fn pie_drops_early_under_a_standing_queue_and_says_so() {
    let cfg = LinkConfig {
        queue: QueueConfig::pie(),
        propagation_delay_us: Duration::ZERO,
        ..LinkConfig::default()
    };
    let mut link = Link::new(one_per_ms(), cfg);
    // Twice the link's rate for 3 s: a queue that grows by 1500 bytes a ms.
    let sends: Vec<(u64, u32)> = (0..6000).map(|i| (i * 500, 1500)).collect();
    let events = run(&mut link, &sends, 4_000_000);
    let s = link.stats();
    assert!(s.packets_aqm_dropped > 1000, "{s:?}");
    assert_eq!(s.packets_buffer_dropped, 0);
    // No drop during the 150 ms burst allowance.
    let first = events
        .iter()
        .find_map(|e| match e {
            LinkEvent::Dropped {
                at,
                reason: DropReason::Aqm,
                ..
            } => Some(at.as_micros()),
            _ => None,
        })
        .unwrap();
    assert!(first >= 150_000, "first drop at {first} µs");
    // Over the last second the delay is held near the 15 ms target (far below the 1.5 s an
    // unmanaged queue would reach).
    let late: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            LinkEvent::Delivered(d) if d.delivered.as_micros() > 2_000_000 => {
                Some(d.delivered.as_micros() - d.enqueued.as_micros())
            }
            _ => None,
        })
        .collect();
    let mean = late.iter().sum::<u64>() / late.len() as u64;
    assert!((5_000..60_000).contains(&mean), "mean sojourn {mean} µs");
}

#[test]
fn pie_runs_the_same_from_the_same_seed() {
    let go = |seed| {
        let cfg = LinkConfig {
            queue: QueueConfig::pie(),
            seed,
            ..LinkConfig::default()
        };
        let mut link = Link::new(one_per_ms(), cfg);
        let sends: Vec<(u64, u32)> = (0..4000).map(|i| (i * 500, 1500)).collect();
        delivered(&run(&mut link, &sends, 3_000_000))
    };
    assert_eq!(go(1), go(1));
    assert_ne!(go(1), go(2));
}

/// Runs `n` packets through a lossless-queue link with Gilbert-Elliott loss; returns which
/// were lost.
fn ge_losses(ge: GilbertElliott, n: usize, seed: u64) -> Vec<bool> {
    let cfg = LinkConfig {
        gilbert_elliott: Some(ge),
        seed,
        propagation_delay_us: Duration::ZERO,
        ..LinkConfig::default()
    };
    // A rate far above what is sent: nothing queues.
    let fast = Arc::new(constant_rate_trace("fast", 1200.0, 10.0).unwrap());
    let mut link: Link<()> = Link::new(fast, cfg);
    let mut lost = Vec::with_capacity(n);
    for i in 0..n as u64 {
        let t = Instant::from_micros(i * 100);
        link.send(t, 100, ());
        link.advance(t, &mut |e| {
            if let LinkEvent::Dropped { reason, .. } = e {
                assert_eq!(reason, DropReason::Loss);
                lost.push(true);
            } else if let LinkEvent::Enqueued { .. } = e {
                lost.push(false);
            }
        });
    }
    assert_eq!(lost.len(), n);
    lost
}

/// GE's chain over 10^6 packets: the loss rate within 5% (relative) of the stationary
/// `(r (1-k) + p (1-h)) / (p + r)`, and in the simple Gilbert model (1-h = 1, 1-k = 0) the
/// mean loss burst within 5% of `1 / r`. (At 10^6 packets the standard error of either is
/// under 2%.)
#[test]
fn gilbert_elliott_matches_its_stationary_rate_and_burst_length() {
    let gilbert: GilbertElliott = "1%,25%".parse().unwrap();
    let lost = ge_losses(gilbert, 1_000_000, 42);
    let rate = lost.iter().filter(|l| **l).count() as f64 / lost.len() as f64;
    let expected = gilbert.stationary_loss();
    assert!((expected - 0.01 / 0.26).abs() < 1e-12);
    assert!(
        (rate - expected).abs() < 0.05 * expected,
        "loss {rate}, expected {expected}"
    );
    let mut bursts = Vec::new();
    let mut run_len = 0u64;
    for &l in &lost {
        if l {
            run_len += 1;
        } else if run_len > 0 {
            bursts.push(run_len);
            run_len = 0;
        }
    }
    let mean_burst = bursts.iter().sum::<u64>() as f64 / bursts.len() as f64;
    assert!(
        (mean_burst - 4.0).abs() < 0.05 * 4.0,
        "mean burst {mean_burst}"
    );

    // The general model: losses in both states.
    let ge: GilbertElliott = "0.02,0.1,0.6,0.01".parse().unwrap();
    let lost = ge_losses(ge, 1_000_000, 7);
    let rate = lost.iter().filter(|l| **l).count() as f64 / lost.len() as f64;
    let expected = ge.stationary_loss();
    assert!(
        (rate - expected).abs() < 0.05 * expected,
        "loss {rate}, expected {expected}"
    );
}

#[test]
fn gilbert_elliott_excludes_bernoulli_loss() {
    let cfg = LinkConfig {
        gilbert_elliott: Some("1%,30%".parse().unwrap()),
        loss: 0.1,
        ..LinkConfig::default()
    };
    assert_eq!(cfg.validate(), Err(LinkConfigError::TwoLossModels));
}

/// Sends 2000 packets 1 ms apart through a link with `jitter` and a fast trace; returns the
/// payloads in order of delivery, and every event's index.
fn jittered(jitter: &str) -> (Vec<usize>, Vec<usize>) {
    let cfg = LinkConfig {
        jitter: Some(jitter.parse::<Jitter>().unwrap()),
        seed: 3,
        ..LinkConfig::default()
    };
    let fast = Arc::new(constant_rate_trace("fast", 1200.0, 10.0).unwrap());
    let mut link = Link::new(fast, cfg);
    let sends: Vec<(u64, u32)> = (0..2000).map(|i| (i * 1000, 100)).collect();
    let events = run(&mut link, &sends, 3_000_000);
    let indices = events
        .iter()
        .filter_map(|e| match e {
            LinkEvent::Enqueued { index, .. } => Some(*index),
            _ => None,
        })
        .collect();
    (delivered(&events), indices)
}

#[test]
fn jitter_without_reordering_keeps_order() {
    let (order, indices) = jittered("5ms");
    assert_eq!(order, (0..2000).collect::<Vec<_>>());
    assert!(indices.iter().all(|i| *i == 0));
}

#[test]
fn jitter_with_reordering_reorders_and_the_indices_say_how() {
    let (order, indices) = jittered("5ms,reorder");
    assert_eq!(order.len(), 2000);
    assert_ne!(order, (0..2000).collect::<Vec<_>>());
    // Replaying the indices on a list of the packets in propagation, in sending order, gives
    // the order they reached the queue (here also the delivery order: nothing queues).
    let mut propagating: Vec<usize> = (0..2000).collect();
    let replayed: Vec<usize> = indices.iter().map(|&i| propagating.remove(i)).collect();
    assert_eq!(replayed, order);
}

#[test]
fn jitter_stays_within_its_amount() {
    let cfg = LinkConfig {
        jitter: Some("5ms,reorder".parse().unwrap()),
        ..LinkConfig::default()
    };
    let fast = Arc::new(constant_rate_trace("fast", 1200.0, 10.0).unwrap());
    let mut link = Link::new(fast, cfg);
    let sends: Vec<(u64, u32)> = (0..1000).map(|i| (i * 1000, 100)).collect();
    let events = run(&mut link, &sends, 2_000_000);
    let delays: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            LinkEvent::Delivered(d) => Some(d.enqueued.as_micros() - d.sent.as_micros()),
            _ => None,
        })
        .collect();
    assert!(delays.iter().all(|d| (15_000..=25_000).contains(d)));
    assert!(delays.iter().any(|d| *d < 17_000) && delays.iter().any(|d| *d > 23_000));
}

#[test]
fn delay_trace_sets_each_intervals_delay() {
    let t = DelayTrace::parse("d", "# two steps\ninterval 100ms\n20\n80.5\n").unwrap();
    assert_eq!(t.interval(), Duration::from_millis(100));
    let cfg = LinkConfig {
        delay_trace: Some(Arc::new(t)),
        ..LinkConfig::default()
    };
    let fast = Arc::new(constant_rate_trace("fast", 1200.0, 10.0).unwrap());
    let mut link = Link::new(fast, cfg);
    // Sent at 50 ms (20 ms), 150 ms (80.5 ms), 250 ms (looped: 20 ms, but not before the
    // packet sent at 150 ms).
    let events = run(
        &mut link,
        &[(50_000, 100), (150_000, 100), (250_000, 100)],
        1_000_000,
    );
    let entered: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            LinkEvent::Enqueued { at, .. } => Some(at.as_micros()),
            _ => None,
        })
        .collect();
    assert_eq!(entered, vec![70_000, 230_500, 270_000]);
}

#[test]
fn delay_trace_errors_are_clear_and_short() {
    let err = |text: &str| DelayTrace::parse("d.txt", text).unwrap_err().to_string();
    assert_eq!(
        err("20\n"),
        "delay trace d.txt:1: expected `interval T` first (e.g. `interval 100ms`): `20`"
    );
    assert_eq!(
        err("interval 0ms\n20\n"),
        "delay trace d.txt:1: the interval must be a time from 1ms to 1h: `interval 0ms`"
    );
    assert_eq!(
        err("interval 10ms\n20\nfast\n"),
        "delay trace d.txt:3: expected a delay in ms from 0 to 60000, at most three decimals: \
         `fast`"
    );
    assert!(err("interval 10ms\n-5\n").starts_with("delay trace d.txt:2: "));
    assert!(err("interval 10ms\n70000\n").starts_with("delay trace d.txt:2: "));
    assert_eq!(
        err("# nothing\n"),
        "delay trace d.txt: no `interval T` line"
    );
    assert_eq!(
        err("interval 10ms\n"),
        "delay trace d.txt: no delay after the interval"
    );
    // A long bad line is quoted short.
    let long = format!("interval 10ms\n{}\n", "9".repeat(500));
    assert!(err(&long).len() < 200);
    // Too many values.
    let many = format!("interval 1ms\n{}", "1\n".repeat(1_000_001));
    assert!(err(&many).contains("more delays than the 1000000"));
    // A file over the size cap is refused before parsing.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.txt");
    std::fs::write(&path, vec![b'1'; (16 << 20) + 1]).unwrap();
    let e = DelayTrace::load(&path).unwrap_err();
    assert!(matches!(e, DelayTraceError::Read(_)), "{e}");
}

#[test]
fn logs_and_counters_give_each_drops_reason() {
    let cfg = LinkConfig {
        loss: 0.2,
        seed: 5,
        ..buffered("3pkt")
    };
    let mut link = Link::new(one_per_ms(), cfg.clone());
    let events = run(&mut link, &burst(30), 100_000);
    let mut writer = MmLogWriter::new(Vec::new(), "uplink", "const12", &cfg).unwrap();
    for e in &events {
        writer.event(e).unwrap();
    }
    let text = String::from_utf8(writer.finish().unwrap()).unwrap();
    assert!(text.contains("# queue: droptail [packets=3]"), "{text}");
    let log = MmLog::parse(text.as_bytes()).unwrap();
    let count = |r| log.drops.iter().filter(|d| d.reason == Some(r)).count() as u64;
    let s = link.stats();
    assert_eq!(count(DropReason::Loss), s.packets_lost);
    assert_eq!(count(DropReason::Buffer), s.packets_buffer_dropped);
    assert!(s.packets_lost > 0 && s.packets_buffer_dropped > 0);
    assert_eq!(s.packets_lost + s.packets_dropped + s.packets_delivered, 30);
}
