//! Roaming: a client that changes its source port mid-transfer keeps its session; within 1 s
//! the server sends to the new address and data flows both ways again.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use sprout_net::message::{Data, Message};
use sprout_net::realtime_us;

/// Sequence numbers of the DATA messages waiting in `try_recv`.
fn drain(try_recv: impl Fn() -> Option<Vec<u8>>) -> Vec<u64> {
    let mut out = Vec::new();
    while let Some(d) = try_recv() {
        if let Ok(Message::Data(m)) = Message::decode(&d) {
            out.push(m.seq);
        }
    }
    out
}

/// Sequence numbers of the DATA messages in what `recv` gets in `within`.
fn seqs(recv: impl Fn(Duration) -> Option<Vec<u8>>, within: Duration) -> Vec<u64> {
    let end = Instant::now() + within;
    let mut out = Vec::new();
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        if let Some(d) = recv(left.min(Duration::from_millis(50))) {
            if let Ok(Message::Data(m)) = Message::decode(&d) {
                out.push(m.seq);
            }
        }
    }
    out
}

#[test]
fn a_client_that_changes_its_port_keeps_its_session() {
    let (server, client, session) = pair();
    let (client, session) = (Arc::new(client), Arc::new(session));
    let old = client.local_addr();
    assert_eq!(session.peer_addr(), old);

    // Paced streams both ways: a 200-byte DATA message every 10 ms, numbered.
    let stop = Arc::new(AtomicBool::new(false));
    let next_seq = Arc::new(AtomicU64::new(0));
    let pacer = {
        let (c, s, stop, next_seq) = (
            client.clone(),
            session.clone(),
            stop.clone(),
            next_seq.clone(),
        );
        std::thread::spawn(move || {
            let mut seq = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let m = Data {
                    seq,
                    sent_us: realtime_us(),
                };
                c.send(m.encode(200));
                s.send(m.encode(200));
                seq += 1;
                next_seq.store(seq, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(10));
            }
            seq
        })
    };
    let before_up = seqs(|t| session.recv_timeout(t), Duration::from_secs(1));
    let before_down = drain(|| client.try_recv());
    assert!(
        before_up.len() > 50,
        "{} messages before the move",
        before_up.len()
    );

    // The mobile changes network: a new socket, a new port.
    let moved_at = Instant::now();
    // Messages from this one on are sent after the move.
    let first_after = next_seq.load(Ordering::Relaxed) + 1;
    let new = client.rebind(any_port()).unwrap();
    assert_ne!(new, old);
    assert_eq!(client.local_addr(), new);
    let (mut up_after, mut down_after) = (Vec::new(), Vec::new());
    let mut followed = None;
    while moved_at.elapsed() < Duration::from_secs(2) {
        up_after.extend(seqs(|t| session.recv_timeout(t), Duration::from_millis(20)));
        down_after.extend(drain(|| client.try_recv()));
        let down_since_move = down_after.iter().any(|&q| q >= first_after);
        if followed.is_none() && session.peer_addr() == new && down_since_move {
            followed = Some(moved_at.elapsed());
        }
    }
    stop.store(true, Ordering::Relaxed);
    let sent = pacer.join().unwrap();
    let followed = followed.unwrap_or_else(|| {
        panic!(
            "the server never followed the client with data: session at {}, {} up / {} down after; session {:?}\nclient {:?}\nserver {:?}",
            session.peer_addr(),
            up_after.len(),
            down_after.len(),
            session.stats(),
            client.stats(),
            server.stats()
        )
    });
    println!(
        "moved {old} -> {new}; the server followed and data sent after the move reached the new port after {:.0} ms; \
         {} up / {} down messages after the move, {sent} sent each way",
        followed.as_secs_f64() * 1e3,
        up_after.len(),
        down_after.len()
    );
    assert!(followed <= Duration::from_secs(1), "{followed:?}");
    // The same session, not a new one; data went on both ways, in order.
    assert_eq!(session.peer_addr(), new);
    assert!(session.is_open());
    assert_eq!(server.stats().sessions_accepted, 1);
    assert!(server.try_accept().is_none());
    assert!(up_after.len() > 100, "{} up after the move", up_after.len());
    assert!(
        down_after.len() > 100,
        "{} down after the move",
        down_after.len()
    );
    assert!(up_after.windows(2).all(|w| w[0] < w[1]));
    assert!(*up_after.first().unwrap() > *before_up.last().unwrap());
    assert!(up_after.iter().any(|&q| q >= first_after));
    if let (Some(a), Some(b)) = (before_down.last(), down_after.first()) {
        assert!(b > a);
    }
    let s = session.stats();
    assert_eq!(s.roams, 1, "{s:?}");
    assert!(server.stats().secure.roams >= 1);
    assert_eq!(
        client.stats().secure.unwrap().handshakes,
        1,
        "no new handshake"
    );
}
