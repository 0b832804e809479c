//! When a client takes its server for dead and how it redials, sans-IO: one state machine,
//! [`Redial`], shared by both clients (the library `Endpoint` of sprout-net and SproutTunnel's
//! client), with the defaults they use.
//!
//! The rule is WireGuard's: when [`RedialPolicy::dead_after`] passes after the client sealed a
//! datagram without an authenticated one from the server, the server is dead (restarted,
//! closed the session as idle, out of reach); the client drops its session and starts a fresh
//! handshake at once with the same keys and greeting ([`Redial::client`]). A redial nobody
//! answers within [`Limits::handshake_timeout`](crate::Limits::handshake_timeout) (the
//! security layer then fails) is retried after a wait of [`RedialPolicy::backoff_min`],
//! doubling up to [`RedialPolicy::backoff_max`], for as long as the client runs; so is a
//! session whose keys expire before a rekey completes. A session that completes its
//! handshake starts the schedule over. Only a session that was up once is redialled: a first
//! handshake nobody answers (or that the server refuses) gives up ([`RedialAction::GiveUp`]),
//! since that is a wrong address or key more often than an outage. With
//! [`RedialPolicy::enabled`] off, a dead server or a failed session gives up too.
//!
//! The machine owns no session and reads no clock: its user tells it what happened
//! ([`Redial::on_received`], [`Redial::on_sealed`]), asks it at each deadline what to do
//! ([`Redial::poll`]), and does it (drops its session, makes a fresh [`Client`]).
//!
//! ```
//! use sprout_core::{Duration, Instant};
//! use sprout_secure::*;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let keys = ClientConfig {
//!     private_key: PrivateKey::generate(),
//!     server_key: PrivateKey::generate().public_key(),
//!     limits: Limits::default(),
//! };
//! let mut redial = Redial::new(keys, b"greeting", RedialPolicy::default());
//! let t0 = Instant::ZERO;
//! let client = redial.client(t0)?;
//! // Nobody answers the first handshake: the client gives up when the layer fails.
//! let t = t0 + Duration::from_secs(11);
//! let mut client = client;
//! client.handle_timeout(t);
//! assert_eq!(redial.poll(t, &client), Some(RedialAction::GiveUp));
//! # Ok(())
//! # }
//! ```

use std::fmt;

use sprout_core::time::{Duration, Instant};
use thiserror::Error;

use crate::{Client, ClientConfig, ClientReceived, SecureError};

/// How long a client waits for an authenticated datagram from its server after it sent one
/// before it considers the server dead and starts a new handshake: WireGuard's
/// `KEEPALIVE_TIMEOUT` (10 s) plus `REKEY_TIMEOUT` (5 s). A live server is never silent that
/// long: its Sprout heartbeats leave at least once a second
/// (`sprout_core::params::MAX_HEARTBEAT_INTERVAL_US`).
pub const DEAD_PEER_TIMEOUT: Duration = Duration::from_secs(15);

/// The first wait after a redial's handshake went unanswered (for
/// [`Limits::handshake_timeout`](crate::Limits::handshake_timeout), 10 s by default) before the
/// next one.
pub const REDIAL_BACKOFF_MIN: Duration = Duration::from_secs(5);

/// The longest wait between two redial handshakes (the wait doubles from
/// [`REDIAL_BACKOFF_MIN`] up to this). Kept at 10 s so that a server that comes back after a
/// long outage is found within about 10 s (plus a round trip), whatever the outage's length;
/// an outage costs a handshake initiation every 250 ms for 10 s, then nothing for 10 s.
pub const REDIAL_BACKOFF_MAX: Duration = Duration::from_secs(10);

/// When a client takes its server for dead and how it redials it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RedialPolicy {
    /// Redial at all (default true). Off: a dead server or a failed session gives up
    /// ([`RedialAction::GiveUpDead`], [`RedialAction::GiveUp`]).
    pub enabled: bool,
    /// Silence after a sealed datagram that makes the server dead (default
    /// [`DEAD_PEER_TIMEOUT`]; at least a few of the server's heartbeat intervals, which are at
    /// most 1 s).
    pub dead_after: Duration,
    /// The wait after a first unanswered redial (default [`REDIAL_BACKOFF_MIN`]).
    pub backoff_min: Duration,
    /// The longest wait between redials (default [`REDIAL_BACKOFF_MAX`]).
    pub backoff_max: Duration,
}

impl Default for RedialPolicy {
    fn default() -> Self {
        RedialPolicy {
            enabled: true,
            dead_after: DEAD_PEER_TIMEOUT,
            backoff_min: REDIAL_BACKOFF_MIN,
            backoff_max: REDIAL_BACKOFF_MAX,
        }
    }
}

/// Why a [`RedialPolicy`] is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum RedialPolicyError {
    /// `dead_after` or `backoff_min` is zero.
    #[error("dead_after and backoff_min must be above zero")]
    Zero,
    /// `backoff_max` is below `backoff_min`.
    #[error("backoff_max must be at least backoff_min")]
    MaxBelowMin,
}

impl RedialPolicy {
    /// Checks the durations: `dead_after` and `backoff_min` above zero, `backoff_max` at
    /// least `backoff_min`.
    pub fn validate(&self) -> Result<(), RedialPolicyError> {
        if self.dead_after == Duration::ZERO || self.backoff_min == Duration::ZERO {
            return Err(RedialPolicyError::Zero);
        }
        if self.backoff_max < self.backoff_min {
            return Err(RedialPolicyError::MaxBelowMin);
        }
        Ok(())
    }
}

/// Why the client drops its session and redials.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedialReason {
    /// The server sent nothing authenticated for `silent` after the client sealed a datagram.
    Silent {
        /// How long it was silent.
        silent: Duration,
    },
    /// The security layer failed while the session was up: its keys expired before a rekey
    /// completed.
    SessionFailed,
    /// A redial's handshake went unanswered (or was refused).
    Unanswered,
    /// The wait after an unanswered redial is over.
    BackoffOver,
}

impl fmt::Display for RedialReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RedialReason::Silent { silent } => write!(
                f,
                "no authenticated datagram from the server for {} s",
                silent.as_micros() / 1_000_000
            ),
            RedialReason::SessionFailed => {
                f.write_str("the session's keys expired without a rekey")
            }
            RedialReason::Unanswered => f.write_str("the redial went unanswered"),
            RedialReason::BackoffOver => f.write_str("the wait after an unanswered redial is over"),
        }
    }
}

/// What the client does now, from [`Redial::poll`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedialAction {
    /// Give up: the security layer failed ([`Client::error`] says why) and no redial follows
    /// (the first session's handshake, which nobody answered or the server refused, or
    /// redialling is off).
    GiveUp,
    /// Give up: the server is dead and redialling is off.
    GiveUpDead {
        /// How long it was silent after the client sealed a datagram.
        silent: Duration,
    },
    /// Drop the session (if it is up) and start a fresh handshake now ([`Redial::client`]).
    RedialNow {
        /// Why.
        reason: RedialReason,
    },
    /// Drop the session (if it is up); the next handshake starts at `until` (a later
    /// [`Redial::poll`] says [`RedialAction::RedialNow`] then).
    Wait {
        /// When the next handshake starts.
        until: Instant,
        /// Why.
        reason: RedialReason,
    },
}

/// A client's dead-peer detection and redial schedule (see the module's docs): what a fresh
/// handshake needs (the keys and the greeting) and when it is due.
#[derive(Clone, Debug)]
pub struct Redial {
    keys: ClientConfig,
    greeting: Vec<u8>,
    policy: RedialPolicy,
    /// A session was up once (the keys and the address are right).
    ever_established: bool,
    /// The session is up (established, and not dropped since).
    up: bool,
    /// The client gave up: nothing more happens.
    gave_up: bool,
    /// When the client first sealed after the server's last authenticated datagram.
    unanswered_since: Option<Instant>,
    /// When the next handshake starts, while waiting after an unanswered one.
    next_attempt: Option<Instant>,
    /// The wait after the next unanswered redial.
    backoff: Duration,
    /// The session was dropped and the client redials.
    reconnecting: bool,
    /// Sessions established again after one was dropped.
    reconnections: u64,
}

impl Redial {
    /// The machine of a client with `keys` and `greeting` (sent in every handshake), before
    /// its first handshake.
    pub fn new(keys: ClientConfig, greeting: &[u8], policy: RedialPolicy) -> Redial {
        Redial {
            keys,
            greeting: greeting.to_vec(),
            policy,
            ever_established: false,
            up: false,
            gave_up: false,
            unanswered_since: None,
            next_attempt: None,
            backoff: policy.backoff_min,
            reconnecting: false,
            reconnections: 0,
        }
    }

    /// A fresh security layer with the keys and greeting, its handshake starting at `now`:
    /// the first one, and each redial's.
    pub fn client(&self, now: Instant) -> Result<Client, SecureError> {
        Client::new(self.keys.clone(), now, &self.greeting)
    }

    /// The policy.
    pub fn policy(&self) -> RedialPolicy {
        self.policy
    }

    /// Replaces the policy; the next wait is its `backoff_min`.
    pub fn set_policy(&mut self, policy: RedialPolicy) {
        self.policy = policy;
        self.backoff = policy.backoff_min;
    }

    /// The security layer made `received` of a datagram from the server: anything
    /// authenticated answers the client's sends; [`ClientReceived::Established`] starts the
    /// schedule over (and counts a reconnection while redialling).
    pub fn on_received(&mut self, received: ClientReceived) {
        if matches!(received, ClientReceived::Dropped(_)) {
            return;
        }
        self.unanswered_since = None;
        if received == ClientReceived::Established {
            self.ever_established = true;
            self.up = true;
            self.next_attempt = None;
            self.backoff = self.policy.backoff_min;
            if self.reconnecting {
                self.reconnecting = false;
                self.reconnections = self.reconnections.saturating_add(1);
            }
        }
    }

    /// A sealed datagram (not a handshake) left for the server at `now`.
    pub fn on_sealed(&mut self, now: Instant) {
        self.unanswered_since.get_or_insert(now);
    }

    /// Whether `secure`'s failure ends the client: the first session failed, redialling is
    /// off, or the server closed the session (an authenticated close: it ended the session,
    /// it is not dead).
    pub fn gives_up(&self, secure: &Client) -> bool {
        secure.error().is_some()
            && (!self.ever_established || !self.policy.enabled || secure.closed_by_server())
    }

    /// What to do at `now`, with the session's security layer `secure`; `None`: nothing. The
    /// machine takes the action as done (a dropped session, a fresh handshake for
    /// [`RedialAction::RedialNow`]). After a give-up, always `None`.
    pub fn poll(&mut self, now: Instant, secure: &Client) -> Option<RedialAction> {
        if self.gave_up {
            return None;
        }
        if self.gives_up(secure) {
            self.gave_up = true;
            self.up = false;
            return Some(RedialAction::GiveUp);
        }
        if let Some(since) = self
            .unanswered_since
            .filter(|_| self.dead_at() <= Some(now))
        {
            let silent = now - since;
            self.up = false;
            if !self.policy.enabled {
                self.gave_up = true;
                return Some(RedialAction::GiveUpDead { silent });
            }
            self.reconnecting = true;
            self.redialled();
            return Some(RedialAction::RedialNow {
                reason: RedialReason::Silent { silent },
            });
        }
        if secure.error().is_some() && self.next_attempt.is_none() {
            let reason = if self.reconnecting {
                RedialReason::Unanswered
            } else {
                RedialReason::SessionFailed
            };
            self.up = false;
            self.reconnecting = true;
            let until = now + self.backoff;
            self.next_attempt = Some(until);
            self.backoff = (self.backoff * 2).min(self.policy.backoff_max);
            return Some(RedialAction::Wait { until, reason });
        }
        if self.next_attempt.is_some_and(|t| now >= t) {
            self.redialled();
            return Some(RedialAction::RedialNow {
                reason: RedialReason::BackoffOver,
            });
        }
        None
    }

    /// A fresh handshake starts: nothing is unanswered yet, no wait is due.
    fn redialled(&mut self) {
        self.next_attempt = None;
        self.unanswered_since = None;
    }

    /// When the server counts as dead if nothing authenticated comes, while the session is up.
    fn dead_at(&self) -> Option<Instant> {
        if !self.up {
            return None;
        }
        self.unanswered_since.map(|t| t + self.policy.dead_after)
    }

    /// When [`Redial::poll`] is next needed for the machine's own deadlines (the server's
    /// death, the end of a wait); the security layer's failure has its own
    /// ([`Client::poll_timeout`]).
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.gave_up {
            return None;
        }
        match (self.dead_at(), self.next_attempt) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether a session was dropped and the client redials (until one is established).
    pub fn is_reconnecting(&self) -> bool {
        self.reconnecting
    }

    /// Sessions established again after one was dropped.
    pub fn reconnections(&self) -> u64 {
        self.reconnections
    }

    /// Whether a session was up once.
    pub fn ever_established(&self) -> bool {
        self.ever_established
    }

    /// Whether the client gave up.
    pub fn gave_up(&self) -> bool {
        self.gave_up
    }
}
