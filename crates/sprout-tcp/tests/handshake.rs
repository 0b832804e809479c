//! The three-way handshake: no data before it completes, Linux's SYN and SYN-ACK timers (1 s,
//! doubled per retransmission), its RTT sample seeding the RTO, and hosts that start late.

use std::sync::Arc;

use sprout_core::time::{Duration, Instant};
use sprout_link::{constant_rate_trace, Link, LinkConfig, LinkEvent, QueueConfig};
use sprout_tcp::{CcKind, ConnectionState, Segment, TcpConfig, TcpEndpoint};

const MSS: u64 = 1448;

fn drain(e: &mut TcpEndpoint, now_us: u64) -> Vec<Segment> {
    std::iter::from_fn(|| e.poll_transmit(Instant::from_micros(now_us))).collect()
}

fn bulk(mut e: TcpEndpoint) -> TcpEndpoint {
    e.set_bulk(true);
    e
}

#[test]
fn nothing_but_the_handshake_leaves_before_it_completes() {
    let cfg = TcpConfig::default();
    let mut client = bulk(TcpEndpoint::connect(
        cfg.clone(),
        CcKind::Cubic,
        Instant::from_micros(0),
    ));
    let mut server = bulk(TcpEndpoint::listen(
        cfg,
        CcKind::Cubic,
        Instant::from_micros(0),
    ));
    // The listener has data to send but no peer: nothing leaves, and it waits for nothing.
    assert!(drain(&mut server, 0).is_empty());
    assert_eq!(server.poll_timeout().map(Instant::as_micros), None);
    assert_eq!(server.state(), ConnectionState::Listen);

    let syn = drain(&mut client, 0);
    assert_eq!(syn.len(), 1, "only the SYN: {syn:?}");
    assert!(syn[0].syn && syn[0].ack.is_none() && !syn[0].is_data());
    assert_eq!(syn[0].wire_bytes(), 60);
    assert_eq!(client.state(), ConnectionState::SynSent);
    // Polling again, even later, gives nothing until the SYN-ACK or the timer.
    assert!(drain(&mut client, 500_000).is_empty());

    server.handle_segment(Instant::from_micros(20_000), &syn[0]);
    let syn_ack = drain(&mut server, 20_000);
    assert_eq!(syn_ack.len(), 1, "only the SYN-ACK: {syn_ack:?}");
    assert!(syn_ack[0].syn && syn_ack[0].ack == Some(0));
    assert_eq!(
        syn_ack[0].echo.map(Instant::as_micros),
        Some(0),
        "echoes the SYN's timestamp"
    );
    assert_eq!(server.state(), ConnectionState::SynReceived);
    assert!(
        drain(&mut server, 30_000).is_empty(),
        "no data before the ACK"
    );

    client.handle_segment(Instant::from_micros(40_000), &syn_ack[0]);
    assert!(client.is_established());
    let out = drain(&mut client, 40_000);
    assert!(!out[0].syn && out[0].ack == Some(0) && !out[0].is_data());
    assert_eq!(
        out[0].echo.map(Instant::as_micros),
        Some(20_000),
        "the ACK echoes the SYN-ACK"
    );
    let data: Vec<_> = out[1..].iter().filter(|s| s.is_data()).collect();
    assert_eq!(data.len(), 10, "then the initial window");
    assert_eq!(data[0].seq, 0);

    server.handle_segment(Instant::from_micros(60_000), &out[0]);
    assert!(server.is_established());
    let out = drain(&mut server, 60_000);
    assert_eq!(out.iter().filter(|s| s.is_data()).count(), 10);
    let st = server.stats();
    assert_eq!(
        (st.handshake_segments_sent, st.syn_retransmits),
        (1, 0),
        "one SYN-ACK"
    );
}

#[test]
fn the_handshake_rtt_seeds_the_rto_as_linux_does() {
    let cfg = TcpConfig::default();
    let mut client = TcpEndpoint::connect(cfg.clone(), CcKind::Reno, Instant::from_micros(0));
    let mut server = TcpEndpoint::listen(cfg, CcKind::Reno, Instant::from_micros(0));
    assert_eq!(
        client.stats().rto_us.as_micros(),
        1_000_000,
        "1 s before any sample"
    );
    let syn = drain(&mut client, 0);
    server.handle_segment(Instant::from_micros(20_000), &syn[0]);
    let syn_ack = drain(&mut server, 20_000);
    client.handle_segment(Instant::from_micros(40_000), &syn_ack[0]);
    let ack = drain(&mut client, 40_000);
    server.handle_segment(Instant::from_micros(60_000), &ack[0]);
    // One 40 ms sample: SRTT = 40 ms, RTTVAR = 20 ms, RTO = SRTT + max(4 RTTVAR, 200 ms).
    for e in [&client, &server] {
        let st = e.stats();
        assert_eq!(st.srtt_us.map(Duration::as_micros), Some(40_000));
        assert_eq!(st.min_rtt_us.map(Duration::as_micros), Some(40_000));
        assert_eq!(st.rto_us.as_micros(), 240_000);
    }
}

#[test]
fn a_lost_syn_is_sent_again_after_one_second_then_two_then_four() {
    let mut client =
        TcpEndpoint::connect(TcpConfig::default(), CcKind::Cubic, Instant::from_micros(0));
    client.set_bulk(true);
    let mut sent = vec![];
    let mut now = 0;
    for _ in 0..4 {
        client.handle_timeout(Instant::from_micros(now));
        let out = drain(&mut client, now);
        assert_eq!(out.len(), 1, "one SYN at {now} µs: {out:?}");
        assert!(out[0].syn && !out[0].is_data());
        assert_eq!(out[0].retransmission, !sent.is_empty());
        sent.push(now);
        let next = client
            .poll_timeout()
            .map(Instant::as_micros)
            .expect("the SYN timer runs");
        assert!(drain(&mut client, next - 1).is_empty());
        now = next;
    }
    assert_eq!(sent, [0, 1_000_000, 3_000_000, 7_000_000]);
    assert_eq!(client.stats().syn_retransmits, 3);
    assert_eq!(client.stats().data_segments_sent, 0);
}

#[test]
fn a_lost_syn_ack_is_sent_again_after_one_second_or_when_the_syn_repeats() {
    let mut server =
        TcpEndpoint::listen(TcpConfig::default(), CcKind::Reno, Instant::from_micros(0));
    let mut client =
        TcpEndpoint::connect(TcpConfig::default(), CcKind::Reno, Instant::from_micros(0));
    let syn = drain(&mut client, 0);
    server.handle_segment(Instant::from_micros(20_000), &syn[0]);
    assert_eq!(drain(&mut server, 20_000).len(), 1, "the SYN-ACK, lost");
    assert_eq!(
        server.poll_timeout().map(Instant::as_micros),
        Some(1_020_000)
    );
    server.handle_timeout(Instant::from_micros(1_020_000));
    let again = drain(&mut server, 1_020_000);
    assert!(again.len() == 1 && again[0].syn && again[0].retransmission);
    assert_eq!(
        server.poll_timeout().map(Instant::as_micros),
        Some(3_020_000),
        "then after 2 s"
    );
    // The client's own retransmitted SYN (sent at 1 s) is answered at once.
    client.handle_timeout(Instant::from_micros(1_000_000));
    let syn2 = drain(&mut client, 1_000_000);
    server.handle_segment(Instant::from_micros(1_030_000), &syn2[0]);
    let answer = drain(&mut server, 1_030_000);
    assert!(answer.len() == 1 && answer[0].syn);
    assert_eq!(answer[0].echo.map(Instant::as_micros), Some(1_000_000));
    client.handle_segment(Instant::from_micros(1_050_000), &answer[0]);
    assert!(client.is_established());
    // The SYN-ACK echoed the retransmitted SYN: a 50 ms sample, not 1.05 s.
    assert_eq!(
        client.stats().srtt_us.map(Duration::as_micros),
        Some(50_000)
    );
    // A duplicate SYN-ACK arriving later is acknowledged again, and is no duplicate ACK.
    drain(&mut client, 1_050_000);
    client.handle_segment(Instant::from_micros(1_060_000), &again[0]);
    let re = drain(&mut client, 1_060_000);
    assert!(re
        .iter()
        .any(|s| !s.syn && s.ack == Some(0) && !s.is_data()));
}

#[test]
fn a_lost_handshake_ack_is_made_up_for_by_the_first_data() {
    let cfg = TcpConfig::default();
    let mut client = bulk(TcpEndpoint::connect(
        cfg.clone(),
        CcKind::Cubic,
        Instant::from_micros(0),
    ));
    let mut server = TcpEndpoint::listen(cfg, CcKind::Cubic, Instant::from_micros(0));
    let syn = drain(&mut client, 0);
    server.handle_segment(Instant::from_micros(20_000), &syn[0]);
    let syn_ack = drain(&mut server, 20_000);
    client.handle_segment(Instant::from_micros(40_000), &syn_ack[0]);
    let out = drain(&mut client, 40_000);
    // The pure ACK (out[0]) is lost; the data arrives.
    for s in &out[1..] {
        server.handle_segment(Instant::from_micros(60_000), s);
    }
    assert!(server.is_established());
    assert_eq!(server.stats().delivered_app_bytes, 10 * MSS);
    let acks = drain(&mut server, 60_000);
    assert_eq!(acks.len(), 10);
    assert_eq!(acks.last().unwrap().ack, Some(10 * MSS));
    assert_eq!(
        server.poll_timeout().map(Instant::as_micros),
        None,
        "no SYN-ACK retransmission pending"
    );
}

#[test]
fn two_lost_syns_leave_a_one_segment_initial_window_one_does_not() {
    for (lost, window) in [(0u64, 10), (1, 10), (2, 1)] {
        let mut client = bulk(TcpEndpoint::connect(
            TcpConfig::default(),
            CcKind::Reno,
            Instant::from_micros(0),
        ));
        let mut server =
            TcpEndpoint::listen(TcpConfig::default(), CcKind::Reno, Instant::from_micros(0));
        let mut now = 0;
        let mut syn = drain(&mut client, now);
        for _ in 0..lost {
            now = client.poll_timeout().map(Instant::as_micros).unwrap();
            client.handle_timeout(Instant::from_micros(now));
            syn = drain(&mut client, now);
        }
        server.handle_segment(Instant::from_micros(now + 20_000), &syn[0]);
        let syn_ack = drain(&mut server, now + 20_000);
        client.handle_segment(Instant::from_micros(now + 40_000), &syn_ack[0]);
        let data = drain(&mut client, now + 40_000)
            .iter()
            .filter(|s| s.is_data())
            .count();
        assert_eq!(data, window, "{lost} SYNs lost");
    }
}

#[test]
fn bbr_paces_its_first_window_at_the_handshake_rtt() {
    let mut client = bulk(TcpEndpoint::connect(
        TcpConfig::default(),
        CcKind::Bbr,
        Instant::from_micros(0),
    ));
    let mut server =
        TcpEndpoint::listen(TcpConfig::default(), CcKind::Bbr, Instant::from_micros(0));
    let syn = drain(&mut client, 0);
    server.handle_segment(Instant::from_micros(20_000), &syn[0]);
    let syn_ack = drain(&mut server, 20_000);
    client.handle_segment(Instant::from_micros(40_000), &syn_ack[0]);
    // Linux's bbr_init_pacing_rate_from_rtt: 2/ln 2 * 10 segments / 40 ms.
    let rate = client.stats().pacing_rate_bytes_per_s.unwrap() as f64;
    let expected = 2.0 / std::f64::consts::LN_2 * 10.0 * MSS as f64 / 0.040;
    assert!((rate / expected - 1.0).abs() < 1e-6, "{rate} vs {expected}");
    // So the initial window leaves spaced, not in one burst.
    let burst = drain(&mut client, 40_000);
    assert!(burst.iter().filter(|s| s.is_data()).count() < 10);
}

/// Two hosts over a 12 Mbit/s link each way (20 ms one-way delay, unlimited queues), both
/// loaded with a 1 MiB receive window (so nothing is lost), each starting at its own time; a
/// host drops what reaches it before it starts. Returns (client, server) after `end_us`, with
/// the time each became established.
fn late_start(
    client_start_us: u64,
    server_start_us: u64,
    end_us: u64,
) -> ((TcpEndpoint, u64), (TcpEndpoint, u64)) {
    let link = || -> Link<Segment> {
        Link::new(
            Arc::new(constant_rate_trace("c", 12.0, 1.0).unwrap()),
            LinkConfig {
                propagation_delay_us: Duration::from_millis(20),
                queue: QueueConfig::DropTail { limit_bytes: None },
                looping: true,
                opportunity_bytes: 1500,
                ..LinkConfig::default()
            },
        )
    };
    // Index 0: the client, sending on links[0]; 1: the server, on links[1].
    let mut links = [link(), link()];
    let starts = [client_start_us, server_start_us];
    let mut hosts: [Option<TcpEndpoint>; 2] = [None, None];
    let mut established = [None, None];
    let mut data_before = [false, false];
    let mut now = 0;
    let mut arrivals = Vec::new();
    while now <= end_us {
        for (i, l) in links.iter_mut().enumerate() {
            l.advance(Instant::from_micros(now), &mut |e| {
                if let LinkEvent::Delivered(d) = e {
                    arrivals.push((1 - i, d.payload));
                }
            });
        }
        for (to, seg) in arrivals.drain(..) {
            if let Some(h) = hosts[to].as_mut() {
                h.handle_segment(Instant::from_micros(now), &seg);
            }
        }
        for i in 0..2 {
            if hosts[i].is_none() && now >= starts[i] {
                let cfg = TcpConfig {
                    receive_window_bytes: 1 << 20,
                    ..TcpConfig::default()
                };
                hosts[i] = Some(bulk(if i == 0 {
                    TcpEndpoint::connect(cfg, CcKind::Cubic, Instant::from_micros(now))
                } else {
                    TcpEndpoint::listen(cfg, CcKind::Cubic, Instant::from_micros(now))
                }));
            }
            let Some(h) = hosts[i].as_mut() else { continue };
            h.handle_timeout(Instant::from_micros(now));
            while let Some(s) = h.poll_transmit(Instant::from_micros(now)) {
                data_before[i] |= s.is_data() && !h.is_established();
                links[i].send(Instant::from_micros(now), s.wire_bytes(), s);
            }
            if h.is_established() && established[i].is_none() {
                established[i] = Some(now);
            }
        }
        let mut next = end_us + 1;
        for (i, l) in links.iter().enumerate() {
            next = next.min(l.next_event().map_or(u64::MAX, Instant::as_micros));
            match &hosts[i] {
                Some(h) => {
                    next = next.min(h.poll_timeout().map(Instant::as_micros).unwrap_or(u64::MAX))
                }
                None => next = next.min(starts[i]),
            }
        }
        now = next.max(now + 1);
    }
    assert_eq!(data_before, [false, false], "data before establishment");
    let [c, s] = hosts;
    (
        (c.unwrap(), established[0].expect("client established")),
        (s.unwrap(), established[1].expect("server established")),
    )
}

#[test]
fn a_server_that_starts_late_gets_the_retransmitted_syn_and_a_full_connection() {
    // The server listens from 300 ms: the SYN (sent at 0, arriving at 20 ms) is lost, the one
    // sent at 1 s opens the connection.
    let ((client, c_at), (server, s_at)) = late_start(0, 300_000, 10_000_000);
    assert_eq!(client.stats().syn_retransmits, 1);
    assert_eq!(server.stats().syn_retransmits, 0);
    assert!(
        (1_040_000..1_041_000).contains(&c_at),
        "{c_at}: SYN-ACK back 40 ms after"
    );
    assert!((1_060_000..1_070_000).contains(&s_at), "{s_at}");
    // The handshake's RTT sample is the retransmitted SYN's round trip, not 1 s.
    assert_eq!(
        client.stats().min_rtt_us.map(Duration::as_micros),
        Some(40_000)
    );
    // Both directions fill their link from then on: 12 Mbit/s is 1448 payload bytes per ms.
    let capacity = (10_000_000 - c_at) / 1000 * MSS;
    for (what, e) in [("downlink", &client), ("uplink", &server)] {
        let got = e.stats().delivered_app_bytes;
        eprintln!(
            "{what}: {:.1}% of the capacity after the handshake",
            got as f64 / capacity as f64 * 100.0
        );
        assert!(
            got as f64 > 0.9 * capacity as f64,
            "{what}: {got} of {capacity}"
        );
    }
}

#[test]
fn a_client_that_starts_late_finds_the_server_listening() {
    let ((client, c_at), (server, s_at)) = late_start(300_000, 0, 5_000_000);
    assert_eq!(client.stats().syn_retransmits, 0);
    assert!((340_000..341_000).contains(&c_at), "{c_at}");
    assert!((360_000..361_000).contains(&s_at), "{s_at}");
    let capacity = (5_000_000 - c_at) / 1000 * MSS;
    for e in [&client, &server] {
        let got = e.stats().delivered_app_bytes;
        assert!(got as f64 > 0.9 * capacity as f64, "{got} of {capacity}");
    }
}
