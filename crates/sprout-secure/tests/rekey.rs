//! Rekeying: a long exchange with tiny key limits crosses many rekeys without losing or
//! duplicating a datagram, with datagrams reordered on the way; keys past their limits are
//! never used.

use sprout_core::{Duration, Instant};
use std::collections::BTreeMap;

use crate::common::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sprout_secure::{
    ClientReceived, DropReason, Limits, PrivateKey, SealError, SecureStats, ServerEvent,
    ServerReceived,
};

/// Datagrams in flight one way, by arrival time (ties in sending order).
#[derive(Default)]
struct Path {
    flying: BTreeMap<(u64, u64), Vec<u8>>,
    sent: u64,
}

impl Path {
    fn send(&mut self, at_us: u64, d: Vec<u8>) {
        self.flying.insert((at_us, self.sent), d);
        self.sent += 1;
    }
    fn due(&mut self, now_us: u64) -> Vec<Vec<u8>> {
        let later = self.flying.split_off(&(now_us + 1, 0));
        std::mem::replace(&mut self.flying, later)
            .into_values()
            .collect()
    }
}

struct Outcome {
    client: SecureStats,
    server: SecureStats,
    /// How many times each of the client's messages reached the server's application.
    at_server: Vec<u32>,
    /// ... and each of the server's at the client's.
    at_client: Vec<u32>,
    server_rekeys: u64,
}

/// `messages` each way, one per millisecond, each delayed 1 ms plus up to `jitter_us`.
fn exchange(limits: Limits, messages: usize, jitter_us: u64, seed: u64) -> Outcome {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let server_key = PrivateKey::generate();
    let client_key = PrivateKey::generate();
    let mut server = server_with(&server_key, &[&client_key], limits.clone());
    let mut client = client_with(&client_key, &server, limits, 0, b"");
    let mut c2s = Path::default();
    let mut s2c = Path::default();
    let mut at_server = vec![0u32; messages];
    let mut at_client = vec![0u32; messages];
    let mut id = None;
    let mut buf = Vec::new();
    let mut pt = Vec::new();
    let (mut next_c, mut next_s) = (0usize, 0usize);
    let mut now = 0u64;
    let end = (messages as u64 + 200) * 1000;
    while now < end {
        let delay = |rng: &mut ChaCha8Rng| now + 1000 + rng.gen_range(0..=jitter_us);
        if client.is_established() && next_c < messages {
            client
                .seal(
                    Instant::from_micros(now),
                    &(next_c as u64).to_be_bytes(),
                    &mut buf,
                )
                .unwrap();
            c2s.send(delay(&mut rng), buf.clone());
            next_c += 1;
        }
        if let Some(id) = id.filter(|_| next_s < messages) {
            server
                .seal(
                    Instant::from_micros(now),
                    id,
                    &(next_s as u64).to_be_bytes(),
                    &mut buf,
                )
                .unwrap();
            s2c.send(delay(&mut rng), buf.clone());
            next_s += 1;
        }
        while client.poll_transmit(Instant::from_micros(now), &mut buf) {
            c2s.send(delay(&mut rng), buf.clone());
        }
        while server.poll_transmit(&mut buf).is_some() {
            s2c.send(delay(&mut rng), buf.clone());
        }
        now += 1000;
        for d in c2s.due(now) {
            match server.handle(Instant::from_micros(now), client_addr(), &d, &mut pt) {
                ServerReceived::NewSession { id: new, data, .. } => {
                    assert!(id.is_none());
                    id = Some(new);
                    if data {
                        at_server[u64::from_be_bytes(pt[..8].try_into().unwrap()) as usize] += 1;
                    }
                }
                ServerReceived::Data { .. } => {
                    at_server[u64::from_be_bytes(pt[..8].try_into().unwrap()) as usize] += 1;
                }
                ServerReceived::Control => {}
                ServerReceived::Dropped(r) => panic!("server dropped a genuine datagram: {r:?}"),
                ServerReceived::Closed { .. } => panic!("nobody closed the session"),
            }
        }
        for d in s2c.due(now) {
            match client.handle(Instant::from_micros(now), &d, &mut pt) {
                ClientReceived::Data => {
                    at_client[u64::from_be_bytes(pt[..8].try_into().unwrap()) as usize] += 1;
                }
                ClientReceived::Established | ClientReceived::Control => {}
                ClientReceived::Dropped(r) => panic!("client dropped a genuine datagram: {r:?}"),
                ClientReceived::Closed => panic!("nobody closed the session"),
            }
        }
        if client
            .poll_timeout()
            .is_some_and(|t| t <= Instant::from_micros(now))
        {
            client.handle_timeout(Instant::from_micros(now));
        }
        if server
            .poll_timeout()
            .is_some_and(|t| t <= Instant::from_micros(now))
        {
            server.handle_timeout(Instant::from_micros(now));
        }
        assert!(client.error().is_none(), "{:?}", client.error());
        assert!(server.poll_event().is_none(), "the session must stay up");
    }
    let server_rekeys = server.session(id.unwrap()).unwrap().rekeys;
    Outcome {
        client: client.stats(),
        server: server.stats(),
        at_server,
        at_client,
        server_rekeys,
    }
}

fn assert_exactly_once(o: &Outcome) {
    assert!(
        o.at_server.iter().all(|&n| n == 1),
        "client to server: {:?}",
        o.at_server.iter().position(|&n| n != 1)
    );
    assert!(
        o.at_client.iter().all(|&n| n == 1),
        "server to client: {:?}",
        o.at_client.iter().position(|&n| n != 1)
    );
    assert_eq!(o.client.dropped_total(), 0);
    assert_eq!(o.server.dropped_total(), 0);
}

#[test]
fn rekey_every_100_messages_loses_and_duplicates_nothing() {
    let limits = Limits {
        rekey_after_messages: 100,
        reject_after_messages: 1_000,
        ..Limits::default()
    };
    let o = exchange(limits, 20_000, 3_000, 7);
    assert_exactly_once(&o);
    // About one rekey per 100 messages.
    assert!(o.client.rekeys >= 150, "{} rekeys", o.client.rekeys);
    assert_eq!(o.server.rekeys, o.server_rekeys);
    assert!(o.server.rekeys + 1 >= o.client.rekeys && o.server.rekeys <= o.client.rekeys);
    assert_eq!(o.client.handshakes, o.client.rekeys + 1);
}

#[test]
fn rekey_every_50_ms_loses_and_duplicates_nothing() {
    let limits = Limits {
        rekey_after: Duration::from_micros(50_000),
        reject_after: Duration::from_micros(120_000),
        ..Limits::default()
    };
    let o = exchange(limits, 10_000, 5_000, 8);
    assert_exactly_once(&o);
    // 10 s of exchange, a rekey every 50 ms and a round trip or so.
    assert!(o.client.rekeys >= 150, "{} rekeys", o.client.rekeys);
}

#[test]
fn a_lost_rekey_answer_is_repeated_and_the_session_goes_on() {
    let limits = Limits {
        rekey_after_messages: 10,
        reject_after_messages: 1_000,
        ..Limits::default()
    };
    let mut p = Pair::with_limits(limits.clone());
    let mut pt = Vec::new();
    let mut buf = Vec::new();
    for _ in 0..10 {
        let d = p.client_seal(b"x");
        assert_eq!(
            p.server
                .handle(Instant::from_micros(p.now_us), client_addr(), &d, &mut pt),
            ServerReceived::Data { id: p.id }
        );
    }
    // The tenth seal started a rekey.
    assert!(p
        .client
        .poll_transmit(Instant::from_micros(p.now_us), &mut buf));
    let init = buf.clone();
    assert_eq!(
        p.server.handle(
            Instant::from_micros(p.now_us),
            client_addr(),
            &init,
            &mut pt
        ),
        ServerReceived::Control
    );
    // The answer is lost. The client repeats the same initiation after the retry interval.
    p.server.poll_transmit(&mut buf).unwrap();
    let lost = buf.clone();
    p.now_us += limits.handshake_retry.as_micros();
    p.client.handle_timeout(Instant::from_micros(p.now_us));
    assert!(p
        .client
        .poll_transmit(Instant::from_micros(p.now_us), &mut buf));
    assert_eq!(buf, init);
    assert_eq!(
        p.server
            .handle(Instant::from_micros(p.now_us), client_addr(), &buf, &mut pt),
        ServerReceived::Control
    );
    p.server.poll_transmit(&mut buf).unwrap();
    assert_eq!(buf, lost, "the same answer, the same keys");
    assert_eq!(
        p.client
            .handle(Instant::from_micros(p.now_us), &buf, &mut pt),
        ClientReceived::Control
    );
    // Until the server hears the new keys it seals with the old, which the client still opens.
    let old = p.server_seal(b"old keys");
    let reordered = p.server_seal(b"old keys, late");
    assert_eq!(
        p.client
            .handle(Instant::from_micros(p.now_us), &old, &mut pt),
        ClientReceived::Data
    );
    assert!(
        p.client
            .poll_transmit(Instant::from_micros(p.now_us), &mut buf),
        "a keepalive under the new keys"
    );
    assert_eq!(
        p.server
            .handle(Instant::from_micros(p.now_us), client_addr(), &buf, &mut pt),
        ServerReceived::Control
    );
    assert_eq!(p.server.session(p.id).unwrap().rekeys, 1);
    let new = p.server_seal(b"new keys");
    assert_ne!(new[3], old[3], "a new key epoch");
    assert_eq!(
        p.client
            .handle(Instant::from_micros(p.now_us), &new, &mut pt),
        ClientReceived::Data
    );
    // An old-epoch datagram that was reordered behind the rekey still opens, once.
    assert_eq!(
        p.client
            .handle(Instant::from_micros(p.now_us), &reordered, &mut pt),
        ClientReceived::Data
    );
    assert_eq!(pt, b"old keys, late");
    assert_eq!(
        p.client
            .handle(Instant::from_micros(p.now_us), &reordered, &mut pt),
        ClientReceived::Dropped(DropReason::Replayed)
    );
    // The rekey initiation repeated once more (late): the same answer again, no new keys.
    assert_eq!(
        p.server
            .handle(Instant::from_micros(p.now_us), other_addr(), &init, &mut pt),
        ServerReceived::Control
    );
    assert_eq!(p.server.poll_transmit(&mut buf), Some(other_addr()));
    assert_eq!(buf, lost);
    assert_eq!(
        p.client
            .handle(Instant::from_micros(p.now_us), &buf, &mut pt),
        ClientReceived::Dropped(DropReason::UnexpectedResponse)
    );
    p.assert_both_ways_open();
}

#[test]
fn an_older_rekey_initiation_replayed_cannot_replace_keys() {
    let limits = Limits {
        rekey_after_messages: 5,
        ..Limits::default()
    };
    let mut p = Pair::with_limits(limits);
    let mut pt = Vec::new();
    let mut buf = Vec::new();
    let mut inits = Vec::new();
    // Two rekeys; keep each initiation.
    for _ in 0..2 {
        for _ in 0..5 {
            let d = p.client_seal(b"x");
            p.server
                .handle(Instant::from_micros(p.now_us), client_addr(), &d, &mut pt);
        }
        assert!(p
            .client
            .poll_transmit(Instant::from_micros(p.now_us), &mut buf));
        inits.push(buf.clone());
        assert_eq!(
            p.server
                .handle(Instant::from_micros(p.now_us), client_addr(), &buf, &mut pt),
            ServerReceived::Control
        );
        p.server.poll_transmit(&mut buf).unwrap();
        assert_eq!(
            p.client
                .handle(Instant::from_micros(p.now_us), &buf, &mut pt),
            ClientReceived::Control
        );
        assert!(p
            .client
            .poll_transmit(Instant::from_micros(p.now_us), &mut buf));
        assert_eq!(
            p.server
                .handle(Instant::from_micros(p.now_us), client_addr(), &buf, &mut pt),
            ServerReceived::Control
        );
    }
    assert_eq!(p.server.session(p.id).unwrap().rekeys, 2);
    // The first rekey initiation, replayed: its handshake number is old.
    assert_eq!(
        p.server.handle(
            Instant::from_micros(p.now_us),
            other_addr(),
            &inits[0],
            &mut pt
        ),
        ServerReceived::Dropped(DropReason::Replayed)
    );
    assert!(p.server.poll_transmit(&mut buf).is_none());
    p.assert_both_ways_open();
    assert_eq!(p.server.session(p.id).unwrap().rekeys, 2);
}

#[test]
fn keys_past_their_limits_are_never_used() {
    // A client that never rekeys in time (rekey later than reject): its keys expire.
    let limits = Limits {
        rekey_after: Duration::from_micros(10_000_000),
        reject_after: Duration::from_micros(5_000_000),
        reject_after_messages: 50,
        ..Limits::default()
    };
    let mut p = Pair::with_limits(limits.clone());
    let mut pt = Vec::new();
    let mut buf = Vec::new();
    // By count: the 50th seal is the last (the keepalive was the first).
    for _ in 0..49 {
        p.client_seal(b"x");
    }
    assert_eq!(
        p.client
            .seal(Instant::from_micros(p.now_us), b"y", &mut buf),
        Err(SealError::KeysExpired)
    );
    // By time: the server refuses to seal or open with keys 5 s old, and closes the session.
    let d = p.server_seal(b"before");
    p.now_us += limits.reject_after.as_micros();
    assert_eq!(
        p.server
            .seal(Instant::from_micros(p.now_us), p.id, b"z", &mut buf),
        Err(SealError::KeysExpired)
    );
    assert_eq!(
        p.client.handle(Instant::from_micros(p.now_us), &d, &mut pt),
        ClientReceived::Dropped(DropReason::KeysExpired)
    );
    p.server.handle_timeout(Instant::from_micros(p.now_us));
    assert_eq!(
        p.server.poll_event(),
        Some(ServerEvent::Closed { id: p.id })
    );
}
