//! Issue 22, finding 4, over UDP on loopback: one source address cannot take every session
//! of a server that allows any client, and a client the server cannot take is told, in a way
//! it can believe, that the server is full (not sent to check its keys): by the end of its
//! handshake time (it tries again meanwhile, in case a slot frees up).
//!
//! The 127.0.0.0/8 addresses are all local on Linux, so each of 127.0.0.1, .2, ... is another
//! source here. Only the API of the code as it was before the fix is used (errors are checked
//! by their text), so that these tests show the finding on that code too.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::common::*;
use sprout_core::Config;
use sprout_net::secure::{AllowedClients, ClientConfig, Limits, PrivateKey, PublicKey};
use sprout_net::{Endpoint, Server};

/// A client of the server at `server` (key `server_key`) from `ip` (any port), with a fresh key
/// and a handshake that gives up after `give_up`.
fn client_from(
    ip: [u8; 4],
    server: SocketAddr,
    server_key: PublicKey,
    give_up: Duration,
) -> Endpoint {
    let keys = ClientConfig {
        private_key: PrivateKey::generate(),
        server_key,
        limits: Limits {
            handshake_timeout: give_up.into(),
            ..Limits::default()
        },
    };
    Endpoint::connect(
        SocketAddr::from((ip, 0)),
        server,
        keys,
        Config::default(),
        b"",
    )
    .unwrap()
}

/// A server on 127.0.0.1 that allows any client and holds at most `max_sessions`.
fn server_of(max_sessions: usize) -> Server {
    let (mut o, _) = options(AllowedClients::Any);
    o.max_sessions = max_sessions;
    Server::bind(any_port(), o, |_, _, _| Some(Config::default())).unwrap()
}

/// What became of `e`'s handshake within `within`: `Ok(())` established, or the error's text.
fn outcome(e: &Endpoint, within: Duration) -> Result<(), String> {
    match e.wait_established(within) {
        Ok(true) => Ok(()),
        Ok(false) => Err(format!("no answer within {within:?}")),
        Err(err) => Err(err.to_string()),
    }
}

#[test]
fn one_address_cannot_hold_every_session() {
    // The finding: one address held all 1,023 free slots and every other client was refused.
    // Here: 40 slots, 40 clients with fresh keys from 127.0.0.1.
    let server = server_of(40);
    let (addr, key) = (server.local_addr(), server.public_key());
    let attackers: Vec<Endpoint> = (0..40)
        .map(|_| client_from([127, 0, 0, 1], addr, key, Duration::from_secs(3)))
        .collect();
    let outcomes: Vec<Result<(), String>> = attackers
        .iter()
        .map(|e| outcome(e, Duration::from_secs(5)))
        .collect();
    let held = outcomes.iter().filter(|o| o.is_ok()).count();
    // A client from another address still gets in, at once.
    let started = Instant::now();
    let legit = client_from([127, 0, 0, 2], addr, key, Duration::from_secs(3));
    let legit_outcome = outcome(&legit, Duration::from_secs(5));
    println!(
        "one address: {held} of 40 sessions; first refusal {:?}; another address: {legit_outcome:?} after {:?}",
        outcomes.iter().find_map(|o| o.as_ref().err()),
        started.elapsed()
    );
    assert_eq!(legit_outcome, Ok(()), "another address is locked out");
    assert_eq!(held, 16, "the per-source cap");
    for o in &outcomes {
        if let Err(e) = o {
            assert!(
                e.contains("this address already holds 16 sessions") && e.contains("try later"),
                "{e}"
            );
        }
    }
    assert!(server.stats().secure.refusals >= 24);
}

#[test]
fn a_full_server_tells_the_client_so_at_once() {
    let server = server_of(3);
    let (addr, key) = (server.local_addr(), server.public_key());
    let holders: Vec<Endpoint> = (1..=3)
        .map(|i| client_from([127, 0, 0, i], addr, key, Duration::from_secs(10)))
        .collect();
    for h in &holders {
        assert_eq!(outcome(h, Duration::from_secs(5)), Ok(()));
    }
    let started = Instant::now();
    let late = client_from([127, 0, 0, 4], addr, key, Duration::from_secs(2));
    let got = outcome(&late, Duration::from_secs(5));
    let took = started.elapsed();
    println!("the fourth client: {got:?} after {took:?}");
    let e = got.expect_err("a fourth session on a server of 3");
    assert!(e.contains("server full (3 sessions) - try later"), "{e}");
    assert!(!e.contains("key"), "points at the keys: {e}");
    assert!(took < Duration::from_millis(3500), "told after {took:?}");
    assert_eq!(server.stats().sessions_open, 3);
    // The holders are untouched.
    assert!(holders.iter().all(|h| h.is_established()));
}
