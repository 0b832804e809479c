//! Issue 36, point 3: a path that delivers a client's initiations but loses the server's
//! answers leaves half-open (pending) sessions at the server. They must not hold the key's
//! slots against its owner: with 8 of them (the per-key cap) from such a path, the owner still
//! connects from a path that works.
//!
//! Only the API of the code as it was before the fix is used, so that this test shows the
//! finding on that code too.

use std::net::SocketAddr;

use crate::common::*;
use sprout_core::Instant;
use sprout_secure::{AllowedClients, ClientReceived, Limits, PrivateKey, Server, ServerConfig};
use sprout_secure::{ServerReceived, SessionId};

/// The owner's 8 initiations from `lossy` reach the server; every answer is lost.
fn half_open(server: &mut Server, key: &PrivateKey, lossy: SocketAddr, now_us: u64) {
    let (mut buf, mut pt) = (Vec::new(), Vec::new());
    let now = Instant::from_micros(now_us);
    for _ in 0..8 {
        let mut c = client_with(key, server, Limits::default(), now_us, b"");
        assert!(c.poll_transmit(now, &mut buf));
        assert_eq!(
            server.handle(now, lossy, &buf, &mut pt),
            ServerReceived::Control
        );
        // The answer is lost on the way back.
        while server.poll_transmit(&mut buf).is_some() {}
    }
}

/// The owner's handshake over a path that works: the session id once established, or the
/// client's error.
fn connect(
    server: &mut Server,
    key: &PrivateKey,
    from: SocketAddr,
    now_us: u64,
) -> Result<SessionId, String> {
    let (mut buf, mut pt) = (Vec::new(), Vec::new());
    let now = Instant::from_micros(now_us);
    let limits = Limits {
        handshake_timeout: sprout_core::Duration::from_millis(1),
        ..Limits::default()
    };
    let mut c = client_with(key, server, limits, now_us, b"");
    for step in 0..4u64 {
        let t = now + sprout_core::Duration::from_micros(step * 1_000);
        c.handle_timeout(t);
        while c.poll_transmit(t, &mut buf) {
            if let ServerReceived::NewSession { id, .. } = server.handle(t, from, &buf, &mut pt) {
                return Ok(id);
            }
        }
        while let Some(to) = server.poll_transmit(&mut buf) {
            if to == from && c.handle(t, &buf, &mut pt) == ClientReceived::Established {
                assert!(c.poll_transmit(t, &mut buf), "the keepalive");
                if let ServerReceived::NewSession { id, .. } = server.handle(t, from, &buf, &mut pt)
                {
                    return Ok(id);
                }
            }
        }
        if let Some(e) = c.error() {
            return Err(e.to_string());
        }
    }
    Err("no session".into())
}

#[test]
fn the_owner_connects_while_eight_half_open_sessions_of_its_key_exist() {
    let mut server = Server::new(ServerConfig::new(
        PrivateKey::generate(),
        AllowedClients::Any,
    ));
    assert_eq!(server.config().max_sessions_per_key, 8);
    let owner = PrivateKey::generate();
    half_open(&mut server, &owner, "203.0.113.9:4000".parse().unwrap(), 0);
    assert_eq!(server.pending_count(), 8, "eight half-open sessions");
    let got = connect(
        &mut server,
        &owner,
        "192.0.2.30:5000".parse().unwrap(),
        1_000,
    );
    println!("the owner with 8 half-open sessions of its key: {got:?}");
    assert!(got.is_ok(), "the owner is locked out: {got:?}");
    assert_eq!(server.session_count(), 1);
    // Established sessions keep their slots: 7 more of the owner's fill the cap, a 9th is
    // refused.
    for i in 0..7u64 {
        let from = SocketAddr::from(([192, 0, 2, 40 + i as u8], 5000));
        assert!(
            connect(&mut server, &owner, from, 2_000 + i * 10_000).is_ok(),
            "session {i}"
        );
    }
    let ninth = connect(
        &mut server,
        &owner,
        "192.0.2.99:5000".parse().unwrap(),
        200_000,
    );
    let e = ninth.expect_err("a ninth established session of one key");
    assert!(e.contains("8 sessions"), "{e}");
}
