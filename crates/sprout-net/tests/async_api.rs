//! The async (tokio) API: accept, send, recv and stats, several sessions served by tasks, the
//! end of a session, and a failed handshake.

#![cfg(feature = "tokio")]

use std::time::{Duration, Instant};

use crate::common::*;
use sprout_core::Config;
use sprout_net::secure::{AllowedClients, ClientConfig, Limits, PrivateKey, SecureError};
use sprout_net::tokio::{Endpoint, Server};
use sprout_net::NetError;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_served_by_tasks_echo_and_end() {
    let (mut o, public) = options(AllowedClients::Any);
    o.idle_timeout = Duration::from_millis(800);
    let server = Server::bind(any_port(), o, |_, _, g| {
        (g == b"echo").then(Config::default)
    })
    .await
    .unwrap();
    let addr = server.local_addr();
    let served = tokio::spawn(async move {
        let mut tasks = Vec::new();
        for _ in 0..3 {
            let session = server.accept().await.expect("a session");
            tasks.push(tokio::spawn(async move {
                let mut n = 0u32;
                while let Some(d) = session.recv().await {
                    session.send(d);
                    n += 1;
                }
                (n, session.stats())
            }));
        }
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap());
        }
        (out, server.stats())
    });
    let mut clients = Vec::new();
    for c in 0..3u8 {
        clients.push(tokio::spawn(async move {
            let ep = Endpoint::connect(
                any_port(),
                addr,
                keys_for(public),
                Config::default(),
                b"echo",
            )
            .await
            .unwrap();
            assert!(ep.is_established());
            for i in 0..10u8 {
                ep.send(vec![c, i]);
                let back = tokio::time::timeout(Duration::from_secs(2), ep.recv())
                    .await
                    .expect("an echo in time");
                assert_eq!(back, Some(vec![c, i]));
            }
            assert!(ep.writable(0).await);
            ep.stats()
        }));
    }
    for c in clients {
        let s = c.await.unwrap();
        assert_eq!(s.app_bytes_received, 20);
    }
    // The clients are gone: each closed its endpoint (on drop), which tells the server, so
    // each session ends at once (not at the idle timeout) and its task sees `None`.
    let t = Instant::now();
    let (sessions, stats) = tokio::time::timeout(Duration::from_secs(5), served)
        .await
        .expect("the sessions end")
        .unwrap();
    assert!(t.elapsed() < Duration::from_secs(3));
    for (n, s) in sessions {
        assert_eq!(n, 10);
        assert!(!s.running);
        assert_eq!(
            s.end.as_deref(),
            Some("the client closed the session"),
            "{s:?}"
        );
    }
    assert_eq!(stats.sessions_accepted, 3);
    assert_eq!(stats.sessions_expired, 0, "no session idled out: {stats:?}");
}

#[tokio::test]
async fn an_unanswered_handshake_fails_the_async_connect() {
    let silent = std::net::UdpSocket::bind(any_port()).unwrap();
    let keys = ClientConfig {
        private_key: PrivateKey::generate(),
        server_key: PrivateKey::generate().public_key(),
        limits: Limits {
            handshake_timeout: sprout_core::Duration::from_micros(500_000),
            ..Limits::default()
        },
    };
    let err = Endpoint::connect(
        any_port(),
        silent.local_addr().unwrap(),
        keys,
        Config::default(),
        b"",
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, NetError::Secure(SecureError::HandshakeTimeout(_))),
        "{err}"
    );
}

#[tokio::test]
async fn accept_returns_none_once_the_server_closes() {
    let server = Server::bind(any_port(), options(AllowedClients::Any).0, |_, _, _| {
        Some(Config::default())
    })
    .await
    .unwrap();
    let closer = {
        let s = std::sync::Arc::new(server);
        let s2 = s.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            s2.close();
        });
        s
    };
    let got = tokio::time::timeout(Duration::from_secs(2), closer.accept()).await;
    assert!(matches!(got, Ok(None)));
}
