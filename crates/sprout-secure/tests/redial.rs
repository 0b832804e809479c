//! The redial machine ([`Redial`]) driving a real client security layer against a server in
//! memory, in simulated time (no sockets, no sleeps): a dead server is redialled 15 s after the
//! client's last unanswered send, unanswered redials back off 5 s then 10 s (10 s handshakes
//! between), a returning server is found and counted as a reconnection; a first handshake
//! nobody answers gives up; with redialling off a dead server gives up.

use std::net::SocketAddr;

use sprout_core::{Duration, Instant};
use sprout_secure::*;

const STEP: Duration = Duration::from_millis(50);

/// A client (its security layer under its redial machine) and a server that may be away.
struct World {
    now: Instant,
    redial: Redial,
    client: Client,
    server: Server,
    server_up: bool,
    /// The server's session, once it has one.
    session: Option<SessionId>,
    /// What the machine said, and when.
    actions: Vec<(Instant, RedialAction)>,
}

const FROM: &str = "192.0.2.7:4000";

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
        let redial = Redial::new(keys, b"hello", policy);
        let client = redial.client(Instant::ZERO).unwrap();
        World {
            now: Instant::ZERO,
            redial,
            client,
            server,
            server_up: true,
            session: None,
            actions: Vec::new(),
        }
    }

    /// One step: the client's handshake datagrams and one sealed datagram (once established)
    /// go to the server if it is up, which answers each; timers; the machine's action.
    fn step(&mut self) {
        let now = self.now;
        let from: SocketAddr = FROM.parse().unwrap();
        let (mut wire, mut plain, mut back) = (Vec::new(), Vec::new(), Vec::new());
        let mut to_server = Vec::new();
        while self.client.poll_transmit(now, &mut wire) {
            to_server.push(wire.clone());
        }
        if self.client.is_established() && self.client.seal(now, b"data", &mut wire).is_ok() {
            self.redial.on_sealed(now);
            to_server.push(wire.clone());
        }
        if self.server_up {
            for d in to_server {
                match self.server.handle(now, from, &d, &mut plain) {
                    ServerReceived::NewSession { id, .. } => self.session = Some(id),
                    ServerReceived::Data { id }
                        if self.server.seal(now, id, b"answer", &mut back).is_ok() =>
                    {
                        let r = self.client.handle(now, &back, &mut plain);
                        self.redial.on_received(r);
                    }
                    _ => {}
                }
                while self.server.poll_transmit(&mut back).is_some() {
                    let r = self.client.handle(now, &back, &mut plain);
                    self.redial.on_received(r);
                }
            }
            self.server.handle_timeout(now);
        }
        self.client.handle_timeout(now);
        if let Some(a) = self.redial.poll(now, &self.client) {
            self.actions.push((now, a));
            if let RedialAction::RedialNow { .. } = a {
                self.client = self.redial.client(now).unwrap();
            }
        }
        self.now = now + STEP;
    }

    fn run_for(&mut self, d: Duration) {
        let end = self.now + d;
        while self.now < end {
            self.step();
        }
    }

    /// A new server with the same key and no memory of the client.
    fn restart_server(&mut self) {
        let cfg = self.server.config().clone();
        self.server = Server::new(cfg);
        self.session = None;
    }
}

fn secs(t: Instant) -> f64 {
    t.as_secs_f64()
}

#[test]
fn a_dead_server_is_redialled_with_backoff_until_it_returns() {
    let mut w = World::new(RedialPolicy::default());
    w.run_for(Duration::from_secs(1));
    assert!(w.client.is_established() && w.redial.ever_established());
    // The server goes away at 1 s; the client's sends go unanswered from then.
    w.server_up = false;
    let gone = w.now;
    w.run_for(Duration::from_secs(60));
    let times: Vec<(f64, RedialAction)> = w
        .actions
        .iter()
        .map(|&(t, a)| (secs(t) - secs(gone), a))
        .collect();
    // Dead 15 s after the first unanswered send: redial at once.
    let (t0, a0) = times[0];
    assert!((14.9..=15.1).contains(&t0), "{times:?}");
    assert!(matches!(
        a0,
        RedialAction::RedialNow { reason: RedialReason::Silent { silent } }
            if silent >= Duration::from_secs(15) && silent <= Duration::from_millis(15_100)
    ));
    assert!(w.redial.is_reconnecting());
    // The redial's 10 s handshake goes unanswered: wait 5 s, redial, 10 s, wait 10 s, ...
    let kinds: Vec<String> = times
        .iter()
        .map(|(t, a)| match a {
            RedialAction::RedialNow { reason } => format!("{t:.1} redial ({reason})"),
            RedialAction::Wait { until, reason } => {
                format!(
                    "{t:.1} wait {:.1} s ({reason})",
                    secs(*until) - secs(gone) - t
                )
            }
            other => format!("{t:.1} {other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "15.0 redial (no authenticated datagram from the server for 15 s)",
            "25.0 wait 5.0 s (the redial went unanswered)",
            "30.0 redial (the wait after an unanswered redial is over)",
            "40.0 wait 10.0 s (the redial went unanswered)",
            "50.0 redial (the wait after an unanswered redial is over)",
        ],
        "{times:?}"
    );
    // The server comes back (restarted: it knows nothing of the client).
    w.restart_server();
    w.server_up = true;
    w.run_for(Duration::from_secs(15));
    assert!(w.client.is_established());
    assert!(!w.redial.is_reconnecting());
    assert_eq!(w.redial.reconnections(), 1);
    let (t, last) = *w.actions.last().unwrap();
    assert_eq!(
        last,
        RedialAction::RedialNow {
            reason: RedialReason::BackoffOver
        }
    );
    assert!(
        secs(t) - secs(gone) <= 71.0,
        "found within 10 s of its return"
    );
    // The schedule started over: a second outage again waits 5 s first.
    w.server_up = false;
    let n = w.actions.len();
    w.run_for(Duration::from_secs(40));
    let waits: Vec<Duration> = w.actions[n..]
        .iter()
        .filter_map(|&(t, a)| match a {
            RedialAction::Wait { until, .. } => Some(until - t),
            _ => None,
        })
        .collect();
    assert_eq!(waits[0], Duration::from_secs(5), "{:?}", &w.actions[n..]);
}

#[test]
fn a_first_handshake_nobody_answers_gives_up() {
    let mut w = World::new(RedialPolicy::default());
    w.server_up = false;
    w.run_for(Duration::from_secs(30));
    assert_eq!(w.actions.len(), 1, "{:?}", w.actions);
    let (t, a) = w.actions[0];
    assert_eq!(a, RedialAction::GiveUp);
    assert!((10.0..=10.1).contains(&secs(t)), "the handshake's 10 s");
    assert!(w.redial.gave_up() && w.redial.poll_timeout().is_none());
    assert_eq!(w.redial.reconnections(), 0);
}

#[test]
fn with_redialling_off_a_dead_server_gives_up() {
    let mut w = World::new(RedialPolicy {
        enabled: false,
        dead_after: Duration::from_secs(3),
        ..RedialPolicy::default()
    });
    w.run_for(Duration::from_secs(1));
    w.server_up = false;
    w.run_for(Duration::from_secs(10));
    assert_eq!(w.actions.len(), 1, "{:?}", w.actions);
    assert!(matches!(
        w.actions[0].1,
        RedialAction::GiveUpDead { silent } if silent >= Duration::from_secs(3)
    ));
}

#[test]
fn policies_are_checked() {
    let ok = RedialPolicy::default();
    assert_eq!(ok.validate(), Ok(()));
    let zero = RedialPolicy {
        dead_after: Duration::ZERO,
        ..ok
    };
    assert_eq!(zero.validate(), Err(RedialPolicyError::Zero));
    let inverted = RedialPolicy {
        backoff_max: Duration::from_secs(1),
        ..ok
    };
    assert_eq!(inverted.validate(), Err(RedialPolicyError::MaxBelowMin));
}
