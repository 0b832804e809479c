//! Issue 36, point 3: the close message, both ways, in memory: authenticated by the session's
//! keys, 24 bytes; a close for another session, with a flipped bit, or from other keys
//! changes nothing but a counter.

use crate::common::*;
use sprout_core::Instant;
use sprout_secure::wire::{CLOSE_BYTES, CLOSE_COPIES};
use sprout_secure::{ClientReceived, DropReason, SecureError, ServerReceived};

#[test]
fn a_client_that_quits_ends_its_session_at_the_server() {
    let mut p = Pair::new();
    let mut other = Pair::new();
    let now = Instant::from_micros(2_000);
    let (mut close, mut pt) = (Vec::new(), Vec::new());
    assert!(p.client.close(now, &mut close));
    assert_eq!(close.len(), CLOSE_BYTES);
    // Nothing more from a client that quit.
    assert!(!p.client.poll_transmit(now, &mut pt));
    // Another session's server, a flipped bit, a cut copy: nothing changes.
    let r = other.server.handle(now, client_addr(), &close, &mut pt);
    assert!(matches!(r, ServerReceived::Dropped(_)), "{r:?}");
    assert_eq!(other.server.session_count(), 1);
    let mut forged = close.clone();
    forged[CLOSE_BYTES - 1] ^= 1;
    let r = p.server.handle(now, client_addr(), &forged, &mut pt);
    assert_eq!(r, ServerReceived::Dropped(DropReason::Forged));
    let r = p
        .server
        .handle(now, client_addr(), &close[..CLOSE_BYTES - 1], &mut pt);
    assert_eq!(r, ServerReceived::Dropped(DropReason::Truncated));
    assert_eq!(p.server.session_count(), 1);
    let r = p.server.handle(now, client_addr(), &close, &mut pt);
    assert_eq!(r, ServerReceived::Closed { id: p.id });
    assert_eq!(p.server.session_count(), 0);
    // Its copies are recognized: nothing to do, no drop counted.
    let dropped = p.server.stats().dropped_total();
    for _ in 1..CLOSE_COPIES {
        let r = p.server.handle(now, client_addr(), &close, &mut pt);
        assert_eq!(r, ServerReceived::Control);
    }
    assert_eq!(p.server.stats().dropped_total(), dropped);
    // Anything else for the session is for an unknown session.
    let r = p.server.handle(now, client_addr(), &forged, &mut pt);
    assert_eq!(r, ServerReceived::Dropped(DropReason::UnknownSession));
}

#[test]
fn a_server_that_ends_a_session_tells_its_client() {
    let mut p = Pair::new();
    let mut other = Pair::new();
    let now = Instant::from_micros(2_000);
    let (mut d, mut pt) = (Vec::new(), Vec::new());
    p.server.close_at(now, p.id);
    let mut copies = Vec::new();
    while let Some(to) = p.server.poll_transmit(&mut d) {
        assert_eq!(to, client_addr());
        copies.push(d.clone());
    }
    assert_eq!(copies.len(), CLOSE_COPIES);
    assert!(copies
        .iter()
        .all(|c| c == &copies[0] && c.len() == CLOSE_BYTES));
    // Not for another client.
    let r = other.client.handle(now, &copies[0], &mut pt);
    assert!(matches!(r, ClientReceived::Dropped(_)), "{r:?}");
    assert!(other.client.error().is_none());
    assert_eq!(
        p.client.handle(now, &copies[0], &mut pt),
        ClientReceived::Closed
    );
    assert_eq!(p.client.error(), Some(&SecureError::ClosedByServer));
    assert!(p.client.closed_by_server());
    // Its copies are recognized: nothing to do, no drop counted (a saturating client's
    // summary once showed them as drops for an unknown session).
    let dropped = p.client.stats().dropped_total();
    for c in &copies[1..] {
        assert_eq!(p.client.handle(now, c, &mut pt), ClientReceived::Control);
    }
    assert_eq!(p.client.stats().dropped_total(), dropped);
    // Anything else is still a drop.
    let mut forged = copies[0].clone();
    forged[CLOSE_BYTES - 1] ^= 1;
    let r = p.client.handle(now, &forged, &mut pt);
    assert!(matches!(r, ClientReceived::Dropped(_)), "{r:?}");
    assert!(p.client.stats().dropped_total() > dropped);
}
