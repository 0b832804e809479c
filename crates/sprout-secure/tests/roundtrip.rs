//! A session is established and carries datagrams both ways.

use crate::common::*;
#[test]
fn handshake_then_data_both_ways() {
    let mut p = Pair::new();
    assert_eq!(p.server.take_greeting(p.id), b"hello");
    assert_eq!(p.server.take_greeting(p.id), b"");
    assert!(p.client.is_established());
    assert_eq!(p.server.session_count(), 1);
    for i in 1..=100u32 {
        p.exchange(&vec![i as u8; i as usize * 13]);
    }
    let info = p.server.session(p.id).unwrap();
    assert_eq!(info.peer, p.client_key.public_key());
    assert_eq!((info.sealed, info.opened), (100, 101));
    assert_eq!(p.server.stats().dropped_total(), 0);
    assert_eq!(p.client.stats().dropped_total(), 0);
}
