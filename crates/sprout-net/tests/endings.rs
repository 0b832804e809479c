//! Issue 36, point 3: endings that are not deaths. A client that quits and a server that
//! ends a session each say so on the wire (an authenticated close), so that neither side
//! takes the other for dead: the server frees a quitting client's session at once (not after
//! its idle timeout), and a client whose session the server ended stops with that reason and
//! does not redial. The endpoint's state and reconnections are in its stats (and their JSON).
//!
//! Only the API of the code as it was before the fix is used, so that these tests show the
//! findings on that code too.

use std::time::{Duration, Instant};

use crate::common::*;
use sprout_core::Config;
use sprout_net::endpoint::{EndpointState, ReconnectOptions};
use sprout_net::secure::AllowedClients;
use sprout_net::{Endpoint, Server};

/// A server that accepts any client, and a client of it that takes the server for dead after
/// 1 s of silence (so that a redial, if any, comes within the test's wait).
fn pair_quick() -> (Server, Endpoint) {
    let (o, public) = options(AllowedClients::Any);
    let server = Server::bind(any_port(), o, |_, _, _| Some(Config::default())).unwrap();
    let reconnect = ReconnectOptions {
        dead_after: Duration::from_secs(1),
        backoff_min: Duration::from_millis(500),
        backoff_max: Duration::from_secs(1),
        ..ReconnectOptions::default()
    };
    let client = Endpoint::connect_with(
        any_port(),
        server.local_addr(),
        keys_for(public),
        Config::default(),
        b"hi",
        reconnect,
    )
    .unwrap();
    assert!(client.wait_established(Duration::from_secs(5)).unwrap());
    (server, client)
}

#[test]
fn a_client_that_quits_frees_its_session_at_once() {
    let (server, client) = pair_quick();
    let session = server
        .accept_timeout(Duration::from_secs(5))
        .expect("a session");
    assert!(eventually(Duration::from_secs(2), || server
        .stats()
        .sessions_open
        == 1));
    let t0 = Instant::now();
    client.close();
    let freed = eventually(Duration::from_secs(3), || server.stats().sessions_open == 0);
    println!(
        "client quit: sessions open {} after {:?}; session end {:?}",
        server.stats().sessions_open,
        t0.elapsed(),
        session.end_reason()
    );
    assert!(
        freed,
        "the session still holds its slot (idle timeout 30 s)"
    );
    assert!(!session.is_open());
    let why = session.end_reason().unwrap_or_default();
    assert!(why.contains("client closed"), "{why}");
    assert_eq!(server.stats().sessions_expired, 0, "not an idle timeout");
}

#[test]
fn a_client_whose_session_the_server_ended_stops_and_does_not_redial() {
    let (server, client) = pair_quick();
    let session = server
        .accept_timeout(Duration::from_secs(5))
        .expect("a session");
    session.close();
    // The client would take a silent server for dead after 1 s and redial within 0.5 s more.
    let ended = eventually(Duration::from_secs(3), || {
        client.state() == EndpointState::Ended
    });
    client.send(b"anyone there?".to_vec());
    std::thread::sleep(Duration::from_secs(2));
    println!(
        "server closed: client {:?} ({:?}), reconnections {}, sessions accepted {}",
        client.state(),
        client.end_reason(),
        client.reconnections(),
        server.stats().sessions_accepted
    );
    assert!(ended, "the client still runs: {:?}", client.state());
    let why = client.end_reason().unwrap_or_default();
    assert!(why.contains("server closed"), "{why}");
    assert_eq!(client.reconnections(), 0);
    assert_eq!(server.stats().sessions_accepted, 1, "the client redialled");
}

#[test]
fn the_endpoints_state_and_reconnections_are_in_its_stats() {
    let (server, client) = pair_quick();
    let _session = server
        .accept_timeout(Duration::from_secs(5))
        .expect("a session");
    let v = serde_json::to_value(client.stats()).unwrap();
    println!("state {} reconnections {}", v["state"], v["reconnections"]);
    assert_eq!(v["state"], "established", "{v}");
    assert_eq!(v["reconnections"], 0, "{v}");
    client.close();
    let v = serde_json::to_value(client.stats()).unwrap();
    assert_eq!(v["state"], "ended", "{v}");
}
