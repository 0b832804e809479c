//! A client's security layer under its redial machine, sans-IO: what the driver
//! ([`crate::driver`]) does with each datagram from the server, at each deadline, and with each
//! core datagram it seals, on the [`Link`] it shares with the application.
//!
//! Dead peers and redials follow sprout-secure's [`Redial`] (the machine SproutTunnel's client
//! runs too): when [`crate::endpoint::ReconnectOptions::dead_after`] passes after the client
//! sealed a datagram without an authenticated one from the server, the connection is dropped
//! and a fresh handshake starts with the same keys and greeting; an unanswered one is retried
//! after a growing wait. A first handshake nobody answers still fails the endpoint: that is a
//! wrong address or key more often than an outage. The driver moves datagrams between this and
//! the socket; the tests below drive it against a server in memory in simulated time.

use sprout_core::{Connection, Instant};
use sprout_secure::{
    Client, ClientConfig, ClientReceived, Redial, RedialAction, RedialPolicy, SealError,
    SecureError,
};

use crate::conn::Link;

/// What [`SecureClient::run_timers`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Timers {
    /// The endpoint ended (the first handshake failed, the server is dead and redialling is
    /// off, an invalid configuration).
    pub ended: bool,
    /// A fresh handshake started: datagrams of the old session still waiting for the socket
    /// are stale.
    pub redialled: bool,
}

/// The client's security layer and its redial machine.
pub(crate) struct SecureClient {
    /// The security layer of the current session (a fresh one at each redial).
    pub secure: Client,
    redial: Redial,
}

impl SecureClient {
    /// The first handshake, starting at `now`, with `keys` and `greeting`; a dead server is
    /// redialled as `policy` says.
    pub(crate) fn new(
        keys: ClientConfig,
        greeting: &[u8],
        policy: RedialPolicy,
        now: Instant,
    ) -> Result<SecureClient, SecureError> {
        let redial = Redial::new(keys, greeting, policy);
        let secure = redial.client(now)?;
        Ok(SecureClient { secure, redial })
    }

    /// A datagram `d` from the server, at `now`: opened into `plaintext`; the connection is
    /// made when the handshake completes, and core datagrams go to it.
    pub(crate) fn handle(
        &mut self,
        st: &mut Link,
        now: Instant,
        d: &[u8],
        plaintext: &mut Vec<u8>,
    ) {
        let received = self.secure.handle(now, d, plaintext);
        self.redial.on_received(received);
        match received {
            ClientReceived::Established => {
                self.publish(st);
                if st.conn.is_none() {
                    match Connection::new(st.config.clone(), now) {
                        Ok(c) => st.install(c),
                        Err(e) => st.finish(format!("invalid configuration: {e}")),
                    }
                }
            }
            ClientReceived::Data => st.deliver(now, plaintext, d.len()),
            // The server ended the session: final (the redial machine gives up at once).
            ClientReceived::Closed => {
                st.secure_error = Some(SecureError::ClosedByServer);
                st.finish(SecureError::ClosedByServer.to_string());
            }
            ClientReceived::Control | ClientReceived::Dropped(_) => {}
        }
    }

    /// Runs the security layer's and the connection's timers, and does what the redial
    /// machine says at `now`.
    pub(crate) fn run_timers(&mut self, st: &mut Link, now: Instant) -> Timers {
        let mut out = Timers::default();
        if self.secure.poll_timeout().is_some_and(|t| t <= now) {
            self.secure.handle_timeout(now);
        }
        match self.redial.poll(now, &self.secure) {
            None => {}
            Some(RedialAction::GiveUp) => {
                if let Some(e) = self.secure.error() {
                    st.secure_error = Some(e.clone());
                    st.finish(e.to_string());
                }
                st.secure = Some(self.secure.stats());
            }
            Some(RedialAction::GiveUpDead { .. }) => {
                st.finish(format!(
                    "the server sent nothing authenticated for {} s after this client sent (stopped, restarted, or out of reach)",
                    self.redial.policy().dead_after.as_micros() / 1_000_000
                ));
            }
            Some(RedialAction::RedialNow { .. }) => {
                st.drop_connection();
                match self.redial.client(now) {
                    Ok(c) => {
                        self.secure = c;
                        out.redialled = true;
                    }
                    Err(e) => {
                        st.secure_error = Some(e.clone());
                        st.finish(e.to_string());
                    }
                }
            }
            Some(RedialAction::Wait { .. }) => {
                // A redial (or the keys' rekey) went unanswered: wait, then try again.
                st.secure = Some(self.secure.stats());
                st.drop_connection();
            }
        }
        self.publish(st);
        if st.ended {
            out.ended = true;
            return out;
        }
        if let Some(c) = st.conn.as_mut() {
            c.handle_timeout(now);
        }
        out
    }

    /// The client quits at `now`: the session's close into `out` (to be sent a few times);
    /// `false` if no session is up.
    pub(crate) fn close(&mut self, now: Instant, out: &mut Vec<u8>) -> bool {
        self.secure.close(now, out)
    }

    /// Seals core datagram `tx` for the server at `now` into `out`.
    pub(crate) fn seal(
        &mut self,
        now: Instant,
        tx: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), SealError> {
        self.secure.seal(now, tx, out)?;
        self.redial.on_sealed(now);
        Ok(())
    }

    /// The next deadline of the security layer and the redial machine.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        match (self.secure.poll_timeout(), self.redial.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Shows the application where the redial stands.
    fn publish(&self, st: &mut Link) {
        st.reconnecting = self.redial.is_reconnecting();
        st.reconnections = self.redial.reconnections();
        st.refusal = self.secure.refusal().cloned();
    }
}

/// The endpoint's redial in simulated time: the driver's sans-IO part against a secure server
/// and a Sprout connection in memory, no sockets, no sleeps.
#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use sprout_core::{Config, Duration};
    use sprout_secure::{
        AllowedClients, Limits, PrivateKey, Server, ServerConfig, ServerReceived, SessionId,
    };

    use super::*;

    const STEP: Duration = Duration::from_millis(20);

    /// The client (its link and secure client, as the driver holds them) and a server that
    /// may be away: its security layer and one Sprout connection per session.
    struct World {
        now: Instant,
        link: Link,
        client: SecureClient,
        server: Server,
        server_conn: Option<(SessionId, Connection)>,
        server_up: bool,
        /// When the client's security layer was replaced (a redial), and when it ended.
        redials: Vec<Instant>,
        ended: Option<Instant>,
    }

    fn addr() -> SocketAddr {
        "192.0.2.9:5000".parse().unwrap()
    }

    impl World {
        fn new(policy: RedialPolicy) -> World {
            let client_key = PrivateKey::generate();
            let allowed = AllowedClients::Keys([client_key.public_key()].into_iter().collect());
            let server = Server::new(ServerConfig::new(PrivateKey::generate(), allowed));
            let keys = ClientConfig {
                private_key: client_key,
                server_key: server.public_key(),
                limits: Limits::default(),
            };
            let link = Link::new(Config::default(), addr(), Instant::ZERO);
            World {
                now: Instant::ZERO,
                link,
                client: SecureClient::new(keys, b"", policy, Instant::ZERO).unwrap(),
                server,
                server_conn: None,
                server_up: true,
                redials: Vec::new(),
                ended: None,
            }
        }

        /// One step of the driver's loop (read, timers, write) with the server answering at
        /// once (no delay on the path).
        fn step(&mut self) {
            let now = self.now;
            let (mut wire, mut tx, mut plain) = (Vec::new(), Vec::new(), Vec::new());
            let mut out = Vec::new();
            // The client's sends: its layer's own, then the connection's.
            while self.client.secure.poll_transmit(now, &mut wire) {
                out.push(wire.clone());
            }
            while self.client.secure.is_established()
                && self.link.next_transmit(now, &mut tx).is_some()
            {
                if self.client.seal(now, &tx, &mut wire).is_ok() {
                    out.push(wire.clone());
                }
            }
            let mut back = Vec::new();
            if self.server_up {
                self.serve(now, out, &mut back);
            }
            for d in back {
                self.client.handle(&mut self.link, now, &d, &mut plain);
            }
            let timers = self.client.run_timers(&mut self.link, now);
            if timers.redialled {
                self.redials.push(now);
            }
            if timers.ended && self.ended.is_none() {
                self.ended = Some(now);
            }
            self.now = now + STEP;
        }

        /// The server takes `datagrams` and answers into `back`.
        fn serve(&mut self, now: Instant, datagrams: Vec<Vec<u8>>, back: &mut Vec<Vec<u8>>) {
            let (mut plain, mut wire, mut tx) = (Vec::new(), Vec::new(), Vec::new());
            for d in datagrams {
                match self.server.handle(now, addr(), &d, &mut plain) {
                    ServerReceived::NewSession { id, .. } => {
                        let c = Connection::new(Config::default(), now).unwrap();
                        self.server_conn = Some((id, c));
                    }
                    ServerReceived::Data { id } => {
                        if let Some((sid, c)) = self.server_conn.as_mut() {
                            if *sid == id {
                                let _ = c.handle_datagram(now, &plain);
                            }
                        }
                    }
                    _ => {}
                }
                while self.server.poll_transmit(&mut wire).is_some() {
                    back.push(wire.clone());
                }
            }
            self.server.handle_timeout(now);
            if let Some((id, c)) = self.server_conn.as_mut() {
                c.handle_timeout(now);
                while c.poll_transmit(now, &mut tx).is_some() {
                    if self.server.seal(now, *id, &tx, &mut wire).is_ok() {
                        back.push(wire.clone());
                    }
                }
            }
        }

        fn run_for(&mut self, d: Duration) {
            let end = self.now + d;
            while self.now < end {
                self.step();
            }
        }

        /// A new server with the same key and nothing of the old session.
        fn restart_server(&mut self) {
            let cfg = self.server.config().clone();
            self.server = Server::new(cfg);
            self.server_conn = None;
        }
    }

    fn secs_after(t: Instant, from: Instant) -> f64 {
        (t - from).as_secs_f64()
    }

    #[test]
    fn a_dead_server_is_redialled_with_backoff_and_the_endpoint_reconnects() {
        let mut w = World::new(RedialPolicy::default());
        w.run_for(Duration::from_secs(1));
        assert!(w.link.conn.is_some(), "established");
        let gone = w.now;
        w.server_up = false;
        w.run_for(Duration::from_secs(16));
        // Dead 15 s after the first unanswered send: the connection goes, a redial starts.
        assert_eq!(w.redials.len(), 1);
        let t = secs_after(w.redials[0], gone);
        assert!((14.9..=15.1).contains(&t), "redial at {t} s");
        assert!(w.link.reconnecting && w.link.conn.is_none());
        // Handshakes of 10 s nobody answers, then waits of 5 s, 10 s: redials at 30 s, 50 s.
        w.run_for(Duration::from_secs(40));
        let times: Vec<f64> = w
            .redials
            .iter()
            .map(|&t| (secs_after(t, gone) * 10.0).round() / 10.0)
            .collect();
        assert_eq!(times, [15.0, 30.0, 50.0], "redials");
        assert!(w.ended.is_none() && w.link.reconnecting);
        // The server comes back (restarted) at 56 s, during the handshake of the redial at
        // 50 s: its next retry (every 250 ms) is answered, a fresh connection carries on.
        w.restart_server();
        w.server_up = true;
        w.run_for(Duration::from_secs(1));
        assert_eq!(w.redials.len(), 3);
        assert!(w.link.conn.is_some() && !w.link.reconnecting);
        assert_eq!(w.link.reconnections, 1);
        assert!(w.ended.is_none());
    }

    #[test]
    fn a_first_handshake_nobody_answers_ends_the_endpoint() {
        let mut w = World::new(RedialPolicy::default());
        w.server_up = false;
        w.run_for(Duration::from_secs(20));
        assert!(w.redials.is_empty());
        let t = w.ended.expect("ended").as_secs_f64();
        assert!((10.0..=10.1).contains(&t), "ended at {t} s");
        assert!(w.link.secure_error.is_some() && w.link.ended);
    }

    #[test]
    fn without_redialling_a_dead_server_ends_the_endpoint() {
        let mut w = World::new(RedialPolicy {
            enabled: false,
            dead_after: Duration::from_secs(2),
            ..RedialPolicy::default()
        });
        w.run_for(Duration::from_secs(1));
        w.server_up = false;
        w.run_for(Duration::from_secs(5));
        assert!(w.redials.is_empty());
        assert!(w.ended.is_some());
        let why = w.link.end.clone().unwrap_or_default();
        assert!(why.contains("sent nothing authenticated for 2 s"), "{why}");
    }
}
