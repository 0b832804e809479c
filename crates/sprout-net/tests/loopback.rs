//! Secure sessions on 127.0.0.1: ordered delivery, bulk transfers, the greeting and the
//! acceptor, the handshake's failure, closing, idle sessions, the session limit and allowed
//! keys.

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use crate::common::*;
use sprout_core::Config;
use sprout_net::message::{Data, Message};
use sprout_net::secure::{
    AllowedClients, ClientConfig, DropReason, Limits, PrivateKey, SecureError,
};
use sprout_net::{realtime_us, Endpoint, NetError, Server};

#[test]
fn datagrams_arrive_in_order_and_intact_both_ways() {
    let (server, client, session) = pair();
    let n = 200usize;
    let payload = |i: usize| -> Vec<u8> {
        let len = 1 + (i * 37) % client.max_payload();
        (0..len).map(|k| (i + k) as u8).collect()
    };
    for i in 0..n {
        client.send(payload(i));
    }
    for i in 0..n {
        let got = session
            .recv_timeout(Duration::from_secs(3))
            .unwrap_or_else(|| panic!("datagram {i} did not arrive"));
        assert_eq!(got, payload(i), "datagram {i}");
    }
    assert_eq!(session.peer_addr(), client.local_addr());
    assert_eq!(session.local_addr(), server.local_addr());
    for i in 0..20 {
        session.send(payload(i));
    }
    for i in 0..20 {
        assert_eq!(
            client.recv_timeout(Duration::from_secs(3)),
            Some(payload(i))
        );
    }
    let s = session.stats();
    assert_eq!(s.malformed, 0);
    assert!(s.established && s.running);
    let c = client.stats();
    let cs = c.secure.as_ref().expect("a client's security counters");
    assert_eq!(cs.handshakes, 1);
    assert_eq!(cs.dropped_total(), 0);
    assert!(cs.opened >= 20);
    // Every datagram on the wire is sealed: 32 bytes more than the core datagram.
    assert!(c.bytes_sent >= c.app_bytes_sent + 32 * c.datagrams_sent);
    assert!(client.wait_writable(0, Duration::from_secs(1)));
    assert_eq!(client.queued_bytes(), 0);
    let ss = server.stats();
    assert_eq!(ss.sessions_open, 1);
    assert_eq!(ss.sessions_accepted, 1);
    assert_eq!(ss.secure.dropped_total(), 0);
}

#[test]
fn bulk_transfer_fills_the_window_and_carries_forecasts() {
    let (_server, client, session) = pair();
    session.set_keep_incoming(false);
    client.set_bulk(true);
    std::thread::sleep(Duration::from_secs(2));
    let c = client.stats();
    let s = session.stats();
    println!("client {}", serde_json::to_string(&c).unwrap());
    println!("session {}", serde_json::to_string(&s).unwrap());
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
    // The session's own direction is idle but its heartbeats carry the client's forecasts.
    assert!(s.heartbeats_sent > 0);
    assert!(s.since_last_received_s.unwrap() < 0.5);
}

#[test]
fn bulk_writer_stamps_every_payload() {
    let (_server, client, session) = pair();
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
        let Some(d) = session.recv_timeout(Duration::from_millis(200)) else {
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
fn the_greeting_reaches_the_acceptor_which_chooses_the_configuration() {
    let (o, public) = options(AllowedClients::Any);
    let server = Server::bind(any_port(), o, |_, _, greeting| match greeting {
        b"ewma please" => Some(Config::ewma()),
        b"default" => Some(Config::default()),
        _ => None,
    })
    .unwrap();
    // A greeting the acceptor does not like: the handshake completes (the security layer
    // knows nothing of greetings) but no session is accepted, and nothing the client sends
    // reaches an application.
    let wrong = Endpoint::connect(
        any_port(),
        server.local_addr(),
        keys_for(public),
        Config::default(),
        b"not this",
    )
    .unwrap();
    wrong.send(b"data".to_vec());
    assert!(eventually(Duration::from_secs(3), || server
        .stats()
        .sessions_refused
        == 1));
    assert!(server.try_accept().is_none());
    // Sprout-EWMA's window starts closed (no forecast before its first observation); the
    // greeting travels in the handshake, so the server still learns the scheme.
    let right = Endpoint::connect(
        any_port(),
        server.local_addr(),
        keys_for(public),
        Config::ewma(),
        b"ewma please",
    )
    .unwrap();
    let session = server.accept_timeout(Duration::from_secs(3)).unwrap();
    assert_eq!(session.greeting(), b"ewma please");
    assert_eq!(session.config(), Config::ewma());
    assert_eq!(session.peer_addr(), right.local_addr());
    right.send(b"data".to_vec());
    assert_eq!(
        session.recv_timeout(Duration::from_secs(3)).unwrap(),
        b"data"
    );
    let s = server.stats();
    assert_eq!((s.sessions_accepted, s.sessions_refused), (1, 1));
    // The refused client's data is dropped as an unknown session (the layer forgot it).
    assert!(s.secure.dropped(DropReason::UnknownSession) > 0, "{s:?}");
    // A greeting over the limit is refused at once.
    let long = vec![0u8; sprout_net::secure::wire::MAX_GREETING_BYTES + 1];
    let err = Endpoint::connect(
        any_port(),
        server.local_addr(),
        keys_for(public),
        Config::default(),
        &long,
    )
    .unwrap_err();
    assert!(matches!(
        err,
        NetError::Secure(SecureError::GreetingTooLong(_))
    ));
}

#[test]
fn nothing_is_sealed_before_the_handshake_and_a_silent_server_is_an_error() {
    // A socket that reads but never answers.
    let silent = UdpSocket::bind(any_port()).unwrap();
    silent
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let keys = ClientConfig {
        private_key: PrivateKey::generate(),
        server_key: PrivateKey::generate().public_key(),
        limits: Limits {
            handshake_timeout: sprout_core::Duration::from_micros(1_000_000),
            ..Limits::default()
        },
    };
    let start = Instant::now();
    let client = Endpoint::connect(
        any_port(),
        silent.local_addr().unwrap(),
        keys,
        Config::default(),
        b"hello",
    )
    .unwrap();
    client.send(b"queued until established".to_vec());
    client.set_bulk(true);
    assert_eq!(client.queued_bytes(), 24);
    let err = client.wait_established(Duration::from_secs(5)).unwrap_err();
    assert!(
        matches!(err, NetError::Secure(SecureError::HandshakeTimeout(_))),
        "{err}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    assert!(client.error().is_some());
    assert!(!client.is_running());
    let s = client.stats();
    assert!(!s.established && !s.running);
    assert!(
        s.end.as_deref().unwrap_or("").contains("handshake"),
        "{s:?}"
    );
    assert_eq!(client.recv_timeout(Duration::from_secs(1)), None);
    // Only handshake initiations (type 1) left the client, repeated, never a data datagram.
    let mut buf = [0u8; 2048];
    let mut initiations = 0;
    while let Ok(n) = silent.recv(&mut buf) {
        assert!(n >= 4);
        assert_eq!(
            &buf[..3],
            &[0x53, 2, 1],
            "a datagram other than an initiation"
        );
        initiations += 1;
    }
    assert!(initiations >= 2, "{initiations} initiations");
    assert_eq!(s.datagrams_sent, initiations);
}

#[test]
fn closing_ends_the_session_on_both_sides() {
    let (server, client, session) = pair();
    let t = Instant::now();
    assert_eq!(client.recv_timeout(Duration::from_millis(100)), None);
    assert!(t.elapsed() >= Duration::from_millis(100));
    // The server's application closes the session: its readers wake, the layer forgets it,
    // and tells the client (an authenticated close), which ends with that reason at once
    // rather than taking the server for dead and redialling.
    let reader = std::thread::spawn({
        let session = std::sync::Arc::new(session);
        let s2 = session.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            s2.close();
        });
        move || {
            let t = Instant::now();
            let got = session.recv();
            (got, t.elapsed(), session.stats())
        }
    });
    let (got, waited, s) = reader.join().unwrap();
    assert_eq!(got, None);
    assert!(waited < Duration::from_secs(1), "{waited:?}");
    assert!(!s.running);
    assert_eq!(s.end.as_deref(), Some("closed"));
    assert!(eventually(Duration::from_secs(2), || {
        let st = server.stats();
        st.sessions_open == 0 && st.sessions_closed == 1
    }));
    assert!(eventually(Duration::from_secs(2), || !client.is_running()));
    assert_eq!(
        client.end_reason().as_deref(),
        Some("the server closed the session")
    );
    let c = client.stats();
    assert_eq!((c.state.name(), c.reconnections), ("ended", 0), "{c:?}");
    let t = Instant::now();
    assert_eq!(client.recv_timeout(Duration::from_secs(5)), None);
    assert!(t.elapsed() < Duration::from_secs(1));
    // What the application sends now goes nowhere: nothing reaches the server.
    let received = server.stats().datagrams_received;
    client.send(b"anyone?".to_vec());
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(server.stats().datagrams_received, received);
    assert_eq!(server.stats().sessions_accepted, 1, "the client redialled");
    // The client closes too: its driver has stopped and readers return at once.
    client.close();
    assert!(!client.is_running());
    let t = Instant::now();
    assert_eq!(client.recv_timeout(Duration::from_secs(5)), None);
    assert!(t.elapsed() < Duration::from_secs(1));
    client.close();
    // The server closes: accept returns None.
    server.close();
    assert!(!server.is_running());
    assert!(server.accept_timeout(Duration::from_secs(5)).is_none());
}

#[test]
fn an_idle_session_ends_and_the_application_sees_it() {
    let (mut o, public) = options(AllowedClients::Any);
    o.idle_timeout = Duration::from_millis(700);
    let server = Server::bind(any_port(), o, |_, _, _| Some(Config::default())).unwrap();
    // The client reaches the server through a path the test cuts.
    let mut path = Path::start(server.local_addr());
    let client = Endpoint::connect(
        any_port(),
        path.front,
        keys_for(public),
        Config::default(),
        b"",
    )
    .unwrap();
    let session = server.accept_timeout(Duration::from_secs(3)).unwrap();
    // While the client runs, its heartbeats keep the session alive well past the timeout.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(session.is_open(), "{:?}", session.end_reason());
    // The client vanishes without a word: its path dies, and the close it sends when it
    // quits is lost (a client that quits and is heard is the `endings` tests' case).
    path.cut();
    client.close();
    let t = Instant::now();
    assert_eq!(session.recv_timeout(Duration::from_secs(5)), None);
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    let s = session.stats();
    assert!(!s.running);
    assert!(s.end.as_deref().unwrap_or("").starts_with("idle"), "{s:?}");
    let st = server.stats();
    assert_eq!((st.sessions_open, st.sessions_expired), (0, 1), "{st:?}");
}

#[test]
fn the_session_limit_refuses_more_clients() {
    let (mut o, public) = options(AllowedClients::Any);
    o.max_sessions = 2;
    let server = Server::bind(any_port(), o, |_, _, _| Some(Config::default())).unwrap();
    let connect = || {
        Endpoint::connect(
            any_port(),
            server.local_addr(),
            keys_for(public),
            Config::default(),
            b"",
        )
        .unwrap()
    };
    let a = connect();
    let b = connect();
    let sa = server.accept_timeout(Duration::from_secs(3)).unwrap();
    let sb = server.accept_timeout(Duration::from_secs(3)).unwrap();
    assert_ne!(sa.id(), sb.id());
    let c = connect();
    assert!(eventually(Duration::from_secs(3), || server
        .stats()
        .secure
        .dropped(DropReason::TooManySessions)
        > 0));
    assert!(server.accept_timeout(Duration::from_millis(300)).is_none());
    assert!(!c.is_established());
    // The two sessions work.
    a.send(b"a".to_vec());
    b.send(b"b".to_vec());
    let mut got = [
        sa.recv_timeout(Duration::from_secs(2)),
        sb.recv_timeout(Duration::from_secs(2)),
    ];
    got.sort();
    assert_eq!(got, [Some(b"a".to_vec()), Some(b"b".to_vec())]);
    // One ends: the waiting client gets its session on its next handshake repeat.
    drop(sa);
    let sc = server
        .accept_timeout(Duration::from_secs(3))
        .expect("room again");
    assert_eq!(sc.peer_addr(), c.local_addr());
}

#[test]
fn a_client_whose_key_is_not_allowed_gets_no_session() {
    let allowed_key = PrivateKey::generate();
    let allowed = AllowedClients::Keys([allowed_key.public_key()].into_iter().collect());
    let (o, public) = options(allowed);
    let server = Server::bind(any_port(), o, |_, _, _| Some(Config::default())).unwrap();
    let stranger = Endpoint::connect(
        any_port(),
        server.local_addr(),
        keys_for(public),
        Config::default(),
        b"let me in",
    )
    .unwrap();
    stranger.send(b"data".to_vec());
    assert!(eventually(Duration::from_secs(3), || server
        .stats()
        .secure
        .dropped(DropReason::NotAllowed)
        >= 2));
    assert!(server.accept_timeout(Duration::from_millis(200)).is_none());
    assert!(!stranger.is_established());
    assert_eq!(server.stats().sessions_accepted, 0);
    // The allowed key gets in, and the session names it.
    let friend = Endpoint::connect(
        any_port(),
        server.local_addr(),
        ClientConfig {
            private_key: allowed_key.clone(),
            server_key: public,
            limits: Limits::default(),
        },
        Config::default(),
        b"",
    )
    .unwrap();
    let session = server.accept_timeout(Duration::from_secs(3)).unwrap();
    assert_eq!(session.peer_key(), allowed_key.public_key());
    assert_eq!(session.peer_addr(), friend.local_addr());
    // A client that has the wrong key for the server never completes a handshake either.
    let confused = Endpoint::connect(
        any_port(),
        server.local_addr(),
        ClientConfig {
            private_key: allowed_key,
            server_key: PrivateKey::generate().public_key(),
            limits: Limits::default(),
        },
        Config::default(),
        b"",
    )
    .unwrap();
    assert!(eventually(Duration::from_secs(3), || server
        .stats()
        .secure
        .dropped(DropReason::BadMac)
        > 0));
    assert!(!confused.is_established());
}

#[test]
fn rekeys_are_invisible_to_the_transfer() {
    // Keys every 300 ms (the client starts each rekey), refused after 1 s: a transfer of 2.5 s
    // crosses several rekeys and would stall if one went wrong.
    let limits = Limits {
        rekey_after: sprout_core::Duration::from_micros(300_000),
        reject_after: sprout_core::Duration::from_micros(1_000_000),
        ..Limits::default()
    };
    let (mut o, public) = options(AllowedClients::Any);
    o.secure.limits = limits.clone();
    let server = Server::bind(any_port(), o, |_, _, _| Some(Config::default())).unwrap();
    let client = Endpoint::connect(
        any_port(),
        server.local_addr(),
        ClientConfig {
            private_key: PrivateKey::generate(),
            server_key: public,
            limits,
        },
        Config::default(),
        b"",
    )
    .unwrap();
    let session = server.accept_timeout(Duration::from_secs(3)).unwrap();
    let mut sent = 0u32;
    let mut got_up = Vec::new();
    let mut got_down = Vec::new();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(2500) {
        client.send(sent.to_be_bytes().to_vec());
        session.send(sent.to_be_bytes().to_vec());
        sent += 1;
        std::thread::sleep(Duration::from_millis(5));
        while let Some(d) = session.try_recv() {
            got_up.push(u32::from_be_bytes(d[..4].try_into().unwrap()));
        }
        while let Some(d) = client.try_recv() {
            got_down.push(u32::from_be_bytes(d[..4].try_into().unwrap()));
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    while let Some(d) = session.try_recv() {
        got_up.push(u32::from_be_bytes(d[..4].try_into().unwrap()));
    }
    while let Some(d) = client.try_recv() {
        got_down.push(u32::from_be_bytes(d[..4].try_into().unwrap()));
    }
    let cs = client.stats().secure.unwrap();
    let ss = server.stats();
    println!("client {cs:?}\nserver {:?}", ss.secure);
    assert!(cs.rekeys >= 4, "{} rekeys", cs.rekeys);
    assert_eq!(got_up, (0..sent).collect::<Vec<_>>(), "up");
    assert_eq!(got_down, (0..sent).collect::<Vec<_>>(), "down");
    assert_eq!(ss.sessions_accepted, 1);
    assert_eq!(ss.secure.dropped_total(), 0, "{:?}", ss.drops);
    assert_eq!(cs.dropped_total(), 0);
}
