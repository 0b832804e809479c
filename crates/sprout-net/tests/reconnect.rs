//! A client [`Endpoint`] survives its server: a restarted server (dropped, then bound again on
//! the same address with the same key), a session the server closed, and a long outage are
//! detected as a dead peer (no authenticated datagram for `dead_after` after a send) and
//! redialled; a first handshake nobody answers still fails for good.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::common::*;
use sprout_core::Config;
use sprout_net::endpoint::{EndpointState, ReconnectOptions, DEAD_PEER_TIMEOUT};
use sprout_net::secure::{AllowedClients, ClientConfig, PrivateKey, SecureError};
use sprout_net::{Endpoint, Server, ServerOptions, Session};

/// Options of a server with a fresh key that accepts any client, kept to bind it again.
fn server_options() -> (ServerOptions, ClientConfig) {
    let (o, public) = options(AllowedClients::Any);
    (o, keys_for(public))
}

fn bind(addr: SocketAddr, o: &ServerOptions) -> Server {
    Server::bind(addr, o.clone(), |_, _, _| Some(Config::default())).expect("bind the server")
}

/// Short timers so that a test sees several redials in a few seconds.
fn quick() -> ReconnectOptions {
    ReconnectOptions {
        dead_after: Duration::from_secs(1),
        backoff_min: Duration::from_millis(500),
        backoff_max: Duration::from_secs(1),
        ..ReconnectOptions::default()
    }
}

fn connect(server: &Server, mut keys: ClientConfig, reconnect: ReconnectOptions) -> Endpoint {
    keys.limits.handshake_timeout = Duration::from_secs(1).into();
    let ep = Endpoint::connect_with(
        any_port(),
        server.local_addr(),
        keys,
        Config::default(),
        b"again",
        reconnect,
    )
    .expect("connect");
    assert!(ep.wait_established(Duration::from_secs(5)).unwrap());
    ep
}

fn accept(server: &Server) -> Session {
    let s = server
        .accept_timeout(Duration::from_secs(5))
        .expect("a session");
    assert_eq!(s.greeting(), b"again");
    s
}

/// Sends `tag` from the client every 100 ms until the server accepts a session that
/// receives it, for at most `limit`; the session and how long it took.
fn until_it_flows(client: &Endpoint, server: &Server, limit: Duration) -> (Session, Duration) {
    let start = Instant::now();
    let mut session: Option<Session> = None;
    while start.elapsed() < limit {
        client.send(b"ping".to_vec());
        if session.is_none() {
            session = server.accept_timeout(Duration::from_millis(100));
        }
        if let Some(s) = &session {
            if s.recv_timeout(Duration::from_millis(100)).as_deref() == Some(b"ping") {
                let s = session.take().unwrap();
                return (s, start.elapsed());
            }
        }
    }
    panic!(
        "nothing flowed within {limit:?}: client {:?}, {}",
        client.state(),
        serde_json::to_string(&client.stats()).unwrap()
    );
}

#[test]
fn a_restarted_server_is_redialled_within_20_s_with_the_defaults() {
    let (o, keys) = server_options();
    let server = bind(any_port(), &o);
    let addr = server.local_addr();
    let client = Endpoint::connect(any_port(), addr, keys, Config::default(), b"again").unwrap();
    assert!(client.wait_established(Duration::from_secs(5)).unwrap());
    let session = accept(&server);
    client.send(b"before".to_vec());
    assert_eq!(
        session.recv_timeout(Duration::from_secs(2)).as_deref(),
        Some(&b"before"[..])
    );
    assert_eq!(client.state(), EndpointState::Established);
    // The server stops (as a killed or restarted one does) before its session is dropped:
    // a stopped server sends no close, so the client sees only silence. (A session dropped
    // first would be closed, and the client told, which is not a restart.)
    drop(server);
    drop(session);
    let restarted = bind(addr, &o);
    let (session, took) = until_it_flows(&client, &restarted, Duration::from_secs(20));
    println!("messages flow again {took:?} after the restart");
    assert!(
        took <= DEAD_PEER_TIMEOUT + Duration::from_secs(3),
        "took {took:?}"
    );
    assert_eq!(client.reconnections(), 1);
    assert_eq!(client.state(), EndpointState::Established);
    assert!(client.is_established() && client.is_running());
    session.send(b"back".to_vec());
    let mut got = None;
    assert!(eventually(Duration::from_secs(2), || {
        got = client.try_recv();
        got.is_some()
    }));
    assert_eq!(got.as_deref(), Some(&b"back"[..]));
}

#[test]
fn a_long_outage_reports_reconnecting_and_retries_with_backoff() {
    let (o, keys) = server_options();
    let server = bind(any_port(), &o);
    let addr = server.local_addr();
    let client = connect(&server, keys, quick());
    let session = accept(&server);
    // Received before the outage, read after it: kept.
    session.send(b"unread".to_vec());
    assert!(eventually(Duration::from_secs(2), || client
        .stats()
        .app_bytes_received
        > 0));
    // The server stops (as a killed or restarted one does) before its session is dropped:
    // a stopped server sends no close, so the client sees only silence. (A session dropped
    // first would be closed, and the client told, which is not a restart.)
    drop(server);
    drop(session);
    assert!(
        eventually(Duration::from_secs(3), || client.state()
            == EndpointState::Reconnecting),
        "{:?}",
        client.state()
    );
    assert!(!client.is_established());
    let s = client.stats();
    assert!(!s.established && s.running, "{s:?}");
    // The endpoint's counters count every connection: the old one's bytes stay counted.
    assert_eq!(s.app_bytes_received, 6, "{s:?}");
    // Several redials go unanswered (1 s each, 0.5-1 s apart); the endpoint never gives up.
    let sent_before = client.stats().datagrams_sent;
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(client.state(), EndpointState::Reconnecting);
    assert!(client.is_running() && client.error().is_none());
    let initiations = client.stats().datagrams_sent - sent_before;
    // Every 250 ms while a handshake is under way, nothing between: 8-16 in 4 s.
    assert!(
        (6..=20).contains(&initiations),
        "{initiations} initiations in 4 s"
    );
    // What the application sends meanwhile waits for the next session.
    client.send(b"queued".to_vec());
    let restarted = bind(addr, &o);
    let t0 = Instant::now();
    let session = accept(&restarted);
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert_eq!(
        session.recv_timeout(Duration::from_secs(2)).as_deref(),
        Some(&b"queued"[..])
    );
    assert_eq!(client.reconnections(), 1);
    assert_eq!(client.state(), EndpointState::Established);
    let s = client.stats();
    assert!(s.app_bytes_sent >= 6 && s.app_bytes_received == 6, "{s:?}");
    assert_eq!(
        client.recv_timeout(Duration::from_secs(1)).as_deref(),
        Some(&b"unread"[..])
    );
}

#[test]
fn a_session_the_server_closed_is_not_redialled() {
    // The server's close says the session ended (issue 36): the client stops, it does not
    // take the server for dead and redial it.
    let (o, keys) = server_options();
    let server = bind(any_port(), &o);
    let client = connect(&server, keys, quick());
    let first = accept(&server);
    first.close();
    assert!(eventually(Duration::from_secs(3), || client.state()
        == EndpointState::Ended));
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(client.reconnections(), 0);
    assert_eq!(server.stats().sessions_accepted, 1);
}

#[test]
fn a_first_handshake_nobody_answers_fails_for_good() {
    let (o, _) = server_options();
    let server = bind(any_port(), &o);
    let mut wrong = keys_for(PrivateKey::generate().public_key());
    wrong.limits.handshake_timeout = Duration::from_secs(1).into();
    let client = Endpoint::connect_with(
        any_port(),
        server.local_addr(),
        wrong,
        Config::default(),
        b"",
        quick(),
    )
    .unwrap();
    assert!(matches!(
        client.wait_established(Duration::from_secs(3)),
        Err(sprout_net::NetError::Secure(SecureError::HandshakeTimeout(
            _
        )))
    ));
    let sent = client.stats().datagrams_sent;
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(client.state(), EndpointState::Ended);
    assert_eq!(client.stats().datagrams_sent, sent, "no redial");
}

#[test]
fn without_reconnecting_a_dead_server_ends_the_endpoint() {
    let (o, keys) = server_options();
    let server = bind(any_port(), &o);
    let options = ReconnectOptions {
        enabled: false,
        ..quick()
    };
    let client = connect(&server, keys, options);
    drop(accept(&server));
    drop(server);
    assert!(eventually(Duration::from_secs(3), || !client.is_running()));
    assert_eq!(client.state(), EndpointState::Ended);
    let why = client.end_reason().unwrap();
    assert!(why.contains("sent nothing authenticated for 1 s"), "{why}");
}
