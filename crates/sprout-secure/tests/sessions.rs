//! One server, many sessions on one socket; the client's handshake under loss and forgery.

use sprout_core::Instant;
use std::net::SocketAddr;

use crate::common::*;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use sprout_secure::{ClientReceived, DropReason, Limits, PrivateKey, SecureError, ServerReceived};

#[test]
fn many_sessions_share_one_server_and_each_gets_its_own_datagrams() {
    let server_key = PrivateKey::generate();
    let mut server = server_with(&server_key, &[], Limits::default());
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let n = 200usize;
    let mut clients = Vec::new();
    for i in 0..n {
        let mut c = client_with(
            &PrivateKey::generate(),
            &server,
            Limits::default(),
            0,
            &[i as u8],
        );
        let from = SocketAddr::from(([10, 1, (i / 250) as u8, (i % 250) as u8], 4000));
        let id = establish(&mut server, &mut c, from, 0);
        assert_eq!(server.take_greeting(id), vec![i as u8]);
        clients.push((c, id, from));
    }
    assert_eq!(server.session_count(), n);
    // Every client sends 20 datagrams, all interleaved at random.
    let mut flying = Vec::new();
    for (k, (c, _, from)) in clients.iter_mut().enumerate() {
        for j in 0..20u32 {
            let mut d = Vec::new();
            c.seal(
                Instant::from_micros(1),
                format!("{k}/{j}").as_bytes(),
                &mut d,
            )
            .unwrap();
            flying.push((k, j, *from, d));
        }
    }
    flying.shuffle(&mut rng);
    let mut pt = Vec::new();
    for (k, j, from, d) in &flying {
        let id = clients[*k].1;
        assert_eq!(
            server.handle(Instant::from_micros(1), *from, d, &mut pt),
            ServerReceived::Data { id }
        );
        assert_eq!(pt, format!("{k}/{j}").as_bytes());
    }
    // The server answers each; only its client opens it.
    let mut buf = Vec::new();
    for k in 0..n {
        let (_, id, from) = clients[k];
        assert_eq!(
            server.seal(
                Instant::from_micros(2),
                id,
                format!("to {k}").as_bytes(),
                &mut buf
            ),
            Ok(from)
        );
        let other = (k + 1) % n;
        assert!(matches!(
            clients[other]
                .0
                .handle(Instant::from_micros(2), &buf, &mut pt),
            ClientReceived::Dropped(DropReason::UnknownSession)
        ));
        assert_eq!(
            clients[k].0.handle(Instant::from_micros(2), &buf, &mut pt),
            ClientReceived::Data
        );
        assert_eq!(pt, format!("to {k}").as_bytes());
    }
    let mut ids = server.session_ids();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), n);
    assert_eq!(server.stats().sessions, n as u64);
}

#[test]
fn a_forged_response_does_not_spoil_the_handshake() {
    let mut server = server_with(&PrivateKey::generate(), &[], Limits::default());
    let mut client = client_with(&PrivateKey::generate(), &server, Limits::default(), 0, b"");
    let mut buf = Vec::new();
    let mut pt = Vec::new();
    assert!(client.poll_transmit(Instant::from_micros(0), &mut buf));
    server.handle(Instant::from_micros(0), client_addr(), &buf, &mut pt);
    let mut response = Vec::new();
    server.poll_transmit(&mut response).unwrap();
    // Every single-bit change of the response, at full length, is refused.
    for i in 0..response.len() * 8 {
        let mut forged = response.clone();
        forged[i / 8] ^= 1 << (i % 8);
        let r = client.handle(Instant::from_micros(0), &forged, &mut pt);
        assert!(matches!(r, ClientReceived::Dropped(_)), "bit {i}: {r:?}");
    }
    assert!(client.stats().dropped(DropReason::HandshakeFailed) > 300);
    assert!(!client.is_established());
    // The genuine one still completes it.
    assert_eq!(
        client.handle(Instant::from_micros(0), &response, &mut pt),
        ClientReceived::Established
    );
    assert!(client.poll_transmit(Instant::from_micros(0), &mut buf));
    assert!(matches!(
        server.handle(Instant::from_micros(0), client_addr(), &buf, &mut pt),
        ServerReceived::NewSession { .. }
    ));
}

#[test]
fn the_client_repeats_its_initiation_then_gives_up() {
    let limits = Limits::default();
    let server = server_with(&PrivateKey::generate(), &[], limits.clone());
    let mut client = client_with(&PrivateKey::generate(), &server, limits.clone(), 0, b"");
    let mut first = Vec::new();
    assert!(client.poll_transmit(Instant::from_micros(0), &mut first));
    let mut buf = Vec::new();
    assert!(
        !client.poll_transmit(Instant::from_micros(0), &mut buf),
        "once until the retry timer"
    );
    let mut sends = 1;
    // Driven by its own timer, as the runtime does; nobody answers.
    while let Some(t) = client.poll_timeout() {
        assert!(t <= Instant::from_micros(limits.handshake_timeout.as_micros()));
        client.handle_timeout(t);
        while client.poll_transmit(t, &mut buf) {
            assert_eq!(buf, first, "a repeat is the same initiation");
            sends += 1;
        }
    }
    assert_eq!(
        sends as u64,
        limits.handshake_timeout.as_micros() / limits.handshake_retry.as_micros()
    );
    assert_eq!(client.error(), Some(&SecureError::HandshakeTimeout(10)));
    assert!(!client.is_established());
    assert!(client
        .error()
        .unwrap()
        .to_string()
        .contains("wire version 2"));
}

#[test]
fn a_lost_response_is_answered_again_with_the_same_keys() {
    let limits = Limits::default();
    let mut server = server_with(&PrivateKey::generate(), &[], limits.clone());
    let mut client = client_with(&PrivateKey::generate(), &server, limits.clone(), 0, b"hi");
    let mut buf = Vec::new();
    let mut pt = Vec::new();
    assert!(client.poll_transmit(Instant::from_micros(0), &mut buf));
    server.handle(Instant::from_micros(0), client_addr(), &buf, &mut pt);
    let mut lost = Vec::new();
    server.poll_transmit(&mut lost).unwrap();
    let t = client.poll_timeout().unwrap();
    assert_eq!(t, Instant::from_micros(limits.handshake_retry.as_micros()));
    client.handle_timeout(t);
    assert!(client.poll_transmit(t, &mut buf));
    assert_eq!(
        server.handle(t, client_addr(), &buf, &mut pt),
        ServerReceived::Control
    );
    server.poll_transmit(&mut buf).unwrap();
    assert_eq!(buf, lost);
    assert_eq!(server.pending_count(), 1, "one pending session, not two");
    assert_eq!(client.handle(t, &buf, &mut pt), ClientReceived::Established);
    assert!(client.poll_transmit(t, &mut buf));
    assert!(matches!(
        server.handle(t, client_addr(), &buf, &mut pt),
        ServerReceived::NewSession { .. }
    ));
}

#[test]
fn a_greeting_too_long_is_refused() {
    let server = server_with(&PrivateKey::generate(), &[], Limits::default());
    let long = vec![0u8; sprout_secure::wire::MAX_GREETING_BYTES + 1];
    let r = sprout_secure::Client::new(
        sprout_secure::ClientConfig {
            private_key: PrivateKey::generate(),
            server_key: server.public_key(),
            limits: Limits::default(),
        },
        Instant::from_micros(0),
        &long,
    );
    assert!(matches!(r, Err(SecureError::GreetingTooLong(513))));
}
