//! Floods of bogus handshakes while a session exchanges data: the session's datagrams all
//! still open, the handshakes processed (those that reach Diffie-Hellman) stay within the rate
//! limit, and pending sessions stay within their bound.

use sprout_core::Instant;
use std::net::{IpAddr, SocketAddr};

use crate::common::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sprout_secure::handshake::Mac1;
use sprout_secure::wire::{MAX_INITIATION_BYTES, MIN_INITIATION_BYTES};
use sprout_secure::{
    AllowedClients, DropReason, Limits, PrivateKey, Server, ServerConfig, ServerReceived,
};

const FLOOD: usize = 100_000;
/// Simulated time between two flood datagrams: 10^5 of them in 1 s.
const GAP_US: u64 = 10;

fn random_source(rng: &mut ChaCha8Rng) -> SocketAddr {
    SocketAddr::new(IpAddr::from(rng.gen::<[u8; 4]>()), rng.gen())
}

/// Handshakes that reached Diffie-Hellman (answered or refused after it).
fn processed(server: &Server) -> u64 {
    let s = server.stats();
    s.dropped(DropReason::HandshakeFailed)
        + s.dropped(DropReason::NotAllowed)
        + s.dropped(DropReason::Malformed)
        + s.dropped(DropReason::TooManySessions)
}

/// Drives the flood `bogus(i)` from `source(i)`, one genuine datagram each way every 100 flood
/// datagrams, and checks every genuine one opens.
fn flood_during_session(
    p: &mut Pair,
    rng: &mut ChaCha8Rng,
    mut bogus: impl FnMut(usize, &mut ChaCha8Rng) -> (SocketAddr, Vec<u8>),
) -> u64 {
    let mut pt = Vec::new();
    let mut buf = Vec::new();
    let mut genuine = 0u64;
    let start = p.now_us;
    for i in 0..FLOOD {
        p.now_us = start + i as u64 * GAP_US;
        let (from, d) = bogus(i, rng);
        let r = p
            .server
            .handle(Instant::from_micros(p.now_us), from, &d, &mut pt);
        assert!(
            matches!(r, ServerReceived::Dropped(_) | ServerReceived::Control),
            "{r:?}"
        );
        while p.server.poll_transmit(&mut buf).is_some() {}
        if i % 100 == 0 {
            p.exchange(&(i as u64).to_be_bytes());
            genuine += 1;
        }
    }
    assert_eq!(p.server.session(p.id).unwrap().addr, client_addr());
    assert_eq!(p.server.session_count(), 1);
    genuine
}

#[test]
fn a_flood_of_random_and_mac_valid_handshakes_stays_within_the_rate_limit() {
    let mut p = Pair::new();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mac = Mac1::new(&p.server.public_key());
    // Genuine initiations from clients whose keys are not allowed (a pool, sent round).
    let pool = initiations_from_new_keys(&p.server, 200);
    let genuine = flood_during_session(&mut p, &mut rng, |i, rng| {
        let len = rng.gen_range(MIN_INITIATION_BYTES..=MAX_INITIATION_BYTES);
        let mut d = vec![0u8; len];
        rng.fill(&mut d[..]);
        d[..4].copy_from_slice(&[0x53, 2, 1, 0]);
        match i % 3 {
            // Random bytes shaped like an initiation: refused by mac1.
            0 => {}
            // Random bytes with a valid mac1: refused by Noise, within the rate limit.
            1 => {
                let tag = mac.compute(&d[..len - 16]);
                d[len - 16..].copy_from_slice(&tag);
            }
            // A genuine initiation from a key that is not allowed.
            _ => d = pool[i % pool.len()].clone(),
        }
        (random_source(rng), d)
    });
    assert_eq!(genuine, (FLOOD / 100) as u64);
    let s = p.server.stats();
    let seconds = (FLOOD as u64 * GAP_US).div_ceil(1_000_000);
    let limit = u64::from(p.server.config().handshakes_per_s) * (1 + seconds);
    let done = processed(&p.server);
    println!(
        "flood of {FLOOD}: bad_mac {}, rate_limited {}, processed {done} (limit {limit}), session datagrams {genuine} each way all opened",
        s.dropped(DropReason::BadMac),
        s.dropped(DropReason::RateLimited)
    );
    assert!(s.dropped(DropReason::BadMac) >= (FLOOD / 3) as u64);
    assert!(done <= limit, "{done} handshakes processed, limit {limit}");
    assert!(done > 0);
    assert_eq!(
        done + s.dropped(DropReason::RateLimited) + s.dropped(DropReason::BadMac),
        FLOOD as u64
    );
    assert_eq!(p.server.pending_count(), 0);
    p.assert_both_ways_open();
}

#[test]
fn a_flood_from_one_source_is_held_to_the_per_source_limit() {
    let mut p = Pair::new();
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let mac = Mac1::new(&p.server.public_key());
    let attacker = other_addr();
    flood_during_session(&mut p, &mut rng, |_, rng| {
        let len = MIN_INITIATION_BYTES;
        let mut d = vec![0u8; len];
        rng.fill(&mut d[..]);
        d[..4].copy_from_slice(&[0x53, 2, 1, 0]);
        let tag = mac.compute(&d[..len - 16]);
        d[len - 16..].copy_from_slice(&tag);
        (attacker, d)
    });
    let limit = u64::from(p.server.config().handshakes_per_s_per_source) * 2;
    let done = processed(&p.server);
    assert!(
        done <= limit && done > 0,
        "{done} processed, per-source limit {limit}"
    );
    // A genuine client from another address can still start a session.
    let mut c = client_with(&p.client_key, &p.server, Limits::default(), p.now_us, b"");
    establish(
        &mut p.server,
        &mut c,
        "192.0.2.200:1".parse().unwrap(),
        p.now_us,
    );
    assert_eq!(p.server.session_count(), 2);
}

#[test]
fn a_flood_of_valid_initiations_keeps_pending_sessions_bounded() {
    let server_key = PrivateKey::generate();
    let client_key = PrivateKey::generate();
    let mut config = ServerConfig::new(server_key, AllowedClients::Any);
    config.max_pending = 32;
    let server = Server::new(config);
    let mut client = client_with(&client_key, &server, Limits::default(), 0, b"");
    let mut server = server;
    let id = establish(&mut server, &mut client, client_addr(), 0);
    let mut p = Pair {
        server_key: PrivateKey::generate(),
        client_key,
        server,
        client,
        id,
        now_us: 0,
    };
    // Valid initiations from 1000 keys nobody will confirm (any key may open a session here).
    let pool = initiations_from_new_keys(&p.server, 1000);
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut max_pending = 0;
    let mut pt = Vec::new();
    for (i, d) in pool.iter().cycle().take(FLOOD).enumerate() {
        p.now_us = i as u64 * GAP_US;
        p.server.handle(
            Instant::from_micros(p.now_us),
            random_source(&mut rng),
            d,
            &mut pt,
        );
        max_pending = max_pending.max(p.server.pending_count());
        if i % 1000 == 0 {
            p.assert_both_ways_open();
        }
    }
    while p.server.poll_transmit(&mut pt).is_some() {}
    assert!(max_pending <= 32, "{max_pending} pending");
    assert_eq!(max_pending, 32);
    let s = p.server.stats();
    assert!(s.dropped(DropReason::RateLimited) > 0);
    assert_eq!(p.server.session_count(), 1);
    p.assert_both_ways_open();
}
