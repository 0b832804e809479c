//! Counters of the security layer: what was sealed and opened, handshakes, and every dropped
//! datagram by its reason.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

/// Writes the drop counters as `{"truncated": 0, "not_sprout": 0, ...}`.
fn dropped_by_name<S: Serializer>(dropped: &[u64; 17], s: S) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(dropped.len()))?;
    for (reason, n) in DropReason::ALL.iter().zip(dropped) {
        map.serialize_entry(reason.name(), n)?;
    }
    map.end()
}

/// Why the layer dropped an incoming datagram. Every drop is silent on the wire and counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// Shorter than its type's fixed layout (for data: than the header and the tag). A data
    /// message cut at any longer length fails its tag and counts as [`DropReason::Forged`].
    Truncated,
    /// Not a Sprout datagram (first byte is not 0x53).
    NotSprout,
    /// Wire version 1: an unencrypted datagram from an older build (refused: downgrade).
    OldVersion,
    /// A wire version newer than this build's.
    UnknownVersion,
    /// A message type this version does not define, or reserved bits set.
    Malformed,
    /// A handshake whose `mac1` is wrong (random bytes, or not meant for this server's key).
    BadMac,
    /// A handshake over the rate limit (global or per source address).
    RateLimited,
    /// A handshake message that failed Noise processing (wrong key, forged, corrupted).
    HandshakeFailed,
    /// A handshake from a client key that is not allowed.
    NotAllowed,
    /// A handshake refused because the server holds its maximum of sessions.
    TooManySessions,
    /// A handshake response that answers no handshake this client is waiting for.
    UnexpectedResponse,
    /// A data datagram for a connection id that is not (or no longer) a session here
    /// (wrong-session).
    UnknownSession,
    /// A data datagram for a key epoch the session does not hold.
    UnknownEpoch,
    /// A data datagram whose tag does not verify: forged, corrupted, or sealed with another key.
    Forged,
    /// A data datagram whose counter was already seen (inside the replay window).
    Replayed,
    /// A data datagram whose counter is older than the replay window.
    TooOld,
    /// A data datagram for keys past their time or message limit.
    KeysExpired,
}

impl DropReason {
    /// Every reason, in a fixed order (for tables).
    pub const ALL: [DropReason; 17] = [
        DropReason::Truncated,
        DropReason::NotSprout,
        DropReason::OldVersion,
        DropReason::UnknownVersion,
        DropReason::Malformed,
        DropReason::BadMac,
        DropReason::RateLimited,
        DropReason::HandshakeFailed,
        DropReason::NotAllowed,
        DropReason::TooManySessions,
        DropReason::UnexpectedResponse,
        DropReason::UnknownSession,
        DropReason::UnknownEpoch,
        DropReason::Forged,
        DropReason::Replayed,
        DropReason::TooOld,
        DropReason::KeysExpired,
    ];

    /// A short snake_case name (as in JSON).
    pub fn name(self) -> &'static str {
        match self {
            DropReason::Truncated => "truncated",
            DropReason::NotSprout => "not_sprout",
            DropReason::OldVersion => "old_version",
            DropReason::UnknownVersion => "unknown_version",
            DropReason::Malformed => "malformed",
            DropReason::BadMac => "bad_mac",
            DropReason::RateLimited => "rate_limited",
            DropReason::HandshakeFailed => "handshake_failed",
            DropReason::NotAllowed => "not_allowed",
            DropReason::TooManySessions => "too_many_sessions",
            DropReason::UnexpectedResponse => "unexpected_response",
            DropReason::UnknownSession => "unknown_session",
            DropReason::UnknownEpoch => "unknown_epoch",
            DropReason::Forged => "forged",
            DropReason::Replayed => "replayed",
            DropReason::TooOld => "too_old",
            DropReason::KeysExpired => "keys_expired",
        }
    }

    fn index(self) -> usize {
        DropReason::ALL.iter().position(|&r| r == self).unwrap_or(0)
    }
}

/// Counters of a [`crate::Server`] or [`crate::Client`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SecureStats {
    /// Datagrams sealed (data, including empty keepalives).
    pub sealed: u64,
    /// Data datagrams opened and accepted.
    pub opened: u64,
    /// Handshakes completed (new sessions and rekeys).
    pub handshakes: u64,
    /// Of those, rekeys of an existing session.
    pub rekeys: u64,
    /// Sessions whose peer address changed on authenticated datagrams (roaming, confirmed by
    /// a second datagram from the new address).
    pub roams: u64,
    /// Cookie replies sent (server, under load) or accepted (client).
    pub cookie_replies: u64,
    /// Refusals sent (server: full, or a source or key at its cap) or received (client).
    pub refusals: u64,
    /// Sessions open now (server) or 1/0 (client).
    pub sessions: u64,
    /// Datagrams dropped, by reason, in the order of [`DropReason::ALL`].
    /// (In JSON: an object with every reason's name and count, so scripts need not know the
    /// order.)
    #[serde(serialize_with = "dropped_by_name")]
    pub dropped: [u64; 17],
}

impl SecureStats {
    /// Counts one dropped datagram.
    pub fn drop(&mut self, reason: DropReason) {
        self.dropped[reason.index()] += 1;
    }

    /// Datagrams dropped for `reason`.
    pub fn dropped(&self, reason: DropReason) -> u64 {
        self.dropped[reason.index()]
    }

    /// Datagrams dropped for any reason.
    pub fn dropped_total(&self) -> u64 {
        self.dropped.iter().sum()
    }

    /// The non-zero drop counters, by name.
    pub fn drops_by_name(&self) -> Vec<(&'static str, u64)> {
        DropReason::ALL
            .iter()
            .map(|&r| (r.name(), self.dropped(r)))
            .filter(|&(_, n)| n > 0)
            .collect()
    }
}
