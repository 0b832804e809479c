//! Fuzz target: the security layer's open path.
//!
//! A server and a client with an established session are built once. Each input is handed to
//! `Server::handle` (as if from the client's address and from another) and to
//! `Client::handle`; then a genuine datagram freshly sealed each way must still open to what
//! was sealed, and the session must still be at the client's address: hostile bytes change
//! nothing but a drop counter. Seeds are real handshake initiations and responses and data
//! datagrams, captured from the session's own exchange (so they are replays by the time the
//! target runs, as an attacker on the path would have them).

use std::net::SocketAddr;

use sprout_secure::{
    AllowedClients, Client, ClientConfig, ClientReceived, Limits, PrivateKey, Server, ServerConfig,
    ServerReceived, SessionId,
};

use crate::Target;

/// A server and a client with an established session, fed hostile datagrams.
pub struct SecureTarget {
    server: Server,
    client: Client,
    id: SessionId,
    now_us: u64,
    client_addr: SocketAddr,
    other_addr: SocketAddr,
    seeds: Vec<Vec<u8>>,
    plaintext: Vec<u8>,
    buf: Vec<u8>,
}

impl SecureTarget {
    /// A new target.
    pub fn new() -> Self {
        let server_key = PrivateKey::generate();
        let client_key = PrivateKey::generate();
        let allowed = AllowedClients::Keys([client_key.public_key()].into_iter().collect());
        let mut server = Server::new(ServerConfig::new(server_key, allowed));
        let limits = Limits::default();
        let client_addr: SocketAddr = "192.0.2.1:40000".parse().expect("an address");
        let other_addr: SocketAddr = "198.51.100.7:5555".parse().expect("an address");
        let mut client = Client::new(
            ClientConfig {
                private_key: client_key,
                server_key: server.public_key(),
                limits,
            },
            0,
            b"fuzz",
        )
        .expect("a client");
        let mut seeds = Vec::new();
        let mut buf = Vec::new();
        let mut pt = Vec::new();
        assert!(client.poll_transmit(0, &mut buf), "an initiation");
        seeds.push(buf.clone());
        assert_eq!(
            server.handle(0, client_addr, &buf, &mut pt),
            ServerReceived::Control
        );
        server.poll_transmit(&mut buf).expect("a response");
        seeds.push(buf.clone());
        assert_eq!(client.handle(0, &buf, &mut pt), ClientReceived::Established);
        assert!(client.poll_transmit(0, &mut buf), "a keepalive");
        seeds.push(buf.clone());
        let id = match server.handle(0, client_addr, &buf, &mut pt) {
            ServerReceived::NewSession { id, .. } => id,
            other => panic!("no session: {other:?}"),
        };
        for len in [0usize, 1, 40, 200, 1400] {
            let msg: Vec<u8> = (0..len).map(|i| i as u8).collect();
            client.seal(0, &msg, &mut buf).expect("client seals");
            seeds.push(buf.clone());
            server.handle(0, client_addr, &buf, &mut pt);
            server.seal(0, id, &msg, &mut buf).expect("server seals");
            seeds.push(buf.clone());
            client.handle(0, &buf, &mut pt);
        }
        SecureTarget {
            server,
            client,
            id,
            now_us: 1,
            client_addr,
            other_addr,
            seeds,
            plaintext: Vec::new(),
            buf: Vec::new(),
        }
    }

    /// A genuine datagram each way still opens, and the session has not moved.
    fn check_session(&mut self) {
        let now = self.now_us;
        self.client
            .seal(now, b"genuine", &mut self.buf)
            .expect("the client still seals");
        let r = self
            .server
            .handle(now, self.client_addr, &self.buf, &mut self.plaintext);
        assert_eq!(
            r,
            ServerReceived::Data { id: self.id },
            "the server opens a genuine datagram"
        );
        assert_eq!(self.plaintext, b"genuine");
        let to = self
            .server
            .seal(now, self.id, b"genuine", &mut self.buf)
            .expect("the server still seals");
        assert_eq!(to, self.client_addr, "the session did not move");
        let r = self.client.handle(now, &self.buf, &mut self.plaintext);
        assert_eq!(
            r,
            ClientReceived::Data,
            "the client opens a genuine datagram"
        );
        assert_eq!(self.plaintext, b"genuine");
    }
}

impl Default for SecureTarget {
    fn default() -> Self {
        Self::new()
    }
}

impl Target for SecureTarget {
    fn name(&self) -> &'static str {
        "secure"
    }
    fn seeds(&mut self) -> Vec<Vec<u8>> {
        self.seeds.clone()
    }
    fn run(&mut self, input: &[u8]) {
        self.now_us += 1;
        let now = self.now_us;
        for from in [self.client_addr, self.other_addr] {
            let r = self.server.handle(now, from, input, &mut self.plaintext);
            // Hostile bytes never carry data nor open a session.
            assert!(
                matches!(r, ServerReceived::Dropped(_) | ServerReceived::Control),
                "the server accepted hostile bytes: {r:?}"
            );
        }
        while self.server.poll_transmit(&mut self.buf).is_some() {}
        let r = self.client.handle(now, input, &mut self.plaintext);
        assert!(
            matches!(r, ClientReceived::Dropped(_)),
            "the client accepted hostile bytes: {r:?}"
        );
        while self.client.poll_transmit(now, &mut self.buf) {}
        self.check_session();
    }
}
