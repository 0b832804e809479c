//! Hostile datagrams against an established session, in memory: each is dropped and counted by
//! its reason, and the session is as before (the next genuine datagram opens both ways, the
//! address did not move, the keys did not change).

use sprout_core::Instant;
use std::net::SocketAddr;

use crate::common::*;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sprout_secure::handshake::Mac1;
use sprout_secure::replay::WINDOW;
use sprout_secure::wire::{MIN_INITIATION_BYTES, RESPONSE_BYTES};
use sprout_secure::{
    ClientReceived, DropReason, Limits, PrivateKey, SealError, ServerReceived, OVERHEAD_BYTES,
};

fn server_drops(p: &mut Pair, from: SocketAddr, d: &[u8]) -> DropReason {
    let mut pt = Vec::new();
    match p
        .server
        .handle(Instant::from_micros(p.now_us), from, d, &mut pt)
    {
        ServerReceived::Dropped(r) => {
            assert!(pt.is_empty());
            r
        }
        other => panic!("expected a drop, got {other:?} for {d:02x?}"),
    }
}

fn client_drops(p: &mut Pair, d: &[u8]) -> DropReason {
    let mut pt = Vec::new();
    match p.client.handle(Instant::from_micros(p.now_us), d, &mut pt) {
        ClientReceived::Dropped(r) => {
            assert!(pt.is_empty());
            r
        }
        other => panic!("expected a drop, got {other:?}"),
    }
}

#[test]
fn forged_tags_and_bodies_are_dropped() {
    let mut p = Pair::new();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for i in 0..200 {
        let mut d = p.client_seal(b"genuine datagram");
        // Flip one bit anywhere after the header, in the ciphertext or the tag.
        let at = rng.gen_range(16..d.len());
        d[at] ^= 1 << (i % 8);
        assert_eq!(server_drops(&mut p, client_addr(), &d), DropReason::Forged);
        // A whole random body and tag under a genuine header.
        let mut d = p.server_seal(b"genuine datagram");
        rng.fill(&mut d[16..]);
        assert_eq!(client_drops(&mut p, &d), DropReason::Forged);
    }
    assert_eq!(p.server.stats().dropped(DropReason::Forged), 200);
    assert_eq!(p.client.stats().dropped(DropReason::Forged), 200);
    // The forged datagrams used counters the genuine ones never sent; they are still free.
    p.assert_both_ways_open();
    // Random bytes of every length from a stranger: never accepted.
    for len in 0..300 {
        let mut d = vec![0u8; len];
        rng.fill(&mut d[..]);
        let r = server_drops(&mut p, other_addr(), &d);
        assert_ne!(r, DropReason::Replayed);
        client_drops(&mut p, &d);
    }
    p.assert_both_ways_open();
}

#[test]
fn replays_inside_and_beyond_the_window_are_dropped() {
    let mut p = Pair::new();
    let mut pt = Vec::new();
    let first = p.client_seal(b"first");
    assert_eq!(
        p.server.handle(
            Instant::from_micros(p.now_us),
            client_addr(),
            &first,
            &mut pt
        ),
        ServerReceived::Data { id: p.id }
    );
    // Inside the window.
    assert_eq!(
        server_drops(&mut p, client_addr(), &first),
        DropReason::Replayed
    );
    assert_eq!(
        server_drops(&mut p, other_addr(), &first),
        DropReason::Replayed
    );
    let to_client = p.server_seal(b"to client");
    assert_eq!(
        p.client
            .handle(Instant::from_micros(p.now_us), &to_client, &mut pt),
        ClientReceived::Data
    );
    assert_eq!(client_drops(&mut p, &to_client), DropReason::Replayed);
    // Beyond the window: WINDOW more datagrams go by, and one more.
    for _ in 0..=WINDOW {
        let d = p.client_seal(b"x");
        assert_eq!(
            p.server
                .handle(Instant::from_micros(p.now_us), client_addr(), &d, &mut pt),
            ServerReceived::Data { id: p.id }
        );
    }
    assert_eq!(
        server_drops(&mut p, client_addr(), &first),
        DropReason::TooOld
    );
    assert_eq!(
        server_drops(&mut p, other_addr(), &first),
        DropReason::TooOld
    );
    let s = p.server.stats();
    assert_eq!(
        (
            s.dropped(DropReason::Replayed),
            s.dropped(DropReason::TooOld)
        ),
        (2, 2)
    );
    assert_eq!(p.server.session(p.id).unwrap().roams, 0);
    p.assert_both_ways_open();
}

#[test]
fn reordered_within_the_window_are_each_accepted_once() {
    let mut p = Pair::new();
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let n = WINDOW as usize; // the whole window, in any order
    let mut datagrams: Vec<(usize, Vec<u8>)> = (0..n)
        .map(|i| (i, p.client_seal(format!("datagram {i}").as_bytes())))
        .collect();
    // The newest first, so every other one is behind it by up to WINDOW - 1.
    let newest = datagrams.pop().unwrap();
    datagrams.shuffle(&mut rng);
    datagrams.insert(0, newest);
    let mut seen = vec![false; n];
    let mut pt = Vec::new();
    for (i, d) in &datagrams {
        assert_eq!(
            p.server
                .handle(Instant::from_micros(p.now_us), client_addr(), d, &mut pt),
            ServerReceived::Data { id: p.id }
        );
        assert_eq!(pt, format!("datagram {i}").as_bytes());
        assert!(!seen[*i]);
        seen[*i] = true;
    }
    assert!(seen.iter().all(|&s| s));
    for (_, d) in &datagrams {
        assert_eq!(server_drops(&mut p, client_addr(), d), DropReason::Replayed);
    }
    assert_eq!(p.server.stats().dropped(DropReason::Replayed), n as u64);
    // The server's datagrams reordered at the client too.
    let mut back: Vec<Vec<u8>> = (0..500).map(|i| p.server_seal(&[i as u8; 10])).collect();
    back.shuffle(&mut rng);
    for d in &back {
        assert_eq!(
            p.client.handle(Instant::from_micros(p.now_us), d, &mut pt),
            ClientReceived::Data
        );
    }
    for d in &back {
        assert_eq!(client_drops(&mut p, d), DropReason::Replayed);
    }
    p.assert_both_ways_open();
}

#[test]
fn truncated_at_every_length_are_dropped() {
    let mut p = Pair::new();
    let d = p.client_seal(&[0xab; 200]);
    for len in 0..d.len() {
        let r = server_drops(&mut p, client_addr(), &d[..len]);
        if len < OVERHEAD_BYTES {
            assert_eq!(r, DropReason::Truncated, "length {len}");
        } else {
            // Cut inside the ciphertext or tag: the tag cannot verify.
            assert_eq!(r, DropReason::Forged, "length {len}");
        }
    }
    let d = p.server_seal(&[0xcd; 200]);
    for len in 0..d.len() {
        let r = client_drops(&mut p, &d[..len]);
        assert!(
            matches!(r, DropReason::Truncated | DropReason::Forged),
            "length {len}: {r:?}"
        );
    }
    // The genuine datagrams, whole, still open once (their counters were not used up).
    let mut pt = Vec::new();
    let whole = p.client_seal(b"whole");
    assert_eq!(
        p.server.handle(
            Instant::from_micros(p.now_us),
            client_addr(),
            &whole,
            &mut pt
        ),
        ServerReceived::Data { id: p.id }
    );
    assert_eq!(
        p.client.handle(Instant::from_micros(p.now_us), &d, &mut pt),
        ClientReceived::Data
    );
    assert_eq!(pt, vec![0xcd; 200]);
    // A handshake initiation and a response cut anywhere.
    let other_key = PrivateKey::generate();
    let mut c = client_with(&other_key, &p.server, Limits::default(), p.now_us, b"");
    let mut init = Vec::new();
    assert!(c.poll_transmit(Instant::from_micros(p.now_us), &mut init));
    for len in 0..init.len() {
        let r = server_drops(&mut p, other_addr(), &init[..len]);
        if len < MIN_INITIATION_BYTES {
            assert!(
                matches!(r, DropReason::Truncated | DropReason::NotSprout),
                "{len}: {r:?}"
            );
        } else {
            assert_eq!(r, DropReason::BadMac, "length {len}");
        }
    }
    let mut response = Vec::new();
    let mut server2 = server_with(&PrivateKey::generate(), &[], Limits::default());
    let mut c2 = client_with(&other_key, &server2, Limits::default(), 0, b"");
    assert!(c2.poll_transmit(Instant::from_micros(0), &mut init));
    assert_eq!(
        server2.handle(Instant::from_micros(0), client_addr(), &init, &mut pt),
        ServerReceived::Control
    );
    server2.poll_transmit(&mut response).unwrap();
    assert_eq!(response.len(), RESPONSE_BYTES);
    for len in 0..response.len() {
        assert!(matches!(
            c2.handle(Instant::from_micros(0), &response[..len], &mut pt),
            ClientReceived::Dropped(_)
        ));
    }
    // After all those cuts the whole response still completes the handshake.
    assert_eq!(
        c2.handle(Instant::from_micros(0), &response, &mut pt),
        ClientReceived::Established
    );
    p.assert_both_ways_open();
}

#[test]
fn a_client_whose_key_is_not_allowed_gets_nothing() {
    let mut p = Pair::new();
    let stranger = PrivateKey::generate();
    let mut c = client_with(
        &stranger,
        &p.server,
        Limits::default(),
        p.now_us,
        b"let me in",
    );
    let mut d = Vec::new();
    assert!(c.poll_transmit(Instant::from_micros(p.now_us), &mut d));
    assert_eq!(
        server_drops(&mut p, other_addr(), &d),
        DropReason::NotAllowed
    );
    assert!(p.server.poll_transmit(&mut d).is_none());
    assert_eq!(p.server.session_count(), 1);
    assert_eq!(p.server.pending_count(), 0);
    p.assert_both_ways_open();
}

#[test]
fn a_client_with_the_wrong_server_key_gets_nothing() {
    let mut p = Pair::new();
    // A client configured with another server's key: its mac1 is keyed for that server.
    let impostor = PrivateKey::generate();
    let wrong_server = server_with(&impostor, &[], Limits::default());
    let mut c = client_with(
        &p.client_key,
        &wrong_server,
        Limits::default(),
        p.now_us,
        b"",
    );
    let mut d = Vec::new();
    assert!(c.poll_transmit(Instant::from_micros(p.now_us), &mut d));
    assert_eq!(server_drops(&mut p, other_addr(), &d), DropReason::BadMac);
    // Even with a mac1 recomputed for this server, Noise refuses it (sealed to another key).
    let mac = Mac1::new(&p.server.public_key());
    let n = d.len();
    let tag = mac.compute(&d[..n - 16]);
    d[n - 16..].copy_from_slice(&tag);
    assert_eq!(
        server_drops(&mut p, other_addr(), &d),
        DropReason::HandshakeFailed
    );
    assert!(p.server.poll_transmit(&mut d).is_none());
    p.assert_both_ways_open();
}

#[test]
fn a_datagram_sealed_with_another_sessions_keys_is_forged() {
    let mut p = Pair::new();
    // A second client (same allowed key, another session).
    let mut c2 = client_with(
        &p.client_key,
        &p.server,
        Limits::default(),
        p.now_us,
        b"two",
    );
    let id2 = establish(&mut p.server, &mut c2, other_addr(), p.now_us);
    assert_ne!(id2, p.id);
    let mut d = Vec::new();
    c2.seal(Instant::from_micros(p.now_us), b"session two", &mut d)
        .unwrap();
    // Readdressed to session one: its keys do not open it.
    d[4..8].copy_from_slice(&p.id.to_be_bytes());
    assert_eq!(server_drops(&mut p, other_addr(), &d), DropReason::Forged);
    // Server to client two, readdressed to client one.
    p.server
        .seal(Instant::from_micros(p.now_us), id2, b"for two", &mut d)
        .unwrap();
    d[4..8].copy_from_slice(&p.client.index().to_be_bytes());
    assert_eq!(client_drops(&mut p, &d), DropReason::Forged);
    p.assert_both_ways_open();
}

#[test]
fn unknown_connection_ids_and_epochs_are_dropped() {
    let mut p = Pair::new();
    let mut d = p.client_seal(b"x");
    let wrong = p.id.wrapping_add(1);
    d[4..8].copy_from_slice(&wrong.to_be_bytes());
    assert_eq!(
        server_drops(&mut p, client_addr(), &d),
        DropReason::UnknownSession
    );
    let mut d = p.client_seal(b"x");
    d[3] = d[3].wrapping_add(7);
    assert_eq!(
        server_drops(&mut p, client_addr(), &d),
        DropReason::UnknownEpoch
    );
    let mut d = p.server_seal(b"x");
    d[4] ^= 0x80;
    assert_eq!(client_drops(&mut p, &d), DropReason::UnknownSession);
    // A closed session's datagrams are wrong-session from then on.
    let d = p.client_seal(b"after close");
    let id = p.id;
    p.server.close(id);
    assert_eq!(
        server_drops(&mut p, client_addr(), &d),
        DropReason::UnknownSession
    );
    assert_eq!(p.server.session_count(), 0);
}

#[test]
fn downgraded_datagrams_are_refused() {
    let mut p = Pair::new();
    // A version-1 (unencrypted) Sprout datagram, as sprout-core wrote before wire version 2.
    let mut v1 = vec![0x53, 1, 0, 0];
    v1.extend_from_slice(&[0u8; 40]);
    assert_eq!(
        server_drops(&mut p, client_addr(), &v1),
        DropReason::OldVersion
    );
    assert_eq!(client_drops(&mut p, &v1), DropReason::OldVersion);
    // A genuine datagram with its version byte changed, to 1 and to 3.
    let mut d = p.client_seal(b"x");
    d[1] = 1;
    assert_eq!(
        server_drops(&mut p, client_addr(), &d),
        DropReason::OldVersion
    );
    d[1] = 3;
    assert_eq!(
        server_drops(&mut p, client_addr(), &d),
        DropReason::UnknownVersion
    );
    // Type changed: data read as a handshake, or an undefined type.
    d[1] = 2;
    d[2] = 9;
    assert_eq!(
        server_drops(&mut p, client_addr(), &d),
        DropReason::Malformed
    );
    d[2] = 1;
    assert!(matches!(
        server_drops(&mut p, client_addr(), &d),
        DropReason::Truncated | DropReason::Malformed
    ));
    // A handshake initiation with its version lowered.
    let mut c = client_with(&p.client_key, &p.server, Limits::default(), p.now_us, b"");
    let mut init = Vec::new();
    assert!(c.poll_transmit(Instant::from_micros(p.now_us), &mut init));
    init[1] = 1;
    assert_eq!(
        server_drops(&mut p, other_addr(), &init),
        DropReason::OldVersion
    );
    // Magic changed.
    let mut d = p.server_seal(b"x");
    d[0] = 0x52;
    assert_eq!(client_drops(&mut p, &d), DropReason::NotSprout);
    let s = p.server.stats();
    assert_eq!(s.dropped(DropReason::OldVersion), 3);
    p.assert_both_ways_open();
}

#[test]
fn a_replayed_handshake_does_not_change_the_session() {
    let server_key = PrivateKey::generate();
    let client_key = PrivateKey::generate();
    let mut server = server_with(&server_key, &[&client_key], Limits::default());
    let mut client = client_with(&client_key, &server, Limits::default(), 0, b"hi");
    let mut init = Vec::new();
    assert!(client.poll_transmit(Instant::from_micros(0), &mut init));
    let mut pt = Vec::new();
    let mut response = Vec::new();
    assert_eq!(
        server.handle(Instant::from_micros(0), client_addr(), &init, &mut pt),
        ServerReceived::Control
    );
    server.poll_transmit(&mut response).unwrap();
    assert_eq!(
        client.handle(Instant::from_micros(0), &response, &mut pt),
        ClientReceived::Established
    );
    let mut d = Vec::new();
    assert!(client.poll_transmit(Instant::from_micros(0), &mut d));
    let id = match server.handle(Instant::from_micros(0), client_addr(), &d, &mut pt) {
        ServerReceived::NewSession { id, .. } => id,
        other => panic!("{other:?}"),
    };
    // The initiation replayed from elsewhere: answered with the same response, nothing new.
    for _ in 0..10 {
        assert_eq!(
            server.handle(Instant::from_micros(10), other_addr(), &init, &mut pt),
            ServerReceived::Control
        );
        let mut again = Vec::new();
        assert_eq!(server.poll_transmit(&mut again), Some(other_addr()));
        assert_eq!(again, response);
    }
    assert_eq!((server.session_count(), server.pending_count()), (1, 0));
    // The response replayed to the client: unexpected.
    assert_eq!(
        client.handle(Instant::from_micros(10), &response, &mut pt),
        ClientReceived::Dropped(DropReason::UnexpectedResponse)
    );
    // The session's keys and address are as before.
    client
        .seal(Instant::from_micros(10), b"same keys", &mut d)
        .unwrap();
    assert_eq!(
        server.handle(Instant::from_micros(10), client_addr(), &d, &mut pt),
        ServerReceived::Data { id }
    );
    assert_eq!(
        server.seal(Instant::from_micros(10), id, b"ok", &mut d),
        Ok(client_addr())
    );
    assert_eq!(
        client.handle(Instant::from_micros(10), &d, &mut pt),
        ClientReceived::Data
    );
    // Replayed after the session closed: a pending session nobody can confirm, which expires.
    server.close(id);
    assert_eq!(
        server.handle(Instant::from_micros(20), other_addr(), &init, &mut pt),
        ServerReceived::Control
    );
    assert_eq!((server.session_count(), server.pending_count()), (0, 1));
    let deadline = 20 + Limits::default().handshake_timeout.as_micros();
    for _ in 0..10 {
        let t = server
            .poll_timeout()
            .expect("a timer while a session is pending");
        assert!(t <= Instant::from_micros(deadline));
        server.handle_timeout(t);
        if server.pending_count() == 0 {
            break;
        }
    }
    assert_eq!(server.pending_count(), 0);
    assert!(
        server.poll_event().is_none(),
        "a pending session ends silently"
    );
}

/// What `p`'s server makes of `d` from `from`, now.
fn server_gets(p: &mut Pair, from: SocketAddr, d: &[u8]) -> ServerReceived {
    let mut pt = Vec::new();
    p.server
        .handle(Instant::from_micros(p.now_us), from, d, &mut pt)
}

/// Where `p`'s server sends `plaintext` of its session, now.
fn server_sends_to(p: &mut Pair, plaintext: &[u8]) -> Result<SocketAddr, SealError> {
    let now = Instant::from_micros(p.now_us);
    p.server.seal(now, p.id, plaintext, &mut Vec::new())
}

#[test]
fn roaming_follows_genuine_datagrams_only() {
    let mut p = Pair::new();
    let new_addr: SocketAddr = "203.0.113.9:6000".parse().unwrap();
    // Forged from the new address: no move.
    let mut d = p.client_seal(b"x");
    let n = d.len();
    d[n - 1] ^= 1;
    assert_eq!(server_drops(&mut p, new_addr, &d), DropReason::Forged);
    assert_eq!(p.server.session(p.id).unwrap().addr, client_addr());
    // A genuine but older datagram (reordered) from the new address: accepted, no move.
    let older = p.client_seal(b"older");
    let newer = p.client_seal(b"newer");
    let data = ServerReceived::Data { id: p.id };
    assert_eq!(server_gets(&mut p, client_addr(), &newer), data);
    assert_eq!(server_gets(&mut p, new_addr, &older), data);
    assert_eq!(p.server.session(p.id).unwrap().addr, client_addr());
    // A replay of the newest from the new address: no move.
    assert_eq!(server_drops(&mut p, new_addr, &newer), DropReason::Replayed);
    assert_eq!(p.server.session(p.id).unwrap().addr, client_addr());
    // The genuine newest datagram from the new address makes it a candidate: the server still
    // sends to the confirmed address (a replayed capture from a spoofed source reflects
    // nothing).
    let d = p.client_seal(b"moving");
    assert_eq!(server_gets(&mut p, new_addr, &d), data);
    let info = p.server.session(p.id).unwrap();
    assert_eq!(
        (info.addr, info.candidate, info.roams),
        (client_addr(), Some(new_addr), 0)
    );
    assert_eq!(server_sends_to(&mut p, b"still to old"), Ok(client_addr()));
    // A second, newer one from the new address confirms it: the session moves.
    let d = p.client_seal(b"moved");
    assert_eq!(server_gets(&mut p, new_addr, &d), data);
    let info = p.server.session(p.id).unwrap();
    assert_eq!((info.addr, info.candidate, info.roams), (new_addr, None, 1));
    assert_eq!(server_sends_to(&mut p, b"to new"), Ok(new_addr));
    assert_eq!(p.server.stats().roams, 1);
}

#[test]
fn a_newer_datagram_from_the_confirmed_address_drops_the_candidate() {
    let mut p = Pair::new();
    let mut pt = Vec::new();
    let spoofed: SocketAddr = "203.0.113.9:6000".parse().unwrap();
    // A captured datagram, held back on the path and sent from a spoofed address.
    let captured = p.client_seal(b"captured");
    let now = Instant::from_micros(p.now_us);
    p.server.handle(now, spoofed, &captured, &mut pt);
    assert_eq!(p.server.session(p.id).unwrap().candidate, Some(spoofed));
    let d = p.client_seal(b"genuine");
    p.server.handle(now, client_addr(), &d, &mut pt);
    let info = p.server.session(p.id).unwrap();
    assert_eq!((info.addr, info.candidate), (client_addr(), None));
    // Older captures from the spoofed address cannot confirm it either.
    let later = p.client_seal(b"later");
    p.server.handle(now, spoofed, &later, &mut pt);
    let older = p.client_seal(b"older");
    let newest = p.client_seal(b"newest");
    p.server.handle(now, client_addr(), &newest, &mut pt);
    p.server.handle(now, spoofed, &older, &mut pt);
    let info = p.server.session(p.id).unwrap();
    assert_eq!((info.addr, info.roams), (client_addr(), 0));
}

#[test]
fn idle_sessions_close_with_an_event() {
    let mut p = Pair::new();
    let idle = p.server.config().idle_timeout.as_micros();
    let mut pt = Vec::new();
    let d = p.client_seal(b"x");
    p.now_us += idle / 2;
    assert_eq!(
        p.server
            .handle(Instant::from_micros(p.now_us), client_addr(), &d, &mut pt),
        ServerReceived::Data { id: p.id }
    );
    let last = p.now_us;
    // Woken early by its conservative timer, the server keeps the session.
    while let Some(t) = p.server.poll_timeout() {
        if t >= Instant::from_micros(last + idle) {
            break;
        }
        p.server.handle_timeout(t);
        assert_eq!(p.server.session_count(), 1);
        assert!(p.server.poll_event().is_none());
        if p.server.poll_timeout() == Some(t) {
            break;
        }
    }
    p.server.handle_timeout(Instant::from_micros(last + idle));
    assert_eq!(
        p.server.poll_event(),
        Some(sprout_secure::ServerEvent::Closed { id: p.id })
    );
    assert_eq!(p.server.session_count(), 0);
    let d = p.client_seal(b"too late");
    p.now_us = last + idle;
    assert_eq!(
        server_drops(&mut p, client_addr(), &d),
        DropReason::UnknownSession
    );
}

#[test]
fn pending_and_total_sessions_are_bounded() {
    let server_key = PrivateKey::generate();
    let mut config =
        sprout_secure::ServerConfig::new(server_key, sprout_secure::AllowedClients::Any);
    config.max_pending = 8;
    config.max_sessions = 20;
    config.handshakes_per_s = 10_000;
    config.handshakes_per_s_per_source = 10_000;
    let mut server = sprout_secure::Server::new(config);
    let mut pt = Vec::new();
    let mut buf = Vec::new();
    // 50 clients that never confirm.
    for _ in 0..50 {
        let mut c = client_with(&PrivateKey::generate(), &server, Limits::default(), 0, b"");
        assert!(c.poll_transmit(Instant::from_micros(0), &mut buf));
        assert_eq!(
            server.handle(Instant::from_micros(0), client_addr(), &buf, &mut pt),
            ServerReceived::Control
        );
        assert!(server.poll_transmit(&mut buf).is_some());
        assert!(server.pending_count() <= 8);
    }
    assert_eq!(server.pending_count(), 8);
    // 12 genuine clients that confirm: established (pending ones make room).
    let mut clients = Vec::new();
    for i in 0..12u16 {
        let mut c = client_with(&PrivateKey::generate(), &server, Limits::default(), 0, b"");
        let from = SocketAddr::from(([10, 0, 0, 1], 1000 + i));
        establish(&mut server, &mut c, from, 0);
        clients.push(c);
    }
    assert_eq!(server.session_count(), 12);
    assert!(server.pending_count() <= 8);
    // Fill to the limit: 8 more established, then the next is refused.
    for i in 0..8u16 {
        let mut c = client_with(&PrivateKey::generate(), &server, Limits::default(), 0, b"");
        establish(
            &mut server,
            &mut c,
            SocketAddr::from(([10, 0, 0, 2], 1000 + i)),
            0,
        );
    }
    assert_eq!((server.session_count(), server.pending_count()), (20, 0));
    let mut c = client_with(&PrivateKey::generate(), &server, Limits::default(), 0, b"");
    assert!(c.poll_transmit(Instant::from_micros(0), &mut buf));
    assert_eq!(
        server.handle(Instant::from_micros(0), client_addr(), &buf, &mut pt),
        ServerReceived::Dropped(DropReason::TooManySessions)
    );
}
