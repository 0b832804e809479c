//! Helpers shared by the integration tests: a server and clients driven in memory.

#![allow(dead_code)]

use sprout_core::Instant;
use std::collections::HashSet;
use std::net::SocketAddr;

use sprout_secure::{
    AllowedClients, Client, ClientConfig, ClientReceived, Limits, PrivateKey, Server, ServerConfig,
    ServerReceived, SessionId,
};

/// The client's usual address.
pub(crate) fn client_addr() -> SocketAddr {
    "192.0.2.1:40000".parse().unwrap()
}

/// Another address (an attacker, or the client after roaming).
pub(crate) fn other_addr() -> SocketAddr {
    "198.51.100.7:5555".parse().unwrap()
}

/// A server that allows `allowed` client keys (or any, when empty), with `limits`.
pub(crate) fn server_with(
    server_key: &PrivateKey,
    allowed: &[&PrivateKey],
    limits: Limits,
) -> Server {
    let allowed = if allowed.is_empty() {
        AllowedClients::Any
    } else {
        AllowedClients::Keys(
            allowed
                .iter()
                .map(|k| k.public_key())
                .collect::<HashSet<_>>(),
        )
    };
    let mut config = ServerConfig::new(server_key.clone(), allowed);
    config.limits = limits;
    Server::new(config)
}

/// A client of `server_key` with `limits`.
pub(crate) fn client_with(
    key: &PrivateKey,
    server: &Server,
    limits: Limits,
    now_us: u64,
    greeting: &[u8],
) -> Client {
    Client::new(
        ClientConfig {
            private_key: key.clone(),
            server_key: server.public_key(),
            limits,
        },
        Instant::from_micros(now_us),
        greeting,
    )
    .unwrap()
}

/// Runs the handshake: initiation, response, keepalive; returns the session id.
pub(crate) fn establish(
    server: &mut Server,
    client: &mut Client,
    from: SocketAddr,
    now_us: u64,
) -> SessionId {
    let mut buf = Vec::new();
    let mut pt = Vec::new();
    assert!(
        client.poll_transmit(Instant::from_micros(now_us), &mut buf),
        "the client sends its initiation"
    );
    assert_eq!(
        server.handle(Instant::from_micros(now_us), from, &buf, &mut pt),
        ServerReceived::Control
    );
    let to = server.poll_transmit(&mut buf).expect("the server answers");
    assert_eq!(to, from);
    assert_eq!(
        client.handle(Instant::from_micros(now_us), &buf, &mut pt),
        ClientReceived::Established
    );
    assert!(
        client.poll_transmit(Instant::from_micros(now_us), &mut buf),
        "the client confirms with a keepalive"
    );
    match server.handle(Instant::from_micros(now_us), from, &buf, &mut pt) {
        ServerReceived::NewSession { id, addr, data, .. } => {
            assert_eq!(addr, from);
            assert!(!data);
            id
        }
        other => panic!("expected a new session, got {other:?}"),
    }
}

/// A fresh server, an allowed client, and their established session.
pub(crate) struct Pair {
    pub server_key: PrivateKey,
    pub client_key: PrivateKey,
    pub server: Server,
    pub client: Client,
    pub id: SessionId,
    pub now_us: u64,
}

impl Pair {
    pub(crate) fn new() -> Pair {
        Pair::with_limits(Limits::default())
    }

    pub(crate) fn with_limits(limits: Limits) -> Pair {
        let server_key = PrivateKey::generate();
        let client_key = PrivateKey::generate();
        let mut server = server_with(&server_key, &[&client_key], limits.clone());
        let mut client = client_with(&client_key, &server, limits, 1_000, b"hello");
        let id = establish(&mut server, &mut client, client_addr(), 1_000);
        Pair {
            server_key,
            client_key,
            server,
            client,
            id,
            now_us: 1_000,
        }
    }

    /// The client seals `msg`; returns the datagram.
    pub(crate) fn client_seal(&mut self, msg: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        self.client
            .seal(Instant::from_micros(self.now_us), msg, &mut out)
            .unwrap();
        out
    }

    /// The server seals `msg` for the session; returns the datagram.
    pub(crate) fn server_seal(&mut self, msg: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        self.server
            .seal(Instant::from_micros(self.now_us), self.id, msg, &mut out)
            .unwrap();
        out
    }

    /// Seals `msg` each way and asserts that it opens to `msg` at the other end.
    pub(crate) fn exchange(&mut self, msg: &[u8]) {
        let mut pt = Vec::new();
        let d = self.client_seal(msg);
        assert_eq!(d.len(), msg.len() + sprout_secure::OVERHEAD_BYTES);
        assert_eq!(
            self.server.handle(
                Instant::from_micros(self.now_us),
                client_addr(),
                &d,
                &mut pt
            ),
            ServerReceived::Data { id: self.id }
        );
        assert_eq!(pt, msg);
        let d = self.server_seal(msg);
        assert_eq!(
            self.client
                .handle(Instant::from_micros(self.now_us), &d, &mut pt),
            ClientReceived::Data
        );
        assert_eq!(pt, msg);
    }

    /// Asserts that a fresh datagram each way still opens to what was sealed.
    pub(crate) fn assert_both_ways_open(&mut self) {
        let mut pt = Vec::new();
        let d = self.client_seal(b"still here");
        assert_eq!(
            self.server.handle(
                Instant::from_micros(self.now_us),
                client_addr(),
                &d,
                &mut pt
            ),
            ServerReceived::Data { id: self.id }
        );
        assert_eq!(pt, b"still here");
        let d = self.server_seal(b"and you");
        assert_eq!(
            self.client
                .handle(Instant::from_micros(self.now_us), &d, &mut pt),
            ClientReceived::Data
        );
        assert_eq!(pt, b"and you");
        assert_eq!(self.server.session(self.id).unwrap().addr, client_addr());
    }
}

/// The first handshake initiation of each of `n` clients with fresh keys, for `server`.
pub(crate) fn initiations_from_new_keys(server: &Server, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|_| {
            let mut c = client_with(&PrivateKey::generate(), server, Limits::default(), 0, b"");
            let mut d = Vec::new();
            assert!(c.poll_transmit(Instant::from_micros(0), &mut d));
            d
        })
        .collect()
}
