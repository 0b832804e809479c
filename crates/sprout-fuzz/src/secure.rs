//! Fuzz target: the security layer's open path.
//!
//! A server and a client with an established session are built once. Each input is handed to
//! `Server::handle` (as if from the client's address and from another) and to
//! `Client::handle`; then a genuine datagram freshly sealed each way must still open to what
//! was sealed, and the session must still be at the client's address: hostile bytes change
//! nothing but a drop counter. Seeds are real handshake initiations and responses and data
//! datagrams, captured from the session's own exchange (so they are replays by the time the
//! target runs, as an attacker on the path would have them), including a rekey, and a cookie
//! reply, an initiation carrying `mac2` and a refusal from servers under load and full (the
//! message types of issue 22; inputs of those types are also aimed at the client's index so
//! that they reach its cryptography), and closes both ways from another session (issue 36;
//! half the inputs of the close's type are aimed at the live session, its id and key epoch at
//! the server, its index and epoch at the client, so that they reach the tag's check: no
//! hostile close ends the session). The session
//! rekeys every [`REKEY_US`] of the target's clock (one microsecond per input), so hostile
//! inputs also land in the middle of rekeys.

use std::net::SocketAddr;

use sprout_core::{Duration, Instant};
use sprout_secure::wire;
use sprout_secure::{
    AllowedClients, Client, ClientConfig, ClientReceived, Limits, PrivateKey, SecureStats, Server,
    ServerConfig, ServerReceived, SessionId,
};

use crate::Target;

/// The session's rekey interval, in microseconds of the target's clock (one per input): a
/// rekey every 20,000 inputs, 50 a second of that clock, within the server's per-source
/// handshake rate.
pub const REKEY_US: u64 = 20_000;

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
        let limits = Limits {
            rekey_after: Duration::from_micros(REKEY_US),
            ..Limits::default()
        };
        let mut config = ServerConfig::new(server_key, allowed);
        config.limits = limits.clone();
        let mut server = Server::new(config);
        let client_addr: SocketAddr = "192.0.2.1:40000".parse().expect("an address");
        let other_addr: SocketAddr = "198.51.100.7:5555".parse().expect("an address");
        let mut client = Client::new(
            ClientConfig {
                private_key: client_key,
                server_key: server.public_key(),
                limits,
            },
            Instant::ZERO,
            b"fuzz",
        )
        .expect("a client");
        let mut seeds = Vec::new();
        let mut buf = Vec::new();
        let mut pt = Vec::new();
        assert!(
            client.poll_transmit(Instant::ZERO, &mut buf),
            "an initiation"
        );
        seeds.push(buf.clone());
        assert_eq!(
            server.handle(Instant::ZERO, client_addr, &buf, &mut pt),
            ServerReceived::Control
        );
        server.poll_transmit(&mut buf).expect("a response");
        seeds.push(buf.clone());
        assert_eq!(
            client.handle(Instant::ZERO, &buf, &mut pt),
            ClientReceived::Established
        );
        assert!(client.poll_transmit(Instant::ZERO, &mut buf), "a keepalive");
        seeds.push(buf.clone());
        let id = match server.handle(Instant::ZERO, client_addr, &buf, &mut pt) {
            ServerReceived::NewSession { id, .. } => id,
            other => panic!("no session: {other:?}"),
        };
        for len in [0usize, 1, 40, 200, 1400] {
            let msg: Vec<u8> = (0..len).map(|i| i as u8).collect();
            client
                .seal(Instant::ZERO, &msg, &mut buf)
                .expect("client seals");
            seeds.push(buf.clone());
            server.handle(Instant::ZERO, client_addr, &buf, &mut pt);
            server
                .seal(Instant::ZERO, id, &msg, &mut buf)
                .expect("server seals");
            seeds.push(buf.clone());
            client.handle(Instant::ZERO, &buf, &mut pt);
        }
        // A rekey, captured too.
        let now = REKEY_US;
        client.handle_timeout(Instant::from_micros(now));
        assert!(
            client.poll_transmit(Instant::from_micros(now), &mut buf),
            "a rekey initiation"
        );
        seeds.push(buf.clone());
        assert_eq!(
            server.handle(Instant::from_micros(now), client_addr, &buf, &mut pt),
            ServerReceived::Control
        );
        server.poll_transmit(&mut buf).expect("a rekey response");
        seeds.push(buf.clone());
        assert_eq!(
            client.handle(Instant::from_micros(now), &buf, &mut pt),
            ClientReceived::Control
        );
        assert!(
            client.poll_transmit(Instant::from_micros(now), &mut buf),
            "a keepalive under the new keys"
        );
        seeds.push(buf.clone());
        assert_eq!(
            server.handle(Instant::from_micros(now), client_addr, &buf, &mut pt),
            ServerReceived::Control
        );
        client
            .seal(Instant::from_micros(now), b"after the rekey", &mut buf)
            .expect("client seals");
        seeds.push(buf.clone());
        server.handle(Instant::from_micros(now), client_addr, &buf, &mut pt);
        server
            .seal(Instant::from_micros(now), id, b"after the rekey", &mut buf)
            .expect("server seals");
        seeds.push(buf.clone());
        client.handle(Instant::from_micros(now), &buf, &mut pt);
        seeds.extend(load_and_refusal_seeds());
        seeds.extend(close_seeds());
        SecureTarget {
            server,
            client,
            id,
            now_us: now,
            client_addr,
            other_addr,
            seeds,
            plaintext: Vec::new(),
            buf: Vec::new(),
        }
    }

    /// The server's and the client's counters so far (rekeys done, datagrams dropped by
    /// reason).
    pub fn stats(&self) -> (SecureStats, SecureStats) {
        (self.server.stats(), self.client.stats())
    }

    /// Runs the timers and carries the layer's own datagrams (rekey initiations, answers,
    /// keepalives) between the two; answers the server sent elsewhere (to replays) are lost.
    fn pump(&mut self, now: u64) {
        if self
            .client
            .poll_timeout()
            .is_some_and(|t| t <= Instant::from_micros(now))
        {
            self.client.handle_timeout(Instant::from_micros(now));
        }
        if self
            .server
            .poll_timeout()
            .is_some_and(|t| t <= Instant::from_micros(now))
        {
            self.server.handle_timeout(Instant::from_micros(now));
        }
        for _ in 0..4 {
            let mut moved = false;
            while self
                .client
                .poll_transmit(Instant::from_micros(now), &mut self.buf)
            {
                moved = true;
                let r = self.server.handle(
                    Instant::from_micros(now),
                    self.client_addr,
                    &self.buf,
                    &mut self.plaintext,
                );
                assert!(
                    matches!(r, ServerReceived::Control | ServerReceived::Dropped(_)),
                    "{r:?}"
                );
            }
            while let Some(to) = self.server.poll_transmit(&mut self.buf) {
                if to == self.client_addr {
                    moved = true;
                    let r = self.client.handle(
                        Instant::from_micros(now),
                        &self.buf,
                        &mut self.plaintext,
                    );
                    assert_ne!(r, ClientReceived::Data);
                }
            }
            if !moved {
                break;
            }
        }
        assert!(self.client.error().is_none(), "{:?}", self.client.error());
        assert!(self.server.poll_event().is_none(), "the session stays up");
    }

    /// A genuine datagram each way still opens, and the session has not moved.
    fn check_session(&mut self) {
        let now = self.now_us;
        self.client
            .seal(Instant::from_micros(now), b"genuine", &mut self.buf)
            .expect("the client still seals");
        let r = self.server.handle(
            Instant::from_micros(now),
            self.client_addr,
            &self.buf,
            &mut self.plaintext,
        );
        assert_eq!(
            r,
            ServerReceived::Data { id: self.id },
            "the server opens a genuine datagram"
        );
        assert_eq!(self.plaintext, b"genuine");
        let to = self
            .server
            .seal(
                Instant::from_micros(now),
                self.id,
                b"genuine",
                &mut self.buf,
            )
            .expect("the server still seals");
        assert_eq!(to, self.client_addr, "the session did not move");
        let r = self
            .client
            .handle(Instant::from_micros(now), &self.buf, &mut self.plaintext);
        assert_eq!(
            r,
            ClientReceived::Data,
            "the client opens a genuine datagram"
        );
        assert_eq!(self.plaintext, b"genuine");
    }
}

/// A server whose config `tune` changes, and a client of it whose first initiation (left in
/// `buf`) the server has handled as coming from `from`.
fn initiated(
    tune: impl FnOnce(&mut ServerConfig),
    from: SocketAddr,
    buf: &mut Vec<u8>,
    pt: &mut Vec<u8>,
) -> (Server, Client) {
    let mut config = ServerConfig::new(PrivateKey::generate(), AllowedClients::Any);
    tune(&mut config);
    let mut server = Server::new(config);
    let mut client = Client::new(
        ClientConfig {
            private_key: PrivateKey::generate(),
            server_key: server.public_key(),
            limits: Limits::default(),
        },
        Instant::ZERO,
        b"",
    )
    .expect("a client");
    assert!(client.poll_transmit(Instant::ZERO, buf), "an initiation");
    server.handle(Instant::ZERO, from, buf, pt);
    (server, client)
}

/// A cookie reply and the initiation with `mac2` that follows it (from a server under load),
/// and a refusal (from a full server): seeds of the message types of issue 22.
fn load_and_refusal_seeds() -> Vec<Vec<u8>> {
    let (mut buf, mut pt, mut seeds) = (Vec::new(), Vec::new(), Vec::new());
    let from: SocketAddr = "192.0.2.9:4000".parse().expect("an address");
    // No handshake budget at all: always under load.
    let (mut loaded, mut client) = initiated(|c| c.handshakes_per_s = 0, from, &mut buf, &mut pt);
    loaded.poll_transmit(&mut buf).expect("a cookie reply");
    seeds.push(buf.clone());
    client.handle(Instant::ZERO, &buf, &mut pt);
    assert!(client.poll_transmit(Instant::ZERO, &mut buf), "with mac2");
    seeds.push(buf.clone());
    let (mut full, _) = initiated(|c| c.max_sessions = 0, from, &mut buf, &mut pt);
    full.poll_transmit(&mut buf).expect("a refusal");
    seeds.push(buf);
    seeds
}

/// The closes of another established session, the client's and the server's: seeds of the
/// close's message type (issue 36). Genuine, but for a session the target's server and client
/// do not have.
fn close_seeds() -> Vec<Vec<u8>> {
    let (mut buf, mut pt, mut seeds) = (Vec::new(), Vec::new(), Vec::new());
    let from: SocketAddr = "192.0.2.10:4000".parse().expect("an address");
    let (mut server, mut client) = initiated(|_| {}, from, &mut buf, &mut pt);
    server.poll_transmit(&mut buf).expect("a response");
    assert_eq!(
        client.handle(Instant::ZERO, &buf, &mut pt),
        ClientReceived::Established
    );
    assert!(client.poll_transmit(Instant::ZERO, &mut buf), "a keepalive");
    let id = match server.handle(Instant::ZERO, from, &buf, &mut pt) {
        ServerReceived::NewSession { id, .. } => id,
        other => panic!("no session: {other:?}"),
    };
    server.close_at(Instant::ZERO, id);
    server.poll_transmit(&mut buf).expect("the server's close");
    assert_eq!(buf.len(), wire::CLOSE_BYTES);
    seeds.push(buf.clone());
    // The client's close of a session of its own (the server above forgot its session).
    let (mut server, mut client) = initiated(|_| {}, from, &mut buf, &mut pt);
    server.poll_transmit(&mut buf).expect("a response");
    client.handle(Instant::ZERO, &buf, &mut pt);
    assert!(client.close(Instant::ZERO, &mut buf), "the client's close");
    assert_eq!(buf.len(), wire::CLOSE_BYTES);
    seeds.push(buf);
    seeds
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
        // Half the data-shaped inputs (those of even length) are addressed to the live session
        // under its current key epoch, so that they reach the replay window and the AEAD
        // rather than stop at the connection id.
        let aimed = input.len() >= wire::OVERHEAD_BYTES
            && input[2] == wire::TYPE_DATA
            && input.len() & 1 == 0;
        let mut to_server = input.to_vec();
        let mut to_client = input.to_vec();
        // Half the responses and refusals (those whose last byte is even) are addressed to
        // the client's index.
        let answer = input.len() >= 8
            && matches!(input[2], wire::TYPE_RESPONSE | wire::TYPE_REFUSAL)
            && input[input.len() - 1] & 1 == 0;
        if answer {
            to_client[4..8].copy_from_slice(&self.client.index().to_be_bytes());
        }
        // Half the closes (those whose last byte is even) are aimed at the live session under
        // its current key epoch, both ways, so that they reach the tag's check.
        let close =
            input.len() >= 8 && input[2] == wire::TYPE_CLOSE && input[input.len() - 1] & 1 == 0;
        if aimed || close {
            let epoch = self.client.key_epoch().unwrap_or(0);
            to_server[3] = epoch;
            to_server[4..8].copy_from_slice(&self.id.to_be_bytes());
            to_client[3] = epoch;
            to_client[4..8].copy_from_slice(&self.client.index().to_be_bytes());
        }
        for from in [self.client_addr, self.other_addr] {
            let r = self.server.handle(
                Instant::from_micros(now),
                from,
                &to_server,
                &mut self.plaintext,
            );
            // Hostile bytes never carry data nor open a session.
            assert!(
                matches!(r, ServerReceived::Dropped(_) | ServerReceived::Control),
                "the server accepted hostile bytes: {r:?}"
            );
        }
        let r = self
            .client
            .handle(Instant::from_micros(now), &to_client, &mut self.plaintext);
        assert!(
            matches!(r, ClientReceived::Dropped(_)),
            "the client accepted hostile bytes: {r:?}"
        );
        self.pump(now);
        self.check_session();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sprout_secure::DropReason;

    #[test]
    fn closes_aimed_at_the_live_session_reach_the_tag_check_and_end_nothing() {
        let mut t = SecureTarget::new();
        let closes: Vec<Vec<u8>> = t
            .seeds()
            .into_iter()
            .filter(|s| s.len() == wire::CLOSE_BYTES && s[2] == wire::TYPE_CLOSE)
            .collect();
        assert_eq!(closes.len(), 2, "the client's close and the server's");
        for mut c in closes {
            // An even last byte: aimed at the live session (and no longer the genuine tag).
            let last = c.len() - 1;
            c[last] &= !1;
            let (s0, c0) = t.stats();
            t.run(&c);
            let (s1, c1) = t.stats();
            let forged = |a: &SecureStats, b: &SecureStats| {
                b.dropped(DropReason::Forged) - a.dropped(DropReason::Forged)
            };
            // The server got it from the client's address and another; the client once.
            assert_eq!(forged(&s0, &s1), 2);
            assert_eq!(forged(&c0, &c1), 1);
        }
    }
}
