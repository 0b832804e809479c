//! A session is established and carries datagrams both ways.

mod common;

use common::*;
use sprout_secure::{ClientReceived, ServerReceived, OVERHEAD_BYTES};

#[test]
fn handshake_then_data_both_ways() {
    let mut p = Pair::new();
    assert_eq!(p.server.take_greeting(p.id), b"hello");
    assert_eq!(p.server.take_greeting(p.id), b"");
    assert!(p.client.is_established());
    assert_eq!(p.server.session_count(), 1);
    let mut pt = Vec::new();
    for i in 1..=100u32 {
        let msg = vec![i as u8; i as usize * 13];
        let d = p.client_seal(&msg);
        assert_eq!(d.len(), msg.len() + OVERHEAD_BYTES);
        assert_eq!(
            p.server.handle(p.now_us, client_addr(), &d, &mut pt),
            ServerReceived::Data { id: p.id }
        );
        assert_eq!(pt, msg);
        let d = p.server_seal(&msg);
        assert_eq!(p.client.handle(p.now_us, &d, &mut pt), ClientReceived::Data);
        assert_eq!(pt, msg);
    }
    let info = p.server.session(p.id).unwrap();
    assert_eq!(info.peer, p.client_key.public_key());
    assert_eq!((info.sealed, info.opened), (100, 101));
    assert_eq!(p.server.stats().dropped_total(), 0);
    assert_eq!(p.client.stats().dropped_total(), 0);
}
