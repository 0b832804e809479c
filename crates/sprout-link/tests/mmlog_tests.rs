//! mahimahi mm-link log writer and reader.

use sprout_core::time::{Duration, Instant};
use std::sync::Arc;

use sprout_link::{
    Link, LinkConfig, LinkEvent, MmArrival, MmDeparture, MmDrop, MmLog, MmLogError, MmLogWriter,
    MmOpportunity, QueueConfig, Trace,
};

#[test]
fn round_trip_through_a_link_run() {
    let trace = Arc::new(Trace::parse("Test.down", "3\n3\n7\n12\n20\n").unwrap());
    let config = LinkConfig {
        propagation_delay_us: Duration::from_micros(2_500),
        queue: QueueConfig::DropTail {
            limit_bytes: Some(4000),
        },
        ..LinkConfig::default()
    };
    let mut link = Link::new(Arc::clone(&trace), config.clone());
    let mut events: Vec<LinkEvent<u32>> = Vec::new();
    for i in 0..40u32 {
        let t = u64::from(i) * 1_300;
        link.advance(Instant::from_micros(t), &mut |e| events.push(e));
        link.send(Instant::from_micros(t), 200 + (i * 337) % 1300, i);
    }
    link.advance(Instant::from_micros(100_000), &mut |e| events.push(e));
    assert!(events
        .iter()
        .any(|e| matches!(e, LinkEvent::Dropped { .. })));

    let mut writer = MmLogWriter::new(Vec::new(), "downlink", trace.name(), &config).unwrap();
    for e in &events {
        writer.event(e).unwrap();
    }
    let bytes = writer.finish().unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("# mahimahi mm-link (downlink) [Test.down] > -")
    );
    assert_eq!(lines.next(), Some("# queue: droptail [bytes=4000]"));
    assert_eq!(lines.next(), Some("# init timestamp: 0"));
    assert_eq!(lines.next(), Some("# base timestamp: 0"));
    assert_eq!(lines.next(), Some("# propagation delay: 2 ms"));

    let log = MmLog::parse(&bytes[..]).unwrap();
    assert_eq!(log.direction.as_deref(), Some("downlink"));
    assert_eq!(log.trace_file.as_deref(), Some("Test.down"));
    assert_eq!(log.queue.as_deref(), Some("droptail [bytes=4000]"));
    assert_eq!(log.base_timestamp_ms, 0);
    assert_eq!(log.init_timestamp_ms, Some(0));
    assert_eq!(log.propagation_delay_ms, Some(2));

    let mut arrivals = Vec::new();
    let mut opportunities = Vec::new();
    let mut departures = Vec::new();
    let mut drops = Vec::new();
    for e in &events {
        match e {
            LinkEvent::Enqueued { at, bytes, .. } => arrivals.push(MmArrival {
                ms: at.as_millis(),
                bytes: u64::from(*bytes),
            }),
            LinkEvent::Dropped {
                at, bytes, reason, ..
            } => {
                arrivals.push(MmArrival {
                    ms: at.as_millis(),
                    bytes: u64::from(*bytes),
                });
                drops.push(MmDrop {
                    ms: at.as_millis(),
                    packets: 1,
                    bytes: u64::from(*bytes),
                    reason: Some(*reason),
                });
            }
            LinkEvent::HeadDropped {
                at, bytes, reason, ..
            } => drops.push(MmDrop {
                ms: at.as_millis(),
                packets: 1,
                bytes: u64::from(*bytes),
                reason: Some(*reason),
            }),
            LinkEvent::Opportunity { at, bytes } => opportunities.push(MmOpportunity {
                ms: at.as_millis(),
                bytes: u64::from(*bytes),
            }),
            LinkEvent::Delivered(d) => departures.push(MmDeparture {
                ms: d.delivered.as_micros() / 1000,
                bytes: u64::from(d.bytes),
                delay_ms: d.delivered.as_micros() / 1000 - d.enqueued.as_micros() / 1000,
                mark: d.mark,
            }),
        }
    }
    assert_eq!(log.arrivals, arrivals);
    assert_eq!(log.opportunities, opportunities);
    assert_eq!(log.departures, departures);
    assert_eq!(log.drops, drops);
    assert_eq!(log.departures.len() as u64, link.stats().packets_delivered);
    assert_eq!(log.opportunities.len() as u64, link.stats().opportunities);
}

#[test]
fn infinite_queue_header() {
    let w = MmLogWriter::with_log_name(
        Vec::new(),
        "uplink",
        "x.up",
        "up.log",
        &LinkConfig::default(),
    )
    .unwrap();
    let text = String::from_utf8(w.finish().unwrap()).unwrap();
    assert!(text.starts_with("# mahimahi mm-link (uplink) [x.up] > up.log\n# queue: infinite\n"));
    assert!(text.contains("# propagation delay: 20 ms\n"));
}

#[test]
fn reads_a_mahimahi_style_log() {
    let text = "# mahimahi mm-link (uplink) [/traces/Verizon-LTE-short.up] > /tmp/up.log\n\
                # command line: mm-link a b\n\
                # queue: infinite\n\
                # init timestamp: 1700000000000\n\
                # base timestamp: 1234\n\
                1234 # 1500\n\
                1240 + 1400\n\
                \n\
                1241 # 1500\n\
                1241 - 1400 1\n\
                1250 d 2 3000\n";
    let log = MmLog::parse(text.as_bytes()).unwrap();
    assert_eq!(log.base_timestamp_ms, 1234);
    assert_eq!(log.init_timestamp_ms, Some(1_700_000_000_000));
    assert_eq!(log.propagation_delay_ms, None);
    assert_eq!(
        log.trace_file.as_deref(),
        Some("/traces/Verizon-LTE-short.up")
    );
    assert_eq!(
        log.arrivals,
        vec![MmArrival {
            ms: 1240,
            bytes: 1400
        }]
    );
    assert_eq!(log.opportunities.len(), 2);
    assert_eq!(
        log.departures,
        vec![MmDeparture {
            ms: 1241,
            bytes: 1400,
            delay_ms: 1,
            mark: None,
        }]
    );
    assert_eq!(
        log.drops,
        vec![MmDrop {
            ms: 1250,
            packets: 2,
            bytes: 3000,
            reason: None,
        }]
    );
}

#[test]
fn parse_errors_name_the_line() {
    let cases = [
        (
            "# base timestamp: 0\n1 + 1500\n5 x 3\n",
            3,
            "unknown event type",
        ),
        ("1 + 1500\n2 +\n", 2, "wrong fields"),
        ("1 - 1500\n", 1, "wrong fields"),
        ("1 # 1500 7\n", 1, "wrong fields"),
        ("\n\nabc + 1\n", 3, "bad timestamp"),
        ("7\n", 1, "missing event type"),
        ("# base timestamp: soon\n", 1, "bad base timestamp"),
    ];
    for (text, line, reason) in cases {
        let e = MmLog::parse(text.as_bytes()).unwrap_err();
        match &e {
            MmLogError::Malformed { line: l, .. } => assert_eq!(*l, line, "{text:?}"),
            other => panic!("unexpected {other:?}"),
        }
        let msg = e.to_string();
        assert!(msg.starts_with(&format!("line {line}: ")), "{msg}");
        assert!(msg.contains(reason), "{msg}");
    }
}
