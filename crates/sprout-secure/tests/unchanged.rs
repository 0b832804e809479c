//! Property: a datagram that fails any check changes nothing at the server or the client but a
//! drop counter (the session's address, counters, keys and replay window are as before).

use sprout_core::Instant;
use std::net::SocketAddr;

use crate::common::*;
use proptest::prelude::*;
use sprout_secure::{ClientReceived, SecureStats, ServerReceived};

/// Everything but the drop counters.
fn without_drops(mut s: SecureStats) -> SecureStats {
    s.dropped = Default::default();
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn a_mutated_genuine_datagram_changes_nothing_but_a_counter(
        which in 0usize..3,
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
        do_cut in any::<bool>(),
        port in any::<u16>(),
    ) {
        let mut p = Pair::new();
        // Traffic first, so the replay windows are not empty.
        let mut pt = Vec::new();
        for i in 0..5u8 {
            let d = p.client_seal(&[i; 100]);
            p.server.handle(Instant::from_micros(p.now_us), client_addr(), &d, &mut pt);
            let d = p.server_seal(&[i; 100]);
            p.client.handle(Instant::from_micros(p.now_us), &d, &mut pt);
        }
        let to_server = which != 1;
        let mut d = match which {
            0 => p.client_seal(b"genuine, to the server"),
            1 => p.server_seal(b"genuine, to the client"),
            _ => {
                // A fresh client's initiation.
                let key = sprout_secure::PrivateKey::generate();
                let mut c = client_with(&key, &p.server, Default::default(), p.now_us, b"");
                let mut d = Vec::new();
                prop_assert!(c.poll_transmit(Instant::from_micros(p.now_us), &mut d));
                d
            }
        };
        let original = d.clone();
        for (at, byte) in &edits {
            let i = at.index(d.len());
            d[i] = *byte;
        }
        if do_cut {
            let n = cut.index(d.len());
            d.truncate(n);
        }
        prop_assume!(d != original);
        let from = SocketAddr::from(([203, 0, 113, 5], port));
        let (server_before, client_before) = (p.server.stats(), p.client.stats());
        let info_before = p.server.session(p.id);
        if to_server {
            let r = p.server.handle(Instant::from_micros(p.now_us), from, &d, &mut pt);
            prop_assert!(matches!(r, ServerReceived::Dropped(_)), "{:?}", r);
            prop_assert_eq!(p.server.stats().dropped_total(), server_before.dropped_total() + 1);
        } else {
            let r = p.client.handle(Instant::from_micros(p.now_us), &d, &mut pt);
            prop_assert!(matches!(r, ClientReceived::Dropped(_)), "{:?}", r);
            prop_assert_eq!(p.client.stats().dropped_total(), client_before.dropped_total() + 1);
        }
        prop_assert!(pt.is_empty());
        prop_assert_eq!(without_drops(p.server.stats()), without_drops(server_before));
        prop_assert_eq!(without_drops(p.client.stats()), without_drops(client_before));
        prop_assert_eq!(p.server.session(p.id), info_before);
        prop_assert_eq!(p.server.pending_count(), 0);
        prop_assert!(p.server.poll_transmit(&mut pt).is_none());
        // The genuine datagram, unmutated, still opens: its counter was not used up.
        if which == 0 {
            prop_assert_eq!(
                p.server.handle(Instant::from_micros(p.now_us), client_addr(), &original, &mut pt),
                ServerReceived::Data { id: p.id }
            );
        } else if which == 1 {
            prop_assert_eq!(p.client.handle(Instant::from_micros(p.now_us), &original, &mut pt), ClientReceived::Data);
        }
        p.assert_both_ways_open();
    }
}
