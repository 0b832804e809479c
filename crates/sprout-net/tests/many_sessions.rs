//! The CI load test: one server holds 20 sessions at once on loopback, each a paced
//! 200 kbit/s stream in both directions for 10 s; no session is lost and each direction of
//! each session delivers within 2% of what its sender released.

use std::time::{Duration, Instant};

use crate::common::*;
use sprout_net::Session;

const CLIENTS: usize = 20;
/// Application bytes per message; one message per direction every 20 ms is 200 kbit/s.
const MESSAGE: usize = 500;
const INTERVAL: Duration = Duration::from_millis(20);
const SECONDS: u64 = 10;

/// A client of `server` from host `i` of four (127.0.0.1 to .4, all local on Linux): the
/// server holds at most 16 sessions per source address, as many hosts would connect.
fn client_from_host(
    server: &sprout_net::Server,
    i: usize,
    greeting: &[u8],
) -> sprout_net::Endpoint {
    sprout_net::Endpoint::connect(
        std::net::SocketAddr::from(([127, 0, 0, 1 + (i % 4) as u8], 0)),
        server.local_addr(),
        keys_for(server.public_key()),
        sprout_core::Config::default(),
        greeting,
    )
    .unwrap()
}

#[test]
fn twenty_paced_sessions_both_ways_for_ten_seconds() {
    let start = Instant::now();
    let server = open_server();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| client_from_host(&server, i, format!("client {i}").as_bytes()))
        .collect();
    let mut sessions: Vec<Option<Session>> = (0..CLIENTS).map(|_| None).collect();
    for _ in 0..CLIENTS {
        let s = server
            .accept_timeout(Duration::from_secs(5))
            .expect("every client gets a session");
        let i: usize = String::from_utf8_lossy(s.greeting())
            .trim_start_matches("client ")
            .parse()
            .unwrap();
        assert_eq!(s.peer_addr(), clients[i].local_addr());
        sessions[i] = Some(s);
    }
    let sessions: Vec<Session> = sessions.into_iter().map(Option::unwrap).collect();
    for (c, s) in clients.iter().zip(&sessions) {
        c.set_keep_incoming(false);
        s.set_keep_incoming(false);
    }
    let setup = start.elapsed();

    // Both directions of every session, paced from one thread.
    let mut released = 0u64;
    let t0 = Instant::now();
    let mut next = t0;
    while t0.elapsed() < Duration::from_secs(SECONDS) {
        for (c, s) in clients.iter().zip(&sessions) {
            c.send(vec![7u8; MESSAGE]);
            s.send(vec![9u8; MESSAGE]);
        }
        released += MESSAGE as u64;
        next += INTERVAL;
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    // Let the last messages leave and arrive.
    for (c, s) in clients.iter().zip(&sessions) {
        c.wait_writable(0, Duration::from_secs(1));
        s.wait_writable(0, Duration::from_secs(1));
    }
    std::thread::sleep(Duration::from_millis(300));

    let st = server.stats();
    println!(
        "setup {:.2} s, {} sessions, {released} bytes released per direction each; server {}",
        setup.as_secs_f64(),
        CLIENTS,
        serde_json::to_string(&st).unwrap()
    );
    assert_eq!(st.sessions_accepted, CLIENTS as u64);
    assert_eq!(st.sessions_open, CLIENTS as u64, "a session was lost");
    assert_eq!(st.sessions_closed, 0);
    assert_eq!(st.secure.dropped_total(), 0, "{:?}", st.secure);
    let mut worst = 1.0f64;
    for (i, (c, s)) in clients.iter().zip(&sessions).enumerate() {
        let (cs, ss) = (c.stats(), s.stats());
        assert!(cs.running && ss.running, "session {i} ended: {:?}", ss.end);
        for (what, sent, got) in [
            ("up", cs.app_bytes_sent, ss.app_bytes_received),
            ("down", ss.app_bytes_sent, cs.app_bytes_received),
        ] {
            assert_eq!(sent, released, "session {i} {what}: sent {sent}");
            let ratio = got as f64 / released as f64;
            worst = worst.min(ratio);
            assert!(
                (0.98..=1.0).contains(&ratio),
                "session {i} {what}: delivered {got} of {released} bytes"
            );
        }
    }
    println!(
        "worst delivered/released {worst:.4}; whole test {:.1} s",
        start.elapsed().as_secs_f64()
    );
}
