//! Roaming: a client that changes its source port mid-transfer keeps its session; within 1 s
//! the server sends to the new address and data flows both ways again.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::*;
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

/// What the on-path relay of [`a_replayed_datagram_reflects_nothing_to_a_spoofed_address`]
/// does with the client's datagrams.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Relay {
    /// Passes them on.
    Forward,
    /// Keeps the next one (the attacker's capture) and drops it and all after.
    Capture,
    /// Drops them.
    Blackhole,
}

/// A UDP relay between a client and `server` on 127.0.0.1 (an attacker on the path): its
/// address, its mode, and the datagram it captured.
#[allow(clippy::type_complexity)]
fn relay(
    server: std::net::SocketAddr,
    stop: Arc<AtomicBool>,
) -> (
    std::net::SocketAddr,
    Arc<std::sync::Mutex<(Relay, Option<Vec<u8>>)>>,
) {
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let addr = sock.local_addr().unwrap();
    let state = Arc::new(std::sync::Mutex::new((Relay::Forward, None)));
    let st = state.clone();
    std::thread::spawn(move || {
        let mut client = None;
        let mut buf = vec![0u8; 65_536];
        while !stop.load(Ordering::Relaxed) {
            let Ok((n, from)) = sock.recv_from(&mut buf) else {
                continue;
            };
            if from == server {
                if let Some(c) = client {
                    let _ = sock.send_to(&buf[..n], c);
                }
                continue;
            }
            client = Some(from);
            let mut s = st.lock().unwrap();
            match s.0 {
                Relay::Forward => {
                    let _ = sock.send_to(&buf[..n], server);
                }
                Relay::Capture => *s = (Relay::Blackhole, Some(buf[..n].to_vec())),
                Relay::Blackhole => {}
            }
        }
    });
    (addr, state)
}

#[test]
fn a_replayed_datagram_reflects_nothing_to_a_spoofed_address() {
    // The finding: an attacker on the path held back one of the client's datagrams (the
    // newest) and sent it from another address; the session moved there and the server's
    // heartbeats followed (120x the bytes sent). Here the "spoofed" address is a socket of the
    // test's own that counts what reaches it, while the attacker drops the client's datagrams.
    let server = open_server();
    let stop = Arc::new(AtomicBool::new(false));
    let (relay_addr, relay_state) = relay(server.local_addr(), stop.clone());
    let client = sprout_net::Endpoint::connect(
        any_port(),
        relay_addr,
        keys_for(server.public_key()),
        sprout_core::Config::default(),
        b"",
    )
    .unwrap();
    assert!(client.wait_established(Duration::from_secs(5)).unwrap());
    let session = Arc::new(server.accept_timeout(Duration::from_secs(5)).unwrap());
    assert_eq!(session.peer_addr(), relay_addr);
    // The server streams to the client (200 bytes every 10 ms) throughout.
    let streamer = {
        let (s, stop) = (session.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                s.send(vec![5u8; 200]);
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    relay_state.lock().unwrap().0 = Relay::Capture;
    let captured = {
        let end = Instant::now() + Duration::from_secs(2);
        loop {
            if let Some(d) = relay_state.lock().unwrap().1.clone() {
                break d;
            }
            assert!(Instant::now() < end, "the client sent nothing to capture");
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    let victim = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    victim
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    victim.send_to(&captured, server.local_addr()).unwrap();
    let (mut reflected, mut buf) = (0usize, vec![0u8; 65_536]);
    let listen_until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < listen_until {
        if let Ok((n, _)) = victim.recv_from(&mut buf) {
            reflected += n;
        }
    }
    let factor = reflected as f64 / captured.len() as f64;
    println!(
        "one {}-byte datagram replayed from {}: {reflected} bytes reflected there in 2 s ({factor:.1}x); session at {}",
        captured.len(),
        victim.local_addr().unwrap(),
        session.peer_addr()
    );
    assert!(
        reflected <= 3 * captured.len(),
        "{reflected} bytes reflected to the spoofed address ({factor:.1}x)"
    );
    assert_eq!(session.peer_addr(), relay_addr, "the session moved");
    // The attacker lets the client through again: the session goes on where it was.
    relay_state.lock().unwrap().0 = Relay::Forward;
    client.send(b"still here".to_vec());
    let end = Instant::now() + Duration::from_secs(5);
    let mut got = false;
    while !got && Instant::now() < end {
        got = session.recv_timeout(Duration::from_millis(100)).as_deref() == Some(b"still here");
    }
    assert!(got, "the client's datagrams reach the session again");
    stop.store(true, Ordering::Relaxed);
    streamer.join().unwrap();
    assert_eq!(session.stats().roams, 0);
}
