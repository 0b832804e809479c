//! Hostile datagrams over UDP to a running server change nothing but counters: garbage,
//! version-1 datagrams, forged version-2 data datagrams for the live session's connection id,
//! datagrams for other connection ids, truncated ones, bogus handshake initiations, and replays
//! of captured genuine datagrams, sent both from another address and spoofed from the client's own address. A
//! paced transfer both ways delivers as much with them as without (within 5%), the session
//! stays where it is, and the drop counters rise by the right reasons.
//!
//! To see genuine datagrams and to send "as" the client, the client talks to the server
//! through a relay in the test: the relay's socket toward the server is connected to the
//! server and has SO_REUSEADDR and SO_REUSEPORT set, so a second socket (the attacker's) can
//! be bound to the same address and port; datagrams from the server still reach the relay,
//! because Linux prefers the connected socket of a reuseport group.

use std::collections::VecDeque;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::*;
use socket2::{Domain, Protocol, Socket, Type};
use sprout_core::wire::{self, Header};
use sprout_net::secure::{DropReason, SecureStats};

/// A UDP socket on `addr` with SO_REUSEADDR and SO_REUSEPORT, optionally connected to `peer`.
fn reusable(addr: SocketAddr, peer: Option<SocketAddr>) -> std::io::Result<UdpSocket> {
    let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    s.bind(&addr.into())?;
    if let Some(p) = peer {
        s.connect(&p.into())?;
    }
    Ok(s.into())
}

/// Genuine client-to-server datagrams the relay saw, with when (the newest last).
type Captured = Arc<Mutex<VecDeque<(Instant, Vec<u8>)>>>;

/// A relay between the client (on `front`) and the server (through `back`), copying what
/// the client sends.
struct Relay {
    front: SocketAddr,
    back: SocketAddr,
    captured: Captured,
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Relay {
    fn start(server: SocketAddr) -> Relay {
        let front = UdpSocket::bind(any_port()).unwrap();
        let back = reusable(any_port(), Some(server)).unwrap();
        for s in [&front, &back] {
            s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        }
        let (front_addr, back_addr) = (front.local_addr().unwrap(), back.local_addr().unwrap());
        let captured: Captured = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let client: Arc<Mutex<Option<SocketAddr>>> = Arc::default();
        let (front, back) = (Arc::new(front), Arc::new(back));
        let up = {
            let (front, back, captured, stop, client) = (
                front.clone(),
                back.clone(),
                captured.clone(),
                stop.clone(),
                client.clone(),
            );
            std::thread::spawn(move || {
                let mut buf = [0u8; 65_536];
                while !stop.load(Ordering::Relaxed) {
                    let Ok((n, from)) = front.recv_from(&mut buf) else {
                        continue;
                    };
                    *client.lock().unwrap() = Some(from);
                    let _ = back.send(&buf[..n]);
                    let mut c = captured.lock().unwrap();
                    c.push_back((Instant::now(), buf[..n].to_vec()));
                    if c.len() > 256 {
                        c.pop_front();
                    }
                }
            })
        };
        let down = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 65_536];
                while !stop.load(Ordering::Relaxed) {
                    let Ok(n) = back.recv(&mut buf) else {
                        continue;
                    };
                    let to = *client.lock().unwrap();
                    if let Some(to) = to {
                        let _ = front.send_to(&buf[..n], to);
                    }
                }
            })
        };
        Relay {
            front: front_addr,
            back: back_addr,
            captured,
            stop,
            threads: vec![up, down],
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// A small xorshift generator (the test needs no cryptographic randomness).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Application bytes delivered each way over `secs` of a paced stream both ways (a 1000-byte
/// message every 5 ms: 1.6 Mbit/s), while `during` runs.
fn paced_phase(
    client: &sprout_net::Endpoint,
    session: &sprout_net::Session,
    secs: f64,
    during: &mut dyn FnMut(),
) -> (u64, u64) {
    let up0 = session.stats().app_bytes_received;
    let down0 = client.stats().app_bytes_received;
    let t0 = Instant::now();
    let mut next = t0;
    while t0.elapsed().as_secs_f64() < secs {
        client.send(vec![1u8; 1000]);
        session.send(vec![2u8; 1000]);
        during();
        next += Duration::from_millis(5);
        if let Some(w) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(w);
        }
    }
    client.wait_writable(0, Duration::from_secs(1));
    session.wait_writable(0, Duration::from_secs(1));
    std::thread::sleep(Duration::from_millis(200));
    (
        session.stats().app_bytes_received - up0,
        client.stats().app_bytes_received - down0,
    )
}

/// One hostile datagram of each kind (0 not Sprout, 1 truncated, 2 old version, 3 forged,
/// 4 unknown session, 5 replayed, 6 bogus handshake), made from the `genuine` data datagram
/// of session `id` and the `captured` ones the server has surely seen.
fn hostile_datagrams(
    genuine: &[u8],
    captured: &[Vec<u8>],
    id: u32,
    rng: &mut Rng,
) -> Vec<(usize, Vec<u8>)> {
    let epoch = genuine[3];
    let counter = u64::from_be_bytes(genuine[8..16].try_into().unwrap());
    let mut datagrams: Vec<(usize, Vec<u8>)> = Vec::new();
    // Garbage that is not Sprout at all.
    let len = 1 + (rng.next() % 1400) as usize;
    let mut g = rng.bytes(len);
    if g[0] == 0x53 {
        g[0] = 0;
    }
    datagrams.push((0, g));
    // A version-2 data prefix cut before its header and tag.
    let cut = 4 + (rng.next() % 27) as usize;
    datagrams.push((1, genuine[..cut].to_vec()));
    // A version-1 datagram (the old unencrypted format).
    let mut v1 = Vec::new();
    let header = Header {
        seq: rng.next() >> 4,
        throwaway: 0,
        time_to_next_us: 3_600_000_000,
        sent_us: 0,
        heartbeat: false,
        app_limited: false,
        feedback: None,
    };
    wire::encode(&header, &rng.bytes(100), &mut v1);
    v1[1] = 1;
    datagrams.push((2, v1));
    // Forged data for the live session: a header well ahead of the genuine counter (so
    // that it is not taken for a replay), random ciphertext and tag.
    let mut forged = vec![0x53, 2, 3, epoch];
    forged.extend_from_slice(&id.to_be_bytes());
    forged.extend_from_slice(&(counter + 10_000 + rng.next() % 1000).to_be_bytes());
    let len = 32 + (rng.next() % 1200) as usize;
    forged.extend(rng.bytes(len));
    datagrams.push((3, forged));
    // Data for a connection id that is no session here.
    let mut wrong = genuine.to_vec();
    let mut other_id = rng.next() as u32;
    if other_id == id {
        other_id ^= 1;
    }
    wrong[4..8].copy_from_slice(&other_id.to_be_bytes());
    datagrams.push((4, wrong));
    // A replay of a genuine datagram the server has seen.
    let old = &captured[(rng.next() as usize) % captured.len()];
    datagrams.push((5, old.clone()));
    // A bogus handshake initiation (its mac1 cannot be right).
    let mut bogus = vec![0x53, 2, 1, 0];
    let len = 200 + (rng.next() % 100) as usize;
    bogus.extend(rng.bytes(len));
    datagrams.push((6, bogus));
    datagrams
}

/// Each kind of hostile datagram was dropped for its reason between `before` and `after`:
/// every one of those `sent` (loopback loses nothing at this rate; 2% allowed for a busy
/// machine) and no more.
fn check_drops(before: &SecureStats, after: &SecureStats, sent: &[u64; 7]) {
    let reasons = [
        DropReason::NotSprout,
        DropReason::Truncated,
        DropReason::OldVersion,
        DropReason::Forged,
        DropReason::UnknownSession,
        DropReason::Replayed,
    ];
    for (kind, reason) in reasons.iter().enumerate() {
        let rose = after.dropped(*reason) - before.dropped(*reason);
        assert!(
            rose as f64 >= 0.98 * sent[kind] as f64 && rose <= sent[kind],
            "{}: {rose} dropped of {} sent",
            reason.name(),
            sent[kind]
        );
    }
    // Bogus handshakes are refused by their mac1, or by the rate limit first.
    let refused = [DropReason::BadMac, DropReason::RateLimited]
        .iter()
        .map(|&r| after.dropped(r) - before.dropped(r))
        .sum::<u64>();
    assert!(
        refused as f64 >= 0.98 * sent[6] as f64 && refused <= sent[6],
        "bogus handshakes: {refused} refused of {}",
        sent[6]
    );
}

#[test]
fn hostile_datagrams_change_nothing_but_counters() {
    let server = open_server();
    let relay = Relay::start(server.local_addr());
    let client = sprout_net::Endpoint::connect(
        any_port(),
        relay.front,
        keys_for(server.public_key()),
        sprout_core::Config::default(),
        b"",
    )
    .unwrap();
    assert!(client.wait_established(Duration::from_secs(5)).unwrap());
    let session = server.accept_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(session.peer_addr(), relay.back);
    client.set_keep_incoming(false);
    session.set_keep_incoming(false);

    let other = UdpSocket::bind(any_port()).unwrap();
    let spoofed = match reusable(relay.back, None) {
        Ok(s) => Some(s),
        Err(e) => {
            println!(
                "cannot bind a second socket to the client's address {} ({e}); every attack comes from another address",
                relay.back
            );
            None
        }
    };
    let to = server.local_addr();

    // A clean run first.
    let clean = paced_phase(&client, &session, 3.0, &mut || {});
    let before = server.stats().secure;

    // The same with attacks: every 5 ms, one of each kind from each source.
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // not_sprout, truncated, old_version, forged, unknown_session, replayed, bogus handshake
    let mut sent = [0u64; 7];
    let id = session.id();
    let mut attack = || {
        let captured: Vec<Vec<u8>> = {
            let c = relay.captured.lock().unwrap();
            // Replays only of datagrams the server has surely seen (100 ms ago or more), and
            // only data datagrams (type 3).
            c.iter()
                .filter(|(t, d)| t.elapsed() > Duration::from_millis(100) && d.get(2) == Some(&3))
                .map(|(_, d)| d.clone())
                .collect()
        };
        let Some(genuine) = captured.last() else {
            return;
        };
        let datagrams = hostile_datagrams(genuine, &captured, id, &mut rng);
        for (kind, d) in &datagrams {
            for s in std::iter::once(&other).chain(spoofed.as_ref()) {
                if s.send_to(d, to).is_ok() {
                    sent[*kind] += 1;
                }
            }
        }
    };
    let attacked = paced_phase(&client, &session, 3.0, &mut attack);
    let after = server.stats().secure;

    let total: u64 = sent.iter().sum();
    println!(
        "clean: {} B up, {} B down; under attack ({total} hostile datagrams, spoofed too: {}): {} B up, {} B down",
        clean.0,
        clean.1,
        spoofed.is_some(),
        attacked.0,
        attacked.1
    );
    println!(
        "drops before {:?}\ndrops after  {:?}",
        before.drops_by_name(),
        after.drops_by_name()
    );
    for (what, c, a) in [("up", clean.0, attacked.0), ("down", clean.1, attacked.1)] {
        let ratio = a as f64 / c as f64;
        assert!(
            (0.95..=1.05).contains(&ratio),
            "{what}: {a} bytes under attack vs {c} without"
        );
    }
    check_drops(&before, &after, &sent);
    assert_eq!(after.dropped_total() - before.dropped_total(), total);
    // Nothing else changed: the same session, at the same address, the core saw nothing bad.
    assert_eq!(session.peer_addr(), relay.back);
    assert_eq!(session.stats().roams, 0);
    assert_eq!(session.stats().malformed, 0);
    let st = server.stats();
    assert_eq!((st.sessions_accepted, st.sessions_open), (1, 1));
    assert_eq!(client.stats().secure.unwrap().dropped_total(), 0);
    // The spoofing socket never took the server's datagrams away from the relay.
    if let Some(s) = &spoofed {
        s.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 2048];
        assert!(
            s.recv(&mut buf).is_err(),
            "the spoofing socket got a datagram"
        );
    }
}
