//! ECN in the link: CoDel, FQ-CoDel and PIE mark ECN-capable packets CE instead of dropping
//! them, the L4S step marks ECT(1) packets that waited longer than the step, and the real IP
//! header is rewritten as the emulator does it.
//!
//! The scenarios use a 12 Mbit/s constant-rate trace: one 1500-byte opportunity every
//! millisecond, so a 1500-byte packet is taken for transmission and delivered at the same
//! opportunity, and its sojourn time is `delivered - enqueued`.

use std::sync::Arc;

use sprout_core::time::{Duration, Instant};
use sprout_link::ecn::{ip_ecn, ipv4_header_checksum, set_ip_ce};
use sprout_link::{
    constant_rate_trace, DropReason, Ecn, Link, LinkConfig, LinkEvent, MarkReason, MmLog,
    MmLogWriter, QueueConfig, Trace,
};

fn one_per_ms() -> Arc<Trace> {
    Arc::new(constant_rate_trace("const12", 12.0, 10.0).unwrap())
}

fn config(queue: QueueConfig, ecn: bool, step: Option<Duration>) -> LinkConfig {
    LinkConfig {
        queue,
        ecn,
        l4s_step_us: step,
        ..LinkConfig::default()
    }
}

/// What a run did: the deliveries `(payload, sojourn µs, ecn, mark)` and the drops from
/// inside the queue and at its tail, with their reasons.
#[derive(Default)]
struct Outcome {
    delivered: Vec<(usize, u64, Ecn, Option<MarkReason>)>,
    drops: Vec<(u64, DropReason)>,
    events: Vec<LinkEvent<usize>>,
}

impl Outcome {
    fn marked(&self, why: MarkReason) -> usize {
        self.delivered.iter().filter(|d| d.3 == Some(why)).count()
    }

    fn aqm_drops(&self) -> usize {
        self.drops.iter().filter(|d| d.1 == DropReason::Aqm).count()
    }
}

/// Sends a 1500-byte packet every `gap_us` for `for_us`, each with the codepoint `ecn(i)`
/// (payload = index) on flow `flow(i)`, then runs the link dry.
fn run(
    link: &mut Link<usize>,
    gap_us: u64,
    for_us: u64,
    ecn: impl Fn(usize) -> Ecn,
    flow: impl Fn(usize) -> u32,
) -> Outcome {
    let mut out = Outcome::default();
    let mut sink = |e: LinkEvent<usize>| {
        match &e {
            LinkEvent::Delivered(d) => out.delivered.push((
                d.payload,
                (d.delivered - d.enqueued).as_micros(),
                d.ecn,
                d.mark,
            )),
            LinkEvent::HeadDropped { at, reason, .. } | LinkEvent::Dropped { at, reason, .. } => {
                out.drops.push((at.as_micros(), *reason))
            }
            _ => {}
        }
        out.events.push(e);
    };
    let sends = (0..).map(|i| i * gap_us).take_while(|&t| t < for_us);
    for (i, t) in sends.enumerate() {
        link.advance(Instant::from_micros(t), &mut sink);
        link.send_ecn(Instant::from_micros(t), 1500, flow(i), ecn(i), i);
    }
    while let Some(t) = link.next_event() {
        link.advance(t, &mut sink);
    }
    out
}

/// 1.25 times the link's rate for 3 s: CoDel's standing queue.
fn overload(queue: QueueConfig, ecn: bool, codepoint: Ecn) -> (Outcome, Link<usize>) {
    let mut link = Link::new(one_per_ms(), config(queue, ecn, None));
    let out = run(&mut link, 800, 3_000_000, |_| codepoint, |_| 0);
    (out, link)
}

#[test]
fn codel_marks_ect_packets_instead_of_dropping_them() {
    let (dropping, _) = overload(QueueConfig::codel(), false, Ecn::Ect0);
    assert!(dropping.aqm_drops() > 10, "{}", dropping.aqm_drops());
    assert_eq!(dropping.marked(MarkReason::Aqm), 0, "no marks without ecn");
    for codepoint in [Ecn::Ect0, Ecn::Ect1] {
        let (marking, link) = overload(QueueConfig::codel(), true, codepoint);
        assert_eq!(marking.drops, vec![], "{codepoint:?}: nothing dropped");
        let marks = marking.marked(MarkReason::Aqm);
        assert!(marks > 10, "{marks}");
        // Every packet is delivered, the marked ones as CE.
        assert_eq!(marking.delivered.len(), 3750);
        assert!(marking
            .delivered
            .iter()
            .all(|d| (d.3 == Some(MarkReason::Aqm)) == (d.2 == Ecn::Ce)));
        // The first mark is where the first drop was: CoDel's state is the same up to it.
        let first_drop = dropping.drops[0].0;
        let first_mark = marking
            .events
            .iter()
            .find_map(|e| match e {
                LinkEvent::Delivered(d) if d.mark.is_some() => Some(d.delivered.as_micros()),
                _ => None,
            })
            .unwrap();
        assert_eq!(first_mark, first_drop);
        let s = link.stats();
        assert_eq!(s.packets_aqm_marked, marks as u64);
        assert_eq!(s.packets_marked, marks as u64);
        assert_eq!(s.bytes_marked, 1500 * marks as u64);
        assert_eq!((s.packets_dropped, s.packets_step_marked), (0, 0));
    }
}

#[test]
fn codel_still_drops_packets_that_are_not_ect() {
    let (ecn_on, link) = overload(QueueConfig::codel(), true, Ecn::NotEct);
    let (ecn_off, _) = overload(QueueConfig::codel(), false, Ecn::NotEct);
    assert!(ecn_on.aqm_drops() > 10);
    assert_eq!(
        ecn_on.drops, ecn_off.drops,
        "ecn changes nothing for Not-ECT"
    );
    assert_eq!(ecn_on.marked(MarkReason::Aqm), 0);
    assert_eq!(link.stats().packets_marked, 0);
    // Already CE: nothing to mark, so dropped.
    let (ce, _) = overload(QueueConfig::codel(), true, Ecn::Ce);
    assert_eq!(ce.drops, ecn_off.drops);
}

#[test]
fn fq_codel_marks_in_the_flow_with_a_standing_queue() {
    let mut link = Link::new(one_per_ms(), config(QueueConfig::fq_codel(), true, None));
    // Flow 1 (ECT(0)) and flow 2 (Not-ECT) each send at the link's rate, twice their share:
    // both keep a standing queue.
    let ecn = |i: usize| if i % 2 == 1 { Ecn::NotEct } else { Ecn::Ect0 };
    let flow = |i: usize| if i % 2 == 1 { 2 } else { 1 };
    let out = run(&mut link, 500, 3_000_000, ecn, flow);
    let marks = out.marked(MarkReason::Aqm);
    assert!(marks > 10, "{marks}");
    // The ECT flow is marked and never dropped; the other is dropped and never marked.
    let flow_of = |payload: usize| flow(payload);
    assert!(out
        .delivered
        .iter()
        .filter(|d| d.3.is_some())
        .all(|d| flow_of(d.0) == 1));
    let ect_delivered = out.delivered.iter().filter(|d| flow_of(d.0) == 1).count();
    assert_eq!(ect_delivered, 3000);
    assert!(out.aqm_drops() > 0);
    assert_eq!(link.stats().packets_aqm_marked, marks as u64);
}

#[test]
fn l4s_step_marks_ect1_above_the_threshold_and_not_below() {
    let step = Duration::from_millis(1);
    for queue in [
        QueueConfig::default(),
        QueueConfig::codel(),
        QueueConfig::pie(),
        QueueConfig::fq_codel(),
    ] {
        let mut link = Link::new(one_per_ms(), config(queue, false, Some(step)));
        // 1.01 times the rate for 0.45 s: the sojourn time climbs by 10 µs a packet, past the
        // step and to 4.5 ms, below CoDel's and PIE's thresholds for acting.
        let ecn = |i: usize| if i % 2 == 0 { Ecn::Ect1 } else { Ecn::Ect0 };
        let out = run(&mut link, 990, 450_000, ecn, |_| 0);
        assert_eq!(out.drops, vec![], "{queue:?}");
        let mut above = 0;
        for &(i, sojourn, codepoint, mark) in &out.delivered {
            let should = i % 2 == 0 && sojourn > step.as_micros();
            above += usize::from(should);
            assert_eq!(
                mark == Some(MarkReason::Step),
                should,
                "{queue:?} {i} {sojourn}"
            );
            assert_eq!(codepoint == Ecn::Ce, should);
        }
        assert!(above > 100, "{queue:?}: {above}");
        let s = link.stats();
        assert_eq!(s.packets_step_marked, above as u64);
        assert_eq!(s.packets_aqm_marked, 0);
    }
}

#[test]
fn the_step_marks_strictly_above_its_threshold() {
    // Two packets at once: the second waits exactly 1 ms (one opportunity).
    let sojourns_and_marks = |step_us: u64| {
        let cfg = config(
            QueueConfig::default(),
            false,
            Some(Duration::from_micros(step_us)),
        );
        let mut link = Link::new(one_per_ms(), cfg);
        for i in 0..2 {
            link.send_ecn(Instant::ZERO, 1500, 0, Ecn::Ect1, i);
        }
        let mut marks = Vec::new();
        while let Some(t) = link.next_event() {
            link.advance(t, &mut |e| {
                if let LinkEvent::Delivered(d) = e {
                    marks.push(((d.delivered - d.enqueued).as_micros(), d.mark));
                }
            });
        }
        marks
    };
    assert_eq!(sojourns_and_marks(1000), vec![(0, None), (1000, None)]);
    assert_eq!(
        sojourns_and_marks(999),
        vec![(0, None), (1000, Some(MarkReason::Step))]
    );
}

/// A real IPv4 UDP packet (28 header bytes and `len` of payload) with TOS `tos`, its
/// checksum right.
fn ipv4_packet(tos: u8, id: u16) -> Vec<u8> {
    let total = 1500u16;
    let mut p = vec![0u8; usize::from(total)];
    p[..20].copy_from_slice(&[
        0x45, tos, 0, 0, 0, 0, 0x40, 0x00, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ]);
    p[2..4].copy_from_slice(&total.to_be_bytes());
    p[4..6].copy_from_slice(&id.to_be_bytes());
    let c = ipv4_header_checksum(&p).unwrap();
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p
}

#[test]
fn the_emulators_path_rewrites_real_headers_and_drops_not_ect() {
    // As the emulator does: the codepoint read from the header, the header rewritten when
    // the link marks. Even packets ECT(0) (TOS 0x02, with a DSCP 0xb8 on some), odd Not-ECT.
    let mut link = Link::new(one_per_ms(), config(QueueConfig::codel(), true, None));
    let mut sink = Vec::new();
    let mut drops = 0;
    for i in 0..3750u64 {
        let t = Instant::from_micros(i * 800);
        link.advance(t, &mut |e| sink.push(e));
        let tos = match i % 4 {
            0 => 0x02,
            2 => 0xba,
            1 => 0x00,
            _ => 0xb8,
        };
        let p = ipv4_packet(tos, i as u16);
        link.send_ecn(t, p.len() as u32, 0, ip_ecn(&p), p);
    }
    while let Some(t) = link.next_event() {
        link.advance(t, &mut |e| sink.push(e));
    }
    let mut marked = 0;
    for e in sink {
        match e {
            LinkEvent::Delivered(mut d) => {
                let tos = d.payload[1];
                if d.mark.is_some() {
                    assert!(set_ip_ce(&mut d.payload));
                    marked += 1;
                    assert_eq!(d.payload[1], tos | 3);
                    assert_eq!(ip_ecn(&d.payload), Ecn::Ce);
                }
                if tos & 3 == 0 {
                    assert_eq!(d.mark, None, "a Not-ECT packet is never marked");
                }
                assert_eq!(ipv4_header_checksum(&d.payload), Some(0));
            }
            LinkEvent::HeadDropped { reason, .. } => {
                assert_eq!(reason, DropReason::Aqm);
                drops += 1;
            }
            _ => {}
        }
    }
    assert!(marked > 5 && drops > 5, "{marked} marked, {drops} dropped");
    assert_eq!(link.stats().packets_marked, marked);
    assert_eq!(link.stats().packets_aqm_dropped, drops);
}

#[test]
fn marks_are_in_the_mm_link_log() {
    let cfg = config(QueueConfig::codel(), true, Some(Duration::from_millis(50)));
    let mut link = Link::new(one_per_ms(), cfg.clone());
    let ecn = |i: usize| if i % 2 == 0 { Ecn::Ect1 } else { Ecn::Ect0 };
    let out = run(&mut link, 800, 3_000_000, ecn, |_| 0);
    let mut w = MmLogWriter::new(Vec::new(), "downlink", "const12", &cfg).unwrap();
    for e in &out.events {
        w.event(e).unwrap();
    }
    let text = String::from_utf8(w.finish().unwrap()).unwrap();
    assert!(text.contains("# ecn: mark, l4s step 50ms\n"), "{text:.400}");
    let log = MmLog::parse(text.as_bytes()).unwrap();
    let count = |why| {
        log.departures
            .iter()
            .filter(|d| d.mark == Some(why))
            .count() as u64
    };
    let s = link.stats();
    assert!(
        s.packets_aqm_marked > 10 && s.packets_step_marked > 10,
        "{s:?}"
    );
    assert_eq!(count(MarkReason::Aqm), s.packets_aqm_marked);
    assert_eq!(count(MarkReason::Step), s.packets_step_marked);
    assert!(text.contains(" ce:aqm\n") && text.contains(" ce:step\n"));
    assert!(MmLog::parse("5 - 1500 3 ce:what\n".as_bytes()).is_err());
    assert!(MmLog::parse("5 - 1500 3 aqm\n".as_bytes()).is_err());
}

#[test]
fn default_config_serializes_as_before() {
    let json = serde_json::to_string(&LinkConfig::default()).unwrap();
    assert!(!json.contains("ecn") && !json.contains("l4s"), "{json}");
    let stats = serde_json::to_string(&sprout_link::LinkStats::default()).unwrap();
    assert!(!stats.contains("marked"), "{stats}");
    let cfg = config(QueueConfig::codel(), true, Some(Duration::from_millis(1)));
    let back: LinkConfig = serde_json::from_str(&serde_json::to_string(&cfg).unwrap()).unwrap();
    assert_eq!(back, cfg);
}
