//! Helpers of the sprout-net tests: keys, a server and clients on 127.0.0.1.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use sprout_core::Config;
use sprout_net::secure::{
    AllowedClients, ClientConfig, Limits, PrivateKey, PublicKey, ServerConfig,
};
use sprout_net::{Endpoint, Server, ServerOptions, Session};

pub(crate) fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// Options of a server that accepts `allowed` with a fresh key; its public key.
pub(crate) fn options(allowed: AllowedClients) -> (ServerOptions, PublicKey) {
    let key = PrivateKey::generate();
    let public = key.public_key();
    (ServerOptions::new(ServerConfig::new(key, allowed)), public)
}

/// A server on 127.0.0.1 that accepts any client with the default configuration.
pub(crate) fn open_server() -> Server {
    let (o, _) = options(AllowedClients::Any);
    Server::bind(any_port(), o, |_, _, _| Some(Config::default())).unwrap()
}

/// Client keys for `server_key` (a fresh client key).
pub(crate) fn keys_for(server_key: PublicKey) -> ClientConfig {
    ClientConfig {
        private_key: PrivateKey::generate(),
        server_key,
        limits: Limits::default(),
    }
}

/// A client of `server` with a fresh key and the default configuration.
pub(crate) fn client_of(server: &Server, greeting: &[u8]) -> Endpoint {
    Endpoint::connect(
        any_port(),
        server.local_addr(),
        keys_for(server.public_key()),
        Config::default(),
        greeting,
    )
    .unwrap()
}

/// A server, a client of it, and the client's session at the server.
pub(crate) fn pair() -> (Server, Endpoint, Session) {
    let server = open_server();
    let client = client_of(&server, b"");
    assert!(
        client.wait_established(Duration::from_secs(5)).unwrap(),
        "handshake"
    );
    // The session reaches the server with the client's first sealed datagram (the keepalive
    // that confirms the keys).
    let session = server
        .accept_timeout(Duration::from_secs(5))
        .expect("a session");
    (server, client, session)
}

/// Waits until `cond` holds, for at most `limit`.
pub(crate) fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    cond()
}
