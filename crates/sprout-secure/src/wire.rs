//! The version-2 wire format: every Sprout datagram is one of three messages. All integers are
//! big-endian.
//!
//! ```text
//! every message:
//!   0  1  magic 0x53 ('S', as in version 1)
//!   1  1  version (2; version 1 was unencrypted and is refused)
//!   2  1  type: 1 handshake initiation, 2 handshake response, 3 data, 4 cookie reply,
//!           5 refusal, 6 close
//!   3  1  reserved, 0 in responses, cookie replies and refusals; in an initiation 0 (no
//!         mac2) or 1 (mac2 follows mac1); the key epoch in data and close
//! HANDSHAKE INITIATION (client -> server), 133 to 645 bytes (149 to 661 with mac2)
//!   4  ..  Noise IK message 1: ephemeral (32), encrypted static (32 + 16), encrypted payload
//!          (payload + 16). The payload (authenticated by the client's static key) is:
//!            0  1  kind: 0 new session, 1 rekey
//!            1  4  the client's receiver index (the connection id of data sent to it)
//!            5  4  the server's session id being rekeyed (0 for a new session)
//!            9  8  handshake number: grows with every fresh initiation of this client; a
//!                  rekey must carry a larger one than the session's last (replay refused)
//!           17  ..  the client's greeting (at most MAX_GREETING_BYTES)
//!  -16 16  mac1: keyed BLAKE2s-128 over everything before it, key BLAKE2s-256("sprout mac1" ||
//!          server public key); checked before any Diffie-Hellman (-32 when mac2 follows)
//!  -16 16  mac2 (only when byte 3 is 1): keyed BLAKE2s-128 over everything before it (mac1
//!          included), keyed by the cookie the server gave this address (see COOKIE REPLY)
//! HANDSHAKE RESPONSE (server -> client), 61 bytes
//!   4  4  receiver index: the client's index from the initiation
//!   8  53  Noise IK message 2: ephemeral (32), encrypted payload (5 + 16): the key epoch the
//!          new keys carry (1), the server's session id (4)
//! COOKIE REPLY (server -> client, instead of a response while the server is under load), 60 bytes
//!   4  24  nonce (random)
//!  28  32  XChaCha20-Poly1305 of the 16-byte cookie, key BLAKE2s-256("sprout cookie" || server
//!          public key), associated data: the mac1 of the initiation it answers (so only who
//!          sent that initiation can read it). The cookie is a keyed BLAKE2s-128 of the
//!          initiation's source address and port under a server secret that changes every
//!          2 minutes; the client puts mac2 on its next initiations (WireGuard's cookie).
//! REFUSAL (server -> client, instead of a response when no session can be opened), 65 bytes
//!   4  4  receiver index: the client's index from the initiation
//!   8  57  Noise IK message 2 (as a response, so only the server can write it and only the
//!          initiation's sender can read it): ephemeral (32), encrypted payload (9 + 16):
//!            0  1  reason: 1 the server is full, 2 this source address holds its cap of
//!                  sessions, 3 this client key holds its cap
//!            1  4  the limit reached (sessions)
//!            5  4  the server's idle timeout (s): how long an abandoned session holds a slot
//! DATA (either way)
//!   3  1  key epoch
//!   4  4  receiver index (the connection id the receiver chose)
//!   8  8  counter: the nonce, 0, 1, 2, ... per direction and key
//!  16  ..  ChaCha20-Poly1305 ciphertext of the core datagram, then the 16-byte tag
//! CLOSE (either way: the client quits, the server ends the session), 24 bytes
//!   3  1  key epoch (of the keys that sealed it)
//!   4  4  receiver index (the connection id the receiver chose)
//!   8  16  the ChaCha20-Poly1305 tag of an empty plaintext under the session's keys with the
//!          fixed nonce CLOSE_NONCE (2^64 - 2), which no data message uses (data counters stay
//!          below the keys' message limit, at most CLOSE_NONCE): so a close cannot be made
//!          from a data message, and every close of one key is the same 24 bytes (a sender
//!          repeats it, a few copies, best-effort)
//! ```
//!
//! A data message with an empty plaintext is a keepalive (it confirms a handshake).
//!
//! The data header is not fed to the AEAD as associated data (as in WireGuard) but every field
//! of it is bound all the same: a changed magic, version or type is refused before any
//! cryptography, a changed epoch or receiver index selects other keys (or none), and a changed
//! counter is another nonce, so the tag fails.

/// Magic byte, as in version 1.
pub const MAGIC: u8 = 0x53;
/// The wire version this build speaks.
pub const VERSION: u8 = 2;
/// The wire version of older, unencrypted builds (refused).
pub const OLD_VERSION: u8 = 1;
/// Message type: handshake initiation.
pub const TYPE_INITIATION: u8 = 1;
/// Message type: handshake response.
pub const TYPE_RESPONSE: u8 = 2;
/// Message type: data.
pub const TYPE_DATA: u8 = 3;
/// Message type: cookie reply (the server is under load; put mac2 on the next initiation).
pub const TYPE_COOKIE: u8 = 4;
/// Message type: refusal (an authenticated "no session for you now", with the reason).
pub const TYPE_REFUSAL: u8 = 5;
/// Message type: close (an authenticated "this session is over", either way).
pub const TYPE_CLOSE: u8 = 6;
/// The nonce a close is sealed with (no data message uses it: see [`TYPE_CLOSE`]'s layout).
pub const CLOSE_NONCE: u64 = u64::MAX - 1;
/// Bytes of a close: prefix, receiver index, tag.
pub const CLOSE_BYTES: usize = PREFIX_BYTES + 4 + TAG_BYTES;
/// Copies of a close a side sends (best-effort: a lost close leaves the peer to its timers).
pub const CLOSE_COPIES: usize = 3;
/// Bytes of a data message before its ciphertext.
pub const DATA_HEADER_BYTES: usize = 16;
/// Bytes of the AEAD tag.
pub const TAG_BYTES: usize = 16;
/// Bytes a data message adds to the core datagram it carries: header and tag.
pub const OVERHEAD_BYTES: usize = DATA_HEADER_BYTES + TAG_BYTES;
/// Longest greeting a client can send in its handshake, in bytes.
pub const MAX_GREETING_BYTES: usize = 512;
/// Longest datagram the layer writes or accepts, in bytes (the most a UDP datagram over IPv4
/// can carry).
pub const MAX_DATAGRAM_BYTES: usize = 65_507;
/// Longest core datagram one data message can carry, in bytes.
pub const MAX_PLAINTEXT_BYTES: usize = MAX_DATAGRAM_BYTES - OVERHEAD_BYTES;
/// Bytes of the common prefix (magic, version, type, reserved/epoch).
pub const PREFIX_BYTES: usize = 4;
/// Bytes of an X25519 public key (a Noise ephemeral or static).
pub const KEY_BYTES: usize = 32;
/// Bytes of `mac1`.
pub const MAC_BYTES: usize = 16;
/// Bytes of the initiation payload before the greeting.
pub const INITIATION_PAYLOAD_FIXED_BYTES: usize = 17;
/// Bytes of the Noise IK first message with an empty payload: ephemeral, encrypted static,
/// empty payload's tag.
pub const NOISE_MSG1_FIXED_BYTES: usize = KEY_BYTES + KEY_BYTES + TAG_BYTES + TAG_BYTES;
/// Shortest handshake initiation (no greeting), in bytes.
pub const MIN_INITIATION_BYTES: usize =
    PREFIX_BYTES + NOISE_MSG1_FIXED_BYTES + INITIATION_PAYLOAD_FIXED_BYTES + MAC_BYTES;
/// Longest handshake initiation (longest greeting), in bytes.
pub const MAX_INITIATION_BYTES: usize = MIN_INITIATION_BYTES + MAX_GREETING_BYTES;
/// Bytes of the response payload: key epoch and session id.
pub const RESPONSE_PAYLOAD_BYTES: usize = 5;
/// Bytes of a handshake response.
pub const RESPONSE_BYTES: usize = PREFIX_BYTES + 4 + KEY_BYTES + RESPONSE_PAYLOAD_BYTES + TAG_BYTES;
/// Bytes of the refusal payload: reason, limit, idle timeout.
pub const REFUSAL_PAYLOAD_BYTES: usize = 9;
/// Bytes of a refusal.
pub const REFUSAL_BYTES: usize = PREFIX_BYTES + 4 + KEY_BYTES + REFUSAL_PAYLOAD_BYTES + TAG_BYTES;
/// Bytes of a cookie.
pub const COOKIE_BYTES: usize = 16;
/// Bytes of the cookie reply's nonce (XChaCha20-Poly1305).
pub const COOKIE_NONCE_BYTES: usize = 24;
/// Bytes of a cookie reply.
pub const COOKIE_REPLY_BYTES: usize = PREFIX_BYTES + COOKIE_NONCE_BYTES + COOKIE_BYTES + TAG_BYTES;
/// The reserved byte of an initiation that carries mac2 after mac1.
pub const FLAG_MAC2: u8 = 1;

/// Why the common prefix of a datagram was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrefixError {
    /// Fewer than [`PREFIX_BYTES`] bytes.
    Truncated,
    /// The magic byte is wrong.
    NotSprout,
    /// Version 1 (unencrypted).
    OldVersion,
    /// Any other version.
    UnknownVersion,
    /// A type this version does not define.
    UnknownType,
}

/// Checks the common prefix of `datagram` and returns its message type.
pub fn message_type(datagram: &[u8]) -> Result<u8, PrefixError> {
    if datagram.len() < PREFIX_BYTES {
        // A short datagram that already shows a wrong magic or version says so.
        return match datagram {
            [] => Err(PrefixError::Truncated),
            [m, ..] if *m != MAGIC => Err(PrefixError::NotSprout),
            [_, v, ..] if *v == OLD_VERSION => Err(PrefixError::OldVersion),
            [_, v, ..] if *v != VERSION => Err(PrefixError::UnknownVersion),
            _ => Err(PrefixError::Truncated),
        };
    }
    if datagram[0] != MAGIC {
        return Err(PrefixError::NotSprout);
    }
    match datagram[1] {
        VERSION => {}
        OLD_VERSION => return Err(PrefixError::OldVersion),
        _ => return Err(PrefixError::UnknownVersion),
    }
    match datagram[2] {
        t @ (TYPE_INITIATION | TYPE_RESPONSE | TYPE_DATA | TYPE_COOKIE | TYPE_REFUSAL
        | TYPE_CLOSE) => Ok(t),
        _ => Err(PrefixError::UnknownType),
    }
}

/// The header of a data message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataHeader {
    /// Key epoch.
    pub epoch: u8,
    /// The receiver's index (connection id).
    pub receiver: u32,
    /// The counter (nonce).
    pub counter: u64,
}

impl DataHeader {
    /// Parses the header of a data message whose prefix was checked; `None` if the message is
    /// too short to hold a header and a tag.
    pub fn parse(datagram: &[u8]) -> Option<DataHeader> {
        if datagram.len() < OVERHEAD_BYTES {
            return None;
        }
        Some(DataHeader {
            epoch: datagram[3],
            receiver: u32::from_be_bytes(datagram[4..8].try_into().ok()?),
            counter: u64::from_be_bytes(datagram[8..16].try_into().ok()?),
        })
    }

    /// Writes the header into the first [`DATA_HEADER_BYTES`] of `out`.
    pub fn write(&self, out: &mut [u8]) {
        out[0] = MAGIC;
        out[1] = VERSION;
        out[2] = TYPE_DATA;
        out[3] = self.epoch;
        out[4..8].copy_from_slice(&self.receiver.to_be_bytes());
        out[8..16].copy_from_slice(&self.counter.to_be_bytes());
    }
}

/// Reads a big-endian u32 at `at` (the caller checked the length).
pub(crate) fn be_u32(b: &[u8], at: usize) -> u32 {
    let mut x = [0u8; 4];
    x.copy_from_slice(&b[at..at + 4]);
    u32::from_be_bytes(x)
}

/// Reads a big-endian u64 at `at` (the caller checked the length).
pub(crate) fn be_u64(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_add_up() {
        assert_eq!(OVERHEAD_BYTES, 32);
        assert_eq!(MIN_INITIATION_BYTES, 133);
        assert_eq!(RESPONSE_BYTES, 61);
        assert_eq!(REFUSAL_BYTES, 65);
        assert_eq!(COOKIE_REPLY_BYTES, 60);
        assert_eq!(CLOSE_BYTES, 24);
        // Neither answer is larger than the smallest initiation: nothing to amplify.
        assert!(REFUSAL_BYTES.max(COOKIE_REPLY_BYTES) < MIN_INITIATION_BYTES);
    }

    #[test]
    fn prefix_is_checked_in_order() {
        assert_eq!(message_type(&[]), Err(PrefixError::Truncated));
        assert_eq!(message_type(&[0x53]), Err(PrefixError::Truncated));
        assert_eq!(message_type(&[0x54, 2, 3, 0]), Err(PrefixError::NotSprout));
        assert_eq!(message_type(&[0x53, 1, 0, 0]), Err(PrefixError::OldVersion));
        assert_eq!(message_type(&[0x53, 1]), Err(PrefixError::OldVersion));
        assert_eq!(
            message_type(&[0x53, 3, 3, 0]),
            Err(PrefixError::UnknownVersion)
        );
        assert_eq!(
            message_type(&[0x53, 2, 7, 0]),
            Err(PrefixError::UnknownType)
        );
        assert_eq!(message_type(&[0x53, 2, 6, 0]), Ok(TYPE_CLOSE));
        assert_eq!(message_type(&[0x53, 2, 3, 0]), Ok(TYPE_DATA));
        assert_eq!(message_type(&[0x53, 2, 4, 0]), Ok(TYPE_COOKIE));
        assert_eq!(message_type(&[0x53, 2, 5, 0]), Ok(TYPE_REFUSAL));
    }

    #[test]
    fn data_header_round_trips() {
        let h = DataHeader {
            epoch: 7,
            receiver: 0xdead_beef,
            counter: u64::MAX - 3,
        };
        let mut b = [0u8; OVERHEAD_BYTES];
        h.write(&mut b);
        assert_eq!(message_type(&b), Ok(TYPE_DATA));
        assert_eq!(DataHeader::parse(&b), Some(h));
        assert_eq!(DataHeader::parse(&b[..OVERHEAD_BYTES - 1]), None);
    }
}
