//! Issue 36, point 3, for the tunnel (sans-IO, simulated time): a tunnel client that quits
//! tells its relay (the session's authenticated close), which frees the session and its
//! addresses at once, not after its idle timeout; and the client's state and reconnection
//! count are in its status (and so in `sprout tunnel client --json`).

use crate::common::*;
use sprout_core::Instant;
use sprout_secure::wire::{CLOSE_BYTES, CLOSE_COPIES, TYPE_CLOSE};
use sprout_tunnel::{ClientState, ClientTunnelEvent, ServerTunnelEvent, TunnelServer};

const SECOND: u64 = 1_000_000;

/// A relay with one assigned client, and the relay's key.
fn one_client() -> (Net, sprout_secure::PrivateKey) {
    let relay = key();
    let mut net = Net::new(server_settings(relay.clone(), None));
    net.add_client(key());
    net.connect_all();
    assert_eq!(net.server.client_count(), 1);
    (net, relay)
}

fn client_down(net: &Net) -> usize {
    net.server_events
        .iter()
        .filter(|e| matches!(e, ServerTunnelEvent::ClientDown { .. }))
        .count()
}

#[test]
fn a_client_that_quits_frees_its_session_and_addresses_at_the_relay_at_once() {
    let (mut net, _) = one_client();
    let addr = net.client(0).assignment().expect("assigned");
    let now = Instant::from_micros(net.now);
    net.client(0).close(now);
    net.client(0).close(now);
    assert_eq!(net.client(0).state(), ClientState::Ended);
    // What the client hands out now: the close's copies, then nothing.
    let mut buf = Vec::new();
    let mut copies = Vec::new();
    while net.client(0).poll_udp(now, &mut buf) {
        copies.push(buf.clone());
    }
    assert_eq!(copies.len(), CLOSE_COPIES);
    assert!(copies
        .iter()
        .all(|c| c.len() == CLOSE_BYTES && c[2] == TYPE_CLOSE && c == &copies[0]));
    let from = net.peers[0].addr;
    for c in copies {
        net.inject_to_server(from, c);
    }
    // One one-way delay later (20 ms), far below the relay's idle timeout.
    net.run_for(DELAY_US + 1_000);
    println!(
        "relay: {} clients, events {:?}",
        net.server.client_count(),
        net.server_events
    );
    assert_eq!(net.server.client_count(), 0, "the session still holds");
    assert_eq!(client_down(&net), 1);
    // The addresses are free: a new client gets the same ones.
    net.peers[0].muted = true;
    net.add_client(key());
    net.connect_all();
    assert_eq!(net.client(1).assignment(), Some(addr));
    // The client that quit takes nothing, redials nothing, reports no failure.
    net.peers[0].muted = false;
    net.run_for(40 * SECOND);
    let c = net.client(0);
    assert_eq!((c.state(), c.reconnections()), (ClientState::Ended, 0));
    assert!(c.poll_timeout().is_none());
    assert!(!net.peers[0].events.iter().any(|e| matches!(
        e,
        ClientTunnelEvent::Failed(_) | ClientTunnelEvent::Reconnecting(_)
    )));
    assert_eq!(net.server.client_count(), 1, "only the new client");
}

#[test]
fn a_client_without_a_session_sends_nothing_when_it_quits() {
    let mut net = Net::new(server_settings(key(), None));
    net.add_client(key());
    let now = Instant::from_micros(net.now);
    // Before its first handshake completed: nothing to close.
    net.client(0).close(now);
    let mut buf = Vec::new();
    assert!(!net.client(0).poll_udp(now, &mut buf));
    net.run_for(5 * SECOND);
    assert_eq!(net.server.client_count(), 0);
    assert_eq!(net.client(0).state(), ClientState::Ended);
}

#[test]
fn the_clients_state_and_reconnections_are_in_its_status() {
    let (mut net, relay) = one_client();
    let now = Instant::from_micros(net.now);
    let v = serde_json::to_value(net.client(0).status(now)).unwrap();
    assert_eq!(
        (&v["state"], &v["reconnections"]),
        (&"established".into(), &0.into()),
        "{v}"
    );
    // The server's status has no state.
    let s = serde_json::to_value(net.server.status(now)).unwrap();
    assert!(s.get("state").is_none(), "{s}");
    // The relay restarts (nothing of the session kept): reconnecting, then established again.
    net.server = TunnelServer::new(server_settings(relay, None)).unwrap();
    let mut seen = Vec::new();
    for _ in 0..250 {
        net.run_for(100_000);
        let now = Instant::from_micros(net.now);
        let v = serde_json::to_value(net.client(0).status(now)).unwrap();
        let state = v["state"].as_str().unwrap().to_string();
        if seen.last() != Some(&state) {
            seen.push(state);
        }
        if v["reconnections"] == 1 && v["state"] == "established" {
            break;
        }
    }
    println!("states after the relay restarted: {seen:?}");
    assert_eq!(seen.first().map(String::as_str), Some("established"));
    assert!(seen.iter().any(|s| s == "reconnecting"), "{seen:?}");
    assert_eq!(seen.last().map(String::as_str), Some("established"));
    assert_eq!(net.client(0).reconnections(), 1);
    let now = Instant::from_micros(net.now);
    net.client(0).close(now);
    let v = serde_json::to_value(net.client(0).status(now)).unwrap();
    assert_eq!(v["state"], "ended", "{v}");
    assert_eq!(v["reconnections"], 1, "{v}");
}
