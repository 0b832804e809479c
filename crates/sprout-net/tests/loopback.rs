//! Endpoints on 127.0.0.1: ordered delivery, a bulk transfer, and hostile input.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use sprout_core::{Config, Connection};
use sprout_net::message::{Data, Message};
use sprout_net::{realtime_us, Endpoint};

fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn pair() -> (Endpoint, Endpoint) {
    let server = Endpoint::bind(any_port(), Config::default()).unwrap();
    let client = Endpoint::connect(any_port(), server.local_addr(), Config::default()).unwrap();
    (server, client)
}

/// Waits until `cond` holds, for at most `limit`.
fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    cond()
}

#[test]
fn datagrams_arrive_in_order_and_intact_both_ways() {
    let (server, client) = pair();
    let n = 200usize;
    let payload = |i: usize| -> Vec<u8> {
        let len = 1 + (i * 37) % client.max_payload();
        (0..len).map(|k| (i + k) as u8).collect()
    };
    for i in 0..n {
        client.send(payload(i));
    }
    for i in 0..n {
        let got = server
            .recv_timeout(Duration::from_secs(3))
            .unwrap_or_else(|| panic!("datagram {i} did not arrive"));
        assert_eq!(got, payload(i), "datagram {i}");
    }
    assert_eq!(server.peer_addr(), Some(client.local_addr()));
    for i in 0..20 {
        server.send(payload(i));
    }
    for i in 0..20 {
        assert_eq!(
            client.recv_timeout(Duration::from_secs(3)),
            Some(payload(i))
        );
    }
    let s = server.stats();
    assert_eq!(s.malformed, 0);
    assert_eq!(s.bad_peers, 0);
    assert!(client.wait_writable(0, Duration::from_secs(1)));
    assert_eq!(client.queued_bytes(), 0);
}

#[test]
fn bulk_transfer_fills_the_window_and_carries_forecasts() {
    let (server, client) = pair();
    server.set_keep_incoming(false);
    client.set_bulk(true);
    std::thread::sleep(Duration::from_secs(2));
    let c = client.stats();
    let s = server.stats();
    println!("client {}", serde_json::to_string(&c).unwrap());
    println!("server {}", serde_json::to_string(&s).unwrap());
    assert!(
        s.app_bytes_received > 100_000,
        "{} bytes in 2 s",
        s.app_bytes_received
    );
    assert!(c.app_bytes_sent >= s.app_bytes_received);
    assert!(c.datagrams_sent > c.heartbeats_sent);
    assert!(!c.peer_forecast.is_empty(), "no forecast from the server");
    assert_eq!(
        c.peer_forecast_packets,
        *c.peer_forecast.last().unwrap() as u64
    );
    assert!(c.peer_forecast_packets > 0);
    assert!(s.incoming_rate_pps > 0.0);
    // The server's own direction is idle but its heartbeats carry the client's forecasts.
    assert!(s.heartbeats_sent > 0);
    assert!(s.since_last_received_s.unwrap() < 0.5);
}

#[test]
fn bulk_writer_stamps_every_payload() {
    let (server, client) = pair();
    let mut seq = 0u64;
    client.set_bulk_writer(move |buf| {
        if (Data {
            seq,
            sent_us: realtime_us(),
        })
        .write(buf)
        {
            seq += 1;
        }
    });
    let mut expected = 0u64;
    let mut bytes = 0usize;
    let end = Instant::now() + Duration::from_millis(800);
    while Instant::now() < end {
        let Some(d) = server.recv_timeout(Duration::from_millis(200)) else {
            continue;
        };
        bytes += d.len();
        match Message::decode(&d).unwrap() {
            Message::Data(m) => {
                assert_eq!(m.seq, expected, "loopback neither loses nor reorders");
                expected += 1;
                let owd_us = realtime_us() as i64 - m.sent_us as i64;
                assert!(
                    (0..1_000_000).contains(&owd_us),
                    "one-way delay {owd_us} µs"
                );
            }
            Message::Filler => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    client.set_bulk(false);
    assert!(expected > 20, "only {expected} stamped datagrams");
    assert!(bytes > 20_000);
}

#[test]
fn garbage_is_counted_and_the_connection_keeps_working() {
    let server = Endpoint::bind(any_port(), Config::default()).unwrap();
    let raw = UdpSocket::bind(any_port()).unwrap();
    let to = server.local_addr();
    // Before any peer: garbage and truncated headers are malformed and do not become the peer.
    let mut conn = Connection::new(Config::default(), 0).unwrap();
    let mut good = Vec::new();
    conn.send(b"hi".to_vec());
    conn.poll_transmit(0, &mut good).unwrap();
    let mut garbage: Vec<Vec<u8>> = vec![vec![], b"garbage".to_vec(), vec![0x53; 5]];
    for cut in [1, 4, 20, 31] {
        garbage.push(good[..cut].to_vec());
    }
    let mut x = 0x1234_5678u32;
    for len in [1usize, 31, 32, 45, 100, 1400] {
        let mut g = Vec::with_capacity(len);
        for _ in 0..len {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            g.push(x as u8);
        }
        g[0] = 0x53; // Sprout's magic, to get past the first check
        garbage.push(g);
    }
    for g in &garbage {
        raw.send_to(g, to).unwrap();
    }
    assert!(eventually(Duration::from_secs(2), || server
        .stats()
        .malformed
        >= garbage.len() as u64));
    assert_eq!(server.peer_addr(), None);

    // The raw socket, speaking Sprout through a sans-IO connection, becomes the peer; more
    // garbage from it is malformed, not fatal.
    raw.send_to(&good, to).unwrap();
    assert_eq!(server.recv_timeout(Duration::from_secs(2)).unwrap(), b"hi");
    assert_eq!(server.peer_addr(), Some(raw.local_addr().unwrap()));
    let before = server.stats().malformed;
    for g in &garbage {
        raw.send_to(g, to).unwrap();
    }
    let mut second = Vec::new();
    conn.send(b"still here".to_vec());
    while conn.poll_transmit(5_000, &mut second).is_some() {
        raw.send_to(&second, to).unwrap();
    }
    assert_eq!(
        server.recv_timeout(Duration::from_secs(2)).unwrap(),
        b"still here"
    );
    assert_eq!(server.stats().malformed, before + garbage.len() as u64);
    assert!(server.is_running());
    // The server answers its peer (heartbeats) and they parse.
    raw.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    let mut buf = [0u8; 2048];
    let (n, from) = raw.recv_from(&mut buf).unwrap();
    assert_eq!(from, to);
    assert!(conn.handle_datagram(10_000, &buf[..n]).is_ok());
}

#[test]
fn datagrams_from_a_third_socket_are_bad_peers() {
    let (server, client) = pair();
    client.send(b"first".to_vec());
    assert_eq!(
        server.recv_timeout(Duration::from_secs(2)).unwrap(),
        b"first"
    );
    // A well-formed Sprout datagram and garbage, both from an intruder.
    let intruder = UdpSocket::bind(any_port()).unwrap();
    let mut conn = Connection::new(Config::default(), 0).unwrap();
    let mut d = Vec::new();
    conn.send(b"intruder".to_vec());
    conn.poll_transmit(0, &mut d).unwrap();
    intruder.send_to(&d, server.local_addr()).unwrap();
    intruder.send_to(b"junk", server.local_addr()).unwrap();
    intruder.send_to(&d, client.local_addr()).unwrap();
    assert!(eventually(Duration::from_secs(2), || server
        .stats()
        .bad_peers
        == 2
        && client.stats().bad_peers == 1));
    client.send(b"second".to_vec());
    assert_eq!(
        server.recv_timeout(Duration::from_secs(2)).unwrap(),
        b"second"
    );
    assert_eq!(server.peer_addr(), Some(client.local_addr()));
    assert_eq!(server.stats().malformed, 0);
}

#[test]
fn acceptor_chooses_the_peer_and_its_configuration() {
    let server = Endpoint::accept(any_port(), |_, payload| {
        (payload == b"ewma please").then(Config::ewma)
    })
    .unwrap();
    let wrong = Endpoint::connect(any_port(), server.local_addr(), Config::default()).unwrap();
    wrong.send(b"not this".to_vec());
    assert!(eventually(Duration::from_secs(2), || server
        .stats()
        .unaccepted
        > 0));
    assert_eq!(server.config(), None);
    // Sprout-EWMA's window starts closed (no forecast before its first observation): the
    // request goes out as a greeting, outside the window.
    let right = Endpoint::connect_with_greeting(
        any_port(),
        server.local_addr(),
        Config::ewma(),
        b"ewma please".to_vec(),
    )
    .unwrap();
    assert_eq!(
        server.recv_timeout(Duration::from_secs(2)).unwrap(),
        b"ewma please"
    );
    assert_eq!(server.config(), Some(Config::ewma()));
    assert_eq!(server.peer_addr(), Some(right.local_addr()));
    // Data flows once the forecasts have started.
    right.send(b"data".to_vec());
    let got = server.recv_timeout(Duration::from_secs(3)).unwrap();
    let got = if got == b"ewma please" {
        server.recv_timeout(Duration::from_secs(3)).unwrap()
    } else {
        got
    };
    assert_eq!(got, b"data");
}

#[test]
fn close_stops_the_driver_and_unblocks_readers() {
    let (server, client) = pair();
    let t = Instant::now();
    assert_eq!(client.recv_timeout(Duration::from_millis(100)), None);
    assert!(t.elapsed() >= Duration::from_millis(100));
    client.close();
    assert!(!client.is_running());
    let t = Instant::now();
    assert_eq!(client.recv_timeout(Duration::from_secs(5)), None);
    assert!(t.elapsed() < Duration::from_secs(1));
    client.close();
    drop(server);
}
